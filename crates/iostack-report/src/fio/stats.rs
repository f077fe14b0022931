//! Per-job and per-group statistics as fio 3.33 keeps them (`struct
//! thread_stat`, `struct group_run_stats`), the recorder the simulator feeds,
//! and fio's `group_reporting` reduction (`__show_run_stats`, `sum_thread_stats`).

use super::hist::{IoStat, LatencyHist, DEFAULT_PERCENTILES};

/// Data direction of a read/write/trim I/O (fio's `DDIR_READ/WRITE/TRIM`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ddir {
    Read = 0,
    Write = 1,
    Trim = 2,
}

impl Ddir {
    pub const ALL: [Ddir; 3] = [Ddir::Read, Ddir::Write, Ddir::Trim];

    /// fio's `io_ddir_name`: `read`, `write`, `trim`.
    pub fn name(self) -> &'static str {
        match self {
            Ddir::Read => "read",
            Ddir::Write => "write",
            Ddir::Trim => "trim",
        }
    }
}

/// fio's `unit_base`: report bandwidth in bytes (the default) or bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum UnitBase {
    #[default]
    Bytes,
    Bits,
}

/// Number of I/O depth buckets (`FIO_IO_U_MAP_NR`).
pub const FIO_IO_U_MAP_NR: usize = 7;
/// `FIO_IO_U_LAT_N_NR`, `FIO_IO_U_LAT_U_NR`, `FIO_IO_U_LAT_M_NR`.
pub const FIO_IO_U_LAT_N_NR: usize = 10;
pub const FIO_IO_U_LAT_U_NR: usize = 10;
pub const FIO_IO_U_LAT_M_NR: usize = 12;

/// Default bandwidth/IOPS sampling period (`bw_avg_time`, `iops_avg_time`), ms.
pub const DEFAULT_AVG_MSEC: u64 = 500;
/// fio's `LOG_MSEC_SLACK` on Linux, ms.
pub const LOG_MSEC_SLACK: u64 = 1;

/// Statistics of one data direction of a job (the per-`ddir` parts of fio's
/// `thread_stat`).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct DirStats {
    /// Bytes completed.
    pub io_bytes: u64,
    /// I/Os issued (`total_io_u`).
    pub total_ios: u64,
    pub short_ios: u64,
    pub drop_ios: u64,
    /// Time the job spent doing this direction, ms (`runtime[ddir]`).
    pub runtime_ms: u64,
    /// Submission latency; empty for engines without a separate submit step.
    pub slat: LatencyHist,
    /// Completion latency (issue to completion).
    pub clat: LatencyHist,
    /// Total latency (start of submission to completion).
    pub lat: LatencyHist,
    /// Bandwidth samples, KiB/s, one per `bw_avg_time` window.
    pub bw: IoStat,
    /// IOPS samples, one per `iops_avg_time` window.
    pub iops: IoStat,
}

/// One completed read, write or trim, as the simulator reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoSample {
    pub ddir: Ddir,
    pub bytes: u64,
    /// Submission latency, `None` for synchronous engines (psync, sync, ...),
    /// which have no separate submit step and print no `slat` line.
    pub slat_ns: Option<u64>,
    /// Completion latency: issue to completion.
    pub clat_ns: u64,
    /// Total latency: submission start to completion.
    pub lat_ns: u64,
    /// Issue time, ns since the job's statistics epoch (job start). The
    /// completion time used for the bandwidth windows is `issue_ns + clat_ns`.
    pub issue_ns: u64,
    /// The job's in-flight depth when this I/O was submitted (fio's
    /// `cur_depth`, for the `IO depths` line).
    pub depth: u32,
}

