//! A page-index bitmap: the radix tree's tags (`PAGECACHE_TAG_DIRTY`,
//! `PAGECACHE_TAG_WRITEBACK`) and page flags (`PG_uptodate`, `PG_locked`,
//! `PG_readahead`) as one bit per page, with the gang lookups the kernel does
//! (`radix_tree_gang_lookup_tag`, `radix_tree_next_hole`).
//!
//! Like the kernel's radix tree (and its successor, the xarray with its marks),
//! the structure is sized by the pages it holds, not by the highest index, and
//! every level summarises the one below so that a lookup skips what is empty:
//!
//! * level 0: 64-bit words, one bit per page;
//! * level 1: a leaf of 64 words (4096 pages) keeps two summary words, bit `w`
//!   of `any` set when word `w` has a bit set (the radix-tree node's tag bit)
//!   and bit `w` of `full` set when word `w` is all ones (for the next hole);
//! * level 2: an ordered map from leaf number to leaf, holding only the leaves
//!   with a bit set (an empty leaf is freed, as `radix_tree_delete` frees nodes
//!   and `radix_tree_tag_clear` clears the tag up the tree).
//!
//! "Next set bit from here" is then one masked word, one summary word, and one
//! ordered-map step, however far the next set bit is.

use std::cell::Cell;
use std::collections::BTreeMap;

/// Bits per leaf (`RADIX_TREE_MAP_SIZE` squared, with 64-slot nodes).
const LEAF_BITS: u64 = 4096;
const WORDS: usize = (LEAF_BITS / 64) as usize;

#[derive(Clone, Debug)]
struct Leaf {
    words: [u64; WORDS],
    /// Bit `w`: `words[w] != 0`.
    any: u64,
    /// Bit `w`: `words[w] == !0`.
    full: u64,
    ones: u32,
}

impl Leaf {
    fn new() -> Leaf {
        Leaf {
            words: [0; WORDS],
            any: 0,
            full: 0,
            ones: 0,
        }
    }

    #[inline]
    fn get(&self, b: u64) -> bool {
        self.words[(b / 64) as usize] >> (b % 64) & 1 == 1
    }

    /// Recompute word `w`'s summary bits after it changed.
    #[inline]
    fn sum(&mut self, w: usize) {
        let m = 1u64 << w;
        let x = self.words[w];
        self.any = if x != 0 { self.any | m } else { self.any & !m };
        self.full = if x == !0 {
            self.full | m
        } else {
            self.full & !m
        };
    }

    /// Set the bits of `[lo, hi)`; returns how many were clear.
    fn set_range(&mut self, lo: u64, hi: u64) -> u64 {
        let mut added = 0;
        for (w, mask) in word_masks(lo, hi) {
            added += (mask & !self.words[w]).count_ones();
            self.words[w] |= mask;
            self.sum(w);
        }
        self.ones += added;
        added as u64
    }

    /// Clear the bits of `[lo, hi)`; returns how many were set.
    fn clear_range(&mut self, lo: u64, hi: u64) -> u64 {
        let mut removed = 0;
        for (w, mask) in word_masks(lo, hi) {
            removed += (mask & self.words[w]).count_ones();
            self.words[w] &= !mask;
            self.sum(w);
        }
        self.ones -= removed;
        removed as u64
    }

    fn count_range(&self, lo: u64, hi: u64) -> u64 {
        if lo == 0 && hi == LEAF_BITS {
            return self.ones as u64;
        }
        word_masks(lo, hi)
            .map(|(w, mask)| (mask & self.words[w]).count_ones() as u64)
            .sum()
    }

    /// First bit at or after `b` that is set (`ones == true`) or clear, using
    /// the word summary (`any` or `full`) to skip words.
    fn next(&self, b: u64, ones: bool) -> Option<u64> {
        let w = (b / 64) as usize;
        let word = |i: usize| if ones { self.words[i] } else { !self.words[i] };
        let bits = word(w) & (!0u64 << (b % 64));
        if bits != 0 {
            return Some(w as u64 * 64 + bits.trailing_zeros() as u64);
        }
        // Words after w that hold a bit of the kind sought.
        let summary = if ones { self.any } else { !self.full };
        let rest = if w + 1 >= WORDS {
            0
        } else {
            summary & (!0u64 << (w + 1))
        };
        if rest == 0 {
            return None;
        }
        let w2 = rest.trailing_zeros() as usize;
        Some(w2 as u64 * 64 + word(w2).trailing_zeros() as u64)
    }
}

