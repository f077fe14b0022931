//! fio's `rate_process=poisson` (backend.c `usec_for_io`): the gap before
//! a direction's next I/O is `(1000000 / iops) * -logf(__rand_0_1(...))`
//! µs, drawn from the job's `poisson_state[ddir]`, fio's 32-bit Tausworthe
//! generator (`lib/rand.c` `taus88`) seeded with
//! `rand_seeds[FIO_RAND_POISSON_OFF]` (reads) or `[FIO_RAND_POISSON2_OFF]`
//! (writes). The logarithm is `fixed.rs`'s integer `log2` times ln 2 in
//! Q32.32, where fio's `logf` is single precision: a gap can differ from
//! real fio's by the truncation of the last microsecond.

use crate::fixed;

/// fio's `struct taus88_state`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Taus88 {
    s: [u32; 3],
}

/// `__seed`: a state word at least `m`.
fn at_least(x: u32, m: u32) -> u32 {
    if x < m {
        x + m
    } else {
        x
    }
}

impl Taus88 {
    /// fio's `__init_rand32`: the LCG `x * 69069 ^ seed` from
    /// `(2^31) + (2^17) + (2^7)`, which C reads as xors (53), then six
    /// cranks. `init_rand_seed` passes the 64-bit seed as `unsigned int`.
    pub(crate) fn new(seed: u64) -> Taus88 {
        let seed = seed as u32;
        let lcg = |x: u32| x.wrapping_mul(69069) ^ seed;
        let s1 = at_least(lcg(53), 1);
        let s2 = at_least(lcg(s1), 7);
        let s3 = at_least(lcg(s2), 15);
        let mut t = Taus88 { s: [s1, s2, s3] };
        for _ in 0..6 {
            t.next();
        }
        t
    }

    /// fio's `__rand32`.
    pub(crate) fn next(&mut self) -> u32 {
        const STEPS: [(u32, u32, u32, u32); 3] = [
            (13, 19, 4294967294, 12),
            (2, 25, 4294967288, 4),
            (3, 11, 4294967280, 17),
        ];
        let mut x = 0;
        for (s, (a, b, c, d)) in self.s.iter_mut().zip(STEPS) {
            *s = ((*s & c) << d) ^ (((*s << a) ^ *s) >> b);
            x ^= *s;
        }
        x
    }
}

/// ln 2 in Q32.32.
const LN2_Q32: i128 = 2_977_044_472;

/// fio's `rand_seeds[i]` when the seeds come from `randseed` (or its
/// default 0x89 under `randrepeat`): init.c `setup_random_seeds`, the seed
/// multiplied by 0x9e370001 four times, then once more per index, times
/// `thread_number`, plus `i`.
pub(crate) fn fio_rand_seed(randseed: u64, thread_number: u64, index: u64) -> u64 {
    const MUL: u64 = 0x9e37_0001;
    let mut seed = randseed;
    for _ in 0..4 + index {
        seed = seed.wrapping_mul(MUL);
    }
    seed.wrapping_mul(thread_number).wrapping_add(index)
}

/// fio's `FIO_RAND_POISSON_OFF` and `FIO_RAND_POISSON2_OFF` (fio.h's
/// enum: 15 and 17).
pub(crate) const POISSON_OFF: [u64; 2] = [15, 17];
/// fio's default `randseed` (options.c: `.def = "0x89"`).
pub(crate) const DEFAULT_RANDSEED: u64 = 0x89;

/// The next Poisson gap in µs at `iops` I/Os per second: `(int64_t)
/// (1000000 / iops) * -logf((r + 1.0) / 2^32)`, truncated as fio's
/// `uint64_t val` is.
pub(crate) fn gap_us(state: &mut Taus88, iops: u64) -> u64 {
    let r = u128::from(state.next()) + 1;
    // log2((r + 1) / 2^32) in Q32.32 is log2 of r + 1 read as Q32.32.
    let neg_log2 = -fixed::log2(r);
    let neg_ln = (neg_log2 * LN2_Q32) >> 32;
    let mean = i128::from(1_000_000 / iops.max(1));
    ((mean * neg_ln) >> 32) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio's arithmetic in `f32`/`f64` as C does it, to hold the integer
    /// version to.
    fn fio_gap(r: u32, iops: u64) -> u64 {
        let x = (f64::from(r) + 1.0) / 4_294_967_296.0;
        let l = -(x as f32).ln();
        ((1_000_000 / iops) as f32 * l) as u64
    }

    #[test]
    fn gaps_are_fios_within_a_microsecond() {
        let mut a = Taus88::new(fio_rand_seed(DEFAULT_RANDSEED, 1, POISSON_OFF[0]));
        let mut b = a;
        let mut sum = 0u64;
        for _ in 0..10_000 {
            let r = b.next();
            let want = fio_gap(r, 50);
            let got = gap_us(&mut a, 50);
            assert!(got.abs_diff(want) <= 1, "{got} vs fio's {want}");
            sum += got;
        }
        // An exponential of mean 20 ms: 10,000 gaps sum to 200 s within 3%.
        assert!(sum.abs_diff(200_000_000) < 6_000_000, "{sum}");
    }
}
