//! fio latency histogram: index/value functions against hand-computed fio
//! values, percentile thresholds against gcc's x86-64 long double, and
//! percentiles against a brute-force sort of random samples.

use iostack_des::{Rng, Seed};
use iostack_report::fio::{
    calc_clat_percentiles, plat_idx_to_val, plat_val_to_idx, x87_threshold_reached, IoStat,
    LatencyHist, DEFAULT_PERCENTILES, FIO_IO_U_PLAT_NR,
};

#[test]
fn plat_constants() {
    assert_eq!(FIO_IO_U_PLAT_NR, 1856);
}

#[test]
fn plat_val_to_idx_hand_computed() {
    // (value, index): values below 128 index themselves; above, the group is
    // the MSB and the next 6 bits pick the bucket.
    let cases: [(u64, usize); 16] = [
        (0, 0),
        (1, 1),
        (63, 63),
        (64, 64),
        (127, 127),
        (128, 128),
        (129, 128),
        (130, 129),
        (255, 191),
        (256, 192),
        (1000, 317),
        (24448, 607),
        (1u64 << 33, 1792),
        ((1u64 << 34) - 1, 1855),
        (1u64 << 34, 1855),
        (u64::MAX, 1855),
    ];
    for (v, i) in cases {
        assert_eq!(plat_val_to_idx(v), i, "value {v}");
    }
}

#[test]
fn plat_idx_to_val_hand_computed() {
    let cases: [(usize, u64); 9] = [
        (0, 0),
        (127, 127),
        (128, 129),
        (191, 255),
        (192, 258),
        (317, 1004),
        (607, 24448),
        (1792, (1u64 << 33) + (1u64 << 26)),
        (1855, 17_112_760_320),
    ];
    for (i, v) in cases {
        assert_eq!(plat_idx_to_val(i), v, "index {i}");
    }
    // Every bucket value maps back to its bucket, and values increase.
    for i in 0..FIO_IO_U_PLAT_NR {
        assert_eq!(plat_val_to_idx(plat_idx_to_val(i)), i);
        if i > 0 {
            assert!(plat_idx_to_val(i) > plat_idx_to_val(i - 1));
        }
    }
}

#[test]
#[should_panic]
fn plat_idx_out_of_range_panics() {
    plat_idx_to_val(FIO_IO_U_PLAT_NR);
}

#[test]
fn bucket_error_is_bounded() {
    let mut rng = Rng::stream(Seed(1), "fio/bucket-error");
    for _ in 0..100_000 {
        let v = rng.next_u64() >> (rng.below(64) as u32);
        if v >= 1 << 34 {
            continue;
        }
        let b = plat_idx_to_val(plat_val_to_idx(v));
        let err = (b as f64 - v as f64).abs();
        assert!(err <= v as f64 / 128.0 + 0.5, "{v} -> {b}");
    }
}

