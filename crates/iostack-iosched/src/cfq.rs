//! CFQ, the completely fair queueing scheduler (`block/cfq-iosched.c`), in three
//! flavours selected by `iosched/cfq/version`:
//!
//! * **2.6.32** (V2632): one service tree of busy queues ordered by class then
//!   `rb_key`; seek statistics and think time per process (`cfq_io_context`);
//!   the idle timer is armed after a sync, non-`REQ_NOIDLE` completion empties
//!   the active queue.
//! * **2.6.33** (2.6.33 to 2.6.36): per-class service trees split by workload
//!   (ASYNC / SYNC_NOIDLE / SYNC) under a single root group, workload slices
//!   scaled to the 300 ms target latency, `low_latency` per-queue slice
//!   scaling, "idle at the end of the tree" and `noidle_tree_requires_idle`.
//! * **2.6.37**: a queue whose next request carries `REQ_NOIDLE` loses its idle
//!   window (and so moves to the SYNC_NOIDLE tree), completions always try to
//!   arm the idle timer, seeky detection by a 32-request history, `group_idle`,
//!   and the 2.6.34+ `cfq_may_dispatch` depth rules.
//!
//! Per-process sync queues are keyed by pid; async queues are shared per
//! (class, level). All times are integer jiffies at `kernel/hz`.

use crate::elv_rb::ElvRb;
use iostack_block::{Bio, Elevator, ElvCtx, MayQueue, MergeKind, Placement, RequestPool, RqId};
use iostack_core::{Profile, ReqFlags, Sector, TunableDef, Tunables, Unit};
use iostack_des::Instant;
use std::collections::{BTreeMap, BTreeSet};

pub const VERSIONS: &[&str] = &["2.6.32", "2.6.33", "2.6.37", "for-2.6.33"];

