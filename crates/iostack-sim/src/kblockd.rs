//! kblockd: the block layer's workqueue thread (`kblockd_workqueue`, `kblockd/N`),
//! a kernel task like the others. The block queue defers work to it
//! (`kblockd_schedule_work`: `blk_unplug_work` after the unplug timer, the
//! elevators' queue runs, `blk_run_queue_async`); kblockd runs each item in its
//! own context, so its U and D records carry kblockd's pid. Its state is
//! `task::KBlockd`.

use crate::task::KThread;
use crate::world::Simulation;
use iostack_block::BlockWork;
use iostack_des::Instant;

impl Simulation {
    /// `kblockd_schedule_work` → `queue_work`: the work joins kblockd's list
    /// and wakes kblockd, which runs it at `at` (the queue asks for `now`:
    /// kblockd runs at once on the interrupt CPU). One run per item queued, in
    /// the order they were queued.
    pub(crate) fn queue_work(&mut self, at: Instant, work: BlockWork) {
        self.kblockd.work.push_back(work);
        let task = self.tasks.kthread(KThread::KBlockd);
        self.schedule_task(task, at);
    }

    /// One step of kblockd (`worker_thread` → `process_one_work`): the oldest
    /// pending work, run by the block queue as kblockd.
    pub(crate) fn kblockd_step(&mut self, now: Instant) {
        let task = self.tasks.kthread(KThread::KBlockd);
        let work = self
            .kblockd
            .work
            .pop_front()
            .expect("kblockd woken without work");
        let ctx = self.tasks.get(task).ctx();
        self.queue
            .run_work(now, work, ctx, &mut self.tracer, &mut self.out);
    }
}
