//! Typed fields of resolved jobs.

mod common;

use iostack_workload::*;

fn jobs(file: &str) -> Vec<JobSpec> {
    parse_job_file(file, &common::test_env())
        .unwrap_or_else(|e| panic!("{e}"))
        .jobs
}

fn job<'a>(jobs: &'a [JobSpec], section: &str) -> &'a JobSpec {
    jobs.iter().find(|j| j.section == section).unwrap()
}

#[test]
fn per_direction_values() {
    let js = jobs("valid/perdir.fio");
    let bs = |s: &str| {
        let j = job(&js, s);
        (j.bs.read, j.bs.write, j.bs.trim)
    };
    assert_eq!(bs("bs-rw"), (8192, 32768, 32768));
    assert_eq!(bs("bs-trailing"), (8192, 32768, 4096));
    assert_eq!(bs("bs-write-only"), (4096, 8192, 8192));
    let r = job(&js, "ranges");
    assert_eq!((r.min_bs.read, r.max_bs.read), (1024, 4096));
    assert_eq!((r.min_bs.trim, r.max_bs.trim), (1024, 4096));
    assert_eq!(r.blockalign.read, 4096);
    assert_eq!(
        (r.rate.read, r.rate.write, r.rate.trim),
        (1 << 20, 500 << 10, 500 << 10)
    );
    assert_eq!((r.rate_iops.read, r.rate_iops.write), (0, 100));
    let c = job(&js, "ranges-colon");
    assert_eq!((c.min_bs.read, c.max_bs.read), (1024, 4096));
    assert_eq!((c.min_bs.write, c.max_bs.write), (8192, 16384));
    assert_eq!((c.rwmix_read, c.rwmix_write), (70, 30));
    let s = job(&js, "split");
    assert_eq!(
        s.bssplit.read,
        vec![
            BsSplit {
                bs: 65536,
                percent: 20
            },
            BsSplit {
                bs: 16384,
                percent: 30
            },
            BsSplit {
                bs: 4096,
                percent: 50
            }
        ]
    );
    assert_eq!(
        s.bssplit.write,
        vec![BsSplit {
            bs: 8192,
            percent: 100
        }]
    );
    assert_eq!((s.min_bs.read, s.max_bs.read), (4096, 65536));
}

#[test]
fn rw_modes() {
    let js = jobs("valid/rwmod.fio");
    let h = job(&js, "holes");
    assert_eq!(h.rw.kind, RwKind::Write);
    assert_eq!(h.rw.modifier, Some(RwModifier::SeqAdd(4096)));
    let b = job(&js, "backwards");
    assert_eq!(
        b.rw,
        RwMode {
            kind: RwKind::Read,
            modifier: Some(RwModifier::SeqAdd(-8192))
        }
    );
    let r = job(&js, "runs");
    assert_eq!(r.rw.modifier, Some(RwModifier::RandomRun(4)));
    assert_eq!(r.rw_sequencer, RwSequencer::Identical);
    assert!(r.rw.kind.is_random() && r.rw.kind.reads() && !r.rw.kind.writes());
    let m = job(&js, "mixed");
    assert_eq!(m.rw.kind, RwKind::RandRw);
    assert!(m.rw.kind.is_mixed());
    assert_eq!((m.rwmix_read, m.rwmix_write), (70, 30));
    assert_eq!(m.size, Some(Amount::Bytes(65536)));
}

#[test]
fn globals_apply_in_order() {
    let js = jobs("valid/globals_multi.fio");
    let (j1, j2, j3) = (job(&js, "job1"), job(&js, "job2"), job(&js, "job3"));
    assert_eq!(j1.ioengine, IoEngine::Psync);
    assert_eq!(j1.bs.read, 4096);
    assert_eq!(j1.global_options_applied, 2);
    assert_eq!(j2.ioengine, IoEngine::Libaio);
    assert_eq!(j2.iodepth, 8);
    assert_eq!(j2.rw.kind, RwKind::RandWrite);
    assert_eq!(j2.bs.read, 8192);
    assert_eq!(j2.global_options_applied, 5);
    assert_eq!((j3.bs.read, j3.bs.write), (16384, 65536));
    assert_eq!(j3.rw.kind, RwKind::RandRead);
    assert_eq!(j3.size, Some(Amount::Bytes(128 << 20)));
    assert_eq!(j3.global_options_applied, 6);
    let jf = parse_job_file("valid/globals_multi.fio", &common::test_env()).unwrap();
    let all: Vec<&str> = jf
        .job_options(&jf.jobs[1])
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(all, vec!["rw", "size", "bs", "ioengine", "iodepth", "rw"]);
}

