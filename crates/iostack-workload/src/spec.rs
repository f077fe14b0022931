//! Resolved, typed jobs.

use std::path::PathBuf;

use crate::error::{ErrorKind, FioError};
use crate::jobfile::{OptionEntry, Section};
use crate::state::{split_names, BsSplit, OptState, Scalar, ZoneSplit};

/// A value per I/O direction (fio's read, write, trim).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PerDir<T> {
    /// Reads.
    pub read: T,
    /// Writes.
    pub write: T,
    /// Trims (discards).
    pub trim: T,
}

impl<T: Copy> PerDir<T> {
    fn from_array(a: [T; 3]) -> Self {
        PerDir {
            read: a[0],
            write: a[1],
            trim: a[2],
        }
    }
}

/// The `rw=` pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RwKind {
    /// `read`: sequential reads.
    Read,
    /// `write`: sequential writes.
    Write,
    /// `trim`: sequential trims.
    Trim,
    /// `randread`.
    RandRead,
    /// `randwrite`.
    RandWrite,
    /// `randtrim`.
    RandTrim,
    /// `rw` / `readwrite`: sequential mixed reads and writes.
    ReadWrite,
    /// `randrw`: random mixed reads and writes.
    RandRw,
    /// `trimwrite`: sequential trims each followed by a write of the same block.
    TrimWrite,
    /// `randtrimwrite`.
    RandTrimWrite,
}

impl RwKind {
    /// Parse fio's value (`readwrite` is `rw`).
    pub fn from_fio(s: &str) -> Option<RwKind> {
        Some(match s {
            "read" => RwKind::Read,
            "write" => RwKind::Write,
            "trim" => RwKind::Trim,
            "randread" => RwKind::RandRead,
            "randwrite" => RwKind::RandWrite,
            "randtrim" => RwKind::RandTrim,
            "rw" | "readwrite" => RwKind::ReadWrite,
            "randrw" => RwKind::RandRw,
            "trimwrite" => RwKind::TrimWrite,
            "randtrimwrite" => RwKind::RandTrimWrite,
            _ => return None,
        })
    }

    /// fio's canonical spelling (as printed in `rw=` of the normal output).
    pub fn as_str(self) -> &'static str {
        match self {
            RwKind::Read => "read",
            RwKind::Write => "write",
            RwKind::Trim => "trim",
            RwKind::RandRead => "randread",
            RwKind::RandWrite => "randwrite",
            RwKind::RandTrim => "randtrim",
            RwKind::ReadWrite => "rw",
            RwKind::RandRw => "randrw",
            RwKind::TrimWrite => "trimwrite",
            RwKind::RandTrimWrite => "randtrimwrite",
        }
    }

    /// Random offsets.
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwKind::RandRead
                | RwKind::RandWrite
                | RwKind::RandTrim
                | RwKind::RandRw
                | RwKind::RandTrimWrite
        )
    }

    /// Sequential offsets.
    pub fn is_sequential(self) -> bool {
        !self.is_random()
    }

    /// Issues reads.
    pub fn reads(self) -> bool {
        matches!(
            self,
            RwKind::Read | RwKind::RandRead | RwKind::ReadWrite | RwKind::RandRw
        )
    }

    /// Issues writes.
    pub fn writes(self) -> bool {
        matches!(
            self,
            RwKind::Write
                | RwKind::RandWrite
                | RwKind::ReadWrite
                | RwKind::RandRw
                | RwKind::TrimWrite
                | RwKind::RandTrimWrite
        )
    }

    /// Issues trims.
    pub fn trims(self) -> bool {
        matches!(
            self,
            RwKind::Trim | RwKind::RandTrim | RwKind::TrimWrite | RwKind::RandTrimWrite
        )
    }

    /// Mixes two directions.
    pub fn is_mixed(self) -> bool {
        matches!(
            self,
            RwKind::ReadWrite | RwKind::RandRw | RwKind::TrimWrite | RwKind::RandTrimWrite
        )
    }
}

/// The `:<n>` suffix of `rw=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RwModifier {
    /// Sequential patterns: bytes added to the offset after every I/O (a hole);
    /// negative values walk backwards (`rw=read:-8k`).
    SeqAdd(i64),
    /// Random patterns: number of I/Os issued per new random offset.
    RandomRun(u32),
}

/// `rw=` with its modifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RwMode {
    /// Pattern.
    pub kind: RwKind,
    /// `:<n>` modifier, if given.
    pub modifier: Option<RwModifier>,
}

/// `rw_sequencer=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RwSequencer {
    /// New offsets between runs come from the usual generator (default).
    Sequential,
    /// Runs repeat the same offset.
    Identical,
}

