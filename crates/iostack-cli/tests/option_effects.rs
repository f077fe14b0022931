//! No option of the fio option table is both "simulated" and without effect:
//! for each option with status simulated, a job with it and the same job
//! without it differ in their block trace or their fio report (the report's
//! echo of the job's options left out). A simulated option without a case
//! here fails the test, so the table cannot grow an unchecked entry.

use iostack_cli::api::{run_fio, RunInputs};
use iostack_cli::commands::{take, JobSource};
use iostack_report::blkparse::BlkparseSink;
use iostack_workload::options::{all_options, status, Status};

/// One file, 256 KiB.
const FILE: &str = "filename=/mnt/test/a\nsize=256k\n";

/// (option, the job without it, the line that adds it). The option line goes
/// at the end of the job text (the last section).
fn cases() -> Vec<(&'static str, String, &'static str)> {
    let one = |extra: &str| format!("[j]\n{FILE}{extra}");
    let two = |extra: &str| {
        format!("[a]\n{FILE}rw=randread\ndirect=1\n[j]\n{FILE}rw=randread\ndirect=1\n{extra}")
    };
    // A replay of the first 500 ms of mk_blktrace.py's `wl` trace.
    let replay = |extra: &str| {
        format!("[j]\nfilename=/dev/sda\nsize=256k\ndirect=1\nioengine=libaio\n{extra}")
    };
    // Two readers of one file, the first in flow 0 with weight 3.
    let flow = |extra: &str| {
        format!(
            "[a]\n{FILE}rw=randread\ndirect=1\nflow=3\n[j]\n{FILE}rw=randread\ndirect=1\n{extra}"
        )
    };
    const WL: &str = "read_iolog=tests/data/replay/wl\n";
    let slow = "direct=1\nthinktime=2500000\nruntime=10\n";
    let think = "thinktime=1000\nthinktime_blocks=4\nioengine=libaio\niodepth=4\ndirect=1\n";
    vec![
        ("name", one(""), "name=other"),
        (
            "filename",
            format!("[w]\n{FILE}rw=write\n[j]\nstonewall\nsize=256k\n"),
            "filename=/mnt/test/a",
        ),
        (
            "directory",
            "[j]\nsize=256k\n".into(),
            "directory=/mnt/test/sub",
        ),
        ("rw", one(""), "rw=randread"),
        (
            "rw_sequencer",
            one("rw=randread:4\nnorandommap\n"),
            "rw_sequencer=identical",
        ),
        (
            "ioengine",
            one("direct=1\nrw=randread\niodepth=4\n"),
            "ioengine=libaio",
        ),
        (
            "iodepth",
            one("direct=1\nioengine=libaio\nrw=randread\n"),
            "iodepth=8",
        ),
        ("size", one(""), "size=128k"),
        ("io_size", one(""), "io_size=128k"),
        ("offset", one(""), "offset=64k"),
        (
            "offset_increment",
            "[j]\nsize=256k\nnumjobs=2\n".into(),
            "offset_increment=64k",
        ),
        ("number_ios", one(""), "number_ios=10"),
        ("bs", one(""), "bs=8k"),
        ("bsrange", one("direct=1\n"), "bsrange=4k-64k"),
        ("bssplit", one("direct=1\n"), "bssplit=4k/50:64k/50"),
        ("norandommap", one("rw=randread\ndirect=1\n"), "norandommap"),
        (
            "random_distribution",
            one("rw=randread\ndirect=1\nnorandommap\n"),
            "random_distribution=zoned:50/5:50/95",
        ),
        (
            "percentage_random",
            one("rw=randread\ndirect=1\nnorandommap\n"),
            "percentage_random=50",
        ),
        (
            "fadvise_hint",
            one("rw=randread\nbs=16k\n"),
            "fadvise_hint=0",
        ),
        ("fsync", one("rw=write\n"), "fsync=8"),
        ("fdatasync", one("rw=write\n"), "fdatasync=8"),
        ("direct", one(""), "direct=1"),
        ("buffered", one(""), "buffered=0"),
        ("overwrite", one("rw=write\n"), "overwrite=1"),
        ("loops", one("direct=1\n"), "loops=2"),
        ("numjobs", "[j]\nsize=256k\n".into(), "numjobs=2"),
        ("startdelay", one(""), "startdelay=1s"),
        ("runtime", one("direct=1\nrw=randread\n"), "runtime=20ms"),
        ("time_based", one("direct=1\nruntime=1s\n"), "time_based"),
        ("rwmixread", one("rw=randrw\ndirect=1\n"), "rwmixread=90"),
        ("rwmixwrite", one("rw=randrw\ndirect=1\n"), "rwmixwrite=90"),
        ("prio", two(""), "prio=7"),
        ("prioclass", two(""), "prioclass=3"),
        ("thinktime", one("direct=1\n"), "thinktime=1000"),
        (
            "thinktime_spin",
            one("direct=1\nthinktime=1000\n"),
            "thinktime_spin=500",
        ),
        (
            "thinktime_blocks",
            one("direct=1\nthinktime=1000\n"),
            "thinktime_blocks=4",
        ),
        (
            "thinktime_blocks_type",
            one(think),
            "thinktime_blocks_type=issue",
        ),
        ("rate", one("direct=1\n"), "rate=1m"),
        ("rate_iops", one("direct=1\n"), "rate_iops=100"),
        (
            "rate_process",
            one("direct=1\nrate_iops=100\n"),
            "rate_process=poisson",
        ),
        // A think time of 2.5 s: check_min_rate sees 1 I/O per 2.5 s.
        ("rate_min", one(slow), "rate_min=4096"),
        ("rate_iops_min", one(slow), "rate_iops_min=1"),
        (
            "rate_cycle",
            // Fails at the 3.5 s check; with a 3 s cycle the last check,
            // at 4.2 s, is 2.1 s after the first: the job runs out.
            one("direct=1\nthinktime=700000\nruntime=4\nrate_iops_min=2\n"),
            "rate_cycle=3000",
        ),
        (
            "io_submit_mode",
            one("direct=1\nioengine=libaio\niodepth=4\nrate_iops=1000\n"),
            "io_submit_mode=offload",
        ),
        (
            "invalidate",
            format!("[w]\n{FILE}rw=write\n[j]\nstonewall\n{FILE}rw=read\n"),
            "invalidate=0",
        ),
        ("sync", one("rw=write\n"), "sync=1"),
        ("end_fsync", one("rw=write\n"), "end_fsync=1"),
        ("filesize", one("rw=randread\ndirect=1\n"), "filesize=512k"),
        (
            "ba",
            one("rw=randread\ndirect=1\nnorandommap\n"),
            "blockalign=16k",
        ),
        ("read_iolog", replay(""), "read_iolog=tests/data/replay/wl"),
        ("replay_no_stall", replay(WL), "replay_no_stall=1"),
        ("replay_redirect", replay(WL), "replay_redirect=/mnt/test/r"),
        (
            "replay_scale",
            replay(&format!("{WL}replay_align=4096\n")),
            "replay_scale=2",
        ),
        ("replay_align", replay(WL), "replay_align=1048576"),
        ("replay_time_scale", replay(WL), "replay_time_scale=200"),
        ("replay_skip", replay(WL), "replay_skip=read"),
        ("stonewall", two(""), "stonewall"),
        ("new_group", two(""), "new_group"),
        (
            "nrfiles",
            "[j]\ndirectory=/mnt/test\nsize=256k\ndirect=1\n".into(),
            "nrfiles=2",
        ),
        (
            "file_service_type",
            "[j]\ndirectory=/mnt/test\nsize=256k\ndirect=1\nnrfiles=2\n".into(),
            "file_service_type=sequential",
        ),
        (
            "filename_format",
            "[j]\ndirectory=/mnt/test\nsize=256k\nnumjobs=2\n".into(),
            "filename_format=shared",
        ),
        (
            "wait_for",
            format!("[a]\n{FILE}rw=randread\ndirect=1\n[j]\nfilename=/mnt/test/b\nsize=256k\nrw=randread\ndirect=1\n"),
            "wait_for=a",
        ),
        (
            "exitall",
            format!("[a]\n{FILE}number_ios=10\ndirect=1\n[j]\nfilename=/mnt/test/b\nsize=256k\ndirect=1\n"),
            "exitall",
        ),
        (
            "exit_what",
            format!("[a]\n{FILE}direct=1\nexitall\n[j]\nnew_group\nfilename=/mnt/test/b\nsize=256k\nnumber_ios=5\ndirect=1\n"),
            "exit_what=all",
        ),
        ("randrepeat", one("rw=randread\ndirect=1\n"), "randrepeat=0"),
        ("randseed", one("rw=randread\ndirect=1\n"), "randseed=7"),
        ("verify", one("rw=randwrite\n"), "verify=crc32c"),
        (
            "zonemode",
            one("direct=1\n"),
            "zonemode=strided\nzonesize=16k\nzonerange=64k",
        ),
        (
            "zonesize",
            one("direct=1\nzonemode=strided\nzonesize=16k\nzonerange=64k\n"),
            "zonesize=32k",
        ),
        (
            "zonerange",
            one("direct=1\nzonemode=strided\nzonesize=16k\n"),
            "zonerange=64k",
        ),
        (
            "zoneskip",
            one("direct=1\nzonemode=strided\nzonesize=16k\n"),
            "zoneskip=16k",
        ),
        (
            "do_verify",
            one("rw=randwrite\nverify=crc32c\n"),
            "do_verify=0",
        ),
        (
            "verify_only",
            one("rw=randwrite\nverify=crc32c\n"),
            "verify_only",
        ),
        (
            "verify_backlog",
            one("rw=randwrite\nverify=crc32c\n"),
            "verify_backlog=8",
        ),
        (
            "verify_backlog_batch",
            one("rw=randwrite\nverify=crc32c\nverify_backlog=8\n"),
            "verify_backlog_batch=2",
        ),
        (
            "random_generator",
            one("rw=randread\ndirect=1\n"),
            "random_generator=lfsr",
        ),
        ("flow", flow(""), "flow=1"),
        ("flow_id", flow("flow=1\n"), "flow_id=1"),
        ("flow_sleep", flow("flow=1\n"), "flow_sleep=1000"),
    ]
}

