//! BFQ's core (6.x `block/bfq-iosched.c`, `block/bfq-wf2q.c`): one
//! `bfq_queue` per process for its synchronous requests and one per I/O
//! priority for asynchronous ones; the queue in service dispatches until its
//! budget (in sectors) is used up, it has nothing left, or its budget
//! timeout passes, and the next one is chosen by B-WF2Q+ over virtual time
//! (`bfq_lookup_next_entity`: the eligible entity, start ≤ V, with the
//! smallest finish, finish = start + (budget << 22) / weight), with
//! weights from the I/O priority (`bfq_ioprio_to_weight`). A synchronous
//! queue that empties is waited for `slice_idle` when BFQ judges idling
//! worth it (`bfq_better_to_idle`); budgets adapt to how the queue ended
//! (`__bfq_bfqq_recalc_budget`). A queue that becomes busy preempts the one
//! in service when it has a higher class or weight or the one in service is
//! not worth idling for (`bfq_bfqq_handle_idle_busy_switch`).
//!
//! `low_latency` weight raising (interactive and soft real-time) and large
//! bursts are in [`wr`]; I/O injection while idling is in [`inject`].
//!
//! Model lacks: queue merging (`bfq_setup_cooperator`, stable merge),
//! waker/blocked-queue detection (`bfq_check_waker`), the service-hole
//! recovery of a queue that expired idle (`bfq_bfqq_update_budg_for_activation`
//! with `non_blocking_wait_rq`, timestamp back-shifting), cgroups, the
//! peak-rate estimate that autotunes `max_budget` and the raising duration
//! (the default 16384 sectors and the initial rate are used) and with it the
//! time-charging of slow queues (`bfq_bfqq_charge_time`), `bfq_limit_depth`,
//! and the `bfq_log` trace messages.

mod inject;
mod wr;

use crate::elv_rb::ElvRb;
use iostack_block::{MergeKind, MqElevator, RequestPool, RqId, ALL_HCTXS};
use iostack_core::{Sector, TunableDef, Tunables, Unit};
use iostack_des::Instant;
use std::collections::{BTreeMap, BTreeSet};

pub static TUNABLES: &[TunableDef] = &[
    TunableDef {
        name: "iosched/bfq/low_latency",
        unit: Unit::Bool,
        default: |_| 1,
        min: 0,
        max: 1,
        doc: "Weight raising of interactive and soft real-time queues (bfqd->low_latency, \
              on by default): a queue that becomes busy after 2 s idle, or whose rate stays \
              under 7000 sectors/s, has its weight raised 30 (3000 for soft real-time) times.",
    },
    TunableDef {
        name: "iosched/bfq/slice_idle_us",
        unit: Unit::Us,
        default: |_| 8_000,
        min: 0,
        max: 1_000_000,
        doc: "How long a synchronous queue that emptied is waited for (bfq_slice_idle, 8 ms).",
    },
    TunableDef {
        name: "iosched/bfq/timeout_sync",
        unit: Unit::Ms,
        default: |_| 125,
        min: 1,
        max: 60_000,
        doc: "Budget timeout: the longest a queue stays in service (bfq_timeout, HZ/8).",
    },
    TunableDef {
        name: "iosched/bfq/max_budget",
        unit: Unit::Sectors,
        default: |_| 0,
        min: 0,
        max: 1 << 24,
        doc: "Largest budget in sectors; 0 is the default, bfq_default_max_budget = 16384 \
              (the kernel's peak-rate autotuning is not modelled).",
    },
    TunableDef {
        name: "iosched/bfq/fifo_expire_sync",
        unit: Unit::Ms,
        default: |_| 125,
        min: 0,
        max: 3_600_000,
        doc: "Deadline of a synchronous request within its queue (bfq_fifo_expire[1]).",
    },
    TunableDef {
        name: "iosched/bfq/fifo_expire_async",
        unit: Unit::Ms,
        default: |_| 250,
        min: 0,
        max: 3_600_000,
        doc: "Deadline of an asynchronous request within its queue (bfq_fifo_expire[0]).",
    },
    TunableDef {
        name: "iosched/bfq/back_seek_max",
        unit: Unit::KiB,
        default: |_| 16 * 1024,
        min: 0,
        max: 1 << 30,
        doc: "Longest backward seek preferred to a forward one (bfq_back_max).",
    },
    TunableDef {
        name: "iosched/bfq/back_seek_penalty",
        unit: Unit::Count,
        default: |_| 2,
        min: 1,
        max: 1 << 20,
        doc: "Cost factor of backward seeks (bfq_back_penalty).",
    },
];

/// `bfq_default_max_budget`, `bfq_stats_min_budgets`, `WFQ_SERVICE_SHIFT`,
/// `bfq_async_charge_factor`, `BFQ_MIN_TT`, `BFQQ_SEEK_THR`,
/// `BFQQ_SECT_THR_NONROT`, `BFQ_HW_QUEUE_THRESHOLD`, `BFQ_HW_QUEUE_SAMPLES`.
const DEFAULT_MAX_BUDGET: u64 = 16 * 1024;
const STATS_MIN_BUDGETS: u32 = 194;
const WFQ_SERVICE_SHIFT: u32 = 22;
const ASYNC_CHARGE_FACTOR: u64 = 3;
const MIN_TT_NS: u64 = 2_000_000;
const SEEK_THR: u64 = 8 * 100;
const SECT_THR_NONROT: u32 = 2 * 32;
const HW_QUEUE_THRESHOLD: u32 = 3;
const HW_QUEUE_SAMPLES: u32 = 32;

