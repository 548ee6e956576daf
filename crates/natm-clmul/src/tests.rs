use proptest::prelude::*;

use super::*;

/// CRC-32/BZIP2 a bit at a time: the definition, to test every kernel against.
fn bitwise(mut register: u32, data: &[u8]) -> u32 {
    for &b in data {
        register ^= u32::from(b) << 24;
        for _ in 0..8 {
            register = if register & 0x8000_0000 != 0 {
                (register << 1) ^ 0x04C1_1DB7
            } else {
                register << 1
            };
        }
    }
    register
}

fn bytes(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i ^ seed).wrapping_mul(2_654_435_761).to_be_bytes()[1])
        .collect()
}

#[test]
fn catalogue_check_and_residue() {
    assert_eq!(crc32_update(INIT, b"123456789") ^ 0xFFFF_FFFF, 0xFC89_1918);
    let mut pdu = bytes(9212, 3);
    let crc = crc32_update(INIT, &pdu) ^ 0xFFFF_FFFF;
    pdu.extend_from_slice(&crc.to_be_bytes());
    assert_eq!(crc32_update(INIT, &pdu), RESIDUE);
}

/// The kernels this machine can run, so each is checked where it exists.
fn kernels() -> Vec<&'static str> {
    let mut k = vec!["portable"];
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if avx512::Avx512::detect().is_some() {
        k.push("avx512");
    } else {
        eprintln!("this CPU has no AVX-512 VPCLMULQDQ: only the portable kernels are tested");
    }
    k
}

fn crc_with(kernel: &str, register: u32, data: &[u8]) -> u32 {
    match kernel {
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        "avx512" => avx512::Avx512::detect()
            .unwrap()
            .crc32_update(register, data),
        _ => portable::crc32_update(register, data),
    }
}

fn gather_with(kernel: &str, register: u32, cells: &[u8], out: &mut [u8]) -> (usize, u32) {
    match kernel {
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        "avx512" => avx512::Avx512::detect()
            .unwrap()
            .gather_payloads(register, cells, out),
        _ => portable::gather_payloads(register, cells, out),
    }
}

fn scatter_with(kernel: &str, header: &[u8; 5], payloads: &[u8], out: &mut [u8]) -> usize {
    match kernel {
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        "avx512" => avx512::Avx512::detect()
            .unwrap()
            .scatter_cells(header, payloads, out),
        _ => portable::scatter_cells(header, payloads, out),
    }
}

#[test]
fn crc_at_every_length_around_the_block_sizes() {
    // Every length to 1,100 crosses the table/fold switch, the 64- and 256-byte blocks and
    // every tail length.
    let data = bytes(1100, 9);
    for kernel in kernels() {
        for n in 0..=data.len() {
            for register in [INIT, 0, 0x1234_5678] {
                assert_eq!(
                    crc_with(kernel, register, &data[..n]),
                    bitwise(register, &data[..n]),
                    "{kernel} at {n} bytes from {register:#x}"
                );
            }
        }
    }
}

/// `n` cells carrying `payloads`, each with its own header, and `slack` bytes after them.
fn cells_of(payloads: &[u8], slack: usize) -> Vec<u8> {
    let mut cells = Vec::new();
    for (i, p) in payloads.chunks_exact(PAYLOAD_LEN).enumerate() {
        cells.extend_from_slice(&[i as u8, 1, 2, 3, 4]);
        cells.extend_from_slice(p);
    }
    cells.extend(std::iter::repeat_n(0xEE, slack));
    cells
}

#[test]
fn gather_every_count_and_slack() {
    for kernel in kernels() {
        for n in 0..=13 {
            let payloads = bytes(n * PAYLOAD_LEN, n as u32);
            for cell_slack in [0, 1, 16, 52] {
                for out_slack in [0, 15, 16, 47] {
                    let cells = cells_of(&payloads, cell_slack);
                    let mut out = vec![0xAB; n * PAYLOAD_LEN + out_slack];
                    let (count, register) = gather_with(kernel, INIT, &cells, &mut out);
                    let what = format!("{kernel}: {n} cells, slack {cell_slack}/{out_slack}");
                    assert_eq!(count, n, "{what}");
                    assert_eq!(&out[..n * PAYLOAD_LEN], &payloads[..], "{what}");
                    assert!(
                        out[n * PAYLOAD_LEN..].iter().all(|&b| b == 0xAB),
                        "{what}: wrote past the payloads"
                    );
                    assert_eq!(register, bitwise(INIT, &payloads), "{what}");
                }
            }
        }
    }
}

