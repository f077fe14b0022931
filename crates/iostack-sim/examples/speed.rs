//! Quick wall-clock check of simulated I/Os per second (the criterion bench is the
//! measurement of record): `cargo run --release -p iostack-sim --example speed [IOS]`.
//! Runs 4 KiB random O_DIRECT reads through libaio on the `null` preset: the
//! 2.6.33 single queue with noop at QD32 and QD128, and 6.x blk-mq with none at
//! QD128, and prints the blk-mq / single-queue ratio at QD128.
use iostack_core::{Profile, Tunables};
use iostack_des::Seed;
use iostack_sim::machine;
use iostack_sim::workload::{Engine, Pattern, ProcSpec, Target};
use iostack_sim::{tunable_tables, SimConfig, Simulation};

fn config(ios: u64, profile: Profile, sched: &str, iodepth: u32) -> SimConfig {
    let m = machine::preset("null").unwrap();
    SimConfig {
        tunables: Tunables::new(profile, &tunable_tables()),
        scheduler: sched.into(),
        seed: Seed(1),
        procs: vec![ProcSpec {
            pattern: Pattern::Random { norandommap: false },
            io_size: ios * 4096,
            engine: Engine::Async,
            iodepth,
            ..ProcSpec::direct_reader(
                "fio",
                "randread",
                Target::Device {
                    path: format!("/dev/{}", m.disk_name),
                },
                1 << 30,
            )
        }],
        checks: false,
        until: None,
        machine: m,
    }
}

/// Simulated I/Os per wall second.
fn measure(name: &str, cfg: SimConfig) -> f64 {
    let t = std::time::Instant::now();
    let (r, _) = Simulation::new(cfg).unwrap().run();
    let el = t.elapsed().as_secs_f64();
    let ios = r.procs[0].dirs[0].ios;
    let rate = ios as f64 / el;
    println!(
        "{name:<28} {ios} I/Os, {} events, {el:.3} s wall, {:.3} M I/Os per second",
        r.events,
        rate / 1e6
    );
    rate
}

fn main() {
    let ios: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    if std::env::args().nth(2).as_deref() == Some("mq") {
        measure("null/none-mq qd128", config(ios, Profile::V6, "none", 128));
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("sq") {
        measure(
            "null/noop-sq qd128",
            config(ios, Profile::V2_6_33, "noop", 128),
        );
        return;
    }
    measure(
        "null/noop-sq qd32",
        config(ios, Profile::V2_6_33, "noop", 32),
    );
    let sq = measure(
        "null/noop-sq qd128",
        config(ios, Profile::V2_6_33, "noop", 128),
    );
    let mq = measure("null/none-mq qd128", config(ios, Profile::V6, "none", 128));
    println!("none-mq / noop-sq at qd128: {:.2}", mq / sq);
}
