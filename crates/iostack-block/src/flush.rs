//! Cache flushes and FUA writes through the request queue, as each kernel era
//! sequences them. A request with `REQ_FLUSH` asks for the device's write cache to
//! be flushed before its data; one with `REQ_FUA` for its data to be on the medium
//! when it completes. What reaches the device depends on what the device declares
//! (`Device::write_cache`, `Device::fua`), as the driver tells the queue
//! (`blk_queue_flush`, `blk_queue_ordered`):
//!
//! * [`FlushEra::Barrier`], 2.6.28-2.6.36 `block/blk-barrier.c`: a barrier bio
//!   (`WRITE_BARRIER`; FLUSH or FUA here) is inserted at the back after draining
//!   the elevator (`__elv_add_request` → `ELEVATOR_INSERT_BACK`). When it reaches
//!   the head of the dispatch list, `start_ordered` takes it off and queues proxy
//!   requests at the front: pre-flush, the data (`bar_rq`, with FUA when the
//!   device has it: `QUEUE_ORDERED_DRAIN_FUA`) and post-flush
//!   (`QUEUE_ORDERED_DRAIN_FLUSH`), or the data alone on a device without a write
//!   cache (`QUEUE_ORDERED_DRAIN`); an empty barrier has no data and no
//!   post-flush. The sequence first waits for the requests in flight to drain,
//!   runs its steps one at a time, and nothing else is issued until it is done
//!   (`blk_do_ordered`). The original request then completes (C) with its bios.
//! * [`FlushEra::Serial`], 2.6.37-2.6.38, the first `block/blk-flush.c`: the
//!   request goes to the front of the dispatch list (`ELEVATOR_INSERT_FRONT`);
//!   `blk_do_flush` issues a data request that needs no flush directly (flags
//!   stripped), otherwise runs one sequence at a time with a proxy `flush_rq` per
//!   step (pre-flush, data, post-flush when FUA must be emulated), other flush
//!   requests waiting on `pending_flushes`. No draining.
//! * [`FlushEra::Merged`], 2.6.39+ `block/blk-flush.c` (`blk_insert_flush`): the
//!   request bypasses the elevator (`ELEVATOR_INSERT_FLUSH`), its policy
//!   (`blk_flush_policy`) says which of PREFLUSH, DATA and POSTFLUSH it needs;
//!   requests waiting for a flush share one (`flush_queue[pending_idx]`, double
//!   buffered: at most one flush in flight, C1), a flush is held while a
//!   sequenced request's data is in flight (C2) unless the first waiter has
//!   waited `FLUSH_PENDING_TIMEOUT` (C3), and the data goes to the device as the
//!   request itself, at the head of the dispatch list. Its completion is traced
//!   twice, as the kernel does: once for the data, and once, with no bytes, when
//!   the sequence is done.
//!
//! Not modelled: the barrier era's flush requests are `REQ_TYPE_BLOCK_PC`
//! commands whose blktrace records carry the SCSI CDB as payload; here they are
//! traced as file-system requests of no data. `QUEUE_ORDERED_TAG*` (ordered
//! tags) is not used by any modelled driver. Errors (`-EOPNOTSUPP`) cannot
//! happen: every modelled device accepts what it declares.

use super::{Ctx, RequestQueue};
use crate::request::{FlushRole, Request, RqId};
use iostack_core::{Action, Pdu, Profile, ReqFlags, Sector, TraceRecord, Tracer};
use iostack_des::Instant;
use std::collections::VecDeque;

/// Which flush code a kernel runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushEra {
    /// 2.6.28-2.6.36: `blk-barrier.c` ordered sequences with draining.
    Barrier,
    /// 2.6.37-2.6.38: `blk_do_flush`, one sequence at a time.
    Serial,
    /// 2.6.39+: `blk_insert_flush`, flushes shared by the requests waiting.
    Merged,
}

impl FlushEra {
    pub fn of(p: Profile) -> FlushEra {
        match p {
            Profile::V2_4 | Profile::V2_6_28 | Profile::V2_6_32 | Profile::V2_6_33 => {
                FlushEra::Barrier
            }
            Profile::V2_6_37 => FlushEra::Serial,
            Profile::V3_10 | Profile::V6 => FlushEra::Merged,
        }
    }
}

