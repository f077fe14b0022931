//! Simulated I/Os per wall-clock second. Each case is reported by criterion as
//! elements (I/Os) per second; the `baseline/event-queue` case is the floor of the
//! engine itself (three heap operations per I/O with no storage model), so the
//! ratio of a case to it is the cost of the modelled stack.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use iostack_core::{Profile, Tunables};
use iostack_des::{Duration, EventQueue, Instant, Rng, Seed};
use iostack_sim::machine;
use iostack_sim::workload::{Engine, Pattern, ProcSpec, Target};
use iostack_sim::{tunable_tables, SimConfig, Simulation};

const IOS: u64 = 100_000;

fn randread(machine_name: &str, sched: &str, ios: u64) -> SimConfig {
    randread_at(machine_name, Profile::V2_6_33, sched, ios, 32)
}

/// 4 KiB random O_DIRECT reads through libaio at `iodepth` on a machine preset.
fn randread_at(
    machine_name: &str,
    profile: Profile,
    sched: &str,
    ios: u64,
    iodepth: u32,
) -> SimConfig {
    let m = machine::preset(machine_name).expect("preset");
    let dev = format!("/dev/{}", m.disk_name);
    let region = 1u64 << 30;
    SimConfig {
        tunables: Tunables::new(profile, &tunable_tables()),
        scheduler: sched.into(),
        seed: Seed(1),
        procs: vec![ProcSpec {
            pattern: Pattern::Random { norandommap: false },
            io_size: ios * 4096,
            engine: Engine::Async,
            iodepth,
            ..ProcSpec::direct_reader("fio", "randread", Target::Device { path: dev }, region)
        }],
        checks: false,
        until: None,
        machine: m,
    }
}

/// One buffered sequential writer of 1 GiB in 1 MiB `write()`s through the page
/// cache of the null machine (ext2), with `end_fsync`: every page is copied,
/// dirtied, throttled, written back by pdflush or the dirtier, and completed.
fn buffered_write(bytes: u64) -> SimConfig {
    let mut m = machine::preset("null").expect("preset");
    m.mem_bytes = 2 << 30;
    SimConfig {
        tunables: Tunables::new(Profile::V2_6_28, &tunable_tables()),
        scheduler: "noop".into(),
        seed: Seed(1),
        procs: vec![ProcSpec {
            direct: false,
            read_pct: 0,
            bs: [1 << 20, 1 << 20],
            fresh: true,
            end_fsync: true,
            ..ProcSpec::direct_reader(
                "fio",
                "bufwrite",
                Target::File {
                    path: "/mnt/test/big".into(),
                    size: bytes,
                    goal: None,
                },
                bytes,
            )
        }],
        checks: false,
        until: None,
        machine: m,
    }
}

fn run_write(cfg: SimConfig) -> u64 {
    let (r, _) = Simulation::new(cfg).expect("config").run();
    assert!(r.procs[0].error.is_none(), "{:?}", r.procs[0].error);
    r.procs[0].dirs[1].bytes
}

fn run(cfg: SimConfig) -> u64 {
    let (r, _) = Simulation::new(cfg).expect("config").run();
    let ios = r.procs[0].dirs[0].ios;
    assert_eq!(ios * 4096, r.procs[0].dirs[0].bytes);
    ios
}

/// The engine floor: per I/O, schedule a submit and a completion and pop both.
fn event_queue_floor(ios: u64) -> u64 {
    let mut q: EventQueue<u64> = EventQueue::new();
    let mut rng = Rng::stream(Seed(1), "floor");
    let mut done = 0;
    for i in 0..32 {
        q.schedule(Instant(i), i);
    }
    while let Some(s) = q.pop() {
        done += 1;
        if done >= 2 * ios {
            break;
        }
        let lat = 1_000 + rng.below(1_000);
        q.schedule(s.at + Duration(lat), s.event);
    }
    done / 2
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("simulated-ios");
    g.sample_size(10);
    g.throughput(Throughput::Elements(IOS));
    g.bench_function("baseline/event-queue", |b| {
        b.iter(|| event_queue_floor(IOS))
    });
    g.bench_function("null/noop/4k-randread-qd32", |b| {
        b.iter_batched(|| randread("null", "noop", IOS), run, BatchSize::LargeInput)
    });
    // The fixed-latency null device at QD128: the 2.6.33 single queue with
    // noop next to 6.x blk-mq with none, in the same run.
    g.bench_function("null/noop-sq/4k-randread-qd128", |b| {
        b.iter_batched(
            || randread_at("null", Profile::V2_6_33, "noop", IOS, 128),
            run,
            BatchSize::LargeInput,
        )
    });
    g.bench_function("null/none-mq/4k-randread-qd128", |b| {
        b.iter_batched(
            || randread_at("null", Profile::V6, "none", IOS, 128),
            run,
            BatchSize::LargeInput,
        )
    });
    g.throughput(Throughput::Elements(IOS / 10));
    g.bench_function("sata-2009/deadline/4k-randread-qd32", |b| {
        b.iter_batched(
            || randread("sata-2009", "deadline", IOS / 10),
            run,
            BatchSize::LargeInput,
        )
    });
    // Simulated megabytes (MiB) per wall second for the page-cache write path.
    g.throughput(Throughput::Bytes(1 << 30));
    g.bench_function("null/buffered-seq-write-1GiB", |b| {
        b.iter_batched(|| buffered_write(1 << 30), run_write, BatchSize::LargeInput)
    });
    g.finish();
}

criterion_group!(all, benches);
criterion_main!(all);
