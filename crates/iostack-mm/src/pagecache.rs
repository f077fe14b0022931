//! The machine's page cache as writeback sees it (`mm/filemap.c`,
//! `fs/fs-writeback.c`): every mapping, the global dirty and writeback counters,
//! the LRU that reclaim scans, the dirty-inode lists (`b_dirty`, `b_io`,
//! `b_more_io`) with their `I_SYNC` holders, the flusher thread's state, and the
//! tasks waiting on pages, on writeback or in `congestion_wait`.

use crate::wbc::{FlusherState, WbAction};
use crate::writeback::DirtyLimits;
use crate::AddressSpace;
use iostack_core::{Slab, TaskId};
use iostack_des::{Duration, Instant};
use std::collections::{BTreeMap, VecDeque};

/// The inode number standing for the mounted file system's block device
/// (mapping 0).
pub const BDEV_INO: u32 = u32::MAX;
/// The inode number standing for the whole disk when the file system is on a
/// partition.
pub const DISK_INO: u32 = u32::MAX - 1;

/// Is this mapping a block device's own page cache?
pub fn is_bdev(ino: u32) -> bool {
    ino >= DISK_INO
}

/// A page-cache bio in flight, or a run of `bios` equal ones over the pages
/// (`iostack_block::BioRun`), of which `left` pages have not completed.
#[derive(Clone, Copy, Debug)]
pub struct BufBio {
    pub map: u32,
    pub first: u64,
    pub pages: u64,
    pub write: bool,
    pub bios: u32,
    pub left: u64,
}

/// Variant switches and limits, resolved from tunables once.
#[derive(Clone, Debug)]
pub struct VmConfig {
    pub flusher_only_index: bool,
    pub io_less: bool,
    pub pdflush: bool,
    pub write_locked_inodes: bool,
    pub ext4_index_pages_written: bool,
    /// 2.6.29+ `write_cache_pages`: stop inside the pagevec when done and keep
    /// `done_index`; 2.6.28 finishes the pagevec and keeps `index`.
    pub wcp_break: bool,
    pub expire: Duration,
    pub interval: Duration,
    /// 2.4's `get_max_readahead` (`queue/max_readahead`), in pages.
    pub max_readahead24: u64,
    pub ra_pages: u64,
    pub copy_page_ns: u64,
    pub wb_page_ns: u64,
    pub mem_pages: u64,
    pub limits: DirtyLimits,
    pub ratelimit: u64,
    pub v2632_chunk: bool,
    /// 2.4's buffer cache, written back by bdflush and kupdate instead of
    /// pdflush (`crate::bdflush`); `None` on 2.6 and later.
    pub bdflush: Option<crate::bdflush::BdflushConfig>,
}

/// Pages written back: the files' pages by who sent them, the split the seed 001
/// post argues about (the flusher against throttled dirtiers on one inode), and
/// the block device's own pages (metadata written through its page cache, such
/// as zeroed inode tables) by anyone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WbPages {
    /// File pages sent by the flusher (pdflush or the per-bdi thread).
    pub flusher: u64,
    /// File pages sent by a writer itself, in `balance_dirty_pages` or `fsync`.
    pub dirtier: u64,
    /// File pages sent by a file system's kernel thread throttled as a dirtier.
    pub kthread: u64,
    /// Pages of the block device's mapping, by any caller.
    pub bdev: u64,
}

