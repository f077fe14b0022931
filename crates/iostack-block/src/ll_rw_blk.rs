//! The 2.4 block layer (`drivers/block/ll_rw_blk.c` of 2.4.4-2.4.10) behind
//! [`BlockQueue`]: `submit_bh` of one buffer head at a time →
//! `generic_make_request` → `__make_request` (the elevator's merge scan over
//! `q->queue_head`, `ll_back_merge_fn`/`ll_front_merge_fn`, `attempt_merge`,
//! a request from the fixed per-direction free list or `__get_request_wait`),
//! `tq_disk` plugging (`generic_plug_device` when the list is empty,
//! `run_task_queue(&tq_disk)` from the tasks that wait, nothing else: 2.4 has no
//! unplug timer and no threshold), and the driver's `request_fn` as IDE's
//! `do_ide_request`, which leaves the active request at the head of the list
//! (`head_active`) and takes the next one from its completion interrupt.
//!
//! 2.4 has no bio: the layers above hand this queue a bio for what a 2.4 caller
//! splits into buffer heads (`brw_kiovec` per file-system block,
//! `block_write_full_page`'s loop of `submit_bh`), and the split happens here,
//! each buffer head of the queue's block size going through `__make_request`
//! on its own; the bio completes when its last buffer head does.
//!
//! There was no blktrace in 2.4. The queue emits the events a 2.6 kernel would
//! at the same points (A at the remap, Q per buffer head in
//! `generic_make_request`, M/F merges, G and I for a new request, S when the
//! free list is empty, P in `generic_plug_device`, U when `tq_disk` runs a
//! plugged queue, D when the driver starts a request, C at its completion), so
//! every trace consumer works; the CLI says so in its output's header.

use crate::bio::Bio;
use crate::blockqueue::BlockQueue;
pub use crate::elevator24::Elevator24;
use crate::elevator24::{BhPos, Merge24, Rq24};
use crate::limits::Partition;
use crate::queue::{BlockOut, BlockWork, CompletedBio, Ctx, QueueEvent, QueueStats, Submit};
use iostack_core::{Action, DevT, Pdu, ReqFlags, Sector, Slab, TaskId, TraceMask, Tracer};
use iostack_des::Instant;
use iostack_device::{Device, DeviceCmd};
use std::collections::{BTreeMap, VecDeque};

/// `MAX_SEGMENTS` of 2.4's `include/linux/blkdev.h`: `__make_request`'s segment
/// limit for every queue.
pub const MAX_SEGMENTS_24: u32 = 128;
/// `max_sectors` IDE sets for every minor (`init_gendisk` in
/// `drivers/ide/ide-probe.c`, 2.4.4: "IDE can do up to 128K per request",
/// `*max_sect++ = 255`).
pub const IDE_MAX_SECTORS_24: u32 = 255;

/// Configuration of one 2.4 queue.
#[derive(Clone, Debug)]
pub struct Ll24Config {
    pub disk: DevT,
    pub partitions: Vec<Partition>,
    /// `get_max_sectors(bh->b_rdev)`.
    pub max_sectors: u32,
    /// `queue_nr_requests`: 64, or 128 with more than 32 MB of RAM
    /// (`blk_dev_init`); half on the read free list, half on the write one.
    pub nr_requests: u32,
    /// Buffer-head size in sectors (the file system's block size).
    pub bh_sectors: u32,
    pub irq_cpu: u32,
    pub trace_mask: TraceMask,
    pub elevator: Elevator24,
    /// An LVM1 linear logical volume over the partition (or the disk).
    pub lvm: Option<LvmLinear>,
}

/// LVM1's linear logical volume (2.4 `drivers/md/lvm.c`) over one physical
/// volume: `lvm_make_request_fn` → `lvm_map` remaps each buffer head from
/// the LV to its physical volume before `generic_make_request` goes on to
/// the PV's queue (A, as device-mapper's remap shows in a 2.6 trace).
#[derive(Clone, Debug)]
pub struct LvmLinear {
    /// The logical volume's device (58:minor).
    pub dev: DevT,
    /// Its physical volume: a partition of the disk, or the disk.
    pub pv: DevT,
    /// `vg->pe_size`, sectors.
    pub pe_sectors: u64,
    /// `lv_current_pe[le].pe`: the physical volume's sector where the
    /// extent backing logical extent `le` starts.
    pub extents: Vec<u64>,
}

impl LvmLinear {
    /// An LV of all of the PV's extents (`pv_sectors` long, extents from
    /// `pe_start`), allocated in order as lvcreate does on an empty VG.
    pub fn whole_pv(dev: DevT, pv: DevT, pe_sectors: u64, pe_start: u64, pv_sectors: u64) -> Self {
        let n = pv_sectors.saturating_sub(pe_start) / pe_sectors.max(1);
        LvmLinear {
            dev,
            pv,
            pe_sectors,
            extents: (0..n).map(|i| pe_start + i * pe_sectors).collect(),
        }
    }

    /// `lv->lv_size`.
    pub fn lv_sectors(&self) -> u64 {
        self.extents.len() as u64 * self.pe_sectors
    }

    /// `lvm_map`'s linear case: `index = rsector / pe_size`, then
    /// `lv_current_pe[index].pe + rsector % pe_size`.
    pub fn map(&self, sector: Sector) -> Sector {
        let index = (sector / self.pe_sectors) as usize;
        self.extents[index] + sector % self.pe_sectors
    }
}

