//! fio 3.33 statistics and printers, fed by the simulator.
//!
//! The simulator fills one [`JobStats`] per job (with [`JobStats::record_io`],
//! [`JobStats::record_sync`], [`JobStats::mark_submit`]/[`JobStats::mark_complete`],
//! then the run times and CPU figures), puts them in a [`FioReport`] with the
//! global options, disk statistics, a fixed timestamp and the run's
//! [`Provenance`], and renders it:
//!
//! * [`render_normal`]: fio 3.33 `--output-format=normal`, byte for byte
//!   (per-job blocks, `Run status group`, `Disk stats`), optionally preceded by
//!   the startup lines ([`Preamble`]).
//! * [`render_json`]: fio 3.33 `--output-format=json` (key names, order, units
//!   and number formats of fio's own JSON printer).
//! * [`render_json_plus`]: `--output-format=json+`, the JSON with the
//!   latency histograms' non-empty buckets (`bins`).
//! * [`render_old`]: the pre-2.17 normal format (`io=`, `bw=`, `runt=`, `aggrb=`).
//!
//! Every rendering carries the seed and configuration hash (first line
//! `iostack: seed=N config=HEX`, or the JSON key `"iostack"` after `"time"`).
//! Dates come from [`FioReport::timestamp_ms`], never from the clock.
//!
//! Statistics follow fio's `stat.c`: the log-linear latency histogram
//! ([`LatencyHist`]), Welford mean/variance, percentiles with fio's 80-bit
//! threshold arithmetic, `group_reporting` folding ([`report_entries`]) and
//! group aggregation ([`compute_groups`]).

mod hist;
mod json;
mod normal;
mod num2str;
mod old;
mod stats;

pub use hist::{
    calc_clat_percentiles, effective_percentile_list, plat_idx_to_val, plat_val_to_idx,
    x87_threshold_reached, IoStat, LatencyHist, DEFAULT_PERCENTILES, FIO_IO_U_LIST_MAX_LEN,
    FIO_IO_U_PLAT_BITS, FIO_IO_U_PLAT_GROUP_NR, FIO_IO_U_PLAT_NR, FIO_IO_U_PLAT_VAL,
};
pub use json::{render_json, render_json_plus};
pub use normal::render_normal;
pub use num2str::{ctime, num2str, num2str_old, N2sUnit};
pub use old::{render_old, OLD_FIO_VERSION};
pub use stats::{
    compute_groups, per_io_bw, report_entries, Ddir, DirStats, Disable, GroupStats, IoSample,
    JobStats, RateEntry, RateSampler, UnitBase, DEFAULT_AVG_MSEC, FIO_IO_U_LAT_M_NR,
    FIO_IO_U_LAT_N_NR, FIO_IO_U_LAT_U_NR, FIO_IO_U_MAP_NR, LOG_MSEC_SLACK,
};

/// The fio version the printers imitate.
pub const FIO_VERSION: &str = "fio-3.33";

/// Seed and configuration hash of the simulation that produced a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Provenance {
    pub seed: u64,
    /// Printed as 16 lower-case hex digits.
    pub config_hash: u64,
}

impl Provenance {
    /// Provenance from the seed and the configuration's canonical bytes
    /// (hashed with FNV-1a 64, as elsewhere in iostack).
    pub fn of(seed: u64, config: &[u8]) -> Self {
        Provenance {
            seed,
            config_hash: iostack_des::fnv1a64(config),
        }
    }

    /// The hash as printed.
    pub fn config_hex(&self) -> String {
        format!("{:016x}", self.config_hash)
    }

    /// `iostack: seed=N config=HEX`.
    pub fn line(&self) -> String {
        format!("iostack: seed={} config={}", self.seed, self.config_hex())
    }
}

/// Averages over the member devices of an md/dm device (fio's
/// `disk_util_agg`, already divided by the member count).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct DiskUtilAggr {
    pub ios: [u64; 2],
    pub merges: [u64; 2],
    pub ticks: [u64; 2],
    pub in_queue: u64,
    /// Highest member utilisation, percent.
    pub util: f64,
}

/// One device of `Disk stats (read/write)` / JSON `disk_util`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct DiskUtil {
    pub name: String,
    /// Read, write.
    pub ios: [u64; 2],
    pub merges: [u64; 2],
    /// ms.
    pub ticks: [u64; 2],
    /// ms.
    pub in_queue: u64,
    /// Percent busy.
    pub util: f64,
    pub aggr: Option<DiskUtilAggr>,
}

impl DiskUtil {
    /// fio's utilisation: `100 * io_ticks / msec`, capped at 100, 0 if `msec == 0`.
    pub fn util_percent(io_ticks_ms: u64, msec: u64) -> f64 {
        if msec == 0 {
            return 0.0;
        }
        (100.0 * io_ticks_ms as f64 / msec as f64).min(100.0)
    }
}

