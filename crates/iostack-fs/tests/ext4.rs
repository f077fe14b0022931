//! ext4 delayed allocation and mballoc: layouts derived by hand from the kernel
//! code paths, seeky writeback, direct I/O, and free-space accounting.

use iostack_des::{Rng, Seed};
use iostack_fs::ext4::{Ext4, Ext4Params, EXT_INIT_MAX_LEN};
use iostack_fs::extent_fs::{filefrag_count, physical_runs, RangeSet};
use iostack_fs::mballoc::{MbConfig, MbVariant};
use iostack_fs::{ExtentFs, FileExtent, FsError, GetBlock};

const BPG: u64 = 32768;
/// 8 MiB writeback runs of 4 KiB blocks.
const RUN: u64 = 2048;
/// A 4 GiB file.
const FILE: u64 = (4u64 << 30) / 4096;

/// A fresh 64 GiB ext4 (512 groups, 16 per flex group) as mke2fs -t ext4 makes it.
fn fs64(variant: MbVariant) -> Ext4 {
    let mut p = Ext4Params::mkfs_defaults(4096, (64u64 << 30) / 4096);
    p.mb = MbConfig::defaults(variant);
    Ext4::new(p).unwrap()
}

/// Dirty the whole file, then write it back run by run in `order`, asking again
/// whenever mballoc returns fewer blocks than the run.
fn write_file(fs: &mut impl ExtentFs, name: &str, order: &[u64]) -> u32 {
    let ino = fs.create(name).unwrap();
    fs.delalloc_reserve(ino, 0, FILE).unwrap();
    fs.set_i_size(ino, FILE * 4096);
    let mut out = Vec::new();
    for &l in order {
        let mut at = l;
        while at < l + RUN {
            let n = fs
                .map_for_writeback(ino, at, l + RUN - at, &mut out)
                .unwrap();
            assert!(n >= 1);
            at += n;
        }
    }
    // every run came back in logical order, covering what was asked
    let mut covered = RangeSet::new();
    for e in &out {
        assert_eq!(covered.insert(e.logical, e.logical + e.len), e.len);
    }
    assert_eq!(covered.total(), FILE);
    ino
}

fn in_order() -> Vec<u64> {
    (0..FILE / RUN).map(|k| k * RUN).collect()
}

/// Seeky writeback: two cursors, one from the start and one from the middle of the
/// file, take turns (pdflush and a throttled dirtier walking `writeback_index`).
fn two_cursors() -> Vec<u64> {
    let half = FILE / RUN / 2;
    (0..half)
        .flat_map(|k| [k * RUN, (half + k) * RUN])
        .collect()
}

fn runs(fs: &Ext4, ino: u32) -> Vec<(u64, u64)> {
    physical_runs(&fs.fiemap(ino))
        .iter()
        .map(|r| (r.physical, r.len))
        .collect()
}

/// Extent-tree entries of a physically contiguous run built from 2048-block
/// pieces: merged up to EXT_INIT_MAX_LEN.
fn tree_extents(runs: &[(u64, u64)]) -> usize {
    runs.iter()
        .map(|&(_, l)| l.div_ceil(EXT_INIT_MAX_LEN) as usize)
        .sum()
}

