//! `--output-format=normal` of fio 3.33 (`show_thread_status_normal`,
//! `show_ddir_status`, `show_group_stats`, `print_disk_util` in `stat.c`).

use std::fmt::Write as _;

use super::hist::LatencyHist;
use super::num2str::{num2str, N2sUnit};
use super::stats::{Ddir, GroupStats, JobStats, UnitBase};
use super::{DiskUtil, FioReport, Preamble};

pub(crate) fn is_power_of_2(x: u32) -> bool {
    x & x.wrapping_sub(1) == 0
}

pub(crate) fn bw_unit(u: UnitBase) -> N2sUnit {
    match u {
        UnitBase::Bytes => N2sUnit::BytePerSec,
        UnitBase::Bits => N2sUnit::BitPerSec,
    }
}

/// Renders the report as fio 3.33's normal output, preceded by the
/// `iostack: seed=N config=HEX` line and, if present, the startup lines.
pub fn render_normal(r: &FioReport) -> String {
    let mut out = String::new();
    out.push_str(&r.head_lines());
    if let Some(p) = &r.preamble {
        render_preamble(&mut out, p, &r.fio_version);
    }
    // fio: "don't overwrite last signal output".
    out.push('\n');
    let entries = r.entries();
    let groups = super::stats::compute_groups(&entries);
    let date = r.time_string();
    for ts in &entries {
        show_thread_status_normal(&mut out, ts, &groups[ts.groupid as usize], &date);
    }
    for rs in &groups {
        show_group_stats(&mut out, rs);
    }
    show_disk_util(&mut out, &r.disks);
    out
}

fn render_preamble(out: &mut String, p: &Preamble, version: &str) {
    for h in &p.jobs {
        match h.clone_index {
            0 => {
                let i2p = is_power_of_2(h.kb_base);
                let s = |v: u64| num2str(v, h.sig_figs as usize, 1, i2p, N2sUnit::Byte);
                let _ = write!(out, "{}: (g={}): rw={}, ", h.name, h.groupid, h.rw);
                if h.bs_is_seq_rand {
                    let _ = write!(
                        out,
                        "bs=(R) {}-{}, (W) {}-{}, bs_is_seq_rand, ",
                        s(h.bs_min[0]),
                        s(h.bs_max[0]),
                        s(h.bs_min[1]),
                        s(h.bs_max[1])
                    );
                } else {
                    let _ = write!(
                        out,
                        "bs=(R) {}-{}, (W) {}-{}, (T) {}-{}, ",
                        s(h.bs_min[0]),
                        s(h.bs_max[0]),
                        s(h.bs_min[1]),
                        s(h.bs_max[1]),
                        s(h.bs_min[2]),
                        s(h.bs_max[2])
                    );
                }
                let _ = writeln!(out, "ioengine={}, iodepth={}", h.ioengine, h.iodepth);
            }
            1 => out.push_str("...\n"),
            _ => {}
        }
    }
    let _ = writeln!(out, "{version}");
    out.push_str(&starting_line(p.threads, p.processes));
    for l in &p.layouts {
        let many = l.files > 1;
        let _ = writeln!(
            out,
            "{}: Laying out IO file{} ({} file{} / {}{}MiB)",
            l.name,
            if many { "s" } else { "" },
            l.files,
            if many { "s" } else { "" },
            if many { "total " } else { "" },
            l.extend_bytes >> 20
        );
    }
}

pub(crate) fn starting_line(threads: u32, processes: u32) -> String {
    let mut s = String::from("Starting ");
    if threads != 0 {
        let _ = write!(
            s,
            "{} thread{}",
            threads,
            if threads > 1 { "s" } else { "" }
        );
    }
    if processes != 0 {
        if threads != 0 {
            s.push_str(" and ");
        }
        let _ = write!(
            s,
            "{} process{}",
            processes,
            if processes > 1 { "es" } else { "" }
        );
    }
    s.push('\n');
    s
}

/// fio's `display_lat`: unit auto-scaling (nsec, usec, msec) of a latency line.
fn display_lat(out: &mut String, name: &str, c: (u64, u64, f64, f64)) {
    let (mut min, mut max, mut mean, mut dev) = c;
    let base = if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        min /= 1_000_000;
        max /= 1_000_000;
        mean /= 1_000_000.0;
        dev /= 1_000_000.0;
        "(msec)"
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        min /= 1000;
        max /= 1000;
        mean /= 1000.0;
        dev /= 1000.0;
        "(usec)"
    } else {
        "(nsec)"
    };
    let _ = writeln!(
        out,
        "    {name} {base}: min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}",
        num2str(min, 6, 1, false, N2sUnit::None),
        num2str(max, 6, 1, false, N2sUnit::None)
    );
}

