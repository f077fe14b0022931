//! Tags: `struct sbitmap_queue` as blk-mq uses it for driver and scheduler tags
//! (`lib/sbitmap.c`, `block/blk-mq-tag.c`). A request *is* its tag; an allocator
//! that finds none sleeps on the queue's wait list (`blk_mq_get_tag` →
//! `io_schedule`), and frees wake sleepers in batches of `wake_batch`
//! (`sbitmap_queue_wake_up`), not one per free.

/// `SBQ_WAIT_QUEUES` and `SBQ_WAKE_BATCH` (`include/linux/sbitmap.h`).
const SBQ_WAIT_QUEUES: u32 = 8;
const SBQ_WAKE_BATCH: u32 = 8;

pub struct Tags {
    depth: u32,
    /// The bitmap (`sbitmap` words; a set bit is an allocated tag).
    words: Vec<u64>,
    used: u32,
    /// `sb->alloc_hint`: per CPU, where the next search starts.
    hints: Vec<u32>,
    /// `sbq->wake_batch` (`sbq_calc_wake_batch`).
    wake_batch: u32,
    /// `sbq->completion_cnt` / `sbq->wakeup_cnt`.
    completion_cnt: u64,
    wakeup_cnt: u64,
    /// Sleepers (`sbq->ws[]`), kept as one FIFO: exclusive waiters are woken
    /// in the order they queued.
    waiters: std::collections::VecDeque<u32>,
}

impl Tags {
    /// `sbitmap_queue_init_node` of `depth` tags for `nr_cpus` CPUs.
    pub fn new(depth: u32, nr_cpus: u32) -> Tags {
        assert!(depth >= 1, "a tag set has at least one tag");
        Tags {
            depth,
            words: vec![0; depth.div_ceil(64) as usize],
            used: 0,
            hints: vec![0; nr_cpus.max(1) as usize],
            // sbq_calc_wake_batch: clamp(depth / SBQ_WAIT_QUEUES, 1, SBQ_WAKE_BATCH).
            wake_batch: (depth / SBQ_WAIT_QUEUES).clamp(1, SBQ_WAKE_BATCH),
            completion_cnt: 0,
            wakeup_cnt: 0,
            waiters: std::collections::VecDeque::new(),
        }
    }

    pub fn depth(&self) -> u32 {
        self.depth
    }
    pub fn used(&self) -> u32 {
        self.used
    }
    pub fn sleepers(&self) -> usize {
        self.waiters.len()
    }

    /// The CPU's hint slot (a CPU number beyond the possible CPUs wraps).
    #[inline(always)]
    fn hint_of(&self, cpu: u32) -> usize {
        let n = self.hints.len();
        if (cpu as usize) < n {
            cpu as usize
        } else {
            cpu as usize % n
        }
    }

    /// The first clear bit in `from..to`, a word at a time.
    #[inline]
    fn find_zero(&self, from: u32, to: u32) -> Option<u32> {
        let mut t = from;
        while t < to {
            let w = self.words[(t / 64) as usize] | ((1u64 << (t % 64)) - 1);
            if w != u64::MAX {
                let bit = (t / 64) * 64 + w.trailing_ones();
                return (bit < to).then_some(bit);
            }
            t = (t / 64 + 1) * 64;
        }
        None
    }

    #[inline]
    fn test(&self, t: u32) -> bool {
        self.words[(t / 64) as usize] & (1 << (t % 64)) != 0
    }

    /// `__sbitmap_queue_get` / `sbitmap_get_shallow`: the first clear bit at or
    /// after the CPU's hint, wrapping; `shallow` caps the tags this caller may
    /// hold in all (`data->shallow_depth`, set by an elevator's `limit_depth`).
    #[inline(always)]
    pub fn get(&mut self, cpu: u32, shallow: u32) -> Option<u32> {
        if self.used >= self.depth.min(shallow) {
            return None;
        }
        let h = self.hint_of(cpu);
        // Every hint is a tag or 0, below the depth.
        let start = self.hints[h];
        // The hint's own bit clear is what the search would find first.
        let t = if !self.test(start) {
            start
        } else {
            self.find_zero(start, self.depth)
                .or_else(|| self.find_zero(0, start))
                .expect("a clear bit below depth when used < depth")
        };
        self.words[(t / 64) as usize] |= 1 << (t % 64);
        self.used += 1;
        // update_alloc_hint_after_get: a hit on the hint moves it past the tag.
        if t == start {
            self.hints[h] = if t + 1 >= self.depth { 0 } else { t + 1 };
        }
        Some(t)
    }

