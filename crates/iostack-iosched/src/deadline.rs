//! deadline (V2632 `block/deadline-iosched.c`): per data direction a sector-sorted
//! tree and a FIFO with expiry times; dispatch continues a sector-ordered batch of
//! up to `fifo_batch` requests, prefers reads unless writes have been starved
//! `writes_starved` times, and restarts from the FIFO head when it has expired.
//! Deadlines are in jiffies, checked only between batches.

use crate::elv_rb::ElvRb;
use iostack_block::{Bio, Elevator, ElvCtx, MergeKind, Placement, RequestPool, RqId};
use iostack_core::{Sector, TunableDef, Tunables, Unit};
use std::collections::BTreeSet;

pub static TUNABLES: &[TunableDef] = &[
    TunableDef {
        name: "iosched/deadline/read_expire",
        unit: Unit::Ms,
        default: |_| 500,
        min: 0,
        max: 3_600_000,
        doc: "Deadline of a read after insertion (HZ/2).",
    },
    TunableDef {
        name: "iosched/deadline/write_expire",
        unit: Unit::Ms,
        default: |_| 5000,
        min: 0,
        max: 3_600_000,
        doc: "Deadline of a write after insertion (5*HZ).",
    },
    TunableDef {
        name: "iosched/deadline/fifo_batch",
        unit: Unit::Count,
        default: |_| 16,
        min: 1,
        max: 1 << 20,
        doc: "Requests dispatched in one sector-sorted batch before deadlines are checked; \
              trades latency for throughput.",
    },
    TunableDef {
        name: "iosched/deadline/writes_starved",
        unit: Unit::Count,
        default: |_| 2,
        min: 0,
        max: 1 << 20,
        doc: "How many times reads may be preferred over waiting writes.",
    },
    TunableDef {
        name: "iosched/deadline/front_merges",
        unit: Unit::Bool,
        default: |_| 1,
        min: 0,
        max: 1,
        doc: "Look up front merges in the sector tree.",
    },
];

#[derive(Clone, Debug)]
pub struct DeadlineConfig {
    /// Expiry per direction in jiffies (index 0 = read, 1 = write).
    pub fifo_expire: [u64; 2],
    pub fifo_batch: u32,
    pub writes_starved: u32,
    pub front_merges: bool,
    pub hz: u64,
}