/// Sequence steps in order (`QUEUE_ORDSEQ_*`, `REQ_FSEQ_*`; only the barrier
/// era drains).
pub(super) const DRAIN: u8 = 1 << 0;
pub(super) const PREFLUSH: u8 = 1 << 1;
pub(super) const DATA: u8 = 1 << 2;
pub(super) const POSTFLUSH: u8 = 1 << 3;
pub(super) const DONE: u8 = 1 << 4;
const ACTIONS: u8 = DRAIN | PREFLUSH | DATA | POSTFLUSH;

/// `blk_flush_cur_seq` / `blk_ordered_cur_seq`: the first step not done.
fn cur_step(done: u8) -> u8 {
    1 << (!done).trailing_zeros()
}

/// `FLUSH_PENDING_TIMEOUT`, in jiffies per HZ.
const FLUSH_PENDING_TIMEOUT_S: u64 = 5;

/// What to do with the request at the head of the dispatch list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Head {
    Issue,
    /// The driver gets nothing now (`__elv_next_request` returns NULL).
    Stall,
    /// The head changed; look again.
    Again,
}

/// The queue's flush state (`q->flush_*`, `q->ordseq`, `q->orig_bar_rq`).
pub(super) struct FlushState {
    era: FlushEra,
    /// `q->flush_flags & REQ_FLUSH`: the device has a volatile write cache.
    has_flush: bool,
    /// `q->flush_flags & REQ_FUA`.
    has_fua: bool,
    /// Barrier/Serial: the request whose sequence runs.
    cur: Option<RqId>,
    /// Serial: `q->pending_flushes`.
    waiting: VecDeque<RqId>,
    /// Merged: `flush_queue[pending_idx]` and `flush_queue[running_idx]`.
    pending: Vec<RqId>,
    running: Vec<RqId>,
    /// Merged: sequenced requests whose data is in flight.
    data_in_flight: u32,
    /// Merged: `flush_pending_since`, in jiffies.
    pending_since: u64,
    /// Merged: a flush is in flight (`pending_idx != running_idx`).
    flush_in_flight: bool,
    /// Requests the block layer made itself (not from the request pools).
    pub(super) proxies: u32,
}

impl FlushState {
    pub(super) fn new(era: FlushEra, write_cache: bool, fua: bool) -> FlushState {
        FlushState {
            era,
            has_flush: write_cache,
            // blk_queue_flush: FUA without FLUSH is meaningless and dropped.
            has_fua: write_cache && fua,
            cur: None,
            waiting: VecDeque::new(),
            pending: Vec::new(),
            running: Vec::new(),
            data_in_flight: 0,
            pending_since: 0,
            flush_in_flight: false,
            proxies: 0,
        }
    }

    /// Requests held by the flush machinery: neither in the elevator, on the
    /// dispatch list nor in the device.
    pub(super) fn parked(&self) -> u32 {
        (self.cur.is_some() as usize + self.waiting.len() + self.pending.len() + self.running.len())
            as u32
    }

    /// `blk_flush_policy`: the steps `r` needs.
    fn policy(&self, r: &Request) -> u8 {
        let mut p = 0;
        if r.sectors > 0 {
            p |= DATA;
        }
        if self.has_flush {
            if r.flags.contains(ReqFlags::FLUSH) {
                p |= PREFLUSH;
            }
            if !self.has_fua && r.flags.contains(ReqFlags::FUA) {
                p |= POSTFLUSH;
            }
        }
        p
    }

    /// The barrier's steps (`start_ordered` with the driver's ordered mode).
    fn ordered_steps(&self, r: &Request) -> u8 {
        let mut p = DRAIN;
        if self.has_flush {
            p |= PREFLUSH;
        }
        if r.sectors > 0 {
            p |= DATA;
            if self.has_flush && !self.has_fua {
                p |= POSTFLUSH;
            }
        }
        p
    }
}

