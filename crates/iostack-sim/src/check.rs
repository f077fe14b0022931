//! An independent invariant checker over the event stream, separate from the code
//! it checks: time never runs backwards; every queued bio is merged into a request
//! or gets one of its own exactly once; every issued request completes exactly
//! once; the bytes queued are the bytes completed. Violations panic: an invariant
//! failure is a bug in the simulator, never a property of the workload.

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
            Action::BackMerge | Action::FrontMerge | Action::GetRq => {
                self.placed += 1;
                assert!(self.placed <= self.queued, "a bio was placed twice");
            }
            Action::Issue => {
                *self.issued.entry((r.sector, r.bytes)).or_default() += 1;
            }
            Action::Complete => {
                let k = (r.sector, r.bytes);
                let n = self
                    .issued
                    .get_mut(&k)
                    .unwrap_or_else(|| panic!("completion of a request never issued: {k:?}"));
                *n -= 1;
                if *n == 0 {
                    self.issued.remove(&k);
                }
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
