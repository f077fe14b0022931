//! Mechanical hard disk model.
//!
//! * Layout: zoned recording from the outside in (sectors per track falling
//!   linearly across the zones), cylinder-major with heads in order, optional
//!   track and cylinder skew ([`mech::Layout`]).
//! * Seek: the Ruemmler–Wilkes two-part curve fitted to datasheet figures
//!   ([`mech::SeekCurve`]), plus head-switch time and a write-settle extra.
//! * Rotation: the platter angle is an exact integer function of virtual time
//!   ([`mech::Rotation`]); a media access waits for its first sector to come
//!   round and then transfers at the zone's rate, switching heads and cylinders
//!   at track ends.
//! * Cache: segmented read cache with read-ahead that keeps streaming after a
//!   read miss while the drive has nothing else to do, so that a sequential
//!   stream is served at the media rate; write-back cache (when enabled) whose
//!   dirty extents are destaged in elevator order when the drive is idle, or
//!   when a write finds the cache full; a write's data can go to the medium
//!   only once its transfer over the link has ended. FUA writes, and all writes with the write
//!   cache off, go to the medium. A flush (FLUSH CACHE EXT / SYNCHRONIZE CACHE)
//!   is served, once no older command waits, by destaging every dirty extent
//!   in elevator order; it completes when the last one is on the medium (after
//!   the write overhead if the cache was clean). The block layer sends it only
//!   while the write cache is on, and FUA only when `fua` says the drive takes
//!   it (libata leaves FUA off by default, `libata.fua=0`).
//! * Queuing: up to `queue_depth` commands; the next one is chosen by shortest
//!   positioning time (overhead + seek + rotation) unless one has waited past
//!   the age limit, and a write waiting for cache room is served (by a destage)
//!   when it is older than every queued medium command.
//! * Controller: a per-command overhead before each media access (DiskSim
//!   style, not overlapped with the previous access); cache hits and cached
//!   writes share the host link one at a time at the interface rate.
//!
//! Not modelled: seek-time
//! variance and thermal recalibration, defects and spare sectors, serpentine
//! layouts, power states, separate write-seek curves (a constant settle extra
//! stands for them), and invalidation of read segments by writes (the model
//! tracks timing, not data).
//!
//! The device is driven only by `submit`, `poll` and `complete`. The mechanism
//! decides one command at a time, when it becomes free. What it does in the
//! background (read-ahead, idle destaging) is worked out lazily at the next call,
//! which is exact because nothing reaches the drive between calls. A decision
//! is taken at the instant the mechanism frees if a call is certain to happen
//! then (the completion of a reported command no later than that instant);
//! otherwise it is taken at the last call before, with the commands known then.
//! A reported completion never moves.
//!
//! Time is integer ns and angles integer units; there are no floats anywhere.

pub mod mech;
mod presets;

pub use mech::{Layout, Loc, Rotation, SeekCurve, Zone};
pub use presets::presets;

use crate::{Device, DeviceCmd, HwLimits};
use iostack_des::{Instant, Rng};
use std::collections::VecDeque;

