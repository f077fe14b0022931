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
            ("machine", &self.machine),
            ("kernel", &self.kernel),
            ("sched", &self.sched),
            ("until", &self.until),
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
