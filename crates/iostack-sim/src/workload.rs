//! What the simulated processes do, independent of the front end that described it
//! (fio job files, dd command lines, experiment files).

use iostack_des::{Duration, Rng};

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

/// The `posix_fadvise` advice a process gives its file at open (fio's
/// `fadvise_hint`, given in `td_io_open_file`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fadvise {
    /// None given (`POSIX_FADV_NORMAL` is the state of a new open file).
    Normal,
    /// `POSIX_FADV_RANDOM`: no readahead (`f_ra.ra_pages = 0` before 2.6.34,
    /// `FMODE_RANDOM` after).
    Random,
    /// `POSIX_FADV_SEQUENTIAL`: twice the device's readahead window.
    Sequential,
}

/// fio's `thinktime` options: after every `blocks` I/Os (completed, or issued
/// with `thinktime_blocks_type=issue`), wait for the I/Os in flight, spin
/// `spin`, then sleep the rest of `think` (backend.c `handle_thinktime`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThinkTime {
    pub think: Duration,
    pub spin: Duration,
    pub blocks: u64,
    pub issue_side: bool,
}

/// fio's rate limit of one direction (`rate`/`rate_iops`), in bytes per second
/// or I/Os per second; `poisson` for `rate_process=poisson`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimit {
    pub bps: u64,
    pub iops: u64,
    pub poisson: bool,
}

/// fio's `random_distribution=zoned` / `zoned_abs`: per direction, the zones
/// as (access percentage, size: percent of the region or bytes), in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zoned {
    pub absolute: bool,
    pub zones: [Vec<(u32, u64)>; 2],
}

/// What one entry of a replayed log does (fio's `io_piece` ddir).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayKind {
    Io(Dir),
    /// v2's `wait`: until `offset` ms after the start.
    Wait,
    /// A file action (`add`/`open`/`close`): only its delay.
    Mark,
}

/// One entry of a replayed log: offset and length in bytes of the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayIo {
    /// fio's `ipo->delay`, µs after the previous issue (`iolog_delay`).
    pub delay_us: u64,
    pub kind: ReplayKind,
    pub offset: u64,
    pub len: u64,
}

/// fio's `read_iolog`: the I/Os of a text iolog or a blktrace, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    pub ios: Vec<ReplayIo>,
}

