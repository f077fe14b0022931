//! The mechanism of a disk in integer arithmetic: the seek curve, the platter's
//! rotation as a function of virtual time, and the zoned layout that maps an LBA
//! to a cylinder, a head and an angular slot.

use super::HddParams;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Floor of the square root of a `u64` (Newton's method from an over-estimate).
pub fn isqrt_u64(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let bits = 64 - n.leading_zeros();
    let mut x = 1u64 << bits.div_ceil(2);
    loop {
        let y = (x + n / x) / 2;
        if y >= x {
            return x;
        }
        x = y;
    }
}

/// Floor of the square root of a `u128`.
pub fn isqrt_u128(n: u128) -> u128 {
    if n < 2 {
        return n;
    }
    let bits = 128 - n.leading_zeros();
    let mut x = 1u128 << bits.div_ceil(2);
    loop {
        let y = (x + n / x) / 2;
        if y >= x {
            return x;
        }
        x = y;
    }
}

/// √d in Q16 fixed point, for d < 2^32.
fn sqrt_q16(d: u64) -> u64 {
    isqrt_u64(d << 32)
}

/// The Ruemmler–Wilkes two-part seek curve (DiskSim's "HPL" equation):
/// `t(0) = 0`, `t(d) = a + b·√d` for `1 ≤ d < threshold`, `t(d) = c + e·d` beyond.
/// Coefficients are integers: `a`, `c` in ns, `b` in ns/√cylinder and `e` in
/// ns/cylinder, both in Q16 fixed point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeekCurve {
    /// Number of cylinders; the longest seek is `cylinders - 1`.
    pub cylinders: u64,
    /// First distance (cylinders) on the linear part.
    pub threshold: u64,
    /// Constant of the square-root part, ns (may be negative; `t(1)` is not).
    pub a_ns: i64,
    /// Square-root coefficient, ns per √cylinder, Q16.
    pub b_q16: u64,
    /// Constant of the linear part, ns.
    pub c_ns: i64,
    /// Linear coefficient, ns per cylinder, Q16.
    pub e_q16: u64,
    /// `time(d)` for the first distances of the square-root part, so that the
    /// scheduler's many evaluations need no square root. Shared by every curve
    /// fitted to the same figures (`SeekCurve::fit`).
    table: Arc<[u32]>,
}

/// Curves already fitted, by `fit`'s arguments. `fit` is a pure function and
/// its table (up to 64 Ki square roots) costs more than many short runs, so the
/// disks of a `reproduce` (the same few models in many variants, four in each
/// RAID) share one; a cache of a pure function cannot change a result.
type FitKey = (u64, u64, u64, u64);
/// At most this many curves are kept (a sweep over seek times fits a new one
/// per point; memory stays bounded).
const FITTED_MAX: usize = 32;
static FITTED: OnceLock<Mutex<BTreeMap<FitKey, SeekCurve>>> = OnceLock::new();

/// Distances of the square-root part kept in the table, at most.
const SEEK_TABLE_MAX: u64 = 1 << 16;

impl SeekCurve {
    /// Seek time for a move of `d` cylinders, ns.
    #[inline]
    pub fn time(&self, d: u64) -> u64 {
        if let Some(&t) = self.table.get(d as usize) {
            return t as u64;
        }
        self.compute(d)
    }

    fn compute(&self, d: u64) -> u64 {
        if d == 0 {
            return 0;
        }
        let t = if d < self.threshold {
            self.a_ns + ((self.b_q16 as u128 * sqrt_q16(d) as u128) >> 32) as i64
        } else {
            self.c_ns + ((self.e_q16 as u128 * d as u128) >> 16) as i64
        };
        t.max(0) as u64
    }

