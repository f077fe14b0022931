//! Issue 11's fuzz harness over sweep grid files (`iostack sweep GRID.toml`,
//! docs/sweep.md): valid grids mutated byte by byte and key by key, parsed under
//! `catch_unwind`. Nothing panics; a refusal names the grid file; a grid that
//! parses expands into the product of its keys' values, each point giving run
//! inputs.

use std::panic::{catch_unwind, AssertUnwindSafe};

use iostack_cli::sweep;
use iostack_des::{Rng, Seed};

const GRIDS: &[&str] = &[
    "job = \"randread.fio\"\nmachine = \"null\"\nkernel = \"2.6.36\"\n\
     set = [\"queue/nr_requests=64\"]\nlayout = []\n\n[grid]\n\
     sched = [\"noop\", \"deadline\", \"cfq\"]\n\"iosched/cfq/slice_idle\" = [0, 8]\nseed = [1, 2, 3]\n",
    "job_text = \"\"\"\n[r]\nrw=randread\nsize=1m\n\"\"\"\nseed = 7\nuntil = \"1s\"\n\n[grid]\n\
     machine = [\"null\", \"sata-2009\"]\n\"vm/dirty_ratio\" = [5, 10, 40]\n",
];

const PIECES: &[&str] = &[
    "[grid]",
    "=",
    "\"",
    "[",
    "]",
    ",",
    "\n",
    "job",
    "seed = -1",
    "seed = 1e9",
    "sched = []",
    "\"a/b\" = [true, 1.5, \"x\"]",
    "{ x = 1 }",
    "until = 3",
    "set = [1]",
    "layout = \"x\"",
    "bogus = 1",
    "grid = 1",
    "\u{e9}",
    "#",
    "'''",
];

/// A number below `n` from the project's seeded generator.
fn below(rng: &mut Rng, n: usize) -> usize {
    rng.below(n.max(1) as u64) as usize
}

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut t: Vec<char> = text.chars().collect();
    for _ in 0..1 + below(rng, 4) {
        let at = below(rng, t.len() + 1);
        match below(rng, 3) {
            0 if at < t.len() => t[at] = char::from(b' ' + below(rng, 95) as u8),
            1 if at < t.len() => {
                t.remove(at);
            }
            _ => {
                let p: Vec<char> = PIECES[below(rng, PIECES.len())].chars().collect();
                t.splice(at..at, p);
            }
        }
    }
    t.into_iter().collect()
}

#[test]
fn mutated_grid_files_are_parsed_or_refused_with_their_name() {
    let mut rng = Rng::stream(Seed(0x6121_D5EE), "fuzz-sweep");
    let (mut parsed, mut refused) = (0, 0);
    for case in 0..3_000 {
        let base = GRIDS[below(&mut rng, GRIDS.len())];
        let text = mutate(&mut rng, base);
        let path = format!("/tmp/fuzz/g{case}.toml");
        let r = catch_unwind(AssertUnwindSafe(|| sweep::parse(&path, &text)))
            .unwrap_or_else(|_| panic!("sweep::parse panicked on {text:?}"));
        match r {
            Ok(grid) => {
                parsed += 1;
                let n: usize = grid.keys.iter().map(|(_, v)| v.len()).product();
                let pts = grid.points();
                assert_eq!(pts.len(), n, "{text:?}");
                for p in pts.iter().take(4) {
                    let _ = grid.inputs(p);
                }
            }
            Err(e) => {
                refused += 1;
                let msg = e.to_string();
                assert!(
                    msg.starts_with(&path),
                    "no file name in {msg:?} for {text:?}"
                );
            }
        }
    }
    println!("grids: {parsed} parsed, {refused} refused");
    assert!(
        parsed > 300 && refused > 300,
        "{parsed} parsed, {refused} refused"
    );
}
