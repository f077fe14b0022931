//! The command line as a user meets it: golden reports, `tunables`, and clear
//! errors for bad input that name the file, line and option.

use std::path::PathBuf;
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

fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/golden")
        .join(name);
    if std::env::var("IOSTACK_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, actual).unwrap();
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} missing; run with IOSTACK_BLESS=1", path.display()));
    assert_eq!(
        actual, want,
        "golden {name} differs (IOSTACK_BLESS=1 rewrites it)"
    );
}

#[test]
fn fio_reports_are_golden_and_deterministic() {
    let job = "tests/data/golden/qd4-null.fio";
    for (fmt, file) in [
        ("normal", "qd4-null.normal"),
        ("json", "qd4-null.json"),
        ("old", "qd4-null.old"),
    ] {
        let (ok, out, err) = iostack(&[
            "run",
            job,
            "--machine",
            "null",
            "--sched",
            "noop",
            "--output-format",
            fmt,
        ]);
        assert!(ok, "{err}");
        golden(file, &out);
        let (_, again, _) = iostack(&[
            "run",
            job,
            "--machine",
            "null",
            "--sched",
            "noop",
            "--output-format",
            fmt,
        ]);
        assert_eq!(out, again, "same inputs, same bytes");
    }
    let (_, other_seed, _) = iostack(&["run", job, "--machine", "null", "--seed", "2"]);
    assert!(other_seed.starts_with("iostack: seed=2 config="));
}

