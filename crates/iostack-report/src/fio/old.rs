//! The normal output of fio before 2.17 (early 2017, commit d694a6a7), as
//! fio-2.16's `stat.c` printed it: `read : io=..., bw=..., iops=..., runt=`
//! per job and `READ: io=..., aggrb=..., minb=..., maxb=..., mint=..., maxt=`
//! per group, `KB` meaning KiB.
//!
//! fio 2.16 measured latencies in whole microseconds with a microsecond
//! histogram; here they come from the nanosecond statistics divided by 1000
//! (min/max truncated, mean/stddev exact), and percentiles are the 3.33
//! nanosecond percentiles truncated to microseconds. Latencies under 1 us count
//! in the first `lat (usec)` bucket, as 2.16 had no nanosecond buckets.

use std::fmt::Write as _;

use super::normal::{
    calc_dist, calc_lat, is_power_of_2, show_disk_util, show_lat, starting_line, strerror,
};
use super::num2str::num2str_old;
use super::stats::{Ddir, JobStats, UnitBase};
use super::{FioReport, Preamble};

/// The version the old format imitates (printed in its startup lines).
pub const OLD_FIO_VERSION: &str = "fio-2.16";

fn unit_base_old(u: UnitBase) -> u32 {
    match u {
        UnitBase::Bytes => 8,
        UnitBase::Bits => 1,
    }
}

/// fio 2.16 `group_run_stats`, in KiB (kb_base units).
struct OldGroup {
    groupid: u32,
    max_run: [u64; 3],
    min_run: [u64; 3],
    max_bw: [u64; 3],
    min_bw: [u64; 3],
    io_kb: [u64; 3],
    agg: [u64; 3],
    kb_base: u32,
    unit_base: UnitBase,
}

fn old_groups(entries: &[JobStats]) -> Vec<OldGroup> {
    let Some(max_gid) = entries.iter().map(|t| t.groupid).max() else {
        return Vec::new();
    };
    let mut gs: Vec<OldGroup> = (0..=max_gid)
        .map(|g| OldGroup {
            groupid: g,
            max_run: [0; 3],
            min_run: [u64::MAX; 3],
            max_bw: [0; 3],
            min_bw: [u64::MAX; 3],
            io_kb: [0; 3],
            agg: [0; 3],
            kb_base: 1024,
            unit_base: UnitBase::Bytes,
        })
        .collect();
    for ts in entries {
        let rs = &mut gs[ts.groupid as usize];
        rs.kb_base = ts.kb_base.max(1);
        rs.unit_base = ts.unit_base;
        for j in 0..3 {
            let d = &ts.dirs[j];
            if d.runtime_ms == 0 {
                continue;
            }
            if d.runtime_ms < rs.min_run[j] || rs.min_run[j] == 0 {
                rs.min_run[j] = d.runtime_ms;
            }
            if d.runtime_ms > rs.max_run[j] {
                rs.max_run[j] = d.runtime_ms;
            }
            let kb = d.io_bytes / u64::from(rs.kb_base);
            let bw = kb.wrapping_mul(1000) / d.runtime_ms;
            rs.min_bw[j] = rs.min_bw[j].min(bw);
            rs.max_bw[j] = rs.max_bw[j].max(bw);
            rs.io_kb[j] += kb;
        }
    }
    for rs in &mut gs {
        for j in 0..3 {
            if let Some(agg) = rs.io_kb[j].wrapping_mul(1000).checked_div(rs.max_run[j]) {
                rs.agg[j] = agg;
            }
        }
    }
    gs
}

/// fio 2.16 `fio_uint_to_kmg`: `4096` is `4K`, `65536` is `64K`.
fn uint_to_kmg(val: u64) -> String {
    const POST: [&str; 7] = ["", "K", "M", "G", "P", "E", ""];
    let mut v = val;
    let mut p = 0;
    loop {
        if v & 1023 != 0 {
            break;
        }
        v >>= 10;
        p += 1;
        if POST[p].is_empty() {
            break;
        }
    }
    format!("{v}{}", POST[p])
}

