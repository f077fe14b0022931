//! The journal of ext3 (`fs/jbd`) and ext4 (`fs/jbd2`) as a sans-IO state
//! machine, modelled on 2.6.3x (`transaction.c`, `commit.c`, `journal.c`,
//! `checkpoint.c`).
//!
//! A [`Journal`] holds the running and the committing transaction, the handles
//! that the file system's operations hold open, the log's head and tail and the
//! committed transactions whose metadata has not been written in place yet
//! (checkpoint lists). Every call takes its input and the time, changes the
//! journal and returns [`Action`]s for the caller to carry out: I/O on block
//! numbers with their [`ReqFlags`], waits, wake-ups. It knows nothing of bios or
//! queues.
//!
//! * `transaction.rs`: `journal_start`/`start_this_handle`, `journal_stop`
//!   (with the sync-commit batching), `journal_dirty_metadata`, ordered data
//!   (`journal_dirty_data` for jbd, `jbd2_journal_file_inode` for jbd2).
//! * `commit.rs`: `kjournald`/`kjournald2` and `journal_commit_transaction`
//!   as resumable phases, each ending in an I/O to do or a wait.
//! * `checkpoint.rs`: the log area (`journal_next_log_block`,
//!   `__log_space_left`), `__log_wait_for_space`, `log_do_checkpoint`,
//!   `cleanup_journal_tail`.
//! * `ops.rs`: the request flags each kernel's journal code passes.
//!
//! How a caller drives it (the simulation glue):
//! * A file-system operation: [`Journal::start`] with its credits (on
//!   [`Start::Wait`] carry out the actions, sleep per [`Until`], retry), then
//!   [`Journal::dirty_metadata`] for each metadata block it changes and
//!   [`Journal::dirty_data`] for data blocks, [`Journal::set_sync`] for
//!   `O_SYNC`/`IS_SYNC`, then [`Journal::stop`] (sleep on
//!   [`Stop::BatchSleep`] and call again; on `wait_commit` sleep until
//!   [`Journal::committed`]).
//! * fsync: the tid of the inode's last handle, then
//!   [`Journal::log_start_commit`] / [`Journal::committed`], with
//!   [`Journal::trans_will_send_data_barrier`] deciding ext3's extra flush;
//!   sync: [`Journal::start_commit`].
//! * The commit thread is a task: on [`Action::WakeCommitThread`] and when a
//!   `Wait*` action it returned is satisfied, call [`Journal::kjournald`];
//!   [`Action::ArmCommitTimer`] asks for [`Journal::commit_timer`] at that
//!   time. Writeback of the block device reports home blocks written in place
//!   with [`Journal::metadata_written`].
//!
//! Not modelled: nested handles (`current->journal_info`: the caller starts one
//! handle per operation), `journal_extend`/`journal_restart`, the undo copies of
//! bitmap buffers (`b_committed_data`: they change no I/O), journal aborts and
//! I/O errors, an external journal device (the journal is a contiguous area of
//! the file system's device, as `mke2fs` allocates it in one group).

mod checkpoint;
mod commit;
mod ops;
mod transaction;

use crate::FsError;
use iostack_core::{Profile, ReqFlags};
use iostack_des::{Duration, Instant};
use std::collections::BTreeMap;

pub use ops::WriteOps;
use transaction::{Handle, Transaction};

/// A transaction id (`tid_t`), compared modulo 2^32 as `tid_gt` does.
pub type Tid = u32;

/// `tid_gt(x, y)`: x is later than y.
pub fn tid_gt(x: Tid, y: Tid) -> bool {
    (x.wrapping_sub(y) as i32) > 0
}

/// `tid_geq(x, y)`.
pub fn tid_geq(x: Tid, y: Tid) -> bool {
    (x.wrapping_sub(y) as i32) >= 0
}

/// Which journal code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// `fs/jbd` (ext3).
    Jbd,
    /// `fs/jbd2` (ext4).
    Jbd2,
}

/// The `data=` mount option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataMode {
    /// Data written before the metadata that points to it commits.
    Ordered,
    /// Data not tracked by the journal.
    Writeback,
    /// Data journalled like metadata.
    Journal,
}