#[test]
fn engines_and_engine_options() {
    let jf = parse_job_file("valid/engines.fio", &common::test_env()).unwrap();
    let js = &jf.jobs;
    let a = job(js, "aio");
    assert_eq!(a.ioengine, IoEngine::Libaio);
    assert_eq!(
        (a.iodepth, a.iodepth_batch, a.iodepth_batch_complete_min),
        (16, 4, 2)
    );
    assert!(a.direct);
    let reap = a
        .options
        .iter()
        .find(|o| o.name == "userspace_reap")
        .unwrap();
    assert_eq!(reap.engine.as_deref(), Some("libaio"));
    assert_eq!(reap.value, None);
    assert_eq!(a.option("cmdprio_percentage"), Some(Some("10")));
    let u = job(js, "uring");
    assert_eq!(u.ioengine, IoEngine::IoUring);
    // The engine option written before ioengine= is still resolved against it.
    assert_eq!(u.options[0].name, "hipri");
    let names: Vec<IoEngine> = js.iter().map(|j| j.ioengine).collect();
    assert_eq!(
        names,
        vec![
            IoEngine::Libaio,
            IoEngine::IoUring,
            IoEngine::Pvsync2,
            IoEngine::Mmap,
            IoEngine::Sync,
            IoEngine::Vsync,
            IoEngine::Pvsync,
            IoEngine::Posixaio,
            IoEngine::Null
        ]
    );
    assert!(IoEngine::Psync.is_sync() && !IoEngine::Libaio.is_sync());
}

#[test]
fn booleans_groups_and_stonewall() {
    let js = jobs("valid/bools.fio");
    let (b1, b2) = (job(&js, "b1"), job(&js, "b2"));
    assert!(b1.group_reporting && b1.thread && b1.exitall);
    assert!(b1.norandommap && b1.time_based && b1.direct && b1.create_on_open && b1.end_fsync);
    assert!(b2.stonewall && b2.new_group && b2.direct && b2.fsync_on_close);
    assert_eq!((b1.group_id, b2.group_id), (0, 1));
    let js = jobs("valid/sample_direct.fio");
    assert_eq!(js[0].group_id, 0);
    assert_eq!(js[1].group_id, 1);
    assert_eq!(js[1].files, vec!["/mnt/test/direct.dat".to_string()]);
}

