//! Shared fixtures for the blktrace/blkparse/ftrace tests: a fixed synthetic event
//! list, a larger generated workload, and helpers to run sinks and the real tools.
//! Included by the other `blktrace_*` tests with `#[path]`.
#![allow(dead_code)]

use iostack_core::{Action, DevT, Pdu, ReqFlags, TraceEvent, TraceRecord, TraceSink};
use iostack_des::Instant;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const DM: DevT = DevT::new(94, 8);
pub const DM_SRC: DevT = DevT::new(94, 9);
pub const SDB: DevT = DevT::new(8, 16);

/// A fixed trace exercising every action, payload, RWBS letter, naming case and
/// cross-CPU tie the writers must handle.
pub struct Fixture {
    pub tasks: Vec<(u32, String)>,
    pub events: Vec<TraceEvent>,
    pub end: Instant,
    /// Tasks announced only just before event number `.0`.
    pub late: Vec<(usize, u32, String)>,
}

struct B {
    events: Vec<TraceEvent>,
}

impl B {
    #[allow(clippy::too_many_arguments)]
    fn ev(
        &mut self,
        t: u64,
        dev: DevT,
        cpu: u32,
        pid: u32,
        action: Action,
        sector: u64,
        bytes: u32,
        flags: ReqFlags,
        pdu: Pdu,
        error: i32,
    ) {
        let is_request = matches!(
            action,
            Action::Insert | Action::Issue | Action::Complete | Action::Requeue
        );
        self.events.push(TraceEvent::Block(TraceRecord {
            time: Instant(t),
            dev,
            cpu,
            pid,
            action,
            sector,
            bytes,
            flags,
            is_request,
            error,
            pdu,
        }));
    }
    #[allow(clippy::too_many_arguments)]
    fn simple(
        &mut self,
        t: u64,
        cpu: u32,
        pid: u32,
        a: Action,
        sector: u64,
        bytes: u32,
        f: ReqFlags,
    ) {
        self.ev(t, DM, cpu, pid, a, sector, bytes, f, Pdu::None, 0);
    }
    fn msg(&mut self, t: u64, cpu: u32, pid: u32, text: &str) {
        self.events.push(TraceEvent::Message {
            time: Instant(t),
            dev: DM,
            cpu,
            pid,
            text: text.to_string(),
        });
    }
}