/// A handle (`handle_t`): one file-system operation's reservation of log space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct HandleId(pub u64);

/// The journal's configuration: the journal code and kernel, the mount options
/// that change its I/O, and where the log is.
#[derive(Clone, Debug)]
pub struct JournalConfig {
    pub flavour: Flavour,
    pub profile: Profile,
    pub data: DataMode,
    /// `barrier=1` (`JFS_BARRIER`/`JBD2_BARRIER`).
    pub barrier: bool,
    /// ext4's `journal_async_commit` (`JBD2_FEATURE_INCOMPAT_ASYNC_COMMIT`, with
    /// `COMPAT_CHECKSUM`); jbd2 only.
    pub async_commit: bool,
    /// `commit=` (`j_commit_interval`).
    pub commit_interval: Duration,
    /// jbd2's `min_batch_time`/`max_batch_time` (`j_min_batch_time`,
    /// `j_max_batch_time`).
    pub min_batch_time: Duration,
    pub max_batch_time: Duration,
    /// One jiffy (`1000 * jiffies_to_usecs(1)` ns): jbd's cap on the batching
    /// sleep.
    pub jiffy: Duration,
    /// File-system block of the journal's block 0 (its superblock).
    pub area_start: u64,
    /// The journal's runs `(first block, blocks)` in logical order when it
    /// is not one run from `area_start` (`journal_bmap` through the journal
    /// inode's extents); empty: contiguous.
    pub runs: Vec<(u64, u64)>,
    /// Journal length in blocks (`j_maxlen`).
    pub maxlen: u64,
    /// Block size in bytes.
    pub blocksize: u32,
}

/// `JFS_MIN_JOURNAL_BLOCKS`.
pub const MIN_JOURNAL_BLOCKS: u64 = 1024;

impl JournalConfig {
    /// The defaults of `flavour` in `profile`: `data=ordered`, 5 s commit
    /// interval (`JBD_DEFAULT_MAX_COMMIT_AGE`), jbd2's batch times 0 and 15 ms
    /// (`JBD2_DEFAULT_MIN/MAX_BATCH_TIME`), barriers as each `fill_super` sets
    /// them: ext4 on (`EXT4_DEFM_NOBARRIER` unset), ext3 off until "ext3: Turn on
    /// barriers by default" (2.6.38; on in 3.10).
    pub fn defaults(flavour: Flavour, profile: Profile, area_start: u64, maxlen: u64) -> Self {
        JournalConfig {
            flavour,
            profile,
            data: DataMode::Ordered,
            barrier: flavour == Flavour::Jbd2 || profile >= Profile::V3_10,
            async_commit: false,
            commit_interval: Duration::secs(5),
            min_batch_time: Duration::ZERO,
            max_batch_time: Duration::us(15_000),
            jiffy: Duration::ms(1),
            area_start,
            runs: Vec::new(),
            maxlen,
            blocksize: 4096,
        }
    }
}

