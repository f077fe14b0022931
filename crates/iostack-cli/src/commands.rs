//! The commands: `run`, `dd`, `reproduce`, `tunables`.

use crate::args::{self, ArgError, Parsed};
use crate::out::{self, CliError};
use iostack_core::{Profile, TraceSink, Tunables};
use iostack_des::{Duration, Seed};
use iostack_report::blktrace::BlktraceWriter;
use iostack_sim::experiment::{self, Experiment, VariantRun};
use iostack_sim::machine::{self, Machine};
use iostack_sim::stats::RunResult;
use iostack_sim::{config_hash, tunable_tables, SimConfig, SimError, Simulation};
use std::any::Any;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(crate) type Result<T> = std::result::Result<T, CliError>;

const COMMON: &[&str] = &[
    "machine",
    "kernel",
    "sched",
    "set",
    "seed",
    "output-format",
    "blktrace",
    "ftrace",
    "blkparse",
    "check",
    "until",
    "layout",
    "filefrag",
    "filefrag-v",
    "help",
];
/// `iostack run` takes the common flags and `--help-options`.
pub const RUN_FLAGS: &[&str] = &[
    "machine",
    "kernel",
    "sched",
    "set",
    "seed",
    "output-format",
    "blktrace",
    "ftrace",
    "blkparse",
    "check",
    "until",
    "layout",
    "filefrag",
    "filefrag-v",
    "requests",
    "help",
    "help-options",
];
/// `iostack replay` takes the common flags and the replay ones.
pub const REPLAY_FLAGS: &[&str] = &[
    "machine",
    "kernel",
    "sched",
    "set",
    "seed",
    "output-format",
    "blktrace",
    "ftrace",
    "blkparse",
    "check",
    "until",
    "layout",
    "iodepth",
    "no-stall",
    "time-scale",
    "redirect",
    "help",
];
const REPRODUCE: &[&str] = &[
    "seed",
    "json",
    "trace-dir",
    "experiments",
    "html",
    "check",
    "help",
];
const TUNABLES: &[&str] = &["machine", "kernel", "sched", "set", "markdown", "help"];
const MACHINES: &[&str] = &["markdown", "help"];

/// The experiment files built into the binary (`experiments/*.toml`).
const BUILTIN_EXPERIMENTS: &[(&str, &str)] = &[
    (
        "seed-000.toml",
        include_str!("../../../experiments/seed-000.toml"),
    ),
    (
        "seed-001.toml",
        include_str!("../../../experiments/seed-001.toml"),
    ),
    (
        "seed-002.toml",
        include_str!("../../../experiments/seed-002.toml"),
    ),
    (
        "seed-003.toml",
        include_str!("../../../experiments/seed-003.toml"),
    ),
    (
        "seed-004.toml",
        include_str!("../../../experiments/seed-004.toml"),
    ),
    (
        "sched-2024.toml",
        include_str!("../../../experiments/sched-2024.toml"),
    ),
    (
        "sched-2024-writer.toml",
        include_str!("../../../experiments/sched-2024-writer.toml"),
    ),
];

/// Job files the built-in experiments refer to.
const BUILTIN_FILES: &[(&str, &str)] = &[
    (
        "experiments/seed-000.fio",
        include_str!("../../../experiments/seed-000.fio"),
    ),
    (
        "experiments/seed-001.fio",
        include_str!("../../../experiments/seed-001.fio"),
    ),
    (
        "experiments/sched-2024.fio",
        include_str!("../../../experiments/sched-2024.fio"),
    ),
    (
        "experiments/sched-2024-writer.fio",
        include_str!("../../../experiments/sched-2024-writer.fio"),
    ),
];

fn usage() -> String {
    format!(
        "iostack: a deterministic simulator of the Linux storage I/O stack\n\n\
         usage:\n  iostack run JOB.fio [options]\n  iostack dd OPERAND... [options]\n  \
         iostack iozone IOZONE-OPTION... [options]\n  iostack fs_mark FS_MARK-OPTION... [options]\n  \
         iostack bonnie BONNIE-OPTION... [options]\n  \
         iostack replay TRACE [--iodepth N] [--no-stall] [--time-scale PCT] [--redirect DEV] [options]\n  \
         iostack sweep GRID.toml --out DIR [--workers N]\n  \
         iostack reproduce [NAME...] [--json] [--trace-dir DIR] [--seed N] [--html FILE] [--check]\n  \
         iostack report JOB.fio [options] --html FILE | --sweep DIR --html FILE\n  \
         iostack tunables [--kernel P] [--sched S] [--set K=V]...\n  \
         iostack machines [--markdown]\n\noptions:\n{}",
        args::help(COMMON)
    )
}

