//! Which processes may start when one finishes, without a scan of every process
//! at every finish: the plain ones (stonewall, start delay) are checked in index
//! order as before; those that wait for a range of processes (`ProcSpec::after`,
//! fs_mark's file after file) wait on one member of the range and are looked at
//! only when it finishes. Also the processes still using each file, for `close`.

use std::collections::BTreeMap;

#[derive(Default)]
pub(crate) struct StartQueue {
    init: bool,
    /// Not started, without `after`, in index order.
    plain: Vec<u32>,
    /// Not started, with `after`: by the process of their range they wait for.
    waiting: BTreeMap<u32, Vec<u32>>,
    /// Processes not done, by the inode of their file.
    users: BTreeMap<u32, u32>,
}

impl StartQueue {
    pub fn initialized(&self) -> bool {
        self.init
    }

    /// First use: every process, with whether it has `after`, and its files' inodes.
    /// Returns the processes with `after`, to be checked now.
    pub fn init(&mut self, procs: impl Iterator<Item = (bool, Vec<u32>)>) -> Vec<u32> {
        self.init = true;
        let mut after = Vec::new();
        for (i, (has_after, inos)) in procs.enumerate() {
            if has_after {
                after.push(i as u32);
            } else {
                self.plain.push(i as u32);
            }
            for ino in inos {
                *self.users.entry(ino).or_default() += 1;
            }
        }
        after
    }

    /// The processes to look at now: the plain ones and those that waited for
    /// `finished`, in index order.
    pub fn candidates(&mut self, finished: Option<u32>, mut extra: Vec<u32>) -> Vec<u32> {
        if let Some(w) = finished.and_then(|f| self.waiting.remove(&f)) {
            extra.extend(w);
        }
        extra.extend(self.plain.iter().copied());
        extra.sort_unstable();
        extra
    }

    /// Process `i` waits for process `j` to finish.
    pub fn wait_for(&mut self, i: u32, j: u32) {
        self.waiting.entry(j).or_default().push(i);
    }

    /// Keep only the plain processes for which `still` holds (not started).
    pub fn retain_plain(&mut self, still: impl Fn(u32) -> bool) {
        self.plain.retain(|&i| still(i));
    }

    /// A process of file `ino` is done (`newly`: it was not done before):
    /// whether others still use the file.
    pub fn release(&mut self, ino: u32, newly: bool) -> bool {
        let n = self.users.entry(ino).or_insert(1);
        if newly {
            *n = n.saturating_sub(1);
        }
        *n > 0
    }
}
