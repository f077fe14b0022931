//! ext3's journal (`fs/jbd`) and ext4's (`fs/jbd2`) in the running machine:
//! the glue between the sans-IO `iostack_fs::jbd::Journal` and the tasks.
//!
//! ext3: buffered writes open handles (`ext3_write_begin` → `journal_start`,
//! the allocation's `journal_dirty_metadata`, `ext3_ordered_write_end`'s
//! `journal_dirty_data`, `ext3_mark_inode_dirty` when `i_disksize` grows,
//! `journal_stop`); a new file's first write carries `ext3_new_inode`'s handle.
//! ext4 (delayed allocation): the create's handle, 2.6.3x/3.x
//! `ext4_da_write_begin`'s one-credit handle per page (the inode when `i_size`
//! grows), and the handle `ext4_da_writepages` holds around each allocation
//! at writeback (bitmap, descriptor, inode; `ext4_jbd2_file_inode` files the
//! inode for `data=ordered`), run by whichever task writes back. Both:
//! `file_update_time` at each `write()` dirties the inode when the coarse clock
//! moved past `i_mtime` at the file system's granularity (ext3 seconds, ext4
//! nanoseconds: every tick).
//!
//! The commit thread (`kjournald`, `jbd2/sdXN-8`) is a kernel task that runs
//! `journal_commit_transaction`'s phases and submits their I/O through the
//! block layer with each era's flags; fsync ends in `ext3_sync_file` or
//! `ext4_sync_file` (commit and wait, a cache flush when nothing is committed,
//! 3.x/6.x's `needs_barrier`); the commit timer (`commit_timeout`) wakes the
//! thread; committed metadata becomes dirty in the block device's page cache
//! and leaves the checkpoint list when writeback writes it in place.
//!
//! Not modelled: a writer checkpointing the log itself (`__log_wait_for_space`
//! → `log_do_checkpoint`; a run that needs it ends with an error), the commit
//! waiting for ordered data another task has under writeback (only the
//! buffers it submits are waited for), directory blocks beyond the root's
//! first, extent index and leaf blocks, nested handles, jbd2's fast commits.

use crate::task::{Blocked, HandleWork, JournalOp, JournalRun, KThread};
use crate::world::{Ev, Simulation};
use iostack_core::{EndIo, Profile, ReqFlags, TaskId};
use iostack_des::{Duration, Instant};
use iostack_fs::jbd::{
    Access, Action, DataMode, Flavour, Journal, JournalConfig, LogBlock, Start, Stop, Tid, Until,
};

/// The journal thread's pid in the traces.
pub(crate) const KJOURNALD_PID: u32 = 192;

/// `ext3_writepage_trans_blocks` for a 4 KiB-block, non-journalled-data inode
/// without quota: `2 * (bpp + indirects) + 2` with one block per page and
/// three indirect levels.
const WRITEPAGE_CREDITS: u64 = 10;
/// `ext3_create`'s `EXT3_DATA_TRANS_BLOCKS + EXT3_INDEX_EXTRA_TRANS_BLOCKS + 3`
/// (8 + 8 + 3 without quota).
const CREATE_CREDITS: u64 = 19;
/// `ext4_create`'s `EXT4_DATA_TRANS_BLOCKS + EXT4_INDEX_EXTRA_TRANS_BLOCKS + 3`
/// with extents and without quota (`EXT4_SINGLEDATA_TRANS_BLOCKS` 20 + 3
/// xattr − 2, + 8, + 3).
const EXT4_CREATE_CREDITS: u64 = 32;
/// `ext4_da_writepages_trans_blocks` for an in-inode extent tree without quota
/// (`ext4_meta_trans_blocks` of one extent: index blocks, a bitmap and a
/// descriptor per group touched, the inode, the superblock); an upper bound
/// of what the simulated allocation dirties.
const EXT4_WRITEPAGES_CREDITS: u64 = 16;
/// `ext3_dirty_inode`/`ext4_dirty_inode`: `journal_start(journal, 2)`.
const DIRTY_INODE_CREDITS: u64 = 2;

