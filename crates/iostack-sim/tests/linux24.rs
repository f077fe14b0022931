//! The 2.4 file steps around direct I/O on seed 004's machine: `brw_kiovec`'s
//! requests on the IDE disk, `invalidate_inode_pages2` of the whole mapping
//! after a direct write, and the intermediate patch's `generic_osync_inode`
//! before each direct I/O.

use iostack_core::{Action, Profile, ReqFlags, TraceEvent, TraceSink, Tunables};
use iostack_des::Seed;
use iostack_sim::workload::{Engine, Pattern, ProcSpec, Target};
use iostack_sim::{machine, tunable_tables, SimConfig, Simulation};
use std::sync::{Arc, Mutex};

/// Block events of one kind: (write, sector, sectors).
type Seen = Arc<Mutex<Vec<(bool, u64, u32)>>>;

struct Events {
    action: Action,
    seen: Seen,
}

impl TraceSink for Events {
    fn event(&mut self, ev: &TraceEvent) {
        if let TraceEvent::Block(r) = ev {
            if r.action == self.action {
                let w = r.flags.contains(ReqFlags::WRITE);
                self.seen.lock().unwrap().push((w, r.sector, r.bytes / 512));
            }
        }
    }
}

fn cfg(sets: &[&str], procs: Vec<ProcSpec>) -> SimConfig {
    let m = machine::preset("ide-2001").unwrap();
    let mut t = Tunables::new(Profile::V2_4, &tunable_tables());
    for s in sets {
        t.set_str(s).unwrap();
    }
    SimConfig {
        scheduler: "elevator_linus".into(),
        machine: m,
        tunables: t,
        seed: Seed(3),
        procs,
        checks: true,
        until: None,
    }
}

fn file(path: &str) -> Target {
    Target::File {
        path: path.into(),
        size: 0,
        goal: None,
    }
}

/// A sequential writer of `size` bytes in `bs` pieces, from offset `at`.
fn writer(name: &str, size: u64, bs: u64, direct: bool) -> ProcSpec {
    ProcSpec {
        read_pct: 0,
        bs: [bs, bs],
        bs_range: [(bs, bs), (bs, bs)],
        direct,
        end_fsync: !direct,
        pattern: Pattern::Sequential,
        engine: Engine::Sync,
        ..ProcSpec::direct_reader(name, name, file("/mnt/test/f"), size)
    }
}

fn run(c: SimConfig, action: Action) -> Vec<(bool, u64, u32)> {
    let mut sim = Simulation::new(c).unwrap();
    let seen: Seen = Default::default();
    sim.attach(Box::new(Events {
        action,
        seen: seen.clone(),
    }));
    let (r, _) = sim.run();
    for p in &r.procs {
        assert!(p.error.is_none(), "{}: {:?}", p.name, p.error);
    }
    let v = seen.lock().unwrap().clone();
    v
}

/// `generic_file_direct_IO` maps and submits 512 KiB (`KIO_MAX_ATOMIC_IO`)
/// at a time and waits for it; `brw_kiovec`'s 4 KiB buffer heads merge into
/// requests up to IDE's 255 sectors (31 buffer heads, 248 sectors), so each
/// chunk reaches the disk as 4 × 248 + 32 sectors and no request spans two
/// chunks.
#[test]
fn brw_kiovec_chunks_merge_up_to_ides_limit() {
    let w = ProcSpec {
        fresh: true,
        ..writer("dio", 4 << 20, 1 << 20, true)
    };
    let d = run(cfg(&[], vec![w]), Action::Issue);
    let data: Vec<_> = d.iter().filter(|x| x.0 && x.2 > 8).collect();
    let total: u64 = data.iter().map(|x| x.2 as u64).sum();
    assert!(total >= 8192 - 64, "{d:?}");
    let sizes: Vec<u32> = data.iter().map(|x| x.2).collect();
    assert!(sizes.iter().all(|&s| s <= 255), "{sizes:?}");
    // The first chunk, from the file's first block: 248 × 4 + 32 (ext2's
    // first indirect block, after data block 11, falls in it: the request
    // that meets it ends there).
    let per_chunk: Vec<u32> = sizes.iter().copied().take(5).collect();
    assert_eq!(per_chunk.iter().sum::<u32>(), 1024, "{sizes:?}");
    let full = sizes.iter().filter(|&&s| s == 248).count();
    assert!(full >= 4 * 7, "most requests are IDE-sized: {sizes:?}");
    // Every chunk is 1024 sectors of the file: the running sum of request
    // sizes meets each multiple of 1024 exactly (no request spans two).
    let mut sum = 0u32;
    let mut hit = 0;
    for s in &sizes {
        sum += s;
        if sum % 1024 == 0 {
            hit += 1;
        }
    }
    assert_eq!(hit, 8, "{sizes:?}");
}

