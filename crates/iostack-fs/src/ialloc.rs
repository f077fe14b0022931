//! ext4's inode allocator: which block group a new inode goes to
//! (`fs/ext4/ialloc.c` of 2.6.34: `ext4_new_inode`, `find_group_orlov`,
//! `find_group_other`, `find_group_flex`, `ext4_claim_inode`).
//!
//! * 2.6.30 on (a4912123, `MbVariant::V2630`): a directory goes where
//!   `find_group_orlov` puts it. A top-level one (its parent is the root)
//!   is spread: the search starts at the flex group the half-MD4 hash of its
//!   name (seeded with `s_hash_seed`) picks and takes, of the flex groups
//!   with at least the average free inodes and free blocks, the first with
//!   the fewest directories. Others go to the first flex group from the
//!   parent's (or where the parent last allocated) with fewer than
//!   `max_dirs` directories and enough free inodes and blocks. A file goes
//!   to `find_group_other`: the first group of its parent's flex group with
//!   a free inode.
//! * 2.6.28 (`MbVariant::V2628`) with flex_bg: `find_group_flex` for both.
//!
//! Inodes are never freed (nothing is unlinked), so a group's inode bitmap
//! is its count of used inodes: `ext4_find_next_zero_bit` from 0 finds the
//! next one.

/// Inodes 1 to 10 are reserved and 11 is lost+found (`EXT4_GOOD_OLD_FIRST_INO`).
const RESERVED_INODES: u64 = 11;
/// `free_block_ratio` of `find_group_flex` (percent).
const FREE_BLOCK_RATIO: u64 = 10;

/// What the allocator reads of the parent directory's in-memory inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parent {
    pub ino: u32,
    /// `i_block_group`.
    pub group: u64,
    /// `i_last_alloc_group` (`~0`: none yet).
    pub last_alloc_group: Option<u64>,
    /// The root directory (or `EXT4_TOPDIR_FL`).
    pub topdir: bool,
}

/// The group descriptors' inode counts (`bg_free_inodes_count`,
/// `bg_used_dirs_count`) and the flex-group sums.
#[derive(Clone, Debug)]
pub struct Ialloc {
    ipg: u64,
    bpg: u64,
    log_flex: u32,
    used: Vec<u64>,
    dirs: Vec<u64>,
}

/// `struct orlov_stats` of a group or flex group.
#[derive(Clone, Copy, Debug)]
struct Stats {
    free_inodes: u64,
    free_blocks: u64,
    used_dirs: u64,
}

impl Ialloc {
    /// As mke2fs leaves it: group 0 holds the reserved inodes, the root and
    /// lost+found (two directories).
    pub fn new(ngroups: u64, ipg: u64, bpg: u64, log_flex: u32) -> Ialloc {
        let mut used = vec![0; ngroups as usize];
        let mut dirs = vec![0; ngroups as usize];
        used[0] = RESERVED_INODES.min(ipg);
        dirs[0] = 2;
        Ialloc {
            ipg,
            bpg,
            log_flex,
            used,
            dirs,
        }
    }

    fn ngroups(&self) -> u64 {
        self.used.len() as u64
    }

    fn flex(&self) -> u64 {
        1 << self.log_flex
    }

    pub fn free_inodes(&self, g: u64) -> u64 {
        self.ipg - self.used[g as usize]
    }

    pub fn used_dirs(&self, g: u64) -> u64 {
        self.dirs[g as usize]
    }

    /// The groups of flex group (or group, without flex_bg) `f`.
    fn members(&self, f: u64) -> std::ops::Range<u64> {
        let s = f << self.log_flex;
        s..(s + self.flex()).min(self.ngroups())
    }

    /// `get_orlov_stats`: a flex group's sums, or a group's own counts.
    fn stats(&self, f: u64, free_blocks: &dyn Fn(u64) -> u64) -> Stats {
        let mut st = Stats {
            free_inodes: 0,
            free_blocks: 0,
            used_dirs: 0,
        };
        for g in self.members(f) {
            st.free_inodes += self.free_inodes(g);
            st.free_blocks += free_blocks(g);
            st.used_dirs += self.dirs[g as usize];
        }
        st
    }

    fn total_free_inodes(&self) -> u64 {
        (0..self.ngroups()).map(|g| self.free_inodes(g)).sum()
    }

    /// `ext4_claim_inode` on the first free bit of `g`, or of the groups after
    /// it (`ext4_new_inode`'s scan): the inode number.
    pub fn claim(&mut self, g: u64, dir: bool) -> Option<u32> {
        let n = self.ngroups();
        let g = (0..n)
            .map(|i| (g + i) % n)
            .find(|&g| self.free_inodes(g) > 0)?;
        let bit = self.used[g as usize];
        self.used[g as usize] += 1;
        if dir {
            self.dirs[g as usize] += 1;
        }
        u32::try_from(g * self.ipg + bit + 1).ok()
    }

    /// The first group of flex group `f` with a free inode (`found_flex_bg`).
    fn first_with_inodes(&self, f: u64) -> Option<u64> {
        self.members(f).find(|&g| self.free_inodes(g) > 0)
    }