/// (percentile, N, smallest running count that reaches it), printed by a C
/// program evaluating fio's `sum >= (long double) p / 100.0 * nr` with gcc on x86-64.
const GCC_LONG_DOUBLE_RANKS: &[(f64, u64, u64)] = &[
    (1.0, 1, 1),
    (1.0, 3, 1),
    (1.0, 7, 1),
    (1.0, 16, 1),
    (1.0, 100, 1),
    (1.0, 1000, 10),
    (1.0, 2000, 20),
    (1.0, 4096, 41),
    (1.0, 10000, 100),
    (1.0, 20000, 200),
    (1.0, 81127, 812),
    (1.0, 100000, 1000),
    (1.0, 1000000, 10000),
    (1.0, 12345678901, 123456790),
    (5.0, 1, 1),
    (5.0, 3, 1),
    (5.0, 7, 1),
    (5.0, 16, 1),
    (5.0, 100, 5),
    (5.0, 1000, 50),
    (5.0, 2000, 100),
    (5.0, 4096, 205),
    (5.0, 10000, 500),
    (5.0, 20000, 1000),
    (5.0, 81127, 4057),
    (5.0, 100000, 5000),
    (5.0, 1000000, 50000),
    (5.0, 12345678901, 617283946),
    (10.0, 1, 1),
    (10.0, 3, 1),
    (10.0, 7, 1),
    (10.0, 16, 2),
    (10.0, 100, 10),
    (10.0, 1000, 100),
    (10.0, 2000, 200),
    (10.0, 4096, 410),
    (10.0, 10000, 1000),
    (10.0, 20000, 2000),
    (10.0, 81127, 8113),
    (10.0, 100000, 10000),
    (10.0, 1000000, 100000),
    (10.0, 12345678901, 1234567891),
    (20.0, 1, 1),
    (20.0, 3, 1),
    (20.0, 7, 2),
    (20.0, 16, 4),
    (20.0, 100, 20),
    (20.0, 1000, 200),
    (20.0, 2000, 400),
    (20.0, 4096, 820),
    (20.0, 10000, 2000),
    (20.0, 20000, 4000),
    (20.0, 81127, 16226),
    (20.0, 100000, 20000),
    (20.0, 1000000, 200000),
    (20.0, 12345678901, 2469135781),
    (30.0, 1, 1),
    (30.0, 3, 1),
    (30.0, 7, 3),
    (30.0, 16, 5),
    (30.0, 100, 31),
    (30.0, 1000, 300),
    (30.0, 2000, 600),
    (30.0, 4096, 1229),
    (30.0, 10000, 3000),
    (30.0, 20000, 6000),
    (30.0, 81127, 24339),
    (30.0, 100000, 30001),
    (30.0, 1000000, 300000),
    (30.0, 12345678901, 3703703671),
    (40.0, 1, 1),
    (40.0, 3, 2),
    (40.0, 7, 3),
    (40.0, 16, 7),
    (40.0, 100, 40),
    (40.0, 1000, 400),
    (40.0, 2000, 800),
    (40.0, 4096, 1639),
    (40.0, 10000, 4000),
    (40.0, 20000, 8000),
    (40.0, 81127, 32451),
    (40.0, 100000, 40000),
    (40.0, 1000000, 400000),
    (40.0, 12345678901, 4938271561),
    (50.0, 1, 1),
    (50.0, 3, 2),
    (50.0, 7, 4),
    (50.0, 16, 8),
    (50.0, 100, 50),
    (50.0, 1000, 500),
    (50.0, 2000, 1000),
    (50.0, 4096, 2048),
    (50.0, 10000, 5000),
    (50.0, 20000, 10000),
    (50.0, 81127, 40564),
    (50.0, 100000, 50000),
    (50.0, 1000000, 500000),
    (50.0, 12345678901, 6172839451),
    (60.0, 1, 1),
    (60.0, 3, 2),
    (60.0, 7, 5),
    (60.0, 16, 10),
    (60.0, 100, 61),
    (60.0, 1000, 600),
    (60.0, 2000, 1200),
    (60.0, 4096, 2458),
    (60.0, 10000, 6000),
    (60.0, 20000, 12000),
    (60.0, 81127, 48677),
    (60.0, 100000, 60001),
    (60.0, 1000000, 600000),
    (60.0, 12345678901, 7407407341),
    (70.0, 1, 1),
    (70.0, 3, 3),
    (70.0, 7, 5),
    (70.0, 16, 12),
    (70.0, 100, 70),
    (70.0, 1000, 700),
    (70.0, 2000, 1400),
    (70.0, 4096, 2868),
    (70.0, 10000, 7000),
    (70.0, 20000, 14000),
    (70.0, 81127, 56789),
    (70.0, 100000, 70000),
    (70.0, 1000000, 700000),
    (70.0, 12345678901, 8641975231),
    (80.0, 1, 1),
    (80.0, 3, 3),
    (80.0, 7, 6),
    (80.0, 16, 13),
    (80.0, 100, 80),
    (80.0, 1000, 800),
    (80.0, 2000, 1600),
    (80.0, 4096, 3277),
    (80.0, 10000, 8000),
    (80.0, 20000, 16000),
    (80.0, 81127, 64902),
    (80.0, 100000, 80000),
    (80.0, 1000000, 800000),
    (80.0, 12345678901, 9876543121),
    (90.0, 1, 1),
    (90.0, 3, 3),
    (90.0, 7, 7),
    (90.0, 16, 15),
    (90.0, 100, 90),
    (90.0, 1000, 900),
    (90.0, 2000, 1800),
    (90.0, 4096, 3687),
    (90.0, 10000, 9000),
    (90.0, 20000, 18000),
    (90.0, 81127, 73015),
    (90.0, 100000, 90000),
    (90.0, 1000000, 900000),
    (90.0, 12345678901, 11111111011),
    (95.0, 1, 1),
    (95.0, 3, 3),
    (95.0, 7, 7),
    (95.0, 16, 16),
    (95.0, 100, 95),
    (95.0, 1000, 950),
    (95.0, 2000, 1900),
    (95.0, 4096, 3892),
    (95.0, 10000, 9500),
    (95.0, 20000, 19000),
    (95.0, 81127, 77071),
    (95.0, 100000, 95000),
    (95.0, 1000000, 950000),
    (95.0, 12345678901, 11728394956),
    (99.0, 1, 1),
    (99.0, 3, 3),
    (99.0, 7, 7),
    (99.0, 16, 16),
    (99.0, 100, 99),
    (99.0, 1000, 990),
    (99.0, 2000, 1980),
    (99.0, 4096, 4056),
    (99.0, 10000, 9900),
    (99.0, 20000, 19800),
    (99.0, 81127, 80316),
    (99.0, 100000, 99000),
    (99.0, 1000000, 990000),
    (99.0, 12345678901, 12222222112),
    (99.5, 1, 1),
    (99.5, 3, 3),
    (99.5, 7, 7),
    (99.5, 16, 16),
    (99.5, 100, 100),
    (99.5, 1000, 995),
    (99.5, 2000, 1990),
    (99.5, 4096, 4076),
    (99.5, 10000, 9950),
    (99.5, 20000, 19900),
    (99.5, 81127, 80722),
    (99.5, 100000, 99500),
    (99.5, 1000000, 995000),
    (99.5, 12345678901, 12283950507),
    (99.9, 1, 1),
    (99.9, 3, 3),
    (99.9, 7, 7),
    (99.9, 16, 16),
    (99.9, 100, 100),
    (99.9, 1000, 1000),
    (99.9, 2000, 1999),
    (99.9, 4096, 4092),
    (99.9, 10000, 9991),
    (99.9, 20000, 19981),
    (99.9, 81127, 81046),
    (99.9, 100000, 99901),
    (99.9, 1000000, 999001),
    (99.9, 12345678901, 12333333223),
    (99.95, 1, 1),
    (99.95, 3, 3),
    (99.95, 7, 7),
    (99.95, 16, 16),
    (99.95, 100, 100),
    (99.95, 1000, 1000),
    (99.95, 2000, 2000),
    (99.95, 4096, 4094),
    (99.95, 10000, 9996),
    (99.95, 20000, 19991),
    (99.95, 81127, 81087),
    (99.95, 100000, 99951),
    (99.95, 1000000, 999501),
    (99.95, 12345678901, 12339506062),
    (99.99, 1, 1),
    (99.99, 3, 3),
    (99.99, 7, 7),
    (99.99, 16, 16),
    (99.99, 100, 100),
    (99.99, 1000, 1000),
    (99.99, 2000, 2000),
    (99.99, 4096, 4096),
    (99.99, 10000, 9999),
    (99.99, 20000, 19998),
    (99.99, 81127, 81119),
    (99.99, 100000, 99990),
    (99.99, 1000000, 999900),
    (99.99, 12345678901, 12344444334),
    (0.1, 1, 1),
    (0.1, 3, 1),
    (0.1, 7, 1),
    (0.1, 16, 1),
    (0.1, 100, 1),
    (0.1, 1000, 2),
    (0.1, 2000, 3),
    (0.1, 4096, 5),
    (0.1, 10000, 11),
    (0.1, 20000, 21),
    (0.1, 81127, 82),
    (0.1, 100000, 101),
    (0.1, 1000000, 1001),
    (0.1, 12345678901, 12345679),
    (33.3, 1, 1),
    (33.3, 3, 1),
    (33.3, 7, 3),
    (33.3, 16, 6),
    (33.3, 100, 34),
    (33.3, 1000, 333),
    (33.3, 2000, 666),
    (33.3, 4096, 1364),
    (33.3, 10000, 3330),
    (33.3, 20000, 6660),
    (33.3, 81127, 27016),
    (33.3, 100000, 33300),
    (33.3, 1000000, 333000),
    (33.3, 12345678901, 4111111075),
    (12.5, 1, 1),
    (12.5, 3, 1),
    (12.5, 7, 1),
    (12.5, 16, 2),
    (12.5, 100, 13),
    (12.5, 1000, 125),
    (12.5, 2000, 250),
    (12.5, 4096, 512),
    (12.5, 10000, 1250),
    (12.5, 20000, 2500),
    (12.5, 81127, 10141),
    (12.5, 100000, 12500),
    (12.5, 1000000, 125000),
    (12.5, 12345678901, 1543209863),
    (66.67, 1, 1),
    (66.67, 3, 3),
    (66.67, 7, 5),
    (66.67, 16, 11),
    (66.67, 100, 67),
    (66.67, 1000, 667),
    (66.67, 2000, 1334),
    (66.67, 4096, 2731),
    (66.67, 10000, 6668),
    (66.67, 20000, 13335),
    (66.67, 81127, 54088),
    (66.67, 100000, 66671),
    (66.67, 1000000, 666701),
    (66.67, 12345678901, 8230864124),
];

