//! 2.4's file steps around a direct I/O that the 2.6 code above the block
//! layer does not have (2.4.10 `mm/filemap.c`, `fs/inode.c`, and seed 004's
//! patches against 2.4.4):
//!
//! * Bonnie's `newfile` with `create` unlinks the file and creates it again:
//!   `truncate_inode_pages` and `ext2_truncate`, so the test that follows
//!   allocates its blocks anew ([`Simulation::recreate_file`]).
//! * Seed 004's intermediate patch called `generic_osync_inode(inode,
//!   OSYNC_METADATA|OSYNC_DATA)` at the start of `generic_file_direct_IO`,
//!   before each direct I/O: `fsync_inode_buffers` writes the inode's dirty
//!   indirect blocks with `ll_rw_block` and waits for them, then
//!   `write_inode_now(inode, 1)` writes its inode-table block and waits
//!   (`ext2_update_inode` with `do_sync`), when an allocation or a size change
//!   left it `I_DIRTY_DATASYNC` ([`Simulation::osync_before_dio`]). The merged
//!   patch flushes the data only: `fsync_inode_data_buffers` writes the
//!   inode's dirty data buffers (`i_dirty_data_buffers`, newest first), then
//!   `filemap_fdatawait`, the task waiting for all of its file's writeback
//!   ([`Simulation::osync_before_dio`]); a file written only with O_DIRECT
//!   has none. The intermediate patch over dirty data is refused.
//! * The final fsync is `ext2_fsync_inode` ([`Simulation::fsync24_meta`]):
//!   the metadata list, then the data list, then the inode.

use crate::task::Blocked;
use crate::world::{Backing, Simulation};
use iostack_block::{Bio, Submit};
use iostack_core::{BioOwner, EndIo, ReqFlags, TaskId};
use iostack_des::{Duration, Instant};
use iostack_fs::OsyncWrites;

/// Where a process is in its final fsync on 2.4 (`ext2_fsync_inode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Fsync24 {
    #[default]
    NotStarted,
    /// `fsync_inode_buffers` under way (`Osync24`); `inode` is the
    /// inode-table block `ext2_sync_inode` writes after the data.
    Running {
        inode: Option<u64>,
    },
    /// `fsync_inode_data_buffers`: the data buffers submitted, waited for.
    Data {
        inode: Option<u64>,
    },
    /// `ext2_sync_inode` under way (`Osync24`).
    Inode,
    Done,
}

/// Where a process is in the `generic_osync_inode` before its next direct I/O.
#[derive(Clone, Debug, Default)]
pub(crate) enum Osync24 {
    /// Not started for the next I/O.
    #[default]
    Idle,
    /// `fsync_inode_buffers` or `write_inode_now` waits for `inflight`
    /// buffers; `inode` is the write still to come.
    Waiting { inflight: u32, inode: Option<u64> },
    /// `generic_file_direct_IO`'s data flush (`fsync_inode_data_buffers`,
    /// `filemap_fdatawait`) submitted; the task waits for the file's
    /// writeback to end.
    DataFlush,
    /// Done: the direct I/O goes ahead.
    Done,
}

impl Simulation {
    /// Whether `generic_file_direct_IO` calls `generic_osync_inode` first
    /// (the `dio/flush24` variant; 2.4 only, refused elsewhere at build).
    fn flush24_osync(&self) -> bool {
        self.cfg.tunables.get_enum("dio/flush24") == "generic_osync_inode"
    }

