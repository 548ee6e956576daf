//! The kernels in plain Rust: the reference the AVX-512 ones are tested against, and what
//! every call runs on a CPU without them (or without the `std` feature).

use crate::{CELL_LEN, HEADER_LEN, PAYLOAD_LEN};

// A `static`: a `const` table (16 KiB) may be rebuilt at every use site.
static TABLE: crc::Crc<u32, crc::Table<16>> =
    crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_BZIP2);

/// From this many bytes `crc-fast` beats the table (its call costs some 35 ns).
#[cfg(feature = "std")]
const CRC_FAST_MIN: usize = 512;

/// Continue the raw register over `data` with a slice-by-16 table.
pub fn table_update(register: u32, data: &[u8]) -> u32 {
    let mut d = TABLE.digest_with_initial(register);
    d.update(data);
    // For a 32-bit unreflected CRC the digest's finalize is register ^ xorout.
    d.finalize() ^ 0xFFFF_FFFF
}

/// [`crate::crc32_update`] without AVX-512.
pub fn crc32_update(register: u32, data: &[u8]) -> u32 {
    #[cfg(feature = "std")]
    if data.len() >= CRC_FAST_MIN {
        let mut d = crc_fast::Digest::new_with_init_state(
            crc_fast::CrcAlgorithm::Crc32Bzip2,
            u64::from(register),
        );
        d.update(data);
        return d.get_state() as u32;
    }
    table_update(register, data)
}

/// [`crate::scatter_cells`] without AVX-512.
pub fn scatter_cells(header: &[u8; HEADER_LEN], payloads: &[u8], out: &mut [u8]) -> usize {
    let mut n = 0;
    for (data, cell) in payloads
        .chunks_exact(PAYLOAD_LEN)
        .zip(out.chunks_exact_mut(CELL_LEN))
    {
        let (h, p) = cell.split_at_mut(HEADER_LEN);
        h.copy_from_slice(header);
        p.copy_from_slice(data);
        n += 1;
    }
    n
}

/// [`crate::gather_payloads`] without AVX-512: the copy, then the CRC over the copy.
pub fn gather_payloads(register: u32, cells: &[u8], out: &mut [u8]) -> (usize, u32) {
    let mut n = 0;
    for (cell, dst) in cells
        .chunks_exact(CELL_LEN)
        .zip(out.chunks_exact_mut(PAYLOAD_LEN))
    {
        dst.copy_from_slice(&cell[HEADER_LEN..]);
        n += 1;
    }
    (n, crc32_update(register, &out[..n * PAYLOAD_LEN]))
}