/// Whether a handle could go on.
enum Step {
    Done,
    Blocked,
    Failed(String),
}

/// One `write()` call's part that a buffered-write step copied: pages
/// `[first, first + n)` of `ino`.
pub(crate) struct WriteCall<'a> {
    pub ino: u32,
    pub first: u64,
    pub n: u64,
    /// What `write_begin`'s allocation dirtied (ext3).
    pub meta: &'a [(u64, u64)],
    /// `i_size` grew to this.
    pub grew_to: Option<u64>,
    /// The file is created by this write (its first).
    pub create: bool,
    /// The step copies the call's first page: `file_update_time` runs.
    pub call_start: bool,
}

/// The journal of the machine's file system, if it runs one: ext3 with
/// `fs/ext3/journal=1`, ext4 with `fs/ext4/journal=1`.
pub(crate) fn build(
    fs: &dyn iostack_fs::mount::MountedFs,
    t: &iostack_core::Tunables,
) -> Result<Option<JournalRun>, crate::error::SimError> {
    let Some((start, len)) = fs.journal_area() else {
        return Ok(None);
    };
    let (flavour, fsname) = match fs.name() {
        "ext3" => (Flavour::Jbd, "ext3"),
        "ext4" => (Flavour::Jbd2, "ext4"),
        _ => return Ok(None),
    };
    let opt = |o: &str| format!("fs/{fsname}/{o}");
    if !t.get_bool(&opt("journal")) {
        return Ok(None);
    }
    let mut cfg = JournalConfig::defaults(flavour, t.profile(), start, len);
    cfg.runs = fs.journal_runs();
    cfg.barrier = t.get_bool(&opt("barrier"));
    cfg.commit_interval = Duration::ms(t.get_u64(&opt("commit")));
    cfg.data = match t.get_enum(&opt("data")) {
        "writeback" => DataMode::Writeback,
        "journal" => DataMode::Journal,
        _ => DataMode::Ordered,
    };
    if flavour == Flavour::Jbd2 {
        cfg.async_commit = t.get_bool("fs/ext4/journal_async_commit");
    }
    let journal =
        Journal::new(cfg).map_err(|e| crate::error::SimError(format!("{fsname} journal: {e}")))?;
    Ok(Some(JournalRun {
        journal,
        inflight: 0,
        waiting_io: false,
        commit_waiters: Vec::new(),
        start_waiters: Vec::new(),
        tids: Default::default(),
        mtime: Default::default(),
        ops: Default::default(),
    }))
}

/// The commit thread's name: `kjournald`, or jbd2's `jbd2/%s-8` with the
/// journal device's name (`kjournald2` is its function).
pub(crate) fn thread_name(j: &JournalRun, m: &crate::machine::Machine) -> String {
    match j.journal.config().flavour {
        Flavour::Jbd => "kjournald".into(),
        Flavour::Jbd2 => {
            let dev = m.part_name().unwrap_or_else(|| m.disk_name.clone());
            format!("jbd2/{dev}-8")
        }
    }
}

impl Simulation {
    fn kjournald(&self) -> TaskId {
        self.tasks.kthread(KThread::Kjournald)
    }

    fn flavour(&self) -> Option<Flavour> {
        self.jbd.as_ref().map(|j| j.journal.config().flavour)
    }

