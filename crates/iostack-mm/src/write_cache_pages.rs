//! `write_cache_pages` (`mm/page-writeback.c`) as a resumable walk over one
//! mapping, one `pagevec_lookup_tag` batch per step, in its 2.6.28 form (finish
//! the pagevec when done, keep `index`) and its 2.6.29+ form (`wcp_break`: stop
//! inside the pagevec, keep `done_index`).
//!
//! Sans-IO: a step takes the caller's job and the queue's write congestion,
//! changes the page cache, and leaves what the caller must carry out in
//! `Vm::wb_out` (`WbAction`: write bios for a run of pages, wake a task). The
//! file system's side (the `writepage_t` callback and the `->writepages` around
//! the walk) is the `Writepages` trait, implemented in iostack-fs; mm knows no
//! blocks and no bios.

use crate::pagecache::Vm;
use crate::wbc::{WbAction, WbJob, Wbc, Wcp};
use crate::writeback::PAGEVEC_SIZE;
use iostack_core::TaskId;

/// What the file system's callback did with a page (`writepage_t`'s return).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageDone {
    /// Written, or collected for a later write: counts against `nr_to_write`.
    Written,
    /// Passed over and left dirty: not counted.
    PassedOver,
    /// ext4's `MPAGE_DA_EXTENT_TAIL`: passed over, and the walk is done.
    ExtentTail,
}

/// How a file system's `->writepages` calls `write_cache_pages` again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// A new call from wherever `write_cache_pages` now starts.
    Fresh,
    /// The same call goes on for the rest of its quota (from where it stopped
    /// when the cursor did not move), carrying its skipped pages.
    Continue,
}

/// Who runs a step, and the queue state it sees.
#[derive(Clone, Copy, Debug)]
pub struct WcpCaller {
    pub task: TaskId,
    pub is_flusher: bool,
    /// `bdi_write_congested`: the queue's state does not change within a step
    /// (bios are submitted between steps).
    pub congested: bool,
}

/// The file system's side of `write_cache_pages`: the `writepage_t` callback
/// with its `data` (kept in the `Wcp`: the open bio, ext4's extent, XFS's
/// cluster) and the `->writepages` around the walk.
pub trait Writepages {
    /// The callback on a dirty page not under writeback (`__writepage` →
    /// `->writepage`, `__mpage_writepage`, `__mpage_da_writepage`).
    fn writepage(
        &mut self,
        vm: &mut Vm,
        wbc: &Wbc,
        w: &mut Wcp,
        task: TaskId,
        page: u64,
    ) -> PageDone;
    /// The callback on each page of `[first, first + n)` in turn, when each
    /// is dirty, not under writeback and not locked in another caller's
    /// extent, and the callback just returned `Written` for page `first - 1`:
    /// returns `n` if it took them all as the page-by-page calls would
    /// (each `Written`, with the same effects), or 0 if it cannot take the
    /// run at once (`write_cache_pages` then goes page by page).
    fn writepage_run(
        &mut self,
        _vm: &mut Vm,
        _wbc: &Wbc,
        _w: &mut Wcp,
        _task: TaskId,
        (_first, _n): (u64, u64),
    ) -> u64 {
        0
    }
    /// XFS: after a page, `xfs_cluster_write` goes on from the next one.
    fn clusters(&self, vm: &Vm, w: &Wcp) -> bool;
    /// `xfs_cluster_write` / `xfs_convert_page`: one bio's worth of the pages
    /// from `w.cluster`; returns the CPU time used.
    fn cluster_step(&mut self, vm: &mut Vm, wbc: &mut Wbc, w: &mut Wcp, congested: bool) -> u64;
    /// The end of the walk: submit the open bio, write the last extent.
    fn end_walk(&mut self, vm: &mut Vm, wbc: &Wbc, w: &mut Wcp, task: TaskId);
    /// Where the file system leaves `mapping->writeback_index`, if not where
    /// `write_cache_pages` does.
    fn writeback_index(&self, vm: &Vm, w: &Wcp) -> Option<u64>;
    /// Whether `->writepages` calls `write_cache_pages` again.
    fn restart(&mut self, vm: &Vm, wbc: &mut Wbc, w: &Wcp, congested: bool) -> Option<Restart>;
}

