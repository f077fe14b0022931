//! Named device presets for the seeds' hardware. A preset is data: a parameter set
//! with its source; `DeviceSpec::build` turns it into a model.
//!
//! HDD presets live in `hdd::presets()` and RAID0 presets in `raid0::presets()`,
//! next to the models they parameterise.

use crate::fc_lun::{FcLun, FcLunParams};
use crate::fixed::{Fixed, FixedParams};
use crate::ftl::FtlParams;
use crate::hdd::{Hdd, HddParams};
use crate::raid0::{Raid0, Raid0Params};
use crate::ssd::{Ssd, SsdParams};
use crate::{Device, HwLimits};
use iostack_des::Rng;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSpec {
    Fixed(FixedParams),
    Hdd(HddParams),
    Raid0(Raid0Params),
    FcLun(FcLunParams),
    Ssd(SsdParams),
}

impl DeviceSpec {
    pub fn build(&self, rng: Rng) -> Box<dyn Device> {
        match self {
            DeviceSpec::Fixed(p) => Box::new(Fixed::new(p.clone())),
            DeviceSpec::Hdd(p) => Box::new(Hdd::new(p.clone(), rng)),
            DeviceSpec::Raid0(p) => Box::new(Raid0::new(p.clone(), rng)),
            DeviceSpec::FcLun(p) => Box::new(FcLun::new(p.clone())),
            DeviceSpec::Ssd(p) => Box::new(Ssd::new(p.clone())),
        }
    }

    /// The capacity the built model reports (`Device::capacity_sectors`),
    /// without building it.
    pub fn capacity_sectors(&self) -> u64 {
        match self {
            DeviceSpec::Fixed(p) => p.capacity_sectors,
            DeviceSpec::Hdd(p) => p.capacity_sectors,
            DeviceSpec::Raid0(p) => p.capacity_sectors(),
            DeviceSpec::FcLun(p) => p.capacity_sectors,
            DeviceSpec::Ssd(p) => p.capacity_sectors,
        }
    }
}

/// Fixed-latency presets (name, description).
pub const PRESETS: &[(&str, &str)] = &[
    (
        "null",
        "null device: 1 us per command, no transfer cost, depth 256",
    ),
    (
        "ess-dasd",
        "s390 DASD volume on an enterprise storage server (seed 002): cached reads, \
         279 us command overhead + 106 MB/s FICON transfer, one channel; calibrated \
         from the seed's two completion times",
    ),
    (
        "fc-array",
        "enterprise array over one 4 Gb FC link (seed 003's NetApp, parameter set E): \
         writes acknowledged from NVRAM, 300 us controller overhead + 400 MB/s link, 8 \
         parallel back-end paths, TCQ 128. A fixed-latency stand-in until the array \
         model with NVRAM consistency points exists",
    ),
    (
        "netapp-fc-2010-seed003",
        "netapp-fc-2010 with the controller latency calibrated on seed 003's \
         san-deadline iozone write row (35611 KB/s, one write + fsync of 64 KiB on ext4 \
         every 1.80 ms): 371 us instead of 200 us",
    ),
    (
        "netapp-fc-2010",
        "seed 003's SAN LUN: a NetApp-like array behind one 4 Gb FC link (400 MB/s per \
         direction, shared by every command), writes, FUA writes and flushes acknowledged \
         from NVRAM 200 us after their data arrived, reads from a 2 GiB array cache or \
         from 14 disks at 6 ms, qla2xxx queue depth 32. Link rate from the 4GFC line \
         rate; controller latency, cache and disks are assumptions (see fc_lun.rs) for \
         seed 003's deadline rows to calibrate",
    ),
    (
        "loop-file",
        "a loop device over a file in the page cache, as this machine's 6.18 kernel \
         sets it up (one hardware queue of 128 commands, rotational, max_hw_sectors_kb \
         1280, 128 segments), served one command at a time in 100 us (its measured \
         D-to-C times ranged 60 us to 2 ms); a write cache (queue/write_cache \
         \"write back\", its flush is vfs_fsync of the backing file) and no FUA \
         (queue/fua 0), served like any command",
    ),
    (
        "nvme-pm9a3",
        "datacenter NVMe SSD (Samsung PM9A3-like, PCIe 4.0 x4, power-loss protection): \
         QD1 read 80 us, 4 KiB write 30 us, 850K random-read IOPS from 53 parallel dies, \
         6.8 GB/s link, 128 queues of 1023 commands, no volatile cache; 14.5% \
         over-provisioning with greedy garbage collection (about 130K steady-state \
         random-write IOPS) (see presets.rs for sources)",
    ),
    (
        "sata-850evo",
        "consumer SATA SSD (Samsung 850 EVO-like): QD1 read 100 us, ~98K random-read IOPS \
         at NCQ 32 from 6 dies, 550 MB/s SATA link, volatile write cache with a 3.2 ms \
         flush, no FUA (libata); one queue; 9.9% over-provisioning with greedy garbage \
         collection",
    ),
];

