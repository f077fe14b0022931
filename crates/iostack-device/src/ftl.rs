//! A page-mapped flash translation layer with greedy garbage collection, the
//! write side of [`crate::ssd::Ssd`].
//!
//! The host's logical space is mapped in 4 KiB units onto physical flash that
//! is larger by the over-provisioning (`op_permille`). Physical flash is cut
//! into superblocks, one erase block of every die, whose pages are striped
//! across the dies; data is appended at one write frontier (host writes and
//! relocated data alike). Rewriting a unit invalidates its old copy, so each
//! closed superblock keeps a count of valid units. When a new superblock is
//! needed and no more than `GC_FREE_BLOCKS` erased ones are left, the closed
//! superblock with the fewest valid units is the victim (greedy): its valid
//! units are read and appended at the frontier (the relocation that is the
//! write amplification), then it is erased on every die and freed. Units never
//! written cost nothing (a fresh or trimmed drive).
//!
//! The FTL decides *what* flash work a write causes; `ssd.rs` charges it on
//! the dies. State is kept only for written data: the forward map is a
//! `BTreeMap`, a superblock's reverse map is allocated when it is opened.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Mapping unit: 4 KiB.
pub const UNIT_SECTORS: u64 = 8;
/// Erased superblocks kept in reserve: GC runs when a frontier would leave
/// fewer (one for the frontier itself and one for relocations).
const GC_FREE_BLOCKS: usize = 2;

/// The FTL's geometry and flash timings (part of `SsdParams`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FtlParams {
    /// Physical flash beyond the exported capacity, in thousandths of the
    /// exported capacity ((physical − logical) / logical).
    pub op_permille: u32,
    /// Pages of one erase block on one die.
    pub pages_per_block: u32,
    /// Program time of one flash page (tPROG).
    pub program_ns: u64,
    /// Erase time of one block (tBERS).
    pub erase_ns: u64,
}

/// The flash work one host write caused, for the dies to carry out.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct GcWork {
    /// Physical pages read to relocate their valid units (page `n` is on
    /// die `n % dies`), and the units appended again.
    pub pages_read: Vec<u64>,
    pub units_moved: u64,
    /// Erased superblocks.
    pub erases: u64,
}

pub struct Ftl {
    p: FtlParams,
    units_per_page: u64,
    units_per_block: u64,
    total_blocks: u64,
    map: BTreeMap<u64, u64>,
    /// Per superblock: the logical unit of each written slot (`u64::MAX`
    /// once invalid); `None` while erased.
    rmap: Vec<Option<Vec<u64>>>,
    valid: Vec<u64>,
    /// Closed superblocks by (valid units, index): the greedy order.
    closed: BTreeSet<(u64, u64)>,
    free: VecDeque<u64>,
    /// Superblocks never written (indices `fresh..total_blocks`).
    fresh: u64,
    /// The write frontier: superblock and next slot.
    open: Option<(u64, u64)>,
    pub host_units: u64,
    pub moved_units: u64,
    pub erases: u64,
}

impl Ftl {
    /// An FTL for `logical_sectors` on `dies` dies with pages of
    /// `page_bytes`.
    pub fn new(p: FtlParams, logical_sectors: u64, dies: u32, page_bytes: u32) -> Ftl {
        let units_per_page = (page_bytes as u64 / 4096).max(1);
        let units_per_block = units_per_page * p.pages_per_block as u64 * dies as u64;
        let logical_units = logical_sectors.div_ceil(UNIT_SECTORS);
        let physical = logical_units * (1000 + p.op_permille as u64) / 1000;
        let total_blocks = physical
            .div_ceil(units_per_block)
            .max(GC_FREE_BLOCKS as u64 + 2);
        Ftl {
            units_per_page,
            units_per_block,
            total_blocks,
            map: BTreeMap::new(),
            rmap: Vec::new(),
            valid: Vec::new(),
            closed: BTreeSet::new(),
            free: VecDeque::new(),
            fresh: 0,
            open: None,
            host_units: 0,
            moved_units: 0,
            erases: 0,
            p,
        }
    }

    pub fn params(&self) -> &FtlParams {
        &self.p
    }

