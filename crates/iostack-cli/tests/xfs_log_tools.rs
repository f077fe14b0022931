//! fs_mark and iozone on XFS force the log at each fsync (`xfs_fsync`, 2.6.34:
//! one `WRITE_BARRIER` iclog write by the fsync-ing process after its data),
//! and with `fs/xfs/log=0` they write data only.

use std::process::Command;

/// (rwbs, sectors, comm) of each queued write.
fn queued(dir: &std::path::Path, args: &[&str]) -> Vec<(String, u64, String)> {
    std::fs::write(dir.join("x.machine"), "base = sata-2010\nfs = xfs\n").unwrap();
    let mut a: Vec<&str> = args.to_vec();
    a.extend_from_slice(&[
        "--machine",
        "x.machine",
        "--kernel",
        "2.6.34",
        "--ftrace",
        "t.txt",
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_iostack"))
        .current_dir(dir)
        .args(&a)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = std::fs::read_to_string(dir.join("t.txt")).unwrap();
    t.lines()
        .filter_map(|l| {
            let i = l.find("   8,0    ")?;
            let f: Vec<&str> = l[i + 10..].split_whitespace().collect();
            (f.first() == Some(&"Q") && f.get(1)?.contains('W') && f.get(3) == Some(&"+"))
                .then(|| (f[1].to_string(), f[4].parse().unwrap(), f[5].to_string()))
        })
        .collect()
}

#[test]
fn fs_mark_and_iozone_on_xfs_force_the_log_at_each_fsync() {
    let dir = std::env::temp_dir().join(format!("iostack-xfslog-tools-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fs_mark = [
        "fs_mark",
        "-S",
        "1",
        "-n",
        "5",
        "-s",
        "65536",
        "-w",
        "4096",
        "-t",
        "1",
        "-d",
        "/mnt/test/fs_mark",
    ];
    let q = queued(&dir, &fs_mark);
    // Each file: its 64 KiB (WS 128, fsync's WRITE_SYNC_PLUG), then the log
    // force as one ordered write of a few sectors, by fs_mark itself.
    assert_eq!(q.len(), 10, "{q:?}");
    for pair in q.chunks(2) {
        assert_eq!((pair[0].0.as_str(), pair[0].1), ("WS", 128), "{q:?}");
        assert_eq!(pair[1].0, "FWS", "{q:?}");
        assert!((2..=8).contains(&pair[1].1), "{q:?}");
        assert_eq!(pair[1].2, "[fs_mark]");
    }
    let mut off = fs_mark.to_vec();
    off.extend_from_slice(&["--set", "fs/xfs/log=0"]);
    let q = queued(&dir, &off);
    assert!(q.iter().all(|w| w.0 == "WS" && w.1 == 128), "{q:?}");
    // iozone -e: the write pass logs the create, allocation and size (5
    // sectors), the rewrite pass only fsync's FSYNC_TS inode core (2).
    let q = queued(
        &dir,
        &[
            "iozone",
            "-s",
            "64",
            "-e",
            "-f",
            "/mnt/test/iozone.0",
            "-i",
            "0",
        ],
    );
    let log: Vec<u64> = q.iter().filter(|w| w.0 == "FWS").map(|w| w.1).collect();
    assert_eq!(log, [5, 2], "{q:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
