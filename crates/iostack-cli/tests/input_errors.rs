//! Issue 11: every bad input is a message naming its file, line and option, and
//! numbers that would overflow are refused, never wrapped; none of these panics.

use std::path::PathBuf;
use std::process::Command;

/// Run iostack; (exit code, stdout, stderr).
fn iostack<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_iostack"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("iostack-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A refusal: status 2, `iostack: ` and `want` on stderr, no panic.
fn refused(args: &[&str], want: &str) {
    let (code, _, err) = iostack(args);
    assert_eq!(code, Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(err.starts_with("iostack: "), "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
}

#[test]
fn a_wake_latency_that_overflows_time_names_file_line_and_key() {
    let m = scratch("wake.machine");
    std::fs::write(
        &m,
        "base = null\n# huge\ncpu_wake_ns = 18446744073709551615\n",
    )
    .unwrap();
    let m = m.to_str().unwrap();
    let want =
        format!("{m}:3: key 'cpu_wake_ns': 18446744073709551615 is out of range 0..=1000000000 ns");
    refused(
        &[
            "dd",
            "if=/dev/nullb0",
            "of=/dev/null",
            "bs=4k",
            "count=1",
            "--machine",
            m,
        ],
        &want,
    );
}

#[test]
fn machine_values_that_would_wrap_are_refused() {
    for (line, key) in [
        ("mem_mb = 17592186044416", "mem_mb"),
        ("cpus = 4294967297", "cpus"),
        ("major = 4294967304", "major"),
        ("minor = 4294967297", "minor"),
    ] {
        let m = scratch(&format!("{key}.machine"));
        std::fs::write(&m, format!("base = null\n{line}\n")).unwrap();
        let m = m.to_str().unwrap();
        refused(
            &["tunables", "--machine", m],
            &format!("{m}:2: key '{key}': "),
        );
    }
}

#[test]
fn command_line_values_name_their_option() {
    refused(
        &[
            "tunables",
            "--set",
            "queue/nr_requests=18446744073709551616",
        ],
        "--set queue/nr_requests=18446744073709551616: ",
    );
    refused(
        &["tunables", "--set", "queue/nr_requests"],
        "--set queue/nr_requests: ",
    );
    refused(
        &[
            "dd",
            "if=/mnt/test/f",
            "of=/dev/null",
            "--layout",
            "/mnt/test/f=16q",
        ],
        "--layout /mnt/test/f=16q: ",
    );
    refused(
        &[
            "dd",
            "if=/mnt/test/f",
            "of=/dev/null",
            "--layout",
            "/mnt/test/f=99999999999999999999",
        ],
        "overflows",
    );
    refused(
        &[
            "dd",
            "if=/mnt/test/f",
            "of=/dev/null",
            "--machine",
            "null",
            "--layout",
            "/mnt/test/f=16777215T",
        ],
        "do not fit",
    );
    refused(
        &[
            "dd",
            "if=/mnt/test/f",
            "of=/dev/null",
            "bs=1M",
            "skip=9223372036854775807",
        ],
        "dd: skip: offset overflow",
    );
    refused(
        &[
            "dd",
            "if=/dev/zero",
            "of=/mnt/test/f",
            "bs=1M",
            "count=9223372036854775807",
        ],
        "dd: count: offset overflow",
    );
    refused(&["reproduce", "--seed", "18446744073709551616"], "--seed: ");
}

#[test]
fn fio_job_limits_name_the_job_and_option() {
    let job = scratch("big.fio");
    std::fs::write(&job, "[big]\nrw=read\nsize=4m\noffset=8000p\n").unwrap();
    let j = job.to_str().unwrap();
    refused(
        &["run", j, "--machine", "null"],
        &format!("{j}:1: job 'big': offset=9007199254740992000 + size=4194304: "),
    );
    std::fs::write(&job, "[late]\nrw=read\nsize=1m\nstartdelay=200000d\n").unwrap();
    refused(
        &["run", j, "--machine", "null"],
        &format!("{j}:1: job 'late': startdelay (17280000000000000000 ns) + runtime"),
    );
    std::fs::write(&job, "[many]\nrw=read\nsize=1m\nnumjobs=4294967295\n").unwrap();
    refused(
        &["run", j, "--machine", "null"],
        &format!("{j}:1: job 'many': numjobs=4294967295 "),
    );
    std::fs::write(
        &job,
        "[deep]\nrw=read\nsize=1m\nioengine=libaio\niodepth=4294967295\n",
    )
    .unwrap();
    refused(
        &["run", j, "--machine", "null"],
        &format!("{j}:1: job 'deep': iodepth=4294967295 "),
    );
    std::fs::write(&job, "[huge]\nrw=write\nsize=8000p\n").unwrap();
    refused(
        &["run", j, "--machine", "null"],
        &format!("{j}:1: job 'huge': size="),
    );
}

#[test]
fn experiment_fields_are_refused_at_their_line() {
    let dir = scratch("exps");
    std::fs::create_dir_all(&dir).unwrap();
    let text = "name = \"x\"\ntitle = \"t\"\nsource = \"s\"\nmachine = \"null\"\n\
                kernel = \"2.6.36\"\n[workload]\ndd = \"if=/mnt/test/f of=/dev/null bs=4k count=1\"\n\
                [[variant]]\nname = \"a\"\nset = [\"vm/nope=1\"]\n[[metric]]\nname = \"elapsed_us\"\n\
                unit = \"us\"\n";
    std::fs::write(dir.join("x.toml"), text).unwrap();
    let path = dir.join("x.toml");
    let want = format!(
        "x variant a: {}:10: set vm/nope=1: unknown tunable",
        path.display()
    );
    refused(
        &["reproduce", "--experiments", dir.to_str().unwrap()],
        &want,
    );
}

#[test]
fn an_argument_that_is_not_utf8_is_a_message() {
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"if=/mnt/\xff");
    let (code, _, err) = iostack(&[std::ffi::OsStr::new("dd"), bad]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("is not valid UTF-8") && !err.contains("panicked"),
        "{err}"
    );
}

/// Every problem of a job file in one run: an unknown option, a malformed
/// value and a refused option, each on its own `FILE:LINE:` line in file
/// order, status 2, nothing simulated (no report on stdout).
#[test]
fn every_problem_of_a_job_file_is_reported_in_one_run() {
    let job = scratch("three.fio");
    std::fs::write(
        &job,
        "[global]\nsize=1m\nblocksze=4k\n[j]\nfilename=/mnt/test/e\nrw=randread\n\
         bs=4q\nramp_time=2\n",
    )
    .unwrap();
    let path = job.to_str().unwrap();
    let (code, out, err) = iostack(&["run", path]);
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty(), "{out}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert_eq!(
        lines[0],
        format!("iostack: {path}:3: unknown option 'blocksze' (did you mean 'blocksize'?)")
    );
    assert_eq!(
        lines[1],
        format!("{path}:7: option 'bs': invalid size '4q' (unknown size suffix 'q')")
    );
    assert_eq!(
        lines[2],
        format!("{path}:8: job 'j': option 'ramp_time=2' is refused: not modelled yet")
    );
}
