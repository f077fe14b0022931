//! Set-up shared by the integration tests: a fio job file's simulation on a
//! machine, and a sink that keeps the block trace. Each test binary uses a
//! part of it.
#![allow(dead_code)]

use iostack_core::{Profile, TraceEvent, TraceRecord, TraceSink, Tunables};
use iostack_sim::frontend::fio_procs_from_text;
use iostack_sim::machine::Machine;
use iostack_sim::{tunable_tables, SimConfig, SimError, Simulation};
use std::sync::{Arc, Mutex};

/// The block trace records a run kept.
pub type Log = Arc<Mutex<Vec<TraceRecord>>>;

/// A sink that keeps every block trace record in a `Log`.
pub struct Collect(pub Log);

impl TraceSink for Collect {
    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Block(r) = ev {
            self.0.lock().unwrap().push(*r);
        }
    }
}

/// Job file `job` on machine `m` under `profile`, with the scheduler `sched`
/// (the machine's when `None`) and the tunables `set` (`KEY=VALUE`), seed 1,
/// full checks: the simulation as set up, or why it was refused.
pub fn fio_sim(
    job: &str,
    m: Machine,
    profile: Profile,
    sched: Option<&str>,
    set: &[&str],
) -> Result<Simulation, SimError> {
    let procs = fio_procs_from_text("job.fio", job, &m).unwrap().procs;
    let mut tunables = Tunables::new(profile, &tunable_tables());
    for kv in set {
        tunables.set_str(kv).unwrap();
    }
    Simulation::new(SimConfig {
        scheduler: sched.map_or_else(|| m.scheduler.clone(), str::to_string),
        machine: m,
        tunables,
        seed: iostack_des::Seed(1),
        procs,
        checks: true,
        until: None,
    })
}
