//! fio reports from a run: an `IoObserver` feeds fio's statistics per job as I/Os
//! complete (constant memory), and the report crate renders them.

use iostack_des::Seed;
use iostack_report::fio::{
    render_json, render_normal, render_old, DiskUtil, FioReport, IoSample, JobStats, Provenance,
};
use iostack_sim::frontend::JobMeta;
use iostack_sim::stats::RunResult;
use iostack_sim::workload::Dir;
use iostack_sim::{IoEvent, IoObserver};

/// The fixed epoch printed as fio's timestamps (simulated runs have no wall clock):
/// 2026-11-21 00:00:00 UTC.
pub const EPOCH_MS: u64 = 1_795_219_200_000;

pub struct FioObserver {
    pub jobs: Vec<Option<JobStats>>,
    sync_engine: Vec<bool>,
}

impl FioObserver {
    pub fn new(meta: &[Option<JobMeta>]) -> Self {
        let jobs = meta
            .iter()
            .map(|m| {
                m.as_ref().map(|m| {
                    let mut j = JobStats::new(&m.name, m.group);
                    j.options = m.options.clone();
                    j.group_reporting = m.group_reporting;
                    j.latency_depth = m.iodepth;
                    j.kb_base = m.kb_base;
                    j
                })
            })
            .collect();
        FioObserver {
            jobs,
            sync_engine: meta
                .iter()
                .map(|m| m.as_ref().is_none_or(|m| m.sync_engine))
                .collect(),
        }
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
    obs: FioObserver,
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
    for (p, j) in result.procs.iter().zip(obs.jobs) {
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
                j.dir_mut(dd).runtime_ms = (run_ns / 1_000_000).max(1);
            }
        }
        if let Some(e) = &p.error {
            j.error = 5; // EIO
            j.verror = e.clone();
        }
        j.finish_sampling(run_ns);
        report.jobs.push(j);
    }
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

/// The report in fio's `--output-format` `format`.
pub fn format(report: &FioReport, format: &str) -> Result<String, String> {
    match format {
        "normal" => Ok(render_normal(report)),
        "json" => Ok(render_json(report)),
        "old" => Ok(render_old(report)),
        _ => Err(format!(
            "--output-format: unknown format '{format}' (normal, json, old)"
        )),
    }
}
