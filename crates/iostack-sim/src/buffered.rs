//! Buffered file I/O through the page cache: `read()` with on-demand readahead
//! (`do_generic_file_read`, `mpage_readpages`), `write()` with dirty accounting and
//! throttling (`generic_perform_write`, `balance_dirty_pages`), and the writeback
//! actors (pdflush or the per-bdi flusher, and throttled dirtiers) walking
//! `write_cache_pages` over the shared `mapping->writeback_index` cursor.
//!
//! Every actor is a task of the event loop: it advances one pagevec (or one batch
//! of copied pages) per step, paying the CPU cost of that work in virtual time, so
//! two writeback callers on one inode interleave as they do on two CPUs.

use crate::task::{Blocked, KThread, TaskKind};
use crate::world::Simulation;
use iostack_block::{Bio, Submit};
use iostack_core::{BioOwner, EndIo, ReqFlags, TaskId};
use iostack_des::{Duration, Instant};
use iostack_fs::mount::WritepageKind;
use iostack_mm::bdp::CONGESTION_WAIT;
use iostack_mm::writeback::PAGEVEC_SIZE;
use iostack_mm::{ondemand_readahead, RaWindow};
use iostack_mm::{BdpAction, FlusherNext};
use iostack_mm::{BufBio, FlusherState, Throttle, WbJob, WbStep, Wbc, Wcp};

impl Simulation {
    // ---------------------------------------------------------------- reads

    /// A buffered `read()` of `[offset, offset + len)`: `do_generic_file_read`.
    /// Runs until the task must wait for a page or a request, or the read is done.
    pub(crate) fn buffered_read_step(&mut self, pi: u32, now: Instant) {
        let mut cost = 0u64;
        loop {
            if self.drain_pending(TaskId(pi), now) {
                return;
            }
            let p = &self.procs[pi as usize];
            let op = p.buf.expect("buffered op");
            let map = op.map;
            let m = &self.vm.maps[map as usize];
            let idx = op.pos;
            let eof = m.size_pages;
            if idx >= op.last || idx >= eof {
                let p = &mut self.procs[pi as usize];
                if let Some(last) = idx.checked_sub(1) {
                    p.ra.prev_pos = Some(last * iostack_mm::PAGE_SIZE);
                }
                let done_at = now + Duration(cost);
                self.charge_sys(TaskId(pi), Duration(cost));
                self.evq
                    .schedule(done_at, crate::world::Ev::BufDone(TaskId(pi)));
                return;
            }
            let req = op.last.min(eof) - idx;
            if !m.present.get(idx) {
                // page_cache_sync_readahead, then find_get_page again.
                let mut ra = self.procs[pi as usize].ra;
                let w = ondemand_readahead(&mut ra, &self.vm.maps[map as usize], false, idx, req);
                self.procs[pi as usize].ra = ra;
                let w = w.unwrap_or(RaWindow {
                    start: idx,
                    size: 1,
                    async_size: 0,
                });
                self.submit_readahead(TaskId(pi), map, w, now);
                if !self.vm.maps[map as usize].present.get(idx) {
                    // no_cached_page: read just this page.
                    let w1 = RaWindow {
                        start: idx,
                        size: 1,
                        async_size: 0,
                    };
                    self.submit_readahead(TaskId(pi), map, w1, now);
                }
                continue;
            }
            if m.ra_marker.get(idx) {
                // page_cache_async_readahead.
                self.vm.maps[map as usize].ra_marker.clear(idx);
                let mut ra = self.procs[pi as usize].ra;
                let w = ondemand_readahead(&mut ra, &self.vm.maps[map as usize], true, idx, req);
                self.procs[pi as usize].ra = ra;
                if let Some(w) = w {
                    self.submit_readahead(TaskId(pi), map, w, now);
                }
                // 2.6.32: if the marked page is already up to date, kick the queue
                // now (blk_run_backing_dev), since lock_page will not.
                if self.vm.maps[map as usize].uptodate.get(idx) {
                    self.procs[pi as usize].unplug_after = true;
                }
                continue;
            }
            if !m.uptodate.get(idx) {
                // lock_page_killable → sync_page → unplug, then sleep on the page.
                let task = TaskId(pi);
                self.unplug(task, now);
                self.vm.page_waiters.push((task, map, idx));
                self.charge_sys(task, Duration(cost));
                // The copies made so far take their CPU time before the sleep
                // can end.
                self.tasks.block(task, Blocked::OnPage);
                self.tasks.get_mut(task).cpu_until = now + Duration(cost);
                return;
            }
            // Copy the run of up-to-date pages without a marker.
            let mut end = m.uptodate.run_end(idx, op.last.min(eof));
            if let Some(mk) = m.ra_marker.next_set(idx + 1, end) {
                end = mk;
            }
            let n = end - idx;
            cost += n * self.vm.cfg.copy_page_ns;
            let p = &mut self.procs[pi as usize];
            p.buf.as_mut().unwrap().pos = end;
            p.ra.prev_pos = Some((end - 1) * iostack_mm::PAGE_SIZE);
            if p.unplug_after {
                p.unplug_after = false;
                self.unplug(TaskId(pi), now);
            }
            if cost >= 50_000 {
                // Let time pass for the copying before looking at more pages.
                self.charge_sys(TaskId(pi), Duration(cost));
                self.schedule_task(TaskId(pi), now + Duration(cost));
                return;
            }
        }
    }