/// What the caller must do. I/O actions name file-system block numbers; the
/// `Wait*` actions end a commit-thread step: call [`Journal::kjournald`] again
/// once that wait is over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Wake the commit thread (`wake_up(&j_wait_commit)`): call `kjournald`.
    WakeCommitThread,
    /// Arm the commit timer (`j_commit_timer`) at the running transaction's
    /// `t_expires`; when it fires call [`Journal::commit_timer`].
    ArmCommitTimer { at: Instant },
    /// Wake the handles waiting in `start_this_handle`
    /// (`j_wait_transaction_locked`): they call `start` again.
    WakeStartWaiters,
    /// jbd `data=ordered`: write the transaction's data buffers
    /// (`journal_submit_data_buffers`; every dirty one, whatever its file).
    WriteOrderedData {
        tid: Tid,
        blocks: Vec<(u32, u64)>,
        flags: ReqFlags,
    },
    /// jbd2 `data=ordered`: write each inode's mapped dirty pages over
    /// `0..i_size` (`journal_submit_inode_data_buffers`: `generic_writepages`,
    /// `WB_SYNC_ALL`, no block allocation).
    WriteOrderedInodes {
        tid: Tid,
        inodes: Vec<u32>,
        flags: ReqFlags,
    },
    /// Wait for the ordered data written above (jbd: the `t_locked_list` loop;
    /// jbd2: `journal_finish_inode_data_buffers`).
    WaitOrderedData { tid: Tid },
    /// Blocks to the log, in this order (one `submit_bh` each).
    WriteLog {
        tid: Tid,
        blocks: Vec<LogWrite>,
        flags: ReqFlags,
    },
    /// Wait for every log write of the transaction (`wait_for_iobuf`,
    /// `wait_for_ctlbuf`).
    WaitLog { tid: Tid },
    /// The metadata buffers whose log copies are written: callers waiting in
    /// `do_get_write_access` on a shadowed buffer (`BH_Unshadow`) go on.
    Unshadow { tid: Tid },
    /// The commit block (`journal_write_commit_record`,
    /// `journal_submit_commit_record`). `checksum`: it carries the
    /// transaction's crc32 (jbd2 async commit).
    WriteCommitBlock {
        tid: Tid,
        block: u64,
        flags: ReqFlags,
        checksum: bool,
    },
    /// Wait for the commit block.
    WaitCommitBlock { tid: Tid },
    /// `blkdev_issue_flush` on the journal's device, waited for: an empty
    /// [`ReqFlags::WRITE_FLUSH`] bio (a barrier before 2.6.37).
    IssueFlush { tid: Tid },
    /// `j_commit_sequence = tid`: wake `log_wait_commit` waiters.
    CommitDone { tid: Tid },
    /// Metadata committed and now dirty in the block device's page cache
    /// (`__journal_refile_buffer` → `mark_buffer_dirty`): normal writeback
    /// writes them in place; tell [`Journal::metadata_written`].
    MetadataDirty { blocks: Vec<u64> },
    /// `log_do_checkpoint`: write these home blocks and wait
    /// (`__flush_batch`), then call [`Journal::checkpoint_done`].
    Checkpoint {
        tid: Tid,
        blocks: Vec<u64>,
        flags: ReqFlags,
    },
    /// `cleanup_journal_tail` → `journal_update_superblock(journal, 1)`:
    /// write the journal superblock and wait.
    WriteJournalSuper { block: u64, flags: ReqFlags },
    /// The commit thread has nothing to do: it sleeps until woken or until the
    /// commit timer fires.
    Idle,
    /// The commit is locked and waits for the handles still open
    /// (`j_wait_updates`); `stop` of the last one wakes the thread.
    WaitUpdates { tid: Tid },
}

/// One block written to the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogWrite {
    /// File-system block in the journal area.
    pub block: u64,
    pub kind: LogBlock,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogBlock {
    /// `JFS_DESCRIPTOR_BLOCK` with the tags of the blocks that follow.
    Descriptor,
    /// The copy of metadata block `home` (`journal_write_metadata_buffer`).
    Metadata { home: u64 },
    /// `JFS_REVOKE_BLOCK` (`journal_write_revoke_records`).
    Revoke,
}

/// The outcome of [`Journal::start`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Start {
    Started(HandleId),
    /// The task sleeps; carry out `actions`, then call `start` again when
    /// `until` says.
    Wait {
        actions: Vec<Action>,
        until: Until,
    },
}

/// What a task blocked in `start_this_handle` waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// `j_wait_transaction_locked`: [`Action::WakeStartWaiters`].
    TransactionUnlocked,
    /// The task itself writes the `Checkpoint` action's blocks and then calls
    /// [`Journal::checkpoint_done`].
    CheckpointWritten,
    /// `log_wait_commit(tid)`: [`Action::CommitDone`] for `tid`.
    Commit(Tid),
}

/// The outcome of [`Journal::stop`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// jbd/jbd2 batching: the task sleeps until `until` with its handle still
    /// open, then calls `stop` again.
    BatchSleep { until: Instant },
    /// The handle is closed. If `wait_commit`, the handle was synchronous: the
    /// task waits for that transaction's commit (`log_wait_commit`).
    Done {
        actions: Vec<Action>,
        wait_commit: Option<Tid>,
    },
}

