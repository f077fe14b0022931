//! blk-mq, the multi-queue block layer of Linux 5.0+ as in 6.x (`block/blk-mq.c`,
//! `blk-mq-sched.c`, `blk-mq-tag.c`, `blk-merge.c`), beside the 2.6.28-2.6.38
//! single queue behind the same [`BlockQueue`](crate::BlockQueue) interface.
//!
//! * Software queues (`struct blk_mq_ctx`), one per CPU, map onto hardware
//!   queues (`struct blk_mq_hw_ctx`), `min(device queues, CPUs)` of them, CPUs
//!   in contiguous groups (`blk_mq_map_queues` / `group_cpus_evenly`).
//! * Each hardware queue has `queue_depth` driver tags and, with a scheduler,
//!   `nr_requests` scheduler tags (`blk_mq_init_sched`: 2 · min(depth, 128));
//!   a request is its tag, and an allocator that finds none sleeps
//!   (`blk_mq_get_tag`). No S record: 6.x traces no sleep.
//! * A task's on-stack plug (`struct blk_plug`) collects its requests
//!   (`blk_add_rq_to_plug`, P on the first) and releases them at
//!   `blk_finish_plug` or when the task sleeps (`blk_mq_flush_plug_list`, U or
//!   UT with the depth); bios merge into the plug's last request first
//!   (`blk_attempt_plug_merge`), then into the scheduler or the software queue
//!   (`blk_mq_sched_bio_merge`).
//! * Dispatch is `blk_mq_run_hw_queue` → `__blk_mq_sched_dispatch_requests`:
//!   the hardware queue's dispatch list, then the scheduler (one request per
//!   budget and driver tag) or the software queues; `none` without a plug
//!   issues directly (`blk_mq_try_issue_directly`). Completion
//!   (`blk_mq_end_request`) frees the tags, wakes tag sleepers and reruns the
//!   queue where the kernel does (`blk_mq_sched_restart`, the SCSI budget's
//!   `scsi_run_queue_async`), asynchronous runs going to kblockd.
//!
//! Flushes and FUA follow `blk-flush.c` (`flush.rs`).
//!
//! Bios over the queue limits are split (`split.rs`, `__bio_split_to_limits`).
//!
//! Writeback throttling, the rq-qos policy wbt (`wbt.rs`, `blk-wbt.c`), is
//! hooked in at `rq_qos_throttle`, `_track`, `_issue` and `_done`
//! (`rqqos.rs`).
//!
//! Not modelled: requeues, shared tag sets, io_uring's cached
//! request batches, the other rq-qos policies (iolatency, iocost).

mod dispatch;
mod elv;
mod flush;
mod iface;
mod rqqos;
mod sched;
mod split;
mod submit;
mod tags;
pub mod wbt;

pub use sched::{MqElevator, SchedCost, ALL_HCTXS};
pub use tags::Tags;

use crate::bio::{BioId, BioSlab};
use crate::limits::{Partition, QueueLimits};
use crate::queue::{BlockOut, Ctx, QueueConfig, QueueStats};
use crate::request::{RequestPool, RqId};
use iostack_core::{Action, DevT, Pdu, Sector, TaskId, TraceMask, Tracer};
use iostack_des::Instant;
use iostack_device::Device;
use std::collections::{BTreeMap, VecDeque};

/// `BLKDEV_DEFAULT_RQ`: the scheduler tag depth is twice min(depth, this).
pub const BLKDEV_DEFAULT_RQ: u32 = 128;