/// Turns completions into fio's periodic bandwidth and IOPS samples:
/// consecutive windows of `avg_msec` from the job start; a window with no
/// completed bytes gives no sample (as fio's `__add_samples`), and a window is
/// only sampled if it closes more than [`LOG_MSEC_SLACK`] before the job ends
/// (so a 2001 ms run gives 3 samples and a 121 ms run none, as fio 3.33 did on
/// the reference runs). Constant memory.
#[derive(Clone, Debug, PartialEq)]
pub struct RateSampler {
    pub avg_msec: u64,
    window: u64,
    bytes: [u64; 3],
    ios: [u64; 3],
    /// The last closed window, held back until we know it ended early enough.
    pending: Option<(u64, [u64; 3], [u64; 3])>,
    /// Bandwidth, IOPS: sampled per I/O instead of per window (a
    /// `write_bw_log`/`write_iops_log` without `log_avg_msec`, fio's
    /// `per_unit_log`: `add_bw_sample`/`add_iops_sample` at each completion,
    /// and `calc_log_samples` skips that statistic).
    pub per_io: [bool; 2],
    /// Bandwidth, IOPS: not sampled by this sampler (another one, with its
    /// own window, does).
    pub skip: [bool; 2],
    /// Keep the committed window samples in `committed` for a log writer.
    pub keep: bool,
    committed: Vec<RateEntry>,
}

/// One committed window sample of one direction: what fio's `__add_samples`
/// hands to `add_log_sample` (bandwidth KiB/s, IOPS) at `end_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateEntry {
    pub end_ms: u64,
    pub ddir: Ddir,
    /// `None` for a statistic this sampler skips.
    pub bw: Option<u64>,
    pub iops: Option<u64>,
}

impl Default for RateSampler {
    fn default() -> Self {
        Self::new(DEFAULT_AVG_MSEC)
    }
}

impl RateSampler {
    pub fn new(avg_msec: u64) -> Self {
        RateSampler {
            avg_msec: avg_msec.max(1),
            window: 0,
            bytes: [0; 3],
            ios: [0; 3],
            pending: None,
            per_io: [false; 2],
            skip: [false; 2],
            keep: false,
            committed: Vec::new(),
        }
    }

    fn avg_ns(&self) -> u64 {
        self.avg_msec * 1_000_000
    }

    fn commit(&mut self, w: u64, bytes: &[u64; 3], ios: &[u64; 3], dirs: &mut [DirStats; 3]) {
        let avg = self.avg_msec;
        for d in 0..3 {
            if bytes[d] == 0 {
                continue;
            }
            // fio: rate = delta * 1000 / spent / 1024 (KiB/s); iops = delta * 1000 / spent.
            let (bw, iops) = (bytes[d] * 1000 / avg / 1024, ios[d] * 1000 / avg);
            let (bw, iops) = (
                (!self.skip[0]).then_some(bw),
                (!self.skip[1]).then_some(iops),
            );
            if let (Some(v), false) = (bw, self.per_io[0]) {
                dirs[d].bw.add_sample(v);
            }
            if let (Some(v), false) = (iops, self.per_io[1]) {
                dirs[d].iops.add_sample(v);
            }
            if self.keep {
                self.committed.push(RateEntry {
                    end_ms: (w + 1) * avg,
                    ddir: Ddir::ALL[d],
                    bw,
                    iops,
                });
            }
        }
    }

    /// The window samples committed since the last call (only kept with `keep`).
    pub fn take_committed(&mut self) -> Vec<RateEntry> {
        std::mem::take(&mut self.committed)
    }

    /// Accounts a completion at `t_ns`. Completions earlier than the open
    /// window are counted in the open window.
    pub fn add(&mut self, ddir: Ddir, bytes: u64, t_ns: u64, dirs: &mut [DirStats; 3]) {
        let w = t_ns / self.avg_ns();
        if w > self.window {
            if let Some((pw, b, i)) = self.pending.take() {
                self.commit(pw, &b, &i, dirs);
            }
            if self.bytes.iter().any(|&b| b != 0) {
                self.pending = Some((self.window, self.bytes, self.ios));
            }
            self.bytes = [0; 3];
            self.ios = [0; 3];
            self.window = w;
        }
        self.bytes[ddir as usize] += bytes;
        self.ios[ddir as usize] += 1;
    }

