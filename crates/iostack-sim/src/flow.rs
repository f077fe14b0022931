//! fio's flow control (flow.c): jobs with the same `flow_id` share a counter
//! that starts at 1 (`flow_get`) and a total weight, the sum of the `flow`
//! weights of every job of the file that sets one (`flow_init_job` runs when
//! the job is added, before any runs). At the top of each `do_io` iteration,
//! after the runtime check and before the byte check,
//! `flow_threshold_exceeded` compares the job's own count over the shared
//! counter with its weight over the total: above its share, the job waits
//! (with `flow_sleep`: `io_u_quiesce`, then `usleep(flow_sleep)`, then the
//! check again; without: it spins on the check until another job of the
//! flow moves on or exits); else both counters go up by one and the
//! iteration goes on. `flow_exit_job` takes the job's count and weight back
//! out when its thread ends. fio compares two doubles; the counts are
//! integers far below 2^26, so comparing the cross products is exact.

use crate::task::Blocked;
use crate::world::Simulation;
use iostack_core::TaskId;
use iostack_des::{Duration, Instant};

/// A job's `flow_id`, `flow` and `flow_sleep` (None in `ProcSpec`: `flow=0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    pub id: u32,
    /// `flow`, 1..=1000.
    pub weight: u64,
    /// `flow_sleep`; zero: spin.
    pub sleep: Duration,
}

/// A process's side of its flow: fio's `td->flow_counter`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FlowState {
    count: u64,
    /// The I/Os issued when the check last passed: one pass per iteration.
    passed_at: Option<u64>,
    /// Over its share with `flow_sleep`: waiting for its I/Os, then sleeps.
    quiesce: bool,
}

/// The shared `struct fio_flow`s, by id.
#[derive(Debug, Default)]
pub(crate) struct Flows {
    /// (id, flow_counter, total_weight).
    shared: Vec<(u32, u64, u64)>,
}

impl Flows {
    /// `flow_init_job` for every job of the run.
    pub(crate) fn new<'a>(specs: impl Iterator<Item = &'a Option<FlowSpec>>) -> Flows {
        let mut f = Flows::default();
        for s in specs.flatten() {
            match f.shared.iter_mut().find(|e| e.0 == s.id) {
                Some(e) => e.2 += s.weight,
                None => f.shared.push((s.id, 1, s.weight)),
            }
        }
        f
    }

    fn get(&mut self, id: u32) -> &mut (u32, u64, u64) {
        self.shared
            .iter_mut()
            .find(|e| e.0 == id)
            .expect("flow_init_job made it")
    }
}

impl Simulation {
    /// `flow_threshold_exceeded` at the top of an iteration of process `pi`
    /// (its I/Os in flight below its depth, its runtime not over): whether
    /// it is held back now. A process spinning is woken by [`Self::flow_moved`].
    pub(crate) fn flow_held(&mut self, pi: u32, depth: u32, now: Instant) -> bool {
        let p = &self.procs[pi as usize];
        let Some(spec) = p.spec.flow else {
            return false;
        };
        let over = p.spec.runtime.is_some_and(|rt| now >= p.start + rt);
        let top = p.inflight < depth && !p.terminate && !over;
        if !top || p.flow.passed_at == Some(p.ios_issued) {
            return false;
        }
        let p = &mut self.procs[pi as usize];
        if !p.flow.quiesce {
            let &mut (_, counter, total) = self.flows.get(spec.id);
            let p = &mut self.procs[pi as usize];
            // flow_counter / counter > flow / total_weight, exactly.
            if u128::from(p.flow.count) * u128::from(total)
                <= u128::from(spec.weight) * u128::from(counter)
            {
                p.flow.count += 1;
                p.flow.passed_at = Some(p.ios_issued);
                self.flows.get(spec.id).1 += 1;
                self.flow_moved(spec.id, pi, now);
                return false;
            }
            if spec.sleep == Duration::ZERO {
                // The spin: nothing changes until another job of the flow
                // counts an iteration or exits.
                self.tasks.block(TaskId(pi), Blocked::OnFlow);
                return true;
            }
            p.flow.quiesce = true;
        }
        let p = &mut self.procs[pi as usize];
        if p.inflight > 0 {
            // io_u_quiesce: completions bring the process back here.
            self.tasks.block(TaskId(pi), Blocked::OnIo);
            return true;
        }
        p.flow.quiesce = false;
        let until = now + spec.sleep;
        p.pace.sleep_until = Some(until);
        self.schedule_task(TaskId(pi), until);
        true
    }

    /// The flow's counters moved (a job counted an iteration or exited): the
    /// other jobs spinning on it check again, in process order.
    fn flow_moved(&mut self, id: u32, by: u32, now: Instant) {
        for i in 0..self.procs.len() {
            let spins = self.procs[i].spec.flow.is_some_and(|f| f.id == id)
                && i != by as usize
                && self.tasks.blocked(TaskId(i as u32)) == Blocked::OnFlow;
            if spins {
                // The spinning thread sees the change at once: no wake-up.
                self.tasks.unblock(TaskId(i as u32));
                self.schedule_task(TaskId(i as u32), now);
            }
        }
    }

    /// `flow_exit_job` when process `pi` ends: its count and weight leave
    /// the flow.
    pub(crate) fn flow_exit(&mut self, pi: u32, now: Instant) {
        let p = &mut self.procs[pi as usize];
        let Some(spec) = p.spec.flow else {
            return;
        };
        let count = std::mem::take(&mut p.flow.count);
        let e = self.flows.get(spec.id);
        e.1 -= count;
        e.2 -= spec.weight;
        self.flow_moved(spec.id, pi, now);
    }
}
