//! serde for the types that have a text form (`serde` feature): each is written as its
//! `Display` text and read back with its `FromStr`, so a configuration file or a protocol
//! message carries the same text a user types (`0.100`, `cbr:pcr=1000`), and a value that
//! does not parse is refused while reading, with the parser's reason.

use alloc::format;
use alloc::string::{String, ToString};
use core::fmt::Display;
use core::str::FromStr;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::addr::{Aesa, AesaPrefix, Esi};
use crate::{Qos, VcId};

fn write<S: Serializer>(v: &impl Display, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
}

fn read<'de, D, T>(d: D, what: &str) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: Display,
{
    let text = String::deserialize(d)?;
    text.parse()
        .map_err(|e| D::Error::custom(format!("bad {what} {text:?}: {e}")))
}

impl Serialize for VcId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write(self, s)
    }
}

impl<'de> Deserialize<'de> for VcId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<VcId, D::Error> {
        read(d, "VC")
    }
}

impl Serialize for Qos {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write(self, s)
    }
}

impl<'de> Deserialize<'de> for Qos {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Qos, D::Error> {
        read(d, "QoS")
    }
}

impl Serialize for Aesa {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write(self, s)
    }
}

impl<'de> Deserialize<'de> for Aesa {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Aesa, D::Error> {
        read(d, "ATM address")
    }
}

impl Serialize for AesaPrefix {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write(self, s)
    }
}

impl<'de> Deserialize<'de> for AesaPrefix {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AesaPrefix, D::Error> {
        read(d, "address prefix")
    }
}

impl Serialize for Esi {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write(self, s)
    }
}

impl<'de> Deserialize<'de> for Esi {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Esi, D::Error> {
        read(d, "ESI")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_bad_text_is_refused_naming_it() {
        let vc: VcId = "0.100".parse().expect("a VC");
        let json = serde_json::to_string(&vc).expect("serialises");
        assert_eq!(json, "\"0.100\"");
        assert_eq!(serde_json::from_str::<VcId>(&json).expect("reads"), vc);
        let qos: Qos = "cbr:pcr=1000".parse().expect("a QoS");
        let json = serde_json::to_string(&qos).expect("serialises");
        assert_eq!(serde_json::from_str::<Qos>(&json).expect("reads"), qos);
        let addr: Aesa = "47.0005.80ffe1000000f21a3599.0020481a3599.00"
            .parse()
            .expect("an AESA");
        let json = serde_json::to_string(&addr).expect("serialises");
        assert_eq!(serde_json::from_str::<Aesa>(&json).expect("reads"), addr);
        let e = serde_json::from_str::<Aesa>("\"47.00\"").unwrap_err();
        assert!(e.to_string().starts_with("bad ATM address "), "{e}");
        let e = serde_json::from_str::<VcId>("\"zero.hundred\"").unwrap_err();
        assert!(
            e.to_string().starts_with("bad VC \"zero.hundred\": "),
            "{e}"
        );
        let e = serde_json::from_str::<Qos>("\"ubr,frobnicate\"").unwrap_err();
        assert!(
            e.to_string().starts_with("bad QoS \"ubr,frobnicate\": "),
            "{e}"
        );
    }
}