#[derive(Clone, Debug)]
pub struct BfqConfig {
    pub slice_idle_ns: u64,
    /// `bfq_timeout` in jiffies.
    pub timeout: u64,
    pub max_budget: u64,
    /// `bfq_fifo_expire[async, sync]` in ns.
    pub fifo_expire: [u64; 2],
    pub back_max: u64,
    pub back_penalty: u64,
    pub hz: u64,
    /// `bfqd->low_latency`.
    pub low_latency: bool,
}

impl BfqConfig {
    pub fn from_tunables(t: &Tunables) -> Self {
        let g = |n: &str| t.get_u64(&format!("iosched/bfq/{n}"));
        let hz = t.get_u64("kernel/hz");
        let mb = g("max_budget");
        BfqConfig {
            slice_idle_ns: g("slice_idle_us") * 1000,
            timeout: (g("timeout_sync") * hz).div_ceil(1000),
            max_budget: if mb == 0 { DEFAULT_MAX_BUDGET } else { mb },
            fifo_expire: [
                g("fifo_expire_async") * 1_000_000,
                g("fifo_expire_sync") * 1_000_000,
            ],
            back_max: g("back_seek_max") * 2,
            back_penalty: g("back_seek_penalty"),
            hz,
            low_latency: g("low_latency") != 0,
        }
    }
}

/// Why a queue left service (`enum bfqq_expiration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expire {
    TooIdle,
    BudgetTimeout,
    BudgetExhausted,
    NoMoreRequests,
    Preempted,
}

/// `struct bfq_entity` and `struct bfq_queue`, the parts modelled.
#[derive(Debug)]
struct Bfqq {
    sync: bool,
    /// Service-tree class: 0 RT, 1 BE, 2 IDLE.
    class: usize,
    /// `entity.weight`: `orig_weight` (from the I/O priority) times
    /// `wr_coeff` once applied (`__bfq_entity_update_weight_prio`).
    weight: u64,
    orig_weight: u64,
    /// The owner's pid (sync queues) and the key of its async queue
    /// (`bic->bfqq[0]`), for injecting that queue's I/O.
    pid: u32,
    async_key: (bool, u32, u8, u8),
    /// `entity.budget`, `entity.service` in sectors; `max_budget`.
    budget: u64,
    service: u64,
    max_budget: u64,
    /// Virtual start and finish (`entity->start`, `entity->finish`).
    start: u64,
    finish: u64,
    /// On the active tree (busy and not in service).
    busy: bool,
    sort_list: ElvRb,
    fifo: BTreeSet<(u64, u64, RqId)>,
    next_rq: Option<RqId>,
    dispatched: u32,
    wait_request: bool,
    fifo_expire_flag: bool,
    io_bound: bool,
    /// In jiffies; also when the queue last went empty with nothing in
    /// flight (the kernel overloads it for weight raising).
    budget_timeout: i64,
    seek_history: u32,
    last_request_pos: Sector,
    /// `bfqq->ttime`.
    ttime_samples: u64,
    ttime_total: u64,
    ttime_mean: u64,
    last_end_request: u64,
    has_short_ttime: bool,
    wr: wr::WrState,
    inj: inject::InjState,
}

#[derive(Clone, Copy, Debug)]
struct BRq {
    q: usize,
    key: Sector,
    sectors: u32,
    fifo: (u64, u64),
}

pub struct Bfq {
    cfg: BfqConfig,
    nonrot: bool,
    queues: Vec<Bfqq>,
    /// Sync queues by pid, async ones by (class, level).
    by_owner: BTreeMap<(bool, u32, u8, u8), usize>,
    /// Per class: `st->vtime`, `st->wsum`.
    vtime: [u64; 3],
    wsum: [u64; 3],
    in_service: Option<usize>,
    per_rq: Vec<Option<BRq>>,
    fifo_seq: u64,
    queued: usize,
    rq_in_driver: u32,
    max_rq_in_driver: u32,
    hw_tag: i32,
    hw_tag_samples: u32,
    budgets_assigned: u32,
    /// The idle slice timer, when armed (ns).
    idle_timer: Option<u64>,
    woken: Vec<u16>,
    /// Expirations as (queue, reason), for tests and notes.
    expirations: Vec<(usize, Expire)>,
    /// `bfqd->active_list`: busy queues, the last activated first.
    active_list: Vec<usize>,
    burst: wr::Burst,
    inj: inject::InjData,
}

/// `ioprio_class` and level of a request; none is BE at `IOPRIO_NORM` (4).
fn class_level(ioprio: (u8, u8)) -> (usize, u8) {
    match ioprio.0 {
        1 => (0, ioprio.1),
        2 => (1, ioprio.1),
        3 => (2, 7),
        _ => (1, 4),
    }
}

impl Bfq {
    pub fn new(cfg: BfqConfig) -> Self {
        Bfq {
            cfg,
            nonrot: false,
            queues: Vec::new(),
            by_owner: BTreeMap::new(),
            vtime: [0; 3],
            wsum: [0; 3],
            in_service: None,
            per_rq: Vec::new(),
            fifo_seq: 0,
            queued: 0,
            rq_in_driver: 0,
            max_rq_in_driver: 0,
            hw_tag: -1,
            hw_tag_samples: 0,
            budgets_assigned: 0,
            idle_timer: None,
            woken: Vec::new(),
            expirations: Vec::new(),
            active_list: Vec::new(),
            burst: wr::Burst::default(),
            inj: inject::InjData::default(),
        }
    }