impl Vm {
    /// One step of `job`'s `write_cache_pages` call (`job.cur`): a cluster step,
    /// or one pagevec. Returns the CPU time used; the call may finish (then
    /// `job.cur` is `None`, or a restarted call).
    pub fn wcp_step(&mut self, job: &mut WbJob, c: WcpCaller, fs: &mut dyn Writepages) -> u64 {
        let mut w = job.cur.take().expect("a write_cache_pages call");
        if w.cluster.is_some() {
            let cost = fs.cluster_step(self, &mut job.wbc, &mut w, c.congested);
            self.wcp_page_done(&mut job.wbc, &mut w, c.congested);
            if w.done && (self.cfg.wcp_break || w.pvec_pos >= w.pvec.len()) {
                self.wcp_finish(job, w, c, fs);
            } else {
                job.cur = Some(w);
            }
            return cost.max(1);
        }
        if w.pvec_pos >= w.pvec.len() {
            if w.done || !self.pagevec_lookup_tag(&mut w) {
                self.wcp_finish(job, w, c, fs);
                return 1;
            }
            if w.pvec.is_empty() {
                // The range wrapped to its start (range_cyclic).
                job.cur = Some(w);
                return 1;
            }
        }
        let cost = self.wcp_pagevec(job, &mut w, c, fs);
        self.wcp_continue(job, w, c, fs);
        cost.max(1)
    }

    /// After a pagevec: finish the call if it is done, else keep it.
    fn wcp_continue(
        &mut self,
        job: &mut WbJob,
        w: Box<Wcp>,
        c: WcpCaller,
        fs: &mut dyn Writepages,
    ) {
        if w.lock_wait.is_none()
            && w.done
            && (self.cfg.wcp_break || w.pvec_pos >= w.pvec.len())
            && w.cluster.is_none()
        {
            self.wcp_finish(job, w, c, fs);
        } else {
            job.cur = Some(w);
        }
    }

    /// `pagevec_lookup_tag(PAGECACHE_TAG_DIRTY)`: up to `PAGEVEC_SIZE` dirty
    /// pages from `w.index`, and pages another caller holds locked in its
    /// extent (their dirty tag is still set). At the end of the range,
    /// `range_cyclic` wraps once to the start (the pagevec is left empty).
    /// Returns false when the walk is over.
    fn pagevec_lookup_tag(&self, w: &mut Wcp) -> bool {
        w.pvec.clear();
        w.pvec_pos = 0;
        let m = &self.maps[w.map as usize];
        let range = (w.index, w.end.saturating_add(1));
        m.dirty
            .gang_lookup_either(&m.wb_locked, range, PAGEVEC_SIZE as usize, &mut w.pvec);
        if w.pvec.is_empty() {
            let wrap = if self.cfg.wcp_break {
                !w.cycled
            } else {
                !w.scanned
            };
            if wrap && !w.done && w.start > 0 {
                w.scanned = true;
                w.cycled = true;
                w.index = 0;
                w.end = w.start - 1;
                return true;
            }
            return false;
        }
        w.scanned = true;
        w.index = *w.pvec.last().unwrap() + 1;
        true
    }

    /// The pages of the pagevec: `lock_page`, skip pages cleaned or under
    /// writeback meanwhile, call the file system's callback, count
    /// `nr_to_write`, stop when done. Returns the CPU time used.
    fn wcp_pagevec(
        &mut self,
        job: &mut WbJob,
        w: &mut Wcp,
        c: WcpCaller,
        fs: &mut dyn Writepages,
    ) -> u64 {
        let wcp_break = self.cfg.wcp_break;
        let mut cost = 0u64;
        while w.pvec_pos < w.pvec.len() {
            let page = w.pvec[w.pvec_pos];
            if self.must_wait_for_lock(w, page) {
                w.lock_wait = Some(page);
                break;
            }
            w.pvec_pos += 1;
            let m = &self.maps[w.map as usize];
            if !m.dirty.get(page) || m.writeback.get(page) {
                // Taken by a concurrent caller, or still under writeback.
                continue;
            }
            if w.done && wcp_break {
                w.pvec_pos = w.pvec.len();
                break;
            }
            match fs.writepage(self, &job.wbc, w, c.task, page) {
                PageDone::Written => {}
                PageDone::PassedOver => continue,
                PageDone::ExtentTail => {
                    w.done = true;
                    continue;
                }
            }
            cost += self.cfg.wb_page_ns;
            w.done_index = page + 1;
            job.wbc.nr_to_write -= 1;
            job.wbc.written += 1;
            self.wcp_page_done(&mut job.wbc, w, c.congested);
            if !w.done && fs.clusters(self, w) {
                // The cluster goes on from the next page in later steps.
                w.cluster = Some(page + 1);
                break;
            }
            cost += self.wcp_run(job, w, c, fs, page);
        }
        cost
    }

