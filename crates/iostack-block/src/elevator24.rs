//! 2.4's elevators (`drivers/block/elevator.c` of 2.4.4-2.4.9): `elevator_linus`
//! and `elevator_noop`. In 2.4 the elevator is not a scheduler with its own
//! queues: it only chooses, while `__make_request` scans `q->queue_head` from the
//! tail, the request a buffer head merges into or the one a new request is
//! inserted after. `elevator_linus` keeps a per-request latency counter
//! (`elevator_sequence`, in sectors): every scan that passes a request ages it by
//! one, every merge ahead of it by the merged sectors
//! (`elevator_linus_merge_cleanup`), and a request whose counter is used up may
//! not be passed any more. `elvtune` sets `read_latency`/`write_latency`.

use iostack_core::Sector;

/// One request of the 2.4 queue as the elevator sees it.
#[derive(Clone, Debug)]
pub(crate) struct Rq24 {
    pub sector: Sector,
    pub nr_sectors: u32,
    pub write: bool,
    /// `rq->elevator_sequence`.
    pub seq: i64,
    pub nr_segments: u32,
}

/// The buffer head being queued (`bh->b_rsector`, `b_size >> 9`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BhPos {
    pub sector: Sector,
    pub count: u32,
    pub write: bool,
}

/// `ELEVATOR_NO_MERGE` / `ELEVATOR_BACK_MERGE` / `ELEVATOR_FRONT_MERGE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Merge24 {
    No,
    Back,
    Front,
}

/// A 2.4 queue's elevator (`elevator_t`, fixed per queue by `blk_init_queue`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elevator24 {
    /// `ELEVATOR_LINUS`: read and write latencies (8192 and 16384 sectors in
    /// 2.4.1-2.4.9's `include/linux/elevator.h`).
    Linus {
        read_latency: i64,
        write_latency: i64,
    },
    /// `ELEVATOR_NOOP`: merges only, new requests at the tail.
    Noop,
}

impl Elevator24 {
    pub fn name(&self) -> &'static str {
        match self {
            Elevator24::Linus { .. } => "elevator_linus",
            Elevator24::Noop => "elevator_noop",
        }
    }

    /// `elevator_request_latency`.
    pub(crate) fn latency(&self, write: bool) -> i64 {
        match *self {
            Elevator24::Linus {
                read_latency,
                write_latency,
            } => {
                if write {
                    write_latency
                } else {
                    read_latency
                }
            }
            Elevator24::Noop => 0,
        }
    }

    /// `elevator_merge_fn` over the list `list` (request ids, head first) of
    /// which `list[first..]` may be looked at (the active head is skipped).
    /// Returns the verdict and the list position of the request to merge into
    /// or to insert after.
    pub(crate) fn merge(
        &self,
        rqs: &mut [Option<Rq24>],
        list: &[u32],
        first: usize,
        bh: BhPos,
        max_sectors: u32,
    ) -> (Merge24, Option<usize>) {
        match self {
            Elevator24::Linus { .. } => linus_merge(rqs, list, first, bh, max_sectors),
            Elevator24::Noop => noop_merge(rqs, list, first, bh, max_sectors),
        }
    }

    /// `elevator_merge_cleanup_fn`: after a merge into `list[at]`, every request
    /// behind it (passed over by the merged sectors) ages by `count`.
    pub(crate) fn merge_cleanup(
        &self,
        rqs: &mut [Option<Rq24>],
        list: &[u32],
        at: usize,
        count: u32,
    ) {
        if let Elevator24::Linus { .. } = self {
            for &id in &list[at + 1..] {
                rq(rqs, id).seq -= count as i64;
            }
        }
    }

    /// `elevator_merge_req_fn`: a merged request keeps the smaller counter.
    pub(crate) fn merge_req(&self, req: &mut Rq24, next_seq: i64) {
        if let Elevator24::Linus { .. } = self {
            req.seq = req.seq.min(next_seq);
        }
    }
}

fn rq(rqs: &mut [Option<Rq24>], id: u32) -> &mut Rq24 {
    rqs[id as usize]
        .as_mut()
        .expect("request on the queue list")
}

/// `elevator_linus_merge` (2.4.4): scan from the tail; a request whose counter
/// is used up ends the scan and the new request goes behind it; a request
/// whose counter is smaller than the buffer ends it too (no merge may pass
/// it); otherwise back and front merges, and the first request from the tail
/// that starts beyond the buffer (`BHRQ_IN_ORDER`) is where a new request goes.
fn linus_merge(
    rqs: &mut [Option<Rq24>],
    list: &[u32],
    first: usize,
    bh: BhPos,
    max_sectors: u32,
) -> (Merge24, Option<usize>) {
    let mut req = None;
    for pos in (first..list.len()).rev() {
        let r = rq(rqs, list[pos]);
        let seq = r.seq;
        r.seq -= 1;
        if seq <= 0 {
            return (Merge24::No, Some(pos));
        }
        if r.write != bh.write || r.nr_sectors + bh.count > max_sectors {
            continue;
        }
        if r.seq < bh.count as i64 {
            break;
        }
        if r.sector + r.nr_sectors as u64 == bh.sector {
            return (Merge24::Back, Some(pos));
        }
        if r.sector.checked_sub(bh.count as u64) == Some(bh.sector) {
            r.seq -= bh.count as i64;
            return (Merge24::Front, Some(pos));
        }
        if req.is_none() && bh.sector < r.sector {
            req = Some(pos);
        }
    }
    (Merge24::No, req)
}

/// `elevator_noop_merge`: the first mergeable request from the tail; a new
/// request goes at the tail.
fn noop_merge(
    rqs: &mut [Option<Rq24>],
    list: &[u32],
    first: usize,
    bh: BhPos,
    max_sectors: u32,
) -> (Merge24, Option<usize>) {
    for pos in (first..list.len()).rev() {
        let r = rq(rqs, list[pos]);
        if r.write != bh.write || r.nr_sectors + bh.count > max_sectors {
            continue;
        }
        if r.sector + r.nr_sectors as u64 == bh.sector {
            return (Merge24::Back, Some(pos));
        }
        if r.sector.checked_sub(bh.count as u64) == Some(bh.sector) {
            return (Merge24::Front, Some(pos));
        }
    }
    (Merge24::No, list.len().checked_sub(1))
}
