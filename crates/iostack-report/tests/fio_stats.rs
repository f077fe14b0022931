//! The recorder the simulator feeds, fio's group_reporting folding, group
//! aggregation and assorted rendering rules.

use iostack_report::fio::{
    plat_idx_to_val, plat_val_to_idx, render_json, render_normal, render_old, report_entries,
    x87_threshold_reached, Ddir, FioReport, IoSample, IoStat, JobStats, LatencyHist, Provenance,
    DEFAULT_PERCENTILES,
};

fn hist(min: u64, max: u64, mean: f64, stddev: f64, n: u64, pcts: &[u64]) -> LatencyHist {
    let mut h = LatencyHist::new();
    h.stat = IoStat {
        min_val: min,
        max_val: max,
        samples: n,
        mean,
        s: stddev * stddev * (n as f64 - 1.0),
    };
    let mut targets: Vec<(usize, u64)> = Vec::new();
    for (&p, &v) in DEFAULT_PERCENTILES.iter().zip(pcts) {
        let idx = plat_val_to_idx(v);
        assert_eq!(plat_idx_to_val(idx), v);
        let rank = (1..=n).find(|&r| x87_threshold_reached(r, p, n)).unwrap();
        match targets.last_mut() {
            Some(t) if t.0 == idx => t.1 = rank,
            _ => targets.push((idx, rank)),
        }
    }
    let mut cum = 0;
    for (i, &(idx, t)) in targets.iter().enumerate() {
        let t = if i == targets.len() - 1 { n } else { t };
        h.add_bin(idx, t - cum);
        cum = t;
    }
    h
}

/// Two clones of `a` with group_reporting (numjobs=2) and `b` in a new group,
/// rebuilt so the folded entry reproduces lines of a real fio-3.33 run
/// (null engine, 1 s time_based randread).
fn group_reporting_report() -> FioReport {
    let mut r = FioReport::new(
        Provenance {
            seed: 1,
            config_hash: 2,
        },
        1_795_277_516_676,
    );
    let mut a0 = JobStats::new("a", 0);
    a0.pid = 8002;
    a0.group_reporting = true;
    a0.options = vec![
        ("rw".into(), "randread".into()),
        ("numjobs".into(), "2".into()),
    ];
    let mut a1 = a0.clone();
    a1.pid = 8003;
    {
        let d = a0.dir_mut(Ddir::Read);
        d.io_bytes = 5_532_409_856;
        d.total_ios = 1_350_686;
        d.runtime_ms = 1001;
        d.clat = hist(
            31,
            44_129_348,
            174.889704,
            43552.314661,
            1_350_686,
            &[
                36, 37, 39, 42, 47, 51, 55, 58, 62, 66, 69, 71, 86, 141, 253, 414, 2640,
            ],
        );
        d.lat = LatencyHist::new();
        d.lat.stat = IoStat {
            min_val: 63,
            max_val: 44_129_385,
            samples: 1_350_686,
            mean: 297.305761,
            s: 49258.938097f64.powi(2) * 1_350_685.0,
        };
        d.bw.add_sample(2_325_442);
        d.iops.add_sample(581_360);
    }
    {
        let d = a1.dir_mut(Ddir::Read);
        d.runtime_ms = 1000;
        d.bw.add_sample(2_325_442);
        d.iops.add_sample(581_361);
    }
    let mut b = JobStats::new("b", 1);
    b.pid = 8004;
    {
        let d = b.dir_mut(Ddir::Write);
        d.io_bytes = 1_752_199_168;
        d.total_ios = 427_783;
        d.runtime_ms = 1001;
        d.clat.record(100);
    }
    r.jobs = vec![a0, a1, b];
    r
}

