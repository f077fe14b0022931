//! Basic block-layer types, and the names of tasks and bio owners.

use crate::profile::Profile;

/// A 512-byte sector number.
pub type Sector = u64;
pub const SECTOR_SHIFT: u32 = 9;
pub const SECTOR_SIZE: u64 = 512;

/// A device number as the kernel's blktrace stores it: `major << 20 | minor`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct DevT {
    pub major: u32,
    pub minor: u32,
}

impl DevT {
    pub const fn new(major: u32, minor: u32) -> Self {
        DevT { major, minor }
    }
    /// Kernel-internal encoding (MINORBITS = 20), as in `struct blk_io_trace.device`.
    pub fn kernel_dev_t(self) -> u32 {
        (self.major << 20) | self.minor
    }
}

/// Flags carried by a bio and copied onto its request (`init_request_from_bio`).
///
/// The names are the 2.6.36 `REQ_*` names. `WRITE` marks the data direction; the
/// rest are the modifiers the schedulers and blktrace look at. `FLUSH` is
/// 2.6.37's `REQ_FLUSH` and, before it, `REQ_HARDBARRIER` (2.6.28-2.6.36
/// barriers, which blktrace logs in the same category bit); `FUA` is `REQ_FUA`.
/// Which flags a path sets depends on the kernel: see [`ReqFlags::writeback`]
/// and [`ReqFlags::WRITE_FLUSH`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub struct ReqFlags(pub u32);

impl ReqFlags {
    pub const WRITE: ReqFlags = ReqFlags(1 << 0);
    /// `REQ_SYNC` (`BIO_RW_SYNCIO` before 2.6.36).
    pub const SYNC: ReqFlags = ReqFlags(1 << 1);
    /// `REQ_NOIDLE`: tell the scheduler not to anticipate more I/O.
    pub const NOIDLE: ReqFlags = ReqFlags(1 << 2);
    /// `REQ_UNPLUG` (`BIO_RW_UNPLUG`): unplug the queue after this bio.
    pub const UNPLUG: ReqFlags = ReqFlags(1 << 3);
    pub const META: ReqFlags = ReqFlags(1 << 4);
    /// Read-ahead (`BIO_RW_AHEAD`).
    pub const AHEAD: ReqFlags = ReqFlags(1 << 5);
    pub const FUA: ReqFlags = ReqFlags(1 << 6);
    pub const FLUSH: ReqFlags = ReqFlags(1 << 7);
    pub const DISCARD: ReqFlags = ReqFlags(1 << 8);
    /// `REQ_NOMERGE`: never merge into this request again.
    pub const NOMERGE: ReqFlags = ReqFlags(1 << 9);
    /// `REQ_IDLE` (4.10+, blk-mq profiles): O_DIRECT writes
    /// (`dio_bio_write_op`, iomap's `REQ_SYNC | REQ_IDLE`) and jbd2's log
    /// writes; wbt does not throttle a write with both (`wbt_should_throttle`).
    /// blktrace records no letter for it.
    pub const IDLE: ReqFlags = ReqFlags(1 << 10);
    /// `REQ_BACKGROUND` (4.10+): writeback of a `for_background` pass
    /// (`wbc_to_write_flags`); wbt limits it to `wb_background`. No letter.
    pub const BACKGROUND: ReqFlags = ReqFlags(1 << 11);

    pub const NONE: ReqFlags = ReqFlags(0);
    pub const READ: ReqFlags = ReqFlags(0);

    /// `WRITE_FLUSH` (2.6.37+, `blkdev_issue_flush`): an empty write asking for a
    /// cache flush. 2.6.28-2.6.36 issue the same bio as `WRITE_BARRIER`.
    pub const WRITE_FLUSH: ReqFlags = ReqFlags(
        ReqFlags::WRITE.0
            | ReqFlags::SYNC.0
            | ReqFlags::NOIDLE.0
            | ReqFlags::UNPLUG.0
            | ReqFlags::FLUSH.0,
    );

