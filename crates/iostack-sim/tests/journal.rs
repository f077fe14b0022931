//! ext3's journal in the running machine: the request pattern of an fsync
//! (the file's data, then kjournald's descriptor and metadata blocks in the
//! log, then the commit block with the barrier when `barrier=1`), an fsync
//! that commits nothing (a cache flush from the caller), and `data=ordered`
//! making the commit write another file's dirty data. Every run has the
//! checks on: the journal's invariants (each handle in one transaction, no log
//! block written twice before a checkpoint frees it) after every event.

use iostack_core::{Action, Profile, ReqFlags, TraceEvent, TraceSink, Tunables};
use iostack_des::Seed;
use iostack_sim::workload::{ProcSpec, Target};
use iostack_sim::{machine, tunable_tables, SimConfig, Simulation};
use std::sync::{Arc, Mutex};

const KJOURNALD: u32 = 192;

/// A queued bio: (sector, sectors, pid, flags).
type Q = (u64, u32, u32, ReqFlags);

#[derive(Default, Clone)]
struct Queued(Arc<Mutex<Vec<Q>>>, Arc<Mutex<Vec<String>>>);

impl TraceSink for Queued {
    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Message { text, .. } = ev {
            self.1.lock().unwrap().push(text.clone());
        }
        if let TraceEvent::Block(r) = ev {
            if r.action == Action::Queue && r.flags.contains(ReqFlags::WRITE) {
                let q = (r.sector, r.bytes / 512, r.pid, r.flags);
                self.0.lock().unwrap().push(q);
            }
        }
    }
}

fn writer(name: &str, pid: u32, kib: u64, fresh: bool, fsync: bool) -> ProcSpec {
    let bytes = kib << 10;
    let target = Target::File {
        path: format!("/mnt/test/{name}"),
        size: bytes,
        goal: None,
    };
    ProcSpec {
        pid: Some(pid),
        direct: false,
        read_pct: 0,
        fresh,
        end_fsync: fsync,
        ..ProcSpec::direct_reader(name, name, target, bytes)
    }
}

fn run(sets: &[&str], procs: Vec<ProcSpec>) -> Vec<Q> {
    run_on("sata-2010", "deadline", sets, procs).0
}

/// A run's queued writes and the processes' (start, end) in ns.
fn run_on(
    machine: &str,
    sched: &str,
    sets: &[&str],
    procs: Vec<ProcSpec>,
) -> (Vec<Q>, Vec<(u64, u64)>, Vec<String>) {
    run_machine(machine::preset(machine).unwrap(), sched, sets, procs)
}

/// A run on `m`: its queued writes, the processes' (start, end) in ns, and
/// the trace's messages.
fn run_machine(
    m: machine::Machine,
    sched: &str,
    sets: &[&str],
    procs: Vec<ProcSpec>,
) -> (Vec<Q>, Vec<(u64, u64)>, Vec<String>) {
    let mut t = Tunables::new(Profile::V2_6_33, &tunable_tables());
    for s in sets {
        t.set_str(s).unwrap();
    }
    let cfg = SimConfig {
        scheduler: sched.into(),
        machine: m,
        tunables: t,
        seed: Seed(3),
        procs,
        checks: true,
        until: None,
    };
    let mut sim = Simulation::new(cfg).unwrap();
    let q = Queued::default();
    sim.attach(Box::new(q.clone()));
    let (r, _) = sim.run();
    assert!(r.procs.iter().all(|p| p.error.is_none()), "{:?}", r.procs);
    let v = q.0.lock().unwrap().clone();
    let times = r
        .procs
        .iter()
        .map(|p| (p.start.as_ns(), p.end.as_ns()))
        .collect();
    let msgs = q.1.lock().unwrap().clone();
    (v, times, msgs)
}

