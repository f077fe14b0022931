//! On-stack per-task plugging of the 2.6.39-3.x single queue (`block/blk-core.c`
//! of 3.10: `blk_queue_bio`, `blk_attempt_plug_merge`, `blk_flush_plug_list`,
//! `queue_unplugged`; `block/elevator.c`: `elv_attempt_insert_merge`).
//!
//! 2.6.39 removed the queue's own plug, its unplug timer and threshold, and the
//! `blk_run_address_space` kicks. A task that calls `blk_start_plug` collects the
//! requests it allocates on its `struct blk_plug` instead of inserting them; a bio
//! merges first with those (without asking the elevator), then with the
//! elevator's. `blk_finish_plug`, or `schedule` while the task sleeps, sorts the
//! list by sector, inserts each request with a last chance to merge, traces U
//! (explicit) or UT (from `schedule`) with the count, and runs the queue (itself,
//! or from kblockd when from `schedule`). A task with no plug inserts each new
//! request and runs the queue at once.

use super::{BlockOut, BlockWork, Ctx, QueueEvent, RequestQueue, Submit, Waiter};
use crate::bio::BioId;
use crate::elevator::MergeKind;
use crate::request::RqId;
use iostack_core::{Action, Pdu, ReqFlags, TaskId, Tracer};
use iostack_des::Instant;

/// `BLK_MAX_REQUEST_COUNT`: a plug holding this many requests of the queue is
/// flushed before the next is added.
pub const BLK_MAX_REQUEST_COUNT: u32 = 16;

impl RequestQueue {
    /// `blk_start_plug`: the task's (outermost) plug starts, empty.
    pub(crate) fn onstack_start(&mut self, task: TaskId) {
        self.task_plugs.entry(task).or_default();
    }

    /// `blk_finish_plug` → `blk_flush_plug_list(plug, false)`; the plug ends.
    pub(crate) fn onstack_finish(
        &mut self,
        now: Instant,
        task: TaskId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        self.flush_plug_list(now, task, false, ctx, tr, out);
        self.task_plugs.remove(&task);
    }

    /// `sched_submit_work` → `blk_schedule_flush_plug`: the task sleeps holding
    /// its plug, which stays set (and empty).
    pub(crate) fn onstack_sleep(
        &mut self,
        now: Instant,
        task: TaskId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        self.flush_plug_list(now, task, true, ctx, tr, out);
    }

    /// `blk_queue_bio` (3.10): plug merge, elevator merge, else a new request
    /// that goes on the task's plug or straight into the elevator.
    pub(super) fn queue_bio(
        &mut self,
        now: Instant,
        id: BioId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> Submit {
        let b = *self.bios.get(id);
        let task = b.owner.task;
        let mut count = 0;
        // REQ_FLUSH/REQ_FUA bios go straight to get_rq (ELEVATOR_INSERT_FLUSH).
        if !b.flags.is_flush_or_fua() {
            let (merged, n) = self.attempt_plug_merge(now, task, id, tr);
            if merged {
                return Submit::Queued;
            }
            count = n;
            if let Some((rq, kind)) = self.elv_merge(id) {
                let merged = match kind {
                    MergeKind::Back => self.bio_attempt_back_merge(now, rq, id, tr),
                    MergeKind::Front => self.bio_attempt_front_merge(now, rq, id, tr),
                };
                if merged {
                    self.run_deferred_wakes(now, tr, out);
                    return Submit::Queued;
                }
            }
        }
        match self.get_request(now, id, tr) {
            Some(rq) => {
                self.plug_or_insert(now, task, rq, count, ctx, tr, out);
                Submit::Queued
            }
            None => {
                // get_request: S, then io_schedule, which flushes the plug
                // (`BlockQueue::sleep`).
                self.trace_bio(now, &b, Action::SleepRq, Pdu::None, tr);
                self.stats.sleeps += 1;
                let sync = b.flags.is_sync() as usize;
                self.waiters[sync].push_back(Waiter {
                    bio: id,
                    plug_count: count,
                });
                Submit::Sleeping
            }
        }
    }

    /// The tail of `blk_queue_bio` once a request is allocated: on the task's
    /// plug (P for its first request, a flush once it holds
    /// `BLK_MAX_REQUEST_COUNT`), else `add_acct_request` + `__blk_run_queue`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn plug_or_insert(
        &mut self,
        now: Instant,
        task: TaskId,
        rq: RqId,
        count: u32,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if !self.task_plugs.contains_key(&task) {
            self.add_request(now, rq, ctx, tr, out);
            self.run_queue(now, ctx, tr, out);
            return;
        }
        if count == 0 {
            self.stats.plugs += 1;
            self.trace_simple(now, ctx, Action::Plug, Pdu::None, tr);
        } else if count >= BLK_MAX_REQUEST_COUNT {
            self.flush_plug_list(now, task, false, ctx, tr, out);
            self.stats.plugs += 1;
            self.trace_simple(now, ctx, Action::Plug, Pdu::None, tr);
        }
        self.task_plugs
            .get_mut(&task)
            .expect("the task's plug")
            .push(rq);
        self.nr_plugged += 1;
    }

