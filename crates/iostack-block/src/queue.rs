//! `struct request_queue` and the single-queue request path of 2.6.32 to 2.6.38:
//! `__generic_make_request` → `__make_request` → elevator → dispatch list →
//! driver `request_fn` → device → completion. Each function below names the kernel
//! function it models; blktrace events are emitted where the kernel emits them.

use crate::bio::{Bio, BioId, BioRun, BioSlab};
use crate::elevator::{Elevator, ElvCtx, Kick, MayQueue, MergeKind, Placement};
use crate::limits::{Partition, QueueLimits};
use crate::request::{FlushRole, Request, RequestPool, RqId};
use crate::tracepoint::RqPoint;
use iostack_core::{
    Action, BioOwner, DevT, Pdu, ReqFlags, Sector, TaskId, TraceMask, Tracer, Tunables,
};
use iostack_des::{Duration, Instant};
use iostack_device::{Device, DeviceCmd};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

#[path = "flush.rs"]
mod flush;
#[path = "onstack.rs"]
mod onstack;
#[path = "run_merge.rs"]
mod run_merge;
pub use flush::FlushEra;
use flush::FlushState;

/// Multiplicative hash for sector keys (`hash_long` in the kernel's `elv_rqhash`);
/// lookups only, never iterated, so order cannot leak into results.
#[derive(Default)]
struct SectorHasher(u64);

impl Hasher for SectorHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type SectorMap<V> = HashMap<Sector, V, BuildHasherDefault<SectorHasher>>;

/// Static configuration of one queue, built from the tunables and the device.
#[derive(Clone, Debug)]
pub struct QueueConfig {
    pub disk: DevT,
    pub partitions: Vec<Partition>,
    pub limits: QueueLimits,
    pub nr_requests: u32,
    pub nomerges: u8,
    pub unplug_thresh: u32,
    /// Unplug delay in jiffies (at least 1).
    pub unplug_delay_jiffies: u64,
    pub hz: u64,
    pub batch_requests: u32,
    pub batch_time: Duration,
    /// CPU that takes completion interrupts.
    pub irq_cpu: u32,
    /// Which flush/barrier code the kernel runs (`FlushEra::of` the profile).
    pub flush_era: FlushEra,
    /// The flags its blktrace records (`TraceMask::of` the profile).
    pub trace_mask: TraceMask,
    /// 2.6.39+: plugs are the tasks' own (`struct blk_plug`, `onstack.rs`), and
    /// the queue has no plug, unplug timer or threshold of its own.
    pub onstack_plug: bool,
}

impl QueueConfig {
    /// Queue configuration from the declared tunables, clamped by the device.
    pub fn from_tunables(
        t: &Tunables,
        disk: DevT,
        partitions: Vec<Partition>,
        dev: &dyn Device,
    ) -> QueueConfig {
        let hw = dev.hw_limits();
        let hz = t.get_u64("kernel/hz");
        let max_sectors = ((t.get_u64("queue/max_sectors_kb") * 2) as u32).min(hw.max_hw_sectors);
        // blk_queue_make_request: unplug_delay = msecs_to_jiffies(3), at least 1.
        let delay_ms = t.get_u64("queue/unplug_delay_ms");
        let unplug_delay_jiffies = (delay_ms * hz / 1000).max(1);
        QueueConfig {
            disk,
            partitions,
            limits: QueueLimits {
                max_sectors,
                max_hw_sectors: hw.max_hw_sectors,
                max_segments: hw.max_segments,
                logical_block_size: hw.logical_block_size,
            },
            nr_requests: t.get_u64("queue/nr_requests") as u32,
            nomerges: t.get_u64("queue/nomerges") as u8,
            unplug_thresh: t.get_u64("queue/unplug_thresh") as u32,
            unplug_delay_jiffies,
            hz,
            batch_requests: t.get_u64("queue/batch_requests") as u32,
            batch_time: Duration::ms(t.get_u64("queue/batch_time_ms")),
            irq_cpu: 0,
            flush_era: FlushEra::of(t.profile()),
            trace_mask: TraceMask::of(t.profile()),
            onstack_plug: t.profile() >= iostack_core::Profile::V3_10,
        }
    }
}

/// Result of submitting a bio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    /// Queued (merged or in a new request); the submitter continues.
    Queued,
    /// No request could be allocated: the submitter sleeps in `get_request_wait`
    /// until its bio's owner task appears in `BlockOut::woken`.
    Sleeping,
}

/// A bio finished (`bio_endio`).
#[derive(Clone, Copy, Debug)]
pub struct CompletedBio {
    pub owner: BioOwner,
    pub sector: Sector,
    pub bytes: u64,
    pub flags: ReqFlags,
    pub submitted_at: Instant,
    pub error: i32,
    /// Which bios of the owner's run this is (`BioRun`): `nr` of them end here.
    pub run: BioRun,
}

/// Timed events the queue asks its host to schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueEvent {
    /// `unplug_timer` expiry; stale if the generation moved on.
    UnplugTimer(u64),
    /// The elevator's own timer; stale if the generation moved on.
    ElvTimer(u64),
    /// blk-mq: wbt's stat window (`blk_stat_timer_fn` → `wb_timer_fn`);
    /// stale if the generation moved on.
    WbtTimer(u64),
    /// The device completes command `id`.
    DeviceDone(u64),
    /// `kblockd_schedule_work`: work for the kblockd task, which the host runs
    /// through `BlockQueue::run_work` when kblockd gets to it.
    Work(BlockWork),
}

/// Work the queue defers to kblockd (`kblockd_schedule_work`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockWork {
    /// `blk_unplug_work`, queued by the unplug timer (`blk_unplug_timeout`).
    Unplug,
    /// A queue run: `cfq_kick_queue` / `as_work_handler` for the elevator,
    /// `blk_run_queue_async` after a flush sequence.
    RunQueue,
    /// blk-mq: hardware queue N's `run_work` (`blk_mq_run_work_fn`), queued
    /// by an asynchronous `blk_mq_run_hw_queue`.
    RunHwQueue(u16),
    /// blk-mq: `q->requeue_work` (`blk_mq_requeue_work`), which inserts the
    /// requeue and flush lists.
    MqRequeue,
}

/// What a queue operation produced for the host.
#[derive(Default, Debug)]
pub struct BlockOut {
    pub completed: Vec<CompletedBio>,
    /// Sleeping submitters that got their request and may continue.
    pub woken: Vec<TaskId>,
    pub events: Vec<(Instant, QueueEvent)>,
    /// CPU time the calling context spent in the scheduler's hooks,
    /// spinning on its lock included (blk-mq schedulers' `SchedCost`); the
    /// host charges it to the task that made the call.
    pub cpu_ns: u64,
}

/// A dispatched request counts as a seek when it starts more than this many
/// sectors (64 KiB) from the end of the one dispatched before it: seekwatcher's
/// rule on D events (reference formats-and-tools.md §4.1), the tool whose seek
/// graphs seed 001's post reads.
pub const SEEK_SECTORS: u64 = 128;