/// Parameters of a mechanical disk. Plain data: presets write them from
/// datasheets; the model derives its geometry and seek curve from them.
#[derive(Clone, PartialEq, Eq, serde::Serialize)]
pub struct HddParams {
    /// Capacity in 512-byte logical sectors.
    pub capacity_sectors: u64,
    /// Spindle speed, revolutions per minute.
    pub rpm: u32,
    /// Recording surfaces (heads), i.e. tracks per cylinder.
    pub heads: u32,
    /// Number of recording zones, outer to inner, of equal width in cylinders.
    pub zones: u32,
    /// Sectors per track in the outermost zone. Media rate there is
    /// `outer_sectors_per_track × 512 × rpm / 60` bytes/s before switch overheads.
    pub outer_sectors_per_track: u32,
    /// Sectors per track in the innermost zone; the outer:inner ratio of the media
    /// rate is `outer_sectors_per_track / inner_sectors_per_track`.
    pub inner_sectors_per_track: u32,
    /// Track skew, ns of rotation between the end of one track and the start of
    /// the next on the same cylinder (0 = no skew). Set to at least
    /// `head_switch_ns` so a sequential transfer does not lose a revolution.
    pub track_skew_ns: u64,
    /// Cylinder skew, ns of rotation between the last track of a cylinder and the
    /// first of the next (0 = no skew). Set to at least the track-to-track seek.
    pub cylinder_skew_ns: u64,
    /// Single-cylinder (track-to-track) read seek, ns.
    pub seek_track_to_track_ns: u64,
    /// Average read seek over uniformly random start and end cylinders, ns.
    pub seek_average_ns: u64,
    /// Full-stroke read seek, ns.
    pub seek_full_stroke_ns: u64,
    /// Head switch within a cylinder, ns.
    pub head_switch_ns: u64,
    /// Extra settling before writing after a seek or head switch, ns (the
    /// datasheet's write seek minus read seek).
    pub write_settle_ns: u64,
    /// Controller overhead of a read served from the cache (including one the
    /// read-ahead is still bringing in), ns.
    pub overhead_read_hit_ns: u64,
    /// Controller overhead of a read that goes to the medium, ns. Spent before
    /// the mechanism moves for it, so it adds to every media access.
    pub overhead_read_miss_ns: u64,
    /// Controller overhead of a write, ns: before the data transfer of a cached
    /// write, or before the mechanism moves for a write to the medium.
    pub overhead_write_ns: u64,
    /// Host interface rate, bytes/s (SATA 3 Gb/s ≈ 300 000 000). Limits cache hits
    /// and cached writes, which share it one at a time.
    pub interface_bytes_per_s: u64,
    /// Number of read-cache segments (LRU).
    pub cache_segments: u32,
    /// Sectors one read segment holds; it keeps the most recent ones of a stream.
    pub cache_segment_sectors: u32,
    /// Sectors read ahead past the last requested one (0 = no read-ahead).
    pub read_ahead_sectors: u32,
    /// Write-back cache enabled (WCE). When off, every write goes to the medium.
    pub write_cache: bool,
    /// The drive takes FUA writes as the kernel sees it (SCSI `DPOFUA`; SATA
    /// through libata only with `libata.fua=1`).
    pub fua: bool,
    /// Sectors of dirty data the write cache holds.
    pub write_cache_sectors: u32,
    /// Separate dirty extents the write cache holds (its write segments).
    pub write_cache_extents: u32,
    /// Commands the drive accepts at once (NCQ/TCQ depth; 1 = no queuing).
    pub queue_depth: u32,
    /// A queued command older than this is served next, oldest first, ns.
    pub age_limit_ns: u64,
    /// Limits declared to the block layer.
    pub limits: HwLimits,
    /// A cached write that overlaps dirty data in the write cache waits until
    /// the old copy is written out ("if there is a write hit, then the copy in
    /// the cache is written out before the new copy is accepted into the
    /// cache", Ruemmler and Wilkes, An introduction to disk drive modeling,
    /// 1994); when off, the new copy replaces the old one in the cache.
    pub write_hit_destage: bool,
}

/// As derived, with `write_hit_destage` only when set, so that the
/// configuration hash of every machine without it is what it was before.
impl std::fmt::Debug for HddParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("HddParams");
        d.field("capacity_sectors", &self.capacity_sectors)
            .field("rpm", &self.rpm)
            .field("heads", &self.heads)
            .field("zones", &self.zones)
            .field("outer_sectors_per_track", &self.outer_sectors_per_track)
            .field("inner_sectors_per_track", &self.inner_sectors_per_track)
            .field("track_skew_ns", &self.track_skew_ns)
            .field("cylinder_skew_ns", &self.cylinder_skew_ns)
            .field("seek_track_to_track_ns", &self.seek_track_to_track_ns)
            .field("seek_average_ns", &self.seek_average_ns)
            .field("seek_full_stroke_ns", &self.seek_full_stroke_ns)
            .field("head_switch_ns", &self.head_switch_ns)
            .field("write_settle_ns", &self.write_settle_ns)
            .field("overhead_read_hit_ns", &self.overhead_read_hit_ns)
            .field("overhead_read_miss_ns", &self.overhead_read_miss_ns)
            .field("overhead_write_ns", &self.overhead_write_ns)
            .field("interface_bytes_per_s", &self.interface_bytes_per_s)
            .field("cache_segments", &self.cache_segments)
            .field("cache_segment_sectors", &self.cache_segment_sectors)
            .field("read_ahead_sectors", &self.read_ahead_sectors)
            .field("write_cache", &self.write_cache)
            .field("fua", &self.fua)
            .field("write_cache_sectors", &self.write_cache_sectors)
            .field("write_cache_extents", &self.write_cache_extents)
            .field("queue_depth", &self.queue_depth)
            .field("age_limit_ns", &self.age_limit_ns)
            .field("limits", &self.limits);
        if self.write_hit_destage {
            d.field("write_hit_destage", &self.write_hit_destage);
        }
        d.finish()
    }
}

/// The head's track.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Pos {
    pub cyl: u32,
    pub head: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Free,
    /// Waiting for the mechanism (read miss, write to the medium).
    Media,
    /// A cached write waiting for room in the write cache.
    WaitSpace,
    /// A cache flush waiting for the dirty data to reach the medium.
    Flush,
    /// Service decided; completes at this ns.
    Done(u64),
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    id: u64,
    lba: u64,
    n: u32,
    write: bool,
    arrival: u64,
    seq: u64,
    state: State,
    /// Where the first sector to fetch lies (valid while queued for the medium).
    loc: Loc,
    /// Start angle of that sector on its track.
    a0: u64,
}

/// A read-cache segment: data of `[lo(), hi)`, valid from `ready_at`.
#[derive(Clone, Copy, Debug, Default)]
struct Seg {
    start: u64,
    hi: u64,
    ready_at: u64,
    stamp: u64,
}

