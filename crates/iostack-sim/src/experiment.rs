//! Experiments as data: a workload on a machine under a kernel profile, run in
//! several variants (the patches under study), with metrics computed from each run
//! and the published numbers beside them. Files live under `experiments/`.

use crate::frontend;
use crate::machine::{self, Machine};
use crate::stats::RunResult;
use crate::workload::ProcSpec;
use crate::{tunable_tables, SimConfig, SimError, Simulation};
use iostack_core::{Profile, TraceSink, Tunables};
use iostack_des::Seed;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    pub name: String,
    pub title: String,
    /// Where the published numbers come from.
    pub source: String,
    pub machine: String,
    pub kernel: String,
    pub scheduler: Option<String>,
    /// Trace format printed for each variant by `iostack reproduce` (`ftrace`,
    /// `blkparse`), if any.
    pub trace: Option<String>,
    #[serde(default)]
    pub set: Vec<String>,
    /// Machine-file lines (`key = value`) applied to the preset.
    #[serde(default)]
    pub machine_set: Vec<String>,
    #[serde(default)]
    pub setup: Vec<SetupFile>,
    pub workload: WorkloadDef,
    #[serde(rename = "variant")]
    pub variants: Vec<Variant>,
    #[serde(rename = "metric")]
    pub metrics: Vec<MetricDef>,
    /// What the experiment can and cannot show, printed with the results.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Before/after pairs of variants whose changes are compared; by default the
    /// first variant against each other one.
    #[serde(default)]
    pub compare: Vec<[String; 2]>,
}

/// A file laid out before the workload runs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupFile {
    pub path: String,
    pub size: String,
    /// First block of the sequential allocation.
    pub goal_block: Option<u64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadDef {
    /// A dd operand list.
    pub dd: Option<String>,
    /// A fio job file, relative to the experiment file.
    pub fio: Option<String>,
    /// Fixed pid and CPU of the (first) process, to mirror a published trace.
    pub pid: Option<u32>,
    pub cpu: Option<u32>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    pub description: Option<String>,
    pub kernel: Option<String>,
    pub scheduler: Option<String>,
    #[serde(default)]
    pub set: Vec<String>,
    /// Machine-file lines for this variant (after the experiment's).
    #[serde(default)]
    pub machine_set: Vec<String>,
    /// `${VAR}` values the fio job file sees in this variant.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricDef {
    /// The name the metric is reported under.
    pub name: String,
    /// What is measured (one of `METRICS`); defaults to `name`.
    pub of: Option<String>,
    /// Only the processes of this fio job (all its clones), as fio's per-group
    /// `aggrb` when the job is its own group.
    pub job: Option<String>,
    pub unit: String,
    /// Published value per variant name; variants not listed have none.
    #[serde(default)]
    pub published: BTreeMap<String, f64>,
}

/// One row of `iostack reproduce`.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub experiment: String,
    pub variant: String,
    pub metric: String,
    pub unit: String,
    pub published: Option<f64>,
    pub simulated: f64,
}

/// A change between the baseline variant and another, published vs simulated.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub metric: String,
    pub from: String,
    pub to: String,
    pub published_ratio: f64,
    pub simulated_ratio: f64,
    pub direction_ok: bool,
    pub size_ok: bool,
}

/// A variant's run: results plus the sinks that were attached.
pub struct VariantRun {
    pub variant: String,
    pub result: RunResult,
    pub sinks: Vec<Box<dyn TraceSink>>,
    pub seed: Seed,
    pub config_hash: u64,
}

