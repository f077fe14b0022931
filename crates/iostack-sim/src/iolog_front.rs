//! fio's `read_iolog` on a machine: the log (a text iolog or a blktrace,
//! `iostack_workload::iolog`) becomes a process's replay list and target.

use crate::machine::Machine;
use crate::workload::{Dir, Replay, ReplayIo, ReplayKind};
use iostack_workload::{IologAction, ReplayOptions};
use std::sync::Arc;

/// Reads a replay log by the name a job gives: its bytes, or the per-CPU
/// files of a blktrace (`NAME.blktrace.0`, `.1`, ...), in CPU order. The
/// simulator reads no files; the command line supplies this.
pub type LogLoader<'a> = &'a dyn Fn(&str) -> Result<Vec<Vec<u8>>, String>;

/// The loader of a front end that has no files.
pub fn no_logs(name: &str) -> Result<Vec<Vec<u8>>, String> {
    Err(format!(
        "cannot read '{name}' here: the library reads no files (iostack run and \
         iostack replay read the log)"
    ))
}

/// A log ready to replay: the entries, where they go and what they ask.
pub(crate) struct ReplayJob {
    pub replay: Arc<Replay>,
    /// A device node or a file name as the log names it.
    pub path: String,
    /// Bytes the I/Os reach (the file size needed).
    pub region: u64,
    pub read_pct: u32,
    /// The largest I/O per direction (fio's `max_bs` from the log).
    pub bs: [u64; 2],
    /// fio's probed depth of a blktrace (0 for text logs).
    pub probed_depth: u32,
}

/// Read `name` through `load` and map it to the machine.
pub(crate) fn replay_job(
    name: &str,
    o: &ReplayOptions,
    m: &Machine,
    load: LogLoader,
) -> Result<ReplayJob, String> {
    let parts = load(name)?;
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let blk = refs.len() > 1
        || refs
            .first()
            .is_some_and(|b| iostack_workload::iolog::is_blktrace(b));
    let log = if blk {
        iostack_workload::iolog::parse_blktrace(name, &refs, o)
    } else {
        iostack_workload::iolog::parse_text_iolog(name, refs.first().copied().unwrap_or(&[]), o)
    }
    .map_err(|e| e.to_string())?;
    refuse_unmodelled(&log)?;
    if log.files.len() != 1 {
        return Err(format!(
            "the log uses {} files: several files per job are not modelled yet; \
             replay_redirect= sends every I/O to one",
            log.files.len()
        ));
    }
    let path = match (&o.redirect, log.devices[0]) {
        (Some(r), _) => r.clone(),
        (None, Some(dev)) => device_path(dev, m)?,
        (None, None) => log.files[0].clone(),
    };
    let mut job = ReplayJob {
        replay: Arc::new(Replay { ios: Vec::new() }),
        path,
        region: 0,
        read_pct: 0,
        bs: [0, 0],
        probed_depth: log.probed_depth,
    };
    let mut ios = Vec::with_capacity(log.ios.len());
    let mut dirs = [false; 2];
    for io in &log.ios {
        let kind = match io.action {
            IologAction::Read => ReplayKind::Io(Dir::Read),
            IologAction::Write => ReplayKind::Io(Dir::Write),
            IologAction::Wait => ReplayKind::Wait,
            _ => ReplayKind::Mark,
        };
        if let ReplayKind::Io(d) = kind {
            let end = io
                .offset
                .checked_add(io.len)
                .filter(|e| *e <= i64::MAX as u64);
            let end =
                end.ok_or_else(|| format!("an I/O at {} + {} bytes overflows", io.offset, io.len))?;
            job.region = job.region.max(end);
            job.bs[d as usize] = job.bs[d as usize].max(io.len);
            dirs[d as usize] = true;
        }
        ios.push(ReplayIo {
            delay_us: io.delay_us,
            kind,
            offset: io.offset,
            len: io.len,
        });
    }
    job.read_pct = match dirs {
        [true, false] => 100,
        [false, true] => 0,
        _ => 50,
    };
    job.replay = Arc::new(Replay { ios });
    Ok(job)
}

/// Trims and syncs of a log are refused, each kind with its count.
fn refuse_unmodelled(log: &iostack_workload::Iolog) -> Result<(), String> {
    let count = |f: &dyn Fn(IologAction) -> bool| log.ios.iter().filter(|i| f(i.action)).count();
    let trims = count(&|a| a == IologAction::Trim);
    if trims > 0 {
        return Err(format!(
            "the log has {trims} trims: trim (discard) is not modelled yet; \
             replay_skip=trim drops those of a blktrace"
        ));
    }
    let syncs = count(&|a| matches!(a, IologAction::Sync | IologAction::Datasync));
    if syncs > 0 {
        return Err(format!(
            "the log has {syncs} syncs: an fsync of the replayed file or device is \
             not modelled yet; replay_skip=sync drops those of a blktrace"
        ));
    }
    Ok(())
}

/// The machine's device node of a traced device number (fio's
/// `blktrace_lookup_device` under /dev).
fn device_path((maj, min): (u32, u32), m: &Machine) -> Result<String, String> {
    if (maj, min) == (m.disk.major, m.disk.minor) {
        return Ok(format!("/dev/{}", m.disk_name));
    }
    if let (Some((pmin, _)), Some(part)) = (m.partition, m.part_name()) {
        if (maj, min) == (m.disk.major, pmin) {
            return Ok(format!("/dev/{part}"));
        }
    }
    Err(format!(
        "the trace's device {maj}:{min} is not a device of machine '{}' (/dev/{} is {}:{}); \
         replay_redirect=/dev/{} replays it there",
        m.name, m.disk_name, m.disk.major, m.disk.minor, m.disk_name
    ))
}