pub static TUNABLES: &[TunableDef] = &[
    TunableDef {
        name: "iosched/cfq/version",
        unit: Unit::Enum(VERSIONS),
        default: |p| {
            if p <= Profile::V2_6_32 {
                0
            } else if p == Profile::V2_6_33 {
                1
            } else {
                2
            }
        },
        min: 0,
        max: 3,
        doc: "Which CFQ algorithm: 2.6.32 (single service tree, per-process seek \
              statistics), 2.6.33 (2.6.33-2.6.36 workload trees and target latency), \
              2.6.37 (REQ_NOIDLE moves a queue to the no-idle tree), or for-2.6.33 (the \
              block for-2.6.33 branch of November 2009, at the parent of d9449ce35a1: \
              workload trees, but a completion still arms the idle timer only if \
              sync && !rq_noidle(rq), as in 2.6.32).",
    },
    TunableDef {
        name: "iosched/cfq/quantum",
        unit: Unit::Count,
        default: |p| if p <= Profile::V2_6_33 { 4 } else { 8 },
        min: 1,
        max: 1 << 16,
        doc: "cfq_quantum: requests a queue may have in flight while others are busy \
              (4 up to 2.6.33, 8 from 2.6.34, where quantum/2 is the normal limit).",
    },
    TunableDef {
        name: "iosched/cfq/fifo_expire_sync",
        unit: Unit::Ms,
        default: |_| 125,
        min: 0,
        max: 3_600_000,
        doc: "cfq_fifo_expire[1] = HZ/8: age after which a sync request is served from \
              the FIFO head at the next slice start.",
    },
    TunableDef {
        name: "iosched/cfq/fifo_expire_async",
        unit: Unit::Ms,
        default: |_| 250,
        min: 0,
        max: 3_600_000,
        doc: "cfq_fifo_expire[0] = HZ/4: the same for async requests.",
    },
    TunableDef {
        name: "iosched/cfq/back_seek_max",
        unit: Unit::KiB,
        default: |_| 16 * 1024,
        min: 0,
        max: 1 << 30,
        doc: "cfq_back_max: how far behind the head a request may be and still be \
              chosen (with a penalty) instead of wrapping.",
    },
    TunableDef {
        name: "iosched/cfq/back_seek_penalty",
        unit: Unit::Count,
        default: |_| 2,
        min: 1,
        max: 1 << 16,
        doc: "cfq_back_penalty: a backward seek counts this many times its distance.",
    },
    TunableDef {
        name: "iosched/cfq/slice_sync",
        unit: Unit::Ms,
        default: |_| 100,
        min: 1,
        max: 3_600_000,
        doc: "cfq_slice[1] = HZ/10: base time slice of a sync queue (prio 4).",
    },
    TunableDef {
        name: "iosched/cfq/slice_async",
        unit: Unit::Ms,
        default: |_| 40,
        min: 1,
        max: 3_600_000,
        doc: "cfq_slice[0] = HZ/25: base time slice of an async queue (prio 4).",
    },
    TunableDef {
        name: "iosched/cfq/slice_async_rq",
        unit: Unit::Count,
        default: |_| 2,
        min: 1,
        max: 1 << 16,
        doc: "cfq_slice_async_rq: base of the per-slice request cap of an async queue \
              (2*(rq + rq*(7-prio))).",
    },
    TunableDef {
        name: "iosched/cfq/slice_idle",
        unit: Unit::Ms,
        default: |_| 8,
        min: 0,
        max: 3_600_000,
        doc: "cfq_slice_idle = HZ/125 (at least one jiffy by default): how long an \
              emptied sync queue waits for its next request.",
    },
    TunableDef {
        name: "iosched/cfq/group_idle",
        unit: Unit::Ms,
        default: |_| 8,
        min: 0,
        max: 3_600_000,
        doc: "cfq_group_idle = HZ/125 (2.6.36+; used with version 2.6.37): idle on the \
              last queue of a group when queue idling is off.",
    },
    TunableDef {
        name: "iosched/cfq/low_latency",
        unit: Unit::Bool,
        default: |_| 1,
        min: 0,
        max: 1,
        doc: "cfq_latency: throttle async dispatch after sync I/O and (2.6.33+) scale \
              slices to the 300 ms target latency.",
    },
    TunableDef {
        name: "iosched/cfq/yield",
        unit: Unit::Bool,
        default: |_| 0,
        min: 0,
        max: 1,
        doc: "Jeff Moyer's blk_yield series (v4, April 2010; never merged): the \
              sync-noidle tree's average think time (PATCH 1/4: its last queue is not \
              idled on when the tree's think time exceeds slice_idle), \
              elevator_yield_fn in CFQ (cfq_yield marks the caller's active sync queue \
              to yield to a task; cfq_select_queue expires it once it has nothing \
              queued and serves that task's queue), called from jbd's and jbd2's \
              log_wait_commit with the journal thread. 0: vanilla.",
    },
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CfqVersion {
    V2632,
    /// 2.6.33 to 2.6.36.
    V2633,
    V2637,
}

#[derive(Clone, Debug)]
pub struct CfqConfig {
    pub version: CfqVersion,
    /// for-2.6.33 before d9449ce35a1: the 2.6.33 trees with 2.6.32's completion
    /// rule (no idle timer after a REQ_NOIDLE completion).
    pub noidle_blocks_idle: bool,
    pub hz: u64,
    pub quantum: u32,
    /// Index 0 async, 1 sync, as `cfq_fifo_expire[rq_is_sync]`; jiffies.
    pub fifo_expire: [i64; 2],
    /// KiB.
    pub back_max: u64,
    pub back_penalty: u64,
    /// Index 0 async, 1 sync; jiffies.
    pub slice: [i64; 2],
    pub slice_async_rq: i64,
    pub slice_idle: i64,
    pub group_idle: i64,
    pub latency: bool,
    /// The blk_yield series (`iosched/cfq/yield`).
    pub yield_: bool,
}

impl CfqConfig {
    pub fn from_tunables(t: &Tunables) -> Self {
        let hz = t.get_u64("kernel/hz");
        // The kernel's defaults are HZ fractions (HZ/8, HZ/125...); a value written
        // through sysfs goes through msecs_to_jiffies (rounding up). At the
        // default the HZ fraction is used, so HZ=250 gives fifo_expire_sync 31.
        let j = |name: &str, div: u64| -> i64 {
            let ms = t.get_u64(name);
            if ms * div == 1000 {
                (hz / div) as i64
            } else {
                (ms * hz).div_ceil(1000) as i64
            }
        };
        let version = match t.get_enum("iosched/cfq/version") {
            "2.6.32" => CfqVersion::V2632,
            "2.6.33" | "for-2.6.33" => CfqVersion::V2633,
            _ => CfqVersion::V2637,
        };
        let noidle_blocks_idle = t.get_enum("iosched/cfq/version") == "for-2.6.33";
        let mut slice_idle = j("iosched/cfq/slice_idle", 125);
        let mut group_idle = j("iosched/cfq/group_idle", 125);
        // cfq_init: "if (!cfq_slice_idle) cfq_slice_idle = 1" for a zero HZ/125.
        if slice_idle == 0 && t.get_u64("iosched/cfq/slice_idle") != 0 {
            slice_idle = 1;
        }
        if group_idle == 0 && t.get_u64("iosched/cfq/group_idle") != 0 {
            group_idle = 1;
        }
        CfqConfig {
            version,
            noidle_blocks_idle,
            hz,
            quantum: t.get_u64("iosched/cfq/quantum") as u32,
            fifo_expire: [
                j("iosched/cfq/fifo_expire_async", 4),
                j("iosched/cfq/fifo_expire_sync", 8),
            ],
            back_max: t.get_u64("iosched/cfq/back_seek_max"),
            back_penalty: t.get_u64("iosched/cfq/back_seek_penalty"),
            slice: [
                j("iosched/cfq/slice_async", 25),
                j("iosched/cfq/slice_sync", 10),
            ],
            slice_async_rq: t.get_u64("iosched/cfq/slice_async_rq") as i64,
            slice_idle,
            group_idle,
            latency: t.get_bool("iosched/cfq/low_latency"),
            yield_: t.get_bool("iosched/cfq/yield"),
        }
    }
}

const CFQ_HW_QUEUE_MIN: u32 = 5;
const CFQ_MIN_TT_MS: i64 = 2;
/// 2.6.32/2.6.33: seeky when the mean seek distance exceeds this (sectors).
const CFQQ_SEEK_THR_MEAN: u64 = 8 * 1024;
/// 2.6.34+: a request is seeky past this distance (sectors).
const CFQQ_SEEK_THR: u64 = 8 * 100;
const CFQQ_SECT_THR_NONROT: u32 = 2 * 32;
const CFQQ_CLOSE_THR: u64 = 8 * 1024;

const IOPRIO_CLASS_RT: u8 = 1;
const IOPRIO_CLASS_BE: u8 = 2;
const IOPRIO_CLASS_IDLE: u8 = 3;

/// `enum wl_type_t`.
const ASYNC_WORKLOAD: usize = 0;
const SYNC_NOIDLE_WORKLOAD: usize = 1;
const SYNC_WORKLOAD: usize = 2;
/// `enum wl_prio_t`.
const BE_WORKLOAD: usize = 0;
const RT_WORKLOAD: usize = 1;
const IDLE_WORKLOAD: usize = 2;

fn sample_valid(n: u64) -> bool {
    n > 80
}

/// Key of a queue in a service tree: (class rank, rb_key, insertion sequence, queue).
type StKey = (u8, i64, u64, usize);

#[derive(Clone, Debug, Default)]
struct Cfqq {
    /// `cfqq->pid`: the process that created the queue.
    pid: u32,
    sync: bool,
    class: u8,
    prio: u8,
    sort_list: ElvRb,
    fifo: BTreeSet<(u64, RqId)>,
    next_rq: Option<RqId>,
    queued: [u32; 2],
    dispatched: u32,
    meta_pending: u32,
    on_rr: bool,
    /// Service tree and key, when on one.
    st: Option<(usize, StKey)>,
    rb_key: i64,
    slice_end: i64,
    slice_resid: i64,
    slice_dispatch: u32,
    // Flags (`enum cfqq_state_flags`).
    wait_request: bool,
    must_dispatch: bool,
    must_alloc_slice: bool,
    fifo_expire: bool,
    idle_window: bool,
    slice_new: bool,
    deep: bool,
    // Seek statistics of the queue (2.6.33+).
    last_request_pos: Sector,
    seek: SeekStat,
    seek_history: u32,
    /// `cfq_cfqq_yield` with `cfqq->yield_to`: the pid to yield to (the
    /// blk_yield series).
    yield_to: Option<u32>,
}

#[derive(Clone, Copy, Debug, Default)]
struct SeekStat {
    samples: u64,
    total: u64,
    mean: u64,
}

impl SeekStat {
    /// `cfq_update_io_seektime` (2.6.32/2.6.33 EWMA).
    fn update(&mut self, last_pos: Sector, pos: Sector) {
        let mut sdist = if last_pos == 0 {
            0
        } else {
            last_pos.abs_diff(pos)
        };
        if self.samples <= 60 {
            sdist = sdist.min(self.mean * 4 + 2 * 1024 * 1024);
        } else {
            sdist = sdist.min(self.mean * 4 + 2 * 1024 * 64);
        }
        self.samples = (7 * self.samples + 256) / 8;
        self.total = (7 * self.total + 256 * sdist) / 8;
        self.mean = (self.total + self.samples / 2) / self.samples;
    }
    fn seeky(&self) -> bool {
        self.mean > CFQQ_SEEK_THR_MEAN
    }
}

/// `struct cfq_io_context`: per process.
#[derive(Clone, Debug, Default)]
struct Cic {
    sync_q: Option<usize>,
    last_end_request: i64,
    ttime_samples: u64,
    ttime_total: u64,
    ttime_mean: u64,
    // 2.6.32 per-process seek statistics.
    last_request_pos: Sector,
    seek: SeekStat,
}

/// A service tree's think time (the blk_yield series' PATCH 1/4, "cfq-iosched:
/// Keep track of average think time for the sync-noidle workload", v4, April
/// 2010). The patch text was not found; what it does is assumed from its
/// title and from the per-service-tree think time merged later (Linux 3.3,
/// `cfq_rb_root.ttime`): `__cfq_update_io_thinktime` over the tree's sync
/// requests (the time from the tree's last sync completion to a request's
/// arrival, capped at `2 * slice_idle`, the same 7/8 decay as a process's),
/// and `cfq_should_idle` keeps the last-queue-in-its-tree idle only while
/// `cfq_io_thinktime_big` is false. Kept for the sync-noidle tree only, as the
/// title says.
#[derive(Clone, Copy, Debug, Default)]
struct TreeTtime {
    last_end_request: i64,
    samples: u64,
    total: u64,
    mean: u64,
}

#[derive(Clone, Copy, Debug)]
struct CfqRq {
    q: usize,
    /// The sector the request is filed under in its queue's sort list (a front
    /// merge moves `rq.sector` before the re-sort, as the rb-tree node stays put).
    key: Sector,
    fifo_seq: u64,
    /// `rq_fifo_time` (2.6.33+) or `rq->start_time + fifo_expire` (2.6.32), jiffies.
    fifo_time: i64,
    pid: u32,
}

pub struct Cfq {
    cfg: CfqConfig,
    nonrot: bool,
    queues: Vec<Cfqq>,
    cics: BTreeMap<u32, Cic>,
    /// `async_cfqq[class][prio]` and `async_idle_cfqq`, keyed by (class, prio).
    async_q: BTreeMap<(u8, u8), usize>,
    per_rq: Vec<Option<CfqRq>>,
    /// 2.6.32: one tree (index 0). 2.6.33+: [BE|RT] x [ASYNC|SYNC_NOIDLE|SYNC] at
    /// `prio*3 + type`, and the idle tree at 6.
    trees: [BTreeSet<StKey>; 7],
    /// Each tree's think time (`TreeTtime`), kept with `iosched/cfq/yield`.
    tree_ttime: [TreeTtime; 7],
    st_seq: u64,
    fifo_seq: u64,
    active: Option<usize>,
    active_cic: Option<u32>,
    busy_queues: u32,
    rq_queued: u32,
    /// `rq_in_driver[sync]` (activated, not completed).
    rq_in_driver: [u32; 2],
    /// `sync_flight` / `rq_in_flight[sync]` (dispatched, not completed).
    rq_in_flight: [u32; 2],
    last_position: Sector,
    last_end_sync_rq: i64,
    last_delayed_sync: i64,
    hw_tag: i32,
    hw_tag_samples: u32,
    hw_tag_peak: u32,
    idle_timer: Option<i64>,
    serving_prio: usize,
    serving_type: usize,
    workload_expires: i64,
    noidle_tree_requires_idle: bool,
    busy_queues_avg: [u32; 2],
}

impl Cfq {
    pub fn new(cfg: CfqConfig) -> Self {
        let v2632 = cfg.version == CfqVersion::V2632;
        let hz = cfg.hz as i64;
        Cfq {
            cfg,
            nonrot: false,
            queues: Vec::new(),
            cics: BTreeMap::new(),
            async_q: BTreeMap::new(),
            per_rq: Vec::new(),
            trees: Default::default(),
            tree_ttime: Default::default(),
            st_seq: 0,
            fifo_seq: 0,
            active: None,
            active_cic: None,
            busy_queues: 0,
            rq_queued: 0,
            rq_in_driver: [0; 2],
            rq_in_flight: [0; 2],
            last_position: 0,
            last_end_sync_rq: 0,
            last_delayed_sync: -hz,
            // 1 in 2.6.32; -1 ("unknown", treated as tagged) from 2.6.33.
            hw_tag: if v2632 { 1 } else { -1 },
            hw_tag_samples: 0,
            hw_tag_peak: 0,
            idle_timer: None,
            serving_prio: BE_WORKLOAD,
            serving_type: SYNC_NOIDLE_WORKLOAD,
            workload_expires: 0,
            noidle_tree_requires_idle: false,
            busy_queues_avg: [0; 2],
        }
    }

    fn v(&self) -> CfqVersion {
        self.cfg.version
    }
    fn jiffies(&self, now: Instant) -> i64 {
        (now.as_ns() * self.cfg.hz / 1_000_000_000) as i64
    }
    fn msecs_to_jiffies(&self, ms: i64) -> i64 {
        (ms * self.cfg.hz as i64 + 999) / 1000
    }
    fn rq(&self, rq: RqId) -> CfqRq {
        self.per_rq[rq.0 as usize].expect("request not in cfq")
    }

    /// `cfq_log_cfqq`: "cfq%d " (2.6.32) or "cfq%d%c " (2.6.33+, S/A).
    fn log(&self, ctx: &mut ElvCtx, q: usize, msg: std::fmt::Arguments) {
        if !ctx.trace {
            return;
        }
        let c = &self.queues[q];
        if self.v() == CfqVersion::V2632 {
            ctx.msgs.push(format!("cfq{} {msg}", c.pid));
        } else {
            let sa = if c.sync { 'S' } else { 'A' };
            ctx.msgs.push(format!("cfq{}{sa} {msg}", c.pid));
        }
    }

    // ------------------------------------------------------------------
    // Priorities and slices.

    fn class_idle(&self, q: usize) -> bool {
        self.queues[q].class == IOPRIO_CLASS_IDLE
    }
    fn class_rt(&self, q: usize) -> bool {
        self.queues[q].class == IOPRIO_CLASS_RT
    }

    /// `cfq_prio_slice`.
    fn prio_slice(&self, sync: bool, prio: u8) -> i64 {
        let base = self.cfg.slice[sync as usize];
        base + base / 5 * (4 - prio as i64)
    }
    /// `cfq_prio_to_slice`.
    fn prio_to_slice(&self, q: usize) -> i64 {
        self.prio_slice(self.queues[q].sync, self.queues[q].prio)
    }
    /// `cfq_prio_to_maxrq`.
    fn prio_to_maxrq(&self, q: usize) -> u32 {
        let base = self.cfg.slice_async_rq;
        (2 * (base + base * (7 - self.queues[q].prio as i64))) as u32
    }

    /// `cfq_slice_used`.
    fn slice_used(&self, q: usize, j: i64) -> bool {
        let c = &self.queues[q];
        !c.slice_new && j >= c.slice_end
    }

    // ------------------------------------------------------------------
    // Queues, io contexts.

    /// `cfq_get_queue` / `cfq_find_alloc_queue` with `cfq_init_prio_data`.
    fn get_queue(&mut self, pid: u32, sync: bool, ioprio: (u8, u8), j: i64) -> usize {
        let (class, prio) = match ioprio.0 {
            IOPRIO_CLASS_RT => (IOPRIO_CLASS_RT, ioprio.1.min(7)),
            IOPRIO_CLASS_IDLE => (IOPRIO_CLASS_IDLE, 7),
            IOPRIO_CLASS_BE => (IOPRIO_CLASS_BE, ioprio.1.min(7)),
            // IOPRIO_CLASS_NONE: task_nice_ioprio of nice 0 = 4, class BE.
            _ => (IOPRIO_CLASS_BE, 4),
        };
        self.cic(pid, j);
        if sync {
            if let Some(q) = self.cics[&pid].sync_q {
                return q;
            }
        } else if let Some(&q) = self.async_q.get(&(class, prio)) {
            return q;
        }
        let q = self.queues.len();
        self.queues.push(Cfqq {
            pid,
            sync,
            class,
            prio,
            // cfq_init_cfqq: sync queues start with an idle window.
            idle_window: sync && class != IOPRIO_CLASS_IDLE,
            ..Default::default()
        });
        if sync {
            self.cics.get_mut(&pid).expect("cic").sync_q = Some(q);
        } else {
            self.async_q.insert((class, prio), q);
        }
        q
    }

    fn cic(&mut self, pid: u32, j: i64) -> &mut Cic {
        self.cics.entry(pid).or_insert_with(|| Cic {
            last_end_request: j,
            ..Default::default()
        })
    }

    /// The queue a bio would go to, if it exists (`cic_to_cfqq`).
    fn bio_queue(&self, bio: &Bio) -> Option<usize> {
        let sync = bio.flags.is_sync();
        if sync {
            self.cics.get(&bio.pid).and_then(|c| c.sync_q)
        } else {
            let key = match bio.ioprio.0 {
                IOPRIO_CLASS_RT => (IOPRIO_CLASS_RT, bio.ioprio.1.min(7)),
                IOPRIO_CLASS_IDLE => (IOPRIO_CLASS_IDLE, 7),
                IOPRIO_CLASS_BE => (IOPRIO_CLASS_BE, bio.ioprio.1.min(7)),
                _ => (IOPRIO_CLASS_BE, 4),
            };
            self.async_q.get(&key).copied()
        }
    }

    fn seeky(&self, q: usize) -> bool {
        match self.v() {
            CfqVersion::V2632 => false,
            CfqVersion::V2633 => {
                let c = &self.queues[q];
                sample_valid(c.seek.samples) && c.seek.seeky()
            }
            CfqVersion::V2637 => self.queues[q].seek_history.count_ones() > 32 / 8,
        }
    }
    /// 2.6.32 `CIC_SEEKY` on the process's statistics, with valid samples.
    fn cic_seeky(&self, pid: u32) -> bool {
        self.cics
            .get(&pid)
            .is_some_and(|c| sample_valid(c.seek.samples) && c.seek.seeky())
    }

    // ------------------------------------------------------------------
    // Service trees.

    /// `cfqq_type`.
    fn cfqq_type(&self, q: usize) -> usize {
        let c = &self.queues[q];
        if !c.sync {
            ASYNC_WORKLOAD
        } else if !c.idle_window {
            SYNC_NOIDLE_WORKLOAD
        } else {
            SYNC_WORKLOAD
        }
    }
    fn wl_prio(&self, q: usize) -> usize {
        match self.queues[q].class {
            IOPRIO_CLASS_RT => RT_WORKLOAD,
            IOPRIO_CLASS_IDLE => IDLE_WORKLOAD,
            _ => BE_WORKLOAD,
        }
    }
    /// `service_tree_for`.
    fn tree_for(prio: usize, wtype: usize) -> usize {
        if prio == IDLE_WORKLOAD {
            6
        } else {
            prio * 3 + wtype
        }
    }
    fn tree_of(&self, q: usize) -> usize {
        if self.v() == CfqVersion::V2632 {
            0
        } else {
            Self::tree_for(self.wl_prio(q), self.cfqq_type(q))
        }
    }
    /// Class rank inside the single 2.6.32 tree: RT, BE, IDLE.
    fn class_rank(&self, q: usize) -> u8 {
        if self.v() != CfqVersion::V2632 {
            return 0;
        }
        match self.queues[q].class {
            IOPRIO_CLASS_RT => 0,
            IOPRIO_CLASS_IDLE => 2,
            _ => 1,
        }
    }

    /// `cfq_service_tree_add`.
    fn service_tree_add(&mut self, q: usize, add_front: bool, j: i64) {
        let tree = self.tree_of(q);
        let rank = self.class_rank(q);
        let rb_key = if self.class_idle(q) {
            // CFQ_IDLE_DELAY after the last queue of the tree.
            let idle_delay = self.cfg.hz as i64 / 5;
            let last = self.trees[tree]
                .iter()
                .rev()
                .find(|k| k.0 == rank && k.3 != q)
                .map(|k| k.1);
            idle_delay + last.unwrap_or(j)
        } else if !add_front {
            // cfq_slice_offset: busy_queues (2.6.32) or cfqg->nr_cfqq (2.6.33+)
            // minus one, times the slice difference to the best sync prio.
            let n = (self.busy_queues as i64 - 1).max(0);
            let off = n
                * (self.prio_slice(true, 0)
                    - self.prio_slice(self.queues[q].sync, self.queues[q].prio));
            let key = off + j + self.queues[q].slice_resid;
            self.queues[q].slice_resid = 0;
            key
        } else {
            let first = self.trees[tree].iter().find(|k| k.0 == rank).map(|k| k.1);
            -(self.cfg.hz as i64) + first.unwrap_or(j)
        };
        if let Some((t, key)) = self.queues[q].st {
            if t == tree && key.1 == rb_key {
                return;
            }
            self.trees[t].remove(&key);
            self.queues[q].st = None;
        }
        let key = (rank, rb_key, self.st_seq, q);
        self.st_seq += 1;
        self.trees[tree].insert(key);
        self.queues[q].st = Some((tree, key));
        self.queues[q].rb_key = rb_key;
    }

    /// `cfq_resort_rr_list`.
    fn resort_rr_list(&mut self, q: usize, j: i64) {
        if self.queues[q].on_rr {
            self.service_tree_add(q, false, j);
        }
    }

    /// `cfq_add_cfqq_rr`.
    fn add_cfqq_rr(&mut self, ctx: &mut ElvCtx, q: usize, j: i64) {
        self.log(ctx, q, format_args!("add_to_rr"));
        self.queues[q].on_rr = true;
        self.busy_queues += 1;
        self.resort_rr_list(q, j);
    }

    /// `cfq_del_cfqq_rr`.
    fn del_cfqq_rr(&mut self, ctx: &mut ElvCtx, q: usize) {
        self.log(ctx, q, format_args!("del_from_rr"));
        self.queues[q].on_rr = false;
        if let Some((t, key)) = self.queues[q].st.take() {
            self.trees[t].remove(&key);
        }
        self.busy_queues -= 1;
    }

    fn busy_queues_wl(&self, prio: usize) -> usize {
        if prio == IDLE_WORKLOAD {
            self.trees[6].len()
        } else {
            (0..3).map(|t| self.trees[prio * 3 + t].len()).sum()
        }
    }

    /// `cfq_group_get_avg_queues`.
    fn group_get_avg_queues(&mut self, rt: bool) -> u32 {
        let busy = self.busy_queues_wl(if rt { RT_WORKLOAD } else { BE_WORKLOAD }) as u32;
        let avg = &mut self.busy_queues_avg[rt as usize];
        let min_q = (*avg).min(busy);
        let max_q = (*avg).max(busy);
        *avg = (3 * max_q + min_q + 2) / 4;
        *avg
    }

    /// `cfq_group_slice`: the whole target latency for the lone root group.
    fn group_slice(&self) -> i64 {
        self.cfg.hz as i64 * 3 / 10
    }

    /// `cfq_choose_wl`: the workload whose first queue has the lowest key.
    fn choose_wl(&self, prio: usize) -> usize {
        let mut best = SYNC_NOIDLE_WORKLOAD;
        let mut lowest: Option<i64> = None;
        for t in [ASYNC_WORKLOAD, SYNC_NOIDLE_WORKLOAD, SYNC_WORKLOAD] {
            if let Some(k) = self.trees[Self::tree_for(prio, t)].first() {
                if lowest.is_none_or(|l| k.1 < l) {
                    lowest = Some(k.1);
                    best = t;
                }
            }
        }
        best
    }

    /// `choose_service_tree` (2.6.33+).
    fn choose_service_tree(&mut self, ctx: &mut ElvCtx, j: i64) {
        if self.busy_queues_wl(RT_WORKLOAD) > 0 {
            self.serving_prio = RT_WORKLOAD;
        } else if self.busy_queues_wl(BE_WORKLOAD) > 0 {
            self.serving_prio = BE_WORKLOAD;
        } else {
            self.serving_prio = IDLE_WORKLOAD;
            self.workload_expires = j + 1;
            return;
        }
        let count = self.trees[Self::tree_for(self.serving_prio, self.serving_type)].len();
        if count > 0 && j <= self.workload_expires {
            return;
        }
        self.serving_type = self.choose_wl(self.serving_prio);
        let count = self.trees[Self::tree_for(self.serving_prio, self.serving_type)].len() as i64;
        let prio = self.serving_prio;
        let busy_wl = self.busy_queues_wl(prio) as i64;
        let avg = self.busy_queues_avg[prio] as i64;
        let mut slice = self.group_slice() * count / avg.max(busy_wl).max(1);
        if self.serving_type == ASYNC_WORKLOAD {
            let async_q = (self.trees[Self::tree_for(BE_WORKLOAD, ASYNC_WORKLOAD)].len()
                + self.trees[Self::tree_for(RT_WORKLOAD, ASYNC_WORKLOAD)].len())
                as i64;
            let tmp = self.group_slice() * async_q / (self.busy_queues as i64).max(1);
            slice = slice.min(tmp);
            slice = slice * self.cfg.slice[0] / self.cfg.slice[1];
        } else {
            slice = slice.max(2 * self.cfg.slice_idle);
        }
        // CFQ_MIN_TT in raw jiffies here.
        slice = slice.max(2);
        ctx.msg(format_args!("cfq workload slice:{slice}"));
        self.workload_expires = j + slice;
        self.noidle_tree_requires_idle = false;
    }

    /// `cfq_get_next_queue`.
    fn get_next_queue(&self) -> Option<usize> {
        if self.rq_queued == 0 && self.v() != CfqVersion::V2632 {
            return None;
        }
        let tree = if self.v() == CfqVersion::V2632 {
            0
        } else {
            Self::tree_for(self.serving_prio, self.serving_type)
        };
        self.trees[tree].first().map(|k| k.3)
    }

    // ------------------------------------------------------------------
    // Slices.

    /// `__cfq_set_active_queue`.
    fn set_active_queue(&mut self, ctx: &mut ElvCtx, q: Option<usize>) {
        if let Some(q) = q {
            self.log(ctx, q, format_args!("set_active"));
            let c = &mut self.queues[q];
            c.slice_end = 0;
            c.slice_dispatch = 0;
            c.wait_request = false;
            c.must_dispatch = false;
            c.must_alloc_slice = false;
            c.fifo_expire = false;
            c.slice_new = true;
            self.idle_timer = None;
        }
        self.active = q;
    }

    /// `cfq_set_prio_slice`.
    fn set_prio_slice(&mut self, ctx: &mut ElvCtx, q: usize, j: i64) {
        let mut slice = self.prio_to_slice(q);
        if self.v() != CfqVersion::V2632 && self.cfg.latency {
            let iq = self.group_get_avg_queues(self.class_rt(q)) as i64;
            let sync_slice = self.cfg.slice[1];
            let expect_latency = sync_slice * iq;
            let group_slice = self.group_slice();
            if expect_latency > group_slice {
                let base_low_slice = 2 * self.cfg.slice_idle;
                let low_slice = slice.min(base_low_slice * slice / sync_slice);
                slice = (slice * group_slice / expect_latency).max(low_slice);
            }
        }
        self.queues[q].slice_end = j + slice;
        self.log(ctx, q, format_args!("set_slice={slice}"));
    }

    /// `__cfq_slice_expired` on the active queue.
    fn slice_expired(&mut self, ctx: &mut ElvCtx, timed_out: bool, j: i64) {
        let Some(q) = self.active else {
            return;
        };
        self.log(ctx, q, format_args!("slice expired t={}", timed_out as u8));
        self.queues[q].yield_to = None;
        if self.queues[q].wait_request {
            self.idle_timer = None;
        }
        self.queues[q].wait_request = false;
        if timed_out && !self.queues[q].slice_new {
            let resid = self.queues[q].slice_end - j;
            self.queues[q].slice_resid = resid;
            self.log(ctx, q, format_args!("resid={resid}"));
        }
        if self.v() != CfqVersion::V2632
            && self.queues[q].on_rr
            && self.queues[q].sort_list.is_empty()
        {
            self.del_cfqq_rr(ctx, q);
        }
        self.resort_rr_list(q, j);
        self.active = None;
        self.active_cic = None;
    }

    /// `cfq_should_idle` (2.6.33+; 2.6.32 tests the idle window only).
    fn should_idle(&self, q: usize) -> bool {
        if self.v() == CfqVersion::V2632 {
            return self.queues[q].idle_window;
        }
        if self.class_idle(q) {
            return false;
        }
        if self.v() == CfqVersion::V2637 && self.cfg.slice_idle == 0 {
            return false;
        }
        let tagged_ssd = self.nonrot && self.hw_tag != 0;
        if self.queues[q].idle_window && !(self.v() == CfqVersion::V2637 && tagged_ssd) {
            return true;
        }
        let count = self.queues[q].st.map_or(0, |(t, _)| self.trees[t].len());
        let last = if self.v() == CfqVersion::V2637 {
            count == 1 && self.queues[q].sync
        } else {
            count == 1
        };
        // PATCH 1/4: not when the sync-noidle workload's think time is big.
        last && !self.tree_thinktime_big(q)
    }

    /// The sync-noidle tree `q` is on, when its think time is kept (the
    /// blk_yield series, 2.6.33+ trees).
    fn noidle_tree(&self, q: usize) -> Option<usize> {
        if !self.cfg.yield_ || self.v() == CfqVersion::V2632 || !self.queues[q].sync {
            return None;
        }
        let t = self.queues[q]
            .st
            .map_or_else(|| self.tree_of(q), |(t, _)| t);
        (t != 6 && t % 3 == SYNC_NOIDLE_WORKLOAD).then_some(t)
    }

    /// `cfq_io_thinktime_big(cfqd, &st->ttime, false)` (3.3's form).
    fn tree_thinktime_big(&self, q: usize) -> bool {
        self.noidle_tree(q).is_some_and(|t| {
            let tt = &self.tree_ttime[t];
            sample_valid(tt.samples) && tt.mean as i64 > self.cfg.slice_idle
        })
    }

    /// `__cfq_update_io_thinktime(&cfqq->service_tree->ttime, slice_idle)`.
    fn update_tree_thinktime(&mut self, q: usize, j: i64) {
        let Some(t) = self.noidle_tree(q) else {
            return;
        };
        let slice_idle = self.cfg.slice_idle;
        let tt = &mut self.tree_ttime[t];
        let ttime = (j - tt.last_end_request).clamp(0, 2 * slice_idle) as u64;
        tt.samples = (7 * tt.samples + 256) / 8;
        tt.total = (7 * tt.total + 256 * ttime) / 8;
        tt.mean = (tt.total + 128) / tt.samples;
    }

    /// `cfq_select_queue`.
    fn select_queue(&mut self, ctx: &mut ElvCtx, j: i64) -> Option<usize> {
        if let Some(q) = self.active {
            if let Some(to) = self.queues[q].yield_to {
                if self.queues[q].sort_list.is_empty() {
                    return self.select_yield(ctx, q, to, j);
                }
            }
            let mut expire = false;
            if self.slice_used(q, j) && !self.queues[q].must_dispatch {
                if self.v() != CfqVersion::V2632
                    && self.busy_queues == 1
                    && self.queues[q].sort_list.is_empty()
                    && self.queues[q].dispatched > 0
                    && self.should_idle(q)
                {
                    return None;
                }
                expire = true;
            }
            if !expire {
                if !self.queues[q].sort_list.is_empty() {
                    return Some(q);
                }
                // Close cooperators are not modelled (cfq_close_cooperator: none).
                let keep_idle = if self.v() == CfqVersion::V2632 {
                    self.queues[q].idle_window
                } else {
                    self.should_idle(q)
                };
                if self.idle_timer.is_some() || (self.queues[q].dispatched > 0 && keep_idle) {
                    return None;
                }
            }
            self.slice_expired(ctx, false, j);
        }
        // new_queue:
        if self.busy_queues == 0 {
            return None;
        }
        if self.v() != CfqVersion::V2632 {
            // cfq_choose_cfqg on the root group: its saved workload state is
            // what serving_type / workload_expires already hold.
            self.choose_service_tree(ctx, j);
        }
        let q = self.get_next_queue();
        self.set_active_queue(ctx, q);
        q
    }

    /// The blk_yield series' branch of `cfq_select_queue`: a queue marked to
    /// yield with nothing queued expires at once, and the task it yields to is
    /// served next if its sync queue is busy (v4: "yielded to a specific
    /// task"); otherwise the next queue as usual.
    fn select_yield(&mut self, ctx: &mut ElvCtx, q: usize, to: u32, j: i64) -> Option<usize> {
        self.log(ctx, q, format_args!("yield to {to}: expire"));
        self.slice_expired(ctx, false, j);
        let target = self.cics.get(&to).and_then(|c| c.sync_q);
        if let Some(tq) = target.filter(|&tq| self.queues[tq].on_rr) {
            if self.v() != CfqVersion::V2632 {
                self.choose_service_tree(ctx, j);
            }
            self.set_active_queue(ctx, Some(tq));
            return Some(tq);
        }
        if self.busy_queues == 0 {
            return None;
        }
        if self.v() != CfqVersion::V2632 {
            self.choose_service_tree(ctx, j);
        }
        let next = self.get_next_queue();
        self.set_active_queue(ctx, next);
        next
    }

    /// `cfq_may_dispatch`.
    fn may_dispatch(&self, q: usize, j: i64) -> bool {
        let c = &self.queues[q];
        let v = self.v();
        // Drain async requests before we start sync IO.
        let drain = match v {
            CfqVersion::V2632 => c.idle_window && self.rq_in_driver[0] > 0,
            CfqVersion::V2633 => self.should_idle(q) && self.rq_in_driver[0] > 0,
            CfqVersion::V2637 => self.should_idle(q) && self.rq_in_flight[0] > 0,
        };
        if drain {
            return false;
        }
        // An async queue waits while sync I/O is in flight.
        if self.rq_in_flight[1] > 0 && !c.sync {
            return false;
        }
        let mut max_dispatch: u32 = if v == CfqVersion::V2637 {
            (self.cfg.quantum / 2).max(1)
        } else {
            self.cfg.quantum
        };
        if self.class_idle(q) {
            max_dispatch = 1;
        }
        if c.dispatched >= max_dispatch {
            if self.class_idle(q) {
                return false;
            }
            match v {
                CfqVersion::V2632 => {
                    if self.busy_queues > 1 {
                        return false;
                    }
                    max_dispatch *= 4;
                }
                CfqVersion::V2633 => {
                    if self.busy_queues > 1 {
                        return false;
                    }
                    max_dispatch = u32::MAX;
                }
                CfqVersion::V2637 => {
                    // cfq_slice_used_soon
                    let used_soon =
                        c.slice_new || j + self.cfg.slice_idle * c.dispatched as i64 > c.slice_end;
                    if self.busy_queues > 1 && used_soon {
                        return false;
                    }
                    max_dispatch = if self.busy_queues == 1 {
                        u32::MAX
                    } else {
                        self.cfg.quantum
                    };
                }
            }
        }
        // Async queues ramp up after sync I/O (low_latency).
        if !c.sync && self.cfg.latency {
            let last = if v == CfqVersion::V2632 {
                self.last_end_sync_rq
            } else {
                self.last_delayed_sync
            };
            let last_sync = (j - last).max(0);
            let mut depth = (last_sync / self.cfg.slice[1]) as u32;
            if depth == 0 && c.dispatched == 0 {
                depth = 1;
            }
            if depth < max_dispatch {
                max_dispatch = depth;
            }
        }
        c.dispatched < max_dispatch
    }

    /// `cfq_check_fifo`: only the first call of a slice looks.
    fn check_fifo(&mut self, ctx: &mut ElvCtx, q: usize, j: i64) -> Option<RqId> {
        if self.queues[q].fifo_expire {
            return None;
        }
        self.queues[q].fifo_expire = true;
        let &(_, rq) = self.queues[q].fifo.first()?;
        if j < self.rq(rq).fifo_time {
            return None;
        }
        self.log(ctx, q, format_args!("fifo expired"));
        Some(rq)
    }

    /// `cfq_choose_req`.
    fn choose_req(
        &self,
        rqs: &RequestPool,
        r1: Option<RqId>,
        r2: Option<RqId>,
        last: Sector,
    ) -> Option<RqId> {
        let (a, b) = match (r1, r2) {
            (None, x) => return x,
            (x, None) => return x,
            (Some(a), Some(b)) if a == b => return Some(b),
            (Some(a), Some(b)) => (a, b),
        };
        let (ra, rb) = (rqs.get(a), rqs.get(b));
        let (sa, sb) = (ra.flags.is_sync(), rb.flags.is_sync());
        if sa != sb {
            return Some(if sa { a } else { b });
        }
        let (ma, mb) = (
            ra.flags.contains(ReqFlags::META),
            rb.flags.contains(ReqFlags::META),
        );
        if ma != mb {
            return Some(if ma { a } else { b });
        }
        let back_max = self.cfg.back_max * 2;
        let dist = |s: Sector| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s + back_max >= last {
                Some((last - s) * self.cfg.back_penalty)
            } else {
                None
            }
        };
        let (s1, s2) = (ra.sector, rb.sector);
        Some(match (dist(s1), dist(s2)) {
            (Some(d1), Some(d2)) => {
                if d1 < d2 || (d1 == d2 && s1 >= s2) {
                    a
                } else {
                    b
                }
            }
            (Some(_), None) => a,
            (None, Some(_)) => b,
            (None, None) => {
                if s1 <= s2 {
                    a
                } else {
                    b
                }
            }
        })
    }

    /// `cfq_find_next_rq`: the best neighbour of `last` in its sort list.
    fn find_next_rq(&self, rqs: &RequestPool, q: usize, last: RqId) -> Option<RqId> {
        let sl = &self.queues[q].sort_list;
        let key = self.rq(last).key;
        let prev = sl.former(key, last);
        let next = sl.latter_or_first(key, last);
        self.choose_req(rqs, next, prev, rqs.get(last).sector)
    }

    /// `cfq_remove_request` (with `cfq_del_rq_rb`).
    fn remove_request(&mut self, ctx: &mut ElvCtx, rqs: &RequestPool, rq: RqId) {
        let d = self.rq(rq);
        let q = d.q;
        if self.queues[q].next_rq == Some(rq) {
            self.queues[q].next_rq = self.find_next_rq(rqs, q, rq);
        }
        let r = rqs.get(rq);
        let c = &mut self.queues[q];
        assert!(c.fifo.remove(&(d.fifo_seq, rq)));
        c.sort_list.del(d.key, rq);
        c.queued[r.flags.is_sync() as usize] -= 1;
        if r.flags.contains(ReqFlags::META) {
            c.meta_pending -= 1;
        }
        let drop_rr = c.on_rr && c.sort_list.is_empty();
        self.rq_queued -= 1;
        // 2.6.32 takes an emptied queue off the tree at once; 2.6.33+ keeps it
        // there until it is expired.
        if self.v() == CfqVersion::V2632 && drop_rr {
            self.del_cfqq_rr(ctx, q);
        }
        self.per_rq[rq.0 as usize] = None;
    }

    /// `cfq_dispatch_insert`.
    fn dispatch_insert(&mut self, ctx: &mut ElvCtx, rqs: &RequestPool, rq: RqId) {
        let q = self.rq(rq).q;
        self.log(ctx, q, format_args!("dispatch_insert"));
        self.queues[q].next_rq = self.find_next_rq(rqs, q, rq);
        self.remove_request(ctx, rqs, rq);
        self.queues[q].dispatched += 1;
        let sync = self.queues[q].sync as usize;
        self.rq_in_flight[sync] += 1;
    }

    /// `cfq_forced_dispatch`, one request per call.
    fn forced_dispatch(&mut self, ctx: &mut ElvCtx, rqs: &RequestPool, j: i64) -> Option<RqId> {
        self.slice_expired(ctx, false, j);
        let q = (0..self.queues.len()).find(|&q| !self.queues[q].sort_list.is_empty())?;
        let rq = self.queues[q].next_rq.expect("non-empty queue has next_rq");
        self.dispatch_insert(ctx, rqs, rq);
        // __cfq_forced_dispatch_cfqq ends in __cfq_slice_expired, which takes
        // a queue it emptied off the service tree (2.6.33+ keeps an emptied
        // queue there only until it is expired).
        let c = &self.queues[q];
        if c.on_rr && c.sort_list.is_empty() {
            self.del_cfqq_rr(ctx, q);
        }
        Some(rq)
    }

    /// `cfq_arm_slice_timer`.
    fn arm_slice_timer(&mut self, ctx: &mut ElvCtx, j: i64) {
        let Some(q) = self.active else {
            return;
        };
        let v = self.v();
        if self.nonrot && self.hw_tag != 0 {
            return;
        }
        let mut group_idle = false;
        match v {
            CfqVersion::V2632 => {
                if self.cfg.slice_idle == 0 || !self.queues[q].idle_window {
                    return;
                }
                if self.rq_in_driver[0] + self.rq_in_driver[1] > 0 {
                    return;
                }
            }
            CfqVersion::V2633 => {
                if self.cfg.slice_idle == 0 || !self.should_idle(q) {
                    return;
                }
                if self.queues[q].dispatched > 0 {
                    return;
                }
            }
            CfqVersion::V2637 => {
                if !self.should_idle(q) {
                    if self.cfg.group_idle > 0 {
                        group_idle = true;
                    } else {
                        return;
                    }
                }
                if self.queues[q].dispatched > 0 {
                    return;
                }
            }
        }
        // The task has exited: processes never exit here, but there must be an
        // active io context (a request of this slice was dispatched).
        let Some(pid) = self.active_cic else {
            return;
        };
        let cic = &self.cics[&pid];
        if sample_valid(cic.ttime_samples) && self.queues[q].slice_end - j < cic.ttime_mean as i64 {
            if v == CfqVersion::V2637 {
                let tt = cic.ttime_mean;
                self.log(ctx, q, format_args!("Not idling. think_time:{tt}"));
            }
            return;
        }
        if group_idle && self.busy_queues > 1 {
            return;
        }
        self.queues[q].wait_request = true;
        let mut sl = if group_idle {
            self.cfg.group_idle
        } else {
            self.cfg.slice_idle
        };
        if v == CfqVersion::V2632 && self.cic_seeky(pid) {
            sl = sl.min(self.msecs_to_jiffies(CFQ_MIN_TT_MS));
        }
        self.idle_timer = Some(j + sl);
        if v == CfqVersion::V2637 {
            self.log(
                ctx,
                q,
                format_args!("arm_idle: {sl} group_idle: {}", group_idle as u8),
            );
        } else {
            self.log(ctx, q, format_args!("arm_idle: {sl}"));
        }
    }

    /// `cfq_update_io_thinktime`.
    fn update_io_thinktime(&mut self, pid: u32, j: i64) {
        let slice_idle = self.cfg.slice_idle;
        let cic = self.cics.get_mut(&pid).expect("cic");
        let elapsed = (j - cic.last_end_request).max(0);
        let ttime = elapsed.min(2 * slice_idle) as u64;
        cic.ttime_samples = (7 * cic.ttime_samples + 256) / 8;
        cic.ttime_total = (7 * cic.ttime_total + 256 * ttime) / 8;
        cic.ttime_mean = (cic.ttime_total + 128) / cic.ttime_samples;
    }

    /// `cfq_update_io_seektime`.
    fn update_io_seektime(&mut self, q: usize, pid: u32, pos: Sector, sectors: u32) {
        match self.v() {
            CfqVersion::V2632 => {
                let cic = self.cics.get_mut(&pid).expect("cic");
                let last = cic.last_request_pos;
                cic.seek.update(last, pos);
            }
            CfqVersion::V2633 => {
                let c = &mut self.queues[q];
                let last = c.last_request_pos;
                c.seek.update(last, pos);
            }
            CfqVersion::V2637 => {
                let nonrot = self.nonrot;
                let c = &mut self.queues[q];
                let sdist = if c.last_request_pos == 0 {
                    0
                } else {
                    c.last_request_pos.abs_diff(pos)
                };
                c.seek_history <<= 1;
                c.seek_history |= if nonrot {
                    (sectors < CFQQ_SECT_THR_NONROT) as u32
                } else {
                    (sdist > CFQQ_SEEK_THR) as u32
                };
            }
        }
    }

    /// `cfq_update_idle_window`.
    fn update_idle_window(&mut self, ctx: &mut ElvCtx, rqs: &RequestPool, q: usize, pid: u32) {
        if !self.queues[q].sync || self.class_idle(q) {
            return;
        }
        let v = self.v();
        if v != CfqVersion::V2632 && self.queues[q].queued[0] + self.queues[q].queued[1] >= 4 {
            self.queues[q].deep = true;
        }
        let old = self.queues[q].idle_window;
        let mut enable = old;
        let cic = &self.cics[&pid];
        let next_noidle = self.queues[q]
            .next_rq
            .is_some_and(|r| rqs.get(r).flags.contains(ReqFlags::NOIDLE));
        // 2.6.37 puts the REQ_NOIDLE test first; the outcome is the same.
        if (v == CfqVersion::V2637 && next_noidle)
            || self.cfg.slice_idle == 0
            || (v == CfqVersion::V2632
                && !self.cfg.latency
                && self.hw_tag != 0
                && self.cic_seeky(pid))
            || (v != CfqVersion::V2632 && !self.queues[q].deep && self.seeky(q))
        {
            enable = false;
        } else if sample_valid(cic.ttime_samples) {
            let mut limit = self.cfg.slice_idle;
            if v == CfqVersion::V2632 && self.cic_seeky(pid) {
                limit = self.msecs_to_jiffies(CFQ_MIN_TT_MS);
            }
            enable = cic.ttime_mean as i64 <= limit;
        }
        if old != enable {
            self.log(ctx, q, format_args!("idle={}", enable as u8));
            self.queues[q].idle_window = enable;
        }
    }

    /// `cfq_rq_close`.
    fn rq_close(&self, rq_sector: Sector) -> bool {
        let dist = self.last_position.abs_diff(rq_sector);
        let thr = match self.v() {
            CfqVersion::V2632 => {
                let cic = self.active_cic.and_then(|p| self.cics.get(&p));
                match cic {
                    Some(c) if sample_valid(c.seek.samples) => c.seek.mean,
                    _ => CFQQ_SEEK_THR_MEAN,
                }
            }
            CfqVersion::V2633 => {
                let a = self.active.map(|q| &self.queues[q]);
                match a {
                    Some(c) if sample_valid(c.seek.samples) => c.seek.mean,
                    _ => CFQQ_SEEK_THR_MEAN,
                }
            }
            CfqVersion::V2637 => CFQQ_CLOSE_THR,
        };
        dist <= thr
    }

    /// `cfq_should_preempt`: may `new` take the disk from the active queue?
    fn should_preempt(&self, new: usize, rqs: &RequestPool, rq: RqId, j: i64) -> bool {
        let Some(a) = self.active else {
            return false;
        };
        let r = rqs.get(rq);
        let sync = r.flags.is_sync();
        let meta = r.flags.contains(ReqFlags::META);
        if self.v() == CfqVersion::V2632 {
            if self.slice_used(a, j) {
                return true;
            }
            if self.class_idle(new) {
                return false;
            }
            if self.class_idle(a) {
                return true;
            }
            if sync && !self.queues[a].sync {
                return true;
            }
            if meta && self.queues[a].meta_pending == 0 {
                return true;
            }
            if self.class_rt(new) && !self.class_rt(a) {
                return true;
            }
        } else {
            if self.class_idle(new) {
                return false;
            }
            if self.class_idle(a) {
                return true;
            }
            if self.class_rt(a) && !self.class_rt(new) {
                return false;
            }
            if sync && !self.queues[a].sync {
                return true;
            }
            if self.slice_used(a, j) {
                return true;
            }
            let new_count = self.queues[new].st.map_or(0, |(t, _)| self.trees[t].len());
            if self.serving_type == SYNC_NOIDLE_WORKLOAD
                && self.cfqq_type(new) == SYNC_NOIDLE_WORKLOAD
                && new_count == 2
                && self.queues[a].sort_list.is_empty()
            {
                return true;
            }
            if meta && self.queues[a].meta_pending == 0 {
                return true;
            }
            if self.class_rt(new) && !self.class_rt(a) {
                return true;
            }
        }
        if self.active_cic.is_none() || !self.queues[a].wait_request {
            return false;
        }
        self.rq_close(r.sector)
    }

    /// `cfq_preempt_queue`.
    fn preempt_queue(&mut self, ctx: &mut ElvCtx, q: usize, j: i64) {
        self.log(ctx, q, format_args!("preempt"));
        self.slice_expired(ctx, true, j);
        assert!(self.queues[q].on_rr);
        self.service_tree_add(q, true, j);
        self.queues[q].slice_end = 0;
        self.queues[q].slice_new = true;
    }

    /// `cfq_update_hw_tag`.
    fn update_hw_tag(&mut self) {
        let in_driver = self.rq_in_driver[0] + self.rq_in_driver[1];
        if in_driver > self.hw_tag_peak {
            self.hw_tag_peak = in_driver;
        }
        if self.v() != CfqVersion::V2632 && self.hw_tag == 1 {
            return;
        }
        if self.rq_queued <= CFQ_HW_QUEUE_MIN && in_driver <= CFQ_HW_QUEUE_MIN {
            return;
        }
        if self.v() != CfqVersion::V2632 {
            if let Some(q) = self.active {
                let c = &self.queues[q];
                if c.idle_window
                    && c.dispatched + c.queued[0] + c.queued[1] < CFQ_HW_QUEUE_MIN
                    && in_driver < CFQ_HW_QUEUE_MIN
                {
                    return;
                }
            }
        }
        let s = self.hw_tag_samples;
        self.hw_tag_samples += 1;
        if s < 50 {
            return;
        }
        self.hw_tag = (self.hw_tag_peak >= CFQ_HW_QUEUE_MIN) as i32;
        if self.v() == CfqVersion::V2632 {
            self.hw_tag_samples = 0;
            self.hw_tag_peak = 0;
        }
    }

    /// `cfq_schedule_dispatch`.
    fn schedule_dispatch(&self, ctx: &mut ElvCtx) {
        if self.busy_queues > 0 {
            ctx.msg(format_args!("cfq schedule dispatch"));
            ctx.kick_work();
        }
    }

    /// `cfq_add_rq_rb`.
    fn add_rq_rb(&mut self, ctx: &mut ElvCtx, rqs: &RequestPool, rq: RqId, j: i64) {
        let d = self.rq(rq);
        let q = d.q;
        let r = rqs.get(rq);
        self.queues[q].queued[r.flags.is_sync() as usize] += 1;
        self.queues[q].sort_list.add(d.key, rq);
        if !self.queues[q].on_rr {
            self.add_cfqq_rr(ctx, q, j);
        }
        let prev = self.queues[q].next_rq;
        self.queues[q].next_rq = self.choose_req(rqs, prev, Some(rq), self.last_position);
    }

    /// Timer deadline in virtual time: the first instant `jiffies` reads `j`.
    fn jiffy_time(&self, j: i64) -> Instant {
        Instant((j.max(0) as u64 * 1_000_000_000).div_ceil(self.cfg.hz))
    }
}