/// The page cache and writeback state of the machine.
pub struct Vm {
    pub cfg: VmConfig,
    pub maps: Vec<AddressSpace>,
    /// Inode number of each mapping (`BDEV_INO`, `DISK_INO` for block devices).
    pub map_ino: Vec<u32>,
    pub by_ino: BTreeMap<u32, u32>,
    pub bufbios: Slab<BufBio>,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    pub nr_cached: u64,
    pub lru: VecDeque<(u32, u64, u64)>,
    pub dirty_exceeded: bool,
    /// Dirty inodes in `dirtied_when` order (`b_dirty`), and the lists a pass
    /// works from (`b_io`, `b_more_io`).
    pub b_dirty: VecDeque<u32>,
    pub b_io: VecDeque<u32>,
    pub b_more_io: VecDeque<u32>,
    /// `I_SYNC` holder of each mapping.
    pub i_sync: Vec<Option<TaskId>>,
    /// Mappings under `I_SYNC`: they stay on `b_io` while written
    /// (`__sync_single_inode` moves them only when done), so other passes meet them.
    pub syncing: Vec<u32>,
    /// What the flusher thread is doing.
    pub flusher_state: FlusherState,
    /// Tasks in `congestion_wait`, with their timeout.
    pub congestion_waiters: Vec<(TaskId, Instant)>,
    /// Tasks waiting for a page to be read: (task, map, page).
    pub page_waiters: Vec<(TaskId, u32, u64)>,
    /// Tasks waiting for a mapping's writeback to finish (fsync).
    pub wb_waiters: Vec<(TaskId, u32)>,
    /// ext4 pages redirtied because their extent was only partly mapped.
    pub ext4_redirtied: u64,
    /// Tasks in `lock_page` on a page held in another caller's extent:
    /// (task, map, page).
    pub lock_waiters: Vec<(TaskId, u32, u64)>,
    /// How many times a writeback caller waited for such a page.
    pub lock_waits: u64,
    /// The open extents of writeback callers, whose pages they hold locked:
    /// (task, map, first page, next page).
    pub wb_extents: Vec<(TaskId, u32, u64, u64)>,
    /// What the last writeback step asks the simulation to carry out.
    pub wb_out: Vec<WbAction>,
    /// Pages sent to the disk by writeback, by who sent them.
    pub wb_pages: WbPages,
    /// 2.4's dirty buffer list, when the kernel has one.
    pub buffers: Option<crate::bdflush::BufferLru>,
}

impl Vm {
    pub fn new(cfg: VmConfig) -> Vm {
        let buffers = cfg.bdflush.map(crate::bdflush::BufferLru::new);
        let mut vm = Vm {
            cfg,
            maps: Vec::new(),
            map_ino: Vec::new(),
            by_ino: BTreeMap::new(),
            bufbios: Slab::new("page-cache bio"),
            nr_dirty: 0,
            nr_writeback: 0,
            nr_cached: 0,
            lru: VecDeque::new(),
            dirty_exceeded: false,
            b_dirty: VecDeque::new(),
            b_io: VecDeque::new(),
            b_more_io: VecDeque::new(),
            i_sync: Vec::new(),
            syncing: Vec::new(),
            flusher_state: FlusherState::Idle,
            congestion_waiters: Vec::new(),
            page_waiters: Vec::new(),
            wb_waiters: Vec::new(),
            ext4_redirtied: 0,
            lock_waiters: Vec::new(),
            lock_waits: 0,
            wb_extents: Vec::new(),
            wb_out: Vec::new(),
            wb_pages: WbPages::default(),
            buffers,
        };
        // Mapping 0 is the block device's inode.
        vm.maps.push(AddressSpace::new(0, u64::MAX / 2));
        vm.map_ino.push(BDEV_INO);
        vm.i_sync.push(None);
        vm
    }

    /// The mapping of a file, created on first use.
    pub fn map_of(&mut self, ino: u32, size_pages: u64) -> u32 {
        if let Some(&m) = self.by_ino.get(&ino) {
            return m;
        }
        let m = self.maps.len() as u32;
        self.maps.push(AddressSpace::new(ino, size_pages));
        self.map_ino.push(ino);
        self.i_sync.push(None);
        self.by_ino.insert(ino, m);
        m
    }

    /// Pages dirtied in a mapping: global counters and the dirty inode list
    /// (`__mark_inode_dirty` puts a newly dirty inode at the tail of `b_dirty`).
    pub fn account_dirtied(&mut self, map: u32, newly: u64, now: Instant) {
        self.nr_dirty += newly;
        let m = &mut self.maps[map as usize];
        if newly > 0 && m.dirtied_when.is_none() {
            m.dirtied_when = Some(now);
        }
        if newly > 0 && !self.on_lists(map) {
            self.maps[map as usize].dirtied_when = Some(now);
            self.b_dirty.push_back(map);
        }
    }

