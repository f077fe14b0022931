//! Front ends to processes: fio job files and dd command lines become `ProcSpec`s
//! for a machine. Parsing is `iostack-workload`'s; this maps its resolved jobs to
//! what the simulator runs and rejects what the simulator cannot yet model, by name.

use crate::machine::Machine;
use crate::workload::{Engine, FileService, FileServiceKind, Pattern, ProcSpec, Target};
use crate::SimError;
use iostack_des::Duration;
use iostack_workload::DdError;

/// Why a size does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("invalid size '{0}'")]
    Invalid(String),
    #[error("invalid size suffix in '{0}' (b, k, m, g, t)")]
    Suffix(String),
    #[error("size '{0}' overflows 64 bits")]
    Overflow(String),
}

/// Parse a size such as `64M`, `4k`, `1048576` (binary multiples).
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, suf) = s.split_at(split);
    let n: u64 = num.parse().map_err(|e: std::num::ParseIntError| {
        if matches!(e.kind(), std::num::IntErrorKind::PosOverflow) {
            SizeError::Overflow(s.to_string())
        } else {
            SizeError::Invalid(s.to_string())
        }
    })?;
    let mult: u64 = match suf.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        "t" | "tib" | "tb" => 1 << 40,
        _ => return Err(SizeError::Suffix(s.to_string())),
    };
    n.checked_mul(mult)
        .ok_or_else(|| SizeError::Overflow(s.to_string()))
}

/// A file that ends at byte `end` can be on the machine's file system: it is not
/// larger than the disk (checked up front, as laying out exabytes block by block
/// to find the file system full would take minutes).
pub fn fits_on_disk(end: u64, m: &Machine) -> Result<(), String> {
    let start = m.partition.map_or(0, |(_, s)| s.saturating_mul(512));
    let room = m.device_capacity_bytes().saturating_sub(start);
    if end > room {
        return Err(format!(
            "{end} bytes do not fit on the {room}-byte file system of machine '{}'",
            m.name
        ));
    }
    Ok(())
}

/// `--layout PATH=SIZE[@BLOCK]` on a machine: a process that lays the file out.
pub fn layout_on(spec: &str, m: &Machine) -> Result<ProcSpec, SimError> {
    let p = parse_layout(spec)?;
    fits_on_disk(p.region, m).map_err(|message| SimError::Size {
        file: None,
        line: None,
        origin: "--layout".into(),
        input: spec.to_string(),
        message,
    })?;
    Ok(p)
}

/// `--layout PATH=SIZE[@BLOCK]`: a process that lays the file out.
pub fn parse_layout(spec: &str) -> Result<ProcSpec, SimError> {
    let bad = |message: String| SimError::Size {
        file: None,
        line: None,
        origin: "--layout".into(),
        input: spec.to_string(),
        message: format!("{message} (expected PATH=SIZE[@BLOCK])"),
    };
    let (path, rest) = spec.split_once('=').ok_or_else(|| bad("no '='".into()))?;
    if path.is_empty() {
        return Err(bad("no path".into()));
    }
    let (size, goal) = match rest.split_once('@') {
        Some((s, b)) => {
            let block = b
                .parse::<u64>()
                .map_err(|_| bad(format!("bad block number '{b}'")))?;
            (s, Some(block))
        }
        None => (rest, None),
    };
    let size = parse_size(size).map_err(|e| bad(e.to_string()))?;
    Ok(layout_only(path, size, goal))
}

/// A process that only lays out a file (no I/O), as `[[setup]]` asks.
pub fn layout_only(path: &str, size: u64, goal: Option<u64>) -> ProcSpec {
    let target = Target::File {
        path: path.to_string(),
        size,
        goal,
    };
    ProcSpec {
        group: u32::MAX,
        io_size: 0,
        ..ProcSpec::direct_reader("mkfile", &format!("setup:{path}"), target, size.max(4096))
    }
}

/// What fio's report needs to know of a simulated process (one per fio job clone).
#[derive(Clone, Debug, PartialEq)]
pub struct JobMeta {
    pub name: String,
    pub group: u32,
    /// Job options as written, in order (fio's JSON "job options").
    pub options: Vec<(String, String)>,
    pub group_reporting: bool,
    pub iodepth: u32,
    pub sync_engine: bool,
    pub kb_base: u32,
    /// fio's `ddir_str` of `rw=` (`read`, `randrw`, ...), for the preamble.
    pub rw: String,
    /// Smallest and largest block size per direction (read, write, trim).
    pub min_bs: [u64; 3],
    pub max_bs: [u64; 3],
    pub bs_is_seq_rand: bool,
    /// The engine's name as fio prints it (`td->io_ops->name`).
    pub ioengine: String,
    /// Which clone of its job this is (0 for the first; `numjobs`).
    pub clone: u32,
    /// `thread`: counted as a thread in `Starting ...`.
    pub thread: bool,
    /// `significant_figures`.
    pub sig_figs: u32,
    /// Percentile flags after fio's `fixup_options` (`disable_*` clears them).
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    /// `percentile_list` (empty: fio's default) and its print precision.
    pub percentile_list: Vec<f64>,
    pub percentile_precision: u32,
    /// `disable_lat`, `disable_clat`, `disable_slat`, `disable_bw_measurement`.
    pub disable: [bool; 4],
    /// `unit_base=1`: bandwidth in bits.
    pub unit_bits: bool,
    /// Windows of the report's bandwidth and IOPS samples, ms (fio's
    /// `bw_avg_time`/`iops_avg_time` after `add_job`: the log's
    /// `log_avg_msec` when a log is written and the option is not set).
    pub bw_avg_msec: u32,
    pub iops_avg_msec: u32,
    pub logs: LogMeta,
}

/// The `write_*_log` options of a job (fio's `add_job` log set-up).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct LogMeta {
    /// File name prefixes (the option's value, or the job name when bare).
    pub bw: Option<String>,
    pub lat: Option<String>,
    pub iops: Option<String>,
    /// `log_avg_msec` (0: one entry per I/O).
    pub avg_msec: u32,
    /// The bandwidth and IOPS logs' own averaging (`min(log_avg_msec,
    /// bwavgtime)` when `bwavgtime` is set; 0: one entry per I/O).
    pub bw_avg: u32,
    pub iops_avg: u32,
    pub per_job: bool,
    /// `log_offset`.
    pub offset: bool,
    /// `write_hist_log` prefix, `log_hist_msec`, `log_hist_coarseness`.
    pub hist: Option<String>,
    pub hist_msec: u32,
    pub hist_coarseness: u32,
    /// `log_max_value`: averaged entries are the window's maximum.
    pub log_max: bool,
    /// `disable_lat`, `disable_clat`, `disable_slat`: no such log.
    pub disable: [bool; 3],
    /// `prioclass=1` (real time): fio's last column, `ioprio_value_is_class_rt`.
    pub prio_rt: bool,
    /// `log_prio=1`: the last column is instead the I/O's priority value,
    /// printed `0x%04x` (fio's `flush_samples`): `td->ioprio`, which is
    /// `ioprio_value(prioclass, prio)` (class 0 taken as BE, shifted by
    /// `IOPRIO_CLASS_SHIFT`, 13) when either is set, else 0.
    pub prio_value: Option<u32>,
}

/// fio's `add_job`: a statistic's window is its option when set, else the
/// log's `log_avg_msec` when the log is written, else fio's 500 ms.
fn stat_window(logged: bool, set: Option<u32>, log_avg: u32) -> u32 {
    match (set, logged) {
        (Some(t), _) => t,
        (None, true) => log_avg,
        (None, false) => 500,
    }
}

/// fio's `make_log_name`: the option's value, or the job name if empty.
fn log_prefix(v: &Option<String>, name: &str) -> Option<String> {
    v.as_ref().map(|p| {
        if p.is_empty() {
            name.to_string()
        } else {
            p.clone()
        }
    })
}

fn job_meta(j: &iostack_workload::JobSpec, iodepth: u32, engine: Engine, clone: u32) -> JobMeta {
    let tri = |p: &iostack_workload::PerDir<u64>| [p.read, p.write, p.trim];
    JobMeta {
        name: j.name.clone(),
        group: j.group_id,
        options: j
            .options
            .iter()
            .map(|o| (o.name.clone(), o.value.clone().unwrap_or_default()))
            .collect(),
        group_reporting: j.group_reporting,
        iodepth,
        sync_engine: engine == Engine::Sync,
        kb_base: j.kb_base,
        rw: j.rw.kind.as_str().to_string(),
        min_bs: tri(&j.min_bs),
        max_bs: tri(&j.max_bs),
        bs_is_seq_rand: j.bs_is_seq_rand,
        ioengine: j.ioengine.as_str().to_string(),
        clone,
        thread: j.thread,
        sig_figs: j.sig_figs,
        clat_percentiles: j.clat_percentiles && !j.disable_clat,
        lat_percentiles: j.lat_percentiles && !j.disable_lat,
        slat_percentiles: j.slat_percentiles && !j.disable_slat,
        percentile_list: j.percentile_list.clone(),
        percentile_precision: j.percentile_precision,
        disable: [j.disable_lat, j.disable_clat, j.disable_slat, j.disable_bw],
        unit_bits: j.unit_base == 1,
        bw_avg_msec: stat_window(j.write_bw_log.is_some(), j.bw_avg_time, j.log_avg_msec),
        iops_avg_msec: stat_window(j.write_iops_log.is_some(), j.iops_avg_time, j.log_avg_msec),
        logs: LogMeta {
            bw: log_prefix(&j.write_bw_log, &j.name),
            lat: log_prefix(&j.write_lat_log, &j.name),
            iops: log_prefix(&j.write_iops_log, &j.name),
            avg_msec: j.log_avg_msec,
            bw_avg: j
                .bw_avg_time
                .map_or(j.log_avg_msec, |t| t.min(j.log_avg_msec)),
            iops_avg: j
                .iops_avg_time
                .map_or(j.log_avg_msec, |t| t.min(j.log_avg_msec)),
            per_job: j.per_job_logs,
            offset: j.log_offset,
            hist: log_prefix(&j.write_hist_log, &j.name),
            hist_msec: j.log_hist_msec,
            hist_coarseness: j.log_hist_coarseness,
            log_max: j.log_max,
            disable: [j.disable_lat, j.disable_clat, j.disable_slat],
            prio_rt: j.prioclass == Some(1),
            prio_value: j.log_prio.then(|| match (j.prioclass, j.prio) {
                (None, None) => 0,
                (c, p) => {
                    let class = match c.unwrap_or(0) {
                        0 => 2,
                        c => c,
                    };
                    (class << 13) | p.unwrap_or(0)
                }
            }),
        },
    }
}