    /// Whether garbage collection has run: the drive is past its fresh state.
    pub fn collected(&self) -> bool {
        self.erases > 0
    }

    fn erased_left(&self) -> usize {
        self.free.len() + (self.total_blocks - self.fresh) as usize
    }

    /// An erased superblock for the frontier.
    fn take_erased(&mut self) -> u64 {
        let b = self.free.pop_front().unwrap_or_else(|| {
            self.fresh += 1;
            self.fresh - 1
        });
        let i = b as usize;
        if self.rmap.len() <= i {
            self.rmap.resize(i + 1, None);
            self.valid.resize(i + 1, 0);
        }
        self.rmap[i] = Some(vec![u64::MAX; self.units_per_block as usize]);
        b
    }

    /// Append logical unit `lu` at the frontier; the physical slot. A full
    /// frontier is closed; a host append that would leave no more than
    /// `GC_FREE_BLOCKS` erased superblocks collects first (relocations,
    /// `work` = None, use the reserve and may open the next frontier).
    fn append(&mut self, lu: u64, mut work: Option<&mut GcWork>) -> u64 {
        let (b, slot) = loop {
            match self.open {
                Some((b, s)) if s < self.units_per_block => break (b, s),
                Some((b, _)) => {
                    self.closed.insert((self.valid[b as usize], b));
                    self.open = None;
                }
                None => {
                    if let Some(w) = work.take() {
                        if self.erased_left() <= GC_FREE_BLOCKS {
                            self.collect(w);
                            continue;
                        }
                    }
                    break (self.take_erased(), 0);
                }
            }
        };
        self.open = Some((b, slot + 1));
        self.rmap[b as usize].as_mut().expect("open block")[slot as usize] = lu;
        self.valid[b as usize] += 1;
        b * self.units_per_block + slot
    }

    /// Invalidate the copy of `lu` at physical slot `ppu`.
    fn invalidate(&mut self, ppu: u64) {
        let b = ppu / self.units_per_block;
        let bi = b as usize;
        let is_closed = self.closed.remove(&(self.valid[bi], b));
        self.rmap[bi].as_mut().expect("written block")[(ppu % self.units_per_block) as usize] =
            u64::MAX;
        self.valid[bi] -= 1;
        if is_closed {
            self.closed.insert((self.valid[bi], b));
        }
    }

    /// A host write of `sectors` at `sector`: each 4 KiB unit it touches is
    /// written anew. Returns the GC work it triggered.
    pub fn write(&mut self, sector: u64, sectors: u32) -> GcWork {
        let mut work = GcWork::default();
        let first = sector / UNIT_SECTORS;
        let last = (sector + sectors.max(1) as u64 - 1) / UNIT_SECTORS;
        for lu in first..=last {
            if let Some(old) = self.map.remove(&lu) {
                self.invalidate(old);
            }
            let ppu = self.append(lu, Some(&mut work));
            self.map.insert(lu, ppu);
            self.host_units += 1;
        }
        work
    }

    /// Greedy garbage collection until more than `GC_FREE_BLOCKS` erased
    /// superblocks remain: the closed one with the fewest valid units is
    /// relocated and erased.
    fn collect(&mut self, work: &mut GcWork) {
        while self.erased_left() <= GC_FREE_BLOCKS {
            let Some(&(v, b)) = self.closed.iter().next() else {
                return;
            };
            self.closed.remove(&(v, b));
            let units = self.rmap[b as usize].take().expect("closed block");
            let mut last_page = u64::MAX;
            for (slot, &lu) in units.iter().enumerate() {
                if lu == u64::MAX {
                    continue;
                }
                let page = (b * self.units_per_block + slot as u64) / self.units_per_page;
                if page != last_page {
                    work.pages_read.push(page);
                    last_page = page;
                }
                self.valid[b as usize] -= 1;
                // The frontier is another superblock, taken from the reserve.
                let ppu = self.append(lu, None);
                self.map.insert(lu, ppu);
                work.units_moved += 1;
                self.moved_units += 1;
            }
            debug_assert_eq!(self.valid[b as usize], 0);
            self.free.push_back(b);
            work.erases += 1;
            self.erases += 1;
        }
    }
}