    /// After `page` was written: the pagevec's next pages, when they follow it
    /// one by one in the file and are dirty, not under writeback and not
    /// locked in another caller's extent, pass every check of the loop in
    /// `wcp_pagevec`, so they go to the callback as one run
    /// (`Writepages::writepage_run`) and are counted as the loop counts them.
    /// The run stops where 2.6.29+ would stop at `done` (the quota). Returns
    /// the CPU time used.
    fn wcp_run(
        &mut self,
        job: &mut WbJob,
        w: &mut Wcp,
        c: WcpCaller,
        fs: &mut dyn Writepages,
        page: u64,
    ) -> u64 {
        let (pos, first) = (w.pvec_pos, page + 1);
        let mut n = 0;
        while w.pvec.get(pos + n) == Some(&(first + n as u64)) {
            n += 1;
        }
        let mut n = n as u64;
        if self.cfg.wcp_break {
            if w.done {
                return 0;
            }
            if !job.wbc.sync_all {
                n = n.min(job.wbc.nr_to_write.max(0) as u64);
            }
        }
        if n == 0 {
            return 0;
        }
        let m = &self.maps[w.map as usize];
        let end = m.dirty.run_end(first, first + n);
        let end = m.writeback.next_set(first, end).unwrap_or(end);
        let end = m.wb_locked.next_set(first, end).unwrap_or(end);
        if end == first {
            return 0;
        }
        let took = fs.writepage_run(self, &job.wbc, w, c.task, (first, end - first));
        if took == 0 {
            return 0;
        }
        debug_assert_eq!(took, end - first);
        w.pvec_pos += took as usize;
        w.done_index = first + took;
        job.wbc.nr_to_write -= took as i64;
        job.wbc.written += took;
        // Once per page in the loop; `done` only ever becomes set.
        self.wcp_page_done(&mut job.wbc, w, c.congested);
        self.cfg.wb_page_ns * took
    }

    /// After a page: done when the quota is used up (`WB_SYNC_NONE`), or when
    /// a non-blocking caller finds the queue congested.
    fn wcp_page_done(&self, wbc: &mut Wbc, w: &mut Wcp, congested: bool) {
        if wbc.nr_to_write <= 0 && !wbc.sync_all {
            w.done = true;
        }
        if wbc.nonblocking && congested {
            wbc.encountered_congestion = true;
            w.done = true;
        }
    }

    /// `lock_page` on a page another caller holds in its open extent: wait for
    /// it. Two callers each waiting for the other's pages would deadlock;
    /// `write_cache_pages` locks in ascending order within a pass, so that
    /// cannot happen, but a wait that would close a cycle is treated as the
    /// page being taken.
    fn must_wait_for_lock(&self, w: &Wcp, page: u64) -> bool {
        let in_own = |p: u64| w.ext.is_some_and(|(first, next)| first <= p && p < next);
        if !self.maps[w.map as usize].wb_locked.get(page) || in_own(page) {
            return false;
        }
        let Some(owner) = self.extent_owner(w.map, page) else {
            return false;
        };
        let cycle = self
            .lock_waiters
            .iter()
            .any(|&(t, m, p)| t == owner && m == w.map && in_own(p));
        !cycle
    }

    /// `lock_page` in `write_cache_pages`: if the call stopped at a page
    /// another caller holds in its extent, the task sleeps until that extent
    /// is written (true); else it goes on.
    pub fn wcp_lock_wait(&mut self, task: TaskId, w: &mut Wcp) -> bool {
        let Some(page) = w.lock_wait else {
            return false;
        };
        let map = w.map;
        if self.maps[map as usize].wb_locked.get(page) {
            if !self.lock_waiters.contains(&(task, map, page)) {
                self.lock_waiters.push((task, map, page));
                self.lock_waits += 1;
            }
            return true;
        }
        w.lock_wait = None;
        false
    }

