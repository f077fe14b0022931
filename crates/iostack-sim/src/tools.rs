//! The iozone and fs_mark front ends: their parsed command lines (from
//! `iostack-workload`) mapped onto simulated processes, and what each tool's
//! report needs to know of them. Options the simulator cannot carry out are
//! refused here, by name, with the reason.
//!
//! On ext3 the journal runs: creating and growing a file open handles
//! (inode and block bitmaps, group descriptor, inode table, indirect blocks;
//! no directory blocks), and fsync commits the inode's transaction through
//! kjournald (`ext3_sync_file`); ext4 with `fs/ext4/journal=1` the same
//! through jbd2, a file's create handle also carrying what the `mkdir`s of
//! its directories dirtied. On XFS (`fs/xfs/log=1`) creation, allocation,
//! timestamps and size updates are logged and fsync forces the log
//! (`xfs_fsync`), but the log's tail is not: no metadata is written in place.
//! On ext2 fsync is the page writeback of the file and the wait for it. The
//! reports say so.

use crate::frontend::target_of;
use crate::machine::Machine;
use crate::workload::{Pattern, ProcSpec};
use crate::SimError;
use iostack_workload::{FsMarkError, FsMarkSpec, IozoneError, IozoneSpec};

/// What the reports print beside the numbers about what was not simulated.
pub const NOT_MODELLED_FSYNC: &str = "fsync on ext3 commits its journal (kjournald, barrier= \
     as mounted), on ext4 with fs/ext4/journal=1 through jbd2; on XFS it forces the log \
     (xfs_fsync: the iclog writes of creation, allocation, timestamps and size updates, \
     with the cache flush each kernel issues) but XFS's metadata is never written in \
     place (no AIL, xfsaild or log tail); otherwise, and on ext2, it is page writeback \
     and the wait for it; ext4 places \
     directories as 2.6.3x's find_group_orlov does and journals mkdir's blocks, but a \
     directory never grows past its first block; on ext2, ext3 and XFS the namespace is flat";

/// The pid iozone's processes share: one process runs every test of a row.
const IOZONE_PID: u32 = 1000;

/// Which number of iozone's table a timed process gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IozoneColumn {
    Write,
    Rewrite,
    Read,
    Reread,
    RandomRead,
    RandomWrite,
}