#[test]
fn scatter_every_count_and_slack() {
    let header = [0x00, 0x10, 0x06, 0x40, 0x55];
    for kernel in kernels() {
        for n in 0..=13 {
            for payload_slack in [0, 15, 16, 47] {
                for out_slack in [0, 1, 16, 52] {
                    let mut payloads = bytes(n * PAYLOAD_LEN, 7 + n as u32);
                    let want = cells_of(&payloads, 0);
                    payloads.extend(std::iter::repeat_n(0x11, payload_slack));
                    let mut out = vec![0xAB; n * CELL_LEN + out_slack];
                    let count = scatter_with(kernel, &header, &payloads, &mut out);
                    let what = format!("{kernel}: {n} cells, slack {payload_slack}/{out_slack}");
                    assert_eq!(count, n, "{what}");
                    for (i, (got, want)) in out
                        .chunks_exact(CELL_LEN)
                        .zip(want.chunks_exact(CELL_LEN))
                        .enumerate()
                    {
                        assert_eq!(&got[..5], &header, "{what}: cell {i} header");
                        assert_eq!(&got[5..], &want[5..], "{what}: cell {i} payload");
                    }
                    assert!(
                        out[n * CELL_LEN..].iter().all(|&b| b == 0xAB),
                        "{what}: wrote past the cells"
                    );
                }
            }
        }
    }
}

#[test]
fn counts_are_what_both_slices_hold() {
    let payloads = bytes(10 * PAYLOAD_LEN, 1);
    let cells = cells_of(&payloads, 0);
    for kernel in kernels() {
        let mut short = vec![0; 3 * PAYLOAD_LEN + 47];
        let (n, register) = gather_with(kernel, INIT, &cells, &mut short);
        assert_eq!(
            (n, register),
            (3, bitwise(INIT, &payloads[..3 * PAYLOAD_LEN])),
            "{kernel}"
        );
        let mut out = vec![0; 10 * CELL_LEN];
        assert_eq!(
            scatter_with(kernel, &[0; 5], &payloads[..4 * PAYLOAD_LEN + 1], &mut out),
            4
        );
        assert_eq!(
            scatter_with(kernel, &[0; 5], &payloads, &mut out[..2 * CELL_LEN + 52]),
            2
        );
    }
}

proptest! {
    #[test]
    fn crc_matches_the_definition(data in proptest::collection::vec(any::<u8>(), 0..20_000), register: u32) {
        let want = bitwise(register, &data);
        for kernel in kernels() {
            prop_assert_eq!(crc_with(kernel, register, &data), want, "{}", kernel);
        }
        prop_assert_eq!(crc32_update(register, &data), want);
    }

    #[test]
    fn gather_matches_copy_then_crc(
        payloads in proptest::collection::vec(any::<u8>(), 0..(200 * PAYLOAD_LEN)),
        register: u32,
        slack in 0usize..CELL_LEN,
    ) {
        let n = payloads.len() / PAYLOAD_LEN;
        let payloads = &payloads[..n * PAYLOAD_LEN];
        let cells = cells_of(payloads, slack);
        for kernel in kernels() {
            // Less than a cell of slack after the cells and less than a payload after `out`.
            let mut out = vec![0; payloads.len() + slack % PAYLOAD_LEN];
            prop_assert_eq!(gather_with(kernel, register, &cells, &mut out), (n, bitwise(register, payloads)), "{}", kernel);
            prop_assert_eq!(&out[..payloads.len()], payloads);
        }
    }

    #[test]
    fn scatter_then_gather_round_trips(
        payloads in proptest::collection::vec(any::<u8>(), 0..(200 * PAYLOAD_LEN)),
        header: [u8; 5],
    ) {
        let n = payloads.len() / PAYLOAD_LEN;
        let mut cells = vec![0; n * CELL_LEN];
        prop_assert_eq!(scatter_cells(&header, &payloads, &mut cells), n);
        let mut back = vec![0; n * PAYLOAD_LEN];
        prop_assert_eq!(gather_payloads(INIT, &cells, &mut back), (n, crc32_update(INIT, &back)));
        prop_assert_eq!(&back[..], &payloads[..n * PAYLOAD_LEN]);
        for cell in cells.chunks_exact(CELL_LEN) {
            prop_assert_eq!(&cell[..5], &header);
        }
    }
}
