//! The AAL5 data path's kernels: CRC-32/BZIP2 (I.363.5 §10.3) and the copies between an
//! SDU and its 53-byte cells, with the CRC folded into the copy on reassembly.
//!
//! What this crate is: three functions over byte slices, each with an AVX-512 (VPCLMULQDQ)
//! kernel chosen at run time and a portable one that gives the same result on every CPU.
//! What it is not: it knows nothing of PTIs, trailers or lengths; `natm-wire`'s
//! `Segmenter` and `Crc32` are built on it and own those rules. [`gather_payloads`] has no
//! caller since natm-wire's `Reassembler` went (issue 21: the adapter's receive path, which
//! stages payloads and CRCs them in one update, is natm's one reassembly).
//!
//! - [`crc32_update`] continues a CRC register over bytes.
//! - [`scatter_cells`] writes cells: a fixed 5-byte header and 48 payload bytes each.
//! - [`gather_payloads`] copies the payloads of cells into one buffer and continues a CRC
//!   register over them in the same pass.
//!
//! Registers are *raw*: start from [`INIT`], take the CRC as `register ^ 0xFFFF_FFFF`,
//! and a whole good AAL5 PDU (CRC field included) leaves [`RESIDUE`].
//!
//! Why a crate of its own, with `unsafe`: the pure protocol crates forbid `unsafe`, and
//! SIMD loads and stores need it. `crc-fast` (used here for CPUs without AVX-512) reaches
//! about 30 GB/s at 9,180 bytes on the project's machine; the fold below about 42 GB/s,
//! and only a kernel of our own can fold the CRC into the reassembly copy. The method is
//! the carry-less-multiply folding of Gopal et al., "Fast CRC Computation for Generic
//! Polynomials Using PCLMULQDQ Instruction" (Intel, 2009), over 512-bit registers.
//!
//! ```
//! use natm_clmul::{crc32_update, gather_payloads, scatter_cells, INIT};
//!
//! let check = crc32_update(INIT, b"123456789") ^ 0xFFFF_FFFF;
//! assert_eq!(check, 0xFC89_1918); // the catalogue's check value for CRC-32/BZIP2
//!
//! let sdu = [7u8; 96];
//! let mut cells = [0u8; 2 * 53];
//! assert_eq!(scatter_cells(&[0, 0x10, 0x06, 0x40, 0], &sdu, &mut cells), 2);
//! let mut back = [0u8; 96];
//! let (n, register) = gather_payloads(INIT, &cells, &mut back);
//! assert_eq!((n, back), (2, sdu));
//! assert_eq!(register, crc32_update(INIT, &sdu));
//! ```

#![cfg_attr(not(feature = "std"), no_std)]

#[cfg(all(feature = "std", target_arch = "x86_64"))]
mod avx512;
pub mod portable;

/// Bytes in a cell.
pub const CELL_LEN: usize = 53;
/// Bytes of a cell's header.
pub const HEADER_LEN: usize = 5;
/// Bytes of a cell's payload.
pub const PAYLOAD_LEN: usize = 48;

/// The raw register before any byte (CRC-32/BZIP2's init).
pub const INIT: u32 = 0xFFFF_FFFF;

/// The raw register after a whole good PDU, CRC field included (CRC-32/MPEG-2's residue).
pub const RESIDUE: u32 = 0xC704_DD7B;

/// Continue the raw CRC-32/BZIP2 register `register` over `data`.
#[inline]
pub fn crc32_update(register: u32, data: &[u8]) -> u32 {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if let Some(k) = avx512::Avx512::detect() {
        return k.crc32_update(register, data);
    }
    portable::crc32_update(register, data)
}

/// Write cells into `out`: cell `i` is `header` then `payloads[48 i..48 i + 48]`. Writes
/// as many whole cells as both slices hold (`min(payloads.len() / 48, out.len() / 53)`),
/// touches nothing of `out` after them, and returns that count.
#[inline]
pub fn scatter_cells(header: &[u8; HEADER_LEN], payloads: &[u8], out: &mut [u8]) -> usize {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if let Some(k) = avx512::Avx512::detect() {
        return k.scatter_cells(header, payloads, out);
    }
    portable::scatter_cells(header, payloads, out)
}

/// Copy the payloads of the cells in `cells` (53 bytes each, back to back) into `out`, one
/// after the other, and continue `register` over them. Copies as many cells as both slices
/// hold (`min(cells.len() / 53, out.len() / 48)`), touches nothing of `out` after
/// `48 × count`, and returns the count and the register.
#[inline]
pub fn gather_payloads(register: u32, cells: &[u8], out: &mut [u8]) -> (usize, u32) {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if let Some(k) = avx512::Avx512::detect() {
        return k.gather_payloads(register, cells, out);
    }
    portable::gather_payloads(register, cells, out)
}

#[cfg(test)]
mod tests;
