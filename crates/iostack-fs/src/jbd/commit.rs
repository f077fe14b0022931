//! The commit thread (`kjournald`, `kjournald2`) and
//! `journal_commit_transaction` (`fs/jbd/commit.c`, `fs/jbd2/commit.c` of
//! 2.6.35/2.6.37) as phases. Each call of [`Journal::kjournald`] runs the thread
//! until it waits: for the handles still open, for I/O it asked for, or for work.
//!
//! jbd (ext3): lock, wait for `t_updates`; write the ordered data buffers of the
//! transaction (`journal_submit_data_buffers`) and wait; revoke records;
//! descriptor + metadata copies to the log, wait; the commit block
//! (`journal_write_commit_record`: `sync_dirty_buffer`, with the barrier when
//! `barrier=1`), wait; checkpoint lists.
//!
//! jbd2 (ext4): lock, wait; submit the ordered inodes' data
//! (`journal_submit_data_buffers`) without waiting; revoke, descriptor and
//! metadata blocks; with `journal_async_commit` the commit block now (no
//! barrier, checksummed) and a `blkdev_issue_flush` when barriers are on; wait
//! for the data (`journal_finish_inode_data_buffers`), then the log; without
//! async commit the commit block (`journal_submit_commit_record`: flush/FUA or
//! barrier when `barrier=1`) and wait for it.

use super::transaction::TState;
use super::{Action, DataMode, Flavour, Journal, LogBlock, LogWrite, Tid};
use iostack_core::ReqFlags;
use iostack_des::Instant;
use std::collections::BTreeSet;

/// Where a commit resumes after its wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// `JBD2_FLUSHED`: the journal superblock is written first
    /// (`jbd2_journal_update_sb_log_tail`), before the transaction locks.
    Super,
    /// `T_LOCKED`: waiting for `t_updates` to reach 0.
    Locked,
    /// jbd: the ordered data was waited for.
    DataWaited,
    /// jbd2 async commit: the flush after the early commit block is done.
    AsyncFlushed,
    /// jbd2: the ordered data was waited for.
    InodesWaited,
    /// The log writes were waited for.
    LogWaited,
    /// The commit block was waited for.
    CommitBlockWaited,
}

/// One running `journal_commit_transaction`.
#[derive(Debug)]
pub(super) struct CommitRun {
    tid: Tid,
    phase: Phase,
    /// `write_op`, chosen when the transaction is locked.
    write_op: ReqFlags,
    /// `ktime_get()` at `T_FLUSH` (for `j_average_commit_time`).
    start_time: Instant,
    /// Home blocks whose log copies are in flight (`BJ_Shadow`).
    logged: BTreeSet<u64>,
    log_in_flight: bool,
    /// jbd2: ordered inodes were submitted.
    inodes: bool,
    /// The commit block was submitted (`T_COMMIT_RECORD` in jbd).
    commit_block: bool,
}

impl CommitRun {
    pub fn log_in_flight(&self) -> bool {
        self.log_in_flight
    }
    pub fn logged(&self, block: u64) -> bool {
        self.logged.contains(&block)
    }
    pub fn commit_block_sent(&self) -> bool {
        self.commit_block
    }
}

impl Journal {
    /// The commit thread's loop (`kjournald`): go on with the commit in
    /// progress, or commit the running transaction when a commit was requested
    /// (`j_commit_sequence != j_commit_request`) or it is past `t_expires`;
    /// otherwise sleep ([`Action::Idle`]).
    pub fn kjournald(&mut self, now: Instant) -> Vec<Action> {
        let mut out = Vec::new();
        loop {
            if self.commit.is_some() {
                if !self.commit_step(now, &mut out) {
                    return out;
                }
                continue;
            }
            let Some(t) = &self.running else {
                out.push(Action::Idle);
                return out;
            };
            if self.commit_sequence == self.commit_request {
                if now < t.expires {
                    out.push(Action::Idle);
                    return out;
                }
                self.commit_request = t.tid;
            }
            self.lock_running();
        }
    }

    /// `T_LOCKED`: no new handle joins; the write op is fixed. When the
    /// journal is `JBD2_FLUSHED` the superblock goes first and the lock waits
    /// for it.
    fn lock_running(&mut self) {
        let t = self.running.as_mut().expect("running transaction");
        let phase = if self.flushed {
            Phase::Super
        } else {
            t.state = TState::Locked;
            Phase::Locked
        };
        let write_op = if t.synchronous_commit {
            self.ops.commit_sync
        } else {
            self.ops.commit
        };
        self.commit = Some(CommitRun {
            tid: t.tid,
            phase,
            write_op,
            start_time: Instant::ZERO,
            logged: BTreeSet::new(),
            log_in_flight: false,
            inodes: false,
            commit_block: false,
        });
    }

