//! A simulated machine: one disk with its device model, an optional partition, a
//! file system mounted at `/mnt/test`, CPUs and the CPU cost of the kernel paths.
//! Machines are presets or `key = value` files.

use iostack_core::DevT;
use iostack_device::presets;
use iostack_device::DeviceSpec;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsKind {
    Ext2,
    Ext3,
    Ext4,
    Xfs,
}

impl FsKind {
    pub fn name(self) -> &'static str {
        match self {
            FsKind::Ext2 => "ext2",
            FsKind::Ext3 => "ext3",
            FsKind::Ext4 => "ext4",
            FsKind::Xfs => "xfs",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    pub name: String,
    pub device_preset: String,
    pub device: DeviceSpec,
    /// Name of the disk node under /dev (`sda`, `dasdc`, ...).
    pub disk_name: String,
    pub disk: DevT,
    /// Partition 1: minor and start sector; `None` puts the file system on the disk.
    pub partition: Option<(u32, u64)>,
    pub fs: FsKind,
    pub fs_block_size: u32,
    pub mount: String,
    pub cpus: u32,
    pub irq_cpu: u32,
    /// CPU cost of entering a read/write system call.
    pub cpu_syscall_ns: u64,
    /// CPU cost per user page pinned and mapped by the direct-I/O path.
    pub cpu_page_ns: u64,
    /// CPU cost of one bio through `submit_bio` (including its trace points).
    pub cpu_bio_ns: u64,
    /// Wake-up latency of a task whose I/O completed.
    pub cpu_wake_ns: u64,
    /// Default I/O scheduler.
    pub scheduler: String,
    /// Memory of the machine (`MemTotal`), and the part that is not page cache
    /// (kernel, processes), which `determine_dirtyable_memory` leaves out.
    pub mem_bytes: u64,
    pub mem_unavailable_bytes: u64,
    /// CPU cost of copying one 4 KiB page between user space and the page cache.
    pub cpu_copy_page_ns: u64,
    /// CPU cost of one page through `write_cache_pages` and `->writepage`.
    pub cpu_wb_page_ns: u64,
}

impl Machine {
    /// Device node of the partition holding the file system, or the disk.
    pub fn fs_dev(&self) -> DevT {
        match self.partition {
            Some((minor, _)) => DevT::new(self.disk.major, minor),
            None => self.disk,
        }
    }
    pub fn part_name(&self) -> Option<String> {
        self.partition.map(|_| {
            if self.disk_name.starts_with("dasd") {
                format!("{}1", self.disk_name)
            } else if self.disk_name.ends_with(|c: char| c.is_ascii_digit()) {
                format!("{}p1", self.disk_name)
            } else {
                format!("{}1", self.disk_name)
            }
        })
    }
    /// Size of the disk in bytes.
    pub fn device_capacity_bytes(&self) -> u64 {
        self.device
            .build(iostack_des::Rng::stream(iostack_des::Seed(0), "probe"))
            .capacity_sectors()
            * 512
    }
    /// Canonical text for the configuration hash.
    pub fn canonical(&self) -> String {
        format!("{self:?}")
    }
}

/// Preset machines: (name, description).
pub const MACHINES: &[(&str, &str)] = &[
    (
        "s390-ess",
        "seed 002: s390 LPAR, 16 CPUs, DASD 94,8 (dasdc) on an enterprise storage server, \
         ext2 on partition 94,9 starting at sector 192",
    ),
    (
        "sata-2009",
        "2009-era desktop: 7200 rpm SATA disk (sata-2009 preset) as sda, ext3 on sda1 at \
         sector 2048, 4 CPUs",
    ),
    (
        "ide-2001",
        "seed 004: Pentium II 450 with a 2001-era 5400 rpm IDE disk (ide-2001 preset) \
         as hda, ext2 on hda1, 1 CPU",
    ),
    (
        "fc-san",
        "seed 003: a LUN of an enterprise array over one 4 Gb FC link (fc-array preset) \
         as sdb, ext3 on sdb1, 4 CPUs",
    ),
    (
        "raid0-2008",
        "seed 001: a 2008 server with a 4-drive hardware RAID0 (raid0-4x-2008 preset) as \
         sdb, ext4 on the whole array, 4 CPUs, 4 GiB of memory",
    ),
    (
        "null",
        "null block device nullb0 (1 us per command, depth 256), ext2 on the whole disk, \
         2 CPUs",
    ),
];

fn base(name: &str, device_preset: &str) -> Result<Machine, MachineError> {
    let device = presets::lookup(device_preset).ok_or_else(|| MachineError {
        at: String::new(),
        msg: format!(
            "unknown device preset '{device_preset}' (known: {})",
            presets::list()
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })?;
    Ok(Machine {
        name: name.to_string(),
        device_preset: device_preset.to_string(),
        device,
        disk_name: "sda".into(),
        disk: DevT::new(8, 0),
        partition: Some((1, 2048)),
        fs: FsKind::Ext3,
        fs_block_size: 4096,
        mount: "/mnt/test".into(),
        cpus: 4,
        irq_cpu: 0,
        cpu_syscall_ns: 1_000,
        cpu_page_ns: 200,
        cpu_bio_ns: 2_000,
        cpu_wake_ns: 5_000,
        // CFQ was the default elevator of 2.6.18 to 2.6.x distributions.
        scheduler: "cfq".into(),
        mem_bytes: 4 << 30,
        mem_unavailable_bytes: 256 << 20,
        // A 2008-era core copies about 4 GB/s: 1 us per 4 KiB page.
        cpu_copy_page_ns: 1_000,
        cpu_wb_page_ns: 1_000,
    })
}

/// A preset machine by name.
pub fn preset(name: &str) -> Result<Machine, MachineError> {
    match name {
        "s390-ess" => {
            let mut m = base(name, "ess-dasd")?;
            m.disk_name = "dasdc".into();
            m.disk = DevT::new(94, 8);
            m.partition = Some((9, 192));
            m.fs = FsKind::Ext2;
            m.cpus = 16;
            m.irq_cpu = 12;
            // Seed 002: consecutive bios are queued 6-7 us apart on this LPAR.
            m.cpu_syscall_ns = 8_000;
            m.cpu_page_ns = 0;
            m.cpu_bio_ns = 6_000;
            m.cpu_wake_ns = 10_000;
            m.scheduler = "deadline".into();
            Ok(m)
        }
        "sata-2009" => base(name, "sata-2009"),
        "ide-2001" => {
            let mut m = base(name, "ide-2001")?;
            m.disk_name = "hda".into();
            m.disk = DevT::new(3, 0);
            m.partition = Some((1, 63));
            m.fs = FsKind::Ext2;
            m.cpus = 1;
            m.cpu_syscall_ns = 5_000;
            m.cpu_page_ns = 1_000;
            m.cpu_bio_ns = 10_000;
            m.cpu_wake_ns = 20_000;
            // 2.4's elevator is not modelled; deadline is the nearest stand-in.
            m.scheduler = "deadline".into();
            Ok(m)
        }
        "fc-san" => {
            let mut m = base(name, "fc-array")?;
            m.disk_name = "sdb".into();
            m.disk = DevT::new(8, 16);
            m.partition = Some((17, 2048));
            Ok(m)
        }
        "raid0-2008" => {
            let mut m = base(name, "raid0-4x-2008")?;
            m.disk_name = "sdb".into();
            m.disk = DevT::new(8, 16);
            m.partition = None;
            m.fs = FsKind::Ext4;
            m.mem_bytes = 4 << 30;
            m.mem_unavailable_bytes = 512 << 20;
            // The seed's kernel (2.6.27 with the ext4 patch queue) defaulted to CFQ.
            m.scheduler = "cfq".into();
            Ok(m)
        }
        "null" => {
            let mut m = base(name, "null")?;
            m.disk_name = "nullb0".into();
            m.disk = DevT::new(251, 0);
            m.partition = None;
            m.fs = FsKind::Ext2;
            m.cpus = 2;
            m.cpu_syscall_ns = 300;
            m.cpu_page_ns = 50;
            m.cpu_bio_ns = 300;
            m.cpu_wake_ns = 1_000;
            m.scheduler = "noop".into();
            Ok(m)
        }
        _ => Err(MachineError {
            at: String::new(),
            msg: format!(
                "unknown machine '{name}' (presets: {}; or give a machine file)",
                MACHINES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineError {
    /// `file:line` or empty.
    pub at: String,
    pub msg: String,
}

impl fmt::Display for MachineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.at.is_empty() {
            write!(f, "{}", self.msg)
        } else {
            write!(f, "{}: {}", self.at, self.msg)
        }
    }
}

impl std::error::Error for MachineError {}

/// Parse a machine file: `key = value` lines, `#` comments. `base = PRESET` (first)
/// starts from a preset; every other key overrides one field.
pub fn parse_file(path: &str, text: &str) -> Result<Machine, MachineError> {
    let mut m: Option<Machine> = None;
    for (i, raw) in text.lines().enumerate() {
        let at = format!("{path}:{}", i + 1);
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let err = |msg: String| MachineError {
            at: at.clone(),
            msg,
        };
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| err(format!("expected 'key = value', got '{line}'")))?;
        let (k, v) = (k.trim(), v.trim());
        if k == "base" {
            if m.is_some() {
                return Err(err("'base' must be the first key".into()));
            }
            m = Some(preset(v).map_err(|e| err(e.msg))?);
            continue;
        }
        let mm = m.get_or_insert_with(|| preset("sata-2009").expect("built-in preset"));
        let num = |v: &str| -> Result<u64, MachineError> {
            v.parse::<u64>()
                .map_err(|_| err(format!("key '{k}': expected an integer, got '{v}'")))
        };
        match k {
            "device" => {
                mm.device = presets::lookup(v)
                    .ok_or_else(|| err(format!("key 'device': unknown device preset '{v}'")))?;
                mm.device_preset = v.to_string();
            }
            "disk_name" => mm.disk_name = v.to_string(),
            "mount" => {
                if !v.starts_with('/') || v.len() < 2 || v.ends_with('/') {
                    return Err(err(format!(
                        "key 'mount': '{v}' is not an absolute directory like /mnt/test"
                    )));
                }
                mm.mount = v.to_string();
            }
            "major" => mm.disk.major = num(v)? as u32,
            "minor" => mm.disk.minor = num(v)? as u32,
            "partition_start" => {
                let minor = mm.partition.map(|p| p.0).unwrap_or(mm.disk.minor + 1);
                mm.partition = Some((minor, num(v)?));
            }
            "partition_minor" => {
                let start = mm.partition.map(|p| p.1).unwrap_or(2048);
                mm.partition = Some((num(v)? as u32, start));
            }
            "partition" if v == "none" => mm.partition = None,
            "fs" => {
                mm.fs = match v {
                    "ext2" => FsKind::Ext2,
                    "ext3" => FsKind::Ext3,
                    "ext4" => FsKind::Ext4,
                    "xfs" => FsKind::Xfs,
                    _ => {
                        return Err(err(format!(
                            "key 'fs': unsupported '{v}' (ext2, ext3, ext4, xfs)"
                        )))
                    }
                }
            }
            "fs_block_size" => {
                let b = num(v)?;
                if !(b == 1024 || b == 2048 || b == 4096) {
                    return Err(err(format!(
                        "key 'fs_block_size': {b} is not 1024, 2048 or 4096"
                    )));
                }
                mm.fs_block_size = b as u32;
            }
            "cpus" => mm.cpus = num(v)?.max(1) as u32,
            "irq_cpu" => mm.irq_cpu = num(v)? as u32,
            "cpu_syscall_ns" => mm.cpu_syscall_ns = num(v)?,
            "cpu_page_ns" => mm.cpu_page_ns = num(v)?,
            "cpu_bio_ns" => mm.cpu_bio_ns = num(v)?,
            "cpu_wake_ns" => mm.cpu_wake_ns = num(v)?,
            "cpu_copy_page_ns" => mm.cpu_copy_page_ns = num(v)?,
            "cpu_wb_page_ns" => mm.cpu_wb_page_ns = num(v)?,
            "mem_mb" => mm.mem_bytes = num(v)? << 20,
            "mem_unavailable_mb" => mm.mem_unavailable_bytes = num(v)? << 20,
            "scheduler" => mm.scheduler = v.to_string(),
            _ => return Err(err(format!("unknown key '{k}'"))),
        }
    }
    let mut m = m.ok_or_else(|| MachineError {
        at: path.to_string(),
        msg: "empty machine file".into(),
    })?;
    if m.irq_cpu >= m.cpus {
        return Err(MachineError {
            at: path.to_string(),
            msg: format!("irq_cpu {} but only {} CPUs", m.irq_cpu, m.cpus),
        });
    }
    m.name = path.to_string();
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_errors_name_line_and_key() {
        let e = parse_file("m.txt", "base = null\ncpus = x\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "m.txt:2: key 'cpus': expected an integer, got 'x'"
        );
        let e = parse_file("m.txt", "base = null\nbogus = 1\n").unwrap_err();
        assert_eq!(e.to_string(), "m.txt:2: unknown key 'bogus'");
        let e = parse_file("m.txt", "base = null\nmount = rel\n").unwrap_err();
        assert!(e.to_string().starts_with("m.txt:2: key 'mount'"), "{e}");
        let m = parse_file("m.txt", "base = null\nmount = /mnt/sdc\n").unwrap();
        assert_eq!(m.mount, "/mnt/sdc");
        let e = parse_file("m.txt", "base = null\nfs = zfs\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("m.txt:2: key 'fs': unsupported 'zfs'"),
            "{e}"
        );
        let e = parse_file("m.txt", "base = null\nmem_mb = lots\n").unwrap_err();
        assert!(e.to_string().starts_with("m.txt:2: key 'mem_mb'"), "{e}");
        let m = parse_file("m.txt", "base = raid0-2008\nfs = xfs\nmem_mb = 1024\n").unwrap();
        assert_eq!((m.fs, m.mem_bytes), (FsKind::Xfs, 1 << 30));
        let m = parse_file("m.txt", "base = s390-ess\n# c\ncpu_bio_ns = 7\n").unwrap();
        assert_eq!(m.cpu_bio_ns, 7);
        assert_eq!(m.partition, Some((9, 192)));
    }
}