impl Replay {
    /// A digest of the entries for the configuration hash (FNV-1a over the
    /// fields), so that the hash reads a long log in constant space.
    pub fn digest(&self) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for io in &self.ios {
            let kind = match io.kind {
                ReplayKind::Io(Dir::Read) => 0,
                ReplayKind::Io(Dir::Write) => 1,
                ReplayKind::Wait => 2,
                ReplayKind::Mark => 3,
            };
            for v in [io.delay_us, kind, io.offset, io.len] {
                for b in v.to_le_bytes() {
                    h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                }
            }
        }
        h
    }
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
    /// The file of a diskless engine (fio's `null`, `FIO_DISKLESSIO`): no
    /// file is made, no I/O reaches the block layer.
    Diskless { path: String },
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
    /// fsync after every N writes (fio `fsync=N`/`fdatasync=N`; 0 = never).
    pub fsync_every: u64,
    /// Buffered writes are O_SYNC/O_DSYNC (fio `sync=1`/`sync=dsync`): each
    /// `write()` writes back and waits for its pages before it returns.
    pub osync: bool,
    /// Those syncs are data syncs (fio `fdatasync=N`, `sync=dsync`: the
    /// file system's `->fsync` with `datasync`).
    pub datasync: bool,
    /// Stop after this many I/Os (fio `number_ios`; 0 = no limit): fio's
    /// `exceeds_number_ios` counts completed, queued and in-flight I/Os, i.e. every
    /// I/O issued.
    pub number_ios: u64,
    /// Per direction (read, write): fio's `min_bs`/`max_bs` (`bsrange`, or the
    /// smallest and largest `bssplit` size); both `bs` when the size is fixed.
    pub bs_range: [(u64, u64); 2],
    /// Per direction: fio's `bssplit` entries (size, percentage), in fio's order.
    pub bssplit: [Vec<(u64, u64)>; 2],
    /// fio's `thinktime` (zero `think`: none).
    pub think: ThinkTime,
    /// Per direction (read, write): fio's `rate`/`rate_iops` (zero: none).
    pub rate: [RateLimit; 2],
    /// fio's zoned random distribution (None: uniform).
    pub zoned: Option<Zoned>,
    /// Per direction: fio's `percentage_random` (100: every I/O random).
    pub perc_random: [u32; 2],
    /// fio's `rw=rand...:N`: a new random offset every N I/Os (0 or 1: each).
    pub seq_nr: u32,
    /// fio's `rw_sequencer=identical`: between them, the same offset again
    /// (else sequential).
    pub seq_identical: bool,
    /// fio's `rw=read:N` (and write): N bytes skipped after each I/O.
    pub seq_add: u64,
    /// fio's `rw=read:-N`: each I/O N bytes back from the last one's end,
    /// from the region's end again when that is before its start
    /// (`get_next_seq_offset`).
    pub seq_back: u64,
    /// Drop the file's cached pages at open (fio's `invalidate`,
    /// `file_invalidate_cache`).
    pub invalidate: bool,
    /// The advice given at open (fio's `fadvise_hint`).
    pub fadvise: Fadvise,
    /// Start only once the processes `[a, b)` are done: the next step of one
    /// program that several processes carry out in turn (fs_mark's file after
    /// file, a new iteration after the last), where `stonewall` would wait for
    /// every earlier process.
    pub after: Option<(u32, u32)>,
    /// Read a block, then write it back at the same offset, and on to the
    /// next (Bonnie's rewrite test: read(), dirty a word, lseek back,
    /// write()); `io_size` counts both.
    pub rewrite: bool,
    /// Per direction: fio's `blockalign` (`ba`), where random offsets fall
    /// (0: at multiples of `bs`).
    pub ba: [u64; 2],
    /// fio's `zipf`, `pareto` and `normal` random distributions (None:
    /// uniform or zoned).
    pub dist: Option<crate::dist::Dist>,
    /// fio's `read_iolog`: the I/Os to issue, in order, instead of the
    /// pattern (None: the pattern).
    pub replay: Option<std::sync::Arc<Replay>>,
    /// The file is unlinked and created again at open (Bonnie's `newfile`
    /// with `create`): truncated to 0, its blocks freed and its pages dropped.
    pub recreate: bool,
    /// fio's `nrfiles` > 1: the job's other files (file 0 is `target`), each
    /// with the same `offset` and `region`, every one `fresh` or laid out
    /// as `target` is.
    pub more_files: Vec<Target>,
    /// fio's `file_service_type`: how the file of the next I/O is chosen.
    pub file_service: FileService,
    /// fio's `exitall` (set by any job, for all): when this process ends,
    /// the processes it terminates (its `exit_what`).
    pub exit_what: Option<ExitWhat>,
    /// fio's `randrepeat`/`randseed`: where the process's random streams
    /// (offsets, mix, sizes, zones, distributions, files) are seeded from.
    pub randseed: RandSeed,
    /// fio's `random_generator`: where uniform random offsets come from.
    pub rand_gen: RandGen,
    /// fio's `verify` with `do_verify` on a job that writes: the read-back
    /// (`crate::verify`); None: no verification I/O.
    pub verify: Option<crate::verify::Verify>,
    /// fio's `zonemode=strided` (None: no zones).
    pub strided: Option<Strided>,
    /// fio's `io_submit_mode=offload` (`rate-submit.c`): the job's thread
    /// only chooses the I/Os and paces them (`rate_ddir` without
    /// `io_u_quiesce`); `iodepth` submit workers, each a thread with its
    /// own pid, issue them one at a time (`crate::offload`).
    pub offload: bool,
    /// fio's `poisson_state` seeds per direction (`rand_seeds[
    /// FIO_RAND_POISSON_OFF]`, `[FIO_RAND_POISSON2_OFF]`) for
    /// `rate_process=poisson`; None: drawn from the run's seed
    /// (`randrepeat=0` without `randseed`).
    pub poisson_seeds: Option<[u64; 2]>,
    /// fio's `rate_min`/`rate_iops_min` (`crate::minrate`; None: none).
    pub min_rate: Option<crate::minrate::MinRate>,
    /// fio's `flow` control (`crate::flow`; None: `flow=0`).
    pub flow: Option<crate::flow::FlowSpec>,
}

/// fio's `zonemode=strided` (`setup_strided_zone_mode`, io_u.c): `size`
/// bytes of I/O in each zone of `range` bytes, then `skip` bytes on; past
/// the end of the file, from the job's offset again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strided {
    pub size: u64,
    pub range: u64,
    pub skip: u64,
}

/// fio's `random_generator` for a process's uniform random offsets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RandGen {
    /// `tausworthe` (fio's default): the process's offset stream, with the
    /// random map unless `norandommap`.
    #[default]
    Streams,
    /// `lfsr`: fio's register (`crate::lfsr`) over the file's blocks, from
    /// this seed (fio's `rand_seeds[FIO_RAND_BLOCK_OFF]`; None: drawn from
    /// the run's seed, as `randrepeat=0` without `randseed` draws fio's
    /// from the entropy pool). No random map: each block once per pass.
    Lfsr(Option<u64>),
    /// `tausworthe64`: fio's 64-bit Tausworthe generator (`crate::taus`)
    /// from this seed (fio's `random_state`; None: drawn from the run's
    /// seed), with fio's arithmetic for the block: the offsets real fio
    /// issues, random map or not.
    Tausworthe64(Option<u64>),
}