    /// Queue expirations so far, in order, with the queue's index.
    pub fn expirations(&self) -> &[(usize, Expire)] {
        &self.expirations
    }

    fn jiffies(&self, now: u64) -> i64 {
        (now * self.cfg.hz / 1_000_000_000) as i64
    }

    /// `msecs_to_jiffies`.
    fn ms_to_jiffies(&self, ms: u64) -> i64 {
        (ms * self.cfg.hz).div_ceil(1000) as i64
    }

    fn b(&self, rq: RqId) -> BRq {
        self.per_rq[rq.0 as usize].expect("bfq request")
    }

    /// `bfq_get_queue` / `bfq_init_bfqq`: the queue of a request's owner.
    fn queue_of(&mut self, pid: u32, sync: bool, ioprio: (u8, u8), now: u64) -> usize {
        let (class, level) = class_level(ioprio);
        let async_key = (false, 0, class as u8, level);
        let key = if sync { (true, pid, 0, 0) } else { async_key };
        if let Some(&q) = self.by_owner.get(&key) {
            return q;
        }
        let max_budget = 2 * self.max_budget() / 3;
        // bfq_ioprio_to_weight: (IOPRIO_NR_LEVELS - ioprio) * 10.
        let weight = (8 - level.min(7) as u64) * 10;
        let j = self.jiffies(now);
        self.queues.push(Bfqq {
            sync,
            class,
            weight,
            orig_weight: weight,
            pid,
            async_key,
            budget: max_budget,
            service: 0,
            max_budget,
            start: 0,
            finish: 0,
            busy: false,
            sort_list: ElvRb::new(),
            fifo: BTreeSet::new(),
            next_rq: None,
            dispatched: 0,
            wait_request: false,
            fifo_expire_flag: false,
            io_bound: sync,
            budget_timeout: wr::MINUS_INF,
            seek_history: 0,
            last_request_pos: 0,
            ttime_samples: 0,
            ttime_total: 0,
            ttime_mean: 0,
            last_end_request: 0,
            has_short_ttime: sync,
            wr: wr::WrState::new(j, sync),
            inj: inject::InjState::new(j),
        });
        let q = self.queues.len() - 1;
        self.by_owner.insert(key, q);
        q
    }

    fn max_budget(&self) -> u64 {
        self.cfg.max_budget
    }

    /// `bfq_min_budget`.
    fn min_budget(&self) -> u64 {
        if self.budgets_assigned < STATS_MIN_BUDGETS {
            DEFAULT_MAX_BUDGET / 32
        } else {
            self.max_budget() / 32
        }
    }

    /// `bfq_delta`.
    fn delta(service: u64, weight: u64) -> u64 {
        (service << WFQ_SERVICE_SHIFT) / weight
    }

    /// `bfq_serv_to_charge`: async requests cost three times their size,
    /// unless weight-raised.
    fn serv_to_charge(&self, rq: RqId, q: usize) -> u64 {
        let s = self.b(rq).sectors as u64;
        if self.queues[q].sync || self.queues[q].wr.coeff > 1 || self.asymmetric() {
            s
        } else {
            s * ASYNC_CHARGE_FACTOR
        }
    }

    fn budget_left(&self, q: usize) -> u64 {
        let e = &self.queues[q];
        e.budget.saturating_sub(e.service)
    }

    // -----------------------------------------------------------------------
    // B-WF2Q+ (bfq-wf2q.c).

    /// `bfq_add_bfqq_busy` → `bfq_activate_bfqq` → `__bfq_activate_entity`
    /// of a queue that became busy: its raised weight applied
    /// (`__bfq_entity_update_weight_prio`), start at V or at its old finish if
    /// that is later (the idle tree), finish after its budget at its weight;
    /// first on `active_list`.
    fn activate(&mut self, q: usize) {
        let c = self.queues[q].class;
        let v = self.vtime[c];
        let e = &mut self.queues[q];
        e.weight = e.orig_weight * e.wr.coeff;
        e.start = v.max(e.finish);
        e.finish = e.start + Self::delta(e.budget, e.weight);
        e.busy = true;
        self.wsum[c] += e.weight;
        self.active_list.insert(0, q);
    }

    /// `__bfq_requeue_entity` of the queue in service: its start moves past
    /// the service received, its weight is updated, its finish set after its
    /// new budget.
    fn requeue(&mut self, q: usize) {
        let e = &mut self.queues[q];
        e.start += Self::delta(e.service, e.weight);
        self.update_weight(q);
        let e = &mut self.queues[q];
        e.finish = e.start + Self::delta(e.budget, e.weight);
        e.busy = true;
    }

    /// `__bfq_entity_update_weight_prio` for a busy queue: the weight is the
    /// original one times the raising coefficient; the class's weight sum
    /// follows.
    fn update_weight(&mut self, q: usize) {
        let e = &mut self.queues[q];
        let new = e.orig_weight * e.wr.coeff;
        let c = e.class;
        let old = std::mem::replace(&mut e.weight, new);
        self.wsum[c] = self.wsum[c] - old + new;
    }

    /// `__bfq_deactivate_entity` of the queue in service: finish where its
    /// service ended; out of the weight sum.
    fn deactivate(&mut self, q: usize) {
        let e = &mut self.queues[q];
        e.finish = e.start + Self::delta(e.service, e.weight);
        self.del_busy(q);
    }

    /// `bfq_del_bfqq_busy`: off the active tree and `active_list`.
    fn del_busy(&mut self, q: usize) {
        let e = &mut self.queues[q];
        e.busy = false;
        self.wsum[e.class] -= e.weight;
        self.active_list.retain(|&x| x != q);
    }

