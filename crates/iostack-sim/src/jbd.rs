//! ext3's journal (`fs/jbd`) in the running machine: the glue between the
//! sans-IO `iostack_fs::jbd::Journal` and the tasks. Buffered writes open
//! handles (`ext3_write_begin` → `journal_start`, the allocation's
//! `journal_dirty_metadata`, `ext3_ordered_write_end`'s `journal_dirty_data`,
//! `ext3_mark_inode_dirty` when `i_disksize` grows, `journal_stop`); a new
//! file's first write carries `ext3_new_inode`'s handle; `kjournald` is a
//! kernel task that runs `journal_commit_transaction`'s phases and submits
//! their I/O through the block layer with each era's flags; fsync ends in
//! `ext3_sync_file` (`log_start_commit` + `log_wait_commit`, or a cache flush
//! when nothing is committed and barriers are on); the commit timer
//! (`commit_timeout`) wakes kjournald; committed metadata becomes dirty in the
//! block device's page cache and leaves the checkpoint list when writeback
//! writes it in place.
//!
//! Not modelled: a writer checkpointing the log itself (`__log_wait_for_space`
//! → `log_do_checkpoint`; a run that needs it ends with an error), kjournald
//! waiting for ordered data another task has under writeback (jbd's
//! `t_locked_list`: only the buffers it submits are waited for), directory
//! blocks, timestamps (`file_update_time`), nested handles.

use crate::task::{Blocked, HandleWork, JournalOp, JournalRun, KThread};
use crate::world::{Ev, Simulation};
use iostack_block::Bio;
use iostack_core::{BioOwner, EndIo, ReqFlags, TaskId};
use iostack_des::{Duration, Instant};
use iostack_fs::jbd::{
    Access, Action, DataMode, Flavour, Journal, JournalConfig, LogBlock, Start, Stop, Tid, Until,
};

/// kjournald's pid in the traces.
pub(crate) const KJOURNALD_PID: u32 = 192;

/// `ext3_writepage_trans_blocks` for a 4 KiB-block, non-journalled-data inode
/// without quota: `2 * (bpp + indirects) + 2` with one block per page and
/// three indirect levels.
const WRITEPAGE_CREDITS: u64 = 10;
/// `ext3_create`'s `EXT3_DATA_TRANS_BLOCKS + EXT3_INDEX_EXTRA_TRANS_BLOCKS + 3`
/// (8 + 8 + 3 without quota).
const CREATE_CREDITS: u64 = 19;

/// Whether a handle could go on.
enum Step {
    Done,
    Blocked,
    Failed(String),
}

/// The journal of the machine's file system, if it runs one: ext3 with
/// `fs/ext3/journal=1`.
pub(crate) fn build(
    fs: &dyn iostack_fs::mount::MountedFs,
    t: &iostack_core::Tunables,
) -> Result<Option<JournalRun>, crate::error::SimError> {
    let Some((start, len)) = fs.journal_area() else {
        return Ok(None);
    };
    if fs.name() != "ext3" || !t.get_bool("fs/ext3/journal") {
        return Ok(None);
    }
    let mut cfg = JournalConfig::defaults(Flavour::Jbd, t.profile(), start, len);
    cfg.barrier = t.get_bool("fs/ext3/barrier");
    cfg.commit_interval = Duration::ms(t.get_u64("fs/ext3/commit"));
    cfg.data = match t.get_enum("fs/ext3/data") {
        "writeback" => DataMode::Writeback,
        "journal" => DataMode::Journal,
        _ => DataMode::Ordered,
    };
    let journal =
        Journal::new(cfg).map_err(|e| crate::error::SimError(format!("ext3 journal: {e}")))?;
    Ok(Some(JournalRun {
        journal,
        inflight: 0,
        waiting_io: false,
        commit_waiters: Vec::new(),
        start_waiters: Vec::new(),
        tids: Default::default(),
    }))
}

impl Simulation {
    fn kjournald(&self) -> TaskId {
        self.tasks.kthread(KThread::Kjournald)
    }

    /// The handles of a buffered write of pages `[first, first + n)` of `ino`:
    /// one per page (`ext3_write_begin` … `ext3_ordered_write_end`), the first
    /// preceded by the file's creation when `create`.
    pub(crate) fn journal_write_op(
        &mut self,
        ino: u32,
        first: u64,
        n: u64,
        meta: &[(u64, u64)],
        grew_to: Option<u64>,
        create: bool,
    ) -> Option<JournalOp> {
        self.jbd.as_ref()?;
        let mut op = JournalOp {
            ino,
            ..Default::default()
        };
        if create {
            op.handles.push_back(HandleWork {
                credits: CREATE_CREDITS,
                meta: self.fs.create_meta(ino),
                data: None,
                datasync: false,
                sync_tid: true,
            });
        }
        let inode = self.fs.inode_block(ino);
        let page = iostack_mm::PAGE_SIZE;
        for l in first..first + n {
            let mut blocks: Vec<u64> = meta.iter().filter(|m| m.0 == l).map(|m| m.1).collect();
            let grows = grew_to.is_some_and(|end| (l + 1) * page > end.saturating_sub(n * page));
            if grows {
                // ext3_ordered_write_end: i_disksize grows → ext3_mark_inode_dirty.
                blocks.extend(inode);
            }
            let datasync = !blocks.is_empty();
            op.handles.push_back(HandleWork {
                credits: WRITEPAGE_CREDITS,
                meta: blocks,
                data: Some(l),
                datasync,
                sync_tid: datasync,
            });
        }
        Some(op)
    }

