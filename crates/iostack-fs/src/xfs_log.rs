//! XFS's log (`fs/xfs/xfs_log.c`, `xfs_log_cil.c`, `xfs_trans.c`), sans-IO: the
//! transactions that log items, the in-core log buffers (iclogs) and the log
//! force of `xfs_fsync`, as block writes into the internal log's area with each
//! era's flags. It names sectors and `ReqFlags`, never bios; the simulation
//! submits the writes (charged to the task that forces the log, as the kernel
//! does: `xlog_sync` → `xlog_bdstrat`/`xlog_write_iclog` runs in the caller of
//! the force or of the commit that filled the iclog; xfslogd/the `xfs-log`
//! workqueue only completes them).
//!
//! * **Eras.** Up to 2.6.38 (`Era::Iclog`) a transaction's items are copied into
//!   the current iclog at commit (`xfs_trans_commit` → `xfs_log_write` →
//!   `xlog_write`: a start-record op header, the transaction header, each item's
//!   regions behind their op headers, then `xlog_commit_record`); an iclog that
//!   fills is written by the committer (`xlog_state_want_sync`,
//!   `xlog_state_release_iclog` → `xlog_sync`). From 2.6.39 (delayed logging
//!   default; 3.10, 6.x: `Era::Cil`) items go to the committed item list, where a
//!   relogged item replaces its earlier copy, and only a push writes them, as one
//!   checkpoint (`xlog_cil_push_work`: the checkpoint's transaction header, the
//!   items, the commit record).
//! * **Sizes** (`xlog_write` regions, `xfs_inode_item_format`,
//!   `xfs_buf_item_format`): every region is an op header (`xlog_op_header`, 12
//!   bytes) and its data; an inode item is `xfs_inode_log_format` (56) and the
//!   inode core (`xfs_icdinode` 96 bytes for v2 inodes, `xfs_log_dinode` 176 for
//!   v3), plus the data fork (16 bytes an extent, or a short-form directory's
//!   bytes); a buffer item is `xfs_buf_log_format` (20 bytes and a 32-bit word of
//!   dirty map per 32 chunks) and each dirty run of 128-byte chunks
//!   (`XFS_BLF_CHUNK`); 6.x's inode-chunk creation is an `xfs_icreate_log` (28).
//!   A write is the record header (`l_iclog_hsize`: one 512-byte sector for
//!   32 KiB iclogs) and the data, rounded to `l_iclog_roundoff` (512 bytes: a v2
//!   log without a stripe unit, as mkfs.xfs makes on a disk without one).
//! * **Placement.** The log is a region of the device (mkfs.xfs puts the
//!   internal log in the middle AG); the head starts after mkfs's unmount record
//!   (`libxfs_log_clear`: a record header and the unmount op, 2 sectors, which
//!   `xlog_find_tail` finds at mount) and advances by each write; a write that
//!   runs past the log's end wraps in two parts (`xlog_sync`'s split).
//! * **Flags.** 2.6.28-2.6.36 with barriers (`XFS_MOUNT_BARRIER`, on by
//!   default): `XBF_ORDERED` → `WRITE_BARRIER` (`_xfs_buf_ioapply`), the first
//!   part of a split write without it; without barriers `_XBF_RUN_QUEUES` →
//!   `WRITE_SYNC`. 2.6.37: `WRITE_FLUSH_FUA` for the ordered write. 3.10:
//!   `WRITE_SYNC | REQ_META`, `REQ_FLUSH | REQ_FUA` with barriers. 6.x
//!   (`xlog_write_iclog`): `REQ_META | REQ_SYNC | REQ_IDLE`, `REQ_PREFLUSH` on the
//!   iclog that starts a checkpoint (`XLOG_ICL_NEED_FLUSH`) and `REQ_FUA` on the
//!   one with its commit record (`XLOG_ICL_NEED_FUA`).
//!
//! Not modelled: log space and the tail (the AIL, xfsaild's metadata writeback
//! and `xlog_grant_push_ail`; the head wraps over a log whose tail never
//! moves), the periodic log force (xfssyncd/`xfs_log_worker`, 30 s), the CIL's
//! background push (`XLOG_CIL_SPACE_LIMIT`, an eighth of the log), waits for a
//! free iclog (`xlog_state_get_iclog_space`), log stripe units, external log
//! devices.

use iostack_core::{Profile, ReqFlags};
use std::collections::BTreeMap;

