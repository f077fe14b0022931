//! 2.4's buffer-cache writeback (`fs/buffer.c` of 2.4.4, the seed-004 kernel):
//! the dirty buffer list `lru_list[BUF_DIRTY]` in the order buffers were first
//! dirtied, each with its `b_flushtime`; `balance_dirty_state` against the
//! `nfract`/`nfract_sync` shares of `nr_free_buffer_pages`; and
//! `flush_dirty_buffers`, the walk that `bdflush` (up to `ndirty` buffers per
//! pass), `kupdate` (`sync_old_buffers`: every buffer whose `b_flushtime` has
//! passed) and a writer over `nfract_sync` (`wakeup_bdflush(1)`) all run.
//!
//! Sans-IO like the rest of mm: a walk takes the pages it writes (dirty →
//! under writeback, as `ll_rw_block` locks the buffer and clears its dirty bit)
//! and returns them as runs of pages for the caller to submit, one buffer head
//! per file-system block; the tasks that run the walks are the simulation's.
//! A file-system block is a buffer; data buffers live in page-cache pages
//! (2.4 `block_prepare_write` / `generic_commit_write` mark the page's buffers
//! dirty, not the page), so the list holds page indexes and counts
//! `buffers_per_page` buffers for each.

use crate::pagecache::Vm;
use iostack_des::{Duration, Instant};
use std::collections::{BTreeMap, VecDeque};

/// `/proc/sys/vm/bdflush` (`bdf_prm` of 2.4.4's `fs/buffer.c`), resolved from
/// the tunables, and the machine numbers its thresholds are taken of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BdflushConfig {
    /// Percentage of buffer memory dirty that activates bdflush.
    pub nfract: u64,
    /// Maximum number of dirty buffers bdflush writes per wake-cycle.
    pub ndirty: u64,
    /// Percentage of buffer memory dirty that makes a dirtier flush itself.
    pub nfract_sync: u64,
    /// kupdate's period (`interval`); zero stops kupdate.
    pub interval: Duration,
    /// Age a dirty buffer reaches before kupdate writes it (`age_buffer`).
    pub age_buffer: Duration,
    /// File-system blocks (buffer heads) per page.
    pub buffers_per_page: u64,
    /// `nr_free_buffer_pages()`, in pages (see `Vm::balance_dirty_state`).
    pub buffer_pages: u64,
}

/// `balance_dirty_state`: -1, 0 or 1 in the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DirtyState {
    /// Under `nfract`: nothing to do.
    Under,
    /// Over `nfract`: wake bdflush (asynchronous flush).
    Async,
    /// Over `nfract_sync`: wake bdflush and flush `ndirty` buffers yourself.
    Sync,
}

/// A run of pages dirtied in one jiffy-less instant, contiguous in one mapping:
/// their buffers sit together on `lru_list[BUF_DIRTY]` with one `b_flushtime`.
/// With `meta` set it is one metadata buffer of the file-system device
/// instead: `first` is its block, `pages` 1, and `meta` holds the inode whose
/// `i_dirty_buffers` it is on (an ext2 indirect block: `ext2_alloc_branch` →
/// `mark_buffer_dirty_inode`), or `None` for one on no inode's list (block
/// bitmap, group descriptor, superblock, inode-table block).
#[derive(Clone, Copy, Debug)]
struct DirtyRun {
    seq: u64,
    map: u32,
    first: u64,
    pages: u64,
    flushtime: Instant,
    meta: Option<Option<u32>>,
}

/// One stretch of what a `flush_dirty_buffers` walk wrote, in submission order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushRun {
    /// Pages `[first, first + pages)` of mapping `map` (their data buffers).
    Pages { map: u32, first: u64, pages: u64 },
    /// One metadata buffer at `block`: an indirect block of inode `ino`, or
    /// with `ino` `None` one on no inode's list.
    Meta { ino: Option<u32>, block: u64 },
}

