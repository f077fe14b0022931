//! The generic side of a blk-mq scheduler (6.x `block/blk-mq-sched.c`,
//! `elevator.c`, `blk-merge.c`): bio merges through `last_merge`, the
//! back-merge hash and the scheduler's front-merge lookup
//! (`blk_mq_sched_try_merge` → `elv_merge`), request-to-request merges
//! (`attempt_merge`), and insertion with its insert merge
//! (`blk_mq_sched_try_insert_merge` → `elv_attempt_insert_merge`).

use super::{Loc, MqQueue};
use crate::bio::BioId;
use crate::elevator::MergeKind;
use crate::queue::{BlockOut, Ctx};
use crate::request::RqId;
use iostack_core::{Action, ReqFlags, Sector, Tracer};
use iostack_des::Instant;

impl MqQueue {
    /// `elv_rqhash_add`: the newest entry at an end sector is found first.
    fn hash_add(&mut self, rq: RqId) {
        let end = self.rqs.get(rq).end_sector();
        self.hash_seq += 1;
        let key = (end, self.hash_seq);
        self.hash.insert(key, rq);
        self.mq_mut(rq).hash = Some(key);
        self.rqs.get_mut(rq).on_hash = true;
    }

    /// `elv_rqhash_del`.
    pub(super) fn hash_del(&mut self, rq: RqId) {
        if let Some(key) = self.mq_mut(rq).hash.take() {
            self.hash.remove(&key);
            self.rqs.get_mut(rq).on_hash = false;
        }
    }

    /// `elv_rqhash_reposition`.
    fn hash_reposition(&mut self, rq: RqId) {
        self.hash_del(rq);
        self.hash_add(rq);
    }

    /// `elv_rqhash_find`: the newest request ending at `sector`.
    fn hash_find(&self, sector: Sector) -> Option<RqId> {
        self.hash
            .range((sector, 0)..=(sector, u64::MAX))
            .next_back()
            .map(|(_, &rq)| rq)
    }

    /// `elv_merge`: the one-hit cache, then (unless `nomerges` = 1) the hash
    /// for a back merge and the scheduler's `request_merge` for a front one.
    fn elv_merge(&self, id: BioId) -> Option<(RqId, MergeKind)> {
        if let Some(lm) = self.last_merge {
            if let Some(kind) = self.try_merge(lm, id) {
                return Some((lm, kind));
            }
        }
        if self.cfg.nomerges == 1 {
            return None;
        }
        let b = self.bio(id);
        if let Some(rq) = self.hash_find(b.sector) {
            if self.try_merge(rq, id) == Some(MergeKind::Back) {
                return Some((rq, MergeKind::Back));
            }
        }
        let rq = self.elv.as_ref()?.request_merge(&self.rqs, b)?;
        (self.try_merge(rq, id) == Some(MergeKind::Front)).then_some((rq, MergeKind::Front))
    }

