//! The tunable table machinery. Each layer declares its tunables once, as a static
//! table of `TunableDef` (name, unit, default per profile, range, doc), next to the
//! code that reads them, the way `deadline_attrs[]` sits in `deadline-iosched.c`.
//! That one table drives `--set` parsing and validation, `iostack tunables`, the
//! documentation and the Python keywords. Values are kept in the tunable's external
//! unit and converted once, where the owning layer builds its configuration.

use crate::profile::Profile;
use std::collections::BTreeMap;
use std::fmt;

/// The unit a tunable is written in, as the kernel or tool spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Count,
    Sectors,
    Bytes,
    KiB,
    Ns,
    Us,
    Ms,
    /// Kernel jiffies at the profile's HZ.
    Jiffies,
    Hz,
    Percent,
    Centisecs,
    Rpm,
    /// 0 or 1.
    Bool,
    /// One of the listed names; stored as its index.
    Enum(&'static [&'static str]),
}

impl Unit {
    pub fn label(self) -> &'static str {
        match self {
            Unit::Count => "count",
            Unit::Sectors => "sectors",
            Unit::Bytes => "bytes",
            Unit::KiB => "KiB",
            Unit::Ns => "ns",
            Unit::Us => "us",
            Unit::Ms => "ms",
            Unit::Jiffies => "jiffies",
            Unit::Hz => "Hz",
            Unit::Percent => "%",
            Unit::Centisecs => "centisecs",
            Unit::Rpm => "rpm",
            Unit::Bool => "bool",
            Unit::Enum(_) => "enum",
        }
    }
}

/// One tunable, declared once.
pub struct TunableDef {
    /// sysfs-like path, e.g. `queue/nr_requests` or `iosched/deadline/fifo_batch`.
    pub name: &'static str,
    pub unit: Unit,
    /// Default for a kernel profile, in `unit`.
    pub default: fn(Profile) -> i64,
    pub min: i64,
    pub max: i64,
    pub doc: &'static str,
}

impl fmt::Debug for TunableDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TunableDef")
            .field("name", &self.name)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TunableError {
    Unknown {
        name: String,
        suggestion: Option<String>,
    },
    BadValue {
        name: String,
        value: String,
        why: String,
    },
    Syntax(String),
}

impl fmt::Display for TunableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TunableError::Unknown { name, suggestion } => {
                write!(f, "unknown tunable '{name}'")?;
                if let Some(s) = suggestion {
                    write!(f, " (did you mean '{s}'?)")?;
                }
                write!(f, "; `iostack tunables` lists them")
            }
            TunableError::BadValue { name, value, why } => {
                write!(f, "bad value '{value}' for tunable '{name}': {why}")
            }
            TunableError::Syntax(s) => write!(f, "expected KEY=VALUE, got '{s}'"),
        }
    }
}

impl std::error::Error for TunableError {}

/// The values of every declared tunable for one run.
#[derive(Clone, Debug)]
pub struct Tunables {
    profile: Profile,
    defs: BTreeMap<&'static str, &'static TunableDef>,
    values: BTreeMap<&'static str, i64>,
    /// Names set explicitly, in the order given.
    overridden: Vec<&'static str>,
}

impl Tunables {
    /// All `defs` at their defaults for `profile`. Duplicate names are a bug.
    pub fn new(profile: Profile, tables: &[&'static [TunableDef]]) -> Self {
        let mut defs = BTreeMap::new();
        let mut values = BTreeMap::new();
        for table in tables {
            for d in table.iter() {
                assert!(
                    defs.insert(d.name, d).is_none(),
                    "tunable {} declared twice",
                    d.name
                );
                let v = (d.default)(profile);
                assert!(
                    d.min <= v && v <= d.max,
                    "default of {} out of range",
                    d.name
                );
                values.insert(d.name, v);
            }
        }
        Tunables {
            profile,
            defs,
            values,
            overridden: Vec::new(),
        }
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The value of `name` in its declared unit. Asking for an undeclared name is a bug.
    pub fn get(&self, name: &str) -> i64 {
        match self.values.get(name) {
            Some(v) => *v,
            None => panic!("tunable {name} read but never declared"),
        }
    }

    pub fn get_u64(&self, name: &str) -> u64 {
        let v = self.get(name);
        assert!(v >= 0, "tunable {name} is negative");
        v as u64
    }

    pub fn get_bool(&self, name: &str) -> bool {
        self.get(name) != 0
    }

    /// The enum name a tunable is set to.
    pub fn get_enum(&self, name: &str) -> &'static str {
        let d = self.defs[name];
        match d.unit {
            Unit::Enum(names) => names[self.get(name) as usize],
            _ => panic!("tunable {name} is not an enum"),
        }
    }

    /// Set from a `KEY=VALUE` string as given on a command line.
    pub fn set_str(&mut self, kv: &str) -> Result<(), TunableError> {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| TunableError::Syntax(kv.to_string()))?;
        self.set(k.trim(), v.trim())
    }

