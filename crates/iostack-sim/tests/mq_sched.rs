//! The blk-mq schedulers BFQ and Kyber end to end on the 6.x profile, and
//! the schedulers' CPU cost (their hooks and BFQ's queue lock).

mod common;

use common::{Collect, Log};
use iostack_core::{Action, Profile, TraceRecord};
use iostack_sim::check::Checker;
use iostack_sim::machine;
use iostack_sim::stats::RunResult;

fn run(machine_name: &str, sched: &str, job: &str) -> (RunResult, Vec<TraceRecord>) {
    run_with(machine_name, sched, job, &[])
}

fn run_with(
    machine_name: &str,
    sched: &str,
    job: &str,
    set: &[&str],
) -> (RunResult, Vec<TraceRecord>) {
    let mut m = machine::preset(machine_name).unwrap();
    // A 6.x kernel has no ext3 journal; the raw disk is read anyway.
    m.fs = machine::FsKind::Ext4;
    let mut sim = common::fio_sim(job, m, Profile::V6, Some(sched), set).unwrap();
    let log = Log::default();
    sim.attach(Box::new(Collect(log.clone())));
    sim.attach(Box::new(Checker::new(true)));
    let (r, _) = sim.run();
    assert!(r.ending.is_complete(), "{:?}", r.ending);
    let v = log.lock().unwrap().clone();
    (r, v)
}

/// Two synchronous sequential readers of one disk, 1 GiB apart.
const TWO_READERS: &str = "[global]\nfilename=/dev/sda\ndirect=1\nrw=read\nbs=64k\n\
                           ioengine=sync\nsize=64m\nnumber_ios=160\n\
                           [a]\noffset=0\n[b]\noffset=1g\n";

/// How often consecutive dispatches (D) switch between the two readers.
fn switches(t: &[TraceRecord]) -> usize {
    let d: Vec<bool> = t
        .iter()
        .filter(|r| r.action == Action::Issue)
        .map(|r| r.sector >= (1 << 30) / 512)
        .collect();
    d.windows(2).filter(|w| w[0] != w[1]).count()
}

/// BFQ idles for the reader in service (a rotational disk without
/// queueing) and serves each its budget in turn; mq-deadline has no idling
/// and alternates between them request by request. With `low_latency` (the
/// default) both new readers are weight-raised for their whole run, and two
/// raised queues of equal weight are not idled for (`bfq_better_to_idle`:
/// idling boosts throughput only with no raised queue busy, and is needed
/// only for a raised queue among unraised ones): the readers alternate.
#[test]
fn bfq_serves_two_sequential_readers_in_budgets() {
    let (rb, tb) = run_with(
        "sata-2009",
        "bfq",
        TWO_READERS,
        &["iosched/bfq/low_latency=0"],
    );
    let (_, tw) = run("sata-2009", "bfq", TWO_READERS);
    assert!(
        switches(&tw) >= 100,
        "raised: switched {} times",
        switches(&tw)
    );
    let (rd, td) = run("sata-2009", "mq-deadline", TWO_READERS);
    assert_eq!(rb.procs[0].dirs[0].ios + rb.procs[1].dirs[0].ios, 320);
    let (sb, sd) = (switches(&tb), switches(&td));
    // 64 KiB requests, budgets of 2/3 of 16384 sectors: 85 per budget.
    assert!((2..=6).contains(&sb), "bfq switched {sb} times");
    assert!(sd >= 100, "mq-deadline switched {sd} times");
    let mbps = |r: &RunResult| {
        let bytes: u64 = r.procs.iter().map(|p| p.dirs[0].bytes).sum();
        bytes as f64 / r.end.as_ns() as f64
    };
    assert!(mbps(&rb) > 2.0 * mbps(&rd), "idling avoids the seeks");
}

const RANDREAD4: &str = "[global]\nfilename=/dev/nullb0\ndirect=1\nsize=256m\nrw=randread\n\
                         bs=4k\nioengine=libaio\niodepth=32\nnumber_ios=2000\nnumjobs=4\n[r]\n";

/// Four CPU-bound random readers on a 1 us device: the scheduler's hooks
/// cost CPU (none < kyber < mq-deadline < bfq) and BFQ's single lock caps
/// the rate near 1 / 1.9 us.
#[test]
fn scheduler_cpu_cost_orders_none_kyber_deadline_bfq() {
    let per_io = |s: &str| {
        let (r, _) = run("null", s, RANDREAD4);
        let ios: u64 = r.procs.iter().map(|p| p.dirs[0].ios).sum();
        assert_eq!(ios, 8000, "{s}");
        let sys: u64 = r.procs.iter().map(|p| p.sys_ns).sum();
        (sys / ios, ios * 1_000_000_000 / r.end.as_ns())
    };
    let (none, kyber, dd, bfq) = (
        per_io("none"),
        per_io("kyber"),
        per_io("mq-deadline"),
        per_io("bfq"),
    );
    assert!(none.0 < kyber.0 && kyber.0 < dd.0 && dd.0 < bfq.0);
    assert!(
        bfq.1 <= 1_000_000_000 / 1900 + 1000,
        "bfq at {} IOPS",
        bfq.1
    );
    assert!(none.1 > bfq.1);
}

/// Kyber end to end: every I/O completes, reads and writes, with the trace
/// checker watching.
#[test]
fn kyber_reads_and_writes_complete() {
    let job = "[global]\nfilename=/dev/nullb0\ndirect=1\nsize=64m\nioengine=libaio\n\
               iodepth=64\nnumber_ios=500\n[r]\nrw=randread\nbs=4k\n[w]\nrw=randwrite\nbs=16k\n";
    let (r, t) = run("null", "kyber", job);
    assert_eq!(r.scheduler, "kyber");
    assert_eq!(r.procs[0].dirs[0].ios, 500);
    assert_eq!(r.procs[1].dirs[1].ios, 500);
    let inserted = t.iter().filter(|r| r.action == Action::Insert).count();
    assert_eq!(inserted, 1000, "every request goes through the scheduler");
}
