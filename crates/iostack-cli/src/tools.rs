//! The `iozone` and `fs_mark` commands: the tool's own arguments, iostack's
//! `--` options beside them, one simulation per iozone row (one for a whole
//! fs_mark run), and the tool's own report on stdout after a provenance line and
//! what was not simulated.

use crate::args::Parsed;
use crate::commands::{config_of, machine_of, Result};
use crate::out::{self, CliError};
use iostack_sim::stats::RunResult;
use iostack_sim::tools as t;
use iostack_sim::workload::ProcSpec;
use iostack_sim::{config_hash, SimError, Simulation};
use std::process::ExitCode;

/// The iostack options these commands take (no `--layout`: the tools make their
/// own files; no `--until`: a truncated run has no numbers to print).
pub const TOOL_FLAGS: &[&str] = &[
    "machine", "kernel", "sched", "set", "seed", "blktrace", "ftrace", "blkparse", "check", "help",
];

/// The simulated clock starts at the epoch: what `ctime` prints for it.
const EPOCH_CTIME: &str = "Thu Jan  1 00:00:00 1970";

/// Run one simulation; traces attached only when asked (and only for one run).
fn simulate(p: &Parsed, procs: Vec<ProcSpec>, traces: bool) -> Result<(RunResult, String)> {
    let m = machine_of(p, "sata-2010")?;
    let cfg = config_of(p, procs, m)?;
    simulate_cfg(p, cfg, traces)
}

fn simulate_cfg(
    p: &Parsed,
    cfg: iostack_sim::SimConfig,
    traces: bool,
) -> Result<(RunResult, String)> {
    let (seed, hash, disk) = (cfg.seed, config_hash(&cfg), cfg.machine.disk);
    let mut sim = Simulation::new(cfg)?;
    if p.has("check") {
        sim.attach(Box::new(iostack_sim::check::Checker::new(true)));
    }
    if traces {
        crate::sinks::attach_streams(&mut sim, p, disk, seed, hash)?;
        sim.note(&format!("iostack {}", crate::sinks::provenance(seed, hash)));
    }
    let (result, mut sinks) = sim.run();
    if traces {
        crate::sinks::finish_streams(&mut sinks, p)?;
    }
    if !result.ending.is_complete() {
        return Err(SimError::Run(result.ending.to_string()).into());
    }
    if let Some(e) = result.procs.iter().find_map(|p| p.error.clone()) {
        return Err(SimError::Run(e).into());
    }
    Ok((result, crate::sinks::provenance(seed, hash)))
}

fn wants_traces(p: &Parsed) -> bool {
    ["blktrace", "ftrace", "blkparse"].iter().any(|f| p.has(f))
}