/// Static configuration of a blk-mq queue.
#[derive(Clone, Debug)]
pub struct MqConfig {
    pub disk: DevT,
    pub partitions: Vec<Partition>,
    pub limits: QueueLimits,
    pub nomerges: u8,
    /// Possible CPUs (one software queue each).
    pub nr_cpus: u32,
    /// CPU of the completion interrupt of a single-queue device (AHCI, SCSI
    /// HBA); a multi-queue device completes on its queue's first CPU.
    pub irq_cpu: u32,
    pub trace_mask: TraceMask,
    /// `queue/nr_requests` as the user set it; `None` for the kernel's value.
    pub nr_requests: Option<u32>,
    /// `queue/wbt_lat_usec` as the user wrote it (`WBT_STATE_ON_MANUAL`; -1
    /// is the device's default, 0 off); `None`: never written, wbt on by
    /// default (`wbt_enable_default`) unless BFQ disables it.
    pub wbt_lat_usec: Option<i64>,
    /// `HZ`, for wbt's jiffies.
    pub hz: u64,
}

impl MqConfig {
    pub fn from_queue_config(q: &QueueConfig, nr_cpus: u32, nr_requests: Option<u32>) -> Self {
        MqConfig {
            disk: q.disk,
            partitions: q.partitions.clone(),
            limits: q.limits,
            nomerges: q.nomerges,
            nr_cpus: nr_cpus.max(1),
            irq_cpu: q.irq_cpu,
            trace_mask: q.trace_mask,
            nr_requests,
            wbt_lat_usec: None,
            hz: q.hz,
        }
    }
}

/// `struct blk_mq_hw_ctx`.
struct Hctx {
    /// Driver tags (`hctx->tags`, the tag set's `queue_depth`).
    tags: Tags,
    /// Scheduler tags (`hctx->sched_tags`), with a scheduler.
    sched_tags: Option<Tags>,
    /// `hctx->dispatch`: requests taken out and not yet issued.
    dispatch: VecDeque<RqId>,
    /// The CPUs mapped to it (`hctx->cpumask`), ascending.
    cpus: Vec<u32>,
    /// `BLK_MQ_S_SCHED_RESTART`.
    restart: bool,
    /// `hctx->run_work` is pending on kblockd.
    run_pending: bool,
    /// `hctx->dispatch_busy` (EWMA, `blk_mq_update_dispatch_busy`).
    dispatch_busy: u32,
}

/// Where a request is (for the invariant check).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    Plug,
    SwQueue,
    Sched,
    Dispatch,
    Driver,
    /// Waiting for a flush (`fq->flush_queue`).
    Flush,
    /// On the requeue or flush list for kblockd's `requeue_work`.
    Requeue,
}

/// blk-mq's own fields of `struct request`.
#[derive(Clone, Copy, Debug)]
struct MqRq {
    hctx: u16,
    tag: Option<u32>,
    sched_tag: Option<u32>,
    budget: bool,
    loc: Loc,
    /// Key of its back-merge hash entry (end sector, insertion sequence).
    hash: Option<(Sector, u64)>,
    /// `rq->wbt_flags`.
    wbt: u8,
}

/// `struct blk_plug` of one task (kept when the plug ends, so its list's
/// buffer is reused by the task's next plug).
#[derive(Default)]
struct Plug {
    /// `current->plug` is set.
    active: bool,
    /// `plug->mq_list`, oldest first (6.12+ `rq_list_add_tail`).
    list: Vec<RqId>,
    /// `plug->has_elevator`.
    has_elevator: bool,
}

/// The tasks' plugs, by task number.
#[derive(Default)]
struct Plugs(Vec<Plug>);

impl Plugs {
    fn get(&self, t: TaskId) -> Option<&Plug> {
        self.0.get(t.0 as usize).filter(|p| p.active)
    }
    fn get_mut(&mut self, t: TaskId) -> Option<&mut Plug> {
        self.0.get_mut(t.0 as usize).filter(|p| p.active)
    }
    fn contains(&self, t: TaskId) -> bool {
        self.get(t).is_some()
    }
    /// `blk_start_plug`.
    fn start(&mut self, t: TaskId) {
        let i = t.0 as usize;
        if self.0.len() <= i {
            self.0.resize_with(i + 1, Plug::default);
        }
        self.0[i].active = true;
    }
    /// `current->plug = NULL` once flushed.
    fn end(&mut self, t: TaskId) {
        if let Some(p) = self.get_mut(t) {
            debug_assert!(p.list.is_empty());
            p.active = false;
        }
    }
    fn values(&self) -> impl Iterator<Item = &Plug> {
        self.0.iter().filter(|p| p.active)
    }
}