/// The outcome of [`Journal::dirty_metadata`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Done,
    /// `do_get_write_access`: the buffer's log copy is being written
    /// (`BJ_Shadow`); the task waits for [`Action::Unshadow`] of `tid` and
    /// calls again.
    WaitShadow {
        tid: Tid,
    },
}

/// The journal (`journal_t`).
pub struct Journal {
    cfg: JournalConfig,
    ops: WriteOps,
    /// `j_max_transaction_buffers`: a quarter of the journal.
    max_transaction_buffers: u64,
    running: Option<Transaction>,
    committing: Option<Transaction>,
    commit: Option<commit::CommitRun>,
    log: checkpoint::Log,
    /// `j_transaction_sequence`: the tid the next transaction gets.
    transaction_sequence: Tid,
    /// `j_commit_sequence`, `j_commit_request`.
    commit_sequence: Tid,
    commit_request: Tid,
    /// `j_average_commit_time` (ns).
    average_commit_time: u64,
    /// `j_last_sync_writer`.
    last_sync_writer: Option<u32>,
    /// `JBD2_FLUSHED`: the on-disk log is empty and the journal superblock
    /// must record the log's start before the next commit (6.x's
    /// `journal_reset` defers that write after a clean mount).
    flushed: bool,
    /// The transaction a task is checkpointing (`j_checkpoint_mutex`).
    checkpointing: Option<Tid>,
    handles: BTreeMap<HandleId, Handle>,
    next_handle: u64,
    /// Handles started, and handles whose transaction has committed.
    handles_started: u64,
    handles_committed: u64,
}

impl Journal {
    /// `journal_init_inode` + `journal_reset` + `load_superblock`.
    pub fn new(cfg: JournalConfig) -> Result<Journal, FsError> {
        if cfg.flavour == Flavour::Jbd && cfg.profile >= Profile::V6 {
            return Err(FsError::Unsupported(
                "ext3's jbd in a 6.x kernel (removed in 4.3)".into(),
            ));
        }
        if cfg.async_commit && cfg.flavour == Flavour::Jbd {
            return Err(FsError::Invalid(
                "journal_async_commit is an ext4 (jbd2) mount option".into(),
            ));
        }
        if cfg.maxlen < MIN_JOURNAL_BLOCKS {
            return Err(FsError::Invalid(format!(
                "journal of {} blocks is smaller than JFS_MIN_JOURNAL_BLOCKS ({MIN_JOURNAL_BLOCKS})",
                cfg.maxlen
            )));
        }
        if !cfg.runs.is_empty() && cfg.runs.iter().map(|r| r.1).sum::<u64>() != cfg.maxlen {
            return Err(FsError::Invalid(format!(
                "journal runs {:?} do not add up to {} blocks",
                cfg.runs, cfg.maxlen
            )));
        }
        if cfg.blocksize < 1024 {
            return Err(FsError::Invalid(format!(
                "journal block size {}",
                cfg.blocksize
            )));
        }
        Ok(Journal {
            ops: WriteOps::of(cfg.flavour, cfg.profile),
            max_transaction_buffers: cfg.maxlen / 4,
            log: checkpoint::Log::new(cfg.area_start, cfg.maxlen, &cfg.runs),
            running: None,
            committing: None,
            commit: None,
            transaction_sequence: 1,
            commit_sequence: 0,
            commit_request: 0,
            average_commit_time: 0,
            last_sync_writer: None,
            checkpointing: None,
            flushed: cfg.flavour == Flavour::Jbd2 && cfg.profile >= Profile::V6,
            handles: BTreeMap::new(),
            next_handle: 0,
            handles_started: 0,
            handles_committed: 0,
            cfg,
        })
    }

    pub fn config(&self) -> &JournalConfig {
        &self.cfg
    }

    /// `j_commit_sequence`: the last committed transaction.
    pub fn commit_sequence(&self) -> Tid {
        self.commit_sequence
    }

