//! The kernel ftrace `blk` tracer's text (`echo blk > current_tracer` with
//! `/sys/block/<dev>/trace/enable` set), as 2.6.36-era kernels print it in
//! `/sys/kernel/debug/tracing/trace`:
//!
//! ```text
//!               dd-910   [002]    38.762523:  94,8    A   R 131264 + 8 <- (94,9) 131072
//! ```
//!
//! That is ftrace's context prefix (`trace_print_context`:
//! `"%16s-%-5d [%03d] %5lu.%06lu: "`, the time rounded to microseconds by
//! `ns2usecs`, comm `<idle>` for pid 0 and `<...>` for an unknown pid) followed by
//! `blk_log_action`'s `"%3d,%-3d %2s %3s "` (device, action, RWBS) and the
//! per-action tail of `kernel/trace/blktrace.c` (`blk_log_generic`,
//! `blk_log_with_error`, `blk_log_remap`, `blk_log_plug`, `blk_log_unplug`,
//! `blk_log_split`, `blk_log_msg`).
//!
//! Mail archives collapse runs of spaces, so published traces (seed 002) read
//! `dd-910 [002] 38.762523: 94,8 A R 131264 + 8 <- (94,9) 131072`; the
//! [`FtraceStyle::Collapsed`] rendering and [`collapse_whitespace`] give that form,
//! and [`parse_ftrace_line`] reads either form back.

use crate::blktrace::{action_word, fill_rwbs, kernel_comm, message_payload, RawTrace};
use crate::out::Out;
use iostack_core::{Action, DevT, TraceEvent, TraceRecord, TraceSink};
use iostack_des::Instant;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The header ftrace prints at the top of the `trace` file for this tracer.
pub const FTRACE_HEADER: &str = "# tracer: blk\n#\n";

/// Which spacing to print.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FtraceStyle {
    /// Exactly the kernel's field widths.
    Kernel,
    /// Leading blanks removed and every run of blanks cut to one space.
    Collapsed,
}

/// `trace_find_cmdline`: `<idle>` for pid 0, the saved comm, or `<...>`.
pub fn ftrace_comm(pid: u32, name: Option<&str>) -> String {
    if pid == 0 {
        return "<idle>".to_string();
    }
    match name {
        Some(n) => kernel_comm(n),
        None => "<...>".to_string(),
    }
}

/// `trace_print_context`: `"%16s-%-5d [%03d] %5lu.%06lu: "`.
fn context(out: &mut String, comm: &str, pid: u32, cpu: u32, time: Instant) {
    // ns2usecs rounds to the nearest microsecond.
    let us = (time.as_ns() + 500) / 1000;
    let _ = write!(
        out,
        "{:>16}-{:<5} [{:03}] {:>5}.{:06}: ",
        comm,
        pid,
        cpu,
        us / 1_000_000,
        us % 1_000_000
    );
}

/// `blk_log_action`: `"%3d,%-3d %2s %3s "`.
fn log_action(out: &mut String, dev: DevT, act: &str, rwbs: &str) {
    let _ = write!(
        out,
        "{:>3},{:<3} {:>2} {:>3} ",
        dev.major, dev.minor, act, rwbs
    );
}

