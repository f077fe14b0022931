//! What the simulator does with each option of the table: every option of fio's
//! core table, of the built-in profiles and of the supported engines carries one
//! [`Status`], so that no option that changes what fio sends to the device is
//! accepted and then ignored. `docs/fio-options.md` and `iostack run
//! --help-options` are generated from [`STATUS`] by [`markdown`].

use super::{OptDef, OptKind, Scope, ENGINE_OPTIONS};

/// What iostack does with an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The simulation does what fio does with it.
    Simulated,
    /// Changes nothing fio sends to the device (reporting, buffer contents, host
    /// bookkeeping); accepted.
    OutputOnly,
    /// Refused with this reason whenever the option is set to anything but its
    /// default (a default value changes nothing).
    Refused(&'static str),
}

/// Reason: the mechanism exists in fio and could be simulated, but is not yet.
pub const NOT_YET: &str = "not modelled yet";
/// Reason: the option is about the host's hardware, not the I/O stack.
pub const NO_HW: &str = "has no meaning without real hardware";
/// Reason: the option runs host programs or touches the host system.
pub const HOST: &str = "acts on the host system, which a simulator does not have";
/// Reason of the per-I/O priority options.
pub const CMDPRIO: &str = "per-I/O priorities (aio_reqprio, io_uring's sqe ioprio: the \
     bio's own ioprio, honoured per request by mq-deadline from 5.14) are not modelled yet: \
     every bio carries its task's ioprio, and fio's per-priority latency statistics are not \
     reported";
/// Reason: depends on an option that is itself refused.
pub const PARENT: &str = "belongs to an option that is not modelled yet";

use Status::{OutputOnly as Out, Refused as No, Simulated as Sim};

