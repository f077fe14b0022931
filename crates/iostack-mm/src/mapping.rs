//! `struct address_space`: one inode's page cache, as page flags and radix-tree
//! tags over page indexes, plus the writeback cursor `writeback_index`.

use crate::bitmap::PageBits;
use crate::readahead::RaWindow;
use iostack_des::Instant;

/// One file's (or the block device's) cached pages.
#[derive(Clone, Debug)]
pub struct AddressSpace {
    /// Owner: the inode number (0 for the block-device inode).
    pub ino: u32,
    /// Pages past this index are beyond EOF (`i_size` in pages, rounded up).
    pub size_pages: u64,
    /// In the page cache at all (the radix tree holds a page).
    pub present: PageBits,
    /// `PG_uptodate`.
    pub uptodate: PageBits,
    /// `PG_locked` for a read in flight (`add_to_page_cache_lru` locks new pages).
    pub locked: PageBits,
    /// `PAGECACHE_TAG_DIRTY` / `PG_dirty`.
    pub dirty: PageBits,
    /// `PAGECACHE_TAG_WRITEBACK` / `PG_writeback`.
    pub writeback: PageBits,
    /// `PG_readahead`.
    pub ra_marker: PageBits,
    /// Pages a writeback caller holds locked in the delalloc extent it is
    /// collecting (ext4's `__mpage_da_writepage` keeps them locked until
    /// `mpage_da_submit_io`): `PG_dirty` was cleared by `clear_page_dirty_for_io`
    /// but `PAGECACHE_TAG_DIRTY` stays set until `set_page_writeback`, so other
    /// callers' tag lookups find them and wait in `lock_page`.
    pub wb_locked: PageBits,
    /// `mapping->writeback_index`: where the next `range_cyclic` writeback starts.
    pub writeback_index: u64,
    /// `inode->dirtied_when`: when the inode went from clean to dirty.
    pub dirtied_when: Option<Instant>,
}

impl AddressSpace {
    pub fn new(ino: u32, size_pages: u64) -> Self {
        AddressSpace {
            ino,
            size_pages,
            present: PageBits::new(),
            uptodate: PageBits::new(),
            locked: PageBits::new(),
            dirty: PageBits::new(),
            writeback: PageBits::new(),
            ra_marker: PageBits::new(),
            wb_locked: PageBits::new(),
            writeback_index: 0,
            dirtied_when: None,
        }
    }

    pub fn nr_dirty(&self) -> u64 {
        self.dirty.count()
    }

    pub fn nr_writeback(&self) -> u64 {
        self.writeback.count()
    }

    pub fn nr_cached(&self) -> u64 {
        self.present.count()
    }

    /// `__do_page_cache_readahead`: allocate the pages of the window that are not
    /// cached (stopping at EOF and at `limit`), lock them for the read, and mark
    /// page `start + size - async_size` `PG_readahead` if it was newly allocated.
    /// Returns the runs of new pages `(first, count)` to read.
    pub fn alloc_readahead(&mut self, w: RaWindow, limit: u64) -> Vec<(u64, u64)> {
        let end = (w.start + w.size).min(self.size_pages).min(limit);
        let marker = w.start + w.size - w.async_size;
        let mut runs = Vec::new();
        let mut i = w.start;
        while i < end {
            let Some(s) = self.present.next_clear(i, end) else {
                break;
            };
            let e = self.present.next_set(s, end).unwrap_or(end);
            self.present.set_range(s, e - s);
            self.locked.set_range(s, e - s);
            if w.async_size > 0 && (s..e).contains(&marker) {
                self.ra_marker.set(marker);
            }
            runs.push((s, e - s));
            i = e;
        }
        runs
    }

    /// A read completed for `[first, first + n)`: `SetPageUptodate`, `unlock_page`.
    pub fn read_done(&mut self, first: u64, n: u64) {
        self.uptodate.set_range(first, n);
        self.locked.clear_range(first, n);
    }

    /// A buffered write copied into `[first, first + n)`: the pages are cached,
    /// up to date and dirty (`__set_page_dirty_nobuffers`). Returns newly dirtied.
    pub fn write_pages(&mut self, first: u64, n: u64, now: Instant) -> u64 {
        self.present.set_range(first, n);
        self.uptodate.set_range(first, n);
        if self.dirty.count() == 0 && self.dirtied_when.is_none() {
            self.dirtied_when = Some(now);
        }
        self.size_pages = self.size_pages.max(first + n);
        self.dirty.set_range(first, n)
    }

    /// Reclaim clean, idle pages of `[first, first + n)` (`shrink_page_list` →
    /// `remove_mapping`). Returns pages freed.
    pub fn reclaim(&mut self, first: u64, n: u64) -> u64 {
        let mut freed = 0;
        let end = first.saturating_add(n);
        let mut i = first;
        // A word (64 pages) at a time: the pages present and neither dirty,
        // under writeback nor locked for a read.
        while let Some(p) = self.present.next_set(i, end) {
            let w = p / 64;
            let hi = (end - w * 64).min(64);
            let range = (if hi == 64 { !0 } else { (1u64 << hi) - 1 }) & (!0u64 << (p % 64));
            let busy = self.dirty.word(w) | self.writeback.word(w) | self.locked.word(w);
            let idle = self.present.word(w) & range & !busy;
            freed += self.present.clear_word(w, idle);
            self.uptodate.clear_word(w, idle);
            self.ra_marker.clear_word(w, idle);
            i = w * 64 + hi;
        }
        freed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iostack_des::{Rng, Seed};

    /// The word-at-a-time reclaim frees exactly the pages a page-at-a-time walk
    /// would: present and neither dirty, under writeback nor locked.
    #[test]
    fn reclaim_frees_the_idle_pages_of_the_range() {
        let mut rng = Rng::stream(Seed(3), "reclaim");
        for _ in 0..200 {
            let mut m = AddressSpace::new(1, 1 << 20);
            for bits in [
                &mut m.present,
                &mut m.dirty,
                &mut m.writeback,
                &mut m.locked,
                &mut m.uptodate,
                &mut m.ra_marker,
            ] {
                for _ in 0..20 {
                    bits.set_range(rng.below(9000), rng.below(300));
                }
            }
            let (first, n) = (rng.below(9000), rng.below(3000));
            let idle: Vec<u64> = (first..first + n)
                .filter(|&p| {
                    m.present.get(p) && !m.dirty.get(p) && !m.writeback.get(p) && !m.locked.get(p)
                })
                .collect();
            let before = m.clone();
            assert_eq!(m.reclaim(first, n), idle.len() as u64);
            for p in 0..12_000 {
                let freed = idle.binary_search(&p).is_ok();
                assert_eq!(m.present.get(p), before.present.get(p) && !freed);
                assert_eq!(m.uptodate.get(p), before.uptodate.get(p) && !freed);
                assert_eq!(m.ra_marker.get(p), before.ra_marker.get(p) && !freed);
                assert_eq!(m.dirty.get(p), before.dirty.get(p));
            }
        }
    }
}
