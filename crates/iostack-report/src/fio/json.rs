//! `--output-format=json` of fio 3.33: the tree built by `__show_run_stats`,
//! `show_thread_status_json` and `add_ddir_status_json`, printed the way
//! fio's `json.c` prints it (two-space indent, `"key" : value`, floats `%f`).

use std::fmt::Write as _;

use super::hist::{plat_idx_to_val, IoStat, LatencyHist, FIO_IO_U_LIST_MAX_LEN};
use super::normal::{agg_percent, calc_dist, calc_lat};
use super::stats::{Ddir, GroupStats, JobStats};
use super::FioReport;

/// A value of fio's JSON tree.
enum J {
    Str(String),
    Int(i64),
    Float(f64),
    Obj(Obj),
    Arr(Vec<J>),
}

/// An ordered JSON object.
#[derive(Default)]
struct Obj(Vec<(String, J)>);

impl Obj {
    fn int(&mut self, k: &str, v: u64) {
        // fio stores integers as long long.
        self.0.push((k.to_string(), J::Int(v as i64)));
    }
    fn sint(&mut self, k: &str, v: i64) {
        self.0.push((k.to_string(), J::Int(v)));
    }
    fn float(&mut self, k: &str, v: f64) {
        self.0.push((k.to_string(), J::Float(v)));
    }
    /// fio drops a string pair whose value is empty (`strdup_escape` gives NULL).
    fn str(&mut self, k: &str, v: &str) {
        if !v.is_empty() {
            self.0.push((k.to_string(), J::Str(v.to_string())));
        }
    }
    fn obj(&mut self, k: &str, v: Obj) {
        self.0.push((k.to_string(), J::Obj(v)));
    }
    fn arr(&mut self, k: &str, v: Vec<J>) {
        self.0.push((k.to_string(), J::Arr(v)));
    }
}

/// fio escapes `\` and `"`; control characters (which fio would emit raw,
/// producing invalid JSON) are escaped as `\u00XX`.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '"' => {
                o.push('\\');
                o.push(c);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// `json_print_object`: `level` is the object's own level (its closing brace).
fn print_obj(out: &mut String, o: &Obj, level: usize) {
    out.push_str("{\n");
    for (i, (k, v)) in o.0.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        indent(out, level + 1);
        let _ = write!(out, "\"{}\" : ", escape(k));
        print_value(out, v, level + 1);
    }
    out.push('\n');
    indent(out, level);
    out.push('}');
}

/// `level`: the level of the pair (or array element) holding the value.
fn print_value(out: &mut String, v: &J, level: usize) {
    match v {
        J::Str(s) => {
            let _ = write!(out, "\"{}\"", escape(s));
        }
        J::Int(i) => {
            let _ = write!(out, "{i}");
        }
        J::Float(f) => {
            let _ = write!(out, "{f:.6}");
        }
        J::Obj(o) => print_obj(out, o, level),
        J::Arr(a) => {
            out.push_str("[\n");
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                print_value(out, e, level + 1);
            }
            out.push('\n');
            indent(out, level);
            out.push(']');
        }
    }
}

fn opts_obj(opts: &[(String, String)]) -> Obj {
    let mut o = Obj::default();
    for (k, v) in opts {
        o.str(k, v);
    }
    o
}

/// `add_ddir_lat_json`; `plus` (json+) adds the histogram's non-empty
/// buckets as `"bins" : { "VALUE_NS" : COUNT, ... }`, keyed by
/// `plat_idx_to_val`, in bucket order.
fn lat_obj(stat: &IoStat, hist: &LatencyHist, percentiles: bool, plist: &[f64], plus: bool) -> Obj {
    let (min, max, mean, dev) = stat.calc().unwrap_or((0, 0, 0.0, 0.0));
    let mut o = Obj::default();
    o.int("min", min);
    o.int("max", max);
    o.float("mean", mean);
    o.float("stddev", dev);
    o.int("N", stat.samples);
    if percentiles && stat.samples != 0 {
        let mut p = Obj::default();
        for (pc, v) in hist
            .percentiles(plist)
            .into_iter()
            .take(FIO_IO_U_LIST_MAX_LEN)
        {
            p.int(&format!("{pc:.6}"), v);
        }
        o.obj("percentile", p);
        if plus {
            let mut bins = Obj::default();
            for (idx, count) in hist.nonzero_bins() {
                bins.int(&plat_idx_to_val(idx).to_string(), count);
            }
            o.obj("bins", bins);
        }
    }
    o
}

