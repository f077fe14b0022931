//! anticipatory (AS, V2632 `block/as-iosched.c`; removed in 2.6.33): deadline-like
//! per-class sort trees and FIFOs (indexed by `rq_is_sync`, not by data direction),
//! batches alternating sync and async requests bounded by `read_batch_expire` /
//! `write_batch_expire`, and, after a sync request of a process is dispatched, the
//! anticipation state machine: the disk may be kept idle for up to `antic_expire`
//! waiting for that process's next nearby request, decided from per-process
//! (`pid` as the io_context) think-time and seek-distance statistics kept in the
//! kernel's 8-bit fixed point with 7/8 decay. All times are integer jiffies.
//!
//! Blktrace messages (the kernel has none for AS) name the state transitions:
//! `as antic_waitreq pid=P`, `as antic_waitnext pid=P`, `as antic_stop`,
//! `as antic_timeout pid=P`, `as batch sync|async`.

use crate::elv_rb::ElvRb;
use iostack_block::{Bio, Elevator, ElvCtx, MayQueue, MergeKind, Placement, RequestPool, RqId};
use iostack_core::{Sector, TunableDef, Tunables, Unit};
use iostack_des::Instant;
use std::collections::{BTreeMap, BTreeSet};

/// `BLK_RW_ASYNC` / `BLK_RW_SYNC`: the index of the sort trees and FIFOs.
const ASYNC: usize = 0;
const SYNC: usize = 1;

/// `MAXBACK`: maximum backward seek (sectors) `as_choose_req` accepts.
const MAXBACK: u64 = 1024 * 1024;
/// `BACK_PENALTY`: a backward seek costs twice a forward one.
const BACK_PENALTY: u64 = 2;

pub static TUNABLES: &[TunableDef] = &[
    TunableDef {
        name: "iosched/anticipatory/read_expire",
        unit: Unit::Ms,
        default: |_| 125,
        min: 0,
        max: i32::MAX as i64,
        doc: "FIFO deadline of a sync request after insertion (HZ/8; the default is \
              HZ/8 jiffies exactly, other values go through msecs_to_jiffies).",
    },
    TunableDef {
        name: "iosched/anticipatory/write_expire",
        unit: Unit::Ms,
        default: |_| 250,
        min: 0,
        max: i32::MAX as i64,
        doc: "FIFO deadline of an async request after insertion (HZ/4).",
    },
    TunableDef {
        name: "iosched/anticipatory/read_batch_expire",
        unit: Unit::Ms,
        default: |_| 500,
        min: 0,
        max: i32::MAX as i64,
        doc: "How long a batch of sync requests runs before writes are looked at (HZ/2).",
    },
    TunableDef {
        name: "iosched/anticipatory/write_batch_expire",
        unit: Unit::Ms,
        default: |_| 125,
        min: 0,
        max: i32::MAX as i64,
        doc: "Target length of a batch of async requests; also sizes the write batch \
              count (HZ/8).",
    },
    TunableDef {
        name: "iosched/anticipatory/antic_expire",
        unit: Unit::Ms,
        default: |_| 6,
        min: 0,
        max: i32::MAX as i64,
        doc: "Longest time the disk is kept idle anticipating the next request of the \
              process whose sync request was last dispatched; 0 disables anticipation \
              (default HZ/150 jiffies, at least 1).",
    },
];

#[derive(Clone, Debug)]
pub struct AsConfig {
    /// `fifo_expire[ASYNC, SYNC]` in jiffies.
    pub fifo_expire: [u64; 2],
    /// `batch_expire[ASYNC, SYNC]` in jiffies.
    pub batch_expire: [u64; 2],
    /// `antic_expire` in jiffies.
    pub antic_expire: u64,
    pub hz: u64,
}

