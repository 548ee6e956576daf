//! `natm aal5`: AAL5 tools.
//!
//! `natm aal5 send --vc VPI.VCI (--text STR | --input FILE) --pcap OUT [--cells] [--uu N]
//! [--cpi N]` segments one SDU into cells on a VC with natm's segmenter and writes what a
//! receiver would see to an ERF pcap file that Wireshark reads: the AAL5 PDU with its
//! trailer (an ERF AAL5 record, so Wireshark checks the CRC-32) and, with `--cells`, every
//! cell as an ERF cell record. Cells are stamped one OC-3c cell time (2.83 µs) apart, from
//! the wall clock; the AAL5 record carries the time of its last cell.
//!
//! An ERF record's 16-bit length caps an AAL5 record at 1364 cells (SDUs up to 65 464
//! bytes); a longer SDU is written as its cells only, and the summary says so.

use std::fs::File;
use std::io::{self, BufWriter, Read};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use natm_capture::erf::MAX_AAL5_PDU;
use natm_capture::send::sdu_records;
use natm_capture::{LinkType, Writer};
use natm_core::addr::AddrSyntax;
use natm_core::{Duration, Instant, PvcAddr, VcId};

use crate::{CliError, CmdResult};

/// One cell time at OC-3c (353 207.5 cells/s), in nanoseconds.
const CELL_TIME_NS: u64 = 2_831;

/// `natm aal5` subcommands.
#[derive(Subcommand)]
pub enum Aal5Command {
    /// Segment an SDU into cells on a VC and write the AAL5 PDU (and its cells) to an ERF
    /// pcap file.
    Send(SendArgs),
}

/// Arguments of `natm aal5 send`.
#[derive(Args)]
pub struct SendArgs {
    /// The VC, as [ITF.]VPI.VCI (linux-atm's PVC form; UNI: VPI 0..=255, VCI 0..=65535; the
    /// interface is not recorded).
    #[arg(long, value_name = "VPI.VCI")]
    vc: String,
    /// The SDU, as the bytes of this text.
    #[arg(long, value_name = "STR", required_unless_present = "input")]
    text: Option<String>,
    /// The SDU, as the bytes of this file (`-` for standard input).
    #[arg(long, value_name = "FILE", conflicts_with = "text")]
    input: Option<PathBuf>,
    /// The capture file to write (replaced if it exists).
    #[arg(long, value_name = "OUT")]
    pcap: PathBuf,
    /// Also write every cell as an ERF cell record.
    #[arg(long)]
    cells: bool,
    /// CPCS user-to-user byte of the trailer (decimal or 0x hex).
    #[arg(long, value_name = "N", default_value = "0")]
    uu: String,
    /// Common part indicator byte of the trailer (decimal or 0x hex).
    #[arg(long, value_name = "N", default_value = "0")]
    cpi: String,
}

/// Run an `aal5` subcommand.
pub fn run(command: Aal5Command) -> CmdResult {
    match command {
        Aal5Command::Send(args) => send(args),
    }
}

/// Parse linux-atm's PVC form `[ITF.]VPI.VCI` (libatm's `text2atm`, UNI VPIs, no `?` or
/// `*`) into a VC; the interface is accepted and not recorded.
fn parse_vc(text: &str) -> Result<VcId, CliError> {
    match PvcAddr::parse_with(text, AddrSyntax::EXACT) {
        // AddrSyntax::EXACT admits no `?` or `*`; should it ever, refuse them here.
        Ok(pvc) => pvc.vc().ok_or_else(|| {
            CliError::usage(format!(
                "bad --vc {text:?}: a capture needs a concrete VPI.VCI"
            ))
        }),
        Err(e) => Err(CliError::usage(format!(
            "bad --vc {text:?} {e} (expected [ITF.]VPI.VCI, e.g. 0.100)"
        ))),
    }
}

fn parse_u8(flag: &str, text: &str) -> Result<u8, CliError> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| CliError::usage(format!("bad {flag} {text:?}: expected 0..=255")))
}

