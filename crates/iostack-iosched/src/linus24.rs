//! `elevator_linus`'s tunables (`elvtune -r/-w`, `blkelvset_ioctl`). The
//! policy itself runs inside the 2.4 queue (`iostack_block::Elevator24`), as
//! 2.4's `elevator_linus_merge` walks `q->queue_head` inside `__make_request`.

use iostack_block::Elevator24;
use iostack_core::{TunableDef, Tunables, Unit};

pub static TUNABLES: &[TunableDef] = &[
    TunableDef {
        name: "iosched/elevator_linus/read_latency",
        unit: Unit::Count,
        default: |_| 8192,
        min: 0,
        max: 1 << 30,
        doc: "elvtune -r: how much a read request may be passed (each scan that passes it \
              ages it by one, each merge ahead of it by the merged sectors); \
              ELEVATOR_LINUS of 2.4.1-2.4.9: 8192.",
    },
    TunableDef {
        name: "iosched/elevator_linus/write_latency",
        unit: Unit::Count,
        default: |_| 16384,
        min: 0,
        max: 1 << 30,
        doc: "elvtune -w: the same for a write request; ELEVATOR_LINUS of 2.4.1-2.4.9: 16384.",
    },
];

/// `ELEVATOR_LINUS` with `elvtune`'s latencies.
pub fn linus(t: &Tunables) -> Elevator24 {
    Elevator24::Linus {
        read_latency: t.get_u64("iosched/elevator_linus/read_latency") as i64,
        write_latency: t.get_u64("iosched/elevator_linus/write_latency") as i64,
    }
}
