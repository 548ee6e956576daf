//! `struct atmsvc_msg` (linux/atmsvc.h): the protocol between atmsigd and its "user of
//! signalling", normally the kernel.
//!
//! atmsigd 2.5.1 speaks it over a UNIX datagram socket when it is started with an explicit
//! signalling VC and a socket path (`atmsigd … 0.0.5 PATH`); the man page's "pair of named
//! pipes" is out of date. One datagram is one 252-byte message. atmsigd answers the sender of
//! the first datagram it receives (it `connect`s to that address), so the test binds its own
//! end to a path and sends first.
//!
//! The struct is the host's ABI, not a wire format: fields are native-endian and the offsets
//! below are those of LP64 Linux (x86-64, aarch64), checked with `offsetof` against the
//! installed uapi header. The messages a test uses:
//!
//! | message | from | meaning | fields |
//! |---|---|---|---|
//! | `Listen` | user | accept calls to `svc` (all-zero AESA = any) | `vcc`, `svc`, `qos` (AAL5 required) |
//! | `Connect` | user | place a call to `svc` | `vcc`, `svc`, `qos`, `pvc` (network mode: the VC to signal) |
//! | `Indicate` | atmsigd | a SETUP for a listener | `listen_vcc`, `pvc`, `svc` (calling), `local` (called), `qos` |
//! | `Accept` / `Reject` | user | answer an `Indicate` | `vcc` (new), `listen_vcc` |
//! | `Okay` / `Error` | atmsigd | a request succeeded / failed (`reply` = −errno) | `vcc` |
//! | `Close` | both | tear the call down (user) / it was torn down (atmsigd, `reply`) | `vcc` |

/// Size of `struct atmsvc_msg` on LP64 Linux.
pub const MSG_LEN: usize = 252;

const AF_ATMPVC: u16 = 8;
const AF_ATMSVC: u16 = 20;
/// `ATM_AAL5` in `struct atm_qos`.
pub const ATM_AAL5: u8 = 5;
/// `ATM_UBR` traffic class.
pub const ATM_UBR: u8 = 1;

mod field {
    pub const TYPE: usize = 0;
    pub const VCC: usize = 4;
    pub const LISTEN_VCC: usize = 12;
    pub const REPLY: usize = 20;
    pub const PVC: usize = 24;
    pub const LOCAL: usize = 36;
    pub const QOS: usize = 80;
    pub const SVC: usize = 208;
    /// In `struct sockaddr_atmpvc`.
    pub const PVC_ITF: usize = 4;
    pub const PVC_VPI: usize = 6;
    pub const PVC_VCI: usize = 8;
    /// In `struct sockaddr_atmsvc`: the private (AESA) address.
    pub const SVC_PRV: usize = 4;
    /// In `struct atm_qos`.
    pub const RXTP: usize = 40;
    pub const AAL: usize = 80;
    /// In `struct atm_trafprm`.
    pub const MAX_PCR: usize = 4;
    pub const PCR: usize = 8;
    pub const MIN_PCR: usize = 12;
    pub const MAX_SDU: usize = 20;
}

/// `enum atmsvc_msg_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsgType {
    /// `as_bind`
    Bind,
    /// `as_connect`
    Connect,
    /// `as_accept`
    Accept,
    /// `as_reject`
    Reject,
    /// `as_listen`
    Listen,
    /// `as_okay`
    Okay,
    /// `as_error`
    Error,
    /// `as_indicate`
    Indicate,
    /// `as_close`
    Close,
    /// `as_itf_notify`
    ItfNotify,
    /// `as_modify`
    Modify,
    /// `as_identify`
    Identify,
    /// `as_terminate`
    Terminate,
    /// Any other value.
    Unknown(u32),
}

impl MsgType {
    fn code(self) -> u32 {
        match self {
            MsgType::Bind => 1,
            MsgType::Connect => 2,
            MsgType::Accept => 3,
            MsgType::Reject => 4,
            MsgType::Listen => 5,
            MsgType::Okay => 6,
            MsgType::Error => 7,
            MsgType::Indicate => 8,
            MsgType::Close => 9,
            MsgType::ItfNotify => 10,
            MsgType::Modify => 11,
            MsgType::Identify => 12,
            MsgType::Terminate => 13,
            MsgType::Unknown(n) => n,
        }
    }

    fn from_code(n: u32) -> MsgType {
        match n {
            1 => MsgType::Bind,
            2 => MsgType::Connect,
            3 => MsgType::Accept,
            4 => MsgType::Reject,
            5 => MsgType::Listen,
            6 => MsgType::Okay,
            7 => MsgType::Error,
            8 => MsgType::Indicate,
            9 => MsgType::Close,
            10 => MsgType::ItfNotify,
            11 => MsgType::Modify,
            12 => MsgType::Identify,
            13 => MsgType::Terminate,
            n => MsgType::Unknown(n),
        }
    }
}

