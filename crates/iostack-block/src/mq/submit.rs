//! Submission: `submit_bio_noacct` → `blk_mq_submit_bio` (6.x `block/blk-mq.c`),
//! with the merges of `blk-merge.c` and `blk-mq-sched.c` and the task's plug.

use super::{Loc, MqQueue, MqRq};
use crate::bio::{Bio, BioId};
use crate::elevator::MergeKind;
use crate::queue::{BlockOut, CompletedBio, Ctx, Submit};
use crate::request::{FlushRole, Request, RqId};
use iostack_core::{Action, Pdu, ReqFlags, TaskId, Tracer};
use iostack_des::Instant;

/// `BLK_MAX_REQUEST_COUNT`: a plug holding this many requests is flushed
/// before the next is added (`blk_plug_max_rq_count`, one queue).
pub const BLK_MAX_REQUEST_COUNT: usize = 32;
/// `BLK_PLUG_FLUSH_SIZE`: so is a plug whose last request has this many bytes.
pub const BLK_PLUG_FLUSH_SIZE: u64 = 128 * 1024;

/// What `blk_attempt_bio_merge` found (`enum bio_merge_status`).
#[derive(PartialEq, Eq)]
enum BioMerge {
    Ok,
    None,
    Failed,
}

impl MqQueue {
    fn ctx_of(b: &Bio) -> Ctx {
        Ctx {
            pid: b.pid,
            cpu: b.cpu,
        }
    }

