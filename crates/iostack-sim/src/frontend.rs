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
    n.checked_mul(mult)
        .ok_or_else(|| format!("size '{s}' overflows"))
}

/// A process that only lays out a file (no I/O), as `[[setup]]` asks.
pub fn layout_only(path: &str, size: u64, goal: Option<u64>) -> ProcSpec {
    let target = Target::File {
        path: path.to_string(),
        size,
        goal,
    };
    ProcSpec {
        group: u32::MAX,
        io_size: 0,
        ..ProcSpec::direct_reader("mkfile", &format!("setup:{path}"), target, size.max(4096))
    }
}

/// What fio's report needs to know of a simulated process (one per fio job clone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobMeta {
    pub name: String,
    pub group: u32,
    /// Job options as written, in order (fio's JSON "job options").
    pub options: Vec<(String, String)>,
    pub group_reporting: bool,
    pub iodepth: u32,
    pub sync_engine: bool,
    pub kb_base: u32,
}

/// Processes of a front end, with fio metadata where there is one.
pub struct Procs {
    pub procs: Vec<ProcSpec>,
    pub meta: Vec<Option<JobMeta>>,
    /// fio's "global options".
    pub global_options: Vec<(String, String)>,
}

/// Where a path lands on the machine.
fn target_of(path: &str, size: u64, m: &Machine) -> Result<Target, String> {
    if path.starts_with("/dev/") {
        return Ok(Target::Device {
            path: path.to_string(),
        });
    }
    let full = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{}/{}", m.mount, path)
    };
    if !full.starts_with(&format!("{}/", m.mount)) {
        return Err(format!(
            "'{path}' is not on the simulated file system (mounted at {}; a machine \
             file's `mount = DIR` moves it) nor a device",
            m.mount
        ));
    }
    Ok(Target::File {
        path: full,
        size,
        goal: None,
    })
}

/// The process of a dd command line: GNU dd's copy loop of `ibs`-sized reads (and
/// `obs`-sized writes), each a read(2)/write(2) the caller waits for.
pub fn dd_procs(args: &str, m: &Machine) -> Result<Vec<ProcSpec>, String> {
    let dd = iostack_workload::parse_dd_command_line(args).map_err(|e| e.to_string())?;
    let input = dd
        .input
        .clone()
        .ok_or("dd: reading standard input is not simulated; give if=")?;
    let output = dd.output.clone().unwrap_or_else(|| "/dev/null".into());
    if input == "/dev/zero" && output != "/dev/null" {
        // A writer: dd if=/dev/zero of=FILE bs=.. count=.. [oflag=direct]
        // [conv=fsync|fdatasync]. Reading /dev/zero costs no I/O.
        let bs = dd.obs;
        let io_size = dd
            .input_limit()
            .ok_or("dd: if=/dev/zero without count= writes forever; give count=")?;
        let offset = dd.seek_offset();
        let target = target_of(&output, offset + io_size, m)?;
        return Ok(vec![ProcSpec {
            bs: [bs, bs],
            offset,
            io_size,
            read_pct: 0,
            direct: dd.oflag.direct,
            // dd truncates and rewrites its output unless conv=notrunc.
            fresh: !dd.conv.notrunc && !output.starts_with("/dev/"),
            end_fsync: dd.conv.fsync || dd.conv.fdatasync,
            ..ProcSpec::direct_reader("dd", "dd", target, offset + io_size)
        }]);
    }
    if output != "/dev/null" {
        return Err(format!(
            "dd: if={input} of={output}: iostack simulates dd reading a file or device \
             into /dev/null, or writing /dev/zero into a file or device"
        ));
    }
    let bs = dd.ibs;
    let offset = dd.skip_offset();
    // Without count=, until end of file.
    let io_size = dd.input_limit().unwrap_or(u64::MAX);
    let target = target_of(&input, 0, m)?;
    Ok(vec![ProcSpec {
        bs: [bs, bs],
        offset,
        io_size,
        direct: dd.iflag.direct,
        ..ProcSpec::direct_reader("dd", "dd", target, io_size)
    }])
}

/// The parse environment fio would see on the simulated machine: `$ncpus` is the
/// machine's CPU count; `vars` are the `${VAR}` values the caller supplies.
pub fn fio_env(
    m: &Machine,
    vars: std::collections::BTreeMap<String, String>,
) -> iostack_workload::ParseEnv {
    iostack_workload::ParseEnv {
        vars,
        ncpus: m.cpus as u64,
        ..iostack_workload::ParseEnv::default()
    }
}

/// Parse a job file given as text, purely: includes are not available.
pub fn fio_procs_from_text(path: &str, text: &str, m: &Machine) -> Result<Procs, String> {
    fio_procs_from_text_env(path, text, m, Default::default())
}

/// As `fio_procs_from_text`, with `${VAR}` values for the job file.
pub fn fio_procs_from_text_env(
    path: &str,
    text: &str,
    m: &Machine,
    vars: std::collections::BTreeMap<String, String>,
) -> Result<Procs, String> {
    let mut env = fio_env(m, vars);
    let mut files = std::collections::BTreeMap::new();
    files.insert(std::path::PathBuf::from(path), text.as_bytes().to_vec());
    env.files = Some(files);
    let jf = iostack_workload::parse_job_str(text, path, &env).map_err(|e| e.to_string())?;
    fio_procs(&jf, m)
}

