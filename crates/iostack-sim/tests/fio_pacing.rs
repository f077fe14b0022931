//! fio's pacing against fio's definitions and real fio 3.33: the rate on a
//! read/write mix (`rate_ddir` switching to the direction behind its rate),
//! `rate_process=poisson` (the I/O times real fio logs), and
//! `io_submit_mode=offload` (submission at the rate's times whatever the
//! device does, from `iodepth` worker threads).

mod common;

use iostack_core::{Action, Profile, TraceEvent, TraceSink};
use iostack_sim::frontend::fio_procs_from_text;
use iostack_sim::machine;
use std::sync::{Arc, Mutex};

/// (time in ns, pid, sector) of each bio queued (Q).
type Queued = Vec<(u64, u32, u64)>;

struct Qs(Arc<Mutex<Queued>>);
impl TraceSink for Qs {
    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Block(r) = ev {
            if r.action == Action::Queue {
                self.0
                    .lock()
                    .unwrap()
                    .push((r.time.as_ns(), r.pid, r.sector));
            }
        }
    }
}

/// Run a job on a preset machine: the run's result and its queued bios.
fn run(text: &str, machine_name: &str) -> (iostack_sim::stats::RunResult, Queued) {
    let m = machine::preset(machine_name).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut sim = common::fio_sim(text, m, Profile::parse("2.6.32").unwrap(), None, &[]).unwrap();
    sim.attach(Box::new(Qs(seen.clone())));
    let r = sim.run().0;
    let q = seen.lock().unwrap().clone();
    (r, q)
}

/// `rw=randrw` with `rate_iops=100,20` for 2 s: real fio 3.33 (null engine)
/// does 200 reads and 40 writes; a direction ahead of its rate hands the
/// I/O to the other one when that one is behind (`rate_ddir`), so both
/// directions keep their own rate although the mix asks for half of each.
#[test]
fn a_rate_on_a_mix_keeps_each_direction_at_its_rate() {
    let text = "[j]\nrw=randrw\nbs=4k\nsize=64m\ndirect=1\ntime_based\nruntime=2s\n\
                rate_iops=100,20\n";
    let (r, _) = run(text, "null");
    let p = &r.procs[0];
    let (reads, writes) = (p.dirs[0].ios, p.dirs[1].ios);
    assert!((198..=202).contains(&reads), "{reads} reads");
    assert!((39..=41).contains(&writes), "{writes} writes");
    // Only reads rated: writes are never ahead, so every read ahead of its
    // rate turns into a write at once.
    let text = "[j]\nrw=randrw\nbs=4k\nsize=64m\ndirect=1\nnumber_ios=300\nrate_iops=100,\n";
    let (r, _) = run(text, "null");
    let p = &r.procs[0];
    assert!(p.dirs[1].ios > 250, "{} writes of 300", p.dirs[1].ios);
}

/// `rate_process=poisson` at 50 IOPS: the I/Os go at the times of fio's
/// exponential schedule, those real fio 3.33 logs (`--write_iolog`, µs
/// after the first I/O) for this job, reading and writing: never earlier
/// than real fio, and on time but for the few where real fio's sleep
/// overshot.
#[test]
fn poisson_rate_issues_at_real_fios_times() {
    let real: [(&str, [u64; 11]); 2] = [
        (
            "rw=read\nrate_iops=50",
            [
                46901, 56416, 65101, 83836, 158926, 189552, 205862, 212229, 236473, 261098, 261111,
            ],
        ),
        (
            "rw=write\nrate_iops=,50",
            [
                31418, 33381, 41659, 41671, 41672, 42934, 43648, 81667, 130166, 153664, 156253,
            ],
        ),
    ];
    for (job, real) in real {
        let text = format!(
            "[p]\nioengine=libaio\ndirect=1\nsize=1m\nbs=4k\nnumber_ios=12\n\
             rate_process=poisson\n{job}\n"
        );
        let (_, q) = run(&text, "null");
        assert_eq!(q.len(), 12, "{job}");
        let t0 = q[0].0;
        let (mut on_time, mut prev) = (0, 0);
        for (k, &r) in real.iter().enumerate() {
            let ours = (q[k + 1].0 - t0) / 1000;
            assert!(
                ours <= r + 50,
                "{job}: I/O {} at {ours} us, real fio {r}",
                k + 1
            );
            // After an overshot sleep real fio issues at once until it has
            // caught up with the schedule.
            if r.abs_diff(ours.max(prev)) <= 50 {
                on_time += 1;
            }
            prev = r;
        }
        // Real fio overslept three sleeps by 2 to 6 ms in this capture.
        assert!(on_time >= 8, "{job}: {on_time} of 11 at real fio's times");
    }
    // linear at the same rate: every 20 ms, within the truncated µs.
    let text = "[p]\nioengine=libaio\ndirect=1\nsize=1m\nbs=4k\nnumber_ios=12\nrate_iops=50\n";
    let (_, q) = run(text, "null");
    let gaps: Vec<u64> = q.windows(2).map(|w| w[1].0 - w[0].0).collect();
    assert!(
        gaps.iter().all(|&g| g.abs_diff(20_000_000) < 1000),
        "{gaps:?}"
    );
}

