//! Seeded random streams. One seed per run; each consumer derives its own stream from
//! the seed and a stable name (for example `"job/randread.0/offset"`), so adding a
//! consumer never perturbs another's numbers. The API has no floating point.

/// The run's seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seed(pub u64);

/// 64-bit FNV-1a, used for stable name hashing and configuration hashes.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// xoshiro256** generator.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// The stream named `name` under `seed`.
    pub fn stream(seed: Seed, name: &str) -> Rng {
        let mut st = seed.0 ^ fnv1a64(name.as_bytes());
        let s = [
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
        ];
        Rng { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (Lemire's multiply-shift with rejection; no modulo bias).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        loop {
            let x = self.next_u64();
            let m = (x as u128) * (n as u128);
            let lo = m as u64;
            if lo >= n || lo >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }

    /// True with probability `num/den`.
    pub fn ratio(&mut self, num: u64, den: u64) -> bool {
        assert!(den > 0 && num <= den);
        self.below(den) < num
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_stable_and_independent() {
        let mut a = Rng::stream(Seed(1), "a");
        let mut a2 = Rng::stream(Seed(1), "a");
        let mut b = Rng::stream(Seed(1), "b");
        let xa: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let xa2: Vec<u64> = (0..4).map(|_| a2.next_u64()).collect();
        let xb: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        assert_eq!(xa, xa2);
        assert_ne!(xa, xb);
    }

    #[test]
    fn below_is_in_range_and_covers() {
        let mut r = Rng::stream(Seed(7), "t");
        let mut seen = [0u32; 6];
        for _ in 0..6000 {
            let v = r.below(6);
            seen[v as usize] += 1;
        }
        for c in seen {
            assert!((800..1200).contains(&c), "{seen:?}");
        }
    }
}
