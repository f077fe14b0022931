//! Seed 000 as a user runs it: the direct writer's collapse under the for-2.6.33
//! branch (REQ_NOIDLE on O_DIRECT writes) and its recovery with
//! WRITE_ODIRECT_PLUG must come out of CFQ's idling rules, and the blktrace of
//! the regressed variant must show why: the writer's queue is expired after each
//! of its requests, in CFQ's own trace messages.

use std::process::Command;

fn iostack(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_iostack"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("run iostack");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

fn metric(json: &str, variant: &str, name: &str) -> f64 {
    // One record per `{ ... }`, fields one per line.
    for rec in json.split('}') {
        let field = |k: &str| {
            rec.lines()
                .find(|l| l.trim_start().starts_with(&format!("\"{k}\":")))
                .map(|l| {
                    l.split_once(':')
                        .unwrap()
                        .1
                        .trim()
                        .trim_end_matches(',')
                        .trim_matches('"')
                        .to_string()
                })
        };
        if field("variant").as_deref() == Some(variant) && field("metric").as_deref() == Some(name)
        {
            return field("simulated").unwrap().parse().expect("number");
        }
    }
    panic!("no {variant}/{name} in {json}");
}

#[test]
fn writer_collapses_with_noidle_and_recovers_with_the_fix() {
    let json = iostack(&["reproduce", "seed-000", "--json"]);
    let w = |v| metric(&json, v, "writer_KBps");
    let r = |v| metric(&json, v, "readers_MBps");
    // The regression: two orders of magnitude, as published (2968 -> 19 KB/s).
    assert!(w("for-2.6.33") < 100.0, "{json}");
    assert!(w("2.6.32-rc7") > 30.0 * w("for-2.6.33"), "{json}");
    assert!(w("for-2.6.33-fixed") > 30.0 * w("for-2.6.33"), "{json}");
    // The readers gain what the writer loses.
    assert!(r("for-2.6.33") > 1.2 * r("for-2.6.33-fixed"), "{json}");
    // Deadline and noop have no idling: the writer is never starved.
    assert!(w("deadline") > 30.0 * w("for-2.6.33"), "{json}");
}

/// The writer's CFQ queue (`cfq1000S`) in a blkparse text: per activation, how
/// many requests it dispatched before the slice ended, and how the slice ended.
fn writer_slices(text: &str) -> Vec<(u32, bool, bool)> {
    let mut out = Vec::new();
    let mut cur: Option<(u32, bool, bool)> = None;
    for l in text.lines() {
        if !l.contains("cfq1000S ") {
            continue;
        }
        if l.ends_with("set_active") {
            if let Some(c) = cur.take() {
                out.push(c);
            }
            cur = Some((0, false, false));
        } else if let Some(c) = cur.as_mut() {
            if l.ends_with("dispatched a request") {
                c.0 += 1;
            } else if l.contains("arm_idle") {
                c.1 = true;
            } else if l.contains("slice expired") {
                c.2 = true;
            }
        }
    }
    out
}

#[test]
fn regressed_trace_shows_the_writer_expiring_after_each_request() {
    let dir = std::env::temp_dir().join(format!("iostack-seed000-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let m = dir.join("m.txt");
    std::fs::write(
        &m,
        "base = sata-2009\nmount = /mnt/sdc\ndevice = sata-2009-seed000\n",
    )
    .unwrap();
    let run = |flags: &str, version: &str, name: &str| {
        let out = dir.join(name);
        iostack(&[
            "run",
            "experiments/seed-000.fio",
            "--machine",
            m.to_str().unwrap(),
            "--kernel",
            "2.6.33",
            "--set",
            &format!("dio/write_flags={flags}"),
            "--set",
            &format!("iosched/cfq/version={version}"),
            "--blkparse",
            out.to_str().unwrap(),
        ]);
        std::fs::read_to_string(out).unwrap()
    };
    let bad = writer_slices(&run("WRITE_SYNC_PLUG", "for-2.6.33", "bad.txt"));
    assert!(bad.len() > 20, "{bad:?}");
    for (n, armed, expired) in &bad[..bad.len() - 1] {
        assert_eq!(*n, 1, "one request per slice: {bad:?}");
        assert!(!armed && *expired, "no idling, expired: {bad:?}");
    }
    let good = writer_slices(&run("WRITE_ODIRECT_PLUG", "for-2.6.33", "good.txt"));
    let many = good.iter().filter(|s| s.0 > 10 && s.1).count();
    assert!(
        many * 2 > good.len(),
        "the fixed writer idles and keeps its slice: {good:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
