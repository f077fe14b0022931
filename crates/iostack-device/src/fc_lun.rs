//! A LUN of a NetApp-like storage array behind one Fibre Channel link (seed
//! 003's SAN): the link carries every command's data at its rate, one frame
//! stream per direction (FC is full duplex: writes go host → array, reads array →
//! host), so all the LUN's transfers share it; writes are acknowledged once they
//! are in the array's NVRAM (a fixed controller latency after the data arrived),
//! and so are cache flushes and FUA writes, as NVRAM is stable storage; reads
//! are served from the array's cache when every block was written or read
//! recently, and otherwise from its disks, a fixed number of which work in
//! parallel. The back end's destaging (WAFL consistency points) is not modelled:
//! it is assumed to keep up, so NVRAM never holds writes back.
//!
//! Transfers take the link in submission order (a read whose data is ready
//! earlier does not overtake one submitted before it): a simplification of the
//! FC frame interleaving.

use crate::{Device, DeviceCmd, HwLimits};
use iostack_des::{Duration, Instant};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FcLunParams {
    /// Payload rate of the link, each direction (4GFC: 400 MB/s).
    pub link_bytes_per_s: u64,
    /// Command round trip through HBA, fabric and controller, for a command
    /// whose data is in NVRAM or cache (a write's acknowledgement, a flush, a
    /// cache hit), not counting the transfer.
    pub controller_ns: u64,
    /// A read miss: the time one back-end disk takes.
    pub disk_read_ns: u64,
    /// Disks serving read misses in parallel.
    pub disks: u32,
    /// Array cache that serves reads, in bytes, kept in `cache_chunk` units (LRU).
    pub cache_bytes: u64,
    pub cache_chunk_bytes: u64,
    /// The LUN declares a write cache (so the kernel sends flushes) and FUA.
    pub write_cache: bool,
    pub fua: bool,
    pub queue_depth: u32,
    pub capacity_sectors: u64,
    pub limits: HwLimits,
}

/// The array's read cache: chunks by last use, least recent evicted.
#[derive(Default)]
struct Cache {
    by_chunk: BTreeMap<u64, u64>,
    by_use: BTreeMap<u64, u64>,
    clock: u64,
}

impl Cache {
    fn touch(&mut self, chunk: u64, cap: u64) {
        self.clock += 1;
        if let Some(old) = self.by_chunk.insert(chunk, self.clock) {
            self.by_use.remove(&old);
        }
        self.by_use.insert(self.clock, chunk);
        while self.by_chunk.len() as u64 > cap {
            let (_, c) = self.by_use.pop_first().expect("non-empty");
            self.by_chunk.remove(&c);
        }
    }
    fn has(&self, chunk: u64) -> bool {
        self.by_chunk.contains_key(&chunk)
    }
}

pub struct FcLun {
    p: FcLunParams,
    /// When each link direction is free: host → array, array → host.
    tx_free: Instant,
    rx_free: Instant,
    /// When each back-end disk is free.
    disks: BinaryHeap<Reverse<(Instant, u32)>>,
    cache: Cache,
    pending: Vec<DeviceCmd>,
    outstanding: u32,
}

impl FcLun {
    pub fn new(p: FcLunParams) -> Self {
        assert!(p.disks >= 1 && p.queue_depth >= 1 && p.cache_chunk_bytes >= 512);
        FcLun {
            disks: (0..p.disks).map(|d| Reverse((Instant::ZERO, d))).collect(),
            tx_free: Instant::ZERO,
            rx_free: Instant::ZERO,
            cache: Cache::default(),
            pending: Vec::new(),
            outstanding: 0,
            p,
        }
    }

    fn xfer(&self, sectors: u32) -> Duration {
        let bytes = u128::from(sectors) * 512;
        Duration((bytes * 1_000_000_000 / u128::from(self.p.link_bytes_per_s.max(1))) as u64)
    }

    /// The chunks a command covers.
    fn chunks(&self, cmd: &DeviceCmd) -> std::ops::RangeInclusive<u64> {
        let c = self.p.cache_chunk_bytes / 512;
        let last = cmd.sector + u64::from(cmd.sectors.max(1)) - 1;
        cmd.sector / c..=last / c
    }

    fn cache_cap(&self) -> u64 {
        self.p.cache_bytes / self.p.cache_chunk_bytes
    }

    /// A write: the data crosses the link, then NVRAM acknowledges it.
    fn write_done(&mut self, now: Instant, cmd: &DeviceCmd) -> Instant {
        let start = now.max(self.tx_free);
        self.tx_free = start + self.xfer(cmd.sectors);
        let cap = self.cache_cap();
        for c in self.chunks(cmd) {
            self.cache.touch(c, cap);
        }
        self.tx_free + Duration(self.p.controller_ns)
    }

