//! The trace checker (`check::Checker`) attached to a request queue that runs
//! flush sequences of each era (`block/flush.rs`): empty flushes (Q with no
//! bytes), the pre/post-flush proxies the queue creates itself (D/C with no Q),
//! the 2.6.39+ double completion of a sequenced request, and barriers. The
//! checker must accept every legal sequence and still catch a lost completion.

use iostack_block::{Bio, BlockOut, QueueConfig, QueueEvent, RequestQueue};
use iostack_core::{
    Action, BioOwner, DevT, EndIo, Pdu, Profile, ReqFlags, TaskId, TraceEvent, TraceRecord,
    TraceSink, Tracer, Tunables,
};
use iostack_des::{EventQueue, Instant};
use iostack_device::{Device, DeviceCmd, HwLimits};
use iostack_sim::check::Checker;

const DISK: DevT = DevT::new(8, 0);
const MS: u64 = 1_000_000;

/// One command at a time in arrival order: 1 ms per data command, 5 ms per flush.
struct Dev {
    fua: bool,
    busy_until: u64,
    queue: Vec<(u64, u64)>,
}

impl Device for Dev {
    fn write_cache(&self) -> bool {
        true
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
        self.busy_until = start + if cmd.flush { 5 * MS } else { MS };
        self.queue.push((self.busy_until, cmd.id));
    }
    fn poll(&mut self, _now: Instant, out: &mut Vec<(Instant, u64)>) {
        out.extend(self.queue.drain(..).map(|(at, id)| (Instant(at), id)));
    }
    fn complete(&mut self, _now: Instant, _id: u64) {}
}

struct H {
    q: RequestQueue,
    tr: Tracer,
    out: BlockOut,
    evq: EventQueue<QueueEvent>,
}

fn h(profile: Profile, sched: &str, fua: bool) -> H {
    let t = Tunables::new(
        profile,
        &[
            iostack_block::TUNABLES,
            iostack_iosched::deadline::TUNABLES,
            iostack_iosched::cfq::TUNABLES,
            iostack_iosched::anticipatory::TUNABLES,
        ],
    );
    let dev = Dev {
        fua,
        busy_until: 0,
        queue: Vec::new(),
    };
    let cfg = QueueConfig::from_tunables(&t, DISK, vec![], &dev);
    let elv = iostack_iosched::by_name(sched, &t).unwrap();
    let mut q = RequestQueue::new(cfg, elv, Box::new(dev));
    q.set_checks(true);
    let mut tr = Tracer::new();
    tr.attach(Box::new(Checker::new(true)));
    H {
        q,
        tr,
        out: BlockOut::default(),
        evq: EventQueue::new(),
    }
}

impl H {
    fn bio(&mut self, at: u64, owner: u32, sector: u64, sectors: u32, flags: ReqFlags) {
        self.run_until(at);
        let b = Bio {
            dev: DISK,
            sector,
            sectors,
            segments: sectors.div_ceil(8),
            flags,
            pid: 100 + owner,
            cpu: 0,
            owner: BioOwner {
                task: TaskId(owner),
                end_io: EndIo::DirectIo { slot: 0 },
            },
            ioprio: (2, 4),
            submitted_at: Instant(at),
            run: iostack_block::BioRun::ONE,
            next: None,
        };
        self.q
            .submit_bio(Instant(at), b, &mut self.tr, &mut self.out);
        self.sched();
    }
    fn sched(&mut self) {
        self.out.completed.clear();
        for (at, e) in self.out.events.drain(..) {
            self.evq.schedule(at, e);
        }
    }
    fn run_until(&mut self, t: u64) {
        while self.evq.peek_time().is_some_and(|x| x.0 <= t) {
            let s = self.evq.pop().unwrap();
            self.q.handle(s.at, s.event, &mut self.tr, &mut self.out);
            self.sched();
        }
    }
    /// Run to the end and let the checker judge the whole trace (`finish`).
    fn finish(mut self) {
        self.run_until(u64::MAX);
        assert!(self.q.idle());
        self.tr.finish(Instant(u64::MAX / 2));
    }
}

const W: ReqFlags = ReqFlags::WRITE;