/// Read-ahead in progress: the head finished sector `lba - 1` on track `pos` at
/// time `t` and keeps reading toward `limit` into segment `seg`.
#[derive(Clone, Copy, Debug)]
struct Stream {
    t: u64,
    pos: Pos,
    lba: u64,
    limit: u64,
    seg: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pick {
    Slot(usize),
    Stream(usize),
    Destage,
}

/// A mechanical disk.
pub struct Hdd {
    p: HddParams,
    layout: Layout,
    seek: SeekCurve,
    rot: Rotation,
    slots: Vec<Slot>,
    outstanding: u32,
    n_media: u32,
    n_wait: u32,
    n_flush: u32,
    seq: u64,
    reported: Vec<(Instant, u64)>,
    /// End of the mechanism's committed work, ns.
    free_at: u64,
    /// Head's track at `free_at` (when no stream runs).
    pos: Pos,
    /// LBA after the last sector the head passed (sequential detection).
    last_end: u64,
    stream: Option<Stream>,
    segs: Vec<Seg>,
    stamp: u64,
    dirty: Vec<(u64, u64)>,
    /// Cached writes still crossing the link, `(first, end, arrived)` in link
    /// order: their room is taken (counted in `dirty_sectors`), but the drive
    /// cannot write them to the medium before their data has arrived.
    arriving: VecDeque<(u64, u64, u64)>,
    dirty_sectors: u64,
    /// Sectors being destaged and when that ends (space freed then).
    inflight_sectors: u64,
    inflight_until: u64,
    /// When the host link / controller is next free, ns.
    link_free: u64,
}

impl Hdd {
    pub fn new(p: HddParams, mut rng: Rng) -> Hdd {
        assert!(p.queue_depth >= 1, "queue depth must be at least 1");
        assert!(
            p.interface_bytes_per_s > 0,
            "interface rate must be positive"
        );
        let rot = Rotation::new(p.rpm, rng.next_u64());
        let layout = Layout::new(&p, &rot);
        let seek = SeekCurve::fit(
            layout.cylinders as u64,
            p.seek_track_to_track_ns,
            p.seek_average_ns,
            p.seek_full_stroke_ns,
        );
        let qd = p.queue_depth as usize;
        let free = Slot {
            id: 0,
            lba: 0,
            n: 0,
            write: false,
            arrival: 0,
            seq: 0,
            state: State::Free,
            loc: Loc {
                cyl: 0,
                head: 0,
                spt: 1,
                slot: 0,
                left_in_track: 1,
            },
            a0: 0,
        };
        Hdd {
            slots: vec![free; qd],
            outstanding: 0,
            n_media: 0,
            n_wait: 0,
            n_flush: 0,
            seq: 0,
            reported: Vec::with_capacity(qd),
            free_at: 0,
            pos: Pos::default(),
            last_end: 0,
            stream: None,
            segs: vec![Seg::default(); p.cache_segments as usize],
            stamp: 0,
            dirty: Vec::with_capacity(p.write_cache_extents as usize + 1),
            arriving: VecDeque::new(),
            dirty_sectors: 0,
            inflight_sectors: 0,
            inflight_until: 0,
            link_free: 0,
            layout,
            seek,
            rot,
            p,
        }
    }

    /// Sectors of acknowledged writes not yet on the medium.
    pub fn write_cache_dirty_sectors(&self) -> u64 {
        self.dirty_sectors
    }
    pub fn params(&self) -> &HddParams {
        &self.p
    }
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    pub fn seek_curve(&self) -> &SeekCurve {
        &self.seek
    }
    pub fn rotation(&self) -> &Rotation {
        &self.rot
    }

    /// Sustained sequential media rate of zone `z`, bytes/s: a cylinder's worth of
    /// sectors over its revolutions plus the skews crossed.
    pub fn zone_rate(&self, z: usize) -> u64 {
        let zone = &self.layout.zones[z];
        let h = self.p.heads as u128;
        let spt = zone.spt as u128;
        let unit = self.rot.unit as u128;
        let skew = (h - 1) * zone.track_skew as u128 + zone.cyl_skew as u128;
        // Time per cylinder in angle units: h revolutions + skew slots.
        let units = h * unit + skew * unit / spt;
        let bytes = h * spt * 512;
        (bytes * self.rot.rate as u128 * 1_000_000_000 / units) as u64
    }

    // ---------------------------------------------------------------------
    // Mechanics.

    fn xfer_ns(&self, sectors: u32) -> u64 {
        (sectors as u128 * 512 * 1_000_000_000).div_ceil(self.p.interface_bytes_per_s as u128)
            as u64
    }

    /// Time to get the head from `pos` onto the track of `loc`, ns.
    #[inline]
    fn move_ns(&self, pos: Pos, loc: &Loc, settle: u64) -> u64 {
        if loc.cyl != pos.cyl {
            self.seek.time(loc.cyl.abs_diff(pos.cyl) as u64) + settle
        } else if loc.head != pos.head {
            self.p.head_switch_ns + settle
        } else {
            0
        }
    }

