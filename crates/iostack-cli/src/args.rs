//! The flag table, declared once: it drives parsing, `--help` and the errors.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    Nothing,
    Value(&'static str),
}

pub struct Flag {
    pub long: &'static str,
    pub takes: Takes,
    pub repeat: bool,
    pub doc: &'static str,
}

pub const FLAGS: &[Flag] = &[
    Flag {
        long: "machine",
        takes: Takes::Value("PRESET|FILE"),
        repeat: false,
        doc: "machine preset or machine file (default: per command)",
    },
    Flag {
        long: "kernel",
        takes: Takes::Value("PROFILE"),
        repeat: false,
        doc: "kernel profile: 2.4, 2.6.28, 2.6.32, 2.6.33-36, 2.6.37, 3.10, 6.x",
    },
    Flag {
        long: "sched",
        takes: Takes::Value("NAME"),
        repeat: false,
        doc: "I/O scheduler (default: the machine's); the kernel profile must have it:",
    },
    Flag {
        long: "set",
        takes: Takes::Value("KEY=VALUE"),
        repeat: true,
        doc: "set a tunable (repeatable); `iostack tunables` lists them",
    },
    Flag {
        long: "seed",
        takes: Takes::Value("N"),
        repeat: false,
        doc: "random seed (default 1)",
    },
    Flag {
        long: "output-format",
        takes: Takes::Value("normal|json|json+|old"),
        repeat: false,
        doc: "fio report format; json+ adds the latency histograms (clat_ns bins); old is fio's pre-2.17 format with aggrb=",
    },
    Flag {
        long: "blktrace",
        takes: Takes::Value("PREFIX"),
        repeat: false,
        doc: "write blktrace binary files PREFIX.blktrace.N",
    },
    Flag {
        long: "ftrace",
        takes: Takes::Value("FILE"),
        repeat: false,
        doc: "write the kernel ftrace blk tracer's text to FILE (- for stdout)",
    },
    Flag {
        long: "blkparse",
        takes: Takes::Value("FILE"),
        repeat: false,
        doc: "write blkparse's default text output to FILE (- for stdout)",
    },
    Flag {
        long: "requests",
        takes: Takes::Value("FILE.parquet"),
        repeat: false,
        doc: "run: write one row per dispatched request (blkparse's D events; the columns \
              of Python's Result.requests()) to a Parquet file, a row group at a time as \
              the run goes",
    },
    Flag {
        long: "filefrag",
        takes: Takes::Value("FILE"),
        repeat: true,
        doc: "after the run, print `filefrag FILE` for a simulated file (its extent count)",
    },
    Flag {
        long: "filefrag-v",
        takes: Takes::Value("FILE"),
        repeat: true,
        doc: "after the run, print `filefrag -v FILE` for a simulated file (its extent map)",
    },
    Flag {
        long: "layout",
        takes: Takes::Value("PATH=SIZE[@BLOCK]"),
        repeat: true,
        doc: "lay out a file before the run, as a sequential writer on the fresh file \
              system would (optionally from file-system block BLOCK); repeatable",
    },
    Flag {
        long: "markdown",
        takes: Takes::Nothing,
        repeat: false,
        doc: "tunables: print the tunable reference (docs/tunables.md) for every profile; \
              machines: print the preset reference (docs/presets.md)",
    },
    Flag {
        long: "help-options",
        takes: Takes::Nothing,
        repeat: false,
        doc: "run: print every fio option with its status: simulated, output only or \
              refused with the reason (docs/fio-options.md)",
    },
    Flag {
        long: "iodepth",
        takes: Takes::Value("N"),
        repeat: false,
        doc: "replay: I/Os in flight (default: the depth fio probes from the trace)",
    },
    Flag {
        long: "no-stall",
        takes: Takes::Nothing,
        repeat: false,
        doc: "replay: no delays between the trace's I/Os (fio's replay_no_stall=1)",
    },
    Flag {
        long: "time-scale",
        takes: Takes::Value("PCT"),
        repeat: false,
        doc: "replay: delays times 100 / PCT (fio's replay_time_scale; default 100)",
    },
    Flag {
        long: "redirect",
        takes: Takes::Value("PATH"),
        repeat: false,
        doc: "replay: send every I/O to this device or file (default: the machine's whole disk)",
    },
    Flag {
        long: "json",
        takes: Takes::Nothing,
        repeat: false,
        doc: "reproduce: print one JSON array of records",
    },
    Flag {
        long: "trace-dir",
        takes: Takes::Value("DIR"),
        repeat: false,
        doc: "reproduce: write each variant's blktrace files under DIR/EXPERIMENT/VARIANT/",
    },
    Flag {
        long: "html",
        takes: Takes::Value("FILE"),
        repeat: false,
        doc: "reproduce, report: write a self-contained HTML page of plots (Vega-Lite, \
              embedded: no network needed to open it)",
    },
    Flag {
        long: "experiments",
        takes: Takes::Value("DIR"),
        repeat: false,
        doc: "reproduce: read experiment files from DIR instead of the built-in set",
    },
    Flag {
        long: "out",
        takes: Takes::Value("DIR"),
        repeat: false,
        doc: "sweep: write DIR/jobs.parquet (and the journal DIR/points.jsonl)",
    },
    Flag {
        long: "workers",
        takes: Takes::Value("N"),
        repeat: false,
        doc: "sweep: run N points at once (default: one per CPU)",
    },
    Flag {
        long: "sweep",
        takes: Takes::Value("DIR"),
        repeat: false,
        doc: "report: plot the sweep in DIR/jobs.parquet (each metric against each parameter)",
    },
    Flag {
        long: "ray",
        takes: Takes::Value("ADDRESS"),
        repeat: false,
        doc: "sweep: run the points on the Ray cluster at ADDRESS (through the Python \
              package: `python3 -m iostack sweep`, $IOSTACK_PYTHON to choose the interpreter)",
    },
    Flag {
        long: "duckdb",
        takes: Takes::Value("FILE"),
        repeat: false,
        doc: "sweep: also load the table into the DuckDB database FILE as table `jobs` \
              (with Python's duckdb package)",
    },
    Flag {
        long: "until",
        takes: Takes::Value("DURATION"),
        repeat: false,
        doc: "stop the simulation at this simulated time (fio time units: 30s, 2h; bare \
              numbers are seconds); the report is marked truncated",
    },
    Flag {
        long: "check",
        takes: Takes::Nothing,
        repeat: false,
        doc: "run the full invariant checks after every event",
    },
    Flag {
        long: "help",
        takes: Takes::Nothing,
        repeat: false,
        doc: "print help",
    },
];