/// After a direct write, 2.4 drops the whole mapping, not the range written:
/// a buffered reader after a 4 KiB O_DIRECT write at offset 0 of a cached
/// 1 MiB file reads all of it from the disk again.
#[test]
fn invalidate_inode_pages2_drops_the_whole_mapping() {
    let size = 1u64 << 20;
    let fill = ProcSpec {
        fresh: true,
        ..writer("fill", size, 64 << 10, false)
    };
    let poke = ProcSpec {
        after: Some((0, 1)),
        ..writer("poke", 4096, 4096, true)
    };
    let reread = ProcSpec {
        direct: false,
        after: Some((1, 2)),
        ..ProcSpec::direct_reader("reread", "reread", file("/mnt/test/f"), size)
    };
    let q = run(cfg(&[], vec![fill, poke, reread]), Action::Queue);
    let read: u64 = q.iter().filter(|x| !x.0).map(|x| x.2 as u64).sum();
    assert_eq!(read, size / 512, "the whole file is read again: {q:?}");
    // Without the direct write the file stays cached: nothing is read.
    let fill = ProcSpec {
        fresh: true,
        ..writer("fill", size, 64 << 10, false)
    };
    let reread = ProcSpec {
        direct: false,
        after: Some((0, 1)),
        ..ProcSpec::direct_reader("reread", "reread", file("/mnt/test/f"), size)
    };
    let q = run(cfg(&[], vec![fill, reread]), Action::Queue);
    assert!(q.iter().all(|x| x.0), "{q:?}");
}

/// Seed 004's intermediate patch: before each direct write of a growing file,
/// `generic_osync_inode` writes the inode-table block (the size changed) and
/// the indirect blocks the last write allocated, one block each, and waits;
/// the merged patch writes no metadata.
#[test]
fn generic_osync_inode_writes_the_inode_before_each_direct_io() {
    let w = || ProcSpec {
        fresh: true,
        ..writer("dio", 8 << 20, 1 << 20, true)
    };
    let small = |q: &[(bool, u64, u32)]| -> Vec<(u64, u32)> {
        q.iter()
            .filter(|x| x.0 && x.2 <= 16)
            .map(|x| (x.1, x.2))
            .collect()
    };
    let plain = run(cfg(&[], vec![w()]), Action::Issue);
    // The 32-sector tail of each chunk aside, no lone 4 KiB write.
    assert!(small(&plain).is_empty(), "{plain:?}");
    let osync = run(
        cfg(&["dio/flush24=generic_osync_inode"], vec![w()]),
        Action::Issue,
    );
    let meta = small(&osync);
    let first = meta.iter().min().expect("metadata writes").0;
    let inode = meta.iter().filter(|m| m.0 == first).count();
    // The created inode before the first write, then one per write after it.
    assert_eq!(inode, 8, "{meta:?}");
    // 8 MiB at 4 KiB blocks: IND0 (at 48 KiB) and, past 4 MiB + 48 KiB, the
    // DIND and IND1 (adjacent: one request), each written once, before the
    // write after the one that allocated them.
    let others: Vec<u32> = meta.iter().filter(|m| m.0 != first).map(|m| m.1).collect();
    assert_eq!(others, [8, 16], "{meta:?}");
}

/// Lone writes of at most two blocks: metadata, not data.
fn lone(q: &[(bool, u64, u32)]) -> Vec<(u64, u32)> {
    q.iter()
        .filter(|x| x.0 && x.2 <= 16)
        .map(|x| (x.1, x.2))
        .collect()
}

