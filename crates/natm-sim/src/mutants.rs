//! The planted bugs of the cores, switched from one place for the mutation meta-test
//! (tests/mutants.rs). Test-only: this module exists with the `mutants` feature, whose
//! flags are process-global; whoever switches one on switches it off again.

/// A planted bug the swarm must find.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutant {
    /// natm-adapter: the AAL5 receiver delivers frames with a bad CRC-32.
    IgnoreCrc,
    /// natm-traffic: the UPC passes every cell.
    NeverTag,
    /// natm-traffic: a CAC release leaves its bandwidth booked.
    ForgetRelease,
    /// natm-switch: a port swaps two cells of one connection now and then.
    Reorder,
    /// natm-sscop: the transmitter ignores USTAT (lost SDs wait for the next POLL/STAT).
    IgnoreUstat,
    /// natm-sig: a network side whose T308 runs out the second time keeps the call in
    /// N11 for ever (no local release, no RESTART).
    NoReleaseAfterT308,
    /// natm-calls: a released call leg keeps its VCI allocated on its port.
    KeepVciOnRelease,
    /// natm-transport: the receiver's acks name no trigger (SMART finds no loss).
    AckWithoutTrigger,
    /// natm-transport: a loss found by SMART leaves the window as it is.
    WindowNeverHalves,
}

/// Which campaign a mutant is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Campaign {
    /// The default scenario's cell network ([`crate::swarm()`]).
    Cells,
    /// The signalling campaign ([`crate::signalling::swarm`]).
    Signalling,
    /// The calls scenario ([`crate::CALLS_SCENARIO`] under [`crate::swarm()`]).
    Calls,
    /// The transport campaign ([`crate::transport::swarm`]).
    Transport,
}

/// Every mutant.
pub const ALL: [Mutant; 9] = [
    Mutant::IgnoreCrc,
    Mutant::NeverTag,
    Mutant::ForgetRelease,
    Mutant::Reorder,
    Mutant::IgnoreUstat,
    Mutant::NoReleaseAfterT308,
    Mutant::KeepVciOnRelease,
    Mutant::AckWithoutTrigger,
    Mutant::WindowNeverHalves,
];

impl Mutant {
    /// The invariant ([`crate::check`]) that catches this mutant.
    pub fn caught_by(self) -> &'static str {
        match self {
            Mutant::IgnoreCrc => "no bad frame delivered",
            Mutant::NeverTag => "policing bound",
            Mutant::ForgetRelease => "CAC books balance",
            Mutant::Reorder => "cell order per VC",
            Mutant::IgnoreUstat => "SSCOP answers USTAT",
            Mutant::NoReleaseAfterT308 => "call clearing bounded by T308",
            Mutant::KeepVciOnRelease => "no VCI or bandwidth leaked",
            Mutant::AckWithoutTrigger => "every TPDU acked naming it",
            Mutant::WindowNeverHalves => "window halves on the first loss",
        }
    }

    /// The campaign whose swarm catches this mutant.
    pub fn campaign(self) -> Campaign {
        match self {
            Mutant::IgnoreUstat | Mutant::NoReleaseAfterT308 => Campaign::Signalling,
            Mutant::KeepVciOnRelease => Campaign::Calls,
            Mutant::AckWithoutTrigger | Mutant::WindowNeverHalves => Campaign::Transport,
            _ => Campaign::Cells,
        }
    }
}

/// Switches mutant `m` on or off.
pub fn set(m: Mutant, on: bool) {
    match m {
        Mutant::IgnoreCrc => natm_adapter::mutants::set_ignore_crc(on),
        Mutant::NeverTag => natm_traffic::mutants::set_policer_never_tags(on),
        Mutant::ForgetRelease => natm_traffic::mutants::set_cac_forgets_release(on),
        Mutant::Reorder => natm_switch::mutants::set_reorder(on),
        Mutant::IgnoreUstat => natm_sscop::mutants::set_ignore_ustat(on),
        Mutant::NoReleaseAfterT308 => natm_sig::mutants::set_no_release_complete_after_t308(on),
        Mutant::KeepVciOnRelease => natm_calls::mutants::set_keep_vci_on_release(on),
        Mutant::AckWithoutTrigger => natm_transport::mutants::set_ack_without_trigger(on),
        Mutant::WindowNeverHalves => natm_transport::mutants::set_window_never_halves(on),
    }
}
