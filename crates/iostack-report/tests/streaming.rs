//! The sinks stream: written to a writer as the events arrive, their output is
//! byte for byte what the in-memory sinks (and, for blkparse, the parser over the
//! blktrace files) give, and what they hold at any moment is bounded by the events
//! of one instant, never by the length of the run.

#[path = "blktrace_common.rs"]
mod common;

use common::*;
use iostack_core::{TraceEvent, TraceSink};
use iostack_report::blkparse::{blkparse_files, BlkparseSink};
use iostack_report::blktrace::BlktraceWriter;
use iostack_report::ftrace::{FtraceSink, FtraceStyle};
use iostack_report::Out;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// A writer whose bytes the test can read after the sink is done with it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).expect("utf-8")
    }
}

fn time_of(ev: &TraceEvent) -> u64 {
    match ev {
        TraceEvent::Block(r) => r.time.as_ns(),
        TraceEvent::Message { time, .. } => time.as_ns(),
    }
}

/// Feed `f` to `sink`, checking after every event that it holds no more than the
/// events of the current instant.
fn run_bounded<S: TraceSink>(f: &Fixture, sink: &mut S, held: impl Fn(&S) -> usize) {
    for (pid, comm) in &f.tasks {
        sink.process(*pid, comm);
    }
    let mut same_instant = 0;
    let mut last = None;
    for (i, ev) in f.events.iter().enumerate() {
        for (_, pid, comm) in f.late.iter().filter(|l| l.0 == i) {
            sink.process(*pid, comm);
        }
        let t = time_of(ev);
        same_instant = if last == Some(t) { same_instant + 1 } else { 1 };
        last = Some(t);
        sink.event(ev);
        assert!(
            held(sink) <= same_instant,
            "event {i}: the sink holds {} records, the instant has {same_instant}",
            held(sink)
        );
    }
    sink.finish(f.end);
}

fn early(mut f: Fixture) -> Fixture {
    for (_, pid, comm) in f.late.drain(..) {
        f.tasks.push((pid, comm));
    }
    f
}

#[test]
fn blkparse_streams_what_the_parser_reads_from_the_files() {
    for f in [
        workload(6000),
        early(chaos(3, 3000)),
        early(chaos(4, 3000)),
        fixture(),
    ] {
        let mut w = BlktraceWriter::new();
        run(&f, &mut w);
        let want = blkparse_files("t", &w.files()).piped();
        let buf = Shared::default();
        let mut sink = BlkparseSink::new("t").to(Out::stream(Box::new(buf.clone())));
        run_bounded(&f, &mut sink, BlkparseSink::held_records);
        sink.finish_output().expect("flush");
        let got = buf.text();
        assert!(got == want, "{}", first_difference(&got, &want));
        // Nothing of the text is kept in the sink.
        assert_eq!(sink.text(), "");
    }
}

#[test]
fn ftrace_streams_what_it_keeps_in_memory() {
    for f in [workload(3000), chaos(5, 2000)] {
        let mut mem = FtraceSink::new(FtraceStyle::Kernel);
        run(&f, &mut mem);
        let buf = Shared::default();
        let mut sink = FtraceSink::new(FtraceStyle::Kernel).to(Out::stream(Box::new(buf.clone())));
        run_bounded(&f, &mut sink, FtraceSink::held_lines);
        sink.finish_output().expect("flush");
        assert_eq!(buf.text(), mem.text());
        assert_eq!(sink.text(), "");
    }
}

#[test]
fn blktrace_files_stream_the_same_bytes() {
    let dir = scratch_dir("stream");
    let f = workload(4000);
    let mut mem = BlktraceWriter::new();
    run(&f, &mut mem);
    let prefix = dir.join("s");
    let mut w = BlktraceWriter::new().to_files(&prefix).expect("create");
    run(&f, &mut w);
    let paths = w.finish_files().expect("flush");
    assert_eq!(paths.len(), mem.files().len());
    for ((cpu, data), path) in mem.files().into_iter().zip(&paths) {
        assert_eq!(*path, BlktraceWriter::file_path(&prefix, cpu));
        assert!(std::fs::read(path).expect("read") == data, "cpu {cpu}");
    }
    // The streaming writer keeps none of it.
    assert!(w.files().iter().all(|(_, d)| d.is_empty()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_blktrace_prefix_that_cannot_be_created_fails_up_front() {
    let r = BlktraceWriter::new().to_files(std::path::Path::new("/nonexistent-dir/x"));
    assert!(r.is_err());
}
