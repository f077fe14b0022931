//! What fio does to a file when a job opens it (`td_io_open_file` in fio's
//! ioengines.c), before the first I/O: `file_invalidate_cache` (the `invalidate`
//! option, default on) and `posix_fadvise` with the `fadvise_hint` advice
//! (default: `POSIX_FADV_RANDOM` for random jobs, `POSIX_FADV_SEQUENTIAL` else).
//!
//! * A regular file is invalidated with `posix_fadvise(POSIX_FADV_DONTNEED)`
//!   (`__file_invalidate_cache`): the kernel's `sys_fadvise64_64` starts
//!   writeback of the dirty pages with `filemap_flush` unless the queue is
//!   write-congested, then `invalidate_mapping_pages` drops the pages that are
//!   clean, unlocked and not under writeback.
//! * A block device is invalidated with `ioctl(BLKFLSBUF)`
//!   (`blockdev_invalidate_cache`): `blkdev_ioctl` calls `fsync_bdev`, which
//!   writes the device's dirty pages and waits, then `invalidate_bdev`.
//! * `POSIX_FADV_RANDOM` sets the open file's `f_ra.ra_pages = 0` up to 2.6.33
//!   (no readahead: `do_generic_file_read` reads each missing page alone with
//!   `->readpage`); from 2.6.34 it sets `FMODE_RANDOM`, and
//!   `page_cache_sync_readahead` reads just the pages the `read()` asks for
//!   (`force_page_cache_readahead`). `POSIX_FADV_SEQUENTIAL` sets
//!   `ra_pages = bdi->ra_pages * 2`.

use crate::workload::Fadvise;
use crate::world::{Backing, Simulation};
use iostack_core::Profile;
use iostack_des::Instant;
use iostack_mm::{WbJob, Wbc};

impl Simulation {
    /// fio's `td_io_open_file` at the process's first step. Returns true when a
    /// writeback job was started (the caller runs it before the first I/O, and
    /// the cache is dropped when it ends, in `fsync_done`).
    pub(crate) fn open_file(&mut self, pi: u32) -> bool {
        self.procs[pi as usize].opened = true;
        self.fadvise(pi);
        if !self.procs[pi as usize].spec.invalidate {
            return false;
        }
        self.invalidate_file(pi)
    }

    /// `file_invalidate_cache`: drop the cache now, or start the writeback job
    /// that must come first (true).
    pub(crate) fn invalidate_file(&mut self, pi: u32) -> bool {
        let Some(map) = self.open_map(pi) else {
            return false;
        };
        let p = &self.procs[pi as usize];
        let raw = matches!(p.backing, Backing::Raw { .. });
        let m = &self.vm.maps[map as usize];
        let dirty = m.nr_dirty() > 0;
        let p = &mut self.procs[pi as usize];
        p.invalidate_pending = true;
        if raw && (dirty || m.nr_writeback() > 0) {
            // fsync_bdev → sync_blockdev: filemap_write_and_wait.
            p.fsync = Some(WbJob::new(Wbc::for_fsync(map)));
            return true;
        }
        if !raw && dirty && !self.queue.congested(false) {
            let nrpages = m.nr_cached();
            p.fsync = Some(WbJob::new(Wbc::for_flush(map, nrpages)));
            p.fsync_nowait = true;
            return true;
        }
        self.invalidate_now(pi);
        false
    }

    /// fio's `loop_cache_invalidate` when a time_based sequential job wraps:
    /// `file_invalidate_cache` again. Returns true when a flush job was started
    /// (the task runs it, then drops the cache, then chooses its I/O again).
    pub(crate) fn loop_invalidate(&mut self, pi: u32, now: Instant) -> bool {
        let started = self.invalidate_file(pi);
        if started {
            self.schedule_task(iostack_core::TaskId(pi), now);
        }
        started
    }

    /// The page cache fio's invalidation acts on: the file's, or the device
    /// node's if it has one already (none means nothing is cached).
    fn open_map(&self, pi: u32) -> Option<u32> {
        let p = &self.procs[pi as usize];
        match p.backing {
            Backing::File(_) => Some(p.map),
            Backing::Raw { dev, .. } if dev == self.cfg.machine.fs_dev() => Some(0),
            Backing::Raw { .. } => self.vm.by_ino.get(&crate::bdev::DISK_INO).copied(),
        }
    }

    /// `invalidate_mapping_pages` over the whole file (fio passes the job's
    /// region to `posix_fadvise`, but `file_invalidate_cache` gives
    /// `f->file_offset`/`f->io_size`; pages outside it stay, as here).
    pub(crate) fn invalidate_now(&mut self, pi: u32) {
        let p = &mut self.procs[pi as usize];
        p.invalidate_pending = false;
        let (first, end) = match p.backing {
            Backing::File(_) => {
                let page = iostack_mm::PAGE_SIZE;
                // DONTNEED drops the first and last *full* pages of the range.
                let first = p.spec.offset.div_ceil(page);
                let end = p.spec.offset.saturating_add(p.spec.region) / page;
                (first, end)
            }
            // invalidate_bdev: the whole device's mapping.
            Backing::Raw { .. } => (0, u64::MAX),
        };
        if let Some(map) = self.open_map(pi) {
            self.vm.invalidate_mapping_pages(map, first, end);
        }
    }

    /// `posix_fadvise` with the process's advice on its open file.
    /// On 2.4 it changes nothing: `sys_fadvise64` came with 2.5.60 (fio's
    /// `posix_fadvise` fails, fio warns and goes on), and 2.4's reads use
    /// their own read-ahead context (`read24.rs`), not `f_ra`.
    fn fadvise(&mut self, pi: u32) {
        // FMODE_RANDOM came with 2.6.34; the 2.6.33-36 profile is taken as
        // 2.6.33 here.
        let fmode_random = self.cfg.tunables.profile() >= Profile::V2_6_37;
        let max = self.vm.cfg.ra_pages;
        let p = &mut self.procs[pi as usize];
        match p.spec.fadvise {
            Fadvise::Normal => {}
            Fadvise::Random if fmode_random => p.ra_random = true,
            Fadvise::Random => p.ra.ra_pages = 0,
            Fadvise::Sequential => p.ra.ra_pages = max * 2,
        }
    }
}