    /// A read: from cache, or from a back-end disk; then across the link.
    fn read_done(&mut self, now: Instant, cmd: &DeviceCmd) -> Instant {
        let hit = self.chunks(cmd).all(|c| self.cache.has(c));
        let mut ready = now + Duration(self.p.controller_ns);
        if !hit {
            let Reverse((free, d)) = self.disks.pop().expect("at least one disk");
            ready = ready.max(free) + Duration(self.p.disk_read_ns);
            self.disks.push(Reverse((ready, d)));
        }
        let cap = self.cache_cap();
        for c in self.chunks(cmd) {
            self.cache.touch(c, cap);
        }
        let start = ready.max(self.rx_free);
        self.rx_free = start + self.xfer(cmd.sectors);
        self.rx_free
    }
}

impl Device for FcLun {
    fn write_cache(&self) -> bool {
        self.p.write_cache
    }
    fn fua(&self) -> bool {
        self.p.fua
    }
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth
    }
    /// SCSI/ATA disk: the midlayer's budget is the device's queue depth.
    fn dispatch_budget(&self) -> Option<u32> {
        Some(self.p.queue_depth)
    }
    fn rotational(&self) -> bool {
        true
    }
    fn capacity_sectors(&self) -> u64 {
        self.p.capacity_sectors
    }
    fn hw_limits(&self) -> HwLimits {
        self.p.limits
    }
    fn submit(&mut self, _now: Instant, cmd: DeviceCmd) {
        assert!(
            self.outstanding < self.p.queue_depth,
            "device queue overflow"
        );
        self.outstanding += 1;
        self.pending.push(cmd);
    }
    fn poll(&mut self, now: Instant, out: &mut Vec<(Instant, u64)>) {
        for cmd in std::mem::take(&mut self.pending) {
            let done = if cmd.flush {
                // NVRAM is stable: nothing to destage before the answer.
                now + Duration(self.p.controller_ns)
            } else if cmd.write {
                self.write_done(now, &cmd)
            } else {
                self.read_done(now, &cmd)
            };
            out.push((done, cmd.id));
        }
    }
    fn complete(&mut self, _now: Instant, _id: u64) {
        assert!(self.outstanding > 0, "completion without a command");
        self.outstanding -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lun() -> FcLun {
        FcLun::new(FcLunParams {
            link_bytes_per_s: 400_000_000,
            controller_ns: 100_000,
            disk_read_ns: 5_000_000,
            disks: 2,
            cache_bytes: 1 << 20,
            cache_chunk_bytes: 64 << 10,
            write_cache: true,
            fua: true,
            queue_depth: 32,
            capacity_sectors: 1 << 30,
            limits: HwLimits {
                max_hw_sectors: 1024,
                max_segments: 128,
                logical_block_size: 512,
            },
        })
    }

    fn cmd(id: u64, sector: u64, sectors: u32, write: bool, flush: bool) -> DeviceCmd {
        DeviceCmd {
            id,
            sector,
            sectors,
            write,
            fua: false,
            flush,
        }
    }

    #[test]
    fn one_link_serialises_transfers_and_nvram_acknowledges() {
        let mut d = lun();
        let mut out = Vec::new();
        // Two 400 KB writes: 1 ms each on the link, one after the other, each
        // acknowledged 100 us after its data arrived.
        d.submit(Instant(0), cmd(0, 0, 781, true, false));
        d.submit(Instant(0), cmd(1, 10_000, 781, true, false));
        d.poll(Instant(0), &mut out);
        let x = d.xfer(781).0;
        assert_eq!(out[0].0, Instant(x + 100_000));
        assert_eq!(out[1].0, Instant(2 * x + 100_000));
        // A flush is answered at the controller's latency, whatever was written.
        d.submit(Instant(0), cmd(2, 0, 0, true, true));
        out.clear();
        d.poll(Instant(0), &mut out);
        assert_eq!(out[0].0, Instant(100_000));
    }

    #[test]
    fn reads_hit_what_was_written_and_miss_to_the_disks() {
        let mut d = lun();
        let mut out = Vec::new();
        d.submit(Instant(0), cmd(0, 0, 8, true, false));
        d.submit(Instant(0), cmd(1, 0, 8, false, false));
        d.submit(Instant(0), cmd(2, 1 << 20, 8, false, false));
        d.poll(Instant(0), &mut out);
        let x = d.xfer(8).0;
        assert_eq!(out[1].0, Instant(100_000 + x), "hit");
        assert_eq!(out[2].0, Instant(5_100_000 + x), "miss");
    }
}