const DEFAULT_LIMITS: HwLimits = HwLimits {
    max_hw_sectors: 1024,
    max_segments: 128,
    logical_block_size: 512,
};

/// Look a preset up by name.
pub fn lookup(name: &str) -> Option<DeviceSpec> {
    match name {
        "null" => Some(DeviceSpec::Fixed(FixedParams {
            overhead_ns: 1_000,
            rate_bytes_per_s: 0,
            channels: 256,
            queue_depth: 256,
            capacity_sectors: 1 << 31,
            rotational: false,
            write_cache: false,
            limits: DEFAULT_LIMITS,
        })),
        // Seed 002 completes a 96-sector read 742 us after issue and the following
        // 32-sector read 434 us later; one link serving them in turn gives
        // 32 sectors = 308 us (106 MB/s) and an overhead of 279 us.
        "ess-dasd" => Some(DeviceSpec::Fixed(FixedParams {
            overhead_ns: 279_000,
            rate_bytes_per_s: 106_000_000,
            channels: 1,
            queue_depth: 32,
            capacity_sectors: 4_807_520,
            rotational: true,
            write_cache: false,
            limits: DEFAULT_LIMITS,
        })),
        "fc-array" => Some(DeviceSpec::Fixed(FixedParams {
            overhead_ns: 300_000,
            rate_bytes_per_s: 400_000_000,
            channels: 8,
            queue_depth: 128,
            capacity_sectors: 1 << 31,
            rotational: true,
            write_cache: false,
            limits: DEFAULT_LIMITS,
        })),
        "netapp-fc-2010" => Some(DeviceSpec::FcLun(netapp_fc_2010())),
        "netapp-fc-2010-seed003" => Some(DeviceSpec::FcLun(FcLunParams {
            controller_ns: 371_000,
            ..netapp_fc_2010()
        })),
        "nvme-pm9a3" => Some(DeviceSpec::Ssd(nvme_pm9a3())),
        // /sys/block/loop0/queue on this machine (6.18): max_hw_sectors_kb 1280,
        // max_segments 128, rotational 1, nr_requests 128, one hardware queue,
        // write_cache "write back", fua 0.
        "loop-file" => Some(DeviceSpec::Fixed(FixedParams {
            overhead_ns: 100_000,
            rate_bytes_per_s: 0,
            channels: 1,
            queue_depth: 128,
            capacity_sectors: 64 << 11,
            rotational: true,
            write_cache: true,
            limits: HwLimits {
                max_hw_sectors: 2560,
                max_segments: 128,
                logical_block_size: 512,
            },
        })),
        "sata-850evo" => Some(DeviceSpec::Ssd(sata_850evo())),
        _ => crate::hdd::presets()
            .into_iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, p, _)| DeviceSpec::Hdd(p))
            .or_else(|| {
                crate::raid0::presets()
                    .into_iter()
                    .find(|(n, _, _)| *n == name)
                    .map(|(_, p, _)| DeviceSpec::Raid0(p))
            }),
    }
}