/// Simulated options whose only accepted value is their default: no job can
/// set them to anything else, so there is nothing to compare.
const ONLY_DEFAULT: &[(&str, &str)] = &[];

/// The block trace and the fio JSON report of a job, without the report's echo
/// of the options as written.
fn outcome(text: &str) -> (String, serde_json::Value) {
    let inp = RunInputs {
        jobs: vec![JobSource::Text {
            name: "job.fio".into(),
            text: text.to_string(),
        }],
        ..RunInputs::default()
    };
    let sink = Box::new(BlkparseSink::new("sda"));
    // A job that fails (check_min_rate) ends the run with its error.
    let mut run = match run_fio(&inp, vec![sink]) {
        Ok(run) => run,
        Err(e) if e.to_string().contains("check_min_rate") => {
            return (e.to_string(), serde_json::Value::Null)
        }
        Err(e) => panic!("{text}: {e}"),
    };
    let trace = take::<BlkparseSink>(&mut run.sinks).unwrap().text();
    let mut v: serde_json::Value = serde_json::from_str(&run.json).unwrap();
    v.as_object_mut().unwrap().remove("global options");
    for j in v["jobs"].as_array_mut().unwrap() {
        j.as_object_mut().unwrap().remove("job options");
    }
    (trace, v)
}

#[test]
fn no_simulated_option_is_without_effect() {
    let cases = cases();
    for d in all_options() {
        if status(d).0 != Status::Simulated || ONLY_DEFAULT.iter().any(|(n, _)| *n == d.name) {
            continue;
        }
        assert!(
            cases.iter().any(|c| c.0 == d.name),
            "simulated option '{}' has no case in option_effects.rs",
            d.name
        );
    }
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .chunks(cases.len().div_ceil(4))
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .filter(|(_, base, line)| {
                            outcome(base) == outcome(&format!("{base}{line}\n"))
                        })
                        .map(|(name, base, line)| {
                            format!("{name}: '{line}' changes nothing in\n{base}")
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
