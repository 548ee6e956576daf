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
}

/// Every mutant.
pub const ALL: [Mutant; 4] = [
    Mutant::IgnoreCrc,
    Mutant::NeverTag,
    Mutant::ForgetRelease,
    Mutant::Reorder,
];

impl Mutant {
    /// The invariant ([`crate::check`]) that catches this mutant.
    pub fn caught_by(self) -> &'static str {
        match self {
            Mutant::IgnoreCrc => "no bad frame delivered",
            Mutant::NeverTag => "policing bound",
            Mutant::ForgetRelease => "CAC books balance",
            Mutant::Reorder => "cell order per VC",
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
    }
}
