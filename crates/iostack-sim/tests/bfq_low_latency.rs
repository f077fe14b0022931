//! BFQ's `low_latency` weight raising and I/O injection end to end (6.x
//! `block/bfq-iosched.c`), each against the same run without it.

use iostack_core::{Profile, Tunables};
use iostack_des::Seed;
use iostack_sim::check::Checker;
use iostack_sim::stats::RunResult;
use iostack_sim::{machine, tunable_tables, SimConfig, Simulation};

fn run(machine_name: &str, job: &str, set: &[&str]) -> RunResult {
    let mut m = machine::preset(machine_name).unwrap();
    m.fs = machine::FsKind::Ext4;
    let procs = iostack_sim::frontend::fio_procs_from_text("j.fio", job, &m)
        .unwrap()
        .procs;
    let mut tunables = Tunables::new(Profile::V6, &tunable_tables());
    for kv in set {
        tunables.set_str(kv).unwrap();
    }
    let mut sim = Simulation::new(SimConfig {
        scheduler: "bfq".into(),
        machine: m,
        tunables,
        seed: Seed(1),
        procs,
        checks: true,
        until: None,
    })
    .unwrap();
    sim.attach(Box::new(Checker::new(true)));
    let (r, _) = sim.run();
    assert!(r.ending.is_complete(), "{:?}", r.ending);
    r
}

/// A sequential reader hogs a rotational disk; 200 ms later a new process
/// reads 40 random 4 KiB blocks one at a time (an application starting).
const HOG_AND_NEWCOMER: &str = "[global]\nfilename=/dev/sda\ndirect=1\nioengine=sync\n\
    [hog]\nrw=read\nbs=128k\nsize=512m\nnumber_ios=3000\n\
    [newcomer]\nrw=randread\nbs=4k\noffset=2g\nsize=1g\nnumber_ios=40\nstartdelay=200ms\n";

/// Interactive weight raising (`bfq_bfqq_handle_idle_busy_switch`): the
/// newcomer, idle "forever" before its first request, is raised to 30
/// times the hog's weight, preempts it (`bfq_bfqq_higher_class_or_weight`)
/// and is idled for as a raised queue among unraised ones
/// (`idling_needed_for_service_guarantees`), so each of its reads waits for
/// at most the hog's request in the drive. Without raising, the two equal
/// weights share the disk in budgets: the newcomer waits behind the hog's
/// budget of up to 16384 sectors (or its 125 ms timeout) for each batch.
#[test]
fn a_new_reader_is_raised_above_a_sequential_hog() {
    let on = run("sata-2009", HOG_AND_NEWCOMER, &[]);
    let off = run(
        "sata-2009",
        HOG_AND_NEWCOMER,
        &["iosched/bfq/low_latency=0"],
    );
    let mean = |r: &RunResult| {
        let c = &r.procs[1].dirs[0].clat;
        assert_eq!(c.n, 40);
        (c.sum / c.n as u128) as u64
    };
    let (m_on, m_off) = (mean(&on), mean(&off));
    eprintln!("newcomer mean latency {m_on} ns raised, {m_off} ns unraised");
    assert!(
        m_on * 3 < m_off,
        "newcomer mean latency {m_on} ns raised, {m_off} ns unraised"
    );
    // The hog's throughput pays for it only while the newcomer runs.
    assert_eq!(on.procs[0].dirs[0].ios, 3000);
}

/// On an NVMe drive a real-time-class reader reads one 4 KiB block per
/// millisecond; a best-effort reader reads back to back. Busy queues of two
/// classes make the scenario asymmetric, so BFQ idles for the real-time
/// reader whenever it empties (`idling_needed_for_service_guarantees`), and
/// the best-effort class is served only when no real-time queue is busy:
/// without injection the greedy reader gets (almost) nothing. Injection
/// (`bfq_choose_bfqq_for_injection`, the limit raised from 0 once the
/// thinker's service time is sampled, `bfq_update_inject_limit`) fills the
/// think time with its reads, while the thinker keeps its rate (600 ms at
/// 1 ms of think time plus a ~80 us read: about 555 reads).
const THINKER_AND_GREEDY: &str = "[global]\nfilename=/dev/nvme0n1\ndirect=1\nrw=randread\nbs=4k\n\
    size=1g\nruntime=600ms\ntime_based=1\n\
    [thinker]\nioengine=sync\nprioclass=1\nprio=4\nthinktime=1ms\n\
    [greedy]\nioengine=sync\nprioclass=2\nprio=4\noffset=4g\n";

#[test]
fn injection_serves_another_queue_while_idling() {
    let r = run(
        "nvme-2024",
        THINKER_AND_GREEDY,
        &["iosched/bfq/low_latency=0"],
    );
    let thinker = r.procs[0].dirs[0].ios;
    let greedy = r.procs[1].dirs[0].ios;
    assert!(
        thinker >= 540,
        "the thinker reads every ~1.08 ms: {thinker}"
    );
    assert!(
        greedy >= 10 * thinker,
        "greedy {greedy} reads beside {thinker}: not injected"
    );
}