#[test]
fn sequential_4gib_layout_2628() {
    // 2.6.28: the first goal is the inode's group 0 (pid colour 0); group 0 is free
    // from 9255 (superblock, 4 descriptor and 1020 reserved GDT blocks, 16+16
    // bitmaps, 16 inode tables of 512, root, lost+found, resize block), and its
    // first free 2048-block buddy is at 10240. Each next run tries the exact goal
    // after the previous one (ext4_mb_find_by_goal); at a group holding a backup
    // superblock or flex_bg tables the goal is in use, and criterion 0 skips the
    // BLOCK_UNINIT groups, landing at the next initialised group, a flex group's
    // first one (16, 32, 64), at its first free buddy, 10240:
    //   group 0      [10240, 32768)               22528 blocks
    //   groups 16-24 (25 is a backup)              22528 + 8·32768 = 284672
    //   groups 32-47 (48 holds flex tables)        22528 + 15·32768 = 514048
    //   group 48     (49 is a backup)              22528
    //   groups 64-   the remaining                 204800
    let mut fs = fs64(MbVariant::V2628);
    let ino = write_file(&mut fs, "big", &in_order());
    let want: Vec<(u64, u64)> = vec![
        (10240, 22528),
        (16 * BPG + 10240, 284_672),
        (32 * BPG + 10240, 514_048),
        (48 * BPG + 10240, 22528),
        (64 * BPG + 10240, 204_800),
    ];
    assert_eq!(runs(&fs, ino), want);
    let ext = fs.fiemap(ino);
    assert!(ext.iter().all(|e| e.len <= EXT_INIT_MAX_LEN));
    assert_eq!(ext.len(), tree_extents(&want));
    assert_eq!(ext.len(), 1 + 9 + 16 + 1 + 7);
    assert_eq!(filefrag_count(&ext), 5);
    fs.check_consistency().unwrap();
}

#[test]
fn sequential_4gib_layout_2630() {
    // 2.6.30-2.6.37: a stream allocation starts from s_mb_last_group (0 after
    // mount); criterion 0 skips the first group of each flex group, so the file
    // starts in group 1 at its first free 2048-block buddy, 2048 (after 1025
    // blocks of backup superblock and descriptors). Runs continue on the exact
    // goal, break at every backup group (3, 5, 7, 9, 25, 27: restart at +2048)
    // and jump over flex groups' first groups (16, 32: restart at 17, 33):
    //   groups 1-2    30720 + 32768 = 63488
    //   groups 3-4, 5-6, 7-8    63488 each
    //   groups 9-15   30720 + 6·32768 = 227328
    //   groups 17-24  8·32768 = 262144
    //   groups 25-26  63488
    //   groups 27-31  30720 + 4·32768 = 161792
    //   groups 33-    the remaining 79872
    let mut fs = fs64(MbVariant::V2630);
    let ino = write_file(&mut fs, "big", &in_order());
    let g2 = |g: u64| g * BPG + 2048;
    let want: Vec<(u64, u64)> = vec![
        (g2(1), 63488),
        (g2(3), 63488),
        (g2(5), 63488),
        (g2(7), 63488),
        (g2(9), 227_328),
        (17 * BPG, 262_144),
        (g2(25), 63488),
        (g2(27), 161_792),
        (33 * BPG, 79872),
    ];
    assert_eq!(runs(&fs, ino), want);
    let ext = fs.fiemap(ino);
    assert!(ext.iter().all(|e| e.len <= EXT_INIT_MAX_LEN));
    assert_eq!(ext.len(), tree_extents(&want));
    assert_eq!(ext.len(), 33);
    assert_eq!(filefrag_count(&ext), 9);
    fs.check_consistency().unwrap();
}

#[test]
fn seeky_writeback_fragments_the_stream_allocator() {
    // 2.6.30+: every run after the first misses its exact goal (the other cursor's
    // run took it) and is placed by the stream allocator at the global last
    // allocation point, right after the previous run: the two cursors' runs
    // interleave on disk and each 8 MiB run is its own extent.
    let mut fs = fs64(MbVariant::V2630);
    let ino = write_file(&mut fs, "big", &two_cursors());
    let ext = fs.fiemap(ino);
    assert_eq!(filefrag_count(&ext), (FILE / RUN) as usize);
    assert_eq!(ext.len(), 512);
    // logically adjacent runs sit two runs apart on disk
    let r = physical_runs(&ext);
    let apart = r
        .windows(2)
        .filter(|w| w[1].physical == w[0].physical + 2 * RUN)
        .count();
    assert!(apart > 400, "{apart}");
    fs.check_consistency().unwrap();
}

