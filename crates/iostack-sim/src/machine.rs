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

#[derive(Clone, PartialEq, Eq)]
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
    /// 2.4's direct I/O maps one file-system block per `get_block` call
    /// (`generic_direct_IO`): CPU cost of one `ext2_get_block` of a mapped
    /// block (`ext2_block_to_path`, `ext2_get_branch` through the buffer
    /// hash), and the extra of one that allocates (`ext2_alloc_block` from
    /// the preallocation or `ext2_new_block`, `ext2_splice_branch`'s
    /// `mark_inode_dirty`).
    pub cpu_get_block_ns: u64,
    pub cpu_alloc_block_ns: u64,
    /// The file system on an LVM1 linear logical volume (2.4's `lvm.c`) over
    /// the partition (or the disk) as its one physical volume.
    pub lvm: Option<Lvm>,
}

/// LVM1's linear logical volume (2.4 `drivers/md/lvm.c`): `/dev/vg/lv`,
/// major 58 (`LVM_BLK_MAJOR`), minor 0 (the first LV of the first VG), all
/// the physical volume's extents, allocated in order from its first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lvm {
    /// `vg->pe_size`, sectors (vgcreate's default, 4 MiB).
    pub pe_sectors: u64,
    /// Sectors from the physical volume's start to its first extent (the
    /// VGDA before it; its size depends on pvcreate's and vgcreate's
    /// maxima, so it is a key, 0 unless set).
    pub pe_start: u64,
}

/// `LVM_BLK_MAJOR`.
pub const LVM_BLK_MAJOR: u32 = 58;

/// As derived, with the 2.4 `get_block` costs only when set, so that the
/// configuration hash of every machine without them is what it was before.
impl std::fmt::Debug for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Machine");
        d.field("name", &self.name)
            .field("device_preset", &self.device_preset)
            .field("device", &self.device)
            .field("disk_name", &self.disk_name)
            .field("disk", &self.disk)
            .field("partition", &self.partition)
            .field("fs", &self.fs)
            .field("fs_block_size", &self.fs_block_size)
            .field("mount", &self.mount)
            .field("cpus", &self.cpus)
            .field("irq_cpu", &self.irq_cpu)
            .field("cpu_syscall_ns", &self.cpu_syscall_ns)
            .field("cpu_page_ns", &self.cpu_page_ns)
            .field("cpu_bio_ns", &self.cpu_bio_ns)
            .field("cpu_wake_ns", &self.cpu_wake_ns)
            .field("scheduler", &self.scheduler)
            .field("mem_bytes", &self.mem_bytes)
            .field("mem_unavailable_bytes", &self.mem_unavailable_bytes)
            .field("cpu_copy_page_ns", &self.cpu_copy_page_ns)
            .field("cpu_wb_page_ns", &self.cpu_wb_page_ns);
        if self.cpu_get_block_ns != 0 || self.cpu_alloc_block_ns != 0 {
            d.field("cpu_get_block_ns", &self.cpu_get_block_ns)
                .field("cpu_alloc_block_ns", &self.cpu_alloc_block_ns);
        }
        if let Some(l) = &self.lvm {
            d.field("lvm", l);
        }
        d.finish()
    }
}

impl Machine {
    /// Device node of the partition holding the file system, or the disk.
    pub fn fs_dev(&self) -> DevT {
        if self.lvm.is_some() {
            return DevT::new(LVM_BLK_MAJOR, 0);
        }
        self.pv_dev()
    }
    /// The partition, or the disk: under LVM, its physical volume.
    pub fn pv_dev(&self) -> DevT {
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
         as hda, ext2 on hda1, 2 CPUs, 128 MiB",
    ),
    (
        "fc-san",
        "seed 003: a LUN of an enterprise array over one 4 Gb FC link (fc-array preset) \
         as sdb, ext3 on sdb1, 4 CPUs",
    ),
    (
        "sata-2010",
        "seed 003's SATA machine: a 2010 7200 rpm SATA disk with write cache (sata-2010 \
         preset) as sda, ext3 on sda1 at sector 2048, 4 CPUs",
    ),
    (
        "san-2010",
        "seed 003's SAN machine: a NetApp-like LUN over one 4 Gb FC link with NVRAM \
         (netapp-fc-2010 preset) as sdb, ext3 on sdb1, 4 CPUs",
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
    (
        "nvme-2024",
        "a datacenter NVMe SSD (nvme-pm9a3 preset) as nvme0n1, ext4 on nvme0n1p1, 8 CPUs \
         (8 hardware queues), 16 GiB of memory, scheduler none; for the 6.x profile",
    ),
];

fn base(name: &str, device_preset: &str) -> Result<Machine, MachineError> {
    let device = presets::lookup(device_preset)
        .ok_or_else(|| MachineError::new(unknown_device(device_preset)))?;
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
        cpu_get_block_ns: 0,
        cpu_alloc_block_ns: 0,
        lvm: None,
    })
}

