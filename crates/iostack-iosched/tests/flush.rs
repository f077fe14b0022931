//! Cache flush and FUA through the request queue, per kernel era, against a
//! device that logs the commands it gets: what the device sees (flushes, FUA
//! writes, their order), what blktrace records, and that flushes waiting
//! together share one command (2.6.39+), run one sequence at a time (2.6.37) or
//! drain and block the queue (barriers).

use iostack_block::{Bio, BlockOut, QueueConfig, QueueEvent, RequestQueue};
use iostack_core::{
    Action, BioOwner, DevT, EndIo, Profile, ReqFlags, TaskId, TraceEvent, TraceRecord, TraceSink,
    Tracer, Tunables,
};
use iostack_des::{EventQueue, Instant};
use iostack_device::{Device, DeviceCmd, HwLimits};
use std::sync::{Arc, Mutex};

const DISK: DevT = DevT::new(8, 0);
const MS: u64 = 1_000_000;

/// A device that serves one command at a time in arrival order: 1 ms per data
/// command, 5 ms per flush; it logs (start, command).
struct LogDev {
    write_cache: bool,
    fua: bool,
    busy_until: u64,
    queue: Vec<(u64, u64)>,
    log: Arc<Mutex<Vec<(u64, DeviceCmd)>>>,
}

impl Device for LogDev {
    fn write_cache(&self) -> bool {
        self.write_cache
    }
    fn fua(&self) -> bool {
        self.fua
    }
    fn queue_depth(&self) -> u32 {
        8
    }
    fn rotational(&self) -> bool {
        false
    }
    fn capacity_sectors(&self) -> u64 {
        1 << 30
    }
    fn hw_limits(&self) -> HwLimits {
        HwLimits {
            max_hw_sectors: 1024,
            max_segments: 128,
            logical_block_size: 512,
        }
    }
    fn submit(&mut self, now: Instant, cmd: DeviceCmd) {
        let start = self.busy_until.max(now.0);
        let cost = if cmd.flush { 5 * MS } else { MS };
        self.busy_until = start + cost;
        self.log.lock().unwrap().push((start, cmd));
        self.queue.push((self.busy_until, cmd.id));
    }
    fn poll(&mut self, _now: Instant, out: &mut Vec<(Instant, u64)>) {
        for (at, id) in self.queue.drain(..) {
            out.push((Instant(at), id));
        }
    }
    fn complete(&mut self, _now: Instant, _id: u64) {}
}

struct Rec(Arc<Mutex<Vec<TraceRecord>>>, Arc<Mutex<Vec<TraceEvent>>>);
impl TraceSink for Rec {
    fn event(&mut self, ev: &TraceEvent) {
        self.1.lock().unwrap().push(ev.clone());
        if let TraceEvent::Block(r) = ev {
            self.0.lock().unwrap().push(*r);
        }
    }
}

struct H {
    q: RequestQueue,
    tr: Tracer,
    out: BlockOut,
    evq: EventQueue<QueueEvent>,
    trace: Arc<Mutex<Vec<TraceRecord>>>,
    events: Arc<Mutex<Vec<TraceEvent>>>,
    cmds: Arc<Mutex<Vec<(u64, DeviceCmd)>>>,
    done: Vec<(u64, u64)>,
}

fn h(profile: Profile, sched: &str, write_cache: bool, fua: bool) -> H {
    let t = Tunables::new(
        profile,
        &[
            iostack_block::TUNABLES,
            iostack_iosched::deadline::TUNABLES,
            iostack_iosched::cfq::TUNABLES,
            iostack_iosched::anticipatory::TUNABLES,
        ],
    );
    let cmds = Arc::new(Mutex::new(Vec::new()));
    let dev = LogDev {
        write_cache,
        fua,
        busy_until: 0,
        queue: Vec::new(),
        log: cmds.clone(),
    };
    let cfg = QueueConfig::from_tunables(&t, DISK, vec![], &dev);
    let elv = iostack_iosched::by_name(sched, &t).unwrap();
    let mut q = RequestQueue::new(cfg, elv, Box::new(dev));
    q.set_checks(true);
    let trace = Arc::new(Mutex::new(Vec::new()));
    let events = Arc::new(Mutex::new(Vec::new()));
    let mut tr = Tracer::new();
    tr.attach(Box::new(Rec(trace.clone(), events.clone())));
    H {
        q,
        tr,
        out: BlockOut::default(),
        evq: EventQueue::new(),
        trace,
        events,
        cmds,
        done: Vec::new(),
    }
}

