//! Hardware RAID0 controller over N member disks.
//!
//! * Striping: the standard RAID-0 layout (SNIA DDF "RAID-0 striped"; the same
//!   arithmetic as Linux md's single-zone `drivers/md/raid0.c`): logical chunk
//!   `c = lba / chunk` lives on member `c mod N`, in stripe row `c / N`, so member
//!   sector = `row × chunk + lba mod chunk`. A command spanning chunks is split at
//!   the chunk boundaries; the chunks of one command that fall on the same member
//!   are consecutive rows, hence contiguous there, and go out as one member
//!   command (devices-and-simulators.md §5.2 set D: "requests split at chunk
//!   boundaries").
//! * Write-back cache, battery-backed: a write is acknowledged once it fits in
//!   the cache, after the controller overhead and its transfer over the host link.
//!   When the cache is full, writes wait in
//!   arrival order for destages to free room. A write larger than the whole
//!   cache, and every write when `cache_bytes` is 0, goes through to the members
//!   and completes when all its pieces do.
//! * Flush and FUA: the controller declares its cache to the kernel as a
//!   write-back cache with FUA support. A FUA write goes through to the members
//!   (as FUA writes there) like a write larger than the cache. A flush waits
//!   until the controller's cache is empty (every dirty sector destaged and
//!   acknowledged by its member), then flushes the write cache of every member
//!   that has one, and completes when they have. Writes cached while a flush
//!   waits are destaged before it too. (A controller could instead acknowledge
//!   both from its battery-backed memory; this one takes the time to destage.)
//! * Destage: the controller keeps up to `destage_depth` destage commands queued
//!   at each member that has dirty data, each the next run of contiguous dirty
//!   sectors in C-LOOK order from the member's last destage (up to
//!   `destage_max_sectors`), so that members stream. Data stays in the cache
//!   (and counts against it) until the member acknowledges the destage.
//! * Reads: a piece whose sectors are all dirty (or being destaged) is served
//!   from the cache; the others go to the members. When all pieces are in, the
//!   data crosses the host link after the controller overhead.
//! * The controller and host link handle one command at a time: each costs
//!   `overhead_ns` plus its bytes at `link_bytes_per_s`.
//! * Members are [`Hdd`]s driven through their own `Device` contract (submit only
//!   below their queue depth, poll after every submit and complete, complete at
//!   the reported instant). Reads may use every member tag except the ones kept
//!   for destaging while the member has dirty data, so neither starves.
//!
//! Not modelled: controller read-ahead and read cache (the members' own caches
//! serve sequential reads), cache mirroring, parity, degraded arrays, and data
//! contents (timing only: a read that
//! partly overlaps dirty data goes to the members).
//!
//! Time and decisions. The controller is driven only by the host's `submit`,
//! `poll` and `complete`. Its internal events are the member completions the
//! members have reported. At each call it first replays the events up to the
//! call's instant, at their exact instants (nothing reached it in between, so
//! this is exact). Beyond that instant it works ahead only while a host command
//! is undecided and no reported host completion comes first (otherwise the host
//! is certain to call back in time); such look-ahead uses the commands known at
//! the call, like the HDD model's decisions, and a host command that arrives
//! before the look-ahead's instant is taken in at that instant. Member calls
//! therefore never go back in time, and a host completion is never reported in
//! the past.
//!
//! Integer nanoseconds throughout; no floating point.

use crate::hdd::{Hdd, HddParams};
use crate::{Device, DeviceCmd, HwLimits};
use iostack_des::{Instant, Rng, Seed};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// Parameters of a RAID0 controller and its members. Plain data.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Raid0Params {
    /// Number of member disks (N ≥ 1).
    pub members: u32,
    /// Parameters of every member disk.
    pub member: HddParams,
    /// Stripe unit (chunk), sectors.
    pub chunk_sectors: u32,
    /// Battery-backed write-back cache, bytes (0 = write-through).
    pub cache_bytes: u64,
    /// Largest destage command sent to a member, sectors.
    pub destage_max_sectors: u32,
    /// Destage commands kept outstanding at each member with dirty data.
    pub destage_depth: u32,
    /// Controller overhead per host command, ns.
    pub overhead_ns: u64,
    /// Host link rate, bytes/s (0 = transfer is free).
    pub link_bytes_per_s: u64,
    /// Host commands the controller accepts at once (TCQ depth).
    pub queue_depth: u32,
    /// Limits declared to the block layer.
    pub limits: HwLimits,
}

