//! Lanes: extra ring pairs on a shared-memory port, each carrying a fixed set of VCs
//! straight between one application and the switch (issue 5's user-level data path, as
//! U-Net gives an endpoint its own queues on the network interface).
//!
//! ```text
//!  application ══ lane (shm rings) ══════════════╗
//!  hostd ══ main link (shm rings) ═══════════════╬══ switch port
//!        └─ lane request on the port's socket ───╜   (demultiplexed by VPI/VCI)
//! ```
//!
//! hostd owns the host's port. When an application opens a VC on the lane path, hostd
//! makes a ring pair with [`ShmLink::create_detached`], connects to the port's Unix socket
//! once more and sends a [`LaneRequest`] naming the VCs the lane may carry with side B's
//! descriptors; the switch answers with [`send_reply`] and from then on takes the lane's
//! cells as cells received on the port (only on those VCs: a cell on any other is
//! refused and counted), and sends the port's user-data cells of those VCs into the lane
//! instead of the main link. OAM and resource-management cells (PTI 4–7) still go to the
//! main link: hostd stays the VC's OAM end point. hostd hands side A to the application.
//!
//! The lane lives as long as hostd keeps the request's socket open: hostd closes it when
//! the application closes the VC or dies, and the switch drops the lane when it sees the
//! socket close. A switch that restarts gets the same request again on the new socket
//! (hostd keeps side B's descriptors), so the application's mapping stays valid.
//!
//! **Splicing.** When both ends of a point-to-point cross-connect would be lanes, the switch
//! only copies cells from one ring pair to the other. So it may *splice* them instead: when
//! the second lane's request says it may be spliced, the switch stops serving the first
//! lane's side B (after pushing what it held for it) and hands that side, with the VC the
//! region's cells carry (the *label*, the first lane's VC), to the second requester; the
//! two applications then share one ring pair and the switch is off their data path
//! (as U-Net's endpoints, with no one in the middle of the data path). The
//! first application never knows: its ring's peer changed hands between two cells, in
//! order. The switch keeps the region and takes a side back when its holder lets it go:
//! hostd sets that application's release bit in the region's splice word
//! ([`crate::shm::SpliceWord`]) when the application closes the VC or dies, before it
//! closes the lane's socket. A socket that closes without the bit is a hostd that lost its
//! link: its application keeps the side, and the hostd's next request for the same region
//! rejoins. The switch serves a released side B as the first lane again, a released side
//! A as the second port's lane (relabelling the VC), and hands the side it serves to the
//! next may-splice request for the other end. The word's `HELD_B` says while side B is not
//! the switch's, so a restarted switch never serves it; it learns the splice from the
//! creator's hostd's request. Switched off the data path, the switch cannot count, police,
//! shape or capture a spliced VC: it splices only unrated ports without policing or
//! capture (natm-switchd's `fabric` splice module).
//!
//! Wire format (all little-endian), one `sendmsg` each way:
//!
//! * request: `b"NATMLAN\x03"`, VC count (u16, 1..=[`MAX_LANE_VCS`]), then per VC its
//!   VPI (u16) and VCI (u16), then the lane's weight (u32, at least 1: its share of the
//!   port's input line beside the host's other lanes and its main link, as the host's
//!   transmit round weighs its channels; hostd says the main link's weight in the link's
//!   region, [`crate::endpoint::EndpointLink::set_line_weight`]), then flags (u8: bit 0,
//!   the lane may be spliced; the others 0); side B's region, wait and kick descriptors
//!   (SCM_RIGHTS). Versions 2 (`\x02`, no flags) and 1 (`\x01`, no weight either: weight
//!   1) are still read, never spliced.
//! * reply: `b"NATMLAR\x01"`, status (u8: 0 taken, 1 refused, 2 spliced), text length
//!   (u16), text: for a refusal its reason (UTF-8); for a splice 5 bytes, the side handed
//!   over (u8: 0 A, 1 B) and the label's VPI (u16) and VCI (u16), with that side's region,
//!   wait and kick descriptors (SCM_RIGHTS).
//!
//! Who may ask: whoever can connect to the port's socket, which is the host's (mode 0600
//! under the lab's directory). The switch checks the request's shape, that the
//! descriptors are a valid ring region and eventfds, that the port has a main link, and
//! that no other lane of the port has any of the VCs.

