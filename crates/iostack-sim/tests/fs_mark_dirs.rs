//! fs_mark's directories on ext4 (2.6.34): the `-d` directory is a top-level
//! directory, spread by `find_group_orlov` over the flex groups with the
//! file system's `s_hash_seed` (each mkfs its own), its subdirectory and
//! files beside it (`find_group_other`), and every file's data in its
//! inode's flex group (`ext4_ext_find_goal`). The first file's commit also
//! logs what the two `mkdir`s dirtied.

use iostack_core::{Action, Profile, ReqFlags, TraceEvent, TraceSink, Tunables};
use iostack_des::Seed;
use iostack_sim::machine::{self, FsKind};
use iostack_sim::{tunable_tables, SimConfig, Simulation};
use std::sync::{Arc, Mutex};

const JBD2: u32 = 192;
/// Sectors in a flex group of 16 groups of 32768 4 KiB blocks.
const FLEX_SECTORS: u64 = 16 * 32768 * 8;

#[derive(Default, Clone)]
struct Writes(Arc<Mutex<Vec<(u64, u32, u32)>>>);

impl TraceSink for Writes {
    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Block(r) = ev {
            if r.action == Action::Queue && r.flags.contains(ReqFlags::WRITE) {
                self.0
                    .lock()
                    .unwrap()
                    .push((r.sector, r.bytes / 512, r.pid));
            }
        }
    }
}

/// fs_mark's queued writes (file-system-relative sector, sectors, pid) on
/// sata-2010's ext4 made with `seed`.
fn fs_mark_writes(seed: u64, files: u64) -> Vec<(u64, u32, u32)> {
    let mut m = machine::preset("sata-2010").unwrap();
    // seed-003's machine_set: fs = ext4
    m.fs = FsKind::Ext4;
    let start = m.partition.map_or(0, |p| p.1);
    let args: Vec<String> = format!(
        "-S 1 -D 100 -N 1000 -d {}/fs_mark -s 65536 -t 1 -w 4096 -n {files}",
        m.mount
    )
    .split_whitespace()
    .map(str::to_string)
    .collect();
    let spec = iostack_workload::parse_fs_mark_args(&args).unwrap();
    let run = iostack_sim::tools::fs_mark_run(&spec, &m).unwrap();
    let mut t = Tunables::new(Profile::V2_6_33, &tunable_tables());
    t.set_str("fs/ext4/journal=1").unwrap();
    let cfg = SimConfig {
        scheduler: "deadline".into(),
        machine: m,
        tunables: t,
        seed: Seed(seed),
        procs: run.procs,
        checks: true,
        until: None,
    };
    let mut sim = Simulation::new(cfg).unwrap();
    let w = Writes::default();
    sim.attach(Box::new(w.clone()));
    let (r, _) = sim.run();
    assert!(r.procs.iter().all(|p| p.error.is_none()), "{:?}", r.procs);
    let v = w.0.lock().unwrap().clone();
    v.into_iter().map(|(s, n, p)| (s - start, n, p)).collect()
}

#[test]
fn fs_mark_files_land_in_their_directory_flex_group() {
    let mut flexes = std::collections::BTreeSet::new();
    for seed in [1, 2, 7] {
        let w = fs_mark_writes(seed, 8);
        let data: Vec<_> = w.iter().filter(|q| q.2 >= 2000).collect();
        assert_eq!(data.iter().map(|q| q.1 as u64).sum::<u64>(), 8 * 128);
        let f = data[0].0 / FLEX_SECTORS;
        for q in &data {
            // one flex group, its second group (a4912123: regular files
            // start there; the first group keeps the directories' blocks)
            assert_eq!(q.0 / FLEX_SECTORS, f, "seed {seed}: {q:?}");
            assert_eq!(q.0 % FLEX_SECTORS / (32768 * 8), 1, "seed {seed}: {q:?}");
        }
        // Not in the root's flex group, where every file went before.
        assert_ne!(f, 0, "seed {seed}");
        flexes.insert(f);
    }
    assert!(
        flexes.len() >= 2,
        "the same flex group for three mkfs: {flexes:?}"
    );
}

#[test]
fn the_first_commit_logs_the_mkdirs_blocks() {
    let w = fs_mark_writes(1, 3);
    // The jbd2 thread's log writes between fs_mark's data writes: one commit
    // per file's fsync.
    let mut commits: Vec<u64> = Vec::new();
    let mut prev = 0;
    for q in &w {
        if q.2 == JBD2 {
            if prev != JBD2 {
                commits.push(0);
            }
            *commits.last_mut().unwrap() += q.1 as u64 / 8;
        }
        prev = q.2;
    }
    assert_eq!(commits.len(), 3, "{w:?}");
    // The first file's transaction also holds the two directories' inode
    // blocks, bitmaps, descriptors and directory blocks, the parent
    // entries' blocks: more log blocks than the second file's.
    assert!(commits[0] > commits[1] + 2, "{commits:?}");
}