fn unknown_device(name: &str) -> MachineErrorKind {
    MachineErrorKind::UnknownDevice {
        name: name.to_string(),
        known: presets::list()
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The scheduler a run gets without `--sched`: the machine's, or on a blk-mq
/// kernel whose machine names a legacy elevator the kernel's own default
/// (6.x `elevator_get_default`: mq-deadline for a device with one hardware
/// queue, none for several).
pub fn default_scheduler(m: &Machine, profile: iostack_core::Profile) -> String {
    // 2.4's queues all get ELEVATOR_LINUS (`blk_init_queue`).
    if profile == iostack_core::Profile::V2_4 {
        return "elevator_linus".to_string();
    }
    let has = iostack_iosched::find(&m.scheduler).is_some_and(|d| (d.in_profile)(profile));
    if profile.single_queue() || has {
        return m.scheduler.clone();
    }
    let dev = m
        .device
        .build(iostack_des::Rng::stream(iostack_des::Seed(0), "device"));
    if dev.nr_hw_queues() == 1 {
        "mq-deadline"
    } else {
        "none"
    }
    .to_string()
}

/// A preset machine by name.
pub fn preset(name: &str) -> Result<Machine, MachineError> {
    match name {
        "nvme-2024" => {
            let mut m = base(name, "nvme-pm9a3")?;
            m.disk_name = "nvme0n1".into();
            m.disk = DevT::new(259, 0);
            m.partition = Some((1, 2048));
            m.fs = FsKind::Ext4;
            m.cpus = 8;
            m.mem_bytes = 16 << 30;
            m.mem_unavailable_bytes = 1 << 30;
            // elevator_get_default: none for a device with several queues.
            m.scheduler = "none".into();
            Ok(m)
        }
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
            // Seed 004: "2-way SMP PII 450mhz with 128mbyte of ram".
            m.cpus = 2;
            m.mem_bytes = 128 << 20;
            // Kernel text, data and slabs of a 2.4 box (estimate).
            m.mem_unavailable_bytes = 16 << 20;
            m.cpu_syscall_ns = 5_000;
            m.cpu_wake_ns = 20_000;
            // 2.4 direct I/O on a PII 450 (about 2.2 ns a cycle), per step of
            // the mechanism [estimates from the code paths' lengths, not
            // measured]: map_user_kiobuf and unmap_kiobuf pin and release a
            // user page (page-table walk, get_page/put_page with locked
            // atomics: ~450 cycles); brw_kiovec fills a temporary buffer head
            // and submit_bh → generic_make_request → __make_request takes
            // io_request_lock and tries elevator_linus's merges (~900
            // cycles); ext2_get_block walks the indirect chain through
            // getblk's hash (~450 cycles) and, allocating, takes a block
            // from the preallocation or ext2_new_block's bitmap search
            // (amortised over 8) and marks the inode dirty (~700 cycles).
            m.cpu_page_ns = 1_000;
            m.cpu_bio_ns = 2_000;
            m.cpu_get_block_ns = 1_000;
            m.cpu_alloc_block_ns = 1_500;
            // Copying a 4 KiB page to or from user space on a PII 450 (about
            // 110 MB/s): calibrated on seed 004's buffered block write (12.1 %CPU
            // at 12999 K/s, nearly all of it copy); the other rows are predicted.
            m.cpu_copy_page_ns = 36_500;
            // Under 2.6 profiles; a 2.4 run gets elevator_linus (`default_scheduler`).
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
        "sata-2010" => base(name, "sata-2010"),
        "san-2010" => {
            let mut m = base(name, "netapp-fc-2010")?;
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
        _ => Err(MachineError::new(MachineErrorKind::UnknownMachine {
            name: name.to_string(),
            known: MACHINES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        })),
    }
}

/// An error in a machine file, a machine preset name or a machine-file line:
/// displays as `file:line: key 'k': message`, with the parts that are known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineError {
    /// The machine file (or the experiment file holding `machine_set`).
    pub file: Option<String>,
    /// 1-based line.
    pub line: Option<usize>,
    /// The key, when the error is about one.
    pub key: Option<String>,
    pub kind: MachineErrorKind,
}

/// What is wrong with a machine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MachineErrorKind {
    #[error("unknown machine '{name}' (presets: {known}; or give a machine file)")]
    UnknownMachine { name: String, known: String },
    #[error("unknown device preset '{name}' (known: {known})")]
    UnknownDevice { name: String, known: String },
    #[error("expected 'key = value', got '{0}'")]
    Syntax(String),
    #[error("unknown key (keys: base, {})", KEYS.iter().map(|k| k.name).collect::<Vec<_>>().join(", "))]
    UnknownKey,
    #[error("'base' must be the first key")]
    BaseNotFirst,
    #[error("expected an integer, got '{0}'")]
    NotInteger(String),
    #[error("{value} is out of range {min}..={max}{}", unit_suffix(unit))]
    OutOfRange {
        value: String,
        min: u64,
        max: u64,
        unit: &'static str,
    },
    /// A value the key does not accept, with the reason.
    #[error("{0}")]
    Invalid(String),
    #[error("empty machine file")]
    Empty,
}

fn unit_suffix(unit: &str) -> String {
    if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit}")
    }
}

