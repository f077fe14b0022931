//! noop (`block/noop-iosched.c`): requests leave in insertion order; the generic
//! layer's last-merge cache and back-merge hash do all the merging, and dispatch
//! uses `elv_dispatch_sort`.

use iostack_block::{Elevator, ElvCtx, Placement, RequestPool, RqId};
use std::collections::VecDeque;

#[derive(Default)]
pub struct Noop {
    /// `nd->queue`.
    queue: VecDeque<RqId>,
}

impl Noop {
    pub fn new() -> Self {
        Noop::default()
    }

    fn position(&self, rq: RqId) -> usize {
        self.queue
            .iter()
            .position(|&r| r == rq)
            .expect("request not in noop queue")
    }
}

impl Elevator for Noop {
    fn name(&self) -> &'static str {
        "noop"
    }

    fn has_timer(&self) -> bool {
        false
    }

    /// `noop_add_request`: list_add_tail.
    fn add_request(&mut self, _ctx: &mut ElvCtx, _rqs: &mut RequestPool, rq: RqId) {
        self.queue.push_back(rq);
    }

    /// `noop_dispatch`: the head, through `elv_dispatch_sort`.
    fn dispatch(
        &mut self,
        _ctx: &mut ElvCtx,
        _rqs: &RequestPool,
        _force: bool,
    ) -> Option<(RqId, Placement)> {
        self.queue.pop_front().map(|rq| (rq, Placement::Sort))
    }

    fn queue_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// `noop_merged_requests`: `next` leaves the list.
    fn merged_requests(&mut self, _rqs: &mut RequestPool, _rq: RqId, next: RqId) {
        let i = self.position(next);
        self.queue.remove(i);
    }

    /// `noop_former_request`: the previous entry in insertion order.
    fn former_request(&self, _rqs: &RequestPool, rq: RqId) -> Option<RqId> {
        let i = self.position(rq);
        i.checked_sub(1).map(|j| self.queue[j])
    }

    /// `noop_latter_request`: the next entry in insertion order.
    fn latter_request(&self, _rqs: &RequestPool, rq: RqId) -> Option<RqId> {
        let i = self.position(rq);
        self.queue.get(i + 1).copied()
    }

    fn queued(&self) -> usize {
        self.queue.len()
    }
}
