//! File systems' block mapping and the direct-I/O bio builder.
//!
//! `ext2` models the ext2/ext3 indirect-block layout and `get_block`
//! (`ext3_get_blocks_handle`), with a sequential block allocator that places each
//! indirect block just before the data it maps, as `ext3_alloc_blocks` does.
//! `dio` is `fs/direct-io.c`: it turns one O_DIRECT read or write into bios, with
//! the kernel versions' boundary handling as switchable variants.
//!
//! `extent_fs` is the interface of the file systems that allocate at writeback
//! (delayed allocation): `ext4` (with `mballoc`, the multiblock allocator) and
//! `xfs`.

pub mod blkdev_dio;
pub mod dio;
pub mod dirhash;
pub mod ext2;
pub mod ext4;
pub mod extent_fs;
pub mod ialloc;
pub mod jbd;
pub mod mballoc;
pub mod mount;
mod rawdev;
pub mod writepage;
pub mod writepages;
pub mod xfs;
pub mod xfs_log;
mod xfs_trans;

pub use extent_fs::{ExtentFs, FileExtent};

pub use rawdev::RawBdev;
mod tunables;

pub use tunables::{EXT4_JOURNAL_TUNABLES, TUNABLES, XFS_LOG_TUNABLES};

/// What `get_block` returns (`struct buffer_head` after mapping).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockMapping {
    /// First physical block, or `None` for a hole.
    pub pblk: Option<u64>,
    /// Blocks mapped (contiguous on disk), at least 1.
    pub count: u64,
    /// `BH_Boundary`: the block after this run needs a metadata read first.
    pub boundary: bool,
    /// `BH_New`: freshly allocated.
    pub new: bool,
}

/// The metadata blocks 2.4's `generic_osync_inode` writes and waits for, in
/// its two steps: `fsync_inode_buffers` (the inode's dirty buffers), then
/// `write_inode_now` (the inode-table block, when the inode needs writing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OsyncWrites {
    pub buffers: Vec<u64>,
    pub inode: Option<u64>,
}

/// A file system's block-mapping callback (`get_block_t`).
pub trait GetBlock {
    /// Block size in bits (`i_blkbits`).
    fn blkbits(&self) -> u32;
    /// Map up to `max_blocks` blocks of `ino` from logical block `lblk`; allocate
    /// if `create` and the range is a hole.
    fn get_block(
        &mut self,
        ino: u32,
        lblk: u64,
        max_blocks: u64,
        create: bool,
    ) -> Result<BlockMapping, FsError>;
    /// The file's size in bytes.
    fn i_size(&self, ino: u32) -> u64;
    /// Set the size after an extending write (`i_size_write`).
    fn set_i_size(&mut self, ino: u32, size: u64);
    /// Whether this file system needs direct-I/O bios split before metadata reads
    /// (seed 002's RFC: only btrfs sets it).
    fn separate_meta_reads(&self) -> bool {
        false
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FsError {
    NoSpace,
    NoSuchFile(String),
    /// `-EINVAL` from the direct-I/O alignment check.
    Unaligned {
        offset: u64,
        len: u64,
        align: u64,
    },
    TooLarge(u64),
    /// `-EINVAL`: a request or parameter the file system rejects.
    Invalid(String),
    /// A kernel path iostack does not model; the input is refused.
    Unsupported(String),
}

impl std::fmt::Display for FsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FsError::NoSpace => write!(f, "no space left on the simulated file system (ENOSPC)"),
            FsError::NoSuchFile(n) => write!(f, "no such file '{n}' (ENOENT)"),
            FsError::Unaligned { offset, len, align } => write!(
                f,
                "O_DIRECT I/O at offset {offset} length {len} is not aligned to {align} bytes \
                 (EINVAL); iostack models file-system-block-aligned direct I/O only"
            ),
            FsError::TooLarge(s) => {
                write!(
                    f,
                    "file of {s} bytes exceeds the ext2 triple-indirect limit"
                )
            }
            FsError::Invalid(m) => write!(f, "invalid request (EINVAL): {m}"),
            FsError::Unsupported(m) => write!(f, "not modelled: {m}"),
        }
    }
}

impl std::error::Error for FsError {}
