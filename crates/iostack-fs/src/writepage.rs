//! The file systems' `->writepage(s)` flavours, sans-IO: given the page being
//! written and its block, which bio goes out now; the block of a page at
//! writeback (allocating delayed blocks); ext4's `mpage_da_map_blocks`. The page
//! walk that calls them (`write_cache_pages`) is mm's, which reaches them
//! through `FsWriteback` (`writepages.rs`); the simulation submits the bios.

use crate::mount::{MountedFs, WritepageKind};
use crate::{FileExtent, FsError};
use iostack_mm::PageRun;
use std::cell::RefCell;

/// `->writepage` of one page mapped to block `pblk`; returns the bio to submit
/// now, if any. ext3's `block_write_full_page` (and ext4's `ext4_da_writepage`)
/// submits one bio per buffer and leaves merging to the elevator; ext2's
/// `mpage_writepage` and XFS's ioend extend the open bio while the pages are
/// contiguous in the file and on disk and the bio has room (`max_pages`), else
/// submit it and open a new one.
pub fn writepage(
    kind: WritepageKind,
    open: &mut Option<PageRun>,
    page: u64,
    pblk: u64,
    max_pages: u64,
) -> Option<PageRun> {
    let one = PageRun {
        first: page,
        pages: 1,
        pblk,
    };
    match kind {
        WritepageKind::PerBuffer | WritepageKind::Ext4Da => Some(one),
        WritepageKind::Mpage | WritepageKind::XfsCluster => match open {
            Some(b)
                if b.first + b.pages == page && b.pblk + b.pages == pblk && b.pages < max_pages =>
            {
                b.pages += 1;
                None
            }
            Some(b) => {
                let full = *b;
                *open = Some(one);
                Some(full)
            }
            None => {
                *open = Some(one);
                None
            }
        },
    }
}

/// `writepage` on each page of `[first, first + n)` in turn, mapped to the
/// blocks from `pblk` on, for the writers that grow an open bio (ext2's
/// `mpage_writepage`, XFS's ioend): the open bio takes as many pages as it
/// has room for at once; each full or broken bio goes to `out` as the
/// page-by-page calls would return it. Per-buffer writers submit every page.
pub fn writepage_extent(
    kind: WritepageKind,
    open: &mut Option<PageRun>,
    (first, n, pblk): (u64, u64, u64),
    max_pages: u64,
    out: &mut impl FnMut(PageRun),
) {
    let (mut page, mut blk, end) = (first, pblk, first + n);
    while page < end {
        match (kind, open.as_mut()) {
            (WritepageKind::Mpage | WritepageKind::XfsCluster, Some(b))
                if b.first + b.pages == page && b.pblk + b.pages == blk && b.pages < max_pages =>
            {
                let k = (max_pages - b.pages).min(end - page);
                b.pages += k;
                page += k;
                blk += k;
            }
            _ => {
                if let Some(full) = writepage(kind, open, page, blk, max_pages) {
                    out(full);
                }
                page += 1;
                blk += 1;
            }
        }
    }
}

thread_local! {
    /// The runs vector of the mapping calls, reused: one allocation per
    /// thread, not per page.
    static RUNS: RefCell<Vec<FileExtent>> = const { RefCell::new(Vec::new()) };
}

/// The block of page `page` of `ino` for writeback (allocating a delayed block),
/// or `None` if the file system maps none.
pub fn block_of_page(fs: &mut dyn MountedFs, ino: u32, page: u64) -> Option<u64> {
    RUNS.with_borrow_mut(|runs| {
        runs.clear();
        match fs.map_for_writeback(ino, page, 1, runs) {
            Ok(_) if !runs.is_empty() => Some(runs[0].physical + (page - runs[0].logical)),
            _ => None,
        }
    })
}

