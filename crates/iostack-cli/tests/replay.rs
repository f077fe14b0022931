//! `iostack replay` and fio's `read_iolog`: a run's own blktrace replays into
//! the same request stream; traces in the real blktrace binary format (from
//! the reference's `mk_blktrace.py`, tests/data/replay) replay with fio's
//! timing; text iologs replay their offsets and delays.

use std::path::{Path, PathBuf};
use std::process::Command;

fn iostack(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_iostack"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iostack-replay-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One blkparse line's (time ns, action, direction letter, sector, sectors).
type Ev = (u64, String, char, u64, u64);

fn events(blkparse: &Path, action: &str) -> Vec<Ev> {
    let text = std::fs::read_to_string(blkparse).unwrap();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 10 || f[5] != action || f[8] != "+" {
                return None;
            }
            let (s, ns) = f[3].split_once('.')?;
            let t = s.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?;
            let dir = f[6].chars().find(|c| "RWD".contains(*c))?;
            Some((
                t,
                f[5].to_string(),
                dir,
                f[7].parse().ok()?,
                f[9].parse().ok()?,
            ))
        })
        .collect()
}

/// (direction, sector, sectors) of a run's dispatches.
fn stream(evs: &[Ev]) -> Vec<(char, u64, u64)> {
    evs.iter().map(|e| (e.2, e.3, e.4)).collect()
}

fn run_ok(args: &[&str]) -> String {
    let (ok, out, err) = iostack(args);
    assert!(ok, "iostack {args:?} failed: {err}");
    out
}

#[test]
fn a_runs_blktrace_replays_into_the_same_request_stream() {
    let d = tmpdir("roundtrip");
    // Random async reads of the raw disk, then of a file on the (partitioned)
    // file system, then synchronous sequential writes: one bio per I/O.
    let job = d.join("j.fio");
    std::fs::write(
        &job,
        "[raw]\nfilename=/dev/sda\nrw=randread\nbs=4k\nsize=256m\ndirect=1\n\
         ioengine=libaio\niodepth=2\niodepth=4\nnumber_ios=150\n\
         [file]\nstonewall\nrw=randread\nbs=4k\nsize=16m\ndirect=1\nioengine=libaio\niodepth=2\n\
         iodepth=8\nnumber_ios=150\n\
         [seq]\nstonewall\nfilename=/dev/sda\noffset=1g\nrw=write\nbs=8k\nsize=400k\ndirect=1\n",
    )
    .unwrap();
    let (a, b) = (d.join("a"), d.join("b"));
    let (at, bt) = (d.join("a.txt"), d.join("b.txt"));
    let s = |p: &Path| p.to_str().unwrap().to_string();
    run_ok(&["run", &s(&job), "--blktrace", &s(&a), "--blkparse", &s(&at)]);
    let out = run_ok(&[
        "replay",
        &s(&a),
        "--blktrace",
        &s(&b),
        "--blkparse",
        &s(&bt),
    ]);
    assert!(out.contains("issued rwts: total=300,50,0,0"), "{out}");
    let (orig, again) = (events(&at, "D"), events(&bt, "D"));
    assert_eq!(orig.len(), 350);
    assert_eq!(stream(&orig), stream(&again));
    // The replay's own trace replays into the same stream again.
    let out = run_ok(&["replay", &s(&b), "--blkparse", &s(&at)]);
    assert!(out.contains("issued rwts: total=300,50,0,0"), "{out}");
    assert_eq!(stream(&events(&at, "D")), stream(&again));
    std::fs::remove_dir_all(&d).unwrap();
}

/// The I/Os of mk_blktrace.py's `wl` trace, from its generator: every 25 ms
/// a 64 KiB write at 2^20 + 128 i, 1 ms later a 4 KiB read at an LCG sector;
/// the data file holds the first 500 ms of it.
fn wl_expected() -> Vec<(u64, char, u64, u64)> {
    let mut x: u64 = 12345;
    let mut v = Vec::new();
    for i in 0..20u64 {
        let t = i * 25_000_000;
        v.push((t, 'W', (1 << 20) + 128 * i, 128));
        x = (x * 1103515245 + 12345) & 0x7fff_ffff;
        v.push((t + 1_000_000, 'R', (x % (1 << 24)) & !7, 8));
    }
    v
}