/// `lru_list[BUF_DIRTY]` over the data pages of the page cache. A page's entry
/// is live while `live` maps it to its run's `seq`: a page cleaned by another
/// path and dirtied again is refiled at the tail (`__mark_dirty` →
/// `refile_buffer`), and its old entry is skipped as `flush_dirty_buffers`
/// skips a buffer that is no longer dirty.
#[derive(Clone, Debug)]
pub struct BufferLru {
    pub cfg: BdflushConfig,
    runs: VecDeque<DirtyRun>,
    live: BTreeMap<(u32, u64), u64>,
    /// The dirty metadata buffers by block, each to its entry's `seq`.
    live_meta: BTreeMap<u64, u64>,
    next_seq: u64,
}

impl BufferLru {
    pub fn new(cfg: BdflushConfig) -> BufferLru {
        BufferLru {
            cfg,
            runs: VecDeque::new(),
            live: BTreeMap::new(),
            live_meta: BTreeMap::new(),
            next_seq: 0,
        }
    }

    /// Pages listed (live entries), for the invariants.
    pub fn listed(&self) -> u64 {
        self.live.len() as u64
    }

    /// Whether metadata buffer `block` is dirty (listed).
    pub fn meta_dirty(&self, block: u64) -> bool {
        self.live_meta.contains_key(&block)
    }

    /// `mark_buffer_dirty_inode` of a metadata buffer: a clean one becomes
    /// dirty with `b_flushtime = jiffies + age_buffer` and is refiled at the
    /// tail (`__mark_dirty`); one already dirty keeps its place and time.
    pub fn mark_meta_dirty(&mut self, ino: Option<u32>, block: u64, now: Instant) {
        if self.live_meta.contains_key(&block) {
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.runs.push_back(DirtyRun {
            seq,
            map: 0,
            first: block,
            pages: 1,
            flushtime: now + self.cfg.age_buffer,
            meta: Some(ino),
        });
        self.live_meta.insert(block, seq);
    }

    /// A metadata buffer written by another path (`fsync_inode_buffers`,
    /// `ll_rw_block` clears its dirty bit) or forgotten (`bforget` in
    /// `ext2_free_branches` when the file is truncated): off the dirty list.
    /// True when it was dirty.
    pub fn meta_cleaned(&mut self, block: u64) -> bool {
        self.live_meta.remove(&block).is_some()
    }

    /// The oldest listed page's `b_flushtime`.
    pub fn oldest_flushtime(&self) -> Option<Instant> {
        self.runs.front().map(|r| r.flushtime)
    }

    /// `__mark_dirty`: a buffer that was clean becomes dirty; `b_flushtime =
    /// jiffies + age_buffer` and `refile_buffer` puts it at the tail of the
    /// dirty list.
    fn mark_dirty(&mut self, map: u32, page: u64, now: Instant) {
        let flushtime = now + self.cfg.age_buffer;
        let seq = match self.runs.back_mut() {
            Some(r)
                if r.meta.is_none()
                    && r.map == map
                    && r.first + r.pages == page
                    && r.flushtime == flushtime =>
            {
                r.pages += 1;
                r.seq
            }
            _ => {
                let seq = self.next_seq;
                self.next_seq += 1;
                self.runs.push_back(DirtyRun {
                    seq,
                    map,
                    first: page,
                    pages: 1,
                    flushtime,
                    meta: None,
                });
                seq
            }
        };
        self.live.insert((map, page), seq);
    }
}

/// What one `flush_dirty_buffers` walk did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flushed {
    /// Buffers written (the kernel's `flushed`, without its overshoot by one).
    pub buffers: u64,
    /// What was written, in submission order.
    pub runs: Vec<FlushRun>,
}

impl Vm {
    /// `__block_commit_write`'s `atomic_set_buffer_dirty` on a page the write
    /// just made dirty (the caller passes only pages that were clean): the
    /// buffers join the dirty list. A no-op without 2.4's buffer cache.
    pub fn mark_buffers_dirty(&mut self, map: u32, page: u64, now: Instant) {
        if let Some(b) = self.buffers.as_mut() {
            b.mark_dirty(map, page, now);
        }
    }

