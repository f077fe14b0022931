//! Size suffixes, keyword math, `${ENV}` and the other checks of
//! formats-and-tools.md §5.1 and samples/fio_parsing_checks.txt.

mod common;

use iostack_workload::{
    parse_job_str, parse_size, parse_time_ns, size_multiplier, Amount, ParseEnv, RwModifier,
    TimeUnit,
};

fn size_of(kb_base: u32, value: &str) -> Result<u64, String> {
    let text = format!("[j]\nioengine=null\nbs=1\nrw=read\nkb_base={kb_base}\nsize={value}\n");
    match parse_job_str(&text, "sizes.fio", &ParseEnv::default()) {
        Ok(jf) => match jf.jobs[0].size {
            Some(Amount::Bytes(b)) => Ok(b),
            other => Err(format!("{other:?}")),
        },
        Err(e) => Err(e.to_string()),
    }
}

/// The measured table of samples/fio_parsing_checks.txt (null engine, bs=1,
/// size=X, reported io_bytes).
#[test]
fn measured_suffix_table() {
    let table: &[(u32, &str, Option<u64>)] = &[
        (1024, "1k", Some(1024)),
        (1024, "1ki", Some(1024)),
        (1024, "1kb", Some(1024)),
        (1024, "1kib", Some(1000)),
        (1024, "1KiB", Some(1000)),
        (1024, "1KB", Some(1024)),
        (1024, "4k", Some(4096)),
        (1024, "1m", Some(1048576)),
        (1024, "1mi", Some(1048576)),
        (1024, "1MB", Some(1048576)),
        (1024, "1MiB", Some(1000000)),
        (1024, "4096b", Some(4096)),
        (1024, "4096B", Some(4096)),
        (1024, "(2*512)", None),
        (1024, "2*$pagesize", Some(8192)),
        (1000, "1k", Some(1000)),
        (1000, "1ki", Some(1000)),
        (1000, "1kb", Some(1000)),
        (1000, "1kib", Some(1024)),
        (1000, "1KiB", Some(1024)),
        (1000, "1KB", Some(1000)),
        (1000, "4k", Some(4000)),
        (1000, "1m", Some(1000000)),
        (1000, "1mi", Some(1000000)),
        (1000, "1MB", Some(1000000)),
        (1000, "1MiB", Some(1048576)),
        (1000, "4096b", Some(4096)),
        (1000, "4096B", Some(4096)),
        (1000, "(2*512)", None),
        (1000, "2*$pagesize", Some(8192)),
    ];
    for &(kb, v, want) in table {
        let got = size_of(kb, v);
        match want {
            Some(w) => assert_eq!(got, Ok(w), "kb_base={kb} size={v}"),
            None => assert!(
                got.is_err(),
                "kb_base={kb} size={v} should fail, got {got:?}"
            ),
        }
    }
}

/// The §5.1 table, including g/t/p "likewise".
#[test]
fn suffix_table_all_powers() {
    for (i, s) in ["k", "m", "g", "t", "p"].iter().enumerate() {
        let pow = i as u32 + 1;
        for form in [
            s.to_string(),
            format!("{s}b"),
            format!("{s}i"),
            s.to_uppercase(),
            format!("{}B", s.to_uppercase()),
        ] {
            assert_eq!(
                size_multiplier(&form, 1024),
                Some(1024u64.pow(pow)),
                "{form}"
            );
            assert_eq!(
                size_multiplier(&form, 1000),
                Some(1000u64.pow(pow)),
                "{form}"
            );
        }
        for form in [format!("{s}ib"), format!("{}iB", s.to_uppercase())] {
            assert_eq!(
                size_multiplier(&form, 1024),
                Some(1000u64.pow(pow)),
                "{form}"
            );
            assert_eq!(
                size_multiplier(&form, 1000),
                Some(1024u64.pow(pow)),
                "{form}"
            );
        }
    }
    assert_eq!(size_multiplier("b", 1024), Some(1));
    assert_eq!(size_multiplier("B", 1000), Some(1));
    assert_eq!(size_multiplier("kx", 1024), None);
    assert_eq!(parse_size("0x10", 1024), Ok(16));
    assert_eq!(parse_size("0X1000", 1024), Ok(4096));
    assert!(parse_size("1.5g", 1024).is_err());
    assert!(parse_size("4q", 1024).is_err());
    assert!(parse_size("-4k", 1024).is_err());
    assert!(parse_size("10%", 1024).is_err());
}

#[test]
fn kb_base_applies_before_sizes_in_the_same_section() {
    // kb_base has priority 1: fio applies it first even when written last.
    let jf = parse_job_str(
        "[j]\nsize=4k\nkb_base=1000\n",
        "x.fio",
        &ParseEnv::default(),
    )
    .unwrap();
    assert_eq!(jf.jobs[0].size, Some(Amount::Bytes(4000)));
    assert_eq!(jf.jobs[0].kb_base, 1000);
    // ...and a global kb_base applies to the jobs below it.
    let jf = parse_job_str(
        "[global]\nkb_base=1000\n[j]\nbs=4k\n",
        "x.fio",
        &ParseEnv::default(),
    )
    .unwrap();
    assert_eq!(jf.jobs[0].bs.read, 4000);
}

