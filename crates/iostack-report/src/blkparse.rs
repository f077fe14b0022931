//! blkparse 1.2.0's default text output, byte for byte.
//!
//! [`blkparse_files`] is a port of what `blkparse -i NAME` does in file mode with no
//! other options: it reads the per-CPU streams `NAME.blktrace.0, .1, …` (stopping at
//! the first missing index), reads each stream in batches of 512 records (handling
//! PROCESS and TIMESTAMP notifies as they are read, as `ms_prime` does), merges the
//! streams by time with blkparse's own list insertion and tie rules (`ms_sort`,
//! `ms_resort`), rebases times on the first record (`genesis_time`), prints each
//! event with `process_default`'s formats and finishes with the per-CPU / Total /
//! Throughput / Events / Skips summary in the C locale (Debian has no `en_US`
//! locale by default, so `%'` prints no thousands separators).
//!
//! [`BlkparseSink`] is a [`TraceSink`] that feeds a [`BlktraceWriter`] and, at
//! `finish`, parses the streams it wrote, so its text is exactly what real blkparse
//! prints for the files [`BlktraceWriter::write_files`] produces.
//!
//! Not covered: passthrough (PC) records, which the simulator never emits, are
//! counted but not printed; pipe mode (`-i -`), `-t`, `-s`, `-f`/`-F` and the
//! stopwatch are not emulated.

use crate::blktrace::{
    dev_major, dev_minor, fill_rwbs, kernel_comm, message_payload, tc, tc_act, RawTrace,
    BLK_IO_TRACE_MAGIC, BLK_TN_MESSAGE, BLK_TN_PROCESS, HEADER_LEN, TASK_COMM_LEN,
};
use crate::out::Out;
use iostack_core::{DevT, TraceEvent, TraceRecord, TraceSink};
use iostack_des::Instant;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;

/// `RB_BATCH_DEFAULT`: records read per stream refill.
pub const RB_BATCH_DEFAULT: usize = 512;

/// What blkparse prints, in three parts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlkparseOutput {
    /// The event lines (through blkparse's line-buffered `ofp`).
    pub events: String,
    /// The end-of-run summary (also through `ofp`).
    pub summary: String,
    /// The `Input file NAME.blktrace.N added` lines (through `printf`, i.e. stdio's
    /// `stdout`, which is fully buffered when it is a pipe).
    pub input_files: String,
}

impl BlkparseOutput {
    /// blkparse's stdout when it is a pipe or a file: `ofp` is line buffered and
    /// written as it goes, while the `Input file` lines sit in `stdout`'s buffer
    /// until exit, so they come last.
    pub fn piped(&self) -> String {
        let mut s =
            String::with_capacity(self.events.len() + self.summary.len() + self.input_files.len());
        s.push_str(&self.events);
        s.push_str(&self.summary);
        s.push_str(&self.input_files);
        s
    }

    /// blkparse's stdout on a terminal, where `stdout` is line buffered too and the
    /// `Input file` lines come first.
    pub fn terminal(&self) -> String {
        let mut s = self.input_files.clone();
        s.push_str(&self.events);
        s.push_str(&self.summary);
        s
    }
}

/// `struct io_stats`, with read/write pairs as `[read, write]`.
#[derive(Clone, Copy, Default)]
struct IoStats {
    q: [u64; 2],
    q_kb: [u64; 2],
    q_b: [u64; 2],
    i: [u64; 2],
    i_kb: [u64; 2],
    i_b: [u64; 2],
    c: [u64; 2],
    c_kb: [u64; 2],
    c_b: [u64; 2],
    m: [u64; 2],
    m_kb: [u64; 2],
    m_b: [u64; 2],
    rq: [u64; 2],
    io_unplugs: u64,
    timer_unplugs: u64,
}

impl IoStats {
    fn add(&mut self, o: &IoStats) {
        for w in 0..2 {
            self.q[w] = self.q[w].wrapping_add(o.q[w]);
            self.q_kb[w] = self.q_kb[w].wrapping_add(o.q_kb[w]);
            self.q_b[w] = self.q_b[w].wrapping_add(o.q_b[w]);
            self.i[w] = self.i[w].wrapping_add(o.i[w]);
            self.i_kb[w] = self.i_kb[w].wrapping_add(o.i_kb[w]);
            self.i_b[w] = self.i_b[w].wrapping_add(o.i_b[w]);
            self.c[w] = self.c[w].wrapping_add(o.c[w]);
            self.c_kb[w] = self.c_kb[w].wrapping_add(o.c_kb[w]);
            self.c_b[w] = self.c_b[w].wrapping_add(o.c_b[w]);
            self.m[w] = self.m[w].wrapping_add(o.m[w]);
            self.m_kb[w] = self.m_kb[w].wrapping_add(o.m_kb[w]);
            self.m_b[w] = self.m_b[w].wrapping_add(o.m_b[w]);
            self.rq[w] = self.rq[w].wrapping_add(o.rq[w]);
        }
        self.io_unplugs += o.io_unplugs;
        self.timer_unplugs += o.timer_unplugs;
    }
}

