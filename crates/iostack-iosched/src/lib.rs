//! I/O scheduling policies, one file each, behind `iostack_block::Elevator`.
//! Each is registered here by a [`SchedulerDesc`] (`struct elevator_type`): its
//! name, the kernel profiles that have it, its tunable table and a constructor.
//! [`by_name`] is `elevator_get`; it refuses a scheduler the profile's kernel
//! lacks and tunables of a scheduler that is not the one selected. `--help`,
//! `iostack tunables` and docs/tunables.md are generated from [`SCHEDULERS`].
//! This crate depends on `iostack-block`, never the reverse.

pub mod anticipatory;
pub mod bfq;
pub mod cfq;
pub mod cost;
pub mod deadline;
pub mod elv_rb;
pub mod kyber;
pub mod linus24;
pub mod mq_deadline;
pub mod noop;

use iostack_block::{Elevator, Elevator24, MqElevator};
use iostack_core::{Profile, TunableDef, Tunables};

/// One registered scheduler (`struct elevator_type` + `elv_register`).
pub struct SchedulerDesc {
    /// `elevator_name`, as `queue/scheduler` shows it.
    pub name: &'static str,
    pub doc: &'static str,
    /// The kernels that ship it, in words (for messages and help).
    pub kernels: &'static str,
    /// Whether a profile's kernel has it.
    pub in_profile: fn(Profile) -> bool,
    /// `elevator_attrs`: its tunables (`iosched/NAME/...`).
    pub tunables: &'static [TunableDef],
    /// `elevator_init_fn` / `init_sched`, configured from the tunables.
    pub build: Build,
}

/// How a registered scheduler is built.
#[derive(Clone, Copy)]
pub enum Build {
    /// A legacy single-queue elevator (`struct elevator_ops`).
    Legacy(fn(&Tunables) -> Box<dyn Elevator>),
    /// A blk-mq scheduler (`struct elevator_mq_ops`); `None` is `none`.
    Mq(fn(&Tunables) -> Option<Box<dyn MqElevator>>),
    /// 2.4's `elevator_t` (`elevator_init(&q->elevator, ELEVATOR_LINUS)`),
    /// which the 2.4 block layer (`iostack_block::Ll24Queue`) runs itself.
    Ll24(fn(&Tunables) -> Elevator24),
    /// In the kernel, not modelled here: refused with this reason.
    NotModelled(&'static str),
}

impl std::fmt::Debug for SchedulerDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerDesc")
            .field("name", &self.name)
            .finish()
    }
}

/// The legacy single-queue schedulers modelled here exist from 2.6.0 until the
/// legacy block layer was removed in 5.0; 2.4 had `elevator_linus` and its own
/// `elevator_noop`, 6.x only blk-mq schedulers (none, mq-deadline, bfq, kyber).
fn legacy_2_6_to_4_x(p: Profile) -> bool {
    p > Profile::V2_4 && p < Profile::V6
}

/// The blk-mq schedulers: 5.0+ (the 6.x profile).
fn blk_mq(p: Profile) -> bool {
    p >= Profile::V6
}

