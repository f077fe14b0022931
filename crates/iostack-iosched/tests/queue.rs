//! The generic block layer with a real policy, driven directly: plugging and its
//! timer, the unplug threshold, sleeping allocators and batching, and deadline's
//! batch/starvation rules, each checked against the kernel's rules event by event.

use iostack_block::{Bio, BlockOut, Ctx, QueueEvent, RequestQueue, Submit};
use iostack_core::{
    Action, BioOwner, EndIo, Profile, ReqFlags, TaskId, TraceEvent, TraceRecord, TraceSink, Tracer,
    Tunables,
};
use iostack_des::{EventQueue, Instant};
use std::sync::{Arc, Mutex};

mod common;
use common::{fixed_queue, DISK};

struct Rec(Arc<Mutex<Vec<TraceRecord>>>);
impl TraceSink for Rec {
    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Block(r) = ev {
            self.0.lock().unwrap().push(*r);
        }
    }
}

struct Harness {
    q: RequestQueue,
    tr: Tracer,
    out: BlockOut,
    evq: EventQueue<QueueEvent>,
    log: Arc<Mutex<Vec<TraceRecord>>>,
}

fn harness(sched: &str, depth: u32, sets: &[&str]) -> Harness {
    let mut t = Tunables::new(
        Profile::V2_6_33,
        &[iostack_block::TUNABLES, iostack_iosched::deadline::TUNABLES],
    );
    for s in sets {
        t.set_str(s).unwrap();
    }
    let q = fixed_queue(sched, &t, 1, depth, 1 << 30, true);
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut tr = Tracer::new();
    tr.attach(Box::new(Rec(log.clone())));
    Harness {
        q,
        tr,
        out: BlockOut::default(),
        evq: EventQueue::new(),
        log,
    }
}

impl Harness {
    fn bio(&mut self, at: u64, sector: u64, sectors: u32, flags: ReqFlags) -> Submit {
        self.run_until(Instant(at));
        let b = Bio {
            dev: DISK,
            sector,
            sectors,
            segments: sectors.div_ceil(8),
            flags,
            pid: 100,
            cpu: 0,
            // The sector names the submitter, so a test can tell who was woken.
            owner: BioOwner {
                task: TaskId(sector as u32),
                end_io: EndIo::DirectIo { slot: 0 },
            },
            ioprio: (2, 4),
            submitted_at: Instant(at),
            run: iostack_block::BioRun::ONE,
            next: None,
        };
        let r = self
            .q
            .submit_bio(Instant(at), b, &mut self.tr, &mut self.out);
        self.sched();
        r
    }
    fn unplug(&mut self, at: u64) {
        self.run_until(Instant(at));
        self.q.unplug(
            Instant(at),
            Ctx { pid: 100, cpu: 0 },
            &mut self.tr,
            &mut self.out,
        );
        self.sched();
    }
    fn sched(&mut self) {
        for (at, e) in self.out.events.drain(..) {
            self.evq.schedule(at, e);
        }
    }
    fn run_until(&mut self, t: Instant) {
        while self.evq.peek_time().is_some_and(|x| x <= t) {
            let s = self.evq.pop().unwrap();
            self.q.handle(s.at, s.event, &mut self.tr, &mut self.out);
            self.sched();
        }
    }
    fn run(&mut self) {
        self.run_until(Instant(u64::MAX));
        self.q.check_invariants();
        assert!(self.q.idle());
    }
    fn actions(&self) -> String {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.action.letter())
            .collect::<Vec<_>>()
            .join(" ")
    }
    fn issued(&self) -> Vec<u64> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.action == Action::Issue)
            .map(|r| r.sector)
            .collect()
    }
}