    /// Ends sampling at `end_ns` (ns since the job start): commits the held
    /// windows that closed more than `LOG_MSEC_SLACK` before the end.
    pub fn finish(&mut self, end_ns: u64, dirs: &mut [DirStats; 3]) {
        let slack = LOG_MSEC_SLACK * 1_000_000;
        let closes_early = |w: u64, avg_ns: u64| (w + 1) * avg_ns + slack < end_ns;
        if let Some((w, b, i)) = self.pending.take() {
            if closes_early(w, self.avg_ns()) {
                self.commit(w, &b, &i, dirs);
            }
        }
        if closes_early(self.window, self.avg_ns()) {
            let (w, b, i) = (self.window, self.bytes, self.ios);
            self.commit(w, &b, &i, dirs);
        }
        self.bytes = [0; 3];
        self.ios = [0; 3];
        self.window = end_ns / self.avg_ns() + 1;
    }
}

/// fio's `add_bw_sample` rate of one I/O: `bytes * 1000000 / spent` with
/// `spent` its completion latency in ns (0 when it took no time).
pub fn per_io_bw(bytes: u64, clat_ns: u64) -> u64 {
    bytes
        .wrapping_mul(1_000_000)
        .checked_div(clat_ns)
        .unwrap_or(0)
}

/// fio's `disable_*` options (see [`JobStats::disable`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Disable {
    pub lat: bool,
    pub clat: bool,
    pub slat: bool,
    pub bw: bool,
}

/// fio's `thread_stat` for one job (or, after [`report_entries`], one
/// reporting entry: a job, or a whole group under `group_reporting`), plus the
/// job's options as written. Fill it with [`JobStats::record_io`] and friends,
/// then set the run times.
#[derive(Clone, Debug, PartialEq)]
pub struct JobStats {
    pub name: String,
    /// `description=`; printed as `Description  : [...]` and JSON `desc`.
    pub description: String,
    pub groupid: u32,
    pub pid: u32,
    /// Jobs folded into this entry (`jobs=N`).
    pub members: u32,
    pub error: i32,
    /// Error text shown as `err=%2d (%s)` when `error != 0`.
    pub verror: String,
    pub group_reporting: bool,
    /// Options of the job section as written, in order (JSON `job options`).
    /// Pairs with an empty value are left out of the JSON, as fio does.
    pub options: Vec<(String, String)>,
    /// Read, write, trim.
    pub dirs: [DirStats; 3],
    /// fsync/fdatasync/sync_file_range latency.
    pub sync: LatencyHist,
    /// Sync operations issued (`total_io_u[DDIR_SYNC]`, 4th of `issued rwts`).
    pub sync_total_ios: u64,
    /// Job run time, ms (`total_run_time`, JSON `job_runtime`).
    pub total_run_time_ms: u64,
    /// CPU time, ms; shown as a percentage of `total_run_time_ms`.
    pub usr_time_ms: u64,
    pub sys_time_ms: u64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    /// I/O depth distribution (`io_u_map`): 1, 2, 4, 8, 16, 32, >=64.
    pub io_u_map: [u64; FIO_IO_U_MAP_NR],
    /// Submission batch sizes: 0, 1-4, 5-8, 9-16, 17-32, 33-64, >64.
    pub io_u_submit: [u64; FIO_IO_U_MAP_NR],
    pub io_u_complete: [u64; FIO_IO_U_MAP_NR],
    pub total_submit: u64,
    pub total_complete: u64,
    /// Completion latency buckets (`lat (nsec|usec|msec)` lines).
    pub io_u_lat_n: [u64; FIO_IO_U_LAT_N_NR],
    pub io_u_lat_u: [u64; FIO_IO_U_LAT_U_NR],
    pub io_u_lat_m: [u64; FIO_IO_U_LAT_M_NR],
    /// `latency   :` line; fio sets the depth to `iodepth`. 0 hides the line.
    pub latency_depth: u32,
    pub latency_target: u64,
    pub latency_percentile: f64,
    pub latency_window: u64,
    pub continue_on_error: bool,
    pub total_err_count: u64,
    pub first_error: i32,
    pub nr_zone_resets: u64,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    /// fio's `disable_lat`, `disable_clat`, `disable_slat` and
    /// `disable_bw_measurement`: `account_io_completion` takes no such
    /// sample (no lat, clat with the `lat (usec)` buckets and sync
    /// latencies, slat; no per-I/O bandwidth sample).
    pub disable: Disable,
    /// `percentile_list` (unsorted is fine) and its print precision (digits
    /// after the point of the longest entry; 2 for the default list).
    pub percentile_list: Vec<f64>,
    pub percentile_precision: u32,
    pub kb_base: u32,
    pub unit_base: UnitBase,
    /// `significant_figures` (default 4).
    pub sig_figs: u32,
    /// Bandwidth/IOPS windowing state.
    pub sampler: RateSampler,
    /// IOPS windows when they differ from the bandwidth's (`iopsavgtime` vs
    /// `bwavgtime`); the main sampler then skips IOPS and this one bandwidth.
    pub iops_sampler: Option<RateSampler>,
}

