//! The writeback actors as the simulation runs them: pdflush or the per-bdi
//! flusher, throttled dirtiers in `balance_dirty_pages`, and fsync. The
//! mechanisms are mm's (`Vm::writeback_step`: `writeback_inodes` and
//! `write_cache_pages`; `Throttle`; the flusher policy; `Vm::fdatawait`) and
//! the file systems' (`FsWriteback`: each `->writepage(s)`); this file is the
//! glue: it hands each task's job to mm, queues the bios of the runs of pages
//! mm returns, blocks and wakes tasks, and charges CPU time. Every actor
//! advances one pagevec per step, so two writeback callers on one inode
//! interleave as they do on two CPUs.

use crate::task::{Blocked, KThread, TaskKind};
use crate::world::Simulation;
use iostack_core::{ReqFlags, TaskId};
use iostack_des::{Duration, Instant};
use iostack_fs::mount::WritepageKind;
use iostack_fs::writepages::FsWriteback;
use iostack_mm::bdp::CONGESTION_WAIT;
use iostack_mm::writeback_job::JobStep;
use iostack_mm::{BdpAction, FlusherNext, FlusherRun};
use iostack_mm::{FlusherState, Throttle, WbAction, WbJob, WbStep, Wbc, WcpCaller};

impl Simulation {
    /// The `balance_dirty_pages` state of a dirtying task.
    fn throttle_of(&mut self, task: TaskId) -> &mut Option<Throttle> {
        match self.tasks.kind(task) {
            TaskKind::Process(i) => &mut self.procs[i as usize].throttle,
            TaskKind::KernelThread(KThread::LazyInit) => &mut self.lazy.throttle,
            k => panic!("{k:?} does not dirty pages"),
        }
    }

    /// `balance_dirty_pages` for a dirtying task, one step at a time: the
    /// decisions are mm's (`Throttle::next`, `Throttle::job_done`); the task's
    /// own writeback runs as its steps.
    pub(crate) fn throttle_step(&mut self, task: TaskId, now: Instant) {
        loop {
            let writing = self
                .throttle_of(task)
                .as_ref()
                .expect("throttled task")
                .job
                .is_some();
            if writing {
                // The task's own writeback, a step at a time; its state stays
                // in place (`job_of`) while it runs.
                match self.wb_step(task, now) {
                    WbStep::Continue(d) => {
                        self.charge_sys(task, d);
                        self.schedule_task(task, now + d);
                        return;
                    }
                    WbStep::Sleep => return,
                    WbStep::Finished => {}
                }
            }
            let mut th = self.throttle_of(task).take().expect("throttled task");
            let action = if writing {
                th.job_done(&mut self.vm)
            } else {
                th.next(&mut self.vm)
            };
            match action {
                BdpAction::Exit { kick_background } => {
                    if kick_background {
                        self.kick_background(now);
                    }
                    self.schedule_task(task, now);
                    return;
                }
                BdpAction::Wait {
                    timeout,
                    kick_background,
                } => {
                    *self.throttle_of(task) = Some(th);
                    if kick_background {
                        self.kick_background(now);
                    }
                    if self.vm.cfg.io_less {
                        // balance_dirty_pages: wb->dirty_sleep = now.
                        self.queue.dirty_sleep(now);
                    }
                    self.congestion_wait_for(task, now, timeout);
                    return;
                }
                BdpAction::Write => *self.throttle_of(task) = Some(th),
            }
        }
    }

    /// Sleep until write congestion clears or the timeout passes.
    fn congestion_wait_for(&mut self, task: TaskId, now: Instant, d: Duration) {
        let until = now + d;
        self.vm.congestion_waiters.push((task, until));
        self.tasks.block(task, Blocked::OnCongestion);
        self.evq
            .schedule(until, crate::world::Ev::CongestionTimeout(task));
    }

