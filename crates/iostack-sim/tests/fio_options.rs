//! The fio option table's statuses as the simulator applies them: a refused option
//! set to anything but its default stops the job file at the option's file and
//! line, every one of them is reported in one run, and a default value (which
//! changes nothing fio sends) is accepted.

mod common;

use iostack_sim::frontend::fio_procs_from_text;
use iostack_sim::machine::{self, Machine};
use iostack_sim::SimError;
use iostack_workload::options::{all_options, status, Status};

fn machine() -> Machine {
    machine::preset(machine::MACHINES[0].0).unwrap()
}

fn refuse(text: &str) -> (String, Option<usize>, Option<String>) {
    match fio_procs_from_text("job.fio", text, &machine()) {
        Err(e @ SimError::Job { .. }) => {
            let (_, line, option) = e.location();
            (e.to_string(), line, option.map(str::to_string))
        }
        Err(e) => panic!("{text}: not a job refusal: {e}"),
        Ok(_) => panic!("{text}: accepted"),
    }
}

/// The options the issue lists as accepted-and-ignored: each is refused at its
/// own line, with its name and reason.
#[test]
fn options_that_change_the_io_are_refused_at_their_line() {
    let cases = [
        "latency_target=500",
        "thinktime_iotime=1",
        "bs_unaligned=1",
        "percentage_random=50",
        "openfiles=2",
        "filesize=1m-2m",
        "fsync_on_close=1",
        "ramp_time=2s",
        "ioscheduler=deadline",
        "steadystate=iops:10%",
    ];
    for opt in cases {
        let text = format!("[j]\nrw=randread\nsize=1m\n{opt}\n");
        let (msg, line, option) = refuse(&text);
        let name = opt.split('=').next().unwrap();
        assert_eq!(line, Some(4), "{opt}: {msg}");
        assert!(
            msg.starts_with("job.fio:4: job 'j': option '"),
            "{opt}: {msg}"
        );
        assert!(
            msg.contains(name) && msg.contains("refused"),
            "{opt}: {msg}"
        );
        let canonical = iostack_workload::options::find_option(name).unwrap().name;
        assert_eq!(option.as_deref(), Some(canonical), "{opt}");
    }
}

#[test]
fn every_refused_option_is_reported_in_one_run() {
    let text =
        "[global]\nserialize_overlap=1\n[a]\nsize=1m\nthinktime_iotime=2\n[b]\nsize=1m\nramp_time=2\n";
    let (msg, line, _) = refuse(text);
    assert_eq!(line, Some(2), "{msg}");
    for needle in [
        "job.fio:2:",
        "job.fio:5:",
        "job.fio:8:",
        "serialize_overlap",
        "thinktime",
        "ramp_time",
    ] {
        assert!(msg.contains(needle), "{needle} missing from {msg}");
    }
    // The global option is reported once although it applies to both jobs.
    assert_eq!(msg.matches("serialize_overlap").count(), 1, "{msg}");
}

#[test]
fn default_values_of_refused_options_are_accepted() {
    let text = "[j]\nsize=1m\nrate=0\nloops=1\nsync=0\nverify=0\nthinktime=0\nnrfiles=1\n";
    fio_procs_from_text("job.fio", text, &machine()).unwrap();
}

#[test]
fn partly_simulated_options_refuse_the_part_they_do_not_simulate() {
    for (opt, name) in [
        ("nrfiles=3\nsize=1000k", "size"),
        ("nrfiles=2\nfile_service_type=zipf", "file_service_type"),
        ("nrfiles=2\nend_fsync=1", "end_fsync"),
        ("startdelay=1-2", "startdelay"),
        ("directory=/mnt/test:/mnt/test", "directory"),
        ("number_ios=10\ntime_based\nruntime=1", "number_ios"),
    ] {
        let text = format!("[j]\nsize=1m\n{opt}\n");
        let (msg, _, option) = refuse(&text);
        assert_eq!(option.as_deref(), Some(name), "{opt}: {msg}");
        assert!(msg.contains("not modelled yet"), "{opt}: {msg}");
    }
}

/// Every refused core option is refused by the simulator when set to a value
/// that is not its default (one value per option type).
#[test]
fn every_refused_core_option_stops_the_job() {
    for d in all_options() {
        let Status::Refused(reason) = status(d).0 else {
            continue;
        };
        let Some(value) = non_default_value(d) else {
            continue;
        };
        let text = format!("[j]\nsize=1m\n{}{value}\n", d.name);
        match fio_procs_from_text("job.fio", &text, &machine()) {
            Err(SimError::Job { message, line, .. }) => {
                assert!(message.contains(reason), "{}: {message}", d.name);
                assert_eq!(line, Some(3), "{}: {message}", d.name);
            }
            // Refused by the parser itself (value checks, deprecation).
            Err(SimError::Fio(_)) => {}
            Err(e) => panic!("{}: {e}", d.name),
            Ok(_) => panic!("{}{value}: refused option accepted", d.name),
        }
    }
}

/// A value of the option's type that differs from its default, if one is easy
/// to name; `None` for free strings whose valid values depend on the host.
fn non_default_value(d: &iostack_workload::OptDef) -> Option<String> {
    use iostack_workload::OptKind::*;
    let changes = |v: &str| !iostack_workload::options::is_default(d, Some(v));
    if let Some((v, _)) = d.values.iter().find(|(v, _)| changes(v)) {
        return Some(format!("={v}"));
    }
    match d.kind {
        Bool => Some(if d.default == Some("1") { "=0" } else { "=1" }.into()),
        StrSet if d.default != Some("1") => Some(String::new()),
        Int | Ull | StrVal | StrValTime | StrValZone => {
            Some(if d.default == Some("2") { "=3" } else { "=2" }.into())
        }
        _ => None,
    }
}

/// I/Os the single process of a job did (reads and writes).
fn ios_of(text: &str) -> u64 {
    let r = run_on(text, "2.6.32");
    let p = r.procs.last().unwrap();
    BYTES.with(|b| b.set(p.dirs[0].bytes + p.dirs[1].bytes));
    p.dirs[0].ios + p.dirs[1].ios
}

/// Run a job file on the test machine with a kernel profile.
fn run_on(text: &str, profile: &str) -> iostack_sim::stats::RunResult {
    sim_on(text, profile).unwrap().run().0
}

/// A job file's simulation on the test machine with a kernel profile, as set
/// up (`Simulation::new` refuses what it cannot lay out).
fn sim_on(text: &str, profile: &str) -> Result<iostack_sim::Simulation, SimError> {
    let profile = iostack_core::Profile::parse(profile).unwrap();
    common::fio_sim(text, machine(), profile, None, &[])
}

/// Page-cache bios of a job: (bios queued, bytes queued).
fn bios_of(text: &str, profile: &str) -> (u64, u64) {
    let q = run_on(text, profile).queue;
    (q.bios_queued, q.bytes_queued)
}

/// fio's default `fadvise_hint=1` gives a random job `POSIX_FADV_RANDOM`: up to
/// 2.6.33 no readahead at all, each 16 KiB read is four one-page `->readpage`
/// bios; from 2.6.34 (`FMODE_RANDOM`) each read reads just its 16 KiB. Without
/// the hint, the kernel's small-random-read path reads 16 KiB as one window too.
/// A sequential job gets `POSIX_FADV_SEQUENTIAL`: twice the readahead window,
/// so fewer, larger bios.
#[test]
fn fadvise_hint_sets_the_readahead_of_the_open_file() {
    let rand = "[j]\nrw=randread\nbs=16k\nsize=16m\nnorandommap\nnumber_ios=100\n";
    // Every bio one page; a few pages were cached by an earlier read.
    let (bios, bytes) = bios_of(rand, "2.6.32");
    assert_eq!(bytes, bios * 4096, "2.6.32, POSIX_FADV_RANDOM");
    assert!(bios > 350, "2.6.32: {bios} one-page bios for 400 pages");
    let (bios, bytes) = bios_of(rand, "2.6.37");
    assert!(
        bytes <= 100 * 16384 && bytes > bios * 4096,
        "2.6.37, FMODE_RANDOM"
    );
    assert!(bios < 200, "2.6.37: {bios} bios for 100 reads");
    let (bios, _) = bios_of(&format!("{rand}fadvise_hint=0\n"), "2.6.32");
    assert!(bios < 200, "no hint: {bios} bios for 100 reads");
    let seq = "[j]\nrw=read\nbs=4k\nsize=8m\n";
    let (hinted, hb) = bios_of(seq, "2.6.32");
    let (plain, pb) = bios_of(&format!("{seq}fadvise_hint=0\n"), "2.6.32");
    assert_eq!((hb, pb), (8 << 20, 8 << 20));
    assert!(hinted < plain, "SEQUENTIAL: {hinted} bios, NORMAL: {plain}");
}