/// The status of every option, by scope: core, then engine-private, then profile.
/// A test holds this table to the option table (every option exactly once).
pub static STATUS: &[(&str, Status, &str)] = &[
    ("description", Out, "printed in the report"),
    ("name", Sim, "names the job and its files"),
    (
        "wait_for",
        Sim,
        "the job starts once every clone of the named earlier job is done",
    ),
    (
        "filename",
        Sim,
        "a ':' list is several files (see nrfiles); devices one per job",
    ),
    ("directory", Sim, "one directory; a ':' list is refused"),
    (
        "filename_format",
        Sim,
        "names the job's files ($jobname, $jobnum, $filenum)",
    ),
    (
        "unique_filename",
        Out,
        "changes names only in client/server mode",
    ),
    ("lockfile", No(NOT_YET), ""),
    ("opendir", No(NOT_YET), ""),
    (
        "rw",
        Sim,
        "read, write, rw, randread, randwrite, randrw, ':N' (holes, or runs with norandommap), ':-N' backwards from offset 0; trim refused",
    ),
    (
        "rw_sequencer",
        Sim,
        "between the new offsets of rw=rand...:N (it acts only with :N)",
    ),
    (
        "ioengine",
        Sim,
        "sync engines, libaio/io_uring/posixaio, null (no I/O reaches the device); others refused",
    ),
    (
        "iodepth",
        Sim,
        "async engines; sync engines keep one I/O in flight, as in fio",
    ),
    ("iodepth_batch", No(NOT_YET), ""),
    ("iodepth_batch_complete_min", No(NOT_YET), ""),
    ("iodepth_batch_complete_max", No(NOT_YET), ""),
    ("iodepth_low", No(NOT_YET), ""),
    ("serialize_overlap", No(NOT_YET), ""),
    (
        "io_submit_mode",
        Sim,
        "offload: paced without waiting for I/Os in flight, iodepth submit workers with their own pids; buffered I/O refused",
    ),
    ("size", Sim, "bytes; a percentage or zones are refused"),
    ("io_size", Sim, "bytes; a percentage or zones are refused"),
    ("fill_device", No(NOT_YET), ""),
    (
        "filesize",
        Sim,
        "the file's size (size= then caps the I/O); a range is refused",
    ),
    ("file_append", No(NOT_YET), ""),
    ("offset", Sim, "bytes; a percentage or zones are refused"),
    ("offset_align", No(NOT_YET), ""),
    (
        "offset_increment",
        Sim,
        "bytes; a percentage or zones are refused",
    ),
    (
        "number_ios",
        Sim,
        "stops after N I/Os issued; with time_based refused",
    ),
    ("bs", Sim, "per direction (read, write)"),
    (
        "ba",
        Sim,
        "random offsets at its multiples (uniform or zoned, fixed or varied sizes); turns the random map off as fio does; with zipf, pareto, normal refused",
    ),
    (
        "bsrange",
        Sim,
        "fio's get_next_buflen; with the random map, mark_random_map trims an I/O to the free blocks (one smallest size for both directions)",
    ),
    (
        "bssplit",
        Sim,
        "fio's get_next_buflen; with the random map, mark_random_map trims an I/O to the free blocks (one smallest size for both directions)",
    ),
    ("bs_unaligned", No(NOT_YET), ""),
    ("bs_is_seq_rand", No(NOT_YET), ""),
    (
        "randrepeat",
        Sim,
        "0: streams other than the repeatable ones, from the run's --seed",
    ),
    (
        "randseed",
        Sim,
        "the processes' random streams from this seed, whatever --seed",
    ),
    (
        "norandommap",
        Sim,
        "random offsets may repeat within a pass",
    ),
    ("softrandommap", No(NOT_YET), ""),
    (
        "random_generator",
        Sim,
        "lfsr, tausworthe64: fio's generator and seed, the offsets real fio issues (one block size, uniform)",
    ),
    (
        "random_distribution",
        Sim,
        "random, zoned, zoned_abs (fixed or varied sizes), and zipf, pareto, normal in fixed point (one block size)",
    ),
    (
        "percentage_random",
        Sim,
        "should_do_random; needs norandommap and one block size",
    ),
    ("percentage_sequential", No("deprecated in fio"), ""),
    ("allrandrepeat", No(NOT_YET), ""),
    (
        "nrfiles",
        Sim,
        "each file size/nrfiles (or filesize); uneven sizes, end_fsync and loops are refused",
    ),
    (
        "openfiles",
        No("fewer open files than nrfiles (fio closing and reopening files) is not modelled yet"),
        "",
    ),
    (
        "file_service_type",
        Sim,
        "roundrobin, sequential, random (with :N); zipf, pareto, normal, gauss are refused",
    ),
    ("fallocate", No(NOT_YET), ""),
    (
        "fadvise_hint",
        Sim,
        "at open: RANDOM turns readahead off, SEQUENTIAL doubles its window",
    ),
    (
        "fsync",
        Sim,
        "buffered: filemap_write_and_wait every N writes; direct refused",
    ),
    (
        "fdatasync",
        Sim,
        "as fsync, with the file system's datasync; direct refused",
    ),
    ("write_barrier", No(NOT_YET), ""),
    ("sync_file_range", No(NOT_YET), ""),
    ("direct", Sim, "O_DIRECT through the direct-I/O bio builder"),
    ("atomic", No(NO_HW), ""),
    ("buffered", Sim, "buffered I/O through the page cache"),
    (
        "overwrite",
        Sim,
        "a write-only job without it recreates its file",
    ),
    (
        "loops",
        Sim,
        "direct I/O over the whole region; buffered refused",
    ),
    (
        "numjobs",
        Sim,
        "one process per clone, each on its own file, or all on one filename=",
    ),
    ("startdelay", Sim, "a single delay; a range is refused"),
    ("runtime", Sim, ""),
    ("time_based", Sim, ""),
    (
        "verify_only",
        Sim,
        "the writes a dry run (chosen and logged, not issued), then the verify reads",
    ),
    ("ramp_time", No(NOT_YET), ""),
    ("clocksource", Out, "the simulated clock is exact"),
    (
        "mem",
        Out,
        "where I/O buffers live; no effect on the requests",
    ),
    (
        "iomem_align",
        Out,
        "buffer alignment; no effect on the requests",
    ),
    (
        "verify",
        Sim,
        "a writing job's read-back as fio issues it (fsync, cache dropped, reads in fio's order); no data is compared; after direct writes refused",
    ),
    ("do_verify", Sim, "0: no read-back after the writes"),
    ("verifysort", Out, "ignored by fio itself (soft-deprecated)"),
    (
        "verifysort_nr",
        Out,
        "ignored by fio itself (soft-deprecated)",
    ),
    ("verify_interval", Out, "checksum layout in the buffers"),
    ("verify_offset", Out, "checksum layout in the buffers"),
    ("verify_pattern", Out, "buffer contents"),
    ("verify_fatal", Out, "no data is compared, so nothing fails"),
    ("verify_dump", Out, "no data is compared, so nothing is dumped"),
    ("verify_async", Out, "checksums on other threads; the reads are the same"),
    (
        "verify_backlog",
        Sim,
        "reads of the oldest pieces every N writes (check_get_verify); one I/O in flight",
    ),
    ("verify_backlog_batch", Sim, "the reads of each backlog batch"),
    ("verify_async_cpus", Out, "CPU affinity of the checksum threads"),
    ("experimental_verify", No(NOT_YET), ""),
    ("verify_state_load", No(NOT_YET), ""),
    ("verify_state_save", Out, "a state file on the host at the end"),
    ("trim_percentage", No(NOT_YET), ""),
    ("trim_verify_zero", No(PARENT), ""),
    ("trim_backlog", No(PARENT), ""),
    ("trim_backlog_batch", No(PARENT), ""),
    ("write_iolog", No(NOT_YET), ""),
    (
        "read_iolog",
        Sim,
        "iolog v2/v3 or blktrace (one merged file or the per-CPU files); one file or device; trims and syncs refused",
    ),
    (
        "read_iolog_chunked",
        Out,
        "reads the log in parts; the same I/Os are issued",
    ),
    ("replay_no_stall", Sim, "no delays between the log's I/Os"),
    ("replay_redirect", Sim, "every I/O of the log to this file or device"),
    ("replay_scale", Sim, "offsets divided by it"),
    ("replay_align", Sim, "offsets aligned down (blktrace lengths up)"),
    ("replay_time_scale", Sim, "delays times 100 / N"),
    ("replay_skip", Sim, "blktrace directions dropped"),
    ("merge_blktrace_file", No(NOT_YET), ""),
    ("merge_blktrace_scalars", No(PARENT), ""),
    ("merge_blktrace_iters", No(PARENT), ""),
    ("exec_prerun", No(HOST), ""),
    ("exec_postrun", No(HOST), ""),
    ("ioscheduler", No(NOT_YET), "use --sched"),
    (
        "zonemode",
        Sim,
        "strided: fio's setup_strided_zone_mode (one block size, one direction, one file); zbd refused",
    ),
    ("zonesize", Sim, "bytes of I/O per strided zone"),
    ("zonecapacity", No(PARENT), ""),
    ("zonerange", Sim, "the strided zone's length (default zonesize)"),
    ("zoneskip", Sim, "bytes skipped after each strided zone; a zone count refused"),
    ("read_beyond_wp", No(PARENT), ""),
    ("max_open_zones", No(PARENT), ""),
    ("job_max_open_zones", No(PARENT), ""),
    ("ignore_zone_limits", No(PARENT), ""),
    ("zone_reset_threshold", No(PARENT), ""),
    ("zone_reset_frequency", No(PARENT), ""),
    (
        "lockmem",
        No(NOT_YET),
        "pinned memory would shrink the page cache",
    ),
    ("rwmixread", Sim, ""),
    ("rwmixwrite", Sim, ""),
    ("rwmixcycle", No("deprecated in fio"), ""),
    (
        "nice",
        No(NOT_YET),
        "CFQ derives the I/O priority from nice",
    ),
    ("prio", Sim, "I/O priority level"),
    ("prioclass", Sim, "I/O priority class"),
    (
        "thinktime",
        Sim,
        "handle_thinktime: wait for the I/Os in flight, then sleep",
    ),
    (
        "thinktime_spin",
        Sim,
        "part of the think time; longer than thinktime refused",
    ),
    ("thinktime_blocks", Sim, "I/Os between think times"),
    (
        "thinktime_blocks_type",
        Sim,
        "count completed (complete) or issued (issue) I/Os",
    ),
    ("thinktime_iotime", No(NOT_YET), ""),
    (
        "rate",
        Sim,
        "rate_ddir/usec_for_io per direction; a read/write mix switches to the direction behind its rate",
    ),
    (
        "rate_min",
        Sim,
        "check_min_rate: past 2 s, each rate_cycle below it fails the job",
    ),
    (
        "rate_iops",
        Sim,
        "as rate, times the direction's minimum block size",
    ),
    ("rate_iops_min", Sim, "as rate_min, in I/Os per second"),
    (
        "rate_process",
        Sim,
        "linear, or poisson: fio's exponential gaps from its poisson_state seeds",
    ),
    ("rate_cycle", Sim, "the window of rate_min's check"),
    ("rate_ignore_thinktime", No(NOT_YET), ""),
    ("max_latency", No(NOT_YET), ""),
    ("latency_target", No(NOT_YET), ""),
    ("latency_window", No(PARENT), ""),
    ("latency_percentile", No(PARENT), ""),
    ("latency_run", No(PARENT), ""),
    (
        "invalidate",
        Sim,
        "at open: POSIX_FADV_DONTNEED (filemap_flush, then invalidate_mapping_pages) or BLKFLSBUF",
    ),
    (
        "sync",
        Sim,
        "buffered O_SYNC/O_DSYNC: write() waits for its pages; direct refused",
    ),
    ("write_hint", No(NOT_YET), ""),
    ("create_serialize", No(NOT_YET), ""),
    ("create_fsync", No(NOT_YET), ""),
    ("create_on_open", No(NOT_YET), ""),
    ("create_only", No(NOT_YET), ""),
    ("allow_file_create", No(NOT_YET), ""),
    (
        "allow_mounted_write",
        Out,
        "a safety check of fio's; no effect on the requests",
    ),
    ("pre_read", No(NOT_YET), ""),
    (
        "cpumask",
        No(NOT_YET),
        "processes are placed on CPUs by the simulator",
    ),
    (
        "cpus_allowed",
        Out,
        "every CPU of the machine: changes nothing modelled (accepted); a subset, or a CPU the machine lacks, refused",
    ),
    ("cpus_allowed_policy", No(NOT_YET), ""),
    (
        "numa_cpu_nodes",
        Out,
        "node 0 only: the machine's one node, every CPU, changes nothing modelled (accepted); another node refused as libnuma fails it",
    ),
    (
        "numa_mem_policy",
        Out,
        "node 0 only: every policy places memory on the one node, and memory placement is not modelled (accepted); another node refused",
    ),
    ("end_fsync", Sim, ""),
    ("fsync_on_close", No(NOT_YET), ""),
    ("unlink", No(NOT_YET), ""),
    ("unlink_each_loop", No(NOT_YET), ""),
    (
        "exitall",
        Sim,
        "a job ending terminates the jobs exit_what names",
    ),
    (
        "exit_what",
        Sim,
        "group, stonewall (the running jobs) or all",
    ),
    (
        "exitall_on_error",
        Out,
        "the simulated device returns no errors; with rate_min refused",
    ),
    ("stonewall", Sim, ""),
    ("new_group", Sim, "starts a new reporting group"),
    (
        "thread",
        Out,
        "threads and processes issue the same requests",
    ),
    ("per_job_logs", Out, "0: one NAME_TYPE.log that the jobs append to, in fio's order"),
    ("write_bw_log", Out, "written as fio 3.33 writes them (NAME_TYPE.N.log), streamed during the run; per-I/O samples (no log_avg_msec) also make the report's bw statistics per I/O, as in fio"),
    ("write_lat_log", Out, "written as fio 3.33 writes them (NAME_TYPE.N.log), streamed during the run: _lat, _clat, _slat"),
    ("write_iops_log", Out, "written as fio 3.33 writes them (NAME_TYPE.N.log), streamed during the run; per-I/O samples also make the report's iops statistics per I/O, as in fio"),
    ("log_entries", Out, "the size of fio's in-memory log buffer; the files are the same"),
    ("log_avg_msec", Out, "one mean per window and direction in the logs; the report's bw/iops window too, as fio's init.c"),
    ("log_hist_msec", Out, "the histogram log's window"),
    ("log_hist_coarseness", Out, "bins of the histogram log merged 2^N at a time (N at most 10)"),
    (
        "write_hist_log",
        Out,
        "PREFIX_clat_hist.N.log in fio's format (fiologparser_hist.py reads it)",
    ),
    ("log_max_value", Out, "averaged log entries are the window's maximum"),
    ("log_offset", Out, "adds the offset column"),
    (
        "log_prio",
        Out,
        "the logs' last column is the I/O's priority value (0x%04x of ioprio_value), not the RT flag",
    ),
    ("log_compression", Out, "compresses fio's in-memory log chunks; the files are the same"),
    ("log_compression_cpus", Out, "CPU placement of fio's log compression"),
    ("log_store_compressed", No(NOT_YET), ""),
    ("log_unix_epoch", No(NOT_YET), ""),
    ("log_alternate_epoch", No(NOT_YET), ""),
    ("log_alternate_epoch_clock_id", No(NOT_YET), ""),
    ("block_error_percentiles", Out, "report only"),
    ("bwavgtime", Out, "window of the report's bw samples"),
    ("iopsavgtime", Out, "window of the report's iops samples"),
    ("group_reporting", Out, "report only"),
    ("stats", Out, "report only"),
    (
        "zero_buffers",
        Out,
        "data contents: no device model compresses or dedupes",
    ),
    (
        "refill_buffers",
        Out,
        "data contents: no device model compresses or dedupes",
    ),
    (
        "scramble_buffers",
        Out,
        "data contents: no device model compresses or dedupes",
    ),
    (
        "buffer_pattern",
        Out,
        "data contents: no device model compresses or dedupes",
    ),
    (
        "buffer_compress_percentage",
        Out,
        "data contents: no device model compresses or dedupes",
    ),
    (
        "buffer_compress_chunk",
        Out,
        "data contents: no device model compresses or dedupes",
    ),
    (
        "dedupe_percentage",
        Out,
        "data contents: no device model compresses or dedupes",
    ),
    (
        "dedupe_global",
        Out,
        "data contents: no device model compresses or dedupes",
    ),
    (
        "dedupe_mode",
        Out,
        "data contents: no device model compresses or dedupes",
    ),
    (
        "dedupe_working_set_percentage",
        Out,
        "data contents: no device model compresses or dedupes",
    ),
    ("clat_percentiles", Out, "report only"),
    ("lat_percentiles", Out, "report only"),
    ("slat_percentiles", Out, "report only"),
    ("percentile_list", Out, "report only"),
    ("significant_figures", Out, "report only"),
    ("disk_util", Out, "report only"),
    ("gtod_reduce", Out, "report only"),
    ("disable_lat", Out, "no lat samples: its report lines and log, as fio"),
    ("disable_clat", Out, "no clat samples: its report lines, lat buckets, sync latencies and log"),
    ("disable_slat", Out, "no slat samples: its report lines and log"),
    (
        "disable_bw_measurement",
        Out,
        "no per-I/O bandwidth samples (bw log without log_avg_msec), as fio 3.33",
    ),
    ("gtod_cpu", Out, "the simulated clock costs nothing"),
    ("unified_rw_reporting", Out, "report only"),
    (
        "continue_on_error",
        Out,
        "the simulated device returns no errors",
    ),
    (
        "ignore_error",
        Out,
        "the simulated device returns no errors",
    ),
    ("error_dump", Out, "the simulated device returns no errors"),
    ("profile", No(NOT_YET), ""),
    (
        "cgroup",
        No(NOT_YET),
        "blkio cgroup weights change CFQ's service",
    ),
    ("cgroup_nodelete", Out, "host bookkeeping"),
    (
        "cgroup_weight",
        No(NOT_YET),
        "blkio cgroup weights change CFQ's service",
    ),
    ("uid", Out, "host bookkeeping"),
    ("gid", Out, "host bookkeeping"),
    (
        "kb_base",
        Out,
        "report units (sizes in the job file are parsed with it)",
    ),
    ("unit_base", Out, "report units"),
    (
        "hugepage-size",
        Out,
        "buffer memory; no effect on the requests",
    ),
    (
        "flow_id",
        Sim,
        "the flow whose shared counter the job's flow weight is held to (flow.c)",
    ),
    (
        "flow",
        Sim,
        "flow_threshold_exceeded at each do_io iteration; refused: flow_sleep=0 with an async depth above 1 or a runtime, verify, a member after a stonewall without a runtime (fio holds the job for ever)",
    ),
    (
        "flow_watermark",
        Out,
        "ignored by fio itself (soft-deprecated)",
    ),
    (
        "flow_sleep",
        Sim,
        "quiesce, then sleep this long; 0: spin until another job of the flow moves (no CPU time charged for the spin)",
    ),
    ("steadystate", No(NOT_YET), ""),
    ("steadystate_duration", No(PARENT), ""),
    ("steadystate_ramp_time", No(PARENT), ""),
];

