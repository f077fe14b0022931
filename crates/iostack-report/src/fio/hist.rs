//! fio's latency statistics: the running `io_stat` (min, max, Welford mean and
//! sum of squares) and the log-linear histogram used for percentiles
//! (`stat.c`/`stat.h` of fio 3.33: `plat_val_to_idx`, `plat_idx_to_val`,
//! `calc_clat_percentiles`).
//!
//! Floating point is used here exactly where fio uses it, so that the printed
//! numbers match; this is report arithmetic, never a simulation decision.

use std::fmt;

/// `FIO_IO_U_PLAT_BITS`: index bits per group (error bound 1/2^(6+1)).
pub const FIO_IO_U_PLAT_BITS: u32 = 6;
/// `FIO_IO_U_PLAT_VAL`: buckets per group.
pub const FIO_IO_U_PLAT_VAL: u32 = 1 << FIO_IO_U_PLAT_BITS;
/// `FIO_IO_U_PLAT_GROUP_NR`: number of groups (tracks up to 2^34 ns exactly).
pub const FIO_IO_U_PLAT_GROUP_NR: u32 = 29;
/// `FIO_IO_U_PLAT_NR`: total number of buckets (1856).
pub const FIO_IO_U_PLAT_NR: usize = (FIO_IO_U_PLAT_GROUP_NR * FIO_IO_U_PLAT_VAL) as usize;
/// `FIO_IO_U_LIST_MAX_LEN`: longest percentile list fio accepts.
pub const FIO_IO_U_LIST_MAX_LEN: usize = 20;

/// fio's default `percentile_list`.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// fio's `plat_val_to_idx`: the histogram bucket of a latency value (ns).
pub fn plat_val_to_idx(val: u64) -> usize {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    // MSB <= FIO_IO_U_PLAT_BITS: cannot be rounded off, use all bits as index.
    if msb <= FIO_IO_U_PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - FIO_IO_U_PLAT_BITS;
    let base = ((error_bits + 1) << FIO_IO_U_PLAT_BITS) as usize;
    let offset = ((u64::from(FIO_IO_U_PLAT_VAL) - 1) & (val >> error_bits)) as usize;
    (base + offset).min(FIO_IO_U_PLAT_NR - 1)
}

/// fio's `plat_idx_to_val`: the value (ns) a bucket stands for, the middle of its
/// range (`base + (k + 0.5) * 2^error_bits`, exact in integers).
///
/// # Panics
/// If `idx >= FIO_IO_U_PLAT_NR`, as fio's assertion.
pub fn plat_idx_to_val(idx: usize) -> u64 {
    assert!(idx < FIO_IO_U_PLAT_NR, "histogram index {idx} out of range");
    if idx < (FIO_IO_U_PLAT_VAL << 1) as usize {
        return idx as u64;
    }
    let error_bits = (idx >> FIO_IO_U_PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + FIO_IO_U_PLAT_BITS);
    let k = (idx % FIO_IO_U_PLAT_VAL as usize) as u64;
    // (k + 0.5) * 2^error_bits with error_bits >= 1.
    base + ((2 * k + 1) << (error_bits - 1))
}

/// fio's `struct io_stat`: a running min/max/mean/variance (Welford).
#[derive(Clone, Debug, PartialEq)]
pub struct IoStat {
    /// Smallest sample (`u64::MAX` before the first one, as fio's `ULONG_MAX`).
    pub min_val: u64,
    pub max_val: u64,
    pub samples: u64,
    pub mean: f64,
    /// Sum of squared deviations (fio's `S`).
    pub s: f64,
}

impl Default for IoStat {
    fn default() -> Self {
        IoStat {
            min_val: u64::MAX,
            max_val: 0,
            samples: 0,
            mean: 0.0,
            s: 0.0,
        }
    }
}

impl IoStat {
    pub fn new() -> Self {
        Self::default()
    }

    /// fio's `add_stat_sample`.
    pub fn add_sample(&mut self, data: u64) {
        let val = data as f64;
        if data > self.max_val {
            self.max_val = data;
        }
        if data < self.min_val {
            self.min_val = data;
        }
        let delta = val - self.mean;
        if delta != 0.0 {
            self.mean += delta / (self.samples as f64 + 1.0);
            self.s += delta * (val - self.mean);
        }
        self.samples += 1;
    }