    /// The curve for a given threshold, constrained to pass through `t(1) = t2t`
    /// and `t(N-1) = full` and to be continuous with a continuous slope at the
    /// threshold.
    fn with_threshold(cylinders: u64, x0: u64, t2t: u64, full: u64) -> SeekCurve {
        let n = cylinders;
        let sx = sqrt_q16(x0) as u128; // √x0, Q16
        let one = 1u128 << 16;
        // denom = √x0/2 + (N-1)/(2√x0) - 1, Q16 (positive for N ≥ 3).
        let denom = sx / 2 + (((n - 1) as u128) << 32) / (2 * sx);
        let denom = denom.saturating_sub(one).max(1);
        let b_q16 = ((((full - t2t) as u128) << 32) / denom) as u64;
        let a_ns = t2t as i64 - (b_q16 >> 16) as i64;
        let e_q16 = (((b_q16 as u128) << 16) / (2 * sx)) as u64;
        let c_ns = a_ns + (((b_q16 as u128 * sx) >> 32) / 2) as i64;
        SeekCurve {
            cylinders,
            threshold: x0,
            a_ns,
            b_q16,
            c_ns,
            e_q16,
            table: Arc::from([]),
        }
    }

    /// Fill the lookup table of the square-root part.
    fn tabulate(mut self) -> SeekCurve {
        let n = self.threshold.min(SEEK_TABLE_MAX);
        self.table = (0..n)
            .map(|d| self.compute(d).min(u32::MAX as u64) as u32)
            .collect::<Vec<u32>>()
            .into();
        self
    }

    /// Mean seek time over uniformly random start and end cylinders, ns, from the
    /// continuous form of the distance density 2(1-u) (u = d/N); used by the fit.
    fn mean_continuous(&self) -> i128 {
        const F: i128 = 1 << 32;
        let n = self.cylinders as i128;
        let u0 = ((self.threshold as i128) << 32) / n;
        let r = isqrt_u128((u0 as u128) << 32) as i128; // √u0, Q32
        let u2 = (u0 * u0) >> 32;
        let u3 = (u2 * u0) >> 32;
        let u15 = (u0 * r) >> 32;
        let u25 = (u15 * u0) >> 32;
        // ∫0^u0 2(1-u) du, ∫0^u0 2(1-u)√u du, ∫u0^1 2(1-u) du, ∫u0^1 2(1-u)u du.
        let t1 = 2 * u0 - u2;
        let t2 = 4 * u15 / 3 - 4 * u25 / 5;
        let t3 = ((F - u0) * (F - u0)) >> 32;
        let t4 = F / 3 - u2 + 2 * u3 / 3;
        let b_sqrt_n = ((self.b_q16 as u128 * sqrt_q16(self.cylinders) as u128) >> 32) as i128;
        let e_n = ((self.e_q16 as u128 * self.cylinders as u128) >> 16) as i128;
        (self.a_ns as i128 * t1 + b_sqrt_n * t2 + self.c_ns as i128 * t3 + e_n * t4) >> 32
    }

    /// Fit the curve to datasheet figures: single-track (`t2t`), average and full
    /// stroke seek times in ns, for `cylinders` cylinders. The threshold is chosen
    /// so that the mean over uniformly random start and end cylinders is the
    /// average; the slope is continuous there. If the average lies outside what
    /// such a curve can reach (about t2t + (full-t2t)/3 for a straight line to
    /// t2t + 8/15·(full-t2t) for a pure square root), the nearest one is used.
    pub fn fit(cylinders: u64, t2t: u64, avg: u64, full: u64) -> SeekCurve {
        let key = (cylinders, t2t, avg, full);
        let cache = FITTED.get_or_init(|| Mutex::new(BTreeMap::new()));
        if let Some(c) = cache.lock().expect("seek-curve cache").get(&key) {
            return c.clone();
        }
        let c = Self::fit_uncached(cylinders, t2t, avg, full);
        let mut m = cache.lock().expect("seek-curve cache");
        if m.len() < FITTED_MAX {
            m.insert(key, c.clone());
        }
        c
    }