impl MachineError {
    fn new(kind: MachineErrorKind) -> Self {
        MachineError {
            file: None,
            line: None,
            key: None,
            kind,
        }
    }
    /// The same error at `file` (and `line`, if given).
    pub fn at(mut self, file: &str, line: Option<usize>) -> Self {
        self.file = Some(file.to_string());
        self.line = line.or(self.line);
        self
    }
    fn key(mut self, key: &str) -> Self {
        self.key = Some(key.to_string());
        self
    }
}

impl fmt::Display for MachineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{file}:{line}: ")?,
            (Some(file), None) => write!(f, "{file}: ")?,
            _ => {}
        }
        match (&self.key, &self.kind) {
            (Some(k), MachineErrorKind::UnknownKey) => write!(f, "unknown key '{k}'")?,
            (Some(k), _) => write!(f, "key '{k}': ")?,
            _ => {}
        }
        match self.kind {
            MachineErrorKind::UnknownKey if self.key.is_some() => {
                let keys: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
                write!(f, " (keys: base, {})", keys.join(", "))
            }
            _ => write!(f, "{}", self.kind),
        }
    }
}

impl std::error::Error for MachineError {}

/// How a machine-file key takes its value.
#[derive(Clone, Copy)]
pub enum KeyValue {
    /// An integer in `min..=max` (in `unit`), refused outside it, never wrapped.
    Int {
        min: u64,
        max: u64,
        set: fn(&mut Machine, u64),
    },
    /// A word, checked by the setter; `values` says which.
    Text {
        values: &'static str,
        set: fn(&mut Machine, &str) -> Result<(), String>,
    },
}

/// One key of a machine file, declared once: parsing, ranges and errors come from
/// this table.
pub struct MachineKey {
    pub name: &'static str,
    /// Unit of an integer value (`ns`, `MiB`, `sectors`), empty for a count.
    pub unit: &'static str,
    pub value: KeyValue,
    pub doc: &'static str,
}

