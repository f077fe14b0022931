//! Which sinks a command attaches, and how their output is printed.

use crate::args::Parsed;
use crate::commands::take;
use crate::out::CliError;
use iostack_core::{DevT, TraceSink};
use iostack_des::Seed;
use iostack_report::blkparse::BlkparseSink;
use iostack_report::blktrace::BlktraceWriter;
use iostack_report::ftrace::{FtraceSink, FtraceStyle};
use iostack_report::Out;
use iostack_sim::experiment::{Change, Experiment, Row, VariantRun};
use iostack_sim::stats::RunResult;
use iostack_sim::{SimConfig, Simulation};
use std::path::Path;

/// The provenance line every output carries.
pub fn provenance(seed: Seed, hash: u64) -> String {
    format!("seed={} config={hash:016x}", seed.0)
}

/// An output target of a trace flag: `-` is standard output, anything else a
/// file, created now so that a bad path fails before the run.
fn open_target(flag: &str, target: &str) -> Result<Out, CliError> {
    if target == "-" {
        return Ok(Out::stream(Box::new(std::io::stdout())));
    }
    std::fs::File::create(target)
        .map(|f| Out::stream(Box::new(f)))
        .map_err(|e| CliError::io(format!("--{flag} {target}"), e))
}

/// Attach the trace sinks asked for, each writing to its file (or stdout) as the
/// run goes. The blkparse text is named after the blktrace prefix when there is
/// one, so it is what `blkparse -i PREFIX` prints for them. When both texts go to
/// standard output, the blkparse text is kept and printed after the ftrace text,
/// so the two do not interleave.
pub fn attach_streams(
    sim: &mut Simulation,
    p: &Parsed,
    disk: DevT,
    seed: Seed,
    hash: u64,
) -> Result<(), CliError> {
    if let Some(prefix) = p.get("blktrace") {
        let w = BlktraceWriter::for_device(disk)
            .to_files(Path::new(prefix))
            .map_err(|e| CliError::io(format!("--blktrace {prefix}"), e))?;
        sim.attach(Box::new(w));
    }
    if let Some(f) = p.get("ftrace") {
        let mut out = open_target("ftrace", f)?;
        out.write(format!("# tracer: blk\n# iostack {}\n#\n", provenance(seed, hash)).as_bytes());
        sim.attach(Box::new(FtraceSink::new(FtraceStyle::Kernel).to(out)));
    }
    if let Some(f) = p.get("blkparse") {
        let input = p.get("blktrace").unwrap_or("iostack");
        let sink = BlkparseSink::new(input);
        let sink = if f == "-" && p.get("ftrace") == Some("-") {
            sink
        } else {
            sink.to(open_target("blkparse", f)?)
        };
        sim.attach(Box::new(sink));
    }
    if let Some(f) = p.get("requests") {
        if f == "-" {
            return Err(
                "--requests -: give a file name (Parquet is not written to standard output)".into(),
            );
        }
        let file =
            std::fs::File::create(f).map_err(|e| CliError::io(format!("--requests {f}"), e))?;
        let sink = crate::requests::RequestSink::parquet(file, crate::requests::GROUP_ROWS)
            .map_err(|e| format!("--requests {f}: {e}"))?;
        sim.attach(Box::new(sink));
    }
    Ok(())
}

/// Flush the streamed trace outputs after the run (and print a blkparse text
/// that was kept back); a closed standard output is reported as such.
pub fn finish_streams(sinks: &mut Vec<Box<dyn TraceSink>>, p: &Parsed) -> Result<(), CliError> {
    let err = |flag: &str, target: &str, e: std::io::Error| {
        if target == "-" && e.kind() == std::io::ErrorKind::BrokenPipe {
            CliError::ClosedStdout
        } else {
            CliError::io(format!("--{flag} {target}"), e)
        }
    };
    if let Some(prefix) = p.get("blktrace") {
        let mut w = take::<BlktraceWriter>(sinks).expect("attached");
        w.finish_files().map_err(|e| err("blktrace", prefix, e))?;
    }
    if let Some(f) = p.get("ftrace") {
        let mut s = take::<FtraceSink>(sinks).expect("attached");
        s.finish_output().map_err(|e| err("ftrace", f, e))?;
    }
    if let Some(f) = p.get("blkparse") {
        let mut s = take::<BlkparseSink>(sinks).expect("attached");
        s.finish_output().map_err(|e| err("blkparse", f, e))?;
        if s.output().is_some() {
            crate::out::stdout(&s.text())?;
        }
    }
    if let Some(f) = p.get("requests") {
        let s = take::<crate::requests::RequestSink>(sinks).expect("attached");
        s.finish_parquet()
            .map_err(|e| format!("--requests {f}: {e}"))?;
    }
    Ok(())
}

/// dd's own summary for the run, as GNU dd prints it, after a provenance line.
pub fn dd_report(r: &RunResult, seed: Seed, hash: u64) -> String {
    let mut s = format!("# iostack {}\n", provenance(seed, hash));
    for p in r.procs.iter().filter(|p| p.comm == "dd") {
        // dd if=/dev/zero of=FILE: the records read from /dev/zero are the
        // records written.
        let d = if p.dirs[0].ios == 0 {
            &p.dirs[1]
        } else {
            &p.dirs[0]
        };
        let full = d.ios - d.short;
        let secs = p.runtime().as_ns() as f64 / 1e9;
        let out = if p.dirs[1].ios > 0 {
            p.dirs[1].ios
        } else {
            d.ios
        };
        s.push_str(&iostack_report::dd::summary(
            (full, d.short),
            (out - d.short.min(out), d.short.min(out)),
            d.bytes.max(p.dirs[1].bytes),
            secs.max(1e-9),
        ));
    }
    s
}