    /// The end of one `write_cache_pages` call and of the `->writepages`
    /// around it: the file system submits what is open, the cursor
    /// (`mapping->writeback_index`) moves for `range_cyclic`, the file system
    /// may call again; else `I_SYNC` is released and the inode requeued
    /// (`__sync_single_inode`).
    fn wcp_finish(
        &mut self,
        job: &mut WbJob,
        mut w: Box<Wcp>,
        c: WcpCaller,
        fs: &mut dyn Writepages,
    ) {
        fs.end_walk(self, &job.wbc, &mut w, c.task);
        let map = w.map;
        let cyclic = job.wbc.range_cyclic;
        let may_move = cyclic && (!self.cfg.flusher_only_index || c.is_flusher);
        if may_move {
            let index = match fs.writeback_index(self, &w) {
                Some(i) => i,
                None if self.cfg.wcp_break => w.done_index,
                None => w.index,
            };
            self.maps[map as usize].writeback_index = index;
        }
        if let Some(r) = fs.restart(self, &mut job.wbc, &w, c.congested) {
            let mut nw = self.wcp_begin(cyclic, c.task, map, false, c.is_flusher);
            nw.owns_isync = w.owns_isync;
            if r == Restart::Continue {
                if !may_move {
                    nw.index = w.index;
                    nw.start = w.index;
                }
                nw.da_start = nw.start;
                nw.skipped = w.skipped;
            }
            // The box of the call that ended holds the new one.
            *w = nw;
            job.cur = Some(w);
            return;
        }
        if w.owns_isync {
            let quota_left = job.wbc.nr_to_write > 0;
            if self.inode_written(map, quota_left) {
                job.wbc.more_io = true;
            }
        }
        job.cur = None;
    }

    /// The task whose open extent holds `page` of `map` locked, if any.
    pub fn extent_owner(&self, map: u32, page: u64) -> Option<TaskId> {
        self.wb_extents
            .iter()
            .find(|&&(_, m, first, next)| m == map && first <= page && page < next)
            .map(|&(t, ..)| t)
    }

    /// ext4 collecting an extent (`__mpage_da_writepage`): the page is taken
    /// for writeback (`clear_page_dirty_for_io`) and stays locked, its dirty
    /// tag set, in `task`'s extent `[first, page + 1)`.
    pub fn extent_lock_page(&mut self, task: TaskId, map: u32, first: u64, page: u64) {
        self.take_page(map as usize, page);
        self.maps[map as usize].wb_locked.set(page);
        let e = (task, map, first, page + 1);
        match self.wb_extents.iter_mut().find(|x| x.0 == task) {
            Some(x) => *x = e,
            None => self.wb_extents.push(e),
        }
    }

    /// `extent_lock_page` on each page of `[page, page + n)` in turn: the
    /// extent `[first, page + n)`.
    pub fn extent_lock_pages(&mut self, task: TaskId, map: u32, first: u64, (page, n): (u64, u64)) {
        self.take_pages(map as usize, page, n);
        self.maps[map as usize].wb_locked.set_range(page, n);
        let e = (task, map, first, page + n);
        match self.wb_extents.iter_mut().find(|x| x.0 == task) {
            Some(x) => *x = e,
            None => self.wb_extents.push(e),
        }
    }