/// `add_ddir_status_json` for read, write or trim.
fn ddir_obj(ts: &JobStats, rs: &GroupStats, ddir: Ddir, plus: bool) -> Obj {
    let d = ts.dir(ddir);
    let (mut bw_bytes, mut bw, mut iops) = (0u64, 0u64, 0.0f64);
    if d.runtime_ms != 0 {
        let runt = d.runtime_ms;
        bw_bytes = d.io_bytes.wrapping_mul(1000) / runt;
        bw = bw_bytes / 1024;
        iops = (1000.0 * d.total_ios as f64) / runt as f64;
    }
    let mut o = Obj::default();
    o.int("io_bytes", d.io_bytes);
    o.int("io_kbytes", d.io_bytes >> 10);
    o.int("bw_bytes", bw_bytes);
    o.int("bw", bw);
    o.float("iops", iops);
    o.int("runtime", d.runtime_ms);
    o.int("total_ios", d.total_ios);
    o.int("short_ios", d.short_ios);
    o.int("drop_ios", d.drop_ios);
    let pl = &ts.percentile_list;
    o.obj(
        "slat_ns",
        lat_obj(&d.slat.stat, &d.slat, ts.slat_percentiles, pl, plus),
    );
    o.obj(
        "clat_ns",
        lat_obj(&d.clat.stat, &d.clat, ts.clat_percentiles, pl, plus),
    );
    o.obj(
        "lat_ns",
        lat_obj(&d.lat.stat, &d.lat, ts.lat_percentiles, pl, plus),
    );
    let (min, max, p_of_agg, mean, dev) = match d.bw.calc() {
        Some((min, max, mean, dev)) => (min, max, agg_percent(rs, ddir as usize, mean), mean, dev),
        None => (0, 0, 0.0, 0.0, 0.0),
    };
    o.int("bw_min", min);
    o.int("bw_max", max);
    o.float("bw_agg", p_of_agg);
    o.float("bw_mean", mean);
    o.float("bw_dev", dev);
    o.int("bw_samples", d.bw.samples);
    let (min, max, mean, dev) = d.iops.calc().unwrap_or((0, 0, 0.0, 0.0));
    o.int("iops_min", min);
    o.int("iops_max", max);
    o.float("iops_mean", mean);
    o.float("iops_stddev", dev);
    o.int("iops_samples", d.iops.samples);
    o
}

fn dist_obj(keys: &[&str], vals: &[f64]) -> Obj {
    let mut o = Obj::default();
    for (k, v) in keys.iter().zip(vals) {
        o.float(k, *v);
    }
    o
}

/// `show_thread_status_json`.
fn job_obj(r: &FioReport, ts: &JobStats, rs: &GroupStats, plus: bool) -> Obj {
    let mut o = Obj::default();
    o.str("jobname", &ts.name);
    o.int("groupid", u64::from(ts.groupid));
    o.sint("error", i64::from(ts.error));
    o.int("eta", r.eta_sec);
    o.int("elapsed", r.elapsed_sec);
    if !ts.options.is_empty() {
        o.obj("job options", opts_obj(&ts.options));
    }
    for ddir in Ddir::ALL {
        o.obj(ddir.name(), ddir_obj(ts, rs, ddir, plus));
    }
    let mut sync = Obj::default();
    sync.int("total_ios", ts.sync_total_ios);
    sync.obj(
        "lat_ns",
        lat_obj(
            &ts.sync.stat,
            &ts.sync,
            ts.lat_percentiles || ts.clat_percentiles,
            &ts.percentile_list,
            plus,
        ),
    );
    o.obj("sync", sync);
    let (usr, sys) = ts.cpu_percent();
    o.int("job_runtime", ts.total_run_time_ms);
    o.float("usr_cpu", usr);
    o.float("sys_cpu", sys);
    o.int("ctx", ts.ctx);
    o.int("majf", ts.majf);
    o.int("minf", ts.minf);
    let level_keys = ["1", "2", "4", "8", "16", "32", ">=64"];
    let batch_keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    o.obj(
        "iodepth_level",
        dist_obj(&level_keys, &calc_dist(&ts.io_u_map, ts.rw_total_ios())),
    );
    o.obj(
        "iodepth_submit",
        dist_obj(&batch_keys, &calc_dist(&ts.io_u_submit, ts.total_submit)),
    );
    o.obj(
        "iodepth_complete",
        dist_obj(
            &batch_keys,
            &calc_dist(&ts.io_u_complete, ts.total_complete),
        ),
    );
    let lat_keys = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    o.obj(
        "latency_ns",
        dist_obj(&lat_keys[..10], &calc_lat(ts, &ts.io_u_lat_n)),
    );
    o.obj(
        "latency_us",
        dist_obj(&lat_keys[..10], &calc_lat(ts, &ts.io_u_lat_u)),
    );
    o.obj(
        "latency_ms",
        dist_obj(&lat_keys, &calc_lat(ts, &ts.io_u_lat_m)),
    );
    if ts.continue_on_error {
        o.int("total_err", ts.total_err_count);
        o.sint("first_error", i64::from(ts.first_error));
    }
    if ts.latency_depth != 0 {
        o.int("latency_depth", u64::from(ts.latency_depth));
        o.int("latency_target", ts.latency_target);
        o.float("latency_percentile", ts.latency_percentile);
        o.int("latency_window", ts.latency_window);
    }
    o.str("desc", &ts.description);
    o
}

