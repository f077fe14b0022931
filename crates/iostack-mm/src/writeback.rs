//! Dirty-memory accounting and limits (`mm/page-writeback.c`): the thresholds of
//! `get_dirty_limits` / `global_dirty_limits`, the ratelimit of
//! `balance_dirty_pages_ratelimited_nr`, and the writeback chunk sizes. The
//! writeback actors themselves (flusher, pdflush, throttled dirtiers) are driven by
//! the simulation's event loop; this module keeps the arithmetic they share.

/// `MAX_WRITEBACK_PAGES` (`fs/fs-writeback.c`, `mm/page-writeback.c`): pages per
/// inode per background or kupdate round, 4 MiB.
pub const MAX_WRITEBACK_PAGES: u64 = 1024;
/// `PAGEVEC_SIZE`: dirty pages per `pagevec_lookup_tag` batch.
pub const PAGEVEC_SIZE: u64 = 14;

/// The dirty thresholds, in pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyLimits {
    pub background: u64,
    pub dirty: u64,
}

/// Dirty tunables as the sysctls give them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyConfig {
    pub dirty_ratio: u64,
    pub dirty_background_ratio: u64,
    /// `vm.dirty_bytes` / `vm.dirty_background_bytes` (0 = use the ratio).
    pub dirty_bytes: u64,
    pub dirty_background_bytes: u64,
}

/// `get_dirty_limits` (2.6.28) / `global_dirty_limits` (2.6.32+) for a machine with
/// `dirtyable` pages (`determine_dirtyable_memory`: free + reclaimable).
pub fn dirty_limits(c: DirtyConfig, dirtyable: u64, min_ratio_5: bool) -> DirtyLimits {
    let page = crate::PAGE_SIZE;
    let mut ratio = c.dirty_ratio;
    if min_ratio_5 && ratio < 5 {
        // 2.6.28: `if (dirty_ratio < 5) dirty_ratio = 5;`
        ratio = 5;
    }
    let dirty = if c.dirty_bytes > 0 {
        c.dirty_bytes.div_ceil(page)
    } else {
        ratio * dirtyable / 100
    };
    let mut background = if c.dirty_background_bytes > 0 {
        c.dirty_background_bytes.div_ceil(page)
    } else {
        c.dirty_background_ratio * dirtyable / 100
    };
    if background >= dirty {
        background = dirty / 2;
    }
    DirtyLimits { background, dirty }
}

/// `writeback_set_ratelimit`: `total_pages / (ncpus * 32)`, clamped to
/// [16, 4 MiB of pages] ("the dirtier will write six megabyte chunks, max").
pub fn ratelimit_pages(total_pages: u64, ncpus: u64) -> u64 {
    (total_pages / (ncpus.max(1) * 32)).clamp(16, (4 << 20) / crate::PAGE_SIZE)
}

/// `sync_writeback_pages`: the throttled dirtier's write chunk, 1.5x the ratelimit
/// (2.6.28), or 1.5x max(pages just dirtied, ratelimit) (2.6.32-2.6.37).
pub fn write_chunk(ratelimit: u64, dirtied: u64, v2632: bool) -> u64 {
    let base = if v2632 {
        dirtied.max(ratelimit)
    } else {
        ratelimit
    };
    base + base / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_follow_the_ratios_and_the_byte_overrides() {
        let c = DirtyConfig {
            dirty_ratio: 10,
            dirty_background_ratio: 5,
            dirty_bytes: 0,
            dirty_background_bytes: 0,
        };
        let l = dirty_limits(c, 1_000_000, true);
        assert_eq!(
            l,
            DirtyLimits {
                background: 50_000,
                dirty: 100_000
            }
        );
        let c2 = DirtyConfig {
            dirty_background_ratio: 20,
            ..c
        };
        assert_eq!(dirty_limits(c2, 1_000_000, true).background, 50_000);
        let c3 = DirtyConfig {
            dirty_bytes: 40 << 20,
            ..c
        };
        assert_eq!(dirty_limits(c3, 1_000_000, true).dirty, 10_240);
        let c4 = DirtyConfig {
            dirty_ratio: 1,
            ..c
        };
        assert_eq!(dirty_limits(c4, 1_000_000, true).dirty, 50_000);
        assert_eq!(dirty_limits(c4, 1_000_000, false).dirty, 10_000);
    }

    #[test]
    fn ratelimit_is_clamped() {
        assert_eq!(ratelimit_pages(1000, 4), 16);
        assert_eq!(ratelimit_pages(1 << 20, 4), 1024);
        assert_eq!(ratelimit_pages(512 << 10 >> 2, 2), 1024);
        assert_eq!(write_chunk(1024, 10, false), 1536);
        assert_eq!(write_chunk(16, 256, true), 384);
    }
}