    /// Transfer `[lba, to)` starting at `t0` with the head on `pos`, adding
    /// `settle` to the first move. With `stop < u64::MAX`, stop at time `stop`.
    /// Returns the LBA reached, the instant its last sector ended (or `t0` if
    /// none), and the head's track.
    fn access(
        &self,
        t0: u64,
        pos: Pos,
        lba: u64,
        to: u64,
        settle: u64,
        stop: u64,
    ) -> (u64, u64, Pos) {
        let (mut t, mut pos, mut lba) = (t0, pos, lba);
        let mut settle = settle;
        let rate = self.rot.rate;
        while lba < to {
            let loc = self.layout.locate(lba);
            let k = (to - lba).min(loc.left_in_track as u64);
            let t1 = t + self.move_ns(pos, &loc, settle);
            settle = 0;
            let p = loc.slot as u64;
            let a0 = self.rot.slot_angle(p, loc.spt);
            let delta = self.rot.delta(t1, a0);
            let span = self.rot.slot_angle(p + k, loc.spt) - a0;
            let t_e = t1 + (delta + span) / rate;
            if t_e > stop {
                // Partial: count the sectors whose end the head has passed, i.e.
                // those with t1 + ⌊(delta + span_i) / rate⌋ ≤ stop.
                if stop < t1 {
                    return (lba, t, pos);
                }
                let x = (stop - t1 + 1) * rate;
                if x < delta + 1 {
                    return (lba, t, pos);
                }
                let y = x - 1 - delta + a0; // slot_angle(p + i) ≤ y
                let m = ((y + 1) * loc.spt as u64 - 1) / self.rot.unit;
                let i = m.saturating_sub(p).min(k);
                if i == 0 {
                    return (lba, t, pos);
                }
                let span_i = self.rot.slot_angle(p + i, loc.spt) - a0;
                let here = Pos {
                    cyl: loc.cyl,
                    head: loc.head,
                };
                return (lba + i, t1 + (delta + span_i) / rate, here);
            }
            t = t_e;
            pos = Pos {
                cyl: loc.cyl,
                head: loc.head,
            };
            lba += k;
        }
        (lba, t, pos)
    }

    // ---------------------------------------------------------------------
    // Read cache and read-ahead.

    /// Frontier of the read-ahead at `t ≥` its anchor: (LBA reached, when, track).
    /// Re-anchors the stream there, which keeps later walks short.
    fn frontier(&mut self, t: u64) -> Option<(u64, u64, Pos)> {
        let s = self.stream?;
        if t <= s.t {
            return Some((s.lba, s.t, s.pos));
        }
        let r = self.access(s.t, s.pos, s.lba, s.limit, 0, t);
        self.stream = Some(Stream {
            t: r.1,
            pos: r.2,
            lba: r.0,
            ..s
        });
        Some(r)
    }

    /// Valid range of segment `i` at `t` (empty if not yet read).
    fn seg_range(&mut self, i: usize, t: u64) -> (u64, u64) {
        let hi = match self.stream {
            Some(s) if s.seg == i => {
                if t < s.t {
                    return (0, 0);
                }
                self.frontier(t).map(|f| f.0).unwrap_or(0)
            }
            _ => {
                if t < self.segs[i].ready_at {
                    return (0, 0);
                }
                self.segs[i].hi
            }
        };
        let seg = &self.segs[i];
        let lo = seg
            .start
            .max(hi.saturating_sub(self.p.cache_segment_sectors as u64));
        (lo, hi)
    }

    /// A hit in the segment the read-ahead fills moves its limit on as the
    /// stream's consumer advances. A read-ahead that already stopped at its limit
    /// resumes (after a rotational wait) once less than half of it is left ahead
    /// of the host, if the drive is idle.
    fn extend_read_ahead(&mut self, seg: usize, e: u64, now: u64) {
        let Some(s) = self.stream else { return };
        if s.seg != seg || now < s.t {
            return;
        }
        let ra = self.p.read_ahead_sectors as u64;
        let limit = (e + ra).min(self.p.capacity_sectors);
        if limit <= s.limit {
            return;
        }
        if s.lba < s.limit {
            self.stream = Some(Stream { limit, ..s });
        } else if self.free_at <= now
            && self.n_media == 0
            && self.n_wait == 0
            && (s.limit - e) * 2 < ra
        {
            self.stream = Some(Stream { t: now, limit, ..s });
        }
    }

    fn touch(&mut self, i: usize) {
        self.stamp += 1;
        self.segs[i].stamp = self.stamp;
    }

    /// Stop the read-ahead at `t`: its segment keeps what was read by then, and
    /// the head is left on the frontier's track.
    fn stop_stream(&mut self, t: u64) {
        if let Some((f, tf, pos)) = self.frontier(t) {
            let s = self.stream.take().expect("stream");
            let seg = &mut self.segs[s.seg];
            seg.hi = f;
            seg.ready_at = tf;
            self.pos = pos;
            self.last_end = f;
        }
    }

