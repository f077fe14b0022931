//! The library's typed errors as Python exceptions: one class per kind of
//! error, all under `iostack.IostackError`, each carrying the message the
//! command line prints and, where the error has them, `file`, `line` and
//! `option` attributes.

use iostack_cli::out::CliError;
use iostack_sim::SimError;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::{create_exception, PyErr};

create_exception!(_iostack, IostackError, PyException, "An error of iostack.");
create_exception!(
    _iostack,
    MachineError,
    IostackError,
    "A bad machine file or preset."
);
create_exception!(
    _iostack,
    JobError,
    IostackError,
    "A fio job that does not parse or cannot be simulated."
);
create_exception!(
    _iostack,
    TunableError,
    IostackError,
    "A bad tunable assignment."
);
create_exception!(
    _iostack,
    ConfigError,
    IostackError,
    "A bad kernel profile, scheduler, size or option."
);
create_exception!(
    _iostack,
    RunError,
    IostackError,
    "A run that failed or did not end."
);

/// Where in the input an error is: (file, line, option).
type Place = (Option<String>, Option<usize>, Option<String>);

fn place(e: &SimError) -> Place {
    match e {
        SimError::Machine(m) => (m.file.clone(), m.line, m.key.clone()),
        SimError::Fio(f) => (
            Some(f.file.display().to_string()),
            (f.line > 0).then_some(f.line),
            f.option.as_deref().map(str::to_string),
        ),
        SimError::Job {
            file, line, option, ..
        } => (Some(file.clone()), *line, option.clone()),
        SimError::Tunable {
            file,
            line,
            assignment,
            ..
        } => {
            let name = assignment.split_once('=').map_or(&assignment[..], |x| x.0);
            (file.clone(), *line, Some(name.trim().to_string()))
        }
        SimError::Size { file, line, .. } => (file.clone(), *line, None),
        SimError::Dd(d) => (None, None, Some(d.operand.clone())),
        SimError::Variant { source, .. } => place(source),
        _ => (None, None, None),
    }
}

fn class_of<'py>(py: Python<'py>, e: &SimError) -> Bound<'py, pyo3::types::PyType> {
    match e {
        SimError::Machine(_) => py.get_type::<MachineError>(),
        SimError::Fio(_) | SimError::Job { .. } | SimError::Dd(_) => py.get_type::<JobError>(),
        SimError::Iozone(_) | SimError::FsMark(_) => py.get_type::<JobError>(),
        SimError::Tunable { .. } => py.get_type::<TunableError>(),
        SimError::Run(_) => py.get_type::<RunError>(),
        SimError::Variant { source, .. } => class_of(py, source),
        _ => py.get_type::<ConfigError>(),
    }
}

/// The Python exception for an error of the command-line library.
pub fn to_py(e: CliError) -> PyErr {
    Python::with_gil(|py| {
        let msg = e.to_string();
        let (cls, (file, line, option), kind) = match &e {
            CliError::Sim(s) => (class_of(py, s), place(s), format!("{s:?}")),
            CliError::Io { path, .. } => (
                py.get_type::<ConfigError>(),
                (Some(path.clone()), None, None),
                "Io".to_string(),
            ),
            _ => (
                py.get_type::<ConfigError>(),
                (None, None, None),
                "Usage".into(),
            ),
        };
        let kind = kind.split(['(', ' ', '{']).next().unwrap_or("").to_string();
        let err = PyErr::from_type(cls, msg);
        let v = err.value(py);
        let _ = v.setattr("file", file);
        let _ = v.setattr("line", line);
        let _ = v.setattr("option", option);
        let _ = v.setattr("kind", kind);
        err
    })
}

/// Register the exception classes in the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("IostackError", py.get_type::<IostackError>())?;
    m.add("MachineError", py.get_type::<MachineError>())?;
    m.add("JobError", py.get_type::<JobError>())?;
    m.add("TunableError", py.get_type::<TunableError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    Ok(())
}