/// `size_cnv`: `"%'8Lu%c"`, dividing by 1000 while the value exceeds 1,000,000.
/// The empty suffix is a NUL, which ends the string.
fn size_cnv(num: u64, in_kb: bool) -> String {
    const SUFF: [&str; 5] = ["", "K", "M", "G", "P"];
    let mut i = usize::from(in_kb);
    let mut n = num;
    while n > 1_000_000 && i < SUFF.len() - 1 {
        i += 1;
        n /= 1000;
    }
    format!("{:>8}{}", n, SUFF[i])
}

/// C `snprintf(buf, size, …)`: at most `size - 1` bytes.
fn truncate_c(s: String, size: usize) -> String {
    if s.len() < size {
        return s;
    }
    let mut end = size - 1;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

fn dump_io_stats(out: &mut String, ios: &IoStats, msg: &str, depth: Option<[u32; 2]>) {
    let kb = |k: u64, b: u64| size_cnv(k.wrapping_add(b >> 10), true);
    let _ = writeln!(out, "{msg}");
    let _ = write!(
        out,
        " Reads Queued:    {}, {}iB\t",
        size_cnv(ios.q[0], false),
        kb(ios.q_kb[0], ios.q_b[0])
    );
    let _ = writeln!(
        out,
        " Writes Queued:    {}, {}iB",
        size_cnv(ios.q[1], false),
        kb(ios.q_kb[1], ios.q_b[1])
    );
    let _ = write!(
        out,
        " Read Dispatches: {}, {}iB\t",
        size_cnv(ios.i[0], false),
        kb(ios.i_kb[0], ios.i_b[0])
    );
    let _ = writeln!(
        out,
        " Write Dispatches: {}, {}iB",
        size_cnv(ios.i[1], false),
        kb(ios.i_kb[1], ios.i_b[1])
    );
    let _ = write!(out, " Reads Requeued:  {}\t\t", size_cnv(ios.rq[0], false));
    let _ = writeln!(out, " Writes Requeued:  {}", size_cnv(ios.rq[1], false));
    let _ = write!(
        out,
        " Reads Completed: {}, {}iB\t",
        size_cnv(ios.c[0], false),
        kb(ios.c_kb[0], ios.c_b[0])
    );
    let _ = writeln!(
        out,
        " Writes Completed: {}, {}iB",
        size_cnv(ios.c[1], false),
        kb(ios.c_kb[1], ios.c_b[1])
    );
    let _ = write!(
        out,
        " Read Merges:     {}, {}iB\t",
        size_cnv(ios.m[0], false),
        kb(ios.m_kb[0], ios.m_b[0])
    );
    let _ = writeln!(
        out,
        " Write Merges:     {}, {}iB",
        size_cnv(ios.m[1], false),
        kb(ios.m_kb[1], ios.m_b[1])
    );
    if let Some(d) = depth {
        let _ = write!(out, " Read depth:      {:>8}{:>8}\t", d[0], ' ');
        let _ = writeln!(out, " Write depth:      {:>8}", d[1]);
    }
    let _ = write!(out, " IO unplugs:      {:>8}{:>8}\t", ios.io_unplugs, ' ');
    let _ = writeln!(out, " Timer unplugs:    {:>8}", ios.timer_unplugs);
}

/// One per-CPU input stream (`struct ms_stream` plus its `per_cpu_info`).
struct Stream<'a> {
    cpu: u32,
    data: &'a [u8],
    off: usize,
    open: bool,
    queue: VecDeque<RawTrace>,
    nelems: u64,
    stats: IoStats,
}

/// Parser state shared by all streams.
struct Parser {
    /// `data_is_native`: decided by the first record read.
    little: Option<bool>,
    /// `ppm_hash_table`: pid → comm; the first name read wins.
    names: HashMap<u32, String>,
    rb_batch: usize,
}

impl Parser {
    fn handle_notify(&mut self, t: &RawTrace) {
        if t.action == BLK_TN_PROCESS {
            let n = t.pdu.len().min(TASK_COMM_LEN - 1);
            let raw = &t.pdu[..n];
            let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            let comm = String::from_utf8_lossy(&raw[..end]).into_owned();
            self.names.entry(t.pid).or_insert(comm);
        }
        // TIMESTAMP only matters for %z; other notifies are ignored.
    }

