//! The option table, declared once, like fio's `fio_options[]`.
//!
//! [`CORE_OPTIONS`] holds every option of fio 3.33's core table (Debian build),
//! [`PROFILE_OPTIONS`] the options that fio's built-in `act` and `tiobench` profiles
//! register into the same namespace (which is why `threads=1` parses), and
//! [`ENGINE_OPTIONS`] the engine-private options of the engines iostack supports.

mod status;
mod table;

pub use status::{is_default, markdown, status, Status};

pub use table::CORE_OPTIONS;

/// fio's option types (`enum fio_opt_type` in parse.h). They decide how a value is
/// split into per-direction parts and how each part is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OptKind {
    /// `FIO_OPT_STR`: one of `values` (matched before any `:` or `,` postfix), or a
    /// free string handed to a callback when the option has no value list.
    Str,
    /// `FIO_OPT_STR_ULL`: string parsed by a callback (only `bssplit`).
    StrUll,
    /// `FIO_OPT_STR_MULTI`: comma-separated list of `values` (`sync_file_range`).
    StrMulti,
    /// `FIO_OPT_STR_VAL`: number with size suffixes, `first[-last]`.
    StrVal,
    /// `FIO_OPT_STR_VAL_TIME`: time value with unit suffixes.
    StrValTime,
    /// `FIO_OPT_STR_STORE`: free non-empty string.
    StrStore,
    /// `FIO_OPT_RANGE`: `lo-hi` or `lo:hi`, up to one per direction.
    Range,
    /// `FIO_OPT_INT`: 32-bit integer with size suffixes, per-direction list.
    Int,
    /// `FIO_OPT_ULL`: 64-bit integer with size suffixes, per-direction list.
    Ull,
    /// `FIO_OPT_BOOL`: 0 or 1; a bare option is an error.
    Bool,
    /// `FIO_OPT_FLOAT_LIST`: `:`-separated floating point values.
    FloatList,
    /// `FIO_OPT_STR_SET`: bare option means 1, or an integer.
    StrSet,
    /// `FIO_OPT_STR_VAL_ZONE`: like `StrVal`, also `%` and `Nz` (zones).
    StrValZone,
    /// `FIO_OPT_DEPRECATED`: any use is an error.
    Deprecated,
    /// `FIO_OPT_SOFT_DEPRECATED`: accepted and ignored.
    SoftDeprecated,
    /// `FIO_OPT_UNSUPPORTED`: not usable on this platform (treated as unknown).
    Unsupported,
}

/// The value taxonomy of an option, coarser than [`OptKind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// Free-form string.
    String,
    /// Integer (size suffixes allowed, as in fio).
    Int,
    /// Byte size with `k`/`m`/`g`... suffixes.
    Size,
    /// Boolean (`0`/`1`, or bare for set-type options).
    Bool,
    /// Time with `us ms s m h d` suffixes.
    Time,
    /// One of a fixed set of values.
    Enum,
    /// `lo-hi` ranges.
    Range,
    /// List of floating-point values.
    FloatList,
    /// Deprecated or unsupported: no value.
    None,
}

/// Where an option lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// fio's core option table.
    Core,
    /// Registered by a built-in fio profile (`act`, `tiobench`).
    Profile(&'static str),
    /// Private to the listed I/O engines (only valid when the job uses one of them).
    Engine(&'static [&'static str]),
}