/// One member's share of a host command: `sectors` from `sector` on `member`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub member: u32,
    pub sector: u64,
    pub sectors: u32,
}

impl Raid0Params {
    fn chunk(&self) -> u64 {
        self.chunk_sectors.max(1) as u64
    }
    fn n(&self) -> u64 {
        self.members.max(1) as u64
    }

    /// Sectors each member contributes: its capacity rounded down to a chunk.
    pub fn member_sectors(&self) -> u64 {
        self.member.capacity_sectors / self.chunk() * self.chunk()
    }

    /// Array capacity: N × member capacity rounded down to a chunk.
    pub fn capacity_sectors(&self) -> u64 {
        self.n().saturating_mul(self.member_sectors())
    }

    /// Member and member sector of logical sector `lba`.
    pub fn map(&self, lba: u64) -> (u32, u64) {
        let (c, n) = (self.chunk(), self.n());
        let chunk = lba / c;
        ((chunk % n) as u32, chunk / n * c + lba % c)
    }

    /// Split `[sector, sector + sectors)` at chunk boundaries into one piece per
    /// member (the chunks of one member are contiguous there), in the order the
    /// members first appear.
    pub fn split(&self, sector: u64, sectors: u32) -> Vec<Piece> {
        let c = self.chunk();
        let end = sector.saturating_add(sectors as u64);
        let mut v: Vec<Piece> = Vec::with_capacity(self.n().min(sectors as u64 / c + 2) as usize);
        let mut s = sector;
        while s < end {
            let e = ((s / c).saturating_add(1).saturating_mul(c)).min(end);
            let (m, ms) = self.map(s);
            let len = (e - s) as u32;
            match v.iter_mut().rev().find(|p| p.member == m) {
                Some(p) if p.sector + p.sectors as u64 == ms => p.sectors += len,
                _ => v.push(Piece {
                    member: m,
                    sector: ms,
                    sectors: len,
                }),
            }
            s = e;
        }
        v
    }
}

/// Counters per member (bounded: no per-I/O records).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberStats {
    /// Read commands sent to the member and their sectors.
    pub reads: u64,
    pub read_sectors: u64,
    /// Write commands (destages and write-through pieces) and their sectors.
    pub writes: u64,
    pub write_sectors: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HState {
    Free,
    /// A cached write waiting for room.
    WaitSpace,
    /// Waiting for member pieces (reads, write-through writes, member flushes).
    Pieces,
    /// A flush waiting for the cache to empty.
    Flush,
    /// Decided; completes at this ns.
    Done(u64),
}

#[derive(Clone, Copy, Debug)]
struct Host {
    id: u64,
    sector: u64,
    sectors: u32,
    write: bool,
    fua: bool,
    flush: bool,
    state: HState,
    /// Member pieces still outstanding.
    left: u32,
    /// Latest instant a finished piece (or the link, for write-through) is in.
    ready: u64,
}

const FREE_HOST: Host = Host {
    id: 0,
    sector: 0,
    sectors: 0,
    write: false,
    fua: false,
    flush: false,
    state: HState::Free,
    left: 0,
    ready: 0,
};

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// A piece of host command in slot `host`.
    Piece { host: usize },
    /// Destage of member sectors `[lo, hi)`.
    Destage { lo: u64, hi: u64 },
}

#[derive(Clone, Copy, Debug)]
struct MCmd {
    member: usize,
    kind: Kind,
    cmd: DeviceCmd,
}