    /// `bfq_lookup_next_entity`: the highest class with busy queues;
    /// V jumps to the smallest start if none is eligible
    /// (`bfq_calc_vtime_jump`); then the eligible queue with the smallest
    /// finish (first queued on ties).
    fn lookup_next(&mut self) -> Option<usize> {
        for c in 0..3 {
            let cands = || {
                (0..self.queues.len())
                    .filter(|&q| self.queues[q].busy && self.queues[q].class == c)
                    .filter(|&q| Some(q) != self.in_service)
            };
            let Some(min_start) = cands().map(|q| self.queues[q].start).min() else {
                continue;
            };
            let v = self.vtime[c].max(min_start);
            self.vtime[c] = v;
            return cands()
                .filter(|&q| self.queues[q].start <= v)
                .min_by_key(|&q| (self.queues[q].finish, self.queues[q].start, q));
        }
        None
    }

    /// `bfq_bfqq_served`: service and virtual time advance.
    fn served(&mut self, q: usize, served: u64) {
        let c = self.queues[q].class;
        let e = &mut self.queues[q];
        e.service += served;
        if e.wr.coeff > 1 {
            e.wr.service_from_wr += served;
        }
        e.wr.service_from_backlogged += served;
        if self.wsum[c] > 0 {
            self.vtime[c] += Self::delta(served, self.wsum[c]);
        }
    }

    // -----------------------------------------------------------------------
    // Queue service.

    /// `bfq_set_in_service_queue` → `__bfq_set_in_service_queue` and
    /// `bfq_set_budget_timeout`.
    /// A queue's service was reset when it expired busy or was activated
    /// (`bfq_bfqq_expire`, `bfq_bfqq_update_budg_for_activation`); service
    /// injected while it waited counts against its budget. The budget timeout
    /// of an interactively raised queue is `wr_coeff` times longer.
    fn set_in_service(&mut self, now: u64) -> Option<usize> {
        let q = self.lookup_next()?;
        self.in_service = Some(q);
        self.budgets_assigned = (self.budgets_assigned * 7 + 256) / 8;
        let j = self.jiffies(now);
        self.srt_shift_wr_start(q, j);
        let coeff = if self.queues[q].wr.cur_max_time == self.wr_rt_max_time() {
            1
        } else {
            self.queues[q].weight / self.queues[q].orig_weight
        };
        let timeout = j + self.cfg.timeout as i64 * coeff as i64;
        let e = &mut self.queues[q];
        e.fifo_expire_flag = false;
        e.budget_timeout = timeout;
        Some(q)
    }

    /// `bfq_bfqq_budget_timeout`.
    fn budget_timed_out(&self, q: usize, now: u64) -> bool {
        self.jiffies(now) >= self.queues[q].budget_timeout
    }

    /// `bfq_may_expire_for_budg_timeout`.
    fn may_expire_for_budg_timeout(&self, q: usize, now: u64) -> bool {
        let e = &self.queues[q];
        (!e.wait_request || self.budget_left(q) >= e.budget / 3) && self.budget_timed_out(q, now)
    }

    /// `bfq_asymmetric_scenario`: queues of different weights in
    /// `queue_weights_tree` (busy or with requests in flight, unraised), or
    /// busy queues of different classes (`bfqd->busy_queues[]`).
    fn asymmetric(&self) -> bool {
        let w: BTreeSet<u64> = self
            .queues
            .iter()
            .filter(|e| (e.busy || e.dispatched > 0) && e.wr.coeff == 1)
            .map(|e| e.weight)
            .collect();
        let c: BTreeSet<usize> = self
            .queues
            .iter()
            .filter(|e| e.busy)
            .map(|e| e.class)
            .collect();
        w.len() > 1 || c.len() > 1
    }

    /// `BFQQ_SEEKY`: more than 19 of the last 32 requests seeky.
    fn seeky(&self, q: usize) -> bool {
        self.queues[q].seek_history.count_ones() > 19
    }

    /// `bfq_tot_busy_queues` and `bfqd->wr_busy_queues`.
    fn busy_counts(&self) -> (usize, usize) {
        let busy = self.queues.iter().filter(|e| e.busy);
        let wr = busy.clone().filter(|e| e.wr.coeff > 1).count();
        (busy.count(), wr)
    }

    /// `idling_boosts_thr_without_issues`: never while queues are raised.
    fn idling_boosts_thr(&self, q: usize) -> bool {
        let e = &self.queues[q];
        let hw_tag = self.hw_tag != 0;
        let rot_without_queueing = !self.nonrot && !hw_tag;
        let seq_io_bound = !self.seeky(q) && e.io_bound && e.has_short_ttime;
        let boosts = rot_without_queueing || ((!self.nonrot || !hw_tag) && seq_io_bound);
        boosts && self.busy_counts().1 == 0
    }

    /// `idling_needed_for_service_guarantees`: a raised queue among
    /// unraised ones or with much foreign I/O in flight, an asymmetric
    /// scenario, or the only busy queue.
    fn idling_needed(&self, q: usize) -> bool {
        let e = &self.queues[q];
        let (tot, wr) = self.busy_counts();
        (e.wr.coeff > 1 && (wr < tot || self.rq_in_driver >= e.dispatched + 4))
            || self.asymmetric()
            || tot == 1
    }

