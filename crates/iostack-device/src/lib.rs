//! Device models behind one small trait, as a driver sees its hardware: a command
//! goes in, and some time later it completes. Each model declares its hardware
//! limits and queue depth; the block layer's driver glue never looks inside.
//! Models: `Fixed` (fixed latency), `hdd` (mechanical disk), `raid0` (hardware
//! RAID0 controller over member disks). Each declares whether it has a volatile
//! write cache and takes FUA writes; a flush command empties that cache.

pub mod fc_lun;
mod fixed;
pub mod ftl;
pub mod hdd;
pub mod presets;
pub mod raid0;
pub mod ssd;

pub use fixed::{Fixed, FixedParams};
pub use presets::{DeviceSpec, PRESETS};
pub use raid0::{Raid0, Raid0Params};
pub use ssd::{Ssd, SsdParams};

use iostack_core::Sector;
use iostack_des::Instant;

/// A command as the driver hands it to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceCmd {
    /// Unique per run; the device reports completions by this id.
    pub id: u64,
    pub sector: Sector,
    pub sectors: u32,
    pub write: bool,
    /// Force unit access: the write must reach the medium before completing
    /// (sent only to a device whose [`Device::fua`] is true).
    pub fua: bool,
    /// A cache flush (SCSI SYNCHRONIZE CACHE, ATA FLUSH CACHE EXT), with no data
    /// (`sectors` = 0): completes once everything the device acknowledged
    /// earlier is on the medium. Sent only to a device whose
    /// [`Device::write_cache`] is true.
    pub flush: bool,
}

/// Limits the hardware declares (read-only, like `max_hw_sectors_kb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HwLimits {
    pub max_hw_sectors: u32,
    pub max_segments: u32,
    pub logical_block_size: u32,
}

/// A device model. The contract:
/// * `submit` is called only while fewer than `queue_depth()` commands are
///   outstanding;
/// * after `submit` and after `complete` the caller calls `poll`, which reports
///   the completion instant of every command whose service has been decided, each
///   command exactly once and never earlier than `now`;
/// * `complete` is called once per reported command, at its instant.
pub trait Device {
    /// A volatile write-back cache is on (the driver's `blk_queue_flush(q,
    /// REQ_FLUSH)` in 2.6.37+, `QUEUE_ORDERED_DRAIN_FLUSH` before): the block
    /// layer sends flushes only then.
    fn write_cache(&self) -> bool;
    /// The device takes FUA writes (`REQ_FUA` in `q->flush_flags`,
    /// `QUEUE_ORDERED_DRAIN_FUA`); otherwise the block layer emulates FUA with a
    /// flush after the write.
    fn fua(&self) -> bool;
    /// Commands the device takes at once per hardware queue (the tag set's
    /// `queue_depth`); the whole device takes `queue_depth() * nr_hw_queues()`.
    fn queue_depth(&self) -> u32;
    /// Hardware submission queues (blk-mq's `nr_hw_queues` before the CPU
    /// count limits it): NVMe I/O queue pairs, 1 for SCSI/ATA and the
    /// single-queue models.
    fn nr_hw_queues(&self) -> u32 {
        1
    }
    /// The SCSI midlayer's per-device dispatch budget (`scsi_mq_get_budget`:
    /// `sdev->queue_depth` commands in flight), `None` for drivers without
    /// one (NVMe, null_blk).
    fn dispatch_budget(&self) -> Option<u32> {
        None
    }
    fn rotational(&self) -> bool;
    fn capacity_sectors(&self) -> u64;
    fn hw_limits(&self) -> HwLimits;
    fn submit(&mut self, now: Instant, cmd: DeviceCmd);
    fn poll(&mut self, now: Instant, out: &mut Vec<(Instant, u64)>);
    fn complete(&mut self, now: Instant, id: u64);
}
