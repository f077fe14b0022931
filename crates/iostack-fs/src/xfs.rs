//! XFS block mapping with delayed allocation (K2628 `fs/xfs/xfs_iomap.c`,
//! `xfs_bmap.c`, `xfs_alloc.c`; the same logic in K2637).
//!
//! * **Layout**: allocation groups of `ag_blocks` (mkfs.xfs of 2008,
//!   `calc_default_ag_geometry`: 8, 16 or 32 AGs by size), each starting with its
//!   headers, free-space btree roots and AGFL (`AG_RESERVED` blocks); the root
//!   inode chunk follows in AG 0 and the internal log starts AG `agcount / 2`.
//!   Free space per AG is the pair of btrees: by block (`bno`) and by size (`cnt`).
//! * **Buffered writes**: `delalloc_reserve` is `xfs_iomap_write_delay`: a write
//!   reaching past EOF, with no real blocks beyond it
//!   (`xfs_iomap_eof_want_preallocate`), reserves delalloc blocks up to the end of
//!   the `m_writeio_blocks`-aligned chunk holding its last byte (64 KiB,
//!   `XFS_WRITEIO_LOG_LARGE`); delalloc extents merge up to `MAXEXTLEN`
//!   (`xfs_bmap_add_extent_hole_delay`).
//! * **Writeback**: `map_for_writeback` of a delalloc block is
//!   `xfs_iomap_write_allocate`: `xfs_bmapi` converts the *whole* delalloc extent
//!   (`wasdelay`: `alen = got.br_blockcount`), one allocation per transaction, until
//!   the extent holding the block is real. Each allocation is `xfs_bmap_btalloc`
//!   with a null first block: goal from `xfs_bmap_adjacent` (after the previous real
//!   extent, or the inode's block), the minimum length set to the request if some
//!   AG has a free extent that long, else to the longest one, then
//!   `XFS_ALLOCTYPE_START_BNO`: near the goal in its AG
//!   (`xfs_alloc_ag_vextent_near`), then best fit by size in the following AGs
//!   (`xfs_alloc_ag_vextent_size`).
//! * **Direct I/O**: `get_block` with create is `xfs_iomap_write_direct`.
//!
//! Not modelled: the AGFL refill and btree block allocations, minleft/total
//! reservations, indirect-block (indlen) reservations of delalloc extents, stripe
//! alignment, extent size hints, filestreams, unwritten extents.

use crate::extent_fs::{check_tiling, ExtentFs, FileExtent};
use crate::xfs_log::Item;
use crate::xfs_trans::{alloc_items, create_items, sf_entry_bytes, Geometry};
use crate::{BlockMapping, FsError, GetBlock};
use iostack_core::Tunables;
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

/// `MAXEXTLEN`: 21-bit extent length.
pub const MAXEXTLEN: u64 = (1 << 21) - 1;
/// `XFS_ALLOC_GAP_UNITS` in `xfs_bmap_adjacent`.
const ALLOC_GAP_UNITS: u64 = 4;
/// Blocks at the start of every AG: superblock, AGF, AGI and AGFL sectors, the
/// bno/cnt/inobt roots (`XFS_PREALLOC_BLOCKS`) and the blocks mkfs puts on the
/// AGFL.
pub const AG_RESERVED: u64 = 8;
/// Inodes per chunk (`XFS_INODES_PER_CHUNK`).
const INODES_PER_CHUNK: u64 = 64;
/// Records in a by-size btree leaf block at 4 KiB (`XFS_ALLOC_BLOCK_MAXRECS`:
/// (4096 - 16) / 8), the reach of `xfs_alloc_ag_vextent_near`'s first algorithm.
const CNT_LEAF_RECS: usize = 510;
/// Largest file offset in blocks we accept.
const MAX_FILE_BLOCKS: u64 = 1 << 50;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XfsParams {
    pub block_size: u32,
    pub blocks: u64,
    /// Allocation groups; `None`: mkfs.xfs's 2008 default for the size.
    pub ag_count: Option<u64>,
    pub inode_size: u64,
    /// Internal log size; `None`: about 1/2048 of the file system, 2 MiB to 128 MiB.
    pub log_blocks: Option<u64>,
    /// `m_writeio_log`: log2 of the speculative EOF preallocation unit
    /// (`XFS_WRITEIO_LOG_LARGE` = 16, the `allocsize` mount option).
    pub writeio_log: u32,
    /// A v5 (CRC) file system, as 6.x's mkfs.xfs makes (the log items'
    /// formats, `xfs_trans.rs`).
    pub v5: bool,
}

impl XfsParams {
    pub fn mkfs_defaults(block_size: u32, blocks: u64) -> XfsParams {
        XfsParams {
            block_size,
            blocks,
            ag_count: None,
            inode_size: 256,
            log_blocks: None,
            writeio_log: 16,
            v5: false,
        }
    }

    pub fn from_tunables(block_size: u32, blocks: u64, t: &Tunables) -> XfsParams {
        XfsParams {
            writeio_log: t.get_u64("fs/xfs/writeio_log") as u32,
            v5: t.profile() >= iostack_core::Profile::V6,
            ..XfsParams::mkfs_defaults(block_size, blocks)
        }
    }
}

/// One allocation group's free space: the by-block and by-size btrees.
#[derive(Clone, Debug)]
struct Ag {
    start: u64,
    len: u64,
    bno: BTreeMap<u64, u64>,
    cnt: BTreeSet<(u64, u64)>,
}

