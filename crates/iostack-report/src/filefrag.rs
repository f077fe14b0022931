//! `filefrag` output (e2fsprogs 1.47.0 as shipped by Debian, `misc/filefrag.c`,
//! FIEMAP path): the default `<file>: N extents found` line and the `-v` report
//! with its extent table.
//!
//! What the tool does, and this module repeats:
//! * `frag_report`: with `-v`, `Filesystem type is: <f_type in hex>`; for a file
//!   without `EXT4_EXTENTS_FL` on ext2/3/4 (an indirect-mapped file),
//!   `Filesystem cylinder groups approximately <div_ceil(f_blocks, bs × 8)>`;
//!   then `File size of <f> is <bytes> (<n> block[s] of <bs> bytes)`.
//!   Column widths: logical = max(8, ⌊log10(file blocks)⌋), physical =
//!   max(10, ⌊log10(f_blocks)⌋).
//! * `filefrag_fiemap`: the table header is printed only if FIEMAP returns at
//!   least one extent. An extent starts a new fragment unless its logical
//!   offset is 0, or its physical start equals the previous extent's physical
//!   start plus the logical distance between them (`expected`, so a hole in the
//!   file does not count), or the previous extent's physical end
//!   (`expected_dense`). The previous extent starts out all zero, so a file
//!   whose first extent is not at logical 0 shows that offset as `expected` on
//!   its first line (a quirk of the real tool, reproduced).
//! * `print_extent_info`: `%4d: %*llu..%*llu: %*llu..%*llu: %6llu: %s`, ranges
//!   inclusive; the flags column starts with `expected` (`%*llu: `) when the
//!   extent is a new fragment and blanks otherwise, then `last,`, `merged,` and
//!   `eof,` (when the extent reaches the file size), and the last character is
//!   cut (the trailing comma, or one of the blanks).
//! * The last line: `<file>: 1 extent found` or `<file>: N extents found`
//!   (`0 extents found` for a file without blocks). The `perfection would be`
//!   suffix belongs to the FIBMAP fallback, which is not modelled.
//!
//! Extents are given in file-system blocks of `block_size` bytes; the
//! arithmetic is done on byte offsets with C's unsigned wrap-around, as the tool
//! does on FIEMAP's byte values.

/// One extent as FIEMAP reports it, in file-system blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FragExtent {
    /// First logical block in the file.
    pub logical: u64,
    /// First physical block on the device.
    pub physical: u64,
    /// Length in blocks.
    pub len: u64,
    /// `FIEMAP_EXTENT_LAST`: the file's last extent.
    pub last: bool,
}

/// `statfs` magic of ext2, ext3 and ext4 (`EXT2_SUPER_MAGIC`).
pub const EXT2_SUPER_MAGIC: u64 = 0xef53;

/// What `statfs` and the inode flags tell `filefrag` about the file system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsInfo {
    /// `statfs` `f_type`, printed in hex by `-v`.
    pub f_type: u64,
    /// `statfs` `f_blocks`: widens the physical columns past 10 digits and
    /// counts the cylinder groups; 0 if unknown.
    pub f_blocks: u64,
    /// The file has no `EXT4_EXTENTS_FL` (ext2/ext3 indirect mapping). `-v` then
    /// prints the cylinder-group line, and the kernel's block-mapped FIEMAP
    /// (`__generic_block_fiemap` in `fs/ioctl.c`, iomap for such ext4 inodes)
    /// marks every extent `FIEMAP_EXTENT_MERGED`.
    pub indirect: bool,
}

impl FsInfo {
    /// An extent-mapped file on ext4 (also what `render` assumes).
    pub const EXT4: FsInfo = FsInfo {
        f_type: EXT2_SUPER_MAGIC,
        f_blocks: 0,
        indirect: false,
    };

    /// An indirect-mapped file on ext2/ext3 of `f_blocks` blocks.
    pub fn ext2(f_blocks: u64) -> FsInfo {
        FsInfo {
            f_type: EXT2_SUPER_MAGIC,
            f_blocks,
            indirect: true,
        }
    }