use std::io;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use rustix::net::{RecvFlags, SendFlags};

use crate::shm::{ShmError, ShmHandover, ShmLink, Side};

/// The most VCs one lane carries.
pub const MAX_LANE_VCS: usize = 64;
/// Cells per ring of a lane.
pub const LANE_RING_CELLS: u32 = 4096;

const REQUEST_MAGIC: [u8; 8] = *b"NATMLAN\x03";
/// A request without flags (natm before lanes were spliced).
const REQUEST_MAGIC_V2: [u8; 8] = *b"NATMLAN\x02";
/// A request without a weight (natm before lanes were weighted).
const REQUEST_MAGIC_V1: [u8; 8] = *b"NATMLAN\x01";
/// Request flag: the lane may be spliced.
const MAY_SPLICE: u8 = 1;
const REPLY_MAGIC: [u8; 8] = *b"NATMLAR\x01";
const MAX_REQUEST: usize = 8 + 2 + 4 * MAX_LANE_VCS + 4 + 1;
const MAX_REASON: usize = 512;

/// A VC a lane carries, as the cell header has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LaneVc {
    /// VPI.
    pub vpi: u16,
    /// VCI.
    pub vci: u16,
}

impl std::fmt::Display for LaneVc {
    /// `VPI.VCI`, as natm's status and capture replies write a VC.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.vpi, self.vci)
    }
}

/// What went wrong with a lane request or reply.
#[derive(Debug, thiserror::Error)]
pub enum LaneError {
    /// The bytes or descriptors were not a lane message.
    #[error("lane message: {0}")]
    Malformed(String),
    /// The switch refused the lane.
    #[error("the switch refused the lane: {0}")]
    Refused(String),
    /// No answer in time.
    #[error("the switch did not answer the lane request in time")]
    Timeout,
    /// The peer closed the socket.
    #[error("the socket closed")]
    Closed,
    /// The descriptors could not be sent or received.
    #[error(transparent)]
    Link(#[from] ShmError),
    /// A system call failed.
    #[error("{call}: {source}")]
    Os {
        /// The call.
        call: &'static str,
        /// What the kernel said.
        source: io::Error,
    },
}

fn os(call: &'static str) -> impl FnOnce(rustix::io::Errno) -> LaneError {
    move |e| LaneError::Os {
        call,
        source: e.into(),
    }
}

/// A lane request as the switch receives it.
#[derive(Debug)]
pub struct LaneRequest {
    /// The VCs the lane carries (no repeats).
    pub vcs: Vec<LaneVc>,
    /// Its weight on the port's input line (at least 1).
    pub weight: u32,
    /// The requester takes a spliced side instead, if the switch offers one.
    pub may_splice: bool,
    /// Side B of the lane's rings.
    pub handover: ShmHandover,
}

/// What a lane request's fields say (the descriptors travel beside them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestFields {
    /// The VCs (sorted, no repeats).
    pub vcs: Vec<LaneVc>,
    /// The weight (at least 1).
    pub weight: u32,
    /// Whether the lane may be spliced.
    pub may_splice: bool,
}

/// A side of a spliced lane's region, handed to the second requester (see the module
/// documentation).
#[derive(Debug)]
pub struct Splice {
    /// Which side.
    pub side: Side,
    /// The VC the region's cells carry (the requester's adapter sends and receives it
    /// instead of its own).
    pub label: LaneVc,
    /// That side's region, wait and kick descriptors.
    pub handover: ShmHandover,
}

/// What the switch granted.
#[derive(Debug)]
pub enum Grant {
    /// The lane, over the requester's own rings.
    Taken,
    /// A side of another lane's rings instead.
    Spliced(Splice),
}

/// A reply's fields (a spliced side's descriptors travel beside them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyFields {
    /// Taken.
    Taken,
    /// Spliced: the side and the label.
    Spliced(Side, LaneVc),
}

