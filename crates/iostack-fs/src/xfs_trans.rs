//! What XFS's transactions log (the items `xfs_trans_log_buf` and
//! `xfs_trans_log_inode` join), for `xfs_log::XfsLog`: the file's creation and
//! the allocation at delayed-allocation conversion. Buffers are named by
//! their place in the AG (`xfs.rs`'s layout: the superblock, AGF, AGI and
//! AGFL sectors in the AG's first block, then the free-space and inode btree
//! roots, `XFS_PREALLOC_BLOCKS`).
//!
//! Each btree update is counted as the chunks the kernel's
//! `xfs_btree_log_recs`/`xfs_btree_log_block` dirty for a one-record change:
//! the record's chunk, and the header's when `numrecs` changes (an insert
//! or a delete: the by-size btree's re-filed record, a new inode chunk's
//! record). The exact byte ranges (a record straddling two chunks, a split)
//! are not modelled.

use crate::xfs_log::{Item, EXTENT_REC};

/// The file system's shape as the log items need it.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    /// Sectors per file-system block.
    pub spb: u64,
    pub inode_size: u64,
    /// A v5 (CRC) file system, as 6.x's mkfs.xfs makes: free-inode btree,
    /// `xfs_icreate` items, v3 inode cores.
    pub v5: bool,
}

/// AG-relative block of each btree root (`XFS_BNO_BLOCK`, `XFS_CNT_BLOCK`,
/// `XFS_IBT_BLOCK`, `XFS_FIBT_BLOCK`).
const BNO: u64 = 1;
const CNT: u64 = 2;
const IBT: u64 = 3;
const FIBT: u64 = 4;
/// `XFS_INODE_BIG_CLUSTER_SIZE`: inode buffers of 8 KiB.
const INODE_CLUSTER: u64 = 8192;
/// The on-disk inode core of v1/v2 inodes (`xfs_dinode_core`, 100 bytes) and
/// v3 (176): the literal area behind it holds a short-form directory.
fn dinode_core(g: &Geometry) -> u64 {
    if g.v5 {
        176
    } else {
        100
    }
}

fn buf(daddr: u64, len_bb: u64, regions: u32, chunks: u32) -> Item {
    Item::Buf {
        daddr,
        len_bb: len_bb as u32,
        regions,
        chunks,
    }
}

/// A btree block at AG block `agbno` with one record changed; `numrecs`
/// changed too when `insert`.
fn btree(g: &Geometry, ag_start: u64, agbno: u64, insert: bool) -> Item {
    let n = if insert { 2 } else { 1 };
    buf((ag_start + agbno) * g.spb, g.spb, n, n)
}

/// `xfs_alloc_vextent` of one extent in the AG starting at `ag_start`
/// (`xfs_alloc_fixup_trees`: the by-block record shrinks in place, the
/// by-size record is deleted and re-inserted; `xfs_alloc_log_agf`: freeblks
/// and longest, the AGF's first chunk).
fn alloc_ag(g: &Geometry, ag_start: u64) -> Vec<Item> {
    vec![
        buf(ag_start * g.spb + 1, 1, 1, 1),
        btree(g, ag_start, BNO, false),
        btree(g, ag_start, CNT, true),
    ]
}

/// The allocation transaction of `xfs_iomap_write_allocate` /
/// `xfs_bmapi_convert_delalloc` (and `xfs_iomap_write_direct`): the AG's
/// free-space btrees and AGF, and the inode with its extent list
/// (`XFS_ILOG_CORE | XFS_ILOG_DEXT`).
pub fn alloc_items(g: &Geometry, ag_start: u64, ino: u32, extents: u32) -> Vec<Item> {
    let mut v = alloc_ag(g, ag_start);
    v.push(Item::Inode {
        ino,
        fork: extents * EXTENT_REC,
        ts_only: false,
    });
    v
}

/// What a new inode chunk adds to the create (`xfs_ialloc_ag_alloc`): its
/// blocks' allocation, and the inode buffers `xfs_ialloc_inode_init` logs
/// (each inode's core, one chunk per inode, on v4) or an `xfs_icreate` item
/// (v5, 3.11+).
fn new_chunk(g: &Geometry, chunk: u64, chunk_blocks: u64) -> Vec<Item> {
    let mut v = alloc_ag(g, 0);
    if g.v5 {
        v.push(Item::Icreate { agbno: chunk });
        return v;
    }
    let bytes = chunk_blocks * g.spb * 512;
    let per_cluster = (INODE_CLUSTER / g.inode_size) as u32;
    let chunks_per_inode = g.inode_size.div_ceil(128) as u32;
    for c in 0..bytes.div_ceil(INODE_CLUSTER) {
        let daddr = chunk * g.spb + c * INODE_CLUSTER / 512;
        // One dirty region per inode unless inodes are a chunk apart.
        let regions = if chunks_per_inode > 1 { per_cluster } else { 1 };
        v.push(buf(daddr, INODE_CLUSTER / 512, regions, per_cluster));
    }
    v
}

/// The directory entry's bytes in a short-form directory
/// (`xfs_dir2_sf_entsize`: namelen, offset, name, inode number, and the
/// file type on v5).
pub fn sf_entry_bytes(g: &Geometry, name_len: usize) -> u64 {
    1 + 2 + name_len as u64 + 4 + u64::from(g.v5)
}

/// `xfs_create` in AG 0: the AGI (`agi_count`/`agi_freecount`), the inode
/// btree record (and the free-inode btree's on v5), the new inode's core,
/// and the parent directory: its core with the short-form entries in the
/// literal area (`XFS_ILOG_DDATA`), or, once they outgrow it, the directory
/// data block's entry and free-space header (`xfs_dir2_data_log_entry`,
/// `xfs_dir2_data_log_header`). `chunk`: the inode chunk just allocated.
pub fn create_items(
    g: &Geometry,
    ino: u32,
    parent: u32,
    dir_bytes: u64,
    chunk: Option<(u64, u64)>,
) -> Vec<Item> {
    let mut v = vec![buf(2, 1, 1, 1), btree(g, 0, IBT, chunk.is_some())];
    if g.v5 {
        v.push(btree(g, 0, FIBT, chunk.is_some()));
    }
    if let Some((c, n)) = chunk {
        v.extend(new_chunk(g, c, n));
    }
    v.push(Item::Inode {
        ino,
        fork: 0,
        ts_only: false,
    });
    let literal = g.inode_size - dinode_core(g);
    if dir_bytes <= literal {
        v.push(Item::Inode {
            ino: parent,
            fork: dir_bytes as u32,
            ts_only: false,
        });
    } else {
        v.push(Item::Inode {
            ino: parent,
            fork: 0,
            ts_only: false,
        });
        // The directory block's key: past the file system, never a real
        // block (the flat namespace keeps no directory blocks).
        v.push(buf(u64::MAX - 1, g.spb, 2, 2));
    }
    v
}
