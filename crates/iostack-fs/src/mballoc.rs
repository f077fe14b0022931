//! ext4's multiblock allocator, `fs/ext4/mballoc.c`: `ext4_mb_new_blocks` with
//! group-versus-file preallocation (`ext4_mb_group_or_file`), request normalisation
//! (`ext4_mb_normalize_request`), inode and locality-group preallocation spaces
//! (`ext4_mb_use_preallocated`, `ext4_mb_new_inode_pa`, `ext4_mb_new_group_pa`),
//! and the buddy scan (`ext4_mb_regular_allocator`: `ext4_mb_find_by_goal`, then
//! criteria 0..3 over the groups with `ext4_mb_simple_scan_group` and
//! `ext4_mb_complex_scan_group`).
//!
//! Free space is kept as maximal free extents that never cross a group boundary
//! (the per-group bitmaps), with per-group `bb_free`, `bb_fragments` and
//! `bb_counters[order]` maintained incrementally. A group's buddy is the canonical
//! decomposition of each free extent into aligned power-of-two chunks (order ≤
//! `blocksize_bits + 1`), which is what buddy merging produces; the chunks are
//! indexed by (order, start) so `ext4_mb_simple_scan_group` is O(log n).
//!
//! Two versions, selected by `MbVariant` (tunable `fs/ext4/mballoc`):
//! * `V2628`: the October 2008 ext4 patch queue as merged in 2.6.28
//!   (K2628 `fs/ext4/mballoc.c`, `fs/ext4/extents.c`). The filesystem-wide last
//!   allocation point `s_mb_last_group`/`s_mb_last_start` is updated by *every* data
//!   allocation (`ext4_mb_use_best_found`) and used as the goal only for files
//!   *smaller* than `mb_stream_req` (`ext4_mb_regular_allocator`); criterion 0 skips
//!   `BLOCK_UNINIT` groups (`ext4_mb_good_group`).
//! * `V2630`: 2.6.30 to 2.6.37 (K2632, K2637): Ted Ts'o's 4ba74d00 "Fix bugs in
//!   mballoc's stream allocation mode" (the global goal is used and updated only by
//!   stream allocations, `EXT4_MB_STREAM_ALLOC`, files larger than `mb_stream_req`),
//!   a4912123 (criterion 0 avoids the first group of a flex group for data) and
//!   50797481 (no preallocation for the closing tail of a closed file,
//!   `EXT4_MB_HINT_NOPREALLOC`).

use crate::extent_fs::RangeSet;
use crate::FsError;
use std::collections::{BTreeMap, BTreeSet};

/// mballoc version (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MbVariant {
    V2628,
    V2630,
}

impl MbVariant {
    /// From the `fs/ext4/mballoc` tunable's value.
    pub fn from_name(s: &str) -> Option<MbVariant> {
        match s {
            "2.6.28" => Some(MbVariant::V2628),
            "2.6.30" => Some(MbVariant::V2630),
            _ => None,
        }
    }
}

/// The sysfs/procfs knobs of mballoc (`s_mb_*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MbConfig {
    pub variant: MbVariant,
    /// `mb_stream_req` (`MB_DEFAULT_STREAM_THRESHOLD` = 16 blocks).
    pub stream_req: u64,
    /// `mb_group_prealloc` (`MB_DEFAULT_GROUP_PREALLOC` = 512 blocks).
    pub group_prealloc: u64,
    /// `mb_max_to_scan` (200).
    pub max_to_scan: u64,
    /// `mb_min_to_scan` (10).
    pub min_to_scan: u64,
    /// `mb_order2_req` (2).
    pub order2_reqs: u32,
}

impl MbConfig {
    /// The kernel defaults (`mballoc.h`).
    pub fn defaults(variant: MbVariant) -> MbConfig {
        MbConfig {
            variant,
            stream_req: 16,
            group_prealloc: 512,
            max_to_scan: 200,
            min_to_scan: 10,
            order2_reqs: 2,
        }
    }
}

/// `struct ext4_allocation_request` plus what mballoc reads from the inode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocRequest {
    pub ino: u32,
    /// First logical block wanted.
    pub logical: u64,
    pub len: u64,
    /// Physical goal block (`ext4_ext_find_goal`).
    pub goal: u64,
    /// Last logical/physical block of the extent to the left (`pleft` 0: none).
    pub lleft: u64,
    pub pleft: u64,
    /// First logical/physical block of the extent to the right (`pright` 0: none).
    pub lright: u64,
    pub pright: u64,
    /// `i_size` in bytes.
    pub isize: u64,
    /// No writer holds the file open (`i_writecount == 0`).
    pub writers_closed: bool,
    /// A directory's block: no `EXT4_MB_HINT_DATA` (`ext4_ext_get_blocks`
    /// sets it for regular files only), so no preallocation of any kind.
    pub directory: bool,
}

/// `struct ext4_free_extent`.
#[derive(Clone, Copy, Debug, Default)]
struct Fex {
    logical: u64,
    group: u64,
    /// Offset in the group.
    start: u64,
    len: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Continue,
    Found,
    Break,
}

/// `struct ext4_allocation_context`.
struct Ac {
    o: Fex,
    g: Fex,
    b: Fex,
    status: Status,
    found: u64,
    order2: u32,
    try_goal: bool,
    stream: bool,
    group_alloc: bool,
    noprealloc: bool,
    first: bool,
    /// `EXT4_MB_HINT_DATA`.
    data: bool,
}

