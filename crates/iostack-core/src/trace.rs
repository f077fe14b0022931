//! The one event stream. Every layer emits `TraceEvent`s at the point where the
//! kernel calls its `trace_block_*` hook; every output (blktrace files, blkparse text,
//! the ftrace `blk` tracer's text, statistics) is a `TraceSink` over that stream.

use crate::profile::Profile;
use crate::types::{DevT, ReqFlags, Sector};
use iostack_des::Instant;

/// blktrace action codes (`include/linux/blktrace_api.h`, `enum blktrace_act`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u16)]
pub enum Action {
    Queue = 1,
    BackMerge = 2,
    FrontMerge = 3,
    GetRq = 4,
    SleepRq = 5,
    Requeue = 6,
    Issue = 7,
    Complete = 8,
    Plug = 9,
    UnplugIo = 10,
    UnplugTimer = 11,
    Insert = 12,
    Split = 13,
    Bounce = 14,
    Remap = 15,
}

impl Action {
    /// The letter(s) blkparse and the ftrace tracer print (`blkparse_fmt.c`).
    pub fn letter(self) -> &'static str {
        match self {
            Action::Queue => "Q",
            Action::BackMerge => "M",
            Action::FrontMerge => "F",
            Action::GetRq => "G",
            Action::SleepRq => "S",
            Action::Requeue => "R",
            Action::Issue => "D",
            Action::Complete => "C",
            Action::Plug => "P",
            Action::UnplugIo => "U",
            Action::UnplugTimer => "UT",
            Action::Insert => "I",
            Action::Split => "X",
            Action::Bounce => "B",
            Action::Remap => "A",
        }
    }

    /// The category bit(s) of the action word's high half that come with the action
    /// itself (`BLK_TA_*` in `blktrace_api.h`), before R/W/flag bits are ORed in.
    pub fn category(self) -> u32 {
        const QUEUE: u32 = 0x0010;
        const REQUEUE: u32 = 0x0020;
        const ISSUE: u32 = 0x0040;
        const COMPLETE: u32 = 0x0080;
        match self {
            Action::Requeue => REQUEUE,
            Action::Issue => ISSUE,
            Action::Complete => COMPLETE,
            Action::Split | Action::Bounce => 0,
            _ => QUEUE,
        }
    }
}

/// Action-specific payload (`struct blk_io_trace` PDU).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pdu {
    None,
    /// A: the bio came from `from_dev` at `from_sector` (`struct blk_io_trace_remap`).
    Remap {
        from_dev: DevT,
        from_sector: Sector,
    },
    /// U/UT: number of requests the unplug released.
    Unplug {
        depth: u64,
    },
    /// X: sector at which the bio was split.
    Split {
        at: Sector,
    },
}

/// One block-layer trace point.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TraceRecord {
    pub time: Instant,
    pub dev: DevT,
    pub cpu: u32,
    /// Task the event is charged to; 0 for completions from interrupt context.
    pub pid: u32,
    pub action: Action,
    pub sector: Sector,
    pub bytes: u32,
    /// Direction and modifiers; READ/WRITE categories and SYNC/AHEAD/META/FUA/FLUSH
    /// bits are derived from these as `__blk_add_trace` does.
    pub flags: ReqFlags,
    /// Request events (I, D, C, R) carry the FS category; bio events do not.
    pub is_request: bool,
    pub error: i32,
    pub pdu: Pdu,
}

/// The flags `__blk_add_trace` records, per kernel: bio events (Q, M, F, G, S,
/// A) pass `bio->bi_rw`, request events (I, D, C, R) what `blk_add_trace_rq`
/// passes. Until 2.6.38 that is `rq->cmd_flags & 0x03` (only the direction)
/// plus `REQ_DISCARD`, so request events print `W`, never `WS`; 2.6.28-2.6.36
/// record a barrier bio in the category bit that became `BLK_TC_FLUSH`
/// (`MASK_TC_BIT(rw, HARDBARRIER)`), 2.6.37-2.6.38 record neither flush nor FUA;
/// "blktrace: add FLUSH/FUA support" and "blktrace: use rq->cmd_flags directly"
/// (2.6.39) record everything for both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceMask {
    pub bio: ReqFlags,
    pub rq: ReqFlags,
}