impl IozoneColumn {
    /// Position among the table's result columns.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One row of iozone's table: a simulation of its own (iozone unlinks the file
/// and calls sync() between rows; iostack starts each row on a freshly made file
/// system instead, as unlink and sync() are not simulated).
#[derive(Clone, Debug)]
pub struct IozoneRow {
    pub kb: u64,
    pub reclen: u64,
    pub procs: Vec<ProcSpec>,
    /// The timed processes: (column, process index).
    pub timed: Vec<(IozoneColumn, usize)>,
}

fn ioz_err(option: &str, message: String) -> SimError {
    SimError::Iozone(IozoneError {
        option: option.to_string(),
        message,
    })
}

/// The rows of an iozone command line on a machine.
pub fn iozone_rows(s: &IozoneSpec, m: &Machine) -> Result<Vec<IozoneRow>, SimError> {
    iozone_refusals(s)?;
    let file = s.file.clone().unwrap_or_else(|| "iozone.tmp".to_string());
    let mut rows = Vec::new();
    for (kb, reclen) in s.rows() {
        let bytes = kb * 1024;
        crate::frontend::fits_on_disk(bytes, m)
            .map_err(|e| ioz_err("-s", format!("-s {kb}: {e}")))?;
        if !s.direct && reclen % iostack_mm::PAGE_SIZE != 0 {
            let msg = format!(
                "-r {}: iostack models buffered I/O in whole {}-byte pages",
                reclen / 1024,
                iostack_mm::PAGE_SIZE
            );
            return Err(ioz_err("-r", msg));
        }
        let target =
            target_of(&file, bytes, m).map_err(|e| ioz_err("-f", format!("-f {file}: {e}")))?;
        let base = ProcSpec {
            pid: Some(IOZONE_PID),
            bs: [reclen, reclen],
            direct: s.direct,
            stonewall: true,
            ..ProcSpec::direct_reader("iozone", "iozone", target, bytes)
        };
        let mut row = IozoneRow {
            kb,
            reclen,
            procs: Vec::new(),
            timed: Vec::new(),
        };
        for &t in &s.tests {
            add_test(&mut row, &base, t, s);
        }
        row.procs[0].stonewall = false;
        rows.push(row);
    }
    Ok(rows)
}

/// Options and combinations the simulator cannot carry out.
fn iozone_refusals(s: &IozoneSpec) -> Result<(), SimError> {
    if s.threads.is_some() {
        let msg = "throughput mode (-t) is not simulated: its children stop when the first \
                   finishes (iozone's stonewall), which the simulator cannot do yet";
        return Err(ioz_err("-t", msg.into()));
    }
    if s.tests.is_empty() {
        let msg = "without -i iozone runs every test, and only -i 0 (write/rewrite), -i 1 \
                   (read/re-read) and -i 2 (random read/write) are simulated; give -i";
        return Err(ioz_err("-i", msg.into()));
    }
    if let Some(t) = s.tests.iter().find(|t| **t > 2) {
        let msg = format!(
            "-i {t} ({}) is not simulated; only -i 0, 1 and 2 are",
            iostack_workload::IOZONE_TESTS[*t as usize]
        );
        return Err(ioz_err("-i", msg));
    }
    if s.tests[0] != 0 {
        let msg = "-i 0 (write/rewrite) must be run first: the other tests use the file it \
                   writes";
        return Err(ioz_err("-i", msg.into()));
    }
    if s.osync && s.direct {
        let msg = "-o with -I: O_SYNC on O_DIRECT writes is the journal commit and cache \
                   flush, which are not modelled yet";
        return Err(ioz_err("-o", msg.into()));
    }
    Ok(())
}

/// The processes of one test: the untimed fsync iozone makes after opening the
/// file, the timed pass, and (without -c) the untimed fsync and close after it.
fn add_test(row: &mut IozoneRow, base: &ProcSpec, test: u8, s: &IozoneSpec) {
    use IozoneColumn as C;
    let passes: &[(C, &str, u32, Pattern)] = match test {
        0 => &[
            (C::Write, "write", 0, Pattern::Sequential),
            (C::Rewrite, "rewrite", 0, Pattern::Sequential),
        ],
        1 => &[
            (C::Read, "read", 100, Pattern::Sequential),
            (C::Reread, "reread", 100, Pattern::Sequential),
        ],
        _ => &[
            // iozone's offsets are lrand48() % records with duplicates; the
            // simulator draws them from its own stream, without a random map.
            (C::RandomRead, "random read", 100, RANDOM),
            (C::RandomWrite, "random write", 0, RANDOM),
        ],
    };
    for &(col, name, read_pct, pattern) in passes {
        let write = read_pct == 0;
        if col != C::Write {
            // (Before the first pass the file is new and empty: nothing to write.)
            sync_proc(row, base, &format!("{name} (open+fsync)"));
        }
        row.timed.push((col, row.procs.len()));
        row.procs.push(ProcSpec {
            name: name.to_string(),
            read_pct,
            pattern,
            // write_perf_test creat()s the file for its first pass.
            fresh: col == C::Write,
            end_fsync: write && s.include_fsync,
            // O_SYNC: every write() ends in generic_write_sync's fsync of the file.
            fsync_every: u64::from(write && s.osync),
            ..base.clone()
        });
        if write && !s.include_close {
            sync_proc(row, base, &format!("{name} (fsync+close)"));
        }
    }
}

const RANDOM: Pattern = Pattern::Random { norandommap: true };

/// An untimed fsync of the file (nothing to do for O_DIRECT in this model).
fn sync_proc(row: &mut IozoneRow, base: &ProcSpec, name: &str) {
    if base.direct {
        return;
    }
    row.procs.push(ProcSpec {
        name: name.to_string(),
        io_size: 0,
        read_pct: 0,
        end_fsync: true,
        ..base.clone()
    });
}

/// iozone's rate of a timed pass: bytes (or records with -O) over the time less
/// the timer resolution iozone subtracts (`time_res`, 1 µs as its banner says),
/// as an integer, `>> 10` for KiB/s (`write_perf_test`).
pub fn iozone_rate(bytes: u64, reclen: u64, ns: u64, ops: bool) -> u64 {
    let secs = (ns as f64 / 1e9 - 1e-6).max(1e-6);
    if ops {
        ((bytes / reclen.max(1)) as f64 / secs) as u64
    } else {
        ((bytes as f64 / secs) as u64) >> 10
    }
}

// ---------------------------------------------------------------------------
// fs_mark

/// The most files one fs_mark run may simulate: each is a process of its own.
pub const FSMARK_MAX_SIM_FILES: u64 = 200_000;

/// One thread's loop in one iteration: its processes `[first, end)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsMarkLoop {
    pub first: usize,
    pub end: usize,
}

/// The processes of an fs_mark run and, per iteration, each thread's loop.
#[derive(Clone, Debug)]
pub struct FsMarkRun {
    pub procs: Vec<ProcSpec>,
    pub iterations: Vec<Vec<FsMarkLoop>>,
}

