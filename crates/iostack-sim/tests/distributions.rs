//! fio's skewed random distributions (`random_distribution=zipf:θ`,
//! `pareto:h`, `normal:σ`) in fixed point, held to Debian's `fio-genzipf`
//! (fio 3.33's own `zipf_next`/`pareto_next`/`gauss_next` over 1 GiB of
//! 4 KiB blocks, one draw per block): the share of the draws that land in the
//! hottest 1%, 5% and 10% of the blocks agrees within 0.6 percentage points
//! (the two use different random streams; the sampling noise of these shares
//! over 262,144 draws is a few tenths of a point). A simulated job's queued
//! offsets follow the same distribution.

use iostack_des::{Rng, Seed};
use iostack_sim::dist::{Dist, DistState};
use iostack_sim::fixed::from_f64;
use std::process::Command;

/// Hits per block, hottest first, to the shares of the top 1%, 5%, 10% of
/// `nranges` blocks.
fn shares(mut counts: Vec<u64>, nranges: usize) -> [f64; 3] {
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let total: u64 = counts.iter().sum();
    [1, 5, 10].map(|pct| {
        let k = nranges * pct / 100;
        counts.iter().take(k).sum::<u64>() as f64 / total as f64
    })
}

/// `fio-genzipf -t KIND -i VALUE -g 1 -b 4096 -c`: its CSV of hits per block.
fn genzipf(kind: &str, value: &str) -> Option<Vec<u64>> {
    let bin = std::path::Path::new("/usr/bin/fio-genzipf");
    if !bin.exists() {
        assert!(
            std::env::var("IOSTACK_SKIP_REAL_TOOLS").as_deref() == Ok("1"),
            "fio-genzipf is not installed (Debian's fio; run scripts/setup, or set \
             IOSTACK_SKIP_REAL_TOOLS=1)"
        );
        return None;
    }
    let out = Command::new(bin)
        .args(["-t", kind, "-i", value, "-g", "1", "-b", "4096", "-c"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    Some(
        text.lines()
            .skip(1)
            .map(|l| l.split(", ").nth(1).unwrap().trim().parse().unwrap())
            .collect(),
    )
}

fn ours(d: &Dist, nranges: u64, draws: u64, seed: u64) -> Vec<u64> {
    let mut rng = Rng::stream(Seed(seed), "dist-test");
    let st = DistState::new(d, nranges, &mut rng);
    let mut counts = vec![0u64; nranges as usize];
    for _ in 0..draws {
        let b = st.next(&mut rng);
        assert!(b < nranges);
        counts[b as usize] += 1;
    }
    counts
}

#[test]
fn skews_match_fio_genzipf() {
    const N: u64 = 262_144;
    let cases = [
        (
            "zipf",
            "1.2",
            Dist::Zipf {
                theta: from_f64(1.2),
                center: None,
            },
        ),
        (
            "zipf",
            "0.8",
            Dist::Zipf {
                theta: from_f64(0.8),
                center: None,
            },
        ),
        (
            "pareto",
            "0.2",
            Dist::Pareto {
                h: from_f64(0.2),
                center: None,
            },
        ),
        (
            "normal",
            "10",
            Dist::Normal {
                dev: from_f64(10.0),
                center: None,
            },
        ),
    ];
    for (kind, value, d) in cases {
        let Some(fio) = genzipf(kind, value) else {
            return;
        };
        let want = shares(fio, N as usize);
        let got = shares(ours(&d, N, N, 1), N as usize);
        eprintln!("{kind}:{value}: ours {got:.4?} fio-genzipf {want:.4?}");
        for (i, pct) in [1, 5, 10].iter().enumerate() {
            assert!(
                (got[i] - want[i]).abs() < 0.006,
                "{kind}:{value}: hottest {pct}%: {:.4} vs fio-genzipf's {:.4}",
                got[i],
                want[i]
            );
        }
    }
}

/// Sectors of the bios queued (Q) by a job on the `null` machine.
fn queued_sectors(text: &str) -> Vec<u64> {
    use iostack_core::{Action, TraceEvent, TraceSink};
    use iostack_sim::machine;
    use iostack_sim::{tunable_tables, SimConfig, Simulation};
    use std::sync::{Arc, Mutex};
    struct Qs(Arc<Mutex<Vec<u64>>>);
    impl TraceSink for Qs {
        fn event(&mut self, ev: &TraceEvent) {
            if let TraceEvent::Block(r) = ev {
                if r.action == Action::Queue {
                    self.0.lock().unwrap().push(r.sector);
                }
            }
        }
    }
    let m = machine::preset("null").unwrap();
    let procs = iostack_sim::frontend::fio_procs_from_text("job.fio", text, &m)
        .unwrap()
        .procs;
    let tunables = iostack_core::Tunables::new(
        iostack_core::Profile::parse("2.6.32").unwrap(),
        &tunable_tables(),
    );
    let cfg = SimConfig {
        scheduler: m.scheduler.clone(),
        machine: m,
        tunables,
        seed: Seed(1),
        procs,
        checks: false,
        until: None,
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut sim = Simulation::new(cfg).unwrap();
    sim.attach(Box::new(Qs(seen.clone())));
    sim.run();
    let v = seen.lock().unwrap().clone();
    v
}

/// A job's queued offsets follow its distribution: the hottest 1%, 5% and
/// 10% of a 64 MiB device's 16,384 blocks take the share that the same number
/// of draws of the distribution gives (the shares of a sample's own hottest
/// blocks, so both carry the same small-sample bias), within 3 points, and
/// the hottest 1% takes 5 points more than a uniform job's.
#[test]
fn jobs_issue_the_distribution() {
    const IOS: u64 = 6000;
    const N: u64 = 16_384;
    let job = |d: &str| {
        format!(
            "[j]\nfilename=/dev/nullb0\nrw=randread\nbs=4k\nsize=64m\ndirect=1\n\
             number_ios={IOS}\nrandom_distribution={d}\n"
        )
    };
    let from_trace = |d: &str| {
        let s = queued_sectors(&job(d));
        assert_eq!(s.len() as u64, IOS, "{d}");
        let mut counts = vec![0u64; N as usize];
        for x in s {
            counts[(x / 8) as usize] += 1;
        }
        shares(counts, N as usize)
    };
    let uniform = from_trace("random");
    assert!(uniform[0] < 0.04, "uniform: {uniform:?}");
    for (spec, d) in [
        (
            "zipf:1.2",
            Dist::Zipf {
                theta: from_f64(1.2),
                center: None,
            },
        ),
        (
            "pareto:0.2",
            Dist::Pareto {
                h: from_f64(0.2),
                center: None,
            },
        ),
        (
            "normal:5",
            Dist::Normal {
                dev: from_f64(5.0),
                center: None,
            },
        ),
    ] {
        let got = from_trace(spec);
        let want = shares(ours(&d, N, IOS, 7), N as usize);
        eprintln!("{spec}: job {got:.4?} draws {want:.4?}");
        assert!(
            got[0] > uniform[0] + 0.05,
            "{spec}: {got:?} vs uniform {uniform:?}"
        );
        for i in 0..3 {
            assert!(
                (got[i] - want[i]).abs() < 0.03,
                "{spec}: {got:?} vs {want:?}"
            );
        }
    }
}