    /// `ms_prime`: read up to `rb_batch` records of `s`, handling notifies as they
    /// come. Returns how many records were queued.
    fn prime(&mut self, s: &mut Stream) -> usize {
        let mut ndone = 0;
        let mut i = 0;
        while s.open && i < self.rb_batch {
            let buf = &s.data[s.off..];
            if buf.len() < HEADER_LEN {
                s.open = false;
                break;
            }
            let little = match self.little {
                Some(l) => l,
                None => {
                    let m = u32::from_le_bytes(buf[0..4].try_into().expect("4 bytes"));
                    if m & 0xffff_ff00 == BLK_IO_TRACE_MAGIC {
                        self.little = Some(true);
                    } else if m.swap_bytes() & 0xffff_ff00 == BLK_IO_TRACE_MAGIC {
                        self.little = Some(false);
                    } else {
                        s.open = false;
                        break;
                    }
                    self.little == Some(true)
                }
            };
            let (t, len) = match RawTrace::decode(buf, little) {
                Ok(x) => x,
                Err(_) => {
                    s.open = false;
                    break;
                }
            };
            s.off += len;
            if t.cpu != s.cpu {
                // "cpu %d trace info has error cpu %d": skipped.
                i += 1;
                continue;
            }
            if t.is_notify() && t.action != BLK_TN_MESSAGE {
                self.handle_notify(&t);
                continue;
            }
            s.queue.push_back(t);
            ndone += 1;
            i += 1;
        }
        ndone
    }
}

/// The per-device (`per_dev_info`) state of the single `-i` input.
#[derive(Default)]
struct DevState {
    events: u64,
    first_reported_time: u64,
    last_reported_time: u64,
    cur_depth: [u32; 2],
    max_depth: [u32; 2],
}

/// `name_fixup` plus `setup_file`'s dirname/basename split of the `-i` argument.
/// Returns (directory to prepend, name used in file names and the summary).
fn split_input(input: &str) -> (Option<String>, String) {
    let name = match input.find(".blktrace.") {
        Some(i) => &input[..i],
        None => input,
    };
    // POSIX dirname()/basename().
    let trimmed = name.trim_end_matches('/');
    if trimmed.is_empty() {
        return (None, name.to_string());
    }
    match trimmed.rfind('/') {
        None => (None, name.to_string()),
        Some(idx) => {
            let dir = trimmed[..idx].trim_end_matches('/');
            let dir = if dir.is_empty() { "/" } else { dir };
            if dir == "." {
                (None, name.to_string())
            } else {
                (Some(dir.to_string()), trimmed[idx + 1..].to_string())
            }
        }
    }
}

/// blkparse's `ms_sort`: insert stream `idx` into the ordered list `list`.
fn ms_sort(list: &mut Vec<usize>, streams: &[Stream], idx: usize) {
    let t = |i: usize| streams[i].queue.front().expect("primed stream").time;
    let msp_t = t(idx);
    if list.is_empty() {
        list.push(idx);
    } else if msp_t < t(list[0]) {
        list.insert(0, idx);
    } else {
        let mut pos = 0;
        while pos + 1 < list.len() && t(list[pos + 1]) < msp_t {
            pos += 1;
        }
        list.insert(pos + 1, idx);
    }
}

/// Print one event as `process_default` does (no `-t`, so no elapsed times).
fn print_event(out: &mut String, t: &RawTrace, act: &str, names: &HashMap<u32, String>) {
    let rwbs = fill_rwbs(t.action, t.bytes);
    let mut device = t.device;
    let remap = t.pdu_remap();
    if act == "A" {
        if let Some((_, to, _)) = remap {
            device = to;
        }
    }
    let _ = write!(
        out,
        "{:>3},{:<3} {:>2} {:>8} {:>5}.{:09} {:>5} {:>2} {:>3} ",
        dev_major(device),
        dev_minor(device),
        t.cpu,
        t.sequence as i32,
        (t.time / 1_000_000_000) as i32,
        t.time % 1_000_000_000,
        t.pid,
        act,
        rwbs
    );
    let name = names.get(&t.pid).map_or("(null)", String::as_str);
    let blocks = t.bytes >> 9;
    match act {
        "R" | "C" => {
            if blocks != 0 {
                let _ = writeln!(out, "{} + {} [{}]", t.sector, blocks, t.error);
            } else {
                let _ = writeln!(out, "{} [{}]", t.sector, t.error);
            }
        }
        "D" | "I" | "Q" | "B" | "M" | "F" | "G" | "S" => {
            if blocks != 0 {
                let _ = writeln!(out, "{} + {} [{}]", t.sector, blocks, name);
            } else {
                let _ = writeln!(out, "[{name}]");
            }
        }
        "P" => {
            let _ = writeln!(out, "[{name}]");
        }
        "U" | "UT" => {
            let _ = writeln!(out, "[{}] {}", name, t.pdu_u64() as u32);
        }
        "A" => {
            let (from, sector_from) = remap.map_or((0, 0), |(f, _, s)| (f, s));
            let _ = writeln!(
                out,
                "{} + {} <- ({},{}) {}",
                t.sector,
                blocks,
                dev_major(from),
                dev_minor(from),
                sector_from
            );
        }
        "X" => {
            let _ = writeln!(out, "{} / {} [{}]", t.sector, t.pdu_u64() as u32, name);
        }
        _ => {}
    }
}

