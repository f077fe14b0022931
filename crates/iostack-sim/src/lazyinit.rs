//! `ext4lazyinit`: the file system's background zeroing of inode tables through
//! the block device's page cache, a kernel thread that dirties pages and is
//! throttled in `balance_dirty_pages` like any writer. Its state is
//! `task::LazyInit`.

use crate::task::KThread;
use crate::world::Simulation;
use iostack_des::{Duration, Instant};
use iostack_mm::Throttle;

impl Simulation {
    /// Start the file system's background inode-table zeroing, if it has any.
    pub(crate) fn mount_dirty(&mut self, now: Instant) {
        let ranges = self.fs.bdev_dirty_at_mount();
        if !ranges.is_empty() {
            self.lazy.ranges = ranges;
            let task = self.tasks.kthread(KThread::LazyInit);
            self.tracer
                .process(self.tasks.get(task).pid, "ext4lazyinit");
            self.schedule_task(task, now);
        }
    }

    /// One step of the inode-table zeroing: dirty the next pages of the block
    /// device (up to the ratelimit), then `balance_dirty_pages`.
    pub(crate) fn lazyinit_step(&mut self, now: Instant) {
        let task = self.tasks.kthread(KThread::LazyInit);
        if self.drain_pending(task, now) {
            return;
        }
        if self.lazy.throttle.is_some() {
            self.throttle_step(task, now);
            return;
        }
        // A kernel thread does not keep the run alive.
        if !self.any_proc_alive() {
            return;
        }
        let lz = &mut self.lazy;
        let Some(&(start, len)) = lz.ranges.get(lz.idx) else {
            return;
        };
        let ratelimit = self.vm.ratelimit();
        let n = (len - lz.off)
            .min(ratelimit.saturating_sub(lz.dirtied_since))
            .max(1);
        let first = start + lz.off;
        lz.off += n;
        if lz.off >= len {
            lz.idx += 1;
            lz.off = 0;
        }
        lz.dirtied_since += n;
        let newly = self.vm.maps[0].write_pages(first, n, now);
        self.vm.note_cached(0, first, n);
        self.vm.account_dirtied(0, newly, now);
        let cost = Duration(n * self.vm.cfg.copy_page_ns);
        if self.lazy.dirtied_since >= ratelimit {
            let dirtied = self.lazy.dirtied_since;
            self.lazy.dirtied_since = 0;
            self.lazy.throttle = Some(Throttle::new(&self.vm, dirtied));
        }
        self.vm.reclaim();
        self.schedule_task(task, now + cost);
    }
}
