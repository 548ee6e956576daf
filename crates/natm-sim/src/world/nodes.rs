//! What the world keeps of each host, link and switch.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EndRec {
    Host(u32),
    Port(u32, PortId),
}

pub(crate) struct LinkRec {
    pub(crate) ends: [EndRec; 2],
    pub(crate) dirs: [Netem; 2],
    pub(crate) up: bool,
    pub(crate) config: LinkConfig,
    pub(crate) armed: [u64; 2],
    /// Per direction: frames of VC 0.5 duplicated (see [`Action::DuplicateSignalling`]).
    pub(crate) dup: [Option<Dup>; 2],
}

/// Whole-frame duplication of VC 0.5 on one link direction.
pub(crate) struct Dup {
    pub(crate) p: f64,
    pub(crate) rng: crate::seed::Rng,
    /// The cells of 0.5's frame so far.
    pub(crate) frame: Vec<[u8; 53]>,
}

impl Dup {
    /// `cells` with each completed frame of 0.5 followed, with probability `p`, by a copy.
    pub(crate) fn apply(&mut self, cells: &[[u8; 53]], out: &mut Vec<[u8; 53]>) -> u64 {
        let mut copies = 0;
        for c in cells {
            out.push(*c);
            let w = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
            // VPI 0, VCI 5, user data (PTI 0xx).
            if w >> 4 != 5 || w & 0x8 != 0 {
                continue;
            }
            self.frame.push(*c);
            if w & 0x2 != 0 {
                if self.rng.chance(self.p) {
                    out.extend_from_slice(&self.frame);
                    copies += 1;
                }
                self.frame.clear();
            }
        }
        copies
    }
}

