//! Assembly and the public library API: a machine, a kernel profile with its
//! tunables, a scheduler, a workload and a seed go in; a run of the simulated stack
//! comes out, with its event stream delivered to whatever sinks are attached.

pub mod check;
pub mod machine;
pub mod stats;
pub mod workload;
mod world;

pub use world::{tunable_tables, SimConfig, SimError, Simulation};
