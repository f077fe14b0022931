//! XFS's log in the running machine: the glue between the sans-IO
//! `iostack_fs::xfs_log::XfsLog` and the tasks.
//!
//! Transactions: the file's creation (`xfs_create`), the allocation at
//! delayed-allocation conversion (`xfs_iomap_write_allocate`, 6.x
//! `xfs_bmapi_convert_delalloc`) and O_DIRECT's (`xfs_iomap_write_direct`),
//! committed by the task that ran them; the timestamp update of each
//! `write()` whose tick moved the mtime (2.6.3x `xfs_ichgtime`: the inode's
//! `i_update_core`; 3.x/6.x `xfs_vn_update_time`: a transaction); the size
//! update at write completion (`xfs_setfilesize`: `i_update_core` in 2.6.3x,
//! a transaction from 3.4). fsync is `xfs_fsync`/`xfs_file_fsync`: the log
//! force's iclog writes are submitted by the fsync caller (`xlog_sync` runs in
//! the task that releases the iclog; the 6.18 trace shows the log write's Q
//! from the fsync-ing process), which waits for them, then the data device's
//! cache flush when the force wrote no ordered/FUA iclog
//! (`xfs_blkdev_issue_flush`). An iclog that fills at a commit is written by
//! the committer, asynchronously.
//!
//! Not modelled (`xfs_log.rs`): log space, the AIL and xfsaild's metadata
//! writeback, the periodic log force, the CIL's background push.

use crate::task::Blocked;
use crate::world::Simulation;
use iostack_core::{EndIo, TaskId};
use iostack_des::Instant;
use iostack_fs::xfs_log::{LogConfig, LogWrite, XfsLog, BBSIZE};
use std::collections::BTreeMap;

/// The XFS log and the tasks waiting in it.
pub(crate) struct XlogRun {
    pub log: XfsLog,
    /// Tasks in a log force, with the context they wait for.
    pub waiters: Vec<(TaskId, u64)>,
    /// Each inode's mtime, in ticks.
    pub mtime: BTreeMap<u32, u64>,
}

/// The log of the machine's XFS (`fs/xfs/log=1`).
pub(crate) fn build(
    fs: &dyn iostack_fs::mount::MountedFs,
    m: &crate::machine::Machine,
    t: &iostack_core::Tunables,
) -> Result<Option<XlogRun>, crate::error::SimError> {
    if fs.name() != "xfs" || !t.get_bool("fs/xfs/log") {
        return Ok(None);
    }
    let Some((start, len)) = fs.journal_area() else {
        return Ok(None);
    };
    let spb = m.fs_block_size as u64 / BBSIZE;
    let cfg = LogConfig {
        profile: t.profile(),
        start_bb: start * spb,
        len_bb: len * spb,
        iclog_size: t.get_u64("fs/xfs/logbsize"),
        iclogs: t.get_u64("fs/xfs/logbufs") as u32,
        barrier: t.get_bool("fs/xfs/barrier"),
    };
    let log = XfsLog::new(cfg).map_err(|e| crate::error::SimError(format!("xfs log: {e}")))?;
    Ok(Some(XlogRun {
        log,
        waiters: Vec::new(),
        mtime: BTreeMap::new(),
    }))
}

impl Simulation {
    /// Commit the transactions the file system ran since the last call
    /// (allocations), after `ino`'s creation when `task` creates it; iclogs
    /// they fill are written by `task`. Without a log they are dropped.
    pub(crate) fn xlog_commit_trans(&mut self, task: TaskId, ino: Option<u32>, now: Instant) {
        let mut trans: Vec<_> = ino
            .and_then(|i| self.fs.take_create_trans(i))
            .into_iter()
            .collect();
        trans.extend(self.fs.take_log_trans());
        let Some(x) = self.xlog.as_mut() else {
            return;
        };
        let mut writes = Vec::new();
        for items in &trans {
            writes.extend(x.log.commit(items));
        }
        for w in writes {
            self.xlog_bio(task, w, now);
        }
    }

