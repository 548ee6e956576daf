//! [`Payload`]: a message's or a TPDU's bytes, small ones kept in place.
//!
//! A request or a reply of a few bytes is the common message of a round trip; kept in place
//! it costs no allocation when it is queued or delivered, and no free when it is dropped.
//! Longer ones live on the heap, as a `Vec<u8>` that [`Payload::into_vec`] hands over
//! without a copy.

use alloc::vec::Vec;
use core::fmt;
use core::ops::Deref;

/// Bytes kept in place: at least a one-cell TPDU's payload (28 bytes with no ack riding).
const INLINE: usize = 32;

/// Bytes of a message (or of one TPDU of it): up to 32 in place, longer ones on the heap.
/// It dereferences to `[u8]` and compares equal to byte strings with the same contents.
#[derive(Clone)]
pub struct Payload(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Vec<u8>),
}

impl Payload {
    /// A copy of `data`.
    pub fn new(data: &[u8]) -> Payload {
        match u8::try_from(data.len()) {
            Ok(len) if data.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..data.len()].copy_from_slice(data);
                Payload(Repr::Inline { len, bytes })
            }
            _ => Payload(Repr::Heap(data.to_vec())),
        }
    }

    /// The bytes as a `Vec` (moved if they are on the heap, copied if in place).
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Repr::Inline { len, bytes } => bytes[..usize::from(len)].to_vec(),
            Repr::Heap(v) => v,
        }
    }
}

impl Deref for Payload {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Repr::Heap(v) => v,
        }
    }
}

impl AsRef<[u8]> for Payload {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl From<Vec<u8>> for Payload {
    /// Kept on the heap as it is, without a copy.
    fn from(v: Vec<u8>) -> Payload {
        Payload(Repr::Heap(v))
    }
}

impl From<&[u8]> for Payload {
    fn from(data: &[u8]) -> Payload {
        Payload::new(data)
    }
}

impl From<Payload> for Vec<u8> {
    fn from(p: Payload) -> Vec<u8> {
        p.into_vec()
    }
}

impl fmt::Debug for Payload {
    /// As the byte slice (where the bytes are kept is not part of the value).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Payload) -> bool {
        **self == **other
    }
}

impl Eq for Payload {}

impl PartialEq<[u8]> for Payload {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<&[u8]> for Payload {
    fn eq(&self, other: &&[u8]) -> bool {
        **self == **other
    }
}

impl<const N: usize> PartialEq<[u8; N]> for Payload {
    fn eq(&self, other: &[u8; N]) -> bool {
        **self == other[..]
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Payload {
    fn eq(&self, other: &&[u8; N]) -> bool {
        **self == other[..]
    }
}

impl PartialEq<Vec<u8>> for Payload {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == other[..]
    }
}

impl PartialEq<Payload> for Vec<u8> {
    fn eq(&self, other: &Payload) -> bool {
        self[..] == **other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_the_same_wherever_they_are_kept() {
        for len in [0, 1, 8, INLINE - 1, INLINE, INLINE + 1, 300] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let p = Payload::new(&data);
            assert_eq!(&*p, &data[..], "{len} bytes");
            assert_eq!(p.len(), len);
            assert_eq!(p, data);
            assert_eq!(data, p);
            assert_eq!(p, Payload::from(data.clone()), "in place or not, equal");
            assert_eq!(format!("{p:?}"), format!("{data:?}"));
            assert_eq!(p.clone().into_vec(), data);
        }
        assert!(matches!(Payload::new(&[1; INLINE]).0, Repr::Inline { .. }));
        assert!(matches!(Payload::new(&[1; INLINE + 1]).0, Repr::Heap(_)));
        assert_eq!(Payload::new(b"hi"), *b"hi");
        assert_ne!(Payload::new(b"hi"), *b"ho");
    }
}
