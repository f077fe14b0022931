//! Buffered I/O through the page cache: the readahead windows a sequential reader
//! sends to the block layer, the dirty limits a throttled writer lives under, and
//! the writeback order of a throttled dirtier and pdflush on one inode.

use iostack_core::{Action, Profile, ReqFlags, TraceEvent, TraceSink, Tunables};
use iostack_des::{Instant, Seed};
use iostack_sim::workload::{Engine, Pattern, ProcSpec, Target};
use iostack_sim::{machine, tunable_tables, IoEvent, IoObserver, SimConfig, Simulation};
use std::sync::Arc;
use std::sync::Mutex;

/// One queued bio: (time, sector, sectors, pid).
type QueuedBio = (Instant, u64, u32, u32);

/// Queued bios (Q) of one direction.
#[derive(Default)]
struct Queued {
    write: bool,
    seen: Arc<Mutex<Vec<QueuedBio>>>,
}

impl TraceSink for Queued {
    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Block(r) = ev {
            if r.action == Action::Queue && r.flags.contains(ReqFlags::WRITE) == self.write {
                self.seen
                    .lock()
                    .unwrap()
                    .push((r.time, r.sector, r.bytes / 512, r.pid));
            }
        }
    }
}

/// Bytes the reader has consumed, by time.
struct Progress(Arc<Mutex<Vec<(u64, u64)>>>);

impl IoObserver for Progress {
    fn io_done(&mut self, _p: usize, io: &IoEvent) {
        let mut v = self.0.lock().unwrap();
        let total = v.last().map(|x| x.1).unwrap_or(0) + io.bytes;
        v.push((io.at_ns, total));
    }
}

fn cfg(machine_text: &str, profile: Profile, sets: &[&str], procs: Vec<ProcSpec>) -> SimConfig {
    let m = machine::parse_file("test-machine", machine_text).unwrap();
    let mut t = Tunables::new(profile, &tunable_tables());
    for s in sets {
        t.set_str(s).unwrap();
    }
    SimConfig {
        scheduler: "noop".into(),
        machine: m,
        tunables: t,
        seed: Seed(7),
        procs,
        checks: true,
        until: None,
    }
}

fn reader(size: u64) -> ProcSpec {
    ProcSpec {
        direct: false,
        ..ProcSpec::direct_reader(
            "reader",
            "reader",
            Target::File {
                path: "/mnt/test/r".into(),
                size,
                goal: None,
            },
            size,
        )
    }
}

#[test]
fn sequential_reader_ramps_through_the_readahead_windows_one_window_ahead() {
    let c = cfg(
        "base = sata-2009\nfs = ext2\n",
        Profile::V2_6_32,
        &[],
        vec![reader(8 << 20)],
    );
    let mut sim = Simulation::new(c).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let prog = Arc::new(Mutex::new(Vec::new()));
    sim.attach(Box::new(Queued {
        write: false,
        seen: seen.clone(),
    }));
    sim.observe(Box::new(Progress(prog.clone())));
    let (r, _) = sim.run();
    assert!(r.procs[0].error.is_none());
    let q = seen.lock().unwrap();
    let first = q[0].1;
    // Windows of 4, 8, 16, 32 pages (ext2 puts its first indirect block after
    // data block 11, so the third window starts one block later on disk).
    let sizes: Vec<u32> = q.iter().take(5).map(|x| x.2).collect();
    assert_eq!(sizes, [32, 64, 128, 256, 256], "{q:?}");
    assert_eq!(q[1].1, first + 32);
    assert_eq!(q[2].1, first + 96 + 8);
    // Steady state: each 128 KiB window is queued when the reader has consumed
    // everything up to the start of the previous window, one window ahead.
    let prog = prog.lock().unwrap();
    let mut checked = 0;
    for (i, w) in q.iter().enumerate().skip(4) {
        if w.0 == q[i - 1].0 {
            // The second bio of a window split at an indirect-block boundary.
            continue;
        }
        let t = w.0.as_ns();
        let consumed = prog
            .iter()
            .take_while(|(at, _)| *at <= t)
            .last()
            .map(|x| x.1)
            .unwrap_or(0);
        // The window's first file byte, from its place after the previous ones.
        let file_off: u64 = q[..i].iter().map(|x| x.2 as u64 * 512).sum();
        let ahead = file_off - consumed;
        assert!(
            (128 << 10..=(128 << 10) + 4096).contains(&ahead),
            "window {i} queued {ahead} bytes ahead of the reader"
        );
        checked += 1;
    }
    assert!(checked > 50);
}

