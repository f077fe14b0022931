//! Error types.

use std::fmt;
use std::path::PathBuf;

/// What went wrong while reading a fio job file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// A job file or include file could not be read.
    Io,
    /// An option line appears before the first `[section]`.
    OutsideSection,
    /// An included file contains a `[section]` line.
    SectionInInclude,
    /// The option name is not known (to fio's core table, the built-in profiles, or
    /// the job's I/O engine).
    UnknownOption,
    /// The option is known but its value is invalid.
    InvalidValue,
    /// The option is deprecated and no longer accepted.
    Deprecated,
    /// `ioengine=` names an engine that cannot be loaded.
    EngineNotLoadable,
    /// `$pagesize`/`$mb_memory`/`$ncpus` arithmetic failed.
    Math,
    /// Include nesting is too deep (include loop).
    IncludeDepth,
    /// A valid option the simulator does not model (set by iostack's
    /// front end, never by the parser).
    Refused,
}

/// An error in a fio job file, with the place it was found.
///
/// Displays as `FILE:LINE: MESSAGE`, e.g.
/// `job.fio:7: unknown option 'blocksze' (did you mean 'blocksize'?)` or
/// `job.fio:3: option 'bs': invalid size '4q' (unknown size suffix 'q')`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FioError {
    /// File the error is in (as named on the command line or in `include`).
    pub file: PathBuf,
    /// 1-based line number, 0 if the error is about the whole file.
    pub line: usize,
    /// Option name as written, if the error is about an option.
    pub option: Option<Box<str>>,
    /// Option value as written (before `${VAR}` substitution), if any.
    pub value: Option<Box<str>>,
    /// Error class.
    pub kind: ErrorKind,
    /// Human-readable message (without the `FILE:LINE: ` prefix).
    pub message: String,
    /// Closest known option name, for unknown options.
    pub suggestion: Option<Box<str>>,
    /// The next problem found in the same run, in file order (a job file's
    /// every error is reported at once; this one is the first, see
    /// [`FioError::all`]).
    pub next: Option<Box<FioError>>,
}

impl FioError {
    pub(crate) fn new(
        file: impl Into<PathBuf>,
        line: usize,
        kind: ErrorKind,
        message: String,
    ) -> Self {
        FioError {
            file: file.into(),
            line,
            option: None,
            value: None,
            kind,
            message,
            suggestion: None,
            next: None,
        }
    }

    /// A refusal of the simulator's front end at `file:line`, option `option`
    /// (its message to be set by the caller).
    pub fn new_refused(file: impl Into<PathBuf>, line: usize, option: &str) -> Self {
        FioError {
            option: Some(option.into()),
            ..FioError::new(file, line, ErrorKind::Refused, String::new())
        }
    }

    /// The first of `errors` with the others chained in `next`; `None` if empty.
    pub fn collect(errors: Vec<FioError>) -> Option<FioError> {
        errors.into_iter().rev().fold(None, |next, mut e| {
            e.next = next.map(Box::new);
            Some(e)
        })
    }

    /// This problem and the ones chained after it.
    pub fn all(&self) -> impl Iterator<Item = &FioError> {
        std::iter::successors(Some(self), |e| e.next.as_deref())
    }
}

impl fmt::Display for FioError {
    /// One `FILE:LINE: MESSAGE` line per problem.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)?;
        } else {
            write!(f, "{}: {}", self.file.display(), self.message)?;
        }
        if let Some(e) = &self.next {
            write!(f, "\n{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for FioError {}

/// An error in a `dd` operand list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DdError {
    /// The offending operand as given (`bs=4q`).
    pub operand: String,
    /// Human-readable message.
    pub message: String,
}

impl fmt::Display for DdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dd: {}", self.message)
    }
}

impl std::error::Error for DdError {}