/// Engine-private options, by name (an option of several engines is listed once).
pub static ENGINE_STATUS: &[(&str, Status, &str)] = &[
    ("hipri", No(NOT_YET), "polled completion"),
    ("hipri_percentage", No(NOT_YET), ""),
    ("uncached", No(NOT_YET), ""),
    ("nowait", No(NOT_YET), ""),
    ("userspace_reap", No(NOT_YET), ""),
    ("cmdprio_percentage", No(CMDPRIO), ""),
    ("cmdprio_class", No(CMDPRIO), ""),
    ("cmdprio", No(CMDPRIO), ""),
    ("cmdprio_bssplit", No(CMDPRIO), ""),
    ("fixedbufs", No(NOT_YET), "changes the engine's CPU cost"),
    (
        "registerfiles",
        No(NOT_YET),
        "changes the engine's CPU cost",
    ),
    ("sqthread_poll", No(NOT_YET), ""),
    ("sqthread_poll_cpu", No(NOT_YET), ""),
    ("nonvectored", No(NOT_YET), ""),
    ("force_async", No(NOT_YET), ""),
    ("cmd_type", No(NOT_YET), ""),
    ("thp", No(NOT_YET), ""),
];

/// Profile options: the `act` and `tiobench` profiles read them only when
/// `profile=` selects the profile (refused); otherwise fio parses and ignores them.
pub static PROFILE_STATUS: Status = Status::OutputOnly;