#[test]
fn fsync_writes_data_then_the_log_then_the_commit_block_with_its_barrier() {
    let qs = run(
        &["fs/ext3/barrier=1"],
        vec![writer("f", 1000, 64, true, true)],
    );
    let data: Vec<&Q> = qs.iter().filter(|q| q.2 == 1000).collect();
    let journal: Vec<&Q> = qs.iter().filter(|q| q.2 == KJOURNALD).collect();
    // 16 pages of data, written by fsync's WB_SYNC_ALL writeback
    // (WRITE_SYNC_PLUG: SYNC|NOIDLE in 2.6.33; blktrace records the S).
    assert_eq!(data.len(), 16);
    assert!(data.iter().all(|q| q.3.contains(ReqFlags::SYNC)));
    // Descriptor + the metadata blocks (block and inode bitmaps, group
    // descriptor, inode table), then the commit block.
    assert!(journal.len() >= 4, "{journal:?}");
    let (commit, log) = journal.split_last().unwrap();
    assert!(
        commit.3.contains(ReqFlags::FLUSH),
        "barrier on the commit block"
    );
    assert!(log.iter().all(|q| !q.3.contains(ReqFlags::FLUSH)));
    // The log is written in order, each block once, after the data and far
    // from it (the journal sits in the middle group).
    let mut prev = data.iter().map(|q| q.0).max().unwrap();
    for q in log.iter().chain([commit]) {
        assert_eq!(q.1, 8);
        assert!(q.0 > prev, "log block {} not after {}", q.0, prev);
        prev = q.0;
    }
    let first_log = log[0].0;
    assert!(first_log > 1 << 20);
    // The first log block follows the data in time too: all of the data was
    // queued before kjournald's first write.
    let first_kj = qs.iter().position(|q| q.2 == KJOURNALD).unwrap();
    assert!(qs[..first_kj].iter().filter(|q| q.2 == 1000).count() == 16);
}

#[test]
fn an_fsync_with_nothing_to_commit_flushes_the_cache_itself() {
    // The rewrite allocates nothing and does not grow the file: its handles
    // dirty no metadata, i_sync_tid stays at the committed transaction, and
    // ext3_sync_file issues blkdev_issue_flush (barrier=1).
    let mut re = writer("f", 1001, 64, false, true);
    re.stonewall = true;
    let qs = run(
        &["fs/ext3/barrier=1"],
        vec![writer("f", 1000, 64, true, true), re],
    );
    let second: Vec<&Q> = qs.iter().filter(|q| q.2 == 1001).collect();
    let (flush, data) = second.split_last().unwrap();
    assert_eq!(data.len(), 16);
    assert_eq!(flush.1, 0, "an empty flush");
    assert!(flush.3.contains(ReqFlags::FLUSH));
    let commits = qs
        .iter()
        .filter(|q| q.2 == KJOURNALD && q.3.contains(ReqFlags::FLUSH))
        .count();
    assert_eq!(commits, 1, "one commit, for the first writer");
    // Without barriers the same fsync sends nothing after its data.
    let mut re = writer("f", 1001, 64, false, true);
    re.stonewall = true;
    let qs = run(&[], vec![writer("f", 1000, 64, true, true), re]);
    assert!(qs.iter().all(|q| q.1 > 0));
    assert_eq!(qs.iter().filter(|q| q.2 == 1001).count(), 16);
}