impl RequestQueue {
    /// Insertion of a request with `REQ_FLUSH`/`REQ_FUA` (a barrier before
    /// 2.6.37), in place of `elv_insert(ELEVATOR_INSERT_SORT)`.
    pub(super) fn insert_flush(
        &mut self,
        now: Instant,
        rq: RqId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut super::BlockOut,
    ) {
        self.trace_rq(now, rq, ctx, Action::Insert, tr);
        {
            let r = self.rqs.get_mut(rq);
            r.softbarrier = true;
            r.dispatched = true;
        }
        match self.flush.era {
            FlushEra::Barrier => {
                // ELEVATOR_INSERT_BACK: drain the elevator, add at the tail,
                // make it the sort boundary, run the queue.
                self.elv_drain(now, ctx, tr);
                self.dispatch.push_back(rq);
                self.end_sector = self.rqs.get(rq).end_sector();
                self.boundary_rq = Some(rq);
                self.run_queue(now, ctx, tr, out);
            }
            // ELEVATOR_INSERT_FRONT; blk_do_flush acts when it reaches the head.
            FlushEra::Serial => self.dispatch.push_front(rq),
            FlushEra::Merged => {
                self.rqs.get_mut(rq).dispatched = false;
                self.blk_insert_flush(now, rq, tr, out);
                self.run_queue(now, ctx, tr, out);
            }
        }
    }

    /// `elv_drain_elevator`: force every request out to the dispatch list.
    fn elv_drain(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer) {
        loop {
            let mut ectx = crate::elevator::ElvCtx {
                now,
                msgs: &mut self.msgs,
                trace: tr.enabled(),
                kick: crate::elevator::Kick::None,
            };
            let got = self.elv.dispatch(&mut ectx, &self.rqs, true);
            self.flush_msgs(now, ctx, tr);
            match got {
                Some((r, placement)) => self.elv_dispatch(r, placement),
                None => break,
            }
        }
    }

    /// `blk_do_ordered` (barriers) or `blk_do_flush` (2.6.37) on the request at
    /// the head of the dispatch list.
    pub(super) fn flush_filter(
        &mut self,
        now: Instant,
        rq: RqId,
        tr: &mut Tracer,
        out: &mut super::BlockOut,
    ) -> Head {
        match self.flush.era {
            FlushEra::Merged => Head::Issue,
            FlushEra::Barrier => self.do_ordered(now, rq, tr, out),
            FlushEra::Serial => self.do_flush(now, rq, tr, out),
        }
    }

    fn do_ordered(
        &mut self,
        now: Instant,
        rq: RqId,
        tr: &mut Tracer,
        out: &mut super::BlockOut,
    ) -> Head {
        let (role, barrier) = {
            let r = self.rqs.get(rq);
            (r.role, r.flags.is_flush_or_fua())
        };
        let Some(orig) = self.flush.cur else {
            if !barrier {
                return Head::Issue;
            }
            self.start_ordered(now, rq, tr, out);
            return Head::Again;
        };
        // Ordered by draining: only the running sequence's proxy whose turn it
        // is goes; everything queued after the barrier waits.
        match role {
            FlushRole::Proxy { orig: o, step }
                if o == orig && step == cur_step(self.rqs.get(orig).fseq) =>
            {
                Head::Issue
            }
            _ => Head::Stall,
        }
    }

    /// `start_ordered`: take the barrier off the list and queue its proxies at
    /// the front in reverse order.
    fn start_ordered(
        &mut self,
        now: Instant,
        orig: RqId,
        tr: &mut Tracer,
        out: &mut super::BlockOut,
    ) {
        self.dispatch.pop_front();
        self.rqs.get_mut(orig).dispatched = false;
        self.flush.cur = Some(orig);
        let steps = self.flush.ordered_steps(self.rqs.get(orig));
        let ctx = self.ctx_of(orig);
        for step in [POSTFLUSH, DATA, PREFLUSH] {
            if steps & step != 0 {
                let p = self.alloc_proxy(orig, step);
                self.insert_front(now, p, ctx, tr);
            }
        }
        let mut skip = ACTIONS & !steps;
        if self.in_flight[0] + self.in_flight[1] == 0 {
            skip |= DRAIN;
        }
        self.ordered_complete_seq(now, orig, skip, tr, out);
    }

