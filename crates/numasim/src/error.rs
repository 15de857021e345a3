//! Errors. `Input` errors are the user's to fix (exit status 2); `Internal`
//! errors are numasim's bugs or resource limits it cannot meet (exit 1).

use std::fmt;

/// An error in a scenario, machine file, override or command-line value.
#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    /// The file the problem is in (or `--set`, or the importer's source).
    pub file: Option<String>,
    /// The dotted key, e.g. `machine.distance.matrix`.
    pub key: Option<String>,
    /// What is wrong and what is allowed.
    pub message: String,
    /// What would do, where the reader that refused the value knows it
    /// (the valid keys, the names of a choice, a range): the part of the
    /// message that lists it, kept apart for callers that show it on its
    /// own (the Python binding's `InputError.allowed`).
    pub allowed: Option<String>,
}

/// The most bytes of a key an error shows (a key is a dotted path of
/// names; anything longer was pasted by mistake or by a fuzzer).
pub const MAX_KEY_SHOWN: usize = 256;
/// The most bytes of a message an error shows: the longest written here
/// (a workload's keys, every workload's name) is under 2 KiB.
pub const MAX_MESSAGE_SHOWN: usize = 4096;

/// `s` cut to at most `max` bytes on a character boundary, saying how long
/// it was, so a 10 MB name in an input is refused with a line, not with
/// 10 MB of error.
pub fn clip(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return s.into();
    }
    let mut cut = max.saturating_sub(32).min(s.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes in all)", &s[..cut], s.len()).into()
}

fn clipped(s: String, max: usize) -> String {
    match clip(&s, max) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(c) => c,
    }
}

impl InputError {
    /// A message is cut to [`MAX_MESSAGE_SHOWN`] bytes (and a key to
    /// [`MAX_KEY_SHOWN`]): whatever input text it quotes, an error stays
    /// a few lines.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            file: None,
            key: None,
            message: clipped(message.into(), MAX_MESSAGE_SHOWN),
            allowed: None,
        }
    }
    pub fn at(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            file: None,
            key: Some(clipped(key.into(), MAX_KEY_SHOWN)),
            message: clipped(message.into(), MAX_MESSAGE_SHOWN),
            allowed: None,
        }
    }
    /// Say what would do (see [`InputError::allowed`]); cut like the message.
    pub fn allowing(mut self, allowed: impl Into<String>) -> Self {
        self.allowed = Some(clipped(allowed.into(), MAX_MESSAGE_SHOWN));
        self
    }
    /// Attach the file name unless a more precise one is already set.
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        if self.file.is_none() {
            self.file = Some(clipped(file.into(), MAX_KEY_SHOWN));
        }
        self
    }
    /// Prefix the key with a parent path (`machine` + `nodes` = `machine.nodes`).
    pub fn under(mut self, parent: &str) -> Self {
        if !parent.is_empty() {
            self.key = Some(clipped(
                match self.key.take() {
                    Some(k) => format!("{parent}.{k}"),
                    None => parent.to_string(),
                },
                MAX_KEY_SHOWN,
            ));
        }
        self
    }
}

impl InputError {
    /// Place a key read from step `i` of `[[run]]` under `run[i]`; keys
    /// already rooted (`machine.`, `kernel.`, `run[`) stay as they are.
    pub fn in_step(self, i: usize) -> Self {
        let rooted = self.key.as_deref().is_some_and(|k| {
            k.starts_with("machine.") || k.starts_with("kernel.") || k.starts_with("run[")
        });
        if rooted {
            self
        } else {
            self.under(&format!("run[{i}]"))
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, &self.key) {
            (Some(file), Some(key)) => write!(f, "{file}: key `{key}`: {}", self.message),
            (Some(file), None) => write!(f, "{file}: {}", self.message),
            (None, Some(key)) => write!(f, "key `{key}`: {}", self.message),
            (None, None) => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for InputError {}

/// Any failure of the library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Input(#[from] InputError),
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// See [`InputError::in_step`]; internal errors pass through.
    pub fn in_step(self, i: usize) -> Self {
        match self {
            Error::Input(e) => Error::Input(e.in_step(i)),
            other => other,
        }
    }
    /// Attach the scenario's file to an input error that has none.
    pub fn in_file(self, file: &str) -> Self {
        match self {
            Error::Input(e) => Error::Input(e.in_file(file)),
            other => other,
        }
    }
    /// The process exit status this error maps to (2: bad input, 1: internal).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Input(_) => 2,
            Error::Internal(_) => 1,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