/// A journal's commit pattern in every era: ordered data, journal blocks, an
/// empty flush (`blkdev_issue_flush`), a FLUSH|FUA commit block (a barrier
/// before 2.6.37), more data during the sequence.
fn commit_like(profile: Profile, sched: &str, fua: bool) {
    let mut h = h(profile, sched, fua);
    let barrier = profile < Profile::V2_6_37;
    let commit = if barrier {
        W | ReqFlags::SYNC | ReqFlags::FLUSH
    } else {
        ReqFlags::WRITE_FLUSH | ReqFlags::FUA
    };
    for i in 0..4 {
        h.bio(0, 1, 1000 + 8 * i, 8, W | ReqFlags::SYNC);
    }
    h.bio(MS, 2, 50_000, 8, W | ReqFlags::SYNC);
    h.bio(MS, 2, 50_008, 8, W | ReqFlags::SYNC);
    h.bio(2 * MS, 3, 0, 0, ReqFlags::WRITE_FLUSH);
    h.bio(3 * MS, 2, 50_016, 8, commit);
    h.bio(3 * MS, 4, 9000, 8, W);
    h.bio(4 * MS, 5, 0, 0, ReqFlags::WRITE_FLUSH);
    h.bio(4 * MS, 6, 0, 0, ReqFlags::WRITE_FLUSH);
    h.bio(4 * MS, 7, 70_000, 8, W | ReqFlags::SYNC | ReqFlags::FUA);
    h.finish();
}

#[test]
fn checker_accepts_barrier_sequences_2_6_33() {
    commit_like(Profile::V2_6_33, "cfq", false);
    commit_like(Profile::V2_6_32, "deadline", true);
    commit_like(Profile::V2_6_28, "noop", false);
}

#[test]
fn checker_accepts_serial_flush_sequences_2_6_37() {
    commit_like(Profile::V2_6_37, "cfq", false);
    commit_like(Profile::V2_6_37, "deadline", true);
}

#[test]
fn checker_accepts_merged_flush_sequences_3_10() {
    commit_like(Profile::V3_10, "cfq", false);
    commit_like(Profile::V3_10, "noop", true);
}

/// The checker still catches a request issued and never completed, with a
/// flush sequence in the same trace.
#[test]
#[should_panic(expected = "issued but never completed")]
fn checker_still_catches_a_lost_completion() {
    let mut h = h(Profile::V3_10, "noop", false);
    h.bio(0, 1, 0, 0, ReqFlags::WRITE_FLUSH);
    h.bio(0, 2, 800, 8, W);
    // Stop before the device completes the write.
    h.run_until(MS / 2);
    h.tr.finish(Instant(MS / 2));
}

fn rec(t: u64, action: Action, sector: u64, bytes: u32) -> TraceEvent {
    TraceEvent::Block(TraceRecord {
        time: Instant(t),
        dev: DISK,
        cpu: 0,
        pid: 1,
        action,
        sector,
        bytes,
        flags: ReqFlags::WRITE,
        is_request: action != Action::Queue && action != Action::GetRq,
        error: 0,
        pdu: Pdu::None,
    })
}

/// A completion of a request never issued, in an instant where nothing issued
/// completed, is not a flush sequence's end: the checker fires.
#[test]
#[should_panic(expected = "never issued")]
fn checker_refuses_a_stray_completion_outside_a_sequence() {
    let mut c = Checker::new(true);
    c.event(&rec(0, Action::Queue, 8, 4096));
    c.event(&rec(0, Action::GetRq, 8, 4096));
    c.event(&rec(1, Action::Issue, 8, 4096));
    c.event(&rec(2, Action::Complete, 8, 4096));
    c.event(&rec(3, Action::Complete, 16, 0));
}

/// The same stray completion in the instant of a real one is accepted once per
/// allocated request, never more.
#[test]
#[should_panic(expected = "never issued")]
fn checker_bounds_sequence_ends_by_requests_allocated() {
    let mut c = Checker::new(true);
    c.event(&rec(0, Action::Queue, 8, 4096));
    c.event(&rec(0, Action::GetRq, 8, 4096));
    c.event(&rec(1, Action::Issue, 8, 4096));
    c.event(&rec(2, Action::Complete, 8, 4096));
    c.event(&rec(2, Action::Complete, 16, 0));
    c.event(&rec(2, Action::Complete, 16, 0));
}
