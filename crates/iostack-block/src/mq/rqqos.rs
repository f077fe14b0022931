//! The rq-qos hooks of the blk-mq queue (6.x `block/blk-rq-qos.c`,
//! `blk-rq-qos.h`) with wbt (`wbt.rs`) as the one policy on the chain:
//! `rq_qos_throttle` before a request is allocated (`blk_mq_get_new_requests`),
//! `rq_qos_track` once it is, `rq_qos_issue` at `blk_mq_start_request`,
//! `rq_qos_done` when it is freed (`blk_mq_finish_request`), and the stat
//! callback's window (`blk_stat_add`, `blk_stat_timer_fn`).

use super::wbt::{self, Wbt, WBT_READ, WBT_TRACKED};
use super::{MqConfig, MqElevator, MqQueue};
use crate::bio::BioId;
use crate::queue::{BlockOut, QueueEvent};
use crate::request::RqId;
use iostack_core::{ReqFlags, Tracer};
use iostack_des::Instant;
use iostack_device::Device;

/// `wbt_enable_default` → `wbt_init` at queue registration (6.x: on for
/// every blk-mq queue), then the elevator's `wbt_disable_default` (BFQ's
/// `bfq_init_queue`) and a write of `queue/wbt_lat_usec`
/// (`queue_wb_lat_store`: -1 the default, else microseconds; manual state,
/// which BFQ does not turn off).
pub(super) fn wbt_init(
    cfg: &MqConfig,
    elv: Option<&dyn MqElevator>,
    dev: &dyn Device,
) -> Option<Wbt> {
    let default = wbt::default_latency_nsec(dev.rotational());
    let (on, lat) = match cfg.wbt_lat_usec {
        None => (elv.is_none_or(|e| e.name() != "bfq"), default),
        Some(-1) => (true, default),
        Some(us) => (true, us.max(0) as u64 * 1000),
    };
    Some(Wbt::new(
        on,
        lat,
        dev.queue_depth(),
        dev.write_cache(),
        cfg.hz,
    ))
}

impl MqQueue {
    /// wbt's state (tests and reports).
    pub fn wbt(&self) -> Option<&Wbt> {
        self.wbt.as_ref()
    }

    /// `rq_qos_throttle` → `wbt_wait`: a read stamps `last_issue`; a
    /// tracked write takes a slot below `get_limit` (`rq_wait_inc_below`)
    /// unless others already sleep, else sleeps in `rq_qos_wait` (false).
    /// Then the window is opened if it is not (`rwb_arm_timer`).
    #[inline(always)]
    pub(super) fn wbt_throttle(&mut self, now: Instant, id: BioId, out: &mut BlockOut) -> bool {
        let flags = self.bios.get(id).flags;
        let Some(w) = self.wbt.as_mut() else {
            return true;
        };
        let acct = w.bio_flags(flags);
        if acct & WBT_TRACKED == 0 {
            if acct & WBT_READ != 0 {
                w.last_issue = Some(w.jiffies(now));
            }
            return true;
        }
        let q = Wbt::rq_wait(acct);
        let limit = w.get_limit(now, flags);
        let rqw = &mut w.rqw[q];
        if !rqw.waiters.is_empty() || !rqw.inc_below(limit) {
            rqw.waiters.push_back((id, flags));
            self.stats.wbt_sleeps += 1;
            return false;
        }
        self.wbt_arm_if_idle(now, out);
        true
    }

    /// `if (!blk_stat_is_active(rwb->cb)) rwb_arm_timer(rwb)`.
    fn wbt_arm_if_idle(&mut self, now: Instant, out: &mut BlockOut) {
        if self.wbt.as_ref().is_some_and(|w| w.timer.is_none()) {
            self.wbt_arm(now, out);
        }
    }

    fn wbt_arm(&mut self, now: Instant, out: &mut BlockOut) {
        let Some(w) = self.wbt.as_mut() else {
            return;
        };
        let at = w.arm_timer(now);
        self.wbt_timer_gen += 1;
        out.events
            .push((at, QueueEvent::WbtTimer(self.wbt_timer_gen)));
    }

