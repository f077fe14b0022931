//! BFQ's I/O injection (6.x `block/bfq-iosched.c`): while the queue in
//! service is empty and the device is idled for it, requests of other
//! queues are dispatched as long as fewer than its `inject_limit` requests
//! are in flight (`bfq_choose_bfqq_for_injection`). The limit adapts to the
//! total service time of the queue's first requests after it went empty
//! (`bfq_update_inject_limit`): measured with nothing in flight it is the
//! baseline; with injected I/O in flight a time under 1.5 times the
//! baseline raises the limit, one above lowers it. Pending async I/O of the
//! same process is injected first (`bfq_select_queue`).
//!
//! Model lacks the waker and blocked queues (`bfq_check_waker`).

use super::{Bfq, SECT_THR_NONROT};
use iostack_block::{RequestPool, RqId};

/// A queue's `inject_limit`, `decrease_time_jif`, `last_serv_time_ns`.
#[derive(Debug)]
pub(super) struct InjState {
    pub limit: u32,
    pub decrease_time_jif: i64,
    pub last_serv_time_ns: u64,
}

impl InjState {
    /// `bfq_init_bfqq` (a zeroed limit; `decrease_time_jif` now).
    pub fn new(j: i64) -> Self {
        InjState {
            limit: 0,
            decrease_time_jif: j,
            last_serv_time_ns: 0,
        }
    }
}

/// `bfqd->waited_rq`, `wait_dispatch`, `rqs_injected`,
/// `last_empty_occupied_ns`, `last_idling_start_jiffies`.
#[derive(Debug, Default)]
pub(super) struct InjData {
    pub waited_rq: Option<RqId>,
    pub wait_dispatch: bool,
    pub rqs_injected: bool,
    pub last_empty_occupied_ns: u64,
    pub last_idling_start_jiffies: i64,
}

impl Bfq {
    /// `bfq_reset_inject_limit`: 0 for a queue with a short think time, 1
    /// otherwise; the baseline is measured again.
    pub(super) fn reset_inject_limit(&mut self, q: usize, j: i64) {
        self.inj.waited_rq = None;
        let e = &mut self.queues[q];
        e.inj.last_serv_time_ns = 0;
        e.inj.limit = if e.has_short_ttime { 0 } else { 1 };
        e.inj.decrease_time_jif = j;
    }

    /// `bfq_update_has_short_ttime`: a think-time state change resets the
    /// limit while no baseline exists (after 100 ms, or at once to long).
    pub(super) fn short_ttime_changed(&mut self, q: usize, j: i64) {
        let e = &self.queues[q];
        let settle = self.ms_to_jiffies(100);
        if e.inj.last_serv_time_ns == 0
            && (e.inj.decrease_time_jif + settle <= j || !e.has_short_ttime)
        {
            self.reset_inject_limit(q, j);
        }
    }

    /// `bfq_add_request` for the first request of a sync queue: the limit
    /// is reset every second; in service, with nothing in flight or with
    /// injected I/O in flight, the request's total service time is sampled
    /// (from now until its completion).
    pub(super) fn inject_on_first_request(&mut self, q: usize, now: u64) {
        let j = self.jiffies(now);
        if self.queues[q].inj.decrease_time_jif + self.ms_to_jiffies(1000) <= j {
            self.reset_inject_limit(q, j);
        }
        let e = &self.queues[q];
        let in_driver = self.rq_in_driver;
        if self.in_service == Some(q)
            && (in_driver == 0
                || (e.inj.last_serv_time_ns > 0 && self.inj.rqs_injected && in_driver > 0))
            && e.inj.decrease_time_jif + self.ms_to_jiffies(10) <= j
        {
            self.inj.last_empty_occupied_ns = now;
            self.inj.wait_dispatch = true;
            if in_driver == 0 {
                self.inj.rqs_injected = false;
            }
        }
    }

    /// `bfq_update_inject_limit` at the completion of the sampled request
    /// (before it leaves `rq_in_driver`).
    pub(super) fn update_inject_limit(&mut self, q: usize, now: u64) {
        let tot = now - self.inj.last_empty_occupied_ns;
        let (injected, in_driver, max_in_driver) = (
            self.inj.rqs_injected,
            self.rq_in_driver,
            self.max_rq_in_driver,
        );
        let j = self.jiffies(now);
        let s = &mut self.queues[q].inj;
        let old = s.limit;
        if s.last_serv_time_ns > 0 && injected {
            let threshold = (s.last_serv_time_ns * 3) >> 1;
            if tot >= threshold && old > 0 {
                s.limit -= 1;
                s.decrease_time_jif = j;
            } else if tot < threshold && old <= max_in_driver {
                s.limit += 1;
            }
        }
        if (s.last_serv_time_ns == 0 && in_driver == 1) || tot < s.last_serv_time_ns {
            if s.last_serv_time_ns == 0 {
                s.limit = old.max(1);
            }
            s.last_serv_time_ns = tot;
        } else if !injected && in_driver == 1 {
            s.last_serv_time_ns = tot;
        }
        self.inj.waited_rq = None;
        self.inj.rqs_injected = false;
    }

    /// The injection branch of `bfq_select_queue` for the empty queue `q`
    /// in service that is idled for: the same process's async I/O, else,
    /// unless idling boosts throughput or a raised queue with a short think
    /// time must be protected, `bfq_choose_bfqq_for_injection`.
    pub(super) fn injection_queue(
        &mut self,
        rqs: &RequestPool,
        q: usize,
        now: u64,
    ) -> Option<usize> {
        let e = &self.queues[q];
        if e.sync {
            if let Some(&a) = self.by_owner.get(&e.async_key) {
                let ae = &self.queues[a];
                if let Some(next) = ae.next_rq.filter(|_| ae.busy) {
                    if rqs.get(next).pid == e.pid
                        && self.serv_to_charge(next, a) <= self.budget_left(a)
                    {
                        return Some(a);
                    }
                }
            }
        }
        let wr_busy = self.busy_counts().1;
        let e = &self.queues[q];
        if !self.idling_boosts_thr(q) && (e.wr.coeff == 1 || wr_busy > 1 || !e.has_short_ttime) {
            return self.choose_for_injection(q, now);
        }
        None
    }

    /// `bfq_choose_bfqq_for_injection`: the first queue on `active_list`
    /// with a request within its budget, raised if the queue in service is
    /// raised with a short think time; on a non-rotational device a large
    /// request only into an empty drive.
    fn choose_for_injection(&mut self, q: usize, now: u64) -> Option<usize> {
        let s = &self.queues[q];
        let mut limit = s.inj.limit;
        let always = s.wr.coeff == 1 || !s.has_short_ttime;
        // The kernel adds bfq_slice_idle (ns) to a time in jiffies here, so
        // this temporary raise of the limit to 1 does not happen in practice.
        let idle_ns = self.cfg.slice_idle_ns as i64;
        if limit == 0
            && s.inj.last_serv_time_ns == 0
            && s.wait_request
            && self.inj.last_idling_start_jiffies.saturating_add(idle_ns) <= self.jiffies(now)
        {
            limit = 1;
        }
        if self.rq_in_driver >= limit {
            return None;
        }
        let found = self.active_list.iter().copied().find(|&c| {
            let e = &self.queues[c];
            let Some(next) = e.next_rq else { return false };
            (always || e.wr.coeff > 1)
                && self.serv_to_charge(next, c) <= self.budget_left(c)
                && !(self.nonrot
                    && self.b(next).sectors >= SECT_THR_NONROT
                    && self.rq_in_driver >= 1)
        });
        if found.is_some() {
            self.inj.rqs_injected = true;
        }
        found
    }
}
