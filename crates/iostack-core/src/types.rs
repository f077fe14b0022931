//! Basic block-layer types.

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
