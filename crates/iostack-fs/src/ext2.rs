//! ext2/ext3 block mapping (K2637 `fs/ext3/inode.c`, `fs/ext2/inode.c`).
//!
//! An inode maps its first 12 blocks directly, then through an indirect block of
//! `block_size / 4` pointers (4 MiB of data at 4 KiB blocks), a double-indirect and
//! a triple-indirect block. `ext3_alloc_blocks` allocates the indirect block(s) a
//! new data block needs *before* that data block, in one contiguous run, so a file
//! written sequentially on an empty file system is laid out
//! `D0..D11 IND0 D12..D1035 DIND IND1 D1036..D2059 IND2 D2060..`: a one-block gap
//! every 4 MiB. `get_block` maps a contiguous run up to the next boundary and sets
//! `BH_Boundary` when the run reaches it.
//!
//! Free space is a cursor moving up the disk, skipping each block group's metadata
//! (superblock and descriptor backups in sparse groups, bitmaps, inode table): the
//! layout a sequential writer gets on a fresh file system. Block reservation
//! windows and concurrent-writer interleaving come with the buffered-I/O work.

use crate::{BlockMapping, FsError, GetBlock};
use std::collections::BTreeMap;

pub const EXT2_NDIR_BLOCKS: u64 = 12;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ext2Params {
    pub block_size: u32,
    /// Blocks in the file system (the partition size in blocks).
    pub blocks: u64,
    pub blocks_per_group: u64,
    /// Inode-table blocks per group.
    pub inode_table_blocks: u64,
    /// ext3 (has a journal) rather than ext2; the mapping is the same.
    pub journal: bool,
}

/// A contiguous run of a file's data blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub lblk: u64,
    pub pblk: u64,
    pub len: u64,
}

/// An indirect block's place in the mapping tree: (depth of the chain,
/// level in it from 1 at the inode's slot, the offsets above it).
pub type IndKey = (u8, u8, u64);

#[derive(Clone, Debug)]
pub struct Inode {
    pub name: String,
    pub size: u64,
    /// Data blocks, keyed by their first logical block (a file written at
    /// random offsets has holes between them).
    pub extents: BTreeMap<u64, Extent>,
    /// Indirect blocks (IND, DIND, TIND) in allocation order.
    pub meta_blocks: Vec<u64>,
    /// Each indirect block by its place in the mapping tree: (depth of the
    /// chain, level in it from 1 at the inode's slot, the offsets above it).
    pub ind: BTreeMap<IndKey, u64>,
    /// 2.4's `i_dirty_buffers`: the indirect blocks from this index on were
    /// allocated during the run and are dirty (`ext2_alloc_branch` →
    /// `mark_buffer_dirty_inode`).
    pub meta_clean: usize,
    /// `I_DIRTY_DATASYNC`: an allocation (`ext2_splice_branch` →
    /// `mark_inode_dirty`), a size change or the creation dirtied the inode
    /// since it was last written.
    pub datasync_dirty: bool,
}

impl Inode {
    /// The end of the last data block allocated (blocks before it may be
    /// holes).
    pub fn nblocks(&self) -> u64 {
        self.extents
            .values()
            .next_back()
            .map_or(0, |e| e.lblk + e.len)
    }

    /// (physical block, blocks left in the extent) of `lblk`, if mapped.
    fn lookup(&self, lblk: u64) -> Option<(u64, u64)> {
        let e = self.extents.range(..=lblk).next_back()?.1;
        (lblk < e.lblk + e.len).then(|| (e.pblk + (lblk - e.lblk), e.lblk + e.len - lblk))
    }

    /// The first mapped block after `lblk` (where a hole from `lblk` ends).
    fn next_mapped(&self, lblk: u64) -> Option<u64> {
        self.extents.range(lblk + 1..).next().map(|(&l, _)| l)
    }

    /// Add data block `lb` at `pb`, growing the extent before it when both follow.
    fn add_block(&mut self, lb: u64, pb: u64) {
        self.add_run(lb, pb, 1);
    }

