//! fio's pacing of a job: `thinktime` (backend.c `handle_thinktime`) and the
//! rate limit (`rate`, `rate_iops`: io_u.c `rate_ddir` before an I/O,
//! backend.c `usec_for_io` after it). Both wait for the job's I/Os in flight
//! first (`io_u_quiesce`), then sleep (`usec_sleep`, exact here); the process
//! sleeps with a timer event (`Proc::sleep_until`) and goes on at its end.

use crate::task::Blocked;
use crate::workload::Dir;
use crate::world::Simulation;
use iostack_core::TaskId;
use iostack_des::{Duration, Instant};

/// A process's pacing state.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Pace {
    /// Asleep (think time or rate) until then.
    pub sleep_until: Option<Instant>,
    /// fio's `last_thinktime_blocks`.
    pub think_last: u64,
    /// A think time is due once the I/Os in flight are done.
    pub think_quiesce: bool,
    /// fio's `rate_io_issue_bytes` per direction.
    pub rate_bytes: [u64; 2],
    /// fio's `rate_next_io_time` per direction, in µs since the job's start.
    pub rate_next_us: [u64; 2],
    /// The sleep `rate_ddir` computed, to take once the I/Os in flight are done.
    pub rate_usec: Option<u64>,
}

impl Simulation {
    /// Whether the process is asleep (a pacing timer not yet reached); at the
    /// timer, the sleep ends.
    pub(crate) fn pace_asleep(&mut self, pi: u32, now: Instant) -> bool {
        let p = &mut self.procs[pi as usize];
        match p.pace.sleep_until {
            Some(until) if now < until => true,
            Some(_) => {
                p.pace.sleep_until = None;
                false
            }
            None => false,
        }
    }

    /// fio's `handle_thinktime`, checked after each I/O: when `thinktime_blocks`
    /// more I/Os have completed (or been issued, `thinktime_blocks_type=issue`)
    /// since the last think, wait for the I/Os in flight, spin
    /// `thinktime_spin`, and sleep the rest of `thinktime`. Returns whether the
    /// process stalls.
    pub(crate) fn thinktime_stall(&mut self, pi: u32, now: Instant) -> bool {
        let p = &mut self.procs[pi as usize];
        let t = p.spec.think;
        if t.think == Duration::ZERO {
            return false;
        }
        if !p.pace.think_quiesce {
            let b = if t.issue_side {
                p.ios_issued
            } else {
                p.result.dirs[0].ios + p.result.dirs[1].ios
            };
            if b < p.pace.think_last.saturating_add(t.blocks) {
                return false;
            }
            p.pace.think_last = b;
            p.pace.think_quiesce = true;
        }
        if p.inflight > 0 {
            // io_u_quiesce: completions bring the process back here.
            self.tasks.block(TaskId(pi), Blocked::OnIo);
            return true;
        }
        p.pace.think_quiesce = false;
        // usec_spin(thinktime_spin) keeps the CPU; usec_sleep(thinktime -
        // spin) does not. The simulated CPU is not shared with the process's
        // own I/O path, so both are time passing.
        self.sleep_for(pi, now, t.think);
        true
    }

    /// fio's `rate_ddir` before an I/O of direction `d`: when the direction is
    /// ahead of its rate (`rate_next_io_time` later than now), wait for the
    /// I/Os in flight (`io_u_quiesce`, the inline submit mode), then sleep the
    /// time computed before that wait, cut at the job's `runtime`. Returns
    /// whether the process sleeps.
    pub(crate) fn rate_wait(&mut self, pi: u32, d: Dir, now: Instant) -> bool {
        let p = &mut self.procs[pi as usize];
        let r = p.spec.rate[d as usize];
        if r.bps == 0 {
            return false;
        }
        let now_us = now.since(p.start).as_ns() / 1000;
        let usec = match p.pace.rate_usec {
            Some(u) => u,
            None => {
                let next = p.pace.rate_next_us[d as usize];
                if next <= now_us {
                    return false;
                }
                next - now_us
            }
        };
        if p.inflight > 0 {
            p.pace.rate_usec = Some(usec);
            self.tasks.block(TaskId(pi), Blocked::OnIo);
            return true;
        }
        p.pace.rate_usec = None;
        let usec = match p.spec.runtime {
            Some(rt) => usec.min((rt.as_ns() / 1000).saturating_sub(now_us)),
            None => usec,
        };
        self.sleep_for(pi, now, Duration(usec.saturating_mul(1000)));
        true
    }

    /// After an I/O of `len` bytes in direction `d` is issued: fio's
    /// `td_io_queue` adds it to `rate_io_issue_bytes` and `do_io` sets
    /// `rate_next_io_time` from `usec_for_io` (linear: when those bytes are due
    /// at `rate` bytes per second).
    pub(crate) fn rate_issued(&mut self, pi: u32, d: Dir, len: u64) {
        let p = &mut self.procs[pi as usize];
        let bps = p.spec.rate[d as usize].bps;
        if bps == 0 {
            return;
        }
        let i = d as usize;
        p.pace.rate_bytes[i] = p.pace.rate_bytes[i].saturating_add(len);
        let bytes = p.pace.rate_bytes[i];
        let (secs, rem) = (bytes / bps, bytes % bps);
        let rem_us = (u128::from(rem) * 1_000_000 / u128::from(bps)) as u64;
        p.pace.rate_next_us[i] = secs.saturating_mul(1_000_000).saturating_add(rem_us);
    }

    fn sleep_for(&mut self, pi: u32, now: Instant, d: Duration) {
        let until = now + d;
        self.procs[pi as usize].pace.sleep_until = Some(until);
        self.schedule_task(TaskId(pi), until);
    }
}