#[test]
fn tunables_lists_values_and_units() {
    let (ok, out, err) = iostack(&["tunables", "--kernel", "2.6.36", "--sched", "deadline"]);
    assert!(ok, "{err}");
    assert!(out.contains("queue/scheduler"), "{out}");
    assert!(out.contains("noop [deadline]"), "{out}");
    let line = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or("")
            .to_string()
    };
    assert!(line("queue/nr_requests").contains(" 128 "), "{out}");
    assert!(
        line("iosched/deadline/read_expire").contains("500"),
        "{out}"
    );
    assert!(
        line("iosched/deadline/read_expire").ends_with("ms"),
        "{out}"
    );
    assert!(line("dio/boundary").contains("per-chunk"), "{out}");
    let (_, out310, _) = iostack(&[
        "tunables",
        "--kernel",
        "3.10",
        "--set",
        "queue/nr_requests=64",
    ]);
    assert!(out310
        .lines()
        .any(|l| l.starts_with("dio/boundary") && l.contains("last-chunk")));
    assert!(out310
        .lines()
        .any(|l| l.starts_with("queue/nr_requests") && l.contains(" 64 ")));
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("iostack-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("bad.fio");
    std::fs::write(&job, "[global]\nsize=4m\n\n[j]\nrw=read\nblocksze=4k\n").unwrap();
    let (ok, _, err) = iostack(&["run", job.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("bad.fio:6"), "{err}");
    assert!(err.contains("blocksze"), "{err}");

    std::fs::write(&job, "[j]\nrw=read\nsize=4m\nrw=trim\n").unwrap();
    let (ok, _, err) = iostack(&["run", job.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("bad.fio:1: job 'j'") && err.contains("trim"),
        "{err}"
    );

    std::fs::write(
        &job,
        "[j]\nrw=write\nsize=4m\n\n[k]\nrw=read\nsize=4m\nbs=512\n",
    )
    .unwrap();
    let (ok, _, err) = iostack(&["run", job.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("bad.fio:5: job 'k'") && err.contains("bs (read)=512"),
        "{err}"
    );

    let m = dir.join("m.txt");
    std::fs::write(&m, "base = null\ncpus = many\n").unwrap();
    let (ok, _, err) = iostack(&["tunables", "--machine", m.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("m.txt:2: key 'cpus'"), "{err}");

    for (args, needle) in [
        (
            vec!["tunables", "--set", "queue/nr_requests=2"],
            "out of range 4..=1048576",
        ),
        (
            vec!["tunables", "--set", "nr_requests=64"],
            "did you mean 'queue/nr_requests'",
        ),
        (
            vec!["tunables", "--kernel", "2.6.99"],
            "unknown kernel profile '2.6.99'",
        ),
        (
            vec!["tunables", "--sched", "cfqq"],
            "unknown I/O scheduler 'cfqq'",
        ),
        (vec!["tunables", "--bogus"], "unknown option '--bogus'"),
        (
            vec!["reproduce", "seed-999"],
            "no experiment named 'seed-999'",
        ),
        (
            vec!["dd", "if=/mnt/test/x", "of=/mnt/test/y", "bs=64k"],
            "iostack simulates dd reading",
        ),
        (
            vec![
                "dd",
                "if=/mnt/test/x",
                "of=/dev/null",
                "iflag=direct",
                "bs=64q",
            ],
            "invalid number: '64q'",
        ),
        (
            vec![
                "dd",
                "if=/mnt/test/x",
                "of=/dev/null",
                "iflag=direct",
                "bs=4k",
            ],
            "No such file",
        ),
        (vec!["run", "/nonexistent.fio"], "/nonexistent.fio"),
        (
            vec!["dd", "if=/dev/zero", "of=/mnt/test/y", "bs=1M"],
            "if=/dev/zero without count=",
        ),
        (
            vec![
                "dd",
                "if=/dev/zero",
                "of=/mnt/test/y",
                "bs=1M",
                "count=1",
                "--filefrag",
                "/mnt/test/z",
            ],
            "--filefrag /mnt/test/z: no such simulated file",
        ),
    ] {
        let (ok, _, err) = iostack(&args);
        assert!(!ok, "{args:?} should fail");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tunable_docs_are_generated_from_the_table() {
    let (ok, out, err) = iostack(&["tunables", "--markdown"]);
    assert!(ok, "{err}");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/tunables.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        doc, out,
        "docs/tunables.md is stale: run `iostack tunables --markdown > docs/tunables.md`"
    );
    assert!(doc.contains("| `queue/nr_requests` | count | 4..=1048576 |"));
}

/// docs/presets.md is `iostack machines --markdown`, every preset of the
/// registry is in it and in `iostack machines`, and its numbers are the
/// presets' (spot checks against values the machine code sets).
#[test]
fn preset_docs_are_generated_from_the_registry() {
    let (ok, out, err) = iostack(&["machines", "--markdown"]);
    assert!(ok, "{err}");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/presets.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        doc, out,
        "docs/presets.md is stale: run `iostack machines --markdown > docs/presets.md`"
    );
    let (ok, list, err) = iostack(&["machines"]);
    assert!(ok, "{err}");
    for (name, _) in iostack_sim::machine::MACHINES {
        assert!(
            doc.contains(&format!("### `{name}`")),
            "{name} not in docs/presets.md"
        );
        assert!(
            list.lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name}"
        );
        let m = iostack_sim::machine::preset(name).unwrap();
        let section = doc.split(&format!("### `{name}`")).nth(1).unwrap();
        let section = section.split("\n### ").next().unwrap();
        for (key, value) in [
            ("cpus", m.cpus.to_string()),
            ("mem_mb", (m.mem_bytes >> 20).to_string()),
            ("cpu_bio_ns", m.cpu_bio_ns.to_string()),
            ("scheduler", m.scheduler.clone()),
            ("disk", m.disk_name.clone()),
        ] {
            assert!(
                section.contains(&format!("| `{key}` | {value} |")),
                "{name}: {key} = {value} not in docs/presets.md"
            );
        }
    }
    for (device, _) in iostack_device::presets::list() {
        assert!(doc.contains(&format!("### device `{device}`")), "{device}");
    }
    assert!(doc.contains("| `seek_average_ns` | 8500000 |"));
}

#[test]
fn fio_option_docs_are_generated_from_the_table() {
    let (ok, out, err) = iostack(&["run", "--help-options"]);
    assert!(ok, "{err}");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/fio-options.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        doc, out,
        "docs/fio-options.md is stale: run `iostack run --help-options > docs/fio-options.md`"
    );
    assert!(doc.contains("| `latency_target` | refused: not modelled yet |"));
    assert!(doc.contains("| `direct` | simulated |"));
}

/// The scheduler registry: a scheduler the kernel lacks, or a tunable of one
/// that is not selected, is refused with the reason; `--help` lists each
/// scheduler with the profiles that have it.
#[test]
fn schedulers_are_checked_against_the_kernel_and_their_tunables() {
    let job = "tests/data/golden/qd4-null.fio";
    let base = ["run", job, "--machine", "null"];
    let run = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        iostack(&a)
    };
    let (ok, _, err) = run(&["--kernel", "3.10", "--sched", "anticipatory"]);
    assert!(!ok && err.contains("removed in 2.6.33"), "{err}");
    let (ok, _, err) = run(&["--kernel", "2.4", "--sched", "cfq"]);
    assert!(!ok && err.contains("elevator_linus"), "{err}");
    let (ok, _, err) = run(&["--sched", "deadline", "--set", "iosched/cfq/slice_idle=0"]);
    assert!(!ok && err.contains("belongs to the cfq scheduler"), "{err}");
    let (ok, _, err) = run(&["--sched", "cfq", "--set", "iosched/cfq/slice_idle=0"]);
    assert!(ok, "{err}");
    let (ok, help, _) = iostack(&["--help"]);
    assert!(ok);
    assert!(
        help.contains("anticipatory  profiles 2.6.28, 2.6.32;"),
        "{help}"
    );
    let (ok, out, _) = iostack(&["tunables", "--kernel", "2.6.33", "--sched", "deadline"]);
    assert!(ok);
    assert!(out.contains("noop [deadline] cfq"), "{out}");
    assert!(!out.contains("iosched/cfq/"), "{out}");
}

/// fio's `fdatasync=N` on ext3 with barriers: every fourth write ends in an
/// fdatasync that commits the journal (the file grows) through kjournald;
/// fio 3.33 reports them in the `sync` section and as the fourth `issued
/// rwts` total, and in JSON as `sync.total_ios` with `sync.lat_ns`.
#[test]
fn fdatasync_latency_is_reported_as_fio_does() {
    let dir = std::env::temp_dir().join(format!("iostack-sync-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("sync.fio");
    let text = "[w]\nfilename=/mnt/test/f\nrw=write\nbs=4k\nsize=256k\nfdatasync=4\n";
    std::fs::write(&job, text).unwrap();
    let base = [
        "run",
        job.to_str().unwrap(),
        "--machine",
        "sata-2010",
        "--kernel",
        "2.6.33-36",
        "--set",
        "fs/ext3/barrier=1",
    ];
    let (ok, out, err) = iostack(&base);
    assert!(ok, "{err}");
    assert!(out.contains("  fsync/fdatasync/sync_file_range:\n    sync (usec): min="));
    assert!(out.contains("issued rwts: total=0,64,0,16 "), "{out}");
    let mut json = base.to_vec();
    json.extend(["--output-format", "json"]);
    let (ok, out, err) = iostack(&json);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let sync = &v["jobs"][0]["sync"];
    assert_eq!(sync["total_ios"], 16);
    // Each fdatasync waits for a commit with a barrier on a 7200 rpm disk:
    // milliseconds, not the microseconds of page writeback alone.
    assert!(
        sync["lat_ns"]["min"].as_u64().unwrap() > 1_000_000,
        "{sync}"
    );
    assert_eq!(sync["lat_ns"]["N"], 16);
    // Together with fsync= it is refused, naming the option.
    std::fs::write(&job, format!("{text}fsync=2\n")).unwrap();
    let (ok, _, err) = iostack(&base);
    assert!(!ok && err.contains("fdatasync"), "{err}");
}

/// 6.x splits bios over the queue limits (X) and submits the remainder once the
/// front part has its request, also when the front part slept for a scheduler
/// tag: 2 MiB O_DIRECT writes at QD16 over a queue of 128 KiB requests and 4
/// scheduler tags complete under the invariant and trace checkers (`--check`),
/// each I/O's completion after all its parts.
#[test]
fn split_bios_survive_tag_sleeps_under_the_checker() {
    let d = std::env::temp_dir().join(format!("iostack-split-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let (m, j, t) = (d.join("loop.machine"), d.join("big.fio"), d.join("t.txt"));
    std::fs::write(
        &m,
        "base = null\ndevice = loop-file\ndisk_name = loop0\nmajor = 7\nminor = 0\ncpus = 2\n",
    )
    .unwrap();
    std::fs::write(
        &j,
        "[w]\nfilename=/dev/loop0\nrw=randwrite\nbs=2M\ndirect=1\nioengine=libaio\n\
         iodepth=16\nsize=32M\nio_size=64M\n",
    )
    .unwrap();
    for sched in ["mq-deadline", "none"] {
        let (ok, out, err) = iostack(&[
            "run",
            j.to_str().unwrap(),
            "--machine",
            m.to_str().unwrap(),
            "--kernel",
            "6.x",
            "--sched",
            sched,
            "--set",
            "queue/max_sectors_kb=128",
            "--set",
            "queue/nr_requests=4",
            "--ftrace",
            t.to_str().unwrap(),
            "--check",
        ]);
        assert!(ok, "{sched}: {err}");
        assert!(out.contains("(64.0MiB/"), "{sched}: {out}");
        let trace = std::fs::read_to_string(&t).unwrap();
        // 32 writes of two BIO_MAX_VECS bios (2048 sectors), each split
        // seven times into eight requests of 256 sectors.
        assert_eq!(trace.matches("    X  WS ").count(), 32 * 2 * 7, "{sched}");
        assert_eq!(trace.matches("    C  WS ").count(), 32 * 16, "{sched}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// A job with `verify=`: fio's report has the verify reads as its read
/// direction, each direction with its own phase's runtime, and stderr says
/// that no data was compared.
#[test]
fn verify_reports_its_reads_and_says_no_data_is_compared() {
    let dir = std::env::temp_dir().join(format!("iostack-verify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("verify.fio");
    let text = "[v]\nfilename=/mnt/test/f\nrw=randwrite\nbs=4k\nsize=1m\nverify=md5\n";
    std::fs::write(&job, text).unwrap();
    let args = ["run", job.to_str().unwrap(), "--output-format", "json"];
    let (ok, out, err) = iostack(&args);
    assert!(ok, "{err}");
    assert!(err.contains("job 'v': verify:") && err.contains("no data is compared"));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let j = &v["jobs"][0];
    assert_eq!(j["read"]["io_bytes"], 1 << 20);
    assert_eq!(j["write"]["io_bytes"], 1 << 20);
    let (r, w) = (&j["read"]["runtime"], &j["write"]["runtime"]);
    assert!(r.as_u64().unwrap() > 0 && w.as_u64().unwrap() > 0);
    assert_ne!(r, w, "each phase its own runtime");
    let (ok, _, err) = iostack(&["run", job.to_str().unwrap()]);
    assert!(ok && err.contains("no data is compared"));
    std::fs::remove_dir_all(&dir).ok();
}

/// `disable_lat`, `disable_clat`, `disable_slat`: fio's report loses those
/// lines (no samples are taken, `account_io_completion`), and with
/// `disable_clat` the `lat (usec)` buckets; `disable_bw_measurement` empties
/// a per-I/O bandwidth log and its report statistics.
#[test]
fn disable_options_remove_their_report_sections() {
    let dir = std::env::temp_dir().join(format!("iostack-disable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("d.fio");
    let base = "[j]\nfilename=/mnt/test/a\nsize=256k\nrw=randread\ndirect=1\n\
                ioengine=libaio\niodepth=4\n";
    let run = |extra: &str| {
        std::fs::write(&job, format!("{base}{extra}")).unwrap();
        let (ok, out, err) = iostack(&["run", job.to_str().unwrap()]);
        assert!(ok, "{err}");
        out
    };
    let all = run("");
    for needle in ["    slat (", "    clat (", "     lat (", "\n  lat (usec)"] {
        assert!(all.contains(needle), "{needle} in\n{all}");
    }
    let lacks = |extra: &str, gone: &[&str], kept: &[&str]| {
        let out = run(extra);
        for g in gone {
            assert!(!out.contains(g), "{extra}: {g} in\n{out}");
        }
        for k in kept {
            assert!(out.contains(k), "{extra}: {k} not in\n{out}");
        }
    };
    lacks(
        "disable_lat=1\n",
        &["     lat ("],
        &["    clat (", "    slat ("],
    );
    lacks(
        "disable_clat=1\n",
        &["    clat (", "clat percentiles", "\n  lat (usec)"],
        &["     lat ("],
    );
    lacks("disable_slat=1\n", &["    slat ("], &["    clat ("]);
    let bw = dir.join("b");
    let bw = bw.to_str().unwrap();
    let bw_log = format!("{bw}_bw.1.log");
    lacks(&format!("write_bw_log={bw}\n"), &[], &["   bw ("]);
    assert!(!std::fs::read_to_string(&bw_log).unwrap().is_empty());
    lacks(
        &format!("write_bw_log={bw}\ndisable_bw_measurement=1\n"),
        &["   bw ("],
        &[],
    );
    assert!(std::fs::read_to_string(&bw_log).unwrap().is_empty());
    std::fs::remove_dir_all(&dir).ok();
}
