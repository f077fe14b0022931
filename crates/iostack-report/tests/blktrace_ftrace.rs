//! The ftrace `blk` tracer text: render → parse round trips, and the trace
//! published in seed 002 (`data/bt/seed002_ftrace.txt`, the mail's lines verbatim)
//! reproduced exactly from equivalent events.

#[path = "blktrace_common.rs"]
mod common;

use common::*;
use iostack_core::{Action, DevT, Pdu, ReqFlags, TraceEvent, TraceRecord, TraceSink};
use iostack_des::Instant;
use iostack_report::ftrace::{
    collapse_whitespace, ftrace_comm, parse_ftrace_line, render_block, render_message, FtraceLine,
    FtraceSink, FtraceStyle,
};
use std::collections::HashMap;
use std::path::PathBuf;

fn seed_lines() -> Vec<String> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/bt/seed002_ftrace.txt");
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(str::to_string)
        .collect()
}

/// What a parsed line must say about `rec` shown with task name `comm`.
fn assert_fields(l: &FtraceLine, rec: &TraceRecord, comm: &str) {
    let ctx = format!("{l:?} vs {rec:?}");
    assert_eq!(l.comm, comm, "{ctx}");
    assert_eq!(l.pid, rec.pid, "{ctx}");
    assert_eq!(l.cpu, rec.cpu, "{ctx}");
    assert_eq!(l.time_us, (rec.time.as_ns() + 500) / 1000, "{ctx}");
    assert_eq!(l.dev, rec.dev, "{ctx}");
    assert_eq!(l.action, rec.action.letter(), "{ctx}");
    assert_eq!(l.action_kind(), Some(rec.action), "{ctx}");
    let plug = matches!(
        rec.action,
        Action::Plug | Action::UnplugIo | Action::UnplugTimer
    );
    let blocks = if plug { 0 } else { rec.bytes >> 9 };
    let rwbs_w = rec.flags.contains(ReqFlags::WRITE) && !plug;
    assert_eq!(
        l.rwbs.contains('W'),
        rwbs_w && !rec.flags.contains(ReqFlags::DISCARD),
        "{ctx}"
    );
    match rec.action {
        Action::Remap => {
            let Pdu::Remap {
                from_dev,
                from_sector,
            } = rec.pdu
            else {
                panic!()
            };
            assert_eq!(l.remap_from, Some((from_dev, from_sector)), "{ctx}");
            assert_eq!(l.sector, Some(rec.sector), "{ctx}");
            assert_eq!(l.blocks, Some(blocks), "{ctx}");
            assert_eq!(l.task, None, "{ctx}");
        }
        Action::UnplugIo | Action::UnplugTimer => {
            let Pdu::Unplug { depth } = rec.pdu else {
                panic!()
            };
            assert_eq!(l.unplug_depth, Some(depth), "{ctx}");
            assert_eq!(l.task.as_deref(), Some(comm), "{ctx}");
            assert_eq!((l.sector, l.blocks), (None, None), "{ctx}");
        }
        Action::Plug => {
            assert_eq!(l.task.as_deref(), Some(comm), "{ctx}");
            assert_eq!((l.sector, l.blocks), (None, None), "{ctx}");
        }
        Action::Split => {
            let Pdu::Split { at } = rec.pdu else { panic!() };
            assert_eq!(l.split_at, Some(at), "{ctx}");
            assert_eq!(l.sector, Some(rec.sector), "{ctx}");
        }
        Action::Complete | Action::Requeue => {
            assert_eq!(l.error, Some(u32::from(rec.error as u16)), "{ctx}");
            assert_eq!(l.sector, Some(rec.sector), "{ctx}");
            assert_eq!(l.blocks, (blocks != 0).then_some(blocks), "{ctx}");
            assert_eq!(l.task, None, "{ctx}");
        }
        _ => {
            assert_eq!(l.task.as_deref(), Some(comm), "{ctx}");
            assert_eq!(l.sector, (blocks != 0).then_some(rec.sector), "{ctx}");
            assert_eq!(l.blocks, (blocks != 0).then_some(blocks), "{ctx}");
        }
    }
}

