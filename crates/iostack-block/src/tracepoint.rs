//! The block trace points every queue emits (`kernel/trace/blktrace.c`:
//! `blk_add_trace_bio`, `blk_add_trace_rq`, and the records without a sector:
//! plug, unplug, sleep), as records of the simulation's one trace stream. The
//! 2.6 single queue, the 2.4 queue and blk-mq share them; each says only which
//! bio, request range and task an event is about.

use crate::bio::Bio;
use crate::queue::Ctx;
use iostack_core::{Action, DevT, Pdu, ReqFlags, Sector, TraceMask, TraceRecord, Tracer};
use iostack_des::Instant;

/// A request's part of a record: its range, its flags and whose context it is
/// traced in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RqPoint {
    pub ctx: Ctx,
    pub sector: Sector,
    pub sectors: u32,
    pub flags: ReqFlags,
    /// Request events (I, D, C) carry the FS category; G does not.
    pub is_request: bool,
}

/// A bio's record over `[sector, sector + sectors)` (2.4 traces each buffer
/// head of a bio). `(disk, mask)`: the queue's device and the flags its
/// kernel's blktrace records.
pub(crate) fn trace_bio_range(
    tr: &mut Tracer,
    (disk, mask): (DevT, TraceMask),
    now: Instant,
    b: &Bio,
    (sector, sectors): (Sector, u32),
    action: Action,
    pdu: Pdu,
) {
    if !tr.enabled() {
        return;
    }
    tr.block(TraceRecord {
        time: now,
        dev: disk,
        cpu: b.cpu,
        pid: b.pid,
        action,
        sector,
        bytes: (sectors as u64 * 512) as u32,
        flags: b.flags.intersect(mask.bio),
        is_request: false,
        error: 0,
        pdu,
    });
}

/// `blk_add_trace_bio`: the whole bio.
pub(crate) fn trace_bio(
    tr: &mut Tracer,
    dm: (DevT, TraceMask),
    now: Instant,
    b: &Bio,
    action: Action,
    pdu: Pdu,
) {
    trace_bio_range(tr, dm, now, b, (b.sector, b.sectors), action, pdu);
}

/// `blk_add_trace_rq`.
pub(crate) fn trace_rq(
    tr: &mut Tracer,
    (disk, mask): (DevT, TraceMask),
    now: Instant,
    rq: RqPoint,
    action: Action,
) {
    if !tr.enabled() {
        return;
    }
    tr.block(TraceRecord {
        time: now,
        dev: disk,
        cpu: rq.ctx.cpu,
        pid: rq.ctx.pid,
        action,
        sector: rq.sector,
        bytes: (rq.sectors as u64 * 512) as u32,
        flags: rq.flags.intersect(mask.rq),
        is_request: rq.is_request,
        error: 0,
        pdu: Pdu::None,
    });
}

/// A record without a sector (`blk_add_trace_generic`, `blk_add_trace_plug`,
/// `blk_add_trace_unplug`): P, U, UT, S without a bio.
pub(crate) fn trace_simple(
    tr: &mut Tracer,
    disk: DevT,
    now: Instant,
    ctx: Ctx,
    action: Action,
    pdu: Pdu,
) {
    if !tr.enabled() {
        return;
    }
    tr.block(TraceRecord {
        time: now,
        dev: disk,
        cpu: ctx.cpu,
        pid: ctx.pid,
        action,
        sector: 0,
        bytes: 0,
        flags: ReqFlags::READ,
        is_request: false,
        error: 0,
        pdu,
    });
}
