//! The start of the validation suite against this machine's real kernel: ftrace
//! `blk` traces of O_DIRECT dd runs on a loop device (6.18,
//! `tests/data/real-6.18/`, see its README) next to the same commands on the
//! 6.x profile with the loop device's limits (`loop-file` preset, scheduler
//! none). The request shapes (action, sector, size, unplug depth) must agree
//! event for event; the rwbs flags are compared apart. Cases that do not match
//! yet are listed with the reason, and fail if they start matching (move them).

use std::path::{Path, PathBuf};
use std::process::Command;

/// One trace event's shape: the action and what follows it, flags aside.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shape {
    action: String,
    what: String,
}

/// The `blk` tracer lines of device 7,0: (shape, rwbs).
fn shapes(text: &str) -> Vec<(Shape, String)> {
    let mut v = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(i) = line.find("   7,0    ") else {
            continue;
        };
        let mut it = line[i + 10..].split_whitespace();
        let action = it.next().unwrap_or("").to_string();
        if action == "m" {
            continue;
        }
        let rwbs = it.next().unwrap_or("").to_string();
        let rest: Vec<&str> = it.collect();
        let what = match action.as_str() {
            // "P N [dd]", "U N [dd] 1": the depth is what counts.
            "P" => String::new(),
            "U" | "UT" => rest.last().copied().unwrap_or("").to_string(),
            // "sector + n [comm]" or "sector / split [comm]".
            _ => rest.iter().take(3).copied().collect::<Vec<_>>().join(" "),
        };
        v.push((Shape { action, what }, rwbs));
    }
    v
}

fn data(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/real-6.18")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

fn simulate(dir: &Path, dd: &[&str]) -> String {
    std::fs::write(
        dir.join("loop.machine"),
        "base = null\ndevice = loop-file\ndisk_name = loop0\nmajor = 7\nminor = 0\ncpus = 2\n",
    )
    .unwrap();
    let mut args = vec!["dd"];
    args.extend_from_slice(dd);
    args.extend_from_slice(&[
        "--machine",
        "loop.machine",
        "--kernel",
        "6.x",
        "--sched",
        "none",
        // The 6.x default (BLK_DEF_MAX_SECTORS_CAP, 1280 KiB), as the loop
        // device shows it.
        "--set",
        "queue/max_sectors_kb=1280",
        "--ftrace",
        "t.txt",
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_iostack"))
        .current_dir(dir)
        .args(&args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(dir.join("t.txt")).unwrap()
}

/// (case, dd operands, whether the shapes match, the reason when not).
const CASES: &[(&str, &str, bool, &str)] = &[
    (
        "dread4k",
        "if=/dev/loop0 of=/dev/null iflag=direct bs=4k count=8",
        true,
        "",
    ),
    (
        "dread64k",
        "if=/dev/loop0 of=/dev/null iflag=direct bs=64k count=4",
        true,
        "",
    ),
    (
        "dwrite64k",
        "if=/dev/zero of=/dev/loop0 oflag=direct bs=64k count=4",
        true,
        "",
    ),
    (
        "dread2m",
        "if=/dev/loop0 of=/dev/null iflag=direct bs=2M count=2",
        false,
        "dd's buffer had two pairs of physically adjacent pages among its first 258: \
         bio_iov_iter_get_pages joined each pair into one bvec (bvec_try_merge_page), \
         so the first bio took 258 pages (2064 sectors) in BIO_MAX_VECS bvecs and \
         split after 128 segments (1032 sectors); where the page allocator places a \
         user buffer is not simulated (every page is its own bvec: 2048 and 1024)",
    ),
    (
        "dwrite2m",
        "if=/dev/zero of=/dev/loop0 oflag=direct bs=2M count=2",
        true,
        "",
    ),
];

#[test]
fn o_direct_request_shapes_match_the_real_kernel() {
    let dir = std::env::temp_dir().join(format!("iostack-real6-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut report = Vec::new();
    for &(case, dd, want_match, why) in CASES {
        let real = shapes(&data(&format!("{case}.txt")));
        let ops: Vec<&str> = dd.split_whitespace().collect();
        let sim = shapes(&simulate(&dir, &ops));
        assert!(!real.is_empty() && !sim.is_empty(), "{case}: empty trace");
        let same = real.iter().zip(&sim).filter(|(a, b)| a.0 == b.0).count();
        let flags = real
            .iter()
            .zip(&sim)
            .filter(|(a, b)| a.0 == b.0 && a.1 == b.1)
            .count();
        // Where the shapes agree the flags must too (RS: the simple path's
        // submit_bio_wait; WS: dio_bio_write_op; R: the multi-bio path).
        if same == real.len() {
            assert_eq!(flags, same, "{case}: flags differ");
        }
        let shapes_match = real.len() == sim.len() && same == real.len();
        report.push(format!(
            "{case}: shapes {same}/{} (sim {} events), flags {flags}/{}",
            real.len(),
            sim.len(),
            real.len()
        ));
        let r: Vec<_> = real.iter().map(|x| &x.0).collect();
        let s: Vec<_> = sim.iter().map(|x| &x.0).collect();
        assert_eq!(
            shapes_match,
            want_match,
            "{case}: real {r:?}\nsim {s:?}\n{}",
            if want_match { "" } else { why }
        );
    }
    eprintln!("{}", report.join("\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}