/// The seed of a process's random streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RandSeed {
    /// `randrepeat=1` (fio's fixed `FIO_RANDSEED`): the run's seed, the
    /// same streams every run.
    #[default]
    Repeat,
    /// `randrepeat=0` (fio's seeds from the entropy pool): streams that
    /// differ from the repeatable ones, drawn from the run's seed (`--seed`
    /// is the run-to-run variation a simulation has).
    Fresh,
    /// `randseed=N`: streams from N, whatever the run's seed.
    Fixed(u64),
}

/// fio's `exit_what` (`fio_terminate_threads`' `terminate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitWhat {
    /// `TERMINATE_GROUP`: the jobs of its reporting group.
    Group,
    /// `TERMINATE_STONEWALL`: the jobs running (started, not done).
    Stonewall,
    /// `TERMINATE_ALL`: every job.
    All,
}

/// fio's `file_service_type` (`__get_next_file`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FileServiceKind {
    /// `roundrobin`: the next file not done after `nr` I/Os.
    #[default]
    RoundRobin,
    /// `sequential`: one file until it is done, then the next.
    Sequential,
    /// `random`: a file drawn uniformly (a done one is drawn again) every
    /// `nr` I/Os.
    Random,
}

/// fio's `file_service_type` with its `:N` (`file_service_nr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileService {
    pub kind: FileServiceKind,
    /// I/Os to a file before the next is chosen (at least 1).
    pub nr: u32,
}

impl Default for FileService {
    fn default() -> Self {
        FileService {
            kind: FileServiceKind::RoundRobin,
            nr: 1,
        }
    }
}

/// As derived, with `after` (and the fio fields below) only when set, so that the configuration hash of
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
        if self.osync || self.datasync {
            d.field("osync", &self.osync)
                .field("datasync", &self.datasync);
        }
        if self.rewrite {
            d.field("rewrite", &self.rewrite);
        }
        if self.ba != [0, 0] {
            d.field("ba", &self.ba);
        }
        if let Some(dist) = &self.dist {
            d.field("dist", dist);
        }
        if let Some(r) = &self.replay {
            d.field("replay_ios", &r.ios.len())
                .field("replay_digest", &r.digest());
        }
        if self.recreate {
            d.field("recreate", &self.recreate);
        }
        if self.randseed != RandSeed::Repeat {
            d.field("randseed", &self.randseed);
        }
        if self.rand_gen != RandGen::Streams {
            d.field("rand_gen", &self.rand_gen);
        }
        if let Some(v) = &self.verify {
            d.field("verify", v);
        }
        if let Some(z) = &self.strided {
            d.field("strided", z);
        }
        if self.offload {
            d.field("offload", &self.offload);
        }
        if self.seq_back > 0 {
            d.field("seq_back", &self.seq_back);
        }
        if let Some(m) = &self.min_rate {
            d.field("min_rate", m);
        }
        if self.rate.iter().any(|r| r.poisson) {
            d.field("poisson_seeds", &self.poisson_seeds);
        }
        if let Some(w) = &self.exit_what {
            d.field("exit_what", w);
        }
        if !self.more_files.is_empty() {
            d.field("more_files", &self.more_files)
                .field("file_service", &self.file_service);
        }
        if self.think.think != Duration::ZERO {
            d.field("think", &self.think);
        }
        if self.seq_nr > 1 || self.seq_add > 0 {
            d.field("seq_nr", &self.seq_nr)
                .field("seq_identical", &self.seq_identical)
                .field("seq_add", &self.seq_add);
        }
        if self.zoned.is_some() || self.perc_random != [100, 100] {
            d.field("zoned", &self.zoned)
                .field("perc_random", &self.perc_random);
        }
        if self.rate != [RateLimit::default(); 2] {
            d.field("rate", &self.rate);
        }
        // fio's invalidate and fadvise_hint, for buffered processes, where
        // they change the requests (a direct process's requests do not depend
        // on the readahead state, and its file's cache is usually empty).
        if !self.direct && (self.invalidate || self.fadvise != Fadvise::Normal) {
            d.field("invalidate", &self.invalidate)
                .field("fadvise", &self.fadvise);
        }
        // Likewise the fields of fio's number_ios, bsrange and bssplit, only
        // when they change the workload.
        if self.number_ios > 0 || self.varies(Dir::Read) || self.varies(Dir::Write) {
            d.field("number_ios", &self.number_ios)
                .field("bs_range", &self.bs_range)
                .field("bssplit", &self.bssplit);
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
            osync: false,
            datasync: false,
            number_ios: 0,
            bs_range: [(4096, 4096), (4096, 4096)],
            bssplit: [Vec::new(), Vec::new()],
            invalidate: false,
            fadvise: Fadvise::Normal,
            think: ThinkTime::default(),
            zoned: None,
            perc_random: [100, 100],
            seq_nr: 0,
            seq_identical: false,
            seq_add: 0,
            seq_back: 0,
            rate: [RateLimit::default(); 2],
            after: None,
            rewrite: false,
            ba: [0, 0],
            dist: None,
            replay: None,
            recreate: false,
            more_files: Vec::new(),
            file_service: FileService::default(),
            exit_what: None,
            randseed: RandSeed::Repeat,
            rand_gen: RandGen::Streams,
            verify: None,
            strided: None,
            offload: false,
            poisson_seeds: None,
            min_rate: None,
            flow: None,
        }
    }
}

