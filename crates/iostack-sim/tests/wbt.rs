//! Writeback throttling on the blk-mq queue (`block/mq/wbt.rs`, 6.x
//! `blk-wbt.c`): a buffered writer's writeback writes never have more in
//! flight than wbt's limit, the writer sleeps (`rq_qos_wait`) and is woken by
//! completions, while O_DIRECT writes and reads pass; wbt is off under BFQ
//! and with `queue/wbt_lat_usec=0`; the tunable is refused without blk-mq.

use iostack_block::{Bio, BlockOut, BlockQueue, Ctx, MqConfig, MqQueue, QueueConfig, QueueEvent};
use iostack_core::{BioOwner, DevT, EndIo, Profile, ReqFlags, TaskId, Tracer, Tunables};
use iostack_des::{EventQueue, Instant};
use iostack_device::{Device, DeviceCmd, HwLimits};
use iostack_sim::check::Checker;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

const DISK: DevT = DevT::new(8, 0);
const MS: u64 = 1_000_000;

/// Buffered (not SYNC|IDLE) writes in the device now, and the most seen.
type InFlight = Arc<Mutex<(u32, u32, Vec<(u64, bool)>)>>;

/// 32 commands in parallel, each `lat` long; counts buffered writes in flight.
struct Dev {
    lat: u64,
    wc: bool,
    queue: Vec<(u64, u64)>,
    flight: InFlight,
}

impl Device for Dev {
    fn write_cache(&self) -> bool {
        self.wc
    }
    fn fua(&self) -> bool {
        true
    }
    fn queue_depth(&self) -> u32 {
        32
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
        // Buffered writes are at sectors below 1 << 20 in these tests.
        let buffered = cmd.write && cmd.sector < 1 << 20;
        let mut f = self.flight.lock().unwrap();
        if buffered {
            f.0 += 1;
            f.1 = f.1.max(f.0);
        }
        f.2.push((cmd.id, buffered));
        self.queue.push((now.0 + self.lat, cmd.id));
    }
    fn poll(&mut self, _now: Instant, out: &mut Vec<(Instant, u64)>) {
        out.extend(self.queue.drain(..).map(|(at, id)| (Instant(at), id)));
    }
    fn complete(&mut self, _now: Instant, id: u64) {
        let mut f = self.flight.lock().unwrap();
        let i = f.2.iter().position(|&(c, _)| c == id).unwrap();
        if f.2.remove(i).1 {
            f.0 -= 1;
        }
    }
}

struct H {
    q: MqQueue,
    tr: Tracer,
    out: BlockOut,
    evq: EventQueue<QueueEvent>,
    flight: InFlight,
    /// Per task: bios not yet submitted, asleep, slept at all.
    pending: Vec<VecDeque<Bio>>,
    asleep: Vec<bool>,
    slept: Vec<u32>,
    done: usize,
}

fn h(sched: &str, wc: bool, lat: u64, sets: &[&str]) -> H {
    let mut tables = vec![iostack_block::TUNABLES];
    tables.extend(iostack_iosched::tunable_tables());
    let mut t = Tunables::new(Profile::V6, &tables);
    for s in sets {
        t.set_str(s).unwrap();
    }
    let flight = InFlight::default();
    let dev = Dev {
        lat,
        wc,
        queue: Vec::new(),
        flight: flight.clone(),
    };
    let cfg = QueueConfig::from_tunables(&t, DISK, vec![], &dev);
    let elv = iostack_iosched::mq_by_name(sched, &t).unwrap();
    let mut mcfg = MqConfig::from_queue_config(&cfg, 2, None);
    if t.overridden().contains(&"queue/wbt_lat_usec") {
        mcfg.wbt_lat_usec = Some(t.get("queue/wbt_lat_usec"));
    }
    let mut q = MqQueue::new(mcfg, elv, Box::new(dev));
    q.set_checks(true);
    q.set_kblockd(Ctx { pid: 40, cpu: 0 });
    let mut tr = Tracer::new();
    tr.attach(Box::new(Checker::new(true)));
    H {
        q,
        tr,
        out: BlockOut::default(),
        evq: EventQueue::new(),
        flight,
        pending: vec![VecDeque::new(); 3],
        asleep: vec![false; 3],
        slept: vec![0; 3],
        done: 0,
    }
}

fn bio(task: u32, sector: u64, flags: ReqFlags) -> Bio {
    Bio {
        dev: DISK,
        sector,
        sectors: 8,
        segments: 1,
        flags,
        pid: 100 + task,
        cpu: task % 2,
        owner: BioOwner {
            task: TaskId(task),
            end_io: EndIo::DirectIo { slot: 0 },
        },
        ioprio: (2, 4),
        submitted_at: Instant(0),
        run: iostack_block::BioRun::ONE,
        next: None,
    }
}