/// `MountedFs::map_pages_for_writeback` of pages from `l` (at most `n`):
/// `f(first, pages, pblk)` on each run mapped, in order; returns how many
/// pages were mapped, or `None` if the file system maps none.
pub fn pages_for_writeback(
    fs: &mut dyn MountedFs,
    ino: u32,
    (l, n): (u64, u64),
    mut f: impl FnMut(u64, u64, u64),
) -> Option<u64> {
    RUNS.with_borrow_mut(|runs| {
        runs.clear();
        let k = match fs.map_pages_for_writeback(ino, l, n, runs) {
            Ok(k) if k > 0 && !runs.is_empty() => k.min(n),
            _ => return None,
        };
        for r in runs.iter() {
            let (s, e) = (r.logical.max(l), (r.logical + r.len).min(l + k));
            if s < e {
                f(s, e - s, r.physical + (s - r.logical));
            }
        }
        Some(k)
    })
}

/// ext4's `mpage_da_map_blocks` over the extent of pages `[first, next)`: one
/// `ext4_da_get_block_write` call for the whole extent, which mballoc may serve
/// only in part (the request is cut at the end of the inode preallocation it is
/// served from, `ext4_mb_use_inode_pa`). `once`: the October 2008 code maps once
/// and leaves the rest delayed; the merged fix loops until the extent is mapped.
/// Appends the mapped runs to `runs` and returns the end of the mapped part; an
/// error names the block that failed.
pub fn mpage_da_map_blocks(
    fs: &mut dyn MountedFs,
    ino: u32,
    first: u64,
    next: u64,
    once: bool,
    runs: &mut Vec<FileExtent>,
) -> Result<u64, (u64, FsError)> {
    let mut l = first;
    while l < next {
        let before = runs.len();
        match fs.map_for_writeback(ino, l, next - l, runs) {
            Ok(k) if k > 0 => l += k,
            Ok(_) => return Err((l, FsError::NoSpace)),
            Err(e) => return Err((l, e)),
        }
        debug_assert!(runs.len() > before);
        if once {
            break;
        }
    }
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpage_bios_grow_while_contiguous_and_not_full() {
        let k = WritepageKind::Mpage;
        let mut open = None;
        assert_eq!(writepage(k, &mut open, 10, 100, 3), None);
        assert_eq!(writepage(k, &mut open, 11, 101, 3), None);
        assert_eq!(writepage(k, &mut open, 12, 102, 3), None);
        // Full: the open bio goes out and the page starts a new one.
        let full = PageRun {
            first: 10,
            pages: 3,
            pblk: 100,
        };
        assert_eq!(writepage(k, &mut open, 13, 103, 3), Some(full));
        // Not contiguous on disk: the same.
        let one = PageRun {
            first: 13,
            pages: 1,
            pblk: 103,
        };
        assert_eq!(writepage(k, &mut open, 14, 200, 3), Some(one));
        assert_eq!(
            open,
            Some(PageRun {
                first: 14,
                pages: 1,
                pblk: 200
            })
        );
    }

    /// `writepage_extent` returns the bios and leaves the open bio as
    /// `writepage` on each page in turn does.
    #[test]
    fn extents_grow_bios_as_page_by_page() {
        let mut rng = iostack_des::Rng::stream(iostack_des::Seed(1), "writepage-extent");
        for _ in 0..2000 {
            let kind = [
                WritepageKind::Mpage,
                WritepageKind::XfsCluster,
                WritepageKind::PerBuffer,
            ][rng.below(3) as usize];
            let max = 1 + rng.below(9);
            let (mut a, mut b) = (None, None);
            let (mut by_page, mut by_run) = (Vec::new(), Vec::new());
            let (mut page, mut pblk) = (rng.below(5), rng.below(5));
            for _ in 0..rng.below(6) {
                let n = 1 + rng.below(20);
                for i in 0..n {
                    by_page.extend(writepage(kind, &mut a, page + i, pblk + i, max));
                }
                writepage_extent(kind, &mut b, (page, n, pblk), max, &mut |r| by_run.push(r));
                page += n + rng.below(2);
                pblk += n + rng.below(2) * rng.below(30);
            }
            assert_eq!((by_page, a), (by_run, b));
        }
    }

    #[test]
    fn per_buffer_writers_submit_every_page() {
        let mut open = None;
        let r = writepage(WritepageKind::PerBuffer, &mut open, 5, 50, 64);
        assert_eq!(r.map(|r| (r.first, r.pages, r.pblk)), Some((5, 1, 50)));
        assert_eq!(open, None);
    }
}