pub fn dispatch(argv: &[String]) -> Result<ExitCode> {
    let Some(cmd) = argv.first() else {
        out::stderr(&usage());
        return Ok(ExitCode::from(2));
    };
    let rest = &argv[1..];
    let ae = |e: ArgError| CliError::Usage(e.0);
    match cmd.as_str() {
        "run" => run_fio(&args::parse(rest, RUN_FLAGS).map_err(ae)?),
        "dd" => run_dd(&args::parse(rest, COMMON).map_err(ae)?),
        "replay" => run_replay(&args::parse(rest, REPLAY_FLAGS).map_err(ae)?),
        "iozone" => {
            crate::tools::run_iozone(&args::parse(rest, crate::tools::TOOL_FLAGS).map_err(ae)?)
        }
        "fs_mark" => {
            crate::tools::run_fs_mark(&args::parse(rest, crate::tools::TOOL_FLAGS).map_err(ae)?)
        }
        "bonnie" => {
            crate::tools::run_bonnie(&args::parse(rest, crate::tools::TOOL_FLAGS).map_err(ae)?)
        }
        "sweep" => {
            crate::sweep::command(&args::parse(rest, crate::sweep::SWEEP_FLAGS).map_err(ae)?)
        }
        "report" => crate::report::command(rest),
        "reproduce" => reproduce(&args::parse(rest, REPRODUCE).map_err(ae)?),
        "tunables" => tunables(&args::parse(rest, TUNABLES).map_err(ae)?),
        "machines" => machines(&args::parse(rest, MACHINES).map_err(ae)?),
        "help" | "--help" | "-h" => {
            out::stdout(&usage())?;
            Ok(ExitCode::SUCCESS)
        }
        _ => Err(format!("unknown command '{cmd}'; see `iostack --help`").into()),
    }
}

fn seed_of(p: &Parsed) -> Result<Seed> {
    match p.get("seed") {
        None => Ok(Seed(1)),
        Some(s) => s
            .parse::<u64>()
            .map(Seed)
            .map_err(|_| format!("--seed: expected an unsigned integer, got '{s}'").into()),
    }
}

pub(crate) fn machine_of(p: &Parsed, default: &str) -> Result<Machine> {
    machine_of_name(p.get("machine").unwrap_or(default))
}

/// A machine as `--machine` names it: a machine file if one is there, else a
/// preset.
pub(crate) fn machine_of_name(name: &str) -> Result<Machine> {
    if Path::new(name).is_file() {
        let text = std::fs::read_to_string(name).map_err(|e| CliError::io(name, e))?;
        Ok(machine::parse_file(name, &text).map_err(SimError::from)?)
    } else {
        Ok(machine::preset(name).map_err(SimError::from)?)
    }
}

fn tunables_of(p: &Parsed) -> Result<Tunables> {
    let profile = Profile::parse(p.get("kernel").unwrap_or("2.6.36"))
        .map_err(|e| SimError::Profile(format!("--kernel: {e}")))?;
    let mut t = Tunables::new(profile, &tunable_tables());
    for kv in p.all("set") {
        t.set_str(kv).map_err(|source| SimError::Tunable {
            file: None,
            line: None,
            origin: "--set".into(),
            assignment: kv.to_string(),
            source: Box::new(source),
        })?;
    }
    Ok(t)
}

/// `--layout PATH=SIZE[@BLOCK]` files, as processes that only lay out.
fn layouts(p: &Parsed, m: &Machine) -> Result<Vec<iostack_sim::workload::ProcSpec>> {
    let mut v = Vec::new();
    for l in p.all("layout") {
        v.push(iostack_sim::frontend::layout_on(l, m)?);
    }
    Ok(v)
}

