//! An independent invariant checker over the event stream, separate from the code
//! it checks: time never runs backwards; every queued bio is merged into a request
//! or gets one of its own exactly once; every issued request completes exactly
//! once; the bytes queued are the bytes completed. A split (X) makes one queued
//! bio two. Violations panic: an invariant
//! failure is a bug in the simulator, never a property of the workload.
//!
//! Flush sequences (`iostack-block`'s `flush.rs`, every era) add requests the
//! block layer makes itself: pre/post-flush proxies, the barrier era's data proxy
//! and 2.6.39's shared flush request are issued and completed (D, C) with no Q or
//! G, and the request that was sequenced then completes (C) without having been
//! issued as itself (2.6.28-2.6.38: with its own position and size; 2.6.39+: a
//! second C with no bytes after its data's). Such a sequence end is accepted only
//! in the same instant as a completion of an issued request (the step that ended
//! the sequence, `blk_ordered_complete_seq`/`flush_end_io`), at most once per
//! request allocated from a bio (G), and its bytes are not counted again.

use iostack_core::{Action, TraceEvent, TraceSink};
use iostack_des::Instant;
use std::collections::BTreeMap;

#[derive(Default)]
pub struct Checker {
    last: Instant,
    queued: u64,
    placed: u64,
    bytes_queued: u64,
    bytes_completed: u64,
    /// Issued and not completed, by (sector, bytes).
    issued: BTreeMap<(u64, u32), u32>,
    completed: u64,
    /// Requests allocated from bios (G), and flush-sequence ends seen (a C of a
    /// request never issued as itself).
    allocated: u64,
    seq_ends: u64,
    /// Time of the last completion of an issued request.
    last_issued_c: Option<Instant>,
    /// Whether the run is expected to end with nothing in flight.
    expect_drained: bool,
}

impl Checker {
    pub fn new(expect_drained: bool) -> Self {
        Checker {
            expect_drained,
            ..Checker::default()
        }
    }
}

impl Checker {
    /// A completion of a request never issued as itself: the end of a flush
    /// sequence (see the module doc), or a bug.
    #[cold]
    fn sequence_end(&mut self, time: Instant, k: (u64, u32)) {
        assert!(
            self.last_issued_c == Some(time) && self.seq_ends < self.allocated,
            "completion of a request never issued: {k:?}"
        );
        self.seq_ends += 1;
    }
}

impl TraceSink for Checker {
    fn event(&mut self, ev: &TraceEvent) {
        let TraceEvent::Block(r) = ev else { return };
        assert!(r.time >= self.last, "trace time ran backwards");
        self.last = r.time;
        match r.action {
            Action::Queue => {
                self.queued += 1;
                self.bytes_queued += r.bytes as u64;
            }
            // blk-mq's __bio_split_to_limits: the queued bio is two from
            // here (the bytes are the same), each placed once.
            Action::Split => self.queued += 1,
            Action::BackMerge | Action::FrontMerge | Action::GetRq => {
                self.allocated += (r.action == Action::GetRq) as u64;
                self.placed += 1;
                assert!(self.placed <= self.queued, "a bio was placed twice");
            }
            Action::Issue => {
                *self.issued.entry((r.sector, r.bytes)).or_default() += 1;
            }
            Action::Complete => {
                let k = (r.sector, r.bytes);
                let Some(n) = self.issued.get_mut(&k) else {
                    self.sequence_end(r.time, k);
                    return;
                };
                *n -= 1;
                if *n == 0 {
                    self.issued.remove(&k);
                }
                self.last_issued_c = Some(r.time);
                self.completed += 1;
                self.bytes_completed += r.bytes as u64;
            }
            _ => {}
        }
    }

    fn finish(&mut self, _end: Instant) {
        if self.expect_drained {
            assert_eq!(
                self.placed, self.queued,
                "queued bios never placed in a request"
            );
            assert!(
                self.issued.is_empty(),
                "requests issued but never completed"
            );
            assert_eq!(
                self.bytes_queued, self.bytes_completed,
                "bytes queued and completed differ"
            );
        }
        assert!(self.bytes_completed <= self.bytes_queued);
    }
}
