//! fio's replay inputs: the text iologs of versions 2 and 3 (fio 3.33
//! `iolog.c` `read_iolog`) and blktrace binary files (`blktrace.c`
//! `read_blktrace`), read into one list of I/Os with fio's delays. Pure: the
//! caller supplies the bytes.
//!
//! What fio does with them, kept here:
//! * v3 lines are `TIME FILE ACTION [OFFSET LENGTH]`, TIME in µs since the
//!   job started; the delay of an entry is the time since the previous line
//!   (`delay_since_ttime`: 0 for the first, when going backwards and with
//!   `replay_no_stall`), times 100 / `replay_time_scale`. `wait` is ignored.
//! * v2 lines are `FILE ACTION [OFFSET LENGTH]`; `wait OFFSET` waits until
//!   OFFSET µs after the job's start (dropped with `replay_no_stall`).
//! * blktrace: only Q records become I/Os (offset = sector × 512, length =
//!   bytes; a discard is a trim, a flush a sync, a zero-byte Q is ignored);
//!   the delay is the time since the previous Q in µs, truncated; the depth
//!   fio probes (`depth_inc`/`depth_dec`/`depth_end`: Q − merges until a C,
//!   the peak, capped at 1024) is the job's `iodepth` unless set.
//! * `replay_scale` divides offsets, `replay_align` rounds them down (and, in
//!   a blktrace, rounds lengths up), `replay_skip` drops directions.

use std::fmt;

/// What one entry of a replay log does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IologAction {
    /// A read of `len` bytes at `offset`.
    Read,
    /// A write.
    Write,
    /// A trim (discard).
    Trim,
    /// An fsync of the file.
    Sync,
    /// An fdatasync of the file.
    Datasync,
    /// v2's `wait OFFSET`: `read_iolog_get` compares OFFSET with the
    /// milliseconds since the run began and sleeps the difference in
    /// milliseconds, so it waits until OFFSET ms after the start.
    Wait,
    /// A file action (`add`, `open`, `close`): no I/O, but `ipo_special`
    /// takes its delay and counts as an issue for the next delay.
    File,
}

/// One I/O (or wait) of a replay log, in fio's `io_piece` terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IologIo {
    /// fio's `ipo->delay` in µs: the replayer sleeps until this long after the
    /// previous I/O was issued (`iolog_delay`).
    pub delay_us: u64,
    /// The action.
    pub action: IologAction,
    /// Index into [`Iolog::files`].
    pub file: u32,
    /// Byte offset (µs for `Wait`).
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

/// A replay log read into fio's list of I/Os.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Iolog {
    /// The files the I/Os go to, in the order first named: iolog file names,
    /// or for a blktrace `MAJ:MIN` of the traced devices (the redirect target
    /// instead when `replay_redirect` is set).
    pub files: Vec<String>,
    /// The I/Os in replay order.
    pub ios: Vec<IologIo>,
    /// For a blktrace, the device numbers of `files` (None for text logs).
    pub devices: Vec<Option<(u32, u32)>>,
    /// For a blktrace, fio's probed depth (0 for text logs).
    pub probed_depth: u32,
}

/// fio's replay options (`replay_*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayOptions {
    /// `replay_no_stall`: as fast as possible.
    pub no_stall: bool,
    /// `replay_time_scale` in percent (100: as recorded).
    pub time_scale: u64,
    /// `replay_scale`: offsets divided by this (0 or 1: unchanged).
    pub scale: u64,
    /// `replay_align`: offsets rounded down to this power of two (0: none).
    pub align: u64,
    /// `replay_redirect`: every I/O to this file or device.
    pub redirect: Option<String>,
    /// `replay_skip`: (read, write, trim, sync) dropped.
    pub skip: [bool; 4],
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            no_stall: false,
            time_scale: 100,
            scale: 0,
            align: 0,
            redirect: None,
            skip: [false; 4],
        }
    }
}

