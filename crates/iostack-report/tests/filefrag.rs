//! filefrag golden tests: real `filefrag` 1.47.0 output (Debian 12 e2fsprogs
//! 1.47.0-2) captured from files written on loop-mounted ext4 and ext2 images,
//! and the samples in `shared/reference/samples/filefrag_v.txt`; the input
//! extents are the ones each output lists.
//!
//! How the real outputs were made (as root, on this machine):
//! ```text
//! dd if=/dev/zero of=/tmp/img bs=1M count=256; mkfs.ext4 -q [-b 4096] /tmp/img
//! mount -o loop /tmp/img /mnt/x; cd /mnt/x
//! for i in 0 1 2 3 4 5; do   # two files written in turns, 64 KiB at a time
//!   dd if=/dev/urandom of=frag.dat  bs=64k count=1 seek=$i oflag=direct conv=notrunc
//!   dd if=/dev/urandom of=other.dat bs=64k count=1 seek=$i oflag=direct conv=notrunc
//! done
//! dd if=/dev/urandom of=frag.dat bs=4k count=3 seek=200 oflag=direct conv=notrunc
//! dd if=/dev/urandom of=frag.dat bs=4k count=1 seek=300 conv=notrunc
//! dd if=/dev/urandom of=frag.dat bs=4k count=2 seek=96 oflag=direct conv=notrunc  # 4 KiB fs only
//! dd if=/dev/urandom of=holefirst.dat bs=4k count=4 seek=10 oflag=direct
//! dd if=/dev/urandom of=big.dat bs=1M count=40 oflag=direct
//! touch empty.dat; dd if=/dev/urandom of=one.dat bs=100 count=1; sync
//! filefrag -v <file>; filefrag <file>
//! # ext2 (indirect mapping): mkfs.ext2 -q -b 4096, then
//! dd if=/dev/urandom of=ind.dat bs=1M count=6 oflag=direct   # statfs f_blocks 61402
//! ```

use iostack_report::filefrag::{count_extents, render, render_fs, FragExtent, FsInfo};

fn ext(logical: u64, physical: u64, len: u64, last: bool) -> FragExtent {
    FragExtent {
        logical,
        physical,
        len,
        last,
    }
}

/// The `... found` line the default output prints alone.
fn last_line(verbose: &str) -> &str {
    let body = verbose.trim_end_matches('\n');
    &verbose[body.rfind('\n').map_or(0, |i| i + 1)..]
}

fn check(path: &str, size: u64, bs: u32, extents: &[FragExtent], golden: &str) {
    assert_eq!(render(path, size, bs, extents, true), golden, "{path} -v");
    assert_eq!(
        render(path, size, bs, extents, false),
        last_line(golden),
        "{path}"
    );
}

#[test]
fn ext4_4k_interleaved_file_with_holes() {
    // Extents 2 and 3 lie past holes but continue where filefrag expects them
    // (start + logical distance, and the previous end): 4 lines, 2 extents.
    let extents = [
        ext(0, 4139, 16, false),
        ext(16, 4651, 82, false),
        ext(200, 4835, 3, false),
        ext(300, 4838, 1, true),
    ];
    assert_eq!(count_extents(&extents), 2);
    check(
        "/mnt/x/frag.dat",
        1232896,
        4096,
        &extents,
        concat!(
            "Filesystem type is: ef53\n",
            "File size of /mnt/x/frag.dat is 1232896 (301 blocks of 4096 bytes)\n",
            " ext:     logical_offset:        physical_offset: length:   expected: flags:\n",
            "   0:        0..      15:       4139..      4154:     16:            \n",
            "   1:       16..      97:       4651..      4732:     82:       4155:\n",
            "   2:      200..     202:       4835..      4837:      3:            \n",
            "   3:      300..     300:       4838..      4838:      1:             last,eof\n",
            "/mnt/x/frag.dat: 2 extents found\n",
        ),
    );
}

#[test]
fn ext4_4k_first_extent_past_a_hole_shows_its_offset_as_expected() {
    let extents = [ext(10, 4171, 1, false), ext(11, 37376, 3, true)];
    assert_eq!(count_extents(&extents), 2);
    check(
        "/mnt/x/holefirst.dat",
        57344,
        4096,
        &extents,
        concat!(
            "Filesystem type is: ef53\n",
            "File size of /mnt/x/holefirst.dat is 57344 (14 blocks of 4096 bytes)\n",
            " ext:     logical_offset:        physical_offset: length:   expected: flags:\n",
            "   0:       10..      10:       4171..      4171:      1:         10:\n",
            "   1:       11..      13:      37376..     37378:      3:       4172: last,eof\n",
            "/mnt/x/holefirst.dat: 2 extents found\n",
        ),
    );
}

#[test]
fn ext4_4k_two_extents_empty_and_tiny_files() {
    check(
        "big.dat",
        41943040,
        4096,
        &[ext(0, 37120, 256, false), ext(256, 37888, 9984, true)],
        concat!(
            "Filesystem type is: ef53\n",
            "File size of big.dat is 41943040 (10240 blocks of 4096 bytes)\n",
            " ext:     logical_offset:        physical_offset: length:   expected: flags:\n",
            "   0:        0..     255:      37120..     37375:    256:            \n",
            "   1:      256..   10239:      37888..     47871:   9984:      37376: last,eof\n",
            "big.dat: 2 extents found\n",
        ),
    );
    assert_eq!(
        render(
            "big.dat",
            41943040,
            4096,
            &[ext(0, 37120, 256, false), ext(256, 37888, 9984, true)],
            false
        ),
        "big.dat: 2 extents found\n"
    );
    check(
        "empty.dat",
        0,
        4096,
        &[],
        concat!(
            "Filesystem type is: ef53\n",
            "File size of empty.dat is 0 (0 blocks of 4096 bytes)\n",
            "empty.dat: 0 extents found\n",
        ),
    );
    check(
        "one.dat",
        100,
        4096,
        &[ext(0, 37379, 1, true)],
        concat!(
            "Filesystem type is: ef53\n",
            "File size of one.dat is 100 (1 block of 4096 bytes)\n",
            " ext:     logical_offset:        physical_offset: length:   expected: flags:\n",
            "   0:        0..       0:      37379..     37379:      1:             last,eof\n",
            "one.dat: 1 extent found\n",
        ),
    );
}

