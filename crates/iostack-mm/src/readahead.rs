//! On-demand readahead, as `mm/readahead.c` has it from 2.6.23 to 2.6.37 (and, in
//! the same shape, in modern kernels): the per-file `file_ra_state` window, the
//! initial and ramp-up sizes, the asynchronous `PG_readahead` marker one window
//! ahead, interleaved-stream recovery from the cached pages, context readahead,
//! and small random reads that leave the state alone.

use crate::mapping::AddressSpace;

/// `struct file_ra_state`, in pages (`prev_pos` in bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileRaState {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    /// `ra_pages`: the maximum window (`read_ahead_kb` / 4).
    pub ra_pages: u64,
    /// Byte position of the previous read's last byte (`prev_pos`), or `None`
    /// before the first read (the kernel's `-1`).
    pub prev_pos: Option<u64>,
}

/// One readahead decision: read `[start, start + size)` and mark page
/// `start + size - async_size` with `PG_readahead`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaWindow {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
}

impl FileRaState {
    /// `file_ra_state_init`.
    pub fn new(ra_pages: u64) -> Self {
        FileRaState {
            ra_pages,
            ..Default::default()
        }
    }
}

/// `get_init_ra_size`: round the request to a power of two, then 4x it while small,
/// 2x while medium, else the maximum.
pub fn get_init_ra_size(size: u64, max: u64) -> u64 {
    let newsize = size.max(1).next_power_of_two();
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// `get_next_ra_size`: 4x below max/16, else 2x, capped at max.
pub fn get_next_ra_size(cur: u64, max: u64) -> u64 {
    let newsize = if cur < max / 16 { 4 * cur } else { 2 * cur };
    newsize.min(max)
}

/// `ondemand_readahead` (2.6.32 `mm/readahead.c`). `offset` is the page the reader
/// needs, `req_size` the pages left in its `read()`. Returns the window to submit
/// (the caller runs `__do_page_cache_readahead` over it), or the pages of a lone
/// random read as a window with `async_size` 0 that leaves `ra` untouched.
pub fn ondemand_readahead(
    ra: &mut FileRaState,
    mapping: &AddressSpace,
    hit_readahead_marker: bool,
    offset: u64,
    req_size: u64,
) -> Option<RaWindow> {
    let max = ra.ra_pages;
    if max == 0 {
        return None;
    }
    let initial = |ra: &mut FileRaState| {
        ra.start = offset;
        ra.size = get_init_ra_size(req_size, max);
        ra.async_size = if ra.size > req_size {
            ra.size - req_size
        } else {
            ra.size
        };
    };
    'readit: {
        // Start of file.
        if offset == 0 {
            initial(ra);
            break 'readit;
        }
        // The expected callback offset: assume sequential, ramp up and push the
        // window forward.
        if offset == ra.start + ra.size - ra.async_size || offset == ra.start + ra.size {
            ra.start += ra.size;
            ra.size = get_next_ra_size(ra.size, max);
            ra.async_size = ra.size;
            break 'readit;
        }
        // A marked page without valid state (interleaved reads): the cached run
        // ahead of the reader is the old async size; ramp it up.
        if hit_readahead_marker {
            let start = mapping.present.next_clear(offset + 1, offset + 1 + max)?;
            if start - offset > max {
                return None;
            }
            ra.start = start;
            ra.size = get_next_ra_size(start - offset + req_size, max);
            ra.async_size = ra.size;
            break 'readit;
        }
        // Oversize read.
        if req_size > max {
            initial(ra);
            break 'readit;
        }
        // Sequential cache miss.
        let prev = ra.prev_pos.map(|p| p / crate::PAGE_SIZE);
        if let Some(prev) = prev {
            if offset.wrapping_sub(prev) <= 1 {
                initial(ra);
                break 'readit;
            }
        }
        // Context readahead (`try_context_readahead`, 2.6.31+): the cached history
        // right behind the reader says it is a sequential stream.
        let history = count_history_pages(mapping, offset, max);
        if history > 0 {
            let size = if history >= offset {
                history * 2
            } else {
                history
            };
            ra.start = offset;
            ra.size = get_init_ra_size(size + req_size, max);
            ra.async_size = ra.size;
            break 'readit;
        }
        // A standalone small random read: read as is, state untouched.
        return Some(RaWindow {
            start: offset,
            size: req_size,
            async_size: 0,
        });
    }
    // Will this read hit the marker it is about to set? Then merge the next window
    // into this one at once.
    if offset == ra.start && ra.size == ra.async_size {
        ra.async_size = get_next_ra_size(ra.size, max);
        ra.size += ra.async_size;
    }
    Some(RaWindow {
        start: ra.start,
        size: ra.size,
        async_size: ra.async_size,
    })
}

