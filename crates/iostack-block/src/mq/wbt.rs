//! Writeback throttling, the rq-qos policy `wbt` (Linux 6.x `block/blk-wbt.c`
//! over `block/blk-rq-qos.c`): buffered writeback writes and discards take
//! an in-flight slot below a limit before they get a request, and sleep in
//! `rq_qos_wait` when there is none; a completion wakes them
//! (`wbt_rqw_done`). Every window (`win_nsec`, 100 ms) `wb_timer_fn` looks
//! at the minimum read completion latency of the window against
//! `min_lat_nsec` and scales the write depth down (halving) or up
//! (`rq_depth_scale_down` / `_up`), which `calc_wb_limits` turns into the
//! `wb_normal` and `wb_background` limits.
//!
//! This file is the policy, without the queue: the queue calls it at
//! `rq_qos_throttle`, `_track`, `_issue`, `_done` and the stat callback.

use crate::bio::BioId;
use crate::request::RqId;
use iostack_core::ReqFlags;
use iostack_des::Instant;
use std::collections::VecDeque;

/// `RWB_DEF_DEPTH`.
pub const RWB_DEF_DEPTH: u32 = 16;
/// `RWB_WINDOW_NSEC`: 100 ms.
pub const RWB_WINDOW_NSEC: u64 = 100_000_000;
/// `RWB_MIN_WRITE_SAMPLES`.
const RWB_MIN_WRITE_SAMPLES: u64 = 3;
/// `RWB_UNKNOWN_BUMP`.
const RWB_UNKNOWN_BUMP: u32 = 5;

/// `enum wbt_flags`, per request (`rq->wbt_flags`).
pub const WBT_TRACKED: u8 = 1;
pub const WBT_READ: u8 = 2;
/// `WBT_KSWAPD`: the simulator has no kswapd, so it is never set.
pub const WBT_KSWAPD: u8 = 4;
pub const WBT_DISCARD: u8 = 8;

/// `wbt_default_latency_nsec`: 2 ms non-rotational, 75 ms rotational.
pub fn default_latency_nsec(rotational: bool) -> u64 {
    if rotational {
        75_000_000
    } else {
        2_000_000
    }
}

/// `struct rq_depth` (`blk-rq-qos.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RqDepth {
    pub max_depth: u32,
    pub scale_step: i32,
    pub scaled_max: bool,
    pub queue_depth: u32,
    pub default_depth: u32,
}

impl RqDepth {
    pub fn new(queue_depth: u32) -> Self {
        let mut d = RqDepth {
            max_depth: 0,
            scale_step: 0,
            scaled_max: false,
            queue_depth,
            default_depth: RWB_DEF_DEPTH,
        };
        d.calc_max_depth();
        d
    }

    /// `rq_depth_calc_max_depth`: true if scaling up can go no further.
    pub fn calc_max_depth(&mut self) -> bool {
        if self.queue_depth == 1 {
            // A QD=1 device gets 2 (one ready when one completes), 1 once
            // scaled down.
            if self.scale_step > 0 {
                self.max_depth = 1;
                return false;
            }
            self.max_depth = 2;
            return true;
        }
        let mut ret = false;
        let mut depth = self.default_depth.min(self.queue_depth);
        if self.scale_step > 0 {
            depth = 1 + ((depth - 1) >> self.scale_step.min(31));
        } else if self.scale_step < 0 {
            let maxd = 3 * self.queue_depth / 4;
            let shift = (-self.scale_step).min(31) as u32;
            depth = 1u64
                .saturating_add(((depth - 1) as u64) << shift)
                .min(u32::MAX as u64) as u32;
            if depth > maxd {
                depth = maxd;
                ret = true;
            }
        }
        self.max_depth = depth;
        ret
    }

    /// `rq_depth_scale_up` (6.x returns whether it moved).
    pub fn scale_up(&mut self) -> bool {
        if self.scaled_max {
            return false;
        }
        self.scale_step -= 1;
        self.scaled_max = self.calc_max_depth();
        true
    }

