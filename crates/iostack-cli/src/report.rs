//! `iostack report`: self-contained HTML plots (Vega-Lite, [`crate::plots`]).
//! `iostack report JOB.fio [run options] --html FILE` runs the job as `iostack
//! run` does and plots its requests (the table `Result.requests()` gives in
//! Python) as seekwatcher and iowatcher do: offset against time, throughput,
//! IOPS and seeks per second over time, queue depth and latency over time,
//! and latency CDFs per job. `iostack report --sweep DIR --html FILE` plots
//! each metric of a sweep's DIR/jobs.parquet against each parameter.

use crate::args::{self, Parsed};
use crate::commands::{JobSource, Result, RUN_FLAGS};
use crate::out::{self, CliError};
use crate::plots::{self, Chart, READ, WRITE};
use crate::requests::RequestSink;
use arrow_array::{Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use serde_json::{json, Value};
use std::process::ExitCode;

/// Time bins of the over-time plots.
const BINS: u64 = 200;
/// At most this many points in a scatter plot (every k-th request past it).
const MAX_POINTS: usize = 20_000;
const NS: f64 = 1e9;

/// One request, as the plots need it.
struct Req {
    q_ns: Option<u64>,
    d_ns: u64,
    c_ns: Option<u64>,
    sector: u64,
    bytes: u64,
    write: bool,
    comm: String,
}

fn flags() -> Vec<&'static str> {
    let mut f: Vec<&str> = RUN_FLAGS
        .iter()
        .copied()
        .filter(|f| *f != "help-options" && *f != "output-format")
        .collect();
    f.extend(["html", "sweep"]);
    f
}

/// `iostack report JOB.fio... [options] --html FILE` or `--sweep DIR --html FILE`.
pub fn command(rest: &[String]) -> Result<ExitCode> {
    let allowed = flags();
    let p = args::parse(rest, &allowed).map_err(|e| CliError::Usage(e.0))?;
    let usage = format!(
        "usage: iostack report JOB.fio [options] --html FILE\n       \
         iostack report --sweep DIR --html FILE\n{}",
        args::help(&allowed)
    );
    if p.has("help") {
        out::stdout(&usage)?;
        return Ok(ExitCode::SUCCESS);
    }
    let Some(html) = p.get("html") else {
        out::stderr(&usage);
        return Ok(ExitCode::from(2));
    };
    let page = match p.get("sweep") {
        Some(dir) => sweep_page(dir)?,
        None if !p.positional.is_empty() => run_page(&p)?,
        None => {
            out::stderr(&usage);
            return Ok(ExitCode::from(2));
        }
    };
    std::fs::write(html, page).map_err(|e| CliError::io(format!("--html {html}"), e))?;
    Ok(ExitCode::SUCCESS)
}

fn run_page(p: &Parsed) -> Result<String> {
    let inp = crate::api::RunInputs {
        jobs: p.positional.iter().cloned().map(JobSource::Path).collect(),
        machine: p.get("machine").map(str::to_string),
        kernel: p.get("kernel").map(str::to_string),
        sched: p.get("sched").map(str::to_string),
        seed: match p.get("seed") {
            Some(s) => Some(
                s.parse()
                    .map_err(|_| format!("--seed: expected an unsigned integer, got '{s}'"))?,
            ),
            None => None,
        },
        sets: p.all("set").into_iter().map(str::to_string).collect(),
        until: p.get("until").map(str::to_string),
        layouts: p.all("layout").into_iter().map(str::to_string).collect(),
        blktrace: p.get("blktrace").map(str::to_string),
        blkparse: p.get("blkparse").map(str::to_string),
        ftrace: p.get("ftrace").map(str::to_string),
    };
    let sink = RequestSink::new()?;
    let mut run = crate::api::run_fio(&inp, vec![Box::new(sink)])?;
    let sink = crate::commands::take::<RequestSink>(&mut run.sinks).ok_or("no request table")?;
    let (ipc, _) = sink.into_ipc()?;
    let reqs = requests(&ipc)?;
    let note = format!(
        "{} ({} requests; {})",
        p.positional.join(" "),
        reqs.len(),
        crate::sinks::provenance(iostack_des::Seed(run.seed), run.config_hash)
    );
    Ok(plots::page(
        "iostack report",
        &format!("{note}. Read requests blue, writes orange; times from the start of the run."),
        &run_charts(&reqs, &note),
    ))
}

fn col<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> Result<&'a T> {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| format!("request table: no column {name}").into())
}