    /// `add_block` on the `k` blocks from `lb`, mapped from `pb` on: the same
    /// map as `k` calls, one lookup.
    fn add_run(&mut self, lb: u64, pb: u64, k: u64) {
        if let Some((_, e)) = self.extents.range_mut(..lb).next_back() {
            if e.lblk + e.len == lb && e.pblk + e.len == pb {
                e.len += k;
                return;
            }
        }
        self.extents.insert(
            lb,
            Extent {
                lblk: lb,
                pblk: pb,
                len: k,
            },
        );
    }
}

pub struct Ext2 {
    p: Ext2Params,
    ptrs_bits: u32,
    /// Next free block of the sequential allocator.
    cursor: u64,
    inodes: Vec<Inode>,
    /// The first inode of each name (`lookup` without a scan of every inode:
    /// fs_mark creates tens of thousands of files).
    names: std::collections::BTreeMap<String, u32>,
    /// Group descriptor table blocks (fixed by the geometry).
    gdt_blocks: u64,
    /// `(group, first data block)` of the allocator's last group.
    alloc_group: (u64, u64),
    /// ext3's journal: (first block, blocks), skipped by the allocator.
    journal_area: Option<(u64, u64)>,
}

/// Inode size of mke2fs 1.41's `mke2fs.conf` default (`inode_size = 256`).
const INODE_SIZE: u64 = 256;
/// `EXT2_GOOD_OLD_FIRST_INO`: the first inode a file gets.
const FIRST_INO: u64 = 11;
/// Bytes per group descriptor (`struct ext3_group_desc`).
const DESC_SIZE: u64 = 32;

impl Ext2 {
    pub fn new(p: Ext2Params) -> Self {
        assert!(p.block_size.is_power_of_two() && p.block_size >= 1024);
        let ptrs_bits = (p.block_size / 4).trailing_zeros();
        let mut fs = Ext2 {
            p,
            ptrs_bits,
            cursor: 0,
            inodes: Vec::new(),
            names: std::collections::BTreeMap::new(),
            gdt_blocks: 0,
            alloc_group: (u64::MAX, 0),
            journal_area: None,
        };
        fs.gdt_blocks = (fs.groups() * DESC_SIZE).div_ceil(fs.p.block_size as u64);
        fs.cursor = fs.skip_group_meta(0);
        if fs.p.journal {
            fs.journal_area = fs.mkjournal();
        }
        fs
    }

    /// mke2fs's journal (`ext2fs_add_journal_inode` → `write_journal_inode`,
    /// e2fsprogs 1.41): `ext2fs_default_journal_size` blocks from the first data
    /// block of the middle group (no flex_bg on ext3). The journal inode's own
    /// indirect blocks are not modelled: the area is contiguous.
    fn mkjournal(&self) -> Option<(u64, u64)> {
        let len = crate::ext4::default_journal_blocks(self.p.blocks);
        if len == 0 {
            return None;
        }
        let g = (self.p.blocks / 2) / self.p.blocks_per_group;
        let start = g * self.p.blocks_per_group + self.group_meta(g);
        (start + len <= self.p.blocks).then_some((start, len))
    }

    /// ext3's journal area: (first block, blocks).
    pub fn journal_area(&self) -> Option<(u64, u64)> {
        self.journal_area
    }

    /// The block bitmap of the group holding block `b`.
    pub fn block_bitmap_of(&self, b: u64) -> u64 {
        let g = b / self.p.blocks_per_group;
        let sb = if has_super(g) { 1 + self.gdt_blocks } else { 0 };
        g * self.p.blocks_per_group + sb
    }

    /// The group-descriptor block describing the group of block `b` (the
    /// primary table after the superblock, `ext3_get_group_desc`).
    pub fn group_desc_of(&self, b: u64) -> u64 {
        let g = b / self.p.blocks_per_group;
        1 + g * DESC_SIZE / self.p.block_size as u64
    }