pub(crate) fn config_of(
    p: &Parsed,
    work: Vec<iostack_sim::workload::ProcSpec>,
    m: Machine,
) -> Result<SimConfig> {
    let t = tunables_of(p)?;
    let mut procs = layouts(p, &m)?;
    procs.extend(work);
    let scheduler = match p.get("sched") {
        Some(s) => s.to_string(),
        None => iostack_sim::machine::default_scheduler(&m, t.profile()),
    };
    iostack_iosched::check(&scheduler, &t).map_err(SimError::Scheduler)?;
    Ok(SimConfig {
        machine: m,
        tunables: t,
        scheduler,
        seed: seed_of(p)?,
        procs,
        checks: p.has("check") || cfg!(debug_assertions),
        until: until_of(p)?,
    })
}

/// `--until DURATION`: a limit the user sets on simulated time.
fn until_of(p: &Parsed) -> Result<Option<Duration>> {
    let Some(s) = p.get("until") else {
        return Ok(None);
    };
    match iostack_workload::parse_time_ns(s, iostack_workload::TimeUnit::Seconds) {
        Ok(0) => Err(format!("--until {s}: the limit must be above zero").into()),
        Ok(ns) => Ok(Some(Duration(ns))),
        Err(e) => Err(format!("--until {s}: {e} (e.g. 30s, 10m, 2h)").into()),
    }
}

/// `iostack tunables`: every tunable of the profile with value and unit, like
/// reading sysfs.
fn tunables(p: &Parsed) -> Result<ExitCode> {
    if p.has("help") {
        let help = format!(
            "usage: iostack tunables [options]\n{}",
            args::help(TUNABLES)
        );
        out::stdout(&help)?;
        return Ok(ExitCode::SUCCESS);
    }
    if p.has("markdown") {
        out::stdout(&tunables_markdown())?;
        return Ok(ExitCode::SUCCESS);
    }
    let t = tunables_of(p)?;
    let m = machine_of(p, "sata-2009")?;
    let default = iostack_sim::machine::default_scheduler(&m, t.profile());
    let sched = tunables_sched(p, &t, &default)?;
    let mut s = format!(
        "# kernel profile {}, machine {}, scheduler {}\n",
        t.profile(),
        m.name,
        sched.unwrap_or("none")
    );
    let names: Vec<String> = iostack_iosched::available(t.profile())
        .map(|d| {
            if Some(d.name) == sched {
                format!("[{}]", d.name)
            } else {
                d.name.to_string()
            }
        })
        .collect();
    let line = if names.is_empty() {
        "(none modelled for this kernel)".to_string()
    } else {
        names.join(" ")
    };
    s.push_str(&format!("{:<40} {}\n", "queue/scheduler", line));
    for (d, v) in t.iter() {
        if let Some(rest) = d.name.strip_prefix("iosched/") {
            if sched.is_none_or(|s| !rest.starts_with(&format!("{s}/"))) {
                continue;
            }
        }
        let val = Tunables::render(d, v);
        let unit = match d.unit {
            iostack_core::Unit::Enum(names) => format!("one of {}", names.join("|")),
            u => u.label().to_string(),
        };
        s.push_str(&format!("{:<40} {:<20} {}\n", d.name, val, unit));
    }
    out::stdout(&s)?;
    Ok(ExitCode::SUCCESS)
}

