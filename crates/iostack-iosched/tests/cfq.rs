//! CFQ driven through the real request queue and a fixed-latency device, with
//! closed-loop processes (one request outstanding, a fixed think time between a
//! completion and the next submission), checked against the kernel's mechanisms.

mod common;

use common::{Proc, Sim, MS};
use iostack_core::{Profile, ReqFlags, Tunables};

fn sim(profile: Profile, sets: &[&str], depth: u32, rotational: bool, procs: Vec<Proc>) -> Sim {
    common::sim("cfq", profile, sets, depth, rotational, procs)
}

#[test]
fn two_sequential_readers_alternate_whole_slices() {
    for (profile, ver) in [
        (Profile::V2_6_32, "2.6.32"),
        (Profile::V2_6_33, "2.6.33"),
        (Profile::V2_6_37, "2.6.37"),
    ] {
        let mut s = sim(
            profile,
            &[],
            1,
            true,
            vec![Proc::reader(100, 1_000_000), Proc::reader(200, 100_000_000)],
        );
        s.run();
        let runs = s.runs();
        // Each request takes 1 ms plus 0.1 ms of think time, so a 100 ms slice
        // holds about 90 requests; the first run starts before the slice does.
        // 200 requests each: four whole slices, then the two remainders.
        assert!(runs.len() >= 4, "{ver}: {runs:?}");
        for &(_, n) in &runs[..4] {
            assert!((60..=110).contains(&n), "{ver}: run of {n}: {runs:?}");
        }
        let m = s.msgs();
        assert!(m.iter().any(|x| x.contains("set_active")), "{ver}");
        assert!(m.iter().any(|x| x.contains("slice expired")), "{ver}");
        assert!(
            m.iter().any(|x| x.contains("set_slice=100")),
            "{ver}: {m:?}"
        );
        assert!(m.iter().any(|x| x.contains("dispatched a request")));
    }
}

#[test]
fn lone_sequential_reader_idles_with_arm_idle() {
    let mut p = Proc::reader(100, 1_000_000);
    p.count = 20;
    p.think_ns = 2 * MS; // below slice_idle = 8 ms
    let mut s = sim(Profile::V2_6_32, &[], 1, true, vec![p]);
    s.run();
    let m = s.msgs();
    assert!(m.iter().any(|x| x == "cfq100 arm_idle: 8"), "{m:?}");
    // Idling worked: the queue stays active, one set_active for the whole run.
    assert_eq!(m.iter().filter(|x| x.contains("set_active")).count(), 1);
}

#[test]
fn think_time_above_slice_idle_closes_the_idle_window() {
    let mut p = Proc::reader(100, 1_000_000);
    p.count = 20;
    p.think_ns = 20 * MS; // above slice_idle: idle window off after 3 samples
    let mut s = sim(Profile::V2_6_32, &[], 1, true, vec![p]);
    s.run();
    let m = s.msgs();
    assert!(m.iter().any(|x| x == "cfq100 idle=0"), "{m:?}");
    let arms = m.iter().filter(|x| x.contains("arm_idle")).count();
    assert!(arms <= 3, "idled {arms} times with a closed window: {m:?}");
}

/// Two readers plus a sequential sync writer with one request outstanding. With
/// `REQ_NOIDLE` (WRITE_SYNC_PLUG, the late-2009 O_DIRECT flags) no idle timer is
/// armed after its completion, so it loses the disk after every request (2.11);
/// without NOIDLE (WRITE_ODIRECT_PLUG) it idles and keeps whole slices.
fn writer_runs(flags: ReqFlags, profile: Profile) -> (Vec<usize>, Vec<String>) {
    let mut w = Proc::reader(300, 200_000_000);
    w.flags = flags;
    w.count = 60;
    let mut r1 = Proc::reader(100, 1_000_000);
    let mut r2 = Proc::reader(200, 100_000_000);
    r1.count = 600;
    r2.count = 600;
    let mut s = sim(profile, &[], 1, true, vec![r1, r2, w]);
    s.run();
    let runs = s.runs();
    // Writer runs while both readers still have work.
    let mut wr = Vec::new();
    let mut seen = [0usize; 3];
    for (p, n) in runs {
        seen[p] += n;
        if seen[0] >= 590 || seen[1] >= 590 {
            break;
        }
        if p == 2 {
            wr.push(n);
        }
    }
    (wr, s.msgs())
}