pub struct MqQueue {
    cfg: MqConfig,
    elv: Option<Box<dyn MqElevator>>,
    dev: Box<dyn Device>,
    /// `q->nr_requests`.
    nr_requests: u32,
    hctxs: Vec<Hctx>,
    /// `struct blk_mq_ctx` lists, per CPU.
    ctxs: Vec<VecDeque<RqId>>,
    /// `ctx->hctxs[HCTX_TYPE_DEFAULT]`, per CPU.
    cpu_hctx: Vec<u16>,
    bios: BioSlab,
    rqs: RequestPool,
    info: Vec<Option<MqRq>>,
    plugs: Plugs,
    /// `q->last_merge` and the elevator's back-merge hash (`elv_rqhash`).
    last_merge: Option<RqId>,
    hash: BTreeMap<(Sector, u64), RqId>,
    hash_seq: u64,
    /// The SCSI budget (`sdev->queue_depth`), what is taken, and
    /// `sdev->restarts`.
    budget: Option<u32>,
    budget_used: u32,
    budget_restart: bool,
    kblockd: Ctx,
    in_device: u32,
    busy_since: Instant,
    last_issued_end: Option<Sector>,
    dev_out: Vec<(Instant, u64)>,
    stats: QueueStats,
    checks: bool,
    /// `hctx->fq`, per hardware queue.
    fq: Vec<flush::FlushQueue>,
    /// `q->requeue_list`, `q->flush_list`, and `requeue_work` pending.
    requeue_list: Vec<RqId>,
    flush_list: Vec<RqId>,
    requeue_pending: bool,
    /// Flush requests in flight and whether each borrows its first waiter's
    /// driver tag (no scheduler).
    borrowed_tag: Vec<(RqId, bool)>,
    /// Split bios (`bio_chain`): the chains, each bio's chain, and the
    /// remainder to submit once a sleeping front part has its request.
    chains: iostack_core::Slab<split::Chain>,
    chain_of: BTreeMap<u32, u32>,
    split_rest: BTreeMap<u32, BioId>,
    /// The scheduler's timer as armed, and its generation.
    elv_timer_at: Option<Instant>,
    elv_timer_gen: u64,
    /// The scheduler's CPU costs, and when its queue-wide lock is free.
    cost: SchedCost,
    lock_free_at: Instant,
    /// The device's capacity in sectors (fixed for a run).
    capacity: u64,
    /// wbt (`struct rq_wb`), if attached, and its timer's generation.
    wbt: Option<wbt::Wbt>,
    wbt_timer_gen: u64,
}

