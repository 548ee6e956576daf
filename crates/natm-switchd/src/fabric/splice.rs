//! Spliced lanes: two applications' lanes of one point-to-point cross-connect sharing one
//! ring pair, with the switch off their data path (natm-link's [`lane`] module has the
//! protocol and why).
//!
//! The switch keeps, for every single-VC lane it serves, what it needs to hand the side it
//! serves to another application ([`SpliceKeep`]). When the other end of the lane's
//! cross-connect asks for a lane that may be spliced, [`Fabric::splice`] takes the lane out
//! of the fabric (after pushing what it held for it into the ring) and returns the side to
//! hand over.
//!
//! **Who holds a side is said in the region, not by sockets.** A hostd sets its
//! application's release bit in the region's splice word ([`SpliceWord`]) when the
//! application closes the VC or dies, before it closes the lane's socket. A socket that
//! closes without that bit is a hostd that lost its link or died while its application
//! still runs the side: the holder is away, and a later lane request for the same region
//! from its port and VC brings it back ([`Fabric::rejoin`]). [`Fabric::watch_splices`]
//! takes a released side back as the remaining holder's lane; one taken back on the other
//! port than the lane's first is *relabelled*: its ring's cells carry the region's label,
//! not the port's VC, and the fabric rewrites the header on the way in and out
//! ([`relabel`]). A kept lane goes when its holder's socket closes, as every lane does
//! (after its ring is drained), or, taken back for a holder whose hostd is away, once that
//! holder released its side and its ring is quiet. A switch that
//! restarts learns a spliced region from the creator's hostd's request (the word's
//! `HELD_B`) and serves nothing of it until a side is released.
//!
//! Splices only what the switch has nothing to do for: both ports unrated, both legs of
//! the cross-connect unpoliced ([`Switch::passes_untouched`]) and carrying cells, the same
//! header format, no capture on either port.
//!
//! [`Switch::passes_untouched`]: natm_switch::Switch::passes_untouched
//! [`lane`]: natm_link::lane

use std::os::unix::net::UnixStream;

use natm_core::HeaderFormat;
use natm_core::TrafficClass;
use natm_link::CellBytes;
use natm_link::endpoint::EndpointLink;
use natm_link::lane::LaneVc;
use natm_link::shm::{ShmHandover, ShmLink, ShmWait, Side, SpliceWord, peer_closed, region_id};

use super::Fabric;

/// What the switch keeps of a single-VC lane so it can hand the side it serves over.
#[derive(Debug)]
pub struct SpliceKeep {
    /// Side B's descriptors (side A's are the same region with the eventfds swapped).
    pub side_b: ShmHandover,
    /// The region's splice word.
    pub word: SpliceWord,
    /// The region ([`region_id`]).
    pub region: (u64, u64),
    /// The side the switch serves.
    pub side: Side,
    /// The VC the region's cells carry.
    pub label: LaneVc,
    /// The socket of the application holding the other side (its hostd's lane request),
    /// while its hostd is there.
    pub holder: Option<UnixStream>,
    /// The lane's received cells when its released holder was last looked at.
    pub rx_seen: Option<u64>,
}

impl SpliceKeep {
    /// Keeps side B's descriptors `side_b` of a lane whose switch side is `side`, with the
    /// region's splice `word` (from the link the switch opened on it, so the region is
    /// mapped once).
    pub fn new(
        side_b: ShmHandover,
        word: SpliceWord,
        side: Side,
        label: LaneVc,
        holder: Option<UnixStream>,
    ) -> Result<SpliceKeep, String> {
        Ok(SpliceKeep {
            region: region_id(&side_b).map_err(|e| e.to_string())?,
            side_b,
            word,
            side,
            label,
            holder,
            rx_seen: None,
        })
    }
}

/// An application holding a side of a spliced region.
#[derive(Debug)]
pub struct Holder {
    /// Its port's index.
    pub port: usize,
    /// Its VC at that port.
    pub vc: LaneVc,
    /// Its hostd's lane request socket, while its hostd is there.
    pub sock: Option<UnixStream>,
}

/// A spliced region: both sides held by applications.
#[derive(Debug)]
pub struct Spliced {
    /// Side B's descriptors.
    pub side_b: ShmHandover,
    /// The splice word.
    pub word: SpliceWord,
    /// The region.
    pub region: (u64, u64),
    /// The VC its cells carry.
    pub label: LaneVc,
    /// Side A's holder, then side B's.
    pub holders: [Holder; 2],
}

fn other(side: Side) -> Side {
    match side {
        Side::A => Side::B,
        Side::B => Side::A,
    }
}