/// One option definition.
#[derive(Debug, Clone, Copy)]
pub struct OptDef {
    /// Canonical name (what `--showcmd` prints).
    pub name: &'static str,
    /// Alternative accepted name.
    pub alias: Option<&'static str>,
    /// fio option type.
    pub kind: OptKind,
    /// Storage field (fio's `thread_options` member). Options that share a field
    /// overwrite each other (`direct`/`buffered`).
    pub field: &'static str,
    /// Number of per-direction storage slots (1, 2 or 3: read, write, trim).
    pub slots: u8,
    /// Default value, parsed like user input when a job starts.
    pub default: Option<&'static str>,
    /// One-line help.
    pub help: &'static str,
    /// Allowed values (with their help) for enum-like options.
    pub values: &'static [(&'static str, &'static str)],
    /// Minimum value (checked only when non-zero, as in fio).
    pub min: i64,
    /// Maximum value (0: none beyond the type's range).
    pub max: u64,
    /// Time value whose bare number means seconds (else microseconds).
    pub seconds: bool,
    /// Integer option that takes time suffixes.
    pub time: bool,
    /// Value must be a power of two.
    pub pow2: bool,
    /// Boolean stored negated (`buffered` is `!direct`).
    pub neg: bool,
    /// Parse priority within a section: higher first (`kb_base` before sizes).
    pub prio: i8,
    /// Maximum string length or list length (0: none).
    pub maxlen: u32,
    /// Allowed range of floating point values.
    pub float_range: Option<(f64, f64)>,
    /// Parent option (documentation only).
    pub parent: Option<&'static str>,
    /// fio runs a callback for this option (iostack emulates the ones that validate).
    pub callback: bool,
    /// Where the option comes from.
    pub scope: Scope,
}

impl OptDef {
    /// Whether `name` is this option's name or alias (exact, case-sensitive, like fio).
    pub fn matches(&self, name: &str) -> bool {
        self.name == name || self.alias == Some(name)
    }

    /// The coarse value type.
    pub fn value_type(&self) -> ValueType {
        match self.kind {
            OptKind::Str | OptKind::StrMulti if !self.values.is_empty() => ValueType::Enum,
            OptKind::Str | OptKind::StrMulti | OptKind::StrStore | OptKind::StrUll => {
                ValueType::String
            }
            OptKind::StrValTime => ValueType::Time,
            OptKind::Int if self.time => ValueType::Time,
            OptKind::Int => ValueType::Int,
            OptKind::StrVal | OptKind::StrValZone | OptKind::Ull => ValueType::Size,
            OptKind::Range => ValueType::Range,
            OptKind::Bool | OptKind::StrSet => ValueType::Bool,
            OptKind::FloatList => ValueType::FloatList,
            OptKind::Deprecated | OptKind::SoftDeprecated | OptKind::Unsupported => ValueType::None,
        }
    }

    /// Whether the option is per direction (`read,write,trim` lists).
    pub fn per_direction(&self) -> bool {
        self.slots == 3
    }
}

const fn eng(
    name: &'static str,
    kind: OptKind,
    engines: &'static [&'static str],
    help: &'static str,
) -> OptDef {
    OptDef {
        name,
        alias: None,
        kind,
        field: name,
        slots: 1,
        default: None,
        help,
        values: &[],
        min: 0,
        max: 0,
        seconds: false,
        time: false,
        pow2: false,
        neg: false,
        prio: 0,
        maxlen: 0,
        float_range: None,
        parent: None,
        callback: false,
        scope: Scope::Engine(engines),
    }
}

const fn prof(
    name: &'static str,
    kind: OptKind,
    profile: &'static str,
    default: Option<&'static str>,
    help: &'static str,
) -> OptDef {
    OptDef {
        name,
        alias: None,
        kind,
        field: name,
        slots: 1,
        default,
        help,
        values: &[],
        min: 0,
        max: 0,
        seconds: kind_is_time(kind),
        time: false,
        pow2: false,
        neg: false,
        prio: 0,
        maxlen: 0,
        float_range: None,
        parent: None,
        callback: false,
        scope: Scope::Profile(profile),
    }
}

const fn kind_is_time(kind: OptKind) -> bool {
    matches!(kind, OptKind::StrValTime)
}

const PVSYNC2: &[&str] = &["pvsync2"];
const LIBAIO: &[&str] = &["libaio"];
const IO_URING: &[&str] = &["io_uring"];
const AIO_URING: &[&str] = &["libaio", "io_uring"];
const MMAP: &[&str] = &["mmap"];