impl ReplayOptions {
    /// `replay_skip=read,write,...` as fio's `str_replay_skip_cb` reads it.
    pub fn skip_of(list: &str) -> [bool; 4] {
        let mut skip = [false; 4];
        for p in list.split(',').map(str::trim) {
            match p {
                "read" => skip[0] = true,
                "write" => skip[1] = true,
                "trim" => skip[2] = true,
                "sync" => skip[3] = true,
                _ => {}
            }
        }
        skip
    }

    /// `delay_since_ttime`: the delay between two timestamps, scaled.
    fn delay(&self, last: u64, time: u64) -> u64 {
        if last == 0 || self.no_stall || time < last {
            return 0;
        }
        let d = time - last;
        if self.time_scale == 100 {
            return d;
        }
        // fio computes `d * (100.0 / scale)` in double; exact in integers.
        (u128::from(d) * 100 / u128::from(self.time_scale.max(1))) as u64
    }

    /// `replay_scale` then `ipo_bytes_align`.
    fn place(&self, offset: u64) -> u64 {
        let o = offset.checked_div(self.scale).unwrap_or(offset);
        if self.align > 0 {
            o & !(self.align - 1)
        } else {
            o
        }
    }
}

/// Why a replay log cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IologError {
    /// The log's name.
    pub file: String,
    /// 1-based line of a text log, or 0; for a blktrace the record's byte
    /// offset is in the message.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for IologError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        } else {
            write!(f, "{}: {}", self.file, self.message)
        }
    }
}

impl std::error::Error for IologError {}

const BLK_IO_TRACE_MAGIC: u32 = 0x6561_7400;
const BLK_IO_TRACE_VERSION: u32 = 0x07;
const TRACE_LEN: usize = 48;
const TA_QUEUE: u32 = 1;
const TA_BACKMERGE: u32 = 2;
const TA_FRONTMERGE: u32 = 3;
const TA_COMPLETE: u32 = 8;
const TC_READ: u32 = 1 << 16;
const TC_WRITE: u32 = 1 << 17;
const TC_FLUSH: u32 = 1 << 18;
const TC_NOTIFY: u32 = 1 << 26;
const TC_DISCARD: u32 = 1 << 29;

/// Whether `bytes` start like a blktrace file (fio's `is_blktrace`: the magic
/// of the first record, in either byte order).
pub fn is_blktrace(bytes: &[u8]) -> bool {
    let Some(m) = bytes.get(..4) else {
        return false;
    };
    let le = u32::from_le_bytes([m[0], m[1], m[2], m[3]]);
    let be = u32::from_be_bytes([m[0], m[1], m[2], m[3]]);
    (le & 0xffff_ff00) == BLK_IO_TRACE_MAGIC || (be & 0xffff_ff00) == BLK_IO_TRACE_MAGIC
}

/// Read a replay log: a blktrace file (by its magic) or a text iolog.
pub fn parse_iolog(name: &str, bytes: &[u8], o: &ReplayOptions) -> Result<Iolog, IologError> {
    if is_blktrace(bytes) {
        parse_blktrace(name, &[bytes], o)
    } else {
        parse_text_iolog(name, bytes, o)
    }
}

/// One blk_io_trace record, the fields fio reads.
#[derive(Clone, Copy, Debug)]
struct Trace {
    time: u64,
    sector: u64,
    bytes: u32,
    action: u32,
    device: u32,
}