    /// Run a task's pending journal operation as far as it goes; false when
    /// the task sleeps in the journal (it retries when woken).
    pub(crate) fn run_journal_op(&mut self, task: TaskId, now: Instant) -> bool {
        let pi = self.proc_of(task) as usize;
        let Some(mut op) = self.procs[pi].jop.take() else {
            return true;
        };
        loop {
            match self.journal_handle_step(task, &mut op, now) {
                Step::Done if op.handles.is_empty() => return true,
                Step::Done => {}
                Step::Blocked => {
                    self.procs[pi].jop = Some(op);
                    self.tasks.block(task, Blocked::OnJournal);
                    self.jbd.as_mut().expect("journal").start_waiters.push(task);
                    return false;
                }
                Step::Failed(e) => {
                    self.procs[pi].result.error = Some(format!("ext3 journal: {e}"));
                    return true;
                }
            }
        }
    }

    /// `journal_start`, the handle's `journal_dirty_metadata`/`_data` calls,
    /// `journal_stop` for the first handle of `op`.
    fn journal_handle_step(&mut self, task: TaskId, op: &mut JournalOp, now: Instant) -> Step {
        let pid = self.tasks.get(task).pid;
        let w = op.handles.front().expect("a handle to run");
        let (h, done) = match op.open {
            Some(o) => o,
            None => {
                let j = self.jbd.as_mut().expect("journal");
                match j.journal.start(now, pid, w.credits) {
                    Ok(Start::Started(h)) => (h, 0),
                    Ok(Start::Wait { actions, until }) => {
                        if until == Until::CheckpointWritten {
                            return Step::Failed(
                                "the log is full and a writer would checkpoint it \
                                 (log_do_checkpoint), which is not simulated"
                                    .into(),
                            );
                        }
                        self.journal_actions(actions, now);
                        return Step::Blocked;
                    }
                    Err(e) => return Step::Failed(e.to_string()),
                }
            }
        };
        op.open = Some((h, done));
        let j = &mut self.jbd.as_mut().expect("journal").journal;
        for (i, &b) in w.meta.iter().enumerate().skip(done) {
            match j.dirty_metadata(h, b) {
                Ok(Access::Done) => {}
                Ok(Access::WaitShadow { .. }) => {
                    op.open = Some((h, i));
                    return Step::Blocked;
                }
                Err(e) => return Step::Failed(e.to_string()),
            }
        }
        if let Some(l) = w.data {
            if let Err(e) = j.dirty_data(h, op.ino, l) {
                return Step::Failed(e.to_string());
            }
        }
        let tid = j.handle_tid(h).expect("open handle");
        match j.stop(now, h) {
            Stop::BatchSleep { .. } => unreachable!("only synchronous handles batch"),
            Stop::Done { actions, .. } => {
                let w = op.handles.pop_front().expect("the handle run");
                op.open = None;
                let tids = self.jbd.as_mut().expect("journal").tids.entry(op.ino);
                let e = tids.or_insert((0, 0));
                if w.sync_tid {
                    e.0 = tid;
                }
                if w.datasync {
                    e.1 = tid;
                }
                self.journal_actions(actions, now);
                Step::Done
            }
        }
    }

    /// `ext3_sync_file` (2.6.32-2.6.38) after `filemap_write_and_wait`: commit
    /// the inode's transaction and wait, or, when `log_start_commit` starts
    /// nothing, flush the cache if barriers are on. True when fsync is done.
    pub(crate) fn journal_fsync(
        &mut self,
        task: TaskId,
        ino: u32,
        datasync: bool,
        now: Instant,
    ) -> bool {
        let Some(j) = self.jbd.as_mut() else {
            return true;
        };
        let (sync_tid, datasync_tid) = j.tids.get(&ino).copied().unwrap_or((0, 0));
        let tid = if datasync { datasync_tid } else { sync_tid };
        let (started, actions) = j.journal.log_start_commit(tid);
        let barrier = j.journal.config().barrier;
        if started {
            let wait = !j.journal.committed(tid);
            self.journal_actions(actions, now);
            if wait {
                self.log_wait_commit(task, tid, now);
            }
            return !wait;
        }
        if !barrier {
            return true;
        }
        // blkdev_issue_flush: an empty barrier (WRITE_FLUSH from 2.6.37),
        // waited for.
        self.journal_bio(task, 0, 0, ReqFlags::WRITE_FLUSH, now);
        let pi = self.proc_of(task) as usize;
        self.procs[pi].jflush = true;
        self.tasks.block(task, Blocked::OnJournal);
        if !self.drain_pending(task, now) {
            self.unplug(task, now);
        }
        false
    }

