//! The real tools as judges of a simulated run's trace files: Debian's blkparse
//! reads the blktrace files of `iostack dd`/`iostack run` and prints exactly what
//! iostack's own blkparse text says, and btt reads the merged dump without a
//! complaint. Fails if the tools are missing (CI installs them) unless
//! IOSTACK_SKIP_REAL_TOOLS=1.

use std::path::{Path, PathBuf};
use std::process::Command;

fn tool(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(format!("/usr/bin/{name}"));
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var("IOSTACK_SKIP_REAL_TOOLS").as_deref() == Ok("1"),
        "{name} is not installed (run scripts/setup, or set IOSTACK_SKIP_REAL_TOOLS=1)"
    );
    None
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iostack-rt-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn iostack(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_iostack"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn judge(dir: &Path) {
    let (Some(blkparse), Some(btt)) = (tool("blkparse"), tool("btt")) else {
        return;
    };
    let real = Command::new(&blkparse)
        .current_dir(dir)
        .args(["-i", "t"])
        .output()
        .unwrap();
    assert!(real.status.success());
    let ours = std::fs::read_to_string(dir.join("t.txt")).unwrap();
    assert_eq!(String::from_utf8(real.stdout).unwrap(), ours);
    let dump = Command::new(&blkparse)
        .current_dir(dir)
        .args(["-i", "t", "-d", "t.bin", "-O"])
        .output()
        .unwrap();
    assert!(dump.status.success());
    let b = Command::new(&btt)
        .current_dir(dir)
        .args(["-i", "t.bin"])
        .output()
        .unwrap();
    assert!(b.status.success());
    assert!(
        b.stderr.is_empty(),
        "btt: {}",
        String::from_utf8_lossy(&b.stderr)
    );
    let text = String::from_utf8(b.stdout).unwrap();
    assert!(text.contains("Q2C"), "{text}");
}

#[test]
fn seed002_dd_trace_is_read_by_blkparse_and_btt() {
    let d = tmpdir("dd");
    iostack(
        &d,
        &[
            "dd",
            "if=/mnt/test/test-dd1",
            "of=/dev/null",
            "iflag=direct",
            "bs=64k",
            "count=1",
            "--machine",
            "s390-ess",
            "--kernel",
            "2.6.36",
            "--layout",
            "/mnt/test/test-dd1=64M@16384",
            "--blktrace",
            "t",
            "--blkparse",
            "t.txt",
        ],
    );
    judge(&d);
    let text = std::fs::read_to_string(d.join("t.txt")).unwrap();
    assert_eq!(text.matches(" M   R ").count(), 10, "{text}");
    assert_eq!(text.matches(" D   R ").count(), 2);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn fio_hdd_trace_is_read_by_blkparse_and_btt() {
    let d = tmpdir("fio");
    std::fs::write(
        d.join("j.fio"),
        "[global]\nioengine=libaio\ndirect=1\nbs=4k\nsize=16m\n\n[r]\nrw=randread\niodepth=8\nio_size=2m\n\n[w]\nrw=write\nbs=64k\n",
    )
    .unwrap();
    let out = iostack(
        &d,
        &[
            "run",
            "j.fio",
            "--machine",
            "sata-2009",
            "--sched",
            "deadline",
            "--blktrace",
            "t",
            "--blkparse",
            "t.txt",
        ],
    );
    assert!(out.contains("Run status group 0 (all jobs):"), "{out}");
    judge(&d);
    std::fs::remove_dir_all(&d).unwrap();
}

/// The blk-mq trace of the 6.x profile (Q, G, P, U with its depth, I, D, C, and
/// merges; no S, tag waits are not traced) on the NVMe preset, under none and
/// mq-deadline: blkparse prints what iostack's blkparse text says, btt reads
/// it.
#[test]
fn blk_mq_trace_is_read_by_blkparse_and_btt() {
    for sched in ["none", "mq-deadline"] {
        let d = tmpdir(&format!("mq-{sched}"));
        std::fs::write(
            d.join("j.fio"),
            "[global]\nioengine=libaio\ndirect=1\nbs=4k\nsize=16m\nfilename=/dev/nvme0n1\n\n\
             [r]\nrw=randread\niodepth=64\nio_size=2m\n\n[w]\nrw=write\nbs=4k\niodepth=16\nio_size=1m\n",
        )
        .unwrap();
        iostack(
            &d,
            &[
                "run",
                "j.fio",
                "--machine",
                "nvme-2024",
                "--kernel",
                "6.x",
                "--sched",
                sched,
                "--blktrace",
                "t",
                "--blkparse",
                "t.txt",
            ],
        );
        judge(&d);
        let text = std::fs::read_to_string(d.join("t.txt")).unwrap();
        for a in [" Q ", " G ", " P ", " U ", " D ", " C "] {
            assert!(text.contains(a), "{sched}: no{a}");
        }
        assert!(!text.contains("  S  "), "{sched}: 6.x traces no sleep");
        assert_eq!(text.contains(" I "), sched == "mq-deadline", "{sched}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
