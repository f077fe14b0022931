//! The state of a writeback caller: the arguments of a pass
//! (`struct writeback_control`), one resumable `write_cache_pages` call, the job
//! a task runs (`writeback_inodes` or one mapping for fsync), the flusher's
//! state between passes and a throttled dirtier's `balance_dirty_pages`.

use iostack_core::TaskId;
use iostack_des::{Duration, Instant};

/// Pages written by one bio: first page, pages, first block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRun {
    pub first: u64,
    pub pages: u64,
    pub pblk: u64,
}

/// What the simulation carries out after a writeback step, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WbAction {
    /// Queue write bios for a run of pages of `map` on the caller's queue.
    Write { map: u32, run: PageRun },
    /// Queue one single-page write bio for each page of the run, in order,
    /// at the blocks that follow `run.pblk` (`block_write_full_page`: one
    /// `submit_bh` per buffer, the buffers of a run of pages one after
    /// another on disk). The same bios as one `Write` per page.
    WriteEach { map: u32, run: PageRun },
    /// Wake a task (a `lock_page` waiter whose page was unlocked).
    Wake(TaskId),
}

/// The arguments of one writeback pass (`struct writeback_control`).
#[derive(Clone, Copy, Debug)]
pub struct Wbc {
    pub nr_to_write: i64,
    pub nonblocking: bool,
    pub sync_all: bool,
    pub older_than: Option<Instant>,
    pub range_cyclic: bool,
    pub only_map: Option<u32>,
    pub encountered_congestion: bool,
    pub more_io: bool,
    pub written: u64,
}

impl Wbc {
    /// `filemap_write_and_wait` of one mapping (fsync, fdatasync):
    /// `WB_SYNC_ALL` over the whole file, no page quota.
    pub fn for_fsync(map: u32) -> Wbc {
        Wbc {
            nr_to_write: i64::MAX,
            nonblocking: false,
            sync_all: true,
            older_than: None,
            range_cyclic: false,
            only_map: Some(map),
            encountered_congestion: false,
            more_io: false,
            written: 0,
        }
    }

    /// `filemap_flush` of one mapping (`__filemap_fdatawrite` with
    /// `WB_SYNC_NONE`, `nr_to_write = mapping->nrpages * 2`): start writeback of
    /// the file's dirty pages without waiting for them, as `POSIX_FADV_DONTNEED`
    /// does before dropping the cache.
    pub fn for_flush(map: u32, nrpages: u64) -> Wbc {
        Wbc {
            nr_to_write: i64::try_from(nrpages.saturating_mul(2)).unwrap_or(i64::MAX),
            sync_all: false,
            ..Wbc::for_fsync(map)
        }
    }

    /// A `range_cyclic` pass of `nr` pages (background, kupdate, or a throttled
    /// dirtier's chunk); `nonblocking` gives up on a congested queue.
    pub fn cyclic(nr: u64, nonblocking: bool) -> Wbc {
        Wbc {
            nr_to_write: nr as i64,
            nonblocking,
            sync_all: false,
            older_than: None,
            range_cyclic: true,
            only_map: None,
            encountered_congestion: false,
            more_io: false,
            written: 0,
        }
    }
}

/// One `write_cache_pages` call on one mapping, resumable between pagevecs
/// (`Vm::wcp_step`). `bio`, `ext`, `io_done`, `extent_tail`, `mpd_written`,
/// `da_start`, `da_written`, `cluster` and `skipped` are the file system's
/// `data` (`struct mpage_data`, `struct mpage_da_data`, XFS's cluster), kept
/// here for it and used only by its `Writepages`.
#[derive(Clone, Debug)]
pub struct Wcp {
    pub map: u32,
    pub index: u64,
    pub end: u64,
    pub start: u64,
    pub scanned: bool,
    pub cycled: bool,
    pub done: bool,
    pub done_index: u64,
    pub owns_isync: bool,
    /// The open bio of a multi-page writer: (first page, pages, first block).
    pub bio: Option<PageRun>,
    /// ext4: the extent of delalloc pages being collected (`mpd.first_page`,
    /// `mpd.next_page`), whether it was written (`io_done`), pages written.
    pub ext: Option<(u64, u64)>,
    pub io_done: bool,
    /// `__mpage_da_writepage` returned `MPAGE_DA_EXTENT_TAIL`: the extent ended
    /// inside a pagevec and the rest of that pagevec was redirtied.
    pub extent_tail: bool,
    pub mpd_written: u64,
    /// ext4 `ext4_da_writepages`: the cursor it started from and what it wrote.
    pub da_start: u64,
    pub da_written: u64,
    /// The pagevec being worked through, and the next entry.
    pub pvec: Vec<u64>,
    pub pvec_pos: usize,
    /// XFS `xfs_cluster_write`: the next page the cluster will probe.
    pub cluster: Option<u64>,
    /// `lock_page` on a page another caller holds in its extent: the caller
    /// sleeps until that extent is written, then looks at the page again.
    pub lock_wait: Option<u64>,
    /// ext4: dirty pages this `ext4_da_writepages` call passed over without
    /// writing (`redirty_page_for_writepage` after an extent was submitted,
    /// counted in `wbc->pages_skipped`), carried across its restarts.
    pub skipped: u64,
}

/// A writeback job a task runs: `writeback_inodes` (or one mapping for fsync).
#[derive(Debug)]
pub struct WbJob {
    pub wbc: Wbc,
    /// Boxed: the job moves in and out of its task at every step.
    pub cur: Option<Box<Wcp>>,
    pub queued: bool,
    /// This pass already met the inodes another task was writing.
    pub saw_locked: bool,
}

impl WbJob {
    pub fn new(wbc: Wbc) -> WbJob {
        WbJob {
            wbc,
            cur: None,
            queued: false,
            saw_locked: false,
        }
    }
}

/// What a writeback step asks of its task.
pub enum WbStep {
    Continue(Duration),
    Sleep,
    Finished,
}

/// What the flusher thread is doing.
#[derive(Debug)]
pub enum FlusherState {
    Idle,
    /// A background (`for_background`) or kupdate (`for_kupdate`) pass.
    Running {
        kupdate: bool,
        job: Box<WbJob>,
        /// kupdate: pages left to write this wakeup.
        budget: i64,
    },
    /// In `congestion_wait` between passes.
    Waiting {
        kupdate: bool,
        budget: i64,
    },
}

/// A throttled dirtier's `balance_dirty_pages` state.
#[derive(Debug)]
pub struct Throttle {
    pub write_chunk: u64,
    pub pages_written: u64,
    pub job: Option<WbJob>,
}