/// `handle_notify` for a message: pid and sequence print as 0 in 1.2.0.
fn print_message(out: &mut String, t: &RawTrace) {
    let end = t.pdu.iter().position(|&b| b == 0).unwrap_or(t.pdu.len());
    if t.pdu.is_empty() {
        return;
    }
    let msg = String::from_utf8_lossy(&t.pdu[..end]);
    let _ = writeln!(
        out,
        "{:>3},{:<3} {:>2} {:>8} {:>5}.{:09} {:>5} {:>2} {:>3} {}",
        dev_major(t.device),
        dev_minor(t.device),
        t.cpu,
        "0",
        (t.time / 1_000_000_000) as i32,
        t.time % 1_000_000_000,
        0,
        "m",
        "N",
        msg
    );
}

/// `dump_trace_fs`: account and print one file-system record.
fn dump_trace_fs(
    out: &mut String,
    t: &RawTrace,
    stats: &mut IoStats,
    dev: &mut DevState,
    names: &HashMap<u32, String>,
) {
    let w = usize::from(t.action & tc_act(tc::WRITE) != 0);
    let kb = u64::from(t.bytes >> 10);
    let b = u64::from(t.bytes & 1023);
    let act = match t.what() {
        1 => {
            stats.q[w] += 1;
            stats.q_kb[w] += kb;
            stats.q_b[w] += b;
            "Q"
        }
        12 => "I",
        2 | 3 => {
            stats.m[w] += 1;
            stats.m_kb[w] += kb;
            stats.m_b[w] += b;
            if t.what() == 2 {
                "M"
            } else {
                "F"
            }
        }
        4 => "G",
        5 => "S",
        6 => {
            if dev.cur_depth[w] > 0 {
                dev.cur_depth[w] -= 1;
            }
            stats.rq[w] += 1;
            stats.i_kb[w] = stats.i_kb[w].wrapping_sub(kb);
            stats.i_b[w] = stats.i_b[w].wrapping_sub(b);
            "R"
        }
        7 => {
            stats.i[w] += 1;
            stats.i_kb[w] = stats.i_kb[w].wrapping_add(kb);
            stats.i_b[w] = stats.i_b[w].wrapping_add(b);
            dev.cur_depth[w] += 1;
            dev.max_depth[w] = dev.max_depth[w].max(dev.cur_depth[w]);
            "D"
        }
        8 => {
            if dev.cur_depth[w] > 0 {
                dev.cur_depth[w] -= 1;
            }
            stats.c[w] += 1;
            stats.c_kb[w] += kb;
            stats.c_b[w] += b;
            "C"
        }
        9 => "P",
        10 => {
            stats.io_unplugs += 1;
            "U"
        }
        11 => {
            stats.timer_unplugs += 1;
            "UT"
        }
        13 => "X",
        14 => "B",
        15 => "A",
        // DRV_DATA goes to binary dumps only; anything else is "Bad fs action".
        _ => return,
    };
    print_event(out, t, act, names);
}

/// `handle` for one record taken from the head stream: rebase its time on the
/// genesis, print and account it.
fn handle_record(
    events: &mut String,
    mut t: RawTrace,
    genesis: u64,
    stats: &mut IoStats,
    dev: &mut DevState,
    names: &HashMap<u32, String>,
) {
    t.time = t.time.wrapping_sub(genesis);
    dev.last_reported_time = t.time;
    if t.action & tc_act(0xffff) != 0 {
        if t.action == BLK_TN_MESSAGE {
            print_message(events, &t);
        } else if t.action & tc_act(tc::PC) != 0 {
            // Passthrough records: not produced by the simulator; not printed.
        } else {
            dump_trace_fs(events, &t, stats, dev, names);
        }
        if dev.events == 0 {
            dev.first_reported_time = t.time;
        }
        dev.events += 1;
    }
}

