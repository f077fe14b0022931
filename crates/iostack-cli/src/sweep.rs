//! `iostack sweep GRID.toml --out DIR`: every point of a parameter grid run as
//! `iostack run` would run it, each independently (a point is a pure function
//! of its inputs), on a pool of threads; the figures written to
//! `DIR/jobs.parquet` as one row per point, job and metric, with the grid's
//! parameters as columns. The point runner and the figures it keeps
//! ([`figures`]) are the ones `iostack.sweep` calls from Python, so both give
//! the same table. Finished points are journalled in `DIR/points.jsonl`; a
//! sweep started again skips the points the journal holds (the journal's
//! reader and line format are those of Python's `iostack.sweep(out=DIR)` too).

use crate::api::{self, RunInputs};
use crate::args::Parsed;
use crate::commands::{JobSource, Result};
use crate::out::{self, CliError};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

/// `iostack sweep` takes these flags.
pub const SWEEP_FLAGS: &[&str] = &["out", "workers", "ray", "duckdb", "help"];

/// fio JSON figures a sweep keeps per job and direction, as `read.bw`,
/// `write.clat_ns.mean`, ...
pub const METRICS: &[&str] = &[
    "io_bytes",
    "bw",
    "iops",
    "runtime",
    "slat_ns.mean",
    "clat_ns.mean",
    "lat_ns.mean",
    "lat_ns.max",
];

/// Inputs a grid key may name besides tunables (`a/b` names).
const RUN_KEYS: &[&str] = &["job", "machine", "kernel", "sched", "seed", "until"];

/// One parameter value of a grid.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Bool(bool),
    Str(String),
}

impl Value {
    /// The value as `--set` and the options take it (booleans as 1 and 0).
    pub fn arg(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Bool(b) => u8::from(*b).to_string(),
            Value::Str(s) => s.clone(),
        }
    }
    pub fn json(&self) -> serde_json::Value {
        match self {
            Value::Int(i) => (*i).into(),
            Value::Bool(b) => (*b).into(),
            Value::Str(s) => s.as_str().into(),
        }
    }
}

/// One figure of one job of a point: (job name, metric, value).
pub type Figure = (String, String, f64);

/// The figures of fio's JSON report `json` a sweep keeps: per job, per
/// direction that did I/O, each of [`METRICS`] present.
pub fn figures(json: &str) -> Result<Vec<Figure>> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("fio JSON report: {e}"))?;
    let mut rows = Vec::new();
    for job in v["jobs"].as_array().into_iter().flatten() {
        let name = job["jobname"].as_str().unwrap_or_default();
        for ddir in ["read", "write"] {
            let d = &job[ddir];
            if d["total_ios"].as_u64().unwrap_or(0) == 0 {
                continue;
            }
            for m in METRICS {
                let x = m.split('.').fold(d, |x, part| &x[part]);
                if let Some(f) = x.as_f64() {
                    rows.push((name.to_string(), format!("{ddir}.{m}"), f));
                }
            }
        }
    }
    Ok(rows)
}

/// Run `inp` and keep its [`figures`].
pub fn run_point(inp: &RunInputs) -> Result<Vec<Figure>> {
    figures(&api::run_fio(inp, Vec::new())?.json)
}

/// A grid: its keys in file order, each with its values.
pub struct Grid {
    pub base: RunInputs,
    pub keys: Vec<(String, Vec<Value>)>,
}

impl Grid {
    /// Every point, in the order of the grid's keys (the last key varies
    /// fastest, as Python's `itertools.product`).
    pub fn points(&self) -> Vec<Vec<Value>> {
        let mut pts: Vec<Vec<Value>> = vec![Vec::new()];
        for (_, vals) in &self.keys {
            pts = pts
                .into_iter()
                .flat_map(|p| {
                    vals.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push(v.clone());
                        q
                    })
                })
                .collect();
        }
        pts
    }

    /// The run inputs of one point.
    pub fn inputs(&self, point: &[Value]) -> RunInputs {
        let mut inp = self.base.clone();
        for ((k, _), v) in self.keys.iter().zip(point) {
            apply(&mut inp, k, v);
        }
        inp
    }
}