    /// `rq_depth_scale_down`: a latency violation (`hard_throttle`) from a
    /// negative step goes straight to 0.
    pub fn scale_down(&mut self, hard_throttle: bool) -> bool {
        if self.max_depth == 1 {
            return false;
        }
        if self.scale_step < 0 && hard_throttle {
            self.scale_step = 0;
        } else {
            self.scale_step += 1;
        }
        self.scaled_max = false;
        self.calc_max_depth();
        true
    }
}

/// `calc_wb_limits`: (`wb_normal`, `wb_background`) for `max_depth`.
pub fn calc_wb_limits(min_lat_nsec: u64, max_depth: u32) -> (u32, u32) {
    if min_lat_nsec == 0 {
        (0, 0)
    } else if max_depth <= 2 {
        (max_depth, 1)
    } else {
        // (max_depth + 1) / 2 and (max_depth + 3) / 4.
        (max_depth.div_ceil(2), max_depth.div_ceil(4))
    }
}

/// `wbt_should_throttle`: writes other than O_DIRECT's (`REQ_SYNC |
/// REQ_IDLE`), and discards.
pub fn should_throttle(flags: ReqFlags) -> bool {
    if flags.contains(ReqFlags::DISCARD) {
        return true;
    }
    flags.is_write() && !flags.contains(ReqFlags::SYNC.union(ReqFlags::IDLE))
}

/// `struct rq_wait`: the in-flight count and the sleepers, oldest first,
/// each with its bio's `opf` (`wbt_wait_data.rw`).
#[derive(Default, Debug)]
pub struct RqWait {
    pub inflight: u32,
    pub waiters: VecDeque<(BioId, ReqFlags)>,
}

impl RqWait {
    /// `rq_wait_inc_below`.
    pub fn inc_below(&mut self, limit: u32) -> bool {
        if self.inflight >= limit {
            return false;
        }
        self.inflight += 1;
        true
    }
}

/// `struct blk_rq_stat` of one window and direction: what `wb_timer_fn`
/// reads (the minimum and the sample count).
#[derive(Clone, Copy, Debug, Default)]
pub struct RqStat {
    pub min: u64,
    pub nr_samples: u64,
}

impl RqStat {
    fn add(&mut self, v: u64) {
        self.min = if self.nr_samples == 0 {
            v
        } else {
            self.min.min(v)
        };
        self.nr_samples += 1;
    }
}

/// `latency_exceeded`'s verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatStatus {
    Ok,
    Unknown,
    UnknownWrites,
    Exceeded,
}

/// `struct rq_wb`.
#[derive(Debug)]
pub struct Wbt {
    /// `enable_state != WBT_STATE_OFF_DEFAULT`.
    pub on: bool,
    pub min_lat_nsec: u64,
    pub win_nsec: u64,
    pub cur_win_nsec: u64,
    /// `rwb->wc`: the device has a volatile write cache.
    pub wc: bool,
    pub depth: RqDepth,
    pub wb_normal: u32,
    pub wb_background: u32,
    pub unknown_cnt: u32,
    /// `rq_wait[WBT_RWQ_BG]`, `[WBT_RWQ_KSWAPD]`, `[WBT_RWQ_DISCARD]`.
    pub rqw: [RqWait; 3],
    /// `last_issue` / `last_comp` of reads, in jiffies. `wbt_init` stamps
    /// both at queue registration, at boot, long (more than HZ/10) before
    /// the simulated workload starts: `None` until a read.
    pub last_issue: Option<u64>,
    pub last_comp: Option<u64>,
    /// `sync_cookie` and `sync_issue`: the first read issued and not yet done.
    pub sync: Option<(RqId, Instant)>,
    /// The stat callback's window: READ and WRITE, and when it expires
    /// (`blk_stat_is_active`).
    pub stat: [RqStat; 2],
    pub timer: Option<Instant>,
    /// `HZ`, for the jiffies of `close_io`.
    pub hz: u64,
    /// The bdi's `wb->dirty_sleep`: when a dirtier last paused in
    /// `balance_dirty_pages`, in jiffies.
    pub dirty_sleep: Option<u64>,
}