/// Counters a run reports, and the invariant checker reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Dispatched requests that start more than `SEEK_SECTORS` away from where
    /// the previously dispatched one ended: seekwatcher's seek count.
    pub dispatch_seeks: u64,
    pub bios_queued: u64,
    pub bios_completed: u64,
    pub bytes_queued: u64,
    pub bytes_completed: u64,
    pub back_merges: u64,
    pub front_merges: u64,
    pub request_merges: u64,
    pub requests_allocated: u64,
    pub requests_dispatched: u64,
    pub requests_completed: u64,
    pub sleeps: u64,
    /// blk-mq: bios that slept in wbt's `rq_qos_wait`.
    pub wbt_sleeps: u64,
    pub plugs: u64,
    pub unplugs_io: u64,
    pub unplugs_timer: u64,
    pub unplugs_thresh: u64,
    pub max_in_driver: u32,
    /// Sum over completed requests of D→C time (`in_queue` of diskstats).
    pub busy_ns: u64,
    /// Time with at least one request in the driver (`io_ticks`, for `util`).
    pub io_ticks_ns: u64,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks_ns: u64,
    pub write_ticks_ns: u64,
    /// CPU time in blk-mq scheduler hooks, spinning on the scheduler's lock
    /// included, in every context (tasks, kblockd, interrupts).
    pub sched_cpu_ns: u64,
}

/// Per-process `struct io_context` batching state (`ioc_batching`).
#[derive(Clone, Copy, Default)]
struct IoContext {
    nr_batch_requests: u32,
    last_waited: Instant,
}

#[derive(Clone, Copy)]
struct Waiter {
    bio: BioId,
    /// 2.6.39+: the requests on the sleeper's plug when it looked
    /// (`request_count` of `blk_queue_bio`), for its P after the wait.
    plug_count: u32,
}

/// Who runs a queue operation (for the pid/cpu of traced events).
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    pub pid: u32,
    pub cpu: u32,
}

pub struct RequestQueue {
    cfg: QueueConfig,
    elv: Box<dyn Elevator>,
    dev: Box<dyn Device>,
    /// The device's fixed properties, read once (`blk_queue_nonrot`, the
    /// driver's queue depth).
    dev_rotational: bool,
    dev_depth: u32,
    /// Whether the elevator keeps a timer (`Elevator::has_timer`), read once.
    elv_has_timer: bool,
    bios: BioSlab,
    rqs: RequestPool,
    /// `q->queue_head`: requests released by the elevator, in dispatch order.
    dispatch: VecDeque<RqId>,
    /// `q->last_merge`.
    last_merge: Option<RqId>,
    /// The request the last submitted bio back-merged into, with that bio,
    /// when no request merge followed (`run_merge.rs`).
    back_merged: Option<(RqId, BioId)>,
    /// The kernel's bios held (a record of a run counts as its `nr`).
    bios_held: u64,
    /// `elv_rqhash`: end sector → request, for back merges of sorted requests.
    hash: SectorMap<RqId>,
    /// Requests whose end sector collided in `hash` (rare; linear scan).
    hash_overflow: Vec<(Sector, RqId)>,
    /// `q->end_sector` and `q->boundary_rq` for `elv_dispatch_sort`.
    end_sector: Sector,
    /// End of the last request issued (D), for `QueueStats::dispatch_seeks`.
    last_issued_end: Option<Sector>,
    boundary_rq: Option<RqId>,
    plugged: bool,
    unplug_gen: u64,
    /// The kblockd task, as timer-context work is traced (`set_kblockd`).
    kblockd: Ctx,
    elv_timer_gen: u64,
    elv_timer_at: Option<Instant>,
    /// `rl->count[sync]`: allocated requests per pool (index 1 = sync).
    count: [u32; 2],
    full: [bool; 2],
    congested: [bool; 2],
    /// Allocators woken inside `attempt_merge`, retried after the merge.
    deferred_wakes: Vec<Waiter>,
    waiters: [VecDeque<Waiter>; 2],
    iocs: BTreeMap<u32, IoContext>,
    /// `q->in_flight[sync]`: requests the driver has taken.
    in_flight: [u32; 2],
    /// Requests handed to the device.
    in_device: u32,
    /// Since when the device has been busy (`in_device > 0`).
    busy_since: Instant,
    msgs: Vec<String>,
    dev_out: Vec<(Instant, u64)>,
    stats: QueueStats,
    checks: bool,
    /// Flush and FUA sequencing (`blk-flush.c` / `blk-barrier.c`).
    flush: FlushState,
    /// 2.6.39+: each plugging task's `plug->list` (`onstack.rs`).
    task_plugs: BTreeMap<TaskId, Vec<RqId>>,
    /// Requests on those lists.
    nr_plugged: u32,
}

impl RequestQueue {
    pub fn new(cfg: QueueConfig, mut elv: Box<dyn Elevator>, dev: Box<dyn Device>) -> Self {
        assert!(cfg.nr_requests >= 4, "BLKDEV_MIN_RQ is 4");
        elv.set_nonrot(!dev.rotational());
        let flush = FlushState::new(cfg.flush_era, dev.write_cache(), dev.fua());
        RequestQueue {
            flush,
            elv_has_timer: elv.has_timer(),
            dev_rotational: dev.rotational(),
            dev_depth: dev.queue_depth(),
            cfg,
            elv,
            dev,
            bios: BioSlab::default(),
            rqs: RequestPool::default(),
            dispatch: VecDeque::new(),
            last_merge: None,
            back_merged: None,
            bios_held: 0,
            hash: SectorMap::default(),
            hash_overflow: Vec::new(),
            end_sector: 0,
            last_issued_end: None,
            boundary_rq: None,
            plugged: false,
            unplug_gen: 0,
            kblockd: Ctx { pid: 0, cpu: 0 },
            elv_timer_gen: 0,
            elv_timer_at: None,
            count: [0; 2],
            full: [false; 2],
            congested: [false; 2],
            deferred_wakes: Vec::new(),
            waiters: [VecDeque::new(), VecDeque::new()],
            iocs: BTreeMap::new(),
            in_flight: [0; 2],
            in_device: 0,
            busy_since: Instant::ZERO,
            msgs: Vec::new(),
            dev_out: Vec::new(),
            stats: QueueStats::default(),
            checks: cfg!(debug_assertions),
            task_plugs: BTreeMap::new(),
            nr_plugged: 0,
        }
    }

    /// The kblockd task: the elevator's timer work is traced as it, and so is
    /// `QueueEvent::Work` given to `handle` by a host without a kblockd task.
    pub fn set_kblockd(&mut self, ctx: Ctx) {
        self.kblockd = ctx;
    }

    /// Turn the full invariant check after every operation on or off.
    pub fn set_checks(&mut self, on: bool) {
        self.checks = on;
    }