/// A direct write never writes the indirect blocks its `ext2_get_block`
/// allocates: they are dirty buffers, and Bonnie's fsync (`ext2_sync_file`
/// → `fsync_inode_buffers`, then `ext2_sync_inode`) writes them and waits:
/// IND0, then DIND and IND1 (adjacent, one request), then the inode's block.
#[test]
fn fsync_after_direct_writes_writes_the_indirect_blocks() {
    let w = |fsync| ProcSpec {
        fresh: true,
        end_fsync: fsync,
        ..writer("dio", 8 << 20, 1 << 20, true)
    };
    let q = run(cfg(&[], vec![w(true)]), Action::Issue);
    let meta = lone(&q);
    let sizes: Vec<u32> = meta.iter().map(|m| m.1).collect();
    assert_eq!(sizes, [8, 16, 8], "{meta:?}");
    assert!(meta[2].0 < meta[0].0, "the inode table is before the data");
    // The last writes of the run: nothing of the file follows them.
    let tail: Vec<(u64, u32)> = q[q.len() - 3..].iter().map(|x| (x.1, x.2)).collect();
    assert_eq!(tail, meta, "{q:?}");
    // Without the fsync they stay dirty in memory (kupdated writes them
    // once age_buffer old, after this short run).
    let q = run(cfg(&[], vec![w(false)]), Action::Issue);
    assert!(lone(&q).is_empty(), "{q:?}");
}

/// A buffered writer's indirect blocks go on the dirty list when
/// `prepare_write` allocates them, just before the data they map, so bdflush
/// (here over a low `nfract`) writes each in the stream, merged with the
/// data around it: the file's blocks, holes included, go out as requests
/// that leave no 8-sector gap.
#[test]
fn bdflush_writes_indirect_blocks_in_the_data_stream() {
    let w = ProcSpec {
        fresh: true,
        ..writer("buf", 12 << 20, 1 << 20, false)
    };
    let sets = ["vm/bdflush/nfract=1", "vm/bdflush/nfract_sync=90"];
    let q = run(cfg(&sets, vec![w]), Action::Issue);
    let data: Vec<(u64, u32)> = q
        .iter()
        .filter(|x| x.0 && x.2 > 16)
        .map(|x| (x.1, x.2))
        .collect();
    let (lo, hi) = (
        data[0].0,
        data.iter().map(|d| d.0 + d.1 as u64).max().unwrap(),
    );
    let mut written: Vec<(u64, u64)> = q
        .iter()
        .filter(|x| x.0 && x.1 >= lo && x.1 < hi)
        .map(|x| (x.1, x.1 + x.2 as u64))
        .collect();
    written.sort();
    let gaps = written.windows(2).filter(|w| w[1].0 > w[0].1).count();
    assert_eq!(gaps, 0, "{written:?}");
    // 12 MiB + IND0, DIND, IND1, IND2.
    let total: u64 = written.iter().map(|w| w.1 - w.0).sum();
    assert_eq!(total, (12 << 20) / 512 + 4 * 8, "{written:?}");
}

/// `ext2_new_block` dirties the superblock's, the group descriptor's and the
/// group's block bitmap's buffers (`mark_buffer_dirty`, on no inode's list):
/// an fsync does not write them (`fsync_inode_buffers` covers the inode's
/// own), but kupdated does once they are `age_buffer` old, together with
/// the inode-table block its `sync_inodes` dirtied.
#[test]
fn kupdated_writes_the_allocators_buffers_and_the_inode() {
    let w = |size: u64| ProcSpec {
        fresh: true,
        end_fsync: true,
        ..writer("dio", size, 1 << 20, true)
    };
    let ages = ["vm/bdflush/age_buffer=100", "vm/bdflush/interval=50"];
    let below = |q: &[(bool, u64, u32)], first_data: u64| -> Vec<(u64, u32)> {
        q.iter()
            .filter(|x| x.0 && x.1 < first_data)
            .map(|x| (x.1, x.2))
            .collect()
    };
    // A short run: only the fsync's inode write lands before the data.
    let q = run(cfg(&ages, vec![w(1 << 20)]), Action::Issue);
    let first_data = q.iter().filter(|x| x.2 > 16).map(|x| x.1).min().unwrap();
    assert_eq!(below(&q, first_data).len(), 1, "{q:?}");
    // Long enough (~2 s) for kupdated (every 0.5 s, buffers 1 s old): the
    // superblock and group descriptor (blocks 0 and 1, one request), the
    // bitmap and the inode block join the fsync's inode write.
    let q = run(cfg(&ages, vec![w(24 << 20)]), Action::Issue);
    let meta = below(&q, first_data);
    let (p0, _) = *meta.iter().min().unwrap();
    assert!(
        meta.contains(&(p0, 16)),
        "superblock and descriptor: {meta:?}"
    );
    assert!(meta.len() >= 3, "{meta:?}");
}

