//! Kernel profiles. A profile selects which mechanism variant each layer uses and
//! the defaults of every tunable; a variant can still be overridden per run with
//! `--set`, so one run can compare before and after a patch.

use std::fmt;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Profile {
    V2_4,
    V2_6_28,
    V2_6_32,
    /// 2.6.33 to 2.6.36: one profile, as their block and direct-I/O code agree on
    /// everything iostack models.
    V2_6_33,
    V2_6_37,
    V3_10,
    /// Modern 6.x (blk-mq).
    V6,
}

impl Profile {
    pub const ALL: [Profile; 7] = [
        Profile::V2_4,
        Profile::V2_6_28,
        Profile::V2_6_32,
        Profile::V2_6_33,
        Profile::V2_6_37,
        Profile::V3_10,
        Profile::V6,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Profile::V2_4 => "2.4",
            Profile::V2_6_28 => "2.6.28",
            Profile::V2_6_32 => "2.6.32",
            Profile::V2_6_33 => "2.6.33-36",
            Profile::V2_6_37 => "2.6.37",
            Profile::V3_10 => "3.10",
            Profile::V6 => "6.x",
        }
    }

    /// The names `--kernel` takes for this profile: its own and the kernel
    /// releases it stands for.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Profile::V2_4 => &["2.4"],
            Profile::V2_6_28 => &["2.6.28", "2.6.27"],
            Profile::V2_6_32 => &["2.6.32"],
            Profile::V2_6_33 => &["2.6.33-36", "2.6.33", "2.6.34", "2.6.35", "2.6.36"],
            Profile::V2_6_37 => &["2.6.37"],
            Profile::V3_10 => &["3.10"],
            Profile::V6 => &["6.x", "6", "modern"],
        }
    }

    /// Parse a profile name; individual releases map to the profile covering them.
    pub fn parse(s: &str) -> Result<Profile, String> {
        if let Some(p) = Profile::ALL.iter().find(|p| p.aliases().contains(&s)) {
            return Ok(*p);
        }
        let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
        Err(format!(
            "unknown kernel profile '{s}' (known: {}; 2.6.33 to 2.6.36 also accepted)",
            names.join(", ")
        ))
    }

    /// Whether this kernel's block layer is the single-queue request path.
    pub fn single_queue(self) -> bool {
        self < Profile::V6
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_alias_parses_to_its_profile() {
        for p in Profile::ALL {
            assert_eq!(p.aliases()[0], p.name());
            for a in p.aliases() {
                assert_eq!(Profile::parse(a), Ok(p), "{a}");
            }
        }
        assert!(Profile::parse("2.6.38").is_err());
    }
}