    /// The pages of `task`'s extent `[first, next)` are unlocked as they are
    /// written or redirtied (`mpage_da_submit_io`): wake their `lock_page`
    /// waiters.
    pub fn extent_unlock(&mut self, task: TaskId, map: u32, first: u64, next: u64) {
        self.maps[map as usize]
            .wb_locked
            .clear_range(first, next - first);
        self.wb_extents.retain(|x| x.0 != task);
        let mut i = 0;
        while i < self.lock_waiters.len() {
            let (t, m, p) = self.lock_waiters[i];
            if m == map && first <= p && p < next {
                self.lock_waiters.swap_remove(i);
                self.wb_out.push(WbAction::Wake(t));
            } else {
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bdp::tests::vm;
    use crate::wbc::PageRun;
    use iostack_des::Instant;

    /// A file system whose `->writepage` writes each page to the block of
    /// the same number, one bio per page.
    struct OnePerPage;

    impl Writepages for OnePerPage {
        fn writepage(
            &mut self,
            vm: &mut Vm,
            _: &Wbc,
            w: &mut Wcp,
            _: TaskId,
            page: u64,
        ) -> PageDone {
            vm.take_page(w.map as usize, page);
            let run = PageRun {
                first: page,
                pages: 1,
                pblk: page,
            };
            vm.wb_out.push(WbAction::Write { map: w.map, run });
            PageDone::Written
        }
        fn clusters(&self, _: &Vm, _: &Wcp) -> bool {
            false
        }
        fn cluster_step(&mut self, _: &mut Vm, _: &mut Wbc, _: &mut Wcp, _: bool) -> u64 {
            unreachable!("no clusters")
        }
        fn end_walk(&mut self, _: &mut Vm, _: &Wbc, _: &mut Wcp, _: TaskId) {}
        fn writeback_index(&self, _: &Vm, _: &Wcp) -> Option<u64> {
            None
        }
        fn restart(&mut self, _: &Vm, _: &mut Wbc, _: &Wcp, _: bool) -> Option<Restart> {
            None
        }
    }

    /// `OnePerPage`, taking a run of pages at once (`writepage_run`) or not.
    struct Runs(bool);

    impl Writepages for Runs {
        fn writepage(&mut self, vm: &mut Vm, b: &Wbc, w: &mut Wcp, t: TaskId, p: u64) -> PageDone {
            OnePerPage.writepage(vm, b, w, t, p)
        }
        fn writepage_run(
            &mut self,
            vm: &mut Vm,
            _: &Wbc,
            w: &mut Wcp,
            _: TaskId,
            (first, n): (u64, u64),
        ) -> u64 {
            if !self.0 {
                return 0;
            }
            vm.take_pages(w.map as usize, first, n);
            for page in first..first + n {
                let run = PageRun {
                    first: page,
                    pages: 1,
                    pblk: page,
                };
                vm.wb_out.push(WbAction::Write { map: w.map, run });
            }
            n
        }
        fn clusters(&self, _: &Vm, _: &Wcp) -> bool {
            false
        }
        fn cluster_step(&mut self, _: &mut Vm, _: &mut Wbc, _: &mut Wcp, _: bool) -> u64 {
            unreachable!("no clusters")
        }
        fn end_walk(&mut self, _: &mut Vm, _: &Wbc, _: &mut Wcp, _: TaskId) {}
        fn writeback_index(&self, _: &Vm, _: &Wcp) -> Option<u64> {
            None
        }
        fn restart(&mut self, _: &Vm, _: &mut Wbc, _: &Wcp, _: bool) -> Option<Restart> {
            None
        }
    }

    /// One random writeback pass (quota, sync mode, congestion, pagevec
    /// break, pages dirty, under writeback or locked in another task's
    /// extent), with or without runs: what each step did and the state left.
    fn random_pass(seed: u64, runs: bool) -> (Vec<String>, String) {
        let mut rng = iostack_des::Rng::stream(iostack_des::Seed(seed), "wcp-runs");
        let mut vm = vm(false);
        vm.cfg.wcp_break = rng.below(2) == 0;
        let map = vm.map_of(12, 400);
        for _ in 0..1 + rng.below(8) {
            let (s, n) = (rng.below(400), rng.below(90));
            let newly = vm.maps[map as usize].write_pages(s, n.min(400 - s), Instant::ZERO);
            vm.account_dirtied(map, newly, Instant::ZERO);
        }
        for _ in 0..rng.below(3) {
            let p = rng.below(400);
            if vm.maps[map as usize].writeback.set(p) {
                vm.nr_writeback += 1;
            }
        }
        if rng.below(3) == 0 {
            let s = rng.below(390);
            for p in s..s + rng.below(10) {
                vm.extent_lock_page(TaskId(9), map, s, p);
            }
        }
        vm.maps[map as usize].writeback_index = rng.below(400);
        let wbc = if rng.below(4) == 0 {
            Wbc::for_fsync(map)
        } else {
            Wbc::cyclic(rng.below(300), rng.below(2) == 0)
        };
        let c = WcpCaller {
            congested: rng.below(3) == 0,
            ..caller(0)
        };
        let mut job = WbJob::new(wbc);
        let mut fs = Runs(runs);
        let mut steps = Vec::new();
        for _ in 0..200 {
            let step = vm.writeback_step(&mut job, c, &mut fs);
            steps.push(format!("{step:?} {:?}", std::mem::take(&mut vm.wb_out)));
            if step != crate::writeback_job::JobStep::Ran(step_cost(step)) || job.cur.is_none() {
                break;
            }
        }
        let m = &vm.maps[map as usize];
        let bits = |b: &crate::PageBits| (0..400).filter(|&p| b.get(p)).collect::<Vec<_>>();
        let state = format!(
            "{:?} {:?} {} {} {} {:?} {:?} {:?} {:?}",
            job.wbc,
            job.cur,
            vm.nr_dirty,
            vm.nr_writeback,
            m.writeback_index,
            bits(&m.dirty),
            bits(&m.writeback),
            bits(&m.wb_locked),
            vm.wb_extents,
        );
        (steps, state)
    }

    fn step_cost(s: crate::writeback_job::JobStep) -> u64 {
        match s {
            crate::writeback_job::JobStep::Ran(c) => c,
            _ => u64::MAX,
        }
    }

    /// Runs of pages taken at once (`wcp_run`) leave every step and the page
    /// cache as the page-by-page loop does.
    #[test]
    fn runs_of_pages_decide_as_page_by_page() {
        for seed in 0..400 {
            assert_eq!(
                random_pass(seed, true),
                random_pass(seed, false),
                "seed {seed}"
            );
        }
    }

    fn caller(task: u32) -> WcpCaller {
        WcpCaller {
            task: TaskId(task),
            is_flusher: false,
            congested: false,
        }
    }

    fn written(vm: &mut Vm) -> Vec<u64> {
        let out = std::mem::take(&mut vm.wb_out);
        out.iter()
            .flat_map(|a| match a {
                WbAction::Write { run, .. } => run.first..run.first + 1,
                WbAction::WriteEach { run, .. } => run.first..run.first + run.pages,
                WbAction::Wake(t) => panic!("unexpected wake of {t:?}"),
            })
            .collect()
    }

    #[test]
    fn a_cyclic_call_starts_at_the_cursor_wraps_and_stores_where_it_stopped() {
        let mut vm = vm(false);
        let map = vm.map_of(12, 100);
        let newly = vm.maps[map as usize].write_pages(0, 100, Instant::ZERO);
        vm.account_dirtied(map, newly, Instant::ZERO);
        vm.maps[map as usize].writeback_index = 90;
        let mut job = WbJob::new(Wbc::cyclic(20, false));
        let mut steps = 0;
        loop {
            let step = vm.writeback_step(&mut job, caller(0), &mut OnePerPage);
            if step == crate::writeback_job::JobStep::PassDone || job.cur.is_none() {
                break;
            }
            steps += 1;
            assert!(steps < 10, "the walk does not end");
        }
        let pages = written(&mut vm);
        let want: Vec<u64> = (90..100).chain(0..10).collect();
        assert_eq!(pages, want, "from the cursor to the end, then from 0");
        assert_eq!(job.wbc.written, 20);
        // 2.6.29+: the cursor is left after the last page written.
        assert_eq!(vm.maps[map as usize].writeback_index, 10);
        assert_eq!(vm.nr_dirty, 80);
        assert_eq!(vm.i_sync[map as usize], None, "I_SYNC released");
    }

    #[test]
    fn a_page_in_another_callers_extent_is_waited_for_until_unlocked() {
        let mut vm = vm(false);
        let map = vm.map_of(12, 100);
        let newly = vm.maps[map as usize].write_pages(0, 8, Instant::ZERO);
        vm.account_dirtied(map, newly, Instant::ZERO);
        // Task 1 collects pages 0..3 into its extent.
        for p in 0..3 {
            vm.extent_lock_page(TaskId(1), map, 0, p);
        }
        assert_eq!(vm.extent_owner(map, 2), Some(TaskId(1)));
        let mut job = WbJob::new(Wbc::for_fsync(map));
        let step = vm.writeback_step(&mut job, caller(0), &mut OnePerPage);
        assert_eq!(step, crate::writeback_job::JobStep::Ran(1));
        assert!(written(&mut vm).is_empty(), "stopped at the locked page 0");
        assert!(vm.job_lock_wait(&mut job, TaskId(0)));
        assert_eq!(vm.lock_waiters, vec![(TaskId(0), map, 0)]);
        // Task 1 writes its extent: the waiter is woken and goes on.
        vm.extent_unlock(TaskId(1), map, 0, 3);
        assert_eq!(vm.wb_out, vec![WbAction::Wake(TaskId(0))]);
        vm.wb_out.clear();
        assert_eq!(vm.extent_owner(map, 2), None);
        assert!(!vm.job_lock_wait(&mut job, TaskId(0)));
        vm.writeback_step(&mut job, caller(0), &mut OnePerPage);
        assert_eq!(written(&mut vm), (3..8).collect::<Vec<_>>());
    }
}
