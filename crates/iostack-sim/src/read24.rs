//! 2.4's buffered `read()`: `do_generic_file_read` of 2.4.4's `mm/filemap.c`
//! with `generic_file_readahead` (the context and its decisions are
//! `iostack_mm::readahead24`). Pages are read by `->readpage`
//! (`block_read_full_page`: `get_block` and `submit_bh` per buffer) one page
//! at a time, the read-ahead ones by `page_cache_read`; all go through 2.4's
//! block layer, plugged on `tq_disk`, which runs when the reader waits for a
//! page (`sync_page`) or after an asynchronous read-ahead.
//!
//! For each page the reader reaches:
//! * not cached (`no_cached_page`): add it, `readpage`, then
//!   `generic_file_readahead` on the locked page (synchronous read-ahead
//!   behind it), then `wait_on_page`;
//! * cached, not up to date (`page_not_up_to_date`): `generic_file_readahead`
//!   on it, then `lock_page`;
//! * up to date (`found_page`): `generic_file_readahead` (asynchronous when
//!   the page is in the last read-ahead block), then copy.
//!
//! After a wait the page is copied without another `generic_file_readahead`
//! (`page_ok`).

use crate::task::Blocked;
use crate::world::Simulation;
use iostack_core::TaskId;
use iostack_des::{Duration, Instant};
use iostack_mm::RaWindow;

impl Simulation {
    /// One step of a 2.4 buffered `read()`; runs until the task must wait for a
    /// page or a request, or the read is done.
    pub(crate) fn buffered_read_step24(&mut self, pi: u32, now: Instant) {
        let task = TaskId(pi);
        let mut cost = 0u64;
        loop {
            if self.drain_pending(task, now) {
                return;
            }
            // generic_file_readahead's run_task_queue(&tq_disk) after an
            // asynchronous read-ahead, once its buffers are submitted.
            if std::mem::take(&mut self.procs[pi as usize].unplug_after) {
                self.unplug(task, now);
            }
            let op = self.procs[pi as usize].buf.expect("buffered op");
            let (map, idx) = (op.map, op.pos);
            let m = &self.vm.maps[map as usize];
            // i_size >> PAGE_CACHE_SHIFT: the simulated files are whole pages.
            let end_index = m.size_pages;
            if idx >= op.last || idx >= end_index {
                self.charge_sys(task, Duration(cost));
                self.evq
                    .schedule(now + Duration(cost), crate::world::Ev::BufDone(task));
                return;
            }
            let waited = self.procs[pi as usize].ra24_waited.take() == Some(idx);
            if !m.present.get(idx) {
                // no_cached_page → readpage.
                let one = RaWindow {
                    start: idx,
                    size: 1,
                    async_size: 0,
                };
                self.submit_readahead(task, map, one, now);
                if !self.vm.maps[map as usize].uptodate.get(idx) {
                    self.readahead24(task, map, idx, true, now);
                    self.wait_page24(task, map, idx, cost, now);
                    return;
                }
                continue;
            }
            if !m.uptodate.get(idx) {
                // page_not_up_to_date.
                if !waited {
                    let locked = m.locked.get(idx);
                    // Its run_task_queue is sync_page's below.
                    self.readahead24(task, map, idx, locked, now);
                }
                self.wait_page24(task, map, idx, cost, now);
                return;
            }
            // found_page (or page_ok after a wait): the run of up-to-date
            // pages up to the next one at which generic_file_readahead acts.
            let last = op.last.min(end_index);
            let mut end = m.uptodate.run_end(idx, last);
            let from = if waited { idx + 1 } else { idx };
            let trigger = self.procs[pi as usize].ra24.async_trigger(from, end);
            match trigger {
                Some(t) if t == idx => {
                    if self.readahead24(task, map, idx, false, now) {
                        // Submit, then run tq_disk, before the copy.
                        if self.drain_pending(task, now) {
                            // Asleep for a request: tq_disk runs when it is
                            // woken, and the page is copied (page_ok).
                            let p = &mut self.procs[pi as usize];
                            p.unplug_after = true;
                            p.ra24_waited = Some(idx);
                            self.charge_sys(task, Duration(cost));
                            return;
                        }
                        self.unplug(task, now);
                    }
                    end = idx + 1;
                }
                Some(t) => end = t,
                None => {}
            }
            let n = end - idx;
            cost += n * self.vm.cfg.copy_page_ns;
            self.procs[pi as usize].buf.as_mut().unwrap().pos = end;
            if cost >= 50_000 {
                // Let time pass for the copying before looking at more pages.
                self.charge_sys(task, Duration(cost));
                self.schedule_task(task, now + Duration(cost));
                return;
            }
        }
    }

    /// `generic_file_readahead` for page `idx`; the pages it decides to read
    /// are read (`page_cache_read`: the ones not cached). Returns whether it
    /// asks for `run_task_queue(&tq_disk)` (asynchronous read-ahead).
    fn readahead24(
        &mut self,
        task: TaskId,
        map: u32,
        idx: u64,
        locked: bool,
        now: Instant,
    ) -> bool {
        let end_index = self.vm.maps[map as usize].size_pages;
        let max = self.vm.cfg.max_readahead24;
        let pi = task.0 as usize;
        let Some(r) = self.procs[pi].ra24.readahead(idx, locked, end_index, max) else {
            return false;
        };
        if r.n > 0 {
            let w = RaWindow {
                start: r.first,
                size: r.n,
                async_size: 0,
            };
            self.submit_readahead(task, map, w, now);
        }
        r.unplug
    }

    /// `wait_on_page`/`lock_page` on page `idx`: `sync_page` runs `tq_disk`,
    /// then the task sleeps until the page is up to date; it goes on at
    /// `page_ok`.
    fn wait_page24(&mut self, task: TaskId, map: u32, idx: u64, cost: u64, now: Instant) {
        self.procs[task.0 as usize].ra24_waited = Some(idx);
        if self.drain_pending(task, now) {
            // Slept for a request first; the step comes back to the wait.
            self.charge_sys(task, Duration(cost));
            return;
        }
        self.unplug(task, now);
        self.vm.page_waiters.push((task, map, idx));
        self.charge_sys(task, Duration(cost));
        self.tasks.block(task, Blocked::OnPage);
        self.tasks.get_mut(task).cpu_until = now + Duration(cost);
    }
}