impl TraceMask {
    pub fn of(profile: Profile) -> TraceMask {
        let base =
            ReqFlags::WRITE | ReqFlags::SYNC | ReqFlags::AHEAD | ReqFlags::META | ReqFlags::DISCARD;
        let rq = ReqFlags::WRITE | ReqFlags::DISCARD;
        match profile {
            Profile::V2_4 | Profile::V2_6_28 | Profile::V2_6_32 | Profile::V2_6_33 => TraceMask {
                bio: base | ReqFlags::FLUSH,
                rq,
            },
            Profile::V2_6_37 => TraceMask { bio: base, rq },
            Profile::V3_10 | Profile::V6 => {
                let all = base | ReqFlags::FLUSH | ReqFlags::FUA;
                TraceMask { bio: all, rq: all }
            }
        }
    }
    /// Everything (tests and tools that build records by hand).
    pub const ALL: TraceMask = TraceMask {
        bio: ReqFlags(u32::MAX),
        rq: ReqFlags(u32::MAX),
    };
}

/// Everything a sink can receive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    Block(TraceRecord),
    /// `BLK_TN_MESSAGE`: a scheduler's own chatter (`blk_add_trace_msg`).
    Message {
        time: Instant,
        dev: DevT,
        cpu: u32,
        pid: u32,
        text: String,
    },
}

/// A consumer of the event stream. Sinks learn task names up front with `process`,
/// as the kernel's `trace_note_tsk` tells blktrace the first time it sees a task.
pub trait TraceSink: std::any::Any + Send {
    fn process(&mut self, _pid: u32, _comm: &str) {}
    fn event(&mut self, ev: &TraceEvent);
    /// The run is over at virtual time `end`.
    fn finish(&mut self, _end: Instant) {}
}

/// Fan-out of the event stream to the attached sinks. With no sink attached,
/// emitting costs one branch.
#[derive(Default)]
pub struct Tracer {
    sinks: Vec<Box<dyn TraceSink>>,
    /// Task names in order of registration, replayed to late-attached sinks.
    names: Vec<(u32, String)>,
}

impl Tracer {
    pub fn new() -> Self {
        Tracer::default()
    }
    pub fn enabled(&self) -> bool {
        !self.sinks.is_empty()
    }
    pub fn attach(&mut self, mut sink: Box<dyn TraceSink>) {
        for (pid, comm) in &self.names {
            sink.process(*pid, comm);
        }
        self.sinks.push(sink);
    }
    pub fn process(&mut self, pid: u32, comm: &str) {
        self.names.push((pid, comm.to_string()));
        for s in &mut self.sinks {
            s.process(pid, comm);
        }
    }
    #[inline]
    pub fn block(&mut self, rec: TraceRecord) {
        if self.sinks.is_empty() {
            return;
        }
        let ev = TraceEvent::Block(rec);
        for s in &mut self.sinks {
            s.event(&ev);
        }
    }
    pub fn message(&mut self, time: Instant, dev: DevT, cpu: u32, pid: u32, text: String) {
        if self.sinks.is_empty() {
            return;
        }
        let ev = TraceEvent::Message {
            time,
            dev,
            cpu,
            pid,
            text,
        };
        for s in &mut self.sinks {
            s.event(&ev);
        }
    }
    pub fn finish(&mut self, end: Instant) {
        for s in &mut self.sinks {
            s.finish(end);
        }
    }
    /// Detach and return the sinks (to read their results).
    pub fn take_sinks(&mut self) -> Vec<Box<dyn TraceSink>> {
        std::mem::take(&mut self.sinks)
    }
}