    /// `log_wait_commit`: with the blk_yield series the caller first yields
    /// the queue to the journal thread (`blk_yield(journal->j_dev's queue,
    /// journal->j_task)`, PATCH 3/4), then sleeps until `tid` has committed.
    fn log_wait_commit(&mut self, task: TaskId, tid: Tid, now: Instant) {
        let ctx = self.tasks.get(task).ctx();
        self.queue
            .blk_yield(now, ctx, KJOURNALD_PID, &mut self.tracer, &mut self.out);
        let j = self.jbd.as_mut().expect("journal");
        j.commit_waiters.push((task, tid));
        self.tasks.block(task, Blocked::OnJournal);
    }

    /// One step of kjournald: submit what it queued, or, with no I/O in
    /// flight, run the commit (`kjournald` → `journal_commit_transaction`).
    pub(crate) fn kjournald_step(&mut self, now: Instant) {
        let task = self.kjournald();
        if self.drain_pending(task, now) {
            return;
        }
        let j = self.jbd.as_mut().expect("kjournald runs a journal");
        if j.inflight == 0 {
            j.waiting_io = false;
            let actions = j.journal.kjournald(now);
            self.journal_actions(actions, now);
            if self.drain_pending(task, now) {
                return;
            }
        }
        // wait_on_buffer → sync_buffer → blk_run_address_space: the queue is
        // kicked before kjournald sleeps on its I/O.
        if self.jbd.as_ref().expect("journal").waiting_io {
            self.unplug(task, now);
        }
    }

    /// The commit timer fired (`commit_timeout`); a run whose processes are all
    /// done does not go on for it.
    pub(crate) fn commit_timer(&mut self, now: Instant) {
        if !self.any_proc_alive() {
            return;
        }
        if let Some(j) = self.jbd.as_mut() {
            let actions = j.journal.commit_timer(now);
            self.journal_actions(actions, now);
        }
    }

    /// Carry out the journal's actions, in order.
    fn journal_actions(&mut self, actions: Vec<Action>, now: Instant) {
        let kj = self.kjournald();
        for a in actions {
            match a {
                Action::WakeCommitThread => {
                    if !self.jbd.as_ref().expect("journal").waiting_io {
                        self.schedule_task(kj, now);
                    }
                }
                Action::ArmCommitTimer { at } => self.evq.schedule(at, Ev::CommitTimer),
                Action::WakeStartWaiters | Action::Unshadow { .. } => self.wake_start_waiters(now),
                Action::WriteOrderedData { blocks, flags, .. } => {
                    self.write_ordered_data(kj, &blocks, flags, now)
                }
                Action::WriteOrderedInodes { .. } => {
                    unreachable!("jbd2's ordered inodes: ext4's journal is not run")
                }
                Action::WaitOrderedData { .. }
                | Action::WaitLog { .. }
                | Action::WaitCommitBlock { .. } => self.kjournald_wait(now),
                Action::WriteLog { blocks, flags, .. } => {
                    for b in blocks {
                        debug_assert!(matches!(
                            b.kind,
                            LogBlock::Descriptor | LogBlock::Metadata { .. } | LogBlock::Revoke
                        ));
                        self.journal_bio(kj, b.block, 1, flags, now);
                    }
                }
                Action::WriteCommitBlock { block, flags, .. } => {
                    self.journal_bio(kj, block, 1, flags, now)
                }
                Action::IssueFlush { .. } => {
                    self.journal_bio(kj, 0, 0, ReqFlags::WRITE_FLUSH, now);
                    self.kjournald_wait(now);
                }
                Action::CommitDone { tid } => self.commit_done(tid, now),
                Action::MetadataDirty { blocks } => self.metadata_dirty(&blocks, now),
                Action::Checkpoint { .. } | Action::WriteJournalSuper { .. } => {
                    unreachable!("only a writer checkpointing asks for these")
                }
                Action::Idle | Action::WaitUpdates { .. } => {}
            }
        }
    }

    /// kjournald waits for its I/O; with none in flight it goes on at once.
    fn kjournald_wait(&mut self, now: Instant) {
        let kj = self.kjournald();
        let j = self.jbd.as_mut().expect("journal");
        if j.inflight == 0 && self.tasks.get(kj).pending.is_empty() {
            self.schedule_task(kj, now);
        } else {
            j.waiting_io = true;
        }
    }

