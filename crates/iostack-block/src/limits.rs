//! Queue limits and partitions (`block/blk-settings.c`, `block/blk-core.c`).

use iostack_core::{DevT, Sector};

/// Limits a request may not exceed. Hardware limits come from the device and clamp
/// the user-writable soft limits (`max_sectors_kb` ≤ `max_hw_sectors_kb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueLimits {
    /// Soft limit for file-system requests (`max_sectors`).
    pub max_sectors: u32,
    pub max_hw_sectors: u32,
    /// `max_phys_segments` and `max_hw_segments` (equal here).
    pub max_segments: u32,
    pub logical_block_size: u32,
}

/// A partition of the disk: `blk_partition_remap` adds `start` and traces A.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub dev: DevT,
    pub start: Sector,
    pub nr_sects: Sector,
}
