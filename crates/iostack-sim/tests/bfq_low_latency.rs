//! BFQ's `low_latency` weight raising and I/O injection end to end (6.x
//! `block/bfq-iosched.c`), each against the same run without it.

mod common;

use common::{Collect, Log};
use iostack_core::{Action, Profile};
use iostack_sim::check::Checker;
use iostack_sim::machine;
use iostack_sim::stats::RunResult;

fn run(machine_name: &str, job: &str, set: &[&str]) -> RunResult {
    run_traced(machine_name, job, set, None)
}

fn run_traced(machine_name: &str, job: &str, set: &[&str], log: Option<Log>) -> RunResult {
    let mut m = machine::preset(machine_name).unwrap();
    m.fs = machine::FsKind::Ext4;
    let mut sim = common::fio_sim(job, m, Profile::V6, Some("bfq"), set).unwrap();
    sim.attach(Box::new(Checker::new(true)));
    if let Some(log) = log {
        sim.attach(Box::new(Collect(log)));
    }
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

/// A sequential hog on a rotational disk, and a player reading 4 KiB
/// sequentially every 20 ms (400 sectors/s, under `bfq_wr_max_softrt_rate`)
/// for 13 s: longer than the 10.5 s interactive raising on a rotational
/// device, so only soft real-time raising (`bfq_bfqq_softrt_next_start`: the
/// next batch comes after `soft_rt_next_start`; `wr_coeff` 30 × 100) keeps
/// the player ahead of the hog after 11 s (about 16 ms a read, the hog's
/// request in the drive and a seek). Without low_latency each of its reads
/// waits behind the hog's budget (about 44 ms); with interactive raising
/// alone it would have lost its raising at 10.5 s.
const HOG_AND_PLAYER: &str = "[global]\nfilename=/dev/sda\ndirect=1\nioengine=sync\n\
    runtime=13s\ntime_based=1\n\
    [hog]\nrw=read\nbs=128k\nsize=2g\n\
    [player]\nrw=read\nbs=4k\noffset=4g\nsize=1g\nthinktime=20ms\n";

/// Mean insert-to-complete time of the player's reads inserted after 11 s.
fn late_player_latency(set: &[&str]) -> u64 {
    let log = Log::default();
    run_traced("sata-2009", HOG_AND_PLAYER, set, Some(log.clone()));
    let player_start = (4u64 << 30) / 512;
    let mut inserted = std::collections::BTreeMap::new();
    let mut lat = Vec::new();
    for r in log
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.sector >= player_start)
    {
        match r.action {
            Action::Insert => {
                inserted.insert(r.sector, r.time.as_ns());
            }
            Action::Complete => {
                if let Some(t) = inserted.remove(&r.sector) {
                    if t >= 11_000_000_000 {
                        lat.push(r.time.as_ns() - t);
                    }
                }
            }
            _ => {}
        }
    }
    assert!(lat.len() > 20, "{} late reads", lat.len());
    lat.iter().sum::<u64>() / lat.len() as u64
}

#[test]
fn a_soft_real_time_reader_stays_raised_after_the_interactive_period() {
    let on = late_player_latency(&[]);
    let off = late_player_latency(&["iosched/bfq/low_latency=0"]);
    assert!(
        on * 2 < off,
        "player after 11 s: {on} ns raised, {off} ns unraised"
    );
}