    fn inodes_per_group(&self) -> u64 {
        (self.p.inode_table_blocks * self.p.block_size as u64 / INODE_SIZE).max(1)
    }

    /// Group and index in it of file `ino` (the file system's `ino`-th file gets
    /// inode `FIRST_INO + 1 + ino`; `find_group_other` keeps files in their
    /// parent's group while it has free inodes, so they fill groups in order).
    fn inode_place(&self, ino: u32) -> (u64, u64) {
        let n = FIRST_INO + ino as u64;
        let ipg = self.inodes_per_group();
        (n / ipg, n % ipg)
    }

    /// The inode-table block holding file `ino`'s inode (`ext3_get_inode_loc`).
    pub fn inode_block(&self, ino: u32) -> u64 {
        let (g, i) = self.inode_place(ino);
        let sb = if has_super(g) { 1 + self.gdt_blocks } else { 0 };
        let per_block = self.p.block_size as u64 / INODE_SIZE;
        g * self.p.blocks_per_group + sb + 2 + i / per_block
    }

    /// The metadata `ext3_new_inode` dirties: inode bitmap, group descriptor,
    /// inode-table block. (The directory entry's block is not modelled: files
    /// have no directories.)
    pub fn create_meta(&self, ino: u32) -> Vec<u64> {
        let (g, _) = self.inode_place(ino);
        let base = g * self.p.blocks_per_group;
        vec![
            self.block_bitmap_of(base) + 1,
            self.group_desc_of(base),
            self.inode_block(ino),
        ]
    }

    pub fn params(&self) -> &Ext2Params {
        &self.p
    }

    pub fn inode(&self, ino: u32) -> &Inode {
        &self.inodes[ino as usize]
    }

    pub fn inode_mut(&mut self, ino: u32) -> &mut Inode {
        &mut self.inodes[ino as usize]
    }

    pub fn lookup(&self, name: &str) -> Option<u32> {
        self.names.get(name).copied()
    }

    /// The physical block of file block `lblk`, if mapped.
    pub fn lookup_block(&self, ino: u32, lblk: u64) -> Option<u64> {
        self.inodes[ino as usize].lookup(lblk).map(|(p, _)| p)
    }

    fn groups(&self) -> u64 {
        self.p.blocks.div_ceil(self.p.blocks_per_group)
    }

    /// Metadata blocks at the start of group `g`.
    fn group_meta(&self, g: u64) -> u64 {
        let sb = if has_super(g) { 1 + self.gdt_blocks } else { 0 };
        sb + 2 + self.p.inode_table_blocks
    }

    /// The first allocatable block at or after `b`.
    fn skip_group_meta(&self, b: u64) -> u64 {
        let g = b / self.p.blocks_per_group;
        let first_data = g * self.p.blocks_per_group + self.group_meta(g);
        b.max(first_data)
    }

    fn alloc_block(&mut self) -> Result<u64, FsError> {
        // `skip_group_meta`, with the group's first data block kept.
        let g = self.cursor / self.p.blocks_per_group;
        if self.alloc_group.0 != g {
            self.alloc_group = (g, g * self.p.blocks_per_group + self.group_meta(g));
        }
        let b = self.cursor.max(self.alloc_group.1);
        if let Some((js, jl)) = self.journal_area {
            if b >= js && b < js + jl {
                self.cursor = js + jl;
                return self.alloc_block();
            }
        }
        if b >= self.p.blocks {
            return Err(FsError::NoSpace);
        }
        self.cursor = b + 1;
        Ok(b)
    }