/// The I/O engines iostack simulates (the Debian fio 3.33 build supports them all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoEngine {
    /// read/write + lseek.
    Sync,
    /// pread/pwrite (fio's default on Linux).
    Psync,
    /// readv/writev.
    Vsync,
    /// preadv/pwritev.
    Pvsync,
    /// preadv2/pwritev2.
    Pvsync2,
    /// Linux native AIO.
    Libaio,
    /// io_uring.
    IoUring,
    /// POSIX AIO.
    Posixaio,
    /// mmap + memcpy.
    Mmap,
    /// No data transfer.
    Null,
}

impl IoEngine {
    /// Parse fio's engine name.
    pub fn from_fio(s: &str) -> Option<IoEngine> {
        Some(match s {
            "sync" => IoEngine::Sync,
            "psync" => IoEngine::Psync,
            "vsync" => IoEngine::Vsync,
            "pvsync" => IoEngine::Pvsync,
            "pvsync2" => IoEngine::Pvsync2,
            "libaio" => IoEngine::Libaio,
            "io_uring" => IoEngine::IoUring,
            "posixaio" => IoEngine::Posixaio,
            "mmap" => IoEngine::Mmap,
            "null" => IoEngine::Null,
            _ => return None,
        })
    }

    /// fio's name.
    pub fn as_str(self) -> &'static str {
        match self {
            IoEngine::Sync => "sync",
            IoEngine::Psync => "psync",
            IoEngine::Vsync => "vsync",
            IoEngine::Pvsync => "pvsync",
            IoEngine::Pvsync2 => "pvsync2",
            IoEngine::Libaio => "libaio",
            IoEngine::IoUring => "io_uring",
            IoEngine::Posixaio => "posixaio",
            IoEngine::Mmap => "mmap",
            IoEngine::Null => "null",
        }
    }

    /// Whether the engine completes each I/O before submitting the next
    /// (`iodepth` has no effect).
    pub fn is_sync(self) -> bool {
        !matches!(
            self,
            IoEngine::Libaio | IoEngine::IoUring | IoEngine::Posixaio | IoEngine::Null
        )
    }
}

/// A size-like value: bytes, a percentage of the file or device, or zones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Amount {
    /// Bytes.
    Bytes(u64),
    /// Percent (0-100) of the existing file or device.
    Percent(u32),
    /// Number of zones (`Nz`).
    Zones(u64),
}

impl Amount {
    fn from_scalar(s: Scalar) -> Amount {
        match s {
            Scalar::Int(v) => Amount::Bytes(v.clamp(0, i128::from(u64::MAX)) as u64),
            Scalar::Percent(p) => Amount::Percent(p as u32),
            Scalar::Zone(z) => Amount::Zones(z),
        }
    }

    /// Bytes, if this is a byte count.
    pub fn bytes(self) -> Option<u64> {
        match self {
            Amount::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

/// `sync=`: O_SYNC / O_DSYNC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncMode {
    /// Neither (default; `none` or `0`).
    None,
    /// O_SYNC (`sync` or `1`).
    Sync,
    /// O_DSYNC (`dsync`).
    Dsync,
}

/// `fadvise_hint=`: the `posix_fadvise` advice fio gives at open
/// (`td_io_open_file`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FadviseHint {
    /// `0`: no advice.
    None,
    /// `1` (default): `POSIX_FADV_RANDOM` for random jobs, else
    /// `POSIX_FADV_SEQUENTIAL` (fio's `F_ADV_TYPE`).
    Type,
    /// `random`: `POSIX_FADV_RANDOM`.
    Random,
    /// `sequential`: `POSIX_FADV_SEQUENTIAL`.
    Sequential,
}

/// `fallocate=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fallocate {
    /// `none` / `0`.
    None,
    /// `native` (default).
    Native,
    /// `posix` / `1`.
    Posix,
    /// `keep` (FALLOC_FL_KEEP_SIZE).
    Keep,
    /// `truncate`.
    Truncate,
}

/// `random_generator=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RandomGenerator {
    /// Default.
    Tausworthe,
    /// Never repeats an offset.
    Lfsr,
    /// 64-bit Tausworthe.
    Tausworthe64,
}

