//! fio's own output readers as judges of iostack's fio outputs: Debian's
//! `fio_jsonplus_clat2csv` reads `--output-format=json+`, `fio_generate_plots`
//! (gnuplot) draws the `write_*_log` files. Fails if the tools are missing (CI
//! installs them) unless IOSTACK_SKIP_REAL_TOOLS=1.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tool(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(format!("/usr/bin/{name}"));
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var("IOSTACK_SKIP_REAL_TOOLS").as_deref() == Ok("1"),
        "{name} is not installed (run scripts/setup, or set IOSTACK_SKIP_REAL_TOOLS=1)"
    );
    None
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("iostack-fo-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn iostack(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_iostack"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A mixed job on an async engine with lat percentiles on: reads and writes,
/// slat-less clat and lat histograms.
const MIXED: &str = "[global]\nfilename=/mnt/test/f\nsize=1m\n\
                     [j]\nrw=randrw\nbs=4k\nioengine=libaio\niodepth=4\ndirect=1\n\
                     lat_percentiles=1\n";

/// `(direction, latency kind) -> {bin value ns: count}` of a json+ job.
type Bins = BTreeMap<(String, String), BTreeMap<u64, u64>>;

fn bins_of(job: &serde_json::Value) -> Bins {
    let mut out = Bins::new();
    for dir in ["read", "write", "trim"] {
        for lat in ["slat_ns", "clat_ns", "lat_ns"] {
            let Some(b) = job[dir][lat]["bins"].as_object() else {
                continue;
            };
            let m = b
                .iter()
                .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
                .collect();
            out.insert((dir.to_string(), lat.to_string()), m);
        }
    }
    out
}

/// json+ is the json output with `bins` added, each bin's count adds up to the
/// section's `N`, and fio's `fio_jsonplus_clat2csv` turns it into one CSV row
/// per non-empty bin with the bin's count (and validates its CSV against it).
#[test]
fn jsonplus_is_read_by_fio_jsonplus_clat2csv() {
    let d = tmpdir("jsonplus");
    std::fs::write(d.join("j.fio"), MIXED).unwrap();
    let plus = iostack(&d, &["run", "j.fio", "--output-format", "json+"]);
    let plain = iostack(&d, &["run", "j.fio", "--output-format", "json"]);
    let mut v: serde_json::Value = serde_json::from_str(&plus).unwrap();
    let job = v["jobs"][0].clone();
    let bins = bins_of(&job);
    assert!(bins.contains_key(&("read".into(), "clat_ns".into())));
    assert!(bins.contains_key(&("write".into(), "lat_ns".into())));
    for ((dir, lat), b) in &bins {
        let n = job[dir.as_str()][lat.as_str()]["N"].as_u64().unwrap();
        assert_eq!(b.values().sum::<u64>(), n, "{dir} {lat}");
    }
    // Without the bins, json+ is the json output.
    for dir in ["read", "write", "trim"] {
        for lat in ["slat_ns", "clat_ns", "lat_ns"] {
            if let Some(o) = v["jobs"][0][dir][lat].as_object_mut() {
                o.remove("bins");
            }
        }
    }
    assert_eq!(
        v,
        serde_json::from_str::<serde_json::Value>(&plain).unwrap()
    );

    let Some(clat2csv) = tool("fio_jsonplus_clat2csv") else {
        return;
    };
    std::fs::write(d.join("jp.json"), &plus).unwrap();
    for extra in [None, Some("--validate")] {
        let mut c = Command::new(&clat2csv);
        c.current_dir(&d).args(["jp.json", "out.csv"]).args(extra);
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let csv = std::fs::read_to_string(d.join("out_job0.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(|s| s.trim().to_string()).collect())
        .collect();
    let all: std::collections::BTreeSet<u64> =
        bins.values().flat_map(|b| b.keys()).copied().collect();
    assert_eq!(rows.len(), all.len(), "one row per non-empty bin");
    for row in &rows {
        let ns: u64 = row[0].parse().unwrap();
        for ((dir, lat), b) in &bins {
            let col = header
                .iter()
                .position(|h| h == &format!("{dir}_{lat}_count"))
                .unwrap();
            let want = b.get(&ns).map(|c| c.to_string()).unwrap_or_default();
            assert_eq!(row[col], want, "{ns} ns, {dir} {lat}");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Processes and threads, clones, groups, block-size ranges, two engines.
const PREAMBLE: &str = "[global]\nsize=1m\ndirectory=${DIR}\n\
                        [a]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\n\
                        [b]\nstonewall\nrw=write\nbsrange=4k-128k\nnumjobs=2\nthread\n\
                        [c]\nrw=read\nbs=64k\n";

/// The lines before the first job report (after iostack's provenance line).
fn preamble(out: &str) -> String {
    out.lines()
        .skip_while(|l| l.starts_with("iostack:"))
        .take_while(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The normal output starts as real fio 3.33's does: a job line per job (`...`
/// for clones), `fio-3.33`, `Starting N threads and M processes`, and a
/// `Laying out IO file` line per file a job creates; real fio is the judge.
#[test]
fn normal_output_preamble_is_fios() {
    let d = tmpdir("preamble");
    std::fs::write(d.join("p.fio"), PREAMBLE).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_iostack"))
        .current_dir(&d)
        .env("DIR", "/mnt/test")
        .args(["run", "p.fio"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours = preamble(&String::from_utf8(out.stdout).unwrap());
    assert!(
        ours.contains("Starting 2 threads and 2 processes\n"),
        "{ours}"
    );
    let Some(fio) = tool("fio") else {
        return;
    };
    let real = Command::new(fio)
        .current_dir(&d)
        .env("DIR", &d)
        .args(["p.fio"])
        .output()
        .unwrap();
    assert!(
        real.status.success(),
        "{}",
        String::from_utf8_lossy(&real.stderr)
    );
    assert_eq!(ours, preamble(&String::from_utf8(real.stdout).unwrap()));
    let _ = std::fs::remove_dir_all(&d);
}

/// One line of a fio log, by fio's `flush_samples` rules: `time, value, ddir,
/// bs, prio` or, with `log_offset`, `time, value, ddir, bs, offset, prio`,
/// integers separated by ", ", ddir 0 (read), 1 (write) or 2 (trim).
fn log_line(line: &str, with_offset: bool) -> Vec<u64> {
    let f: Vec<u64> = line
        .split(", ")
        .map(|x| {
            x.parse()
                .unwrap_or_else(|_| panic!("bad field in {line:?}"))
        })
        .collect();
    assert_eq!(f.len(), if with_offset { 6 } else { 5 }, "{line:?}");
    assert!(f[2] <= 2, "{line:?}");
    f
}

fn log_of(d: &Path, name: &str, with_offset: bool) -> Vec<Vec<u64>> {
    let text = std::fs::read_to_string(d.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    text.lines().map(|l| log_line(l, with_offset)).collect()
}

/// Per-I/O logs: one line per I/O in each of `_lat`, `_clat`, `_slat`, `_bw`,
/// `_iops` (fio's names, `.N` per job), times in order, the bandwidth entry
/// `bs * 10^6 / clat` of the same I/O, IOPS entries 1, offsets inside the
/// file; `fio_generate_plots` (gnuplot) draws every kind from them.
#[test]
fn per_io_logs_are_fios_and_fio_generate_plots_draws_them() {
    let d = tmpdir("logs");
    let job = "[global]\nfilename=/mnt/test/f\nsize=1m\nioengine=libaio\niodepth=2\ndirect=1\n\
               [j]\nrw=randrw\nbs=4k\nnumjobs=2\nwrite_lat_log=q\nwrite_bw_log=q\n\
               write_iops_log=q\nlog_offset=1\n";
    std::fs::write(d.join("j.fio"), job).unwrap();
    let out = iostack(&d, &["run", "j.fio", "--output-format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for n in 1..=2u64 {
        let job = &v["jobs"][(n - 1) as usize];
        let ios = job["read"]["total_ios"].as_u64().unwrap()
            + job["write"]["total_ios"].as_u64().unwrap();
        let clat = log_of(&d, &format!("q_clat.{n}.log"), true);
        assert_eq!(clat.len() as u64, ios);
        assert!(
            clat.windows(2).all(|w| w[0][0] <= w[1][0]),
            "times in order"
        );
        for kind in ["lat", "slat", "bw", "iops"] {
            assert_eq!(
                log_of(&d, &format!("q_{kind}.{n}.log"), true).len(),
                clat.len()
            );
        }
        let bw = log_of(&d, &format!("q_bw.{n}.log"), true);
        for (b, c) in bw.iter().zip(&clat) {
            assert_eq!((b[0], b[2], b[3], b[4]), (c[0], c[2], c[3], c[4]));
            assert_eq!(b[1], c[3] * 1_000_000 / c[1]);
            assert!(c[4] + c[3] <= 1 << 20 && c[4] % 4096 == 0);
        }
        let iops = log_of(&d, &format!("q_iops.{n}.log"), true);
        assert!(iops.iter().all(|l| l[1] == 1));
        // Per-I/O bandwidth logs make the report's samples per I/O, as fio.
        assert_eq!(job["read"]["iops_max"].as_u64(), Some(1));
    }
    let Some(plots) = tool("fio_generate_plots") else {
        return;
    };
    if tool("gnuplot").is_none() {
        return;
    }
    let o = Command::new(plots)
        .current_dir(&d)
        .arg("t")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // gnuplot reads every file (its only warnings are about the script's own
    // `set mxtics 0`), and each plot has one line per job's log.
    assert!(
        !err.contains("Skipping") && !err.contains("valid points"),
        "{err}"
    );
    for kind in ["lat", "clat", "slat", "bw", "iops"] {
        let svg = std::fs::read_to_string(d.join(format!("t-{kind}.svg"))).unwrap();
        assert!(svg.contains("<svg"), "{kind}");
        assert!(svg.matches("Queue depth").count() >= 2, "{kind}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `log_avg_msec=100` with `per_job_logs=0`: one file per kind that both jobs
/// append to; a bandwidth/IOPS entry per window the report also samples
/// (`bw_samples`, `iops_samples`), at multiples of 100 ms with bs 0; latency
/// entries are window means, never above the job's max.
#[test]
fn averaged_logs_follow_the_report_windows() {
    let d = tmpdir("avglogs");
    let job = "[global]\nfilename=/mnt/test/f\nsize=4m\nioengine=libaio\niodepth=4\ndirect=1\n\
               [j]\nrw=randrw\nbs=4k\nnumjobs=2\nwrite_lat_log=a\nwrite_bw_log=a\n\
               write_iops_log=a\nlog_avg_msec=100\nper_job_logs=0\n";
    std::fs::write(d.join("j.fio"), job).unwrap();
    let out = iostack(&d, &["run", "j.fio", "--output-format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    let sum = |k: &str| -> u64 {
        jobs.iter()
            .map(|j| j["read"][k].as_u64().unwrap() + j["write"][k].as_u64().unwrap())
            .sum()
    };
    let bw = log_of(&d, "a_bw.log", false);
    assert!(!bw.is_empty());
    assert_eq!(bw.len() as u64, sum("bw_samples"));
    assert_eq!(
        log_of(&d, "a_iops.log", false).len() as u64,
        sum("iops_samples")
    );
    assert!(bw.iter().all(|l| l[0] % 100 == 0 && l[3] == 0));
    let max = jobs
        .iter()
        .map(|j| {
            j["read"]["lat_ns"]["max"]
                .as_u64()
                .unwrap()
                .max(j["write"]["lat_ns"]["max"].as_u64().unwrap())
        })
        .max()
        .unwrap();
    let lat = log_of(&d, "a_lat.log", false);
    assert!(!lat.is_empty() && lat.iter().all(|l| l[1] <= max && l[3] == 0));
    assert!(!d.join("a_bw.1.log").exists());
    let parts = std::fs::read_dir(&d)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("part")
        })
        .count();
    assert_eq!(parts, 0, "part files are removed");
    let _ = std::fs::remove_dir_all(&d);
}

/// Report-only options reach the report as in fio 3.33 (formats read off real
/// fio runs): `percentile_list` with its print precision, `unit_base=1`
/// (bits), `lat_percentiles`.
#[test]
fn report_options_change_the_report_as_fio() {
    let d = tmpdir("reportopts");
    let job = "[j]\nfilename=/mnt/test/a\nsize=256k\nrw=randread\n\
               percentile_list=50:99.9:99.995\nunit_base=1\nlat_percentiles=1\n";
    std::fs::write(d.join("j.fio"), job).unwrap();
    let out = iostack(&d, &["run", "j.fio"]);
    assert!(out.contains("     | 50.000th=["), "{out}");
    assert!(out.contains("], 99.995th=["), "{out}");
    assert!(out.contains("\n    lat percentiles ("), "{out}");
    let read = out
        .lines()
        .find(|l| l.starts_with("  read: IOPS="))
        .unwrap();
    assert!(read.contains("ibit/s ("), "{read}");
    // bwavgtime/iopsavgtime: the windows of the bw and iops samples (a 1 s
    // job: 2 samples of 500 ms by default, 10 of 100 ms, 5 of 200 ms).
    let samples = |extra: &str, what: &str| -> u64 {
        let job = format!("[j]\nfilename=/mnt/test/a\nsize=1m\nrw=randread\n{extra}");
        std::fs::write(d.join("s.fio"), job).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&iostack(&d, &["run", "s.fio", "--output-format", "json"]))
                .unwrap();
        v["jobs"][0]["read"][what].as_u64().unwrap()
    };
    let (bw0, iops0) = (samples("", "bw_samples"), samples("", "iops_samples"));
    let two = "bwavgtime=100\niopsavgtime=200\n";
    let (bw, iops) = (samples(two, "bw_samples"), samples(two, "iops_samples"));
    assert!(
        bw >= 4 * bw0 && iops >= 2 * iops0 && bw > iops,
        "{bw0} {iops0} {bw} {iops}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The Python with pandas that `scripts/setup` installs (`target/venv`),
/// for fio's `fiologparser_hist.py`. `scripts/test` always makes it first
/// (and its Python tests need it), so a plain `cargo test` without it skips
/// that step, saying so.
fn venv_python() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/venv/bin/python");
    if p.exists() {
        return Some(p);
    }
    eprintln!("target/venv is missing (scripts/setup makes it): fiologparser_hist.py not run");
    None
}

/// `write_hist_log` with `log_hist_msec=100`: fio's `PREFIX_clat_hist.N.log`,
/// `time, ddir, bs` and the 1856 clat bins of each window (2^N merged with
/// `log_hist_coarseness=N`); with coarseness 0 the windows add up, bin by
/// bin, to no more than the json+ clat bins, and to all but the last
/// window's I/Os; Debian's `fiologparser_hist.py` reads the file.
/// `log_max_value` makes averaged latency entries the window's maximum.
#[test]
fn hist_logs_are_fios_and_fiologparser_hist_reads_them() {
    let d = tmpdir("hist");
    let job = "[j]\nfilename=/mnt/test/f\nsize=4m\nrw=randread\nioengine=libaio\niodepth=4\n\
               direct=1\nwrite_hist_log=h\nlog_hist_msec=100\n";
    std::fs::write(d.join("j.fio"), job).unwrap();
    let out = iostack(&d, &["run", "j.fio", "--output-format", "json+"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let bins = bins_of(&v["jobs"][0]);
    let clat = &bins[&("read".to_string(), "clat_ns".to_string())];
    let text = std::fs::read_to_string(d.join("h_clat_hist.1.log")).unwrap();
    let lines: Vec<Vec<u64>> = text
        .lines()
        .map(|l| l.split(", ").map(|x| x.parse().unwrap()).collect())
        .collect();
    assert!(lines.len() >= 5, "{}", lines.len());
    let mut sum = vec![0u64; 1856];
    for l in &lines {
        assert_eq!(l.len(), 3 + 1856);
        assert_eq!((l[1], l[2]), (0, 4096));
        for (s, c) in sum.iter_mut().zip(&l[3..]) {
            *s += c;
        }
    }
    assert!(lines.windows(2).all(|w| w[1][0] > w[0][0]));
    let logged: u64 = sum.iter().sum();
    let total: u64 = clat.values().sum();
    assert!(logged < total && logged > total / 2, "{logged} of {total}");
    for (k, &n) in sum.iter().enumerate() {
        let at = iostack_report::fio::plat_idx_to_val(k);
        assert!(n <= clat.get(&at).copied().unwrap_or(0), "bin {k}");
    }
    let coarse = job.replace(
        "log_hist_msec=100\n",
        "log_hist_msec=100\nlog_hist_coarseness=4\n",
    );
    std::fs::write(d.join("j.fio"), coarse).unwrap();
    iostack(&d, &["run", "j.fio"]);
    let text = std::fs::read_to_string(d.join("h_clat_hist.1.log")).unwrap();
    assert!(text.lines().all(|l| l.split(", ").count() == 3 + 1856 / 16));
    // log_max_value: each averaged clat entry is at least the mean's.
    let avg = "[j]\nfilename=/mnt/test/f\nsize=4m\nrw=randread\nioengine=libaio\niodepth=4\n\
               direct=1\nwrite_lat_log=m\nlog_avg_msec=100\n";
    std::fs::write(d.join("a.fio"), avg).unwrap();
    iostack(&d, &["run", "a.fio"]);
    let mean = log_of(&d, "m_clat.1.log", false);
    std::fs::write(d.join("a.fio"), format!("{avg}log_max_value=1\n")).unwrap();
    iostack(&d, &["run", "a.fio"]);
    let max = log_of(&d, "m_clat.1.log", false);
    assert_eq!(mean.len(), max.len());
    assert!(mean
        .iter()
        .zip(&max)
        .all(|(a, b)| a[0] == b[0] && b[1] >= a[1]));
    assert!(mean.iter().zip(&max).any(|(a, b)| b[1] > a[1]));
    let Some(python) = venv_python() else {
        return;
    };
    // Debian's fio package ships the script in its documentation.
    let gz = "/usr/share/doc/fio/fiologparser_hist.py.gz";
    if !Path::new(gz).exists() {
        assert!(
            std::env::var("IOSTACK_SKIP_REAL_TOOLS").as_deref() == Ok("1"),
            "{gz} is missing (install fio, or set IOSTACK_SKIP_REAL_TOOLS=1)"
        );
        return;
    }
    let script = Command::new("zcat").arg(gz).output().unwrap();
    assert!(script.status.success(), "{gz}");
    std::fs::write(d.join("fph.py"), script.stdout).unwrap();
    std::fs::write(d.join("j.fio"), job).unwrap();
    iostack(&d, &["run", "j.fio"]);
    let o = Command::new(python)
        .current_dir(&d)
        .args([
            "fph.py",
            "--group_nr",
            "29",
            "-i",
            "100",
            "h_clat_hist.1.log",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<&str> = out.lines().collect();
    assert!(
        rows[0].starts_with("end-time, samples, min, avg, median"),
        "{out}"
    );
    assert!(rows.len() >= 5, "{out}");
    let samples: f64 = rows[1..]
        .iter()
        .map(|r| r.split(", ").nth(1).unwrap().parse::<f64>().unwrap())
        .sum();
    assert!(samples > 0.0, "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `log_prio=1`: the logs' last column is the I/O's priority value as fio's
/// `flush_samples` prints it (`0x%04x` of `ioprio_value(class, level)`:
/// class shifted by 13, class 0 taken as best effort; 0 when neither option
/// is set) instead of the real-time flag.
#[test]
fn log_prio_prints_the_priority_value() {
    let d = tmpdir("logprio");
    let last = |extra: &str| -> Vec<String> {
        let job = format!(
            "[j]\nfilename=/mnt/test/f\nsize=64k\nbs=4k\ndirect=1\nwrite_lat_log=p\n{extra}"
        );
        std::fs::write(d.join("j.fio"), job).unwrap();
        iostack(&d, &["run", "j.fio"]);
        let text = std::fs::read_to_string(d.join("p_lat.1.log")).unwrap();
        text.lines()
            .map(|l| l.rsplit(", ").next().unwrap().to_string())
            .collect()
    };
    let all = |v: Vec<String>, want: &str| {
        assert_eq!(v.len(), 16);
        assert!(v.iter().all(|x| x == want), "{v:?} not all {want}");
    };
    all(last("log_prio=1\nprioclass=1\nprio=3\n"), "0x2003");
    all(last("log_prio=1\nprio=5\n"), "0x4005");
    all(last("log_prio=1\n"), "0x0000");
    // Without it, fio's ioprio_value_is_class_rt.
    all(last("prioclass=1\nprio=3\n"), "1");
    let _ = std::fs::remove_dir_all(&d);
}