    /// `blk_do_flush` (2.6.37).
    fn do_flush(
        &mut self,
        now: Instant,
        rq: RqId,
        tr: &mut Tracer,
        out: &mut super::BlockOut,
    ) -> Head {
        let r = self.rqs.get(rq);
        if !matches!(r.role, FlushRole::None) || !r.flags.is_flush_or_fua() {
            return Head::Issue;
        }
        let policy = self.flush.policy(r);
        if policy == DATA {
            // Data that needs no flush is issued directly.
            self.strip_flush_flags(rq);
            return Head::Issue;
        }
        self.dispatch.pop_front();
        self.rqs.get_mut(rq).dispatched = false;
        if self.flush.cur.is_some() {
            self.flush.waiting.push_back(rq);
            return Head::Again;
        }
        self.flush.cur = Some(rq);
        self.ordered_complete_seq(now, rq, (ACTIONS & !policy) | DRAIN, tr, out);
        Head::Again
    }

    /// `blk_ordered_complete_seq` / 2.6.37's `blk_flush_complete_seq`: record
    /// `steps` done for the running sequence of `orig` and go on.
    fn ordered_complete_seq(
        &mut self,
        now: Instant,
        orig: RqId,
        steps: u8,
        tr: &mut Tracer,
        out: &mut super::BlockOut,
    ) {
        let done = {
            let r = self.rqs.get_mut(orig);
            r.fseq |= steps;
            r.fseq
        };
        let step = cur_step(done);
        if step == DONE {
            self.flush.cur = None;
            let sector = self.rqs.get(orig).sector;
            let bytes = self.rqs.get(orig).bytes() as u32;
            self.end_sequenced(now, orig, sector, bytes, tr, out);
            if let Some(next) = self.flush.waiting.pop_front() {
                // Dispatch the next flush if there is one.
                self.rqs.get_mut(next).dispatched = true;
                self.dispatch.push_front(next);
            }
        } else if self.flush.era == FlushEra::Serial {
            // queue_next_fseq
            let p = self.alloc_proxy(orig, step);
            let ctx = self.ctx_of(orig);
            self.insert_front(now, p, ctx, tr);
        }
    }

    /// A proxy for `step` of `orig`'s sequence: an empty flush, or the data of
    /// `orig` (`init_request_from_bio` of its bio), FUA if the device takes it.
    fn alloc_proxy(&mut self, orig: RqId, step: u8) -> RqId {
        let o = self.rqs.get(orig).clone();
        let (flags, sector, sectors) = if step == DATA {
            let mut f = o.flags.remove(ReqFlags::FLUSH);
            if !self.flush.has_fua {
                f = f.remove(ReqFlags::FUA);
            } else if self.flush.era == FlushEra::Barrier {
                f = f | ReqFlags::FUA; // QUEUE_ORDERED_DO_FUA
            }
            (f, o.sector, o.sectors)
        } else if self.flush.era == FlushEra::Barrier {
            // queue_flush: cmd_flags = REQ_HARDBARRIER, a read-direction
            // command with no data.
            (ReqFlags::FLUSH | ReqFlags::NOMERGE, 0, 0)
        } else {
            // init_flush_request: WRITE_FLUSH.
            (
                ReqFlags::WRITE_FLUSH.remove(ReqFlags::UNPLUG) | ReqFlags::NOMERGE,
                0,
                0,
            )
        };
        self.flush.proxies += 1;
        self.rqs.alloc(Request {
            sector,
            sectors,
            segments: if step == DATA { o.segments } else { 0 },
            flags,
            role: FlushRole::Proxy { orig, step },
            ..Self::proxy_template(&o)
        })
    }

    /// Fields every block-layer-made request starts with.
    fn proxy_template(o: &Request) -> Request {
        Request {
            started: false,
            dispatched: false,
            in_driver: false,
            sorted: false,
            softbarrier: true,
            elv_private: 0,
            fseq: 0,
            on_hash: false,
            role: FlushRole::None,
            ..o.clone()
        }
    }

    /// `elv_insert(ELEVATOR_INSERT_FRONT)`: I, then the head of the list.
    fn insert_front(&mut self, now: Instant, rq: RqId, ctx: Ctx, tr: &mut Tracer) {
        self.trace_rq(now, rq, ctx, Action::Insert, tr);
        self.rqs.get_mut(rq).dispatched = true;
        self.dispatch.push_front(rq);
    }

