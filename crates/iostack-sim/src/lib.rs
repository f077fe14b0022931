//! Assembly and the public library API: a machine, a kernel profile with its
//! tunables, a scheduler, a workload and a seed go in; a run of the simulated stack
//! comes out, with its event stream delivered to whatever sinks are attached.

mod bdev;
mod bdflush;
pub mod bonnie;
mod buffered;
pub mod check;
mod dio24;
pub mod dist;
mod error;
pub mod experiment;
mod files;
pub mod fixed;
pub mod flow;
pub mod frontend;
pub mod fsys;
pub mod iolog_front;
mod jbd;
mod kblockd;
mod lazyinit;
mod lfsr;
pub mod machine;
pub mod minrate;
mod offload;
mod open;
mod pace;
mod placement;
mod plug;
mod poisson;
mod read24;
mod replay;
mod runend;
mod startq;
pub mod stats;
mod task;
mod taus;
pub mod tools;
pub mod verify;
pub mod workload;
mod world;
mod writeback;
mod xfslog;

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
    // A scheduler's tunables enter the hash only on kernels with its kind of
    // block layer (legacy elevators on the single queue, blk-mq schedulers on
    // blk-mq), so adding one kind's tunables keeps the other's hashes.
    let sq = cfg.tunables.profile().single_queue();
    for line in cfg.tunables.canonical().lines() {
        let owner = line
            .strip_prefix("iosched/")
            .and_then(|r| r.split('/').next())
            .and_then(iostack_iosched::find);
        let mq = owner.is_some_and(|d| matches!(d.build, iostack_iosched::Build::Mq(_)));
        let legacy = owner.is_some_and(|d| matches!(d.build, iostack_iosched::Build::Legacy(_)));
        // 2.4's elevator_linus latencies only on 2.4.
        let ll24 = owner.is_some_and(|d| matches!(d.build, iostack_iosched::Build::Ll24(_)));
        let v24 = cfg.tunables.profile() == iostack_core::Profile::V2_4;
        // 2.4's direct-I/O flush only on 2.4 and when not the default (it came
        // after the hashes of earlier runs); 2.4's /proc/sys/vm/bdflush and
        // max_readahead only on 2.4.
        let only24 = line.starts_with("dio/flush24=")
            || line.starts_with("vm/bdflush/")
            || line.starts_with("queue/max_readahead=");
        let flush_default = line == "dio/flush24=data";
        if (sq && mq)
            || (!sq && legacy)
            || ((ll24 || only24) && !v24)
            || flush_default
            || idle_ext4_journal(cfg, line)
            || idle_xfs_log(cfg, line)
        {
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

/// An XFS log tunable on another file system: it changes nothing, so the
/// hashes of runs made before XFS's log was simulated stay.
fn idle_xfs_log(cfg: &SimConfig, line: &str) -> bool {
    let name = line.split('=').next().unwrap_or("");
    iostack_fs::XFS_LOG_TUNABLES.contains(&name) && cfg.machine.fs != crate::machine::FsKind::Xfs
}

/// A `fs/ext4/` journal tunable while ext4's journal is not run: it changes
/// nothing, so the hashes of runs made before jbd2 was simulated stay.
fn idle_ext4_journal(cfg: &SimConfig, line: &str) -> bool {
    let name = line.split('=').next().unwrap_or("");
    iostack_fs::EXT4_JOURNAL_TUNABLES.contains(&name) && !cfg.tunables.get_bool("fs/ext4/journal")
}
