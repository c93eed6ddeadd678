//! One error type for the runner: what went wrong, in words a user can act on.
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Two transactions wrote the same key; the caller rolls back and retries.
    WriteConflict,
    /// An insert would violate a unique index.
    DuplicateKey,
    /// The engine can no longer be used (WiredTiger's WT_PANIC, a full disk, ...): the runner
    /// reports it and exits without waiting on the engine.
    Fatal,
    /// Anything else: bad input, an unsupported operation, an engine error.
    Other,
}

#[derive(Debug, Clone)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }
    pub fn other(message: impl Into<String>) -> Self {
        Error::new(Kind::Other, message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Error::new(Kind::WriteConflict, message)
    }
    pub fn duplicate(message: impl Into<String>) -> Self {
        Error::new(Kind::DuplicateKey, message)
    }
    pub fn fatal(message: impl Into<String>) -> Self {
        Error::new(Kind::Fatal, message)
    }
    pub fn is_conflict(&self) -> bool {
        self.kind == Kind::WriteConflict
    }
    /// The name the events and the Python side use for this kind of error.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::WriteConflict => "WriteConflict",
            Kind::DuplicateKey => "DuplicateKey",
            Kind::Fatal => "FatalEngineError",
            Kind::Other => "StoreError",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::other(e.to_string())
    }
}

impl From<bson::error::Error> for Error {
    fn from(e: bson::error::Error) -> Self {
        Error::other(format!("BSON: {e}"))
    }
}

/// `bail!("...")`: return an Other error formatted in place.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => { return Err($crate::error::Error::other(format!($($arg)*))) };
}