/// Registered schedulers, in `elv_register` order of the kernels.
pub const SCHEDULERS: &[SchedulerDesc] = &[
    SchedulerDesc {
        name: "noop",
        doc: "FIFO insertion order; merging only (block/noop-iosched.c)",
        kernels: "2.6.0 to 4.20 (the legacy block layer)",
        in_profile: legacy_2_6_to_4_x,
        tunables: &[],
        build: Build::Legacy(|_| Box::new(noop::Noop::new())),
    },
    SchedulerDesc {
        name: "deadline",
        doc: "per-direction sector-sorted batches with FIFO expiry (block/deadline-iosched.c)",
        kernels: "2.6.0 to 4.20 (the legacy block layer; 5.0+ has blk-mq's mq-deadline)",
        in_profile: legacy_2_6_to_4_x,
        tunables: deadline::TUNABLES,
        build: Build::Legacy(|t| {
            Box::new(deadline::Deadline::new(
                deadline::DeadlineConfig::from_tunables(t),
            ))
        }),
    },
    SchedulerDesc {
        name: "anticipatory",
        doc: "deadline-like batches plus anticipation of the last sync reader, 2.6.32 \
              (block/as-iosched.c)",
        kernels: "2.6.0 to 2.6.32 (removed in 2.6.33)",
        in_profile: |p| p > Profile::V2_4 && p <= Profile::V2_6_32,
        tunables: anticipatory::TUNABLES,
        build: Build::Legacy(|t| {
            Box::new(anticipatory::Anticipatory::new(
                anticipatory::AsConfig::from_tunables(t),
            ))
        }),
    },
    SchedulerDesc {
        name: "cfq",
        doc: "per-process time slices with idling, 2.6.32 / 2.6.33-36 / 2.6.37 \
              (block/cfq-iosched.c)",
        kernels: "2.6.6 to 4.20 (the default from 2.6.18)",
        in_profile: legacy_2_6_to_4_x,
        tunables: cfq::TUNABLES,
        build: Build::Legacy(|t| Box::new(cfq::Cfq::new(cfq::CfqConfig::from_tunables(t)))),
    },
    SchedulerDesc {
        name: "elevator_linus",
        doc: "2.4's elevator: merge scan from the tail with per-request latency counters \
              (drivers/block/elevator.c, 2.4.4)",
        kernels: "2.4.0 to 2.4.x (the only elevator of blk_init_queue)",
        in_profile: |p| p == Profile::V2_4,
        tunables: linus24::TUNABLES,
        build: Build::Ll24(linus24::linus),
    },
    SchedulerDesc {
        name: "elevator_noop",
        doc: "2.4's ELEVATOR_NOOP: merges only, new requests at the tail \
              (drivers/block/elevator.c, 2.4.4)",
        kernels: "2.4.0 to 2.4.x",
        in_profile: |p| p == Profile::V2_4,
        tunables: &[],
        build: Build::Ll24(|_| Elevator24::Noop),
    },
    SchedulerDesc {
        name: "none",
        doc: "blk-mq without a scheduler: requests go from the plug or the software \
              queues to the hardware queue, issued directly when possible (block/blk-mq.c)",
        kernels: "5.0+ (blk-mq; 3.13 for blk-mq drivers)",
        in_profile: blk_mq,
        tunables: &[],
        build: Build::Mq(|_| None),
    },
    SchedulerDesc {
        name: "mq-deadline",
        doc: "deadline for blk-mq: per priority level and direction a sector-sorted tree \
              and a FIFO with expiry, batches, writes_starved, priority aging \
              (block/mq-deadline.c, 6.x)",
        kernels: "4.11+",
        in_profile: blk_mq,
        tunables: mq_deadline::TUNABLES,
        build: Build::Mq(|t| {
            Some(Box::new(mq_deadline::MqDeadline::new(
                mq_deadline::DdConfig::from_tunables(t),
            )))
        }),
    },
    SchedulerDesc {
        name: "bfq",
        doc: "budget fair queueing: per-process queues with budgets in sectors, B-WF2Q+ \
              virtual time with ioprio weights, idling for sync queues, budget timeout, \
              preemption, low_latency weight raising (interactive, soft real-time, large \
              bursts), I/O injection while idling (block/bfq-iosched.c, bfq-wf2q.c, 6.x); \
              model lacks queue merging, waker queues, cgroups, peak-rate autotuning of \
              max_budget",
        kernels: "4.12+",
        in_profile: blk_mq,
        tunables: bfq::TUNABLES,
        build: Build::Mq(|t| Some(Box::new(bfq::Bfq::new(bfq::BfqConfig::from_tunables(t))))),
    },
    SchedulerDesc {
        name: "kyber",
        doc: "token domains (read, write, discard, other) with depths adapted to the read \
              and write latency targets, per-CPU queues, round-robin batches \
              (block/kyber-iosched.c, 6.x)",
        kernels: "4.12+",
        in_profile: blk_mq,
        tunables: kyber::TUNABLES,
        build: Build::Mq(|t| {
            Some(Box::new(kyber::Kyber::new(
                kyber::KyberConfig::from_tunables(t),
            )))
        }),
    },
];

/// The descriptor named `name`, if registered.
pub fn find(name: &str) -> Option<&'static SchedulerDesc> {
    SCHEDULERS.iter().find(|s| s.name == name)
}

/// The modelled schedulers a profile's kernel has.
pub fn available(p: Profile) -> impl Iterator<Item = &'static SchedulerDesc> {
    SCHEDULERS
        .iter()
        .filter(move |s| (s.in_profile)(p) && !matches!(s.build, Build::NotModelled(_)))
}

/// Every scheduler's tunable table.
pub fn tunable_tables() -> Vec<&'static [TunableDef]> {
    SCHEDULERS
        .iter()
        .map(|s| s.tunables)
        .filter(|t| !t.is_empty())
        .collect()
}

/// Why profile `p` has no modelled scheduler named `name`, or none at all.
fn not_in_profile(d: &SchedulerDesc, p: Profile) -> String {
    let have: Vec<&str> = available(p).map(|s| s.name).collect();
    let what = if have.is_empty() {
        "no scheduler is modelled for it".to_string()
    } else {
        format!("it has {}", have.join(", "))
    };
    format!(
        "I/O scheduler '{}' is not in kernel {p}: it exists in {}; {what}",
        d.name, d.kernels
    )
}

/// The registry's checks: `name` exists, the profile's kernel has it, and no
/// tunable of another scheduler was set.
pub fn check(name: &str, t: &Tunables) -> Result<&'static SchedulerDesc, String> {
    let Some(d) = find(name) else {
        let names: Vec<&str> = SCHEDULERS.iter().map(|s| s.name).collect();
        return Err(format!(
            "unknown I/O scheduler '{name}' (available: {})",
            names.join(" ")
        ));
    };
    if !(d.in_profile)(t.profile()) {
        return Err(not_in_profile(d, t.profile()));
    }
    if let Build::NotModelled(why) = d.build {
        return Err(format!("I/O scheduler '{name}': {why}"));
    }
    for set in t.overridden() {
        if let Some(rest) = set.strip_prefix("iosched/") {
            let owner = rest.split('/').next().unwrap_or("");
            if owner != name {
                return Err(format!(
                    "tunable '{set}' belongs to the {owner} scheduler, but the scheduler is \
                     {name}; select it with --sched {owner} (or `scheduler = \"{owner}\"`) \
                     or drop the setting"
                ));
            }
        }
    }
    Ok(d)
}