/// A basic block (`BBSIZE`).
pub const BBSIZE: u64 = 512;
/// `sizeof(struct xlog_op_header)`.
const OPHDR: u64 = 12;
/// `sizeof(struct xfs_trans_header)`.
const TRANS_HDR: u64 = 16;
/// `sizeof(struct xfs_inode_log_format)` (64-bit).
const INODE_FMT: u64 = 56;
/// `offsetof(struct xfs_buf_log_format, blf_data_map)`.
const BUF_FMT: u64 = 20;
/// `XFS_BLF_CHUNK`.
pub const BLF_CHUNK: u64 = 128;
/// `sizeof(struct xfs_icreate_log)`.
const ICREATE: u64 = 28;
/// `sizeof(xfs_bmbt_rec_t)`: one extent of an inode's data fork.
pub const EXTENT_REC: u32 = 16;
/// mkfs.xfs's unmount record at the log's start (record header + unmount op).
const MKFS_RECORD_BB: u64 = 2;

/// How transactions reach the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// 2.6.28-2.6.38: `xlog_write` at each commit.
    Iclog,
    /// 2.6.39+ (delayed logging): the CIL, written by a push.
    Cil,
}

/// One log item a transaction joined and logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// An inode log item; `fork`: bytes of the data fork logged (extents or
    /// local data), 0 for the core alone; `ts_only`: only timestamps
    /// (`XFS_ILOG_TIMESTAMP`, which fdatasync does not wait for).
    Inode { ino: u32, fork: u32, ts_only: bool },
    /// A buffer log item: the buffer's disk address (sectors) and length, its
    /// dirty regions and the 128-byte chunks in them.
    Buf {
        daddr: u64,
        len_bb: u32,
        regions: u32,
        chunks: u32,
    },
    /// `xfs_icreate_item` (v5 file systems): a new inode chunk.
    Icreate { agbno: u64 },
}

impl Item {
    /// The CIL's identity of the item (one log item per inode or buffer).
    fn key(&self) -> (u8, u64) {
        match *self {
            Item::Inode { ino, .. } => (0, ino as u64),
            Item::Buf { daddr, .. } => (1, daddr),
            Item::Icreate { agbno } => (2, agbno),
        }
    }

    /// Bytes the item formats into the log, op headers included.
    fn bytes(&self, core: u64) -> u64 {
        match *self {
            Item::Inode { fork, .. } => {
                let f = if fork > 0 {
                    OPHDR + (fork as u64).next_multiple_of(4)
                } else {
                    0
                };
                OPHDR + INODE_FMT + OPHDR + core + f
            }
            Item::Buf {
                len_bb,
                regions,
                chunks,
                ..
            } => {
                let map_words = (len_bb as u64 * BBSIZE / BLF_CHUNK).div_ceil(32);
                OPHDR + BUF_FMT + 4 * map_words + regions as u64 * OPHDR + chunks as u64 * BLF_CHUNK
            }
            Item::Icreate { .. } => OPHDR + ICREATE,
        }
    }
}

/// The log's geometry and mount options.
#[derive(Clone, Debug)]
pub struct LogConfig {
    pub profile: Profile,
    /// First sector of the log on the file system's device, and its length.
    pub start_bb: u64,
    pub len_bb: u64,
    /// `logbsize` (`XLOG_BIG_RECORD_BSIZE`, 32 KiB by default).
    pub iclog_size: u64,
    /// `logbufs` (8 by default: `XLOG_MAX_ICLOGS`).
    pub iclogs: u32,
    /// `XFS_MOUNT_BARRIER` (`barrier`/`nobarrier`; 6.x always flushes).
    pub barrier: bool,
}

impl LogConfig {
    pub fn era(&self) -> Era {
        if self.profile >= Profile::V3_10 {
            Era::Cil
        } else {
            Era::Iclog
        }
    }

    /// The inode core logged: v2 inodes' `xfs_icdinode` (96 bytes) until the
    /// v5 format that 6.x's mkfs.xfs makes (`xfs_log_dinode`, 176).
    fn core(&self) -> u64 {
        if self.profile >= Profile::V6 {
            176
        } else {
            96
        }
    }

    /// `l_iclog_hsize`: one header sector per 32 KiB of iclog (v2 logs).
    fn hsize(&self) -> u64 {
        self.iclog_size.div_ceil(32768) * BBSIZE
    }
}

