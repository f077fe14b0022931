//! ext4 with delayed allocation (K2628 and K2637 `fs/ext4/{inode,extents,super}.c`;
//! mke2fs layout from e2fsprogs 1.41, `lib/ext2fs/{initialize,alloc_tables,mkjournal}.c`).
//!
//! * **Layout** (`Ext4::new`, what `mke2fs -t ext4` of 2008 writes): block groups of
//!   `blocks_per_group`; superblock + group descriptors + reserved GDT blocks (resize
//!   inode, `calc_reserved_gdt_blocks`) at the start of groups 0, 1 and the powers
//!   of 3, 5 and 7 (sparse_super); with flex_bg the block bitmaps, inode bitmaps and
//!   inode tables of each flex group packed at the start of its first group
//!   (`flexbg_offset`: bitmaps at +0, +flex, tables at +2·flex); the root
//!   directory, lost+found and the resize inode's block after group 0's tables; the
//!   journal near the middle of the file system (`write_journal_inode`). With
//!   uninit_bg every group but the last is `BLOCK_UNINIT` until something is
//!   allocated in it (mke2fs clears it where it puts bitmaps, tables or the journal).
//! * **Extent tree**: one sorted map logical → (physical, length) per inode, merging
//!   a new extent into its left neighbour and then the right one while the sum
//!   stays within `EXT_INIT_MAX_LEN` (`ext4_ext_insert_extent`,
//!   `ext4_can_extents_be_merged`, `ext4_ext_try_to_merge`). Index/leaf blocks are
//!   not modelled (leaf boundaries do not stop merges, and the tree's own blocks
//!   are not allocated).
//! * **Delayed allocation**: `delalloc_reserve` is `ext4_da_get_block_prep` →
//!   `ext4_da_reserve_space` (claim against free − dirty, `ext4_claim_free_blocks`;
//!   the worst-case metadata reservation is not modelled); `map_for_writeback` is
//!   `ext4_da_get_block_write` → `ext4_get_blocks_wrap` → `ext4_ext_get_blocks` →
//!   `ext4_mb_new_blocks` for one run.
//! * **Direct I/O**: `GetBlock::get_block` is `ext4_get_block` → `ext4_get_blocks_wrap`.

use crate::ext2::has_super;
use crate::extent_fs::{check_tiling, ExtentFs, FileExtent, RangeSet};
use crate::ialloc::Ialloc;
use crate::mballoc::{AllocRequest, MbConfig, MbVariant, Mballoc};
use crate::{BlockMapping, FsError, GetBlock};
use iostack_core::Tunables;
use std::collections::BTreeMap;

/// `EXT_INIT_MAX_LEN`: the longest initialised extent (`ext4_extents.h`).
pub const EXT_INIT_MAX_LEN: u64 = 1 << 15;
/// `ext4_lblk_t` is 32 bits.
const MAX_LBLK: u64 = 1 << 32;
/// `EXT4_GOOD_OLD_FIRST_INO` is 11 (lost+found); regular files start at 12.
pub const FIRST_FILE_INO: u32 = 12;
/// `EXT4_FLEX_SIZE_DIR_ALLOC_SCHEME`.
const FLEX_SIZE_DIR_ALLOC_SCHEME: u64 = 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ext4Params {
    pub block_size: u32,
    /// Blocks in the file system (the partition size in blocks).
    pub blocks: u64,
    /// 32768 at 4 KiB blocks (8 × block size).
    pub blocks_per_group: u64,
    /// 8192 at 4 KiB blocks (one inode per 16 KiB).
    pub inodes_per_group: u64,
    pub inode_size: u64,
    /// `s_log_groups_per_flex` (4 → 16 groups; 0 → no flex_bg).
    pub log_groups_per_flex: u32,
    /// mke2fs `-E lazy_itable_init=1`, and the kernel zeroes the tables after mount
    /// through the block device's page cache (the 2008 patch queue).
    pub lazy_itable_init: bool,
    /// The `uninit_bg` feature (`BLOCK_UNINIT`/`INODE_UNINIT` groups).
    pub uninit_bg: bool,
    /// The `resize_inode` feature (reserved GDT blocks).
    pub resize_inode: bool,
    /// Journal size in blocks; `None`: mke2fs's default for the size, `Some(0)`: none.
    pub journal_blocks: Option<u64>,
    pub mb: MbConfig,
    /// `ExtentFs::max_writeback_run`.
    pub max_writeback_run: u64,
    /// `s_hash_seed` (mke2fs's `uuid_generate`); all zero: the hash's default.
    pub hash_seed: [u32; 4],
}