fn fsm_err(option: &str, message: String) -> SimError {
    SimError::FsMark(FsMarkError {
        option: option.to_string(),
        message,
    })
}

/// Options and combinations the simulator cannot carry out.
fn fs_mark_refusals(s: &FsMarkSpec) -> Result<(), SimError> {
    if s.fill {
        let msg = "-F (run until the file system is full) is not simulated: files are \
                   processes of their own, and the loop has no bound";
        return Err(fsm_err("-F", msg.into()));
    }
    if s.verbose {
        let msg = "-v is not simulated: creat(), close() and unlink() times need the \
                   metadata I/O (inode, bitmap and directory blocks) that is not modelled";
        return Err(fsm_err("-v", msg.into()));
    }
    if matches!(s.sync, 2 | 4 | 6) {
        let msg = format!(
            "-S {}: sync(2) is not simulated yet (the writeback of every dirty inode and \
             of the journal)",
            s.sync
        );
        return Err(fsm_err("-S", msg));
    }
    let page = iostack_mm::PAGE_SIZE;
    if s.size > s.io_size && s.io_size % page != 0 {
        let msg = format!(
            "-w {}: writes that start inside a page are not modelled (iostack models \
             buffered writes in whole {page}-byte pages)",
            s.io_size
        );
        return Err(fsm_err("-w", msg));
    }
    let posts = u64::from(matches!(s.sync, 3 | 5)) + u64::from(s.size % s.io_size != 0);
    let total = s
        .files
        .checked_mul(s.threads)
        .and_then(|n| n.checked_mul(s.loops))
        .and_then(|n| n.checked_mul(1 + posts))
        .filter(|n| *n <= FSMARK_MAX_SIM_FILES);
    if total.is_none() {
        let msg = format!(
            "-n {} x -t {} x -L {}: more than the {FSMARK_MAX_SIM_FILES} files iostack \
             simulates in one run (each file is a process)",
            s.files, s.threads, s.loops
        );
        return Err(fsm_err("-n", msg));
    }
    Ok(())
}

/// The subdirectory of a thread's file (`setup_file_name`): round robin by
/// `-N`; by time hash all land in the first, as a run shorter than the 180 s of
/// a hash period does.
fn subdir_of(s: &FsMarkSpec, idx: u64) -> Option<u64> {
    use iostack_workload::DirPolicy;
    match s.policy {
        _ if s.subdirs < 2 => None,
        DirPolicy::RoundRobin(n) => Some((idx / n.max(1)) % s.subdirs),
        _ => Some(0),
    }
}

/// The processes of an fs_mark command line on a machine: per iteration and
/// thread, one process per file (creat, the writes, fsync with -S 1, close),
/// each after the one before; with -S 3 or 5 one fsync process per file after
/// the loop, in reverse or in order. Each iteration starts once every thread of
/// the one before is done, with new pids (fs_mark forks its threads anew).
pub fn fs_mark_run(s: &FsMarkSpec, m: &Machine) -> Result<FsMarkRun, SimError> {
    fs_mark_refusals(s)?;
    let mut run = FsMarkRun {
        procs: Vec::new(),
        iterations: Vec::new(),
    };
    let mut pid = 2000u32;
    for it in 0..s.loops {
        let barrier = run.procs.len() as u32;
        let prev_start = run.iterations.last().map_or(0, |l| l[0].first) as u32;
        let mut loops = Vec::new();
        for t in 0..s.threads {
            let first = run.procs.len();
            let paths = thread_files(s, m, it, t)?;
            for (k, target) in paths.iter().enumerate() {
                let after = if k == 0 {
                    (it > 0).then_some((prev_start, barrier))
                } else {
                    Some((run.procs.len() as u32 - 1, run.procs.len() as u32))
                };
                file_procs(s, &mut run.procs, target, pid, after);
            }
            post_fsyncs(s, &mut run, &paths, pid);
            loops.push(FsMarkLoop {
                first,
                end: run.procs.len(),
            });
            pid += 1;
        }
        run.iterations.push(loops);
    }
    Ok(run)
}