struct Member {
    dev: Hdd,
    outstanding: u32,
    destaging: u32,
    /// Member commands (ids) waiting for a member tag, in arrival order.
    backlog: VecDeque<u64>,
    /// Dirty extents `start → end`, disjoint and not adjacent.
    dirty: BTreeMap<u64, u64>,
    /// Ranges being destaged.
    inflight: Vec<(u64, u64)>,
    /// C-LOOK position: the end of the last destage.
    cursor: u64,
    /// With a single tag: a queued piece goes before the next destage.
    read_turn: bool,
    stats: MemberStats,
}

/// A hardware RAID0 controller with its member disks.
pub struct Raid0 {
    p: Raid0Params,
    capacity: u64,
    cache_sectors: u64,
    /// Dirty plus in-flight sectors.
    used: u64,
    members: Vec<Member>,
    hosts: Vec<Host>,
    outstanding: u32,
    /// Host commands not yet decided.
    undecided: u32,
    /// Host slots waiting for cache room, oldest first.
    waiting: VecDeque<usize>,
    /// Member completions reported and not yet processed: (ns, member command id).
    events: BinaryHeap<Reverse<(u64, u64)>>,
    mcmds: BTreeMap<u64, MCmd>,
    next_mid: u64,
    /// The controller's clock: every event before it has been processed.
    rc: u64,
    /// When the controller and host link are next free, ns.
    link_free: u64,
    reported: Vec<(Instant, u64)>,
    /// (time, slot, id) of every host command reported done, least first;
    /// those completed since are dropped lazily (`earliest_callback`).
    done_at: BinaryHeap<Reverse<(u64, usize, u64)>>,
    buf: Vec<(Instant, u64)>,
}

impl Raid0 {
    /// Build the array; each member's `Rng` stream is seeded by a draw from `rng`,
    /// in member order.
    pub fn new(p: Raid0Params, mut rng: Rng) -> Raid0 {
        let members = (0..p.members.max(1))
            .map(|i| {
                let seed = rng.next_u64();
                let r = Rng::stream(Seed(seed), &format!("raid0/member/{i}"));
                Member {
                    dev: Hdd::new(p.member.clone(), r),
                    outstanding: 0,
                    destaging: 0,
                    backlog: VecDeque::new(),
                    dirty: BTreeMap::new(),
                    inflight: Vec::new(),
                    cursor: 0,
                    read_turn: false,
                    stats: MemberStats::default(),
                }
            })
            .collect();
        let qd = p.queue_depth.max(1) as usize;
        Raid0 {
            capacity: p.capacity_sectors(),
            cache_sectors: p.cache_bytes / 512,
            used: 0,
            members,
            hosts: vec![FREE_HOST; qd],
            outstanding: 0,
            undecided: 0,
            waiting: VecDeque::with_capacity(qd),
            events: BinaryHeap::new(),
            mcmds: BTreeMap::new(),
            next_mid: 0,
            rc: 0,
            link_free: 0,
            reported: Vec::with_capacity(qd),
            done_at: BinaryHeap::with_capacity(qd),
            buf: Vec::new(),
            p,
        }
    }

    pub fn params(&self) -> &Raid0Params {
        &self.p
    }

    /// Member disk `i`.
    pub fn member(&self, i: usize) -> &Hdd {
        &self.members[i].dev
    }

    /// Counters of member `i`.
    pub fn member_stats(&self, i: usize) -> &MemberStats {
        &self.members[i].stats
    }

    /// Sectors of the cache holding dirty or destaging data.
    pub fn cache_used_sectors(&self) -> u64 {
        self.used
    }

    fn xfer_ns(&self, sectors: u32) -> u64 {
        if self.p.link_bytes_per_s == 0 {
            return 0;
        }
        (sectors as u128 * 512 * 1_000_000_000).div_ceil(self.p.link_bytes_per_s as u128) as u64
    }

    /// Occupy the controller and link from `t` for one command of `sectors`.
    fn link(&mut self, t: u64, sectors: u32) -> u64 {
        let done = t.max(self.link_free) + self.p.overhead_ns + self.xfer_ns(sectors);
        self.link_free = done;
        done
    }