impl ProcSpec {
    /// Whether the I/O size of direction `d` varies (`bsrange`, `bssplit`).
    pub fn varies(&self, d: Dir) -> bool {
        let (lo, hi) = self.bs_range[d as usize];
        lo != hi
    }
}

/// The length of the next I/O of direction `d` at byte `rel` of a region of
/// `region` bytes, as fio's `get_next_buflen` (io_u.c) chooses it, drawing `r`
/// from `rng` where fio draws from its `bsrange_state`.
///
/// * `bsrange`: `minbs + maxbs * r / (frand_max + 1)`, which fio computes in
///   `double`; here in integers: `r` is 32 bits (fio's tausworthe range), so
///   `(maxbs * r) >> 32` is the exact value fio's double rounds down to.
/// * `bssplit`: fio's cumulative test `r / perc <= frand_max / 100`, in fio's
///   own integer arithmetic, skipping entries that do not fit.
///
/// Either is rounded down to a multiple of `minbs` (fio's `bs_unaligned` unset),
/// capped at `maxbs`, and redrawn until it fits the region (`io_u_fits`); the
/// caller makes sure `minbs` fits. After 1000 draws (fio would loop on) the
/// length is `minbs`.
pub fn next_buflen(spec: &ProcSpec, d: Dir, rel: u64, region: u64, rng: &mut Rng) -> u64 {
    let (minbs, maxbs) = spec.bs_range[d as usize];
    let split = &spec.bssplit[d as usize];
    let fits = |len: u64| rel.saturating_add(len) <= region;
    const FRAND_MAX: u64 = u32::MAX as u64;
    for _ in 0..1000 {
        let r = rng.next_u64() >> 32;
        let mut len = if split.is_empty() {
            minbs + ((u128::from(maxbs) * u128::from(r)) >> 32) as u64
        } else {
            let mut perc = 0u64;
            let mut len = minbs;
            for &(bs, p) in split.iter().filter(|e| e.1 > 0) {
                len = bs;
                perc += p;
                if r / perc <= FRAND_MAX / 100 && fits(bs) {
                    break;
                }
            }
            len
        };
        len -= len % minbs;
        len = len.min(maxbs);
        if fits(len) && len > 0 {
            return len;
        }
    }
    minbs
}

/// The block of a zoned random I/O (fio's `__get_next_rand_offset_zoned` and
/// `_zoned_abs`, io_u.c) in a region of `lastb` blocks of `bs` bytes: `v` in
/// 1..=100 from `zone_rng` (fio's `rand_between(&td->zone_state, 1, 100)`)
/// picks the zone whose access percentages cover it (fio's
/// `zone_state_index`); the block is uniform in the zone (`lastb * r /
/// (rand_max + 1)` on a 32-bit draw from `off_rng`, exact in integers) plus
/// the zone's start. A direction without zones is uniform over the region.
pub fn zoned_block(
    z: &Zoned,
    d: Dir,
    lastb: u64,
    bs: u64,
    zone_rng: &mut Rng,
    off_rng: &mut Rng,
) -> u64 {
    let uniform =
        |n: u64, rng: &mut Rng| ((u128::from(n) * u128::from(rng.next_u64() >> 32)) >> 32) as u64;
    let zones = &z.zones[d as usize];
    if zones.is_empty() {
        return uniform(lastb, off_rng);
    }
    let v = 1 + ((100u64 * (zone_rng.next_u64() >> 32)) >> 32);
    let (mut acc, mut start) = (0u64, 0u64);
    for &(access, size) in zones {
        let end = start + size;
        acc += u64::from(access);
        if v <= acc {
            return if z.absolute {
                let (s, e) = (start / bs, end / bs);
                s + uniform(e.saturating_sub(s), off_rng)
            } else {
                let off = start * lastb / 100;
                off + uniform(lastb * (end - start) / 100, off_rng)
            };
        }
        start = end;
    }
    // Access percentages add up to 100 (checked by the parser).
    uniform(lastb, off_rng)
}