impl Ll24Config {
    /// `blk_dev_init`: 128 request slots per queue above 32 MB of RAM, else 64.
    pub fn nr_requests_for_ram(mem_bytes: u64) -> u32 {
        if mem_bytes > 32 << 20 {
            128
        } else {
            64
        }
    }
    /// `batch_requests = queue_nr_requests / 4`.
    pub fn batch_requests(&self) -> u32 {
        self.nr_requests / 4
    }
}

/// One buffer head in the queue.
#[derive(Clone, Copy, Debug)]
struct Bh {
    sector: Sector,
    count: u32,
    write: bool,
    parent: u32,
    /// Its memory follows the previous buffer head of the same bio within one
    /// page (`b_data` contiguous, so no new segment).
    contig: bool,
}

/// A bio from above, split into buffer heads as they are submitted.
struct Parent {
    bio: Bio,
    bh_sectors: u32,
    /// The partition and its sector the bio was submitted to, before the remap.
    from: Option<(DevT, Sector)>,
    /// The logical volume's sector the bio was submitted to, before `lvm_map`.
    lv_from: Option<Sector>,
    /// Sectors handed to `__make_request` so far.
    submitted: u32,
    /// Buffer heads not yet completed.
    live: u32,
    /// Its next buffer head was queued (A, Q) and slept in
    /// `__get_request_wait`: the retry goes back to `again:`, not through
    /// `generic_make_request`.
    retry: bool,
}

/// A request: the elevator's view plus its buffer heads.
struct Slot {
    bhs: Vec<u32>,
    pid: u32,
    cpu: u32,
    /// Started by the driver (D traced).
    active: bool,
    issued_at: Instant,
}

pub struct Ll24Queue {
    cfg: Ll24Config,
    dev: Box<dyn Device>,
    dev_depth: u32,
    /// `head_active`: the driver keeps its active request at the list head
    /// (IDE, one command at a time); otherwise it dequeues what it starts.
    head_active: bool,
    /// Requests (index = slot of the fixed pool), the elevator's part.
    rqs: Vec<Option<Rq24>>,
    slots: Vec<Option<Slot>>,
    /// `q->rq[READ].free`, `q->rq[WRITE].free` (LIFO, `blkdev_free_rq`).
    free: [Vec<u32>; 2],
    /// `q->queue_head`, head first.
    list: Vec<u32>,
    /// Requests the driver took off the list (`blkdev_dequeue_request`).
    dequeued: Vec<u32>,
    plugged: bool,
    bhs: Slab<Bh>,
    parents: Slab<Parent>,
    /// `q->wait_for_request`: bios whose next buffer head waits for a request,
    /// per direction, in the order they slept.
    waiters: [VecDeque<u32>; 2],
    next_cmd: u64,
    cmds: BTreeMap<u64, u32>,
    in_device: u32,
    busy_since: Instant,
    dev_out: Vec<(Instant, u64)>,
    stats: QueueStats,
    checks: bool,
    /// For `busy_summary` and tests: the largest request started.
    max_started: u32,
}

impl Ll24Queue {
    pub fn new(cfg: Ll24Config, dev: Box<dyn Device>) -> Self {
        assert!(cfg.nr_requests >= 8 && cfg.bh_sectors >= 1);
        let n = cfg.nr_requests;
        // blk_init_free_list: request i goes to list i & 1 (READ = 0, WRITE = 1).
        let mut free = [Vec::new(), Vec::new()];
        for i in 0..n {
            free[(i & 1) as usize].push(i);
        }
        Ll24Queue {
            dev_depth: dev.queue_depth(),
            head_active: dev.queue_depth() == 1,
            dev,
            rqs: vec![None; n as usize],
            slots: (0..n).map(|_| None).collect(),
            free,
            list: Vec::new(),
            dequeued: Vec::new(),
            plugged: false,
            bhs: Slab::new("buffer head"),
            parents: Slab::new("2.4 bio"),
            waiters: [VecDeque::new(), VecDeque::new()],
            next_cmd: 0,
            cmds: BTreeMap::new(),
            in_device: 0,
            busy_since: Instant::ZERO,
            dev_out: Vec::new(),
            stats: QueueStats::default(),
            checks: cfg!(debug_assertions),
            max_started: 0,
            cfg,
        }
    }

    pub fn config(&self) -> &Ll24Config {
        &self.cfg
    }
    pub fn is_plugged(&self) -> bool {
        self.plugged
    }
    /// Requests off the free lists.
    pub fn allocated(&self) -> u32 {
        self.cfg.nr_requests - (self.free[0].len() + self.free[1].len()) as u32
    }
    /// Free requests per direction (`q->rq[rw].count`).
    pub fn free_count(&self, write: bool) -> u32 {
        self.free[write as usize].len() as u32
    }
    /// The largest request the driver started, in sectors.
    pub fn max_request_sectors(&self) -> u32 {
        self.max_started
    }
    /// `(sector, sectors, elevator_sequence)` of the queued requests, head first.
    pub fn queue_list(&self) -> Vec<(Sector, u32, i64)> {
        self.list
            .iter()
            .map(|&i| {
                let r = self.rq(i);
                (r.sector, r.nr_sectors, r.seq)
            })
            .collect()
    }

    fn rq(&self, i: u32) -> &Rq24 {
        self.rqs[i as usize].as_ref().expect("live request")
    }
    fn rq_mut(&mut self, i: u32) -> &mut Rq24 {
        self.rqs[i as usize].as_mut().expect("live request")
    }
    fn slot(&self, i: u32) -> &Slot {
        self.slots[i as usize].as_ref().expect("live request")
    }
    fn slot_mut(&mut self, i: u32) -> &mut Slot {
        self.slots[i as usize].as_mut().expect("live request")
    }