/// All preset names with descriptions: fixed ones first, then HDDs, then RAID0.
pub fn list() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = PRESETS
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect();
    for (n, _, d) in crate::hdd::presets() {
        v.push((n.to_string(), d.to_string()));
    }
    for (n, _, d) in crate::raid0::presets() {
        v.push((n.to_string(), d.to_string()));
    }
    v
}

/// Seed 003's SAN: "a NetApp array connected via a single fibre channel link".
///
/// * Link: 4GFC signals at 4.25 Gbaud with 8b/10b coding, 425 MB/s of bytes,
///   about 400 MB/s of frame payload per direction (FC-PI-2; the reference's
///   "4 Gb/s link (about 400 MB/s at most)").
/// * Queue depth: qla2xxx's default per-LUN depth, `ql2xmaxqdepth` = 32
///   (drivers/scsi/qla2xxx/qla_os.c of 2.6.3x).
/// * Write cache and FUA declared: NVRAM acknowledges writes, FUA writes and
///   SYNCHRONIZE CACHE alike, at the controller's latency (assumption: the LUN
///   reports WCE and DPOFUA so that the kernel sends flushes, as the seed's
///   ext4 barrier path would).
/// * Assumptions, to calibrate on seed 003's deadline rows: controller round
///   trip 200 us, array cache 2 GiB in 64 KiB chunks, 14 back-end disks (one
///   RAID-DP group of 16) at 6 ms per read miss (10k rpm FC disks), and a back
///   end that keeps up with NVRAM's consistency points.
pub fn netapp_fc_2010() -> FcLunParams {
    FcLunParams {
        link_bytes_per_s: 400_000_000,
        controller_ns: 200_000,
        disk_read_ns: 6_000_000,
        disks: 14,
        cache_bytes: 2 << 30,
        cache_chunk_bytes: 64 << 10,
        write_cache: true,
        fua: true,
        queue_depth: 32,
        capacity_sectors: 200 << 21, // a 200 GiB LUN
        limits: HwLimits {
            max_hw_sectors: 1024,
            max_segments: 128,
            logical_block_size: 512,
        },
    }
}

/// A datacenter NVMe drive, Samsung PM9A3-like (reference
/// devices-and-simulators.md §5.2 F, quoting the datasheet figures
/// ublk-disksim uses):
///
/// * QD1 4 KiB read 80 us, 4 KiB write 30 us, 850K random-read IOPS, 6.8 GB/s
///   sequential read: datasheet (via `lumir-sliva/ublk-disksim`).
/// * tR 62 us: the reference's media-bandwidth check (16 KiB pages / 62 us);
///   the controller time is what is left of the 80 us after tR and the
///   4 KiB transfer: 17 us. Writes: 30 us − 17 us = 13 us per page into the
///   PLP-protected write buffer.
/// * 53 dies: derived so that die-parallel 4 KiB reads peak at the datasheet's
///   850K IOPS (53 / 62 us); the reference's 8 channels × 4-8 dies bracket it.
/// * 128 I/O queues (assumption: the controller offers at least as many as a
///   machine has CPUs; Linux takes min(CPUs, queues)), depth 1023:
///   `io_queue_depth` = 1024 (`drivers/nvme/host/pci.c`), one ring slot kept
///   empty (`tagset.queue_depth = q_depth - 1`).
/// * No volatile write cache (power-loss protection; the drive's flush costs
///   microseconds, reference §5.2 F); `max_hw_sectors` 512 KiB (MDTS,
///   [unconfirmed]), 127 segments (`NVME_MAX_SEGS`).
/// * Flash translation layer (`ftl.rs`): over-provisioning 14.5%, 4 TiB of
///   NAND behind the 3.84 TB exported [unconfirmed: the usual raw capacity of
///   a 1-DWPD 3.84 TB drive; the datasheet gives the user capacity only];
///   tPROG 322 us per 16 KiB page, derived so that the 53 dies program at the
///   datasheet's 2.7 GB/s sequential write (53 × 16 KiB / 2.7 GB/s); erase
///   3.8 ms and 256 pages per block (MQSim's defaults, reference §2.1; erase
///   2-3.8 ms, §5.2 F). Not fitted to, but checked against, the datasheet's
///   130K steady-state 4 KiB random-write IOPS: greedy GC at 14.5% OP moves
///   about 3.1 units per unit written (write amplification 4.1), so a unit
///   costs 4.1 × 80 us of program, 64 us of relocation reads and 15 us of
///   erase per die: 53 dies / 411 us = 129K IOPS.
/// * Not modelled: the 2.7 GB/s sequential-write limit of a fresh drive (its
///   buffer hides programs until garbage collection starts).
pub fn nvme_pm9a3() -> SsdParams {
    SsdParams {
        nr_hw_queues: 128,
        queue_depth: 1023,
        controller_ns: 17_000,
        read_ns: 62_000,
        write_ns: 13_000,
        dies: 53,
        page_bytes: 16 << 10,
        link_bytes_per_s: 6_800_000_000,
        flush_ns: 0,
        write_cache: false,
        fua: false,
        capacity_sectors: 3_840_000_000_000 / 512, // the 3.84 TB model
        limits: HwLimits {
            max_hw_sectors: 1024,
            max_segments: 127,
            logical_block_size: 512,
        },
        ftl: Some(FtlParams {
            op_permille: 145,
            pages_per_block: 256,
            program_ns: 322_000,
            erase_ns: 3_800_000,
        }),
    }
}

