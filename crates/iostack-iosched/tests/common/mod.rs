//! The closed-loop harness the scheduler tests share: the real request queue
//! over a fixed-latency device, with processes that keep a number of requests
//! outstanding and think between a completion and their next submission.

#![allow(dead_code)]

use iostack_block::{Bio, BlockOut, QueueConfig, QueueEvent, RequestQueue};
use iostack_core::{
    Action, BioOwner, DevT, EndIo, Profile, ReqFlags, TaskId, TraceEvent, TraceSink, Tracer,
    Tunables,
};
use iostack_des::{EventQueue, Instant};
use iostack_device::{Fixed, FixedParams, HwLimits};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub const DISK: DevT = DevT::new(8, 0);
pub const MS: u64 = 1_000_000;

#[derive(Default)]
pub struct Log {
    /// (time, sector, write) of every D.
    pub issues: Vec<(u64, u64, bool)>,
    pub msgs: Vec<String>,
}

pub struct Rec(Arc<Mutex<Log>>);
impl TraceSink for Rec {
    fn event(&mut self, ev: &TraceEvent) {
        match ev {
            TraceEvent::Block(r) if r.action == Action::Issue => self
                .0
                .lock()
                .unwrap()
                .issues
                .push((r.time.0, r.sector, r.flags.is_write())),
            TraceEvent::Message { text, .. } => self.0.lock().unwrap().msgs.push(text.clone()),
            _ => {}
        }
    }
}

/// A process issuing `count` requests of `sectors` one at a time.
#[derive(Clone)]
pub struct Proc {
    pub pid: u32,
    pub base: u64,
    /// Sector step between requests (sequential = sectors).
    pub stride: u64,
    pub sectors: u32,
    pub flags: ReqFlags,
    pub ioprio: (u8, u8),
    pub think_ns: u64,
    pub start_ns: u64,
    pub count: u32,
    /// Requests kept outstanding (1 = synchronous).
    pub depth: u32,
}

impl Proc {
    pub fn reader(pid: u32, base: u64) -> Proc {
        Proc {
            pid,
            base,
            stride: 8,
            sectors: 8,
            flags: ReqFlags::SYNC | ReqFlags::UNPLUG,
            ioprio: (2, 4),
            think_ns: 100_000,
            start_ns: 0,
            count: 200,
            depth: 1,
        }
    }
}

pub struct Sim {
    pub q: RequestQueue,
    pub tr: Tracer,
    pub out: BlockOut,
    pub evq: EventQueue<QueueEvent>,
    pub log: Arc<Mutex<Log>>,
    pub procs: Vec<Proc>,
    pub issued: Vec<u32>,
    /// (time, seq) → process index: pending submissions.
    pub pending: BTreeMap<(u64, u64), usize>,
    pub seq: u64,
    pub now: u64,
}

/// A queue with scheduler `sched` over a fixed-latency device of `depth` tags,
/// with `procs` submitting in closed loop.
pub fn sim(
    sched: &str,
    profile: Profile,
    sets: &[&str],
    depth: u32,
    rotational: bool,
    procs: Vec<Proc>,
) -> Sim {
    let mut tables = vec![iostack_block::TUNABLES];
    tables.extend(iostack_iosched::tunable_tables());
    let mut t = Tunables::new(profile, &tables);
    for s in sets {
        t.set_str(s).unwrap();
    }
    let q = fixed_queue(sched, &t, depth, depth, 1 << 34, rotational);
    let log = Arc::new(Mutex::new(Log::default()));
    let mut tr = Tracer::new();
    tr.attach(Box::new(Rec(log.clone())));
    let mut s = Sim {
        q,
        tr,
        out: BlockOut::default(),
        evq: EventQueue::new(),
        log,
        issued: vec![0; procs.len()],
        procs,
        pending: BTreeMap::new(),
        seq: 0,
        now: 0,
    };
    for i in 0..s.procs.len() {
        for _ in 0..s.procs[i].depth {
            let at = s.procs[i].start_ns;
            s.push(at, i);
        }
    }
    s
}

