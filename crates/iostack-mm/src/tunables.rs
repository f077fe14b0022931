//! Page-cache, readahead and writeback tunables, declared once.

use iostack_core::{Profile, TunableDef, Unit};

/// Who may use and move `mapping->writeback_index` in `write_cache_pages`.
pub const WRITEBACK_INDEX: &[&str] = &["shared", "flusher-only"];
/// How `balance_dirty_pages` throttles a dirtier.
pub const THROTTLE: &[&str] = &["dirtier-writes", "io-less"];
/// The background writeback threads.
pub const FLUSHERS: &[&str] = &["pdflush", "per-bdi"];
/// How ext4's delalloc `writepages` keeps the cursor.
pub const EXT4_DA_INDEX: &[&str] = &["write-cache-pages", "pages-written"];

pub static TUNABLES: &[TunableDef] = &[
    TunableDef {
        name: "vm/dirty_ratio",
        unit: Unit::Percent,
        default: |p| if p <= Profile::V2_6_28 { 10 } else { 20 },
        min: 0,
        max: 100,
        doc: "Hard dirty limit as a share of dirtyable memory (free + reclaimable): a \
              dirtier above it is throttled in balance_dirty_pages. 10 in 2.6.28, 20 \
              from 2.6.32 (mm/page-writeback.c).",
    },
    TunableDef {
        name: "vm/dirty_background_ratio",
        unit: Unit::Percent,
        default: |p| if p <= Profile::V2_6_28 { 5 } else { 10 },
        min: 0,
        max: 100,
        doc: "Background writeback starts above this share of dirtyable memory. 5 in \
              2.6.28, 10 from 2.6.32.",
    },
    TunableDef {
        name: "vm/dirty_bytes",
        unit: Unit::Bytes,
        default: |_| 0,
        min: 0,
        max: i64::MAX,
        doc: "Hard dirty limit in bytes; overrides vm/dirty_ratio when non-zero.",
    },
    TunableDef {
        name: "vm/dirty_background_bytes",
        unit: Unit::Bytes,
        default: |_| 0,
        min: 0,
        max: i64::MAX,
        doc: "Background threshold in bytes; overrides vm/dirty_background_ratio when \
              non-zero.",
    },
    TunableDef {
        name: "vm/dirty_expire_centisecs",
        unit: Unit::Centisecs,
        default: |_| 3000,
        min: 1,
        max: 1_000_000,
        doc: "Age at which kupdate-style writeback writes a dirty inode.",
    },
    TunableDef {
        name: "vm/dirty_writeback_centisecs",
        unit: Unit::Centisecs,
        default: |_| 500,
        min: 0,
        max: 1_000_000,
        doc: "Period of the kupdate-style wakeup of pdflush or the flusher thread \
              (0 disables it).",
    },
    // /proc/sys/vm/bdflush of 2.4.4 (`bdf_prm` in fs/buffer.c; HZ = 100, so
    // its jiffies are centiseconds). 2.4 only: later kernels have the vm/dirty_*
    // sysctls above instead.
    TunableDef {
        name: "vm/bdflush/nfract",
        unit: Unit::Percent,
        default: |_| 30,
        min: 0,
        max: 100,
        doc: "2.4 only: percentage of buffer memory (nr_free_buffer_pages) dirty \
              above which balance_dirty wakes bdflush (balance_dirty_state returns 0). \
              30 in 2.4.0-2.4.9 (fs/buffer.c bdf_prm).",
    },
    TunableDef {
        name: "vm/bdflush/ndirty",
        unit: Unit::Count,
        default: |_| 64,
        min: 10,
        max: 50_000,
        doc: "2.4 only: most dirty buffers flush_dirty_buffers writes per bdflush \
              pass, and per call of a writer over nfract_sync (wakeup_bdflush(1)). \
              64 in 2.4.0-2.4.9.",
    },
    TunableDef {
        name: "vm/bdflush/interval",
        unit: Unit::Centisecs,
        default: |_| 500,
        min: 0,
        max: 60_000,
        doc: "2.4 only: kupdate's sleep between two sync_old_buffers passes, in \
              jiffies (0 stops kupdate). 5*HZ.",
    },
    TunableDef {
        name: "vm/bdflush/age_buffer",
        unit: Unit::Centisecs,
        default: |_| 3000,
        min: 100,
        max: 600_000,
        doc: "2.4 only: a buffer's b_flushtime is the time it was dirtied plus this; \
              kupdate writes the buffers whose b_flushtime has passed. 30*HZ.",
    },
    TunableDef {
        name: "vm/bdflush/nfract_sync",
        unit: Unit::Percent,
        default: |_| 60,
        min: 0,
        max: 100,
        doc: "2.4 only: percentage of buffer memory dirty above which a writer that \
              dirties a buffer writes ndirty buffers itself (balance_dirty_state \
              returns 1, wakeup_bdflush(1) calls flush_dirty_buffers). 60.",
    },
    TunableDef {
        name: "queue/read_ahead_kb",
        unit: Unit::KiB,
        default: |_| 128,
        min: 0,
        max: 1 << 20,
        doc: "Maximum readahead window (ra_pages = read_ahead_kb / 4); \
              VM_MAX_READAHEAD is 128.",
    },
    TunableDef {
        name: "queue/max_readahead",
        unit: Unit::Count,
        default: |_| crate::readahead24::MAX_READAHEAD_24 as i64,
        min: 0,
        max: 1 << 18,
        doc: "2.4 only: the device's max_readahead[major][minor] in pages, \
              get_max_readahead's cap on f_ramax (blockdev --setfra, BLKFRASET). 31 \
              (MAX_READAHEAD), as IDE's init_gendisk sets every minor and as a driver \
              that sets none (LVM) gets. 2.4 has no read_ahead_kb.",
    },
    TunableDef {
        name: "vm/writeback_index",
        unit: Unit::Enum(WRITEBACK_INDEX),
        default: |_| 0,
        min: 0,
        max: 1,
        doc: "Who starts at and moves mapping->writeback_index in a range_cyclic \
              write_cache_pages. shared: every caller, as released (flusher, pdflush, \
              throttled dirtiers, fsync with range_whole). flusher-only: seed 001's \
              patch, 'Improve buffered streaming write ordering' (only \
              current_is_pdflush() uses and updates it; other callers start at 0).",
    },
    TunableDef {
        name: "vm/throttle",
        unit: Unit::Enum(THROTTLE),
        default: |p| if p >= Profile::V3_10 { 1 } else { 0 },
        min: 0,
        max: 1,
        doc: "balance_dirty_pages. dirtier-writes: 2.6.28-3.1, the throttled task \
              writes back write_chunk pages of its bdi itself (writeback_inodes), then \
              congestion_wait. io-less: 3.2+, the task only sleeps while the flusher \
              writes.",
    },
    TunableDef {
        name: "vm/flusher",
        unit: Unit::Enum(FLUSHERS),
        default: |p| if p <= Profile::V2_6_28 { 0 } else { 1 },
        min: 0,
        max: 1,
        doc: "Background writeback threads. pdflush: before 2.6.32 (mm/pdflush.c, one \
              thread per bdi at a time via writeback_acquire, non-blocking, stops on \
              congestion). per-bdi: 2.6.32+ flush-MAJ:MIN threads (fs/fs-writeback.c \
              wb_writeback).",
    },
    TunableDef {
        name: "vm/write_locked_inodes",
        unit: Unit::Bool,
        default: |p| if p <= Profile::V2_6_28 { 1 } else { 0 },
        min: 0,
        max: 1,
        doc: "__writeback_single_inode on an inode already under writeback (I_SYNC) \
              with WB_SYNC_NONE. 1: 2.6.28 and earlier, requeue it but still run \
              do_writepages ('we can at least start some of the data writeout'), so a \
              throttled dirtier and pdflush walk one file at once. 0: later kernels, \
              only requeue.",
    },
    TunableDef {
        name: "fs/ext4/da_writeback_index",
        unit: Unit::Enum(EXT4_DA_INDEX),
        default: |p| if p <= Profile::V2_6_28 { 0 } else { 1 },
        min: 0,
        max: 1,
        doc: "How ext4_da_writepages leaves mapping->writeback_index. \
              write-cache-pages: the ext4 patch queue of October 2008, the generic \
              cursor, which already points past the pagevec whose tail was redirtied \
              when an extent ended. pages-written: the merged 2008 fix ('ext4: Fix \
              file fragmentation during large file write', no_nrwrite_index_update), \
              the cursor advances by the pages actually written.",
    },
];
