//! 2.4's read-ahead, as `mm/filemap.c` of 2.4.0-2.4.9 has it: the read-ahead
//! context in `struct file` (`f_raend`, `f_ramax`, `f_ralen`, `f_rawin`), the
//! prologue of `do_generic_file_read` that keeps or resets it and sizes
//! `f_ramax` from the request, and `generic_file_readahead`, called for each
//! page the reader reaches: synchronous read-ahead behind a page that had to
//! be read, asynchronous read-ahead (and `run_task_queue(&tq_disk)`) when the
//! reader enters the last read-ahead block. Page counts, not bytes.
//!
//! The maximum is `get_max_readahead(inode)`: `max_readahead[major][minor]`
//! of the file's device, `MAX_READAHEAD` when the driver sets none (IDE's
//! `init_gendisk` sets every minor to `MAX_READAHEAD`; LVM sets none).

/// `MAX_READAHEAD` of 2.4's `include/linux/blkdev.h`: 31 pages.
pub const MAX_READAHEAD_24: u64 = 31;
/// `MIN_READAHEAD` of 2.4's `include/linux/blkdev.h`: 3 pages.
pub const MIN_READAHEAD_24: u64 = 3;

/// The read-ahead fields of 2.4's `struct file`, in pages (`f_raend` is a page
/// index in 2.4.x, the first page after the last one read ahead).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileRa24 {
    pub raend: u64,
    pub ramax: u64,
    pub ralen: u64,
    pub rawin: u64,
    /// `reada_ok` of the `read()` in progress (set by its prologue).
    pub reada_ok: bool,
}

/// What `generic_file_readahead` decided: `page_cache_read` each page of
/// `[first, first + n)` (the ones already cached are skipped there), then,
/// when `unplug`, `run_task_queue(&tq_disk)` (asynchronous read-ahead).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ra24Read {
    pub first: u64,
    pub n: u64,
    pub unplug: bool,
}

impl FileRa24 {
    /// `do_generic_file_read`'s prologue for a `read()` of `count` bytes at
    /// page `index`, byte `offset` within it. `max` is `get_max_readahead`.
    pub fn read_start(&mut self, index: u64, offset: u64, count: u64, max: u64) {
        // Outside the previous read-ahead window: reset the context.
        if index > self.raend || index + self.rawin < self.raend {
            self.reada_ok = false;
            self.raend = 0;
            self.ralen = 0;
            self.ramax = 0;
            self.rawin = 0;
        } else {
            self.reada_ok = true;
        }
        let page = crate::PAGE_SIZE;
        if index == 0 && offset + count <= page / 2 {
            // A read within the first half page: no read-ahead.
            self.ramax = 0;
        } else {
            let needed = (offset + count) / page + 1;
            self.ramax = self.ramax.max(needed);
            if self.reada_ok && self.ramax < MIN_READAHEAD_24 {
                self.ramax = MIN_READAHEAD_24;
            }
            self.ramax = self.ramax.min(max);
        }
    }

    /// The first page of `[from, to)` at which `generic_file_readahead` on an
    /// up-to-date, unlocked page would read ahead (asynchronously), or `None`:
    /// between two such pages the context does not change, so the reader can
    /// copy the pages before it at once.
    pub fn async_trigger(&self, from: u64, to: u64) -> Option<u64> {
        if !self.reada_ok || self.ramax == 0 || self.raend < 1 {
            return None;
        }
        // index <= raend && index + ralen >= raend
        let lo = from.max(self.raend.saturating_sub(self.ralen));
        let hi = to.min(self.raend + 1);
        (lo < hi).then_some(lo)
    }

