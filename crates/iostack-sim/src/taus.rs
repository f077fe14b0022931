//! fio's `random_generator=tausworthe64` (`lib/rand.c`: L'Ecuyer's
//! maximally equidistributed combined Tausworthe generator `taus258`),
//! seeded as fio seeds a job's `random_state`, and fio's uniform block
//! choice from it (`__get_next_rand_offset`: `lastb * (r / (rand_max +
//! 1.0))` in `double`, here in integers that round as the `double`s do).

/// fio's `struct taus258_state`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Taus258 {
    s: [u64; 5],
}

/// `__seed`: a state word at least `m`.
fn at_least(x: u64, m: u64) -> u64 {
    if x < m {
        x + m
    } else {
        x
    }
}

impl Taus258 {
    /// fio's `__init_rand64`: the LCG from `(2^31) + (2^17) + (2^7)`,
    /// which C reads as xors (53), then six cranks.
    pub(crate) fn new(seed: u64) -> Taus258 {
        let lcg = |x: u64| x.wrapping_mul(6_906_969_069) ^ seed;
        let mins = [1, 7, 15, 33, 49];
        let mut s = [0u64; 5];
        let mut prev = 53u64;
        for (i, m) in mins.iter().enumerate() {
            s[i] = at_least(lcg(prev), *m);
            prev = s[i];
        }
        let mut t = Taus258 { s };
        for _ in 0..6 {
            t.next();
        }
        t
    }

    /// fio's `__rand64`.
    pub(crate) fn next(&mut self) -> u64 {
        const STEPS: [(u32, u32, u64, u32); 5] = [
            (1, 53, 18446744073709551614, 10),
            (24, 50, 18446744073709551104, 5),
            (3, 23, 18446744073709547520, 29),
            (5, 24, 18446744073709420544, 23),
            (3, 33, 18446744073701163008, 8),
        ];
        let mut x = 0;
        for (s, (a, b, c, d)) in self.s.iter_mut().zip(STEPS) {
            let xval = ((*s << a) ^ *s) >> b;
            *s = ((*s & c) << d) ^ xval;
            x ^= *s;
        }
        x
    }
}

/// `x` rounded to 53 significant bits, ties to even (a `double`'s mantissa).
fn round53(x: u128) -> u128 {
    let bits = 128 - x.leading_zeros();
    if bits <= 53 {
        return x;
    }
    let shift = bits - 53;
    let (mut q, rem, half) = (x >> shift, x & ((1 << shift) - 1), 1u128 << (shift - 1));
    if rem > half || (rem == half && q & 1 == 1) {
        q += 1;
    }
    q << shift
}

/// fio's `*b = lastb * (r / (rand_max + 1.0))` for a 64-bit draw `r`:
/// `(double) r` rounded, divided by 2^64 (exact), times `(double) lastb`,
/// the product rounded, then truncated.
pub(crate) fn fio_block(lastb: u64, r: u64) -> u64 {
    let a = round53(u128::from(lastb));
    let b = round53(u128::from(r));
    (round53(a * b) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocks real fio 3.33 reads (`--write_iolog`) for `rw=randread
    /// bs=4k size=1m random_generator=tausworthe64 norandommap`, job 1.
    #[test]
    fn blocks_are_real_fios() {
        let mut t = Taus258::new(crate::lfsr::block_seed(1, true, 0));
        let got: Vec<u64> = (0..10).map(|_| fio_block(256, t.next())).collect();
        assert_eq!(got, [240, 6, 20, 25, 135, 6, 112, 85, 217, 194]);
    }

    #[test]
    fn rounding_is_a_doubles() {
        assert_eq!(round53(1 << 60), 1 << 60);
        assert_eq!(round53((1 << 60) + 64), 1 << 60, "a tie to even");
        assert_eq!(round53((1 << 60) + 192), (1 << 60) + 256);
        assert_eq!(fio_block(256, u64::MAX), 256, "r rounds up to 2^64");
        assert_eq!(fio_block(256, 0), 0);
    }
}
