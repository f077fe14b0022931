//! Cache flushes and FUA on blk-mq (6.x `block/blk-flush.c`): `blk_insert_flush`
//! decides a request's policy (PREFLUSH, DATA, POSTFLUSH) against the device's
//! write cache and FUA support; requests waiting for a flush collect on the
//! hardware queue's pending list, one `flush_rq` at a time serves them all
//! (`blk_kick_flush`, held while sequenced data is in flight, up to
//! `FLUSH_PENDING_TIMEOUT`), and `blk_flush_complete_seq` moves each request
//! on: its data through the requeue list (`blk_mq_requeue_work` on kblockd,
//! inserted at the head), the flush through `hctx->dispatch`, and at the end a
//! second completion with no bytes that ends its bios.

use super::{Loc, MqQueue, MqRq};
use crate::queue::{BlockOut, BlockWork, Ctx, QueueEvent};
use crate::request::{FlushRole, Request, RqId};
use iostack_core::{Action, ReqFlags, Tracer};
use iostack_des::{Duration, Instant};

/// `REQ_FSEQ_*`.
const PREFLUSH: u8 = 1;
const DATA: u8 = 2;
const POSTFLUSH: u8 = 4;
const DONE: u8 = 8;
const ACTIONS: u8 = PREFLUSH | DATA | POSTFLUSH;
/// `FLUSH_PENDING_TIMEOUT` = 5 s.
const FLUSH_PENDING_TIMEOUT: Duration = Duration(5_000_000_000);

/// `struct blk_flush_queue` of one hardware queue.
#[derive(Default)]
pub(super) struct FlushQueue {
    pending: [Vec<RqId>; 2],
    pending_idx: usize,
    running_idx: usize,
    data_in_flight: u32,
    pending_since: Instant,
}

impl FlushQueue {
    pub(super) fn waiting(&self) -> usize {
        self.pending[0].len() + self.pending[1].len()
    }
}

