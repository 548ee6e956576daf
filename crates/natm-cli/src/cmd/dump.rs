//! `natm dump FILE [--json]`: print the records of a capture, one line each.
//!
//! Each line gives the record number, time, VPI.VCI, kind, length, natm's verdicts (AAL5
//! receive checks, HEC, CRC-10; see `natm_capture::summary`) and what the bytes carry
//! where natm knows (OAM function, LLC/SNAP encapsulation, ATMARP). Signalling records
//! (SunATM typed signalling, SDUs on VCI 5, exported PDUs for `sscop` or `q2931`) show the
//! SSCOP PDU with its sequence numbers and the Q.2931 message with each IE decoded, or the
//! codec's reason when they do not decode (`natm_capture::signalling`). With `--json` each
//! line is one JSON object with the same fields plus `record`; signalling is the
//! `signalling` object (`sscop`, `q2931` with `ies`, `error`).
//!
//! A file that is not a readable pcap, or whose framing breaks part-way, is an error
//! (exit 2) naming the file and the byte offset; records before the break are printed
//! first, so nothing that was read is lost.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::PathBuf;

use clap::Args;
use natm_capture::{Reader, Summary, summarize};
use serde::Serialize;

use crate::{CliError, CmdResult};

/// Arguments of `natm dump`.
#[derive(Args)]
pub struct DumpArgs {
    /// The capture: classic pcap, any link type (ERF, SunATM and exported-PDU cells are
    /// decoded; on the signalling VC 0.5, and in exported `sscop` / `q2931` PDUs, SSCOP
    /// and Q.2931 too).
    file: PathBuf,
    /// Print one JSON object per record instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct JsonLine<'a> {
    record: u64,
    #[serde(flatten)]
    summary: &'a Summary,
}

/// Run `natm dump`.
pub fn run(args: DumpArgs) -> CmdResult {
    let name = args.file.display();
    let file = File::open(&args.file).map_err(|e| CliError::usage(format!("{name}: {e}")))?;
    let reader =
        Reader::new(BufReader::new(file)).map_err(|e| CliError::usage(format!("{name}: {e}")))?;
    let mut out = BufWriter::new(io::stdout().lock());
    let mut number = 0u64;
    for item in reader {
        match item {
            Ok(record) => {
                number += 1;
                let summary = summarize(&record);
                let written = if args.json {
                    serde_json::to_writer(
                        &mut out,
                        &JsonLine {
                            record: number,
                            summary: &summary,
                        },
                    )
                    .map_err(io::Error::from)
                    .and_then(|()| writeln!(out))
                } else {
                    writeln!(out, "{number} {summary}")
                };
                if let Err(e) = written {
                    return output_error(e);
                }
            }
            Err(e) => {
                if let Err(e) = out.flush() {
                    return output_error(e);
                }
                return Err(CliError::usage(format!("{name}: {e}")));
            }
        }
    }
    out.flush().or_else(output_error)
}

/// A closed pipe (`natm dump f | head`) is a normal end; anything else is a failure.
fn output_error(e: io::Error) -> CmdResult {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(CliError::failure(format!("writing standard output: {e}")))
    }
}
