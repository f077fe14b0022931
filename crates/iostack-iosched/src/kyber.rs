//! Kyber (6.x `block/kyber-iosched.c`, 4.12+): requests are split into
//! scheduling domains (read, write, discard, other); each domain has a
//! device-wide budget of tokens (`kqd->domain_tokens`, an `sbitmap_queue` of
//! `kyber_depth[]` bits at most) and a request is dispatched only with a
//! token of its domain, given back when it finishes. Completions record the
//! total latency (from allocation) and the I/O latency (from issue) in
//! histograms per CPU whose buckets are quarters of the domain's target
//! (`read_lat_nsec`, `write_lat_nsec`); a timer, armed 100 ms after a
//! completion, sums them, finds congestion from the I/O latency p90 of every
//! domain and rescales each domain's depth by its total latency p99
//! (`kyber_timer_fn`). Requests wait in per-CPU queues (`kcqs`) until their
//! hardware queue's dispatch flushes them into its domain list, and dispatch
//! goes round-robin over the domains in batches (`kyber_batch_size`).
//!
//! Simplifications, named: a token is the lowest free bit below the depth
//! (the kernel's `__sbitmap_queue_get` starts at a per-CPU hint; which bit is
//! taken matters only when a shrink leaves bits above the depth, which stay
//! taken until freed in both). `BLK_MQ_INSERT_AT_HEAD` does not reach the
//! scheduler here.

use iostack_block::{MqElevator, RequestPool, RqId};
use iostack_core::{ReqFlags, TunableDef, Tunables, Unit};
use iostack_des::Instant;
use std::collections::{BTreeMap, VecDeque};

pub static TUNABLES: &[TunableDef] = &[
    TunableDef {
        name: "iosched/kyber/read_lat_nsec",
        unit: Unit::Ns,
        default: |_| 2_000_000,
        min: 1,
        max: 3_600_000_000_000,
        doc: "Target latency of reads (kyber_latency_targets[KYBER_READ], 2 ms).",
    },
    TunableDef {
        name: "iosched/kyber/write_lat_nsec",
        unit: Unit::Ns,
        default: |_| 10_000_000,
        min: 1,
        max: 3_600_000_000_000,
        doc: "Target latency of writes (kyber_latency_targets[KYBER_WRITE], 10 ms).",
    },
];

/// The scheduling domains (`enum { KYBER_READ, ... }`).
pub const READ: usize = 0;
pub const WRITE: usize = 1;
pub const DISCARD: usize = 2;
pub const OTHER: usize = 3;
const NUM_DOMAINS: usize = 4;
const DOMAIN_NAMES: [&str; NUM_DOMAINS] = ["READ", "WRITE", "DISCARD", "OTHER"];

/// `kyber_depth[]`: the most tokens each domain may have.
pub const KYBER_DEPTH: [u32; NUM_DOMAINS] = [256, 128, 64, 16];
/// `kyber_batch_size[]`.
const BATCH_SIZE: [u32; NUM_DOMAINS] = [16, 8, 1, 1];
/// `KYBER_ASYNC_PERCENT`.
const ASYNC_PERCENT: u32 = 75;
/// `KYBER_LATENCY_SHIFT`, `KYBER_GOOD_BUCKETS`, `KYBER_LATENCY_BUCKETS`.
const LATENCY_SHIFT: u32 = 2;
const GOOD_BUCKETS: i32 = 1 << LATENCY_SHIFT;
const LATENCY_BUCKETS: usize = 2 << LATENCY_SHIFT;
/// `KYBER_TOTAL_LATENCY`, `KYBER_IO_LATENCY`.
const TOTAL: usize = 0;
const IO: usize = 1;
/// `kyber_latency_targets[KYBER_DISCARD]` (not a tunable): 5 s.
const DISCARD_LAT_NSEC: u64 = 5_000_000_000;
/// `SBQ_WAIT_QUEUES`, `SBQ_WAKE_BATCH`.
const SBQ_WAIT_QUEUES: u32 = 8;
const SBQ_WAKE_BATCH: u32 = 8;

