//! Golden tests: reports rebuilt from the numbers of two real fio 3.33 runs
//! (`data/fio/fio_direct_json_normal.txt`, `data/fio/fio_buffered_json_normal.txt`,
//! copied from the reference samples) must render byte for byte as fio did,
//! apart from the added provenance, and as the checked-in expected files.

use iostack_report::fio::{
    plat_idx_to_val, plat_val_to_idx, render_json, render_normal, render_old,
    x87_threshold_reached, Ddir, DiskUtil, FioReport, IoStat, JobHeader, JobStats, LatencyHist,
    LayoutLine, Preamble, Provenance, DEFAULT_PERCENTILES,
};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fio/");

fn read(name: &str) -> String {
    std::fs::read_to_string(format!("{DATA}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Set `UPDATE_GOLDEN=1` to rewrite an expected file (after checking the diff).
fn check_expected(name: &str, actual: &str) {
    let path = format!("{DATA}{name}");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("write golden");
    }
    let expected = read(name);
    assert_eq!(actual, expected, "{name} differs from the rendered text");
}

/// The three parts of a `--output-format=json,normal` transcript: startup
/// lines, the JSON document, the normal report (starting with its blank line).
fn split_sample(text: &str) -> (String, String, String) {
    let body = text
        .split_once("# --- stdout (stderr was empty) ---\n")
        .expect("marker")
        .1;
    let body = body.strip_suffix("(exit status 0)\n").expect("exit line");
    let (pre, rest) = body.split_once("{\n").expect("json start");
    let (json, normal) = rest.split_once("\n}\n").expect("json end");
    (
        pre.to_string(),
        format!("{{\n{json}\n}}\n"),
        normal.to_string(),
    )
}

/// A latency distribution with the given exact statistics whose histogram
/// yields the given percentiles.
fn hist(min: u64, max: u64, mean: f64, stddev: f64, n: u64, pcts: &[u64]) -> LatencyHist {
    let mut h = LatencyHist::new();
    h.stat = IoStat {
        min_val: min,
        max_val: max,
        samples: n,
        mean,
        s: stddev * stddev * (n as f64 - 1.0),
    };
    if pcts.is_empty() {
        return h;
    }
    assert_eq!(pcts.len(), DEFAULT_PERCENTILES.len());
    // Cumulative count each bucket must reach: the rank of its highest percentile.
    let mut targets: Vec<(usize, u64)> = Vec::new();
    for (&p, &v) in DEFAULT_PERCENTILES.iter().zip(pcts) {
        let idx = plat_val_to_idx(v);
        assert_eq!(plat_idx_to_val(idx), v, "{v} is not a bucket value");
        let rank = (1..=n)
            .find(|&r| x87_threshold_reached(r, p, n))
            .expect("rank");
        match targets.last_mut() {
            Some(t) if t.0 == idx => t.1 = rank,
            _ => targets.push((idx, rank)),
        }
    }
    let mut cum = 0;
    for (i, &(idx, target)) in targets.iter().enumerate() {
        let target = if i == targets.len() - 1 { n } else { target };
        h.add_bin(idx, target - cum);
        cum = target;
    }
    let got: Vec<u64> = h
        .percentiles(&DEFAULT_PERCENTILES)
        .into_iter()
        .map(|x| x.1)
        .collect();
    assert_eq!(got, pcts);
    h
}

fn opts(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn sync_engine_job(j: &mut JobStats, ios: u64) {
    j.io_u_map[0] = ios;
    j.io_u_submit[1] = ios;
    j.io_u_complete[1] = ios;
    j.total_submit = ios;
    j.total_complete = ios;
}

fn direct_report() -> FioReport {
    let mut r = FioReport::new(
        Provenance {
            seed: 42,
            config_hash: 0x0123_4567_89ab_cdef,
        },
        1_795_274_391_617,
    );
    r.global_options = opts(&[
        ("directory", "/mnt/test"),
        ("size", "16m"),
        ("bs", "4k"),
        ("ioengine", "psync"),
        ("direct", "1"),
        ("filename", "direct.dat"),
    ]);
    r.eta_sec = 0;
    r.elapsed_sec = 3;

    let mut w = JobStats::new("seq-write", 0);
    w.pid = 19156;
    w.options = opts(&[("rw", "write")]);
    {
        let d = w.dir_mut(Ddir::Write);
        d.io_bytes = 16_777_216;
        d.total_ios = 4096;
        d.runtime_ms = 121;
        d.clat = hist(
            22097,
            395_979,
            29172.313477,
            9735.909396,
            4096,
            &[
                24448, 24960, 25472, 25984, 26496, 27008, 27776, 28288, 29056, 30336, 34048, 37120,
                47360, 52992, 148_480, 242_688, 395_264,
            ],
        );
        d.lat = hist(22137, 396_020, 29219.934814, 9746.779966, 4096, &[]);
    }
    w.total_run_time_ms = 120;
    w.usr_time_ms = 5;
    w.sys_time_ms = 34;
    w.ctx = 4096;
    w.minf = 13;
    sync_engine_job(&mut w, 4096);
    w.io_u_lat_u = [0, 0, 0, 0, 4065, 23, 7, 1, 0, 0];

    let mut rd = JobStats::new("rand-read", 1);
    rd.pid = 19157;
    rd.options = opts(&[("rw", "randread"), ("time_based", "1"), ("runtime", "2")]);
    {
        let d = rd.dir_mut(Ddir::Read);
        d.io_bytes = 332_296_192;
        d.total_ios = 81127;
        d.runtime_ms = 2001;
        d.clat = hist(
            17984,
            3_948_168,
            24319.915133,
            21186.925946,
            81127,
            &[
                20608, 21376, 21888, 22400, 22656, 22912, 23424, 23680, 24192, 24960, 26496, 28288,
                37632, 42240, 79360, 104_960, 978_944,
            ],
        );
        d.lat = hist(18012, 3_948_198, 24355.107375, 21187.944710, 81127, &[]);
        for s in [159_600, 162_280, 161_240] {
            d.bw.add_sample(s);
        }
        for s in [39900, 40570, 40310] {
            d.iops.add_sample(s);
        }
    }
    rd.total_run_time_ms = 2000;
    rd.usr_time_ms = 41;
    rd.sys_time_ms = 615;
    rd.ctx = 81125;
    rd.minf = 12;
    sync_engine_job(&mut rd, 81127);
    rd.io_u_lat_u = [0, 0, 0, 299, 80596, 187, 27, 4, 4, 4];
    rd.io_u_lat_m[0] = 3;
    rd.io_u_lat_m[1] = 3;

    r.jobs = vec![w, rd];
    r.disks = vec![DiskUtil {
        name: "vda".into(),
        ios: [81018, 4096],
        merges: [0, 0],
        ticks: [1514, 89],
        in_queue: 1603,
        util: 67.253803,
        aggr: None,
    }];
    r.preamble = Some(Preamble {
        jobs: vec![
            JobHeader::new("seq-write", 0, "write", 4096, "psync", 1),
            JobHeader::new("rand-read", 1, "randread", 4096, "psync", 1),
        ],
        processes: 2,
        threads: 0,
        layouts: vec![LayoutLine {
            name: "seq-write".into(),
            files: 1,
            extend_bytes: 16 << 20,
        }],
    });
    r
}

fn buffered_report() -> FioReport {
    let mut r = FioReport::new(Provenance::of(7, b"fio_buffered.fio"), 1_795_274_391_956);
    r.global_options = opts(&[
        ("directory", "/mnt/test"),
        ("size", "8m"),
        ("ioengine", "libaio"),
        ("iodepth", "4"),
        ("buffered", "1"),
        ("end_fsync", "1"),
        ("filename", "buffered.dat"),
    ]);
    r.eta_sec = 2_147_483_647;
    r.elapsed_sec = 1;

    let mut j = JobStats::new("buf-randrw", 0);
    j.pid = 19168;
    j.options = opts(&[
        ("rw", "randrw"),
        ("rwmixread", "70"),
        ("bssplit", "4k/50:16k/30:64k/20"),
        ("fsync", "32"),
    ]);
    {
        let d = j.dir_mut(Ddir::Read);
        d.io_bytes = 5_980_160;
        d.total_ios = 469;
        d.runtime_ms = 29;
        d.slat = hist(28917, 327_983, 45946.848614, 26041.245276, 469, &[]);
        d.clat = hist(
            1374,
            1_068_215,
            120_971.524520,
            120_171.067184,
            469,
            &[
                13248, 39168, 45312, 67072, 76288, 88576, 99840, 112_128, 122_368, 144_384,
                185_344, 214_016, 724_992, 1_019_904, 1_073_152, 1_073_152, 1_073_152,
            ],
        );
        d.lat = hist(32967, 1_115_588, 166_918.373134, 122_819.606514, 469, &[]);
    }
    {
        let d = j.dir_mut(Ddir::Write);
        d.io_bytes = 2_408_448;
        d.total_ios = 211;
        d.runtime_ms = 29;
        d.slat = hist(1996, 44591, 5385.350711, 5159.046429, 211, &[]);
        d.clat = hist(
            13508,
            1_121_099,
            121_522.478673,
            130_491.993913,
            211,
            &[
                25472, 41728, 47872, 68096, 76288, 85504, 93696, 103_936, 118_272, 138_240,
                175_104, 232_448, 716_800, 1_036_288, 1_122_304, 1_122_304, 1_122_304,
            ],
        );
        d.lat = hist(23090, 1_124_527, 126_907.829384, 130_814.009357, 211, &[]);
    }
    j.sync = hist(
        212_213,
        1_145_519,
        786_834.437_5,
        244_676.150234,
        16,
        &[
            211_968, 211_968, 585_728, 626_688, 651_264, 692_224, 724_992, 847_872, 937_984,
            1_044_480, 1_089_536, 1_138_688, 1_138_688, 1_138_688, 1_138_688, 1_138_688, 1_138_688,
        ],
    );
    j.sync_total_ios = 16;
    j.total_run_time_ms = 28;
    j.sys_time_ms = 9;
    j.ctx = 545;
    j.minf = 14;
    j.io_u_map = [1, 2, 693, 0, 0, 0, 0];
    j.io_u_submit[1] = 696;
    j.io_u_complete[1] = 500;
    j.total_submit = 696;
    j.total_complete = 500;
    j.io_u_lat_u = [1, 0, 0, 9, 78, 269, 297, 8, 12, 1];
    j.io_u_lat_m[0] = 5;
    j.latency_depth = 4;

    r.jobs = vec![j];
    r.disks = vec![DiskUtil {
        name: "vda".into(),
        ..DiskUtil::default()
    }];
    let mut h = JobHeader::new("buf-randrw", 0, "randrw", 4096, "libaio", 4);
    h.bs_max = [65536; 3];
    r.preamble = Some(Preamble {
        jobs: vec![h],
        processes: 1,
        threads: 0,
        layouts: vec![LayoutLine {
            name: "buf-randrw".into(),
            files: 1,
            extend_bytes: 8 << 20,
        }],
    });
    r
}

/// Removes the `"iostack"` block rendered after `"time"`.
fn strip_iostack_json(json: &str, p: &Provenance) -> String {
    let block = format!(
        "  \"iostack\" : {{\n    \"seed\" : {},\n    \"config_hash\" : \"{}\"\n  }},\n",
        p.seed,
        p.config_hex()
    );
    assert!(json.contains(&block), "iostack block missing or misplaced");
    let time_then_block =
        json.find("  \"time\" : ").expect("time") < json.find(&block).expect("block");
    assert!(time_then_block);
    json.replacen(&block, "", 1)
}

fn check_against_sample(r: &FioReport, sample: &str, normal_golden: &str, json_golden: &str) {
    let (pre, json, normal) = split_sample(&read(sample));

    let rendered_json = render_json(r);
    let jl: Vec<&str> = rendered_json.lines().collect();
    assert_eq!(jl[4], "  \"time\" : \"Sat Nov 21 15:19:51 2026\",");
    assert_eq!(jl[5], "  \"iostack\" : {");
    let stripped = strip_iostack_json(&rendered_json, &r.provenance);
    for (i, (a, b)) in stripped.lines().zip(json.lines()).enumerate() {
        assert_eq!(a, b, "JSON line {} differs", i + 1);
    }
    assert_eq!(stripped, json);

    let rendered = render_normal(r);
    let (first, rest) = rendered.split_once('\n').expect("provenance line");
    assert_eq!(first, r.provenance.line());
    let expected = format!("{pre}{normal}");
    for (i, (a, b)) in rest.lines().zip(expected.lines()).enumerate() {
        assert_eq!(a, b, "normal line {} differs", i + 2);
    }
    assert_eq!(rest, expected);

    check_expected(normal_golden, &rendered);
    check_expected(json_golden, &rendered_json);
}

#[test]
fn direct_sample_reproduced_byte_for_byte() {
    check_against_sample(
        &direct_report(),
        "fio_direct_json_normal.txt",
        "direct.normal.expected",
        "direct.json.expected",
    );
}

#[test]
fn buffered_sample_reproduced_byte_for_byte() {
    check_against_sample(
        &buffered_report(),
        "fio_buffered_json_normal.txt",
        "buffered.normal.expected",
        "buffered.json.expected",
    );
}

#[test]
fn old_format_golden() {
    check_expected("direct.old.expected", &render_old(&direct_report()));
    check_expected("buffered.old.expected", &render_old(&buffered_report()));
}

/// Every key path of a JSON value, in document order.
fn key_paths(v: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let p = format!("{prefix}/{k}");
                out.push(p.clone());
                key_paths(v, &p, out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                key_paths(v, &format!("{prefix}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn json_parses_with_fio_key_set_and_order() {
    for (r, sample) in [
        (direct_report(), "fio_direct_json_normal.txt"),
        (buffered_report(), "fio_buffered_json_normal.txt"),
    ] {
        let (_, json, _) = split_sample(&read(sample));
        let real: serde_json::Value = serde_json::from_str(&json).expect("sample parses");
        let ours: serde_json::Value = serde_json::from_str(&render_json(&r)).expect("ours parses");
        assert_eq!(ours["iostack"]["seed"], r.provenance.seed);
        assert_eq!(ours["iostack"]["config_hash"], r.provenance.config_hex());
        let mut a = Vec::new();
        let mut b = Vec::new();
        key_paths(&real, "", &mut a);
        key_paths(&ours, "", &mut b);
        b.retain(|p| !p.starts_with("/iostack"));
        assert_eq!(a, b);
        // Per job, the key set in order, and the three directions always present.
        for (rj, oj) in real["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .zip(ours["jobs"].as_array().unwrap())
        {
            let rk: Vec<&String> = rj.as_object().unwrap().keys().collect();
            let ok: Vec<&String> = oj.as_object().unwrap().keys().collect();
            assert_eq!(rk, ok);
            for d in ["read", "write", "trim", "sync"] {
                assert!(oj.get(d).is_some(), "{d} missing");
            }
        }
    }
}