#[test]
fn group_reporting_folds_like_fio() {
    let r = group_reporting_report();
    let entries = report_entries(&r.jobs);
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].members, 2);
    assert_eq!(entries[0].pid, 8002);
    assert_eq!(entries[0].dir(Ddir::Read).runtime_ms, 1001);
    let text = render_normal(&r);
    let expected_block = "\
a: (groupid=0, jobs=2): err= 0: pid=8002: Sat Nov 21 16:11:56 2026
  read: IOPS=1349k, BW=5271MiB/s (5527MB/s)(5276MiB/1001msec)
    clat (nsec): min=31, max=44129k, avg=174.89, stdev=43552.31
     lat (nsec): min=63, max=44129k, avg=297.31, stdev=49258.94
    clat percentiles (nsec):
     |  1.00th=[   36],  5.00th=[   37], 10.00th=[   39], 20.00th=[   42],
     | 30.00th=[   47], 40.00th=[   51], 50.00th=[   55], 60.00th=[   58],
     | 70.00th=[   62], 80.00th=[   66], 90.00th=[   69], 95.00th=[   71],
     | 99.00th=[   86], 99.50th=[  141], 99.90th=[  253], 99.95th=[  414],
     | 99.99th=[ 2640]
   bw (  MiB/s): min= 4541, max= 4541, per=86.17%, avg=4541.88, stdev= 0.00, samples=2
   iops        : min=1162721, max=1162721, avg=1162721.00, stdev= 0.00, samples=2
";
    assert!(text.contains(expected_block), "{text}");
    assert!(text.contains(
        "\nRun status group 0 (all jobs):\n   READ: bw=5271MiB/s (5527MB/s), 5271MiB/s-5271MiB/s (5527MB/s-5527MB/s), io=5276MiB (5532MB), run=1001-1001msec\n"
    ));
    assert!(text.contains("\nb: (groupid=1, jobs=1): err= 0: pid=8004: "));

    let json: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    let jobs = json["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    let rd = &jobs[0]["read"];
    assert_eq!(rd["bw_min"], 4_650_884);
    assert_eq!(rd["bw_samples"], 2);
    assert_eq!(rd["iops_min"], 1_162_721);
    assert_eq!(jobs[0]["job options"]["numjobs"], "2");
    let text = render_json(&r);
    assert!(text.contains("\"bw_agg\" : 86.169822,"));
}

#[test]
fn plain_job_then_group_reporting_job_of_same_group_fold() {
    // fio's loop folds a group_reporting job into the previous entry when the
    // group matches, even if that entry came from a plain job.
    let mut a = JobStats::new("a", 0);
    a.dir_mut(Ddir::Read).io_bytes = 10;
    let mut b = JobStats::new("b", 0);
    b.group_reporting = true;
    b.dir_mut(Ddir::Read).io_bytes = 5;
    let c = JobStats::new("c", 0);
    let e = report_entries(&[a, b, c]);
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].name, "a");
    assert_eq!(e[0].members, 2);
    assert_eq!(e[0].dir(Ddir::Read).io_bytes, 15);
    assert_eq!(e[1].name, "c");
}

fn psync_read_job(run_ms: u64) -> JobStats {
    let mut j = JobStats::new("r", 0);
    let mut t = 0u64;
    // One 4 KiB read every 25 us, clat 20 us, lat 20.04 us.
    while t + 20_000 <= run_ms * 1_000_000 {
        j.mark_submit(1);
        j.mark_complete(1);
        j.record_io(&IoSample {
            ddir: Ddir::Read,
            bytes: 4096,
            slat_ns: None,
            clat_ns: 20_000,
            lat_ns: 20_040,
            issue_ns: t,
            depth: 1,
        });
        t += 25_000;
    }
    j.finish_sampling(run_ms * 1_000_000);
    j.dir_mut(Ddir::Read).runtime_ms = run_ms;
    j.total_run_time_ms = run_ms;
    j
}