/// Largest major number: `MAJORBITS` is 12 (`include/linux/kdev_t.h`).
const MAX_MAJOR: u64 = (1 << 12) - 1;
/// Largest minor number: `MINORBITS` is 20.
const MAX_MINOR: u64 = (1 << 20) - 1;
/// `CONFIG_NR_CPUS` tops out at 8192 (x86 `MAXSMP`).
const MAX_CPUS: u64 = 8192;
/// A CPU cost or wake-up latency above one second is not a machine.
const MAX_COST_NS: u64 = 1_000_000_000;
/// 4 PiB: x86-64's `MAX_PHYSMEM_BITS` of 52 (five-level paging).
const MAX_MEM_MB: u64 = 1 << 32;

const fn cost(name: &'static str, set: fn(&mut Machine, u64), doc: &'static str) -> MachineKey {
    MachineKey {
        name,
        unit: "ns",
        value: KeyValue::Int {
            min: 0,
            max: MAX_COST_NS,
            set,
        },
        doc,
    }
}

const fn int(
    name: &'static str,
    unit: &'static str,
    (min, max): (u64, u64),
    set: fn(&mut Machine, u64),
    doc: &'static str,
) -> MachineKey {
    MachineKey {
        name,
        unit,
        value: KeyValue::Int { min, max, set },
        doc,
    }
}

const fn text(
    name: &'static str,
    values: &'static str,
    set: fn(&mut Machine, &str) -> Result<(), String>,
    doc: &'static str,
) -> MachineKey {
    MachineKey {
        name,
        unit: "",
        value: KeyValue::Text { values, set },
        doc,
    }
}