    fn fit_uncached(cylinders: u64, t2t: u64, avg: u64, full: u64) -> SeekCurve {
        assert!(cylinders >= 2, "a disk needs at least two cylinders");
        assert!(
            t2t <= avg && avg <= full,
            "seek times must satisfy track-to-track <= average <= full stroke"
        );
        if cylinders < 4 || full == t2t {
            // Too few cylinders for a curve: a straight line through both ends.
            let e_q16 = if cylinders > 2 {
                (((full - t2t) as u128) << 16) / (cylinders as u128 - 2)
            } else {
                0
            } as u64;
            return SeekCurve {
                cylinders,
                threshold: 1,
                a_ns: t2t as i64,
                b_q16: 0,
                c_ns: t2t as i64 - (e_q16 >> 16) as i64,
                e_q16,
                table: Arc::from([]),
            };
        }
        let target = avg as i128;
        // The mean grows with the threshold: binary search for the crossing.
        let (mut lo, mut hi) = (1u64, cylinders - 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if Self::with_threshold(cylinders, mid, t2t, full).mean_continuous() < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let best = [lo.saturating_sub(1).max(1), lo]
            .into_iter()
            .min_by_key(|&x| {
                (Self::with_threshold(cylinders, x, t2t, full).mean_continuous() - target).abs()
            })
            .expect("two candidates");
        Self::with_threshold(cylinders, best, t2t, full).tabulate()
    }
}

/// Platter rotation: the angle is a function of virtual time. Angles are
/// integers in units of 1/`unit` revolution; the platter turns `rate` units per
/// ns, so a revolution is exactly `unit / rate` ns (a rational number).
///
/// A transfer that ends at an exact angle ends at the first whole ns at or after
/// it, by which time the platter may have turned up to `rate - 1` units further.
/// So that the next sector on the track is still caught without waiting a
/// revolution, a sector counts as reachable at `t` if its start lies no more
/// than `rate - 1` units behind the exact angle at `t`. With that convention, the
/// time a sector starts (or a run of sectors ends) is `t + ⌊Δ / rate⌋`, where
/// `Δ` is the angle from [`Rotation::reach_angle`]`(t)` to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotation {
    /// Angle units per revolution.
    pub unit: u64,
    /// Angle units per ns.
    pub rate: u64,
    /// Angle at time 0 (in `0..unit`).
    pub phase: u64,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Rotation {
    pub fn new(rpm: u32, phase_draw: u64) -> Rotation {
        assert!(rpm > 0, "rpm must be positive");
        let per_min = 60_000_000_000u64;
        let g = gcd(per_min, rpm as u64);
        let unit = per_min / g;
        Rotation {
            unit,
            rate: rpm as u64 / g,
            phase: phase_draw % unit,
        }
    }

    /// One revolution, ns (rounded down).
    pub fn rev_ns(&self) -> u64 {
        self.unit / self.rate
    }

    /// The earliest angle (mod `unit`) reachable at `t`: the exact angle less the
    /// tolerance of one ns of rotation.
    #[inline]
    pub fn reach_angle(&self, t: u64) -> u64 {
        (self.phase + (t % self.unit) * self.rate + self.unit - (self.rate - 1)) % self.unit
    }

    /// Angle units from `reach_angle(t)` forward to `slot_angle` (`0..unit`).
    #[inline]
    pub fn delta(&self, t: u64, slot_angle: u64) -> u64 {
        let r = self.reach_angle(t);
        if slot_angle >= r {
            slot_angle - r
        } else {
            slot_angle + self.unit - r
        }
    }

    /// Angle of the start of slot `slot` on a track of `spt` slots (slot may be
    /// ≥ spt, meaning a later revolution).
    #[inline]
    pub fn slot_angle(&self, slot: u64, spt: u32) -> u64 {
        slot * self.unit / spt as u64
    }
}

/// One recording zone: a band of cylinders with the same sectors per track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    /// First LBA of the zone.
    pub first_lba: u64,
    /// Sectors in the zone (the last zone holds only what the capacity needs).
    pub sectors: u64,
    /// First cylinder of the zone (cylinder 0 is outermost).
    pub first_cyl: u32,
    /// Cylinders in the zone.
    pub cylinders: u32,
    /// Sectors per track.
    pub spt: u32,
    /// Track skew, sectors: the angular offset of each track from the one before it
    /// on the same cylinder, so a head switch does not miss the next sector.
    pub track_skew: u32,
    /// Cylinder skew, sectors: the offset of a cylinder's first track from the last
    /// track of the cylinder before it.
    pub cyl_skew: u32,
}