    pub const fn union(self, o: ReqFlags) -> ReqFlags {
        ReqFlags(self.0 | o.0)
    }
    pub fn contains(self, o: ReqFlags) -> bool {
        self.0 & o.0 == o.0
    }
    pub fn is_write(self) -> bool {
        self.contains(ReqFlags::WRITE)
    }
    /// `rw_is_sync`: every read, or a write with `REQ_SYNC`.
    pub fn is_sync(self) -> bool {
        !self.is_write() || self.contains(ReqFlags::SYNC)
    }
    pub fn remove(self, o: ReqFlags) -> ReqFlags {
        ReqFlags(self.0 & !o.0)
    }
    pub fn intersect(self, o: ReqFlags) -> ReqFlags {
        ReqFlags(self.0 & o.0)
    }
    /// Whether the bio or request asks for a cache flush or forced unit access
    /// (it goes through `blk-flush.c` or the barrier sequence).
    pub fn is_flush_or_fua(self) -> bool {
        self.0 & (ReqFlags::FLUSH.0 | ReqFlags::FUA.0) != 0
    }

    /// The `rw` of a page-cache writeback bio in `profile`: `WRITE` for
    /// `WB_SYNC_NONE`; for data-integrity writeback (`WB_SYNC_ALL`, fsync) what
    /// each `->writepage` path passes:
    /// * `__block_write_full_page` (ext3, ext4, the block device) and XFS's
    ///   `xfs_submit_ioend_bio`: `WRITE` in 2.6.28; `WRITE_SYNC_PLUG`
    ///   (`SYNC|NOIDLE`, no unplug) from 2.6.30 to 2.6.38; `WRITE_SYNC`
    ///   (`SYNC|NOIDLE`) in 3.x (ext4's `ext4_bio_write_page` too);
    ///   `wbc_to_write_flags` = `REQ_SYNC` in 4.10+.
    /// * `__mpage_writepage` (ext2): `WRITE` until "fs/mpage.c: forgotten
    ///   WRITE_SYNC in case of data integrity write" (3.16), then as above.
    pub fn writeback(profile: Profile, sync_all: bool, mpage: bool) -> ReqFlags {
        let w = ReqFlags::WRITE;
        if !sync_all {
            return w;
        }
        match profile {
            Profile::V2_4 | Profile::V2_6_28 => w,
            Profile::V2_6_32 | Profile::V2_6_33 | Profile::V2_6_37 | Profile::V3_10 if mpage => w,
            Profile::V2_6_32 | Profile::V2_6_33 | Profile::V2_6_37 | Profile::V3_10 => {
                w | ReqFlags::SYNC | ReqFlags::NOIDLE
            }
            Profile::V6 => w | ReqFlags::SYNC,
        }
    }

    /// The `rw` of a buffered read's bios: `READ` through `mpage_readpages` up to
    /// 3.x; `mpage_readahead`/`ext4_mpage_readpages` mark readahead `REQ_RAHEAD`
    /// (5.8+), and every page-cache read of the simulator comes from readahead.
    pub fn readahead(profile: Profile) -> ReqFlags {
        if profile >= Profile::V6 {
            ReqFlags::AHEAD
        } else {
            ReqFlags::READ
        }
    }
}

impl std::ops::BitOr for ReqFlags {
    type Output = ReqFlags;
    fn bitor(self, o: ReqFlags) -> ReqFlags {
        self.union(o)
    }
}

/// A schedulable task of the simulated machine: a process or a kernel thread
/// (`struct task_struct`), named by its index in the simulation's task table.
/// Layers below the simulation use it to say whose bio, plug or sleep it is.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct TaskId(pub u32);

/// What a bio's completion goes back to (`bi_end_io` with its `bi_private`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum EndIo {
    /// `dio_bio_end_io`: one of the submitter's direct-I/O slots.
    DirectIo { slot: u32 },
    /// `mpage_end_io` / `end_buffer_async_*`: a page-cache bio (its index in the
    /// page cache's table of bios in flight).
    PageCache { bio: u32 },
    /// `journal_end_buffer_io_sync` / `bio_end_empty_barrier`: a journal
    /// block or cache flush the journal code (or fsync) waits for; no page
    /// cache state.
    Journal,
    /// 2.4's `end_buffer_io_sync`: a metadata buffer written by `ll_rw_block`
    /// that its submitter waits for (`wait_on_buffer`); no page-cache state.
    SyncBuffer,
    /// 2.4's `end_buffer_io_sync` of a metadata buffer that bdflush, kupdated
    /// or a writer's `balance_dirty` wrote: the buffer is unlocked, nobody
    /// waits for it.
    AsyncBuffer,
    /// `xlog_iodone`: an XFS iclog write of log context `ctx`; the log force's
    /// waiters go on when their context is on disk.
    XfsLog { ctx: u64 },
}

/// The owner of a bio: the task that submitted it (woken when it slept in
/// `get_request_wait`) and where its completion goes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct BioOwner {
    pub task: TaskId,
    pub end_io: EndIo,
}