    fn report(&mut self, slot: usize, at: u64) {
        match self.hosts[slot].state {
            HState::WaitSpace | HState::Pieces | HState::Flush => self.undecided -= 1,
            _ => {}
        }
        self.hosts[slot].state = HState::Done(at);
        self.reported.push((Instant(at), self.hosts[slot].id));
        self.done_at.push(Reverse((at, slot, self.hosts[slot].id)));
    }

    /// Earliest reported host completion the host has not completed yet: the
    /// least of `done_at` whose command is still `Done` (entries of completed
    /// commands are dropped as they come to the top).
    fn earliest_callback(&mut self) -> Option<u64> {
        while let Some(&Reverse((t, slot, id))) = self.done_at.peek() {
            let h = &self.hosts[slot];
            if h.id == id && h.state == HState::Done(t) {
                return Some(t);
            }
            self.done_at.pop();
        }
        None
    }

    // ---------------------------------------------------------------------
    // Cache.

    /// Sectors of `[lo, hi)` on member `m` that are dirty.
    fn dirty_overlap(&self, m: usize, lo: u64, hi: u64) -> u64 {
        let d = &self.members[m].dirty;
        let mut n = 0;
        if let Some((&a, &b)) = d.range(..lo).next_back() {
            if b > lo {
                n += b.min(hi) - lo.max(a);
            }
        }
        for (&a, &b) in d.range(lo..hi) {
            n += b.min(hi) - a;
        }
        n
    }

    /// Whether `[lo, hi)` on member `m` is all in the cache (within one dirty or
    /// one destaging extent).
    fn cached(&self, m: usize, lo: u64, hi: u64) -> bool {
        let mb = &self.members[m];
        if let Some((_, &b)) = mb.dirty.range(..=lo).next_back() {
            if b >= hi {
                return true;
            }
        }
        mb.inflight.iter().any(|&(a, b)| a <= lo && hi <= b)
    }

    /// Mark `[lo, hi)` on member `m` dirty, merging with touching extents.
    fn add_dirty(&mut self, m: usize, lo: u64, hi: u64) {
        let new = (hi - lo) - self.dirty_overlap(m, lo, hi);
        let d = &mut self.members[m].dirty;
        let (mut s, mut e) = (lo, hi);
        // The extents touching [lo, hi], from the last one starting at or
        // before hi down to the first that ends before lo.
        while let Some((&a, &b)) = d.range(..=hi).next_back() {
            if b < lo {
                break;
            }
            d.remove(&a);
            s = s.min(a);
            e = e.max(b);
        }
        d.insert(s, e);
        self.used += new;
    }

    /// New cache sectors a write of the host command in `slot` needs.
    fn room_needed(&self, slot: usize) -> u64 {
        let h = &self.hosts[slot];
        self.p
            .split(h.sector, h.sectors)
            .iter()
            .map(|pc| {
                let (lo, hi) = (pc.sector, pc.sector + pc.sectors as u64);
                (hi - lo) - self.dirty_overlap(pc.member as usize, lo, hi)
            })
            .sum()
    }

    fn fits(&self, slot: usize) -> bool {
        // The new sectors are at most the write's own: with room for all of
        // them, no need to look for the ones already dirty.
        let all = self.hosts[slot].sectors as u64;
        self.used + all <= self.cache_sectors
            || self.used + self.room_needed(slot) <= self.cache_sectors
    }

    /// Take the write in `slot` into the cache at `t`; it is acknowledged once
    /// its data has crossed the link.
    fn accept(&mut self, slot: usize, t: u64) {
        let h = self.hosts[slot];
        for pc in self.p.split(h.sector, h.sectors) {
            let lo = pc.sector;
            self.add_dirty(pc.member as usize, lo, lo + pc.sectors as u64);
        }
        let done = self.link(t, h.sectors);
        self.report(slot, done);
    }

