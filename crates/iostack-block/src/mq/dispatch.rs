//! Dispatch and completion: `blk_mq_run_hw_queue`,
//! `__blk_mq_sched_dispatch_requests`, `blk_mq_dispatch_rq_list`, direct issue,
//! `blk_mq_end_request` (6.x `block/blk-mq.c`, `blk-mq-sched.c`).

use super::{Loc, MqQueue};
use crate::bio::BioId;
use crate::queue::{BlockOut, BlockWork, CompletedBio, Ctx, QueueEvent, SEEK_SECTORS};
use crate::request::{FlushRole, RqId};
use iostack_core::{Action, ReqFlags, Tracer};
use iostack_des::Instant;
use iostack_device::DeviceCmd;

/// `BLK_MQ_DISPATCH_BUSY_EWMA_WEIGHT` and `_FACTOR`.
const EWMA_WEIGHT: u32 = 8;
const EWMA_FACTOR: u32 = 4;

impl MqQueue {
    /// `blk_mq_hctx_has_pending`: the dispatch list, a software queue mapped
    /// to it, or the scheduler has work.
    fn hctx_has_pending(&self, h: u16) -> bool {
        let hc = &self.hctxs[h as usize];
        !hc.dispatch.is_empty()
            || hc.cpus.iter().any(|&c| !self.ctxs[c as usize].is_empty())
            || self.elv.as_ref().is_some_and(|e| e.has_work(h))
    }

    /// `blk_mq_run_hw_queue`: nothing without pending work; asynchronously
    /// as kblockd's `hctx->run_work` (`blk_mq_delay_run_hw_queue`, queued
    /// once), or now in `ctx`.
    pub(super) fn run_hw_queue(
        &mut self,
        now: Instant,
        h: u16,
        run_async: bool,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if !self.hctx_has_pending(h) {
            return;
        }
        if run_async {
            let hc = &mut self.hctxs[h as usize];
            if !hc.run_pending {
                hc.run_pending = true;
                out.events
                    .push((now, QueueEvent::Work(BlockWork::RunHwQueue(h))));
            }
            return;
        }
        self.sched_dispatch_requests(now, h, ctx, tr, out);
    }

    /// `blk_mq_run_hw_queues`: every hardware queue.
    fn run_hw_queues(
        &mut self,
        now: Instant,
        run_async: bool,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        for h in 0..self.hctxs.len() as u16 {
            self.run_hw_queue(now, h, run_async, ctx, tr, out);
        }
    }

    /// `__blk_mq_sched_dispatch_requests`: the dispatch list first (marking
    /// SCHED_RESTART), then the scheduler (`blk_mq_do_dispatch_sched`) or all
    /// software queues (`blk_mq_flush_busy_ctxs`).
    fn sched_dispatch_requests(
        &mut self,
        now: Instant,
        h: u16,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let hc = &mut self.hctxs[h as usize];
        if !hc.dispatch.is_empty() {
            hc.restart = true;
            let list: Vec<RqId> = hc.dispatch.drain(..).collect();
            if !self.dispatch_rq_list(now, h, list, ctx, tr, out) {
                return;
            }
        }
        if self.elv.is_some() {
            self.do_dispatch_sched(now, h, ctx, tr, out);
            return;
        }
        let mut list = Vec::new();
        for i in 0..self.hctxs[h as usize].cpus.len() {
            let c = self.hctxs[h as usize].cpus[i];
            list.extend(self.ctxs[c as usize].drain(..));
        }
        if !list.is_empty() {
            self.dispatch_rq_list(now, h, list, ctx, tr, out);
        }
    }

