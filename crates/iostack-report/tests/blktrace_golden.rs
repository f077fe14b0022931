//! Golden files for the fixed synthetic trace (`blktrace_common::fixture`):
//!
//! - `data/bt/fixture.blktrace.N`: the binary per-CPU streams, checked with real
//!   blkparse/blkrawverify when they were recorded;
//! - `data/bt/fixture.blkparse.txt`: real blkparse 1.2.0's stdout (piped) for those
//!   files, `blkparse -i fixture`;
//! - `data/bt/fixture.ftrace.txt` / `fixture.ftrace_collapsed.txt`: the blk tracer
//!   text with kernel spacing and collapsed, checked by hand against
//!   `kernel/trace/blktrace.c` and seed 002.
//!
//! `IOSTACK_BLESS=1` rewrites the binary and ftrace files from the current code (the
//! blkparse file must then be re-recorded with the real tool).

#[path = "blktrace_common.rs"]
mod common;

use common::*;
use iostack_report::blkparse::{blkparse_files, BlkparseSink};
use iostack_report::blktrace::BlktraceWriter;
use iostack_report::ftrace::{FtraceSink, FtraceStyle};
use std::path::PathBuf;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/bt")
}

fn bless() -> bool {
    std::env::var("IOSTACK_BLESS").as_deref() == Ok("1")
}

fn check_bytes(name: &str, ours: &[u8]) {
    let path = data_dir().join(name);
    if bless() {
        std::fs::create_dir_all(data_dir()).expect("data dir");
        std::fs::write(&path, ours).expect("write golden");
        return;
    }
    let golden = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if golden != ours {
        let at = golden.iter().zip(ours).position(|(a, b)| a != b);
        panic!(
            "{name} differs from the golden file (first difference at byte {at:?}, lengths {} vs {})",
            golden.len(),
            ours.len()
        );
    }
}

fn check_text(name: &str, ours: &str) {
    let path = data_dir().join(name);
    if bless() {
        std::fs::create_dir_all(data_dir()).expect("data dir");
        std::fs::write(&path, ours).expect("write golden");
        return;
    }
    let golden =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        golden == ours,
        "{name}: {}",
        first_difference(ours, &golden)
    );
}

#[test]
fn binary_streams_match_golden() {
    let f = fixture();
    let mut w = BlktraceWriter::new();
    run(&f, &mut w);
    let files = w.files();
    // CPUs 0..=15 all have a file; unused ones are empty.
    assert_eq!(files.len(), 16);
    let empty: Vec<u32> = files
        .iter()
        .filter(|(_, d)| d.is_empty())
        .map(|(c, _)| *c)
        .collect();
    assert_eq!(empty, vec![1, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14]);
    for (cpu, data) in files {
        check_bytes(&format!("fixture.blktrace.{cpu}"), data);
    }
}

#[test]
fn blkparse_text_matches_real_blkparse_recording() {
    let f = fixture();
    let mut sink = BlkparseSink::new("fixture");
    run(&f, &mut sink);
    let text = sink.text();
    let path = data_dir().join("fixture.blkparse.txt");
    let golden =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(text == golden, "{}", first_difference(&text, &golden));
}

#[test]
fn blkparse_of_golden_binaries_matches_recording() {
    // The parser alone, over the recorded binary files.
    let mut owned = Vec::new();
    for cpu in 0..16u32 {
        let p = data_dir().join(format!("fixture.blktrace.{cpu}"));
        owned.push((
            cpu,
            std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
        ));
    }
    let files: Vec<(u32, &[u8])> = owned.iter().map(|(c, d)| (*c, d.as_slice())).collect();
    let out = blkparse_files("fixture", &files);
    let golden = std::fs::read_to_string(data_dir().join("fixture.blkparse.txt")).expect("golden");
    let text = out.piped();
    assert!(text == golden, "{}", first_difference(&text, &golden));
    assert!(out
        .input_files
        .starts_with("Input file fixture.blktrace.0 added\n"));
    assert_eq!(out.input_files.lines().count(), 5);
}

#[test]
fn ftrace_text_matches_golden() {
    let f = fixture();
    let mut kernel = FtraceSink::new(FtraceStyle::Kernel);
    let mut collapsed = FtraceSink::new(FtraceStyle::Collapsed);
    run(&f, &mut kernel);
    run(&f, &mut collapsed);
    check_text("fixture.ftrace.txt", kernel.text());
    check_text("fixture.ftrace_collapsed.txt", collapsed.text());
    // The collapsed form is the kernel form with blank runs squeezed.
    let squeezed: String = kernel
        .text()
        .lines()
        .map(|l| iostack_report::ftrace::collapse_whitespace(l) + "\n")
        .collect();
    assert_eq!(squeezed, collapsed.text());
}

#[test]
fn device_filter_keeps_one_device() {
    let f = fixture();
    let mut w = BlktraceWriter::for_device(SDB);
    run(&f, &mut w);
    let mut sink = BlkparseSink::for_device("sdb", SDB);
    run(&f, &mut sink);
    let text = sink.text();
    let events: Vec<&str> = text.lines().take_while(|l| !l.starts_with("CPU")).collect();
    assert_eq!(
        events,
        vec!["  8,16  15        1     0.000000000     0  C   W 50000 + 1 [0]"]
    );
    // CPU 0 carries the start timestamp; 1..14 are empty; 15 has the completion.
    let files = w.files();
    assert_eq!(files.len(), 16);
    assert_eq!(files[0].1.len(), 48 + 8);
    assert!(files[1..15].iter().all(|(_, d)| d.is_empty()));
}
