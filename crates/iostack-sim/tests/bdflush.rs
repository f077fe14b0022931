//! 2.4's buffer flushing on seed 004's machine (`fs/buffer.c` of 2.4.4): a
//! buffered writer's dirty buffers are written by bdflush once they pass
//! `nfract` of buffer memory, by the writer itself once they pass
//! `nfract_sync`, and otherwise only by kupdated, every `interval`, once they
//! are `age_buffer` old. The writes are told apart by the pid the trace
//! charges them to (bdflush 6, kupdated 7, the writer its own).

use iostack_core::{Action, Profile, ReqFlags, TraceEvent, TraceSink, Tunables};
use iostack_des::{Duration, Instant, Seed};
use iostack_sim::workload::{Engine, Pattern, ProcSpec, Target, ThinkTime};
use iostack_sim::{machine, tunable_tables, SimConfig, Simulation};
use std::sync::{Arc, Mutex};

const BDFLUSH: u32 = 6;
const KUPDATED: u32 = 7;
const WRITER: u32 = 4242;
/// ide-2001: 128 MiB less 16 MiB of kernel, in pages (nr_free_buffer_pages).
const BUFFER_PAGES: u64 = (112 << 20) / 4096;

/// Queued writes: (pid, time, sectors).
type Seen = Arc<Mutex<Vec<(u32, Instant, u32)>>>;

struct Queued(Seen);

impl TraceSink for Queued {
    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Block(r) = ev {
            if r.action == Action::Queue && r.flags.contains(ReqFlags::WRITE) {
                self.0.lock().unwrap().push((r.pid, r.time, r.bytes / 512));
            }
        }
    }
}

/// A buffered writer of `pages` pages in 64 KiB write()s, with no fsync, so
/// that every write the disk sees was sent by balance_dirty, bdflush or
/// kupdated; it then thinks for `think` (kupdated runs while a process is
/// alive).
fn writer(pages: u64, think: Duration) -> ProcSpec {
    let bs = 64 << 10;
    ProcSpec {
        read_pct: 0,
        bs: [bs, bs],
        bs_range: [(bs, bs), (bs, bs)],
        direct: false,
        end_fsync: false,
        fresh: true,
        pid: Some(WRITER),
        pattern: Pattern::Sequential,
        engine: Engine::Sync,
        think: ThinkTime {
            think,
            blocks: pages / 16,
            ..Default::default()
        },
        ..ProcSpec::direct_reader(
            "w",
            "w",
            Target::File {
                path: "/mnt/test/f".into(),
                size: 0,
                goal: None,
            },
            pages * 4096,
        )
    }
}

/// Run the writer on 2.4 with these bdflush settings; the queued writes, and
/// the copy cost of a page.
fn run(sets: &[&str], pages: u64, think: Duration) -> (Vec<(u32, Instant, u32)>, u64) {
    let m = machine::preset("ide-2001").unwrap();
    let copy = m.cpu_copy_page_ns;
    let mut t = Tunables::new(Profile::V2_4, &tunable_tables());
    for s in sets {
        t.set_str(s).unwrap();
    }
    let c = SimConfig {
        scheduler: "elevator_linus".into(),
        machine: m,
        tunables: t,
        seed: Seed(4),
        procs: vec![writer(pages, think)],
        checks: true,
        until: None,
    };
    let mut sim = Simulation::new(c).unwrap();
    let seen: Seen = Default::default();
    sim.attach(Box::new(Queued(seen.clone())));
    let (r, _) = sim.run();
    assert!(r.procs[0].error.is_none(), "{:?}", r.procs[0].error);
    let v = seen.lock().unwrap().clone();
    (v, copy)
}

fn by(seen: &[(u32, Instant, u32)], pid: u32) -> Vec<(Instant, u32)> {
    seen.iter()
        .filter(|s| s.0 == pid)
        .map(|s| (s.1, s.2))
        .collect()
}

/// The first count of dirty pages over `pct` percent of buffer memory.
fn over(pct: u64) -> u64 {
    BUFFER_PAGES * pct / 100 + 1
}