/// The records of one blktrace file, each with its byte offset.
fn blktrace_records(name: &str, bytes: &[u8]) -> Result<Vec<(usize, Trace)>, IologError> {
    let err = |at: usize, message: String| IologError {
        file: name.to_string(),
        line: 0,
        message: format!("record at byte {at}: {message}"),
    };
    let be = !bytes.is_empty() && {
        let m = u32::from_le_bytes(bytes[..4.min(bytes.len())].try_into().unwrap_or([0; 4]));
        (m & 0xffff_ff00) != BLK_IO_TRACE_MAGIC
    };
    let u32_at = |b: &[u8], i: usize| {
        let a = [b[i], b[i + 1], b[i + 2], b[i + 3]];
        if be {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    };
    let u64_at = |b: &[u8], i: usize| {
        let a: [u8; 8] = b[i..i + 8].try_into().expect("8 bytes");
        if be {
            u64::from_be_bytes(a)
        } else {
            u64::from_le_bytes(a)
        }
    };
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let Some(r) = bytes.get(at..at + TRACE_LEN) else {
            // fio: "iolog short read", and the records so far are kept.
            break;
        };
        let magic = u32_at(r, 0);
        if magic & 0xffff_ff00 != BLK_IO_TRACE_MAGIC {
            return Err(err(at, format!("bad magic in blktrace data: {magic:x}")));
        }
        if magic & 0xff != BLK_IO_TRACE_VERSION {
            return Err(err(at, format!("bad blktrace version {}", magic & 0xff)));
        }
        let pdu = usize::from(if be {
            u16::from_be_bytes([r[46], r[47]])
        } else {
            u16::from_le_bytes([r[46], r[47]])
        });
        out.push((
            at,
            Trace {
                time: u64_at(r, 8),
                sector: u64_at(r, 16),
                bytes: u32_at(r, 24),
                action: u32_at(r, 28),
                device: u32_at(r, 36),
            },
        ));
        at += TRACE_LEN + pdu;
    }
    Ok(out)
}

/// Read blktrace data: one merged file (what fio takes, `blkparse -d`), or
/// the per-CPU files of one trace, merged by time as blkparse does (records of
/// equal time in file order, lower CPU first).
pub fn parse_blktrace(name: &str, parts: &[&[u8]], o: &ReplayOptions) -> Result<Iolog, IologError> {
    let mut recs = Vec::new();
    for (cpu, b) in parts.iter().enumerate() {
        for (at, t) in blktrace_records(name, b)? {
            recs.push((t.time, cpu, at, t));
        }
    }
    if parts.len() > 1 {
        recs.sort_by_key(|r| (r.0, r.1, r.2));
    }
    let mut log = Iolog::default();
    let mut depth = Depth::default();
    let mut last_ttime = 0u64;
    for (_, _, _, t) in recs {
        if t.action & TC_NOTIFY != 0 {
            continue;
        }
        depth.note(&t);
        if t.action & 0xffff != TA_QUEUE {
            continue;
        }
        let delay = o.delay(last_ttime, t.time) / 1000;
        last_ttime = t.time;
        blktrace_queue(&mut log, &t, delay, o);
    }
    log.probed_depth = depth.max();
    if log.ios.is_empty() {
        return Err(IologError {
            file: name.to_string(),
            line: 0,
            message: "found no ios in blktrace data".into(),
        });
    }
    Ok(log)
}

/// fio's probe of the trace's depth per direction (read, write, trim).
#[derive(Default)]
struct Depth {
    this: [i64; 3],
    peak: [i64; 3],
    ios: [u64; 3],
}

impl Depth {
    fn ddir(t: &Trace) -> Option<usize> {
        if t.action & TC_READ != 0 {
            Some(0)
        } else if t.action & TC_WRITE != 0 {
            Some(1)
        } else if t.action & TC_DISCARD != 0 {
            Some(2)
        } else {
            None
        }
    }

    fn note(&mut self, t: &Trace) {
        let Some(d) = Self::ddir(t) else { return };
        match t.action & 0xffff {
            TA_QUEUE => {
                self.this[d] += 1;
                self.ios[d] += 1;
            }
            TA_BACKMERGE | TA_FRONTMERGE => self.this[d] -= 1,
            TA_COMPLETE => {
                self.peak[d] = self.peak[d].max(self.this[d]);
                self.this[d] = 0;
            }
            _ => {}
        }
    }

    fn max(&self) -> u32 {
        (0..3)
            .map(|d| match self.peak[d] {
                p if p > 1024 => 1024,
                p if p <= 0 && self.ios[d] > 0 => 1,
                p => p.max(0),
            })
            .max()
            .unwrap_or(0) as u32
    }
}

