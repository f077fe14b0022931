//! 2.4's buffer flushing as the simulation runs it (`fs/buffer.c` of 2.4.4):
//! the two kernel threads, `bdflush` and `kupdated`, and `balance_dirty` in a
//! writer's `generic_commit_write`. The decisions and the dirty buffer list are
//! mm's (`Vm::balance_dirty_state`, `Vm::flush_dirty_buffers`); this file runs
//! them on tasks, submits the buffers they take (`ll_rw_block(WRITE)`: one
//! buffer head per file-system block, which 2.4's `__make_request` merges) and
//! charges `submit_bh`'s CPU time per buffer (`cpu_bio_ns`, as the 2.4
//! direct-I/O path does).

use crate::task::{Blocked, KThread, TaskKind};
use crate::world::{Ev, Simulation};
use iostack_block::Bio;
use iostack_core::{BioOwner, EndIo, ReqFlags, TaskId};
use iostack_des::{Duration, Instant};
use iostack_mm::{DirtyState, FlushRun};

/// bdflush's and kupdated's pids: a 2-way 2.4 box starts init, keventd, one
/// ksoftirqd per CPU, kswapd, then `bdflush_init` starts bdflush and kupdated.
const BDFLUSH_PID: u32 = 6;
const KUPDATED_PID: u32 = 7;

/// Pages a writer copies per step while under `nfract` (time granularity
/// only: `balance_dirty` is called at the page that crosses a threshold).
const WRITE24_BATCH: u64 = 32;

impl Simulation {
    /// Start bdflush and kupdated on a 2.4 machine (`bdflush_init`).
    pub(crate) fn start_bdflush24(&mut self) {
        if self.vm.buffers.is_none() {
            return;
        }
        let cpu = self.cfg.machine.irq_cpu;
        for (k, pid, name) in [
            (KThread::Bdflush, BDFLUSH_PID, "bdflush"),
            (KThread::Kupdated, KUPDATED_PID, "kupdated"),
        ] {
            let t = self.tasks.add(TaskKind::KernelThread(k), pid, cpu, (2, 4));
            self.tasks.block(t, Blocked::Idle);
            self.tracer.process(pid, name);
        }
        self.bd24.alloc_seen = self.fs.alloc_cursor24();
    }

    /// The period of the kupdate-style wakeup: `vm/bdflush/interval` on 2.4,
    /// `dirty_writeback_centisecs` later.
    pub(crate) fn writeback_interval(&self) -> Duration {
        match &self.vm.buffers {
            Some(b) => b.cfg.interval,
            None => self.vm.cfg.interval,
        }
    }

    /// `wakeup_bdflush`: `wake_up_process(bdflush_tsk)`, nothing if it runs.
    fn wakeup_bdflush(&mut self, now: Instant) {
        let t = self.tasks.kthread(KThread::Bdflush);
        if self.tasks.blocked(t) == Blocked::Idle {
            self.wake_task(t, now);
        }
    }

    /// How many pages a 2.4 writer may copy before `balance_dirty` must run:
    /// up to the page whose dirtying crosses the next threshold; one page at a
    /// time over `nfract_sync` (each new dirty buffer makes the writer flush).
    pub(crate) fn write24_room(&self) -> u64 {
        let Some(b) = self.vm.buffers.as_ref() else {
            return WRITE24_BATCH;
        };
        let limit = match self.vm.balance_dirty_state() {
            DirtyState::Under => b.cfg.nfract,
            DirtyState::Async => b.cfg.nfract_sync,
            DirtyState::Sync => return 1,
        };
        // The first count of dirty pages with dirty * 100 > tot * limit.
        let cross = b.cfg.buffer_pages * limit / 100 + 1;
        cross
            .saturating_sub(self.vm.nr_dirty)
            .clamp(1, WRITE24_BATCH)
    }

