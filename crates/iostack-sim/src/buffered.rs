//! Buffered file I/O through the page cache: `read()` with on-demand readahead
//! (`do_generic_file_read`, `mpage_readpages`), `write()` with dirty accounting
//! (`generic_perform_write`, then `balance_dirty_pages` in `writeback.rs`), and
//! the page-cache bios: queued on the submitting task, submitted, completed.
//!
//! A reader or writer advances one batch of copied pages per step, paying the
//! CPU cost of that work in virtual time.

use crate::task::{Blocked, KThread, TaskKind};
use crate::world::Simulation;
use iostack_block::{Bio, BioRun, Submit};
use iostack_core::{BioOwner, EndIo, ReqFlags, TaskId};
use iostack_des::{Duration, Instant};
use iostack_mm::{ondemand_readahead, RaWindow};
use iostack_mm::{BufBio, Throttle};

/// `force_page_cache_readahead`'s chunk: 2 MiB of pages at a time.
const FORCE_RA_CHUNK: u64 = (2 << 20) / iostack_mm::PAGE_SIZE;

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
            // read_pages' blk_finish_plug, once the window's bios are out.
            self.close_batch_plug(TaskId(pi), now);
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
                // page_cache_sync_readahead, then find_get_page again; with
                // FMODE_RANDOM, force_page_cache_readahead of what is asked
                // (in 2 MiB chunks, one window each here as there).
                let mut ra = self.procs[pi as usize].ra;
                let w = if self.procs[pi as usize].ra_random {
                    Some(RaWindow {
                        start: idx,
                        size: req.min(FORCE_RA_CHUNK),
                        async_size: 0,
                    })
                } else {
                    ondemand_readahead(&mut ra, &self.vm.maps[map as usize], false, idx, req)
                };
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
    pub(crate) fn submit_readahead(&mut self, task: TaskId, map: u32, w: RaWindow, now: Instant) {
        let runs = self.vm.maps[map as usize].alloc_readahead(w, u64::MAX);
        // read_pages: blk_start_plug (2.6.39+); finished when the bios are out.
        self.open_batch_plug(task);
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
        if write {
            self.count_wb_pages(task, map, n);
        }
        let flags = self.page_bio_flags(task, map, write);
        self.queue_page_bios_flagged(task, map, first, n, pblk, flags, now);
    }

    /// `queue_page_bios` with the request flags given (the journal's ordered
    /// data carries the commit's `write_op`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn queue_page_bios_flagged(
        &mut self,
        task: TaskId,
        map: u32,
        first: u64,
        n: u64,
        pblk: u64,
        flags: ReqFlags,
        now: Instant,
    ) {
        let spp = iostack_mm::PAGE_SIZE / 512;
        let max_pages = (self.bio_limits.max_sectors as u64 / spp).max(1);
        let write = flags.is_write();
        let t = self.tasks.get(task);
        let (pid, cpu, ioprio) = (t.pid, t.cpu, t.ioprio);
        let dev = self.map_dev(map);
        // 6.x builds page-cache bios of large folios (readahead's
        // page_cache_ra_order, iomap and mpage writeback), so a bvec spans
        // many pages and bio_split_rw counts it in BLK_MAX_SEGMENT_SIZE
        // (64 KiB) pieces; folio orders are not simulated, and each 64 KiB of
        // a bio is taken as one segment. Up to 2.6.38 every page is one.
        let pages_per_seg = if self.cfg.tunables.profile().single_queue() {
            1
        } else {
            (65536 / iostack_mm::PAGE_SIZE).max(1)
        };
        let mut off = 0;
        while off < n {
            let k = (n - off).min(max_pages);
            let sector = (pblk + off) * spp;
            let segments = k.div_ceil(pages_per_seg) as u32;
            if self.extend_run(task, (map, first + off, k), sector, segments, flags) {
                off += k;
                continue;
            }
            let tag = self.vm.bufbios.alloc(BufBio {
                map,
                first: first + off,
                pages: k,
                write,
                bios: 1,
                left: k,
            });
            let bio = Bio {
                dev,
                sector,
                sectors: (k * spp) as u32,
                segments,
                flags,
                pid,
                cpu,
                owner: BioOwner {
                    task,
                    end_io: EndIo::PageCache { bio: tag },
                },
                ioprio,
                submitted_at: now,
                run: iostack_block::BioRun::ONE,
                next: None,
            };
            self.tasks.get_mut(task).pending.push_back(bio);
            off += k;
        }
    }

    /// One single-page bio for each of `pages` = (first, count), the pages one
    /// after another on disk from `pblk` (`block_write_full_page` →
    /// `submit_bh` per page): the same bios as `queue_page_bios_flagged` page
    /// by page, the run grown at once.
    pub(crate) fn queue_page_run(
        &mut self,
        task: TaskId,
        map: u32,
        (first, n): (u64, u64),
        pblk: u64,
        flags: ReqFlags,
        now: Instant,
    ) {
        self.queue_page_bios_flagged(task, map, first, 1, pblk, flags, now);
        if n > 1 && !self.grow_run(task, n - 1) {
            for i in 1..n {
                self.queue_page_bios_flagged(task, map, first + i, 1, pblk + i, flags, now);
            }
        }
    }

    /// The task's last queued bio, a run of single-page bios, takes `m` more
    /// (the next pages, on the next blocks). Not for kjournald (`extend_run`).
    fn grow_run(&mut self, task: TaskId, m: u64) -> bool {
        if self.tasks.kind(task) == TaskKind::KernelThread(KThread::Kjournald) {
            return false;
        }
        let last = self
            .tasks
            .get_mut(task)
            .pending
            .back_mut()
            .expect("just queued");
        let EndIo::PageCache { bio: tag } = last.owner.end_io else {
            return false;
        };
        let (ps, pseg) = last.piece_size();
        if ps as u64 != iostack_mm::PAGE_SIZE / 512 {
            return false;
        }
        let b = self.vm.bufbios.get_mut(tag);
        b.pages += m;
        b.left += m;
        b.bios += m as u32;
        last.sectors += m as u32 * ps;
        last.segments += m as u32 * pseg;
        last.run.nr += m as u32;
        true
    }

    /// The task's last queued bio becomes (or grows) a run (`BioRun`) when the
    /// bio for `pages` = (map, first page, count) at `sector` is the next one of
    /// it: the same size, owner and flags, following it in the file and on the
    /// device. The queue still takes each bio of a run as its own. Not for
    /// kjournald, which counts its bios in flight as it queues them.
    fn extend_run(
        &mut self,
        task: TaskId,
        (map, first, k): (u32, u64, u64),
        sector: u64,
        segments: u32,
        flags: ReqFlags,
    ) -> bool {
        if self.tasks.kind(task) == TaskKind::KernelThread(KThread::Kjournald) {
            return false;
        }
        let dev = self.map_dev(map);
        let Some(last) = self.tasks.get_mut(task).pending.back_mut() else {
            return false;
        };
        let EndIo::PageCache { bio: tag } = last.owner.end_io else {
            return false;
        };
        let sectors = (k * (iostack_mm::PAGE_SIZE / 512)) as u32;
        if last.dev != dev
            || last.flags != flags
            || last.end_sector() != sector
            || last.piece_size() != (sectors, segments)
        {
            return false;
        }
        let b = self.vm.bufbios.get_mut(tag);
        if b.map != map || b.first + b.pages != first {
            return false;
        }
        b.pages += k;
        b.left += k;
        b.bios += 1;
        last.sectors += sectors;
        last.segments += segments;
        last.run.nr += 1;
        true
    }

    /// The `rw` of a page-cache bio: readahead reads, and writeback flagged by
    /// the job's sync mode and the file system's `->writepage` path
    /// (`ReqFlags::writeback`).
    fn page_bio_flags(&mut self, task: TaskId, map: u32, write: bool) -> ReqFlags {
        let profile = self.cfg.tunables.profile();
        if !write {
            return ReqFlags::readahead(profile);
        }
        let sync_all = self.job_of(task).wbc.sync_all;
        let f = self.writeback_flags(map, sync_all);
        if self.background_pass(task) {
            f | ReqFlags::BACKGROUND
        } else {
            f
        }
    }

    /// Submit a task's queued bios. Returns true if it must sleep for a request.
    /// (Most calls find none: the check is kept out of the submitting loop.)
    #[inline]
    pub(crate) fn drain_pending(&mut self, task: TaskId, now: Instant) -> bool {
        !self.tasks.get(task).pending.is_empty() && self.submit_pending(task, now)
    }

    /// `drain_pending` on a task with bios queued.
    fn submit_pending(&mut self, task: TaskId, now: Instant) -> bool {
        while let Some(mut bio) = self.tasks.get_mut(task).pending.pop_front() {
            bio.submitted_at = now;
            let (r, rest) = self
                .queue
                .submit_bio_run(now, bio, &mut self.tracer, &mut self.out);
            if r == Submit::Sleeping {
                if let Some(rest) = rest {
                    self.tasks.get_mut(task).pending.push_front(rest);
                }
                self.tasks.block(task, Blocked::OnRequest);
                return true;
            }
        }
        false
    }

    /// Page-cache bios completed: `run.nr` bios of the run `tag`, from its
    /// `run.index`th. Each bio's completion is taken in turn, as
    /// `end_buffer_async_write` / `mpage_end_io` run per bio; after a run's
    /// first bio, the others of one completion can only end pages under
    /// writeback and, at the last, wake the map's waiters, so they are taken
    /// at once.
    pub(crate) fn buf_bios_done(&mut self, tag: u32, run: BioRun, now: Instant) {
        let b = *self.vm.bufbios.get(tag);
        let ppb = b.pages / b.bios as u64;
        let first = b.first + run.index as u64 * ppb;
        let pages = run.nr as u64 * ppb;
        self.vm.bufbios.get_mut(tag).left -= pages;
        if b.left == pages {
            self.vm.bufbios.free(tag);
        }
        if !b.write {
            for i in 0..run.nr as u64 {
                self.buf_bio_done(
                    BufBio {
                        first: first + i * ppb,
                        pages: ppb,
                        ..b
                    },
                    now,
                );
            }
            return;
        }
        self.buf_bio_done(
            BufBio {
                first,
                pages: ppb,
                ..b
            },
            now,
        );
        if run.nr > 1 {
            let rest = BufBio {
                first: first + ppb,
                pages: pages - ppb,
                ..b
            };
            self.buf_bio_done(rest, now);
        }
    }

    /// The completion of page-cache bio(s) over `b.first .. b.first + b.pages`.
    fn buf_bio_done(&mut self, b: BufBio, now: Instant) {
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
        if b.map == 0 {
            self.journal_metadata_written(b.first, b.pages);
        } else if self.xlog.is_some() {
            let ino = self.vm.map_ino[b.map as usize];
            self.xlog_end_io(ino, (b.first + b.pages) * iostack_mm::PAGE_SIZE);
        }
        let m = &mut self.vm.maps[b.map as usize];
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
        if !self.run_journal_op(TaskId(pi), now) {
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
        let room = if self.vm.buffers.is_some() {
            // 2.4's generic_file_write: balance_dirty at each commit_write.
            self.write24_room()
        } else {
            ratelimit.saturating_sub(p.dirtied_since_check).max(1)
        };
        let n = (op.last - op.pos).min(room);
        let ino = self.vm.map_ino[op.map as usize];
        let mut meta = Vec::new();
        if let Err(e) = self.write_begin(ino, op.pos, n, &mut meta) {
            let p = &mut self.procs[pi as usize];
            p.result.error = Some(format!("write: {e}"));
            p.buf.as_mut().unwrap().pos = op.last;
            self.evq
                .schedule(now, crate::world::Ev::BufDone(TaskId(pi)));
            return;
        }
        let m = &mut self.vm.maps[op.map as usize];
        let before = m.nr_cached();
        let clean: Vec<u64> = match self.vm.buffers {
            Some(_) => (op.pos..op.pos + n).filter(|&p| !m.dirty.get(p)).collect(),
            None => Vec::new(),
        };
        let newly = m.write_pages(op.pos, n, now);
        let added = m.nr_cached() - before;
        // 2.4's generic_commit_write: the page's buffers go on the dirty list
        // (after the indirect blocks prepare_write allocated).
        self.commit_write24(op.map, ino, &clean, now);
        let end_bytes = (op.pos + n) * iostack_mm::PAGE_SIZE;
        self.xlog_meet(ino);
        let grew = self.extend_i_size(ino, end_bytes);
        let create = {
            let p = &mut self.procs[pi as usize];
            let c = p.spec.fresh && !p.created;
            p.created = true;
            c
        };
        let call = crate::jbd::WriteCall {
            ino,
            first: op.pos,
            n,
            meta: &meta,
            grew_to: grew.then_some(end_bytes),
            create,
            call_start: op.pos * iostack_mm::PAGE_SIZE == op.offset,
        };
        let jop = self.journal_write_op(&call, now);
        self.xlog_write(TaskId(pi), ino, call.call_start, now);
        if added > 0 {
            self.vm.note_cached(op.map, op.pos, n);
        }
        self.vm.account_dirtied(op.map, newly, now);
        let mut cost = Duration(n * self.vm.cfg.copy_page_ns);
        if self.vm.buffers.is_some() {
            cost += self.balance_dirty24(TaskId(pi), now);
        }
        let p = &mut self.procs[pi as usize];
        p.buf.as_mut().unwrap().pos += n;
        p.dirtied_since_check += n;
        if p.dirtied_since_check >= ratelimit && self.vm.buffers.is_none() {
            let dirtied = p.dirtied_since_check;
            p.dirtied_since_check = 0;
            p.throttle = Some(Throttle::new(&self.vm, dirtied));
        }
        self.vm.reclaim();
        self.charge_sys(TaskId(pi), cost);
        if let Some(jop) = jop {
            self.add_journal_op(TaskId(pi), jop);
        }
        if !self.run_journal_op(TaskId(pi), now) {
            self.tasks.get_mut(TaskId(pi)).cpu_until = now + cost;
            return;
        }
        self.schedule_task(TaskId(pi), now + cost);
    }
}