impl AsConfig {
    /// `as_init_queue` defaults, or the sysfs stores (`msecs_to_jiffies`) when a
    /// tunable was changed from its default.
    pub fn from_tunables(t: &Tunables) -> Self {
        let hz = t.get_u64("kernel/hz");
        let j = |name: &str, default_ms: u64, default_jiffies: u64| {
            let ms = t.get_u64(name);
            if ms == default_ms {
                default_jiffies
            } else {
                (ms * hz).div_ceil(1000)
            }
        };
        AsConfig {
            fifo_expire: [
                j("iosched/anticipatory/write_expire", 250, hz / 4),
                j("iosched/anticipatory/read_expire", 125, hz / 8),
            ],
            batch_expire: [
                j("iosched/anticipatory/write_batch_expire", 125, hz / 8),
                j("iosched/anticipatory/read_batch_expire", 500, hz / 2),
            ],
            antic_expire: j("iosched/anticipatory/antic_expire", 6, (hz / 150).max(1)),
            hz,
        }
    }
}

/// `enum anticipation_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnticStatus {
    /// Not anticipating (normal operation).
    Off,
    /// The last sync request of the process has not completed yet.
    WaitReq,
    /// Anticipating the process's next request (the timer runs).
    WaitNext,
    /// Found a candidate or timed out.
    Finished,
}

/// `struct as_io_context`, keyed by pid. Processes never exit in the simulator,
/// so `AS_TASK_RUNNING` is always set.
#[derive(Clone, Debug, Default)]
struct Aic {
    /// `AS_TASK_IOSTARTED`.
    io_started: bool,
    /// `AS_TASK_IORUNNING`.
    io_running: bool,
    nr_queued: u32,
    nr_dispatched: u32,
    last_end_request: u64,
    last_request_pos: Sector,
    ttime_total: u64,
    ttime_samples: u64,
    ttime_mean: u64,
    seek_total: u64,
    seek_samples: u64,
    seek_mean: u64,
}

/// `enum arq_state` (the states the hooks check).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RqState {
    Queued,
    Dispatched,
    Removed,
}

#[derive(Clone, Copy, Debug)]
struct AsRq {
    /// Sector under which the request sits in the sort tree.
    key: Sector,
    /// FIFO position.
    fifo_seq: u64,
    /// `rq_fifo_time`: jiffies at which the request expires.
    expire: u64,
    /// `rq_is_sync`.
    dir: usize,
    /// `RQ_IOC`.
    pid: u32,
    state: RqState,
}

pub struct Anticipatory {
    cfg: AsConfig,
    sort_list: [ElvRb; 2],
    fifo_list: [BTreeSet<(u64, RqId)>; 2],
    next_rq: [Option<RqId>; 2],
    last_sector: [Sector; 2],
    exit_prob: u64,
    exit_no_coop: u64,
    new_ttime_total: u64,
    new_ttime_mean: u64,
    new_seek_total: u64,
    new_seek_mean: u64,
    current_batch_expires: u64,
    last_check_fifo: [u64; 2],
    changed_batch: bool,
    new_batch: bool,
    batch_data_dir: usize,
    write_batch_count: i64,
    current_write_count: i64,
    write_batch_idled: bool,
    antic_status: AnticStatus,
    antic_start: u64,
    /// `antic_timer` expiry in jiffies, when armed.
    antic_timer: Option<u64>,
    /// `ad->io_context`: the process anticipated on.
    io_context: Option<u32>,
    ioc_finished: bool,
    nr_dispatched: u32,
    aics: BTreeMap<u32, Aic>,
    fifo_seq: u64,
    /// Jiffies at the latest hook that was given the time.
    last_j: u64,
    /// Requests still known to AS (queued, or dispatched and not completed).
    per_rq: BTreeMap<RqId, AsRq>,
}

impl Anticipatory {
    /// `as_init_queue`.
    pub fn new(cfg: AsConfig) -> Self {
        let write_batch_count = ((cfg.batch_expire[ASYNC] / 10) as i64).max(2);
        Anticipatory {
            current_batch_expires: cfg.batch_expire[SYNC],
            cfg,
            sort_list: [ElvRb::new(), ElvRb::new()],
            fifo_list: [BTreeSet::new(), BTreeSet::new()],
            next_rq: [None, None],
            last_sector: [0, 0],
            exit_prob: 0,
            exit_no_coop: 0,
            new_ttime_total: 0,
            new_ttime_mean: 0,
            new_seek_total: 0,
            new_seek_mean: 0,
            last_check_fifo: [0, 0],
            changed_batch: false,
            new_batch: false,
            batch_data_dir: SYNC,
            write_batch_count,
            current_write_count: 0,
            write_batch_idled: false,
            antic_status: AnticStatus::Off,
            antic_start: 0,
            antic_timer: None,
            io_context: None,
            ioc_finished: false,
            nr_dispatched: 0,
            aics: BTreeMap::new(),
            fifo_seq: 0,
            last_j: 0,
            per_rq: BTreeMap::new(),
        }
    }