#[derive(Clone, Debug)]
pub struct KyberConfig {
    /// `kqd->latency_targets[]` of read and write, in ns.
    pub read_lat_nsec: u64,
    pub write_lat_nsec: u64,
    pub hz: u64,
}

impl KyberConfig {
    pub fn from_tunables(t: &Tunables) -> Self {
        KyberConfig {
            read_lat_nsec: t.get_u64("iosched/kyber/read_lat_nsec"),
            write_lat_nsec: t.get_u64("iosched/kyber/write_lat_nsec"),
            hz: t.get_u64("kernel/hz"),
        }
    }
}

/// `kyber_sched_domain`: by the operation.
pub fn sched_domain(flags: ReqFlags) -> usize {
    if flags.contains(ReqFlags::DISCARD) {
        DISCARD
    } else if flags.contains(ReqFlags::FLUSH) && !flags.is_write() {
        OTHER
    } else if flags.is_write() {
        WRITE
    } else {
        READ
    }
}

/// One domain's tokens: `struct sbitmap_queue` with its resizable depth and
/// the hardware queues waiting for a token (`khd->domain_wait`).
#[derive(Debug)]
struct DomainTokens {
    depth: u32,
    /// Bits up to the domain's `kyber_depth`; a set bit is a token held.
    words: [u64; 4],
    wake_batch: u32,
    completion_cnt: u64,
    wakeup_cnt: u64,
    waiters: VecDeque<u16>,
}

impl DomainTokens {
    fn new(depth: u32) -> Self {
        let mut t = DomainTokens {
            depth,
            words: [0; 4],
            wake_batch: 1,
            completion_cnt: 0,
            wakeup_cnt: 0,
            waiters: VecDeque::new(),
        };
        t.update_wake_batch();
        t
    }

    /// `sbq_calc_wake_batch`.
    fn update_wake_batch(&mut self) {
        self.wake_batch = (self.depth / SBQ_WAIT_QUEUES).clamp(1, SBQ_WAKE_BATCH);
    }

    fn test(&self, nr: u32) -> bool {
        self.words[(nr / 64) as usize] & (1 << (nr % 64)) != 0
    }

    /// `__sbitmap_queue_get`: a clear bit below the depth.
    fn get(&mut self) -> Option<u32> {
        let nr = (0..self.depth).find(|&nr| !self.test(nr))?;
        self.words[(nr / 64) as usize] |= 1 << (nr % 64);
        Some(nr)
    }

    /// `sbitmap_queue_clear` → `sbitmap_queue_wake_up`: the waiters to wake.
    fn clear(&mut self, nr: u32, woken: &mut Vec<u16>) {
        assert!(self.test(nr), "kyber token {nr} freed twice");
        self.words[(nr / 64) as usize] &= !(1 << (nr % 64));
        if self.waiters.is_empty() {
            return;
        }
        self.completion_cnt += 1;
        if self.completion_cnt - self.wakeup_cnt < self.wake_batch as u64 {
            return;
        }
        self.wakeup_cnt += self.wake_batch as u64;
        for _ in 0..self.wake_batch {
            match self.waiters.pop_front() {
                Some(h) => woken.push(h),
                None => break,
            }
        }
    }

    /// `sbitmap_queue_resize`: tokens held above the new depth stay held.
    fn resize(&mut self, depth: u32) {
        self.depth = depth;
        self.update_wake_batch();
    }

    fn held(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }
}

/// `struct kyber_hctx_data`.
#[derive(Default, Debug)]
struct Khd {
    /// `khd->rqs[]`: flushed requests waiting for a token.
    rqs: [VecDeque<RqId>; NUM_DOMAINS],
    cur_domain: usize,
    batching: u32,
    /// `khd->kcqs[]` by CPU (`ctx->index_hw` follows the CPU order), each
    /// with its `rq_list[]`; an entry is its bit in `kcq_map[]`.
    kcqs: [BTreeMap<u32, VecDeque<RqId>>; NUM_DOMAINS],
}

impl Khd {
    fn kcq_any(&self, d: usize) -> bool {
        !self.kcqs[d].is_empty()
    }
}

