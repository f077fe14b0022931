//! mq-deadline (6.x `block/mq-deadline.c`): deadline for blk-mq. Per I/O
//! priority level (RT, BE, IDLE) and data direction a sector-sorted tree and a
//! FIFO with expiry times (in jiffies); dispatch continues a batch of up to
//! `fifo_batch` requests in sector order from the last dispatched position
//! (`deadline_from_pos`), prefers reads unless writes were starved
//! `writes_starved` times, restarts from the FIFO head when it expired, and
//! serves a lower level only when no higher one has requests queued or in
//! flight, except requests of a lower level older than `prio_aging_expire`
//! when two levels are busy (`dd_dispatch_prio_aged_requests`).
//! `async_depth` limits the scheduler tags of writes and async reads
//! (`dd_limit_depth`).

use crate::elv_rb::ElvRb;
use iostack_block::{Bio, MergeKind, MqElevator, RequestPool, RqId};
use iostack_core::{ReqFlags, Sector, TunableDef, Tunables, Unit};
use iostack_des::Instant;
use std::collections::BTreeSet;

pub static TUNABLES: &[TunableDef] = &[
    TunableDef {
        name: "iosched/mq-deadline/read_expire",
        unit: Unit::Ms,
        default: |_| 500,
        min: 0,
        max: 3_600_000,
        doc: "Deadline of a read after insertion (HZ/2).",
    },
    TunableDef {
        name: "iosched/mq-deadline/write_expire",
        unit: Unit::Ms,
        default: |_| 5000,
        min: 0,
        max: 3_600_000,
        doc: "Deadline of a write after insertion (5*HZ).",
    },
    TunableDef {
        name: "iosched/mq-deadline/fifo_batch",
        unit: Unit::Count,
        default: |_| 16,
        min: 1,
        max: 1 << 20,
        doc: "Requests dispatched in one sector-ordered batch before deadlines are checked.",
    },
    TunableDef {
        name: "iosched/mq-deadline/writes_starved",
        unit: Unit::Count,
        default: |_| 2,
        min: 0,
        max: 1 << 20,
        doc: "How many times reads may be preferred over waiting writes.",
    },
    TunableDef {
        name: "iosched/mq-deadline/front_merges",
        unit: Unit::Bool,
        default: |_| 1,
        min: 0,
        max: 1,
        doc: "Look up front merges in the sector tree.",
    },
    TunableDef {
        name: "iosched/mq-deadline/prio_aging_expire",
        unit: Unit::Ms,
        default: |_| 10_000,
        min: 0,
        max: 3_600_000,
        doc: "Requests of a lower priority level waiting this long are served first when \
              two levels are busy (10*HZ); 0 turns aging off.",
    },
    TunableDef {
        name: "iosched/mq-deadline/async_depth",
        unit: Unit::Count,
        default: |_| 0,
        min: 0,
        max: 1 << 20,
        doc: "Scheduler tags writes and async reads may hold (dd_limit_depth); 0 is the \
              kernel's default, nr_requests.",
    },
];

/// I/O priority levels (`enum dd_prio`): RT, BE, IDLE.
const LEVELS: usize = 3;

#[derive(Clone, Debug)]
pub struct DdConfig {
    /// Expiry per direction in jiffies (index 0 = read, 1 = write).
    pub fifo_expire: [u64; 2],
    pub fifo_batch: u32,
    pub writes_starved: u32,
    pub front_merges: bool,
    pub prio_aging_expire: u64,
    /// 0 = `nr_requests`.
    pub async_depth: u32,
    pub hz: u64,
}