    /// `submit_bio_noacct`: partition remap (A), the flush filter for a device
    /// without a volatile cache, Q (`submit_bio_noacct_nocheck`), then
    /// `blk_mq_submit_bio`.
    #[inline(always)]
    pub fn submit_bio(
        &mut self,
        now: Instant,
        mut bio: Bio,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> Submit {
        bio.submitted_at = now;
        bio.next = None;
        self.partition_remap(now, &mut bio, tr);
        assert!(
            bio.end_sector() <= self.capacity,
            "bio beyond end of device"
        );
        if bio.flags.is_flush_or_fua() && !self.dev.write_cache() {
            // submit_bio_noacct: no volatile cache, so REQ_PREFLUSH and
            // REQ_FUA are stripped and an empty flush ends here with
            // success, before Q.
            bio.flags = bio.flags.remove(ReqFlags::FLUSH).remove(ReqFlags::FUA);
            if bio.sectors == 0 {
                out.completed.push(CompletedBio {
                    owner: bio.owner,
                    sector: bio.sector,
                    bytes: 0,
                    flags: bio.flags,
                    submitted_at: now,
                    error: 0,
                    run: bio.run,
                });
                return Submit::Queued;
            }
        }
        self.trace_bio(now, &bio, Action::Queue, Pdu::None, tr);
        self.stats.bios_queued += 1;
        self.stats.bytes_queued += bio.bytes();
        let id = self.bios.alloc(bio);
        let r = self.submit_split(now, id, tr, out);
        self.check();
        r
    }

    /// `__submit_bio_noacct`'s loop for one bio: `blk_mq_submit_bio` splits
    /// it at the limits and takes the front part; the remainder, first on
    /// `current->bio_list`, follows. A front part asleep for a tag keeps the
    /// remainder for its wake-up (`retry_sleeper`).
    #[inline(always)]
    fn submit_split(
        &mut self,
        now: Instant,
        id: BioId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> Submit {
        if self.split_point(id).is_none() {
            return self.mq_submit_bio(now, id, tr, out);
        }
        self.submit_split_parts(now, id, tr, out)
    }

    /// The loop of `submit_split` for a bio over the limits.
    #[cold]
    fn submit_split_parts(
        &mut self,
        now: Instant,
        id: BioId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> Submit {
        loop {
            let Some(front) = self.split_to_limits(now, id, tr) else {
                return self.mq_submit_bio(now, id, tr, out);
            };
            if self.mq_submit_bio(now, front, tr, out) == Submit::Sleeping {
                self.split_rest.insert(front.0, id);
                return Submit::Sleeping;
            }
        }
    }

    /// `blk_partition_remap`: A, and the sector moves to the whole disk.
    #[inline(always)]
    fn partition_remap(&self, now: Instant, bio: &mut Bio, tr: &mut Tracer) {
        if bio.dev != self.cfg.disk {
            self.remap_to_disk(now, bio, tr);
        }
    }

    /// `partition_remap` of a bio to a partition.
    fn remap_to_disk(&self, now: Instant, bio: &mut Bio, tr: &mut Tracer) {
        let p = *self
            .cfg
            .partitions
            .iter()
            .find(|p| p.dev == bio.dev)
            .unwrap_or_else(|| panic!("bio for unknown device {:?}", bio.dev));
        assert!(
            bio.end_sector() <= p.nr_sects,
            "bio beyond end of partition {:?}",
            p.dev
        );
        let from_sector = bio.sector;
        bio.sector += p.start;
        bio.dev = self.cfg.disk;
        let pdu = Pdu::Remap {
            from_dev: p.dev,
            from_sector,
        };
        self.trace_bio(now, bio, Action::Remap, pdu, tr);
    }

    /// `blk_mq_submit_bio`: merge (`blk_mq_attempt_bio_merge`), else allocate
    /// a request (`__blk_mq_alloc_requests`, G), else sleep for a tag.
    #[inline(always)]
    fn mq_submit_bio(
        &mut self,
        now: Instant,
        id: BioId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> Submit {
        if self.attempt_bio_merge(now, id, tr, out) {
            return Submit::Queued;
        }
        // blk_mq_get_new_requests: rq_qos_throttle first (wbt may sleep).
        if !self.wbt_throttle(now, id, out) {
            return Submit::Sleeping;
        }
        let task = self.bio(id).owner.task;
        match self.alloc_request(now, id, tr) {
            Some(rq) => {
                self.submit_rq(now, rq, task, tr, out);
                Submit::Queued
            }
            None => {
                self.tag_sleep(now, id, tr, out);
                Submit::Sleeping
            }
        }
    }

    /// `blk_mq_get_tag` found none: run the hardware queue
    /// (`blk_mq_run_hw_queue(data->hctx, false)`) and sleep (`io_schedule`;
    /// 6.x traces nothing). The caller's `schedule` flushes its plug.
    fn tag_sleep(&mut self, now: Instant, id: BioId, tr: &mut Tracer, out: &mut BlockOut) {
        let b = *self.bio(id);
        let h = self.cpu_hctx[b.cpu as usize % self.cpu_hctx.len()];
        self.stats.sleeps += 1;
        let hc = &mut self.hctxs[h as usize];
        match hc.sched_tags.as_mut() {
            Some(t) => t.wait(id.0),
            None => hc.tags.wait(id.0),
        }
        self.run_hw_queue(now, h, false, Self::ctx_of(&b), tr, out);
    }

    /// A bio woken from wbt's `rq_qos_wait` with its slot goes on in its
    /// own context: the request (or a tag sleep), then the rest of
    /// `blk_mq_submit_bio` and of a split bio, and its task runs again.
    pub(super) fn continue_submit(
        &mut self,
        now: Instant,
        id: BioId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        match self.alloc_request(now, id, tr) {
            Some(rq) => self.submitted_after_sleep(now, id, rq, tr, out),
            None => self.tag_sleep(now, id, tr, out),
        }
    }

    /// The woken bio `id` has its request `rq`.
    fn submitted_after_sleep(
        &mut self,
        now: Instant,
        id: BioId,
        rq: RqId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let task = self.bio(id).owner.task;
        self.submit_rq(now, rq, task, tr, out);
        if let Some(rest) = self.split_rest.remove(&id.0) {
            if self.submit_split(now, rest, tr, out) == Submit::Sleeping {
                return;
            }
        }
        out.woken.push(task);
    }

    /// A sleeper woken by a freed tag retries in its own context
    /// (`blk_mq_get_tag`'s loop): G and the rest of `blk_mq_submit_bio`, or
    /// back to sleep.
    pub(super) fn retry_sleeper(
        &mut self,
        now: Instant,
        id: BioId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let b = *self.bio(id);
        match self.alloc_request(now, id, tr) {
            Some(rq) => self.submitted_after_sleep(now, id, rq, tr, out),
            None => {
                let h = self.cpu_hctx[b.cpu as usize % self.cpu_hctx.len()];
                let hc = &mut self.hctxs[h as usize];
                match hc.sched_tags.as_mut() {
                    Some(t) => t.wait(id.0),
                    None => hc.tags.wait(id.0),
                }
            }
        }
    }

    /// `__blk_mq_alloc_requests` → `blk_mq_get_tag` from the scheduler tags
    /// (depth limited by the scheduler's `limit_depth`) or the driver tags,
    /// `blk_mq_rq_ctx_init` + `blk_mq_bio_to_request`; G.
    #[inline(always)]
    fn alloc_request(&mut self, now: Instant, id: BioId, tr: &mut Tracer) -> Option<RqId> {
        let b = self.bio(id);
        let cpu = if b.cpu < self.cfg.nr_cpus {
            b.cpu
        } else {
            b.cpu % self.cfg.nr_cpus
        };
        let h = self.cpu_hctx[cpu as usize];
        let shallow = match &self.elv {
            Some(e) => e.limit_depth(b.flags, self.nr_requests),
            None => u32::MAX,
        };
        let (sector, sectors, segments) = (b.sector, b.sectors, b.segments);
        let (flags, pid, ioprio) = (b.flags, b.pid, b.ioprio);
        let hc = &mut self.hctxs[h as usize];
        let (tag, sched_tag) = match hc.sched_tags.as_mut() {
            Some(t) => (None, Some(t.get(cpu, shallow)?)),
            None => (Some(hc.tags.get(cpu, u32::MAX)?), None),
        };
        let rq = self.rqs.alloc(Request {
            sector,
            sectors,
            segments,
            flags: if flags.is_flush_or_fua() {
                flags.remove(ReqFlags::UNPLUG) | ReqFlags::NOMERGE
            } else {
                flags.remove(ReqFlags::UNPLUG)
            },
            pid,
            cpu,
            start_time: now,
            fifo_time: now,
            started: false,
            dispatched: false,
            in_driver: false,
            sync_pool: flags.is_sync(),
            ioprio,
            bio_head: id,
            bio_tail: id,
            elv_private: 0,
            sorted: false,
            softbarrier: false,
            role: FlushRole::None,
            fseq: 0,
            on_hash: false,
        });
        self.set_mq(
            rq,
            MqRq {
                hctx: h,
                tag,
                sched_tag,
                budget: false,
                loc: Loc::Plug,
                hash: None,
                wbt: self.wbt_track(flags),
            },
        );
        self.stats.requests_allocated += 1;
        self.trace_bio(now, self.bio(id), Action::GetRq, Pdu::None, tr);
        Some(rq)
    }

    /// The rest of `blk_mq_submit_bio` after G: into the task's plug, or with
    /// a scheduler (or a busy single queue) insert and run the queue
    /// asynchronously, or issue directly (`blk_mq_try_issue_directly`).
    /// `task` submitted the request's bio.
    #[inline(always)]
    fn submit_rq(
        &mut self,
        now: Instant,
        rq: RqId,
        task: TaskId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        // op_is_flush: such a request never sets RQF_USE_SCHED.
        let flushy = self.rqs.get(rq).flags.is_flush_or_fua();
        if flushy && self.insert_flush(now, rq, tr, out) {
            return;
        }
        if self.plugs.contains(task) {
            self.add_rq_to_plug(now, task, rq, tr, out);
            return;
        }
        let (h, ctx, sync) = {
            let r = self.rqs.get(rq);
            let c = Ctx {
                pid: r.pid,
                cpu: r.cpu,
            };
            (self.mq(rq).hctx, c, r.flags.is_sync())
        };
        let busy = self.hctxs[h as usize].dispatch_busy > 0 && (self.hctxs.len() == 1 || !sync);
        if (self.elv.is_some() && !flushy) || busy {
            self.insert_request(now, rq, ctx, tr, out);
            self.run_hw_queue(now, h, true, ctx, tr, out);
        } else {
            self.try_issue_directly(now, rq, ctx, tr, out);
        }
    }

    /// `blk_add_rq_to_plug`: P when the plug starts; a plug at
    /// `BLK_MAX_REQUEST_COUNT` or whose last request reached
    /// `BLK_PLUG_FLUSH_SIZE` is flushed first (and P again).
    #[inline(always)]
    fn add_rq_to_plug(
        &mut self,
        now: Instant,
        task: TaskId,
        rq: RqId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let ctx = {
            let r = self.rqs.get(rq);
            Ctx {
                pid: r.pid,
                cpu: r.cpu,
            }
        };
        let (count, last_bytes) = {
            let p = self.plugs.get(task).expect("plugged task");
            let last = p.list.last().map_or(0, |&l| self.rqs.get(l).bytes());
            (p.list.len(), last)
        };
        if count == 0 {
            self.plug_started(now, ctx, tr);
        } else if count >= BLK_MAX_REQUEST_COUNT
            || (self.cfg.nomerges == 0 && last_bytes >= BLK_PLUG_FLUSH_SIZE)
        {
            self.flush_plug_list(now, task, false, ctx, tr, out);
            self.plug_started(now, ctx, tr);
        }
        let sched = self.elv.is_some();
        let p = self.plugs.get_mut(task).expect("plugged task");
        p.has_elevator |= sched;
        p.list.push(rq);
        self.mq_mut(rq).loc = Loc::Plug;
    }

    #[inline]
    fn plug_started(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer) {
        self.stats.plugs += 1;
        self.trace_simple(now, ctx, Action::Plug, Pdu::None, tr);
    }

    /// `blk_start_plug`.
    pub fn start_plug(&mut self, task: TaskId) {
        self.plugs.start(task);
    }

    /// `blk_finish_plug` → `__blk_flush_plug(plug, false)`.
    #[inline(always)]
    pub fn finish_plug(
        &mut self,
        now: Instant,
        task: TaskId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if self.plugs.contains(task) {
            self.flush_plug_list(now, task, false, ctx, tr, out);
            self.plugs.end(task);
        }
        self.check();
    }

    /// `schedule` → `sched_submit_work` → `blk_flush_plug(plug, true)`.
    pub fn sleep(
        &mut self,
        now: Instant,
        task: TaskId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if self.plugs.contains(task) {
            self.flush_plug_list(now, task, true, ctx, tr, out);
        }
        self.check();
    }

    /// `blk_mq_flush_plug_list`: with one queue, no scheduler and not from
    /// `schedule`, U (explicit) and `blk_mq_plug_issue_direct`; otherwise
    /// `blk_mq_dispatch_plug_list`: U (UT from `schedule`), insert (I) and
    /// run the hardware queue, asynchronously from `schedule`.
    #[inline(always)]
    fn flush_plug_list(
        &mut self,
        now: Instant,
        task: TaskId,
        from_schedule: bool,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let p = self.plugs.get_mut(task).expect("plugged task");
        if p.list.is_empty() {
            return;
        }
        if p.list.len() == 1 && !p.has_elevator && !from_schedule {
            // plug->rq_count == 1 (an io_submit of one iocb, a lone direct
            // bio): the same U and blk_mq_plug_issue_direct as below, with
            // no list taken out and put back.
            let rq = p.list.pop().expect("one request");
            self.stats.unplugs_io += 1;
            self.trace_simple(now, ctx, Action::UnplugIo, Pdu::Unplug { depth: 1 }, tr);
            self.plug_issue_one(now, rq, ctx, tr, out);
            return;
        }
        self.flush_plug_list_many(now, task, from_schedule, ctx, tr, out);
    }

    /// `flush_plug_list` of more than one request, or with a scheduler, or
    /// from `schedule`.
    fn flush_plug_list_many(
        &mut self,
        now: Instant,
        task: TaskId,
        from_schedule: bool,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let p = self.plugs.get_mut(task).expect("plugged task");
        let mut list = std::mem::take(&mut p.list);
        let has_elevator = std::mem::take(&mut p.has_elevator);
        let depth = list.len() as u64;
        let mut issued = 0;
        if !has_elevator && !from_schedule {
            self.stats.unplugs_io += 1;
            self.trace_simple(now, ctx, Action::UnplugIo, Pdu::Unplug { depth }, tr);
            issued = self.plug_issue_direct(now, &list, ctx, tr, out);
        } else {
            let action = if from_schedule {
                self.stats.unplugs_timer += 1;
                Action::UnplugTimer
            } else {
                self.stats.unplugs_io += 1;
                Action::UnplugIo
            };
            self.trace_simple(now, ctx, action, Pdu::Unplug { depth }, tr);
        }
        if issued < list.len() {
            let rest = list[issued..].to_vec();
            self.dispatch_plug_list(now, rest, from_schedule, ctx, tr, out);
        }
        // The emptied list goes back to the plug, for its buffer.
        list.clear();
        if let Some(p) = self.plugs.get_mut(task) {
            if p.list.is_empty() {
                p.list = list;
            }
        }
    }

    /// `blk_mq_dispatch_plug_list` (the trace point was the caller's):
    /// insert into the scheduler or the software queues, then run the
    /// hardware queues (asynchronously from `schedule`).
    fn dispatch_plug_list(
        &mut self,
        now: Instant,
        list: Vec<RqId>,
        from_schedule: bool,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let mut hctxs: Vec<u16> = Vec::new();
        for rq in list {
            let h = self.mq(rq).hctx;
            if !hctxs.contains(&h) {
                hctxs.push(h);
            }
            self.insert_request(now, rq, ctx, tr, out);
        }
        for h in hctxs {
            self.run_hw_queue(now, h, from_schedule, ctx, tr, out);
        }
    }

    /// `blk_mq_insert_request` (`blk_mq_insert_requests` for a plug's list):
    /// with a scheduler, `insert_requests` (mq-deadline's `dd_insert_request`:
    /// insert merge, else I); without, I and the tail of the software queue.
    pub(super) fn insert_request(
        &mut self,
        now: Instant,
        rq: RqId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if self.elv.is_some() {
            self.sched_insert(now, rq, ctx, tr, out);
            return;
        }
        self.trace_rq(now, rq, ctx, Action::Insert, tr);
        let cpu = self.rqs.get(rq).cpu as usize;
        self.ctxs[cpu].push_back(rq);
        self.mq_mut(rq).loc = Loc::SwQueue;
    }

    // ---------------------------------------------------------------------------
    // Bio merging.

    /// `blk_mq_attempt_bio_merge`: the plug's last request
    /// (`blk_attempt_plug_merge`), then `blk_mq_sched_bio_merge`.
    #[inline(always)]
    fn attempt_bio_merge(
        &mut self,
        now: Instant,
        id: BioId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> bool {
        let (flags, task) = {
            let b = self.bio(id);
            (b.flags, b.owner.task)
        };
        // bio_mergeable: not REQ_NOMERGE_FLAGS (NOMERGE, PREFLUSH, FUA).
        if self.cfg.nomerges >= 2 || flags.contains(ReqFlags::NOMERGE) || flags.is_flush_or_fua() {
            return false;
        }
        if let Some(&last) = self.plugs.get(task).and_then(|p| p.list.last()) {
            if self.attempt_merge_into(now, last, id, tr) == BioMerge::Ok {
                return true;
            }
        }
        self.sched_bio_merge(now, id, tr, out)
    }

    /// `blk_mq_sched_bio_merge`: the scheduler's `bio_merge`
    /// (`blk_mq_sched_try_merge`), or without one `blk_bio_list_merge` over
    /// the last 8 requests of the CPU's software queue.
    #[inline(always)]
    fn sched_bio_merge(
        &mut self,
        now: Instant,
        id: BioId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> bool {
        let cpu = self.bio(id).cpu as usize;
        let cpu = if cpu < self.ctxs.len() {
            cpu
        } else {
            cpu % self.ctxs.len()
        };
        if self.elv.is_some() {
            return self.elv_bio_merge(now, id, cpu, tr, out);
        }
        // No scheduler: the software queue's last 8, newest first. The list
        // does not change while bios merge into its requests.
        let len = self.ctxs[cpu].len();
        if len == 0 {
            return false;
        }
        for k in 1..=len.min(8) {
            let rq = self.ctxs[cpu][len - k];
            match self.attempt_merge_into(now, rq, id, tr) {
                BioMerge::Ok => return true,
                BioMerge::Failed => return false,
                BioMerge::None => {}
            }
        }
        false
    }

    /// `blk_mq_sched_bio_merge` with a scheduler: its `bio_merge`.
    fn elv_bio_merge(
        &mut self,
        now: Instant,
        id: BioId,
        cpu: usize,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> bool {
        let (h, flags) = (self.cpu_hctx[cpu], self.bio(id).flags);
        let e = self.elv.as_ref().expect("a scheduler");
        let list = e.bio_merge_list(h, cpu as u32, flags);
        self.sched_cpu(now, self.cost.bio_merge_ns, out);
        // blk_bio_list_merge over the scheduler's list: the last 8, newest first.
        match list {
            Some(list) => {
                let candidates: Vec<RqId> = list.into_iter().rev().take(8).collect();
                self.bio_list_merge(now, id, &candidates, tr)
            }
            None => self.sched_try_merge(now, id, tr, out),
        }
    }

    /// `blk_bio_list_merge` over `candidates`, in order.
    fn bio_list_merge(
        &mut self,
        now: Instant,
        id: BioId,
        candidates: &[RqId],
        tr: &mut Tracer,
    ) -> bool {
        for &rq in candidates {
            match self.attempt_merge_into(now, rq, id, tr) {
                BioMerge::Ok => return true,
                BioMerge::Failed => return false,
                BioMerge::None => {}
            }
        }
        false
    }

    /// `blk_attempt_bio_merge`: `blk_rq_merge_ok`, `blk_try_merge`, then
    /// `bio_attempt_back_merge` / `bio_attempt_front_merge` (M / F).
    fn attempt_merge_into(
        &mut self,
        now: Instant,
        rq: RqId,
        id: BioId,
        tr: &mut Tracer,
    ) -> BioMerge {
        let Some(kind) = self.try_merge(rq, id) else {
            return BioMerge::None;
        };
        if self.bio_attempt_merge(now, rq, id, kind, tr) {
            BioMerge::Ok
        } else {
            BioMerge::Failed
        }
    }

    /// `blk_rq_merge_ok` + `blk_try_merge`: where the bio would go.
    pub(super) fn try_merge(&self, rq: RqId, id: BioId) -> Option<MergeKind> {
        let r = self.rqs.get(rq);
        let b = self.bio(id);
        // blk_rq_merge_ok: also one I/O priority (`rq->ioprio != bio_prio(bio)`).
        if r.flags.contains(ReqFlags::NOMERGE)
            || r.started
            || r.is_write() != b.flags.is_write()
            || r.ioprio != b.ioprio
        {
            return None;
        }
        if r.end_sector() == b.sector {
            Some(MergeKind::Back)
        } else if r.sector.checked_sub(b.sectors as u64) == Some(b.sector) {
            Some(MergeKind::Front)
        } else {
            None
        }
    }

    /// `bio_attempt_back_merge` / `bio_attempt_front_merge`: the size and
    /// segment limits (`ll_back_merge_fn` / `ll_front_merge_fn`), M or F,
    /// and the bio joins the request.
    pub(super) fn bio_attempt_merge(
        &mut self,
        now: Instant,
        rq: RqId,
        id: BioId,
        kind: MergeKind,
        tr: &mut Tracer,
    ) -> bool {
        let b = *self.bio(id);
        let r = self.rqs.get(rq);
        if r.sectors + b.sectors > self.cfg.limits.max_sectors
            || r.segments + b.segments > self.cfg.limits.max_segments
        {
            return false;
        }
        let (action, merges) = match kind {
            MergeKind::Back => (Action::BackMerge, &mut self.stats.back_merges),
            MergeKind::Front => (Action::FrontMerge, &mut self.stats.front_merges),
        };
        *merges += 1;
        if b.flags.is_write() {
            self.stats.write_merges += 1;
        } else {
            self.stats.read_merges += 1;
        }
        self.trace_bio(now, &b, action, Pdu::None, tr);
        match kind {
            MergeKind::Back => {
                let tail = self.rqs.get(rq).bio_tail;
                self.bios.get_mut(tail).next = Some(id);
                self.rqs.get_mut(rq).bio_tail = id;
            }
            MergeKind::Front => {
                let head = self.rqs.get(rq).bio_head;
                self.bios.get_mut(id).next = Some(head);
                let r = self.rqs.get_mut(rq);
                r.bio_head = id;
                r.sector = b.sector;
            }
        }
        let r = self.rqs.get_mut(rq);
        r.sectors += b.sectors;
        r.segments += b.segments;
        r.ioprio = r.ioprio.min(b.ioprio);
        true
    }
}
