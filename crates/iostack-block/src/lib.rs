//! The generic block layer of the 2.6.3x single-queue request path
//! (`block/blk-core.c`, `blk-merge.c`, `elevator.c`, `blk-settings.c`).
//!
//! It owns bios and requests, queue limits, partitions and their remap, per-queue
//! plugging with its timer, back/front merging through the last-merge cache and the
//! back-merge hash, request allocation with its limits and sleeping submitters,
//! dispatch pulled by the driver up to the device's queue depth, completion, and
//! every blktrace action point, and cache flush / FUA sequencing per kernel era
//! (`flush.rs`: 2.6.28-2.6.36 barriers, 2.6.37's `blk_do_flush`, 2.6.39+'s
//! `blk_insert_flush`). Scheduling policy lives behind [`Elevator`]; the
//! policies themselves are in `iostack-iosched`, which depends on this crate and
//! never the reverse. The layers above see a queue through [`BlockQueue`]; a
//! blk-mq path and a 2.4 one will sit beside [`RequestQueue`] behind it.

mod bio;
mod blockqueue;
mod elevator;
mod elevator24;
mod limits;
pub mod ll_rw_blk;
pub mod mq;
mod queue;
mod request;
pub use iostack_core::Slab;
mod tracepoint;
mod tunables;

pub use bio::{Bio, BioId, BioRun, BioSlab};
pub use blockqueue::BlockQueue;
pub use elevator::{Elevator, ElvCtx, Kick, MayQueue, MergeKind, Placement};
pub use elevator24::Elevator24;
pub use limits::{Partition, QueueLimits};
pub use ll_rw_blk::{Ll24Config, Ll24Queue, LvmLinear};
pub use mq::{MqConfig, MqElevator, MqQueue, SchedCost, ALL_HCTXS};
pub use queue::{
    BlockOut, BlockWork, CompletedBio, Ctx, FlushEra, QueueConfig, QueueEvent, QueueStats,
    RequestQueue, Submit,
};
pub use request::{FlushRole, Request, RequestPool, RqId};
pub use tunables::TUNABLES;