impl Ext4Params {
    /// `mke2fs -t ext4` defaults of e2fsprogs 1.41 (256-byte inodes, one per 16 KiB,
    /// flex_bg 16, uninit_bg, resize_inode, default journal) and the 2.6.28 mballoc.
    pub fn mkfs_defaults(block_size: u32, blocks: u64) -> Ext4Params {
        let bs = block_size as u64;
        let bpg = 8 * bs;
        Ext4Params {
            block_size,
            blocks,
            blocks_per_group: bpg,
            inodes_per_group: (bpg * bs / 16384).max(bs / 256),
            inode_size: 256,
            log_groups_per_flex: 4,
            lazy_itable_init: true,
            uninit_bg: true,
            resize_inode: true,
            journal_blocks: None,
            mb: MbConfig::defaults(MbVariant::V2628),
            max_writeback_run: EXT_INIT_MAX_LEN,
            hash_seed: [0; 4],
        }
    }

    /// The defaults with the `fs/ext4/*` tunables applied.
    pub fn from_tunables(block_size: u32, blocks: u64, t: &Tunables) -> Ext4Params {
        let mut p = Ext4Params::mkfs_defaults(block_size, blocks);
        p.log_groups_per_flex = t.get_u64("fs/ext4/flex_bg_log") as u32;
        p.lazy_itable_init = t.get_bool("fs/ext4/lazy_itable_init");
        p.max_writeback_run = t.get_u64("fs/ext4/max_writeback_run_blocks");
        p.mb = MbConfig {
            variant: MbVariant::from_name(t.get_enum("fs/ext4/mballoc"))
                .unwrap_or(MbVariant::V2630),
            stream_req: t.get_u64("fs/ext4/mb_stream_req"),
            group_prealloc: t.get_u64("fs/ext4/mb_group_prealloc"),
            max_to_scan: t.get_u64("fs/ext4/mb_max_to_scan"),
            min_to_scan: t.get_u64("fs/ext4/mb_min_to_scan"),
            order2_reqs: t.get_u64("fs/ext4/mb_order2_req") as u32,
        };
        p
    }
}

#[derive(Clone, Debug)]
struct Inode {
    ino: u32,
    name: String,
    /// `i_size` in bytes.
    size: u64,
    /// `i_block_group`.
    group: u64,
    /// logical → (physical, length).
    extents: BTreeMap<u64, (u64, u64)>,
    /// Delayed (reserved, unallocated) blocks.
    delalloc: RangeSet,
    /// No writer holds the file open.
    closed: bool,
    /// `S_ISDIR`.
    dir: bool,
    /// The directory holding the entry (`ROOT_INO` for the root).
    parent: u32,
    /// `i_last_alloc_group` (directories).
    last_alloc_group: Option<u64>,
    /// What the directories `mkdir`ed for this file's path dirtied: journalled
    /// in the file's create handle (`create_meta`).
    made_dirs_meta: Vec<u64>,
}

