//! One small write + fsync (and fdatasync) on XFS against this machine's real
//! kernel: ftrace `blk` traces of `xfs_io` on a loop device (6.18,
//! `tests/data/real-6.18/xfs-f*.txt`, see its README) next to the same
//! operations as `iostack dd` on the 6.x profile; and the 2.6.3x pattern from
//! the kernel source's order (`xfs_fsync` in 2.6.32's `xfs_vnodeops.c`,
//! `xlog_sync` → `XFS_BUF_ORDERED` → `WRITE_BARRIER`).
//!
//! The two file systems are made by different mkfs.xfs (6.1's v5 layout there,
//! 2008's geometry in the simulator), so the log writes are compared by their
//! offset from each log's start. Each case is a list of checks; a check that
//! does not match is listed with its reason and fails if it starts matching.

mod common;

use common::{compare_cases, events, simulate_dd, Case, Ev};
use std::path::Path;

/// The real internal log: `xfs_db -c 'sb 0' -c 'p logstart logblocks'`
/// (logstart 65542 = AG 2, block 6, with 20480-block AGs: sector 327728;
/// 16384 blocks).
const REAL_LOG: (u64, u64) = (327_728, 16_384 * 8);
/// The simulator's on the 64 MiB `loop-file` device: four AGs of 4096 blocks
/// (`Xfs::new`), the log of 512 blocks in AG 2 after its 8 reserved blocks:
/// block 8200.
const SIM_LOG: (u64, u64) = (8200 * 8, 512 * 8);

/// What one trace shows, in the terms the checks compare.
fn facts(evs: &[Ev], log: (u64, u64)) -> Vec<(&'static str, String)> {
    let in_log = |e: &Ev| e.sector.is_some_and(|s| s >= log.0 && s < log.0 + log.1);
    let q: Vec<&Ev> = evs.iter().filter(|e| e.action == "Q").collect();
    let data: Vec<String> = q
        .iter()
        .filter(|e| e.rwbs.contains('W') && e.sectors > 0 && !in_log(e))
        .map(|e| format!("{} {}", e.rwbs, e.sectors))
        .collect();
    let logw: Vec<String> = q
        .iter()
        .filter(|e| in_log(e))
        .map(|e| format!("{} {} at +{}", e.rwbs, e.sectors, e.sector.unwrap() - log.0))
        .collect();
    let flush_q: Vec<String> = q
        .iter()
        .filter(|e| e.sectors == 0 && e.rwbs.starts_with('F'))
        .map(|e| e.rwbs.clone())
        .collect();
    // After the last data write's completion: the dispatches, as kinds.
    let at = evs
        .iter()
        .rposition(|e| e.action == "C" && e.sectors > 0 && !in_log(e) && e.rwbs.contains('W'));
    let after: Vec<String> = evs
        .iter()
        .skip(at.map_or(evs.len(), |a| a + 1))
        .filter(|e| e.action == "D")
        .map(|e| {
            if e.sectors == 0 {
                "flush".to_string()
            } else if in_log(e) {
                format!("log {}", e.rwbs)
            } else {
                format!("io {}", e.rwbs)
            }
        })
        .collect();
    let reads = q.iter().filter(|e| e.rwbs.contains('R')).count();
    vec![
        ("the data write (Q)", data.join(", ")),
        (
            "log writes (Q): rwbs, sectors, offset in the log",
            logw.join(", "),
        ),
        (
            "a flush of its own (Q of an empty flush)",
            flush_q.join(", "),
        ),
        (
            "dispatches after the data write completed",
            after.join(", "),
        ),
        ("metadata reads", reads.to_string()),
    ]
}

fn simulate(dir: &Path, kernel: &str, dd: &str) -> String {
    let machine = "base = null\ndevice = loop-file\ndisk_name = loop0\nmajor = 7\nminor = 0\n\
                   cpus = 2\nfs = xfs\nfs_block_size = 4096\npartition = none\nmount = /mnt/test\n";
    let sched = if kernel == "6.x" { "none" } else { "noop" };
    simulate_dd(dir, machine, dd, &["--kernel", kernel, "--sched", sched])
}