impl H {
    fn bio(&mut self, at: u64, owner: u64, sector: u64, sectors: u32, flags: ReqFlags) {
        self.run_until(at);
        let b = Bio {
            dev: DISK,
            sector,
            sectors,
            segments: sectors.div_ceil(8),
            flags,
            pid: 100 + owner as u32,
            cpu: 0,
            owner: BioOwner {
                task: TaskId(owner as u32),
                end_io: EndIo::DirectIo { slot: 0 },
            },
            ioprio: (2, 4),
            submitted_at: Instant(at),
            run: iostack_block::BioRun::ONE,
            next: None,
        };
        self.q
            .submit_bio(Instant(at), b, &mut self.tr, &mut self.out);
        self.sched(at);
    }
    fn sched(&mut self, now: u64) {
        for c in self.out.completed.drain(..) {
            self.done.push((c.owner.task.0 as u64, now));
        }
        for (at, e) in self.out.events.drain(..) {
            self.evq.schedule(at, e);
        }
    }
    fn run_until(&mut self, t: u64) {
        while self.evq.peek_time().is_some_and(|x| x.0 <= t) {
            let s = self.evq.pop().unwrap();
            self.q.handle(s.at, s.event, &mut self.tr, &mut self.out);
            self.sched(s.at.0);
        }
    }
    fn run(&mut self) {
        self.run_until(u64::MAX);
        self.q.check_invariants();
        assert!(self.q.idle(), "queue not idle at the end");
    }
    /// Device commands as `F` (flush), `W<sector>` or `W<sector>!` (FUA).
    fn cmds(&self) -> Vec<String> {
        self.cmds
            .lock()
            .unwrap()
            .iter()
            .map(|(_, c)| {
                if c.flush {
                    "F".to_string()
                } else {
                    format!(
                        "{}{}{}",
                        if c.write { "W" } else { "R" },
                        c.sector,
                        if c.fua { "!" } else { "" }
                    )
                }
            })
            .collect()
    }
    /// Trace as `action:rwbs` with the bytes for request events.
    fn trace(&self) -> Vec<String> {
        self.trace
            .lock()
            .unwrap()
            .iter()
            .filter(|r| !matches!(r.action, Action::Plug | Action::UnplugIo))
            .map(|r| {
                let w = iostack_report::blktrace::action_word(r);
                let rwbs = iostack_report::blktrace::fill_rwbs(w, r.bytes);
                format!(
                    "{}:{}:{}+{}",
                    r.action.letter(),
                    rwbs,
                    r.sector,
                    r.bytes / 512
                )
            })
            .collect()
    }
    fn done_at(&self, owner: u64) -> u64 {
        self.done
            .iter()
            .find(|d| d.0 == owner)
            .expect("bio completed")
            .1
    }
}

const W: ReqFlags = ReqFlags::WRITE;
fn flush() -> ReqFlags {
    ReqFlags::WRITE_FLUSH
}
fn flush_fua() -> ReqFlags {
    ReqFlags::WRITE_FLUSH | ReqFlags::FUA
}

#[test]
fn empty_flush_on_3_10_goes_through_one_flush_request() {
    let mut h = h(Profile::V3_10, "deadline", true, false);
    h.bio(0, 1, 0, 0, flush());
    h.run();
    assert_eq!(h.cmds(), ["F"]);
    // blk_insert_flush: I with the flags as submitted; the shared flush_rq is
    // issued and completes; the original completes with REQ_FLUSH cleared.
    assert_eq!(
        h.trace(),
        [
            "Q:FWS:0+0",
            "G:FWS:0+0",
            "I:FWS:0+0",
            "D:FWS:0+0",
            "C:FWS:0+0",
            "C:WS:0+0"
        ]
    );
    assert_eq!(h.done_at(1), 5 * MS);
}

#[test]
fn flush_fua_write_without_device_fua_is_preflush_data_postflush() {
    let mut h = h(Profile::V3_10, "cfq", true, false);
    h.bio(0, 1, 2048, 8, flush_fua());
    h.run();
    assert_eq!(h.cmds(), ["F", "W2048", "F"]);
    // Data completion traced with its bytes, the end of the sequence with none
    // at the position past the data (blk_update_request advanced it).
    let t = h.trace();
    assert_eq!(&t[..3], ["Q:FWFS:2048+8", "G:FWFS:2048+8", "I:FWFS:2048+8"]);
    assert!(t.contains(&"D:WS:2048+8".to_string()), "{t:?}");
    assert!(t.contains(&"C:WS:2048+8".to_string()), "{t:?}");
    assert_eq!(t.last().unwrap(), "C:WS:2056+0");
    assert_eq!(h.done_at(1), 11 * MS);
}

