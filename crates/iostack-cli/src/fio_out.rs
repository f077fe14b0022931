//! fio reports from a run: an `IoObserver` feeds fio's statistics per job as I/Os
//! complete (constant memory), and the report crate renders them.

use crate::fio_logs::{JobLogs, LogIo};
use iostack_des::Seed;
use iostack_report::fio::{
    render_json, render_json_plus, render_normal, render_old, DiskUtil, FioReport, IoSample,
    JobStats, Provenance,
};
use iostack_report::fio::{JobHeader, LayoutLine, Preamble, RateSampler};
use iostack_sim::frontend::JobMeta;
use iostack_sim::stats::RunResult;
use iostack_sim::workload::Dir;
use iostack_sim::{IoEvent, IoObserver};
use std::path::PathBuf;

/// The fixed epoch printed as fio's timestamps (simulated runs have no wall clock):
/// 2026-11-21 00:00:00 UTC.
pub const EPOCH_MS: u64 = 1_795_219_200_000;

pub struct FioObserver {
    pub jobs: Vec<Option<JobStats>>,
    sync_engine: Vec<bool>,
    /// The preamble's job lines and thread/process counts.
    preamble: Preamble,
    /// Each job's `write_*_log` files.
    logs: Vec<Option<JobLogs>>,
}

fn header(m: &JobMeta) -> JobHeader {
    JobHeader {
        bs_min: m.min_bs,
        bs_max: m.max_bs,
        bs_is_seq_rand: m.bs_is_seq_rand,
        clone_index: m.clone,
        kb_base: m.kb_base,
        sig_figs: m.sig_figs,
        ..JobHeader::new(&m.name, m.group, &m.rw, 0, &m.ioengine, m.iodepth)
    }
}

fn job_stats(m: &JobMeta) -> JobStats {
    let mut j = JobStats::new(&m.name, m.group);
    j.options = m.options.clone();
    j.group_reporting = m.group_reporting;
    j.latency_depth = m.iodepth;
    j.kb_base = m.kb_base;
    j.sig_figs = m.sig_figs;
    j.clat_percentiles = m.clat_percentiles;
    j.lat_percentiles = m.lat_percentiles;
    j.slat_percentiles = m.slat_percentiles;
    let [lat, clat, slat, bw] = m.disable;
    j.disable = iostack_report::fio::Disable {
        lat,
        clat,
        slat,
        bw,
    };
    if !m.percentile_list.is_empty() {
        j.percentile_list = m.percentile_list.clone();
        j.percentile_precision = m.percentile_precision;
    }
    if m.unit_bits {
        j.unit_base = iostack_report::fio::UnitBase::Bits;
    }
    let per_io = JobLogs::per_io(m);
    let l = &m.logs;
    let keep = (l.bw.is_some() && l.bw_avg > 0) || (l.iops.is_some() && l.iops_avg > 0);
    let sampler = |avg: u32, skip: [bool; 2]| {
        let mut s = RateSampler::new(u64::from(avg));
        s.per_io = per_io;
        s.skip = skip;
        s.keep = keep;
        s
    };
    // init.c add_job: each statistic's window (bwavgtime, iopsavgtime, or the
    // log's log_avg_msec); two samplers when they differ.
    if m.bw_avg_msec == m.iops_avg_msec {
        j.sampler = sampler(m.bw_avg_msec, [false; 2]);
    } else {
        j.sampler = sampler(m.bw_avg_msec, [false, true]);
        j.iops_sampler = Some(sampler(m.iops_avg_msec, [true, false]));
    }
    j
}

impl FioObserver {
    /// The observer of jobs `meta` (`None` for processes that are not fio
    /// jobs); opens the jobs' log files.
    pub fn new(meta: &[Option<JobMeta>]) -> Result<Self, String> {
        let mut preamble = Preamble::default();
        let mut logs = Vec::new();
        let mut number = 0u32;
        for m in meta {
            let Some(m) = m else {
                logs.push(None);
                continue;
            };
            number += 1;
            preamble.jobs.push(header(m));
            if m.thread {
                preamble.threads += 1;
            } else {
                preamble.processes += 1;
            }
            logs.push(JobLogs::open(m, number)?);
        }
        Ok(FioObserver {
            jobs: meta.iter().map(|m| m.as_ref().map(job_stats)).collect(),
            sync_engine: meta
                .iter()
                .map(|m| m.as_ref().is_none_or(|m| m.sync_engine))
                .collect(),
            preamble,
            logs,
        })
    }

    /// Ends the logs: each job's last windows at its end, then the shared
    /// files of `per_job_logs=0` in fio's order.
    pub fn finish_logs(&mut self, result: &RunResult) -> Result<(), String> {
        let mut unit = Vec::new();
        let mut averaged = Vec::new();
        for (i, l) in self.logs.iter_mut().enumerate() {
            let (Some(l), Some(p)) = (l.take(), result.procs.get(i)) else {
                continue;
            };
            let end = p.runtime().as_ns();
            for (part, path, per_unit) in l.finish(end / 1_000_000)? {
                if per_unit {
                    unit.push((p.end, i, part, path));
                } else {
                    averaged.push((part, path));
                }
            }
        }
        // Per-I/O logs are written as each job exits, the averaged ones after
        // all jobs, in job order.
        unit.sort_by_key(|u| (u.0, u.1));
        let mut parts: Vec<(PathBuf, PathBuf)> = unit.into_iter().map(|u| (u.2, u.3)).collect();
        parts.extend(averaged);
        crate::fio_logs::append_parts(&parts)
    }
}

