//! Bio splitting at the queue limits (6.x `block/blk-merge.c`):
//! `blk_mq_submit_bio` → `__bio_split_to_limits` → `bio_split_rw` →
//! `bio_split_rw_at` / `bio_submit_split`, and `bio_chain`'s completion.
//!
//! The front part is a new bio (`bio_split`, marked `REQ_NOMERGE`) chained to
//! the original, which becomes the remainder and is resubmitted
//! (`submit_bio_noacct` → the head of `current->bio_list`): it is not traced
//! Q again (`BIO_TRACE_COMPLETION` is set) and goes through
//! `blk_mq_submit_bio` once the front part has its request, being split again
//! if it still exceeds the limits. The original's `bi_end_io` runs once every
//! part has completed (`bio_chain_endio` → `__bio_chain_endio`).
//!
//! Segments: a bio's bvecs are taken as equal, whole pieces (the bio builders
//! above give whole user or cache pages), each one segment
//! (`max_segment_size` is at least a page and there is no virtual boundary in
//! the devices modelled).

use super::MqQueue;
use crate::bio::BioId;
use crate::queue::CompletedBio;
use iostack_core::{Action, Pdu, ReqFlags, Tracer};
use iostack_des::Instant;

/// One original bio and the parts split from it (`__bi_remaining`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Chain {
    /// The original bio (the remainder after each split).
    parent: BioId,
    /// Parts not completed yet, the parent included.
    left: u32,
    /// The original's sector and size, reported at its completion.
    sector: u64,
    bytes: u64,
    /// The parent's own completion, held until the parts are done.
    done: Option<CompletedBio>,
}

impl MqQueue {
    /// `bio_split_rw_at`: the sectors and segments of the front part if the
    /// bio exceeds `max_segments` or `get_max_io_size` (`max_sectors`
    /// aligned down to the logical block size), else `None`.
    #[inline]
    pub(super) fn split_point(&self, id: BioId) -> Option<(u32, u32)> {
        let b = self.bio(id);
        let lim = &self.cfg.limits;
        if b.sectors <= lim.max_sectors && b.segments <= lim.max_segments {
            return None;
        }
        if b.segments == 0 {
            return None;
        }
        let lbs = (lim.logical_block_size / 512).max(1);
        let max_io = lim.max_sectors / lbs * lbs;
        let per_seg = b.sectors.div_ceil(b.segments);
        // bvecs are added whole while nsegs < max_segments and the bytes fit;
        // bvec_split_segs takes what fits of the next one (aligned down).
        let by_segs = lim.max_segments.saturating_mul(per_seg);
        let front = by_segs.min(max_io).min(b.sectors);
        assert!(front > 0 && front < b.sectors, "split of {front} sectors");
        Some((front, front.div_ceil(per_seg)))
    }

    /// `__bio_split_to_limits`: split off and return the front part
    /// (`bio_split`, X) and leave the remainder as `id`; `None` if the bio is
    /// within the limits.
    pub(super) fn split_to_limits(
        &mut self,
        now: Instant,
        id: BioId,
        tr: &mut Tracer,
    ) -> Option<BioId> {
        let (sectors, segments) = self.split_point(id)?;
        let parent = *self.bio(id);
        let mut front = parent;
        front.sectors = sectors;
        front.segments = segments;
        front.flags = front.flags | ReqFlags::NOMERGE;
        front.next = None;
        // trace_block_split(split, bio->bi_iter.bi_sector) after bio_split
        // advanced the original.
        let at = parent.sector + sectors as u64;
        self.trace_bio(now, &front, Action::Split, Pdu::Split { at }, tr);
        let fid = self.bios.alloc(front);
        self.stats.bios_queued += 1;
        let p = self.bios.get_mut(id);
        p.sector = at;
        p.sectors -= sectors;
        p.segments -= segments;
        // bio_chain: the parent's __bi_remaining counts the part.
        let c = match self.chain_of.get(&id.0) {
            Some(&c) => c,
            None => {
                let c = self.chains.alloc(Chain {
                    parent: id,
                    left: 1,
                    sector: parent.sector,
                    bytes: parent.bytes(),
                    done: None,
                });
                self.chain_of.insert(id.0, c);
                c
            }
        };
        self.chains.get_mut(c).left += 1;
        self.chain_of.insert(fid.0, c);
        Some(fid)
    }

    /// `bio_endio` of a bio that may belong to a chain: a part's completion
    /// counts down the original's (`bio_chain_endio`), and the original's
    /// completion goes up once all parts are done.
    #[inline(always)]
    pub(super) fn end_bio(&mut self, id: BioId, c: CompletedBio, out: &mut Vec<CompletedBio>) {
        if self.chain_of.is_empty() {
            out.push(c);
            return;
        }
        self.end_chained_bio(id, c, out);
    }

    /// `bio_endio` of a bio that may be a part of a split one.
    fn end_chained_bio(&mut self, id: BioId, c: CompletedBio, out: &mut Vec<CompletedBio>) {
        let Some(ch) = self.chain_of.remove(&id.0) else {
            out.push(c);
            return;
        };
        let chain = self.chains.get_mut(ch);
        chain.left -= 1;
        if chain.parent == id {
            chain.done = Some(CompletedBio {
                sector: chain.sector,
                bytes: chain.bytes,
                ..c
            });
        }
        if chain.left == 0 {
            let chain = self.chains.free(ch);
            out.push(chain.done.expect("the original completes last or before"));
        }
    }
}
