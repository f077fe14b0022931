//! GNU dd's transfer summary (coreutils 9.1, `print_xfer_stats`), printed on stderr
//! by the real tool: records in/out and the copied line.

/// C's `%g` with the default precision of 6.
pub fn fmt_g(v: f64) -> String {
    fmt_g_prec(v, 6)
}

fn fmt_g_prec(v: f64, prec: i32) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let exp = v.abs().log10().floor() as i32;
    let s = if exp < -4 || exp >= prec {
        let m = format!("{:.*e}", (prec - 1) as usize, v);
        let (mant, e) = m.split_once('e').expect("exponent");
        let mant = trim_zeros(mant);
        let e: i32 = e.parse().expect("exponent digits");
        format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    } else {
        let decimals = (prec - 1 - exp).max(0) as usize;
        trim_zeros(&format!("{v:.decimals$}"))
    };
    s
}

fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// A size with 2 significant digits (one decimal below 10), as dd prints it in the
/// parentheses: `67 MB`, `3.0 kB`, `64 MiB`.
fn human2(bytes: u64, base: f64, units: &[&str]) -> String {
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= base && i + 1 < units.len() {
        v /= base;
        i += 1;
    }
    if v < 10.0 {
        let r = (v * 10.0).round() / 10.0;
        if r >= 10.0 {
            format!("{:.0} {}", r, units[i])
        } else {
            format!("{:.1} {}", r, units[i])
        }
    } else {
        format!("{:.0} {}", v.round(), units[i])
    }
}

/// The rate: SI units, about three significant digits, trailing zeros dropped.
fn rate(bytes: u64, secs: f64) -> String {
    let units = ["B/s", "kB/s", "MB/s", "GB/s", "TB/s"];
    let mut v = bytes as f64 / secs;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < units.len() {
        v /= 1000.0;
        i += 1;
    }
    format!("{} {}", fmt_g_prec(v, 3), units[i])
}

/// The three lines dd prints for `full+partial` records and `bytes` in `secs`.
pub fn summary(records_in: (u64, u64), records_out: (u64, u64), bytes: u64, secs: f64) -> String {
    let mut s = format!(
        "{}+{} records in\n{}+{} records out\n",
        records_in.0, records_in.1, records_out.0, records_out.1
    );
    let sizes = if bytes == 1 {
        "1 byte".to_string()
    } else if bytes < 1000 {
        format!("{bytes} bytes")
    } else if bytes < 1024 {
        format!(
            "{bytes} bytes ({})",
            human2(bytes, 1000.0, &["B", "kB", "MB", "GB", "TB"])
        )
    } else {
        format!(
            "{bytes} bytes ({}, {})",
            human2(bytes, 1000.0, &["B", "kB", "MB", "GB", "TB"]),
            human2(bytes, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB"])
        )
    };
    s.push_str(&format!(
        "{sizes} copied, {} s, {}\n",
        fmt_g(secs),
        rate(bytes, secs)
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The transcripts in formats-and-tools.md 9.3 / samples/dd_summary_lines.txt.
    #[test]
    fn matches_coreutils_samples() {
        assert_eq!(
            summary((64, 0), (64, 0), 67108864, 0.0394419),
            "64+0 records in\n64+0 records out\n\
             67108864 bytes (67 MB, 64 MiB) copied, 0.0394419 s, 1.7 GB/s\n"
        );
        assert_eq!(
            summary((3, 0), (3, 0), 3000, 0.000296367)
                .lines()
                .last()
                .unwrap(),
            "3000 bytes (3.0 kB, 2.9 KiB) copied, 0.000296367 s, 10.1 MB/s"
        );
        assert_eq!(
            summary((1, 0), (1, 0), 1, 2.4817e-05)
                .lines()
                .last()
                .unwrap(),
            "1 byte copied, 2.4817e-05 s, 40.3 kB/s"
        );
        assert_eq!(
            summary((1, 1), (1, 1), 5000, 2.1699e-05)
                .lines()
                .last()
                .unwrap(),
            "5000 bytes (5.0 kB, 4.9 KiB) copied, 2.1699e-05 s, 230 MB/s"
        );
    }
}
