//! Per-process results of a run, kept in constant memory: counters and latency
//! accumulators, never per-I/O records.

use crate::workload::{Dir, ProcSpec};
use iostack_block::QueueStats;
use iostack_des::{Duration, Instant};

/// Latency accumulator: count, extremes, sum and sum of squares, and a log-linear
/// histogram (64 sub-buckets per power of two) for percentiles.
#[derive(Clone, Debug, Default)]
pub struct Lat {
    pub n: u64,
    pub min: u64,
    pub max: u64,
    pub sum: u128,
    pub sum_sq: u128,
    /// Bucket `base + i` holds `buckets[i]`: only the range between the
    /// smallest and largest bucket seen is kept (a process with a few I/Os of
    /// similar latency keeps a few counters, not every bucket below them).
    base: usize,
    buckets: Vec<u64>,
}

const SUB_BITS: u32 = 6;

fn bucket_of(v: u64) -> usize {
    if v < (1 << SUB_BITS) {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let sub = (v >> shift) & ((1 << SUB_BITS) - 1);
    (((shift + 1) << SUB_BITS) + sub as u32) as usize
}

fn bucket_value(i: usize) -> u64 {
    let i = i as u64;
    if i < (1 << SUB_BITS) {
        return i;
    }
    let shift = (i >> SUB_BITS) - 1;
    let sub = i & ((1 << SUB_BITS) - 1);
    // Midpoint of the bucket.
    (((1 << SUB_BITS) | sub) << shift) + (1u64 << shift) / 2
}

impl Lat {
    pub fn add(&mut self, ns: u64) {
        if self.n == 0 || ns < self.min {
            self.min = ns;
        }
        if ns > self.max {
            self.max = ns;
        }
        self.n += 1;
        self.sum += ns as u128;
        self.sum_sq += (ns as u128) * (ns as u128);
        let b = bucket_of(ns);
        self.cover(b, b + 1);
        self.buckets[b - self.base] += 1;
    }
    /// Make the kept range cover buckets `[lo, hi)`.
    fn cover(&mut self, lo: usize, hi: usize) {
        if self.buckets.is_empty() {
            self.base = lo;
        }
        if lo < self.base {
            let grow = self.base - lo;
            self.buckets.splice(0..0, std::iter::repeat_n(0, grow));
            self.base = lo;
        }
        if self.base + self.buckets.len() < hi {
            self.buckets.resize(hi - self.base, 0);
        }
    }
    /// Add another histogram's samples (fio's `group_reporting` sums).
    pub fn merge(&mut self, o: &Lat) {
        if o.n == 0 {
            return;
        }
        self.cover(o.base, o.base + o.buckets.len());
        let at = o.base - self.base;
        for (a, b) in self.buckets[at..].iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.min = if self.n == 0 {
            o.min
        } else {
            self.min.min(o.min)
        };
        self.max = self.max.max(o.max);
        self.n += o.n;
        self.sum += o.sum;
        self.sum_sq += o.sum_sq;
    }

    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let n = self.n as f64;
        let mean = self.sum as f64 / n;
        let var = (self.sum_sq as f64 - n * mean * mean) / (n - 1.0);
        var.max(0.0).sqrt()
    }
    /// The value at percentile `p` (0..=100), from the histogram.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let target = ((p / 100.0) * self.n as f64).ceil().max(1.0) as u64;
        let mut acc = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            acc += c;
            if acc >= target {
                return bucket_value(self.base + i).clamp(self.min, self.max);
            }
        }
        self.max
    }
}

#[derive(Clone, Debug, Default)]
pub struct DirStats {
    pub ios: u64,
    pub bytes: u64,
    /// I/Os that transferred less than asked (end of file).
    pub short: u64,
    /// Completion latency (fio's full slat/clat/lat statistics are kept by the
    /// fio report's observer).
    pub clat: Lat,
}