    /// The timeout of a `congestion_wait` fired.
    pub(crate) fn congestion_timeout(&mut self, task: TaskId, now: Instant) {
        if let Some(i) = self
            .vm
            .congestion_waiters
            .iter()
            .position(|&(t, until)| t == task && until == now)
        {
            self.vm.congestion_waiters.swap_remove(i);
            self.wake_task(task, now);
        }
    }

    // ---------------------------------------------------------------- fsync

    /// `filemap_write_and_wait` on the task's file (fsync, fdatasync, end_fsync).
    pub(crate) fn start_fsync(&mut self, pi: u32, map: u32) {
        self.procs[pi as usize].fsync = Some(WbJob::new(Wbc::for_fsync(map)));
    }

    /// One step of an fsync: write the file's dirty pages, then wait for them.
    pub(crate) fn fsync_step(&mut self, pi: u32, now: Instant) -> bool {
        match self.wb_step(TaskId(pi), now) {
            WbStep::Continue(d) => {
                self.charge_sys(TaskId(pi), d);
                self.schedule_task(TaskId(pi), now + d);
                false
            }
            WbStep::Sleep => false,
            WbStep::Finished => {
                let job = self.procs[pi as usize].fsync.take().unwrap();
                let map = job.wbc.only_map.unwrap();
                self.unplug(TaskId(pi), now);
                if std::mem::take(&mut self.procs[pi as usize].fsync_nowait) {
                    // filemap_flush: the pages are under writeback; no wait.
                    return true;
                }
                if self.vm.fdatawait(TaskId(pi), map) {
                    self.tasks.block(TaskId(pi), Blocked::OnPage);
                    self.procs[pi as usize].fsync_waiting = true;
                    false
                } else {
                    true
                }
            }
        }
    }

    // ---------------------------------------------------------------- flusher

    /// Start background writeback if the flusher is idle (mm's
    /// `Vm::kick_background`), and wake it.
    pub(crate) fn kick_background(&mut self, now: Instant) {
        if self.vm.kick_background() {
            self.schedule_task(self.flusher(), now);
        }
    }

    /// The periodic wakeup (`wb_kupdate` / `wb_check_old_data_flush`).
    pub(crate) fn flusher_timer(&mut self, now: Instant) {
        if self.vm.buffers.is_some() {
            // 2.4: kupdated's schedule_timeout; it sets its next timer itself.
            self.kupdate_timer(now);
            return;
        }
        let interval = self.vm.cfg.interval;
        if interval.0 == 0 {
            return;
        }
        if self.vm.kupdate_timer(now) {
            self.schedule_task(self.flusher(), now);
        }
        if self.any_proc_alive() {
            self.evq
                .schedule(now + interval, crate::world::Ev::WritebackTimer);
        }
    }

    /// One step of the flusher thread: a step of its pass, or what follows a
    /// pass as mm's flusher policy decides (`Vm::flusher_pass_done`).
    pub(crate) fn flusher_step(&mut self, now: Instant) {
        let flusher = self.flusher();
        // The handles of the allocations its last step made (ext4's journal).
        if !self.run_journal_op(flusher, now) {
            return;
        }
        match self.vm.flusher_run(now) {
            FlusherRun::Idle => return,
            FlusherRun::NewPass => {
                self.schedule_task(flusher, now);
                return;
            }
            FlusherRun::Step => {}
        }
        match self.wb_step(flusher, now) {
            WbStep::Continue(d) => self.schedule_task(flusher, now + d),
            WbStep::Sleep => {}
            WbStep::Finished => {
                let alive = self.any_proc_alive();
                match self.vm.flusher_pass_done(now, alive) {
                    FlusherNext::Run => self.schedule_task(flusher, now),
                    FlusherNext::CongestionWait => {
                        self.congestion_wait_for(flusher, now, CONGESTION_WAIT)
                    }
                    FlusherNext::Idle => {}
                }
            }
        }
    }

    // ---------------------------------------------------------------- writeback