/// One block event, kernel spacing, no trailing newline. `comm` is the name shown
/// for `rec.pid` (see [`ftrace_comm`]); the tracer uses the same name in the prefix
/// and in the `[comm]` tail.
pub fn render_block(rec: &TraceRecord, comm: &str) -> String {
    let raw = RawTrace::from_record(rec, 0);
    let mut s = String::with_capacity(96);
    context(&mut s, comm, rec.pid, rec.cpu, rec.time);
    let rwbs = fill_rwbs(action_word(rec), raw.bytes);
    log_action(&mut s, rec.dev, rec.action.letter(), &rwbs);
    let blocks = raw.bytes >> 9;
    let error = raw.error;
    match rec.action {
        Action::Requeue | Action::Complete => {
            if blocks != 0 {
                let _ = write!(s, "{} + {} [{}]", raw.sector, blocks, error);
            } else {
                let _ = write!(s, "{} [{}]", raw.sector, error);
            }
        }
        Action::Plug => {
            let _ = write!(s, "[{comm}]");
        }
        Action::UnplugIo | Action::UnplugTimer => {
            let _ = write!(s, "[{}] {}", comm, raw.pdu_u64());
        }
        Action::Split => {
            let _ = write!(s, "{} / {} [{}]", raw.sector, raw.pdu_u64(), comm);
        }
        Action::Remap => {
            let (from, _, sector_from) = raw.pdu_remap().unwrap_or((0, 0, 0));
            let _ = write!(
                s,
                "{} + {} <- ({},{}) {}",
                raw.sector,
                blocks,
                crate::blktrace::dev_major(from),
                crate::blktrace::dev_minor(from),
                sector_from
            );
        }
        _ => {
            if blocks != 0 {
                let _ = write!(s, "{} + {} [{}]", raw.sector, blocks, comm);
            } else {
                let _ = write!(s, "[{comm}]");
            }
        }
    }
    s
}

/// A message (`blk_add_trace_msg`), kernel spacing, no trailing newline: the
/// action is `m` and the RWBS `N`, then the text.
pub fn render_message(
    time: Instant,
    dev: DevT,
    cpu: u32,
    pid: u32,
    text: &str,
    comm: &str,
) -> String {
    let mut s = String::with_capacity(64 + text.len());
    context(&mut s, comm, pid, cpu, time);
    log_action(&mut s, dev, "m", "N");
    s.push_str(&String::from_utf8_lossy(message_payload(text)));
    s
}

/// Remove leading and trailing blanks and cut every run of blanks to one space, as
/// the mail archive did to the seed's trace.
pub fn collapse_whitespace(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A [`TraceSink`] printing the blk tracer's `trace` file.
///
/// Lines are ordered as ftrace merges its per-CPU ring buffers: by time, and among
/// equal times by CPU (lowest first), keeping each CPU's own order. Only the
/// lines of the current instant are held; the rest go to the sink's [`Out`] as the
/// run goes.
pub struct FtraceSink {
    style: FtraceStyle,
    device: Option<DevT>,
    names: HashMap<u32, String>,
    /// Lines of the current instant, not yet merged: (cpu, line).
    pending: Vec<(u32, String)>,
    pending_time: Option<Instant>,
    out: Out,
}

impl FtraceSink {
    pub fn new(style: FtraceStyle) -> Self {
        FtraceSink {
            style,
            device: None,
            names: HashMap::new(),
            pending: Vec::new(),
            pending_time: None,
            out: Out::default(),
        }
    }

    /// Write the lines to `out` (for instance a stream to a file) instead of
    /// keeping them.
    pub fn to(mut self, out: Out) -> Self {
        self.out = out;
        self
    }

    /// Lines of the current instant held back for the merge by CPU.
    pub fn held_lines(&self) -> usize {
        self.pending.len()
    }

    /// Flush the output; the first write error, if any.
    pub fn finish_output(&mut self) -> std::io::Result<()> {
        self.out.finish()
    }

    /// Only `dev`'s events (tracing enabled on that device only).
    pub fn for_device(style: FtraceStyle, dev: DevT) -> Self {
        FtraceSink {
            device: Some(dev),
            ..FtraceSink::new(style)
        }
    }

    /// The lines so far, each ending in `\n` (complete after `finish`), when
    /// kept in memory.
    pub fn text(&self) -> &str {
        std::str::from_utf8(self.out.bytes()).expect("lines are UTF-8")
    }

    fn comm(&self, pid: u32) -> String {
        ftrace_comm(pid, self.names.get(&pid).map(String::as_str))
    }

    fn flush_pending(&mut self) {
        self.pending.sort_by_key(|(cpu, _)| *cpu);
        for (_, mut line) in self.pending.drain(..) {
            line.push('\n');
            self.out.write(line.as_bytes());
        }
        self.pending_time = None;
    }

    fn push(&mut self, time: Instant, cpu: u32, line: String) {
        if self.pending_time != Some(time) {
            self.flush_pending();
            self.pending_time = Some(time);
        }
        let line = match self.style {
            FtraceStyle::Kernel => line,
            FtraceStyle::Collapsed => collapse_whitespace(&line),
        };
        self.pending.push((cpu, line));
    }
}

impl TraceSink for FtraceSink {
    fn process(&mut self, pid: u32, comm: &str) {
        // The saved cmdline follows the task's current name.
        self.names.insert(pid, comm.to_string());
    }

    fn event(&mut self, ev: &TraceEvent) {
        match ev {
            TraceEvent::Block(rec) => {
                if self.device.is_some_and(|d| d != rec.dev) {
                    return;
                }
                let line = render_block(rec, &self.comm(rec.pid));
                self.push(rec.time, rec.cpu, line);
            }
            TraceEvent::Message {
                time,
                dev,
                cpu,
                pid,
                text,
            } => {
                if self.device.is_some_and(|d| d != *dev) {
                    return;
                }
                let line = render_message(*time, *dev, *cpu, *pid, text, &self.comm(*pid));
                self.push(*time, *cpu, line);
            }
        }
    }

    fn finish(&mut self, _end: Instant) {
        self.flush_pending();
    }
}

/// One line of blk tracer text, as read back by [`parse_ftrace_line`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FtraceLine {
    /// Task name in the ftrace prefix (`<idle>` for pid 0).
    pub comm: String,
    pub pid: u32,
    pub cpu: u32,
    /// Timestamp in microseconds (`secs.usecs`).
    pub time_us: u64,
    pub dev: DevT,
    /// `Q`, `M`, …, `UT`, or `m` for a message.
    pub action: String,
    pub rwbs: String,
    pub sector: Option<u64>,
    /// 512-byte blocks (`+ N`).
    pub blocks: Option<u32>,
    /// A: `<- (maj,min) sector`.
    pub remap_from: Option<(DevT, u64)>,
    /// U/UT: requests released.
    pub unplug_depth: Option<u64>,
    /// X: the split point.
    pub split_at: Option<u64>,
    /// The `[comm]` tail of Q, M, G, I, D, P, U, X, ….
    pub task: Option<String>,
    /// The `[error]` tail of C and R.
    pub error: Option<u32>,
    /// The text of an `m` line.
    pub message: Option<String>,
}

