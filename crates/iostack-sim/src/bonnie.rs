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
    /// The name of its process (and of the experiment metrics over it).
    pub fn name(self) -> &'static str {
        match self {
            BonnieTest::PutcWrite => "putc",
            BonnieTest::Rewrite => "rewrite",
            BonnieTest::BlockWrite => "block_write",
            BonnieTest::GetcRead => "getc",
            BonnieTest::BlockRead => "block_read",
        }
    }

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
        name: BonnieTest::ALL[i as usize].name().to_string(),
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
        ProcSpec {
            // newfile(name, &fd, &stream, 1, o_direct): unlink and create.
            recreate: true,
            ..test(2, Dir::Write, BONNIE_CHUNK, s.o_direct)
        },
        test(3, Dir::Read, STDIO_BUFSIZ, false),
        test(4, Dir::Read, BONNIE_CHUNK, s.o_direct),
    ])
}

/// Bonnie's numbers of one test's process: the file's size (the bytes it
/// wrote, or read: a rewrite does both) over 1024 and its elapsed time from
/// start (after the open) to end (after the fsync; close costs nothing here),
/// and `100 * cpu / elapsed`.
pub fn kb_and_cpu(p: &crate::stats::ProcResult) -> (f64, f64) {
    let elapsed_ns = p.end.since(p.start).as_ns().max(1);
    let bytes = p.dirs[1].bytes.max(p.dirs[0].bytes);
    let secs = elapsed_ns as f64 / 1e9;
    (
        bytes as f64 / 1024.0 / secs,
        100.0 * p.sys_ns as f64 / elapsed_ns as f64,
    )
}

/// Bonnie's numbers from a run of [`bonnie_procs`], test by test.
pub fn bonnie_results(r: &RunResult) -> Vec<BonnieResult> {
    BonnieTest::ALL
        .iter()
        .filter_map(|&test| {
            let p = r.procs.iter().find(|p| p.name == test.name())?;
            let (kb_per_s, cpu_pct) = kb_and_cpu(p);
            Some(BonnieResult {
                test,
                kb_per_s,
                cpu_pct,
                elapsed_ns: p.end.since(p.start).as_ns(),
                cpu_ns: p.sys_ns,
            })
        })
        .collect()
}