fn apply(inp: &mut RunInputs, key: &str, v: &Value) {
    let s = v.arg();
    match key {
        "job" => inp.jobs = vec![JobSource::Path(s)],
        "machine" => inp.machine = Some(s),
        "kernel" => inp.kernel = Some(s),
        "sched" => inp.sched = Some(s),
        "until" => inp.until = Some(s),
        "seed" => inp.seed = s.parse().ok(),
        _ => inp.sets.push(format!("{key}={s}")),
    }
}

/// A TOML value as a grid value; `what` names it in errors.
fn value_of(v: &toml::Value, what: &str) -> Result<Value> {
    match v {
        toml::Value::Integer(i) => Ok(Value::Int(*i)),
        toml::Value::Boolean(b) => Ok(Value::Bool(*b)),
        toml::Value::String(s) => Ok(Value::Str(s.clone())),
        toml::Value::Float(f) => Ok(Value::Str(f.to_string())),
        other => Err(format!("{what}: expected a number, string or boolean, got {other}").into()),
    }
}

fn string_of(v: &toml::Value, what: &str) -> Result<String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{what}: expected a string").into())
}

/// Parse a grid file (see docs/sweep.md). Paths in it are relative to its
/// directory.
pub fn parse(path: &str, text: &str) -> Result<Grid> {
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e
            .span()
            .map(|s| text[..s.start].matches('\n').count() + 1)
            .unwrap_or(0);
        format!("{path}:{line}: {}", e.message())
    })?;
    let dir = Path::new(path).parent().unwrap_or(Path::new(""));
    let rel = |p: String| dir.join(p).display().to_string();
    let mut base = RunInputs::default();
    let mut keys = Vec::new();
    for (k, v) in &doc {
        let what = format!("{path}: key '{k}'");
        match k.as_str() {
            "job" => base.jobs = vec![JobSource::Path(rel(string_of(v, &what)?))],
            "job_text" => {
                base.jobs = vec![JobSource::Text {
                    name: format!("{path}:job_text"),
                    text: string_of(v, &what)?,
                }]
            }
            "machine" | "kernel" | "sched" | "until" | "seed" | "set" | "layout" => {
                base_key(&mut base, k, v, &what, &rel)?
            }
            "grid" => keys = grid_keys(v, path, &rel)?,
            _ => return Err(format!("{what}: unknown (job, job_text, machine, kernel, sched, seed, until, set, layout, grid)").into()),
        }
    }
    if base.jobs.is_empty() && !keys.iter().any(|(k, _)| k == "job") {
        return Err(format!("{path}: no job (give `job = \"FILE.fio\"` or `job_text`)").into());
    }
    if keys.is_empty() {
        return Err(format!("{path}: no [grid] table").into());
    }
    Ok(Grid { base, keys })
}

fn base_key(
    base: &mut RunInputs,
    k: &str,
    v: &toml::Value,
    what: &str,
    rel: &dyn Fn(String) -> String,
) -> Result<()> {
    match k {
        "set" | "layout" => {
            let list = v
                .as_array()
                .ok_or(format!("{what}: expected a list of strings"))?;
            for x in list {
                let s = string_of(x, what)?;
                if k == "set" {
                    base.sets.push(s);
                } else {
                    base.layouts.push(s);
                }
            }
        }
        "machine" => {
            let m = string_of(v, what)?;
            let local = rel(m.clone());
            base.machine = Some(if Path::new(&local).is_file() {
                local
            } else {
                m
            });
        }
        "seed" => {
            let s = v.as_integer().filter(|s| *s >= 0);
            base.seed = Some(s.ok_or(format!("{what}: expected an unsigned integer"))? as u64);
        }
        _ => apply(base, k, &Value::Str(string_of(v, what)?)),
    }
    Ok(())
}

fn grid_keys(
    v: &toml::Value,
    path: &str,
    rel: &dyn Fn(String) -> String,
) -> Result<Vec<(String, Vec<Value>)>> {
    let t = v
        .as_table()
        .ok_or(format!("{path}: [grid] must be a table"))?;
    let mut keys = Vec::new();
    for (k, vals) in t {
        let what = format!("{path}: grid key '{k}'");
        if !RUN_KEYS.contains(&k.as_str()) && !k.contains('/') {
            return Err(format!(
                "{what}: not one of {} nor a tunable name (`iostack tunables` lists them)",
                RUN_KEYS.join(", ")
            )
            .into());
        }
        let list = vals.as_array().ok_or(format!("{what}: expected a list"))?;
        if list.is_empty() {
            return Err(format!("{what}: an empty list makes no points").into());
        }
        let mut vs = Vec::new();
        for x in list {
            let mut val = value_of(x, &what)?;
            if k == "job" {
                val = Value::Str(rel(val.arg()));
            }
            vs.push(val);
        }
        keys.push((k.clone(), vs));
    }
    Ok(keys)
}