    /// Admit waiting writes, oldest first, into the room there is at `t`.
    fn admit_waiters(&mut self, t: u64) {
        while let Some(&slot) = self.waiting.front() {
            if !self.fits(slot) {
                return;
            }
            self.waiting.pop_front();
            self.accept(slot, t);
        }
    }

    // ---------------------------------------------------------------------
    // Members.

    fn new_mcmd(
        &mut self,
        member: usize,
        kind: Kind,
        sector: u64,
        sectors: u32,
        write: bool,
        fua: bool,
    ) -> u64 {
        let id = self.next_mid;
        self.next_mid += 1;
        let cmd = DeviceCmd {
            id,
            sector,
            sectors,
            write,
            fua,
            flush: write && sectors == 0,
        };
        self.mcmds.insert(id, MCmd { member, kind, cmd });
        id
    }

    fn poll_member(&mut self, m: usize, t: u64) {
        self.buf.clear();
        self.members[m].dev.poll(Instant(t), &mut self.buf);
        for &(at, id) in &self.buf {
            self.events.push(Reverse((at.0, id)));
        }
    }

    fn submit_member(&mut self, m: usize, id: u64, t: u64) {
        let cmd = self.mcmds[&id].cmd;
        let mb = &mut self.members[m];
        mb.outstanding += 1;
        if cmd.flush {
            // A cache flush moves no data of its own.
        } else if cmd.write {
            mb.stats.writes += 1;
            mb.stats.write_sectors += cmd.sectors as u64;
        } else {
            mb.stats.reads += 1;
            mb.stats.read_sectors += cmd.sectors as u64;
        }
        mb.dev.submit(Instant(t), cmd);
        self.poll_member(m, t);
    }

    /// Start the next destage on member `m` at `t`: the dirty extent at or after
    /// the C-LOOK cursor (else the lowest), up to `destage_max_sectors`.
    fn destage(&mut self, m: usize, t: u64) {
        let max = self.p.destage_max_sectors.max(1) as u64;
        let mb = &mut self.members[m];
        let Some((a, b)) = mb
            .dirty
            .range(mb.cursor..)
            .next()
            .or_else(|| mb.dirty.iter().next())
            .map(|(&a, &b)| (a, b))
        else {
            return;
        };
        let hi = b.min(a + max);
        mb.dirty.remove(&a);
        if hi < b {
            mb.dirty.insert(hi, b);
        }
        mb.inflight.push((a, hi));
        mb.cursor = hi;
        mb.destaging += 1;
        let id = self.new_mcmd(
            m,
            Kind::Destage { lo: a, hi },
            a,
            (hi - a) as u32,
            true,
            false,
        );
        self.submit_member(m, id, t);
    }

    /// Keep every member busy at `t`: destages first (up to the destage depth),
    /// then queued pieces, which leave the destage tags free while the member has
    /// dirty data. The destage depth is kept below the member's queue depth so
    /// that reads always have a tag; a member with a single tag alternates.
    fn pump(&mut self, t: u64) {
        for m in 0..self.members.len() {
            let qd = self.members[m].dev.queue_depth().max(1);
            let depth = self.p.destage_depth.clamp(1, (qd - 1).max(1));
            loop {
                let mb = &self.members[m];
                if mb.outstanding >= qd {
                    break;
                }
                let dirty = !mb.dirty.is_empty();
                let destage_ok = dirty && mb.destaging < depth;
                let queued = !mb.backlog.is_empty();
                let read = if qd == 1 {
                    queued && (mb.read_turn || !destage_ok)
                } else {
                    let reserve = if dirty {
                        depth.saturating_sub(mb.destaging)
                    } else {
                        0
                    };
                    !destage_ok && queued && mb.outstanding + reserve < qd
                };
                if read {
                    let id = self.members[m].backlog.pop_front().expect("queued piece");
                    self.members[m].read_turn = false;
                    self.submit_member(m, id, t);
                } else if destage_ok {
                    self.members[m].read_turn = true;
                    self.destage(m, t);
                } else {
                    break;
                }
            }
        }
    }