#[test]
fn plug_timer_fires_after_unplug_delay_in_jiffies() {
    // HZ=250: unplug_delay = max(3*250/1000, 1) = 1 jiffy = 4 ms, armed from the
    // current jiffy (mod_timer(jiffies + delay)).
    let mut h = harness("noop", 4, &["kernel/hz=250"]);
    h.bio(5_000_000, 1000, 8, ReqFlags::READ);
    h.run();
    assert_eq!(h.actions(), "Q G P I UT U D C");
    let log = h.log.lock().unwrap();
    let ut = log
        .iter()
        .find(|r| r.action == Action::UnplugTimer)
        .unwrap();
    // jiffies(5 ms) = 1 at HZ=250; expiry at jiffy 2 = 8 ms.
    assert_eq!(ut.time, Instant(8_000_000));
    assert_eq!(ut.pid, 0, "UT comes from the timer softirq");
    let u = log.iter().find(|r| r.action == Action::UnplugIo).unwrap();
    assert_eq!(u.pdu, iostack_core::Pdu::Unplug { depth: 1 });
}

#[test]
fn unplug_threshold_releases_without_a_u_event() {
    let mut h = harness("noop", 8, &[]);
    for i in 0..4 {
        h.bio(1000 * i, 10_000 * (i + 1), 8, ReqFlags::READ);
    }
    h.run();
    let a = h.actions();
    assert!(!a.contains('U'), "threshold unplugs trace nothing: {a}");
    assert_eq!(a.matches('D').count(), 4);
    // All four dispatched at the fourth insert, sorted by elv_dispatch_sort.
    let log = h.log.lock().unwrap();
    assert!(log
        .iter()
        .filter(|r| r.action == Action::Issue)
        .all(|r| r.time == Instant(3000)));
    drop(log);
    assert_eq!(h.issued(), vec![10_000, 20_000, 30_000, 40_000]);
}

#[test]
fn merges_back_front_and_request_to_request() {
    let mut h = harness("deadline", 1, &["queue/unplug_thresh=100"]);
    h.bio(0, 1000, 8, ReqFlags::READ); // G
    h.bio(1, 1008, 8, ReqFlags::READ); // back merge (last_merge)
    h.bio(2, 1024, 8, ReqFlags::READ); // new request (gap)
    h.bio(3, 992, 8, ReqFlags::READ); // front merge into the first (deadline rb lookup)
    h.bio(4, 1016, 8, ReqFlags::READ); // back merge, then attempt_back_merge joins 1024
    h.unplug(5);
    h.run();
    assert_eq!(h.actions(), "Q G P I Q M Q G I Q F Q M U D C");
    let log = h.log.lock().unwrap();
    let d = log.iter().find(|r| r.action == Action::Issue).unwrap();
    assert_eq!((d.sector, d.bytes), (992, 40 * 512));
}

#[test]
fn allocators_sleep_at_the_hard_cap_and_wake_below_nr_requests() {
    // nr_requests = 4: the first allocator to reach the limit becomes a batcher and
    // may go on to 3/2 * 4 = 6 requests; the 7th sleeps (S) until the pool drops
    // below nr_requests, i.e. after three completions.
    let mut h = harness(
        "noop",
        1,
        &["queue/nr_requests=4", "queue/unplug_thresh=100"],
    );
    let mut slept = None;
    for i in 0..7u64 {
        let r = h.bio(i, 100_000 * (i + 1), 8, ReqFlags::READ);
        if r == Submit::Sleeping {
            slept = Some(i);
        }
    }
    assert_eq!(slept, Some(6));
    h.run();
    let log = h.log.lock().unwrap();
    let acts: Vec<&str> = log.iter().map(|r| r.action.letter()).collect();
    assert_eq!(acts.iter().filter(|a| **a == "S").count(), 1);
    let s_at = acts.iter().position(|a| *a == "S").unwrap();
    let g_last = acts.iter().rposition(|a| *a == "G").unwrap();
    let completions_before = acts[s_at..g_last].iter().filter(|a| **a == "C").count();
    assert_eq!(completions_before, 3, "{acts:?}");
    assert_eq!(h.out.woken, vec![TaskId(700_000)]);
}

