//! Typed errors of the library: what went wrong, and where in the input (file,
//! line, option) when the input has one. The command line prints them with
//! `Display`; a binding can match on the variants and read the fields.

use crate::machine::MachineError;
use iostack_core::TunableError;
use iostack_workload::{BonnieError, DdError, FioError, FsMarkError, IozoneError};

/// An error of the simulator's library API: a bad input (machine, experiment, fio
/// job, dd operands, tunable, size), or a configuration the simulated machine
/// cannot set up.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// A machine file, a machine preset name or an experiment's `machine_set`.
    #[error(transparent)]
    Machine(Box<MachineError>),
    /// A fio job file that does not parse (`file:line: option ...`).
    #[error(transparent)]
    Fio(Box<FioError>),
    /// dd operands that do not parse.
    #[error(transparent)]
    Dd(#[from] DdError),
    /// An iozone command line that does not parse, or an option not simulated.
    #[error(transparent)]
    Iozone(#[from] IozoneError),
    /// An fs_mark command line that does not parse, or an option not simulated.
    #[error(transparent)]
    FsMark(#[from] FsMarkError),
    /// A Bonnie command line that does not parse, or a test not simulated.
    #[error(transparent)]
    Bonnie(#[from] BonnieError),
    /// An experiment file: `file[:line]: [field: ]message`.
    #[error("{}{}{message}", at(file, *line), field.as_deref().map(|f| format!("{f}: ")).unwrap_or_default())]
    Experiment {
        file: String,
        /// 1-based line of the field, when known.
        line: Option<usize>,
        /// The field (`metric 'x'.of`, `compare`, `[workload]`, ...).
        field: Option<String>,
        message: String,
    },
    /// A parsed fio job or dd command the simulator cannot run as written:
    /// `file:line: job 'name': message` (the message names the option).
    #[error("{}job '{job}': {message}", at(file, *line))]
    Job {
        /// The job file (`dd` for a dd command line).
        file: String,
        /// Line of the job's section.
        line: Option<usize>,
        job: String,
        /// The option that cannot be modelled, when one can be named.
        option: Option<String>,
        message: String,
    },
    /// A tunable assignment (`--set K=V`, an experiment's `set` entry):
    /// `[file:line: ]ORIGIN K=V: message`.
    #[error("{}{origin} {assignment}: {source}", at(file.as_deref().unwrap_or(""), *line))]
    Tunable {
        file: Option<String>,
        line: Option<usize>,
        /// How it was given: `--set`, `set`.
        origin: String,
        assignment: String,
        source: Box<TunableError>,
    },
    /// A size or block number (`--layout PATH=SIZE[@BLOCK]`, `[[setup]] size`):
    /// `[file:line: ]ORIGIN INPUT: message`.
    #[error("{}{origin} {input}: {message}", at(file.as_deref().unwrap_or(""), *line))]
    Size {
        file: Option<String>,
        line: Option<usize>,
        /// How it was given: `--layout`, `[[setup]] size`.
        origin: String,
        input: String,
        message: String,
    },
    /// An unknown kernel profile.
    #[error("{0}")]
    Profile(String),
    /// An unknown I/O scheduler, or one the profile does not have.
    #[error("{0}")]
    Scheduler(String),
    /// The machine cannot be set up as configured: a file a job needs is missing,
    /// a device node does not exist, a partition lies beyond the disk, mkfs fails.
    #[error("{0}")]
    Setup(String),
    /// A process of the run failed (an I/O error the simulated kernel returned).
    #[error("{0}")]
    Run(String),
    /// An error in one variant of an experiment.
    #[error("{experiment} variant {variant}: {source}")]
    Variant {
        experiment: String,
        variant: String,
        source: Box<SimError>,
    },
}

impl From<MachineError> for SimError {
    fn from(e: MachineError) -> Self {
        SimError::Machine(Box::new(e))
    }
}

impl From<FioError> for SimError {
    fn from(e: FioError) -> Self {
        SimError::Fio(Box::new(e))
    }
}

/// `file:line: `, `file: ` or nothing.
fn at(file: &str, line: Option<usize>) -> String {
    match (file.is_empty(), line) {
        (true, _) => String::new(),
        (false, Some(l)) => format!("{file}:{l}: "),
        (false, None) => format!("{file}: "),
    }
}

/// A setup error from a message: the constructor the event loop's setup code
/// (`world.rs`, `fsys.rs`) uses, written `SimError(msg)` as when `SimError` was a
/// tuple struct. It lives in the value namespace beside the enum.
#[allow(non_snake_case)]
pub(crate) fn SimError(msg: String) -> SimError {
    SimError::Setup(msg)
}

impl SimError {
    /// The same error, as part of one variant of an experiment.
    pub fn in_variant(self, experiment: &str, variant: &str) -> SimError {
        SimError::Variant {
            experiment: experiment.to_string(),
            variant: variant.to_string(),
            source: Box::new(self),
        }
    }

    /// File, line and option (or key, field) the error names, where it has them.
    pub fn location(&self) -> (Option<&str>, Option<usize>, Option<&str>) {
        match self {
            SimError::Machine(e) => (e.file.as_deref(), e.line, e.key.as_deref()),
            SimError::Fio(e) => (
                Some(e.file.to_str().unwrap_or("")),
                (e.line > 0).then_some(e.line),
                e.option.as_deref(),
            ),
            SimError::Dd(e) => (None, None, Some(e.operand.as_str())),
            SimError::Iozone(e) => (None, None, Some(e.option.as_str())),
            SimError::FsMark(e) => (None, None, Some(e.option.as_str())),
            SimError::Bonnie(e) => (None, None, Some(e.option.as_str())),
            SimError::Experiment {
                file, line, field, ..
            } => (Some(file), *line, field.as_deref()),
            SimError::Job {
                file, line, option, ..
            } => (Some(file), *line, option.as_deref()),
            SimError::Tunable {
                file,
                line,
                assignment,
                ..
            } => (file.as_deref(), *line, Some(assignment)),
            SimError::Size {
                file, line, input, ..
            } => (file.as_deref(), *line, Some(input)),
            SimError::Variant { source, .. } => source.location(),
            SimError::Profile(_)
            | SimError::Scheduler(_)
            | SimError::Setup(_)
            | SimError::Run(_) => (None, None, None),
        }
    }
}