/// Every key of a machine file besides `base = PRESET`.
pub const KEYS: &[MachineKey] = &[
    text(
        "device",
        "a device preset",
        set_device,
        "device model preset (`iostack-device` presets)",
    ),
    text(
        "disk_name",
        "letters, digits, _",
        set_disk_name,
        "name of the disk node under /dev (sda, dasdc)",
    ),
    text(
        "mount",
        "an absolute directory",
        set_mount,
        "mount point of the file system (/mnt/test)",
    ),
    int(
        "major",
        "",
        (0, MAX_MAJOR),
        |m, v| m.disk.major = v as u32,
        "disk's major number",
    ),
    int(
        "minor",
        "",
        (0, MAX_MINOR),
        |m, v| m.disk.minor = v as u32,
        "disk's minor number",
    ),
    int(
        "partition_start",
        "sectors",
        (0, u64::MAX >> 9),
        |m, v| {
            let minor = m.partition.map_or(m.disk.minor + 1, |p| p.0);
            m.partition = Some((minor, v));
        },
        "first sector of partition 1 (must lie on the disk)",
    ),
    int(
        "partition_minor",
        "",
        (0, MAX_MINOR),
        |m, v| {
            let start = m.partition.map_or(2048, |p| p.1);
            m.partition = Some((v as u32, start));
        },
        "minor number of partition 1",
    ),
    text(
        "partition",
        "none",
        set_partition,
        "`none`: the file system is on the whole disk",
    ),
    text(
        "lvm",
        "none, linear",
        set_lvm,
        "`linear`: the file system on an LVM1 linear logical volume (58:0) over \
         partition 1 (or the disk) as its physical volume, `lvm_map` remapping \
         each buffer head (2.4 only)",
    ),
    int(
        "lvm_pe_size",
        "KiB",
        (8, 16 << 20),
        |m, v| {
            let l = m.lvm.get_or_insert(LVM_DEFAULT);
            l.pe_sectors = v * 2;
        },
        "LVM extent size (vgcreate -s; 4096 KiB by default; a power of two)",
    ),
    int(
        "lvm_pe_start",
        "sectors",
        (0, u64::MAX >> 9),
        |m, v| {
            let l = m.lvm.get_or_insert(LVM_DEFAULT);
            l.pe_start = v;
        },
        "sectors of the physical volume before its first extent (the VGDA)",
    ),
    text("fs", "ext2, ext3, ext4, xfs", set_fs, "file system"),
    text(
        "fs_block_size",
        "1024, 2048, 4096",
        set_fs_block_size,
        "file-system block size",
    ),
    int(
        "cpus",
        "",
        (1, MAX_CPUS),
        |m, v| m.cpus = v as u32,
        "number of CPUs",
    ),
    int(
        "irq_cpu",
        "",
        (0, MAX_CPUS - 1),
        |m, v| m.irq_cpu = v as u32,
        "CPU taking the disk's interrupts (below cpus)",
    ),
    cost(
        "cpu_syscall_ns",
        |m, v| m.cpu_syscall_ns = v,
        "CPU cost of entering read/write",
    ),
    cost(
        "cpu_page_ns",
        |m, v| m.cpu_page_ns = v,
        "CPU cost per user page pinned for O_DIRECT",
    ),
    cost(
        "cpu_bio_ns",
        |m, v| m.cpu_bio_ns = v,
        "CPU cost of one bio through submit_bio",
    ),
    cost(
        "cpu_wake_ns",
        |m, v| m.cpu_wake_ns = v,
        "wake-up latency of a task whose I/O completed",
    ),
    cost(
        "cpu_copy_page_ns",
        |m, v| m.cpu_copy_page_ns = v,
        "CPU cost of copying a page to or from the page cache",
    ),
    cost(
        "cpu_wb_page_ns",
        |m, v| m.cpu_wb_page_ns = v,
        "CPU cost of one page through write_cache_pages",
    ),
    cost(
        "cpu_get_block_ns",
        |m, v| m.cpu_get_block_ns = v,
        "CPU cost of one get_block of 2.4's per-block direct I/O",
    ),
    cost(
        "cpu_alloc_block_ns",
        |m, v| m.cpu_alloc_block_ns = v,
        "extra CPU cost of a get_block that allocates (2.4 direct I/O)",
    ),
    int(
        "mem_mb",
        "MiB",
        (1, MAX_MEM_MB),
        |m, v| m.mem_bytes = v << 20,
        "memory (MemTotal)",
    ),
    int(
        "mem_unavailable_mb",
        "MiB",
        (0, MAX_MEM_MB),
        |m, v| m.mem_unavailable_bytes = v << 20,
        "memory that is not page cache (below mem_mb)",
    ),
    text(
        "scheduler",
        "a scheduler name",
        set_scheduler,
        "default I/O scheduler",
    ),
    text(
        "ssd_op_permille",
        "an integer 1..=10000",
        |m, v| {
            set_ftl(m, "ssd_op_permille", v, (1, 10_000), |f, x| {
                f.op_permille = x as u32
            })
        },
        "SSD over-provisioning: physical flash beyond the exported capacity, in \
         thousandths of it (an SSD device)",
    ),
    text(
        "ssd_pages_per_block",
        "an integer 1..=65536",
        |m, v| {
            set_ftl(m, "ssd_pages_per_block", v, (1, 65_536), |f, x| {
                f.pages_per_block = x as u32
            })
        },
        "SSD flash pages per erase block on one die (an SSD device)",
    ),
    text(
        "ssd_program_ns",
        "nanoseconds 1..=1e9",
        |m, v| {
            set_ftl(m, "ssd_program_ns", v, (1, 1_000_000_000), |f, x| {
                f.program_ns = x
            })
        },
        "SSD flash page program time tPROG (an SSD device)",
    ),
    text(
        "ssd_erase_ns",
        "nanoseconds 1..=1e10",
        |m, v| {
            set_ftl(m, "ssd_erase_ns", v, (1, 10_000_000_000), |f, x| {
                f.erase_ns = x
            })
        },
        "SSD flash block erase time tBERS (an SSD device)",
    ),
];

/// A key of the SSD's flash translation layer: refused for another device.
fn set_ftl(
    m: &mut Machine,
    key: &str,
    v: &str,
    (min, max): (u64, u64),
    set: fn(&mut iostack_device::ftl::FtlParams, u64),
) -> Result<(), String> {
    let x: u64 = v
        .parse()
        .ok()
        .filter(|x| (min..=max).contains(x))
        .ok_or_else(|| format!("'{v}' is not an integer in {min}..={max}"))?;
    match &mut m.device {
        DeviceSpec::Ssd(p) => match p.ftl.as_mut() {
            Some(f) => {
                set(f, x);
                Ok(())
            }
            None => Err(format!("{key}: the device has no flash translation layer")),
        },
        _ => Err(format!(
            "{key} applies to an SSD device; '{}' is not one",
            m.device_preset
        )),
    }
}