#[test]
fn ordered_mode_commit_writes_another_files_dirty_data() {
    // `a` is written and left dirty; `b` is written and fsync'ed. Both joined
    // the running transaction, so the commit fsync asks for writes a's data
    // buffers first (journal_submit_data_buffers), as kjournald.
    let a = writer("a", 1000, 64, true, false);
    let mut b = writer("b", 1001, 32, true, true);
    b.stonewall = true;
    let qs = run(&[], vec![a, b]);
    let kj: Vec<&Q> = qs.iter().filter(|q| q.2 == KJOURNALD).collect();
    let first_log = kj.iter().position(|q| q.0 > 1 << 20).unwrap();
    let data = &kj[..first_log];
    assert_eq!(data.len(), 16, "a's 16 dirty pages, by kjournald: {kj:?}");
    assert!(data.iter().all(|q| q.3.contains(ReqFlags::SYNC)));
    assert!(qs.iter().all(|q| q.2 != 1000), "a itself wrote nothing");
    // With data=writeback the commit writes no data.
    let a = writer("a", 1000, 64, true, false);
    let mut b = writer("b", 1001, 32, true, true);
    b.stonewall = true;
    let qs = run(&["fs/ext3/data=writeback"], vec![a, b]);
    assert!(qs
        .iter()
        .filter(|q| q.2 == KJOURNALD)
        .all(|q| q.0 > 1 << 20));
}

#[test]
fn cfq_idles_on_the_fsyncing_process_and_the_yield_series_hands_the_disk_to_kjournald() {
    // A first writer gives kjournald an io context (and a CFQ queue); the
    // second writer's fsync then waits for the commit. Vanilla CFQ of 2.6.33
    // idles slice_idle (8 ms) on the writer's emptied queue before kjournald's
    // log writes go out; with the blk_yield series log_wait_commit yields the
    // queue and the commit runs at once.
    let procs = || {
        let mut b = writer("b", 1001, 64, true, true);
        b.stonewall = true;
        vec![writer("a", 1000, 64, true, true), b]
    };
    let sets = ["fs/ext3/barrier=1"];
    let (_, vanilla, m) = run_on("san-2010", "cfq", &sets, procs());
    assert!(!m.iter().any(|m| m.contains("yield")));
    let (_, deadline, _) = run_on("san-2010", "deadline", &sets, procs());
    let ysets = ["fs/ext3/barrier=1", "iosched/cfq/yield=1"];
    let (_, yielded, m) = run_on("san-2010", "cfq", &ysets, procs());
    // cfq_log_cfqq's prefix, as blkparse prints the message.
    assert!(
        m.iter().any(|m| m == "cfq1001S yielding queue to 192"),
        "{m:?}"
    );
    assert!(m.iter().any(|m| m == "cfq1001S yield to 192: expire"));
    let took = |t: &[(u64, u64)]| t[1].1 - t[1].0;
    assert!(took(&vanilla) > 8_000_000, "vanilla {}", took(&vanilla));
    assert!(took(&yielded) < 4_000_000, "yield {}", took(&yielded));
    assert_eq!(took(&yielded), took(&deadline));
}

/// ext4 on jbd2 as 2.6.34 runs it (`fs/jbd2/commit.c`
/// `jbd2_journal_commit_transaction`, `fs/ext4/fsync.c` `ext4_sync_file`): the
/// fsync's data as `WRITE_SYNC_PLUG`; the log's descriptor and metadata blocks
/// as plain `WRITE` (jbd2's `write_op` when no synchronous handle joined); the
/// commit block as `WRITE_SYNC_PLUG` with the barrier; the metadata of the
/// create (inode bitmap, inode table, group descriptor, directory) and of the
/// allocation at writeback (block bitmap) in the log.
#[test]
fn ext4_fsync_on_2_6_34_logs_the_create_and_the_allocation_then_a_barrier_commit() {
    let ext4 = &["fs/ext4/journal=1"];
    let (qs, _, _) = run_on_fs("ext4", ext4, vec![writer("f", 1000, 64, true, true)]);
    let data: Vec<&Q> = qs.iter().filter(|q| q.2 == 1000).collect();
    let journal: Vec<&Q> = qs.iter().filter(|q| q.2 == KJOURNALD).collect();
    assert_eq!(data.len(), 16);
    assert!(data.iter().all(|q| q.3.contains(ReqFlags::SYNC)));
    let (commit, log) = journal.split_last().unwrap();
    // Descriptor + block bitmap, inode bitmap, group descriptor, inode table,
    // root directory block.
    assert_eq!(log.len(), 6, "{journal:?}");
    assert!(log.iter().all(|q| q.3 == ReqFlags::WRITE), "{log:?}");
    assert!(
        commit.3.contains(ReqFlags::FLUSH | ReqFlags::SYNC),
        "{commit:?}"
    );
    assert!(!commit.3.contains(ReqFlags::UNPLUG), "WRITE_SYNC_PLUG");
}

