//! The library's one error type: a kind (which becomes the C API's `n5_status`)
//! and a message that names the path, key or block involved.

use std::fmt;

/// What went wrong, coarse enough to act on. Each kind has a fixed,
/// never-reused status code in the C API (see [`ErrorKind::code`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An argument is out of its domain (a path escaping the root, a zero extent...).
    InvalidArgument,
    /// A required pointer was NULL (C layer only).
    NullPointer,
    /// Text was not valid UTF-8.
    InvalidUtf8,
    /// The operating system reported an I/O failure.
    Io,
    /// A container, group, dataset, attribute or block does not exist.
    NotFound,
    /// Something is already there (creating a dataset over a dataset).
    AlreadyExists,
    /// attributes.json describes a dataset that cannot be valid.
    InvalidMetadata,
    /// A valid but unsupported feature (unknown compression, newer major version).
    Unsupported,
    /// The buffer's data type differs from the dataset's.
    DtypeMismatch,
    /// Rank or shape of an argument does not fit the dataset.
    ShapeMismatch,
    /// A region or block position lies outside the dataset.
    OutOfBounds,
    /// A data buffer's length is not exactly what the shape requires.
    BufferSize,
    /// A text output buffer is too small.
    BufferTooSmall,
    /// A block could not be encoded or decoded (corrupt or hostile data).
    Codec,
    /// A write was attempted through a read-only container.
    ReadOnly,
    /// JSON text could not be parsed or has the wrong shape.
    Json,
    /// A handle was freed or never valid (C layer only).
    InvalidHandle,
    /// A request over the network could not be completed within the retry
    /// budget (connection refused or reset, timeout, 5xx, 429).
    Network,
    /// The server refused the credentials or the operation (401, 403 on a
    /// signed request or a write, a bad signature or key).
    AccessDenied,
    /// A link's or reference's target container or path is missing.
    DanglingLink,
    /// Resolving a path met a link cycle or more than 40 links.
    LinkCycle,
    /// A pickled chunk or fill value uses an opcode, global or call outside
    /// the data-only subset; nothing was executed.
    UnsafePickle,
    /// A build in parts was asked to finish before every part had
    /// finished; nothing was written.
    Incomplete,
    /// A panic was caught at the C boundary.
    Panic,
    /// A bug in the library.
    Internal,
}

impl ErrorKind {
    /// The stable C status code of this kind (`N5_ERR_*`).
    pub const fn code(self) -> i32 {
        match self {
            ErrorKind::InvalidArgument => 1,
            ErrorKind::NullPointer => 2,
            ErrorKind::InvalidUtf8 => 3,
            ErrorKind::Io => 4,
            ErrorKind::NotFound => 5,
            ErrorKind::AlreadyExists => 6,
            ErrorKind::InvalidMetadata => 7,
            ErrorKind::Unsupported => 8,
            ErrorKind::DtypeMismatch => 9,
            ErrorKind::ShapeMismatch => 10,
            ErrorKind::OutOfBounds => 11,
            ErrorKind::BufferSize => 12,
            ErrorKind::BufferTooSmall => 13,
            ErrorKind::Codec => 14,
            ErrorKind::ReadOnly => 15,
            ErrorKind::Json => 16,
            ErrorKind::InvalidHandle => 17,
            ErrorKind::Network => 18,
            ErrorKind::AccessDenied => 19,
            ErrorKind::DanglingLink => 20,
            ErrorKind::LinkCycle => 21,
            ErrorKind::UnsafePickle => 22,
            ErrorKind::Incomplete => 23,
            ErrorKind::Panic => 98,
            ErrorKind::Internal => 99,
        }
    }

    /// The name of this kind's C status code (`"N5_ERR_NOT_FOUND"`), as
    /// `n5_status_name` gives it.
    pub const fn status_name(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "N5_ERR_INVALID_ARGUMENT",
            ErrorKind::NullPointer => "N5_ERR_NULL_POINTER",
            ErrorKind::InvalidUtf8 => "N5_ERR_INVALID_UTF8",
            ErrorKind::Io => "N5_ERR_IO",
            ErrorKind::NotFound => "N5_ERR_NOT_FOUND",
            ErrorKind::AlreadyExists => "N5_ERR_ALREADY_EXISTS",
            ErrorKind::InvalidMetadata => "N5_ERR_INVALID_METADATA",
            ErrorKind::Unsupported => "N5_ERR_UNSUPPORTED",
            ErrorKind::DtypeMismatch => "N5_ERR_DTYPE_MISMATCH",
            ErrorKind::ShapeMismatch => "N5_ERR_SHAPE_MISMATCH",
            ErrorKind::OutOfBounds => "N5_ERR_OUT_OF_BOUNDS",
            ErrorKind::BufferSize => "N5_ERR_BUFFER_SIZE",
            ErrorKind::BufferTooSmall => "N5_ERR_BUFFER_TOO_SMALL",
            ErrorKind::Codec => "N5_ERR_CODEC",
            ErrorKind::ReadOnly => "N5_ERR_READ_ONLY",
            ErrorKind::Json => "N5_ERR_JSON",
            ErrorKind::InvalidHandle => "N5_ERR_INVALID_HANDLE",
            ErrorKind::Network => "N5_ERR_NETWORK",
            ErrorKind::AccessDenied => "N5_ERR_ACCESS_DENIED",
            ErrorKind::DanglingLink => "N5_ERR_DANGLING_LINK",
            ErrorKind::LinkCycle => "N5_ERR_LINK_CYCLE",
            ErrorKind::UnsafePickle => "N5_ERR_UNSAFE_PICKLE",
            ErrorKind::Incomplete => "N5_ERR_INCOMPLETE",
            ErrorKind::Panic => "N5_ERR_PANIC",
            ErrorKind::Internal => "N5_ERR_INTERNAL",
        }
    }
}

/// An error with its kind and a human-readable message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

/// The library's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, naming the path, key or block involved.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same error with `context` put in front of its message
    /// (`"block 'ds/0/1': <message>"`).
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }

    /// Shorthand for an [`ErrorKind::Codec`] error.
    pub fn codec(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Codec, message)
    }

    /// Shorthand for an [`ErrorKind::InvalidArgument`] error.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    /// Shorthand for an [`ErrorKind::InvalidMetadata`] error.
    pub fn invalid_metadata(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidMetadata, message)
    }

    /// An [`ErrorKind::Io`] (or [`ErrorKind::NotFound`]) error from `err`,
    /// naming `path`.
    pub fn io(path: impl fmt::Display, err: std::io::Error) -> Self {
        let kind = match err.kind() {
            std::io::ErrorKind::NotFound => ErrorKind::NotFound,
            _ => ErrorKind::Io,
        };
        Error::new(kind, format!("'{path}': {err}"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
