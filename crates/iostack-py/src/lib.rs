//! `iostack._iostack`: the Python extension module under the `iostack` package
//! (python/iostack). A run goes through the command line's own library
//! (`iostack_cli::api`), so its figures are those of `iostack run
//! --output-format json`; the request table is an Arrow IPC stream that
//! pyarrow reads. The simulation runs without the GIL, so Python threads run
//! points of a sweep in parallel.

mod errors;
mod requests;

use iostack_cli::api::{self, RunInputs};
use iostack_cli::commands::JobSource;
use iostack_cli::out::CliError;
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
        let sink = requests::RequestSink::new().map_err(|e| format!("arrow: {e}"))?;
        extra.push(Box::new(sink));
    }
    let mut run = api::run_fio(&inp, extra)?;
    let (ipc, rows) = match iostack_cli::commands::take::<requests::RequestSink>(&mut run.sinks) {
        Some(s) => {
            let (b, n) = s.into_ipc().map_err(|e| format!("arrow: {e}"))?;
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

/// Run fio job(s) as `iostack run` does. `jobs` is a list of (name, text)
/// pairs (text None: `name` is a path to read); `sets` are `NAME=VALUE`
/// tunable assignments.
#[pyfunction]
#[pyo3(signature = (jobs, machine=None, kernel=None, sched=None, seed=None, sets=Vec::new(), until=None, layouts=Vec::new(), requests=true))]
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
    };
    py.allow_threads(|| run_inner(inp, requests))
        .map_err(errors::to_py)
}

/// Every tunable of the tables the code reads, as (name, unit, default under
/// `kernel`, description).
#[pyfunction]
#[pyo3(signature = (kernel="2.6.36"))]
fn tunables(kernel: &str) -> PyResult<Vec<(String, String, String, String)>> {
    api::tunable_table(kernel).map_err(errors::to_py)
}

#[pymodule]
fn _iostack(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RunOutput>()?;
    m.add_function(wrap_pyfunction!(run_fio, m)?)?;
    m.add_function(wrap_pyfunction!(tunables, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)
}