/// The status of an option of the table.
pub fn status(def: &OptDef) -> (Status, &'static str) {
    let table = match def.scope {
        Scope::Core => STATUS,
        Scope::Engine(_) => ENGINE_STATUS,
        Scope::Profile(_) => return (PROFILE_STATUS, "read only with profile=, which is refused"),
    };
    table
        .iter()
        .find(|(n, _, _)| *n == def.name)
        .map(|(_, s, note)| (*s, *note))
        .unwrap_or((Status::Refused(NOT_YET), ""))
}

/// Whether `value` (as expanded; `None` for a bare option) is the option's
/// default, i.e. changes nothing. Per-direction lists are default when every
/// part is.
pub fn is_default(def: &OptDef, value: Option<&str>) -> bool {
    let Some(v) = value else {
        // A bare set-type option means 1.
        return def.default == Some("1");
    };
    let numeric = !matches!(
        def.kind,
        OptKind::Str | OptKind::StrMulti | OptKind::StrStore | OptKind::FloatList
    );
    let dflt: Vec<&str> = def
        .default
        .unwrap_or(if numeric { "0" } else { "" })
        .split(',')
        .collect();
    v.split(',').enumerate().all(|(i, part)| {
        let d = dflt.get(i).or(dflt.last()).copied().unwrap_or("");
        part_is_default(def, part.trim(), d)
    })
}