    /// fio's `calc_lat`: `(min, max, mean, stddev)` or `None` without samples.
    pub fn calc(&self) -> Option<(u64, u64, f64, f64)> {
        let n = self.samples as f64;
        if self.samples == 0 {
            return None;
        }
        let dev = if n > 1.0 {
            (self.s / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some((self.min_val, self.max_val, self.mean, dev))
    }

    /// Standard deviation as fio prints it (0 for fewer than two samples).
    pub fn stddev(&self) -> f64 {
        self.calc().map_or(0.0, |c| c.3)
    }

    /// fio's `sum_stat(dst, src, pure_sum)`. Time statistics are merged with the
    /// parallel-variance formula; bandwidth and IOPS samples of a reporting group
    /// are plainly added (`pure_sum`), as fio does for `group_reporting`.
    pub fn sum(&mut self, src: &IoStat, pure_sum: bool) {
        if src.samples == 0 {
            return;
        }
        let first = self.samples == 0;
        if !pure_sum {
            self.min_val = self.min_val.min(src.min_val);
            self.max_val = self.max_val.max(src.max_val);
            let (mean, s) = if first {
                (src.mean, src.s)
            } else {
                let delta = src.mean - self.mean;
                let tot = self.samples.wrapping_add(src.samples);
                let mean = ((src.mean * src.samples as f64) + (self.mean * self.samples as f64))
                    / tot as f64;
                let s = src.s
                    + self.s
                    + delta.powi(2) * (self.samples.wrapping_mul(src.samples)) as f64 / tot as f64;
                (mean, s)
            };
            self.samples += src.samples;
            self.mean = mean;
            self.s = s;
            return;
        }
        if first {
            *self = src.clone();
        } else {
            self.min_val = self.min_val.wrapping_add(src.min_val);
            self.max_val = self.max_val.wrapping_add(src.max_val);
            self.samples += src.samples;
            self.mean += src.mean;
            self.s += src.s;
        }
    }
}

/// A latency distribution in nanoseconds: fio's `io_stat` plus its
/// `io_u_plat` histogram. Memory is constant (1856 counters, allocated at the
/// first sample) whatever the number of samples.
#[derive(Clone, PartialEq, Default)]
pub struct LatencyHist {
    /// Exact min/max/mean/stddev, updated per sample as fio does.
    pub stat: IoStat,
    bins: Vec<u64>,
}

impl fmt::Debug for LatencyHist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nonzero: Vec<(usize, u64)> = self.nonzero_bins().collect();
        f.debug_struct("LatencyHist")
            .field("stat", &self.stat)
            .field("bins", &nonzero)
            .finish()
    }
}

impl LatencyHist {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one latency in ns (fio's `add_stat_sample` + `add_lat_percentile_sample`).
    pub fn record(&mut self, ns: u64) {
        self.stat.add_sample(ns);
        self.add_bin(plat_val_to_idx(ns), 1);
    }

    /// Adds `count` to histogram bucket `idx` without touching `stat`. For
    /// building a distribution from known parts (tests, imported data).
    pub fn add_bin(&mut self, idx: usize, count: u64) {
        assert!(idx < FIO_IO_U_PLAT_NR, "histogram index {idx} out of range");
        if self.bins.is_empty() {
            self.bins = vec![0; FIO_IO_U_PLAT_NR];
        }
        self.bins[idx] += count;
    }

    /// The count in bucket `idx`.
    pub fn bin(&self, idx: usize) -> u64 {
        self.bins.get(idx).copied().unwrap_or(0)
    }

    /// `(index, count)` of every non-empty bucket, in index order.
    pub fn nonzero_bins(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.bins
            .iter()
            .enumerate()
            .filter(|(_, &c)| c != 0)
            .map(|(i, &c)| (i, c))
    }

    /// Merges another distribution (fio's `sum_stat` + adding `io_u_plat`).
    pub fn merge(&mut self, other: &LatencyHist) {
        self.stat.sum(&other.stat, false);
        for (i, c) in other.nonzero_bins() {
            self.add_bin(i, c);
        }
    }

    pub fn samples(&self) -> u64 {
        self.stat.samples
    }

    /// Smallest sample, `None` when empty.
    pub fn min(&self) -> Option<u64> {
        self.stat.calc().map(|c| c.0)
    }

    pub fn max(&self) -> Option<u64> {
        self.stat.calc().map(|c| c.1)
    }

    pub fn mean(&self) -> f64 {
        self.stat.mean
    }

    pub fn stddev(&self) -> f64 {
        self.stat.stddev()
    }

    /// fio's `calc_clat_percentiles` over this histogram with `N = stat.samples`.
    /// Returns `(percentile, value_ns)` pairs sorted by percentile; empty when
    /// there are no samples or no (non-zero) percentiles.
    pub fn percentiles(&self, plist: &[f64]) -> Vec<(f64, u64)> {
        if self.stat.samples == 0 || self.bins.is_empty() {
            return Vec::new();
        }
        calc_clat_percentiles(&self.bins, self.stat.samples, plist)
    }
}

/// The effective percentile list as fio uses it: entries up to the first 0.0
/// (at most [`FIO_IO_U_LIST_MAX_LEN`]), sorted ascending.
pub fn effective_percentile_list(plist: &[f64]) -> Vec<f64> {
    let mut l: Vec<f64> = plist
        .iter()
        .copied()
        .take(FIO_IO_U_LIST_MAX_LEN)
        .take_while(|&p| p != 0.0)
        .collect();
    l.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    l
}

/// fio's `calc_clat_percentiles`: walk the buckets and give, for each percentile
/// `p`, the value of the first bucket whose running count reaches `p / 100 * nr`.
/// That threshold is computed in x86-64 `long double` (80-bit) arithmetic as in
/// the C source, which changes the answer in exact-product cases such as p=30,
/// nr=100 (rank 31, not 30).
pub fn calc_clat_percentiles(bins: &[u64], nr: u64, plist: &[f64]) -> Vec<(f64, u64)> {
    let list = effective_percentile_list(plist);
    if list.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<(f64, u64)> = Vec::with_capacity(list.len());
    let mut sum: u64 = 0;
    let mut j = 0;
    'walk: for (i, &c) in bins.iter().enumerate().take(FIO_IO_U_PLAT_NR) {
        sum += c;
        while x87_threshold_reached(sum, list[j], nr) {
            out.push((list[j], plat_idx_to_val(i)));
            if j == list.len() - 1 {
                break 'walk;
            }
            j += 1;
        }
    }
    // fio logs "error calculating latency percentiles" and leaves the rest
    // undefined; only reachable when the histogram holds fewer than nr samples.
    let last = bins
        .iter()
        .rposition(|&c| c != 0)
        .map_or(0, plat_idx_to_val);
    while out.len() < list.len() {
        out.push((list[out.len()], last));
    }
    out
}

