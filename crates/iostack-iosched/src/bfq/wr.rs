//! BFQ's `low_latency` heuristics (6.x `block/bfq-iosched.c`): weight
//! raising of interactive queues (a sync queue that becomes busy after
//! `bfq_wr_min_idle_time` idle has its weight multiplied by `bfq_wr_coeff`
//! for `bfq_wr_duration`, or until it received `max_service_from_wr`
//! sectors) and of soft real-time ones (a queue whose next batch arrives
//! after `bfq_bfqq_softrt_next_start`, i.e. whose rate stays under
//! `bfq_wr_max_softrt_rate`, is raised `BFQ_SOFTRT_WEIGHT_FACTOR` times more
//! for `bfq_wr_rt_max_time`), and the large-burst detection that keeps
//! queues created together (`bfq_handle_burst`) from being raised.
//!
//! The raising duration is `rate_dur_prod / peak_rate` with the peak rate at
//! its initial estimate (`bfq_init_queue`: 2/3 of the reference rate; the
//! estimator, `bfq_update_peak_rate`, is not modelled): 3.75 s on a
//! non-rotational device, 10.5 s on a rotational one.

use super::Bfq;

/// `bfq_smallest_from_now`: minus infinity in jiffies.
pub(super) const MINUS_INF: i64 = i64::MIN / 4;
/// `bfqd->bfq_wr_coeff`, `BFQ_SOFTRT_WEIGHT_FACTOR`.
pub(super) const WR_COEFF: u64 = 30;
const SOFTRT_WEIGHT_FACTOR: u64 = 100;
/// `bfq_wr_rt_max_time`, `bfq_wr_min_idle_time`,
/// `bfq_wr_min_inter_arr_async` (ms); `bfq_wr_max_softrt_rate` (sectors/s).
const WR_RT_MAX_TIME_MS: u64 = 300;
const WR_MIN_IDLE_TIME_MS: u64 = 2000;
const WR_MIN_INTER_ARR_ASYNC_MS: u64 = 500;
const WR_MAX_SOFTRT_RATE: u64 = 7000;
/// `max_service_from_wr` (sectors).
const MAX_SERVICE_FROM_WR: u64 = 120_000;
/// `ref_rate` (sectors/µs << 16) and `ref_wr_duration` (ms), rotational
/// and non-rotational.
const REF_RATE: [u64; 2] = [14_000, 33_000];
const REF_WR_DURATION_MS: [u64; 2] = [7_000, 2_500];
/// `bfq_large_burst_thresh`, `bfq_burst_interval` (ms).
const LARGE_BURST_THRESH: u32 = 8;
const BURST_INTERVAL_MS: u64 = 180;
/// `bfq_ioprio_to_weight(IOPRIO_BE_NORM)`: only queues of the default
/// weight are raised (`entity.new_weight == 40`).
const DEFAULT_WEIGHT: u64 = 40;

/// The raising state of a `bfq_queue`.
#[derive(Debug)]
pub(super) struct WrState {
    /// `wr_coeff`: 1, `WR_COEFF` (interactive) or 100 times that (soft RT).
    pub coeff: u64,
    pub cur_max_time: i64,
    pub last_wr_start_finish: i64,
    pub start_at_switch_to_srt: i64,
    pub service_from_wr: u64,
    pub soft_rt_next_start: i64,
    pub last_idle_bklogged: i64,
    pub service_from_backlogged: u64,
    pub softrt_update: bool,
    pub just_created: bool,
    pub in_large_burst: bool,
}

impl WrState {
    /// `bfq_init_bfqq`.
    pub fn new(j: i64, sync: bool) -> Self {
        WrState {
            coeff: 1,
            cur_max_time: 0,
            last_wr_start_finish: j,
            start_at_switch_to_srt: MINUS_INF,
            service_from_wr: 0,
            soft_rt_next_start: j,
            last_idle_bklogged: 0,
            service_from_backlogged: 0,
            softrt_update: false,
            just_created: sync,
            in_large_burst: false,
        }
    }
}

