//! 2.6.39+ on-stack plugging on the single queue (3.10 `blk_queue_bio`,
//! `blk_attempt_plug_merge`, `blk_flush_plug_list`, `elv_attempt_insert_merge`),
//! checked event by event against the kernel's rules.

use iostack_block::{Bio, BlockOut, BlockQueue, Ctx, QueueEvent, RequestQueue, Submit};
use iostack_core::{
    Action, BioOwner, EndIo, Pdu, Profile, ReqFlags, TaskId, TraceEvent, TraceRecord, TraceSink,
    Tracer, Tunables,
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
    /// Time of the last event run.
    now: Instant,
}

const KBLOCKD: Ctx = Ctx { pid: 7, cpu: 0 };

fn harness(depth: u32, sets: &[&str]) -> Harness {
    let mut t = Tunables::new(
        Profile::V3_10,
        &[iostack_block::TUNABLES, iostack_iosched::deadline::TUNABLES],
    );
    for s in sets {
        t.set_str(s).unwrap();
    }
    let mut q = fixed_queue("noop", &t, depth, depth, 1 << 30, true);
    assert!(q.config().onstack_plug, "3.10 plugs per task");
    q.set_kblockd(KBLOCKD);
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut tr = Tracer::new();
    tr.attach(Box::new(Rec(log.clone())));
    Harness {
        q,
        tr,
        out: BlockOut::default(),
        evq: EventQueue::new(),
        log,
        now: Instant(0),
    }
}

fn ctx(task: u32) -> Ctx {
    Ctx {
        pid: 100 + task,
        cpu: 0,
    }
}

