//! Issue 11: output piped into a reader that stops early (`iostack ... | head`)
//! ends the program quietly, with the status a shell gives a SIGPIPE death and
//! no panic message.

use std::io::Read;
use std::process::{Command, Stdio};

/// Run iostack with stdout into a pipe, read `keep` bytes, close the pipe, and
/// return the exit status and standard error.
fn closed_after(args: &[&str], keep: usize) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_iostack"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut buf = vec![0u8; keep];
    out.read_exact(&mut buf).unwrap();
    drop(out);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (child.wait().unwrap().code(), err)
}

#[test]
fn a_reader_that_goes_away_ends_the_program_quietly() {
    // About 1 MB of blkparse text, far more than a pipe holds: the writer is
    // still writing when the reader closes, so the write fails with EPIPE.
    let dd = [
        "dd",
        "if=/dev/zero",
        "of=/mnt/test/f",
        "bs=4k",
        "count=3000",
        "oflag=direct",
        "--machine",
        "null",
        "--blkparse",
        "-",
    ];
    let (code, err) = closed_after(&dd, 100);
    assert_eq!(code, Some(141), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.is_empty(), "{err}");
}

#[test]
fn a_reader_that_closes_at_once_ends_the_program_quietly() {
    // `tunables` writes once; with the pipe closed before it writes, that write
    // fails (or, if it fit in the pipe first, the program ends normally).
    let mut child = Command::new(env!("CARGO_BIN_EXE_iostack"))
        .args(["tunables", "--markdown"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(matches!(out.status.code(), Some(0 | 141)), "{err}");
    assert!(err.is_empty(), "{err}");
}