fn set_device(m: &mut Machine, v: &str) -> Result<(), String> {
    m.device = presets::lookup(v).ok_or_else(|| unknown_device(v).to_string())?;
    m.device_preset = v.to_string();
    Ok(())
}

fn set_disk_name(m: &mut Machine, v: &str) -> Result<(), String> {
    let ok = !v.is_empty() && v.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
    if !ok {
        return Err(format!("'{v}' is not a device name like sda or dasdc"));
    }
    m.disk_name = v.to_string();
    Ok(())
}

fn set_mount(m: &mut Machine, v: &str) -> Result<(), String> {
    if !v.starts_with('/') || v.len() < 2 || v.ends_with('/') {
        return Err(format!("'{v}' is not an absolute directory like /mnt/test"));
    }
    m.mount = v.to_string();
    Ok(())
}

fn set_partition(m: &mut Machine, v: &str) -> Result<(), String> {
    if v != "none" {
        return Err(format!(
            "'{v}': only 'none' (use partition_start and partition_minor for a partition)"
        ));
    }
    m.partition = None;
    Ok(())
}

/// vgcreate's default extent size, 4 MiB.
const LVM_DEFAULT: Lvm = Lvm {
    pe_sectors: 8192,
    pe_start: 0,
};

fn set_lvm(m: &mut Machine, v: &str) -> Result<(), String> {
    m.lvm = match v {
        "none" => None,
        "linear" => Some(m.lvm.unwrap_or(LVM_DEFAULT)),
        _ => return Err(format!("'{v}': none or linear")),
    };
    Ok(())
}

fn set_fs(m: &mut Machine, v: &str) -> Result<(), String> {
    m.fs = match v {
        "ext2" => FsKind::Ext2,
        "ext3" => FsKind::Ext3,
        "ext4" => FsKind::Ext4,
        "xfs" => FsKind::Xfs,
        _ => return Err(format!("unsupported '{v}' (ext2, ext3, ext4, xfs)")),
    };
    Ok(())
}

fn set_fs_block_size(m: &mut Machine, v: &str) -> Result<(), String> {
    m.fs_block_size = match v {
        "1024" => 1024,
        "2048" => 2048,
        "4096" => 4096,
        _ => return Err(format!("{v} is not 1024, 2048 or 4096")),
    };
    Ok(())
}

fn set_scheduler(m: &mut Machine, v: &str) -> Result<(), String> {
    if v.is_empty() || !v.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-') {
        return Err(format!("'{v}' is not a scheduler name"));
    }
    m.scheduler = v.to_string();
    Ok(())
}

/// Parse an integer for a key with a declared range; a value outside the range
/// (including one past u64) is refused, never wrapped or truncated.
fn parse_int(v: &str, min: u64, max: u64, unit: &'static str) -> Result<u64, MachineErrorKind> {
    if v.is_empty() || !v.bytes().all(|c| c.is_ascii_digit()) {
        return Err(MachineErrorKind::NotInteger(v.to_string()));
    }
    let range = || MachineErrorKind::OutOfRange {
        value: v.to_string(),
        min,
        max,
        unit,
    };
    let n: u64 = v.parse().map_err(|_| range())?;
    if n < min || n > max {
        return Err(range());
    }
    Ok(n)
}

/// Apply one `key = value` assignment (not `base`) to a machine.
pub fn apply(m: &mut Machine, key: &str, value: &str) -> Result<(), MachineError> {
    let err = |kind| MachineError::new(kind).key(key);
    let Some(def) = KEYS.iter().find(|d| d.name == key) else {
        return Err(err(MachineErrorKind::UnknownKey));
    };
    match def.value {
        KeyValue::Int { min, max, set } => {
            set(m, parse_int(value, min, max, def.unit).map_err(err)?)
        }
        KeyValue::Text { set, .. } => {
            set(m, value).map_err(|e| err(MachineErrorKind::Invalid(e)))?
        }
    }
    Ok(())
}

