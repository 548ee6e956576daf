//! Typed records, and the [`Writer`] and [`Reader`] that put them in pcap files.
//!
//! | record kind | ERF (197) | SunATM (123) | exported PDU (252) |
//! |---|---|---|---|
//! | [`RecordKind::Aal5Pdu`] | type 4: ATM header + PDU | – | – |
//! | [`RecordKind::Cell`] | type 3: header + payload, **no HEC** | – | `atm_oam_cell`: 53 bytes with HEC |
//! | [`RecordKind::SunAtm`] | – | pseudo-header + SDU | – |
//! | [`RecordKind::Other`] | any bytes of the file's link type, as they are |
//!
//! The reader never panics and never allocates more than one record (at most 64 MiB): a
//! broken file header or record framing is a [`CaptureError`] naming the byte offset, after
//! which iteration ends; a record whose *contents* cannot be decoded (an ERF type natm does
//! not know, a SunATM record shorter than its pseudo-header, any other link type) is kept
//! as [`RecordKind::Other`], so nothing in a readable file is lost.
//!
//! Times: an ERF record's own timestamp (2^-32 s resolution) wins over the pcap record
//! header's, as in Wireshark, so ERF records keep nanoseconds even in a microsecond file;
//! the other kinds have the file's resolution.

use std::io::{self, Read, Write};

use natm_core::{HeaderFormat, Instant, VcId, Vci, Vpi};
use natm_wire::cell::{CELL_LEN, CellHeader, HEADER_LEN, PAYLOAD_LEN, hec};

use crate::erf::{self, ErfHeader, record_type};
use crate::error::CaptureError;
use crate::exported_pdu;
use crate::pcap::{FILE_HEADER_LEN, FileHeader, LinkType, RECORD_HEADER_LEN, TsResolution};
use crate::sunatm::{self, Direction, SunAtmType};

/// One captured record.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    /// When it was captured, in nanoseconds since the Unix epoch.
    pub time: Instant,
    /// What it holds.
    pub kind: RecordKind,
}

/// What a record holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// A whole AAL5 CPCS-PDU (SDU, pad and trailer) on a VC: ERF type 4. A PDU read from a
    /// file may be anything, including not a whole number of cells.
    Aal5Pdu {
        /// The VC (UNI: ERF's header carries an 8-bit VPI).
        vc: VcId,
        /// The PDU bytes.
        pdu: Vec<u8>,
    },
    /// One cell.
    Cell(CellRecord),
    /// A reassembled SDU with a SunATM pseudo-header.
    SunAtm {
        /// The VC.
        vc: VcId,
        /// The traffic type, which tells Wireshark how to decode the SDU.
        kind: SunAtmType,
        /// Which way it went.
        direction: Direction,
        /// The SDU, without AAL5 pad or trailer.
        sdu: Vec<u8>,
    },
    /// Anything else, as stored in the file (for ERF, the whole record, ERF header included).
    Other {
        /// The file's link type.
        linktype: LinkType,
        /// The record's bytes.
        bytes: Vec<u8>,
    },
}

impl RecordKind {
    /// A short name for messages: `aal5`, `cell`, `sunatm` or `other`.
    pub fn name(&self) -> &'static str {
        match self {
            RecordKind::Aal5Pdu { .. } => "aal5",
            RecordKind::Cell(_) => "cell",
            RecordKind::SunAtm { .. } => "sunatm",
            RecordKind::Other { .. } => "other",
        }
    }
}

/// One cell: the four header bytes the HEC covers, the HEC if the format keeps it, and the
/// payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CellRecord {
    /// GFC/VPI, VPI/VCI, VCI, VCI/PTI/CLP.
    pub header: [u8; 4],
    /// The HEC as captured; `None` where the format has none (ERF cell records).
    pub hec: Option<u8>,
    /// The 48-byte payload.
    pub payload: [u8; PAYLOAD_LEN],
}

impl CellRecord {
    /// A record of a whole 53-byte cell, HEC kept as it is.
    pub fn from_cell(cell: &[u8; CELL_LEN]) -> CellRecord {
        let (h, p) = cell.split_at(HEADER_LEN);
        CellRecord {
            header: [h[0], h[1], h[2], h[3]],
            hec: Some(h[4]),
            payload: p.try_into().expect("53 - 5 = 48"),
        }
    }