    /// `bfq_better_to_idle`.
    fn better_to_idle(&self, q: usize) -> bool {
        let e = &self.queues[q];
        if self.cfg.slice_idle_ns == 0 || !e.sync || e.class == 2 {
            return false;
        }
        self.idling_boosts_thr(q) || self.idling_needed(q)
    }

    /// `bfq_bfqq_expire`: the raising bookkeeping of an emptied queue
    /// ([`Self::wr_on_expire`]), the injection measurement ends, a new budget
    /// (`__bfq_bfqq_recalc_budget`), then (`__bfq_bfqq_expire`) requeued if
    /// it has requests or was preempted while idling is needed for it, else
    /// deactivated; its service restarts unless it went idle waiting.
    fn expire(&mut self, q: usize, reason: Expire, now: u64) {
        self.expirations.push((q, reason));
        let e = &self.queues[q];
        if reason == Expire::TooIdle && e.service <= 2 * e.budget / 10 {
            self.queues[q].io_bound = false;
        }
        let j = self.jiffies(now);
        self.wr_on_expire(q, j);
        self.inj.rqs_injected = false;
        self.inj.wait_dispatch = false;
        self.inj.waited_rq = None;
        self.recalc_budget(q, reason);
        let keep = reason == Expire::Preempted && self.idling_needed(q);
        self.queues[q].wait_request = false;
        self.idle_timer = None;
        self.in_service = None;
        if self.queues[q].sort_list.is_empty() && !keep {
            if self.queues[q].dispatched == 0 {
                self.queues[q].budget_timeout = j;
            }
            self.deactivate(q);
        } else {
            self.requeue(q);
        }
        let e = &mut self.queues[q];
        if e.busy || matches!(reason, Expire::BudgetTimeout | Expire::BudgetExhausted) {
            e.service = 0;
        }
    }

    /// `__bfq_bfqq_recalc_budget`: raised queues get twice the minimum
    /// budget; a preempted unraised sync queue keeps its own.
    fn recalc_budget(&mut self, q: usize, reason: Expire) {
        let (min_b, max_b) = (self.min_budget(), self.max_budget());
        let e = &self.queues[q];
        let mut budget = if e.wr.coeff == 1 {
            e.max_budget
        } else {
            2 * min_b
        };
        if e.sync && e.wr.coeff == 1 {
            budget = match reason {
                Expire::TooIdle if e.dispatched > 0 => (budget * 2).min(max_b),
                Expire::TooIdle if budget > 5 * min_b => budget - 4 * min_b,
                Expire::TooIdle => min_b,
                Expire::BudgetTimeout => (budget * 2).min(max_b),
                Expire::BudgetExhausted => (budget * 4).min(max_b),
                Expire::NoMoreRequests => e.service.max(min_b),
                Expire::Preempted => return,
            };
        } else if !e.sync {
            budget = max_b;
        }
        if self.budgets_assigned >= STATS_MIN_BUDGETS {
            budget = budget.min(max_b);
        }
        let charge = e.next_rq.map_or(0, |r| self.serv_to_charge(r, q));
        let e = &mut self.queues[q];
        e.max_budget = budget;
        e.budget = budget.max(charge);
    }

    /// `bfq_choose_req`: of two requests, the one nearer ahead of `last`
    /// (backward seeks within `back_max` cost `back_penalty` times more).
    fn choose_req(
        &self,
        rqs: &RequestPool,
        a: Option<RqId>,
        b: Option<RqId>,
        last: Sector,
    ) -> Option<RqId> {
        let (a, b) = match (a, b) {
            (Some(a), Some(b)) if a != b => (a, b),
            (x, y) => return x.or(y),
        };
        let dist = |r: RqId| {
            let s = rqs.get(r).sector;
            if s >= last {
                Some(s - last)
            } else if last - s <= self.cfg.back_max {
                Some((last - s) * self.cfg.back_penalty)
            } else {
                None // wrapped
            }
        };
        let (sa, sb) = (rqs.get(a).sector, rqs.get(b).sector);
        match (dist(a), dist(b)) {
            (Some(x), Some(y)) if x < y => Some(a),
            (Some(x), Some(y)) if y < x => Some(b),
            (Some(_), Some(_)) => Some(if sa >= sb { a } else { b }),
            (Some(_), None) => Some(a),
            (None, Some(_)) => Some(b),
            (None, None) => Some(if sa <= sb { a } else { b }),
        }
    }

    /// `bfq_find_next_rq` after `last` leaves: an expired FIFO head once per
    /// budget (`bfq_check_fifo`), else the better of its neighbours.
    fn find_next_rq(&mut self, rqs: &RequestPool, q: usize, last: RqId, now: u64) -> Option<RqId> {
        let key = self.b(last).key;
        let e = &mut self.queues[q];
        if !e.fifo_expire_flag {
            e.fifo_expire_flag = true;
            if let Some(&(exp, _, r)) = e.fifo.iter().find(|&&(_, _, r)| r != last) {
                if now >= exp {
                    return Some(r);
                }
            }
        }
        let e = &self.queues[q];
        let next = e
            .sort_list
            .latter_or_first(key, last)
            .filter(|&r| r != last);
        let prev = e.sort_list.former(key, last);
        self.choose_req(rqs, next, prev, rqs.get(last).end_sector())
    }