/// Split a machine-file line into `(key, value)`; `None` for a blank or comment
/// line.
pub fn split_line(raw: &str) -> Result<Option<(&str, &str)>, MachineError> {
    let line = raw.split('#').next().unwrap_or("").trim();
    if line.is_empty() {
        return Ok(None);
    }
    let (k, v) = line
        .split_once('=')
        .ok_or_else(|| MachineError::new(MachineErrorKind::Syntax(line.to_string())))?;
    Ok(Some((k.trim(), v.trim())))
}

/// Checks across keys, made once the whole machine is known.
pub fn validate(m: &Machine) -> Result<(), MachineError> {
    let bad =
        |key: &str, msg: String| Err(MachineError::new(MachineErrorKind::Invalid(msg)).key(key));
    if m.irq_cpu >= m.cpus {
        return bad(
            "irq_cpu",
            format!("irq_cpu {} but only {} CPUs", m.irq_cpu, m.cpus),
        );
    }
    if m.mem_unavailable_bytes >= m.mem_bytes {
        return bad(
            "mem_unavailable_mb",
            format!(
                "{} MiB leaves no page cache in {} MiB of memory",
                m.mem_unavailable_bytes >> 20,
                m.mem_bytes >> 20
            ),
        );
    }
    if let Some((minor, _)) = m.partition {
        if u64::from(minor) > MAX_MINOR {
            return bad(
                "partition_minor",
                format!("{minor} is out of range 0..={MAX_MINOR}"),
            );
        }
        if minor == m.disk.minor {
            return bad(
                "partition_minor",
                format!("{minor} is the disk's own minor number"),
            );
        }
    }
    Ok(())
}

/// The machine-file reference (`docs/machine.md`), generated from `KEYS`.
pub fn keys_markdown() -> String {
    let mut s = String::from(
        "# Machine files\n\nGenerated from `iostack_sim::machine::KEYS` (do not edit; a test \
         checks it is current). A machine file is `key = value` lines with `#` comments; \
         `base = PRESET` (first) starts from a preset, else `sata-2009`. A value outside \
         its range is refused with `file:line: key 'name': ...`, never wrapped.\n\n\
         | key | unit | values | description |\n|---|---|---|---|\n| `base` | | ",
    );
    let presets: Vec<&str> = MACHINES.iter().map(|(n, _)| *n).collect();
    s.push_str(&format!(
        "{} | preset to start from |\n",
        presets.join(", ")
    ));
    for k in KEYS {
        let values = match k.value {
            KeyValue::Int { min, max, .. } => format!("{min}..={max}"),
            KeyValue::Text { values, .. } => values.to_string(),
        };
        s.push_str(&format!(
            "| `{}` | {} | {values} | {} |\n",
            k.name, k.unit, k.doc
        ));
    }
    s
}

