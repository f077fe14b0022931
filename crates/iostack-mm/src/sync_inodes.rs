//! The inode side of a writeback pass (`fs/fs-writeback.c`): which inode a
//! caller writes next (`queue_io`, `I_SYNC` inodes met by another caller, the
//! `dirtied_when` cut-off of kupdate passes) and where its `write_cache_pages`
//! starts (`mapping->writeback_index`, `range_cyclic`). Sans-IO over the page
//! cache and the caller's job.

use crate::pagecache::Vm;
use crate::wbc::{WbJob, Wcp};
use crate::writeback::PAGEVEC_SIZE;
use iostack_core::TaskId;
use iostack_des::Instant;

impl Vm {
    /// `generic_sync_sb_inodes` / `writeback_inodes_wb`: choose the next inode
    /// of `job`'s pass for `task` and start `write_cache_pages` on it, or end the
    /// pass (`None`). `congested`: the queue's write congestion, which ends a
    /// non-blocking pass.
    pub fn next_inode(
        &mut self,
        job: &mut WbJob,
        task: TaskId,
        is_flusher: bool,
        congested: bool,
    ) -> Option<Wcp> {
        loop {
            let wbc = job.wbc;
            if wbc.nr_to_write <= 0 {
                return None;
            }
            if let Some(map) = wbc.only_map {
                // fsync: one pass over this mapping only.
                if job.queued {
                    return None;
                }
                job.queued = true;
                return Some(self.wcp_begin(job.wbc.range_cyclic, task, map, false, is_flusher));
            }
            if !job.queued {
                job.queued = true;
                self.queue_io(wbc.older_than);
            }
            if wbc.nonblocking && congested {
                job.wbc.encountered_congestion = true;
                return None;
            }
            if !job.saw_locked {
                job.saw_locked = true;
                let held = self
                    .syncing
                    .iter()
                    .copied()
                    .find(|&m| self.i_sync[m as usize].is_some_and(|h| h != task));
                if let Some(map) = held {
                    // __writeback_single_inode on an I_SYNC inode: requeue_io,
                    // and in 2.6.28 still "start some of the data writeout".
                    if !self.b_more_io.contains(&map) {
                        self.b_more_io.push_back(map);
                    }
                    job.wbc.more_io = true;
                    if self.cfg.write_locked_inodes && self.maps[map as usize].nr_dirty() > 0 {
                        return Some(self.wcp_begin(
                            job.wbc.range_cyclic,
                            task,
                            map,
                            false,
                            is_flusher,
                        ));
                    }
                }
            }
            let map = self.b_io.pop_back().or_else(|| self.b_io.pop_front())?;
            if let Some(t) = wbc.older_than {
                let when = self.maps[map as usize]
                    .dirtied_when
                    .unwrap_or(Instant::ZERO);
                if when > t {
                    self.b_dirty.push_front(map);
                    return None;
                }
            }
            if self.maps[map as usize].nr_dirty() == 0 {
                self.maps[map as usize].dirtied_when = None;
                continue;
            }
            match self.i_sync[map as usize] {
                Some(holder) if holder != task => {
                    // __writeback_single_inode on an I_SYNC inode: requeue_io, and
                    // in 2.6.28 still "start some of the data writeout".
                    self.b_more_io.push_back(map);
                    job.wbc.more_io = true;
                    if self.cfg.write_locked_inodes {
                        return Some(self.wcp_begin(
                            job.wbc.range_cyclic,
                            task,
                            map,
                            false,
                            is_flusher,
                        ));
                    }
                    continue;
                }
                _ => {
                    return Some(self.wcp_begin(job.wbc.range_cyclic, task, map, true, is_flusher))
                }
            }
        }
    }

    pub fn wcp_begin(
        &mut self,
        cyclic: bool,
        task: TaskId,
        map: u32,
        take_isync: bool,
        is_flusher: bool,
    ) -> Wcp {
        if take_isync && self.i_sync[map as usize].is_none() {
            self.i_sync[map as usize] = Some(task);
            self.syncing.push(map);
        }
        let m = &self.maps[map as usize];
        let start = if !cyclic || (self.cfg.flusher_only_index && !is_flusher) {
            0
        } else {
            m.writeback_index
        };
        Wcp {
            map,
            index: start,
            end: u64::MAX,
            start,
            scanned: !cyclic || start == 0,
            cycled: !cyclic || start == 0,
            done: false,
            done_index: start,
            owns_isync: take_isync,
            bio: None,
            ext: None,
            io_done: false,
            extent_tail: false,
            mpd_written: 0,
            da_start: start,
            da_written: 0,
            pvec: Vec::with_capacity(PAGEVEC_SIZE as usize),
            pvec_pos: 0,
            cluster: None,
            lock_wait: None,
            skipped: 0,
        }
    }
}