/// One write into the log area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogWrite {
    /// Sector on the file system's device.
    pub sector: u64,
    pub sectors: u32,
    pub flags: ReqFlags,
    /// The log context (iclog or checkpoint) it belongs to.
    pub ctx: u64,
}

/// What `xfs_fsync` asks of the caller after `filemap_write_and_wait`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fsync {
    /// Log writes to submit (the force's iclogs).
    pub writes: Vec<LogWrite>,
    /// Wait until this context is on disk.
    pub wait: Option<u64>,
    /// Then `xfs_blkdev_issue_flush` of the data device, waited for.
    pub flush: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct InodeState {
    /// The context holding its last change (0: none).
    ctx: u64,
    /// Only timestamps logged since the last force (fdatasync skips it).
    ts_only: bool,
    /// 2.6.3x `i_update_core`: the in-core inode changed outside a transaction.
    update_core: bool,
    /// The size logged or written (`di_size`).
    disk_size: u64,
}

/// The log of one mounted XFS.
#[derive(Clone, Debug)]
pub struct XfsLog {
    cfg: LogConfig,
    /// Head, sectors from the log's start.
    head: u64,
    cycle: u32,
    /// The open context (the current iclog or the CIL's checkpoint).
    ctx: u64,
    /// Its bytes (iclog: used; CIL: formatted items by key).
    used: u64,
    cil: BTreeMap<(u8, u64), u64>,
    inodes: BTreeMap<u32, InodeState>,
    /// Contexts written and not complete: outstanding writes.
    inflight: BTreeMap<u64, u32>,
    /// Every context up to this one is on disk.
    stable: u64,
    /// Log writes issued, sectors written.
    pub writes: u64,
    pub sectors: u64,
}

impl XfsLog {
    pub fn new(cfg: LogConfig) -> Result<XfsLog, String> {
        if cfg.len_bb <= MKFS_RECORD_BB + 2 * cfg.iclog_size / BBSIZE {
            return Err(format!("an XFS log of {} sectors is too small", cfg.len_bb));
        }
        if !(16384..=262144).contains(&cfg.iclog_size) || !cfg.iclog_size.is_power_of_two() {
            return Err(format!("logbsize {} (16k to 256k)", cfg.iclog_size));
        }
        if !(2..=8).contains(&cfg.iclogs) {
            return Err(format!("logbufs {} (2 to 8)", cfg.iclogs));
        }
        Ok(XfsLog {
            cfg,
            head: MKFS_RECORD_BB,
            cycle: 1,
            ctx: 1,
            used: 0,
            cil: BTreeMap::new(),
            inodes: BTreeMap::new(),
            inflight: BTreeMap::new(),
            stable: 0,
            writes: 0,
            sectors: 0,
        })
    }

    pub fn config(&self) -> &LogConfig {
        &self.cfg
    }

    /// `xfs_trans_commit` of a transaction that logged `items`: written into
    /// the iclog (returning the writes of iclogs it filled, submitted by the
    /// committer) or inserted in the CIL (no I/O).
    pub fn commit(&mut self, items: &[Item]) -> Vec<LogWrite> {
        let core = self.cfg.core();
        let mut out = Vec::new();
        match self.cfg.era() {
            Era::Iclog => {
                // start record, transaction header, items, commit record
                let mut bytes = OPHDR + OPHDR + TRANS_HDR + OPHDR;
                bytes += items.iter().map(|i| i.bytes(core)).sum::<u64>();
                let room = self.cfg.iclog_size - self.cfg.hsize();
                self.used += bytes;
                while self.used >= room {
                    // xlog_write continues in the next iclog (a continuation
                    // op header); the full one is synced.
                    let rest = self.used - room + OPHDR;
                    self.used = room;
                    out.extend(self.sync_ctx(false));
                    self.used = rest;
                }
            }
            Era::Cil => {
                for i in items {
                    let e = self.cil.entry(i.key()).or_insert(0);
                    *e = (*e).max(i.bytes(core));
                }
            }
        }
        let ctx = self.ctx;
        for i in items {
            if let Item::Inode { ino, ts_only, .. } = *i {
                let s = self.inodes.entry(ino).or_default();
                s.ts_only = ts_only && (s.ctx <= self.stable || s.ts_only);
                s.ctx = ctx;
                if !ts_only {
                    s.update_core = false;
                }
            }
        }
        out
    }

