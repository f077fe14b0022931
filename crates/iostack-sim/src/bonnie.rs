//! The Bonnie front end: a parsed Bonnie 1.0 command line (seed 004's patch)
//! mapped onto simulated processes, one per test, each starting when the one
//! before is done (Bonnie runs its tests in turn, in one process), and the
//! numbers of Bonnie's table computed from their results as Bonnie computes
//! them (`get_delta_t`, `report`): K/sec is the size over the test's elapsed
//! time, %CPU the CPU time it used over that elapsed time.
//!
//! The tests, in Bonnie's order: putc (one character at a time through stdio,
//! which writes 4 KiB at a time; the patch adds an fsync), rewrite (read a
//! `Chunk`, dirty a word, lseek back, write it; fsync), block write (the file
//! anew, a `Chunk` per write(); fsync), getc (stdio reads 4 KiB at a time) and
//! block read. With `-o_direct` the rewrite, block-write and block-read tests
//! open the file with `O_DIRECT`. The seek test is refused unless `-fast`
//! skips it (its three forked seekers are not mapped yet).

use crate::frontend::target_of;
use crate::machine::Machine;
use crate::stats::RunResult;
use crate::workload::{Dir, ProcSpec};
use crate::SimError;
use iostack_workload::{BonnieError, BonnieSpec, BONNIE_CHUNK};

/// Bonnie's pid (every test runs in the one process).
const BONNIE_PID: u32 = 1000;
/// stdio's buffer for a file on a 4 KiB-block file system (`st_blksize`):
/// what putc and getc write and read per system call.
const STDIO_BUFSIZ: u64 = 4096;

/// The tests of Bonnie's table that are simulated, in the order Bonnie runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BonnieTest {
    PutcWrite,
    Rewrite,
    BlockWrite,
    GetcRead,
    BlockRead,
}

impl BonnieTest {
    pub const ALL: [BonnieTest; 5] = [
        BonnieTest::PutcWrite,
        BonnieTest::Rewrite,
        BonnieTest::BlockWrite,
        BonnieTest::GetcRead,
        BonnieTest::BlockRead,
    ];
}

/// One test's numbers, as Bonnie's `report` prints them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BonnieResult {
    pub test: BonnieTest,
    pub kb_per_s: f64,
    pub cpu_pct: f64,
    pub elapsed_ns: u64,
    pub cpu_ns: u64,
}

fn refuse(option: &str, message: &str) -> SimError {
    SimError::Bonnie(BonnieError {
        option: option.to_string(),
        message: message.to_string(),
    })
}

/// The processes of a Bonnie run on a machine, one per test in `BonnieTest::ALL`.
pub fn bonnie_procs(s: &BonnieSpec, m: &Machine) -> Result<Vec<ProcSpec>, SimError> {
    if !s.fast {
        return Err(refuse(
            "-fast",
            "the seek test (three forked seekers) is not simulated yet; run with -fast",
        ));
    }
    let bytes = s.bytes();
    let path = s.file(BONNIE_PID);
    crate::frontend::fits_on_disk(bytes, m)
        .map_err(|e| refuse("-s", &format!("-s {}: {e}", s.size_mb)))?;
    let target =
        target_of(&path, bytes, m).map_err(|e| refuse("-d", &format!("-d {}: {e}", s.dir)))?;
    let base = ProcSpec {
        pid: Some(BONNIE_PID),
        end_fsync: false,
        ..ProcSpec::direct_reader("Bonnie", "Bonnie", target, bytes)
    };
    let step = |i: u32| (i > 0).then(|| (i - 1, i));
    let test = |i: u32, dir: Dir, bs: u64, direct: bool| ProcSpec {
        read_pct: if dir == Dir::Read { 100 } else { 0 },
        bs: [bs, bs],
        bs_range: [(bs, bs), (bs, bs)],
        direct,
        // The patch's fsync after each writing test, before close.
        end_fsync: dir == Dir::Write,
        after: step(i),
        ..base.clone()
    };
    Ok(vec![
        ProcSpec {
            fresh: true,
            ..test(0, Dir::Write, STDIO_BUFSIZ, false)
        },
        ProcSpec {
            rewrite: true,
            read_pct: 50,
            io_size: 2 * bytes,
            end_fsync: true,
            ..test(1, Dir::Read, BONNIE_CHUNK, s.o_direct)
        },
        test(2, Dir::Write, BONNIE_CHUNK, s.o_direct),
        test(3, Dir::Read, STDIO_BUFSIZ, false),
        test(4, Dir::Read, BONNIE_CHUNK, s.o_direct),
    ])
}

/// Bonnie's numbers from a run of [`bonnie_procs`]: per test, `size / 1024 /
/// elapsed` and `100 * cpu / elapsed`, elapsed from the test's start (after the
/// open) to its end (after the fsync; the close costs nothing here).
pub fn bonnie_results(s: &BonnieSpec, r: &RunResult) -> Vec<BonnieResult> {
    BonnieTest::ALL
        .iter()
        .zip(&r.procs)
        .map(|(&test, p)| {
            let elapsed_ns = p.end.since(p.start).as_ns().max(1);
            let secs = elapsed_ns as f64 / 1e9;
            BonnieResult {
                test,
                kb_per_s: (s.bytes() / 1024) as f64 / secs,
                cpu_pct: 100.0 * p.sys_ns as f64 / elapsed_ns as f64,
                elapsed_ns,
                cpu_ns: p.sys_ns,
            }
        })
        .collect()
}
