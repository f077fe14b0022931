//! fio's skewed random distributions (`random_distribution=zipf:θ`,
//! `pareto:h`, `normal:σ`; fio 3.33 `lib/zipf.c`, `lib/gauss.c`, set up per
//! file by filesetup.c `__init_rand_distribution`) in fixed point
//! ([`crate::fixed`]): the same formulas, with integer arithmetic where fio
//! uses `double`. Each draw takes fio's 32-bit random values from the
//! process's stream; the result is a block in `0..nranges`, scrambled by
//! fio's `__hash_u64` and rotated by `rand_off`.

use crate::fixed::{self, ONE};
use iostack_des::Rng;

/// The distribution a job asks for, its parameters in Q32.32 (converted from
/// the job file's decimals once, exactly; see [`fixed::from_f64`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    /// `zipf:θ[:center]`.
    Zipf { theta: i128, center: Option<i128> },
    /// `pareto:h[:center]`.
    Pareto { h: i128, center: Option<i128> },
    /// `normal:σ[:center]` (σ in percent of the range).
    Normal { dev: i128, center: Option<i128> },
}

/// fio's `GOLDEN_RATIO_64` (hash.h), the multiplier of `__hash_u64`.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
/// fio's `ZIPF_MAX_GEN`: zetan sums at most this many terms.
const ZIPF_MAX_GEN: u64 = 10_000_000;
/// Terms of zetan summed one by one; the rest by Euler–Maclaurin.
const ZETA_EXACT: u64 = 1024;
/// fio's `GAUSS_ITERS`.
const GAUSS_ITERS: u64 = 12;

/// A distribution set up for a file of `nranges` blocks.
#[derive(Clone, Debug)]
pub enum DistState {
    Zipf {
        n: u64,
        theta: i128,
        zetan: i128,
        /// 0.5^θ
        half_pow: i128,
        eta: i128,
        alpha: i128,
        rand_off: u64,
    },
    Pareto {
        n: u64,
        pow: i128,
        rand_off: u64,
    },
    Gauss {
        n: u64,
        stddev: u64,
        rand_off: u64,
    },
}

/// fio's `__rand`: a 32-bit value.
fn rand32(rng: &mut Rng) -> u64 {
    rng.next_u64() >> 32
}

/// `rand_uni = __rand() / FRAND32_MAX` in Q32.32, in [0, 1].
fn uniform(rng: &mut Rng) -> i128 {
    ((rand32(rng) as i128) << 32) / i128::from(u32::MAX)
}

/// fio's `shared_rand_init`: `rand_off` is a first draw, or `nranges * center`.
fn rand_off(n: u64, center: Option<i128>, rng: &mut Rng) -> u64 {
    let r = rand32(rng);
    match center {
        Some(c) => ((i128::from(n) * c) >> 32) as u64,
        None => r,
    }
}

/// Σ_{i=1..N} i^-θ (fio's `zipf_update`, N capped at `ZIPF_MAX_GEN`): the
/// first terms one by one, the tail by Euler–Maclaurin (integral, end-point
/// and first-derivative terms; the next term is below 2^-40 from 1024 on).
fn zetan(n: u64, theta: i128) -> i128 {
    let big_n = n.min(ZIPF_MAX_GEN);
    let exact = big_n.min(ZETA_EXACT);
    let f = |i: u64, e: i128| fixed::pow(fixed::int(i), e) as i128;
    let mut z: i128 = (1..=exact).map(|i| f(i, -theta)).sum();
    if big_n > exact {
        let a = exact + 1;
        let one_minus = ONE - theta;
        let integral = ((f(big_n, one_minus) - f(a, one_minus)) << 32) / one_minus;
        let ends = (f(a, -theta) + f(big_n, -theta)) / 2;
        let d = f(a, -theta - ONE) - f(big_n, -theta - ONE);
        let slope = ((theta * d) >> 32) / 12;
        z += integral + ends + slope;
    }
    z
}