#[derive(Debug, Default, Clone)]
pub struct Parsed {
    pub positional: Vec<String>,
    /// (flag, value) in the order given.
    pub flags: Vec<(&'static str, String)>,
}

impl Parsed {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.flags
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
    pub fn has(&self, name: &str) -> bool {
        self.flags.iter().any(|(n, _)| *n == name)
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parse `args` against the flags `allowed` for a command. `--flag=value` and
/// `--flag value` both work; `--` ends flags. `passthrough` keeps non-flag
/// words (dd operands) as positionals.
pub fn parse(args: &[String], allowed: &[&str]) -> Result<Parsed, ArgError> {
    let mut p = Parsed::default();
    let mut i = 0;
    let mut flags_done = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if flags_done || !a.starts_with("--") || a == "-" {
            p.positional.push(a.clone());
            continue;
        }
        if a == "--" {
            flags_done = true;
            continue;
        }
        let body = &a[2..];
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let Some(flag) = FLAGS.iter().find(|f| f.long == name) else {
            return Err(ArgError(format!("unknown option '--{name}'; see --help")));
        };
        if !allowed.contains(&name) {
            return Err(ArgError(format!(
                "option '--{name}' does not apply to this command; see --help"
            )));
        }
        let value = match flag.takes {
            Takes::Nothing => {
                if inline.is_some() {
                    return Err(ArgError(format!("option '--{name}' takes no value")));
                }
                String::new()
            }
            Takes::Value(what) => match inline {
                Some(v) => v,
                None => {
                    if i >= args.len() {
                        return Err(ArgError(format!(
                            "option '--{name}' needs a value ({what})"
                        )));
                    }
                    i += 1;
                    args[i - 1].clone()
                }
            },
        };
        if !flag.repeat && p.has(flag.long) {
            return Err(ArgError(format!("option '--{name}' given twice")));
        }
        p.flags.push((flag.long, value));
    }
    Ok(p)
}

/// Help text for the flags of a command.
pub fn help(allowed: &[&str]) -> String {
    let mut s = String::new();
    for f in FLAGS.iter().filter(|f| allowed.contains(&f.long)) {
        let left = match f.takes {
            Takes::Nothing => format!("--{}", f.long),
            Takes::Value(v) => format!("--{} {}", f.long, v),
        };
        s.push_str(&format!("  {left:<32} {}\n", f.doc));
        if f.long == "sched" {
            s.push_str(&sched_help());
        }
    }
    s
}

/// The `--sched` choices, from the scheduler registry.
fn sched_help() -> String {
    let mut s = String::new();
    for d in iostack_iosched::SCHEDULERS {
        let profiles: Vec<&str> = iostack_core::Profile::ALL
            .iter()
            .filter(|&&p| (d.in_profile)(p))
            .map(|p| p.name())
            .collect();
        s.push_str(&format!(
            "  {:<32}   {:<13} profiles {}; in kernels {}\n",
            "",
            d.name,
            profiles.join(", "),
            d.kernels
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn parses_and_rejects() {
        let p = parse(
            &v(&["job.fio", "--seed=3", "--set", "a=1", "--set", "b=2"]),
            &["seed", "set"],
        )
        .unwrap();
        assert_eq!(p.positional, vec!["job.fio"]);
        assert_eq!(p.get("seed"), Some("3"));
        assert_eq!(p.all("set"), vec!["a=1", "b=2"]);
        assert_eq!(
            parse(&v(&["--bogus"]), &["seed"]).unwrap_err().0,
            "unknown option '--bogus'; see --help"
        );
        assert!(parse(&v(&["--json"]), &["seed"])
            .unwrap_err()
            .0
            .contains("does not apply"));
        assert!(parse(&v(&["--seed"]), &["seed"])
            .unwrap_err()
            .0
            .contains("needs a value"));
        assert!(parse(&v(&["--seed=1", "--seed=2"]), &["seed"]).is_err());
    }
}
