//! Fixed-point arithmetic for fio's skewed random distributions: Q32.32
//! numbers in `i128`/`u128`, with `log2`, `exp2` and `pow` built from integer
//! multiplications only (`log2` by repeated squaring of the mantissa, `exp2`
//! as a product of the roots 2^(2^-j), themselves integer square roots), so a
//! run draws the same offsets on every machine: no libm, no floating point.
//! Precision is about 2^-30 relative, far below the sampling noise of any
//! run.

use std::sync::OnceLock;

/// 1.0 in Q32.32.
pub const ONE: i128 = 1 << 32;

/// A parameter given as a decimal in the job file (parsed by fio's rules
/// into an `f64`) in Q32.32: the product by 2^32 is exact, the conversion
/// truncates toward zero; the same bits on every IEEE-754 machine.
pub fn from_f64(v: f64) -> i128 {
    (v * 4_294_967_296.0) as i128
}

/// ⌊√n⌋ by Newton's method from above.
fn isqrt(n: u128) -> u128 {
    if n < 2 {
        return n;
    }
    let bits = 128 - n.leading_zeros();
    let mut x = 1u128 << bits.div_ceil(2);
    loop {
        let y = (x + n / x) / 2;
        if y >= x {
            return x;
        }
        x = y;
    }
}

/// 2^(2^-(j+1)) in Q2.62, j = 0..32.
fn roots() -> &'static [u128; 32] {
    static ROOTS: OnceLock<[u128; 32]> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut r = [0u128; 32];
        r[0] = isqrt(2u128 << 124);
        for j in 1..32 {
            r[j] = isqrt(r[j - 1] << 62);
        }
        r
    })
}

/// log2 of a positive Q32.32 number, in Q32.32 (the fraction's 32 bits by
/// squaring the mantissa: each square ≥ 2 is a one bit).
pub fn log2(x: u128) -> i128 {
    assert!(x > 0, "log2 of 0");
    let n = 127 - x.leading_zeros() as i128;
    let mut m = if n >= 62 {
        x >> (n - 62)
    } else {
        x << (62 - n)
    };
    let mut frac = 0i128;
    for i in 1..=32 {
        m = (m * m) >> 62;
        if m >= 1 << 63 {
            m >>= 1;
            frac |= 1 << (32 - i);
        }
    }
    ((n - 32) << 32) + frac
}

/// 2^y of a Q32.32 exponent, in Q32.32 (saturating at 2^95, 0 below 2^-32).
pub fn exp2(y: i128) -> u128 {
    let k = y >> 32;
    let f = (y - (k << 32)) as u64;
    let roots = roots();
    let mut r: u128 = 1 << 62;
    for (j, root) in roots.iter().enumerate() {
        if f & (1 << (31 - j)) != 0 {
            r = (r * root) >> 62;
        }
    }
    let shift = k - 30;
    if shift >= 0 {
        if shift > 32 {
            return 1u128 << 95;
        }
        r << shift
    } else if shift <= -127 {
        0
    } else {
        r >> (-shift)
    }
}

/// x^a for x ≥ 0 and a in Q32.32 (0^a is 0).
pub fn pow(x: u128, a: i128) -> u128 {
    if x == 0 {
        return 0;
    }
    exp2((a * log2(x)) >> 32)
}

/// The integer `i` in Q32.32.
pub fn int(i: u64) -> u128 {
    u128::from(i) << 32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: u128, b: f64) -> bool {
        let a = a as f64 / 4_294_967_296.0;
        (a - b).abs() <= 1e-8 * b.abs().max(1.0)
    }

    #[test]
    fn log2_exp2_pow_against_known_values() {
        assert_eq!(log2(int(1)), 0);
        assert_eq!(log2(int(8)), 3 << 32);
        assert_eq!(exp2(5 << 32), int(32));
        assert!(close(exp2(ONE / 2), std::f64::consts::SQRT_2));
        assert!(close(exp2(-ONE / 2), std::f64::consts::FRAC_1_SQRT_2));
        let l3 = log2(int(3)) as f64 / 4_294_967_296.0;
        assert!((l3 - 3f64.log2()).abs() < 1e-9, "{l3}");
        // 10^-1.2 and 0.5^1.2
        assert!(close(pow(int(10), -from_f64(1.2)), 10f64.powf(-1.2)));
        assert!(close(pow(int(1) / 2, from_f64(1.2)), 0.5f64.powf(1.2)));
        assert!(close(pow(int(1_000_000), from_f64(0.3)), 1e6f64.powf(0.3)));
    }
}