    /// The 53-byte cell; an absent HEC is computed, as a transmitter would.
    pub fn to_cell(&self) -> [u8; CELL_LEN] {
        let mut c = [0u8; CELL_LEN];
        c[..4].copy_from_slice(&self.header);
        c[4] = self.hec.unwrap_or_else(|| hec(self.header));
        c[HEADER_LEN..].copy_from_slice(&self.payload);
        c
    }
}

/// The VPI of `vc` as the 8 bits ERF and SunATM headers carry.
fn uni_vpi(vc: VcId, link: LinkType) -> Result<u8, CaptureError> {
    u8::try_from(vc.vpi.get()).map_err(|_| CaptureError::VpiTooLarge {
        vpi: vc.vpi.get(),
        link,
    })
}

/// The 4-byte ERF view of a VC: a UNI user-data header, GFC, PTI and CLP zero.
fn uni_header(vc: VcId, link: LinkType) -> Result<[u8; 4], CaptureError> {
    uni_vpi(vc, link)?;
    let word = CellHeader::data(vc, false)
        .to_word(HeaderFormat::Uni)
        .expect("an 8-bit VPI and GFC 0 fit the UNI header");
    Ok(word.to_be_bytes())
}

/// The VC of a 4-byte UNI header.
fn vc_of(header: [u8; 4]) -> VcId {
    let w = u32::from_be_bytes(header);
    let vpi = Vpi::uni((w >> 20) & 0xFF).expect("an 8-bit VPI fits the UNI");
    VcId::new(vpi, Vci::from_u16((w >> 4) as u16))
}

impl Record {
    /// Decode the bytes of one pcap record of link type `link`, captured at `time` by the
    /// pcap record header. Never fails: what cannot be decoded becomes
    /// [`RecordKind::Other`].
    pub fn decode(link: LinkType, time: Instant, data: Vec<u8>) -> Record {
        let other = |time, bytes| Record {
            time,
            kind: RecordKind::Other {
                linktype: link,
                bytes,
            },
        };
        match link {
            LinkType::Erf => {
                let Ok((header, body)) = erf::split(&data) else {
                    return other(time, data);
                };
                let time = erf::time(header.ts);
                match header.record_type() {
                    record_type::AAL5 if body.len() >= erf::ATM_HEADER_LEN => {
                        let (h, pdu) = body.split_at(erf::ATM_HEADER_LEN);
                        Record {
                            time,
                            kind: RecordKind::Aal5Pdu {
                                vc: vc_of([h[0], h[1], h[2], h[3]]),
                                pdu: pdu.to_vec(),
                            },
                        }
                    }
                    record_type::ATM if body.len() >= erf::CELL_BODY_LEN => Record {
                        time,
                        kind: RecordKind::Cell(CellRecord {
                            header: [body[0], body[1], body[2], body[3]],
                            hec: None,
                            payload: body[erf::ATM_HEADER_LEN..erf::CELL_BODY_LEN]
                                .try_into()
                                .expect("48-byte range"),
                        }),
                    },
                    _ => other(time, data),
                }
            }
            LinkType::SunAtm if data.len() >= sunatm::HEADER_LEN => {
                let flags = data[0];
                Record {
                    time,
                    kind: RecordKind::SunAtm {
                        vc: VcId::new(
                            Vpi::uni(u32::from(data[1])).expect("an 8-bit VPI fits the UNI"),
                            Vci::from_u16(u16::from_be_bytes([data[2], data[3]])),
                        ),
                        kind: SunAtmType::from_bits(flags),
                        direction: if flags & sunatm::DIRECTION_BIT != 0 {
                            Direction::DteToDce
                        } else {
                            Direction::DceToDte
                        },
                        sdu: data[sunatm::HEADER_LEN..].to_vec(),
                    },
                }
            }
            LinkType::ExportedPdu => match exported_pdu::decode(&data) {
                Some((name, cell)) if name == exported_pdu::ATM_OAM_CELL.as_bytes() => {
                    match <&[u8; CELL_LEN]>::try_from(cell) {
                        Ok(cell) => Record {
                            time,
                            kind: RecordKind::Cell(CellRecord::from_cell(cell)),
                        },
                        Err(_) => other(time, data),
                    }
                }
                _ => other(time, data),
            },
            _ => other(time, data),
        }
    }