#[test]
fn noidle_sync_writes_lose_the_disk_after_each_request_2632() {
    let (noidle, m) = writer_runs(
        ReqFlags::WRITE | ReqFlags::SYNC | ReqFlags::NOIDLE,
        Profile::V2_6_32,
    );
    assert!(noidle.len() >= 3, "{noidle:?}");
    assert!(noidle.iter().all(|&n| n == 1), "{noidle:?}");
    assert!(!m.iter().any(|x| x.starts_with("cfq300 arm_idle")));
    let (plain, _) = writer_runs(ReqFlags::WRITE | ReqFlags::SYNC, Profile::V2_6_32);
    assert!(plain.iter().any(|&n| n >= 30), "{plain:?}");
}

#[test]
fn noidle_writer_in_2637_moves_to_the_noidle_tree_and_idles_at_its_end() {
    // 2.6.37: the NOIDLE next request clears the idle window (idle=0), the queue
    // is the only one of the SYNC_NOIDLE tree, and cfq_should_idle idles there.
    let (runs, m) = writer_runs(
        ReqFlags::WRITE | ReqFlags::SYNC | ReqFlags::NOIDLE,
        Profile::V2_6_37,
    );
    assert!(m.iter().any(|x| x == "cfq300S idle=0"), "no idle=0");
    assert!(m.iter().any(|x| x.starts_with("cfq300S arm_idle")));
    assert!(runs.iter().any(|&n| n >= 10), "{runs:?}");
}

#[test]
fn async_writer_is_throttled_behind_a_sync_reader() {
    // An async writer queueing deep (depth 32) against a sync reader: it may not
    // dispatch while sync I/O is in flight, low_latency limits its depth, and it is
    // expired after slice_async_rq-based request caps.
    let mut w = Proc::reader(300, 200_000_000);
    w.flags = ReqFlags::WRITE;
    w.depth = 32;
    w.count = 400;
    w.think_ns = 0;
    let mut r = Proc::reader(100, 1_000_000);
    r.count = 400;
    let mut s = sim(Profile::V2_6_32, &[], 4, true, vec![r, w]);
    s.run();
    let log = s.log.lock().unwrap();
    // While the reader runs, writes are a small share of the disk.
    let reads_done_at = log
        .issues
        .iter()
        .filter(|x| !x.2)
        .map(|x| x.0)
        .nth(380)
        .unwrap();
    let writes_before = log
        .issues
        .iter()
        .filter(|x| x.2 && x.0 < reads_done_at)
        .count();
    assert!(
        writes_before < 100,
        "{writes_before} writes while 380 reads ran"
    );
    // A write run (async slice) never exceeds cfq_prio_to_maxrq = 16 for BE/4.
    drop(log);
    let runs = s.runs();
    let reader_active = runs.iter().position(|r| r.0 == 0 && r.1 > 50).unwrap_or(0);
    for &(p, n) in &runs[reader_active..runs.len() - 2] {
        if p == 1 {
            assert!(n <= 16, "async run of {n}: {runs:?}");
        }
    }
}

#[test]
fn sync_request_preempts_an_async_slice() {
    // The async writer owns the disk; the reader's first request preempts it.
    let mut w = Proc::reader(300, 200_000_000);
    w.flags = ReqFlags::WRITE;
    w.depth = 8;
    w.count = 100;
    w.think_ns = 0;
    let mut r = Proc::reader(100, 1_000_000);
    r.count = 5;
    r.start_ns = 20 * MS;
    let mut s = sim(
        Profile::V2_6_32,
        &["iosched/cfq/low_latency=0"],
        1,
        true,
        vec![w, r],
    );
    s.run();
    let m = s.msgs();
    let i = m
        .iter()
        .position(|x| x == "cfq100 preempt")
        .expect("preempt");
    assert!(
        m[i + 1].starts_with("cfq300 slice expired t=1"),
        "{:?}",
        &m[i..i + 3]
    );
    // The reader's first request is issued next.
    let log = s.log.lock().unwrap();
    let first_read = log.issues.iter().position(|x| !x.2).unwrap();
    let t = log.issues[first_read].0;
    assert!((20 * MS..23 * MS).contains(&t), "read issued at {t}");
}

