//! The simulation: one event loop over the machine's layers. Processes are explicit
//! state machines; the block layer, device and file system are sans-IO objects the
//! loop drives. Events are ordered by (time, insertion sequence), so a run is a pure
//! function of its configuration and seed.

use crate::machine::Machine;
use crate::stats::{ProcResult, RunResult};
use crate::task::{Bdflush24, Blocked, JournalRun, KBlockd, KThread, LazyInit, TaskKind, Tasks};
use crate::workload::{zoned_block, Dir, Engine, Pattern, ProcSpec, Target};
use iostack_block::{
    Bio, BlockOut, BlockQueue, Partition, QueueConfig, QueueEvent, RequestQueue, Submit,
};
use iostack_core::{BioOwner, DevT, EndIo, ReqFlags, TaskId, TraceSink, Tracer, Tunables};
use iostack_des::{Duration, EventQueue, Instant, Rng, Seed};
use iostack_fs::dio::{self, BioLimits, Boundary, DioPlan};
use iostack_fs::mount::MountedFs;
use iostack_fs::{GetBlock, RawBdev};
use iostack_mm::{FileRaState, Throttle, Vm, VmConfig, WbJob};

/// One completed I/O as a process saw it.
#[derive(Clone, Copy, Debug)]
pub struct IoEvent {
    pub dir: Dir,
    /// Bytes transferred and bytes asked for.
    pub bytes: u64,
    pub asked: u64,
    /// Submission latency (issue to the last bio queued), completion latency
    /// (last bio queued to completion seen) and their sum, in ns.
    pub slat_ns: u64,
    pub clat_ns: u64,
    pub lat_ns: u64,
    /// Completion time since the process started, ns.
    pub at_ns: u64,
    /// I/Os in flight when this one was issued.
    pub depth: u32,
    /// File (or device) offset of the I/O, bytes (fio's `io_u->offset`).
    pub offset: u64,
}

/// Per-I/O observer (statistics front ends); called in event order.
pub trait IoObserver: std::any::Any {
    fn io_done(&mut self, proc_index: usize, io: &IoEvent);
    /// An fsync or fdatasync of the job's `fsync=N`/`fdatasync=N` returned
    /// after `lat_ns` (fio's `DDIR_SYNC` io_u; not the final `end_fsync`).
    fn sync_done(&mut self, _proc_index: usize, _lat_ns: u64) {}
}

/// What a run hands back: results, the attached sinks, and the I/O observer.
pub type RunOutput = (
    RunResult,
    Vec<Box<dyn TraceSink>>,
    Option<Box<dyn IoObserver>>,
);

/// Everything a run depends on.
#[derive(Clone)]
pub struct SimConfig {
    pub machine: Machine,
    pub tunables: Tunables,
    pub scheduler: String,
    pub seed: Seed,
    pub procs: Vec<ProcSpec>,
    /// Run the full invariant checks after every event.
    pub checks: bool,
    /// A limit the user set (`--until`): the run stops there, its result marked
    /// truncated. Without one the run goes on until the workload ends.
    pub until: Option<Duration>,
}

pub(crate) use crate::error::SimError;

/// kblockd's pid, as the traces have always shown it.
const KBLOCKD_PID: u32 = 40;

#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    /// A task (process or kernel thread) takes its next step.
    Task(TaskId),
    /// The owner of a direct I/O whose bios all completed notices it (after
    /// its wake-up latency): `dio_bio_end_io` woke it, or aio completed the
    /// iocb.
    IoDone(BioOwner),
    /// A process's buffered read or write system call returns.
    BufDone(TaskId),
    Queue(QueueEvent),
    /// The periodic writeback wakeup (`dirty_writeback_centisecs`).
    WritebackTimer,
    /// A `congestion_wait` timed out.
    CongestionTimeout(TaskId),
    /// The journal's commit timer (`j_commit_timer`).
    CommitTimer,
}

/// One buffered read or write in progress.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BufOp {
    pub dir: Dir,
    pub map: u32,
    pub pos: u64,
    pub last: u64,
    pub offset: u64,
    pub len: u64,
    pub issue: Instant,
    /// An O_DIRECT write that met a hole, written through the page cache
    /// (`__generic_file_aio_write`'s -ENOTBLK fallback).
    pub fallback: bool,
}

/// Where a process's I/O lands.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Backing {
    /// A file of the mounted file system (inode number).
    File(u32),
    /// A raw device node: the disk or the partition.
    Raw { dev: DevT, size: u64 },
}

struct Slot {
    plan: DioPlan,
    dir: Dir,
    offset: u64,
    len: u64,
    /// 2.4's `generic_file_direct_IO` works in `KIO_MAX_ATOMIC_IO` chunks,
    /// each mapped, submitted and waited for by `brw_kiovec` before the next:
    /// where the current chunk starts (relative to `offset`), and the bytes
    /// the chunks before it moved.
    chunk_at: u64,
    chunk_bytes: u64,
    issue: Instant,
    submitted: Instant,
    bios_left: u32,
    active: bool,
    depth: u32,
    /// The offload worker submitting it (`crate::offload`; `u32::MAX`: the
    /// job's own thread).
    worker: u32,
}

pub(crate) struct Proc {
    pub(crate) spec: ProcSpec,
    /// `io_submit_mode=offload`'s submit workers.
    pub(crate) workers: Option<crate::offload::Workers>,
    pub(crate) backing: Backing,
    rng_off: Rng,
    rng_mix: Rng,
    /// fio's `bsrange_state`: the draws of `get_next_buflen`.
    rng_bs: Rng,
    /// fio's random map, one bit per block of the region.
    randmap: Vec<u64>,
    /// One bit per `randmap` word: set when the word is full.
    randmap_full: Vec<u64>,
    randmap_left: u64,
    /// fio's LFSR of the file (`random_generator=lfsr`), in place of the map.
    lfsr: Option<crate::lfsr::Lfsr>,
    /// fio's `random_state` with `random_generator=tausworthe64`.
    taus: Option<crate::taus::Taus258>,
    nblocks: u64,
    /// fio's verify log and phase (`verify=`).
    pub(crate) vlog: Option<crate::verify::VerifyLog>,
    /// `zonemode=strided`: `td->zone_bytes`, the zone's start
    /// (`f->file_offset`) relative to the job's offset, and the file's size
    /// (`f->real_file_size`) likewise.
    zone_bytes: u64,
    zone_base: u64,
    zone_limit: u64,
    /// The file is done (`get_next_offset` failed: fio marks it done).
    eof: bool,
    seq_next: u64,
    /// A rewrite's block just read, to be written back next.
    rewrite_at: Option<u64>,
    bytes_issued: u64,
    /// I/Os issued (fio's `io_blocks` + queued + in flight, as `exceeds_number_ios`).
    pub(crate) ios_issued: u64,
    pub(crate) start: Instant,
    end: Option<Instant>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    pub(crate) inflight: u32,
    submitting: Option<(u32, usize)>,
    pub(crate) result: ProcResult,
    // Buffered I/O.
    pub(crate) map: u32,
    pub(crate) buf: Option<BufOp>,
    pub(crate) ra: FileRaState,
    /// 2.4's read-ahead context of the open file (`f_raend`, `f_ramax`, ...).
    pub(crate) ra24: iostack_mm::FileRa24,
    /// 2.4: the page the reader slept on (`lock_page`, `wait_on_page`); it
    /// goes to `page_ok` without another `generic_file_readahead`.
    pub(crate) ra24_waited: Option<u64>,
    pub(crate) unplug_after: bool,
    pub(crate) throttle: Option<Throttle>,
    pub(crate) dirtied_since_check: u64,
    pub(crate) fsync: Option<WbJob>,
    pub(crate) fsync_waiting: bool,
    pub(crate) writes_since_fsync: u64,
    pub(crate) end_fsync_done: bool,
    /// fio's `zone_state`: the zone of a zoned random I/O.
    rng_zone: Rng,
    /// fio's `seq_rand_state` per direction (`percentage_random`).
    rng_seqrand: [Rng; 2],
    /// Where the last I/O of each direction ended (fio's `last_pos`), relative.
    last_end: [u64; 2],
    /// Where it started (fio's `last_start`), relative.
    last_start: [u64; 2],
    /// fio's `ddir_seq_nr` countdown (`rw=rand...:N`).
    seq_left: u32,
    /// An O_SYNC `write()` waiting for its sync before it returns.
    pub(crate) osync_op: Option<BufOp>,
    /// A fresh file's creation has been journalled.
    pub(crate) created: bool,
    /// 2.4's `generic_osync_inode` before the next direct I/O.
    pub(crate) osync24: crate::dio24::Osync24,
    /// 2.4's `ext2_sync_file` metadata step of the final fsync.
    pub(crate) fsync24: crate::dio24::Fsync24,
    /// fsync waits in the journal (commit or cache flush).
    pub(crate) jwait: bool,
    /// fsync's cache flush is in flight.
    pub(crate) jflush: bool,
    /// fsync flushes the cache once the commit it waits for is done
    /// (`ext4_sync_file`'s `needs_barrier`, 3.x and 6.x).
    pub(crate) jbarrier: bool,
    /// The fsync in progress is an fdatasync.
    pub(crate) datasync: bool,
    /// When the fsync of `fsync=N` in progress was issued (fio counts and
    /// times it; `end_fsync`'s is not).
    pub(crate) sync_issued: Option<Instant>,
    /// fio's think time and rate state.
    pub(crate) pace: crate::pace::Pace,
    /// The file was opened (`td_io_open_file`: invalidate and fadvise done).
    pub(crate) opened: bool,
    /// `FMODE_RANDOM` (2.6.34+'s `POSIX_FADV_RANDOM`): reads read what they ask.
    pub(crate) ra_random: bool,
    /// The open's cache invalidation waits for its flush job to end.
    pub(crate) invalidate_pending: bool,
    /// The task's writeback job is a `filemap_flush`: no wait at its end.
    pub(crate) fsync_nowait: bool,
    /// fio's `read_iolog` replay state.
    pub(crate) replay: crate::replay::ReplayState,
    /// fio's zipf, pareto or gauss state of the file (`f->zipf`, `f->gauss`).
    dist: Option<crate::dist::DistState>,
    rng_dist: Rng,
    /// A job with several files (fio's `nrfiles`): the files and fio's
    /// choice among them; the fields above hold the current file's state.
    pub(crate) files: Option<Box<crate::files::Files<FileCur>>>,
    /// fio's `td->terminate`: another job's end (`exitall`) stops this one.
    pub(crate) terminate: bool,
    /// `check_min_rate`'s state.
    pub(crate) minrate: crate::minrate::MinRateState,
    /// fio's `td->flow_counter` (`crate::flow`).
    pub(crate) flow: crate::flow::FlowState,
    /// The sync in progress is a direct write's fallback
    /// (`filemap_write_and_wait_range`, no `->fsync`).
    pub(crate) fallback_sync: bool,
}

/// What fio keeps per file (`struct fio_file`) of a job with several files:
/// the process's fields for its current file, parked here while another
/// file is current ([`Proc::swap_file`]).
pub(crate) struct FileCur {
    pub(crate) backing: Backing,
    map: u32,
    randmap: Vec<u64>,
    randmap_full: Vec<u64>,
    randmap_left: u64,
    lfsr: Option<crate::lfsr::Lfsr>,
    seq_next: u64,
    last_end: [u64; 2],
    last_start: [u64; 2],
    ra: FileRaState,
    ra24: iostack_mm::FileRa24,
    ra_random: bool,
    dist: Option<crate::dist::DistState>,
    opened: bool,
    created: bool,
}

impl Proc {
    /// Make file `k` of the job's files the current one: the current file's
    /// state is parked in its slot and `k`'s taken from its own.
    pub(crate) fn swap_file(&mut self, k: usize) {
        let Some(mut files) = self.files.take() else {
            return;
        };
        let cur = files.cur;
        self.swap_cur(&mut files.list[cur].state);
        self.swap_cur(&mut files.list[k].state);
        files.cur = k;
        self.files = Some(files);
    }

    fn swap_cur(&mut self, f: &mut FileCur) {
        use std::mem::swap;
        swap(&mut self.backing, &mut f.backing);
        swap(&mut self.map, &mut f.map);
        swap(&mut self.randmap, &mut f.randmap);
        swap(&mut self.randmap_full, &mut f.randmap_full);
        swap(&mut self.randmap_left, &mut f.randmap_left);
        swap(&mut self.lfsr, &mut f.lfsr);
        swap(&mut self.seq_next, &mut f.seq_next);
        swap(&mut self.last_end, &mut f.last_end);
        swap(&mut self.last_start, &mut f.last_start);
        swap(&mut self.ra, &mut f.ra);
        swap(&mut self.ra24, &mut f.ra24);
        swap(&mut self.ra_random, &mut f.ra_random);
        swap(&mut self.dist, &mut f.dist);
        swap(&mut self.opened, &mut f.opened);
        swap(&mut self.created, &mut f.created);
    }

    /// Every file of the process and its path: the current one and the
    /// parked ones.
    pub(crate) fn all_files(&self) -> Vec<(Backing, &str)> {
        let path = match &self.spec.target {
            Target::File { path, .. } | Target::Device { path } | Target::Diskless { path } => {
                path.as_str()
            }
        };
        match &self.files {
            None => vec![(self.backing, path)],
            Some(f) => f
                .list
                .iter()
                .enumerate()
                .map(|(k, jf)| {
                    let b = if k == f.cur {
                        self.backing
                    } else {
                        jf.state.backing
                    };
                    (b, jf.path.as_str())
                })
                .collect(),
        }
    }

