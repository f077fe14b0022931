//! A page-index bitmap: the radix tree's tags (`PAGECACHE_TAG_DIRTY`,
//! `PAGECACHE_TAG_WRITEBACK`) and page flags (`PG_uptodate`, `PG_locked`,
//! `PG_readahead`) as one bit per page, with the gang lookups the kernel does
//! (`radix_tree_gang_lookup_tag`, `radix_tree_next_hole`) as word scans.

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageBits {
    words: Vec<u64>,
    ones: u64,
}

impl PageBits {
    pub fn new() -> Self {
        Self::default()
    }

    fn grow(&mut self, index: u64) {
        let w = (index / 64) as usize + 1;
        if self.words.len() < w {
            self.words.resize(w.next_power_of_two().max(16), 0);
        }
    }

    /// Pages set.
    pub fn count(&self) -> u64 {
        self.ones
    }

    pub fn get(&self, index: u64) -> bool {
        let w = (index / 64) as usize;
        w < self.words.len() && self.words[w] >> (index % 64) & 1 == 1
    }

    /// Set one bit; returns whether it was clear.
    pub fn set(&mut self, index: u64) -> bool {
        self.grow(index);
        let w = &mut self.words[(index / 64) as usize];
        let m = 1u64 << (index % 64);
        let was = *w & m == 0;
        *w |= m;
        self.ones += was as u64;
        was
    }

    /// Clear one bit; returns whether it was set.
    pub fn clear(&mut self, index: u64) -> bool {
        let wi = (index / 64) as usize;
        if wi >= self.words.len() {
            return false;
        }
        let w = &mut self.words[wi];
        let m = 1u64 << (index % 64);
        let was = *w & m != 0;
        *w &= !m;
        self.ones -= was as u64;
        was
    }

    /// Set `[start, start + n)`; returns how many were clear.
    pub fn set_range(&mut self, start: u64, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        self.grow(start + n - 1);
        let mut added = 0;
        for (w, mask) in word_masks(start, n, self.words.len()) {
            added += (mask & !self.words[w]).count_ones() as u64;
            self.words[w] |= mask;
        }
        self.ones += added;
        added
    }

    /// Clear `[start, start + n)`; returns how many were set.
    pub fn clear_range(&mut self, start: u64, n: u64) -> u64 {
        let mut removed = 0;
        for (w, mask) in word_masks(start, n, self.words.len()) {
            removed += (mask & self.words[w]).count_ones() as u64;
            self.words[w] &= !mask;
        }
        self.ones -= removed;
        removed
    }

    /// Bits set in `[start, start + n)`.
    pub fn count_range(&self, start: u64, n: u64) -> u64 {
        word_masks(start, n, self.words.len())
            .map(|(w, mask)| (mask & self.words[w]).count_ones() as u64)
            .sum()
    }

    /// First set bit in `[from, limit)`.
    pub fn next_set(&self, from: u64, limit: u64) -> Option<u64> {
        let end = limit.min(self.words.len() as u64 * 64);
        if from >= end {
            return None;
        }
        let mut w = (from / 64) as usize;
        let mut bits = self.words[w] & (!0u64 << (from % 64));
        loop {
            if bits != 0 {
                let i = w as u64 * 64 + bits.trailing_zeros() as u64;
                return (i < end).then_some(i);
            }
            w += 1;
            if w as u64 * 64 >= end {
                return None;
            }
            bits = self.words[w];
        }
    }

    /// First clear bit in `[from, limit)` (`radix_tree_next_hole`).
    pub fn next_clear(&self, from: u64, limit: u64) -> Option<u64> {
        let mut i = from;
        while i < limit {
            let w = (i / 64) as usize;
            if w >= self.words.len() {
                return Some(i);
            }
            let bits = !self.words[w] & (!0u64 << (i % 64));
            if bits != 0 {
                let j = w as u64 * 64 + bits.trailing_zeros() as u64;
                return (j < limit).then_some(j);
            }
            i = (w as u64 + 1) * 64;
        }
        None
    }

    /// End of the run of set bits starting at `from` (exclusive), at most `limit`.
    pub fn run_end(&self, from: u64, limit: u64) -> u64 {
        self.next_clear(from, limit).unwrap_or(limit)
    }
}

/// The words covering `[start, start + n)` within the first `len` words, each with
/// the mask of the range's bits in it.
fn word_masks(start: u64, n: u64, len: usize) -> impl Iterator<Item = (usize, u64)> {
    let end = start.saturating_add(n).min(len as u64 * 64);
    let mut i = start;
    std::iter::from_fn(move || {
        if i >= end {
            return None;
        }
        let w = (i / 64) as usize;
        let lo = i % 64;
        let hi = (end - (i - lo)).min(64);
        i += hi - lo;
        Some((w, mask_bits(lo, hi)))
    })
}

fn mask_bits(lo: u64, hi: u64) -> u64 {
    let upper = if hi >= 64 { !0u64 } else { (1u64 << hi) - 1 };
    upper & (!0u64 << lo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iostack_des::Rng;

    #[test]
    fn ranges_agree_with_single_bits() {
        let mut rng = Rng::stream(iostack_des::Seed(7), "bitmap");
        let mut b = PageBits::new();
        let mut model = vec![false; 5000];
        for _ in 0..3000 {
            let s = rng.below(4900);
            let n = rng.below(100);
            match rng.below(3) {
                0 => {
                    let added = b.set_range(s, n);
                    let want = (s..s + n).filter(|&i| !model[i as usize]).count() as u64;
                    assert_eq!(added, want);
                    (s..s + n).for_each(|i| model[i as usize] = true);
                }
                1 => {
                    let removed = b.clear_range(s, n);
                    let want = (s..s + n).filter(|&i| model[i as usize]).count() as u64;
                    assert_eq!(removed, want);
                    (s..s + n).for_each(|i| model[i as usize] = false);
                }
                _ => {
                    let want = (s..4900).find(|&i| model[i as usize]);
                    assert_eq!(b.next_set(s, 4900), want);
                    let want = (s..4900).find(|&i| !model[i as usize]);
                    assert_eq!(b.next_clear(s, 4900), want);
                    let want = (s..s + n).filter(|&i| model[i as usize]).count() as u64;
                    assert_eq!(b.count_range(s, n), want);
                }
            }
            assert_eq!(b.count(), model.iter().filter(|&&x| x).count() as u64);
        }
    }
}