    pub fn config(&self) -> &QueueConfig {
        &self.cfg
    }
    pub fn stats(&self) -> &QueueStats {
        &self.stats
    }
    pub fn elevator_name(&self) -> &'static str {
        self.elv.name()
    }
    pub fn device(&self) -> &dyn Device {
        &*self.dev
    }
    /// `bdi_write_congested` / `bdi_read_congested` (index 1 = sync).
    pub fn congested(&self, sync: bool) -> bool {
        self.congested[sync as usize]
    }
    pub fn is_plugged(&self) -> bool {
        self.plugged
    }
    /// Requests allocated and not yet freed.
    pub fn allocated(&self) -> u32 {
        self.count[0] + self.count[1]
    }
    /// Bios asleep in `get_request_wait`, by pool (async, sync).
    pub fn sleepers(&self) -> [usize; 2] {
        [self.waiters[0].len(), self.waiters[1].len()]
    }

    /// True when nothing is queued, in flight or waiting.
    pub fn idle(&self) -> bool {
        self.rqs.live() == 0 && self.bios.live() == 0
    }

    fn jiffies(&self, now: Instant) -> u64 {
        now.as_ns() * self.cfg.hz / 1_000_000_000
    }

    fn jiffy_time(&self, j: u64) -> Instant {
        // First instant at which `jiffies` reads `j`.
        Instant((j * 1_000_000_000).div_ceil(self.cfg.hz))
    }

    // ---------------------------------------------------------------------------
    // Submission.

    /// `generic_make_request` → `__generic_make_request`: partition remap (A), size
    /// checks, Q, then `__make_request`.
    pub fn submit_bio(
        &mut self,
        now: Instant,
        mut bio: Bio,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> Submit {
        assert!(
            bio.sectors > 0 || bio.flags.contains(ReqFlags::FLUSH),
            "empty bio that is not a flush"
        );
        assert!(
            bio.sectors <= self.cfg.limits.max_hw_sectors,
            "bio too big device: {} > {} sectors",
            bio.sectors,
            self.cfg.limits.max_hw_sectors
        );
        bio.submitted_at = now;
        bio.next = None;
        if bio.dev != self.cfg.disk {
            // blk_partition_remap
            let (from_dev, old) = (bio.dev, bio.sector);
            bio.sector += self.partition_start(&bio);
            bio.dev = self.cfg.disk;
            self.trace_bio(
                now,
                &bio,
                Action::Remap,
                Pdu::Remap {
                    from_dev,
                    from_sector: old,
                },
                tr,
            );
        }
        assert!(
            bio.end_sector() <= self.dev.capacity_sectors(),
            "bio beyond end of device"
        );
        self.trace_bio(now, &bio, Action::Queue, Pdu::None, tr);
        self.stats.bios_queued += 1;
        self.stats.bytes_queued += bio.bytes();
        let r = self.make_request(now, bio, tr, out);
        self.check();
        r
    }

    /// `__make_request` (V2632 `block/blk-core.c`).
    fn make_request(
        &mut self,
        now: Instant,
        bio: Bio,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> Submit {
        let ctx = Ctx {
            pid: bio.pid,
            cpu: bio.cpu,
        };
        let unplug = bio.flags.contains(ReqFlags::UNPLUG);
        let flush_or_fua = bio.flags.is_flush_or_fua();
        let id = self.bios.alloc(bio);
        self.bios_held += 1;
        self.back_merged = None;
        if self.cfg.onstack_plug {
            return self.queue_bio(now, id, ctx, tr, out);
        }

        // REQ_FLUSH/REQ_FUA (a barrier before 2.6.37) bios never merge: they go
        // straight to get_rq (`__make_request`, `blk_queue_bio`).
        if !flush_or_fua && !self.elv_queue_empty() {
            if let Some((rq, kind)) = self.elv_merge(id) {
                let merged = match kind {
                    MergeKind::Back => self.bio_attempt_back_merge(now, rq, id, tr),
                    MergeKind::Front => self.bio_attempt_front_merge(now, rq, id, tr),
                };
                if merged {
                    self.make_request_out(now, ctx, unplug, tr, out);
                    self.run_deferred_wakes(now, tr, out);
                    return Submit::Queued;
                }
            }
        }

        // get_rq:
        match self.get_request(now, id, tr) {
            Some(rq) => {
                self.plug_and_insert(now, rq, ctx, tr, out);
                self.make_request_out(now, ctx, unplug, tr, out);
                Submit::Queued
            }
            None => {
                // get_request_wait: S, unplug (no U), sleep.
                let sync = self.bios.get(id).flags.is_sync() as usize;
                let b = *self.bios.get(id);
                self.trace_bio(now, &b, Action::SleepRq, Pdu::None, tr);
                self.stats.sleeps += 1;
                self.waiters[sync].push_back(Waiter {
                    bio: id,
                    plug_count: 0,
                });
                self.generic_unplug_device_locked(now, ctx, tr, out);
                Submit::Sleeping
            }
        }
    }

    /// Sleepers woken by a request freed in a request-to-request merge.
    fn run_deferred_wakes(&mut self, now: Instant, tr: &mut Tracer, out: &mut BlockOut) {
        while let Some(bio) = self.deferred_wakes.pop() {
            self.retry_sleeper(now, bio, tr, out);
        }
    }

    /// The `out:` label of `__make_request`.
    fn make_request_out(
        &mut self,
        now: Instant,
        ctx: Ctx,
        unplug: bool,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if unplug || !self.queue_should_plug() {
            self.generic_unplug_device_locked(now, ctx, tr, out);
        }
    }

    /// `queue_should_plug`: not for non-rotational queues that queue commands.
    fn queue_should_plug(&self) -> bool {
        self.dev_rotational || self.dev_depth <= 1
    }

    /// `elv_queue_empty`.
    fn elv_queue_empty(&self) -> bool {
        self.dispatch.is_empty() && self.elv.queue_empty()
    }

    /// `elv_rq_merge_ok` + `rq_mergeable`.
    fn rq_merge_ok(&self, rq: RqId, bio: BioId) -> bool {
        let r = self.rqs.get(rq);
        let b = self.bios.get(bio);
        if r.flags.contains(ReqFlags::NOMERGE) || r.started || r.dispatched {
            return false;
        }
        if r.is_write() != b.flags.is_write() {
            return false;
        }
        if r.flags.contains(ReqFlags::DISCARD) != b.flags.contains(ReqFlags::DISCARD) {
            return false;
        }
        self.elv.allow_merge(&self.rqs, rq, b)
    }

    /// `elv_merge` (V2632 `block/elevator.c`): last-merge cache, back-merge hash,
    /// then the scheduler's front-merge lookup.
    fn elv_merge(&mut self, bio: BioId) -> Option<(RqId, MergeKind)> {
        if self.cfg.nomerges >= 2 {
            return None;
        }
        let (bsec, bsecs) = {
            let b = self.bios.get(bio);
            (b.sector, b.sectors as u64)
        };
        if let Some(lm) = self.last_merge {
            if self.rq_merge_ok(lm, bio) {
                let r = self.rqs.get(lm);
                if r.end_sector() == bsec {
                    return Some((lm, MergeKind::Back));
                } else if r.sector.checked_sub(bsecs) == Some(bsec) {
                    return Some((lm, MergeKind::Front));
                }
            }
        }
        if self.cfg.nomerges == 1 {
            return None;
        }
        if let Some(rq) = self.rqhash_find(bsec) {
            if self.rq_merge_ok(rq, bio) {
                return Some((rq, MergeKind::Back));
            }
        }
        let b = *self.bios.get(bio);
        if let Some(rq) = self.elv.merge(&self.rqs, &b) {
            if self.rq_merge_ok(rq, bio) && self.rqs.get(rq).sector == b.end_sector() {
                return Some((rq, MergeKind::Front));
            }
        }
        None
    }

    /// `ll_back_merge_fn` / `ll_front_merge_fn`: size and segment limits. On failure
    /// the request is marked `REQ_NOMERGE` and dropped from the last-merge cache.
    fn ll_merge_ok(&mut self, rq: RqId, bio: BioId) -> bool {
        let (bs, bseg) = {
            let b = self.bios.get(bio);
            (b.sectors, b.segments)
        };
        let r = self.rqs.get(rq);
        if r.sectors + bs > self.cfg.limits.max_sectors
            || r.segments + bseg > self.cfg.limits.max_segments
        {
            let r = self.rqs.get_mut(rq);
            r.flags = r.flags | ReqFlags::NOMERGE;
            if self.last_merge == Some(rq) {
                self.last_merge = None;
            }
            return false;
        }
        true
    }

    /// `bio_attempt_back_merge` for a request in the elevator: the bio joins
    /// it, then the request may merge with the next one (`attempt_back_merge`)
    /// or the elevator hears of it (`elv_merged_request`).
    fn bio_attempt_back_merge(
        &mut self,
        now: Instant,
        rq: RqId,
        bio: BioId,
        tr: &mut Tracer,
    ) -> bool {
        let old_end = self.rqs.get(rq).end_sector();
        if !self.bio_link_back(now, rq, bio, tr) {
            return false;
        }
        // The request's hash entry is still keyed by its old end: take it out
        // before attempt_merge looks the request up by its new end (the kernel
        // repositions the hash node itself, `elv_rqhash_reposition`). Left in,
        // it outlived the request once `next` was merged into it and freed.
        self.rqhash_del_key(old_end, rq);
        // attempt_back_merge, else elv_merged_request.
        if !self.attempt_back_merge(rq) {
            self.elv.merged(&self.rqs, rq, MergeKind::Back);
            self.rqhash_add(rq);
            self.last_merge = Some(rq);
            self.back_merged = Some((rq, bio));
        }
        true
    }

    /// `bio_attempt_front_merge` for a request in the elevator.
    fn bio_attempt_front_merge(
        &mut self,
        now: Instant,
        rq: RqId,
        bio: BioId,
        tr: &mut Tracer,
    ) -> bool {
        if !self.bio_link_front(now, rq, bio, tr) {
            return false;
        }
        if !self.attempt_front_merge(rq) {
            self.elv.merged(&self.rqs, rq, MergeKind::Front);
            self.last_merge = Some(rq);
        }
        true
    }

    /// The bio part of `bio_attempt_back_merge`: `ll_back_merge_fn`, M, and the
    /// bio appended to the request.
    fn bio_link_back(&mut self, now: Instant, rq: RqId, bio: BioId, tr: &mut Tracer) -> bool {
        if !self.ll_merge_ok(rq, bio) {
            return false;
        }
        let b = *self.bios.get(bio);
        self.trace_bio(now, &b, Action::BackMerge, Pdu::None, tr);
        self.stats.back_merges += 1;
        self.count_merge(b.flags.is_write());
        let tail = self.rqs.get(rq).bio_tail;
        self.bios.get_mut(tail).next = Some(bio);
        let r = self.rqs.get_mut(rq);
        r.bio_tail = bio;
        r.sectors += b.sectors;
        r.segments += b.segments;
        r.ioprio = r.ioprio.min(b.ioprio);
        true
    }

    /// The bio part of `bio_attempt_front_merge`: `ll_front_merge_fn`, F, and
    /// the bio put at the request's head.
    fn bio_link_front(&mut self, now: Instant, rq: RqId, bio: BioId, tr: &mut Tracer) -> bool {
        if !self.ll_merge_ok(rq, bio) {
            return false;
        }
        let b = *self.bios.get(bio);
        self.trace_bio(now, &b, Action::FrontMerge, Pdu::None, tr);
        self.stats.front_merges += 1;
        self.count_merge(b.flags.is_write());
        let head = self.rqs.get(rq).bio_head;
        self.bios.get_mut(bio).next = Some(head);
        let r = self.rqs.get_mut(rq);
        r.bio_head = bio;
        r.sector = b.sector;
        r.sectors += b.sectors;
        r.segments += b.segments;
        r.ioprio = r.ioprio.min(b.ioprio);
        true
    }

    fn count_merge(&mut self, write: bool) {
        if write {
            self.stats.write_merges += 1;
        } else {
            self.stats.read_merges += 1;
        }
    }

    /// `attempt_back_merge`: merge `rq` with the elevator's next request.
    fn attempt_back_merge(&mut self, rq: RqId) -> bool {
        match self.elv.latter_request(&self.rqs, rq) {
            Some(next) => self.attempt_merge(rq, next),
            None => false,
        }
    }

    /// `attempt_front_merge`: merge the elevator's previous request with `rq`.
    fn attempt_front_merge(&mut self, rq: RqId) -> bool {
        match self.elv.former_request(&self.rqs, rq) {
            Some(prev) => self.attempt_merge(prev, rq),
            None => false,
        }
    }

    /// `attempt_merge` (V2632 `block/blk-merge.c`): request-request merge.
    fn attempt_merge(&mut self, req: RqId, next: RqId) -> bool {
        {
            let r = self.rqs.get(req);
            let n = self.rqs.get(next);
            let mergeable =
                |x: &Request| !(x.flags.contains(ReqFlags::NOMERGE) || x.started || x.dispatched);
            if !mergeable(r) || !mergeable(n) {
                return false;
            }
            if r.end_sector() != n.sector || r.is_write() != n.is_write() {
                return false;
            }
            if r.flags.contains(ReqFlags::DISCARD) != n.flags.contains(ReqFlags::DISCARD) {
                return false;
            }
            // ll_merge_requests_fn
            if r.sectors + n.sectors > self.cfg.limits.max_sectors
                || r.segments + n.segments > self.cfg.limits.max_segments
            {
                return false;
            }
        }
        let n = self.rqs.get(next).clone();
        let old_end = self.rqs.get(req).end_sector();
        let tail = self.rqs.get(req).bio_tail;
        self.bios.get_mut(tail).next = Some(n.bio_head);
        {
            let r = self.rqs.get_mut(req);
            if r.start_time > n.start_time {
                r.start_time = n.start_time;
            }
            r.bio_tail = n.bio_tail;
            r.sectors += n.sectors;
            r.segments += n.segments;
            r.ioprio = r.ioprio.min(n.ioprio);
        }
        // elv_merge_requests: the elevator and the hash know `next` only if it
        // was sorted (2.6.39+ merges a plugged request on insertion).
        if n.sorted {
            self.elv.merged_requests(&mut self.rqs, req, next);
        }
        self.rqhash_del_key(old_end, req);
        self.rqhash_add(req);
        if n.sorted {
            self.rqhash_del_key(n.end_sector(), next);
        }
        self.last_merge = Some(req);
        self.stats.request_merges += 1;
        // __blk_put_request(q, next): not started, so no completion accounting;
        // freed_request may wake a sleeping allocator, who retries once the
        // submitter holding the queue lock is done.
        if let Some(bio) = self.free_request(next) {
            self.deferred_wakes.push(bio);
        }
        true
    }

    // ---------------------------------------------------------------------------
    // Back-merge hash (`elv_rqhash_*`).

    fn rqhash_add(&mut self, rq: RqId) {
        let r = self.rqs.get_mut(rq);
        debug_assert!(!r.on_hash, "request hashed twice");
        r.on_hash = true;
        let end = r.end_sector();
        if let Some(old) = self.hash.insert(end, rq) {
            // hlist_add_head: the newer request is found first; keep the older one.
            self.hash_overflow.push((end, old));
        }
    }

    fn rqhash_del_key(&mut self, end: Sector, rq: RqId) {
        if let Entry::Occupied(e) = self.hash.entry(end) {
            if *e.get() != rq {
                return self.rqhash_del_overflow(end, rq);
            }
            e.remove();
            if let Some(i) = self.hash_overflow.iter().position(|&(e, _)| e == end) {
                let (_, r) = self.hash_overflow.remove(i);
                self.hash.insert(end, r);
            }
        } else {
            return self.rqhash_del_overflow(end, rq);
        }
        self.rqs.get_mut(rq).on_hash = false;
    }

    /// The entry of `rq` under `end` is one of the overflow entries (two
    /// requests ending at the same sector), or there is none.
    fn rqhash_del_overflow(&mut self, end: Sector, rq: RqId) {
        let at = self
            .hash_overflow
            .iter()
            .position(|&(e, r)| e == end && r == rq);
        if let Some(i) = at {
            self.hash_overflow.remove(i);
            self.rqs.get_mut(rq).on_hash = false;
        }
    }

    /// The request ending at `sector`, if any. An entry is always a queued request
    /// ending at its key (checked here, where a stale entry would be used).
    fn rqhash_find(&self, sector: Sector) -> Option<RqId> {
        let rq = self.hash.get(&sector).copied()?;
        let r = self.rqs.get(rq);
        assert!(
            r.on_hash && r.end_sector() == sector && !r.dispatched,
            "back-merge hash: entry at sector {sector} is a request ending at {} \
             (dispatched {})",
            r.end_sector(),
            r.dispatched
        );
        Some(rq)
    }

    // ---------------------------------------------------------------------------
    // Request allocation.

    fn ioc_batching(&self, now: Instant, pid: u32) -> bool {
        match self.iocs.get(&pid) {
            None => false,
            Some(ioc) => {
                ioc.nr_batch_requests == self.cfg.batch_requests
                    || (ioc.nr_batch_requests > 0 && now < ioc.last_waited + self.cfg.batch_time)
            }
        }
    }

    fn ioc_set_batching(&mut self, now: Instant, pid: u32) {
        if self.ioc_batching(now, pid) {
            return;
        }
        let n = self.cfg.batch_requests;
        let ioc = self.iocs.entry(pid).or_default();
        ioc.nr_batch_requests = n;
        ioc.last_waited = now;
    }

    fn congestion_on(&self) -> u32 {
        // queue_congestion_on_threshold: nr - nr/8 + 1
        let nr = self.cfg.nr_requests;
        (nr - nr / 8 + 1).min(nr)
    }

    fn congestion_off(&self) -> u32 {
        // queue_congestion_off_threshold: nr - nr/8 - nr/16 - 1, at least 1
        let nr = self.cfg.nr_requests;
        (nr - nr / 8 - nr / 16).saturating_sub(1).max(1)
    }

    /// `get_request` (V2632 `block/blk-core.c`).
    fn get_request(&mut self, now: Instant, bio: BioId, tr: &mut Tracer) -> Option<RqId> {
        let b = *self.bios.get(bio);
        let is_sync = b.flags.is_sync() as usize;
        let may = self.elv.may_queue(&b);
        if may == MayQueue::No {
            return None;
        }
        let nr = self.cfg.nr_requests;
        if self.count[is_sync] + 1 >= self.congestion_on() {
            if self.count[is_sync] + 1 >= nr {
                if !self.full[is_sync] {
                    self.ioc_set_batching(now, b.pid);
                    self.full[is_sync] = true;
                } else if may != MayQueue::Must && !self.ioc_batching(now, b.pid) {
                    return None;
                }
            }
            self.congested[is_sync] = true;
        }
        // The hard cap: no pool exceeds 1.5 × nr_requests.
        if self.count[is_sync] >= 3 * nr / 2 {
            return None;
        }
        self.count[is_sync] += 1;
        if self.ioc_batching(now, b.pid) {
            if let Some(ioc) = self.iocs.get_mut(&b.pid) {
                ioc.nr_batch_requests -= 1;
            }
        }
        // init_request_from_bio
        let rq = self.rqs.alloc(Request {
            sector: b.sector,
            sectors: b.sectors,
            segments: b.segments,
            flags: if b.flags.is_flush_or_fua() {
                // init_request_from_bio: REQ_HARDBARRIER | REQ_NOMERGE, or
                // REQ_NOMERGE_FLAGS covering REQ_FLUSH | REQ_FUA.
                b.flags.remove(ReqFlags::UNPLUG) | ReqFlags::NOMERGE
            } else {
                b.flags.remove(ReqFlags::UNPLUG)
            },
            pid: b.pid,
            cpu: b.cpu,
            start_time: now,
            fifo_time: now,
            started: false,
            dispatched: false,
            in_driver: false,
            sync_pool: is_sync == 1,
            ioprio: b.ioprio,
            bio_head: bio,
            bio_tail: bio,
            elv_private: 0,
            sorted: false,
            softbarrier: false,
            role: FlushRole::None,
            fseq: 0,
            on_hash: false,
        });
        self.stats.requests_allocated += 1;
        self.trace_bio(now, &b, Action::GetRq, Pdu::None, tr);
        Some(rq)
    }

    /// `freed_request` / `__freed_request`: wake one sleeping allocator.
    fn freed_request(&mut self, sync: usize) -> Option<Waiter> {
        assert!(self.count[sync] > 0, "request pool underflow");
        self.count[sync] -= 1;
        if self.count[sync] < self.congestion_off() {
            self.congested[sync] = false;
        }
        if self.count[sync] < self.cfg.nr_requests {
            self.full[sync] = false;
            return self.waiters[sync].pop_front();
        }
        None
    }

    fn free_request(&mut self, rq: RqId) -> Option<Waiter> {
        self.elv.put_request(&self.rqs, rq);
        if self.last_merge == Some(rq) {
            self.last_merge = None;
        }
        if self.boundary_rq == Some(rq) {
            self.boundary_rq = None;
        }
        let r = self.rqs.free(rq);
        Self::put_check(&r);
        self.freed_request(r.sync_pool as usize)
    }

    /// `__blk_put_request`'s `BUG_ON(ELV_ON_HASH(req))`: a request is off the
    /// back-merge hash before it is freed, so no entry can outlive it (checked in
    /// every build; O(1)).
    fn put_check(r: &Request) {
        assert!(
            !r.on_hash,
            "request {}+{} freed while on the back-merge hash",
            r.sector, r.sectors
        );
    }

    /// A woken allocator retries in its own context (`get_request_wait` loop): it
    /// becomes a batcher, allocates (G), then plugs and inserts as `__make_request`
    /// goes on after the wait.
    fn retry_sleeper(&mut self, now: Instant, w: Waiter, tr: &mut Tracer, out: &mut BlockOut) {
        let Waiter { bio, plug_count } = w;
        let b = *self.bios.get(bio);
        let ctx = Ctx {
            pid: b.pid,
            cpu: b.cpu,
        };
        self.ioc_set_batching(now, b.pid);
        match self.get_request(now, bio, tr) {
            Some(rq) if self.cfg.onstack_plug => {
                self.plug_or_insert(now, b.owner.task, rq, plug_count, ctx, tr, out);
                out.woken.push(b.owner.task);
            }
            Some(rq) => {
                self.plug_and_insert(now, rq, ctx, tr, out);
                let unplug = b.flags.contains(ReqFlags::UNPLUG);
                self.make_request_out(now, ctx, unplug, tr, out);
                out.woken.push(b.owner.task);
            }
            None => {
                self.trace_bio(now, &b, Action::SleepRq, Pdu::None, tr);
                self.stats.sleeps += 1;
                let sync = b.flags.is_sync() as usize;
                self.waiters[sync].push_back(Waiter { bio, plug_count });
                if !self.cfg.onstack_plug {
                    self.generic_unplug_device_locked(now, ctx, tr, out);
                }
            }
        }
    }

    // ---------------------------------------------------------------------------
    // Plugging and insertion.

    /// Plug if the elevator is empty (`blk_plug_device`), then `add_request`.
    fn plug_and_insert(
        &mut self,
        now: Instant,
        rq: RqId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if self.queue_should_plug() && self.elv_queue_empty() {
            self.plug_device(now, ctx, tr, out);
        }
        self.add_request(now, rq, ctx, tr, out);
    }

    /// `blk_plug_device`: P on the 0→1 transition, arm the unplug timer.
    fn plug_device(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        if self.plugged {
            return;
        }
        self.plugged = true;
        self.stats.plugs += 1;
        self.unplug_gen += 1;
        // mod_timer(&q->unplug_timer, jiffies + q->unplug_delay)
        let at = self.jiffy_time(self.jiffies(now) + self.cfg.unplug_delay_jiffies);
        out.events
            .push((at, QueueEvent::UnplugTimer(self.unplug_gen)));
        self.trace_simple(now, ctx, Action::Plug, Pdu::None, tr);
    }

    /// `blk_remove_plug`: clear the plug and the timer; true if it was plugged.
    fn remove_plug(&mut self) -> bool {
        if !self.plugged {
            return false;
        }
        self.plugged = false;
        self.unplug_gen += 1; // del_timer: a pending expiry becomes stale
        true
    }

    /// `add_request` → `__elv_add_request(ELEVATOR_INSERT_SORT)` → `elv_insert`.
    fn add_request(
        &mut self,
        now: Instant,
        rq: RqId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if self.rqs.get(rq).flags.is_flush_or_fua() {
            self.insert_flush(now, rq, ctx, tr, out);
            return;
        }
        self.trace_rq(now, rq, ctx, Action::Insert, tr);
        self.elv_insert_sort(now, rq, ctx, tr, out);
    }

    /// `elv_insert(ELEVATOR_INSERT_SORT)`: into the back-merge hash and the
    /// elevator; a plugged queue unplugs once enough requests wait.
    fn elv_insert_sort(
        &mut self,
        now: Instant,
        rq: RqId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        self.rqs.get_mut(rq).sorted = true;
        let mergeable = !self.rqs.get(rq).flags.contains(ReqFlags::NOMERGE);
        if mergeable {
            self.rqhash_add(rq);
            if self.last_merge.is_none() {
                self.last_merge = Some(rq);
            }
        }
        let mut ectx = ElvCtx {
            now,
            msgs: &mut self.msgs,
            trace: tr.enabled(),
            kick: Kick::None,
        };
        self.elv.add_request(&mut ectx, &mut self.rqs, rq);
        let kick = ectx.kick;
        self.flush_msgs(now, ctx, tr);
        self.sync_elv_timer(out);
        self.handle_kick(now, kick, ctx, tr, out);
        // elv_insert: unplug once enough requests wait outside the driver.
        if self.plugged {
            let nrq = (self.count[0] + self.count[1])
                .saturating_sub(self.in_flight[0] + self.in_flight[1]);
            if nrq >= self.cfg.unplug_thresh {
                self.stats.unplugs_thresh += 1;
                self.generic_unplug_device_locked(now, ctx, tr, out);
            }
        }
    }

    /// `__generic_unplug_device`: remove the plug and run the driver (non-rotational
    /// queues run even when not plugged).
    fn generic_unplug_device_locked(
        &mut self,
        now: Instant,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if !self.remove_plug() && self.dev_rotational {
            return;
        }
        self.request_fn(now, ctx, tr, out);
    }

    /// `blk_unplug` via `blk_run_address_space` / `blk_run_backing_dev`: an explicit
    /// unplug by a waiting task. Traces U with the allocated-request count, whether
    /// or not the queue was plugged, then `generic_unplug_device`.
    /// 2.6.39 removed the call with the queue's plug: nothing happens then.
    pub fn unplug(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        if self.cfg.onstack_plug {
            return;
        }
        self.stats.unplugs_io += 1;
        let depth = self.allocated() as u64;
        self.trace_simple(now, ctx, Action::UnplugIo, Pdu::Unplug { depth }, tr);
        if self.plugged {
            self.generic_unplug_device_locked(now, ctx, tr, out);
        }
        self.check();
    }

    /// Handle a timed event the queue asked for.
    pub fn handle(&mut self, now: Instant, ev: QueueEvent, tr: &mut Tracer, out: &mut BlockOut) {
        let kblockd = self.kblockd;
        match ev {
            QueueEvent::UnplugTimer(gen) => {
                if gen != self.unplug_gen || !self.plugged {
                    return;
                }
                // blk_unplug_timeout: UT from softirq context, then kblockd work.
                self.stats.unplugs_timer += 1;
                let depth = self.allocated() as u64;
                let irq = Ctx {
                    pid: 0,
                    cpu: kblockd.cpu,
                };
                self.trace_simple(now, irq, Action::UnplugTimer, Pdu::Unplug { depth }, tr);
                out.events.push((now, QueueEvent::Work(BlockWork::Unplug)));
            }
            // wbt is blk-mq's (rq-qos).
            QueueEvent::WbtTimer(_) => {}
            QueueEvent::ElvTimer(gen) => {
                if gen != self.elv_timer_gen {
                    return;
                }
                self.elv_timer_at = None;
                let mut ectx = ElvCtx {
                    now,
                    msgs: &mut self.msgs,
                    trace: tr.enabled(),
                    kick: Kick::None,
                };
                self.elv.timer_fired(&mut ectx, &self.rqs);
                let kick = ectx.kick;
                self.flush_msgs(now, kblockd, tr);
                self.sync_elv_timer(out);
                self.handle_kick(now, kick, kblockd, tr, out);
            }
            QueueEvent::DeviceDone(id) => self.complete(now, RqId(id as u32), tr, out),
            QueueEvent::Work(w) => self.work(now, w, kblockd, tr, out),
        }
        self.check();
        if self.checks {
            // Per queue event (dispatch and completion), not per bio.
            self.check_dispatch();
        }
    }

    /// `blk_yield` → `elv_yield` → `elevator_yield_fn` under the queue lock,
    /// in the context of the yielding task.
    pub fn blk_yield(
        &mut self,
        now: Instant,
        ctx: Ctx,
        to: u32,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let mut ectx = ElvCtx {
            now,
            msgs: &mut self.msgs,
            trace: tr.enabled(),
            kick: Kick::None,
        };
        self.elv.yield_queue(&mut ectx, ctx.pid, to);
        let kick = ectx.kick;
        self.flush_msgs(now, ctx, tr);
        self.sync_elv_timer(out);
        self.handle_kick(now, kick, ctx, tr, out);
        self.check();
    }

    /// The kblockd task `ctx` runs deferred work.
    pub fn run_work(
        &mut self,
        now: Instant,
        work: BlockWork,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        self.work(now, work, ctx, tr, out);
        self.check();
    }

    fn work(
        &mut self,
        now: Instant,
        work: BlockWork,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        match work {
            BlockWork::Unplug => {
                // blk_unplug_work: U, then q->unplug_fn = generic_unplug_device.
                let depth = self.allocated() as u64;
                self.trace_simple(now, ctx, Action::UnplugIo, Pdu::Unplug { depth }, tr);
                if self.plugged {
                    self.generic_unplug_device_locked(now, ctx, tr, out);
                }
            }
            BlockWork::RunQueue | BlockWork::RunHwQueue(_) | BlockWork::MqRequeue => {
                self.run_queue(now, ctx, tr, out)
            }
        }
    }

    fn handle_kick(
        &mut self,
        now: Instant,
        kick: Kick,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        match kick {
            Kick::None => {}
            Kick::Now => self.run_queue(now, ctx, tr, out),
            Kick::Work => out
                .events
                .push((now, QueueEvent::Work(BlockWork::RunQueue))),
        }
    }

    fn sync_elv_timer(&mut self, out: &mut BlockOut) {
        if !self.elv_has_timer {
            return;
        }
        let want = self.elv.timer_deadline();
        if want != self.elv_timer_at {
            self.elv_timer_gen += 1;
            self.elv_timer_at = want;
            if let Some(at) = want {
                out.events
                    .push((at, QueueEvent::ElvTimer(self.elv_timer_gen)));
            }
        }
    }

    /// `__blk_run_queue`: remove the plug and run the driver if there is work.
    pub fn run_queue(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        self.remove_plug();
        if self.elv_queue_empty() {
            return;
        }
        self.request_fn(now, ctx, tr, out);
    }

    // ---------------------------------------------------------------------------
    // Dispatch.

    /// `__elv_next_request`: the head of the dispatch list, asking the elevator for
    /// one more request while the list is empty.
    fn elv_next_request(
        &mut self,
        now: Instant,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> Option<RqId> {
        loop {
            if let Some(&rq) = self.dispatch.front() {
                match self.flush_filter(now, rq, tr, out) {
                    flush::Head::Issue => return Some(rq),
                    flush::Head::Stall => return None,
                    flush::Head::Again => continue,
                }
            }
            let mut ectx = ElvCtx {
                now,
                msgs: &mut self.msgs,
                trace: tr.enabled(),
                kick: Kick::None,
            };
            let got = self.elv.dispatch(&mut ectx, &self.rqs, false);
            self.flush_msgs(now, ctx, tr);
            let (rq, placement) = got?;
            self.elv_dispatch(rq, placement);
        }
    }

    /// `elv_dispatch_sort` / `elv_dispatch_add_tail`.
    fn elv_dispatch(&mut self, rq: RqId, placement: Placement) {
        if self.last_merge == Some(rq) {
            self.last_merge = None;
        }
        let end = self.rqs.get(rq).end_sector();
        self.rqhash_del_key(end, rq);
        self.rqs.get_mut(rq).dispatched = true;
        match placement {
            Placement::Tail => {
                self.end_sector = end;
                self.boundary_rq = Some(rq);
                self.dispatch.push_back(rq);
            }
            Placement::Sort => {
                let (pos, write, discard) = {
                    let r = self.rqs.get(rq);
                    (r.sector, r.is_write(), r.flags.contains(ReqFlags::DISCARD))
                };
                let boundary = self.end_sector;
                // Walk from the tail towards the head to find the insertion point.
                let mut at = self.dispatch.len();
                while at > 0 {
                    let p = self.rqs.get(self.dispatch[at - 1]);
                    if p.flags.contains(ReqFlags::DISCARD) != discard
                        || p.is_write() != write
                        || p.started
                        || p.softbarrier
                    {
                        break;
                    }
                    if pos >= boundary {
                        if p.sector < boundary {
                            at -= 1;
                            continue;
                        }
                    } else if p.sector >= boundary {
                        break;
                    }
                    if pos >= p.sector {
                        break;
                    }
                    at -= 1;
                }
                if at == self.dispatch.len() {
                    self.dispatch.push_back(rq);
                } else {
                    self.dispatch.insert(at, rq);
                }
            }
        }
    }

    /// The driver's `request_fn`, as `scsi_request_fn`: while not plugged, peek a
    /// request (D the first time it is seen), stop if the device is at its queue
    /// depth, otherwise start it on the device.
    fn request_fn(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        while !self.plugged {
            let Some(rq) = self.elv_next_request(now, ctx, tr, out) else {
                break;
            };
            // blk_peek_request
            if !self.rqs.get(rq).started {
                self.rqs.get_mut(rq).started = true;
                let mut ectx = ElvCtx {
                    now,
                    msgs: &mut self.msgs,
                    trace: tr.enabled(),
                    kick: Kick::None,
                };
                if self.rqs.get(rq).sorted {
                    self.elv.activate(&mut ectx, &self.rqs, rq);
                }
                self.flush_msgs(now, ctx, tr);
                self.trace_rq(now, rq, ctx, Action::Issue, tr);
                self.stats.requests_dispatched += 1;
                let r = self.rqs.get(rq);
                if self
                    .last_issued_end
                    .is_some_and(|e| e.abs_diff(r.sector) > SEEK_SECTORS)
                {
                    self.stats.dispatch_seeks += 1;
                }
                self.last_issued_end = Some(r.end_sector());
            }
            if self.boundary_rq.is_none() || self.boundary_rq == Some(rq) {
                self.end_sector = self.rqs.get(rq).end_sector();
                self.boundary_rq = None;
            }
            // scsi_dev_queue_ready
            if self.in_device >= self.dev_depth {
                break;
            }
            // blk_start_request → blk_dequeue_request
            self.dispatch.pop_front();
            let (sync, cmd) = {
                let r = self.rqs.get_mut(rq);
                r.in_driver = true;
                r.fifo_time = now; // D time, for D→C accounting
                (
                    r.sync_pool as usize,
                    DeviceCmd {
                        id: rq.0 as u64,
                        sector: r.sector,
                        sectors: r.sectors,
                        write: r.is_write(),
                        fua: r.flags.contains(ReqFlags::FUA),
                        flush: r.sectors == 0 && r.flags.contains(ReqFlags::FLUSH),
                    },
                )
            };
            self.in_flight[sync] += 1;
            if self.in_device == 0 {
                self.busy_since = now;
            }
            self.in_device += 1;
            self.stats.max_in_driver = self.stats.max_in_driver.max(self.in_device);
            self.dev.submit(now, cmd);
            self.poll_device(now, out);
        }
        self.sync_elv_timer(out);
    }

    fn poll_device(&mut self, now: Instant, out: &mut BlockOut) {
        self.dev_out.clear();
        self.dev.poll(now, &mut self.dev_out);
        for &(at, id) in &self.dev_out {
            assert!(at >= now, "device completion in the past");
            out.events.push((at, QueueEvent::DeviceDone(id)));
        }
    }

    // ---------------------------------------------------------------------------
    // Completion.

    /// `blk_end_request_all` → `blk_update_request` (C, `bio_endio` for each bio) →
    /// `blk_finish_request` → `__blk_put_request` (`elv_completed_request`,
    /// `freed_request`); then the driver re-runs the queue (`scsi_run_queue`).
    /// Requests of a flush sequence go back to the flush machinery instead.
    fn complete(&mut self, now: Instant, rq: RqId, tr: &mut Tracer, out: &mut BlockOut) {
        self.dev.complete(now, rq.0 as u64);
        self.poll_device(now, out);
        assert!(
            self.rqs.get(rq).in_driver,
            "completion of a request not issued"
        );
        let irq = Ctx {
            pid: 0,
            cpu: self.cfg.irq_cpu,
        };
        self.trace_rq(now, rq, irq, Action::Complete, tr);
        let (role, sync_pool, fifo_time, write) = {
            let x = self.rqs.get(rq);
            (x.role, x.sync_pool, x.fifo_time, x.is_write())
        };
        self.stats.requests_completed += 1;
        let d2c = now.since(fifo_time).as_ns();
        self.stats.busy_ns += d2c;
        if role == FlushRole::None {
            if write {
                self.stats.write_ios += 1;
                self.stats.write_ticks_ns += d2c;
            } else {
                self.stats.read_ios += 1;
                self.stats.read_ticks_ns += d2c;
            }
        }
        // elv_completed_request: the request leaves the driver.
        self.in_flight[sync_pool as usize] -= 1;
        self.in_device -= 1;
        if self.in_device == 0 {
            self.stats.io_ticks_ns += now.since(self.busy_since).as_ns();
        }
        match role {
            FlushRole::None => self.end_request(now, rq, irq, tr, out),
            _ => self.flush_complete(now, rq, role, tr, out),
        }
        self.flush_drained(now, tr, out);
        self.run_queue(now, irq, tr, out);
        self.sync_elv_timer(out);
    }

    /// The rest of an ordinary request's completion: `bio_endio` for every bio,
    /// the elevator's completion hook, and freeing it.
    fn end_request(
        &mut self,
        now: Instant,
        rq: RqId,
        irq: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        self.end_bios(rq, out);
        if self.rqs.get(rq).sorted {
            let mut ectx = ElvCtx {
                now,
                msgs: &mut self.msgs,
                trace: tr.enabled(),
                kick: Kick::None,
            };
            self.elv.completed(&mut ectx, &self.rqs, rq);
            let kick = ectx.kick;
            self.flush_msgs(now, irq, tr);
            if kick == Kick::Work {
                out.events
                    .push((now, QueueEvent::Work(BlockWork::RunQueue)));
            }
        }
        let woken = self.free_request(rq);
        if let Some(bio) = woken {
            self.retry_sleeper(now, bio, tr, out);
        }
    }

    /// `bio_endio` for every bio of `rq`, in order.
    fn end_bios(&mut self, rq: RqId, out: &mut BlockOut) {
        let (head, want) = {
            let r = self.rqs.get(rq);
            (r.bio_head, r.sectors)
        };
        let mut next = Some(head);
        let mut sectors = 0u32;
        while let Some(b) = next {
            let bio = self.bios.free(b);
            sectors += bio.sectors;
            self.stats.bios_completed += bio.run.nr as u64;
            self.bios_held -= bio.run.nr as u64;
            self.stats.bytes_completed += bio.bytes();
            out.completed.push(CompletedBio {
                owner: bio.owner,
                sector: bio.sector,
                bytes: bio.bytes(),
                flags: bio.flags,
                submitted_at: bio.submitted_at,
                error: 0,
                run: bio.run,
            });
            next = bio.next;
        }
        assert_eq!(sectors, want, "request and its bios disagree on size");
    }

    // ---------------------------------------------------------------------------
    // Tracing.

    fn trace_bio(&self, now: Instant, b: &Bio, action: Action, pdu: Pdu, tr: &mut Tracer) {
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
        let r = self.rqs.get(rq);
        let point = RqPoint {
            ctx,
            sector: r.sector,
            sectors: r.sectors,
            flags: r.flags,
            is_request: true,
        };
        crate::tracepoint::trace_rq(tr, (self.cfg.disk, self.cfg.trace_mask), now, point, action);
    }

    fn trace_simple(&self, now: Instant, ctx: Ctx, action: Action, pdu: Pdu, tr: &mut Tracer) {
        crate::tracepoint::trace_simple(tr, self.cfg.disk, now, ctx, action, pdu);
    }

    /// Scheduler messages (`cfq_log`) queued while the queue lock was held go to
    /// the trace; the common case, none, costs one test.
    #[inline]
    fn flush_msgs(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer) {
        if !self.msgs.is_empty() {
            self.flush_msgs_slow(now, ctx, tr);
        }
    }

    #[cold]
    fn flush_msgs_slow(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer) {
        for m in self.msgs.drain(..) {
            tr.message(now, self.cfg.disk, ctx.cpu, ctx.pid, m);
        }
    }

    // ---------------------------------------------------------------------------
    // Invariants.

    fn check(&self) {
        if self.checks {
            self.check_accounting();
        }
    }

    /// Every invariant, including a walk of the whole back-merge hash (the
    /// per-event check leaves the walk out: it is O(queued requests), and the hash
    /// is held to its invariant in O(1) where entries are used and freed, in
    /// `rqhash_find` and `put_check`).
    pub fn check_invariants(&self) {
        self.check_hash();
        self.check_accounting();
        self.check_dispatch();
    }

    /// Every request on the dispatch list is dispatched and not yet in the
    /// driver (a walk of the list: left out of the per-bio check).
    fn check_dispatch(&self) {
        for &rq in &self.dispatch {
            let r = self.rqs.get(rq);
            assert!(r.dispatched && !r.in_driver);
        }
    }

    /// Every back-merge hash entry is a queued request ending at its key.
    fn check_hash(&self) {
        for (&end, &rq) in self
            .hash
            .iter()
            .chain(self.hash_overflow.iter().map(|(e, r)| (e, r)))
        {
            let r = self.rqs.get(rq);
            assert!(
                r.end_sector() == end && !r.dispatched,
                "back-merge hash: entry at sector {end} is a request ending at {} \
                 (dispatched {})",
                r.end_sector(),
                r.dispatched
            );
            assert!(r.on_hash, "hash entry at sector {end} without ELV_ON_HASH");
        }
    }

    /// Every request is in exactly one place (elevator, dispatch list or device),
    /// pools and limits hold, and bios are conserved.
    fn check_accounting(&self) {
        let live = self.rqs.live() as u32;
        assert_eq!(
            live,
            self.count[0] + self.count[1] + self.flush.proxies,
            "request pool accounting"
        );
        let in_elv = self.elv.queued() as u32;
        assert_eq!(
            live,
            in_elv
                + self.dispatch.len() as u32
                + self.in_device
                + self.flush.parked()
                + self.nr_plugged,
            "a request is lost or counted twice (elevator {in_elv}, dispatch {}, device {})",
            self.dispatch.len(),
            self.in_device
        );
        assert!(
            self.in_device <= self.dev.queue_depth(),
            "device queue overflow"
        );
        assert_eq!(self.in_device, self.in_flight[0] + self.in_flight[1]);
        for c in self.count {
            assert!(
                c <= 3 * self.cfg.nr_requests / 2,
                "request pool over its hard cap"
            );
        }
        let waiting = self.waiters[0].len() + self.waiters[1].len();
        // Proxy requests of the flush machinery have no bios of their own.
        assert!(self.bios.live() + self.flush.proxies as usize >= waiting + live as usize);
        assert_eq!(
            self.stats.bios_queued - self.stats.bios_completed,
            self.bios_held,
            "bios queued and completed disagree with live bios"
        );
    }
}