impl MqQueue {
    /// `blk_mq_init_queue` over the device's tag set, with scheduler `elv`
    /// (`None` is `none`).
    pub fn new(cfg: MqConfig, mut elv: Option<Box<dyn MqElevator>>, dev: Box<dyn Device>) -> Self {
        if let Some(e) = elv.as_mut() {
            e.set_nonrot(!dev.rotational());
        }
        let nr_hw = dev.nr_hw_queues().clamp(1, cfg.nr_cpus);
        let depth = dev.queue_depth();
        let nr_requests = match (&elv, cfg.nr_requests) {
            // blk_mq_init_sched: 2 * min(queue_depth, BLKDEV_DEFAULT_RQ).
            (Some(_), None) => 2 * depth.min(BLKDEV_DEFAULT_RQ),
            (Some(_), Some(n)) => n,
            // blk_mq_update_nr_requests: no more than the tag set without one.
            (None, n) => n.unwrap_or(depth).min(depth),
        };
        let cpu_hctx: Vec<u16> = (0..cfg.nr_cpus)
            .map(|c| (c as u64 * nr_hw as u64 / cfg.nr_cpus as u64) as u16)
            .collect();
        let hctxs = (0..nr_hw)
            .map(|h| Hctx {
                tags: Tags::new(depth, cfg.nr_cpus),
                sched_tags: elv.as_ref().map(|_| Tags::new(nr_requests, cfg.nr_cpus)),
                dispatch: VecDeque::new(),
                cpus: (0..cfg.nr_cpus)
                    .filter(|&c| cpu_hctx[c as usize] as u32 == h)
                    .collect(),
                restart: false,
                run_pending: false,
                dispatch_busy: 0,
            })
            .collect();
        let wbt = rqqos::wbt_init(&cfg, elv.as_deref(), &*dev);
        MqQueue {
            wbt,
            wbt_timer_gen: 0,
            fq: (0..nr_hw).map(|_| flush::FlushQueue::default()).collect(),
            requeue_list: Vec::new(),
            flush_list: Vec::new(),
            requeue_pending: false,
            borrowed_tag: Vec::new(),
            chains: iostack_core::Slab::new("bio chain"),
            chain_of: BTreeMap::new(),
            split_rest: BTreeMap::new(),
            elv_timer_at: None,
            elv_timer_gen: 0,
            cost: elv.as_ref().map(|e| e.cost()).unwrap_or_default(),
            lock_free_at: Instant::ZERO,
            capacity: dev.capacity_sectors(),
            budget: dev.dispatch_budget(),
            ctxs: vec![VecDeque::new(); cfg.nr_cpus as usize],
            cpu_hctx,
            hctxs,
            nr_requests,
            cfg,
            elv,
            dev,
            bios: BioSlab::default(),
            rqs: RequestPool::default(),
            info: Vec::new(),
            plugs: Plugs::default(),
            last_merge: None,
            hash: BTreeMap::new(),
            hash_seq: 0,
            budget_used: 0,
            budget_restart: false,
            kblockd: Ctx { pid: 0, cpu: 0 },
            in_device: 0,
            busy_since: Instant::ZERO,
            last_issued_end: None,
            dev_out: Vec::new(),
            stats: QueueStats::default(),
            checks: cfg!(debug_assertions),
        }
    }

    pub fn nr_hw_queues(&self) -> usize {
        self.hctxs.len()
    }
    pub fn nr_requests(&self) -> u32 {
        self.nr_requests
    }

    /// The calling context runs a scheduler hook of `ns` at `now` after the
    /// CPU time it already spent in this call (`out.cpu_ns`), spinning first
    /// until the queue-wide lock is free if the scheduler has one
    /// (`spin_lock(&dd->lock)`).
    fn sched_cpu(&mut self, now: Instant, ns: u64, out: &mut BlockOut) {
        if ns == 0 {
            return;
        }
        let cursor = now + iostack_des::Duration(out.cpu_ns);
        let start = if self.cost.queue_lock {
            cursor.max(self.lock_free_at)
        } else {
            cursor
        };
        let end = start + iostack_des::Duration(ns);
        if self.cost.queue_lock {
            self.lock_free_at = end;
        }
        self.stats.sched_cpu_ns += end.since(cursor).as_ns();
        out.cpu_ns = end.since(now).as_ns();
    }

    fn mq(&self, rq: RqId) -> &MqRq {
        self.info[rq.0 as usize].as_ref().expect("blk-mq request")
    }
    fn mq_mut(&mut self, rq: RqId) -> &mut MqRq {
        self.info[rq.0 as usize].as_mut().expect("blk-mq request")
    }
    fn set_mq(&mut self, rq: RqId, m: MqRq) {
        let i = rq.0 as usize;
        if self.info.len() <= i {
            self.info.resize(i + 1, None);
        }
        self.info[i] = Some(m);
    }

    /// The CPU a completion interrupt of hardware queue `h` runs on.
    fn irq_ctx(&self, h: u16) -> Ctx {
        let cpu = if self.hctxs.len() > 1 {
            self.hctxs[h as usize].cpus[0]
        } else {
            self.cfg.irq_cpu
        };
        Ctx { pid: 0, cpu }
    }

    // ---------------------------------------------------------------------------
    // Tracing (`kernel/trace/blktrace.c`).

