//! The sector-sorted request tree the schedulers share: `elv_rb_add`,
//! `elv_rb_del`, `elv_rb_find`, `elv_rb_former_request` and
//! `elv_rb_latter_request` of `block/elevator.c`. Requests with the same start
//! sector are kept apart by their id, so the order is total and deterministic.

use iostack_block::RqId;
use iostack_core::Sector;

/// The tree as a sorted vector of `(start sector, id)`: a queue holds at most
/// `nr_requests` (plus the hard-cap slack) requests, so a binary search and a
/// short move beat a B-tree's range descent, and `rb_next`/`rb_prev` are the
/// neighbouring slots. The order is the same total order.
#[derive(Clone, Debug, Default)]
pub struct ElvRb(Vec<(Sector, RqId)>);

impl ElvRb {
    pub fn new() -> Self {
        Self::default()
    }

    /// Where `(key, rq)` is, or would go.
    fn pos(&self, key: Sector, rq: RqId) -> Result<usize, usize> {
        self.0.binary_search(&(key, rq))
    }

    /// `elv_rb_add`.
    pub fn add(&mut self, key: Sector, rq: RqId) {
        match self.pos(key, rq) {
            Ok(_) => panic!("request {rq:?} already in the tree"),
            Err(i) => self.0.insert(i, (key, rq)),
        }
    }

    /// `elv_rb_del`.
    pub fn del(&mut self, key: Sector, rq: RqId) {
        match self.pos(key, rq) {
            Ok(i) => {
                self.0.remove(i);
            }
            Err(_) => panic!("request {rq:?} not in the tree"),
        }
    }

    /// Re-file a request whose start moved (a front merge).
    pub fn rekey(&mut self, old: Sector, new: Sector, rq: RqId) {
        self.del(old, rq);
        self.add(new, rq);
    }

    /// `elv_rb_find`: a request starting at `sector` (the front-merge candidate
    /// for a bio ending there).
    pub fn find(&self, sector: Sector) -> Option<RqId> {
        let i = self.0.partition_point(|&e| e < (sector, RqId(0)));
        self.0.get(i).filter(|e| e.0 == sector).map(|&(_, r)| r)
    }

    /// The first request starting at or after `sector` (mq-deadline's
    /// `deadline_from_pos`).
    pub fn ceiling(&self, sector: Sector) -> Option<RqId> {
        let i = self.0.partition_point(|&e| e < (sector, RqId(0)));
        self.0.get(i).map(|&(_, r)| r)
    }

    /// `elv_rb_former_request`: the previous request in sector order.
    pub fn former(&self, key: Sector, rq: RqId) -> Option<RqId> {
        let i = self.pos(key, rq).unwrap_or_else(|i| i);
        i.checked_sub(1).map(|j| self.0[j].1)
    }

    /// `elv_rb_latter_request`: the next request in sector order.
    pub fn latter(&self, key: Sector, rq: RqId) -> Option<RqId> {
        // A streaming writer back-merges into the highest request: no search.
        if self.0.last() == Some(&(key, rq)) {
            return None;
        }
        // As `range((key, rq)..).nth(1)`: the second entry from `(key, rq)` on.
        let i = self.pos(key, rq).unwrap_or_else(|i| i) + 1;
        self.0.get(i).map(|&(_, r)| r)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The sorted vector answers as the ordered set it replaced, present or
    /// absent keys alike (`range((k, r)..).nth(1)` for `latter`).
    #[test]
    fn answers_as_an_ordered_set() {
        let mut rb = ElvRb::new();
        let mut set: BTreeSet<(Sector, RqId)> = BTreeSet::new();
        let mut x = 12345u64;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (key, rq) = (x % 64, RqId((x >> 8) as u32 % 16));
            if set.contains(&(key, rq)) {
                rb.del(key, rq);
                set.remove(&(key, rq));
            } else if x % 3 > 0 {
                rb.add(key, rq);
                set.insert((key, rq));
            }
            let latter = set.range((key, rq)..).nth(1).map(|e| e.1);
            let former = set.range(..(key, rq)).next_back().map(|e| e.1);
            let find = set.range((key, RqId(0))..=(key, RqId(u32::MAX))).next();
            assert_eq!(rb.latter(key, rq), latter);
            assert_eq!(rb.former(key, rq), former);
            assert_eq!(rb.find(key), find.map(|e| e.1));
            assert_eq!(rb.is_empty(), set.is_empty());
        }
    }
}
