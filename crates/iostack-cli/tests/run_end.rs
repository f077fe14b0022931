//! Runs that say what happened: inputs that used to panic, stall or report work
//! that was not done, each as a regression test; no horizon; `--until`.

use std::path::PathBuf;
use std::process::Command;

fn iostack(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_iostack"))
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Write a file under the test's temporary directory; returns its path. Tests
/// running in parallel write the same machine files: each writes a private copy
/// and renames it into place, so a reader never sees a file half written.
fn file(name: &str, text: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let p = dir.join(name);
    let thread = format!("{:?}", std::thread::current().id());
    let tmp = dir.join(format!(
        "{name}.{}.{}",
        std::process::id(),
        thread.replace(['(', ')'], "")
    ));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, &p).unwrap();
    p.display().to_string()
}

fn machine(fs: &str) -> String {
    file(
        &format!("run-end-{fs}.machine"),
        &format!("base = sata-2009\nfs = {fs}\n"),
    )
}

/// `(issued reads, issued writes)` from fio's `issued rwts:` line.
fn issued(report: &str) -> (u64, u64) {
    let l = report
        .lines()
        .find(|l| l.contains("issued rwts: total="))
        .unwrap_or_else(|| panic!("no issued line in\n{report}"));
    let t = l.split("total=").nth(1).unwrap();
    let v: Vec<u64> = t
        .split([',', ' '])
        .take(2)
        .map(|x| x.parse().unwrap())
        .collect();
    (v[0], v[1])
}

/// A buffered write to the whole disk goes through the disk's own page cache
/// (`blkdev_writepage`), on every file system, and reaches sector 0 of the disk
/// itself, not the partition. It was a panic on ext2/ext3 and `no such file
/// 'inode 4294967295'` on ext4/XFS.
#[test]
fn dd_to_the_raw_disk_goes_through_its_page_cache() {
    for fs in ["ext2", "ext3", "ext4", "xfs"] {
        let m = machine(fs);
        let (ok, out, err) = iostack(&["dd", "if=/dev/zero", "of=/dev/sda", "bs=1M", "count=1"]);
        assert!(ok, "{fs}: {err}");
        assert!(err.contains("1048576 bytes") || out.contains("1048576 bytes"));
        let (ok, out, err) = iostack(&[
            "dd",
            "if=/dev/zero",
            "of=/dev/sda",
            "bs=1M",
            "count=1",
            "conv=fsync",
            "--machine",
            &m,
            "--blkparse",
            "-",
        ]);
        assert!(ok, "{fs}: {err}");
        // Every byte written once, to the disk (no partition remap), from 0.
        let mut sectors = 0u64;
        let mut first = u64::MAX;
        for l in out.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() > 9 && f[5] == "Q" && f[6].starts_with('W') {
                first = first.min(f[7].parse().unwrap());
                sectors += f[9].parse::<u64>().unwrap();
            }
            assert!(
                !(f.len() > 5 && f[5] == "A"),
                "{fs}: a whole-disk bio was remapped: {l}"
            );
        }
        assert_eq!((first, sectors), (0, 2048), "{fs}:\n{out}");
    }
}

