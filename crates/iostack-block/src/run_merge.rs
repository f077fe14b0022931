//! Runs of bios (`BioRun`) through `__make_request` (V2632 `block/blk-core.c`).
//!
//! ext4's delayed-allocation writeback of 2.6.27 submits one bio per page
//! (`mpage_da_submit_io` → `->writepage` → `block_write_full_page` →
//! `submit_bh`), so a streaming writer sends the queue millions of 4 KiB bios,
//! each of which back-merges into the request the one before it went to. The
//! queue takes a run's bios one at a time, as the kernel does, and decides each
//! one's fate with the same rules; what it saves is the work the decision does
//! not need:
//!
//! - The first bio of a run, and any bio after one that did not back-merge into
//!   the request now at `q->last_merge`, takes the whole path
//!   (`RequestQueue::submit_bio`).
//! - The bios after one that did back-merge into request `rq`, with `rq` still
//!   at `q->last_merge` and still mergeable, take the fast path (`merge_run`, which
//!   `BlockQueue::submit_bio_run` calls after each bio): `elv_merge`
//!   tries `q->last_merge` first (`elv_rq_merge_ok`, then
//!   `blk_rq_pos(rq) + blk_rq_sectors(rq) == bio->bi_sector`), and every input
//!   of that test is the one the previous bio passed with, except the sizes,
//!   which `ll_back_merge_fn` checks here as it does. The elevator's
//!   `allow_merge` depends on the bio's submitter, direction and sync flag, not
//!   its sector, so it gives the previous bio's answer.
//! - `attempt_back_merge` after each merge looks at the elevator's next request
//!   (`elv_latter_request`), which a back merge does not move in sort order: the
//!   fast path stops before the bio whose end would reach that request's start,
//!   and the whole path takes that bio (and tries the request merge).
//! - No unplug happens on the way (`__make_request`'s `out:` unplugs only for a
//!   `BIO_RW_UNPLUG` bio or a queue that should not plug, and those take the
//!   whole path), so no request leaves the elevator between two bios of a run.
//!
//! Each bio still gets its own A, Q and M records and its own counts. The bios
//! that land in one request are kept as one record in its chain, so the
//! completion covers them at once.

use super::RequestQueue;
use crate::bio::Bio;
use crate::elevator::MergeKind;
use iostack_core::{Action, Pdu, ReqFlags, Tracer};
use iostack_des::Instant;

impl RequestQueue {
    /// The fast path: as many of the run's next bios as back-merge, one by
    /// one, into the request the previous one back-merged into. Returns true
    /// when that was all of them.
    pub(crate) fn merge_run(&mut self, now: Instant, run: &mut Bio, tr: &mut Tracer) -> bool {
        let Some(k) = self.run_merge_count(run) else {
            return false;
        };
        let (rq, tail) = self.back_merged.expect("checked by run_merge_count");
        let (ps, pseg) = run.piece_size();
        if tr.enabled() {
            self.trace_run(now, run, k, tr);
        }
        let old_end = self.rqs.get(rq).end_sector();
        let write = run.flags.is_write();
        for _ in 0..k {
            // bio_attempt_back_merge's accounting, bio by bio.
            self.stats.bios_queued += 1;
            self.stats.bytes_queued += ps as u64 * 512;
            self.stats.back_merges += 1;
            self.count_merge(write);
        }
        self.bios_held += k as u64;
        let t = self.bios.get_mut(tail);
        debug_assert_eq!(t.run.index + t.run.nr, run.run.index, "not the run's tail");
        t.run.nr += k;
        t.sectors += k * ps;
        t.segments += k * pseg;
        let r = self.rqs.get_mut(rq);
        r.sectors += k * ps;
        r.segments += k * pseg;
        r.ioprio = r.ioprio.min(run.ioprio);
        // elv_merged_request after each bio: the elevator's hook (a back merge
        // moves no sort key), and elv_rqhash_reposition, of which only the
        // last key stays.
        for _ in 0..k {
            self.elv.merged(&self.rqs, rq, MergeKind::Back);
        }
        self.rqhash_del_key(old_end, rq);
        self.rqhash_add(rq);
        self.check();
        if k == run.run.nr {
            return true;
        }
        run.sector += (k * ps) as u64;
        run.sectors -= k * ps;
        run.segments -= k * pseg;
        run.run.nr -= k;
        run.run.index += k;
        false
    }