    /// `ext3_block_to_path`: depth of the mapping chain, the offsets within each
    /// level, and `blocks_to_boundary`.
    pub fn block_to_path(&self, lblk: u64) -> Result<(usize, [u64; 4], u64), FsError> {
        let ptrs = 1u64 << self.ptrs_bits;
        let mut off = [0u64; 4];
        // Walk the tiers as ext3_block_to_path does, subtracting each tier's size.
        let ind = lblk.checked_sub(EXT2_NDIR_BLOCKS);
        let dind = ind.and_then(|i| i.checked_sub(ptrs));
        let tind = dind.and_then(|i| i.checked_sub(ptrs * ptrs));
        let (depth, fin, i) = match (ind, dind, tind) {
            (None, _, _) => {
                off[0] = lblk;
                (1, EXT2_NDIR_BLOCKS, lblk)
            }
            (Some(i), _, _) if i < ptrs => {
                off[1] = i;
                (2, ptrs, i)
            }
            (_, Some(i), _) if i < ptrs * ptrs => {
                off[1] = i >> self.ptrs_bits;
                off[2] = i & (ptrs - 1);
                (3, ptrs, i)
            }
            (_, _, Some(i)) if i < ptrs * ptrs * ptrs => {
                off[1] = i >> (2 * self.ptrs_bits);
                off[2] = (i >> self.ptrs_bits) & (ptrs - 1);
                off[3] = i & (ptrs - 1);
                (4, ptrs, i)
            }
            _ => return Err(FsError::TooLarge(lblk * self.p.block_size as u64)),
        };
        let boundary = fin - 1 - (i & (ptrs - 1));
        Ok((depth, off, boundary))
    }

    /// The places (`Inode::ind` keys) of the indirect blocks of `lblk`'s
    /// chain, from the inode's slot down (`ext3_get_branch`'s walk), and how
    /// many there are.
    fn chain_keys(&self, lblk: u64) -> Result<([IndKey; 3], usize), FsError> {
        let (depth, off, _) = self.block_to_path(lblk)?;
        let mut keys = [(0, 0, 0); 3];
        let mut prefix = 0u64;
        for level in 1..depth {
            keys[level - 1] = (depth as u8, level as u8, prefix);
            prefix = (prefix << self.ptrs_bits) | off[level];
        }
        Ok((keys, depth - 1))
    }

    /// The indirect block holding data block `lblk`'s pointer, if it exists
    /// (None for the inode's direct slots).
    pub fn parent_of(&self, ino: u32, lblk: u64) -> Option<u64> {
        let (keys, n) = self.chain_keys(lblk).ok()?;
        let key = keys[..n].last()?;
        self.inodes[ino as usize].ind.get(key).copied()
    }

    /// `ext3_alloc_branch` for data block `lb`: the indirect blocks its chain
    /// lacks (from the highest missing level down), then the data block, each
    /// from the allocator, so a file grown in order is laid out with its
    /// indirect blocks before the data they map, and a block written in a
    /// hole gets only its own branch (never the hole's).
    fn alloc_branch(&mut self, ino: u32, lb: u64) -> Result<(), FsError> {
        let (keys, n) = self.chain_keys(lb)?;
        for key in &keys[..n] {
            if self.inodes[ino as usize].ind.contains_key(key) {
                continue;
            }
            let m = self.alloc_block()?;
            let inode = &mut self.inodes[ino as usize];
            inode.ind.insert(*key, m);
            inode.meta_blocks.push(m);
        }
        let pb = self.alloc_block()?;
        self.inodes[ino as usize].add_block(lb, pb);
        Ok(())
    }

    /// Append `nblocks` data blocks to `ino` in layout order: `alloc_branch`
    /// on each block, taken a leaf at a time. The first block of each leaf
    /// (the run of blocks that `ext3_block_to_path`'s `blocks_to_boundary`
    /// says share their indirect chain) gets the chain it lacks; the leaf's
    /// other blocks need no indirect block, so they are the allocator's next
    /// blocks (`alloc_run`), as many at once as it would give one by one.
    fn append_blocks(&mut self, ino: u32, nblocks: u64) -> Result<(), FsError> {
        let start = self.inodes[ino as usize].nblocks();
        let end = start + nblocks;
        let mut lb = start;
        while lb < end {
            let (_, _, boundary) = self.block_to_path(lb)?;
            let leaf_end = lb.saturating_add(boundary + 1).min(end);
            self.alloc_branch(ino, lb)?;
            lb += 1;
            while lb < leaf_end {
                let (pb, k) = self.alloc_run(leaf_end - lb)?;
                self.inodes[ino as usize].add_run(lb, pb, k);
                lb += k;
            }
        }
        Ok(())
    }