    /// CPU time of the `get_block` calls of 2.4's `generic_direct_IO` over
    /// `[offset, offset + len)` of a file: one per file-system block, those
    /// past `i_size` allocating (ext2 creates blocks only there on this path).
    /// Zero on other kernels (2.6's `do_direct_IO` maps extents; not costed)
    /// and on a device (`blkdev_get_block` is a computation).
    pub(crate) fn get_block_cost24(&mut self, backing: Backing, offset: u64, len: u64) -> Duration {
        let Backing::File(ino) = backing else {
            return Duration::ZERO;
        };
        if self.cfg.tunables.profile() != iostack_core::Profile::V2_4 {
            return Duration::ZERO;
        }
        let m = &self.cfg.machine;
        let bs = m.fs_block_size as u64;
        let blocks = len.div_ceil(bs);
        let size = self.fs.get_block().i_size(ino);
        let fresh = (offset + len).saturating_sub(size.max(offset)).div_ceil(bs);
        Duration(blocks * m.cpu_get_block_ns + fresh.min(blocks) * m.cpu_alloc_block_ns)
    }

    /// Bonnie's `newfile(name, ..., create)`: `unlink` then `open(O_CREAT)`.
    /// The page cache of the old file goes (`truncate_inode_pages`; Bonnie
    /// fsyncs before close, so none is dirty) and its blocks are freed.
    pub(crate) fn recreate_file(&mut self, pi: u32, now: Instant) -> Result<(), String> {
        let p = &self.procs[pi as usize];
        let Backing::File(ino) = p.backing else {
            return Err("a device cannot be unlinked and created again".into());
        };
        let map = p.map;
        let m = &self.vm.maps[map as usize];
        if m.nr_dirty() > 0 || m.nr_writeback() > 0 {
            return Err("unlinking a file with dirty pages is not modelled".into());
        }
        self.vm.invalidate_mapping_pages(map, 0, u64::MAX);
        self.forget_indirect24(ino);
        let given_back = self.fs.truncate(ino).map_err(|e| e.to_string())?;
        // ext2_free_blocks dirtied the bitmaps, descriptors and superblock.
        self.balloc_dirtied24(ino, now);
        if !given_back {
            return Err(
                "the file's blocks cannot be given back to the sequential allocator \
                 (it was not the last file allocated)"
                    .into(),
            );
        }
        Ok(())
    }

    /// Before process `pi` chooses its next I/O: the intermediate patch's
    /// `generic_osync_inode`. True when the task now waits for it (or ended).
    pub(crate) fn osync_before_dio(&mut self, pi: u32, now: Instant) -> bool {
        let p = &mut self.procs[pi as usize];
        match std::mem::take(&mut p.osync24) {
            Osync24::Done => return false,
            Osync24::Waiting { inflight: 0, inode } => {
                // fsync_inode_buffers is done: write_inode_now, or go on.
                let writes = OsyncWrites {
                    buffers: Vec::new(),
                    inode,
                };
                return self.osync_submit(pi, writes, now);
            }
            w @ Osync24::Waiting { .. } => {
                // Woken from get_request_wait: submit the rest.
                p.osync24 = w;
                return self.osync_drain(pi, now);
            }
            Osync24::DataFlush => {
                // Woken from get_request_wait or from the wait: go on waiting,
                // or on to the rest of the steps.
                p.osync24 = Osync24::DataFlush;
                if self.data_flush_wait(pi, now) {
                    return true;
                }
                self.procs[pi as usize].osync24 = Osync24::Idle;
            }
            Osync24::Idle => {}
        }
        let p = &self.procs[pi as usize];
        let Backing::File(ino) = p.backing else {
            return false;
        };
        if !p.spec.direct || self.cfg.tunables.profile() != iostack_core::Profile::V2_4 {
            return false;
        }
        let m = &self.vm.maps[p.map as usize];
        let dirty = m.nr_dirty() > 0 || m.nr_writeback() > 0;
        if dirty && (self.flush24_osync() || self.vm.buffers.is_none()) {
            let e = "2.4 direct I/O on a file with dirty cached pages: seed 004's \
                     intermediate generic_osync_inode over them (data and metadata \
                     buffers on one i_dirty_buffers list) is not modelled";
            self.procs[pi as usize].result.error = Some(e.into());
            self.finish_proc(pi, now);
            return true;
        }
        if dirty {
            // The merged patch: generic_file_direct_IO's filemap_fdatasync
            // (pages dirtied through mmap: none), fsync_inode_data_buffers
            // and filemap_fdatawait.
            self.data_flush_submit(pi, now);
            self.procs[pi as usize].osync24 = Osync24::DataFlush;
            if self.data_flush_wait(pi, now) {
                return true;
            }
            self.procs[pi as usize].osync24 = Osync24::Idle;
        }
        if !self.flush24_osync() {
            return false;
        }
        match self.osync_inode24(ino) {
            Ok(w) => self.osync_submit(pi, w, now),
            Err(e) => {
                self.procs[pi as usize].result.error = Some(e.to_string());
                self.finish_proc(pi, now);
                true
            }
        }
    }