#[test]
fn recorder_counts_and_windows() {
    let j = psync_read_job(2001);
    let d = j.dir(Ddir::Read);
    assert_eq!(d.total_ios, 80040);
    assert_eq!(d.io_bytes, 80040 * 4096);
    assert_eq!(d.clat.samples(), 80040);
    assert_eq!(d.slat.samples(), 0);
    // Windows end at 500, 1000, 1500 ms; the one ending at 2000 ms is within
    // LOG_MSEC_SLACK of the 2001 ms end and is not sampled.
    assert_eq!(d.bw.samples, 3);
    assert_eq!(d.bw.min_val, 20000 * 4096 * 1000 / 500 / 1024);
    assert_eq!(d.iops.min_val, 40000);
    assert_eq!(j.io_u_map[0], 80040);
    assert_eq!(j.io_u_lat_u[4], 80040); // 20 us is in (20, 50]
    assert_eq!(psync_read_job(121).dir(Ddir::Read).bw.samples, 0);
    assert_eq!(psync_read_job(1001).dir(Ddir::Read).bw.samples, 1);

    let mut r = FioReport::new(Provenance::of(9, b"cfg"), 1_795_274_391_617);
    r.jobs = vec![j];
    let text = render_normal(&r);
    assert!(text.starts_with(&format!(
        "iostack: seed=9 config={}\n\n",
        r.provenance.config_hex()
    )));
    assert!(
        text.contains("  read: IOPS=40.0k, BW=156MiB/s (164MB/s)(313MiB/2001msec)\n"),
        "{text}"
    );
    assert!(text.contains("    clat (nsec): min=20000, max=20000, avg=20000.00, stdev= 0.00\n"));
    assert!(text.contains("  lat (usec)   : 50=100.00%\n"));
    assert!(text.contains("   bw (  KiB/s): min=160000, max=160000, per=100.00%, avg=160000.00, stdev= 0.00, samples=3\n"), "{text}");
    assert!(text.contains("     submit    : 0=0.0%, 4=100.0%,"));
    let json: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(json["jobs"][0]["read"]["total_ios"], 80040);
    assert_eq!(
        json["jobs"][0]["read"]["clat_ns"]["percentile"]["50.000000"],
        20096
    );
    assert!(json.get("global options").is_none());
    assert!(json.get("disk_util").is_none());
}

#[test]
fn sampler_skips_idle_windows_and_late_completions_count_now() {
    let mut j = JobStats::new("w", 0);
    let io = |t: u64| IoSample {
        ddir: Ddir::Write,
        bytes: 1 << 20,
        slat_ns: Some(1000),
        clat_ns: 0,
        lat_ns: 1000,
        issue_ns: t,
        depth: 4,
    };
    j.record_io(&io(100_000_000)); // window 0
    j.record_io(&io(1_700_000_000)); // window 3 (1 and 2 idle)
    j.record_io(&io(1_200_000_000)); // late: counted in window 3
    j.record_io(&io(2_600_000_000)); // window 5
    j.finish_sampling(3_500_000_000);
    let d = j.dir(Ddir::Write);
    assert_eq!(d.bw.samples, 3);
    assert_eq!(d.bw.min_val, 2048); // 1 MiB in 500 ms
    assert_eq!(d.bw.max_val, 4096);
    assert_eq!(d.slat.samples(), 4);
    assert_eq!(j.io_u_map[2], 4);
}

#[test]
fn sync_latencies_and_depth() {
    let mut j = psync_read_job(10);
    j.record_sync(1_500_000, 1);
    j.record_sync(2_500_000, 1);
    let mut r = FioReport::new(Provenance::default(), 0);
    r.jobs = vec![j];
    let text = render_normal(&r);
    assert!(text.contains("  fsync/fdatasync/sync_file_range:\n    sync (usec): min=1500, max=2500, avg=2000.00, stdev=707.11\n    sync percentiles (usec):\n     |  1.00th=[ 1500],"), "{text}");
    assert!(text.contains("     issued rwts: total=400,0,0,2 "));
    // fio counts syncs in the depth map but not in its total.
    assert!(text.contains("  IO depths    : 1=100.5%,"));
    let json: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(json["jobs"][0]["sync"]["total_ios"], 2);
    assert_eq!(json["jobs"][0]["sync"]["lat_ns"]["N"], 2);
}

#[test]
fn every_group_gets_a_header_and_rendering_is_deterministic() {
    let mut a = psync_read_job(50);
    a.name = "x".into();
    let mut c = psync_read_job(50);
    c.name = "z".into();
    c.groupid = 2;
    let mut r = FioReport::new(
        Provenance {
            seed: 5,
            config_hash: 0xabc,
        },
        86_400_000,
    );
    r.jobs = vec![a, c];
    let text = render_normal(&r);
    assert!(text.contains("\nRun status group 1 (all jobs):\n\nRun status group 2 (all jobs):\n"));
    assert!(text.contains("pid=0: Fri Jan  2 00:00:00 1970\n"));
    assert_eq!(text, render_normal(&r));
    assert_eq!(render_json(&r), render_json(&r));
    assert_eq!(render_old(&r), render_old(&r));
    let old = render_old(&r);
    assert!(old.starts_with("iostack: seed=5 config=0000000000000abc\n"));
    assert!(old.contains("\n   READ: io="));
    assert!(old.contains(", aggrb="));
    let json = render_json(&r);
    assert!(json.contains("  \"time\" : \"Fri Jan  2 00:00:00 1970\",\n  \"iostack\" : {\n    \"seed\" : 5,\n    \"config_hash\" : \"0000000000000abc\"\n  },\n"));
}

