//! The block-queue interface: what the layers above ask of a block layer, whatever
//! its era. Today's implementation is the 2.6.28-2.6.38 single-queue path
//! (`RequestQueue`: `__make_request`, a per-queue plug with its unplug timer and
//! threshold, the legacy elevator, `request_fn`); a 2.4 `ll_rw_blk` queue and
//! blk-mq sit beside it behind the same trait.
//!
//! Plugs belong to tasks. The caller says, for a task, where the kernel of each
//! era has a plugging call: a batch of submissions starts (`start_plug`) and ends
//! (`finish_plug`), a task that will wait for its I/O kicks the device
//! (`unplug`), a task goes to sleep (`sleep`). Each era does what its kernel does
//! at that point and nothing at the others: the 2.6.28-2.6.38 queue keeps one plug
//! per queue and acts on `unplug` only; 2.6.39+ and blk-mq keep the task's
//! on-stack `struct blk_plug` and act on `start_plug`, `finish_plug` and `sleep`;
//! 2.4 runs `tq_disk` on `unplug`.
//!
//! Like every layer, a queue is sans-IO: each call takes the time and returns its
//! effects in `BlockOut` (completed bios, woken submitters, timers to arm, work
//! for kblockd).

use crate::bio::Bio;
use crate::queue::{BlockOut, BlockWork, Ctx, QueueEvent, QueueStats, RequestQueue, Submit};
use iostack_core::{TaskId, Tracer};
use iostack_des::Instant;
use iostack_device::Device;

pub trait BlockQueue {
    /// `submit_bio` → `generic_make_request` → the queue's `make_request_fn`.
    /// The submitting task is the bio's owner; it may have to sleep for a
    /// request (`Submit::Sleeping`) until `BlockOut::woken` names it.
    fn submit_bio(&mut self, now: Instant, bio: Bio, tr: &mut Tracer, out: &mut BlockOut)
        -> Submit;