/// A buffered reader of the file `writer` laid out, its cache dropped at open.
fn reader_after_writer(size: u64) -> Vec<ProcSpec> {
    let w = ProcSpec {
        fresh: true,
        ..writer("w", size, 1 << 20, false)
    };
    let r = ProcSpec {
        read_pct: 100,
        direct: false,
        end_fsync: false,
        invalidate: true,
        fadvise: iostack_sim::workload::Fadvise::Normal,
        after: Some((0, 1)),
        ..writer("r", size, 1 << 20, false)
    };
    vec![w, r]
}

/// 2.4's `generic_file_readahead` (`mm/filemap.c` of 2.4.4): Bonnie's 1 MiB
/// reads make `f_ramax` the device's `max_readahead` (`MAX_READAHEAD`, 31
/// pages, for IDE); the first page is read with 31 behind it, then each
/// asynchronous read-ahead reads `f_ramax + 1` = 32 pages when the reader
/// enters the last block. 32 pages are 256 sectors, over IDE's 255: each
/// block reaches the disk as 248 + 8 sectors. With the device's maximum at
/// 15 pages each block is 16 pages, one 128-sector request. (2.6's on-demand
/// readahead has no such knob: `queue/read_ahead_kb` is refused on 2.4.)
#[test]
fn readahead24_reads_max_readahead_plus_one_pages_per_block() {
    let reads = |sets: &[&str]| -> Vec<u32> {
        let d = run(cfg(sets, reader_after_writer(8 << 20)), Action::Issue);
        d.iter().filter(|x| !x.0).map(|x| x.2).collect()
    };
    let def = reads(&[]);
    let total: u64 = def.iter().map(|&s| s as u64).sum();
    assert_eq!(total, (8 << 20) / 512, "{def:?}");
    let big = def.iter().filter(|&&s| s == 248).count();
    let small = def.iter().filter(|&&s| s == 8).count();
    assert!(
        big >= 60 && small >= 60,
        "248 + 8 per 32-page block: {def:?}"
    );
    assert!(def.iter().all(|&s| s <= 248), "{def:?}");
    let f15 = reads(&["queue/max_readahead=15"]);
    let total: u64 = f15.iter().map(|&s| s as u64).sum();
    assert_eq!(total, (8 << 20) / 512, "{f15:?}");
    let full = f15.iter().filter(|&&s| s == 128).count();
    assert!(full >= 120, "16-page blocks: {f15:?}");
    assert!(f15.iter().all(|&s| s <= 128), "{f15:?}");
}

/// Each kernel's read-ahead knob on its own profile only.
#[test]
fn readahead_knobs_are_refused_on_the_other_kernels() {
    let c = cfg(&["queue/read_ahead_kb=256"], reader_after_writer(1 << 20));
    let e = Simulation::new(c).err().expect("refused on 2.4");
    assert!(e.to_string().contains("queue/read_ahead_kb"), "{e}");
    let mut c = cfg(&[], reader_after_writer(1 << 20));
    let mut t = Tunables::new(Profile::V2_6_32, &tunable_tables());
    t.set_str("queue/max_readahead=15").unwrap();
    c.tunables = t;
    c.scheduler = "deadline".into();
    let e = Simulation::new(c).err().expect("refused on 2.6");
    assert!(e.to_string().contains("queue/max_readahead"), "{e}");
}