pub fn fixture() -> Fixture {
    use Action::*;
    let r = ReqFlags::READ;
    let w = ReqFlags::WRITE;
    let ws = ReqFlags::WRITE | ReqFlags::SYNC;
    let base = 38_762_523_456u64;
    let mut b = B { events: Vec::new() };

    // The seed-002 shape: dd reads through a partition remap, bios merge under a
    // plug, unplug releases 2 requests, completions come from interrupt context.
    let mut t = base;
    for i in 0..3u64 {
        let sec = 131_264 + 8 * i;
        b.ev(
            t,
            DM,
            2,
            910,
            Remap,
            sec,
            4096,
            r,
            Pdu::Remap {
                from_dev: DM_SRC,
                from_sector: sec - 192,
            },
            0,
        );
        t += 499; // sub-microsecond steps: ftrace rounds, blkparse keeps ns
        b.simple(t, 2, 910, Queue, sec, 4096, r);
        t += 1000;
        if i == 0 {
            b.simple(t, 2, 910, GetRq, sec, 4096, r);
            t += 1000;
            b.ev(t, DM, 2, 910, Plug, 0, 0, r, Pdu::None, 0);
            t += 1000;
            b.simple(t, 2, 910, Insert, sec, 4096, r);
        } else {
            b.simple(t, 2, 910, BackMerge, sec, 4096, r);
        }
        t += 1500;
    }
    b.simple(t, 2, 910, Queue, 131_100, 4096, r);
    t += 700;
    b.simple(t, 2, 910, FrontMerge, 131_100, 4096, r);
    t += 700;
    b.simple(t, 2, 910, Queue, 131_368, 16384, r);
    b.simple(t, 2, 910, GetRq, 131_368, 16384, r);
    b.simple(t, 2, 910, Insert, 131_368, 16384, r);
    t += 2000;
    b.ev(
        t,
        DM,
        2,
        910,
        UnplugIo,
        0,
        0,
        r,
        Pdu::Unplug { depth: 2 },
        0,
    );
    t += 2000;
    b.simple(t, 2, 910, Issue, 131_100, 4096 * 4, r);
    b.simple(t, 2, 910, Issue, 131_368, 16384, r);
    let d_time = t;

    // fio on CPU 0: sync writes, FUA and preflush, a read-ahead and a meta read;
    // a split, a bounce, a sleep for a request and a requeue.
    let mut t0 = base + 10_000;
    b.simple(t0, 0, 4242, Queue, 10_240, 8192, ws);
    b.simple(t0, 0, 4242, SleepRq, 10_240, 8192, ws);
    t0 += 1234;
    b.simple(t0, 0, 4242, GetRq, 10_240, 8192, ws);
    b.simple(t0, 0, 4242, Insert, 10_240, 8192, ws);
    b.simple(t0, 0, 4242, Issue, 10_240, 8192, ws);
    t0 += 3;
    b.simple(t0, 0, 4242, Requeue, 10_240, 8192, ws);
    b.simple(t0, 0, 4242, Issue, 10_240, 8192, ws);
    t0 += 100;
    let fua = ReqFlags::WRITE | ReqFlags::SYNC | ReqFlags::FUA | ReqFlags::FLUSH;
    b.simple(t0, 0, 4242, Queue, 20_480, 4096, fua);
    b.simple(t0, 0, 4242, GetRq, 20_480, 4096, fua);
    b.simple(t0, 0, 4242, Insert, 20_480, 4096, fua);
    // An empty preflush request: RWBS "FWS", no "+ N" (blkparse prints "[comm]" only).
    let flush = ReqFlags::WRITE | ReqFlags::SYNC | ReqFlags::FLUSH;
    b.simple(t0, 0, 4242, Issue, 0, 0, flush);
    t0 += 77;
    b.simple(t0, 0, 4242, Queue, 1_000, 4096, ReqFlags::AHEAD);
    b.simple(t0, 0, 4242, Queue, 2_000, 4096, ReqFlags::META);
    b.ev(
        t0,
        DM,
        0,
        4242,
        Split,
        3_000,
        131072,
        w,
        Pdu::Split { at: 3_128 },
        0,
    );
    b.simple(t0, 0, 4242, Bounce, 3_000, 65536, w);
    let disc = ReqFlags::WRITE | ReqFlags::DISCARD | ReqFlags::SYNC;
    b.simple(t0, 0, 4242, Queue, 1u64 << 33, 1 << 20, disc);
    b.msg(t0, 0, 4242, "cfq4242 insert_request");

    // A long-named task and a task never announced, on CPU 3.
    let t3 = base + 10_000; // same instant as fio's first Q on CPU 0: a cross-CPU tie
    b.simple(t3, 3, 555, Queue, 50_000, 512, w);
    b.simple(t3, 3, 1234, Queue, 60_000, 1024, w);
    b.simple(t3 + 1, 3, 555, GetRq, 50_000, 512, w);
    b.ev(
        t3 + 2,
        DM,
        3,
        0,
        UnplugTimer,
        0,
        0,
        r,
        Pdu::Unplug { depth: 1 },
        0,
    );
    b.simple(t3 + 3, 3, 0, Issue, 50_000, 512, w);
    // fio migrated to CPU 3.
    b.simple(
        t3 + 4,
        3,
        4242,
        Queue,
        70_000,
        4096,
        ReqFlags::WRITE | ReqFlags::META,
    );

    // Completions from interrupt context (pid 0) on CPUs 12 and 15, as in the
    // seed, leaving CPUs 1 and 4..11, 13, 14 without events (empty files). One
    // completes with -EIO, one is the empty flush (no blocks: "sector [error]"),
    // one is on another device.
    let mut t1 = d_time + 737_000;
    b.ev(t1, DM, 12, 0, Complete, 131_100, 4096 * 4, r, Pdu::None, 0);
    t1 += 434_000;
    b.ev(t1, DM, 15, 0, Complete, 131_368, 16384, r, Pdu::None, -5);
    b.ev(t1, DM, 12, 0, Complete, 10_240, 8192, ws, Pdu::None, 0);
    b.ev(t1, DM, 15, 0, Complete, 0, 0, flush, Pdu::None, 0);
    b.ev(t1 + 10, SDB, 15, 0, Complete, 50_000, 512, w, Pdu::None, 0);
    b.msg(t1 + 20, 12, 0, "dispatch: \"quoted\"   spaced");

    // Time never decreases in the stream: sort stably by time.
    b.events.sort_by_key(|e| match e {
        TraceEvent::Block(r) => r.time,
        TraceEvent::Message { time, .. } => *time,
    });
    let end = Instant(t1 + 1_000_000);
    Fixture {
        tasks: vec![
            (910, "dd".to_string()),
            (4242, "fio".to_string()),
            (555, "a_very_long_task_name".to_string()),
        ],
        events: b.events,
        end,
        late: Vec::new(),
    }
}