/// Renders the report as fio 3.33's JSON output, with the extra top-level key
/// `"iostack" : { "seed" : N, "config_hash" : "HEX" }` after `"time"`.
pub fn render_json(r: &FioReport) -> String {
    render(r, false)
}

/// Renders the report as fio 3.33's `--output-format=json+`: the JSON output
/// with each latency section that prints percentiles also carrying its
/// histogram (`FIO_OUTPUT_JSON_PLUS` in `add_ddir_lat_json`), which fio's
/// `fio_jsonplus_clat2csv` reads.
pub fn render_json_plus(r: &FioReport) -> String {
    render(r, true)
}

fn render(r: &FioReport, plus: bool) -> String {
    let mut root = Obj::default();
    root.str("fio version", &r.fio_version);
    root.int("timestamp", r.timestamp_sec());
    root.int("timestamp_ms", r.timestamp_ms);
    root.str("time", &r.time_string());
    let mut prov = Obj::default();
    prov.int("seed", r.provenance.seed);
    prov.str("config_hash", &r.provenance.config_hex());
    if let Some(t) = &r.truncated {
        prov.str("truncated", t);
    }
    root.obj("iostack", prov);
    if !r.global_options.is_empty() {
        root.obj("global options", opts_obj(&r.global_options));
    }
    let entries = r.entries();
    let groups = super::stats::compute_groups(&entries);
    let jobs: Vec<J> = entries
        .iter()
        .map(|ts| J::Obj(job_obj(r, ts, &groups[ts.groupid as usize], plus)))
        .collect();
    root.arr("jobs", jobs);
    if !r.disks.is_empty() {
        let disks = r
            .disks
            .iter()
            .map(|du| {
                let mut o = Obj::default();
                o.str("name", &du.name);
                o.int("read_ios", du.ios[0]);
                o.int("write_ios", du.ios[1]);
                o.int("read_merges", du.merges[0]);
                o.int("write_merges", du.merges[1]);
                o.int("read_ticks", du.ticks[0]);
                o.int("write_ticks", du.ticks[1]);
                o.int("in_queue", du.in_queue);
                o.float("util", du.util.min(100.0));
                if let Some(a) = &du.aggr {
                    o.int("aggr_read_ios", a.ios[0]);
                    o.int("aggr_write_ios", a.ios[1]);
                    o.int("aggr_read_merges", a.merges[0]);
                    o.int("aggr_write_merge", a.merges[1]);
                    o.int("aggr_read_ticks", a.ticks[0]);
                    o.int("aggr_write_ticks", a.ticks[1]);
                    o.int("aggr_in_queue", a.in_queue);
                    o.float("aggr_util", a.util);
                }
                J::Obj(o)
            })
            .collect();
        root.arr("disk_util", disks);
    }
    let mut out = String::new();
    print_obj(&mut out, &root, 0);
    out.push('\n');
    out
}
