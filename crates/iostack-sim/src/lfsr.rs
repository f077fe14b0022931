//! fio's `random_generator=lfsr` (fio's `lib/lfsr.c`): a maximal-length
//! linear feedback shift register over the blocks of a file, each block
//! returned once per cycle, so that random I/O needs no random map.
//!
//! The state advances as fio's `__LFSR_NEXT` does (shift right, the top bit
//! set, the tap mask xored in when the low bit was 0: the all-ones state is
//! the one the register never reaches); values past the last block are
//! skipped. The register is the smallest of fio's tap table longer than the
//! block count (`find_lfsr`). fio's `prepare_spin` with spin 0 leaves a
//! cycle length of 1, so the very first `lfsr_next` advances twice; a reset
//! (`lfsr_reset`, at each new pass) does not restore that.

/// fio's tap positions for an n-bit register (`lfsr_taps`, n = 3..=63).
const TAPS: [&[u8]; 64] = [
    &[],
    &[],
    &[],
    &[3, 2],
    &[4, 3],
    &[5, 3],
    &[6, 5],
    &[7, 6],
    &[8, 6, 5, 4],
    &[9, 5],
    &[10, 7],
    &[11, 9],
    &[12, 6, 4, 1],
    &[13, 4, 3, 1],
    &[14, 5, 3, 1],
    &[15, 14],
    &[16, 15, 13, 4],
    &[17, 14],
    &[18, 11],
    &[19, 6, 2, 1],
    &[20, 17],
    &[21, 19],
    &[22, 21],
    &[23, 18],
    &[24, 23, 22, 17],
    &[25, 22],
    &[26, 6, 2, 1],
    &[27, 5, 2, 1],
    &[28, 25],
    &[29, 27],
    &[30, 6, 4, 1],
    &[31, 28],
    &[32, 31, 29, 1],
    &[33, 20],
    &[34, 27, 2, 1],
    &[35, 33],
    &[36, 25],
    &[37, 5, 4, 3, 2, 1],
    &[38, 6, 5, 1],
    &[39, 35],
    &[40, 38, 21, 19],
    &[41, 38],
    &[42, 41, 20, 19],
    &[43, 42, 38, 37],
    &[44, 43, 18, 17],
    &[45, 44, 42, 41],
    &[46, 45, 26, 25],
    &[47, 42],
    &[48, 47, 21, 20],
    &[49, 40],
    &[50, 49, 24, 23],
    &[51, 50, 36, 35],
    &[52, 49],
    &[53, 52, 38, 37],
    &[54, 53, 18, 17],
    &[55, 31],
    &[56, 55, 35, 34],
    &[57, 50],
    &[58, 39],
    &[59, 58, 38, 37],
    &[60, 59],
    &[61, 60, 46, 45],
    &[62, 61, 6, 5],
    &[63, 62],
];

/// fio's `struct fio_lfsr` with spin 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Lfsr {
    xormask: u64,
    last_val: u64,
    cached_bit: u64,
    max_val: u64,
    num_vals: u64,
    /// `cycle_length`: 1 until the first value (a double step), then 0.
    first: bool,
    seed: u64,
}

impl Lfsr {
    /// fio's `lfsr_init(fl, blocks, seed, 0)`. None where fio fails ("failed
    /// initializing LFSR"): no register as long as `blocks` needs (2^63 or
    /// more), or the seed's low bits are the all-ones state.
    pub(crate) fn new(blocks: u64, seed: u64) -> Option<Lfsr> {
        let bits = (3..64).find(|&i| (1u64 << i) > blocks)?;
        let taps = TAPS[bits];
        let xormask = taps.iter().fold(0u64, |m, &t| m | 1 << (t - 1));
        let mut l = Lfsr {
            xormask,
            last_val: 0,
            cached_bit: 1 << (taps[0] - 1),
            max_val: blocks.checked_sub(1)?,
            num_vals: 0,
            first: true,
            seed,
        };
        l.reset().then_some(l)
    }

    /// The register as `lfsr_init` leaves it, for another file of the job.
    pub(crate) fn fresh(&self) -> Lfsr {
        let mut l = Lfsr {
            first: true,
            ..self.clone()
        };
        l.reset();
        l
    }