/// Two cursors 32 MiB apart inside each 64 MiB of dirty data (pdflush and a
/// throttled dirtier both working near the end of the file).
fn local_cursors() -> Vec<u64> {
    (0..FILE / RUN / 16)
        .flat_map(|w| (0..8).flat_map(move |k| [w * 16 + k, w * 16 + 8 + k]))
        .map(|r| r * RUN)
        .collect()
}

#[test]
fn seeky_writeback_fragments_2628() {
    // 2.6.28 places a run whose exact goal is taken (or that does not start right
    // after its left neighbour) by criterion 0 from the *goal's group*, at that
    // group's first free buddy chunk: the goal's offset inside the group is not
    // honoured. Cursors far apart (2 GiB) start in different groups (the second
    // one's goal is the first run's start plus the logical distance, group 16)
    // and interleave only for the stretch where one of them falls into the
    // group the other is filling.
    let mut seq = fs64(MbVariant::V2628);
    let ino = write_file(&mut seq, "big", &in_order());
    let ordered = filefrag_count(&seq.fiemap(ino));
    assert_eq!(ordered, 5);

    let mut fs = fs64(MbVariant::V2628);
    let ino = write_file(&mut fs, "big", &two_cursors());
    let ext = fs.fiemap(ino);
    let b0 = ext.iter().find(|e| e.logical == FILE / 2).unwrap();
    assert_eq!(b0.physical, 16 * BPG + 10240);
    let far = filefrag_count(&ext);
    assert!(far > 2 * ordered, "far cursors: {far}");
    fs.check_consistency().unwrap();

    // Cursors within a group of each other interleave run by run.
    let mut fs = fs64(MbVariant::V2628);
    let ino = write_file(&mut fs, "big", &local_cursors());
    let near = filefrag_count(&fs.fiemap(ino));
    assert!(near > 20 * ordered, "near cursors: {near}");
    fs.check_consistency().unwrap();

    // 2.6.30's stream allocator interleaves them too.
    let mut fs = fs64(MbVariant::V2630);
    let ino = write_file(&mut fs, "big", &local_cursors());
    assert!(filefrag_count(&fs.fiemap(ino)) > 400);
}

#[test]
fn writeback_returns_the_normalised_window() {
    // A file of 8 MiB: ext4_mb_normalize_request picks a 4 MiB window, so the
    // first 8 MiB run comes back in two calls of 1024 blocks, contiguous.
    for v in [MbVariant::V2628, MbVariant::V2630] {
        let mut fs = fs64(v);
        let ino = fs.create("f").unwrap();
        fs.delalloc_reserve(ino, 0, RUN).unwrap();
        fs.set_i_size(ino, RUN * 4096);
        let mut out = Vec::new();
        assert_eq!(fs.map_for_writeback(ino, 0, RUN, &mut out).unwrap(), 1024);
        assert_eq!(
            fs.map_for_writeback(ino, 1024, 1024, &mut out).unwrap(),
            1024
        );
        assert_eq!(out[1].physical, out[0].physical + 1024);
        assert_eq!(fs.fiemap(ino).len(), 1);
        assert_eq!(fs.dirty_reserved(), 0);
        fs.check_consistency().unwrap();
    }
}

