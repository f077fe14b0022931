//! fio's `write_lat_log`, `write_bw_log` and `write_iops_log` files, streamed as
//! the I/Os complete (fio 3.33 `init.c` `add_job`/`gen_log_name`, `stat.c`
//! `add_log_sample`/`__add_stat_to_log`/`finalize_logs`, `iolog.c`
//! `flush_samples`/`flush_log`).
//!
//! Names are `PREFIX_TYPE.N.log` (`N` fio's thread number, counted over all
//! jobs from 1) or `PREFIX_TYPE.log` with `per_job_logs=0`, where jobs append
//! to one file (fio opens it with `"a"` at each job's end; here each job
//! streams to a part file that is appended when the run ends, in the order
//! fio writes: per-I/O logs as jobs exit, averaged bandwidth/IOPS logs in job
//! order). Lines are `time, value, ddir, bs, prio` (`time, value, ddir, bs,
//! offset, prio` with `log_offset`), time in ms since the job started; with
//! `log_avg_msec` the latency logs carry one mean per window and direction,
//! and the bandwidth/IOPS logs fio's periodic samples, with `bs` and `offset`
//! 0. The files are fio's format only: the seed and configuration hash are in
//! the run's report.

use iostack_report::fio::{
    per_io_bw, plat_val_to_idx, Ddir, IoStat, RateEntry, FIO_IO_U_PLAT_NR, LOG_MSEC_SLACK,
};
use iostack_sim::frontend::{JobMeta, LogMeta};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// What a log records (`IO_LOG_TYPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Lat,
    Slat,
    Clat,
    Bw,
    Iops,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Lat => "lat",
            Kind::Slat => "slat",
            Kind::Clat => "clat",
            Kind::Bw => "bw",
            Kind::Iops => "iops",
        }
    }

    /// fio's `inline_log`: latency logs average inside the window only.
    fn inline(self) -> bool {
        matches!(self, Kind::Lat | Kind::Slat | Kind::Clat)
    }
}

/// One completed I/O as the logs see it.
pub struct LogIo {
    pub ddir: Ddir,
    pub bytes: u64,
    pub offset: u64,
    pub slat_ns: Option<u64>,
    pub clat_ns: u64,
    pub lat_ns: u64,
    /// Completion, ms since the job started (fio's `mtime_since_now(&td->epoch)`).
    pub at_ms: u64,
}

/// One open log file of one job.
struct Log {
    kind: Kind,
    /// The file fio names.
    path: PathBuf,
    /// Where this job writes: `path`, or a part file appended to it at the end.
    part: Option<PathBuf>,
    out: BufWriter<File>,
    avg_msec: u64,
    /// `log_max_value`: a window's entry is its maximum, not its mean.
    max: bool,
    offset: bool,
    prio: u32,
    /// `log_prio`: the priority column in hex (`0x%04x`).
    prio_hex: bool,
    /// fio's `avg_window` and `avg_last` per direction.
    window: [IoStat; 3],
    last: [u64; 3],
}

impl Log {
    fn line(
        &mut self,
        t: u64,
        val: u64,
        ddir: Ddir,
        bs: u64,
        offset: u64,
        prio: u32,
    ) -> std::io::Result<()> {
        let d = ddir as usize;
        let prio = if self.prio_hex {
            format!("{prio:#06x}")
        } else {
            prio.to_string()
        };
        if self.offset {
            writeln!(self.out, "{t}, {val}, {d}, {bs}, {offset}, {prio}")
        } else {
            writeln!(self.out, "{t}, {val}, {d}, {bs}, {prio}")
        }
    }

    /// `__add_stat_to_log`: the window's mean, rounded, then a fresh window.
    fn flush_window(&mut self, ddir: Ddir, t: u64) -> std::io::Result<()> {
        let w = std::mem::take(&mut self.window[ddir as usize]);
        if w.samples == 0 {
            return Ok(());
        }
        // fio's __add_stat_to_log: the window's max_val with log_max,
        // else data.val = mean + 0.50 (converted to an integer).
        let val = if self.max {
            w.max_val
        } else {
            (w.mean + 0.50) as u64
        };
        self.line(t, val, ddir, 0, 0, 0)
    }

