//! What a user chooses from, generated from the registries the simulation reads:
//! machine presets with their devices (`iostack_sim::machine::MACHINES`,
//! `iostack_device::presets`), kernel profiles (`Profile::ALL`) and I/O
//! schedulers (`iostack_iosched::SCHEDULERS`). `iostack machines`,
//! docs/presets.md and the Python package's `iostack.machines()`,
//! `iostack.profiles()` and `iostack.schedulers()` are all made here, so none
//! of them is a list kept by hand.

use crate::commands::Result;
use crate::out::CliError;
use iostack_core::{Profile, Tunables};
use iostack_device::DeviceSpec;
use iostack_sim::machine::{self, Machine};
use iostack_sim::SimError;
use serde_json::{json, Map, Value};

/// The kind of device model a spec builds, and its parameters as JSON.
fn device_params(spec: &DeviceSpec) -> (&'static str, Value) {
    let v = match spec {
        DeviceSpec::Fixed(p) => ("fixed", serde_json::to_value(p)),
        DeviceSpec::Hdd(p) => ("hdd", serde_json::to_value(p)),
        DeviceSpec::Raid0(p) => ("raid0", serde_json::to_value(p)),
        DeviceSpec::FcLun(p) => ("fc-lun", serde_json::to_value(p)),
        DeviceSpec::Ssd(p) => ("ssd", serde_json::to_value(p)),
    };
    (v.0, v.1.unwrap_or(Value::Null))
}

/// Nested objects as dotted keys (`limits.max_hw_sectors`, `member.rpm`).
fn flatten(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        x => {
            out.insert(prefix.to_string(), x.clone());
        }
    }
}

/// Every device preset: name, model kind, description (with its sources) and
/// parameters (flattened).
pub fn devices() -> Vec<Value> {
    iostack_device::presets::list()
        .into_iter()
        .filter_map(|(name, doc)| {
            let spec = iostack_device::presets::lookup(&name)?;
            let (kind, params) = device_params(&spec);
            let mut flat = Map::new();
            flatten("", &params, &mut flat);
            Some(json!({"device": name, "kind": kind, "source": doc, "params": flat}))
        })
        .collect()
}

/// What the block layer sees of a device: the built model's answers.
fn device_view(spec: &DeviceSpec) -> Map<String, Value> {
    let d = spec.build(iostack_des::Rng::stream(iostack_des::Seed(0), "device"));
    let l = d.hw_limits();
    let v = json!({
        "queue_depth": d.queue_depth(),
        "nr_hw_queues": d.nr_hw_queues(),
        "rotational": d.rotational(),
        "write_cache": d.write_cache(),
        "fua": d.fua(),
        "capacity_bytes": d.capacity_sectors() * 512,
        "max_hw_sectors_kb": l.max_hw_sectors / 2,
    });
    v.as_object().cloned().unwrap_or_default()
}

/// One machine as a row: its name and description, the machine-file keys'
/// values, its device and what the block layer sees of it.
pub fn machine_row(m: &Machine, description: &str) -> Value {
    let part = match (m.partition, m.part_name()) {
        (Some((minor, start)), Some(name)) => {
            json!(format!(
                "{name} ({},{minor}) from sector {start}",
                m.disk.major
            ))
        }
        _ => Value::Null,
    };
    let (kind, _) = device_params(&m.device);
    let mut row = json!({
        "machine": m.name,
        "description": description,
        "device": m.device_preset,
        "device_kind": kind,
        "disk": m.disk_name,
        "dev": format!("{},{}", m.disk.major, m.disk.minor),
        "partition": part,
        "fs": m.fs.name(),
        "fs_block_size": m.fs_block_size,
        "mount": m.mount,
        "cpus": m.cpus,
        "irq_cpu": m.irq_cpu,
        "mem_mb": m.mem_bytes >> 20,
        "mem_unavailable_mb": m.mem_unavailable_bytes >> 20,
        "scheduler": m.scheduler,
        "cpu_syscall_ns": m.cpu_syscall_ns,
        "cpu_page_ns": m.cpu_page_ns,
        "cpu_bio_ns": m.cpu_bio_ns,
        "cpu_wake_ns": m.cpu_wake_ns,
        "cpu_copy_page_ns": m.cpu_copy_page_ns,
        "cpu_wb_page_ns": m.cpu_wb_page_ns,
        "cpu_get_block_ns": m.cpu_get_block_ns,
        "cpu_alloc_block_ns": m.cpu_alloc_block_ns,
    });
    if let Value::Object(o) = &mut row {
        o.extend(device_view(&m.device));
        let source = iostack_device::presets::list()
            .into_iter()
            .find(|(n, _)| *n == m.device_preset)
            .map(|(_, d)| d);
        o.insert("device_source".into(), json!(source));
    }
    row
}

