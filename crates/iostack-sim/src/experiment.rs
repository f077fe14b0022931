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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use toml::Spanned;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    pub name: String,
    pub title: String,
    /// Where the published numbers come from.
    pub source: String,
    pub machine: Spanned<String>,
    pub kernel: Spanned<String>,
    pub scheduler: Option<Spanned<String>>,
    /// Trace format printed for each variant by `iostack reproduce` (`ftrace`,
    /// `blkparse`), if any.
    pub trace: Option<String>,
    #[serde(default)]
    pub set: Vec<Spanned<String>>,
    /// Machine-file lines (`key = value`) applied to the preset.
    #[serde(default)]
    pub machine_set: Vec<Spanned<String>>,
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
    pub compare: Vec<Spanned<[String; 2]>>,
    /// The file the experiment was read from, and where its lines start (for
    /// errors that name a line).
    #[serde(skip)]
    pub path: String,
    #[serde(skip)]
    line_starts: Vec<usize>,
}

/// A file laid out before the workload runs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupFile {
    pub path: String,
    pub size: Spanned<String>,
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
    /// A Bonnie command line (its options, as `iostack bonnie` takes them).
    pub bonnie: Option<String>,
    /// An iozone command line (its options, e.g. `-s 64 -e -i 0`): its first
    /// row's processes, named by iozone's columns (`write`, `rewrite`, ...).
    pub iozone: Option<String>,
    /// An fs_mark command line; its processes (one per file, named `fs_mark`)
    /// run before the iozone ones when both are given.
    pub fs_mark: Option<String>,
    /// Fixed pid and CPU of the (first) process, to mirror a published trace.
    pub pid: Option<u32>,
    pub cpu: Option<u32>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    pub description: Option<String>,
    /// A machine preset for this variant instead of the experiment's.
    pub machine: Option<Spanned<String>>,
    pub kernel: Option<Spanned<String>>,
    pub scheduler: Option<Spanned<String>>,
    #[serde(default)]
    pub set: Vec<Spanned<String>>,
    /// Machine-file lines for this variant (after the experiment's).
    #[serde(default)]
    pub machine_set: Vec<Spanned<String>>,
    /// `${VAR}` values the fio job file sees in this variant.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The Bonnie command line of this variant, in place of the workload's.
    pub bonnie: Option<String>,
    /// The iozone command line of this variant, in place of the workload's
    /// (a diagnostic sweep over iozone's options).
    pub iozone: Option<String>,
    /// A dd command line run beside the iozone processes: started when they
    /// start (after fs_mark), e.g. a sequential reader of the disk.
    pub reader: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricDef {
    /// The name the metric is reported under.
    pub name: Spanned<String>,
    /// What is measured (one of `METRICS`); defaults to `name`.
    pub of: Option<Spanned<String>>,
    /// Only the processes of this fio job (all its clones), as fio's per-group
    /// `aggrb` when the job is its own group.
    pub job: Option<String>,
    pub unit: String,
    /// Published value per variant name; variants not listed have none.
    #[serde(default)]
    pub published: BTreeMap<String, f64>,
}

/// The keys an experiment file accepts, per table, as the parser itself
/// declares them (serde's field lists of the structs above): `top`,
/// `[[setup]]`, `[workload]`, `[[variant]]`, `[[metric]]`. docs/experiments.md
/// is checked against it.
pub fn accepted_keys() -> Vec<(&'static str, &'static [&'static str])> {
    vec![
        ("top", fields_of::<Experiment>()),
        ("[[setup]]", fields_of::<SetupFile>()),
        ("[workload]", fields_of::<WorkloadDef>()),
        ("[[variant]]", fields_of::<Variant>()),
        ("[[metric]]", fields_of::<MetricDef>()),
    ]
}

/// The field names a derived `Deserialize` struct passes to
/// `deserialize_struct` (the keys it accepts; `deny_unknown_fields` refuses
/// the others).
fn fields_of<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    match T::deserialize(FieldProbe) {
        Err(FieldsFound(f)) => f,
        Ok(_) => &[],
    }
}

/// A deserializer that only records the field list it is asked for.
struct FieldProbe;