    // ---------------------------------------------------------------------
    // Host commands.

    /// All pieces of the command in `slot` are in (at `ready`): decide it at `t`.
    fn finish_pieces(&mut self, slot: usize, t: u64) {
        let h = self.hosts[slot];
        let done = if h.write {
            h.ready.max(t)
        } else {
            self.link(h.ready.max(t), h.sectors)
        };
        self.report(slot, done);
    }

    /// Take in the command just placed in `slot`, at `t`.
    fn arrive(&mut self, slot: usize, t: u64) {
        let mut h = self.hosts[slot];
        // Sectors past the end are ignored: the trait has no error status.
        if h.sector >= self.capacity {
            h.sectors = 0;
        } else {
            h.sectors = (h.sectors as u64).min(self.capacity - h.sector) as u32;
        }
        self.hosts[slot] = h;
        if h.flush {
            self.undecided += 1;
            self.hosts[slot].state = HState::Flush;
            self.start_flushes(t);
            return;
        }
        if h.sectors == 0 {
            let done = self.link(t, 0);
            self.report(slot, done);
            return;
        }
        if h.write && !h.fua && self.cache_sectors > 0 && h.sectors as u64 <= self.cache_sectors {
            self.undecided += 1;
            self.hosts[slot].state = HState::WaitSpace;
            if self.waiting.is_empty() && self.fits(slot) {
                self.accept(slot, t);
            } else {
                self.waiting.push_back(slot);
            }
            return;
        }
        // Reads, and writes through to the members.
        self.undecided += 1;
        self.hosts[slot].state = HState::Pieces;
        self.hosts[slot].ready = if h.write { self.link(t, h.sectors) } else { t };
        let mut left = 0;
        for pc in self.p.split(h.sector, h.sectors) {
            let m = pc.member as usize;
            let (lo, hi) = (pc.sector, pc.sector + pc.sectors as u64);
            if !h.write && self.cached(m, lo, hi) {
                continue;
            }
            let fua = h.write && h.fua;
            let id = self.new_mcmd(m, Kind::Piece { host: slot }, lo, pc.sectors, h.write, fua);
            self.members[m].backlog.push_back(id);
            left += 1;
        }
        self.hosts[slot].left = left;
        if left == 0 {
            self.finish_pieces(slot, t);
        }
    }

    /// Flushes waiting while the cache is empty at `t` go on to flush the
    /// members' own write caches (one flush piece per member that has one).
    fn start_flushes(&mut self, t: u64) {
        if self.used != 0 {
            return;
        }
        for slot in 0..self.hosts.len() {
            if self.hosts[slot].state != HState::Flush {
                continue;
            }
            self.hosts[slot].state = HState::Pieces;
            self.hosts[slot].ready = self.link(t, 0);
            let mut left = 0;
            for m in 0..self.members.len() {
                if !self.members[m].dev.write_cache() {
                    continue;
                }
                let id = self.new_mcmd(m, Kind::Piece { host: slot }, 0, 0, true, false);
                self.members[m].backlog.push_back(id);
                left += 1;
            }
            self.hosts[slot].left = left;
            if left == 0 {
                self.finish_pieces(slot, t);
            }
        }
    }

    /// Process the member completion `id` at `e`.
    fn process(&mut self, e: u64, id: u64) {
        self.rc = self.rc.max(e);
        let t = self.rc;
        let Some(mc) = self.mcmds.remove(&id) else {
            debug_assert!(false, "unknown member command {id}");
            return;
        };
        let m = mc.member;
        self.members[m].dev.complete(Instant(e), id);
        self.members[m].outstanding -= 1;
        self.poll_member(m, t);
        match mc.kind {
            Kind::Piece { host } => {
                let h = &mut self.hosts[host];
                h.ready = h.ready.max(e);
                h.left -= 1;
                if h.left == 0 {
                    self.finish_pieces(host, t);
                }
            }
            Kind::Destage { lo, hi } => {
                let mb = &mut self.members[m];
                mb.destaging -= 1;
                if let Some(i) = mb.inflight.iter().position(|&r| r == (lo, hi)) {
                    mb.inflight.swap_remove(i);
                }
                self.used -= hi - lo;
                self.admit_waiters(t);
                self.start_flushes(t);
            }
        }
        self.pump(t);
    }