    /// `sbitmap_queue_clear`: free `tag`, set the CPU's hint to it
    /// (`sbitmap_update_cpu_hint`), and return how many sleepers to wake
    /// (`sbitmap_queue_wake_up(sbq, 1)`: once `wake_batch` frees have
    /// accumulated while someone waits, `wake_batch` of them).
    #[inline]
    pub fn put(&mut self, tag: u32, cpu: u32) -> usize {
        assert!(self.test(tag), "tag {tag} freed twice");
        self.words[(tag / 64) as usize] &= !(1 << (tag % 64));
        self.used -= 1;
        let h = self.hint_of(cpu);
        self.hints[h] = tag;
        if self.waiters.is_empty() {
            return 0; // !ws_active
        }
        self.completion_cnt += 1;
        if self.completion_cnt - self.wakeup_cnt < self.wake_batch as u64 {
            return 0;
        }
        self.wakeup_cnt += self.wake_batch as u64;
        (self.wake_batch as usize).min(self.waiters.len())
    }

    /// `bt_prepare_to_wait` (exclusive): `who` sleeps for a tag.
    pub fn wait(&mut self, who: u32) {
        self.waiters.push_back(who);
    }

    /// The next sleeper `put` asked to wake.
    pub fn wake_one(&mut self) -> Option<u32> {
        self.waiters.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_exhaust_and_sleepers_wake_in_batches() {
        let mut t = Tags::new(32, 2);
        let got: Vec<u32> = (0..32).map(|_| t.get(0, u32::MAX).unwrap()).collect();
        assert_eq!(got, (0..32).collect::<Vec<_>>());
        assert_eq!(t.get(1, u32::MAX), None);
        for w in 0..5 {
            t.wait(w);
        }
        // wake_batch = 32 / 8 = 4: three frees wake nobody, the fourth four.
        assert_eq!(t.put(3, 0), 0);
        assert_eq!(t.put(4, 0), 0);
        assert_eq!(t.put(5, 0), 0);
        assert_eq!(t.put(6, 0), 4);
        assert_eq!(t.wake_one(), Some(0));
        // The CPU's hint is the last tag it freed.
        assert_eq!(t.get(0, u32::MAX), Some(6));
    }

    /// `get` against `__sbitmap_get_word`'s definition: the first clear bit
    /// at or after the CPU's hint, wrapping; the hint moves past a tag taken
    /// at the hint and to a freed tag. Random gets and puts on two CPUs,
    /// across word boundaries.
    #[test]
    fn get_is_the_first_clear_bit_from_the_hint() {
        let depth = 130;
        let mut t = Tags::new(depth, 2);
        let mut used = vec![false; depth as usize];
        let mut hints = [0u32; 2];
        let mut held: Vec<u32> = Vec::new();
        let mut x = 12345u64;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let cpu = ((x >> 33) % 2) as u32;
            if (x >> 40) % 3 != 0 && held.len() < depth as usize {
                let h = hints[cpu as usize];
                let want = (h..depth).chain(0..h).find(|&b| !used[b as usize]).unwrap();
                assert_eq!(t.get(cpu, u32::MAX), Some(want));
                used[want as usize] = true;
                if want == h {
                    hints[cpu as usize] = if want + 1 >= depth { 0 } else { want + 1 };
                }
                held.push(want);
            } else if !held.is_empty() {
                let tag = held.swap_remove(((x >> 20) % held.len() as u64) as usize);
                t.put(tag, cpu);
                used[tag as usize] = false;
                hints[cpu as usize] = tag;
            }
        }
    }

    #[test]
    fn shallow_depth_limits_a_caller() {
        let mut t = Tags::new(8, 1);
        assert!(t.get(0, 2).is_some() && t.get(0, 2).is_some());
        assert_eq!(t.get(0, 2), None);
        assert!(t.get(0, u32::MAX).is_some());
    }
}
