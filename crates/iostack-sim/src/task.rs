//! The task table: every schedulable entity of the simulated machine, processes
//! (fio jobs, dd) and kernel threads alike, as the kernel's `task_struct`s. A task
//! has an identity (pid, CPU, I/O priority), the bios it has built but not yet
//! submitted, its plug, and one blocking state; blocking and waking go through `Tasks`, and
//! the event loop runs a task by its `TaskId` without knowing what it is.

use iostack_block::{Bio, BlockWork, Ctx};
use iostack_core::TaskId;
use iostack_des::Instant;
use iostack_mm::Throttle;
use std::collections::VecDeque;

/// A kernel thread the machine runs. Later stacks add theirs here: kjournald /
/// jbd2, 2.4's bdflush and kupdated, blk-mq's kworkers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KThread {
    /// The writeback thread: `pdflush` (2.6.28-2.6.31) or the per-bdi
    /// `flush-MAJ:MIN` (2.6.32+).
    Flusher,
    /// `ext4lazyinit`: the file system's inode-table zeroing.
    LazyInit,
    /// `kblockd/N`: the block layer's workqueue thread, running the work the
    /// queue defers to it (`kblockd_schedule_work`: the unplug timer's
    /// `blk_unplug_work`, the elevators' queue runs).
    KBlockd,
    /// `kjournald` (ext3's jbd) or `jbd2/DEV-8` (ext4): the journal's commit
    /// thread, with its own I/O context (its own CFQ queue).
    Kjournald,
    /// 2.4's `bdflush`: woken by `balance_dirty` over `nfract`, writes
    /// `ndirty` buffers a pass (`fs/buffer.c`).
    Bdflush,
    /// 2.4's `kupdated`: every `interval`, the buffers older than `age_buffer`.
    Kupdated,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskKind {
    /// A user process: the index of its job.
    Process(u32),
    KernelThread(KThread),
}

/// Why a task is not runnable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Blocked {
    No,
    /// Sleeping in `get_request_wait`.
    OnRequest,
    /// Waiting for its own I/O (sync engine, or iodepth reached).
    OnIo,
    /// Not started yet (stonewall or startdelay).
    NotStarted,
    /// Spinning in fio's `flow_threshold_exceeded` (`flow_sleep=0`) until
    /// another job of its flow moves on (`crate::flow`).
    OnFlow,
    /// Waiting for a page (read, writeback for fsync, or `lock_page` on a page
    /// another writeback caller holds).
    OnPage,
    /// In `congestion_wait`.
    OnCongestion,
    /// In the journal: `start_this_handle` or a shadowed buffer
    /// (`do_get_write_access`), `log_wait_commit`, or fsync's cache flush.
    OnJournal,
    /// In 2.4's `wait_on_buffer` for a metadata buffer it wrote.
    OnBuffer,
    /// A kernel thread asleep until woken or its timer fires (2.4's bdflush in
    /// `interruptible_sleep_on(&bdflush_wait)`, kupdate in `schedule_timeout`).
    Idle,
    Done,
}

pub(crate) struct Task {
    pub kind: TaskKind,
    pub pid: u32,
    pub cpu: u32,
    /// I/O priority (class, level) its bios carry.
    pub ioprio: (u8, u8),
    pub blocked: Blocked,
    /// The task is on the CPU until then (copies made before it went to sleep
    /// on a page); a wake-up cannot run it earlier.
    pub cpu_until: Instant,
    /// The task is on the CPU in the block layer's scheduler hooks until
    /// then (`World::charge_blk_cpu`).
    pub blk_cpu_until: Instant,
    /// Bios built and not yet submitted (the submitter slept in
    /// `get_request_wait` between two of them).
    pub pending: VecDeque<Bio>,
    /// `current->plug`: how many plugs the task has started and not finished.
    /// Only the outermost reaches the block queue (`blk_start_plug` ignores a
    /// nested plug, `blk_finish_plug` flushes only the task's own).
    pub plugs: u32,
    /// The task holds the plug of a batch path (`read_pages`, `->writepages`),
    /// finished once the batch's bios are submitted (`Simulation::close_batch_plug`).
    pub batch_plug: bool,
}

