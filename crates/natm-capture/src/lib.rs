//! Capture files of ATM traffic that Wireshark and tshark read, and a reader for the same
//! formats from other tools.
//!
//! The container is classic pcap ([`pcap`]: libpcap's savefile format, both byte orders,
//! microsecond and nanosecond timestamps). Inside it natm writes three link types, one per
//! file:
//!
//! * **ERF** (197, [`erf`]): type 4 records carry a whole AAL5 CPCS-PDU with its trailer
//!   behind the 4-byte header of the VC, so Wireshark checks the AAL5 CRC-32; type 3 records
//!   carry one cell without HEC, for which Wireshark recognises F4/F5 OAM and checks the
//!   CRC-10.
//! * **SunATM** (123, [`sunatm`]): a reassembled SDU without trailer behind a 4-byte
//!   pseudo-header whose type selects the decoder (6 = signalling, 2 = LLC, 0 = guess).
//! * **Exported PDU** (252, [`exported_pdu`]): whole 53-byte cells for Wireshark's
//!   `atm_oam_cell` dissector, the one way found to have tshark check a captured HEC.
//!
//! [`Writer`] and [`Reader`] move typed [`Record`]s in and out; [`summarize`] turns a record
//! into a one-line [`Summary`] with natm's verdicts (AAL5 receive checks, HEC, CRC-10) and
//! what the bytes carry (OAM function, LLC/SNAP encapsulation, ATMARP, and on the
//! signalling VC the SSCOP PDU and its Q.2931 message, [`signalling`]), which `natm dump`
//! prints.
//!
//! Guarantees: nothing here panics on the contents of a file; the reader allocates at most
//! one record (64 MiB at most) at a time; read errors name the byte offset. Not here:
//! pcapng, capturing from a live link (that is a tracer in the runtime), and reassembly of
//! cell records into PDUs.
//!
//! ```
//! use natm_capture::{summarize, CellRecord, LinkType, Reader, Record, RecordKind, Writer};
//! use natm_core::{Instant, VcId};
//! use natm_wire::oam::{OamFlow, OamRepr};
//!
//! let cell = OamRepr::ContinuityCheck.to_cell(OamFlow::F5Segment, VcId::uni(1, 100).unwrap());
//! let mut w = Writer::new(Vec::new(), LinkType::ExportedPdu).unwrap();
//! w.write(&Record {
//!     time: Instant::from_nanos(1_000_000_000),
//!     kind: RecordKind::Cell(CellRecord::from_cell(&cell)),
//! })
//! .unwrap();
//! let file = w.into_inner().unwrap();
//! let record = Reader::new(&file[..]).unwrap().next().unwrap().unwrap();
//! assert_eq!(
//!     summarize(&record).to_string(),
//!     "1.000000000 1.100 oam len=53 pti=4 clp=0 hec=ok crc10=ok F5 segment CC"
//! );
//! ```
#![forbid(unsafe_code)]

pub mod erf;
mod error;
pub mod exported_pdu;
pub mod pcap;
mod record;
pub mod send;
pub mod signalling;
pub mod summary;
pub mod sunatm;

pub use error::CaptureError;
pub use pcap::{FileHeader, LinkType, TsResolution};
pub use record::{CellRecord, Reader, Record, RecordKind, Writer};
pub use signalling::Signalling;
pub use summary::{Summary, summarize};
pub use sunatm::{Direction, SunAtmType};
