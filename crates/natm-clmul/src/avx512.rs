//! The AVX-512 kernels: CRC folding with VPCLMULQDQ over 512-bit registers.
//!
//! The CRC is unreflected (bit 7 of the first byte is the highest power of x), so each
//! 16-byte lane is byte-reversed on load to make it a 128-bit number whose bit 127 comes
//! first. Folding a lane `A = A_hi·x^64 + A_lo` forward by `d` bits replaces it with
//! `A_hi·(x^(d+64) mod P) + A_lo·(x^d mod P)`: two 64×33-bit carry-less products that fit
//! the lane and are congruent to `A·x^d` mod P. The register enters by XOR into the first
//! 32 bits of data; the last 128 bits `V` leave as `V·x^32 mod P` (what a table CRC
//! computes from a zero register over `V`'s 16 bytes), by two more folds and Barrett's
//! reduction, cheaper than the 16-byte table step it replaced for one cell's payload
//! (`cargo bench -p natm-clmul`, `clmul_one_cell`).
//!
//! On the project's Zen 4 machine the fold runs at about 16 bytes a cycle (9,216 bytes in
//! 185 ns at 2.6-3 GHz): one 512-bit VPCLMULQDQ every two cycles, two per 64 bytes, which
//! is the bound; loads, shuffles and XORs fit beside it.

use core::arch::x86_64::*;
use std::sync::OnceLock;

use crate::portable::table_update;
use crate::{CELL_LEN, HEADER_LEN, PAYLOAD_LEN};

/// Proof that the CPU runs these kernels: made only by [`Avx512::detect`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx512(());

impl Avx512 {
    /// `Some` when the CPU has AVX-512 F, BW, VL and VPCLMULQDQ (detected once).
    #[inline]
    pub(crate) fn detect() -> Option<Avx512> {
        static HAS: OnceLock<bool> = OnceLock::new();
        let has = *HAS.get_or_init(|| {
            is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vl")
                && is_x86_feature_detected!("vpclmulqdq")
        });
        has.then_some(Avx512(()))
    }

    #[inline]
    pub(crate) fn crc32_update(self, register: u32, data: &[u8]) -> u32 {
        // SAFETY: `self` exists only when the CPU has the kernel's target features.
        unsafe { crc32(register, data) }
    }

    #[inline]
    pub(crate) fn scatter_cells(
        self,
        header: &[u8; HEADER_LEN],
        payloads: &[u8],
        out: &mut [u8],
    ) -> usize {
        // SAFETY: as above.
        unsafe { scatter(header, payloads, out) }
    }

    #[inline]
    pub(crate) fn gather_payloads(
        self,
        register: u32,
        cells: &[u8],
        out: &mut [u8],
    ) -> (usize, u32) {
        // SAFETY: as above.
        unsafe { gather(register, cells, out) }
    }
}

/// CRC-32/BZIP2's generator, x^32 included.
const POLY: u64 = 0x1_04C1_1DB7;

/// x^n mod P.
const fn xpow(n: u32) -> u64 {
    let mut r: u64 = 1;
    let mut i = 0;
    while i < n {
        r <<= 1;
        if r & (1 << 32) != 0 {
            r ^= POLY;
        }
        i += 1;
    }
    r
}

/// Fold constants moving lane `i` forward by `bits[i]` bits (`None`: the lane is dropped).
const fn keys(bits: [Option<u32>; 4]) -> [u64; 8] {
    let mut k = [0; 8];
    let mut i = 0;
    while i < 4 {
        if let Some(d) = bits[i] {
            k[2 * i] = xpow(d);
            k[2 * i + 1] = xpow(d + 64);
        }
        i += 1;
    }
    k
}

/// Every lane forward by `d` bits.
const fn same(d: u32) -> [u64; 8] {
    keys([Some(d); 4])
}

