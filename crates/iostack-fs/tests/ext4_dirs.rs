//! ext4 directories and inode placement (`fs/ext4/ialloc.c` of 2.6.34:
//! `find_group_orlov`, `find_group_other`; `fs/ext4/hash.c`), checked
//! against e2fsprogs' own hash and against the allocator's rules computed
//! here from the group counts.

use iostack_des::{Rng, Seed};
use iostack_fs::dirhash::{half_md4_hash, hash_seed_from};
use iostack_fs::ext4::{Ext4, Ext4Params, ROOT_INO};
use iostack_fs::mballoc::{MbConfig, MbVariant};
use iostack_fs::ExtentFs;

const BPG: u64 = 32768;
const FLEX: u64 = 16;

/// A fresh 64 GiB ext4 (512 groups, 32 flex groups) with `s_hash_seed` from
/// `seed`.
fn fs64(seed: u64) -> Ext4 {
    let mut p = Ext4Params::mkfs_defaults(4096, (64u64 << 30) / 4096);
    p.mb = MbConfig::defaults(MbVariant::V2630);
    let mut rng = Rng::stream(Seed(seed), "test/s_hash_seed");
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
    b[8..].copy_from_slice(&rng.next_u64().to_le_bytes());
    p.hash_seed = hash_seed_from(b);
    Ext4::new(p).unwrap()
}

fn flex_of(fs: &Ext4, ino: u32) -> u64 {
    fs.inode_group(ino).unwrap() / FLEX
}

#[test]
fn half_md4_matches_debugfs_dx_hash() {
    // `debugfs -R "dx_hash -h half_md4 [-s UUID] NAME"`, e2fsprogs 1.47.0.
    assert_eq!(half_md4_hash(b"fs_mark", [0; 4]), 0x751c_af7e);
    let uuid = [
        0x01, 0x23, 0xab, 0xcd, 0x45, 0x67, 0x48, 0x90, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07,
        0x18,
    ];
    let seed = hash_seed_from(uuid);
    assert_eq!(half_md4_hash(b"fs_mark", seed), 0x41d0_3cc2);
    let long = b"averyveryverylongdirectorynamethatisover32bytes";
    assert_eq!(half_md4_hash(long, seed), 0xc5e3_cad2);
}

/// The Orlov rule for a top-level directory, from the counts: the chosen
/// flex group has at least the average free inodes and free blocks.
fn qualifies(fs: &Ext4, f: u64) -> bool {
    let ngroups = fs.groups();
    let nflex = ngroups.div_ceil(FLEX);
    let ipg = fs.params().inodes_per_group;
    let free_i = |g: u64| ipg - fs.group_inode_counts(g).0;
    let free_b = |g: u64| fs.mballoc().group_free(g);
    let all_i: u64 = (0..ngroups).map(free_i).sum();
    let all_b: u64 = fs.mballoc().free_blocks();
    let gs = f * FLEX..((f + 1) * FLEX).min(ngroups);
    let fi: u64 = gs.clone().map(free_i).sum();
    let fb: u64 = gs.map(free_b).sum();
    fi >= all_i / nflex && fb >= all_b / nflex
}

#[test]
fn orlov_spreads_top_level_directories_over_qualifying_flex_groups() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..24 {
        let mut fs = fs64(seed);
        let before = fs64(seed);
        let d = fs.mkdir("fs_mark").unwrap();
        let f = flex_of(&fs, d);
        assert!(qualifies(&before, f), "seed {seed}: flex group {f}");
        // The first group of the flex group holds it (found_flex_bg).
        assert_eq!(fs.inode_group(d), Some(f * FLEX));
        seen.insert(f);
    }
    // Flex group 0 (root, lost+found, the reserved inodes: fewer free
    // inodes than the average) and the journal's (fewer free blocks) never
    // qualify; the hash spreads the rest.
    let journal_flex = fs64(0).journal_area().unwrap().0 / BPG / FLEX;
    assert!(!seen.contains(&0) && !seen.contains(&journal_flex));
    assert!(seen.len() >= 8, "only {seen:?}");
}

#[test]
fn second_top_level_directory_avoids_the_first() {
    // best_ndir: among qualifying flex groups the one with the fewest
    // directories wins, so a second top-level directory never joins the first.
    for seed in 0..8 {
        let mut fs = fs64(seed);
        let a = fs.mkdir("a").unwrap();
        let b = fs.mkdir("b").unwrap();
        assert_ne!(flex_of(&fs, a), flex_of(&fs, b), "seed {seed}");
    }
}

#[test]
fn subdirectories_and_files_stay_near_their_parent() {
    let mut fs = fs64(3);
    let top = fs.mkdir("fs_mark").unwrap();
    let sub = fs.mkdir("fs_mark/00").unwrap();
    // find_group_orlov's second loop starts at the parent's flex group.
    assert_eq!(flex_of(&fs, sub), flex_of(&fs, top));
    // find_group_other: the first group of the parent's flex group.
    let f = fs.create("fs_mark/00/file").unwrap();
    assert_eq!(fs.inode_group(f), Some(flex_of(&fs, sub) * FLEX));
    // A root file stays in group 0 as before.
    let r = fs.create("iozone.0").unwrap();
    assert_eq!(fs.inode_group(r), Some(0));
    assert_eq!(fs.dir_inode(""), Some(ROOT_INO));
    fs.check_consistency().unwrap();
}

#[test]
fn file_data_goes_to_its_inode_flex_group_and_directories_to_the_first_group() {
    let mut fs = fs64(5);
    let sub = fs.mkdir("d/e").unwrap();
    let fg = flex_of(&fs, sub);
    // The directory's block: ext4_ext_find_goal keeps the flex group's first
    // group for directories.
    let dblk = fs.fiemap(sub)[0].physical;
    assert_eq!(dblk / BPG, fg * FLEX, "directory block {dblk}");
    // A 64 KiB file written back: its goal is the second group of its
    // inode's flex group (a4912123).
    let ino = fs.create("d/e/f").unwrap();
    fs.delalloc_reserve(ino, 0, 16).unwrap();
    let mut out = Vec::new();
    fs.map_for_writeback(ino, 0, 16, &mut out).unwrap();
    assert_eq!(out[0].physical / BPG, fg * FLEX + 1, "{out:?}");
    fs.check_consistency().unwrap();
}

#[test]
fn a_file_is_not_a_directory() {
    let mut fs = fs64(1);
    fs.create("x").unwrap();
    assert!(fs.create("x/y").is_err());
}