#[test]
fn time_units() {
    let t = |v: &str, u| parse_time_ns(v, u);
    assert_eq!(t("10", TimeUnit::Seconds), Ok(10_000_000_000));
    assert_eq!(t("10", TimeUnit::Micros), Ok(10_000));
    for (s, ns) in [
        ("1d", 86_400_000_000_000u64),
        ("1h", 3_600_000_000_000),
        ("1m", 60_000_000_000),
        ("1s", 1_000_000_000),
        ("1ms", 1_000_000),
        ("1msec", 1_000_000),
        ("1us", 1_000),
        ("1usec", 1_000),
        ("1MS", 1_000_000),
    ] {
        assert_eq!(t(s, TimeUnit::Seconds), Ok(ns), "{s}");
        assert_eq!(t(s, TimeUnit::Micros), Ok(ns), "{s}");
    }
    let jf = parse_job_str(
        "[j]\nruntime=2\nramp_time=500ms\nstartdelay=1-3\nthinktime=10\nthinktime_spin=1ms\n",
        "t.fio",
        &ParseEnv::default(),
    )
    .unwrap();
    let j = &jf.jobs[0];
    assert_eq!(j.runtime_ns, 2_000_000_000);
    assert_eq!(j.ramp_time_ns, 500_000_000);
    assert_eq!(
        (j.startdelay_ns, j.startdelay_high_ns),
        (1_000_000_000, 3_000_000_000)
    );
    assert_eq!(j.thinktime_ns, 10_000);
    assert_eq!(j.thinktime_spin_ns, 1_000_000);
}

#[test]
fn parsing_checks_sample() {
    // g.fio: globals printed first, without --name=global.
    let g = "; c\n[global]\nrw=randread\nsize=128m\n[job1]\n[job2]\n";
    let jf = parse_job_str(g, "g.fio", &ParseEnv::default()).unwrap();
    assert_eq!(
        jf.showcmd(),
        "fio --rw=randread --size=128m --name=job1 --name=job2 \n"
    );
    assert_eq!(jf.jobs.len(), 2);
    assert!(jf
        .jobs
        .iter()
        .all(|j| j.size == Some(Amount::Bytes(128 << 20))));

    // env.fio: ${NODIR} unset -> "" -> directory= is rejected.
    let env_fio = "[global]\nsize=${SIZE}\ndirectory=${NODIR}\n[j1]\nrw=write:4k\nbs=${BS}\n";
    let env = ParseEnv::default()
        .with_var("SIZE", "64m")
        .with_var("BS", "8k");
    let e = parse_job_str(env_fio, "env.fio", &env).unwrap_err();
    assert_eq!((e.line, e.option.as_deref()), (3, Some("directory")));

    // env2.fio: an unset variable in the middle of a value just disappears.
    let jf = parse_job_str(
        "[global]\ndirectory=${NODIR}/tmp\n[j1]\nsize=1m\n",
        "env2.fio",
        &ParseEnv::default(),
    )
    .unwrap();
    assert_eq!(jf.jobs[0].directory.as_deref(), Some("/tmp"));
    assert_eq!(jf.global_options[0].value.as_deref(), Some("${NODIR}/tmp"));
    assert_eq!(jf.global_options[0].expanded.as_deref(), Some("/tmp"));

    // env4.fio
    let env = ParseEnv::default().with_var("SIZE", "1m");
    let jf = parse_job_str("[global]\nsize=${SIZE}\n[j1]\n", "env4.fio", &env).unwrap();
    assert_eq!(jf.showcmd().trim(), "fio --size=1m --name=j1");

    // rw offset modifiers.
    let jf = parse_job_str(
        "[holes]\nrw=write:4k\nbs=4k\nsize=32k\n[rr]\nrw=randread:4\n[back]\nrw=read:-8k\n",
        "m.fio",
        &ParseEnv::default(),
    )
    .unwrap();
    assert_eq!(jf.jobs[0].rw.modifier, Some(RwModifier::SeqAdd(4096)));
    assert_eq!(jf.jobs[1].rw.modifier, Some(RwModifier::RandomRun(4)));
    assert_eq!(jf.jobs[2].rw.modifier, Some(RwModifier::SeqAdd(-8192)));
}

#[test]
fn keyword_math_uses_the_environment() {
    let env = ParseEnv {
        pagesize: 65536,
        mb_memory: 8,
        ncpus: 3,
        ..ParseEnv::default()
    };
    let jf = parse_job_str(
        "[j]\nsize=5*1024*1024*$mb_memory/8 # 5/8 of the memory\nbs=$pagesize\nnumjobs=$ncpus\n",
        "k.fio",
        &env,
    )
    .unwrap();
    let j = &jf.jobs[0];
    assert_eq!(j.size, Some(Amount::Bytes(5 * 1024 * 1024)));
    assert_eq!(j.bs.read, 65536);
    assert_eq!(j.numjobs, 3);
    // Written values are kept, expanded values are what fio prints.
    assert_eq!(
        j.options[0].value.as_deref(),
        Some("5*1024*1024*$mb_memory/8")
    );
    assert_eq!(j.options[0].expanded.as_deref(), Some("5242880"));
    assert_eq!(
        jf.showcmd().trim(),
        "fio --name=j --size=5242880 --bs=65536 --numjobs=3"
    );
}

#[test]
fn keyword_fio_agrees_on_pagesize_math() {
    if !common::fio_available() {
        return;
    }
    let r = common::run_fio(&["--showcmd", "valid/keywords.fio"]);
    assert!(r.stdout.contains("--size=8192 --bs=4096"), "{}", r.stdout);
}
