//! The text parsing shared by every address form: [`AddrSyntax`], libatm's failure kinds and
//! `text2atm` itself (PVC, then AESA, then E.164).

use super::pvc::try_pvc;
use super::svc::parse_svc;
use super::{AddrErrorKind, AddrParseError, AtmAddr};

/// Which parts of the text form are allowed (libatm's `T2A_*` flags, minus name lookup).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AddrSyntax {
    /// `?` in a PVC address (`T2A_UNSPEC`).
    pub unspec: bool,
    /// `*` in a PVC address and `/bits` after an AESA (`T2A_WILDCARD`).
    pub wildcard: bool,
    /// VPIs up to 4095 (`T2A_NNI`); otherwise up to 255.
    pub nni: bool,
}

impl AddrSyntax {
    /// natm's default: `T2A_UNSPEC | T2A_WILDCARD`, UNI VPIs.
    pub const DEFAULT: AddrSyntax = AddrSyntax {
        unspec: true,
        wildcard: true,
        nni: false,
    };
    /// Concrete addresses only: no `?`, `*` or `/bits`.
    pub const EXACT: AddrSyntax = AddrSyntax {
        unspec: false,
        wildcard: false,
        nni: false,
    };
}

impl Default for AddrSyntax {
    fn default() -> AddrSyntax {
        AddrSyntax::DEFAULT
    }
}

/// libatm's two kinds of failure: `FATAL` ends the search, `TRY_OTHER` tries the next form.
pub(super) enum Fail {
    Fatal(AddrParseError),
    Other(AddrParseError),
}

impl Fail {
    pub(super) fn into_inner(self) -> AddrParseError {
        match self {
            Fail::Fatal(e) | Fail::Other(e) => e,
        }
    }
}

pub(super) fn fatal(at: usize, kind: AddrErrorKind) -> Fail {
    Fail::Fatal(AddrParseError { at, kind })
}

pub(super) fn other(at: usize, kind: AddrErrorKind) -> Fail {
    Fail::Other(AddrParseError { at, kind })
}

/// The byte at `i`, or 0 past the end (C's terminating NUL).
pub(super) fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

/// The error for the character at `i` (which is always on a character boundary: every
/// byte before it was ASCII).
pub(super) fn bad_char(text: &str, i: usize) -> AddrErrorKind {
    match text.get(i..).and_then(|r| r.chars().next()) {
        Some(c) => AddrErrorKind::BadChar(c),
        None => AddrErrorKind::NoDigits,
    }
}

pub(super) fn check_text(text: &str) -> Result<(), AddrParseError> {
    if text.is_empty() {
        return Err(AddrParseError {
            at: 0,
            kind: AddrErrorKind::Empty,
        });
    }
    if let Some(i) = text.bytes().position(|b| b == 0) {
        return Err(AddrParseError {
            at: i,
            kind: AddrErrorKind::Nul,
        });
    }
    Ok(())
}

/// `text2atm` without name lookup.
pub(super) fn parse(text: &str, syntax: AddrSyntax) -> Result<AtmAddr, AddrParseError> {
    check_text(text)?;
    let mut tried = [None; 3];
    match try_pvc(text.as_bytes(), text, syntax) {
        Ok(a) => return Ok(AtmAddr::Pvc(a)),
        Err(Fail::Fatal(e)) => return Err(e),
        Err(Fail::Other(e)) => tried[0] = Some(e),
    }
    match parse_svc(text, syntax, &mut tried)? {
        Some(a) => Ok(AtmAddr::Svc(a)),
        None => Err(pick_error(text, tried)),
    }
}

/// Of the forms tried (PVC, AESA, E.164), the error of the one that got furthest; a
/// leading `+` can only be E.164.
pub(super) fn pick_error(text: &str, tried: [Option<AddrParseError>; 3]) -> AddrParseError {
    if let (true, Some(e)) = (text.starts_with('+'), tried[2]) {
        return e;
    }
    let mut best: Option<AddrParseError> = None;
    for e in tried.into_iter().flatten() {
        if best.is_none_or(|b| e.at > b.at) {
            best = Some(e);
        }
    }
    best.unwrap_or(AddrParseError {
        at: 0,
        kind: AddrErrorKind::Empty,
    })
}