impl DdConfig {
    pub fn from_tunables(t: &Tunables) -> Self {
        let hz = t.get_u64("kernel/hz");
        let j = |ms: u64| (ms * hz).div_ceil(1000);
        let g = |n: &str| t.get_u64(&format!("iosched/mq-deadline/{n}"));
        DdConfig {
            fifo_expire: [j(g("read_expire")), j(g("write_expire"))],
            fifo_batch: g("fifo_batch") as u32,
            writes_starved: g("writes_starved") as u32,
            front_merges: g("front_merges") != 0,
            prio_aging_expire: j(g("prio_aging_expire")),
            async_depth: g("async_depth") as u32,
            hz,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct DdRq {
    key: Sector,
    fifo_seq: u64,
    /// `rq->fifo_time`: the jiffy at which it expires.
    expire: u64,
    dir: usize,
    prio: usize,
}

/// `struct dd_per_prio`.
#[derive(Default)]
struct PerPrio {
    sort_list: [ElvRb; 2],
    fifo_list: [BTreeSet<(u64, RqId)>; 2],
    /// `latest_pos[dir]`: start of the last request dispatched.
    latest_pos: [Sector; 2],
    inserted: u64,
    completed: u64,
}

pub struct MqDeadline {
    cfg: DdConfig,
    per_prio: [PerPrio; LEVELS],
    last_dir: usize,
    batching: u32,
    starved: u32,
    fifo_seq: u64,
    per_rq: Vec<Option<DdRq>>,
}

/// `ioprio_class_to_prio`: NONE and BE → BE, RT → RT, IDLE → IDLE.
fn prio_of(ioprio: (u8, u8)) -> usize {
    match ioprio.0 {
        1 => 0,
        3 => 2,
        _ => 1,
    }
}

impl MqDeadline {
    pub fn new(cfg: DdConfig) -> Self {
        MqDeadline {
            cfg,
            per_prio: Default::default(),
            last_dir: 0,
            batching: 0,
            starved: 0,
            fifo_seq: 0,
            per_rq: Vec::new(),
        }
    }

    fn jiffies(&self, now: Instant) -> u64 {
        now.as_ns() * self.cfg.hz / 1_000_000_000
    }

    fn d(&self, rq: RqId) -> Option<DdRq> {
        self.per_rq.get(rq.0 as usize).copied().flatten()
    }

    /// `dd_queued`: inserted and not yet completed.
    fn queued_in(&self, prio: usize) -> u64 {
        let p = &self.per_prio[prio];
        p.inserted - p.completed
    }

    /// `deadline_remove_request`.
    fn remove(&mut self, rq: RqId) {
        let Some(d) = self.d(rq) else {
            return;
        };
        let p = &mut self.per_prio[d.prio];
        p.sort_list[d.dir].del(d.key, rq);
        assert!(p.fifo_list[d.dir].remove(&(d.fifo_seq, rq)));
        self.per_rq[rq.0 as usize] = None;
    }

    /// `deadline_fifo_request`: the oldest request of `dir`.
    fn fifo_request(&self, prio: usize, dir: usize) -> Option<RqId> {
        self.per_prio[prio].fifo_list[dir].first().map(|&(_, r)| r)
    }

    /// `deadline_check_fifo`: has the oldest request of `dir` expired?
    fn check_fifo(&self, prio: usize, dir: usize, jiffies: u64) -> bool {
        self.fifo_request(prio, dir)
            .is_some_and(|rq| jiffies >= self.d(rq).expect("queued").expire)
    }

    /// `deadline_next_request` → `deadline_from_pos`.
    fn next_request_from(&self, prio: usize, dir: usize) -> Option<RqId> {
        let p = &self.per_prio[prio];
        p.sort_list[dir].ceiling(p.latest_pos[dir])
    }

    /// `started_after`: inserted after `latest_start` (a jiffy).
    fn started_after(&self, rq: RqId, latest_start: u64) -> bool {
        let d = self.d(rq).expect("queued");
        d.expire.wrapping_sub(self.cfg.fifo_expire[d.dir]) > latest_start
    }

    /// `__dd_dispatch_request` for one level; `latest_start` bounds when the
    /// request may have been inserted.
    fn dispatch_level(&mut self, prio: usize, jiffies: u64, latest_start: u64) -> Option<RqId> {
        let rq = match self.next_request_from(prio, self.last_dir) {
            Some(rq) if self.batching < self.cfg.fifo_batch => rq,
            _ => {
                let dir = self.choose_dir(prio)?;
                let next = self.next_request_from(prio, dir);
                let rq = match next {
                    Some(n) if !self.check_fifo(prio, dir, jiffies) => n,
                    _ => self.fifo_request(prio, dir)?,
                };
                self.last_dir = dir;
                self.batching = 0;
                rq
            }
        };
        if self.started_after(rq, latest_start) {
            return None;
        }
        self.batching += 1;
        let d = self.d(rq).expect("queued");
        self.remove(rq);
        self.per_prio[prio].latest_pos[d.dir] = d.key;
        Some(rq)
    }

    /// Reads unless writes were starved `writes_starved` times.
    fn choose_dir(&mut self, prio: usize) -> Option<usize> {
        let p = &self.per_prio[prio];
        if !p.fifo_list[0].is_empty() {
            let writes = !p.fifo_list[1].is_empty();
            let starved = self.starved;
            self.starved += 1;
            if writes && starved >= self.cfg.writes_starved {
                self.starved = 0;
                return Some(1);
            }
            return Some(0);
        }
        if !p.fifo_list[1].is_empty() {
            self.starved = 0;
            return Some(1);
        }
        None
    }

    /// `dd_dispatch_prio_aged_requests`.
    fn dispatch_aged(&mut self, jiffies: u64) -> Option<RqId> {
        let aging = self.cfg.prio_aging_expire;
        if aging == 0 {
            return None;
        }
        let busy = (0..LEVELS).filter(|&p| self.queued_in(p) > 0).count();
        if busy < 2 {
            return None;
        }
        (1..LEVELS).find_map(|p| self.dispatch_level(p, jiffies, jiffies.wrapping_sub(aging)))
    }
}

impl MqElevator for MqDeadline {
    fn name(&self) -> &'static str {
        "mq-deadline"
    }

    /// `dd_limit_depth`: synchronous reads are not limited.
    fn limit_depth(&self, flags: ReqFlags, nr_requests: u32) -> u32 {
        if !flags.is_write() && flags.is_sync() || self.cfg.async_depth == 0 {
            return nr_requests;
        }
        self.cfg.async_depth.min(nr_requests)
    }

    /// `dd_request_merge`: a front-merge candidate starting at the bio's end.
    fn request_merge(&self, _rqs: &RequestPool, bio: &Bio) -> Option<RqId> {
        if !self.cfg.front_merges {
            return None;
        }
        let p = &self.per_prio[prio_of(bio.ioprio)];
        p.sort_list[bio.flags.is_write() as usize].find(bio.end_sector())
    }

    /// `dd_request_merged`: a front merge moved the start; re-sort.
    fn request_merged(&mut self, rqs: &RequestPool, rq: RqId, kind: MergeKind) {
        let Some(mut d) = self.d(rq) else {
            return;
        };
        if kind == MergeKind::Front {
            let key = rqs.get(rq).sector;
            self.per_prio[d.prio].sort_list[d.dir].rekey(d.key, key, rq);
            d.key = key;
            self.per_rq[rq.0 as usize] = Some(d);
        }
    }

    /// `dd_merged_requests`: `rq` takes `next`'s FIFO place if `next`
    /// expires first; `next` leaves.
    fn requests_merged(&mut self, _rqs: &mut RequestPool, rq: RqId, next: RqId) {
        if let (Some(mut d), Some(n)) = (self.d(rq), self.d(next)) {
            if n.expire < d.expire {
                let fifo = &mut self.per_prio[d.prio].fifo_list[d.dir];
                assert!(fifo.remove(&(d.fifo_seq, rq)));
                d.fifo_seq = n.fifo_seq;
                d.expire = n.expire;
                self.per_rq[rq.0 as usize] = Some(d);
                self.remove(next);
                self.per_prio[d.prio].fifo_list[d.dir].insert((d.fifo_seq, rq));
                return;
            }
        }
        self.remove(next);
    }

    fn former_request(&self, _rqs: &RequestPool, rq: RqId) -> Option<RqId> {
        let d = self.d(rq)?;
        self.per_prio[d.prio].sort_list[d.dir].former(d.key, rq)
    }

    fn next_request(&self, _rqs: &RequestPool, rq: RqId) -> Option<RqId> {
        let d = self.d(rq)?;
        self.per_prio[d.prio].sort_list[d.dir].latter(d.key, rq)
    }

    /// `dd_insert_request`: into its level's tree and at its FIFO's tail with
    /// `fifo_time = jiffies + fifo_expire[dir]`.
    fn insert_request(&mut self, now: Instant, _h: u16, rqs: &mut RequestPool, rq: RqId) {
        let r = rqs.get(rq);
        let dir = r.is_write() as usize;
        let prio = prio_of(r.ioprio);
        let d = DdRq {
            key: r.sector,
            fifo_seq: self.fifo_seq,
            expire: self.jiffies(now) + self.cfg.fifo_expire[dir],
            dir,
            prio,
        };
        self.fifo_seq += 1;
        let i = rq.0 as usize;
        if self.per_rq.len() <= i {
            self.per_rq.resize(i + 1, None);
        }
        self.per_rq[i] = Some(d);
        let p = &mut self.per_prio[prio];
        p.inserted += 1;
        p.sort_list[dir].add(d.key, rq);
        p.fifo_list[dir].insert((d.fifo_seq, rq));
    }

    /// `dd_dispatch_request`: aged requests first, then by level; a level
    /// with requests queued or in flight blocks the lower ones.
    fn dispatch_request(&mut self, now: Instant, _h: u16, _rqs: &RequestPool) -> Option<RqId> {
        let jiffies = self.jiffies(now);
        if let Some(rq) = self.dispatch_aged(jiffies) {
            return Some(rq);
        }
        for prio in 0..LEVELS {
            let rq = self.dispatch_level(prio, jiffies, jiffies);
            if rq.is_some() || self.queued_in(prio) > 0 {
                return rq;
            }
        }
        None
    }

    /// `dd_has_work`: one scheduler for every hardware queue.
    fn has_work(&self, _h: u16) -> bool {
        self.per_prio
            .iter()
            .any(|p| !p.fifo_list[0].is_empty() || !p.fifo_list[1].is_empty())
    }

    /// `dd_finish_request`: the level's completed count.
    fn finish_request(&mut self, rqs: &RequestPool, rq: RqId) {
        self.per_prio[prio_of(rqs.get(rq).ioprio)].completed += 1;
    }

    fn cost(&self) -> iostack_block::SchedCost {
        crate::cost::MQ_DEADLINE
    }

    fn queued(&self) -> usize {
        self.per_prio
            .iter()
            .map(|p| p.fifo_list[0].len() + p.fifo_list[1].len())
            .sum()
    }
}