#[derive(Clone, Debug)]
pub struct ProcResult {
    pub name: String,
    pub comm: String,
    pub group: u32,
    pub pid: u32,
    pub iodepth: u32,
    pub start: Instant,
    pub end: Instant,
    pub dirs: [DirStats; 2],
    /// I/Os submitted at each in-flight depth (1, 2, 4, 8, 16, 32, >=64 buckets).
    pub depth_hist: [u64; 7],
    pub error: Option<String>,
    /// CPU time the task spent in the kernel on its own behalf: system-call
    /// entry, pinning user pages, copies to and from the page cache, bios it
    /// submitted, and the writeback it did itself (in `balance_dirty_pages` or
    /// `fsync`). It is the sum of the CPU costs the model charges to the task;
    /// fio reports it as `sys`.
    pub sys_ns: u64,
    /// Times the task slept and was woken (on its I/O, a request, a page or
    /// congestion): fio's `ctx`.
    pub ctx: u64,
    /// fsyncs/fdatasyncs of `fsync=N`/`fdatasync=N` done (fio's sync
    /// `total_ios`).
    pub syncs: u64,
    /// Bytes of the file this process created before the run, as fio's
    /// `setup_files` lays out a missing file (`Laying out IO file`); `None`
    /// when the file or device existed.
    pub laid_out: Option<u64>,
    /// When fio's verify phase began (`do_verify`'s `td->start`): the
    /// writes' runtime ends there and the verify reads' begins.
    pub verify_start: Option<Instant>,
}

impl ProcResult {
    pub fn new(spec: &ProcSpec, pid: u32) -> Self {
        ProcResult {
            name: spec.name.clone(),
            comm: spec.comm.clone(),
            group: spec.group,
            pid,
            iodepth: 1,
            start: Instant::ZERO,
            end: Instant::ZERO,
            dirs: Default::default(),
            depth_hist: [0; 7],
            error: None,
            sys_ns: 0,
            ctx: 0,
            syncs: 0,
            laid_out: None,
            verify_start: None,
        }
    }

    pub fn runtime(&self) -> Duration {
        self.end.since(self.start)
    }

    pub(crate) fn note_depth(&mut self, depth: u32) {
        let i = match depth {
            0..=1 => 0,
            2 => 1,
            3..=4 => 2,
            5..=8 => 3,
            9..=16 => 4,
            17..=32 => 5,
            _ => 6,
        };
        self.depth_hist[i] += 1;
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record(&mut self, dir: Dir, bytes: u64, asked: u64, clat: Duration) {
        let d = &mut self.dirs[dir as usize];
        d.ios += 1;
        d.bytes += bytes;
        if bytes < asked {
            d.short += 1;
        }
        d.clat.add(clat.as_ns());
    }
}

/// A file's on-disk layout after the run (what FIEMAP reports).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileLayout {
    pub path: String,
    /// The job (process name) that first used the file.
    pub job: String,
    pub size: u64,
    pub block_size: u32,
    /// Mapped extents in logical order, as FIEMAP reports them: (logical block,
    /// physical block, blocks).
    pub extents: Vec<(u64, u64, u64)>,
}

impl FileLayout {
    /// Extents as filefrag counts them for a file without holes: a new one
    /// wherever the next run does not start where the previous one ended.
    pub fn extent_count(&self) -> u64 {
        let runs: Vec<iostack_fs::FileExtent> = self
            .extents
            .iter()
            .map(|&(logical, physical, len)| iostack_fs::FileExtent {
                logical,
                physical,
                len,
            })
            .collect();
        iostack_fs::extent_fs::filefrag_count(&runs) as u64
    }
}

/// Dirty-memory figures of a run, in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VmStats {
    /// The most dirty pages seen after any event.
    pub max_dirty: u64,
    /// The most dirty + writeback pages seen after any event.
    pub max_dirty_writeback: u64,
    /// The hard and background limits of the run.
    pub dirty_limit: u64,
    pub background_limit: u64,
    /// `ratelimit_pages`: how far a dirtier may run past a check.
    pub ratelimit: u64,
    /// Writeback callers that waited in `lock_page` for a page another caller
    /// held in its extent.
    pub lock_waits: u64,
    /// ext4 pages redirtied because their extent was only partly mapped.
    pub redirtied: u64,
    /// Pages written back, by caller.
    pub wb_pages: WbPages,
}