#[test]
fn fua_device_takes_fua_writes_directly() {
    let mut h = h(Profile::V3_10, "noop", true, true);
    h.bio(0, 1, 64, 8, W | ReqFlags::SYNC | ReqFlags::FUA);
    h.run();
    assert_eq!(h.cmds(), ["W64!"]);
    assert_eq!(h.done_at(1), MS);
}

#[test]
fn no_write_cache_means_no_flush_reaches_the_device() {
    let mut h = h(Profile::V3_10, "noop", false, false);
    h.bio(0, 1, 0, 0, flush());
    h.bio(0, 2, 64, 8, flush_fua());
    h.run();
    assert_eq!(h.cmds(), ["W64"]);
    assert_eq!(h.done_at(1), 0);
}

#[test]
fn flushes_waiting_together_share_one_command() {
    // The first flush goes alone; the two that arrive while it runs wait in
    // the pending queue and are served by the next single flush (C1).
    let mut h = h(Profile::V3_10, "deadline", true, false);
    h.bio(0, 1, 0, 0, flush());
    h.bio(MS, 2, 0, 0, flush());
    h.bio(2 * MS, 3, 0, 0, flush());
    h.run();
    assert_eq!(h.cmds(), ["F", "F"]);
    assert_eq!(h.done_at(1), 5 * MS);
    assert_eq!(h.done_at(2), 10 * MS);
    assert_eq!(h.done_at(3), 10 * MS);
}

#[test]
fn flush_waits_for_sequenced_data_in_flight() {
    // C2: a FUA write's data is in flight; a flush that arrives meanwhile is
    // held so that one post-flush serves both.
    let mut h = h(Profile::V3_10, "noop", true, false);
    h.bio(0, 1, 100, 8, W | ReqFlags::SYNC | ReqFlags::FUA);
    h.bio(0, 2, 0, 0, flush());
    h.run();
    assert_eq!(h.cmds(), ["W100", "F"]);
    assert_eq!(h.done_at(1), h.done_at(2));
}

#[test]
fn barrier_drains_then_runs_preflush_data_postflush_and_blocks_the_queue() {
    let mut h = h(Profile::V2_6_33, "deadline", true, false);
    for i in 0..3 {
        h.bio(0, 10 + i, 1000 + 1000 * i, 8, W);
    }
    h.bio(0, 1, 5000, 8, W | ReqFlags::SYNC | ReqFlags::FLUSH);
    h.bio(0, 2, 9000, 8, W);
    h.run();
    // The writes before the barrier go first (drained), the barrier's data
    // between two flushes, the later write after the sequence.
    assert_eq!(
        h.cmds(),
        ["W1000", "W2000", "W3000", "F", "W5000", "F", "W9000"]
    );
    let pre = h.cmds.lock().unwrap()[3].0;
    assert!(pre >= 3 * MS, "the pre-flush waited for the drain");
    assert!(h.done_at(2) > h.done_at(1));
    // Request events carry only the direction in 2.6.33; the barrier bio is
    // traced with the flush (barrier) bit, which blkparse prints as F.
    let t = h.trace();
    assert!(t.contains(&"Q:FWS:5000+8".to_string()), "{t:?}");
    assert!(t.contains(&"I:W:5000+8".to_string()), "{t:?}");
    assert!(t.contains(&"D:N:0+0".to_string()), "{t:?}");
    assert!(t.contains(&"C:W:5000+8".to_string()), "{t:?}");
}

#[test]
fn barrier_on_fua_device_has_no_postflush() {
    let mut h = h(Profile::V2_6_32, "cfq", true, true);
    h.bio(0, 1, 5000, 8, W | ReqFlags::SYNC | ReqFlags::FLUSH);
    h.run();
    assert_eq!(h.cmds(), ["F", "W5000!"]);
}

#[test]
fn serial_flushes_run_one_sequence_at_a_time_on_2_6_37() {
    let mut h = h(Profile::V2_6_37, "cfq", true, false);
    h.bio(0, 1, 100, 8, flush_fua());
    h.bio(0, 2, 200, 8, flush_fua());
    h.bio(0, 3, 300, 8, W);
    h.run();
    // The plain write does not wait (no draining); each FLUSH|FUA write is a
    // whole pre-flush, data, post-flush sequence after the other.
    let c = h.cmds();
    let seq: Vec<&str> = c
        .iter()
        .map(|s| s.as_str())
        .filter(|s| *s != "W300")
        .collect();
    assert_eq!(seq, ["F", "W100", "F", "F", "W200", "F"]);
    assert!(h.done_at(2) > h.done_at(1));
}

