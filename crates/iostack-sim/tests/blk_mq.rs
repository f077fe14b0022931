//! blk-mq (the 6.x profile) end to end: the trace points each path emits, tag
//! exhaustion and its sleepers, the scheduler's merges, and the trace checker
//! over every case.

use iostack_core::{Action, Profile, TraceEvent, TraceRecord, TraceSink, Tunables};
use iostack_des::Seed;
use iostack_sim::check::Checker;
use iostack_sim::stats::RunResult;
use iostack_sim::{machine, tunable_tables, SimConfig, Simulation};
use std::sync::{Arc, Mutex};

type Log = Arc<Mutex<Vec<TraceRecord>>>;

struct Collect(Log);

impl TraceSink for Collect {
    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Block(r) = ev {
            self.0.lock().unwrap().push(*r);
        }
    }
}

/// Run a fio job on the 6.x profile with the trace checker attached.
fn run(machine_name: &str, sched: &str, job: &str, sets: &[&str]) -> (RunResult, Vec<TraceRecord>) {
    let mut m = machine::preset("null").unwrap();
    if machine_name == "slow" {
        // The null device at 50 us a command and 32 tags, so that queues build.
        if let iostack_device::DeviceSpec::Fixed(p) = &mut m.device {
            p.overhead_ns = 50_000;
            p.queue_depth = 32;
            p.channels = 32;
        }
    }
    let procs = iostack_sim::frontend::fio_procs_from_text("j.fio", job, &m)
        .unwrap()
        .procs;
    let mut tunables = Tunables::new(Profile::V6, &tunable_tables());
    for s in sets {
        tunables.set_str(s).unwrap();
    }
    let mut sim = Simulation::new(SimConfig {
        scheduler: sched.into(),
        machine: m,
        tunables,
        seed: Seed(1),
        procs,
        checks: true,
        until: None,
    })
    .unwrap();
    let log = Log::default();
    sim.attach(Box::new(Collect(log.clone())));
    sim.attach(Box::new(Checker::new(true)));
    let (r, _) = sim.run();
    assert!(r.ending.is_complete(), "{:?}", r.ending);
    let v = log.lock().unwrap().clone();
    (r, v)
}

fn count(t: &[TraceRecord], a: Action) -> usize {
    t.iter().filter(|r| r.action == a).count()
}

const RANDREAD: &str = "[global]\nfilename=/dev/nullb0\ndirect=1\nsize=64m\n\
                        [r]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=16\nnumber_ios=200\n";

/// `none` issues directly: Q, G, D, C per I/O and never I (no scheduler, no
/// busy dispatch), each I/O under its own plug (P, U with depth 1).
#[test]
fn none_issues_directly_without_insert() {
    let (r, t) = run("null", "none", RANDREAD, &[]);
    assert_eq!(r.scheduler, "none");
    assert_eq!(r.procs[0].dirs[0].ios, 200);
    for a in [
        Action::Queue,
        Action::GetRq,
        Action::Issue,
        Action::Complete,
    ] {
        assert_eq!(count(&t, a), 200, "{a:?}");
    }
    assert_eq!(count(&t, Action::Insert), 0);
    assert_eq!(count(&t, Action::SleepRq), 0, "6.x traces no S");
    let u: Vec<_> = t.iter().filter(|r| r.action == Action::UnplugIo).collect();
    assert_eq!(u.len(), count(&t, Action::Plug));
    assert!(u
        .iter()
        .all(|r| r.pdu == iostack_core::Pdu::Unplug { depth: 1 }));
    // Each D follows its G in the submitter's context.
    let d = t.iter().find(|r| r.action == Action::Issue).unwrap();
    assert_eq!(d.pid, 1000);
}

/// More I/Os in flight than the device's 32 tags: submitters sleep in
/// `blk_mq_get_tag` and are woken as tags free; nothing exceeds the depth.
#[test]
fn tag_exhaustion_sleeps_and_wakes() {
    let job = "[global]\nfilename=/dev/nullb0\ndirect=1\nsize=64m\nioengine=libaio\n\
               iodepth=64\nnumber_ios=500\nrw=randread\nbs=4k\n[a]\n[b]\n";
    let (r, t) = run("slow", "none", job, &[]);
    assert!(r.queue.sleeps > 0, "{:?}", r.queue);
    assert_eq!(r.queue.max_in_driver, 32, "{:?}", r.queue);
    assert_eq!(count(&t, Action::Complete), 1000);
    assert_eq!(count(&t, Action::SleepRq), 0);
}