/// `bfqd->burst_list`, `burst_size`, `large_burst`, `last_ins_in_burst`.
#[derive(Debug, Default)]
pub(super) struct Burst {
    pub size: u32,
    large: bool,
    last_ins: i64,
    list: Vec<usize>,
}

impl Bfq {
    pub(super) fn wr_rt_max_time(&self) -> i64 {
        self.ms_to_jiffies(WR_RT_MAX_TIME_MS)
    }

    /// `bfq_wr_duration`: `rate_dur_prod / peak_rate`, within 3 to 25 s.
    pub(super) fn wr_duration(&self) -> i64 {
        let nr = self.nonrot as usize;
        let rate_dur_prod = REF_RATE[nr] * self.ms_to_jiffies(REF_WR_DURATION_MS[nr]) as u64;
        let peak_rate = REF_RATE[nr] * 2 / 3;
        let dur = (rate_dur_prod / peak_rate) as i64;
        dur.clamp(self.ms_to_jiffies(3000), self.ms_to_jiffies(25000))
    }

    /// The raising part of `bfq_bfqq_handle_idle_busy_switch`: whether the
    /// queue is interactive (idle for long) or soft real-time, a large-burst
    /// mark forgotten after 10 s idle, `bfq_update_bfqq_wr_on_rq_arrival`.
    /// Returns whether the queue was deemed interactive.
    pub(super) fn wr_on_activation(&mut self, q: usize, old_wr: u64, j: i64) -> bool {
        let min_idle = self.ms_to_jiffies(WR_MIN_IDLE_TIME_MS);
        let long_idle = self.ms_to_jiffies(10_000);
        let e = &self.queues[q];
        let idle_for_long_time = e.dispatched == 0 && e.budget_timeout + min_idle < j;
        let in_burst = e.wr.in_large_burst;
        let default_weight = e.orig_weight == DEFAULT_WEIGHT;
        // BFQQ_TOTALLY_SEEKY: seek_history == -1.
        let soft_rt = !in_burst
            && e.seek_history != u32::MAX
            && e.wr.soft_rt_next_start < j
            && e.dispatched == 0
            && default_weight;
        let interactive = !in_burst && idle_for_long_time && default_weight;
        let deserves =
            self.cfg.low_latency && (e.wr.coeff > 1 || (e.sync && (interactive || soft_rt)));
        if !e.wr.just_created && idle_for_long_time && e.budget_timeout + long_idle < j {
            self.queues[q].wr.in_large_burst = false;
            self.burst.list.retain(|&x| x != q);
        }
        self.queues[q].wr.just_created = false;
        if self.cfg.low_latency {
            self.wr_on_rq_arrival(q, old_wr, deserves, (interactive, in_burst, soft_rt), j);
        }
        let w = &mut self.queues[q].wr;
        w.last_idle_bklogged = j;
        w.service_from_backlogged = 0;
        w.softrt_update = false;
        interactive
    }

    /// `bfq_update_bfqq_wr_on_rq_arrival`: start a raising period
    /// (interactive, or soft real-time) with a budget near the backlog, or
    /// renew, drop or switch a running one.
    fn wr_on_rq_arrival(
        &mut self,
        q: usize,
        old_wr: u64,
        deserves: bool,
        (interactive, in_burst, soft_rt): (bool, bool, bool),
        j: i64,
    ) {
        let (dur, rt_max, min_b) = (self.wr_duration(), self.wr_rt_max_time(), self.min_budget());
        let e = &mut self.queues[q];
        let w = &mut e.wr;
        if old_wr == 1 && deserves {
            if interactive {
                w.service_from_wr = 0;
                w.coeff = WR_COEFF;
                w.cur_max_time = dur;
            } else {
                w.start_at_switch_to_srt = MINUS_INF;
                w.coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                w.cur_max_time = rt_max;
            }
            e.budget = e.budget.min(2 * min_b);
        } else if old_wr > 1 {
            if interactive {
                w.coeff = WR_COEFF;
                w.cur_max_time = dur;
            } else if in_burst {
                w.coeff = 1;
            } else if soft_rt {
                if w.cur_max_time != rt_max {
                    w.start_at_switch_to_srt = w.last_wr_start_finish;
                    w.cur_max_time = rt_max;
                    w.coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                }
                w.last_wr_start_finish = j;
            }
        }
    }