impl DistState {
    /// fio's `zipf_init` / `pareto_init` / `gauss_init` for `nranges` blocks.
    pub fn new(d: &Dist, nranges: u64, rng: &mut Rng) -> DistState {
        let n = nranges.max(1);
        match *d {
            Dist::Zipf { theta, center } => {
                let rand_off = rand_off(n, center, rng);
                let zetan = zetan(n, theta);
                let half_pow = fixed::exp2(-theta) as i128;
                let zeta2 = ONE + half_pow;
                let one_minus = ONE - theta;
                // eta = (1 - (2/n)^(1-θ)) / (1 - zeta2/zetan)
                let log2_2n = ONE - fixed::log2(fixed::int(n));
                let t = fixed::exp2((one_minus * log2_2n) >> 32) as i128;
                let denom = ONE - (zeta2 << 32) / zetan;
                let eta = if denom == 0 {
                    0
                } else {
                    ((ONE - t) << 32) / denom
                };
                DistState::Zipf {
                    n,
                    theta,
                    zetan,
                    half_pow,
                    eta,
                    alpha: (ONE << 32) / one_minus,
                    rand_off,
                }
            }
            Dist::Pareto { h, center } => {
                let rand_off = rand_off(n, center, rng);
                // log(h) / log(1 - h), the same ratio in base 2.
                let pow = (fixed::log2(h as u128) << 32) / fixed::log2((ONE - h) as u128);
                DistState::Pareto { n, pow, rand_off }
            }
            Dist::Normal { dev, center } => {
                // stddev = ceil(nranges * dev / 100), at most nranges / 2.
                let hundred = 100i128 << 32;
                let sd = (i128::from(n) * dev + hundred - 1) / hundred;
                let stddev = (sd as u64).min(n / 2);
                let rand_off = match center {
                    // nranges * (center - 0.5), negative ones wrapping.
                    Some(c) => ((i128::from(n) * (c - ONE / 2)) >> 32) as u64,
                    None => 0,
                };
                DistState::Gauss {
                    n,
                    stddev,
                    rand_off,
                }
            }
        }
    }

    /// The next block (fio's `zipf_next`, `pareto_next`, `gauss_next`).
    pub fn next(&self, rng: &mut Rng) -> u64 {
        match *self {
            DistState::Zipf { n, .. } => {
                let v = self.zipf_value(rng) - 1;
                v.wrapping_mul(GOLDEN_RATIO_64).wrapping_add(self.offset()) % n
            }
            DistState::Pareto { n, pow, rand_off } => {
                let u = uniform(rng) as u128;
                let v = ((u128::from(n - 1) * fixed::pow(u, pow)) >> 32) as u64;
                v.wrapping_mul(GOLDEN_RATIO_64).wrapping_add(rand_off) % n
            }
            DistState::Gauss { .. } => self.gauss_next(rng),
        }
    }

    fn offset(&self) -> u64 {
        match *self {
            DistState::Zipf { rand_off, .. }
            | DistState::Pareto { rand_off, .. }
            | DistState::Gauss { rand_off, .. } => rand_off,
        }
    }

    /// `zipf_next`'s `val` before the hash: 1, 2, or
    /// `1 + n * (eta * u - eta + 1)^alpha`.
    fn zipf_value(&self, rng: &mut Rng) -> u64 {
        let DistState::Zipf {
            n,
            zetan,
            half_pow,
            eta,
            alpha,
            ..
        } = *self
        else {
            unreachable!("zipf state")
        };
        let u = uniform(rng);
        let rand_z = (u * zetan) >> 32;
        if rand_z < ONE {
            return 1;
        }
        if rand_z < ONE + half_pow {
            return 2;
        }
        let x = ONE + ((eta * (u - ONE)) >> 32);
        if x <= 0 {
            return 1;
        }
        let p = fixed::pow(x as u128, alpha);
        1 + ((u128::from(n) * p) >> 32) as u64
    }

    /// `gauss_next`: the mean of 12 draws, moved by `gauss_dev`.
    fn gauss_next(&self, rng: &mut Rng) -> u64 {
        let DistState::Gauss {
            n,
            stddev,
            rand_off,
        } = *self
        else {
            unreachable!("gauss state")
        };
        let mut sum = 0u64;
        for _ in 0..GAUSS_ITERS {
            sum += rand32(rng) % (n + 1);
        }
        sum = sum.div_ceil(GAUSS_ITERS);
        if stddev > 0 {
            // vr = stddev * (r / (FRAND32_MAX + 1.0)), exact in integers.
            let vr = ((u128::from(stddev) * u128::from(rand32(rng))) >> 32) as i64;
            let mut dev = vr - (stddev / 2) as i64;
            while (dev as u64).wrapping_add(sum) >= n && dev != 0 {
                dev /= 2;
            }
            sum = (dev as u64).wrapping_add(sum);
        }
        sum.wrapping_mul(GOLDEN_RATIO_64).wrapping_add(rand_off) % n
    }
}