/// fio's default `invalidate=1` drops the file's cache at open
/// (`POSIX_FADV_DONTNEED`): a reader after a writer of the same file reads it
/// from the disk; with `invalidate=0` it finds every page cached.
#[test]
fn invalidate_drops_the_cache_at_open() {
    let job = |inv: u32| {
        format!(
            "[global]\nfilename=f\nbs=64k\nsize=4m\n[w]\nrw=write\nend_fsync=1\n\
             [r]\nstonewall\nrw=read\ninvalidate={inv}\n"
        )
    };
    let reads = |inv| run_on(&job(inv), "2.6.32").queue.read_ios;
    assert_eq!(
        reads(0),
        0,
        "invalidate=0: the pages the writer left are read"
    );
    assert!(reads(1) > 0, "invalidate=1: the reader goes to the disk");
    // Without end_fsync the writer leaves dirty pages: the open's
    // filemap_flush starts their writeback, and invalidate_mapping_pages
    // keeps the pages under writeback, so the reader finds them cached.
    let dirty = job(1).replace("end_fsync=1", "end_fsync=0");
    let r = run_on(&dirty, "2.6.32");
    assert_eq!(r.vm.wb_pages.dirtier, 1024, "{:?}", r.vm.wb_pages);
    assert_eq!(r.queue.read_ios, 0);
}

/// `number_ios=100` issues exactly 100 I/Os (fio's `exceeds_number_ios`), for a
/// sync and an async engine, direct and buffered; without it the job does its
/// whole size.
#[test]
fn number_ios_issues_exactly_that_many() {
    for extra in [
        "direct=1",
        "direct=1\nioengine=libaio\niodepth=8",
        "direct=0",
    ] {
        let base = format!("[j]\nrw=randread\nbs=4k\nsize=4m\n{extra}\n");
        assert_eq!(ios_of(&format!("{base}number_ios=100\n")), 100, "{extra}");
        assert_eq!(ios_of(&base), 1024, "{extra}");
    }
}

/// `filesize=` alone sizes the file and the job (fio's `setup_files`: `size`
/// is the files' total when unset); with a smaller `size` the file keeps its
/// size and the job does `size` bytes of I/O.
#[test]
fn filesize_sets_the_file_and_the_job_size() {
    let job = "[j]\nrw=read\nbs=64k\ndirect=1\nfilesize=1m\n";
    assert_eq!(ios_bytes_of(job), (16, 1 << 20));
    let (ios, bytes) = ios_bytes_of(&format!("{job}size=256k\n"));
    assert_eq!((ios, bytes), (4, 256 << 10));
    let m = machine();
    let procs = fio_procs_from_text("job.fio", &format!("{job}size=256k\n"), &m).unwrap();
    assert_eq!(procs.procs[0].region, 1 << 20, "the file stays 1 MiB");
}

/// `numjobs` clones of a write job sharing one `filename`: the first makes
/// the file, every clone writes its whole size into it (fio runs this).
#[test]
fn numjobs_clones_share_one_file() {
    let r = run_null("[w]\nfilename=shared\nrw=write\nbs=64k\nsize=1m\nnumjobs=3\ndirect=1\n");
    assert_eq!(r.procs.len(), 3);
    for p in &r.procs {
        assert_eq!(
            (p.dirs[1].ios, p.dirs[1].bytes),
            (16, 1 << 20),
            "{:?}",
            p.error
        );
    }
}

/// `ioengine=null` (fio's engines/null.c, a diskless engine): the job's
/// I/Os are issued and done, none reaches the block layer, no file is made.
#[test]
fn null_engine_issues_nothing_to_the_device() {
    let r = run_null(
        "[j]\nioengine=null\nrw=randread\nnorandommap\nbs=4k\nsize=100g\nnumber_ios=1000\n",
    );
    assert_eq!(r.procs[0].dirs[0].ios, 1000, "{:?}", r.procs[0].error);
    assert_eq!(r.queue.bytes_queued, 0);
}

/// `loops=3` reads the file three times (fio's `keep_running`), sequential and
/// random; with buffered I/O it is refused (fio drops the cache at each loop).
#[test]
fn loops_repeat_the_job() {
    for rw in ["read", "randread", "randwrite"] {
        let base = format!("[j]\nrw={rw}\nbs=4k\nsize=1m\ndirect=1\n");
        assert_eq!(ios_of(&base), 256, "{rw}");
        assert_eq!(ios_of(&format!("{base}loops=3\n")), 768, "{rw}");
    }
    let (msg, _, option) = refuse("[j]\nsize=1m\ndirect=0\nloops=2\n");
    assert_eq!(option.as_deref(), Some("loops"), "{msg}");
}

/// (I/Os, bytes) of the single process of a job.
fn ios_bytes_of(text: &str) -> (u64, u64) {
    let ios = ios_of(text);
    (ios, BYTES.with(|b| b.get()))
}