fn read_sdu(args: &SendArgs) -> Result<Vec<u8>, CliError> {
    if let Some(text) = &args.text {
        return Ok(text.as_bytes().to_vec());
    }
    let path = args
        .input
        .as_ref()
        .expect("clap requires --text or --input");
    let unreadable = |e: io::Error| CliError::usage(format!("cannot read {}: {e}", path.display()));
    if path.as_os_str() == "-" {
        let mut sdu = Vec::new();
        io::stdin().read_to_end(&mut sdu).map_err(unreadable)?;
        Ok(sdu)
    } else {
        std::fs::read(path).map_err(unreadable)
    }
}

/// The wall clock as a capture time: the one place this command reads a clock.
fn now() -> Instant {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Instant::from_nanos(u64::try_from(since_epoch.as_nanos()).unwrap_or(u64::MAX))
}

fn send(args: SendArgs) -> CmdResult {
    let vc = parse_vc(&args.vc)?;
    let uu = parse_u8("--uu", &args.uu)?;
    let cpi = parse_u8("--cpi", &args.cpi)?;
    let sdu = read_sdu(&args)?;
    let sent = sdu_records(
        vc,
        &sdu,
        (uu, cpi),
        now(),
        Duration::from_nanos(CELL_TIME_NS),
        args.cells,
    )
    .map_err(|e| CliError::usage(format!("cannot send this SDU: {e}")))?;
    let (trailer, pad, pdu_fits) = (sent.trailer, sent.pad, sent.pdu_fits);
    let out = File::create(&args.pcap)
        .map_err(|e| CliError::failure(format!("cannot create {}: {e}", args.pcap.display())))?;
    let fail = |e: natm_capture::CaptureError| {
        CliError::failure(format!("writing {}: {e}", args.pcap.display()))
    };
    let mut w = Writer::new(BufWriter::new(out), LinkType::Erf).map_err(fail)?;
    for record in &sent.records {
        w.write(record).map_err(fail)?;
    }
    w.flush().map_err(fail)?;

    let n = sent.cells;
    let plural = |k: usize| if k == 1 { "" } else { "s" };
    let wrote = match (pdu_fits, sent.cells_written) {
        (true, false) => "1 AAL5 record".to_string(),
        (true, true) => format!("1 AAL5 record and {n} cell record{}", plural(n)),
        (false, _) => format!(
            "{n} cell records only (a {}-byte PDU is longer than an ERF AAL5 record holds, {MAX_AAL5_PDU})",
            n * natm_wire::PAYLOAD_LEN
        ),
    };
    println!(
        "aal5: {}-byte SDU on {vc} in {n} cell{} (pad {pad}), trailer {trailer}; wrote {wrote} to {}",
        sdu.len(),
        plural(n),
        args.pcap.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vc_parsing() {
        assert_eq!(parse_vc("1.100").unwrap(), VcId::uni(1, 100).unwrap());
        assert_eq!(
            parse_vc("255.65535").unwrap(),
            VcId::uni(255, 65535).unwrap()
        );
        assert_eq!(parse_vc("2.1.100").unwrap(), VcId::uni(1, 100).unwrap());
        for bad in [
            "", "1", "1.", ".5", "a.b", "1.2.3.4", "-1.5", "256.5", "0.65536", "0.*", "?.5", "01.5",
        ] {
            let e = parse_vc(bad).unwrap_err();
            assert_eq!(e.code, 2, "{bad}");
            assert!(e.message.starts_with("bad --vc"), "{bad}: {}", e.message);
        }
        assert_eq!(
            parse_vc("256.5").unwrap_err().message,
            "bad --vc \"256.5\" at 0: VPI out of range 0..=255 (expected [ITF.]VPI.VCI, e.g. 0.100)"
        );
    }

    #[test]
    fn byte_parsing() {
        assert_eq!(parse_u8("--uu", "0").unwrap(), 0);
        assert_eq!(parse_u8("--uu", "255").unwrap(), 255);
        assert_eq!(parse_u8("--uu", "0x7f").unwrap(), 0x7f);
        assert!(parse_u8("--uu", "256").is_err());
        assert!(parse_u8("--uu", "x").is_err());
    }
}