impl FtraceLine {
    /// The action, or `None` for a message.
    pub fn action_kind(&self) -> Option<Action> {
        Some(match self.action.as_str() {
            "Q" => Action::Queue,
            "M" => Action::BackMerge,
            "F" => Action::FrontMerge,
            "G" => Action::GetRq,
            "S" => Action::SleepRq,
            "R" => Action::Requeue,
            "D" => Action::Issue,
            "C" => Action::Complete,
            "P" => Action::Plug,
            "U" => Action::UnplugIo,
            "UT" => Action::UnplugTimer,
            "I" => Action::Insert,
            "X" => Action::Split,
            "B" => Action::Bounce,
            "A" => Action::Remap,
            _ => return None,
        })
    }

    /// Time in nanoseconds (microsecond resolution).
    pub fn time_ns(&self) -> u64 {
        self.time_us * 1000
    }

    /// Print the line again in the collapsed form.
    pub fn to_collapsed(&self) -> String {
        let mut s = format!(
            "{}-{} [{:03}] {}.{:06}: {},{} {} {}",
            self.comm,
            self.pid,
            self.cpu,
            self.time_us / 1_000_000,
            self.time_us % 1_000_000,
            self.dev.major,
            self.dev.minor,
            self.action,
            self.rwbs
        );
        let sec = |s: &mut String| {
            if let Some(x) = self.sector {
                let _ = write!(s, " {x}");
            }
            if let Some(b) = self.blocks {
                let _ = write!(s, " + {b}");
            }
        };
        if let Some(m) = &self.message {
            if !m.is_empty() {
                let _ = write!(s, " {m}");
            }
            return s;
        }
        if let Some((d, from)) = self.remap_from {
            sec(&mut s);
            let _ = write!(s, " <- ({},{}) {}", d.major, d.minor, from);
            return s;
        }
        if let Some(at) = self.split_at {
            let _ = write!(s, " {} / {}", self.sector.unwrap_or(0), at);
        } else {
            sec(&mut s);
        }
        if let Some(t) = &self.task {
            let _ = write!(s, " [{t}]");
        }
        if let Some(e) = self.error {
            let _ = write!(s, " [{e}]");
        }
        if let Some(d) = self.unplug_depth {
            let _ = write!(s, " {d}");
        }
        s
    }
}