impl Task {
    /// The task as the block layer sees it.
    pub fn ctx(&self) -> Ctx {
        Ctx {
            pid: self.pid,
            cpu: self.cpu,
        }
    }
}

/// The table of tasks, indexed by `TaskId`.
#[derive(Default)]
pub(crate) struct Tasks {
    v: Vec<Task>,
    /// The kernel threads started, with their tasks.
    kthreads: Vec<(KThread, TaskId)>,
}

impl Tasks {
    pub fn add(&mut self, kind: TaskKind, pid: u32, cpu: u32, ioprio: (u8, u8)) -> TaskId {
        let blocked = match kind {
            TaskKind::Process(_) => Blocked::NotStarted,
            TaskKind::KernelThread(_) => Blocked::No,
        };
        self.v.push(Task {
            kind,
            pid,
            cpu,
            ioprio,
            blocked,
            cpu_until: Instant::ZERO,
            blk_cpu_until: Instant::ZERO,
            pending: VecDeque::new(),
            plugs: 0,
            batch_plug: false,
        });
        let id = TaskId(self.v.len() as u32 - 1);
        if let TaskKind::KernelThread(k) = kind {
            assert!(
                self.kthreads.iter().all(|&(t, _)| t != k),
                "{k:?} started twice"
            );
            self.kthreads.push((k, id));
        }
        id
    }

    /// The task of kernel thread `k`.
    pub fn kthread(&self, k: KThread) -> TaskId {
        match self.kthreads.iter().find(|&&(t, _)| t == k) {
            Some(&(_, id)) => id,
            None => panic!("{k:?} is not started"),
        }
    }

    pub fn get(&self, id: TaskId) -> &Task {
        &self.v[id.0 as usize]
    }

    pub fn get_mut(&mut self, id: TaskId) -> &mut Task {
        &mut self.v[id.0 as usize]
    }

    pub fn kind(&self, id: TaskId) -> TaskKind {
        self.get(id).kind
    }

    pub fn blocked(&self, id: TaskId) -> Blocked {
        self.get(id).blocked
    }

    /// The task goes to sleep (or finishes, or has not started).
    pub fn block(&mut self, id: TaskId, why: Blocked) {
        self.get_mut(id).blocked = why;
    }

    /// The task becomes runnable again; false if it has finished, when a wake-up
    /// is ignored.
    pub fn unblock(&mut self, id: TaskId) -> bool {
        let t = self.get_mut(id);
        if t.blocked == Blocked::Done {
            return false;
        }
        t.blocked = Blocked::No;
        true
    }

    /// Whether any process has not finished (kernel threads do not keep a
    /// run alive).
    pub fn processes_alive(&self) -> bool {
        self.v
            .iter()
            .any(|t| matches!(t.kind, TaskKind::Process(_)) && t.blocked != Blocked::Done)
    }

    /// Bios built but not submitted, over all tasks.
    pub fn pending_bios(&self) -> usize {
        self.v.iter().map(|t| t.pending.len()).sum()
    }
}

/// The journal as the simulation runs it: the sans-IO `Journal`, its commit
/// thread's I/O in flight, and the tasks waiting in it.
pub(crate) struct JournalRun {
    pub journal: iostack_fs::jbd::Journal,
    /// kjournald's bios in flight (ordered data, log blocks, commit block,
    /// flush).
    pub inflight: u32,
    /// kjournald waits for `inflight` to drain before its next phase.
    pub waiting_io: bool,
    /// Tasks in `log_wait_commit(tid)`.
    pub commit_waiters: Vec<(TaskId, iostack_fs::jbd::Tid)>,
    /// Tasks to retry a journal operation (`start_this_handle`, a shadowed
    /// buffer) when the commit moves on.
    pub start_waiters: Vec<TaskId>,
    /// Per inode: `i_sync_tid`, `i_datasync_tid`.
    pub tids: std::collections::BTreeMap<u32, (iostack_fs::jbd::Tid, iostack_fs::jbd::Tid)>,
    /// Per inode: `i_mtime` at the file system's granularity (`s_time_gran`
    /// over the tick-based `current_fs_time`).
    pub mtime: std::collections::BTreeMap<u32, u64>,
    /// Each task's journal work not yet done (it slept in it): a process's
    /// write, or the handle writeback holds around an allocation.
    pub ops: std::collections::BTreeMap<TaskId, JournalOp>,
}