/// fio's `show_clat_percentiles`.
pub(crate) fn show_clat_percentiles(
    out: &mut String,
    hist: &LatencyHist,
    plist: &[f64],
    precision: u32,
    pre: &str,
) {
    let vals = hist.percentiles(plist);
    if vals.is_empty() {
        return;
    }
    let minv = vals.iter().map(|v| v.1).min().unwrap_or(0);
    let maxv = vals.iter().map(|v| v.1).max().unwrap_or(0);
    let (scale_down, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000u64, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let _ = write!(out, "    {pre} percentiles ({unit}):\n     |");
    let q = maxv / divisor;
    let time_width = if q == 0 {
        5
    } else {
        5.max(((q as f64).log10() + 1.0) as usize)
    };
    let prec = precision as usize;
    let per_line = (80 - 7) / (prec + 10 + time_width);
    let per_line = per_line.max(1);
    let len = vals.len();
    for (j, &(p, v)) in vals.iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let is_last = j == len - 1;
        let mut v = v;
        for _ in 0..scale_down {
            v = v.div_ceil(1000);
        }
        let _ = write!(
            out,
            " {p:w$.prec$}th=[{v:tw$}]{}",
            if is_last { '\n' } else { ',' },
            w = prec + 3,
            tw = time_width
        );
        if is_last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// fio's `convert_agg_kbytes_percent` (note the `int mean` parameter).
pub(crate) fn agg_percent(rs: &GroupStats, ddir: usize, mean: f64) -> f64 {
    let mut p = 100.0;
    if rs.agg[ddir] > 1024 {
        let mean = mean as i32;
        p = f64::from(mean) * 100.0 / (rs.agg[ddir] as f64 / 1024.0);
        if p > 100.0 {
            p = 100.0;
        }
    }
    p
}

fn show_ddir_status(out: &mut String, rs: &GroupStats, ts: &JobStats, ddir: Ddir) {
    let d = ts.dir(ddir);
    if d.runtime_ms == 0 {
        return;
    }
    let i2p = is_power_of_2(rs.kb_base);
    let sf = ts.sig_figs as usize;
    let runt = d.runtime_ms;
    let bw = d.io_bytes.wrapping_mul(1000) / runt;
    let io_p = num2str(d.io_bytes, sf, 1, i2p, N2sUnit::Byte);
    let bw_p = num2str(bw, sf, 1, i2p, bw_unit(ts.unit_base));
    let bw_p_alt = num2str(bw, sf, 1, !i2p, bw_unit(ts.unit_base));
    let iops = d.total_ios.wrapping_mul(1000) / runt;
    let iops_p = num2str(iops, sf, 1, false, N2sUnit::None);
    let post = if ddir == Ddir::Write {
        format!("; {} zone resets", ts.nr_zone_resets)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  {}: IOPS={iops_p}, BW={bw_p} ({bw_p_alt})({io_p}/{runt}msec){post}",
        ddir.name()
    );
    if let Some(c) = d.slat.stat.calc() {
        display_lat(out, "slat", c);
    }
    if let Some(c) = d.clat.stat.calc() {
        display_lat(out, "clat", c);
    }
    if let Some(c) = d.lat.stat.calc() {
        display_lat(out, " lat", c);
    }
    let plist = &ts.percentile_list;
    let prec = ts.percentile_precision;
    if ts.slat_percentiles && d.slat.samples() > 0 {
        show_clat_percentiles(out, &d.slat, plist, prec, "slat");
    }
    if ts.clat_percentiles && d.clat.samples() > 0 {
        show_clat_percentiles(out, &d.clat, plist, prec, "clat");
    }
    if ts.lat_percentiles && d.lat.samples() > 0 {
        show_clat_percentiles(out, &d.lat, plist, prec, "lat");
    }
    if let Some((mut min, mut max, mut mean, mut dev)) = d.bw.calc() {
        let fkb = f64::from(rs.kb_base);
        // fio 3.33 compares unit_base with 1, which it never is: always bytes.
        let mut bw_str = if i2p { "KiB" } else { "kB" };
        let p_of_agg = agg_percent(rs, ddir as usize, mean);
        if mean > fkb * fkb {
            min = (min as f64 / fkb) as u64;
            max = (max as f64 / fkb) as u64;
            mean /= fkb;
            dev /= fkb;
            bw_str = "MiB";
        }
        let _ = writeln!(
            out,
            "   bw ({bw_str:>5}/s): min={min:5}, max={max:5}, per={p_of_agg:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
            d.bw.samples
        );
    }
    if let Some((min, max, mean, dev)) = d.iops.calc() {
        let _ = writeln!(
            out,
            "   iops        : min={min:5}, max={max:5}, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
            d.iops.samples
        );
    }
}

/// fio's `stat_calc_lat`: percent of all read/write/trim I/Os per bucket,
/// non-zero buckets shown as at least 0.01.
pub(crate) fn calc_lat(ts: &JobStats, src: &[u64]) -> Vec<f64> {
    let total = ts.rw_total_ios();
    src.iter()
        .map(|&c| {
            if total == 0 {
                return 0.0;
            }
            let v = c as f64 / total as f64 * 100.0;
            if v < 0.01 && c != 0 {
                0.01
            } else {
                v
            }
        })
        .collect()
}

/// fio's `stat_calc_dist`: depth distribution, non-zero shown as at least 0.1.
pub(crate) fn calc_dist(map: &[u64], total: u64) -> Vec<f64> {
    map.iter()
        .map(|&c| {
            if total == 0 {
                return 0.0;
            }
            let v = c as f64 / total as f64 * 100.0;
            if v < 0.1 && c != 0 {
                0.1
            } else {
                v
            }
        })
        .collect()
}

pub(crate) const LAT_RANGES: [&str; 12] = [
    "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=", ">=2000=",
];

/// fio's `show_lat`: non-zero buckets, five per line, with `prefix` before
/// each line (`  lat (usec)   : ` in 3.33, `    lat (usec) : ` in 2.16).
pub(crate) fn show_lat(out: &mut String, vals: &[f64], prefix: &str) {
    let mut new_line = true;
    let mut shown = false;
    let mut line = 0;
    for (i, &v) in vals.iter().enumerate() {
        if v <= 0.0 {
            continue;
        }
        shown = true;
        if new_line {
            if line != 0 {
                out.push('\n');
            }
            out.push_str(prefix);
            new_line = false;
            line = 0;
        }
        if line != 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}{v:3.2}%", LAT_RANGES[i]);
        line += 1;
        if line == 5 {
            new_line = true;
        }
    }
    if shown {
        out.push('\n');
    }
}

/// glibc `strerror` for the common errno values.
pub(crate) fn strerror(e: i32) -> String {
    let s = match e {
        0 => "Success",
        1 => "Operation not permitted",
        2 => "No such file or directory",
        3 => "No such process",
        4 => "Interrupted system call",
        5 => "Input/output error",
        6 => "No such device or address",
        7 => "Argument list too long",
        9 => "Bad file descriptor",
        11 => "Resource temporarily unavailable",
        12 => "Cannot allocate memory",
        13 => "Permission denied",
        14 => "Bad address",
        16 => "Device or resource busy",
        17 => "File exists",
        19 => "No such device",
        20 => "Not a directory",
        21 => "Is a directory",
        22 => "Invalid argument",
        24 => "Too many open files",
        27 => "File too large",
        28 => "No space left on device",
        29 => "Illegal seek",
        30 => "Read-only file system",
        61 => "No data available",
        62 => "Timer expired",
        95 => "Operation not supported",
        110 => "Connection timed out",
        121 => "Remote I/O error",
        122 => "Disk quota exceeded",
        125 => "Operation canceled",
        _ => return format!("Unknown error {e}"),
    };
    s.to_string()
}

fn show_thread_status_normal(out: &mut String, ts: &JobStats, rs: &GroupStats, date: &str) {
    if ts.rw_io_bytes() == 0 && ts.rw_total_ios() == 0 {
        return;
    }
    if ts.error == 0 {
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={:2}: pid={}: {date}",
            ts.name, ts.groupid, ts.members, ts.error, ts.pid
        );
    } else {
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={:2} ({}): pid={}: {date}",
            ts.name, ts.groupid, ts.members, ts.error, ts.verror, ts.pid
        );
    }
    if !ts.description.is_empty() {
        let _ = writeln!(out, "  Description  : [{}]", ts.description);
    }
    for ddir in Ddir::ALL {
        if ts.dir(ddir).io_bytes != 0 {
            show_ddir_status(out, rs, ts, ddir);
        }
    }
    show_lat(out, &calc_lat(ts, &ts.io_u_lat_n), "  lat (nsec)   : ");
    show_lat(out, &calc_lat(ts, &ts.io_u_lat_u), "  lat (usec)   : ");
    show_lat(out, &calc_lat(ts, &ts.io_u_lat_m), "  lat (msec)   : ");
    if let Some(c) = ts.sync.stat.calc() {
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        display_lat(out, "sync", c);
        show_clat_percentiles(
            out,
            &ts.sync,
            &ts.percentile_list,
            ts.percentile_precision,
            "sync",
        );
    }
    let (usr, sys) = ts.cpu_percent();
    let _ = writeln!(
        out,
        "  cpu          : usr={usr:3.2}%, sys={sys:3.2}%, ctx={}, majf={}, minf={}",
        ts.ctx, ts.majf, ts.minf
    );
    let d = calc_dist(&ts.io_u_map, ts.rw_total_ios());
    let _ = writeln!(
        out,
        "  IO depths    : 1={:3.1}%, 2={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, >=64={:3.1}%",
        d[0], d[1], d[2], d[3], d[4], d[5], d[6]
    );
    for (label, map, total) in [
        ("     submit    : ", &ts.io_u_submit, ts.total_submit),
        ("     complete  : ", &ts.io_u_complete, ts.total_complete),
    ] {
        let d = calc_dist(map, total);
        let _ = writeln!(
            out,
            "{label}0={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, 64={:3.1}%, >=64={:3.1}%",
            d[0], d[1], d[2], d[3], d[4], d[5], d[6]
        );
    }
    let [r, w, t] = &ts.dirs;
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        r.total_ios,
        w.total_ios,
        t.total_ios,
        ts.sync_total_ios,
        r.short_ios,
        w.short_ios,
        t.short_ios,
        r.drop_ios,
        w.drop_ios,
        t.drop_ios
    );
    if ts.continue_on_error {
        let _ = writeln!(
            out,
            "     errors    : total={}, first_error={}/<{}>",
            ts.total_err_count,
            ts.first_error,
            strerror(ts.first_error)
        );
    }
    if ts.latency_depth != 0 {
        let _ = writeln!(
            out,
            "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
            ts.latency_target, ts.latency_window, ts.latency_percentile, ts.latency_depth
        );
    }
}