    /// The inode's dirty indirect blocks and inode block to write
    /// synchronously (`Ext2::osync_inode`), off the dirty buffer list.
    fn osync_inode24(&mut self, ino: u32) -> Result<OsyncWrites, iostack_fs::FsError> {
        let w = self.fs.osync_inode(ino)?;
        if let Some(b) = self.vm.buffers.as_mut() {
            for &block in &w.buffers {
                b.meta_cleaned(block);
            }
        }
        Ok(w)
    }

    /// Whether a process's final fsync is 2.4's `ext2_fsync_inode`
    /// ([`Simulation::fsync24_meta`]) rather than 2.6's `write_cache_pages`:
    /// a file on ext2 on 2.4 (the buffer list is 2.4's).
    pub(crate) fn fsync24_applies(&self, pi: u32) -> bool {
        let p = &self.procs[pi as usize];
        self.vm.buffers.is_some()
            && self.cfg.machine.fs == crate::machine::FsKind::Ext2
            && matches!(p.backing, Backing::File(_))
    }

    /// A 2.4 process's final fsync (Bonnie's, after each writing test):
    /// `sys_fsync` → `ext2_sync_file` → `ext2_fsync_inode` (2.4.10
    /// `fs/ext2/fsync.c`, the o_direct patch's split of the inode's buffer
    /// list): `fsync_inode_buffers`, the inode's dirty indirect blocks
    /// (`i_dirty_buffers`, newest first onto the request queue, sorted there
    /// by the elevator), each through `ll_rw_block`, then waited for; then
    /// `fsync_inode_data_buffers`, its dirty data buffers
    /// (`i_dirty_data_buffers`, newest first) the same way
    /// ([`Simulation::fsync24_data`]); then `ext2_sync_inode` when an
    /// allocation or a size change left the inode `I_DIRTY_DATASYNC` (a
    /// timestamp-only inode write is not modelled). (`sys_fsync`'s
    /// `filemap_fdatasync` writes pages dirtied through mmap only: none.)
    /// True while the task waits for it.
    pub(crate) fn fsync24_meta(&mut self, pi: u32, now: Instant) -> bool {
        let p = &mut self.procs[pi as usize];
        match p.fsync24 {
            Fsync24::Done => false,
            Fsync24::Running { inode } => match std::mem::take(&mut p.osync24) {
                Osync24::Idle | Osync24::Done => {
                    p.fsync24 = Fsync24::Data { inode };
                    self.fsync24_data(pi, true, now)
                }
                w => {
                    p.osync24 = w;
                    self.osync_before_dio(pi, now)
                }
            },
            Fsync24::Data { .. } => self.fsync24_data(pi, false, now),
            Fsync24::Inode => match std::mem::take(&mut p.osync24) {
                Osync24::Idle | Osync24::Done => {
                    p.fsync24 = Fsync24::Done;
                    false
                }
                w => {
                    p.osync24 = w;
                    self.osync_before_dio(pi, now)
                }
            },
            Fsync24::NotStarted => {
                let Backing::File(ino) = p.backing else {
                    return false;
                };
                let wrote = p.result.dirs[1].ios > 0;
                if !p.spec.end_fsync
                    || !wrote
                    || p.result.error.is_some()
                    || !self.fsync24_applies(pi)
                {
                    return false;
                }
                match self.osync_inode24(ino) {
                    Ok(w) => {
                        self.procs[pi as usize].fsync24 = Fsync24::Running { inode: w.inode };
                        let buffers = OsyncWrites {
                            buffers: w.buffers,
                            inode: None,
                        };
                        self.osync_submit(pi, buffers, now)
                    }
                    Err(e) => {
                        self.procs[pi as usize].result.error = Some(e.to_string());
                        self.procs[pi as usize].fsync24 = Fsync24::Done;
                        false
                    }
                }
            }
        }
    }