    /// `blk_mq_sched_try_merge`: merge the bio, then try to merge the grown
    /// request with its neighbour (`attempt_back_merge` /
    /// `attempt_front_merge`), else `elv_merged_request`.
    pub(super) fn sched_try_merge(
        &mut self,
        now: Instant,
        id: BioId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> bool {
        let Some((rq, kind)) = self.elv_merge(id) else {
            return false;
        };
        if !self.bio_attempt_merge(now, rq, id, kind, tr) {
            return false;
        }
        let ctx = Self::bio_ctx(self.bio(id));
        let elv = self.elv.as_ref().expect("scheduler");
        let pair = match kind {
            MergeKind::Back => elv.next_request(&self.rqs, rq).map(|next| (rq, next)),
            MergeKind::Front => elv.former_request(&self.rqs, rq).map(|prev| (prev, rq)),
        };
        let freed = pair.and_then(|(a, b)| self.attempt_merge(now, a, b, ctx, tr));
        match freed {
            Some(next) => self.free_request(now, next, tr, out),
            None => {
                // elv_merged_request
                self.elv
                    .as_mut()
                    .expect("scheduler")
                    .request_merged(&self.rqs, rq, kind);
                if kind == MergeKind::Back {
                    self.hash_reposition(rq);
                }
                self.last_merge = Some(rq);
            }
        }
        true
    }

    fn bio_ctx(b: &crate::Bio) -> Ctx {
        Ctx {
            pid: b.pid,
            cpu: b.cpu,
        }
    }

    /// `attempt_merge`: `next` joins `req` if both are mergeable, contiguous,
    /// of one direction and within the limits (`ll_merge_requests_fn`); M for
    /// `next` (`trace_block_rq_merge`), `elv_merge_requests`. Returns `next`,
    /// which the caller frees.
    fn attempt_merge(
        &mut self,
        now: Instant,
        req: RqId,
        next: RqId,
        ctx: Ctx,
        tr: &mut Tracer,
    ) -> Option<RqId> {
        {
            let r = self.rqs.get(req);
            let n = self.rqs.get(next);
            let ok = |x: &crate::Request| !(x.flags.contains(ReqFlags::NOMERGE) || x.started);
            if !ok(r)
                || !ok(n)
                || r.end_sector() != n.sector
                || r.is_write() != n.is_write()
                || r.ioprio != n.ioprio
            {
                return None;
            }
            if r.sectors + n.sectors > self.cfg.limits.max_sectors
                || r.segments + n.segments > self.cfg.limits.max_segments
            {
                return None;
            }
        }
        self.trace_rq(now, next, ctx, Action::BackMerge, tr);
        let n = self.rqs.get(next).clone();
        let tail = self.rqs.get(req).bio_tail;
        self.bios.get_mut(tail).next = Some(n.bio_head);
        {
            let r = self.rqs.get_mut(req);
            r.start_time = r.start_time.min(n.start_time);
            r.bio_tail = n.bio_tail;
            r.sectors += n.sectors;
            r.segments += n.segments;
            r.ioprio = r.ioprio.min(n.ioprio);
        }
        // next's bios now belong to req: it completes without them.
        self.rqs.get_mut(next).bio_head = n.bio_head;
        self.stats.request_merges += 1;
        // elv_merge_requests
        self.elv
            .as_mut()
            .expect("scheduler")
            .requests_merged(&mut self.rqs, req, next);
        self.hash_del(next);
        if self.rqs.get(req).on_hash {
            self.hash_reposition(req);
        }
        self.last_merge = Some(req);
        Some(next)
    }

    /// `dd_insert_request`'s generic part: the insert merge
    /// (`elv_attempt_insert_merge`: `last_merge`, then back merges through
    /// the hash, repeatedly), else I, the scheduler's insert, the hash and
    /// `last_merge`.
    pub(super) fn sched_insert(
        &mut self,
        now: Instant,
        rq: RqId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        self.mq_mut(rq).loc = Loc::SwQueue; // in transit
        let rqhash = self.elv.as_ref().is_some_and(|e| e.rqhash());
        if rqhash && self.cfg.nomerges < 2 && !self.rqs.get(rq).flags.contains(ReqFlags::NOMERGE) {
            let mut cur = rq;
            let mut merged = false;
            if let Some(lm) = self.last_merge {
                if let Some(n) = self.attempt_merge(now, lm, cur, ctx, tr) {
                    self.free_merged(now, n, tr, out);
                    merged = true;
                    cur = lm;
                }
            }
            if !merged && self.cfg.nomerges == 0 {
                while let Some(prev) = self.hash_find(self.rqs.get(cur).sector) {
                    if prev == cur {
                        break;
                    }
                    let Some(n) = self.attempt_merge(now, prev, cur, ctx, tr) else {
                        break;
                    };
                    self.free_merged(now, n, tr, out);
                    merged = true;
                    cur = prev;
                }
            }
            if merged {
                return;
            }
        }
        self.trace_rq(now, rq, ctx, Action::Insert, tr);
        self.sched_cpu(now, self.cost.insert_ns, out);
        let h = self.mq(rq).hctx;
        self.rqs.get_mut(rq).sorted = true;
        self.mq_mut(rq).loc = Loc::Sched;
        self.elv
            .as_mut()
            .expect("scheduler")
            .insert_request(now, h, &mut self.rqs, rq);
        if rqhash && !self.rqs.get(rq).flags.contains(ReqFlags::NOMERGE) {
            self.hash_add(rq);
            if self.last_merge.is_none() {
                self.last_merge = Some(rq);
            }
        }
    }

    /// Free a request merged into another (`blk_mq_free_requests(&free)`).
    fn free_merged(&mut self, now: Instant, rq: RqId, tr: &mut Tracer, out: &mut BlockOut) {
        self.free_request(now, rq, tr, out);
    }
}