/// A write pass and then a rewrite of the same file, each ending in fsync,
/// within the same second: ext4's nanosecond timestamps dirty the inode again
/// on the rewrite's `write()` a tick after the last (`file_update_time` →
/// `ext4_dirty_inode`), so the rewrite's fsync commits a transaction holding
/// the inode block; ext3's mtime in seconds has not changed, and its fsync
/// finds nothing to commit and only flushes the cache (`ext3_sync_file`).
#[test]
fn a_rewrite_commits_the_inode_on_ext4_and_only_flushes_on_ext3() {
    let passes = || {
        let mut rewrite = writer("f", 1001, 64, false, true);
        rewrite.stonewall = true;
        vec![writer("f", 1000, 64, true, true), rewrite]
    };
    let commits = |qs: &[Q]| {
        qs.iter()
            .filter(|q| q.2 == KJOURNALD && q.3.contains(ReqFlags::FLUSH))
            .count()
    };
    let (q4, _, _) = run_on_fs("ext4", &["fs/ext4/journal=1"], passes());
    assert_eq!(commits(&q4), 2, "{q4:?}");
    let (q3, _, _) = run_on_fs("ext3", &["fs/ext3/barrier=1"], passes());
    assert_eq!(commits(&q3), 1, "{q3:?}");
    let own_flush = q3
        .iter()
        .filter(|q| q.2 == 1001 && q.3.contains(ReqFlags::FLUSH));
    assert_eq!(own_flush.count(), 1, "{q3:?}");
}

/// `run_on` on sata-2010 with deadline and the file system replaced.
fn run_on_fs(
    fs: &str,
    sets: &[&str],
    procs: Vec<ProcSpec>,
) -> (Vec<Q>, Vec<(u64, u64)>, Vec<String>) {
    let mut m = machine::preset("sata-2010").unwrap();
    m.fs = match fs {
        "ext4" => machine::FsKind::Ext4,
        _ => machine::FsKind::Ext3,
    };
    run_machine(m, "deadline", sets, procs)
}

/// fio-rand-write.fio (fio's examples) on ext3: buffered random 4 KiB writes
/// to a new, sparse file. Each page's handle (`ext3_writepage_trans_blocks`
/// credits) journals only its own branch; the run once ended with "journal
/// handle dirtied more blocks than its credits" when the allocator filled
/// the hole below the page. The fsync's commit logs few metadata blocks:
/// the pages' branches, bitmaps, descriptors and the inode, not the hole's.
#[test]
fn random_writes_to_a_new_file_fit_their_handles_credits() {
    let mut w = writer("sparse", 7000, 64 << 10, true, true);
    w.pattern = iostack_sim::workload::Pattern::Random { norandommap: false };
    w.io_size = 200 * 4096;
    let qs = run(&[], vec![w]);
    let data: u64 = qs.iter().filter(|q| q.2 == 7000).map(|q| q.1 as u64).sum();
    let log: u64 = qs
        .iter()
        .filter(|q| q.2 == KJOURNALD)
        .map(|q| q.1 as u64)
        .sum();
    assert!(data >= 200 * 8, "the 200 pages are written: {data} sectors");
    // 200 pages in 64 MiB: at most an IND per page (16 IND blocks span the
    // file), a DIND, bitmaps and descriptors of a few groups, the inode, the
    // descriptor and commit blocks: far from the ~16,000 blocks of the hole.
    assert!(log < 64 * 8, "log blocks written: {} sectors", log);
}