fn parse_num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.parse::<T>().map_err(|_| format!("bad {what}: {s:?}"))
}

fn parse_dev(s: &str) -> Result<DevT, String> {
    let (maj, min) = s
        .split_once(',')
        .ok_or_else(|| format!("bad device: {s:?}"))?;
    Ok(DevT::new(
        parse_num(maj.trim(), "major")?,
        parse_num(min.trim(), "minor")?,
    ))
}

/// Split `"... [name] rest"` at the bracketed part starting at the first `[`.
fn bracketed(s: &str) -> Result<(&str, &str, &str), String> {
    let open = s.find('[').ok_or_else(|| format!("missing '[': {s:?}"))?;
    let close = s.rfind(']').ok_or_else(|| format!("missing ']': {s:?}"))?;
    if close < open {
        return Err(format!("bad brackets: {s:?}"));
    }
    Ok((s[..open].trim(), &s[open + 1..close], s[close + 1..].trim()))
}

/// `"S + N"`, `"S"` or `""`.
fn sector_blocks(s: &str) -> Result<(Option<u64>, Option<u32>), String> {
    let toks: Vec<&str> = s.split_whitespace().collect();
    match toks.as_slice() {
        [] => Ok((None, None)),
        [sec] => Ok((Some(parse_num(sec, "sector")?), None)),
        [sec, "+", n] => Ok((
            Some(parse_num(sec, "sector")?),
            Some(parse_num(n, "blocks")?),
        )),
        _ => Err(format!("bad sector field: {s:?}")),
    }
}

