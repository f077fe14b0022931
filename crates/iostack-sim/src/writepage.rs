//! The per-page side of `write_cache_pages`: taking a page for writeback, the
//! `->writepage` flavours (ext3's per-buffer bios, ext2's mpage bios, XFS's
//! clustered ioends, ext4's delalloc extents mapped and submitted by
//! `mpage_da_map_blocks` / `mpage_da_submit_io`), and `lock_page` between
//! concurrent writeback callers. The walk itself (`write_cache_pages`, the inode
//! lists, the actors) is in `buffered.rs`.

use crate::task::Blocked;
use crate::world::Simulation;
use iostack_core::TaskId;
use iostack_des::Instant;
use iostack_fs::mount::WritepageKind;
use iostack_fs::FileExtent;
use iostack_mm::{FlusherState, Wcp};

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
                return Some(self.vm.flusher);
            }
        }
        if let Some(j) = self.lazy.throttle.as_ref().and_then(|t| t.job.as_ref()) {
            if holds(&j.cur) {
                return Some(self.lazy.task);
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

    /// `clear_page_dirty_for_io` + `set_page_writeback`.
    pub(crate) fn take_page(&mut self, map: usize, page: u64) {
        let m = &mut self.vm.maps[map];
        if m.dirty.clear(page) {
            self.vm.nr_dirty -= 1;
        }
        if m.writeback.set(page) {
            self.vm.nr_writeback += 1;
        }
    }

    /// `->writepage` of the generic writers: ext3's per-buffer bios, ext2's mpage
    /// bios and XFS's clustered ioends.
    pub(crate) fn writepage(
        &mut self,
        task: TaskId,
        w: &mut Wcp,
        kind: WritepageKind,
        page: u64,
        now: Instant,
    ) {
        let map = w.map;
        let pblk = self.map_page(map, page);
        match kind {
            WritepageKind::PerBuffer | WritepageKind::Ext4Da => {
                self.queue_page_bios(task, map, page, 1, pblk, true, now);
            }
            WritepageKind::Mpage | WritepageKind::XfsCluster => {
                let max_pages = (self.bio_limits.max_sectors as u64 / 8).max(1);
                match w.bio {
                    Some((first, n, pb))
                        if first + n == page && pb + n == pblk && n < max_pages =>
                    {
                        w.bio = Some((first, n + 1, pb));
                    }
                    Some((first, n, pb)) => {
                        self.queue_page_bios(task, map, first, n, pb, true, now);
                        w.bio = Some((page, 1, pblk));
                    }
                    None => w.bio = Some((page, 1, pblk)),
                }
            }
        }
    }

    /// The block of one page for writeback (allocating delayed blocks).
    pub(crate) fn map_page(&mut self, map: u32, page: u64) -> u64 {
        let ino = self.vm.map_ino[map as usize];
        if ino == u32::MAX {
            return page;
        }
        let mut runs: Vec<FileExtent> = Vec::new();
        match self.fs.map_for_writeback(ino, page, 1, &mut runs) {
            Ok(_) if !runs.is_empty() => runs[0].physical + (page - runs[0].logical),
            _ => panic!("writeback of page {page} of inode {ino}: no block mapping"),
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
        let mut l = first;
        let once = !self.vm.cfg.ext4_index_pages_written && !self.job_of(task).wbc.sync_all;
        while l < next {
            let before = runs.len();
            match self.fs.map_for_writeback(ino, l, next - l, &mut runs) {
                Ok(k) if k > 0 => l += k,
                _ => panic!("ext4 writeback of inode {ino} at {l}: allocation failed"),
            }
            debug_assert!(runs.len() > before);
            if once {
                break;
            }
        }
        for r in &runs {
            for i in 0..r.len {
                self.queue_page_bios(task, w.map, r.logical + i, 1, r.physical + i, true, now);
            }
        }
        if l < next {
            // ext4_da_writepage on a page with delayed buffers: redirty it.
            self.redirty_pages(w.map as usize, l, next);
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

    /// `redirty_page_for_writepage` on pages taken by `take_page` whose write did
    /// not start: dirty again, no longer under writeback.
    pub(crate) fn redirty_pages(&mut self, map: usize, first: u64, end: u64) {
        let m = &mut self.vm.maps[map];
        for p in first..end {
            if m.writeback.clear(p) {
                self.vm.nr_writeback -= 1;
            }
            if m.dirty.set(p) {
                self.vm.nr_dirty += 1;
            }
        }
    }
}