    /// `bfq_add_request` on a queue already busy: an async queue whose
    /// requests come more than `bfq_wr_min_inter_arr_async` apart is raised.
    pub(super) fn wr_on_busy_arrival(&mut self, q: usize, sync: bool, j: i64) {
        let (gap, dur) = (
            self.ms_to_jiffies(WR_MIN_INTER_ARR_ASYNC_MS),
            self.wr_duration(),
        );
        let w = &mut self.queues[q].wr;
        if self.cfg.low_latency && w.coeff == 1 && !sync && w.last_wr_start_finish + gap < j {
            w.coeff = WR_COEFF;
            w.cur_max_time = dur;
        }
    }

    /// `bfq_bfqq_softrt_next_start`: the earliest arrival for which the
    /// queue's rate since it became busy stays under the soft real-time
    /// rate, and not before `slice_idle` plus 4 jiffies from now.
    fn softrt_next_start(&self, q: usize, j: i64) -> i64 {
        let w = &self.queues[q].wr;
        let hz = self.cfg.hz;
        let by_rate =
            w.last_idle_bklogged + (hz * w.service_from_backlogged / WR_MAX_SOFTRT_RATE) as i64;
        let idle = (self.cfg.slice_idle_ns * hz / 1_000_000_000) as i64;
        w.soft_rt_next_start.max(by_rate).max(j + idle + 4)
    }

    /// `bfq_bfqq_expire`'s raising bookkeeping: the end of an unraised
    /// queue's last slot, and `soft_rt_next_start` once nothing of the queue
    /// is queued or in flight (at the last completion otherwise).
    pub(super) fn wr_on_expire(&mut self, q: usize, j: i64) {
        if !self.cfg.low_latency {
            return;
        }
        if self.queues[q].wr.coeff == 1 {
            self.queues[q].wr.last_wr_start_finish = j;
        }
        let e = &self.queues[q];
        if e.sort_list.is_empty() {
            if e.dispatched == 0 {
                self.queues[q].wr.soft_rt_next_start = self.softrt_next_start(q, j);
            } else {
                self.queues[q].wr.softrt_update = true;
            }
        }
    }

    /// `bfq_completed_request`: the postponed `soft_rt_next_start` update.
    pub(super) fn wr_on_completion(&mut self, q: usize, j: i64) {
        let e = &self.queues[q];
        if e.wr.softrt_update
            && e.dispatched == 0
            && e.sort_list.is_empty()
            && e.wr.coeff != WR_COEFF
        {
            self.queues[q].wr.soft_rt_next_start = self.softrt_next_start(q, j);
        }
    }

    /// `bfq_bfqq_end_wr`.
    fn end_wr(&mut self, q: usize, j: i64) {
        let rt_max = self.wr_rt_max_time();
        let w = &mut self.queues[q].wr;
        if w.cur_max_time != rt_max {
            w.soft_rt_next_start = j;
        }
        w.coeff = 1;
        w.cur_max_time = 0;
        w.last_wr_start_finish = j;
    }

    /// `switch_back_to_interactive_wr`.
    fn switch_back_to_interactive(&mut self, q: usize) {
        let dur = self.wr_duration();
        let w = &mut self.queues[q].wr;
        w.coeff = WR_COEFF;
        w.cur_max_time = dur;
        w.last_wr_start_finish = w.start_at_switch_to_srt;
    }