/// The words covering bits `[lo, hi)` of one leaf, each with the mask of the
/// range's bits in it.
fn word_masks(lo: u64, hi: u64) -> impl Iterator<Item = (usize, u64)> {
    let mut i = lo;
    std::iter::from_fn(move || {
        if i >= hi {
            return None;
        }
        let w = (i / 64) as usize;
        let a = i % 64;
        let b = (hi - (i - a)).min(64);
        i += b - a;
        Some((w, mask_bits(a, b)))
    })
}

/// The word and mask of `[start, start + n)` if it is non-empty, inside one
/// word, and does not overflow (the range ops saturate at `u64::MAX`).
#[inline]
fn one_word(start: u64, n: u64) -> Option<(u64, u64)> {
    let last = start.checked_add(n)?.checked_sub(1).filter(|_| n > 0)?;
    (start / 64 == last / 64).then(|| (start / 64, mask_bits(start % 64, last % 64 + 1)))
}

fn mask_bits(lo: u64, hi: u64) -> u64 {
    let upper = if hi >= 64 { !0u64 } else { (1u64 << hi) - 1 };
    upper & (!0u64 << lo)
}

/// The leaves met by `[start, end)`, each with its bit range `[lo, hi)`.
fn leaf_spans(start: u64, end: u64) -> impl Iterator<Item = (u64, u64, u64)> {
    let mut i = start;
    std::iter::from_fn(move || {
        if i >= end {
            return None;
        }
        let c = i / LEAF_BITS;
        let lo = i % LEAF_BITS;
        let hi = (end - c * LEAF_BITS).min(LEAF_BITS);
        i = c * LEAF_BITS + hi;
        Some((c, lo, hi))
    })
}

#[derive(Clone, Debug, Default)]
pub struct PageBits {
    /// Leaf number (`index / LEAF_BITS`) to slot, for the leaves with a bit set.
    index: BTreeMap<u64, u32>,
    /// The leaves; a freed slot is reused before the vector grows, so it holds
    /// at most as many leaves as were ever live at once.
    slots: Vec<Leaf>,
    free: Vec<u32>,
    ones: u64,
    /// The leaf found by the last lookup, `(leaf number, slot)`: page-cache
    /// walks are mostly sequential, and this skips the ordered-map search.
    hint: Cell<Option<(u64, u32)>>,
}

impl PartialEq for PageBits {
    fn eq(&self, other: &Self) -> bool {
        self.ones == other.ones
            && self.index.len() == other.index.len()
            && self
                .leaves_in(0)
                .zip(other.leaves_in(0))
                .all(|(a, b)| a.0 == b.0 && a.1.words == b.1.words)
    }
}

impl Eq for PageBits {}

impl PageBits {
    pub fn new() -> Self {
        Self::default()
    }

    /// Pages set.
    #[inline]
    pub fn count(&self) -> u64 {
        self.ones
    }

    /// Leaves allocated (for the memory bound: at most one per 4096 pages
    /// that have a bit set).
    pub fn leaves(&self) -> usize {
        self.index.len()
    }

    /// The slot of leaf `c`, if it has a bit set.
    #[inline]
    fn find(&self, c: u64) -> Option<u32> {
        if let Some((hc, slot)) = self.hint.get() {
            if hc == c {
                return Some(slot);
            }
        }
        let slot = *self.index.get(&c)?;
        self.hint.set(Some((c, slot)));
        Some(slot)
    }

