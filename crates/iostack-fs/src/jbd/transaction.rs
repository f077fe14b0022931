//! Transactions and handles (`fs/jbd/transaction.c`, `fs/jbd2/transaction.c`).

use super::{Access, Action, DataMode, Flavour, HandleId, Journal, Start, Stop, Tid, Until};
use crate::FsError;
use iostack_des::Instant;
use std::collections::BTreeSet;

/// `t_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TState {
    Running,
    /// Locked for commit: waiting for `t_updates` to reach 0.
    Locked,
    /// Ordered data being written.
    Flush,
    /// Log blocks and commit record being written.
    Commit,
}

/// `transaction_t`.
#[derive(Debug)]
pub(super) struct Transaction {
    pub tid: Tid,
    pub state: TState,
    /// `t_updates`: handles open.
    pub updates: u32,
    /// `t_outstanding_credits`.
    pub outstanding_credits: u64,
    /// Every handle that joined (for the invariant check).
    pub handles: BTreeSet<HandleId>,
    /// `t_buffers` (`BJ_Metadata`): home block numbers.
    pub buffers: BTreeSet<u64>,
    /// jbd's `t_sync_datalist` (`BJ_SyncData`): (inode, block).
    pub sync_data: BTreeSet<(u32, u64)>,
    /// jbd2's `t_inode_list`.
    pub inodes: BTreeSet<u32>,
    /// Revoke records (`journal_revoke`).
    pub revoked: BTreeSet<u64>,
    /// `t_synchronous_commit`.
    pub synchronous_commit: bool,
    /// `t_start_time`, `t_expires`.
    pub start_time: Instant,
    pub expires: Instant,
    /// `t_log_start`.
    pub log_start: u64,
}

/// `handle_t`.
#[derive(Debug)]
pub(super) struct Handle {
    pub id: HandleId,
    pub tid: Tid,
    /// `h_buffer_credits` left.
    pub credits: u64,
    /// `h_sync`.
    pub sync: bool,
    pub pid: u32,
    /// Slept in `journal_stop`'s batching already.
    pub batch_slept: bool,
}

impl Journal {
    /// `get_transaction`: a new running transaction, its commit timer armed at
    /// `t_expires = jiffies + j_commit_interval`.
    fn get_transaction(&mut self, now: Instant, out: &mut Vec<Action>) {
        let tid = self.transaction_sequence;
        self.transaction_sequence = tid.wrapping_add(1);
        let expires = now + self.cfg.commit_interval;
        self.running = Some(Transaction {
            tid,
            state: TState::Running,
            updates: 0,
            outstanding_credits: 0,
            handles: BTreeSet::new(),
            buffers: BTreeSet::new(),
            sync_data: BTreeSet::new(),
            inodes: BTreeSet::new(),
            revoked: BTreeSet::new(),
            synchronous_commit: false,
            start_time: now,
            expires,
            log_start: 0,
        });
        out.push(Action::ArmCommitTimer { at: expires });
    }

    /// `journal_start` → `start_this_handle`: a handle of `credits` blocks for
    /// task `pid`, or the wait the task must go through first.
    pub fn start(&mut self, now: Instant, pid: u32, credits: u64) -> Result<Start, FsError> {
        if credits == 0 || credits > self.max_transaction_buffers {
            return Err(FsError::Invalid(format!(
                "journal handle of {credits} credits (1..={} allowed)",
                self.max_transaction_buffers
            )));
        }
        let mut out = Vec::new();
        if self.running.is_none() {
            self.get_transaction(now, &mut out);
        }
        let t = self.running.as_ref().expect("running transaction");
        if t.state == TState::Locked {
            return Ok(Start::Wait {
                actions: out,
                until: Until::TransactionUnlocked,
            });
        }
        if t.outstanding_credits + credits > self.max_transaction_buffers {
            // The transaction is full: commit it and wait for it to lock.
            let tid = t.tid;
            out.extend(self.log_start_commit(tid).1);
            return Ok(Start::Wait {
                actions: out,
                until: Until::TransactionUnlocked,
            });
        }
        if self.log.space_left() < self.space_needed() {
            return self.wait_for_space(out);
        }
        Ok(Start::Started(self.attach_handle(pid, credits)))
    }

    /// `jbd_space_needed`: a whole transaction plus what the committing one
    /// may still write.
    pub(super) fn space_needed(&self) -> u64 {
        self.max_transaction_buffers
            + self
                .committing
                .as_ref()
                .map_or(0, |t| t.outstanding_credits)
    }

    fn attach_handle(&mut self, pid: u32, credits: u64) -> HandleId {
        let id = HandleId(self.next_handle);
        self.next_handle += 1;
        let t = self.running.as_mut().expect("running transaction");
        t.outstanding_credits += credits;
        t.updates += 1;
        let fresh = t.handles.insert(id);
        debug_assert!(fresh);
        self.handles_started += 1;
        self.handles.insert(
            id,
            Handle {
                id,
                tid: t.tid,
                credits,
                sync: false,
                pid,
                batch_slept: false,
            },
        );
        id
    }

    /// Mark a handle synchronous (`handle->h_sync = 1`: `O_SYNC`, `IS_SYNC`,
    /// `ext3_sync_file` on `data=journal`).
    pub fn set_sync(&mut self, h: HandleId) {
        self.handles.get_mut(&h).expect("open handle").sync = true;
    }