#[test]
fn ext4_1k_blocks() {
    let extents = [
        ext(0, 9025, 64, false),
        ext(64, 9153, 64, false),
        ext(128, 9345, 128, false),
        ext(256, 9729, 128, false),
        ext(800, 12705, 12, false),
        ext(1200, 8965, 4, true),
    ];
    assert_eq!(count_extents(&extents), 6);
    check(
        "/mnt/x/frag.dat",
        1232896,
        1024,
        &extents,
        concat!(
            "Filesystem type is: ef53\n",
            "File size of /mnt/x/frag.dat is 1232896 (1204 blocks of 1024 bytes)\n",
            " ext:     logical_offset:        physical_offset: length:   expected: flags:\n",
            "   0:        0..      63:       9025..      9088:     64:            \n",
            "   1:       64..     127:       9153..      9216:     64:       9089:\n",
            "   2:      128..     255:       9345..      9472:    128:       9217:\n",
            "   3:      256..     383:       9729..      9856:    128:       9473:\n",
            "   4:      800..     811:      12705..     12716:     12:      10273:\n",
            "   5:     1200..    1203:       8965..      8968:      4:      13105: last,eof\n",
            "/mnt/x/frag.dat: 6 extents found\n",
        ),
    );
    check(
        "/mnt/x/holefirst.dat",
        57344,
        1024,
        &[ext(40, 9321, 16, true)],
        concat!(
            "Filesystem type is: ef53\n",
            "File size of /mnt/x/holefirst.dat is 57344 (56 blocks of 1024 bytes)\n",
            " ext:     logical_offset:        physical_offset: length:   expected: flags:\n",
            "   0:       40..      55:       9321..      9336:     16:         40: last,eof\n",
            "/mnt/x/holefirst.dat: 1 extent found\n",
        ),
    );
}

#[test]
fn ext2_indirect_file_is_merged_with_cylinder_groups() {
    let extents = [
        ext(0, 2073, 12, false),
        ext(12, 2828, 500, false),
        ext(512, 3584, 1024, true),
    ];
    let fs = FsInfo::ext2(61402);
    let golden = concat!(
        "Filesystem type is: ef53\n",
        "Filesystem cylinder groups approximately 2\n",
        "File size of /mnt/y/ind.dat is 6291456 (1536 blocks of 4096 bytes)\n",
        " ext:     logical_offset:        physical_offset: length:   expected: flags:\n",
        "   0:        0..      11:       2073..      2084:     12:             merged\n",
        "   1:       12..     511:       2828..      3327:    500:       2085: merged\n",
        "   2:      512..    1535:       3584..      4607:   1024:       3328: last,merged,eof\n",
        "/mnt/y/ind.dat: 3 extents found\n",
    );
    assert_eq!(
        render_fs(&fs, "/mnt/y/ind.dat", 6291456, 4096, &extents, true),
        golden
    );
    assert_eq!(
        render_fs(&fs, "/mnt/y/ind.dat", 6291456, 4096, &extents, false),
        last_line(golden)
    );
}

#[test]
fn reference_samples() {
    // shared/reference/samples/filefrag_v.txt: 64 MiB written with O_DIRECT.
    check(
        "/mnt/test/dd.img",
        67108864,
        4096,
        &[ext(0, 5178112, 16384, true)],
        concat!(
            "Filesystem type is: ef53\n",
            "File size of /mnt/test/dd.img is 67108864 (16384 blocks of 4096 bytes)\n",
            " ext:     logical_offset:        physical_offset: length:   expected: flags:\n",
            "   0:        0..   16383:    5178112..   5194495:  16384:             last,eof\n",
            "/mnt/test/dd.img: 1 extent found\n",
        ),
    );
    // The sparse file there (its last extent is also unwritten, a flag these
    // extents do not carry): 4 lines, 2 extents.
    let sparse = [
        ext(0, 3940352, 64, false),
        ext(1000, 3941352, 1, false),
        ext(1024, 3941376, 32, false),
        ext(2048, 3932928, 256, true),
    ];
    assert_eq!(
        render("/mnt/test/ff.img", 9437184, 4096, &sparse, false),
        "/mnt/test/ff.img: 2 extents found\n"
    );
    let v = render("/mnt/test/ff.img", 9437184, 4096, &sparse, true);
    let lines: Vec<&str> = v.lines().collect();
    assert_eq!(
        lines[3..6],
        [
            "   0:        0..      63:    3940352..   3940415:     64:            ",
            "   1:     1000..    1000:    3941352..   3941352:      1:            ",
            "   2:     1024..    1055:    3941376..   3941407:     32:            ",
        ]
    );
    assert_eq!(
        lines[6],
        "   3:     2048..    2303:    3932928..   3933183:    256:    3942400: last,eof"
    );
}