    /// Process member events up to `now`; with `ahead`, also later ones while a
    /// host command is undecided and no reported host completion comes first.
    fn advance(&mut self, now: u64, ahead: bool) {
        while let Some(&Reverse((e, id))) = self.events.peek() {
            if e > now {
                if !ahead || self.undecided == 0 {
                    break;
                }
                if self.earliest_callback().is_some_and(|c| c <= e) {
                    break;
                }
            }
            self.events.pop();
            self.process(e, id);
        }
        debug_assert!(
            self.undecided == 0 || !self.events.is_empty() || self.earliest_callback().is_some(),
            "undecided commands with nothing to wait for"
        );
    }
}

impl Device for Raid0 {
    fn write_cache(&self) -> bool {
        self.cache_sectors > 0
    }
    fn fua(&self) -> bool {
        true
    }
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth.max(1)
    }
    /// SCSI/ATA disk: the midlayer's budget is the device's queue depth.
    fn dispatch_budget(&self) -> Option<u32> {
        Some(self.p.queue_depth.max(1))
    }
    fn rotational(&self) -> bool {
        true
    }
    fn capacity_sectors(&self) -> u64 {
        self.capacity
    }
    fn hw_limits(&self) -> HwLimits {
        self.p.limits
    }
    fn submit(&mut self, now: Instant, cmd: DeviceCmd) {
        assert!(
            self.outstanding < self.queue_depth(),
            "device queue overflow"
        );
        self.advance(now.0, false);
        self.rc = self.rc.max(now.0);
        let t = self.rc;
        let slot = self
            .hosts
            .iter()
            .position(|h| h.state == HState::Free)
            .expect("a free slot");
        self.outstanding += 1;
        self.hosts[slot] = Host {
            id: cmd.id,
            sector: cmd.sector,
            sectors: cmd.sectors,
            write: cmd.write,
            fua: cmd.fua,
            flush: cmd.flush,
            state: HState::Free,
            left: 0,
            ready: t,
        };
        self.arrive(slot, t);
        self.pump(t);
    }
    fn poll(&mut self, now: Instant, out: &mut Vec<(Instant, u64)>) {
        self.advance(now.0, true);
        out.append(&mut self.reported);
    }
    fn complete(&mut self, now: Instant, id: u64) {
        let i = self
            .hosts
            .iter()
            .position(|h| h.id == id && matches!(h.state, HState::Done(_)))
            .expect("completion of a command not reported");
        debug_assert!(matches!(self.hosts[i].state, HState::Done(c) if c <= now.0));
        self.hosts[i].state = HState::Free;
        self.outstanding -= 1;
    }
}

// -------------------------------------------------------------------------
// Presets.

const US: u64 = 1_000;

/// CALIBRATED: sectors per track in the members' outermost zone (the innermost
/// has half, set B's 2:1 ratio), i.e. the members' media rate.
///
/// Seed 001 (`shared/seeds/001_149757975bc27ec3.txt`): "A 4 drive hardware raid0
/// array here can do 317MB/s streaming O_DIRECT writes on ext4". A streaming
/// write through the battery-backed cache runs, once the cache is full, at the
/// rate the members destage, i.e. N × one member's sequential media rate in the
/// outer zone; the 1 GB/s host link and the 50 us overhead are far from limiting.
/// So the single calibrated parameter is the member media rate, fitted end to end:
/// the seed-001 experiment's `ext4-odirect` variant (a 32 GiB O_DIRECT write of a
/// new file on a freshly made ext4, whose inode-table zeroing competes for the
/// array) gives 320 MB/s with 1700 sectors per track (317 published, +1%; the
/// response is not smooth, 1695 gives 324 and 1690 gives 313, because the
/// zeroing's share of the array shifts with the timing). The
/// device alone then streams at 4 × 93 MB/s (test
/// `streaming_writes_run_at_the_members_destage_rate`), a 2008 7200 rpm drive's
/// outer-zone rate (devices-and-simulators.md §5.1, §5.2); the drives in the seed
/// are not named.
///
/// Starting from an empty cache, the first few hundred MiB of a stream are
/// acknowledged at up to the link rate, so short runs read high.
const MEMBER_2008_OUTER_SPT: u32 = 1700;