#[test]
fn bdflush_wakes_only_over_nfract() {
    let sets = ["vm/bdflush/nfract=1", "vm/bdflush/nfract_sync=100"];
    // Under nfract: nothing but kupdated writes.
    let (seen, _) = run(&sets, over(1) - 1, Duration(0));
    assert!(by(&seen, BDFLUSH).is_empty(), "{seen:?}");
    assert!(by(&seen, WRITER).is_empty(), "{seen:?}");
    // One page more: bdflush wakes, once that page has been copied.
    let (seen, copy) = run(&sets, over(1) + 64, Duration(0));
    let bd = by(&seen, BDFLUSH);
    assert!(!bd.is_empty(), "{seen:?}");
    // A writer's step dirties its pages (at most 32) when it starts and pays
    // their copying after.
    assert!(
        bd[0].0 >= Instant((over(1) - 32) * copy),
        "bdflush wrote at {:?}, before page {} was dirtied",
        bd[0].0,
        over(1)
    );
    // Each buffer is its own 8-sector bio (ll_rw_block of one buffer head).
    assert!(bd.iter().all(|&(_, s)| s == 8), "{bd:?}");
    assert!(by(&seen, WRITER).is_empty(), "under nfract_sync: {seen:?}");
}

#[test]
fn the_writer_flushes_ndirty_buffers_itself_over_nfract_sync() {
    // nfract_sync at nfract: the writer that dirties the buffer over it runs
    // flush_dirty_buffers(0) itself, ndirty (64) of the oldest buffers.
    let sets = ["vm/bdflush/nfract=1", "vm/bdflush/nfract_sync=1"];
    let (seen, _) = run(&sets, over(1) - 1, Duration(0));
    assert!(by(&seen, WRITER).is_empty(), "{seen:?}");
    let (seen, copy) = run(&sets, over(1) + 16, Duration(0));
    let w = by(&seen, WRITER);
    assert!(!w.is_empty(), "{seen:?}");
    assert!(w[0].0 >= Instant((over(1) - 32) * copy), "{:?}", w[0]);
    let first: Vec<_> = w.iter().filter(|s| s.0 == w[0].0).collect();
    assert_eq!(first.len(), 64, "{w:?}");
}

#[test]
fn the_writer_flushes_once_bdflush_cannot_keep_up() {
    // bdflush keeps the dirty buffers at nfract until the queue's 64 write
    // requests are taken (each of up to 31 buffers merged) and it sleeps in
    // __get_request_wait; the dirty buffers then pass nfract_sync and the
    // writer writes buffers itself.
    let sets = ["vm/bdflush/nfract=1", "vm/bdflush/nfract_sync=2"];
    let (seen, _) = run(&sets, 6144, Duration(0));
    let (bd, w) = (by(&seen, BDFLUSH), by(&seen, WRITER));
    assert!(!bd.is_empty() && !w.is_empty(), "{seen:?}");
    assert!(bd[0].0 < w[0].0, "bdflush first: {:?} {:?}", bd[0], w[0]);
}

#[test]
fn kupdated_writes_buffers_older_than_age_buffer_every_interval() {
    // 1 s of age, a wakeup every 0.5 s; bdflush never wakes.
    let sets = ["vm/bdflush/age_buffer=100", "vm/bdflush/interval=50"];
    let (seen, _) = run(&sets, 256, Duration(2_000_000_000));
    assert!(by(&seen, BDFLUSH).is_empty(), "{seen:?}");
    assert!(by(&seen, WRITER).is_empty(), "{seen:?}");
    let k = by(&seen, KUPDATED);
    let pages: u64 = k.iter().map(|&(_, s)| s as u64 / 8).sum();
    // The 256 data pages, ext2's first indirect block (allocated at page
    // 12's prepare_write, a dirty buffer on the same list), the superblock's,
    // group descriptor's and block bitmap's buffers ext2_new_block dirtied,
    // and the inode-table block kupdate's sync_inodes dirtied.
    assert_eq!(
        pages,
        256 + 1 + 3 + 1,
        "every buffer written once, by kupdated"
    );
    // Dirtied in the first ~10 ms: nothing is written before it is 1 s old,
    // and what the wakeup near 1.0 s finds too young waits for the next one,
    // half a second later.
    let mut passes: Vec<Instant> = k.iter().map(|&(t, _)| t).collect();
    passes.dedup();
    assert!(passes[0] >= Instant(1_000_000_000), "{passes:?}");
    assert!(passes[0] < Instant(1_100_000_000), "{passes:?}");
    assert_eq!(passes.len(), 2, "{passes:?}");
    let gap = passes[1].0 - passes[0].0;
    assert!((500_000_000..600_000_000).contains(&gap), "{passes:?}");
}
