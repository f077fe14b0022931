//! The block-queue interface: what the layers above ask of a block layer, whatever
//! its era. Today's implementation is the 2.6.28-2.6.38 single-queue path
//! (`RequestQueue`: `__make_request`, a per-queue plug with its unplug timer and
//! threshold, the legacy elevator, `request_fn`); a 2.4 `ll_rw_blk` queue and
//! blk-mq sit beside it behind the same trait.
//!
//! Like every layer, a queue is sans-IO: each call takes the time and returns its
//! effects in `BlockOut` (completed bios, woken submitters, timers to arm).

use crate::bio::Bio;
use crate::queue::{BlockOut, Ctx, QueueEvent, QueueStats, RequestQueue, Submit};
use iostack_core::Tracer;
use iostack_des::Instant;
use iostack_device::Device;

pub trait BlockQueue {
    /// `submit_bio` → `generic_make_request` → the queue's `make_request_fn`.
    /// The submitting task is the bio's owner; it may have to sleep for a
    /// request (`Submit::Sleeping`) until `BlockOut::woken` names it.
    fn submit_bio(&mut self, now: Instant, bio: Bio, tr: &mut Tracer, out: &mut BlockOut)
        -> Submit;
    /// The task `ctx` releases its plug: on the single queue, whose plug belongs
    /// to the queue, `blk_unplug` of the device (`blk_run_address_space`,
    /// `sync_page`); with per-task plugs (2.6.39+), `blk_finish_plug`.
    fn unplug(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut);
    /// Dispatch to the driver (`__blk_run_queue` → `request_fn`) as task `ctx`.
    fn run_queue(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut);
    /// A timer the queue armed, or the device completing a command (which ends
    /// in `blk_update_request` and the bios' completions).
    fn handle(&mut self, now: Instant, ev: QueueEvent, tr: &mut Tracer, out: &mut BlockOut);
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
    fn unplug(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        RequestQueue::unplug(self, now, ctx, tr, out)
    }
    fn run_queue(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        RequestQueue::run_queue(self, now, ctx, tr, out)
    }
    fn handle(&mut self, now: Instant, ev: QueueEvent, tr: &mut Tracer, out: &mut BlockOut) {
        RequestQueue::handle(self, now, ev, tr, out)
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