    /// `blk_mq_do_dispatch_sched` / `__blk_mq_do_dispatch_sched`: take up to
    /// `nr_requests` (1 when busy) requests from the scheduler, each with a
    /// budget, stopping at the first without a driver tag, and dispatch them;
    /// again while everything went out.
    fn do_dispatch_sched(
        &mut self,
        now: Instant,
        h: u16,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        loop {
            let max = if self.hctxs[h as usize].dispatch_busy > 0 {
                1
            } else {
                self.nr_requests
            };
            let mut list = Vec::new();
            while (list.len() as u32) < max {
                if !self.elv.as_ref().is_some_and(|e| e.has_work(h)) {
                    break;
                }
                if !self.hctxs[h as usize].dispatch.is_empty() {
                    break;
                }
                if !self.get_budget() {
                    break;
                }
                self.sched_cpu(now, self.cost.dispatch_ns, out);
                let Some(rq) = self
                    .elv
                    .as_mut()
                    .and_then(|e| e.dispatch_request(now, h, &self.rqs))
                else {
                    self.put_budget();
                    break;
                };
                self.rqs.get_mut(rq).dispatched = true;
                self.hash_del(rq);
                let m = self.mq_mut(rq);
                m.budget = true;
                m.loc = Loc::Dispatch;
                self.hctxs[h as usize].dispatch.push_back(rq);
                list.push(rq);
                if !self.get_driver_tag(rq) {
                    break;
                }
            }
            if list.is_empty() {
                return;
            }
            // The list is staged on the dispatch list until dispatched (its
            // place for the invariant check).
            let hd = &mut self.hctxs[h as usize].dispatch;
            hd.retain(|r| !list.contains(r));
            if !self.dispatch_rq_list(now, h, list, ctx, tr, out) {
                return;
            }
        }
    }

    /// `scsi_mq_get_budget`: one of the device's `queue_depth` slots.
    #[inline(always)]
    fn get_budget(&mut self) -> bool {
        match self.budget {
            Some(b) if self.budget_used >= b => {
                self.budget_restart = true; // atomic_inc(&sdev->restarts)
                false
            }
            Some(_) => {
                self.budget_used += 1;
                true
            }
            None => true,
        }
    }

    pub(super) fn put_budget(&mut self) {
        if self.budget.is_some() {
            self.budget_used -= 1;
        }
    }

    /// `blk_mq_get_driver_tag`: a request allocated from the scheduler tags
    /// takes a driver tag of its hardware queue at dispatch.
    #[inline(always)]
    fn get_driver_tag(&mut self, rq: RqId) -> bool {
        if self.mq(rq).tag.is_some() || self.borrows_tag(rq) {
            return true;
        }
        let h = self.mq(rq).hctx as usize;
        let cpu = self.rqs.get(rq).cpu;
        match self.hctxs[h].tags.get(cpu, u32::MAX) {
            Some(t) => {
                self.mq_mut(rq).tag = Some(t);
                true
            }
            None => false,
        }
    }