    /// Up to `max` blocks from the allocator at once: the block `alloc_block`
    /// gives, and those after it that its next calls would give in order,
    /// which is up to the end of the block's group (the next group starts
    /// after its metadata), the journal (skipped) or the file system.
    fn alloc_run(&mut self, max: u64) -> Result<(u64, u64), FsError> {
        let b = self.alloc_block()?;
        let group_end = (b / self.p.blocks_per_group + 1) * self.p.blocks_per_group;
        let mut lim = group_end.min(self.p.blocks);
        if let Some((js, _)) = self.journal_area {
            if b < js {
                lim = lim.min(js);
            }
        }
        let k = max.min(lim - b).max(1);
        self.cursor = b + k;
        Ok((b, k))
    }

    /// Create a file of `size` bytes written sequentially from its first block,
    /// starting the allocation at block `goal` (or where the last file ended).
    pub fn create_sequential(
        &mut self,
        name: &str,
        size: u64,
        goal: Option<u64>,
    ) -> Result<u32, FsError> {
        if let Some(g) = goal {
            if g < self.cursor {
                return Err(FsError::NoSpace);
            }
            self.cursor = g;
        }
        let ino = self.inodes.len() as u32;
        self.names.entry(name.to_string()).or_insert(ino);
        self.inodes.push(Inode {
            name: name.to_string(),
            size,
            extents: BTreeMap::new(),
            meta_blocks: Vec::new(),
            ind: BTreeMap::new(),
            meta_clean: 0,
            datasync_dirty: false,
        });
        let bs = self.p.block_size as u64;
        self.append_blocks(ino, size.div_ceil(bs))?;
        // Laid out before the run: written and clean.
        let inode = &mut self.inodes[ino as usize];
        inode.meta_clean = inode.meta_blocks.len();
        Ok(ino)
    }

    /// `ext2_truncate` to 0 (Bonnie's `unlink` and `O_CREAT` of the same name):
    /// the file's blocks are freed and, as `ext2_new_block` searches from the
    /// inode's group goal on an otherwise empty group, the next allocation gets
    /// them again. The sequential allocator can only give blocks back when the
    /// file was the last thing allocated; otherwise they stay used (leaked),
    /// which is said by the return value (false).
    pub fn truncate(&mut self, ino: u32) -> bool {
        let inode = &mut self.inodes[ino as usize];
        let data = || inode.extents.values();
        let first = data()
            .map(|e| e.pblk)
            .chain(inode.meta_blocks.iter().copied())
            .min();
        let last = data()
            .map(|e| e.pblk + e.len)
            .chain(inode.meta_blocks.iter().map(|b| b + 1))
            .max();
        inode.extents.clear();
        inode.meta_blocks.clear();
        inode.ind.clear();
        inode.meta_clean = 0;
        inode.size = 0;
        inode.datasync_dirty = true;
        match (first, last) {
            (Some(f), Some(l)) if l == self.cursor => {
                self.cursor = f;
                self.alloc_group = (u64::MAX, 0);
                true
            }
            (None, _) => true,
            _ => false,
        }
    }

    /// What `generic_osync_inode(inode, OSYNC_METADATA|OSYNC_DATA)` writes
    /// synchronously for a file whose data is not in the page cache (2.4
    /// `fs/inode.c`): `fsync_inode_buffers` (the dirty indirect blocks of
    /// `i_dirty_buffers`), then `write_inode_now(inode, 1)` → `ext2_write_inode`
    /// → `ext2_update_inode`'s `ll_rw_block` of the inode-table block when the
    /// inode is `I_DIRTY_DATASYNC` (a timestamp alone, `I_DIRTY_SYNC`, is not
    /// written without `OSYNC_INODE`). Marks them clean.
    pub fn osync_inode(&mut self, ino: u32) -> crate::OsyncWrites {
        let inode_block = self.inode_block(ino);
        let inode = &mut self.inodes[ino as usize];
        let buffers = inode.meta_blocks[inode.meta_clean..].to_vec();
        inode.meta_clean = inode.meta_blocks.len();
        let dirty = std::mem::take(&mut inode.datasync_dirty);
        crate::OsyncWrites {
            buffers,
            inode: dirty.then_some(inode_block),
        }
    }
}