    /// The inodes of the process's files (its raw devices left out).
    pub(crate) fn file_inos(&self) -> Vec<u32> {
        self.all_files()
            .iter()
            .filter_map(|f| match f.0 {
                Backing::File(ino) => Some(ino),
                Backing::Raw { .. } => None,
            })
            .collect()
    }

    /// A parked state for one more file of this process: fresh, as the
    /// process's own was at setup.
    fn fresh_file(
        &self,
        backing: Backing,
        map: u32,
        dist: Option<crate::dist::DistState>,
    ) -> FileCur {
        FileCur {
            backing,
            map,
            randmap: vec![0; self.randmap.len()],
            randmap_full: vec![0; self.randmap_full.len()],
            randmap_left: self.nblocks,
            // fio's lfsr_init per file, each from the job's one seed.
            lfsr: self.lfsr.as_ref().map(crate::lfsr::Lfsr::fresh),
            seq_next: 0,
            last_end: [0, 0],
            last_start: [0, 0],
            ra: self.ra,
            ra24: Default::default(),
            ra_random: false,
            dist,
            opened: false,
            created: false,
        }
    }
}

pub struct Simulation {
    pub(crate) cfg: SimConfig,
    pub(crate) evq: EventQueue<Ev>,
    /// The block layer, behind its era-independent interface.
    pub(crate) queue: Box<dyn BlockQueue>,
    pub(crate) fs: Box<dyn MountedFs>,
    raw: RawBdev,
    pub(crate) procs: Vec<Proc>,
    /// Every task: process `i` is `TaskId(i)`, the kernel threads follow.
    pub(crate) tasks: Tasks,
    pub(crate) tracer: Tracer,
    pub(crate) out: BlockOut,
    /// The task whose step (or completion) is being run, for
    /// `schedule_task` and `charge_blk_cpu`.
    cur_task: Option<TaskId>,
    boundary: Boundary,
    write_flags: ReqFlags,
    pub(crate) bio_limits: BioLimits,
    events: u64,
    observer: Option<Box<dyn IoObserver>>,
    pub(crate) vm: Vm,
    pub(crate) lazy: LazyInit,
    startq: crate::startq::StartQueue,
    pub(crate) kblockd: KBlockd,
    /// 2.4's bdflush and kupdated (`crate::bdflush`).
    pub(crate) bd24: Bdflush24,
    /// The file system's journal, when it runs one (ext3).
    pub(crate) jbd: Option<JournalRun>,
    /// fio's shared flow counters (`crate::flow`).
    pub(crate) flows: crate::flow::Flows,
    /// Set-up only: the files write-only jobs created afresh, with the
    /// stonewall phase of the job (`setup_procs`, `file_backing`).
    fresh_files: Vec<(String, usize)>,
    setup_phase: usize,
    /// XFS's log, when the file system is XFS (`crate::xfslog`).
    pub(crate) xlog: Option<crate::xfslog::XlogRun>,
}

/// Every tunable table of the stack.
/// The page-cache and writeback configuration of a run.
fn vm_config(m: &Machine, t: &Tunables) -> VmConfig {
    use iostack_core::Profile;
    let page = iostack_mm::PAGE_SIZE;
    let mem_pages = m.mem_bytes / page;
    let dirtyable = mem_pages.saturating_sub(m.mem_unavailable_bytes / page);
    let dc = iostack_mm::DirtyConfig {
        dirty_ratio: t.get_u64("vm/dirty_ratio"),
        dirty_background_ratio: t.get_u64("vm/dirty_background_ratio"),
        dirty_bytes: t.get_u64("vm/dirty_bytes"),
        dirty_background_bytes: t.get_u64("vm/dirty_background_bytes"),
    };
    let v2628 = t.profile() <= Profile::V2_6_28;
    VmConfig {
        flusher_only_index: t.get_enum("vm/writeback_index") == "flusher-only",
        io_less: t.get_enum("vm/throttle") == "io-less",
        pdflush: t.get_enum("vm/flusher") == "pdflush",
        write_locked_inodes: t.get_bool("vm/write_locked_inodes"),
        ext4_index_pages_written: t.get_enum("fs/ext4/da_writeback_index") == "pages-written",
        wcp_break: !v2628,
        expire: Duration(t.get_u64("vm/dirty_expire_centisecs") * 10_000_000),
        interval: Duration(t.get_u64("vm/dirty_writeback_centisecs") * 10_000_000),
        ra_pages: t.get_u64("queue/read_ahead_kb") / 4,
        max_readahead24: t.get_u64("queue/max_readahead"),
        copy_page_ns: m.cpu_copy_page_ns,
        wb_page_ns: m.cpu_wb_page_ns,
        mem_pages,
        limits: iostack_mm::writeback::dirty_limits(dc, dirtyable, v2628),
        ratelimit: iostack_mm::writeback::ratelimit_pages(mem_pages, m.cpus as u64),
        v2632_chunk: !v2628,
        bdflush: (t.profile() == Profile::V2_4).then(|| bdflush_config(m, t, dirtyable)),
    }
}

/// Each kernel's read-ahead maximum is its own knob: 2.4's per-device
/// `max_readahead` (`queue/max_readahead`, read by `readahead24.rs`), 2.6's
/// `queue/read_ahead_kb` (`bdi->ra_pages`); the other one set is refused.
fn readahead_knob(t: &Tunables) -> Result<(), SimError> {
    let v24 = t.profile() == iostack_core::Profile::V2_4;
    let set = t.overridden();
    let (name, why) = if v24 {
        ("queue/read_ahead_kb", "2.4 has no read_ahead_kb; its read-ahead maximum is the device's max_readahead (queue/max_readahead, pages)")
    } else {
        (
            "queue/max_readahead",
            "max_readahead[] is 2.4's; this kernel's read-ahead maximum is queue/read_ahead_kb",
        )
    };
    if set.contains(&name) {
        return Err(SimError(format!("{name}: kernel {}: {why}", t.profile())));
    }
    Ok(())
}

/// 2.4's `/proc/sys/vm/bdflush` for a machine. `nr_free_buffer_pages()` of
/// 2.4.4 (`mm/page_alloc.c`) is free + inactive-clean + inactive-dirty pages
/// (plus a sixteenth of the active ones, at least `freepages.high +
/// inactive_target`): all the memory the page cache may take, which is the
/// dirtyable memory the 2.6 limits are taken of here too.
fn bdflush_config(m: &Machine, t: &Tunables, dirtyable: u64) -> iostack_mm::BdflushConfig {
    let cs = |name| Duration(t.get_u64(name) * 10_000_000);
    iostack_mm::BdflushConfig {
        nfract: t.get_u64("vm/bdflush/nfract"),
        ndirty: t.get_u64("vm/bdflush/ndirty"),
        nfract_sync: t.get_u64("vm/bdflush/nfract_sync"),
        interval: cs("vm/bdflush/interval"),
        age_buffer: cs("vm/bdflush/age_buffer"),
        buffers_per_page: (iostack_mm::PAGE_SIZE / m.fs_block_size.max(1) as u64).max(1),
        buffer_pages: dirtyable,
    }
}

pub fn tunable_tables() -> Vec<&'static [iostack_core::TunableDef]> {
    let mut v: Vec<&'static [iostack_core::TunableDef]> = vec![
        iostack_block::TUNABLES,
        iostack_fs::TUNABLES,
        iostack_mm::TUNABLES,
    ];
    v.extend(iostack_iosched::tunable_tables());
    v
}

/// Whether the mounted file system's direct writes allocate holes, by kernel
/// (see `DioHoles`).
fn dio_holes(cfg: &SimConfig) -> dio::DioHoles {
    use crate::machine::FsKind;
    match cfg.machine.fs {
        FsKind::Xfs => dio::DioHoles::Allocate,
        FsKind::Ext4 if cfg.tunables.profile() >= iostack_core::Profile::V2_6_32 => {
            dio::DioHoles::Ext4DioWrite
        }
        _ => dio::DioHoles::SkipHoles,
    }
}

/// Flags of an O_DIRECT write for the `dio/write_flags` variant, as each kernel's
/// macros define them (`include/linux/fs.h`).
fn dio_write_flags(name: &str, t: &Tunables) -> ReqFlags {
    let noidle_exists = t.profile() >= iostack_core::Profile::V2_6_32; // REQ_NOIDLE: 2.6.30
                                                                       // 6.x: dio_bio_write_op and iomap_dio_bio_opflags add REQ_IDLE.
    let w = if t.profile().single_queue() {
        ReqFlags::WRITE
    } else {
        ReqFlags::WRITE | ReqFlags::IDLE
    };
    match name {
        "WRITE_SYNC" if noidle_exists => w | ReqFlags::SYNC | ReqFlags::NOIDLE | ReqFlags::UNPLUG,
        "WRITE_SYNC" => w | ReqFlags::SYNC | ReqFlags::UNPLUG,
        "WRITE_ODIRECT" => w | ReqFlags::SYNC | ReqFlags::UNPLUG,
        "WRITE_SYNC_PLUG" => w | ReqFlags::SYNC | ReqFlags::NOIDLE,
        "WRITE_ODIRECT_PLUG" => w | ReqFlags::SYNC,
        _ => panic!("unknown dio/write_flags {name}"),
    }
}

/// The profile's block layer over the device: 2.4's `ll_rw_blk` with its
/// `elevator_t`, the 2.6.28-2.6.38 single queue, or blk-mq for 6.x
/// (`queue/nr_requests` as the kernel sizes it unless set).
fn build_queue(
    cfg: &SimConfig,
    qcfg: &QueueConfig,
    dev: Box<dyn iostack_device::Device>,
) -> Result<Box<dyn BlockQueue>, SimError> {
    let t = &cfg.tunables;
    let wbt_set = t.overridden().contains(&"queue/wbt_lat_usec");
    if wbt_set && t.profile().single_queue() {
        return Err(SimError(format!(
            "queue/wbt_lat_usec: profile {} has no writeback throttling \
             (blk-wbt is blk-mq's, 4.10+)",
            t.profile()
        )));
    }
    if t.profile() == iostack_core::Profile::V2_4 {
        let elevator = iostack_iosched::by_name_24(&cfg.scheduler, t).map_err(SimError)?;
        let m = &cfg.machine;
        let hw = dev.hw_limits().max_hw_sectors;
        let l24 = iostack_block::Ll24Config {
            disk: qcfg.disk,
            partitions: qcfg.partitions.clone(),
            max_sectors: hw.min(iostack_block::ll_rw_blk::IDE_MAX_SECTORS_24),
            nr_requests: iostack_block::Ll24Config::nr_requests_for_ram(m.mem_bytes),
            bh_sectors: m.fs_block_size / 512,
            irq_cpu: qcfg.irq_cpu,
            trace_mask: qcfg.trace_mask,
            elevator,
            lvm: m.lvm.map(|l| {
                let pv_sectors = qcfg
                    .partitions
                    .first()
                    .map_or(dev.capacity_sectors(), |p| p.nr_sects);
                let lv = DevT::new(crate::machine::LVM_BLK_MAJOR, 0);
                iostack_block::LvmLinear::whole_pv(
                    lv,
                    m.pv_dev(),
                    l.pe_sectors,
                    l.pe_start,
                    pv_sectors,
                )
            }),
        };
        return Ok(Box::new(iostack_block::Ll24Queue::new(l24, dev)));
    }
    if t.profile().single_queue() {
        let elv = iostack_iosched::by_name(&cfg.scheduler, t).map_err(SimError)?;
        return Ok(Box::new(RequestQueue::new(qcfg.clone(), elv, dev)));
    }
    let elv = iostack_iosched::mq_by_name(&cfg.scheduler, t).map_err(SimError)?;
    let set = t.overridden().contains(&"queue/nr_requests");
    let nr = set.then(|| t.get_u64("queue/nr_requests") as u32);
    let mut mcfg = iostack_block::MqConfig::from_queue_config(qcfg, cfg.machine.cpus, nr);
    mcfg.wbt_lat_usec = wbt_set.then(|| t.get("queue/wbt_lat_usec"));
    Ok(Box::new(iostack_block::MqQueue::new(mcfg, elv, dev)))
}

