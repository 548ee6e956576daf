//! Why a measurement could not be made.

use std::io;

/// Why a measurement could not be made. Its `Display` is one line, without the program's
/// name: what failed, then why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operation of the measurement failed; `what` names the operation and what it
    /// worked on (a transport, a size, a file).
    #[error("{what}: {source}")]
    Io {
        /// The operation.
        what: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A thread of the measurement panicked; the text names it.
    #[error("{0} panicked")]
    Panicked(String),
}

impl Error {
    /// An [`Error::Io`] for `what`.
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}