#[test]
fn direct_io_sequential_writer_is_contiguous() {
    // 1 MiB O_DIRECT writes extending a new 64 MiB file: each get_block(create)
    // goes through mballoc; the first request is a 1 MiB window (a 256-block buddy
    // chunk), later ones try the exact goal after the previous extent with
    // growing normalised windows and inode preallocation: one physical run.
    //   2.6.28: group 0's first free 256-block buddy is at 9472.
    //   2.6.30: group 0 is a flex group's first (skipped at criterion 0); group 1's
    //   first 256-block buddy is at 1280 (after 1025 blocks of backup superblock).
    for (v, start) in [(MbVariant::V2628, 9472), (MbVariant::V2630, BPG + 1280)] {
        let mut fs = fs64(v);
        let ino = fs.create("d").unwrap();
        for k in 0..64u64 {
            let (l0, n) = (k * 256, 256);
            let mut l = l0;
            while l < l0 + n {
                let m = fs.get_block(ino, l, l0 + n - l, true).unwrap();
                assert!(m.new && m.pblk.is_some() && !m.boundary);
                l += m.count;
            }
            fs.set_i_size(ino, (l0 + n) * 4096);
        }
        let ext = fs.fiemap(ino);
        assert_eq!(filefrag_count(&ext), 1, "{v:?}: {ext:?}");
        assert_eq!(ext[0].physical, start);
        assert_eq!(ext.iter().map(|e| e.len).sum::<u64>(), 16384);
        // reads map what was written
        let m = fs.get_block(ino, 1000, 5000, false).unwrap();
        assert_eq!((m.pblk, m.count), (Some(start + 1000), 5000));
        assert!(!m.new);
        let hole = fs.get_block(ino, 70000, 8, false).unwrap();
        assert_eq!((hole.pblk, hole.count), (None, 8));
        fs.release_file(ino);
        assert!(fs.mballoc().inode_pas(ino).is_empty());
        fs.check_consistency().unwrap();
    }
}

#[test]
fn lazy_itable_init_dirties_uninit_inode_tables() {
    let fs = fs64(MbVariant::V2628);
    let r = fs.mount_dirty_bdev_ranges();
    assert_eq!(r.len(), 511);
    assert_eq!(r[0], (1569, 512)); // group 1's table, after group 0's in the flex group
    assert!(r.windows(2).all(|w| w[0].0 < w[1].0));
    for g in 1..fs.groups() {
        assert!(r.contains(&fs.inode_table(g).unwrap()));
    }
    let mut p = Ext4Params::mkfs_defaults(4096, 1 << 20);
    p.lazy_itable_init = false;
    assert!(Ext4::new(p).unwrap().mount_dirty_bdev_ranges().is_empty());
}

#[test]
fn bad_requests_are_errors_not_panics() {
    let mut fs = fs64(MbVariant::V2630);
    let mut out = Vec::new();
    assert!(matches!(
        fs.map_for_writeback(99, 0, 1, &mut out),
        Err(FsError::NoSuchFile(_))
    ));
    let ino = fs.create("x").unwrap();
    assert_eq!(fs.create("x").unwrap(), ino);
    assert_eq!(fs.lookup("x"), Some(ino));
    assert!(matches!(
        fs.delalloc_reserve(ino, 0, 0),
        Err(FsError::Invalid(_))
    ));
    assert!(fs.delalloc_reserve(ino, u64::MAX - 1, 5).is_err());
    assert!(fs.get_block(ino, 1 << 40, 1, true).is_err());
    assert!(fs.create("").is_err());
    assert!(Ext4::new(Ext4Params::mkfs_defaults(1000, 1 << 20)).is_err());
    assert!(Ext4::new(Ext4Params::mkfs_defaults(4096, 10)).is_err());
    fs.check_consistency().unwrap();
}