    /// `bfq_update_wr_data` at each dispatch of the queue in service:
    /// raising ends in a large burst, after its duration (a soft real-time
    /// period falls back to a still running interactive one), or after
    /// `max_service_from_wr`; the weight follows at once.
    pub(super) fn update_wr_data(&mut self, q: usize, j: i64) {
        let (rt_max, dur) = (self.wr_rt_max_time(), self.wr_duration());
        let w = &self.queues[q].wr;
        if w.coeff > 1 {
            if w.in_large_burst {
                self.end_wr(q, j);
            } else if w.last_wr_start_finish + w.cur_max_time < j {
                if w.cur_max_time != rt_max || w.start_at_switch_to_srt + dur < j {
                    self.end_wr(q, j);
                } else {
                    self.switch_back_to_interactive(q);
                }
            }
            let w = &self.queues[q].wr;
            if w.coeff > 1 && w.cur_max_time != rt_max && w.service_from_wr > MAX_SERVICE_FROM_WR {
                self.end_wr(q, j);
            }
        }
        let e = &self.queues[q];
        if (e.weight > e.orig_weight) != (e.wr.coeff > 1) {
            self.update_weight(q);
        }
    }

    /// `bfq_update_io_seektime`: a soft real-time queue that turns totally
    /// seeky loses soft real-time raising.
    pub(super) fn srt_end_if_totally_seeky(&mut self, q: usize, j: i64) {
        let (rt_max, dur) = (self.wr_rt_max_time(), self.wr_duration());
        let e = &self.queues[q];
        if e.wr.coeff > 1 && e.wr.cur_max_time == rt_max && e.seek_history == u32::MAX {
            if e.wr.start_at_switch_to_srt + dur < j {
                self.end_wr(q, j);
            } else {
                self.switch_back_to_interactive(q);
            }
        }
    }

    /// `__bfq_set_in_service_queue`: a soft real-time queue's raising period
    /// moves forward by the time it waited for service.
    pub(super) fn srt_shift_wr_start(&mut self, q: usize, j: i64) {
        let rt_max = self.wr_rt_max_time();
        let e = &mut self.queues[q];
        let w = &mut e.wr;
        if w.last_wr_start_finish < j
            && w.coeff > 1
            && w.cur_max_time == rt_max
            && e.budget_timeout < j
        {
            if e.budget_timeout > w.last_wr_start_finish {
                w.last_wr_start_finish += j - e.budget_timeout;
            } else {
                w.last_wr_start_finish = j;
            }
        }
    }

    /// `bfq_handle_burst`: a queue created within `bfq_burst_interval` of
    /// the last one joins the burst; at `bfq_large_burst_thresh` queues the
    /// burst is large and its queues are never raised.
    pub(super) fn handle_burst(&mut self, q: usize, j: i64) {
        let w = &self.queues[q].wr;
        if self.burst.list.contains(&q) || w.in_large_burst {
            return;
        }
        let interval = self.ms_to_jiffies(BURST_INTERVAL_MS);
        if self.burst.last_ins + interval < j {
            self.burst.large = false;
            // bfq_reset_burst_list.
            self.burst.list.clear();
            if self.busy_counts().0 == 0 {
                self.burst.list.push(q);
                self.burst.size = 1;
            } else {
                self.burst.size = 0;
            }
        } else if self.burst.large {
            self.queues[q].wr.in_large_burst = true;
        } else {
            // bfq_add_to_burst.
            self.burst.size += 1;
            if self.burst.size == LARGE_BURST_THRESH {
                self.burst.large = true;
                for i in std::mem::take(&mut self.burst.list) {
                    self.queues[i].wr.in_large_burst = true;
                }
                self.queues[q].wr.in_large_burst = true;
            } else {
                self.burst.list.push(q);
            }
        }
        self.burst.last_ins = j;
    }
}