impl Simulation {
    pub fn new(cfg: SimConfig) -> Result<Simulation, SimError> {
        let m = &cfg.machine;
        let t = &cfg.tunables;
        let dev = m.device.build(Rng::stream(cfg.seed, "device"));
        let cap = dev.capacity_sectors();
        let mut parts = Vec::new();
        let (fs_start, fs_sectors) = match m.partition {
            Some((minor, start)) => {
                if start >= cap {
                    return Err(SimError(format!(
                        "partition start {start} is beyond the disk ({cap} sectors)"
                    )));
                }
                parts.push(Partition {
                    dev: DevT::new(m.disk.major, minor),
                    start,
                    nr_sects: cap - start,
                });
                (start, cap - start)
            }
            None => (0, cap),
        };
        let _ = fs_start;
        let fs_sectors = match m.lvm {
            None => fs_sectors,
            Some(_) if t.profile() != iostack_core::Profile::V2_4 => {
                return Err(SimError(format!(
                    "lvm = linear is 2.4's LVM1 (lvm.c); kernel {} would need \
                     device-mapper, which is not modelled",
                    t.profile()
                )));
            }
            Some(l) => {
                let n = fs_sectors.saturating_sub(l.pe_start) / l.pe_sectors;
                if n == 0 {
                    return Err(SimError(
                        "lvm: the physical volume holds no whole extent".into(),
                    ));
                }
                n * l.pe_sectors
            }
        };
        let mut qcfg = QueueConfig::from_tunables(t, m.disk, parts, &*dev);
        qcfg.irq_cpu = m.irq_cpu;
        let mut queue = build_queue(&cfg, &qcfg, dev)?;
        queue.set_checks(cfg.checks);
        let fs = crate::fsys::build(m, t, fs_sectors, cfg.seed)?;
        let jbd = crate::jbd::build(&*fs, t)?;
        let xlog = crate::xfslog::build(&*fs, m, t)?;
        let mut tracer = Tracer::new();
        tracer.process(0, "<idle>");
        tracer.process(KBLOCKD_PID, &format!("kblockd/{}", m.irq_cpu));
        let vm_cfg = vm_config(m, t);
        let flusher_pid = 190;
        if vm_cfg.pdflush {
            tracer.process(flusher_pid, "pdflush");
        } else {
            let d = m.fs_dev();
            tracer.process(flusher_pid, &format!("flush-{}:{}", d.major, m.disk.minor));
        }
        let vm = Vm::new(vm_cfg);
        readahead_knob(t)?;
        if t.get_enum("dio/flush24") != "data" && t.profile() != iostack_core::Profile::V2_4 {
            return Err(SimError(format!(
                "dio/flush24={} is 2.4's generic_file_direct_IO; kernel {} has no such step",
                t.get_enum("dio/flush24"),
                t.profile()
            )));
        }
        let boundary = Boundary::from_name(t.get_enum("dio/boundary"));
        let write_flags = dio_write_flags(t.get_enum("dio/write_flags"), t);
        let bio_limits = BioLimits {
            // 2.4's brw_kiovec submits one buffer head per file-system block.
            max_sectors: if t.profile() == iostack_core::Profile::V2_4 {
                m.fs_block_size / 512
            } else {
                qcfg.limits.max_sectors
            },
            max_segments: qcfg.limits.max_segments,
        };
        let mut sim = Simulation {
            evq: EventQueue::new(),
            queue,
            fs,
            raw: RawBdev::new(cap * 512, 12),
            procs: Vec::new(),
            tasks: Tasks::default(),
            tracer,
            out: BlockOut::default(),
            cur_task: None,
            boundary,
            write_flags,
            bio_limits,
            events: 0,
            observer: None,
            vm,
            lazy: LazyInit::new(),
            startq: Default::default(),
            kblockd: KBlockd::default(),
            bd24: Bdflush24::default(),
            jbd,
            flows: crate::flow::Flows::new(cfg.procs.iter().map(|p| &p.flow)),
            fresh_files: Vec::new(),
            setup_phase: 0,
            xlog,
            cfg,
        };
        sim.setup_procs()?;
        // The kernel threads, after the processes (process i is task i).
        let irq_cpu = sim.cfg.machine.irq_cpu;
        let kthread = TaskKind::KernelThread;
        sim.tasks
            .add(kthread(KThread::Flusher), flusher_pid, irq_cpu, (2, 4));
        sim.tasks
            .add(kthread(KThread::LazyInit), flusher_pid + 1, irq_cpu, (2, 4));
        let kblockd = sim
            .tasks
            .add(kthread(KThread::KBlockd), KBLOCKD_PID, irq_cpu, (2, 4));
        let ctx = sim.tasks.get(kblockd).ctx();
        sim.queue.set_kblockd(ctx);
        sim.start_bdflush24();
        if let Some(j) = &sim.jbd {
            let pid = crate::jbd::KJOURNALD_PID;
            let name = crate::jbd::thread_name(j, &sim.cfg.machine);
            sim.tasks
                .add(kthread(KThread::Kjournald), pid, irq_cpu, (2, 4));
            sim.tracer.process(pid, &name);
        }
        sim.mount_dirty(Instant::ZERO);
        let buffered = sim
            .procs
            .iter()
            .any(|p| !p.spec.direct && p.spec.io_size > 0);
        let interval = sim.writeback_interval();
        // 2.4's kupdated loops from boot, direct I/O or not (its dirty
        // buffers include the metadata a direct write allocates).
        let kupdated = sim.vm.buffers.is_some();
        if interval.0 > 0 && (buffered || kupdated || sim.vm.nr_dirty > 0) {
            let at = Instant::ZERO + interval;
            sim.evq.schedule(at, Ev::WritebackTimer);
        }
        Ok(sim)
    }

    /// Observe every completed I/O (at most one observer).
    pub fn observe(&mut self, o: Box<dyn IoObserver>) {
        self.observer = Some(o);
    }

    /// Put a note in the trace before the run (a blktrace message, `m N` in
    /// blkparse), e.g. the seed and configuration hash.
    pub fn note(&mut self, text: &str) {
        let disk = self.cfg.machine.disk;
        self.tracer
            .message(Instant::ZERO, disk, 0, 0, text.to_string());
        if self.cfg.tunables.profile() == iostack_core::Profile::V2_4 {
            // There was no blktrace in 2.4: say where the events come from.
            let note = "2.4 has no blktrace: events are emitted at the points 2.6 traces them";
            self.tracer
                .message(Instant::ZERO, disk, 0, 0, note.to_string());
        }
    }

    /// Attach an output to the event stream.
    pub fn attach(&mut self, sink: Box<dyn TraceSink>) {
        self.tracer.attach(sink);
    }

    /// Files are laid out before the run, in process order (fio's layout phase).
    /// The file `path` of process `spec`: found, created empty (a fresh
    /// file) or laid out; with the bytes laid out when it was made.
    /// A job that reads a file which a write-only job of its stonewall phase
    /// created afresh, shorter than the reader's region: fio's
    /// `setup_files` (create_serialize) would lay the file out for the
    /// reader before either runs (`extend_file`: unlink, create, write it
    /// whole) and the writer would then write into the laid-out file; one
    /// job's layout under another's new file is not modelled, so it is
    /// refused rather than read past its end.
    fn check_not_laid_out_under_writer(
        &mut self,
        spec: &ProcSpec,
        path: &str,
        name: &str,
        ino: u32,
        need: u64,
    ) -> Result<(), SimError> {
        let made_here = self
            .fresh_files
            .iter()
            .any(|(n, phase)| n == name && *phase == self.setup_phase);
        // A job started after another's end (`after`: fio's wait_for,
        // Bonnie's tests in turn) finds the file as that one left it.
        let beside = spec.after.is_none();
        if spec.read_pct == 0 || !beside || !made_here || self.fs.get_block().i_size(ino) >= need {
            return Ok(());
        }
        Err(SimError(format!(
            "{}: {path}: this job reads the file a write-only job running beside it \
             creates afresh; fio would lay it out for this job first (extend_file) and \
             the writer would write into it, which is not modelled (give the reader \
             its own file, or put it after a stonewall)",
            spec.comm
        )))
    }

    fn file_backing(
        &mut self,
        spec: &ProcSpec,
        path: &str,
        size: u64,
        goal: Option<u64>,
        m: &Machine,
    ) -> Result<(Backing, Option<u64>), SimError> {
        let name = path
            .strip_prefix(&format!("{}/", m.mount))
            .unwrap_or(path)
            .to_string();
        let need = spec.offset.saturating_add(spec.region);
        let ino = match self.fs.lookup(&name) {
            Some(ino) if !spec.fresh => {
                self.check_not_laid_out_under_writer(spec, path, &name, ino, need)?;
                ino
            }
            // fio's setup_files (all jobs', in order, before any runs:
            // create_serialize): a file an earlier job made long enough
            // needs no extend_file, so a write job does not unlink it.
            Some(ino) if spec.more_files.is_empty() && self.fs.get_block().i_size(ino) >= need => {
                ino
            }
            Some(_) => {
                return Err(SimError(format!(
                    "{}: {path}: a write job creates its file afresh, but \
                     another job already uses it",
                    spec.comm
                )))
            }
            None if spec.fresh => {
                let ino = self
                    .fs
                    .create(&name)
                    .map_err(|e| SimError(format!("creating {path}: {e}")))?;
                self.fresh_files.push((name, self.setup_phase));
                return Ok((Backing::File(ino), Some(size)));
            }
            None if size == 0 && spec.io_size > 0 => {
                return Err(SimError(format!(
                    "{}: {path}: No such file or directory (lay it out first, \
                     e.g. --layout {path}=64M)",
                    spec.comm
                )))
            }
            None => {
                let ino = self
                    .fs
                    .layout(&name, size, goal)
                    .map_err(|e| SimError(format!("laying out {path}: {e}")))?;
                return Ok((Backing::File(ino), Some(size)));
            }
        };
        Ok((Backing::File(ino), None))
    }

    /// fio's `nrfiles` > 1: the process's other files, each made as its
    /// first was, parked with a fresh state.
    fn setup_more_files(&mut self, i: usize, label: &str) -> Result<(), SimError> {
        let m = self.cfg.machine.clone();
        let spec = self.procs[i].spec.clone();
        if spec.more_files.is_empty() {
            return Ok(());
        }
        let seed = self.proc_seed(&spec);
        let first = self.procs[i].all_files()[0].1.to_string();
        let blank = self.procs[i].fresh_file(self.procs[i].backing, 0, None);
        let mut list = vec![crate::files::JobFile::new(first, blank)];
        for (k, t) in spec.more_files.iter().enumerate() {
            let (backing, path, made) = match t {
                Target::File { path, size, goal } => {
                    let (b, made) = self.file_backing(&spec, path, *size, *goal, &m)?;
                    (b, path.clone(), made)
                }
                Target::Diskless { path } => {
                    let raw = Backing::Raw {
                        dev: m.disk,
                        size: spec.offset.saturating_add(spec.region),
                    };
                    (raw, path.clone(), None)
                }
                Target::Device { path } => {
                    return Err(SimError(format!("{path}: several devices per job")))
                }
            };
            let map = match backing {
                Backing::File(ino) => {
                    let size = self.fs.get_block().i_size(ino);
                    self.vm.map_of(ino, size.div_ceil(iostack_mm::PAGE_SIZE))
                }
                Backing::Raw { .. } => 0,
            };
            let dist = spec.dist.as_ref().map(|d| {
                // init_rand_distribution: ranges of the smallest `min_bs`.
                let varied = spec.varies(Dir::Read) || spec.varies(Dir::Write);
                let bs_min = if varied {
                    spec.bs_range[0].0.min(spec.bs_range[1].0)
                } else {
                    spec.bs[0].min(spec.bs[1])
                }
                .max(1);
                let nranges = spec.region.div_ceil(bs_min);
                let mut rng = Rng::stream(seed, &format!("{label}/file{}/dist", k + 1));
                crate::dist::DistState::new(d, nranges, &mut rng)
            });
            let p = &mut self.procs[i];
            let state = p.fresh_file(backing, map, dist);
            if let (Some(a), Some(b)) = (p.result.laid_out, made) {
                p.result.laid_out = Some(a + b);
            }
            list.push(crate::files::JobFile::new(path, state));
        }
        let rng = Rng::stream(seed, &format!("{label}/file"));
        self.procs[i].files = Some(Box::new(crate::files::Files::new(
            list,
            spec.file_service,
            rng,
        )));
        Ok(())
    }

    /// The seed of a process's random streams (fio's `randrepeat`,
    /// `randseed`).
    fn proc_seed(&self, spec: &ProcSpec) -> Seed {
        match spec.randseed {
            crate::workload::RandSeed::Repeat => self.cfg.seed,
            crate::workload::RandSeed::Fresh => {
                Seed(Rng::stream(self.cfg.seed, "randrepeat=0").next_u64())
            }
            crate::workload::RandSeed::Fixed(n) => Seed(n),
        }
    }

    /// A random process's LFSR (`random_generator=lfsr`) over the `nblocks`
    /// of its file (fio's `init_random_map`): from the job's seed, or one
    /// drawn from the process's streams.
    fn lfsr_of(
        &self,
        spec: &ProcSpec,
        seed: Seed,
        label: &str,
        nblocks: u64,
    ) -> Result<Option<crate::lfsr::Lfsr>, SimError> {
        let crate::workload::RandGen::Lfsr(s) = spec.rand_gen else {
            return Ok(None);
        };
        if !matches!(spec.pattern, Pattern::Random { .. }) {
            return Ok(None);
        }
        // zonemode=strided: init_random_map's blocks are the zone's.
        let bs = spec.bs[0].min(spec.bs[1]).max(1);
        let nblocks = spec.strided.map_or(nblocks, |z| (z.range / bs).max(1));
        let s = s.unwrap_or_else(|| Rng::stream(seed, &format!("{label}/lfsr")).next_u64());
        crate::lfsr::Lfsr::new(nblocks, s).map(Some).ok_or_else(|| {
            SimError(format!(
                "job {}: fio: failed initializing LFSR ({nblocks} blocks, seed {s:#x})",
                spec.name
            ))
        })
    }

