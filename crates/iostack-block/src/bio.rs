//! `struct bio`: one contiguous I/O to a device, as a file system or the direct-I/O
//! code builds it. Bios live in a slab and are chained through `next`, as the kernel
//! chains them through `bi_next` inside a request.

use iostack_core::Slab;
use iostack_core::{BioOwner, DevT, ReqFlags, Sector};
use iostack_des::Instant;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct BioId(pub u32);

#[derive(Clone, Copy, Debug)]
pub struct Bio {
    /// Device the bio was submitted to (a partition or the whole disk).
    pub dev: DevT,
    /// Sector on `dev` as submitted; after the partition remap, on the whole disk.
    pub sector: Sector,
    pub sectors: u32,
    /// Physical segments (one per user page for direct I/O).
    pub segments: u32,
    pub flags: ReqFlags,
    pub pid: u32,
    pub cpu: u32,
    /// The submitting task and where the completion goes (`bi_end_io`).
    pub owner: BioOwner,
    /// I/O priority (class, level) of the submitter; lower is better
    /// (`IOPRIO_CLASS_RT` = 1, `BE` = 2, `IDLE` = 3).
    pub ioprio: (u8, u8),
    pub submitted_at: Instant,
    /// How many of the kernel's bios this record stands for (`BioRun`).
    pub run: BioRun,
    /// Next bio in the same request.
    pub next: Option<BioId>,
}

/// A record of `nr` bios of equal size (`sectors / nr` sectors and
/// `segments / nr` segments each), contiguous on the device, that one task
/// submitted back to back at one instant with the same flags and owner:
/// ext4's `mpage_da_submit_io` → `->writepage` → `block_write_full_page` →
/// `submit_bh` makes one such bio per page. The block layer takes each bio of a
/// run as the kernel takes it (its own Q, M, merge decision and limits), and
/// keeps the bios that land in one request together in one record: a request's
/// chain holds runs, and a completion covers `nr` bios at once.
/// `index` is the position of the record's first bio in the run its owner
/// submitted, so that the owner can tell which part of the run completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BioRun {
    pub nr: u32,
    pub index: u32,
}

impl BioRun {
    /// A single bio.
    pub const ONE: BioRun = BioRun { nr: 1, index: 0 };
}

impl Bio {
    pub fn end_sector(&self) -> Sector {
        self.sector + self.sectors as u64
    }
    pub fn bytes(&self) -> u64 {
        self.sectors as u64 * 512
    }

    /// Split off the run's first bio; `self` keeps the others. `None` for a
    /// single bio.
    pub fn split_first(&mut self) -> Option<Bio> {
        if self.run.nr <= 1 {
            return None;
        }
        let (sectors, segments) = self.piece_size();
        let mut first = *self;
        first.sectors = sectors;
        first.segments = segments;
        first.run = BioRun {
            nr: 1,
            index: self.run.index,
        };
        self.sector += sectors as u64;
        self.sectors -= sectors;
        self.segments -= segments;
        self.run.nr -= 1;
        self.run.index += 1;
        Some(first)
    }

    /// Sectors and segments of one bio of the run.
    pub fn piece_size(&self) -> (u32, u32) {
        debug_assert!(
            self.sectors % self.run.nr == 0 && self.segments % self.run.nr == 0,
            "a run of unequal bios"
        );
        (self.sectors / self.run.nr, self.segments / self.run.nr)
    }
}

/// Slab of bios.
pub struct BioSlab(Slab<Bio>);

impl Default for BioSlab {
    fn default() -> Self {
        BioSlab(Slab::new("bio"))
    }
}

impl BioSlab {
    pub fn alloc(&mut self, bio: Bio) -> BioId {
        BioId(self.0.alloc(bio))
    }
    pub fn get(&self, id: BioId) -> &Bio {
        self.0.get(id.0)
    }
    pub fn get_mut(&mut self, id: BioId) -> &mut Bio {
        self.0.get_mut(id.0)
    }
    pub fn free(&mut self, id: BioId) -> Bio {
        self.0.free(id.0)
    }
    pub fn live(&self) -> usize {
        self.0.live()
    }
}