pub struct Ext4 {
    p: Ext4Params,
    blkbits: u32,
    ngroups: u64,
    itable_blocks: u64,
    gdt_blocks: u64,
    rsv_gdt_blocks: u64,
    flex_size: u64,
    /// Inode table start of each group.
    itable: Vec<u64>,
    /// Block and inode bitmap of each group.
    bitmaps: Vec<(u64, u64)>,
    /// Allocations at writeback not yet taken by the journal glue
    /// (`ExtentFs::take_alloc_meta`).
    alloc_log: Vec<(u32, u64, Vec<u64>)>,
    /// Where mke2fs started the journal's allocation.
    journal_goal_block: u64,
    /// Blocks mkfs put to use (start, len, what).
    meta: Vec<(u64, u64, &'static str)>,
    mb: Mballoc,
    inodes: Vec<Inode>,
    /// Inode number → index in `inodes`.
    ino_index: BTreeMap<u32, usize>,
    names: BTreeMap<String, u32>,
    /// Directory path (no leading or trailing `/`) → inode.
    dirs: BTreeMap<String, u32>,
    ialloc: Ialloc,
    /// The root's `i_last_alloc_group`.
    root_last_alloc: Option<u64>,
    /// Metadata dirtied by directories made since the last `create`.
    pending_dir_meta: Vec<u64>,
    /// `s_dirtyblocks_counter`: blocks reserved by delayed allocation.
    dirty: u64,
    /// `current->pid` of the task allocating (2.6.28 goal colour).
    pid: u32,
}

/// mke2fs's default journal size (`ext2fs_default_journal_size`, 1.41).
pub fn default_journal_blocks(blocks: u64) -> u64 {
    match blocks {
        b if b < 2048 => 0,
        b if b < 32768 => 1024,
        b if b < 256 * 1024 => 4096,
        b if b < 512 * 1024 => 8192,
        b if b < 1024 * 1024 => 16384,
        _ => 32768,
    }
}

impl Ext4 {
    /// Make the file system as mke2fs would and mount it.
    pub fn new(p: Ext4Params) -> Result<Ext4, FsError> {
        let bs = p.block_size as u64;
        if !p.block_size.is_power_of_two() || !(2048..=65536).contains(&p.block_size) {
            return Err(FsError::Invalid(format!(
                "ext4 block size {} (2 KiB to 64 KiB modelled; 1 KiB needs first_data_block 1)",
                p.block_size
            )));
        }
        let bpg = p.blocks_per_group;
        if bpg < 256 || bpg % 8 != 0 || bpg > 8 * bs || p.inode_size == 0 || p.inodes_per_group == 0
        {
            return Err(FsError::Invalid(format!(
                "ext4 geometry: {bpg} blocks and {} inodes per group",
                p.inodes_per_group
            )));
        }
        if p.log_groups_per_flex > 16 {
            return Err(FsError::Invalid(format!(
                "log_groups_per_flex {}",
                p.log_groups_per_flex
            )));
        }
        let blkbits = p.block_size.trailing_zeros();
        let itable_blocks = (p.inodes_per_group * p.inode_size).div_ceil(bs);
        let flex_size = 1u64 << p.log_groups_per_flex;
        let mut blocks = p.blocks;
        let mut ngroups = blocks.div_ceil(bpg);
        let descs_per_block = bs / 32;
        let overhead = |g: u64, ngroups: u64| {
            let gdb = ngroups.div_ceil(descs_per_block);
            (if has_super(g) { 1 + gdb + 1024 } else { 0 }) + 2 + itable_blocks
        };
        // ext2fs_initialize: a last group too small for its own metadata is dropped.
        if ngroups > 1 {
            let last = blocks - (ngroups - 1) * bpg;
            if last < overhead(ngroups - 1, ngroups) + 50 {
                ngroups -= 1;
                blocks = ngroups * bpg;
            }
        }
        if blocks < 2 * itable_blocks + 64 {
            return Err(FsError::Invalid(format!(
                "ext4 file system of {blocks} blocks is too small"
            )));
        }
        let gdt_blocks = ngroups.div_ceil(descs_per_block);
        let rsv_gdt_blocks = if p.resize_inode {
            // calc_reserved_gdt_blocks: room to grow 1024× or to 2^32 blocks.
            let max_blocks = if blocks < 0xffff_ffff / 1024 {
                blocks * 1024
            } else {
                0xffff_ffff
            };
            let rsv_groups = max_blocks.div_ceil(bpg);
            (rsv_groups
                .div_ceil(descs_per_block)
                .saturating_sub(gdt_blocks))
            .min(bs / 4)
        } else {
            0
        };
        let mut mb = Mballoc::new(p.mb.clone(), blkbits, bpg, blocks, flex_size)?;
        let mut meta = Vec::new();
        let sb_len = 1 + gdt_blocks + rsv_gdt_blocks;
        for g in 0..ngroups {
            if has_super(g) {
                let s = g * bpg;
                let len = sb_len.min(blocks - s);
                mb.take_range(s, s + len);
                meta.push((s, len, "superblock and descriptors"));
            }
        }
        let mut itable = vec![0u64; ngroups as usize];
        let mut bitmaps = vec![(0u64, 0u64); ngroups as usize];
        let mut table_groups = Vec::new();
        let put = |mb: &mut Mballoc, meta: &mut Vec<_>, s: u64, len: u64, what| {
            if s + len > blocks || mb.take_range(s, s + len) != len {
                return Err(FsError::Invalid(format!(
                    "ext4 metadata ({what}) at {s}+{len} does not fit"
                )));
            }
            meta.push((s, len, what));
            Ok(())
        };
        if flex_size > 1 {
            // flexbg_offset: block bitmaps at base+j, inode bitmaps at base+flex+j,
            // inode tables at base+2·flex+j·itable_blocks, in the flex group's first group.
            let mut fg = 0;
            while fg < ngroups {
                let base = fg * bpg + if has_super(fg) { sb_len } else { 0 };
                let n = flex_size.min(ngroups - fg);
                put(&mut mb, &mut meta, base, n, "block bitmaps")?;
                put(&mut mb, &mut meta, base + flex_size, n, "inode bitmaps")?;
                let it = base + 2 * flex_size;
                put(&mut mb, &mut meta, it, n * itable_blocks, "inode tables")?;
                for j in 0..n {
                    itable[(fg + j) as usize] = it + j * itable_blocks;
                    bitmaps[(fg + j) as usize] = (base + j, base + flex_size + j);
                }
                table_groups.push(fg);
                fg += flex_size;
            }
        } else {
            for g in 0..ngroups {
                let base = g * bpg + if has_super(g) { sb_len } else { 0 };
                put(&mut mb, &mut meta, base, 2, "bitmaps")?;
                put(&mut mb, &mut meta, base + 2, itable_blocks, "inode table")?;
                itable[g as usize] = base + 2;
                bitmaps[g as usize] = (base, base + 1);
            }
        }
        if p.uninit_bg {
            // ext2fs_initialize: every group but the last starts BLOCK_UNINIT;
            // ext2fs_allocate_group_table clears it where flex_bg puts tables.
            for g in 0..ngroups.saturating_sub(1) {
                mb.set_block_uninit(g, true);
            }
            for g in table_groups {
                mb.set_block_uninit(g, false);
            }
        }
        let mut fs = Ext4 {
            blkbits,
            ngroups,
            itable_blocks,
            gdt_blocks,
            rsv_gdt_blocks,
            flex_size,
            itable,
            bitmaps,
            alloc_log: Vec::new(),
            journal_goal_block: 0,
            meta,
            mb,
            inodes: Vec::new(),
            ino_index: BTreeMap::new(),
            names: BTreeMap::new(),
            dirs: BTreeMap::new(),
            ialloc: Ialloc::new(ngroups, p.inodes_per_group, bpg, p.log_groups_per_flex),
            root_last_alloc: None,
            pending_dir_meta: Vec::new(),
            dirty: 0,
            pid: 0,
            p: Ext4Params { blocks, ..p },
        };
        // Root directory, lost+found (16 KiB) and the resize inode's DIND block:
        // the first free blocks (mke2fs create_root_dir, create_lost_and_found,
        // ext2fs_create_resize_inode).
        let extra = 1 + 16384u64.div_ceil(bs) + u64::from(fs.p.resize_inode);
        fs.mkfs_alloc(0, extra, "root, lost+found, resize inode")?;
        let jblocks =
            fs.p.journal_blocks
                .unwrap_or(default_journal_blocks(blocks));
        if jblocks > 0 {
            let goal = fs.journal_goal();
            fs.journal_goal_block = goal;
            fs.mkfs_alloc(goal, jblocks, "journal")?;
        }
        Ok(fs)
    }

