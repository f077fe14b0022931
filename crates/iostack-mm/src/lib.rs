//! Memory management for file I/O: the page cache of each inode
//! (`struct address_space` with its page flags and tags), on-demand readahead
//! (`mm/readahead.c`) and the dirty-memory arithmetic of `mm/page-writeback.c`.
//!
//! Like the block layer, this crate is sans-IO: it keeps state and makes the
//! decisions the kernel makes; the simulation's event loop drives it and turns its
//! decisions into bios.

pub mod bdflush;
pub mod bdp;
pub mod bitmap;
pub mod flusher;
pub mod mapping;
pub mod pagecache;
pub mod readahead;
pub mod readahead24;
pub mod sync_inodes;
mod tunables;
pub mod wbc;
pub mod write_cache_pages;
pub mod writeback;
pub mod writeback_job;

pub use bdflush::{BdflushConfig, BufferLru, DirtyState, FlushRun, Flushed};
pub use bdp::BdpAction;
pub use bitmap::PageBits;
pub use flusher::{FlusherNext, FlusherRun};
pub use mapping::AddressSpace;
pub use pagecache::{BufBio, Vm, VmConfig, WbPages};
pub use readahead::{ondemand_readahead, FileRaState, RaWindow};
pub use readahead24::{FileRa24, Ra24Read};
pub use tunables::TUNABLES;
pub use wbc::{FlusherState, PageRun, Throttle, WbAction, WbJob, WbStep, Wbc, Wcp};
pub use write_cache_pages::{PageDone, Restart, WcpCaller, Writepages};
pub use writeback::{DirtyConfig, DirtyLimits};

/// `PAGE_CACHE_SIZE`.
pub const PAGE_SIZE: u64 = 4096;