    fn setup_procs(&mut self) -> Result<(), SimError> {
        let specs = self.cfg.procs.clone();
        let m = self.cfg.machine.clone();
        let mut next_pid = 1000u32;
        for (i, spec) in specs.into_iter().enumerate() {
            self.setup_phase += usize::from(spec.stonewall);
            let mut laid_out = None;
            let mut reused = false;
            let backing = match &spec.target {
                Target::File { path, size, goal } => {
                    let (backing, made) = self.file_backing(&spec, path, *size, *goal, &m)?;
                    laid_out = made;
                    // A write job's file found made: no creation to journal.
                    reused = spec.fresh && made.is_none();
                    backing
                }
                // Nothing is read or written: a raw backing the size of the
                // region, never mapped (direct) nor built into bios.
                Target::Diskless { .. } => Backing::Raw {
                    dev: m.disk,
                    size: spec.offset.saturating_add(spec.region),
                },
                Target::Device { path } => {
                    let disk = format!("/dev/{}", m.disk_name);
                    let part = m.part_name().map(|p| format!("/dev/{p}"));
                    let cap = self.queue.device().capacity_sectors() * 512;
                    if *path == disk {
                        Backing::Raw {
                            dev: m.disk,
                            size: cap,
                        }
                    } else if Some(path) == part.as_ref() {
                        let (minor, start) = m.partition.expect("has partition");
                        Backing::Raw {
                            dev: DevT::new(m.disk.major, minor),
                            size: cap - start * 512,
                        }
                    } else {
                        return Err(SimError(format!(
                            "'{path}' is not a device of machine '{}' (it has {disk}{})",
                            m.name,
                            part.map(|p| format!(" and {p}")).unwrap_or_default()
                        )));
                    }
                }
            };
            let size = match backing {
                Backing::File(ino) => self.fs.get_block().i_size(ino),
                Backing::Raw { size, .. } => size,
            };
            if matches!(spec.target, Target::Device { .. })
                && spec.offset.saturating_add(spec.region) > size
                && spec.io_size > 0
            {
                return Err(SimError(format!(
                    "job {}: offset {} + size {} runs past the end of {} ({} bytes)",
                    spec.name,
                    spec.offset,
                    spec.region,
                    match &spec.target {
                        Target::Device { path } | Target::Diskless { path } => path.as_str(),
                        Target::File { path, .. } => path.as_str(),
                    },
                    size
                )));
            }
            if spec.offset >= size.max(1) && !matches!(spec.target, Target::File { .. }) {
                return Err(SimError(format!(
                    "job {}: offset {} is beyond the end of {} bytes",
                    spec.name, spec.offset, size
                )));
            }
            let mut spec = spec;
            if spec.io_size == u64::MAX {
                // Until end of file (dd without count=).
                spec.io_size = size.saturating_sub(spec.offset);
                spec.region = spec.io_size;
            }
            // init_random_map: blocks of the smallest size the job issues
            // (fio's `rw_min_bs`, a varied direction's minimum).
            let varied = spec.varies(Dir::Read) || spec.varies(Dir::Write);
            let bs_min = if varied {
                spec.bs_range[0].0.min(spec.bs_range[1].0)
            } else {
                spec.bs[0].min(spec.bs[1])
            }
            .max(1);
            let nblocks = (spec.region / bs_min).max(1);
            let pid = spec.pid.unwrap_or_else(|| {
                next_pid += 1;
                next_pid - 1
            });
            let cpu = spec.cpu.unwrap_or((i as u32) % m.cpus) % m.cpus;
            let label = format!("proc/{}/{}", spec.name, i);
            let seed = self.proc_seed(&spec);
            let randmap = match spec.pattern {
                Pattern::Random { norandommap: false } => vec![0u64; nblocks.div_ceil(64) as usize],
                _ => Vec::new(),
            };
            self.tracer.process(pid, &spec.comm);
            // rate_submit_init: iodepth workers, threads made after the
            // job's process.
            let workers = spec.offload.then(|| {
                let w = crate::offload::Workers::new(next_pid, spec.iodepth);
                next_pid += w.pids().len() as u32;
                w
            });
            for &wp in workers.iter().flat_map(|w| w.pids()) {
                self.tracer.process(wp, &spec.comm);
            }
            let depth = match spec.engine {
                Engine::Sync => 1,
                Engine::Async => spec.iodepth.max(1),
            };
            let mut result = ProcResult::new(&spec, pid);
            result.iodepth = depth;
            result.laid_out = laid_out;
            let task = self
                .tasks
                .add(TaskKind::Process(i as u32), pid, cpu, spec.ioprio);
            debug_assert_eq!(task, TaskId(i as u32));
            self.procs.push(Proc {
                workers,
                backing,
                rng_off: Rng::stream(seed, &format!("{label}/offset")),
                rng_mix: Rng::stream(seed, &format!("{label}/rwmix")),
                rng_bs: Rng::stream(seed, &format!("{label}/bs")),
                randmap_full: vec![0u64; randmap.len().div_ceil(64)],
                randmap,
                randmap_left: nblocks,
                lfsr: self.lfsr_of(&spec, seed, &label, nblocks)?,
                taus: match spec.rand_gen {
                    crate::workload::RandGen::Tausworthe64(s) => {
                        Some(crate::taus::Taus258::new(s.unwrap_or_else(|| {
                            Rng::stream(seed, &format!("{label}/taus")).next_u64()
                        })))
                    }
                    _ => None,
                },
                nblocks,
                vlog: spec.verify.as_ref().map(crate::verify::VerifyLog::new),
                zone_bytes: 0,
                zone_base: 0,
                zone_limit: size.max(spec.offset.saturating_add(spec.region)) - spec.offset,
                eof: false,
                seq_next: 0,
                rewrite_at: None,
                bytes_issued: 0,
                ios_issued: 0,
                start: Instant::ZERO,
                end: None,
                slots: Vec::with_capacity(depth as usize),
                free: Vec::new(),
                inflight: 0,
                submitting: None,
                result,
                map: 0,
                buf: None,
                ra: FileRaState::new(self.vm.cfg.ra_pages),
                ra24: Default::default(),
                ra24_waited: None,
                unplug_after: false,
                throttle: None,
                dirtied_since_check: 0,
                fsync: None,
                fsync_waiting: false,
                writes_since_fsync: 0,
                end_fsync_done: false,
                rng_zone: Rng::stream(seed, &format!("{label}/zone")),
                rng_seqrand: [
                    Rng::stream(seed, &format!("{label}/seqrand/read")),
                    Rng::stream(seed, &format!("{label}/seqrand/write")),
                ],
                last_end: [0, 0],
                last_start: [0, 0],
                seq_left: spec.seq_nr,
                osync_op: None,
                created: reused,
                osync24: Default::default(),
                fsync24: Default::default(),
                jwait: false,
                jflush: false,
                jbarrier: false,
                datasync: false,
                sync_issued: None,
                pace: {
                    let mut rng = Rng::stream(seed, &format!("{label}/poisson"));
                    crate::pace::Pace::new(spec.poisson_seeds, move || rng.next_u64())
                },
                opened: false,
                ra_random: false,
                invalidate_pending: false,
                fsync_nowait: false,
                replay: Default::default(),
                dist: spec.dist.as_ref().map(|d| {
                    // __init_rand_distribution: ranges of the smaller block
                    // size over the file, drawn from the file's own state.
                    let nranges = spec.region.div_ceil(bs_min);
                    let mut rng = Rng::stream(seed, &format!("{label}/dist"));
                    crate::dist::DistState::new(d, nranges, &mut rng)
                }),
                rng_dist: Rng::stream(seed, &format!("{label}/dist/draw")),
                files: None,
                terminate: false,
                minrate: Default::default(),
                flow: Default::default(),
                fallback_sync: false,
                spec,
            });
            let map = match backing {
                Backing::File(ino) => {
                    let size = self.fs.get_block().i_size(ino);
                    self.vm.map_of(ino, size.div_ceil(iostack_mm::PAGE_SIZE))
                }
                // Buffered I/O on a device node goes through its own page cache.
                Backing::Raw { dev, size } if !self.procs.last().unwrap().spec.direct => {
                    self.bdev_map(dev, size)
                }
                Backing::Raw { .. } => 0,
            };
            self.procs.last_mut().unwrap().map = map;
            self.setup_more_files(i, &label)?;
        }
        Ok(())
    }

    /// Run until every process is done; returns the results.
    pub fn run(self) -> (RunResult, Vec<Box<dyn TraceSink>>) {
        let (r, s, _) = self.run_observed();
        (r, s)
    }

    /// Run, and hand back the I/O observer too.
    pub fn run_observed(mut self) -> RunOutput {
        self.start_ready_procs(Instant::ZERO, None);
        let limit = self.cfg.until.map(|d| Instant::ZERO + d);
        let mut until_hit = None;
        let mut last_work = Instant::ZERO;
        let mut vm_stats = crate::stats::VmStats {
            dirty_limit: self.vm.cfg.limits.dirty,
            background_limit: self.vm.cfg.limits.background,
            ratelimit: self.vm.cfg.ratelimit,
            ..Default::default()
        };
        while let Some(s) = self.evq.pop() {
            if let Some(l) = limit.filter(|&l| s.at > l) {
                until_hit = Some(l);
                break;
            }
            self.events += 1;
            let now = s.at;
            // Timers that find nothing to do do not extend a run: the
            // periodic writeback, the journal commit, wbt's stat window.
            if !matches!(
                s.event,
                Ev::WritebackTimer | Ev::CommitTimer | Ev::Queue(QueueEvent::WbtTimer(_))
            ) {
                last_work = now;
            }
            self.out.cpu_ns = 0;
            match s.event {
                Ev::Task(t) => {
                    self.cur_task = Some(t);
                    self.run_task(t, now);
                    self.charge_blk_cpu(t, now);
                }
                Ev::IoDone(owner) => {
                    self.cur_task = Some(owner.task);
                    self.io_done(owner, now);
                    self.sched_out(owner.task, now);
                    self.charge_blk_cpu(owner.task, now);
                }
                Ev::Queue(qe) => {
                    self.queue.handle(now, qe, &mut self.tracer, &mut self.out);
                }
                Ev::BufDone(task) => {
                    self.cur_task = Some(task);
                    self.buf_done(task, now);
                    self.sched_out(task, now);
                    self.charge_blk_cpu(task, now);
                }
                Ev::WritebackTimer => self.flusher_timer(now),
                Ev::CongestionTimeout(t) => self.congestion_timeout(t, now),
                Ev::CommitTimer => self.commit_timer(now),
            }
            self.drain_block_out(now);
            if self.cfg.checks {
                self.journal_check();
                self.xlog_check();
            }
            let dirty = self.vm.nr_dirty;
            vm_stats.max_dirty = vm_stats.max_dirty.max(dirty);
            vm_stats.max_dirty_writeback = vm_stats
                .max_dirty_writeback
                .max(dirty + self.vm.nr_writeback);
            if matches!(s.event, Ev::WritebackTimer) && self.stalled_on_timer() {
                break;
            }
        }
        // The periodic timers above do not extend a run.
        let end = until_hit.unwrap_or(last_work);
        let ending = self.run_end(until_hit, end);
        vm_stats.lock_waits = self.vm.lock_waits;
        vm_stats.redirtied = self.vm.ext4_redirtied;
        vm_stats.wb_pages = self.vm.wb_pages;
        self.tracer.finish(end);
        let sinks = self.tracer.take_sinks();
        let mut files: Vec<crate::stats::FileLayout> = Vec::new();
        let mut seen: Vec<u32> = Vec::new();
        for (p, (backing, path)) in self
            .procs
            .iter()
            .flat_map(|p| p.all_files().into_iter().map(move |f| (p, f)))
        {
            if let (Backing::File(ino), Target::File { .. }) = (backing, &p.spec.target) {
                if seen.contains(&ino) || p.spec.io_size == 0 && p.spec.group == u32::MAX {
                    continue;
                }
                seen.push(ino);
                // As FIEMAP reports them (filefrag counts physical breaks).
                let extents: Vec<(u64, u64, u64)> = self
                    .fs
                    .fiemap(ino)
                    .iter()
                    .map(|r| (r.logical, r.physical, r.len))
                    .collect();
                files.push(crate::stats::FileLayout {
                    path: path.to_string(),
                    job: p.spec.name.clone(),
                    size: self.fs.get_block().i_size(ino),
                    block_size: self.cfg.machine.fs_block_size,
                    extents,
                });
            }
        }
        let observer = self.observer.take();
        let procs = self.procs.into_iter().map(|p| p.result).collect();
        let result = RunResult {
            procs,
            vm: vm_stats,
            files,
            queue: *self.queue.stats(),
            end,
            ending,
            events: self.events,
            scheduler: self.queue.elevator_name().to_string(),
        };
        (result, sinks, observer)
    }

    fn drain_block_out(&mut self, now: Instant) {
        for i in 0..self.out.events.len() {
            match self.out.events[i] {
                (at, QueueEvent::Work(w)) => self.queue_work(at, w),
                (at, ev) => self.evq.schedule(at, Ev::Queue(ev)),
            }
        }
        self.out.events.clear();
        for i in 0..self.out.woken.len() {
            // The woken submitter carries on with its next bio.
            let task = self.out.woken[i];
            if let TaskKind::Process(_) = self.tasks.kind(task) {
                assert_eq!(
                    self.tasks.blocked(task),
                    Blocked::OnRequest,
                    "woke a task that was not asleep"
                );
            }
            self.wake_task(task, now);
        }
        self.out.woken.clear();
        for i in 0..self.out.completed.len() {
            let c = self.out.completed[i];
            let slot = match c.owner.end_io {
                EndIo::PageCache { bio } => {
                    self.buf_bios_done(bio, c.run, now);
                    if self.tasks.kind(c.owner.task) == TaskKind::KernelThread(KThread::Kjournald) {
                        for _ in 0..c.run.nr {
                            self.journal_bio_done(c.owner.task, now);
                        }
                    }
                    continue;
                }
                EndIo::Journal => {
                    self.journal_bio_done(c.owner.task, now);
                    continue;
                }
                EndIo::XfsLog { ctx } => {
                    self.xlog_bio_done(ctx, now);
                    continue;
                }
                EndIo::SyncBuffer => {
                    self.osync_bio_done(c.owner.task, now);
                    continue;
                }
                // end_buffer_io_sync: unlock_buffer, no waiter.
                EndIo::AsyncBuffer => continue,
                EndIo::DirectIo { slot } => slot,
            };
            let p = self.proc_of(c.owner.task);
            let s = &mut self.procs[p as usize].slots[slot as usize];
            assert!(
                s.active && s.bios_left > 0,
                "completion for an idle I/O slot"
            );
            s.bios_left -= 1;
            if s.bios_left == 0 {
                // dio_bio_end_io wakes the submitter (or aio completes the iocb).
                let at = now + Duration(self.cfg.machine.cpu_wake_ns);
                self.evq.schedule(at, Ev::IoDone(c.owner));
            }
        }
        self.out.completed.clear();
    }