/// Processes of a front end, with fio metadata where there is one.
pub struct Procs {
    pub procs: Vec<ProcSpec>,
    pub meta: Vec<Option<JobMeta>>,
    /// fio's "global options".
    pub global_options: Vec<(String, String)>,
}

/// Where a path lands on the machine.
pub(crate) fn target_of(path: &str, size: u64, m: &Machine) -> Result<Target, String> {
    if path.starts_with("/dev/") {
        return Ok(Target::Device {
            path: path.to_string(),
        });
    }
    let full = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{}/{}", m.mount, path)
    };
    if !full.starts_with(&format!("{}/", m.mount)) {
        return Err(format!(
            "'{path}' is not on the simulated file system (mounted at {}; a machine \
             file's `mount = DIR` moves it) nor a device",
            m.mount
        ));
    }
    Ok(Target::File {
        path: full,
        size,
        goal: None,
    })
}

/// An error about a dd operand (`operand` as written, or empty).
fn dd_err(operand: &str, message: String) -> SimError {
    SimError::Dd(DdError {
        operand: operand.to_string(),
        message,
    })
}

/// `a * b` for a dd byte count, refused (as dd refuses an offset it cannot seek
/// to) rather than saturated.
fn dd_bytes(n: u64, unit: u64, in_bytes: bool, operand: &str) -> Result<u64, SimError> {
    if in_bytes {
        return Ok(n);
    }
    n.checked_mul(unit)
        .filter(|b| *b <= i64::MAX as u64)
        .ok_or_else(|| {
            dd_err(
                operand,
                format!("{operand}: offset overflow: Value too large for defined data type"),
            )
        })
}

/// The process of a dd command line: GNU dd's copy loop of `ibs`-sized reads (and
/// `obs`-sized writes), each a read(2)/write(2) the caller waits for.
pub fn dd_procs(args: &str, m: &Machine) -> Result<Vec<ProcSpec>, SimError> {
    let dd = iostack_workload::parse_dd_command_line(args)?;
    let input = dd.input.clone().ok_or_else(|| {
        dd_err(
            "",
            "reading standard input is not simulated; give if=".into(),
        )
    })?;
    let output = dd.output.clone().unwrap_or_else(|| "/dev/null".into());
    let count = dd
        .count
        .map(|c| dd_bytes(c, dd.ibs, dd.iflag.count_bytes, "count"))
        .transpose()?;
    let skip = dd_bytes(dd.skip, dd.ibs, dd.iflag.skip_bytes, "skip")?;
    let seek = dd_bytes(dd.seek, dd.obs, dd.oflag.seek_bytes, "seek")?;
    let target =
        |path: &str, size| target_of(path, size, m).map_err(|e| dd_err(&format!("of={path}"), e));
    if input == "/dev/zero" && output != "/dev/null" {
        // A writer: dd if=/dev/zero of=FILE bs=.. count=.. [oflag=direct]
        // [conv=fsync|fdatasync]. Reading /dev/zero costs no I/O.
        let bs = dd.obs;
        let io_size = count.ok_or_else(|| {
            dd_err(
                "if=/dev/zero",
                "if=/dev/zero without count= writes forever; give count=".into(),
            )
        })?;
        let end = seek.checked_add(io_size).filter(|e| *e <= i64::MAX as u64);
        let end = end.ok_or_else(|| {
            dd_err(
                "seek",
                "seek + count: file too large: Value too large for defined data type".into(),
            )
        })?;
        return Ok(vec![ProcSpec {
            bs: [bs, bs],
            offset: seek,
            io_size,
            read_pct: 0,
            direct: dd.oflag.direct,
            // dd truncates and rewrites its output unless conv=notrunc.
            fresh: !dd.conv.notrunc && !output.starts_with("/dev/"),
            end_fsync: dd.conv.fsync || dd.conv.fdatasync,
            // conv=fdatasync: dd's final sync is fdatasync(2).
            datasync: dd.conv.fdatasync && !dd.conv.fsync,
            ..ProcSpec::direct_reader("dd", "dd", target(&output, end)?, end)
        }]);
    }
    if output != "/dev/null" {
        return Err(dd_err(
            &format!("of={output}"),
            format!(
                "if={input} of={output}: iostack simulates dd reading a file or device \
                 into /dev/null, or writing /dev/zero into a file or device"
            ),
        ));
    }
    let bs = dd.ibs;
    // Without count=, until the end of the file or device: the region is sized
    // at setup, from what is there (`io_size == u64::MAX`).
    let io_size = count.unwrap_or(u64::MAX);
    let target = target_of(&input, 0, m).map_err(|e| dd_err(&format!("if={input}"), e))?;
    Ok(vec![ProcSpec {
        bs: [bs, bs],
        offset: skip,
        io_size,
        direct: dd.iflag.direct,
        ..ProcSpec::direct_reader("dd", "dd", target, count.unwrap_or(0))
    }])
}

/// The parse environment fio would see on the simulated machine: `$ncpus` is the
/// machine's CPU count; `vars` are the `${VAR}` values the caller supplies.
pub fn fio_env(
    m: &Machine,
    vars: std::collections::BTreeMap<String, String>,
) -> iostack_workload::ParseEnv {
    iostack_workload::ParseEnv {
        vars,
        ncpus: m.cpus as u64,
        ..iostack_workload::ParseEnv::default()
    }
}

/// Parse a job file given as text, purely: includes are not available.
pub fn fio_procs_from_text(path: &str, text: &str, m: &Machine) -> Result<Procs, SimError> {
    fio_procs_from_text_env(path, text, m, Default::default())
}

/// As `fio_procs_from_text`, with `${VAR}` values for the job file.
pub fn fio_procs_from_text_env(
    path: &str,
    text: &str,
    m: &Machine,
    vars: std::collections::BTreeMap<String, String>,
) -> Result<Procs, SimError> {
    let mut env = fio_env(m, vars);
    let mut files = std::collections::BTreeMap::new();
    files.insert(std::path::PathBuf::from(path), text.as_bytes().to_vec());
    env.files = Some(files);
    let parsed = iostack_workload::parse_job_bytes_all(text.as_bytes(), path, &env)?;
    let jf = all_problems(parsed)?;
    fio_procs(&jf, m)
}

/// A parsed job file, or every problem of it at once: the parser's option
/// errors and, when there are any, the simulator's refusals of the options
/// that did parse, in file order (chained by the error's `next`).
pub fn all_problems(
    parsed: (iostack_workload::JobFile, Vec<iostack_workload::FioError>),
) -> Result<iostack_workload::JobFile, iostack_workload::FioError> {
    let (jf, mut errors) = parsed;
    if errors.is_empty() {
        return Ok(jf);
    }
    for r in refused_options(&jf) {
        let mut e = iostack_workload::FioError::new_refused(&r.file, r.line, r.option);
        e.message = format!("job '{}': {}", r.job, r.message);
        errors.push(e);
    }
    // Stable: errors of one line keep their order.
    errors.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    Err(iostack_workload::FioError::collect(errors).expect("not empty"))
}

/// What the simulator refuses about one fio job, at the job's section.
struct JobAt<'a>(&'a iostack_workload::JobSpec);

impl JobAt<'_> {
    /// A refused value of a simulated option: at the option's own line when
    /// the job sets it in its section (else at the section's), worded as the
    /// option table's refusals are.
    fn refuse(&self, option: &str, reason: &str) -> SimError {
        let own = self.0.options.iter().rev().find(|e| e.name == option);
        let Some(e) = own else {
            return self.err(Some(option), format!("{option}: {reason}"));
        };
        let value = e.value.as_deref().map(|v| format!("={v}"));
        SimError::Job {
            file: e.file.display().to_string(),
            line: Some(e.line),
            job: self.0.name.clone(),
            option: Some(option.to_string()),
            message: format!(
                "option '{}{}' is refused: {reason}",
                e.written_name,
                value.unwrap_or_default()
            ),
        }
    }

    fn err(&self, option: Option<&str>, message: String) -> SimError {
        SimError::Job {
            file: self.0.file.display().to_string(),
            line: Some(self.0.line),
            job: self.0.name.clone(),
            option: option.map(str::to_string),
            message,
        }
    }
}