/// Four 64-byte accumulators, each forward by 256 bytes.
const FOLD_256: [u64; 8] = same(256 * 8);
/// One accumulator forward by 64 bytes.
const FOLD_64: [u64; 8] = same(64 * 8);
/// A register's four lanes to the position of its last lane.
const LANES_TO_LAST: [u64; 8] = keys([Some(384), Some(256), Some(128), Some(0)]);
/// Four cell accumulators (lanes 0-2 hold a payload, lane 3 is not data), each forward by
/// four payloads.
const FOLD_4_CELLS: [u64; 8] = same(4 * PAYLOAD_LEN as u32 * 8);
/// Cell accumulator `j`'s lanes to the position of the last lane of accumulator 3.
const CELLS_TO_LAST: [[u64; 8]; 4] = [cell_keys(0), cell_keys(1), cell_keys(2), cell_keys(3)];

const fn cell_keys(j: u32) -> [u64; 8] {
    // Payload j of 4 holds bytes 48j..48j+48 of the group; the last lane starts at 176.
    let first = (176 - 48 * j) * 8;
    keys([Some(first), Some(first - 128), Some(first - 256), None])
}

/// The 48 payload bytes of a 64-byte register.
const PAYLOAD_MASK: u64 = (1 << PAYLOAD_LEN) - 1;

#[inline]
#[target_feature(enable = "avx512f")]
fn constant(k: &[u64; 8]) -> __m512i {
    _mm512_set_epi64(
        k[7] as i64,
        k[6] as i64,
        k[5] as i64,
        k[4] as i64,
        k[3] as i64,
        k[2] as i64,
        k[1] as i64,
        k[0] as i64,
    )
}

/// The shuffle that reverses the bytes of each 16-byte lane.
#[inline]
#[target_feature(enable = "avx512f")]
fn reverse_lanes() -> __m512i {
    let lane = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    _mm512_broadcast_i32x4(lane)
}

/// The register XORed into the first 32 bits of the first lane.
#[inline]
#[target_feature(enable = "avx512f")]
fn initial(register: u32) -> __m512i {
    _mm512_set_epi64(0, 0, 0, 0, 0, 0, (u64::from(register) << 32) as i64, 0)
}

/// `a` folded forward by `k`.
#[inline]
#[target_feature(enable = "avx512f,vpclmulqdq")]
fn fold(a: __m512i, k: __m512i) -> __m512i {
    _mm512_xor_si512(
        _mm512_clmulepi64_epi128(a, k, 0x11),
        _mm512_clmulepi64_epi128(a, k, 0x00),
    )
}

/// `a` folded forward by `k`, plus `b`.
#[inline]
#[target_feature(enable = "avx512f,vpclmulqdq")]
fn fold_into(a: __m512i, k: __m512i, b: __m512i) -> __m512i {
    let hi = _mm512_clmulepi64_epi128(a, k, 0x11);
    let lo = _mm512_clmulepi64_epi128(a, k, 0x00);
    _mm512_ternarylogic_epi64(hi, lo, b, 0x96)
}

/// ⌊x^64 / P⌋, Barrett's constant (33 bits).
const MU: u64 = {
    let mut r: u128 = 1 << 64;
    let mut q: u64 = 0;
    let mut bit = 64;
    while bit >= 32 {
        if r & (1 << bit) != 0 {
            r ^= (POLY as u128) << (bit - 32);
            q |= 1 << (bit - 32);
        }
        bit -= 1;
    }
    q
};

/// x^96 mod P and x^64 mod P, the two folds before Barrett's step.
const X96: u64 = xpow(96);
const X64: u64 = xpow(64);

/// The carry-less product of `a` and `b`.
#[inline]
#[target_feature(enable = "pclmulqdq,sse4.1")]
fn clmul(a: u64, b: u64) -> u128 {
    let p = _mm_clmulepi64_si128(_mm_cvtsi64_si128(a as i64), _mm_cvtsi64_si128(b as i64), 0);
    let lo = _mm_cvtsi128_si64(p) as u64;
    let hi = _mm_extract_epi64::<1>(p) as u64;
    u128::from(hi) << 64 | u128::from(lo)
}