/// `iostack machines`: the machine presets, one a line (`--markdown`: the
/// reference docs/presets.md, with every device preset).
fn machines(p: &Parsed) -> Result<ExitCode> {
    let text = if p.has("help") {
        format!(
            "usage: iostack machines [options]\nLists the machine presets `--machine` takes.\n{}",
            args::help(MACHINES)
        )
    } else if p.has("markdown") {
        crate::catalog::presets_markdown()
    } else if let Some(x) = p.positional.first() {
        return Err(format!("machines: unexpected argument '{x}'").into());
    } else {
        crate::catalog::machines_text()
    };
    out::stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The scheduler `iostack tunables` shows: `--sched` (checked against the
/// registry), else the machine's default if the kernel has it, else the
/// kernel's first, else none.
fn tunables_sched(p: &Parsed, t: &Tunables, default: &str) -> Result<Option<&'static str>> {
    if let Some(s) = p.get("sched") {
        return iostack_iosched::check(s, t)
            .map(|d| Some(d.name))
            .map_err(|e| SimError::Scheduler(format!("--sched {s}: {e}")).into());
    }
    let mut avail = iostack_iosched::available(t.profile());
    let first = avail.next().map(|d| d.name);
    Ok(iostack_iosched::available(t.profile())
        .find(|d| d.name == default)
        .map(|d| d.name)
        .or(first))
}

/// The I/O scheduler registry as a markdown table.
fn schedulers_markdown() -> String {
    let mut s = String::from(
        "## I/O schedulers\n\n`--sched NAME` or an experiment's `scheduler`; a scheduler \
         the kernel profile lacks, or a tunable of a scheduler that is not selected, is \
         refused.\n\n| name | profiles | kernels | tunables | description |\n|---|---|---|---|---|\n",
    );
    for d in iostack_iosched::SCHEDULERS {
        let profiles: Vec<&str> = Profile::ALL
            .iter()
            .filter(|&&p| (d.in_profile)(p))
            .map(|p| p.name())
            .collect();
        let tun = if d.tunables.is_empty() {
            "none".to_string()
        } else {
            format!("`iosched/{}/*` ({})", d.name, d.tunables.len())
        };
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            d.name,
            profiles.join(", "),
            d.kernels,
            tun,
            d.doc.split_whitespace().collect::<Vec<_>>().join(" ")
        ));
    }
    s.push_str(
        "\n2.4's queue (`drivers/block/ll_rw_blk.c`) runs its own `elevator_t`: \
         `elevator_linus` unless named otherwise; 6.x (blk-mq) has none and mq-deadline, \
         and refuses bfq and kyber with the reason.\n\n\
         ## Tunables\n\n",
    );
    s
}

/// The tunable reference, generated from the one table: name, unit, range, the
/// default of every profile, and the doc text.
pub fn tunables_markdown() -> String {
    let per: Vec<Tunables> = Profile::ALL
        .iter()
        .map(|&pr| Tunables::new(pr, &tunable_tables()))
        .collect();
    let mut s = String::from(
        "# Tunables\n\nGenerated by `iostack tunables --markdown` from the tables the code \
         reads (do not edit; a test checks it is current). Set any of them with \
         `--set NAME=VALUE` or in an experiment's `set = [...]`.\n\n",
    );
    s.push_str(&schedulers_markdown());
    s.push_str("| name | unit | range |");
    for pr in Profile::ALL {
        s.push_str(&format!(" {pr} |"));
    }
    s.push_str(" description |\n|---|---|---|");
    for _ in Profile::ALL {
        s.push_str("---|");
    }
    s.push_str("---|\n");
    for (d, _) in per[0].iter() {
        let (unit, range) = match d.unit {
            iostack_core::Unit::Enum(names) => ("enum".to_string(), names.join(", ")),
            u => (u.label().to_string(), format!("{}..={}", d.min, d.max)),
        };
        s.push_str(&format!("| `{}` | {} | {} |", d.name, unit, range));
        for t in &per {
            s.push_str(&format!(" {} |", Tunables::render(d, t.get(d.name))));
        }
        let doc = d.doc.split_whitespace().collect::<Vec<_>>().join(" ");
        s.push_str(&format!(" {} |\n", doc.replace('|', "\\|")));
    }
    s
}

fn run_fio(p: &Parsed) -> Result<ExitCode> {
    if p.has("help-options") {
        out::stdout(&iostack_workload::options::markdown())?;
        return Ok(ExitCode::SUCCESS);
    }
    if p.has("help") || p.positional.is_empty() {
        let help = format!(
            "usage: iostack run JOB.fio [options]\n{}",
            args::help(RUN_FLAGS)
        );
        if p.has("help") {
            out::stdout(&help)?;
            return Ok(ExitCode::SUCCESS);
        }
        out::stderr(&help);
        return Ok(ExitCode::from(2));
    }
    let jobs: Vec<JobSource> = p.positional.iter().cloned().map(JobSource::Path).collect();
    let (cfg, report) = fio_config(p, &jobs)?;
    simulate_and_report(p, cfg, report)
}

