//! What the blk-mq schedulers' hooks cost on the CPU, calibrated here and
//! nowhere else. Only the per-request sums under the queue-wide lock come
//! from measurements; how a sum divides between the hooks is an assumption
//! (it matters only for where the time is spent, not how much).
//!
//! * mq-deadline: 1140 ns per request under `dd->lock` (bio merge, insert,
//!   dispatch; `dd_finish_request` takes no lock). Source: Jens Axboe,
//!   "[PATCHSET RFC 0/4] mq-deadline scalability improvements", linux-block,
//!   18 Jan 2024: 32 threads of 4 KiB-class random reads on a 7950X reach
//!   879 K IOPS on null_blk with 93.6 % of the time contending on
//!   `dd->lock`, so the lock is the bottleneck and serialises
//!   1 s / 879 K = 1.14 us per request. (The 6.9 fixes from that series are
//!   not modelled: this is mq-deadline before them.)
//! * BFQ: 1900 ns per request under `bfqd->lock` for the insertion, dispatch
//!   and completion hooks together. Source: Documentation/block/bfq-iosched.rst
//!   ("the total, single-lock-protected, per-request processing time of
//!   BFQ ... is 1.9 us on an Intel Core i7-2760QM@2.40GHz").
//! * Kyber: no queue-wide lock (per-CPU `kcq->lock`, per-hardware-queue
//!   `khd->lock`, token sbitmaps). 300 ns per request is an assumption, not
//!   a measurement: the kcq insert, the flush and token get in dispatch, two
//!   histogram increments and the token clear at completion.

use iostack_block::SchedCost;

pub const MQ_DEADLINE: SchedCost = SchedCost {
    bio_merge_ns: 300,
    insert_ns: 420,
    dispatch_ns: 420,
    completion_ns: 0,
    queue_lock: true,
};

pub const BFQ: SchedCost = SchedCost {
    bio_merge_ns: 0,
    insert_ns: 700,
    dispatch_ns: 700,
    completion_ns: 500,
    queue_lock: true,
};

pub const KYBER: SchedCost = SchedCost {
    bio_merge_ns: 50,
    insert_ns: 80,
    dispatch_ns: 120,
    completion_ns: 50,
    queue_lock: false,
};
