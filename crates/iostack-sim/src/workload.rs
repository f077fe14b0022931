//! What the simulated processes do, independent of the front end that described it
//! (fio job files, dd command lines, experiment files).

use iostack_des::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    Sequential,
    /// fio's random offsets: uniform block choice, with a random map so each block
    /// is visited once per pass unless `norandommap`.
    Random {
        norandommap: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// One I/O at a time, the caller waits (sync, psync, vsync, pvsync, pvsync2).
    Sync,
    /// Asynchronous submission up to `iodepth` in flight (libaio, io_uring).
    Async,
}

/// Where the I/O goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A file on the machine's file system, created (laid out) before the run if
    /// it does not exist, sequentially from block `goal` if given.
    File {
        path: String,
        size: u64,
        goal: Option<u64>,
    },
    /// A block device node (`/dev/sda`, `/dev/sda1`).
    Device { path: String },
}

/// One process (a fio job clone or a dd).
#[derive(Clone, PartialEq, Eq)]
pub struct ProcSpec {
    /// Task name as blktrace records it (`comm`, at most 15 characters).
    pub comm: String,
    /// Report name (fio job name).
    pub name: String,
    pub group: u32,
    pub target: Target,
    pub pattern: Pattern,
    /// Percentage of reads for mixed workloads (100 = read only, 0 = write only).
    pub read_pct: u32,
    pub bs: [u64; 2],
    /// First byte of the region and its length.
    pub offset: u64,
    pub region: u64,
    /// Bytes of I/O to do (fio `io_size`, by default the region).
    pub io_size: u64,
    pub engine: Engine,
    pub iodepth: u32,
    pub direct: bool,
    pub runtime: Option<Duration>,
    pub time_based: bool,
    pub startdelay: Duration,
    /// Wait for all earlier processes to finish before starting (fio `stonewall`).
    pub stonewall: bool,
    /// I/O priority (class, level).
    pub ioprio: (u8, u8),
    /// Fixed task id and CPU (to mirror a published trace); assigned otherwise.
    pub pid: Option<u32>,
    pub cpu: Option<u32>,
    /// The file is created empty at open (a write-only fio job without
    /// `overwrite`, which unlinks and recreates it; dd's `of=`).
    pub fresh: bool,
    /// fsync after the last write (fio `end_fsync`, dd `conv=fsync`).
    pub end_fsync: bool,
    /// fsync after every N writes (fio `fsync=N`; 0 = never).
    pub fsync_every: u64,
    /// Start only once the processes `[a, b)` are done: the next step of one
    /// program that several processes carry out in turn (fs_mark's file after
    /// file, a new iteration after the last), where `stonewall` would wait for
    /// every earlier process.
    pub after: Option<(u32, u32)>,
}

/// As derived, with `after` only when set, so that the configuration hash of
/// every workload without it is what it was before the field existed.
impl std::fmt::Debug for ProcSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("ProcSpec");
        d.field("comm", &self.comm)
            .field("name", &self.name)
            .field("group", &self.group)
            .field("target", &self.target)
            .field("pattern", &self.pattern)
            .field("read_pct", &self.read_pct)
            .field("bs", &self.bs)
            .field("offset", &self.offset)
            .field("region", &self.region)
            .field("io_size", &self.io_size)
            .field("engine", &self.engine)
            .field("iodepth", &self.iodepth)
            .field("direct", &self.direct)
            .field("runtime", &self.runtime)
            .field("time_based", &self.time_based)
            .field("startdelay", &self.startdelay)
            .field("stonewall", &self.stonewall)
            .field("ioprio", &self.ioprio)
            .field("pid", &self.pid)
            .field("cpu", &self.cpu)
            .field("fresh", &self.fresh)
            .field("end_fsync", &self.end_fsync)
            .field("fsync_every", &self.fsync_every);
        if let Some(a) = &self.after {
            d.field("after", a);
        }
        d.finish()
    }
}

impl ProcSpec {
    /// One process doing synchronous 4 KiB O_DIRECT sequential reads of `region`
    /// bytes of `target`: the starting point front ends and tests adjust with
    /// struct update syntax.
    pub fn direct_reader(comm: &str, name: &str, target: Target, region: u64) -> ProcSpec {
        ProcSpec {
            comm: comm.to_string(),
            name: name.to_string(),
            group: 0,
            target,
            pattern: Pattern::Sequential,
            read_pct: 100,
            bs: [4096, 4096],
            offset: 0,
            region,
            io_size: region,
            engine: Engine::Sync,
            iodepth: 1,
            direct: true,
            runtime: None,
            time_based: false,
            startdelay: Duration::ZERO,
            stonewall: false,
            ioprio: (2, 4),
            pid: None,
            cpu: None,
            fresh: false,
            end_fsync: false,
            fsync_every: 0,
            after: None,
        }
    }
}
