//! fio's replay of a log (`read_iolog`, iolog.c `read_iolog_get`): each I/O
//! of the log in order, after its delay. `iolog_delay` sleeps the entry's
//! delay less the whole microseconds since the last I/O was issued
//! (`td->last_issue`, set in `td_io_queue` and by file actions in
//! `ipo_special`), so a delay shorter than the time already passed costs
//! nothing; the sleep is exact here, so fio's `time_offset` correction for
//! oversleeping stays 0. v2's `wait` sleeps until that many milliseconds
//! after the start. No quiesce: an async engine keeps its I/Os in flight.

use crate::workload::{Dir, ReplayKind};
use crate::world::Simulation;
use iostack_core::TaskId;
use iostack_des::{Duration, Instant};

/// A process's position in its log.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReplayState {
    /// The next entry.
    pub next: usize,
    /// The next entry's delay has been slept.
    pub slept: bool,
    /// fio's `td->last_issue` (the start until the first I/O).
    pub last_issue: Option<Instant>,
}

impl Simulation {
    /// The next I/O of the log (direction, byte offset, length), or None when
    /// the process sleeps first or the log is done (it is stepped again then).
    pub(crate) fn replay_pick(&mut self, pi: u32, now: Instant) -> Option<(Dir, u64, u64)> {
        let p = &mut self.procs[pi as usize];
        let log = p.spec.replay.clone()?;
        let start = p.start;
        while let Some(io) = log.ios.get(p.replay.next) {
            let last = p.replay.last_issue.unwrap_or(start);
            if !p.replay.slept && io.delay_us > 0 {
                let usec = now.since(last).as_ns() / 1000;
                if io.delay_us > usec {
                    p.replay.slept = true;
                    let d = Duration((io.delay_us - usec).saturating_mul(1000));
                    self.replay_sleep(pi, now + d);
                    return None;
                }
            }
            p.replay.slept = false;
            p.replay.next += 1;
            match io.kind {
                ReplayKind::Io(dir) => {
                    p.replay.last_issue = Some(now);
                    return Some((dir, io.offset, io.len));
                }
                ReplayKind::Mark => p.replay.last_issue = Some(now),
                ReplayKind::Wait => {
                    // `mtime_since_genesis` against the offset, then a sleep
                    // of the difference in milliseconds.
                    let elapsed_ms = now.since(start).as_ns() / 1_000_000;
                    if io.offset > elapsed_ms {
                        let d = Duration((io.offset - elapsed_ms).saturating_mul(1_000_000));
                        self.replay_sleep(pi, now + d);
                        return None;
                    }
                }
            }
        }
        // The log is done: the next step finds no work and ends the process.
        self.schedule_task(TaskId(pi), now);
        None
    }

    fn replay_sleep(&mut self, pi: u32, until: Instant) {
        self.procs[pi as usize].pace.sleep_until = Some(until);
        self.schedule_task(TaskId(pi), until);
    }
}
