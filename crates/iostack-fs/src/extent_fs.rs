//! File systems whose buffered writes allocate at writeback (delayed allocation):
//! ext4 (`ext4_da_get_block_prep` reserves at `write_begin`, `mpage_da_map_blocks`
//! allocates through mballoc at writeback) and XFS (`xfs_iomap_write_delay` reserves
//! a delalloc extent, `xfs_iomap_write_allocate` converts the whole extent at
//! writeback).
//!
//! The page cache and writeback live in the simulator; it talks to a file system
//! through `ExtentFs` for buffered I/O and through `GetBlock` for direct I/O.
//! `RangeSet` is the small interval-set helper both file systems use for delalloc
//! ranges and allocation bookkeeping.

use crate::{FsError, GetBlock};
use std::collections::BTreeMap;

/// One mapped run of a file, in file-system blocks (FIEMAP's view).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileExtent {
    pub logical: u64,
    pub physical: u64,
    pub len: u64,
}

/// A block range a caller asked about: not empty, and not past the file system's
/// largest file offset `max` (in blocks).
pub fn check_block_range(lblk: u64, n: u64, max: u64) -> Result<(), FsError> {
    if n == 0 {
        return Err(FsError::Invalid("empty block range".into()));
    }
    match lblk.checked_add(n) {
        Some(e) if e <= max => Ok(()),
        _ => Err(FsError::Invalid(format!(
            "blocks {lblk}+{n} lie beyond the largest file offset"
        ))),
    }
}

/// The first step of `create`: a name must not be empty, and an existing name
/// opens its inode (no truncation is modelled).
pub fn existing_file(names: &BTreeMap<String, u32>, name: &str) -> Result<Option<u32>, FsError> {
    if name.is_empty() {
        return Err(FsError::Invalid("empty file name".into()));
    }
    Ok(names.get(name).copied())
}

pub trait ExtentFs: GetBlock {
    /// "ext4", "xfs".
    fn fs_name(&self) -> &'static str;
    fn block_size(&self) -> u32;
    /// A new empty regular file (`O_CREAT`); an existing name returns its inode
    /// (no truncation is modelled).
    fn create(&mut self, name: &str) -> Result<u32, FsError>;
    fn lookup(&self, name: &str) -> Option<u32>;
    /// A buffered write dirtied blocks [lblk, lblk+n) of `ino` (write_begin):
    /// ext4 `ext4_da_get_block_prep` reserves (no allocation); XFS `xfs_iomap_write_delay`
    /// reserves a delalloc extent plus speculative EOF preallocation. Extends nothing on disk.
    /// `i_size` is raised to cover the blocks if it is smaller (block-granular, as
    /// `generic_write_end` would); the caller may set the exact byte size afterwards.
    fn delalloc_reserve(&mut self, ino: u32, lblk: u64, n: u64) -> Result<(), FsError>;
    /// Writeback needs blocks [lblk, lblk+n) mapped (each block is delalloc or already mapped).
    /// Allocate as the kernel does at writeback: ext4 `mpage_da_map_blocks` -> `ext4_get_blocks`
    /// -> `ext4_mb_new_blocks` for exactly this run (may return fewer blocks than asked
    /// if the allocator could not find one contiguous run; then the caller asks again for the rest);
    /// XFS `xfs_iomap_write_allocate`: converts the WHOLE delalloc extent containing lblk.
    /// Appends the physical runs covering [lblk, lblk+returned) in logical order to `out`;
    /// returns blocks mapped (>=1).
    fn map_for_writeback(
        &mut self,
        ino: u32,
        lblk: u64,
        n: u64,
        out: &mut Vec<FileExtent>,
    ) -> Result<u64, FsError>;
    /// Writeback maps pages from `lblk` on (at most `n`) as `map_for_writeback`
    /// of each single page in turn would: appends the runs of the pages mapped
    /// and returns how many (>= 1). The default maps one page; a file system
    /// whose mapping of a page does not depend on the length asked for maps
    /// more at once.
    fn map_pages_for_writeback(
        &mut self,
        ino: u32,
        lblk: u64,
        _n: u64,
        out: &mut Vec<FileExtent>,
    ) -> Result<u64, FsError> {
        self.map_for_writeback(ino, lblk, 1, out)
    }
    /// Mapped extents in logical order (delalloc-only ranges are not included), for filefrag.
    fn fiemap(&self, ino: u32) -> Vec<FileExtent>;
    /// Longest run one writeback mapping call may cover, in blocks (ext4 2.6.27/28: the
    /// `mpage_add_bh_to_extent` / mballoc limit; XFS: u64::MAX).
    fn max_writeback_run(&self) -> u64;
    /// Block ranges of the block device (physical block, count) that the file system dirties in
    /// the page cache of the block-device inode right after mount (ext4's lazy inode-table
    /// zeroing as of the 2008 patch queue: uninit_bg inode tables zeroed through the bdev
    /// page cache); empty for XFS or when disabled.
    fn mount_dirty_bdev_ranges(&self) -> Vec<(u64, u64)>;