/// One file-system operation's journal work not yet done: handles to start,
/// each with the metadata blocks it dirties, the data block it files
/// (`data=ordered`) and whether it changes what fdatasync must commit.
#[derive(Debug, Default)]
pub(crate) struct JournalOp {
    pub handles: VecDeque<HandleWork>,
    /// The handle open now and how many of its blocks are dirtied.
    pub open: Option<(iostack_fs::jbd::HandleId, usize)>,
}

#[derive(Debug)]
pub(crate) struct HandleWork {
    pub ino: u32,
    pub credits: u64,
    pub meta: Vec<u64>,
    pub data: Option<u64>,
    /// `i_datasync_tid` follows (allocation, size change), or only
    /// `i_sync_tid` (timestamps, a new inode).
    pub datasync: bool,
    pub sync_tid: bool,
}

/// 2.4's buffer-flushing threads as the simulation runs them.
#[derive(Debug, Default)]
pub(crate) struct Bdflush24 {
    /// bdflush submitted a pass of this many buffers; once they are out it
    /// decides whether to sleep (`!flushed || balance_dirty_state() < 0`).
    pub bdflush_pass: Option<u64>,
    /// kupdate submitted its `sync_old_buffers` pass; once the buffers are out
    /// it runs `tq_disk` and sleeps `interval`.
    pub kupdate_pass: bool,
    /// Per inode, how many of its indirect blocks (`MountedFs::
    /// indirect_blocks`, in allocation order) are already on the dirty list.
    pub indirect_listed: std::collections::BTreeMap<u32, usize>,
    /// The block allocator's cursor when its dirtied buffers were last
    /// listed (`MountedFs::alloc_cursor24`).
    pub alloc_seen: Option<u64>,
    /// Inodes a write dirtied (`mark_inode_dirty_sync` of the mtime) since
    /// kupdate's last `sync_inodes`.
    pub dirty_inodes: std::collections::BTreeSet<u32>,
}

/// kblockd's pending work (`kblockd_workqueue`), oldest first.
#[derive(Debug, Default)]
pub(crate) struct KBlockd {
    pub work: VecDeque<BlockWork>,
}

/// The file system's background zeroing of inode tables through the block
/// device's page cache (ext4's lazy inode-table initialisation of the 2008
/// patch queue): a kernel task that dirties one range at a time and is throttled
/// in `balance_dirty_pages` like any writer.
#[derive(Debug)]
pub(crate) struct LazyInit {
    pub ranges: Vec<(u64, u64)>,
    pub idx: usize,
    pub off: u64,
    pub dirtied_since: u64,
    pub throttle: Option<Throttle>,
}

impl LazyInit {
    pub fn new() -> LazyInit {
        LazyInit {
            ranges: Vec::new(),
            idx: 0,
            off: 0,
            dirtied_since: 0,
            throttle: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_threads_are_found_by_kind() {
        let mut t = Tasks::default();
        let p = t.add(TaskKind::Process(0), 1000, 0, (2, 4));
        let f = t.add(TaskKind::KernelThread(KThread::Flusher), 190, 0, (2, 4));
        let k = t.add(TaskKind::KernelThread(KThread::KBlockd), 40, 0, (2, 4));
        assert_eq!((p, f, k), (TaskId(0), TaskId(1), TaskId(2)));
        assert_eq!(t.kthread(KThread::KBlockd), k);
        assert_eq!(t.kthread(KThread::Flusher), f);
        assert_eq!(t.get(k).blocked, Blocked::No);
    }

    #[test]
    #[should_panic(expected = "KBlockd started twice")]
    fn a_kernel_thread_is_started_once() {
        let mut t = Tasks::default();
        t.add(TaskKind::KernelThread(KThread::KBlockd), 40, 0, (2, 4));
        t.add(TaskKind::KernelThread(KThread::KBlockd), 41, 0, (2, 4));
    }
}