    /// Append this record's bytes, as a `link` file stores them, to `out`.
    pub fn encode(&self, link: LinkType, out: &mut Vec<u8>) -> Result<(), CaptureError> {
        let wrong = || CaptureError::WrongLinkType {
            kind: self.kind.name(),
            link,
        };
        match (&self.kind, link) {
            (RecordKind::Aal5Pdu { vc, pdu }, LinkType::Erf) => {
                let header = uni_header(*vc, link)?;
                let body = erf::ATM_HEADER_LEN + pdu.len();
                let erf =
                    ErfHeader::for_body(record_type::AAL5, self.time, body, "ERF AAL5 record")?;
                out.extend_from_slice(&erf.to_bytes());
                out.extend_from_slice(&header);
                out.extend_from_slice(pdu);
            }
            (RecordKind::Cell(cell), LinkType::Erf) => {
                let erf = ErfHeader::for_body(
                    record_type::ATM,
                    self.time,
                    erf::CELL_BODY_LEN,
                    "ERF cell record",
                )?;
                out.extend_from_slice(&erf.to_bytes());
                out.extend_from_slice(&cell.header);
                out.extend_from_slice(&cell.payload);
            }
            (RecordKind::Cell(cell), LinkType::ExportedPdu) => {
                exported_pdu::encode(exported_pdu::ATM_OAM_CELL, &cell.to_cell(), out);
            }
            (
                RecordKind::SunAtm {
                    vc,
                    kind,
                    direction,
                    sdu,
                },
                LinkType::SunAtm,
            ) => {
                let vpi = uni_vpi(*vc, link)?;
                out.push(sunatm::flags(*kind, *direction));
                out.push(vpi);
                out.extend_from_slice(&vc.vci.get().to_be_bytes());
                out.extend_from_slice(sdu);
            }
            (RecordKind::Other { linktype, bytes }, link) if *linktype == link => {
                out.extend_from_slice(bytes);
            }
            _ => return Err(wrong()),
        }
        Ok(())
    }
}

/// Read until `buf` is full or the input ends; the number of bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Writes records to a pcap file of one link type.
///
/// ```
/// use natm_capture::{LinkType, Reader, Record, RecordKind, Writer};
/// use natm_core::{Instant, VcId};
///
/// let mut pdu = Vec::new();
/// natm_wire::aal5::encode_pdu(b"hello", 0, 0, &mut pdu).unwrap();
/// let record = Record {
///     time: Instant::from_nanos(1_700_000_000_000_000_001),
///     kind: RecordKind::Aal5Pdu { vc: VcId::uni(1, 100).unwrap(), pdu },
/// };
/// let mut w = Writer::new(Vec::new(), LinkType::Erf).unwrap();
/// w.write(&record).unwrap();
/// let file = w.into_inner().unwrap();
/// let back: Vec<Record> = Reader::new(&file[..]).unwrap().map(Result::unwrap).collect();
/// assert_eq!(back, vec![record]);
/// ```
#[derive(Debug)]
pub struct Writer<W: Write> {
    inner: W,
    header: FileHeader,
    scratch: Vec<u8>,
    offset: u64,
}

impl<W: Write> Writer<W> {
    /// A writer of a classic microsecond pcap file (magic `a1b2c3d4`, version 2.4); writes
    /// the file header at once.
    pub fn new(inner: W, link: LinkType) -> Result<Writer<W>, CaptureError> {
        Writer::with_resolution(inner, link, TsResolution::Micros)
    }