impl Harness {
    fn bio(&mut self, task: u32, sector: u64, sectors: u32) -> Submit {
        let b = Bio {
            dev: DISK,
            sector,
            sectors,
            segments: sectors.div_ceil(8),
            flags: ReqFlags::READ,
            pid: 100 + task,
            cpu: 0,
            owner: BioOwner {
                task: TaskId(task),
                end_io: EndIo::DirectIo { slot: 0 },
            },
            ioprio: (2, 4),
            submitted_at: self.now,
            run: iostack_block::BioRun::ONE,
            next: None,
        };
        let r = self.q.submit_bio(self.now, b, &mut self.tr, &mut self.out);
        self.sched();
        r
    }
    fn start(&mut self, task: u32) {
        self.q.start_plug(TaskId(task));
    }
    fn finish(&mut self, task: u32) {
        self.q.finish_plug(
            self.now,
            TaskId(task),
            ctx(task),
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
    /// Run timers, completions and kblockd's work (as the kblockd task).
    fn run(&mut self) {
        while let Some(s) = self.evq.pop() {
            self.now = s.at;
            match s.event {
                QueueEvent::Work(w) => {
                    self.q
                        .run_work(s.at, w, KBLOCKD, &mut self.tr, &mut self.out)
                }
                e => self.q.handle(s.at, e, &mut self.tr, &mut self.out),
            }
            self.sched();
        }
        self.q.check_invariants();
        assert!(self.q.idle());
    }
    fn actions(&self) -> String {
        let log = self.log.lock().unwrap();
        let v: Vec<&str> = log.iter().map(|r| r.action.letter()).collect();
        v.join(" ")
    }
    fn of(&self, a: Action) -> Vec<TraceRecord> {
        let log = self.log.lock().unwrap();
        log.iter().filter(|r| r.action == a).copied().collect()
    }
}

#[test]
fn plugged_requests_merge_on_the_plug_and_go_in_sorted_at_finish() {
    let mut h = harness(4, &[]);
    h.start(1);
    h.bio(1, 1000, 8); // G, P: the plug's first request
    h.bio(1, 1008, 8); // merges with it on the plug (blk_attempt_plug_merge)
    h.bio(1, 2000, 8); // a second request: no P
    h.bio(1, 500, 8);
    assert!(
        h.of(Action::Insert).is_empty(),
        "nothing inserted while plugged"
    );
    assert!(
        h.of(Action::Issue).is_empty(),
        "nothing dispatched while plugged"
    );
    h.finish(1);
    h.run();
    assert_eq!(h.actions(), "Q G P Q M Q G Q G I I I U D D D C C C");
    let inserted: Vec<u64> = h.of(Action::Insert).iter().map(|r| r.sector).collect();
    assert_eq!(
        inserted,
        vec![500, 1000, 2000],
        "plug_rq_cmp sorts by sector"
    );
    let u = h.of(Action::UnplugIo);
    assert_eq!(u[0].pdu, Pdu::Unplug { depth: 3 });
    assert_eq!(u[0].pid, 101, "blk_finish_plug runs the queue as the task");
    let d = h.of(Action::Issue);
    assert_eq!((d[1].sector, d[1].bytes), (1000, 16 * 512));
}

#[test]
fn a_plug_holding_sixteen_requests_is_flushed_before_the_next() {
    let mut h = harness(32, &[]);
    h.start(1);
    for i in 0..17u64 {
        h.bio(1, 10_000 * (i + 1), 8);
    }
    // BLK_MAX_REQUEST_COUNT: the 17th request finds 16 on the plug, flushes
    // them (U 16), and starts the plug again (P).
    let u = h.of(Action::UnplugIo);
    assert_eq!(u.len(), 1);
    assert_eq!(u[0].pdu, Pdu::Unplug { depth: 16 });
    assert_eq!(h.of(Action::Plug).len(), 2);
    assert_eq!(h.of(Action::Insert).len(), 16);
    h.finish(1);
    h.run();
    let u = h.of(Action::UnplugIo);
    assert_eq!(u[1].pdu, Pdu::Unplug { depth: 1 });
    assert_eq!(h.of(Action::Issue).len(), 17);
}

#[test]
fn sleeping_with_a_plug_flushes_it_and_kblockd_runs_the_queue() {
    let mut h = harness(4, &[]);
    h.start(1);
    h.bio(1, 1000, 8);
    h.bio(1, 3000, 8);
    h.q.sleep(Instant(0), TaskId(1), ctx(1), &mut h.tr, &mut h.out);
    h.sched();
    // blk_schedule_flush_plug: inserted, UT (implicit), no dispatch yet.
    assert_eq!(h.actions(), "Q G P Q G I I UT");
    assert_eq!(h.of(Action::UnplugTimer)[0].pdu, Pdu::Unplug { depth: 2 });
    h.run();
    let d = h.of(Action::Issue);
    assert_eq!(d.len(), 2);
    assert!(
        d.iter().all(|r| r.pid == KBLOCKD.pid),
        "blk_run_queue_async"
    );
    // The plug is still the task's: the next request is plugged again.
    h.bio(1, 5000, 8);
    assert_eq!(h.of(Action::Plug).len(), 2);
    h.finish(1);
    h.run();
}

#[test]
fn without_a_plug_each_request_is_inserted_and_dispatched_at_once() {
    let mut h = harness(4, &[]);
    h.bio(1, 1000, 8);
    assert_eq!(h.actions(), "Q G I D");
    // The queue's own plug, its timer and the explicit unplug are gone.
    BlockQueue::unplug(
        &mut h.q,
        Instant(1),
        TaskId(1),
        ctx(1),
        &mut h.tr,
        &mut h.out,
    );
    assert_eq!(h.actions(), "Q G I D");
    h.run();
    assert_eq!(h.actions(), "Q G I D C");
}

#[test]
fn a_plugged_request_merges_into_the_elevator_on_insertion() {
    let mut h = harness(1, &[]);
    h.bio(2, 0, 8); // Q G I D: the device's one slot is taken
    h.start(1);
    h.bio(1, 1008, 8); // plugged: Q G P
                       // No plug: inserted and the queue run. 5000 is peeked (D, started) and
                       // waits for the device at the head; 1000 stays in the elevator.
    h.bio(2, 5000, 8);
    h.bio(2, 1000, 8);
    h.finish(1);
    // elv_attempt_insert_merge: the request ending at 1008 absorbs the plugged
    // one; one request of 16 sectors goes out.
    h.run();
    assert_eq!(h.actions(), "Q G I D Q G P Q G I D Q G I I U C D C C");
    let d = h.of(Action::Issue);
    assert_eq!((d[2].sector, d[2].bytes), (1000, 16 * 512));
}
