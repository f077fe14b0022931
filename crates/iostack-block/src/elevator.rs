//! The scheduler interface: the legacy `struct elevator_ops` hooks, named for their
//! place in a request's life. The generic layer (`queue.rs`) owns merging, plugging,
//! the dispatch list and tracing; an elevator only orders and selects. Every hook
//! but `add_request`, `dispatch` and `queue_empty` has a default.

use crate::bio::Bio;
use crate::request::{RequestPool, RqId};
use iostack_des::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeKind {
    Back,
    Front,
}

/// Where a dispatched request goes on the dispatch list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// `elv_dispatch_sort`: one-way elevator sort against `q->end_sector`.
    Sort,
    /// `elv_dispatch_add_tail`: append and make it the sort boundary.
    Tail,
}

/// What `elv_may_queue` answers (`ELV_MQUEUE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MayQueue {
    May,
    No,
    /// The allocation must succeed even past `nr_requests` (CFQ's idling queue).
    Must,
}

/// A scheduler asking for the queue to be run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Kick {
    #[default]
    None,
    /// `__blk_run_queue` right away, in the current context (CFQ's
    /// `cfq_rq_enqueued` on preemption).
    Now,
    /// `kblockd_schedule_work`: run the queue from kblockd (CFQ's
    /// `cfq_schedule_dispatch`).
    Work,
}

/// Context the generic layer passes to every hook.
pub struct ElvCtx<'a> {
    pub now: Instant,
    /// Scheduler messages, traced as blktrace `m` notes (`blk_add_trace_msg`).
    pub msgs: &'a mut Vec<String>,
    /// Whether `msgs` goes anywhere (a trace sink is attached): with none, a
    /// scheduler does not format its messages.
    pub trace: bool,
    /// Set by a hook to have the queue run (checked after `add_request`,
    /// `completed` and `timer_fired`).
    pub kick: Kick,
}

impl ElvCtx<'_> {
    /// A message (`blk_add_trace_msg`), formatted only when traced.
    pub fn msg(&mut self, text: std::fmt::Arguments) {
        if self.trace {
            self.msgs.push(text.to_string());
        }
    }
    /// `__blk_run_queue` from the hook (`Kick::Now`).
    pub fn kick_now(&mut self) {
        self.kick = Kick::Now;
    }
    /// `kblockd_schedule_work` (`Kick::Work`), unless a run is already asked.
    pub fn kick_work(&mut self) {
        if self.kick == Kick::None {
            self.kick = Kick::Work;
        }
    }
}

pub trait Elevator {
    fn name(&self) -> &'static str;

    /// Told once at queue setup whether the device is non-rotational
    /// (`blk_queue_nonrot`, `QUEUE_FLAG_NONROT`), as CFQ reads it.
    fn set_nonrot(&mut self, _nonrot: bool) {}

    /// `elevator_merge_fn`: a request this bio may be front-merged into. Back merges
    /// are found by the generic last-merge cache and hash first.
    fn merge(&mut self, _rqs: &RequestPool, _bio: &Bio) -> Option<RqId> {
        None
    }
    /// `elevator_allow_merge_fn`.
    fn allow_merge(&self, _rqs: &RequestPool, _rq: RqId, _bio: &Bio) -> bool {
        true
    }
    /// `elevator_merged_fn`: `rq` grew by a bio merge of `kind`.
    fn merged(&mut self, _rqs: &RequestPool, _rq: RqId, _kind: MergeKind) {}
    /// `elevator_merge_req_fn`: `next` was merged into `rq` and will be freed.
    fn merged_requests(&mut self, _rqs: &mut RequestPool, _rq: RqId, _next: RqId) {}

    /// `elevator_set_req_fn` + `elevator_may_queue_fn` at allocation time.
    fn may_queue(&mut self, _bio: &Bio) -> MayQueue {
        MayQueue::May
    }
    /// `elevator_add_req_fn`.
    fn add_request(&mut self, ctx: &mut ElvCtx, rqs: &mut RequestPool, rq: RqId);
    /// `elevator_dispatch_fn`: release at most one request to the dispatch list
    /// (all of them when `force`).
    fn dispatch(
        &mut self,
        ctx: &mut ElvCtx,
        rqs: &RequestPool,
        force: bool,
    ) -> Option<(RqId, Placement)>;
    /// `elevator_queue_empty_fn`.
    fn queue_empty(&self) -> bool;
    /// `elevator_former_req_fn` / `elevator_latter_req_fn`.
    fn former_request(&self, _rqs: &RequestPool, _rq: RqId) -> Option<RqId> {
        None
    }
    fn latter_request(&self, _rqs: &RequestPool, _rq: RqId) -> Option<RqId> {
        None
    }
    /// `elevator_activate_req_fn`: the driver saw the request (D).
    fn activate(&mut self, _ctx: &mut ElvCtx, _rqs: &RequestPool, _rq: RqId) {}
    /// `elevator_completed_req_fn`.
    fn completed(&mut self, _ctx: &mut ElvCtx, _rqs: &RequestPool, _rq: RqId) {}
    /// `elevator_yield_fn` (the blk_yield series, never merged): task
    /// `from` gives up the rest of its time to task `to`.
    fn yield_queue(&mut self, _ctx: &mut ElvCtx, _from: u32, _to: u32) {}
    /// `elevator_put_req_fn`: the request is being freed.
    fn put_request(&mut self, _rqs: &RequestPool, _rq: RqId) {}
    /// Whether this policy ever arms a timer; policies without one say so and the
    /// generic layer stops asking for `timer_deadline`.
    fn has_timer(&self) -> bool {
        true
    }
    /// The elevator's own timer (idle slice, anticipation), if armed.
    fn timer_deadline(&self) -> Option<Instant> {
        None
    }
    /// The timer fired; set `ctx.kick` to have the queue run.
    fn timer_fired(&mut self, _ctx: &mut ElvCtx, _rqs: &RequestPool) {}
    /// Requests held inside the elevator (for invariant checks).
    fn queued(&self) -> usize;
}
