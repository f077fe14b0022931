//! One step of a task's writeback job, whoever runs it: a flusher pass or a
//! throttled dirtier's chunk (`writeback_inodes` → `generic_sync_sb_inodes` →
//! `__writeback_single_inode` → `do_writepages` → `write_cache_pages`), or an
//! fsync's `filemap_fdatawrite` of one mapping, then `filemap_fdatawait`.
//! Sans-IO: a step says whether the task goes on, sleeps on a page lock, or
//! has finished its pass; the bios and wake-ups it made are in `Vm::wb_out`.

use crate::pagecache::Vm;
use crate::wbc::WbJob;
use crate::write_cache_pages::{WcpCaller, Writepages};
use iostack_core::TaskId;

/// What a step of a writeback job asks of its task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStep {
    /// The pass is over (no inode left, quota used up, or congestion).
    PassDone,
    /// `lock_page`: sleep until another caller's extent is written.
    LockWait,
    /// A pagevec (or cluster) was written, taking this much CPU time; the
    /// task submits its bios, then checks `Vm::wcp_lock_wait` again.
    Ran(u64),
}

impl Vm {
    /// One step of `job` for task `c.task`: start `write_cache_pages` on the
    /// pass's next inode if none is open (`Vm::next_inode`), then wait for a
    /// page lock or walk one pagevec (`Vm::wcp_step`).
    pub fn writeback_step(
        &mut self,
        job: &mut WbJob,
        c: WcpCaller,
        fs: &mut dyn Writepages,
    ) -> JobStep {
        if job.cur.is_none() {
            match self.next_inode(job, c.task, c.is_flusher, c.congested) {
                Some(w) => job.cur = Some(Box::new(w)),
                None => return JobStep::PassDone,
            }
        }
        if self.job_lock_wait(job, c.task) {
            return JobStep::LockWait;
        }
        JobStep::Ran(self.wcp_step(job, c, fs))
    }

    /// `lock_page` for the job's open `write_cache_pages` call, if any
    /// (`Vm::wcp_lock_wait`): whether the task must sleep.
    pub fn job_lock_wait(&mut self, job: &mut WbJob, task: TaskId) -> bool {
        match job.cur.as_mut() {
            Some(w) => self.wcp_lock_wait(task, w),
            None => false,
        }
    }

    /// `filemap_fdatawait` after an fsync's pass over `map`: wait for the
    /// pages under writeback (true: the task sleeps until the mapping's
    /// writeback ends). A page another caller redirtied behind the pass is not
    /// waited for.
    pub fn fdatawait(&mut self, task: TaskId, map: u32) -> bool {
        if self.maps[map as usize].nr_writeback() == 0 {
            return false;
        }
        self.wb_waiters.push((task, map));
        true
    }
}