fn part_is_default(def: &OptDef, v: &str, dflt: &str) -> bool {
    if v.eq_ignore_ascii_case(dflt) || (v.is_empty() && dflt.is_empty()) {
        return true;
    }
    // `sync=0` is `sync=none`.
    if def.name == "sync" && v == "0" {
        return true;
    }
    match (parse_int(v), parse_int(dflt)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

fn parse_int(s: &str) -> Option<i128> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => i128::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn status_text(s: Status) -> String {
    match s {
        Status::Simulated => "simulated".into(),
        Status::OutputOnly => "output only".into(),
        Status::Refused(r) => format!("refused: {r}"),
    }
}

/// The option reference (`docs/fio-options.md`), generated from the tables.
pub fn markdown() -> String {
    let mut s = String::from(
        "# fio options in iostack\n\n\
         Generated from `crates/iostack-workload/src/options/status.rs` by \
         `iostack run --help-options`; a test keeps it up to date.\n\n\
         Every option of fio 3.33's table is *simulated* (the simulation does what \
         fio does with it), *output only* (it changes nothing fio sends to the \
         device) or *refused* with the reason given: a job that sets a refused \
         option to anything but its default stops with `file:line: option: reason`. \
         No option that changes what fio sends to the device is accepted and ignored.\n\n\
         How the job files of fio 3.33's `examples/` directory fare (run, or refused \
         and why) is in `docs/fio-examples.md`.\n",
    );
    let mut section = |title: &str, defs: &mut dyn Iterator<Item = &'static OptDef>| {
        s.push_str(&format!(
            "\n## {title}\n\n| option | status | note |\n|---|---|---|\n"
        ));
        let mut seen = std::collections::BTreeSet::new();
        for d in defs {
            if !seen.insert(d.name) {
                continue;
            }
            let (st, note) = status(d);
            s.push_str(&format!(
                "| `{}` | {} | {} |\n",
                d.name,
                status_text(st),
                note
            ));
        }
    };
    section("Core options", &mut super::CORE_OPTIONS.iter());
    section("Engine options", &mut ENGINE_OPTIONS.iter());
    section(
        "Profile options (act, tiobench)",
        &mut super::PROFILE_OPTIONS.iter(),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_has_exactly_one_status() {
        for d in super::super::CORE_OPTIONS {
            let n = STATUS.iter().filter(|(n, _, _)| *n == d.name).count();
            assert_eq!(n, 1, "core option {} has {n} status entries", d.name);
        }
        for d in ENGINE_OPTIONS {
            let n = ENGINE_STATUS
                .iter()
                .filter(|(n, _, _)| *n == d.name)
                .count();
            assert_eq!(n, 1, "engine option {} has {n} status entries", d.name);
        }
        for (name, _, _) in STATUS {
            assert!(
                super::super::CORE_OPTIONS.iter().any(|d| d.name == *name),
                "{name} is not a core option"
            );
        }
        for (name, _, _) in ENGINE_STATUS {
            assert!(ENGINE_OPTIONS.iter().any(|d| d.name == *name), "{name}");
        }
    }

    #[test]
    fn defaults_change_nothing_and_other_values_do() {
        let f = |n: &str| super::super::find_option(n).unwrap();
        assert!(is_default(f("sync"), Some("0")));
        assert!(is_default(f("sync"), Some("none")));
        assert!(!is_default(f("sync"), Some("1")));
        assert!(is_default(f("rate"), Some("0,0")));
        assert!(!is_default(f("rate"), Some("0,1m")));
        assert!(is_default(f("loops"), Some("1")));
        assert!(is_default(f("percentage_random"), Some("100")));
        assert!(!is_default(f("percentage_random"), Some("100,50")));
        assert!(!is_default(f("loops"), Some("3")));
        assert!(!is_default(f("exitall"), None));
        assert!(is_default(f("verify"), Some("0")));
        assert!(!is_default(f("verify"), Some("md5")));
        assert!(!is_default(f("ioscheduler"), Some("deadline")));
    }
}
