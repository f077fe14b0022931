//! The anticipatory scheduler (2.6.32 `as-iosched.c`) driven through the real
//! request queue and a fixed-latency rotational device, with closed-loop
//! processes (a fixed number of requests outstanding, a think time between a
//! completion and the next submission), checked against AS's mechanisms and
//! compared with deadline.

mod common;

use common::{Proc, Sim, MS};
use iostack_core::{Profile, ReqFlags, Tunables};

/// 2.6.32 at HZ=1000, depth 1, rotational.
fn sim(sched: &str, sets: &[&str], procs: Vec<Proc>) -> Sim {
    let mut all = vec!["kernel/hz=1000"];
    all.extend_from_slice(sets);
    common::sim(sched, Profile::V2_6_32, &all, 1, true, procs)
}

/// Issue times (ms) of the requests of process `i`.
fn issue_ms(s: &Sim, i: usize) -> Vec<u64> {
    let base = s.procs[i].base;
    let hi = s.procs.iter().map(|p| p.base).filter(|&b| b > base).min();
    s.log
        .lock()
        .unwrap()
        .issues
        .iter()
        .filter(|&&(_, sec, _)| sec >= base && hi.is_none_or(|h| sec < h))
        .map(|&(t, _, _)| t / MS)
        .collect()
}

#[test]
fn two_dependent_readers_get_runs_under_as_but_alternate_under_deadline() {
    let procs = || {
        let mut a = Proc::reader(100, 1_000_000);
        let mut b = Proc::reader(200, 100_000_000);
        a.count = 150;
        b.count = 150;
        vec![a, b]
    };
    let mut dl = sim("deadline", &[], procs());
    dl.run();
    let dl_runs = dl.runs();
    // Deadline serves whichever request is queued: request by request.
    assert!(dl_runs.len() >= 250, "deadline: {dl_runs:?}");
    assert!(
        dl_runs.iter().all(|&(_, n)| n <= 2),
        "deadline: {dl_runs:?}"
    );

    let mut s = sim("anticipatory", &[], procs());
    s.run();
    let runs = s.runs();
    // AS waits for the process whose read just completed; the other one is
    // served when its FIFO deadline (read_expire = 125 ms, checked at most once
    // per read_expire) has passed: runs of about 100-230 requests of 1.1 ms.
    assert!(runs.len() <= 6, "as: {runs:?}");
    assert!(runs[0].1 >= 80, "as: {runs:?}");
    let m = s.msgs();
    assert!(
        m.iter().any(|x| x.starts_with("as antic_waitnext pid=")),
        "{m:?}"
    );
    assert!(m.iter().any(|x| x == "as antic_stop"), "{m:?}");
    // The anticipated process always came back within antic_expire, except
    // after the last request of each process.
    let timeouts = m
        .iter()
        .filter(|x| x.starts_with("as antic_timeout"))
        .count();
    assert!(timeouts <= 2, "{m:?}");
}

#[test]
fn long_thinker_is_not_anticipated() {
    let run = |think_ns: u64| {
        let mut a = Proc::reader(100, 1_000_000);
        a.count = 20;
        a.think_ns = think_ns;
        let mut b = Proc::reader(200, 100_000_000);
        b.count = 2000;
        let mut s = sim("anticipatory", &[], vec![a, b]);
        s.run();
        let m = s.msgs();
        let timeouts = m
            .iter()
            .filter(|x| *x == "as antic_timeout pid=100")
            .count();
        let waits = m
            .iter()
            .filter(|x| *x == "as antic_waitnext pid=100")
            .count();
        (timeouts, waits, m)
    };
    // 15 ms of think time, above antic_expire = 6 jiffies at HZ=1000: without
    // history the first completion is anticipated and the timer expires; once
    // ttime_mean (about 15 jiffies) exceeds antic_expire,
    // as_can_break_anticipation says no and B is served at once.
    let (timeouts, waits, m) = run(15 * MS);
    assert!((1..=2).contains(&timeouts), "{m:?}");
    assert!(waits <= 3, "{m:?}");
    // 2 ms of think time: A is anticipated and comes back every time.
    let (timeouts, waits, m) = run(2 * MS);
    assert!(timeouts <= 1, "{m:?}");
    assert!(waits >= 15, "{waits}: {m:?}");
}