    fn ctx_of(&self, rq: RqId) -> Ctx {
        let r = self.rqs.get(rq);
        Ctx {
            pid: r.pid,
            cpu: r.cpu,
        }
    }

    /// What `blk_insert_flush` and `blk_do_flush` clear before the driver sees
    /// the request: `REQ_FLUSH`, and `REQ_FUA` if the device lacks it.
    fn strip_flush_flags(&mut self, rq: RqId) {
        let has_fua = self.flush.has_fua;
        let r = self.rqs.get_mut(rq);
        r.flags = r.flags.remove(ReqFlags::FLUSH);
        if !has_fua {
            r.flags = r.flags.remove(ReqFlags::FUA);
        }
    }

    /// The end of a sequenced request (`__blk_end_request_all`): C with the
    /// position and byte count the kernel's request has then, every bio ends,
    /// the request is freed.
    fn end_sequenced(
        &mut self,
        now: Instant,
        rq: RqId,
        sector: Sector,
        bytes: u32,
        tr: &mut Tracer,
        out: &mut super::BlockOut,
    ) {
        self.rqs.get_mut(rq).role = FlushRole::None;
        let irq = Ctx {
            pid: 0,
            cpu: self.cfg.irq_cpu,
        };
        if tr.enabled() {
            let r = self.rqs.get(rq);
            tr.block(TraceRecord {
                time: now,
                dev: self.cfg.disk,
                cpu: irq.cpu,
                pid: irq.pid,
                action: Action::Complete,
                sector,
                bytes,
                flags: r.flags.intersect(self.cfg.trace_mask.rq),
                is_request: true,
                error: 0,
                pdu: Pdu::None,
            });
        }
        self.end_bios(rq, out);
        if let Some(bio) = self.free_request(rq) {
            self.retry_sleeper(now, bio, tr, out);
        }
    }

    // -------------------------------------------------------------------------
    // 2.6.39+ (`blk_insert_flush`).

    /// `blk_insert_flush`.
    fn blk_insert_flush(
        &mut self,
        now: Instant,
        rq: RqId,
        tr: &mut Tracer,
        out: &mut super::BlockOut,
    ) {
        let policy = self.flush.policy(self.rqs.get(rq));
        self.strip_flush_flags(rq);
        if policy == 0 {
            // An empty flush to a device without a write-back cache.
            let sector = self.rqs.get(rq).sector;
            self.end_sequenced(now, rq, sector, 0, tr, out);
            return;
        }
        if policy == DATA {
            // No flush needed: queue for normal execution.
            self.rqs.get_mut(rq).dispatched = true;
            self.dispatch.push_back(rq);
            return;
        }
        {
            let r = self.rqs.get_mut(rq);
            r.role = FlushRole::Seq;
            r.fseq = DRAIN;
        }
        self.flush_complete_seq(now, rq, ACTIONS & !policy, tr, out);
    }

    /// `blk_flush_complete_seq`: `rq` finished `seq`; queue it for its next step.
    /// Returns whether requests were added to the dispatch list.
    fn flush_complete_seq(
        &mut self,
        now: Instant,
        rq: RqId,
        seq: u8,
        tr: &mut Tracer,
        out: &mut super::BlockOut,
    ) -> bool {
        let done = {
            let r = self.rqs.get_mut(rq);
            debug_assert_eq!(r.fseq & seq & !DRAIN, 0, "flush step done twice");
            r.fseq |= seq;
            r.fseq
        };
        let mut queued = false;
        match cur_step(done) {
            PREFLUSH | POSTFLUSH => {
                if self.flush.pending.is_empty() {
                    self.flush.pending_since = self.jiffies(now);
                }
                self.flush.pending.push(rq);
            }
            DATA => {
                self.flush.data_in_flight += 1;
                self.rqs.get_mut(rq).dispatched = true;
                self.dispatch.push_front(rq);
                queued = true;
            }
            _ => {
                // DONE: blk_flush_restore_request, then __blk_end_request_all.
                // The data completion already moved the request's position past
                // its data and left no bytes.
                let (sector, had_data) = {
                    let r = self.rqs.get(rq);
                    (r.sector, r.sectors > 0)
                };
                let at = if had_data {
                    sector + self.rqs.get(rq).sectors as u64
                } else {
                    sector
                };
                self.end_sequenced(now, rq, at, 0, tr, out);
            }
        }
        self.kick_flush(now) | queued
    }