    /// The handles of a buffered write's step: the file's creation (its
    /// first write), `file_update_time`, then per page ext3's
    /// `ext3_write_begin` … `ext3_ordered_write_end` or ext4's
    /// `ext4_da_write_begin` … `ext4_da_write_end` (2.6.3x and 3.x; 6.x
    /// starts none for a delayed page).
    pub(crate) fn journal_write_op(&mut self, c: &WriteCall, now: Instant) -> Option<JournalOp> {
        let flavour = self.flavour()?;
        let mut op = JournalOp::default();
        if c.create {
            let credits = match flavour {
                Flavour::Jbd => CREATE_CREDITS,
                Flavour::Jbd2 => EXT4_CREATE_CREDITS,
            };
            op.handles.push_back(HandleWork {
                ino: c.ino,
                credits,
                meta: self.fs.create_meta(c.ino),
                data: None,
                datasync: false,
                sync_tid: true,
            });
            let t = self.coarse_time(now);
            self.jbd.as_mut()?.mtime.insert(c.ino, t);
        }
        if c.call_start {
            op.handles.extend(self.file_update_time(c.ino, now));
        }
        let inode = self.fs.inode_block(c.ino);
        let page = iostack_mm::PAGE_SIZE;
        let per_page = flavour == Flavour::Jbd || self.cfg.tunables.profile() < Profile::V6;
        for l in (c.first..c.first + c.n).filter(|_| per_page) {
            let mut blocks: Vec<u64> = c.meta.iter().filter(|m| m.0 == l).map(|m| m.1).collect();
            let grows = c
                .grew_to
                .is_some_and(|end| (l + 1) * page > end.saturating_sub(c.n * page));
            if grows {
                // ext3_ordered_write_end: i_disksize grows → ext3_mark_inode_dirty;
                // ext4: generic_write_end's mark_inode_dirty → ext4_dirty_inode.
                blocks.extend(inode);
            }
            let (credits, data, datasync) = match flavour {
                Flavour::Jbd => (WRITEPAGE_CREDITS, Some(l), !blocks.is_empty()),
                // ext4_da_write_begin: ext4_journal_start(inode, 1); the page is
                // delayed, no data is filed, i_datasync_tid moves at allocation.
                Flavour::Jbd2 => (1, None, false),
            };
            let sync_tid = !blocks.is_empty();
            op.handles.push_back(HandleWork {
                ino: c.ino,
                credits,
                meta: blocks,
                data,
                datasync,
                sync_tid,
            });
        }
        Some(op)
    }

    /// The coarse clock (`current_fs_time`: the tick's time) at the file
    /// system's timestamp granularity (`s_time_gran`): ext3 keeps seconds,
    /// ext4's large inodes nanoseconds, so every tick (HZ 1000) is new.
    fn coarse_time(&self, now: Instant) -> u64 {
        let gran = match self.flavour() {
            Some(Flavour::Jbd2) => Duration::ms(1).as_ns(),
            _ => Duration::secs(1).as_ns(),
        };
        now.0 / gran
    }

    /// `file_update_time` (`__generic_file_aio_write`, 6.x's `file_modified`):
    /// a new mtime marks the inode dirty → `ext3_dirty_inode`/`ext4_dirty_inode`,
    /// a handle that journals the inode block (`i_sync_tid` only).
    fn file_update_time(&mut self, ino: u32, now: Instant) -> Option<HandleWork> {
        let t = self.coarse_time(now);
        let j = self.jbd.as_mut()?;
        if j.mtime.insert(ino, t) == Some(t) {
            return None;
        }
        Some(HandleWork {
            ino,
            credits: DIRTY_INODE_CREDITS,
            meta: self.fs.inode_block(ino).into_iter().collect(),
            data: None,
            datasync: false,
            sync_tid: true,
        })
    }

    /// Queue journal work on a task behind what it already has.
    pub(crate) fn add_journal_op(&mut self, task: TaskId, op: JournalOp) {
        let Some(j) = self.jbd.as_mut() else {
            return;
        };
        let e = j.ops.entry(task).or_default();
        e.handles.extend(op.handles);
    }

    /// `ext4_da_writepages` held a handle around each allocation writeback
    /// just made (`mpage_da_map_blocks`: the bitmap, descriptor and inode;
    /// `ext4_jbd2_file_inode` files the inode for `data=ordered`;
    /// `ext4_update_inode_fsync_trans(…, 1)`); the writing task runs them
    /// before its next step.
    pub(crate) fn journal_writeback_alloc(&mut self, task: TaskId) {
        let allocs = self.fs.take_alloc_meta();
        if allocs.is_empty() || self.flavour() != Some(Flavour::Jbd2) {
            return;
        }
        let mut op = JournalOp::default();
        for (ino, lblk, meta) in allocs {
            op.handles.push_back(HandleWork {
                ino,
                credits: EXT4_WRITEPAGES_CREDITS.max(meta.len() as u64),
                meta,
                data: Some(lblk),
                datasync: true,
                sync_tid: true,
            });
        }
        self.add_journal_op(task, op);
    }