impl Wbt {
    /// `wbt_init`: `min_lat_nsec` (0 is off), the queue depth and write cache.
    pub fn new(on: bool, min_lat_nsec: u64, queue_depth: u32, wc: bool, hz: u64) -> Self {
        let depth = RqDepth::new(queue_depth);
        let (wb_normal, wb_background) = calc_wb_limits(min_lat_nsec, depth.max_depth);
        Wbt {
            on,
            min_lat_nsec,
            win_nsec: RWB_WINDOW_NSEC,
            cur_win_nsec: RWB_WINDOW_NSEC,
            wc,
            depth,
            wb_normal,
            wb_background,
            unknown_cnt: 0,
            rqw: Default::default(),
            last_issue: None,
            last_comp: None,
            sync: None,
            stat: [RqStat::default(); 2],
            timer: None,
            hz: hz.max(1),
            dirty_sleep: None,
        }
    }

    /// `rwb_enabled`.
    pub fn enabled(&self) -> bool {
        self.on && self.wb_normal != 0
    }

    pub fn jiffies(&self, now: Instant) -> u64 {
        now.as_ns() * self.hz / 1_000_000_000
    }

    /// `bio_to_wbt_flags` (no kswapd).
    pub fn bio_flags(&self, flags: ReqFlags) -> u8 {
        if !self.enabled() {
            return 0;
        }
        if !flags.is_write() && !flags.contains(ReqFlags::DISCARD) {
            return WBT_READ;
        }
        if should_throttle(flags) {
            let d = if flags.contains(ReqFlags::DISCARD) {
                WBT_DISCARD
            } else {
                0
            };
            return WBT_TRACKED | d;
        }
        0
    }

    /// `get_rq_wait`.
    pub fn rq_wait(acct: u8) -> usize {
        if acct & WBT_KSWAPD != 0 {
            1
        } else if acct & WBT_DISCARD != 0 {
            2
        } else {
            0
        }
    }

    /// `wb_recent_wait`: a dirtier paused in `balance_dirty_pages` within
    /// the last second (HZ).
    fn recent_wait(&self, now: Instant) -> bool {
        let j = self.jiffies(now);
        self.dirty_sleep.is_some_and(|t| j < t + self.hz)
    }

    /// `close_io`: a read issued or completed within the last HZ/10.
    fn close_io(&self, now: Instant) -> bool {
        let j = self.jiffies(now);
        let recent = |t: Option<u64>| t.is_some_and(|t| j < t + self.hz / 10);
        recent(self.last_issue) || recent(self.last_comp)
    }

    /// `get_limit` for a bio of `rw` (no kswapd).
    pub fn get_limit(&self, now: Instant, rw: ReqFlags) -> u32 {
        if !self.enabled() {
            return u32::MAX;
        }
        if rw.contains(ReqFlags::DISCARD) {
            return self.wb_background;
        }
        // REQ_HIPRIO = REQ_SYNC | REQ_META | REQ_PRIO, any of them.
        if rw.contains(ReqFlags::SYNC) || rw.contains(ReqFlags::META) || self.recent_wait(now) {
            self.depth.max_depth
        } else if rw.contains(ReqFlags::BACKGROUND) || self.close_io(now) {
            self.wb_background
        } else {
            self.wb_normal
        }
    }

    /// `wbt_rqw_done` after the in-flight count of queue `q` dropped: whether
    /// its sleepers are to be woken (`wake_up_all`).
    pub fn rqw_done(&mut self, now: Instant, q: usize, acct: u8) -> bool {
        let rqw = &mut self.rqw[q];
        rqw.inflight -= 1;
        let inflight = rqw.inflight;
        if !self.enabled() {
            return true;
        }
        let limit = if acct & WBT_DISCARD != 0 {
            self.wb_background
        } else if self.wc && !self.recent_wait(now) {
            // rwb->wc && !wb_recent_wait(rwb): drop to empty first.
            0
        } else {
            self.wb_normal
        };
        if inflight != 0 && inflight >= limit {
            return false;
        }
        let diff = limit as i64 - inflight as i64;
        !self.rqw[q].waiters.is_empty()
            && (inflight == 0 || diff >= (self.wb_background / 2) as i64)
    }