/// Every machine preset, in registry order.
pub fn machines() -> Vec<Value> {
    machine::MACHINES
        .iter()
        .filter_map(|(name, doc)| Some(machine_row(&machine::preset(name).ok()?, doc)))
        .collect()
}

/// A preset or a machine file (as `--machine` takes it) as a row.
pub fn machine(name: &str) -> Result<Value> {
    let m = crate::commands::machine_of_name(name)?;
    let doc = machine::MACHINES
        .iter()
        .find(|(n, _)| *n == m.name)
        .map_or_else(|| format!("machine file {name}"), |(_, d)| d.to_string());
    Ok(machine_row(&m, &doc))
}

fn profile_of(kernel: &str) -> Result<Profile> {
    Profile::parse(kernel).map_err(|e| CliError::from(SimError::Profile(format!("kernel: {e}"))))
}

/// The tunables whose default differs between profiles: what a profile sets.
fn profile_defaults() -> Vec<(&'static str, Vec<String>)> {
    let per: Vec<Tunables> = Profile::ALL
        .iter()
        .map(|&p| Tunables::new(p, &iostack_sim::tunable_tables()))
        .collect();
    per[0]
        .iter()
        .map(|(d, _)| {
            let vals: Vec<String> = per
                .iter()
                .map(|t| Tunables::render(d, t.get(d.name)))
                .collect();
            (d.name, vals)
        })
        .filter(|(_, v)| v.iter().any(|x| *x != v[0]))
        .collect()
}

/// Every kernel profile: the releases `--kernel` maps to it, its block layer,
/// its schedulers and the default one on the default machine (`sata-2009`),
/// and its defaults of the tunables that differ between profiles.
pub fn profiles() -> Vec<Value> {
    let sata = machine::preset("sata-2009").expect("built-in preset");
    let defaults = profile_defaults();
    Profile::ALL
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let scheds: Vec<&str> = iostack_iosched::available(p).map(|d| d.name).collect();
            let d: Map<String, Value> = defaults
                .iter()
                .map(|(n, v)| (n.to_string(), json!(v[i])))
                .collect();
            json!({
                "profile": p.name(),
                "releases": p.aliases(),
                "block_layer": if p.single_queue() { "single-queue" } else { "blk-mq" },
                "schedulers": scheds,
                "default_scheduler": machine::default_scheduler(&sata, p),
                "defaults": d,
            })
        })
        .collect()
}

/// Every I/O scheduler of the registry (those of `kernel`'s profile when
/// given): the profiles that have it, the kernels that shipped it, whether it
/// is modelled (else why it is refused) and its tunables.
pub fn schedulers(kernel: Option<&str>) -> Result<Vec<Value>> {
    let only = kernel.map(profile_of).transpose()?;
    Ok(iostack_iosched::SCHEDULERS
        .iter()
        .filter(|d| only.is_none_or(|p| (d.in_profile)(p)))
        .map(|d| {
            let profiles: Vec<&str> = Profile::ALL
                .iter()
                .filter(|&&p| (d.in_profile)(p))
                .map(|p| p.name())
                .collect();
            let refused = match d.build {
                iostack_iosched::Build::NotModelled(why) => json!(why),
                _ => Value::Null,
            };
            let tun: Vec<&str> = d.tunables.iter().map(|t| t.name).collect();
            json!({
                "scheduler": d.name,
                "profiles": profiles,
                "kernels": d.kernels,
                "modelled": refused.is_null(),
                "refused": refused,
                "tunables": tun,
                "description": d.doc.split_whitespace().collect::<Vec<_>>().join(" "),
            })
        })
        .collect())
}