#[test]
fn thresholds_match_gcc_long_double() {
    for &(p, n, rank) in GCC_LONG_DOUBLE_RANKS {
        assert!(x87_threshold_reached(rank, p, n), "p={p} n={n} rank={rank}");
        if rank > 0 {
            assert!(!x87_threshold_reached(rank - 1, p, n), "p={p} n={n} rank-1");
        }
    }
}

/// Exact rank for p = k / 100: ceil(k * n / 10000), and whether k * n / 10000
/// is an integer (where fio's long double rounding may add one).
fn exact_rank(k: u64, n: u64) -> (u64, bool) {
    let num = k * n;
    (num.div_ceil(10000), num % 10000 == 0)
}

#[test]
fn percentiles_match_brute_force_sort() {
    let mut rng = Rng::stream(Seed(2026), "fio/percentiles");
    for case in 0..300 {
        let n = 1 + rng.below(if case % 10 == 0 { 20 } else { 3000 });
        let spread = 1 + rng.below(36) as u32;
        let mut h = LatencyHist::new();
        let mut samples = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let v = rng.below(1u64 << spread) + rng.below(50);
            h.record(v);
            samples.push(v);
        }
        samples.sort_unstable();
        // Default list plus a few random two-decimal percentiles.
        let mut ks: Vec<u64> = vec![
            100, 500, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 9500, 9900, 9950, 9990,
            9995, 9999,
        ];
        for _ in 0..3 {
            ks.push(1 + rng.below(10000));
        }
        ks.sort_unstable();
        ks.dedup();
        let plist: Vec<f64> = ks.iter().map(|&k| k as f64 / 100.0).collect();
        let got = h.percentiles(&plist);
        assert_eq!(got.len(), ks.len());
        for (&k, &(p, v)) in ks.iter().zip(got.iter()) {
            assert_eq!(p, k as f64 / 100.0);
            let (r, exact) = exact_rank(k, n);
            let r = r.max(1);
            let bucket = |i: u64| plat_idx_to_val(plat_val_to_idx(samples[(i - 1) as usize]));
            if exact && r < n {
                assert!(v == bucket(r) || v == bucket(r + 1), "n={n} p={p}: {v}");
            } else {
                assert_eq!(v, bucket(r), "n={n} p={p}");
            }
        }
        // Exact statistics.
        let st = &h.stat;
        assert_eq!(st.samples, n);
        assert_eq!(st.min_val, samples[0]);
        assert_eq!(st.max_val, *samples.last().unwrap());
        let mean = samples.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        assert!(
            (st.mean - mean).abs() <= 1e-9 * mean.max(1.0),
            "mean {} vs {mean}",
            st.mean
        );
        if n > 1 {
            let var = samples
                .iter()
                .map(|&v| (v as f64 - mean).powi(2))
                .sum::<f64>()
                / (n as f64 - 1.0);
            let sd = var.sqrt();
            assert!(
                (h.stddev() - sd).abs() <= 1e-6 * sd.max(1.0),
                "sd {} vs {sd}",
                h.stddev()
            );
        } else {
            assert_eq!(h.stddev(), 0.0);
        }
    }
}