    /// `fsync_inode_data_buffers` of the process's file: at `start`, its dirty
    /// data buffers newest first (`Vm::take_inode_data24`), one
    /// `ll_rw_block(WRITE)` each (a buffer head per block; 2.4's
    /// `__make_request` merges them, front merges as they come in
    /// descending order), `submit_bh`'s CPU each; then `wait_on_buffer` of
    /// each (`tq_disk` run), which also waits for its buffers that were
    /// already being written. Then `ext2_sync_inode`. True while the task
    /// waits.
    fn fsync24_data(&mut self, pi: u32, start: bool, now: Instant) -> bool {
        if start {
            self.data_flush_submit(pi, now);
        }
        if self.data_flush_wait(pi, now) {
            return true;
        }
        let Fsync24::Data { inode } = self.procs[pi as usize].fsync24 else {
            unreachable!("fsync24_data outside its step");
        };
        self.procs[pi as usize].fsync24 = Fsync24::Inode;
        let w = OsyncWrites {
            buffers: Vec::new(),
            inode,
        };
        self.osync_submit(pi, w, now)
    }

    /// `fsync_inode_data_buffers`' writes: the file's dirty data buffers
    /// newest first (`Vm::take_inode_data24`), one `ll_rw_block(WRITE)` each
    /// (a buffer head per block; 2.4's `__make_request` merges them, front
    /// merges as they come in descending order), `submit_bh`'s CPU each,
    /// queued on the task.
    fn data_flush_submit(&mut self, pi: u32, now: Instant) {
        let task = TaskId(pi);
        let p = &self.procs[pi as usize];
        let (map, Backing::File(ino)) = (p.map, p.backing) else {
            return;
        };
        let pages = self.vm.take_inode_data24(map);
        self.count_wb_pages(task, map, pages.len() as u64);
        for &page in &pages {
            let pblk = iostack_fs::writepage::block_of_page(&mut *self.fs, ino, page)
                .expect("a dirty buffer is mapped (prepare_write)");
            self.queue_page_bios_flagged(task, map, page, 1, pblk, ReqFlags::WRITE, now);
        }
        let bpp = (iostack_mm::PAGE_SIZE / self.cfg.machine.fs_block_size as u64).max(1);
        let cost = pages.len() as u64 * bpp * self.cfg.machine.cpu_bio_ns;
        self.charge_sys(task, Duration(cost));
    }

    /// Submit what `data_flush_submit` queued, then `wait_on_buffer` of each
    /// listed buffer (`tq_disk` run), which also waits for the file's
    /// buffers already being written (`filemap_fdatawait` too): true while
    /// the task sleeps, for a request or for the writeback.
    fn data_flush_wait(&mut self, pi: u32, now: Instant) -> bool {
        let task = TaskId(pi);
        if self.drain_pending(task, now) {
            return true;
        }
        self.unplug(task, now);
        let map = self.procs[pi as usize].map;
        if self.vm.fdatawait(task, map) {
            self.tasks.block(task, Blocked::OnPage);
            return true;
        }
        false
    }