/// The request table (an Arrow IPC stream) as rows.
fn requests(ipc: &[u8]) -> Result<Vec<Req>> {
    let rd =
        arrow_ipc::reader::StreamReader::try_new(ipc, None).map_err(|e| format!("arrow: {e}"))?;
    let mut v = Vec::new();
    for b in rd {
        let b = b.map_err(|e| format!("arrow: {e}"))?;
        let (q, d, c) = (
            col::<UInt64Array>(&b, "q_ns")?,
            col::<UInt64Array>(&b, "d_ns")?,
            col::<UInt64Array>(&b, "c_ns")?,
        );
        let (sector, bytes) = (
            col::<UInt64Array>(&b, "sector")?,
            col::<UInt32Array>(&b, "bytes")?,
        );
        let (rwbs, comm) = (
            col::<StringArray>(&b, "rwbs")?,
            col::<StringArray>(&b, "comm")?,
        );
        let pid = col::<UInt32Array>(&b, "pid")?;
        let opt = |a: &UInt64Array, i: usize| (!a.is_null(i)).then(|| a.value(i));
        for i in 0..b.num_rows() {
            v.push(Req {
                q_ns: opt(q, i),
                d_ns: d.value(i),
                c_ns: opt(c, i),
                sector: sector.value(i),
                bytes: u64::from(bytes.value(i)),
                write: rwbs.value(i).contains('W'),
                comm: format!("{} (pid {})", comm.value(i), pid.value(i)),
            });
        }
    }
    Ok(v)
}

fn dir(write: bool) -> &'static str {
    if write {
        "write"
    } else {
        "read"
    }
}

/// Per time bin and direction: bytes and completions, dispatches that seek,
/// and the time-weighted number of requests at the device.
struct Binned {
    width: u64,
    bytes: Vec<[u64; 2]>,
    ios: Vec<[u64; 2]>,
    seeks: Vec<u64>,
    depth_ns: Vec<u128>,
}

fn bin(reqs: &[Req]) -> Binned {
    let end = reqs
        .iter()
        .map(|r| r.c_ns.unwrap_or(r.d_ns))
        .max()
        .unwrap_or(0);
    let width = (end / BINS).max(1) + 1;
    let n = (end / width + 1) as usize;
    let mut b = Binned {
        width,
        bytes: vec![[0; 2]; n],
        ios: vec![[0; 2]; n],
        seeks: vec![0; n],
        depth_ns: vec![0; n],
    };
    // seekwatcher's seek: a dispatch that does not start where the last ended.
    let mut by_d: Vec<&Req> = reqs.iter().collect();
    by_d.sort_by_key(|r| r.d_ns);
    let mut next = None;
    for r in &by_d {
        if next.is_some_and(|s| s != r.sector) {
            b.seeks[(r.d_ns / width) as usize] += 1;
        }
        next = Some(r.sector + r.bytes / 512);
    }
    for r in reqs {
        let Some(c) = r.c_ns else { continue };
        let k = usize::from(r.write);
        b.bytes[(c / width) as usize][k] += r.bytes;
        b.ios[(c / width) as usize][k] += 1;
        // The request is at the device from D to C: add its share to each bin.
        let mut t = r.d_ns;
        while t < c {
            let i = t / width;
            let stop = c.min((i + 1) * width);
            b.depth_ns[i as usize] += u128::from(stop - t);
            t = stop;
        }
    }
    b
}

fn downsample(reqs: &[Req]) -> impl Iterator<Item = &Req> {
    let step = reqs.len().div_ceil(MAX_POINTS).max(1);
    reqs.iter().step_by(step)
}

fn run_charts(reqs: &[Req], note: &str) -> Vec<Chart> {
    let b = bin(reqs);
    let w = b.width as f64 / NS;
    let colors = ("dir", &["read", "write"][..], &[READ, WRITE][..]);
    let t = ("t_s", "time (s)");
    let rate = |f: &dyn Fn(usize, usize) -> f64| -> Vec<Value> {
        let mut v = Vec::new();
        for i in 0..b.ios.len() {
            for k in 0..2 {
                v.push(json!({"t_s": i as f64 * w, "dir": dir(k == 1), "y": f(i, k)}));
            }
        }
        v
    };
    let tput = rate(&|i, k| b.bytes[i][k] as f64 / 1e6 / w);
    let iops = rate(&|i, k| b.ios[i][k] as f64 / w);
    let seeks: Vec<Value> = (0..b.seeks.len())
        .map(|i| json!({"t_s": i as f64 * w, "dir": "all", "y": b.seeks[i] as f64 / w}))
        .collect();
    let depth: Vec<Value> = (0..b.depth_ns.len()).map(|i| json!({"t_s": i as f64 * w, "dir": "all", "y": b.depth_ns[i] as f64 / b.width as f64})).collect();
    let offsets: Vec<Value> = downsample(reqs).map(|r| json!({"t_s": r.d_ns as f64 / NS, "dir": dir(r.write), "y": r.sector as f64 * 512.0 / 1e6})).collect();
    let lat: Vec<Value> = downsample(reqs)
        .filter_map(|r| Some(json!({"t_s": r.c_ns? as f64 / NS, "dir": dir(r.write), "y": (r.c_ns? - r.q_ns.unwrap_or(r.d_ns)) as f64 / 1e6})))
        .collect();
    let all = ("dir", &[][..], &[][..]);
    let mk = |id: &str, title: &str, v: Vec<Value>, mark: &str, y: (&str, &str), c| Chart {
        id: id.into(),
        title: title.into(),
        note: note.into(),
        spec: plots::series(v, mark, t, y, c),
        height: 250,
    };
    vec![
        mk(
            "offset",
            "Disk offset over time (seekwatcher)",
            offsets,
            "point",
            ("y", "offset (MB)"),
            colors,
        ),
        mk(
            "throughput",
            "Throughput over time (seekwatcher)",
            tput,
            "line",
            ("y", "MB/s"),
            colors,
        ),
        mk(
            "iops",
            "Completions per second (iowatcher)",
            iops,
            "line",
            ("y", "IO/s"),
            colors,
        ),
        mk(
            "seeks",
            "Seeks per second (seekwatcher)",
            seeks,
            "line",
            ("y", "seeks/s"),
            all,
        ),
        mk(
            "queue-depth",
            "Requests at the device, D to C (iowatcher)",
            depth,
            "line",
            ("y", "queue depth"),
            all,
        ),
        mk(
            "latency",
            "Latency Q to C over time (iowatcher)",
            lat,
            "point",
            ("y", "latency (ms)"),
            colors,
        ),
        Chart {
            id: "latency-cdf".into(),
            title: "Latency CDF per job (Q to C)".into(),
            note: note.into(),
            spec: cdf(reqs),
            height: 250,
        },
    ]
}

