//! Front ends to processes: fio job files and dd command lines become `ProcSpec`s
//! for a machine. Parsing is `iostack-workload`'s; this maps its resolved jobs to
//! what the simulator runs and rejects what the simulator cannot yet model, by name.

use crate::machine::Machine;
use crate::workload::{Engine, Pattern, ProcSpec, Target};
use iostack_des::Duration;

/// Parse a size such as `64M`, `4k`, `1048576` (binary multiples).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, suf) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("invalid size '{s}'"))?;
    let mult: u64 = match suf.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        "t" | "tib" | "tb" => 1 << 40,
        _ => return Err(format!("invalid size suffix in '{s}'")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("size '{s}' overflows"))
}

/// A process that only lays out a file (no I/O), as `[[setup]]` asks.
pub fn layout_only(path: &str, size: u64, goal: Option<u64>) -> ProcSpec {
    ProcSpec {
        comm: "mkfile".into(),
        name: format!("setup:{path}"),
        group: u32::MAX,
        target: Target::File {
            path: path.to_string(),
            size,
            goal,
        },
        pattern: Pattern::Sequential,
        read_pct: 100,
        bs: [4096, 4096],
        offset: 0,
        region: size.max(4096),
        io_size: 0,
        engine: Engine::Sync,
        iodepth: 1,
        direct: true,
        runtime: None,
        time_based: false,
        startdelay: Duration::ZERO,
        stonewall: false,
        ioprio: (2, 4),
        pid: None,
        cpu: None,
    }
}

/// The processes of a dd command line.
pub fn dd_procs(_args: &str, _m: &Machine) -> Result<Vec<ProcSpec>, String> {
    Err("dd front end not wired yet".into())
}

/// The processes of a fio job file.
pub fn fio_procs(_path: &str, _text: &str, _m: &Machine) -> Result<Vec<ProcSpec>, String> {
    Err("fio front end not wired yet".into())
}