#[test]
fn render_then_parse_gives_back_the_fields() {
    let f = fixture();
    let names: HashMap<u32, String> = f.tasks.iter().cloned().collect();
    let mut n = 0;
    for ev in &f.events {
        match ev {
            TraceEvent::Block(rec) => {
                let comm = ftrace_comm(rec.pid, names.get(&rec.pid).map(String::as_str));
                let kernel = render_block(rec, &comm);
                let collapsed = collapse_whitespace(&kernel);
                for line in [&kernel, &collapsed] {
                    let l = parse_ftrace_line(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
                    assert_fields(&l, rec, &comm);
                    assert_eq!(l.to_collapsed(), collapsed);
                }
                n += 1;
            }
            TraceEvent::Message {
                time,
                dev,
                cpu,
                pid,
                text,
            } => {
                let comm = ftrace_comm(*pid, names.get(pid).map(String::as_str));
                let kernel = render_message(*time, *dev, *cpu, *pid, text, &comm);
                let l = parse_ftrace_line(&kernel).expect("message line");
                assert_eq!((l.action.as_str(), l.rwbs.as_str()), ("m", "N"));
                assert_eq!((l.pid, l.cpu, l.dev), (*pid, *cpu, *dev));
                // Kernel spacing keeps the text; the collapsed form squeezes it.
                assert_eq!(l.message.as_deref(), Some(text.as_str()));
                let c = parse_ftrace_line(&collapse_whitespace(&kernel)).expect("collapsed");
                assert_eq!(c.message, Some(collapse_whitespace(text)));
            }
        }
    }
    assert!(n > 40);
}

#[test]
fn parse_handles_awkward_task_names() {
    let l = parse_ftrace_line("kworker/0:1-123 [001] 5.000001: 8,0 D W 8 + 8 [kworker/0:1]")
        .expect("parse");
    assert_eq!((l.comm.as_str(), l.pid, l.cpu), ("kworker/0:1", 123, 1));
    let l =
        parse_ftrace_line("Web Content-77 [003] 1.5: 8,0 Q R 8 + 8 [Web Content]").expect("parse");
    assert_eq!(
        (l.comm.as_str(), l.time_us, l.task.as_deref()),
        ("Web Content", 1_500_000, Some("Web Content"))
    );
    let l = parse_ftrace_line("a-b-[x]-9 [000] 0.000001: 8,0 P N [a-b-[x]]").expect("parse");
    assert_eq!(
        (l.comm.as_str(), l.pid, l.task.as_deref()),
        ("a-b-[x]", 9, Some("a-b-[x]"))
    );
    assert!(parse_ftrace_line("dd-910 [002] 38.762523: 94,8 Z R 1 + 8 [dd]").is_err());
    assert!(parse_ftrace_line("not a trace line").is_err());
    assert!(parse_ftrace_line("dd-910 [002] 38.762523: 94,8 U N [dd]").is_err());
}

/// The event a seed line describes (inverse of the renderer).
fn record_of(l: &FtraceLine) -> TraceRecord {
    let action = l.action_kind().expect("block action");
    let mut flags = ReqFlags::NONE;
    for (c, f) in [
        ('W', ReqFlags::WRITE),
        ('S', ReqFlags::SYNC),
        ('M', ReqFlags::META),
        ('A', ReqFlags::AHEAD),
    ] {
        if l.rwbs.contains(c) {
            flags = flags | f;
        }
    }
    let pdu = if let Some((from_dev, from_sector)) = l.remap_from {
        Pdu::Remap {
            from_dev,
            from_sector,
        }
    } else if let Some(depth) = l.unplug_depth {
        Pdu::Unplug { depth }
    } else if let Some(at) = l.split_at {
        Pdu::Split { at }
    } else {
        Pdu::None
    };
    TraceRecord {
        time: Instant(l.time_ns()),
        dev: l.dev,
        cpu: l.cpu,
        pid: l.pid,
        action,
        sector: l.sector.unwrap_or(0),
        bytes: l.blocks.unwrap_or(0) << 9,
        flags,
        is_request: matches!(
            action,
            Action::Insert | Action::Issue | Action::Complete | Action::Requeue
        ),
        error: l.error.unwrap_or(0) as i32,
        pdu,
    }
}

#[test]
fn seed_002_trace_is_reproduced_exactly() {
    let lines = seed_lines();
    assert_eq!(lines.len(), 58);
    let parsed: Vec<FtraceLine> = lines
        .iter()
        .map(|l| parse_ftrace_line(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    for (line, p) in lines.iter().zip(&parsed) {
        assert_eq!(&p.to_collapsed(), line);
    }
    // Spot checks of the fields the comparison tests rely on.
    let a = &parsed[0];
    assert_eq!(
        (a.comm.as_str(), a.pid, a.cpu, a.time_us),
        ("dd", 910, 2, 38_762_523)
    );
    assert_eq!(
        (a.dev, a.action.as_str(), a.rwbs.as_str()),
        (DevT::new(94, 8), "A", "R")
    );
    assert_eq!((a.sector, a.blocks), (Some(131_264), Some(8)));
    assert_eq!(a.remap_from, Some((DevT::new(94, 9), 131_072)));
    let u = parsed.iter().find(|l| l.action == "U").expect("unplug");
    assert_eq!((u.unplug_depth, u.task.as_deref()), (Some(2), Some("dd")));
    let c = parsed.iter().find(|l| l.action == "C").expect("complete");
    assert_eq!(
        (c.comm.as_str(), c.pid, c.cpu, c.error),
        ("<idle>", 0, 12, Some(0))
    );

    // The two runs in the mail (dd-910, then dd-919), each rendered by the sink
    // from equivalent events, match the published text line for line.
    for run in [&lines[..44], &lines[44..]] {
        let mut sink = FtraceSink::new(FtraceStyle::Collapsed);
        sink.process(910, "dd");
        sink.process(919, "dd");
        for l in run {
            let rec = record_of(&parse_ftrace_line(l).expect("parse"));
            sink.event(&TraceEvent::Block(rec));
        }
        sink.finish(Instant(u64::MAX));
        let expected: String = run.iter().map(|l| format!("{l}\n")).collect();
        assert_eq!(sink.text(), expected);
    }
}

#[test]
fn kernel_spacing_of_the_seed_lines() {
    let rec = record_of(&parse_ftrace_line(&seed_lines()[0]).expect("parse"));
    assert_eq!(
        render_block(&rec, "dd"),
        "              dd-910   [002]    38.762523:  94,8    A   R 131264 + 8 <- (94,9) 131072"
    );
    let last = record_of(&parse_ftrace_line(&seed_lines()[43]).expect("parse"));
    assert_eq!(
        render_block(&last, &ftrace_comm(0, None)),
        "          <idle>-0     [015]    38.763797:  94,8    C   R 131368 + 32 [0]"
    );
}