thread_local! {
    static BYTES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// `bssplit=4k/50:64k/50`: half the I/Os of each size, within four binomial
/// standard deviations, read from the mean I/O size (fio's `get_next_buflen`).
#[test]
fn bssplit_gives_each_size_its_share() {
    let (ios, bytes) = ios_bytes_of("[j]\nrw=read\ndirect=1\nsize=64m\nbssplit=4k/50:64k/50\n");
    assert_eq!(bytes, 64 << 20);
    let n = ios as f64;
    // bytes = ios * 4k + big * 60k.
    let big = (bytes - ios * 4096) as f64 / 61440.0;
    let share = big / n;
    let bound = 4.0 * (0.25 / n).sqrt();
    assert!((share - 0.5).abs() < bound, "{big} of {ios} I/Os were 64k");
    // Without it, every I/O is 4k.
    assert_eq!(ios_bytes_of("[j]\nrw=read\ndirect=1\nsize=64m\n").0, 16384);
}

/// `bsrange=4k-64k`: fio's `minbs + maxbs * r` (r in [0, 1)) rounded down to 4k
/// and capped at 64k: 1 + floor(16 r) blocks of 4k, each of 1..=16 with 1/16,
/// mean 8.5 blocks, variance 21.25.
#[test]
fn bsrange_follows_fios_formula() {
    let (ios, bytes) =
        ios_bytes_of("[j]\nrw=randread\nnorandommap\ndirect=1\nsize=64m\nbsrange=4k-64k\n");
    let mean_blocks = bytes as f64 / ios as f64 / 4096.0;
    let sd = 21.25f64.sqrt() / (ios as f64).sqrt();
    assert!(
        (mean_blocks - 8.5).abs() < 4.0 * sd,
        "mean {mean_blocks} blocks over {ios}"
    );
    assert_eq!(bytes % 4096, 0);
    let (msg, _, option) = refuse("[j]\nrw=randrw\nsize=1m\nbsrange=4k-64k,8k-16k\n");
    assert_eq!(option.as_deref(), Some("bsrange"), "{msg}");
}

/// Run a job on the `null` machine (a device with a fixed service time, so
/// that pacing is the only thing that moves the clock much).
fn run_null(text: &str) -> iostack_sim::stats::RunResult {
    use iostack_sim::{tunable_tables, SimConfig, Simulation};
    let m = machine::preset("null").unwrap();
    let procs = fio_procs_from_text("job.fio", text, &m).unwrap().procs;
    let tunables = iostack_core::Tunables::new(
        iostack_core::Profile::parse("2.6.32").unwrap(),
        &tunable_tables(),
    );
    let cfg = SimConfig {
        scheduler: m.scheduler.clone(),
        machine: m,
        tunables,
        seed: iostack_des::Seed(1),
        procs,
        checks: true,
        until: None,
    };
    Simulation::new(cfg).unwrap().run().0
}

/// Run time of the last process of a job, in ns.
fn run_ns(text: &str) -> (u64, u64) {
    let r = run_null(text);
    let p = r.procs.last().unwrap();
    (p.end.since(p.start).as_ns(), p.dirs[0].ios + p.dirs[1].ios)
}

/// `rate_iops=1000` for 2 s issues 2,000 I/Os within 1% (fio's `rate_ddir`
/// sleeps until `usec_for_io` says the bytes issued are due), for a sync and
/// an async engine; `rate=` in bytes gives the same for 4 KiB blocks.
#[test]
fn rate_iops_issues_the_rate_asked() {
    let base = "[j]\nrw=randread\nbs=4k\nsize=64m\ndirect=1\ntime_based\nruntime=2s\n";
    for extra in [
        "rate_iops=1000",
        "rate=4000k",
        "ioengine=libaio\niodepth=4\nrate_iops=1000",
    ] {
        let (_, ios) = run_ns(&format!("{base}{extra}\n"));
        assert!((1980..=2020).contains(&ios), "{extra}: {ios} I/Os in 2 s");
    }
    let (_, free) = run_ns(base);
    assert!(free > 4_000, "without a rate: {free} I/Os");
}

/// `thinktime=1000` (µs) with `thinktime_blocks=10`: after every 10th completed
/// I/O the job sleeps 1 ms (fio's `handle_thinktime`), so 100 I/Os take 10 ms
/// more than without; `thinktime_spin` is part of the think time, not added.
#[test]
fn thinktime_sleeps_after_every_n_blocks() {
    let base = "[j]\nrw=read\nbs=4k\nsize=4m\ndirect=1\nnumber_ios=100\n";
    let (plain, n) = run_ns(base);
    assert_eq!(n, 100);
    let think = format!("{base}thinktime=1000\nthinktime_blocks=10\n");
    let (thought, n) = run_ns(&think);
    assert_eq!(n, 100);
    assert_eq!(thought - plain, 10 * 1_000_000, "{plain} vs {thought}");
    let (spun, _) = run_ns(&format!("{think}thinktime_spin=400\n"));
    assert_eq!(spun, thought);
    // Counting issued I/Os with an async engine: the queue drains at each
    // think time, so the job takes longer than the sum of the sleeps alone.
    let aio = format!("{base}ioengine=libaio\niodepth=8\n");
    let (plain, _) = run_ns(&aio);
    let (thought, _) = run_ns(&format!(
        "{aio}thinktime=1000\nthinktime_blocks=10\nthinktime_blocks_type=issue\n"
    ));
    assert!(thought >= plain + 10 * 1_000_000, "{plain} vs {thought}");
}

/// A time_based sequential job that wraps to its start drops the file's cache
/// again (fio's `get_next_seq_offset` → `loop_cache_invalidate`): with
/// `invalidate=1` every pass reads from the disk, with `invalidate=0` only the
/// first does.
#[test]
fn time_based_wrap_drops_the_cache() {
    let job = |inv: u32| {
        format!("[j]\nrw=read\nbs=64k\nsize=1m\ntime_based\nruntime=200ms\ninvalidate={inv}\n")
    };
    let r = run_null(&job(1));
    let done = r.procs[0].dirs[0].bytes;
    assert!(done > 4 << 20, "{done} bytes read in 200 ms");
    // Readahead may read a little past the last pass's end.
    assert!(
        r.queue.bytes_queued >= done,
        "{} < {done}",
        r.queue.bytes_queued
    );
    let r = run_null(&job(0));
    assert!(r.procs[0].dirs[0].bytes > 4 << 20);
    assert_eq!(r.queue.bytes_queued, 1 << 20, "one pass from the disk");
}

/// Sectors of the bios queued (Q) by a job on the `null` machine.
fn queued_sectors(text: &str) -> Vec<u64> {
    queued_extents(text).into_iter().map(|e| e.0).collect()
}

/// (sector, bytes) of the bios queued (Q) by a job on the `null` machine.
fn queued_extents(text: &str) -> Vec<(u64, u64)> {
    use iostack_core::{Action, TraceEvent, TraceSink};
    use std::sync::{Arc, Mutex};
    struct Qs(Arc<Mutex<Vec<(u64, u64)>>>);
    impl TraceSink for Qs {
        fn event(&mut self, ev: &TraceEvent) {
            if let TraceEvent::Block(r) = ev {
                if r.action == Action::Queue {
                    self.0.lock().unwrap().push((r.sector, u64::from(r.bytes)));
                }
            }
        }
    }
    use iostack_sim::{tunable_tables, SimConfig, Simulation};
    let m = machine::preset("null").unwrap();
    let procs = fio_procs_from_text("job.fio", text, &m).unwrap().procs;
    let tunables = iostack_core::Tunables::new(
        iostack_core::Profile::parse("2.6.32").unwrap(),
        &tunable_tables(),
    );
    let cfg = SimConfig {
        scheduler: m.scheduler.clone(),
        machine: m,
        tunables,
        seed: iostack_des::Seed(1),
        procs,
        checks: true,
        until: None,
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut sim = Simulation::new(cfg).unwrap();
    sim.attach(Box::new(Qs(seen.clone())));
    sim.run();
    let v = seen.lock().unwrap().clone();
    v
}

/// `random_distribution=zoned:50/5:50/95`: half the I/Os land in the first 5%
/// of the region (fio's `__get_next_rand_offset_zoned`), within four binomial
/// standard deviations; uniform puts 5% there. `zoned_abs` with the same
/// split in bytes gives the same share.
#[test]
fn zoned_distribution_puts_each_share_in_its_zone() {
    let base =
        "[j]\nfilename=/dev/nullb0\nrw=randread\nbs=4k\nsize=64m\ndirect=1\nnumber_ios=4000\n";
    let hot_end = (64u64 << 20) * 5 / 100 / 512;
    let share = |extra: &str| {
        let s = queued_sectors(&format!("{base}{extra}\n"));
        assert_eq!(s.len(), 4000, "{extra}");
        s.iter().filter(|&&x| x < hot_end).count() as f64 / 4000.0
    };
    let bound = 4.0 * (0.25f64 / 4000.0).sqrt();
    let zoned = share("random_distribution=zoned:50/5:50/95");
    assert!((zoned - 0.5).abs() < bound, "zoned: {zoned} in the hot 5%");
    let abs = share("random_distribution=zoned_abs:50/3276k:50/62260k");
    assert!((abs - 0.5).abs() < bound, "zoned_abs: {abs} in the hot 5%");
    let uniform = share("norandommap");
    assert!(
        (uniform - 0.05).abs() < 0.02,
        "uniform: {uniform} in the first 5%"
    );
    let (msg, _, option) = refuse(
        "[j]\nrw=randread\nbsrange=4k-8k\nnorandommap\nsize=1m\nrandom_distribution=zipf:1.2\n",
    );
    assert_eq!(option.as_deref(), Some("random_distribution"), "{msg}");
}

/// `blockalign=16k` with 4 KiB random reads: every offset a multiple of
/// 16 KiB (fio's random offsets in units of `ba`); without it about a
/// quarter are.
#[test]
fn blockalign_places_random_offsets() {
    let base = "[j]\nfilename=/dev/nullb0\nrw=randread\nbs=4k\nsize=64m\ndirect=1\nnorandommap\nnumber_ios=2000\n";
    let aligned = |extra: &str| {
        let s = queued_sectors(&format!("{base}{extra}\n"));
        assert_eq!(s.len(), 2000);
        s.iter().filter(|&&x| x % 32 == 0).count()
    };
    assert_eq!(aligned("blockalign=16k"), 2000);
    // Unset, it is the smallest size of a bssplit (no refusal, offsets in
    // its units).
    let s = queued_sectors(&format!("{base}bssplit=8k/50:16k/50\n"));
    assert_eq!(s.len(), 2000);
    let plain = aligned("");
    assert!((400..600).contains(&plain), "{plain} of 2000 aligned");
}

/// `percentage_random=50` with `norandommap`: about half the I/Os continue
/// where the previous one ended (fio's `should_do_random`, then
/// `get_next_seq_offset`); with 100 hardly any do.
#[test]
fn percentage_random_mixes_sequential_io() {
    let base = "[j]\nfilename=/dev/nullb0\nrw=randread\nbs=4k\nsize=64m\ndirect=1\nnorandommap\nnumber_ios=4000\n";
    let seq_share = |extra: &str| {
        let s = queued_sectors(&format!("{base}{extra}\n"));
        let seq = s.windows(2).filter(|w| w[1] == w[0] + 8).count();
        seq as f64 / (s.len() - 1) as f64
    };
    let bound = 4.0 * (0.25f64 / 4000.0).sqrt();
    let half = seq_share("percentage_random=50");
    assert!((half - 0.5).abs() < bound, "{half} sequential");
    assert!(seq_share("") < 0.01);
    let (msg, _, option) = refuse("[j]\nrw=randread\nsize=1m\npercentage_random=50\n");
    assert_eq!(option.as_deref(), Some("percentage_random"), "{msg}");
}

/// `sync=1` (O_SYNC): every buffered `write()` writes its pages back and waits
/// before it returns, so the writer itself writes every page and each write's
/// latency covers its device time; `fdatasync=4` writes back every fourth
/// write; without either the writer leaves its pages to the flusher. O_DIRECT
/// with them is refused.
#[test]
fn sync_and_fdatasync_write_back_from_the_writer() {
    let base = "[j]\nrw=write\nbs=64k\nsize=4m\n";
    let by_writer = |extra: &str| {
        let r = run_on(&format!("{base}{extra}\n"), "2.6.32");
        (r.vm.wb_pages.dirtier, r.procs[0].dirs[1].clat.min)
    };
    let (plain, plain_lat) = by_writer("");
    assert_eq!(plain, 0);
    let (osync, osync_lat) = by_writer("sync=1");
    assert_eq!(osync, 1024, "every page by the O_SYNC writer");
    assert!(osync_lat > plain_lat * 2, "{osync_lat} vs {plain_lat} ns");
    assert_eq!(by_writer("fdatasync=4").0, 1024);
    let (msg, _, option) = refuse("[j]\nrw=write\nsize=1m\ndirect=1\nfsync=4\n");
    assert_eq!(option.as_deref(), Some("fsync"), "{msg}");
}

/// `rw=randread:4` takes a new random offset every 4th I/O (fio's
/// `ddir_seq_nr`); the three between follow on sequentially, or repeat the
/// offset with `rw_sequencer=identical`. `rw=read:4k` skips 4 KiB after each
/// I/O.
#[test]
fn rw_modifier_and_sequencer_shape_the_offsets() {
    let base =
        "[j]\nfilename=/dev/nullb0\nbs=4k\nsize=64m\ndirect=1\nnorandommap\nnumber_ios=400\n";
    let pairs = |extra: &str, step: u64| {
        let s = queued_sectors(&format!("{base}{extra}\n"));
        assert_eq!(s.len(), 400, "{extra}");
        s.windows(2).filter(|w| w[1] == w[0] + step).count()
    };
    let runs = pairs("rw=randread:4", 8);
    assert!((297..=302).contains(&runs), "{runs} sequential of 399");
    let same = pairs("rw=randread:4\nrw_sequencer=identical", 0);
    assert!((297..=302).contains(&same), "{same} repeated of 399");
    assert!(pairs("rw=randread", 8) < 5);
    assert_eq!(pairs("rw=read:4k", 16), 399);
}

/// `rw=read:-8k` (backwards-read.fio) walks back: the offsets real fio 3.33
/// reads (`--write_iolog`) for `bs=4k size=64k`: 0, then from the end
/// 8 KiB back from each I/O's end, down to 0, and on from the end. From a nonzero offset (fio's rewind) or with a step
/// shorter than the block it is refused.
#[test]
fn rw_backwards_walks_as_fio_does() {
    let s = queued_sectors(
        "[j]\nfilename=/dev/nullb0\nbs=4k\nsize=64k\ndirect=1\nrw=read:-8k\nloops=2\n",
    );
    let real: [u64; 16] = [
        0, 57344, 53248, 49152, 45056, 40960, 36864, 32768, 28672, 24576, 20480, 16384, 12288,
        8192, 4096, 0,
    ];
    let got: Vec<u64> = s.iter().map(|s| s * 512).collect();
    assert_eq!(got[..16], real);
    // loops=2: real fio's second pass goes on from the last position (the
    // I/O after 0 is 8 KiB before the end), not from 0 again.
    assert_eq!(got[16..31], real[1..]);
    assert_eq!(got[31], 57344);
    for bad in ["offset=4k", "bs=16k"] {
        let (msg, _, option) = refuse(&format!("[j]\nrw=read:-8k\nsize=1m\n{bad}\n"));
        assert_eq!(option.as_deref(), Some("rw"), "{msg}");
    }
}

/// The files and offsets a job's direct I/Os go to, in order: each queued
/// sector mapped back through the files' extents.
fn file_offsets(text: &str) -> Vec<(String, u64)> {
    use iostack_core::{Action, TraceEvent, TraceSink};
    use std::sync::{Arc, Mutex};
    struct Qs(Arc<Mutex<Vec<u64>>>);
    impl TraceSink for Qs {
        fn event(&mut self, ev: &TraceEvent) {
            if let TraceEvent::Block(r) = ev {
                if r.action == Action::Queue {
                    self.0.lock().unwrap().push(r.sector);
                }
            }
        }
    }
    use iostack_sim::{tunable_tables, SimConfig, Simulation};
    let m = machine::preset("null").unwrap();
    let part = m.partition.map_or(0, |p| p.1);
    let procs = fio_procs_from_text("job.fio", text, &m).unwrap().procs;
    let tunables = iostack_core::Tunables::new(
        iostack_core::Profile::parse("2.6.32").unwrap(),
        &tunable_tables(),
    );
    let cfg = SimConfig {
        scheduler: m.scheduler.clone(),
        machine: m,
        tunables,
        seed: iostack_des::Seed(1),
        procs,
        checks: true,
        until: None,
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut sim = Simulation::new(cfg).unwrap();
    sim.attach(Box::new(Qs(seen.clone())));
    let (r, _) = sim.run();
    let sectors = seen.lock().unwrap().clone();
    sectors
        .iter()
        .map(|&s| {
            for f in &r.files {
                let spb = f.block_size as u64 / 512;
                for &(l, p, n) in &f.extents {
                    let (lo, hi) = (part + p * spb, part + (p + n) * spb);
                    if (lo..hi).contains(&s) {
                        let name = f.path.rsplit('/').next().unwrap().to_string();
                        return (name, l * f.block_size as u64 + (s - lo) * 512);
                    }
                }
            }
            panic!("sector {s} is in no file")
        })
        .collect()
}

/// `nrfiles=3` with each `file_service_type`: the order of files and
/// offsets fio 3.33 issues (its `write_iolog` of the same job with
/// `ioengine=null`): round robin one I/O per file, `roundrobin:2` two,
/// `sequential` a whole file before the next; `random` draws a file per
/// I/O until each has had its 8 blocks. Files are named `jobname.0.N`.
#[test]
fn nrfiles_follow_fios_file_service() {
    let job = |fst: &str| {
        format!("[j]\ndirectory=/mnt/test\nnrfiles=3\nsize=96k\nbs=4k\nrw=read\ndirect=1\n{fst}")
    };
    let name = |k: usize| format!("j.0.{k}");
    let rr = file_offsets(&job(""));
    let want: Vec<(String, u64)> = (0..24)
        .map(|i| (name(i % 3), (i / 3) as u64 * 4096))
        .collect();
    assert_eq!(rr, want);
    let rr2 = file_offsets(&job("file_service_type=roundrobin:2\n"));
    let want: Vec<(String, u64)> = (0..24)
        .map(|i| (name((i / 2) % 3), ((i / 6) * 2 + i % 2) as u64 * 4096))
        .collect();
    assert_eq!(rr2, want);
    let seq = file_offsets(&job("file_service_type=sequential\n"));
    let want: Vec<(String, u64)> = (0..24)
        .map(|i| (name(i / 8), (i % 8) as u64 * 4096))
        .collect();
    assert_eq!(seq, want);
    let rnd = file_offsets(&job("file_service_type=random\n"));
    assert_eq!(rnd.len(), 24);
    for k in 0..3 {
        let offs: Vec<u64> = rnd.iter().filter(|f| f.0 == name(k)).map(|f| f.1).collect();
        // Each file read through in order, whichever file is drawn.
        assert_eq!(offs, (0..8).map(|b| b * 4096).collect::<Vec<_>>(), "{k}");
    }
    assert_ne!(rnd, rr, "random is not round robin");
    // filename_format names the files.
    let fmt = file_offsets(&job("filename_format=f.$filenum\n"));
    assert_eq!(fmt[1].0, "f.1");
    // A ':' list of names is as many files.
    let list = "[j]\nfilename=/mnt/test/a:/mnt/test/b\nsize=16k\nbs=4k\ndirect=1\n";
    let v: Vec<String> = file_offsets(list).into_iter().map(|f| f.0).collect();
    assert_eq!(v, ["a", "b", "a", "b"]);
}

/// `nrfiles` with a random job and its random map: each file's blocks are
/// each read once, and the job's bytes are the files' total.
#[test]
fn nrfiles_random_jobs_keep_a_random_map_per_file() {
    let text = "[j]\ndirectory=/mnt/test\nnrfiles=4\nsize=256k\nbs=4k\nrw=randread\ndirect=1\n";
    let v = file_offsets(text);
    assert_eq!(v.len(), 64);
    for k in 0..4 {
        let mut offs: Vec<u64> = v
            .iter()
            .filter(|f| f.0 == format!("j.0.{k}"))
            .map(|f| f.1)
            .collect();
        offs.sort_unstable();
        assert_eq!(
            offs,
            (0..16).map(|b| b * 4096).collect::<Vec<_>>(),
            "file {k}"
        );
    }
    // Round robin between the files.
    assert_eq!(v[1].0, "j.0.1");
    assert_eq!(v[4].0, "j.0.0");
}

/// `wait_for`: the readers start once every clone of the writers is done,
/// though no stonewall orders them; a waitee that is not an earlier job is
/// refused as fio refuses it (`wait_for_ok`).
#[test]
fn wait_for_starts_a_job_after_its_waitee() {
    let text = "[w]\nfilename=/mnt/test/w\nrw=write\nsize=256k\nnumjobs=2\n\
                [r]\nfilename=/mnt/test/r\nsize=64k\nrw=read\ndirect=1\nwait_for=w\n";
    let r = run_on(text, "2.6.32");
    let w_end = r.procs[..2].iter().map(|p| p.end.as_ns()).max().unwrap();
    assert!(w_end > 0);
    assert!(r.procs[2].start.as_ns() >= w_end, "{:?}", r.procs[2]);
    let without = run_on(&text.replace("wait_for=w\n", ""), "2.6.32");
    assert_eq!(without.procs[2].start.as_ns(), 0);
    for (w, why) in [("r", "itself"), ("x", "unknown")] {
        let t = format!("[r]\nsize=64k\nwait_for={w}\n");
        let (msg, line, option) = refuse(&t);
        assert_eq!(
            (line, option.as_deref()),
            (Some(3), Some("wait_for")),
            "{msg}"
        );
        assert!(msg.contains(why), "{msg}");
    }
}

/// `exitall`: the first job to end terminates the others of its group
/// (`exit_what=group`): the endless random reader stops once the 50 reads
/// of the other are done; `exit_what=all` also stops a job not started yet.
#[test]
fn exitall_terminates_the_other_jobs() {
    let base = "[global]\nfilename=/mnt/test/t\nsize=4m\ndirect=1\n\
                [a]\nrw=read\nnumber_ios=50\n[b]\nrw=randread\ntime_based\nruntime=10\n";
    let r = run_on(&format!("{base}[c]\nstonewall\nrw=read\n"), "2.6.32");
    let b = &r.procs[1];
    assert!(
        b.end.as_ns() >= 10_000_000_000,
        "b runs its 10 s without exitall"
    );
    let r = run_on(
        &format!("{base}[c]\nstonewall\nrw=read\n").replace("[global]\n", "[global]\nexitall\n"),
        "2.6.32",
    );
    let (a, b, c) = (&r.procs[0], &r.procs[1], &r.procs[2]);
    assert_eq!(a.dirs[0].ios, 50);
    assert!(b.end.as_ns() < 1_000_000_000, "b stopped at a's end: {b:?}");
    assert!(b.end >= a.end);
    // c is another group (stonewall): it runs after them.
    assert_eq!(c.dirs[0].ios, 1024);
    let text =
        format!("{base}[c]\nstonewall\nrw=read\n").replace("[global]\n", "[global]\nexitall\n");
    let r = run_on(&text.replace("[a]\n", "[a]\nexit_what=all\n"), "2.6.32");
    assert_eq!(r.procs[2].dirs[0].ios, 0, "c never started");
}

/// `randrepeat=0` draws other offsets than the repeatable streams (from the
/// run's seed); `randseed=N` fixes them whatever the run's seed.
#[test]
fn randrepeat_and_randseed_choose_the_random_streams() {
    let base = "[j]\nfilename=/mnt/test/f\nsize=1m\nrw=randread\ndirect=1\nnumber_ios=20\n";
    let a = queued_sectors(base);
    assert_eq!(a, queued_sectors(base), "repeatable");
    let b = queued_sectors(&format!("{base}randrepeat=0\n"));
    assert_ne!(a, b);
    let c = queued_sectors(&format!("{base}randseed=1234\n"));
    assert_ne!(a, c);
    assert_ne!(b, c);
}

/// O_DIRECT random writes into a new file (fio unlinks and recreates a
/// write job's file, tiobench-example.fio's `randwrite`): a write past
/// `i_size` allocates its block and goes direct; one into a hole below
/// `i_size` gets -ENOTBLK from `do_direct_IO` (`get_block` without create,
/// DIO_LOCKING) and `__generic_file_aio_write` writes it through the page
/// cache, writes that back and waits (`filemap_write_and_wait_range`) and
/// drops the pages: the writer itself writes those pages back, none is left
/// cached or dirty, and every write completes.
#[test]
fn direct_writes_into_holes_fall_back_to_the_page_cache() {
    let text = "[j]\nfilename=/mnt/test/f\nsize=8m\nrw=randwrite\ndirect=1\nnumber_ios=200\n";
    let r = run_on(text, "2.6.32");
    let p = &r.procs[0];
    assert!(p.error.is_none(), "{:?}", p.error);
    assert_eq!(p.dirs[1].ios, 200);
    let by_writer = r.vm.wb_pages.dirtier;
    assert!(by_writer > 100, "most writes fall back: {by_writer} pages");
    assert!(
        by_writer < 200,
        "those past i_size go direct: {by_writer} pages"
    );
    // A laid-out file (overwrite=1) has no holes: every write is direct.
    let r = run_on(&format!("{text}overwrite=1\n"), "2.6.32");
    assert_eq!(r.vm.wb_pages.dirtier, 0);
}

/// `random_generator=lfsr`: the offsets real fio 3.33 issues (its
/// `write_iolog`) for two 1 MiB random-read jobs, each block once per pass,
/// and a second pass (`loops=2`) that repeats the first; with `nrfiles=2`
/// each file runs the same sequence (one seed per job). Without it the
/// process's own stream gives another order.
#[test]
fn lfsr_issues_the_offsets_fio_issues() {
    let two = "[global]\ndirectory=/mnt/test\nsize=1m\nbs=4k\nrw=randread\ndirect=1\n\
               random_generator=lfsr\n[a]\n[b]\n";
    let v = file_offsets(two);
    let blocks = |job: &str| -> Vec<u64> {
        v.iter()
            .filter(|f| f.0 == format!("{job}.0.0"))
            .map(|f| f.1 / 4096)
            .collect()
    };
    let (a, b) = (blocks("a"), blocks("b"));
    // fio 3.33: fio --name... as above, --write_iolog, blocks of 4 KiB.
    let fio_a = [
        235, 205, 163, 196, 114, 41, 154, 93, 135, 248, 108, 38, 3, 208, 120, 44,
    ];
    let fio_b = [
        175, 229, 169, 186, 77, 131, 192, 112, 40, 4, 18, 25, 150, 91, 219, 203,
    ];
    assert_eq!(a[..16], fio_a);
    assert_eq!(b[..16], fio_b);
    for s in [&a, &b] {
        let mut sorted = s.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..256).collect::<Vec<u64>>());
    }
    let looped = file_offsets(&format!("{}loops=2\n", two.replace("[b]\n", "")));
    assert_eq!(looped.len(), 512);
    assert_eq!(looped[..256], looped[256..]);
    let files = "[j]\ndirectory=/mnt/test\nnrfiles=2\nsize=64k\nbs=4k\nrw=randread\n\
                 direct=1\nrandom_generator=lfsr\n";
    let v = file_offsets(files);
    let per = |k: usize| -> Vec<u64> {
        v.iter()
            .filter(|f| f.0 == format!("j.0.{k}"))
            .map(|f| f.1 / 4096)
            .collect()
    };
    assert_eq!(per(0), [3, 2, 5, 1, 0, 4, 6, 7]);
    assert_eq!(per(1), per(0));
    let plain = file_offsets(
        &two.replace("random_generator=lfsr\n", "")
            .replace("[b]\n", ""),
    );
    assert_ne!(
        plain
            .iter()
            .map(|f| f.1 / 4096)
            .take(16)
            .collect::<Vec<_>>(),
        fio_a
    );
    let (msg, _, option) =
        refuse("[j]\nrw=randread\nbsrange=4k-8k\nnorandommap\nsize=1m\nrandom_generator=lfsr\n");
    assert_eq!(option.as_deref(), Some("random_generator"), "{msg}");
}

/// The I/Os a job's process completed, in order (direction, file offset in
/// blocks of 4 KiB), and the bytes of reads queued to the device.
fn verify_ios(text: &str) -> (Vec<(char, u64)>, u64) {
    use iostack_core::{Action, TraceEvent, TraceSink};
    use iostack_sim::{tunable_tables, IoEvent, IoObserver, SimConfig, Simulation};
    use std::sync::{Arc, Mutex};
    struct Ios(Arc<Mutex<Vec<(char, u64)>>>);
    impl IoObserver for Ios {
        fn io_done(&mut self, _p: usize, io: &IoEvent) {
            let d = if io.dir == iostack_sim::workload::Dir::Read {
                'r'
            } else {
                'w'
            };
            self.0.lock().unwrap().push((d, io.offset / 4096));
        }
    }
    struct Reads(Arc<Mutex<u64>>);
    impl TraceSink for Reads {
        fn event(&mut self, ev: &TraceEvent) {
            if let TraceEvent::Block(r) = ev {
                if r.action == Action::Queue && !r.flags.is_write() {
                    *self.0.lock().unwrap() += u64::from(r.bytes);
                }
            }
        }
    }
    let m = machine::preset("null").unwrap();
    let procs = fio_procs_from_text("job.fio", text, &m).unwrap().procs;
    let tunables = iostack_core::Tunables::new(
        iostack_core::Profile::parse("2.6.32").unwrap(),
        &tunable_tables(),
    );
    let cfg = SimConfig {
        scheduler: m.scheduler.clone(),
        machine: m,
        tunables,
        seed: iostack_des::Seed(1),
        procs,
        checks: true,
        until: None,
    };
    let (ios, reads) = (Arc::new(Mutex::new(Vec::new())), Arc::new(Mutex::new(0)));
    let mut sim = Simulation::new(cfg).unwrap();
    sim.observe(Box::new(Ios(ios.clone())));
    sim.attach(Box::new(Reads(reads.clone())));
    let (r, _) = sim.run();
    assert!(r.procs.iter().all(|p| p.error.is_none()));
    let v = ios.lock().unwrap().clone();
    let n = *reads.lock().unwrap();
    (v, n)
}

/// `verify=`: after the writes, fio's `do_verify` reads back every piece,
/// from the disk (fsync, then the cache dropped): in issue order with the
/// random map, sorted by offset (overlaps once) with `norandommap` or
/// `lfsr` (the orders of real fio 3.33's `write_iolog` for these jobs);
/// `verify_backlog=4` reads each 4 writes back after them; `verify_only`
/// issues the reads alone; `do_verify=0` none.
#[test]
fn verify_reads_back_what_was_written_in_fios_order() {
    let base = "[v]\nfilename=/mnt/test/vf\nsize=64k\nbs=4k\nrw=randwrite\nverify=crc32c\n";
    let job = |extra: &str| format!("{base}{extra}");
    let split = |v: &[(char, u64)]| -> (Vec<u64>, Vec<u64>) {
        let w = v.iter().filter(|x| x.0 == 'w').map(|x| x.1).collect();
        let r = v.iter().filter(|x| x.0 == 'r').map(|x| x.1).collect();
        (w, r)
    };
    let (v, disk_reads) = verify_ios(&job(""));
    let (w, r) = split(&v);
    assert_eq!(w.len(), 16);
    assert_eq!(r, w, "random map: the list, in issue order");
    assert_eq!(&v[..16], w.iter().map(|&b| ('w', b)).collect::<Vec<_>>());
    assert_eq!(disk_reads, 64 << 10, "the reads reach the disk");
    let (v, _) = verify_ios(&job("norandommap\n"));
    let (w, r) = split(&v);
    let mut sorted = w.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert!(sorted.len() < w.len(), "norandommap repeats some blocks");
    assert_eq!(r, sorted, "the tree: by offset, each block once");
    let (v, _) = verify_ios(&job("size=32k\nrandom_generator=lfsr\n"));
    let fio: Vec<(char, u64)> = "w3 w2 w5 w1 w0 w4 w6 w7 r0 r1 r2 r3 r4 r5 r6 r7"
        .split(' ')
        .map(|s| (s.as_bytes()[0] as char, s[1..].parse().unwrap()))
        .collect();
    assert_eq!(v, fio);
    let (v, _) = verify_ios(&job("verify_backlog=4\n"));
    assert_eq!(v.len(), 32);
    for (k, chunk) in v.chunks(8).enumerate() {
        let (w, r) = split(chunk);
        assert_eq!(w, r, "batch {k}: {chunk:?}");
        assert!(chunk[..4].iter().all(|x| x.0 == 'w'), "{chunk:?}");
    }
    let (plain, _) = verify_ios(&job("do_verify=0\n"));
    assert!(plain.iter().all(|x| x.0 == 'w'));
    let (only, _) = verify_ios(&job("verify_only\n"));
    let (w, _) = split(&plain);
    assert_eq!(only, w.iter().map(|&b| ('r', b)).collect::<Vec<_>>());
    let (msg, _, option) = refuse(&format!("{base}direct=1\n"));
    assert_eq!(option.as_deref(), Some("verify"), "{msg}");
}

/// `zonemode=strided`: the offsets real fio 3.33 issues (its
/// `write_iolog`, blocks of 4 KiB) for sequential zones with a skip, a
/// zonesize larger than the zonerange (the zone again), and random zones
/// with the LFSR (reset at each zone); `zonesize` without the mode is
/// fio's error.
#[test]
fn strided_zones_issue_fios_offsets() {
    let job = |extra: &str| {
        let text = format!(
            "[z]\nfilename=/mnt/test/zf\nbs=4k\ndirect=1\nzonemode=strided\n{}\n",
            extra.replace(' ', "\n")
        );
        file_offsets(&text)
            .into_iter()
            .map(|f| f.1 / 4096)
            .collect::<Vec<u64>>()
    };
    let pass: Vec<u64> = (0..8).flat_map(|z| [z * 8, z * 8 + 1]).collect();
    let skip = job("rw=read zonesize=8k zonerange=16k zoneskip=16k size=256k");
    assert_eq!(skip, pass.repeat(4));
    let again = job("rw=read zonesize=24k zonerange=8k size=64k");
    assert_eq!(again, [0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 4, 5, 4, 5]);
    let lfsr =
        job("rw=randread zonesize=8k zonerange=32k size=256k io_size=64k random_generator=lfsr");
    let fio = [3, 2, 11, 10, 19, 18, 27, 26, 35, 34, 43, 42, 51, 50, 59, 58];
    assert_eq!(lfsr, fio);
    let lfsr =
        job("rw=randread zonesize=48k zonerange=32k size=256k io_size=96k random_generator=lfsr");
    let fio = [
        3, 2, 5, 1, 0, 4, 6, 7, 3, 2, 5, 1, 11, 10, 13, 9, 8, 12, 14, 15, 11, 10, 13, 9,
    ];
    assert_eq!(lfsr, fio);
    // The random map: each zone's blocks once per pass of its range.
    let map = job("rw=randread zonesize=32k zonerange=32k size=256k io_size=64k");
    let mut z0: Vec<u64> = map[..8].to_vec();
    z0.sort_unstable();
    assert_eq!(z0, (0..8).collect::<Vec<u64>>());
    assert!(map[8..].iter().all(|b| (8..16).contains(b)), "{map:?}");
    let (msg, _, option) = refuse("[j]\nrw=read\nsize=1m\nzonesize=8k\n");
    assert_eq!(option.as_deref(), Some("zonesize"), "{msg}");
    assert!(msg.contains("not compatible"), "{msg}");
}

/// A write job whose file an earlier job of the file laid out long enough
/// writes into it (fio's `setup_files` needs no `extend_file`, so nothing is
/// unlinked): ssd-test.fio's seq-write after seq-read. Too short, it is
/// still refused.
#[test]
fn a_write_job_reuses_a_file_an_earlier_job_laid_out() {
    let text = "[global]\nfilename=/mnt/test/s\nbs=4k\ndirect=1\nsize=64k\n\
                [r]\nrw=read\n[w]\nstonewall\nrw=write\n";
    let v = file_offsets(text);
    assert_eq!(v.len(), 32);
    assert!(v.iter().all(|f| f.0 == "s"));
    let (r, w) = v.split_at(16);
    assert_eq!(r, w, "the writes go to the blocks the reads read");
    let short = text.replace("[w]\nstonewall\n", "[w]\nstonewall\nsize=128k\n");
    let m = machine::preset("null").unwrap();
    let procs = fio_procs_from_text("job.fio", &short, &m).unwrap().procs;
    let tunables = iostack_core::Tunables::new(
        iostack_core::Profile::parse("2.6.32").unwrap(),
        &iostack_sim::tunable_tables(),
    );
    let cfg = iostack_sim::SimConfig {
        scheduler: m.scheduler.clone(),
        machine: m,
        tunables,
        seed: iostack_des::Seed(1),
        procs,
        checks: true,
        until: None,
    };
    let err = iostack_sim::Simulation::new(cfg).err().expect("refused");
    assert!(err.to_string().contains("afresh"), "{err}");
}

/// `random_generator=tausworthe64`: fio's generator, seed and block
/// arithmetic give the blocks real fio 3.33 reads (`write_iolog`) for a 1
/// MiB random-read job, without the random map and with it (a taken block
/// moves to the next free one, `axmap_next_free`, wrapping at the end).
#[test]
fn tausworthe64_issues_the_offsets_fio_issues() {
    let job = |extra: &str| {
        let text = format!(
            "[a]\ndirectory=/mnt/test\nsize=1m\nbs=4k\nrw=randread\ndirect=1\n\
             random_generator=tausworthe64\n{extra}"
        );
        file_offsets(&text)
            .into_iter()
            .map(|f| f.1 / 4096)
            .collect::<Vec<u64>>()
    };
    let free = job("norandommap\n");
    let fio = [
        240, 6, 20, 25, 135, 6, 112, 85, 217, 194, 158, 25, 225, 207, 242, 31,
    ];
    assert_eq!(free[..16], fio);
    let map = job("");
    let fio = [
        240, 6, 20, 25, 135, 7, 112, 85, 217, 194, 158, 26, 225, 207, 242, 31,
    ];
    assert_eq!(map[..16], fio);
    let tail = [202, 1, 3, 5, 36, 37, 39];
    assert_eq!(map[256 - tail.len()..], tail);
    let mut all = map.clone();
    all.sort_unstable();
    assert_eq!(all, (0..256).collect::<Vec<u64>>());
}

/// `bssplit` with the random map: fio's `mark_random_map` marks every block
/// an I/O covers and trims it at the first block already done, so one pass
/// covers the region exactly once (no block twice, none left out), and some
/// I/Os come out shorter than any size of the split. Without the map
/// (`norandommap`) blocks are read twice.
#[test]
fn bssplit_with_the_random_map_covers_each_block_once() {
    let base = "[j]\nfilename=/dev/nullb0\nrw=randread\nsize=1m\ndirect=1\n\
                bssplit=4k/50:64k/50\n";
    let mut e = queued_extents(base);
    let sizes: Vec<u64> = e.iter().map(|x| x.1).collect();
    e.sort_unstable();
    let mut next = 0u64;
    for &(sector, bytes) in &e {
        assert_eq!(sector * 512, next, "a gap or an overlap at sector {sector}");
        next += bytes;
    }
    assert_eq!(next, 1 << 20);
    assert!(sizes.iter().all(|b| b % 4096 == 0 && *b <= 65536));
    let trimmed = sizes.iter().filter(|b| **b != 4096 && **b != 65536).count();
    assert!(trimmed > 0, "no I/O was trimmed at a done block: {sizes:?}");
    // Without the map, offsets repeat.
    let mut free = queued_extents(&format!("{base}norandommap\n"));
    free.sort_unstable();
    let overlaps = free
        .windows(2)
        .filter(|w| w[0].0 * 512 + w[0].1 > w[1].0 * 512)
        .count();
    assert!(overlaps > 0);
    // A different smallest size per direction stays refused.
    let (msg, _, option) =
        refuse("[j]\nrw=randrw\nsize=1m\ndirect=1\nbssplit=4k/50:64k/50,8k/100\n");
    assert_eq!(option.as_deref(), Some("bssplit"), "{msg}");
}

/// `random_distribution=zoned` with varied sizes and `blockalign` (fio's
/// `__get_next_rand_offset_zoned` over `last_block` in units of `ba`, then
/// `get_next_buflen`), as JESD219 runs it: half the I/Os start in the hot
/// 5%, every offset a multiple of `ba`, and both sizes of the split occur.
/// fio turns the random map off for `blockalign`, so no refusal without
/// `norandommap`.
#[test]
fn zoned_distribution_with_varied_sizes_and_blockalign() {
    let text = "[j]\nfilename=/dev/nullb0\nrw=randread\nsize=64m\ndirect=1\nnumber_ios=4000\n\
                bssplit=4k/50:16k/50\nblockalign=8k\n\
                random_distribution=zoned:50/5:50/95\n";
    let e = queued_extents(text);
    assert_eq!(e.len(), 4000);
    // lastb = 64m / 8k blocks; the hot zone is its first 5%.
    let lastb = (64u64 << 20) / 8192;
    let hot_end = lastb * 5 / 100 * 8192 / 512;
    let hot = e.iter().filter(|x| x.0 < hot_end).count() as f64 / 4000.0;
    let bound = 4.0 * (0.25f64 / 4000.0).sqrt();
    assert!((hot - 0.5).abs() < bound, "{hot} in the hot 5%");
    assert!(
        e.iter().all(|x| x.0 % 16 == 0),
        "an offset off the 8k alignment"
    );
    let small = e.iter().filter(|x| x.1 == 4096).count();
    assert!((1700..2300).contains(&small), "{small} of 4000 were 4k");
    assert!(e.iter().all(|x| x.1 == 4096 || x.1 == 16384));
}

/// Direct I/O on a block device below its 4 KiB soft block size: 2.6's
/// `__blockdev_direct_IO` retries at the 512-byte logical block size (a
/// blkfactor), and `blkdev_get_blocks` maps every block, so each I/O is one
/// bio of exactly its own sectors: 1536-byte sequential reads at sectors
/// 0, 3, 6, ... and a 512-byte random read anywhere on a sector.
#[test]
fn sub_block_direct_io_on_a_device_uses_the_logical_block_size() {
    let e = queued_extents("[j]\nfilename=/dev/nullb0\nrw=read\nbs=1536\nsize=15k\ndirect=1\n");
    let want: Vec<(u64, u64)> = (0..10).map(|i| (3 * i, 1536)).collect();
    assert_eq!(e, want);
    let e = queued_extents(
        "[j]\nfilename=/dev/nullb0\nrw=randread\nbs=512\nsize=1m\ndirect=1\nnumber_ios=200\n",
    );
    assert_eq!(e.len(), 200);
    assert!(e.iter().all(|x| x.1 == 512));
    assert!(
        e.iter().any(|x| x.0 % 8 != 0),
        "no offset below 4k alignment"
    );
}

/// fio's flow control (flow.c `flow_threshold_exceeded`): two jobs of one
/// flow, weights 1 and 3, spinning (`flow_sleep=0`). A job passes only while
/// its count over the shared counter (which starts at 1) is at most its
/// weight over the total, so when the light job issues its k-th I/O the
/// heavy one has issued between 3(k-1)-1 and 3k+4. Without flow control the
/// two go at the same pace. With `flow_sleep` the held job quiesces and
/// sleeps instead, and the share holds the same way.
#[test]
fn flow_holds_each_job_to_its_weight() {
    let jobs = |extra: &str| {
        format!(
            "[global]\nfilename=/dev/nullb0\nrw=read\nbs=4k\ndirect=1\n{extra}\n\
             [light]\nsize=400k\nflow=1\n[heavy]\noffset=512m\nsize=16m\nflow=3\n"
        )
    };
    let check = |text: &str| {
        let e = queued_extents(text);
        let limit = (512u64 << 20) / 512;
        let (mut light, mut heavy) = (0u64, 0u64);
        for (sector, _) in e {
            if sector < limit {
                light += 1;
                assert!(
                    heavy + 1 >= 3 * (light - 1) && heavy <= 3 * light + 4,
                    "light I/O {light} after {heavy} heavy ones"
                );
            } else {
                heavy += 1;
            }
        }
        assert_eq!(light, 100);
    };
    check(&jobs(""));
    check(&jobs("flow_sleep=100"));
    // Without flow control the heavy job is nowhere near three times ahead.
    let e = queued_extents(&jobs("").replace("flow=1\n", "").replace("flow=3\n", ""));
    let limit = (512u64 << 20) / 512;
    let at_last_light = e.iter().rposition(|x| x.0 < limit).unwrap();
    let heavy = e[..at_last_light].iter().filter(|x| x.0 >= limit).count();
    assert!(heavy < 200, "{heavy} heavy I/Os before the 100th light one");
    // fio's spin with I/Os in flight is refused.
    let (msg, _, option) = refuse("[j]\nrw=read\nsize=1m\nioengine=libaio\niodepth=4\nflow=2\n");
    assert_eq!(option.as_deref(), Some("flow"), "{msg}");
    // A member of the flow after a stonewall holds the first for ever.
    let (msg, _, option) = refuse(
        "[a]\nrw=read\nsize=1m\nflow=1\nflow_sleep=10\n[b]\nstonewall\nrw=read\nsize=1m\nflow=1\n",
    );
    assert_eq!(option.as_deref(), Some("flow"), "{msg}");
    assert!(msg.contains("for ever"), "{msg}");
}

/// Host placement that changes nothing modelled is accepted and the I/O is
/// the same as without it: node 0 (the machine's one NUMA node), a memory
/// policy on it, every CPU. Another node, a CPU the machine lacks, or a
/// subset of its CPUs is refused at the option.
#[test]
fn placement_on_the_whole_machine_changes_nothing() {
    let base = "[j]\nfilename=/dev/nullb0\nrw=randread\nbs=4k\nsize=1m\ndirect=1\n";
    let plain = queued_extents(base);
    let cpus = machine::preset("null").unwrap().cpus;
    let all = format!("cpus_allowed=0-{}\n", cpus - 1);
    for extra in [
        "numa_cpu_nodes=0\n",
        "numa_mem_policy=bind:0\n",
        all.as_str(),
    ] {
        assert_eq!(queued_extents(&format!("{base}{extra}")), plain, "{extra}");
    }
    for (extra, option) in [
        ("numa_cpu_nodes=0-1", "numa_cpu_nodes"),
        ("numa_mem_policy=interleave:0-1", "numa_mem_policy"),
        ("cpus_allowed=0", "cpus_allowed"),
        ("cpus_allowed=0-4095", "cpus_allowed"),
    ] {
        let (msg, _, got) = refuse(&format!("[j]\nrw=read\nsize=1m\n{extra}\n"));
        assert_eq!(got.as_deref(), Some(option), "{msg}");
    }
}

/// A reader beside a write-only job that creates their shared file afresh:
/// fio would lay the file out for the reader first (`extend_file`), which is
/// not modelled, so the set-up refuses it instead of reading past the end of
/// the writer's empty file. After a stonewall the reader finds the file the
/// writer wrote and reads all of it.
#[test]
fn a_reader_beside_a_writer_creating_its_file_is_refused() {
    let setup = |text: &str| sim_on(text, "2.6.32");
    let pair = "[global]\nfilename=/mnt/test/shared\nsize=4m\nbs=64k\ndirect=1\n\
                [w]\nrw=write\n[r]\nrw=randread\n";
    let err = setup(pair).err().expect("refused").to_string();
    assert!(err.contains("creates afresh"), "{err}");
    let walled = pair.replace("[r]\n", "[r]\nstonewall\n");
    let r = setup(&walled).unwrap().run().0;
    let reader = r.procs.last().unwrap();
    assert_eq!(
        reader.dirs[0].bytes,
        4 << 20,
        "the reader reads the whole file"
    );
}
