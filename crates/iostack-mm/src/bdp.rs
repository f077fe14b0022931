//! `balance_dirty_pages` (`mm/page-writeback.c`): what a task that dirtied its
//! ratelimit of pages does next. Sans-IO: the decisions change the page cache's
//! `dirty_exceeded` and the task's `Throttle`, and come back as actions for the
//! simulation to carry out.

use crate::pagecache::Vm;
use crate::wbc::{Throttle, WbJob, Wbc};
use iostack_des::Duration;

/// `congestion_wait(WRITE, HZ/10)`.
pub const CONGESTION_WAIT: Duration = Duration(1_000_000_000 / 10);
/// 3.2+ IO-less throttling: the longest pause (`MAX_PAUSE`, 200 ms).
pub const MAX_PAUSE: Duration = Duration(200_000_000);

/// What a throttled task does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BdpAction {
    /// Leave `balance_dirty_pages`; start background writeback first if the
    /// dirty pages are over the background threshold.
    Exit { kick_background: bool },
    /// Write back `Throttle::job` (set up by this call) itself.
    Write,
    /// Sleep in `congestion_wait` for at most this long, then look again;
    /// with `kick_background`, wake the flusher first (IO-less throttling).
    Wait {
        timeout: Duration,
        kick_background: bool,
    },
}

impl Throttle {
    /// A throttle for a task that just dirtied `dirtied` pages.
    pub fn new(vm: &Vm, dirtied: u64) -> Throttle {
        Throttle {
            write_chunk: crate::writeback::write_chunk(
                vm.cfg.ratelimit,
                dirtied,
                vm.cfg.v2632_chunk,
            ),
            pages_written: 0,
            job: None,
        }
    }

    /// The head of `balance_dirty_pages`' loop: over the limit, the task
    /// writes `write_chunk` pages of its bdi (or, IO-less, pauses while the
    /// flusher works).
    pub fn next(&mut self, vm: &mut Vm) -> BdpAction {
        let l = vm.cfg.limits;
        let dirty = vm.nr_dirty + vm.nr_writeback;
        if dirty <= l.dirty || dirty < (l.background + l.dirty) / 2 {
            return vm.bdp_exit();
        }
        vm.dirty_exceeded = true;
        if vm.cfg.io_less {
            // 3.2+: the task never writes; it pauses while the flusher works,
            // then looks again.
            return BdpAction::Wait {
                timeout: MAX_PAUSE,
                kick_background: true,
            };
        }
        if vm.nr_dirty == 0 {
            return BdpAction::Wait {
                timeout: CONGESTION_WAIT,
                kick_background: false,
            };
        }
        self.job = Some(WbJob::new(Wbc::cyclic(self.write_chunk, false)));
        BdpAction::Write
    }

    /// The task's writeback of its chunk finished: done if it wrote the chunk or
    /// the dirty pages are under the limit, else `congestion_wait` and look again.
    pub fn job_done(&mut self, vm: &mut Vm) -> BdpAction {
        let job = self.job.take().expect("a throttled task's writeback job");
        self.pages_written += job.wbc.written;
        let done = self.pages_written >= self.write_chunk;
        let dirty = vm.nr_dirty + vm.nr_writeback;
        if dirty <= vm.cfg.limits.dirty || done {
            return vm.bdp_exit();
        }
        BdpAction::Wait {
            timeout: CONGESTION_WAIT,
            kick_background: false,
        }
    }
}

impl Vm {
    /// Leaving `balance_dirty_pages`: clear `dirty_exceeded` under the limit, and
    /// `pdflush_operation(background_writeout)` / `bdi_start_writeback` over the
    /// background threshold (unless the flusher is already working this bdi).
    fn bdp_exit(&mut self) -> BdpAction {
        let l = self.cfg.limits;
        if self.nr_dirty + self.nr_writeback < l.dirty {
            self.dirty_exceeded = false;
        }
        BdpAction::Exit {
            kick_background: self.nr_dirty > l.background,
        }
    }

    /// The ratelimit of `balance_dirty_pages_ratelimited`: 8 pages while a
    /// task is over the limit, else `ratelimit_pages`.
    pub fn ratelimit(&self) -> u64 {
        if self.dirty_exceeded {
            8
        } else {
            self.cfg.ratelimit
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::pagecache::VmConfig;
    use crate::writeback::DirtyLimits;

    pub(crate) fn vm(io_less: bool) -> Vm {
        Vm::new(VmConfig {
            flusher_only_index: false,
            io_less,
            pdflush: false,
            write_locked_inodes: false,
            ext4_index_pages_written: false,
            wcp_break: true,
            expire: Duration(30_000_000_000),
            interval: Duration(5_000_000_000),
            ra_pages: 32,
            max_readahead24: 31,
            copy_page_ns: 1,
            wb_page_ns: 1,
            mem_pages: 100_000,
            limits: DirtyLimits {
                background: 100,
                dirty: 200,
            },
            ratelimit: 32,
            v2632_chunk: true,
            bdflush: None,
        })
    }

    #[test]
    fn under_the_limit_a_dirtier_leaves_at_once() {
        let mut vm = vm(false);
        vm.nr_dirty = 150;
        let mut th = Throttle::new(&vm, 32);
        assert_eq!(
            th.next(&mut vm),
            BdpAction::Exit {
                kick_background: true
            }
        );
        assert!(!vm.dirty_exceeded);
    }

    #[test]
    fn over_the_limit_a_dirtier_writes_its_chunk_then_leaves() {
        let mut vm = vm(false);
        vm.nr_dirty = 250;
        let mut th = Throttle::new(&vm, 32);
        assert_eq!(th.next(&mut vm), BdpAction::Write);
        assert!(vm.dirty_exceeded);
        assert_eq!(vm.ratelimit(), 8, "ratelimit drops while over the limit");
        let job = th.job.as_mut().expect("a writeback job");
        assert_eq!(job.wbc.nr_to_write, th.write_chunk as i64);
        // It wrote part of its chunk and the pages are still over the limit.
        job.wbc.written = th.write_chunk / 2;
        let wait = BdpAction::Wait {
            timeout: CONGESTION_WAIT,
            kick_background: false,
        };
        assert_eq!(th.job_done(&mut vm), wait);
        // The rest of the chunk: done although still over the limit.
        assert_eq!(th.next(&mut vm), BdpAction::Write);
        th.job.as_mut().unwrap().wbc.written = th.write_chunk;
        assert!(matches!(th.job_done(&mut vm), BdpAction::Exit { .. }));
        assert!(vm.dirty_exceeded, "still over the limit");
    }

    #[test]
    fn io_less_throttling_pauses_and_kicks_the_flusher() {
        let mut vm = vm(true);
        vm.nr_dirty = 250;
        let mut th = Throttle::new(&vm, 32);
        assert_eq!(
            th.next(&mut vm),
            BdpAction::Wait {
                timeout: MAX_PAUSE,
                kick_background: true
            }
        );
        assert!(th.job.is_none(), "an IO-less dirtier never writes");
    }
}
