//! fio's pacing of a job: `thinktime` (backend.c `handle_thinktime`) and the
//! rate limit (`rate`, `rate_iops`: io_u.c `rate_ddir` before an I/O,
//! backend.c `usec_for_io` after it, linear or `rate_process=poisson`). Both
//! wait for the job's I/Os in flight first (`io_u_quiesce`; the rate does
//! not under `io_submit_mode=offload`), then sleep (`usec_sleep`, exact
//! here); the process sleeps with a timer event (`Proc::sleep_until`) and
//! goes on at its end. On a read/write mix `rate_ddir` takes the other
//! direction when it is behind its rate, or sleeps until the sooner of the
//! two.

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
    /// The sleep `rate_ddir` computed and the direction it chose, to take
    /// once the I/Os in flight are done.
    pub rate_usec: Option<(u64, Dir)>,
    /// The direction `rate_ddir` returns after its sleep: the next I/O's.
    pub rate_dir: Option<Dir>,
    /// fio's `poisson_state` per direction (`rate_process=poisson`).
    pub poisson: [crate::poisson::Taus88; 2],
    /// fio's `last_usec` per direction: the Poisson schedule, in µs.
    pub last_usec: [u64; 2],
}

impl Pace {
    /// The pacing state of a process at its start: the Poisson generators
    /// from the job's seeds (`td_fill_rand_seeds_internal`), or from `draw`
    /// when fio would take them from the entropy pool.
    pub(crate) fn new(seeds: Option<[u64; 2]>, mut draw: impl FnMut() -> u64) -> Pace {
        let seeds = seeds.unwrap_or_else(|| [draw(), draw()]);
        Pace {
            poisson: seeds.map(crate::poisson::Taus88::new),
            ..Pace::default()
        }
    }
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

    /// fio's `rate_ddir` before an I/O whose direction the mix chose as
    /// `d`: the direction to issue now, or None when the process waits.
    /// When `d` is ahead of its rate (`rate_next_io_time` later than now),
    /// a read/write mix takes the other direction if that one is behind,
    /// else sleeps until the sooner of the two and issues in that one;
    /// inline, the I/Os in flight are waited for first (`io_u_quiesce`),
    /// the sleep being the one computed before that wait; offloaded, not.
    /// The sleep is cut at the job's `runtime`. After the sleep the chosen
    /// direction is the next I/O's (`rate_dir`).
    pub(crate) fn rate_ddir(&mut self, pi: u32, d: Dir, now: Instant) -> Option<Dir> {
        let p = &mut self.procs[pi as usize];
        if let Some(dir) = p.pace.rate_dir.take() {
            return Some(dir);
        }
        // should_check_rate: any direction rated.
        if p.spec.rate.iter().all(|r| r.bps == 0) {
            return Some(d);
        }
        let now_us = now.since(p.start).as_ns() / 1000;
        let (usec, dir) = match p.pace.rate_usec {
            Some(w) => w,
            None => {
                let next = p.pace.rate_next_us;
                let o = other(d);
                // td_rw(td) && td->o.rwmix[odir]: both directions in the mix.
                let o_mixed = p.spec.read_pct > 0 && p.spec.read_pct < 100;
                if next[d as usize] <= now_us {
                    return Some(d);
                }
                if o_mixed && next[o as usize] <= now_us {
                    return Some(o);
                }
                if o_mixed && next[o as usize] < next[d as usize] {
                    (next[o as usize] - now_us, o)
                } else {
                    (next[d as usize] - now_us, d)
                }
            }
        };
        if p.inflight > 0 && !p.spec.offload {
            p.pace.rate_usec = Some((usec, dir));
            self.tasks.block(TaskId(pi), Blocked::OnIo);
            return None;
        }
        p.pace.rate_usec = None;
        let usec = match p.spec.runtime {
            Some(rt) => usec.min((rt.as_ns() / 1000).saturating_sub(now_us)),
            None => usec,
        };
        p.pace.rate_dir = Some(dir);
        self.sleep_for(pi, now, Duration(usec.saturating_mul(1000)));
        None
    }

    /// After an I/O of `len` bytes in direction `d` is issued: fio's
    /// `td_io_queue` adds it to `rate_io_issue_bytes` and `do_io` sets
    /// `rate_next_io_time` from `usec_for_io`: linear, when those bytes are
    /// due at `rate` bytes per second; Poisson, the schedule `last_usec`
    /// moved on by a gap drawn at `rate / min_bs` I/Os per second
    /// (`crate::poisson::gap_us`). A direction without a rate stays due.
    pub(crate) fn rate_issued(&mut self, pi: u32, d: Dir, len: u64) {
        let p = &mut self.procs[pi as usize];
        let r = p.spec.rate[d as usize];
        if r.bps == 0 {
            return;
        }
        let i = d as usize;
        p.pace.rate_bytes[i] = p.pace.rate_bytes[i].saturating_add(len);
        if r.poisson {
            let iops = r.bps / p.spec.bs_range[i].0.max(1);
            let gap = crate::poisson::gap_us(&mut p.pace.poisson[i], iops);
            p.pace.last_usec[i] = p.pace.last_usec[i].saturating_add(gap);
            p.pace.rate_next_us[i] = p.pace.last_usec[i];
            return;
        }
        let bps = r.bps;
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

/// The other data direction (fio's `ddir ^ 1`).
fn other(d: Dir) -> Dir {
    match d {
        Dir::Read => Dir::Write,
        Dir::Write => Dir::Read,
    }
}