/// A consumer SATA SSD, Samsung 850 EVO-like.
///
/// * 3.2 ms per flush: a real 850 EVO's fsync (reference §5.2 F, from
///   `lumir-sliva/ublk-disksim`'s README).
/// * QD1 4 KiB random read about 10K IOPS (100 us), about 98K at QD32, 540/520
///   MB/s sequential: the vendor's datasheet figures [unconfirmed: not in
///   the reference]. The link: SATA 6 Gb/s, 600 MB/s after 8b/10b, about
///   550 MB/s of payload.
/// * tR 60 us (TLC reads 56-106 us, reference §5.2 F); controller 33 us, what
///   is left of 100 us after tR and the 7.4 us transfer; 6 dies so that
///   random reads peak near the datasheet's 98K IOPS (6 / 60 us = 100K).
/// * NCQ depth 32 (one queue, the SCSI budget is the depth); a volatile
///   write cache and no FUA (libata's default `libata.fua=0`).
/// * Flash translation layer: over-provisioning 9.9%, 512 GiB of NAND
///   behind the 500 GB exported [unconfirmed: the raw capacity of the 500 GB
///   model]; tPROG 189 us per 16 KiB page so that the 6 dies program at the
///   datasheet's 520 MB/s sequential write [unconfirmed, as above; TurboWrite's
///   SLC cache is not modelled]; erase 3.8 ms and 256 pages per block (as the
///   PM9A3). No steady-state random-write figure is published for it; the
///   model's greedy GC gives about 16K IOPS (write amplification 5.5).
pub fn sata_850evo() -> SsdParams {
    SsdParams {
        nr_hw_queues: 1,
        queue_depth: 32,
        controller_ns: 33_000,
        read_ns: 60_000,
        write_ns: 13_000,
        dies: 6,
        page_bytes: 16 << 10,
        link_bytes_per_s: 550_000_000,
        flush_ns: 3_200_000,
        write_cache: true,
        fua: false,
        capacity_sectors: 500_000_000_000 / 512,
        limits: HwLimits {
            max_hw_sectors: 65535,
            max_segments: 168,
            logical_block_size: 512,
        },
        ftl: Some(FtlParams {
            op_permille: 99,
            pages_per_block: 256,
            program_ns: 189_000,
            erase_ns: 3_800_000,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_capacity_is_the_built_models() {
        for (name, _) in list() {
            let spec = lookup(&name).expect("listed preset");
            let built = spec.build(Rng::stream(iostack_des::Seed(1), "device"));
            assert_eq!(spec.capacity_sectors(), built.capacity_sectors(), "{name}");
        }
    }
}