/// A generated multi-CPU workload: `n` I/Os (Q, G, I, D, C; some merged), spread
/// over 4 CPUs and 6 tasks, with many equal timestamps across CPUs and well over
/// 512 records per CPU, so blkparse's batch refills and tie rules are exercised.
pub fn workload(n: usize) -> Fixture {
    use Action::*;
    let mut b = B { events: Vec::new() };
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let pids = [100u32, 101, 102, 103, 104, 105];
    let mut t: u64 = 5_000_000_000;
    let mut pending: Vec<(u64, u32, u64, u32, ReqFlags)> = Vec::new();
    let mut next_sector = 1u64 << 20;
    for i in 0..n {
        // Coarse 10 µs ticks make equal times common.
        t += 10_000 * (1 + rnd(3));
        let cpu = rnd(4) as u32;
        let pid = pids[rnd(pids.len() as u64) as usize];
        let flags = match rnd(4) {
            0 => ReqFlags::READ,
            1 => ReqFlags::WRITE,
            2 => ReqFlags::WRITE | ReqFlags::SYNC,
            _ => ReqFlags::AHEAD,
        };
        let start = if rnd(3) == 0 {
            next_sector
        } else {
            rnd(1 << 30) & !7
        };
        // One request of 1 to 3 contiguous bios; the later ones back-merge.
        let nbios = 1 + rnd(3);
        let mut sector = start;
        let mut total = 0u32;
        for k in 0..nbios {
            let bytes = 4096 * (1 + rnd(8) as u32);
            b.ev(t, DM, cpu, pid, Queue, sector, bytes, flags, Pdu::None, 0);
            if k == 0 {
                b.ev(t, DM, cpu, pid, GetRq, sector, bytes, flags, Pdu::None, 0);
            } else {
                b.ev(
                    t,
                    DM,
                    cpu,
                    pid,
                    BackMerge,
                    sector,
                    bytes,
                    flags,
                    Pdu::None,
                    0,
                );
            }
            sector += u64::from(bytes >> 9);
            total += bytes;
        }
        next_sector = sector;
        b.ev(
            t + 1_000,
            DM,
            cpu,
            pid,
            Insert,
            start,
            total,
            flags,
            Pdu::None,
            0,
        );
        b.ev(
            t + 2_000,
            DM,
            cpu,
            pid,
            Issue,
            start,
            total,
            flags,
            Pdu::None,
            0,
        );
        pending.push((
            t + 102_000 + 10_000 * rnd(20),
            rnd(4) as u32,
            start,
            total,
            flags,
        ));
        if i % 50 == 49 {
            b.msg(t, cpu, pid, &format!("tick {i}"));
        }
    }
    for (tc, cpu, sector, bytes, flags) in pending {
        b.ev(tc, DM, cpu, 0, Complete, sector, bytes, flags, Pdu::None, 0);
    }
    b.events.sort_by_key(|e| match e {
        TraceEvent::Block(r) => r.time,
        TraceEvent::Message { time, .. } => *time,
    });
    let end = match b.events.last() {
        Some(TraceEvent::Block(r)) => r.time,
        Some(TraceEvent::Message { time, .. }) => *time,
        None => Instant::ZERO,
    };
    Fixture {
        tasks: pids
            .iter()
            .map(|&p| (p, format!("worker-{}", p - 100)))
            .collect(),
        events: b.events,
        end,
        late: Vec::new(),
    }
}

