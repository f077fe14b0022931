//! Runs of bios (`BioRun`, `run_merge.rs`) against the same bios submitted one
//! at a time: on random scripts of runs from a few tasks, under each 2.6
//! scheduler, with small request pools (submitters sleep), small request
//! limits, a partition (remap) and overlapping runs, the two queues must trace
//! the same records, complete the same bios at the same times and end with the
//! same counters.

use iostack_block::{Bio, BioRun, BlockOut, Partition, QueueConfig, QueueEvent, RequestQueue};
use iostack_block::{BlockQueue, Submit};
use iostack_core::{
    BioOwner, DevT, EndIo, Profile, ReqFlags, TaskId, TraceEvent, TraceRecord, TraceSink, Tracer,
    Tunables,
};
use iostack_des::{EventQueue, Instant, Rng, Seed};
use iostack_device::{Fixed, FixedParams, HwLimits};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};

const DISK: DevT = DevT::new(8, 0);
const PART: DevT = DevT::new(8, 1);
const PART_START: u64 = 2048;

struct Rec(Arc<Mutex<Vec<TraceRecord>>>);
impl TraceSink for Rec {
    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Block(r) = ev {
            self.0.lock().unwrap().push(*r);
        }
    }
}

/// One queue and its host: tasks that sleep for requests and go on with their
/// queued bios when woken, as `drain_pending` does.
struct Side {
    q: RequestQueue,
    tr: Tracer,
    out: BlockOut,
    evq: EventQueue<QueueEvent>,
    log: Arc<Mutex<Vec<TraceRecord>>>,
    /// Submit runs whole (`submit_bio_run`) or bio by bio.
    runs: bool,
    pending: BTreeMap<u32, VecDeque<Bio>>,
    asleep: BTreeSet<u32>,
    /// (time, task, sector, bytes) of every bio completed, one per bio.
    done: Vec<(u64, u32, u64, u64)>,
}

fn queue(sched: &str, sets: &[String], depth: u32) -> RequestQueue {
    let mut tables = vec![iostack_block::TUNABLES];
    tables.extend(iostack_iosched::tunable_tables());
    let mut t = Tunables::new(Profile::V2_6_28, &tables);
    for s in sets {
        t.set_str(s).unwrap();
    }
    let dev = Fixed::new(FixedParams {
        overhead_ns: 200_000,
        rate_bytes_per_s: 200_000_000,
        channels: depth,
        queue_depth: depth,
        capacity_sectors: 1 << 24,
        rotational: true,
        write_cache: false,
        limits: HwLimits {
            max_hw_sectors: 1024,
            max_segments: 128,
            logical_block_size: 512,
        },
    });
    let part = Partition {
        dev: PART,
        start: PART_START,
        nr_sects: (1 << 24) - PART_START,
    };
    let cfg = QueueConfig::from_tunables(&t, DISK, vec![part], &dev);
    let elv = iostack_iosched::by_name(sched, &t).unwrap();
    let mut q = RequestQueue::new(cfg, elv, Box::new(dev));
    q.set_checks(true);
    q
}

impl Side {
    fn new(q: RequestQueue, runs: bool) -> Side {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut tr = Tracer::new();
        tr.attach(Box::new(Rec(log.clone())));
        Side {
            q,
            tr,
            out: BlockOut::default(),
            evq: EventQueue::new(),
            log,
            runs,
            pending: BTreeMap::new(),
            asleep: BTreeSet::new(),
            done: Vec::new(),
        }
    }

    /// Submit the task's queued bios until it must sleep, then look at what
    /// the queue asked for (`drain_pending`, then `drain_block_out`).
    fn drain(&mut self, now: Instant, task: u32) {
        self.submit_pending(now, task);
        self.host(now);
    }

    fn submit_pending(&mut self, now: Instant, task: u32) {
        while !self.asleep.contains(&task) {
            let Some(mut bio) = self.pending.get_mut(&task).and_then(|p| p.pop_front()) else {
                return;
            };
            let (r, rest) = if self.runs {
                BlockQueue::submit_bio_run(&mut self.q, now, bio, &mut self.tr, &mut self.out)
            } else {
                // The default of the trait: each bio on its own.
                let first = bio.split_first();
                let one = first.unwrap_or(bio);
                let r = BlockQueue::submit_bio(&mut self.q, now, one, &mut self.tr, &mut self.out);
                (r, first.map(|_| bio))
            };
            if let Some(rest) = rest {
                self.pending.get_mut(&task).unwrap().push_front(rest);
            }
            if r == Submit::Sleeping {
                self.asleep.insert(task);
            }
        }
    }

    /// Timers to arm, completions to note (one per bio), sleepers to go on.
    fn host(&mut self, now: Instant) {
        for (at, e) in self.out.events.drain(..) {
            self.evq.schedule(at, e);
        }
        for c in std::mem::take(&mut self.out.completed) {
            let each = c.bytes / c.run.nr as u64;
            for i in 0..c.run.nr as u64 {
                let sector = c.sector + i * each / 512;
                self.done.push((now.0, c.owner.task.0, sector, each));
            }
        }
        for t in std::mem::take(&mut self.out.woken) {
            self.asleep.remove(&t.0);
            self.drain(now, t.0);
        }
    }