#[test]
fn deadline_alternates_by_writes_starved() {
    // fifo_batch = 1 so every dispatch chooses a direction: reads twice, then the
    // starved writes, as deadline_dispatch_requests counts `starved`.
    let mut h = harness(
        "deadline",
        1,
        &[
            "queue/unplug_thresh=100",
            "iosched/deadline/fifo_batch=1",
            "iosched/deadline/writes_starved=2",
        ],
    );
    for i in 0..4u64 {
        h.bio(i, 10_000 + 1000 * i, 8, ReqFlags::READ);
    }
    for i in 0..2u64 {
        h.bio(10 + i, 900_000 + 1000 * i, 8, ReqFlags::WRITE);
    }
    h.unplug(20);
    h.run();
    let dirs: String = h
        .log
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.action == Action::Issue)
        .map(|r| if r.flags.is_write() { 'W' } else { 'R' })
        .collect();
    assert_eq!(dirs, "RRWRRW");
}

#[test]
fn deadline_expired_fifo_head_breaks_the_sector_sweep() {
    // A read behind the sweep's position waits while next_rq carries the sweep up
    // the disk; with read_expire = 10 ms it is served as soon as the FIFO head has
    // expired (checked only between batches), not after the sweep.
    let mut h = harness(
        "deadline",
        1,
        &[
            "queue/unplug_thresh=100",
            "iosched/deadline/read_expire=10",
            "iosched/deadline/fifo_batch=1",
        ],
    );
    h.bio(0, 1000, 8, ReqFlags::READ);
    h.bio(1, 500, 8, ReqFlags::READ); // behind the sweep, second in the FIFO
    for i in 1..30u64 {
        h.bio(1 + i, 1000 + 8 * 1000 * i, 8, ReqFlags::READ);
    }
    h.unplug(100);
    h.run();
    let issued = h.issued();
    let pos = issued.iter().position(|&s| s == 500).unwrap();
    // Each request takes 1 ms; expiry after 10 jiffies plus one: served at ~12 ms.
    assert!(
        (10..16).contains(&pos),
        "served at position {pos}: {issued:?}"
    );
}

#[test]
fn a_request_freed_by_a_request_merge_wakes_a_sleeping_allocator() {
    // nr_requests = 8, so the batcher may hold 12 requests and the 13th allocator
    // sleeps (get_request_wait unplugs first, which dispatches the two fillers).
    // Five bios then fill the gaps between request pairs; each back merge is
    // followed by attempt_back_merge, which frees the pair's second request
    // (__blk_put_request → freed_request). The fifth free takes the pool below
    // nr_requests and must wake the sleeper, whose bio then gets a request.
    let mut h = harness(
        "deadline",
        1,
        &["queue/nr_requests=8", "queue/unplug_thresh=100"],
    );
    let mut t = 0;
    for sector in [100u64, 200] {
        assert_eq!(h.bio(t, sector, 8, ReqFlags::WRITE), Submit::Queued);
        t += 1;
    }
    let pairs = [1000u64, 2000, 3000, 4000, 5000];
    for base in pairs {
        for off in [0u64, 16] {
            assert_eq!(h.bio(t, base + off, 8, ReqFlags::WRITE), Submit::Queued);
            t += 1;
        }
    }
    assert_eq!(h.bio(t, 900_000, 8, ReqFlags::WRITE), Submit::Sleeping);
    for base in pairs {
        t += 1;
        let r = h.bio(t, base + 8, 8, ReqFlags::WRITE);
        assert_eq!(r, Submit::Queued, "{base}: {}", h.actions());
    }
    assert_eq!(h.out.woken, vec![TaskId(900_000)], "the sleeper was woken");
    h.unplug(t + 1);
    h.run();
    let issued = h.issued();
    assert!(issued.contains(&900_000), "{issued:?}");
    let completed = h
        .log
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.action == Action::Complete)
        .count();
    assert_eq!(completed, 2 + pairs.len() + 1);
}
