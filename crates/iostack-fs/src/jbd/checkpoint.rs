//! The log area and checkpointing (`fs/jbd/journal.c`, `fs/jbd/checkpoint.c`
//! and their jbd2 twins).
//!
//! The log is the journal's blocks `first..last` used as a ring: `head` is the
//! next block to write, `tail` the oldest block still needed for replay, `free`
//! the blocks between them that can be written. A committed transaction stays
//! on the checkpoint list until its metadata is written in place (by normal
//! writeback of the block device, or by `log_do_checkpoint` when a handle finds
//! the log too full); only then can `cleanup_journal_tail` move the tail past
//! it.

use super::{Action, Journal, Start, Tid, Until};
use crate::FsError;
use iostack_des::Instant;
use std::collections::{BTreeSet, VecDeque};

/// `MIN_LOG_RESERVED_BLOCKS`.
const MIN_LOG_RESERVED_BLOCKS: u64 = 32;

/// A committed transaction on the checkpoint list (`t_checkpoint_list`).
#[derive(Debug)]
pub(super) struct CpTransaction {
    pub tid: Tid,
    /// `t_log_start`.
    pub log_start: u64,
    /// Home blocks not yet written in place.
    pub blocks: BTreeSet<u64>,
}

#[derive(Debug)]
pub(super) struct Log {
    /// File-system block of journal block 0.
    area_start: u64,
    /// The journal's runs (`journal_bmap`); empty: contiguous.
    runs: Vec<(u64, u64)>,
    /// `j_first`, `j_last`: the log's journal blocks (block 0 is the journal
    /// superblock).
    first: u64,
    last: u64,
    head: u64,
    tail: u64,
    free: u64,
    /// `j_checkpoint_transactions`, oldest first.
    pub cp: VecDeque<CpTransaction>,
    /// Log blocks written since the tail last passed them: a block is never
    /// written twice before a checkpoint frees it.
    live: Vec<u64>,
}

impl Log {
    pub fn new(area_start: u64, maxlen: u64, runs: &[(u64, u64)]) -> Log {
        let len = maxlen as usize;
        Log {
            area_start,
            runs: runs.to_vec(),
            first: 1,
            last: maxlen,
            head: 1,
            tail: 1,
            free: maxlen - 1,
            cp: VecDeque::new(),
            live: vec![0; len.div_ceil(64)],
        }
    }

    pub fn state(&self) -> (u64, u64, u64) {
        (self.head, self.tail, self.free)
    }

    pub fn head(&self) -> u64 {
        self.head
    }

    /// `__log_space_left`: free blocks less the reserve, less an eighth for
    /// descriptor blocks.
    pub fn space_left(&self) -> u64 {
        let left = self.free.saturating_sub(MIN_LOG_RESERVED_BLOCKS);
        left - (left >> 3)
    }

    /// `journal_next_log_block`: the file-system block of the next log block.
    pub fn next_block(&mut self) -> u64 {
        // J_ASSERT(journal->j_free > 1)
        assert!(
            self.free > 1,
            "journal log overflow: head caught up with tail"
        );
        let b = self.head;
        let (w, bit) = ((b / 64) as usize, 1u64 << (b % 64));
        assert!(
            self.live[w] & bit == 0,
            "log block {b} written twice before a checkpoint freed it"
        );
        self.live[w] |= bit;
        self.head += 1;
        self.free -= 1;
        if self.head == self.last {
            self.head = self.first;
        }
        self.bmap(b)
    }

    /// `journal_bmap`: the file-system block of journal block `b`.
    fn bmap(&self, b: u64) -> u64 {
        let mut off = b;
        for &(start, len) in &self.runs {
            if off < len {
                return start + off;
            }
            off -= len;
        }
        self.area_start + b
    }

    /// The journal superblock's file-system block.
    pub fn superblock(&self) -> u64 {
        self.area_start
    }

    /// `cleanup_journal_tail`'s update once the new tail is known: free the
    /// blocks between the old and the new tail.
    pub fn set_tail(&mut self, to: u64) {
        while self.tail != to {
            let b = self.tail;
            self.live[(b / 64) as usize] &= !(1u64 << (b % 64));
            self.free += 1;
            self.tail += 1;
            if self.tail == self.last {
                self.tail = self.first;
            }
        }
    }

    /// Free blocks plus live blocks equal the log's size.
    pub fn check(&self) {
        let live: u64 = self.live.iter().map(|w| w.count_ones() as u64).sum();
        assert_eq!(
            live + self.free,
            self.last - self.first,
            "log accounting: live {live} + free {} != {}",
            self.free,
            self.last - self.first
        );
    }
}

