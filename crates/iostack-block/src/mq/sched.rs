//! The blk-mq scheduler interface: `struct elevator_mq_ops` (6.x
//! `block/elevator.h`). The generic layer (`blk-mq-sched.c`, `elevator.c`)
//! keeps the one-hit `last_merge` cache and the back-merge hash, does the
//! merges and traces; a scheduler keeps its own order and picks the next
//! request. `none` is no scheduler at all (no `MqElevator`).

use crate::bio::Bio;
use crate::elevator::MergeKind;
use crate::request::{RequestPool, RqId};
use iostack_core::ReqFlags;
use iostack_des::Instant;

/// CPU time a scheduler's hooks take per request, in ns, and whether they
/// run under one lock for the whole queue (mq-deadline's `dd->lock`, BFQ's
/// `bfqd->lock`), on which callers from other CPUs spin. The numbers and
/// their sources are in `iostack_iosched::cost`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedCost {
    /// `bio_merge` (`dd_bio_merge`, `bfq_bio_merge`, `kyber_bio_merge`).
    pub bio_merge_ns: u64,
    /// `insert_requests`, per request.
    pub insert_ns: u64,
    /// One `dispatch_request` call.
    pub dispatch_ns: u64,
    /// `completed_request` and `finish_request`.
    pub completion_ns: u64,
    pub queue_lock: bool,
}

/// `take_wakeups`: every hardware queue.
pub const ALL_HCTXS: u16 = u16::MAX;

pub trait MqElevator {
    fn name(&self) -> &'static str;
    /// Told once at queue setup whether the device is non-rotational
    /// (`blk_queue_nonrot`), as BFQ reads it.
    fn set_nonrot(&mut self, _nonrot: bool) {}
    /// `limit_depth`: the scheduler tags a request of these flags may hold
    /// (`data->shallow_depth`); `nr_requests` is the whole sched tag depth.
    fn limit_depth(&self, _flags: ReqFlags, nr_requests: u32) -> u32 {
        nr_requests
    }
    /// `bio_merge` of a scheduler that merges into its own lists (kyber's
    /// `kyber_bio_merge` → `blk_bio_list_merge`): the list to try, oldest
    /// first, for a bio of `flags` from CPU `cpu` on hardware queue `h`;
    /// `None` is the generic `blk_mq_sched_try_merge` (`last_merge`, the
    /// hash, `request_merge`).
    fn bio_merge_list(&self, _h: u16, _cpu: u32, _flags: ReqFlags) -> Option<Vec<RqId>> {
        None
    }
    /// Whether insertion goes through the generic insert merge and the
    /// back-merge hash (`blk_mq_sched_try_insert_merge`, `elv_rqhash_add`
    /// in `dd_insert_request` and `bfq_insert_request`).
    fn rqhash(&self) -> bool {
        true
    }
    /// `request_merge`: a queued request the bio could be front-merged into
    /// (back merges come from the generic hash first).
    fn request_merge(&self, _rqs: &RequestPool, _bio: &Bio) -> Option<RqId> {
        None
    }
    /// `request_merged`: `rq` grew by a bio merge of `kind`.
    fn request_merged(&mut self, _rqs: &RequestPool, _rq: RqId, _kind: MergeKind) {}
    /// `requests_merged`: `next` was merged into `rq` and will be freed.
    fn requests_merged(&mut self, _rqs: &mut RequestPool, _rq: RqId, _next: RqId) {}
    /// `former_request` / `next_request` (`elv_rb_former_request`,
    /// `elv_rb_latter_request`): neighbours for request-to-request merges.
    fn former_request(&self, _rqs: &RequestPool, _rq: RqId) -> Option<RqId> {
        None
    }
    fn next_request(&self, _rqs: &RequestPool, _rq: RqId) -> Option<RqId> {
        None
    }
    /// `insert_requests` for one request of hardware queue `h`, after the
    /// generic insert merge failed and I was traced.
    fn insert_request(&mut self, now: Instant, h: u16, rqs: &mut RequestPool, rq: RqId);
    /// `dispatch_request` for hardware queue `h`: the next request to hand
    /// to the driver, taken out of the scheduler.
    fn dispatch_request(&mut self, now: Instant, h: u16, rqs: &RequestPool) -> Option<RqId>;
    /// `has_work` of hardware queue `h`.
    fn has_work(&self, h: u16) -> bool;
    /// `completed_request` (`blk_mq_sched_completed_request` from
    /// `__blk_mq_end_request`): the device completed `rq` at `now`.
    fn completed_request(&mut self, _now: Instant, _rqs: &RequestPool, _rq: RqId) {}
    /// `finish_request`: a request the scheduler saw has completed (or was
    /// freed after a merge).
    fn finish_request(&mut self, _rqs: &RequestPool, _rq: RqId) {}
    /// When the scheduler's timer fires, if armed (kyber's `kqd->timer`).
    fn timer(&self) -> Option<Instant> {
        None
    }
    fn timer_fired(&mut self, _now: Instant) {}
    /// Hardware queues a hook woke (`kyber_domain_wake` →
    /// `blk_mq_run_hw_queue(hctx, true)`; `ALL_HCTXS` for
    /// `blk_mq_run_hw_queues(q, true)`), taken after each hook.
    fn take_wakeups(&mut self, _out: &mut Vec<u16>) {}
    /// What its hooks cost on the CPU.
    fn cost(&self) -> SchedCost {
        SchedCost::default()
    }
    /// Requests held inside the scheduler (for invariant checks).
    fn queued(&self) -> usize;
}