#[test]
fn a_real_format_blktrace_replays_with_fios_timing() {
    let d = tmpdir("real");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let want = wl_expected();
    let mut first = None;
    for trace in ["tests/data/replay/wl.blktrace.0", "tests/data/replay/wlbe"] {
        let txt = d.join("w.txt");
        let out = run_ok(&["replay", trace, "--blkparse", &s(&txt)]);
        assert!(out.contains("issued rwts: total=20,20,0,0"), "{out}");
        let q = events(&txt, "Q");
        let got: Vec<_> = q.iter().map(|e| (e.2, e.3, e.4)).collect();
        let exp: Vec<_> = want.iter().map(|w| (w.1, w.2, w.3)).collect();
        assert_eq!(got, exp, "{trace}");
        // fio's delays: each I/O issued as long after the previous one as
        // the trace's Qs are apart (fio's `last_issue` is taken before the
        // system call, so the Qs differ by the two calls' CPU costs, a few
        // µs), but the second: the first Q is at time 0, and `delay_since_ttime`
        // takes a last time of 0 for "none yet", so fio issues the second
        // at once.
        assert!(q[1].0 - q[0].0 < 1_000_000, "{:?}", &q[..2]);
        for i in 2..q.len() {
            let (got, want) = (q[i].0 - q[i - 1].0, want[i].0 - want[i - 1].0);
            assert!(got.abs_diff(want) < 10_000, "{trace}: {i}: {got} vs {want}");
        }
        let text = std::fs::read_to_string(&txt).unwrap();
        // Both byte orders replay identically.
        assert_eq!(*first.get_or_insert_with(|| text.clone()), text);
    }
    // Two per-CPU files, merged by time: the two writes before the read;
    // notify, remap, merge and message records are no I/O.
    let txt = d.join("s.txt");
    run_ok(&["replay", "tests/data/replay/sim", "--blkparse", &s(&txt)]);
    let q = events(&txt, "Q");
    let got: Vec<_> = q.iter().map(|e| (e.2, e.3, e.4)).collect();
    assert_eq!(got, vec![('W', 10240, 8), ('W', 10248, 8), ('R', 0, 8)]);
    // The probed depth is 1 (Q, Q, merge, C), so the second write waits for
    // the first; the read follows the second write's issue by 498 µs.
    assert!((q[2].0 - q[1].0).abs_diff(498_000) < 10_000, "{q:?}");
    // --no-stall: back to back.
    run_ok(&[
        "replay",
        "tests/data/replay/wl.blktrace.0",
        "--no-stall",
        "--blkparse",
        &s(&txt),
    ]);
    let q = events(&txt, "Q");
    assert!(q[39].0 < 500_000_000, "{:?}", q[39]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn read_iolog_text_logs_replay_offsets_and_delays() {
    let d = tmpdir("iolog");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    // v3: µs since the start; the I/Os go to the disk through replay_redirect.
    let log = d.join("log.v3");
    std::fs::write(
        &log,
        "fio version 3 iolog\n0 x add\n10 x open\n100 x read 4096 4096\n\
         2100 x write 1048576 8192\n52100 x read 0 4096\n52200 x close\n",
    )
    .unwrap();
    let job = d.join("j.fio");
    std::fs::write(
        &job,
        format!(
            "[r]\nread_iolog={}\nreplay_redirect=/dev/sda\ndirect=1\nioengine=libaio\niodepth=2\n",
            s(&log)
        ),
    )
    .unwrap();
    let txt = d.join("t.txt");
    let out = run_ok(&["run", &s(&job), "--blkparse", &s(&txt)]);
    assert!(out.contains("issued rwts: total=2,1,0,0"), "{out}");
    let q = events(&txt, "Q");
    let got: Vec<_> = q.iter().map(|e| (e.2, e.3, e.4)).collect();
    assert_eq!(got, vec![('R', 8, 8), ('W', 2048, 16), ('R', 0, 8)]);
    // Delays from the timestamps: 2000 µs, then 50000 µs, after each issue.
    let near = |a: u64, b: u64| a.abs_diff(b) < 10_000;
    assert!(near(q[1].0 - q[0].0, 2_000_000), "{q:?}");
    assert!(near(q[2].0 - q[1].0, 50_000_000), "{q:?}");
    // replay_time_scale=200 halves them.
    std::fs::write(
        &job,
        format!(
            "[r]\nread_iolog={}\nreplay_redirect=/dev/sda\ndirect=1\nioengine=libaio\niodepth=2\nreplay_time_scale=200\n",
            s(&log)
        ),
    )
    .unwrap();
    run_ok(&["run", &s(&job), "--blkparse", &s(&txt)]);
    let q = events(&txt, "Q");
    assert!(near(q[2].0 - q[1].0, 25_000_000), "{q:?}");
    // v2 with a trim is refused with the reason.
    std::fs::write(
        &log,
        "fio version 2 iolog\nx add\nx trim 0 4096\nx read 0 4096\n",
    )
    .unwrap();
    let (ok, _, err) = iostack(&["run", &s(&job)]);
    assert!(!ok && err.contains("the log has 1 trims"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}