#[test]
fn percentile_list_is_sorted_and_cut_at_zero() {
    let mut h = LatencyHist::new();
    for v in 1..=100u64 {
        h.record(v * 1000);
    }
    let got = h.percentiles(&[90.0, 10.0, 50.0, 0.0, 99.0]);
    let ps: Vec<f64> = got.iter().map(|x| x.0).collect();
    assert_eq!(ps, vec![10.0, 50.0, 90.0]);
    assert!(h.percentiles(&[]).is_empty());
    assert!(LatencyHist::new()
        .percentiles(&DEFAULT_PERCENTILES)
        .is_empty());
    // fio's p=30 of 100 samples takes the 31st (long double rounding).
    let bins: Vec<u64> = (0..FIO_IO_U_PLAT_NR)
        .map(|i| u64::from((1..=100).contains(&i)))
        .collect();
    assert_eq!(calc_clat_percentiles(&bins, 100, &[30.0]), vec![(30.0, 31)]);
    assert_eq!(calc_clat_percentiles(&bins, 100, &[20.0]), vec![(20.0, 20)]);
}

#[test]
fn welford_and_parallel_merge() {
    let mut a = LatencyHist::new();
    let mut b = LatencyHist::new();
    let mut all = LatencyHist::new();
    let mut rng = Rng::stream(Seed(3), "fio/merge");
    for i in 0..5000 {
        let v = rng.below(1_000_000);
        if i % 3 == 0 {
            a.record(v)
        } else {
            b.record(v)
        }
        all.record(v);
    }
    let mut m = a.clone();
    m.merge(&b);
    assert_eq!(m.stat.samples, all.stat.samples);
    assert_eq!(m.stat.min_val, all.stat.min_val);
    assert_eq!(m.stat.max_val, all.stat.max_val);
    assert!((m.mean() - all.mean()).abs() < 1e-6);
    assert!((m.stddev() - all.stddev()).abs() < 1e-6);
    for i in 0..FIO_IO_U_PLAT_NR {
        assert_eq!(m.bin(i), all.bin(i));
    }
    assert_eq!(
        m.percentiles(&DEFAULT_PERCENTILES),
        all.percentiles(&DEFAULT_PERCENTILES)
    );
}

#[test]
fn io_stat_pure_sum_adds_fields() {
    let mut a = IoStat::new();
    for v in [10, 20, 30] {
        a.add_sample(v);
    }
    let mut b = IoStat::new();
    for v in [100, 300] {
        b.add_sample(v);
    }
    let mut s = IoStat::new();
    s.sum(&a, true);
    s.sum(&b, true);
    assert_eq!((s.min_val, s.max_val, s.samples), (110, 330, 5));
    assert_eq!(s.mean, 220.0);
    assert_eq!(IoStat::new().calc(), None);
    let mut one = IoStat::new();
    one.add_sample(7);
    assert_eq!(one.calc(), Some((7, 7, 7.0, 0.0)));
}
