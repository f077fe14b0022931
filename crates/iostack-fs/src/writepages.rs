//! The file systems' side of `write_cache_pages`: mm's `Writepages` for the
//! mounted file system (or a block device's own mapping), with each
//! `->writepages` flavour: `generic_writepages` over `block_write_full_page`
//! (ext3, block devices), ext2's `mpage_writepages`, XFS's `xfs_vm_writepage`
//! with `xfs_cluster_write`, and ext4's `ext4_da_writepages` (2.6.27's
//! `__mpage_da_writepage` / `mpage_da_map_blocks` / `mpage_da_submit_io`, as in
//! the October 2008 patch queue or with the merged fragmentation fix). Pages
//! become runs of blocks in `Vm::wb_out`; the simulation queues the bios.

use crate::mount::{MountedFs, WritepageKind};
use crate::writepage::{
    block_of_page, mpage_da_map_blocks, pages_for_writeback, writepage, writepage_extent,
};
use crate::FileExtent;
use iostack_core::TaskId;
use iostack_mm::pagecache::is_bdev;
use iostack_mm::{PageDone, PageRun, Restart, Vm, WbAction, Wbc, Wcp, Writepages};

/// The mounted file system as `write_cache_pages` calls it.
pub struct FsWriteback<'a> {
    fs: &'a mut dyn MountedFs,
    /// Pages in one bio (the queue's `max_sectors`).
    max_pages: u64,
    /// Runs of pages taken at once (XFS's cluster, mpage's run after a
    /// written page); false: page by page, as the kernel's loops go (the
    /// reference the run paths are tested against).
    runs: bool,
}