/// A point's key in the journal: its parameters as a JSON object.
fn point_key(grid: &Grid, point: &[Value]) -> String {
    let m: serde_json::Map<String, serde_json::Value> = grid
        .keys
        .iter()
        .zip(point)
        .map(|((k, _), v)| (k.clone(), v.json()))
        .collect();
    serde_json::Value::Object(m).to_string()
}

/// The journal's finished points: parameters (as [`point_key`]) to figures. A
/// last line cut short by an interruption is dropped.
pub fn read_journal(path: &Path) -> Result<BTreeMap<String, Vec<Figure>>> {
    let mut done = BTreeMap::new();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(done),
        Err(e) => return Err(CliError::io(path.display(), e)),
    };
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let figs: Option<Vec<Figure>> = v["figures"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| {
                let val = f[2].as_str()?.parse().ok()?;
                Some((f[0].as_str()?.to_string(), f[1].as_str()?.to_string(), val))
            })
            .collect();
        if let (Some(figs), Some(_)) = (figs, v["params"].as_object()) {
            done.insert(v["params"].to_string(), figs);
        }
    }
    Ok(done)
}

/// One journal line; values as their shortest round-trip text, so a resumed
/// sweep's table is bit for bit the same.
pub fn journal_line(key: &str, figs: &[Figure]) -> String {
    let f: Vec<serde_json::Value> = figs
        .iter()
        .map(|(j, m, v)| serde_json::json!([j, m, v.to_string()]))
        .collect();
    format!(
        "{{\"params\":{key},\"figures\":{}}}\n",
        serde_json::Value::Array(f)
    )
}

fn help() -> String {
    format!(
        "usage: iostack sweep GRID.toml --out DIR [--workers N]\n\
         Runs every point of GRID.toml's [grid] (docs/sweep.md) and writes DIR/jobs.parquet;\n\
         points already in DIR/points.jsonl (an interrupted sweep) are not run again.\n{}",
        crate::args::help(SWEEP_FLAGS)
    )
}

