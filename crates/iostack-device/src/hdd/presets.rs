//! Named HDD parameter sets, from `shared/reference/devices-and-simulators.md`
//! (§5.1 HDD mechanics, §5.2 parameter sets A–C). Values marked "estimate" are
//! not in the reference and are chosen to be consistent with the ones that are.
//!
//! Sectors per track are chosen so that the sustained sequential rate, after the
//! skew that hides each head switch, matches the quoted sustained media rate:
//! sustained ≈ spt × 512 × rpm/60 × spt / (spt + skew sectors).

use super::HddParams;
use crate::HwLimits;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// SATA behind AHCI: LBA48 commands of up to 65535 sectors, 168 PRD entries.
const SATA_LIMITS: HwLimits = HwLimits {
    max_hw_sectors: 65535,
    max_segments: 168,
    logical_block_size: 512,
};

/// Set B: 2009-era 7200 rpm SATA disk (Hitachi Deskstar 7K1000.C 2-disk model
/// for the seeks, Seagate Barracuda XT for the outer rate and cache).
fn sata_2009() -> HddParams {
    HddParams {
        capacity_sectors: 1_953_525_168, // 1 TB
        rpm: 7200,
        heads: 4,
        zones: 24, // estimate
        // 2400 spt → 147.5 MB/s raw, ~131.6 MB/s sustained with 1 ms skews;
        // inner 1200 → ~65.8 MB/s (ratio 2).
        outer_sectors_per_track: 2400,
        inner_sectors_per_track: 1200,
        track_skew_ns: MS,
        cylinder_skew_ns: MS,
        seek_track_to_track_ns: MS,
        seek_average_ns: 8_500 * US,
        seek_full_stroke_ns: 20 * MS,
        head_switch_ns: MS,  // estimate: about the single-track seek
        write_settle_ns: MS, // 9.5 ms write − 8.5 ms read average
        overhead_read_hit_ns: 100 * US,
        overhead_read_miss_ns: 200 * US,
        overhead_write_ns: 200 * US,
        interface_bytes_per_s: 300_000_000, // SATA 3 Gb/s
        // 32 MB cache: 16 MiB of read segments, 16 MiB of write cache.
        cache_segments: 16,
        cache_segment_sectors: 2048,
        read_ahead_sectors: 2048,
        write_cache: true,
        // libata reports no FUA unless booted with libata.fua=1 (the default is
        // 0, drivers/ata/libata-core.c), so the kernel emulates it with flushes.
        fua: false,
        write_cache_sectors: 32_768,
        write_cache_extents: 128, // estimate
        queue_depth: 31,          // NCQ as Linux uses it (one tag reserved)
        age_limit_ns: 500 * MS,
        write_hit_destage: false,
        limits: SATA_LIMITS,
    }
}

/// Seed 000's disk: set B with the media rate calibrated from the seed's one
/// reader-only figure (two buffered sequential readers at 137 MB/s on the
/// for-2.6.33 branch, where the writer is starved). Only the sectors per track
/// are scaled (x1.6 from set B, the same inner/outer ratio); seeks, rotation,
/// cache and queueing are set B's.
fn sata_2009_seed000() -> HddParams {
    HddParams {
        outer_sectors_per_track: 3840,
        inner_sectors_per_track: 1920,
        ..sata_2009()
    }
}

/// Seed 003's SATA disk (2010; the post names no model): a Seagate Barracuda
/// 7200.12 1 TB (ST31000528AS, two platters, four heads, 32 MB cache), the
/// common 7200 rpm desktop disk of 2010. From its data sheet: 125 MB/s
/// sustained at the outer zone, average seek 8.5 ms read and 9.5 ms write,
/// 32 MB cache, SATA 3 Gb/s, NCQ. The write cache is on (the ATA default) and a
/// FLUSH CACHE EXT destages it; libata sends no FUA (libata.fua=0). Track-to-track
/// and full-stroke seeks, skews, overheads and the cache split are set B's
/// (estimates).
fn sata_2010() -> HddParams {
    HddParams {
        // 2280 spt → ~125 MB/s sustained; inner 1140 → ~62.5 MB/s.
        outer_sectors_per_track: 2280,
        inner_sectors_per_track: 1140,
        ..sata_2009()
    }
}

/// Seagate Barracuda 7200.12 500 GB (one platter, two heads, 16 MB cache),
/// otherwise set B.
fn barracuda_7200_12() -> HddParams {
    HddParams {
        capacity_sectors: 976_773_168, // 500 GB
        heads: 2,
        // 2280 spt → ~125 MB/s sustained; inner 1140 → ~62.5 MB/s.
        outer_sectors_per_track: 2280,
        inner_sectors_per_track: 1140,
        cache_segments: 8,
        write_cache_sectors: 16_384,
        write_cache_extents: 64, // estimate
        ..sata_2009()
    }
}