/// `V·x^32 mod P` for the 128-bit `V = hi·x^64 + lo`, in four carry-less multiplies: `hi`
/// comes down by `x^96 mod P` (96 bits left), the top 32 of those by `x^64 mod P` (64
/// bits left), and Barrett's reduction takes the last 64 to 32 (for `A` of degree under
/// 32, `⌊A·x^32 / P⌋ = ⌊A·μ / x^32⌋` with `μ = ⌊x^64 / P⌋`, exactly, over GF(2)).
#[inline]
#[target_feature(enable = "pclmulqdq,sse4.1")]
fn reduce(hi: u64, lo: u64) -> u32 {
    let t = clmul(hi, X96) ^ u128::from(lo) << 32;
    let u = clmul((t >> 64) as u64, X64) as u64 ^ t as u64;
    let (a, b) = (u >> 32, u & 0xFFFF_FFFF);
    let q = (clmul(a, MU) >> 32) as u64;
    (b ^ clmul(q, POLY) as u64) as u32
}

/// The register after lanes that all stand at the message's last 16 bytes: their sum `V`
/// taken to `V·x^32 mod P` (what a table CRC from a zero register computes over `V`'s
/// 16 bytes, without the table).
#[inline]
#[target_feature(enable = "avx512f,pclmulqdq,sse4.1")]
fn to_register(x: __m512i) -> u32 {
    let y = _mm256_xor_si256(
        _mm512_extracti64x4_epi64::<0>(x),
        _mm512_extracti64x4_epi64::<1>(x),
    );
    let v = _mm_xor_si128(
        _mm256_extracti128_si256::<0>(y),
        _mm256_extracti128_si256::<1>(y),
    );
    let lo = _mm_cvtsi128_si64(v) as u64;
    let hi = _mm_extract_epi64::<1>(v) as u64;
    reduce(hi, lo)
}

/// 64 bytes, lanes byte-reversed.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn load(block: &[u8; 64], reverse: __m512i) -> __m512i {
    // SAFETY: `block` is 64 readable bytes; the load has no alignment requirement.
    let x = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
    _mm512_shuffle_epi8(x, reverse)
}

/// The fold starts its four accumulators from one 256-byte block; shorter data is folded
/// 64 bytes at a time.
const FOLD_MIN: usize = 256;

/// Under 64 bytes, `k` whole 16-byte lanes (index `k - 1`): lane `i` moved to the place of
/// lane `k - 1`, the empty lanes dropped.
const SHORT_TO_LAST: [[u64; 8]; 3] = [
    keys([Some(0), None, None, None]),
    keys([Some(128), Some(0), None, None]),
    keys([Some(256), Some(128), Some(0), None]),
];