    /// `balance_dirty_state` (2.4.4): the dirty buffers (`size_buffers_type
    /// [BUF_DIRTY]`, buffers being written are not counted) against
    /// `nfract`% and `nfract_sync`% of `nr_free_buffer_pages()`.
    pub fn balance_dirty_state(&self) -> DirtyState {
        let Some(b) = self.buffers.as_ref() else {
            return DirtyState::Under;
        };
        let dirty = self.nr_dirty * 100;
        let tot = b.cfg.buffer_pages;
        if dirty > tot * b.cfg.nfract {
            if dirty > tot * b.cfg.nfract_sync {
                return DirtyState::Sync;
            }
            return DirtyState::Async;
        }
        DirtyState::Under
    }

    /// `flush_dirty_buffers(check_flushtime)`: walk the dirty list from its
    /// oldest buffer and write each dirty, unlocked one (`ll_rw_block(WRITE)`),
    /// up to `ndirty` buffers, or, with `check_flushtime` (kupdate), every
    /// buffer whose `b_flushtime` has passed (the list is in time order, so the
    /// walk stops at the first young one). A page still under writeback is
    /// locked and stays on the list where it is.
    pub fn flush_dirty_buffers(&mut self, check_flushtime: bool, now: Instant) -> Flushed {
        let Some(mut b) = self.buffers.take() else {
            return Flushed::default();
        };
        let mut out = Flushed::default();
        let mut kept: Vec<DirtyRun> = Vec::new();
        'walk: while let Some(mut r) = b.runs.pop_front() {
            if check_flushtime && now < r.flushtime {
                b.runs.push_front(r);
                break;
            }
            if let Some(ino) = r.meta {
                if !check_flushtime && out.buffers + 1 > b.cfg.ndirty {
                    b.runs.push_front(r);
                    break 'walk;
                }
                if b.live_meta.get(&r.first) == Some(&r.seq) {
                    b.live_meta.remove(&r.first);
                    out.buffers += 1;
                    out.runs.push(FlushRun::Meta {
                        ino,
                        block: r.first,
                    });
                }
                continue;
            }
            while r.pages > 0 {
                if !check_flushtime && out.buffers + b.cfg.buffers_per_page > b.cfg.ndirty {
                    b.runs.push_front(r);
                    break 'walk;
                }
                let (map, page) = (r.map, r.first);
                r.first += 1;
                r.pages -= 1;
                if b.live.get(&(map, page)) != Some(&r.seq) {
                    continue;
                }
                let m = &self.maps[map as usize];
                if !m.dirty.get(page) {
                    b.live.remove(&(map, page));
                    continue;
                }
                if m.writeback.get(page) {
                    kept.push(DirtyRun {
                        first: page,
                        pages: 1,
                        ..r
                    });
                    continue;
                }
                b.live.remove(&(map, page));
                self.take_page(map as usize, page);
                out.buffers += b.cfg.buffers_per_page;
                push_page(&mut out.runs, map, page);
            }
        }
        for r in kept.into_iter().rev() {
            b.runs.push_front(r);
        }
        self.buffers = Some(b);
        out
    }
}

/// Append a page to the runs written, extending the last run when contiguous.
impl Vm {
    /// `fsync_inode_data_buffers` (the o_direct patch's `fs/buffer.c`, merged
    /// in 2.4.10) on mapping `map`: its dirty data buffers,
    /// `inode->i_dirty_data_buffers`, which `buffer_insert_inode_data_queue`
    /// keeps newest first (`list_add` at the head, a re-dirtied buffer moved
    /// there), each written with `ll_rw_block(WRITE)` in that order. Returns
    /// the pages taken (dirty → under writeback), newest first. A page under
    /// writeback is locked: `ll_rw_block` skips it (it stays dirty and
    /// listed) and the caller's wait covers it.
    pub fn take_inode_data24(&mut self, map: u32) -> Vec<u64> {
        let Some(mut b) = self.buffers.take() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for r in b.runs.iter().rev() {
            if r.meta.is_some() || r.map != map {
                continue;
            }
            for page in (r.first..r.first + r.pages).rev() {
                if b.live.get(&(map, page)) != Some(&r.seq) {
                    continue;
                }
                let m = &self.maps[map as usize];
                if !m.dirty.get(page) {
                    b.live.remove(&(map, page));
                    continue;
                }
                if m.writeback.get(page) {
                    continue;
                }
                b.live.remove(&(map, page));
                self.take_page(map as usize, page);
                out.push(page);
            }
        }
        self.buffers = Some(b);
        out
    }
}

