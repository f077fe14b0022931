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
//! ## Where iostack is deliberately stricter than fio 3.33
//!
//! fio accepts some inputs only because it silently ignores garbage, or because
//! `--parse-only` skips a check that a real run performs. iostack rejects them (the
//! files under `tests/data/stricter/` pin each case against the real fio):
//!
//! * numbers with unknown suffixes or trailing text (`bs=4q` is 4 bytes in fio),
//!   fractional sizes and times (`size=1.5g` is 1 byte), unknown time units
//!   (`runtime=10sec` is 10 µs), `%` on options without percentage semantics;
//! * more values than an option has slots (`numjobs=4,8`, `bs=1k,2k,3k,4k`, a
//!   21-entry `percentile_list`, `size=1m-2m`) and negative values for unsigned
//!   options (`fsync=-1`, `offset=-1`);
//! * I/O engines iostack does not simulate, and unknown engine names (fio only loads
//!   the engine at parse time when an engine-private option is present, so
//!   `ioengine=http` alone passes `--parse-only`);
//! * values fio validates only when the job runs (`rw=randread:4q`,
//!   `replay_skip=foo`, `ignore_error=EFOO`, bad CPU lists, `bssplit` percentages
//!   over 100);
//! * errors fio prints but then loses (an `include` of a missing file or of a file
//!   with a section, a bad second element of a list): fio 3.33 still exits 0.
//!
//! The "did you mean" suggestion also considers aliases and case (`blocksze`
//! suggests `blocksize`, `BS` suggests `bs`); fio 3.33 suggests `block` (a tiobench
//! profile option) for the former and nothing for the latter.
//!
//! # dd
//!
//! [`parse_dd_args`] parses GNU dd 9.1 operands into a [`DdSpec`].
//!
//! # iozone and fs_mark
//!
//! [`parse_iozone_args`] (iozone 3.414) and [`parse_fs_mark_args`] (fs_mark 3.3)
//! read those tools' options into an [`IozoneSpec`] / [`FsMarkSpec`]; errors
//! ([`IozoneError`], [`FsMarkError`]) name the option, in the tool's own words.
//! [`parse_bonnie_args`] reads Bonnie 1.0's options with seed 004's patch
//! (`-o_direct`, `-fast`, 1 MiB `Chunk`) into a [`BonnieSpec`].

#![deny(missing_docs)]

mod bonnie;
mod dd;
mod error;
mod fs_mark;
pub mod iolog;
mod iozone;
mod jobfile;
mod number;
pub mod options;
mod showcmd;
mod spec;
mod state;

pub use bonnie::{parse_bonnie_args, BonnieError, BonnieSpec, BONNIE_CHUNK, BONNIE_USAGE};
pub use dd::{parse_dd_args, parse_dd_command_line, DdConv, DdFlags, DdSpec, DdStatus};
pub use error::{DdError, ErrorKind, FioError};
pub use fs_mark::{parse_fs_mark_args, DirPolicy, FsMarkError, FsMarkSpec, FSMARK_SYNC_STRINGS};
pub use iolog::{parse_iolog, Iolog, IologAction, IologError, IologIo, ReplayOptions};
pub use iozone::{parse_iozone_args, IozoneError, IozoneSpec, IOZONE_TESTS};
pub use jobfile::{
    parse_job_bytes, parse_job_bytes_all, parse_job_file, parse_job_file_all, parse_job_str,
    JobFile, OptionEntry, ParseEnv, Section,
};
pub use number::{
    parse_size, parse_time_ns, size_multiplier, NumberError, TimeUnit, KB_BASE_DEFAULT,
};
pub use options::{OptDef, OptKind, Scope, ValueType};
pub use showcmd::showcmd;
pub use spec::{
    Amount, FadviseHint, Fallocate, IoEngine, JobSpec, PerDir, RandomDistribution, RandomGenerator,
    RwKind, RwMode, RwModifier, RwSequencer, SyncMode,
};
pub use state::{BsSplit, ZoneSplit};