    /// Write the open context: its iclog(s) from the head, flagged for the
    /// era; a new context opens.
    fn sync_ctx(&mut self, force: bool) -> Vec<LogWrite> {
        let hsize = self.cfg.hsize();
        let data = match self.cfg.era() {
            Era::Iclog => self.used,
            // xlog_cil_build_trans_hdr: start record, transaction header;
            // xlog_cil_write_commit_record.
            Era::Cil => OPHDR + OPHDR + TRANS_HDR + self.cil.values().sum::<u64>() + OPHDR,
        };
        let room = self.cfg.iclog_size - hsize;
        let n = data.div_ceil(room).max(1);
        let mut out = Vec::new();
        for k in 0..n {
            let part = if k + 1 == n { data - k * room } else { room };
            let bytes = (hsize + part).next_multiple_of(BBSIZE);
            let flags = self.flags(k == 0, k + 1 == n, force);
            out.extend(self.place(bytes / BBSIZE, flags));
        }
        self.used = 0;
        self.cil.clear();
        self.ctx += 1;
        out
    }

    /// The request flags of one iclog write (`first`: it starts the
    /// checkpoint; `last`: it holds the commit record).
    fn flags(&self, first: bool, last: bool, _force: bool) -> ReqFlags {
        let w = ReqFlags::WRITE;
        let sync = ReqFlags::SYNC | ReqFlags::NOIDLE | ReqFlags::UNPLUG;
        match self.cfg.profile {
            Profile::V2_4 | Profile::V2_6_28 if self.cfg.barrier => w | ReqFlags::FLUSH,
            Profile::V2_4 | Profile::V2_6_28 => w | ReqFlags::SYNC | ReqFlags::UNPLUG,
            Profile::V2_6_32 | Profile::V2_6_33 if self.cfg.barrier => w | sync | ReqFlags::FLUSH,
            Profile::V2_6_37 if self.cfg.barrier => w | sync | ReqFlags::FLUSH | ReqFlags::FUA,
            Profile::V2_6_32 | Profile::V2_6_33 | Profile::V2_6_37 => w | sync,
            Profile::V3_10 => {
                let f = w | ReqFlags::SYNC | ReqFlags::NOIDLE | ReqFlags::META;
                if self.cfg.barrier {
                    f | ReqFlags::FLUSH | ReqFlags::FUA
                } else {
                    f
                }
            }
            Profile::V6 => {
                let mut f = w | ReqFlags::SYNC | ReqFlags::META | ReqFlags::IDLE;
                if first {
                    f = f | ReqFlags::FLUSH;
                }
                if last {
                    f = f | ReqFlags::FUA;
                }
                f
            }
        }
    }

    /// Place a write of `bb` sectors at the head; one past the log's end is
    /// split (`xlog_sync`: the first part without the ordered flag before 6.x).
    fn place(&mut self, bb: u64, flags: ReqFlags) -> Vec<LogWrite> {
        let ctx = self.ctx;
        let mut out = Vec::new();
        let mut left = bb;
        while left > 0 {
            let n = left.min(self.cfg.len_bb - self.head);
            let split_first = n < left;
            let f = if split_first && self.cfg.profile < Profile::V6 {
                flags.remove(ReqFlags::FLUSH | ReqFlags::FUA)
            } else {
                flags
            };
            out.push(LogWrite {
                sector: self.cfg.start_bb + self.head,
                sectors: n as u32,
                flags: f,
                ctx,
            });
            self.head += n;
            if self.head == self.cfg.len_bb {
                self.head = 0;
                self.cycle += 1;
            }
            left -= n;
        }
        *self.inflight.entry(ctx).or_insert(0) += out.len() as u32;
        self.writes += out.len() as u64;
        self.sectors += bb;
        out
    }

    /// A log write of `ctx` completed.
    pub fn write_done(&mut self, ctx: u64) {
        let e = self.inflight.get_mut(&ctx).expect("a log write in flight");
        *e -= 1;
        if *e == 0 {
            self.inflight.remove(&ctx);
        }
        self.stable = match self.inflight.keys().next() {
            Some(&first) => first - 1,
            None => self.ctx - 1,
        };
    }

    /// Whether `ctx` is on disk.
    pub fn stable(&self, ctx: u64) -> bool {
        ctx <= self.stable
    }