/// Orders tracked (`blocksize_bits + 1` ≤ 17 for 64 KiB blocks).
const NORDERS: usize = 18;

#[derive(Clone, Debug)]
struct GroupInfo {
    /// `bb_free`.
    free: u64,
    /// `bb_fragments`: free extents in the group.
    fragments: u64,
    /// `bb_counters[order]`: free buddy chunks of each order.
    counters: [u32; NORDERS],
    /// `EXT4_BG_BLOCK_UNINIT` in the group descriptor.
    block_uninit: bool,
}

/// An inode preallocation space (`struct ext4_prealloc_space`, `pa_linear == 0`).
#[derive(Clone, Debug)]
pub struct InodePa {
    pub lstart: u64,
    pub pstart: u64,
    pub len: u64,
    pub free: u64,
    seq: u64,
    /// Logical blocks handed out from this space.
    used: RangeSet,
}

/// A locality-group preallocation space (`pa_linear`): consumed from its start.
#[derive(Clone, Debug)]
struct GroupPa {
    pstart: u64,
    len: u64,
}

pub struct Mballoc {
    cfg: MbConfig,
    blkbits: u32,
    bpg: u64,
    blocks: u64,
    ngroups: u64,
    max_order: u32,
    flex_size: u64,
    /// Free extents start → end, never crossing a group boundary.
    free: BTreeMap<u64, u64>,
    groups: Vec<GroupInfo>,
    /// Buddy chunks (order, first block).
    chunks: BTreeSet<(u32, u64)>,
    total_free: u64,
    /// `s_mb_last_group`, `s_mb_last_start`.
    last_group: u64,
    last_start: u64,
    /// Inode preallocation spaces by (inode, lstart, seq).
    inode_pa: BTreeMap<(u32, u64, u64), InodePa>,
    group_pa: Vec<GroupPa>,
    /// Unused blocks held by preallocation spaces.
    pa_free: u64,
    pa_seq: u64,
}

/// The buddy decomposition of free extent `[s, e)` (within one group of `bpg`
/// blocks): aligned chunks relative to the group start, each as large as
/// alignment, the order cap and the extent end allow (`mb_mark_used` /
/// `mb_free_blocks` on the buddy bitmap).
fn decompose(bpg: u64, max_order: u32, (s, e): (u64, u64), mut f: impl FnMut(u64, u32)) {
    let gs = s / bpg * bpg;
    let (mut p, end) = (s - gs, e - gs);
    while p < end {
        let mut k = if p == 0 {
            max_order
        } else {
            p.trailing_zeros().min(max_order)
        };
        while (1u64 << k) > end - p {
            k -= 1;
        }
        f(gs + p, k);
        p += 1 << k;
    }
}

fn fls(x: u64) -> u32 {
    64 - x.leading_zeros()
}

impl Mballoc {
    /// An allocator over `blocks` blocks in groups of `bpg`, all free. `flex_size`
    /// is the number of groups per flex group (1 without flex_bg).
    pub fn new(
        cfg: MbConfig,
        blkbits: u32,
        bpg: u64,
        blocks: u64,
        flex_size: u64,
    ) -> Result<Mballoc, FsError> {
        let max_order = blkbits + 1;
        if !(10..=16).contains(&blkbits)
            || bpg == 0
            || bpg > 8u64 << blkbits
            || blocks == 0
            || max_order as usize >= NORDERS
        {
            return Err(FsError::Invalid(format!(
                "mballoc geometry: block bits {blkbits}, {bpg} blocks per group, {blocks} blocks"
            )));
        }
        let ngroups = blocks.div_ceil(bpg);
        let mut mb = Mballoc {
            cfg,
            blkbits,
            bpg,
            blocks,
            ngroups,
            max_order,
            flex_size: flex_size.max(1),
            free: BTreeMap::new(),
            groups: vec![
                GroupInfo {
                    free: 0,
                    fragments: 0,
                    counters: [0; NORDERS],
                    block_uninit: false,
                };
                ngroups as usize
            ],
            chunks: BTreeSet::new(),
            total_free: 0,
            last_group: 0,
            last_start: 0,
            inode_pa: BTreeMap::new(),
            group_pa: Vec::new(),
            pa_free: 0,
            pa_seq: 0,
        };
        mb.add_all_groups();
        Ok(mb)
    }

    pub fn config(&self) -> &MbConfig {
        &self.cfg
    }

    pub fn groups(&self) -> u64 {
        self.ngroups
    }

    fn gstart(&self, g: u64) -> u64 {
        g * self.bpg
    }

    fn gend(&self, g: u64) -> u64 {
        ((g + 1) * self.bpg).min(self.blocks)
    }

    /// The buddy decomposition of free extent `[s, e)` (within one group): aligned
    /// chunks relative to the group start, each as large as alignment, the order
    /// cap and the extent end allow.
    fn decompose(&self, s: u64, e: u64, f: impl FnMut(u64, u32)) {
        decompose(self.bpg, self.max_order, (s, e), f);
    }

    fn add_extent(&mut self, s: u64, e: u64) {
        self.free.insert(s, e);
        let g = (s / self.bpg) as usize;
        self.groups[g].free += e - s;
        self.groups[g].fragments += 1;
        self.total_free += e - s;
        let (group, chunks) = (&mut self.groups[g], &mut self.chunks);
        decompose(self.bpg, self.max_order, (s, e), |c, k| {
            group.counters[k as usize] += 1;
            chunks.insert((k, c));
        });
    }