/// A physical location: which track and which angular slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    pub cyl: u32,
    pub head: u32,
    pub spt: u32,
    /// Angular slot of the sector on its track (skew applied), `0..spt`.
    pub slot: u32,
    /// Sectors from this one to the end of the track, ≥ 1.
    pub left_in_track: u32,
}

/// The layout: zones from the outside in, cylinder-major, heads in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub zones: Vec<Zone>,
    pub heads: u32,
    pub cylinders: u32,
    pub capacity: u64,
}

/// Skew in sectors covering `ns` of delay on a track of `spt` sectors, with one
/// ns and one angle unit of margin against rounding.
fn skew_sectors(ns: u64, spt: u32, rot: &Rotation) -> u32 {
    if ns == 0 {
        return 0;
    }
    let need = (ns as u128 + 1) * rot.rate as u128 + 1;
    let s = (need * spt as u128).div_ceil(rot.unit as u128) as u64;
    (s % spt as u64) as u32
}

impl Layout {
    /// Zones of equal width in cylinders, sectors per track falling linearly from
    /// `outer_spt` to `inner_spt`; the last zone takes whatever cylinders the
    /// capacity still needs.
    pub fn new(p: &HddParams, rot: &Rotation) -> Layout {
        let (capacity, heads, zones) = (p.capacity_sectors, p.heads, p.zones);
        let (outer_spt, inner_spt) = (p.outer_sectors_per_track, p.inner_sectors_per_track);
        let (track_skew_ns, cyl_skew_ns) = (p.track_skew_ns, p.cylinder_skew_ns);
        assert!(capacity > 0 && heads > 0 && zones > 0, "empty geometry");
        assert!(
            outer_spt >= inner_spt && inner_spt > 0,
            "sectors per track must fall from the outer to the inner zone"
        );
        let spt_of = |z: u32| -> u32 {
            if zones == 1 {
                outer_spt
            } else {
                outer_spt - ((outer_spt - inner_spt) as u64 * z as u64 / (zones - 1) as u64) as u32
            }
        };
        let per_cyl_all: u64 = (0..zones).map(|z| heads as u64 * spt_of(z) as u64).sum();
        let k = (capacity / per_cyl_all).max(1);
        let mut v = Vec::with_capacity(zones as usize);
        let mut lba = 0u64;
        let mut cyl = 0u64;
        for z in 0..zones {
            if lba >= capacity {
                break;
            }
            let spt = spt_of(z);
            let per_cyl = heads as u64 * spt as u64;
            let cyls = if z + 1 == zones {
                (capacity - lba).div_ceil(per_cyl)
            } else {
                k.min((capacity - lba).div_ceil(per_cyl))
            };
            let sectors = (cyls * per_cyl).min(capacity - lba);
            v.push(Zone {
                first_lba: lba,
                sectors,
                first_cyl: cyl as u32,
                cylinders: cyls as u32,
                spt,
                track_skew: skew_sectors(track_skew_ns, spt, rot),
                cyl_skew: skew_sectors(cyl_skew_ns, spt, rot),
            });
            lba += sectors;
            cyl += cyls;
        }
        assert!(cyl <= u32::MAX as u64, "too many cylinders");
        Layout {
            zones: v,
            heads,
            cylinders: cyl as u32,
            capacity,
        }
    }

    #[inline]
    pub fn zone_of(&self, lba: u64) -> usize {
        self.zones.partition_point(|z| z.first_lba <= lba) - 1
    }