impl IoObserver for FioObserver {
    fn io_done(&mut self, i: usize, io: &IoEvent) {
        let Some(j) = self.jobs.get_mut(i).and_then(|j| j.as_mut()) else {
            return;
        };
        let sync = self.sync_engine[i];
        let ddir = match io.dir {
            Dir::Read => iostack_report::fio::Ddir::Read,
            Dir::Write => iostack_report::fio::Ddir::Write,
        };
        // fio's clat for synchronous engines runs from issue to completion; with a
        // separate submit step it starts when the submission returned.
        let (slat, clat) = if sync {
            (None, io.lat_ns)
        } else {
            (Some(io.slat_ns), io.clat_ns)
        };
        j.record_io(&IoSample {
            ddir,
            bytes: io.bytes,
            slat_ns: slat,
            clat_ns: clat,
            lat_ns: io.lat_ns,
            issue_ns: io.at_ns - clat,
            depth: io.depth,
        });
        j.mark_submit(1);
        j.mark_complete(1);
        if let Some(Some(l)) = self.logs.get_mut(i) {
            l.io(&LogIo {
                ddir,
                bytes: io.bytes,
                offset: io.offset,
                slat_ns: slat,
                clat_ns: clat,
                lat_ns: io.lat_ns,
                at_ms: io.at_ns / 1_000_000,
            });
            l.windows(&j.sampler.take_committed());
            if let Some(s) = &mut j.iops_sampler {
                l.windows(&s.take_committed());
            }
        }
    }

    /// fio's sync io_u (`DDIR_SYNC`): its latency in the `sync` section, one
    /// more in `issued rwts`' fourth total, submitted at depth 1 (a sync
    /// engine waits for it; fio drains the queue before issuing it).
    fn sync_done(&mut self, i: usize, lat_ns: u64) {
        if let Some(j) = self.jobs.get_mut(i).and_then(|j| j.as_mut()) {
            j.record_sync(lat_ns, 1);
            j.mark_submit(1);
            j.mark_complete(1);
        }
    }
}

/// fio's report for `result` with the observer's statistics.
pub fn build(
    result: &RunResult,
    obs: &mut FioObserver,
    global_options: Vec<(String, String)>,
    disk_name: &str,
    seed: Seed,
    hash: u64,
) -> FioReport {
    let mut report = FioReport::new(
        Provenance {
            seed: seed.0,
            config_hash: hash,
        },
        EPOCH_MS,
    );
    report.global_options = global_options;
    if result.ending.is_truncated() {
        report.truncated = Some(result.ending.to_string());
    }
    let mut layouts = Vec::new();
    let jobs = std::mem::take(&mut obs.jobs);
    for (i, (p, j)) in result.procs.iter().zip(jobs).enumerate() {
        let Some(mut j) = j else { continue };
        let run_ns = p.runtime().as_ns();
        j.pid = p.pid;
        j.total_run_time_ms = run_ns / 1_000_000;
        // fio's getrusage: system time from the CPU the model charged to the
        // task; user time (fio's own loop) is not modelled and stays 0.
        j.sys_time_ms = p.sys_ns / 1_000_000;
        j.ctx = p.ctx;
        for (i, d) in p.dirs.iter().enumerate() {
            if d.ios > 0 {
                let dd = if i == 0 {
                    iostack_report::fio::Ddir::Read
                } else {
                    iostack_report::fio::Ddir::Write
                };
                // fio's update_runtime per direction: with verify, the writes
                // up to the verify phase, its reads after.
                let ns = match p.verify_start {
                    Some(v) if i == 1 => v.since(p.start).as_ns(),
                    Some(v) => p.end.since(v).as_ns(),
                    None => run_ns,
                };
                j.dir_mut(dd).runtime_ms = (ns / 1_000_000).max(1);
            }
        }
        if let Some(e) = &p.error {
            j.error = 5; // EIO
            j.verror = e.clone();
        }
        j.finish_sampling(run_ns);
        if let Some(Some(l)) = obs.logs.get_mut(i) {
            l.windows(&j.sampler.take_committed());
            if let Some(s) = &mut j.iops_sampler {
                l.windows(&s.take_committed());
            }
        }
        if let Some(bytes) = p.laid_out {
            layouts.push(LayoutLine {
                name: j.name.clone(),
                files: 1,
                extend_bytes: bytes,
            });
        }
        report.jobs.push(j);
    }
    obs.preamble.layouts = layouts;
    report.preamble = Some(std::mem::take(&mut obs.preamble));
    let q = &result.queue;
    let elapsed_ms = (result.end.as_ns() / 1_000_000).max(1);
    report.elapsed_sec = result.end.as_ns().div_ceil(1_000_000_000);
    report.disks.push(DiskUtil {
        name: disk_name.to_string(),
        ios: [q.read_ios, q.write_ios],
        merges: [q.read_merges, q.write_merges],
        ticks: [q.read_ticks_ns / 1_000_000, q.write_ticks_ns / 1_000_000],
        in_queue: q.busy_ns / 1_000_000,
        util: DiskUtil::util_percent(q.io_ticks_ns / 1_000_000, elapsed_ms),
        aggr: None,
    });
    report
}

/// The `--output-format` values a fio run takes.
pub const FORMATS: &[&str] = &["normal", "json", "json+", "old"];

/// The error for a format not in [`FORMATS`].
pub fn unknown_format(format: &str) -> String {
    format!(
        "--output-format: unknown format '{format}' ({})",
        FORMATS.join(", ")
    )
}

/// The report in fio's `--output-format` `format`.
pub fn format(report: &FioReport, format: &str) -> Result<String, String> {
    match format {
        "normal" => Ok(render_normal(report)),
        "json" => Ok(render_json(report)),
        "json+" => Ok(render_json_plus(report)),
        "old" => Ok(render_old(report)),
        _ => Err(unknown_format(format)),
    }
}