    /// ext2fs_new_block from `goal`, in runs, wrapping once (mkfs allocations).
    fn mkfs_alloc(&mut self, goal: u64, n: u64, what: &'static str) -> Result<(), FsError> {
        let mut left = n;
        let mut at = goal;
        let mut wrapped = false;
        while left > 0 {
            let next = self
                .mb
                .free_extents()
                .find(|&(_, e)| e > at)
                .map(|(s, e)| (s.max(at), e));
            let Some((s, e)) = next else {
                if wrapped {
                    return Err(FsError::NoSpace);
                }
                wrapped = true;
                at = 0;
                continue;
            };
            let len = left.min(e - s);
            self.mb.take_range(s, s + len);
            let bpg = self.p.blocks_per_group;
            for g in s / bpg..=(s + len - 1) / bpg {
                self.mb.set_block_uninit(g, false);
            }
            match self.meta.last_mut() {
                Some(m) if m.2 == what && m.0 + m.1 == s => m.1 += len,
                _ => self.meta.push((s, len, what)),
            }
            left -= len;
            at = s + len;
        }
        Ok(())
    }

    /// `write_journal_inode`'s goal: the middle group, flex-aligned, or its
    /// neighbour with more free blocks.
    fn journal_goal(&self) -> u64 {
        let bpg = self.p.blocks_per_group;
        let n = self.ngroups;
        let free = |g: u64| -> u64 {
            let (s, e) = (g * bpg, ((g + 1) * bpg).min(self.p.blocks));
            self.mb
                .free_extents()
                .filter(|&(a, b)| a < e && b > s)
                .map(|(a, b)| b.min(e) - a.max(s))
                .sum()
        };
        let mut group = (self.p.blocks / 2) / bpg;
        let log_flex = self.flex_size;
        let start;
        if self.p.log_groups_per_flex > 0 && group > log_flex {
            group &= !(log_flex - 1);
            while group < n && free(group) == 0 {
                group += 1;
            }
            if group == n {
                group = 0;
            }
            start = group;
        } else {
            start = group.saturating_sub(1);
        }
        let end = if group + 1 < n { group + 1 } else { group };
        let mut best = start;
        for i in start + 1..=end {
            if free(i) > free(best) {
                best = i;
            }
        }
        best * bpg
    }

    /// The primary group-descriptor block of group `g` (32-byte descriptors
    /// after the superblock).
    fn group_desc_block(&self, g: u64) -> u64 {
        1 + g / (self.p.block_size as u64 / 32)
    }