    // ---------------------------------------------------------------------------
    // Submission.

    /// Remap (A), then the bio's buffer heads through `__make_request` until one
    /// must wait for a request.
    fn submit(
        &mut self,
        now: Instant,
        mut bio: Bio,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> Submit {
        assert!(bio.sectors > 0 || bio.flags.contains(ReqFlags::FLUSH));
        bio.submitted_at = now;
        bio.next = None;
        // A buffer head is the largest power-of-two part of the block size that
        // the bio's start (`b_blocknr * count` on the partition) and length are
        // multiples of.
        let mut bh_sectors = self.cfg.bh_sectors;
        while bh_sectors > 1
            && (bio.sector % bh_sectors as u64 != 0 || bio.sectors % bh_sectors != 0)
        {
            bh_sectors /= 2;
        }
        let mut lv_from = None;
        if let Some(l) = self.cfg.lvm.as_ref().filter(|l| l.dev == bio.dev) {
            assert!(
                bio.end_sector() <= l.lv_sectors(),
                "bio beyond end of logical volume"
            );
            lv_from = Some(bio.sector);
            let pv = l.map(bio.sector);
            // lvm_map maps each buffer head; a linear LV over one PV has its
            // extents in order, so a bio's stay contiguous on the PV.
            assert_eq!(l.map(bio.end_sector() - 1), pv + bio.sectors as u64 - 1);
            bio.sector = pv;
            bio.dev = l.pv;
        }
        let mut from = None;
        if bio.dev != self.cfg.disk {
            let p = *self
                .cfg
                .partitions
                .iter()
                .find(|p| p.dev == bio.dev)
                .unwrap_or_else(|| panic!("bio for unknown device {:?}", bio.dev));
            assert!(
                bio.end_sector() <= p.nr_sects,
                "bio beyond end of partition"
            );
            from = Some((p.dev, bio.sector));
            bio.sector += p.start;
            bio.dev = self.cfg.disk;
        }
        assert!(
            bio.end_sector() <= self.dev.capacity_sectors(),
            "bio beyond end of device"
        );
        if bio.sectors == 0 {
            // 2.4 has no cache flush (`blkdev_issue_flush` came with 2.6's
            // barriers): an empty flush has nothing to do.
            out.completed.push(completed(&bio));
            return Submit::Queued;
        }
        self.stats.bios_queued += 1;
        self.stats.bytes_queued += bio.bytes();
        let parent = self.parents.alloc(Parent {
            bio,
            bh_sectors,
            from,
            lv_from,
            submitted: 0,
            live: 0,
            retry: false,
        });
        let r = self.submit_bhs(now, parent, tr, out);
        self.check();
        r
    }

    /// Submit the remaining buffer heads of `parent` (`submit_bh` each).
    fn submit_bhs(
        &mut self,
        now: Instant,
        parent: u32,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> Submit {
        loop {
            let p = self.parents.get(parent);
            if p.submitted == p.bio.sectors {
                return Submit::Queued;
            }
            let count = p.bh_sectors;
            let sector = p.bio.sector + p.submitted as u64;
            let contig = p.submitted > 0 && (p.submitted % 8) != 0;
            let write = p.bio.flags.is_write();
            let b = p.bio;
            let bh = self.bhs.alloc(Bh {
                sector,
                count,
                write,
                parent,
                contig,
            });
            let p = self.parents.get_mut(parent);
            p.submitted += count;
            p.live += 1;
            let retry = std::mem::take(&mut p.retry);
            let (lv_from, from) = (p.lv_from, p.from);
            // lvm_make_request_fn's lvm_map, the partition remap (the
            // driver's, in 2.4), then generic_make_request: Q.
            if let (false, Some(lv)) = (retry, lv_from) {
                // The sector on the PV: its partition's, or the disk's.
                let on_pv = match from {
                    Some((_, part)) => part + (sector - b.sector),
                    None => sector,
                };
                let lv_dev = self.cfg.lvm.as_ref().expect("an LV bio").dev;
                let pdu = Pdu::Remap {
                    from_dev: lv_dev,
                    from_sector: lv + (sector - b.sector),
                };
                self.trace_at(now, &b, on_pv, count, Action::Remap, pdu, tr);
            }
            if let (false, Some((dev, from))) = (retry, from) {
                let pdu = Pdu::Remap {
                    from_dev: dev,
                    from_sector: from + (sector - b.sector),
                };
                self.trace_at(now, &b, sector, count, Action::Remap, pdu, tr);
            }
            if !retry {
                self.trace_at(now, &b, sector, count, Action::Queue, Pdu::None, tr);
            }
            if !self.make_request(now, bh, b.pid, b.cpu, tr) {
                // __get_request_wait: S, generic_unplug_device, sleep.
                self.trace_at(now, &b, sector, count, Action::SleepRq, Pdu::None, tr);
                self.stats.sleeps += 1;
                let p = self.parents.get_mut(parent);
                p.submitted -= count;
                p.live -= 1;
                p.retry = true;
                self.bhs.free(bh);
                self.waiters[write as usize].push_back(parent);
                let ctx = Ctx {
                    pid: b.pid,
                    cpu: b.cpu,
                };
                self.generic_unplug_device(now, ctx, tr, out);
                return Submit::Sleeping;
            }
        }
    }

    /// `__make_request` for one buffer head: merge, or a new request inserted
    /// where the elevator says. False when no request is free.
    fn make_request(&mut self, now: Instant, bh: u32, pid: u32, cpu: u32, tr: &mut Tracer) -> bool {
        let b = *self.bhs.get(bh);
        let pos = BhPos {
            sector: b.sector,
            count: b.count,
            write: b.write,
        };
        let mut insert_after = self.list.len().checked_sub(1);
        if self.list.is_empty() {
            self.plug_device(now, Ctx { pid, cpu }, tr);
        } else {
            let first = (self.head_active && !self.plugged) as usize;
            let elv = self.cfg.elevator;
            let (ret, at) = elv.merge(&mut self.rqs, &self.list, first, pos, self.cfg.max_sectors);
            match ret {
                Merge24::Back | Merge24::Front => {
                    let at = at.expect("merge names its request");
                    if self.merge_bh(now, at, bh, ret, first, tr) {
                        return true;
                    }
                }
                Merge24::No => {
                    if at.is_some() {
                        insert_after = at;
                    }
                }
            }
        }
        // get_rq:
        let Some(id) = self.free[b.write as usize].pop() else {
            return false;
        };
        self.stats.requests_allocated += 1;
        let latency = self.cfg.elevator.latency(b.write);
        self.rqs[id as usize] = Some(Rq24 {
            sector: b.sector,
            nr_sectors: b.count,
            write: b.write,
            seq: latency,
            nr_segments: 1,
        });
        self.slots[id as usize] = Some(Slot {
            bhs: vec![bh],
            pid,
            cpu,
            active: false,
            issued_at: now,
        });
        let ctx = Ctx { pid, cpu };
        self.trace_rq(now, id, ctx, Action::GetRq, tr);
        // add_request: list_add(&req->queue, insert_here).
        let at = insert_after.map_or(0, |p| p + 1);
        assert!(
            self.plugged || !self.head_active || at > 0 || self.list.is_empty(),
            "add_request in front of the active head"
        );
        self.list.insert(at, id);
        self.trace_rq(now, id, ctx, Action::Insert, tr);
        true
    }

    /// The `ELEVATOR_BACK_MERGE`/`FRONT_MERGE` cases of `__make_request`:
    /// the segment check, `elevator_merge_cleanup_fn`, the buffer joins the
    /// request, and `attempt_back_merge`/`attempt_front_merge`.
    fn merge_bh(
        &mut self,
        now: Instant,
        at: usize,
        bh: u32,
        kind: Merge24,
        first: usize,
        tr: &mut Tracer,
    ) -> bool {
        let id = self.list[at];
        let b = *self.bhs.get(bh);
        // ll_back_merge_fn / ll_front_merge_fn → ll_new_segment.
        let joins = match kind {
            Merge24::Back => {
                b.contig
                    && self
                        .slot(id)
                        .bhs
                        .last()
                        .is_some_and(|&t| self.bhs.get(t).parent == b.parent)
            }
            _ => self.slot(id).bhs.first().is_some_and(|&h| {
                let h = self.bhs.get(h);
                h.parent == b.parent && h.contig
            }),
        };
        if !joins {
            if self.rq(id).nr_segments >= MAX_SEGMENTS_24 {
                return false;
            }
            self.rq_mut(id).nr_segments += 1;
        }
        let elv = self.cfg.elevator;
        elv.merge_cleanup(&mut self.rqs, &self.list, at, b.count);
        let p = self.parents.get(b.parent).bio;
        let action = if kind == Merge24::Back {
            Action::BackMerge
        } else {
            Action::FrontMerge
        };
        self.trace_at(now, &p, b.sector, b.count, action, Pdu::None, tr);
        self.stats.write_merges += b.write as u64;
        self.stats.read_merges += !b.write as u64;
        self.rq_mut(id).nr_sectors += b.count;
        if kind == Merge24::Back {
            self.stats.back_merges += 1;
            self.slot_mut(id).bhs.push(bh);
            // attempt_back_merge: not if it is the last request.
            if at + 1 < self.list.len() {
                self.attempt_merge(at);
            }
        } else {
            self.stats.front_merges += 1;
            self.rq_mut(id).sector = b.sector;
            self.slot_mut(id).bhs.insert(0, bh);
            // attempt_front_merge: with the previous one, not across `head`.
            if at > first {
                self.attempt_merge(at - 1);
            }
        }
        true
    }

    /// `attempt_merge`: merge `list[at + 1]` into `list[at]` if contiguous.
    fn attempt_merge(&mut self, at: usize) {
        let (id, nid) = (self.list[at], self.list[at + 1]);
        let (r, n) = (self.rq(id), self.rq(nid));
        if r.sector + r.nr_sectors as u64 != n.sector
            || r.write != n.write
            || r.nr_sectors + n.nr_sectors > self.cfg.max_sectors
            || self.slot(nid).active
        {
            return;
        }
        // ll_merge_requests_fn
        let tail = *self.slot(id).bhs.last().expect("bhs");
        let head = self.bhs.get(self.slot(nid).bhs[0]);
        let mut segs = r.nr_segments + n.nr_segments;
        if head.contig && head.parent == self.bhs.get(tail).parent {
            segs -= 1;
        }
        if segs > MAX_SEGMENTS_24 {
            return;
        }
        let (nsec, nseq) = (n.nr_sectors, n.seq);
        let elv = self.cfg.elevator;
        let r = self.rq_mut(id);
        elv.merge_req(r, nseq);
        r.nr_sectors += nsec;
        r.nr_segments = segs;
        let moved = std::mem::take(&mut self.slot_mut(nid).bhs);
        self.slot_mut(id).bhs.extend(moved);
        self.list.remove(at + 1);
        self.stats.request_merges += 1;
        self.release_request(nid);
    }

    /// `generic_plug_device`: plug an empty queue and put it on `tq_disk`.
    fn plug_device(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer) {
        if !self.list.is_empty() || self.plugged {
            return;
        }
        self.plugged = true;
        self.stats.plugs += 1;
        self.trace_simple(now, ctx, Action::Plug, Pdu::None, tr);
    }

    /// `generic_unplug_device` → `__generic_unplug_device`: remove the plug and
    /// call `request_fn` if anything is queued.
    fn generic_unplug_device(
        &mut self,
        now: Instant,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if self.plugged {
            self.plugged = false;
            if !self.list.is_empty() {
                self.request_fn(now, ctx, tr, out);
            }
        }
    }

    /// `blkdev_release_request`: back on its free list; waiters are woken once
    /// `batch_requests` are free, and each retries in the order it slept.
    fn release_request(&mut self, id: u32) -> bool {
        let w = self.rq(id).write as usize;
        self.rqs[id as usize] = None;
        self.slots[id as usize] = None;
        self.free[w].push(id);
        self.free[w].len() as u32 >= self.cfg.batch_requests() && !self.waiters[w].is_empty()
    }

    /// `wake_up(&q->wait_for_request)`: every sleeper runs `__get_request_wait`'s
    /// loop; they get requests in order until the list is empty again.
    fn wake_waiters(&mut self, now: Instant, write: usize, tr: &mut Tracer, out: &mut BlockOut) {
        while let Some(&parent) = self.waiters[write].front() {
            if self.free[write].is_empty() {
                break;
            }
            self.waiters[write].pop_front();
            if self.submit_bhs(now, parent, tr, out) == Submit::Queued {
                let owner = self.parents.get(parent).bio.owner;
                out.woken.push(owner.task);
            } else {
                // Asleep again, still first in line (`submit_bhs` queued it
                // at the back).
                let p = self.waiters[write].pop_back().expect("requeued");
                self.waiters[write].push_front(p);
                break;
            }
        }
    }

    // ---------------------------------------------------------------------------
    // The driver.

    /// `do_ide_request` → `ide_do_request`: while the drive is free, start the
    /// request at the head of the list (IDE leaves it there while active);
    /// a driver that queues commands dequeues each one it starts.
    fn request_fn(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        while !self.plugged && self.in_device < self.dev_depth {
            let next = if self.head_active {
                match self.list.first() {
                    Some(&id) if !self.slot(id).active => id,
                    _ => break,
                }
            } else {
                if self.list.is_empty() {
                    break;
                }
                let id = self.list.remove(0);
                self.dequeued.push(id);
                id
            };
            self.start(now, next, ctx, tr, out);
        }
    }

    fn start(&mut self, now: Instant, id: u32, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        self.trace_rq(now, id, ctx, Action::Issue, tr);
        self.stats.requests_dispatched += 1;
        let (sector, sectors, write) = {
            let r = self.rq(id);
            (r.sector, r.nr_sectors, r.write)
        };
        self.max_started = self.max_started.max(sectors);
        let s = self.slot_mut(id);
        s.active = true;
        s.issued_at = now;
        let cmd = DeviceCmd {
            id: self.next_cmd,
            sector,
            sectors,
            write,
            fua: false,
            flush: false,
        };
        self.cmds.insert(self.next_cmd, id);
        self.next_cmd += 1;
        if self.in_device == 0 {
            self.busy_since = now;
        }
        self.in_device += 1;
        self.stats.max_in_driver = self.stats.max_in_driver.max(self.in_device);
        self.dev.submit(now, cmd);
        self.poll_device(now, out);
    }

    fn poll_device(&mut self, now: Instant, out: &mut BlockOut) {
        self.dev_out.clear();
        self.dev.poll(now, &mut self.dev_out);
        for &(at, id) in &self.dev_out {
            assert!(at >= now, "device completion in the past");
            out.events.push((at, QueueEvent::DeviceDone(id)));
        }
    }

    /// The completion interrupt: `end_that_request_first` for every buffer head
    /// (C once, for the request), `blkdev_dequeue_request`,
    /// `end_that_request_last` → `blkdev_release_request`, and the driver
    /// starts the next request.
    fn complete(&mut self, now: Instant, cmd: u64, tr: &mut Tracer, out: &mut BlockOut) {
        self.dev.complete(now, cmd);
        self.poll_device(now, out);
        let id = self
            .cmds
            .remove(&cmd)
            .expect("completion of a command not issued");
        let irq = Ctx {
            pid: 0,
            cpu: self.cfg.irq_cpu,
        };
        self.trace_rq(now, id, irq, Action::Complete, tr);
        let write = self.rq(id).write;
        let d2c = now.since(self.slot(id).issued_at).as_ns();
        self.stats.requests_completed += 1;
        self.stats.busy_ns += d2c;
        if write {
            self.stats.write_ios += 1;
            self.stats.write_ticks_ns += d2c;
        } else {
            self.stats.read_ios += 1;
            self.stats.read_ticks_ns += d2c;
        }
        self.in_device -= 1;
        if self.in_device == 0 {
            self.stats.io_ticks_ns += now.since(self.busy_since).as_ns();
        }
        if let Some(p) = self.list.iter().position(|&x| x == id) {
            self.list.remove(p);
        } else {
            let p = self
                .dequeued
                .iter()
                .position(|&x| x == id)
                .expect("started request");
            self.dequeued.swap_remove(p);
        }
        let bhs = std::mem::take(&mut self.slot_mut(id).bhs);
        for bh in bhs {
            self.end_bh(bh, out);
        }
        if self.release_request(id) {
            self.wake_waiters(now, write as usize, tr, out);
        }
        self.request_fn(now, irq, tr, out);
        self.check();
    }

    /// `bh->b_end_io`: the bio completes with its last buffer head.
    fn end_bh(&mut self, bh: u32, out: &mut BlockOut) {
        let b = self.bhs.free(bh);
        let p = self.parents.get_mut(b.parent);
        p.live -= 1;
        if p.live == 0 && p.submitted == p.bio.sectors {
            let p = self.parents.free(b.parent);
            self.stats.bios_completed += 1;
            self.stats.bytes_completed += p.bio.bytes();
            out.completed.push(completed(&p.bio));
        }
    }

    // ---------------------------------------------------------------------------
    // Tracing.

    #[allow(clippy::too_many_arguments)]
    fn trace_at(
        &self,
        now: Instant,
        b: &Bio,
        sector: Sector,
        sectors: u32,
        action: Action,
        pdu: Pdu,
        tr: &mut Tracer,
    ) {
        let dm = (self.cfg.disk, self.cfg.trace_mask);
        crate::tracepoint::trace_bio_range(tr, dm, now, b, (sector, sectors), action, pdu);
    }

    fn trace_rq(&self, now: Instant, id: u32, ctx: Ctx, action: Action, tr: &mut Tracer) {
        let r = self.rq(id);
        let flags = if r.write {
            ReqFlags::WRITE
        } else {
            ReqFlags::READ
        };
        // G and I are traced in the submitter's context.
        let ctx = match action {
            Action::GetRq | Action::Insert => Ctx {
                pid: self.slot(id).pid,
                cpu: self.slot(id).cpu,
            },
            _ => ctx,
        };
        let point = crate::tracepoint::RqPoint {
            ctx,
            sector: r.sector,
            sectors: r.nr_sectors,
            flags,
            is_request: !matches!(action, Action::GetRq),
        };
        crate::tracepoint::trace_rq(tr, (self.cfg.disk, self.cfg.trace_mask), now, point, action);
    }

    fn trace_simple(&self, now: Instant, ctx: Ctx, action: Action, pdu: Pdu, tr: &mut Tracer) {
        crate::tracepoint::trace_simple(tr, self.cfg.disk, now, ctx, action, pdu);
    }

    // ---------------------------------------------------------------------------
    // Invariants.

    fn check(&self) {
        if self.checks {
            self.check_invariants();
        }
    }

    /// Every request is free, on the list or dequeued by the driver, exactly
    /// once; request sizes agree with their buffer heads and the limits.
    pub fn check_invariants(&self) {
        let mut seen = vec![0u8; self.cfg.nr_requests as usize];
        for &i in self.free[0]
            .iter()
            .chain(&self.free[1])
            .chain(&self.list)
            .chain(&self.dequeued)
        {
            seen[i as usize] += 1;
        }
        assert!(
            seen.iter().all(|&c| c == 1),
            "a request is in two places or none"
        );
        for &i in self.list.iter().chain(&self.dequeued) {
            let r = self.rq(i);
            let s = self.slot(i);
            let sum: u32 = s.bhs.iter().map(|&b| self.bhs.get(b).count).sum();
            assert_eq!(sum, r.nr_sectors, "request and its buffer heads disagree");
            assert!(r.nr_sectors <= self.cfg.max_sectors.max(self.cfg.bh_sectors));
            assert!(r.nr_segments <= MAX_SEGMENTS_24);
        }
        if self.head_active {
            for (k, &i) in self.list.iter().enumerate() {
                assert!(
                    !self.slot(i).active || k == 0,
                    "an active request not at the head"
                );
            }
        }
        assert_eq!(self.in_device as usize, self.cmds.len());
    }
}

fn completed(b: &Bio) -> CompletedBio {
    CompletedBio {
        owner: b.owner,
        sector: b.sector,
        bytes: b.bytes(),
        flags: b.flags,
        submitted_at: b.submitted_at,
        error: 0,
        run: b.run,
    }
}

/// The 2.4 queue: its plug is `tq_disk`, run by `unplug` (`run_task_queue`
/// from `__wait_on_buffer`, `block_sync_page`, `kiobuf_wait_for_io`); the
/// other per-task calls do nothing, and nothing is deferred to kblockd.
impl BlockQueue for Ll24Queue {
    fn submit_bio(
        &mut self,
        now: Instant,
        bio: Bio,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) -> Submit {
        self.submit(now, bio, tr, out)
    }
    fn start_plug(&mut self, _task: TaskId) {}
    fn finish_plug(&mut self, _: Instant, _: TaskId, _: Ctx, _: &mut Tracer, _: &mut BlockOut) {}
    /// `run_task_queue(&tq_disk)`: the queue's `plug_tq` is on `tq_disk` only
    /// while plugged; running it unplugs (U with the requests allocated) and
    /// starts the driver.
    fn unplug(
        &mut self,
        now: Instant,
        _task: TaskId,
        ctx: Ctx,
        tr: &mut Tracer,
        out: &mut BlockOut,
    ) {
        if self.plugged {
            self.stats.unplugs_io += 1;
            let depth = self.allocated() as u64;
            self.trace_simple(now, ctx, Action::UnplugIo, Pdu::Unplug { depth }, tr);
            self.generic_unplug_device(now, ctx, tr, out);
        }
        self.check();
    }
    fn sleep(&mut self, _: Instant, _: TaskId, _: Ctx, _: &mut Tracer, _: &mut BlockOut) {}
    fn run_queue(&mut self, now: Instant, ctx: Ctx, tr: &mut Tracer, out: &mut BlockOut) {
        self.generic_unplug_device(now, ctx, tr, out);
    }
    fn handle(&mut self, now: Instant, ev: QueueEvent, tr: &mut Tracer, out: &mut BlockOut) {
        match ev {
            QueueEvent::DeviceDone(cmd) => self.complete(now, cmd, tr, out),
            // No unplug timer, elevator timer or kblockd in 2.4.
            QueueEvent::UnplugTimer(_)
            | QueueEvent::ElvTimer(_)
            | QueueEvent::WbtTimer(_)
            | QueueEvent::Work(_) => {}
        }
    }
    fn run_work(&mut self, _: Instant, _: BlockWork, _: Ctx, _: &mut Tracer, _: &mut BlockOut) {}
    fn set_kblockd(&mut self, _ctx: Ctx) {}
    /// 2.4 has no congestion flags: a writer finds out by sleeping in
    /// `__get_request_wait`.
    fn congested(&self, _sync: bool) -> bool {
        false
    }
    fn idle(&self) -> bool {
        self.parents.live() == 0 && self.allocated() == 0
    }
    fn busy_summary(&self) -> String {
        format!(
            "{} requests, plugged {}, sleepers [{}, {}], stats {:?}",
            self.allocated(),
            self.plugged,
            self.waiters[0].len(),
            self.waiters[1].len(),
            self.stats
        )
    }
    fn stats(&self) -> &QueueStats {
        &self.stats
    }
    fn elevator_name(&self) -> &'static str {
        self.cfg.elevator.name()
    }
    fn device(&self) -> &dyn Device {
        &*self.dev
    }
    fn set_checks(&mut self, on: bool) {
        self.checks = on;
    }
}

#[cfg(test)]
mod tests {