impl DeadlineConfig {
    pub fn from_tunables(t: &Tunables) -> Self {
        let hz = t.get_u64("kernel/hz");
        // msecs_to_jiffies, rounding up as the kernel does.
        let j = |ms: u64| (ms * hz).div_ceil(1000);
        DeadlineConfig {
            fifo_expire: [
                j(t.get_u64("iosched/deadline/read_expire")),
                j(t.get_u64("iosched/deadline/write_expire")),
            ],
            fifo_batch: t.get_u64("iosched/deadline/fifo_batch") as u32,
            writes_starved: t.get_u64("iosched/deadline/writes_starved") as u32,
            front_merges: t.get_bool("iosched/deadline/front_merges"),
            hz,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct DlRq {
    /// Sector under which the request sits in the sort tree.
    key: Sector,
    /// Position in the FIFO (insertion order).
    fifo_seq: u64,
    /// `rq_fifo_time`: jiffies at which the request expires.
    expire: u64,
    dir: usize,
}

pub struct Deadline {
    cfg: DeadlineConfig,
    sort_list: [ElvRb; 2],
    fifo_list: [BTreeSet<(u64, RqId)>; 2],
    next_rq: [Option<RqId>; 2],
    batching: u32,
    starved: u32,
    fifo_seq: u64,
    per_rq: Vec<Option<DlRq>>,
}

impl Deadline {
    pub fn new(cfg: DeadlineConfig) -> Self {
        Deadline {
            cfg,
            sort_list: [ElvRb::new(), ElvRb::new()],
            fifo_list: [BTreeSet::new(), BTreeSet::new()],
            next_rq: [None, None],
            batching: 0,
            starved: 0,
            fifo_seq: 0,
            per_rq: Vec::new(),
        }
    }

    fn d(&self, rq: RqId) -> DlRq {
        self.per_rq[rq.0 as usize].expect("request not in deadline")
    }

    /// `deadline_latter_request`: next in sector order.
    fn latter(&self, rq: RqId) -> Option<RqId> {
        let d = self.d(rq);
        self.sort_list[d.dir].latter(d.key, rq)
    }

    /// `deadline_remove_request`.
    fn remove(&mut self, rq: RqId) {
        let d = self.d(rq);
        if self.next_rq[d.dir] == Some(rq) {
            self.next_rq[d.dir] = self.latter(rq);
        }
        self.sort_list[d.dir].del(d.key, rq);
        assert!(self.fifo_list[d.dir].remove(&(d.fifo_seq, rq)));
        self.per_rq[rq.0 as usize] = None;
    }

    /// `deadline_check_fifo`: has the oldest request of `dir` expired?
    fn check_fifo(&self, dir: usize, jiffies: u64) -> bool {
        match self.fifo_list[dir].first() {
            Some(&(_, rq)) => jiffies > self.d(rq).expire,
            None => false,
        }
    }
}

impl Elevator for Deadline {
    fn name(&self) -> &'static str {
        "deadline"
    }

    fn has_timer(&self) -> bool {
        false
    }

    /// `deadline_merge`: a front merge candidate starting at the bio's end.
    fn merge(&mut self, _rqs: &RequestPool, bio: &Bio) -> Option<RqId> {
        if !self.cfg.front_merges {
            return None;
        }
        let dir = bio.flags.is_write() as usize;
        self.sort_list[dir].find(bio.end_sector())
    }

    /// `deadline_merged_request`: a front merge moved the start; re-sort.
    fn merged(&mut self, rqs: &RequestPool, rq: RqId, kind: MergeKind) {
        if kind == MergeKind::Front {
            let mut d = self.d(rq);
            let key = rqs.get(rq).sector;
            self.sort_list[d.dir].rekey(d.key, key, rq);
            d.key = key;
            self.per_rq[rq.0 as usize] = Some(d);
        }
    }

    /// `deadline_merged_requests`: `rq` inherits `next`'s FIFO place if older.
    fn merged_requests(&mut self, _rqs: &mut RequestPool, rq: RqId, next: RqId) {
        let mut d = self.d(rq);
        let n = self.d(next);
        if n.expire < d.expire {
            assert!(self.fifo_list[d.dir].remove(&(d.fifo_seq, rq)));
            // list_move(&req->queuelist, &next->queuelist): req takes next's place.
            d.fifo_seq = n.fifo_seq;
            d.expire = n.expire;
            self.per_rq[rq.0 as usize] = Some(d);
            self.remove(next);
            self.fifo_list[d.dir].insert((d.fifo_seq, rq));
        } else {
            self.remove(next);
        }
    }

    /// `deadline_add_request`: into the sort tree and at the FIFO tail with its
    /// expiry. (The kernel dispatches an alias with the same start sector at once;
    /// here aliases coexist in the tree, ordered by request id.)
    fn add_request(&mut self, ctx: &mut ElvCtx, rqs: &mut RequestPool, rq: RqId) {
        let r = rqs.get(rq);
        let dir = r.is_write() as usize;
        let jiffies = ctx.now.as_ns() * self.cfg.hz / 1_000_000_000;
        let d = DlRq {
            key: r.sector,
            fifo_seq: self.fifo_seq,
            expire: jiffies + self.cfg.fifo_expire[dir],
            dir,
        };
        self.fifo_seq += 1;
        let i = rq.0 as usize;
        if self.per_rq.len() <= i {
            self.per_rq.resize(i + 1, None);
        }
        assert!(self.per_rq[i].is_none());
        self.per_rq[i] = Some(d);
        self.sort_list[dir].add(d.key, rq);
        self.fifo_list[dir].insert((d.fifo_seq, rq));
    }

    /// `deadline_dispatch_requests`.
    fn dispatch(
        &mut self,
        ctx: &mut ElvCtx,
        _rqs: &RequestPool,
        _force: bool,
    ) -> Option<(RqId, Placement)> {
        let reads = !self.fifo_list[0].is_empty();
        let writes = !self.fifo_list[1].is_empty();
        let jiffies = ctx.now.as_ns() * self.cfg.hz / 1_000_000_000;

        // Continue the current batch?
        let batch_rq = self.next_rq[1].or(self.next_rq[0]);
        let rq = match batch_rq {
            Some(rq) if self.batching < self.cfg.fifo_batch => rq,
            _ => {
                let dir = if reads {
                    let starved = self.starved;
                    self.starved += 1;
                    if writes && starved >= self.cfg.writes_starved {
                        self.starved = 0;
                        1
                    } else {
                        0
                    }
                } else if writes {
                    self.starved = 0;
                    1
                } else {
                    return None;
                };
                // dispatch_find_request
                let rq = if self.check_fifo(dir, jiffies) || self.next_rq[dir].is_none() {
                    self.fifo_list[dir].first().expect("non-empty fifo").1
                } else {
                    self.next_rq[dir].expect("checked")
                };
                self.batching = 0;
                rq
            }
        };
        // dispatch_request → deadline_move_request
        self.batching += 1;
        let dir = self.d(rq).dir;
        self.next_rq = [None, None];
        self.next_rq[dir] = self.latter(rq);
        self.remove(rq);
        Some((rq, Placement::Tail))
    }

    fn queue_empty(&self) -> bool {
        self.fifo_list[0].is_empty() && self.fifo_list[1].is_empty()
    }

    fn former_request(&self, _rqs: &RequestPool, rq: RqId) -> Option<RqId> {
        let d = self.d(rq);
        self.sort_list[d.dir].former(d.key, rq)
    }

    fn latter_request(&self, _rqs: &RequestPool, rq: RqId) -> Option<RqId> {
        self.latter(rq)
    }

    fn queued(&self) -> usize {
        self.fifo_list[0].len() + self.fifo_list[1].len()
    }
}
