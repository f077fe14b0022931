//! File-system and direct-I/O tunables, declared once.

use iostack_core::{Profile, TunableDef, Unit};

/// Direct-I/O boundary handling variants (`fs/direct-io.c`).
pub const DIO_BOUNDARY: &[&str] = &["per-chunk", "rfc-separate-meta", "last-chunk"];
/// Flags on O_DIRECT writes, by the kernel macro that set them.
pub const DIO_WRITE_FLAGS: &[&str] = &[
    "WRITE_SYNC",
    "WRITE_ODIRECT",
    "WRITE_SYNC_PLUG",
    "WRITE_ODIRECT_PLUG",
];

/// What 2.4's `generic_file_direct_IO` flushes before a direct I/O.
pub const DIO_FLUSH_24: &[&str] = &["data", "generic_osync_inode"];

/// ext3's and ext4's `data=` modes.
pub const JOURNAL_DATA: &[&str] = &["ordered", "writeback", "journal"];

/// ext4's journal tunables: they change nothing while `fs/ext4/journal` is
/// off, and enter the configuration hash only when it is on.
pub const EXT4_JOURNAL_TUNABLES: &[&str] = &[
    "fs/ext4/journal",
    "fs/ext4/barrier",
    "fs/ext4/commit",
    "fs/ext4/data",
    "fs/ext4/journal_async_commit",
];

/// XFS's log tunables: they change nothing on another file system, and enter
/// the configuration hash only on XFS.
pub const XFS_LOG_TUNABLES: &[&str] = &[
    "fs/xfs/log",
    "fs/xfs/barrier",
    "fs/xfs/logbufs",
    "fs/xfs/logbsize",
];

/// mballoc versions (`crate::mballoc::MbVariant`).
pub const EXT4_MBALLOC: &[&str] = &["2.6.28", "2.6.30"];

/// The 2.6.28-era profiles: ext4 as in the October 2008 patch queue.
fn ext4_2008(p: Profile) -> bool {
    p <= Profile::V2_6_28
}

