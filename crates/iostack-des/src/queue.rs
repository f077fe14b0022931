//! The event queue: events ordered by (time, insertion sequence).
//!
//! Ties at the same instant are broken FIFO by a monotonically increasing sequence
//! number, so the order of events is total and independent of the queue's
//! internals. The key packs both into one `u128` so each comparison is a single
//! integer compare.
//!
//! A storage simulation schedules most events in runs whose times do not
//! decrease: a fixed-latency device completes in submission order, a task's next
//! step and a wake-up come a constant delay after now. The queue keeps
//! [`LANES`] such runs as sorted FIFO lanes (a new key goes to the lane whose
//! last key is the greatest one below it, as in patience sorting), and anything
//! that fits no lane in a 4-ary min-heap. The next event is the least of the
//! lanes' heads and the heap's top, so the order is exactly a single heap's;
//! only the cost differs (a few compares instead of a sift through the heap).

use crate::time::Instant;

/// An event as it leaves the queue.
#[derive(Debug)]
pub struct Scheduled<E> {
    pub at: Instant,
    pub seq: u64,
    pub event: E,
}

/// How many sorted runs the queue keeps beside its heap.
pub const LANES: usize = 3;

/// A head key meaning "empty lane" (no event has it: its sequence number
/// would be `u64::MAX`).
const EMPTY_HEAD: u128 = u128::MAX;

/// One sorted run: keys ascending from `head` to the end.
struct Lane<E> {
    keys: Vec<u128>,
    evs: Vec<E>,
    head: usize,
}

/// Total-order event queue with a virtual clock that never runs backwards.
///
/// Heap keys (`time << 64 | seq`) and events sit in parallel vectors forming one
/// 4-ary min-heap, so the comparisons scan only the keys; events are small
/// `Copy` values moved into a hole rather than swapped.
pub struct EventQueue<E: Copy> {
    keys: Vec<u128>,
    evs: Vec<E>,
    lanes: [Lane<E>; LANES],
    /// Each lane's first key (`EMPTY_HEAD` when empty), and the time of its
    /// last key (0 when empty, so that an empty lane takes any key, after
    /// every non-empty one that can). A new key's sequence number is above
    /// every key queued, so it goes after a lane's last key exactly when its
    /// time is not earlier.
    heads: [u128; LANES],
    tails: [u64; LANES],
    len: usize,
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
            lanes: std::array::from_fn(|_| Lane {
                keys: Vec::new(),
                evs: Vec::new(),
                head: 0,
            }),
            heads: [EMPTY_HEAD; LANES],
            tails: [0; LANES],
            len: 0,
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
        self.len += 1;
        // Best fit: the lane whose last key is the greatest below `key`.
        let mut best = LANES;
        let mut best_tail = 0;
        for (i, &t) in self.tails.iter().enumerate() {
            if t <= at.0 && t >= best_tail {
                best = i;
                best_tail = t;
            }
        }
        if best == LANES {
            self.heap_push(key, event);
            return;
        }
        let l = &mut self.lanes[best];
        l.keys.push(key);
        l.evs.push(event);
        self.tails[best] = at.0;
        if self.heads[best] == EMPTY_HEAD {
            self.heads[best] = key;
        }
    }

    fn heap_push(&mut self, key: u128, event: E) {
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

    /// The least key, and the lane it heads (`LANES`: the heap's top).
    fn top(&self) -> (u128, usize) {
        let mut best = (self.keys.first().copied().unwrap_or(EMPTY_HEAD), LANES);
        for (i, &h) in self.heads.iter().enumerate() {
            if h < best.0 {
                best = (h, i);
            }
        }
        best
    }

    /// Pop the next event and advance the clock to it.
    pub fn pop(&mut self) -> Option<Scheduled<E>> {
        let (key, lane) = self.top();
        if key == EMPTY_HEAD {
            return None;
        }
        let ev = if lane == LANES {
            self.heap_pop()
        } else {
            self.lane_pop(lane)
        };
        self.len -= 1;
        let at = Instant((key >> 64) as u64);
        assert!(at >= self.now, "time ran backwards");
        self.now = at;
        Some(Scheduled {
            at,
            seq: key as u64,
            event: ev,
        })
    }

    /// Take lane `i`'s first event (the lane is not empty).
    fn lane_pop(&mut self, i: usize) -> E {
        let l = &mut self.lanes[i];
        let ev = l.evs[l.head];
        l.head += 1;
        if l.head == l.keys.len() {
            l.keys.clear();
            l.evs.clear();
            l.head = 0;
            self.heads[i] = EMPTY_HEAD;
            self.tails[i] = 0;
        } else {
            if l.head >= 1024 && l.head * 2 >= l.keys.len() {
                // A lane that never empties drops what it popped.
                l.keys.drain(..l.head);
                l.evs.drain(..l.head);
                l.head = 0;
            }
            self.heads[i] = l.keys[l.head];
        }
        ev
    }

    /// Remove the heap's top event (the heap is not empty).
    fn heap_pop(&mut self) -> E {
        let top = self.evs[0];
        let key = self.keys.pop().expect("non-empty");
        let ev = self.evs.pop().expect("non-empty");
        let n = self.keys.len();
        if n == 0 {
            return top;
        }
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
        top
    }

    pub fn peek_time(&self) -> Option<Instant> {
        let (k, _) = self.top();
        (k != EMPTY_HEAD).then_some(Instant((k >> 64) as u64))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
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

    /// Monotone runs (lanes) mixed with random times (the heap), more runs
    /// than lanes, against a sort by (time, sequence).
    #[test]
    fn lanes_and_heap_keep_the_total_order() {
        let mut r = Rng::stream(Seed(3), "lanes");
        let mut q = EventQueue::new();
        let mut model: Vec<(u64, u64)> = Vec::new();
        let (mut seq, mut popped, mut expect) = (0, Vec::new(), Vec::new());
        for _ in 0..30_000 {
            if r.below(5) > 1 || model.is_empty() {
                // Ten streams of constant delay, and one of random delay.
                let kind = r.below(11);
                let delay = if kind == 10 { r.below(400) } else { 10 * kind };
                let t = q.now().0 + delay;
                q.schedule(Instant(t), seq);
                model.push((t, seq));
                seq += 1;
            } else {
                assert_eq!(q.peek_time().map(|t| t.0), model.iter().min().map(|m| m.0));
                let s = q.pop().unwrap();
                popped.push((s.at.0, s.event));
                model.sort();
                expect.push(model.remove(0));
            }
            assert_eq!(q.len(), model.len());
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
