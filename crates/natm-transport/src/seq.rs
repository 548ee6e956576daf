//! Sequence numbers in serial-number arithmetic (RFC 1982 over 32 bits).
//!
//! TPDU and message sequence numbers are `u32` that wrap. `a` is *before* `b` when the
//! distance from `a` forward to `b` is in `1..2³¹`; the two ends never have more than a
//! window (far below 2³¹) of TPDUs between them, so that order is never ambiguous for a
//! number the peer can legitimately send. Every comparison here goes through [`dist`].

/// Half the sequence space: a forward distance at or above it means "behind".
pub(crate) const HALF: u32 = 1 << 31;

/// The distance from `from` forward to `to`, modulo 2³².
pub(crate) const fn dist(from: u32, to: u32) -> u32 {
    to.wrapping_sub(from)
}

/// Whether `a` comes strictly before `b`.
pub(crate) const fn before(a: u32, b: u32) -> bool {
    let d = dist(a, b);
    d != 0 && d < HALF
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_across_the_wrap() {
        assert!(before(u32::MAX, 0));
        assert!(before(u32::MAX - 5, 3));
        assert!(!before(3, u32::MAX - 5));
        assert!(!before(7, 7));
        assert_eq!(dist(u32::MAX - 1, 2), 4);
        // Exactly half way is "behind" both ways: never produced by a window < 2³¹.
        assert!(!before(0, HALF));
        assert!(before(0, HALF - 1));
    }
}