    /// The last writer closed the file: ext4 `ext4_release_file` →
    /// `ext4_discard_preallocations`; XFS `xfs_release` → `xfs_free_eofblocks`.
    fn release_file(&mut self, _ino: u32) {}
    /// The journal area `(first block, blocks)` (ext4's journal inode as
    /// mke2fs placed it); `None` without a journal.
    fn journal_area(&self) -> Option<(u64, u64)> {
        None
    }
    /// The journal's runs `(first block, blocks)` in logical order
    /// (`jbd2_journal_bmap`); empty: one run from `journal_area`'s start.
    fn journal_runs(&self) -> Vec<(u64, u64)> {
        Vec::new()
    }
    /// The inode-table block holding `ino` (what `ext4_mark_inode_dirty`
    /// journals).
    fn inode_block(&self, _ino: u32) -> Option<u64> {
        None
    }
    /// The metadata blocks creating `ino` dirtied (`ext4_new_inode`,
    /// `ext4_add_entry`).
    fn create_meta(&self, _ino: u32) -> Vec<u64> {
        Vec::new()
    }
    /// The allocations `map_for_writeback` made since the last call, each as
    /// (inode, first logical block, metadata blocks it dirtied), for the
    /// journal handle writeback holds around them.
    fn take_alloc_meta(&mut self) -> Vec<(u32, u64, Vec<u64>)> {
        Vec::new()
    }
    /// XFS: the transactions committed since the last call, each as the log
    /// items it logged (`xfs_log::XfsLog::commit`).
    fn take_log_trans(&mut self) -> Vec<Vec<crate::xfs_log::Item>> {
        Vec::new()
    }
    /// XFS: the creation transaction of `ino`, once (the file's creator
    /// commits it when it runs).
    fn take_create_trans(&mut self, _ino: u32) -> Option<Vec<crate::xfs_log::Item>> {
        None
    }

    /// Lay out a file of `size` bytes as a sequential buffered writer followed by
    /// in-order writeback would (fio's layout phase), then close it.
    fn layout(&mut self, name: &str, size: u64) -> Result<u32, FsError> {
        let ino = self.create(name)?;
        let bs = self.block_size() as u64;
        let nblocks = size.div_ceil(bs);
        if nblocks > 0 {
            self.delalloc_reserve(ino, 0, nblocks)?;
        }
        self.set_i_size(ino, size);
        let run = self.max_writeback_run().max(1);
        let mut out = Vec::new();
        let mut l = 0;
        while l < nblocks {
            out.clear();
            let n = self.map_for_writeback(ino, l, run.min(nblocks - l), &mut out)?;
            if n == 0 {
                return Err(FsError::NoSpace);
            }
            l += n;
        }
        // Laid out before the run: its metadata is on disk, not journalled.
        self.take_alloc_meta();
        self.take_log_trans();
        self.take_create_trans(ino);
        self.release_file(ino);
        Ok(ino)
    }
}

/// filefrag's FIEMAP counting rule (e2fsprogs `misc/filefrag.c`): an extent counts
/// only when its physical start differs from where the previous one ended.
pub fn filefrag_count(extents: &[FileExtent]) -> usize {
    let mut n = 0;
    let mut expected: Option<u64> = None;
    for e in extents {
        if expected != Some(e.physical) {
            n += 1;
        }
        expected = Some(e.physical + e.len);
    }
    n
}

/// Merge logically and physically adjacent runs (what filefrag reports as one extent).
pub fn physical_runs(extents: &[FileExtent]) -> Vec<FileExtent> {
    let mut v: Vec<FileExtent> = Vec::new();
    for e in extents {
        match v.last_mut() {
            Some(l) if l.logical + l.len == e.logical && l.physical + l.len == e.physical => {
                l.len += e.len
            }
            _ => v.push(*e),
        }
    }
    v
}

/// A set of disjoint, non-adjacent half-open ranges `[start, end)` of u64, kept
/// merged (start → end). Every operation is O(log n + ranges touched).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    map: BTreeMap<u64, u64>,
    total: u64,
}