const NEW_LOG: &str = "the new file's checkpoint: 6.18 writes 6 sectors, the model 5 \
     (record header, 40 bytes of transaction header, AGI, inode and free-inode btree \
     records, the new inode, the root directory's short-form entry, AGF, both \
     free-space btrees, the commit record: 1816 bytes); the kernel's btree updates \
     dirty more 128-byte chunks than one record's (and the header's) and the \
     difference, some 300 bytes, was not identified";
const READS: &str = "the kernel reads the AGI, AGF, free-space and inode btree blocks and \
     the inode cluster cold after mount; the simulator's file system holds its \
     metadata in memory";

const CASES: &[Case] = &[
    (
        "xfs-fsync-new",
        "if=/dev/zero of=/mnt/test/f bs=4k count=1 conv=fsync",
        &[
            ("log writes (Q): rwbs, sectors, offset in the log", NEW_LOG),
            ("metadata reads", READS),
        ],
    ),
    (
        "xfs-fsync-rewrite",
        "if=/dev/zero of=/mnt/test/f bs=4k count=1 conv=notrunc,fsync --layout /mnt/test/f=4k",
        &[(
            "log writes (Q): rwbs, sectors, offset in the log",
            "the real rewrite came after the first xfs_io's checkpoint (6 sectors \
                 further into the log: +8); each simulation mounts afresh, so its \
                 checkpoint is at +2",
        )],
    ),
    (
        "xfs-fdatasync-rewrite",
        "if=/dev/zero of=/mnt/test/f bs=4k count=1 conv=notrunc,fdatasync --layout /mnt/test/f=4k",
        &[],
    ),
];

#[test]
fn xfs_fsync_request_pattern_against_the_real_kernel() {
    let log = |real: bool| if real { REAL_LOG } else { SIM_LOG };
    compare_cases(
        "real6-xfs",
        CASES,
        |evs, real| facts(evs, log(real)),
        |dir, dd| simulate(dir, "6.x", dd),
    );
}

/// 2.6.32 from the source (`xfs_fsync`, `xlog_sync`, `_xfs_buf_ioapply`,
/// `WRITE_BARRIER` = `WRITE_SYNC | BIO_RW_BARRIER`): the data write, then
/// fsync's FSYNC_TS transaction forced as one barrier log write by the fsync
/// caller, at the head after mkfs's unmount record; no flush of its own
/// (`log_flushed`). With `fs/xfs/barrier=0` the log write is `WRITE_SYNC`
/// and nothing flushes; a rewrite with nothing new (fsync twice) writes
/// nothing the second time and flushes nothing (2.6.32's `changed = 0`).
#[test]
fn xfs_fsync_pattern_of_2_6_32_from_the_source() {
    let dir = std::env::temp_dir().join(format!("iostack-xfs2632-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dd = "if=/dev/zero of=/mnt/test/f bs=4k count=1 conv=fsync";
    let f = facts(&events(&simulate(&dir, "2.6.32", dd)), SIM_LOG);
    assert_eq!(f[0].1, "WS 8", "fsync's data write: WRITE_SYNC_PLUG");
    // One iclog, barrier: xfs_create (52 bytes of start record, transaction
    // header and commit record; AGI 176; inobt 176; the inode 176; the root
    // with its short-form entry 204), the allocation (52; AGF 176; bnobt 176;
    // cntbt 316; the inode with its extent 204), the FSYNC_TS core (52 + 176):
    // 1936 bytes behind the 512-byte record header, 5 sectors.
    assert_eq!(f[1].1, "FWS 5 at +2");
    assert_eq!(
        f[2].1, "",
        "no flush of fsync's own: the log write was ordered"
    );
    let mut args: Vec<&str> = vec!["--set", "fs/xfs/barrier=0"];
    args.extend(dd.split_whitespace());
    let nb = facts(&events(&simulate(&dir, "2.6.32", &args.join(" "))), SIM_LOG);
    assert_eq!(
        nb[1].1, "WS 5 at +2",
        "nobarrier: _XBF_RUN_QUEUES → WRITE_SYNC"
    );
    assert_eq!(nb[2].1, "");
    assert!(!nb[3].1.contains("flush"), "{}", nb[3].1);
    std::fs::remove_dir_all(&dir).unwrap();
}