/// Data under 64 bytes (a cell's payload, a trailer's cell): its whole 16-byte lanes in one
/// masked load and one fold, the rest (under 16 bytes) through the table.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,vpclmulqdq")]
fn crc32_short(register: u32, data: &[u8]) -> u32 {
    let lanes = (data.len() / 16).min(3);
    if lanes == 0 {
        return table_update(register, data);
    }
    let whole = lanes * 16;
    // SAFETY: the mask reads only `data[..whole]`, in bounds; masked-off bytes are not
    // accessed and load as zero lanes, which the constants drop.
    let x = unsafe { _mm512_maskz_loadu_epi8((1u64 << whole) - 1, data.as_ptr().cast()) };
    let x = _mm512_xor_si512(_mm512_shuffle_epi8(x, reverse_lanes()), initial(register));
    let register = to_register(fold(x, constant(&SHORT_TO_LAST[lanes - 1])));
    match &data[whole..] {
        [] => register,
        tail => table_update(register, tail),
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,vpclmulqdq")]
fn crc32(register: u32, data: &[u8]) -> u32 {
    let reverse = reverse_lanes();
    let (blocks, tail) = data.as_chunks::<64>();
    let k = constant(&FOLD_64);
    // One 64-byte accumulator, started from four (one per 256-byte stride) when the data
    // is long enough, or from its first block; the blocks left fold into it one by one.
    let (mut x, rest) = if data.len() >= FOLD_MIN {
        let (quads, rest) = blocks.as_chunks::<4>();
        let (first, quads) = quads.split_first().expect("FOLD_MIN bytes or more");
        let mut a = [
            _mm512_xor_si512(load(&first[0], reverse), initial(register)),
            load(&first[1], reverse),
            load(&first[2], reverse),
            load(&first[3], reverse),
        ];
        let k4 = constant(&FOLD_256);
        for q in quads {
            for (a, b) in a.iter_mut().zip(q) {
                *a = fold_into(*a, k4, load(b, reverse));
            }
        }
        let x = fold_into(fold_into(fold_into(a[0], k, a[1]), k, a[2]), k, a[3]);
        (x, rest)
    } else if let Some((first, rest)) = blocks.split_first() {
        let x = _mm512_xor_si512(load(first, reverse), initial(register));
        (x, rest)
    } else {
        return crc32_short(register, data);
    };
    for b in rest {
        x = fold_into(x, k, load(b, reverse));
    }
    crc32_short(to_register(fold(x, constant(&LANES_TO_LAST))), tail)
}

/// Copy cell `c`'s payload to `out[48 c..]` and return it lane-reversed in lanes 0-2
/// (lane 3 holds whatever followed it: the caller's constants drop that lane).
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn move_payload(cells: &[u8], out: &mut [u8], c: usize, reverse: __m512i) -> __m512i {
    let from = c * CELL_LEN + HEADER_LEN;
    let to = c * PAYLOAD_LEN;
    assert!(from + PAYLOAD_LEN <= cells.len() && to + PAYLOAD_LEN <= out.len());
    let src = cells[from..].as_ptr();
    let dst = out[to..].as_mut_ptr();
    let x = if from + 64 <= cells.len() {
        // SAFETY: 64 readable bytes from `src` (checked just above).
        unsafe { _mm512_loadu_si512(src.cast()) }
    } else {
        // SAFETY: the mask reads only the payload's 48 bytes, in bounds by the assert;
        // masked-off bytes are not accessed.
        unsafe { _mm512_maskz_loadu_epi8(PAYLOAD_MASK, src.cast()) }
    };
    if to + 64 <= out.len() {
        // SAFETY: 64 writable bytes from `dst`; the 16 past this payload belong to the next
        // one, which the caller's next move overwrites.
        unsafe { _mm512_storeu_si512(dst.cast(), x) }
    } else {
        // SAFETY: the mask writes only the payload's 48 bytes, in bounds by the assert.
        unsafe { _mm512_mask_storeu_epi8(dst.cast(), PAYLOAD_MASK, x) }
    }
    _mm512_shuffle_epi8(x, reverse)
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,vpclmulqdq")]
fn gather(register: u32, cells: &[u8], out: &mut [u8]) -> (usize, u32) {
    let n = (cells.len() / CELL_LEN).min(out.len() / PAYLOAD_LEN);
    if n == 0 {
        return (0, register);
    }
    // Only `out[..48 n]` may be written: the unmasked 64-byte stores spill into the next
    // payload, so the last one is masked.
    let out = &mut out[..n * PAYLOAD_LEN];
    let reverse = reverse_lanes();
    // Each payload is folded from the register it was copied through: 48 bytes of 64, so a
    // quarter of every carry-less multiply is spent on lane 3, which the final constants
    // drop. Copying a batch first and folding it back from `out` in whole 64-byte blocks
    // was measured no faster (385 ns against 373 at 192 cells): the copy's cache-line-
    // crossing loads and stores do not overlap the multiplies.
    // Accumulator j takes the payloads c with (c + lead) % 4 == j: the stream seen as if it
    // began with `lead` zero payloads (zeros before the register's entry change nothing),
    // so that it ends on accumulator 3.
    let lead = (4 - n % 4) % 4;
    let zero = _mm512_setzero_si512();
    let mut a = [zero; 4];
    let mut c = 0;
    for slot in a.iter_mut().skip(lead) {
        *slot = move_payload(cells, out, c, reverse);
        c += 1;
    }
    a[lead] = _mm512_xor_si512(a[lead], initial(register));
    let k = constant(&FOLD_4_CELLS);
    while c < n {
        for (j, a) in a.iter_mut().enumerate() {
            *a = fold_into(*a, k, move_payload(cells, out, c + j, reverse));
        }
        c += 4;
    }
    let mut x = zero;
    for (a, k) in a.iter().zip(&CELLS_TO_LAST) {
        x = _mm512_xor_si512(x, fold(*a, constant(k)));
    }
    (n, to_register(x))
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn scatter(header: &[u8; HEADER_LEN], payloads: &[u8], out: &mut [u8]) -> usize {
    let n = (payloads.len() / PAYLOAD_LEN).min(out.len() / CELL_LEN);
    let out = &mut out[..n * CELL_LEN];
    let mut h = [0; 8];
    h[..HEADER_LEN].copy_from_slice(header);
    let h = u64::from_le_bytes(h);
    for c in 0..n {
        let from = c * PAYLOAD_LEN;
        let to = c * CELL_LEN;
        assert!(from + PAYLOAD_LEN <= payloads.len() && to + CELL_LEN <= out.len());
        let dst = out[to..].as_mut_ptr();
        // The header as 8 bytes: the 3 past it are payload, written next.
        // SAFETY: a cell is 53 writable bytes from `dst` (assert above).
        unsafe { dst.cast::<u64>().write_unaligned(h) };
        let src = payloads[from..].as_ptr();
        let x = if from + 64 <= payloads.len() {
            // SAFETY: 64 readable bytes from `src` (checked just above).
            unsafe { _mm512_loadu_si512(src.cast()) }
        } else {
            // SAFETY: only the payload's 48 bytes are read, in bounds by the assert.
            unsafe { _mm512_maskz_loadu_epi8(PAYLOAD_MASK, src.cast()) }
        };
        // SAFETY: `dst + 5` has the cell's 48 payload bytes writable (assert above); an
        // unmasked store's 16 extra bytes are the next cell's first bytes, in `out` and
        // overwritten by that cell's header and payload.
        unsafe {
            let p = dst.add(HEADER_LEN);
            if to + CELL_LEN + 16 <= out.len() {
                _mm512_storeu_si512(p.cast(), x);
            } else {
                _mm512_mask_storeu_epi8(p.cast(), PAYLOAD_MASK, x);
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barrett_constant_is_the_quotient_of_x64_by_p() {
        // The value the literature gives for CRC-32's generator 0x04C11DB7.
        assert_eq!(MU, 0x1_04D1_01DF);
    }

    #[test]
    fn reduce_matches_the_table_on_16_bytes() {
        let Some(_) = Avx512::detect() else { return };
        let mut x = 0x0123_4567_89AB_CDEFu64;
        for _ in 0..10_000 {
            // xorshift: words with bits everywhere.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (hi, lo) = (x, x.rotate_left(29) ^ 0x5555_AAAA_0F0F_F0F0);
            let mut bytes = [0; 16];
            bytes[..8].copy_from_slice(&hi.to_be_bytes());
            bytes[8..].copy_from_slice(&lo.to_be_bytes());
            // SAFETY: the CPU has the kernels' features (detected above).
            let got = unsafe { reduce(hi, lo) };
            assert_eq!(got, table_update(0, &bytes), "{hi:016x} {lo:016x}");
        }
    }
}