    #[inline]
    fn trace_bio(&self, now: Instant, b: &crate::Bio, action: Action, pdu: Pdu, tr: &mut Tracer) {
        if !tr.enabled() {
            return;
        }
        crate::tracepoint::trace_bio(
            tr,
            (self.cfg.disk, self.cfg.trace_mask),
            now,
            b,
            action,
            pdu,
        );
    }

    fn trace_rq(&self, now: Instant, rq: RqId, ctx: Ctx, action: Action, tr: &mut Tracer) {
        if !tr.enabled() {
            return;
        }
        let r = self.rqs.get(rq);
        let point = crate::tracepoint::RqPoint {
            ctx,
            sector: r.sector,
            sectors: r.sectors,
            flags: r.flags,
            is_request: true,
        };
        crate::tracepoint::trace_rq(tr, (self.cfg.disk, self.cfg.trace_mask), now, point, action);
    }

    #[inline]
    fn trace_simple(&self, now: Instant, ctx: Ctx, action: Action, pdu: Pdu, tr: &mut Tracer) {
        if !tr.enabled() {
            return;
        }
        crate::tracepoint::trace_simple(tr, self.cfg.disk, now, ctx, action, pdu);
    }

    // ---------------------------------------------------------------------------
    // Invariants.

    #[inline]
    fn check(&self) {
        if self.checks {
            self.check_invariants();
        }
    }

    /// Every request is in exactly one place (a plug, a software queue, the
    /// scheduler, a dispatch list, the device), holds the tags its place
    /// needs, and bios are conserved.
    pub fn check_invariants(&self) {
        let mut at = [0usize; 7];
        for m in self.info.iter().flatten() {
            at[m.loc as usize] += 1;
        }
        let live = self.rqs.live();
        assert_eq!(at.iter().sum::<usize>(), live, "request bookkeeping");
        let plugged: usize = self.plugs.values().map(|p| p.list.len()).sum();
        assert_eq!(at[Loc::Plug as usize], plugged, "plugged requests");
        let sw: usize = self.ctxs.iter().map(|c| c.len()).sum();
        assert_eq!(at[Loc::SwQueue as usize], sw, "software-queue requests");
        let disp: usize = self.hctxs.iter().map(|h| h.dispatch.len()).sum();
        assert_eq!(at[Loc::Dispatch as usize], disp, "dispatch-list requests");
        let in_elv = self.elv.as_ref().map_or(0, |e| e.queued());
        assert_eq!(at[Loc::Sched as usize], in_elv, "scheduler requests");
        assert_eq!(at[Loc::Driver as usize] as u32, self.in_device);
        let flush: usize = self.fq.iter().map(|f| f.waiting()).sum();
        assert_eq!(
            at[Loc::Flush as usize],
            flush,
            "requests waiting for a flush"
        );
        let requeue = self.requeue_list.len() + self.flush_list.len();
        assert_eq!(at[Loc::Requeue as usize], requeue, "requeued requests");
        let tags: u32 = self.hctxs.iter().map(|h| h.tags.used()).sum();
        let with_tag = self
            .info
            .iter()
            .flatten()
            .filter(|m| m.tag.is_some())
            .count();
        assert_eq!(tags as usize, with_tag, "driver tags and requests disagree");
        if let Some(b) = self.budget {
            assert!(self.budget_used <= b, "SCSI budget overdrawn");
        }
        assert_eq!(
            self.stats.bios_queued - self.stats.bios_completed,
            self.bios.live() as u64,
            "bios queued and completed disagree with live bios"
        );
    }

    fn sleeping_bios(&self) -> usize {
        self.hctxs
            .iter()
            .map(|h| h.tags.sleepers() + h.sched_tags.as_ref().map_or(0, |t| t.sleepers()))
            .sum::<usize>()
            + self.wbt_sleepers()
    }

    /// The bio `id` is asleep for a tag.
    fn bio(&self, id: BioId) -> &crate::Bio {
        self.bios.get(id)
    }
}