/// The processes of a parsed fio job file: one per job clone (`numjobs`), each on
/// its own file (`jobname.N.0` in `directory`, or the `filename` given).
pub fn fio_procs(jf: &iostack_workload::JobFile, m: &Machine) -> Result<Procs, String> {
    use iostack_workload::{Amount, IoEngine, RwKind};
    let mut out = Procs {
        procs: Vec::new(),
        meta: Vec::new(),
        global_options: jf
            .global_options
            .iter()
            .map(|o| (o.name.clone(), o.value.clone().unwrap_or_default()))
            .collect(),
    };
    for j in &jf.jobs {
        let at = format!("{}:{}: job '{}'", j.file.display(), j.line, j.name);
        let (pattern, read_pct) = match j.rw.kind {
            RwKind::Read => (Pattern::Sequential, 100),
            RwKind::Write => (Pattern::Sequential, 0),
            RwKind::ReadWrite => (Pattern::Sequential, j.rwmix_read),
            RwKind::RandRead => (
                Pattern::Random {
                    norandommap: j.norandommap,
                },
                100,
            ),
            RwKind::RandWrite => (
                Pattern::Random {
                    norandommap: j.norandommap,
                },
                0,
            ),
            RwKind::RandRw => (
                Pattern::Random {
                    norandommap: j.norandommap,
                },
                j.rwmix_read,
            ),
            k => {
                return Err(format!(
                    "{at}: rw={} (trim) is not modelled yet",
                    k.as_str()
                ))
            }
        };
        if j.rw.modifier.is_some() {
            return Err(format!(
                "{at}: the rw=...:N offset modifier is not modelled yet"
            ));
        }
        let engine = match j.ioengine {
            IoEngine::Sync
            | IoEngine::Psync
            | IoEngine::Vsync
            | IoEngine::Pvsync
            | IoEngine::Pvsync2 => Engine::Sync,
            IoEngine::Libaio | IoEngine::IoUring | IoEngine::Posixaio => Engine::Async,
            e => return Err(format!("{at}: ioengine={} is not modelled", e.as_str())),
        };
        if j.time_based && j.runtime_ns == 0 {
            return Err(format!(
                "{at}: time_based without runtime= would never end; set runtime= (e.g. \
                 runtime=30s)"
            ));
        }
        let bytes = |a: &Amount, what: &str| match a {
            Amount::Bytes(b) => Ok(*b),
            _ => Err(format!(
                "{at}: {what} as a percentage or zones is not modelled yet"
            )),
        };
        let size = match &j.size {
            Some(a) => bytes(a, "size")?,
            None => {
                if j.files.iter().all(|f| f.starts_with("/dev/")) && !j.files.is_empty() {
                    m.device_capacity_bytes()
                } else {
                    return Err(format!("{at}: size= is needed for new files"));
                }
            }
        };
        let io_size = match &j.io_size {
            Some(a) => bytes(a, "io_size")?,
            None => size,
        };
        let offset = bytes(&j.offset, "offset")?;
        if !j.direct {
            // The page cache is modelled in whole pages; fio would run a
            // sub-page buffered job (read-modify-write of partial pages).
            let page = iostack_mm::PAGE_SIZE;
            for (what, v) in [
                ("bs (read)", j.bs.read),
                ("bs (write)", j.bs.write),
                ("offset", offset),
            ] {
                if v % page != 0 {
                    return Err(format!(
                        "{at}: direct=0 with {what}={v}: iostack models buffered I/O in \
                         whole {page}-byte pages"
                    ));
                }
            }
        }
        let offset_inc = bytes(&j.offset_increment, "offset_increment")?;
        let prioclass = j.prioclass.unwrap_or(2) as u8;
        let prio = j.prio.unwrap_or(4) as u8;
        for clone in 0..j.numjobs {
            let file = if let Some(f) = j.files.first() {
                f.clone()
            } else {
                let name = format!("{}.{}.0", j.name, clone);
                match &j.directory {
                    Some(d) => format!("{d}/{name}"),
                    None => name,
                }
            };
            let off = offset + offset_inc * clone as u64;
            let target = target_of(&file, off + size, m).map_err(|e| format!("{at}: {e}"))?;
            out.procs.push(ProcSpec {
                group: j.group_id,
                pattern,
                read_pct,
                bs: [j.bs.read, j.bs.write],
                offset: off,
                io_size,
                engine,
                iodepth: j.iodepth,
                runtime: (j.runtime_ns > 0).then_some(Duration(j.runtime_ns)),
                time_based: j.time_based,
                startdelay: Duration(j.startdelay_ns),
                stonewall: j.stonewall && clone == 0,
                ioprio: (prioclass, prio),
                direct: j.direct,
                // fio unlinks and recreates the file of a write-only job unless
                // `overwrite` is set (filesetup.c extend_file).
                fresh: read_pct == 0 && !j.overwrite && !file.starts_with("/dev/"),
                end_fsync: j.end_fsync,
                fsync_every: j.fsync as u64,
                ..ProcSpec::direct_reader("fio", &j.name, target, size)
            });
            out.meta.push(Some(JobMeta {
                name: j.name.clone(),
                group: j.group_id,
                options: j
                    .options
                    .iter()
                    .map(|o| (o.name.clone(), o.value.clone().unwrap_or_default()))
                    .collect(),
                group_reporting: j.group_reporting,
                iodepth: j.iodepth,
                sync_engine: engine == Engine::Sync,
                kb_base: j.kb_base,
            }));
        }
    }
    Ok(out)
}