/// Where a fio job file comes from: a path, or its text (`name` stands for the
/// file in error messages).
#[derive(Clone, Debug)]
pub enum JobSource {
    Path(String),
    Text { name: String, text: String },
}

/// The configuration and report bookkeeping of fio job files, as `iostack run`
/// builds them from its options `p` (machine, kernel, scheduler, tunables, seed,
/// layouts).
pub fn fio_config(p: &Parsed, jobs: &[JobSource]) -> Result<(SimConfig, Report)> {
    let mut procs = Vec::new();
    // Layout-only processes come first and have no fio report.
    let mut meta = vec![None; p.all("layout").len()];
    let mut globals = Vec::new();
    let m = machine_of(p, "sata-2009")?;
    for job in jobs {
        let mut env = iostack_sim::frontend::fio_env(&m, std::env::vars().collect());
        env.cwd = std::env::current_dir().map_err(|e| CliError::io(".", e))?;
        let parsed = match job {
            JobSource::Path(path) => iostack_workload::parse_job_file_all(path, &env),
            JobSource::Text { name, text } => {
                iostack_workload::parse_job_bytes_all(text.as_bytes(), name, &env)
            }
        }
        .map_err(SimError::from)?;
        // Every problem of the file at once: parse errors and refusals.
        let jf = iostack_sim::frontend::all_problems(parsed).map_err(SimError::from)?;
        let mut f = iostack_sim::frontend::fio_procs_loading(&jf, &m, &read_log)?;
        // Job files given together are separated by an implicit stonewall, and
        // each starts new reporting groups after the previous file's.
        let base = meta
            .iter()
            .flatten()
            .map(|j: &iostack_sim::frontend::JobMeta| j.group + 1)
            .max()
            .unwrap_or(0);
        if base > 0 {
            if let Some(first) = f.procs.first_mut() {
                first.stonewall = true;
            }
            for (pr, jm) in f.procs.iter_mut().zip(f.meta.iter_mut()) {
                pr.group += base;
                if let Some(jm) = jm {
                    jm.group += base;
                }
            }
        }
        procs.extend(f.procs);
        meta.extend(f.meta);
        globals.extend(f.global_options);
    }
    let cfg = config_of(p, procs, m)?;
    Ok((cfg, Report::Fio { meta, globals }))
}

/// A replay log by name (fio's `read_iolog`): the file, or the per-CPU files
/// `NAME.blktrace.0`, `.1`, ... of a blktrace (what `--blktrace NAME` and
/// `blktrace -o NAME` write).
pub fn read_log(name: &str) -> std::result::Result<Vec<Vec<u8>>, String> {
    let read = |p: &str| std::fs::read(p).map_err(|e| format!("{p}: {e}"));
    if Path::new(name).is_file() {
        return Ok(vec![read(name)?]);
    }
    let mut parts = Vec::new();
    while Path::new(&format!("{name}.blktrace.{}", parts.len())).is_file() {
        parts.push(read(&format!("{name}.blktrace.{}", parts.len()))?);
    }
    if parts.is_empty() {
        return Err(format!(
            "{name}: No such file (nor {name}.blktrace.0, the per-CPU files of a blktrace)"
        ));
    }
    Ok(parts)
}

/// `iostack replay TRACE`: fio's replay of a blktrace or iolog
/// (`--read_iolog=TRACE --replay_redirect=/dev/DISK --ioengine=libaio
/// --direct=1`, iodepth as fio probes it), as btreplay sends a trace back to
/// a device.
fn run_replay(p: &Parsed) -> Result<ExitCode> {
    let usage = format!(
        "usage: iostack replay TRACE [options]\n  TRACE: a blktrace (one file, or the \
         prefix of the per-CPU files PREFIX.blktrace.N) or a fio iolog (v2, v3)\n{}",
        args::help(REPLAY_FLAGS)
    );
    if p.has("help") {
        out::stdout(&usage)?;
        return Ok(ExitCode::SUCCESS);
    }
    let [trace] = p.positional.as_slice() else {
        out::stderr(&usage);
        return Ok(ExitCode::from(2));
    };
    let m = machine_of(p, "sata-2009")?;
    let redirect = p
        .get("redirect")
        .map_or_else(|| format!("/dev/{}", m.disk_name), str::to_string);
    let mut text = format!(
        "[replay]\nread_iolog={trace}\nreplay_redirect={redirect}\nioengine=libaio\ndirect=1\n"
    );
    if let Some(d) = p.get("iodepth") {
        text.push_str(&format!("iodepth={d}\n"));
    }
    if p.has("no-stall") {
        text.push_str("replay_no_stall=1\n");
    }
    if let Some(s) = p.get("time-scale") {
        text.push_str(&format!("replay_time_scale={s}\n"));
    }
    let job = JobSource::Text {
        name: "replay".into(),
        text,
    };
    let (cfg, report) = fio_config(p, &[job])?;
    simulate_and_report(p, cfg, report)
}

