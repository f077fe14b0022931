//! Mechanical hard disk model. (Being written; see the module contract in presets.rs.)

use crate::{Device, DeviceCmd, HwLimits};
use iostack_des::{Instant, Rng};

/// Parameters of a mechanical disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HddParams {
    pub queue_depth: u32,
    pub capacity_sectors: u64,
}

pub struct Hdd;

impl Hdd {
    pub fn new(_p: HddParams, _rng: Rng) -> Self {
        unimplemented!("HDD model is being written")
    }
}

/// Named HDD presets: (name, parameters, one-line description with its source).
pub fn presets() -> Vec<(&'static str, HddParams, &'static str)> {
    Vec::new()
}

impl Device for Hdd {
    fn queue_depth(&self) -> u32 {
        unimplemented!()
    }
    fn rotational(&self) -> bool {
        true
    }
    fn capacity_sectors(&self) -> u64 {
        unimplemented!()
    }
    fn hw_limits(&self) -> HwLimits {
        unimplemented!()
    }
    fn submit(&mut self, _now: Instant, _cmd: DeviceCmd) {
        unimplemented!()
    }
    fn poll(&mut self, _now: Instant, _out: &mut Vec<(Instant, u64)>) {
        unimplemented!()
    }
    fn complete(&mut self, _now: Instant, _id: u64) {
        unimplemented!()
    }
}