/// One `NAME: (g=G): rw=..., bs=..., ioengine=..., iodepth=D` startup line.
#[derive(Clone, Debug, PartialEq)]
pub struct JobHeader {
    pub name: String,
    pub groupid: u32,
    /// As fio's `ddir_str`: `read`, `randwrite`, `rw`, `randrw`, ...
    pub rw: String,
    /// Minimum and maximum block size per direction (read, write, trim), bytes.
    pub bs_min: [u64; 3],
    pub bs_max: [u64; 3],
    pub bs_is_seq_rand: bool,
    pub ioengine: String,
    pub iodepth: u32,
    /// 0 for a job's first instance (full line), 1 for the first clone (`...`),
    /// 2+ for later clones (nothing printed).
    pub clone_index: u32,
    pub kb_base: u32,
    pub sig_figs: u32,
}

impl JobHeader {
    /// A header with default units (kb_base 1024, 4 significant figures).
    pub fn new(name: &str, groupid: u32, rw: &str, bs: u64, ioengine: &str, iodepth: u32) -> Self {
        JobHeader {
            name: name.to_string(),
            groupid,
            rw: rw.to_string(),
            bs_min: [bs; 3],
            bs_max: [bs; 3],
            bs_is_seq_rand: false,
            ioengine: ioengine.to_string(),
            iodepth,
            clone_index: 0,
            kb_base: 1024,
            sig_figs: 4,
        }
    }
}

/// `NAME: Laying out IO file (N file / SIZEMiB)`.
#[derive(Clone, Debug, PartialEq)]
pub struct LayoutLine {
    pub name: String,
    pub files: u32,
    /// Bytes written to extend the files.
    pub extend_bytes: u64,
}

/// What fio prints before running in normal mode: the job lines, the version,
/// `Starting N processes`, and file layout lines. (The ETA line is only
/// printed on a terminal and is never rendered.)
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Preamble {
    pub jobs: Vec<JobHeader>,
    pub processes: u32,
    pub threads: u32,
    pub layouts: Vec<LayoutLine>,
}

/// A complete fio run report.
#[derive(Clone, Debug, PartialEq)]
pub struct FioReport {
    /// `fio-3.33`.
    pub fio_version: String,
    /// Report time, ms since the Unix epoch, supplied by the simulator (a fixed
    /// epoch). Source of `timestamp`, `timestamp_ms`, `time` and the
    /// `pid=..: DATE` of each job.
    pub timestamp_ms: u64,
    pub provenance: Provenance,
    /// `[global]` options as written, in order (JSON `global options`).
    pub global_options: Vec<(String, String)>,
    /// Jobs in job-file order (clones included); see [`report_entries`].
    pub jobs: Vec<JobStats>,
    pub disks: Vec<DiskUtil>,
    /// JSON `eta` and `elapsed` (seconds), the same for every job.
    pub eta_sec: u64,
    pub elapsed_sec: u64,
    pub preamble: Option<Preamble>,
    /// Set when the simulation was cut short by a limit the user set: why, and
    /// which jobs had not finished. Printed after the provenance line (JSON:
    /// `"truncated"` inside `"iostack"`).
    pub truncated: Option<String>,
}

impl Default for FioReport {
    fn default() -> Self {
        FioReport {
            fio_version: FIO_VERSION.to_string(),
            timestamp_ms: 0,
            provenance: Provenance::default(),
            global_options: Vec::new(),
            jobs: Vec::new(),
            disks: Vec::new(),
            eta_sec: 0,
            elapsed_sec: 0,
            preamble: None,
            truncated: None,
        }
    }
}

impl FioReport {
    pub fn new(provenance: Provenance, timestamp_ms: u64) -> Self {
        FioReport {
            provenance,
            timestamp_ms,
            ..FioReport::default()
        }
    }

    /// The provenance line, and the truncation line when there is one.
    pub(crate) fn head_lines(&self) -> String {
        let mut s = self.provenance.line();
        s.push('\n');
        if let Some(t) = &self.truncated {
            s.push_str(&format!("iostack: TRUNCATED: {t}\n"));
        }
        s
    }

    /// The entries fio reports (jobs, or groups under `group_reporting`).
    pub fn entries(&self) -> Vec<JobStats> {
        report_entries(&self.jobs)
    }

    /// The `Run status group` statistics, indexed by group id.
    pub fn groups(&self) -> Vec<GroupStats> {
        compute_groups(&self.entries())
    }

    /// Seconds since the epoch (`timestamp`).
    pub fn timestamp_sec(&self) -> u64 {
        self.timestamp_ms / 1000
    }

    /// `Sat Nov 21 15:19:51 2026` (UTC).
    pub fn time_string(&self) -> String {
        ctime(self.timestamp_sec() as i64)
    }
}