    /// When the read-ahead reaches its limit, and where the head is then.
    fn stream_end(&self) -> Option<(u64, Pos)> {
        let s = self.stream?;
        let r = self.access(s.t, s.pos, s.lba, s.limit, 0, u64::MAX);
        Some((r.1, r.2))
    }

    // ---------------------------------------------------------------------
    // Write cache.

    /// Write-back caching in effect (enabled and with room for something).
    fn wce(&self) -> bool {
        self.p.write_cache && self.p.write_cache_extents > 0 && self.p.write_cache_sectors > 0
    }

    /// The dirty extent `[s, e)` overwrites part of (a write hit), if any.
    fn hit_dirty(&self, s: u64, e: u64) -> Option<usize> {
        self.dirty.iter().position(|&(a, b)| a < e && s < b)
    }

    /// With `write_hit_destage`: the dirty extent the oldest write waiting for
    /// room overwrites, which must go to the medium before it is accepted.
    fn hit_victim(&self) -> Option<usize> {
        if !self.p.write_hit_destage || self.n_wait == 0 {
            return None;
        }
        let w = (0..self.slots.len())
            .filter(|&i| self.slots[i].state == State::WaitSpace)
            .min_by_key(|&i| self.slots[i].seq)?;
        let s = self.slots[w];
        self.hit_dirty(s.lba, s.lba + s.n as u64)
    }

    fn overlaps_dirty(&self, s: u64, e: u64) -> bool {
        self.dirty.iter().any(|&(a, b)| a <= e && s <= b)
            || self.arriving.iter().any(|&(a, b, _)| a <= e && s <= b)
    }

    /// Dirty data in the cache or on its way there.
    fn has_dirty(&self) -> bool {
        !self.dirty.is_empty() || !self.arriving.is_empty()
    }

    /// Writes whose data has crossed the link by `t` become dirty data the
    /// drive may destage.
    fn land(&mut self, t: u64) {
        while let Some(&(s, e, at)) = self.arriving.front() {
            if at > t {
                return;
            }
            self.arriving.pop_front();
            self.dirty_sectors -= e - s;
            self.add_dirty(s, e);
        }
    }

    fn fits(&self, s: u64, e: u64) -> bool {
        if self.p.write_hit_destage && self.hit_dirty(s, e).is_some() {
            return false;
        }
        (self.dirty.len() + self.arriving.len() < self.p.write_cache_extents as usize
            || self.overlaps_dirty(s, e))
            && self.dirty_sectors + (e - s) <= self.p.write_cache_sectors as u64
    }

    fn add_dirty(&mut self, s: u64, e: u64) {
        let (mut s, mut e) = (s, e);
        let mut i = 0;
        while i < self.dirty.len() {
            let (a, b) = self.dirty[i];
            if a <= e && s <= b {
                s = s.min(a);
                e = e.max(b);
                self.dirty_sectors -= b - a;
                self.dirty.swap_remove(i);
            } else {
                i += 1;
            }
        }
        self.dirty.push((s, e));
        self.dirty_sectors += e - s;
    }

    /// Accept a cached write at `t` (it fits): the host sends the data over the
    /// link once room is certain.
    fn accept_write(&mut self, slot: usize, t: u64) -> u64 {
        let (lba, n) = (self.slots[slot].lba, self.slots[slot].n);
        let mut start = t.max(self.link_free);
        if t < self.inflight_until
            && self.dirty_sectors + self.inflight_sectors + n as u64
                > self.p.write_cache_sectors as u64
        {
            // The room is being made by a destage still in progress.
            start = start.max(self.inflight_until);
        }
        let done = start + self.p.overhead_write_ns + self.xfer_ns(n);
        self.link_free = done;
        self.arriving.push_back((lba, lba + n as u64, done));
        self.dirty_sectors += n as u64;
        done
    }

    /// Write one piece of dirty data to the medium at `t`, in elevator (C-LOOK)
    /// order from the head, choosing among the data that has arrived by then
    /// (waiting for the first arrival if none has). Returns when it ends.
    fn destage(&mut self, t: u64) -> u64 {
        let mut t = t;
        self.land(t);
        if self.dirty.is_empty() {
            if let Some(&(_, _, at)) = self.arriving.front() {
                t = t.max(at);
                self.land(t);
            }
        }
        self.stop_stream(t);
        let i = {
            let mut best: Option<(usize, u64)> = None;
            let mut low: Option<(usize, u64)> = None;
            for (i, &(a, _)) in self.dirty.iter().enumerate() {
                if a >= self.last_end && best.is_none_or(|b: (usize, u64)| a < b.1) {
                    best = Some((i, a));
                }
                if low.is_none_or(|b: (usize, u64)| a < b.1) {
                    low = Some((i, a));
                }
            }
            match self.hit_victim().or(best.map(|b| b.0)).or(low.map(|l| l.0)) {
                Some(i) => i,
                None => return t.max(self.free_at),
            }
        };
        let (a, b) = self.dirty[i];
        let k = (b - a).min(self.p.cache_segment_sectors.max(1) as u64);
        let settle = if a == self.last_end {
            0
        } else {
            self.p.write_settle_ns
        };
        let (_, end, pos) = self.access(t, self.pos, a, a + k, settle, u64::MAX);
        if a + k == b {
            self.dirty.swap_remove(i);
        } else {
            self.dirty[i].0 = a + k;
        }
        self.dirty_sectors -= k;
        self.inflight_sectors = k;
        self.inflight_until = end;
        self.free_at = end;
        self.pos = pos;
        self.last_end = a + k;
        end
    }

