//! Basic block-layer types, and the names of tasks and bio owners.

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
/// rest are the modifiers the schedulers and blktrace look at.
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

    pub const NONE: ReqFlags = ReqFlags(0);
    pub const READ: ReqFlags = ReqFlags(0);

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
}

/// The owner of a bio: the task that submitted it (woken when it slept in
/// `get_request_wait`) and where its completion goes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct BioOwner {
    pub task: TaskId,
    pub end_io: EndIo,
}