fn writer(size: u64, bs: u64) -> ProcSpec {
    ProcSpec {
        direct: false,
        read_pct: 0,
        bs: [bs, bs],
        fresh: true,
        end_fsync: true,
        pattern: Pattern::Sequential,
        engine: Engine::Sync,
        ..ProcSpec::direct_reader(
            "writer",
            "writer",
            Target::File {
                path: "/mnt/test/w".into(),
                size,
                goal: None,
            },
            size,
        )
    }
}

#[test]
fn dirty_limits_hold_and_throttled_writers_resume() {
    for (profile, sets) in [
        (Profile::V2_6_28, &[][..]),
        (Profile::V2_6_32, &[][..]),
        (Profile::V2_6_32, &["vm/throttle=io-less"][..]),
    ] {
        let c = cfg(
            "base = sata-2009\nfs = ext2\nmem_mb = 256\nmem_unavailable_mb = 32\n",
            profile,
            sets,
            vec![writer(96 << 20, 1 << 20)],
        );
        let (r, _) = Simulation::new(c).unwrap().run();
        let p = &r.procs[0];
        assert!(p.error.is_none(), "{:?}", p.error);
        // Every byte was written, and fsync left nothing dirty behind.
        assert_eq!(p.dirs[1].bytes, 96 << 20);
        assert!(r.vm.dirty_limit > 0 && r.vm.dirty_limit < (96 << 20) / 4096);
        // Dirty pages stay under the hard limit, give or take what one dirtier
        // may dirty between two checks (ratelimit_pages).
        assert!(
            r.vm.max_dirty <= r.vm.dirty_limit + r.vm.ratelimit,
            "{profile:?} {sets:?}: {:?}",
            r.vm
        );
        // The limit was reached: the writer was throttled and resumed.
        assert!(
            r.vm.max_dirty_writeback >= r.vm.background_limit,
            "{:?}",
            r.vm
        );
        assert_eq!(r.queue.bytes_queued, r.queue.bytes_completed);
    }
}

/// Places where the queued write stream does not continue where the previous
/// bio ended: each one is a seek the array has to make.
fn discontinuities(q: &[QueuedBio]) -> usize {
    q.windows(2)
        .filter(|w| w[1].1 != w[0].1 + w[0].2 as u64)
        .count()
}