/// Per-request data: `rq->elv.priv[0]` (the token) and where it waits.
#[derive(Clone, Copy, Debug)]
struct KRq {
    domain: usize,
    token: Option<u32>,
    cpu: u32,
    hctx: u16,
}

type Histogram = [[[u32; LATENCY_BUCKETS]; 2]; OTHER];

/// A depth change (`trace_kyber_adjust`) or a percentile
/// (`trace_kyber_latency`), as the kernel's tracepoints report them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KyberEvent {
    Latency {
        domain: &'static str,
        kind: &'static str,
        percentile: u32,
        bucket: u32,
        samples: u32,
    },
    Adjust {
        domain: &'static str,
        depth: u32,
    },
}

pub struct Kyber {
    cfg: KyberConfig,
    tokens: [DomainTokens; NUM_DOMAINS],
    /// `kqd->cpu_latency`: per CPU.
    cpu_latency: Vec<Histogram>,
    /// `kqd->latency_buckets`.
    latency_buckets: Histogram,
    /// `kqd->latency_timeout[]` in jiffies (0 = none).
    latency_timeout: [u64; OTHER],
    domain_p99: [i32; OTHER],
    latency_targets: [u64; OTHER],
    /// `kqd->timer` expiry in jiffies, when pending.
    timer: Option<u64>,
    khds: Vec<Khd>,
    per_rq: Vec<Option<KRq>>,
    queued: usize,
    woken: Vec<u16>,
    events: Vec<KyberEvent>,
}

impl Kyber {
    pub fn new(cfg: KyberConfig) -> Self {
        let latency_targets = [cfg.read_lat_nsec, cfg.write_lat_nsec, DISCARD_LAT_NSEC];
        Kyber {
            cfg,
            tokens: KYBER_DEPTH.map(DomainTokens::new),
            cpu_latency: Vec::new(),
            latency_buckets: Default::default(),
            latency_timeout: [0; OTHER],
            domain_p99: [-1; OTHER],
            latency_targets,
            timer: None,
            khds: Vec::new(),
            per_rq: Vec::new(),
            queued: 0,
            woken: Vec::new(),
            events: Vec::new(),
        }
    }

    /// The current token depth of a domain (`domain_tokens[d].sb.depth`).
    pub fn depth(&self, domain: usize) -> u32 {
        self.tokens[domain].depth
    }

    /// Tokens a domain has out.
    pub fn tokens_held(&self, domain: usize) -> u32 {
        self.tokens[domain].held()
    }

    /// What the kyber tracepoints reported so far.
    pub fn events(&self) -> &[KyberEvent] {
        &self.events
    }

    fn jiffies(&self, now: Instant) -> u64 {
        now.as_ns() * self.cfg.hz / 1_000_000_000
    }

    fn khd(&mut self, h: u16) -> &mut Khd {
        let i = h as usize;
        if self.khds.len() <= i {
            self.khds.resize_with(i + 1, Khd::default);
        }
        &mut self.khds[i]
    }

    fn k(&self, rq: RqId) -> Option<KRq> {
        self.per_rq.get(rq.0 as usize).copied().flatten()
    }

    /// `calculate_percentile`: the bucket of the `percentile` rank, or -1
    /// before 500 samples or one second since the first.
    fn calculate_percentile(&mut self, d: usize, kind: usize, percentile: u32, jif: u64) -> i32 {
        let buckets = &mut self.latency_buckets[d][kind];
        let samples: u32 = buckets.iter().sum();
        if samples == 0 {
            return -1;
        }
        if self.latency_timeout[d] == 0 {
            self.latency_timeout[d] = (jif + self.cfg.hz).max(1);
        }
        // time_is_after_jiffies(timeout): timeout > jiffies.
        if samples < 500 && self.latency_timeout[d] > jif {
            return -1;
        }
        self.latency_timeout[d] = 0;
        let mut want = (samples * percentile).div_ceil(100);
        let mut bucket = 0;
        while bucket < LATENCY_BUCKETS - 1 {
            if buckets[bucket] >= want {
                break;
            }
            want -= buckets[bucket];
            bucket += 1;
        }
        *buckets = [0; LATENCY_BUCKETS];
        self.events.push(KyberEvent::Latency {
            domain: DOMAIN_NAMES[d],
            kind: if kind == TOTAL { "total" } else { "I/O" },
            percentile,
            bucket: bucket as u32 + 1,
            samples,
        });
        bucket as i32
    }