fn render_preamble_old(out: &mut String, p: &Preamble) {
    for h in &p.jobs {
        match h.clone_index {
            0 => {
                let _ = write!(out, "{}: (g={}): rw={}, ", h.name, h.groupid, h.rw);
                let k = uint_to_kmg;
                if h.bs_is_seq_rand {
                    let _ = write!(
                        out,
                        "bs(seq/rand)={}-{}/{}-{}, ",
                        k(h.bs_min[0]),
                        k(h.bs_max[0]),
                        k(h.bs_min[1]),
                        k(h.bs_max[1])
                    );
                } else {
                    let _ = write!(
                        out,
                        "bs={}-{}/{}-{}/{}-{}, ",
                        k(h.bs_min[0]),
                        k(h.bs_max[0]),
                        k(h.bs_min[1]),
                        k(h.bs_max[1]),
                        k(h.bs_min[2]),
                        k(h.bs_max[2])
                    );
                }
                let _ = writeln!(out, "ioengine={}, iodepth={}", h.ioengine, h.iodepth);
            }
            1 => out.push_str("...\n"),
            _ => {}
        }
    }
    let _ = writeln!(out, "{OLD_FIO_VERSION}");
    out.push_str(&starting_line(p.threads, p.processes));
    for l in &p.layouts {
        let _ = writeln!(
            out,
            "{}: Laying out IO file(s) ({} file(s) / {}MB)",
            l.name,
            l.files,
            l.extend_bytes >> 20
        );
    }
}

/// Renders the report in the pre-2.17 normal format, preceded by the
/// `iostack: seed=N config=HEX` line and, if present, 2.16-style startup lines.
pub fn render_old(r: &FioReport) -> String {
    let mut out = String::new();
    out.push_str(&r.head_lines());
    if let Some(p) = &r.preamble {
        render_preamble_old(&mut out, p);
    }
    out.push('\n');
    let entries = r.entries();
    let groups = old_groups(&entries);
    let date = r.time_string();
    for ts in &entries {
        show_thread_status_old(&mut out, ts, &groups[ts.groupid as usize], &date);
    }
    for rs in &groups {
        show_group_stats_old(&mut out, rs);
    }
    show_disk_util(&mut out, &r.disks);
    out
}

/// 2.16 `display_lat` on microsecond values.
fn display_lat_old(out: &mut String, name: &str, c: (u64, u64, f64, f64)) {
    let (mut min, mut max, mut mean, mut dev) =
        (c.0 / 1000, c.1 / 1000, c.2 / 1000.0, c.3 / 1000.0);
    let base = if min > 1000 && max > 1000 && mean > 1000.0 && dev > 1000.0 {
        min /= 1000;
        max /= 1000;
        mean /= 1000.0;
        dev /= 1000.0;
        "(msec)"
    } else {
        "(usec)"
    };
    let _ = writeln!(
        out,
        "    {name} {base}: min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}",
        num2str_old(min, 6, 1, false, 0),
        num2str_old(max, 6, 1, false, 0)
    );
}

