//! Virtual time in integer nanoseconds. No floating point, no wall clock.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in virtual time, nanoseconds since the start of the run.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Instant(pub u64);

/// A span of virtual time in nanoseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Duration(pub u64);

impl Instant {
    pub const ZERO: Instant = Instant(0);
    pub fn as_ns(self) -> u64 {
        self.0
    }
    /// Time elapsed since `earlier`. Panics if time would run backwards, which is an
    /// invariant violation of the caller.
    pub fn since(self, earlier: Instant) -> Duration {
        assert!(
            earlier.0 <= self.0,
            "time ran backwards: {} < {}",
            self.0,
            earlier.0
        );
        Duration(self.0 - earlier.0)
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const fn ns(n: u64) -> Self {
        Duration(n)
    }
    pub const fn us(n: u64) -> Self {
        Duration(n * 1_000)
    }
    pub const fn ms(n: u64) -> Self {
        Duration(n * 1_000_000)
    }
    pub const fn secs(n: u64) -> Self {
        Duration(n * 1_000_000_000)
    }
    pub fn as_ns(self) -> u64 {
        self.0
    }
    /// Length of `jiffies` ticks at `hz`, with the kernel's integer arithmetic.
    pub fn from_jiffies(jiffies: u64, hz: u64) -> Self {
        assert!(hz > 0);
        Duration(jiffies * 1_000_000_000 / hz)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.checked_add(d.0).expect("virtual time overflow"))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0 + d.0)
    }
}

impl AddAssign for Duration {
    fn add_assign(&mut self, d: Duration) {
        self.0 += d.0;
    }
}

impl Sub for Instant {
    type Output = Duration;
    fn sub(self, rhs: Instant) -> Duration {
        self.since(rhs)
    }
}

impl fmt::Display for Instant {
    /// `seconds.nanoseconds`, as blkparse prints time.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09}",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}