    fn del_extent(&mut self, s: u64, e: u64) {
        self.free.remove(&s);
        let g = (s / self.bpg) as usize;
        self.groups[g].free -= e - s;
        self.groups[g].fragments -= 1;
        self.total_free -= e - s;
        let (group, chunks) = (&mut self.groups[g], &mut self.chunks);
        decompose(self.bpg, self.max_order, (s, e), |c, k| {
            group.counters[k as usize] -= 1;
            chunks.remove(&(k, c));
        });
    }

    /// Every group wholly free, as `add_extent` on each in turn leaves it:
    /// the ordered maps are built at once from their sorted entries.
    fn add_all_groups(&mut self) {
        let mut free = Vec::with_capacity(self.ngroups as usize);
        let mut chunks = Vec::new();
        for g in 0..self.ngroups {
            let (s, e) = (self.gstart(g), self.gend(g));
            free.push((s, e));
            let group = &mut self.groups[g as usize];
            group.free += e - s;
            group.fragments += 1;
            self.total_free += e - s;
            decompose(self.bpg, self.max_order, (s, e), |c, k| {
                group.counters[k as usize] += 1;
                chunks.push((k, c));
            });
        }
        debug_assert!(self.free.is_empty() && self.chunks.is_empty());
        self.free = free.into_iter().collect();
        self.chunks = chunks.into_iter().collect();
    }

    /// The free extent holding block `b`.
    fn extent_at(&self, b: u64) -> Option<(u64, u64)> {
        let (&s, &e) = self.free.range(..=b).next_back()?;
        (e > b).then_some((s, e))
    }

    pub fn is_free(&self, b: u64) -> bool {
        self.extent_at(b).is_some()
    }

    /// First free block in `[b, limit)`.
    fn next_free(&self, b: u64, limit: u64) -> Option<u64> {
        if self.extent_at(b).is_some() {
            return Some(b);
        }
        let (&s, _) = self.free.range(b..).next()?;
        (s < limit).then_some(s)
    }

    /// Mark `[s, e)` in use (mkfs metadata, allocations). Returns the blocks that
    /// were free.
    pub fn take_range(&mut self, s: u64, e: u64) -> u64 {
        let e = e.min(self.blocks);
        let mut hit = Vec::new();
        if let Some(x) = self.extent_at(s) {
            hit.push(x);
        }
        hit.extend(self.free.range(s..e).map(|(&a, &b)| (a, b)));
        hit.dedup();
        let mut taken = 0;
        for (fs, fe) in hit {
            self.del_extent(fs, fe);
            if fs < s {
                self.add_extent(fs, s);
            }
            if fe > e {
                self.add_extent(e, fe);
            }
            taken += fe.min(e) - fs.max(s);
        }
        taken
    }

    /// Return `[s, e)` to free space (all of it must be in use), merging with free
    /// neighbours within each group.
    pub fn free_range(&mut self, s: u64, e: u64) {
        let e = e.min(self.blocks);
        let mut a = s;
        while a < e {
            let g = a / self.bpg;
            let b = e.min(self.gend(g));
            let (mut ns, mut ne) = (a, b);
            if let Some((&ls, &le)) = self.free.range(..=a).next_back() {
                if le == a && ls >= self.gstart(g) {
                    self.del_extent(ls, le);
                    ns = ls;
                }
            }
            if let Some(&re) = self.free.get(&b) {
                if b < self.gend(g) {
                    self.del_extent(b, re);
                    ne = re;
                }
            }
            self.add_extent(ns, ne);
            a = b;
        }
    }

    pub fn set_block_uninit(&mut self, g: u64, v: bool) {
        if let Some(gi) = self.groups.get_mut(g as usize) {
            gi.block_uninit = v;
        }
    }

    pub fn is_block_uninit(&self, g: u64) -> bool {
        self.groups
            .get(g as usize)
            .is_some_and(|gi| gi.block_uninit)
    }

    /// `s_freeblocks_counter`: free blocks, including the unused blocks of
    /// preallocation spaces (they are free on disk).
    /// `bg_free_blocks_count` of group `g` (0 past the last group).
    pub fn group_free(&self, g: u64) -> u64 {
        self.groups.get(g as usize).map_or(0, |gi| gi.free)
    }

    pub fn free_blocks(&self) -> u64 {
        self.total_free + self.pa_free
    }

    /// Free extents (start, end) in block order.
    pub fn free_extents(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.free.iter().map(|(&s, &e)| (s, e))
    }