#[test]
fn rt_request_preempts_best_effort_in_2633() {
    let mut be = Proc::reader(100, 1_000_000);
    be.count = 100;
    let mut rt = Proc::reader(200, 100_000_000);
    rt.ioprio = (1, 4);
    rt.count = 3;
    rt.start_ns = 10 * MS;
    let mut s = sim(Profile::V2_6_33, &[], 1, true, vec![be, rt]);
    s.run();
    let m = s.msgs();
    assert!(m.iter().any(|x| x == "cfq200S preempt"), "{m:?}");
}

#[test]
fn no_idling_on_a_tagged_ssd() {
    // Non-rotational with hw_tag (unknown = tagged from 2.6.33): never arm_idle.
    let mut p = Proc::reader(100, 1_000_000);
    p.count = 30;
    let mut s = sim(Profile::V2_6_33, &[], 32, false, vec![p]);
    s.run();
    assert!(!s.msgs().iter().any(|x| x.contains("arm_idle")));
    // The same on a rotational disk idles.
    let mut p = Proc::reader(100, 1_000_000);
    p.count = 30;
    let mut s = sim(Profile::V2_6_33, &[], 32, true, vec![p]);
    s.run();
    assert!(s.msgs().iter().any(|x| x.contains("arm_idle")));
}

#[test]
fn version_defaults_follow_the_profile_and_tunables_convert_to_jiffies() {
    let t = Tunables::new(
        Profile::V2_6_37,
        &[iostack_block::TUNABLES, iostack_iosched::cfq::TUNABLES],
    );
    assert_eq!(t.get_enum("iosched/cfq/version"), "2.6.37");
    assert_eq!(t.get_u64("iosched/cfq/quantum"), 8);
    let mut t = Tunables::new(
        Profile::V2_6_32,
        &[iostack_block::TUNABLES, iostack_iosched::cfq::TUNABLES],
    );
    assert_eq!(t.get_enum("iosched/cfq/version"), "2.6.32");
    t.set_str("kernel/hz=250").unwrap();
    let c = iostack_iosched::cfq::CfqConfig::from_tunables(&t);
    assert_eq!(c.fifo_expire, [62, 31]); // HZ/4, HZ/8
    assert_eq!(c.slice, [10, 25]);
    assert_eq!(c.slice_idle, 2);
    t.set_str("iosched/cfq/fifo_expire_sync=125").unwrap();
    t.set_str("iosched/cfq/slice_idle=3").unwrap();
    let c = iostack_iosched::cfq::CfqConfig::from_tunables(&t);
    assert_eq!(c.slice_idle, 1); // msecs_to_jiffies(3) at HZ=250
    assert!(iostack_iosched::SCHEDULERS.iter().any(|s| s.name == "cfq"));
}

/// The blk_yield series' PATCH 1/4 (the sync-noidle workload's think time):
/// a lone process thinking 20 ms between requests (above slice_idle) loses its
/// idle window and is the only queue of the SYNC_NOIDLE tree. Vanilla 2.6.34
/// still idles on it at every completion (`cfq_should_idle`: the last queue
/// in its tree); with the series the tree's own think time, once sampled
/// (three requests on that tree), is big, and the idling stops.
#[test]
fn noidle_tree_think_time_stops_idling_on_its_last_queue_with_the_yield_series() {
    let arms = |sets: &[&str]| {
        let mut p = Proc::reader(100, 1_000_000);
        p.count = 20;
        p.think_ns = 20 * MS;
        let mut s = sim(Profile::V2_6_33, sets, 1, true, vec![p]);
        s.run();
        let m = s.msgs();
        assert!(m.iter().any(|x| x.ends_with("idle=0")), "{m:?}");
        m.iter().filter(|x| x.contains("arm_idle")).count()
    };
    let vanilla = arms(&[]);
    let patched = arms(&["iosched/cfq/yield=1"]);
    assert!(
        vanilla >= 18,
        "vanilla idles at every completion: {vanilla}"
    );
    // The first completions idle by the queue's own window, and the tree's
    // samples start once the queue is filed on the SYNC_NOIDLE tree.
    assert!(
        patched <= 6,
        "idled {patched} times with a big tree think time"
    );
}
