//! The host's transmit round: which channel's adapter gives the link its next batch.
//!
//! Weighted round robin ([`natm_traffic::wrr`]) with a batch of cells a unit, in two
//! classes: channels with a CBR or VBR VC first in every round, then the others. A
//! channel's weight is the sum of its VCs' ([`vc_weight`]): a UBR VC's scheduler weight;
//! a CBR or VBR VC's rate in 64ths of the link, at least 1. So in every round a
//! guaranteed channel may give as many batches as its rate needs before any bulk channel
//! gives one, and bulk channels share what is left by their weights. The adapters shape
//! their VCs, and admission keeps the guaranteed rates within the link, so the first
//! class cannot starve the second beyond its contracts.
//!
//! The host cannot count a channel's work ahead (its adapter says whether it has cells
//! when polled), so each round offers every channel its weight, and a poll that finds
//! nothing ends that channel's turn. A round in which no channel gave anything ends the
//! host's [`poll_transmit`](crate::Host::poll_transmit) with `None`; the next call
//! starts a fresh round.

use alloc::vec::Vec;

use natm_traffic::sched::{Category, VcSpec};
use natm_traffic::wrr::{self, Wrr};

use crate::ChannelId;

/// A VC's weight in its host's transmit round: UBR, its scheduler weight; CBR and VBR,
/// their rate (CBR's PCR, VBR's SCR) in 64ths of `capacity`, at least 1.
pub fn vc_weight(spec: &VcSpec, capacity: u32) -> u32 {
    let rate = match spec.category {
        Category::Ubr => return spec.weight.max(1),
        Category::Cbr => spec.pcr,
        Category::RtVbr | Category::NrtVbr => spec.scr.max(1),
    };
    let sixty_fourth = (capacity / 64).max(1);
    rate.div_ceil(sixty_fourth).max(1)
}

/// Which class a channel is in, its place there and its VCs' weights.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Place {
    realtime: bool,
    slot: Option<wrr::ChannelId>,
    /// The sums of its CBR/VBR VCs' weights and of its UBR VCs'.
    realtime_weight: u32,
    ubr_weight: u32,
}

impl Place {
    /// The channel's weight in its class: its VCs' weights, at least 1.
    pub(crate) fn weight(&self) -> u32 {
        self.realtime_weight.saturating_add(self.ubr_weight).max(1)
    }
}

/// One class of channels: the scheduler and each slot's channel.
#[derive(Debug, Default)]
struct Class {
    wrr: Wrr,
    ids: Vec<Option<ChannelId>>,
}

impl Class {
    fn add(&mut self, id: ChannelId, weight: u32) -> wrr::ChannelId {
        // Weights are at least 1, so adding cannot fail.
        let slot = self.wrr.add(weight.max(1)).unwrap_or(wrr::ChannelId(0));
        let i = slot.0 as usize;
        if self.ids.len() <= i {
            self.ids.resize(i + 1, None);
        }
        self.ids[i] = Some(id);
        slot
    }

    fn remove(&mut self, slot: wrr::ChannelId) {
        let _ = self.wrr.remove(slot);
        if let Some(x) = self.ids.get_mut(slot.0 as usize) {
            *x = None;
        }
    }
}

/// The round over a host's channels ([module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct Round {
    /// `[realtime, others]`.
    classes: [Class; 2],
    /// A round is under way.
    open: bool,
    /// Some channel gave the link cells in this round.
    progress: bool,
}

impl Round {
    /// A new channel, with no VCs: in the second class at weight 1.
    pub(crate) fn add(&mut self, id: ChannelId) -> Place {
        Place {
            slot: Some(self.classes[1].add(id, 1)),
            ..Place::default()
        }
    }

    /// A channel goes.
    pub(crate) fn remove(&mut self, place: &mut Place) {
        if let Some(slot) = place.slot.take() {
            self.classes[usize::from(!place.realtime)].remove(slot);
        }
    }

    /// Channel `id` opened (`open`) or closed a VC of `spec`: its weight, and maybe its
    /// class, change.
    pub(crate) fn vc_changed(
        &mut self,
        id: ChannelId,
        place: &mut Place,
        spec: &VcSpec,
        capacity: u32,
        open: bool,
    ) {
        let w = vc_weight(spec, capacity);
        let sum = if spec.category == Category::Ubr {
            &mut place.ubr_weight
        } else {
            &mut place.realtime_weight
        };
        *sum = if open {
            sum.saturating_add(w)
        } else {
            sum.saturating_sub(w)
        };
        let realtime = place.realtime_weight > 0;
        let weight = place.weight();
        match place.slot {
            Some(slot) if realtime == place.realtime => {
                let _ = self.classes[usize::from(!realtime)]
                    .wrr
                    .set_weight(slot, weight);
            }
            _ => {
                self.remove(place);
                place.realtime = realtime;
                place.slot = Some(self.classes[usize::from(!realtime)].add(id, weight));
            }
        }
    }

    /// The next channel to poll for a batch, or `None` when a whole round gave nothing.
    pub(crate) fn next(&mut self) -> Option<ChannelId> {
        loop {
            if !self.open {
                self.open = true;
                self.progress = false;
                for c in &mut self.classes {
                    c.wrr.new_round();
                }
            }
            for c in &mut self.classes {
                for slot in c.wrr.by_ref() {
                    if let Some(Some(id)) = c.ids.get(slot.0 as usize) {
                        return Some(*id);
                    }
                }
            }
            self.open = false;
            if !self.progress {
                return None;
            }
        }
    }

    /// The channel polled last had nothing: its turn ends.
    pub(crate) fn dry(&mut self, place: &Place) {
        if let Some(slot) = place.slot {
            let _ = self.classes[usize::from(!place.realtime)]
                .wrr
                .set_work(slot, 0);
        }
    }

    /// The link took cells in this round.
    pub(crate) fn progressed(&mut self) {
        self.progress = true;
    }

    /// Ends the round: the next [`next`](Self::next) starts a fresh one.
    pub(crate) fn end(&mut self) {
        self.open = false;
    }
}