    /// `bfq_dispatch_remove` → `bfq_remove_request`, `bfq_bfqq_served`.
    fn dispatch_remove(&mut self, rqs: &RequestPool, q: usize, rq: RqId, now: u64) {
        let charge = self.serv_to_charge(rq, q);
        if self.queues[q].next_rq == Some(rq) {
            self.queues[q].next_rq = self.find_next_rq(rqs, q, rq, now);
        }
        let b = self.b(rq);
        let e = &mut self.queues[q];
        e.sort_list.del(b.key, rq);
        assert!(e.fifo.remove(&(b.fifo.0, b.fifo.1, rq)));
        e.dispatched += 1;
        self.queued -= 1;
        self.rq_in_driver += 1;
        self.served(q, charge);
        // bfq_remove_request: an injected queue that empties leaves the tree.
        let e = &mut self.queues[q];
        if e.sort_list.is_empty() && e.busy && self.in_service != Some(q) {
            e.budget = 0;
            e.service = 0;
            self.del_busy(q);
        }
    }

    /// `bfq_select_queue`: keep the queue in service, wait for it (and
    /// inject another queue's I/O meanwhile, [`Self::injection_queue`]), or
    /// expire it and choose the next. Returns the queue to dispatch from.
    fn select_queue(&mut self, rqs: &RequestPool, now: u64) -> Option<usize> {
        loop {
            let q = self.in_service.or_else(|| self.set_in_service(now))?;
            let must_idle = self.queues[q].sort_list.is_empty() && self.better_to_idle(q);
            let reason = if self.may_expire_for_budg_timeout(q, now) && !must_idle {
                Expire::BudgetTimeout
            } else if let Some(next) = self.queues[q].next_rq {
                if self.serv_to_charge(next, q) <= self.budget_left(q) {
                    if self.queues[q].wait_request {
                        self.queues[q].wait_request = false;
                        self.idle_timer = None;
                    }
                    return Some(q);
                }
                Expire::BudgetExhausted
            } else {
                let e = &self.queues[q];
                if e.wait_request || (e.dispatched > 0 && self.better_to_idle(q)) {
                    return self.injection_queue(rqs, q, now);
                }
                Expire::NoMoreRequests
            };
            self.expire(q, reason, now);
        }
    }

    /// `bfq_update_hw_tag`.
    fn update_hw_tag(&mut self) {
        self.max_rq_in_driver = self.max_rq_in_driver.max(self.rq_in_driver);
        if self.hw_tag == 1 || self.rq_in_driver + self.queued as u32 <= HW_QUEUE_THRESHOLD {
            return;
        }
        if let Some(q) = self.in_service {
            let e = &self.queues[q];
            let queued = e.fifo.len() as u32;
            if e.has_short_ttime
                && e.dispatched + queued < HW_QUEUE_THRESHOLD
                && self.rq_in_driver < HW_QUEUE_THRESHOLD
            {
                return;
            }
        }
        self.hw_tag_samples += 1;
        if self.hw_tag_samples <= HW_QUEUE_SAMPLES {
            return;
        }
        self.hw_tag = (self.max_rq_in_driver > HW_QUEUE_THRESHOLD) as i32;
        self.max_rq_in_driver = 0;
        self.hw_tag_samples = 0;
    }

    /// `bfq_update_io_thinktime`, `bfq_update_has_short_ttime` and
    /// `bfq_update_io_seektime` for a new request of `q`.
    /// A change of think-time state may reset the inject limit, and a
    /// soft real-time queue that turns totally seeky loses its raising.
    fn update_ttime_seek(&mut self, rqs: &RequestPool, q: usize, rq: RqId, now: u64) {
        let idle = self.cfg.slice_idle_ns;
        let nonrot = self.nonrot;
        let r = rqs.get(rq);
        let e = &mut self.queues[q];
        let short_before = e.has_short_ttime;
        if e.sync {
            let elapsed = now.saturating_sub(e.last_end_request).min(2 * idle);
            e.ttime_samples = (7 * e.ttime_samples + 256) / 8;
            e.ttime_total = (7 * e.ttime_total + 256 * elapsed) / 8;
            e.ttime_mean = (e.ttime_total + 128) / e.ttime_samples;
            if idle > 0 && e.class != 2 {
                e.has_short_ttime = !(e.ttime_samples > 80 && e.ttime_mean > idle >> 1);
            }
        }
        let sdist = if e.last_request_pos != 0 {
            r.sector.abs_diff(e.last_request_pos)
        } else {
            0
        };
        let seeky = sdist > SEEK_THR && (!nonrot || r.sectors < SECT_THR_NONROT);
        e.seek_history = (e.seek_history << 1) | seeky as u32;
        e.last_request_pos = r.end_sector();
        let j = self.jiffies(now);
        if self.queues[q].has_short_ttime != short_before {
            self.short_ttime_changed(q, j);
        }
        self.srt_end_if_totally_seeky(q, j);
    }

    /// `bfq_add_request`: the injection sampling of a first request
    /// ([`Self::inject_on_first_request`]), sort list and next request, then
    /// the queue becomes busy (`bfq_bfqq_handle_idle_busy_switch`) or, busy
    /// already, an async queue may be raised ([`Self::wr_on_busy_arrival`]).
    fn add_request(&mut self, rqs: &RequestPool, q: usize, rq: RqId, now: u64) {
        let old_wr = self.queues[q].wr.coeff;
        let e = &self.queues[q];
        if e.sync && e.sort_list.is_empty() && e.dispatched == 0 {
            self.inject_on_first_request(q, now);
        }
        self.queued += 1;
        let r = rqs.get(rq);
        let e = &mut self.queues[q];
        e.sort_list.add(r.sector, rq);
        let last = e.last_request_pos;
        let prev_next = e.next_rq;
        self.queues[q].next_rq = self.choose_req(rqs, prev_next, Some(rq), last);
        let j = self.jiffies(now);
        let interactive = if self.queues[q].busy {
            self.wr_on_busy_arrival(q, r.flags.is_sync(), j);
            false
        } else {
            self.handle_idle_busy_switch(q, old_wr, now)
        };
        let e = &mut self.queues[q];
        if self.cfg.low_latency && (old_wr == 1 || e.wr.coeff == 1 || interactive) {
            e.wr.last_wr_start_finish = j;
        }
    }