impl H {
    /// Task `t` submits its pending bios until it sleeps.
    fn go(&mut self, now: u64, t: usize) {
        while !self.asleep[t] {
            let Some(b) = self.pending[t].pop_front() else {
                break;
            };
            let r = self
                .q
                .submit_bio(Instant(now), b, &mut self.tr, &mut self.out);
            if r == iostack_block::Submit::Sleeping {
                self.asleep[t] = true;
                self.slept[t] += 1;
                let ctx = Ctx {
                    pid: 100 + t as u32,
                    cpu: t as u32 % 2,
                };
                self.q.sleep(
                    Instant(now),
                    TaskId(t as u32),
                    ctx,
                    &mut self.tr,
                    &mut self.out,
                );
            }
            self.sched(now);
        }
    }
    fn sched(&mut self, _now: u64) {
        self.done += self.out.completed.len();
        self.out.completed.clear();
        for (at, e) in self.out.events.drain(..) {
            self.evq.schedule(at, e);
        }
        for t in std::mem::take(&mut self.out.woken) {
            assert!(self.asleep[t.0 as usize], "woke {t:?} not asleep");
            self.asleep[t.0 as usize] = false;
        }
    }
    fn run(&mut self) {
        self.run_until(u64::MAX);
        assert!(BlockQueue::idle(&self.q));
        assert!(self.pending.iter().all(|p| p.is_empty()));
    }
    fn run_until(&mut self, until: u64) {
        // The reader first, the writer last, at every instant.
        for t in (0..3).rev() {
            self.go(0, t);
        }
        while self.evq.peek_time().is_some_and(|x| x.0 <= until) {
            let s = self.evq.pop().unwrap();
            match s.event {
                QueueEvent::Work(w) => {
                    let k = Ctx { pid: 40, cpu: 0 };
                    self.q.run_work(s.at, w, k, &mut self.tr, &mut self.out)
                }
                e => self.q.handle(s.at, e, &mut self.tr, &mut self.out),
            }
            self.sched(s.at.0);
            for t in (0..3).rev() {
                self.go(s.at.0, t);
            }
        }
    }
}

const W: ReqFlags = ReqFlags::WRITE;

/// Task 0: 200 buffered writeback writes (no merges); task 1: O_DIRECT
/// writes (SYNC|IDLE); task 2: reads. Returns the most buffered writes the
/// device had at once, the sleeps per task, and the completions.
fn writer_case(sched: &str, wc: bool, sets: &[&str], reads: bool) -> (u32, Vec<u32>, usize, u64) {
    let mut h = h(sched, wc, MS, sets);
    for i in 0..200u64 {
        h.pending[0].push_back(bio(0, i * 16, W));
    }
    // Few enough that they never wait for a tag (10 + 10 + 8 < 32).
    for i in 0..10u64 {
        h.pending[1].push_back(bio(
            1,
            (2 << 20) + i * 16,
            W | ReqFlags::SYNC | ReqFlags::IDLE,
        ));
        if reads {
            h.pending[2].push_back(bio(2, (4 << 20) + i * 16, ReqFlags::READ));
        }
    }
    h.run();
    let max = h.flight.lock().unwrap().1;
    let sleeps = h.q.stats().wbt_sleeps;
    (max, h.slept.clone(), h.done, sleeps)
}

/// With wbt on (2 ms target, queue depth 32: max depth 16, wb_normal 8),
/// the writer never has more than 8 writes in the device and sleeps in wbt;
/// the O_DIRECT writer and the reader never sleep. Every bio completes.
#[test]
fn buffered_writes_stay_under_the_limit() {
    for sched in ["none", "mq-deadline", "kyber"] {
        for wc in [false, true] {
            let (max, slept, done, sleeps) = writer_case(sched, wc, &[], false);
            assert_eq!(done, 210, "{sched} wc {wc}");
            assert_eq!(max, 8, "{sched} wc {wc}: wb_normal");
            assert!(sleeps > 0 && slept[0] > 0, "{sched} wc {wc}");
            assert_eq!(slept[1], 0, "O_DIRECT writes are not throttled");
        }
    }
}

/// Reads issued within HZ/10 (`close_io`) lower the writer's limit to
/// wb_background (4); reads themselves never sleep.
#[test]
fn recent_reads_lower_the_limit_to_background() {
    let (max, slept, done, _) = writer_case("none", false, &[], true);
    assert_eq!(done, 220);
    assert_eq!(max, 4);
    assert_eq!((slept[1], slept[2]), (0, 0));
}

/// BFQ turns wbt off by default (`wbt_disable_default`): the writer's writes
/// fill the device's 32 tags; so does `queue/wbt_lat_usec=0` under any
/// scheduler. A value written turns it on under BFQ too (manual state).
#[test]
fn off_with_bfq_and_with_zero_latency() {
    let (max, _, done, sleeps) = writer_case("bfq", false, &[], false);
    assert_eq!((sleeps, done), (0, 210));
    assert!(max > 8, "bfq {max}");
    let (max, _, _, sleeps) = writer_case("none", false, &["queue/wbt_lat_usec=0"], false);
    assert_eq!(sleeps, 0);
    assert_eq!(max, 32);
    let (max, _, _, sleeps) = writer_case("bfq", false, &["queue/wbt_lat_usec=2000"], false);
    assert!(sleeps > 0);
    assert!(max <= 8, "bfq manual {max}");
}

/// A window whose reads complete slower than the target scales wbt down:
/// with 5 ms commands and a 2 ms target, the first window (100 ms) ends
/// with scale_step 1 and the limits halved (max depth 8: wb_normal 4,
/// wb_background 2); the next window is 100 ms * 16 / int_sqrt(512).
#[test]
fn slow_reads_scale_down() {
    let mut h = h("none", false, 5 * MS, &[]);
    for i in 0..400u64 {
        h.pending[0].push_back(bio(0, i * 16, W));
    }
    for i in 0..1000u64 {
        h.pending[2].push_back(bio(2, (4 << 20) + i * 16, ReqFlags::READ));
    }
    h.run_until(99 * MS);
    let w = h.q.wbt().unwrap();
    assert_eq!(
        (w.depth.scale_step, w.wb_normal, w.wb_background),
        (0, 8, 4)
    );
    h.run_until(150 * MS);
    let w = h.q.wbt().unwrap();
    assert_eq!(w.depth.scale_step, 1, "{:?}", w.depth);
    assert_eq!((w.depth.max_depth, w.wb_normal, w.wb_background), (8, 4, 2));
    assert_eq!(w.cur_win_nsec, 1_600_000_000 / 22);
    let max = h.flight.lock().unwrap().1;
    assert_eq!(max, 4, "wb_background while reads are close");
}