    /// `blk_stat_add` through `wbt_data_dir`, while the window is open.
    pub fn stat_add(&mut self, write: bool, lat_ns: u64) {
        if self.timer.is_some() {
            self.stat[write as usize].add(lat_ns);
        }
    }

    pub fn inflight(&self) -> u32 {
        self.rqw.iter().map(|r| r.inflight).sum()
    }

    /// `latency_exceeded`.
    pub fn latency_exceeded(&self, now: Instant) -> LatStatus {
        let [read, write] = self.stat;
        let thislat = self.sync.map_or(0, |(_, at)| now.since(at).as_ns());
        if thislat > self.cur_win_nsec || (thislat > self.min_lat_nsec && read.nr_samples == 0) {
            return LatStatus::Exceeded;
        }
        // stat_sample_valid: one read and RWB_MIN_WRITE_SAMPLES writes.
        if !(read.nr_samples >= 1 && write.nr_samples >= RWB_MIN_WRITE_SAMPLES) {
            if write.nr_samples > 0 || self.recent_wait(now) || self.inflight() > 0 {
                return LatStatus::UnknownWrites;
            }
            return LatStatus::Unknown;
        }
        if read.min > self.min_lat_nsec {
            return LatStatus::Exceeded;
        }
        LatStatus::Ok
    }

    fn limits(&mut self) {
        (self.wb_normal, self.wb_background) =
            calc_wb_limits(self.min_lat_nsec, self.depth.max_depth);
    }

    /// `scale_up`: true if the sleepers are to be woken (`rwb_wake_all`).
    pub fn scale_up(&mut self) -> bool {
        if !self.depth.scale_up() {
            return false;
        }
        self.limits();
        self.unknown_cnt = 0;
        true
    }

    /// `scale_down`.
    pub fn scale_down(&mut self, hard_throttle: bool) {
        if self.depth.scale_down(hard_throttle) {
            self.limits();
            self.unknown_cnt = 0;
        }
    }

    /// `wb_timer_fn` at the window's end: the verdict, the scaling, and
    /// whether to wake every sleeper. The caller re-arms (`rwb_arm_timer`)
    /// if `scale_step` or anything is in flight.
    pub fn timer_fn(&mut self, now: Instant) -> bool {
        self.timer = None;
        match self.latency_exceeded(now) {
            LatStatus::Exceeded => {
                self.scale_down(true);
                false
            }
            LatStatus::Ok | LatStatus::UnknownWrites => self.scale_up(),
            LatStatus::Unknown => {
                self.unknown_cnt += 1;
                if self.unknown_cnt < RWB_UNKNOWN_BUMP {
                    return false;
                }
                if self.depth.scale_step > 0 {
                    return self.scale_up();
                }
                if self.depth.scale_step < 0 {
                    self.scale_down(false);
                }
                false
            }
        }
    }

    /// `rwb_arm_timer`: the window shrinks to win / sqrt(step + 1) after
    /// scaling down (`int_sqrt((step + 1) << 8)`), and
    /// `blk_stat_activate_nsecs` clears the stats. Returns the expiry.
    pub fn arm_timer(&mut self, now: Instant) -> Instant {
        self.cur_win_nsec = if self.depth.scale_step > 0 {
            let s = ((self.depth.scale_step as u64) + 1) << 8;
            (self.win_nsec << 4) / int_sqrt(s)
        } else {
            self.win_nsec
        };
        self.stat = [RqStat::default(); 2];
        let at = now + iostack_des::Duration(self.cur_win_nsec);
        self.timer = Some(at);
        at
    }