/// Engine-private options of the engines iostack supports (`fio --enghelp=ENGINE`).
/// fio parses these only after the core table rejected a name, against the engine
/// the job uses at that point, and prints them last in `--showcmd`.
pub static ENGINE_OPTIONS: &[OptDef] = &[
    eng(
        "hipri",
        OptKind::StrSet,
        PVSYNC2,
        "Set RWF_HIPRI for pwritev2/preadv2",
    ),
    OptDef {
        min: 0,
        max: 100,
        default: Some("100"),
        ..eng(
            "hipri_percentage",
            OptKind::Int,
            PVSYNC2,
            "Probabilistically set RWF_HIPRI for pwritev2/preadv2",
        )
    },
    eng(
        "uncached",
        OptKind::Int,
        PVSYNC2,
        "Use RWF_UNCACHED for buffered read/writes",
    ),
    OptDef {
        min: 0,
        max: 1,
        ..eng(
            "nowait",
            OptKind::Bool,
            PVSYNC2,
            "Set RWF_NOWAIT for pwritev2/preadv2",
        )
    },
    eng(
        "userspace_reap",
        OptKind::StrSet,
        LIBAIO,
        "Use alternative user-space reap implementation",
    ),
    OptDef {
        max: 100,
        slots: 2,
        ..eng(
            "cmdprio_percentage",
            OptKind::Int,
            AIO_URING,
            "Send high priority I/O this percentage of the time",
        )
    },
    OptDef {
        min: 1,
        max: 3,
        slots: 2,
        ..eng(
            "cmdprio_class",
            OptKind::Int,
            AIO_URING,
            "Set asynchronous IO priority class",
        )
    },
    OptDef {
        max: 7,
        slots: 2,
        ..eng(
            "cmdprio",
            OptKind::Int,
            AIO_URING,
            "Set asynchronous IO priority level",
        )
    },
    OptDef {
        callback: true,
        ..eng(
            "cmdprio_bssplit",
            OptKind::StrStore,
            AIO_URING,
            "Set priority percentages for different block sizes",
        )
    },
    OptDef {
        min: 0,
        max: 1,
        ..eng(
            "nowait",
            OptKind::Bool,
            LIBAIO,
            "Set RWF_NOWAIT for reads/writes",
        )
    },
    eng(
        "hipri",
        OptKind::StrSet,
        IO_URING,
        "Use polled IO completions",
    ),
    eng("fixedbufs", OptKind::StrSet, IO_URING, "Pre map IO buffers"),
    eng(
        "registerfiles",
        OptKind::StrSet,
        IO_URING,
        "Pre-open/register files",
    ),
    eng(
        "sqthread_poll",
        OptKind::StrSet,
        IO_URING,
        "Offload submission/completion to kernel thread",
    ),
    eng(
        "sqthread_poll_cpu",
        OptKind::Int,
        IO_URING,
        "What CPU to run SQ thread polling on",
    ),
    OptDef {
        default: Some("-1"),
        min: -1,
        ..eng(
            "nonvectored",
            OptKind::Int,
            IO_URING,
            "Use non-vectored read/write commands",
        )
    },
    eng(
        "uncached",
        OptKind::Int,
        IO_URING,
        "Use RWF_UNCACHED for buffered read/writes",
    ),
    OptDef {
        min: 0,
        max: 1,
        ..eng(
            "nowait",
            OptKind::Bool,
            IO_URING,
            "Use RWF_NOWAIT for reads/writes",
        )
    },
    eng(
        "force_async",
        OptKind::Int,
        IO_URING,
        "Set IOSQE_ASYNC every N requests",
    ),
    OptDef {
        default: Some("nvme"),
        values: &[("nvme", "pass-through nvme cmd")],
        ..eng("cmd_type", OptKind::Str, IO_URING, "Specify uring-cmd type")
    },
    eng("thp", OptKind::Int, MMAP, "Memory Advise Huge Page"),
];

