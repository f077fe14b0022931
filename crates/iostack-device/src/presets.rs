//! Named device presets for the seeds' hardware. A preset is data: a parameter set
//! with its source; `DeviceSpec::build` turns it into a model.
//!
//! HDD presets live in `hdd::presets()` and RAID0 presets in `raid0::presets()`,
//! next to the models they parameterise.

use crate::fixed::{Fixed, FixedParams};
use crate::hdd::{Hdd, HddParams};
use crate::raid0::{Raid0, Raid0Params};
use crate::{Device, HwLimits};
use iostack_des::Rng;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSpec {
    Fixed(FixedParams),
    Hdd(HddParams),
    Raid0(Raid0Params),
}

impl DeviceSpec {
    pub fn build(&self, rng: Rng) -> Box<dyn Device> {
        match self {
            DeviceSpec::Fixed(p) => Box::new(Fixed::new(p.clone())),
            DeviceSpec::Hdd(p) => Box::new(Hdd::new(p.clone(), rng)),
            DeviceSpec::Raid0(p) => Box::new(Raid0::new(p.clone(), rng)),
        }
    }

    /// The capacity the built model reports (`Device::capacity_sectors`),
    /// without building it.
    pub fn capacity_sectors(&self) -> u64 {
        match self {
            DeviceSpec::Fixed(p) => p.capacity_sectors,
            DeviceSpec::Hdd(p) => p.capacity_sectors,
            DeviceSpec::Raid0(p) => p.capacity_sectors(),
        }
    }
}

/// Fixed-latency presets (name, description).
pub const PRESETS: &[(&str, &str)] = &[
    (
        "null",
        "null device: 1 us per command, no transfer cost, depth 256",
    ),
    (
        "ess-dasd",
        "s390 DASD volume on an enterprise storage server (seed 002): cached reads, \
         279 us command overhead + 106 MB/s FICON transfer, one channel; calibrated \
         from the seed's two completion times",
    ),
    (
        "fc-array",
        "enterprise array over one 4 Gb FC link (seed 003's NetApp, parameter set E): \
         writes acknowledged from NVRAM, 300 us controller overhead + 400 MB/s link, 8 \
         parallel back-end paths, TCQ 128. A fixed-latency stand-in until the array \
         model with NVRAM consistency points exists",
    ),
];

const DEFAULT_LIMITS: HwLimits = HwLimits {
    max_hw_sectors: 1024,
    max_segments: 128,
    logical_block_size: 512,
};

/// Look a preset up by name.
pub fn lookup(name: &str) -> Option<DeviceSpec> {
    match name {
        "null" => Some(DeviceSpec::Fixed(FixedParams {
            overhead_ns: 1_000,
            rate_bytes_per_s: 0,
            channels: 256,
            queue_depth: 256,
            capacity_sectors: 1 << 31,
            rotational: false,
            limits: DEFAULT_LIMITS,
        })),
        // Seed 002 completes a 96-sector read 742 us after issue and the following
        // 32-sector read 434 us later; one link serving them in turn gives
        // 32 sectors = 308 us (106 MB/s) and an overhead of 279 us.
        "ess-dasd" => Some(DeviceSpec::Fixed(FixedParams {
            overhead_ns: 279_000,
            rate_bytes_per_s: 106_000_000,
            channels: 1,
            queue_depth: 32,
            capacity_sectors: 4_807_520,
            rotational: true,
            limits: DEFAULT_LIMITS,
        })),
        "fc-array" => Some(DeviceSpec::Fixed(FixedParams {
            overhead_ns: 300_000,
            rate_bytes_per_s: 400_000_000,
            channels: 8,
            queue_depth: 128,
            capacity_sectors: 1 << 31,
            rotational: true,
            limits: DEFAULT_LIMITS,
        })),
        _ => crate::hdd::presets()
            .into_iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, p, _)| DeviceSpec::Hdd(p))
            .or_else(|| {
                crate::raid0::presets()
                    .into_iter()
                    .find(|(n, _, _)| *n == name)
                    .map(|(_, p, _)| DeviceSpec::Raid0(p))
            }),
    }
}

/// All preset names with descriptions: fixed ones first, then HDDs, then RAID0.
pub fn list() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = PRESETS
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect();
    for (n, _, d) in crate::hdd::presets() {
        v.push((n.to_string(), d.to_string()));
    }
    for (n, _, d) in crate::raid0::presets() {
        v.push((n.to_string(), d.to_string()));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_capacity_is_the_built_models() {
        for (name, _) in list() {
            let spec = lookup(&name).expect("listed preset");
            let built = spec.build(Rng::stream(iostack_des::Seed(1), "device"));
            assert_eq!(spec.capacity_sectors(), built.capacity_sectors(), "{name}");
        }
    }
}
