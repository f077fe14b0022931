//! The library entry points a binding calls: the same option handling,
//! simulation and report code as `iostack run`, without standard output.

use crate::args::{self, Parsed};
use crate::commands::{self, JobSource, Report, Result};
use crate::out::CliError;
use iostack_core::TraceSink;
use iostack_sim::SimError;

/// The inputs of one fio run, as `iostack run`'s options name them.
#[derive(Clone, Debug, Default)]
pub struct RunInputs {
    pub jobs: Vec<JobSource>,
    pub machine: Option<String>,
    pub kernel: Option<String>,
    pub sched: Option<String>,
    pub seed: Option<u64>,
    /// Tunable assignments `NAME=VALUE`, as `--set` takes them.
    pub sets: Vec<String>,
    /// `--until DURATION`.
    pub until: Option<String>,
    /// `--layout PATH=SIZE[@BLOCK]`.
    pub layouts: Vec<String>,
    /// Trace files, as `--blktrace PREFIX`, `--blkparse FILE`, `--ftrace FILE`
    /// (`-`, standard output, is refused: a binding has none to share).
    pub blktrace: Option<String>,
    pub blkparse: Option<String>,
    pub ftrace: Option<String>,
}

impl RunInputs {
    /// The options as `iostack run` would parse them from its command line.
    pub fn parsed(&self) -> Result<Parsed> {
        let mut argv: Vec<String> = Vec::new();
        let mut flag = |name: &str, v: &str| {
            argv.push(format!("--{name}"));
            argv.push(v.to_string());
        };
        for (name, v) in [
            ("blktrace", &self.blktrace),
            ("blkparse", &self.blkparse),
            ("ftrace", &self.ftrace),
        ] {
            if v.as_deref() == Some("-") {
                return Err(format!("{name}: give a file name, not '-'").into());
            }
        }
        for (name, v) in [
            ("machine", &self.machine),
            ("kernel", &self.kernel),
            ("sched", &self.sched),
            ("until", &self.until),
            ("blktrace", &self.blktrace),
            ("blkparse", &self.blkparse),
            ("ftrace", &self.ftrace),
        ] {
            if let Some(v) = v {
                flag(name, v);
            }
        }
        if let Some(s) = self.seed {
            flag("seed", &s.to_string());
        }
        for kv in &self.sets {
            flag("set", kv);
        }
        for l in &self.layouts {
            flag("layout", l);
        }
        args::parse(&argv, commands::RUN_FLAGS).map_err(|e| CliError::Usage(e.0))
    }
}

/// A finished fio run: fio's JSON and normal reports, the sinks given, and the
/// provenance every output carries.
pub struct FioRun {
    pub json: String,
    pub text: String,
    pub sinks: Vec<Box<dyn TraceSink>>,
    pub seed: u64,
    pub config_hash: u64,
    pub truncated: bool,
}

/// Run fio jobs as `iostack run JOB... --output-format json` does, with the
/// `extra` sinks attached to the event stream. A process that failed, or a run
/// that did not end, is an error, as it is for the command (which exits non-zero).
pub fn run_fio(inp: &RunInputs, extra: Vec<Box<dyn TraceSink>>) -> Result<FioRun> {
    if inp.jobs.is_empty() {
        return Err("run: no fio job given".into());
    }
    let p = inp.parsed()?;
    let (cfg, report) = commands::fio_config(&p, &inp.jobs)?;
    let Report::Fio { globals, .. } = &report else {
        unreachable!("fio_config makes a fio report")
    };
    let globals = globals.clone();
    let mut s = commands::simulate(&p, cfg, &report, extra)?;
    crate::sinks::finish_streams(&mut s.sinks, &p)?;
    commands::check_ending(&s.result)?;
    if let Some(e) = s.result.procs.iter().find_map(|p| p.error.clone()) {
        return Err(SimError::Run(e).into());
    }
    let r = commands::fio_report(&mut s, globals)?;
    Ok(FioRun {
        json: crate::fio_out::format(&r, "json")?,
        text: crate::fio_out::format(&r, "normal")?,
        truncated: s.result.ending.is_truncated(),
        sinks: std::mem::take(&mut s.sinks),
        seed: s.seed.0,
        config_hash: s.hash,
    })
}

/// Every tunable of the tables the code reads: (name, unit label, default under
/// `kernel`, doc). The Python keywords are made from these names.
pub fn tunable_table(kernel: &str) -> Result<Vec<(String, String, String, String)>> {
    let profile = iostack_core::Profile::parse(kernel)
        .map_err(|e| SimError::Profile(format!("kernel: {e}")))?;
    let t = iostack_core::Tunables::new(profile, &iostack_sim::tunable_tables());
    Ok(t.iter()
        .map(|(d, v)| {
            let unit = match d.unit {
                iostack_core::Unit::Enum(names) => format!("one of {}", names.join("|")),
                u => u.label().to_string(),
            };
            let doc = d.doc.split_whitespace().collect::<Vec<_>>().join(" ");
            (
                d.name.to_string(),
                unit,
                iostack_core::Tunables::render(d, v),
                doc,
            )
        })
        .collect())
}

/// Check that `kernel`'s profile has the I/O scheduler `sched`, as `--sched`
/// is checked.
pub fn check_scheduler(kernel: &str, sched: &str) -> Result<()> {
    let profile = iostack_core::Profile::parse(kernel)
        .map_err(|e| SimError::Profile(format!("kernel: {e}")))?;
    let t = iostack_core::Tunables::new(profile, &iostack_sim::tunable_tables());
    iostack_iosched::check(sched, &t)
        .map(|_| ())
        .map_err(|e| SimError::Scheduler(format!("sched {sched}: {e}")).into())
}

/// Run the command-line front end `tool` (dd, iozone, fs_mark or bonnie) with
/// its arguments `argv` (the tool's own and iostack's `--` options), as `iostack
/// TOOL ARGV...` does; its standard output and error. A command that fails is
/// an error, as it is for the command line.
pub fn tool(tool: &str, argv: &[String]) -> Result<(String, String)> {
    if !["dd", "iozone", "fs_mark", "bonnie"].contains(&tool) {
        return Err(format!("{tool}: not a front end (dd, iozone, fs_mark, bonnie)").into());
    }
    let mut all = vec![tool.to_string()];
    all.extend(argv.iter().cloned());
    let (code, out, err) = crate::out::capture(|| commands::dispatch(&all));
    if code? != std::process::ExitCode::SUCCESS {
        return Err(CliError::Usage(format!("{tool}: {}", err.trim_end())));
    }
    Ok((out, err))
}
