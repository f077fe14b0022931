//! fio's number and date formatting: `num2str` of fio 3.33 (`lib/num2str.c`),
//! the older `num2str` of fio 2.16 (used by the pre-2.17 output), and glibc's
//! `ctime` layout.

/// fio 3.33 `enum n2s_unit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum N2sUnit {
    None,
    PerSec,
    Byte,
    Bit,
    BytePerSec,
    BitPerSec,
}

impl N2sUnit {
    fn suffix(self) -> &'static str {
        match self {
            N2sUnit::None => "",
            N2sUnit::PerSec => "/s",
            N2sUnit::Byte => "B",
            N2sUnit::Bit => "bit",
            N2sUnit::BytePerSec => "B/s",
            N2sUnit::BitPerSec => "bit/s",
        }
    }
}

fn digits(n: u64) -> usize {
    let mut d = 1;
    let mut v = n;
    while v >= 10 {
        v /= 10;
        d += 1;
    }
    d
}

/// fio 3.33 `num2str(num, maxlen, base, pow2, units)`: at most `maxlen` digits
/// (counting the '.'), SI (`k`, `M`, ...) or IEC (`Ki`, `Mi`, ...) prefixes,
/// "complete with carry rounding error". Examples: `num2str(40543, 4, 1, false,
/// N2sUnit::None)` is `40.5k`; `num2str(166065063, 4, 1, false,
/// N2sUnit::BytePerSec)` is `166MB/s`.
pub fn num2str(num: u64, maxlen: usize, base: u64, pow2: bool, units: N2sUnit) -> String {
    const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefixes = if pow2 { &IEC } else { &SI };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };

    let mut post_index = 0usize;
    let mut b = base;
    while b > 1 {
        b /= thousand;
        post_index += 1;
    }
    let mut num = match units {
        N2sUnit::Bit | N2sUnit::BitPerSec => num.wrapping_mul(8),
        _ => num,
    };

    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post_index < SI.len() {
        if digits(num) <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post_index += 1;
    }
    if post_index >= SI.len() {
        post_index = 0;
    }
    let unit = units.suffix();
    let Some(modulo) = modulo else {
        return format!("{num}{}{unit}", prefixes[post_index]);
    };
    let len = digits(num);
    if maxlen as i64 - len as i64 <= 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{unit}", prefixes[post_index]);
    }
    let prec = maxlen - len - 1;
    let frac = format!("{:.*}", prec, modulo as f64 / thousand as f64);
    if frac.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit}", &frac[2..], prefixes[post_index])
}

/// fio 2.16 `num2str(num, maxlen, base, pow2, unit_base)`: `unit_base` 8 appends
/// `B`, 1 multiplies by 8 and appends `bit`, anything else appends nothing.
/// Prefixes are `K M G P E` (2.16 had no `T`), and the decimals are the
/// remainder itself, shortened (`1.5K` for 1029 with pow2: remainder 5).
pub fn num2str_old(num: u64, maxlen: usize, base: u64, pow2: bool, unit_base: u32) -> String {
    const POSTFIX: [&str; 6] = ["", "K", "M", "G", "P", "E"];
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut post_index = 0usize;
    let mut b = base;
    while b > 1 {
        b /= thousand;
        post_index += 1;
    }
    let mut num = num;
    let byte = match unit_base {
        1 => {
            num = num.wrapping_mul(8);
            "bit"
        }
        8 => "B",
        _ => "",
    };
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    // 2.16 bounds this loop by sizeof(postfix) (48 bytes), not its length.
    while post_index < 48 {
        if digits(num) <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post_index += 1;
    }
    let done = |num: u64, post_index: usize| {
        let pi = if post_index >= POSTFIX.len() {
            0
        } else {
            post_index
        };
        format!("{num}{}{byte}", POSTFIX[pi])
    };
    let Some(mut modulo) = modulo else {
        return done(num, post_index);
    };
    let decimals = (maxlen as u32).wrapping_sub(digits(num) as u32);
    if decimals <= 1 {
        if carry {
            num += 1;
        }
        return done(num, post_index);
    }
    while digits(modulo) as u32 > decimals - 1 {
        modulo = modulo.div_ceil(10);
    }
    let pi = post_index.min(POSTFIX.len() - 1);
    format!("{num}.{modulo}{}{byte}", POSTFIX[pi])
}

/// `ctime_r` without the trailing newline, in UTC: `Sat Nov 21 15:19:51 2026`.
pub fn ctime(secs: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    let wday = DAYS[days.rem_euclid(7) as usize];
    let (y, mo, d) = civil_from_days(days);
    format!(
        "{wday} {}{d:3} {h:02}:{m:02}:{s:02} {y}",
        MONTHS[(mo - 1) as usize]
    )
}

/// Howard Hinnant's `civil_from_days`: (year, month 1-12, day 1-31).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_sample() {
        assert_eq!(ctime(1_795_274_391), "Sat Nov 21 15:19:51 2026");
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime(951_782_400), "Tue Feb 29 00:00:00 2000");
    }
}