    /// A writer with the given timestamp resolution (nanoseconds: magic `a1b23c4d`).
    pub fn with_resolution(
        inner: W,
        link: LinkType,
        resolution: TsResolution,
    ) -> Result<Writer<W>, CaptureError> {
        let header = FileHeader::new(link, resolution);
        let mut w = Writer {
            inner,
            header,
            scratch: Vec::new(),
            offset: 0,
        };
        w.put(&header.to_bytes())?;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), CaptureError> {
        self.inner
            .write_all(bytes)
            .map_err(|source| CaptureError::Io {
                offset: self.offset,
                source,
            })?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// The file header written.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// Bytes written so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Write one record. Fails, writing nothing, if the record has no encoding in this
    /// file's link type or does not fit it.
    pub fn write(&mut self, record: &Record) -> Result<(), CaptureError> {
        let mut buf = core::mem::take(&mut self.scratch);
        buf.clear();
        let result = self.encode_and_put(record, &mut buf);
        self.scratch = buf;
        result
    }

    fn encode_and_put(&mut self, record: &Record, buf: &mut Vec<u8>) -> Result<(), CaptureError> {
        record.encode(self.header.link_type, buf)?;
        let snaplen = self.header.snaplen as usize;
        if buf.len() > snaplen {
            return Err(CaptureError::TooLong {
                what: "record",
                len: buf.len(),
                max: snaplen,
            });
        }
        let rh = self.header.record_header(record.time, buf.len() as u32)?;
        self.put(&rh)?;
        self.put(buf)
    }

    /// Flush the underlying writer.
    pub fn flush(&mut self) -> Result<(), CaptureError> {
        self.inner.flush().map_err(|source| CaptureError::Io {
            offset: self.offset,
            source,
        })
    }

    /// Flush and return the underlying writer.
    pub fn into_inner(mut self) -> Result<W, CaptureError> {
        self.flush()?;
        Ok(self.inner)
    }
}

/// Reads the records of a pcap file, in order, as an iterator of
/// `Result<Record, CaptureError>`.
///
/// Accepts both byte orders and both timestamp resolutions, and any link type (records of
/// link types natm does not decode come out as [`RecordKind::Other`]). After an error the
/// iterator ends. Wrap a file in a `BufReader`: the reader makes small reads.
#[derive(Debug)]
pub struct Reader<R: Read> {
    inner: R,
    header: FileHeader,
    offset: u64,
    done: bool,
}

impl<R: Read> Reader<R> {
    /// Read and check the file header.
    pub fn new(mut inner: R) -> Result<Reader<R>, CaptureError> {
        let mut b = [0u8; FILE_HEADER_LEN];
        let got = read_full(&mut inner, &mut b)
            .map_err(|source| CaptureError::Io { offset: 0, source })?;
        if got < FILE_HEADER_LEN {
            return Err(CaptureError::TruncatedFileHeader { got });
        }
        let header = FileHeader::parse(&b)?;
        Ok(Reader {
            inner,
            header,
            offset: FILE_HEADER_LEN as u64,
            done: false,
        })
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// The file's link type.
    pub fn link_type(&self) -> LinkType {
        self.header.link_type
    }

    /// Bytes consumed so far: the offset of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn next_record(&mut self) -> Result<Option<Record>, CaptureError> {
        let at = self.offset;
        let io_err = |source| CaptureError::Io { offset: at, source };
        let mut rh = [0u8; RECORD_HEADER_LEN];
        let got = read_full(&mut self.inner, &mut rh).map_err(io_err)?;
        match got {
            0 => return Ok(None),
            RECORD_HEADER_LEN => {}
            got => return Err(CaptureError::TruncatedRecordHeader { offset: at, got }),
        }
        let h = self.header.parse_record_header(&rh);
        let limit = self.header.record_limit();
        if h.incl_len > limit {
            return Err(CaptureError::RecordTooLong {
                offset: at,
                len: h.incl_len,
                limit,
                snaplen: self.header.snaplen,
            });
        }
        // Read through `take` so that a length the file does not back is never allocated.
        let mut data = Vec::new();
        let got = (&mut self.inner)
            .take(u64::from(h.incl_len))
            .read_to_end(&mut data)
            .map_err(io_err)?;
        if got < h.incl_len as usize {
            return Err(CaptureError::TruncatedRecord {
                offset: at,
                needed: h.incl_len,
                got,
            });
        }
        self.offset += (RECORD_HEADER_LEN + got) as u64;
        Ok(Some(Record::decode(self.header.link_type, h.time, data)))
    }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Record, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.next_record();
        if !matches!(r, Ok(Some(_))) {
            self.done = true;
        }
        r.transpose()
    }
}