    /// One phase of the commit; false when it ended in a wait.
    fn commit_step(&mut self, now: Instant, out: &mut Vec<Action>) -> bool {
        let c = self.commit.as_ref().expect("commit in progress");
        match c.phase {
            Phase::Super => self.commit_super(out),
            Phase::Locked => self.commit_flush(now, out),
            Phase::DataWaited => self.commit_log(out),
            Phase::AsyncFlushed => self.commit_wait_data(out),
            Phase::InodesWaited => self.commit_wait_log(out),
            Phase::LogWaited => self.commit_record(out),
            Phase::CommitBlockWaited => {
                self.commit_finish(now, out);
                true
            }
        }
    }

    fn set_phase(&mut self, p: Phase) {
        self.commit.as_mut().expect("commit in progress").phase = p;
    }

    /// `jbd2_journal_commit_transaction` when `JBD2_FLUSHED`:
    /// `jbd2_journal_update_sb_log_tail(…, REQ_SYNC)` writes the journal
    /// superblock and waits; then the transaction locks.
    fn commit_super(&mut self, out: &mut Vec<Action>) -> bool {
        self.flushed = false;
        out.push(Action::WriteJournalSuper {
            block: self.cfg.area_start,
            flags: self.ops.superblock,
        });
        let tid = self.running.as_ref().expect("running transaction").tid;
        self.set_phase(Phase::Locked);
        out.push(Action::WaitLog { tid });
        false
    }

    /// Wait for the handles, then `T_FLUSH`: the transaction becomes the
    /// committing one and its ordered data goes out.
    fn commit_flush(&mut self, now: Instant, out: &mut Vec<Action>) -> bool {
        let t = self.running.as_mut().expect("locked transaction");
        t.state = TState::Locked;
        if t.updates > 0 {
            out.push(Action::WaitUpdates { tid: t.tid });
            return false;
        }
        let mut t = self.running.take().expect("locked transaction");
        debug_assert!(self.committing.is_none(), "one commit at a time");
        self.clean_checkpoint_list();
        t.state = TState::Flush;
        t.log_start = self.log.head();
        let tid = t.tid;
        let c = self.commit.as_mut().expect("commit in progress");
        c.start_time = now;
        let write_op = c.write_op;
        out.push(Action::WakeStartWaiters);
        let ordered = self.cfg.data == DataMode::Ordered;
        match self.cfg.flavour {
            Flavour::Jbd if ordered && !t.sync_data.is_empty() => {
                out.push(Action::WriteOrderedData {
                    tid,
                    blocks: t.sync_data.iter().copied().collect(),
                    flags: write_op,
                });
                out.push(Action::WaitOrderedData { tid });
                self.committing = Some(t);
                self.set_phase(Phase::DataWaited);
                return false;
            }
            Flavour::Jbd2 if ordered && !t.inodes.is_empty() => {
                out.push(Action::WriteOrderedInodes {
                    tid,
                    inodes: t.inodes.iter().copied().collect(),
                    flags: ReqFlags::writeback(self.cfg.profile, true, false),
                });
                self.commit.as_mut().expect("commit").inodes = true;
            }
            _ => {}
        }
        self.committing = Some(t);
        self.set_phase(Phase::DataWaited);
        true
    }

    /// `T_COMMIT`: revoke records, then descriptor and metadata blocks.
    /// jbd2 async commit sends the commit block here.
    fn commit_log(&mut self, out: &mut Vec<Action>) -> bool {
        let t = self.committing.as_mut().expect("committing transaction");
        t.state = TState::Commit;
        let tid = t.tid;
        let revoked = t.revoked.len();
        let buffers: Vec<u64> = t.buffers.iter().copied().collect();
        let write_op = self.commit.as_ref().expect("commit").write_op;
        self.write_revoke_records(tid, revoked, write_op, out);
        for chunk in buffers.chunks(self.tags_per_descriptor()) {
            let mut blocks = vec![LogWrite {
                block: self.log.next_block(),
                kind: LogBlock::Descriptor,
            }];
            for &home in chunk {
                blocks.push(LogWrite {
                    block: self.log.next_block(),
                    kind: LogBlock::Metadata { home },
                });
            }
            let t = self.committing.as_mut().expect("committing transaction");
            t.outstanding_credits -= chunk.len() as u64;
            out.push(Action::WriteLog {
                tid,
                blocks,
                flags: write_op,
            });
        }
        let c = self.commit.as_mut().expect("commit");
        c.logged = buffers.into_iter().collect();
        c.log_in_flight = true;
        if self.cfg.async_commit {
            out.push(self.commit_block_action(tid, false));
            if self.cfg.barrier {
                out.push(Action::IssueFlush { tid });
                self.set_phase(Phase::AsyncFlushed);
                return false;
            }
        }
        self.set_phase(Phase::AsyncFlushed);
        true
    }