/// Parse one blk tracer line, collapsed or with kernel spacing:
/// `comm-pid [cpu] secs.usecs: maj,min ACT RWBS tail`.
pub fn parse_ftrace_line(line: &str) -> Result<FtraceLine, String> {
    let line = line.trim_end_matches(['\n', '\r']);
    // The CPU field is the first " [digits]" after the comm-pid token; the comm may
    // itself contain blanks, '-' or brackets, so look for "-pid [cpu] ".
    let mut search = 0;
    let (head, cpu, rest) = loop {
        let Some(rel) = line[search..].find('[') else {
            return Err(format!("no [cpu] field: {line:?}"));
        };
        let open = search + rel;
        let Some(close_rel) = line[open..].find(']') else {
            return Err(format!("no [cpu] field: {line:?}"));
        };
        let close = open + close_rel;
        let inner = &line[open + 1..close];
        let before = line[..open].trim_end();
        let pid_ok = before
            .rsplit_once('-')
            .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        if !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit()) && pid_ok {
            break (before, inner, &line[close + 1..]);
        }
        search = open + 1;
    };
    let (comm, pid) = head.rsplit_once('-').expect("checked above");
    let comm = comm.trim_start().to_string();
    let pid: u32 = parse_num(pid, "pid")?;
    let cpu: u32 = parse_num(cpu, "cpu")?;

    let rest = rest.trim_start();
    let (ts, rest) = rest
        .split_once(':')
        .ok_or_else(|| format!("no timestamp: {line:?}"))?;
    let (secs, frac) = ts
        .trim()
        .split_once('.')
        .ok_or_else(|| format!("bad timestamp: {ts:?}"))?;
    let secs: u64 = parse_num(secs, "seconds")?;
    if frac.is_empty() || frac.len() > 6 {
        return Err(format!("bad microseconds: {frac:?}"));
    }
    let usecs: u64 = parse_num::<u64>(frac, "microseconds")? * 10u64.pow(6 - frac.len() as u32);
    let time_us = secs * 1_000_000 + usecs;

    let rest = rest.trim_start();
    let (dev, rest) = rest
        .split_once(char::is_whitespace)
        .ok_or_else(|| format!("no device: {line:?}"))?;
    let dev = parse_dev(dev)?;
    let rest = rest.trim_start();
    let (action, rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let rest = rest.trim_start();
    let (rwbs, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if rwbs.is_empty() {
        return Err(format!("no RWBS: {line:?}"));
    }
    let tail = tail.trim();

    let mut out = FtraceLine {
        comm,
        pid,
        cpu,
        time_us,
        dev,
        action: action.to_string(),
        rwbs: rwbs.to_string(),
        sector: None,
        blocks: None,
        remap_from: None,
        unplug_depth: None,
        split_at: None,
        task: None,
        error: None,
        message: None,
    };
    match action {
        "m" => out.message = Some(tail.to_string()),
        "A" => {
            let (lhs, rhs) = tail
                .split_once("<-")
                .ok_or_else(|| format!("remap without '<-': {line:?}"))?;
            (out.sector, out.blocks) = sector_blocks(lhs)?;
            let rhs = rhs.trim();
            let inner = rhs
                .strip_prefix('(')
                .and_then(|r| r.split_once(')'))
                .ok_or_else(|| format!("bad remap source: {rhs:?}"))?;
            let from_dev = parse_dev(inner.0)?;
            let from_sector = parse_num(inner.1.trim(), "remap sector")?;
            out.remap_from = Some((from_dev, from_sector));
        }
        "C" | "R" => {
            let (lhs, inner, after) = bracketed(tail)?;
            if !after.is_empty() {
                return Err(format!("trailing text: {line:?}"));
            }
            (out.sector, out.blocks) = sector_blocks(lhs)?;
            out.error = Some(parse_num(inner, "error")?);
        }
        "U" | "UT" => {
            let (lhs, inner, after) = bracketed(tail)?;
            if !lhs.is_empty() {
                return Err(format!("unexpected text before [comm]: {line:?}"));
            }
            out.task = Some(inner.to_string());
            out.unplug_depth = Some(parse_num(after, "unplug depth")?);
        }
        "X" => {
            let (lhs, inner, after) = bracketed(tail)?;
            if !after.is_empty() {
                return Err(format!("trailing text: {line:?}"));
            }
            let (sec, at) = lhs
                .split_once('/')
                .ok_or_else(|| format!("split without '/': {line:?}"))?;
            out.sector = Some(parse_num(sec.trim(), "sector")?);
            out.split_at = Some(parse_num(at.trim(), "split sector")?);
            out.task = Some(inner.to_string());
        }
        "Q" | "M" | "F" | "G" | "S" | "D" | "I" | "B" | "P" => {
            let (lhs, inner, after) = bracketed(tail)?;
            if !after.is_empty() {
                return Err(format!("trailing text: {line:?}"));
            }
            (out.sector, out.blocks) = sector_blocks(lhs)?;
            out.task = Some(inner.to_string());
        }
        _ => return Err(format!("unknown action {action:?}: {line:?}")),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iostack_core::{Pdu, ReqFlags};

    #[test]
    fn seed_remap_line_spacing() {
        let rec = TraceRecord {
            time: Instant(38_762_523_000),
            dev: DevT::new(94, 8),
            cpu: 2,
            pid: 910,
            action: Action::Remap,
            sector: 131_264,
            bytes: 4096,
            flags: ReqFlags::READ,
            is_request: false,
            error: 0,
            pdu: Pdu::Remap {
                from_dev: DevT::new(94, 9),
                from_sector: 131_072,
            },
        };
        let line = render_block(&rec, "dd");
        assert_eq!(
            line,
            "              dd-910   [002]    38.762523:  94,8    A   R 131264 + 8 <- (94,9) 131072"
        );
        assert_eq!(
            collapse_whitespace(&line),
            "dd-910 [002] 38.762523: 94,8 A R 131264 + 8 <- (94,9) 131072"
        );
    }

    #[test]
    fn ns2usecs_rounds() {
        let mut s = String::new();
        context(&mut s, "x", 1, 0, Instant(1_999_999_500));
        assert_eq!(collapse_whitespace(&s), "x-1 [000] 2.000000:");
    }
}