    /// `submit_bio` of each bio of a run (`BioRun`), in order, as one task
    /// submits them back to back. Returns how the last one went, and the bios
    /// not yet submitted when the task must sleep for a request (it submits
    /// them when woken). A queue may keep the bios that land in one request as
    /// one record; each completion then covers `CompletedBio::run`.
    fn submit_bio_run(
        &mut self,
        now: Instant,
        mut run: Bio,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> (Submit, Option<Bio>) {
        loop {
            let Some(first) = run.split_first() else {
                return (self.submit_bio(now, run, tr, out), None);
            };
            if self.submit_bio(now, first, tr, out) == Submit::Sleeping {
                return (Submit::Sleeping, Some(run));
            }
            if self.merge_run(now, &mut run, tr) {
                return (Submit::Queued, None);
            }
        }
    }

    /// Right after a bio of `run` was submitted: submit as many of the run's
    /// next bios as the queue can decide at once, taking them off `run`.
    /// Returns true when that was all of them. A queue without such a path
    /// returns false, and each bio goes through `submit_bio`.
    fn merge_run(&mut self, _now: Instant, _run: &mut Bio, _tr: &mut Tracer) -> bool {
        false
    }

    /// `task` starts a batch of submissions. 2.6.39+ and blk-mq:
    /// `blk_start_plug` (`current->plug` = an on-stack `struct blk_plug` that
    /// collects the task's requests). 2.6.28-2.6.38: nothing, the plug is the
    /// queue's (`blk_plug_device` in `__make_request` when the elevator is
    /// empty). 2.4: nothing (`__make_request` → `plug_device` puts the queue on
    /// `tq_disk`). The caller keeps the nesting: only a task's outermost plug
    /// reaches the queue, as `blk_start_plug` ignores a nested one.
    /// A dirtier pauses in 3.2+'s IO-less `balance_dirty_pages` on this
    /// disk's bdi (`wb->dirty_sleep = now`), which wbt reads
    /// (`wb_recent_wait`). Nothing for queues without wbt.
    fn dirty_sleep(&mut self, _now: Instant) {}
    fn start_plug(&mut self, task: TaskId);
    /// `task`'s batch ends (its outermost plug). 2.6.39+ and blk-mq:
    /// `blk_finish_plug` → `blk_flush_plug_list(plug, false)`: U (explicit) with
    /// the plug's depth, the requests inserted, the queue run by the task.
    /// 2.6.28-2.6.38 and 2.4: nothing.
    fn finish_plug(
        &mut self,
        now: Instant,
        task: TaskId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    );
    /// `task`, about to wait for I/O, kicks the device. 2.6.28-2.6.38:
    /// `blk_run_address_space` / `blk_run_backing_dev` (from `fs/direct-io.c`,
    /// `sync_page` under `lock_page` and `wait_on_page_writeback`) →
    /// `blk_backing_dev_unplug` → `blk_unplug`: U with the queue's allocated
    /// requests, then `q->unplug_fn`. 2.4: `run_task_queue(&tq_disk)` (from
    /// `block_sync_page`, `__wait_on_buffer`). 2.6.39+: nothing, these calls
    /// went with per-queue plugging; the task's plug is flushed by
    /// `finish_plug` or when it sleeps.
    fn unplug(&mut self, now: Instant, task: TaskId, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut);
    /// `task` holds a plug and leaves the CPU asleep (`schedule` /
    /// `io_schedule` with the task not running). 2.6.39+:
    /// `sched_submit_work` → `blk_schedule_flush_plug` →
    /// `blk_flush_plug_list(plug, true)`: UT with the plug's depth, and the
    /// queue run from kblockd (`blk_run_queue_async`); blk-mq flushes the plug
    /// the same way. 2.6.28-2.6.38 and 2.4: nothing, `schedule` knows no plug
    /// (the paths that sleep on I/O `unplug` first).
    fn sleep(&mut self, now: Instant, task: TaskId, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut);

    /// `blk_yield(q, tsk)` (the blk_yield series): the task `ctx` yields the
    /// queue to the task with pid `to`. Queues without an elevator hook
    /// ignore it.
    fn blk_yield(
        &mut self,
        _now: Instant,
        _ctx: Ctx,
        _to: u32,
        _tr: &mut Tracer,
        _out: &mut BlockOut,
    ) {
    }
    /// Dispatch to the driver (`__blk_run_queue` → `request_fn`) as task `ctx`.
    fn run_queue(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut);
    /// A timer the queue armed, or the device completing a command (which ends
    /// in `blk_update_request` and the bios' completions). Work for kblockd
    /// (`QueueEvent::Work`) goes to `run_work` instead.
    fn handle(&mut self, now: Instant, ev: QueueEvent, tr: &mut Tracer, out: &mut BlockOut);
    /// The kblockd task `ctx` runs work the queue gave it
    /// (`kblockd_schedule_work`, `QueueEvent::Work`).
    fn run_work(
        &mut self,
        now: Instant,
        work: BlockWork,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    );
    /// The kblockd task: timer-context work (the elevator's timer) is traced
    /// as it.
    fn set_kblockd(&mut self, ctx: Ctx);
    /// `bdi_write_congested` (`sync == false`) / `bdi_read_congested`.
    fn congested(&self, sync: bool) -> bool;
    /// Nothing allocated, plugged, queued or in the device.
    fn idle(&self) -> bool;
    /// What is still held when the queue is not idle, for error messages.
    fn busy_summary(&self) -> String;
    fn stats(&self) -> &QueueStats;
    fn elevator_name(&self) -> &'static str;
    fn device(&self) -> &dyn Device;
    /// Run the full invariant checks after every operation.
    fn set_checks(&mut self, on: bool);
}

/// The single queue. 2.6.28-2.6.38: its plug is the queue's, so of the per-task
/// calls only `unplug` (`blk_unplug`) acts. 2.6.39+ (`QueueConfig::onstack_plug`):
/// the plugs are the tasks' (`onstack.rs`) and `unplug` does nothing.
impl BlockQueue for RequestQueue {
    fn submit_bio(
        &mut self,
        now: Instant,
        bio: Bio,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> Submit {
        RequestQueue::submit_bio(self, now, bio, tr, out)
    }
    /// The bios of a run that back-merge one after another take
    /// `run_merge.rs`'s path.
    fn merge_run(&mut self, now: Instant, run: &mut Bio, tr: &mut Tracer) -> bool {
        RequestQueue::merge_run(self, now, run, tr)
    }
    /// `blk_start_plug` from 2.6.39; nothing before.
    fn start_plug(&mut self, task: TaskId) {
        if self.config().onstack_plug {
            self.onstack_start(task);
        }
    }
    /// `blk_finish_plug` from 2.6.39; nothing before.
    fn finish_plug(
        &mut self,
        now: Instant,
        task: TaskId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if self.config().onstack_plug {
            self.onstack_finish(now, task, ctx, tr, out);
        }
    }
    /// `blk_unplug` before 2.6.39; the call is gone after.
    fn unplug(
        &mut self,
        now: Instant,
        _task: TaskId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        RequestQueue::unplug(self, now, ctx, tr, out)
    }
    /// `schedule` flushes the task's plug from 2.6.39; nothing before.
    fn sleep(&mut self, now: Instant, task: TaskId, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        if self.config().onstack_plug {
            self.onstack_sleep(now, task, ctx, tr, out);
        }
    }
    fn blk_yield(&mut self, now: Instant, ctx: Ctx, to: u32, tr: &mut Tracer, out: &mut BlockOut) {
        RequestQueue::blk_yield(self, now, ctx, to, tr, out)
    }
    fn run_queue(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        RequestQueue::run_queue(self, now, ctx, tr, out)
    }
    fn handle(&mut self, now: Instant, ev: QueueEvent, tr: &mut Tracer, out: &mut BlockOut) {
        RequestQueue::handle(self, now, ev, tr, out)
    }
    fn run_work(
        &mut self,
        now: Instant,
        work: BlockWork,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        RequestQueue::run_work(self, now, work, ctx, tr, out)
    }
    fn set_kblockd(&mut self, ctx: Ctx) {
        RequestQueue::set_kblockd(self, ctx)
    }
    fn congested(&self, sync: bool) -> bool {
        RequestQueue::congested(self, sync)
    }
    fn idle(&self) -> bool {
        RequestQueue::idle(self)
    }
    fn busy_summary(&self) -> String {
        format!(
            "{} requests, plugged {}, sleepers {:?}, stats {:?}",
            self.allocated(),
            self.is_plugged(),
            self.sleepers(),
            self.stats()
        )
    }
    fn stats(&self) -> &QueueStats {
        RequestQueue::stats(self)
    }
    fn elevator_name(&self) -> &'static str {
        RequestQueue::elevator_name(self)
    }
    fn device(&self) -> &dyn Device {
        RequestQueue::device(self)
    }
    fn set_checks(&mut self, on: bool) {
        RequestQueue::set_checks(self, on)
    }
}