    /// `lvm_map`'s linear case: logical extent `le` of a volume made of
    /// every extent of its PV in order lands at `pe_start + le * pe_size`.
    #[test]
    fn lvm_map_linear_extents() {
        let l = LvmLinear::whole_pv(
            DevT::new(58, 0),
            DevT::new(3, 1),
            8192,
            384,
            8192 * 10 + 500,
        );
        assert_eq!(l.extents.len(), 10);
        assert_eq!(l.lv_sectors(), 81920);
        assert_eq!(l.map(0), 384);
        assert_eq!(l.map(8191), 384 + 8191);
        assert_eq!(l.map(8192 * 3 + 7), 384 + 8192 * 3 + 7);
        // Non-contiguous extents (an LV allocated after another one).
        let l = LvmLinear {
            extents: vec![384 + 8192 * 5, 384],
            ..l
        };
        assert_eq!(l.map(8192 + 1), 385);
        assert_eq!(l.map(2), 384 + 8192 * 5 + 2);
    }

    use super::*;
    use iostack_core::{BioOwner, EndIo, Profile};
    use iostack_device::{Fixed, FixedParams, HwLimits};

    fn queue(depth: u32, elevator: Elevator24) -> Ll24Queue {
        let dev = Fixed::new(FixedParams {
            overhead_ns: 1_000_000,
            rate_bytes_per_s: 10_000_000,
            channels: 1,
            queue_depth: depth,
            capacity_sectors: 1 << 24,
            rotational: true,
            write_cache: false,
            limits: HwLimits {
                max_hw_sectors: 256,
                max_segments: 128,
                logical_block_size: 512,
            },
        });
        let cfg = Ll24Config {
            lvm: None,
            disk: DevT::new(3, 0),
            partitions: Vec::new(),
            max_sectors: IDE_MAX_SECTORS_24,
            nr_requests: 128,
            bh_sectors: 8,
            irq_cpu: 0,
            trace_mask: TraceMask::of(Profile::V2_4),
            elevator,
        };
        let mut q = Ll24Queue::new(cfg, Box::new(dev));
        q.set_checks(true);
        q
    }