impl Elevator for Cfq {
    fn name(&self) -> &'static str {
        "cfq"
    }

    fn set_nonrot(&mut self, nonrot: bool) {
        self.nonrot = nonrot;
    }

    /// `cfq_merge`: a front merge candidate in the bio's own queue.
    fn merge(&mut self, _rqs: &RequestPool, bio: &Bio) -> Option<RqId> {
        let q = self.bio_queue(bio)?;
        let end = bio.end_sector();
        self.queues[q].sort_list.find(end)
    }

    /// `cfq_allow_merge`: no sync bio into an async request, and only within the
    /// submitter's own queue.
    fn allow_merge(&self, rqs: &RequestPool, rq: RqId, bio: &Bio) -> bool {
        if bio.flags.is_sync() && !rqs.get(rq).flags.is_sync() {
            return false;
        }
        let Some(d) = self.per_rq.get(rq.0 as usize).copied().flatten() else {
            return false;
        };
        self.bio_queue(bio) == Some(d.q)
    }

    /// `cfq_merged_request`: a front merge moved the start; re-sort.
    fn merged(&mut self, rqs: &RequestPool, rq: RqId, kind: MergeKind) {
        if kind != MergeKind::Front {
            return;
        }
        let mut d = self.rq(rq);
        let q = d.q;
        let c = &mut self.queues[q];
        let key = rqs.get(rq).sector;
        c.sort_list.rekey(d.key, key, rq);
        d.key = key;
        self.per_rq[rq.0 as usize] = Some(d);
        let next = c.next_rq;
        let chosen = self.choose_req(rqs, next, Some(rq), self.last_position);
        self.queues[q].next_rq = chosen;
    }

    /// `cfq_merged_requests`.
    fn merged_requests(&mut self, rqs: &mut RequestPool, rq: RqId, next: RqId) {
        let mut d = self.rq(rq);
        let n = self.rq(next);
        let q = d.q;
        if n.fifo_time < d.fifo_time {
            let c = &mut self.queues[q];
            c.fifo.remove(&(d.fifo_seq, rq));
            d.fifo_seq = n.fifo_seq;
            d.fifo_time = n.fifo_time;
            self.per_rq[rq.0 as usize] = Some(d);
        }
        if self.queues[q].next_rq == Some(next) {
            self.queues[q].next_rq = Some(rq);
        }
        let mut msgs = Vec::new();
        let mut ctx = ElvCtx {
            now: Instant(0),
            msgs: &mut msgs,
            trace: false,
            kick: Default::default(),
        };
        self.remove_request(&mut ctx, rqs, next);
        // rq took next's FIFO place (after next left it).
        self.queues[q].fifo.insert((d.fifo_seq, rq));
    }

    /// `cfq_may_queue`: an idling queue's next allocation must succeed.
    fn may_queue(&mut self, bio: &Bio) -> MayQueue {
        if let Some(q) = self.bio_queue(bio) {
            let c = &mut self.queues[q];
            if c.wait_request && !c.must_alloc_slice {
                c.must_alloc_slice = true;
                return MayQueue::Must;
            }
        }
        MayQueue::May
    }

    /// `cfq_insert_request` → `cfq_add_rq_rb`, `cfq_rq_enqueued`.
    fn add_request(&mut self, ctx: &mut ElvCtx, rqs: &mut RequestPool, rq: RqId) {
        let j = self.jiffies(ctx.now);
        let (pid, sync, ioprio, sector, sectors, meta, bytes, start) = {
            let r = rqs.get(rq);
            (
                r.pid,
                r.flags.is_sync(),
                r.ioprio,
                r.sector,
                r.sectors,
                r.flags.contains(ReqFlags::META),
                r.bytes(),
                r.start_time,
            )
        };
        let q = self.get_queue(pid, sync, ioprio, j);
        rqs.get_mut(rq).elv_private = q as u32;
        let fifo_time = if self.v() == CfqVersion::V2632 {
            self.jiffies(start) + self.cfg.fifo_expire[sync as usize]
        } else {
            j + self.cfg.fifo_expire[sync as usize]
        };
        let i = rq.0 as usize;
        if self.per_rq.len() <= i {
            self.per_rq.resize(i + 1, None);
        }
        assert!(self.per_rq[i].is_none());
        self.per_rq[i] = Some(CfqRq {
            q,
            key: rqs.get(rq).sector,
            fifo_seq: self.fifo_seq,
            fifo_time,
            pid,
        });
        self.queues[q].fifo.insert((self.fifo_seq, rq));
        self.fifo_seq += 1;
        self.log(ctx, q, format_args!("insert_request"));
        self.add_rq_rb(ctx, rqs, rq, j);

        // cfq_rq_enqueued
        self.rq_queued += 1;
        if meta {
            self.queues[q].meta_pending += 1;
        }
        self.update_io_thinktime(pid, j);
        self.update_tree_thinktime(q, j);
        self.update_io_seektime(q, pid, sector, sectors);
        self.update_idle_window(ctx, rqs, q, pid);
        let end = sector + sectors as u64;
        if self.v() == CfqVersion::V2632 {
            self.cics.get_mut(&pid).expect("cic").last_request_pos = end;
        } else {
            self.queues[q].last_request_pos = end;
        }
        if self.active == Some(q) {
            if self.queues[q].wait_request {
                if bytes > 4096 || self.busy_queues > 1 {
                    self.idle_timer = None;
                    self.queues[q].wait_request = false;
                    ctx.kick_now();
                } else {
                    self.queues[q].must_dispatch = true;
                }
            }
        } else if self.should_preempt(q, rqs, rq, j) {
            self.preempt_queue(ctx, q, j);
            ctx.kick_now();
        }
    }

    /// `cfq_dispatch_requests`: one request per call.
    fn dispatch(
        &mut self,
        ctx: &mut ElvCtx,
        rqs: &RequestPool,
        force: bool,
    ) -> Option<(RqId, Placement)> {
        let j = self.jiffies(ctx.now);
        if self.busy_queues == 0 {
            return None;
        }
        if force {
            return self
                .forced_dispatch(ctx, rqs, j)
                .map(|r| (r, Placement::Sort));
        }
        let q = self.select_queue(ctx, j)?;
        if !self.may_dispatch(q, j) {
            return None;
        }
        // cfq_dispatch_request: expired FIFO head once per slice, else next_rq.
        let rq = match self.check_fifo(ctx, q, j) {
            Some(rq) => rq,
            None => self.queues[q].next_rq.expect("active queue has requests"),
        };
        let pid = self.rq(rq).pid;
        self.dispatch_insert(ctx, rqs, rq);
        if self.active_cic.is_none() {
            self.active_cic = Some(pid);
        }
        let c = &mut self.queues[q];
        c.slice_dispatch += 1;
        c.must_dispatch = false;
        if c.wait_request {
            c.wait_request = false;
            self.idle_timer = None;
        }
        // Expire an async queue that used its request cap, and an idle-class
        // queue after one dispatch, when others wait.
        if self.busy_queues > 1
            && ((!self.queues[q].sync && self.queues[q].slice_dispatch >= self.prio_to_maxrq(q))
                || self.class_idle(q))
        {
            self.queues[q].slice_end = j + 1;
            self.slice_expired(ctx, false, j);
        }
        self.log(ctx, q, format_args!("dispatched a request"));
        Some((rq, Placement::Sort))
    }

    fn queue_empty(&self) -> bool {
        self.rq_queued == 0
    }

    fn former_request(&self, _rqs: &RequestPool, rq: RqId) -> Option<RqId> {
        let d = self.per_rq.get(rq.0 as usize).copied().flatten()?;
        self.queues[d.q].sort_list.former(d.key, rq)
    }

    fn latter_request(&self, _rqs: &RequestPool, rq: RqId) -> Option<RqId> {
        let d = self.per_rq.get(rq.0 as usize).copied().flatten()?;
        self.queues[d.q].sort_list.latter(d.key, rq)
    }

    /// `cfq_activate_request`.
    fn activate(&mut self, ctx: &mut ElvCtx, rqs: &RequestPool, rq: RqId) {
        let r = rqs.get(rq);
        self.rq_in_driver[r.flags.is_sync() as usize] += 1;
        let drv = self.rq_in_driver[0] + self.rq_in_driver[1];
        let q = r.elv_private as usize;
        if q < self.queues.len() {
            self.log(ctx, q, format_args!("activate rq, drv={drv}"));
        }
        self.last_position = r.end_sector();
    }

    /// `cfq_yield` (the blk_yield series, PATCH 2/4 v4; from the cover
    /// letter and the v3 discussion, the patch text not found): the caller's
    /// sync queue, if it is the active one, is marked to yield to `to`, whose
    /// io context must exist (a task that never did I/O has none); a queue
    /// idling for its next request is kicked so that `cfq_select_queue` acts.
    fn yield_queue(&mut self, ctx: &mut ElvCtx, from: u32, to: u32) {
        if !self.cfg.yield_ || !self.cics.contains_key(&to) {
            return;
        }
        let Some(q) = self.cics.get(&from).and_then(|c| c.sync_q) else {
            return;
        };
        if self.active != Some(q) {
            return;
        }
        self.log(ctx, q, format_args!("yielding queue to {to}"));
        self.queues[q].yield_to = Some(to);
        if self.queues[q].sort_list.is_empty() {
            ctx.kick_now();
        }
    }

    /// `cfq_completed_request`.
    fn completed(&mut self, ctx: &mut ElvCtx, rqs: &RequestPool, rq: RqId) {
        let j = self.jiffies(ctx.now);
        let r = rqs.get(rq);
        let q = r.elv_private as usize;
        let sync = r.flags.is_sync();
        let noidle = r.flags.contains(ReqFlags::NOIDLE);
        self.log(ctx, q, format_args!("complete rqnoidle {}", noidle as u8));
        self.update_hw_tag();
        self.rq_in_driver[sync as usize] -= 1;
        self.queues[q].dispatched -= 1;
        let qsync = self.queues[q].sync as usize;
        self.rq_in_flight[qsync] -= 1;
        if sync {
            if let Some(cic) = self.cics.get_mut(&r.pid) {
                cic.last_end_request = j;
            }
            if let Some(t) = self.noidle_tree(q) {
                self.tree_ttime[t].last_end_request = j;
            }
            self.last_end_sync_rq = j;
            // 2.6.33+: last_delayed_sync moves only for a request that waited
            // at least fifo_expire_sync.
            if j >= self.jiffies(r.start_time) + self.cfg.fifo_expire[1] {
                self.last_delayed_sync = j;
            }
        }
        if self.active == Some(q) {
            let empty = self.queues[q].sort_list.is_empty();
            if self.queues[q].slice_new {
                self.set_prio_slice(ctx, q, j);
                self.queues[q].slice_new = false;
            }
            if self.slice_used(q, j) || self.class_idle(q) {
                self.slice_expired(ctx, true, j);
            } else if sync && empty {
                match self.v() {
                    CfqVersion::V2632 => {
                        if !noidle {
                            self.arm_slice_timer(ctx, j);
                        }
                    }
                    CfqVersion::V2633 if self.cfg.noidle_blocks_idle => {
                        if !noidle {
                            self.arm_slice_timer(ctx, j);
                        }
                    }
                    CfqVersion::V2633 => {
                        self.noidle_tree_requires_idle |= !noidle;
                        if self.serving_type == SYNC_WORKLOAD
                            || self.noidle_tree_requires_idle
                            || self.busy_queues == 1
                        {
                            self.arm_slice_timer(ctx, j);
                        }
                    }
                    CfqVersion::V2637 => self.arm_slice_timer(ctx, j),
                }
            }
        }
        if self.rq_in_driver[0] + self.rq_in_driver[1] == 0 {
            self.schedule_dispatch(ctx);
        }
    }

    fn timer_deadline(&self) -> Option<Instant> {
        self.idle_timer.map(|j| self.jiffy_time(j))
    }

    /// `cfq_idle_slice_timer`.
    fn timer_fired(&mut self, ctx: &mut ElvCtx, _rqs: &RequestPool) {
        let j = self.jiffies(ctx.now);
        self.idle_timer = None;
        if let Some(q) = self.active {
            self.log(ctx, q, format_args!("idle_slice_timer"));
            if self.queues[q].must_dispatch {
                self.schedule_dispatch(ctx);
                return;
            }
            if !self.slice_used(q, j) {
                if self.busy_queues == 0 {
                    return;
                }
                if !self.queues[q].sort_list.is_empty() {
                    self.schedule_dispatch(ctx);
                    return;
                }
                if self.v() == CfqVersion::V2637 {
                    // The queue-depth flag is reset only when idling failed.
                    self.queues[q].deep = false;
                }
            }
        }
        self.slice_expired(ctx, false, j);
        self.schedule_dispatch(ctx);
    }

    fn queued(&self) -> usize {
        self.rq_queued as usize
    }
}