    /// `kyber_resize_domain`.
    fn resize_domain(&mut self, d: usize, depth: u32) {
        let depth = depth.clamp(1, KYBER_DEPTH[d]);
        if depth != self.tokens[d].depth {
            self.tokens[d].resize(depth);
            self.events.push(KyberEvent::Adjust {
                domain: DOMAIN_NAMES[d],
                depth,
            });
        }
    }

    /// `kyber_timer_fn`.
    fn timer_fn(&mut self, jif: u64) {
        for cpu in &mut self.cpu_latency {
            for (d, per) in cpu.iter_mut().enumerate() {
                for (kind, b) in per.iter_mut().enumerate() {
                    for (i, n) in b.iter_mut().enumerate() {
                        self.latency_buckets[d][kind][i] += std::mem::take(n);
                    }
                }
            }
        }
        let mut bad = false;
        for d in 0..OTHER {
            if self.calculate_percentile(d, IO, 90, jif) >= GOOD_BUCKETS {
                bad = true;
            }
        }
        for d in 0..OTHER {
            let mut p99 = self.calculate_percentile(d, TOTAL, 99, jif);
            if bad {
                if p99 < 0 {
                    p99 = self.domain_p99[d];
                }
                self.domain_p99[d] = -1;
            } else if p99 >= 0 {
                self.domain_p99[d] = p99;
            }
            if p99 < 0 {
                continue;
            }
            if bad || p99 >= GOOD_BUCKETS {
                let orig = self.tokens[d].depth;
                let depth = (orig * (p99 as u32 + 1)) >> LATENCY_SHIFT;
                self.resize_domain(d, depth);
            }
        }
    }

    /// `add_latency_sample`.
    fn add_latency_sample(&mut self, cpu: u32, d: usize, kind: usize, latency: u64) {
        let target = self.latency_targets[d];
        let bucket = if latency > 0 {
            let divisor = (target >> LATENCY_SHIFT).max(1);
            ((latency - 1) / divisor).min(LATENCY_BUCKETS as u64 - 1) as usize
        } else {
            0
        };
        let c = cpu as usize;
        if self.cpu_latency.len() <= c {
            self.cpu_latency.resize(c + 1, Default::default());
        }
        self.cpu_latency[c][d][kind][bucket] += 1;
    }

    /// `kyber_get_domain_token`: a token of the hardware queue's current
    /// domain, or the queue waits for one (`sbitmap_add_wait_queue`).
    fn get_domain_token(&mut self, h: u16) -> Option<u32> {
        let d = self.khds[h as usize].cur_domain;
        let t = &mut self.tokens[d];
        let nr = t.get();
        match nr {
            None if !t.waiters.contains(&h) => t.waiters.push_back(h),
            Some(_) => t.waiters.retain(|&w| w != h),
            None => {}
        }
        nr
    }

    /// `kyber_dispatch_cur_domain`.
    fn dispatch_cur_domain(&mut self, h: u16) -> Option<RqId> {
        let khd = &self.khds[h as usize];
        let d = khd.cur_domain;
        if khd.rqs[d].is_empty() && !khd.kcq_any(d) {
            return None;
        }
        let Some(nr) = self.get_domain_token(h) else {
            // trace_kyber_throttled
            return None;
        };
        let khd = &mut self.khds[h as usize];
        if khd.rqs[d].is_empty() {
            // kyber_flush_busy_kcqs: every busy kcq in index order.
            for (_, list) in std::mem::take(&mut khd.kcqs[d]) {
                khd.rqs[d].extend(list);
            }
        }
        let rq = khd.rqs[d].pop_front().expect("flushed requests");
        khd.batching += 1;
        let k = self.per_rq[rq.0 as usize].as_mut().expect("queued");
        k.token = Some(nr);
        self.queued -= 1;
        Some(rq)
    }
}