    /// Run a task's pending journal work as far as it goes; false when the
    /// task sleeps in the journal (it retries when woken).
    pub(crate) fn run_journal_op(&mut self, task: TaskId, now: Instant) -> bool {
        let Some(mut op) = self.jbd.as_mut().and_then(|j| j.ops.remove(&task)) else {
            return true;
        };
        loop {
            match self.journal_handle_step(task, &mut op, now) {
                Step::Done if op.handles.is_empty() => return true,
                Step::Done => {}
                Step::Blocked => {
                    let j = self.jbd.as_mut().expect("journal");
                    j.ops.insert(task, op);
                    j.start_waiters.push(task);
                    self.tasks.block(task, Blocked::OnJournal);
                    return false;
                }
                Step::Failed(e) => {
                    self.journal_failed(task, &e);
                    return true;
                }
            }
        }
    }

    /// A journal operation that cannot be simulated ends the process's job
    /// with the reason; a kernel thread's ends the first live process's.
    fn journal_failed(&mut self, task: TaskId, e: &str) {
        let fsname = self.fs.name();
        let pi = match self.tasks.kind(task) {
            crate::task::TaskKind::Process(i) => Some(i as usize),
            _ => (0..self.procs.len())
                .find(|&i| self.tasks.blocked(TaskId(i as u32)) != Blocked::Done),
        };
        if let Some(pi) = pi {
            self.procs[pi].result.error = Some(format!("{fsname} journal: {e}"));
        }
    }