    fn run_until(&mut self, t: Instant) {
        while self.evq.peek_time().is_some_and(|x| x <= t) {
            let s = self.evq.pop().unwrap();
            self.q.handle(s.at, s.event, &mut self.tr, &mut self.out);
            self.host(s.at);
        }
    }

    fn submit(&mut self, at: Instant, bio: Bio) {
        self.run_until(at);
        let task = bio.owner.task.0;
        self.pending.entry(task).or_default().push_back(bio);
        self.drain(at, task);
    }
}

/// A random script: each of three tasks streams runs of 1-300 bios of one or
/// two pages, mostly following its last run, sometimes jumping or rewriting.
fn script(rng: &mut Rng) -> Vec<(Instant, Bio)> {
    let mut next = [0u64, 1 << 20, 1 << 21];
    let mut at = 0u64;
    let mut v = Vec::new();
    for _ in 0..60 {
        at += rng.below(3) * 400_000;
        let task = rng.below(3) as usize;
        let ps = 8 * (1 + rng.below(2) as u32);
        let nr = 1 + rng.below(300) as u32;
        let sector = match rng.below(6) {
            0 => rng.below(1 << 22),
            1 => next[task].saturating_sub(ps as u64 * rng.below(40)),
            _ => next[task],
        };
        next[task] = sector + (nr * ps) as u64;
        let flags = match (task, rng.below(8)) {
            (2, _) => ReqFlags::READ | ReqFlags::SYNC,
            (_, 0) => ReqFlags::WRITE | ReqFlags::UNPLUG,
            _ => ReqFlags::WRITE,
        };
        let dev = if rng.below(4) == 0 { DISK } else { PART };
        let bio = Bio {
            dev,
            sector,
            sectors: nr * ps,
            segments: nr * (ps / 8),
            flags,
            pid: 100 + task as u32,
            cpu: 0,
            owner: BioOwner {
                task: TaskId(task as u32),
                end_io: EndIo::PageCache {
                    bio: v.len() as u32,
                },
            },
            ioprio: (2, 4),
            submitted_at: Instant(at),
            run: BioRun { nr, index: 0 },
            next: None,
        };
        v.push((Instant(at), bio));
    }
    v
}

fn compare(sched: &str, seed: u64) {
    let mut rng = Rng::stream(Seed(seed), "bio-runs");
    let sets = vec![
        format!("queue/nr_requests={}", 4 + rng.below(12)),
        format!("queue/max_sectors_kb={}", 16 << rng.below(5)),
    ];
    let depth = 1 + rng.below(4) as u32;
    let s = script(&mut rng);
    let mut a = Side::new(queue(sched, &sets, depth), true);
    let mut b = Side::new(queue(sched, &sets, depth), false);
    for &(at, bio) in &s {
        a.submit(at, bio);
        b.submit(at, bio);
    }
    for side in [&mut a, &mut b] {
        side.run_until(Instant(u64::MAX));
        side.q.check_invariants();
        assert!(side.q.idle(), "{sched} seed {seed}: queue not idle");
        assert!(side.pending.values().all(|p| p.is_empty()));
    }
    let (la, lb) = (a.log.lock().unwrap(), b.log.lock().unwrap());
    assert_eq!(la.len(), lb.len(), "{sched} seed {seed}: trace lengths");
    for (i, (x, y)) in la.iter().zip(lb.iter()).enumerate() {
        assert_eq!(x, y, "{sched} seed {seed}: trace record {i}");
    }
    assert_eq!(a.done, b.done, "{sched} seed {seed}: completions");
    assert_eq!(a.q.stats(), b.q.stats(), "{sched} seed {seed}: counters");
    let bios: u64 = s.iter().map(|(_, b)| b.run.nr as u64).sum();
    assert_eq!(a.q.stats().bios_completed, bios);
}

#[test]
fn runs_match_bios_one_by_one() {
    for sched in ["noop", "deadline", "anticipatory", "cfq"] {
        for seed in 0..12 {
            compare(sched, seed);
        }
    }
}

/// The fast path is taken: a long sequential run costs few records.
#[test]
fn a_sequential_run_lands_as_few_records() {
    let q = queue("noop", &["queue/max_sectors_kb=512".to_string()], 1);
    let mut a = Side::new(q, true);
    let bio = Bio {
        dev: PART,
        sector: 0,
        sectors: 8 * 1000,
        segments: 1000,
        flags: ReqFlags::WRITE,
        pid: 100,
        cpu: 0,
        owner: BioOwner {
            task: TaskId(0),
            end_io: EndIo::PageCache { bio: 0 },
        },
        ioprio: (2, 4),
        submitted_at: Instant(0),
        run: BioRun { nr: 1000, index: 0 },
        next: None,
    };
    a.submit(Instant(0), bio);
    a.run_until(Instant(u64::MAX));
    let st = *a.q.stats();
    assert_eq!(st.bios_completed, 1000);
    // 8000 sectors in requests of at most 1024: 8 requests.
    assert_eq!(st.requests_completed, 8);
    assert_eq!(st.back_merges, 1000 - 8);
    assert_eq!(a.done.len(), 1000);
    assert!(a.done.windows(2).all(|w| w[0].2 + 8 == w[1].2));
}
