//! Queue tunables (`block/blk-sysfs.c`, `blk-settings.c`, `blk-core.c`), declared once.

use iostack_core::{Profile, TunableDef, Unit};

pub static TUNABLES: &[TunableDef] = &[
    TunableDef {
        name: "queue/nr_requests",
        unit: Unit::Count,
        default: |_| 128,
        min: 4,
        max: 1 << 20,
        doc: "Request allocation limit per sync/async pool (BLKDEV_MAX_RQ); \
              submitters sleep past it. Congestion is flagged at nr - nr/8 + 1.",
    },
    TunableDef {
        name: "queue/max_sectors_kb",
        unit: Unit::KiB,
        default: |_| 512,
        min: 4,
        max: 1 << 20,
        doc: "Largest file-system request (BLK_DEF_MAX_SECTORS = 1024 sectors); \
              clamped by the device's max_hw_sectors_kb.",
    },
    TunableDef {
        name: "queue/nomerges",
        unit: Unit::Count,
        default: |_| 0,
        min: 0,
        max: 2,
        doc: "0: all merges; 1: only the one-hit last-merge cache; 2: no merging.",
    },
    TunableDef {
        name: "queue/unplug_thresh",
        unit: Unit::Count,
        default: |_| 4,
        min: 1,
        max: 1 << 16,
        doc: "Unplug once this many requests are queued but not in the driver \
              (blk_queue_make_request: 4).",
    },
    TunableDef {
        name: "queue/unplug_delay_ms",
        unit: Unit::Ms,
        default: |_| 3,
        min: 0,
        max: 10_000,
        doc: "Unplug timer: (3*HZ)/1000 jiffies, at least one jiffy (msecs_to_jiffies(3) \
              in 2.6.37).",
    },
    TunableDef {
        name: "queue/batch_requests",
        unit: Unit::Count,
        default: |_| 32,
        min: 1,
        max: 1 << 16,
        doc: "BLK_BATCH_REQ: requests a batching process may allocate past the limit.",
    },
    TunableDef {
        name: "queue/batch_time_ms",
        unit: Unit::Ms,
        default: |_| 20,
        min: 0,
        max: 10_000,
        doc: "BLK_BATCH_TIME = HZ/50: how long a process stays a batcher.",
    },
    TunableDef {
        name: "queue/wbt_lat_usec",
        unit: Unit::Us,
        default: |p| if p.single_queue() { 0 } else { -1 },
        min: -1,
        max: 1 << 40,
        doc: "Writeback throttling's read latency target (blk-wbt.c, blk-mq profiles \
              only; refused elsewhere). -1: the device's default, wbt_default_latency_nsec \
              (2000 non-rotational, 75000 rotational), on unless BFQ is the scheduler \
              (wbt_disable_default); a value written (-1 too) turns it on even under BFQ \
              (WBT_STATE_ON_MANUAL); 0 turns it off.",
    },
    TunableDef {
        name: "kernel/hz",
        unit: Unit::Hz,
        default: |p| if p >= Profile::V2_6_28 { 1000 } else { 100 },
        min: 24,
        max: 10_000,
        doc: "Timer frequency (CONFIG_HZ). Jiffy-based timers and tunables use this \
              integer arithmetic.",
    },
];