    /// fio's `add_log_sample`.
    fn sample(
        &mut self,
        t: u64,
        val: u64,
        ddir: Ddir,
        bs: u64,
        offset: u64,
    ) -> std::io::Result<()> {
        if self.avg_msec == 0 {
            let prio = self.prio;
            return self.line(t, val, ddir, bs, offset, prio);
        }
        let d = ddir as usize;
        self.window[d].add_sample(val);
        if t < self.last[d] {
            return Ok(());
        }
        let this_window = t - self.last[d];
        if this_window < self.avg_msec {
            let diff = self.avg_msec - this_window;
            if self.kind.inline() || diff > LOG_MSEC_SLACK {
                return Ok(());
            }
        }
        self.flush_window(ddir, t)?;
        self.last[d] = t - t % self.avg_msec;
        Ok(())
    }
}

/// fio's `write_hist_log` file (`clat_hist`): every `log_hist_msec`, the
/// completion-latency histogram of the window (fio's `add_clat_sample`
/// copies the job's cumulative `io_u_plat`; `flush_hist_samples` writes
/// each copy less the one before it), as `time, ddir, bs, bins...`, the
/// bins summed `2^log_hist_coarseness` at a time.
struct HistLog {
    path: PathBuf,
    part: Option<PathBuf>,
    out: BufWriter<File>,
    msec: u64,
    stride: usize,
    /// Per direction: the cumulative histogram, the last one logged, and
    /// fio's `hist_last`.
    plat: [Vec<u64>; 3],
    before: [Vec<u64>; 3],
    last: [u64; 3],
    /// `clat_percentiles`: fio fills `io_u_plat` only then (the entries are
    /// zeros otherwise); `disable_clat`: no `add_clat_sample`, no entry.
    fill: bool,
    off: bool,
}

impl HistLog {
    /// One clat sample of `ns` at `t` ms, of an I/O of `bs` bytes.
    fn sample(&mut self, t: u64, ns: u64, ddir: Ddir, bs: u64) -> std::io::Result<()> {
        let d = ddir as usize;
        if self.off {
            return Ok(());
        }
        if self.fill {
            self.plat[d][plat_val_to_idx(ns)] += 1;
        }
        if self.msec == 0 {
            return Ok(());
        }
        if self.last[d] == 0 {
            self.last[d] = t;
        }
        let this_window = t.saturating_sub(self.last[d]);
        if this_window < self.msec {
            return Ok(());
        }
        let (now, before) = (&self.plat[d], &self.before[d]);
        let sum = |j: usize| -> u64 { (j..j + self.stride).map(|k| now[k] - before[k]).sum() };
        let mut line = format!("{t}, {d}, {bs}, ");
        let last = FIO_IO_U_PLAT_NR - self.stride;
        let mut j = 0;
        while j < last {
            line.push_str(&format!("{}, ", sum(j)));
            j += self.stride;
        }
        writeln!(self.out, "{line}{}", sum(last))?;
        self.before[d] = self.plat[d].clone();
        self.last[d] = t - (this_window - self.msec);
        Ok(())
    }
}

/// The logs of one job (one fio thread).
pub struct JobLogs {
    logs: Vec<Log>,
    hist: Option<HistLog>,
    /// `disable_bw_measurement`: no per-I/O bandwidth sample (fio's
    /// `account_io_completion` skips `add_bw_sample`).
    no_bw: bool,
    /// The first write error, reported when the run ends.
    error: Option<String>,
}

fn open(path: &PathBuf, append: bool) -> Result<File, String> {
    let mut o = OpenOptions::new();
    o.create(true);
    if append {
        o.append(true);
    } else {
        o.write(true).truncate(true);
    }
    o.open(path).map_err(|e| format!("{}: {e}", path.display()))
}