/// The flush sequences' traces through the real blkparse (blktrace 1.2.0): the
/// binary action words we write make it print the same text as our blkparse
/// sink, with the flags as blkparse spells them (`FWFS` for a FLUSH|FUA sync
/// write, `FWS` for the flush request, `WS` for the data and the end of the
/// sequence, no size for requests of no data; `W` only on 2.6.33 request events).
#[test]
fn real_blkparse_prints_the_flush_flags_as_we_do() {
    use iostack_report::blkparse::BlkparseSink;
    use iostack_report::blktrace::BlktraceWriter;
    let blkparse = std::path::Path::new("/usr/bin/blkparse");
    if !blkparse.exists() {
        assert_eq!(
            std::env::var("IOSTACK_SKIP_REAL_TOOLS").as_deref(),
            Ok("1"),
            "blkparse is not installed (install blktrace, or set IOSTACK_SKIP_REAL_TOOLS=1)"
        );
        return;
    }
    let mut a = h(Profile::V3_10, "cfq", true, false);
    a.bio(0, 1, 2048, 8, flush_fua());
    a.bio(MS, 2, 0, 0, flush());
    a.bio(2 * MS, 3, 0, 0, flush());
    a.bio(3 * MS, 4, 4096, 8, W | ReqFlags::SYNC | ReqFlags::META);
    a.bio(3 * MS, 5, 8192, 8, ReqFlags::AHEAD);
    a.run();
    let mut b = h(Profile::V2_6_33, "deadline", true, false);
    b.bio(0, 10, 1000, 8, W | ReqFlags::SYNC);
    b.bio(0, 1, 5000, 8, W | ReqFlags::SYNC | ReqFlags::FLUSH);
    b.run();
    let dir = std::env::temp_dir().join(format!("iostack-flush-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, hh) in [("v310", &a), ("v2633", &b)] {
        let events = hh.events.lock().unwrap();
        let feed = |sink: &mut dyn TraceSink| {
            for pid in [0u32, 101, 102, 103, 104, 105, 110] {
                sink.process(pid, &format!("task{pid}"));
            }
            for ev in events.iter() {
                sink.event(ev);
            }
            sink.finish(Instant(100 * MS));
        };
        let mut w = BlktraceWriter::new();
        feed(&mut w);
        w.write_files(&dir.join(name)).unwrap();
        let mut sink = BlkparseSink::new(name);
        feed(&mut sink);
        let out = std::process::Command::new(blkparse)
            .args(["-i", name])
            .current_dir(&dir)
            .env("LC_ALL", "C")
            .env("TZ", "UTC")
            .output()
            .unwrap();
        let real = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success() && out.stderr.is_empty());
        assert_eq!(
            sink.text(),
            real,
            "{name}: our blkparse text differs from blkparse's"
        );
        let has = |s: &str| real.lines().any(|l| l.contains(s));
        if name == "v310" {
            assert!(has(" Q FWFS 2048 + 8 "), "{real}");
            // Requests of no data print no size: the flush request, and the
            // end of a sequence at the position past its data.
            assert!(has(" D FWS [task101]"), "{real}");
            assert!(has(" C FWS 0 [0]"), "{real}");
            assert!(has(" C  WS 2056 [0]"), "{real}");
            assert!(has(" Q WSM 4096 + 8 "), "{real}");
            assert!(has(" Q  RA 8192 + 8 "), "{real}");
        } else {
            assert!(has(" Q FWS 5000 + 8 "), "{real}");
            assert!(has(" D   W 5000 + 8 "), "{real}");
            assert!(has(" D   W 1000 + 8 "), "{real}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cfq_barrier_drain_takes_emptied_queues_off_the_tree() {
    // A barrier drains the elevator (cfq_forced_dispatch): the async queue,
    // not active, is emptied by it, and __cfq_forced_dispatch_cfqq's
    // __cfq_slice_expired takes it off the service tree at once. Left there
    // (2.6.33+ keeps an emptied queue only until it expires), it could be
    // chosen again with nothing to dispatch.
    let mut h = h(Profile::V2_6_33, "cfq", true, false);
    for i in 0..3 {
        h.bio(0, 1, 1000 + 8 * i, 8, W | ReqFlags::SYNC);
    }
    h.bio(0, 2, 50_000, 8, W);
    h.bio(0, 3, 5000, 8, W | ReqFlags::SYNC | ReqFlags::FLUSH);
    h.run();
    let evs = h.events.lock().unwrap().clone();
    let mut seen = Vec::new();
    for ev in &evs {
        match ev {
            TraceEvent::Message { text, .. } => seen.push(text.clone()),
            TraceEvent::Block(r) if r.action == Action::Issue && r.sector == 5000 => break,
            _ => {}
        }
    }
    assert!(
        seen.iter()
            .any(|m| m.contains("A") && m.contains("del_from_rr")),
        "{seen:?}"
    );
}