    /// How many of the run's next bios take the fast path (see the module
    /// comment), or `None` if the next one must take the whole path.
    fn run_merge_count(&self, run: &Bio) -> Option<u32> {
        let (rq, tail) = self.back_merged?;
        let r = self.rqs.get(rq);
        let plain = !run.flags.contains(ReqFlags::UNPLUG)
            && !run.flags.is_flush_or_fua()
            && self.queue_should_plug()
            && self.cfg.nomerges < 2
            && !self.cfg.onstack_plug;
        if !plain
            || self.last_merge != Some(rq)
            || r.bio_tail != tail
            || r.flags.contains(ReqFlags::NOMERGE)
            || r.started
            || r.dispatched
            || r.end_sector() != self.disk_sector(run)
        {
            return None;
        }
        let (ps, pseg) = run.piece_size();
        let lim = &self.cfg.limits;
        assert!(ps <= lim.max_hw_sectors, "bio too big for the device");
        let mut k = run
            .run
            .nr
            .min(lim.max_sectors.saturating_sub(r.sectors) / ps);
        if let Some(room) = lim
            .max_segments
            .saturating_sub(r.segments)
            .checked_div(pseg)
        {
            k = k.min(room);
        }
        // attempt_back_merge: stop before the bio that reaches the next request.
        if let Some(next) = self.elv.latter_request(&self.rqs, rq) {
            let gap = self.rqs.get(next).sector.saturating_sub(r.end_sector());
            if gap > 0 && gap % ps as u64 == 0 {
                k = k.min((gap / ps as u64 - 1).min(u32::MAX as u64) as u32);
            }
        }
        (k > 0).then_some(k)
    }

    /// Where the run's next bio starts on the whole disk, after
    /// `blk_partition_remap`; the run must lie inside its partition and the
    /// device, as `submit_bio` asserts for each bio.
    fn disk_sector(&self, run: &Bio) -> u64 {
        let start = self.partition_start(run);
        assert!(
            start + run.end_sector() <= self.dev.capacity_sectors(),
            "bio beyond end of device"
        );
        start + run.sector
    }

    /// `blk_partition_remap`'s offset for the bio's device, which it must lie in.
    pub(super) fn partition_start(&self, run: &Bio) -> u64 {
        if run.dev == self.cfg.disk {
            return 0;
        }
        let p = self
            .cfg
            .partitions
            .iter()
            .find(|p| p.dev == run.dev)
            .unwrap_or_else(|| panic!("bio for unknown device {:?}", run.dev));
        assert!(
            run.end_sector() <= p.nr_sects,
            "bio beyond end of partition {:?}",
            p.dev
        );
        p.start
    }

    /// The A, Q and M records of the run's next `k` bios, each as
    /// `submit_bio` and `bio_attempt_back_merge` trace it.
    fn trace_run(&self, now: Instant, run: &Bio, k: u32, tr: &mut Tracer) {
        let start = self.partition_start(run);
        let (ps, pseg) = run.piece_size();
        for i in 0..k {
            let mut b = *run;
            b.sector = run.sector + (i * ps) as u64;
            b.sectors = ps;
            b.segments = pseg;
            if run.dev != self.cfg.disk {
                let (from_dev, from_sector) = (b.dev, b.sector);
                b.sector += start;
                b.dev = self.cfg.disk;
                let pdu = Pdu::Remap {
                    from_dev,
                    from_sector,
                };
                self.trace_bio(now, &b, Action::Remap, pdu, tr);
            }
            self.trace_bio(now, &b, Action::Queue, Pdu::None, tr);
            self.trace_bio(now, &b, Action::BackMerge, Pdu::None, tr);
        }
    }
}