/// 2.4's fsync of a buffered writer's file (`ext2_fsync_inode` →
/// `fsync_inode_data_buffers`): `i_dirty_data_buffers` is kept newest first
/// (`buffer_insert_inode_data_queue` adds at the head), so the data buffers
/// reach `ll_rw_block` from the file's end back to its start; 2.6's
/// `write_cache_pages` would go forward.
#[test]
fn fsync_writes_the_data_buffers_newest_first() {
    let w = ProcSpec {
        fresh: true,
        ..writer("w", 8 << 20, 1 << 20, false)
    };
    let q = run(cfg(&[], vec![w]), Action::Queue);
    let data: Vec<u64> = q.iter().filter(|x| x.0 && x.2 == 8).map(|x| x.1).collect();
    assert!(data.len() >= 2000, "{}", data.len());
    let down = data.windows(2).filter(|p| p[1] < p[0]).count();
    assert!(
        down * 100 >= (data.len() - 1) * 95,
        "{down} of {} steps go back: {:?}",
        data.len(),
        &data[..20]
    );
    assert!(data[0] > data[data.len() - 1]);
}

/// `generic_file_direct_IO` (the o_direct patch as merged in 2.4.10) flushes
/// the file's dirty data (`fsync_inode_data_buffers`, `filemap_fdatawait`)
/// before a direct read of it: the buffered writer's pages are written, and
/// waited for, before the first read reaches the queue. The intermediate
/// patch (`generic_osync_inode` over one mixed list) is refused there.
#[test]
fn direct_io_flushes_the_dirty_data_first() {
    let procs = || {
        let w = ProcSpec {
            fresh: true,
            end_fsync: false,
            ..writer("w", 4 << 20, 1 << 20, false)
        };
        let r = ProcSpec {
            read_pct: 100,
            after: Some((0, 1)),
            ..writer("r", 4 << 20, 1 << 20, true)
        };
        vec![w, r]
    };
    let q = run(cfg(&[], procs()), Action::Queue);
    let first_read = q.iter().position(|x| !x.0).expect("reads");
    let data_written: u64 = q[..first_read].iter().filter(|x| x.0 && x.2 == 8).count() as u64;
    assert!(
        data_written >= 1024,
        "{data_written} buffers before the read"
    );
    assert!(
        q[first_read..].iter().all(|x| !x.0 || x.2 == 8),
        "no data write after"
    );
    let sim = Simulation::new(cfg(&["dio/flush24=generic_osync_inode"], procs())).unwrap();
    let (r, _) = sim.run();
    let e = r.procs[1].error.as_deref().expect("refused");
    assert!(e.contains("generic_osync_inode"), "{e}");
}

/// LVM1 is 2.4's: a machine with `lvm = linear` on a 2.6 kernel is refused
/// (device-mapper is not modelled); on 2.4 a direct writer's buffer heads go
/// through `lvm_map` (an A from 58,0 before each Q).
#[test]
fn lvm_linear_is_2_4_only_and_remaps_every_buffer_head() {
    let lvm = Some(machine::Lvm {
        pe_sectors: 8192,
        pe_start: 0,
    });
    let w = || {
        vec![ProcSpec {
            fresh: true,
            ..writer("dio", 1 << 20, 1 << 20, true)
        }]
    };
    let mut c = cfg(&[], w());
    c.machine.lvm = lvm;
    let remaps = run(c, Action::Remap);
    let queued = {
        let mut c = cfg(&[], w());
        c.machine.lvm = lvm;
        run(c, Action::Queue)
    };
    // Two remaps (LV → hda1, hda1 → hda) per queued buffer head.
    assert_eq!(remaps.len(), 2 * queued.len(), "{remaps:?}");
    let mut c = cfg(&[], w());
    c.machine.lvm = lvm;
    c.tunables = Tunables::new(Profile::V2_6_32, &tunable_tables());
    c.scheduler = "deadline".into();
    let e = Simulation::new(c).err().expect("refused on 2.6");
    assert!(e.to_string().contains("device-mapper"), "{e}");
}