impl LaneRequest {
    /// Opens side B of the lane (validating region and eventfds, never panicking), waiting
    /// in eventfd mode, watching `sock` for the requester's end.
    pub fn open(self, sock: UnixStream) -> Result<(Vec<LaneVc>, ShmLink), LaneError> {
        let mut link = ShmLink::open(self.handover, crate::shm::ShmWait::EventFd)
            .map_err(|e| LaneError::Malformed(e.to_string()))?;
        link.watch_peer(sock)
            .map_err(|e| LaneError::Malformed(e.to_string()))?;
        Ok((self.vcs, link))
    }
}

/// Encodes a request's bytes; the VCs and the weight are checked as [`decode_request`]
/// checks them.
pub fn encode_request(vcs: &[LaneVc], weight: u32, may_splice: bool) -> Result<Vec<u8>, LaneError> {
    if vcs.is_empty() || vcs.len() > MAX_LANE_VCS {
        return Err(LaneError::Malformed(format!(
            "a lane carries 1..={MAX_LANE_VCS} VCs, not {}",
            vcs.len()
        )));
    }
    let mut b = Vec::with_capacity(14 + 4 * vcs.len());
    b.extend_from_slice(&REQUEST_MAGIC);
    b.extend_from_slice(&(vcs.len() as u16).to_le_bytes());
    for v in vcs {
        b.extend_from_slice(&v.vpi.to_le_bytes());
        b.extend_from_slice(&v.vci.to_le_bytes());
    }
    b.extend_from_slice(&weight.to_le_bytes());
    b.push(if may_splice { MAY_SPLICE } else { 0 });
    decode_request(&b)?;
    Ok(b)
}

/// Decodes a request's bytes: the magic, a count in 1..=[`MAX_LANE_VCS`], exactly that many
/// VCs, none repeated, none with a VCI below 32 (those are signalling's, OAM's and ILMI's),
/// a weight of at least 1 (version 1: none, weight 1) and known flags (versions 1 and 2:
/// none, never spliced).
pub fn decode_request(b: &[u8]) -> Result<RequestFields, LaneError> {
    let bad = |m: String| Err(LaneError::Malformed(m));
    let (weighted, flagged) = match b.get(..8) {
        Some(m) if m == REQUEST_MAGIC => (true, true),
        Some(m) if m == REQUEST_MAGIC_V2 => (true, false),
        Some(m) if m == REQUEST_MAGIC_V1 => (false, false),
        _ => return bad("not a natm lane request".into()),
    };
    if b.len() < 10 {
        return bad("not a natm lane request".into());
    }
    let n = usize::from(u16::from_le_bytes([b[8], b[9]]));
    if n == 0 || n > MAX_LANE_VCS {
        return bad(format!("{n} VCs: a lane carries 1..={MAX_LANE_VCS}"));
    }
    let len = 10 + 4 * n + if weighted { 4 } else { 0 } + usize::from(flagged);
    if b.len() != len {
        return bad(format!("{} bytes for {n} VCs: expected {len}", b.len()));
    }
    let (weight, flags) = match b[10 + 4 * n..] {
        [w0, w1, w2, w3, f] => (u32::from_le_bytes([w0, w1, w2, w3]), f),
        [w0, w1, w2, w3] => (u32::from_le_bytes([w0, w1, w2, w3]), 0),
        _ => (1, 0),
    };
    if flags & !MAY_SPLICE != 0 {
        return bad(format!(
            "flags {flags:#04x}: only bit 0 (may splice) is known"
        ));
    }
    if weight == 0 {
        return bad("weight 0: a lane weighs at least 1".into());
    }
    let mut vcs: Vec<LaneVc> = b[10..10 + 4 * n]
        .chunks_exact(4)
        .map(|c| LaneVc {
            vpi: u16::from_le_bytes([c[0], c[1]]),
            vci: u16::from_le_bytes([c[2], c[3]]),
        })
        .collect();
    if let Some(v) = vcs.iter().find(|v| v.vci < 32) {
        return bad(format!(
            "VC {}.{}: VCIs below 32 are reserved",
            v.vpi, v.vci
        ));
    }
    vcs.sort_unstable();
    if let Some(w) = vcs.windows(2).find(|w| w[0] == w[1]) {
        return bad(format!("VC {}.{} named twice", w[0].vpi, w[0].vci));
    }
    Ok(RequestFields {
        vcs,
        weight,
        may_splice: flags & MAY_SPLICE != 0,
    })
}