    /// The running transaction's tid, if any.
    pub fn running_tid(&self) -> Option<Tid> {
        self.running.as_ref().map(|t| t.tid)
    }

    /// The committing transaction's tid, if any.
    pub fn committing_tid(&self) -> Option<Tid> {
        self.committing.as_ref().map(|t| t.tid)
    }

    /// The transaction a handle belongs to (what `ext3_mark_inode_dirty` stores
    /// as `i_sync_tid`).
    pub fn handle_tid(&self, h: HandleId) -> Option<Tid> {
        self.handles.get(&h).map(|x| x.tid)
    }

    /// `log_wait_commit`'s condition: `tid` has committed.
    pub fn committed(&self, tid: Tid) -> bool {
        !tid_gt(tid, self.commit_sequence)
    }

    /// `__log_start_commit(journal, tid)` as in 2.6.3x: request a commit of
    /// `tid` unless one as recent was already requested (`tid_geq`); wake the
    /// commit thread. Returns whether a commit was started (ext4_sync_file's
    /// test: when it was not, 2.6.3x ext4 only issues a flush).
    pub fn log_start_commit(&mut self, tid: Tid) -> (bool, Vec<Action>) {
        if !tid_geq(self.commit_request, tid) {
            self.commit_request = tid;
            (true, vec![Action::WakeCommitThread])
        } else {
            (false, Vec::new())
        }
    }

    /// `journal_start_commit` (`ext3_sync_fs`, `ext4_sync_fs`): request a
    /// commit of the running transaction, or name the committing one; the tid
    /// to wait for, if any.
    pub fn start_commit(&mut self) -> (Option<Tid>, Vec<Action>) {
        if let Some(tid) = self.running_tid() {
            let (_, actions) = self.log_start_commit(tid);
            (Some(tid), actions)
        } else {
            (self.committing_tid(), Vec::new())
        }
    }

    /// `journal_trans_will_send_data_barrier` (`ext3_sync_file`, 2.6.32+):
    /// whether the commit of `tid` will still send a barrier (or flush) that
    /// covers data written before it. No when barriers are off, when `tid` has
    /// committed, or when its commit block has been sent (`T_COMMIT_RECORD`);
    /// then fsync issues its own `blkdev_issue_flush`.
    pub fn trans_will_send_data_barrier(&self, tid: Tid) -> bool {
        if !self.cfg.barrier || tid_geq(self.commit_sequence, tid) {
            return false;
        }
        match (&self.committing, &self.commit) {
            (Some(t), Some(c)) if t.tid == tid => !c.commit_block_sent(),
            _ => true,
        }
    }

    /// `commit_timeout`: the commit timer fired; wake the commit thread (it
    /// commits the running transaction once `t_expires` has passed).
    pub fn commit_timer(&mut self, _now: Instant) -> Vec<Action> {
        vec![Action::WakeCommitThread]
    }

    /// Handles started, and handles whose transaction has committed.
    pub fn handle_counts(&self) -> (u64, u64) {
        (self.handles_started, self.handles_committed)
    }

    /// Log-area state: (head, tail, free) as journal block numbers.
    pub fn log_state(&self) -> (u64, u64, u64) {
        self.log.state()
    }

    /// The invariants: every handle started is open in the running or
    /// committing transaction or has committed with exactly one transaction;
    /// the log's free count matches head and tail; no transaction holds more
    /// credits than a quarter of the journal.
    pub fn check_invariants(&self) {
        let open: u64 = [&self.running, &self.committing]
            .iter()
            .filter_map(|t| t.as_ref())
            .map(|t| t.handles.len() as u64)
            .sum();
        assert_eq!(
            self.handles_started,
            self.handles_committed + open,
            "a handle is in no transaction or in two"
        );
        for t in [&self.running, &self.committing].into_iter().flatten() {
            assert!(t.outstanding_credits <= self.max_transaction_buffers);
            for h in self.handles.values() {
                if h.tid == t.tid {
                    assert!(
                        t.handles.contains(&h.id),
                        "open handle not in its transaction"
                    );
                }
            }
        }
        self.log.check();
    }
}
