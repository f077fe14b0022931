//! Workload front ends for iostack: fio job files and GNU dd command lines.
//!
//! # fio
//!
//! [`parse_job_file`] / [`parse_job_str`] read a fio job file the way fio 3.33's
//! `__parse_jobs_ini` does (global sections, `include`, `${ENV}`, `$pagesize`
//! arithmetic, comments, bare booleans, option priorities) and validate every option
//! against a table of fio's real options ([`options::CORE_OPTIONS`], declared once,
//! generated from fio's `options.c`). Unknown or invalid options are errors
//! ([`FioError`], `file:line: ...`), never skipped. The result is a [`JobFile`] with
//! the sections as written, the global options, and the resolved [`JobSpec`]s.
//! [`showcmd`] renders the file like `fio --showcmd`.
//!
//! iostack is stricter than fio in a few places where fio silently ignores garbage
//! (documented in the crate README of the tests): numbers with unknown suffixes
//! (`bs=4q` is 4 bytes in fio), fractional sizes and times (`1.5g` is 1 byte),
//! time units fio does not know (`10sec` is 10 µs), `%` on options that do not take
//! a percentage, several values for a single-valued option, negative values for
//! unsigned options, and I/O engines iostack does not simulate (fio only loads the
//! engine at parse time when an engine-private option is present).
//!
//! # dd
//!
//! [`parse_dd_args`] parses GNU dd 9.1 operands into a [`DdSpec`].

#![deny(missing_docs)]

mod dd;
mod error;
mod jobfile;
mod number;
pub mod options;
mod showcmd;
mod spec;
mod state;

pub use dd::{parse_dd_args, parse_dd_command_line, DdConv, DdFlags, DdSpec, DdStatus};
pub use error::{DdError, ErrorKind, FioError};
pub use jobfile::{
    parse_job_bytes, parse_job_file, parse_job_str, JobFile, OptionEntry, ParseEnv, Section,
};
pub use number::{parse_size, parse_time_ns, size_multiplier, TimeUnit, KB_BASE_DEFAULT};
pub use options::{OptDef, OptKind, Scope, ValueType};
pub use showcmd::showcmd;
pub use spec::{
    Amount, Fallocate, IoEngine, JobSpec, PerDir, RandomDistribution, RandomGenerator, RwKind,
    RwMode, RwModifier, RwSequencer, SyncMode,
};
pub use state::{BsSplit, ZoneSplit};