/// A 7200 rpm SATA drive of 2008 as a member: the Barracuda 7200.12 parameter
/// set (devices-and-simulators.md §5.2 set B: 8.5 ms average seek, 500 GB,
/// 16 MB cache with write-back on, NCQ 31) with the calibrated media rate.
/// RAID controllers of the time left SATA drives' own write caches enabled by
/// default [unconfirmed].
fn member_sata_2008() -> HddParams {
    let base = crate::hdd::presets()
        .into_iter()
        .find(|(n, _, _)| *n == "barracuda-7200-12")
        .map(|(_, p, _)| p)
        .expect("the barracuda-7200-12 preset exists");
    HddParams {
        outer_sectors_per_track: MEMBER_2008_OUTER_SPT,
        inner_sectors_per_track: MEMBER_2008_OUTER_SPT / 2,
        ..base
    }
}

/// Seed 001's array: a 2008 hardware RAID0 of four 7200 rpm SATA drives behind
/// a PCIe x8 RAID-on-chip controller with a battery-backed cache (the class of
/// the LSI MegaRAID SAS 8888ELP / 3ware 9650SE / Adaptec 5805 of 2007–2008).
/// Only the member media rate is calibrated; the controller figures are
/// estimates, none of them in the reference.
fn raid0_4x_2008() -> Raid0Params {
    Raid0Params {
        members: 4,
        member: member_sata_2008(),
        // 64 KiB: the usual default stripe unit of hardware controllers then
        // [unconfirmed]; set D leaves the chunk open.
        chunk_sectors: 128,
        // 256 MB of battery-backed DDR2 [estimate: 128–512 MB in that class].
        cache_bytes: 256 << 20,
        // Destage in runs of up to 512 KiB, four queued per member. At least
        // three are needed: the member's own write cache admits waiting writes
        // as each 1 MiB internal destage frees room, and it keeps streaming only
        // while writes are still waiting after that (hdd/mod.rs `decide_one`).
        destage_max_sectors: 1024,
        destage_depth: 4,
        // Firmware per-command cost [estimate; cf. ublk-disksim's 30 us, §5.1].
        overhead_ns: 50 * US,
        // PCIe 1.0 x8 is 2 GB/s raw per direction; ~1 GB/s through the
        // controller [estimate].
        link_bytes_per_s: 1_000_000_000,
        // Tagged queuing per logical drive [estimate: 64–256 in such drivers].
        queue_depth: 128,
        // 512 KiB per command: seed 001's 1 MiB O_DIRECT write goes out as two
        // 512 KiB requests.
        limits: HwLimits {
            max_hw_sectors: 1024,
            max_segments: 128,
            logical_block_size: 512,
        },
    }
}

/// Named RAID0 presets: (name, parameters, one-line description with its source).
pub fn presets() -> Vec<(&'static str, Raid0Params, &'static str)> {
    vec![(
        "raid0-4x-2008",
        raid0_4x_2008(),
        "2008 hardware RAID0 of 4 x 7200 rpm SATA drives (seed 001): 64 KiB chunks, \
         256 MiB battery-backed write-back cache, 50 us controller overhead, ~1 GB/s \
         PCIe x8 link, TCQ 128, 2 TB; members are devices-and-simulators.md §5.2 set B \
         (barracuda-7200-12) with the media rate calibrated (93 MB/s outer zone) so \
         that streaming writes reach seed 001's 317 MB/s",
    )]
}
