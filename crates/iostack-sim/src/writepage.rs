//! The per-page side of `write_cache_pages` as the simulation carries it out:
//! the file systems' `->writepage` flavours (`iostack_fs::writepage`: ext3's
//! per-buffer bios, ext2's mpage bios, XFS's clustered ioends, ext4's
//! `mpage_da_map_blocks`) turned into bios on the caller's queue, ext4's
//! `mpage_da_submit_io` with its redirtying, and `lock_page` between concurrent
//! writeback callers (who holds a page, who waits). The walk itself is in
//! `buffered.rs`; taking and redirtying pages is mm's (`Vm::take_page`).

use crate::task::Blocked;
use crate::world::Simulation;
use iostack_core::TaskId;
use iostack_des::Instant;
use iostack_fs::mount::WritepageKind;
use iostack_fs::{writepage, FileExtent};
use iostack_mm::{FlusherState, PageRun, Wcp};

impl Simulation {
    /// `lock_page` in `write_cache_pages`: if the task stopped at a page another
    /// caller holds in its extent, sleep until that extent is written (its bios
    /// already submitted). Returns whether the task sleeps.
    pub(crate) fn page_lock_wait(&mut self, task: TaskId) -> bool {
        let Some(w) = self.job_of(task).cur.as_ref() else {
            return false;
        };
        let (map, Some(page)) = (w.map, w.lock_wait) else {
            return false;
        };
        if self.vm.maps[map as usize].wb_locked.get(page) {
            if !self.vm.lock_waiters.contains(&(task, map, page)) {
                self.vm.lock_waiters.push((task, map, page));
                self.vm.lock_waits += 1;
            }
            self.tasks.block(task, Blocked::OnPage);
            return true;
        }
        self.job_of(task).cur.as_mut().unwrap().lock_wait = None;
        false
    }

    /// The caller whose open extent holds `page` of `map`, if any.
    pub(crate) fn wb_lock_owner(&self, map: u32, page: u64) -> Option<TaskId> {
        let holds = |w: &Option<Wcp>| {
            w.as_ref().is_some_and(|w| {
                w.map == map
                    && w.ext
                        .is_some_and(|(first, next)| first <= page && page < next)
            })
        };
        if let FlusherState::Running { job, .. } = &self.vm.flusher_state {
            if holds(&job.cur) {
                return Some(self.flusher());
            }
        }
        if let Some(j) = self.lazy.throttle.as_ref().and_then(|t| t.job.as_ref()) {
            if holds(&j.cur) {
                return Some(self.tasks.kthread(crate::task::KThread::LazyInit));
            }
        }
        for (i, p) in self.procs.iter().enumerate() {
            let fsync = p.fsync.as_ref().map(|j| &j.cur);
            let thr = p
                .throttle
                .as_ref()
                .and_then(|t| t.job.as_ref())
                .map(|j| &j.cur);
            if fsync.is_some_and(holds) || thr.is_some_and(holds) {
                return Some(TaskId(i as u32));
            }
        }
        None
    }

    /// `->writepage` of the generic writers (ext3's per-buffer bios, ext2's mpage
    /// bios, XFS's clustered ioends: `iostack_fs::writepage`); the bio it closes
    /// goes to the task's queue.
    pub(crate) fn writepage(
        &mut self,
        task: TaskId,
        w: &mut Wcp,
        kind: WritepageKind,
        page: u64,
        now: Instant,
    ) {
        let pblk = self.map_page(w.map, page);
        let max_pages = (self.bio_limits.max_sectors as u64 / 8).max(1);
        if let Some(r) = writepage::writepage(kind, &mut w.bio, page, pblk, max_pages) {
            self.queue_run(task, w.map, r, now);
        }
    }

    /// Queue the write bios of a run of pages.
    pub(crate) fn queue_run(&mut self, task: TaskId, map: u32, r: PageRun, now: Instant) {
        self.queue_page_bios(task, map, r.first, r.pages, r.pblk, true, now);
    }

    /// The block of one page for writeback (allocating delayed blocks).
    pub(crate) fn map_page(&mut self, map: u32, page: u64) -> u64 {
        let ino = self.vm.map_ino[map as usize];
        if crate::bdev::is_bdev(ino) {
            return page;
        }
        match writepage::block_of_page(&mut *self.fs, ino, page) {
            Some(pblk) => pblk,
            None => panic!("writeback of page {page} of inode {ino}: no block mapping"),
        }
    }

    /// ext4: `mpage_da_map_blocks` (mballoc allocates the run) and
    /// `mpage_da_submit_io` (`ext4_da_writepage` per page, one bio per buffer).
    ///
    /// `mpage_da_map_blocks` calls `ext4_da_get_block_write` once for the whole
    /// extent, and mballoc may return fewer blocks than asked: the request is cut
    /// at the end of the inode preallocation it is served from
    /// (`ext4_mb_use_inode_pa`), i.e. at the normalisation window. Only the mapped
    /// buffers lose BH_Delay (`mpage_put_bnr_to_bhs`); `mpage_da_submit_io` still
    /// calls `ext4_da_writepage` on every page of the extent, and that redirties
    /// (`redirty_page_for_writepage`) the pages whose buffers are still delayed.
    /// In the October 2008 code those pages sit behind the `writeback_index` that
    /// `write_cache_pages` stores (past the pagevec), so they wait for a later pass
    /// to come round to them. The merged fix restarts from the first page not
    /// written, which here is a loop until the extent is mapped.
    pub(crate) fn ext4_flush_extent(
        &mut self,
        task: TaskId,
        w: &mut Wcp,
        first: u64,
        next: u64,
        now: Instant,
    ) {
        let ino = self.vm.map_ino[w.map as usize];
        let mut runs: Vec<FileExtent> = Vec::new();
        let once = !self.vm.cfg.ext4_index_pages_written && !self.job_of(task).wbc.sync_all;
        let l = match writepage::mpage_da_map_blocks(
            &mut *self.fs,
            ino,
            first,
            next,
            once,
            &mut runs,
        ) {
            Ok(l) => l,
            Err((l, _)) => panic!("ext4 writeback of inode {ino} at {l}: allocation failed"),
        };
        for r in &runs {
            for i in 0..r.len {
                self.queue_page_bios(task, w.map, r.logical + i, 1, r.physical + i, true, now);
            }
        }
        if l < next {
            // ext4_da_writepage on a page with delayed buffers: redirty it.
            self.vm.redirty_pages(w.map as usize, l, next);
            self.vm.ext4_redirtied += next - l;
        }
        // The pages are unlocked as they are written or redirtied.
        self.vm.maps[w.map as usize]
            .wb_locked
            .clear_range(first, next - first);
        let map = w.map;
        let mut i = 0;
        while i < self.vm.lock_waiters.len() {
            let (t, m, p) = self.vm.lock_waiters[i];
            if m == map && first <= p && p < next {
                self.vm.lock_waiters.swap_remove(i);
                self.wake_task(t, now);
            } else {
                i += 1;
            }
        }
        w.mpd_written += next - first;
        w.da_written += next - first;
        w.ext = None;
    }
}