impl Journal {
    /// `__log_wait_for_space`: the handle's task checkpoints the oldest
    /// committed transaction (`log_do_checkpoint`), or, with none, waits for the
    /// committing one; with neither the journal is too small.
    pub(super) fn wait_for_space(&mut self, mut out: Vec<Action>) -> Result<Start, FsError> {
        self.clean_checkpoint_list();
        if self.log.cp.is_empty() && self.committing.is_none() {
            // Every committed transaction is written in place: only the tail
            // has to move.
            let moved = self.cleanup_journal_tail();
            if !moved.is_empty() {
                out.extend(moved);
                return Ok(Start::Wait {
                    actions: out,
                    until: Until::CheckpointWritten,
                });
            }
        }
        if let Some(cp) = self.log.cp.front() {
            // j_checkpoint_mutex: one task checkpoints, the others wait for it.
            if self.checkpointing != Some(cp.tid) {
                self.checkpointing = Some(cp.tid);
                out.push(Action::Checkpoint {
                    tid: cp.tid,
                    blocks: cp.blocks.iter().copied().collect(),
                    flags: self.ops.checkpoint,
                });
            }
            return Ok(Start::Wait {
                actions: out,
                until: Until::CheckpointWritten,
            });
        }
        if let Some(t) = &self.committing {
            return Ok(Start::Wait {
                actions: out,
                until: Until::Commit(t.tid),
            });
        }
        Err(FsError::Invalid(format!(
            "journal of {} blocks cannot hold one transaction (needs checkpoint, none)",
            self.cfg.maxlen
        )))
    }

    /// The task wrote the `Checkpoint` blocks of `tid`: the transaction is
    /// written in place (`__journal_remove_checkpoint`), the tail moves
    /// (`cleanup_journal_tail`). Every task waiting for a checkpoint then calls
    /// `start` again.
    pub fn checkpoint_done(&mut self, _now: Instant, tid: Tid) -> Vec<Action> {
        if self.checkpointing == Some(tid) {
            self.checkpointing = None;
        }
        if let Some(i) = self.log.cp.iter().position(|c| c.tid == tid) {
            let cp = self.log.cp.remove(i).expect("index found");
            for b in &cp.blocks {
                self.metadata_written(*b);
            }
        }
        self.clean_checkpoint_list();
        self.cleanup_journal_tail()
    }

    /// Normal writeback wrote metadata block `block` in place: it leaves the
    /// checkpoint lists (the commit's `__journal_clean_checkpoint_list` then
    /// drops transactions with nothing left).
    pub fn metadata_written(&mut self, block: u64) {
        for cp in self.log.cp.iter_mut() {
            cp.blocks.remove(&block);
        }
    }

    /// `__journal_clean_checkpoint_list`: drop checkpointed transactions whose
    /// buffers are all written. The tail does not move here.
    pub(super) fn clean_checkpoint_list(&mut self) {
        self.log.cp.retain(|c| !c.blocks.is_empty());
    }

    /// `cleanup_journal_tail`: the tail moves to the log start of the oldest
    /// transaction still needed (checkpoint list, else committing, else the
    /// head), and the journal superblock is written.
    pub(super) fn cleanup_journal_tail(&mut self) -> Vec<Action> {
        let to = if let Some(cp) = self.log.cp.front() {
            cp.log_start
        } else if let Some(t) = &self.committing {
            t.log_start
        } else {
            self.log.head()
        };
        let (_, tail, _) = self.log.state();
        if to == tail {
            return Vec::new();
        }
        self.log.set_tail(to);
        vec![Action::WriteJournalSuper {
            block: self.log.superblock(),
            flags: self.ops.superblock,
        }]
    }

    /// At the end of a commit: the transaction's buffers go on its checkpoint
    /// list, leaving any older transaction's list (`__journal_insert_checkpoint`
    /// after `__journal_remove_checkpoint`).
    pub(super) fn insert_checkpoint(&mut self, tid: Tid, log_start: u64, blocks: &BTreeSet<u64>) {
        for cp in self.log.cp.iter_mut() {
            cp.blocks.retain(|b| !blocks.contains(b));
        }
        if blocks.is_empty() {
            // __journal_drop_transaction: nothing to checkpoint.
            return;
        }
        self.log.cp.push_back(CpTransaction {
            tid,
            log_start,
            blocks: blocks.clone(),
        });
    }
}