#[derive(Debug)]
struct FieldsFound(&'static [&'static str]);

impl std::fmt::Display for FieldsFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fields {:?}", self.0)
    }
}

impl std::error::Error for FieldsFound {}

impl serde::de::Error for FieldsFound {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        FieldsFound(&[])
    }
}

impl<'de> serde::Deserializer<'de> for FieldProbe {
    type Error = FieldsFound;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, FieldsFound> {
        Err(FieldsFound(&[]))
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, FieldsFound> {
        Err(FieldsFound(fields))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
        identifier ignored_any
    }
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

/// Read an experiment file. Errors name the file and, where the field can be
/// located, its line.
pub fn parse(path: &str, text: &str) -> Result<Experiment, SimError> {
    let mut e: Experiment = toml::from_str(text).map_err(|err| SimError::Experiment {
        file: path.to_string(),
        line: err.span().map(|s| line_of(&line_starts(text), s.start)),
        field: None,
        message: err.message().trim().to_string(),
    })?;
    e.path = path.to_string();
    e.line_starts = line_starts(text);
    e.check()?;
    Ok(e)
}

/// Byte offsets where each line of `text` starts.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

/// 1-based line of a byte offset.
fn line_of(starts: &[usize], offset: usize) -> usize {
    starts.partition_point(|&s| s <= offset).max(1)
}

impl Experiment {
    /// 1-based line of a field.
    fn line<T>(&self, field: &Spanned<T>) -> Option<usize> {
        (!self.line_starts.is_empty()).then(|| line_of(&self.line_starts, field.span().start))
    }

    /// An error at a field of the file.
    fn err<T>(&self, at: Option<&Spanned<T>>, field: &str, message: String) -> SimError {
        SimError::Experiment {
            file: self.path.clone(),
            line: at.and_then(|a| self.line(a)),
            field: (!field.is_empty()).then(|| field.to_string()),
            message,
        }
    }

    /// Cross-field checks made at parse time.
    fn check(&self) -> Result<(), SimError> {
        if self.variants.is_empty() {
            return Err(self.err::<()>(None, "", "experiment has no [[variant]]".into()));
        }
        let has = |n: &str| self.variants.iter().any(|v| v.name == n);
        for pair in &self.compare {
            if let Some(n) = pair.get_ref().iter().find(|n| !has(n)) {
                let msg = format!("names variant '{n}', which the experiment does not have");
                return Err(self.err(Some(pair), "compare", msg));
            }
        }
        let w = &self.workload;
        let tools = w.iozone.is_some() || w.fs_mark.is_some();
        if [w.dd.is_some(), w.fio.is_some(), w.bonnie.is_some(), tools]
            .iter()
            .filter(|&&x| x)
            .count()
            != 1
        {
            let msg = "needs exactly one of 'dd', 'fio', 'bonnie', or 'iozone' and/or 'fs_mark'"
                .to_string();
            return Err(self.err::<()>(None, "[workload]", msg));
        }
        for m in &self.metrics {
            if metric(m.measure()).is_none() {
                let known: Vec<&str> = METRICS.iter().map(|(n, _)| *n).collect();
                let msg = format!(
                    "unknown metric '{}' (known: {})",
                    m.measure(),
                    known.join(", ")
                );
                let at = m.of.as_ref().unwrap_or(&m.name);
                return Err(self.err(Some(at), "", msg));
            }
            if let Some(v) = m.published.keys().find(|v| !has(v)) {
                let msg = format!(
                    "metric '{}' has a published value for unknown variant '{v}'",
                    m.name.get_ref()
                );
                return Err(self.err(Some(&m.name), "", msg));
            }
        }
        Ok(())
    }
}

impl MetricDef {
    /// The measurement behind this metric.
    pub fn measure(&self) -> &str {
        self.of.as_ref().unwrap_or(&self.name).get_ref()
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
    // Bonnie's K/sec and %CPU of its block tests (`crate::bonnie`).
    ("block_write_KBps", |r, _| bonnie_col(r, "block_write").0),
    ("block_write_cpu_pct", |r, _| bonnie_col(r, "block_write").1),
    ("rewrite_KBps", |r, _| bonnie_col(r, "rewrite").0),
    ("rewrite_cpu_pct", |r, _| bonnie_col(r, "rewrite").1),
    ("block_read_KBps", |r, _| bonnie_col(r, "block_read").0),
    ("block_read_cpu_pct", |r, _| bonnie_col(r, "block_read").1),
    // fs_mark's Files/sec of one thread and one iteration: its files (the
    // processes named `fs_mark`) over the time from the first creat to the
    // end of the last file.
    ("files_per_s", |r, _| {
        let files = || r.procs.iter().filter(|p| p.name == "fs_mark");
        let n = files().count();
        let start = files().map(|p| p.start).min();
        let end = files().map(|p| p.end).max();
        match (start, end) {
            (Some(s), Some(e)) if e > s => n as f64 / (e.since(s).as_ns() as f64 / 1e9),
            _ => 0.0,
        }
    }),
    // Reads per second of the selected processes over the longest runtime.
    ("read_iops", |r, j| {
        let procs = || r.procs.iter().filter(|p| j.is_none_or(|j| p.name == j));
        let ios: u64 = procs().map(|p| p.dirs[0].ios).sum();
        let ns = procs().map(|p| p.runtime().as_ns()).max().unwrap_or(0);
        if ns == 0 {
            0.0
        } else {
            ios as f64 * 1e9 / ns as f64
        }
    }),
    // The 99th percentile of read completion latency over the selected
    // processes, in microseconds (fio's clat p99 with group_reporting).
    ("read_p99_us", |r, j| {
        let mut lat = crate::stats::Lat::default();
        for p in r.procs.iter().filter(|p| j.is_none_or(|j| p.name == j)) {
            lat.merge(&p.dirs[0].clat);
        }
        lat.percentile(99.0) as f64 / 1000.0
    }),
    // System CPU time per I/O of the selected processes, in microseconds
    // (the scheduler's hooks and lock included).
    ("sys_us_per_io", |r, j| {
        let procs = || r.procs.iter().filter(|p| j.is_none_or(|j| p.name == j));
        let ios: u64 = procs().map(|p| p.dirs[0].ios + p.dirs[1].ios).sum();
        let sys: u64 = procs().map(|p| p.sys_ns).sum();
        if ios == 0 {
            0.0
        } else {
            sys as f64 / ios as f64 / 1000.0
        }
    }),
    ("extents", |r, j| {
        r.files
            .iter()
            .find(|f| j.is_none_or(|j| f.job == j))
            .map(|f| f.extent_count() as f64)
            .unwrap_or(0.0)
    }),
];

/// (K/sec, %CPU) of the Bonnie test run by the process named `test` (0 if
/// none ran).
fn bonnie_col(r: &RunResult, test: &str) -> (f64, f64) {
    r.procs
        .iter()
        .find(|p| p.name == test)
        .map(crate::bonnie::kb_and_cpu)
        .unwrap_or((0.0, 0.0))
}

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
    /// The machine of a variant: the preset with the experiment's and the
    /// variant's `machine_set` lines applied, each error at its line.
    fn machine_of(&self, v: &Variant) -> Result<Machine, SimError> {
        let name = v.machine.as_ref().unwrap_or(&self.machine);
        let preset =
            machine::preset(name.get_ref()).map_err(|e| e.at(&self.path, self.line(name)))?;
        let mut m = preset.clone();
        for l in self.machine_set.iter().chain(v.machine_set.iter()) {
            let at = |e: machine::MachineError| e.at(&self.path, self.line(l));
            match machine::split_line(l.get_ref()).map_err(at)? {
                Some(("base", _)) => {
                    let kind = machine::MachineErrorKind::Invalid(
                        "'base' is the experiment's `machine`".into(),
                    );
                    return Err(at(machine::MachineError {
                        file: None,
                        line: None,
                        key: Some("base".into()),
                        kind,
                    })
                    .into());
                }
                Some((k, val)) => machine::apply(&mut m, k, val).map_err(at)?,
                None => {}
            }
        }
        machine::validate(&m).map_err(|e| e.at(&self.path, None))?;
        m.name = preset.name;
        Ok(m)
    }

    /// The tunables of a variant: the profile's defaults with the experiment's and
    /// the variant's `set` entries.
    fn tunables_of(&self, v: &Variant) -> Result<Tunables, SimError> {
        let kernel = v.kernel.as_ref().unwrap_or(&self.kernel);
        let profile = Profile::parse(kernel.get_ref())
            .map_err(|msg| self.err(Some(kernel), "kernel", msg))?;
        let mut t = Tunables::new(profile, &tunable_tables());
        for kv in self.set.iter().chain(v.set.iter()) {
            t.set_str(kv.get_ref())
                .map_err(|source| SimError::Tunable {
                    file: Some(self.path.clone()),
                    line: self.line(kv),
                    origin: "set".into(),
                    assignment: kv.get_ref().clone(),
                    source: Box::new(source),
                })?;
        }
        Ok(t)
    }

    /// The processes of a variant: `[[setup]]` files, then the workload.
    fn procs_of(
        &self,
        v: &Variant,
        m: &Machine,
        fio_text: Option<(&str, &str)>,
    ) -> Result<Vec<ProcSpec>, SimError> {
        let mut procs: Vec<ProcSpec> = Vec::new();
        for f in &self.setup {
            let size = frontend::parse_size(f.size.get_ref()).map_err(|e| SimError::Size {
                file: Some(self.path.clone()),
                line: self.line(&f.size),
                origin: format!("[[setup]] {}: size", f.path),
                input: f.size.get_ref().clone(),
                message: e.to_string(),
            })?;
            frontend::fits_on_disk(size, m).map_err(|message| SimError::Size {
                file: Some(self.path.clone()),
                line: self.line(&f.size),
                origin: format!("[[setup]] {}: size", f.path),
                input: f.size.get_ref().clone(),
                message,
            })?;
            procs.push(frontend::layout_only(&f.path, size, f.goal_block));
        }
        let bonnie = v.bonnie.as_ref().or(self.workload.bonnie.as_ref());
        let mut work = match (&self.workload.dd, fio_text) {
            (Some(dd), _) => frontend::dd_procs(dd, m)?,
            (None, _) if bonnie.is_some() => {
                let args: Vec<String> = bonnie
                    .into_iter()
                    .flat_map(|b| b.split_whitespace())
                    .map(str::to_string)
                    .collect();
                let spec = iostack_workload::parse_bonnie_args(&args)?;
                crate::bonnie::bonnie_procs(&spec, m)?
            }
            (None, _) if self.workload.fio.is_none() => self.tool_procs(v, m)?,
            (None, Some((path, text))) => {
                frontend::fio_procs_from_text_env(path, text, m, v.env.clone())?.procs
            }
            (None, None) => {
                let msg = "the fio job file's text was not given".to_string();
                return Err(self.err::<()>(None, "[workload] fio", msg));
            }
        };
        if let Some(first) = work.first_mut() {
            first.pid = self.workload.pid.or(first.pid);
            first.cpu = self.workload.cpu.or(first.cpu);
        }
        procs.extend(work);
        Ok(procs)
    }

    /// The processes of the fs_mark and iozone command lines: fs_mark's files,
    /// then iozone's first row, its first process after everything before (a
    /// machine that has run fs_mark: the journal thread has done I/O, as on a
    /// running system).
    fn tool_procs(&self, v: &Variant, m: &Machine) -> Result<Vec<ProcSpec>, SimError> {
        let args = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let mut procs = Vec::new();
        if let Some(cmd) = &self.workload.fs_mark {
            let spec = iostack_workload::parse_fs_mark_args(&args(cmd))?;
            procs.extend(crate::tools::fs_mark_run(&spec, m)?.procs);
        }
        let before = procs.len() as u32;
        if let Some(cmd) = v.iozone.as_ref().or(self.workload.iozone.as_ref()) {
            let spec = iostack_workload::parse_iozone_args(&args(cmd))?;
            let rows = crate::tools::iozone_rows(&spec, m)?;
            let base = procs.len();
            procs.extend(rows.into_iter().next().map(|r| r.procs).unwrap_or_default());
            if let Some(first) = procs.get_mut(base).filter(|_| base > 0) {
                first.stonewall = true;
            }
        }
        if let Some(cmd) = &v.reader {
            for mut p in frontend::dd_procs(cmd, m)? {
                p.after = (before > 0).then_some((0, before));
                procs.push(p);
            }
        }
        Ok(procs)
    }

    /// The configuration of one variant.
    pub fn config(
        &self,
        v: &Variant,
        seed: Seed,
        fio_text: Option<(&str, &str)>,
    ) -> Result<SimConfig, SimError> {
        let inner = || -> Result<SimConfig, SimError> {
            let m = self.machine_of(v)?;
            let tunables = self.tunables_of(v)?;
            let scheduler = v
                .scheduler
                .as_ref()
                .or(self.scheduler.as_ref())
                .map(|s| s.get_ref().clone())
                .unwrap_or_else(|| crate::machine::default_scheduler(&m, tunables.profile()));
            let procs = self.procs_of(v, &m, fio_text)?;
            Ok(SimConfig {
                machine: m,
                tunables,
                scheduler,
                seed,
                procs,
                checks: true,
                until: None,
            })
        };
        inner().map_err(|e| e.in_variant(&self.name, &v.name))
    }

    /// Run every variant, attaching the sinks `make_sinks` returns for each. The
    /// variants are independent runs, so they run in parallel, one thread per
    /// core, the longest first (by `Simulation::work_estimate`, so that the last
    /// to start are the short ones and the cores finish together); each is still
    /// a pure function of its configuration, and the runs come back in the
    /// experiment's order, so the results do not depend on the scheduling. The
    /// first failing variant in that order is the error.
    ///
    /// `checks` turns on the full invariant checks after every event and the
    /// independent checker over the trace stream (tests, `--check`); the cheap
    /// end-of-run checks (`RunEnd`: nothing stalled, nothing left in flight)
    /// run either way.
    pub fn run(
        &self,
        seed: Seed,
        fio_text: Option<(&str, &str)>,
        checks: bool,
        mut make_sinks: impl FnMut(&Variant, &SimConfig) -> Vec<Box<dyn TraceSink>>,
    ) -> Result<Vec<VariantRun>, SimError> {
        run_many(&[(self, fio_text)], seed, checks, |_, v, cfg| {
            make_sinks(v, cfg)
        })
        .pop()
        .expect("one experiment")
    }

    /// One variant's run, with the invariant checker attached when the
    /// configuration asks for the full checks.
    fn run_variant(
        &self,
        v: &Variant,
        cfg: SimConfig,
        sinks: Vec<Box<dyn TraceSink>>,
    ) -> Result<VariantRun, SimError> {
        let seed = cfg.seed;
        let hash = crate::config_hash(&cfg);
        let cfg_checks = cfg.checks;
        let mut sim = Simulation::new(cfg).map_err(|e| e.in_variant(&self.name, &v.name))?;
        let checks = cfg_checks;
        if checks {
            sim.attach(Box::new(crate::check::Checker::new(true)));
        }
        for s in sinks {
            sim.attach(s);
        }
        let (result, mut sinks) = sim.run();
        if checks {
            sinks.remove(0); // the checker
        }
        if !result.ending.is_complete() {
            let ending = SimError::Run(result.ending.to_string());
            return Err(ending.in_variant(&self.name, &v.name));
        }
        if let Some(e) = result.procs.iter().find_map(|p| p.error.clone()) {
            return Err(SimError::Run(e).in_variant(&self.name, &v.name));
        }
        Ok(VariantRun {
            variant: v.name.clone(),
            result,
            sinks,
            seed,
            config_hash: hash,
        })
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
                    metric: m.name.get_ref().clone(),
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
                .filter(|r| r.metric == *m.name.get_ref() && r.published.is_some())
                .collect();
            let pairs: Vec<(&Row, &Row)> = if self.compare.is_empty() {
                let Some(base) = mine.first() else { continue };
                mine[1..].iter().map(|r| (*base, *r)).collect()
            } else {
                let find = |n: &str| mine.iter().find(|r| r.variant == n).copied();
                self.compare
                    .iter()
                    .filter_map(|p| Some((find(&p.get_ref()[0])?, find(&p.get_ref()[1])?)))
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
                    metric: m.name.get_ref().clone(),
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

/// A rough measure of a variant's work, used only to order the runs (the
/// results do not depend on it): the pages its processes move, a buffered page
/// counting three times (copied, written back, completed) and a direct one
/// once, plus the block-device pages ext4's lazy inode-table init zeroes in the
/// background (`Ext4Params`: a table per group after the first), at the
/// buffered weight but no more than the processes' own, since a kernel thread
/// does not keep the run going. Cheap: no file system is made for it. On XFS a
/// buffered page weighs eight: `xfs_cluster_write` ends its cluster at a
/// congested queue, so a streaming writer's writeback takes a step (an event,
/// and a bio for two pages) per page where ext4 takes a pagevec.
fn work_estimate(cfg: &SimConfig) -> u64 {
    let page = iostack_mm::PAGE_SIZE;
    let m = &cfg.machine;
    let buffered = if m.fs == machine::FsKind::Xfs { 8 } else { 3 };
    let fg: u64 = cfg
        .procs
        .iter()
        .map(|p| (p.io_size / page).saturating_mul(if p.direct { 1 } else { buffered }))
        .fold(0, u64::saturating_add);
    let bg = if m.fs == machine::FsKind::Ext4 {
        let cap = m.device.capacity_sectors();
        let sectors = cap.saturating_sub(m.partition.map_or(0, |(_, start)| start));
        let bs = m.fs_block_size as u64;
        let p = iostack_fs::ext4::Ext4Params::from_tunables(
            m.fs_block_size,
            sectors * 512 / bs,
            &cfg.tunables,
        );
        if p.lazy_itable_init && p.uninit_bg {
            let groups = p.blocks / p.blocks_per_group.max(1);
            let table = (p.inodes_per_group * p.inode_size).div_ceil(bs);
            groups.saturating_sub(1).saturating_mul(table * bs / page) * 3
        } else {
            0
        }
    } else {
        0
    };
    fg.saturating_add(bg.min(fg))
}

/// `Experiment::run` over several experiments at once: every variant of every
/// experiment goes into one longest-first pool, so that the short variants of
/// one experiment fill the cores while the long ones of another run. Each run
/// is a pure function of its configuration, so this changes no result; the
/// results come back per experiment, in the order given, each with the first
/// failing variant in its order as its error.
pub fn run_many(
    exps: &[(&Experiment, Option<(&str, &str)>)],
    seed: Seed,
    checks: bool,
    mut make_sinks: impl FnMut(&Experiment, &Variant, &SimConfig) -> Vec<Box<dyn TraceSink>>,
) -> Vec<Result<Vec<VariantRun>, SimError>> {
    let mut out: Vec<Result<Vec<VariantRun>, SimError>> = Vec::new();
    let mut jobs = Vec::new();
    let mut cost = Vec::new();
    for (k, &(e, fio_text)) in exps.iter().enumerate() {
        out.push(Ok(Vec::new()));
        let mut mine = Vec::new();
        for v in &e.variants {
            match e.config(v, seed, fio_text) {
                Ok(mut cfg) => {
                    cfg.checks = checks;
                    let sinks = make_sinks(e, v, &cfg);
                    mine.push((work_estimate(&cfg), (k, e, v, cfg, sinks)));
                }
                Err(err) => {
                    out[k] = Err(err);
                    mine.clear();
                    break;
                }
            }
        }
        for (c, job) in mine {
            cost.push(c);
            jobs.push(job);
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runs = run_longest_first(jobs, &cost, threads, |(k, e, v, cfg, sinks)| {
        (k, e.run_variant(v, cfg, sinks))
    });
    for (k, r) in runs {
        if let Ok(list) = &mut out[k] {
            match r {
                Ok(run) => list.push(run),
                Err(err) => out[k] = Err(err),
            }
        }
    }
    out
}

/// `run_parallel` with the jobs started in decreasing `cost` (ties in the jobs'
/// order): the longest-processing-time-first schedule, which keeps a long job
/// from starting last. The results are in the jobs' order.
pub fn run_longest_first<J: Send, R: Send>(
    jobs: Vec<J>,
    cost: &[u64],
    threads: usize,
    f: impl Fn(J) -> R + Sync,
) -> Vec<R> {
    assert_eq!(jobs.len(), cost.len(), "one cost per job");
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(cost[i]), i));
    let mut slots: Vec<Option<J>> = jobs.into_iter().map(Some).collect();
    let sorted: Vec<(usize, J)> = order
        .iter()
        .map(|&i| (i, slots[i].take().expect("each job once")))
        .collect();
    let mut out: Vec<Option<R>> = (0..sorted.len()).map(|_| None).collect();
    for (i, r) in run_parallel(sorted, threads, |(i, j)| (i, f(j))) {
        out[i] = Some(r);
    }
    out.into_iter().map(|r| r.expect("every job ran")).collect()
}

/// `f` over `jobs` on up to `threads` threads, each taking the next job when it
/// is free; the results in the jobs' order.
pub fn run_parallel<J: Send, R: Send>(
    jobs: Vec<J>,
    threads: usize,
    f: impl Fn(J) -> R + Sync,
) -> Vec<R> {
    let n = jobs.len();
    let queue: Vec<Mutex<Option<J>>> = jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
    let results: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= n {
            break;
        }
        let job = queue[i].lock().expect("job").take().expect("taken once");
        let r = f(job);
        *results[i].lock().expect("result") = Some(r);
    };
    std::thread::scope(|s| {
        for _ in 1..threads.clamp(1, n.max(1)) {
            s.spawn(work);
        }
        work();
    });
    results
        .into_iter()
        .map(|r| r.into_inner().expect("result").expect("every job ran"))
        .collect()
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
    fn longest_first_starts_by_cost_and_returns_in_job_order() {
        let started = Mutex::new(Vec::new());
        let jobs = vec!['a', 'b', 'c', 'd'];
        let out = run_longest_first(jobs, &[1, 5, 5, 3], 1, |j| {
            started.lock().unwrap().push(j);
            j.to_ascii_uppercase()
        });
        assert_eq!(out, vec!['A', 'B', 'C', 'D']);
        assert_eq!(*started.lock().unwrap(), vec!['b', 'c', 'd', 'a']);
        let par = run_longest_first((0..9).collect(), &[3; 9], 2, |j: u32| j * 2);
        assert_eq!(par, (0..9).map(|j| j * 2).collect::<Vec<_>>());
    }

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
            err.starts_with("t.toml:13: unknown metric 'write_furlongs'"),
            "{err}"
        );
        let bad = EXP.replace("\"a\" = 2968", "\"b\" = 2968");
        let err = parse("t.toml", &bad).unwrap_err().to_string();
        assert!(err.contains("unknown variant 'b'"), "{err}");
        let bad = EXP.replace("[workload]", "compare = [[\"a\", \"z\"]]\n[workload]");
        let err = parse("t.toml", &bad).unwrap_err().to_string();
        assert!(
            err.starts_with("t.toml:7: compare: names variant 'z'"),
            "{err}"
        );
        let bad = EXP.replace("[[variant]]\nname = \"a\"", "");
        let err = parse("t.toml", &bad).unwrap_err().to_string();
        assert!(err.starts_with("t.toml:"), "{err}");
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
            err.starts_with("t variant a: t.toml:11: key 'fs': unsupported 'btrfs'"),
            "{err}"
        );
        let text = EXP.replace("name = \"a\"", "name = \"a\"\nset = [\"vm/nope=1\"]");
        let e = parse("t.toml", &text).unwrap();
        let err = e
            .config(&e.variants[0], Seed(1), None)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            err.location(),
            (Some("t.toml"), Some(11), Some("vm/nope=1"))
        );
        assert!(
            err.to_string()
                .starts_with("t variant a: t.toml:11: set vm/nope=1: unknown tunable"),
            "{err}"
        );
        let text = EXP.replace(
            "name = \"a\"",
            "name = \"a\"\nmachine_set = [\"cpu_wake_ns = 18446744073709551615\"]",
        );
        let e = parse("t.toml", &text).unwrap();
        let err = e
            .config(&e.variants[0], Seed(1), None)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            err.location(),
            (Some("t.toml"), Some(11), Some("cpu_wake_ns"))
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
