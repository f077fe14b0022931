//! The request flags the journal code of each kernel passes to `submit_bh`.
//!
//! `WRITE_SYNC_PLUG` is `SYNC|NOIDLE` (2.6.30-2.6.38), `WRITE_SYNC` adds
//! `UNPLUG` until 2.6.38 and is `SYNC|NOIDLE` in 3.x (2.6.28: `SYNC|UNPLUG`, no
//! `NOIDLE` yet); 6.x passes `REQ_SYNC`. A barrier (`WRITE_BARRIER`,
//! `set_buffer_ordered`, 2.6.28-2.6.36) is `ReqFlags::FLUSH` on the commit block;
//! from 2.6.37 the commit block is `WRITE_FLUSH_FUA` (`FLUSH|FUA`).

use super::Flavour;
use iostack_core::{Profile, ReqFlags};

const W: ReqFlags = ReqFlags::WRITE;

/// What one kernel's journal passes for each kind of write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOps {
    /// `write_op` of the commit: ordered data (jbd), revoke, descriptor and
    /// metadata blocks.
    pub commit: ReqFlags,
    /// `write_op` when `t_synchronous_commit` (a sync handle joined).
    pub commit_sync: ReqFlags,
    /// The commit block without barrier (`sync_dirty_buffer` in jbd,
    /// `submit_bh(WRITE_SYNC_PLUG)` in jbd2).
    pub commit_block: ReqFlags,
    /// What barriers add to the commit block.
    pub barrier: ReqFlags,
    /// Checkpoint writes (`__flush_batch`: `ll_rw_block(SWRITE)`, i.e. `WRITE`,
    /// in 2.6.3x).
    pub checkpoint: ReqFlags,
    /// The journal superblock (`journal_update_superblock(journal, 1)`:
    /// `sync_dirty_buffer`).
    pub superblock: ReqFlags,
}

fn write_sync(p: Profile) -> ReqFlags {
    match p {
        Profile::V2_4 | Profile::V2_6_28 => W | ReqFlags::SYNC | ReqFlags::UNPLUG,
        Profile::V2_6_32 | Profile::V2_6_33 | Profile::V2_6_37 => {
            W | ReqFlags::SYNC | ReqFlags::NOIDLE | ReqFlags::UNPLUG
        }
        Profile::V3_10 => W | ReqFlags::SYNC | ReqFlags::NOIDLE,
        Profile::V6 => W | ReqFlags::SYNC,
    }
}

/// `WRITE_SYNC_PLUG` where it exists (2.6.30-2.6.38), `WRITE_SYNC` after.
fn write_sync_plug(p: Profile) -> ReqFlags {
    match p {
        Profile::V2_6_32 | Profile::V2_6_33 | Profile::V2_6_37 => {
            W | ReqFlags::SYNC | ReqFlags::NOIDLE
        }
        _ => write_sync(p),
    }
}

/// 6.x's `JBD2_JOURNAL_REQ_FLAGS` (`REQ_META | REQ_SYNC | REQ_IDLE`) on every
/// log, commit and superblock write (`jbd2_write_superblock` adds `REQ_META`
/// too); `REQ_IDLE` keeps them out of wbt (`wbt_should_throttle`).
fn meta(p: Profile) -> ReqFlags {
    if p >= Profile::V6 {
        ReqFlags::META | ReqFlags::IDLE
    } else {
        ReqFlags::NONE
    }
}

impl WriteOps {
    /// * jbd 2.6.3x (`fs/jbd/commit.c`, 2.6.35): `write_op = WRITE_SYNC`,
    ///   `WRITE_SYNC_PLUG` when synchronous; commit block `WRITE_SYNC` (|
    ///   `WRITE_BARRIER`; 2.6.37: `WRITE_SYNC | WRITE_FLUSH_FUA`).
    /// * jbd2 up to 2.6.36: `write_op = WRITE`, `WRITE_SYNC_PLUG` when
    ///   synchronous; 2.6.37: `WRITE_SYNC` by default; commit block
    ///   `WRITE_SYNC_PLUG` (+ ordered buffer = barrier; 2.6.37:
    ///   `| WRITE_FLUSH_FUA`).
    /// * 2.6.28 (assumed, sources not read): `WRITE` for the commit I/O of both,
    ///   before Jens Axboe's 2.6.29/2.6.30 `WRITE_SYNC(_PLUG)` changes, the
    ///   commit block as `sync_dirty_buffer` (`WRITE`).
    /// * 3.10: `WRITE_SYNC` everywhere, commit block `| WRITE_FLUSH_FUA`; 6.x:
    ///   `REQ_META | REQ_SYNC`, commit block `| REQ_PREFLUSH | REQ_FUA`.
    pub fn of(flavour: Flavour, p: Profile) -> WriteOps {
        let flush_fua = ReqFlags::FLUSH | ReqFlags::FUA;
        let (commit, commit_sync, commit_block, barrier) = match (flavour, p) {
            (_, Profile::V2_4 | Profile::V2_6_28) => (W, W, W, ReqFlags::FLUSH),
            (Flavour::Jbd, Profile::V2_6_32 | Profile::V2_6_33) => (
                write_sync(p),
                write_sync_plug(p),
                write_sync(p),
                ReqFlags::FLUSH,
            ),
            (Flavour::Jbd2, Profile::V2_6_32 | Profile::V2_6_33) => {
                (W, write_sync_plug(p), write_sync_plug(p), ReqFlags::FLUSH)
            }
            (Flavour::Jbd, Profile::V2_6_37) => {
                (write_sync(p), write_sync_plug(p), write_sync(p), flush_fua)
            }
            (Flavour::Jbd2, Profile::V2_6_37) => (
                write_sync(p),
                write_sync_plug(p),
                write_sync_plug(p),
                flush_fua,
            ),
            (_, Profile::V3_10 | Profile::V6) => {
                let w = write_sync(p) | meta(p);
                (w, w, w, flush_fua)
            }
        };
        let checkpoint = if p >= Profile::V3_10 {
            write_sync(p)
        } else {
            W
        };
        WriteOps {
            commit,
            commit_sync,
            commit_block,
            barrier,
            checkpoint,
            superblock: write_sync(p) | meta(p),
        }
    }
}