    /// fio's `lfsr_reset` with the job's seed (a new pass, `fio_file_reset`):
    /// false on the forbidden all-ones state.
    pub(crate) fn reset(&mut self) -> bool {
        let mask = (self.cached_bit << 1) - 1;
        self.num_vals = 0;
        self.last_val = self.seed & mask;
        self.last_val != mask
    }

    /// fio's `__LFSR_NEXT`.
    fn step(&mut self) {
        let v = self.last_val;
        self.last_val = ((v >> 1) | self.cached_bit) ^ ((v & 1).wrapping_sub(1) & self.xormask);
    }

    /// fio's `lfsr_next`: the next block, None once every block of the
    /// pass has been returned.
    pub(crate) fn next(&mut self) -> Option<u64> {
        if self.num_vals > self.max_val {
            return None;
        }
        self.num_vals += 1;
        loop {
            if std::mem::take(&mut self.first) {
                self.step();
            }
            self.step();
            if self.last_val <= self.max_val {
                return Some(self.last_val);
            }
        }
    }
}

/// fio's `FIO_RANDSEED` (init.c).
const FIO_RANDSEED: u64 = 0xb189_9bed;
/// fio's seed multiplier (`setup_random_seeds`).
const SEED_MUL: u64 = 0x9e37_0001;
/// fio's `FIO_RAND_BLOCK_OFF`: the block-offset seed's index.
const BLOCK_OFF: u64 = 6;

/// The block-offset seed (`td->rand_seeds[FIO_RAND_BLOCK_OFF]`) of fio's job
/// number `thread_number` (1 for the first job clone of the file): with
/// `randrepeat` set, `FIO_RANDSEED * thread_number` (fio 3.33's
/// `td_fill_rand_seeds_internal` sets it so whatever `randseed` is, as
/// `fixup_options` clears `rand_repeatable` for `randseed` only after the
/// seeds are made); with `randrepeat=0` and `randseed=N`,
/// `setup_random_seeds`' `seed * thread_number + 6` from N.
pub(crate) fn block_seed(thread_number: u64, randrepeat: bool, randseed: u64) -> u64 {
    if randrepeat {
        return FIO_RANDSEED.wrapping_mul(thread_number);
    }
    let mut seed = randseed;
    for _ in 0..4 {
        seed = seed.wrapping_mul(SEED_MUL);
    }
    for _ in 0..BLOCK_OFF {
        seed = seed.wrapping_mul(SEED_MUL);
    }
    seed.wrapping_mul(thread_number).wrapping_add(BLOCK_OFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first offsets real fio 3.33 logs (`--write_iolog`) for
    /// `rw=randread bs=4k size=1m random_generator=lfsr` on a 1 MiB file,
    /// as job 1 and job 2 of a job file, and for job 1 with `randrepeat=0
    /// randseed=12345`.
    #[test]
    fn offsets_are_real_fios() {
        let cases: [(u64, &[u64]); 4] = [
            (
                block_seed(1, true, 0),
                &[962560, 839680, 667648, 802816, 466944],
            ),
            (
                block_seed(2, true, 0),
                &[716800, 937984, 692224, 761856, 315392],
            ),
            // randseed does not move it while randrepeat is set.
            (
                block_seed(1, true, 12345),
                &[962560, 839680, 667648, 802816],
            ),
            (
                block_seed(1, false, 12345),
                &[966656, 417792, 143360, 868352, 499712],
            ),
        ];
        for (seed, want) in cases {
            let mut l = Lfsr::new(256, seed).unwrap();
            let got: Vec<u64> = (0..want.len()).map(|_| l.next().unwrap() * 4096).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn each_block_once_per_pass_then_the_same_pass_again() {
        for blocks in [1u64, 2, 7, 8, 100, 256, 1000] {
            let mut l = Lfsr::new(blocks, block_seed(1, true, 0)).unwrap();
            let mut seen: Vec<u64> = std::iter::from_fn(|| l.next()).collect();
            assert_eq!(seen.len() as u64, blocks);
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len() as u64, blocks, "{blocks} blocks");
            assert!(l.reset());
            assert_eq!(std::iter::from_fn(|| l.next()).count() as u64, blocks);
        }
    }

    #[test]
    fn no_register_for_zero_blocks_or_the_all_ones_seed() {
        assert!(Lfsr::new(0, 1).is_none());
        assert!(Lfsr::new(256, 511).is_none());
        assert!(Lfsr::new(u64::MAX, 1).is_none());
    }
}