    /// Background work the drive did on its own before `now`: idle destaging once
    /// the read-ahead is done and no command waits.
    fn advance_bg(&mut self, now: u64) {
        while self.wce() && self.has_dirty() && self.n_media == 0 && self.n_wait == 0 {
            // Idle: the mechanism and the read-ahead done. The host link runs
            // independently of the media, so destaging does not wait for it,
            // only for the data to have arrived.
            let mut tau = self.free_at;
            if let Some((t_end, _)) = self.stream_end() {
                tau = tau.max(t_end);
            }
            self.land(tau);
            if self.dirty.is_empty() {
                tau = tau.max(self.arriving.front().map_or(tau, |a| a.2));
            }
            if tau >= now {
                return;
            }
            self.destage(tau);
        }
    }

    // ---------------------------------------------------------------------
    // Decisions.

    fn report(&mut self, slot: usize, at: u64) {
        debug_assert!(matches!(
            self.slots[slot].state,
            State::Media | State::WaitSpace | State::Flush | State::Free
        ));
        match self.slots[slot].state {
            State::Media => self.n_media -= 1,
            State::WaitSpace => self.n_wait -= 1,
            State::Flush => self.n_flush -= 1,
            _ => {}
        }
        self.slots[slot].state = State::Done(at);
        self.reported.push((Instant(at), self.slots[slot].id));
    }

    /// Serve a read from the cache through the link, starting no earlier than `t`.
    fn serve_hit(&mut self, slot: usize, t: u64) {
        let n = self.slots[slot].n;
        let start = t.max(self.link_free);
        let done = start + self.p.overhead_read_hit_ns + self.xfer_ns(n);
        self.link_free = done;
        self.report(slot, done);
    }

    /// Whether a reported command completes at or before `by` (then a call is
    /// certain to come by then).
    fn callback_by(&self, by: u64) -> bool {
        self.slots
            .iter()
            .any(|s| matches!(s.state, State::Done(c) if c <= by))
    }

    fn decide(&mut self, now: u64) {
        loop {
            self.advance_bg(now);
            if self.n_media == 0 && self.n_wait == 0 && self.n_flush == 0 {
                return;
            }
            if self.free_at > now && self.callback_by(self.free_at) {
                return;
            }
            let t = self.free_at.max(now);
            self.decide_one(t);
        }
    }

    /// The mechanism is free at `t`: choose and schedule its next action.
    fn decide_one(&mut self, t: u64) {
        if self.serve_flush(t) {
            return;
        }
        let front = self.frontier(t);
        let (stream_lo, stream_live) = match (self.stream, front) {
            (Some(s), Some((f, _, _))) if f < s.limit => {
                let (lo, _) = self.seg_range(s.seg, t);
                (lo, true)
            }
            _ => (0, false),
        };
        let head = front.map(|f| f.2).unwrap_or(self.pos);
        let head_end = front.map(|f| f.0).unwrap_or(self.last_end);
        let f_lba = front.map(|f| f.0).unwrap_or(0);

        // Reads the read-ahead has meanwhile brought in are plain hits now.
        if let Some(s) = self.stream {
            let (lo, hi) = self.seg_range(s.seg, t);
            for i in 0..self.slots.len() {
                let sl = self.slots[i];
                if sl.state == State::Media
                    && !sl.write
                    && sl.lba >= lo
                    && sl.lba + sl.n as u64 <= hi
                {
                    self.serve_hit(i, t);
                }
            }
            if self.n_media == 0 && self.n_wait == 0 {
                return;
            }
        }

        // Starvation control first (the oldest command past the age limit), then
        // room for waiting writes if one of them is older than every queued
        // medium command, then shortest positioning time.
        let mut oldest: Option<usize> = None;
        let mut oldest_wait = u64::MAX;
        let mut oldest_media = u64::MAX;
        for (i, s) in self.slots.iter().enumerate() {
            match s.state {
                State::Media => oldest_media = oldest_media.min(s.seq),
                State::WaitSpace => oldest_wait = oldest_wait.min(s.seq),
                _ => continue,
            }
            if t - s.arrival.min(t) >= self.p.age_limit_ns
                && oldest.is_none_or(|o| s.seq < self.slots[o].seq)
            {
                oldest = Some(i);
            }
        }
        let continues = |s: &Slot| stream_live && !s.write && s.lba >= stream_lo && s.lba <= f_lba;
        let pick = match oldest {
            Some(i) if self.slots[i].state == State::WaitSpace => Pick::Destage,
            Some(i) if continues(&self.slots[i]) => Pick::Stream(i),
            Some(i) => Pick::Slot(i),
            None if oldest_wait < oldest_media => Pick::Destage,
            None => {
                // Shortest positioning time, in angle units (ns × rate) so that no
                // division is needed per candidate: overhead and move, then the
                // rotation from where the platter is when the head arrives.
                let (unit, rate) = (self.rot.unit, self.rot.rate);
                let r_t = self.rot.reach_angle(t);
                let mut best: Option<(u64, u64, Pick)> = None;
                for (i, s) in self.slots.iter().enumerate() {
                    if s.state != State::Media {
                        continue;
                    }
                    let (cost, pick) = if continues(s) {
                        (0, Pick::Stream(i))
                    } else {
                        let go =
                            self.overhead(s) + self.move_ns(head, &s.loc, self.settle(s, head_end));
                        // Reachable angle on arrival: a few revolutions on at most.
                        let mut r = r_t + go * rate;
                        while r >= unit {
                            r -= unit;
                        }
                        let delta = if s.a0 >= r { s.a0 - r } else { s.a0 + unit - r };
                        (go * rate + delta, Pick::Slot(i))
                    };
                    if best.is_none_or(|b| (cost, s.seq) < (b.0, b.1)) {
                        best = Some((cost, s.seq, pick));
                    }
                }
                best.expect("a queued command").2
            }
        };

        match pick {
            Pick::Stream(i) => self.continue_stream(i, t),
            Pick::Slot(i) => self.serve_media(i, t),
            Pick::Destage => {
                let end = if self.has_dirty() { self.destage(t) } else { t };
                self.admit_waiters(end);
            }
        }
    }