/// `random_distribution=`.
#[derive(Debug, Clone, PartialEq)]
pub enum RandomDistribution {
    /// Uniform (default).
    Random,
    /// Zipf with theta; center -1 when not given.
    Zipf {
        /// Theta.
        theta: f64,
        /// Center (0..1) or -1.
        center: f64,
    },
    /// Pareto with h.
    Pareto {
        /// Shape.
        h: f64,
        /// Center (0..1) or -1.
        center: f64,
    },
    /// Normal (Gauss) with deviation in percent.
    Normal {
        /// Deviation (percent).
        dev: f64,
        /// Center (0..1) or -1.
        center: f64,
    },
    /// `zoned:` access/size percentages per direction.
    Zoned(PerDir<Vec<ZoneSplit>>),
    /// `zoned_abs:` access percentages with absolute zone sizes per direction.
    ZonedAbs(PerDir<Vec<ZoneSplit>>),
}

/// A resolved job (one non-global section, with the globals above it applied).
/// `numjobs` clones are not expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// Job name: the `name=` option if the job sets it, else the section name.
    pub name: String,
    /// Section name.
    pub section: String,
    /// File of the section header.
    pub file: PathBuf,
    /// Line of the section header.
    pub line: usize,
    /// `description=`.
    pub description: Option<String>,
    /// Reporting group (fio's `groupid`): starts at 0, incremented by `stonewall` or
    /// `new_group` after a previous job.
    pub group_id: u32,
    /// `numjobs=` (clones; default 1).
    pub numjobs: u32,
    /// `rw=`.
    pub rw: RwMode,
    /// `rw_sequencer=`.
    pub rw_sequencer: RwSequencer,
    /// Mixed workload percentage of reads (`rwmixread`, or 100 - `rwmixwrite`).
    pub rwmix_read: u32,
    /// Mixed workload percentage of writes.
    pub rwmix_write: u32,
    /// `bs=` per direction (default 4096).
    pub bs: PerDir<u64>,
    /// Effective minimum block size per direction (`bsrange`, `bssplit`, else `bs`).
    pub min_bs: PerDir<u64>,
    /// Effective maximum block size per direction.
    pub max_bs: PerDir<u64>,
    /// `bssplit=` per direction (empty when not used), sorted by percentage.
    pub bssplit: PerDir<Vec<BsSplit>>,
    /// `blockalign=` per direction (defaults to `min_bs`; only random I/O may differ).
    pub blockalign: PerDir<u64>,
    /// `bs_unaligned`.
    pub bs_unaligned: bool,
    /// `size=` (None: use the existing file or device size).
    pub size: Option<Amount>,
    /// `io_size=` (None: same as size).
    pub io_size: Option<Amount>,
    /// `filesize=` as (low, high); None when not set.
    pub filesize: Option<(u64, u64)>,
    /// `offset=`.
    pub offset: Amount,
    /// `offset_increment=`.
    pub offset_increment: Amount,
    /// `nrfiles=` (or the number of `filename=` entries).
    pub nrfiles: u32,
    /// `openfiles=` (0: all).
    pub openfiles: u32,
    /// `filename=` as written (last one set), if any.
    pub filename: Option<String>,
    /// Explicit files (from `filename=`, `:`-split, `\:` unescaped, with the
    /// `directory=` that was current prefixed). Empty when fio generates names.
    pub files: Vec<String>,
    /// `directory=`.
    pub directory: Option<String>,
    /// `filename_format=`.
    pub filename_format: String,
    /// `ioengine=`.
    pub ioengine: IoEngine,
    /// `iodepth=`.
    pub iodepth: u32,
    /// `iodepth_batch_submit=` (0: same as iodepth).
    pub iodepth_batch: u32,
    /// `iodepth_batch_complete_min=`.
    pub iodepth_batch_complete_min: u32,
    /// `iodepth_batch_complete_max=` (0: same as min).
    pub iodepth_batch_complete_max: u32,
    /// `iodepth_low=` (0: same as iodepth).
    pub iodepth_low: u32,
    /// O_DIRECT (`direct=1` or `buffered=0`).
    pub direct: bool,
    /// `sync=`.
    pub sync: SyncMode,
    /// `fsync=N`: fsync after every N writes (0: never).
    pub fsync: u32,
    /// `fdatasync=N`.
    pub fdatasync: u32,
    /// `end_fsync`.
    pub end_fsync: bool,
    /// `fsync_on_close`.
    pub fsync_on_close: bool,
    /// `runtime=` in ns (0: unlimited).
    pub runtime_ns: u64,
    /// `time_based`.
    pub time_based: bool,
    /// `ramp_time=` in ns.
    pub ramp_time_ns: u64,
    /// `startdelay=` in ns (low end of the range).
    pub startdelay_ns: u64,
    /// `startdelay=` high end in ns (equal to low unless a range was given).
    pub startdelay_high_ns: u64,
    /// `thinktime=` in ns.
    pub thinktime_ns: u64,
    /// `thinktime_spin=` in ns.
    pub thinktime_spin_ns: u64,
    /// `thinktime_blocks=`.
    pub thinktime_blocks: u32,
    /// `numa_cpu_nodes=` as written.
    pub numa_cpu_nodes: Option<String>,
    /// `numa_mem_policy=` as written.
    pub numa_mem_policy: Option<String>,
    /// `flow_id=`.
    pub flow_id: u32,
    /// `flow=` (the job's weight in its flow; 0: no flow control).
    pub flow: u32,
    /// `flow_sleep=` in µs.
    pub flow_sleep_us: u64,
    /// `thinktime_blocks_type=issue` (default `complete`).
    pub thinktime_blocks_issue: bool,
    /// `rate_process=poisson` (default `linear`).
    pub rate_poisson: bool,
    /// `io_submit_mode=offload` (default `inline`).
    pub submit_offload: bool,
    /// `rate=` in bytes/s per direction (0: unlimited).
    pub rate: PerDir<u64>,
    /// `rate_iops=` per direction.
    pub rate_iops: PerDir<u64>,
    /// `rate_min=` in bytes/s per direction (0: none).
    pub ratemin: PerDir<u64>,
    /// `rate_iops_min=` per direction (0: none).
    pub rate_iops_min: PerDir<u64>,
    /// `rate_cycle=` in ms.
    pub ratecycle_ms: u64,
    /// `exitall_on_error`.
    pub exitall_error: bool,
    /// `loops=`.
    pub loops: u32,
    /// `number_ios=` (0: no limit).
    pub number_ios: u64,
    /// `thread`.
    pub thread: bool,
    /// `group_reporting`.
    pub group_reporting: bool,
    /// `stonewall` / `wait_for_previous`.
    pub stonewall: bool,
    /// `new_group`.
    pub new_group: bool,
    /// `wait_for=`.
    pub wait_for: Option<String>,
    /// `exitall`.
    pub exitall: bool,
    /// `exit_what=` (`group`, `stonewall`, `all`).
    pub exit_what: String,
    /// `create_on_open`.
    pub create_on_open: bool,
    /// `overwrite` (fio forces it on for jobs that read).
    pub overwrite: bool,
    /// `invalidate` (default true).
    pub invalidate: bool,
    /// `fadvise_hint=`.
    pub fadvise_hint: FadviseHint,
    /// `allow_file_create` (default true).
    pub allow_file_create: bool,
    /// `unlink`.
    pub unlink: bool,
    /// `fallocate=`.
    pub fallocate: Fallocate,
    /// `randrepeat` (default true).
    pub randrepeat: bool,
    /// `randseed=` if set.
    pub randseed: Option<u64>,
    /// `norandommap`.
    pub norandommap: bool,
    /// `random_generator=`.
    pub random_generator: RandomGenerator,
    /// `random_distribution=`.
    pub random_distribution: RandomDistribution,
    /// `percentage_random=` per direction (default 100).
    pub perc_random: PerDir<u32>,
    /// `file_service_type=` value as fio names it (`roundrobin`, `random`, ...).
    pub file_service_type: String,
    /// Its `:N` (`td->file_service_nr`, default 1).
    pub file_service_nr: u32,
    /// `kb_base=` (1024 or 1000).
    pub kb_base: u32,
    /// `unit_base=` (0 auto, 8 bytes, 1 bits).
    pub unit_base: u32,
    /// `prio=` (0-7) if set.
    pub prio: Option<u32>,
    /// `prioclass=` (0-3) if set.
    pub prioclass: Option<u32>,
    /// `nice=`.
    pub nice: i32,
    /// `cpus_allowed=` as written.
    pub cpus_allowed: Option<String>,
    /// `write_iolog=`.
    pub write_iolog: Option<String>,
    /// `read_iolog=`.
    pub read_iolog: Option<String>,
    /// The `replay_*` options of `read_iolog`.
    pub replay: crate::iolog::ReplayOptions,
    /// `zero_buffers`.
    pub zero_buffers: bool,
    /// `refill_buffers`.
    pub refill_buffers: bool,
    /// `scramble_buffers` (default true).
    pub scramble_buffers: bool,
    /// `verify=` method (None for `0`).
    pub verify: Option<String>,
    /// `zonemode=` (`none`, `strided`, `zbd`).
    pub zone_mode: String,
    /// `zonesize`, `zonerange` (0: unset).
    pub zone_size: u64,
    /// `zonerange` (0: unset).
    pub zone_range: u64,
    /// `zoneskip`: bytes, or zones (`Nz`).
    pub zone_skip: Amount,
    /// `do_verify` (default true): the read-back after the writes.
    pub do_verify: bool,
    /// `verify_only`: the writes are a dry run, only the reads issued.
    pub verify_only: bool,
    /// `verify_backlog` (0: none) and `verify_backlog_batch` (0: the backlog).
    pub verify_backlog: u64,
    /// `verify_backlog_batch` (0: the backlog).
    pub verify_batch: u64,
    /// `experimental_verify`.
    pub experimental_verify: bool,
    /// `write_bw_log`: Some(prefix) when enabled ("" when bare).
    pub write_bw_log: Option<String>,
    /// `write_lat_log`.
    pub write_lat_log: Option<String>,
    /// `write_iops_log`.
    pub write_iops_log: Option<String>,
    /// `write_hist_log`.
    pub write_hist_log: Option<String>,
    /// `log_hist_msec` (0: no histogram entries).
    pub log_hist_msec: u32,
    /// `log_hist_coarseness` (bins merged 2^N at a time).
    pub log_hist_coarseness: u32,
    /// `log_max_value`: averaged log entries carry the window's maximum.
    pub log_max: bool,
    /// `log_prio`: the logs' last column is the I/O's priority value.
    pub log_prio: bool,
    /// `log_avg_msec=`.
    pub log_avg_msec: u32,
    /// `per_job_logs` (default true).
    pub per_job_logs: bool,
    /// `bwavgtime=` and `iopsavgtime=` when set (fio's default window is 500 ms).
    pub bw_avg_time: Option<u32>,
    /// `iopsavgtime=` when set.
    pub iops_avg_time: Option<u32>,
    /// `log_offset`: logs carry each I/O's offset.
    pub log_offset: bool,
    /// `bs_is_seq_rand`.
    pub bs_is_seq_rand: bool,
    /// `significant_figures=` (default 4).
    pub sig_figs: u32,
    /// `slat_percentiles`.
    pub slat_percentiles: bool,
    /// `disable_clat`.
    pub disable_clat: bool,
    /// `disable_slat`.
    pub disable_slat: bool,
    /// `lat_percentiles`.
    pub lat_percentiles: bool,
    /// `clat_percentiles` (default true).
    pub clat_percentiles: bool,
    /// `percentile_list=`.
    pub percentile_list: Vec<f64>,
    /// Digits printed after the point of a percentile (most digits after a
    /// '.' in `percentile_list`; 0 when not set).
    pub percentile_precision: u32,
    /// `gtod_reduce`.
    pub gtod_reduce: bool,
    /// `disable_lat` (also set by gtod_reduce).
    pub disable_lat: bool,
    /// `disable_bw_measurement` (also set by gtod_reduce).
    pub disable_bw: bool,
    /// The job's own options, in file order, as written.
    pub options: Vec<OptionEntry>,
    /// How many of [`crate::JobFile::global_options`] were in effect for this job
    /// (global sections apply only to the jobs below them).
    pub global_options_applied: usize,
}