/// `queue_trace` for one Q record: an I/O, a trim, or a sync.
fn blktrace_queue(log: &mut Iolog, t: &Trace, delay: u64, o: &ReplayOptions) {
    let (maj, min) = (t.device >> 20, t.device & ((1 << 20) - 1));
    let mut bytes = u64::from(t.bytes);
    if o.align > 0 {
        bytes = (bytes + o.align - 1) & !(o.align - 1);
    }
    let action = if t.action & TC_DISCARD != 0 {
        IologAction::Trim
    } else if t.action & TC_FLUSH != 0 {
        IologAction::Sync
    } else if t.action & TC_WRITE != 0 {
        IologAction::Write
    } else {
        IologAction::Read
    };
    let skip = match action {
        IologAction::Read => o.skip[0],
        IologAction::Write => o.skip[1],
        IologAction::Trim => o.skip[2],
        _ => o.skip[3],
    };
    let io_without_bytes = matches!(action, IologAction::Read | IologAction::Write) && bytes == 0;
    if skip || io_without_bytes {
        return;
    }
    let name = o.redirect.clone().unwrap_or_else(|| format!("{maj}:{min}"));
    let file = match log.files.iter().position(|f| *f == name) {
        Some(i) => i,
        None => {
            log.files.push(name);
            log.devices.push(Some((maj, min)));
            log.files.len() - 1
        }
    };
    let (offset, len) = if action == IologAction::Sync {
        (0, 0)
    } else {
        (o.place(t.sector.saturating_mul(512)), bytes)
    };
    log.ios.push(IologIo {
        delay_us: delay,
        action,
        file: file as u32,
        offset,
        len,
    });
}

/// Read a text iolog of version 2 or 3.
pub fn parse_text_iolog(name: &str, bytes: &[u8], o: &ReplayOptions) -> Result<Iolog, IologError> {
    let err = |line: usize, message: String| IologError {
        file: name.to_string(),
        line,
        message,
    };
    let text = std::str::from_utf8(bytes).map_err(|_| err(0, "not UTF-8 text".into()))?;
    let mut lines = text.lines();
    let version = match lines.next() {
        Some(l) if l.starts_with("fio version 2 iolog") => 2,
        Some(l) if l.starts_with("fio version 3 iolog") => 3,
        _ => {
            return Err(err(
                1,
                "not a blktrace file, and iolog version 1 is no longer supported (the \
                 first line must be 'fio version 2 iolog' or 'fio version 3 iolog')"
                    .into(),
            ))
        }
    };
    let mut log = Iolog::default();
    let mut last_ttime = 0u64;
    for (i, line) in lines.enumerate() {
        let n = i + 2;
        let mut words = line.split_whitespace();
        let mut delay = 0;
        if version == 3 {
            let Some(t) = words.next() else { continue };
            let t: u64 = t
                .parse()
                .map_err(|_| err(n, format!("bad timestamp '{t}'")))?;
            delay = o.delay(last_ttime, t);
            last_ttime = t;
        }
        let rest: Vec<&str> = words.collect();
        if rest.is_empty() {
            continue;
        }
        text_entry(&mut log, &rest, delay, version, o).map_err(|m| err(n, m))?;
    }
    if !log
        .ios
        .iter()
        .any(|i| matches!(i.action, IologAction::Read | IologAction::Write))
    {
        return Err(err(0, "the iolog has no reads or writes".into()));
    }
    Ok(log)
}

