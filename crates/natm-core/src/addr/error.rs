//! The address errors: [`AddrValueError`] (a value with no text form) and
//! [`AddrParseError`] (a text that is no address).

use core::fmt;

/// Why an address value cannot be written as text that reads back to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrValueError {
    /// A PVC interface cannot be `?`.
    ItfUnspecified,
    /// `*` or a prefix needs [`AddrSyntax::wildcard`](super::AddrSyntax::wildcard).
    NeedsWildcard,
    /// `?` needs [`AddrSyntax::unspec`](super::AddrSyntax::unspec).
    NeedsUnspec,
    /// A VPI above 255 needs [`AddrSyntax::nni`](super::AddrSyntax::nni).
    NeedsNni,
    /// An SVC address with neither part.
    Empty,
    /// A private address whose first byte is 0 (libatm reads that as "no address").
    ZeroAfi,
    /// A prefix length the text form cannot carry with this AESA.
    BadPrefix,
}

impl fmt::Display for AddrValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddrValueError::ItfUnspecified => "the interface cannot be unspecified",
            AddrValueError::NeedsWildcard => "needs the wildcard syntax",
            AddrValueError::NeedsUnspec => "needs the unspecified syntax",
            AddrValueError::NeedsNni => "VPI above 255 needs the NNI syntax",
            AddrValueError::Empty => "SVC address without AESA or E.164 number",
            AddrValueError::ZeroAfi => "AESA with AFI 00",
            AddrValueError::BadPrefix => "prefix length not expressible for this AESA",
        })
    }
}

impl core::error::Error for AddrValueError {}

/// An address text that could not be parsed: where and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrParseError {
    /// Byte offset into the text.
    pub at: usize,
    /// What was wrong there.
    pub kind: AddrErrorKind,
}

/// What was wrong with an address text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrErrorKind {
    /// The text is empty.
    Empty,
    /// The text contains a NUL byte.
    Nul,
    /// A character that no address form allows here.
    BadChar(char),
    /// A PVC address that ends with a dot.
    PvcTrailingDot,
    /// More than three PVC parts.
    PvcTooManyParts,
    /// A PVC number with a leading zero.
    PvcLeadingZero,
    /// A PVC number above 2147483649.
    PvcNumberTooBig,
    /// A `*` or `?` not followed by a dot.
    PvcDotRequired,
    /// A single number: a PVC needs at least `vpi.vci`.
    PvcNoDot,
    /// `*` without the wildcard syntax.
    WildcardNotAllowed,
    /// `?` without the unspecified syntax.
    UnspecNotAllowed,
    /// `?` as the interface.
    ItfUnspecified,
    /// Interface above 32767.
    ItfRange,
    /// VPI above the limit.
    VpiRange {
        /// The largest VPI allowed.
        max: u16,
    },
    /// VCI above 65535.
    VciRange,
    /// VCI 2147483648 or 2147483649, which libatm stores as a negative number.
    VciOverflow,
    /// An AESA starts with a dot.
    LeadingDot,
    /// Two dots in a row.
    TwoDots,
    /// A dot at the end, or no digits.
    NoDigits,
    /// An AESA with the wrong number of hex digits.
    AesaLength {
        /// How many were given.
        digits: u8,
    },
    /// More than 40 hex digits.
    AesaTooLong,
    /// An AESA whose first byte is 00.
    AesaZeroAfi,
    /// The E.164 number of an E.164 AESA starts with 0.
    E164AesaLeadingZero,
    /// The prefix length is not a decimal number.
    PrefixNotNumber,
    /// The prefix length is longer than the digits given.
    PrefixTooLong,
    /// The prefix length is in the range libatm refuses (8..=71, or below 72 for an E.164
    /// AESA).
    PrefixRange,
    /// More than 12 E.164 digits.
    E164TooLong,
}

impl fmt::Display for AddrErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use AddrErrorKind as K;
        match self {
            K::Empty => f.write_str("empty address"),
            K::Nul => f.write_str("NUL byte in address"),
            K::BadChar(c) => write!(f, "unexpected {c:?}"),
            K::PvcTrailingDot => f.write_str("PVC address ends with a dot"),
            K::PvcTooManyParts => f.write_str("more than three PVC parts (itf.vpi.vci)"),
            K::PvcLeadingZero => f.write_str("leading zero in a PVC number"),
            K::PvcNumberTooBig => f.write_str("PVC number too big"),
            K::PvcDotRequired => f.write_str("expected \".\" after \"*\" or \"?\""),
            K::PvcNoDot => f.write_str("not an address (a PVC needs vpi.vci)"),
            K::WildcardNotAllowed => f.write_str("\"*\" is not allowed here"),
            K::UnspecNotAllowed => f.write_str("\"?\" is not allowed here"),
            K::ItfUnspecified => f.write_str("the interface cannot be \"?\""),
            K::ItfRange => f.write_str("interface out of range 0..=32767"),
            K::VpiRange { max } => write!(f, "VPI out of range 0..={max}"),
            K::VciRange => f.write_str("VCI out of range 0..=65535"),
            K::VciOverflow => f.write_str("VCI overflows a C int (libatm would store it negative)"),
            K::LeadingDot => f.write_str("address starts with a dot"),
            K::TwoDots => f.write_str("two dots in a row"),
            K::NoDigits => f.write_str("expected a digit"),
            K::AesaLength { digits } => {
                write!(f, "an AESA has 40 hex digits, found {digits}")
            }
            K::AesaTooLong => f.write_str("more than 40 hex digits"),
            K::AesaZeroAfi => f.write_str("an AESA cannot start with 00"),
            K::E164AesaLeadingZero => {
                f.write_str("the E.164 number before \":\" cannot start with 0")
            }
            K::PrefixNotNumber => f.write_str("prefix length is not a number"),
            K::PrefixTooLong => f.write_str("prefix length longer than the digits given"),
            K::PrefixRange => f.write_str(
                "prefix length must be at most 7 or at least 72 (at least 72 for digits:…)",
            ),
            K::E164TooLong => f.write_str("more than 12 E.164 digits"),
        }
    }
}

impl fmt::Display for AddrParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}: {}", self.at, self.kind)
    }
}

impl core::error::Error for AddrParseError {}