impl JobSpec {
    /// The value of one of the job's own options (as expanded), by canonical name;
    /// the last assignment wins. `Some(None)` for a bare option.
    pub fn option(&self, name: &str) -> Option<Option<&str>> {
        self.options
            .iter()
            .rev()
            .find(|e| e.name == name)
            .map(|e| e.expanded.as_deref())
    }

    /// File names clone `clone` (0-based) of this job uses: the explicit `files`, or
    /// the names fio generates (`filename_format`, default
    /// `$jobname.$jobnum.$filenum`, under `directory`).
    pub fn file_names(&self, clone: u32) -> Vec<String> {
        if !self.files.is_empty() {
            return self.files.clone();
        }
        let dir = self.directory.as_deref().map(|d| {
            let dirs = split_names(d);
            if dirs.is_empty() {
                String::new()
            } else {
                format!("{}/", dirs[clone as usize % dirs.len()])
            }
        });
        (0..self.nrfiles.max(1))
            .map(|f| {
                let name = expand_format(&self.filename_format, &self.section, clone, f);
                format!("{}{}", dir.as_deref().unwrap_or(""), name)
            })
            .collect()
    }
}

fn replace_ci(s: &str, kw: &str, val: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::new();
    let mut last = 0;
    let mut from = 0;
    while let Some(i) = lower[from..].find(kw) {
        let i = from + i;
        out.push_str(&s[last..i]);
        out.push_str(val);
        last = i + kw.len();
        from = last;
    }
    out.push_str(&s[last..]);
    out
}