/// Sends a request for a lane carrying `vcs` at `weight` with side B's descriptors.
pub fn send_request(
    sock: &UnixStream,
    vcs: &[LaneVc],
    weight: u32,
    may_splice: bool,
    side_b: &ShmHandover,
) -> Result<(), LaneError> {
    Ok(side_b.send_tagged(sock, &encode_request(vcs, weight, may_splice)?)?)
}

/// Receives a lane request without waiting: `Ok(None)` if none is there yet. A message
/// that is not a request, or has other than three descriptors, is an error (descriptors
/// that came with it are closed).
pub fn try_recv_request(sock: &UnixStream) -> Result<Option<LaneRequest>, LaneError> {
    let mut buf = [0u8; MAX_REQUEST + 1];
    let Some(got) = ShmHandover::recv_tagged(sock, &mut buf, RecvFlags::DONTWAIT)? else {
        return Ok(None);
    };
    if got.len == 0 {
        return Err(LaneError::Closed);
    }
    let f = decode_request(&buf[..got.len])?;
    let handover = got
        .handover
        .map_err(|why| LaneError::Malformed(format!("a lane request: {why}")))?;
    Ok(Some(LaneRequest {
        vcs: f.vcs,
        weight: f.weight,
        may_splice: f.may_splice,
        handover,
    }))
}

/// Encodes a reply: taken, refused with a reason (cut to 512 bytes at a character), or
/// spliced (the descriptors go beside these bytes, [`send_splice`]).
pub fn encode_reply(result: Result<ReplyFields, &str>) -> Vec<u8> {
    let mut splice = [0u8; 5];
    let (status, text) = match result {
        Ok(ReplyFields::Taken) => (0u8, &[][..]),
        Ok(ReplyFields::Spliced(side, label)) => {
            splice[0] = u8::from(side == Side::B);
            splice[1..3].copy_from_slice(&label.vpi.to_le_bytes());
            splice[3..5].copy_from_slice(&label.vci.to_le_bytes());
            (2u8, &splice[..])
        }
        Err(t) => {
            let mut end = t.len().min(MAX_REASON);
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            (1u8, &t.as_bytes()[..end])
        }
    };
    let mut b = Vec::with_capacity(11 + text.len());
    b.extend_from_slice(&REPLY_MAGIC);
    b.push(status);
    b.extend_from_slice(&(text.len() as u16).to_le_bytes());
    b.extend_from_slice(text);
    b
}

/// Decodes a reply: taken or spliced, [`LaneError::Refused`] with the switch's reason,
/// [`LaneError::Malformed`] for anything else.
pub fn decode_reply(b: &[u8]) -> Result<ReplyFields, LaneError> {
    if b.len() < 11 || b[..8] != REPLY_MAGIC {
        return Err(LaneError::Malformed("not a natm lane reply".into()));
    }
    let len = usize::from(u16::from_le_bytes([b[9], b[10]]));
    if len > MAX_REASON || b.len() != 11 + len {
        return Err(LaneError::Malformed(format!(
            "a reply of {} bytes with a {len}-byte text",
            b.len()
        )));
    }
    let text = &b[11..];
    match (b[8], text) {
        (0, []) => Ok(ReplyFields::Taken),
        (1, _) => Err(LaneError::Refused(
            std::str::from_utf8(text)
                .map_err(|_| LaneError::Malformed("the reason is not UTF-8".into()))?
                .to_string(),
        )),
        (2, &[side, p0, p1, c0, c1]) => {
            let side = match side {
                0 => Side::A,
                1 => Side::B,
                s => return Err(LaneError::Malformed(format!("spliced side {s}"))),
            };
            let label = LaneVc {
                vpi: u16::from_le_bytes([p0, p1]),
                vci: u16::from_le_bytes([c0, c1]),
            };
            Ok(ReplyFields::Spliced(side, label))
        }
        (s, _) => Err(LaneError::Malformed(format!(
            "reply status {s} with {} bytes",
            text.len()
        ))),
    }
}