impl Ext2 {
    /// The sequential allocator's next block: allocations since an earlier
    /// value took the blocks between (frees by `truncate` move it back).
    pub fn alloc_cursor(&self) -> u64 {
        self.cursor
    }

    /// The buffers 2.4's `ext2_new_block` (`fs/ext2/balloc.c`) marks dirty
    /// when it allocates in `[lo, hi)`, and `ext2_free_blocks` when it frees
    /// there: the superblock's (`s_sbh`, the free count), and for each group
    /// touched its group-descriptor block (`bh2`) and block bitmap (`bh`).
    pub fn balloc_buffers(&self, lo: u64, hi: u64) -> Vec<u64> {
        if lo >= hi {
            return Vec::new();
        }
        // The superblock sits 1 KiB into the file system: block 1 of a 1 KiB
        // file system (s_first_data_block), else block 0.
        let mut v = vec![u64::from(self.p.block_size == 1024)];
        let bpg = self.p.blocks_per_group;
        for g in lo / bpg..=(hi - 1) / bpg {
            v.push(self.group_desc_of(g * bpg));
            v.push(self.block_bitmap_of(g * bpg));
        }
        v.sort_unstable();
        v.dedup();
        v
    }

    /// 2.4's `ext2_write_inode(inode, 0)` from kupdate's `sync_inodes`:
    /// `ext2_update_inode` copies the inode into its inode-table buffer and
    /// marks that dirty (written later by the buffer flushing); the inode is
    /// clean. Returns the buffer's block.
    pub fn write_inode_async(&mut self, ino: u32) -> u64 {
        self.inodes[ino as usize].datasync_dirty = false;
        self.inode_block(ino)
    }

    /// bdflush or kupdated wrote indirect block `block` of `ino`. They walk
    /// the dirty list oldest first, which for one inode is allocation order,
    /// so the dirty blocks stay a suffix of `meta_blocks`: the written one is
    /// the first dirty one (a block already written elsewhere is ignored).
    pub fn indirect_written(&mut self, ino: u32, block: u64) {
        let inode = &mut self.inodes[ino as usize];
        if inode.meta_blocks.get(inode.meta_clean) == Some(&block) {
            inode.meta_clean += 1;
        }
    }
}

/// Groups carrying superblock and descriptor backups with sparse_super: 0, 1
/// and powers of 3, 5 and 7 (`ext2_bg_has_super`, `ext3_bg_has_super`,
/// `ext4_bg_has_super`).
pub fn has_super(g: u64) -> bool {
    g <= 1 || [3u64, 5, 7].iter().any(|&b| is_power_of(g, b))
}

fn is_power_of(mut g: u64, b: u64) -> bool {
    if g == 0 {
        return false;
    }
    while g % b == 0 {
        g /= b;
    }
    g == 1
}

impl GetBlock for Ext2 {
    fn blkbits(&self) -> u32 {
        self.p.block_size.trailing_zeros()
    }