impl<R: Read> core::iter::FusedIterator for Reader<R> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::ByteOrder;
    use natm_wire::oam::{Loopback, OamFlow, OamRepr};
    use proptest::prelude::*;

    fn vc(vpi: u32, vci: u32) -> VcId {
        VcId::uni(vpi, vci).unwrap()
    }

    fn hello_pdu() -> Vec<u8> {
        let mut pdu = Vec::new();
        natm_wire::aal5::encode_pdu(b"hello", 0, 0, &mut pdu).unwrap();
        pdu
    }

    fn write_all(link: LinkType, records: &[Record]) -> Vec<u8> {
        let mut w = Writer::new(Vec::new(), link).unwrap();
        for r in records {
            w.write(r).unwrap();
        }
        w.into_inner().unwrap()
    }

    fn read_all(file: &[u8]) -> Result<Vec<Record>, CaptureError> {
        Reader::new(file)?.collect()
    }

    /// The "hello" PDU of atm-facts.md §2.3 as an ERF AAL5 record on 1/100 at t = 1000 s.
    const HELLO_ERF: [u8; 16 + 16 + 52] = {
        let mut b = [0u8; 84];
        // pcap record header: 1000 s, 0 µs, 68 bytes twice (LE)
        b[0] = 0xe8;
        b[1] = 0x03;
        b[8] = 68;
        b[12] = 68;
        // ERF header
        b[16 + 4] = 0xe8;
        b[16 + 5] = 0x03;
        b[24] = 4;
        b[25] = 4;
        b[27] = 68;
        b[31] = 52;
        // ATM header of 1/100
        b[33] = 0x10;
        b[34] = 0x06;
        b[35] = 0x40;
        // "hello", pad, trailer 00 00 00 05 7f 4c d5 de
        b[36] = b'h';
        b[37] = b'e';
        b[38] = b'l';
        b[39] = b'l';
        b[40] = b'o';
        b[79] = 5;
        b[80] = 0x7f;
        b[81] = 0x4c;
        b[82] = 0xd5;
        b[83] = 0xde;
        b
    };

    #[test]
    fn construct_erf_aal5() {
        let rec = Record {
            time: Instant::from_nanos(1_000_000_000_000),
            kind: RecordKind::Aal5Pdu {
                vc: vc(1, 100),
                pdu: hello_pdu(),
            },
        };
        let file = write_all(LinkType::Erf, std::slice::from_ref(&rec));
        assert_eq!(
            &file[..24],
            &FileHeader::new(LinkType::Erf, TsResolution::Micros).to_bytes()
        );
        assert_eq!(&file[24..], &HELLO_ERF[..]);
        assert_eq!(read_all(&file).unwrap(), vec![rec]);
    }

    #[test]
    fn every_kind_round_trips_in_its_link_type() {
        let t = Instant::from_nanos(1_700_000_000_123_456_789);
        let oam = OamRepr::Loopback(Loopback::request(7)).to_cell(OamFlow::F5EndToEnd, vc(1, 100));
        let erf_cell = CellRecord {
            hec: None,
            ..CellRecord::from_cell(&oam)
        };
        let erf = [
            Record {
                time: t,
                kind: RecordKind::Aal5Pdu {
                    vc: vc(255, 65535),
                    pdu: hello_pdu(),
                },
            },
            Record {
                time: t,
                kind: RecordKind::Cell(erf_cell),
            },
        ];
        assert_eq!(read_all(&write_all(LinkType::Erf, &erf)).unwrap(), erf);

        let micros = Instant::from_nanos(1_700_000_000_123_456_000);
        let exported = [Record {
            time: micros,
            kind: RecordKind::Cell(CellRecord::from_cell(&oam)),
        }];
        assert_eq!(
            read_all(&write_all(LinkType::ExportedPdu, &exported)).unwrap(),
            exported
        );
        // A cell without HEC gets the right one in a format that keeps it.
        let back = read_all(&write_all(
            LinkType::ExportedPdu,
            &[Record {
                time: micros,
                kind: RecordKind::Cell(erf_cell),
            }],
        ))
        .unwrap();
        assert_eq!(back, exported);

        let sun = [Record {
            time: micros,
            kind: RecordKind::SunAtm {
                vc: vc(0, 5),
                kind: SunAtmType::Qsaal,
                direction: Direction::DteToDce,
                sdu: vec![1, 2, 3],
            },
        }];
        let file = write_all(LinkType::SunAtm, &sun);
        assert_eq!(&file[40..], &[0x86, 0, 0, 5, 1, 2, 3]);
        assert_eq!(read_all(&file).unwrap(), sun);

        let raw = [Record {
            time: micros,
            kind: RecordKind::Other {
                linktype: LinkType::Other(1),
                bytes: vec![0xff; 60],
            },
        }];
        assert_eq!(read_all(&write_all(LinkType::Other(1), &raw)).unwrap(), raw);
    }

    #[test]
    fn refuses_what_a_link_type_cannot_hold() {
        let mut w = Writer::new(Vec::new(), LinkType::SunAtm).unwrap();
        let aal5 = Record {
            time: Instant::ZERO,
            kind: RecordKind::Aal5Pdu {
                vc: vc(0, 32),
                pdu: hello_pdu(),
            },
        };
        assert!(matches!(
            w.write(&aal5),
            Err(CaptureError::WrongLinkType { kind: "aal5", .. })
        ));
        assert_eq!(w.offset(), 24, "nothing written");
        let mut w = Writer::new(Vec::new(), LinkType::Erf).unwrap();
        let big = Record {
            time: Instant::ZERO,
            kind: RecordKind::Aal5Pdu {
                vc: vc(0, 32),
                pdu: vec![0; erf::MAX_AAL5_PDU + 48],
            },
        };
        assert!(matches!(
            w.write(&big),
            Err(CaptureError::TooLong { max: 65_519, .. })
        ));
        let nni = Record {
            time: Instant::ZERO,
            kind: RecordKind::Aal5Pdu {
                vc: VcId::new(Vpi::nni(300).unwrap(), Vci::from_u16(40)),
                pdu: hello_pdu(),
            },
        };
        assert!(matches!(
            w.write(&nni),
            Err(CaptureError::VpiTooLarge { vpi: 300, .. })
        ));
        let fits = Record {
            time: Instant::ZERO,
            kind: RecordKind::Aal5Pdu {
                vc: vc(0, 32),
                pdu: vec![0; erf::MAX_AAL5_PDU],
            },
        };
        w.write(&fits).unwrap();
    }

    #[test]
    fn reads_big_endian_and_nanosecond_files() {
        let rec = Record {
            time: Instant::from_nanos(5_000_000_007),
            kind: RecordKind::SunAtm {
                vc: vc(1, 100),
                kind: SunAtmType::Llc,
                direction: Direction::DceToDte,
                sdu: vec![0xaa, 0xaa, 0x03],
            },
        };
        let mut w =
            Writer::with_resolution(Vec::new(), LinkType::SunAtm, TsResolution::Nanos).unwrap();
        w.write(&rec).unwrap();
        let le = w.into_inner().unwrap();
        assert_eq!(read_all(&le).unwrap(), vec![rec.clone()]);
        // The same file with every header field byte-swapped.
        let mut be = le.clone();
        for range in [0..4, 16..20, 20..24, 24..28, 28..32, 32..36, 36..40] {
            be[range].reverse();
        }
        for range in [4..6, 6..8] {
            be[range].reverse();
        }
        let r = Reader::new(&be[..]).unwrap();
        assert_eq!(r.header().byte_order, ByteOrder::Big);
        assert_eq!(r.collect::<Result<Vec<_>, _>>().unwrap(), vec![rec]);
    }

    #[test]
    fn malformed_files() {
        let file = write_all(
            LinkType::Erf,
            &[Record {
                time: Instant::ZERO,
                kind: RecordKind::Aal5Pdu {
                    vc: vc(1, 100),
                    pdu: hello_pdu(),
                },
            }],
        );
        assert!(matches!(
            Reader::new(&file[..10]),
            Err(CaptureError::TruncatedFileHeader { got: 10 })
        ));
        let mut bad = file.clone();
        bad[0] = b'X';
        assert!(matches!(
            Reader::new(&bad[..]),
            Err(CaptureError::BadMagic { .. })
        ));
        // A truncated record header, then a truncated record: the offset is the record's.
        let e = read_all(&file[..30]).unwrap_err();
        assert!(matches!(
            e,
            CaptureError::TruncatedRecordHeader { offset: 24, got: 6 }
        ));
        assert_eq!(
            e.to_string(),
            "truncated record header at byte 24: 6 of 16 bytes"
        );
        let e = read_all(&file[..file.len() - 1]).unwrap_err();
        assert!(matches!(
            e,
            CaptureError::TruncatedRecord {
                offset: 24,
                needed: 68,
                got: 67
            }
        ));
        // An absurd length is refused before anything is allocated.
        let mut huge = file.clone();
        huge[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            read_all(&huge),
            Err(CaptureError::RecordTooLong {
                offset: 24,
                len: u32::MAX,
                ..
            })
        ));
        // Records before a broken tail are still delivered.
        let mut two = file.clone();
        two.extend_from_slice(&file[24..40]);
        let items: Vec<_> = Reader::new(&two[..]).unwrap().collect();
        assert_eq!(items.len(), 2);
        assert!(items[0].is_ok());
        assert!(matches!(
            items[1],
            Err(CaptureError::TruncatedRecord { offset: 108, .. })
        ));
    }

    #[test]
    fn undecodable_contents_are_kept_raw() {
        let t = Instant::from_nanos(1_000);
        for (link, bytes) in [
            (LinkType::Erf, vec![0u8; 10]), // shorter than an ERF header
            (LinkType::Erf, {
                let mut r = ErfHeader::for_body(record_type::PAD, t, 4, "x")
                    .unwrap()
                    .to_bytes()
                    .to_vec();
                r.extend_from_slice(&[0; 4]);
                r
            }),
            (LinkType::Erf, {
                let mut r = ErfHeader::for_body(record_type::ATM, t, 51, "x")
                    .unwrap()
                    .to_bytes()
                    .to_vec();
                r.extend_from_slice(&[0; 51]); // one byte short of a cell
                r
            }),
            (LinkType::SunAtm, vec![6, 0, 0]),
            (
                LinkType::ExportedPdu,
                vec![0, 12, 0, 4, b'l', b'l', b'c', 0, 0, 0, 0, 0, 0xaa],
            ),
            (LinkType::Other(1), vec![1, 2, 3]),
        ] {
            let r = Record::decode(link, t, bytes.clone());
            assert_eq!(
                r.kind,
                RecordKind::Other {
                    linktype: link,
                    bytes
                }
            );
        }
    }

    fn arb_vc() -> impl Strategy<Value = VcId> {
        (0u32..=255, any::<u16>()).prop_map(|(p, c)| vc(p, u32::from(c)))
    }

    fn arb_time() -> impl Strategy<Value = Instant> {
        (0u64..(1u64 << 32) * 1_000_000_000).prop_map(Instant::from_nanos)
    }

    proptest! {
        #[test]
        fn erf_records_round_trip(
            time in arb_time(),
            recs in proptest::collection::vec(
                prop_oneof![
                    (arb_vc(), proptest::collection::vec(any::<u8>(), 0..2000))
                        .prop_map(|(vc, pdu)| RecordKind::Aal5Pdu { vc, pdu }),
                    (any::<[u8; 4]>(), any::<[u8; 48]>())
                        .prop_map(|(header, payload)| RecordKind::Cell(CellRecord { header, hec: None, payload })),
                ],
                0..8,
            ),
        ) {
            let records: Vec<Record> = recs.into_iter().map(|kind| Record { time, kind }).collect();
            prop_assert_eq!(read_all(&write_all(LinkType::Erf, &records)).unwrap(), records);
        }

        #[test]
        fn sunatm_and_exported_cells_round_trip(
            secs in 0u64..(1u64 << 32),
            micros in 0u64..1_000_000,
            vc in arb_vc(),
            kind in 0u8..16,
            dte in any::<bool>(),
            sdu in proptest::collection::vec(any::<u8>(), 0..3000),
            cell in any::<[u8; 53]>(),
        ) {
            let time = Instant::from_nanos(secs * 1_000_000_000 + micros * 1_000);
            let direction = if dte { Direction::DteToDce } else { Direction::DceToDte };
            let sun = vec![Record { time, kind: RecordKind::SunAtm { vc, kind: SunAtmType::from_bits(kind), direction, sdu } }];
            prop_assert_eq!(read_all(&write_all(LinkType::SunAtm, &sun)).unwrap(), sun);
            let exp = vec![Record { time, kind: RecordKind::Cell(CellRecord::from_cell(&cell)) }];
            prop_assert_eq!(read_all(&write_all(LinkType::ExportedPdu, &exp)).unwrap(), exp);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            if let Ok(r) = Reader::new(&bytes[..]) {
                for item in r {
                    let _ = item.map(|rec| crate::summary::summarize(&rec));
                }
            }
        }

        #[test]
        fn arbitrary_records_after_a_good_header_never_panic(
            link in prop_oneof![Just(LinkType::Erf), Just(LinkType::SunAtm), Just(LinkType::ExportedPdu)],
            body in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut file = FileHeader::new(link, TsResolution::Micros).to_bytes().to_vec();
            file.extend_from_slice(&(1000u32).to_le_bytes());
            file.extend_from_slice(&0u32.to_le_bytes());
            file.extend_from_slice(&(body.len() as u32).to_le_bytes());
            file.extend_from_slice(&(body.len() as u32).to_le_bytes());
            file.extend_from_slice(&body);
            let recs = read_all(&file).unwrap();
            prop_assert_eq!(recs.len(), 1);
            let _ = crate::summary::summarize(&recs[0]);
        }
    }
}