    pub fn on_lists(&self, map: u32) -> bool {
        self.b_dirty.contains(&map) || self.b_io.contains(&map) || self.b_more_io.contains(&map)
    }

    /// `invalidate_mapping_pages(mapping, start, end)` (mm/truncate.c), as
    /// `POSIX_FADV_DONTNEED` and `invalidate_bdev` call it: drop the pages of
    /// `[first, end)` that are clean, not under writeback and not locked; the
    /// others stay. Returns the pages dropped. Their LRU runs stay queued and
    /// free nothing when reclaim reaches them.
    pub fn invalidate_mapping_pages(&mut self, map: u32, first: u64, end: u64) -> u64 {
        let n = end.saturating_sub(first);
        let freed = self.maps[map as usize].reclaim(first, n);
        self.nr_cached -= freed;
        freed
    }

    pub fn note_cached(&mut self, map: u32, first: u64, n: u64) {
        self.nr_cached += n;
        self.lru.push_back((map, first, n));
    }

    /// `shrink_inactive_list` stand-in: free clean pages from the oldest cached runs
    /// until the cache fits in memory again (dirty and writeback pages are skipped
    /// and their runs rotated, as reclaim would activate them).
    pub fn reclaim(&mut self) {
        let high = self.cfg.mem_pages - self.cfg.mem_pages / 10;
        if self.nr_cached <= high {
            return;
        }
        let low = self.cfg.mem_pages - self.cfg.mem_pages / 8;
        // Scan a bounded batch per call, as shrink_zone does per priority pass.
        let mut budget = self.lru.len().min(256);
        while self.nr_cached > low && budget > 0 {
            budget -= 1;
            let Some((map, first, n)) = self.lru.pop_front() else {
                break;
            };
            let m = &mut self.maps[map as usize];
            let freed = m.reclaim(first, n);
            self.nr_cached -= freed;
            if m.present.count_range(first, n) > 0 {
                self.lru.push_back((map, first, n));
            }
        }
    }

    /// `queue_io`: move `b_more_io`, then the expired part of `b_dirty`, to `b_io`.
    pub fn queue_io(&mut self, older_than: Option<Instant>) {
        while let Some(m) = self.b_more_io.pop_front() {
            self.b_io.push_back(m);
        }
        while let Some(&m) = self.b_dirty.front() {
            let when = self.maps[m as usize].dirtied_when.unwrap_or(Instant::ZERO);
            if let Some(t) = older_than {
                if when > t {
                    break;
                }
            }
            self.b_dirty.pop_front();
            self.b_io.push_back(m);
        }
    }

    /// `clear_page_dirty_for_io` + `set_page_writeback`.
    pub fn take_page(&mut self, map: usize, page: u64) {
        let m = &mut self.maps[map];
        if m.dirty.clear(page) {
            self.nr_dirty -= 1;
        }
        if m.writeback.set(page) {
            self.nr_writeback += 1;
        }
    }

    /// `take_page` on each page of `[first, first + n)`.
    pub fn take_pages(&mut self, map: usize, first: u64, n: u64) {
        let m = &mut self.maps[map];
        self.nr_dirty -= m.dirty.clear_range(first, n);
        self.nr_writeback += m.writeback.set_range(first, n);
    }

    /// `redirty_page_for_writepage` on pages taken by `take_page` whose write did
    /// not start: dirty again, no longer under writeback.
    pub fn redirty_pages(&mut self, map: usize, first: u64, end: u64) {
        let m = &mut self.maps[map];
        let n = end.saturating_sub(first);
        self.nr_writeback -= m.writeback.clear_range(first, n);
        self.nr_dirty += m.dirty.set_range(first, n);
    }
}
