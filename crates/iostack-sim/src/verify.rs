//! fio's verification as I/O (`verify=`, `do_verify`, `verify_only`,
//! `verify_backlog`): the read-back of what a job wrote. A simulator has no
//! data, so nothing is compared; the reads are issued where and when fio
//! issues them.
//!
//! * Each write is logged before it is issued (`log_io_piece`, iolog.c):
//!   with fio's random map (a random job without `norandommap` or `lfsr`)
//!   in issue order (`io_hist_list`); otherwise sorted by offset
//!   (`io_hist_tree`), a piece that overlaps an earlier one replacing it.
//! * After the write phase, `do_verify` (backend.c) syncs the file
//!   (`fio_io_sync`), drops its cache (`file_invalidate_cache`), then reads
//!   the pieces back in that order (`get_next_verify`), each at its offset
//!   and length, with the job's queue depth.
//! * `verify_only`: the write phase is `do_dry_run`: the writes are chosen
//!   and logged, none issued nor reported.
//! * `verify_backlog=N`: during the write phase, whenever N pieces are
//!   logged and the last I/O done was not a read (`check_get_verify`,
//!   io_u.c), the next `verify_backlog_batch` (default N) I/Os are reads of
//!   the oldest pieces.

use std::collections::BTreeMap;

/// A job's verification (`ProcSpec::verify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verify {
    /// Pieces in issue order (fio's random map), else sorted by offset.
    pub in_order: bool,
    /// `verify_only`: the writes are a dry run.
    pub only: bool,
    /// `verify_backlog` (0: none) and `verify_backlog_batch` (0: the backlog).
    pub backlog: u64,
    pub batch: u64,
}

/// Where a verifying process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// `do_io` (or `do_dry_run`): writes, logged.
    Writing,
    /// `do_verify`'s `fio_io_sync` under way.
    Syncing,
    /// `do_verify`'s reads.
    Reading,
    Done,
}

/// fio's `io_hist_list`/`io_hist_tree` and the verify state of a process.
#[derive(Clone, Debug)]
pub(crate) struct VerifyLog {
    pub(crate) phase: Phase,
    in_order: bool,
    list: std::collections::VecDeque<(u64, u64)>,
    tree: BTreeMap<u64, u64>,
    /// `td->verify_batch`: backlog reads still to give.
    batch_left: u64,
    /// `td->last_ddir` was a read.
    pub(crate) last_was_read: bool,
}

impl VerifyLog {
    pub(crate) fn new(v: &Verify) -> VerifyLog {
        VerifyLog {
            phase: Phase::Writing,
            in_order: v.in_order,
            list: Default::default(),
            tree: BTreeMap::new(),
            batch_left: 0,
            last_was_read: false,
        }
    }

    /// `td->io_hist_len`.
    pub(crate) fn len(&self) -> u64 {
        (self.list.len() + self.tree.len()) as u64
    }

    /// fio's `log_io_piece` of a write of `len` bytes at `off`.
    pub(crate) fn log(&mut self, off: u64, len: u64) {
        if self.in_order {
            self.list.push_back((off, len));
            return;
        }
        let end = off.saturating_add(len);
        // The tree holds no overlaps: the piece before `off` and those that
        // start inside [off, end) are the only ones that can overlap.
        let before = self.tree.range(..off).next_back().map(|(&o, &l)| (o, l));
        if let Some((o, l)) = before {
            if o.saturating_add(l) > off {
                self.tree.remove(&o);
            }
        }
        let inside: Vec<u64> = self
            .tree
            .range(off..end.max(off + 1))
            .map(|(&o, _)| o)
            .collect();
        for o in inside {
            self.tree.remove(&o);
        }
        self.tree.insert(off, len);
    }

    /// fio's `get_next_verify`: the oldest (list) or lowest (tree) piece.
    pub(crate) fn next_piece(&mut self) -> Option<(u64, u64)> {
        if let Some((&o, &l)) = self.tree.iter().next() {
            self.tree.remove(&o);
            return Some((o, l));
        }
        self.list.pop_front()
    }

    /// fio's `check_get_verify` before an I/O of the write phase: whether
    /// it is a backlog read (the piece taken).
    pub(crate) fn backlog_read(&mut self, v: &Verify) -> Option<(u64, u64)> {
        if v.backlog == 0 || self.len() == 0 {
            return None;
        }
        if self.batch_left == 0 {
            if self.len() % v.backlog != 0 || self.last_was_read {
                return None;
            }
            self.batch_left = if v.batch > 0 { v.batch } else { v.backlog };
        }
        let piece = self.next_piece()?;
        self.batch_left -= 1;
        Some(piece)
    }