/// `iostack iozone ARGS... [--machine M] ...`
pub fn run_iozone(p: &Parsed) -> Result<ExitCode> {
    let spec = iostack_workload::parse_iozone_args(&p.positional).map_err(SimError::from)?;
    let m = machine_of(p, "sata-2010")?;
    let rows = t::iozone_rows(&spec, &m)?;
    if rows.len() > 1 && wants_traces(p) {
        return Err(CliError::Usage(format!(
            "iozone: {} rows are {} simulations; trace options need a single row (one -s and -r)",
            rows.len(),
            rows.len()
        )));
    }
    let mut out_rows = Vec::new();
    let mut prov = Vec::new();
    for row in &rows {
        let (r, pv) = simulate(p, row.procs.clone(), wants_traces(p))?;
        prov.push(pv);
        let mut values = [None; 6];
        for &(col, i) in &row.timed {
            let pr = &r.procs[i];
            let bytes = pr.dirs[0].bytes + pr.dirs[1].bytes;
            values[col.index()] = Some(t::iozone_rate(
                bytes,
                row.reclen,
                pr.runtime().as_ns(),
                spec.ops,
            ));
        }
        out_rows.push(iostack_report::iozone::IozoneRow {
            kb: row.kb,
            reclen_kb: row.reclen / 1024,
            values,
        });
    }
    let report = iostack_report::iozone::IozoneReport {
        argv: std::iter::once("iozone".to_string())
            .chain(spec.argv.iter().cloned())
            .collect(),
        splash: splash_of(&spec),
        ops: spec.ops,
        excel: spec.excel,
        began: EPOCH_CTIME.to_string(),
        rows: out_rows,
    };
    let mut text = format!("# iostack {}\n", prov.join(" "));
    text.push_str(&notes(&[
        t::NOT_MODELLED_FSYNC,
        "unlink does no metadata I/O (creation journals its inode on ext3); each row runs on a freshly made \
         file system (iozone's unlink and sync() between rows are not simulated)",
        "random offsets come from iostack's own random stream, not iozone's lrand48()",
    ]));
    text.push_str(&iostack_report::iozone::render(&report));
    out::stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn notes(lines: &[&str]) -> String {
    lines.iter().map(|l| format!("# iostack: {l}\n")).collect()
}

/// The splash lines of the options, in the order given.
fn splash_of(s: &iostack_workload::IozoneSpec) -> Vec<iostack_report::iozone::Splash> {
    use iostack_report::iozone::Splash as S;
    s.seen
        .iter()
        .filter_map(|&(c, v)| {
            Some(match c {
                's' => S::FileSizeKb(v),
                'r' => S::RecordKb(v),
                'e' => S::IncludeFsync,
                'c' => S::IncludeClose,
                'I' => S::ODirect,
                'o' => S::OSync,
                'O' => S::Ops,
                'a' => S::Auto,
                'n' => S::MinFileKb(v),
                'g' => S::MaxFileKb(v),
                'y' => S::MinRecKb(v),
                'q' => S::MaxRecKb(v),
                'R' => S::Excel,
                'w' => S::NoUnlink,
                'z' => S::NoCrossover,
                _ => return None,
            })
        })
        .collect()
}

/// `iostack fs_mark ARGS... [--machine M] ...`
pub fn run_fs_mark(p: &Parsed) -> Result<ExitCode> {
    use iostack_report::fs_mark as fm;
    let spec = iostack_workload::parse_fs_mark_args(&p.positional).map_err(SimError::from)?;
    let m = machine_of(p, "sata-2010")?;
    let run = t::fs_mark_run(&spec, &m)?;
    let (r, prov) = simulate(p, run.procs.clone(), wants_traces(p))?;
    let argv: Vec<String> = std::iter::once("fs_mark".to_string())
        .chain(spec.argv.iter().cloned())
        .collect();
    let dirs = (spec.subdirs > 1).then(|| match spec.policy {
        iostack_workload::DirPolicy::RoundRobin(n) => (
            fm::DIR_POLICY_STRINGS[1].to_string(),
            spec.subdirs,
            n,
            "files per subdirectory".to_string(),
        ),
        _ => (
            fm::DIR_POLICY_STRINGS[2].to_string(),
            spec.subdirs,
            180,
            "seconds per subdirectory".to_string(),
        ),
    });
    let header = fm::FsMarkHeader {
        argv,
        threads: spec.threads,
        started: EPOCH_CTIME.to_string(),
        sync_string: iostack_workload::FSMARK_SYNC_STRINGS[spec.sync as usize].to_string(),
        dirs,
        name_len: spec.name_len,
        rand_len: spec.rand_len,
        size: spec.size,
        io_size: spec.io_size,
    };
    let mut body = fm::header(&header);
    for row in t::fs_mark_rows(&spec, &run, &r) {
        body.push_str(&fm::line(&fm::FsMarkLine {
            fs_use: 0,
            count: row.count,
            size: spec.size,
            files_per_sec: row.files_per_sec,
            app_overhead_us: row.app_overhead_us,
        }));
    }
    let mut text = format!("# iostack {prov}\n");
    text.push_str(&notes(&[
        t::NOT_MODELLED_FSYNC,
        "creat(), close() and unlink() do no metadata I/O (inode, bitmap and directory \
         blocks are not modelled), and no unlink is simulated after the loop",
        "FSUse% is not simulated (no statfs model) and is printed as 0; App Overhead \
         is only the rounding of the calls' times (user time is not simulated)",
    ]));
    text.push_str(&body);
    out::stdout(&text)?;
    if let Some(log) = &spec.log {
        // fs_mark appends the same text to its log, with `#` before the blank line.
        let logged = body.replacen("\n\n", "\n#\n", 1);
        append(log, &logged)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn append(path: &str, text: &str) -> Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| CliError::io(format!("fs_mark -l {path}"), e))
}

/// `iostack bonnie ARGS... [--machine M] ...`: Bonnie 1.0 with seed 004's
/// patch; its table on stdout after the provenance line and what was not
/// simulated (machine default: the seed's `ide-2001`).
pub fn run_bonnie(p: &Parsed) -> Result<ExitCode> {
    use iostack_sim::bonnie as b;
    let spec = iostack_workload::parse_bonnie_args(&p.positional).map_err(SimError::from)?;
    let m = machine_of(p, "ide-2001")?;
    let procs = b::bonnie_procs(&spec, &m)?;
    let cfg = config_of(p, procs, m)?;
    let (r, prov) = simulate_cfg(p, cfg, wants_traces(p))?;
    let res = b::bonnie_results(&r);
    let col = |t: b::BonnieTest| {
        let x = res.iter().find(|x| x.test == t).expect("every test ran");
        (x.kb_per_s, x.cpu_pct)
    };
    use b::BonnieTest as T;
    let line = iostack_report::bonnie::BonnieLine {
        machine: spec.machine.clone().unwrap_or_default(),
        size_mb: spec.size_mb,
        cols: [
            col(T::PutcWrite),
            col(T::BlockWrite),
            col(T::Rewrite),
            col(T::GetcRead),
            col(T::BlockRead),
        ],
        // -fast: delta[Lseek][Elapsed] = 1, delta[Lseek][CPU] = 0.
        seeks: (f64::from(iostack_report::bonnie::BONNIE_SEEKS), 0.0),
    };
    let mut text = format!("# iostack {prov}\n");
    text.push_str(&notes(&[
        t::NOT_MODELLED_FSYNC,
        "%CPU is the system time the model charges (copies, pinning, bios, writeback); \
         user time (putc/getc's per-character loop) is not simulated",
        "the block-write test's unlink and create free the file's blocks and drop its \
         pages, and the test allocates them again; the metadata I/O of unlink and \
         create (inode, bitmaps, directory) is not simulated",
    ]));
    if spec.o_direct {
        text.push_str("Using O_DIRECT for block based I/O\n");
    }
    text.push_str("Will skip the seek test\n");
    text.push_str(&iostack_report::bonnie::render(&line));
    out::stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}
