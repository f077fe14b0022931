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
    /// Next bio in the same request.
    pub next: Option<BioId>,
}

impl Bio {
    pub fn end_sector(&self) -> Sector {
        self.sector + self.sectors as u64
    }
    pub fn bytes(&self) -> u64 {
        self.sectors as u64 * 512
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