/// `io_submit_mode=offload` on a disk slower than the rate asked
/// (fixed-rate-submission.fio's point): inline, `rate_ddir` waits for the
/// I/Os in flight before each sleep, so the submissions fall behind; offloaded,
/// the job's thread sleeps to each I/O's time and hands it to a worker, so
/// the I/Os are queued on the rate's schedule (every 5 ms at 200 IOPS, from
/// the first) until `iodepth` are in flight. The bios carry the workers'
/// pids, one per worker in flight, not the job's.
#[test]
fn offload_submits_at_the_rate_whatever_the_device() {
    let base = "[j]\nrw=randread\nbs=4k\nsize=256m\ndirect=1\nioengine=libaio\niodepth=32\n\
                rate_iops=200\nnumber_ios=100\n";
    let (r, inline) = run(base, "sata-2009");
    let inline_end = r.procs[0].end.as_ns();
    let (r, off) = run(&format!("{base}io_submit_mode=offload\n"), "sata-2009");
    assert_eq!(off.len(), 100);
    // The first goes at once; from the second on, each 5 ms after it,
    // within the microsecond fio's utime_since_now truncates.
    let t1 = off[1].0;
    for (k, q) in off.iter().enumerate().skip(1) {
        let due = (k as u64 - 1) * 5_000_000;
        let at = q.0 - t1;
        assert!(
            at.abs_diff(due) < 1000,
            "I/O {k} queued at {at} ns, due at {due}"
        );
    }
    // Inline, the random reads (several ms each) hold the job back.
    let late = inline
        .windows(2)
        .filter(|w| w[1].0 - w[0].0 > 5_000_000)
        .count();
    assert!(late > 10, "inline: {late} submissions late");
    assert!(inline.last().unwrap().0 > off.last().unwrap().0);
    let _ = inline_end;
    // Worker pids: not the job's, at most iodepth of them.
    let job_pid = r.procs[0].pid;
    let mut pids: Vec<u32> = off.iter().map(|q| q.1).collect();
    pids.sort_unstable();
    pids.dedup();
    assert!(!pids.contains(&job_pid), "{pids:?} vs job {job_pid}");
    assert!(pids.len() > 1 && pids.len() <= 32, "{pids:?}");
    // io_uring cannot be offloaded (FIO_NO_OFFLOAD), nor buffered I/O here.
    for bad in ["ioengine=io_uring\ndirect=1", "ioengine=libaio\ndirect=0"] {
        let text = format!("[j]\nsize=1m\nio_submit_mode=offload\n{bad}\n");
        let e = fio_procs_from_text("job.fio", &text, &machine::preset("null").unwrap());
        let msg = e.err().expect("refused").to_string();
        assert!(msg.contains("io_submit_mode"), "{msg}");
    }
}

/// `rate_min`/`rate_iops_min` (fio's `check_min_rate`): real fio 3.33 with
/// `rate_iops=10 rate_iops_min=5 thinktime=300000` (a think time holding
/// the job to about 3 IOPS) fails the job after 11 I/Os, at 3.3 s: "x:
/// rate_iops_min=5 not met, got 3 IOPS" (the first check past the 2 s
/// settle at 2.1 s records; the one at 3.3 s, 1.2 s later, sees 4 I/Os).
/// 1mbs_clients.fio's `rate=1250 ratemin=1024` meets its minimum (real
/// fio: 4 I/Os in 10 s, no error).
#[test]
fn rate_min_fails_the_job_as_fio_does() {
    let text = "[x]\nrw=read\nbs=4k\nsize=32m\nrate_iops=10\nrate_iops_min=5\n\
                thinktime=300000\nruntime=10\n";
    let (r, _) = run(text, "null");
    let p = &r.procs[0];
    let err = p.error.as_deref().unwrap_or("");
    assert!(
        err.contains("x: rate_iops_min=5 not met, got 3 IOPS"),
        "{err:?}"
    );
    assert_eq!(p.dirs[0].ios, 11);
    let ms = p.end.since(p.start).as_ns() / 1_000_000;
    assert!((3300..3310).contains(&ms), "failed at {ms} ms");
    let text = "[x]\nrw=read\nsize=32m\nrate=1250\nratemin=1024\nruntime=10\n";
    let (r, _) = run(text, "null");
    assert_eq!(r.procs[0].error, None);
    assert_eq!(r.procs[0].dirs[0].ios, 4);
    // fio's fixup_options: a minimum above the rate is an error.
    let text = "[x]\nsize=1m\nrate_iops=10\nrate_iops_min=20\n";
    let e = fio_procs_from_text("job.fio", text, &machine::preset("null").unwrap());
    assert!(e
        .err()
        .expect("refused")
        .to_string()
        .contains("minimum rate exceeds rate"));
}