    /// What an allocation of `[pblk, pblk + n)` at writeback dirties:
    /// `ext4_mb_mark_diskspace_used` (each group's block bitmap and
    /// descriptor), the extent insert and `i_disksize` in the inode
    /// (`ext4_ext_insert_extent` into the in-inode tree, `ext4_mark_inode_dirty`;
    /// index and leaf blocks are not modelled).
    fn alloc_meta(&self, ino: u32, pblk: u64, n: u64) -> Vec<u64> {
        let bpg = self.p.blocks_per_group;
        let mut v = Vec::new();
        for g in pblk / bpg..=(pblk + n - 1) / bpg {
            v.extend(self.bitmaps.get(g as usize).map(|b| b.0));
            v.push(self.group_desc_block(g));
        }
        v.extend(self.inode_block(ino));
        v.sort_unstable();
        v.dedup();
        v
    }

    pub fn params(&self) -> &Ext4Params {
        &self.p
    }

    pub fn mballoc(&self) -> &Mballoc {
        &self.mb
    }

    pub fn groups(&self) -> u64 {
        self.ngroups
    }

    pub fn gdt_blocks(&self) -> u64 {
        self.gdt_blocks
    }

    pub fn reserved_gdt_blocks(&self) -> u64 {
        self.rsv_gdt_blocks
    }

    /// (first block, blocks) of group `g`'s inode table.
    pub fn inode_table(&self, g: u64) -> Option<(u64, u64)> {
        self.itable
            .get(g as usize)
            .map(|&s| (s, self.itable_blocks))
    }