impl Default for JobStats {
    fn default() -> Self {
        JobStats::new("", 0)
    }
}

impl JobStats {
    /// A job with fio's defaults (percentiles on, default list, kb_base 1024,
    /// 4 significant figures, latency depth 1).
    pub fn new(name: &str, groupid: u32) -> Self {
        JobStats {
            name: name.to_string(),
            description: String::new(),
            groupid,
            pid: 0,
            members: 1,
            error: 0,
            verror: String::new(),
            group_reporting: false,
            options: Vec::new(),
            dirs: Default::default(),
            sync: LatencyHist::new(),
            sync_total_ios: 0,
            total_run_time_ms: 0,
            usr_time_ms: 0,
            sys_time_ms: 0,
            ctx: 0,
            majf: 0,
            minf: 0,
            io_u_map: [0; FIO_IO_U_MAP_NR],
            io_u_submit: [0; FIO_IO_U_MAP_NR],
            io_u_complete: [0; FIO_IO_U_MAP_NR],
            total_submit: 0,
            total_complete: 0,
            io_u_lat_n: [0; FIO_IO_U_LAT_N_NR],
            io_u_lat_u: [0; FIO_IO_U_LAT_U_NR],
            io_u_lat_m: [0; FIO_IO_U_LAT_M_NR],
            latency_depth: 1,
            latency_target: 0,
            latency_percentile: 100.0,
            latency_window: 0,
            continue_on_error: false,
            total_err_count: 0,
            first_error: 0,
            nr_zone_resets: 0,
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            percentile_list: DEFAULT_PERCENTILES.to_vec(),
            percentile_precision: 2,
            kb_base: 1024,
            unit_base: UnitBase::Bytes,
            sig_figs: 4,
            sampler: RateSampler::default(),
            iops_sampler: None,
            disable: Disable::default(),
        }
    }

    /// Statistics of one direction.
    pub fn dir(&self, d: Ddir) -> &DirStats {
        &self.dirs[d as usize]
    }

    pub fn dir_mut(&mut self, d: Ddir) -> &mut DirStats {
        &mut self.dirs[d as usize]
    }