impl<'a> FsWriteback<'a> {
    pub fn new(fs: &'a mut dyn MountedFs, max_pages: u64) -> FsWriteback<'a> {
        FsWriteback {
            fs,
            max_pages,
            runs: true,
        }
    }

    /// The same writeback taken page by page: every page through
    /// `->writepage` and its own mapping call.
    pub fn page_by_page(mut self) -> Self {
        self.runs = false;
        self
    }

    /// The `->writepage(s)` flavour of mapping `map`: a block device's own
    /// mapping writes one buffer per page (`blkdev_writepage`).
    fn kind(&self, vm: &Vm, map: u32) -> WritepageKind {
        if is_bdev(vm.map_ino[map as usize]) {
            WritepageKind::PerBuffer
        } else {
            self.fs.writepage_kind()
        }
    }

    /// The block of one page for writeback (allocating delayed blocks;
    /// `blkdev_get_block` maps a device's page to its own block).
    fn map_page(&mut self, ino: u32, page: u64) -> u64 {
        if is_bdev(ino) {
            return page;
        }
        match block_of_page(&mut *self.fs, ino, page) {
            Some(pblk) => pblk,
            None => panic!("writeback of page {page} of inode {ino}: no block mapping"),
        }
    }

    /// `->writepage` of the generic writers on a page taken for writeback
    /// (ext3's per-buffer bios, ext2's mpage bios, XFS's ioend): the bio it
    /// closes goes out.
    fn write_page(&mut self, vm: &mut Vm, w: &mut Wcp, page: u64) {
        let pblk = self.map_page(vm.map_ino[w.map as usize], page);
        let kind = self.kind(vm, w.map);
        if let Some(run) = writepage(kind, &mut w.bio, page, pblk, self.max_pages) {
            vm.wb_out.push(WbAction::Write { map: w.map, run });
        }
    }

    /// `write_page` on each page of `[first, first + n)` in turn, the pages
    /// already taken (`xfs_convert_page` on each page of a cluster,
    /// `__mpage_writepage` on a run): the pages are mapped a record at a
    /// time (`map_pages_for_writeback`) and grow the open bio at once.
    fn write_pages(&mut self, vm: &mut Vm, w: &mut Wcp, first: u64, n: u64) {
        if !self.runs {
            for page in first..first + n {
                self.write_page(vm, w, page);
            }
            return;
        }
        let (map, ino, kind) = (w.map, vm.map_ino[w.map as usize], self.kind(vm, w.map));
        let mut push = |run| vm.wb_out.push(WbAction::Write { map, run });
        let (end, mut l) = (first + n, first);
        while l < end {
            if is_bdev(ino) {
                // blkdev_get_block: each page is its own block.
                writepage_extent(kind, &mut w.bio, (l, end - l, l), self.max_pages, &mut push);
                break;
            }
            let (bio, max) = (&mut w.bio, self.max_pages);
            let k = pages_for_writeback(&mut *self.fs, ino, (l, end - l), |s, n, pblk| {
                writepage_extent(kind, bio, (s, n, pblk), max, &mut push)
            });
            match k {
                Some(k) => l += k,
                None => panic!("writeback of page {l} of inode {ino}: no block mapping"),
            }
        }
    }

    /// `block_write_full_page` on each page of `[first, first + n)`: a bio
    /// per page, queued as runs of pages whose blocks follow one another.
    fn write_buffers(&mut self, vm: &mut Vm, map: u32, first: u64, n: u64) {
        let ino = vm.map_ino[map as usize];
        let mut open: Option<PageRun> = None;
        for page in first..first + n {
            let pblk = self.map_page(ino, page);
            match open.as_mut() {
                Some(r) if r.pblk + r.pages == pblk => r.pages += 1,
                _ => {
                    if let Some(run) = open.take() {
                        vm.wb_out.push(WbAction::WriteEach { map, run });
                    }
                    open = Some(PageRun {
                        first: page,
                        pages: 1,
                        pblk,
                    });
                }
            }
        }
        if let Some(run) = open {
            vm.wb_out.push(WbAction::WriteEach { map, run });
        }
    }

    /// ext4's `__mpage_da_writepage`: collect contiguous delalloc pages into
    /// an extent (locked, dirty tag set); on the first page that does not
    /// follow, write the extent and stop (`MPAGE_DA_EXTENT_TAIL`); after it,
    /// pass the rest of the pagevec over (`redirty_page_for_writepage`).
    fn da_writepage(
        &mut self,
        vm: &mut Vm,
        wbc: &Wbc,
        w: &mut Wcp,
        task: TaskId,
        page: u64,
    ) -> PageDone {
        if w.io_done {
            w.skipped += 1;
            return PageDone::PassedOver;
        }
        let first = match w.ext {
            Some((first, next)) if next != page => {
                self.flush_extent(vm, wbc, w, task, first, next);
                w.io_done = true;
                w.extent_tail = true;
                w.skipped += 1;
                return PageDone::ExtentTail;
            }
            Some((first, _)) => first,
            None => page,
        };
        w.ext = Some((first, page + 1));
        vm.extent_lock_page(task, w.map, first, page);
        PageDone::Written
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
    fn flush_extent(
        &mut self,
        vm: &mut Vm,
        wbc: &Wbc,
        w: &mut Wcp,
        task: TaskId,
        first: u64,
        next: u64,
    ) {
        let ino = vm.map_ino[w.map as usize];
        let mut runs: Vec<FileExtent> = Vec::new();
        let once = !vm.cfg.ext4_index_pages_written && !wbc.sync_all;
        let l = match mpage_da_map_blocks(&mut *self.fs, ino, first, next, once, &mut runs) {
            Ok(l) => l,
            Err((l, _)) => panic!("ext4 writeback of inode {ino} at {l}: allocation failed"),
        };
        for r in &runs {
            // ext4_da_writepage on each page: one bio per buffer.
            let run = PageRun {
                first: r.logical,
                pages: r.len,
                pblk: r.physical,
            };
            vm.wb_out.push(WbAction::WriteEach { map: w.map, run });
        }
        if l < next {
            // ext4_da_writepage on a page with delayed buffers: redirty it.
            vm.redirty_pages(w.map as usize, l, next);
            vm.ext4_redirtied += next - l;
        }
        // The pages are unlocked as they are written or redirtied.
        vm.extent_unlock(task, w.map, first, next);
        w.mpd_written += next - first;
        w.da_written += next - first;
        w.ext = None;
    }

    /// `cluster_step` on a queue not congested, with its pages taken as one
    /// run: the loop's checks decide where the cluster ends (the first page
    /// past the file, not dirty, under writeback or past the quota), so the
    /// pages before it are taken and written at once. (On a congested queue
    /// the cluster ends after its first page, and the loop is cheaper.)
    fn cluster_run(&mut self, vm: &mut Vm, wbc: &mut Wbc, w: &mut Wcp) -> u64 {
        let next = w.cluster.expect("an XFS cluster");
        let map = w.map as usize;
        let quota = wbc.nr_to_write.max(0) as u64;
        let m = &vm.maps[map];
        let bound = (next + self.max_pages.min(quota)).min(m.size_pages.max(next));
        let end = m.dirty.run_end(next, bound);
        let end = m.writeback.next_set(next, end).unwrap_or(end);
        let n = end - next;
        // The loop runs max_pages times unless a page fails a check.
        let stop = n < self.max_pages;
        if n > 0 {
            vm.take_pages(map, next, n);
            self.write_pages(vm, w, next, n);
        }
        wbc.nr_to_write -= n as i64;
        wbc.written += n;
        let p = next + n;
        w.done_index = w.done_index.max(p);
        w.cluster = if stop { None } else { Some(p) };
        if w.cluster.is_none() {
            if let Some(run) = w.bio.take() {
                vm.wb_out.push(WbAction::Write { map: w.map, run });
            }
        }
        vm.cfg.wb_page_ns * n
    }

    /// `ext4_da_writepages` after a `write_cache_pages` call: whether it calls
    /// again.
    fn da_restart(&self, vm: &Vm, wbc: &mut Wbc, w: &Wcp, congested: bool) -> Option<Restart> {
        let fixed = vm.cfg.ext4_index_pages_written;
        let dirty_left = vm.maps[w.map as usize].nr_dirty() > 0;
        if !fixed && !wbc.sync_all && w.extent_tail && wbc.nr_to_write > 0 {
            // The October 2008 ext4_da_writepages: on MPAGE_DA_EXTENT_TAIL it
            // starts a new transaction and calls mpage_da_writepages again for the
            // rest of its quota, from wherever write_cache_pages now starts
            // (mapping->writeback_index, just stored past the redirtied pages).
            // write_cache_pages returns at once for a non-blocking caller that
            // finds the queue congested.
            if !(wbc.nonblocking && congested) {
                return Some(Restart::Fresh);
            }
            wbc.encountered_congestion = true;
        }
        if (fixed || wbc.sync_all) && w.mpd_written > 0 && wbc.nr_to_write > 0 && dirty_left {
            // The fixed ext4_da_writepages loops for the rest of its quota; a
            // data-integrity pass (fsync) goes on until the range is clean.
            return Some(Restart::Continue);
        }
        if wbc.sync_all && w.skipped > 0 && dirty_left {
            // A data-integrity pass continues from where each extent stopped
            // (range_cont), so the pages a pagevec redirtied after an extent sit
            // behind it. ext4_da_writepages must not return from a WB_SYNC_ALL
            // call with pages skipped (Aneesh Kumar's 16 Oct 2008 revision of
            // the fragmentation fix compares wbc->pages_skipped with its value on
            // entry and reports "This should not happen" otherwise): go back to
            // the start of the range, so that fsync writes every page that was
            // dirty when it began. Each such pass writes the extent before its
            // skipped pages, so this ends.
            return Some(Restart::Fresh);
        }
        None
    }
}

impl Writepages for FsWriteback<'_> {
    fn writepage(
        &mut self,
        vm: &mut Vm,
        wbc: &Wbc,
        w: &mut Wcp,
        task: TaskId,
        page: u64,
    ) -> PageDone {
        if self.kind(vm, w.map) == WritepageKind::Ext4Da {
            return self.da_writepage(vm, wbc, w, task, page);
        }
        // clear_page_dirty_for_io, then ->writepage.
        vm.take_page(w.map as usize, page);
        self.write_page(vm, w, page);
        PageDone::Written
    }

    /// A run of pages after one written: ext4 goes on collecting them into
    /// its extent (`__mpage_da_writepage` on each page that follows it);
    /// the generic writers take each page and write it (`__writepage`).
    /// XFS's pages after a written one are its cluster's, not a run's.
    fn writepage_run(
        &mut self,
        vm: &mut Vm,
        _wbc: &Wbc,
        w: &mut Wcp,
        task: TaskId,
        (first, n): (u64, u64),
    ) -> u64 {
        match self.kind(vm, w.map) {
            WritepageKind::Ext4Da => match w.ext {
                Some((efirst, next)) if next == first && !w.io_done => {
                    w.ext = Some((efirst, first + n));
                    vm.extent_lock_pages(task, w.map, efirst, (first, n));
                    n
                }
                _ => 0,
            },
            WritepageKind::XfsCluster => 0,
            // clear_page_dirty_for_io on each, then ->writepage on each:
            // neither looks at the other pages.
            WritepageKind::PerBuffer => {
                vm.take_pages(w.map as usize, first, n);
                self.write_buffers(vm, w.map, first, n);
                n
            }
            WritepageKind::Mpage => {
                vm.take_pages(w.map as usize, first, n);
                self.write_pages(vm, w, first, n);
                n
            }
        }
    }

    fn clusters(&self, vm: &Vm, w: &Wcp) -> bool {
        self.kind(vm, w.map) == WritepageKind::XfsCluster
    }

    /// After each page `xfs_convert_page` checks `bdi_write_congested` for
    /// every caller, blocking or not, and ends the cluster if the queue is
    /// congested (the queue's state changes between steps, when bios are
    /// submitted); the cluster also ends at a page that is not dirty, or
    /// under writeback, or past the quota.
    fn cluster_step(&mut self, vm: &mut Vm, wbc: &mut Wbc, w: &mut Wcp, congested: bool) -> u64 {
        if self.runs && !congested {
            return self.cluster_run(vm, wbc, w);
        }
        let next = w.cluster.expect("an XFS cluster");
        let map = w.map as usize;
        let mut cost = 0u64;
        let mut p = next;
        let mut stop = false;
        for _ in 0..self.max_pages {
            if congested && p > next {
                wbc.encountered_congestion = true;
                stop = true;
                break;
            }
            let m = &vm.maps[map];
            if p >= m.size_pages || !m.dirty.get(p) || m.writeback.get(p) || wbc.nr_to_write <= 0 {
                stop = true;
                break;
            }
            vm.take_page(map, p);
            self.write_page(vm, w, p);
            cost += vm.cfg.wb_page_ns;
            wbc.nr_to_write -= 1;
            wbc.written += 1;
            p += 1;
        }
        w.done_index = w.done_index.max(p);
        w.cluster = if stop { None } else { Some(p) };
        if w.cluster.is_none() {
            if let Some(run) = w.bio.take() {
                vm.wb_out.push(WbAction::Write { map: w.map, run });
            }
        }
        cost
    }

    /// `mpage_bio_submit` of the open bio (`mpage_writepages`, the XFS
    /// ioend); ext4's `mpage_da_writepages` handles the last extent.
    fn end_walk(&mut self, vm: &mut Vm, wbc: &Wbc, w: &mut Wcp, task: TaskId) {
        if let Some(run) = w.bio.take() {
            vm.wb_out.push(WbAction::Write { map: w.map, run });
        }
        if let Some((first, next)) = w.ext {
            self.flush_extent(vm, wbc, w, task, first, next);
            w.io_done = true;
        }
    }

    /// "ext4: Fix file fragmentation during large file write": the cursor
    /// advances by what ext4 wrote.
    fn writeback_index(&self, vm: &Vm, w: &Wcp) -> Option<u64> {
        (self.kind(vm, w.map) == WritepageKind::Ext4Da && vm.cfg.ext4_index_pages_written)
            .then_some(w.da_start + w.da_written)
    }

    fn restart(&mut self, vm: &Vm, wbc: &mut Wbc, w: &Wcp, congested: bool) -> Option<Restart> {
        if self.kind(vm, w.map) != WritepageKind::Ext4Da {
            return None;
        }
        self.da_restart(vm, wbc, w, congested)
    }
}
