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

    /// The end of `__sync_single_inode` for the caller that held `I_SYNC`:
    /// release it and place the inode anew: still dirty with the caller's quota
    /// used up, `requeue_io` (to `b_more_io`; returns true, the pass has more
    /// to do); still dirty otherwise, `redirty_tail` (to `b_dirty`); clean, off
    /// the lists.
    pub fn inode_written(&mut self, map: u32, quota_left: bool) -> bool {
        self.i_sync[map as usize] = None;
        self.syncing.retain(|&m| m != map);
        // The inode leaves whatever list it is on and is placed anew.
        self.b_more_io.retain(|&m| m != map);
        self.b_io.retain(|&m| m != map);
        self.b_dirty.retain(|&m| m != map);
        if self.maps[map as usize].nr_dirty() == 0 {
            self.maps[map as usize].dirtied_when = None;
            return false;
        }
        if quota_left {
            self.b_dirty.push_back(map);
            false
        } else {
            self.b_more_io.push_back(map);
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bdp::tests::vm;
    use crate::wbc::Wbc;

    #[test]
    fn a_pass_takes_an_inode_under_i_sync_and_requeues_it_by_quota() {
        let mut vm = vm(false);
        let map = vm.map_of(12, 100);
        let newly = vm.maps[map as usize].write_pages(0, 10, Instant::ZERO);
        vm.account_dirtied(map, newly, Instant::ZERO);
        let mut job = WbJob::new(Wbc::cyclic(4, false));
        let w = vm.next_inode(&mut job, TaskId(0), false, false);
        let w = w.expect("the dirty inode");
        assert_eq!((w.map, w.owns_isync), (map, true));
        assert_eq!(vm.i_sync[map as usize], Some(TaskId(0)));
        // Another caller meets the inode under I_SYNC: requeue_io, no write
        // (2.6.32 rules, write_locked_inodes off).
        let mut other = WbJob::new(Wbc::cyclic(4, false));
        vm.b_io.push_back(map);
        assert!(vm.next_inode(&mut other, TaskId(1), true, false).is_none());
        assert!(other.wbc.more_io);
        // Quota used up with pages still dirty: requeue_io.
        assert!(vm.inode_written(map, false));
        assert_eq!(vm.i_sync[map as usize], None);
        assert_eq!(vm.b_more_io.iter().copied().collect::<Vec<_>>(), vec![map]);
        // Quota left: redirty_tail.
        assert!(!vm.inode_written(map, true));
        assert_eq!(vm.b_dirty.iter().copied().collect::<Vec<_>>(), vec![map]);
        assert!(vm.b_more_io.is_empty());
    }

    #[test]
    fn fsync_writes_its_mapping_once_from_the_start() {
        let mut vm = vm(false);
        let map = vm.map_of(12, 100);
        vm.maps[map as usize].writeback_index = 50;
        let mut job = WbJob::new(Wbc::for_fsync(map));
        let w = vm.next_inode(&mut job, TaskId(0), false, false).unwrap();
        assert_eq!((w.map, w.index, w.owns_isync), (map, 0, false));
        assert!(vm.next_inode(&mut job, TaskId(0), false, false).is_none());
    }
}