    /// `blk_kick_flush`: issue a flush for the requests pending, if C1-C3 allow.
    fn kick_flush(&mut self, now: Instant) -> bool {
        let f = &self.flush;
        if f.flush_in_flight || f.pending.is_empty() {
            return false;
        }
        let timeout = FLUSH_PENDING_TIMEOUT_S * self.cfg.hz;
        if f.data_in_flight > 0 && self.jiffies(now) < f.pending_since + timeout {
            return false;
        }
        let first = self.rqs.get(f.pending[0]).clone();
        self.flush.proxies += 1;
        let flush_rq = self.rqs.alloc(Request {
            sector: 0,
            sectors: 0,
            segments: 0,
            // WRITE_FLUSH | REQ_FLUSH_SEQ
            flags: ReqFlags::WRITE_FLUSH.remove(ReqFlags::UNPLUG) | ReqFlags::NOMERGE,
            role: FlushRole::FlushRq,
            dispatched: true,
            ..Self::proxy_template(&first)
        });
        self.flush.flush_in_flight = true;
        self.flush.running = std::mem::take(&mut self.flush.pending);
        self.dispatch.push_back(flush_rq);
        true
    }

    // -------------------------------------------------------------------------
    // Completions.

    /// A request of the flush machinery completed in the device (C is traced).
    pub(super) fn flush_complete(
        &mut self,
        now: Instant,
        rq: RqId,
        role: FlushRole,
        tr: &mut Tracer,
        out: &mut super::BlockOut,
    ) {
        match role {
            FlushRole::None => unreachable!("an ordinary request"),
            FlushRole::Proxy { orig, step } => {
                self.free_proxy(rq);
                self.ordered_complete_seq(now, orig, step, tr, out);
            }
            FlushRole::FlushRq => {
                // flush_end_io: every request that waited moves on.
                self.free_proxy(rq);
                self.flush.flush_in_flight = false;
                let mut queued = false;
                for r in std::mem::take(&mut self.flush.running) {
                    let step = cur_step(self.rqs.get(r).fseq);
                    debug_assert!(step == PREFLUSH || step == POSTFLUSH);
                    queued |= self.flush_complete_seq(now, r, step, tr, out);
                }
                if queued {
                    // blk_run_queue_async
                    out.events
                        .push((now, super::QueueEvent::Work(super::BlockWork::RunQueue)));
                }
            }
            FlushRole::Seq => {
                // flush_data_end_io: the data is done, the bios are not.
                {
                    let r = self.rqs.get_mut(rq);
                    r.in_driver = false;
                    r.dispatched = false;
                }
                self.flush.data_in_flight -= 1;
                if self.flush_complete_seq(now, rq, DATA, tr, out) {
                    out.events
                        .push((now, super::QueueEvent::Work(super::BlockWork::RunQueue)));
                }
            }
        }
    }

    fn free_proxy(&mut self, rq: RqId) {
        if self.boundary_rq == Some(rq) {
            self.boundary_rq = None;
        }
        let r = self.rqs.free(rq);
        Self::put_check(&r);
        self.flush.proxies -= 1;
    }

    /// `elv_completed_request`'s drain check: a barrier waiting for the requests
    /// in flight goes on once there are none.
    pub(super) fn flush_drained(
        &mut self,
        now: Instant,
        tr: &mut Tracer,
        out: &mut super::BlockOut,
    ) {
        if self.flush.era != FlushEra::Barrier || self.in_flight[0] + self.in_flight[1] > 0 {
            return;
        }
        if let Some(orig) = self.flush.cur {
            if cur_step(self.rqs.get(orig).fseq) == DRAIN {
                self.ordered_complete_seq(now, orig, DRAIN, tr, out);
            }
        }
    }
}