    /// The slot of leaf `c`, allocated empty if it has no bit set.
    fn find_or_alloc(&mut self, c: u64) -> usize {
        if let Some(slot) = self.find(c) {
            return slot as usize;
        }
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Leaf::new());
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(c, slot);
        self.hint.set(Some((c, slot)));
        slot as usize
    }

    /// Free leaf `c` (in `slot`) if its last bit was cleared.
    #[inline]
    fn release_if_empty(&mut self, c: u64, slot: u32) {
        if self.slots[slot as usize].ones > 0 {
            return;
        }
        self.index.remove(&c);
        self.free.push(slot);
        if self.hint.get() == Some((c, slot)) {
            self.hint.set(None);
        }
    }

    /// The leaves from leaf number `c0` on, in order.
    fn leaves_in(&self, c0: u64) -> impl Iterator<Item = (u64, &Leaf)> + '_ {
        self.index
            .range(c0..)
            .map(|(&c, &slot)| (c, &self.slots[slot as usize]))
    }

    #[inline]
    pub fn get(&self, index: u64) -> bool {
        self.find(index / LEAF_BITS)
            .is_some_and(|s| self.slots[s as usize].get(index % LEAF_BITS))
    }

    /// The 64 bits of pages `[64 w, 64 w + 64)`.
    #[inline]
    pub fn word(&self, w: u64) -> u64 {
        let c = w / WORDS as u64;
        self.find(c).map_or(0, |s| {
            self.slots[s as usize].words[(w % WORDS as u64) as usize]
        })
    }

    /// Clear the bits of `mask` in word `w`; returns how many were set.
    pub fn clear_word(&mut self, w: u64, mask: u64) -> u64 {
        let c = w / WORDS as u64;
        let Some(slot) = self.find(c) else {
            return 0;
        };
        let leaf = &mut self.slots[slot as usize];
        let wi = (w % WORDS as u64) as usize;
        let removed = (leaf.words[wi] & mask).count_ones();
        if removed == 0 {
            return 0;
        }
        leaf.words[wi] &= !mask;
        leaf.sum(wi);
        leaf.ones -= removed;
        self.ones -= removed as u64;
        self.release_if_empty(c, slot);
        removed as u64
    }

    /// Set one bit; returns whether it was clear.
    #[inline]
    pub fn set(&mut self, index: u64) -> bool {
        let slot = self.find_or_alloc(index / LEAF_BITS);
        let leaf = &mut self.slots[slot];
        let w = ((index % LEAF_BITS) / 64) as usize;
        let m = 1u64 << (index % 64);
        if leaf.words[w] & m != 0 {
            return false;
        }
        leaf.words[w] |= m;
        leaf.sum(w);
        leaf.ones += 1;
        self.ones += 1;
        true
    }

    /// Clear one bit; returns whether it was set.
    #[inline]
    pub fn clear(&mut self, index: u64) -> bool {
        let c = index / LEAF_BITS;
        let Some(slot) = self.find(c) else {
            return false;
        };
        let leaf = &mut self.slots[slot as usize];
        let w = ((index % LEAF_BITS) / 64) as usize;
        let m = 1u64 << (index % 64);
        if leaf.words[w] & m == 0 {
            return false;
        }
        leaf.words[w] &= !m;
        leaf.sum(w);
        leaf.ones -= 1;
        self.ones -= 1;
        self.release_if_empty(c, slot);
        true
    }

    /// Set `[start, start + n)`; returns how many were clear.
    pub fn set_range(&mut self, start: u64, n: u64) -> u64 {
        if let Some((w, mask)) = one_word(start, n) {
            // Inside one word (a pagevec's run, as a rule): that word alone.
            let slot = self.find_or_alloc(w / WORDS as u64);
            let leaf = &mut self.slots[slot];
            let wi = (w % WORDS as u64) as usize;
            let added = (mask & !leaf.words[wi]).count_ones();
            leaf.words[wi] |= mask;
            leaf.sum(wi);
            leaf.ones += added;
            self.ones += added as u64;
            return added as u64;
        }
        let mut added = 0;
        for (c, lo, hi) in leaf_spans(start, start.saturating_add(n)) {
            let slot = self.find_or_alloc(c);
            added += self.slots[slot].set_range(lo, hi);
        }
        self.ones += added;
        added
    }

    /// Clear `[start, start + n)`; returns how many were set.
    pub fn clear_range(&mut self, start: u64, n: u64) -> u64 {
        if let Some((w, mask)) = one_word(start, n) {
            return self.clear_word(w, mask);
        }
        let end = start.saturating_add(n);
        if n > 0 && start / LEAF_BITS == (end - 1) / LEAF_BITS {
            // Inside one leaf (a bio's pages, as a rule): that leaf alone.
            let c = start / LEAF_BITS;
            let Some(slot) = self.find(c) else {
                return 0;
            };
            let lo = start % LEAF_BITS;
            let removed = self.slots[slot as usize].clear_range(lo, lo + (end - start));
            self.ones -= removed;
            self.release_if_empty(c, slot);
            return removed;
        }
        let mut removed = 0;
        let mut i = start;
        // Visit only the leaves that exist: one ordered-map step each.
        while let Some(p) = self.next_set(i, end) {
            let c = p / LEAF_BITS;
            let slot = self.find(c).expect("leaf of a set bit");
            let hi = (end - c * LEAF_BITS).min(LEAF_BITS);
            removed += self.slots[slot as usize].clear_range(p % LEAF_BITS, hi);
            self.release_if_empty(c, slot);
            i = c * LEAF_BITS + hi;
        }
        self.ones -= removed;
        removed
    }

    /// Bits set in `[start, start + n)`.
    pub fn count_range(&self, start: u64, n: u64) -> u64 {
        let end = start.saturating_add(n);
        if n == 0 || self.ones == 0 {
            return 0;
        }
        let (c0, c1) = (start / LEAF_BITS, (end - 1) / LEAF_BITS);
        self.leaves_in(c0)
            .take_while(|&(c, _)| c <= c1)
            .map(|(c, leaf)| {
                let lo = if c == c0 { start % LEAF_BITS } else { 0 };
                let hi = if c == c1 {
                    end - c * LEAF_BITS
                } else {
                    LEAF_BITS
                };
                leaf.count_range(lo, hi)
            })
            .sum()
    }

    /// First set bit in `[from, limit)` (`radix_tree_gang_lookup_tag` for one).
    pub fn next_set(&self, from: u64, limit: u64) -> Option<u64> {
        if from >= limit || self.ones == 0 {
            return None;
        }
        let c0 = from / LEAF_BITS;
        // The leaf of `from` first (often the hinted one), then the map.
        if let Some(slot) = self.find(c0) {
            if let Some(x) = self.slots[slot as usize].next(from % LEAF_BITS, true) {
                let i = c0 * LEAF_BITS + x;
                return (i < limit).then_some(i);
            }
        }
        let c1 = c0.checked_add(1)?;
        if limit <= c1.saturating_mul(LEAF_BITS) {
            // The range ends in this leaf: no need to look further.
            return None;
        }
        let (c, leaf) = self.leaves_in(c1).next()?;
        let x = leaf.next(0, true).expect("a live leaf has a bit set");
        let i = c * LEAF_BITS + x;
        (i < limit).then_some(i)
    }

    /// First clear bit in `[from, limit)` (`radix_tree_next_hole`).
    pub fn next_clear(&self, from: u64, limit: u64) -> Option<u64> {
        let mut i = from;
        while i < limit {
            let c = i / LEAF_BITS;
            let Some(slot) = self.find(c) else {
                return Some(i);
            };
            if let Some(x) = self.slots[slot as usize].next(i % LEAF_BITS, false) {
                let j = c * LEAF_BITS + x;
                return (j < limit).then_some(j);
            }
            i = (c + 1).saturating_mul(LEAF_BITS);
        }
        None
    }

    /// `radix_tree_gang_lookup_tag` over two tags at once: append to `out`,
    /// in order, the indexes in `[from, limit)` set in `self` or in `other`,
    /// until `out` holds `max`. The same indexes as calling `next_set` on both
    /// page by page, but a word of 64 pages at a time: one ordered lookup to
    /// reach the next set bit, then the rest of its word.
    pub fn gang_lookup_either(
        &self,
        other: &PageBits,
        (from, limit): (u64, u64),
        max: usize,
        out: &mut Vec<u64>,
    ) {
        let mut i = from;
        while out.len() < max && i < limit {
            let a = self.next_set(i, limit);
            let b = if other.ones == 0 {
                None
            } else {
                other.next_set(i, a.unwrap_or(limit))
            };
            // `b` is only searched below `a`: the first of the two.
            let Some(p) = b.or(a) else {
                break;
            };
            let w = p / 64;
            let wend = (w * 64).saturating_add(64).min(limit);
            let mut bits = (self.word(w) | other.word(w)) & mask_bits(p % 64, wend - w * 64);
            while bits != 0 && out.len() < max {
                out.push(w * 64 + bits.trailing_zeros() as u64);
                bits &= bits - 1;
            }
            i = wend;
        }
    }

    /// End of the run of set bits starting at `from` (exclusive), at most `limit`.
    pub fn run_end(&self, from: u64, limit: u64) -> u64 {
        self.next_clear(from, limit).unwrap_or(limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iostack_des::Rng;

    /// Random operations against a `Vec<bool>` model over a span of a few
    /// leaves, with ranges that cross leaf and word boundaries.
    fn against_model(seed: u64, span: u64, max_run: u64, steps: usize) {
        let mut rng = Rng::stream(iostack_des::Seed(seed), "bitmap");
        let mut b = PageBits::new();
        let mut model = vec![false; span as usize];
        let count = |m: &[bool], s: u64, e: u64| (s..e).filter(|&i| m[i as usize]).count() as u64;
        for _ in 0..steps {
            let s = rng.below(span);
            let n = rng.below(max_run.min(span - s) + 1);
            match rng.below(4) {
                0 => {
                    assert_eq!(b.set_range(s, n), n - count(&model, s, s + n));
                    (s..s + n).for_each(|i| model[i as usize] = true);
                }
                1 => {
                    assert_eq!(b.clear_range(s, n), count(&model, s, s + n));
                    (s..s + n).for_each(|i| model[i as usize] = false);
                }
                2 => {
                    let was = model[s as usize];
                    if rng.below(2) == 0 {
                        assert_eq!(b.set(s), !was);
                        model[s as usize] = true;
                    } else {
                        assert_eq!(b.clear(s), was);
                        model[s as usize] = false;
                    }
                }
                _ => {
                    let lim = s + n;
                    let want = (s..lim).find(|&i| model[i as usize]);
                    assert_eq!(b.next_set(s, lim), want, "next_set({s}, {lim})");
                    let want = (s..lim).find(|&i| !model[i as usize]);
                    assert_eq!(b.next_clear(s, lim), want, "next_clear({s}, {lim})");
                    assert_eq!(b.run_end(s, lim), want.unwrap_or(lim));
                    assert_eq!(b.count_range(s, n), count(&model, s, lim));
                    assert_eq!(b.get(s), model[s as usize]);
                }
            }
            assert_eq!(b.count(), count(&model, 0, span));
            // Leaves exist exactly where a bit is set.
            let live = (0..span.div_ceil(LEAF_BITS))
                .filter(|&c| count(&model, c * LEAF_BITS, ((c + 1) * LEAF_BITS).min(span)) > 0)
                .count();
            assert_eq!(b.leaves(), live);
        }
    }

    #[test]
    fn short_ranges_agree_with_a_bool_model() {
        against_model(7, 5000, 100, 3000);
    }

    #[test]
    fn long_ranges_across_leaves_agree_with_a_bool_model() {
        against_model(11, 5 * LEAF_BITS + 77, 3 * LEAF_BITS, 1500);
        against_model(12, 3 * LEAF_BITS, 130, 4000);
    }

    /// The word-at-a-time gang lookup over two bitmaps returns what the
    /// page-by-page `next_set` walk of `pagevec_lookup_tag` did.
    #[test]
    fn gang_lookup_either_agrees_with_next_set_page_by_page() {
        let mut rng = Rng::stream(iostack_des::Seed(5), "gang");
        for round in 0..300 {
            let (mut a, mut b) = (PageBits::new(), PageBits::new());
            let span = 3 * LEAF_BITS;
            for _ in 0..rng.below(12) {
                a.set_range(rng.below(span), rng.below(200));
            }
            for _ in 0..rng.below(4) * (round % 2) {
                b.set_range(rng.below(span), rng.below(40));
            }
            let from = rng.below(span);
            let limit = if rng.below(4) == 0 {
                u64::MAX
            } else {
                from + rng.below(span)
            };
            let max = 1 + rng.below(70) as usize;
            let mut want = Vec::new();
            let mut i = from;
            while want.len() < max {
                let d = a.next_set(i, limit);
                let t = b.next_set(i, d.unwrap_or(limit)).or(d);
                let Some(p) = t else { break };
                want.push(p);
                i = p + 1;
            }
            let mut got = vec![7];
            a.gang_lookup_either(&b, (from, limit), max + 1, &mut got);
            assert_eq!(got[0], 7);
            assert_eq!(&got[1..], &want[..], "from {from} limit {limit} max {max}");
        }
        let mut far = PageBits::new();
        far.set_range(u64::MAX - 70, 70);
        let mut got = Vec::new();
        far.gang_lookup_either(&PageBits::new(), (u64::MAX - 3, u64::MAX), 14, &mut got);
        assert_eq!(got, vec![u64::MAX - 3, u64::MAX - 2, u64::MAX - 1]);
    }

    #[test]
    fn far_indexes_cost_one_leaf() {
        // A bit near the end of a 2 TB block device allocates one leaf, and the
        // lookup from page 0 finds it without walking the span.
        let mut b = PageBits::new();
        let far = (2u64 << 40) / 4096 - 3;
        assert!(b.set(far));
        assert_eq!(b.leaves(), 1);
        assert_eq!(b.next_set(0, u64::MAX), Some(far));
        assert_eq!(b.next_set(0, far), None);
        assert_eq!(b.next_clear(far, u64::MAX), Some(far + 1));
        assert_eq!(b.set_range(u64::MAX - 5, 10), 5);
        assert_eq!(b.next_set(far + 1, u64::MAX), Some(u64::MAX - 5));
        assert_eq!(b.next_clear(u64::MAX - 5, u64::MAX), None);
        assert_eq!(b.clear_range(0, u64::MAX), 6);
        assert_eq!(b.leaves(), 0);
        assert_eq!(b, PageBits::new());
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        #[derive(Clone, Debug)]
        enum Op {
            Set(u64, u64),
            Clear(u64, u64),
            One(u64, bool),
        }

        /// A span of three leaves and a bit, so runs cross word and leaf edges.
        const SPAN: u64 = 3 * LEAF_BITS + 1;

        fn op() -> impl Strategy<Value = Op> {
            let run = (0..SPAN).prop_flat_map(|s| (Just(s), 0..=(SPAN - s).min(2 * LEAF_BITS)));
            prop_oneof![
                run.clone().prop_map(|(s, n)| Op::Set(s, n)),
                run.prop_map(|(s, n)| Op::Clear(s, n)),
                (0..SPAN, any::<bool>()).prop_map(|(i, v)| Op::One(i, v)),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]
            /// After any sequence of range and single-bit operations the bitmap
            /// answers every lookup as a `Vec<bool>` does.
            #[test]
            fn behaves_as_a_bool_vector(ops in prop::collection::vec(op(), 1..40),
                                        probes in prop::collection::vec((0..SPAN, 0..SPAN), 8)) {
                let mut b = PageBits::new();
                let mut m = vec![false; SPAN as usize];
                let ones = |m: &[bool], s: u64, e: u64| (s..e).filter(|&i| m[i as usize]).count() as u64;
                for o in ops {
                    match o {
                        Op::Set(s, n) => {
                            prop_assert_eq!(b.set_range(s, n), n - ones(&m, s, s + n));
                            (s..s + n).for_each(|i| m[i as usize] = true);
                        }
                        Op::Clear(s, n) => {
                            prop_assert_eq!(b.clear_range(s, n), ones(&m, s, s + n));
                            (s..s + n).for_each(|i| m[i as usize] = false);
                        }
                        Op::One(i, v) => {
                            let was = m[i as usize];
                            let changed = if v { b.set(i) } else { b.clear(i) };
                            prop_assert_eq!(changed, was != v);
                            m[i as usize] = v;
                        }
                    }
                }
                prop_assert_eq!(b.count(), ones(&m, 0, SPAN));
                for (x, y) in probes {
                    let (s, e) = (x.min(y), x.max(y));
                    prop_assert_eq!(b.next_set(s, e), (s..e).find(|&i| m[i as usize]));
                    prop_assert_eq!(b.next_clear(s, e), (s..e).find(|&i| !m[i as usize]));
                    prop_assert_eq!(b.count_range(s, e - s), ones(&m, s, e));
                    prop_assert_eq!(b.get(s), m[s as usize]);
                    prop_assert_eq!(b.word(s / 64), (0..64).fold(0u64, |w, k| {
                        let i = s / 64 * 64 + k;
                        w | (((i < SPAN && m[i as usize]) as u64) << k)
                    }));
                }
                let live = (0..SPAN.div_ceil(LEAF_BITS))
                    .filter(|&c| ones(&m, c * LEAF_BITS, ((c + 1) * LEAF_BITS).min(SPAN)) > 0)
                    .count();
                prop_assert_eq!(b.leaves(), live);
            }
        }
    }
}
