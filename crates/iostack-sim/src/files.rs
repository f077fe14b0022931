//! fio's choice of the file of the next I/O in a job with several files
//! (`nrfiles`, or a `filename=` list): `__get_next_file` in fio's io_u.c with
//! `get_next_file_rr` and `get_next_file_rand`, and `set_io_u_file`'s
//! marking of a file that has no I/O left as done (`fio_file_set_done`).
//!
//! The file's own state (`struct fio_file`: position, random map, page
//! cache) is the process's while the file is current; the others' are
//! parked in [`JobFile::state`] (`S`, the process's type for it).

use crate::workload::{FileService, FileServiceKind};
use iostack_des::Rng;

/// One file of a job.
pub(crate) struct JobFile<S> {
    pub(crate) path: String,
    /// The parked state (stale while the file is the current one).
    pub(crate) state: S,
    /// Bytes issued to it (fio's per-file progress against `f->io_size`).
    pub(crate) bytes: u64,
    /// `fio_file_done`: nothing left to do in it.
    pub(crate) done: bool,
}

impl<S> JobFile<S> {
    pub(crate) fn new(path: String, state: S) -> Self {
        JobFile {
            path,
            state,
            bytes: 0,
            done: false,
        }
    }
}

/// A job's files and fio's file-service state.
pub(crate) struct Files<S> {
    pub(crate) list: Vec<JobFile<S>>,
    /// The current file (`td->file_service_file`).
    pub(crate) cur: usize,
    service: FileService,
    /// `td->file_service_left`.
    left: u32,
    /// `td->next_file`: where round robin looks next.
    next: usize,
    /// A file has been served yet (fio starts with `file_service_file` NULL).
    started: bool,
    /// The file of the I/O being chosen is picked (its open or a rate wait
    /// may delay the I/O; it is not chosen again).
    pub(crate) chosen: bool,
    /// `td->next_file_state`.
    rng: Rng,
}

impl<S> Files<S> {
    pub(crate) fn new(list: Vec<JobFile<S>>, service: FileService, rng: Rng) -> Self {
        Files {
            list,
            cur: 0,
            service,
            left: 0,
            next: 0,
            started: false,
            chosen: false,
            rng,
        }
    }

    /// `__get_next_file`: the file of the next I/O, or None when every file
    /// is done. `finished(bytes)` says whether a file with `bytes` issued
    /// has no I/O left (`fill_io_u` failing on it).
    pub(crate) fn choose(&mut self, finished: impl Fn(u64) -> bool) -> Option<usize> {
        if self.started && !self.list[self.cur].done && finished(self.list[self.cur].bytes) {
            // set_io_u_file: the file is closed and marked done.
            self.list[self.cur].done = true;
        }
        if self.list.iter().all(|f| f.done) {
            return None;
        }
        if self.started && !self.list[self.cur].done {
            if self.service.kind == FileServiceKind::Sequential {
                return Some(self.cur);
            }
            if self.left > 0 {
                self.left -= 1;
                return Some(self.cur);
            }
        }
        let f = match self.service.kind {
            FileServiceKind::RoundRobin | FileServiceKind::Sequential => self.next_rr(),
            FileServiceKind::Random => self.next_rand(),
        };
        self.started = true;
        self.left = self.service.nr.wrapping_sub(1);
        Some(f)
    }

    /// `get_next_file_rr`: from `next_file` on, the first file not done.
    fn next_rr(&mut self) -> usize {
        let n = self.list.len();
        loop {
            let f = self.next;
            self.next = (self.next + 1) % n;
            if !self.list[f].done {
                return f;
            }
        }
    }

    /// `get_next_file_rand`: a file drawn uniformly
    /// (`nr_files * (r / (rand_max + 1.0))`), again while it is done.
    fn next_rand(&mut self) -> usize {
        let n = self.list.len() as u64;
        loop {
            let f = self.rng.below(n) as usize;
            if !self.list[f].done {
                return f;
            }
        }
    }

    /// An I/O of `len` bytes was issued to the current file.
    pub(crate) fn issued(&mut self, len: u64) {
        self.list[self.cur].bytes += len;
        self.chosen = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iostack_des::Seed;

    fn files(n: usize, kind: FileServiceKind, nr: u32) -> Files<()> {
        let list = (0..n).map(|k| JobFile::new(format!("f{k}"), ())).collect();
        let rng = Rng::stream(Seed(1), "t");
        Files::new(list, FileService { kind, nr }, rng)
    }

    /// The files of `ios` I/Os of 1 byte each, a file done after `per` bytes.
    fn order(f: &mut Files<()>, ios: usize, per: u64) -> Vec<usize> {
        let mut v = Vec::new();
        for _ in 0..ios {
            let Some(k) = f.choose(|b| b >= per) else {
                break;
            };
            f.cur = k;
            f.issued(1);
            v.push(k);
        }
        v
    }

    #[test]
    fn round_robin_switches_after_each_service_count() {
        let mut f = files(3, FileServiceKind::RoundRobin, 1);
        assert_eq!(order(&mut f, 7, 2), vec![0, 1, 2, 0, 1, 2]);
        let mut f = files(3, FileServiceKind::RoundRobin, 2);
        assert_eq!(order(&mut f, 8, 4), vec![0, 0, 1, 1, 2, 2, 0, 0]);
    }

    #[test]
    fn sequential_stays_on_a_file_until_it_is_done() {
        let mut f = files(3, FileServiceKind::Sequential, 1);
        assert_eq!(order(&mut f, 10, 3), vec![0, 0, 0, 1, 1, 1, 2, 2, 2]);
    }

    #[test]
    fn random_skips_done_files_and_ends_when_all_are() {
        let mut f = files(4, FileServiceKind::Random, 1);
        let v = order(&mut f, 100, 5);
        assert_eq!(v.len(), 20);
        for k in 0..4 {
            assert_eq!(v.iter().filter(|&&x| x == k).count(), 5);
        }
        // Not round robin.
        assert_ne!(&v[..4], &[0, 1, 2, 3]);
    }
}