/// Random events of every kind, with random flags, sizes (not always multiples
/// of 512), errors, payloads, CPUs (some never used), devices and pids (some never
/// announced, some announced late), and many equal timestamps. Not a consistent
/// I/O history: it stresses the formats and the accounting, not btt.
pub fn chaos(seed: u64, n: usize) -> Fixture {
    use Action::*;
    let mut b = B { events: Vec::new() };
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut rnd = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let actions = [
        Queue,
        BackMerge,
        FrontMerge,
        GetRq,
        SleepRq,
        Requeue,
        Issue,
        Complete,
        Plug,
        UnplugIo,
        UnplugTimer,
        Insert,
        Split,
        Bounce,
        Remap,
    ];
    let devs = [DM, SDB, DevT::new(253, 1_048_575)];
    let cpus = [0u32, 1, 3, 4, 7];
    let flag_bits = [
        ReqFlags::WRITE,
        ReqFlags::SYNC,
        ReqFlags::META,
        ReqFlags::AHEAD,
        ReqFlags::FUA,
        ReqFlags::FLUSH,
        ReqFlags::DISCARD,
        ReqFlags::NOIDLE,
    ];
    let mut t = 1_000_000_000u64 * (1 + rnd(100));
    for _ in 0..n {
        t += match rnd(4) {
            0 | 1 => 0,
            2 => rnd(1000),
            _ => rnd(50_000_000),
        };
        let cpu = cpus[rnd(cpus.len() as u64) as usize];
        let pid = [0u32, 1, 2, 3, 4, 5, 6, 7, 40_000, 4_194_303][rnd(10) as usize];
        let dev = devs[rnd(3) as usize];
        if rnd(20) == 0 {
            let text = match rnd(3) {
                0 => "short".to_string(),
                1 => "x".repeat(200),
                _ => format!("cfq{pid} slice expired t={t}"),
            };
            b.events.push(TraceEvent::Message {
                time: Instant(t),
                dev,
                cpu,
                pid,
                text,
            });
            continue;
        }
        let action = actions[rnd(actions.len() as u64) as usize];
        let mut flags = ReqFlags::NONE;
        for f in flag_bits {
            if rnd(4) == 0 {
                flags = flags | f;
            }
        }
        let bytes = match rnd(5) {
            0 => 0,
            1 => rnd(5000) as u32,
            2 => 512 * rnd(2048) as u32,
            3 => 4096 * (1 + rnd(256) as u32),
            _ => 4096,
        };
        let sector = if rnd(10) == 0 {
            rnd(u64::MAX)
        } else {
            rnd(1 << 32)
        };
        let error = if rnd(8) == 0 { -(rnd(200) as i32) } else { 0 };
        let pdu = match action {
            Remap => Pdu::Remap {
                from_dev: devs[rnd(3) as usize],
                from_sector: rnd(1 << 40),
            },
            UnplugIo | UnplugTimer => Pdu::Unplug {
                depth: rnd(1 << 33),
            },
            Split => Pdu::Split { at: rnd(1 << 40) },
            _ => Pdu::None,
        };
        b.ev(t, dev, cpu, pid, action, sector, bytes, flags, pdu, error);
    }
    let end = Instant(t);
    Fixture {
        // 5 and 6 are announced late, 7 and the big pids never.
        tasks: vec![
            (1, "init".to_string()),
            (2, "kthreadd".to_string()),
            (3, "jbd2/sda1-8".to_string()),
            (4, "Web Content".to_string()),
        ],
        late: vec![
            (n / 2, 5, "late-five".to_string()),
            (n - n / 8, 6, "exactly15chars!".to_string()),
        ],
        events: b.events,
        end,
    }
}

/// Feed a fixture to a sink, as the tracer would.
pub fn run<S: TraceSink>(f: &Fixture, sink: &mut S) {
    for (pid, comm) in &f.tasks {
        sink.process(*pid, comm);
    }
    for (i, ev) in f.events.iter().enumerate() {
        for (_, pid, comm) in f.late.iter().filter(|l| l.0 == i) {
            sink.process(*pid, comm);
        }
        sink.event(ev);
    }
    sink.finish(f.end);
}

/// A fresh scratch directory under the system temp dir.
pub fn scratch_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iostack-bt-{}-{}", std::process::id(), tag));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create scratch dir");
    d
}

/// Path of a real tool, or `None` when IOSTACK_SKIP_REAL_TOOLS=1 and it is missing.
/// Panics if the tool is missing otherwise.
pub fn tool(name: &str) -> Option<PathBuf> {
    let p = Path::new("/usr/bin").join(name);
    if p.exists() {
        return Some(p);
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let c = dir.join(name);
            if c.exists() {
                return Some(c);
            }
        }
    }
    if std::env::var("IOSTACK_SKIP_REAL_TOOLS").as_deref() == Ok("1") {
        eprintln!("{name} not installed; skipped (IOSTACK_SKIP_REAL_TOOLS=1)");
        return None;
    }
    panic!("{name} is not installed (install blktrace, or set IOSTACK_SKIP_REAL_TOOLS=1)");
}

/// Run a tool in `dir` (with the C locale) and return its output.
pub fn run_tool(tool: &Path, dir: &Path, args: &[&str]) -> Output {
    Command::new(tool)
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", tool.display()))
}

/// Print the first differing line of two texts (for readable failures).
pub fn first_difference(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n  ours: {x:?}\n  real: {y:?}", i + 1);
        }
    }
    format!(
        "line counts differ: ours {} real {}",
        a.lines().count(),
        b.lines().count()
    )
}