pub static TUNABLES: &[TunableDef] = &[
    TunableDef {
        name: "dio/boundary",
        unit: Unit::Enum(DIO_BOUNDARY),
        default: |p| if p >= Profile::V3_10 { 2 } else { 0 },
        min: 0,
        max: 2,
        doc: "How do_direct_IO honours BH_Boundary. per-chunk: 2.6.33-2.6.37, the \
              mapping's boundary flag is re-applied before every chunk and the open bio \
              is submitted before the page is added (splits ext2/ext3 reads into 4 KiB \
              bios). rfc-separate-meta: seed 002's RFC, boundary honoured only for file \
              systems that set separate_meta_reads (btrfs). last-chunk: 3.10 \
              (092c8d46, b1058b98), boundary only on the last chunk of a mapping and \
              the bio submitted after the page is added.",
    },
    TunableDef {
        name: "dio/write_flags",
        unit: Unit::Enum(DIO_WRITE_FLAGS),
        default: |p| match p {
            Profile::V2_4 | Profile::V2_6_28 => 0,
            Profile::V2_6_32 => 1,
            _ => 3,
        },
        min: 0,
        max: 3,
        doc: "Request flags of O_DIRECT writes. WRITE_SYNC (2.6.28: sync+unplug), \
              WRITE_ODIRECT (2.6.32: SYNCIO|UNPLUG), WRITE_SYNC_PLUG (the for-2.6.33 \
              branch: SYNC|NOIDLE), WRITE_ODIRECT_PLUG (2.6.33-2.6.37: SYNC; 3.10's \
              WRITE_ODIRECT has the same bits under on-stack plugging).",
    },
    TunableDef {
        name: "dio/flush24",
        unit: Unit::Enum(DIO_FLUSH_24),
        default: |_| 0,
        min: 0,
        max: 1,
        doc: "2.4 only: what generic_file_direct_IO flushes before each direct I/O. \
              data: the o_direct patch as merged (2.4.10), filemap_fdatasync and \
              fsync_inode_data_buffers, the data only. generic_osync_inode: seed 004's \
              intermediate patch, generic_osync_inode(inode, OSYNC_METADATA|OSYNC_DATA), \
              which also writes the inode's dirty indirect blocks and, when an \
              allocation or a size change dirtied it (I_DIRTY_DATASYNC), its inode-table \
              block, each synchronously.",
    },
    TunableDef {
        name: "fs/ext2/inode_table_blocks",
        unit: Unit::Count,
        default: |_| 512,
        min: 0,
        max: 32_000,
        doc: "Inode-table blocks at the start of each block group (8192 inodes of \
              256 bytes at 4 KiB blocks = 512), after the bitmaps.",
    },
    TunableDef {
        name: "fs/ext4/mballoc",
        unit: Unit::Enum(EXT4_MBALLOC),
        default: |p| if ext4_2008(p) { 0 } else { 1 },
        min: 0,
        max: 1,
        doc: "ext4 multiblock allocator version. 2.6.28: the October 2008 patch queue \
              as merged in 2.6.28: s_mb_last_group/start is updated by every data \
              allocation and used as the goal only for files smaller than \
              mb_stream_req; criterion 0 skips BLOCK_UNINIT groups; a file's first \
              goal is its inode's group start plus a pid colour plus the logical \
              block. 2.6.30 (to 2.6.37): 4ba74d00 (stream allocations of files larger \
              than mb_stream_req start from, and update, the global last allocation \
              point), a4912123 (data avoids the first group of a flex group, files \
              start in its second group) and 50797481 (no preallocation for the tail \
              of a closed file).",
    },
    TunableDef {
        name: "fs/ext4/mb_stream_req",
        unit: Unit::Count,
        default: |_| 16,
        min: 0,
        max: 1 << 24,
        doc: "mballoc mb_stream_req (blocks): files smaller than this share per-CPU \
              locality-group preallocation; larger ones get inode preallocation \
              (and, from 2.6.30, stream allocation).",
    },
    TunableDef {
        name: "fs/ext4/mb_group_prealloc",
        unit: Unit::Count,
        default: |_| 512,
        min: 1,
        max: 1 << 24,
        doc: "mballoc mb_group_prealloc (blocks): size of a locality-group \
              preallocation for small files.",
    },
    TunableDef {
        name: "fs/ext4/mb_max_to_scan",
        unit: Unit::Count,
        default: |_| 200,
        min: 1,
        max: 1 << 24,
        doc: "mballoc mb_max_to_scan: free extents measured before the best found \
              so far is taken (ext4_mb_check_limits).",
    },
    TunableDef {
        name: "fs/ext4/mb_min_to_scan",
        unit: Unit::Count,
        default: |_| 10,
        min: 0,
        max: 1 << 24,
        doc: "mballoc mb_min_to_scan: free extents measured before a good-enough \
              one is taken (ext4_mb_check_limits).",
    },
    TunableDef {
        name: "fs/ext4/mb_order2_req",
        unit: Unit::Count,
        default: |_| 2,
        min: 0,
        max: 32,
        doc: "mballoc mb_order2_req: power-of-two requests of at least 2^(n-1) \
              blocks try the buddy scan (criterion 0) first.",
    },
    TunableDef {
        name: "fs/ext4/max_writeback_run_blocks",
        unit: Unit::Count,
        default: |p| if ext4_2008(p) { 32768 } else { 2048 },
        min: 1,
        max: 1 << 32,
        doc: "Longest delalloc run ext4 writeback maps in one ext4_get_blocks call \
              (blocks). 2.6.28: no limit in mpage_add_bh_to_extent for extent files, \
              only ext4_ext_get_blocks's EXT_INIT_MAX_LEN (32768); mballoc's \
              normalisation still returns at most the 8 MiB window per call. \
              2.6.32-2.6.37: 8 MiB ('Don't go larger than mballoc is willing to \
              allocate'), 2048 blocks at 4 KiB.",
    },
    TunableDef {
        name: "fs/ext4/lazy_itable_init",
        unit: Unit::Bool,
        default: |p| i64::from(ext4_2008(p)),
        min: 0,
        max: 1,
        doc: "mke2fs -E lazy_itable_init=1 with the 2008 patch queue's in-kernel \
              inode-table zeroing: after mount, the inode tables of all INODE_UNINIT \
              groups (all but group 0) are dirtied in the block device's page cache \
              (the writeback load seen in seed 001). 2.6.37's ext4lazyinit thread is \
              not modelled.",
    },
    TunableDef {
        name: "fs/ext4/flex_bg_log",
        unit: Unit::Count,
        default: |_| 4,
        min: 0,
        max: 16,
        doc: "log2 of block groups per flex group (mke2fs -G; 4 = 16 groups). 0 \
              disables flex_bg: bitmaps and inode table at the start of each group.",
    },
    TunableDef {
        name: "fs/ext4/journal",
        unit: Unit::Bool,
        default: |_| 0,
        min: 0,
        max: 1,
        doc: "Run ext4's journal (fs/jbd2): handles from file creation, timestamp and \
              i_size updates and writeback's block allocation, the jbd2 thread's \
              commits (ordered inodes, descriptor, metadata and revoke blocks, commit \
              block), fsync through ext4_sync_file. 0 (the default, which keeps the \
              runs made before jbd2 was simulated): no journal I/O, fsync is page \
              writeback only.",
    },
    TunableDef {
        name: "fs/ext4/barrier",
        unit: Unit::Bool,
        default: |_| 1,
        min: 0,
        max: 1,
        doc: "ext4's barrier= mount option (JBD2_BARRIER, on by default): the commit \
              block carries a barrier (FLUSH|FUA from 2.6.37, REQ_PREFLUSH|REQ_FUA in \
              6.x) and fsync flushes the cache when the commit does not.",
    },
    TunableDef {
        name: "fs/ext4/commit",
        unit: Unit::Ms,
        default: |_| 5000,
        min: 1,
        max: 86_400_000,
        doc: "ext4's commit= mount option (j_commit_interval, JBD2_DEFAULT_MAX_COMMIT_AGE \
              5 s).",
    },
    TunableDef {
        name: "fs/ext4/data",
        unit: Unit::Enum(JOURNAL_DATA),
        default: |_| 0,
        min: 0,
        max: 2,
        doc: "ext4's data= mount option: ordered (the transaction's inodes written \
              before its commit block), writeback, journal.",
    },
    TunableDef {
        name: "fs/ext4/journal_async_commit",
        unit: Unit::Bool,
        default: |_| 0,
        min: 0,
        max: 1,
        doc: "ext4's journal_async_commit mount option: the checksummed commit block \
              goes out with the log blocks, without a barrier, and a cache flush \
              follows.",
    },
    TunableDef {
        name: "fs/xfs/writeio_log",
        unit: Unit::Count,
        default: |_| 16,
        min: 12,
        max: 30,
        doc: "XFS m_writeio_log: a buffered write past EOF reserves delalloc blocks \
              to the next 2^n-byte boundary (XFS_WRITEIO_LOG_LARGE = 16, 64 KiB; the \
              allocsize mount option).",
    },
    TunableDef {
        name: "fs/xfs/log",
        unit: Unit::Bool,
        default: |_| 1,
        min: 0,
        max: 1,
        doc: "Run XFS's log (xfs_log.rs): transactions of file creation, delayed \
              allocation, timestamps and size updates into iclogs (up to 2.6.38) or the \
              CIL (2.6.39+), and xfs_fsync's log force, written by the fsync caller into \
              the internal log with each era's flags. 0: fsync on XFS is page \
              writeback only.",
    },
    TunableDef {
        name: "fs/xfs/barrier",
        unit: Unit::Bool,
        default: |_| 1,
        min: 0,
        max: 1,
        doc: "XFS's barrier/nobarrier mount option (XFS_MOUNT_BARRIER, on by default): \
              log writes are ordered (WRITE_BARRIER in 2.6.3x, FLUSH|FUA from 2.6.37) \
              and fsync flushes the cache when its log force wrote none. 6.x has no \
              option and always flushes.",
    },
    TunableDef {
        name: "fs/xfs/logbufs",
        unit: Unit::Count,
        default: |_| 8,
        min: 2,
        max: 8,
        doc: "XFS's logbufs mount option: in-core log buffers (XLOG_MAX_ICLOGS, 8, \
              by default).",
    },
    TunableDef {
        name: "fs/xfs/logbsize",
        unit: Unit::Bytes,
        default: |_| 32768,
        min: 16384,
        max: 262144,
        doc: "XFS's logbsize mount option in bytes: the size of an in-core log \
              buffer (XLOG_BIG_RECORD_BSIZE, 32 KiB, by default; a power of two).",
    },
    TunableDef {
        name: "fs/ext3/journal",
        unit: Unit::Bool,
        default: |_| 1,
        min: 0,
        max: 1,
        doc: "Run ext3's journal (fs/jbd): handles from block allocation, i_size \
              changes and file creation, kjournald's commits (ordered data, log \
              blocks, commit block), fsync through ext3_sync_file. 0: ext3 behaves \
              as ext2 (no journal I/O, fsync is page writeback only).",
    },
    TunableDef {
        name: "fs/ext3/barrier",
        unit: Unit::Bool,
        default: |p| if p >= Profile::V3_10 { 1 } else { 0 },
        min: 0,
        max: 1,
        doc: "ext3's barrier= mount option: the commit block carries a barrier \
              (FLUSH|FUA from 2.6.37) and fsync flushes the cache when it commits \
              nothing. Off by default until 2.6.38 ('ext3: Turn on barriers by \
              default'), on in 3.10.",
    },
    TunableDef {
        name: "fs/ext3/commit",
        unit: Unit::Ms,
        default: |_| 5000,
        min: 1,
        max: 86_400_000,
        doc: "ext3's commit= mount option (j_commit_interval; JBD_DEFAULT_MAX_COMMIT_AGE \
              5 s): kjournald commits the running transaction this long after it \
              started.",
    },
    TunableDef {
        name: "fs/ext3/data",
        unit: Unit::Enum(JOURNAL_DATA),
        default: |_| 0,
        min: 0,
        max: 2,
        doc: "ext3's data= mount option: ordered (data buffers written by the commit \
              before the metadata that points to them), writeback (data not tracked), \
              journal (data logged like metadata).",
    },
];
