//! Plugs belong to tasks: the points where a task's submissions are batched and
//! released, as the kernel places them, handed to the block queue through
//! `BlockQueue`'s per-task calls. Each era's queue acts at the points its kernel
//! has (the 2.6.28-2.6.38 single queue only at `unplug`, 2.6.39+ and blk-mq at
//! `start_plug`, `finish_plug` and the task going to sleep), so the callers here
//! say where they are, never which era runs.

use crate::task::Blocked;
use crate::world::Simulation;
use iostack_core::TaskId;
use iostack_des::Instant;

impl Simulation {
    /// `blk_start_plug(&plug)` in `task`: a batch of submissions begins. A
    /// nested plug only counts (`current->plug` is already set).
    pub(crate) fn start_plug(&mut self, task: TaskId) {
        let t = self.tasks.get_mut(task);
        t.plugs += 1;
        if t.plugs == 1 {
            self.queue.start_plug(task);
        }
    }

    /// `blk_finish_plug(&plug)` in `task`: the outermost plug releases what it
    /// holds.
    pub(crate) fn finish_plug(&mut self, task: TaskId, now: Instant) {
        let t = self.tasks.get_mut(task);
        assert!(t.plugs > 0, "blk_finish_plug without blk_start_plug");
        t.plugs -= 1;
        if t.plugs == 0 {
            let ctx = t.ctx();
            self.queue
                .finish_plug(now, task, ctx, &mut self.tracer, &mut self.out);
        }
    }

    /// `task` will wait for its I/O and kicks the device first
    /// (`blk_run_address_space`, `blk_run_backing_dev` from `sync_page`).
    pub(crate) fn unplug(&mut self, task: TaskId, now: Instant) {
        let ctx = self.tasks.get(task).ctx();
        self.queue
            .unplug(now, task, ctx, &mut self.tracer, &mut self.out);
    }

    /// `task`'s step is over. If it went to sleep holding a plug, `schedule`
    /// flushes the plug (`sched_submit_work` → `blk_schedule_flush_plug`).
    pub(crate) fn sched_out(&mut self, task: TaskId, now: Instant) {
        let t = self.tasks.get(task);
        let asleep = matches!(
            t.blocked,
            Blocked::OnRequest | Blocked::OnIo | Blocked::OnPage | Blocked::OnCongestion
        );
        if asleep && t.plugs > 0 {
            let ctx = t.ctx();
            self.queue
                .sleep(now, task, ctx, &mut self.tracer, &mut self.out);
        }
    }
}
