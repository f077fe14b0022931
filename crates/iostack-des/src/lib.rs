//! Discrete-event kernel: integer-nanosecond virtual time, a totally ordered event
//! queue, and seeded random streams derived by stable name.
//!
//! This crate knows nothing about storage. Everything above it that needs time,
//! ordering or randomness goes through these types, so a run is a pure function of
//! its inputs and its seed.

mod queue;
mod rng;
mod time;

pub use queue::{EventQueue, Scheduled};
pub use rng::{fnv1a64, Rng, Seed};
pub use time::{Duration, Instant};