/// `show_device_and_cpu_stats`, from the counters: one block per CPU that had
/// events (`(cpu, events, stats)`), a total when there are several, throughput
/// and event count.
fn summary(name: &str, per_cpu: &[(u32, u64, IoStats)], dev: &DevState) -> String {
    let mut summary = String::new();
    let devname = truncate_c(name.to_string(), 32);
    let mut total = IoStats::default();
    let mut pci_events = 0;
    for (cpu, nelems, stats) in per_cpu {
        if *nelems == 0 {
            continue;
        }
        total.add(stats);
        let line = truncate_c(format!("CPU{cpu} ({devname}):"), 47);
        dump_io_stats(&mut summary, stats, &line, Some(dev.max_depth));
        pci_events += 1;
    }
    if pci_events > 1 {
        summary.push('\n');
        let line = truncate_c(format!("Total ({devname}):"), 47);
        dump_io_stats(&mut summary, &total, &line, None);
    }
    let msec = dev.last_reported_time.wrapping_sub(dev.first_reported_time) / 1_000_000;
    // Completed KiB × 1000 (plus the stray byte counts, as blkparse adds them) per
    // millisecond of trace; 0 for traces shorter than 1 ms.
    let rate = |w: usize| {
        let num = total.c_kb[w].wrapping_mul(1000).wrapping_add(total.c_b[w]);
        num.checked_div(msec).unwrap_or(0)
    };
    let (rrate, wrate) = (rate(0), rate(1));
    let _ = writeln!(
        &mut summary,
        "\nThroughput (R/W): {rrate}KiB/s / {wrate}KiB/s"
    );
    let _ = writeln!(
        &mut summary,
        "Events ({}): {} entries",
        truncate_c(name.to_string(), 48),
        dev.events
    );
    // File mode never counts skips.
    let _ = writeln!(&mut summary, "Skips: 0 forward (0 - {:>5.1}%)", 0.0);
    summary
}

/// Emulate `blkparse -i INPUT` (file mode, default options) over the per-CPU
/// streams `files` (`(cpu, bytes)`; an empty slice is an existing empty file).
/// blkparse reads CPU 0, 1, … and stops at the first index not in `files`.
pub fn blkparse_files(input: &str, files: &[(u32, &[u8])]) -> BlkparseOutput {
    blkparse_files_batched(input, files, RB_BATCH_DEFAULT)
}

/// [`blkparse_files`] with another batch size (`blkparse -b N`).
pub fn blkparse_files_batched(input: &str, files: &[(u32, &[u8])], batch: usize) -> BlkparseOutput {
    let (dir, name) = split_input(input);
    let mut out = BlkparseOutput::default();
    let mut parser = Parser {
        little: None,
        names: HashMap::new(),
        rb_batch: if batch == 0 { RB_BATCH_DEFAULT } else { batch },
    };

    // setup_file for CPU 0, 1, … until a file is missing.
    let mut streams: Vec<Stream> = Vec::new();
    let mut list: Vec<usize> = Vec::new();
    let mut cpu = 0u32;
    while let Some(&(_, data)) = files.iter().find(|(c, _)| *c == cpu) {
        let idx = streams.len();
        streams.push(Stream {
            cpu,
            data,
            off: 0,
            open: !data.is_empty(),
            queue: VecDeque::new(),
            nelems: 0,
            stats: IoStats::default(),
        });
        if !data.is_empty() {
            let fname = match &dir {
                Some(d) => format!("{d}/{name}.blktrace.{cpu}"),
                None => format!("{name}.blktrace.{cpu}"),
            };
            let _ = writeln!(out.input_files, "Input file {fname} added");
            if parser.prime(&mut streams[idx]) > 0 {
                ms_sort(&mut list, &streams, idx);
            }
        }
        cpu += 1;
    }
    if streams.is_empty() {
        // "No input files found for NAME" on stderr; exit status 1, no summary.
        return out;
    }

    let genesis = list
        .first()
        .map_or(0, |&i| streams[i].queue.front().expect("primed").time);
    let mut dev = DevState::default();
    let events = &mut out.events;

    // do_file's loop: handle(ms_head) until no stream is left.
    while let Some(&head) = list.first() {
        let s = &mut streams[head];
        let t = s.queue.pop_front().expect("stream in list has a record");
        s.nelems += 1;
        handle_record(events, t, genesis, &mut s.stats, &mut dev, &parser.names);
        // ms_deq
        if s.queue.is_empty() && parser.prime(s) == 0 {
            list.remove(0);
            continue;
        }
        // ms_resort
        if list.len() > 1 {
            let tn = |i: usize| streams[i].queue.front().expect("primed").time;
            if tn(head) > tn(list[1]) {
                list.remove(0);
                ms_sort(&mut list, &streams, head);
            }
        }
    }

    let per_cpu: Vec<(u32, u64, IoStats)> =
        streams.iter().map(|s| (s.cpu, s.nelems, s.stats)).collect();
    out.summary = summary(&name, &per_cpu, &dev);
    out
}