/// `elevator_get` by name for the single-queue block layer, configured from
/// the tunables, after [`check`].
pub fn by_name(name: &str, t: &Tunables) -> Result<Box<dyn Elevator>, String> {
    let d = check(name, t)?;
    match d.build {
        Build::Legacy(f) => Ok(f(t)),
        Build::Ll24(_) => Err(format!("'{name}' is a 2.4 elevator, run by the 2.4 queue")),
        _ => Err(format!(
            "I/O scheduler '{name}' is a blk-mq scheduler; kernel {} has the single queue",
            t.profile()
        )),
    }
}

/// A 2.4 queue's `elevator_t` by name, after [`check`].
pub fn by_name_24(name: &str, t: &Tunables) -> Result<Elevator24, String> {
    let d = check(name, t)?;
    match d.build {
        Build::Ll24(f) => Ok(f(t)),
        _ => Err(format!("'{name}' is not a 2.4 elevator")),
    }
}

/// `elevator_get` by name for blk-mq (`None` is `none`), after [`check`].
pub fn mq_by_name(name: &str, t: &Tunables) -> Result<Option<Box<dyn MqElevator>>, String> {
    let d = check(name, t)?;
    match d.build {
        Build::Mq(f) => Ok(f(t)),
        _ => Err(format!(
            "I/O scheduler '{name}' is a single-queue elevator; kernel {} has blk-mq",
            t.profile()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(p: Profile, sets: &[&str]) -> Tunables {
        let mut tables = vec![iostack_block::TUNABLES];
        tables.extend(tunable_tables());
        let mut t = Tunables::new(p, &tables);
        for s in sets {
            t.set_str(s).unwrap();
        }
        t
    }

    #[test]
    fn history_of_the_schedulers() {
        let names = |p| available(p).map(|s| s.name).collect::<Vec<_>>();
        assert_eq!(
            names(Profile::V2_6_32),
            ["noop", "deadline", "anticipatory", "cfq"]
        );
        assert_eq!(names(Profile::V2_6_33), ["noop", "deadline", "cfq"]);
        assert_eq!(names(Profile::V3_10), ["noop", "deadline", "cfq"]);
        assert_eq!(names(Profile::V2_4), ["elevator_linus", "elevator_noop"]);
        assert_eq!(names(Profile::V6), ["none", "mq-deadline", "bfq", "kyber"]);
    }

    #[test]
    fn refusals_say_why() {
        let e = by_name("anticipatory", &t(Profile::V3_10, &[]))
            .err()
            .unwrap();
        assert!(e.contains("removed in 2.6.33"), "{e}");
        let e = by_name("cfq", &t(Profile::V2_4, &[])).err().unwrap();
        assert!(e.contains("it has elevator_linus, elevator_noop"), "{e}");
        let e = by_name("elevator_linus", &t(Profile::V2_6_32, &[]))
            .err()
            .unwrap();
        assert!(e.contains("is not in kernel 2.6.32"), "{e}");
        let lat = &["iosched/elevator_linus/write_latency=4"];
        assert_eq!(
            by_name_24("elevator_linus", &t(Profile::V2_4, lat)).unwrap(),
            Elevator24::Linus {
                read_latency: 8192,
                write_latency: 4
            }
        );
        let e = by_name("deadline", &t(Profile::V6, &[])).err().unwrap();
        assert!(e.contains("blk-mq"), "{e}");
        let e = by_name(
            "deadline",
            &t(Profile::V2_6_33, &["iosched/cfq/slice_idle=0"]),
        )
        .err()
        .unwrap();
        assert!(e.contains("belongs to the cfq scheduler"), "{e}");
        assert!(by_name("cfq", &t(Profile::V2_6_33, &["iosched/cfq/slice_idle=0"])).is_ok());
        assert!(by_name("bfq", &t(Profile::V2_6_33, &[])).is_err());
        assert!(mq_by_name("bfq", &t(Profile::V6, &[])).unwrap().is_some());
        // low_latency is a boolean, on by default.
        let mut tt = t(Profile::V6, &[]);
        assert_eq!(tt.get_u64("iosched/bfq/low_latency"), 1);
        let e = tt.set_str("iosched/bfq/low_latency=2").unwrap_err();
        assert!(e.to_string().contains("expected 0 or 1"), "{e}");
        assert!(mq_by_name("kyber", &t(Profile::V6, &[])).unwrap().is_some());
        assert!(mq_by_name("none", &t(Profile::V6, &[])).unwrap().is_none());
        let e = by_name("none", &t(Profile::V3_10, &[])).err().unwrap();
        assert!(e.contains("not in kernel 3.10"), "{e}");
    }
}