    /// Blocks mkfs put to use: (start, len, what).
    pub fn mkfs_ranges(&self) -> &[(u64, u64, &'static str)] {
        &self.meta
    }

    /// Blocks reserved by delayed allocation (`s_dirtyblocks_counter`).
    pub fn dirty_reserved(&self) -> u64 {
        self.dirty
    }

    /// The pid of the task that will allocate next (`current->pid`, used by the
    /// 2.6.28 goal colour in `ext4_ext_find_goal`); 0 until set.
    pub fn set_task_pid(&mut self, pid: u32) {
        self.pid = pid;
    }

    fn idx(&self, ino: u32) -> Result<usize, FsError> {
        self.ino_index
            .get(&ino)
            .copied()
            .ok_or_else(|| FsError::NoSuchFile(format!("inode {ino}")))
    }

    fn check_range(lblk: u64, n: u64) -> Result<(), FsError> {
        crate::extent_fs::check_block_range(lblk, n, MAX_LBLK)
    }

    /// (physical, blocks left in the extent) for a mapped `lblk`.
    fn lookup(&self, i: usize, lblk: u64) -> Option<(u64, u64)> {
        let (&l, &(p, n)) = self.inodes[i].extents.range(..=lblk).next_back()?;
        (lblk < l + n).then(|| (p + (lblk - l), l + n - lblk))
    }

    /// Unmapped parts of `[s, e)`.
    fn unmapped_gaps(&self, i: usize, s: u64, e: u64) -> Vec<(u64, u64)> {
        let ext = &self.inodes[i].extents;
        let mut gaps = Vec::new();
        let mut at = s;
        let first = ext
            .range(..s)
            .next_back()
            .map(|(&l, &(_, n))| (l, n))
            .filter(|&(l, n)| l + n > s);
        for (l, n) in first
            .into_iter()
            .chain(ext.range(s..e).map(|(&l, &(_, n))| (l, n)))
        {
            if l > at {
                gaps.push((at, l));
            }
            at = at.max(l + n);
        }
        if at < e {
            gaps.push((at, e));
        }
        gaps
    }

    /// `ext4_ext_find_goal`.
    fn find_goal(&self, i: usize, iblock: u64) -> u64 {
        let inode = &self.inodes[i];
        // path[depth].p_ext: the extent at or before iblock, else the first one.
        let ex = inode
            .extents
            .range(..=iblock)
            .next_back()
            .or_else(|| inode.extents.iter().next());
        if let Some((&l, &(p, _))) = ex {
            // ext_pblock(ex) + (block - ee_block) in 32-bit logical arithmetic: a
            // block before the first extent wraps past the end of the disk, and
            // ext4_mb_initialize_context then falls back to block 0.
            return p + (iblock.wrapping_sub(l) & (MAX_LBLK - 1));
        }
        let bpg = self.p.blocks_per_group;
        match self.p.mb.variant {
            MbVariant::V2628 => {
                // the inode's group, coloured by pid
                let bg_start = inode.group * bpg;
                let last_block = self.p.blocks - 1;
                let colour = if bg_start + bpg <= last_block {
                    (self.pid as u64 % 16) * (bpg / 16)
                } else {
                    (self.pid as u64 % 16) * (last_block.saturating_sub(bg_start) / 16)
                };
                bg_start + colour + iblock
            }
            MbVariant::V2630 => {
                // a4912123: regular files start in the second group of the flex
                // group; with delalloc (mounted so) the goal is the group start.
                let mut g = inode.group;
                if self.flex_size >= FLEX_SIZE_DIR_ALLOC_SCHEME {
                    g &= !(self.flex_size - 1);
                    // the first group is kept for directories (S_ISREG)
                    g += u64::from(!inode.dir);
                }
                g * bpg
            }
        }
    }

    /// `ext4_ext_insert_extent` with `ext4_ext_try_to_merge`.
    fn insert_extent(&mut self, i: usize, l: u64, p: u64, n: u64) {
        let ext = &mut self.inodes[i].extents;
        let mut cur = l;
        match ext.range(..l).next_back().map(|(&a, &b)| (a, b)) {
            Some((ll, (lp, ln))) if ll + ln == l && lp + ln == p && ln + n <= EXT_INIT_MAX_LEN => {
                ext.insert(ll, (lp, ln + n));
                cur = ll;
            }
            _ => {
                ext.insert(l, (p, n));
            }
        }
        loop {
            let (cp, cn) = ext[&cur];
            let Some((rl, (rp, rn))) = ext.range(cur + 1..).next().map(|(&a, &b)| (a, b)) else {
                break;
            };
            if cur + cn == rl && cp + cn == rp && cn + rn <= EXT_INIT_MAX_LEN {
                ext.remove(&rl);
                ext.insert(cur, (cp, cn + rn));
            } else {
                break;
            }
        }
    }

    /// `ext4_ext_get_blocks`: map `iblock`, allocating one run if `create`.
    /// Returns (physical or hole, count, new).
    fn get_blocks(
        &mut self,
        i: usize,
        iblock: u64,
        max_blocks: u64,
        create: bool,
    ) -> Result<(Option<u64>, u64, bool), FsError> {
        if let Some((p, left)) = self.lookup(i, iblock) {
            return Ok((Some(p), max_blocks.min(left), false));
        }
        let inode = &self.inodes[i];
        let next = inode
            .extents
            .range(iblock + 1..)
            .next()
            .map(|(&l, &(p, _))| (l, p));
        if !create {
            let n = next.map_or(max_blocks, |(l, _)| max_blocks.min(l - iblock));
            return Ok((None, n, false));
        }
        // ext4_ext_search_left / ext4_ext_search_right
        let (lleft, pleft) = inode
            .extents
            .range(..iblock)
            .next_back()
            .map_or((0, 0), |(&l, &(p, n))| (l + n - 1, p + n - 1));
        let (lright, pright) = next.unwrap_or((0, 0));
        // EXT_INIT_MAX_LEN, then ext4_ext_check_overlap against the next extent.
        let mut len = max_blocks.min(EXT_INIT_MAX_LEN);
        if let Some((l, _)) = next {
            len = len.min(l - iblock);
        }
        let delayed = inode.delalloc.contains(iblock);
        if delayed {
            // Reserved at write time: allocate no further than the reservation.
            if let Some((_, e)) = inode.delalloc.range_containing(iblock) {
                len = len.min(e - iblock);
            }
        } else {
            // ext4_mb_new_blocks without i_delalloc_reserved_flag:
            // ext4_claim_free_blocks, halving the request until it fits.
            let avail = self.mb.free_blocks().saturating_sub(self.dirty);
            while len > 0 && avail < len {
                len >>= 1;
            }
            if len == 0 {
                return Err(FsError::NoSpace);
            }
        }
        let ar = AllocRequest {
            ino: inode.ino,
            directory: inode.dir,
            logical: iblock,
            len,
            goal: self.find_goal(i, iblock),
            lleft,
            pleft,
            lright,
            pright,
            isize: inode.size,
            writers_closed: inode.closed,
        };
        let (p, n) = self.mb.new_blocks(&ar)?;
        if n == 0 {
            return Err(FsError::NoSpace);
        }
        self.insert_extent(i, iblock, p, n);
        let released = self.inodes[i].delalloc.remove(iblock, iblock + n);
        self.dirty -= released;
        Ok((Some(p), n, true))
    }

    /// Every block is exactly once free, preallocated, file data or metadata, the
    /// allocator's statistics agree with its free extents, and the delalloc
    /// reservations agree with the inodes (tests).
    pub fn check_consistency(&self) -> Result<(), String> {
        self.mb.check()?;
        let mut ranges: Vec<(u64, u64, &'static str)> = self.meta.clone();
        for inode in &self.inodes {
            for (_, &(p, n)) in inode.extents.iter() {
                ranges.push((p, n, "file data"));
            }
        }
        for (s, n) in self.mb.reserved_ranges() {
            ranges.push((s, n, "preallocation"));
        }
        for (s, e) in self.mb.free_extents() {
            ranges.push((s, e - s, "free"));
        }
        check_tiling(ranges, self.p.blocks)?;
        let mut dirty = 0;
        for (i, inode) in self.inodes.iter().enumerate() {
            dirty += inode.delalloc.total();
            for (s, e) in inode.delalloc.iter() {
                let gaps: u64 = self.unmapped_gaps(i, s, e).iter().map(|(a, b)| b - a).sum();
                if gaps != e - s {
                    return Err(format!(
                        "{}: delalloc blocks {s}..{e} are mapped",
                        inode.name
                    ));
                }
            }
        }
        if dirty != self.dirty {
            return Err(format!("dirty counter {} != {}", self.dirty, dirty));
        }
        Ok(())
    }
}

impl GetBlock for Ext4 {
    fn blkbits(&self) -> u32 {
        self.blkbits
    }

    /// `ext4_get_block` (direct I/O): map, or allocate now through mballoc.
    fn get_block(
        &mut self,
        ino: u32,
        lblk: u64,
        max_blocks: u64,
        create: bool,
    ) -> Result<BlockMapping, FsError> {
        let i = self.idx(ino)?;
        Self::check_range(lblk, max_blocks)?;
        let (pblk, count, new) = self.get_blocks(i, lblk, max_blocks, create)?;
        Ok(BlockMapping {
            pblk,
            count,
            boundary: false,
            new,
        })
    }

    fn i_size(&self, ino: u32) -> u64 {
        self.idx(ino).map_or(0, |i| self.inodes[i].size)
    }

    fn set_i_size(&mut self, ino: u32, size: u64) {
        if let Ok(i) = self.idx(ino) {
            self.inodes[i].size = size;
        }
    }
}

impl ExtentFs for Ext4 {
    fn fs_name(&self) -> &'static str {
        "ext4"
    }

    fn block_size(&self) -> u32 {
        self.p.block_size
    }

    /// `ext4_create` → `ext4_new_inode`: the inode in the group
    /// `find_group_other` (or 2.6.28's `find_group_flex`) picks from the
    /// parent directory, made first (as fio's `create_work_dirs` and fs_mark
    /// do) when it does not exist yet.
    fn create(&mut self, name: &str) -> Result<u32, FsError> {
        if let Some(ino) = crate::extent_fs::existing_file(&self.names, name)? {
            return Ok(ino);
        }
        self.new_file(name)
    }

    fn lookup(&self, name: &str) -> Option<u32> {
        self.names.get(name).copied()
    }

    /// `ext4_da_get_block_prep` → `ext4_da_reserve_space`.
    fn delalloc_reserve(&mut self, ino: u32, lblk: u64, n: u64) -> Result<(), FsError> {
        let i = self.idx(ino)?;
        Self::check_range(lblk, n)?;
        let gaps = self.unmapped_gaps(i, lblk, lblk + n);
        let inode = &self.inodes[i];
        let new: u64 = gaps
            .iter()
            .map(|&(s, e)| (e - s) - inode.delalloc.count_in(s, e))
            .sum();
        // ext4_claim_free_blocks: free − dirty must cover the new reservation.
        if self.mb.free_blocks() < self.dirty + new {
            return Err(FsError::NoSpace);
        }
        let inode = &mut self.inodes[i];
        for (s, e) in gaps {
            self.dirty += inode.delalloc.insert(s, e);
        }
        inode.closed = false;
        inode.size = inode.size.max((lblk + n) << self.blkbits);
        Ok(())
    }

    /// `mpage_da_map_blocks` → `ext4_da_get_block_write` → `ext4_get_blocks_wrap`.
    fn map_for_writeback(
        &mut self,
        ino: u32,
        lblk: u64,
        n: u64,
        out: &mut Vec<FileExtent>,
    ) -> Result<u64, FsError> {
        let i = self.idx(ino)?;
        Self::check_range(lblk, n)?;
        let (p, count, new) = self.get_blocks(i, lblk, n, true)?;
        let physical = p.ok_or(FsError::NoSpace)?;
        if new {
            let meta = self.alloc_meta(ino, physical, count);
            self.alloc_log.push((ino, lblk, meta));
        }
        out.push(FileExtent {
            logical: lblk,
            physical,
            len: count,
        });
        Ok(count)
    }

    fn fiemap(&self, ino: u32) -> Vec<FileExtent> {
        let Ok(i) = self.idx(ino) else {
            return Vec::new();
        };
        self.inodes[i]
            .extents
            .iter()
            .map(|(&l, &(p, n))| FileExtent {
                logical: l,
                physical: p,
                len: n,
            })
            .collect()
    }

    fn max_writeback_run(&self) -> u64 {
        self.p.max_writeback_run.max(1)
    }

    /// The inode tables of every `INODE_UNINIT` group (all but group 0 after mkfs),
    /// zeroed through the block device's page cache by the 2008 patch queue's lazy
    /// inode-table initialisation. (2.6.37's `ext4lazyinit` thread issues its own
    /// zeroing bios instead and is not modelled here.)
    fn mount_dirty_bdev_ranges(&self) -> Vec<(u64, u64)> {
        if !(self.p.lazy_itable_init && self.p.uninit_bg) {
            return Vec::new();
        }
        let mut v: Vec<(u64, u64)> = (1..self.ngroups)
            .map(|g| (self.itable[g as usize], self.itable_blocks))
            .collect();
        v.sort();
        v
    }

    /// `ext4_release_file` → `ext4_discard_preallocations`.
    fn release_file(&mut self, ino: u32) {
        if let Ok(i) = self.idx(ino) {
            self.inodes[i].closed = true;
            self.mb.discard_inode_pa(ino);
        }
    }

    /// The journal inode's blocks, when mke2fs placed them in one run.
    fn journal_area(&self) -> Option<(u64, u64)> {
        let runs = self.journal_runs();
        let first = runs.first()?.0;
        Some((first, runs.iter().map(|r| r.1).sum()))
    }

    /// The journal inode's extents in logical order: mke2fs allocates it
    /// from its goal in runs around what is in use (`ext2fs_new_block`).
    fn journal_runs(&self) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = self
            .meta
            .iter()
            .filter(|r| r.2 == "journal")
            .map(|r| (r.0, r.1))
            .collect();
        // mkfs_alloc wraps once: the runs from the goal come first.
        let goal = self.journal_goal_block;
        runs.sort_by_key(|&(s, _)| (s < goal, s));
        runs
    }