/// Options registered by fio's built-in profiles. fio appends them to its option
/// table, so they are accepted in any job file (`threads=1` parses, and does not
/// switch on thread mode). A profile option whose name a core option already has
/// (`tiobench`'s `size`) is unreachable, as in fio.
pub static PROFILE_OPTIONS: &[OptDef] = &[
    prof(
        "device-names",
        OptKind::StrStore,
        "act",
        None,
        "Devices to use",
    ),
    prof(
        "load",
        OptKind::Int,
        "act",
        Some("1"),
        "ACT load multipler (default 1x)",
    ),
    prof(
        "test-duration",
        OptKind::StrValTime,
        "act",
        Some("24h"),
        "How long the entire test takes to run",
    ),
    prof(
        "threads-per-queue",
        OptKind::Int,
        "act",
        Some("8"),
        "Number of read IO threads per device",
    ),
    prof(
        "read-req-num-512-blocks",
        OptKind::Int,
        "act",
        Some("3"),
        "Number of 512B blocks to read at the time",
    ),
    prof(
        "large-block-op-kbytes",
        OptKind::Int,
        "act",
        Some("131072"),
        "Size of large block ops in KiB (writes)",
    ),
    prof(
        "prep",
        OptKind::StrSet,
        "act",
        None,
        "Set to run ACT prep phase",
    ),
    prof("size", OptKind::StrVal, "tiobench", None, "Size in MiB"),
    prof(
        "block",
        OptKind::Int,
        "tiobench",
        Some("4096"),
        "Block size in bytes",
    ),
    prof("numruns", OptKind::Int, "tiobench", None, "Number of runs"),
    prof("dir", OptKind::StrStore, "tiobench", None, "Test directory"),
    prof(
        "threads",
        OptKind::Int,
        "tiobench",
        None,
        "Number of Threads",
    ),
];

/// Find a core or profile option by name or alias, the way fio's `find_option_c`
/// does: first match wins, `Unsupported` entries are skipped.
pub fn find_option(name: &str) -> Option<&'static OptDef> {
    CORE_OPTIONS
        .iter()
        .chain(PROFILE_OPTIONS.iter())
        .find(|o| o.kind != OptKind::Unsupported && o.matches(name))
}

/// Find an engine-private option for `engine`.
pub fn find_engine_option(engine: &str, name: &str) -> Option<&'static OptDef> {
    ENGINE_OPTIONS.iter().find(|o| match o.scope {
        Scope::Engine(list) => list.contains(&engine) && o.matches(name),
        _ => false,
    })
}

/// Engine-private options of `engine`, in `fio --enghelp` order.
pub fn engine_options(engine: &str) -> impl Iterator<Item = &'static OptDef> + '_ {
    ENGINE_OPTIONS.iter().filter(move |o| match o.scope {
        Scope::Engine(list) => list.contains(&engine),
        _ => false,
    })
}

/// All options a job file can name without an engine context: core then profile.
pub fn all_options() -> impl Iterator<Item = &'static OptDef> {
    CORE_OPTIONS.iter().chain(PROFILE_OPTIONS.iter())
}