/// Rewrites a cell's VPI and VCI (keeping GFC, PTI and CLP) and its HEC.
pub fn relabel(cell: &mut CellBytes, format: HeaderFormat, to: LaneVc) {
    let word = u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]);
    let route = match format {
        HeaderFormat::Uni => (u32::from(to.vpi & 0xff) << 20) | (word & 0xf000_0000),
        HeaderFormat::Nni => u32::from(to.vpi & 0x0fff) << 20,
    };
    let w = route | (u32::from(to.vci) << 4) | (word & 0xf);
    let h = w.to_be_bytes();
    cell[..4].copy_from_slice(&h);
    cell[4] = natm_wire::cell::hec(h);
}

impl Fabric {
    /// The other end of port `port`'s VC `vc` cross-connect, `(port index, VC)`, if the
    /// two may be spliced (see the [module documentation](self)).
    fn splice_peer(&self, port: usize, vc: LaneVc) -> Option<(usize, LaneVc)> {
        let (q, w) = self.xc_peer(port, vc)?;
        let (pq, qq) = (&self.ports[port], &self.ports[q]);
        let usable = self.switch.passes_untouched(pq.id, vc.vpi, vc.vci)
            && self.switch.passes_untouched(qq.id, w.vpi, w.vci)
            && pq.input.is_none()
            && qq.input.is_none()
            && pq.format == qq.format
            && !self.tap_ports.contains(&pq.id)
            && !self.tap_ports.contains(&qq.id);
        usable.then_some((q, w))
    }

    /// The other end of port `port`'s VC `vc` point-to-point VC cross-connect carrying
    /// cells both ways, on another port: `(port index, VC)`.
    fn xc_peer(&self, port: usize, vc: LaneVc) -> Option<(usize, LaneVc)> {
        let p = self.ports.get(port)?;
        let here = (p.id, vc.vpi, Some(vc.vci));
        let (_, xc) = self
            .switch
            .connections()
            .find(|(_, xc)| [xc.a, xc.b].iter().any(|e| (e.port, e.vpi, e.vci) == here))?;
        let there = if (xc.a.port, xc.a.vpi, xc.a.vci) == here {
            xc.b
        } else {
            xc.a
        };
        let w = LaneVc {
            vpi: there.vpi,
            vci: there.vci?,
        };
        let q = self.index(there.port)?;
        let usable = xc.qos.tx.class != TrafficClass::None
            && xc.qos.rx.class != TrafficClass::None
            && q != port;
        usable.then_some((q, w))
    }

    /// Splices a lane request for port `port`'s VC `vc` from `sock` with the lane at the
    /// other end of its cross-connect, if there is one that may be: that lane leaves the
    /// fabric (what it held is pushed into its ring first, the rest counted lost) and the
    /// side the switch served is returned, with the label and its descriptors, to be handed
    /// to the requester. `None`: no splice (nothing changed).
    pub fn splice(
        &mut self,
        port: usize,
        vc: LaneVc,
        sock: &UnixStream,
    ) -> Option<(Side, LaneVc, ShmHandover)> {
        let (q, w) = self.splice_peer(port, vc)?;
        let l = self.ports[q]
            .lanes
            .iter()
            .position(|l| l.vcs == [w] && l.splice.as_ref().is_some_and(|k| k.holder.is_some()))?;
        let sock = sock.try_clone().ok()?;
        let keep = self.ports[q].lanes[l].splice.as_ref()?;
        let handover = ShmLink::dup_side(&keep.side_b, keep.side).ok()?;
        let lane = {
            let p = &mut self.ports[q];
            let _ = p.lanes[l].flush();
            p.remove_lane(l)
        };
        let keep = lane.splice?;
        // The side changes hands: not released any more; a restarted switch must not serve
        // a side B an application holds.
        let held = if keep.side == Side::B {
            SpliceWord::HELD_B
        } else {
            0
        };
        keep.word.update(held, SpliceWord::released(keep.side));
        let mut holders = [
            Holder {
                port: q,
                vc: lane.vcs[0],
                sock: keep.holder,
            },
            Holder {
                port,
                vc,
                sock: Some(sock),
            },
        ];
        if keep.side == Side::A {
            holders.swap(0, 1);
        }
        self.splices.push(Spliced {
            side_b: keep.side_b,
            word: keep.word,
            region: keep.region,
            label: keep.label,
            holders,
        });
        Some((keep.side, keep.label, handover))
    }