/// A [`TraceSink`] whose output is what `blkparse -i INPUT` prints for the files a
/// [`BlktraceWriter`] would write for the same events, produced as the run goes.
///
/// blkparse merges the per-CPU files with an ordered list of streams keyed by
/// each stream's next record (`ms_sort`, `ms_resort`). With every stream in time
/// order, as the simulator's are, that list is ordered by time, and among streams
/// whose next records have the same time: a stream whose next record became its
/// front while handling goes before every stream already at that time (the handled
/// head stays first when its next record is not later than the second stream's,
/// and `ms_sort` inserts before the first stream that is not earlier), and the
/// streams still at their first record keep the order `ms_sort` gave them at
/// setup. Records arrive in time order, so once a record with a later time has
/// arrived, every record at an earlier time is known and can be printed in that
/// order. The sink holds only the records of the current instant; the summary is
/// computed from counters.
///
/// Task names: the writer puts a PROCESS notify on a CPU's stream before a task's
/// first event there (once the task is announced), and blkparse learns the name
/// when it reads the batch of 512 records holding that notify. The sink does the
/// same, except when a batch was read before the notify in it was written: a task
/// announced only after its first events (the simulator announces every task
/// before it runs, as `trace_note_tsk` precedes a task's first trace) may then be
/// named later than blkparse names it.
pub struct BlkparseSink {
    input: String,
    device: Option<DevT>,
    /// Names announced with [`TraceSink::process`] (the writer's, first wins).
    announced: HashMap<u32, String>,
    /// Names blkparse has read (first wins).
    names: HashMap<u32, String>,
    /// PROCESS notifies in batches not read yet: (cpu, batch, pid).
    unread: Vec<(u32, u64, u32)>,
    cpus: Vec<CpuState>,
    /// Streams with a record to print, by (its time, tie key, CPU).
    ready: BTreeSet<(u64, i64, u32)>,
    /// Handling steps so far (the tie key of a stream that got a new front).
    steps: i64,
    /// Time of the newest record received.
    last: Option<u64>,
    genesis: Option<u64>,
    dev: DevState,
    line: String,
    out: Out,
    output: Option<BlkparseOutput>,
}

/// One CPU's stream as the sink sees it.
#[derive(Default)]
struct CpuState {
    /// `(device, sequence)` counters, as the writer keeps them.
    seq: Vec<(u32, u32)>,
    /// Records received and not printed, in order.
    queue: VecDeque<RawTrace>,
    /// The tie key of the stream's next record once it arrives; `None` until
    /// the first record's key comes from the setup order.
    key: Option<i64>,
    /// Time of the stream's first record.
    first: Option<u64>,
    /// The file would not be empty.
    written: bool,
    /// Records written to the stream (the index of the next one).
    records: u64,
    /// Tasks whose PROCESS notify the stream carries.
    noted: Vec<u32>,
    nelems: u64,
    stats: IoStats,
}

impl BlkparseSink {
    /// All devices; `input` is the `-i` argument the files would be read with
    /// (it names the summary blocks and the `Input file` lines).
    pub fn new(input: &str) -> Self {
        BlkparseSink {
            input: input.to_string(),
            device: None,
            announced: HashMap::new(),
            names: HashMap::new(),
            unread: Vec::new(),
            cpus: vec![CpuState::default()],
            ready: BTreeSet::new(),
            steps: 0,
            last: None,
            genesis: None,
            dev: DevState::default(),
            line: String::new(),
            out: Out::default(),
            output: None,
        }
    }

    /// Only `dev`'s events, as from `blktrace -d` on that device.
    pub fn for_device(input: &str, dev: DevT) -> Self {
        BlkparseSink {
            device: Some(dev),
            ..Self::new(input)
        }
    }

    /// Print to `out` (for instance a stream to a file) as the run goes; the text
    /// is then not kept.
    pub fn to(mut self, out: Out) -> Self {
        self.out = out;
        self
    }

    /// The output, available after [`TraceSink::finish`] when kept in memory.
    pub fn output(&self) -> Option<&BlkparseOutput> {
        self.output.as_ref()
    }

    /// blkparse's stdout into a pipe (empty before `finish`, or when streamed).
    pub fn text(&self) -> String {
        self.output
            .as_ref()
            .map(BlkparseOutput::piped)
            .unwrap_or_default()
    }

    /// Records received and not yet printed (those of the newest instant).
    pub fn held_records(&self) -> usize {
        self.cpus.iter().map(|c| c.queue.len()).sum()
    }

