//! The job file of seed 000 (an LKML report: one O_DIRECT writer and two
//! sequential readers under CFQ) must parse into the right jobs and options.

mod common;

use iostack_workload::{parse_job_file, Amount, IoEngine, RwKind};

#[test]
fn seed000_parses() {
    let env = common::test_env();
    let jf = parse_job_file("seed000.fio", &env).expect("seed000 parses");

    assert_eq!(jf.sections.len(), 3);
    assert!(jf.sections[0].global);
    let globals: Vec<(&str, Option<&str>, usize)> = jf
        .global_options
        .iter()
        .map(|o| (o.name.as_str(), o.value.as_deref(), o.line))
        .collect();
    assert_eq!(
        globals,
        vec![
            ("directory", Some("/mnt/sdc/fio/"), 2),
            ("runtime", Some("10"), 3)
        ]
    );

    assert_eq!(jf.jobs.len(), 2);
    let w = &jf.jobs[0];
    assert_eq!(w.name, "seqwrite");
    assert_eq!(w.rw.kind, RwKind::Write);
    assert!(w.rw.kind.is_sequential());
    assert_eq!(w.rw.modifier, None);
    assert_eq!(w.size, Some(Amount::Bytes(4 << 30)));
    assert!(w.direct);
    assert_eq!(w.numjobs, 1);
    assert_eq!(w.runtime_ns, 10_000_000_000);
    assert!(!w.time_based);
    assert_eq!(w.directory.as_deref(), Some("/mnt/sdc/fio/"));
    assert_eq!(w.ioengine, IoEngine::Psync);
    assert_eq!(w.iodepth, 1);
    assert_eq!((w.bs.read, w.bs.write, w.bs.trim), (4096, 4096, 4096));
    assert_eq!(w.global_options_applied, 2);
    assert_eq!(w.group_id, 0);
    let own: Vec<(&str, Option<&str>, usize)> = w
        .options
        .iter()
        .map(|o| (o.name.as_str(), o.value.as_deref(), o.line))
        .collect();
    assert_eq!(
        own,
        vec![
            ("rw", Some("write"), 6),
            ("size", Some("4G"), 7),
            ("direct", Some("1"), 8)
        ]
    );
    assert!(w.options.iter().all(|o| o.file.ends_with("seed000.fio")));

    let r = &jf.jobs[1];
    assert_eq!(r.name, "seqread");
    assert_eq!(r.rw.kind, RwKind::Read);
    assert_eq!(r.size, Some(Amount::Bytes(2 << 30)));
    assert!(!r.direct);
    assert_eq!(r.numjobs, 2);
    assert_eq!(r.runtime_ns, 10_000_000_000);
    assert_eq!(r.line, 10);
    assert_eq!(
        r.file_names(1),
        vec!["/mnt/sdc/fio//seqread.1.0".to_string()]
    );

    assert_eq!(
        jf.showcmd().trim(),
        "fio --directory=/mnt/sdc/fio/ --runtime=10 --name=seqwrite --rw=write --size=4G \
         --direct=1 --name=seqread --rw=read --size=2G --numjobs=2"
    );
}

#[test]
fn seed000_matches_fio_showcmd() {
    if !common::fio_available() {
        return;
    }
    let fio = common::run_fio(&["--showcmd", "seed000.fio"]);
    assert_eq!(fio.status, 0, "{}", fio.stderr);
    let jf = parse_job_file("seed000.fio", &common::test_env()).unwrap();
    assert_eq!(jf.showcmd().trim(), fio.stdout.trim());
}