    fn is_ext(&self) -> bool {
        // EXT2_OLD_SUPER_MAGIC 0xef51, 0xef52 and EXT2_SUPER_MAGIC 0xef53.
        matches!(self.f_type, 0xef51..=0xef53)
    }
}

/// `ulong_log10`: ⌊log10(arg)⌋, 0 for 0.
fn ulong_log10(arg: u64) -> usize {
    let mut l = 0;
    let mut a = arg / 10;
    while a != 0 {
        l += 1;
        a /= 10;
    }
    l
}

/// `ulong_log2`: ⌊log2(arg)⌋, 0 for 0.
fn ulong_log2(arg: u64) -> u32 {
    let mut l = 0;
    let mut a = arg >> 1;
    while a != 0 {
        l += 1;
        a >>= 1;
    }
    l
}

/// A FIEMAP extent in bytes, as the tool sees it.
#[derive(Clone, Copy, Default)]
struct Fe {
    logical: u64,
    physical: u64,
    length: u64,
}

fn to_bytes(e: &FragExtent, bs: u64) -> Fe {
    Fe {
        logical: e.logical.wrapping_mul(bs),
        physical: e.physical.wrapping_mul(bs),
        length: e.len.wrapping_mul(bs),
    }
}

/// Walk the extents as `filefrag_fiemap` does: for each, the `expected` value
/// it prints (0 = continues the previous fragment); returns the fragment count.
fn walk(extents: &[FragExtent], bs: u64, mut each: impl FnMut(usize, &Fe, u64)) -> u64 {
    let mut last = Fe::default();
    let mut tot: u64 = 0;
    for (n, e) in extents.iter().enumerate() {
        let fe = to_bytes(e, bs);
        let expected_dense = last.physical.wrapping_add(last.length);
        let mut expected = last
            .physical
            .wrapping_add(fe.logical)
            .wrapping_sub(last.logical);
        if fe.logical != 0 && fe.physical != expected && fe.physical != expected_dense {
            tot += 1;
        } else {
            expected = 0;
            if tot == 0 {
                tot = 1;
            }
        }
        each(n, &fe, expected);
        last = fe;
    }
    tot
}

/// The number `filefrag` reports in `N extents found`: physically contiguous
/// extents (continuing at the previous physical end, or at the previous start
/// plus the logical distance across a hole) count as one.
pub fn count_extents(extents: &[FragExtent]) -> u64 {
    // Block units: the rule is the same in any unit.
    walk(extents, 1, |_, _, _| {})
}

/// `filefrag [-v] <path>` for an extent-mapped file on ext4.
pub fn render(
    path: &str,
    size_bytes: u64,
    block_size: u32,
    extents: &[FragExtent],
    verbose: bool,
) -> String {
    render_fs(
        &FsInfo::EXT4,
        path,
        size_bytes,
        block_size,
        extents,
        verbose,
    )
}