/// Pages written back by caller (kept by the page cache).
pub use iostack_mm::WbPages;

/// Everything a run produced besides its traces.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub procs: Vec<ProcResult>,
    /// Page-cache figures of the run.
    pub vm: VmStats,
    /// Layout of every file the processes used, in process order.
    pub files: Vec<FileLayout>,
    pub queue: QueueStats,
    pub end: Instant,
    /// How the run ended: complete, cut at the user's limit, or stopped with
    /// work that could not be done.
    pub ending: crate::RunEnd,
    pub events: u64,
    pub scheduler: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotone_and_tight() {
        let mut last = 0;
        for v in [0u64, 1, 63, 64, 65, 127, 128, 1000, 1_000_000, 123_456_789] {
            let b = bucket_of(v);
            assert!(b >= last);
            last = b;
            let mid = bucket_value(b);
            let err = mid.abs_diff(v) as f64 / (v.max(1) as f64);
            assert!(err < 0.02 || v < 64, "{v} -> {mid}");
        }
    }

    /// Histograms kept from their lowest bucket merge and give percentiles as
    /// histograms of every bucket from 0 (the sum of the samples' counts per
    /// bucket) do.
    #[test]
    fn kept_ranges_merge_as_full_histograms() {
        let mut rng = iostack_des::Rng::stream(iostack_des::Seed(3), "lat");
        for _ in 0..200 {
            let mut parts: Vec<Lat> = Vec::new();
            let mut full = vec![0u64; 4096];
            let mut all = Lat::default();
            for _ in 0..1 + rng.below(4) {
                let mut l = Lat::default();
                let scale = 1u64 << rng.below(40);
                for _ in 0..rng.below(20) {
                    let v = rng.below(scale) + rng.below(100);
                    l.add(v);
                    full[bucket_of(v)] += 1;
                }
                all.merge(&l);
                parts.push(l);
            }
            let kept: Vec<u64> = (0..4096usize)
                .map(|b| match b.checked_sub(all.base) {
                    Some(i) => all.buckets.get(i).copied().unwrap_or(0),
                    None => 0,
                })
                .collect();
            assert_eq!(kept, full);
            let n: u64 = parts.iter().map(|l| l.n).sum();
            assert_eq!(all.n, n);
            for p in [1.0, 50.0, 99.0, 100.0] {
                let target = ((p / 100.0) * n as f64).ceil().max(1.0) as u64;
                let mut acc = 0;
                let want = full.iter().position(|&c| {
                    acc += c;
                    acc >= target
                });
                let want = want.map_or(all.max, |b| bucket_value(b).clamp(all.min, all.max));
                assert_eq!(all.percentile(p), if n == 0 { 0 } else { want });
            }
        }
    }

    /// A process's few I/Os of about a second keep one counter each, not the
    /// 1600 buckets below them.
    #[test]
    fn a_histogram_keeps_only_its_range() {
        let mut l = Lat::default();
        l.add(1_000_000_000);
        l.add(1_000_000_100);
        assert_eq!(l.buckets.len(), 1);
        l.add(2_000_000_000);
        assert!(l.buckets.len() <= 65, "{}", l.buckets.len());
        assert_eq!(l.percentile(100.0), 2_000_000_000);
    }

    #[test]
    fn percentiles_match_a_sort() {
        let mut l = Lat::default();
        let mut v: Vec<u64> = (0..1000u64).map(|i| (i * 7919) % 100_003 + 1000).collect();
        for &x in &v {
            l.add(x);
        }
        v.sort();
        for p in [1.0, 50.0, 90.0, 99.0] {
            let exact = v[((p / 100.0) * 1000.0) as usize - 1] as f64;
            let got = l.percentile(p) as f64;
            assert!((got - exact).abs() / exact < 0.02, "p{p}: {got} vs {exact}");
        }
    }
}
