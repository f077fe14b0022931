//! I/O scheduling policies, one file each, behind `iostack_block::Elevator`.
//! Each exports its tunable table and a constructor; `by_name` is the registry
//! (`elv_register`). This crate depends on `iostack-block`, never the reverse.

pub mod anticipatory;
pub mod cfq;
pub mod deadline;
pub mod elv_rb;
pub mod noop;

use iostack_block::Elevator;
use iostack_core::{TunableDef, Tunables};

/// Registered schedulers: (name, description).
pub const SCHEDULERS: &[(&str, &str)] = &[
    (
        "noop",
        "FIFO insertion order; merging only (block/noop-iosched.c)",
    ),
    (
        "deadline",
        "per-direction sector-sorted batches with FIFO expiry (block/deadline-iosched.c)",
    ),
    (
        "anticipatory",
        "deadline-like batches plus anticipation of the last sync reader, 2.6.32 (block/as-iosched.c)",
    ),
    (
        "cfq",
        "per-process time slices with idling, 2.6.32 / 2.6.33-36 / 2.6.37 (block/cfq-iosched.c)",
    ),
];

/// Every scheduler's tunable table.
pub fn tunable_tables() -> Vec<&'static [TunableDef]> {
    vec![deadline::TUNABLES, anticipatory::TUNABLES, cfq::TUNABLES]
}

/// `elevator_get` by name, configured from the tunables.
pub fn by_name(name: &str, t: &Tunables) -> Result<Box<dyn Elevator>, String> {
    match name {
        "noop" => Ok(Box::new(noop::Noop::new())),
        "deadline" => Ok(Box::new(deadline::Deadline::new(
            deadline::DeadlineConfig::from_tunables(t),
        ))),
        "anticipatory" => Ok(Box::new(anticipatory::Anticipatory::new(
            anticipatory::AsConfig::from_tunables(t),
        ))),
        "cfq" => Ok(Box::new(cfq::Cfq::new(cfq::CfqConfig::from_tunables(t)))),
        _ => {
            let names: Vec<&str> = SCHEDULERS.iter().map(|(n, _)| *n).collect();
            Err(format!(
                "unknown I/O scheduler '{name}' (available: {})",
                names.join(" ")
            ))
        }
    }
}