impl Ag {
    fn longest(&self) -> u64 {
        self.cnt.iter().next_back().map_or(0, |&(l, _)| l)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rec {
    len: u64,
    /// Physical start, `None` for a delayed-allocation extent.
    start: Option<u64>,
}

#[derive(Clone, Debug)]
struct XInode {
    ino: u32,
    name: String,
    size: u64,
    /// The data fork's extent list: file offset → record.
    map: BTreeMap<u64, Rec>,
}

pub struct Xfs {
    p: XfsParams,
    blkbits: u32,
    ag_blocks: u64,
    ags: Vec<Ag>,
    free_total: u64,
    /// Blocks reserved by delalloc extents.
    delalloc: u64,
    inodes: Vec<XInode>,
    names: BTreeMap<String, u32>,
    by_ino: BTreeMap<u32, usize>,
    /// The record `rec_at` found last, `(inode slot, offset, record)`:
    /// writeback maps a file page by page in order, so the next page is
    /// mostly in it. Forgotten whenever an extent list changes
    /// (`insert_rec`, `cut_rec`).
    last_rec: Cell<Option<(usize, u64, Rec)>>,
    /// The inode `idx` found last, with its slot.
    last_ino: Cell<Option<(u32, usize)>>,
    meta: Vec<(u64, u64, &'static str)>,
    inopb: u64,
    chunk_blocks: u64,
    /// Inode chunks in AG 0 (first block) and the next free inode.
    chunks: Vec<u64>,
    next_in_chunk: u64,
    /// The internal log: first block and length.
    log: (u64, u64),
    /// The root directory's short-form bytes (`xfs_dir2_sf_hdr` and entries).
    dir_bytes: u64,
    /// Transactions committed since the last `take_log_trans`, as the items
    /// each logged (`xfs_trans.rs`).
    trans: Vec<Vec<Item>>,
    /// Each created file's `xfs_create` transaction, committed when its
    /// creator runs (`take_create_trans`).
    creates: BTreeMap<u32, Vec<Item>>,
}

/// `xfs_alloc_compute_diff` with alignment 1: where in free extent
/// `[fbno, fbno+flen)` to put `wantlen` blocks nearest `want`.
fn compute_diff(want: u64, wantlen: u64, fbno: u64, flen: u64) -> (u64, u64) {
    let freeend = fbno + flen;
    let newbno = if fbno >= want {
        fbno
    } else if freeend >= want + wantlen {
        want
    } else {
        freeend - wantlen
    };
    (newbno, newbno.abs_diff(want))
}

impl Xfs {
    /// mkfs.xfs and mount.
    pub fn new(p: XfsParams) -> Result<Xfs, FsError> {
        let bs = p.block_size as u64;
        if !p.block_size.is_power_of_two() || !(512..=65536).contains(&p.block_size) {
            return Err(FsError::Invalid(format!("XFS block size {}", p.block_size)));
        }
        let blkbits = p.block_size.trailing_zeros();
        if p.writeio_log < blkbits || p.writeio_log > 30 {
            return Err(FsError::Invalid(format!(
                "XFS writeio_log {}",
                p.writeio_log
            )));
        }
        if p.inode_size < 256 || p.inode_size > bs || !p.inode_size.is_power_of_two() {
            return Err(FsError::Invalid(format!("XFS inode size {}", p.inode_size)));
        }
        let mb = |m: u64| (m << 20) >> blkbits;
        let min_ag = mb(16);
        let mut blocks = p.blocks;
        let ag_blocks = match p.ag_count {
            Some(0) => return Err(FsError::Invalid("0 allocation groups".into())),
            Some(n) => blocks.div_ceil(n),
            None if blocks < mb(16) => blocks,
            None if blocks < mb(128) => mb(16),
            None => {
                // calc_default_ag_geometry (xfsprogs of 2008)
                let shift = if blocks > mb(512 << 10) {
                    5
                } else if blocks > mb(8 << 10) {
                    4
                } else {
                    3
                };
                (blocks >> shift).min(mb(1 << 20))
            }
        };
        if ag_blocks < 64 {
            return Err(FsError::Invalid(format!(
                "XFS of {blocks} blocks is too small"
            )));
        }
        let mut ag_count = blocks.div_ceil(ag_blocks);
        // validate_ag_geometry: a last AG under the minimum is dropped.
        if ag_count > 1 && blocks % ag_blocks != 0 && blocks % ag_blocks < min_ag.min(ag_blocks) {
            ag_count -= 1;
            blocks = ag_count * ag_blocks;
        }
        let inopb = bs / p.inode_size;
        let chunk_blocks = (INODES_PER_CHUNK / inopb).max(1);
        let mut fs = Xfs {
            blkbits,
            ag_blocks,
            ags: Vec::new(),
            free_total: 0,
            delalloc: 0,
            inodes: Vec::new(),
            names: BTreeMap::new(),
            by_ino: BTreeMap::new(),
            last_rec: Cell::new(None),
            last_ino: Cell::new(None),
            meta: Vec::new(),
            inopb,
            chunk_blocks,
            chunks: Vec::new(),
            next_in_chunk: 3, // root, realtime bitmap and summary inodes
            log: (0, 0),
            // xfs_dir2_sf_hdr: count, i8count, a 4-byte parent.
            dir_bytes: 6,
            trans: Vec::new(),
            creates: BTreeMap::new(),
            p: XfsParams { blocks, ..p },
        };
        for a in 0..ag_count {
            let start = a * ag_blocks;
            let len = ag_blocks.min(blocks - start);
            if len <= AG_RESERVED + 16 {
                return Err(FsError::Invalid(format!("XFS AG {a} of {len} blocks")));
            }
            fs.ags.push(Ag {
                start,
                len,
                bno: BTreeMap::new(),
                cnt: BTreeSet::new(),
            });
            fs.free_ag(a as usize, start + AG_RESERVED, len - AG_RESERVED);
            fs.meta.push((start, AG_RESERVED, "AG headers"));
        }
        // The root inode chunk, right after AG 0's headers.
        let root = AG_RESERVED;
        fs.take(root, chunk_blocks);
        fs.meta.push((root, chunk_blocks, "inode chunk"));
        fs.chunks.push(root);
        let log = p
            .log_blocks
            .unwrap_or((blocks / 2048).clamp(mb(2), mb(128)))
            .min(ag_blocks / 2);
        if log > 0 {
            let lag = ag_count / 2;
            let at = fs.ags[lag as usize]
                .bno
                .iter()
                .find(|(_, &l)| l >= log)
                .map(|(&s, _)| s)
                .ok_or(FsError::NoSpace)?;
            fs.take(at, log);
            fs.meta.push((at, log, "log"));
            fs.log = (at, log);
        }
        Ok(fs)
    }

    pub fn params(&self) -> &XfsParams {
        &self.p
    }

    fn geometry(&self) -> Geometry {
        Geometry {
            spb: (self.p.block_size / 512) as u64,
            inode_size: self.p.inode_size,
            v5: self.p.v5,
        }
    }

    /// The allocation transaction of the extent at `p` for inode slot `i`.
    fn log_alloc(&mut self, i: usize, p: u64) {
        let ag_start = self.ags[self.ag_of(p)].start;
        let ino = self.inodes[i].ino;
        let extents = self.inodes[i]
            .map
            .values()
            .filter(|r| r.start.is_some())
            .count();
        let items = alloc_items(&self.geometry(), ag_start, ino, extents as u32);
        self.trans.push(items);
    }

    pub fn ag_count(&self) -> u64 {
        self.ags.len() as u64
    }

    pub fn ag_blocks(&self) -> u64 {
        self.ag_blocks
    }

    /// Free blocks (`sb_fdblocks` before delalloc reservations).
    pub fn free_blocks(&self) -> u64 {
        self.free_total
    }

    /// Blocks reserved by delayed allocation.
    pub fn delalloc_reserved(&self) -> u64 {
        self.delalloc
    }

    /// Longest free extent of each AG (`pagf_longest`).
    pub fn ag_longest(&self) -> Vec<u64> {
        self.ags.iter().map(Ag::longest).collect()
    }

    fn ag_of(&self, b: u64) -> usize {
        ((b / self.ag_blocks) as usize).min(self.ags.len() - 1)
    }

    fn free_ag(&mut self, a: usize, s: u64, len: u64) {
        let ag = &mut self.ags[a];
        let (mut ns, mut nl) = (s, len);
        if let Some((&ls, &ll)) = ag.bno.range(..s).next_back() {
            if ls + ll == s {
                ag.bno.remove(&ls);
                ag.cnt.remove(&(ll, ls));
                ns = ls;
                nl += ll;
            }
        }
        if let Some(&rl) = ag.bno.get(&(s + len)) {
            ag.bno.remove(&(s + len));
            ag.cnt.remove(&(rl, s + len));
            nl += rl;
        }
        ag.bno.insert(ns, nl);
        ag.cnt.insert((nl, ns));
        self.free_total += len;
    }

    /// Return `[s, s+len)` to free space.
    fn free(&mut self, s: u64, len: u64) {
        let mut at = s;
        while at < s + len {
            let a = self.ag_of(at);
            let end = (s + len).min(self.ags[a].start + self.ags[a].len);
            self.free_ag(a, at, end - at);
            at = end;
        }
    }

    /// `xfs_alloc_fixup_trees`: take `[s, s+len)` out of the free extent holding it.
    fn take(&mut self, s: u64, len: u64) {
        let a = self.ag_of(s);
        let ag = &mut self.ags[a];
        let Some((&fs, &fl)) = ag.bno.range(..=s).next_back() else {
            return;
        };
        if fs + fl < s + len {
            return;
        }
        ag.bno.remove(&fs);
        ag.cnt.remove(&(fl, fs));
        if fs < s {
            ag.bno.insert(fs, s - fs);
            ag.cnt.insert((s - fs, fs));
        }
        if s + len < fs + fl {
            let r = s + len;
            ag.bno.insert(r, fs + fl - r);
            ag.cnt.insert((fs + fl - r, r));
        }
        self.free_total -= len;
    }

    /// `xfs_alloc_ag_vextent_near`: the free extent giving the longest piece (up
    /// to `maxlen`) and then the smallest distance to `goal`. When the extents that
    /// long fit in the by-size btree's last leaf block the kernel compares them all
    /// ("first algorithm"); otherwise it searches the by-block btree both ways
    /// from the goal for the nearest one on each side ("second algorithm").
    fn near(&self, a: usize, goal: u64, maxlen: u64, minlen: u64) -> Option<(u64, u64)> {
        let ag = &self.ags[a];
        let longest = ag.longest();
        if longest < minlen || longest == 0 {
            return None;
        }
        let want = if longest >= maxlen { maxlen } else { longest };
        let goal = goal.clamp(ag.start, ag.start + ag.len - 1);
        let mut best: Option<(u64, u64)> = None;
        let mut bdiff = u64::MAX;
        let mut seen = 0;
        for &(flen, fbno) in ag.cnt.range((want, 0)..) {
            seen += 1;
            if seen > CNT_LEAF_RECS {
                best = None;
                break;
            }
            let (nb, diff) = compute_diff(goal, want, fbno, flen);
            if diff < bdiff {
                bdiff = diff;
                best = Some((nb, want));
                if diff == 0 {
                    break;
                }
            }
        }
        if seen <= CNT_LEAF_RECS {
            return best;
        }
        let left = ag
            .bno
            .range(..=goal)
            .rev()
            .find(|(_, &l)| l >= want)
            .map(|(&s, &l)| compute_diff(goal, want, s, l));
        let right = ag
            .bno
            .range(goal + 1..)
            .find(|(_, &l)| l >= want)
            .map(|(&s, &l)| compute_diff(goal, want, s, l));
        match (left, right) {
            (Some(l), Some(r)) => Some((if r.1 < l.1 { r.0 } else { l.0 }, want)),
            (Some(l), None) => Some((l.0, want)),
            (None, Some(r)) => Some((r.0, want)),
            (None, None) => None,
        }
    }

    /// `xfs_alloc_ag_vextent_size`: the smallest free extent of at least `maxlen`,
    /// else the largest.
    fn by_size(&self, a: usize, maxlen: u64, minlen: u64) -> Option<(u64, u64)> {
        let ag = &self.ags[a];
        if let Some(&(_, fbno)) = ag.cnt.range((maxlen, 0)..).next() {
            return Some((fbno, maxlen));
        }
        let &(flen, fbno) = ag.cnt.iter().next_back()?;
        (flen >= minlen && flen > 0).then_some((fbno, flen))
    }

    /// Same AG and inside the file system (`ISVALID` in `xfs_bmap_adjacent`).
    fn valid(&self, x: u64, y: u64) -> bool {
        x < self.p.blocks && self.ag_of(x) == self.ag_of(y)
    }

    /// `xfs_bmap_adjacent`: a goal next to the neighbouring real extents.
    fn adjacent(&self, i: usize, off: u64, alen: u64) -> Option<u64> {
        let map = &self.inodes[i].map;
        let prev = map.range(..off).next_back().map(|(&o, &r)| (o, r));
        let got = map.range(off..).next().map(|(&o, &r)| (o, r));
        let prev_real = prev.and_then(|(o, r)| r.start.map(|p| (o, r.len, p)));
        if got.is_none() {
            // allocating at EOF: follow the previous real extent
            let (po, pl, pp) = prev_real?;
            let mut rval = pp + pl;
            if !self.valid(rval, pp) {
                return None;
            }
            let adjust = off - (po + pl);
            if adjust > 0 && self.valid(rval + adjust, pp) {
                rval += adjust;
            }
            return Some(rval);
        }
        let mut prevbno = None;
        let mut prevdiff = 0;
        if let Some((po, pl, pp)) = prev_real {
            let b = pp + pl;
            if self.valid(b, pp) {
                let adjust = off - (po + pl);
                prevdiff = adjust;
                if prevdiff <= ALLOC_GAP_UNITS * alen && self.valid(b + adjust, pp) {
                    prevbno = Some(b + adjust);
                } else {
                    prevdiff += adjust;
                    prevbno = Some(b);
                }
            }
        }
        let mut gotbno = None;
        let mut gotdiff = 0;
        if let Some((
            go,
            Rec {
                start: Some(gp), ..
            },
        )) = got
        {
            let adjust = go - off;
            gotdiff = adjust;
            if gotdiff <= ALLOC_GAP_UNITS * alen && gp >= adjust && self.valid(gp - adjust, gp) {
                gotbno = Some(gp - adjust);
            } else if gp >= alen && self.valid(gp - alen, gp) {
                gotbno = Some(gp - alen);
                gotdiff = (gotdiff + adjust).saturating_sub(alen);
            } else {
                gotdiff += adjust;
                gotbno = Some(gp);
            }
        }
        match (prevbno, gotbno) {
            (Some(p), Some(g)) => Some(if prevdiff <= gotdiff { p } else { g }),
            (Some(p), None) => Some(p),
            (None, g) => g,
        }
    }

    /// The block of the inode (`XFS_INO_TO_FSB`): files live in AG 0's chunks.
    fn ino_block(&self, ino: u32) -> u64 {
        ino as u64 / self.inopb
    }

    /// `xfs_bmap_btalloc` with a null first block, then `xfs_alloc_vextent`
    /// (`XFS_ALLOCTYPE_START_BNO`). Allocates and returns (start, len).
    fn btalloc(&mut self, i: usize, off: u64, alen: u64, minlen: u64) -> Option<(u64, u64)> {
        let alen = alen.min(MAXEXTLEN);
        let rval = self
            .adjacent(i, off, alen)
            .unwrap_or(self.ino_block(self.inodes[i].ino));
        let maxlen = alen.min(self.ag_blocks);
        let n = self.ags.len();
        let startag = self.ag_of(rval);
        // "Search for an allocation group with a single extent large enough for
        // the request. If one isn't found, then adjust the minimum allocation size
        // to the largest space found."
        let mut blen = 0;
        let mut ag = startag;
        while blen < alen {
            blen = blen.max(self.ags[ag].longest());
            ag = (ag + 1) % n;
            if ag == startag {
                break;
            }
        }
        let minlen = if blen < minlen {
            minlen
        } else if blen < alen {
            blen
        } else {
            alen
        };
        for k in 0..n {
            let a = (startag + k) % n;
            if self.ags[a].longest() < minlen {
                continue; // xfs_alloc_fix_freelist: this AG cannot satisfy minlen
            }
            let r = if k == 0 {
                self.near(a, rval, maxlen, minlen)
            } else {
                self.by_size(a, maxlen, minlen)
            };
            if let Some((s, l)) = r {
                self.take(s, l);
                return Some((s, l));
            }
        }
        None
    }

    fn idx(&self, ino: u32) -> Result<usize, FsError> {
        // Writeback asks for one inode page after page; an inode keeps its
        // slot for the life of the file system.
        if let Some((last, i)) = self.last_ino.get() {
            if last == ino {
                return Ok(i);
            }
        }
        let i = self
            .by_ino
            .get(&ino)
            .copied()
            .ok_or_else(|| FsError::NoSuchFile(format!("inode {ino}")))?;
        self.last_ino.set(Some((ino, i)));
        Ok(i)
    }

    fn check_range(lblk: u64, n: u64) -> Result<(), FsError> {
        crate::extent_fs::check_block_range(lblk, n, MAX_FILE_BLOCKS)
    }

    /// The record holding `lblk`: (offset, record).
    fn rec_at(&self, i: usize, lblk: u64) -> Option<(u64, Rec)> {
        if let Some((li, o, r)) = self.last_rec.get() {
            if li == i && o <= lblk && lblk < o + r.len {
                return Some((o, r));
            }
        }
        let (&o, &r) = self.inodes[i].map.range(..=lblk).next_back()?;
        let found = (lblk < o + r.len).then_some((o, r));
        if found.is_some() {
            self.last_rec.set(Some((i, o, r)));
        }
        found
    }

    /// Holes in `[s, e)`.
    fn holes(&self, i: usize, s: u64, e: u64) -> Vec<(u64, u64)> {
        let map = &self.inodes[i].map;
        let mut v = Vec::new();
        let mut at = s;
        let first = self.rec_at(i, s).map(|(o, r)| (o, r.len));
        for (o, l) in first
            .into_iter()
            .chain(map.range(s..e).map(|(&o, r)| (o, r.len)))
        {
            if o > at {
                v.push((at, o));
            }
            at = at.max(o + l);
        }
        if at < e {
            v.push((at, e));
        }
        v
    }

    /// Insert a record into a hole, merging with like neighbours up to MAXEXTLEN
    /// (`xfs_bmap_add_extent_hole_delay` / `_hole_real` / `_delay_real`).
    fn insert_rec(&mut self, i: usize, off: u64, rec: Rec) {
        self.last_rec.set(None);
        let map = &mut self.inodes[i].map;
        let contig = |a_off: u64, a: Rec, b_off: u64, b: Rec| {
            a_off + a.len == b_off
                && match (a.start, b.start) {
                    (None, None) => true,
                    (Some(x), Some(y)) => x + a.len == y,
                    _ => false,
                }
        };
        let left = map.range(..off).next_back().map(|(&o, &r)| (o, r));
        let right = map.get(&(off + rec.len)).map(|&r| (off + rec.len, r));
        let lc = left.filter(|&(o, r)| contig(o, r, off, rec));
        let rc = right.filter(|&(o, r)| contig(off, rec, o, r));
        match (lc, rc) {
            (Some((lo, l)), Some((ro, r))) if l.len + rec.len + r.len <= MAXEXTLEN => {
                map.remove(&ro);
                map.insert(
                    lo,
                    Rec {
                        len: l.len + rec.len + r.len,
                        start: l.start,
                    },
                );
            }
            (Some((lo, l)), _) if l.len + rec.len <= MAXEXTLEN => {
                map.insert(
                    lo,
                    Rec {
                        len: l.len + rec.len,
                        start: l.start,
                    },
                );
            }
            (_, Some((ro, r))) if rec.len + r.len <= MAXEXTLEN => {
                map.remove(&ro);
                map.insert(
                    off,
                    Rec {
                        len: rec.len + r.len,
                        start: rec.start,
                    },
                );
            }
            _ => {
                map.insert(off, rec);
            }
        }
    }

    /// Remove `[s, e)` from the extent list (it must lie within one record).
    fn cut_rec(&mut self, i: usize, s: u64, e: u64) {
        let Some((o, r)) = self.rec_at(i, s) else {
            return;
        };
        self.last_rec.set(None);
        let map = &mut self.inodes[i].map;
        map.remove(&o);
        if o < s {
            map.insert(o, Rec { len: s - o, ..r });
        }
        if e < o + r.len {
            map.insert(
                e,
                Rec {
                    len: o + r.len - e,
                    start: r.start.map(|p| p + (e - o)),
                },
            );
        }
    }

    /// `xfs_iomap_write_allocate` for the delalloc record at `ds` holding `lblk`.
    fn write_allocate(&mut self, i: usize, ds: u64, dlen: u64, lblk: u64) -> Result<(), FsError> {
        let mut map_start = ds;
        let mut count = dlen;
        while count > 0 {
            let Some((o, r)) = self.rec_at(i, map_start) else {
                break;
            };
            if r.start.is_some() {
                // converted meanwhile; move on
                let skip = (o + r.len - map_start).min(count);
                count -= skip;
                map_start += skip;
                continue;
            }
            // xfs_bmapi, wasdelay: allocate the whole delalloc record.
            let alen = r.len;
            let (p, len) = self.btalloc(i, o, alen, 1).ok_or(FsError::NoSpace)?;
            self.cut_rec(i, o, o + len);
            self.insert_rec(
                i,
                o,
                Rec {
                    len,
                    start: Some(p),
                },
            );
            self.delalloc -= len;
            self.log_alloc(i, p);
            if (o..o + len).contains(&lblk) {
                return Ok(());
            }
            // "So far we have not mapped the requested part of the file, just
            // surrounding data, try again."
            let done = (o + len).saturating_sub(map_start).min(count);
            count -= done;
            map_start = o + len;
        }
        if self.rec_at(i, lblk).is_some_and(|(_, r)| r.start.is_some()) {
            Ok(())
        } else {
            Err(FsError::NoSpace)
        }
    }

    /// `xfs_iomap_write_direct`: allocate in the hole at `lblk`.
    fn write_direct(&mut self, i: usize, lblk: u64, max: u64) -> Result<(), FsError> {
        let next = self.inodes[i].map.range(lblk..).next().map(|(&o, _)| o);
        let mut alen = max.min(MAXEXTLEN);
        if let Some(o) = next {
            alen = alen.min(o - lblk);
        }
        // xfs_trans_reserve: the blocks must not be promised to delalloc extents.
        let avail = self.free_total.saturating_sub(self.delalloc);
        alen = alen.min(avail);
        if alen == 0 {
            return Err(FsError::NoSpace);
        }
        let (p, len) = self.btalloc(i, lblk, alen, 1).ok_or(FsError::NoSpace)?;
        self.insert_rec(
            i,
            lblk,
            Rec {
                len,
                start: Some(p),
            },
        );
        self.log_alloc(i, p);
        Ok(())
    }

    /// Allocate a new inode (AG 0, in the parent's chunks; a new 64-inode chunk
    /// near the last one when full, `xfs_ialloc_ag_alloc`).
    fn new_ino(&mut self) -> Result<u32, FsError> {
        let per_chunk = self.chunk_blocks * self.inopb;
        if self.next_in_chunk >= per_chunk {
            let last = *self.chunks.last().ok_or(FsError::NoSpace)?;
            let goal = last + self.chunk_blocks;
            let cb = self.chunk_blocks;
            let (s, _) = self.near(0, goal, cb, cb).ok_or(FsError::NoSpace)?;
            self.take(s, cb);
            self.meta.push((s, cb, "inode chunk"));
            self.chunks.push(s);
            self.next_in_chunk = 0;
        }
        let chunk = *self.chunks.last().ok_or(FsError::NoSpace)?;
        let ino = chunk * self.inopb + self.next_in_chunk;
        self.next_in_chunk += 1;
        u32::try_from(ino).map_err(|_| FsError::NoSpace)
    }

    /// Every block is exactly once free, file data or metadata; the btrees agree;
    /// the delalloc counter matches the extent lists (tests).
    pub fn check_consistency(&self) -> Result<(), String> {
        let mut ranges = self.meta.clone();
        let mut delalloc = 0;
        let mut free = 0;
        for ag in &self.ags {
            if ag.bno.len() != ag.cnt.len() {
                return Err(format!("AG at {}: bno and cnt btrees differ", ag.start));
            }
            let mut prev_end = 0;
            for (&s, &l) in &ag.bno {
                if !ag.cnt.contains(&(l, s)) {
                    return Err(format!("free extent {s}+{l} missing from cnt"));
                }
                if s < ag.start || s + l > ag.start + ag.len || l == 0 {
                    return Err(format!("free extent {s}+{l} outside its AG"));
                }
                if s == prev_end {
                    return Err(format!("free extents meet at {s} unmerged"));
                }
                prev_end = s + l;
                ranges.push((s, l, "free"));
                free += l;
            }
        }
        if free != self.free_total {
            return Err(format!("free total {} != {}", self.free_total, free));
        }
        for inode in &self.inodes {
            let mut at = 0;
            for (&o, r) in &inode.map {
                if o < at {
                    return Err(format!("{}: records overlap at {o}", inode.name));
                }
                at = o + r.len;
                match r.start {
                    Some(p) => ranges.push((p, r.len, "file data")),
                    None => delalloc += r.len,
                }
            }
        }
        if delalloc != self.delalloc {
            return Err(format!(
                "delalloc counter {} != {}",
                self.delalloc, delalloc
            ));
        }
        check_tiling(ranges, self.p.blocks)
    }
}

impl GetBlock for Xfs {
    fn blkbits(&self) -> u32 {
        self.blkbits
    }

    /// `__xfs_get_blocks` for direct I/O: `xfs_iomap` with `BMAPI_READ`, or
    /// `BMAPI_WRITE|BMAPI_DIRECT` (`xfs_iomap_write_direct`) when creating.
    fn get_block(
        &mut self,
        ino: u32,
        lblk: u64,
        max_blocks: u64,
        create: bool,
    ) -> Result<BlockMapping, FsError> {
        let i = self.idx(ino)?;
        Self::check_range(lblk, max_blocks)?;
        let mut new = false;
        match self.rec_at(i, lblk) {
            Some((_, Rec { start: Some(_), .. })) => {}
            Some((o, Rec { len, start: None })) if create => {
                self.write_allocate(i, o, len, lblk)?;
                new = true;
            }
            None if create => {
                self.write_direct(i, lblk, max_blocks)?;
                new = true;
            }
            Some((o, r)) => {
                return Ok(BlockMapping {
                    pblk: None,
                    count: max_blocks.min(o + r.len - lblk),
                    boundary: false,
                    new: false,
                })
            }
            None => {
                let next = self.inodes[i].map.range(lblk..).next().map(|(&o, _)| o);
                return Ok(BlockMapping {
                    pblk: None,
                    count: next.map_or(max_blocks, |o| max_blocks.min(o - lblk)),
                    boundary: false,
                    new: false,
                });
            }
        }
        let (o, r) = self.rec_at(i, lblk).ok_or(FsError::NoSpace)?;
        let p = r.start.ok_or(FsError::NoSpace)?;
        Ok(BlockMapping {
            pblk: Some(p + (lblk - o)),
            count: max_blocks.min(o + r.len - lblk),
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

impl ExtentFs for Xfs {
    fn fs_name(&self) -> &'static str {
        "xfs"
    }

    fn block_size(&self) -> u32 {
        self.p.block_size
    }

    fn create(&mut self, name: &str) -> Result<u32, FsError> {
        if let Some(ino) = crate::extent_fs::existing_file(&self.names, name)? {
            return Ok(ino);
        }
        let chunks = self.chunks.len();
        let ino = self.new_ino()?;
        let chunk = (self.chunks.len() > chunks).then(|| (self.chunks[chunks], self.chunk_blocks));
        let g = self.geometry();
        self.dir_bytes += sf_entry_bytes(&g, name.len());
        let root = (self.chunks[0] * self.inopb) as u32;
        let items = create_items(&g, ino, root, self.dir_bytes, chunk);
        self.creates.insert(ino, items);
        self.last_ino.set(None);
        self.by_ino.insert(ino, self.inodes.len());
        self.inodes.push(XInode {
            ino,
            name: name.to_string(),
            size: 0,
            map: BTreeMap::new(),
        });
        self.names.insert(name.to_string(), ino);
        Ok(ino)
    }

    fn lookup(&self, name: &str) -> Option<u32> {
        self.names.get(name).copied()
    }

    /// `xfs_iomap_write_delay`.
    fn delalloc_reserve(&mut self, ino: u32, lblk: u64, n: u64) -> Result<(), FsError> {
        let i = self.idx(ino)?;
        Self::check_range(lblk, n)?;
        let bb = self.blkbits;
        let isize = self.inodes[i].size;
        let (offset, count) = (lblk << bb, n << bb);
        // xfs_iomap_eof_want_preallocate: past EOF, and no real blocks from the
        // write's last block on.
        let last = lblk + n - 1;
        let prealloc = offset + count > isize
            && !self
                .rec_at(i, last)
                .into_iter()
                .chain(self.inodes[i].map.range(last + 1..).map(|(&o, &r)| (o, r)))
                .any(|(_, r)| r.start.is_some());
        let want_end = |prealloc: bool| {
            if prealloc {
                let wl = self.p.writeio_log;
                let aligned = ((offset + count - 1) >> wl) << wl;
                (aligned >> bb) + (1u64 << (wl - bb))
            } else {
                lblk + n
            }
        };
        let avail = self.free_total.saturating_sub(self.delalloc);
        let mut holes = self.holes(i, lblk, want_end(prealloc).min(MAX_FILE_BLOCKS));
        let mut need: u64 = holes.iter().map(|(s, e)| e - s).sum();
        if need > avail && prealloc {
            // xfs_flush_space and retry: drop the speculative part first.
            holes = self.holes(i, lblk, want_end(false));
            need = holes.iter().map(|(s, e)| e - s).sum();
        }
        if need > avail {
            return Err(FsError::NoSpace);
        }
        for (s, e) in holes {
            let mut at = s;
            while at < e {
                let len = (e - at).min(MAXEXTLEN);
                self.insert_rec(i, at, Rec { len, start: None });
                at += len;
            }
        }
        self.delalloc += need;
        let inode = &mut self.inodes[i];
        inode.size = inode.size.max((lblk + n) << bb);
        Ok(())
    }

    /// `xfs_map_blocks` → `xfs_iomap(BMAPI_ALLOCATE)` → `xfs_iomap_write_allocate`.
    fn map_for_writeback(
        &mut self,
        ino: u32,
        lblk: u64,
        n: u64,
        out: &mut Vec<FileExtent>,
    ) -> Result<u64, FsError> {
        let i = self.idx(ino)?;
        Self::check_range(lblk, n)?;
        let (o, r) = match self.rec_at(i, lblk) {
            // Already allocated: the record found is the mapping.
            Some(found @ (_, Rec { start: Some(_), .. })) => found,
            found => {
                match found {
                    Some((o, Rec { len, .. })) => self.write_allocate(i, o, len, lblk)?,
                    None => self.write_direct(i, lblk, n)?,
                }
                self.rec_at(i, lblk).ok_or(FsError::NoSpace)?
            }
        };
        let Some(p) = r.start else {
            return Err(FsError::NoSpace);
        };
        let len = n.min(o + r.len - lblk);
        out.push(FileExtent {
            logical: lblk,
            physical: p + (lblk - o),
            len,
        });
        Ok(len)
    }

    /// A page in a delalloc or allocated record maps the same whatever the
    /// length asked for (`xfs_iomap_write_allocate` converts the whole
    /// delalloc record; the pages after it in an allocated record need no
    /// call that changes anything), so the run is mapped to the record's end
    /// at once; a page in a hole is allocated for itself
    /// (`xfs_iomap_write_direct` sizes the allocation by the request).
    fn map_pages_for_writeback(
        &mut self,
        ino: u32,
        lblk: u64,
        n: u64,
        out: &mut Vec<FileExtent>,
    ) -> Result<u64, FsError> {
        let i = self.idx(ino)?;
        let n = if self.rec_at(i, lblk).is_some() { n } else { 1 };
        self.map_for_writeback(ino, lblk, n, out)
    }

    fn fiemap(&self, ino: u32) -> Vec<FileExtent> {
        let Ok(i) = self.idx(ino) else {
            return Vec::new();
        };
        self.inodes[i]
            .map
            .iter()
            .filter_map(|(&o, r)| {
                r.start.map(|p| FileExtent {
                    logical: o,
                    physical: p,
                    len: r.len,
                })
            })
            .collect()
    }

    fn max_writeback_run(&self) -> u64 {
        u64::MAX
    }

    fn mount_dirty_bdev_ranges(&self) -> Vec<(u64, u64)> {
        Vec::new()
    }

    /// `xfs_release` → `xfs_free_eofblocks`: drop delalloc and real blocks past EOF.
    fn journal_area(&self) -> Option<(u64, u64)> {
        (self.log.1 > 0).then_some(self.log)
    }

    fn take_log_trans(&mut self) -> Vec<Vec<Item>> {
        std::mem::take(&mut self.trans)
    }

    fn take_create_trans(&mut self, ino: u32) -> Option<Vec<Item>> {
        self.creates.remove(&ino)
    }

    fn release_file(&mut self, ino: u32) {
        let Ok(i) = self.idx(ino) else {
            return;
        };
        let end = self.inodes[i].size.div_ceil(1 << self.blkbits);
        let recs: Vec<(u64, Rec)> = self
            .rec_at(i, end)
            .into_iter()
            .chain(self.inodes[i].map.range(end..).map(|(&o, &r)| (o, r)))
            .collect();
        for (o, r) in recs {
            let s = o.max(end);
            let e = o + r.len;
            if s >= e {
                continue;
            }
            self.cut_rec(i, s, e);
            match r.start {
                Some(p) => self.free(p + (s - o), e - s),
                None => self.delalloc -= e - s,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mkfs_geometry() {
        // 64 GiB: 16 AGs of 4 GiB (xfsprogs 2008: > 8 GiB → agcount 16).
        let fs = Xfs::new(XfsParams::mkfs_defaults(4096, 16 << 20)).unwrap();
        assert_eq!(fs.ag_count(), 16);
        assert_eq!(fs.ag_blocks(), 1 << 20);
        fs.check_consistency().unwrap();
    }

    /// The record `rec_at` remembers never outlives a change of the extent
    /// list: after writes, writeback page by page and truncation in any
    /// order, every block maps as the extent list itself says.
    #[test]
    fn remembered_record_agrees_with_the_extent_list() {
        let mut fs = Xfs::new(XfsParams::mkfs_defaults(4096, 1 << 20)).unwrap();
        let inos = [fs.create("a").unwrap(), fs.create("b").unwrap()];
        let mut x = 12345u64;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let mut out = Vec::new();
        for _ in 0..400 {
            let ino = inos[next(2) as usize];
            let l = next(3000);
            match next(4) {
                0 => fs.delalloc_reserve(ino, l, 1 + next(40)).unwrap(),
                1 | 2 => {
                    let _ = fs.map_for_writeback(ino, l, 1 + next(8), &mut out);
                }
                _ => {
                    fs.set_i_size(ino, l * 4096);
                    fs.release_file(ino);
                }
            }
            let i = fs.idx(ino).unwrap();
            for b in [l, l + 1, l.saturating_sub(1), next(3000)] {
                let map = &fs.inodes[i].map;
                let want = map
                    .range(..=b)
                    .next_back()
                    .map(|(&o, &r)| (o, r))
                    .filter(|&(o, r)| b < o + r.len);
                assert_eq!(fs.rec_at(i, b), want, "block {b}");
            }
        }
        fs.check_consistency().unwrap();
    }

    #[test]
    fn eof_preallocation_rounds_to_64k() {
        let mut fs = Xfs::new(XfsParams::mkfs_defaults(4096, 1 << 20)).unwrap();
        let ino = fs.create("f").unwrap();
        fs.delalloc_reserve(ino, 0, 1).unwrap();
        // one block written, 16 reserved (64 KiB)
        assert_eq!(fs.delalloc_reserved(), 16);
        fs.delalloc_reserve(ino, 16, 1).unwrap();
        assert_eq!(fs.delalloc_reserved(), 32);
        let mut out = Vec::new();
        fs.map_for_writeback(ino, 0, 1, &mut out).unwrap();
        // the whole delalloc extent was converted
        assert_eq!(fs.delalloc_reserved(), 0);
        assert_eq!(fs.fiemap(ino).len(), 1);
        assert_eq!(fs.fiemap(ino)[0].len, 32);
        fs.set_i_size(ino, 17 * 4096);
        fs.release_file(ino);
        assert_eq!(fs.fiemap(ino)[0].len, 17);
        fs.check_consistency().unwrap();
    }
}