    /// `ext3_get_blocks_handle`.
    fn get_block(
        &mut self,
        ino: u32,
        lblk: u64,
        max_blocks: u64,
        create: bool,
    ) -> Result<BlockMapping, FsError> {
        assert!(max_blocks > 0);
        let (_, _, blocks_to_boundary) = self.block_to_path(lblk)?;
        let inode = &self.inodes[ino as usize];
        if let Some((pblk, left)) = inode.lookup(lblk) {
            // Map more blocks while they follow on disk, up to the boundary.
            let count = max_blocks.min(blocks_to_boundary + 1).min(left);
            return Ok(BlockMapping {
                pblk: Some(pblk),
                count,
                boundary: count > blocks_to_boundary,
                new: false,
            });
        }
        if !create {
            return Ok(BlockMapping {
                pblk: None,
                count: 1,
                boundary: false,
                new: false,
            });
        }
        // Allocate the hole at lblk (`ext3_blks_to_allocate`: up to the
        // boundary and the next mapped block), each block with its branch.
        let mut count = max_blocks.min(blocks_to_boundary + 1);
        if let Some(next) = inode.next_mapped(lblk) {
            count = count.min(next - lblk);
        }
        for lb in lblk..lblk + count {
            self.alloc_branch(ino, lb)?;
        }
        // ext2_splice_branch: i_ctime and mark_inode_dirty.
        self.inodes[ino as usize].datasync_dirty = true;
        let (pblk, left) = self.inodes[ino as usize]
            .lookup(lblk)
            .expect("just allocated");
        let count = count.min(left);
        Ok(BlockMapping {
            pblk: Some(pblk),
            count,
            boundary: count > blocks_to_boundary,
            new: true,
        })
    }

    fn i_size(&self, ino: u32) -> u64 {
        self.inodes[ino as usize].size
    }

