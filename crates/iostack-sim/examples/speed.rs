//! Quick wall-clock check of simulated I/Os per second (the criterion bench is the
//! measurement of record): `cargo run --release -p iostack-sim --example speed`.
use iostack_core::{Profile, Tunables};
use iostack_des::{Duration, Seed};
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
            comm: "fio".into(),
            name: "randread".into(),
            group: 0,
            target: Target::Device {
                path: "/dev/nullb0".into(),
            },
            pattern: Pattern::Random { norandommap: false },
            read_pct: 100,
            bs: [4096, 4096],
            offset: 0,
            region: 1 << 30,
            io_size: ios * 4096,
            engine: Engine::Async,
            iodepth: 32,
            direct: true,
            runtime: None,
            time_based: false,
            startdelay: Duration::ZERO,
            stonewall: false,
            ioprio: (2, 4),
            pid: None,
            cpu: None,
        }],
        checks: false,
        time_limit: Duration::secs(1 << 20),
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
