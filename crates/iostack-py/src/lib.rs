//! `iostack._iostack`: the Python extension module under the `iostack` package
//! (python/iostack). A run goes through the command line's own library
//! (`iostack_cli::api`), so its figures are those of `iostack run
//! --output-format json`; the request table is an Arrow IPC stream that
//! pyarrow reads. The simulation runs without the GIL, so Python threads run
//! points of a sweep in parallel.

mod errors;

use iostack_cli::api::{self, RunInputs};
use iostack_cli::commands::JobSource;
use iostack_cli::out::CliError;
use iostack_cli::requests;
use iostack_core::TraceSink;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A finished run: fio's reports and the request table.
#[pyclass(module = "iostack._iostack", frozen)]
struct RunOutput {
    #[pyo3(get)]
    json: String,
    #[pyo3(get)]
    text: String,
    #[pyo3(get)]
    seed: u64,
    #[pyo3(get)]
    config_hash: u64,
    #[pyo3(get)]
    truncated: bool,
    /// Rows of the request table (`None` when it was not asked for).
    #[pyo3(get)]
    request_rows: Option<u64>,
    ipc: Option<Vec<u8>>,
}

#[pymethods]
impl RunOutput {
    /// The request table as an Arrow IPC stream (bytes), or None.
    fn requests_ipc<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.ipc.as_deref().map(|b| PyBytes::new(py, b))
    }
}

fn run_inner(inp: RunInputs, want_requests: bool) -> Result<RunOutput, CliError> {
    let mut extra: Vec<Box<dyn TraceSink>> = Vec::new();
    if want_requests {
        let sink = requests::RequestSink::new()?;
        extra.push(Box::new(sink));
    }
    let mut run = api::run_fio(&inp, extra)?;
    let (ipc, rows) = match iostack_cli::commands::take::<requests::RequestSink>(&mut run.sinks) {
        Some(s) => {
            let (b, n) = s.into_ipc()?;
            (Some(b), Some(n))
        }
        None => (None, None),
    };
    Ok(RunOutput {
        json: run.json,
        text: run.text,
        seed: run.seed,
        config_hash: run.config_hash,
        truncated: run.truncated,
        request_rows: rows,
        ipc,
    })
}

/// Trace files: blktrace prefix, blkparse text, ftrace text.
type Traces = (Option<String>, Option<String>, Option<String>);

/// Run fio job(s) as `iostack run` does. `jobs` is a list of (name, text)
/// pairs (text None: `name` is a path to read); `sets` are `NAME=VALUE`
/// tunable assignments.
#[pyfunction]
#[pyo3(signature = (jobs, machine=None, kernel=None, sched=None, seed=None, sets=Vec::new(), until=None, layouts=Vec::new(), requests=true, traces=(None, None, None)))]
#[allow(clippy::too_many_arguments)]
fn run_fio(
    py: Python<'_>,
    jobs: Vec<(String, Option<String>)>,
    machine: Option<String>,
    kernel: Option<String>,
    sched: Option<String>,
    seed: Option<u64>,
    sets: Vec<String>,
    until: Option<String>,
    layouts: Vec<String>,
    requests: bool,
    traces: Traces,
) -> PyResult<RunOutput> {
    let jobs = jobs
        .into_iter()
        .map(|(name, text)| match text {
            Some(text) => JobSource::Text { name, text },
            None => JobSource::Path(name),
        })
        .collect();
    let inp = RunInputs {
        jobs,
        machine,
        kernel,
        sched,
        seed,
        sets,
        until,
        layouts,
        blktrace: traces.0,
        blkparse: traces.1,
        ftrace: traces.2,
    };
    py.allow_threads(|| run_inner(inp, requests))
        .map_err(errors::to_py)
}

/// Every tunable of the tables the code reads, as (name, unit, default under
/// `kernel`, description); with `sched`, that scheduler is checked against
/// the kernel as `iostack tunables --sched` checks it.
#[pyfunction]
#[pyo3(signature = (kernel="2.6.36", sched=None))]
fn tunables(kernel: &str, sched: Option<&str>) -> PyResult<Vec<(String, String, String, String)>> {
    if let Some(s) = sched {
        api::check_scheduler(kernel, s).map_err(errors::to_py)?;
    }
    api::tunable_table(kernel).map_err(errors::to_py)
}

fn to_json(v: &impl serde::Serialize) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| errors::to_py(format!("json: {e}").into()))
}

/// The machine presets (`iostack machines`), as JSON rows.
#[pyfunction]
fn machines() -> PyResult<String> {
    to_json(&iostack_cli::catalog::machines())
}