#[test]
fn antic_expire_zero_disables_anticipation() {
    let mut a = Proc::reader(100, 1_000_000);
    let mut b = Proc::reader(200, 100_000_000);
    a.count = 60;
    b.count = 60;
    let mut s = sim(
        "anticipatory",
        &["iosched/anticipatory/antic_expire=0"],
        vec![a, b],
    );
    s.run();
    assert!(!s.msgs().iter().any(|x| x.contains("antic_wait")));
    assert!(s.runs().len() >= 100, "{:?}", s.runs());
}

#[test]
fn read_and_write_batches_alternate_and_writes_are_not_starved() {
    let mut r = Proc::reader(100, 1_000_000);
    r.count = 1500;
    let mut w = Proc::reader(300, 200_000_000);
    w.flags = ReqFlags::WRITE;
    w.depth = 32;
    w.count = 400;
    w.think_ns = 0;
    let mut s = sim("anticipatory", &[], vec![r, w]);
    s.run();
    let writes = issue_ms(&s, 1);
    // The first batch is a read batch (read_batch_expire = 500 ms); the write
    // waits no longer than write_expire (250 ms) plus that batch.
    assert!(
        writes[0] <= 250 + 500 + 10,
        "first write at {} ms",
        writes[0]
    );
    // Batches alternate: several read→write and write→read switches.
    let mut switches = 0;
    let issues = s.log.lock().unwrap().issues.clone();
    for w in issues.windows(2) {
        if w[0].2 != w[1].2 {
            switches += 1;
        }
    }
    assert!(switches >= 4, "{switches} switches");
    let m = s.msgs();
    assert!(m.iter().any(|x| x == "as batch async"), "{m:?}");
    assert!(m.iter().any(|x| x == "as batch sync"), "{m:?}");
    // No write waits for longer than write_expire plus a read batch and the
    // FIFO check interval.
    let mut prev = 0;
    for &t in &writes {
        assert!(t - prev <= 250 + 500 + 250, "write gap {prev}..{t} ms");
        prev = t;
    }
}

#[test]
fn expired_read_breaks_into_an_anticipated_stream() {
    for (sets, lo, hi) in [
        (&[][..], 120, 255),
        (&["iosched/anticipatory/read_expire=40"][..], 35, 85),
    ] {
        let mut a = Proc::reader(100, 1_000_000);
        a.count = 400;
        let mut b = Proc::reader(200, 100_000_000);
        b.count = 1;
        b.start_ns = 5 * MS;
        let mut s = sim("anticipatory", sets, vec![a, b]);
        s.run();
        // B's lone read is far away, so it does not break the anticipation of
        // A; it is served once its FIFO time has passed (as_fifo_expired, which
        // itself only looks once per read_expire).
        let t = issue_ms(&s, 1)[0];
        assert!((lo..=hi).contains(&t), "{sets:?}: B issued at {t} ms");
    }
}

#[test]
fn defaults_are_the_kernel_jiffy_values() {
    for (hz, antic, read, write, rb, wb) in [
        (1000, 6, 125, 250, 500, 125),
        (250, 1, 31, 62, 125, 31),
        (100, 1, 12, 25, 50, 12),
    ] {
        let mut t = Tunables::new(
            Profile::V2_6_32,
            &[
                iostack_block::TUNABLES,
                iostack_iosched::anticipatory::TUNABLES,
            ],
        );
        t.set_str(&format!("kernel/hz={hz}")).unwrap();
        let c = iostack_iosched::anticipatory::AsConfig::from_tunables(&t);
        assert_eq!(c.antic_expire, antic, "HZ={hz}");
        assert_eq!(c.fifo_expire, [write, read], "HZ={hz}");
        assert_eq!(c.batch_expire, [wb, rb], "HZ={hz}");
        // A value written through sysfs goes through msecs_to_jiffies.
        t.set_str("iosched/anticipatory/antic_expire=10").unwrap();
        let c = iostack_iosched::anticipatory::AsConfig::from_tunables(&t);
        assert_eq!(c.antic_expire, (10 * hz as u64).div_ceil(1000));
    }
}