    fn wake_start_waiters(&mut self, now: Instant) {
        let ws = std::mem::take(&mut self.jbd.as_mut().expect("journal").start_waiters);
        for t in ws {
            self.wake_task(t, now);
        }
    }

    /// `j_commit_sequence = tid`: `log_wait_commit` callers of `tid` or earlier
    /// wake; so do tasks waiting to start a handle.
    fn commit_done(&mut self, tid: Tid, now: Instant) {
        let j = self.jbd.as_mut().expect("journal");
        let mut woken = Vec::new();
        j.commit_waiters.retain(|&(t, w)| {
            let done = !iostack_fs::jbd::tid_gt(w, tid);
            if done {
                woken.push(t);
            }
            !done
        });
        for t in woken {
            self.wake_task(t, now);
        }
        self.wake_start_waiters(now);
    }

    /// A buffer of `sectors / 8` blocks at file-system block `block` (an empty
    /// flush when 0), submitted by `task` through `submit_bh`.
    fn journal_bio(
        &mut self,
        task: TaskId,
        block: u64,
        blocks: u32,
        flags: ReqFlags,
        now: Instant,
    ) {
        let spb = self.cfg.machine.fs_block_size as u64 / 512;
        let t = self.tasks.get(task);
        let bio = Bio {
            dev: self.cfg.machine.fs_dev(),
            sector: block * spb,
            sectors: blocks * spb as u32,
            segments: blocks,
            flags,
            pid: t.pid,
            cpu: t.cpu,
            owner: BioOwner {
                task,
                end_io: EndIo::Journal,
            },
            ioprio: t.ioprio,
            submitted_at: now,
            next: None,
        };
        self.tasks.get_mut(task).pending.push_back(bio);
        if task == self.kjournald() {
            self.jbd.as_mut().expect("journal").inflight += 1;
        }
    }

    /// `journal_submit_data_buffers`: the transaction's data buffers still
    /// dirty are written by kjournald, whatever file they belong to.
    fn write_ordered_data(
        &mut self,
        kj: TaskId,
        blocks: &[(u32, u64)],
        flags: ReqFlags,
        now: Instant,
    ) {
        for &(ino, l) in blocks {
            let Some(&map) = self.vm.by_ino.get(&ino) else {
                continue;
            };
            let m = &self.vm.maps[map as usize];
            if !m.dirty.get(l) || m.writeback.get(l) {
                continue;
            }
            let Ok(mb) = self.fs.get_block().get_block(ino, l, 1, false) else {
                continue;
            };
            let Some(pblk) = mb.pblk else {
                continue;
            };
            self.vm.take_page(map as usize, l);
            let before = self.tasks.get(kj).pending.len();
            self.queue_page_bios_flagged(kj, map, l, 1, pblk, flags, now);
            let added = self.tasks.get(kj).pending.len() - before;
            self.jbd.as_mut().expect("journal").inflight += added as u32;
        }
    }

    /// `__journal_refile_buffer` → `mark_buffer_dirty`: committed metadata is
    /// dirty in the block device's page cache; writeback writes it in place.
    fn metadata_dirty(&mut self, blocks: &[u64], now: Instant) {
        for &b in blocks {
            let m = &mut self.vm.maps[0];
            if b >= m.size_pages {
                continue;
            }
            let before = m.nr_cached();
            let newly = m.write_pages(b, 1, now);
            let added = m.nr_cached() - before;
            if added > 0 {
                self.vm.note_cached(0, b, 1);
            }
            self.vm.account_dirtied(0, newly, now);
        }
    }

    /// A journal bio completed: kjournald's count, or a task's fsync flush.
    pub(crate) fn journal_bio_done(&mut self, task: TaskId, now: Instant) {
        if self.jbd.is_none() {
            return;
        }
        if task != self.kjournald() {
            let pi = self.proc_of(task) as usize;
            self.procs[pi].jflush = false;
            self.wake_task(task, now);
            return;
        }
        let j = self.jbd.as_mut().expect("journal");
        j.inflight -= 1;
        if j.inflight == 0 && j.waiting_io {
            j.waiting_io = false;
            self.wake_task(task, now);
        }
    }

    /// Writeback wrote block-device pages `[first, first + n)` in place: their
    /// metadata leaves the checkpoint lists.
    pub(crate) fn journal_metadata_written(&mut self, first: u64, n: u64) {
        if let Some(j) = self.jbd.as_mut() {
            for b in first..first + n {
                j.journal.metadata_written(b);
            }
        }
    }

    /// The journal's own invariants (`--check`, tests): every handle in one
    /// transaction, the log's accounting.
    pub(crate) fn journal_check(&self) {
        if let Some(j) = self.jbd.as_ref() {
            j.journal.check_invariants();
        }
    }
}