impl JobLogs {
    /// Opens the files of job `m`, fio's thread number `number` (from 1).
    /// `None` when the job writes no log.
    pub fn open(m: &JobMeta, number: u32) -> Result<Option<JobLogs>, String> {
        let l = &m.logs;
        let mut kinds = Vec::new();
        if let Some(p) = &l.lat {
            for (k, off) in [(Kind::Lat, 0), (Kind::Slat, 2), (Kind::Clat, 1)] {
                if !l.disable[off] {
                    kinds.push((k, p.clone()));
                }
            }
        }
        if let Some(p) = &l.bw {
            kinds.push((Kind::Bw, p.clone()));
        }
        if let Some(p) = &l.iops {
            kinds.push((Kind::Iops, p.clone()));
        }
        let hist = match &l.hist {
            Some(p) => Some(Self::open_hist(m, p, number)?),
            None => None,
        };
        if kinds.is_empty() && hist.is_none() {
            return Ok(None);
        }
        let mut logs = Vec::new();
        for (kind, prefix) in kinds {
            logs.push(Self::open_one(l, kind, &prefix, number)?);
        }
        Ok(Some(JobLogs {
            logs,
            hist,
            no_bw: m.disable[3],
            error: None,
        }))
    }

    /// fio's `gen_log_name`: `PREFIX_KIND.N.log`, or one file the jobs
    /// append to (`per_job_logs=0`), streamed to a part file here.
    fn names(l: &LogMeta, kind: &str, prefix: &str, number: u32) -> (PathBuf, Option<PathBuf>) {
        if l.per_job {
            (PathBuf::from(format!("{prefix}_{kind}.{number}.log")), None)
        } else {
            let path = PathBuf::from(format!("{prefix}_{kind}.log"));
            let part = PathBuf::from(format!("{}.iostack-part.{number}", path.display()));
            (path, Some(part))
        }
    }

    fn open_hist(m: &JobMeta, prefix: &str, number: u32) -> Result<HistLog, String> {
        let l = &m.logs;
        let (path, part) = Self::names(l, "clat_hist", prefix, number);
        let file = open(part.as_ref().unwrap_or(&path), false)?;
        Ok(HistLog {
            path,
            part,
            out: BufWriter::new(file),
            msec: u64::from(l.hist_msec),
            // Checked by the front end: at most FIO_IO_U_PLAT_NR.
            stride: 1usize << l.hist_coarseness.min(10),
            plat: std::array::from_fn(|_| vec![0; FIO_IO_U_PLAT_NR]),
            before: std::array::from_fn(|_| vec![0; FIO_IO_U_PLAT_NR]),
            last: [0; 3],
            fill: m.clat_percentiles,
            off: m.disable[1],
        })
    }

    fn open_one(l: &LogMeta, kind: Kind, prefix: &str, number: u32) -> Result<Log, String> {
        let (path, part) = Self::names(l, kind.name(), prefix, number);
        let file = open(part.as_ref().unwrap_or(&path), false)?;
        Ok(Log {
            kind,
            path,
            part,
            out: BufWriter::new(file),
            avg_msec: u64::from(match kind {
                Kind::Bw => l.bw_avg,
                Kind::Iops => l.iops_avg,
                _ => l.avg_msec,
            }),
            max: l.log_max,
            offset: l.offset,
            prio: l.prio_value.unwrap_or(u32::from(l.prio_rt)),
            prio_hex: l.prio_value.is_some(),
            window: Default::default(),
            last: [0; 3],
        })
    }

    /// Whether the bandwidth and IOPS logs take one entry per I/O (fio's
    /// `per_unit_log`), which also makes the report's statistics per I/O.
    pub fn per_io(m: &JobMeta) -> [bool; 2] {
        let l = &m.logs;
        [
            l.bw.is_some() && l.bw_avg == 0,
            l.iops.is_some() && l.iops_avg == 0,
        ]
    }