/// Buffered reads of the whole disk read the disk's pages, sized to the disk;
/// they went to the partition's mapping and past its end ("bio beyond end of
/// partition"). A random read of the whole disk would take days: `--until`.
#[test]
fn buffered_reads_of_the_raw_disk_stay_on_the_disk() {
    let job = file("raw-read.fio", "[dev]\nfilename=/dev/sda\nrw=randread\n");
    let (ok, out, err) = iostack(&[
        "run",
        &job,
        "--machine",
        "sata-2009",
        "--sched",
        "noop",
        "--until",
        "1s",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("iostack: TRUNCATED: stopped at the --until limit, 1.000000000 s"));
    assert!(issued(&out).0 > 10, "{out}");
}

/// fio sizes its random map from the smallest block size over both directions;
/// a read-only job with a larger read size exhausts the blocks it can reach
/// first, and starts a new pass (was a panic).
#[test]
fn random_map_with_mixed_block_sizes() {
    let job = file(
        "randmap.fio",
        "[j]\nrw=randread\nbs=64k,4k\nsize=1m\ndirect=1\ntime_based\nruntime=1\n",
    );
    let (ok, out, err) = iostack(&["run", &job]);
    assert!(ok, "{err}");
    assert!(out.contains("/1000msec)"), "{out}");
    assert!(issued(&out).0 > 16, "more than one pass:\n{out}");
}

/// A back merge that also merged the following request left the request's old
/// back-merge hash entry behind; once freed, a later merge used it.
#[test]
fn mixed_fsync_writers_do_not_use_a_freed_request() {
    let job = file(
        "freed-rq.fio",
        "[global]\nsize=8m\nfilename=f\n[b]\nrw=randrw\nbs=16k\nfsync=32\n[c]\nrw=randrw\nfsync=32\n",
    );
    let (ok, out, err) = iostack(&["run", &job, "--machine", "sata-2009", "--check"]);
    assert!(ok, "{err}");
    assert!(out.contains("b: (groupid=0") && out.contains("c: (groupid=0"));
}

/// No horizon: a job that starts after 100 hours runs (time ran backwards in
/// the report before); with `--until` it is reported as not started.
#[test]
fn a_start_delay_past_a_day_runs_and_until_truncates() {
    let job = file(
        "startdelay.fio",
        "[j]\nrw=randread\ndirect=1\nsize=1m\nstartdelay=100h\n",
    );
    let (ok, out, err) = iostack(&["run", &job]);
    assert!(ok, "{err}");
    assert_eq!(issued(&out), (256, 0), "{out}");
    assert!(!out.contains("TRUNCATED"));
    let (ok, out, err) = iostack(&["run", &job, "--until", "1h"]);
    assert!(ok, "--until is not an error: {err}");
    assert!(
        out.contains("TRUNCATED: stopped at the --until limit, 3600.000000000 s; jobs not finished: j (not started)"),
        "{out}"
    );
    let (ok, out, _) = iostack(&["run", &job, "--until", "1h", "--output-format", "json"]);
    assert!(ok && out.contains("\"truncated\" : \"stopped at the --until limit"));
    for bad in ["0", "-3", "soon"] {
        let (ok, _, err) = iostack(&["run", &job, "--until", bad]);
        assert!(
            !ok && err.contains(&format!("--until {bad}")),
            "{bad}: {err}"
        );
    }
}

/// `--until` with `--check`: a run cut short with I/O in flight is truncated,
/// not a failed invariant (the trace checker panicked with "requests issued but
/// never completed").
#[test]
fn until_with_check_truncates_with_io_in_flight() {
    let job = file(
        "until-check.fio",
        "[w]\nrw=write\nbs=1m\ndirect=1\nsize=64m\nioengine=libaio\niodepth=8\n",
    );
    let (ok, out, err) = iostack(&["run", &job, "--until", "20ms", "--check"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("TRUNCATED: stopped at the --until limit"),
        "{out}"
    );
    let (ok, _, err) = iostack(&["run", &job, "--check"]);
    assert!(ok, "the complete run still drains under the checker: {err}");
}

/// An anticipation longer than the old horizon: the run goes on until the
/// scheduler lets the waiting requests go (was "block layer not idle after all
/// processes finished").
#[test]
fn anticipation_longer_than_a_day_ends_idle() {
    let job = file(
        "antic.fio",
        "[r]\nrw=randread\nsize=4m\nfilename=g\n[w]\nrw=write\nsize=16m\nbs=64k\nfilename=h\n",
    );
    let (ok, out, err) = iostack(&[
        "run",
        &job,
        // Anticipatory exists up to 2.6.32 (the scheduler registry refuses it
        // on the default 2.6.36 profile).
        "--kernel",
        "2.6.32",
        "--sched",
        "anticipatory",
        "--set",
        "iosched/anticipatory/antic_expire=519676051",
        "--set",
        "vm/dirty_writeback_centisecs=766814",
        "--blkparse",
        "antic.blkparse",
    ]);
    assert!(ok, "{err}");
    assert_eq!(issued(&out).0, 1024, "{out}");
    // The writes held back by the anticipation complete when it expires, days
    // after the old 24-hour horizon.
    let trace =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("antic.blkparse"))
            .unwrap();
    let last_c = trace
        .lines()
        .filter(|l| l.split_whitespace().nth(5) == Some("C"))
        .filter_map(|l| l.split_whitespace().nth(3)?.parse::<f64>().ok())
        .fold(0.0, f64::max);
    assert!(last_c > 519_676.0, "last completion at {last_c} s");
}

/// A `time_based` job without `runtime` would never end: refused.
#[test]
fn time_based_without_runtime_is_refused() {
    let job = file(
        "forever.fio",
        "[j]\nrw=randread\ndirect=1\nsize=1m\ntime_based\n",
    );
    let (ok, out, err) = iostack(&["run", &job]);
    assert!(!ok && out.is_empty(), "{out}");
    assert!(
        err.contains("job 'j': time_based without runtime= would never end"),
        "{err}"
    );
}

/// O_DIRECT random writes to a new file: XFS and ext4 (2.6.32+) allocate the
/// holes and do every write; ext4 on 2.6.28 falls back to buffered I/O
/// inside i_size (-ENOTBLK, `__generic_file_aio_write`'s buffered write and
/// `filemap_write_and_wait_range`), and every write is done too, not a short
/// success.
#[test]
fn direct_writes_into_holes() {
    let job = file(
        "dio-holes.fio",
        "[j]\nrw=randwrite\ndirect=1\nsize=256k\nbs=4k\nfilename=newf\n",
    );
    for fs in ["ext4", "xfs"] {
        let (ok, out, err) = iostack(&["run", &job, "--machine", &machine(fs)]);
        assert!(ok, "{fs}: {err}");
        assert_eq!(issued(&out), (0, 64), "{fs}:\n{out}");
    }
    let m = machine("ext4");
    let (ok, out, err) = iostack(&["run", &job, "--machine", &m, "--kernel", "2.6.28"]);
    assert!(ok, "ext4 2.6.28: {err}");
    assert_eq!(issued(&out), (0, 64), "ext4 2.6.28:\n{out}");
}

/// A sync O_DIRECT read that maps to no bios (past the end of the file)
/// completes and the job goes on; its caller was never woken.
#[test]
fn direct_reads_past_eof_complete() {
    let job = file(
        "past-eof.fio",
        "[j]\nrw=read\ndirect=1\nsize=64k\nbs=4k\nfilename=/mnt/test/f\n",
    );
    let (ok, out, err) = iostack(&["run", &job, "--layout", "/mnt/test/f=8k"]);
    assert!(ok, "{err}");
    assert_eq!(issued(&out), (16, 0), "{out}");
}