    /// The anticipation state (for tests and inspection).
    pub fn antic_status(&self) -> AnticStatus {
        self.antic_status
    }

    fn jiffies(&mut self, now: Instant) -> u64 {
        self.last_j = now.as_ns() * self.cfg.hz / 1_000_000_000;
        self.last_j
    }

    /// Timer deadline in virtual time: the first instant `jiffies` reads `j`.
    fn jiffy_time(&self, j: u64) -> Instant {
        Instant((j * 1_000_000_000).div_ceil(self.cfg.hz))
    }

    fn r(&self, rq: RqId) -> AsRq {
        *self.per_rq.get(&rq).expect("request not in anticipatory")
    }

    fn aic(&mut self, pid: u32) -> &mut Aic {
        self.aics.entry(pid).or_default()
    }

    /// `time_after(a, b)` on jiffies.
    fn after(a: u64, b: u64) -> bool {
        (b as i64).wrapping_sub(a as i64) < 0
    }

    /// `as_choose_req`: the preferred of two requests of the same class, by seek
    /// distance from `last_sector` with short backward seeks at double cost.
    fn choose_req(&self, rq1: Option<RqId>, rq2: Option<RqId>) -> Option<RqId> {
        let (r1, r2) = match (rq1, rq2) {
            (None, _) => return rq2,
            (Some(a), Some(b)) if a == b => return rq2,
            (Some(_), None) => return rq1,
            (Some(a), Some(b)) => (a, b),
        };
        let a1 = self.r(r1);
        let a2 = self.r(r2);
        debug_assert_eq!(a1.dir, a2.dir);
        let last = self.last_sector[a1.dir];
        let dist = |s: u64| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s + MAXBACK >= last {
                Some((last - s) * BACK_PENALTY)
            } else {
                None // behind the head: wraps
            }
        };
        let (s1, s2) = (a1.key, a2.key);
        match (dist(s1), dist(s2)) {
            (Some(_), None) => Some(r1),
            (None, Some(_)) => Some(r2),
            (None, None) => Some(if s1 <= s2 { r1 } else { r2 }),
            (Some(d1), Some(d2)) => Some(if d1 < d2 || (d1 == d2 && s1 >= s2) {
                r1
            } else {
                r2
            }),
        }
    }

    /// `as_find_next_rq`: the better of the sort-tree neighbours of `last`
    /// (wrapping to the first request when `last` is the highest).
    fn find_next_rq(&self, last: RqId) -> Option<RqId> {
        let a = self.r(last);
        let tree = &self.sort_list[a.dir];
        let prev = tree.former(a.key, last);
        let next = tree.latter_or_first(a.key, last);
        self.choose_req(next, prev)
    }

    /// `as_antic_expired`.
    fn antic_expired(&self, j: u64) -> bool {
        j.abs_diff(self.antic_start) >= self.cfg.antic_expire
    }

    /// `as_antic_waitnext`: arm the timer from `antic_start`.
    fn antic_waitnext(&mut self, ctx: &mut ElvCtx) {
        assert!(matches!(
            self.antic_status,
            AnticStatus::Off | AnticStatus::WaitReq
        ));
        self.antic_timer = Some(self.antic_start + self.cfg.antic_expire);
        self.antic_status = AnticStatus::WaitNext;
        ctx.msg(format_args!(
            "as antic_waitnext pid={}",
            self.io_context.map_or(-1, |p| p as i64)
        ));
    }

    /// `as_antic_waitreq`: anticipate, timing only once the last request is done.
    fn antic_waitreq(&mut self, ctx: &mut ElvCtx) {
        assert_ne!(self.antic_status, AnticStatus::Finished);
        if self.antic_status == AnticStatus::Off {
            if self.io_context.is_none() || self.ioc_finished {
                self.antic_waitnext(ctx);
            } else {
                self.antic_status = AnticStatus::WaitReq;
                ctx.msg(format_args!(
                    "as antic_waitreq pid={}",
                    self.io_context.map_or(-1, |p| p as i64)
                ));
            }
        }
    }

    /// `as_antic_stop`: kill the timer and have the queue run.
    fn antic_stop(&mut self, ctx: &mut ElvCtx) {
        let s = self.antic_status;
        if s == AnticStatus::WaitReq || s == AnticStatus::WaitNext {
            if s == AnticStatus::WaitNext {
                self.antic_timer = None;
            }
            self.antic_status = AnticStatus::Finished;
            ctx.msg(format_args!("as antic_stop"));
            ctx.kick_work();
        }
    }

    /// `as_update_thinktime` (fixed point: 1.0 == 256).
    fn update_thinktime(&mut self, pid: u32, ttime: u64) {
        let first = self.aic(pid).ttime_samples == 0;
        if first {
            self.new_ttime_total = (7 * self.new_ttime_total + 256 * ttime) / 8;
            self.new_ttime_mean = self.new_ttime_total / 256;
            self.exit_prob = (7 * self.exit_prob) / 8;
        }
        let a = self.aic(pid);
        a.ttime_samples = (7 * a.ttime_samples + 256) / 8;
        a.ttime_total = (7 * a.ttime_total + 256 * ttime) / 8;
        a.ttime_mean = (a.ttime_total + 128) / a.ttime_samples;
    }

    /// `as_update_seekdist`.
    fn update_seekdist(&mut self, pid: u32, sdist: u64) {
        if self.aic(pid).seek_samples == 0 {
            self.new_seek_total = (7 * self.new_seek_total + 256 * sdist) / 8;
            self.new_seek_mean = self.new_seek_total / 256;
        }
        let a = self.aic(pid);
        // Don't let the odd fragment or pagein blow the mean up.
        let sdist = if a.seek_samples <= 60 {
            sdist.min(a.seek_mean * 4 + 2 * 1024 * 1024)
        } else {
            sdist.min(a.seek_mean * 4 + 2 * 1024 * 64)
        };
        a.seek_samples = (7 * a.seek_samples + 256) / 8;
        a.seek_total = (7 * a.seek_total + 256 * sdist) / 8;
        a.seek_mean = (a.seek_total + a.seek_samples / 2) / a.seek_samples;
    }

    /// `as_update_iohist`: think time and seek distance of a new sync request.
    fn update_iohist(&mut self, pid: u32, dir: usize, sector: Sector, sectors: u32, j: u64) {
        if dir != SYNC {
            return;
        }
        let a = self.aic(pid).clone();
        if a.io_running || a.io_started {
            let in_flight = a.nr_queued + a.nr_dispatched;
            let mut thinktime = 0;
            if a.io_running && in_flight == 0 {
                let max_thinktime = self.cfg.hz / 50;
                thinktime = j
                    .wrapping_sub(a.last_end_request)
                    .min(max_thinktime.saturating_sub(1));
            }
            self.update_thinktime(pid, thinktime);
            let seek_dist = a.last_request_pos.abs_diff(sector);
            self.update_seekdist(pid, seek_dist);
        }
        let a = self.aic(pid);
        a.last_request_pos = sector + sectors as u64;
        a.io_started = true;
    }

    /// `as_close_req`: is `rq` close to the last request of the batch?
    fn close_req(&self, pid: u32, sector: Sector, j: u64) -> bool {
        let last = self.last_sector[self.batch_data_dir];
        let next = sector;
        let delay = if self.antic_status == AnticStatus::Off || !self.ioc_finished {
            0
        } else {
            j.wrapping_sub(self.antic_start)
        };
        let delta: u64 = if delay == 0 {
            8192
        } else if delay <= 20 * self.cfg.hz / 1000 && delay <= self.cfg.antic_expire {
            8192u64.checked_shl(delay as u32).unwrap_or(u64::MAX)
        } else {
            return true;
        };
        if last <= next.saturating_add(delta >> 1) && next <= last.saturating_add(delta) {
            return true;
        }
        let s = last.abs_diff(next);
        match self.aics.get(&pid) {
            Some(a) if a.seek_samples != 0 => a.seek_mean > s,
            // Process has just started IO: use past statistics.
            _ => self.new_seek_mean > s,
        }
    }

    /// `as_can_break_anticipation`: is `rq` (or the anticipated process's state)
    /// reason enough to stop anticipating?
    fn can_break_anticipation(&mut self, rqs: &RequestPool, rq: Option<RqId>, j: u64) -> bool {
        let ioc = self.io_context.expect("anticipating without an io_context");
        let cand = rq.map(|r| self.r(r));
        if cand.is_some_and(|c| c.pid == ioc) {
            // Request from the same process.
            return true;
        }
        if self.ioc_finished && self.antic_expired(j) {
            // The timer has not had the chance to run yet.
            return true;
        }
        let Some(a) = self.aics.get(&ioc) else {
            return false;
        };
        if a.nr_queued > 0 || a.nr_dispatched > 0 {
            // The process has more requests queued or dispatched.
            return true;
        }
        if let Some(c) = cand {
            if c.dir == SYNC && self.close_req(ioc, c.key, j) {
                // A close request that is not ours updates our history
                // (cooperating processes). AS_TASK_RUNNING is always set.
                let sectors = rqs.get(rq.expect("candidate")).sectors;
                self.update_iohist(ioc, SYNC, c.key, sectors, j);
                return true;
            }
        }
        let a = &self.aics[&ioc];
        if a.ttime_samples == 0 {
            if self.new_ttime_mean > self.cfg.antic_expire {
                return true;
            }
            if self.exit_prob * self.exit_no_coop > 128 * 256 {
                return true;
            }
        } else if a.ttime_mean > self.cfg.antic_expire {
            // The process thinks too much between requests.
            return true;
        }
        false
    }

    /// `as_can_anticipate`: keep the disk idle rather than dispatch `rq`?
    fn can_anticipate(&mut self, rqs: &RequestPool, rq: Option<RqId>, j: u64) -> bool {
        if self.io_context.is_none() {
            // The last request dispatched was async.
            return false;
        }
        if self.antic_status == AnticStatus::Finished {
            // Don't restart right after finishing.
            return false;
        }
        !self.can_break_anticipation(rqs, rq, j)
    }

    /// `as_update_rq`: keep `next_rq` current and check whether `rq` is what
    /// we have been anticipating.
    fn update_rq(&mut self, ctx: &mut ElvCtx, rqs: &RequestPool, rq: RqId, j: u64) {
        let dir = self.r(rq).dir;
        self.next_rq[dir] = self.choose_req(Some(rq), self.next_rq[dir]);
        if matches!(
            self.antic_status,
            AnticStatus::WaitReq | AnticStatus::WaitNext
        ) && self.can_break_anticipation(rqs, Some(rq), j)
        {
            self.antic_stop(ctx);
        }
    }

    /// `update_write_batch`: auto-size the async batch from how long it ran.
    fn update_write_batch(&mut self, j: u64) {
        let batch = self.cfg.batch_expire[ASYNC] as i64;
        let write_time = ((j as i64) - (self.current_batch_expires as i64) + batch).max(0);
        if write_time > batch && !self.write_batch_idled {
            if write_time > batch * 3 {
                self.write_batch_count /= 2;
            } else {
                self.write_batch_count -= 1;
            }
        } else if write_time < batch && self.current_write_count == 0 {
            if batch > write_time * 3 {
                self.write_batch_count *= 2;
            } else {
                self.write_batch_count += 1;
            }
        }
        if self.write_batch_count < 1 {
            self.write_batch_count = 1;
        }
    }

    /// `as_remove_queued_request`: off the sort tree and FIFO.
    fn remove_queued(&mut self, rq: RqId) {
        let a = self.r(rq);
        assert_eq!(a.state, RqState::Queued);
        let aic = self.aic(a.pid);
        assert!(aic.nr_queued > 0);
        aic.nr_queued -= 1;
        if self.next_rq[a.dir] == Some(rq) {
            self.next_rq[a.dir] = self.find_next_rq(rq);
        }
        assert!(self.fifo_list[a.dir].remove(&(a.fifo_seq, rq)));
        self.sort_list[a.dir].del(a.key, rq);
    }

    /// `as_put_io_context`: a sync request's process has had IO complete.
    fn put_io_context(&mut self, pid: u32, dir: usize, j: u64) {
        if dir == SYNC {
            let a = self.aic(pid);
            a.io_running = true;
            a.last_end_request = j;
        }
    }

    /// `as_fifo_expired`: rate-limited to one check per `fifo_expire`.
    fn fifo_expired(&mut self, adir: usize, j: u64) -> bool {
        if j.abs_diff(self.last_check_fifo[adir]) < self.cfg.fifo_expire[adir] {
            return false;
        }
        self.last_check_fifo[adir] = j;
        match self.fifo_list[adir].first() {
            Some(&(_, rq)) => Self::after(j, self.r(rq).expire),
            None => false,
        }
    }

    /// `as_batch_expired`.
    fn batch_expired(&self, j: u64) -> bool {
        if self.changed_batch || self.new_batch {
            return false;
        }
        if self.batch_data_dir == SYNC {
            return Self::after(j, self.current_batch_expires);
        }
        Self::after(j, self.current_batch_expires) || self.current_write_count == 0
    }

    /// `as_move_to_dispatch`.
    fn move_to_dispatch(&mut self, ctx: &mut ElvCtx, rqs: &RequestPool, rq: RqId) {
        let a = self.r(rq);
        self.antic_stop(ctx);
        self.antic_status = AnticStatus::Off;
        self.last_sector[a.dir] = rqs.get(rq).end_sector();
        if a.dir == SYNC {
            // In case we have to anticipate after this.
            self.io_context = Some(a.pid);
        } else {
            self.io_context = None;
            if self.current_write_count != 0 {
                self.current_write_count -= 1;
            }
        }
        self.ioc_finished = false;
        self.next_rq[a.dir] = self.find_next_rq(rq);
        self.remove_queued(rq);
        self.per_rq.get_mut(&rq).expect("known").state = RqState::Dispatched;
        self.aic(a.pid).nr_dispatched += 1;
        self.nr_dispatched += 1;
    }
}