    /// `rq_qos_track` → `wbt_track`: the request's `wbt_flags`.
    #[inline(always)]
    pub(super) fn wbt_track(&self, flags: ReqFlags) -> u8 {
        self.wbt.as_ref().map_or(0, |w| w.bio_flags(flags))
    }

    /// `rq_qos_issue` → `wbt_issue`: the first read issued becomes the
    /// sync cookie.
    #[inline(always)]
    pub(super) fn wbt_issue(&mut self, now: Instant, rq: RqId) {
        let acct = self.mq(rq).wbt;
        if let Some(w) = self.wbt.as_mut() {
            if w.enabled() && acct & WBT_READ != 0 && w.sync.is_none() {
                w.sync = Some((rq, now));
            }
        }
    }

    /// `blk_stat_add` at completion, through `wbt_data_dir` (reads and
    /// writes; not a flush): the latency from `io_start_time_ns`.
    #[inline(always)]
    pub(super) fn wbt_stat(&mut self, write: bool, lat_ns: u64) {
        if let Some(w) = self.wbt.as_mut() {
            w.stat_add(write, lat_ns);
        }
    }

    /// `rq_qos_done` → `wbt_done` of a request with `acct`: the sync cookie
    /// and `last_comp` of reads, or `wbt_rqw_done` of a tracked write.
    /// Returns the wait queue whose sleepers are to be woken.
    #[inline(always)]
    pub(super) fn wbt_done(&mut self, now: Instant, rq: RqId, acct: u8) -> Option<usize> {
        let w = self.wbt.as_mut()?;
        if acct & WBT_TRACKED == 0 {
            if w.sync.is_some_and(|(c, _)| c == rq) {
                w.sync = None;
            }
            if acct & WBT_READ != 0 && w.enabled() {
                w.last_comp = Some(w.jiffies(now));
            }
            return None;
        }
        let q = Wbt::rq_wait(acct);
        w.rqw_done(now, q, acct).then_some(q)
    }

    /// `wake_up_all` on wait queue `q`: `rq_qos_wake_function` takes a slot
    /// for each sleeper in turn, in the waker's context, and stops at the
    /// first that gets none; the woken go on with their bios.
    pub(super) fn wbt_wake(&mut self, now: Instant, q: usize, tr: &mut Tracer, out: &mut BlockOut) {
        let mut woken = Vec::new();
        if let Some(w) = self.wbt.as_mut() {
            while let Some(&(id, rw)) = w.rqw[q].waiters.front() {
                let limit = w.get_limit(now, rw);
                if !w.rqw[q].inc_below(limit) {
                    break;
                }
                w.rqw[q].waiters.pop_front();
                woken.push(id);
            }
        }
        for id in woken {
            self.wbt_arm_if_idle(now, out);
            self.continue_submit(now, id, tr, out);
        }
    }

    /// The stat window ended (`blk_stat_timer_fn` → `wb_timer_fn`): scale,
    /// re-arm while scaled or anything is in flight, and wake everyone
    /// after a scale up (`rwb_wake_all`).
    pub(super) fn wbt_timer(
        &mut self,
        now: Instant,
        gen: u64,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if gen != self.wbt_timer_gen {
            return;
        }
        let Some(w) = self.wbt.as_mut() else {
            return;
        };
        let inflight = w.inflight();
        let wake = w.timer_fn(now);
        if w.depth.scale_step != 0 || inflight > 0 {
            self.wbt_arm(now, out);
        }
        if wake {
            for q in 0..3 {
                self.wbt_wake(now, q, tr, out);
            }
        }
    }

    /// Bios asleep in wbt (for the summary of a stuck run).
    pub(super) fn wbt_sleepers(&self) -> usize {
        self.wbt
            .as_ref()
            .map_or(0, |w| w.rqw.iter().map(|r| r.waiters.len()).sum())
    }
}