    pub fn set(&mut self, name: &str, value: &str) -> Result<(), TunableError> {
        let Some(def) = self.defs.get(name).copied() else {
            return Err(TunableError::Unknown {
                name: name.to_string(),
                suggestion: self.suggest(name),
            });
        };
        let v = parse_value(def, value)?;
        self.values.insert(def.name, v);
        if !self.overridden.contains(&def.name) {
            self.overridden.push(def.name);
        }
        Ok(())
    }

    fn suggest(&self, name: &str) -> Option<String> {
        let leaf = name.rsplit('/').next().unwrap_or(name);
        self.defs
            .keys()
            .find(|k| k.rsplit('/').next() == Some(leaf))
            .map(|k| k.to_string())
    }

    /// Every tunable with its current value, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&'static TunableDef, i64)> + '_ {
        self.defs.values().map(move |d| (*d, self.values[d.name]))
    }

    pub fn overridden(&self) -> &[&'static str] {
        &self.overridden
    }

    /// Render a value in its unit (enum names, plain integers otherwise).
    pub fn render(def: &TunableDef, v: i64) -> String {
        match def.unit {
            Unit::Enum(names) => names[v as usize].to_string(),
            _ => v.to_string(),
        }
    }

    /// A stable text form of all values, for the configuration hash.
    pub fn canonical(&self) -> String {
        let mut s = format!("profile={}\n", self.profile);
        for (d, v) in self.iter() {
            s.push_str(d.name);
            s.push('=');
            s.push_str(&Tunables::render(d, v));
            s.push('\n');
        }
        s
    }
}

fn parse_value(def: &TunableDef, value: &str) -> Result<i64, TunableError> {
    let bad = |why: String| TunableError::BadValue {
        name: def.name.to_string(),
        value: value.to_string(),
        why,
    };
    let v = match def.unit {
        Unit::Enum(names) => match names.iter().position(|n| *n == value) {
            Some(i) => i as i64,
            None => return Err(bad(format!("expected one of: {}", names.join(", ")))),
        },
        Unit::Bool => match value {
            "0" | "false" | "off" => 0,
            "1" | "true" | "on" => 1,
            _ => return Err(bad("expected 0 or 1".into())),
        },
        _ => value
            .parse::<i64>()
            .map_err(|_| bad(format!("expected an integer in {}", def.unit.label())))?,
    };
    if v < def.min || v > def.max {
        return Err(bad(format!(
            "out of range {}..={} {}",
            def.min,
            def.max,
            def.unit.label()
        )));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    static T: &[TunableDef] = &[
        TunableDef {
            name: "queue/nr_requests",
            unit: Unit::Count,
            default: |_| 128,
            min: 4,
            max: 100_000,
            doc: "",
        },
        TunableDef {
            name: "dio/variant",
            unit: Unit::Enum(&["a", "b"]),
            default: |p| if p >= Profile::V3_10 { 1 } else { 0 },
            min: 0,
            max: 1,
            doc: "",
        },
    ];

    #[test]
    fn defaults_set_and_errors() {
        let mut t = Tunables::new(Profile::V2_6_33, &[T]);
        assert_eq!(t.get("queue/nr_requests"), 128);
        assert_eq!(t.get_enum("dio/variant"), "a");
        t.set_str("dio/variant=b").unwrap();
        assert_eq!(t.get_enum("dio/variant"), "b");
        let e = t.set_str("nr_requests=3").unwrap_err();
        assert!(
            e.to_string().contains("did you mean 'queue/nr_requests'"),
            "{e}"
        );
        let e = t.set_str("queue/nr_requests=3").unwrap_err();
        assert!(e.to_string().contains("out of range 4..=100000"), "{e}");
        assert!(t.set_str("queue/nr_requests").is_err());
        assert_eq!(
            Tunables::new(Profile::V3_10, &[T]).get_enum("dio/variant"),
            "b"
        );
    }
}