    /// The writeback job a task is running: the flusher's pass, a process's
    /// fsync, or a throttled dirtier's `balance_dirty_pages` chunk.
    pub(crate) fn job_of(&mut self, task: TaskId) -> &mut WbJob {
        match self.tasks.kind(task) {
            TaskKind::KernelThread(KThread::LazyInit) => self
                .lazy
                .throttle
                .as_mut()
                .and_then(|t| t.job.as_mut())
                .expect("lazyinit has a writeback job"),
            TaskKind::KernelThread(KThread::Flusher) => match &mut self.vm.flusher_state {
                FlusherState::Running { job, .. } => job,
                _ => panic!("flusher has no job"),
            },
            k @ TaskKind::KernelThread(
                KThread::KBlockd | KThread::Kjournald | KThread::Bdflush | KThread::Kupdated,
            ) => {
                panic!("{k:?} runs no writeback")
            }
            TaskKind::Process(i) => {
                let p = &mut self.procs[i as usize];
                if let Some(j) = p.fsync.as_mut() {
                    return j;
                }
                p.throttle
                    .as_mut()
                    .and_then(|t| t.job.as_mut())
                    .expect("task has a writeback job")
            }
        }
    }

    /// One step of a writeback job: submit queued bios, or pick the next inode
    /// (`generic_sync_sb_inodes`), or process one pagevec of `write_cache_pages`.
    pub(crate) fn wb_step(&mut self, task: TaskId, now: Instant) -> WbStep {
        if self.drain_pending(task, now) {
            return WbStep::Sleep;
        }
        self.end_writepages_plug(task, now);
        let (step, open, stopped) = self.wb_job_step(task, now);
        match step {
            JobStep::PassDone => {
                self.end_writepages_plug(task, now);
                // The pass is over: kick the queue so plugged I/O goes out.
                self.unplug(task, now);
                WbStep::Finished
            }
            JobStep::LockWait => {
                self.tasks.block(task, Blocked::OnPage);
                WbStep::Sleep
            }
            JobStep::Ran(cost) => {
                if self.drain_pending(task, now) {
                    return WbStep::Sleep;
                }
                // The job is as the step left it (submitting bios does not
                // touch it): `end_writepages_plug` and `page_lock_wait`
                // without looking it up again when there is nothing to do.
                if !open {
                    self.close_batch_plug(task, now);
                }
                if stopped && self.page_lock_wait(task) {
                    return WbStep::Sleep;
                }
                WbStep::Continue(Duration(cost.max(1)))
            }
        }
    }

    /// mm's `Vm::writeback_step` on the task's job, with the file system's
    /// `->writepage(s)` (`FsWriteback`); the runs of pages it writes and the
    /// tasks it wakes are carried out here. Returns the step, whether a
    /// `write_cache_pages` call is still open, and whether it stopped at a
    /// page locked by another caller.
    fn wb_job_step(&mut self, task: TaskId, now: Instant) -> (JobStep, bool, bool) {
        let caller = WcpCaller {
            task,
            is_flusher: task == self.flusher(),
            congested: self.queue.congested(false),
        };
        let max_pages = (self.bio_limits.max_sectors as u64 / 8).max(1);
        let mut job = self.take_job(task);
        if job.cur.is_none() {
            // do_writepages on the next inode: its ->writepages plugs.
            self.open_batch_plug(task);
        }
        let mut fs = FsWriteback::new(&mut *self.fs, max_pages);
        let step = self.vm.writeback_step(&mut job, caller, &mut fs);
        let sync_all = job.wbc.sync_all;
        let open = job.cur.is_some();
        let stopped = job.cur.as_ref().is_some_and(|w| w.lock_wait.is_some());
        *self.job_of(task) = job;
        self.wb_actions(task, sync_all, now);
        self.journal_writeback_alloc(task);
        self.xlog_commit_trans(task, None, now);
        (step, open, stopped)
    }

