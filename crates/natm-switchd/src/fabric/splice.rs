//! Spliced lanes: two applications' lanes of one point-to-point cross-connect sharing one
//! ring pair, with the switch off their data path (natm-link's [`lane`] module has the
//! protocol and why).
//!
//! The switch keeps, for every single-VC lane it serves, what it needs to hand the lane's
//! side B to another application ([`SpliceKeep`]): side B's descriptors, and the socket
//! of the application holding the other side. When the other end of the lane's
//! cross-connect asks for a lane that may be spliced, [`Fabric::splice`] takes the lane out
//! of the fabric (after pushing what it held for it into the ring) and returns the side to
//! hand over; [`Fabric::watch_splices`] takes a side back as a lane when its holder's
//! socket closes. A side taken back on the other port than the lane's first is a
//! *relabelled* lane: its ring's cells carry the region's label, not the port's VC, and the
//! fabric rewrites the header on the way in and out ([`relabel`]).
//!
//! Splices only what the switch has nothing to do for: both ports unrated, both legs of
//! the cross-connect unpoliced ([`Switch::passes_untouched`]) and carrying cells, the same
//! header format, no capture on either port.
//!
//! [`Switch::passes_untouched`]: natm_switch::Switch::passes_untouched
//!
//! [`lane`]: natm_link::lane

use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

use natm_core::HeaderFormat;
use natm_core::TrafficClass;
use natm_link::CellBytes;
use natm_link::endpoint::EndpointLink;
use natm_link::lane::LaneVc;
use natm_link::shm::{ShmHandover, ShmLink, ShmWait, Side};

use super::Fabric;

/// What the switch keeps of a single-VC lane so it can hand a side of its region over, or
/// take one back.
#[derive(Debug)]
pub struct SpliceKeep {
    /// Side B's descriptors (side A's are the same region with the eventfds swapped).
    pub side_b: ShmHandover,
    /// The side the switch serves.
    pub side: Side,
    /// The VC the region's cells carry.
    pub label: LaneVc,
    /// The socket of the application holding the other side (its hostd's lane request).
    pub holder: UnixStream,
}

/// An application holding a side of a spliced region.
#[derive(Debug)]
pub struct Holder {
    /// Its port's index.
    pub port: usize,
    /// Its VC at that port.
    pub vc: LaneVc,
    /// Its hostd's lane request socket: closed when the application goes.
    pub sock: UnixStream,
}

/// A spliced region: both sides held by applications.
#[derive(Debug)]
pub struct Spliced {
    /// Side B's descriptors.
    pub side_b: ShmHandover,
    /// The VC its cells carry.
    pub label: LaneVc,
    /// Side A's holder, then side B's.
    pub holders: [Holder; 2],
}

/// A copy of `side`'s descriptors of the region whose side B `side_b` names.
pub fn handover_for(side_b: &ShmHandover, side: Side) -> std::io::Result<ShmHandover> {
    let dup = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned();
    let region = dup(side_b.region.as_fd())?;
    Ok(match side {
        Side::B => ShmHandover {
            region,
            wait: dup(side_b.wait.as_fd())?,
            kick: dup(side_b.kick.as_fd())?,
        },
        Side::A => ShmHandover {
            region,
            wait: dup(side_b.kick.as_fd())?,
            kick: dup(side_b.wait.as_fd())?,
        },
    })
}