/// Sends the switch's reply, taken or refused (the socket may be non-blocking: the reply
/// is small).
pub fn send_reply(sock: &UnixStream, result: Result<(), &str>) -> Result<(), LaneError> {
    let bytes = encode_reply(result.map(|()| ReplyFields::Taken));
    let sent = rustix::net::send(sock, &bytes, SendFlags::NOSIGNAL | SendFlags::DONTWAIT)
        .map_err(os("send"))?;
    if sent != bytes.len() {
        return Err(LaneError::Malformed("sent short".into()));
    }
    Ok(())
}

/// Sends the switch's reply that hands `side` of a spliced lane's region, whose cells
/// carry `label`, with that side's descriptors.
pub fn send_splice(
    sock: &UnixStream,
    side: Side,
    label: LaneVc,
    handover: &ShmHandover,
) -> Result<(), LaneError> {
    Ok(handover.send_tagged(sock, &encode_reply(Ok(ReplyFields::Spliced(side, label))))?)
}

/// Waits at most `timeout` for the switch's reply.
pub fn recv_reply(sock: &UnixStream, timeout: Duration) -> Result<Grant, LaneError> {
    let io = |call| move |e: io::Error| LaneError::Os { call, source: e };
    sock.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))
        .map_err(io("SO_RCVTIMEO"))?;
    let mut buf = [0u8; 11 + MAX_REASON + 1];
    let got = ShmHandover::recv_tagged(sock, &mut buf, RecvFlags::empty());
    sock.set_read_timeout(None).map_err(io("SO_RCVTIMEO"))?;
    let Some(got) = got? else {
        return Err(LaneError::Timeout);
    };
    if got.len == 0 {
        return Err(LaneError::Closed);
    }
    match (decode_reply(&buf[..got.len.min(buf.len())])?, got.handover) {
        (ReplyFields::Spliced(side, label), Ok(handover)) => Ok(Grant::Spliced(Splice {
            side,
            label,
            handover,
        })),
        (ReplyFields::Spliced(..), Err(why)) => {
            Err(LaneError::Malformed(format!("a spliced reply: {why}")))
        }
        (ReplyFields::Taken, Err(_)) => Ok(Grant::Taken),
        (ReplyFields::Taken, Ok(_)) => Err(LaneError::Malformed(
            "descriptors came with a plain reply".into(),
        )),
    }
}

