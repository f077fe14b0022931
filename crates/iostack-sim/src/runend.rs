//! How a run ended, and the checks that decide it. A run ends when its event
//! queue runs dry, or at the user's limit; it never ends silently at a horizon.
//! These checks are cheap and run in every build: a run that stopped with a
//! process that could not go on, or with I/O still in the block layer, says so
//! instead of reporting numbers for work that was not done.

use crate::task::Blocked;
use crate::world::Simulation;
use iostack_core::TaskId;
use iostack_des::Instant;
use std::fmt;

/// How a run ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RunEnd {
    /// Every process finished and the block layer is idle.
    #[default]
    Complete,
    /// The user's limit (`--until`) stopped the run; the processes named had
    /// not finished, and their results cover the time up to the limit.
    Until {
        at: Instant,
        unfinished: Vec<String>,
    },
    /// Processes that can no longer make progress: nothing was pending that
    /// could wake them, yet they were not done.
    Stalled { at: Instant, stuck: Vec<String> },
    /// Every process finished, but requests or bios were still in the block
    /// layer, or bios a kernel thread built were never submitted.
    InFlight { at: Instant, detail: String },
}

impl RunEnd {
    pub fn is_complete(&self) -> bool {
        matches!(self, RunEnd::Complete)
    }

    /// A run cut short by a limit the user set (not an error).
    pub fn is_truncated(&self) -> bool {
        matches!(self, RunEnd::Until { .. })
    }
}

impl fmt::Display for RunEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunEnd::Complete => f.write_str("complete"),
            RunEnd::Until { at, unfinished } => write!(
                f,
                "stopped at the --until limit, {}; jobs not finished: {}",
                secs(*at),
                unfinished.join(", ")
            ),
            RunEnd::Stalled { at, stuck } => write!(
                f,
                "the run stalled at {}: nothing can wake {} (a simulator bug; please \
                 report it with the input)",
                secs(*at),
                stuck.join(", ")
            ),
            RunEnd::InFlight { at, detail } => write!(
                f,
                "all processes finished at {} but I/O was left in flight ({detail}; a \
                 simulator bug; please report it with the input)",
                secs(*at)
            ),
        }
    }
}

/// Simulated time as seconds with nanosecond digits.
fn secs(at: Instant) -> String {
    let ns = at.as_ns();
    format!("{}.{:09} s", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// What a process that did not finish was doing.
fn state(b: Blocked) -> &'static str {
    match b {
        Blocked::No => "running",
        Blocked::OnRequest => "waiting for a request",
        Blocked::OnIo => "waiting for its I/O",
        Blocked::NotStarted => "not started",
        Blocked::OnFlow => "held back by its flow (flow_sleep=0)",
        Blocked::OnPage => "waiting for a page",
        Blocked::OnCongestion => "in congestion_wait",
        Blocked::OnJournal => "waiting in the journal",
        Blocked::OnBuffer => "waiting on a metadata buffer",
        Blocked::Idle => "asleep",
        Blocked::Done => "done",
    }
}

impl Simulation {
    /// After an event: true if the run can never make progress again. Only the
    /// periodic writeback timer is pending, the flusher is idle with nothing
    /// dirty, yet a process is not done: the timer would fire for ever.
    pub(crate) fn stalled_on_timer(&self) -> bool {
        self.evq.len() == 1
            && self.vm.nr_dirty == 0
            && matches!(self.vm.flusher_state, iostack_mm::FlusherState::Idle)
            && self.any_proc_alive()
    }

    /// Decide how the run ended, and close the results of processes that did
    /// not finish (their run ends at `at`, never before they started).
    pub(crate) fn run_end(&mut self, until_hit: Option<Instant>, at: Instant) -> RunEnd {
        let tasks = &self.tasks;
        let blocked = |i: usize| tasks.blocked(TaskId(i as u32));
        let names: Vec<String> = self
            .procs
            .iter()
            .enumerate()
            .filter(|&(i, _)| blocked(i) != Blocked::Done)
            .map(|(i, p)| {
                let b = if p.result.start > at {
                    Blocked::NotStarted
                } else {
                    blocked(i)
                };
                format!("{} ({})", p.spec.name, state(b))
            })
            .collect();
        for (i, p) in self.procs.iter_mut().enumerate() {
            let b = blocked(i);
            if b == Blocked::Done {
                continue;
            }
            if b == Blocked::NotStarted {
                p.result.start = at;
            }
            p.result.start = p.result.start.min(at);
            p.result.end = at;
        }
        if let Some(at) = until_hit {
            return RunEnd::Until {
                at,
                unfinished: names,
            };
        }
        if !names.is_empty() {
            return RunEnd::Stalled { at, stuck: names };
        }
        // Bios a kernel thread built but never submitted are I/O left behind too.
        if !self.queue.idle() || self.tasks.pending_bios() > 0 {
            return RunEnd::InFlight {
                at,
                detail: format!(
                    "{}, bios pending in tasks {}",
                    self.queue.busy_summary(),
                    self.tasks.pending_bios(),
                ),
            };
        }
        RunEnd::Complete
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::SimConfig;
    use iostack_core::{Profile, Tunables};
    use iostack_des::{Duration, Seed};

    fn sim(until: Option<Duration>) -> Simulation {
        let m = crate::machine::preset("null").unwrap();
        let procs =
            crate::frontend::dd_procs("if=/dev/nullb0 of=/dev/null iflag=direct bs=4k count=8", &m)
                .unwrap();
        Simulation::new(SimConfig {
            scheduler: "noop".into(),
            machine: m,
            tunables: Tunables::new(Profile::V2_6_33, &crate::tunable_tables()),
            seed: Seed(1),
            procs,
            checks: true,
            until,
        })
        .unwrap()
    }

    #[test]
    fn a_finished_run_is_complete() {
        let (r, _) = sim(None).run();
        assert_eq!(r.ending, RunEnd::Complete);
        assert_eq!(r.procs[0].dirs[0].ios, 8);
    }

    /// A process left waiting with nothing to wake it ends the run as stalled,
    /// with its result closed at the stall (not reported as done).
    #[test]
    fn a_process_nothing_can_wake_is_a_stall() {
        let mut s = sim(None);
        s.tasks.block(iostack_core::TaskId(0), Blocked::OnIo);
        let (r, _) = s.run();
        match &r.ending {
            RunEnd::Stalled { stuck, .. } => assert_eq!(stuck[0], "dd (waiting for its I/O)"),
            e => panic!("{e:?}"),
        }
        assert!(r.ending.to_string().contains("nothing can wake dd"));
        assert!(!r.ending.is_complete() && !r.ending.is_truncated());
    }

    #[test]
    fn until_truncates_and_closes_unfinished_processes() {
        let (r, _) = sim(Some(Duration(1))).run();
        assert!(r.ending.is_truncated(), "{:?}", r.ending);
        assert_eq!(r.end, Instant(1));
        assert_eq!(r.procs[0].end, Instant(1));
    }
}