    /// Start the processes that may start now (`finished`: the one that just
    /// ended, whose waiters are looked at).
    fn start_ready_procs(&mut self, now: Instant, finished: Option<u32>) {
        let done = |tasks: &Tasks, i: usize| tasks.blocked(TaskId(i as u32)) == Blocked::Done;
        let extra = if self.startq.initialized() {
            Vec::new()
        } else {
            let v = self.procs.iter().map(|p| {
                let inos = p.all_files().into_iter().filter_map(|f| match f.0 {
                    Backing::File(ino) => Some(ino),
                    Backing::Raw { .. } => None,
                });
                (p.spec.after.is_some(), inos.collect::<Vec<u32>>())
            });
            self.startq.init(v.collect::<Vec<_>>().into_iter())
        };
        for i in self.startq.candidates(finished, extra) {
            let (i, task) = (i as usize, TaskId(i));
            if self.tasks.blocked(task) != Blocked::NotStarted {
                continue;
            }
            if self.procs[i].terminate {
                self.never_started(i, now);
                continue;
            }
            if self.procs[i].spec.stonewall && (0..i).any(|j| !done(&self.tasks, j)) {
                continue;
            }
            // Latest first: the most recent of the range is the likeliest not done.
            if let Some((a, b)) = self.procs[i].spec.after {
                let undone = (a as usize..b as usize)
                    .rev()
                    .find(|&j| !done(&self.tasks, j));
                if let Some(j) = undone {
                    self.startq.wait_for(i as u32, j as u32);
                    continue;
                }
            }
            let at = now + self.procs[i].spec.startdelay;
            self.procs[i].start = at;
            self.procs[i].result.start = at;
            self.tasks.block(task, Blocked::No);
            self.schedule_task(task, at);
        }
        let tasks = &self.tasks;
        self.startq
            .retain_plain(|i| tasks.blocked(TaskId(i)) == Blocked::NotStarted);
    }

    fn has_work(&self, p: &Proc, now: Instant) -> bool {
        if p.terminate || p.eof {
            return false;
        }
        if let Some(rt) = p.spec.runtime {
            if now >= p.start + rt {
                return false;
            }
        }
        if let Some(r) = &p.spec.replay {
            // read_iolog_get: done when the log is.
            return p.replay.next < r.ios.len();
        }
        if let (Some(l), Some(v)) = (&p.vlog, &p.spec.verify) {
            use crate::verify::Phase;
            match l.phase {
                Phase::Reading => return l.len() > 0,
                Phase::Syncing | Phase::Done => return false,
                Phase::Writing if l.backlog_due(v) => return true,
                Phase::Writing => {}
            }
        }
        // backend.c `io_bytes_exceeded`: the bytes or `exceeds_number_ios`.
        if p.spec.number_ios > 0 && p.ios_issued >= p.spec.number_ios {
            return false;
        }
        p.spec.time_based || p.bytes_issued < p.spec.io_size
    }

    /// One step of process `pi`: submit the next bio of the I/O being submitted,
    /// or start a new I/O, or go to sleep.
    fn step(&mut self, pi: u32, now: Instant) {
        if !self.procs[pi as usize].opened {
            if self.procs[pi as usize].spec.recreate {
                if let Err(e) = self.recreate_file(pi, now) {
                    let p = &mut self.procs[pi as usize];
                    p.result.error = Some(format!("{}: {e}", p.spec.name));
                    p.opened = true;
                    self.finish_proc(pi, now);
                    return;
                }
            }
            // A writeback job it starts runs below, before the first I/O.
            self.open_file(pi);
        }
        // Journal work the task slept in, or writeback's allocation handles.
        if !self.run_journal_op(TaskId(pi), now) {
            return;
        }
        if self.fsync_pending(pi, now) {
            return;
        }
        if !self.procs[pi as usize].spec.direct || self.procs[pi as usize].buf.is_some() {
            if self.tasks.blocked(TaskId(pi)) == Blocked::Done {
                return;
            }
            let p = &self.procs[pi as usize];
            match p.buf.map(|b| b.dir) {
                Some(Dir::Read) if self.cfg.tunables.profile() == iostack_core::Profile::V2_4 => {
                    self.buffered_read_step24(pi, now)
                }
                Some(Dir::Read) => self.buffered_read_step(pi, now),
                Some(Dir::Write) => self.buffered_write_step(pi, now),
                None => self.issue_next(pi, now),
            }
            return;
        }
        // Log writes a transaction commit queued for this task (XFS's full
        // iclogs, which the committing task writes: xfs_iomap_write_direct's
        // allocation commits before the direct I/O is submitted) go out
        // first; asleep on a request, it comes back here.
        if self.drain_pending(TaskId(pi), now) {
            return;
        }
        let cpu_bio = Duration(self.cfg.machine.cpu_bio_ns);
        if let Some((slot, i)) = self.procs[pi as usize].submitting {
            if i == usize::MAX {
                // Woken from get_request_wait after the last bio: unplug and go on.
                self.procs[pi as usize].submitting = None;
                self.finish_submission(pi, slot, now);
                return;
            }
            let p = &self.procs[pi as usize];
            let t = self.tasks.get(TaskId(pi));
            let s = &p.slots[slot as usize];
            let db = s.plan.bios[i];
            let dev = match p.backing {
                Backing::File(_) => self.cfg.machine.fs_dev(),
                Backing::Raw { dev, .. } => dev,
            };
            let flags = match s.dir {
                Dir::Read if s.plan.read_sync => ReqFlags::READ | ReqFlags::SYNC,
                Dir::Read => ReqFlags::READ,
                Dir::Write => self.write_flags,
            };
            let bio = Bio {
                dev,
                sector: db.sector,
                sectors: db.sectors,
                segments: db.segments,
                flags,
                pid: t.pid,
                cpu: t.cpu,
                owner: BioOwner {
                    task: TaskId(pi),
                    end_io: EndIo::DirectIo { slot },
                },
                ioprio: t.ioprio,
                submitted_at: now,
                run: iostack_block::BioRun::ONE,
                next: None,
            };
            let last = i + 1 == s.plan.bios.len();
            let r = self
                .queue
                .submit_bio(now, bio, &mut self.tracer, &mut self.out);
            let p = &mut self.procs[pi as usize];
            if !last {
                p.submitting = Some((slot, i + 1));
            } else {
                p.submitting = None;
            }
            if r == Submit::Sleeping {
                self.tasks.block(TaskId(pi), Blocked::OnRequest);
                if last {
                    let p = &mut self.procs[pi as usize];
                    // The wake-up resumes at the unplug below.
                    p.submitting = Some((slot, usize::MAX));
                }
                return;
            }
            if !last {
                self.charge_sys(TaskId(pi), cpu_bio);
                self.schedule_task(TaskId(pi), now + cpu_bio);
                return;
            }
            self.finish_submission(pi, slot, now);
            return;
        }
        self.issue_next(pi, now);
    }

    /// All bios of an I/O are queued: `blk_run_address_space` unplugs (U), then the
    /// task waits (sync) or goes on submitting (async).
    /// In 2.6.39+ `do_blockdev_direct_IO` ends its plug here instead.
    fn finish_submission(&mut self, pi: u32, slot: u32, now: Instant) {
        self.unplug(TaskId(pi), now);
        self.finish_plug(TaskId(pi), now);
        self.offload_submitted(pi);
        let p = &mut self.procs[pi as usize];
        p.slots[slot as usize].submitted = now;
        match p.spec.engine {
            Engine::Sync => self.tasks.block(TaskId(pi), Blocked::OnIo),
            // io_submit returns and the task goes on to prepare the next iocb.
            Engine::Async => self.issue_next(pi, now),
        }
    }

    pub(crate) fn issue_next(&mut self, pi: u32, now: Instant) {
        let depth = self.procs[pi as usize].result.iodepth;
        if self.tasks.blocked(TaskId(pi)) == Blocked::Done {
            return;
        }
        if self.pace_asleep(pi, now) || self.thinktime_stall(pi, now) {
            return;
        }
        // do_io's loop top: flow_threshold_exceeded.
        if self.flow_held(pi, depth, now) {
            return;
        }
        // check_min_rate after the last I/O; a failed job issues no more.
        self.min_rate_failed(pi, now);
        let p = &self.procs[pi as usize];
        if !self.has_work(p, now) {
            if p.inflight == 0 {
                self.finish_proc(pi, now);
            } else {
                self.tasks.block(TaskId(pi), Blocked::OnIo);
            }
            return;
        }
        if p.inflight >= depth {
            self.tasks.block(TaskId(pi), Blocked::OnIo);
            return;
        }
        if self.osync_before_dio(pi, now) {
            return;
        }
        match self.next_file(pi, now) {
            Some(true) => {}
            Some(false) => return,
            None => {
                if self.procs[pi as usize].inflight == 0 {
                    self.finish_proc(pi, now);
                } else {
                    self.tasks.block(TaskId(pi), Blocked::OnIo);
                }
                return;
            }
        }
        if self.verify_read(pi, now) {
            return;
        }
        let p = &self.procs[pi as usize];
        if p.spec.replay.is_some() {
            if let Some((dir, offset, len)) = self.replay_pick(pi, now) {
                let p = &mut self.procs[pi as usize];
                p.bytes_issued += len;
                p.ios_issued += 1;
                self.issue_at(pi, dir, offset, len, now);
            }
            return;
        }
        // Choose direction, offset and length, as fio's get_io_u does.
        let p = &mut self.procs[pi as usize];
        let dir = if let Some(d) = p.pace.rate_dir {
            // rate_ddir slept and chose this direction.
            d
        } else if p.spec.rewrite {
            if p.rewrite_at.is_some() {
                Dir::Write
            } else {
                Dir::Read
            }
        } else if p.spec.read_pct >= 100 {
            Dir::Read
        } else if p.spec.read_pct == 0 {
            Dir::Write
        } else if p.rng_mix.ratio(p.spec.read_pct as u64, 100) {
            Dir::Read
        } else {
            Dir::Write
        };
        let Some(dir) = self.rate_ddir(pi, dir, now) else {
            return;
        };
        let p = &mut self.procs[pi as usize];
        let (bs, rel, len) = if p.spec.varies(dir) {
            next_varied_io(p, dir)
        } else {
            let bs = p.spec.bs[dir as usize];
            (bs, 0, bs)
        };
        let zoned_rel = if p.spec.strided.is_some() {
            let Some(rel) = strided_rel(p, bs) else {
                // get_next_offset failed: the file is done.
                p.eof = true;
                if p.inflight == 0 {
                    self.finish_proc(pi, now);
                } else {
                    self.tasks.block(TaskId(pi), Blocked::OnIo);
                }
                return;
            };
            Some(rel)
        } else {
            None
        };
        let seq =
            p.spec.pattern == Pattern::Sequential && !p.spec.varies(dir) && zoned_rel.is_none();
        // get_next_seq_offset: after the first I/O, `rw=...:N` holes add N.
        if seq && p.seq_next > 0 {
            p.seq_next = p.seq_next.saturating_add(p.spec.seq_add);
            // A negative :N steps back; before the start, from the end.
            let back = p.spec.seq_back;
            if back > 0 {
                p.seq_next = p
                    .seq_next
                    .checked_sub(back)
                    .unwrap_or(p.spec.region.saturating_sub(back));
            }
        }
        if seq && p.seq_next.saturating_add(bs) > p.spec.region {
            // Wrap for another pass; a time_based job back at its start drops
            // the file's cache (loop_cache_invalidate).
            p.seq_next = 0;
            let s = &p.spec;
            let drop_cache = s.time_based && s.invalidate && !s.direct;
            if drop_cache && self.loop_invalidate(pi, now) {
                // The flush runs first; this I/O is chosen again after.
                return;
            }
        }
        let p = &mut self.procs[pi as usize];
        let random = matches!(p.spec.pattern, Pattern::Random { .. }) && !p.spec.varies(dir);
        let hit = !random || rw_seq_hit(p);
        let seq_now = random
            && if hit {
                !should_do_random(p, dir, bs)
            } else {
                p.spec.seq_identical || p.last_end[dir as usize] + bs <= p.spec.region
            };
        let rel = match p.spec.pattern {
            _ if zoned_rel.is_some() => zoned_rel.unwrap_or(0),
            _ if p.spec.rewrite && dir == Dir::Write => p.rewrite_at.take().expect("read first"),
            _ if p.spec.rewrite => {
                if p.seq_next + bs > p.spec.region {
                    p.seq_next = 0;
                }
                let r = p.seq_next;
                p.seq_next += bs;
                p.rewrite_at = Some(r);
                r
            }
            _ if p.spec.varies(dir) => rel,
            Pattern::Sequential => {
                let r = p.seq_next;
                p.seq_next += bs;
                r
            }
            // rw_sequencer=identical between new random offsets: the last
            // I/O's offset again.
            Pattern::Random { .. } if seq_now && !hit && p.spec.seq_identical => {
                p.last_start[dir as usize]
            }
            Pattern::Random { .. } if seq_now => p.last_end[dir as usize],
            Pattern::Random { .. } if p.dist.is_some() => {
                let d = p.dist.as_ref().expect("checked");
                d.next(&mut p.rng_dist) * bs
            }
            Pattern::Random { .. } if p.spec.zoned.is_some() => {
                let (lastb, ba) = last_block(p, dir, bs);
                let z = p.spec.zoned.as_ref().unwrap();
                zoned_block(z, dir, lastb, ba, &mut p.rng_zone, &mut p.rng_off) * ba
            }
            Pattern::Random { .. } if p.lfsr.is_some() => next_lfsr_block(p) * bs,
            Pattern::Random { norandommap: true } if p.spec.ba[dir as usize] != 0 => {
                // get_next_rand_offset with last_block: the region less
                // `bs - ba`, in units of `ba`.
                let ba = p.spec.ba[dir as usize];
                let room = p.spec.region.saturating_sub(bs.saturating_sub(ba));
                p.rng_off.below((room / ba).max(1)) * ba
            }
            Pattern::Random { norandommap } => {
                let blocks = (p.spec.region / bs).max(1);
                let drawn = match p.taus.as_mut() {
                    // fio's double arithmetic can give lastb itself (r
                    // rounded up to 2^64), past the file: the last block.
                    Some(t) => crate::taus::fio_block(blocks, t.next()).min(blocks - 1),
                    None => p.rng_off.below(blocks),
                };
                let b = if norandommap {
                    drawn
                } else {
                    next_random_block(p, blocks, drawn)
                };
                b * bs
            }
        };
        let offset = p.spec.offset + rel;
        p.last_end[dir as usize] = rel + len;
        p.last_start[dir as usize] = rel;
        p.bytes_issued += len;
        p.ios_issued += 1;
        if let Some(f) = p.files.as_mut() {
            f.issued(len);
        }
        if self.verify_log_write(pi, dir, rel, len, now) {
            return;
        }
        self.rate_issued(pi, dir, len);
        self.issue_at(pi, dir, offset, len, now);
    }