    /// A flush older than every queued command goes next: destage one dirty
    /// extent toward it, or, with the cache clean, complete it after the write
    /// overhead. Returns whether it acted.
    fn serve_flush(&mut self, t: u64) -> bool {
        if self.n_flush == 0 {
            return false;
        }
        let mut flush: Option<usize> = None;
        let mut older_queued = u64::MAX;
        for (i, s) in self.slots.iter().enumerate() {
            match s.state {
                State::Flush if flush.is_none_or(|f| s.seq < self.slots[f].seq) => flush = Some(i),
                State::Media | State::WaitSpace => older_queued = older_queued.min(s.seq),
                _ => {}
            }
        }
        let f = flush.expect("a pending flush");
        if older_queued < self.slots[f].seq {
            return false;
        }
        if self.has_dirty() {
            let end = self.destage(t);
            self.admit_waiters(end);
            return true;
        }
        let start = t.max(self.link_free).max(self.inflight_until);
        let done = start + self.p.overhead_write_ns;
        self.link_free = done;
        self.report(f, done);
        true
    }

    fn overhead(&self, s: &Slot) -> u64 {
        if s.write {
            self.p.overhead_write_ns
        } else {
            self.p.overhead_read_miss_ns
        }
    }

    fn settle(&self, s: &Slot, head_end: u64) -> u64 {
        if s.write && s.lba != head_end {
            self.p.write_settle_ns
        } else {
            0
        }
    }

    /// Commit the read-ahead to run until slot `i`'s data is in.
    fn continue_stream(&mut self, i: usize, t: u64) {
        let s = self.stream.expect("stream");
        let sl = self.slots[i];
        let e = sl.lba + sl.n as u64;
        let limit = (e + self.p.read_ahead_sectors as u64)
            .min(self.p.capacity_sectors)
            .max(s.limit);
        self.stream = Some(Stream { limit, ..s });
        let (_, te, _) = self.access(s.t, s.pos, s.lba, e, 0, u64::MAX);
        self.free_at = te.max(t);
        self.touch(s.seg);
        let done = te
            .max(sl.arrival + self.p.overhead_read_hit_ns + self.xfer_ns(sl.n))
            .max(t);
        self.report(i, done);
    }

    /// Serve slot `i` on the medium, starting at `t`.
    fn serve_media(&mut self, i: usize, t: u64) {
        self.stop_stream(t);
        let sl = self.slots[i];
        let start = t + self.overhead(&sl);
        let settle = self.settle(&sl, self.last_end);
        let e = sl.lba + sl.n as u64;
        let (_, end, pos) = self.access(start, self.pos, sl.lba, e, settle, u64::MAX);
        self.free_at = end;
        self.pos = pos;
        self.last_end = e;
        let mut done = end;
        if !sl.write {
            done = done.max(start + self.xfer_ns(sl.n));
            if !self.segs.is_empty() {
                let g = (0..self.segs.len())
                    .min_by_key(|&g| self.segs[g].stamp)
                    .expect("segments");
                self.segs[g] = Seg {
                    start: sl.lba,
                    hi: e,
                    ready_at: end,
                    stamp: 0,
                };
                self.touch(g);
                if self.p.read_ahead_sectors > 0 && e < self.p.capacity_sectors {
                    self.stream = Some(Stream {
                        t: end,
                        pos,
                        lba: e,
                        limit: (e + self.p.read_ahead_sectors as u64).min(self.p.capacity_sectors),
                        seg: g,
                    });
                }
            }
        }
        self.report(i, done);
    }