fn show_group_stats(out: &mut String, rs: &GroupStats) {
    const STR: [&str; 3] = ["   READ", "  WRITE", "   TRIM"];
    let _ = writeln!(out, "\nRun status group {} (all jobs):", rs.groupid);
    let i2p = is_power_of_2(rs.kb_base);
    let sf = rs.sig_figs as usize;
    let u = bw_unit(rs.unit_base);
    for (i, label) in STR.iter().enumerate() {
        if rs.max_run[i] == 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "{}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
            label,
            num2str(rs.agg[i], sf, 1, i2p, u),
            num2str(rs.agg[i], sf, 1, !i2p, u),
            num2str(rs.min_bw[i], sf, 1, i2p, u),
            num2str(rs.max_bw[i], sf, 1, i2p, u),
            num2str(rs.min_bw[i], sf, 1, !i2p, u),
            num2str(rs.max_bw[i], sf, 1, !i2p, u),
            num2str(rs.iobytes[i], sf, 1, i2p, N2sUnit::Byte),
            num2str(rs.iobytes[i], sf, 1, !i2p, N2sUnit::Byte),
            rs.min_run[i],
            rs.max_run[i]
        );
    }
}

/// `Disk stats (read/write):` block (shared with the old format).
pub(crate) fn show_disk_util(out: &mut String, disks: &[DiskUtil]) {
    if disks.is_empty() {
        return;
    }
    out.push_str("\nDisk stats (read/write):\n");
    for du in disks {
        if du.aggr.is_some() {
            out.push_str("  ");
        }
        let _ = write!(
            out,
            "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
            du.name,
            du.ios[0],
            du.ios[1],
            du.merges[0],
            du.merges[1],
            du.ticks[0],
            du.ticks[1],
            du.in_queue,
            du.util.min(100.0)
        );
        if let Some(a) = &du.aggr {
            let _ = write!(
                out,
                ", aggrios={}/{}, aggrmerge={}/{}, aggrticks={}/{}, aggrin_queue={}, aggrutil={:3.2}%",
                a.ios[0], a.ios[1], a.merges[0], a.merges[1], a.ticks[0], a.ticks[1], a.in_queue, a.util
            );
        }
        out.push('\n');
    }
}