/// `filefrag [-v] PATH` over a file's simulated layout.
pub fn filefrag(r: &RunResult, path: &str, verbose: bool, fs: &str) -> Result<String, String> {
    use iostack_report::filefrag::{render_fs, FragExtent, FsInfo};
    let f = r.files.iter().find(|f| f.path == path).ok_or_else(|| {
        let have: Vec<&str> = r.files.iter().map(|f| f.path.as_str()).collect();
        format!(
            "--filefrag {path}: no such simulated file (the run used: {})",
            have.join(", ")
        )
    })?;
    let n = f.extents.len();
    let ext: Vec<FragExtent> = f
        .extents
        .iter()
        .enumerate()
        .map(|(i, &(logical, physical, len))| FragExtent {
            logical,
            physical,
            len,
            last: i + 1 == n,
        })
        .collect();
    let blocks: u64 = f.extents.iter().map(|e| e.1 + e.2).max().unwrap_or(0);
    let info = match fs {
        "ext2" | "ext3" => FsInfo::ext2(blocks.max(1)),
        // XFS_SUPER_MAGIC "XFSB".
        "xfs" => FsInfo {
            f_type: 0x5846_5342,
            f_blocks: 0,
            indirect: false,
        },
        _ => FsInfo::EXT4,
    };
    Ok(render_fs(&info, path, f.size, f.block_size, &ext, verbose))
}

/// Sinks for one variant of an experiment: its trace format (kept, to be printed
/// with the table), and blktrace files streamed into `blktrace_dir` (as
/// `trace.blktrace.N`) when a trace directory was asked for.
pub fn reproduce_sinks(
    e: &Experiment,
    cfg: &SimConfig,
    blktrace_dir: Option<&Path>,
) -> Result<Vec<Box<dyn TraceSink>>, CliError> {
    let mut v: Vec<Box<dyn TraceSink>> = Vec::new();
    let disk = cfg.machine.disk;
    match e.trace.as_deref() {
        Some("ftrace") => v.push(Box::new(FtraceSink::for_device(
            FtraceStyle::Collapsed,
            disk,
        ))),
        Some("blkparse") => v.push(Box::new(BlkparseSink::for_device("trace", disk))),
        _ => {}
    }
    if let Some(d) = blktrace_dir {
        std::fs::create_dir_all(d).map_err(|err| CliError::io(d.display(), err))?;
        let w = BlktraceWriter::for_device(disk)
            .to_files(&d.join("trace"))
            .map_err(|err| CliError::io(d.display(), err))?;
        v.push(Box::new(w));
    }
    Ok(v)
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn pct(r: f64) -> String {
    if r.is_infinite() {
        "from 0".into()
    } else {
        format!("{:+.1}%", (r - 1.0) * 100.0)
    }
}

/// The human-readable reproduction of one experiment.
pub fn reproduce_text(
    e: &Experiment,
    runs: &mut [VariantRun],
    rows: &[Row],
    changes: &[Change],
) -> String {
    let mut s = String::new();
    s.push_str(&format!("== {}: {}\n", e.name, e.title));
    s.push_str(&format!("   source: {}\n", e.source));
    for n in &e.notes {
        s.push_str(&format!("   note: {n}\n"));
    }
    for run in runs.iter_mut() {
        let v = e
            .variants
            .iter()
            .find(|v| v.name == run.variant)
            .expect("variant of this experiment");
        s.push_str(&format!(
            "\n-- variant {} ({}; {}, {} events)\n",
            run.variant,
            v.description.as_deref().unwrap_or(""),
            provenance(run.seed, run.config_hash),
            run.result.events
        ));
        if let Some(f) = take::<FtraceSink>(&mut run.sinks) {
            s.push_str(f.text());
        }
        if let Some(b) = take::<BlkparseSink>(&mut run.sinks) {
            s.push_str(&b.text());
        }
    }
    s.push_str(&format!(
        "\n{:<12} {:<22} {:<10} {:>12} {:>12}\n",
        "variant", "metric", "unit", "published", "simulated"
    ));
    for r in rows {
        s.push_str(&format!(
            "{:<12} {:<22} {:<10} {:>12} {:>12}\n",
            r.variant,
            r.metric,
            r.unit,
            r.published.map(num).unwrap_or_else(|| "-".into()),
            num(r.simulated)
        ));
    }
    if !changes.is_empty() {
        s.push_str("\nchanges (published vs simulated):\n");
        for c in changes {
            s.push_str(&format!(
                "  {:<22} {} -> {}: published {}, simulated {}: direction {}, size {}\n",
                c.metric,
                c.from,
                c.to,
                pct(c.published_ratio),
                pct(c.simulated_ratio),
                if c.direction_ok { "matches" } else { "MISSES" },
                if c.size_ok { "matches" } else { "MISSES" },
            ));
        }
    }
    s.push('\n');
    s
}