    /// `blk_attempt_plug_merge`: the task's plugged requests, newest first, with
    /// `blk_rq_merge_ok` and `blk_try_merge` (the elevator is not asked).
    /// Returns whether the bio merged and how many requests the plug holds.
    fn attempt_plug_merge(
        &mut self,
        now: Instant,
        task: TaskId,
        bio: BioId,
        tr: &mut Tracer,
    ) -> (bool, u32) {
        let Some(list) = self.task_plugs.get(&task) else {
            return (false, 0);
        };
        let list = list.clone();
        let b = *self.bios.get(bio);
        let mut count = 0;
        for &rq in list.iter().rev() {
            count += 1;
            if !self.plug_rq_merge_ok(rq, bio) {
                continue;
            }
            let r = self.rqs.get(rq);
            let merged = if r.end_sector() == b.sector {
                self.bio_link_back(now, rq, bio, tr)
            } else if r.sector.checked_sub(b.sectors as u64) == Some(b.sector) {
                self.bio_link_front(now, rq, bio, tr)
            } else {
                continue;
            };
            if merged {
                return (true, count);
            }
        }
        (false, count)
    }

    /// `blk_rq_merge_ok` (3.10 `block/blk-merge.c`): mergeable, same direction,
    /// same discard-ness.
    fn plug_rq_merge_ok(&self, rq: RqId, bio: BioId) -> bool {
        let r = self.rqs.get(rq);
        let b = self.bios.get(bio);
        !r.flags.contains(ReqFlags::NOMERGE)
            && r.is_write() == b.flags.is_write()
            && r.flags.contains(ReqFlags::DISCARD) == b.flags.contains(ReqFlags::DISCARD)
    }

    /// `blk_flush_plug_list`: sort the task's requests by sector (`plug_rq_cmp`),
    /// insert each (`ELEVATOR_INSERT_SORT_MERGE`, or `ELEVATOR_INSERT_FLUSH`),
    /// then `queue_unplugged`.
    fn flush_plug_list(
        &mut self,
        now: Instant,
        task: TaskId,
        from_schedule: bool,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let Some(list) = self.task_plugs.get_mut(&task) else {
            return;
        };
        if list.is_empty() {
            return;
        }
        let mut list = std::mem::take(list);
        self.nr_plugged -= list.len() as u32;
        // list_sort is a merge sort: stable but for requests starting at the
        // same sector, which plug_rq_cmp orders newest first (left stable here).
        list.sort_by_key(|&rq| self.rqs.get(rq).sector);
        let depth = list.len() as u64;
        for rq in list {
            if self.rqs.get(rq).flags.is_flush_or_fua() {
                self.add_request(now, rq, ctx, tr, out);
            } else {
                self.insert_sort_merge(now, rq, ctx, tr, out);
            }
        }
        self.queue_unplugged(now, depth, from_schedule, ctx, tr, out);
    }

    /// `__elv_add_request(ELEVATOR_INSERT_SORT_MERGE)`: I, then
    /// `elv_attempt_insert_merge`, else a sorted insert.
    fn insert_sort_merge(
        &mut self,
        now: Instant,
        rq: RqId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        self.trace_rq(now, rq, ctx, Action::Insert, tr);
        if !self.attempt_insert_merge(rq) {
            self.elv_insert_sort(now, rq, ctx, tr, out);
        }
        self.run_deferred_wakes(now, tr, out);
    }

    /// `elv_attempt_insert_merge`: the last-merge cache, then back-merge hash
    /// lookups as long as merges succeed.
    fn attempt_insert_merge(&mut self, mut rq: RqId) -> bool {
        if self.cfg.nomerges >= 2 {
            return false;
        }
        if let Some(lm) = self.last_merge {
            if self.attempt_merge(lm, rq) {
                return true;
            }
        }
        if self.cfg.nomerges == 1 {
            return false;
        }
        let mut merged = false;
        while let Some(prev) = self.rqhash_find(self.rqs.get(rq).sector) {
            if !self.attempt_merge(prev, rq) {
                break;
            }
            merged = true;
            rq = prev;
        }
        merged
    }

    /// `queue_unplugged`: U (explicit) or UT (from `schedule`) with the number of
    /// requests released, then `__blk_run_queue` or `blk_run_queue_async`.
    fn queue_unplugged(
        &mut self,
        now: Instant,
        depth: u64,
        from_schedule: bool,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let pdu = Pdu::Unplug { depth };
        if from_schedule {
            self.stats.unplugs_timer += 1;
            self.trace_simple(now, ctx, Action::UnplugTimer, pdu, tr);
            out.events
                .push((now, QueueEvent::Work(BlockWork::RunQueue)));
        } else {
            self.stats.unplugs_io += 1;
            self.trace_simple(now, ctx, Action::UnplugIo, pdu, tr);
            self.run_queue(now, ctx, tr, out);
        }
    }
}