    fn bio(task: u32, sector: Sector, sectors: u32, write: bool) -> Bio {
        Bio {
            dev: DevT::new(3, 0),
            sector,
            sectors,
            segments: 1,
            flags: if write {
                ReqFlags::WRITE
            } else {
                ReqFlags::READ
            },
            pid: 1000 + task,
            cpu: 0,
            owner: BioOwner {
                task: TaskId(task),
                end_io: EndIo::DirectIo { slot: 0 },
            },
            ioprio: (2, 4),
            submitted_at: Instant::ZERO,
            run: crate::BioRun::ONE,
            next: None,
        }
    }

    /// Drive the device until nothing is left, returning completed bios.
    fn drain(q: &mut Ll24Queue, tr: &mut Tracer, out: &mut BlockOut) -> Vec<CompletedBio> {
        let mut done = Vec::new();
        while let Some(i) = (0..out.events.len()).min_by_key(|&i| out.events[i].0) {
            let (at, ev) = out.events.swap_remove(i);
            q.handle(at, ev, tr, out);
            done.append(&mut out.completed);
        }
        done
    }

    const T0: Instant = Instant::ZERO;
    fn ctx() -> Ctx {
        Ctx { pid: 1000, cpu: 0 }
    }

    /// `tq_disk`: the first buffer head plugs the empty queue, nothing reaches
    /// the driver until `run_task_queue` (no timer, no threshold), then the
    /// driver works the list down by itself.
    #[test]
    fn tq_disk_holds_the_queue_until_a_waiter_runs_it() {
        let mut q = queue(1, Elevator24::Noop);
        let (mut tr, mut out) = (Tracer::new(), BlockOut::default());
        for i in 0..40u64 {
            // Every other 64 KiB: 40 requests, none mergeable.
            q.submit_bio(T0, bio(0, i * 256, 128, true), &mut tr, &mut out);
        }
        assert!(q.is_plugged());
        assert!(out.events.is_empty(), "nothing started while plugged");
        assert_eq!(q.allocated(), 40);
        q.unplug(T0, TaskId(0), ctx(), &mut tr, &mut out);
        assert!(!q.is_plugged());
        assert_eq!(q.stats().requests_dispatched, 1, "IDE starts one at a time");
        let done = drain(&mut q, &mut tr, &mut out);
        assert_eq!(done.len(), 40);
        assert_eq!(q.stats().requests_dispatched, 40);
        assert!(q.idle());
        // A later unplug of an unplugged queue does nothing (not on tq_disk).
        q.unplug(T0, TaskId(0), ctx(), &mut tr, &mut out);
        assert_eq!(q.stats().unplugs_io, 1);
    }