    /// `xfs_ichgtime` (2.6.3x): a new mtime marks the inode dirty outside any
    /// transaction (`i_update_core`). From 3.x the timestamp update is its own
    /// transaction (`xfs_vn_update_time`: `XFS_ILOG_TIMESTAMP`).
    pub fn timestamp(&mut self, ino: u32) -> Vec<LogWrite> {
        if self.cfg.profile >= Profile::V3_10 {
            return self.commit(&[Item::Inode {
                ino,
                fork: 0,
                ts_only: true,
            }]);
        }
        self.inodes.entry(ino).or_default().update_core = true;
        Vec::new()
    }

    /// `xfs_setfilesize` at write completion: `di_size` grows to `end`. 2.6.3x
    /// updates the in-core inode (`i_update_core`); from 3.4 it is a
    /// transaction logging the inode core (`xfs_setfilesize_trans`).
    pub fn setfilesize(&mut self, ino: u32, end: u64) -> Vec<LogWrite> {
        let s = self.inodes.entry(ino).or_default();
        if end <= s.disk_size {
            return Vec::new();
        }
        s.disk_size = end;
        if self.cfg.profile >= Profile::V3_10 {
            return self.commit(&[Item::Inode {
                ino,
                fork: 0,
                ts_only: false,
            }]);
        }
        s.update_core = true;
        Vec::new()
    }

    /// The first time the log meets `ino`: its size on disk is `size` (a
    /// file made before the run, or 0 for one just created).
    pub fn meet(&mut self, ino: u32, size: u64) {
        self.inodes.entry(ino).or_insert(InodeState {
            disk_size: size,
            ..Default::default()
        });
    }

    /// Whether the inode is pinned (`xfs_ipincount`: a change in a context
    /// not yet on disk).
    pub fn pinned(&self, ino: u32) -> bool {
        self.inodes.get(&ino).is_some_and(|s| s.ctx > self.stable)
    }

    /// The log force of `ino` to `ctx`: write the open context if `ctx` is
    /// it (`xlog_state_switch_iclogs` + `xlog_state_release_iclog`, or the CIL
    /// push), then wait.
    fn force(&mut self, ctx: u64, out: &mut Fsync) -> bool {
        let mut flushed = false;
        if ctx == self.ctx {
            let w = self.sync_ctx(true);
            flushed = w.iter().any(|w| w.flags.is_flush_or_fua());
            out.writes.extend(w);
        }
        if !self.stable(ctx) {
            out.wait = Some(ctx);
        }
        flushed
    }

    /// `xfs_fsync` (2.6.28-2.6.36, `xfs_vnodeops.c`), `xfs_file_fsync`
    /// (2.6.37, 3.10, 6.x), after the data's `filemap_write_and_wait`.
    pub fn fsync(&mut self, ino: u32, datasync: bool) -> Fsync {
        let mut out = Fsync::default();
        let s = self.inodes.get(&ino).copied().unwrap_or_default();
        let pinned = s.ctx > self.stable;
        let flushed = if self.cfg.era() == Era::Iclog {
            if s.update_core {
                // The FSYNC_TS transaction logs the inode core, synchronously
                // (xfs_trans_set_sync → _xfs_log_force_lsn of its lsn).
                let w = self.commit(&[Item::Inode {
                    ino,
                    fork: 0,
                    ts_only: false,
                }]);
                out.writes.extend(w);
                let ctx = self.ctx;
                self.force(ctx, &mut out)
            } else if pinned {
                self.force(s.ctx, &mut out)
            } else {
                // 2.6.3x: "the inode is not pinned and nothing has changed:
                // we don't need to flush the cache" (changed = 0); 2.6.37's
                // xfs_file_fsync lost that test and flushes.
                if self.cfg.profile < Profile::V2_6_37 {
                    return out;
                }
                false
            }
        } else {
            // xfs_fsync_seq / ili_last_lsn: fdatasync skips a timestamp-only
            // change.
            let wanted = pinned && !(datasync && s.ts_only);
            wanted && self.force(s.ctx, &mut out)
        };
        // "If the log write didn't issue an ordered tag we need to flush the
        // disk cache for the data device now." 6.x flushes whatever the mount.
        let barrier = self.cfg.barrier || self.cfg.profile >= Profile::V6;
        out.flush = barrier && !flushed;
        out
    }

