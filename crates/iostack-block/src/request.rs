//! `struct request`: one or more bios merged into a contiguous range, the unit the
//! scheduler orders and the driver issues.

use crate::bio::BioId;
use iostack_core::Slab;
use iostack_core::{ReqFlags, Sector};
use iostack_des::Instant;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct RqId(pub u32);

#[derive(Clone, Debug)]
pub struct Request {
    pub sector: Sector,
    pub sectors: u32,
    pub segments: u32,
    pub flags: ReqFlags,
    pub pid: u32,
    pub cpu: u32,
    /// `rq->start_time`: when the request was allocated (oldest of merged requests).
    pub start_time: Instant,
    /// Elevator-private FIFO deadline or insertion time, in virtual ns.
    pub fifo_time: Instant,
    /// `REQ_STARTED`: the driver has seen it (D was traced).
    pub started: bool,
    /// On the dispatch list (`q->queue_head`) rather than inside the elevator.
    pub dispatched: bool,
    /// Handed to the device.
    pub in_driver: bool,
    /// Allocated from the sync pool (`rw_is_sync`).
    pub sync_pool: bool,
    /// Best I/O priority of the merged bios (class, level); (0, 0) = none.
    pub ioprio: (u8, u8),
    pub bio_head: BioId,
    pub bio_tail: BioId,
    /// Scheduler-private slot (e.g. the CFQ queue the request belongs to).
    pub elv_private: u32,
    /// `REQ_SORTED`: inserted into the elevator, so the elevator's activate and
    /// completion hooks see it (`elv_activate_rq`, `elv_completed_request`).
    pub sorted: bool,
    /// `REQ_SOFTBARRIER`: `elv_dispatch_sort` does not move requests past it
    /// (front, back and flush insertions).
    pub softbarrier: bool,
    /// What the request is to the flush machinery (`blk-flush.c`,
    /// `blk-barrier.c`).
    pub role: FlushRole,
    /// Steps of its flush sequence done (`rq->flush.seq`, `REQ_FSEQ_*`).
    pub fseq: u8,
    /// `ELV_ON_HASH(rq)`: the request has an entry in the back-merge hash.
    pub on_hash: bool,
}

/// A request's part in flush sequencing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FlushRole {
    /// An ordinary request.
    #[default]
    None,
    /// A request being sequenced (`REQ_FLUSH_SEQ`, 2.6.39+): it waits on the
    /// flush queues and goes to the device itself for its data.
    Seq,
    /// A request the block layer made for one step of `orig`'s sequence: the
    /// barrier's `pre_flush_rq`/`bar_rq`/`post_flush_rq` (2.6.28-2.6.36) or
    /// 2.6.37's `flush_rq`.
    Proxy { orig: RqId, step: u8 },
    /// 2.6.39+'s `q->flush_rq`, shared by every request waiting for a flush.
    FlushRq,
}

impl Request {
    pub fn end_sector(&self) -> Sector {
        self.sector + self.sectors as u64
    }
    pub fn is_write(&self) -> bool {
        self.flags.is_write()
    }
    pub fn bytes(&self) -> u64 {
        self.sectors as u64 * 512
    }
}

/// Slab of requests, bounded by the allocation limits of the queue.
pub struct RequestPool(Slab<Request>);

impl Default for RequestPool {
    fn default() -> Self {
        RequestPool(Slab::new("request"))
    }
}

impl RequestPool {
    pub fn alloc(&mut self, rq: Request) -> RqId {
        RqId(self.0.alloc(rq))
    }
    pub fn get(&self, id: RqId) -> &Request {
        self.0.get(id.0)
    }
    pub fn get_mut(&mut self, id: RqId) -> &mut Request {
        self.0.get_mut(id.0)
    }
    pub fn free(&mut self, id: RqId) -> Request {
        self.0.free(id.0)
    }
    /// Free `id` without handing its request back.
    pub fn remove(&mut self, id: RqId) {
        self.0.remove(id.0)
    }
    pub fn live(&self) -> usize {
        self.0.live()
    }
}