/// `struct sockaddr_atmpvc` without the family (present iff the `Option` is `Some`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pvc {
    /// Interface number.
    pub itf: i16,
    /// VPI.
    pub vpi: i16,
    /// VCI.
    pub vci: i32,
}

/// One direction of `struct atm_trafprm` (the fields a test uses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrafficParams {
    /// Traffic class (`ATM_UBR` = 1, `ATM_CBR` = 2, …; 0 = no traffic this way).
    pub class: u8,
    /// Maximum PCR in cells/s (0 = unspecified, −1 = link rate).
    pub max_pcr: i32,
    /// Desired PCR.
    pub pcr: i32,
    /// Minimum PCR.
    pub min_pcr: i32,
    /// Maximum SDU size in bytes.
    pub max_sdu: i32,
}

/// `struct atm_qos` (the fields a test uses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Qos {
    /// Transmit direction.
    pub txtp: TrafficParams,
    /// Receive direction.
    pub rxtp: TrafficParams,
    /// AAL (`ATM_AAL5` = 5).
    pub aal: u8,
}

impl Qos {
    /// UBR both ways on AAL5 with `max_sdu`, which is what atmsigd needs to listen and to call.
    pub fn ubr(max_sdu: i32) -> Qos {
        let tp = TrafficParams {
            class: ATM_UBR,
            max_sdu,
            ..TrafficParams::default()
        };
        Qos {
            txtp: tp,
            rxtp: tp,
            aal: ATM_AAL5,
        }
    }
}

/// One `struct atmsvc_msg`.
///
/// Addresses are 20-byte AESAs (`sockaddr_atmsvc.sas_addr.prv`); `Some([0; 20])` is the
/// family set with an all-zero address, which atmsigd reads as "any" in `Listen`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelMsg {
    /// Message type.
    pub kind: MsgType,
    /// The socket this message is about (an opaque kernel pointer; any nonzero tag here).
    pub vcc: u64,
    /// The listening socket, in `Indicate` and in `Accept`/`Reject`.
    pub listen_vcc: u64,
    /// `Okay`/`Close`: 0 success, < 0 −errno before the call was active, > 0 after.
    pub reply: i32,
    /// The VC (`Indicate`, `Okay` after a connect; network-mode `Connect`). Emitted with
    /// the family set; parsed as present when the family or any field is set.
    pub pvc: Option<Pvc>,
    /// Local address.
    pub local: Option<[u8; 20]>,
    /// QoS.
    pub qos: Option<Qos>,
    /// Remote address (called in `Connect`, calling in `Indicate`, own in `Listen`).
    pub svc: Option<[u8; 20]>,
}

/// Why a datagram is not an `atmsvc_msg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadLength(pub usize);

impl KernelMsg {
    /// A message of `kind` about `vcc`, every other field empty.
    pub fn new(kind: MsgType, vcc: u64) -> KernelMsg {
        KernelMsg {
            kind,
            vcc,
            listen_vcc: 0,
            reply: 0,
            pvc: None,
            local: None,
            qos: None,
            svc: None,
        }
    }

    /// The 252 bytes atmsigd reads.
    pub fn emit(&self) -> [u8; MSG_LEN] {
        let mut b = [0u8; MSG_LEN];
        put(&mut b, field::TYPE, &self.kind.code().to_ne_bytes());
        put(&mut b, field::VCC, &self.vcc.to_ne_bytes());
        put(&mut b, field::LISTEN_VCC, &self.listen_vcc.to_ne_bytes());
        put(&mut b, field::REPLY, &self.reply.to_ne_bytes());
        if let Some(p) = self.pvc {
            let at = field::PVC;
            put(&mut b, at, &AF_ATMPVC.to_ne_bytes());
            put(&mut b, at + field::PVC_ITF, &p.itf.to_ne_bytes());
            put(&mut b, at + field::PVC_VPI, &p.vpi.to_ne_bytes());
            put(&mut b, at + field::PVC_VCI, &p.vci.to_ne_bytes());
        }
        for (addr, at) in [(self.local, field::LOCAL), (self.svc, field::SVC)] {
            if let Some(a) = addr {
                put(&mut b, at, &AF_ATMSVC.to_ne_bytes());
                put(&mut b, at + field::SVC_PRV, &a);
            }
        }
        if let Some(q) = self.qos {
            for (tp, at) in [(q.txtp, field::QOS), (q.rxtp, field::QOS + field::RXTP)] {
                b[at] = tp.class;
                put(&mut b, at + field::MAX_PCR, &tp.max_pcr.to_ne_bytes());
                put(&mut b, at + field::PCR, &tp.pcr.to_ne_bytes());
                put(&mut b, at + field::MIN_PCR, &tp.min_pcr.to_ne_bytes());
                put(&mut b, at + field::MAX_SDU, &tp.max_sdu.to_ne_bytes());
            }
            b[field::QOS + field::AAL] = q.aal;
        }
        b
    }