    /// `ext4_get_inode_loc`: the group's inode table, `inode_size` bytes per
    /// inode.
    fn inode_block(&self, ino: u32) -> Option<u64> {
        let n = (ino as u64).checked_sub(1)?;
        let g = n / self.p.inodes_per_group;
        let off = (n % self.p.inodes_per_group) * self.p.inode_size;
        Some(self.itable.get(g as usize)? + off / self.p.block_size as u64)
    }

    /// `ext4_new_inode`: the inode bitmap, the group descriptor and the
    /// inode-table block; `ext4_add_entry`: the parent directory's block and
    /// inode (mtime, `ext4_mark_inode_dirty(dir)`); and what the `mkdir`s
    /// made for the file's path dirtied. Every entry goes to its directory's
    /// first block (directories do not grow).
    fn create_meta(&self, ino: u32) -> Vec<u64> {
        let Ok(i) = self.idx(ino) else {
            return Vec::new();
        };
        let mut v = self.new_inode_meta(ino);
        v.extend(self.entry_meta(self.inodes[i].parent));
        v.extend(&self.inodes[i].made_dirs_meta);
        v.sort_unstable();
        v.dedup();
        v
    }

    fn take_alloc_meta(&mut self) -> Vec<(u32, u64, Vec<u64>)> {
        std::mem::take(&mut self.alloc_log)
    }
}

#[path = "ext4_dir.rs"]
mod dir;

pub use dir::ROOT_INO;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mkfs_layout_matches_mke2fs() {
        // 20 GiB, as `mke2fs -t ext4 -O uninit_bg,^64bit` lays it out (checked
        // against dumpe2fs of e2fsprogs 1.47, which keeps the 1.41 flex_bg layout).
        let fs = Ext4::new(Ext4Params::mkfs_defaults(4096, 5_242_880)).unwrap();
        assert_eq!(fs.groups(), 160);
        assert_eq!(fs.gdt_blocks(), 2);
        assert_eq!(fs.reserved_gdt_blocks(), 1022);
        assert_eq!(fs.inode_table(0), Some((1057, 512)));
        assert_eq!(fs.inode_table(1), Some((1569, 512)));
        assert_eq!(fs.inode_table(16), Some((524_288 + 32, 512)));
        assert_eq!(fs.inode_table(17), Some((524_288 + 544, 512)));
        // Group 0's first free block after root, lost+found and the resize block.
        assert_eq!(fs.mballoc().free_extents().next(), Some((9255, 32768)));
        // The journal goes to group 81 (the flex-aligned middle group 80 or its
        // neighbour with more free blocks) after its backup superblock.
        let j = fs
            .mkfs_ranges()
            .iter()
            .find(|r| r.2 == "journal")
            .copied()
            .unwrap();
        assert_eq!((j.0, j.1), (2_655_233, 32768));
        assert!(fs.mballoc().is_block_uninit(1));
        assert!(!fs.mballoc().is_block_uninit(16));
        assert!(!fs.mballoc().is_block_uninit(81));
        fs.check_consistency().unwrap();
    }
}