    /// Whether a direct write of `[offset, offset + len)` lies wholly in a
    /// hole below `i_size`, in whole pages: `do_direct_IO` maps nothing
    /// (`get_block` without create inside `i_size`, DIO_LOCKING) and returns
    /// -ENOTBLK, and `__generic_file_aio_write` writes it through the page
    /// cache, then `filemap_write_and_wait_range` (2.6.28's
    /// `do_sync_mapping_range`) and `invalidate_mapping_pages` over it.
    /// A write partly mapped (direct up to the hole, buffered after) is not
    /// modelled and stays refused.
    fn in_hole(&mut self, pi: u32, offset: u64, len: u64) -> bool {
        let page = iostack_mm::PAGE_SIZE;
        let Backing::File(ino) = self.procs[pi as usize].backing else {
            return false;
        };
        if offset % page != 0 || len % page != 0 || len == 0 {
            return false;
        }
        let gb = self.fs.get_block();
        if offset + len > gb.i_size(ino) {
            return false;
        }
        let bits = gb.blkbits();
        let (first, end) = (offset >> bits, (offset + len) >> bits);
        (first..end).all(|b| matches!(gb.get_block(ino, b, 1, false), Ok(m) if m.pblk.is_none()))
    }

    /// fio's `get_next_file` in a job with several files: the file of the
    /// next I/O becomes the current one, opened (`td_io_open_file`) at its
    /// first use. Some(true): go on; Some(false): the open started a flush
    /// that runs first (the same file is kept); None: every file is done.
    fn next_file(&mut self, pi: u32, now: Instant) -> Option<bool> {
        let p = &mut self.procs[pi as usize];
        let Some(files) = p.files.as_mut() else {
            return Some(true);
        };
        if files.chosen {
            return Some(true);
        }
        // A file is done when its bytes are issued (its position at its end,
        // its random map full); never in a time_based job (each wraps) nor
        // without the random map (fio only stops at the job's byte count).
        let endless =
            p.spec.time_based || p.spec.pattern == (Pattern::Random { norandommap: true });
        let region = p.spec.region;
        let k = files.choose(|b| !endless && b >= region)?;
        files.chosen = true;
        if k != files.cur {
            p.swap_file(k);
        }
        if !p.opened && self.open_file(pi) {
            self.schedule_task(TaskId(pi), now);
            return Some(false);
        }
        Some(true)
    }

    /// Issue an I/O of `len` bytes at byte `offset` of the process's file or
    /// device: a buffered `read()`/`write()`, or a direct I/O's bios.
    pub(crate) fn issue_at(&mut self, pi: u32, dir: Dir, offset: u64, len: u64, now: Instant) {
        self.issue_io(pi, dir, offset, len, false, now);
    }

    /// `issue_at`, or a buffered `write()` of a direct process's write that
    /// met a hole (`fallback`).
    fn issue_io(&mut self, pi: u32, dir: Dir, offset: u64, len: u64, fallback: bool, now: Instant) {
        let ra24_max = (self.cfg.tunables.profile() == iostack_core::Profile::V2_4)
            .then_some(self.vm.cfg.max_readahead24);
        let p = &mut self.procs[pi as usize];
        if !p.spec.direct || fallback {
            let page = iostack_mm::PAGE_SIZE;
            if offset % page != 0 || len % page != 0 {
                p.result.error = Some(format!(
                    "buffered I/O at offset {offset} length {len}: iostack models \
                     page-aligned buffered I/O only"
                ));
                self.finish_proc(pi, now);
                return;
            }
            p.inflight += 1;
            p.result.note_depth(p.inflight);
            p.buf = Some(BufOp {
                dir,
                map: p.map,
                pos: offset / page,
                last: (offset + len) / page,
                offset,
                len,
                issue: now,
                fallback,
            });
            if let (Dir::Read, Some(max)) = (dir, ra24_max) {
                // 2.4's do_generic_file_read: keep or reset the read-ahead
                // context, size f_ramax from the request.
                p.ra24.read_start(offset / page, offset % page, len, max);
                p.ra24_waited = None;
            }
            let cost = Duration(self.cfg.machine.cpu_syscall_ns);
            self.charge_sys(TaskId(pi), cost);
            self.schedule_task(TaskId(pi), now + cost);
            return;
        }
        // Take a slot.
        let slot = match p.free.pop() {
            Some(s) => s,
            None => {
                p.slots.push(Slot {
                    plan: DioPlan::default(),
                    dir,
                    offset: 0,
                    len: 0,
                    chunk_at: 0,
                    chunk_bytes: 0,
                    issue: now,
                    submitted: now,
                    bios_left: 0,
                    active: false,
                    depth: 0,
                    worker: u32::MAX,
                });
                p.slots.len() as u32 - 1
            }
        };
        p.inflight += 1;
        p.result.note_depth(p.inflight);
        let mut plan = std::mem::take(&mut p.slots[slot as usize].plan);
        let first = self.dio_chunk(pi).map_or(len, |c| len.min(c));
        let r = self.build_plan(pi, dir, offset, first, &mut plan, now);
        let p = &mut self.procs[pi as usize];
        let map_cost = match r {
            Ok(c) => c,
            Err(e) => {
                p.slots[slot as usize].plan = plan;
                p.free.push(slot);
                p.inflight -= 1;
                if dir == Dir::Write && self.in_hole(pi, offset, len) {
                    self.issue_io(pi, dir, offset, len, true, now);
                    return;
                }
                let p = &mut self.procs[pi as usize];
                p.result.error = Some(e.to_string());
                self.finish_proc(pi, now);
                return;
            }
        };
        let pages = first.div_ceil(dio::PAGE_SIZE);
        let nbios = plan.bios.len() as u32;
        let s = &mut p.slots[slot as usize];
        s.plan = plan;
        s.dir = dir;
        s.offset = offset;
        s.len = len;
        s.chunk_at = 0;
        s.chunk_bytes = 0;
        s.issue = now;
        s.submitted = now;
        s.bios_left = nbios;
        s.active = true;
        s.depth = p.inflight;
        s.worker = u32::MAX;
        let m = &self.cfg.machine;
        let cost = Duration(m.cpu_syscall_ns + pages * m.cpu_page_ns) + map_cost;
        p.result.sys_ns += cost.as_ns();
        if nbios == 0 {
            // Entirely a hole or past EOF: no I/O, completes at once. A sync
            // caller waits for it like for any I/O (io_done wakes it); an async
            // one goes on to its next I/O.
            let owner = BioOwner {
                task: TaskId(pi),
                end_io: EndIo::DirectIo { slot },
            };
            self.evq.schedule(now + cost, Ev::IoDone(owner));
            match p.spec.engine {
                Engine::Sync => self.tasks.block(TaskId(pi), Blocked::OnIo),
                Engine::Async => self.schedule_task(TaskId(pi), now + cost),
            }
            return;
        }
        p.submitting = Some((slot, 0));
        let w = self.offload_enqueue(pi);
        self.procs[pi as usize].slots[slot as usize].worker = w;
        // 2.6.39+: do_blockdev_direct_IO plugs around the submission.
        self.start_plug(TaskId(pi));
        self.schedule_task(TaskId(pi), now + cost);
    }

    /// 2.4's direct-I/O chunk (`KIO_MAX_ATOMIC_IO`: 512 KB in 2.4 and in
    /// rawio-3, which kept it after trying 1024, linux-kernel 6 April 2001);
    /// later kernels submit a whole I/O at once.
    /// (2.4 has no asynchronous direct I/O: an async engine submits whole.)
    fn dio_chunk(&self, pi: u32) -> Option<u64> {
        let sync = self.procs[pi as usize].spec.engine == Engine::Sync;
        (sync && self.cfg.tunables.profile() == iostack_core::Profile::V2_4).then_some(512 << 10)
    }

    /// The direct-I/O bios of `[offset, offset + len)` of process `pi`'s file or
    /// device (`get_block` per block). Returns the CPU time of 2.4's
    /// per-block `get_block` calls (`Simulation::get_block_cost24`).
    fn build_plan(
        &mut self,
        pi: u32,
        dir: Dir,
        offset: u64,
        len: u64,
        plan: &mut DioPlan,
        now: Instant,
    ) -> Result<Duration, String> {
        if matches!(self.procs[pi as usize].spec.target, Target::Diskless { .. }) {
            // fio's null engine (engines/null.c): the I/O is done at once.
            *plan = DioPlan {
                bytes: len,
                ..DioPlan::default()
            };
            return Ok(Duration::ZERO);
        }
        let backing = self.procs[pi as usize].backing;
        let cost = self.get_block_cost24(backing, offset, len);
        let r = match backing {
            Backing::File(ino) => dio::build(
                self.fs.get_block(),
                ino,
                dir == Dir::Write,
                offset,
                len,
                self.boundary,
                self.bio_limits,
                dio_holes(&self.cfg),
                plan,
            )
            .map(|()| {
                // 2.4: what get_block allocated is dirty, and so is the inode.
                if dir == Dir::Write {
                    self.list_indirect24(ino, now);
                    // XFS: xfs_iomap_write_direct's allocation (and the
                    // file's creation) commit before the I/O is submitted.
                    self.xlog_commit_trans(TaskId(pi), Some(ino), now);
                }
                // 6.x ext4 and XFS direct I/O is iomap's: iomap_dio_bio_iter
                // starts every bio's opf at REQ_SYNC | REQ_IDLE, reads too.
                plan.read_sync = !self.cfg.tunables.profile().single_queue();
            }),
            // 6.x: block/fops.c's blkdev_direct_IO, bios of BIO_MAX_VECS
            // pages that blk_mq_submit_bio splits at the queue limits.
            Backing::Raw { size, .. } if !self.cfg.tunables.profile().single_queue() => {
                let sync = self.procs[pi as usize].spec.engine == Engine::Sync;
                iostack_fs::blkdev_dio::build(size, dir == Dir::Write, sync, offset, len, plan)
            }
            Backing::Raw { size, .. } => {
                let mut blkbits = self.raw.blkbits();
                let soft = 1u64 << blkbits;
                let v24 = self.cfg.tunables.profile() == iostack_core::Profile::V2_4;
                if !v24 && (offset % soft != 0 || len % soft != 0) {
                    // __blockdev_direct_IO: unaligned to the soft block size,
                    // it retries at bdev_logical_block_size (512) with a
                    // blkfactor. blkdev_get_blocks maps every block and never
                    // sets buffer_new, so do_direct_IO's blkfactor branch
                    // (dio_zero_block, dio_remainder) starts next_block_for_io
                    // at the request's own sector: the walk at 512 bytes.
                    blkbits = 9;
                }
                let mut raw = RawBdev::new(size, blkbits);
                dio::build(
                    &mut raw,
                    0,
                    dir == Dir::Write,
                    offset,
                    len,
                    self.boundary,
                    self.bio_limits,
                    // A block device has no holes (blkdev_get_block maps all).
                    dio::DioHoles::SkipHoles,
                    plan,
                )
            }
        };
        r.map(|()| cost).map_err(|e| e.to_string())
    }