    /// Flush the output; the first write error, if any.
    pub fn finish_output(&mut self) -> std::io::Result<()> {
        self.out.finish()
    }

    fn cpu(&mut self, cpu: u32) -> &mut CpuState {
        let i = cpu as usize;
        if i >= self.cpus.len() {
            self.cpus.resize_with(i + 1, CpuState::default);
        }
        &mut self.cpus[i]
    }

    fn wants(&self, dev: DevT) -> bool {
        self.device.is_none_or(|d| d == dev)
    }

    /// A record of CPU `cpu` at `time`: print what is now complete, then queue it.
    fn receive(&mut self, t: RawTrace) {
        let time = t.time;
        if self.last.is_some_and(|l| time > l) {
            self.drain(Some(time));
        }
        self.last = Some(self.last.map_or(time, |l| l.max(time)));
        self.genesis.get_or_insert(time);
        let cpu = t.cpu;
        let c = self.cpu(cpu);
        c.written = true;
        c.records += 1;
        c.queue.push_back(t);
        if c.queue.len() > 1 {
            return;
        }
        match c.key {
            Some(k) => {
                self.ready.insert((time, k, cpu));
            }
            None => c.first = Some(time),
        }
    }

    fn unresolved(c: &CpuState) -> bool {
        c.key.is_none() && c.first.is_some()
    }

    /// Setup keys for the streams whose first record is before `before`: their
    /// position in the list `ms_sort` builds over the streams in CPU order
    /// (streams whose first record comes later are placed after them, so they
    /// cannot change it).
    fn resolve_setup(&mut self, before: Option<u64>) {
        let due = |f: u64| before.is_none_or(|b| f < b);
        if !self
            .cpus
            .iter()
            .any(|c| Self::unresolved(c) && c.first.is_some_and(due))
        {
            return;
        }
        let mut list: Vec<(u64, u32)> = Vec::new();
        for (i, c) in self.cpus.iter().enumerate() {
            let Some(f) = c.first else {
                continue;
            };
            let pos = if list.is_empty() || f < list[0].0 {
                0
            } else {
                1 + list[1..].iter().take_while(|e| e.0 < f).count()
            };
            list.insert(pos, (f, i as u32));
        }
        for (pos, &(f, cpu)) in list.iter().enumerate() {
            let c = &mut self.cpus[cpu as usize];
            if Self::unresolved(c) && due(f) {
                c.key = Some(pos as i64);
                self.ready.insert((f, pos as i64, cpu));
            }
        }
    }

    /// Print every record with a time before `before` (all with `None`), in
    /// blkparse's order.
    fn drain(&mut self, before: Option<u64>) {
        self.resolve_setup(before);
        let genesis = self.genesis.unwrap_or(0);
        while let Some(&(time, key, cpu)) = self.ready.first() {
            if before.is_some_and(|b| time >= b) {
                break;
            }
            self.ready.remove(&(time, key, cpu));
            self.steps += 1;
            let step_key = -self.steps;
            let c = &mut self.cpus[cpu as usize];
            let t = c.queue.pop_front().expect("a ready stream has a record");
            c.nelems += 1;
            match c.queue.front() {
                Some(next) => {
                    self.ready.insert((next.time, step_key, cpu));
                }
                None => c.key = Some(step_key),
            }
            self.line.clear();
            handle_record(
                &mut self.line,
                t,
                genesis,
                &mut c.stats,
                &mut self.dev,
                &self.names,
            );
            let nelems = c.nelems;
            self.out.write(self.line.as_bytes());
            if nelems % RB_BATCH_DEFAULT as u64 == 0 {
                // ms_deq: the batch is used up; the next one is read, with its
                // PROCESS notifies, before the next record is handled.
                self.read_names(cpu, nelems / RB_BATCH_DEFAULT as u64);
            }
        }
    }

    /// The PROCESS notifies of batch `batch` of `cpu`'s stream are read.
    fn read_names(&mut self, cpu: u32, batch: u64) {
        let mut i = 0;
        while i < self.unread.len() {
            let (c, b, pid) = self.unread[i];
            if c == cpu && b == batch {
                self.unread.swap_remove(i);
                self.learn(pid);
            } else {
                i += 1;
            }
        }
    }

    fn learn(&mut self, pid: u32) {
        if let Some(n) = self.announced.get(&pid) {
            self.names.entry(pid).or_insert_with(|| n.clone());
        }
    }