    /// The log's invariants: the head inside the log, contexts in order.
    pub fn check_invariants(&self) {
        assert!(self.head < self.cfg.len_bb, "XFS log head past the log");
        assert!(
            self.stable < self.ctx,
            "a context on disk before it was written"
        );
        for (&c, &n) in &self.inflight {
            assert!(
                c > self.stable && c < self.ctx && n > 0,
                "XFS log context {c} in flight"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(p: Profile) -> XfsLog {
        XfsLog::new(LogConfig {
            profile: p,
            start_bb: 1000,
            len_bb: 1 << 17,
            iclog_size: 32768,
            iclogs: 8,
            barrier: true,
        })
        .unwrap()
    }

    fn ino(ino: u32, ts_only: bool) -> Item {
        Item::Inode {
            ino,
            fork: 0,
            ts_only,
        }
    }

    /// 6.x: a timestamp-only change is one checkpoint of 40 + 256 + 12 bytes
    /// behind a 512-byte record header: 2 sectors, PREFLUSH|FUA, at the head
    /// after mkfs's unmount record; fdatasync does not force it and flushes.
    #[test]
    fn v6_rewrite_fsync_and_fdatasync() {
        let mut l = log(Profile::V6);
        l.timestamp(7);
        let f = l.fsync(7, true);
        assert!(f.writes.is_empty() && f.flush && f.wait.is_none());
        let f = l.fsync(7, false);
        assert_eq!(f.writes.len(), 1);
        let w = f.writes[0];
        assert_eq!((w.sector, w.sectors), (1002, 2));
        assert!(w
            .flags
            .contains(ReqFlags::FLUSH | ReqFlags::FUA | ReqFlags::META));
        assert!(!f.flush && f.wait == Some(w.ctx));
        assert!(l.pinned(7));
        l.write_done(w.ctx);
        assert!(!l.pinned(7) && l.stable(w.ctx));
        // Nothing new: no log write, a cache flush.
        let f = l.fsync(7, false);
        assert!(f.writes.is_empty() && f.flush);
        l.check_invariants();
    }

    /// 2.6.32: the write's timestamp sets i_update_core, fsync's sync
    /// transaction logs the core (52 + 176 bytes) and forces it as a barrier
    /// write; no extra flush. A clean, unpinned inode flushes nothing.
    #[test]
    fn v2632_fsync_logs_the_core_with_a_barrier() {
        let mut l = log(Profile::V2_6_32);
        assert!(l.fsync(3, false) == Fsync::default());
        l.timestamp(3);
        let f = l.fsync(3, false);
        assert_eq!(f.writes.len(), 1);
        assert_eq!(f.writes[0].sectors, 2);
        assert!(f.writes[0].flags.contains(ReqFlags::FLUSH | ReqFlags::SYNC));
        assert!(!f.flush);
        // The second write lands right after the first.
        l.write_done(f.writes[0].ctx);
        l.timestamp(3);
        let g = l.fsync(3, false);
        assert_eq!(g.writes[0].sector, f.writes[0].sector + 2);
    }

    /// CIL: relogging an item keeps one copy; the iclog era copies each
    /// transaction.
    #[test]
    fn cil_relogs_iclog_copies() {
        let mut cil = log(Profile::V6);
        let mut icl = log(Profile::V2_6_33);
        for _ in 0..100 {
            cil.commit(&[ino(1, false)]);
            icl.commit(&[ino(1, false)]);
        }
        let a = cil.fsync(1, false).writes;
        let b = icl.fsync(1, false).writes;
        assert_eq!(a.iter().map(|w| w.sectors).sum::<u32>(), 2);
        // 100 × (52 + 176) bytes = 22800 in one 32 KiB iclog, behind its
        // header: 46 sectors.
        assert_eq!(b.iter().map(|w| w.sectors).sum::<u32>(), 46);
    }

    /// Full iclogs are written by the committer; a write past the log's end
    /// splits, the first part without the barrier (2.6.3x).
    #[test]
    fn full_iclogs_and_the_wrap() {
        let mut l = XfsLog::new(LogConfig {
            len_bb: 200,
            ..log(Profile::V2_6_33).cfg
        })
        .unwrap();
        let mut writes = Vec::new();
        for i in 0..800 {
            writes.extend(l.commit(&[ino(i, false)]));
        }
        assert!(writes.len() >= 2);
        assert!(writes.iter().all(|w| w.sector >= 1000 && w.sector < 1200));
        let split = writes
            .iter()
            .position(|w| w.sector + w.sectors as u64 == 1200);
        let s = split.expect("a write ends at the log's end");
        if writes[s].sectors < 64 {
            assert!(!writes[s].flags.contains(ReqFlags::FLUSH));
            assert_eq!(writes[s + 1].sector, 1000);
        }
        l.check_invariants();
    }
}
