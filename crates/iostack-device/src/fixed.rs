//! A device with no mechanics: each command costs a fixed overhead plus its
//! transfer time at a fixed rate, with up to `channels` commands in service at
//! once and the rest waiting in arrival order. With `rate_bytes_per_s = 0` and
//! `channels = queue_depth` it is the null device of fixed latency; with one
//! channel it models a cached storage-server volume behind a single link.
//!
//! It has no volatile write cache (the null device keeps nothing; the storage
//! servers it stands for acknowledge writes from battery-backed NVRAM and report
//! no volatile cache), so the block layer completes flushes without sending them
//! and strips FUA. A flush command that reaches it anyway is acknowledged like
//! any command of no data: after the fixed overhead.

use crate::{Device, DeviceCmd, HwLimits};
use iostack_des::{Duration, Instant};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

#[derive(Clone, PartialEq, Eq, serde::Serialize)]
pub struct FixedParams {
    pub overhead_ns: u64,
    /// Transfer rate in bytes per second; 0 means transfer is free.
    pub rate_bytes_per_s: u64,
    pub channels: u32,
    pub queue_depth: u32,
    pub capacity_sectors: u64,
    pub rotational: bool,
    /// A volatile write cache the driver declares (`blk_queue_write_cache`):
    /// the queue passes cache flushes down, served like any command; no FUA.
    pub write_cache: bool,
    pub limits: HwLimits,
}

/// The machine's configuration key is its `Debug` text: `write_cache` enters
/// it only when set, so the devices that had none keep their keys.
impl std::fmt::Debug for FixedParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("FixedParams");
        d.field("overhead_ns", &self.overhead_ns)
            .field("rate_bytes_per_s", &self.rate_bytes_per_s)
            .field("channels", &self.channels)
            .field("queue_depth", &self.queue_depth)
            .field("capacity_sectors", &self.capacity_sectors)
            .field("rotational", &self.rotational);
        if self.write_cache {
            d.field("write_cache", &self.write_cache);
        }
        d.field("limits", &self.limits).finish()
    }
}

pub struct Fixed {
    p: FixedParams,
    waiting: VecDeque<DeviceCmd>,
    /// When each channel becomes free, earliest first (ties by channel number).
    busy_until: BinaryHeap<Reverse<(Instant, u32)>>,
    outstanding: u32,
}

impl Fixed {
    pub fn new(p: FixedParams) -> Self {
        assert!(p.channels >= 1 && p.queue_depth >= 1);
        Fixed {
            busy_until: (0..p.channels)
                .map(|c| Reverse((Instant::ZERO, c)))
                .collect(),
            waiting: VecDeque::with_capacity(p.queue_depth as usize),
            outstanding: 0,
            p,
        }
    }

    /// Service time of one command: overhead plus transfer.
    pub fn service_time(&self, sectors: u32) -> Duration {
        let bytes = sectors as u64 * 512;
        let xfer = if self.p.rate_bytes_per_s == 0 {
            0
        } else {
            (bytes as u128 * 1_000_000_000u128 / self.p.rate_bytes_per_s as u128) as u64
        };
        Duration(self.p.overhead_ns + xfer)
    }
}

impl Device for Fixed {
    fn write_cache(&self) -> bool {
        self.p.write_cache
    }
    fn fua(&self) -> bool {
        false
    }
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth
    }
    fn rotational(&self) -> bool {
        self.p.rotational
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
        self.waiting.push_back(cmd);
    }
    fn poll(&mut self, now: Instant, out: &mut Vec<(Instant, u64)>) {
        // Start waiting commands on channels in order; a command is started (and
        // its completion decided) at the earliest instant a channel frees.
        if !self.waiting.is_empty() {
            self.start_waiting(now, out);
        }
    }
    fn complete(&mut self, _now: Instant, _id: u64) {
        assert!(self.outstanding > 0, "completion without a command");
        self.outstanding -= 1;
    }
}

impl Fixed {
    /// `poll` with commands waiting.
    #[inline(never)]
    fn start_waiting(&mut self, now: Instant, out: &mut Vec<(Instant, u64)>) {
        if self.p.channels >= self.p.queue_depth {
            // A free channel always exists (outstanding < depth <= channels): every
            // command starts at once.
            while let Some(cmd) = self.waiting.pop_front() {
                out.push((now + self.service_time(cmd.sectors), cmd.id));
            }
            return;
        }
        self.start_on_channels(now, out);
    }

    /// Fewer channels than the queue depth: each waiting command starts at
    /// the earliest instant a channel frees.
    #[inline(never)]
    fn start_on_channels(&mut self, now: Instant, out: &mut Vec<(Instant, u64)>) {
        while let Some(cmd) = self.waiting.front().copied() {
            let Reverse((free, ch)) = self.busy_until.pop().expect("at least one channel");
            let start = if free > now { free } else { now };
            let done = start + self.service_time(cmd.sectors);
            self.busy_until.push(Reverse((done, ch)));
            self.waiting.pop_front();
            out.push((done, cmd.id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> HwLimits {
        HwLimits {
            max_hw_sectors: 1024,
            max_segments: 128,
            logical_block_size: 512,
        }
    }

    #[test]
    fn single_channel_serialises() {
        let mut d = Fixed::new(FixedParams {
            overhead_ns: 1000,
            rate_bytes_per_s: 512_000_000,
            channels: 1,
            queue_depth: 4,
            capacity_sectors: 1 << 20,
            rotational: false,
            write_cache: false,
            limits: limits(),
        });
        let mut out = Vec::new();
        for id in 0..2 {
            d.submit(
                Instant(0),
                DeviceCmd {
                    id,
                    sector: 0,
                    sectors: 8,
                    write: false,
                    fua: false,
                    flush: false,
                },
            );
        }
        d.poll(Instant(0), &mut out);
        // 4 KiB at 512 MB/s = 8 us, plus 1 us overhead, one after the other.
        assert_eq!(out, vec![(Instant(9000), 0), (Instant(18000), 1)]);
    }
}
