//! blk-mq behind the era-independent [`BlockQueue`] interface: the task's
//! on-stack plug acts at `start_plug`, `finish_plug` and `sleep`; `unplug`
//! (the pre-2.6.39 `blk_run_address_space`) does not exist here.

use super::MqQueue;
use crate::bio::Bio;
use crate::blockqueue::BlockQueue;
use crate::queue::{BlockOut, BlockWork, Ctx, QueueEvent, QueueStats, Submit};
use crate::request::RqId;
use iostack_core::{TaskId, Tracer};
use iostack_des::Instant;
use iostack_device::Device;

impl BlockQueue for MqQueue {
    fn submit_bio(
        &mut self,
        now: Instant,
        bio: Bio,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> Submit {
        MqQueue::submit_bio(self, now, bio, tr, out)
    }
    fn start_plug(&mut self, task: TaskId) {
        MqQueue::start_plug(self, task)
    }
    fn dirty_sleep(&mut self, now: Instant) {
        if let Some(w) = self.wbt.as_mut() {
            w.dirty_sleep = Some(w.jiffies(now));
        }
    }
    fn finish_plug(
        &mut self,
        now: Instant,
        task: TaskId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        MqQueue::finish_plug(self, now, task, ctx, tr, out)
    }
    /// No `blk_run_address_space` in 6.x.
    fn unplug(&mut self, _: Instant, _: TaskId, _: Ctx, _: &mut Tracer, _: &mut BlockOut) {}
    fn sleep(&mut self, now: Instant, task: TaskId, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        MqQueue::sleep(self, now, task, ctx, tr, out)
    }
    /// `blk_mq_run_hw_queues(q, false)`.
    fn run_queue(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        for h in 0..self.hctxs.len() as u16 {
            self.run_hw_queue(now, h, false, ctx, tr, out);
        }
        self.check();
    }
    fn handle(&mut self, now: Instant, ev: QueueEvent, tr: &mut Tracer, out: &mut BlockOut) {
        match ev {
            QueueEvent::DeviceDone(id) => self.complete(now, RqId(id as u32), tr, out),
            QueueEvent::Work(w) => {
                let k = self.kblockd;
                self.run_work(now, w, k, tr, out);
            }
            QueueEvent::ElvTimer(gen) => self.elv_timer(now, gen, tr, out),
            QueueEvent::WbtTimer(gen) => self.wbt_timer(now, gen, tr, out),
            // blk-mq has no unplug timer.
            QueueEvent::UnplugTimer(_) => {}
        }
        self.check();
    }
    fn run_work(
        &mut self,
        now: Instant,
        work: BlockWork,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        match work {
            BlockWork::RunHwQueue(h) => self.run_work_fn(now, h, ctx, tr, out),
            BlockWork::MqRequeue => self.requeue_work(now, ctx, tr, out),
            BlockWork::RunQueue | BlockWork::Unplug => {
                BlockQueue::run_queue(self, now, ctx, tr, out)
            }
        }
        self.check();
    }
    fn set_kblockd(&mut self, ctx: Ctx) {
        self.kblockd = ctx;
    }
    /// blk-mq has no congestion state (`bdi_*_congested` went in 5.18).
    fn congested(&self, _sync: bool) -> bool {
        false
    }
    fn idle(&self) -> bool {
        self.rqs.live() == 0 && self.bios.live() == 0
    }
    fn busy_summary(&self) -> String {
        format!(
            "{} requests, {} plugged tasks, {} tag sleepers, stats {:?}",
            self.rqs.live(),
            self.plugs.values().filter(|p| !p.list.is_empty()).count(),
            self.sleeping_bios(),
            self.stats
        )
    }
    fn stats(&self) -> &QueueStats {
        &self.stats
    }
    fn elevator_name(&self) -> &'static str {
        self.elv.as_ref().map_or("none", |e| e.name())
    }
    fn device(&self) -> &dyn Device {
        &*self.dev
    }
    fn set_checks(&mut self, on: bool) {
        self.checks = on;
    }
}