/// `sum >= ((long double) p / 100.0 * nr)` evaluated as x86-64 gcc does: both
/// the division and the multiplication rounded to a 64-bit significand
/// (round to nearest, ties to even).
pub fn x87_threshold_reached(sum: u64, p: f64, nr: u64) -> bool {
    match x87_threshold(p, nr) {
        None => true, // threshold <= 0
        Some((m, e)) => ge_scaled(sum, m, e),
    }
}

/// `(mantissa, exponent)` with value `mantissa * 2^exponent` of the rounded
/// threshold, or `None` if it is zero or negative.
fn x87_threshold(p: f64, nr: u64) -> Option<(u64, i32)> {
    if p.is_nan() || p <= 0.0 || nr == 0 {
        return None;
    }
    let bits = p.to_bits();
    let exp_field = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp_field == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp_field - 1075)
    };
    // q = m * 2^e / 100, with enough quotient bits that the remainder only
    // acts as a sticky bit.
    let shift = (m as u128).leading_zeros() - 1; // keep below 2^127
    let num = (m as u128) << shift;
    let quo = num / 100;
    let rem = num % 100;
    let (qm, qe) = round_to_64(quo, e - shift as i32, rem != 0);
    // t = q * nr, exact in 128 bits, then rounded.
    let prod = (qm as u128) * (nr as u128);
    Some(round_to_64(prod, qe, false))
}

/// Rounds `v * 2^exp` (plus a sticky fraction below the last bit of `v` when
/// `sticky`) to a 64-bit significand, ties to even.
fn round_to_64(v: u128, exp: i32, sticky: bool) -> (u64, i32) {
    if v == 0 {
        return (0, 0);
    }
    let bits = 128 - v.leading_zeros();
    if bits <= 64 {
        // Callers guarantee more than 64 bits whenever `sticky` matters.
        return (v as u64, exp);
    }
    let shift = bits - 64;
    let lower = v & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    let mut mant = v >> shift;
    let round_up = lower > half || (lower == half && (sticky || mant & 1 == 1));
    let mut e = exp + shift as i32;
    if round_up {
        mant += 1;
        if mant >> 64 != 0 {
            mant >>= 1;
            e += 1;
        }
    }
    (mant as u64, e)
}

/// `sum >= m * 2^e`.
fn ge_scaled(sum: u64, m: u64, e: i32) -> bool {
    if m == 0 {
        return true;
    }
    if e >= 0 {
        if e >= 64 {
            return false;
        }
        let rhs = (m as u128) << e;
        (sum as u128) >= rhs
    } else {
        let s = (-e) as u32;
        if s >= 64 {
            // m * 2^e < 1 (m < 2^64): reached by any sum >= 1.
            return sum >= 1;
        }
        ((sum as u128) << s) >= m as u128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x87_known_cases() {
        // Checked against gcc long double on x86-64.
        assert!(!x87_threshold_reached(30, 30.0, 100));
        assert!(x87_threshold_reached(31, 30.0, 100));
        assert!(!x87_threshold_reached(19990, 99.95, 20000));
        assert!(x87_threshold_reached(19991, 99.95, 20000));
        assert!(x87_threshold_reached(2048, 50.0, 4096));
        assert!(!x87_threshold_reached(2047, 50.0, 4096));
        assert!(x87_threshold_reached(1, 1.0, 100));
        assert!(x87_threshold_reached(4096, 100.0, 4096));
        assert!(!x87_threshold_reached(4095, 100.0, 4096));
    }
}