    /// `note_task` of the writer: a PROCESS notify before the task's first record
    /// on this CPU, once the task is announced.
    fn note_task(&mut self, cpu: u32, pid: u32) {
        if !self.announced.contains_key(&pid) {
            return;
        }
        let c = self.cpu(cpu);
        if c.noted.contains(&pid) {
            return;
        }
        c.noted.push(pid);
        c.written = true;
        let batch = c.records / RB_BATCH_DEFAULT as u64;
        if batch == 0 || c.nelems >= batch * RB_BATCH_DEFAULT as u64 {
            // Batch 0 is read at setup; a later batch already read is read again
            // only in the sense that its names are known from now on.
            self.learn(pid);
        } else {
            self.unread.push((cpu, batch, pid));
        }
    }

    fn block(&mut self, rec: &TraceRecord) {
        if !self.wants(rec.dev) {
            return;
        }
        self.note_task(rec.cpu, rec.pid);
        let device = rec.dev.kernel_dev_t();
        let seq = next_seq(&mut self.cpu(rec.cpu).seq, device);
        self.receive(RawTrace::from_record(rec, seq));
    }

    fn message(&mut self, time: Instant, dev: DevT, cpu: u32, pid: u32, text: &str) {
        if !self.wants(dev) {
            return;
        }
        let t = RawTrace::notify(
            BLK_TN_MESSAGE,
            time.as_ns(),
            pid,
            dev.kernel_dev_t(),
            cpu,
            message_payload(text).to_vec(),
        );
        self.receive(t);
    }
}

/// `bt->sequence` of one CPU's stream for `device`, as the writer numbers records.
fn next_seq(seq: &mut Vec<(u32, u32)>, device: u32) -> u32 {
    if let Some(e) = seq.iter_mut().find(|e| e.0 == device) {
        e.1 = e.1.wrapping_add(1);
        return e.1;
    }
    seq.push((device, 1));
    1
}

/// The name blkparse reads back from the writer's PROCESS notify: `comm[16]`,
/// at most 15 bytes of the kernel's name, up to the first NUL.
fn notify_name(comm: &str) -> String {
    let name = kernel_comm(comm);
    let b = name.as_bytes();
    let raw = &b[..b.len().min(TASK_COMM_LEN - 1)];
    let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

impl TraceSink for BlkparseSink {
    fn process(&mut self, pid: u32, comm: &str) {
        self.announced
            .entry(pid)
            .or_insert_with(|| notify_name(comm));
    }

    fn event(&mut self, ev: &TraceEvent) {
        match ev {
            TraceEvent::Block(rec) => self.block(rec),
            TraceEvent::Message {
                time,
                dev,
                cpu,
                pid,
                text,
            } => self.message(*time, *dev, *cpu, *pid, text),
        }
    }

    fn finish(&mut self, _end: Instant) {
        // The last instant: everything left is complete.
        self.drain(None);
        let (dir, name) = split_input(&self.input);
        let per_cpu: Vec<(u32, u64, IoStats)> = self
            .cpus
            .iter()
            .enumerate()
            .map(|(i, c)| (i as u32, c.nelems, c.stats))
            .collect();
        let summary = summary(&name, &per_cpu, &self.dev);
        let mut input_files = String::new();
        // The writer's CPU 0 file always holds the TIMESTAMP notify.
        for (cpu, c) in self.cpus.iter().enumerate() {
            if c.written || cpu == 0 {
                let _ = match &dir {
                    Some(d) => writeln!(input_files, "Input file {d}/{name}.blktrace.{cpu} added"),
                    None => writeln!(input_files, "Input file {name}.blktrace.{cpu} added"),
                };
            }
        }
        self.out.write(summary.as_bytes());
        self.out.write(input_files.as_bytes());
        if let Out::Memory(bytes) = &self.out {
            let all = String::from_utf8_lossy(bytes);
            let events = all[..all.len() - summary.len() - input_files.len()].to_string();
            self.output = Some(BlkparseOutput {
                events,
                summary,
                input_files,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_cnv_matches_c() {
        assert_eq!(size_cnv(0, false), "       0");
        assert_eq!(size_cnv(4, true), "       4K");
        assert_eq!(size_cnv(1_000_001, true), "    1000M");
        assert_eq!(size_cnv(1_000_000, false), " 1000000");
        assert_eq!(size_cnv(123_456_789, false), "  123456K");
    }

    #[test]
    fn input_names() {
        assert_eq!(split_input("sda"), (None, "sda".into()));
        assert_eq!(split_input("sda.blktrace.0"), (None, "sda".into()));
        assert_eq!(
            split_input("/tmp/x/sda"),
            (Some("/tmp/x".into()), "sda".into())
        );
        assert_eq!(split_input("./sda"), (None, "./sda".into()));
        assert_eq!(split_input("/sda"), (Some("/".into()), "sda".into()));
    }
}