impl MqQueue {
    /// `blk_insert_flush`: true when the flush machinery took the request.
    pub(super) fn insert_flush(
        &mut self,
        now: Instant,
        rq: RqId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> bool {
        let (wc, fua) = (self.dev.write_cache(), self.dev.fua());
        let h = self.mq(rq).hctx as usize;
        let r = self.rqs.get_mut(rq);
        let mut policy = 0;
        if r.sectors > 0 {
            policy |= DATA;
        }
        if wc {
            if r.flags.contains(ReqFlags::FLUSH) {
                policy |= PREFLUSH;
            }
            if r.flags.contains(ReqFlags::FUA) && !fua {
                policy |= POSTFLUSH;
            }
        }
        r.flags = r.flags.remove(ReqFlags::FLUSH) | ReqFlags::SYNC;
        if !fua {
            r.flags = r.flags.remove(ReqFlags::FUA);
        }
        match policy {
            DATA => false,
            p if p == DATA | POSTFLUSH => {
                r.role = FlushRole::Seq;
                r.fseq = PREFLUSH;
                self.fq[h].data_in_flight += 1;
                false
            }
            _ => {
                assert!(policy != 0, "an empty flush reaches a device with no cache");
                r.role = FlushRole::Seq;
                r.fseq = 0;
                self.complete_seq(now, rq, ACTIONS & !policy, tr, out);
                true
            }
        }
    }

    /// `blk_flush_complete_seq`: `seq` is done; on to the next step.
    fn complete_seq(
        &mut self,
        now: Instant,
        rq: RqId,
        seq: u8,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        let h = self.mq(rq).hctx as usize;
        let r = self.rqs.get_mut(rq);
        assert_eq!(r.fseq & seq, 0, "flush step done twice");
        r.fseq |= seq;
        // blk_flush_cur_seq: the first step not done.
        let next = 1u8 << (!r.fseq).trailing_zeros();
        match next {
            PREFLUSH | POSTFLUSH => {
                let fq = &mut self.fq[h];
                let list = &mut fq.pending[fq.pending_idx];
                if list.is_empty() {
                    fq.pending_since = now;
                }
                list.push(rq);
                self.mq_mut(rq).loc = Loc::Flush;
            }
            DATA => {
                self.fq[h].data_in_flight += 1;
                self.mq_mut(rq).loc = Loc::Requeue;
                self.requeue_list.push(rq);
                self.kick_requeue(now, out);
            }
            _ => {
                assert_eq!(next, DONE);
                self.flush_done(now, rq, tr, out);
            }
        }
        self.kick_flush(now, h as u16, out);
    }

    /// `REQ_FSEQ_DONE`: `blk_flush_restore_request` and `blk_mq_end_request`
    /// with no bytes left: C of zero bytes, the bios end, the request freed.
    fn flush_done(&mut self, now: Instant, rq: RqId, tr: &mut Tracer, out: &mut BlockOut) {
        let h = self.mq(rq).hctx;
        let irq = self.irq_ctx(h);
        let sectors = std::mem::take(&mut self.rqs.get_mut(rq).sectors);
        self.trace_rq(now, rq, irq, Action::Complete, tr);
        self.rqs.get_mut(rq).sectors = sectors;
        self.end_bios(rq, out);
        self.free_request(now, rq, tr, out);
    }

    /// `blk_kick_flush`: issue the one flush for everything pending, unless
    /// one is running, or sequenced data is in flight and the oldest waiter
    /// has not waited `FLUSH_PENDING_TIMEOUT`.
    fn kick_flush(&mut self, now: Instant, h: u16, out: &mut BlockOut) {
        let fq = &mut self.fq[h as usize];
        let first = match fq.pending[fq.pending_idx].first() {
            Some(&f) if fq.pending_idx == fq.running_idx => f,
            _ => return,
        };
        if fq.data_in_flight > 0 && now < fq.pending_since + FLUSH_PENDING_TIMEOUT {
            return;
        }
        fq.pending_idx ^= 1;
        let (cpu, pid) = {
            let r = self.rqs.get(first);
            (r.cpu, r.pid)
        };
        let flush_rq = self.rqs.alloc(Request {
            sector: 0,
            sectors: 0,
            segments: 0,
            flags: ReqFlags::FLUSH | ReqFlags::WRITE,
            pid,
            cpu,
            start_time: now,
            fifo_time: now,
            started: false,
            dispatched: true,
            in_driver: false,
            sync_pool: true,
            ioprio: (0, 0),
            bio_head: self.rqs.get(first).bio_head,
            bio_tail: self.rqs.get(first).bio_head,
            elv_private: 0,
            sorted: false,
            softbarrier: false,
            role: FlushRole::FlushRq,
            fseq: 0,
            on_hash: false,
        });
        // Without a scheduler the flush borrows the first waiter's driver tag
        // (they are never in flight together); with one it takes a driver
        // tag at dispatch.
        let borrowed = self.elv.is_none();
        self.set_mq(
            flush_rq,
            MqRq {
                hctx: h,
                tag: None,
                sched_tag: None,
                budget: false,
                loc: Loc::Requeue,
                hash: None,
                wbt: 0,
            },
        );
        self.borrowed_tag.push((flush_rq, borrowed));
        self.flush_list.push(flush_rq);
        self.kick_requeue(now, out);
    }

    /// `blk_mq_kick_requeue_list`: `requeue_work` on kblockd, queued once.
    fn kick_requeue(&mut self, now: Instant, out: &mut BlockOut) {
        if !self.requeue_pending {
            self.requeue_pending = true;
            out.events
                .push((now, QueueEvent::Work(BlockWork::MqRequeue)));
        }
    }

    /// `blk_mq_requeue_work` as kblockd: requeued requests at the head of
    /// their queue (I), flushes at the head of `hctx->dispatch`, then every
    /// hardware queue runs.
    pub(super) fn requeue_work(
        &mut self,
        now: Instant,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        self.requeue_pending = false;
        for rq in std::mem::take(&mut self.requeue_list) {
            self.insert_at_head(now, rq, ctx, tr);
        }
        for rq in std::mem::take(&mut self.flush_list) {
            let h = self.mq(rq).hctx as usize;
            self.mq_mut(rq).loc = Loc::Dispatch;
            self.hctxs[h].dispatch.push_front(rq);
        }
        for h in 0..self.hctxs.len() as u16 {
            self.run_hw_queue(now, h, false, ctx, tr, out);
        }
    }

    /// `blk_mq_insert_request(rq, BLK_MQ_INSERT_AT_HEAD)` for a sequenced
    /// data request: I, then the head of the software queue, or of the
    /// hardware queue's dispatch list with a scheduler (mq-deadline's
    /// at-head insert is its per-priority dispatch list, served first; the
    /// dispatch list is the place here).
    fn insert_at_head(&mut self, now: Instant, rq: RqId, ctx: Ctx, tr: &mut Tracer) {
        self.trace_rq(now, rq, ctx, Action::Insert, tr);
        if self.elv.is_some() {
            let h = self.mq(rq).hctx as usize;
            self.mq_mut(rq).loc = Loc::Dispatch;
            self.hctxs[h].dispatch.push_front(rq);
        } else {
            let cpu = self.rqs.get(rq).cpu as usize;
            self.mq_mut(rq).loc = Loc::SwQueue;
            self.ctxs[cpu].push_front(rq);
        }
    }

    /// Whether a flush request dispatches on a borrowed tag.
    pub(super) fn borrows_tag(&self, rq: RqId) -> bool {
        self.borrowed_tag.iter().any(|&(r, b)| r == rq && b)
    }

    /// The device completed a request of the flush machinery (after C):
    /// `flush_end_io` for the flush, which moves every request of the
    /// running list on, or `mq_flush_data_end_io` for sequenced data.
    /// False for an ordinary request.
    #[inline(always)]
    pub(super) fn flush_complete(
        &mut self,
        now: Instant,
        rq: RqId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> bool {
        if self.rqs.get(rq).role == FlushRole::None {
            return false;
        }
        self.flush_complete_slow(now, rq, tr, out)
    }

    /// `flush_complete` of a flush or a sequenced request.
    fn flush_complete_slow(
        &mut self,
        now: Instant,
        rq: RqId,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> bool {
        match self.rqs.get(rq).role {
            FlushRole::FlushRq => {
                let h = self.mq(rq).hctx;
                self.borrowed_tag.retain(|&(r, _)| r != rq);
                self.release_flush_rq(now, rq, tr, out);
                let fq = &mut self.fq[h as usize];
                let running = std::mem::take(&mut fq.pending[fq.running_idx]);
                fq.running_idx ^= 1;
                for w in running {
                    let r = self.rqs.get(w);
                    let seq = 1u8 << (!r.fseq).trailing_zeros();
                    self.complete_seq(now, w, seq, tr, out);
                }
                true
            }
            FlushRole::Seq => {
                let h = self.mq(rq).hctx;
                if self.elv.is_some() {
                    self.put_driver_tag(rq);
                }
                if self.mq(rq).budget {
                    self.mq_mut(rq).budget = false;
                    self.put_budget();
                }
                self.fq[h as usize].data_in_flight -= 1;
                self.complete_seq(now, rq, DATA, tr, out);
                self.sched_restart(now, h, tr, out);
                true
            }
            _ => false,
        }
    }

    /// A completed `flush_rq`: no bios of its own; its tag (if it took one)
    /// and budget go back.
    fn release_flush_rq(&mut self, now: Instant, rq: RqId, tr: &mut Tracer, out: &mut BlockOut) {
        let m = self.info[rq.0 as usize].take().expect("flush_rq");
        self.rqs.free(rq);
        if m.budget {
            self.put_budget();
        }
        if let Some(t) = m.tag {
            self.put_tag_and_wake(now, m.hctx, t, 0, tr, out);
        }
    }
}
