//! Quick wall-clock check of simulated I/Os per second (the criterion bench is the
//! measurement of record): `cargo run --release -p iostack-sim --example speed`.
use iostack_core::{Profile, Tunables};
use iostack_des::Seed;
use iostack_sim::machine;
use iostack_sim::workload::{Engine, Pattern, ProcSpec, Target};
use iostack_sim::{tunable_tables, SimConfig, Simulation};

fn main() {
    let ios: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let m = machine::preset("null").unwrap();
    let cfg = SimConfig {
        tunables: Tunables::new(Profile::V2_6_33, &tunable_tables()),
        scheduler: "noop".into(),
        seed: Seed(1),
        procs: vec![ProcSpec {
            pattern: Pattern::Random { norandommap: false },
            io_size: ios * 4096,
            engine: Engine::Async,
            iodepth: 32,
            ..ProcSpec::direct_reader(
                "fio",
                "randread",
                Target::Device {
                    path: "/dev/nullb0".into(),
                },
                1 << 30,
            )
        }],
        checks: false,
        until: None,
        machine: m,
    };
    let t = std::time::Instant::now();
    let (r, _) = Simulation::new(cfg).unwrap().run();
    let el = t.elapsed().as_secs_f64();
    println!(
        "{} I/Os, {} events, {:.3} s wall, {:.2} M I/Os per second, simulated {:.3} s",
        r.procs[0].dirs[0].ios,
        r.events,
        el,
        r.procs[0].dirs[0].ios as f64 / el / 1e6,
        r.end.as_ns() as f64 / 1e9
    );
}
