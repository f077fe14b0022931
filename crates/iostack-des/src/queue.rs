//! The event queue: a binary heap ordered by (time, insertion sequence).
//!
//! Ties at the same instant are broken FIFO by a monotonically increasing sequence
//! number, so the order of events is total and independent of heap internals.

use crate::time::Instant;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// An event as it sits in the queue.
#[derive(Debug)]
pub struct Scheduled<E> {
    pub at: Instant,
    pub seq: u64,
    pub event: E,
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl<E> Eq for Scheduled<E> {}
impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Scheduled<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest (time, seq) pops first.
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// Total-order event queue with a virtual clock that never runs backwards.
pub struct EventQueue<E> {
    heap: BinaryHeap<Scheduled<E>>,
    now: Instant,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(256),
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
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Scheduled { at, seq, event });
    }

    /// Pop the next event and advance the clock to it.
    pub fn pop(&mut self) -> Option<Scheduled<E>> {
        let s = self.heap.pop()?;
        assert!(s.at >= self.now, "time ran backwards");
        self.now = s.at;
        Some(s)
    }

    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|s| s.at)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