    /// `__block_commit_write` → `balance_dirty` (2.4.4) after a writer dirtied
    /// buffers: over `nfract` wake bdflush; over `nfract_sync` also
    /// `flush_dirty_buffers(0)` in the writer (`wakeup_bdflush(1)`), whose
    /// buffers it submits at its next step. Returns the CPU time spent.
    pub(crate) fn balance_dirty24(&mut self, task: TaskId, now: Instant) -> Duration {
        match self.vm.balance_dirty_state() {
            DirtyState::Under => Duration(0),
            DirtyState::Async => {
                self.wakeup_bdflush(now);
                Duration(0)
            }
            DirtyState::Sync => {
                self.wakeup_bdflush(now);
                let buffers = self.flush_buffers(task, false, now);
                self.submit_cost(buffers)
            }
        }
    }

    /// `submit_bh`'s CPU time for so many buffers.
    fn submit_cost(&self, buffers: u64) -> Duration {
        Duration(buffers * self.cfg.machine.cpu_bio_ns)
    }

    /// One `flush_dirty_buffers` walk on `task`: its buffers queued on the
    /// task for submission (`ll_rw_block(WRITE, 1, &bh)` each). Returns the
    /// buffers written.
    fn flush_buffers(&mut self, task: TaskId, check_flushtime: bool, now: Instant) -> u64 {
        let f = self.vm.flush_dirty_buffers(check_flushtime, now);
        let flags = ReqFlags::writeback(self.cfg.tunables.profile(), false, false);
        for &run in &f.runs {
            let FlushRun::Pages { map, pages, .. } = run else {
                continue;
            };
            let wb = &mut self.vm.wb_pages;
            match self.tasks.kind(task) {
                _ if crate::bdev::is_bdev(self.vm.map_ino[map as usize]) => wb.bdev += pages,
                TaskKind::Process(_) => wb.dirtier += pages,
                _ => wb.flusher += pages,
            }
        }
        for run in f.runs {
            match run {
                FlushRun::Pages { map, first, pages } => {
                    self.queue_runs_by_block(task, map, first, pages, flags, now)
                }
                FlushRun::Meta { ino, block } => {
                    if let Some(ino) = ino {
                        self.fs.indirect_written(ino, block);
                    }
                    self.queue_fs_bio(task, (block, 1), flags, EndIo::AsyncBuffer, now);
                }
            }
        }
        f.buffers
    }

    /// Queue on `task` one bio of `blocks` file-system blocks from `block`
    /// (an empty flush when 0), completing to `end_io`: `ll_rw_block`'s write
    /// of a metadata buffer, or a journal buffer through `submit_bh`.
    pub(crate) fn queue_fs_bio(
        &mut self,
        task: TaskId,
        (block, blocks): (u64, u32),
        flags: ReqFlags,
        end_io: EndIo,
        now: Instant,
    ) {
        let spb = self.cfg.machine.fs_block_size as u64 / 512;
        let t = self.tasks.get(task);
        let bio = Bio {
            dev: self.cfg.machine.fs_dev(),
            sector: block * spb,
            sectors: blocks * spb as u32,
            segments: blocks,
            flags,
            pid: t.pid,
            cpu: t.cpu,
            owner: BioOwner { task, end_io },
            ioprio: t.ioprio,
            submitted_at: now,
            next: None,
            run: iostack_block::BioRun::ONE,
        };
        self.tasks.get_mut(task).pending.push_back(bio);
    }

    /// The indirect blocks of `ino` allocated since the last call (2.4 only:
    /// nothing without its buffer list).
    fn new_indirect24(&mut self, ino: u32) -> Vec<u64> {
        if self.vm.buffers.is_none() || crate::bdev::is_bdev(ino) {
            return Vec::new();
        }
        let all = self.fs.indirect_blocks(ino);
        let listed = self.bd24.indirect_listed.entry(ino).or_insert(0);
        let new = all.get(*listed..).unwrap_or(&[]).to_vec();
        *listed = all.len();
        new
    }