fn push_page(runs: &mut Vec<FlushRun>, map: u32, page: u64) {
    match runs.last_mut() {
        Some(FlushRun::Pages {
            map: m,
            first,
            pages,
        }) if *m == map && *first + *pages == page => *pages += 1,
        _ => runs.push(FlushRun::Pages {
            map,
            first: page,
            pages: 1,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bdp::tests::vm;

    const AGE: Duration = Duration(30_000_000_000);

    fn vm24(ndirty: u64) -> Vm {
        let mut vm = vm(false);
        vm.buffers = Some(BufferLru::new(BdflushConfig {
            nfract: 30,
            ndirty,
            nfract_sync: 60,
            interval: Duration(5_000_000_000),
            age_buffer: AGE,
            buffers_per_page: 1,
            buffer_pages: 1000,
        }));
        vm.map_of(7, 10_000);
        vm
    }

    fn pages(v: &[(u32, u64, u64)]) -> Vec<FlushRun> {
        v.iter()
            .map(|&(map, first, pages)| FlushRun::Pages { map, first, pages })
            .collect()
    }

    fn dirty(vm: &mut Vm, first: u64, n: u64, now: Instant) {
        for p in first..first + n {
            let newly = vm.maps[1].write_pages(p, 1, now);
            vm.account_dirtied(1, newly, now);
            if newly > 0 {
                vm.mark_buffers_dirty(1, p, now);
            }
        }
    }

    #[test]
    fn states_follow_nfract_and_nfract_sync() {
        let mut vm = vm24(64);
        dirty(&mut vm, 0, 300, Instant::ZERO);
        assert_eq!(
            vm.balance_dirty_state(),
            DirtyState::Under,
            "30% is not over"
        );
        dirty(&mut vm, 300, 1, Instant::ZERO);
        assert_eq!(vm.balance_dirty_state(), DirtyState::Async);
        dirty(&mut vm, 301, 299, Instant::ZERO);
        assert_eq!(
            vm.balance_dirty_state(),
            DirtyState::Async,
            "60% is not over"
        );
        dirty(&mut vm, 600, 1, Instant::ZERO);
        assert_eq!(vm.balance_dirty_state(), DirtyState::Sync);
    }

    /// fsync_inode_data_buffers walks i_dirty_data_buffers from its head:
    /// the buffer dirtied last first, a page written back and dirtied again
    /// counted by its new dirtying; a page under writeback is skipped.
    #[test]
    fn fsync_inode_data_buffers_writes_newest_first() {
        let mut vm = vm24(64);
        dirty(&mut vm, 500, 4, Instant::ZERO);
        dirty(&mut vm, 0, 3, Instant(1));
        // Page 501 written back by bdflush, then dirtied again.
        vm.take_page(1, 501);
        vm.maps[1].writeback.clear(501);
        vm.nr_writeback -= 1;
        dirty(&mut vm, 501, 1, Instant(2));
        // Page 502 under writeback.
        vm.take_page(1, 502);
        let got = vm.take_inode_data24(1);
        assert_eq!(got, vec![501, 2, 1, 0, 503, 500]);
        assert_eq!((vm.nr_dirty, vm.nr_writeback), (0, 7));
        assert!(vm.flush_dirty_buffers(false, Instant(3)).runs.is_empty());
    }

    #[test]
    fn bdflush_writes_ndirty_oldest_first() {
        let mut vm = vm24(64);
        dirty(&mut vm, 500, 10, Instant::ZERO);
        dirty(&mut vm, 0, 100, Instant(1));
        let f = vm.flush_dirty_buffers(false, Instant(2));
        assert_eq!(f.buffers, 64);
        assert_eq!(f.runs, pages(&[(1, 500, 10), (1, 0, 54)]));
        assert_eq!((vm.nr_dirty, vm.nr_writeback), (46, 64));
        let f = vm.flush_dirty_buffers(false, Instant(2));
        assert_eq!(f.runs, pages(&[(1, 54, 46)]));
        assert_eq!(vm.buffers.as_ref().unwrap().listed(), 0);
    }

    #[test]
    fn kupdate_writes_only_buffers_older_than_age_buffer() {
        let mut vm = vm24(4);
        dirty(&mut vm, 0, 8, Instant::ZERO);
        dirty(&mut vm, 8, 8, Instant(10_000_000_000));
        assert!(vm
            .flush_dirty_buffers(true, Instant(29_999_999_999))
            .runs
            .is_empty());
        // ndirty does not bound kupdate's walk; the younger buffers wait.
        let f = vm.flush_dirty_buffers(true, Instant::ZERO + AGE);
        assert_eq!(f.runs, pages(&[(1, 0, 8)]));
        let f = vm.flush_dirty_buffers(true, Instant(40_000_000_000));
        assert_eq!(f.runs, pages(&[(1, 8, 8)]));
    }

    #[test]
    fn a_page_cleaned_and_dirtied_again_is_refiled_at_the_tail() {
        let mut vm = vm24(64);
        dirty(&mut vm, 0, 4, Instant::ZERO);
        // fsync wrote page 1 and its write completed; then it is dirtied again.
        vm.take_page(1, 1);
        vm.maps[1].writeback.clear(1);
        vm.nr_writeback -= 1;
        dirty(&mut vm, 9, 1, Instant(5));
        dirty(&mut vm, 1, 1, Instant(6));
        let f = vm.flush_dirty_buffers(false, Instant(7));
        assert_eq!(f.runs, pages(&[(1, 0, 1), (1, 2, 2), (1, 9, 1), (1, 1, 1)]));
    }

    #[test]
    fn a_page_under_writeback_stays_on_the_list() {
        let mut vm = vm24(64);
        dirty(&mut vm, 0, 3, Instant::ZERO);
        // Page 1 is being written and was dirtied again meanwhile.
        vm.maps[1].writeback.set(1);
        vm.nr_writeback += 1;
        let f = vm.flush_dirty_buffers(false, Instant(1));
        assert_eq!(f.runs, pages(&[(1, 0, 1), (1, 2, 1)]));
        vm.maps[1].writeback.clear(1);
        vm.nr_writeback -= 1;
        let f = vm.flush_dirty_buffers(false, Instant(2));
        assert_eq!(f.runs, pages(&[(1, 1, 1)]));
    }

    #[test]
    fn metadata_buffers_are_written_in_dirtying_order_among_the_pages() {
        let mut vm = vm24(64);
        let meta = |vm: &mut Vm, block: u64, now: Instant| {
            vm.buffers
                .as_mut()
                .unwrap()
                .mark_meta_dirty(Some(3), block, now);
        };
        meta(&mut vm, 900, Instant::ZERO);
        dirty(&mut vm, 0, 4, Instant::ZERO);
        // Dirtied again while dirty: keeps its place (no second write).
        meta(&mut vm, 900, Instant(1));
        meta(&mut vm, 901, Instant(1));
        dirty(&mut vm, 4, 2, Instant(1));
        let f = vm.flush_dirty_buffers(false, Instant(2));
        let meta_run = |block| FlushRun::Meta {
            ino: Some(3),
            block,
        };
        let mut want = vec![meta_run(900)];
        want.extend(pages(&[(1, 0, 4)]));
        want.push(meta_run(901));
        want.extend(pages(&[(1, 4, 2)]));
        assert_eq!(f.runs, want);
        assert_eq!(f.buffers, 8);
        // Written elsewhere (fsync) before kupdate comes: skipped.
        meta(&mut vm, 902, Instant(3));
        assert!(vm.buffers.as_mut().unwrap().meta_cleaned(902));
        // Clean, then dirtied again: a new flush time at the tail.
        meta(&mut vm, 900, Instant(10));
        assert!(vm
            .flush_dirty_buffers(true, Instant(3) + AGE)
            .runs
            .is_empty());
        let f = vm.flush_dirty_buffers(true, Instant(10) + AGE);
        assert_eq!(f.runs, vec![meta_run(900)]);
    }
}