    /// `find_group_orlov` (2.6.30-2.6.3x). `hash` is the name's
    /// `ext4fs_dirhash` for a top-level directory made by `mkdir` (the qstr);
    /// `dir` is false when `find_group_other` falls back to it for a file.
    pub fn find_group_orlov(
        &self,
        parent: &Parent,
        dir: bool,
        hash: u32,
        free_blocks: &dyn Fn(u64) -> u64,
        total_free_blocks: u64,
    ) -> Option<u64> {
        let flex = self.flex();
        let nflex = self.ngroups().div_ceil(flex);
        let freei = self.total_free_inodes();
        let avefreei = freei / nflex;
        let avefreeb = total_free_blocks / nflex;
        let ndirs: u64 = self.dirs.iter().sum();
        if dir && parent.topdir {
            let mut best: Option<(u64, u64)> = None;
            let start = u64::from(hash) % nflex;
            for i in 0..nflex {
                let f = (start + i) % nflex;
                let st = self.stats(f, free_blocks);
                let fewer = best.is_none_or(|(_, nd)| st.used_dirs < nd) && st.used_dirs < self.ipg;
                if st.free_inodes == 0 || !fewer {
                    continue;
                }
                if st.free_inodes < avefreei || st.free_blocks < avefreeb {
                    continue;
                }
                best = Some((f, st.used_dirs));
            }
            let found = best.and_then(|(f, _)| self.first_with_inodes(f));
            return found.or_else(|| self.orlov_fallback(parent, freei));
        }
        let ipg = self.ipg as i64;
        let max_dirs = ndirs / nflex + self.ipg / 16;
        // min_inodes is an int clamped to 1; min_blocks an ext4_grpblk_t
        // (32 bits) compared as unsigned with the __u32 count: below zero it
        // wraps and no group qualifies.
        let min_inodes = (avefreei as i64 - ipg * flex as i64 / 4).max(1) as u64;
        let bpg_flex = (self.bpg * flex / 4) as i64;
        let min_blocks = (avefreeb as i64 - bpg_flex) as i32 as u32 as u64;
        let pg = parent.last_alloc_group.unwrap_or(parent.group) >> self.log_flex;
        for i in 0..nflex {
            let f = (pg + i) % nflex;
            let st = self.stats(f, free_blocks);
            if st.used_dirs >= max_dirs || st.free_inodes < min_inodes {
                continue;
            }
            if st.free_blocks < min_blocks {
                continue;
            }
            if let Some(g) = self.first_with_inodes(f) {
                return Some(g);
            }
            return self.orlov_fallback(parent, freei);
        }
        self.orlov_fallback(parent, freei)
    }

    /// `find_group_orlov`'s `fallback`: from the parent's group, the first
    /// group with at least the average free inodes, then any free inode.
    fn orlov_fallback(&self, parent: &Parent, freei: u64) -> Option<u64> {
        let n = self.ngroups();
        let avefreei = freei / n;
        for ave in [avefreei, 0] {
            let found = (0..n)
                .map(|i| (parent.group + i) % n)
                .find(|&g| self.free_inodes(g) > 0 && self.free_inodes(g) >= ave);
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// `find_group_other` (2.6.30-2.6.3x): the parent's flex group, then where
    /// the parent last allocated, then `find_group_orlov`; without flex_bg the
    /// parent's group, a quadratic hash from it and a linear search.
    pub fn find_group_other(
        &self,
        parent: &Parent,
        free_blocks: &dyn Fn(u64) -> u64,
        total_free_blocks: u64,
    ) -> Option<u64> {
        let n = self.ngroups();
        if self.log_flex > 0 {
            let first = |pg: u64| self.first_with_inodes(pg >> self.log_flex);
            if let Some(g) = first(parent.group) {
                return Some(g);
            }
            if let Some(g) = parent.last_alloc_group.and_then(first) {
                return Some(g);
            }
            return self.find_group_orlov(parent, false, 0, free_blocks, total_free_blocks);
        }
        let ok = |g: u64| self.free_inodes(g) > 0 && free_blocks(g) > 0;
        if ok(parent.group) {
            return Some(parent.group);
        }
        let mut g = (parent.group + u64::from(parent.ino)) % n;
        let mut i = 1;
        while i < n {
            g = (g + i) % n;
            if ok(g) {
                return Some(g);
            }
            i <<= 1;
        }
        (1..=n)
            .map(|i| (parent.group + i) % n)
            .find(|&g| self.free_inodes(g) > 0)
    }

    /// `find_group_flex` (2.6.28 with flex_bg, for files and directories):
    /// the parent's flex group, or the one before it, if it has free inodes
    /// and more than 10% of its blocks free; else the first such flex group,
    /// else the one with the most free blocks.
    pub fn find_group_flex(
        &self,
        parent: &Parent,
        free_blocks: &dyn Fn(u64) -> u64,
    ) -> Option<u64> {
        let blocks_per_flex = self.bpg * self.flex();
        let nflex = self.ngroups().div_ceil(self.flex());
        let pf = parent.group >> self.log_flex;
        let good = |st: &Stats| {
            st.free_inodes > 0 && st.free_blocks * 100 / blocks_per_flex.max(1) > FREE_BLOCK_RATIO
        };
        let mut best = pf;
        if good(&self.stats(pf, free_blocks)) {
            return self.first_with_inodes(pf);
        }
        if pf > 0 {
            best = pf - 1;
            if good(&self.stats(best, free_blocks)) {
                return self.first_with_inodes(best);
            }
        }
        for f in (0..nflex).filter(|&f| f != pf && f + 1 != pf) {
            let st = self.stats(f, free_blocks);
            if good(&st) {
                return self.first_with_inodes(f);
            }
            let b = self.stats(best, free_blocks);
            if b.free_inodes == 0 || (st.free_blocks > b.free_blocks && st.free_inodes > 0) {
                best = f;
            }
        }
        let b = self.stats(best, free_blocks);
        if b.free_inodes == 0 || b.free_blocks == 0 {
            return None;
        }
        self.first_with_inodes(best)
    }
}