/// Whether a random job's `blockalign` differs from its smallest size in
/// some direction: fio's `fixup_options` then turns the random map off.
fn aligned_apart(j: &iostack_workload::JobSpec) -> bool {
    j.rw.kind.is_random()
        && (j.blockalign.read != j.min_bs.read || j.blockalign.write != j.min_bs.write)
}

/// Access pattern and read share of a job's `rw=`.
fn pattern_of(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<(Pattern, u32), SimError> {
    use iostack_workload::RwKind;
    // fio's fixup_options: a distribution other than uniform turns the
    // random map off.
    let skewed = !matches!(
        j.random_distribution,
        iostack_workload::RandomDistribution::Random
    );
    let random = Pattern::Random {
        norandommap: j.norandommap || skewed || aligned_apart(j),
    };
    let p = match j.rw.kind {
        RwKind::Read => (Pattern::Sequential, 100),
        RwKind::Write => (Pattern::Sequential, 0),
        RwKind::ReadWrite => (Pattern::Sequential, j.rwmix_read),
        RwKind::RandRead => (random, 100),
        RwKind::RandWrite => (random, 0),
        RwKind::RandRw => (random, j.rwmix_read),
        k => {
            let msg = format!("rw={} (trim) is not modelled yet", k.as_str());
            return Err(at.err(Some("rw"), msg));
        }
    };
    Ok(p)
}

/// fio's `rw=...:N` (options.c `str_rw_cb`): for random patterns a new
/// offset every N I/Os (`ddir_seq_nr`, the others by `rw_sequencer`), for
/// sequential ones N bytes skipped after each I/O (`ddir_seq_add`). Returns
/// (seq_nr, seq_add). Backwards walks (a negative N) are refused, as are runs
/// with the random map (fio marks the run's I/Os in it) or varied sizes.
fn rw_modifier_of(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<(u32, u64), SimError> {
    use iostack_workload::RwModifier;
    let varies = j.min_bs.read != j.max_bs.read || j.min_bs.write != j.max_bs.write;
    match j.rw.modifier {
        None => Ok((0, 0)),
        Some(RwModifier::SeqAdd(n)) if n >= 0 && !varies => Ok((0, n as u64)),
        // Backwards: seq_back_of.
        Some(RwModifier::SeqAdd(_)) if !varies => Ok((0, 0)),
        Some(RwModifier::RandomRun(n)) if j.norandommap && !varies => Ok((n, 0)),
        Some(RwModifier::SeqAdd(_)) => Err(at.refuse(
            "rw",
            "holes or a backwards walk with varied sizes are not modelled yet",
        )),
        Some(RwModifier::RandomRun(_)) => Err(at.refuse(
            "rw",
            ":N runs with the random map or varied sizes are not modelled yet; set norandommap",
        )),
    }
}

/// fio's backwards walk, `rw=read:-N` (a negative `ddir_seq_add`): the
/// bytes each I/O steps back from the last one's end. Refused where fio's
/// `get_next_seq_offset` does more than step back and wrap to the end:
/// from a nonzero `offset` (its rewind at `file_offset`), and with a step
/// shorter than the block (the walk goes forward past the end).
fn seq_back_of(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<u64, SimError> {
    let Some(iostack_workload::RwModifier::SeqAdd(n)) = j.rw.modifier else {
        return Ok(0);
    };
    if n >= 0 {
        return Ok(0);
    }
    let back = n.unsigned_abs();
    let offset = matches!(j.offset, iostack_workload::Amount::Bytes(0));
    let why = if !offset || j.offset_increment != iostack_workload::Amount::Bytes(0) {
        "a backwards walk from a nonzero offset (fio's rewind at file_offset) is not modelled yet"
    } else if back < j.bs.read.max(j.bs.write) {
        "a backwards step shorter than the block size is not modelled yet"
    } else {
        return Ok(back);
    };
    Err(at.refuse("rw", why))
}

/// The simulated engine of a job's `ioengine=`. Under
/// `io_submit_mode=offload` the job's thread never waits for a submission
/// (its `iodepth` workers do, `crate::offload`): asynchronous, whatever the
/// engine.
fn engine_of(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<Engine, SimError> {
    use iostack_workload::IoEngine;
    if j.submit_offload {
        offload_fits(j, at)?;
        return Ok(Engine::Async);
    }
    match j.ioengine {
        IoEngine::Sync
        | IoEngine::Psync
        | IoEngine::Vsync
        | IoEngine::Pvsync
        | IoEngine::Pvsync2 => Ok(Engine::Sync),
        // null queues up to iodepth and completes at commit: an async engine
        // whose I/Os never reach the device (Target::Diskless).
        IoEngine::Libaio | IoEngine::IoUring | IoEngine::Posixaio | IoEngine::Null => {
            Ok(Engine::Async)
        }
        e => Err(at.err(
            Some("ioengine"),
            format!("ioengine={} is not modelled", e.as_str()),
        )),
    }
}

/// `io_submit_mode=offload` where it is simulated: fio refuses it with an
/// engine flagged `FIO_NO_OFFLOAD` (io_uring; ioengines.c
/// `check_engine_ops`); buffered I/O (each worker's `read()`/`write()`
/// through the page cache beside the others) is not modelled yet.
fn offload_fits(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<(), SimError> {
    use iostack_workload::IoEngine;
    let why = match j.ioengine {
        IoEngine::IoUring => "io_uring: can't be used with offloaded submit. Use a sync engine",
        IoEngine::Sync
        | IoEngine::Psync
        | IoEngine::Vsync
        | IoEngine::Pvsync
        | IoEngine::Pvsync2
        | IoEngine::Libaio
        | IoEngine::Posixaio
        | IoEngine::Null
            if j.direct || j.ioengine == IoEngine::Null =>
        {
            return Ok(());
        }
        IoEngine::Sync
        | IoEngine::Psync
        | IoEngine::Vsync
        | IoEngine::Pvsync
        | IoEngine::Pvsync2
        | IoEngine::Libaio
        | IoEngine::Posixaio => {
            "with buffered I/O (the workers' concurrent calls through the page cache) it is \
             not modelled yet"
        }
        _ => return Ok(()),
    };
    Err(at.refuse("io_submit_mode", why))
}

/// fio's `rate_min`/`rate_iops_min` with `rate_cycle` (`crate::minrate`);
/// with `exitall_on_error` (the failed job terminating the others) refused.
fn min_rate_of(
    j: &iostack_workload::JobSpec,
    at: &JobAt,
) -> Result<Option<crate::minrate::MinRate>, SimError> {
    let m = crate::minrate::MinRate {
        bytes: [j.ratemin.read, j.ratemin.write],
        iops: [j.rate_iops_min.read, j.rate_iops_min.write],
        cycle_ms: j.ratecycle_ms,
    };
    if m.bytes == [0, 0] && m.iops == [0, 0] {
        return Ok(None);
    }
    // fixup_options: a minimum above the rate is an error.
    let over = |rate: u64, min: u64| rate > 0 && rate < min;
    if over(j.rate.read, m.bytes[0])
        || over(j.rate.write, m.bytes[1])
        || over(j.rate_iops.read, m.iops[0])
        || over(j.rate_iops.write, m.iops[1])
    {
        let option = if m.bytes != [0, 0] {
            "rate_min"
        } else {
            "rate_iops_min"
        };
        return Err(at.err(Some(option), "minimum rate exceeds rate".into()));
    }
    if j.exitall_error {
        let msg = "with rate_min or rate_iops_min (a failed job terminating the others) it is \
                   not modelled yet";
        return Err(at.refuse("exitall_on_error", msg));
    }
    Ok(Some(m))
}

/// fio's `poisson_state` seeds of job clone `thread_number` (init.c
/// `setup_random_seeds` from `randseed`, 0x89 by default; with
/// `randrepeat=0` and no `randseed` from the entropy pool: None, drawn from
/// the run's seed).
fn poisson_seeds_of(j: &iostack_workload::JobSpec, thread_number: u64) -> Option<[u64; 2]> {
    use crate::poisson::{fio_rand_seed, DEFAULT_RANDSEED, POISSON_OFF};
    let seed = match (j.randseed, j.randrepeat) {
        (Some(n), _) => n,
        (None, true) => DEFAULT_RANDSEED,
        (None, false) => return None,
    };
    Some(POISSON_OFF.map(|i| fio_rand_seed(seed, thread_number, i)))
}

/// Bytes of an amount option; percentages and zones are not modelled yet.
fn bytes_of(a: &iostack_workload::Amount, what: &str, at: &JobAt) -> Result<u64, SimError> {
    match a {
        iostack_workload::Amount::Bytes(b) => Ok(*b),
        _ => Err(at.err(
            Some(what),
            "a percentage or zones is not modelled yet".into(),
        )),
    }
}

/// Sizes of a job: (size, io_size, offset, offset_increment).
fn sizes_of(
    j: &iostack_workload::JobSpec,
    m: &Machine,
    at: &JobAt,
) -> Result<(u64, u64, u64, u64), SimError> {
    if nfiles(j) > 1 {
        return multi_file_sizes(j, m, at);
    }
    // (region, bytes of I/O without io_size=)
    let (size, io) = match (&j.size, j.filesize) {
        // setup_files: the file is `filesize` long, and `size` (the bytes of
        // I/O) at most the files' total.
        (size, Some((file, _))) => {
            let asked = size.as_ref().map(|a| bytes_of(a, "size", at)).transpose()?;
            (file, asked.map_or(file, |s| s.min(file)))
        }
        (Some(a), None) => {
            let b = bytes_of(a, "size", at)?;
            (b, b)
        }
        (None, None) if !j.files.is_empty() && j.files.iter().all(|f| f.starts_with("/dev/")) => {
            let b = m.device_capacity_bytes();
            (b, b)
        }
        (None, None) => {
            let msg = "size= (or filesize=) is needed for new files".into();
            return Err(at.err(Some("size"), msg));
        }
    };
    let io_size = match &j.io_size {
        Some(a) => bytes_of(a, "io_size", at)?,
        None => io,
    };
    finish_sizes(j, m, at, size, io_size)
}

/// The files of one clone of a job: `filename=`'s list, or `nrfiles` names
/// from `filename_format` (fio's `add_job`).
fn nfiles(j: &iostack_workload::JobSpec) -> u32 {
    if j.files.is_empty() {
        j.nrfiles.max(1)
    } else {
        j.files.len() as u32
    }
}

/// `setup_files` for several files: each file is `filesize` long (the bytes
/// of I/O the files' total, or `size` if less), or `size / nrfiles` (fio makes
/// the first files one block larger when it does not divide, refused here).
fn multi_file_sizes(
    j: &iostack_workload::JobSpec,
    m: &Machine,
    at: &JobAt,
) -> Result<(u64, u64, u64, u64), SimError> {
    let n = u64::from(nfiles(j));
    let asked = j
        .size
        .as_ref()
        .map(|a| bytes_of(a, "size", at))
        .transpose()?;
    let (file, io) = match (asked, j.filesize) {
        (asked, Some((file, _))) => {
            let all = file
                .checked_mul(n)
                .ok_or_else(|| at.err(Some("filesize"), "the files' total overflows".into()))?;
            (file, asked.map_or(all, |s| s.min(all)))
        }
        (Some(b), None) if b % n == 0 => (b / n, b),
        (Some(b), None) => {
            let msg = format!(
                "size={b} over {n} files: uneven file sizes (fio's first files one block \
                 larger) are not modelled yet"
            );
            return Err(at.err(Some("size"), msg));
        }
        (None, None) => {
            let msg = "size= (or filesize=) is needed for new files".into();
            return Err(at.err(Some("size"), msg));
        }
    };
    let io_size = match &j.io_size {
        Some(a) => bytes_of(a, "io_size", at)?,
        None => io,
    };
    let all = finish_sizes(j, m, at, file.saturating_mul(n), io_size)?;
    Ok((file, all.1, all.2, all.3))
}

/// The refused parts of several files per job.
fn multi_file_fits(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<FileService, SimError> {
    let kind = match j.file_service_type.as_str() {
        "roundrobin" => FileServiceKind::RoundRobin,
        "sequential" => FileServiceKind::Sequential,
        "random" => FileServiceKind::Random,
        other => {
            let msg = format!(
                "file_service_type={other}: a {other} distribution over the files is not \
                 modelled yet (roundrobin, sequential and random are)"
            );
            return Err(at.refuse("file_service_type", &msg));
        }
    };
    let service = FileService {
        kind,
        nr: j.file_service_nr,
    };
    if nfiles(j) <= 1 {
        return Ok(service);
    }
    let refuse = |option: &str, why: &str| {
        let msg = format!("{why} with several files per job is not modelled yet");
        Err(at.refuse(option, &msg))
    };
    if !j.files.is_empty() && j.nrfiles > 1 && j.nrfiles as usize != j.files.len() {
        return refuse("nrfiles", "nrfiles other than filename='s count");
    }
    if j.files.iter().any(|f| f.starts_with("/dev/")) {
        return refuse("filename", "a device");
    }
    if j.end_fsync {
        return refuse("end_fsync", "end_fsync (an fsync of every file)");
    }
    if j.loops > 1 && !j.time_based {
        return refuse("loops", "loops (every file reset after each pass)");
    }
    Ok(service)
}

/// The checks of a job's region `size` and its `io_size`: with the offsets,
/// (size, io_size, offset, offset_increment).
fn finish_sizes(
    j: &iostack_workload::JobSpec,
    m: &Machine,
    at: &JobAt,
    size: u64,
    io_size: u64,
) -> Result<(u64, u64, u64, u64), SimError> {
    let offset = bytes_of(&j.offset, "offset", at)?;
    let offset_inc = bytes_of(&j.offset_increment, "offset_increment", at)?;
    if !j.direct {
        // The page cache is modelled in whole pages; fio would run a
        // sub-page buffered job (read-modify-write of partial pages).
        let page = iostack_mm::PAGE_SIZE;
        for (what, v) in [
            ("bs (read)", j.bs.read),
            ("bs (write)", j.bs.write),
            ("offset", offset),
        ] {
            if v % page != 0 {
                let msg = format!(
                    "direct=0 with {what}={v}: iostack models buffered I/O in whole \
                     {page}-byte pages"
                );
                let option = what.split(' ').next();
                return Err(at.err(option, msg));
            }
        }
    }
    // The last clone's region must end within 63 bits (a file offset is a loff_t).
    let last = u64::from(j.numjobs.max(1) - 1);
    let end = offset_inc
        .checked_mul(last)
        .and_then(|o| o.checked_add(offset))
        .and_then(|o| o.checked_add(size))
        .filter(|e| *e <= i64::MAX as u64);
    if end.is_none() {
        let msg = format!(
            "offset {offset} + offset_increment {offset_inc} x {last} + size {size} is \
             beyond the largest file offset"
        );
        return Err(at.err(Some("offset"), msg));
    }
    let diskless = j.ioengine == iostack_workload::IoEngine::Null;
    let on_fs =
        !diskless && (j.files.is_empty() || j.files.iter().any(|f| !f.starts_with("/dev/")));
    if let (true, Some(end)) = (on_fs, end) {
        fits_on_disk(end, m).map_err(|e| {
            if offset == 0 && offset_inc == 0 {
                at.err(Some("size"), format!("size={size}: {e}"))
            } else {
                at.err(
                    Some("offset"),
                    format!("offset={offset} + size={size}: {e}"),
                )
            }
        })?;
    }
    Ok((size, io_size, offset, offset_inc))
}

/// fio's `REAL_MAX_JOBS`: more processes than this and fio stops with "maximum
/// number of jobs reached".
const MAX_FIO_JOBS: usize = 4096;

/// The deepest queue a job may ask for: the default `fs.aio-max-nr` (65536), the
/// most events one `io_setup` can get.
const MAX_IODEPTH: u32 = 65536;

/// The job's clone count and queue depth are ones fio and the kernel would run.
fn counts_fit(j: &iostack_workload::JobSpec, so_far: usize, at: &JobAt) -> Result<(), SimError> {
    if so_far.saturating_add(j.numjobs as usize) > MAX_FIO_JOBS {
        let msg = format!(
            "numjobs={} brings the processes to more than fio's {MAX_FIO_JOBS} (REAL_MAX_JOBS)",
            j.numjobs
        );
        return Err(at.err(Some("numjobs"), msg));
    }
    if j.iodepth > MAX_IODEPTH {
        let msg = format!(
            "iodepth={} is more than the {MAX_IODEPTH} events io_setup allows (fs.aio-max-nr)",
            j.iodepth
        );
        return Err(at.err(Some("iodepth"), msg));
    }
    Ok(())
}

/// The longest a job's `startdelay` plus `runtime` may be: 2^62 ns (146 years),
/// so that adding it to any simulated clock reading cannot overflow 64 bits.
const MAX_JOB_TIME_NS: u64 = 1 << 62;

/// A job's times fit the simulated clock.
fn times_fit(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<(), SimError> {
    let total = j.startdelay_ns.checked_add(j.runtime_ns);
    if total.is_none_or(|t| t > MAX_JOB_TIME_NS) {
        let option = if j.startdelay_ns > j.runtime_ns {
            "startdelay"
        } else {
            "runtime"
        };
        let msg = format!(
            "startdelay ({} ns) + runtime ({} ns) exceed the simulated clock's {MAX_JOB_TIME_NS} ns",
            j.startdelay_ns, j.runtime_ns
        );
        return Err(at.err(Some(option), msg));
    }
    Ok(())
}

/// The option-table entry of a job file's option (engine-private or core).
fn def_of(e: &iostack_workload::OptionEntry) -> Option<&'static iostack_workload::OptDef> {
    use iostack_workload::options::{find_engine_option, find_option};
    match &e.engine {
        Some(engine) => find_engine_option(engine, &e.name),
        None => find_option(&e.name),
    }
}

/// One option the simulation refuses, where it is set.
struct Refusal {
    file: String,
    line: usize,
    job: String,
    /// Canonical option name.
    option: &'static str,
    /// `option 'rate=1m' is not modelled yet`.
    message: String,
}

/// Every option of the job file that the table refuses and that is set to
/// anything but its default ([`iostack_workload::options::Status`]), each once
/// (a global option applies to many jobs).
fn refused_options(jf: &iostack_workload::JobFile) -> Vec<Refusal> {
    use iostack_workload::options::{is_default, status, Status};
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for j in &jf.jobs {
        let applied = j.global_options_applied.min(jf.global_options.len());
        for e in jf.global_options[..applied].iter().chain(&j.options) {
            let Some(def) = def_of(e) else { continue };
            let (Status::Refused(reason), note) = status(def) else {
                continue;
            };
            if is_default(def, e.expanded.as_deref()) || !seen.insert((e.file.clone(), e.line)) {
                continue;
            }
            let note = if note.is_empty() {
                String::new()
            } else {
                format!(" ({note})")
            };
            let value = e.value.as_deref().map(|v| format!("={v}"));
            out.push(Refusal {
                file: e.file.display().to_string(),
                line: e.line,
                job: j.name.clone(),
                option: def.name,
                message: format!(
                    "option '{}{}' is refused: {reason}{note}",
                    e.written_name,
                    value.unwrap_or_default()
                ),
            });
        }
    }
    out
}

/// Refuse a job file with options the simulation does not carry out, naming
/// every one (not only the first): the error is at the first, its message lists
/// the others on the lines below.
fn check_refused(jf: &iostack_workload::JobFile) -> Result<(), SimError> {
    let refused = refused_options(jf);
    let Some(first) = refused.first() else {
        return Ok(());
    };
    let mut message = first.message.clone();
    for r in &refused[1..] {
        message.push_str(&format!(
            "\n{}:{}: job '{}': {}",
            r.file, r.line, r.job, r.message
        ));
    }
    Err(SimError::Job {
        file: first.file.clone(),
        line: Some(first.line),
        job: first.job.clone(),
        option: Some(first.option.to_string()),
        message,
    })
}

/// fio's `number_ios`, for the jobs where it is simulated: with `time_based`,
/// fio's `do_io` keeps going past `io_issue_bytes_exceeded`, which is not
/// modelled yet.
fn number_ios_of(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<u64, SimError> {
    let n = j.number_ios;
    if n > 0 && j.time_based {
        let msg = "number_ios with time_based is not modelled yet".to_string();
        return Err(at.err(Some("number_ios"), msg));
    }
    Ok(n)
}

/// Bytes of I/O of a job with fio's `loops`: `keep_running` runs `do_io` once per
/// loop, each loop after `clear_io_state` (files back at their start, the random
/// map cleared), so the job does `loops` passes of `io_size`. The process carries
/// this as one longer `io_size`: its sequential position wraps to the region's
/// start and its random map clears when full, which is the same request stream
/// when `io_size` is whole passes of the region in whole blocks. `time_based`
/// jobs ignore `loops` (`keep_running` returns before counting them).
fn loops_io_size(
    j: &iostack_workload::JobSpec,
    size: u64,
    io_size: u64,
    at: &JobAt,
) -> Result<u64, SimError> {
    if j.loops <= 1 || j.time_based {
        return Ok(io_size);
    }
    let refuse = |why: &str| {
        at.err(
            Some("loops"),
            format!("loops with {why} is not modelled yet"),
        )
    };
    if !j.direct {
        // fio reopens the files each loop and drops their cached pages
        // (`invalidate`), which the simulated page cache does not do yet.
        return Err(refuse("buffered I/O (the page cache dropped at each loop)"));
    }
    if j.end_fsync || j.number_ios > 0 {
        return Err(refuse("end_fsync or number_ios (per-loop accounting)"));
    }
    let whole = |bs: u64| bs > 0 && size % bs == 0;
    if io_size != size || !whole(j.bs.read) || !whole(j.bs.write) {
        return Err(refuse("io_size not the whole region in whole blocks"));
    }
    io_size
        .checked_mul(u64::from(j.loops))
        .filter(|b| *b <= i64::MAX as u64)
        .ok_or_else(|| refuse("more bytes than a 64-bit count"))
}

/// fio's host placement (`crate::placement`): accepted where it changes
/// nothing modelled, else refused with the reason.
fn placement_fits(j: &iostack_workload::JobSpec, m: &Machine, at: &JobAt) -> Result<(), SimError> {
    use crate::placement as pl;
    let checks = [
        (
            "numa_cpu_nodes",
            j.numa_cpu_nodes.as_deref().map(pl::numa_cpu_nodes),
        ),
        (
            "numa_mem_policy",
            j.numa_mem_policy.as_deref().map(pl::numa_mem_policy),
        ),
        (
            "cpus_allowed",
            j.cpus_allowed
                .as_deref()
                .map(|s| pl::cpus_allowed(s, m.cpus)),
        ),
    ];
    for (option, r) in checks {
        if let Some(Err(why)) = r {
            return Err(at.refuse(option, &why));
        }
    }
    Ok(())
}

/// Whether a job of `j`'s flow runs in a later stonewall phase than `j`.
fn flow_waits_for_later(jf: &iostack_workload::JobFile, j: &iostack_workload::JobSpec) -> bool {
    let mut phase = 0;
    let mut own = None;
    for k in &jf.jobs {
        phase += usize::from(k.stonewall);
        if std::ptr::eq(k, j) {
            own = Some(phase);
        } else if k.flow > 0 && k.flow_id == j.flow_id && own.is_some_and(|p| phase > p) {
            return true;
        }
    }
    false
}

/// fio's flow control (`crate::flow`). Refused where fio's spin
/// (`flow_sleep=0`) is not modelled: with I/Os in flight at the loop's top
/// (an async engine deeper than 1: fio reaps nothing while it spins), with
/// a runtime (the spin's own runtime check), and with verify.
fn flow_of(
    jf: &iostack_workload::JobFile,
    j: &iostack_workload::JobSpec,
    engine: Engine,
    at: &JobAt,
) -> Result<Option<crate::flow::FlowSpec>, SimError> {
    if j.flow == 0 {
        return Ok(None);
    }
    let spin = j.flow_sleep_us == 0;
    let why = if flow_waits_for_later(jf, j) && j.runtime_ns == 0 {
        Some(
            "a job of the same flow_id runs after a stonewall: its weight counts from the \
             start (flow_init_job) but its counter never moves, so fio holds this job for \
             ever; without a runtime that is not simulated",
        )
    } else if spin && engine == Engine::Async && j.iodepth > 1 {
        Some("flow_sleep=0 with iodepth above 1 (fio spins without reaping) is not modelled yet")
    } else if spin && j.runtime_ns > 0 {
        Some("flow_sleep=0 with a runtime is not modelled yet")
    } else if j.verify.is_some() && j.do_verify {
        Some("flow with verify is not modelled yet")
    } else {
        None
    };
    if let Some(why) = why {
        return Err(at.refuse("flow", why));
    }
    Ok(Some(crate::flow::FlowSpec {
        id: j.flow_id,
        weight: u64::from(j.flow),
        sleep: Duration(j.flow_sleep_us.saturating_mul(1000)),
    }))
}

/// A direction's `bssplit` as (size, percentage) pairs.
fn split_of(list: &[iostack_workload::BsSplit]) -> Vec<(u64, u64)> {
    list.iter().map(|e| (e.bs, u64::from(e.percent))).collect()
}

/// `bsrange`/`bssplit` where they are simulated: sizes whole pages for buffered
/// I/O and fio's default alignment. With the random map (fio's
/// `mark_random_map`, which trims an I/O to the free blocks after its first)
/// both directions must share their smallest size: fio keeps the map in
/// blocks of `rw_min_bs` but marks it in each direction's `min_bs`.
fn varied_sizes_fit(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<(), SimError> {
    let varies = j.min_bs.read != j.max_bs.read || j.min_bs.write != j.max_bs.write;
    if !varies {
        return Ok(());
    }
    let option = if j.bssplit.read.is_empty() && j.bssplit.write.is_empty() {
        "bsrange"
    } else {
        "bssplit"
    };
    if j.rw.kind.is_random() && !j.norandommap && j.min_bs.read != j.min_bs.write {
        let msg = format!(
            "{option} with the random map and a different smallest size per direction is not \
             modelled yet; set norandommap"
        );
        return Err(at.err(Some(option), msg));
    }
    let page = iostack_mm::PAGE_SIZE;
    let sizes = [j.min_bs.read, j.min_bs.write]
        .into_iter()
        .chain(j.bssplit.read.iter().chain(&j.bssplit.write).map(|e| e.bs));
    if !j.direct && sizes.clone().any(|b| b % page != 0) {
        let msg = format!(
            "direct=0 with {option}: iostack models buffered I/O in whole {page}-byte pages"
        );
        return Err(at.err(Some(option), msg));
    }
    Ok(())
}

/// The parts of simulated options that are not simulated: several files, a
/// directory list, a start-delay range.
fn partial_refusals(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<(), SimError> {
    if j.directory.as_deref().is_some_and(|d| d.contains(':')) {
        let msg = "a ':'-separated directory list is not modelled yet".to_string();
        return Err(at.err(Some("directory"), msg));
    }
    if j.filesize.is_some_and(|(lo, hi)| lo != hi) {
        let msg = "a range (a random size per file) is not modelled yet";
        return Err(at.refuse("filesize", msg));
    }
    if j.startdelay_high_ns != j.startdelay_ns {
        let msg = "a startdelay range (a random delay) is not modelled yet".to_string();
        return Err(at.err(Some("startdelay"), msg));
    }
    if j.write_hist_log.is_some() && j.log_hist_coarseness > 10 {
        // fio's flush_hist_samples would read past its 1856 bins.
        let msg = "above 10 (bins merged more than 1024 at a time, past fio's 1856) is refused"
            .to_string();
        return Err(at.err(Some("log_hist_coarseness"), msg));
    }
    if j.fsync > 0 && j.fdatasync > 0 {
        let msg =
            "fsync= and fdatasync= together (two sync counters) are not modelled yet".to_string();
        return Err(at.err(Some("fdatasync"), msg));
    }
    Ok(())
}

/// fio's `random_distribution` where it is simulated (uniform, `zoned`,
/// `zoned_abs`): the zones of each direction; zipf, pareto and normal are
/// [`dist_of`]'s. Zones hold with varied block sizes (the block in units
/// of `ba`, then `get_next_buflen`); `percentage_random` below 100 with the
/// random map (fio marks the sequential I/Os in it) or with varied sizes is
/// refused.
fn zoned_of(
    j: &iostack_workload::JobSpec,
    size: u64,
    at: &JobAt,
) -> Result<Option<crate::workload::Zoned>, SimError> {
    use iostack_workload::RandomDistribution as D;
    let varies = j.min_bs.read != j.max_bs.read || j.min_bs.write != j.max_bs.write;
    let perc = j.perc_random.read.min(j.perc_random.write) < 100;
    let skewed = !matches!(j.random_distribution, D::Random);
    let lfsr = j.random_generator == iostack_workload::RandomGenerator::Lfsr;
    let randmap = !j.norandommap && !skewed && !lfsr && !aligned_apart(j);
    if perc && j.rw.kind.is_random() && (randmap || varies) {
        let msg = "with the random map or varied block sizes it is not modelled yet; set \
                   norandommap and one block size";
        return Err(at.refuse("percentage_random", msg));
    }
    let (absolute, zones) = match &j.random_distribution {
        D::Zoned(z) => (false, z),
        D::ZonedAbs(z) => (true, z),
        _ => return Ok(None),
    };
    let list = |v: &Vec<iostack_workload::ZoneSplit>| -> Vec<(u32, u64)> {
        v.iter().map(|z| (z.access_percent, z.size)).collect()
    };
    let zoned = crate::workload::Zoned {
        absolute,
        zones: [list(&zones.read), list(&zones.write)],
    };
    let too_big = zoned
        .zones
        .iter()
        .any(|z| z.iter().map(|e| e.1).sum::<u64>() > size);
    if absolute && too_big {
        let msg = format!("zoned_abs sizes exceed the file size ({size} bytes), as fio says");
        return Err(at.refuse("random_distribution", &msg));
    }
    Ok(Some(zoned))
}

/// fio's `zipf`, `pareto` and `normal` distributions (`crate::dist`), their
/// parameters in fixed point. One block size: fio sizes the ranges by the
/// smallest, and a larger one would run past the file's end.
fn dist_of(
    j: &iostack_workload::JobSpec,
    size: u64,
    at: &JobAt,
) -> Result<Option<crate::dist::Dist>, SimError> {
    use crate::dist::Dist;
    use crate::fixed::from_f64;
    use iostack_workload::RandomDistribution as D;
    let center = |c: f64| (c != -1.0).then(|| from_f64(c));
    let d = match j.random_distribution {
        D::Zipf { theta, center: c } => Dist::Zipf {
            theta: from_f64(theta),
            center: center(c),
        },
        D::Pareto { h, center: c } => Dist::Pareto {
            h: from_f64(h),
            center: center(c),
        },
        D::Normal { dev, center: c } => Dist::Normal {
            dev: from_f64(dev),
            center: center(c),
        },
        _ => return Ok(None),
    };
    let varies = j.min_bs.read != j.max_bs.read || j.min_bs.write != j.max_bs.write;
    let both = j.rw.kind.reads() && j.rw.kind.writes();
    let bs = j.bs.read.min(j.bs.write);
    if varies || (both && j.bs.read != j.bs.write) || bs == 0 || size % bs != 0 {
        let msg = "zipf, pareto and normal with varied block sizes, or a size that is \
                   not whole blocks, are not modelled yet";
        return Err(at.refuse("random_distribution", msg));
    }
    Ok(Some(d))
}

/// fio's `blockalign` per direction where it differs from the block size
/// (0 where it does not): random offsets at its multiples, uniform or zoned
/// (`last_block` in units of `ba`), with fixed or varied sizes. fio turns
/// the random map off with it (`fixup_options`: "Any use of blockalign=
/// turns off randommap", [`pattern_of`]). With zipf, pareto or normal
/// (offsets in blocks of the size) it is refused.
fn blockalign_of(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<[u64; 2], SimError> {
    // Unset, fio's `ba` is `min_bs` (fixup_options), which the block size
    // choice already aligns to.
    let ba = [
        (j.blockalign.read != j.min_bs.read).then_some(j.blockalign.read),
        (j.blockalign.write != j.min_bs.write).then_some(j.blockalign.write),
    ];
    if ba == [None, None] || !j.rw.kind.is_random() {
        return Ok([0, 0]);
    }
    use iostack_workload::RandomDistribution as D;
    let flat = matches!(
        j.random_distribution,
        D::Random | D::Zoned(_) | D::ZonedAbs(_)
    );
    if !flat || ba.iter().flatten().any(|b| *b == 0) {
        let msg = "with zipf, pareto or normal (offsets in blocks of the size) it is not \
                   modelled yet";
        return Err(at.refuse("ba", msg));
    }
    Ok(ba.map(|b| b.unwrap_or(0)))
}

/// fio's `random_generator` for job clone number `thread_number` (fio's
/// `td->thread_number`, 1 for the file's first clone): `lfsr`'s seed as fio
/// 3.33 makes it (`crate::lfsr::block_seed`). The LFSR serves uniform random
/// offsets in blocks of one size; with varied or per-direction sizes, a
/// `blockalign`, or a non-uniform distribution it is refused.
/// `tausworthe64` is fio's generator from the same seed (`crate::taus`),
/// under the same conditions. The default `tausworthe` is the simulator's
/// own offset stream (statistically fio's, not its sequence).
fn rand_gen_of(
    j: &iostack_workload::JobSpec,
    thread_number: u64,
    at: &JobAt,
) -> Result<crate::workload::RandGen, SimError> {
    use iostack_workload::RandomGenerator as G;
    if j.random_generator == G::Tausworthe {
        return Ok(crate::workload::RandGen::Streams);
    }
    let varies = j.min_bs.read != j.max_bs.read || j.min_bs.write != j.max_bs.write;
    let uniform = matches!(
        j.random_distribution,
        iostack_workload::RandomDistribution::Random
    );
    let aligned = j.blockalign.read == j.min_bs.read && j.blockalign.write == j.min_bs.write;
    if varies || j.bs.read != j.bs.write || !uniform || !aligned {
        let msg = "lfsr or tausworthe64 with varied or per-direction block sizes, \
                   blockalign, or a non-uniform random_distribution is not modelled yet";
        return Err(at.refuse("random_generator", msg));
    }
    let seed = match (j.randrepeat, j.randseed) {
        (true, s) => Some(crate::lfsr::block_seed(thread_number, true, s.unwrap_or(0))),
        (false, Some(s)) => Some(crate::lfsr::block_seed(thread_number, false, s)),
        (false, None) => None,
    };
    Ok(if j.random_generator == G::Lfsr {
        crate::workload::RandGen::Lfsr(seed)
    } else {
        crate::workload::RandGen::Tausworthe64(seed)
    })
}

/// fio's verification of a job that writes (`verify=` other than 0 with
/// `do_verify`): the read-back `crate::verify` issues. Refused where its
/// I/O is not modelled: after direct writes (`do_verify`'s `fio_io_sync`
/// of an O_DIRECT file is a journal commit and a cache flush, as `fsync=`
/// there), with time_based, loops, several files, pacing, a replay, or
/// `experimental_verify`; `verify_backlog` with more than one I/O in flight
/// (fio skips pieces still in flight) or with `verify_only`.
fn verify_of(
    j: &iostack_workload::JobSpec,
    pattern: Pattern,
    engine: Engine,
    diskless: bool,
    at: &JobAt,
) -> Result<Option<crate::verify::Verify>, SimError> {
    if j.verify.is_none() || !j.do_verify || !j.rw.kind.writes() {
        return Ok(None);
    }
    let why = if j.direct || diskless {
        "after direct writes it is not modelled yet (fio's fsync before the reads: the fsync \
         of an O_DIRECT file is a journal commit and a cache flush)"
    } else if j.time_based || j.loops > 1 {
        "with time_based or loops it is not modelled yet"
    } else if nfiles(j) > 1 {
        "with several files it is not modelled yet"
    } else if j.thinktime_ns > 0 || rate_of(j, at)? != [crate::workload::RateLimit::default(); 2] {
        "with thinktime or rate limits it is not modelled yet"
    } else if j.experimental_verify {
        "with experimental_verify it is not modelled yet"
    } else if j.verify_backlog > 0 && (j.verify_only || (engine == Engine::Async && j.iodepth > 1))
    {
        "verify_backlog with verify_only or more than one I/O in flight is not modelled yet"
    } else {
        ""
    };
    if !why.is_empty() {
        return Err(at.refuse("verify", why));
    }
    let randmap = matches!(pattern, Pattern::Random { norandommap: false })
        && j.random_generator != iostack_workload::RandomGenerator::Lfsr;
    Ok(Some(crate::verify::Verify {
        in_order: randmap,
        only: j.verify_only,
        backlog: j.verify_backlog,
        batch: j.verify_batch,
    }))
}

/// fio's `zonemode=strided` with `zonesize`, `zonerange` (default the
/// size) and `zoneskip` (fio's `fixup_options` checks). Simulated for one
/// block size, one direction, one file, uniform offsets; refused with
/// `rw=...:N`, `percentage_random`, a zone count (`Nz`) for the skip, or a
/// range longer than the job's size.
fn strided_of(
    j: &iostack_workload::JobSpec,
    size: u64,
    at: &JobAt,
) -> Result<Option<crate::workload::Strided>, SimError> {
    match j.zone_mode.as_str() {
        "none" if j.zone_size > 0 => {
            let msg = "fio: --zonemode=none and --zonesize are not compatible".to_string();
            return Err(at.err(Some("zonesize"), msg));
        }
        "strided" if j.zone_size == 0 => {
            let msg = "fio: --zonesize must be specified when using --zonemode=strided";
            return Err(at.err(Some("zonemode"), msg.to_string()));
        }
        "strided" => {}
        "zbd" => {
            let why = "zbd (zoned block devices) is not modelled yet";
            return Err(at.refuse("zonemode", why));
        }
        _ => return Ok(None),
    }
    let range = if j.zone_range > 0 {
        j.zone_range
    } else {
        j.zone_size
    };
    let skip = match j.zone_skip {
        iostack_workload::Amount::Bytes(b) => b,
        _ => {
            let why = "a zone count or percentage with zonemode=strided is not modelled yet";
            return Err(at.refuse("zoneskip", why));
        }
    };
    let varies = j.min_bs.read != j.max_bs.read || j.min_bs.write != j.max_bs.write;
    let (r, w) = (j.rw.kind.reads(), j.rw.kind.writes());
    let bs = if w { j.bs.write } else { j.bs.read };
    let odd = bs == 0 || range % bs != 0 || j.zone_size % bs != 0;
    let uniform = matches!(
        j.random_distribution,
        iostack_workload::RandomDistribution::Random
    );
    let perc = j.perc_random.read.min(j.perc_random.write) < 100;
    let taus = j.random_generator == iostack_workload::RandomGenerator::Tausworthe64;
    if varies || (r && w) || nfiles(j) > 1 || odd || !uniform || perc || range > size || taus {
        let why = "strided zones with varied block sizes, both directions, several files, \
                   a non-uniform distribution, percentage_random, tausworthe64, zones not \
                   whole blocks or a zonerange past the size are not modelled yet";
        return Err(at.refuse("zonemode", why));
    }
    if j.rw.modifier.is_some() {
        let why = "strided zones with rw=...:N are not modelled yet";
        return Err(at.refuse("zonemode", why));
    }
    Ok(Some(crate::workload::Strided {
        size: j.zone_size,
        range,
        skip,
    }))
}

/// fio's thinktime options (`thinktime_spin` no longer than `thinktime`, checked
/// in `pacing_fits`).
fn think_of(j: &iostack_workload::JobSpec) -> crate::workload::ThinkTime {
    crate::workload::ThinkTime {
        think: Duration(j.thinktime_ns),
        spin: Duration(j.thinktime_spin_ns),
        blocks: u64::from(j.thinktime_blocks),
        issue_side: j.thinktime_blocks_issue,
    }
}

/// The rate's sleeps stay within the simulated clock: a job that is not
/// time_based must issue its bytes within `MAX_JOB_TIME_NS` at its rate.
fn rate_fits(
    r: &[crate::workload::RateLimit; 2],
    io_size: u64,
    j: &iostack_workload::JobSpec,
    at: &JobAt,
) -> Result<(), SimError> {
    let slow = r.iter().filter(|d| d.bps > 0).any(|d| {
        u128::from(io_size) * 1_000_000_000 / u128::from(d.bps) > u128::from(MAX_JOB_TIME_NS)
    });
    if slow && !j.time_based {
        let msg = format!(
            "{io_size} bytes at this rate take more than the simulated clock's {MAX_JOB_TIME_NS} ns"
        );
        let option = if j.rate.read | j.rate.write != 0 {
            "rate"
        } else {
            "rate_iops"
        };
        return Err(at.refuse(option, &msg));
    }
    Ok(())
}

/// fio's rate per direction, as `__setup_rate` sets `rate_bps`: `rate` if
/// given, else `rate_iops` times the direction's `min_bs`.
fn rate_of(
    j: &iostack_workload::JobSpec,
    at: &JobAt,
) -> Result<[crate::workload::RateLimit; 2], SimError> {
    let one = |rate: u64, iops: u64, min_bs: u64| {
        let bps = if rate > 0 {
            Some(rate)
        } else {
            iops.checked_mul(min_bs)
        };
        bps.map(|bps| crate::workload::RateLimit {
            bps,
            iops,
            poisson: j.rate_poisson,
        })
        .ok_or_else(|| {
            at.err(
                Some("rate_iops"),
                "rate_iops times the block size overflows 64 bits".into(),
            )
        })
    };
    Ok([
        one(j.rate.read, j.rate_iops.read, j.min_bs.read)?,
        one(j.rate.write, j.rate_iops.write, j.min_bs.write)?,
    ])
}

/// The parts of fio's pacing that are not simulated: a Poisson rate under
/// one I/O per second of the smallest block (fio's `usec_for_io` divides
/// by zero), and a spin longer than the think time (fio's `usec_sleep` of
/// a negative `left`).
fn pacing_fits(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<(), SimError> {
    if j.rate_poisson {
        let r = rate_of(j, at)?;
        let min_bs = [j.min_bs.read, j.min_bs.write];
        if r.iter()
            .zip(min_bs)
            .any(|(r, bs)| r.bps > 0 && r.bps / bs.max(1) == 0)
        {
            let msg = "a rate under one block per second: fio's usec_for_io divides by zero";
            return Err(at.refuse("rate_process", msg));
        }
    }
    if j.thinktime_ns > MAX_JOB_TIME_NS {
        let msg = format!("more than the simulated clock's {MAX_JOB_TIME_NS} ns");
        return Err(at.refuse("thinktime", &msg));
    }
    if j.thinktime_spin_ns > j.thinktime_ns {
        let msg = format!(
            "longer than thinktime ({} us): fio would sleep a negative time",
            j.thinktime_ns / 1000
        );
        return Err(at.refuse("thinktime_spin", &msg));
    }
    Ok(())
}

/// fio's sync options where they are simulated: `fsync=N`, `fdatasync=N`
/// (`->fsync` with `datasync`), `sync=1`/`dsync` on buffered writes. With
/// O_DIRECT, or both counts set, they are refused.
fn syncs_fit(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<(), SimError> {
    if j.fsync > 0 && j.fdatasync > 0 {
        let msg = "together with fsync= (two counters of write issues) it is not modelled yet";
        return Err(at.refuse("fdatasync", msg));
    }
    if !j.direct || !j.rw.kind.writes() {
        return Ok(());
    }
    let why = "with direct=1 it is not modelled yet (the fsync of an O_DIRECT file is a \
               journal commit and a cache flush)";
    if j.sync != iostack_workload::SyncMode::None {
        return Err(at.refuse("sync", why));
    }
    if j.fsync > 0 {
        return Err(at.refuse("fsync", why));
    }
    if j.fdatasync > 0 {
        return Err(at.refuse("fdatasync", why));
    }
    Ok(())
}

/// The advice fio's `td_io_open_file` gives the file: with `fadvise_hint=1`
/// (`F_ADV_TYPE`), `POSIX_FADV_RANDOM` when `td_random(td)`, else
/// `POSIX_FADV_SEQUENTIAL`.
fn fadvise_of(j: &iostack_workload::JobSpec) -> crate::workload::Fadvise {
    use crate::workload::Fadvise;
    use iostack_workload::FadviseHint;
    match j.fadvise_hint {
        FadviseHint::None => Fadvise::Normal,
        FadviseHint::Random => Fadvise::Random,
        FadviseHint::Sequential => Fadvise::Sequential,
        FadviseHint::Type if j.rw.kind.is_random() => Fadvise::Random,
        FadviseHint::Type => Fadvise::Sequential,
    }
}

/// The processes of a parsed fio job file: one per job clone (`numjobs`), each on
/// its own file (`jobname.N.0` in `directory`, or the `filename` given).
/// A job with `read_iolog` is refused: its log cannot be read here (see
/// [`fio_procs_loading`]).
pub fn fio_procs(jf: &iostack_workload::JobFile, m: &Machine) -> Result<Procs, SimError> {
    fio_procs_loading(jf, m, &crate::iolog_front::no_logs)
}

/// Whether the job file sets `iodepth` for job `j` (fio's
/// `fio_option_is_set`), in its section or in a global one before it.
fn iodepth_set(jf: &iostack_workload::JobFile, j: &iostack_workload::JobSpec) -> bool {
    let applied = j.global_options_applied.min(jf.global_options.len());
    jf.global_options[..applied]
        .iter()
        .chain(&j.options)
        .any(|e| e.name == "iodepth")
}

/// What fio's replay does not combine with (refused, not ignored).
fn replay_fits(j: &iostack_workload::JobSpec, at: &JobAt) -> Result<(), SimError> {
    let paced = j.rate.read | j.rate.write | j.rate_iops.read | j.rate_iops.write != 0;
    let clash = [
        (j.time_based, "time_based"),
        (j.loops > 1, "loops"),
        (j.number_ios > 0, "number_ios"),
        (paced, "rate"),
        (j.thinktime_ns > 0, "thinktime"),
        (j.fsync > 0 || j.fdatasync > 0 || j.end_fsync, "fsync"),
    ];
    if let Some((_, what)) = clash.iter().find(|c| c.0) {
        let msg = format!("read_iolog with {what} is not modelled yet");
        return Err(at.err(Some("read_iolog"), msg));
    }
    Ok(())
}

/// The process of one clone of a `read_iolog` job: the log's I/Os on its
/// file or device, with the job's engine, depth (a blktrace's probed depth
/// unless `iodepth` is set) and `direct`.
fn replay_proc(
    jf: &iostack_workload::JobFile,
    j: &iostack_workload::JobSpec,
    m: &Machine,
    load: crate::iolog_front::LogLoader,
    at: &JobAt,
) -> Result<(ProcSpec, u32), SimError> {
    replay_fits(j, at)?;
    let name = j.read_iolog.as_deref().unwrap_or_default();
    let r = crate::iolog_front::replay_job(name, &j.replay, m, load)
        .map_err(|e| at.err(Some("read_iolog"), e))?;
    let engine = engine_of(j, at)?;
    let target = target_of(&r.path, r.region, m).map_err(|e| at.err(Some("read_iolog"), e))?;
    if matches!(target, Target::File { .. }) {
        fits_on_disk(r.region, m).map_err(|e| at.err(Some("read_iolog"), e))?;
    }
    let iodepth = if r.probed_depth > 0 && !iodepth_set(jf, j) {
        r.probed_depth
    } else {
        j.iodepth
    };
    let bs = [r.bs[0].max(512), r.bs[1].max(512)];
    let spec = ProcSpec {
        group: j.group_id,
        read_pct: r.read_pct,
        bs,
        bs_range: [(bs[0], bs[0]), (bs[1], bs[1])],
        io_size: r.replay.ios.iter().map(|i| i.len).sum(),
        engine,
        iodepth,
        startdelay: Duration(j.startdelay_ns),
        stonewall: j.stonewall,
        ioprio: (j.prioclass.unwrap_or(2) as u8, j.prio.unwrap_or(4) as u8),
        direct: j.direct,
        invalidate: j.invalidate,
        fadvise: fadvise_of(j),
        replay: Some(r.replay),
        ..ProcSpec::direct_reader("fio", &j.name, target, r.region)
    };
    Ok((spec, iodepth))
}

/// As [`fio_procs`], reading `read_iolog` logs through `load`.
pub fn fio_procs_loading(
    jf: &iostack_workload::JobFile,
    m: &Machine,
    load: crate::iolog_front::LogLoader,
) -> Result<Procs, SimError> {
    let mut out = Procs {
        procs: Vec::new(),
        meta: Vec::new(),
        global_options: jf
            .global_options
            .iter()
            .map(|o| (o.name.clone(), o.value.clone().unwrap_or_default()))
            .collect(),
    };
    check_refused(jf)?;
    // Each job's processes, for `wait_for`.
    let mut ranges: Vec<(&str, u32, u32)> = Vec::new();
    for j in &jf.jobs {
        let at = JobAt(j);
        let first = out.procs.len();
        fio_job_procs(jf, j, m, load, &mut out)?;
        let after = waitee_of(j, &ranges, &at)?;
        for p in &mut out.procs[first..] {
            p.after = after;
        }
        ranges.push((&j.name, first as u32, out.procs.len() as u32));
    }
    Ok(out)
}

/// fio's `wait_for` (`wait_for_ok` when the job is added, `waitee_running`
/// when jobs start): the processes of the one earlier job of that name, all
/// of which must be done before this job starts.
fn waitee_of(
    j: &iostack_workload::JobSpec,
    ranges: &[(&str, u32, u32)],
    at: &JobAt,
) -> Result<Option<(u32, u32)>, SimError> {
    let Some(w) = j.wait_for.as_deref() else {
        return Ok(None);
    };
    let err = |msg: String| Err(at.refuse("wait_for", &msg));
    if w == j.name {
        return err(format!("a job cannot wait for itself (wait_for={w})"));
    }
    let found: Vec<_> = ranges.iter().filter(|r| r.0 == w).collect();
    match found.as_slice() {
        [] => err(format!("waitee job {w} unknown (it must come before)")),
        [r] => Ok(Some((r.1, r.2))),
        _ => err(format!("multiple waitees {w} found")),
    }
}

/// fio's `exitall`: any job's sets `exitall_on_terminate` for all, and a
/// job ending then terminates what its `exit_what` names.
fn exit_what_of(
    jf: &iostack_workload::JobFile,
    j: &iostack_workload::JobSpec,
) -> Option<crate::workload::ExitWhat> {
    use crate::workload::ExitWhat;
    if !jf.jobs.iter().any(|j| j.exitall) {
        return None;
    }
    Some(match j.exit_what.as_str() {
        "stonewall" => ExitWhat::Stonewall,
        "all" => ExitWhat::All,
        _ => ExitWhat::Group,
    })
}

/// The processes of one job (its `numjobs` clones).
fn fio_job_procs(
    jf: &iostack_workload::JobFile,
    j: &iostack_workload::JobSpec,
    m: &Machine,
    load: crate::iolog_front::LogLoader,
    out: &mut Procs,
) -> Result<(), SimError> {
    let at = JobAt(j);
    if j.read_iolog.is_some() {
        counts_fit(j, out.procs.len(), &at)?;
        for clone in 0..j.numjobs {
            let (spec, depth) = replay_proc(jf, j, m, load, &at)?;
            out.meta.push(Some(job_meta(j, depth, spec.engine, clone)));
            out.procs.push(spec);
        }
        return Ok(());
    }
    let (pattern, read_pct) = pattern_of(j, &at)?;
    let engine = engine_of(j, &at)?;
    partial_refusals(j, &at)?;
    pacing_fits(j, &at)?;
    syncs_fit(j, &at)?;
    varied_sizes_fit(j, &at)?;
    if j.time_based && j.runtime_ns == 0 {
        let msg = "time_based without runtime= would never end; set runtime= (e.g. runtime=30s)";
        return Err(at.err(Some("time_based"), msg.into()));
    }
    let (size, io_size, offset, offset_inc) = sizes_of(j, m, &at)?;
    let io_size = loops_io_size(j, size, io_size, &at)?;
    let rate = rate_of(j, &at)?;
    rate_fits(&rate, io_size, j, &at)?;
    times_fit(j, &at)?;
    counts_fit(j, out.procs.len(), &at)?;
    let prioclass = j.prioclass.unwrap_or(2) as u8;
    let prio = j.prio.unwrap_or(4) as u8;
    let file_service = multi_file_fits(j, &at)?;
    placement_fits(j, m, &at)?;
    for clone in 0..j.numjobs {
        // Checked in sizes_of.
        let off = offset + offset_inc * u64::from(clone);
        let diskless = j.ioengine == iostack_workload::IoEngine::Null;
        let names = j.file_names(clone);
        let file = names[0].clone();
        let mut targets = Vec::with_capacity(names.len());
        for name in names {
            targets.push(if diskless {
                Target::Diskless { path: name }
            } else {
                target_of(&name, off + size, m).map_err(|e| at.err(Some("filename"), e))?
            });
        }
        let target = targets.remove(0);
        out.procs.push(ProcSpec {
            group: j.group_id,
            pattern,
            read_pct,
            bs: [j.bs.read, j.bs.write],
            offset: off,
            io_size,
            engine,
            iodepth: j.iodepth,
            runtime: (j.runtime_ns > 0).then_some(Duration(j.runtime_ns)),
            time_based: j.time_based,
            startdelay: Duration(j.startdelay_ns),
            stonewall: j.stonewall && clone == 0,
            ioprio: (prioclass, prio),
            // A diskless engine has no page cache to go through, nor a
            // cache to drop (file_invalidate_cache returns at once).
            direct: j.direct || diskless,
            // fio unlinks and recreates the file of a write-only job unless
            // `overwrite` is set (filesetup.c extend_file); clones sharing
            // one `filename` find it made by the first (setup_files sees
            // no file to extend) and write into it.
            fresh: read_pct == 0
                && !j.overwrite
                && !file.starts_with("/dev/")
                && !diskless
                && (clone == 0 || j.files.is_empty()),
            end_fsync: j.end_fsync,
            fsync_every: u64::from(j.fsync.max(j.fdatasync)),
            osync: j.sync != iostack_workload::SyncMode::None,
            datasync: j.fdatasync > 0 || j.sync == iostack_workload::SyncMode::Dsync,
            number_ios: number_ios_of(j, &at)?,
            bs_range: [
                (j.min_bs.read, j.max_bs.read),
                (j.min_bs.write, j.max_bs.write),
            ],
            bssplit: [split_of(&j.bssplit.read), split_of(&j.bssplit.write)],
            invalidate: j.invalidate && !diskless,
            fadvise: fadvise_of(j),
            think: think_of(j),
            zoned: zoned_of(j, size, &at)?,
            dist: dist_of(j, size, &at)?,
            ba: blockalign_of(j, &at)?,
            perc_random: [j.perc_random.read.min(100), j.perc_random.write.min(100)],
            seq_nr: rw_modifier_of(j, &at)?.0,
            seq_add: rw_modifier_of(j, &at)?.1,
            seq_back: seq_back_of(j, &at)?,
            seq_identical: j.rw_sequencer == iostack_workload::RwSequencer::Identical,
            rate,
            more_files: targets,
            file_service,
            exit_what: exit_what_of(jf, j),
            randseed: match (j.randseed, j.randrepeat) {
                (Some(n), _) => crate::workload::RandSeed::Fixed(n),
                (None, true) => crate::workload::RandSeed::Repeat,
                (None, false) => crate::workload::RandSeed::Fresh,
            },
            rand_gen: rand_gen_of(j, out.procs.len() as u64 + 1, &at)?,
            verify: verify_of(j, pattern, engine, diskless, &at)?,
            strided: strided_of(j, size, &at)?,
            offload: j.submit_offload,
            poisson_seeds: poisson_seeds_of(j, out.procs.len() as u64 + 1),
            min_rate: min_rate_of(j, &at)?,
            flow: flow_of(jf, j, engine, &at)?,
            ..ProcSpec::direct_reader("fio", &j.name, target, size)
        });
        out.meta.push(Some(job_meta(j, j.iodepth, engine, clone)));
    }
    Ok(())
}