    /// Blocks held by preallocation spaces and not yet handed out: (start, len).
    pub fn reserved_ranges(&self) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        for pa in self.inode_pa.values() {
            let mut at = pa.lstart;
            for (s, e) in pa.used.iter() {
                if s > at {
                    v.push((pa.pstart + (at - pa.lstart), s - at));
                }
                at = e;
            }
            if pa.lstart + pa.len > at {
                v.push((pa.pstart + (at - pa.lstart), pa.lstart + pa.len - at));
            }
        }
        for pa in &self.group_pa {
            v.push((pa.pstart, pa.len));
        }
        v
    }

    /// The inode preallocation spaces of `ino` (for tests and tracing).
    pub fn inode_pas(&self, ino: u32) -> Vec<&InodePa> {
        self.inode_pa
            .range((ino, 0, 0)..=(ino, u64::MAX, u64::MAX))
            .map(|(_, p)| p)
            .collect()
    }

    /// `(s_mb_last_group, s_mb_last_start)`.
    pub fn last_alloc(&self) -> (u64, u64) {
        (self.last_group, self.last_start)
    }

    /// `ext4_discard_preallocations`: give back the unused blocks of `ino`'s spaces.
    pub fn discard_inode_pa(&mut self, ino: u32) -> u64 {
        let keys: Vec<_> = self
            .inode_pa
            .range((ino, 0, 0)..=(ino, u64::MAX, u64::MAX))
            .map(|(k, _)| *k)
            .collect();
        let mut freed = 0;
        for k in keys {
            if let Some(pa) = self.inode_pa.remove(&k) {
                freed += self.release_inode_pa(&pa);
            }
        }
        freed
    }

    fn release_inode_pa(&mut self, pa: &InodePa) -> u64 {
        let mut freed = 0;
        let mut at = pa.lstart;
        let mut gaps = Vec::new();
        for (s, e) in pa.used.iter() {
            if s > at {
                gaps.push((at, s));
            }
            at = e;
        }
        if pa.lstart + pa.len > at {
            gaps.push((at, pa.lstart + pa.len));
        }
        for (s, e) in gaps {
            let p = pa.pstart + (s - pa.lstart);
            self.free_range(p, p + (e - s));
            freed += e - s;
        }
        self.pa_free -= pa.free;
        freed
    }

    /// `ext4_mb_discard_preallocations` over every group: all spaces, inode and
    /// locality group. Returns the blocks freed.
    pub fn discard_all(&mut self) -> u64 {
        let pas: Vec<InodePa> = std::mem::take(&mut self.inode_pa).into_values().collect();
        let mut freed = 0;
        for pa in &pas {
            freed += self.release_inode_pa(pa);
        }
        for pa in std::mem::take(&mut self.group_pa) {
            self.free_range(pa.pstart, pa.pstart + pa.len);
            self.pa_free -= pa.len;
            freed += pa.len;
        }
        freed
    }

    /// `ext4_mb_new_blocks`: allocate up to `ar.len` blocks for `ar.logical`.
    /// Returns (first physical block, count); the count may be smaller than asked.
    pub fn new_blocks(&mut self, ar: &AllocRequest) -> Result<(u64, u64), FsError> {
        if ar.len == 0 {
            return Err(FsError::Invalid("allocation of 0 blocks".into()));
        }
        let mut ac = self.initialize_context(ar);
        if let Some(r) = self.use_preallocated(&mut ac, ar) {
            return Ok(r);
        }
        self.normalize_request(&mut ac, ar);
        let mut retried = false;
        loop {
            self.regular_allocator(&mut ac, ar);
            if ac.status == Status::Found {
                if ac.o.len < ac.b.len {
                    return Ok(self.new_preallocation(&mut ac, ar));
                }
                return Ok((self.gstart(ac.b.group) + ac.b.start, ac.b.len));
            }
            // ext4_mb_discard_preallocations, then `goto repeat`.
            if !retried && self.discard_all() > 0 {
                retried = true;
                ac.status = Status::Continue;
                ac.b = Fex {
                    logical: ac.o.logical,
                    ..Fex::default()
                };
                ac.found = 0;
                ac.first = false;
                continue;
            }
            return Err(FsError::NoSpace);
        }
    }

    /// `ext4_mb_initialize_context` + `ext4_mb_group_or_file`.
    fn initialize_context(&self, ar: &AllocRequest) -> Ac {
        // "just a dirty hack to filter too big requests"
        let cap = self.bpg.saturating_sub(10).max(1);
        let len = ar.len.min(cap);
        let goal = if ar.goal >= self.blocks { 0 } else { ar.goal };
        let (group, start) = (goal / self.bpg, goal % self.bpg);
        let o = Fex {
            logical: ar.logical,
            group,
            start,
            len,
        };
        let mut ac = Ac {
            o,
            g: o,
            b: Fex {
                logical: ar.logical,
                ..Fex::default()
            },
            status: Status::Continue,
            found: 0,
            order2: 0,
            try_goal: false,
            stream: false,
            group_alloc: false,
            noprealloc: false,
            first: false,
            data: !ar.directory,
        };
        let size = ac.o.logical + ac.o.len;
        if ar.directory {
            // ext4_mb_group_or_file / ext4_mb_normalize_request /
            // ext4_mb_use_preallocated: "if (!(ac->ac_flags & EXT4_MB_HINT_DATA))".
            ac.noprealloc = true;
            return ac;
        }
        match self.cfg.variant {
            MbVariant::V2628 => {
                // K2628: "don't use group allocation for large files"
                let isize = ar.isize >> self.blkbits;
                if size.max(isize) < self.cfg.stream_req {
                    ac.group_alloc = true;
                }
            }
            MbVariant::V2630 => {
                let isize = ar.isize.div_ceil(1 << self.blkbits);
                // 50797481: the closing tail of a closed file gets no preallocation
                // (ext4_fs_is_busy is taken as false: no lock contention is modelled).
                if size == isize && ar.writers_closed {
                    ac.noprealloc = true;
                } else if size.max(isize) > self.cfg.stream_req {
                    ac.stream = true;
                } else {
                    ac.group_alloc = true;
                }
            }
        }
        ac
    }

    /// `ext4_mb_use_preallocated`: an inode space covering the first block, else
    /// (group allocation) the locality-group space closest to the goal with room.
    fn use_preallocated(&mut self, ac: &mut Ac, ar: &AllocRequest) -> Option<(u64, u64)> {
        if ar.directory {
            return None;
        }
        let l = ac.o.logical;
        let lo = l.saturating_sub(self.bpg);
        // Newest matching space first, as list_add_rcu puts new spaces at the head.
        let key = self
            .inode_pa
            .range((ar.ino, lo, 0)..=(ar.ino, l, u64::MAX))
            .filter(|(_, pa)| l < pa.lstart + pa.len && pa.free > 0)
            .max_by_key(|(_, pa)| pa.seq)
            .map(|(k, _)| *k);
        if let Some(k) = key {
            let r = self.use_inode_pa(k, l, ac.o.len);
            return Some(r);
        }
        if !ac.group_alloc {
            return None;
        }
        let goal = self.gstart(ac.g.group) + ac.g.start;
        let mut best: Option<(usize, u64)> = None;
        for (i, pa) in self.group_pa.iter().enumerate() {
            if pa.len >= ac.o.len {
                let d = goal.abs_diff(pa.pstart);
                // ext4_mb_check_group_pa keeps the current one only if strictly closer.
                if best.is_none_or(|(_, bd)| d <= bd) {
                    best = Some((i, d));
                }
            }
        }
        let (i, _) = best?;
        Some(self.use_group_pa(i, ac.o.len))
    }

    /// `ext4_mb_use_inode_pa`.
    fn use_inode_pa(&mut self, key: (u32, u64, u64), logical: u64, len: u64) -> (u64, u64) {
        let Some(pa) = self.inode_pa.get_mut(&key) else {
            return (0, 0);
        };
        let start = pa.pstart + (logical - pa.lstart);
        let end = (pa.pstart + pa.len).min(start + len);
        let n = (end - start).min(pa.free);
        pa.free -= n;
        pa.used.insert(logical, logical + n);
        self.pa_free -= n;
        if pa.free == 0 {
            // ext4_mb_put_pa: an exhausted space is released.
            self.inode_pa.remove(&key);
        }
        (start, n)
    }

    /// `ext4_mb_use_group_pa` plus the `pa_linear` update of
    /// `ext4_mb_release_context`.
    fn use_group_pa(&mut self, i: usize, len: u64) -> (u64, u64) {
        let pa = &mut self.group_pa[i];
        let p = pa.pstart;
        pa.pstart += len;
        pa.len -= len;
        self.pa_free -= len;
        if pa.len == 0 {
            self.group_pa.remove(i);
        }
        (p, len)
    }

    /// `ext4_mb_normalize_request`.
    fn normalize_request(&mut self, ac: &mut Ac, ar: &AllocRequest) {
        if ac.noprealloc {
            return;
        }
        if ac.group_alloc {
            // ext4_mb_normalize_group_request (no RAID stripe is modelled).
            ac.g.len = self.cfg.group_prealloc.max(1);
            return;
        }
        let bsbits = self.blkbits;
        let mut size = (ac.o.logical + ac.o.len) << bsbits;
        if size < ar.isize {
            size = ar.isize;
        }
        // "max size of free chunks", compared below with chunk sizes in KiB: at
        // 4 KiB blocks the 8 MiB case is always taken for files over 8 MiB.
        let max = 2u64 << bsbits;
        let nrl = |req: u64, sz: u64, chunk: u64| req <= sz || max <= chunk;
        const K: u64 = 1024;
        const M: u64 = 1 << 20;
        let l = ac.o.logical;
        let (start_off, sz) = if size <= 16 * K {
            (0, 16 * K)
        } else if size <= 32 * K {
            (0, 32 * K)
        } else if size <= 64 * K {
            (0, 64 * K)
        } else if size <= 128 * K {
            (0, 128 * K)
        } else if size <= 256 * K {
            (0, 256 * K)
        } else if size <= 512 * K {
            (0, 512 * K)
        } else if size <= M {
            (0, M)
        } else if nrl(size, 4 * M, 2 * K) {
            ((l >> (21 - bsbits)) << 21, 2 * M)
        } else if nrl(size, 8 * M, 4 * K) {
            ((l >> (22 - bsbits)) << 22, 4 * M)
        } else if nrl(ac.o.len, (8 * M) >> bsbits, 8 * K) {
            ((l >> (23 - bsbits)) << 23, 8 * M)
        } else {
            (l << bsbits, ac.o.len << bsbits)
        };
        let mut size = sz >> bsbits;
        let mut start = start_off >> bsbits;
        // don't cover already allocated blocks in selected range
        if ar.pleft != 0 && start <= ar.lleft {
            size = size.saturating_sub(ar.lleft + 1 - start);
            start = ar.lleft + 1;
        }
        if ar.pright != 0 && start + size > ar.lright {
            size = size.saturating_sub(start + size - ar.lright);
        }
        let mut end = start + size;
        // check we don't cross already preallocated blocks
        let lo = start.saturating_sub(self.bpg);
        for pa in self
            .inode_pa
            .range((ar.ino, lo, 0)..(ar.ino, end, 0))
            .map(|(_, p)| p)
        {
            let pa_end = pa.lstart + pa.len;
            if pa.lstart >= end || pa_end <= start {
                continue;
            }
            if pa_end <= l {
                start = start.max(pa_end);
            }
            if pa.lstart > l {
                end = end.min(pa.lstart);
            }
        }
        let size = end.saturating_sub(start);
        // The kernel BUG()s on these; keep the original request instead.
        if size == 0 || size >= self.bpg || !(start <= l && l < start + size) {
            return;
        }
        ac.g.logical = start;
        ac.g.len = size;
        // "define goal start in order to merge": the kernel stores the merge point
        // in ac_f_ex, not ac_g_ex, so the goal tried by ext4_mb_find_by_goal stays
        // the caller's (ext4_ext_find_goal); only the TRY_GOAL flag takes effect.
        if ar.pright != 0 && ar.lright == start + size {
            ac.try_goal = true;
        }
        if ar.pleft != 0 && ar.lleft + 1 == start {
            ac.try_goal = true;
        }
    }

    /// `mb_find_extent`: the free extent starting at `b`, grown by whole buddy
    /// chunks while shorter than `needed` (may end up longer). 0 if `b` is in use.
    fn mb_find_extent(&self, b: u64, needed: u64) -> u64 {
        let Some((s, e)) = self.extent_at(b) else {
            return 0;
        };
        let mut len = 0;
        let mut started = false;
        self.decompose(s, e, |c, k| {
            let ce = c + (1u64 << k);
            if !started {
                if b < ce {
                    started = true;
                    len = ce - b;
                }
            } else if len < needed {
                len += 1u64 << k;
            }
        });
        len
    }

    /// `ext4_mb_use_best_found`.
    fn use_best_found(&mut self, ac: &mut Ac) {
        ac.b.len = ac.b.len.min(ac.g.len);
        ac.b.logical = ac.g.logical;
        let abs = self.gstart(ac.b.group) + ac.b.start;
        self.take_range(abs, abs + ac.b.len);
        // ext4_mb_mark_diskspace_used clears BLOCK_UNINIT.
        self.groups[ac.b.group as usize].block_uninit = false;
        ac.status = Status::Found;
        // "store last allocated for subsequent stream allocation"
        let update = match self.cfg.variant {
            MbVariant::V2628 => ac.data, // EXT4_MB_HINT_DATA: every file data allocation
            MbVariant::V2630 => ac.stream,
        };
        if update {
            self.last_group = ac.b.group;
            self.last_start = ac.b.start;
        }
    }

    /// `ext4_mb_find_by_goal` (only with `EXT4_MB_HINT_TRY_GOAL`; no RAID stripe).
    fn find_by_goal(&mut self, ac: &mut Ac) {
        let abs = self.gstart(ac.g.group) + ac.g.start;
        let max = self.mb_find_extent(abs, ac.g.len);
        if max >= ac.g.len {
            ac.found += 1;
            ac.b = Fex {
                logical: ac.g.logical,
                group: ac.g.group,
                start: ac.g.start,
                len: max,
            };
            self.use_best_found(ac);
        }
    }

    fn largest_free_order(&self, g: u64) -> Option<u32> {
        let gi = &self.groups[g as usize];
        (0..=self.max_order)
            .rev()
            .find(|&k| gi.counters[k as usize] > 0)
    }

    /// `ext4_mb_good_group`.
    fn good_group(&self, ac: &Ac, g: u64, cr: u32) -> bool {
        let gi = &self.groups[g as usize];
        if gi.free == 0 || gi.fragments == 0 {
            return false;
        }
        match cr {
            0 => match self.cfg.variant {
                MbVariant::V2628 => {
                    // "If this group is uninitialized, skip it initially"
                    if gi.block_uninit {
                        return false;
                    }
                    (ac.order2..=self.max_order).any(|k| gi.counters[k as usize] > 0)
                }
                MbVariant::V2630 => {
                    if self.largest_free_order(g).is_none_or(|o| o < ac.order2) {
                        return false;
                    }
                    // "Avoid using the first bg of a flexgroup for data files"
                    !(self.flex_size >= 4 && g % self.flex_size == 0)
                }
            },
            1 => gi.free / gi.fragments >= ac.g.len,
            2 => gi.free >= ac.g.len,
            _ => true,
        }
    }

    /// `ext4_mb_regular_allocator`.
    fn regular_allocator(&mut self, ac: &mut Ac, ar: &AllocRequest) {
        // first, try the goal
        if ac.try_goal {
            self.find_by_goal(ac);
            if ac.status == Status::Found {
                return;
            }
        }
        let i = fls(ac.g.len);
        ac.order2 = 0;
        if i >= self.cfg.order2_reqs && i > 0 && ac.g.len & !(1u64 << (i - 1)) == 0 {
            ac.order2 = i - 1;
        }
        let use_global = match self.cfg.variant {
            // K2628: the global goal serves files *smaller* than mb_stream_req.
            MbVariant::V2628 => {
                let size = (ac.o.logical + ac.o.len).max(ar.isize >> self.blkbits);
                size < self.cfg.stream_req
            }
            MbVariant::V2630 => ac.stream,
        };
        if use_global {
            ac.g.group = self.last_group;
            ac.g.start = self.last_start;
        }
        let mut cr = if ac.order2 > 0 { 0 } else { 1 };
        loop {
            while cr < 4 && ac.status == Status::Continue {
                let mut group = ac.g.group;
                for _ in 0..self.ngroups {
                    if group >= self.ngroups {
                        group = 0;
                    }
                    if self.groups[group as usize].free > 0 && self.good_group(ac, group, cr) {
                        let gi = &self.groups[group as usize];
                        let simple = cr == 0
                            || (self.cfg.variant == MbVariant::V2628
                                && gi.block_uninit
                                && ac.order2 != 0);
                        if simple {
                            self.simple_scan_group(ac, group);
                        } else {
                            self.complex_scan_group(ac, group);
                        }
                        if ac.status != Status::Continue {
                            break;
                        }
                    }
                    group += 1;
                }
                cr += 1;
            }
            if ac.b.len > 0 && ac.status != Status::Found && !ac.first {
                // "We've been searching too long. Let's try to allocate the best
                // chunk we've found so far"
                self.try_best_found(ac);
                if ac.status != Status::Found {
                    ac.b = Fex {
                        logical: ac.o.logical,
                        ..Fex::default()
                    };
                    ac.status = Status::Continue;
                    ac.first = true;
                    cr = 3;
                    continue;
                }
            }
            break;
        }
    }

    /// `ext4_mb_try_best_found`.
    fn try_best_found(&mut self, ac: &mut Ac) {
        let abs = self.gstart(ac.b.group) + ac.b.start;
        let max = self.mb_find_extent(abs, ac.b.len);
        if max > 0 {
            ac.b.len = max;
            self.use_best_found(ac);
        }
    }

    /// `ext4_mb_simple_scan_group`: the first chunk of the smallest order at least
    /// `2^order2` that the group has.
    fn simple_scan_group(&mut self, ac: &mut Ac, g: u64) {
        let (gs, ge) = (self.gstart(g), self.gend(g));
        for k in ac.order2..=self.max_order {
            if self.groups[g as usize].counters[k as usize] == 0 {
                continue;
            }
            let Some(&(_, c)) = self.chunks.range((k, gs)..(k, ge)).next() else {
                continue;
            };
            ac.found += 1;
            ac.b = Fex {
                logical: ac.g.logical,
                group: g,
                start: c - gs,
                len: 1 << k,
            };
            self.use_best_found(ac);
            break;
        }
    }

    /// `ext4_mb_complex_scan_group`: measure the free extents of the group in
    /// block order from `bb_first_free`.
    fn complex_scan_group(&mut self, ac: &mut Ac, g: u64) {
        let (gs, ge) = (self.gstart(g), self.gend(g));
        let mut free = self.groups[g as usize].free;
        let mut i = gs;
        while free > 0 && ac.status == Status::Continue {
            let Some(p) = self.next_free(i, ge) else {
                break;
            };
            let len = self.mb_find_extent(p, ac.g.len);
            if len == 0 {
                break;
            }
            let ex = Fex {
                logical: ac.g.logical,
                group: g,
                start: p - gs,
                len,
            };
            self.measure_extent(ac, ex, g);
            i = p + len;
            free = free.saturating_sub(len);
        }
        self.check_limits(ac, g, true);
    }

    /// `ext4_mb_measure_extent`.
    fn measure_extent(&mut self, ac: &mut Ac, ex: Fex, g: u64) {
        ac.found += 1;
        if ac.first || ex.len == ac.g.len {
            ac.b = ex;
            self.use_best_found(ac);
            return;
        }
        if ac.b.len == 0 {
            ac.b = ex;
            return;
        }
        if ac.b.len < ac.g.len {
            // the request isn't satisfied: any larger extent is better
            if ex.len > ac.b.len {
                ac.b = ex;
            }
        } else if ex.len > ac.g.len && ex.len < ac.b.len {
            // satisfied: prefer a smaller extent that still satisfies it
            ac.b = ex;
        }
        self.check_limits(ac, g, false);
    }

    /// `ext4_mb_check_limits`.
    fn check_limits(&mut self, ac: &mut Ac, g: u64, finish_group: bool) {
        if ac.status != Status::Continue {
            return;
        }
        // "We don't want to scan for a whole year"
        if ac.found > self.cfg.max_to_scan && !ac.first {
            ac.status = Status::Break;
            return;
        }
        if ac.b.len < ac.g.len {
            return;
        }
        if (finish_group || ac.found > self.cfg.min_to_scan) && ac.b.group == g {
            let abs = self.gstart(g) + ac.b.start;
            if self.mb_find_extent(abs, ac.g.len) >= ac.g.len {
                self.use_best_found(ac);
            }
        }
    }

    /// `ext4_mb_new_preallocation`: keep the found extent's unused part as an
    /// inode or locality-group space and hand out the original request from it.
    fn new_preallocation(&mut self, ac: &mut Ac, ar: &AllocRequest) -> (u64, u64) {
        let pstart = self.gstart(ac.b.group) + ac.b.start;
        if ac.group_alloc {
            // ext4_mb_new_group_pa
            self.group_pa.push(GroupPa {
                pstart,
                len: ac.b.len,
            });
            self.pa_free += ac.b.len;
            let i = self.group_pa.len() - 1;
            return self.use_group_pa(i, ac.o.len);
        }
        // ext4_mb_new_inode_pa
        if ac.b.len < ac.g.len {
            // "we can't allocate as much as normalizer wants. so, found space
            // must get proper lstart to cover original request"
            let winl = ac.o.logical.saturating_sub(ac.g.logical);
            let wins = ac.b.len - ac.o.len;
            let mut win = winl.min(wins);
            let offs = ac.o.logical % ac.b.len;
            if offs != 0 && offs < win {
                win = offs;
            }
            ac.b.logical = ac.o.logical - win;
        }
        self.pa_seq += 1;
        let key = (ar.ino, ac.b.logical, self.pa_seq);
        self.inode_pa.insert(
            key,
            InodePa {
                lstart: ac.b.logical,
                pstart,
                len: ac.b.len,
                free: ac.b.len,
                seq: self.pa_seq,
                used: RangeSet::new(),
            },
        );
        self.pa_free += ac.b.len;
        self.use_inode_pa(key, ac.o.logical, ac.o.len)
    }

    /// Recompute the per-group statistics and the chunk index from the free
    /// extents and compare (tests).
    pub fn check(&self) -> Result<(), String> {
        let mut groups = vec![(0u64, 0u64, [0u32; NORDERS]); self.ngroups as usize];
        let mut chunks = BTreeSet::new();
        let mut total = 0;
        let mut prev_end = 0;
        for (&s, &e) in &self.free {
            if s < prev_end || s >= e {
                return Err(format!("free extent {s}..{e} overlaps or is empty"));
            }
            let g = s / self.bpg;
            if e > self.gend(g) {
                return Err(format!("free extent {s}..{e} crosses a group end"));
            }
            if s == prev_end && s != self.gstart(g) {
                return Err(format!("free extents meet at {s} unmerged"));
            }
            prev_end = e;
            total += e - s;
            let gi = &mut groups[g as usize];
            gi.0 += e - s;
            gi.1 += 1;
            self.decompose(s, e, |c, k| {
                gi.2[k as usize] += 1;
                chunks.insert((k, c));
            });
        }
        if total != self.total_free {
            return Err(format!("free total {} != {}", self.total_free, total));
        }
        if chunks != self.chunks {
            return Err("buddy chunk index out of date".into());
        }
        for (g, (f, fr, c)) in groups.iter().enumerate() {
            let gi = &self.groups[g];
            if gi.free != *f || gi.fragments != *fr || gi.counters != *c {
                return Err(format!("group {g} statistics out of date"));
            }
        }
        let pa: u64 = self.inode_pa.values().map(|p| p.free).sum::<u64>()
            + self.group_pa.iter().map(|p| p.len).sum::<u64>();
        if pa != self.pa_free {
            return Err(format!("preallocated {} != {}", self.pa_free, pa));
        }
        for pa in self.inode_pa.values() {
            if pa.len - pa.used.total() != pa.free {
                return Err(format!("inode PA at {} miscounts", pa.lstart));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mb(variant: MbVariant) -> Mballoc {
        Mballoc::new(MbConfig::defaults(variant), 12, 32768, 32768 * 8, 4).unwrap()
    }

    /// All groups free at once (`add_all_groups`) is the state `add_extent`
    /// on each group leaves, with a partial last group.
    #[test]
    fn a_new_allocator_is_every_group_added_in_turn() {
        let m = Mballoc::new(
            MbConfig::defaults(MbVariant::V2630),
            12,
            32768,
            32768 * 5 + 9001,
            4,
        )
        .unwrap();
        let mut by_one = Mballoc::new(
            MbConfig::defaults(MbVariant::V2630),
            12,
            32768,
            32768 * 5 + 9001,
            4,
        )
        .unwrap();
        by_one.free.clear();
        by_one.chunks.clear();
        by_one.total_free = 0;
        for g in by_one.groups.iter_mut() {
            *g = GroupInfo {
                free: 0,
                fragments: 0,
                counters: [0; NORDERS],
                block_uninit: g.block_uninit,
            };
        }
        for g in 0..by_one.ngroups {
            by_one.add_extent(by_one.gstart(g), by_one.gend(g));
        }
        assert_eq!(m.free, by_one.free);
        assert_eq!(m.chunks, by_one.chunks);
        assert_eq!(m.total_free, by_one.total_free);
        assert_eq!(format!("{:?}", m.groups), format!("{:?}", by_one.groups));
        assert!(
            m.chunks.iter().any(|&(k, _)| k < m.max_order),
            "a partial group"
        );
        m.check().unwrap();
    }

    #[test]
    fn buddy_decomposition_matches_counters() {
        let mut m = mb(MbVariant::V2630);
        m.take_range(0, 9255);
        m.check().unwrap();
        let gi = &m.groups[0];
        // [9255, 32768): ..., [9728,10240) o9, [10240,12288) o11, [12288,16384) o12,
        // [16384,24576) o13, [24576,32768) o13.
        assert_eq!(gi.counters[10], 0);
        assert_eq!(gi.counters[11], 1);
        assert_eq!(gi.counters[13], 2);
        assert_eq!(m.mb_find_extent(9728, 2048), 512 + 2048);
        assert_eq!(m.mb_find_extent(9728, 100), 512);
        assert_eq!(m.mb_find_extent(100, 1), 0);
        m.free_range(0, 9255);
        m.check().unwrap();
        assert_eq!(m.groups[0].fragments, 1);
    }

    #[test]
    fn small_files_share_a_group_preallocation() {
        let mut m = mb(MbVariant::V2628);
        let ar = |ino, goal| AllocRequest {
            ino,
            logical: 0,
            len: 2,
            goal,
            isize: 8192,
            ..AllocRequest::default()
        };
        let (p1, n1) = m.new_blocks(&ar(12, 0)).unwrap();
        let (p2, n2) = m.new_blocks(&ar(13, 0)).unwrap();
        assert_eq!((n1, n2), (2, 2));
        assert_eq!(p2, p1 + 2, "the locality group space is consumed in order");
        assert_eq!(m.free_blocks(), 32768 * 8 - 4);
        m.check().unwrap();
    }
}