fn run_dd(p: &Parsed) -> Result<ExitCode> {
    if p.has("help") {
        out::stdout(&format!(
            "usage: iostack dd if=FILE of=FILE iflag=direct bs=N count=N [options]\n{}",
            args::help(COMMON)
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let m = machine_of(p, "sata-2009")?;
    if p.positional.is_empty() {
        return Err(
            "dd: no operands; try `iostack dd if=FILE of=/dev/null iflag=direct bs=64k count=1`"
                .into(),
        );
    }
    let procs = iostack_sim::frontend::dd_procs(&p.positional.join(" "), &m)?;
    let cfg = config_of(p, procs, m)?;
    simulate_and_report(p, cfg, Report::Dd)
}

/// What report a run prints: fio's (with the jobs' bookkeeping) or dd's.
pub enum Report {
    Fio {
        meta: Vec<Option<iostack_sim::frontend::JobMeta>>,
        globals: Vec<(String, String)>,
    },
    Dd,
}

pub fn take<T: 'static>(sinks: &mut Vec<Box<dyn TraceSink>>) -> Option<Box<T>> {
    let i = sinks.iter().position(|s| (&**s as &dyn Any).is::<T>())?;
    let any: Box<dyn Any> = sinks.remove(i);
    any.downcast::<T>().ok()
}

/// A finished simulation, before its report is rendered.
pub struct Simulated {
    pub result: RunResult,
    /// The trace sinks: those of the trace options, then the `extra` ones.
    pub sinks: Vec<Box<dyn TraceSink>>,
    observer: Option<Box<dyn iostack_sim::IoObserver>>,
    pub seed: Seed,
    pub hash: u64,
    disk_name: String,
    pub fs_name: String,
}

/// The `--output-format` asked for, checked.
pub fn output_format(p: &Parsed) -> Result<String> {
    let fmt = p.get("output-format").unwrap_or("normal").to_string();
    if !crate::fio_out::FORMATS.contains(&fmt.as_str()) {
        return Err(crate::fio_out::unknown_format(&fmt).into());
    }
    Ok(fmt)
}

/// Run `cfg` with the sinks the options `p` ask for and the `extra` ones.
pub fn simulate(
    p: &Parsed,
    cfg: SimConfig,
    report: &Report,
    extra: Vec<Box<dyn TraceSink>>,
) -> Result<Simulated> {
    let hash = config_hash(&cfg);
    let seed = cfg.seed;
    let disk = cfg.machine.disk;
    let disk_name = cfg.machine.disk_name.clone();
    let fs_name = cfg.machine.fs.name().to_string();
    // A run cut short by `--until` may end with I/O in flight (it is reported
    // as truncated), so the trace checker then does not expect a drained queue;
    // a complete run's drain is also checked at the end in every build.
    let drained = cfg.until.is_none();
    let mut sim = Simulation::new(cfg)?;
    if let Report::Fio { meta, .. } = report {
        sim.observe(Box::new(crate::fio_out::FioObserver::new(meta)?));
    }
    if p.has("check") {
        sim.attach(Box::new(iostack_sim::check::Checker::new(drained)));
    }
    crate::sinks::attach_streams(&mut sim, p, disk, seed, hash)?;
    for s in extra {
        sim.attach(s);
    }
    // Provenance inside the trace files too, as a blktrace message.
    sim.note(&format!("iostack {}", crate::sinks::provenance(seed, hash)));
    let (result, sinks, observer) = sim.run_observed();
    Ok(Simulated {
        result,
        sinks,
        observer,
        seed,
        hash,
        disk_name,
        fs_name,
    })
}

/// Numbers for work that was not done are not printed: a run that neither
/// completed nor was truncated by `--until` is an error.
pub fn check_ending(result: &RunResult) -> Result<()> {
    if !result.ending.is_complete() && !result.ending.is_truncated() {
        return Err(SimError::Run(result.ending.to_string()).into());
    }
    Ok(())
}

/// fio's report of a simulated run (its observer is used up).
pub fn fio_report(
    s: &mut Simulated,
    globals: Vec<(String, String)>,
) -> Result<iostack_report::fio::FioReport> {
    let any: Box<dyn Any> = s.observer.take().ok_or("fio report made twice")?;
    let mut obs = any
        .downcast::<crate::fio_out::FioObserver>()
        .map_err(|_| "not a fio run")?;
    let r = crate::fio_out::build(&s.result, &mut obs, globals, &s.disk_name, s.seed, s.hash);
    obs.finish_logs(&s.result)?;
    Ok(r)
}

/// fio's verification is I/O here: say that no data was compared, once per
/// job that verified.
fn verify_note(r: &iostack_sim::stats::RunResult) {
    let mut names: Vec<&str> = r
        .procs
        .iter()
        .filter(|p| p.verify_start.is_some())
        .map(|p| p.name.as_str())
        .collect();
    names.dedup();
    for name in names {
        out::stderr(&format!(
            "iostack: job '{name}': verify: the verification reads are issued as fio issues \
             them; no data is compared (a simulation has no data)\n"
        ));
    }
}

fn simulate_and_report(p: &Parsed, cfg: SimConfig, report: Report) -> Result<ExitCode> {
    let fmt = output_format(p)?;
    let mut s = simulate(p, cfg, &report, Vec::new())?;
    crate::sinks::finish_streams(&mut s.sinks, p)?;
    let err = s.result.procs.iter().find_map(|p| p.error.clone());
    check_ending(&s.result)?;
    match report {
        Report::Fio { globals, .. } => {
            verify_note(&s.result);
            let r = fio_report(&mut s, globals)?;
            out::stdout(&crate::fio_out::format(&r, &fmt)?)?;
        }
        Report::Dd => {
            if s.result.ending.is_truncated() {
                out::stderr(&format!("iostack: TRUNCATED: {}\n", s.result.ending));
            }
            out::stdout(&crate::sinks::dd_report(&s.result, s.seed, s.hash))?
        }
    }
    for (flag, verbose) in [("filefrag", false), ("filefrag-v", true)] {
        for path in p.all(flag) {
            out::stdout(&crate::sinks::filefrag(
                &s.result, path, verbose, &s.fs_name,
            )?)?;
        }
    }
    if let Some(e) = err {
        return Err(SimError::Run(e).into());
    }
    Ok(ExitCode::SUCCESS)
}

// -------------------------------------------------------------------------------
// reproduce

fn load_experiments(p: &Parsed) -> Result<Vec<(String, String)>> {
    match p.get("experiments") {
        None => Ok(BUILTIN_EXPERIMENTS
            .iter()
            .map(|(n, t)| (format!("experiments/{n}"), t.to_string()))
            .collect()),
        Some(dir) => {
            let mut v = Vec::new();
            let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| CliError::io(format!("--experiments {dir}"), e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            entries.sort();
            for path in entries {
                let text =
                    std::fs::read_to_string(&path).map_err(|e| CliError::io(path.display(), e))?;
                v.push((path.display().to_string(), text));
            }
            Ok(v)
        }
    }
}

fn reproduce(p: &Parsed) -> Result<ExitCode> {
    if p.has("help") {
        out::stdout(&format!(
            "usage: iostack reproduce [NAME...] [options]\n{}",
            args::help(REPRODUCE)
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let seed = seed_of(p)?;
    let mut exps: Vec<(String, Experiment)> = Vec::new();
    for (path, text) in load_experiments(p)? {
        exps.push((path.clone(), experiment::parse(&path, &text)?));
    }
    for want in &p.positional {
        if !exps.iter().any(|(_, e)| &e.name == want) {
            let names: Vec<&str> = exps.iter().map(|(_, e)| e.name.as_str()).collect();
            let names = names.join(", ");
            return Err(format!("no experiment named '{want}' (have: {names})").into());
        }
    }
    exps.retain(|(_, e)| p.positional.is_empty() || p.positional.contains(&e.name));
    let mut fios = Vec::new();
    for (path, e) in &exps {
        fios.push(experiment_fio(p, path, e)?);
    }
    let json = p.has("json");
    let trace_dir = p.get("trace-dir").map(PathBuf::from);
    let mut open_err = None;
    let batch: Vec<(&Experiment, Option<(&str, &str)>)> = exps
        .iter()
        .zip(&fios)
        .map(|((_, e), f)| (e, f.as_ref().map(|(a, b)| (a.as_str(), b.as_str()))))
        .collect();
    let checks = p.has("check") || cfg!(debug_assertions);
    let results = experiment::run_many(&batch, seed, checks, |e, v, cfg| {
        let dir = trace_dir.as_ref().map(|d| d.join(&e.name).join(&v.name));
        crate::sinks::reproduce_sinks(e, cfg, dir.as_deref()).unwrap_or_else(|err| {
            open_err.get_or_insert(err);
            Vec::new()
        })
    });
    if let Some(err) = open_err {
        return Err(err);
    }
    let mut records = Vec::new();
    let mut text = String::new();
    let mut plotted = Vec::new();
    for ((_, e), runs) in exps.iter().zip(results) {
        let mut runs = runs?;
        if let Some(dir) = &trace_dir {
            for r in &mut runs {
                let d = dir.join(&e.name).join(&r.variant);
                let mut w = take::<BlktraceWriter>(&mut r.sinks).expect("attached");
                w.finish_files()
                    .map_err(|err| CliError::io(d.display(), err))?;
            }
        }
        let rows = e.rows(&runs);
        let changes = e.changes(&rows);
        if p.has("html") {
            plotted.push((e, rows.clone()));
        }
        if json {
            json_records(e, &runs, &rows, &mut records)?;
        } else {
            text.push_str(&crate::sinks::reproduce_text(e, &mut runs, &rows, &changes));
        }
    }
    if let Some(f) = p.get("html") {
        std::fs::write(f, crate::html::report(&plotted))
            .map_err(|err| CliError::io(format!("--html {f}"), err))?;
    }
    if json {
        let json = serde_json::to_string_pretty(&serde_json::Value::Array(records))
            .map_err(|e| CliError::Usage(format!("JSON output: {e}")))?;
        out::stdout(&format!("{json}\n"))?;
    } else {
        out::stdout(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The fio job text of an experiment's workload, if it has one: the built-in
/// copy for the built-in set, else the file beside the experiment file.
fn experiment_fio(p: &Parsed, path: &str, e: &Experiment) -> Result<Option<(String, String)>> {
    let Some(f) = &e.workload.fio else {
        return Ok(None);
    };
    let dir = Path::new(path).parent().unwrap_or(Path::new("."));
    let fp = dir.join(f);
    let builtin = BUILTIN_FILES
        .iter()
        .find(|(n, _)| Path::new(n) == fp && p.get("experiments").is_none());
    let t = match builtin {
        Some((_, t)) => t.to_string(),
        None => std::fs::read_to_string(&fp).map_err(|err| CliError::io(fp.display(), err))?,
    };
    Ok(Some((fp.display().to_string(), t)))
}

/// `reproduce --json`: the records of one experiment; its provenance (seed and
/// configuration hash per variant) goes to stderr, so the records keep their
/// documented fields.
fn json_records(
    e: &Experiment,
    runs: &[VariantRun],
    rows: &[experiment::Row],
    records: &mut Vec<serde_json::Value>,
) -> Result<()> {
    for r in runs {
        out::stderr(&format!(
            "iostack: {} variant {}: {}\n",
            e.name,
            r.variant,
            crate::sinks::provenance(r.seed, r.config_hash)
        ));
    }
    for r in rows {
        records.push(serde_json::json!({
            "experiment": r.experiment,
            "variant": r.variant,
            "metric": r.metric,
            "unit": r.unit,
            "published": r.published,
            "simulated": r.simulated,
        }));
    }
    Ok(())
}

#[allow(dead_code)]
fn _unused(_: &VariantRun) {}