    /// `bfq_bfqq_handle_idle_busy_switch`: raising decided
    /// ([`Self::wr_on_activation`]), the budget set for the new backlog and
    /// the service restarted (`bfq_bfqq_update_budg_for_activation`), the
    /// queue activated; it preempts the queue in service if it has a higher
    /// class or weight, or the one in service is not worth idling for.
    /// Returns whether it was deemed interactive.
    fn handle_idle_busy_switch(&mut self, q: usize, old_wr: u64, now: u64) -> bool {
        let j = self.jiffies(now);
        let charge = self.serv_to_charge(self.queues[q].next_rq.expect("has a request"), q);
        let e = &mut self.queues[q];
        e.service = 0;
        e.budget = e.max_budget.max(charge);
        let interactive = self.wr_on_activation(q, old_wr, j);
        self.activate(q);
        if let Some(s) = self.in_service {
            let (a, b) = (&self.queues[q], &self.queues[s]);
            let higher = a.class < b.class || a.weight > b.weight;
            if s != q && (higher || !self.better_to_idle(s)) {
                self.expire(s, Expire::Preempted, now);
            }
        }
        interactive
    }

    /// `bfq_arm_slice_timer`: unraised seeky queues wait at most
    /// `BFQ_MIN_TT`, raised ones at least 20 ms.
    fn arm_slice_timer(&mut self, q: usize, now: u64) {
        self.queues[q].wait_request = true;
        let mut sl = self.cfg.slice_idle_ns;
        if self.seeky(q) && self.queues[q].wr.coeff == 1 && !self.asymmetric() {
            sl = sl.min(MIN_TT_NS);
        } else if self.queues[q].wr.coeff > 1 {
            sl = sl.max(20_000_000);
        }
        self.inj.last_idling_start_jiffies = self.jiffies(now);
        self.idle_timer = Some(now + sl);
    }
}