    /// Records one completed read/write/trim: bytes, issued count, the three
    /// latencies, the `lat (usec)` bucket of its clat, its depth, and its
    /// contribution to the bandwidth/IOPS windows.
    pub fn record_io(&mut self, io: &IoSample) {
        let d = &mut self.dirs[io.ddir as usize];
        d.io_bytes += io.bytes;
        d.total_ios += 1;
        let off = self.disable;
        if let (Some(s), false) = (io.slat_ns, off.slat) {
            d.slat.record(s);
        }
        if !off.clat {
            d.clat.record(io.clat_ns);
        }
        if !off.lat {
            d.lat.record(io.lat_ns);
        }
        if !off.clat {
            self.mark_latency(io.clat_ns);
        }
        self.mark_depth(io.depth, 1);
        self.sampler.add(
            io.ddir,
            io.bytes,
            io.issue_ns.saturating_add(io.clat_ns),
            &mut self.dirs,
        );
        if let Some(s) = &mut self.iops_sampler {
            let t = io.issue_ns.saturating_add(io.clat_ns);
            s.add(io.ddir, io.bytes, t, &mut self.dirs);
        }
        let d = &mut self.dirs[io.ddir as usize];
        if self.sampler.per_io[0] && !off.bw {
            d.bw.add_sample(per_io_bw(io.bytes, io.clat_ns));
        }
        if self.sampler.per_io[1] {
            d.iops.add_sample(1);
        }
    }

    /// Records one fsync/fdatasync/sync_file_range issued by the job's
    /// `fsync=N`-style options (not the final `end_fsync`, which fio does not
    /// count): its latency and the depth at submit.
    pub fn record_sync(&mut self, lat_ns: u64, depth: u32) {
        if !self.disable.clat {
            self.sync.record(lat_ns);
        }
        self.sync_total_ios += 1;
        self.mark_depth(depth, 1);
    }

    /// fio's `io_u_mark_depth(td, nr)` with `cur_depth = depth`.
    pub fn mark_depth(&mut self, depth: u32, nr: u64) {
        let idx = match depth {
            0..=1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        };
        self.io_u_map[idx] += nr;
    }

    fn map_idx(nr: u32) -> usize {
        match nr {
            0 => 0,
            1..=4 => 1,
            5..=8 => 2,
            9..=16 => 3,
            17..=32 => 4,
            33..=64 => 5,
            _ => 6,
        }
    }

    /// fio's `io_u_mark_submit`: one submission call of `nr` I/Os. Synchronous
    /// engines make one call of 1 per I/O (sync operations included).
    pub fn mark_submit(&mut self, nr: u32) {
        self.io_u_submit[Self::map_idx(nr)] += 1;
        self.total_submit += 1;
    }

    /// fio's `io_u_mark_complete`: one reaping call that returned `nr` I/Os.
    pub fn mark_complete(&mut self, nr: u32) {
        self.io_u_complete[Self::map_idx(nr)] += 1;
        self.total_complete += 1;
    }

    /// fio's `io_u_mark_latency` on a completion latency.
    pub fn mark_latency(&mut self, nsec: u64) {
        const EDGES: [u64; 9] = [2, 4, 10, 20, 50, 100, 250, 500, 750];
        fn bucket(v: u64) -> usize {
            EDGES.iter().position(|&e| v < e).unwrap_or(9)
        }
        if nsec < 1000 {
            self.io_u_lat_n[bucket(nsec)] += 1;
        } else if nsec < 1_000_000 {
            self.io_u_lat_u[bucket(nsec / 1000)] += 1;
        } else {
            let msec = nsec / 1_000_000;
            let idx = match msec {
                0..=999 => bucket(msec),
                1000..=1999 => 10,
                _ => 11,
            };
            self.io_u_lat_m[idx] += 1;
        }
    }

    /// Ends the bandwidth/IOPS sampling at `end_ns` (ns since the job start,
    /// normally the job's run time).
    pub fn finish_sampling(&mut self, end_ns: u64) {
        let mut s = std::mem::take(&mut self.sampler);
        s.finish(end_ns, &mut self.dirs);
        self.sampler = s;
        if let Some(s) = &mut self.iops_sampler {
            s.finish(end_ns, &mut self.dirs);
        }
    }