/// One machine, a preset or a machine file, as a JSON row.
#[pyfunction]
fn machine(name: &str) -> PyResult<String> {
    to_json(&iostack_cli::catalog::machine(name).map_err(errors::to_py)?)
}

/// Every device preset, as JSON rows.
#[pyfunction]
fn devices() -> PyResult<String> {
    to_json(&iostack_cli::catalog::devices())
}

/// The kernel profiles, as JSON rows.
#[pyfunction]
fn profiles() -> PyResult<String> {
    to_json(&iostack_cli::catalog::profiles())
}

/// The I/O schedulers (of `kernel`'s profile when given), as JSON rows.
#[pyfunction]
#[pyo3(signature = (kernel=None))]
fn schedulers(kernel: Option<&str>) -> PyResult<String> {
    to_json(&iostack_cli::catalog::schedulers(kernel).map_err(errors::to_py)?)
}

/// Run a front end (dd, iozone, fs_mark, bonnie) as `iostack TOOL ARGV...`;
/// its standard output and error.
#[pyfunction]
fn run_tool(py: Python<'_>, tool: String, argv: Vec<String>) -> PyResult<(String, String)> {
    py.allow_threads(|| api::tool(&tool, &argv))
        .map_err(errors::to_py)
}

/// The figures a sweep keeps of fio's JSON report (the command line's
/// `iostack sweep` keeps the same): (job, metric, value) triples.
#[pyfunction]
fn sweep_figures(json: &str) -> PyResult<Vec<(String, String, f64)>> {
    iostack_cli::sweep::figures(json).map_err(errors::to_py)
}

/// A sweep journal's finished points (`DIR/points.jsonl`, as `iostack sweep`
/// reads it): (point key, figures) pairs; a missing file has none.
#[pyfunction]
fn sweep_journal(path: &str) -> PyResult<Vec<(String, Vec<iostack_cli::sweep::Figure>)>> {
    let done = iostack_cli::sweep::read_journal(std::path::Path::new(path));
    Ok(done.map_err(errors::to_py)?.into_iter().collect())
}

/// One journal line of a finished point, as `iostack sweep` writes it.
#[pyfunction]
fn sweep_journal_line(key: &str, figures: Vec<iostack_cli::sweep::Figure>) -> String {
    iostack_cli::sweep::journal_line(key, &figures)
}

/// The inputs of one point, as `run_fio` takes them: jobs, machine, kernel,
/// sched, seed, sets, until, layouts.
type PointInputs = (
    Vec<(String, Option<String>)>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<u64>,
    Vec<String>,
    Option<String>,
    Vec<String>,
);

/// A grid file's keys (values as JSON text) and its points' inputs.
type GridFile = (Vec<(String, String)>, Vec<PointInputs>);

/// A grid file as `iostack sweep GRID.toml` reads it: its keys with their
/// values (as JSON text), and every point's run inputs in point order.
#[pyfunction]
fn sweep_grid(path: &str) -> PyResult<GridFile> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| errors::to_py(iostack_cli::out::CliError::io(path, e)))?;
    let grid = iostack_cli::sweep::parse(path, &text).map_err(errors::to_py)?;
    let keys = grid
        .keys
        .iter()
        .map(|(k, vs)| {
            let vs: Vec<serde_json::Value> = vs.iter().map(|v| v.json()).collect();
            (k.clone(), serde_json::Value::Array(vs).to_string())
        })
        .collect();
    let points = grid
        .points()
        .iter()
        .map(|p| {
            let i = grid.inputs(p);
            let jobs = i
                .jobs
                .into_iter()
                .map(|j| match j {
                    JobSource::Path(p) => (p, None),
                    JobSource::Text { name, text } => (name, Some(text)),
                })
                .collect();
            (
                jobs, i.machine, i.kernel, i.sched, i.seed, i.sets, i.until, i.layouts,
            )
        })
        .collect();
    Ok((keys, points))
}

#[pymodule]
fn _iostack(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RunOutput>()?;
    m.add_function(wrap_pyfunction!(run_fio, m)?)?;
    m.add_function(wrap_pyfunction!(tunables, m)?)?;
    m.add_function(wrap_pyfunction!(machines, m)?)?;
    m.add_function(wrap_pyfunction!(machine, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(profiles, m)?)?;
    m.add_function(wrap_pyfunction!(schedulers, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_figures, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_grid, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_journal, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_journal_line, m)?)?;
    m.add_function(wrap_pyfunction!(run_tool, m)?)?;
    m.add("SWEEP_METRICS", iostack_cli::sweep::METRICS.to_vec())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)
}
