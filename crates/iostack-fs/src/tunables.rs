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
        name: "fs/ext2/inode_table_blocks",
        unit: Unit::Count,
        default: |_| 512,
        min: 0,
        max: 32_000,
        doc: "Inode-table blocks at the start of each block group (8192 inodes of \
              256 bytes at 4 KiB blocks = 512), after the bitmaps.",
    },
];