/// Parse a machine file: `key = value` lines, `#` comments. `base = PRESET` (first)
/// starts from a preset (else `sata-2009`); every other key overrides one field
/// (`KEYS`).
pub fn parse_file(path: &str, text: &str) -> Result<Machine, MachineError> {
    let mut m: Option<Machine> = None;
    for (i, raw) in text.lines().enumerate() {
        let at = |e: MachineError| e.at(path, Some(i + 1));
        let Some((k, v)) = split_line(raw).map_err(at)? else {
            continue;
        };
        if k == "base" {
            if m.is_some() {
                return Err(at(MachineError::new(MachineErrorKind::BaseNotFirst)));
            }
            m = Some(preset(v).map_err(|e| at(e.key("base")))?);
            continue;
        }
        let mm = m.get_or_insert_with(|| preset("sata-2009").expect("built-in preset"));
        apply(mm, k, v).map_err(at)?;
    }
    let mut m = m.ok_or_else(|| MachineError::new(MachineErrorKind::Empty).at(path, None))?;
    validate(&m).map_err(|e| e.at(path, None))?;
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
        assert!(
            e.to_string()
                .starts_with("m.txt:2: unknown key 'bogus' (keys: base, device,"),
            "{e}"
        );
        assert_eq!((e.line, e.key.as_deref()), (Some(2), Some("bogus")));
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

    /// Issue 11: `cpu_wake_ns = 18446744073709551615` overflowed simulated time.
    #[test]
    fn huge_wake_latency_is_refused_at_its_line() {
        let e = parse_file(
            "m.txt",
            "base = null\n\ncpu_wake_ns = 18446744073709551615\n",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "m.txt:3: key 'cpu_wake_ns': 18446744073709551615 is out of range \
             0..=1000000000 ns"
        );
        assert_eq!(
            (e.file.as_deref(), e.line, e.key.as_deref()),
            (Some("m.txt"), Some(3), Some("cpu_wake_ns"))
        );
        // One past u64 is out of range too, not "not an integer".
        let e = parse_file("m.txt", "cpu_bio_ns = 18446744073709551616\n").unwrap_err();
        assert!(matches!(e.kind, MachineErrorKind::OutOfRange { .. }), "{e}");
    }

    /// Issue 11: `mem_mb`, `cpus`, `major` and `minor` wrapped or truncated.
    #[test]
    fn values_that_would_wrap_are_refused() {
        for (line, key) in [
            ("mem_mb = 17592186044416", "mem_mb"),
            ("mem_unavailable_mb = 17592186044416", "mem_unavailable_mb"),
            ("cpus = 4294967297", "cpus"),
            ("cpus = 0", "cpus"),
            ("major = 4294967304", "major"),
            ("major = 4096", "major"),
            ("minor = 4294967296", "minor"),
            ("partition_minor = 4294967297", "partition_minor"),
            ("irq_cpu = 4294967296", "irq_cpu"),
            ("partition_start = 18446744073709551615", "partition_start"),
        ] {
            let e = parse_file("w.m", &format!("base = null\n{line}\n")).unwrap_err();
            assert_eq!((e.line, e.key.as_deref()), (Some(2), Some(key)), "{e}");
            assert!(
                e.to_string().starts_with(&format!("w.m:2: key '{key}': ")),
                "{e}"
            );
            assert!(matches!(e.kind, MachineErrorKind::OutOfRange { .. }), "{e}");
        }
        // The largest values in range are kept exactly.
        let m = parse_file(
            "w.m",
            "major = 4095\nminor = 1048575\npartition_minor = 1\ncpus = 8192\nmem_mb = 4294967296\n",
        )
        .unwrap();
        assert_eq!((m.disk.major, m.disk.minor, m.cpus), (4095, 1048575, 8192));
        assert_eq!(m.mem_bytes, 1 << 52);
    }

    #[test]
    fn checks_across_keys_name_the_key() {
        let e = parse_file("x.m", "base = null\nirq_cpu = 2\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.m: key 'irq_cpu': irq_cpu 2 but only 2 CPUs"
        );
        let e = parse_file("x.m", "mem_mb = 512\nmem_unavailable_mb = 512\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("mem_unavailable_mb"), "{e}");
        let e = parse_file("x.m", "minor = 1\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("partition_minor"), "{e}");
        let e = parse_file("x.m", "cpus = 2\nbase = null\n").unwrap_err();
        assert_eq!(e.to_string(), "x.m:2: 'base' must be the first key");
        let e = parse_file("x.m", "# nothing\n").unwrap_err();
        assert_eq!(e.to_string(), "x.m: empty machine file");
        let e = parse_file("x.m", "base = vax\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("x.m:1: key 'base': unknown machine 'vax'"),
            "{e}"
        );
        let e = parse_file("x.m", "disk_name = ../sda\n").unwrap_err();
        assert!(e.to_string().starts_with("x.m:1: key 'disk_name'"), "{e}");
    }

    #[test]
    fn the_machine_reference_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/machine.md");
        if std::env::var("IOSTACK_BLESS").as_deref() == Ok("1") {
            std::fs::write(&path, keys_markdown()).unwrap();
        }
        let doc = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            doc == keys_markdown(),
            "docs/machine.md is stale: IOSTACK_BLESS=1 cargo test -p iostack-sim --lib machine"
        );
    }
}