/// 2.16 `show_clat_percentiles`.
fn show_clat_percentiles_old(out: &mut String, ts: &JobStats, ddir: Ddir) {
    let d = ts.dir(ddir);
    let vals: Vec<(f64, u64)> = d
        .clat
        .percentiles(&ts.percentile_list)
        .into_iter()
        .map(|(p, v)| (p, v / 1000))
        .collect();
    if vals.is_empty() {
        return;
    }
    let minv = vals.iter().map(|v| v.1).min().unwrap_or(0);
    let maxv = vals.iter().map(|v| v.1).max().unwrap_or(0);
    let scale_down = minv > 2000 && maxv > 99_999;
    out.push_str(if scale_down {
        "    clat percentiles (msec):\n     |"
    } else {
        "    clat percentiles (usec):\n     |"
    });
    let prec = ts.percentile_precision as usize;
    let per_line = ((80 - 7) / (prec + 14)).max(1);
    let len = vals.len();
    for (j, &(p, v)) in vals.iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let is_last = j == len - 1;
        let pad = if p < 10.0 { " " } else { "" };
        let v = if scale_down { v.div_ceil(1000) } else { v };
        let _ = write!(
            out,
            " {pad}{p:.prec$}th=[{v:5}]{}",
            if is_last { '\n' } else { ',' }
        );
        if is_last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

fn show_ddir_status_old(out: &mut String, rs: &OldGroup, ts: &JobStats, ddir: Ddir) {
    const STR: [&str; 3] = ["read ", "write", "trim"];
    let d = ts.dir(ddir);
    if d.runtime_ms == 0 {
        return;
    }
    let i2p = is_power_of_2(rs.kb_base);
    let runt = d.runtime_ms;
    let bw = d.io_bytes.wrapping_mul(1000) / runt;
    let io_p = num2str_old(d.io_bytes, 6, 1, i2p, 8);
    let bw_p = num2str_old(bw, 6, 1, i2p, unit_base_old(ts.unit_base));
    let iops = d.total_ios.wrapping_mul(1000) / runt;
    let iops_p = num2str_old(iops, 6, 1, false, 0);
    let _ = writeln!(
        out,
        "  {}: io={io_p}, bw={bw_p}/s, iops={iops_p}, runt={runt:6}msec",
        STR[ddir as usize]
    );
    if let Some(c) = d.slat.stat.calc() {
        display_lat_old(out, "slat", c);
    }
    if let Some(c) = d.clat.stat.calc() {
        display_lat_old(out, "clat", c);
    }
    if let Some(c) = d.lat.stat.calc() {
        display_lat_old(out, " lat", c);
    }
    if ts.clat_percentiles {
        show_clat_percentiles_old(out, ts, ddir);
    }
    if let Some((mut min, mut max, mut mean, mut dev)) = d.bw.calc() {
        let fkb = f64::from(rs.kb_base);
        let bits = ts.unit_base == UnitBase::Bits;
        let mut bw_str = if bits { "Kbit" } else { "KB" };
        if bits {
            min = min.wrapping_mul(8);
            max = max.wrapping_mul(8);
            mean *= 8.0;
            dev *= 8.0;
        }
        let mut p_of_agg = 100.0;
        if rs.agg[ddir as usize] != 0 {
            p_of_agg = (mean * 100.0 / rs.agg[ddir as usize] as f64).min(100.0);
        }
        if mean > fkb * fkb {
            min = (min as f64 / fkb) as u64;
            max = (max as f64 / fkb) as u64;
            mean /= fkb;
            dev /= fkb;
            bw_str = if bits { "Mbit" } else { "MB" };
        }
        let _ = writeln!(
            out,
            "    bw ({bw_str:<4}/s): min={min:5}, max={max:5}, per={p_of_agg:3.2}%, avg={mean:5.2}, stdev={dev:5.2}"
        );
    }
}

fn show_thread_status_old(out: &mut String, ts: &JobStats, rs: &OldGroup, date: &str) {
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
            show_ddir_status_old(out, rs, ts, ddir);
        }
    }
    let mut lat_u = ts.io_u_lat_u;
    lat_u[0] += ts.io_u_lat_n.iter().sum::<u64>();
    show_lat(out, &calc_lat(ts, &lat_u), "    lat (usec) : ");
    show_lat(out, &calc_lat(ts, &ts.io_u_lat_m), "    lat (msec) : ");
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
        "     issued    : total=r={}/w={}/d={}, short=r={}/w={}/d={}, drop=r={}/w={}/d={}",
        r.total_ios,
        w.total_ios,
        t.total_ios,
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

fn show_group_stats_old(out: &mut String, rs: &OldGroup) {
    const STR: [&str; 3] = ["   READ", "  WRITE", "   TRIM"];
    let _ = writeln!(out, "\nRun status group {} (all jobs):", rs.groupid);
    let i2p = is_power_of_2(rs.kb_base);
    let kb = u64::from(rs.kb_base);
    let u = unit_base_old(rs.unit_base);
    for (i, label) in STR.iter().enumerate() {
        if rs.max_run[i] == 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "{}: io={}, aggrb={}/s, minb={}/s, maxb={}/s, mint={}msec, maxt={}msec",
            label,
            num2str_old(rs.io_kb[i], 6, kb, i2p, 8),
            num2str_old(rs.agg[i], 6, kb, i2p, u),
            num2str_old(rs.min_bw[i], 6, kb, i2p, u),
            num2str_old(rs.max_bw[i], 6, kb, i2p, u),
            rs.min_run[i],
            rs.max_run[i]
        );
    }
}