impl MqElevator for Kyber {
    fn name(&self) -> &'static str {
        "kyber"
    }

    /// `kyber_limit_depth`: asynchronous requests get `async_depth` bits of
    /// each sbitmap word of the scheduler tags (`sbitmap_get_shallow`);
    /// `Tags` caps the total, so the per-word depth times the words.
    fn limit_depth(&self, flags: ReqFlags, nr_requests: u32) -> u32 {
        if flags.is_sync() {
            return nr_requests;
        }
        // kyber_depth_updated: sbitmap_calculate_shift of the tag depth.
        let mut shift = 6u32;
        if nr_requests >= 4 {
            while (4u32 << shift) > nr_requests {
                shift -= 1;
            }
        }
        let per_word = (1u32 << shift) * ASYNC_PERCENT / 100;
        per_word.max(1) * nr_requests.div_ceil(1 << shift)
    }

    /// `kyber_bio_merge`: `blk_bio_list_merge` over the CPU's kcq list of
    /// the bio's domain.
    fn bio_merge_list(&self, h: u16, cpu: u32, flags: ReqFlags) -> Option<Vec<RqId>> {
        let d = sched_domain(flags);
        let list = self.khds.get(h as usize).and_then(|k| k.kcqs[d].get(&cpu));
        Some(list.map_or_else(Vec::new, |l| l.iter().copied().collect()))
    }

    /// Kyber neither hashes requests nor merges them at insertion.
    fn rqhash(&self) -> bool {
        false
    }

    /// `kyber_insert_requests`: at the tail of the CPU's kcq list of its
    /// domain (`kyber_prepare_request` cleared the token).
    fn insert_request(&mut self, _now: Instant, h: u16, rqs: &mut RequestPool, rq: RqId) {
        let r = rqs.get(rq);
        let k = KRq {
            domain: sched_domain(r.flags),
            token: None,
            cpu: r.cpu,
            hctx: h,
        };
        let i = rq.0 as usize;
        if self.per_rq.len() <= i {
            self.per_rq.resize(i + 1, None);
        }
        self.per_rq[i] = Some(k);
        self.queued += 1;
        self.khd(h).kcqs[k.domain]
            .entry(k.cpu)
            .or_default()
            .push_back(rq);
    }

    /// `kyber_dispatch_request`: the current batch, else the next domains
    /// round-robin, wrapping to the current one.
    fn dispatch_request(&mut self, _now: Instant, h: u16, _rqs: &RequestPool) -> Option<RqId> {
        self.khd(h);
        let khd = &self.khds[h as usize];
        if khd.batching < BATCH_SIZE[khd.cur_domain] {
            if let Some(rq) = self.dispatch_cur_domain(h) {
                return Some(rq);
            }
        }
        self.khds[h as usize].batching = 0;
        for _ in 0..NUM_DOMAINS {
            let khd = &mut self.khds[h as usize];
            khd.cur_domain = (khd.cur_domain + 1) % NUM_DOMAINS;
            if let Some(rq) = self.dispatch_cur_domain(h) {
                return Some(rq);
            }
        }
        None
    }

    /// `kyber_has_work`.
    fn has_work(&self, h: u16) -> bool {
        self.khds
            .get(h as usize)
            .is_some_and(|k| (0..NUM_DOMAINS).any(|d| !k.rqs[d].is_empty() || k.kcq_any(d)))
    }

    /// `kyber_completed_request`: latency samples, and the timer armed
    /// `HZ / 10` ahead unless it expires sooner (`timer_reduce`).
    fn completed_request(&mut self, now: Instant, rqs: &RequestPool, rq: RqId) {
        let Some(k) = self.k(rq) else {
            return;
        };
        if k.domain == OTHER {
            return;
        }
        let r = rqs.get(rq);
        let cpu = r.cpu;
        self.add_latency_sample(cpu, k.domain, TOTAL, now.since(r.start_time).as_ns());
        self.add_latency_sample(cpu, k.domain, IO, now.since(r.fifo_time).as_ns());
        let at = self.jiffies(now) + self.cfg.hz / 10;
        self.timer = Some(self.timer.map_or(at, |t| t.min(at)));
    }

    /// `kyber_finish_request`: the token back (`rq_clear_domain_token`),
    /// waking waiting hardware queues (`kyber_domain_wake`).
    fn finish_request(&mut self, _rqs: &RequestPool, rq: RqId) {
        let Some(k) = self.per_rq.get_mut(rq.0 as usize).and_then(Option::take) else {
            return;
        };
        if let Some(nr) = k.token {
            self.tokens[k.domain].clear(nr, &mut self.woken);
        } else {
            // Freed while queued (a merge): out of its list.
            let khd = &mut self.khds[k.hctx as usize];
            khd.rqs[k.domain].retain(|&r| r != rq);
            if let Some(l) = khd.kcqs[k.domain].get_mut(&k.cpu) {
                l.retain(|&r| r != rq);
                if l.is_empty() {
                    khd.kcqs[k.domain].remove(&k.cpu);
                }
            }
            self.queued -= 1;
        }
    }

    fn timer(&self) -> Option<Instant> {
        let hz = self.cfg.hz;
        self.timer
            .map(|j| Instant((j * 1_000_000_000).div_ceil(hz)))
    }

    fn timer_fired(&mut self, now: Instant) {
        self.timer = None;
        let jif = self.jiffies(now);
        self.timer_fn(jif);
    }

    fn take_wakeups(&mut self, out: &mut Vec<u16>) {
        out.append(&mut self.woken);
    }

    fn cost(&self) -> iostack_block::SchedCost {
        crate::cost::KYBER
    }

    fn queued(&self) -> usize {
        self.queued
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iostack_block::{BioId, FlushRole, Request};

    fn kyber() -> Kyber {
        Kyber::new(KyberConfig {
            read_lat_nsec: 2_000_000,
            write_lat_nsec: 10_000_000,
            hz: 1000,
        })
    }

    fn rq(rqs: &mut RequestPool, flags: ReqFlags, sector: u64, cpu: u32, at: Instant) -> RqId {
        rqs.alloc(Request {
            sector,
            sectors: 8,
            segments: 1,
            flags,
            pid: 1,
            cpu,
            start_time: at,
            fifo_time: at,
            started: false,
            dispatched: false,
            in_driver: false,
            sync_pool: true,
            ioprio: (0, 0),
            bio_head: BioId(0),
            bio_tail: BioId(0),
            elv_private: 0,
            sorted: true,
            softbarrier: false,
            role: FlushRole::None,
            fseq: 0,
            on_hash: false,
        })
    }

    /// Insert, dispatch (issue at `at`), complete after `lat`, finish.
    fn serve(k: &mut Kyber, rqs: &mut RequestPool, flags: ReqFlags, at: Instant, lat: u64) {
        let r = rq(rqs, flags, 0, 0, at);
        k.insert_request(at, 0, rqs, r);
        assert_eq!(k.dispatch_request(at, 0, rqs), Some(r));
        let done = Instant(at.as_ns() + lat);
        k.completed_request(done, rqs, r);
        k.finish_request(rqs, r);
        rqs.free(r);
    }

    #[test]
    fn slow_reads_throttle_the_write_domain_not_the_reads() {
        let (mut k, mut rqs) = (kyber(), RequestPool::default());
        // 600 reads at 3 ms (over the 2 ms target) and 600 writes at 1 ms
        // (a tenth of theirs), all within the first 100 ms.
        for i in 0..600u64 {
            let at = Instant(i * 10_000);
            serve(&mut k, &mut rqs, ReqFlags::READ, at, 3_000_000);
            serve(&mut k, &mut rqs, ReqFlags::WRITE, at, 1_000_000);
        }
        // Armed HZ/10 after the first completion (a write at jiffy 1).
        let t = k.timer().expect("armed by the completions");
        assert_eq!(t, Instant(101_000_000));
        k.timer_fired(t);
        // Read p90 of I/O latency is bucket 5 of 8 (> target): congestion.
        // Writes' p99 is bucket 0: 128 * 1 / 4 = 32. Reads' own p99 is bad,
        // so they are eased: 256 * 6 / 4, clamped to 256 (no change).
        assert_eq!(k.depth(WRITE), 32);
        assert_eq!(k.depth(READ), 256);
        assert!(k.events().contains(&KyberEvent::Adjust {
            domain: "WRITE",
            depth: 32
        }));
        assert!(k.events().contains(&KyberEvent::Latency {
            domain: "READ",
            kind: "I/O",
            percentile: 90,
            bucket: 6,
            samples: 600
        }));
    }

    #[test]
    fn good_latencies_leave_depths_alone_and_few_samples_wait() {
        let (mut k, mut rqs) = (kyber(), RequestPool::default());
        for i in 0..100u64 {
            serve(&mut k, &mut rqs, ReqFlags::READ, Instant(i * 1000), 100_000);
        }
        let t = k.timer().unwrap();
        k.timer_fired(t);
        // 100 samples and less than a second: no percentile yet.
        assert!(k.events().is_empty());
        assert_eq!(k.depth(READ), 256);
    }

    #[test]
    fn a_domain_out_of_tokens_waits_and_is_woken_in_batches() {
        let (mut k, mut rqs) = (kyber(), RequestPool::default());
        k.tokens[WRITE].resize(8); // wake_batch = max(8 / 8, 1) = 1
        let t0 = Instant::ZERO;
        let ws: Vec<RqId> = (0..9)
            .map(|i| {
                let r = rq(&mut rqs, ReqFlags::WRITE, i * 8, 1, t0);
                k.insert_request(t0, 0, &mut rqs, r);
                r
            })
            .collect();
        let got: Vec<RqId> = (0..8)
            .map(|_| k.dispatch_request(t0, 0, &rqs).unwrap())
            .collect();
        assert_eq!(got, ws[..8]);
        assert_eq!(k.dispatch_request(t0, 0, &rqs), None);
        assert!(k.has_work(0));
        assert_eq!(k.tokens_held(WRITE), 8);
        let mut woken = Vec::new();
        k.take_wakeups(&mut woken);
        assert!(woken.is_empty());
        k.finish_request(&rqs, got[0]);
        k.take_wakeups(&mut woken);
        assert_eq!(woken, [0], "kyber_domain_wake reruns the hardware queue");
        assert_eq!(k.dispatch_request(t0, 0, &rqs), Some(ws[8]));
    }

    #[test]
    fn dispatch_goes_round_robin_over_domains_in_batches() {
        let (mut k, mut rqs) = (kyber(), RequestPool::default());
        let t0 = Instant::ZERO;
        for i in 0..20 {
            for f in [ReqFlags::READ, ReqFlags::WRITE] {
                let r = rq(&mut rqs, f, i * 8, 0, t0);
                k.insert_request(t0, 0, &mut rqs, r);
            }
        }
        let dirs: String = (0..40)
            .map(|_| {
                let r = k.dispatch_request(t0, 0, &rqs).unwrap();
                if rqs.get(r).is_write() {
                    'W'
                } else {
                    'R'
                }
            })
            .collect();
        // kyber_batch_size: 16 reads, then 8 writes, then back to reads.
        let want = format!(
            "{}{}{}{}",
            "R".repeat(16),
            "W".repeat(8),
            "R".repeat(4),
            "W".repeat(12)
        );
        assert_eq!(dirs, want);
    }

    #[test]
    fn async_requests_get_three_quarters_of_each_tag_word() {
        let k = kyber();
        assert_eq!(k.limit_depth(ReqFlags::READ, 256), 256);
        // 256 tags: shift 6, 48 of each of 4 words.
        assert_eq!(k.limit_depth(ReqFlags::WRITE, 256), 192);
        assert_eq!(k.limit_depth(ReqFlags::WRITE | ReqFlags::SYNC, 256), 256);
    }
}
