//! The simulation: one event loop over the machine's layers. Processes are explicit
//! state machines; the block layer, device and file system are sans-IO objects the
//! loop drives. Events are ordered by (time, insertion sequence), so a run is a pure
//! function of its configuration and seed.

use crate::machine::Machine;
use crate::stats::{ProcResult, RunResult};
use crate::workload::{Dir, Engine, Pattern, ProcSpec, Target};
use iostack_block::{Bio, BlockOut, Ctx, Partition, QueueConfig, QueueEvent, RequestQueue, Submit};
use iostack_core::{DevT, ReqFlags, TraceSink, Tracer, Tunables};
use iostack_des::{Duration, EventQueue, Instant, Rng, Seed};
use iostack_fs::dio::{self, BioLimits, Boundary, DioPlan};
use iostack_fs::ext2::{Ext2, Ext2Params};
use iostack_fs::{GetBlock, RawBdev};
use std::fmt;

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
}

/// Per-I/O observer (statistics front ends); called in event order.
pub trait IoObserver: std::any::Any {
    fn io_done(&mut self, proc_index: usize, io: &IoEvent);
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
    /// Hard stop for runaway runs.
    pub time_limit: Duration,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimError(pub String);

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SimError {}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// A process takes its next step.
    Proc(u32),
    /// A process notices a completed I/O (after its wake-up latency).
    IoDone(u32, u32),
    Queue(QueueEvent),
}

/// Where a process's I/O lands.
#[derive(Clone, Copy, Debug)]
enum Backing {
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
    issue: Instant,
    submitted: Instant,
    bios_left: u32,
    active: bool,
    depth: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Blocked {
    No,
    /// Sleeping in `get_request_wait`.
    OnRequest,
    /// Waiting for its own I/O (sync engine, or iodepth reached).
    OnIo,
    /// Not started yet (stonewall or startdelay).
    NotStarted,
    Done,
}

struct Proc {
    spec: ProcSpec,
    pid: u32,
    cpu: u32,
    backing: Backing,
    rng_off: Rng,
    rng_mix: Rng,
    /// fio's random map, one bit per block of the region.
    randmap: Vec<u64>,
    /// One bit per `randmap` word: set when the word is full.
    randmap_full: Vec<u64>,
    randmap_left: u64,
    nblocks: u64,
    seq_next: u64,
    bytes_issued: u64,
    start: Instant,
    end: Option<Instant>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    inflight: u32,
    submitting: Option<(u32, usize)>,
    blocked: Blocked,
    result: ProcResult,
}

pub struct Simulation {
    cfg: SimConfig,
    evq: EventQueue<Ev>,
    queue: RequestQueue,
    fs: Ext2,
    raw: RawBdev,
    procs: Vec<Proc>,
    tracer: Tracer,
    out: BlockOut,
    boundary: Boundary,
    write_flags: ReqFlags,
    bio_limits: BioLimits,
    events: u64,
    observer: Option<Box<dyn IoObserver>>,
}

/// Every tunable table of the stack.
pub fn tunable_tables() -> Vec<&'static [iostack_core::TunableDef]> {
    let mut v: Vec<&'static [iostack_core::TunableDef]> =
        vec![iostack_block::TUNABLES, iostack_fs::TUNABLES];
    v.extend(iostack_iosched::tunable_tables());
    v
}