/// Whether the peer of `sock` closed it (or it failed).
fn closed(sock: &UnixStream) -> bool {
    let mut b = [0u8; 1];
    match rustix::net::recv(
        sock,
        &mut b,
        rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT,
    ) {
        Ok((0, _)) => true,
        Ok(_) => false,
        Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => false,
        Err(_) => true,
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
    /// The lane the other end of port `port`'s VC `vc` cross-connect has, if the two may be
    /// spliced (see the [module documentation](self)): `(port index, lane index)`.
    fn splice_candidate(&self, port: usize, vc: LaneVc) -> Option<(usize, usize)> {
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
        let usable = xc.qos.tx.class != TrafficClass::None
            && xc.qos.rx.class != TrafficClass::None
            && there.vci.is_some_and(|w| {
                self.switch.passes_untouched(here.0, vc.vpi, vc.vci)
                    && self.switch.passes_untouched(there.port, there.vpi, w)
            });
        let q = self.index(there.port)?;
        let (pq, qq) = (&self.ports[port], &self.ports[q]);
        if !usable
            || q == port
            || pq.input.is_some()
            || qq.input.is_some()
            || pq.format != qq.format
            || self.tap_ports.contains(&pq.id)
            || self.tap_ports.contains(&qq.id)
        {
            return None;
        }
        let w = LaneVc {
            vpi: there.vpi,
            vci: there.vci?,
        };
        let l = qq
            .lanes
            .iter()
            .position(|l| l.vcs == [w] && l.splice.is_some())?;
        Some((q, l))
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
        let (q, l) = self.splice_candidate(port, vc)?;
        let sock = sock.try_clone().ok()?;
        let keep = self.ports[q].lanes[l].splice.as_ref()?;
        let handover = handover_for(&keep.side_b, keep.side).ok()?;
        let lane = {
            let p = &mut self.ports[q];
            let _ = p.lanes[l].flush();
            p.remove_lane(l)
        };
        let keep = lane.splice?;
        if keep.side == Side::B {
            // A restarted switch must not serve side B while an application holds it.
            let _ = ShmLink::set_region_spliced(&keep.side_b, true);
        }
        let mut holders = [
            Holder {
                port: q,
                vc: lane.vcs[0],
                sock: keep.holder,
            },
            Holder { port, vc, sock },
        ];
        if keep.side == Side::A {
            holders.swap(0, 1);
        }
        self.splices.push(Spliced {
            side_b: keep.side_b,
            label: keep.label,
            holders,
        });
        Some((keep.side, keep.label, handover))
    }

    /// Takes a side of a spliced region back whose holder went: the switch serves it as
    /// the remaining holder's lane (relabelled if the label is not that holder's VC).
    /// A region whose holders both went is let go. Whether anything changed.
    pub fn watch_splices(&mut self) -> bool {
        let mut changed = false;
        let mut k = 0;
        while k < self.splices.len() {
            let gone = self.splices[k].holders.each_ref().map(|h| closed(&h.sock));
            let side = match gone {
                [false, false] => {
                    k += 1;
                    continue;
                }
                [true, false] => Side::A,
                [false, true] => Side::B,
                [true, true] => {
                    let s = self.splices.swap_remove(k);
                    let _ = ShmLink::set_region_spliced(&s.side_b, false);
                    changed = true;
                    continue;
                }
            };
            changed = true;
            let s = self.splices.swap_remove(k);
            let [a, b] = s.holders;
            let stay = if side == Side::A { b } else { a };
            if side == Side::B {
                let _ = ShmLink::set_region_spliced(&s.side_b, false);
            }
            let taken = handover_for(&s.side_b, side)
                .map_err(|e| e.to_string())
                .and_then(|h| {
                    ShmLink::open_side(h, side, ShmWait::EventFd).map_err(|e| e.to_string())
                })
                .and_then(|mut link| {
                    let watch = stay.sock.try_clone().map_err(|e| e.to_string())?;
                    link.watch_peer(watch).map_err(|e| e.to_string())?;
                    Ok(link)
                });
            let keep = SpliceKeep {
                side_b: s.side_b,
                side,
                label: s.label,
                holder: stay.sock,
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

    /// The spliced VCs at port `port`'s index.
    pub fn spliced_at(&self, port: usize) -> impl Iterator<Item = (&Spliced, &Holder)> {
        self.splices.iter().flat_map(move |s| {
            s.holders
                .iter()
                .filter(move |h| h.port == port)
                .map(move |h| (s, h))
        })
    }
}