    /// Sum of read/write/trim issued I/Os (fio's `ddir_rw_sum(total_io_u)`).
    pub fn rw_total_ios(&self) -> u64 {
        self.dirs.iter().map(|d| d.total_ios).sum()
    }

    /// Sum of read/write/trim bytes.
    pub fn rw_io_bytes(&self) -> u64 {
        self.dirs.iter().map(|d| d.io_bytes).sum()
    }

    /// `usr_cpu`/`sys_cpu` percentages.
    pub fn cpu_percent(&self) -> (f64, f64) {
        if self.total_run_time_ms == 0 {
            return (0.0, 0.0);
        }
        let runt = self.total_run_time_ms as f64;
        (
            self.usr_time_ms as f64 * 100.0 / runt,
            self.sys_time_ms as f64 * 100.0 / runt,
        )
    }

    /// A blank accumulator (fio's `init_thread_stat`).
    fn blank() -> Self {
        let mut t = JobStats::new("", 0);
        t.members = 0;
        t.latency_depth = 0;
        t.latency_percentile = 0.0;
        t
    }

    /// fio's `sum_thread_stats(self, src)` (non-unified reporting).
    pub fn sum_from(&mut self, src: &JobStats) {
        for (d, s) in self.dirs.iter_mut().zip(src.dirs.iter()) {
            d.clat.merge(&s.clat);
            d.slat.merge(&s.slat);
            d.lat.merge(&s.lat);
            d.bw.sum(&s.bw, true);
            d.iops.sum(&s.iops, true);
            d.io_bytes += s.io_bytes;
            d.runtime_ms = d.runtime_ms.max(s.runtime_ms);
            d.total_ios += s.total_ios;
            d.short_ios += s.short_ios;
            d.drop_ios += s.drop_ios;
        }
        self.sync.merge(&src.sync);
        self.usr_time_ms += src.usr_time_ms;
        self.sys_time_ms += src.sys_time_ms;
        self.ctx += src.ctx;
        self.majf += src.majf;
        self.minf += src.minf;
        for k in 0..FIO_IO_U_MAP_NR {
            self.io_u_map[k] += src.io_u_map[k];
            self.io_u_submit[k] += src.io_u_submit[k];
            self.io_u_complete[k] += src.io_u_complete[k];
        }
        for (a, b) in self.io_u_lat_n.iter_mut().zip(src.io_u_lat_n.iter()) {
            *a += b;
        }
        for (a, b) in self.io_u_lat_u.iter_mut().zip(src.io_u_lat_u.iter()) {
            *a += b;
        }
        for (a, b) in self.io_u_lat_m.iter_mut().zip(src.io_u_lat_m.iter()) {
            *a += b;
        }
        self.sync_total_ios += src.sync_total_ios;
        self.total_run_time_ms += src.total_run_time_ms;
        self.total_submit += src.total_submit;
        self.total_complete += src.total_complete;
        self.nr_zone_resets += src.nr_zone_resets;
    }
}