    /// A lane request for a region that is spliced (`region`, with side B's descriptors
    /// `side_b`): the hostd of one of its holders asking again after it lost its link or
    /// the switch restarted. Its socket is kept as the holder's; nothing is served. A
    /// restarted switch learns the splice here: the requester holds side A (only a
    /// region's creator asks for it again) and the other end of its cross-connect side B.
    /// The refusal's reason.
    pub fn rejoin(
        &mut self,
        port: usize,
        vc: LaneVc,
        side_b: &ShmHandover,
        sock: &UnixStream,
    ) -> Result<(), String> {
        let sock = sock.try_clone().map_err(|e| format!("dup: {e}"))?;
        let region = region_id(side_b).map_err(|e| e.to_string())?;
        if let Some(s) = self.splices.iter_mut().find(|s| s.region == region) {
            let h = s
                .holders
                .iter_mut()
                .find(|h| (h.port, h.vc) == (port, vc))
                .ok_or("the lane's region is spliced between other VCs")?;
            h.sock = Some(sock);
            return Ok(());
        }
        // Not `splice_peer`: right after a restart the other port may not be up yet.
        let (q, w) = self.xc_peer(port, vc).ok_or(
            "the lane's region is spliced, but its VC has no point-to-point cross-connect",
        )?;
        let word = SpliceWord::of(side_b).map_err(|e| e.to_string())?;
        let side_b = ShmLink::dup_handover(side_b).map_err(|e| e.to_string())?;
        let keep = SpliceKeep::new(side_b, word, Side::B, vc, None)?;
        self.splices.push(Spliced {
            side_b: keep.side_b,
            word: keep.word,
            region,
            label: vc,
            holders: [
                Holder {
                    port,
                    vc,
                    sock: Some(sock),
                },
                Holder {
                    port: q,
                    vc: w,
                    sock: None,
                },
            ],
        });
        Ok(())
    }

    /// Looks at the spliced regions and the kept lanes: a holder's socket that closed is
    /// forgotten (the holder is away), a released side of a spliced region is taken back
    /// as the remaining holder's lane (relabelled if the label is not that holder's VC), a
    /// region both sides released is let go, and a kept lane whose holder released its side
    /// is removed. Whether anything changed.
    pub fn watch_splices(&mut self) -> bool {
        let mut changed = false;
        // A kept lane with its holder's socket goes when the socket closes, after the
        // lane's ring is drained (as every lane does); one without (taken back for a
        // holder whose hostd is away) goes once its holder released the side and a
        // look found no cells since the last.
        for p in &mut self.ports {
            let mut l = 0;
            while l < p.lanes.len() {
                let lane = &mut p.lanes[l];
                let rx = lane.stats.rx;
                let gone = lane.splice.as_mut().is_some_and(|k| {
                    let released = k.holder.is_none()
                        && k.word.bits() & SpliceWord::released(other(k.side)) != 0;
                    let quiet = k.rx_seen == Some(rx);
                    k.rx_seen = released.then_some(rx);
                    released && quiet
                });
                if gone {
                    p.remove_lane(l);
                    changed = true;
                } else {
                    l += 1;
                }
            }
        }
        let mut k = 0;
        while k < self.splices.len() {
            for h in &mut self.splices[k].holders {
                if h.sock.as_ref().is_some_and(peer_closed) {
                    h.sock = None;
                    changed = true;
                }
            }
            let bits = self.splices[k].word.bits();
            let side = match (
                bits & SpliceWord::RELEASED_A != 0,
                bits & SpliceWord::RELEASED_B != 0,
            ) {
                (false, false) => {
                    k += 1;
                    continue;
                }
                (true, true) => {
                    self.splices.swap_remove(k);
                    changed = true;
                    continue;
                }
                (true, false) => Side::A,
                (false, true) => Side::B,
            };
            changed = true;
            let s = self.splices.swap_remove(k);
            let [a, b] = s.holders;
            let stay = if side == Side::A { b } else { a };
            if side == Side::B {
                s.word.update(0, SpliceWord::HELD_B);
            }
            let taken = ShmLink::dup_side(&s.side_b, side)
                .map_err(|e| e.to_string())
                .and_then(|h| {
                    ShmLink::open_side(h, side, ShmWait::EventFd).map_err(|e| e.to_string())
                })
                .and_then(|mut link| {
                    if let Some(sock) = &stay.sock {
                        let watch = sock.try_clone().map_err(|e| e.to_string())?;
                        link.watch_peer(watch).map_err(|e| e.to_string())?;
                    }
                    Ok(link)
                });
            let keep = SpliceKeep {
                side_b: s.side_b,
                word: s.word,
                region: s.region,
                side,
                label: s.label,
                holder: stay.sock,
                rx_seen: None,
            };
            let result = taken.and_then(|link| {
                self.ports[stay.port].add_lane_kept(
                    vec![stay.vc],
                    1,
                    Box::new(link) as Box<dyn EndpointLink>,
                    Some(keep),
                )
            });
            if let Err(why) = result {
                self.ports[stay.port].stats.last_error =
                    Some(format!("taking back a spliced lane's side: {why}"));
            }
        }
        changed
    }

    /// The spliced regions' holders at port index `port`, with their regions.
    pub fn spliced_at(&self, port: usize) -> impl Iterator<Item = (&Spliced, &Holder)> {
        self.splices.iter().flat_map(move |s| {
            s.holders
                .iter()
                .filter(move |h| h.port == port)
                .map(move |h| (s, h))
        })
    }
}