#[test]
fn json_escaping_and_empty_option_values() {
    let mut j = psync_read_job(5);
    j.name = "we\"ird\\name".into();
    j.options = vec![
        ("rw".into(), "read".into()),
        ("time_based".into(), String::new()),
    ];
    j.description = "line\nbreak".into();
    let mut r = FioReport::new(Provenance::default(), 0);
    r.global_options = vec![("group_reporting".into(), String::new())];
    r.jobs = vec![j];
    let text = render_json(&r);
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(v["jobs"][0]["jobname"], "we\"ird\\name");
    assert_eq!(v["jobs"][0]["desc"], "line\nbreak");
    let opts = v["jobs"][0]["job options"].as_object().unwrap();
    assert_eq!(opts.len(), 1);
    assert!(v["global options"].as_object().unwrap().is_empty());
    assert!(render_normal(&r).contains("  Description  : [line\nbreak]\n"));
}

#[test]
fn errors_and_unit_scaling() {
    let mut j = JobStats::new("slow", 0);
    j.error = 5;
    j.verror = "Input/output error".into();
    j.continue_on_error = true;
    j.total_err_count = 3;
    j.first_error = 5;
    for (i, ms) in [3u64, 150, 400, 2500].iter().enumerate() {
        j.record_io(&IoSample {
            ddir: Ddir::Read,
            bytes: 1 << 20,
            slat_ns: None,
            clat_ns: ms * 1_000_000,
            lat_ns: ms * 1_000_000 + 1000,
            issue_ns: i as u64 * 1_000_000_000,
            depth: 1,
        });
    }
    j.dir_mut(Ddir::Read).runtime_ms = 4000;
    let mut r = FioReport::new(Provenance::default(), 0);
    r.jobs = vec![j];
    let text = render_normal(&r);
    assert!(text.contains("slow: (groupid=0, jobs=1): err= 5 (Input/output error): pid=0: "));
    assert!(
        text.contains("    clat (msec): min=3, max=2500, avg=763.25, stdev=1169.37\n"),
        "{text}"
    );
    assert!(text.contains("    clat percentiles (msec):\n"), "{text}");
    assert!(
        text.contains("  lat (msec)   : 4=25.00%, 250=25.00%, 500=25.00%, >=2000=25.00%\n"),
        "{text}"
    );
    assert!(text.contains("     errors    : total=3, first_error=5/<Input/output error>\n"));
    let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(v["jobs"][0]["total_err"], 3);
    assert_eq!(v["jobs"][0]["first_error"], 5);
    assert_eq!(v["jobs"][0]["error"], 5);
}

#[test]
fn kb_base_1000_and_bit_units_like_fio() {
    // Lines of a real fio-3.33 run with --kb_base=1000 --unit_base=1.
    let mut j = JobStats::new("k", 0);
    j.kb_base = 1000;
    j.unit_base = iostack_report::fio::UnitBase::Bits;
    {
        let d = j.dir_mut(Ddir::Read);
        d.io_bytes = 8_603_222_016;
        d.total_ios = 2_100_396;
        d.runtime_ms = 1001;
        d.bw.add_sample(8_393_752);
    }
    let mut r = FioReport::new(Provenance::default(), 0);
    r.jobs = vec![j];
    let text = render_normal(&r);
    for line in [
        "  read: IOPS=2098k, BW=68.8Gbit/s (64.0Gibit/s)(8603MB/1001msec)\n",
        "   bw (  MiB/s): min= 8393, max= 8393, per=100.00%, avg=8393.75, stdev= 0.00, samples=1\n",
        "   READ: bw=68.8Gbit/s (64.0Gibit/s), 68.8Gbit/s-68.8Gbit/s (64.0Gibit/s-64.0Gibit/s), io=8603MB (8205MiB), run=1001-1001msec\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(v["jobs"][0]["read"]["bw_bytes"], 8_594_627_388u64);
    assert_eq!(v["jobs"][0]["read"]["bw"], 8_393_190);
}