    /// A 1 MiB bio becomes 256 buffer heads of 4 KiB, merged up to IDE's 255
    /// sectors: requests of 248 sectors (31 buffer heads), the last one the rest.
    #[test]
    fn buffer_heads_merge_up_to_ides_max_sectors() {
        let mut q = queue(
            1,
            Elevator24::Linus {
                read_latency: 8192,
                write_latency: 16384,
            },
        );
        let (mut tr, mut out) = (Tracer::new(), BlockOut::default());
        q.submit_bio(T0, bio(0, 0, 2048, true), &mut tr, &mut out);
        let sizes: Vec<u32> = q.queue_list().iter().map(|r| r.1).collect();
        assert_eq!(sizes.len(), 9, "{sizes:?}");
        assert!(sizes[..8].iter().all(|&s| s == 248), "{sizes:?}");
        assert_eq!(sizes[8], 2048 - 8 * 248);
        q.unplug(T0, TaskId(0), ctx(), &mut tr, &mut out);
        let done = drain(&mut q, &mut tr, &mut out);
        assert_eq!(done.len(), 1, "the bio completes once, with its last bh");
        assert_eq!(done[0].bytes, 1 << 20);
        assert_eq!(q.max_request_sectors(), 248);
        assert_eq!(q.stats().back_merges, 256 - 9);
    }