impl RangeSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of values covered.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of disjoint ranges.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Add `[start, end)`; returns how many values were not already present.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let before = self.total;
        let (mut s, mut e) = (start, end);
        if let Some((&ls, &le)) = self.map.range(..=s).next_back() {
            if le >= s {
                s = ls;
                e = e.max(le);
                self.map.remove(&ls);
                self.total -= le - ls;
            }
        }
        while let Some((&rs, &re)) = self.map.range(s..).next() {
            if rs > e {
                break;
            }
            e = e.max(re);
            self.map.remove(&rs);
            self.total -= re - rs;
        }
        self.map.insert(s, e);
        self.total += e - s;
        self.total - before
    }

    /// Remove `[start, end)`; returns how many values were present.
    pub fn remove(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let mut removed = 0;
        if let Some((&ls, &le)) = self.map.range(..start).next_back() {
            if le > start {
                self.map.insert(ls, start);
                if le > end {
                    self.map.insert(end, le);
                    removed += end - start;
                    self.total -= removed;
                    return removed;
                }
                removed += le - start;
            }
        }
        while let Some((&rs, &re)) = self.map.range(start..end).next() {
            self.map.remove(&rs);
            if re > end {
                self.map.insert(end, re);
                removed += end - rs;
            } else {
                removed += re - rs;
            }
        }
        self.total -= removed;
        removed
    }

    pub fn contains(&self, v: u64) -> bool {
        self.range_containing(v).is_some()
    }

    /// The range holding `v`.
    pub fn range_containing(&self, v: u64) -> Option<(u64, u64)> {
        let (&s, &e) = self.map.range(..=v).next_back()?;
        (e > v).then_some((s, e))
    }

    /// The first range that ends after `v` (holding `v` or starting after it).
    pub fn next_from(&self, v: u64) -> Option<(u64, u64)> {
        if let Some(r) = self.range_containing(v) {
            return Some(r);
        }
        self.map.range(v..).next().map(|(&s, &e)| (s, e))
    }

    /// Values of `[start, end)` present.
    pub fn count_in(&self, start: u64, end: u64) -> u64 {
        self.overlapping(start, end).map(|(s, e)| e - s).sum()
    }

    /// The parts of the set inside `[start, end)`, clipped, in order.
    pub fn overlapping(&self, start: u64, end: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let first = self
            .map
            .range(..start)
            .next_back()
            .filter(|(_, &e)| e > start)
            .map(|(&s, &e)| (s, e));
        first
            .into_iter()
            .chain(self.map.range(start..end).map(|(&s, &e)| (s, e)))
            .filter_map(move |(s, e)| {
                let (s, e) = (s.max(start), e.min(end));
                (s < e).then_some((s, e))
            })
    }

    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.iter().map(|(&s, &e)| (s, e))
    }

    /// The last range.
    pub fn last(&self) -> Option<(u64, u64)> {
        self.map.iter().next_back().map(|(&s, &e)| (s, e))
    }
}

/// Check that sorted `(start, len, what)` ranges tile `[0, total)` exactly once.
pub(crate) fn check_tiling(
    mut ranges: Vec<(u64, u64, &'static str)>,
    total: u64,
) -> Result<(), String> {
    ranges.retain(|r| r.1 > 0);
    ranges.sort();
    let mut at = 0u64;
    for (s, l, what) in ranges {
        if s < at {
            return Err(format!(
                "block {s} ({what}, {l} blocks) is covered twice (previous range ends at {at})"
            ));
        }
        if s > at {
            return Err(format!("blocks {at}..{s} are neither free nor in use"));
        }
        at = s + l;
    }
    if at != total {
        return Err(format!("ranges end at {at}, the file system has {total}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rangeset_merges_and_splits() {
        let mut r = RangeSet::new();
        assert_eq!(r.insert(10, 20), 10);
        assert_eq!(r.insert(30, 40), 10);
        assert_eq!(r.insert(20, 30), 10);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(10, 40)]);
        assert_eq!(r.insert(5, 50), 15);
        assert_eq!(r.remove(20, 25), 5);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(5, 20), (25, 50)]);
        assert_eq!(r.count_in(0, 100), 40);
        assert_eq!(r.count_in(18, 27), 4);
        assert_eq!(r.remove(0, 100), 40);
        assert!(r.is_empty());
        assert_eq!(r.total(), 0);
    }

    #[test]
    fn filefrag_counts_physical_breaks() {
        let e = |l, p, n| FileExtent {
            logical: l,
            physical: p,
            len: n,
        };
        let v = [e(0, 100, 10), e(10, 110, 5), e(15, 200, 5), e(20, 205, 1)];
        assert_eq!(filefrag_count(&v), 2);
        assert_eq!(physical_runs(&v).len(), 2);
    }
}