impl Elevator for Anticipatory {
    fn name(&self) -> &'static str {
        "anticipatory"
    }

    /// `as_merge`: a front-merge candidate starting at the bio's end. The kernel
    /// looks in `sort_list[bio_data_dir(bio)]` although requests are filed by
    /// `rq_is_sync` (`RQ_RB_ROOT`): a read searches the async tree, so reads and
    /// async writes never front-merge here, while sync writes do. Kept as 2.6.32
    /// has it.
    fn merge(&mut self, _rqs: &RequestPool, bio: &Bio) -> Option<RqId> {
        let dir = bio.flags.is_write() as usize;
        self.sort_list[dir].find(bio.end_sector())
    }

    /// `as_merged_request`: a front merge moved the start; re-sort.
    fn merged(&mut self, rqs: &RequestPool, rq: RqId, kind: MergeKind) {
        if kind == MergeKind::Front {
            let mut a = self.r(rq);
            let key = rqs.get(rq).sector;
            self.sort_list[a.dir].rekey(a.key, key, rq);
            a.key = key;
            self.per_rq.insert(rq, a);
        }
    }

    /// `as_merged_requests`: `rq` takes `next`'s FIFO place if `next` expires
    /// first; `next` is removed and its io context put.
    fn merged_requests(&mut self, rqs: &mut RequestPool, rq: RqId, next: RqId) {
        let mut a = self.r(rq);
        let n = self.r(next);
        if (n.expire as i64).wrapping_sub(a.expire as i64) < 0 {
            assert!(self.fifo_list[a.dir].remove(&(a.fifo_seq, rq)));
            a.fifo_seq = n.fifo_seq;
            a.expire = n.expire;
            self.per_rq.insert(rq, a);
            self.remove_queued(next);
            self.fifo_list[a.dir].insert((a.fifo_seq, rq));
        } else {
            self.remove_queued(next);
        }
        self.per_rq.remove(&next);
        // as_put_io_context(next), at the jiffy of the latest hook (this one
        // is given no clock).
        let _ = rqs;
        self.put_io_context(n.pid, n.dir, self.last_j);
    }

    /// `as_may_queue`: the anticipated process must get its request.
    fn may_queue(&mut self, bio: &Bio) -> MayQueue {
        if matches!(
            self.antic_status,
            AnticStatus::WaitReq | AnticStatus::WaitNext
        ) && self.io_context == Some(bio.pid)
        {
            MayQueue::Must
        } else {
            MayQueue::May
        }
    }

    /// `as_add_request`: statistics, sort tree, FIFO with expiry, then
    /// `as_update_rq`. (Aliases with the same start sector coexist in the tree,
    /// ordered by request id, instead of being dispatched at once.)
    fn add_request(&mut self, ctx: &mut ElvCtx, rqs: &mut RequestPool, rq: RqId) {
        let j = self.jiffies(ctx.now);
        let r = rqs.get(rq);
        let dir = r.flags.is_sync() as usize;
        let (pid, sector, sectors) = (r.pid, r.sector, r.sectors);
        self.update_iohist(pid, dir, sector, sectors, j);
        self.aic(pid).nr_queued += 1;
        let a = AsRq {
            key: sector,
            fifo_seq: self.fifo_seq,
            expire: j + self.cfg.fifo_expire[dir],
            dir,
            pid,
            state: RqState::Queued,
        };
        self.fifo_seq += 1;
        assert!(self.per_rq.insert(rq, a).is_none());
        self.sort_list[dir].add(sector, rq);
        self.fifo_list[dir].insert((a.fifo_seq, rq));
        self.update_rq(ctx, rqs, rq, j);
    }

    /// `as_dispatch_request`: one request per call.
    fn dispatch(
        &mut self,
        ctx: &mut ElvCtx,
        rqs: &RequestPool,
        force: bool,
    ) -> Option<(RqId, Placement)> {
        let j = self.jiffies(ctx.now);
        let reads = !self.fifo_list[SYNC].is_empty();
        let writes = !self.fifo_list[ASYNC].is_empty();

        if force {
            // Forced dispatch: reset the batch accounting and drain, sync first.
            self.batch_data_dir = SYNC;
            self.changed_batch = false;
            self.new_batch = false;
            let rq = self.next_rq[SYNC].or(self.next_rq[ASYNC])?;
            self.last_check_fifo = [j, j];
            self.move_to_dispatch(ctx, rqs, rq);
            return Some((rq, Placement::Sort));
        }

        // Signal that the write batch was uncontended, so it can't be timed.
        if self.batch_data_dir == ASYNC && !reads && (self.current_write_count == 0 || !writes) {
            self.write_batch_idled = true;
        }

        if !(reads || writes)
            || matches!(
                self.antic_status,
                AnticStatus::WaitReq | AnticStatus::WaitNext
            )
            || self.changed_batch
        {
            return None;
        }

        let mut rq: Option<RqId> = None;
        let mut fifo_expired = false;
        let mut chosen = false;
        if !(reads && writes && self.batch_expired(j)) {
            // The batch is still running, or only one class has requests.
            rq = self.next_rq[self.batch_data_dir];
            if self.batch_data_dir == SYNC && self.cfg.antic_expire != 0 {
                if self.fifo_expired(SYNC, j) {
                    fifo_expired = true;
                    chosen = true;
                } else if self.can_anticipate(rqs, rq, j) {
                    self.antic_waitreq(ctx);
                    return None;
                }
            }
            if !chosen && rq.is_some() {
                if reads && !writes {
                    self.current_batch_expires = j + self.cfg.batch_expire[SYNC];
                }
                chosen = true;
            }
        }

        if !chosen {
            // Not running a batch: choose the class.
            if reads && !(writes && self.batch_data_dir == SYNC) {
                if self.batch_data_dir == ASYNC {
                    self.changed_batch = true;
                    ctx.msg(format_args!("as batch sync"));
                }
                self.batch_data_dir = SYNC;
                rq = self.fifo_list[SYNC].first().map(|&(_, r)| r);
                self.last_check_fifo[SYNC] = j;
            } else {
                assert!(writes);
                if self.batch_data_dir == SYNC {
                    self.changed_batch = true;
                    // new_batch may be set when the queue ran out of reads.
                    self.new_batch = false;
                    ctx.msg(format_args!("as batch async"));
                }
                self.batch_data_dir = ASYNC;
                self.current_write_count = self.write_batch_count;
                self.write_batch_idled = false;
                rq = self.fifo_list[ASYNC].first().map(|&(_, r)| r);
                self.last_check_fifo[ASYNC] = j;
            }
        }

        // dispatch_request: an expired request is served first.
        if fifo_expired || self.fifo_expired(self.batch_data_dir, j) {
            rq = self.fifo_list[self.batch_data_dir].first().map(|&(_, r)| r);
        }

        if self.changed_batch {
            if self.nr_dispatched > 0 {
                return None;
            }
            if self.batch_data_dir == ASYNC {
                self.current_batch_expires = j + self.cfg.batch_expire[ASYNC];
            } else {
                self.new_batch = true;
            }
            self.changed_batch = false;
        }

        let rq = rq.expect("a request of the chosen class");
        self.move_to_dispatch(ctx, rqs, rq);
        Some((rq, Placement::Sort))
    }

    fn queue_empty(&self) -> bool {
        self.fifo_list[SYNC].is_empty() && self.fifo_list[ASYNC].is_empty()
    }

    /// `elv_rb_former_request`.
    fn former_request(&self, _rqs: &RequestPool, rq: RqId) -> Option<RqId> {
        let a = self.r(rq);
        self.sort_list[a.dir].former(a.key, rq)
    }

    /// `elv_rb_latter_request`.
    fn latter_request(&self, _rqs: &RequestPool, rq: RqId) -> Option<RqId> {
        let a = self.r(rq);
        self.sort_list[a.dir].latter(a.key, rq)
    }

    /// `as_activate_request`.
    fn activate(&mut self, _ctx: &mut ElvCtx, _rqs: &RequestPool, rq: RqId) {
        if let Some(a) = self.per_rq.get_mut(&rq) {
            assert_eq!(a.state, RqState::Dispatched);
            a.state = RqState::Removed;
            let pid = a.pid;
            let aic = self.aic(pid);
            aic.nr_dispatched = aic.nr_dispatched.saturating_sub(1);
        }
    }

    /// `as_completed_request`.
    fn completed(&mut self, ctx: &mut ElvCtx, _rqs: &RequestPool, rq: RqId) {
        let Some(a) = self.per_rq.remove(&rq) else {
            return;
        };
        if a.state != RqState::Removed {
            return;
        }
        let j = self.jiffies(ctx.now);
        if self.changed_batch && self.nr_dispatched == 1 {
            self.current_batch_expires = j + self.cfg.batch_expire[self.batch_data_dir];
            ctx.kick_work();
            self.changed_batch = false;
            if self.batch_data_dir == SYNC {
                self.new_batch = true;
            }
        }
        assert!(self.nr_dispatched > 0);
        self.nr_dispatched -= 1;

        // Count the batch from when a request of its class is serviced.
        if self.new_batch && self.batch_data_dir == a.dir {
            self.update_write_batch(j);
            self.current_batch_expires = j + self.cfg.batch_expire[SYNC];
            self.new_batch = false;
        }

        if self.io_context == Some(a.pid) {
            self.antic_start = j;
            self.ioc_finished = true;
            if self.antic_status == AnticStatus::WaitReq {
                // We were waiting on this request; anticipate the next one.
                self.antic_waitnext(ctx);
            }
        }
        self.put_io_context(a.pid, a.dir, j);
    }

    fn timer_deadline(&self) -> Option<Instant> {
        self.antic_timer.map(|j| self.jiffy_time(j))
    }

    /// `as_antic_timeout`.
    fn timer_fired(&mut self, ctx: &mut ElvCtx, _rqs: &RequestPool) {
        self.antic_timer = None;
        if matches!(
            self.antic_status,
            AnticStatus::WaitReq | AnticStatus::WaitNext
        ) {
            self.antic_status = AnticStatus::Finished;
            let pid = self.io_context.expect("anticipating a process");
            ctx.msg(format_args!("as antic_timeout pid={pid}"));
            ctx.kick_work();
            if self.aic(pid).ttime_samples == 0 {
                // The process anticipated on has exited or timed out.
                self.exit_prob = (7 * self.exit_prob + 256) / 8;
            }
        }
    }

    fn queued(&self) -> usize {
        self.fifo_list[SYNC].len() + self.fifo_list[ASYNC].len()
    }
}