    fn keep(&mut self, r: std::io::Result<()>) {
        if let (Err(e), None) = (r, &self.error) {
            self.error = Some(e.to_string());
        }
    }

    /// fio's `account_io_completion`: the latency samples, and the per-I/O
    /// bandwidth and IOPS samples of logs without `log_avg_msec`.
    pub fn io(&mut self, io: &LogIo) {
        for i in 0..self.logs.len() {
            let l = &mut self.logs[i];
            let val = match l.kind {
                Kind::Lat => io.lat_ns,
                Kind::Clat => io.clat_ns,
                Kind::Slat => match io.slat_ns {
                    Some(s) => s,
                    None => continue,
                },
                Kind::Bw if l.avg_msec == 0 && !self.no_bw => per_io_bw(io.bytes, io.clat_ns),
                Kind::Iops if l.avg_msec == 0 => 1,
                Kind::Bw | Kind::Iops => continue,
            };
            let r = l.sample(io.at_ms, val, io.ddir, io.bytes, io.offset);
            self.keep(r);
        }
        if let Some(h) = &mut self.hist {
            let r = h.sample(io.at_ms, io.clat_ns, io.ddir, io.bytes);
            self.keep(r);
        }
    }

    /// The periodic bandwidth/IOPS samples (`__add_samples`) the report's
    /// sampler committed.
    pub fn windows(&mut self, entries: &[RateEntry]) {
        for e in entries {
            for i in 0..self.logs.len() {
                let l = &mut self.logs[i];
                let val = match (l.kind, e.bw, e.iops) {
                    (Kind::Bw, Some(v), _) | (Kind::Iops, _, Some(v)) if l.avg_msec > 0 => v,
                    _ => continue,
                };
                // __add_stat_to_log logs an averaged entry with bs 0.
                let r = l.sample(e.end_ms, val, e.ddir, 0, 0);
                self.keep(r);
            }
        }
    }

    /// `finalize_logs` at the job's end (`end_ms` since its start), then the
    /// files are flushed. Returns the logs whose part files are still to be
    /// appended (for `per_job_logs=0`).
    pub fn finish(mut self, end_ms: u64) -> Result<Vec<(PathBuf, PathBuf, bool)>, String> {
        for l in &mut self.logs {
            if l.kind.inline() {
                for d in Ddir::ALL {
                    let r = l.flush_window(d, end_ms);
                    if let (Err(e), None) = (r, &self.error) {
                        self.error = Some(e.to_string());
                    }
                }
            }
        }
        let mut parts = Vec::new();
        if let Some(mut h) = self.hist.take() {
            h.out
                .flush()
                .map_err(|e| format!("{}: {e}", h.path.display()))?;
            if let Some(part) = h.part {
                parts.push((part, h.path, true));
            }
        }
        for mut l in self.logs {
            l.out
                .flush()
                .map_err(|e| format!("{}: {e}", l.path.display()))?;
            if let Some(part) = l.part {
                parts.push((part, l.path, l.kind.inline() || l.avg_msec == 0));
            }
        }
        match self.error {
            Some(e) => Err(format!("writing fio logs: {e}")),
            None => Ok(parts),
        }
    }
}

/// Appends the part files of `per_job_logs=0` to their shared log, as fio's
/// `flush_log(log, true)` does, in the order given, and removes them.
pub fn append_parts(parts: &[(PathBuf, PathBuf)]) -> Result<(), String> {
    for (part, path) in parts {
        let mut dst = open(path, true)?;
        let mut src = File::open(part).map_err(|e| format!("{}: {e}", part.display()))?;
        std::io::copy(&mut src, &mut dst).map_err(|e| format!("{}: {e}", path.display()))?;
        std::fs::remove_file(part).map_err(|e| format!("{}: {e}", part.display()))?;
    }
    Ok(())
}