    /// `blk_mq_dispatch_rq_list`: for each request a budget and a driver tag
    /// (`blk_mq_prep_dispatch_rq`; none: `blk_mq_mark_tag_wait` marks
    /// SCHED_RESTART), then `->queue_rq` (D). What is left goes back on the
    /// dispatch list and the queue reruns unless a restart will; true when
    /// everything went out.
    fn dispatch_rq_list(
        &mut self,
        now: Instant,
        h: u16,
        list: Vec<RqId>,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> bool {
        let mut i = 0;
        let mut no_budget = false;
        while i < list.len() {
            let rq = list[i];
            if !self.mq(rq).budget {
                if !self.get_budget() {
                    no_budget = true;
                    break;
                }
                self.mq_mut(rq).budget = true;
            }
            if !self.get_driver_tag(rq) {
                self.hctxs[h as usize].restart = true;
                break;
            }
            self.issue(now, rq, ctx, tr, out);
            i += 1;
        }
        if i == list.len() {
            self.update_dispatch_busy(h, false);
            return true;
        }
        for &rq in &list[i..] {
            if self.mq(rq).budget {
                self.mq_mut(rq).budget = false;
                self.put_budget();
            }
            self.mq_mut(rq).loc = Loc::Dispatch;
            self.hctxs[h as usize].dispatch.push_back(rq);
        }
        // needs_restart: a completion reruns the queue (blk_mq_sched_restart,
        // or for the budget scsi_run_queue_async); otherwise run it again.
        if !self.hctxs[h as usize].restart && !no_budget {
            self.run_hw_queue(now, h, true, ctx, tr, out);
        }
        self.update_dispatch_busy(h, true);
        false
    }

    /// `blk_mq_update_dispatch_busy` (only without a scheduler).
    fn update_dispatch_busy(&mut self, h: u16, busy: bool) {
        if self.elv.is_some() {
            return;
        }
        let hc = &mut self.hctxs[h as usize];
        let mut ewma = hc.dispatch_busy;
        if ewma == 0 && !busy {
            return;
        }
        ewma *= EWMA_WEIGHT - 1;
        if busy {
            ewma += 1 << EWMA_FACTOR;
        }
        hc.dispatch_busy = ewma / EWMA_WEIGHT;
    }

    /// `blk_mq_try_issue_directly`: with a budget and a tag, `->queue_rq` now;
    /// otherwise insert (I) and run the queue.
    pub(super) fn try_issue_directly(
        &mut self,
        now: Instant,
        rq: RqId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if self.get_budget_and_tag(rq) {
            self.issue(now, rq, ctx, tr, out);
            return;
        }
        let h = self.mq(rq).hctx;
        self.insert_request(now, rq, ctx, tr, out);
        self.run_hw_queue(now, h, false, ctx, tr, out);
    }

    /// `blk_mq_get_budget_and_tag`.
    #[inline(always)]
    fn get_budget_and_tag(&mut self, rq: RqId) -> bool {
        if !self.get_budget() {
            return false;
        }
        if !self.get_driver_tag(rq) {
            self.put_budget();
            return false;
        }
        self.mq_mut(rq).budget = true;
        true
    }

    /// `blk_mq_plug_issue_direct`: issue the plug's requests in order; the
    /// first that cannot be issued goes to the dispatch list
    /// (`blk_mq_request_bypass_insert`) and the queue runs. Returns how
    /// many requests were taken.
    pub(super) fn plug_issue_direct(
        &mut self,
        now: Instant,
        list: &[RqId],
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> usize {
        for (i, &rq) in list.iter().enumerate() {
            if !self.plug_issue_one(now, rq, ctx, tr, out) {
                return i + 1;
            }
        }
        list.len()
    }

    /// One request of `blk_mq_plug_issue_direct`: issued, or (false) onto
    /// the dispatch list (`blk_mq_request_bypass_insert`) and the queue run.
    #[inline(always)]
    pub(super) fn plug_issue_one(
        &mut self,
        now: Instant,
        rq: RqId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> bool {
        if self.get_budget_and_tag(rq) {
            self.issue(now, rq, ctx, tr, out);
            return true;
        }
        let h = self.mq(rq).hctx;
        self.mq_mut(rq).loc = Loc::Dispatch;
        self.hctxs[h as usize].dispatch.push_back(rq);
        self.run_hw_queue(now, h, false, ctx, tr, out);
        false
    }

    /// `->queue_rq` → `blk_mq_start_request` (D) and the command to the device.
    #[inline(always)]
    fn issue(&mut self, now: Instant, rq: RqId, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        self.mq_mut(rq).loc = Loc::Driver;
        if self.last_merge == Some(rq) {
            self.last_merge = None;
        }
        self.trace_rq(now, rq, ctx, Action::Issue, tr);
        self.stats.requests_dispatched += 1;
        let r = self.rqs.get_mut(rq);
        r.started = true;
        r.in_driver = true;
        r.dispatched = true;
        r.fifo_time = now;
        let cmd = DeviceCmd {
            id: rq.0 as u64,
            sector: r.sector,
            sectors: r.sectors,
            write: r.is_write(),
            fua: r.flags.contains(ReqFlags::FUA),
            flush: r.role == FlushRole::FlushRq,
        };
        self.wbt_issue(now, rq);
        if self
            .last_issued_end
            .is_some_and(|e| e.abs_diff(cmd.sector) > SEEK_SECTORS)
        {
            self.stats.dispatch_seeks += 1;
        }
        self.last_issued_end = Some(cmd.sector + cmd.sectors as u64);
        if self.in_device == 0 {
            self.busy_since = now;
        }
        self.in_device += 1;
        self.stats.max_in_driver = self.stats.max_in_driver.max(self.in_device);
        self.dev.submit(now, cmd);
        self.poll_device(now, out);
    }

    #[inline(always)]
    fn poll_device(&mut self, now: Instant, out: &mut BlockOut) {
        self.dev_out.clear();
        self.dev.poll(now, &mut self.dev_out);
        for &(at, id) in &self.dev_out {
            assert!(at >= now, "device completion in the past");
            out.events.push((at, QueueEvent::DeviceDone(id)));
        }
    }

    /// The device completed `rq`: `blk_mq_complete_request` on the queue's
    /// interrupt CPU → `blk_mq_end_request`: C (`blk_update_request`), the
    /// bios end, the scheduler's `finish_request`, the tags freed (waking
    /// sleepers), the budget returned, and the reruns of
    /// `blk_mq_sched_restart` and `scsi_run_queue_async`.
    #[inline(always)]
    pub(super) fn complete(&mut self, now: Instant, rq: RqId, tr: &mut Tracer, out: &mut BlockOut) {
        self.dev.complete(now, rq.0 as u64);
        self.poll_device(now, out);
        if tr.enabled() {
            let irq = self.irq_ctx(self.mq(rq).hctx);
            self.trace_rq(now, rq, irq, Action::Complete, tr);
        }
        let h = self.mq(rq).hctx;
        self.account_done(now, rq);
        let r = self.rqs.get(rq);
        if r.role != FlushRole::FlushRq {
            let (write, lat) = (r.is_write(), now.since(r.fifo_time).as_ns());
            self.wbt_stat(write, lat);
        }
        if self.rqs.get(rq).sorted {
            if let Some(e) = self.elv.as_mut() {
                e.completed_request(now, &self.rqs, rq);
            }
            self.sync_elv_timer(out);
        }
        if !self.flush_complete(now, rq, tr, out) {
            self.end_bios(rq, out);
            self.free_request(now, rq, tr, out);
        }
        if self.budget_restart {
            self.budget_restart = false;
            let irq = self.irq_ctx(h);
            self.run_hw_queues(now, true, irq, tr, out);
        }
    }

    #[inline(always)]
    fn account_done(&mut self, now: Instant, rq: RqId) {
        let r = self.rqs.get(rq);
        let d2c = now.since(r.fifo_time).as_ns();
        self.stats.requests_completed += 1;
        self.stats.busy_ns += d2c;
        if r.role == FlushRole::FlushRq {
            // A flush is no read or write I/O of diskstats.
        } else if r.is_write() {
            self.stats.write_ios += 1;
            self.stats.write_ticks_ns += d2c;
        } else {
            self.stats.read_ios += 1;
            self.stats.read_ticks_ns += d2c;
        }
        self.in_device -= 1;
        if self.in_device == 0 {
            self.stats.io_ticks_ns += now.since(self.busy_since).as_ns();
        }
    }

    /// `bio_endio` for every bio of `rq`, in order.
    #[inline(always)]
    pub(super) fn end_bios(&mut self, rq: RqId, out: &mut BlockOut) {
        let mut next = Some(self.rqs.get(rq).bio_head);
        while let Some(b) = next {
            let bio = self.bios.free(b);
            self.stats.bios_completed += 1;
            self.stats.bytes_completed += bio.bytes();
            let c = CompletedBio {
                owner: bio.owner,
                sector: bio.sector,
                bytes: bio.bytes(),
                flags: bio.flags,
                submitted_at: bio.submitted_at,
                error: 0,
                run: bio.run,
            };
            self.end_bio(b, c, &mut out.completed);
            next = bio.next;
        }
    }

    /// `blk_mq_free_request` → `__blk_mq_free_request`: the scheduler's
    /// `finish_request`, the driver and scheduler tags back
    /// (`blk_mq_put_tag`, whose wake-ups retry their allocation here), the
    /// budget back, and `blk_mq_sched_restart`.
    #[inline(always)]
    pub(super) fn free_request(
        &mut self,
        now: Instant,
        rq: RqId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if self.rqs.get(rq).sorted {
            self.elv_finish_request(now, rq, tr, out);
        }
        if self.last_merge == Some(rq) {
            self.last_merge = None;
        }
        let m = self.info[rq.0 as usize].take().expect("blk-mq request");
        let wbt_wake = self.wbt_done(now, rq, m.wbt);
        let cpu = self.rqs.get(rq).cpu;
        self.rqs.remove(rq);
        if m.budget {
            self.put_budget();
        }
        if let Some(t) = m.tag {
            self.put_tag_and_wake(now, m.hctx, t, cpu, tr, out);
        }
        if let Some(t) = m.sched_tag {
            self.put_sched_tag_and_wake(now, m.hctx, t, cpu, tr, out);
        }
        self.sched_restart(now, m.hctx, tr, out);
        if let Some(q) = wbt_wake {
            self.wbt_wake(now, q, tr, out);
        }
    }

    /// The scheduler's `finish_request` of a request it had
    /// (`RQF_USE_SCHED`), its CPU cost, and the hardware queues it woke.
    fn elv_finish_request(&mut self, now: Instant, rq: RqId, tr: &mut Tracer, out: &mut BlockOut) {
        if let Some(e) = self.elv.as_mut() {
            e.finish_request(&self.rqs, rq);
        }
        self.sched_cpu(now, self.cost.completion_ns, out);
        self.run_woken_hctxs(now, tr, out);
    }

    /// `blk_mq_put_tag` of a scheduler tag; the sleepers it wakes retry.
    fn put_sched_tag_and_wake(
        &mut self,
        now: Instant,
        h: u16,
        t: u32,
        cpu: u32,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let Some(st) = self.hctxs[h as usize].sched_tags.as_mut() else {
            return;
        };
        let n = st.put(t, cpu);
        for _ in 0..n {
            let hc = &mut self.hctxs[h as usize];
            let Some(id) = hc.sched_tags.as_mut().and_then(|st| st.wake_one()) else {
                break;
            };
            self.retry_sleeper(now, BioId(id), tr, out);
        }
    }

    /// `blk_mq_put_tag` of a driver tag; the sleepers it wakes retry.
    #[inline(always)]
    pub(super) fn put_tag_and_wake(
        &mut self,
        now: Instant,
        h: u16,
        tag: u32,
        cpu: u32,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let n = self.hctxs[h as usize].tags.put(tag, cpu);
        if n != 0 {
            self.wake_tag_sleepers(now, h, n, tr, out);
        }
    }

    /// The `n` sleepers a driver tag's `put` woke retry; the batch is taken
    /// off the wait list before any retries (a retry that fails queues again
    /// at the tail).
    #[cold]
    fn wake_tag_sleepers(
        &mut self,
        now: Instant,
        h: u16,
        n: usize,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let tags = &mut self.hctxs[h as usize].tags;
        let wake: Vec<BioId> = (0..n).filter_map(|_| tags.wake_one().map(BioId)).collect();
        for id in wake {
            self.retry_sleeper(now, id, tr, out);
        }
    }

    /// `blk_mq_put_driver_tag`: a request of the scheduler tags gives its
    /// driver tag back before it completes (sequenced flush data).
    pub(super) fn put_driver_tag(&mut self, rq: RqId) {
        if let Some(t) = self.mq_mut(rq).tag.take() {
            let (h, cpu) = (self.mq(rq).hctx, self.rqs.get(rq).cpu);
            let n = self.hctxs[h as usize].tags.put(t, cpu);
            // Only dispatch waits on driver tags when a scheduler is in use,
            // and it reruns through SCHED_RESTART: nobody sleeps here.
            debug_assert_eq!(n, 0);
        }
    }

    /// `blk_mq_sched_restart`.
    #[inline(always)]
    pub(super) fn sched_restart(
        &mut self,
        now: Instant,
        h: u16,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let hc = &mut self.hctxs[h as usize];
        if hc.restart {
            hc.restart = false;
            let irq = self.irq_ctx(h);
            self.run_hw_queue(now, h, true, irq, tr, out);
        }
    }

    /// The hardware queues the scheduler woke (`kyber_domain_wake`) run
    /// asynchronously.
    pub(super) fn run_woken_hctxs(&mut self, now: Instant, tr: &mut Tracer, out: &mut BlockOut) {
        let mut woken = Vec::new();
        if let Some(e) = self.elv.as_mut() {
            e.take_wakeups(&mut woken);
        }
        for h in woken {
            if h == super::ALL_HCTXS {
                let k = self.kblockd;
                self.run_hw_queues(now, true, k, tr, out);
                continue;
            }
            let irq = self.irq_ctx(h);
            self.run_hw_queue(now, h, true, irq, tr, out);
        }
    }

    /// Arm the queue's event for the scheduler's timer when it moved
    /// (`mod_timer`); an event of an older arming is stale.
    pub(super) fn sync_elv_timer(&mut self, out: &mut BlockOut) {
        let want = self.elv.as_ref().and_then(|e| e.timer());
        if want != self.elv_timer_at {
            self.elv_timer_gen += 1;
            self.elv_timer_at = want;
            if let Some(at) = want {
                out.events
                    .push((at, QueueEvent::ElvTimer(self.elv_timer_gen)));
            }
        }
    }

    /// The scheduler's timer fired (a softirq on the kblockd CPU).
    pub(super) fn elv_timer(
        &mut self,
        now: Instant,
        gen: u64,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if gen != self.elv_timer_gen {
            return;
        }
        self.elv_timer_at = None;
        if let Some(e) = self.elv.as_mut() {
            e.timer_fired(now);
        }
        self.sync_elv_timer(out);
        self.run_woken_hctxs(now, tr, out);
    }

    /// kblockd runs `hctx->run_work` (`blk_mq_run_work_fn`).
    pub(super) fn run_work_fn(
        &mut self,
        now: Instant,
        h: u16,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        self.hctxs[h as usize].run_pending = false;
        self.run_hw_queue(now, h, false, ctx, tr, out);
    }
}