    /// `__do_page_cache_readahead` + `read_pages` → `mpage_readpages`: allocate the
    /// window's missing pages and queue bios over physically contiguous runs.
    fn submit_readahead(&mut self, task: TaskId, map: u32, w: RaWindow, now: Instant) {
        let runs = self.vm.maps[map as usize].alloc_readahead(w, u64::MAX);
        let ino = self.vm.map_ino[map as usize];
        for (first, n) in runs {
            self.vm.note_cached(map, first, n);
            let mut l = first;
            while l < first + n {
                let want = first + n - l;
                let mb = if crate::bdev::is_bdev(ino) {
                    iostack_fs::BlockMapping {
                        pblk: Some(l),
                        count: want,
                        boundary: false,
                        new: false,
                    }
                } else {
                    match self.fs.get_block().get_block(ino, l, want, false) {
                        Ok(mb) => mb,
                        Err(_) => iostack_fs::BlockMapping {
                            pblk: None,
                            count: 1,
                            boundary: false,
                            new: false,
                        },
                    }
                };
                let count = mb.count.min(want).max(1);
                match mb.pblk {
                    // A hole reads as zeroes without I/O.
                    None => self.vm.maps[map as usize].read_done(l, count),
                    Some(pblk) => self.queue_page_bios(task, map, l, count, pblk, false, now),
                }
                l += count;
            }
        }
        self.vm.reclaim();
    }