/// `iostack machines`: one line per preset.
pub fn machines_text() -> String {
    let mut s = format!(
        "{:<11} {:<22} {:<7} {:<8} {:<7} {:<5} {:>4} {:>7} {}\n",
        "machine", "device", "kind", "disk", "dev", "fs", "cpus", "mem_mb", "scheduler"
    );
    for r in machines() {
        let f = |k: &str| match &r[k] {
            Value::String(x) => x.clone(),
            x => x.to_string(),
        };
        s.push_str(&format!(
            "{:<11} {:<22} {:<7} {:<8} {:<7} {:<5} {:>4} {:>7} {}\n",
            f("machine"),
            f("device"),
            f("device_kind"),
            f("disk"),
            f("dev"),
            f("fs"),
            f("cpus"),
            f("mem_mb"),
            f("scheduler")
        ));
    }
    s
}

/// A JSON scalar as a table cell.
fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.replace('|', "\\|"),
        Value::Null => "none".into(),
        x => x.to_string(),
    }
}

/// The machine keys a preset section lists (everything but the texts).
const SKIP: &[&str] = &["machine", "description", "device_source"];

fn machine_section(r: &Value) -> String {
    let mut s = format!(
        "### `{}`\n\n{}\n\n| key | value |\n|---|---|\n",
        cell(&r["machine"]),
        cell(&r["description"])
    );
    for (k, v) in r.as_object().into_iter().flatten() {
        if SKIP.contains(&k.as_str()) {
            continue;
        }
        let v = if k == "device" {
            format!("[`{}`](#device-{})", cell(v), cell(v))
        } else {
            cell(v)
        };
        s.push_str(&format!("| `{k}` | {v} |\n"));
    }
    s.push('\n');
    s
}

fn device_section(d: &Value) -> String {
    let name = cell(&d["device"]);
    let mut s = format!(
        "<a id=\"device-{name}\"></a>\n### device `{name}` ({})\n\n{}\n\n| parameter | value |\n|---|---|\n",
        cell(&d["kind"]),
        cell(&d["source"])
    );
    for (k, v) in d["params"].as_object().into_iter().flatten() {
        s.push_str(&format!("| `{k}` | {} |\n", cell(v)));
    }
    s.push('\n');
    s
}

/// docs/presets.md: every machine preset with its values and device, and
/// every device preset with its parameters and sources.
pub fn presets_markdown() -> String {
    let mut s = String::from(
        "# Machine presets and devices\n\nGenerated by `iostack machines --markdown` from the \
         registries the code reads (`iostack_sim::machine::MACHINES`, \
         `iostack_device::presets`; do not edit, a test checks it is current). `--machine \
         NAME` picks a preset; a machine file (`base = NAME`, then `key = value` lines: \
         docs/machine.md) changes any value below, and `device = NAME` puts any device \
         preset of the second part in the machine.\n\nWhere the numbers come from: each \
         machine's description names the mailing-list post (\"seed NNN\", under \
         `experiments/`) it reproduces or the era it stands for; each device's description \
         names its sources: a data sheet, a parameter set of the reference \
         `devices-and-simulators.md` (§5.2 sets A to F), a calibration on a seed's \
         published numbers, or an assumption, marked as such. The code comments beside \
         each preset (`crates/iostack-sim/src/machine.rs`, \
         `crates/iostack-device/src/presets.rs`, `hdd/presets.rs`, `raid0.rs`) give the \
         derivations. A machine's CPU costs that its description does not explain are the \
         base machine's estimates for a 2008-era core. Times are in ns, rates in bytes per \
         second, sizes in 512-byte sectors unless the name says otherwise.\n\n## Machines\n\n\
         | machine | device | kind | disk | fs | cpus | mem_mb | scheduler |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let rows = machines();
    for r in &rows {
        s.push_str(&format!(
            "| [`{m}`](#{m}) | `{}` | {} | {} | {} | {} | {} | {} |\n",
            cell(&r["device"]),
            cell(&r["device_kind"]),
            cell(&r["disk"]),
            cell(&r["fs"]),
            cell(&r["cpus"]),
            cell(&r["mem_mb"]),
            cell(&r["scheduler"]),
            m = cell(&r["machine"]),
        ));
    }
    s.push('\n');
    for r in &rows {
        s.push_str(&machine_section(r));
    }
    s.push_str("## Devices\n\n");
    for d in devices() {
        s.push_str(&device_section(&d));
    }
    s
}