    /// A buffered `write()`'s log work: the creation's and earlier
    /// transactions, and at the call's first page the timestamp update
    /// (`file_update_time` → `xfs_ichgtime`/`xfs_vn_update_time`) when the
    /// tick moved past the inode's mtime (nanosecond timestamps, coarse
    /// clock).
    pub(crate) fn xlog_write(&mut self, task: TaskId, ino: u32, call_start: bool, now: Instant) {
        self.xlog_commit_trans(task, Some(ino), now);
        let Some(x) = self.xlog.as_mut() else {
            return;
        };
        if !call_start {
            return;
        }
        let tick = now.0 / iostack_des::Duration::ms(1).as_ns();
        if x.mtime.insert(ino, tick) == Some(tick) {
            return;
        }
        for w in x.log.timestamp(ino) {
            self.xlog_bio(task, w, now);
        }
    }

    /// Before a `write()` extends `i_size`: the log learns the size of a
    /// file it has not met (made before the run), which is on disk.
    pub(crate) fn xlog_meet(&mut self, ino: u32) {
        if self.xlog.is_none() {
            return;
        }
        let size = self.fs.get_block().i_size(ino);
        self.xlog.as_mut().expect("an XFS log").log.meet(ino, size);
    }

    /// Write completion of a file's pages up to byte `end`
    /// (`xfs_end_io` → `xfs_setfilesize`).
    pub(crate) fn xlog_end_io(&mut self, ino: u32, end: u64) {
        let Some(x) = self.xlog.as_mut() else {
            return;
        };
        let size = self.fs.get_block().i_size(ino);
        let w = x.log.setfilesize(ino, end.min(size));
        // 2.6.3x logs no transaction here; the CIL writes nothing at commit.
        debug_assert!(w.is_empty(), "a size update wrote the log");
    }

    /// `xfs_fsync`/`xfs_file_fsync` after `filemap_write_and_wait`: the log
    /// force (writes submitted by the caller, waited for), then the cache
    /// flush if the force sent no ordered write. True when fsync is done.
    pub(crate) fn xfs_fsync(
        &mut self,
        task: TaskId,
        ino: u32,
        datasync: bool,
        now: Instant,
    ) -> bool {
        self.xlog_commit_trans(task, Some(ino), now);
        let x = self.xlog.as_mut().expect("an XFS log");
        let f = x.log.fsync(ino, datasync);
        if let Some(ctx) = f.wait {
            x.waiters.push((task, ctx));
        }
        for w in f.writes {
            self.xlog_bio(task, w, now);
        }
        let pi = self.proc_of(task) as usize;
        self.procs[pi].jbarrier = f.flush;
        if f.wait.is_some() {
            self.tasks.block(task, Blocked::OnJournal);
            if !self.drain_pending(task, now) {
                self.unplug(task, now);
            }
            return false;
        }
        !self.fsync_barrier(task, now)
    }

    /// Whether the task still waits for a log force.
    pub(crate) fn xlog_waiting(&self, task: TaskId) -> bool {
        self.xlog
            .as_ref()
            .is_some_and(|x| x.waiters.iter().any(|&(t, _)| t == task))
    }

    /// One iclog write, submitted by `task`.
    fn xlog_bio(&mut self, task: TaskId, w: LogWrite, now: Instant) {
        let t = self.tasks.get(task);
        let bio = iostack_block::Bio {
            dev: self.cfg.machine.fs_dev(),
            sector: w.sector,
            sectors: w.sectors,
            segments: w.sectors.div_ceil(8),
            flags: w.flags,
            pid: t.pid,
            cpu: t.cpu,
            owner: iostack_core::BioOwner {
                task,
                end_io: EndIo::XfsLog { ctx: w.ctx },
            },
            ioprio: t.ioprio,
            submitted_at: now,
            next: None,
            run: iostack_block::BioRun::ONE,
        };
        self.tasks.get_mut(task).pending.push_back(bio);
    }

    /// A log write completed (`xlog_iodone`): tasks whose context is now on
    /// disk go on.
    pub(crate) fn xlog_bio_done(&mut self, ctx: u64, now: Instant) {
        let x = self.xlog.as_mut().expect("an XFS log");
        x.log.write_done(ctx);
        let log = &x.log;
        let mut woken = Vec::new();
        x.waiters.retain(|&(t, c)| {
            let done = log.stable(c);
            if done {
                woken.push(t);
            }
            !done
        });
        for t in woken {
            self.wake_task(t, now);
        }
    }

    /// The log's invariants (`--check`).
    pub(crate) fn xlog_check(&self) {
        if let Some(x) = self.xlog.as_ref() {
            x.log.check_invariants();
        }
    }
}