/// A buffer as the world sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Buf {
    /// In the host's free list.
    Free,
    /// Holding an SDU waiting for the CPU (send).
    Cpu,
    /// Posted to the adapter (handle for transmit; `None` for receive).
    Adapter(Option<u32>),
    /// A received SDU waiting for the CPU.
    Received,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Job {
    Send { vc: VcId, buf: BufferId, len: usize },
    Recv { vc: VcId, buf: BufferId, len: usize },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct VcRec {
    pub(crate) qos: Qos,
    pub(crate) options: VcOptions,
    /// The adapter handle while the host is up (`None` while it is down).
    pub(crate) handle: Option<u32>,
    /// The VC in the host core (open while the host is down too).
    pub(super) core: VcHandle,
}

pub(crate) struct HostNode {
    pub(crate) name: String,
    pub(crate) config: HostConfig,
    /// The host: its one channel holds every VC.
    pub(super) core: Host<VecBuffers>,
    pub(super) channel: ChannelId,
    /// What the host core told (ping outcomes), until taken.
    pub(super) core_events: Vec<natm_host_core::Event>,
    pub(crate) link: Option<(u32, usize)>,
    pub(crate) up: bool,
    pub(super) app: Option<Box<dyn App>>,
    pub(super) io: AppIo,
    pub(crate) vcs: BTreeMap<VcId, VcRec>,
    pub(crate) by_handle: BTreeMap<u32, VcId>,
    pub(super) rx_free: Vec<BufferId>,
    pub(super) tx_free: Vec<BufferId>,
    pub(crate) bufs: Vec<Buf>,
    /// Per transmit buffer: the VC and length of the send it holds.
    pub(super) tx_meta: Vec<(VcId, usize)>,
    pub(super) cpu: VecDeque<Job>,
    pub(super) cpu_busy: bool,
    pub(super) timers: BinaryHeap<Reverse<(u64, u64, u64)>>,
    pub(super) timer_seq: u64,
    pub(super) notices: VecDeque<(VcId, usize, bool)>,
    pub(super) started: bool,
    pub(super) armed: [u64; 3],
    /// The host's signalling, when it signals (the core is made with it).
    pub(crate) sig: Option<SignallingConfig>,
    /// Each open call's VC (recorded in `vcs` too).
    pub(crate) call_vcs: BTreeMap<CallId, VcId>,
    /// Call events and command outcomes for the app, in order.
    pub(super) call_notes: VecDeque<CallNote>,
}

impl HostNode {
    /// The host's adapter.
    pub(crate) fn adapter(&self) -> &Adapter {
        self.core
            .adapter(self.channel)
            .expect("a host's channel is open while it lives")
    }

    pub(super) fn adapter_mut(&mut self) -> &mut Adapter {
        self.core
            .channel_mut(self.channel)
            .expect("a host's channel is open while it lives")
            .0
    }

    /// The host's buffers.
    pub(crate) fn mem(&self) -> &VecBuffers {
        self.core
            .memory(self.channel)
            .expect("a host's channel is open while it lives")
    }

    pub(super) fn mem_mut(&mut self) -> &mut VecBuffers {
        self.core
            .channel_mut(self.channel)
            .expect("a host's channel is open while it lives")
            .1
    }

    pub(super) fn rx_count(&self) -> u32 {
        (self.config.buffers / 2).max(1)
    }

    /// Whether the CPU has work.
    pub(crate) fn cpu_busy(&self) -> bool {
        self.cpu_busy || !self.cpu.is_empty()
    }
}

#[derive(Clone, Debug)]
pub(crate) struct PortRec {
    pub(crate) id: PortId,
    pub(crate) config: PortConfig,
    pub(crate) link: u32,
    /// The link direction leaving the switch by this port.
    pub(crate) out_dir: usize,
    pub(crate) clogged: bool,
    /// The last instant its output was polled.
    pub(super) polled_at: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct XcRec {
    pub(crate) xc: CrossConnect,
    pub(crate) live: Option<natm_switch::XcId>,
}

/// A switch's call control and what it is made from (kept across a crash).
pub(crate) struct CallsRec {
    pub(crate) config: natm_calls::Config,
    /// The signalling ports and the switch's side on each.
    pub(crate) sides: Vec<(PortId, Side)>,
    /// `None` while the switch is down.
    pub(crate) cc: Option<CallControl>,
    pub(super) armed: u64,
    /// Call controls made so far (the first and one per restart): each starts its SSCOPs
    /// at another N(SQ), as switchd's start from its clock.
    pub(super) starts: u32,
}

pub(crate) struct SwitchNode {
    pub(crate) name: String,
    pub(super) config: SwitchConfig,
    pub(crate) sw: Switch,
    pub(crate) up: bool,
    pub(crate) ports: Vec<PortRec>,
    pub(crate) xcs: BTreeMap<ConnId, XcRec>,
    pub(super) armed: u64,
    /// (input port, VPI << 16 | VCI, or VPI << 16 | 0xFFFF_0000 for a VP) → the output
    /// port's index in `ports`, from the record: which ports a cell's arrival can give
    /// output to.
    pub(super) route: FastMap<(u16, u32), u32>,
    /// Port number → index in `ports`.
    pub(super) port_ix: FastMap<u16, u32>,
    pub(super) route_dirty: bool,
    /// The last instant some ports were left unpolled after an input or a timeout.
    pub(super) skipped_at: u64,
    /// Per port (index in `ports`): the switch's `port_timeout` in ns as last read, or
    /// `IDLE` (none, or taken off `due` to be polled). Not `IDLE` means in `due`.
    pub(super) port_due: Vec<u64>,
    /// The ports' timeouts, earliest first; an entry that is not its port's `port_due` is
    /// stale and skipped. A timeout then polls the due ports only, not all of them.
    pub(super) due: BinaryHeap<Reverse<(u64, u32)>>,
    /// Call control, when the switch signals.
    pub(crate) calls: Option<CallsRec>,
}

impl SwitchNode {
    pub(crate) fn port(&self, id: PortId) -> Option<&PortRec> {
        self.ports.iter().find(|p| p.id == id)
    }

    /// Re-reads port `i`'s timeout from the switch after something may have changed it.
    pub(super) fn refresh_due(&mut self, i: u32) {
        let t = self
            .sw
            .port_timeout(self.ports[i as usize].id)
            .map_or(IDLE, |t| t.as_nanos());
        let slot = &mut self.port_due[i as usize];
        if t != *slot {
            *slot = t;
            if t != IDLE {
                self.due.push(Reverse((t, i)));
            }
        }
    }

    /// The ports due at or before `now` into `out` (ascending, each once), taken off `due`.
    pub(super) fn take_due(&mut self, now: u64, out: &mut Vec<u32>) {
        while let Some(&Reverse((t, i))) = self.due.peek() {
            if t > now {
                break;
            }
            self.due.pop();
            if self.port_due[i as usize] == t {
                self.port_due[i as usize] = IDLE;
                out.push(i);
            }
        }
        out.sort_unstable();
    }

    /// The earliest port timeout: the switch's `poll_timeout`, without a pass over the
    /// ports.
    pub(super) fn next_due(&mut self) -> Option<Instant> {
        while let Some(&Reverse((t, i))) = self.due.peek() {
            if self.port_due[i as usize] == t {
                return Some(Instant::from_nanos(t));
            }
            self.due.pop();
        }
        None
    }

    /// Forgets every port timeout (the switch was replaced).
    pub(super) fn clear_due(&mut self) {
        self.due.clear();
        self.port_due.fill(IDLE);
    }

    pub(super) fn rebuild_route(&mut self) {
        self.route.clear();
        for r in self.xcs.values() {
            for (from, to) in [(r.xc.a, r.xc.b), (r.xc.b, r.xc.a)] {
                let key = match from.vci {
                    Some(vci) => u32::from(from.vpi) << 16 | u32::from(vci),
                    None => u32::from(from.vpi) << 16 | VP_MARK,
                };
                if let Some(&i) = self.port_ix.get(&to.port.0) {
                    self.route.insert((from.port.0, key), i);
                }
            }
        }
        self.route_dirty = false;
    }

    /// The output ports (indices in `ports`) `cells` arriving at `port` may go to, into
    /// `out`; `false` if that cannot be told from their headers (damaged, OAM, unknown) and
    /// every port must be polled.
    pub(super) fn outputs(&mut self, port: PortId, cells: &[[u8; 53]], out: &mut Vec<u32>) -> bool {
        if self.route_dirty {
            self.rebuild_route();
        }
        for c in cells {
            if natm_wire::cell::hec([c[0], c[1], c[2], c[3]]) != c[4] || c[3] & 0x08 != 0 {
                return false;
            }
            let w = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
            let vpi = (w >> 20) & 0xFF;
            let vci = (w >> 4) & 0xFFFF;
            let hit = self
                .route
                .get(&(port.0, vpi << 16 | vci))
                .or_else(|| self.route.get(&(port.0, vpi << 16 | VP_MARK)));
            match hit {
                Some(&o) => {
                    if !out.contains(&o) {
                        out.push(o);
                    }
                }
                None => return false,
            }
        }
        true
    }
}

/// Marks a VP entry in [`SwitchNode::route`] (no VCI has these bits).
pub(super) const VP_MARK: u32 = 0xFFFF_0000;

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(vci: u32, last: bool) -> [u8; 53] {
        let w = vci << 4 | if last { 0x2 } else { 0 };
        let mut c = [0u8; 53];
        c[..4].copy_from_slice(&w.to_be_bytes());
        c
    }

    #[test]
    fn only_whole_frames_of_0_5_are_duplicated_right_after_themselves() {
        let mut d = Dup {
            p: 1.0,
            rng: crate::seed::Rng::new(1),
            frame: Vec::new(),
        };
        let cells = [
            cell(5, false),
            cell(100, true),
            cell(5, true),
            cell(100, false),
        ];
        let mut out = Vec::new();
        assert_eq!(d.apply(&cells, &mut out), 1);
        let want = [
            cell(5, false),
            cell(100, true),
            cell(5, true),
            cell(5, false),
            cell(5, true),
            cell(100, false),
        ];
        assert_eq!(out, want);
        d.p = 0.0;
        out.clear();
        assert_eq!(d.apply(&cells, &mut out), 0);
        assert_eq!(out, cells);
    }
}