/// `count_history_pages`: cached pages immediately before `offset`, at most `max`.
fn count_history_pages(mapping: &AddressSpace, offset: u64, max: u64) -> u64 {
    let lo = offset.saturating_sub(max);
    let mut n = 0;
    let mut i = offset;
    while i > lo && mapping.present.get(i - 1) {
        n += 1;
        i -= 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked trace of the reference (4 KiB reads from offset 0, 128 KiB max):
    /// windows 4, 8, 16, 32 pages, each issued when the reader reaches the
    /// previous window's marker.
    #[test]
    fn sequential_reader_ramps_through_the_kernel_windows() {
        let mut m = AddressSpace::new(1, 1 << 20);
        let mut ra = FileRaState::new(32);
        let mut issued = Vec::new();
        for page in 0..200u64 {
            let w = if !m.present.get(page) {
                ondemand_readahead(&mut ra, &m, false, page, 1)
            } else if m.ra_marker.get(page) {
                m.ra_marker.clear(page);
                ondemand_readahead(&mut ra, &m, true, page, 1)
            } else {
                None
            };
            if let Some(w) = w {
                let new = m.alloc_readahead(w, u64::MAX);
                let marker = w.start + w.size - w.async_size;
                issued.push((page, w.start, w.size, marker));
                for r in new {
                    m.uptodate.set_range(r.0, r.1);
                }
            }
            ra.prev_pos = Some(page * crate::PAGE_SIZE);
        }
        assert_eq!(
            &issued[..5],
            &[
                (0, 0, 4, 1),
                (1, 4, 8, 4),
                (4, 12, 16, 12),
                (12, 28, 32, 28),
                (28, 60, 32, 60)
            ]
        );
        // Steady state: one 32-page window per 32 pages, issued one window ahead.
        for w in issued[4..].windows(2) {
            assert_eq!(w[1].0 - w[0].0, 32);
            assert_eq!(w[1].1 - w[1].0, 32);
        }
    }

    #[test]
    fn random_reads_do_not_disturb_the_state() {
        let m = AddressSpace::new(1, 1 << 20);
        let mut ra = FileRaState::new(32);
        ra.prev_pos = Some(5000 * crate::PAGE_SIZE);
        let w = ondemand_readahead(&mut ra, &m, false, 77, 1).unwrap();
        assert_eq!((w.start, w.size, w.async_size), (77, 1, 0));
        assert_eq!((ra.start, ra.size), (0, 0));
    }

    #[test]
    fn oversize_read_gets_the_full_window_merged_with_the_next() {
        let m = AddressSpace::new(1, 1 << 20);
        let mut ra = FileRaState::new(32);
        // A 1 MiB read at page 1000, not sequential with anything.
        let w = ondemand_readahead(&mut ra, &m, false, 1000, 256).unwrap();
        assert_eq!((w.start, w.size), (1000, 64));
    }

    #[test]
    fn init_and_next_sizes() {
        assert_eq!(get_init_ra_size(1, 32), 4);
        assert_eq!(get_init_ra_size(4, 32), 8);
        assert_eq!(get_init_ra_size(16, 32), 32);
        assert_eq!(get_next_ra_size(4, 32), 8);
        assert_eq!(get_next_ra_size(1, 32), 4);
        assert_eq!(get_next_ra_size(16, 32), 32);
    }
}
