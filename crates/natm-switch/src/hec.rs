//! The HEC (I.432.1 §4.3.2) of a header word, for the forwarding path.
//!
//! natm-wire's [`hec`](natm_wire::cell::hec) runs the generic `crc` crate byte by byte; here
//! the CRC's linearity (init 0: the CRC of `a ⊕ b` is `crc(a) ⊕ crc(b)`) splits the four
//! header bytes into four independent table lookups, so consecutive cells' HECs overlap in
//! the pipeline. A unit test checks it against natm-wire on every single byte position and
//! random words.

/// x^8 + x^2 + x + 1.
const POLY: u8 = 0x07;
/// The coset added to the CRC (I.432.1 §4.3.2).
const COSET: u8 = 0x55;

const fn crc8(bytes: [u8; 4]) -> u8 {
    let mut crc = 0u8;
    let mut i = 0;
    while i < 4 {
        crc ^= bytes[i];
        let mut b = 0;
        while b < 8 {
            crc = if crc & 0x80 != 0 {
                (crc << 1) ^ POLY
            } else {
                crc << 1
            };
            b += 1;
        }
        i += 1;
    }
    crc
}

/// `TABLES[i][x]`: the CRC of a header whose byte `i` is `x` and whose other bytes are 0.
static TABLES: [[u8; 256]; 4] = {
    let mut t = [[0u8; 256]; 4];
    let mut i = 0;
    while i < 4 {
        let mut x = 0;
        while x < 256 {
            let mut h = [0u8; 4];
            h[i] = x as u8;
            t[i][x] = crc8(h);
            x += 1;
        }
        i += 1;
    }
    t
};

/// The HEC of the header whose first four bytes, big-endian, are `word`.
#[inline(always)]
pub(crate) fn hec(word: u32) -> u8 {
    let [b0, b1, b2, b3] = word.to_be_bytes();
    TABLES[0][usize::from(b0)]
        ^ TABLES[1][usize::from(b1)]
        ^ TABLES[2][usize::from(b2)]
        ^ TABLES[3][usize::from(b3)]
        ^ COSET
}

/// What the last header byte's low four bits (PTI and CLP) add to the HEC: by linearity
/// `hec(w) == hec(w & !0xF) ^ hec_low(w)`, so the cells of one connection, whose headers
/// differ only there, are checked and rewritten with one small lookup each.
#[inline(always)]
pub(crate) fn hec_low(word: u32) -> u8 {
    TABLES[3][(word & 0xF) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_byte_position_matches_natm_wire() {
        for i in 0..4 {
            for x in 0..=255u8 {
                let mut h = [0u8; 4];
                h[i] = x;
                assert_eq!(
                    hec(u32::from_be_bytes(h)),
                    natm_wire::cell::hec(h),
                    "{h:02x?}"
                );
            }
        }
        // atm-facts.md §1.4: VPI 1 VCI 100 PTI 0.
        assert_eq!(hec(0x0010_0640), 0x4E);
    }

    proptest! {
        #[test]
        fn any_word_matches_natm_wire(w in any::<u32>()) {
            prop_assert_eq!(hec(w), natm_wire::cell::hec(w.to_be_bytes()));
        }

        #[test]
        fn the_low_bits_add_their_own_part(w in any::<u32>()) {
            prop_assert_eq!(hec(w), hec(w & !0xF) ^ hec_low(w));
        }
    }
}