impl MqElevator for Bfq {
    fn name(&self) -> &'static str {
        "bfq"
    }

    fn set_nonrot(&mut self, nonrot: bool) {
        self.nonrot = nonrot;
    }

    /// `bfq_insert_request` → `bfq_add_request` (sort list, FIFO, next
    /// request, busy) and `bfq_rq_enqueued` (think time, seeks, the wait
    /// for this queue ends).
    fn insert_request(&mut self, now: Instant, _h: u16, rqs: &mut RequestPool, rq: RqId) {
        let now = now.as_ns();
        let r = rqs.get(rq);
        let sync = r.flags.is_sync();
        let q = self.queue_of(r.pid, sync, r.ioprio, now);
        // bfq_init_rq: a new queue may belong to a burst of creations.
        if self.queues[q].wr.just_created && (self.burst.size > 0 || self.busy_counts().0 == 0) {
            self.handle_burst(q, self.jiffies(now));
        }
        let fifo = (now + self.cfg.fifo_expire[sync as usize], self.fifo_seq);
        self.fifo_seq += 1;
        let i = rq.0 as usize;
        if self.per_rq.len() <= i {
            self.per_rq.resize(i + 1, None);
        }
        self.per_rq[i] = Some(BRq {
            q,
            key: r.sector,
            sectors: r.sectors,
            fifo,
        });
        self.update_ttime_seek(rqs, q, rq, now);
        self.add_request(rqs, q, rq, now);
        self.queues[q].fifo.insert((fifo.0, fifo.1, rq));
        if self.in_service == Some(q) && self.queues[q].wait_request {
            self.queues[q].wait_request = false;
            self.idle_timer = None;
        }
    }

    /// `bfq_dispatch_request` → `__bfq_dispatch_request`: `bfq_select_queue`,
    /// then `bfq_dispatch_rq_from_bfqq` (the raising of the queue in service
    /// is updated, `bfq_update_wr_data`).
    fn dispatch_request(&mut self, now: Instant, _h: u16, rqs: &RequestPool) -> Option<RqId> {
        let now = now.as_ns();
        let q = self.select_queue(rqs, now)?;
        let rq = self.queues[q].next_rq.expect("selected with a request");
        if self.in_service == Some(q) && self.inj.wait_dispatch {
            self.inj.wait_dispatch = false;
            self.inj.waited_rq = Some(rq);
        }
        self.dispatch_remove(rqs, q, rq, now);
        if self.in_service == Some(q) {
            self.update_wr_data(q, self.jiffies(now));
        }
        Some(rq)
    }

    /// `bfq_request_merge`: a front-merge candidate in the bio's queue.
    fn request_merge(&self, _rqs: &RequestPool, bio: &iostack_block::Bio) -> Option<RqId> {
        let sync = bio.flags.is_sync();
        let (class, level) = class_level(bio.ioprio);
        let key = if sync {
            (true, bio.pid, 0, 0)
        } else {
            (false, 0, class as u8, level)
        };
        let q = *self.by_owner.get(&key)?;
        self.queues[q].sort_list.find(bio.end_sector())
    }

    /// `bfq_request_merged`: re-sort after a front merge; the size grew.
    fn request_merged(&mut self, rqs: &RequestPool, rq: RqId, kind: MergeKind) {
        let Some(mut b) = self.per_rq.get(rq.0 as usize).copied().flatten() else {
            return;
        };
        let r = rqs.get(rq);
        if kind == MergeKind::Front {
            self.queues[b.q].sort_list.rekey(b.key, r.sector, rq);
            b.key = r.sector;
        }
        b.sectors = r.sectors;
        self.per_rq[rq.0 as usize] = Some(b);
    }

    /// `bfq_requests_merged`: `next` leaves its queue; `rq` takes its FIFO
    /// place if `next` expires first.
    fn requests_merged(&mut self, rqs: &mut RequestPool, rq: RqId, next: RqId) {
        let (Some(mut b), Some(n)) = (
            self.per_rq.get(rq.0 as usize).copied().flatten(),
            self.per_rq.get(next.0 as usize).copied().flatten(),
        ) else {
            return;
        };
        let e = &mut self.queues[n.q];
        e.sort_list.del(n.key, next);
        assert!(e.fifo.remove(&(n.fifo.0, n.fifo.1, next)));
        if e.next_rq == Some(next) {
            e.next_rq = Some(rq);
        }
        self.queued -= 1;
        self.per_rq[next.0 as usize] = None;
        if n.q == b.q && n.fifo < b.fifo {
            let e = &mut self.queues[b.q];
            assert!(e.fifo.remove(&(b.fifo.0, b.fifo.1, rq)));
            b.fifo = n.fifo;
            e.fifo.insert((b.fifo.0, b.fifo.1, rq));
        }
        b.sectors = rqs.get(rq).sectors;
        self.per_rq[rq.0 as usize] = Some(b);
    }

    fn former_request(&self, _rqs: &RequestPool, rq: RqId) -> Option<RqId> {
        let b = self.per_rq.get(rq.0 as usize).copied().flatten()?;
        self.queues[b.q].sort_list.former(b.key, rq)
    }

    fn next_request(&self, _rqs: &RequestPool, rq: RqId) -> Option<RqId> {
        let b = self.per_rq.get(rq.0 as usize).copied().flatten()?;
        self.queues[b.q].sort_list.latter(b.key, rq)
    }

    fn has_work(&self, _h: u16) -> bool {
        self.queued > 0
    }

    /// `bfq_completed_request`: think-time reference, hardware-queueing
    /// detection, and for the queue in service: idle for it, expire it on
    /// its budget timeout, or expire it with nothing left.
    fn completed_request(&mut self, now: Instant, _rqs: &RequestPool, rq: RqId) {
        let Some(b) = self.per_rq.get(rq.0 as usize).copied().flatten() else {
            return;
        };
        let now = now.as_ns();
        let q = b.q;
        // bfq_finish_requeue_request: the waited request's total service
        // time updates the inject limit before it leaves the drive.
        if self.inj.waited_rq == Some(rq) {
            self.update_inject_limit(q, now);
        }
        self.rq_in_driver -= 1;
        self.queues[q].dispatched -= 1;
        let j = self.jiffies(now);
        let e = &mut self.queues[q];
        if e.dispatched == 0 && !e.busy {
            e.budget_timeout = j;
        }
        e.last_end_request = now;
        self.update_hw_tag();
        self.wr_on_completion(q, j);
        if self.in_service == Some(q) {
            let empty = self.queues[q].sort_list.is_empty();
            if empty && self.better_to_idle(q) {
                if self.queues[q].dispatched == 0 {
                    self.arm_slice_timer(q, now);
                }
            } else if self.may_expire_for_budg_timeout(q, now) {
                self.expire(q, Expire::BudgetTimeout, now);
            } else if empty && (self.queues[q].dispatched == 0 || !self.better_to_idle(q)) {
                self.expire(q, Expire::NoMoreRequests, now);
            }
        }
        // bfq_schedule_dispatch when the drive is empty (the kernel also
        // relies on blk-mq's delayed rerun after a dispatch that returned
        // nothing).
        if self.queued > 0 && (!self.queues[q].wait_request || self.rq_in_driver == 0) {
            self.woken.push(ALL_HCTXS);
        }
    }

    fn finish_request(&mut self, _rqs: &RequestPool, rq: RqId) {
        if let Some(slot) = self.per_rq.get_mut(rq.0 as usize) {
            *slot = None;
        }
    }

    fn timer(&self) -> Option<Instant> {
        self.idle_timer.map(Instant)
    }

    /// `bfq_idle_slice_timer_body`: the queue waited for expires (budget
    /// timeout, or too idle) unless a request came; then dispatch.
    fn timer_fired(&mut self, now: Instant) {
        // hrtimer_try_to_cancel: a wait that ended or moved does not fire.
        if self.idle_timer != Some(now.as_ns()) {
            return;
        }
        self.idle_timer = None;
        let Some(q) = self.in_service else {
            return;
        };
        let now = now.as_ns();
        let reason = if self.budget_timed_out(q, now) {
            Expire::BudgetTimeout
        } else if self.queues[q].sort_list.is_empty() {
            Expire::TooIdle
        } else {
            self.woken.push(ALL_HCTXS);
            return;
        };
        self.expire(q, reason, now);
        self.woken.push(ALL_HCTXS);
    }

    fn take_wakeups(&mut self, out: &mut Vec<u16>) {
        out.append(&mut self.woken);
    }

    fn cost(&self) -> iostack_block::SchedCost {
        crate::cost::BFQ
    }

    fn queued(&self) -> usize {
        self.queued
    }
}