    /// 2.4's `generic_file_write` after `prepare_write` and the copy: the
    /// indirect blocks `ext2_get_block` allocated go on the dirty list
    /// (`ext2_alloc_branch` → `mark_buffer_dirty_inode`), each before the
    /// first data page it maps (it is allocated at that page's
    /// `prepare_write`, just before the page's block on the disk), then each
    /// newly dirtied page's buffers (`generic_commit_write`).
    pub(crate) fn commit_write24(&mut self, map: u32, ino: u32, clean: &[u64], now: Instant) {
        self.balloc_dirtied24(ino, now);
        let mut new = self.new_indirect24(ino).into_iter().peekable();
        for &page in clean {
            let pblk = if new.peek().is_some() {
                iostack_fs::writepage::block_of_page(&mut *self.fs, ino, page)
            } else {
                None
            };
            while let Some(&b) = new.peek() {
                if pblk.is_some_and(|p| p < b) {
                    break;
                }
                self.mark_indirect24(ino, b, now);
                new.next();
            }
            self.vm.mark_buffers_dirty(map, page, now);
        }
        for b in new {
            self.mark_indirect24(ino, b, now);
        }
    }

    /// The indirect blocks a 2.4 direct write's `get_block` calls allocated
    /// (`generic_direct_IO` → `ext2_get_block` with `create`): dirty, on the
    /// list, written by kupdated once `age_buffer` old, by bdflush, or by
    /// the file's fsync (`fsync_inode_buffers`).
    pub(crate) fn list_indirect24(&mut self, ino: u32, now: Instant) {
        self.balloc_dirtied24(ino, now);
        for b in self.new_indirect24(ino) {
            self.mark_indirect24(ino, b, now);
        }
    }

    fn mark_indirect24(&mut self, ino: u32, block: u64, now: Instant) {
        if let Some(b) = self.vm.buffers.as_mut() {
            b.mark_meta_dirty(Some(ino), block, now);
        }
    }

    /// A write to `ino` on 2.4: its inode is dirty (`generic_file_write`'s
    /// `mark_inode_dirty_sync` of the mtime, for kupdate's `sync_inodes`),
    /// and what `ext2_new_block` allocated since the last call dirtied the
    /// superblock's, the group descriptors' and the block bitmaps' buffers
    /// (`mark_buffer_dirty`, on no inode's list), listed before the data of
    /// the write as they are dirtied at its `prepare_write`. Frees
    /// (`ext2_free_blocks` of Bonnie's unlink) dirty the same buffers.
    pub(crate) fn balloc_dirtied24(&mut self, ino: u32, now: Instant) {
        if self.vm.buffers.is_none() || crate::bdev::is_bdev(ino) {
            return;
        }
        self.bd24.dirty_inodes.insert(ino);
        let Some(cur) = self.fs.alloc_cursor24() else {
            return;
        };
        let Some(last) = self.bd24.alloc_seen.replace(cur) else {
            return;
        };
        let blocks = self.fs.balloc_buffers24(last.min(cur), last.max(cur));
        if let Some(b) = self.vm.buffers.as_mut() {
            for block in blocks {
                b.mark_meta_dirty(None, block, now);
            }
        }
    }

    /// kupdate's `sync_inodes(0)` (2.4.4 `fs/inode.c`): each dirty inode
    /// through `write_inode(inode, 0)`, which dirties its inode-table buffer.
    /// (`sync_supers` re-dirties the superblock's buffer, which every
    /// allocation already dirtied; an `s_wtime`-only update is not modelled.)
    fn sync_inodes24(&mut self, now: Instant) {
        for ino in std::mem::take(&mut self.bd24.dirty_inodes) {
            let Some(block) = self.fs.write_inode24(ino) else {
                continue;
            };
            if let Some(b) = self.vm.buffers.as_mut() {
                b.mark_meta_dirty(None, block, now);
            }
        }
    }