    /// Where sector `lba` lies.
    #[inline]
    pub fn locate(&self, lba: u64) -> Loc {
        debug_assert!(lba < self.capacity);
        let z = &self.zones[self.zone_of(lba)];
        let off = lba - z.first_lba;
        let spt = z.spt as u64;
        let track = off / spt;
        let sector = (off % spt) as u32;
        let heads = self.heads as u64;
        let cyl_in_zone = track / heads;
        let head = (track % heads) as u32;
        // Head switches and cylinder switches before this track in the zone.
        let skew =
            ((track - cyl_in_zone) * z.track_skew as u64 + cyl_in_zone * z.cyl_skew as u64) % spt;
        let slot = ((sector as u64 + skew) % spt) as u32;
        let left_track = z.spt - sector;
        let left_zone = z.first_lba + z.sectors - lba;
        Loc {
            cyl: z.first_cyl + cyl_in_zone as u32,
            head,
            spt: z.spt,
            slot,
            left_in_track: (left_track as u64).min(left_zone) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isqrt_is_floor() {
        for n in 0..10_000u64 {
            let r = isqrt_u64(n);
            assert!(r * r <= n && (r + 1) * (r + 1) > n, "{n}");
        }
        for &n in &[u64::MAX, u64::MAX - 1, 1 << 63, (1 << 32) - 1] {
            let r = isqrt_u64(n) as u128;
            assert!(r * r <= n as u128 && (r + 1) * (r + 1) > n as u128);
        }
        let n = u128::MAX;
        let r = isqrt_u128(n);
        assert_eq!(r, u64::MAX as u128);
    }

    #[test]
    fn rotation_is_exact_over_a_revolution() {
        let r = Rotation::new(7200, 12345);
        // 7200 rpm: 25e6 units per revolution at 3 units per ns.
        assert_eq!(r.unit, 25_000_000);
        assert_eq!(r.rate, 3);
        assert_eq!(r.rev_ns(), 8_333_333);
        let a0 = r.slot_angle(7, 1000);
        let t = 1_000_000;
        let start = t + r.delta(t, a0) / r.rate;
        assert!(start >= t && start <= t + r.rev_ns() + 1);
        // At `start` the slot is reachable with no further wait.
        assert!(r.delta(start, a0) < r.rate);
        // A run ending exactly at a slot boundary leaves the next slot reachable.
        let end = t + (r.delta(t, a0) + r.slot_angle(8, 1000) - a0) / r.rate;
        assert!(r.delta(end, r.slot_angle(8, 1000)) < r.rate);
    }

    #[test]
    fn seek_table_agrees_with_the_formula() {
        let c = SeekCurve::fit(200_000, 1_000_000, 8_500_000, 20_000_000);
        assert!(c.threshold > 1 && !c.table.is_empty());
        for d in (0..c.threshold + 10).step_by(7) {
            assert_eq!(c.time(d), c.compute(d), "{d}");
        }
        // Continuous at the threshold (within rounding).
        let x = c.threshold;
        assert!(c.compute(x).abs_diff(c.compute(x - 1)) < 1_000);
        // A tiny disk falls back to a straight line.
        let l = SeekCurve::fit(3, 1_000, 1_500, 2_000);
        assert_eq!((l.time(0), l.time(1), l.time(2)), (0, 1_000, 2_000));
    }

    #[test]
    fn layout_covers_capacity() {
        let rot = Rotation::new(7200, 0);
        let mut p = super::super::presets().remove(0).1;
        p.capacity_sectors = 10_000_000;
        p.heads = 4;
        p.zones = 8;
        p.outer_sectors_per_track = 1000;
        p.inner_sectors_per_track = 500;
        p.track_skew_ns = 500_000;
        p.cylinder_skew_ns = 1_000_000;
        let l = Layout::new(&p, &rot);
        let total: u64 = l.zones.iter().map(|z| z.sectors).sum();
        assert_eq!(total, 10_000_000);
        let last = l.locate(9_999_999);
        assert_eq!(last.cyl + 1, l.cylinders);
        let first = l.locate(0);
        assert_eq!((first.cyl, first.head, first.slot), (0, 0, 0));
        let next_track = l.locate(1000);
        assert_eq!((next_track.cyl, next_track.head), (0, 1));
        assert_eq!(next_track.slot, l.zones[0].track_skew);
    }
}
