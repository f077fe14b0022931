//! Issue 16: `iostack sweep GRID.toml --out DIR`: one row per point, job and
//! metric in DIR/jobs.parquet; an interrupted sweep resumes from its journal
//! without re-running finished points, and gives the same file; bad grids are
//! refused naming the file and key.

use std::path::Path;
use std::process::Command;

const JOB: &str = "[j]\nioengine=libaio\ndirect=1\nfilename=/dev/nullb0\nsize=8m\n\
                   rw=randread\nbs=4k\niodepth=4\nio_size=64k\n";

fn sweep(dir: &Path, grid: &str, out: &str) -> std::process::Output {
    std::fs::write(dir.join("j.fio"), JOB).unwrap();
    std::fs::write(dir.join("grid.toml"), grid).unwrap();
    Command::new(env!("CARGO_BIN_EXE_iostack"))
        .args(["sweep", "grid.toml", "--out", out, "--workers", "2"])
        .current_dir(dir)
        .output()
        .unwrap()
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("iostack-sweep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const GRID: &str =
    "job = \"j.fio\"\nmachine = \"null\"\n[grid]\nsched = [\"noop\", \"deadline\"]\n\
                    \"queue/nr_requests\" = [4, 32]\nseed = [1, 2]\n";

#[test]
fn an_interrupted_sweep_resumes_and_gives_the_same_table() {
    let d = tmp("resume");
    let o = sweep(&d, GRID, "full");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let full = std::fs::read(d.join("full/jobs.parquet")).unwrap();
    assert_eq!(&full[..4], b"PAR1");
    let journal = std::fs::read_to_string(d.join("full/points.jsonl")).unwrap();
    assert_eq!(journal.lines().count(), 8);
    // Interrupted after three points, the fourth line cut short.
    std::fs::create_dir_all(d.join("part")).unwrap();
    let lines: Vec<&str> = journal.lines().collect();
    let cut = format!("{}\n{}", lines[..3].join("\n"), &lines[3][..20]);
    std::fs::write(d.join("part/points.jsonl"), cut).unwrap();
    let o = sweep(&d, GRID, "part");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("3 of 8 points already in"), "{err}");
    assert_eq!(std::fs::read(d.join("part/jobs.parquet")).unwrap(), full);
    // Finished points are not run again: a journalled figure is kept as is.
    let forged = lines[0].replacen("\"read.io_bytes\",\"65536\"", "\"read.io_bytes\",\"7\"", 1);
    assert_ne!(forged, lines[0]);
    std::fs::write(d.join("part/points.jsonl"), format!("{forged}\n")).unwrap();
    assert!(sweep(&d, GRID, "part").status.success());
    assert_ne!(std::fs::read(d.join("part/jobs.parquet")).unwrap(), full);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_grids_are_refused_with_file_and_key() {
    let d = tmp("bad");
    for (grid, want) in [
        (
            "job = \"j.fio\"\n[grid]\nbogus = [1]\n",
            "grid.toml: grid key 'bogus': not one of",
        ),
        (
            "job = \"j.fio\"\n[grid]\nseed = []\n",
            "an empty list makes no points",
        ),
        ("[grid]\nseed = [1]\n", "grid.toml: no job"),
        ("job = \"j.fio\"\n", "no [grid] table"),
        ("job = \"j.fio\"\n[grid\n", "grid.toml:2:"),
        (
            "job = \"j.fio\"\nmachine = \"null\"\n[grid]\n\"queue/nr_requests\" = [0]\n",
            "sweep point 0",
        ),
    ] {
        let o = sweep(&d, grid, "o");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{grid}: {err}");
        assert!(err.contains(want), "{grid}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&d);
}