/// `iostack sweep GRID.toml --out DIR [--workers N]`.
pub fn command(p: &Parsed) -> Result<ExitCode> {
    if p.has("help") {
        out::stdout(&help())?;
        return Ok(ExitCode::SUCCESS);
    }
    let ([file], Some(dir)) = (p.positional.as_slice(), p.get("out")) else {
        out::stderr(&help());
        return Ok(ExitCode::from(2));
    };
    let text = std::fs::read_to_string(file).map_err(|e| CliError::io(file, e))?;
    let grid = parse(file, &text)?;
    let workers = match p.get("workers") {
        Some(w) => w
            .parse::<usize>()
            .ok()
            .filter(|w| *w > 0)
            .ok_or(format!("--workers {w}: expected a positive integer"))?,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    if p.has("ray") {
        return python(p, file, dir);
    }
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).map_err(|e| CliError::io(dir.display(), e))?;
    let done = sweep(&grid, &dir, workers)?;
    let table = crate::sweep_parquet::table(&grid, &done)?;
    let path = dir.join("jobs.parquet");
    crate::sweep_parquet::write(&table, &path)?;
    out::stderr(&format!(
        "iostack: sweep: {} points, {} rows in {}\n",
        done.len(),
        table.num_rows(),
        path.display()
    ));
    if let Some(db) = p.get("duckdb") {
        to_duckdb(db, &path)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The Python interpreter that has the `iostack` and `duckdb` packages.
fn interpreter() -> String {
    std::env::var("IOSTACK_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn call_python(args: &[&str], what: &str) -> Result<()> {
    let py = interpreter();
    let status = std::process::Command::new(&py)
        .args(args)
        .status()
        .map_err(|e| CliError::io(format!("{what}: {py}"), e))?;
    if !status.success() {
        return Err(format!(
            "{what}: {py} failed ({status}); it needs the Python package \
             (`pip install .` in the repository; $IOSTACK_PYTHON names the interpreter)"
        )
        .into());
    }
    Ok(())
}

/// `--ray ADDRESS`: the sweep run by the Python package on Ray (the same grid
/// parser and figures, through the binding).
fn python(p: &Parsed, file: &str, dir: &str) -> Result<ExitCode> {
    let mut args = vec!["-m", "iostack", "sweep", file, "--out", dir];
    for flag in ["ray", "workers", "duckdb"] {
        if let Some(v) = p.get(flag) {
            args.extend([
                match flag {
                    "ray" => "--ray",
                    "workers" => "--workers",
                    _ => "--duckdb",
                },
                v,
            ]);
        }
    }
    call_python(&args, "--ray")?;
    Ok(ExitCode::SUCCESS)
}

/// `--duckdb FILE`: table `jobs` of FILE made from the Parquet file.
fn to_duckdb(db: &str, parquet: &Path) -> Result<()> {
    let code = "import duckdb, sys\n\
                c = duckdb.connect(sys.argv[1])\n\
                c.execute('create or replace table jobs as select * from read_parquet(?)', [sys.argv[2]])\n\
                c.close()\n";
    let pq = parquet.display().to_string();
    call_python(&["-c", code, db, &pq], "--duckdb")
}

/// Run the points the journal lacks on `workers` threads; every point's
/// figures, in point order.
fn sweep(grid: &Grid, dir: &Path, workers: usize) -> Result<Vec<Vec<Figure>>> {
    let journal = dir.join("points.jsonl");
    let mut done = read_journal(&journal)?;
    let pts = grid.points();
    let keys: Vec<String> = pts.iter().map(|p| point_key(grid, p)).collect();
    // Rewrite the journal with its whole lines only, then append to it.
    let mut kept = String::new();
    for k in keys.iter().filter(|k| done.contains_key(*k)) {
        kept.push_str(&journal_line(k, &done[k]));
    }
    std::fs::write(&journal, kept).map_err(|e| CliError::io(journal.display(), e))?;
    let todo: Vec<usize> = (0..pts.len())
        .filter(|&i| !done.contains_key(&keys[i]))
        .collect();
    if todo.len() < pts.len() {
        out::stderr(&format!(
            "iostack: sweep: {} of {} points already in {}\n",
            pts.len() - todo.len(),
            pts.len(),
            journal.display()
        ));
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .map_err(|e| CliError::io(journal.display(), e))?;
    let bar = indicatif::ProgressBar::new(pts.len() as u64)
        .with_position((pts.len() - todo.len()) as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} points {elapsed} (eta {eta})",
        )
        .map_err(|e| format!("progress bar: {e}"))?,
    );
    let inputs: Vec<RunInputs> = pts.iter().map(|p| grid.inputs(p)).collect();
    let res = run_pool(&inputs, &todo, workers, |i, figs| {
        bar.inc(1);
        file.write_all(journal_line(&keys[i], figs).as_bytes())
            .map_err(|e| CliError::io(journal.display(), e))?;
        done.insert(keys[i].clone(), figs.to_vec());
        Ok(())
    });
    bar.finish_and_clear();
    res?;
    Ok(keys.iter().map(|k| done[k].clone()).collect())
}

/// Run `inputs[i]` for each `i` of `todo` on `workers` threads, calling
/// `finished` on this thread as each ends; the first error stops the pool
/// (points already finished stay journalled).
fn run_pool(
    inputs: &[RunInputs],
    todo: &[usize],
    workers: usize,
    mut finished: impl FnMut(usize, &[Figure]) -> Result<()>,
) -> Result<()> {
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<(usize, Result<Vec<Figure>>)>();
    std::thread::scope(|s| {
        for _ in 0..workers.min(todo.len()) {
            let (tx, next, stop) = (tx.clone(), next.clone(), stop.clone());
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(&i) = todo.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    if tx.send((i, run_point(&inputs[i]))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut first_err = None;
        for (i, r) in rx {
            let r = r
                .map_err(|e| CliError::Usage(format!("sweep point {i}: {e}")))
                .and_then(|figs| finished(i, &figs));
            if let Err(e) = r {
                stop.store(true, Ordering::Relaxed);
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    })
}