    /// The chunk of a 2.4 direct I/O just completed: map, build and submit the
    /// next one (`generic_file_direct_IO`'s loop), if any. True if it did.
    fn next_dio_chunk(&mut self, pi: u32, slot: u32, now: Instant) -> bool {
        let Some(chunk) = self.dio_chunk(pi) else {
            return false;
        };
        let s = &self.procs[pi as usize].slots[slot as usize];
        let at = s.chunk_at + chunk;
        if at >= s.len {
            return false;
        }
        let (dir, offset, len) = (s.dir, s.offset + at, chunk.min(s.len - at));
        let mut plan = std::mem::take(&mut self.procs[pi as usize].slots[slot as usize].plan);
        let done = plan.bytes;
        let map_cost = match self.build_plan(pi, dir, offset, len, &mut plan, now) {
            Ok(c) => c,
            Err(e) => {
                // A later chunk cannot fail where the first did not (the blocks
                // were mapped or allocated the same way); keep the error anyway.
                let p = &mut self.procs[pi as usize];
                p.result.error = Some(e);
                p.slots[slot as usize].plan = plan;
                return false;
            }
        };
        let nbios = plan.bios.len() as u32;
        let p = &mut self.procs[pi as usize];
        let s = &mut p.slots[slot as usize];
        s.chunk_at = at;
        s.chunk_bytes += done;
        s.plan = plan;
        s.bios_left = nbios;
        let m = &self.cfg.machine;
        let cost = Duration(len.div_ceil(dio::PAGE_SIZE) * m.cpu_page_ns) + map_cost;
        p.result.sys_ns += cost.as_ns();
        if nbios == 0 {
            let owner = BioOwner {
                task: TaskId(pi),
                end_io: EndIo::DirectIo { slot },
            };
            self.evq.schedule(now + cost, Ev::IoDone(owner));
            return true;
        }
        p.submitting = Some((slot, 0));
        // The task was woken by the chunk's completion and submits the next.
        if self.tasks.blocked(TaskId(pi)) == Blocked::OnIo {
            self.tasks.unblock(TaskId(pi));
            p.result.ctx += 1;
        }
        self.start_plug(TaskId(pi));
        self.schedule_task(TaskId(pi), now + cost);
        true
    }

    fn io_done(&mut self, owner: BioOwner, now: Instant) {
        let EndIo::DirectIo { slot } = owner.end_io else {
            panic!("a page-cache bio's completion is not a direct I/O's");
        };
        let pi = self.proc_of(owner.task);
        if self.next_dio_chunk(pi, slot, now) {
            return;
        }
        let dir = self.procs[pi as usize].slots[slot as usize].dir;
        self.after_direct_io24(pi, dir);
        let p = &mut self.procs[pi as usize];
        let s = &mut p.slots[slot as usize];
        assert!(s.active && s.bios_left == 0);
        s.active = false;
        let bytes = s.chunk_bytes + s.plan.bytes;
        let slat = s.submitted.since(s.issue);
        let clat = now.since(s.submitted);
        let lat = now.since(s.issue);
        p.result.record(s.dir, bytes, s.len, clat);
        if let Some(o) = self.observer.as_mut() {
            o.io_done(
                pi as usize,
                &IoEvent {
                    dir: s.dir,
                    bytes,
                    asked: s.len,
                    slat_ns: slat.as_ns(),
                    clat_ns: clat.as_ns(),
                    lat_ns: lat.as_ns(),
                    at_ns: now.since(p.start).as_ns(),
                    depth: s.depth,
                    offset: s.offset,
                },
            );
        }
        p.inflight -= 1;
        p.free.push(slot);
        let w = p.slots[slot as usize].worker;
        self.offload_done(pi, w);
        if self.tasks.blocked(TaskId(pi)) == Blocked::OnIo {
            // Woken in this event: it runs now.
            self.tasks.unblock(TaskId(pi));
            self.procs[pi as usize].result.ctx += 1;
            self.issue_next(pi, now);
        }
    }

    /// A buffered `read()` or `write()` returns.
    fn buf_done(&mut self, task: TaskId, now: Instant) {
        let pi = self.proc_of(task);
        let p = &mut self.procs[pi as usize];
        let op = p.buf.take().expect("buffered op");
        if op.fallback {
            // filemap_write_and_wait_range: the pages written back and
            // waited for, no journal commit; then invalidated.
            p.fallback_sync = true;
            p.osync_op = Some(op);
            let map = p.map;
            self.start_fsync(pi, map);
            self.schedule_task(TaskId(pi), now);
            return;
        }
        if op.dir == Dir::Write && p.spec.osync {
            // O_SYNC/O_DSYNC: generic_file_aio_write syncs what it wrote
            // (2.6.28 sync_page_range, later generic_write_sync →
            // vfs_fsync_range) before write() returns.
            p.osync_op = Some(op);
            p.datasync = p.spec.datasync;
            let map = p.map;
            self.start_fsync(pi, map);
            self.schedule_task(TaskId(pi), now);
            return;
        }
        self.buf_returned(pi, op, now);
    }

    /// The `write()`/`read()` of `op` returns to the process: its numbers,
    /// then fio's `fsync=`/`fdatasync=` every N writes, then the next I/O.
    fn buf_returned(&mut self, pi: u32, op: BufOp, now: Instant) {
        let p = &mut self.procs[pi as usize];
        let page = iostack_mm::PAGE_SIZE;
        let first = op.offset / page;
        let bytes = ((op.pos.max(first) - first) * page).min(op.len);
        let lat = now.since(op.issue);
        p.result.record(op.dir, bytes, op.len, lat);
        p.inflight -= 1;
        if let Some(o) = self.observer.as_mut() {
            o.io_done(
                pi as usize,
                &IoEvent {
                    dir: op.dir,
                    bytes,
                    asked: op.len,
                    slat_ns: 0,
                    clat_ns: lat.as_ns(),
                    lat_ns: lat.as_ns(),
                    at_ns: now.since(p.start).as_ns(),
                    depth: 1,
                    offset: op.offset,
                },
            );
        }
        if op.dir == Dir::Write {
            p.writes_since_fsync += 1;
            if p.spec.fsync_every > 0 && p.writes_since_fsync >= p.spec.fsync_every {
                p.writes_since_fsync = 0;
                p.sync_issued = Some(now);
                p.datasync = p.spec.datasync;
                let map = p.map;
                self.start_fsync(pi, map);
                self.schedule_task(TaskId(pi), now);
                return;
            }
        }
        self.issue_next(pi, now);
    }

    /// fsync's `filemap_write_and_wait` is done: the file system's `->fsync`
    /// (`ext3_sync_file`: the journal commit or a cache flush), then go on.
    /// fio's open-time flush (`invalidate`) is no fsync and goes on at once.
    pub(crate) fn fsync_done(&mut self, pi: u32, now: Instant) {
        self.tasks.block(TaskId(pi), Blocked::No);
        let p = &self.procs[pi as usize];
        if !p.invalidate_pending && !p.fallback_sync {
            if let Backing::File(ino) = self.procs[pi as usize].backing {
                let datasync = self.procs[pi as usize].datasync;
                if !self.journal_fsync(TaskId(pi), ino, datasync, now) {
                    self.procs[pi as usize].jwait = true;
                    return;
                }
            }
        }
        self.fsync_finished(pi, now);
    }

    /// A step of the task's fsync (or open-time flush) if one is under way:
    /// returns whether there was one.
    fn fsync_pending(&mut self, pi: u32, now: Instant) -> bool {
        let p = &self.procs[pi as usize];
        if p.jwait {
            self.fsync_journal_step(pi, now);
            return true;
        }
        if p.fsync.is_some() {
            if self.fsync_step(pi, now) {
                self.fsync_done(pi, now);
            }
            return true;
        }
        if p.fsync_waiting {
            self.procs[pi as usize].fsync_waiting = false;
            self.fsync_done(pi, now);
            return true;
        }
        false
    }

    /// fsync returned: go on with the job, or end it.
    fn fsync_finished(&mut self, pi: u32, now: Instant) {
        self.tasks.block(TaskId(pi), Blocked::No);
        let p = &mut self.procs[pi as usize];
        p.datasync = false;
        if let Some(at) = p.sync_issued.take() {
            p.result.syncs += 1;
            if let Some(o) = self.observer.as_mut() {
                o.sync_done(pi as usize, now.since(at).as_ns());
            }
        }
        if self.procs[pi as usize].invalidate_pending {
            self.invalidate_now(pi);
        }
        if std::mem::take(&mut self.procs[pi as usize].fallback_sync) {
            let op = self.procs[pi as usize]
                .osync_op
                .as_ref()
                .expect("fallback op");
            let page = iostack_mm::PAGE_SIZE;
            let (map, first, end) = (op.map, op.offset / page, (op.offset + op.len) / page);
            self.vm.invalidate_mapping_pages(map, first, end);
        }
        if let Some(op) = self.procs[pi as usize].osync_op.take() {
            self.buf_returned(pi, op, now);
            return;
        }
        self.issue_next(pi, now);
    }

    /// A process woken in fsync's journal wait: submit what it still holds,
    /// wait for its flush, or return from fsync.
    fn fsync_journal_step(&mut self, pi: u32, now: Instant) {
        let task = TaskId(pi);
        if self.drain_pending(task, now) {
            return;
        }
        if self.xlog_waiting(task) || self.procs[pi as usize].jflush {
            self.tasks.block(task, Blocked::OnJournal);
            return;
        }
        if self.fsync_barrier(task, now) {
            return;
        }
        self.procs[pi as usize].jwait = false;
        self.fsync_finished(pi, now);
    }

    /// Run a task's next step: the event loop's dispatch by task id.
    fn run_task(&mut self, task: TaskId, now: Instant) {
        let busy = self.tasks.get(task).blk_cpu_until;
        if now < busy {
            // Still on the CPU in the scheduler's hooks (`charge_blk_cpu`).
            self.schedule_task(task, busy);
            return;
        }
        match self.tasks.kind(task) {
            TaskKind::Process(i) => self.step(i, now),
            TaskKind::KernelThread(KThread::Flusher) => self.flusher_step(now),
            TaskKind::KernelThread(KThread::LazyInit) => self.lazyinit_step(now),
            TaskKind::KernelThread(KThread::KBlockd) => self.kblockd_step(now),
            TaskKind::KernelThread(KThread::Kjournald) => self.kjournald_step(now),
            TaskKind::KernelThread(KThread::Bdflush) => self.bdflush_step(now),
            TaskKind::KernelThread(KThread::Kupdated) => self.kupdated_step(now),
        }
        self.sched_out(task, now);
    }

    /// The CPU time the task spent in the I/O scheduler's hooks and on its
    /// lock (`BlockOut::cpu_ns`) after it last scheduled its next step: system
    /// time, and a wake-up does not run it before that work is done. Zero,
    /// and nothing changes, without a blk-mq scheduler.
    fn charge_blk_cpu(&mut self, task: TaskId, now: Instant) {
        self.cur_task = None;
        let ns = std::mem::take(&mut self.out.cpu_ns);
        if ns == 0 {
            return;
        }
        self.charge_sys(task, Duration(ns));
        let t = self.tasks.get_mut(task);
        t.blk_cpu_until = t.blk_cpu_until.max(now) + Duration(ns);
    }

    /// Run a task's next step at `at`.
    /// The task whose step is running charges the scheduler CPU time of its
    /// block-layer calls so far on top (`BlockOut::cpu_ns`).
    pub(crate) fn schedule_task(&mut self, task: TaskId, at: Instant) {
        let mut at = at;
        if self.cur_task == Some(task) && self.out.cpu_ns > 0 {
            let d = Duration(std::mem::take(&mut self.out.cpu_ns));
            self.charge_sys(task, d);
            at += d;
        }
        self.evq.schedule(at, Ev::Task(task));
    }

    /// Wake a task that slept (on a page, a request or congestion): it runs after
    /// the wake-up latency, and not before the CPU work it did before sleeping.
    pub(crate) fn wake_task(&mut self, task: TaskId, now: Instant) {
        if !self.tasks.unblock(task) {
            return;
        }
        if let TaskKind::Process(i) = self.tasks.kind(task) {
            self.procs[i as usize].result.ctx += 1;
        }
        let at = now + Duration(self.cfg.machine.cpu_wake_ns);
        let at = at.max(self.tasks.get(task).cpu_until);
        self.schedule_task(task, at);
    }

    /// The process (job index) a task is: direct I/O and buffered system calls
    /// are processes' own.
    pub(crate) fn proc_of(&self, task: TaskId) -> u32 {
        match self.tasks.kind(task) {
            TaskKind::Process(i) => i,
            k => panic!("{k:?} is not a process"),
        }
    }

    /// The flusher thread's task (pdflush or `flush-MAJ:MIN`).
    pub(crate) fn flusher(&self) -> TaskId {
        self.tasks.kthread(KThread::Flusher)
    }

    /// Account CPU time a task spends in the kernel (fio's `sys`). Kernel
    /// threads (the flusher, the inode-table zeroing) are not fio jobs.
    pub(crate) fn charge_sys(&mut self, task: TaskId, d: Duration) {
        if let TaskKind::Process(i) = self.tasks.kind(task) {
            self.procs[i as usize].result.sys_ns += d.as_ns();
        }
    }

    pub(crate) fn any_proc_alive(&self) -> bool {
        self.tasks.processes_alive()
    }

