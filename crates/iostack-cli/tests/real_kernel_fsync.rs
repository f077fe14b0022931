//! One `write` + `fsync` on ext4 (jbd2, `data=ordered`, barriers) against this
//! machine's real kernel: ftrace `blk` traces of `dd conv=fsync` on a loop
//! device (6.18, `tests/data/real-6.18/ext4-fsync-*.txt`, see its README) next
//! to the same commands on the 6.x profile with `fs/ext4/journal=1`.
//!
//! The two file systems are laid out by different mke2fs versions (1.47 with
//! 64bit and metadata_csum there, 1.41's layout in the simulator), so sectors
//! are compared through what they are: the data write, and the journal's
//! blocks counted from the journal's start through each layout's journal
//! extents. Each case is a list of checks; a check that does not match is
//! listed with its reason and fails if it starts matching (move it).

mod common;

use common::{compare_cases, simulate_dd, Case, Ev};
use std::path::Path;

/// The real journal inode's runs `(fs block, blocks)` (debugfs `stat <8>`).
const REAL_JOURNAL: &[(u64, u64)] = &[(15, 10), (26, 15), (1066, 999)];
/// The simulator's: mke2fs 1.41's placement on the same 64 MiB device
/// (`Ext4::journal_runs`).
const SIM_JOURNAL: &[(u64, u64)] = &[(12, 9), (22, 15), (549, 1000)];

/// The journal block of a sector through the journal's runs.
fn jblock(sector: u64, runs: &[(u64, u64)]) -> Option<u64> {
    let b = sector / 8;
    let mut at = 0;
    for &(start, len) in runs {
        if (start..start + len).contains(&b) {
            return Some(at + b - start);
        }
        at += len;
    }
    None
}

/// What one trace shows, in the terms the checks compare.
fn facts(evs: &[Ev], runs: &[(u64, u64)]) -> Vec<(&'static str, String)> {
    let j = |e: &Ev| e.sector.and_then(|s| jblock(s, runs));
    let q = |e: &&Ev| e.action == "Q";
    let data: Vec<String> = evs
        .iter()
        .filter(q)
        .filter(|e| e.who == "dd" && e.rwbs.contains('W'))
        .map(|e| format!("{} {}", e.rwbs, e.sectors))
        .collect();
    let sb: Vec<String> = evs
        .iter()
        .filter(q)
        .filter(|e| e.who == "jbd2" && j(e) == Some(0))
        .map(|e| e.rwbs.clone())
        .collect();
    let log: Vec<&Ev> = evs
        .iter()
        .filter(q)
        .filter(|e| e.who == "jbd2" && j(e).is_some_and(|b| b > 0) && !e.rwbs.starts_with('F'))
        .collect();
    let commit: Vec<&Ev> = evs
        .iter()
        .filter(q)
        .filter(|e| e.who == "jbd2" && e.rwbs.starts_with('F'))
        .collect();
    let log_d: Vec<String> = evs
        .iter()
        .filter(|e| e.action == "D" && e.who == "jbd2" && j(e).is_some_and(|b| b > 0))
        .map(|e| format!("{} {}", e.rwbs, e.sectors))
        .collect();
    let after_commit = |with_rwbs: bool| -> Vec<String> {
        let at = evs
            .iter()
            .position(|e| e.action == "Q" && e.rwbs.starts_with('F'));
        evs.iter()
            .skip(at.map_or(evs.len(), |a| a + 2))
            .map(|e| {
                let flush = e.sectors == 0 && !e.rwbs.contains('S');
                let kind = if flush { "flush" } else { "io" };
                if with_rwbs {
                    format!("{} {}", e.action, e.rwbs)
                } else {
                    format!("{} {kind}", e.action)
                }
            })
            .collect()
    };
    let contiguous = {
        let last = log.iter().filter_map(|e| j(e)).max();
        let c = commit.first().and_then(|e| j(e));
        matches!((last, c), (Some(l), Some(c)) if c == l + 1)
    };
    let reads = evs
        .iter()
        .filter(|e| e.action == "Q" && e.rwbs.contains('R'))
        .count();
    vec![
        ("the fsync-ing task's data write (Q)", data.join(", ")),
        (
            "journal superblock write (Q at journal block 0)",
            sb.join(", "),
        ),
        (
            "log blocks submitted: descriptor and metadata (Q)",
            log.iter()
                .map(|e| e.rwbs.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "log requests dispatched (D, plugged and merged)",
            log_d.join(", "),
        ),
        (
            "commit block (Q), right after the last log block",
            format!(
                "{} {contiguous}",
                commit
                    .iter()
                    .map(|e| e.rwbs.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
        (
            "after the commit block's Q and G: the flush sequence",
            after_commit(false).join(", "),
        ),
        ("the flush sequence's rwbs", after_commit(true).join(", ")),
        ("metadata reads", reads.to_string()),
    ]
}

fn simulate(dir: &Path, dd: &str) -> String {
    let machine = "base = null\ndevice = loop-file\ndisk_name = loop0\nmajor = 7\nminor = 0\n\
                   cpus = 2\nfs = ext4\n";
    let extra = [
        "--kernel",
        "6.x",
        "--sched",
        "none",
        "--set",
        "fs/ext4/journal=1",
    ];
    simulate_dd(dir, machine, dd, &extra)
}

const SB: &str = "6.18 also journals the superblock (FS block 0) for the new file; the \
                  path that dirties it was not identified, so the simulator logs five \
                  metadata blocks where the kernel logs six";
const FN: &str = "6.x's flush request is REQ_OP_FLUSH (rwbs FN); the simulator's blk-mq \
                  flush request carries WRITE and prints FW";

/// (case, trace file, dd operands, checks that do not match with the reason).
const CASES: &[Case] = &[
    (
        "ext4-fsync-new",
        "if=/dev/zero of=/mnt/test/f bs=4k count=1 conv=fsync",
        &[
            ("log blocks submitted: descriptor and metadata (Q)", SB),
            ("log requests dispatched (D, plugged and merged)", SB),
            ("the flush sequence's rwbs", FN),
            (
                "metadata reads",
                "the kernel reads the root directory, the inode bitmap and the block \
                 bitmap cold after mount; the simulator's file system holds its \
                 metadata in memory",
            ),
        ],
    ),
    (
        "ext4-fsync-rewrite",
        "if=/dev/zero of=/mnt/test/f bs=4k count=1 conv=notrunc,fsync",
        &[
            (
                "journal superblock write (Q at journal block 0)",
                "each simulation mounts afresh, so its first commit writes the journal \
                 superblock (JBD2_FLUSHED); the real rewrite came after the first dd's \
                 commit",
            ),
            (
                "log requests dispatched (D, plugged and merged)",
                "the real log crosses the journal inode's extent break (journal block 9 \
                 at FS block 24, 10 at 26) and dispatches two requests; mke2fs 1.41's \
                 layout in the simulator has its break elsewhere and one merged request",
            ),
            ("the flush sequence's rwbs", FN),
        ],
    ),
];

#[test]
fn ext4_fsync_request_pattern_against_the_real_kernel() {
    let journal = |real: bool| if real { REAL_JOURNAL } else { SIM_JOURNAL };
    compare_cases(
        "real6-fsync",
        CASES,
        |evs, real| facts(evs, journal(real)),
        simulate,
    );
}
