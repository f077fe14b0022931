//! Issue 11's fuzz harness over sweep grid files (`iostack sweep GRID.toml`,
//! docs/sweep.md): valid grids mutated byte by byte and key by key, parsed under
//! `catch_unwind`. Nothing panics; a refusal names the grid file; a grid that
//! parses expands into the product of its keys' values, each point giving run
//! inputs.

use std::panic::{catch_unwind, AssertUnwindSafe};

use iostack_cli::sweep;

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

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut t: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(t.len() + 1);
        match rng.below(3) {
            0 if at < t.len() => t[at] = char::from(b' ' + rng.below(95) as u8),
            1 if at < t.len() => {
                t.remove(at);
            }
            _ => {
                let p: Vec<char> = PIECES[rng.below(PIECES.len())].chars().collect();
                t.splice(at..at, p);
            }
        }
    }
    t.into_iter().collect()
}

#[test]
fn mutated_grid_files_are_parsed_or_refused_with_their_name() {
    let mut rng = Rng(0x6121_D5EE);
    let (mut parsed, mut refused) = (0, 0);
    for case in 0..3_000 {
        let base = GRIDS[rng.below(GRIDS.len())];
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