    /// `elevator_linus`: with a write latency of L sectors, a queued request is
    /// passed (a new request inserted in front of it) at most L times; after
    /// that, new requests go behind it.
    #[test]
    fn elevator_linus_bounds_how_often_a_request_is_passed() {
        // In sectors: each pass ages a request by one, and a buffer head of
        // `count` sectors may not pass one whose counter is below `count`.
        let latency = 12;
        let mut q = queue(
            1,
            Elevator24::Linus {
                read_latency: latency,
                write_latency: latency,
            },
        );
        let (mut tr, mut out) = (Tracer::new(), BlockOut::default());
        // A request far out, the victim behind it, then requests between the
        // two: 2.4.4's scan puts each behind the first request from the tail
        // that starts beyond it (`BHRQ_IN_ORDER`), the far one, so each passes
        // the victim while its counter lasts.
        q.submit_bio(T0, bio(0, 2_000_000, 8, true), &mut tr, &mut out);
        q.submit_bio(T0, bio(0, 1_000_000, 8, true), &mut tr, &mut out);
        let mut passes = Vec::new();
        for i in 0..10u64 {
            q.submit_bio(T0, bio(0, 1_500_000 + i * 1000, 8, true), &mut tr, &mut out);
            let list = q.queue_list();
            let victim = list.iter().position(|r| r.0 == 1_000_000).unwrap();
            passes.push(victim - 1);
        }
        // Every scan ages the far request too (it is passed over by the merge
        // scan, 12 → 8 after four scans), and from then on no buffer head of 8
        // sectors gets past it: new requests go to the tail.
        assert_eq!(passes, [1, 2, 3, 3, 3, 3, 3, 3, 3, 3]);
        assert!(*passes.last().unwrap() as i64 <= latency);
        let list = q.queue_list();
        let victim = list.iter().position(|r| r.0 == 1_000_000).unwrap();
        assert!(list[victim].2 < 8, "{list:?}");
    }