    /// `ll_rw_block(WRITE, ...)` of the step's buffers (the indirect blocks,
    /// else the inode block), then `wait_on_buffer`, which runs `tq_disk`.
    fn osync_submit(&mut self, pi: u32, w: OsyncWrites, now: Instant) -> bool {
        let (blocks, inode) = match (w.buffers.is_empty(), w.inode) {
            (false, inode) => (w.buffers, inode),
            (true, Some(b)) => (vec![b], None),
            (true, None) => {
                // Nothing (more) to write: the direct I/O goes ahead.
                self.procs[pi as usize].osync24 = Osync24::Done;
                self.issue_next(pi, now);
                return true;
            }
        };
        let task = TaskId(pi);
        let spb = self.cfg.machine.fs_block_size as u64 / 512;
        let t = self.tasks.get(task);
        let (pid, cpu, ioprio) = (t.pid, t.cpu, t.ioprio);
        for &b in &blocks {
            let bio = Bio {
                dev: self.cfg.machine.fs_dev(),
                sector: b * spb,
                sectors: spb as u32,
                segments: 1,
                flags: ReqFlags::WRITE,
                pid,
                cpu,
                owner: BioOwner {
                    task,
                    end_io: EndIo::SyncBuffer,
                },
                ioprio,
                submitted_at: now,
                run: iostack_block::BioRun::ONE,
                next: None,
            };
            self.tasks.get_mut(task).pending.push_back(bio);
        }
        // Each buffer head through submit_bh.
        let cost = Duration(blocks.len() as u64 * self.cfg.machine.cpu_bio_ns);
        self.charge_sys(task, cost);
        self.procs[pi as usize].osync24 = Osync24::Waiting {
            inflight: blocks.len() as u32,
            inode,
        };
        self.osync_drain(pi, now)
    }

    /// Submit the buffers still queued; when all are, run `tq_disk` and wait.
    fn osync_drain(&mut self, pi: u32, now: Instant) -> bool {
        let task = TaskId(pi);
        while let Some(mut bio) = self.tasks.get_mut(task).pending.pop_front() {
            bio.submitted_at = now;
            let r = self
                .queue
                .submit_bio(now, bio, &mut self.tracer, &mut self.out);
            if r == Submit::Sleeping {
                self.tasks.block(task, Blocked::OnRequest);
                return true;
            }
        }
        self.unplug(task, now);
        if matches!(
            self.procs[pi as usize].osync24,
            Osync24::Waiting { inflight: 0, .. }
        ) {
            // Completed while it was submitting: go on at once.
            return self.osync_before_dio(pi, now);
        }
        self.tasks.block(task, Blocked::OnBuffer);
        true
    }

    /// After a 2.4 direct write to a file (`generic_file_write`'s `o_direct`
    /// branch): `invalidate_inode_pages2(mapping)` over the whole mapping,
    /// not the range written (seed 004: with the range, the rewrite test's CPU
    /// went to 30%). No page is mapped by a process here, so every page goes
    /// (`truncate_complete_page`); none of this file's is dirty or locked, as
    /// the flush before the I/O left none (`osync_before_dio`).
    pub(crate) fn after_direct_io24(&mut self, pi: u32, dir: crate::workload::Dir) {
        let p = &self.procs[pi as usize];
        let write = dir == crate::workload::Dir::Write;
        let v24 = self.cfg.tunables.profile() == iostack_core::Profile::V2_4;
        if !write || !v24 || !matches!(p.backing, Backing::File(_)) {
            return;
        }
        let map = p.map;
        self.vm.invalidate_mapping_pages(map, 0, u64::MAX);
    }

    /// `end_buffer_io_sync`: one of the buffers completed; the last wakes the
    /// waiter.
    pub(crate) fn osync_bio_done(&mut self, task: TaskId, now: Instant) {
        let pi = self.proc_of(task);
        let p = &mut self.procs[pi as usize];
        let Osync24::Waiting { inflight, .. } = &mut p.osync24 else {
            panic!("a synchronous buffer completed for a process not waiting on one");
        };
        *inflight -= 1;
        if *inflight == 0 && self.tasks.blocked(task) == Blocked::OnBuffer {
            self.wake_task(task, now);
        }
    }
}