    /// Admit waiting writes, oldest first, into the room freed at `t`.
    fn admit_waiters(&mut self, t: u64) {
        while self.n_wait > 0 {
            let i = (0..self.slots.len())
                .filter(|&i| self.slots[i].state == State::WaitSpace)
                .min_by_key(|&i| self.slots[i].seq)
                .expect("a waiting write");
            let (s, e) = (
                self.slots[i].lba,
                self.slots[i].lba + self.slots[i].n as u64,
            );
            if !self.fits(s, e) {
                return;
            }
            let done = self.accept_write(i, t);
            self.report(i, done);
        }
    }

    fn set_loc(&mut self, i: usize) {
        let loc = self.layout.locate(self.slots[i].lba);
        self.slots[i].loc = loc;
        self.slots[i].a0 = self.rot.slot_angle(loc.slot as u64, loc.spt);
    }

    /// Classify a new command at `now`: served from the cache at once, or queued.
    fn arrive(&mut self, i: usize, now: u64) {
        let sl = self.slots[i];
        let e = sl.lba + sl.n as u64;
        if sl.n == 0 {
            self.slots[i].state = State::Free;
            self.serve_hit(i, now);
            return;
        }
        if sl.write {
            let fua_or_through = self.slots[i].state == State::Media;
            if !fua_or_through {
                if self.n_wait == 0 && self.fits(sl.lba, e) {
                    let done = self.accept_write(i, now);
                    self.report(i, done);
                } else {
                    self.slots[i].state = State::WaitSpace;
                    self.n_wait += 1;
                }
                return;
            }
            self.set_loc(i);
            self.n_media += 1;
            return;
        }
        // Read: a hit in a segment or in dirty data, else trim what is cached.
        let mut lba = sl.lba;
        for g in 0..self.segs.len() {
            let (lo, hi) = self.seg_range(g, now);
            if lba >= lo && lba < hi {
                if e <= hi {
                    self.touch(g);
                    self.extend_read_ahead(g, e, now);
                    self.serve_hit(i, now);
                    return;
                }
                lba = hi;
            }
        }
        if self.dirty.iter().any(|&(a, b)| a <= sl.lba && e <= b) {
            self.serve_hit(i, now);
            return;
        }
        self.slots[i].lba = lba;
        self.slots[i].n = (e - lba) as u32;
        self.set_loc(i);
        self.slots[i].state = State::Media;
        self.n_media += 1;
    }
}

impl Device for Hdd {
    fn write_cache(&self) -> bool {
        self.wce()
    }
    fn fua(&self) -> bool {
        self.p.fua
    }
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth
    }
    /// SCSI/ATA disk: the midlayer's budget is the device's queue depth.
    fn dispatch_budget(&self) -> Option<u32> {
        Some(self.p.queue_depth)
    }
    fn rotational(&self) -> bool {
        true
    }
    fn capacity_sectors(&self) -> u64 {
        self.p.capacity_sectors
    }
    fn hw_limits(&self) -> HwLimits {
        self.p.limits
    }
    fn submit(&mut self, now: Instant, cmd: DeviceCmd) {
        assert!(
            self.outstanding < self.p.queue_depth,
            "device queue overflow"
        );
        assert!(
            cmd.sector + cmd.sectors as u64 <= self.p.capacity_sectors,
            "command beyond the end of the disk"
        );
        let now = now.0;
        self.advance_bg(now);
        let i = self
            .slots
            .iter()
            .position(|s| s.state == State::Free)
            .expect("a free slot");
        self.outstanding += 1;
        self.seq += 1;
        let to_media =
            cmd.write && (!self.wce() || cmd.fua || cmd.sectors > self.p.write_cache_sectors);
        let state = if cmd.flush {
            State::Flush
        } else if to_media {
            State::Media
        } else {
            State::Free
        };
        self.slots[i] = Slot {
            id: cmd.id,
            lba: cmd.sector,
            n: cmd.sectors,
            write: cmd.write,
            arrival: now,
            seq: self.seq,
            state,
            loc: self.slots[i].loc,
            a0: 0,
        };
        if cmd.flush {
            self.n_flush += 1;
        } else {
            self.arrive(i, now);
        }
    }
    fn poll(&mut self, now: Instant, out: &mut Vec<(Instant, u64)>) {
        self.decide(now.0);
        out.append(&mut self.reported);
    }
    fn complete(&mut self, now: Instant, id: u64) {
        let i = self
            .slots
            .iter()
            .position(|s| s.id == id && matches!(s.state, State::Done(_)))
            .expect("completion of a command not reported");
        debug_assert!(matches!(self.slots[i].state, State::Done(c) if c <= now.0));
        self.slots[i].state = State::Free;
        self.outstanding -= 1;
    }
}
