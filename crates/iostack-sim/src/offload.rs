//! fio's `io_submit_mode=offload` (rate-submit.c, workqueue.c): the job's
//! thread chooses each I/O and paces it (`rate_ddir` without
//! `io_u_quiesce`), then `workqueue_enqueue`s it to one of `iodepth` submit
//! workers (`rate_submit_init`), threads with their own pid, each with a
//! copy of the engine at depth 1 (`io_workqueue_init_worker_fn`): a worker
//! submits its I/O (`td_io_queue`) and waits for it
//! (`io_u_queued_complete(td, 1)`) before it takes another. The bios carry
//! the worker's pid, so a scheduler with per-process queues (CFQ's
//! `cfq_io_context`, AS) sees one process per worker, as on Linux, where
//! `pthread_create` shares no io_context.
//!
//! A worker is idle once its I/O completes; the worker then becomes
//! `next_free_worker` (worker_thread). The job's thread gets its io_u back
//! in the same completion (`put_io_u`), so here the two happen at once.

use crate::world::Simulation;
use iostack_core::TaskId;

/// The submit workers of one job.
#[derive(Clone, Debug)]
pub(crate) struct Workers {
    pids: Vec<u32>,
    idle: Vec<bool>,
    /// workqueue's `seq` per worker: the `work_seq` of its last work.
    seq: Vec<u64>,
    work_seq: u64,
    next_free: usize,
}

impl Workers {
    /// `n` workers with the pids `pids..pids + n`.
    pub(crate) fn new(first_pid: u32, n: u32) -> Workers {
        let n = n.max(1) as usize;
        Workers {
            pids: (0..n as u32).map(|i| first_pid + i).collect(),
            idle: vec![true; n],
            seq: vec![0; n],
            work_seq: 0,
            next_free: 0,
        }
    }

    pub(crate) fn pids(&self) -> &[u32] {
        &self.pids
    }

    /// workqueue.c `get_submit_worker` and `workqueue_enqueue`: the first
    /// idle worker from `next_free_worker` on, wrapping; if none, the one
    /// with the oldest work. Returns the worker's index.
    pub(crate) fn enqueue(&mut self) -> usize {
        let n = self.idle.len();
        let start = self.next_free;
        let found = (0..n).map(|k| (start + k) % n).find(|&w| self.idle[w]);
        let w = found.unwrap_or_else(|| {
            // best: the lowest seq, scanning from next_free_worker.
            (0..n)
                .map(|k| (start + k) % n)
                .min_by_key(|&w| self.seq[w])
                .unwrap_or(0)
        });
        if w == self.next_free {
            self.next_free = (w + 1) % n;
        }
        self.work_seq += 1;
        self.seq[w] = self.work_seq;
        self.idle[w] = false;
        w
    }

    /// The worker's I/O completed: it goes idle and is the next free one.
    pub(crate) fn done(&mut self, w: usize) {
        if let Some(i) = self.idle.get_mut(w) {
            *i = true;
            self.next_free = w;
        }
    }

    pub(crate) fn pid(&self, w: usize) -> u32 {
        self.pids[w]
    }
}

impl Simulation {
    /// An offloaded job's direct I/O goes to a worker: its bios carry the
    /// worker's pid until the submission ends (`offload_submitted`).
    /// Returns the worker, or `u32::MAX` for an inline job.
    pub(crate) fn offload_enqueue(&mut self, pi: u32) -> u32 {
        let Some(w) = self.procs[pi as usize].workers.as_mut() else {
            return u32::MAX;
        };
        let i = w.enqueue();
        let pid = w.pid(i);
        self.tasks.get_mut(TaskId(pi)).pid = pid;
        i as u32
    }

    /// The worker's `td_io_queue` returned: the job's thread goes on as
    /// itself.
    pub(crate) fn offload_submitted(&mut self, pi: u32) {
        let p = &self.procs[pi as usize];
        if p.workers.is_some() {
            self.tasks.get_mut(TaskId(pi)).pid = p.result.pid;
        }
    }

    /// The I/O of worker `w` completed.
    pub(crate) fn offload_done(&mut self, pi: u32, w: u32) {
        if let Some(ws) = self.procs[pi as usize].workers.as_mut() {
            ws.done(w as usize);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// workqueue.c's choice: idle workers in turn from `next_free_worker`;
    /// a worker that goes idle is the next one chosen.
    #[test]
    fn workers_are_chosen_as_workqueue_does() {
        let mut w = Workers::new(2000, 4);
        assert_eq!([w.enqueue(), w.enqueue(), w.enqueue()], [0, 1, 2]);
        w.done(1);
        assert_eq!(w.enqueue(), 1, "the worker just idle");
        assert_eq!(w.enqueue(), 3);
        w.done(0);
        w.done(2);
        assert_eq!(w.enqueue(), 2, "next_free_worker is the last to go idle");
        assert_eq!(w.enqueue(), 0, "then on from it, wrapping");
        // All busy: the one with the oldest work (worker 1, seq 4).
        assert_eq!(w.enqueue(), 1);
        assert_eq!(w.pid(3), 2003);
    }
}