/// One file of the loop (`write_file`: writes of `-w` bytes, the last one
/// shorter): one process for the whole writes and, when `-s` is not a multiple
/// of `-w`, one after it for the short last write. A partial last page is
/// written as the whole page it dirties (the simulated file is sized in whole
/// pages: writeback writes the same page either way).
fn file_procs(
    s: &FsMarkSpec,
    procs: &mut Vec<ProcSpec>,
    target: &crate::workload::Target,
    pid: u32,
    after: Option<(u32, u32)>,
) {
    let page = iostack_mm::PAGE_SIZE;
    let whole = s.size / s.io_size * s.io_size;
    let tail = (s.size - whole).div_ceil(page) * page;
    let base = ProcSpec {
        pid: Some(pid),
        read_pct: 0,
        direct: false,
        ..ProcSpec::direct_reader("fs_mark", "fs_mark", target.clone(), whole)
    };
    procs.push(ProcSpec {
        bs: [s.io_size, s.io_size],
        fresh: true,
        end_fsync: s.sync == 1 && tail == 0,
        after,
        ..base.clone()
    });
    if tail > 0 {
        let n = procs.len() as u32;
        procs.push(ProcSpec {
            bs: [tail, tail],
            offset: whole,
            region: tail,
            io_size: tail,
            end_fsync: s.sync == 1,
            after: Some((n - 1, n)),
            ..base
        });
    }
}

/// -S 3 / -S 5: reopen and fsync each file after the loop, reverse or in order.
fn post_fsyncs(s: &FsMarkSpec, run: &mut FsMarkRun, paths: &[crate::workload::Target], pid: u32) {
    if !matches!(s.sync, 3 | 5) {
        return;
    }
    let order: Vec<usize> = if s.sync == 3 {
        (0..paths.len()).rev().collect()
    } else {
        (0..paths.len()).collect()
    };
    for k in order {
        let n = run.procs.len() as u32;
        run.procs.push(ProcSpec {
            pid: Some(pid),
            read_pct: 0,
            direct: false,
            io_size: 0,
            end_fsync: true,
            after: (n > 0).then_some((n - 1, n)),
            ..ProcSpec::direct_reader("fs_mark", "fs_mark (post fsync)", paths[k].clone(), 0)
        });
    }
}

/// The files of thread `t` in iteration `it`: unique names of the same length
/// as fs_mark's where `-p` allows, in its `-d` directory or the subdirectory
/// `setup_file_name` names (`%02x`). The file systems make the directories
/// when the first file in them is created: fs_mark's `setup()` `mkdir`s the
/// `-d` directory before its loop and `setup_file_name` each subdirectory
/// before that subdirectory's first file (ext4 places them; a directory's
/// entries all go to its first block).
fn thread_files(
    s: &FsMarkSpec,
    m: &Machine,
    it: u64,
    t: u64,
) -> Result<Vec<crate::workload::Target>, SimError> {
    let dir = s.dir_of(t).trim_end_matches('/');
    let mut v = Vec::with_capacity(s.files as usize);
    for idx in 0..s.files {
        let stamp = format!("{:08x}{:08x}", it, t);
        let name = format!("{stamp}{:~>w$}", idx, w = s.rand_len.max(8) as usize);
        let path = match subdir_of(s, idx) {
            Some(d) => format!("{dir}/{:02x}/{name}", d),
            None => format!("{dir}/{name}"),
        };
        let target =
            target_of(&path, s.size, m).map_err(|e| fsm_err("-d", format!("-d {dir}: {e}")))?;
        v.push(target);
    }
    Ok(v)
}

/// One line of fs_mark's table, from the simulated processes.
#[derive(Clone, Debug, PartialEq)]
pub struct FsMarkRow {
    /// Files written so far by every thread.
    pub count: u64,
    pub files_per_sec: f64,
    pub app_overhead_us: u64,
}

/// fs_mark's numbers per iteration (`do_run`, `aggregate_thread_stats`): a
/// thread's loop time in whole µs from its first creat to the end of its last
/// close or post-loop fsync; files/s summed over threads; the overhead is the loop
/// time less the time in the file system calls (user time is not simulated, so
/// only the rounding of the calls' times is left).
pub fn fs_mark_rows(
    s: &FsMarkSpec,
    run: &FsMarkRun,
    r: &crate::stats::RunResult,
) -> Vec<FsMarkRow> {
    let mut rows = Vec::new();
    let mut count = 0;
    for loops in &run.iterations {
        let mut fps = 0.0f64;
        let mut overhead = 0u64;
        for l in loops {
            let procs = &r.procs[l.first..l.end];
            let (start, end) = (procs[0].start, procs[procs.len() - 1].end);
            let loop_us = end.since(start).as_ns() / 1000;
            let calls: u64 = procs.iter().map(|p| p.runtime().as_ns() / 1000).sum();
            overhead += loop_us.saturating_sub(calls);
            fps += s.files as f64 / (loop_us.max(1) as f64 / 1e6);
        }
        count += s.files * loops.len() as u64;
        rows.push(FsMarkRow {
            count,
            files_per_sec: fps,
            app_overhead_us: overhead,
        });
    }
    rows
}
