//! fio's `rate_min`/`rate_iops_min` (backend.c `check_min_rate`, called in
//! `do_io`'s loop after each I/O once some I/O has completed): past a 2 s
//! settle from the job's start, each `rate_cycle` ms the bytes (or I/Os)
//! completed in a direction since the last check, per second, must reach the
//! minimum; if not the job fails (`td_verror(td, EIO, "check_min_rate")`)
//! and stops issuing. The first check after the settle only records. Here
//! the check runs where the process's loop goes on to its next I/O after one
//! was issued, at that instant (fio's `comp_time`, the last reap, is that
//! instant for a sync engine and for an async one whose queue was full).

use crate::workload::Dir;
use crate::world::Simulation;
use iostack_des::Instant;

/// A job's minimum rates (`None` in `ProcSpec`: none set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MinRate {
    /// `rate_min` per direction, bytes per second (0: none).
    pub bytes: [u64; 2],
    /// `rate_iops_min` per direction (0: none).
    pub iops: [u64; 2],
    /// `rate_cycle`, ms.
    pub cycle_ms: u64,
}

/// fio's `last_rate_check_bytes`/`_blocks`/`_time` per direction.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MinRateState {
    last: [Option<(u64, u64, Instant)>; 2],
    /// I/Os issued at the last check (one check per I/O).
    checked_at: u64,
}

/// `__check_min_rate` for direction `i` with `done` (bytes, I/Os)
/// completed: the failure message, if any.
fn check_dir(
    m: &MinRate,
    i: usize,
    name: &str,
    st: &mut Option<(u64, u64, Instant)>,
    done: (u64, u64),
    now: Instant,
) -> Option<String> {
    if let Some((bytes, blocks, at)) = *st {
        let spent = now.since(at).as_ns() / 1_000_000;
        if spent < m.cycle_ms || spent == 0 {
            return None;
        }
        if m.bytes[i] > 0 {
            let got = done.0.saturating_sub(bytes) * 1000 / spent;
            if got < m.bytes[i] {
                return Some(format!(
                    "{name}: rate_min={}B/s not met, got {got}B/s",
                    m.bytes[i]
                ));
            }
        } else {
            let got = done.1.saturating_sub(blocks) * 1000 / spent;
            if got < m.iops[i] {
                return Some(format!(
                    "{name}: rate_iops_min={} not met, got {got} IOPS",
                    m.iops[i]
                ));
            }
        }
    }
    *st = Some((done.0, done.1, now));
    None
}

impl Simulation {
    /// `check_min_rate` once per issued I/O; returns whether the job failed
    /// (its error set, nothing more issued).
    pub(crate) fn min_rate_failed(&mut self, pi: u32, now: Instant) -> bool {
        let p = &mut self.procs[pi as usize];
        let Some(m) = p.spec.min_rate else {
            return false;
        };
        if p.ios_issued == p.minrate.checked_at {
            return false;
        }
        p.minrate.checked_at = p.ios_issued;
        // allow a 2 second settle period in the beginning
        if now.since(p.start).as_ns() / 1_000_000 < 2000 {
            return false;
        }
        for d in [Dir::Read, Dir::Write] {
            let i = d as usize;
            let r = &p.result.dirs[i];
            if r.bytes == 0 || (m.bytes[i] == 0 && m.iops[i] == 0) {
                continue;
            }
            let done = (r.bytes, r.ios);
            let st = &mut p.minrate.last[i];
            if let Some(msg) = check_dir(&m, i, &p.spec.name, st, done, now) {
                p.result.error = Some(format!("check_min_rate: {msg}"));
                p.terminate = true;
                return true;
            }
        }
        false
    }
}