fn expand_format(fmt: &str, jobname: &str, jobnum: u32, filenum: u32) -> String {
    if fmt.is_empty() {
        return format!("{jobname}.{jobnum}.{filenum}");
    }
    let s = replace_ci(fmt, "$jobname", jobname);
    let s = replace_ci(&s, "$jobnum", &jobnum.to_string());
    let s = replace_ci(&s, "$filenum", &filenum.to_string());
    replace_ci(&s, "$clientuid", "0")
}

fn u32c(v: i128) -> u32 {
    v.clamp(0, i128::from(u32::MAX)) as u32
}

fn u64c(v: i128) -> u64 {
    v.clamp(0, i128::from(u64::MAX)) as u64
}

fn ns(us: i128) -> u64 {
    u64c(us).saturating_mul(1000)
}

/// Build the typed job from the option state (with the parts of fio's
/// `fixup_options` that change values: block-size ranges, alignment, overwrite...).
pub(crate) fn build_job(
    st: &OptState,
    section: &Section,
    globals: usize,
) -> Result<JobSpec, FioError> {
    let kind = RwKind::from_fio(st.choice("td_ddir").unwrap_or("read")).unwrap_or(RwKind::Read);
    let modifier = match st.text("td_ddir").and_then(|t| t.find(':')) {
        None => None,
        Some(_) if kind.is_random() => Some(RwModifier::RandomRun(u32c(st.int("ddir_seq_nr")))),
        Some(_) => Some(RwModifier::SeqAdd(
            st.int("ddir_seq_add")
                .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
        )),
    };
    let ioengine = IoEngine::from_fio(st.ioengine()).ok_or_else(|| {
        FioError::new(
            &section.file,
            section.line,
            ErrorKind::EngineNotLoadable,
            crate::options::engine_not_loadable(st.ioengine()),
        )
    })?;
    let bs = st.num("bs").map(|s| u64c(s.int()));
    let ranges = st.ranges.get("min_bs").copied().unwrap_or([(0, 0); 3]);
    let mut min_bs = [0u64; 3];
    let mut max_bs = [0u64; 3];
    for d in 0..3 {
        min_bs[d] = if ranges[d].0 == 0 { bs[d] } else { ranges[d].0 };
        max_bs[d] = if ranges[d].1 == 0 { bs[d] } else { ranges[d].1 };
    }
    let ba_raw = st.num("ba").map(|s| u64c(s.int()));
    let mut ba = [0u64; 3];
    for d in 0..3 {
        ba[d] = if ba_raw[d] == 0 || !kind.is_random() || !st.set.contains("ba") {
            min_bs[d]
        } else {
            ba_raw[d]
        };
    }
    let rwmix = st.num("rwmix");
    let size = st
        .set
        .contains("size")
        .then(|| Amount::from_scalar(st.num("size")[0]));
    let io_size = st
        .set
        .contains("io_size")
        .then(|| Amount::from_scalar(st.num("io_size")[0]));
    let fs = st.num("file_size_low");
    let filesize = st
        .set
        .contains("filesize")
        .then(|| (u64c(fs[0].int()), u64c(fs[1].int().max(fs[0].int()))));
    let sd = st.num("start_delay");
    let dist = match st.choice("random_distribution").unwrap_or("random") {
        "zipf" => RandomDistribution::Zipf {
            theta: st.dist_params.0,
            center: st.dist_params.1,
        },
        "pareto" => RandomDistribution::Pareto {
            h: st.dist_params.0,
            center: st.dist_params.1,
        },
        "normal" => RandomDistribution::Normal {
            dev: st.dist_params.0,
            center: st.dist_params.1,
        },
        "zoned" => RandomDistribution::Zoned(PerDir {
            read: st.zones[0].clone(),
            write: st.zones[1].clone(),
            trim: st.zones[2].clone(),
        }),
        "zoned_abs" => RandomDistribution::ZonedAbs(PerDir {
            read: st.zones[0].clone(),
            write: st.zones[1].clone(),
            trim: st.zones[2].clone(),
        }),
        _ => RandomDistribution::Random,
    };
    let log = |flag: &str, field: &str| -> Option<String> {
        st.flag(flag)
            .then(|| st.text(field).unwrap_or("").to_string())
    };
    let name = section
        .options
        .iter()
        .rev()
        .find(|e| e.name == "name")
        .and_then(|e| e.expanded.clone())
        .unwrap_or_else(|| section.name.clone());
    Ok(JobSpec {
        name,
        section: section.name.clone(),
        file: section.file.clone(),
        line: section.line,
        description: st.text("description").map(str::to_string),
        group_id: 0,
        numjobs: u32c(st.int("numjobs")),
        rw: RwMode { kind, modifier },
        rw_sequencer: if st.choice("rw_seq") == Some("identical") {
            RwSequencer::Identical
        } else {
            RwSequencer::Sequential
        },
        rwmix_read: u32c(rwmix[0].int()),
        rwmix_write: u32c(rwmix[1].int()),
        bs: PerDir::from_array(bs),
        min_bs: PerDir::from_array(min_bs),
        max_bs: PerDir::from_array(max_bs),
        bssplit: PerDir {
            read: st.bssplit[0].clone(),
            write: st.bssplit[1].clone(),
            trim: st.bssplit[2].clone(),
        },
        blockalign: PerDir::from_array(ba),
        bs_unaligned: st.flag("bs_unaligned"),
        size,
        io_size,
        filesize,
        offset: Amount::from_scalar(st.num("start_offset")[0]),
        offset_increment: Amount::from_scalar(st.num("offset_increment")[0]),
        nrfiles: u32c(st.int("nr_files")),
        openfiles: u32c(st.int("open_files")),
        filename: st.text("filename").map(str::to_string),
        files: st.files.clone(),
        directory: st.text("directory").map(str::to_string),
        filename_format: st.text("filename_format").unwrap_or("").to_string(),
        ioengine,
        iodepth: u32c(st.int("iodepth")),
        iodepth_batch: u32c(st.int("iodepth_batch")),
        iodepth_batch_complete_min: u32c(st.int("iodepth_batch_complete_min")),
        iodepth_batch_complete_max: u32c(st.int("iodepth_batch_complete_max")),
        iodepth_low: u32c(st.int("iodepth_low")),
        direct: st.flag("odirect"),
        sync: match st.choice("sync_io") {
            Some("sync" | "1") => SyncMode::Sync,
            Some("dsync") => SyncMode::Dsync,
            _ => SyncMode::None,
        },
        fsync: u32c(st.int("fsync_blocks")),
        fdatasync: u32c(st.int("fdatasync_blocks")),
        end_fsync: st.flag("end_fsync"),
        fsync_on_close: st.flag("fsync_on_close"),
        runtime_ns: ns(st.int("timeout")),
        time_based: st.flag("time_based"),
        ramp_time_ns: ns(st.int("ramp_time")),
        startdelay_ns: ns(sd[0].int()),
        startdelay_high_ns: ns(sd[1].int().max(sd[0].int())),
        thinktime_ns: ns(st.int("thinktime")),
        thinktime_spin_ns: ns(st.int("thinktime_spin")),
        thinktime_blocks: u32c(st.int("thinktime_blocks")),
        numa_cpu_nodes: st.text("numa_cpunodes").map(str::to_string),
        numa_mem_policy: st.text("numa_memnodes").map(str::to_string),
        flow_id: u32c(st.int("flow_id")),
        flow: u32c(st.int("flow")),
        flow_sleep_us: u64c(st.int("flow_sleep")),
        thinktime_blocks_issue: st.choice("thinktime_blocks_type") == Some("issue"),
        rate_poisson: st.choice("rate_process") == Some("poisson"),
        submit_offload: st.choice("io_submit_mode") == Some("offload"),
        rate: PerDir::from_array(st.num("rate").map(|s| u64c(s.int()))),
        rate_iops: PerDir::from_array(st.num("rate_iops").map(|s| u64c(s.int()))),
        ratemin: PerDir::from_array(st.num("ratemin").map(|s| u64c(s.int()))),
        rate_iops_min: PerDir::from_array(st.num("rate_iops_min").map(|s| u64c(s.int()))),
        ratecycle_ms: u64c(st.int("ratecycle")),
        exitall_error: st.flag("exitall_error"),
        loops: u32c(st.int("loops")),
        number_ios: u64c(st.int("number_ios")),
        thread: st.flag("use_thread"),
        group_reporting: st.flag("group_reporting"),
        stonewall: st.flag("stonewall"),
        new_group: st.flag("new_group"),
        wait_for: st.text("wait_for").map(str::to_string),
        exitall: st.flag("exitall"),
        exit_what: st.choice("exit_what").unwrap_or("group").to_string(),
        create_on_open: st.flag("create_on_open"),
        overwrite: st.flag("overwrite") || kind.reads(),
        invalidate: st.flag("invalidate_cache"),
        fadvise_hint: match st.choice("fadvise_hint") {
            Some("0") => FadviseHint::None,
            Some("random") => FadviseHint::Random,
            Some("sequential") => FadviseHint::Sequential,
            _ => FadviseHint::Type,
        },
        allow_file_create: st.flag("allow_create"),
        unlink: st.flag("unlink"),
        fallocate: match st.choice("fallocate_mode") {
            Some("none" | "0") => Fallocate::None,
            Some("posix" | "1") => Fallocate::Posix,
            Some("keep") => Fallocate::Keep,
            Some("truncate") => Fallocate::Truncate,
            _ => Fallocate::Native,
        },
        randrepeat: st.flag("rand_repeatable") && !st.set.contains("randseed"),
        randseed: st
            .set
            .contains("randseed")
            .then(|| u64c(st.int("rand_seed"))),
        norandommap: st.flag("norandommap")
            || st
                .choice("random_distribution")
                .is_some_and(|d| d != "random"),
        random_generator: match st.choice("random_generator") {
            Some("lfsr") => RandomGenerator::Lfsr,
            Some("tausworthe64") => RandomGenerator::Tausworthe64,
            _ => RandomGenerator::Tausworthe,
        },
        random_distribution: dist,
        perc_random: PerDir::from_array(st.num("perc_rand").map(|s| u32c(s.int()))),
        file_service_type: st
            .choice("file_service_type")
            .unwrap_or("roundrobin")
            .to_string(),
        file_service_nr: st.fst_nr,
        kb_base: st.kb_base(),
        unit_base: st
            .choice("unit_base")
            .and_then(|u| u.parse().ok())
            .unwrap_or(0),
        prio: st.set.contains("prio").then(|| u32c(st.int("ioprio"))),
        prioclass: st
            .set
            .contains("prioclass")
            .then(|| u32c(st.int("ioprio_class"))),
        nice: st.int("nice").clamp(-20, 19) as i32,
        cpus_allowed: st
            .set
            .contains("cpus_allowed")
            .then(|| st.text("cpumask").unwrap_or("").to_string()),
        write_iolog: st.text("write_iolog_file").map(str::to_string),
        read_iolog: st.text("read_iolog_file").map(str::to_string),
        replay: crate::iolog::ReplayOptions {
            no_stall: st.flag("no_stall"),
            time_scale: u64c(st.int("replay_time_scale")).max(1),
            scale: u64c(st.int("replay_scale")),
            align: u64c(st.int("replay_align")),
            redirect: st.text("replay_redirect").map(str::to_string),
            skip: crate::iolog::ReplayOptions::skip_of(st.text("replay_skip").unwrap_or("")),
        },
        zero_buffers: st.flag("zero_buffers"),
        refill_buffers: st.flag("refill_buffers"),
        scramble_buffers: st.flag("scramble_buffers"),
        verify: match st.choice("verify") {
            None | Some("0") => None,
            Some(v) => Some(v.to_string()),
        },
        zone_mode: st.choice("zone_mode").unwrap_or("none").to_string(),
        zone_size: u64c(st.int("zone_size")),
        zone_range: u64c(st.int("zone_range")),
        zone_skip: Amount::from_scalar(st.num("zone_skip")[0]),
        do_verify: st.flag("do_verify"),
        verify_only: st.flag("verify_only"),
        verify_backlog: u64c(st.int("verify_backlog")),
        verify_batch: u64c(st.int("verify_batch")),
        experimental_verify: st.flag("experimental_verify"),
        write_bw_log: log("write_bw_log", "bw_log_file"),
        write_lat_log: log("write_lat_log", "lat_log_file"),
        write_iops_log: log("write_iops_log", "iops_log_file"),
        write_hist_log: log("write_hist_log", "hist_log_file"),
        log_hist_msec: u32c(st.int("log_hist_msec")),
        log_hist_coarseness: u32c(st.int("log_hist_coarseness")),
        log_max: st.flag("log_max"),
        log_prio: st.flag("log_prio"),
        log_avg_msec: u32c(st.int("log_avg_msec")),
        per_job_logs: st.flag("per_job_logs"),
        bw_avg_time: st
            .set
            .contains("bwavgtime")
            .then(|| u32c(st.int("bw_avg_time"))),
        iops_avg_time: st
            .set
            .contains("iopsavgtime")
            .then(|| u32c(st.int("iops_avg_time"))),
        log_offset: st.flag("log_offset"),
        bs_is_seq_rand: st.flag("bs_is_seq_rand"),
        sig_figs: u32c(st.int("sig_figs")),
        slat_percentiles: st.flag("slat_percentiles"),
        disable_clat: st.flag("disable_clat"),
        disable_slat: st.flag("disable_slat"),
        lat_percentiles: st.flag("lat_percentiles"),
        clat_percentiles: st.flag("clat_percentiles"),
        percentile_list: st
            .floats
            .get("percentile_list")
            .cloned()
            .unwrap_or_default(),
        percentile_precision: u32c(st.int("percentile_precision")),
        gtod_reduce: st.flag("gtod_reduce"),
        disable_lat: st.flag("disable_lat"),
        disable_bw: st.flag("disable_bw"),
        options: section.options.clone(),
        global_options_applied: globals,
    })
}