/// Flags of an O_DIRECT write for the `dio/write_flags` variant, as each kernel's
/// macros define them (`include/linux/fs.h`).
fn dio_write_flags(name: &str, t: &Tunables) -> ReqFlags {
    let noidle_exists = t.profile() >= iostack_core::Profile::V2_6_32; // REQ_NOIDLE: 2.6.30
    let w = ReqFlags::WRITE;
    match name {
        "WRITE_SYNC" if noidle_exists => w | ReqFlags::SYNC | ReqFlags::NOIDLE | ReqFlags::UNPLUG,
        "WRITE_SYNC" => w | ReqFlags::SYNC | ReqFlags::UNPLUG,
        "WRITE_ODIRECT" => w | ReqFlags::SYNC | ReqFlags::UNPLUG,
        "WRITE_SYNC_PLUG" => w | ReqFlags::SYNC | ReqFlags::NOIDLE,
        "WRITE_ODIRECT_PLUG" => w | ReqFlags::SYNC,
        _ => panic!("unknown dio/write_flags {name}"),
    }
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
        let mut qcfg = QueueConfig::from_tunables(t, m.disk, parts, &*dev);
        qcfg.irq_cpu = m.irq_cpu;
        qcfg.kblockd_pid = 40;
        qcfg.kblockd_cpu = m.irq_cpu;
        let elv = iostack_iosched::by_name(&cfg.scheduler, t).map_err(SimError)?;
        let mut queue = RequestQueue::new(qcfg.clone(), elv, dev);
        queue.set_checks(cfg.checks);
        let bs = m.fs_block_size as u64;
        let fs = Ext2::new(Ext2Params {
            block_size: m.fs_block_size,
            blocks: fs_sectors * 512 / bs,
            blocks_per_group: bs * 8,
            inode_table_blocks: t.get_u64("fs/ext2/inode_table_blocks"),
            journal: m.fs == crate::machine::FsKind::Ext3,
        });
        let mut tracer = Tracer::new();
        tracer.process(0, "<idle>");
        tracer.process(qcfg.kblockd_pid, &format!("kblockd/{}", m.irq_cpu));
        let boundary = Boundary::from_name(t.get_enum("dio/boundary"));
        let write_flags = dio_write_flags(t.get_enum("dio/write_flags"), t);
        let bio_limits = BioLimits {
            max_sectors: qcfg.limits.max_sectors,
            max_segments: qcfg.limits.max_segments,
        };
        let mut sim = Simulation {
            evq: EventQueue::new(),
            queue,
            fs,
            raw: RawBdev::new(cap * 512, 12),
            procs: Vec::new(),
            tracer,
            out: BlockOut::default(),
            boundary,
            write_flags,
            bio_limits,
            events: 0,
            observer: None,
            cfg,
        };
        sim.setup_procs()?;
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
    }

    /// Attach an output to the event stream.
    pub fn attach(&mut self, sink: Box<dyn TraceSink>) {
        self.tracer.attach(sink);
    }

    /// Files are laid out before the run, in process order (fio's layout phase).
    fn setup_procs(&mut self) -> Result<(), SimError> {
        let specs = self.cfg.procs.clone();
        let m = self.cfg.machine.clone();
        let mut next_pid = 1000u32;
        for (i, spec) in specs.into_iter().enumerate() {
            let backing = match &spec.target {
                Target::File { path, size, goal } => {
                    let name = path
                        .strip_prefix(&format!("{}/", m.mount))
                        .unwrap_or(path)
                        .to_string();
                    let ino = match self.fs.lookup(&name) {
                        Some(ino) => ino,
                        None if *size == 0 && spec.io_size > 0 => {
                            return Err(SimError(format!(
                                "{}: {path}: No such file or directory (lay it out first, \
                                 e.g. --layout {path}=64M)",
                                spec.comm
                            )))
                        }
                        None => self
                            .fs
                            .create_sequential(&name, *size, *goal)
                            .map_err(|e| SimError(format!("laying out {path}: {e}")))?,
                    };
                    Backing::File(ino)
                }
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
                Backing::File(ino) => self.fs.i_size(ino),
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
                        Target::Device { path } => path.as_str(),
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
            let bs_min = spec.bs[0].min(spec.bs[1]).max(1);
            let nblocks = (spec.region / bs_min).max(1);
            let pid = spec.pid.unwrap_or_else(|| {
                next_pid += 1;
                next_pid - 1
            });
            let cpu = spec.cpu.unwrap_or((i as u32) % m.cpus) % m.cpus;
            let label = format!("proc/{}/{}", spec.name, i);
            let randmap = match spec.pattern {
                Pattern::Random { norandommap: false } => vec![0u64; nblocks.div_ceil(64) as usize],
                _ => Vec::new(),
            };
            self.tracer.process(pid, &spec.comm);
            let depth = match spec.engine {
                Engine::Sync => 1,
                Engine::Async => spec.iodepth.max(1),
            };
            let mut result = ProcResult::new(&spec, pid);
            result.iodepth = depth;
            self.procs.push(Proc {
                pid,
                cpu,
                backing,
                rng_off: Rng::stream(self.cfg.seed, &format!("{label}/offset")),
                rng_mix: Rng::stream(self.cfg.seed, &format!("{label}/rwmix")),
                randmap_full: vec![0u64; randmap.len().div_ceil(64)],
                randmap,
                randmap_left: nblocks,
                nblocks,
                seq_next: 0,
                bytes_issued: 0,
                start: Instant::ZERO,
                end: None,
                slots: Vec::with_capacity(depth as usize),
                free: Vec::new(),
                inflight: 0,
                submitting: None,
                blocked: Blocked::NotStarted,
                result,
                spec,
            });
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
        self.start_ready_procs(Instant::ZERO);
        let limit = Instant::ZERO + self.cfg.time_limit;
        while let Some(s) = self.evq.pop() {
            if s.at > limit {
                break;
            }
            self.events += 1;
            let now = s.at;
            match s.event {
                Ev::Proc(p) => self.step(p, now),
                Ev::IoDone(p, slot) => self.io_done(p, slot, now),
                Ev::Queue(qe) => {
                    self.queue.handle(now, qe, &mut self.tracer, &mut self.out);
                }
            }
            self.drain_block_out(now);
        }
        let end = self.evq.now();
        self.tracer.finish(end);
        let sinks = self.tracer.take_sinks();
        if self.procs.iter().all(|p| p.blocked == Blocked::Done) {
            assert!(
                self.queue.idle(),
                "block layer not idle after all processes finished"
            );
        }
        let observer = self.observer.take();
        let procs = self.procs.into_iter().map(|p| p.result).collect();
        let result = RunResult {
            procs,
            queue: *self.queue.stats(),
            end,
            events: self.events,
            scheduler: self.queue.elevator_name().to_string(),
        };
        (result, sinks, observer)
    }

    fn drain_block_out(&mut self, now: Instant) {
        for i in 0..self.out.events.len() {
            let (at, ev) = self.out.events[i];
            self.evq.schedule(at, Ev::Queue(ev));
        }
        self.out.events.clear();
        for i in 0..self.out.woken.len() {
            let owner = self.out.woken[i];
            let p = (owner >> 32) as u32;
            let proc_ = &mut self.procs[p as usize];
            assert_eq!(
                proc_.blocked,
                Blocked::OnRequest,
                "woke a task that was not asleep"
            );
            proc_.blocked = Blocked::No;
            // The woken submitter carries on with its next bio.
            let at = now + Duration(self.cfg.machine.cpu_wake_ns);
            self.evq.schedule(at, Ev::Proc(p));
        }
        self.out.woken.clear();
        for i in 0..self.out.completed.len() {
            let c = self.out.completed[i];
            let p = (c.owner >> 32) as u32;
            let slot = (c.owner & 0xffff_ffff) as u32;
            let s = &mut self.procs[p as usize].slots[slot as usize];
            assert!(
                s.active && s.bios_left > 0,
                "completion for an idle I/O slot"
            );
            s.bios_left -= 1;
            if s.bios_left == 0 {
                // dio_bio_end_io wakes the submitter (or aio completes the iocb).
                let at = now + Duration(self.cfg.machine.cpu_wake_ns);
                self.evq.schedule(at, Ev::IoDone(p, slot));
            }
        }
        self.out.completed.clear();
    }

    fn start_ready_procs(&mut self, now: Instant) {
        for i in 0..self.procs.len() {
            if self.procs[i].blocked != Blocked::NotStarted {
                continue;
            }
            let wall = self.procs[i].spec.stonewall
                && self.procs[..i].iter().any(|p| p.blocked != Blocked::Done);
            if wall {
                continue;
            }
            let at = now + self.procs[i].spec.startdelay;
            self.procs[i].start = at;
            self.procs[i].result.start = at;
            self.procs[i].blocked = Blocked::No;
            self.evq.schedule(at, Ev::Proc(i as u32));
        }
    }

    fn has_work(&self, p: &Proc, now: Instant) -> bool {
        if let Some(rt) = p.spec.runtime {
            if now >= p.start + rt {
                return false;
            }
        }
        p.spec.time_based || p.bytes_issued < p.spec.io_size
    }

    /// One step of process `pi`: submit the next bio of the I/O being submitted,
    /// or start a new I/O, or go to sleep.
    fn step(&mut self, pi: u32, now: Instant) {
        let cpu_bio = Duration(self.cfg.machine.cpu_bio_ns);
        if let Some((slot, i)) = self.procs[pi as usize].submitting {
            if i == usize::MAX {
                // Woken from get_request_wait after the last bio: unplug and go on.
                self.procs[pi as usize].submitting = None;
                self.finish_submission(pi, slot, now);
                return;
            }
            let p = &self.procs[pi as usize];
            let s = &p.slots[slot as usize];
            let db = s.plan.bios[i];
            let dev = match p.backing {
                Backing::File(_) => self.cfg.machine.fs_dev(),
                Backing::Raw { dev, .. } => dev,
            };
            let flags = match s.dir {
                Dir::Read => ReqFlags::READ,
                Dir::Write => self.write_flags,
            };
            let bio = Bio {
                dev,
                sector: db.sector,
                sectors: db.sectors,
                segments: db.segments,
                flags,
                pid: p.pid,
                cpu: p.cpu,
                owner: ((pi as u64) << 32) | slot as u64,
                ioprio: p.spec.ioprio,
                submitted_at: now,
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
                p.blocked = Blocked::OnRequest;
                if last {
                    // The wake-up resumes at the unplug below.
                    p.submitting = Some((slot, usize::MAX));
                }
                return;
            }
            if !last {
                self.evq.schedule(now + cpu_bio, Ev::Proc(pi));
                return;
            }
            self.finish_submission(pi, slot, now);
            return;
        }
        self.issue_next(pi, now);
    }

    /// All bios of an I/O are queued: `blk_run_address_space` unplugs (U), then the
    /// task waits (sync) or goes on submitting (async).
    fn finish_submission(&mut self, pi: u32, slot: u32, now: Instant) {
        let p = &self.procs[pi as usize];
        let ctx = Ctx {
            pid: p.pid,
            cpu: p.cpu,
        };
        self.queue.unplug(now, ctx, &mut self.tracer, &mut self.out);
        let p = &mut self.procs[pi as usize];
        p.slots[slot as usize].submitted = now;
        match p.spec.engine {
            Engine::Sync => p.blocked = Blocked::OnIo,
            // io_submit returns and the task goes on to prepare the next iocb.
            Engine::Async => self.issue_next(pi, now),
        }
    }

    fn issue_next(&mut self, pi: u32, now: Instant) {
        let depth = self.procs[pi as usize].result.iodepth;
        let p = &self.procs[pi as usize];
        if p.blocked == Blocked::Done {
            return;
        }
        if !self.has_work(p, now) {
            if p.inflight == 0 {
                self.finish_proc(pi, now);
            } else {
                self.procs[pi as usize].blocked = Blocked::OnIo;
            }
            return;
        }
        if p.inflight >= depth {
            self.procs[pi as usize].blocked = Blocked::OnIo;
            return;
        }
        // Choose direction, offset and length, as fio's get_io_u does.
        let p = &mut self.procs[pi as usize];
        let dir = if p.spec.read_pct >= 100 {
            Dir::Read
        } else if p.spec.read_pct == 0 {
            Dir::Write
        } else if p.rng_mix.ratio(p.spec.read_pct as u64, 100) {
            Dir::Read
        } else {
            Dir::Write
        };
        let bs = p.spec.bs[dir as usize];
        let rel = match p.spec.pattern {
            Pattern::Sequential => {
                if p.seq_next + bs > p.spec.region {
                    p.seq_next = 0; // wrap for another pass
                }
                let r = p.seq_next;
                p.seq_next += bs;
                r
            }
            Pattern::Random { norandommap } => {
                let blocks = (p.spec.region / bs).max(1);
                let b = if norandommap {
                    p.rng_off.below(blocks)
                } else {
                    next_random_block(p, blocks)
                };
                b * bs
            }
        };
        let offset = p.spec.offset + rel;
        let len = bs;
        p.bytes_issued += len;
        // Take a slot.
        let slot = match p.free.pop() {
            Some(s) => s,
            None => {
                p.slots.push(Slot {
                    plan: DioPlan::default(),
                    dir,
                    offset: 0,
                    len: 0,
                    issue: now,
                    submitted: now,
                    bios_left: 0,
                    active: false,
                    depth: 0,
                });
                p.slots.len() as u32 - 1
            }
        };
        p.inflight += 1;
        p.result.note_depth(p.inflight);
        let backing = p.backing;
        let direct = p.spec.direct;
        assert!(direct, "buffered I/O reached the direct path");
        let mut plan = std::mem::take(&mut p.slots[slot as usize].plan);
        let r = match backing {
            Backing::File(ino) => dio::build(
                &mut self.fs,
                ino,
                dir == Dir::Write,
                offset,
                len,
                self.boundary,
                self.bio_limits,
                &mut plan,
            ),
            Backing::Raw { size, .. } => {
                let mut raw = RawBdev::new(size, self.raw.blkbits());
                dio::build(
                    &mut raw,
                    0,
                    dir == Dir::Write,
                    offset,
                    len,
                    self.boundary,
                    self.bio_limits,
                    &mut plan,
                )
            }
        };
        let p = &mut self.procs[pi as usize];
        if let Err(e) = r {
            p.result.error = Some(e.to_string());
            p.slots[slot as usize].plan = plan;
            p.free.push(slot);
            p.inflight -= 1;
            self.finish_proc(pi, now);
            return;
        }
        let pages = len.div_ceil(dio::PAGE_SIZE);
        let nbios = plan.bios.len() as u32;
        let s = &mut p.slots[slot as usize];
        s.plan = plan;
        s.dir = dir;
        s.offset = offset;
        s.len = len;
        s.issue = now;
        s.submitted = now;
        s.bios_left = nbios;
        s.active = true;
        s.depth = p.inflight;
        let m = &self.cfg.machine;
        let cost = Duration(m.cpu_syscall_ns + pages * m.cpu_page_ns);
        if nbios == 0 {
            // Entirely a hole or past EOF: no I/O, completes at once.
            self.evq.schedule(now + cost, Ev::IoDone(pi, slot));
            return;
        }
        p.submitting = Some((slot, 0));
        self.evq.schedule(now + cost, Ev::Proc(pi));
    }

    fn io_done(&mut self, pi: u32, slot: u32, now: Instant) {
        let p = &mut self.procs[pi as usize];
        let s = &mut p.slots[slot as usize];
        assert!(s.active && s.bios_left == 0);
        s.active = false;
        let bytes = s.plan.bytes;
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
                },
            );
        }
        p.inflight -= 1;
        p.free.push(slot);
        if p.blocked == Blocked::OnIo {
            p.blocked = Blocked::No;
            self.issue_next(pi, now);
        }
    }

    fn finish_proc(&mut self, pi: u32, now: Instant) {
        let p = &mut self.procs[pi as usize];
        p.blocked = Blocked::Done;
        p.end = Some(now);
        p.result.end = now;
        self.start_ready_procs(now);
    }

    pub fn events_processed(&self) -> u64 {
        self.events
    }
}

/// fio's random offset with a random map: a uniformly chosen block, or the next
/// free one after it when it was already done in this pass (`get_next_free_block`
/// over fio's two-level `axmap`).
fn next_random_block(p: &mut Proc, blocks: u64) -> u64 {
    let blocks = blocks.min(p.nblocks);
    if p.randmap_left == 0 {
        p.randmap.iter_mut().for_each(|w| *w = 0);
        p.randmap_full.iter_mut().for_each(|w| *w = 0);
        p.randmap_left = blocks;
    }
    let b = p.rng_off.below(blocks);
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
        w = next.expect("a free block exists while randmap_left > 0");
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
