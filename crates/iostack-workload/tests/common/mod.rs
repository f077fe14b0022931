//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use iostack_workload::ParseEnv;

pub const FIO: &str = "/usr/bin/fio";

/// `tests/data`.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
}

/// The variables the job files under `tests/data` use. `NODIR` is deliberately
/// unset.
pub const VARS: &[(&str, &str)] = &[("SIZE", "64m"), ("BS", "8k"), ("DESC", "from env")];

/// A parse environment that matches what fio sees when run by [`run_fio`]:
/// exactly [`VARS`], the host's page size, memory and CPU count, cwd = tests/data.
pub fn test_env() -> ParseEnv {
    let host = ParseEnv::host();
    let mut env = ParseEnv {
        vars: Default::default(),
        pagesize: 4096,
        mb_memory: host.mb_memory,
        ncpus: host.ncpus,
        cwd: data_dir(),
        files: None,
    };
    for (k, v) in VARS {
        env.vars.insert(k.to_string(), v.to_string());
    }
    env
}

/// Whether the judge is installed. Prints a loud warning when it is not.
pub fn fio_available() -> bool {
    if Path::new(FIO).exists() {
        true
    } else {
        eprintln!("**********************************************************************");
        eprintln!("* WARNING: {FIO} not found: skipping the comparison with real fio    *");
        eprintln!("**********************************************************************");
        false
    }
}

/// Output of one fio run.
pub struct FioRun {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Run fio with `args` in tests/data with a clean environment (only PATH and
/// [`VARS`]).
pub fn run_fio(args: &[&str]) -> FioRun {
    let out = Command::new(FIO)
        .args(args)
        .current_dir(data_dir())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .envs(VARS.iter().copied())
        .output()
        .expect("run fio");
    FioRun {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `*.fio` files of a subdirectory of tests/data, as paths relative to tests/data,
/// sorted.
pub fn fio_files(sub: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(data_dir().join(sub))
        .expect("read data dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".fio"))
        .map(|n| format!("{sub}/{n}"))
        .collect();
    v.sort();
    v
}
