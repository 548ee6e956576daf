//! A zero-copy view of a message (smoltcp's `wire` pattern): the header fields in place and
//! an iterator over the IEs as they come, without decoding them.
//!
//! Parse untrusted bytes with [`MessageView::new_checked`]: then no getter panics, and
//! [`MessageView::ies`] yields each IE or the error that stops the walk. Never use
//! `new_checked` on an emission buffer; [`Message::emit`](super::Message::emit) writes a
//! whole message.

use core::ops::Range;

use super::header::{CALL_REF_LEN, HEADER_LEN, PROTOCOL_DISCRIMINATOR};
use super::ie::{IE_HEADER_LEN, IeFlags, IeId};
use super::{CallRef, Header, MsgInstruction, MsgType, ParseError};

/// Byte positions of the header fields.
pub mod field {
    use core::ops::Range;

    /// Protocol discriminator.
    pub const PD: usize = 0;
    /// Call reference length.
    pub const CALL_REF_LEN: usize = 1;
    /// Flag and call reference value.
    pub const CALL_REF: Range<usize> = 2..5;
    /// Message type.
    pub const MSG_TYPE: usize = 5;
    /// Message compatibility instruction.
    pub const INSTRUCTION: usize = 6;
    /// Message length.
    pub const LENGTH: Range<usize> = 7..9;
}

/// A view of a Q.2931 message in a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageView<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> MessageView<T> {
    /// A view without checks; getters panic on a buffer shorter than the header.
    pub const fn new_unchecked(buffer: T) -> MessageView<T> {
        MessageView { buffer }
    }

    /// A view of a buffer whose header [`MessageView::check`] accepts.
    pub fn new_checked(buffer: T) -> Result<MessageView<T>, ParseError> {
        let v = MessageView::new_unchecked(buffer);
        v.check()?;
        Ok(v)
    }

    /// Checks what Q.2931 §5.6.1–5.6.3 ignores a message for: too short, protocol
    /// discriminator, call reference length, message length against the buffer. (IEs that
    /// run past the end show up in [`MessageView::ies`].)
    pub fn check(&self) -> Result<(), ParseError> {
        let b = self.buffer.as_ref();
        match (b.first(), b.get(1)) {
            (Some(&pd), _) if pd != PROTOCOL_DISCRIMINATOR => {
                return Err(ParseError::ProtocolDiscriminator(pd));
            }
            (_, Some(&len)) if len != CALL_REF_LEN => return Err(ParseError::CallRefLength(len)),
            _ => {}
        }
        let Some(h) = b.first_chunk::<HEADER_LEN>() else {
            return Err(ParseError::TooShort { len: b.len() });
        };
        let declared = usize::from(u16::from_be_bytes([h[7], h[8]]));
        let actual = b.len() - HEADER_LEN;
        if declared != actual {
            return Err(ParseError::LengthMismatch { declared, actual });
        }
        Ok(())
    }

    /// The buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The call reference.
    pub fn call_ref(&self) -> CallRef {
        let c = &self.buffer.as_ref()[field::CALL_REF];
        CallRef {
            value: u32::from_be_bytes([0, c[0] & 0x7F, c[1], c[2]]),
            flag: c[0] & 0x80 != 0,
        }
    }

    /// The message type.
    pub fn msg_type(&self) -> MsgType {
        MsgType::from_code(self.buffer.as_ref()[field::MSG_TYPE])
    }

    /// The message compatibility instruction.
    pub fn instruction(&self) -> MsgInstruction {
        MsgInstruction::from_octet(self.buffer.as_ref()[field::INSTRUCTION])
    }

    /// The message length field.
    pub fn message_len(&self) -> u16 {
        let l = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([l[0], l[1]])
    }

    /// The header.
    pub fn header(&self) -> Header {
        Header {
            call_ref: self.call_ref(),
            msg_type: self.msg_type(),
            instruction: self.instruction(),
        }
    }

    /// The IEs in wire order, undecoded; an IE that runs past the end ends the walk with
    /// [`ParseError::IeTruncated`].
    pub fn ies(&self) -> IeIter<'_> {
        let b = self.buffer.as_ref();
        IeIter {
            rest: b.get(HEADER_LEN..).unwrap_or(&[]),
            offset: HEADER_LEN,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> MessageView<T> {
    /// Writes the header fields (the length field from the buffer's length, cut to 16
    /// bits). Panics if the buffer is shorter than the header.
    pub fn set_header(&mut self, h: &Header) {
        let len = (self.buffer.as_ref().len() - HEADER_LEN) as u16;
        h.emit(self.buffer.as_mut(), len);
    }

    /// Writes the call reference.
    pub fn set_call_ref(&mut self, cr: CallRef) {
        let v = (cr.value & CallRef::MAX).to_be_bytes();
        let b = &mut self.buffer.as_mut()[field::CALL_REF];
        b[0] = v[1] | if cr.flag { 0x80 } else { 0 };
        b[1] = v[2];
        b[2] = v[3];
    }
}

/// One IE as it stands in a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IeRef<'a> {
    /// Offset of its first byte in the message.
    pub offset: usize,
    /// The identifier.
    pub id: IeId,
    /// Header octet 2.
    pub flags: IeFlags,
    /// The contents.
    pub contents: &'a [u8],
}

impl IeRef<'_> {
    /// Where the IE lies in the message.
    pub fn range(&self) -> Range<usize> {
        self.offset..self.offset + IE_HEADER_LEN + self.contents.len()
    }
}

/// The IEs of a message in wire order ([`MessageView::ies`]).
#[derive(Clone, Debug)]
pub struct IeIter<'a> {
    rest: &'a [u8],
    offset: usize,
}

impl<'a> Iterator for IeIter<'a> {
    type Item = Result<IeRef<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let offset = self.offset;
        let parsed = self
            .rest
            .split_first_chunk::<IE_HEADER_LEN>()
            .and_then(|(h, rest)| {
                let len = usize::from(u16::from_be_bytes([h[2], h[3]]));
                let (contents, rest) = rest.split_at_checked(len)?;
                Some((
                    IeId::from_code(h[0]),
                    IeFlags::from_octet(h[1]),
                    contents,
                    rest,
                ))
            });
        match parsed {
            Some((id, flags, contents, rest)) => {
                self.rest = rest;
                self.offset += IE_HEADER_LEN + contents.len();
                Some(Ok(IeRef {
                    offset,
                    id,
                    flags,
                    contents,
                }))
            }
            None => {
                self.rest = &[];
                Some(Err(ParseError::IeTruncated { offset }))
            }
        }
    }
}