/// Random writers, writeback, direct I/O and closes on a small file system; every
/// block stays exactly once free, preallocated, metadata or file data.
fn random_ops(variant: MbVariant, blocks: u64, seed: u64) -> (u32, u32) {
    let mut p = Ext4Params::mkfs_defaults(4096, blocks);
    p.mb = MbConfig::defaults(variant);
    let mut fs = Ext4::new(p).unwrap();
    let mut rng = Rng::stream(Seed(seed), "ext4-random");
    let mut files: Vec<(u32, RangeSet)> = Vec::new();
    let (mut ok, mut enospc) = (0u32, 0u32);
    let span = blocks / 4;
    for step in 0..1500 {
        if files.is_empty() || (files.len() < 6 && rng.below(20) == 0) {
            let ino = fs.create(&format!("f{step}")).unwrap();
            files.push((ino, RangeSet::new()));
            continue;
        }
        let k = rng.below(files.len() as u64) as usize;
        let ino = files[k].0;
        let r = match rng.below(10) {
            0..=3 => {
                let l = rng.below(span);
                let n = 1 + rng.below(700);
                let r = fs.delalloc_reserve(ino, l, n);
                if r.is_ok() {
                    // what is not yet on disk is now dirty in the page cache
                    let mapped: Vec<FileExtent> = fs.fiemap(ino);
                    files[k].1.insert(l, l + n);
                    for e in mapped {
                        files[k].1.remove(e.logical, e.logical + e.len);
                    }
                }
                r
            }
            4..=6 => {
                // write back part of a dirty range
                let Some((s, e)) = files[k].1.next_from(rng.below(span)) else {
                    continue;
                };
                let n = 1 + rng.below(e - s);
                let mut out = Vec::new();
                let r = fs.map_for_writeback(ino, s, n, &mut out);
                if let Ok(m) = r {
                    assert!(m >= 1 && m <= n);
                    assert_eq!(out[0].logical, s);
                    files[k].1.remove(s, s + m);
                }
                r.map(|_| ())
            }
            7 => {
                let l = rng.below(span);
                let r = fs.get_block(ino, l, 1 + rng.below(300), true);
                if let Ok(m) = r {
                    files[k].1.remove(l, l + m.count);
                }
                r.map(|_| ())
            }
            8 => {
                fs.release_file(ino);
                Ok(())
            }
            _ => {
                fs.set_i_size(ino, rng.below(span) * 4096);
                Ok(())
            }
        };
        match r {
            Ok(()) => ok += 1,
            Err(FsError::NoSpace) => enospc += 1,
            Err(e) => panic!("step {step}: {e}"),
        }
        if let Err(e) = fs.check_consistency() {
            panic!("step {step}: {e}");
        }
    }
    // Writing back everything still dirty succeeds: reservations were honoured.
    for (ino, dirty) in &files {
        for (s, e) in dirty.iter().collect::<Vec<_>>() {
            let mut at = s;
            while at < e {
                let mut out = Vec::new();
                at += fs.map_for_writeback(*ino, at, e - at, &mut out).unwrap();
            }
        }
    }
    assert_eq!(fs.dirty_reserved(), 0);
    fs.check_consistency().unwrap();
    (ok, enospc)
}

#[test]
fn no_block_is_allocated_twice() {
    for v in [MbVariant::V2628, MbVariant::V2630] {
        let (ok, _) = random_ops(v, 1 << 18, 1);
        assert!(ok > 1000);
    }
}

#[test]
fn accounting_holds_through_enospc() {
    for v in [MbVariant::V2628, MbVariant::V2630] {
        // 96 MiB: one group, 1024-block journal; the writers overfill it.
        let (ok, enospc) = random_ops(v, 24576, 7);
        assert!(ok > 500, "{ok}");
        assert!(enospc > 0, "{v:?} never ran out of space");
    }
}

#[test]
fn tunables_build_both_file_systems_for_every_profile() {
    use iostack_core::{Profile, Tunables};
    use iostack_fs::xfs::{Xfs, XfsParams};
    for p in Profile::ALL {
        let t = Tunables::new(p, &[iostack_fs::TUNABLES]);
        let e = Ext4Params::from_tunables(4096, 1 << 20, &t);
        let want = if p <= Profile::V2_6_28 {
            (MbVariant::V2628, 32768, true)
        } else {
            (MbVariant::V2630, 2048, false)
        };
        assert_eq!(
            (e.mb.variant, e.max_writeback_run, e.lazy_itable_init),
            want
        );
        assert_eq!((e.mb.stream_req, e.mb.group_prealloc), (16, 512));
        let fs = Ext4::new(e).unwrap();
        assert_eq!(fs.max_writeback_run(), want.1);
        assert_eq!(fs.mount_dirty_bdev_ranges().is_empty(), !want.2);
        let x = Xfs::new(XfsParams::from_tunables(4096, 1 << 20, &t)).unwrap();
        assert_eq!(x.params().writeio_log, 16);
    }
}