/// Set A: 2001-era 5400 rpm IDE desktop disk, assembled from the DiskSim
/// Atlas III / Barracuda models and Hitachi spec-table conventions.
fn ide_2001() -> HddParams {
    HddParams {
        capacity_sectors: 40_000_000, // 20.5 GB
        rpm: 5400,
        heads: 2,
        zones: 16,
        // 400 spt → 18.4 MB/s raw, ~16.5 MB/s sustained; inner 250 (ratio 1.6).
        outer_sectors_per_track: 400,
        inner_sectors_per_track: 250,
        track_skew_ns: MS,
        cylinder_skew_ns: 1_500 * US,
        seek_track_to_track_ns: 1_500 * US,
        seek_average_ns: 9 * MS,
        seek_full_stroke_ns: 18 * MS,
        head_switch_ns: MS, // Atlas III 0.999 ms
        write_settle_ns: 500 * US,
        overhead_read_hit_ns: 100 * US,
        overhead_read_miss_ns: 400 * US,
        overhead_write_ns: 500 * US,
        interface_bytes_per_s: 66_000_000, // UDMA/66
        // 2 MB cache: 4 × 256 KiB read segments, 1 MiB of write cache.
        cache_segments: 4,
        cache_segment_sectors: 512,
        read_ahead_sectors: 512,
        write_cache: true, // the ATA default
        fua: false,        // 28-bit ATA has no FUA command
        write_cache_sectors: 2048,
        write_cache_extents: 16, // estimate
        queue_depth: 1,
        age_limit_ns: 500 * MS,
        // Drives of the time wrote a cached copy out before taking a write
        // over it (Ruemmler and Wilkes 1994, "write hit"): a block rewritten
        // while still dirty, like an inode written at every O_SYNC write,
        // costs a trip to the medium each time.
        write_hit_destage: true,
        limits: HwLimits {
            max_hw_sectors: 256, // 28-bit ATA commands
            max_segments: 128,
            logical_block_size: 512,
        },
    }
}

/// Set C: 15k rpm SAS disk, ~2009 (Hitachi Ultrastar 15K450 seeks, Seagate
/// Cheetah 15K.7 rates, 450 GB).
fn sas_15k() -> HddParams {
    HddParams {
        capacity_sectors: 879_097_968, // 450 GB
        rpm: 15_000,
        heads: 6,
        zones: 24, // estimate
        // 1675 spt → 214.4 MB/s raw, ~204 MB/s sustained with 0.2 ms skews;
        // inner 1000 → ~122 MB/s (ratio 1.67).
        outer_sectors_per_track: 1675,
        inner_sectors_per_track: 1000,
        track_skew_ns: 200 * US,
        cylinder_skew_ns: 200 * US,
        seek_track_to_track_ns: 200 * US, // unconfirmed in the reference
        seek_average_ns: 3_200 * US,
        seek_full_stroke_ns: 7 * MS, // unconfirmed in the reference
        head_switch_ns: 200 * US,    // estimate
        write_settle_ns: 500 * US,   // 3.6–3.8 ms write − 3.1–3.3 ms read average
        // Cheetah 9LP diskspecs: read hit 0.066, read miss 0.284 ms; the write
        // overhead is taken equal to the read miss (estimate).
        overhead_read_hit_ns: 66 * US,
        overhead_read_miss_ns: 284 * US,
        overhead_write_ns: 284 * US,
        interface_bytes_per_s: 600_000_000, // SAS 6 Gb/s
        // 16 MB cache: 16 × 512 KiB read segments; write cache disabled.
        cache_segments: 16,
        cache_segment_sectors: 1024,
        read_ahead_sectors: 1024,
        write_cache: false,
        fua: true, // SCSI: DPOFUA set in the mode-sense device-specific byte
        write_cache_sectors: 16_384,
        write_cache_extents: 64,
        queue_depth: 64,
        age_limit_ns: 500 * MS,
        write_hit_destage: false,
        limits: HwLimits {
            max_hw_sectors: 32767,
            max_segments: 128,
            logical_block_size: 512,
        },
    }
}

/// Named HDD presets: (name, parameters, one-line description with its source).
pub fn presets() -> Vec<(&'static str, HddParams, &'static str)> {
    vec![
        (
            "sata-2009",
            sata_2009(),
            "2009-era 7200 rpm SATA disk, 1 TB: ~132 -> 66 MB/s sustained, seek 1.0/8.5/20 ms \
             (+1 ms write), 32 MB cache with write-back, NCQ 31; devices-and-simulators.md \
             §5.2 set B (Hitachi 7K1000.C/7K320 seeks, Barracuda XT rate)",
        ),
        (
            "sata-2010",
            sata_2010(),
            "seed 003's 2010 SATA disk: Seagate Barracuda 7200.12 1 TB, 7200 rpm, ~125 -> \
             62 MB/s, seek 8.5 ms read / 9.5 ms write (data sheet), 32 MB write-back cache \
             destaged by FLUSH CACHE EXT, no FUA (libata default), NCQ 31; other mechanics \
             devices-and-simulators.md §5.2 set B (estimates)",
        ),
        (
            "sata-2009-seed000",
            sata_2009_seed000(),
            "seed 000's 7200 rpm SATA disk: sata-2009 (devices-and-simulators.md §5.2 set B) \
             with the media rate calibrated from the seed's reader-only throughput (2 \
             buffered readers, 137 MB/s)",
        ),
        (
            "ide-2001",
            ide_2001(),
            "2001-era 5400 rpm IDE desktop disk, 20 GB: ~16.5 -> 10 MB/s, seek 1.5/9/18 ms, \
             2 MB cache with write-back, UDMA/66, no queuing; devices-and-simulators.md §5.2 \
             set A (from the DiskSim Atlas III/Barracuda models)",
        ),
        (
            "sas-15k",
            sas_15k(),
            "15k rpm SAS disk, 450 GB: ~204 -> 122 MB/s, seek 0.2/3.2/7 ms (+0.5 ms write), \
             16 MB cache, write cache off, TCQ 64; devices-and-simulators.md §5.2 set C \
             (Ultrastar 15K450 seeks, Cheetah 15K.7 rates)",
        ),
        (
            "barracuda-7200-12",
            barracuda_7200_12(),
            "Seagate Barracuda 7200.12 500 GB, 7200 rpm SATA: ~125 -> 62 MB/s, seek \
             1.0/8.5/20 ms, 16 MB cache with write-back, NCQ 31; devices-and-simulators.md \
             §5.2 set B (7200.12 OD rate ~125 MB/s is marked unconfirmed there)",
        ),
    ]
}