#[test]
fn misc_options() {
    let jf = parse_job_file("valid/misc.fio", &common::test_env()).unwrap();
    let m = &jf.jobs[0];
    assert_eq!(m.name, "renamed");
    assert_eq!(m.section, "m1");
    assert_eq!(
        m.description.as_deref(),
        Some("A job with \"many\" options")
    );
    assert_eq!(m.kb_base, 1000);
    assert_eq!(m.unit_base, 8);
    assert_eq!(m.filesize, Some((1_000_000, 1_000_000)));
    assert_eq!(m.io_size, Some(Amount::Bytes(8_000_000)));
    assert_eq!(m.size, Some(Amount::Percent(20)));
    assert_eq!(m.offset, Amount::Percent(10));
    assert_eq!(m.offset_increment, Amount::Bytes(1_000_000));
    assert_eq!(
        m.files,
        vec!["/tmp/a:b//dev/shm/x:y", "/tmp/a:b//dev/shm/z"]
    );
    assert_eq!(m.nrfiles, 2);
    assert_eq!((m.fsync, m.fdatasync), (32, 16));
    assert_eq!(m.sync, SyncMode::Dsync);
    assert!(m.overwrite && !m.invalidate && !m.randrepeat);
    assert_eq!(m.randseed, Some(1234));
    assert_eq!(m.random_generator, RandomGenerator::Lfsr);
    assert_eq!(
        m.random_distribution,
        RandomDistribution::Zipf {
            theta: 1.2,
            center: -1.0
        }
    );
    assert!(m.norandommap);
    assert_eq!((m.prio, m.prioclass, m.nice), (Some(4), Some(2), -5));
    assert_eq!(m.cpus_allowed.as_deref(), Some("0-1"));
    assert_eq!(m.write_iolog.as_deref(), Some("/tmp/iolog.txt"));
    assert_eq!(m.loops, 3);
    assert!(m.zero_buffers && m.refill_buffers && !m.scramble_buffers);
    assert_eq!(m.fallocate, Fallocate::None);
    // gtod_reduce=1 (later in the section) switches lat_percentiles back off.
    assert!(m.unlink && !m.lat_percentiles);
    assert!(!m.clat_percentiles && !m.per_job_logs && m.allow_file_create);
    assert_eq!(m.percentile_list, vec![50.0, 99.0, 99.9]);
    assert_eq!(m.write_bw_log.as_deref(), Some("foo"));
    assert_eq!(m.write_lat_log.as_deref(), Some(""));
    assert_eq!(m.write_iops_log, None);
    assert_eq!(m.log_avg_msec, 1000);
    assert_eq!(m.file_service_type, "random");
    assert_eq!(m.verify, None);
    assert!(m.gtod_reduce && m.disable_lat);
    assert_eq!(m.numjobs, 2);
    let m2 = &jf.jobs[1];
    assert_eq!(m2.wait_for.as_deref(), Some("renamed"));
    assert_eq!(m2.verify.as_deref(), Some("crc32c"));
    assert_eq!(m2.read_iolog.as_deref(), Some("/tmp/replay.log"));
    assert_eq!(
        (m2.rate_iops.read, m2.rate_iops.write, m2.rate_iops.trim),
        (100, 200, 200)
    );
    let RandomDistribution::Zoned(z) = &m2.random_distribution else {
        panic!("{:?}", m2.random_distribution)
    };
    let zs: Vec<(u32, u64)> = z.read.iter().map(|z| (z.access_percent, z.size)).collect();
    assert_eq!(zs, vec![(50, 5), (30, 15), (20, 80)]);
    assert_eq!((m.group_id, m2.group_id), (0, 1));
    // Nothing is lost: every option line is kept, in order, with its line number.
    assert_eq!(m.options.len(), 40);
    assert_eq!(jf.global_options.len(), 7);
    assert!(m.options.windows(2).all(|w| w[0].line < w[1].line));
}

#[test]
fn includes_and_comments() {
    let jf = parse_job_file("valid/include.fio", &common::test_env()).unwrap();
    let g: Vec<(&str, String)> = jf
        .global_options
        .iter()
        .map(|o| (o.name.as_str(), o.file.display().to_string()))
        .collect();
    assert_eq!(
        g,
        vec![
            ("ioengine", "valid/../inc/common.inc".to_string()),
            ("bs", "valid/../inc/common.inc".to_string()),
            ("direct", "valid/../inc/nested.inc".to_string()),
            ("size", "valid/include.fio".to_string()),
        ]
    );
    assert!(jf.jobs[0].direct);

    let jf = parse_job_file("valid/comments.fio", &common::test_env()).unwrap();
    let j = &jf.jobs[0];
    assert_eq!(j.section, "commented");
    assert_eq!(j.description.as_deref(), Some("a job"));
    assert_eq!(j.size, Some(Amount::Bytes(2048)));
    assert_eq!(j.bs.read, 1024);
    assert_eq!(j.numjobs, 4);
    assert_eq!(j.rw.kind, RwKind::Write);

    let jf = parse_job_file("valid/crlf.fio", &common::test_env()).unwrap();
    assert_eq!(jf.jobs[0].section, "crlf-job");
    assert_eq!(jf.jobs[0].bs.read, 8192);
}

#[test]
fn sections_named_like_global() {
    let jf = parse_job_file("valid/sections.fio", &common::test_env()).unwrap();
    let kinds: Vec<(&str, bool)> = jf
        .sections
        .iter()
        .map(|s| (s.name.as_str(), s.global))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("global-ish", true),
            ("my job", false),
            ("x", false),
            ("y", false),
            ("globalx", true),
            ("last", false)
        ]
    );
    assert_eq!(jf.jobs.last().unwrap().iodepth, 4);
    assert_eq!(jf.jobs[0].iodepth, 1);
}

#[test]
fn virtual_file_system_includes() {
    let mut env = ParseEnv::default();
    let mut files = std::collections::BTreeMap::new();
    files.insert(
        std::path::PathBuf::from("./jobs/main.fio"),
        b"[j]\ninclude common.inc\n".to_vec(),
    );
    files.insert(
        std::path::PathBuf::from("./jobs/common.inc"),
        b"bs=64k\n".to_vec(),
    );
    env.files = Some(files);
    let jf = parse_job_file("jobs/main.fio", &env).unwrap();
    assert_eq!(jf.jobs[0].bs.read, 65536);
    assert_eq!(
        jf.jobs[0].options[0].file,
        std::path::PathBuf::from("jobs/common.inc")
    );
}