impl Sim {
    fn push(&mut self, at: u64, i: usize) {
        self.pending.insert((at, self.seq), i);
        self.seq += 1;
    }
    fn drain(&mut self) {
        for (at, e) in self.out.events.drain(..) {
            self.evq.schedule(at, e);
        }
        for c in std::mem::take(&mut self.out.completed) {
            let i = c.owner.task.0 as usize;
            // The process thinks, then submits its next request.
            let now = self.now;
            let think = self.procs[i].think_ns;
            self.push(now + think, i);
        }
    }
    fn submit(&mut self, at: u64, i: usize) {
        let p = self.procs[i].clone();
        if self.issued[i] >= p.count {
            return;
        }
        let n = self.issued[i] as u64;
        self.issued[i] += 1;
        let b = Bio {
            dev: DISK,
            sector: p.base + n * p.stride,
            sectors: p.sectors,
            segments: p.sectors.div_ceil(8),
            flags: p.flags,
            pid: p.pid,
            cpu: 0,
            owner: BioOwner {
                task: TaskId(i as u32),
                end_io: EndIo::DirectIo { slot: n as u32 },
            },
            ioprio: p.ioprio,
            submitted_at: Instant(at),
            run: iostack_block::BioRun::ONE,
            next: None,
        };
        self.q
            .submit_bio(Instant(at), b, &mut self.tr, &mut self.out);
    }
    pub fn run(&mut self) {
        loop {
            let ev = self.evq.peek_time().map(|t| t.0);
            let sub = self.pending.keys().next().copied();
            match (ev, sub) {
                (None, None) => break,
                (Some(e), Some((s, _))) if s < e => self.step_submit(),
                (None, Some(_)) => self.step_submit(),
                _ => {
                    let s = self.evq.pop().unwrap();
                    self.now = s.at.0;
                    self.q.handle(s.at, s.event, &mut self.tr, &mut self.out);
                    self.drain();
                }
            }
        }
        self.q.check_invariants();
        assert!(self.q.idle());
    }
    fn step_submit(&mut self) {
        let (&(at, seq), &i) = self.pending.iter().next().unwrap();
        self.pending.remove(&(at, seq));
        self.now = at;
        self.submit(at, i);
        self.drain();
    }
    /// Which process each D belongs to (by sector range), as runs (proc, length).
    pub fn runs(&self) -> Vec<(usize, usize)> {
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for &(_, sector, _) in &self.log.lock().unwrap().issues {
            let p = self
                .procs
                .iter()
                .rposition(|p| sector >= p.base)
                .expect("sector of a process");
            match runs.last_mut() {
                Some((q, n)) if *q == p => *n += 1,
                _ => runs.push((p, 1)),
            }
        }
        runs
    }
    pub fn msgs(&self) -> Vec<String> {
        self.log.lock().unwrap().msgs.clone()
    }
}

/// A request queue with policy `sched` over a fixed-latency device of 1 ms per
/// command, with the invariant checks on.
pub fn fixed_queue(
    sched: &str,
    t: &Tunables,
    channels: u32,
    depth: u32,
    capacity_sectors: u64,
    rotational: bool,
) -> RequestQueue {
    let dev = Fixed::new(FixedParams {
        overhead_ns: MS,
        rate_bytes_per_s: 0,
        channels,
        queue_depth: depth,
        capacity_sectors,
        rotational,
        write_cache: false,
        limits: HwLimits {
            max_hw_sectors: 1024,
            max_segments: 128,
            logical_block_size: 512,
        },
    });
    let cfg = QueueConfig::from_tunables(t, DISK, vec![], &dev);
    let elv = iostack_iosched::by_name(sched, t).unwrap();
    let mut q = RequestQueue::new(cfg, elv, Box::new(dev));
    q.set_checks(true);
    q
}