    fn transaction_of(&mut self, tid: Tid) -> &mut Transaction {
        [&mut self.running, &mut self.committing]
            .into_iter()
            .flatten()
            .find(|t| t.tid == tid)
            .expect("a handle's transaction is running or committing")
    }

    /// `journal_get_write_access` + `journal_dirty_metadata`: metadata block
    /// `block` (inode table, bitmap, group descriptor, directory, indirect or
    /// extent block) joins the handle's transaction. A block already in it costs
    /// no credit; a block whose log copy is being written waits (`BJ_Shadow`).
    pub fn dirty_metadata(&mut self, h: HandleId, block: u64) -> Result<Access, FsError> {
        if let Some(tid) = self.shadowed(block) {
            return Ok(Access::WaitShadow { tid });
        }
        let hd = self.handles.get(&h).expect("open handle");
        let tid = hd.tid;
        let left = hd.credits;
        let t = self.transaction_of(tid);
        if t.buffers.contains(&block) {
            return Ok(Access::Done);
        }
        if left == 0 {
            // J_ASSERT_JH(jh, handle->h_buffer_credits > 0)
            return Err(FsError::Invalid(format!(
                "journal handle dirtied more blocks than its credits (block {block})"
            )));
        }
        t.buffers.insert(block);
        self.handles.get_mut(&h).expect("open handle").credits -= 1;
        Ok(Access::Done)
    }

    /// A data block written through the page cache under handle `h`
    /// (`ext3_ordered_write_end` → `journal_dirty_data`; ext4's
    /// `ext4_jbd2_file_inode` after allocating blocks; `data=journal`:
    /// `journal_dirty_metadata` of the data buffer).
    pub fn dirty_data(&mut self, h: HandleId, ino: u32, block: u64) -> Result<Access, FsError> {
        match self.cfg.data {
            DataMode::Writeback => Ok(Access::Done),
            DataMode::Journal => self.dirty_metadata(h, block),
            DataMode::Ordered => {
                let tid = self.handles.get(&h).expect("open handle").tid;
                let jbd = self.cfg.flavour == Flavour::Jbd;
                let t = self.transaction_of(tid);
                if jbd {
                    t.sync_data.insert((ino, block));
                } else {
                    t.inodes.insert(ino);
                }
                Ok(Access::Done)
            }
        }
    }

    /// `journal_revoke`: a freed metadata block gets a revoke record in this
    /// transaction, so that replay does not write its old copy.
    pub fn revoke(&mut self, h: HandleId, block: u64) {
        let tid = self.handles.get(&h).expect("open handle").tid;
        self.transaction_of(tid).revoked.insert(block);
    }

    /// The committing transaction's buffer `block`, while its log copy is in
    /// flight.
    fn shadowed(&self, block: u64) -> Option<Tid> {
        let t = self.committing.as_ref()?;
        let c = self.commit.as_ref()?;
        (c.log_in_flight() && c.logged(block)).then_some(t.tid)
    }

    /// `journal_stop`. A synchronous handle of a task that was not the last to
    /// stop a synchronous handle first sleeps so that others can join the
    /// transaction (`j_last_sync_writer`), for
    /// `clamp(j_average_commit_time, min_batch_time, max_batch_time)` (jbd2) or
    /// `min(j_average_commit_time, one jiffy)` (jbd), when the transaction is
    /// younger than that. Then the credits go back, the commit thread is woken
    /// if it waits for the handles, and a commit is started for a synchronous
    /// handle, a transaction over its size or one past `t_expires`.
    pub fn stop(&mut self, now: Instant, h: HandleId) -> Stop {
        let hd = self.handles.get(&h).expect("open handle");
        let (tid, sync, pid) = (hd.tid, hd.sync, hd.pid);
        if sync && !hd.batch_slept && self.last_sync_writer != Some(pid) {
            self.last_sync_writer = Some(pid);
            let commit_time = self.batch_time();
            let start = self.transaction_of(tid).start_time;
            if now.since(start).as_ns() < commit_time {
                self.handles.get_mut(&h).expect("open handle").batch_slept = true;
                return Stop::BatchSleep {
                    until: Instant(now.0 + commit_time),
                };
            }
        }
        let hd = self.handles.remove(&h).expect("open handle");
        let max = self.max_transaction_buffers;
        let t = self.transaction_of(tid);
        if sync {
            t.synchronous_commit = true;
        }
        t.outstanding_credits -= hd.credits;
        t.updates -= 1;
        let mut actions = Vec::new();
        if t.updates == 0 && t.state == TState::Locked {
            actions.push(Action::WakeCommitThread);
        }
        let mut wait_commit = None;
        if sync || t.outstanding_credits > max || now >= t.expires {
            actions.extend(self.log_start_commit(tid).1);
            if sync {
                wait_commit = Some(tid);
            }
        }
        Stop::Done {
            actions,
            wait_commit,
        }
    }

    /// The batching sleep of `journal_stop` in ns.
    fn batch_time(&self) -> u64 {
        let avg = self.average_commit_time;
        match self.cfg.flavour {
            Flavour::Jbd => avg.min(self.cfg.jiffy.as_ns()),
            Flavour::Jbd2 => avg
                .max(self.cfg.min_batch_time.as_ns())
                .min(self.cfg.max_batch_time.as_ns()),
        }
    }
}