/// Levenshtein distance, as fio's `string_distance`.
pub fn string_distance(a: &str, b: &str) -> usize {
    let a = a.as_bytes();
    let b = b.as_bytes();
    let mut p: Vec<usize> = (0..=b.len()).collect();
    let mut q = vec![0usize; b.len() + 1];
    for i in 1..=a.len() {
        q[0] = p[0] + 1;
        for j in 1..=b.len() {
            let sub = p[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            q[j] = (p[j] + 1).min((q[j - 1] + 1).min(sub));
        }
        std::mem::swap(&mut p, &mut q);
    }
    p[b.len()]
}

/// The closest option name for an unknown `name`, in the spirit of fio's
/// `show_closest_option` ("Did you mean ...?"): smallest edit distance, first match
/// wins, shown only if the distance is at most half the (rounded-up) length of
/// `name`. Unlike fio, aliases are candidates too, so `blocksze` suggests
/// `blocksize` (fio 3.33 suggests the tiobench profile's `block`).
pub fn closest_option(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    if let Some(o) = find_option(&lower) {
        return Some(if o.name == lower {
            o.name
        } else {
            o.alias.unwrap_or(o.name)
        });
    }
    let limit = name.len().div_ceil(2);
    let mut best: Option<(&'static str, usize)> = None;
    for o in all_options() {
        if o.kind == OptKind::Unsupported {
            continue;
        }
        for cand in std::iter::once(o.name).chain(o.alias) {
            // The distance is at least the length difference: skip hopeless ones.
            if name.len().abs_diff(cand.len()) > limit {
                continue;
            }
            let d = string_distance(name, cand);
            if best.is_none_or(|(_, bd)| d < bd) {
                best = Some((cand, d));
            }
        }
    }
    let (cand, d) = best?;
    (d <= limit).then_some(cand)
}

/// I/O engines the Debian fio 3.33 build can load that iostack simulates.
pub const SUPPORTED_ENGINES: &[&str] = &[
    "sync", "psync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap", "null",
];

/// Engines fio 3.33 builds in that could be simulated but are not yet, with
/// the reason the refusal prints after fio's "engine X not loadable".
pub const UNSIMULATED_ENGINES: &[(&str, &str)] = &[
    ("filecreate", FILE_OPS),
    ("filestat", FILE_OPS),
    ("filedelete", FILE_OPS),
    ("dircreate", FILE_OPS),
    ("dirstat", FILE_OPS),
    ("dirdelete", FILE_OPS),
    (
        "ftruncate",
        "ftruncate as the I/O is not modelled yet (the file-system model truncates a file \
         only to zero)",
    ),
    (
        "falloc",
        "fallocate and hole punching as the I/O are not modelled yet (the file-system model \
         has no fallocate)",
    ),
    (
        "e4defrag",
        "EXT4_IOC_MOVE_EXT (online defragmentation) is not modelled",
    ),
    (
        "splice",
        "splice/vmsplice through a pipe is not modelled yet",
    ),
    (
        "cpp_null",
        "an external engine (fio's engines/null.c built as a C++ shared object), not part \
         of fio's binary; ioengine=null is simulated",
    ),
];

const FILE_OPS: &str = "file-metadata operations as the I/O (open/create, stat, unlink) are not \
                        modelled yet (the file-system model creates files but has no stat or unlink)";

/// fio's "engine X not loadable", with iostack's reason where fio has the
/// engine but iostack does not simulate it.
pub fn engine_not_loadable(name: &str) -> String {
    match UNSIMULATED_ENGINES.iter().find(|e| e.0 == name) {
        Some((_, why)) => format!("engine {name} not loadable: {why}"),
        None => format!("engine {name} not loadable"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine fio has but iostack does not simulate keeps fio's words and
    /// says why; one fio does not know keeps fio's words alone; none of them
    /// is one iostack simulates.
    #[test]
    fn unsimulated_engines_say_why() {
        let e = engine_not_loadable("filedelete");
        assert!(
            e.starts_with("engine filedelete not loadable: file-metadata"),
            "{e}"
        );
        assert_eq!(engine_not_loadable("nosuch"), "engine nosuch not loadable");
        for (name, _) in UNSIMULATED_ENGINES {
            assert!(!SUPPORTED_ENGINES.contains(name), "{name}");
        }
    }

    #[test]
    fn table_names_are_unique_per_scope() {
        let mut seen = std::collections::BTreeSet::new();
        for o in CORE_OPTIONS {
            assert!(seen.insert(o.name), "duplicate {}", o.name);
        }
    }

    #[test]
    fn lookups() {
        assert_eq!(find_option("blocksize").unwrap().name, "bs");
        assert_eq!(find_option("readwrite").unwrap().name, "rw");
        assert_eq!(find_option("wait_for_previous").unwrap().name, "stonewall");
        assert_eq!(find_option("timeout").unwrap().name, "runtime");
        assert!(find_option("BS").is_none());
        assert_eq!(
            find_option("threads").unwrap().scope,
            Scope::Profile("tiobench")
        );
        assert_eq!(find_option("size").unwrap().scope, Scope::Core);
        assert!(find_engine_option("libaio", "userspace_reap").is_some());
        assert!(find_engine_option("psync", "userspace_reap").is_none());
        assert_eq!(closest_option("blocksze"), Some("blocksize"));
        assert_eq!(closest_option("iodepht"), Some("iodepth"));
        assert_eq!(closest_option("x"), None);
        assert_eq!(closest_option("BS"), Some("bs"));
        assert_eq!(closest_option("BlockSize"), Some("blocksize"));
    }

    #[test]
    fn distance() {
        assert_eq!(string_distance("kitten", "sitting"), 3);
        assert_eq!(string_distance("", "abc"), 3);
        assert_eq!(string_distance("abc", "abc"), 0);
    }
}