    fn set_i_size(&mut self, ino: u32, size: u64) {
        let inode = &mut self.inodes[ino as usize];
        // mark_inode_dirty after the size changed.
        inode.datasync_dirty |= inode.size != size;
        inode.size = size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs() -> Ext2 {
        Ext2::new(Ext2Params {
            block_size: 4096,
            blocks: 1 << 20,
            blocks_per_group: 32768,
            inode_table_blocks: 512,
            journal: false,
        })
    }

    /// `append_blocks` (a leaf at a time, `alloc_run`) lays files out as
    /// `alloc_branch` on every block does: the same extents, indirect blocks
    /// and allocator cursor, over group boundaries, the journal, block sizes
    /// and files that end in every tier.
    #[test]
    fn leaf_runs_lay_out_as_block_by_block() {
        let mut rng = iostack_des::Rng::stream(iostack_des::Seed(7), "ext2-append");
        for _ in 0..60 {
            let block_size = [1024u32, 4096][rng.below(2) as usize];
            let p = Ext2Params {
                block_size,
                blocks: 1 << 15 << rng.below(4),
                blocks_per_group: 1 << 10 << rng.below(4),
                inode_table_blocks: 1 + rng.below(64),
                journal: rng.below(2) == 1,
            };
            let (mut a, mut b) = (Ext2::new(p.clone()), Ext2::new(p));
            for f in 0..1 + rng.below(4) {
                let order = 4 + rng.below(14);
                let blocks = rng.below(1 << order);
                let name = format!("f{f}");
                let got = a.create_sequential(&name, blocks * block_size as u64, None);
                // The reference: the per-block walk create_sequential used.
                let ino = b.inodes.len() as u32;
                let want = b.create_sequential(&name, 0, None).and_then(|i| {
                    assert_eq!(i, ino);
                    (0..blocks).try_for_each(|lb| b.alloc_branch(ino, lb))?;
                    Ok(ino)
                });
                assert_eq!(got.is_ok(), want.is_ok(), "{blocks} blocks");
                let (x, y) = (&a.inodes[ino as usize], &b.inodes[ino as usize]);
                assert_eq!(x.extents, y.extents);
                assert_eq!(x.ind, y.ind);
                assert_eq!(x.meta_blocks, y.meta_blocks);
                assert_eq!(a.cursor, b.cursor);
                if got.is_err() {
                    break;
                }
            }
        }
    }

    #[test]
    fn sequential_layout_has_indirect_gaps() {
        let mut f = fs();
        let ino = f.create_sequential("a", 12 << 20, Some(16384)).unwrap();
        let i = f.inode(ino);
        // D0..D11 at 16384.., IND0 at 16396, D12.. at 16397.
        assert_eq!(
            i.extents[&0],
            Extent {
                lblk: 0,
                pblk: 16384,
                len: 12
            }
        );
        assert_eq!(i.meta_blocks[0], 16396);
        assert_eq!(
            i.extents[&12],
            Extent {
                lblk: 12,
                pblk: 16397,
                len: 1024
            }
        );
        // DIND and IND1 before D1036.
        assert_eq!(&i.meta_blocks[1..3], &[16397 + 1024, 16397 + 1025]);
        assert_eq!(i.extents[&1036].lblk, 1036);
        assert_eq!(i.extents[&1036].pblk, 16397 + 1026);
        // IND2 before D2060.
        assert_eq!(i.extents[&2060].lblk, 2060);
        assert_eq!(i.extents[&2060].pblk, i.meta_blocks[3] + 1);
    }

    #[test]
    fn get_block_stops_at_boundary() {
        let mut f = fs();
        let ino = f.create_sequential("a", 8 << 20, Some(16384)).unwrap();
        let m = f.get_block(ino, 0, 16, false).unwrap();
        assert_eq!((m.pblk, m.count, m.boundary), (Some(16384), 12, true));
        let m = f.get_block(ino, 12, 4, false).unwrap();
        assert_eq!((m.pblk, m.count, m.boundary), (Some(16397), 4, false));
        let m = f.get_block(ino, 1032, 16, false).unwrap();
        assert_eq!((m.count, m.boundary), (4, true));
        let m = f.get_block(ino, 5000, 1, false).unwrap();
        assert_eq!(m.pblk, None);
    }

    #[test]
    fn groups_skip_metadata() {
        let mut f = fs();
        // Group 1 has a superblock backup; its data starts after sb+gdt+bitmaps+itable.
        let ino = f.create_sequential("a", 4096, Some(32768)).unwrap();
        let gdt = (32u64 * 32).div_ceil(4096);
        assert_eq!(f.inode(ino).extents[&0].pblk, 32768 + 1 + gdt + 2 + 512);
        // Group 2 has none.
        let ino = f.create_sequential("b", 4096, Some(65536)).unwrap();
        assert_eq!(f.inode(ino).extents[&0].pblk, 65536 + 2 + 512);
    }

    #[test]
    fn balloc_buffers_are_the_superblock_and_each_groups_descriptor_and_bitmap() {
        let f = fs();
        assert!(f.balloc_buffers(100, 100).is_empty());
        // Group 0: superblock (block 0), descriptor table (block 1), bitmap.
        let g0 = f.balloc_buffers(20_000, 20_010);
        assert_eq!(g0, vec![0, 1, f.block_bitmap_of(0)]);
        assert!(g0[2] > 1);
        // Across groups 0 to 2: each group's bitmap; one descriptor block
        // holds all their descriptors (32 bytes each).
        let across = f.balloc_buffers(30_000, 70_000);
        let want = vec![
            0,
            1,
            f.block_bitmap_of(0),
            f.block_bitmap_of(32768),
            f.block_bitmap_of(65536),
        ];
        assert_eq!(across, want);
    }

    #[test]
    fn indirect_blocks_are_cleaned_in_allocation_order() {
        let mut f = fs();
        let ino = f.create_sequential("a", 0, Some(16384)).unwrap();
        let mut l = 0;
        while l < 2000 {
            l += f.get_block(ino, l, 2000 - l, true).unwrap().count;
        }
        let meta = f.inode(ino).meta_blocks.clone();
        assert_eq!(meta.len(), 3, "IND0, DIND, IND1");
        // A block written out of order is not taken for the first dirty one.
        f.indirect_written(ino, meta[1]);
        assert_eq!(f.inode(ino).meta_clean, 0);
        f.indirect_written(ino, meta[0]);
        f.indirect_written(ino, meta[1]);
        assert_eq!(f.inode(ino).meta_clean, 2);
        let w = f.osync_inode(ino);
        assert_eq!(w.buffers, vec![meta[2]]);
    }
}
