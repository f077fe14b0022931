//! Shared by the tests that hold a request pattern captured on this
//! machine's real kernel (`tests/data/real-6.18`, ftrace's `blk` tracer on
//! loop device 7,0) against the simulator's ftrace output of the same `dd`.
//! Each test binary uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// One trace line of device 7,0.
#[derive(Debug, Clone)]
pub struct Ev {
    /// Who the line is charged to: `dd`, `jbd2`, `kworker` or `irq`.
    pub who: String,
    pub action: String,
    pub rwbs: String,
    pub sector: Option<u64>,
    pub sectors: u64,
}

/// The events of device 7,0 in an ftrace `blk` text (messages left out).
pub fn events(text: &str) -> Vec<Ev> {
    let mut v = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(i) = line.find("   7,0    ") else {
            continue;
        };
        let f: Vec<&str> = line[i + 10..].split_whitespace().collect();
        if f.len() < 2 || f[0] == "m" {
            continue;
        }
        let comm = f.last().unwrap().trim_matches(|c| c == '[' || c == ']');
        let who = match comm {
            "dd" => "dd",
            c if c.starts_with("jbd2/") => "jbd2",
            c if c.starts_with("kworker") || c.starts_with("kblockd") => "kworker",
            _ => "irq",
        };
        let sectors = match (f.get(3), f.get(4)) {
            (Some(&"+"), Some(n)) => n.parse().unwrap_or(0),
            _ => 0,
        };
        v.push(Ev {
            who: who.into(),
            action: f[0].into(),
            rwbs: f[1].into(),
            sector: f.get(2).and_then(|s| s.parse().ok()),
            sectors,
        });
    }
    v
}

/// A captured trace of `tests/data/real-6.18`.
pub fn data(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/real-6.18")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

/// `iostack dd` with `dd`'s operands in `dir`, on the machine file text
/// `machine`, with `extra` options: its ftrace text.
pub fn simulate_dd(dir: &Path, machine: &str, dd: &str, extra: &[&str]) -> String {
    std::fs::write(dir.join("loop.machine"), machine).unwrap();
    let mut args = vec!["dd"];
    args.extend(dd.split_whitespace());
    args.extend_from_slice(&["--machine", "loop.machine"]);
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--ftrace", "t.txt"]);
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

/// (case: the trace file's stem, dd operands, the checks that do not match
/// with the reason).
pub type Case = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// Each case's facts, real against simulated (`facts_of(trace, real)`), in
/// a scratch directory named `tag`: a check matches exactly when no reason
/// says why it does not. Prints the whole comparison.
pub fn compare_cases(
    tag: &str,
    cases: &[Case],
    facts_of: impl Fn(&[Ev], bool) -> Vec<(&'static str, String)>,
    simulate: impl Fn(&Path, &str) -> String,
) {
    let dir = std::env::temp_dir().join(format!("iostack-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut report = Vec::new();
    for &(case, dd, known) in cases {
        let real = facts_of(&events(&data(&format!("{case}.txt"))), true);
        let sim = facts_of(&events(&simulate(&dir, dd)), false);
        for ((what, r), (_, s)) in real.iter().zip(&sim) {
            let reason = known.iter().find(|k| k.0 == *what).map(|k| k.1);
            let same = r == s;
            report.push(format!(
                "{case}: {what}: {}\n    real: {r}\n    sim:  {s}",
                if same { "match" } else { "differs" }
            ));
            assert_eq!(
                same,
                reason.is_none(),
                "{case}: {what}\n real: {r}\n sim:  {s}\n{}",
                reason.unwrap_or("expected to match")
            );
        }
    }
    eprintln!("{}", report.join("\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}