    pub(crate) fn finish_proc(&mut self, pi: u32, now: Instant) {
        let p = &mut self.procs[pi as usize];
        if !p.spec.direct && p.spec.end_fsync && !p.end_fsync_done && p.result.error.is_none() {
            // fio end_fsync / dd conv=fsync: write the file back and wait.
            p.end_fsync_done = true;
            // fio's end_fsync is fsync(2); dd's conv=fdatasync (a data sync
            // with no per-write or O_DSYNC syncs) is fdatasync(2).
            p.datasync = p.spec.datasync && p.spec.fsync_every == 0 && !p.spec.osync;
            // On 2.4, ext2_fsync_inode writes the data too (fsync24_meta).
            if !self.fsync24_applies(pi) {
                let map = self.procs[pi as usize].map;
                self.start_fsync(pi, map);
                self.schedule_task(TaskId(pi), now);
                return;
            }
        }
        if self.fsync24_meta(pi, now) {
            return;
        }
        if self.verify_next_phase(pi, now) {
            return;
        }
        let was_done = self.tasks.blocked(TaskId(pi)) == Blocked::Done;
        self.tasks.block(TaskId(pi), Blocked::Done);
        let p = &mut self.procs[pi as usize];
        p.end = Some(now);
        p.result.end = now;
        // close(): the last writer of a file releases it (`->release`).
        let wrote = p.result.dirs[1].ios > 0;
        let inos = p.file_inos();
        for ino in inos {
            let others = self.startq.release(ino, !was_done);
            if wrote && !others {
                self.fs.release_file(ino);
            }
        }
        if !was_done {
            self.flow_exit(pi, now);
            self.exit_all(pi, now);
        }
        self.start_ready_procs(now, Some(pi));
    }

    /// fio's `fio_terminate_threads(td->groupid, td->o.exit_what)` at the end
    /// of a job's thread when a job of the file set `exitall`: the jobs of
    /// its group, the running ones or all are marked to terminate; a running
    /// one issues nothing more and ends once its I/O in flight is done
    /// (a sleeping one when it wakes), one not started never runs.
    fn exit_all(&mut self, pi: u32, now: Instant) {
        use crate::workload::ExitWhat;
        let Some(what) = self.procs[pi as usize].spec.exit_what else {
            return;
        };
        let group = self.procs[pi as usize].spec.group;
        for q in 0..self.procs.len() {
            let state = self.tasks.blocked(TaskId(q as u32));
            if q == pi as usize || state == Blocked::Done {
                continue;
            }
            self.procs[q].terminate |= match what {
                ExitWhat::Group => self.procs[q].spec.group == group,
                ExitWhat::Stonewall => state != Blocked::NotStarted,
                ExitWhat::All => true,
            };
            if self.procs[q].terminate && state == Blocked::OnFlow {
                // The spin sees td->terminate at its loop's top.
                self.tasks.unblock(TaskId(q as u32));
                self.schedule_task(TaskId(q as u32), now);
            }
        }
    }

    /// A job terminated before it started (fio's `run_threads`: `todo--`):
    /// done at once, without I/O.
    fn never_started(&mut self, i: usize, now: Instant) {
        let p = &mut self.procs[i];
        p.start = now;
        p.end = Some(now);
        p.result.start = now;
        p.result.end = now;
        let inos = p.file_inos();
        for ino in inos {
            self.startq.release(ino, true);
        }
        self.tasks.block(TaskId(i as u32), Blocked::Done);
    }

    pub fn events_processed(&self) -> u64 {
        self.events
    }
}

/// fio's random offset with a random map: a uniformly chosen block, or the next
/// free one after it when it was already done in this pass (`get_next_free_block`
/// over fio's two-level `axmap`).
/// Offset and length of the next I/O of a job whose I/O size varies: the offset
/// in units of `minbs` (fio's default `blockalign`), sequential or uniformly
/// random (the front end refuses the random map with varying sizes), then
/// fio's `get_next_offset`: with `rw=rand...:N`, only every Nth I/O takes a
/// new random offset (`rw_seq_hit`, one counter for both directions); the
/// others follow `rw_sequencer`.
fn rw_seq_hit(p: &mut Proc) -> bool {
    if p.spec.seq_nr <= 1 {
        return true;
    }
    p.seq_left = p.seq_left.saturating_sub(1);
    if p.seq_left == 0 {
        p.seq_left = p.spec.seq_nr;
        return true;
    }
    false
}

/// fio's `should_do_random` (io_u.c): with `percentage_random` below 100, a
/// draw `v` in 1..=100 from the direction's `seq_rand_state` says whether this
/// I/O is random (`v <= perc`); otherwise it is sequential from where the
/// direction's last I/O ended (`get_next_seq_offset`), or random when that
/// would run past the region.
fn should_do_random(p: &mut Proc, d: Dir, bs: u64) -> bool {
    let perc = p.spec.perc_random[d as usize];
    if perc >= 100 {
        return true;
    }
    let rng = &mut p.rng_seqrand[d as usize];
    let v = 1 + ((100u64 * (rng.next_u64() >> 32)) >> 32);
    v <= u64::from(perc) || p.last_end[d as usize] + bs > p.spec.region
}

/// `get_next_buflen`'s length. Returns (minbs, offset in the region, length).
fn next_varied_io(p: &mut Proc, dir: Dir) -> (u64, u64, u64) {
    let (minbs, _) = p.spec.bs_range[dir as usize];
    let region = p.spec.region;
    let rel = match p.spec.pattern {
        Pattern::Sequential => {
            if p.seq_next + minbs > region {
                p.seq_next = 0; // wrap for another pass
            }
            p.seq_next
        }
        Pattern::Random { norandommap } => {
            let (lastb, ba) = last_block(p, dir, minbs);
            if let Some(z) = p.spec.zoned.as_ref() {
                zoned_block(z, dir, lastb, ba, &mut p.rng_zone, &mut p.rng_off) * ba
            } else if norandommap {
                p.rng_off.below(lastb) * ba
            } else {
                // __get_next_rand_offset: the drawn block if free, else
                // axmap_next_free's (marked here, the first of the run).
                // The map is on only where `ba` is `min_bs`.
                let drawn = p.rng_off.below(lastb);
                next_random_block(p, lastb, drawn) * minbs
            }
        }
    };
    let mut len = crate::workload::next_buflen(&p.spec, dir, rel, region, &mut p.rng_bs);
    match p.spec.pattern {
        Pattern::Sequential => p.seq_next = rel + len,
        Pattern::Random { norandommap: false } => {
            // mark_random_map: the I/O's blocks after its first, up to the
            // first one already done; the I/O is trimmed to those.
            let nr = len.div_ceil(minbs);
            let set = 1 + mark_run(p, rel / minbs + 1, nr - 1);
            len = len.min(set * minbs);
        }
        Pattern::Random { norandommap: true } => {}
    }
    (minbs, rel, len)
}

/// fio's `last_block` (io_u.c) for direction `d` whose smallest size is
/// `minbs`: the region less `minbs - ba` where the alignment is smaller, in
/// blocks of `ba` (at least one). Returns (blocks, ba).
fn last_block(p: &Proc, d: Dir, minbs: u64) -> (u64, u64) {
    let ba = match p.spec.ba[d as usize] {
        0 => minbs,
        b => b,
    };
    let room = p.spec.region.saturating_sub(minbs.saturating_sub(ba));
    ((room / ba).max(1), ba)
}

/// fio's `axmap_set_nr` (lib/axmap.c) from block `first`: sets up to `nr`
/// free blocks in a row, stopping at the first one already set (or the
/// map's end), and returns how many it set.
fn mark_run(p: &mut Proc, first: u64, nr: u64) -> u64 {
    let bits = p.randmap.len() as u64 * 64;
    let mut set = 0;
    while set < nr && first + set < bits.min(p.nblocks) {
        let b = first + set;
        let (w, bit) = ((b / 64) as usize, b % 64);
        if p.randmap[w] & (1 << bit) != 0 {
            break;
        }
        p.randmap[w] |= 1 << bit;
        if word_full(p, w) {
            p.randmap_full[w / 64] |= 1 << (w % 64);
        }
        p.randmap_left = p.randmap_left.saturating_sub(1);
        set += 1;
    }
    set
}

/// Whether word `w` of the random map has no free block below the map's end.
fn word_full(p: &Proc, w: usize) -> bool {
    let base = w as u64 * 64;
    let mut used = p.randmap[w];
    if base + 64 > p.nblocks {
        used |= !0u64 << (p.nblocks - base);
    }
    used == !0
}

/// fio's `__get_next_rand_offset` with the LFSR: its next block; once the
/// pass has returned every block, `get_next_rand_block`'s `fio_file_reset`
/// (a time_based job; `io_size` or `loops` past the region) starts the next
/// from the seed again.
fn next_lfsr_block(p: &mut Proc) -> u64 {
    let Some(l) = p.lfsr.as_mut() else {
        return 0;
    };
    if let Some(b) = l.next() {
        return b;
    }
    l.reset();
    l.next().unwrap_or(0)
}

/// fio's `setup_strided_zone_mode` then `get_next_offset` for a job with
/// `zonemode=strided` (one block size, one direction): the I/O's offset
/// relative to the job's, or None when fio's offset check fails (at or
/// past the file's end: the file is done).
fn strided_rel(p: &mut Proc, bs: u64) -> Option<u64> {
    let z = p.spec.strided?;
    if p.zone_bytes >= z.size {
        // A new zone; past the file's end, the first again.
        p.zone_bytes = 0;
        p.zone_base = p.zone_base.saturating_add(z.range).saturating_add(z.skip);
        if p.zone_base >= p.zone_limit {
            p.zone_base = 0;
        }
        p.seq_next = 0;
    }
    // zonesize > zonerange: the same zone again.
    if p.seq_next >= z.range {
        p.seq_next = 0;
    }
    if p.zone_bytes % z.range == 0 {
        // fio_file_reset: positions, random map and LFSR.
        p.seq_next = 0;
        let blocks = (z.range / bs).max(1);
        p.randmap.iter_mut().for_each(|w| *w = 0);
        p.randmap_full.iter_mut().for_each(|w| *w = 0);
        p.randmap_left = blocks;
        if let Some(l) = p.lfsr.as_mut() {
            l.reset();
        }
    }
    let in_zone = match p.spec.pattern {
        Pattern::Sequential => {
            // get_next_seq_offset: last_pos must be inside the file.
            if p.zone_base + p.seq_next >= p.zone_limit {
                return None;
            }
            let r = p.seq_next;
            p.seq_next += bs;
            r
        }
        Pattern::Random { .. } if p.lfsr.is_some() => next_lfsr_block(p) * bs,
        Pattern::Random { norandommap: true } => p.rng_off.below((z.range / bs).max(1)) * bs,
        Pattern::Random { .. } => {
            let blocks = (z.range / bs).max(1);
            let drawn = p.rng_off.below(blocks);
            next_random_block(p, blocks, drawn) * bs
        }
    };
    // `offset >= f->io_size`, then past the file's end.
    let rel = p.zone_base + in_zone;
    if in_zone >= p.spec.region || rel.saturating_add(bs) > p.zone_limit {
        return None;
    }
    p.zone_bytes += bs;
    Some(rel)
}

/// fio's random map at block `drawn` (a draw below `blocks`): the block if
/// free, else `axmap_next_free` (the next free one after it, wrapping); a
/// full map starts a new pass.
fn next_random_block(p: &mut Proc, blocks: u64, drawn: u64) -> u64 {
    let blocks = blocks.min(p.nblocks);
    if p.randmap_left == 0 {
        p.randmap.iter_mut().for_each(|w| *w = 0);
        p.randmap_full.iter_mut().for_each(|w| *w = 0);
        p.randmap_left = blocks;
    }
    let b = drawn.min(blocks - 1);
    let words = blocks.div_ceil(64) as usize;
    let (mut w, bit) = ((b / 64) as usize, b % 64);
    // Free bits of word w at or after `bit`; blocks past the end count as used.
    let free_in = |map: &[u64], w: usize, from: u64| -> u64 {
        let mut used = map[w];
        let base = w as u64 * 64;
        if base + 64 > blocks {
            used |= !0u64 << (blocks - base);
        }
        !used & (!0u64 << from)
    };
    let mut free = free_in(&p.randmap, w, bit);
    if free == 0 {
        // Find the next word that is not full, wrapping once.
        let mut next = None;
        for pass in 0..2 {
            let start = if pass == 0 { w + 1 } else { 0 };
            let mut sw = start / 64;
            let mut mask = !0u64 << (start % 64);
            while sw * 64 < words {
                let mut notfull = !p.randmap_full[sw] & mask;
                let top = (sw + 1) * 64;
                if top > words {
                    notfull &= !(!0u64 << (words - sw * 64));
                }
                if notfull != 0 {
                    next = Some(sw * 64 + notfull.trailing_zeros() as usize);
                    break;
                }
                sw += 1;
                mask = !0;
            }
            if next.is_some() {
                break;
            }
        }
        let Some(nw) = next else {
            // Every block this direction can reach is done, though the map (sized
            // from the smallest block size over both directions, as fio's
            // `init_random_map` sizes its axmap from `rw_min_bs`) has free bits
            // beyond: fio's offset check fails and the pass ends
            // (`get_next_rand_block` → `fio_file_reset`), so start a new pass.
            p.randmap_left = 0;
            let drawn = p.rng_off.below(blocks);
            return next_random_block(p, blocks, drawn);
        };
        w = nw;
        free = free_in(&p.randmap, w, 0);
    }
    let bit = free.trailing_zeros() as u64;
    p.randmap[w] |= 1 << bit;
    if free_in(&p.randmap, w, 0) == 0 {
        p.randmap_full[w / 64] |= 1 << (w % 64);
    }
    p.randmap_left -= 1;
    w as u64 * 64 + bit
}