/// mq-deadline: requests are inserted (I) and dispatched by the hardware
/// queue's run; sequential 4 KiB writes under one plug merge in the plug or
/// the scheduler, so fewer requests than bios reach the device.
#[test]
fn mq_deadline_inserts_and_merges() {
    let job = "[global]\nfilename=/dev/nullb0\ndirect=1\nsize=8m\n\
               [w]\nrw=write\nbs=4k\nioengine=libaio\niodepth=64\nnumber_ios=512\n";
    let (r, t) = run("slow", "mq-deadline", job, &[]);
    assert_eq!(r.scheduler, "mq-deadline");
    let q = count(&t, Action::Queue);
    let d = count(&t, Action::Issue);
    assert_eq!(q, 512);
    assert_eq!(
        count(&t, Action::Insert),
        d,
        "every request goes through the scheduler"
    );
    assert!(d < q, "no merge: {d} requests for {q} bios");
    let merges = count(&t, Action::BackMerge) + count(&t, Action::FrontMerge);
    assert!(merges > 0);
}

/// The same randread under mq-deadline: a plug flushed with a scheduler
/// inserts, so I precedes every D.
#[test]
fn mq_deadline_randread_completes_every_io() {
    let (r, t) = run("null", "mq-deadline", RANDREAD, &[]);
    assert_eq!(r.procs[0].dirs[0].ios, 200);
    assert_eq!(count(&t, Action::Insert), 200);
    assert_eq!(count(&t, Action::Complete), 200);
}

/// The kernel's default scheduler on 6.x (`elevator_get_default`), legacy
/// elevators refused, bfq and kyber modelled.
#[test]
fn scheduler_choice_on_6x() {
    let m = machine::preset("null").unwrap();
    assert_eq!(machine::default_scheduler(&m, Profile::V6), "mq-deadline");
    assert_eq!(
        machine::default_scheduler(&m, Profile::V2_6_33),
        m.scheduler
    );
    let t = Tunables::new(Profile::V6, &tunable_tables());
    let e = iostack_iosched::check("cfq", &t).err().unwrap();
    assert!(e.contains("not in kernel 6.x"), "{e}");
    assert!(iostack_iosched::check("bfq", &t).is_ok());
    assert!(iostack_iosched::check("kyber", &t).is_ok());
}

/// `queue/wbt_lat_usec` exists only where there is blk-wbt (blk-mq): a
/// single-queue profile refuses it with the reason.
#[test]
fn wbt_lat_usec_refused_without_blk_mq() {
    let m = machine::preset("null").unwrap();
    let procs = iostack_sim::frontend::fio_procs_from_text("j.fio", RANDREAD, &m)
        .unwrap()
        .procs;
    let mut tunables = Tunables::new(Profile::V2_6_33, &tunable_tables());
    tunables.set_str("queue/wbt_lat_usec=2000").unwrap();
    let e = Simulation::new(SimConfig {
        scheduler: "noop".into(),
        machine: m,
        tunables,
        seed: Seed(1),
        procs,
        checks: true,
        until: None,
    })
    .err()
    .expect("refused");
    let e = e.to_string();
    assert!(e.contains("queue/wbt_lat_usec"), "{e}");
}

/// A buffered writer on the 6.x profile: the flusher's writeback writes sleep
/// in wbt (its in-flight limit, 4 or 8 of the 32-deep device), and every
/// byte still reaches the device; with `queue/wbt_lat_usec=0` none sleeps.
#[test]
fn buffered_writeback_is_throttled() {
    let job = "[global]\nfilename=/dev/nullb0\nsize=64m\n\
               [w]\nrw=write\nbs=128k\nioengine=psync\nend_fsync=1\n";
    let sets = ["vm/dirty_background_bytes=4194304"];
    let (r, _) = run("slow", "none", job, &sets);
    assert!(r.queue.wbt_sleeps > 0, "{:?}", r.queue);
    assert_eq!(r.queue.bytes_completed, 64 << 20);
    let (r, _) = run("slow", "none", job, &[sets[0], "queue/wbt_lat_usec=0"]);
    assert_eq!(r.queue.wbt_sleeps, 0);
}