    /// `generic_file_readahead(reada_ok, filp, inode, page)` for page `index`,
    /// `locked` when the page is locked (being read), with `end_index` =
    /// `i_size >> PAGE_CACHE_SHIFT` and `max` = `get_max_readahead`.
    pub fn readahead(
        &mut self,
        index: u64,
        locked: bool,
        end_index: u64,
        max: u64,
    ) -> Option<Ra24Read> {
        let mut raend = self.raend;
        let mut max_ahead = 0;
        let mut async_ra = false;
        if locked {
            // The reader needs this page: unless it lies in the last read-ahead
            // I/O, start the context over at it and read ahead synchronously.
            if self.ralen == 0 || index >= raend || index + self.rawin < raend {
                raend = index;
                if raend < end_index {
                    max_ahead = self.ramax;
                }
                self.rawin = 0;
                self.ralen = 1;
                if max_ahead == 0 {
                    self.raend = index + self.ralen;
                    self.rawin += self.ralen;
                }
            }
        } else if self.reada_ok
            && self.ramax > 0
            && raend >= 1
            && index <= raend
            && index + self.ralen >= raend
        {
            // Inside the last read-ahead I/O: read the next block
            // asynchronously, one page more than ramax, from the page after
            // the last one tried.
            raend -= 1;
            if raend < end_index {
                max_ahead = self.ramax + 1;
            }
            if max_ahead > 0 {
                self.rawin = self.ralen;
                self.ralen = 0;
                async_ra = true;
            }
        }
        // page_cache_read of raend + 1 ..: stop at end_index.
        let mut ahead = 0;
        while ahead < max_ahead {
            ahead += 1;
            if raend + ahead >= end_index {
                break;
            }
        }
        if ahead == 0 {
            return None;
        }
        // The loop counts the page that hit end_index without reading it.
        let n = if raend + ahead >= end_index {
            ahead - 1
        } else {
            ahead
        };
        self.ralen += ahead;
        self.rawin += self.ralen;
        self.raend = raend + ahead + 1;
        self.ramax = (self.ramax * 2).min(max);
        Some(Ra24Read {
            first: raend + 1,
            n,
            unplug: async_ra,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bonnie's 1 MiB reads from page 0 of a large file: `needed` is 257 pages,
    /// so `f_ramax` is MAX_READAHEAD; the first page is read and 31 behind it
    /// synchronously; the page in flight triggers nothing; the first page found
    /// up to date inside the last read-ahead block reads the next 32 pages
    /// (ramax + 1) asynchronously, with tq_disk run.
    #[test]
    fn sequential_reader_reads_ahead_a_block_when_it_enters_the_last_one() {
        let mut ra = FileRa24::default();
        let end = 100_000;
        // The zeroed context of a new file takes page 0 as inside the window.
        ra.read_start(0, 0, 1 << 20, MAX_READAHEAD_24);
        assert!(ra.reada_ok);
        assert_eq!(ra.ramax, 31);
        // no_cached_page → readpage(0) → generic_file_readahead on the locked page.
        let r = ra.readahead(0, true, end, 31).unwrap();
        assert_eq!(
            r,
            Ra24Read {
                first: 1,
                n: 31,
                unplug: false
            }
        );
        assert_eq!((ra.raend, ra.ralen, ra.rawin), (32, 32, 32));
        // Page 1 still locked (in flight): inside the last read-ahead I/O.
        assert_eq!(ra.readahead(1, true, end, 31), None);
        // Page 2 up to date: asynchronous, pages 32..64.
        assert_eq!(ra.async_trigger(2, 256), Some(2));
        let r = ra.readahead(2, false, end, 31).unwrap();
        assert_eq!(
            r,
            Ra24Read {
                first: 32,
                n: 32,
                unplug: true
            }
        );
        assert_eq!((ra.raend, ra.ralen, ra.rawin), (64, 32, 64));
        // Next, when the reader reaches raend - ralen.
        assert_eq!(ra.async_trigger(3, 256), Some(32));
        // A read() outside the window resets the context.
        ra.read_start(1000, 0, 1 << 20, 31);
        assert!(!ra.reada_ok);
        assert_eq!((ra.raend, ra.ralen, ra.rawin, ra.ramax), (0, 0, 0, 31));
    }

    /// Small reads ramp f_ramax from `needed` (at least MIN_READAHEAD) by
    /// doubling; the asynchronous read-ahead moves the window by ralen.
    #[test]
    fn small_reads_ramp_the_window_from_min_readahead() {
        let mut ra = FileRa24::default();
        let end = 100_000;
        ra.read_start(0, 0, 4096, 31);
        assert_eq!(ra.ramax, 3);
        let r = ra.readahead(0, true, end, 31).unwrap();
        assert_eq!(
            r,
            Ra24Read {
                first: 1,
                n: 3,
                unplug: false
            }
        );
        assert_eq!((ra.raend, ra.ralen, ra.rawin, ra.ramax), (4, 4, 4, 6));
        ra.read_start(1, 0, 4096, 31);
        assert!(ra.reada_ok);
        assert_eq!(ra.async_trigger(1, 2), Some(1));
        let r = ra.readahead(1, false, end, 31).unwrap();
        assert_eq!(
            r,
            Ra24Read {
                first: 4,
                n: 7,
                unplug: true
            }
        );
        assert_eq!((ra.raend, ra.ralen, ra.rawin, ra.ramax), (11, 7, 11, 12));
        ra.read_start(2, 0, 4096, 31);
        assert_eq!(ra.async_trigger(2, 100), Some(4));
        // A read in the first half page of the file reads nothing ahead.
        let mut fresh = FileRa24::default();
        fresh.read_start(0, 0, 100, 31);
        assert_eq!(fresh.ramax, 0);
        fresh.readahead(0, true, end, 31);
        assert_eq!(fresh.raend, 1);
    }

    /// The read-ahead stops at end_index (i_size's page).
    #[test]
    fn readahead_stops_at_the_end_of_the_file() {
        let mut ra = FileRa24::default();
        ra.read_start(0, 0, 1 << 20, 31);
        let r = ra.readahead(0, true, 10, 31).unwrap();
        assert_eq!(
            r,
            Ra24Read {
                first: 1,
                n: 9,
                unplug: false
            }
        );
        assert_eq!(ra.raend, 11);
    }
}
