//! The sector-sorted request tree the schedulers share: `elv_rb_add`,
//! `elv_rb_del`, `elv_rb_find`, `elv_rb_former_request` and
//! `elv_rb_latter_request` of `block/elevator.c`. Requests with the same start
//! sector are kept apart by their id, so the order is total and deterministic.

use iostack_block::RqId;
use iostack_core::Sector;
use std::collections::BTreeSet;

#[derive(Clone, Debug, Default)]
pub struct ElvRb(BTreeSet<(Sector, RqId)>);

impl ElvRb {
    pub fn new() -> Self {
        Self::default()
    }

    /// `elv_rb_add`.
    pub fn add(&mut self, key: Sector, rq: RqId) {
        assert!(
            self.0.insert((key, rq)),
            "request {rq:?} already in the tree"
        );
    }

    /// `elv_rb_del`.
    pub fn del(&mut self, key: Sector, rq: RqId) {
        assert!(self.0.remove(&(key, rq)), "request {rq:?} not in the tree");
    }

    /// Re-file a request whose start moved (a front merge).
    pub fn rekey(&mut self, old: Sector, new: Sector, rq: RqId) {
        self.del(old, rq);
        self.add(new, rq);
    }

    /// `elv_rb_find`: a request starting at `sector` (the front-merge candidate
    /// for a bio ending there).
    pub fn find(&self, sector: Sector) -> Option<RqId> {
        self.0
            .range((sector, RqId(0))..=(sector, RqId(u32::MAX)))
            .next()
            .map(|&(_, r)| r)
    }

    /// `elv_rb_former_request`: the previous request in sector order.
    pub fn former(&self, key: Sector, rq: RqId) -> Option<RqId> {
        self.0.range(..(key, rq)).next_back().map(|&(_, r)| r)
    }

    /// `elv_rb_latter_request`: the next request in sector order.
    pub fn latter(&self, key: Sector, rq: RqId) -> Option<RqId> {
        self.0.range((key, rq)..).nth(1).map(|&(_, r)| r)
    }

    /// The latter request, else the lowest one other than `rq` (the wrap of
    /// `as_find_next_rq` and `cfq_find_next_rq`).
    pub fn latter_or_first(&self, key: Sector, rq: RqId) -> Option<RqId> {
        self.latter(key, rq)
            .or_else(|| self.0.first().map(|&(_, r)| r).filter(|&r| r != rq))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
