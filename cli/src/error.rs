//! The tool's errors: a one-line message `n5: <path>: <cause>` and the exit
//! code scripts can rely on (see [`EXIT_OK`] and its siblings).

use std::fmt;

/// Success.
pub const EXIT_OK: u8 = 0;
/// An error: a missing path, a broken file, a failed read or write.
pub const EXIT_ERROR: u8 = 1;
/// A usage error: an unknown option, a malformed argument.
pub const EXIT_USAGE: u8 = 2;
/// `n5 verify` found at least one bad block or dataset.
pub const EXIT_BAD_BLOCKS: u8 = 3;

/// An error that ends the command: what it concerns, why, and the exit code.
#[derive(Debug)]
pub struct CliError {
    /// The path (or argument) the error is about; `None` for none.
    pub path: Option<String>,
    /// The cause, one line.
    pub message: String,
    /// The process exit code.
    pub code: u8,
    /// Print nothing (a closed output pipe is not worth a message).
    pub silent: bool,
}

/// The tool's result type.
pub type CliResult<T> = Result<T, CliError>;

impl CliError {
    /// An error about `path` (exit code 1).
    pub fn new(path: impl fmt::Display, message: impl fmt::Display) -> Self {
        CliError {
            path: Some(path.to_string()),
            message: message.to_string(),
            code: EXIT_ERROR,
            silent: false,
        }
    }

    /// A usage error about the argument `what` (exit code 2).
    pub fn usage(what: impl fmt::Display, message: impl fmt::Display) -> Self {
        CliError {
            code: EXIT_USAGE,
            ..CliError::new(what, message)
        }
    }

    /// The reader of our output went away: stop quietly with success.
    pub fn broken_pipe() -> Self {
        CliError {
            path: None,
            message: String::new(),
            code: EXIT_OK,
            silent: true,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line, whatever the cause says.
        let message = self.message.replace(['\n', '\r'], " ");
        match &self.path {
            Some(p) if !p.is_empty() => write!(f, "n5: {p}: {message}"),
            _ => write!(f, "n5: {message}"),
        }
    }
}

/// Attach the path an error concerns to a library or I/O result.
pub trait At<T> {
    /// The result with its error turned into a [`CliError`] about `path`.
    fn at(self, path: impl fmt::Display) -> CliResult<T>;
}

impl<T> At<T> for Result<T, n5::Error> {
    fn at(self, path: impl fmt::Display) -> CliResult<T> {
        self.map_err(|e| CliError::new(path, e.message()))
    }
}

impl<T> At<T> for std::io::Result<T> {
    fn at(self, path: impl fmt::Display) -> CliResult<T> {
        self.map_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                CliError::broken_pipe()
            } else {
                CliError::new(path, e)
            }
        })
    }
}
