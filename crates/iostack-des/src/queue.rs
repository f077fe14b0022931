//! The event queue: a 4-ary min-heap ordered by (time, insertion sequence).
//!
//! Ties at the same instant are broken FIFO by a monotonically increasing sequence
//! number, so the order of events is total and independent of heap internals. The
//! key packs both into one `u128` so each comparison is a single integer compare;
//! a 4-ary heap halves the depth of a binary one for the small heaps a storage
//! simulation keeps (a few events per I/O in flight).

use crate::time::Instant;

/// An event as it leaves the queue.
#[derive(Debug)]
pub struct Scheduled<E> {
    pub at: Instant,
    pub seq: u64,
    pub event: E,
}

/// Total-order event queue with a virtual clock that never runs backwards.
///
/// Keys (`time << 64 | seq`) and events sit in parallel vectors forming one 4-ary
/// min-heap, so the comparisons scan only the keys; events are small `Copy`
/// values moved into a hole rather than swapped.
pub struct EventQueue<E: Copy> {
    keys: Vec<u128>,
    evs: Vec<E>,
    now: Instant,
    next_seq: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

const ARITY: usize = 4;

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            keys: Vec::with_capacity(256),
            evs: Vec::with_capacity(256),
            now: Instant::ZERO,
            next_seq: 0,
        }
    }

    /// Current virtual time: the time of the last event popped.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Schedule `event` at `at`. Scheduling in the past is an invariant violation.
    pub fn schedule(&mut self, at: Instant, event: E) {
        assert!(
            at >= self.now,
            "event scheduled in the past: {} < {}",
            at.0,
            self.now.0
        );
        let key = ((at.0 as u128) << 64) | self.next_seq as u128;
        self.next_seq += 1;
        self.keys.push(key);
        self.evs.push(event);
        // Sift the hole at the end up to where `key` belongs.
        let mut i = self.keys.len() - 1;
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.keys[parent] <= key {
                break;
            }
            self.keys[i] = self.keys[parent];
            self.evs[i] = self.evs[parent];
            i = parent;
        }
        self.keys[i] = key;
        self.evs[i] = event;
    }

    /// Pop the next event and advance the clock to it.
    pub fn pop(&mut self) -> Option<Scheduled<E>> {
        let top_key = *self.keys.first()?;
        let top_ev = self.evs[0];
        let key = self.keys.pop().expect("non-empty");
        let ev = self.evs.pop().expect("non-empty");
        let n = self.keys.len();
        if n > 0 {
            // Sift a hole from the root down, then drop the former last element in.
            let mut i = 0;
            loop {
                let first = i * ARITY + 1;
                if first >= n {
                    break;
                }
                let end = (first + ARITY).min(n);
                let mut best = first;
                let mut best_key = self.keys[first];
                for c in first + 1..end {
                    let k = self.keys[c];
                    if k < best_key {
                        best = c;
                        best_key = k;
                    }
                }
                if best_key >= key {
                    break;
                }
                self.keys[i] = best_key;
                self.evs[i] = self.evs[best];
                i = best;
            }
            self.keys[i] = key;
            self.evs[i] = ev;
        }
        let at = Instant((top_key >> 64) as u64);
        assert!(at >= self.now, "time ran backwards");
        self.now = at;
        Some(Scheduled {
            at,
            seq: top_key as u64,
            event: top_ev,
        })
    }

    pub fn peek_time(&self) -> Option<Instant> {
        self.keys.first().map(|k| Instant((k >> 64) as u64))
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Rng, Seed};
    use crate::time::Duration;

    #[test]
    fn ties_break_fifo_and_time_orders() {
        let mut q = EventQueue::new();
        q.schedule(Instant(10), 'c');
        q.schedule(Instant(5), 'a');
        q.schedule(Instant(10), 'd');
        q.schedule(Instant(5), 'b');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|s| s.event)).collect();
        assert_eq!(order, vec!['a', 'b', 'c', 'd']);
        assert_eq!(q.now(), Instant(10));
    }

    /// Against a sort by (time, sequence), with interleaved pushes and pops.
    #[test]
    fn order_matches_a_stable_sort() {
        let mut r = Rng::stream(Seed(9), "heap");
        let mut q = EventQueue::new();
        let mut model: Vec<(u64, u64)> = Vec::new();
        let mut seq = 0;
        let mut popped = Vec::new();
        let mut expect = Vec::new();
        for _ in 0..20_000 {
            if r.below(3) > 0 || model.is_empty() {
                let t = q.now().0 + r.below(50);
                q.schedule(Instant(t), seq);
                model.push((t, seq));
                seq += 1;
            } else {
                let s = q.pop().unwrap();
                popped.push((s.at.0, s.event));
                model.sort();
                expect.push(model.remove(0));
            }
        }
        assert_eq!(popped, expect);
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn refuses_past_events() {
        let mut q = EventQueue::new();
        q.schedule(Instant(10), ());
        q.pop();
        q.schedule(Instant(10) + Duration(0), ());
        q.schedule(Instant(9), ());
    }
}
