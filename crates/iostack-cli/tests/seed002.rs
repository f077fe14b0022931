//! Seed 002 as a user runs it: `iostack reproduce seed-002` must print, for the
//! 2.6.36 variant, the event sequence of the seed's published ftrace `blk` trace,
//! and for the RFC patch the "usual behaviour" trace: same actions, RWBS, sizes,
//! sector offsets, remap lines, unplug depths and tasks. Timestamps are not compared
//! (the device model is calibrated, the order of events is the claim).

use iostack_report::ftrace::{parse_ftrace_line, FtraceLine};
use std::process::Command;

fn reproduce(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_iostack"))
        .arg("reproduce")
        .args(args)
        .output()
        .expect("run iostack");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

/// The trace lines printed under `-- variant NAME`.
fn variant_trace(text: &str, name: &str) -> Vec<FtraceLine> {
    let head = format!("-- variant {name} (");
    let start = text
        .find(&head)
        .unwrap_or_else(|| panic!("no variant {name} in:\n{text}"));
    text[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| parse_ftrace_line(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
        .collect()
}

/// What the comparison covers: everything but time and the CPU of completions.
fn key(lines: &[FtraceLine]) -> Vec<String> {
    let base = lines.first().map(|l| l.sector.unwrap_or(0)).unwrap_or(0);
    lines
        .iter()
        .map(|l| {
            let rel = l.sector.map(|s| s as i64 - base as i64);
            format!(
                "{}-{} {}:{} {} {} {:?} +{:?} remap={:?} depth={:?} task={:?} err={:?}",
                l.comm,
                if l.pid == 0 { "irq" } else { "task" },
                l.dev.major,
                l.dev.minor,
                l.action,
                l.rwbs,
                rel,
                l.blocks,
                l.remap_from
                    .map(|(d, s)| (d.major, d.minor, s as i64 - base as i64)),
                l.unplug_depth,
                l.task,
                l.error,
            )
        })
        .collect()
}

fn published(file: &str) -> Vec<FtraceLine> {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| parse_ftrace_line(l).unwrap())
        .collect()
}

#[test]
fn the_2_6_36_trace_matches_the_seed() {
    let text = reproduce(&["seed-002"]);
    let sim = variant_trace(&text, "2.6.36");
    let seed = published("seed002-2.6.36.ftrace");
    assert_eq!(key(&sim), key(&seed));
    // Absolute sectors too: the file sits where the seed's did.
    assert_eq!(sim[0].sector, seed[0].sector);
}

#[test]
fn the_rfc_patch_gives_the_usual_behaviour() {
    let text = reproduce(&["seed-002"]);
    let seed = published("seed002-usual.ftrace");
    let sim = variant_trace(&text, "rfc-patch");
    assert_eq!(key(&sim), key(&seed), "variant rfc-patch");
    // 3.10 builds the same two bios, but plugs per task (2.6.39+): both
    // requests wait on dd's plug and are inserted (I) together at
    // blk_finish_plug, just before U; every other event is the seed's.
    let sim = key(&variant_trace(&text, "3.10"));
    let not_insert = |k: &&String| !k.contains(" I R ");
    let strip = |v: &[String]| v.iter().filter(not_insert).cloned().collect::<Vec<_>>();
    assert_eq!(
        strip(&sim),
        strip(&key(&seed)),
        "variant 3.10 without its I events"
    );
    let u = sim.iter().position(|k| k.contains(" U N ")).expect("U");
    assert!(sim[u - 2].contains(" I R Some(0) +Some(96)"), "{sim:?}");
    assert!(sim[u - 1].contains(" I R Some(104) +Some(32)"), "{sim:?}");
}

#[test]
fn json_records_carry_the_published_numbers() {
    let text = reproduce(&["seed-002", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let recs = v.as_array().unwrap();
    let get = |variant: &str, metric: &str| {
        recs.iter()
            .find(|r| r["variant"] == variant && r["metric"] == metric)
            .unwrap_or_else(|| panic!("no {variant}/{metric}"))
            .clone()
    };
    for (variant, metric, published) in [
        ("2.6.36", "queued_bios", 12.0),
        ("rfc-patch", "queued_bios", 2.0),
        ("2.6.36", "dispatched_requests", 2.0),
        ("rfc-patch", "dispatched_requests", 2.0),
        ("2.6.36", "merges", 10.0),
        ("rfc-patch", "merges", 0.0),
    ] {
        let r = get(variant, metric);
        assert_eq!(r["experiment"], "seed-002");
        assert_eq!(r["published"].as_f64(), Some(published));
        assert_eq!(
            r["simulated"].as_f64(),
            Some(published),
            "{variant}/{metric}"
        );
    }
    assert!(get("3.10", "queued_bios")["published"].is_null());
}

#[test]
fn trace_dir_gets_blktrace_files_per_variant() {
    let dir = std::env::temp_dir().join(format!("iostack-td-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    reproduce(&["seed-002", "--trace-dir", dir.to_str().unwrap()]);
    for v in ["2.6.36", "rfc-patch", "3.10"] {
        let f = dir.join("seed-002").join(v).join("trace.blktrace.0");
        assert!(f.is_file(), "{}", f.display());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