/// `filefrag [-v] <path>` on the file system described by `fs`. A block size
/// of 0 is taken as 1.
pub fn render_fs(
    fs: &FsInfo,
    path: &str,
    size_bytes: u64,
    block_size: u32,
    extents: &[FragExtent],
    verbose: bool,
) -> String {
    let bs = block_size.max(1) as u64;
    let shift = ulong_log2(bs);
    let numblocks = size_bytes.div_ceil(bs);
    let lw = ulong_log10(numblocks).max(8);
    let pw = ulong_log10(fs.f_blocks).max(10);
    let indirect = fs.indirect && fs.is_ext();
    let mut s = String::new();
    if verbose {
        s += &format!("Filesystem type is: {:x}\n", fs.f_type);
        if indirect {
            // div_ceil on unsigned ints, as in the tool.
            let (a, b) = (fs.f_blocks as u32, (bs as u32).wrapping_mul(8));
            let groups = if a == 0 || b == 0 { 0 } else { (a - 1) / b + 1 };
            s += &format!("Filesystem cylinder groups approximately {groups}\n");
        }
        s += &format!(
            "File size of {path} is {size_bytes} ({} block{} of {} bytes)\n",
            numblocks.wrapping_mul(bs) >> shift,
            if numblocks == 1 { "" } else { "s" },
            1u64 << shift
        );
        if !extents.is_empty() {
            s += &format!(
                " ext: {:>w1$} {:>w2$} length: {:>w3$} flags:\n",
                "logical_offset:",
                "physical_offset:",
                "expected:",
                w1 = lw * 2 + 3,
                w2 = pw * 2 + 3,
                w3 = pw + 1
            );
        }
    }
    let mut table = String::new();
    let n = walk(extents, bs, |i, fe, expected| {
        if !verbose {
            return;
        }
        let ext_len = fe.length >> shift;
        let ext_blks = fe.length.wrapping_sub(1) >> shift;
        let logical = fe.logical >> shift;
        let physical = fe.physical >> shift;
        let mut flags = if expected != 0 {
            format!("{:>pw$}: ", expected >> shift)
        } else {
            // "%.*s  " of a 19-blank string.
            " ".repeat(pw.min(19) + 2)
        };
        if extents[i].last {
            flags += "last,";
        }
        if indirect {
            flags += "merged,";
        }
        if fe.logical.wrapping_add(fe.length) >= size_bytes {
            flags += "eof,";
        }
        flags.pop();
        table += &format!(
            "{i:4}: {logical:>lw$}..{:>lw$}: {physical:>pw$}..{:>pw$}: {ext_len:6}: {flags}\n",
            logical.wrapping_add(ext_blks),
            physical.wrapping_add(ext_blks),
        );
    });
    s += &table;
    if n == 1 {
        s += &format!("{path}: 1 extent found\n");
    } else {
        s += &format!("{path}: {n} extents found\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(logical: u64, physical: u64, len: u64, last: bool) -> FragExtent {
        FragExtent {
            logical,
            physical,
            len,
            last,
        }
    }

    #[test]
    fn counting_follows_filefrag() {
        assert_eq!(count_extents(&[]), 0);
        assert_eq!(count_extents(&[ext(0, 100, 8, true)]), 1);
        // Physically adjacent pieces are one fragment.
        assert_eq!(
            count_extents(&[ext(0, 100, 8, false), ext(8, 108, 8, true)]),
            1
        );
        // A jump is a new one.
        assert_eq!(
            count_extents(&[ext(0, 100, 8, false), ext(8, 200, 8, true)]),
            2
        );
        // Across a hole: continuing at start + logical distance is contiguous,
        // and so is continuing at the previous physical end.
        assert_eq!(
            count_extents(&[ext(0, 100, 8, false), ext(20, 120, 8, true)]),
            1
        );
        assert_eq!(
            count_extents(&[ext(0, 100, 8, false), ext(20, 108, 8, true)]),
            1
        );
        // A first extent past logical 0 counts once, whatever its position.
        assert_eq!(count_extents(&[ext(10, 4171, 1, true)]), 1);
        assert_eq!(count_extents(&[ext(10, 10, 1, true)]), 1);
    }

    #[test]
    fn default_output_is_the_count_line() {
        assert_eq!(
            render("/mnt/f", 0, 4096, &[], false),
            "/mnt/f: 0 extents found\n"
        );
        assert_eq!(
            render("f", 4096, 4096, &[ext(0, 9, 1, true)], false),
            "f: 1 extent found\n"
        );
        assert_eq!(
            render(
                "f",
                8192,
                4096,
                &[ext(0, 9, 1, false), ext(1, 99, 1, true)],
                false
            ),
            "f: 2 extents found\n"
        );
    }

    #[test]
    fn widths_grow_with_the_file_and_the_file_system() {
        // 10^9 blocks: the logical columns widen to 9 digits; f_blocks of 10^11
        // widens the physical ones to 11.
        let fs = FsInfo {
            f_blocks: 100_000_000_000,
            ..FsInfo::EXT4
        };
        let out = render_fs(
            &fs,
            "big",
            1_000_000_000 * 4096,
            4096,
            &[ext(0, 5, 1_000_000_000, true)],
            true,
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[2],
            " ext:       logical_offset:          physical_offset: length:    expected: flags:"
        );
        assert_eq!(
            lines[3],
            "   0:         0..999999999:           5.. 1000000004: 1000000000:              last,eof"
        );
    }
}
