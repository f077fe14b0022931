//! Errors of the command line, and writing to standard output: a closed stdout
//! (`iostack reproduce | head -1`) ends the program quietly instead of panicking
//! in `print!`.

use iostack_sim::SimError;
use std::fmt;
use std::io::{self, Write};

/// Why a command failed.
#[derive(Debug)]
pub enum CliError {
    /// A bad command line or a report that cannot be made.
    Usage(String),
    /// A bad input the library refused (machine, job file, experiment, ...).
    Sim(SimError),
    /// A file could not be read or written.
    Io { path: String, source: io::Error },
    /// Standard output was closed by its reader; nothing more can be said.
    ClosedStdout,
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) => f.write_str(m),
            CliError::Sim(e) => write!(f, "{e}"),
            CliError::Io { path, source } => write!(f, "{path}: {source}"),
            CliError::ClosedStdout => f.write_str("standard output closed"),
        }
    }
}

impl From<SimError> for CliError {
    fn from(e: SimError) -> Self {
        CliError::Sim(e)
    }
}

impl From<String> for CliError {
    fn from(m: String) -> Self {
        CliError::Usage(m)
    }
}

impl From<&str> for CliError {
    fn from(m: &str) -> Self {
        CliError::Usage(m.to_string())
    }
}

impl CliError {
    /// An I/O error on the file `path` (standard output's own errors come from
    /// [`stdout`], where a broken pipe is `ClosedStdout`).
    pub fn io(path: impl fmt::Display, source: io::Error) -> Self {
        CliError::Io {
            path: path.to_string(),
            source,
        }
    }
}

std::thread_local! {
    /// Standard output and error of the commands run by [`capture`] on this
    /// thread.
    static CAPTURE: std::cell::RefCell<Option<(String, String)>> =
        const { std::cell::RefCell::new(None) };
}

/// Run `f` with what the commands write to standard output and error kept
/// (on this thread) instead of written: a binding runs a command and gets the
/// text the command line prints.
pub fn capture<T>(f: impl FnOnce() -> T) -> (T, String, String) {
    CAPTURE.with(|c| *c.borrow_mut() = Some((String::new(), String::new())));
    let r = f();
    let (o, e) = CAPTURE.with(|c| c.borrow_mut().take()).unwrap_or_default();
    (r, o, e)
}

/// Append to the capture of this thread; false when none is on.
fn captured(text: &str, err: bool) -> bool {
    CAPTURE.with(|c| match c.borrow_mut().as_mut() {
        Some((o, e)) => {
            if err { e } else { o }.push_str(text);
            true
        }
        None => false,
    })
}

/// Write `text` to standard output and flush it.
pub fn stdout(text: &str) -> Result<(), CliError> {
    if captured(text, false) {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            io::ErrorKind::BrokenPipe => CliError::ClosedStdout,
            _ => CliError::io("standard output", e),
        })
}

/// Write `text` to standard error; a closed stderr is ignored (there is nowhere
/// left to report it).
pub fn stderr(text: &str) {
    if captured(text, true) {
        return;
    }
    let mut err = io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}