/// Q-to-C latency CDF per job (its task: name and pid), at most 500 points each.
fn cdf(reqs: &[Req]) -> Value {
    let mut jobs: Vec<&str> = reqs.iter().map(|r| r.comm.as_str()).collect();
    jobs.sort_unstable();
    jobs.dedup();
    let mut v = Vec::new();
    for j in jobs {
        let mut l: Vec<u64> = reqs
            .iter()
            .filter(|r| r.comm == j)
            .filter_map(|r| Some(r.c_ns? - r.q_ns.unwrap_or(r.d_ns)))
            .collect();
        l.sort_unstable();
        let step = l.len().div_ceil(500).max(1);
        for (i, x) in l
            .iter()
            .enumerate()
            .step_by(step)
            .chain(l.iter().enumerate().next_back())
        {
            v.push(json!({"job": j, "ms": *x as f64 / 1e6, "p": (i + 1) as f64 / l.len() as f64}));
        }
    }
    plots::series(
        v,
        "line",
        ("ms", "latency (ms)"),
        ("p", "fraction of requests"),
        ("job", &[], &[]),
    )
}

/// The sweep's table, DIR/jobs.parquet: per parameter, each metric's mean over
/// the other parameters against the parameter's values.
fn sweep_page(dir: &str) -> Result<String> {
    let path = std::path::Path::new(dir).join("jobs.parquet");
    let f = std::fs::File::open(&path).map_err(|e| CliError::io(path.display(), e))?;
    let rd = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .and_then(|b| b.build())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut rows: Vec<serde_json::Map<String, Value>> = Vec::new();
    let mut params: Vec<String> = Vec::new();
    for b in rd {
        let b = b.map_err(|e| format!("{}: {e}", path.display()))?;
        params = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .filter(|n| !["point", "job", "metric", "value"].contains(&n.as_str()))
            .collect();
        let names: Vec<String> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        for i in 0..b.num_rows() {
            let mut m = serde_json::Map::new();
            for (c, n) in b.columns().iter().zip(&names) {
                m.insert(n.clone(), cell(c.as_ref(), i));
            }
            rows.push(m);
        }
    }
    let values: Vec<Value> = rows.into_iter().map(Value::Object).collect();
    let charts = params.iter().map(|p| Chart {
        id: format!("param-{p}").replace('/', "-"),
        title: format!("Each metric against {p}"),
        note: format!("{}: mean over the other parameters, per job", path.display()),
        spec: json!({
            "data": {"values": values},
            "facet": {"field": "metric", "type": "nominal", "title": null},
            "columns": 4,
            "spec": {"width": 220, "height": 140, "mark": {"type": "line", "point": true},
                     "encoding": {"x": {"field": p, "type": "ordinal"},
                                  "y": {"aggregate": "mean", "field": "value", "type": "quantitative", "title": null},
                                  "color": {"field": "job", "type": "nominal"}}},
            "resolve": {"scale": {"y": "independent"}},
        }),
        height: 2 * 260,
    });
    Ok(plots::page(
        "iostack report: sweep",
        &format!("{} rows of {}", values.len(), path.display()),
        &charts.collect::<Vec<_>>(),
    ))
}

fn cell(c: &dyn Array, i: usize) -> Value {
    use arrow_array::{BooleanArray, Float64Array, Int64Array};
    let a = c.as_any();
    if c.is_null(i) {
        Value::Null
    } else if let Some(x) = a.downcast_ref::<Int64Array>() {
        x.value(i).into()
    } else if let Some(x) = a.downcast_ref::<Float64Array>() {
        x.value(i).into()
    } else if let Some(x) = a.downcast_ref::<BooleanArray>() {
        x.value(i).into()
    } else if let Some(x) = a.downcast_ref::<StringArray>() {
        x.value(i).into()
    } else {
        Value::Null
    }
}