    /// `wbt_update_limits` (a new `min_lat_nsec` or queue depth).
    pub fn update_limits(&mut self) {
        self.depth.scale_step = 0;
        self.depth.scaled_max = false;
        self.depth.calc_max_depth();
        self.limits();
    }
}

/// `int_sqrt` (`lib/math/int_sqrt.c`): the integer square root, rounded
/// down, bit by bit.
pub fn int_sqrt(x: u64) -> u64 {
    if x < 2 {
        return x;
    }
    let mut m: u64 = 1 << ((63 - x.leading_zeros()) & !1);
    let (mut x, mut y) = (x, 0u64);
    while m != 0 {
        let b = y + m;
        y >>= 1;
        if x >= b {
            x -= b;
            y += m;
        }
        m >>= 2;
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rq_depth_calc_max_depth` + `calc_wb_limits` for a few queue depths,
    /// worked by hand from the kernel's arithmetic: max = min(16, qd) (2 for
    /// QD=1), normal = (max+1)/2, background = (max+3)/4, (max, 1) at <= 2.
    #[test]
    fn limits_from_queue_depth() {
        for (qd, max, normal, bg) in [
            (1, 2, 2, 1),
            (2, 2, 2, 1),
            (4, 4, 2, 1),
            (7, 7, 4, 2),
            (31, 16, 8, 4),
            (32, 16, 8, 4),
            (1023, 16, 8, 4),
        ] {
            let d = RqDepth::new(qd);
            assert_eq!(d.max_depth, max, "qd {qd}");
            assert_eq!(
                calc_wb_limits(2_000_000, d.max_depth),
                (normal, bg),
                "qd {qd}"
            );
        }
        assert_eq!(calc_wb_limits(0, 16), (0, 0), "min_lat_nsec 0 is off");
        assert!(!Wbt::new(true, 0, 32, true, 1000).enabled());
    }

    fn stat(read_min: u64, reads: u64, writes: u64) -> [RqStat; 2] {
        [
            RqStat {
                min: read_min,
                nr_samples: reads,
            },
            RqStat {
                min: 1,
                nr_samples: writes,
            },
        ]
    }

    /// A window whose minimum read latency exceeds `min_lat_nsec` scales
    /// down: step 1 halves (1 + 15 >> 1 = 8: normal 4, background 2), step 2
    /// again (4: 2, 1); the window shrinks to 100 ms * 16 / int_sqrt(512)
    /// = 1600 ms / 22. A good window scales back up.
    #[test]
    fn scale_down_on_read_latency_halves_the_limits() {
        let mut w = Wbt::new(true, 2_000_000, 64, false, 1000);
        assert_eq!((w.wb_normal, w.wb_background), (8, 4));
        let t0 = Instant(0);
        w.arm_timer(t0);
        w.stat = stat(2_000_001, 5, 10);
        assert_eq!(w.latency_exceeded(t0), LatStatus::Exceeded);
        w.timer_fn(t0);
        assert_eq!((w.depth.scale_step, w.depth.max_depth), (1, 8));
        assert_eq!((w.wb_normal, w.wb_background), (4, 2));
        w.arm_timer(t0);
        assert_eq!(w.cur_win_nsec, 1_600_000_000 / 22);
        w.stat = stat(3_000_000, 1, 3);
        w.timer_fn(t0);
        assert_eq!((w.depth.max_depth, w.wb_normal, w.wb_background), (4, 2, 1));
        // At the target exactly is not over it: scale up.
        w.arm_timer(t0);
        w.stat = stat(2_000_000, 1, 3);
        assert_eq!(w.latency_exceeded(t0), LatStatus::Ok);
        assert!(w.timer_fn(t0));
        assert_eq!((w.depth.scale_step, w.depth.max_depth), (1, 8));
        // Too few writes: no verdict on reads; writes in flight -> up.
        w.stat = stat(9_000_000, 4, 2);
        assert_eq!(w.latency_exceeded(t0), LatStatus::UnknownWrites);
    }

    /// Writes only (LAT_UNKNOWN_WRITES) scale past the default, up to 3/4 of
    /// the queue depth; a violation from there snaps back to step 0.
    #[test]
    fn writes_only_scale_up_to_three_quarters() {
        let mut w = Wbt::new(true, 2_000_000, 32, false, 1000);
        for _ in 0..5 {
            w.stat = stat(0, 0, 10);
            w.timer_fn(Instant(0));
        }
        // 1 + (15 << 1) = 31 > 24 = 3 * 32 / 4: capped, scaled_max.
        assert_eq!((w.depth.scale_step, w.depth.max_depth), (-1, 24));
        assert!(w.depth.scaled_max);
        w.stat = stat(5_000_000, 1, 3);
        w.timer_fn(Instant(0));
        assert_eq!((w.depth.scale_step, w.depth.max_depth), (0, 16));
    }

    /// `wbt_should_throttle` and `get_limit`: O_DIRECT writes (SYNC|IDLE)
    /// and reads pass; a sync writeback write gets the max depth, a
    /// background one `wb_background`, others `wb_normal`; a recent read
    /// (`close_io`, HZ/10) lowers it to `wb_background`.
    #[test]
    fn what_is_throttled_and_at_which_limit() {
        let w = ReqFlags::WRITE;
        assert!(!should_throttle(ReqFlags::READ));
        assert!(!should_throttle(w | ReqFlags::SYNC | ReqFlags::IDLE));
        assert!(should_throttle(w));
        assert!(should_throttle(w | ReqFlags::SYNC));
        assert!(should_throttle(ReqFlags::DISCARD | w));
        let mut r = Wbt::new(true, 2_000_000, 32, true, 1000);
        let late = Instant(10_000_000_000);
        assert_eq!(r.get_limit(late, w | ReqFlags::SYNC), 16);
        assert_eq!(r.get_limit(late, w | ReqFlags::BACKGROUND), 4);
        assert_eq!(r.get_limit(late, w), 8);
        r.last_comp = Some(r.jiffies(late) - 99);
        assert_eq!(r.get_limit(late, w), 4);
        r.last_comp = Some(r.jiffies(late) - 100);
        assert_eq!(r.get_limit(late, w), 8);
        // wb_recent_wait: a dirtier paused within HZ -> the max depth.
        r.dirty_sleep = Some(r.jiffies(late) - 999);
        assert_eq!(r.get_limit(late, w), 16);
        r.dirty_sleep = Some(r.jiffies(late) - 1000);
        assert_eq!(r.get_limit(late, w), 8);
    }

    /// `wbt_rqw_done`: with a write cache and no recent dirtier wait, the
    /// sleepers wait until nothing is in flight; otherwise until the count
    /// is below wb_normal by at least wb_background / 2.
    #[test]
    fn wake_rule() {
        let now = Instant(5_000_000_000);
        let mut r = Wbt::new(true, 2_000_000, 32, true, 1000);
        r.rqw[0].inflight = 3;
        r.rqw[0].waiters.push_back((BioId(1), ReqFlags::WRITE));
        assert!(!r.rqw_done(now, 0, WBT_TRACKED), "2 in flight, wc");
        assert!(!r.rqw_done(now, 0, WBT_TRACKED), "1 in flight, wc");
        assert!(r.rqw_done(now, 0, WBT_TRACKED), "0 in flight");
        r.dirty_sleep = Some(r.jiffies(now));
        r.rqw[0].inflight = 8;
        // limit wb_normal 8: 7 -> diff 1 < 2; 6 -> diff 2 >= 4 / 2.
        assert!(!r.rqw_done(now, 0, WBT_TRACKED));
        assert!(r.rqw_done(now, 0, WBT_TRACKED));
    }

    #[test]
    fn int_sqrt_rounds_down() {
        for x in 0..5000u64 {
            let r = int_sqrt(x);
            assert!(r * r <= x && (r + 1) * (r + 1) > x, "{x}");
        }
    }
}