    /// Queue bios for pages `[first, first + n)` at block `pblk`, split at the
    /// queue's `max_sectors`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn queue_page_bios(
        &mut self,
        task: TaskId,
        map: u32,
        first: u64,
        n: u64,
        pblk: u64,
        write: bool,
        now: Instant,
    ) {
        let spp = iostack_mm::PAGE_SIZE / 512;
        let max_pages = (self.bio_limits.max_sectors as u64 / spp).max(1);
        if write {
            let wb = &mut self.vm.wb_pages;
            match self.tasks.kind(task) {
                _ if crate::bdev::is_bdev(self.vm.map_ino[map as usize]) => wb.bdev += n,
                TaskKind::KernelThread(KThread::Flusher) => wb.flusher += n,
                TaskKind::KernelThread(_) => wb.kthread += n,
                TaskKind::Process(_) => wb.dirtier += n,
            }
        }
        let t = self.tasks.get(task);
        let (pid, cpu, ioprio) = (t.pid, t.cpu, t.ioprio);
        let dev = self.map_dev(map);
        let flags = self.page_bio_flags(task, map, write);
        let mut off = 0;
        while off < n {
            let k = (n - off).min(max_pages);
            let tag = self.vm.bufbios.alloc(BufBio {
                map,
                first: first + off,
                pages: k,
                write,
            });
            let bio = Bio {
                dev,
                sector: (pblk + off) * spp,
                sectors: (k * spp) as u32,
                segments: k as u32,
                flags,
                pid,
                cpu,
                owner: BioOwner {
                    task,
                    end_io: EndIo::PageCache { bio: tag },
                },
                ioprio,
                submitted_at: now,
                next: None,
            };
            self.tasks.get_mut(task).pending.push_back(bio);
            off += k;
        }
    }

    /// The `rw` of a page-cache bio: readahead reads, and writeback flagged by
    /// the job's sync mode and the file system's `->writepage` path
    /// (`ReqFlags::writeback`).
    fn page_bio_flags(&mut self, task: TaskId, map: u32, write: bool) -> ReqFlags {
        let profile = self.cfg.tunables.profile();
        if !write {
            return ReqFlags::readahead(profile);
        }
        let mpage = !crate::bdev::is_bdev(self.vm.map_ino[map as usize])
            && self.fs.writepage_kind() == WritepageKind::Mpage;
        let sync_all = self.job_of(task).wbc.sync_all;
        ReqFlags::writeback(profile, sync_all, mpage)
    }

    /// Submit a task's queued bios. Returns true if it must sleep for a request.
    pub(crate) fn drain_pending(&mut self, task: TaskId, now: Instant) -> bool {
        while let Some(mut bio) = self.tasks.get_mut(task).pending.pop_front() {
            bio.submitted_at = now;
            let r = self
                .queue
                .submit_bio(now, bio, &mut self.tracer, &mut self.out);
            if r == Submit::Sleeping {
                self.tasks.block(task, Blocked::OnRequest);
                return true;
            }
        }
        false
    }

    /// A page-cache bio completed.
    pub(crate) fn buf_bio_done(&mut self, tag: u32, now: Instant) {
        let b = self.vm.bufbios.free(tag);
        let m = &mut self.vm.maps[b.map as usize];
        if !b.write {
            m.read_done(b.first, b.pages);
            let mut i = 0;
            while i < self.vm.page_waiters.len() {
                let (t, map, page) = self.vm.page_waiters[i];
                if map == b.map && self.vm.maps[map as usize].uptodate.get(page) {
                    self.vm.page_waiters.swap_remove(i);
                    self.wake_task(t, now);
                } else {
                    i += 1;
                }
            }
            return;
        }
        let cleared = m.writeback.clear_range(b.first, b.pages);
        self.vm.nr_writeback -= cleared;
        if m.nr_writeback() == 0 {
            let mut i = 0;
            while i < self.vm.wb_waiters.len() {
                let (t, map) = self.vm.wb_waiters[i];
                if map == b.map {
                    self.vm.wb_waiters.swap_remove(i);
                    self.wake_task(t, now);
                } else {
                    i += 1;
                }
            }
        }
        // clear_bdi_congested wakes congestion_wait sleepers.
        if !self.queue.congested(false) && !self.vm.congestion_waiters.is_empty() {
            let ws = std::mem::take(&mut self.vm.congestion_waiters);
            for (t, _) in ws {
                self.wake_task(t, now);
            }
        }
    }

    // ---------------------------------------------------------------- writes

    /// A buffered `write()`: `generic_perform_write` copies page by page, dirtying
    /// each, and calls `balance_dirty_pages_ratelimited` as pages are dirtied.
    pub(crate) fn buffered_write_step(&mut self, pi: u32, now: Instant) {
        if self.drain_pending(TaskId(pi), now) {
            return;
        }
        if self.procs[pi as usize].throttle.is_some() {
            self.throttle_step(TaskId(pi), now);
            return;
        }
        let op = self.procs[pi as usize].buf.expect("buffered op");
        if op.pos >= op.last {
            self.evq
                .schedule(now, crate::world::Ev::BufDone(TaskId(pi)));
            return;
        }
        let ratelimit = self.vm.ratelimit();
        let p = &self.procs[pi as usize];
        let room = ratelimit.saturating_sub(p.dirtied_since_check).max(1);
        let n = (op.last - op.pos).min(room);
        let ino = self.vm.map_ino[op.map as usize];
        if let Err(e) = self.write_begin(ino, op.pos, n) {
            let p = &mut self.procs[pi as usize];
            p.result.error = Some(format!("write: {e}"));
            p.buf.as_mut().unwrap().pos = op.last;
            self.evq
                .schedule(now, crate::world::Ev::BufDone(TaskId(pi)));
            return;
        }
        let m = &mut self.vm.maps[op.map as usize];
        let before = m.nr_cached();
        let newly = m.write_pages(op.pos, n, now);
        let added = m.nr_cached() - before;
        let end_bytes = (op.pos + n) * iostack_mm::PAGE_SIZE;
        self.extend_i_size(ino, end_bytes);
        if added > 0 {
            self.vm.note_cached(op.map, op.pos, n);
        }
        self.vm.account_dirtied(op.map, newly, now);
        let cost = Duration(n * self.vm.cfg.copy_page_ns);
        let p = &mut self.procs[pi as usize];
        p.buf.as_mut().unwrap().pos += n;
        p.dirtied_since_check += n;
        if p.dirtied_since_check >= ratelimit {
            let dirtied = p.dirtied_since_check;
            p.dirtied_since_check = 0;
            p.throttle = Some(Throttle::new(&self.vm, dirtied));
        }
        self.vm.reclaim();
        self.charge_sys(TaskId(pi), cost);
        self.schedule_task(TaskId(pi), now + cost);
    }

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
            let mut th = self.throttle_of(task).take().expect("throttled task");
            let action = if th.job.is_some() {
                *self.throttle_of(task) = Some(th);
                match self.wb_step(task, now) {
                    WbStep::Continue(d) => {
                        self.charge_sys(task, d);
                        self.schedule_task(task, now + d);
                        return;
                    }
                    WbStep::Sleep => return,
                    WbStep::Finished => {
                        th = self.throttle_of(task).take().expect("throttled task");
                        th.job_done(&mut self.vm)
                    }
                }
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
                // filemap_fdatawait: wait for the pages under writeback. A page
                // another caller redirtied behind this pass is not waited for.
                let m = &self.vm.maps[map as usize];
                if m.nr_writeback() > 0 {
                    self.vm.wb_waiters.push((TaskId(pi), map));
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
        match &self.vm.flusher_state {
            FlusherState::Idle => return,
            FlusherState::Waiting { kupdate, budget } => {
                let (k, b) = (*kupdate, *budget);
                self.vm.start_flusher_pass(k, b, now);
                self.schedule_task(flusher, now);
                return;
            }
            FlusherState::Running { .. } => {}
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
            k @ TaskKind::KernelThread(KThread::KBlockd) => panic!("{k:?} runs no writeback"),
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
        if self.job_of(task).cur.is_none() {
            match self.wb_next_inode(task, now) {
                Some(w) => self.job_of(task).cur = Some(w),
                None => {
                    // The pass is over: kick the queue so plugged I/O goes out.
                    self.unplug(task, now);
                    return WbStep::Finished;
                }
            }
        }
        if self.page_lock_wait(task) {
            return WbStep::Sleep;
        }
        let cost = self.wcp_pagevec(task, now);
        if self.drain_pending(task, now) {
            return WbStep::Sleep;
        }
        if self.page_lock_wait(task) {
            return WbStep::Sleep;
        }
        WbStep::Continue(Duration(cost.max(1)))
    }

    /// Choose the next inode of a pass, and start `write_cache_pages` on it
    /// (mm's `Vm::next_inode`).
    fn wb_next_inode(&mut self, task: TaskId, _now: Instant) -> Option<Wcp> {
        let is_flusher = task == self.flusher();
        let congested = self.queue.congested(false);
        let idle = WbJob::new(Wbc::cyclic(0, false));
        let mut job = std::mem::replace(self.job_of(task), idle);
        let w = self.vm.next_inode(&mut job, task, is_flusher, congested);
        *self.job_of(task) = job;
        w
    }

    fn wcp_begin(&mut self, task: TaskId, map: u32, take_isync: bool, is_flusher: bool) -> Wcp {
        let cyclic = self.job_of(task).wbc.range_cyclic;
        self.vm.wcp_begin(cyclic, task, map, take_isync, is_flusher)
    }

    /// One `pagevec_lookup_tag` batch of `write_cache_pages` and the writepage
    /// calls on it. Returns the CPU time used.
    fn wcp_pagevec(&mut self, task: TaskId, now: Instant) -> u64 {
        let mut w = self.job_of(task).cur.take().expect("wcp");
        let map = w.map as usize;
        let kind = if crate::bdev::is_bdev(self.vm.map_ino[map]) {
            WritepageKind::PerBuffer
        } else {
            self.fs.writepage_kind()
        };
        let wcp_break = self.vm.cfg.wcp_break;
        let mut cost = 0u64;
        if let Some(next) = w.cluster {
            // xfs_cluster_write / xfs_convert_page: keep adding the following
            // dirty pages to the ioend, one bio's worth per step, while the
            // quota lasts and the pages are contiguous and dirty. After each
            // page xfs_convert_page checks bdi_write_congested for every caller,
            // blocking or not, and ends the cluster if the queue is congested
            // (the queue's state changes between steps, when bios are submitted).
            let max_pages = (self.bio_limits.max_sectors as u64 / 8).max(1);
            let congested = self.queue.congested(false);
            let mut p = next;
            let mut stop = false;
            for _ in 0..max_pages {
                if congested && p > next {
                    self.job_of(task).wbc.encountered_congestion = true;
                    stop = true;
                    break;
                }
                let m = &self.vm.maps[map];
                if p >= m.size_pages || !m.dirty.get(p) || m.writeback.get(p) {
                    stop = true;
                    break;
                }
                if self.job_of(task).wbc.nr_to_write <= 0 {
                    stop = true;
                    break;
                }
                self.vm.take_page(map, p);
                self.writepage(task, &mut w, kind, p, now);
                cost += self.vm.cfg.wb_page_ns;
                let job = self.job_of(task);
                job.wbc.nr_to_write -= 1;
                job.wbc.written += 1;
                p += 1;
            }
            w.done_index = w.done_index.max(p);
            w.cluster = if stop { None } else { Some(p) };
            if w.cluster.is_none() {
                if let Some(r) = w.bio.take() {
                    self.queue_run(task, w.map, r, now);
                }
            }
            let job = self.job_of(task);
            if job.wbc.nr_to_write <= 0 && !job.wbc.sync_all {
                w.done = true;
            }
            if job.wbc.nonblocking && self.queue.congested(false) {
                self.job_of(task).wbc.encountered_congestion = true;
                w.done = true;
            }
            if w.done && (wcp_break || w.pvec_pos >= w.pvec.len()) {
                self.wcp_finish(task, w, now);
            } else {
                self.job_of(task).cur = Some(w);
            }
            return cost.max(1);
        }
        if w.pvec_pos >= w.pvec.len() {
            if w.done {
                self.wcp_finish(task, w, now);
                return 1;
            }
            // pagevec_lookup_tag: up to PAGEVEC_SIZE dirty pages from index.
            w.pvec.clear();
            w.pvec_pos = 0;
            let m = &self.vm.maps[map];
            let mut i = w.index;
            let lim = w.end.saturating_add(1);
            while w.pvec.len() < PAGEVEC_SIZE as usize {
                // PAGECACHE_TAG_DIRTY: dirty pages, and pages another caller
                // holds locked in its extent.
                let dirty = m.dirty.next_set(i, lim);
                let tagged = if m.wb_locked.count() == 0 {
                    dirty
                } else {
                    m.wb_locked.next_set(i, dirty.unwrap_or(lim)).or(dirty)
                };
                match tagged {
                    Some(p) => {
                        w.pvec.push(p);
                        i = p + 1;
                    }
                    None => break,
                }
            }
            if w.pvec.is_empty() {
                // End of the range: range_cyclic wraps once to the start.
                let wrap = if wcp_break { !w.cycled } else { !w.scanned };
                if wrap && !w.done && w.start > 0 {
                    w.scanned = true;
                    w.cycled = true;
                    w.index = 0;
                    w.end = w.start - 1;
                    self.job_of(task).cur = Some(w);
                    return 1;
                }
                self.wcp_finish(task, w, now);
                return 1;
            }
            w.scanned = true;
            w.index = *w.pvec.last().unwrap() + 1;
        }
        while w.pvec_pos < w.pvec.len() {
            let page = w.pvec[w.pvec_pos];
            let own = w
                .ext
                .is_some_and(|(first, next)| first <= page && page < next);
            if self.vm.maps[map].wb_locked.get(page) && !own {
                // lock_page on a page in another caller's open extent. Two
                // callers each waiting for the other's pages would deadlock;
                // write_cache_pages locks in ascending order within a pass, so
                // that cannot happen, but a wait that would close a cycle is
                // treated as the page being taken.
                let owner = self.wb_lock_owner(w.map, page);
                let cycle = owner.is_some_and(|o| {
                    self.vm.lock_waiters.iter().any(|&(t, m2, p2)| {
                        t == o
                            && m2 == w.map
                            && w.ext.is_some_and(|(first, next)| first <= p2 && p2 < next)
                    })
                });
                if owner.is_some() && !cycle {
                    w.lock_wait = Some(page);
                    break;
                }
            }
            w.pvec_pos += 1;
            let m = &self.vm.maps[map];
            if !m.dirty.get(page) || m.writeback.get(page) {
                // Taken by a concurrent caller, or still under writeback.
                continue;
            }
            if w.done && wcp_break {
                w.pvec_pos = w.pvec.len();
                break;
            }
            if kind == WritepageKind::Ext4Da {
                if w.io_done {
                    // __mpage_da_writepage after the extent was written: redirty
                    // the rest of the pagevec and return MPAGE_DA_EXTENT_TAIL.
                    w.skipped += 1;
                    continue;
                }
                match w.ext {
                    Some((first, next)) if next != page => {
                        // Not contiguous: map and write the extent, then stop.
                        self.ext4_flush_extent(task, &mut w, first, next, now);
                        w.io_done = true;
                        w.extent_tail = true;
                        w.done = true;
                        w.skipped += 1;
                        continue;
                    }
                    Some((first, _)) => w.ext = Some((first, page + 1)),
                    None => w.ext = Some((page, page + 1)),
                }
                // clear_page_dirty_for_io; the page stays locked in the extent
                // (its dirty tag set) until mpage_da_submit_io.
                self.vm.take_page(map, page);
                self.vm.maps[map].wb_locked.set(page);
            } else {
                self.vm.take_page(map, page);
                self.writepage(task, &mut w, kind, page, now);
            }
            cost += self.vm.cfg.wb_page_ns;
            w.done_index = page + 1;
            let job = self.job_of(task);
            job.wbc.nr_to_write -= 1;
            job.wbc.written += 1;
            if job.wbc.nr_to_write <= 0 && !job.wbc.sync_all {
                w.done = true;
            }
            if job.wbc.nonblocking && self.queue.congested(false) {
                self.job_of(task).wbc.encountered_congestion = true;
                w.done = true;
            }
            if kind == WritepageKind::XfsCluster && !w.done {
                // The cluster goes on from the next page in later steps.
                w.cluster = Some(page + 1);
                break;
            }
        }
        if w.lock_wait.is_none()
            && w.done
            && (wcp_break || w.pvec_pos >= w.pvec.len())
            && w.cluster.is_none()
        {
            self.wcp_finish(task, w, now);
        } else {
            self.job_of(task).cur = Some(w);
        }
        cost.max(1)
    }

    /// End of one `write_cache_pages` call: flush what is open, move the cursor,
    /// release `I_SYNC` and requeue the inode.
    fn wcp_finish(&mut self, task: TaskId, mut w: Wcp, now: Instant) {
        let is_flusher = task == self.flusher();
        let map = w.map;
        let kind = if crate::bdev::is_bdev(self.vm.map_ino[map as usize]) {
            WritepageKind::PerBuffer
        } else {
            self.fs.writepage_kind()
        };
        if let Some(r) = w.bio.take() {
            self.queue_run(task, map, r, now);
        }
        let mut again = false;
        if let Some((first, next)) = w.ext {
            // mpage_da_writepages: handle the last extent of pages.
            self.ext4_flush_extent(task, &mut w, first, next, now);
            w.io_done = true;
        }
        let cyclic = self.job_of(task).wbc.range_cyclic;
        let may_move = cyclic && (!self.vm.cfg.flusher_only_index || is_flusher);
        if may_move {
            let m = &mut self.vm.maps[map as usize];
            if kind == WritepageKind::Ext4Da && self.vm.cfg.ext4_index_pages_written {
                // "ext4: Fix file fragmentation during large file write": the
                // cursor advances by what ext4 wrote.
                m.writeback_index = w.da_start + w.da_written;
            } else if self.vm.cfg.wcp_break {
                m.writeback_index = w.done_index;
            } else {
                m.writeback_index = w.index;
            }
        }
        let sync_all = self.job_of(task).wbc.sync_all;
        if kind == WritepageKind::Ext4Da
            && (self.vm.cfg.ext4_index_pages_written || sync_all)
            && w.mpd_written > 0
            && self.job_of(task).wbc.nr_to_write > 0
            && self.vm.maps[map as usize].nr_dirty() > 0
        {
            // The fixed ext4_da_writepages loops for the rest of its quota; a
            // data-integrity pass (fsync) goes on until the range is clean.
            again = true;
        }
        if kind == WritepageKind::Ext4Da
            && !self.vm.cfg.ext4_index_pages_written
            && !sync_all
            && w.extent_tail
            && self.job_of(task).wbc.nr_to_write > 0
        {
            // The October 2008 ext4_da_writepages: on MPAGE_DA_EXTENT_TAIL it
            // starts a new transaction and calls mpage_da_writepages again for the
            // rest of its quota, from wherever write_cache_pages now starts
            // (mapping->writeback_index, just stored past the redirtied pages).
            // write_cache_pages returns at once for a non-blocking caller that
            // finds the queue congested.
            let congested = self.queue.congested(false);
            let job = self.job_of(task);
            if job.wbc.nonblocking && congested {
                job.wbc.encountered_congestion = true;
            } else {
                let mut nw = self.wcp_begin(task, map, false, is_flusher);
                nw.owns_isync = w.owns_isync;
                self.job_of(task).cur = Some(nw);
                return;
            }
        }
        if again {
            let mut nw = self.wcp_begin(task, map, false, is_flusher);
            nw.owns_isync = w.owns_isync;
            if !may_move {
                nw.index = w.index;
                nw.start = w.index;
            }
            nw.da_start = nw.start;
            nw.skipped = w.skipped;
            self.job_of(task).cur = Some(nw);
            return;
        }
        if kind == WritepageKind::Ext4Da
            && sync_all
            && w.skipped > 0
            && self.vm.maps[map as usize].nr_dirty() > 0
        {
            // A data-integrity pass continues from where each extent stopped
            // (range_cont), so the pages a pagevec redirtied after an extent sit
            // behind it. ext4_da_writepages must not return from a WB_SYNC_ALL
            // call with pages skipped (Aneesh Kumar's 16 Oct 2008 revision of
            // the fragmentation fix compares wbc->pages_skipped with its value on
            // entry and reports "This should not happen" otherwise): go back to
            // the start of the range, so that fsync writes every page that was
            // dirty when it began. Each such pass writes the extent before its
            // skipped pages, so this ends.
            let mut nw = self.wcp_begin(task, map, false, is_flusher);
            nw.owns_isync = w.owns_isync;
            self.job_of(task).cur = Some(nw);
            return;
        }
        if w.owns_isync {
            let quota_left = self.job_of(task).wbc.nr_to_write > 0;
            if self.vm.inode_written(map, quota_left) {
                self.job_of(task).wbc.more_io = true;
            }
        }
        self.job_of(task).cur = None;
    }
}