#[test]
fn shared_writeback_index_makes_writeback_seeky_and_the_patch_walks_the_file_in_order() {
    // Seed 001 on its array, without the inode-table zeroing so that only the
    // file's writeback is traced: ext4 of the October 2008 patch queue, where a
    // partly mapped extent leaves its tail redirtied behind mapping->writeback_index.
    // With 2.6.27's write_cache_pages the throttled writer and pdflush both start
    // from that cursor and pass over those pages; with the seed's patch the writer
    // starts from page 0 each time and picks them up at once.
    let run = |sets: &[&str]| {
        let mut all = vec!["fs/ext4/lazy_itable_init=0"];
        all.extend_from_slice(sets);
        let c = cfg(
            "base = raid0-2008\nmem_mb = 1024\n",
            Profile::V2_6_28,
            &all,
            vec![writer(384 << 20, 1 << 20)],
        );
        let mut sim = Simulation::new(c).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        sim.attach(Box::new(Queued {
            write: true,
            seen: seen.clone(),
        }));
        let (r, _) = sim.run();
        assert!(r.procs[0].error.is_none(), "{:?}", r.procs[0].error);
        assert_eq!(r.queue.bytes_queued, r.queue.bytes_completed);
        let q = seen.lock().unwrap().clone();
        let extents = r.files[0].extent_count();
        // Both pdflush and the throttled writer wrote the file from the shared
        // cursor: pdflush while the queue was not yet write-congested, then the
        // writer (pdflush is non-blocking and bails on a congested queue, and
        // waits in lock_page on the pages of the writer's open extent).
        let pids: std::collections::BTreeSet<u32> = q.iter().map(|x| x.3).collect();
        let turns = q.windows(2).filter(|w| w[0].3 != w[1].3).count();
        assert_eq!(pids.len(), 2, "{pids:?}");
        assert!(turns >= 1, "{turns} turns between the writer and pdflush");
        println!("{sets:?}: {:?}", r.vm);
        (discontinuities(&q), extents, q.len(), r.vm)
    };
    let (old_seeks, old_extents, old_n, old_vm) = run(&[]);
    // pdflush started from the cursor the writer was working at and waited in
    // lock_page on the pages of the writer's open extent; and the 2008 ext4 left
    // pages redirtied behind the cursor.
    assert!(old_vm.lock_waits >= 1, "{old_vm:?}");
    assert!(old_vm.redirtied > 0, "{old_vm:?}");
    let (new_seeks, new_extents, new_n, _) = run(&["vm/writeback_index=flusher-only"]);
    let (fix_seeks, fix_extents, _, fix_vm) = run(&["fs/ext4/da_writeback_index=pages-written"]);
    assert_eq!(fix_vm.redirtied, 0, "the merged fix maps whole extents");
    println!(
        "shared cursor: {old_seeks} seeks in {old_n} bios, {old_extents} extents; \
         seed's patch: {new_seeks} seeks in {new_n} bios, {new_extents} extents; \
         merged ext4 fix: {fix_seeks} seeks, {fix_extents} extents"
    );
    assert!(
        old_seeks >= 5 * new_seeks.max(1),
        "{old_seeks} vs {new_seeks}"
    );
    assert!(
        old_extents >= 4 * new_extents,
        "{old_extents} vs {new_extents}"
    );
    // The merged ext4 change fixes the same fragmentation from the file system side.
    assert!(
        old_extents >= 4 * fix_extents,
        "{old_extents} vs {fix_extents}"
    );
}

#[test]
fn buffered_writes_cost_the_copy_in_system_time_and_direct_writes_the_page_pinning() {
    // 4 MiB in 4 KiB writes on the null disk, far below the dirty limits, so the
    // buffered writer never writes back itself and never sleeps: its system time
    // is one system call and one page copy per write. The O_DIRECT writer pins
    // one user page per write and sleeps once per write for its completion; a
    // one-page write is one bio, whose submission cost the model folds into the
    // sleep, so its system time is one system call and one pinned page per write.
    let (syscall, copy, pin) = (3_000u64, 5_000u64, 700u64);
    let machine = format!(
        "base = null\nmem_mb = 4096\ncpu_syscall_ns = {syscall}\ncpu_copy_page_ns = {copy}\n\
         cpu_page_ns = {pin}\n"
    );
    let n = 1024u64;
    let run = |direct: bool| {
        let mut w = writer(n * 4096, 4096);
        w.direct = direct;
        w.end_fsync = false;
        let c = cfg(&machine, Profile::V2_6_32, &[], vec![w]);
        let (r, _) = Simulation::new(c).unwrap().run();
        let p = r.procs[0].clone();
        assert!(p.error.is_none(), "{:?}", p.error);
        assert_eq!(p.dirs[1].bytes, n * 4096);
        p
    };
    let buffered = run(false);
    let direct = run(true);
    assert_eq!(buffered.sys_ns, n * (syscall + copy));
    assert_eq!(buffered.ctx, 0);
    assert_eq!(direct.sys_ns, n * (syscall + pin));
    assert_eq!(direct.ctx, n);
    assert!(buffered.sys_ns > direct.sys_ns);
}