    /// Reads one datagram from atmsigd.
    pub fn parse(b: &[u8]) -> Result<KernelMsg, BadLength> {
        if b.len() != MSG_LEN {
            return Err(BadLength(b.len()));
        }
        let u16_at = |at: usize| u16::from_ne_bytes([b[at], b[at + 1]]);
        let i16_at = |at: usize| i16::from_ne_bytes([b[at], b[at + 1]]);
        let i32_at = |at: usize| i32::from_ne_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |at: usize| u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
        let addr = |at: usize| {
            (u16_at(at) == AF_ATMSVC).then(|| {
                let mut a = [0u8; 20];
                a.copy_from_slice(&b[at + field::SVC_PRV..at + field::SVC_PRV + 20]);
                a
            })
        };
        let tp = |at: usize| TrafficParams {
            class: b[at],
            max_pcr: i32_at(at + field::MAX_PCR),
            pcr: i32_at(at + field::PCR),
            min_pcr: i32_at(at + field::MIN_PCR),
            max_sdu: i32_at(at + field::MAX_SDU),
        };
        let qos = Qos {
            txtp: tp(field::QOS),
            rxtp: tp(field::QOS + field::RXTP),
            aal: b[field::QOS + field::AAL],
        };
        Ok(KernelMsg {
            kind: MsgType::from_code(u32::from_ne_bytes(
                b[field::TYPE..field::TYPE + 4].try_into().unwrap_or([0; 4]),
            )),
            vcc: u64_at(field::VCC),
            listen_vcc: u64_at(field::LISTEN_VCC),
            reply: i32_at(field::REPLY),
            // atmsigd does not always set the family of a PVC it filled in (network-mode
            // `Okay`); like its `atmpvc_addr_in_use`, any nonzero field counts.
            pvc: Some(Pvc {
                itf: i16_at(field::PVC + field::PVC_ITF),
                vpi: i16_at(field::PVC + field::PVC_VPI),
                vci: i32_at(field::PVC + field::PVC_VCI),
            })
            .filter(|p| u16_at(field::PVC) == AF_ATMPVC || *p != Pvc::default()),
            local: addr(field::LOCAL),
            qos: (qos != Qos::default()).then_some(qos),
            svc: addr(field::SVC),
        })
    }
}

fn put(b: &mut [u8], at: usize, bytes: &[u8]) {
    b[at..at + bytes.len()].copy_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let m = KernelMsg {
            kind: MsgType::Indicate,
            vcc: 0,
            listen_vcc: 0x1111,
            reply: -5,
            pvc: Some(Pvc {
                itf: 0,
                vpi: 0,
                vci: 40,
            }),
            local: Some([0x47; 20]),
            qos: Some(Qos::ubr(9188)),
            svc: Some([0; 20]),
        };
        assert_eq!(KernelMsg::parse(&m.emit()), Ok(m));
        assert_eq!(KernelMsg::parse(&[0; 10]), Err(BadLength(10)));
    }

    /// The layout atmsigd 2.5.1 sent in a real `as_indicate` (x86-64).
    #[test]
    #[cfg(target_endian = "little")]
    fn offsets_of_a_recorded_indicate() {
        let mut b = [0u8; MSG_LEN];
        b[0] = 8; // as_indicate
        b[12..14].copy_from_slice(&[0x11, 0x11]); // listen_vcc
        b[24] = 8; // AF_ATMPVC
        b[32] = 40; // vci
        b[36] = 20; // local: AF_ATMSVC
        b[40] = 0x47;
        b[80] = 1; // txtp UBR
        b[84..88].copy_from_slice(&353_207i32.to_le_bytes());
        b[100..104].copy_from_slice(&9188i32.to_le_bytes());
        b[160] = 5; // AAL5
        let m = KernelMsg::parse(&b).expect("252 bytes");
        assert_eq!(m.kind, MsgType::Indicate);
        assert_eq!(m.listen_vcc, 0x1111);
        assert_eq!(
            m.pvc,
            Some(Pvc {
                itf: 0,
                vpi: 0,
                vci: 40
            })
        );
        assert_eq!(m.local.map(|a| a[0]), Some(0x47));
        let q = m.qos.expect("qos");
        assert_eq!(
            (q.txtp.class, q.txtp.max_pcr, q.txtp.max_sdu, q.aal),
            (1, 353_207, 9188, 5)
        );
        assert_eq!(m.svc, None);
    }
}