/// One line's `FILE ACTION [OFFSET LENGTH]` (fio's `io_act`/`file_act`).
fn text_entry(
    log: &mut Iolog,
    w: &[&str],
    delay: u64,
    version: u32,
    o: &ReplayOptions,
) -> Result<(), String> {
    let file_name = o.redirect.clone().unwrap_or_else(|| w[0].to_string());
    let act = w.get(1).copied().unwrap_or("");
    let num = |i: usize| -> Result<u64, String> {
        let s = w
            .get(i)
            .ok_or_else(|| format!("'{act}' needs an offset and a length"))?;
        s.parse()
            .map_err(|_| format!("bad number '{s}' in a '{act}' line"))
    };
    let action = match act {
        "add" | "open" | "close" => {
            if !log.files.contains(&file_name) {
                log.files.push(file_name.clone());
                log.devices.push(None);
            }
            let file = log.files.iter().position(|f| *f == file_name);
            log.ios.push(IologIo {
                delay_us: delay,
                action: IologAction::File,
                file: file.unwrap_or(0) as u32,
                offset: 0,
                len: 0,
            });
            return Ok(());
        }
        "wait" if version == 3 => return Ok(()),
        "wait" => IologAction::Wait,
        "read" => IologAction::Read,
        "write" => IologAction::Write,
        "trim" => IologAction::Trim,
        "sync" => IologAction::Sync,
        "datasync" => IologAction::Datasync,
        _ => return Err(format!("bad iolog file action: {act}")),
    };
    if action == IologAction::Wait && o.no_stall {
        return Ok(());
    }
    let (offset, len) = (num(2)?, num(3)?);
    let file = log
        .files
        .iter()
        .position(|f| *f == file_name)
        .ok_or_else(|| format!("'{file_name}' is used before its 'add' line"))?;
    let offset = if action == IologAction::Wait {
        offset
    } else {
        o.place(offset)
    };
    log.ios.push(IologIo {
        delay_us: delay,
        action,
        file: file as u32,
        offset,
        len,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(time: u64, sector: u64, bytes: u32, action: u32) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend((BLK_IO_TRACE_MAGIC | 7).to_le_bytes());
        v.extend(1u32.to_le_bytes());
        v.extend(time.to_le_bytes());
        v.extend(sector.to_le_bytes());
        v.extend(bytes.to_le_bytes());
        v.extend(action.to_le_bytes());
        v.extend(100u32.to_le_bytes());
        v.extend((8u32 << 20).to_le_bytes());
        v.extend(0u32.to_le_bytes());
        v.extend(0u16.to_le_bytes());
        v.extend(0u16.to_le_bytes());
        v
    }

    #[test]
    fn blktrace_q_records_become_ios_with_fio_delays() {
        let q = TA_QUEUE | (1 << 20);
        let mut b = rec(5_000, 2048, 4096, q | TC_WRITE);
        b.extend(rec(6_000, 2048, 4096, 7 | TC_WRITE));
        b.extend(rec(1_505_999, 0, 8192, q | TC_READ));
        b.extend(rec(1_600_000, 0, 8192, TA_COMPLETE | TC_READ));
        let log = parse_iolog("t", &b, &ReplayOptions::default()).unwrap();
        assert_eq!(log.files, vec!["8:0".to_string()]);
        assert_eq!(log.ios.len(), 2);
        assert_eq!((log.ios[0].offset, log.ios[0].len), (1 << 20, 4096));
        assert_eq!(log.ios[0].action, IologAction::Write);
        // 1.500999 ms later: 1500 µs, truncated.
        assert_eq!(log.ios[1].delay_us, 1500);
        assert_eq!(log.ios[1].action, IologAction::Read);
        assert_eq!(log.probed_depth, 1);
        let half = ReplayOptions {
            time_scale: 200,
            ..Default::default()
        };
        assert_eq!(parse_iolog("t", &b, &half).unwrap().ios[1].delay_us, 750);
    }

    #[test]
    fn text_logs_v2_and_v3() {
        let v3 = "fio version 3 iolog\n17 f add\n80 f open\n88 f write 0 4096\n\
                  102 f read 8192 4096\n122 f close\n";
        let log = parse_iolog("l", v3.as_bytes(), &ReplayOptions::default()).unwrap();
        let ios: Vec<_> = log.ios.iter().map(|i| (i.delay_us, i.action)).collect();
        use IologAction::*;
        assert_eq!(
            ios,
            [(0, File), (63, File), (8, Write), (14, Read), (20, File)]
        );
        assert_eq!(log.ios[3].offset, 8192);
        let v2 = "fio version 2 iolog\nf add\nf open\nf write 0 4096\nf wait 500 0\n";
        let log = parse_iolog("l", v2.as_bytes(), &ReplayOptions::default()).unwrap();
        assert_eq!(log.ios[3].action, IologAction::Wait);
        let bad = "fio version 2 iolog\nf add\nf frob 0 1\n";
        let e = parse_iolog("l", bad.as_bytes(), &ReplayOptions::default()).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(parse_iolog("l", b"0 0 4096\n", &ReplayOptions::default()).is_err());
    }
}