    /// `ext2_truncate` → `ext2_free_branches` → `bforget` of each indirect
    /// block of `ino`: off the dirty list, and the inode starts again.
    pub(crate) fn forget_indirect24(&mut self, ino: u32) {
        let Some(b) = self.vm.buffers.as_mut() else {
            return;
        };
        for &block in self.fs.indirect_blocks(ino) {
            b.meta_cleaned(block);
        }
        self.bd24.indirect_listed.remove(&ino);
    }

    /// Queue the writes of pages `[first, first + n)` of a mapping, one run per
    /// physically contiguous stretch (each buffer knows its block: 2.4 maps it
    /// at `prepare_write`).
    fn queue_runs_by_block(
        &mut self,
        task: TaskId,
        map: u32,
        first: u64,
        n: u64,
        flags: ReqFlags,
        now: Instant,
    ) {
        let ino = self.vm.map_ino[map as usize];
        let block = |s: &mut Simulation, p: u64| {
            if crate::bdev::is_bdev(ino) {
                Some(p)
            } else {
                iostack_fs::writepage::block_of_page(&mut *s.fs, ino, p)
            }
        };
        let mut p = first;
        while p < first + n {
            let pblk = block(self, p).expect("a dirty buffer is mapped (prepare_write)");
            let mut k = 1;
            while p + k < first + n && block(self, p + k) == Some(pblk + k) {
                k += 1;
            }
            self.queue_page_bios_flagged(task, map, p, k, pblk, flags, now);
            p += k;
        }
    }

    /// One step of bdflush: a pass of `flush_dirty_buffers(0)`, then, once its
    /// buffers are submitted, `if (!flushed || balance_dirty_state() < 0)`
    /// run `tq_disk` and sleep until `wakeup_bdflush`; else another pass.
    pub(crate) fn bdflush_step(&mut self, now: Instant) {
        let task = self.tasks.kthread(KThread::Bdflush);
        if self.drain_pending(task, now) {
            return;
        }
        if let Some(flushed) = self.bd24.bdflush_pass.take() {
            if flushed == 0 || self.vm.balance_dirty_state() == DirtyState::Under {
                self.unplug(task, now);
                self.tasks.block(task, Blocked::Idle);
                return;
            }
        }
        let flushed = self.flush_buffers(task, false, now);
        self.bd24.bdflush_pass = Some(flushed);
        let cost = self.submit_cost(flushed);
        if self.drain_pending(task, now) {
            return;
        }
        self.schedule_task(task, now + cost);
    }

    /// kupdate's timer (`schedule_timeout(interval)` ran out): wake kupdated.
    pub(crate) fn kupdate_timer(&mut self, now: Instant) {
        let t = self.tasks.kthread(KThread::Kupdated);
        if self.tasks.blocked(t) == Blocked::Idle {
            self.wake_task(t, now);
        }
    }

    /// One step of kupdated: `sync_old_buffers` (`sync_inodes(0)`, then
    /// `flush_dirty_buffers(1)`, then `run_task_queue(&tq_disk)`), then
    /// `schedule_timeout(interval)`.
    pub(crate) fn kupdated_step(&mut self, now: Instant) {
        let task = self.tasks.kthread(KThread::Kupdated);
        if self.drain_pending(task, now) {
            return;
        }
        if std::mem::take(&mut self.bd24.kupdate_pass) {
            self.unplug(task, now);
            self.tasks.block(task, Blocked::Idle);
            let interval = self.writeback_interval();
            if interval.0 > 0 && self.any_proc_alive() {
                self.evq.schedule(now + interval, Ev::WritebackTimer);
            }
            return;
        }
        self.sync_inodes24(now);
        let buffers = self.flush_buffers(task, true, now);
        let cost = self.submit_cost(buffers);
        self.bd24.kupdate_pass = true;
        if self.drain_pending(task, now) {
            return;
        }
        self.schedule_task(task, now + cost);
    }
}