    /// The fixed pool: 64 write requests; the 65th sleeps, and only when
    /// `batch_requests` (32) are free again are the sleepers woken.
    #[test]
    fn request_pool_sleeps_and_wakes_in_batches() {
        let mut q = queue(1, Elevator24::Noop);
        let (mut tr, mut out) = (Tracer::new(), BlockOut::default());
        for i in 0..64u64 {
            let r = q.submit_bio(T0, bio(0, i * 256, 8, true), &mut tr, &mut out);
            assert_eq!(r, Submit::Queued);
        }
        assert_eq!(q.free_count(true), 0);
        assert_eq!(q.free_count(false), 64, "reads have their own half");
        let r = q.submit_bio(T0, bio(1, 64 * 256, 8, true), &mut tr, &mut out);
        assert_eq!(r, Submit::Sleeping);
        // __get_request_wait unplugged the queue: the driver runs.
        assert!(!q.is_plugged());
        let mut woken_at_free = None;
        while let Some(i) = (0..out.events.len()).min_by_key(|&i| out.events[i].0) {
            let (at, ev) = out.events.swap_remove(i);
            let free_before = q.free_count(true);
            q.handle(at, ev, &mut tr, &mut out);
            if woken_at_free.is_none() && !out.woken.is_empty() {
                woken_at_free = Some(free_before + 1);
            }
        }
        assert_eq!(out.woken, vec![TaskId(1)]);
        assert_eq!(
            woken_at_free,
            Some(32),
            "woken when batch_requests are free"
        );
        assert!(q.idle());
    }
}