/// Asks the switch at the port socket `sock` (connected, blocking) for a lane carrying
/// `vcs` at `weight` over side B's rings, and waits at most `timeout` for the answer.
pub fn request(
    sock: &UnixStream,
    vcs: &[LaneVc],
    weight: u32,
    may_splice: bool,
    side_b: &ShmHandover,
    timeout: Duration,
) -> Result<Grant, LaneError> {
    send_request(sock, vcs, weight, may_splice, side_b)?;
    recv_reply(sock, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::CellLink;
    use crate::shm::ShmWait;

    fn vc(vpi: u16, vci: u16) -> LaneVc {
        LaneVc { vpi, vci }
    }

    #[test]
    fn a_lane_vc_is_written_vpi_dot_vci() {
        assert_eq!(vc(0, 100).to_string(), "0.100");
        assert_eq!(vc(4095, 65535).to_string(), "4095.65535");
    }

    #[test]
    fn requests_round_trip_and_bad_ones_are_named() {
        let vcs = vec![vc(0, 100), vc(1, 40)];
        let b = encode_request(&vcs, 23, true).unwrap();
        let mut sorted = vcs.clone();
        sorted.sort();
        let fields = |vcs: &[LaneVc], weight, may_splice| RequestFields {
            vcs: vcs.to_vec(),
            weight,
            may_splice,
        };
        assert_eq!(decode_request(&b).unwrap(), fields(&sorted, 23, true));
        let plain = encode_request(&vcs, 23, false).unwrap();
        assert_eq!(decode_request(&plain).unwrap(), fields(&sorted, 23, false));
        let err = |b: &[u8]| decode_request(b).unwrap_err().to_string();
        assert!(err(b"HELLO").contains("not a natm lane request"));
        assert!(err(&b[..b.len() - 1]).contains("expected 23"));
        assert!(err(&b[..9]).contains("not a natm lane request"));
        let mut unknown = b.clone();
        *unknown.last_mut().unwrap() = 0x81;
        assert!(err(&unknown).contains("flags 0x81"));
        assert!(
            encode_request(&vcs, 0, false)
                .unwrap_err()
                .to_string()
                .contains("weight 0")
        );
        // Version 2 has no flags: never spliced; version 1 no weight either: 1.
        let mut v2 = REQUEST_MAGIC_V2.to_vec();
        v2.extend_from_slice(&b[8..b.len() - 1]);
        assert_eq!(decode_request(&v2).unwrap(), fields(&sorted, 23, false));
        let mut v1 = REQUEST_MAGIC_V1.to_vec();
        v1.extend_from_slice(&b[8..b.len() - 5]);
        assert_eq!(decode_request(&v1).unwrap(), fields(&sorted, 1, false));
        assert!(err(&v2[..v2.len() - 4]).contains("expected 22"));
        assert!(
            encode_request(&[], 1, false)
                .unwrap_err()
                .to_string()
                .contains("1..=64")
        );
        assert!(
            encode_request(&[vc(0, 5)], 1, false)
                .unwrap_err()
                .to_string()
                .contains("reserved")
        );
        assert!(
            encode_request(&[vc(0, 40), vc(0, 40)], 1, false)
                .unwrap_err()
                .to_string()
                .contains("named twice")
        );
        let mut many = REQUEST_MAGIC.to_vec();
        many.extend_from_slice(&65u16.to_le_bytes());
        assert!(err(&many).contains("65 VCs"));
    }

    #[test]
    fn replies_round_trip() {
        assert_eq!(
            decode_reply(&encode_reply(Ok(ReplyFields::Taken))).unwrap(),
            ReplyFields::Taken
        );
        for side in [Side::A, Side::B] {
            let spliced = ReplyFields::Spliced(side, vc(3, 4000));
            assert_eq!(decode_reply(&encode_reply(Ok(spliced))).unwrap(), spliced);
        }
        let e = decode_reply(&encode_reply(Err("VC 0.100 is another lane's"))).unwrap_err();
        assert!(matches!(e, LaneError::Refused(ref t) if t == "VC 0.100 is another lane's"));
        let long = "é".repeat(400);
        let b = encode_reply(Err(&long));
        assert!(b.len() <= 11 + MAX_REASON);
        assert!(matches!(decode_reply(&b), Err(LaneError::Refused(_))));
        let mut bad = encode_reply(Ok(ReplyFields::Taken));
        bad[8] = 7;
        assert!(
            decode_reply(&bad)
                .unwrap_err()
                .to_string()
                .contains("status 7")
        );
        assert!(decode_reply(b"NATMLAR\x01\x00\x05\x00ab").is_err());
        // A splice names a side A or B in exactly five bytes.
        let mut side = encode_reply(Ok(ReplyFields::Spliced(Side::A, vc(0, 40))));
        side[11] = 2;
        assert!(
            decode_reply(&side)
                .unwrap_err()
                .to_string()
                .contains("side 2")
        );
        assert!(decode_reply(b"NATMLAR\x01\x02\x01\x00\x00").is_err());
        assert!(
            decode_reply(b"NATMLAR\x01\x00\x01\x00x").is_err(),
            "taken has no text"
        );
    }

    #[test]
    fn a_spliced_side_comes_with_its_descriptors_and_a_plain_reply_without() {
        let (_a, b) = ShmLink::create_detached(64).unwrap();
        let (host, switch) = UnixStream::pair().unwrap();
        send_splice(&switch, Side::B, vc(0, 100), &b).unwrap();
        match recv_reply(&host, Duration::from_secs(1)).unwrap() {
            Grant::Spliced(s) => {
                assert_eq!((s.side, s.label), (Side::B, vc(0, 100)));
                ShmLink::open_side(s.handover, s.side, ShmWait::EventFd).unwrap();
            }
            Grant::Taken => panic!("not spliced"),
        }
        // A splice without descriptors, or a plain reply with some, is refused.
        let bytes = encode_reply(Ok(ReplyFields::Spliced(Side::A, vc(0, 100))));
        rustix::net::send(&switch, &bytes, SendFlags::empty()).unwrap();
        let e = recv_reply(&host, Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("a spliced reply"), "{e}");
        b.send_tagged(&switch, &encode_reply(Ok(ReplyFields::Taken)))
            .unwrap();
        let e = recv_reply(&host, Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("plain reply"), "{e}");
    }

    #[test]
    fn a_lane_handed_over_a_socket_carries_cells_both_ways() {
        let (a, b) = ShmLink::create_detached(64).unwrap();
        let (host, switch) = UnixStream::pair().unwrap();
        send_request(&host, &[vc(0, 100)], 3, false, &b).unwrap();
        drop(b);
        let req = try_recv_request(&switch).unwrap().unwrap();
        assert_eq!((&req.vcs[..], req.weight), (&[vc(0, 100)][..], 3));
        let watch = switch.try_clone().unwrap();
        let (_, mut sw) = req.open(watch).unwrap();
        send_reply(&switch, Ok(())).unwrap();
        assert!(matches!(
            recv_reply(&host, Duration::from_secs(1)).unwrap(),
            Grant::Taken
        ));
        let mut app = ShmLink::open_a(a, ShmWait::EventFd).unwrap();
        let cell = [7u8; 53];
        assert_eq!(app.send_cells(&[cell]).unwrap(), 1);
        let mut got = [[0u8; 53]; 4];
        assert_eq!(sw.recv_cells(&mut got).unwrap(), 1);
        assert_eq!(got[0], cell);
        assert_eq!(sw.send_cells(&[[9u8; 53]]).unwrap(), 1);
        assert_eq!(app.recv_cells(&mut got).unwrap(), 1);
        assert_eq!(got[0], [9u8; 53]);
        // The requester's end closing is the lane's end.
        drop(host);
        drop(switch);
        std::thread::sleep(crate::shm::PEER_POLL * 2);
        assert!(sw.recv_cells(&mut got).is_err());
    }

    #[test]
    fn a_peer_that_sent_bytes_is_open_until_it_closes_and_sides_swap_their_eventfds() {
        let (host, switch) = UnixStream::pair().unwrap();
        rustix::net::send(&host, b"stray", SendFlags::empty()).unwrap();
        assert!(
            !crate::shm::peer_closed(&switch),
            "bytes read away, still open"
        );
        assert!(!crate::shm::peer_closed(&switch));
        drop(host);
        assert!(crate::shm::peer_closed(&switch));
        // Side A's handover, made from side B's, opens the other end of the same rings.
        let (_a, b) = ShmLink::create_detached(64).unwrap();
        let side_a = ShmLink::dup_side(&b, Side::A).unwrap();
        let mut app = ShmLink::open_side(side_a, Side::A, ShmWait::EventFd).unwrap();
        let mut sw = ShmLink::open_side(
            ShmLink::dup_side(&b, Side::B).unwrap(),
            Side::B,
            ShmWait::EventFd,
        )
        .unwrap();
        assert_eq!(app.send_cells(&[[3u8; 53]]).unwrap(), 1);
        let mut got = [[0u8; 53]; 2];
        assert_eq!(sw.recv_cells(&mut got).unwrap(), 1);
        assert_eq!(got[0], [3u8; 53]);
    }

    #[test]
    fn nothing_yet_is_none_and_a_stranger_is_refused() {
        let (host, switch) = UnixStream::pair().unwrap();
        assert!(try_recv_request(&switch).unwrap().is_none());
        rustix::net::send(&host, b"GET / HTTP/1.0\r\n\r\n", SendFlags::empty()).unwrap();
        let e = try_recv_request(&switch).unwrap_err();
        assert!(e.to_string().contains("not a natm lane request"), "{e}");
        drop(host);
        assert!(matches!(try_recv_request(&switch), Err(LaneError::Closed)));
        let (host, switch) = UnixStream::pair().unwrap();
        rustix::net::send(
            &host,
            &encode_request(&[vc(0, 40)], 1, false).unwrap(),
            SendFlags::empty(),
        )
        .unwrap();
        let e = try_recv_request(&switch).unwrap_err();
        assert!(e.to_string().contains("three descriptors"), "{e}");
        assert!(matches!(
            recv_reply(&host, Duration::from_millis(5)),
            Err(LaneError::Timeout)
        ));
    }
}
