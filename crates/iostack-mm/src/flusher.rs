//! The flusher's policy (`fs/fs-writeback.c`, `mm/pdflush.c`): when a background
//! (`for_background`) or kupdate (`for_kupdate`) pass starts, what follows a pass
//! (another pass, `congestion_wait`, or idle), and 2.6.32's
//! `wb_check_background_flush`. Sans-IO: each call changes the page cache's
//! `FlusherState` and says whether the flusher thread must run.

use crate::pagecache::Vm;
use crate::wbc::{FlusherState, WbJob, Wbc};
use crate::writeback::MAX_WRITEBACK_PAGES;
use iostack_des::Instant;

/// What the flusher thread does after a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlusherNext {
    /// Run at once (another pass, or background writeback kicked).
    Run,
    /// `congestion_wait(WRITE, HZ/10)`, then another pass.
    CongestionWait,
    /// Nothing to do until kicked or the periodic timer.
    Idle,
}

/// What the flusher thread does when it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlusherRun {
    /// Nothing to do (woken while idle).
    Idle,
    /// Back from `congestion_wait`: a new pass was started; run at once.
    NewPass,
    /// A step of the running pass (`Vm::writeback_step` on its job).
    Step,
}

impl Vm {
    /// The flusher thread runs: idle, back from `congestion_wait` (the next
    /// pass of `wb_writeback`'s loop starts), or in a pass.
    pub fn flusher_run(&mut self, now: Instant) -> FlusherRun {
        match self.flusher_state {
            FlusherState::Idle => FlusherRun::Idle,
            FlusherState::Waiting { kupdate, budget } => {
                self.start_flusher_pass(kupdate, budget, now);
                FlusherRun::NewPass
            }
            FlusherState::Running { .. } => FlusherRun::Step,
        }
    }

    /// Start background writeback if the flusher is idle (`pdflush_operation(
    /// background_writeout)`, `bdi_start_background_writeback`). Returns whether
    /// the flusher thread must be woken.
    pub fn kick_background(&mut self) -> bool {
        if !matches!(self.flusher_state, FlusherState::Idle) {
            return false;
        }
        self.flusher_state = FlusherState::Running {
            kupdate: false,
            job: Box::new(WbJob::new(Wbc::cyclic(
                MAX_WRITEBACK_PAGES,
                self.cfg.pdflush,
            ))),
            budget: 0,
        };
        true
    }

    /// The periodic wakeup (`wb_kupdate` / `wb_check_old_data_flush`): start a
    /// kupdate pass over the inodes dirtied more than `dirty_expire` ago, if the
    /// flusher is idle and anything is dirty. Returns whether the flusher thread
    /// must be woken.
    pub fn kupdate_timer(&mut self, now: Instant) -> bool {
        if !matches!(self.flusher_state, FlusherState::Idle) || self.nr_dirty == 0 {
            return false;
        }
        let budget = self.nr_dirty as i64;
        self.start_flusher_pass(true, budget, now);
        true
    }

    /// The flusher's next pass (`wb_writeback` loops one `MAX_WRITEBACK_PAGES`
    /// pass at a time).
    pub fn start_flusher_pass(&mut self, kupdate: bool, budget: i64, now: Instant) {
        let mut wbc = Wbc::cyclic(MAX_WRITEBACK_PAGES, self.cfg.pdflush);
        if kupdate {
            wbc.older_than = Some(Instant(now.0.saturating_sub(self.cfg.expire.0)));
        }
        self.flusher_state = FlusherState::Running {
            kupdate,
            job: Box::new(WbJob::new(wbc)),
            budget,
        };
    }

    /// A flusher pass finished: decide what follows (`wb_writeback`'s loop, or
    /// `background_writeout` / `wb_kupdate` of pdflush). `alive`: whether any
    /// process is still running (a kernel thread does not keep the run going).
    pub fn flusher_pass_done(&mut self, now: Instant, alive: bool) -> FlusherNext {
        let FlusherState::Running {
            kupdate,
            job,
            budget,
        } = std::mem::replace(&mut self.flusher_state, FlusherState::Idle)
        else {
            panic!("a flusher pass finished while the flusher was not running");
        };
        let budget = budget - job.wbc.written as i64;
        let full = job.wbc.nr_to_write <= 0;
        let more = if kupdate {
            budget > 0
        } else {
            self.nr_dirty > self.cfg.limits.background
        };
        if !more || self.nr_dirty == 0 || !alive {
            return self.flusher_idle(alive);
        }
        if full {
            self.start_flusher_pass(kupdate, budget, now);
            FlusherNext::Run
        } else if job.wbc.encountered_congestion || job.wbc.more_io {
            self.flusher_state = FlusherState::Waiting { kupdate, budget };
            FlusherNext::CongestionWait
        } else {
            self.flusher_idle(alive)
        }
    }

    /// The flusher goes idle; 2.6.32's `wb_check_background_flush` keeps it going
    /// while the dirty pages are over the background threshold.
    fn flusher_idle(&mut self, alive: bool) -> FlusherNext {
        self.flusher_state = FlusherState::Idle;
        if !self.cfg.pdflush && self.nr_dirty > self.cfg.limits.background && alive {
            self.kick_background();
            return FlusherNext::Run;
        }
        FlusherNext::Idle
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bdp::tests::vm;

    fn finish_pass(vm: &mut Vm, written: u64, congested: bool) {
        let FlusherState::Running { job, .. } = &mut vm.flusher_state else {
            panic!("flusher not running");
        };
        job.wbc.written = written;
        job.wbc.nr_to_write -= written as i64;
        job.wbc.encountered_congestion = congested;
    }

    #[test]
    fn background_writeback_runs_until_under_the_threshold() {
        let mut vm = vm(false);
        vm.nr_dirty = 5000;
        assert!(vm.kick_background());
        assert!(!vm.kick_background(), "already running");
        // A full pass: another at once.
        finish_pass(&mut vm, MAX_WRITEBACK_PAGES, false);
        vm.nr_dirty -= MAX_WRITEBACK_PAGES;
        assert_eq!(vm.flusher_pass_done(Instant::ZERO, true), FlusherNext::Run);
        // A short pass on a congested queue: congestion_wait, then a pass.
        finish_pass(&mut vm, 10, true);
        assert_eq!(
            vm.flusher_pass_done(Instant::ZERO, true),
            FlusherNext::CongestionWait
        );
        assert!(matches!(vm.flusher_state, FlusherState::Waiting { .. }));
        // Under the background threshold: idle.
        vm.start_flusher_pass(false, 0, Instant::ZERO);
        vm.nr_dirty = 50;
        finish_pass(&mut vm, 10, false);
        assert_eq!(vm.flusher_pass_done(Instant::ZERO, true), FlusherNext::Idle);
        assert!(matches!(vm.flusher_state, FlusherState::Idle));
    }

    #[test]
    fn kupdate_writes_what_was_dirty_when_it_woke() {
        let mut vm = vm(false);
        assert!(!vm.kupdate_timer(Instant::ZERO), "nothing dirty");
        vm.nr_dirty = 50;
        let now = Instant(40_000_000_000);
        assert!(vm.kupdate_timer(now));
        let FlusherState::Running {
            kupdate,
            job,
            budget,
        } = &vm.flusher_state
        else {
            panic!("flusher not running");
        };
        assert!(*kupdate);
        assert_eq!(*budget, 50);
        assert_eq!(job.wbc.older_than, Some(Instant(10_000_000_000)));
        finish_pass(&mut vm, 50, false);
        assert_eq!(vm.flusher_pass_done(now, true), FlusherNext::Idle);
    }
}