/// Issued requests (D): (sector, sectors).
struct Issued(Arc<Mutex<Vec<(u64, u32)>>>);

impl TraceSink for Issued {
    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Block(r) = ev {
            if r.action == Action::Issue {
                self.0.lock().unwrap().push((r.sector, r.bytes / 512));
            }
        }
    }
}

#[test]
fn seek_count_and_writeback_split_agree_with_the_trace() {
    // Seed 001's streaming writer on its array, with and without ext4's inode-table
    // zeroing. The run's counters must agree with the blktrace event stream: the
    // seek count with seekwatcher's rule applied to the D events, and the pages
    // written back (by pdflush, by the throttled writer, by the zeroing thread, of
    // the block device) with the pages of the queued writes.
    for lazy in [0, 1] {
        let set = format!("fs/ext4/lazy_itable_init={lazy}");
        let c = cfg(
            "base = raid0-2008\nmem_mb = 1024\n",
            Profile::V2_6_28,
            &[&set],
            vec![writer(256 << 20, 1 << 20)],
        );
        let mut sim = Simulation::new(c).unwrap();
        let queued = Arc::new(Mutex::new(Vec::new()));
        let issued = Arc::new(Mutex::new(Vec::new()));
        sim.attach(Box::new(Queued {
            write: true,
            seen: queued.clone(),
        }));
        sim.attach(Box::new(Issued(issued.clone())));
        let (r, _) = sim.run();
        assert!(r.procs[0].error.is_none(), "{:?}", r.procs[0].error);
        let d = issued.lock().unwrap();
        let seeks = d
            .windows(2)
            .filter(|w| (w[0].0 + w[0].1 as u64).abs_diff(w[1].0) > 128)
            .count() as u64;
        assert_eq!(r.queue.dispatch_seeks, seeks, "lazy_itable_init={lazy}");
        let q = queued.lock().unwrap();
        let pages = |f: &dyn Fn(&QueuedBio) -> bool| -> u64 {
            q.iter().filter(|x| f(x)).map(|x| x.2 as u64).sum::<u64>() / 8
        };
        if lazy == 0 {
            // Every block of the file's extent map was queued for writing once:
            // none left behind by the final fsync, none written twice.
            let mut written = std::collections::BTreeMap::new();
            for x in q.iter() {
                for s in (x.1..x.1 + x.2 as u64).step_by(8) {
                    *written.entry(s / 8).or_insert(0u32) += 1;
                }
            }
            let f = &r.files[0];
            let mapped: u64 = f.extents.iter().map(|e| e.2).sum();
            assert_eq!(
                mapped,
                256 << 8,
                "the file is fully mapped: {:?}",
                f.extents
            );
            for &(l, p, n) in &f.extents {
                for i in 0..n {
                    let times = written.get(&(p + i)).copied().unwrap_or(0);
                    assert_eq!(
                        times,
                        1,
                        "page {} (block {}) written {times} times",
                        l + i,
                        p + i
                    );
                }
            }
        }
        let wb = r.vm.wb_pages;
        println!(
            "lazy_itable_init={lazy}: {seeks} seeks in {} requests, {wb:?}",
            d.len()
        );
        assert_eq!(
            wb.flusher + wb.dirtier + wb.kthread + wb.bdev,
            pages(&|_| true),
            "every queued write is a written-back page, counted once"
        );
        if lazy == 0 {
            let writer = r.procs[0].pid;
            assert_eq!((wb.kthread, wb.bdev), (0, 0));
            assert_eq!(wb.dirtier, pages(&|x| x.3 == writer));
            assert_eq!(wb.flusher, pages(&|x| x.3 != writer));
            assert_eq!(wb.dirtier + wb.flusher, 256 << 8, "the file, once");
        } else {
            assert!(wb.bdev > 0, "the zeroing wrote inode tables: {wb:?}");
            assert!(seeks > 0);
        }
    }
}
