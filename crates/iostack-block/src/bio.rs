//! `struct bio`: one contiguous I/O to a device, as a file system or the direct-I/O
//! code builds it. Bios live in a slab and are chained through `next`, as the kernel
//! chains them through `bi_next` inside a request.

use iostack_core::{DevT, ReqFlags, Sector};
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
    /// Opaque tag handed back at completion so the submitter can be found.
    pub owner: u64,
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

/// Slab of bios. A slot is live from `alloc` until `free`; double free and use of a
/// freed slot are caught.
#[derive(Default)]
pub struct BioSlab {
    slots: Vec<Option<Bio>>,
    free: Vec<u32>,
    live: usize,
}

impl BioSlab {
    pub fn alloc(&mut self, bio: Bio) -> BioId {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            debug_assert!(self.slots[i as usize].is_none());
            self.slots[i as usize] = Some(bio);
            BioId(i)
        } else {
            self.slots.push(Some(bio));
            BioId(self.slots.len() as u32 - 1)
        }
    }
    pub fn get(&self, id: BioId) -> &Bio {
        self.slots[id.0 as usize]
            .as_ref()
            .expect("use of a freed bio")
    }
    pub fn get_mut(&mut self, id: BioId) -> &mut Bio {
        self.slots[id.0 as usize]
            .as_mut()
            .expect("use of a freed bio")
    }
    pub fn free(&mut self, id: BioId) -> Bio {
        let b = self.slots[id.0 as usize].take().expect("bio freed twice");
        self.free.push(id.0);
        self.live -= 1;
        b
    }
    pub fn live(&self) -> usize {
        self.live
    }
}