#[test]
fn option_table_is_declared_once() {
    let bs = options::find_option("blocksize").unwrap();
    assert_eq!((bs.name, bs.alias), ("bs", Some("blocksize")));
    assert_eq!(bs.value_type(), ValueType::Size);
    assert!(bs.per_direction());
    assert_eq!(bs.default, Some("4096"));
    let rw = options::find_option("readwrite").unwrap();
    assert_eq!(rw.value_type(), ValueType::Enum);
    assert!(rw.values.iter().any(|(v, _)| *v == "randtrimwrite"));
    assert_eq!(
        options::find_option("runtime").unwrap().value_type(),
        ValueType::Time
    );
    assert_eq!(
        options::find_option("thinktime").unwrap().value_type(),
        ValueType::Time
    );
    assert_eq!(
        options::find_option("time_based").unwrap().value_type(),
        ValueType::Bool
    );
    assert_eq!(
        options::find_option("bsrange").unwrap().value_type(),
        ValueType::Range
    );
    assert_eq!(
        options::find_option("filename").unwrap().value_type(),
        ValueType::String
    );
    for name in [
        "name",
        "description",
        "filename",
        "directory",
        "size",
        "filesize",
        "io_size",
        "offset",
        "nrfiles",
        "rw",
        "readwrite",
        "rwmixread",
        "rwmixwrite",
        "bs",
        "blocksize",
        "bsrange",
        "ba",
        "blockalign",
        "ioengine",
        "iodepth",
        "iodepth_batch",
        "iodepth_batch_submit",
        "iodepth_batch_complete",
        "iodepth_batch_complete_min",
        "iodepth_batch_complete_max",
        "direct",
        "buffered",
        "numjobs",
        "runtime",
        "time_based",
        "ramp_time",
        "startdelay",
        "thread",
        "group_reporting",
        "stonewall",
        "wait_for_previous",
        "new_group",
        "fsync",
        "fdatasync",
        "end_fsync",
        "fsync_on_close",
        "sync",
        "create_on_open",
        "overwrite",
        "invalidate",
        "randrepeat",
        "randseed",
        "norandommap",
        "random_generator",
        "random_distribution",
        "kb_base",
        "unit_base",
        "thinktime",
        "rate",
        "rate_iops",
        "prio",
        "prioclass",
        "nice",
        "cpus_allowed",
        "write_iolog",
        "read_iolog",
        "exitall",
        "loops",
        "zero_buffers",
        "refill_buffers",
        "fallocate",
        "unlink",
        "lat_percentiles",
        "clat_percentiles",
        "percentile_list",
        "write_bw_log",
        "write_lat_log",
        "log_avg_msec",
        "per_job_logs",
        "allow_file_create",
        "file_service_type",
        "scramble_buffers",
        "verify",
        "gtod_reduce",
        "disable_lat",
    ] {
        let o = options::find_option(name).unwrap_or_else(|| panic!("{name}"));
        assert!(!o.help.is_empty(), "{name}");
    }
    assert!(options::CORE_OPTIONS.len() > 200);
}

#[test]
fn include_loops_are_errors() {
    let mut env = ParseEnv::default();
    let mut files = std::collections::BTreeMap::new();
    files.insert(
        std::path::PathBuf::from("./main.fio"),
        b"[j]\ninclude a.inc\n".to_vec(),
    );
    files.insert(
        std::path::PathBuf::from("./a.inc"),
        b"include b.inc\n".to_vec(),
    );
    files.insert(
        std::path::PathBuf::from("./b.inc"),
        b"include a.inc\n".to_vec(),
    );
    env.files = Some(files);
    let e = parse_job_file("main.fio", &env).unwrap_err();
    assert_eq!(e.kind, ErrorKind::IncludeDepth);
}

#[test]
fn fio_lookalike_section_header_quirks() {
    // fio drops the last character of the header whatever it is, and cuts comments
    // first: "[job;1]" names the job "jo".
    let jf = parse_job_str("[job;1]\n[x] ; c\n", "q.fio", &ParseEnv::default()).unwrap();
    let names: Vec<&str> = jf.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, vec!["jo", "x"]);
}