    /// `journal_write_revoke_records`: revoke blocks of a 16-byte header and
    /// 4-byte records (jbd; 8 with jbd2's 64-bit feature, not modelled).
    fn write_revoke_records(&mut self, tid: Tid, n: usize, flags: ReqFlags, out: &mut Vec<Action>) {
        if n == 0 {
            return;
        }
        let per_block = (self.cfg.blocksize as usize - 16) / 4;
        let blocks = (0..n.div_ceil(per_block))
            .map(|_| LogWrite {
                block: self.log.next_block(),
                kind: LogBlock::Revoke,
            })
            .collect();
        out.push(Action::WriteLog { tid, blocks, flags });
    }

    /// Tags per descriptor block, from the commit loop's submit test: the
    /// descriptor is full when `space_left < tag + 16` (its first tag carries
    /// the 16-byte UUID) or the batch reaches `j_wbufsize`
    /// (`blocksize / sizeof(journal_block_tag_t)`: 8 bytes in jbd, 12 in
    /// jbd2); jbd2's tags are 8 bytes without the 64-bit feature.
    fn tags_per_descriptor(&self) -> usize {
        let bs = self.cfg.blocksize as i64;
        let tag = 8;
        let wbufsize = match self.cfg.flavour {
            Flavour::Jbd => bs / 8,
            Flavour::Jbd2 => bs / 12,
        };
        let mut space = bs - 12;
        let mut k = 0;
        loop {
            k += 1;
            space -= tag + if k == 1 { 16 } else { 0 };
            if 1 + k == wbufsize || space < tag + 16 {
                return k as usize;
            }
        }
    }

    /// jbd2: wait for the ordered data (`journal_finish_inode_data_buffers`).
    fn commit_wait_data(&mut self, out: &mut Vec<Action>) -> bool {
        let c = self.commit.as_ref().expect("commit");
        let (tid, inodes) = (c.tid, c.inodes);
        self.set_phase(Phase::InodesWaited);
        if inodes {
            out.push(Action::WaitOrderedData { tid });
            return false;
        }
        true
    }

    /// Wait for the log writes (`wait_for_iobuf`, `wait_for_ctlbuf`).
    fn commit_wait_log(&mut self, out: &mut Vec<Action>) -> bool {
        let tid = self.commit.as_ref().expect("commit").tid;
        self.set_phase(Phase::LogWaited);
        out.push(Action::WaitLog { tid });
        false
    }

    /// The log copies are on disk (the shadowed buffers are released); write
    /// the commit block unless async commit sent it, and wait for it.
    fn commit_record(&mut self, out: &mut Vec<Action>) -> bool {
        let c = self.commit.as_mut().expect("commit");
        let tid = c.tid;
        c.log_in_flight = false;
        c.logged.clear();
        out.push(Action::Unshadow { tid });
        if !self.cfg.async_commit {
            out.push(self.commit_block_action(tid, self.cfg.barrier));
        }
        out.push(Action::WaitCommitBlock { tid });
        self.set_phase(Phase::CommitBlockWaited);
        false
    }

    fn commit_block_action(&mut self, tid: Tid, barrier: bool) -> Action {
        self.commit.as_mut().expect("commit").commit_block = true;
        let mut flags = self.ops.commit_block;
        if barrier {
            flags = flags | self.ops.barrier;
        }
        Action::WriteCommitBlock {
            tid,
            block: self.log.next_block(),
            flags,
            checksum: self.cfg.async_commit,
        }
    }

    /// `T_FINISHED`: the buffers go to the checkpoint list and are dirtied for
    /// writeback, `j_commit_sequence` advances, `j_average_commit_time`
    /// follows (`(commit_time + 3 * average) / 4`), waiters wake.
    fn commit_finish(&mut self, now: Instant, out: &mut Vec<Action>) {
        let c = self.commit.take().expect("commit");
        let t = self.committing.take().expect("committing transaction");
        debug_assert_eq!(t.updates, 0);
        debug_assert!(
            t.handles.iter().all(|h| !self.handles.contains_key(h)),
            "a handle still open in a committed transaction"
        );
        self.handles_committed += t.handles.len() as u64;
        let commit_time = now.since(c.start_time).as_ns();
        self.average_commit_time = if self.average_commit_time == 0 {
            commit_time
        } else {
            (commit_time + self.average_commit_time * 3) / 4
        };
        let next = self.running.as_ref().map(|r| &r.buffers);
        let dirty: Vec<u64> = t
            .buffers
            .iter()
            .copied()
            .filter(|b| next.is_none_or(|n| !n.contains(b)))
            .collect();
        if !dirty.is_empty() {
            out.push(Action::MetadataDirty { blocks: dirty });
        }
        self.insert_checkpoint(t.tid, t.log_start, &t.buffers);
        self.commit_sequence = t.tid;
        out.push(Action::CommitDone { tid: t.tid });
    }
}