    /// Whether `check_get_verify` would give a read now (the write phase
    /// goes on for it after the writes are done).
    pub(crate) fn backlog_due(&self, v: &Verify) -> bool {
        v.backlog > 0
            && self.len() > 0
            && (self.batch_left > 0 || (self.len() % v.backlog == 0 && !self.last_was_read))
    }
}

use crate::workload::Dir;
use crate::world::Simulation;
use iostack_core::TaskId;
use iostack_des::Instant;

impl Simulation {
    /// A verify read as the process's next I/O, if one is due (the verify
    /// phase's next piece, or a backlog read): issued, true.
    pub(crate) fn verify_read(&mut self, pi: u32, now: Instant) -> bool {
        let p = &mut self.procs[pi as usize];
        let (Some(l), Some(v)) = (p.vlog.as_mut(), p.spec.verify.as_ref()) else {
            return false;
        };
        let piece = match l.phase {
            Phase::Reading => l.next_piece(),
            Phase::Writing => l.backlog_read(v),
            Phase::Syncing | Phase::Done => None,
        };
        let Some((rel, len)) = piece else {
            return false;
        };
        l.last_was_read = true;
        let offset = p.spec.offset + rel;
        self.issue_at(pi, Dir::Read, offset, len, now);
        true
    }

    /// A write of the write phase: logged (`log_io_piece`); under
    /// `verify_only` (`do_dry_run`) it ends there, not issued (true).
    pub(crate) fn verify_log_write(
        &mut self,
        pi: u32,
        dir: Dir,
        rel: u64,
        len: u64,
        now: Instant,
    ) -> bool {
        let p = &mut self.procs[pi as usize];
        let (Some(l), Some(v)) = (p.vlog.as_mut(), p.spec.verify.as_ref()) else {
            return false;
        };
        // fio's `td->last_ddir` (one I/O in flight: the last one issued).
        l.last_was_read = dir == Dir::Read;
        if dir != Dir::Write {
            return false;
        }
        l.log(rel, len);
        let only = v.only;
        if only {
            self.schedule_task(TaskId(pi), now);
        }
        only
    }

    /// At the end of a phase of a verifying process (from `finish_proc`):
    /// after the writes, `do_verify`'s `fio_io_sync`; after it,
    /// `file_invalidate_cache` and the reads. Returns true while the
    /// process goes on.
    pub(crate) fn verify_next_phase(&mut self, pi: u32, now: Instant) -> bool {
        let p = &mut self.procs[pi as usize];
        let Some(l) = p.vlog.as_mut() else {
            return false;
        };
        if p.result.error.is_some() || p.terminate {
            l.phase = Phase::Done;
            return false;
        }
        match l.phase {
            Phase::Writing => {
                l.phase = Phase::Syncing;
                p.result.verify_start = Some(now);
                p.datasync = false;
                let map = p.map;
                self.start_fsync(pi, map);
                self.schedule_task(TaskId(pi), now);
                true
            }
            Phase::Syncing => {
                l.phase = Phase::Reading;
                // A flush job it starts runs first; the cache is dropped at
                // its end and the reads follow.
                self.invalidate_file(pi);
                self.schedule_task(TaskId(pi), now);
                true
            }
            Phase::Reading | Phase::Done => {
                l.phase = Phase::Done;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(in_order: bool) -> Verify {
        Verify {
            in_order,
            only: false,
            backlog: 0,
            batch: 0,
        }
    }

    #[test]
    fn the_tree_sorts_and_replaces_overlaps() {
        let mut l = VerifyLog::new(&v(false));
        for (o, n) in [(8, 4), (0, 4), (8, 4), (2, 8), (20, 4)] {
            l.log(o, n);
        }
        // (2, 8) overlaps (0, 4) and (8, 4): both replaced.
        let got: Vec<_> = std::iter::from_fn(|| l.next_piece()).collect();
        assert_eq!(got, [(2, 8), (20, 4)]);
    }

    #[test]
    fn the_list_keeps_issue_order() {
        let mut l = VerifyLog::new(&v(true));
        for (o, n) in [(8, 4), (0, 4), (8, 4)] {
            l.log(o, n);
        }
        let got: Vec<_> = std::iter::from_fn(|| l.next_piece()).collect();
        assert_eq!(got, [(8, 4), (0, 4), (8, 4)]);
    }

    #[test]
    fn backlog_reads_after_every_n_writes() {
        let cfg = Verify {
            backlog: 2,
            ..v(true)
        };
        let mut l = VerifyLog::new(&cfg);
        l.log(0, 1);
        assert_eq!(l.backlog_read(&cfg), None);
        l.log(1, 1);
        assert_eq!(l.backlog_read(&cfg), Some((0, 1)));
        l.last_was_read = true;
        assert_eq!(l.backlog_read(&cfg), Some((1, 1)));
        assert_eq!(l.backlog_read(&cfg), None);
    }
}