pub fn parse(path: &str, text: &str) -> Result<Experiment, SimError> {
    let e: Experiment =
        toml::from_str(text).map_err(|e| SimError(format!("{path}: {}", e.to_string().trim())))?;
    if e.variants.is_empty() {
        return Err(SimError(format!("{path}: experiment has no [[variant]]")));
    }
    for pair in &e.compare {
        for n in pair {
            if !e.variants.iter().any(|v| &v.name == n) {
                return Err(SimError(format!(
                    "{path}: compare names variant '{n}', which the experiment does not have"
                )));
            }
        }
    }
    if e.workload.dd.is_some() == e.workload.fio.is_some() {
        return Err(SimError(format!(
            "{path}: [workload] needs exactly one of 'dd' or 'fio'"
        )));
    }
    for m in &e.metrics {
        if metric(m.measure()).is_none() {
            return Err(SimError(format!(
                "{path}: unknown metric '{}' (known: {})",
                m.measure(),
                METRICS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for v in m.published.keys() {
            if !e.variants.iter().any(|x| &x.name == v) {
                return Err(SimError(format!(
                    "{path}: metric '{}' has a published value for unknown variant '{v}'",
                    m.name
                )));
            }
        }
    }
    Ok(e)
}

impl MetricDef {
    /// The measurement behind this metric.
    pub fn measure(&self) -> &str {
        self.of.as_deref().unwrap_or(&self.name)
    }
}

/// A measurement over a run, optionally restricted to one job's processes.
type MetricFn = fn(&RunResult, Option<&str>) -> f64;

/// Metrics an experiment can ask for, computed from a run. Bandwidths are fio's
/// aggregate (`aggrb`): all bytes over the longest runtime, in KiB/s or MiB/s (the
/// units old fio printed as KB/s and MB/s).
pub const METRICS: &[(&str, MetricFn)] = &[
    ("queued_bios", |r, _| r.queue.bios_queued as f64),
    ("dispatched_requests", |r, _| {
        r.queue.requests_dispatched as f64
    }),
    ("merges", |r, _| {
        (r.queue.back_merges + r.queue.front_merges) as f64
    }),
    ("read_KBps", |r, j| aggregate_kib_per_s(r, 0, j)),
    ("write_KBps", |r, j| aggregate_kib_per_s(r, 1, j)),
    ("read_MBps", |r, j| aggregate_kib_per_s(r, 0, j) / 1024.0),
    ("write_MBps", |r, j| aggregate_kib_per_s(r, 1, j) / 1024.0),
    // Decimal megabytes (10^6 bytes) per second, as dd and most tools print.
    ("write_MB_s", |r, j| {
        aggregate_kib_per_s(r, 1, j) * 1024.0 / 1e6
    }),
    ("elapsed_us", |r, _| r.end.as_ns() as f64 / 1000.0),
    // Seekwatcher's seek count over the dispatched requests.
    ("seeks", |r, _| r.queue.dispatch_seeks as f64),
    // Share of the files' written-back pages that the flusher sent, in percent.
    ("flusher_pct", |r, _| {
        let w = r.vm.wb_pages;
        let all = w.flusher + w.dirtier + w.kthread;
        if all == 0 {
            0.0
        } else {
            100.0 * w.flusher as f64 / all as f64
        }
    }),
    // Decimal megabytes written back from the block device's page cache.
    ("bdev_MB", |r, _| {
        (r.vm.wb_pages.bdev * iostack_mm::PAGE_SIZE) as f64 / 1e6
    }),
    ("extents", |r, j| {
        r.files
            .iter()
            .find(|f| j.is_none_or(|j| f.job == j))
            .map(|f| f.extent_count() as f64)
            .unwrap_or(0.0)
    }),
];

pub fn metric(name: &str) -> Option<MetricFn> {
    METRICS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// fio's aggregate bandwidth of a direction: all bytes over the longest runtime.
fn aggregate_kib_per_s(r: &RunResult, dir: usize, job: Option<&str>) -> f64 {
    let mine = || {
        r.procs
            .iter()
            .filter(move |p| job.is_none_or(|j| p.name == j) && p.dirs[dir].ios > 0)
    };
    let bytes: u64 = mine().map(|p| p.dirs[dir].bytes).sum();
    let run = mine().map(|p| p.runtime().as_ns()).max().unwrap_or(0);
    if run == 0 {
        return 0.0;
    }
    bytes as f64 / 1024.0 / (run as f64 / 1e9)
}

impl Experiment {
    /// The configuration of one variant.
    pub fn config(
        &self,
        v: &Variant,
        seed: Seed,
        fio_text: Option<(&str, &str)>,
    ) -> Result<SimConfig, SimError> {
        let mut m: Machine = machine::preset(&self.machine).map_err(|e| SimError(e.to_string()))?;
        if !self.machine_set.is_empty() || !v.machine_set.is_empty() {
            let mut text = format!("base = {}\n", self.machine);
            for l in self.machine_set.iter().chain(v.machine_set.iter()) {
                text.push_str(l);
                text.push('\n');
            }
            m = machine::parse_file("machine_set", &text).map_err(|e| {
                // Line 1 is the base preset; line k is machine_set entry k - 1,
                // counting the experiment's entries before the variant's.
                let entry =
                    e.at.rsplit(':')
                        .next()
                        .and_then(|n| n.parse::<usize>().ok())
                        .map(|k| format!(" entry {}", k - 1))
                        .unwrap_or_default();
                SimError(format!(
                    "{} variant {}: machine_set{entry}: {}",
                    self.name, v.name, e.msg
                ))
            })?;
            m.name = self.machine.clone();
        }
        let kernel = v.kernel.as_deref().unwrap_or(&self.kernel);
        let profile = Profile::parse(kernel).map_err(SimError)?;
        let mut t = Tunables::new(profile, &tunable_tables());
        for kv in self.set.iter().chain(v.set.iter()) {
            t.set_str(kv)
                .map_err(|e| SimError(format!("{} variant {}: {e}", self.name, v.name)))?;
        }
        let scheduler = v
            .scheduler
            .clone()
            .or_else(|| self.scheduler.clone())
            .unwrap_or_else(|| m.scheduler.clone());
        let mut procs: Vec<ProcSpec> = Vec::new();
        for f in &self.setup {
            let size = frontend::parse_size(&f.size)
                .map_err(|e| SimError(format!("{}: setup {}: {e}", self.name, f.path)))?;
            procs.push(frontend::layout_only(&f.path, size, f.goal_block));
        }
        let mut work = match (&self.workload.dd, fio_text) {
            (Some(dd), _) => frontend::dd_procs(dd, &m).map_err(SimError)?,
            (None, Some((path, text))) => {
                frontend::fio_procs_from_text_env(path, text, &m, v.env.clone())
                    .map_err(SimError)?
                    .procs
            }
            (None, None) => return Err(SimError("fio job text missing".into())),
        };
        if let Some(first) = work.first_mut() {
            first.pid = self.workload.pid.or(first.pid);
            first.cpu = self.workload.cpu.or(first.cpu);
        }
        procs.extend(work);
        Ok(SimConfig {
            machine: m,
            tunables: t,
            scheduler,
            seed,
            procs,
            checks: true,
            until: None,
        })
    }

    /// Run every variant, attaching the sinks `make_sinks` returns for each.
    pub fn run(
        &self,
        seed: Seed,
        fio_text: Option<(&str, &str)>,
        mut make_sinks: impl FnMut(&Variant, &SimConfig) -> Vec<Box<dyn TraceSink>>,
    ) -> Result<Vec<VariantRun>, SimError> {
        let mut runs = Vec::new();
        for v in &self.variants {
            let cfg = self.config(v, seed, fio_text)?;
            let hash = crate::config_hash(&cfg);
            let sinks = make_sinks(v, &cfg);
            let mut sim = Simulation::new(cfg)?;
            sim.attach(Box::new(crate::check::Checker::new(true)));
            for s in sinks {
                sim.attach(s);
            }
            let (result, mut sinks) = sim.run();
            sinks.remove(0); // the checker
            if !result.ending.is_complete() {
                return Err(SimError(format!(
                    "{} variant {}: {}",
                    self.name, v.name, result.ending
                )));
            }
            if let Some(e) = result.procs.iter().find_map(|p| p.error.clone()) {
                return Err(SimError(format!("{} variant {}: {e}", self.name, v.name)));
            }
            runs.push(VariantRun {
                variant: v.name.clone(),
                result,
                sinks,
                seed,
                config_hash: hash,
            });
        }
        Ok(runs)
    }

    /// Rows of published and simulated values.
    pub fn rows(&self, runs: &[VariantRun]) -> Vec<Row> {
        let mut rows = Vec::new();
        for run in runs {
            for m in &self.metrics {
                let f = metric(m.measure()).expect("validated at parse");
                rows.push(Row {
                    experiment: self.name.clone(),
                    variant: run.variant.clone(),
                    metric: m.name.clone(),
                    unit: m.unit.clone(),
                    published: m.published.get(&run.variant).copied(),
                    simulated: f(&run.result, m.job.as_deref()),
                });
            }
        }
        rows
    }

    /// Changes from the first variant with a published value to every other that
    /// has one: does the simulated change go the same way, and is it of the same
    /// size (simulated ratio within 25 % of the published ratio)?
    pub fn changes(&self, rows: &[Row]) -> Vec<Change> {
        let mut out = Vec::new();
        for m in &self.metrics {
            let mine: Vec<&Row> = rows
                .iter()
                .filter(|r| r.metric == m.name && r.published.is_some())
                .collect();
            let pairs: Vec<(&Row, &Row)> = if self.compare.is_empty() {
                let Some(base) = mine.first() else { continue };
                mine[1..].iter().map(|r| (*base, *r)).collect()
            } else {
                let find = |n: &str| mine.iter().find(|r| r.variant == n).copied();
                self.compare
                    .iter()
                    .filter_map(|[a, b]| Some((find(a)?, find(b)?)))
                    .collect()
            };
            for (base, r) in pairs {
                let pb = base.published.expect("filtered");
                let pr = r.published.expect("filtered");
                let pub_ratio = ratio(pr, pb);
                let sim_ratio = ratio(r.simulated, base.simulated);
                let dir = |x: f64| {
                    if (x - 1.0).abs() < 1e-9 {
                        0
                    } else if x > 1.0 {
                        1
                    } else {
                        -1
                    }
                };
                let size_ok = size_matches(pub_ratio, sim_ratio);
                out.push(Change {
                    metric: m.name.clone(),
                    from: base.variant.clone(),
                    to: r.variant.clone(),
                    published_ratio: pub_ratio,
                    simulated_ratio: sim_ratio,
                    direction_ok: dir(pub_ratio) == dir(sim_ratio),
                    size_ok,
                });
            }
        }
        out
    }
}

/// Whether a simulated change has the published change's size: the two changes,
/// as logarithms of their ratios, agree within a factor of 1.25; a published
/// change under 5% is matched by a simulated one under 5%. (Comparing the ratios
/// themselves would call +0% a match for +20%.)
fn size_matches(published: f64, simulated: f64) -> bool {
    if published == 0.0 || simulated == 0.0 || !published.is_finite() || !simulated.is_finite() {
        return published == simulated;
    }
    let small = 1.05f64.ln();
    let (lp, ls) = (published.ln(), simulated.ln());
    if lp.abs() < small {
        return ls.abs() < small;
    }
    (0.8..=1.25).contains(&(ls / lp))
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        if a == 0.0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        a / b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_sizes_compare_as_log_ratios() {
        // Seed 001's XFS: +20.5% published, +0% simulated is a miss.
        assert!(!size_matches(247.0 / 205.0, 1.0));
        // Seed 000's collapse: -99.4% against -99.7% is a match.
        assert!(size_matches(19.0 / 2968.0, 18.75 / 5381.0));
        // A 3x rise against a 1.27x rise is a miss; against 2.6x a match.
        assert!(!size_matches(3.01, 1.27));
        assert!(size_matches(3.01, 2.6));
        // Small published changes are matched by small simulated ones.
        assert!(size_matches(1.02, 0.96));
        assert!(!size_matches(1.02, 1.10));
        assert!(size_matches(1.0, 1.0));
        assert!(!size_matches(0.0, 1.0));
    }

    const EXP: &str = r#"
name = "t"
title = "t"
source = "s"
machine = "null"
kernel = "2.6.36"
[workload]
dd = "if=/mnt/test/f of=/dev/null iflag=direct bs=4k count=1"
[[variant]]
name = "a"
[[metric]]
name = "writer_KBps"
of = "write_KBps"
job = "seqwrite"
unit = "KB/s"
published = { "a" = 2968 }
"#;

    #[test]
    fn metrics_name_what_they_measure_and_errors_name_the_file() {
        let e = parse("t.toml", EXP).unwrap();
        assert_eq!(e.metrics[0].measure(), "write_KBps");
        assert_eq!(e.metrics[0].job.as_deref(), Some("seqwrite"));
        let bad = EXP.replace("of = \"write_KBps\"", "of = \"write_furlongs\"");
        let err = parse("t.toml", &bad).unwrap_err().to_string();
        assert!(
            err.starts_with("t.toml: unknown metric 'write_furlongs'"),
            "{err}"
        );
        let bad = EXP.replace("\"a\" = 2968", "\"b\" = 2968");
        let err = parse("t.toml", &bad).unwrap_err().to_string();
        assert!(err.contains("unknown variant 'b'"), "{err}");
        let bad = EXP.replace("[workload]", "compare = [[\"a\", \"z\"]]\n[workload]");
        let err = parse("t.toml", &bad).unwrap_err().to_string();
        assert!(
            err.starts_with("t.toml: compare names variant 'z'"),
            "{err}"
        );
        let bad = EXP.replace("unit = \"KB/s\"", "unit = \"KB/s\"\ncolour = 1");
        let err = parse("t.toml", &bad).unwrap_err().to_string();
        assert!(
            err.starts_with("t.toml:") && err.contains("colour"),
            "{err}"
        );
    }

    #[test]
    fn machine_lines_of_a_variant_are_checked_with_their_line() {
        let text = EXP.replace(
            "name = \"a\"",
            "name = \"a\"\nmachine_set = [\"mem_mb = 512\", \"fs = btrfs\"]",
        );
        let e = parse("t.toml", &text).unwrap();
        let err = e
            .config(&e.variants[0], Seed(1), None)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("t variant a: machine_set entry 2: key 'fs': unsupported 'btrfs'"),
            "{err}"
        );
        let ok = EXP.replace(
            "name = \"a\"",
            "name = \"a\"\nmachine_set = [\"mem_mb = 512\", \"fs = xfs\"]",
        );
        let e = parse("t.toml", &ok).unwrap();
        let c = e.config(&e.variants[0], Seed(1), None).unwrap();
        assert_eq!(c.machine.mem_bytes, 512 << 20);
        assert_eq!(c.machine.fs.name(), "xfs");
        assert_eq!(c.machine.name, "null");
    }
}
