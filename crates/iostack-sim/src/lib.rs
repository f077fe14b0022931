//! Assembly and the public library API: a machine, a kernel profile with its
//! tunables, a scheduler, a workload and a seed go in; a run of the simulated stack
//! comes out, with its event stream delivered to whatever sinks are attached.

mod bdev;
pub mod bonnie;
mod buffered;
pub mod check;
mod error;
pub mod experiment;
pub mod frontend;
pub mod fsys;
mod kblockd;
mod lazyinit;
pub mod machine;
mod plug;
mod runend;
mod startq;
pub mod stats;
mod task;
pub mod tools;
pub mod workload;
mod world;
mod writeback;

pub use error::SimError;
pub use machine::{MachineError, MachineErrorKind};
pub use runend::RunEnd;
pub use world::{tunable_tables, IoEvent, IoObserver, SimConfig, Simulation};

/// A hash of everything a run depends on besides the seed: machine, profile and
/// tunables, scheduler and workload. Printed with every output.
pub fn config_hash(cfg: &SimConfig) -> u64 {
    let mut s = String::new();
    s.push_str(&cfg.machine.canonical());
    s.push('\n');
    // 2.4's elevator_linus latencies enter the hash only when that elevator
    // runs, so configurations hashed before they existed keep their hash.
    for line in cfg.tunables.canonical().lines() {
        if line.starts_with("iosched/elevator_linus/") && cfg.scheduler != "elevator_linus" {
            continue;
        }
        s.push_str(line);
        s.push('\n');
    }
    s.push_str(&cfg.scheduler);
    s.push('\n');
    for p in &cfg.procs {
        s.push_str(&format!("{p:?}\n"));
    }
    iostack_des::fnv1a64(s.as_bytes())
}