    /// Carry out what writeback asked for (`Vm::wb_out`), in order. The bios'
    /// `rw` is the job's sync mode and the mapping's `->writepage` path
    /// (`ReqFlags::writeback`), found once per mapping met in the step.
    fn wb_actions(&mut self, task: TaskId, sync_all: bool, now: Instant) {
        let mut out = std::mem::take(&mut self.vm.wb_out);
        let mut flags_of: Option<(u32, ReqFlags)> = None;
        let background = self.background_pass(task);
        for a in out.drain(..) {
            let (map, run, each) = match a {
                WbAction::Write { map, run } => (map, run, false),
                WbAction::WriteEach { map, run } => (map, run, true),
                WbAction::Wake(t) => {
                    self.wake_task(t, now);
                    continue;
                }
            };
            let flags = match flags_of {
                Some((m, f)) if m == map => f,
                _ => {
                    let f = self.writeback_flags(map, sync_all);
                    let f = if background {
                        f | ReqFlags::BACKGROUND
                    } else {
                        f
                    };
                    flags_of = Some((map, f));
                    f
                }
            };
            self.count_wb_pages(task, map, run.pages);
            if !each {
                let (first, n) = (run.first, run.pages);
                self.queue_page_bios_flagged(task, map, first, n, run.pblk, flags, now);
                continue;
            }
            self.queue_page_run(task, map, (run.first, run.pages), run.pblk, flags, now);
        }
        self.vm.wb_out = out;
    }

    /// The `rw` of writeback bios of `map` (`ReqFlags::writeback`).
    /// `wbc_to_write_flags`' `REQ_BACKGROUND` (4.10+): the flusher's
    /// `for_background` pass (not kupdate's) on a blk-mq profile.
    pub(crate) fn background_pass(&self, task: TaskId) -> bool {
        !self.cfg.tunables.profile().single_queue()
            && self.tasks.kind(task) == TaskKind::KernelThread(KThread::Flusher)
            && matches!(
                self.vm.flusher_state,
                FlusherState::Running { kupdate: false, .. }
            )
    }

    pub(crate) fn writeback_flags(&self, map: u32, sync_all: bool) -> ReqFlags {
        let mpage = !crate::bdev::is_bdev(self.vm.map_ino[map as usize])
            && self.fs.writepage_kind() == WritepageKind::Mpage;
        ReqFlags::writeback(self.cfg.tunables.profile(), sync_all, mpage)
    }

    /// Pages sent to the disk by writeback, by who sent them (`WbPages`).
    pub(crate) fn count_wb_pages(&mut self, task: TaskId, map: u32, n: u64) {
        let wb = &mut self.vm.wb_pages;
        match self.tasks.kind(task) {
            _ if crate::bdev::is_bdev(self.vm.map_ino[map as usize]) => wb.bdev += n,
            TaskKind::KernelThread(KThread::Flusher) => wb.flusher += n,
            TaskKind::KernelThread(_) => wb.kthread += n,
            TaskKind::Process(_) => wb.dirtier += n,
        }
    }

    /// `->writepages` returned (no inode open) and its bios are out: the
    /// plug it took ends.
    fn end_writepages_plug(&mut self, task: TaskId, now: Instant) {
        if self.job_of(task).cur.is_none() {
            self.close_batch_plug(task, now);
        }
    }

    /// Take a task's writeback job out of its place (put it back with
    /// `job_of`), so mm can work on it beside the page cache.
    fn take_job(&mut self, task: TaskId) -> WbJob {
        let idle = WbJob::new(Wbc::cyclic(0, false));
        std::mem::replace(self.job_of(task), idle)
    }

    /// `lock_page` in `write_cache_pages` (mm's `Vm::wcp_lock_wait`): sleep if
    /// the task stopped at a page another caller holds in its extent.
    fn page_lock_wait(&mut self, task: TaskId) -> bool {
        let mut job = self.take_job(task);
        let wait = self.vm.job_lock_wait(&mut job, task);
        *self.job_of(task) = job;
        if wait {
            self.tasks.block(task, Blocked::OnPage);
        }
        wait
    }
}