/// The reporting entries fio prints, in order: one per job, except that
/// consecutive jobs of one group with `group_reporting` fold into the first
/// (fio's loop in `__show_run_stats`, quirks included: a `group_reporting` job
/// also folds into a preceding plain job of the same group). Name, pid,
/// description, units and groupid come from the first member; options,
/// percentile settings and latency-target fields from the last.
pub fn report_entries(jobs: &[JobStats]) -> Vec<JobStats> {
    let mut out: Vec<JobStats> = Vec::new();
    let mut last_gid: Option<u32> = None;
    for td in jobs {
        let new_entry = match last_gid {
            None => true,
            Some(g) => !td.group_reporting || g != td.groupid,
        };
        if new_entry {
            let mut ts = JobStats::blank();
            ts.name = td.name.clone();
            ts.description = td.description.clone();
            ts.groupid = td.groupid;
            ts.pid = td.pid;
            ts.kb_base = td.kb_base;
            ts.unit_base = td.unit_base;
            ts.sig_figs = td.sig_figs;
            ts.group_reporting = td.group_reporting;
            out.push(ts);
        }
        last_gid = Some(td.groupid);
        let ts = out.last_mut().expect("entry pushed above");
        ts.clat_percentiles = td.clat_percentiles;
        ts.lat_percentiles = td.lat_percentiles;
        ts.slat_percentiles = td.slat_percentiles;
        ts.percentile_list = td.percentile_list.clone();
        ts.percentile_precision = td.percentile_precision;
        ts.options = td.options.clone();
        ts.continue_on_error = td.continue_on_error;
        ts.total_err_count += td.total_err_count;
        ts.first_error = td.first_error;
        if ts.error == 0 {
            if td.error == 0 && td.continue_on_error && td.first_error != 0 {
                ts.error = td.first_error;
                ts.verror = td.verror.clone();
            } else if td.error != 0 {
                ts.error = td.error;
                ts.verror = td.verror.clone();
            }
        }
        ts.latency_depth = td.latency_depth;
        ts.latency_target = td.latency_target;
        ts.latency_percentile = td.latency_percentile;
        ts.latency_window = td.latency_window;
        ts.sum_from(td);
        ts.members += td.members.max(1);
    }
    out
}

/// fio's `group_run_stats` for one reporting group (`Run status group N`).
/// Bandwidths are bytes/s, run times ms; index by [`Ddir`].
#[derive(Clone, Debug, PartialEq, Default)]
pub struct GroupStats {
    pub groupid: u32,
    pub max_run: [u64; 3],
    pub min_run: [u64; 3],
    pub max_bw: [u64; 3],
    pub min_bw: [u64; 3],
    pub iobytes: [u64; 3],
    /// Aggregate bandwidth: `iobytes * 1000 / max_run`.
    pub agg: [u64; 3],
    pub kb_base: u32,
    pub unit_base: UnitBase,
    pub sig_figs: u32,
}

/// Computes the groups `0..=max groupid` from reporting entries, as fio's
/// `__show_run_stats`. Groups without entries stay empty (fio still prints
/// their header).
pub fn compute_groups(entries: &[JobStats]) -> Vec<GroupStats> {
    let Some(max_gid) = entries.iter().map(|t| t.groupid).max() else {
        return Vec::new();
    };
    let mut groups: Vec<GroupStats> = (0..=max_gid)
        .map(|g| GroupStats {
            groupid: g,
            min_bw: [u64::MAX; 3],
            min_run: [u64::MAX; 3],
            kb_base: 1024,
            sig_figs: 4,
            ..GroupStats::default()
        })
        .collect();
    for ts in entries {
        let rs = &mut groups[ts.groupid as usize];
        rs.kb_base = ts.kb_base;
        rs.unit_base = ts.unit_base;
        rs.sig_figs = ts.sig_figs;
        for j in 0..3 {
            let d = &ts.dirs[j];
            if d.runtime_ms == 0 {
                continue;
            }
            if d.runtime_ms < rs.min_run[j] || rs.min_run[j] == 0 {
                rs.min_run[j] = d.runtime_ms;
            }
            if d.runtime_ms > rs.max_run[j] {
                rs.max_run[j] = d.runtime_ms;
            }
            let bw = d.io_bytes.wrapping_mul(1000) / d.runtime_ms;
            if bw < rs.min_bw[j] {
                rs.min_bw[j] = bw;
            }
            if bw > rs.max_bw[j] {
                rs.max_bw[j] = bw;
            }
            rs.iobytes[j] += d.io_bytes;
        }
    }
    for rs in &mut groups {
        for j in 0..3 {
            if let Some(agg) = rs.iobytes[j].wrapping_mul(1000).checked_div(rs.max_run[j]) {
                rs.agg[j] = agg;
            }
        }
    }
    groups
}