    /// `journal_start`, the handle's `journal_dirty_metadata`/`_data` calls,
    /// `journal_stop` for the first handle of `op`.
    fn journal_handle_step(&mut self, task: TaskId, op: &mut JournalOp, now: Instant) -> Step {
        let pid = self.tasks.get(task).pid;
        let w = op.handles.front().expect("a handle to run");
        let ino = w.ino;
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
            if let Err(e) = j.dirty_data(h, ino, l) {
                return Step::Failed(e.to_string());
            }
        }
        let tid = j.handle_tid(h).expect("open handle");
        match j.stop(now, h) {
            Stop::BatchSleep { .. } => unreachable!("only synchronous handles batch"),
            Stop::Done { actions, .. } => {
                let w = op.handles.pop_front().expect("the handle run");
                op.open = None;
                let tids = self.jbd.as_mut().expect("journal").tids.entry(ino);
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

    /// `->fsync` after `filemap_write_and_wait`, per kernel. ext3_sync_file
    /// (2.6.32-2.6.38) and ext4_sync_file up to 2.6.3x: `log_start_commit` of
    /// the inode's tid and `log_wait_commit`, or, when it starts nothing, a
    /// cache flush if barriers are on. ext4_sync_file of 3.x and 6.x
    /// (`ext4_fsync_journal`): `needs_barrier` when barriers are on and the
    /// commit will not send one (`jbd2_trans_will_send_data_barrier`), then
    /// `jbd2_complete_transaction`, then `blkdev_issue_flush` if needed. True
    /// when fsync is done.
    pub(crate) fn journal_fsync(
        &mut self,
        task: TaskId,
        ino: u32,
        datasync: bool,
        now: Instant,
    ) -> bool {
        if self.xlog.is_some() {
            return self.xfs_fsync(task, ino, datasync, now);
        }
        let profile = self.cfg.tunables.profile();
        let Some(j) = self.jbd.as_mut() else {
            return true;
        };
        let (sync_tid, datasync_tid) = j.tids.get(&ino).copied().unwrap_or((0, 0));
        let tid = if datasync { datasync_tid } else { sync_tid };
        let barrier = j.journal.config().barrier;
        if j.journal.config().flavour == Flavour::Jbd2 && profile >= Profile::V3_10 {
            let needs_barrier = barrier && !j.journal.trans_will_send_data_barrier(tid);
            let wait = !j.journal.committed(tid);
            let (_, actions) = j.journal.log_start_commit(tid);
            self.journal_actions(actions, now);
            let pi = self.proc_of(task) as usize;
            self.procs[pi].jbarrier = needs_barrier;
            if wait {
                self.log_wait_commit(task, tid, now);
                return false;
            }
            return !self.fsync_barrier(task, now);
        }
        let (started, actions) = j.journal.log_start_commit(tid);
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
        let pi = self.proc_of(task) as usize;
        self.procs[pi].jbarrier = true;
        !self.fsync_barrier(task, now)
    }

    /// fsync's own `blkdev_issue_flush` when `jbarrier` says so: an empty
    /// barrier (`WRITE_FLUSH` from 2.6.37, 6.x's `REQ_PREFLUSH` write),
    /// waited for. True when the task now waits for it.
    pub(crate) fn fsync_barrier(&mut self, task: TaskId, now: Instant) -> bool {
        let pi = self.proc_of(task) as usize;
        if !std::mem::take(&mut self.procs[pi].jbarrier) {
            return false;
        }
        // journal_bio's path for a process (no kjournald count).
        self.queue_fs_bio(task, (0, 0), ReqFlags::WRITE_FLUSH, EndIo::Journal, now);
        self.procs[pi].jflush = true;
        self.tasks.block(task, Blocked::OnJournal);
        if !self.drain_pending(task, now) {
            self.unplug(task, now);
        }
        true
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
        // 2.6.39+: blk_finish_plug before the commit waits for its log I/O;
        // wait_on_buffer → sync_buffer → blk_run_address_space: the queue is
        // kicked before kjournald sleeps on its I/O.
        self.close_batch_plug(task, now);
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
                Action::WriteOrderedInodes { inodes, flags, .. } => {
                    self.write_ordered_inodes(kj, &inodes, flags, now)
                }
                Action::WaitOrderedData { .. }
                | Action::WaitLog { .. }
                | Action::WaitCommitBlock { .. } => self.kjournald_wait(now),
                Action::WriteLog { blocks, flags, .. } => {
                    // journal_commit_transaction (2.6.39+): blk_start_plug before
                    // the revoke, descriptor and metadata blocks.
                    self.open_batch_plug(kj);
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
                Action::WriteJournalSuper { block, flags } => {
                    self.journal_bio(kj, block, 1, flags, now)
                }
                Action::Checkpoint { .. } => {
                    unreachable!("only a writer checkpointing asks for this")
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
        self.queue_fs_bio(task, (block, blocks), flags, EndIo::Journal, now);
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

    /// jbd2's `journal_submit_inode_data_buffers`: each ordered inode's dirty
    /// pages over `0..i_size` through `generic_writepages` (`WB_SYNC_ALL`);
    /// `->writepage` writes the mapped ones and leaves delayed pages dirty.
    fn write_ordered_inodes(&mut self, kj: TaskId, inodes: &[u32], flags: ReqFlags, now: Instant) {
        let mut blocks = Vec::new();
        for &ino in inodes {
            let Some(&map) = self.vm.by_ino.get(&ino) else {
                continue;
            };
            let m = &self.vm.maps[map as usize];
            let mut at = 0;
            while let Some(l) = m.dirty.next_set(at, m.size_pages) {
                blocks.push((ino, l));
                at = l + 1;
            }
        }
        self.write_ordered_data(kj, &blocks, flags, now);
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
            if newly > 0 {
                // 2.4: a metadata buffer dirtied for its home location joins
                // the dirty list that bdflush and kupdated write.
                self.vm.mark_buffers_dirty(0, b, now);
            }
        }
    }

    /// A journal bio completed: kjournald's count, or a task's fsync flush.
    pub(crate) fn journal_bio_done(&mut self, task: TaskId, now: Instant) {
        if self.jbd.is_none() && self.xlog.is_none() {
            return;
        }
        if self.jbd.is_none() || task != self.kjournald() {
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
