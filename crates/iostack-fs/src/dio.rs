//! The direct-I/O bio builder, `fs/direct-io.c`, for one synchronous O_DIRECT read
//! or write: `direct_io_worker` → `do_direct_IO` → `submit_page_section` →
//! `dio_send_cur_page` → `dio_new_bio` / `dio_bio_add_page` / `dio_bio_submit`.
//!
//! The kernel builds and submits bios as it walks the user pages; here the walk
//! produces the list of bios in submission order, and the caller submits them to
//! the block layer one by one, charging CPU time between them. The three
//! boundary-handling variants are the code of their kernels:
//!
//! * `PerChunk` (2.6.33 to 2.6.37, K2637): `do_direct_IO` sets
//!   `dio->boundary = buffer_boundary(map_bh)` before *every* chunk, and
//!   `dio_send_cur_page` submits the open bio on a boundary *before* adding the
//!   page, so every page of a boundary-flagged mapping ends a bio.
//! * `RfcSeparateMeta` (seed 002's RFC): the same, but the boundary submit happens
//!   only if the file system asked for `separate_meta_reads` (btrfs).
//! * `LastChunk` (3.10, commits 092c8d46 and b1058b98): boundary is taken only on
//!   the last chunk of a mapping, and `submit_page_section` sends the page and
//!   then submits the bio. As released, `dio_new_bio` inside the first send can
//!   clear the boundary (fixed in 2021 by df41872b); that is modelled too.

use crate::{FsError, GetBlock};

pub const PAGE_SIZE: u64 = 4096;
/// `DIO_PAGES`: user pages pinned per `get_user_pages_fast` batch.
pub const DIO_PAGES: u64 = 64;
/// `BIO_MAX_PAGES`.
pub const BIO_MAX_PAGES: u32 = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Boundary {
    PerChunk,
    RfcSeparateMeta,
    LastChunk,
}

impl Boundary {
    pub fn from_name(s: &str) -> Boundary {
        match s {
            "per-chunk" => Boundary::PerChunk,
            "rfc-separate-meta" => Boundary::RfcSeparateMeta,
            "last-chunk" => Boundary::LastChunk,
            _ => panic!("unknown dio/boundary variant {s}"),
        }
    }
}

/// Whether a direct write may allocate blocks in a hole (`get_more_blocks`'
/// `create` argument, and what the file system's `get_block` does with it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DioHoles {
    /// `blockdev_direct_IO` (`DIO_LOCKING`, `DIO_SKIP_HOLES` from 2.6.33): ext2,
    /// ext3, and ext4 before 2.6.32. Blocks are created only beyond `i_size`; a
    /// hole inside `i_size` ends the direct write with `-ENOTBLK`, and
    /// `__generic_file_aio_write` writes the rest through the page cache
    /// (`generic_file_buffered_write`, then `filemap_write_and_wait_range` and
    /// `invalidate_mapping_pages`). That fallback is not modelled: such a write
    /// is refused with a reason.
    SkipHoles,
    /// ext4 from 2.6.32 (`ext4_ext_direct_IO`, commit 4c0425ff): a write wholly
    /// inside `i_size` maps through `ext4_get_block_dio_write`, which ignores the
    /// `create` it is given and allocates the hole as an uninitialized extent
    /// (converted after the I/O); a write reaching past `i_size` takes
    /// `ext4_ind_direct_IO`, i.e. `SkipHoles`.
    Ext4DioWrite,
    /// XFS: `xfs_vm_direct_IO` passes no `DIO_SKIP_HOLES`, so `create` is set for
    /// every write and `xfs_get_blocks_direct` → `xfs_iomap_write_direct`
    /// allocates (unwritten extents inside EOF).
    Allocate,
}

impl DioHoles {
    /// `get_more_blocks`: does this write ask `get_block` to create block
    /// `block_in_file` of a request `[offset, offset + len)`?
    fn create(self, block_in_file: u64, blkbits: u32, offset: u64, len: u64, i_size: u64) -> bool {
        let beyond = block_in_file >= i_size >> blkbits;
        match self {
            DioHoles::SkipHoles => beyond,
            DioHoles::Ext4DioWrite => beyond || offset + len <= i_size,
            DioHoles::Allocate => true,
        }
    }
}

/// Queue limits `bio_add_page` and `bio_get_nr_vecs` consult.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BioLimits {
    pub max_sectors: u32,
    pub max_segments: u32,
}

/// One bio as `dio_bio_submit` hands it to `submit_bio`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DioBio {
    /// First sector on the file system's block device (the partition).
    pub sector: u64,
    pub sectors: u32,
    /// Bio vectors (user page pieces); one physical segment each.
    pub segments: u32,
    /// File offset of the bio's first byte (`logical_offset_in_bio`).
    pub logical_offset: u64,
}

/// The outcome of building one direct I/O.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DioPlan {
    pub bios: Vec<DioBio>,
    /// Bytes the request transfers (clipped at end of file for reads).
    pub bytes: u64,
    /// Bytes of holes zero-filled in memory without I/O.
    pub zeroed: u64,
    /// `get_block` calls made.
    pub get_block_calls: u32,
    /// `dio_bio_reap` passes that completed finished bios (every 64 new bios).
    pub reaps: u32,
    /// Reads carry `REQ_SYNC` (6.x `__blkdev_direct_IO_simple`'s
    /// `submit_bio_wait`).
    pub read_sync: bool,
}

/// The open bio (`dio->bio`).
struct OpenBio {
    sector: u64,
    size: u64,
    vecs: u32,
    max_vecs: u32,
    logical_offset: u64,
    /// Page index and end offset of the last bvec, for in-page merging.
    last_page: u64,
    last_end: u64,
}

/// `struct dio` state used while building.
struct Dio {
    variant: Boundary,
    separate_meta: bool,
    blkbits: u32,
    limits: BioLimits,
    pages_in_io: u64,
    boundary: bool,
    reap_counter: u32,
    bio: Option<OpenBio>,
    final_block_in_bio: u64,
    // The deferred page (`cur_page`).
    cur_page: Option<u64>,
    cur_page_offset: u64,
    cur_page_len: u64,
    cur_page_block: u64,
    cur_page_fs_offset: u64,
    plan: DioPlan,
}

impl Dio {
    /// `bio_get_nr_vecs`: `max_sectors` worth of pages, capped at `max_segments`.
    fn bio_get_nr_vecs(&self) -> u32 {
        let pages = ((self.limits.max_sectors as u64 * 512).div_ceil(PAGE_SIZE)) as u32;
        pages.min(self.limits.max_segments)
    }

    /// `dio_new_bio`.
    fn new_bio(&mut self, start_block: u64) {
        // dio_bio_reap: every 64th new bio reaps the bios already completed.
        if self.reap_counter >= 64 {
            self.plan.reaps += 1;
            self.reap_counter = 0;
        } else {
            self.reap_counter += 1;
        }
        let nr_pages =
            (self.pages_in_io.min(self.bio_get_nr_vecs() as u64) as u32).min(BIO_MAX_PAGES);
        assert!(nr_pages > 0, "dio_new_bio with no pages left");
        self.bio = Some(OpenBio {
            sector: start_block << (self.blkbits - 9),
            size: 0,
            vecs: 0,
            max_vecs: nr_pages,
            logical_offset: self.cur_page_fs_offset,
            last_page: u64::MAX,
            last_end: 0,
        });
        self.boundary = false;
    }

    /// `dio_bio_submit`.
    fn bio_submit(&mut self) {
        let b = self.bio.take().expect("submit with no bio");
        assert!(b.size > 0);
        self.plan.bios.push(DioBio {
            sector: b.sector,
            sectors: (b.size / 512) as u32,
            segments: b.vecs,
            logical_offset: b.logical_offset,
        });
        self.boundary = false;
    }

    /// `dio_bio_add_page` → `bio_add_page`: false if the bio is full.
    fn bio_add_page(&mut self) -> bool {
        let max_bytes = self.limits.max_sectors as u64 * 512;
        let page = self.cur_page.expect("no current page");
        let (len, off) = (self.cur_page_len, self.cur_page_offset);
        let b = self.bio.as_mut().expect("no bio");
        if b.size + len > max_bytes {
            return false;
        }
        // __bio_add_page merges into the previous bvec when it continues it.
        let merges = b.last_page == page && b.last_end == off;
        if !merges {
            if b.vecs >= b.max_vecs || b.vecs >= self.limits.max_segments {
                return false;
            }
            b.vecs += 1;
        }
        b.size += len;
        b.last_page = page;
        b.last_end = off + len;
        if off + len == PAGE_SIZE {
            self.pages_in_io -= 1;
        }
        self.final_block_in_bio = self.cur_page_block + (len >> self.blkbits);
        true
    }

    /// `dio_send_cur_page`.
    fn send_cur_page(&mut self) {
        if let Some(b) = &self.bio {
            let bio_next_offset = b.logical_offset + b.size;
            let contiguous = self.final_block_in_bio == self.cur_page_block
                && self.cur_page_fs_offset == bio_next_offset;
            if !contiguous {
                self.bio_submit();
            } else if self.boundary
                && match self.variant {
                    Boundary::PerChunk => true,
                    Boundary::RfcSeparateMeta => self.separate_meta,
                    // 3.10 moved the boundary submit into submit_page_section.
                    Boundary::LastChunk => false,
                }
            {
                // Submit now if the underlying fs is about to perform a metadata read.
                self.bio_submit();
            }
        }
        if self.bio.is_none() {
            self.new_bio(self.cur_page_block);
        }
        if !self.bio_add_page() {
            self.bio_submit();
            self.new_bio(self.cur_page_block);
            assert!(self.bio_add_page(), "page does not fit an empty bio");
        }
    }

    /// `submit_page_section`.
    fn submit_page_section(&mut self, page: u64, offset: u64, len: u64, blocknr: u64, fs_off: u64) {
        let grows = self.cur_page == Some(page)
            && self.cur_page_offset + self.cur_page_len == offset
            && self.cur_page_block + (self.cur_page_len >> self.blkbits) == blocknr;
        if grows {
            self.cur_page_len += len;
            if self.variant != Boundary::LastChunk && self.boundary {
                self.send_cur_page();
                self.cur_page = None;
            }
        } else {
            if self.cur_page.is_some() {
                self.send_cur_page();
                self.cur_page = None;
            }
            self.cur_page = Some(page);
            self.cur_page_offset = offset;
            self.cur_page_len = len;
            self.cur_page_block = blocknr;
            self.cur_page_fs_offset = fs_off;
        }
        if self.variant == Boundary::LastChunk && self.boundary {
            // 3.10: send the page, then submit the bio it ended up in.
            self.send_cur_page();
            self.bio_submit();
            self.cur_page = None;
        }
    }
}

/// Build the bios of one O_DIRECT request of `len` bytes at file offset `offset`
/// of inode `ino` (`__blockdev_direct_IO` with `DIO_LOCKING | DIO_SKIP_HOLES`, as
/// ext2 and ext3 use it). The user buffer is page aligned.
#[allow(clippy::too_many_arguments)]
pub fn build(
    fs: &mut dyn GetBlock,
    ino: u32,
    write: bool,
    offset: u64,
    len: u64,
    variant: Boundary,
    limits: BioLimits,
    holes: DioHoles,
    plan: &mut DioPlan,
) -> Result<(), FsError> {
    let blkbits = fs.blkbits();
    let bs = 1u64 << blkbits;
    if offset % bs != 0 || len % bs != 0 {
        // The kernel retries at the device's logical block size with a blkfactor;
        // sub-block direct I/O is not modelled.
        return Err(FsError::Unaligned {
            offset,
            len,
            align: bs,
        });
    }
    let i_size = fs.i_size(ino);
    if fast_path(fs, ino, write, offset, len, limits, i_size, plan)? {
        return Ok(());
    }
    build_walk(fs, ino, write, offset, len, variant, limits, holes, plan)
}

/// The common case in one step: page-sized blocks, and the first `get_block` maps
/// the whole request as one run without a boundary, inside `i_size`, small enough
/// for one bio. The page walk then always produces exactly one bio covering the
/// request (no discontinuity, no boundary submit, no full bio), so this computes
/// that bio directly. Returns false, having changed nothing, when it does not apply.
#[allow(clippy::too_many_arguments)]
fn fast_path(
    fs: &mut dyn GetBlock,
    ino: u32,
    write: bool,
    offset: u64,
    len: u64,
    limits: BioLimits,
    i_size: u64,
    plan: &mut DioPlan,
) -> Result<bool, FsError> {
    let blkbits = fs.blkbits();
    let pages = len.div_ceil(PAGE_SIZE);
    if blkbits != 12
        || len == 0
        || offset + len > i_size
        || len > limits.max_sectors as u64 * 512
        || pages > (limits.max_segments as u64).min(BIO_MAX_PAGES as u64)
    {
        return Ok(false);
    }
    let first = offset >> blkbits;
    let blocks = len >> blkbits;
    // Inside i_size get_more_blocks never creates (DIO_SKIP_HOLES); asking is
    // side-effect free, and the walk would ask exactly this first.
    let m = fs.get_block(ino, first, blocks, false)?;
    let Some(pblk) = m.pblk else { return Ok(false) };
    if m.count < blocks || m.boundary {
        return Ok(false);
    }
    let _ = write;
    plan.bios.clear();
    plan.bios.push(DioBio {
        sector: pblk << (blkbits - 9),
        sectors: (len / 512) as u32,
        segments: pages as u32,
        logical_offset: offset,
    });
    plan.bytes = len;
    plan.zeroed = 0;
    plan.get_block_calls = 1;
    plan.reaps = 0;
    plan.read_sync = false;
    Ok(true)
}

/// `do_direct_IO`'s page walk, chunk by chunk.
#[allow(clippy::too_many_arguments)]
#[doc(hidden)]
pub fn build_walk(
    fs: &mut dyn GetBlock,
    ino: u32,
    write: bool,
    offset: u64,
    len: u64,
    variant: Boundary,
    limits: BioLimits,
    holes: DioHoles,
    plan: &mut DioPlan,
) -> Result<(), FsError> {
    let blkbits = fs.blkbits();
    let bs = 1u64 << blkbits;
    let i_size = fs.i_size(ino);
    let mut dio = Dio {
        variant,
        separate_meta: fs.separate_meta_reads(),
        blkbits,
        limits,
        // direct_io_worker: user pages spanned by the iovec.
        pages_in_io: len.div_ceil(PAGE_SIZE),
        boundary: false,
        reap_counter: 0,
        bio: None,
        final_block_in_bio: 0,
        cur_page: None,
        cur_page_offset: 0,
        cur_page_len: 0,
        cur_page_block: 0,
        cur_page_fs_offset: 0,
        plan: std::mem::take(plan),
    };
    dio.plan.bios.clear();
    dio.plan.bytes = 0;
    dio.plan.zeroed = 0;
    dio.plan.get_block_calls = 0;
    dio.plan.reaps = 0;
    dio.plan.read_sync = false;
    let blocks_per_page = PAGE_SIZE >> blkbits;
    let mut block_in_file = offset >> blkbits;
    let final_block = (offset + len) >> blkbits;
    let mut blocks_available = 0u64;
    let mut next_block_for_io = 0u64;
    let mut map_boundary = false;
    let mut mapped = false;
    let mut page_index = 0u64; // user page number within the buffer
    let mut block_in_page = 0u64;
    let mut eof = false;

    // do_direct_IO
    'pages: while block_in_file < final_block {
        while block_in_page < blocks_per_page {
            let offset_in_page = block_in_page << blkbits;
            if blocks_available == 0 {
                // get_more_blocks: ask for everything that is left.
                let create = write && holes.create(block_in_file, blkbits, offset, len, i_size);
                let m = match fs.get_block(ino, block_in_file, final_block - block_in_file, create)
                {
                    Ok(m) => m,
                    Err(e) => {
                        *plan = dio.plan;
                        return Err(e);
                    }
                };
                dio.plan.get_block_calls += 1;
                mapped = m.pblk.is_some();
                if mapped {
                    blocks_available = m.count;
                    next_block_for_io = m.pblk.expect("mapped");
                    map_boundary = m.boundary;
                }
            }
            if !mapped {
                // Holes.
                if write {
                    // -ENOTBLK: __generic_file_aio_write would write the rest
                    // through the page cache; that fallback is not modelled.
                    *plan = dio.plan;
                    return Err(FsError::Unsupported(format!(
                        "an O_DIRECT write at offset {offset} length {len} meets a hole at \
                         offset {} inside the file's size ({i_size} bytes); the kernel \
                         writes the rest through the page cache (-ENOTBLK fallback in \
                         __generic_file_aio_write), which iostack does not model yet",
                        block_in_file << blkbits
                    )));
                }
                let i_size_aligned = i_size.div_ceil(bs) * bs;
                if block_in_file >= i_size_aligned >> blkbits {
                    eof = true;
                    break 'pages;
                }
                dio.plan.zeroed += bs;
                block_in_file += 1;
                block_in_page += 1;
                if block_in_file == final_block {
                    break;
                }
                continue;
            }
            let mut chunk = blocks_available;
            chunk = chunk.min((PAGE_SIZE - offset_in_page) >> blkbits);
            chunk = chunk.min(final_block - block_in_file);
            assert!(chunk > 0);
            match variant {
                Boundary::PerChunk | Boundary::RfcSeparateMeta => dio.boundary = map_boundary,
                Boundary::LastChunk => {
                    if chunk == blocks_available {
                        dio.boundary = map_boundary;
                    }
                }
            }
            dio.submit_page_section(
                page_index,
                offset_in_page,
                chunk << blkbits,
                next_block_for_io,
                block_in_file << blkbits,
            );
            next_block_for_io += chunk;
            block_in_file += chunk;
            block_in_page += chunk;
            blocks_available -= chunk;
            if block_in_file == final_block {
                break;
            }
        }
        page_index += 1;
        block_in_page = 0;
    }
    // direct_io_worker: send the deferred page and submit the open bio.
    if dio.cur_page.is_some() {
        dio.send_cur_page();
        dio.cur_page = None;
    }
    if dio.bio.is_some() {
        dio.bio_submit();
    }
    let io_bytes: u64 = dio.plan.bios.iter().map(|b| b.sectors as u64 * 512).sum();
    let mut bytes = io_bytes + dio.plan.zeroed;
    if !write && (eof || offset + bytes > i_size) {
        // dio_complete clips a read at i_size.
        bytes = i_size.saturating_sub(offset).min(bytes);
    }
    dio.plan.bytes = bytes;
    if write && offset + bytes > i_size {
        // generic_file_direct_write extends i_size after the I/O.
        fs.set_i_size(ino, offset + bytes);
    }
    *plan = dio.plan;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext2::{Ext2, Ext2Params};

    /// The one-step path gives exactly what the page walk gives.
    #[test]
    fn fast_path_equals_the_walk() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut f, ino) = fs();
        let mut raw = crate::RawBdev::new(1 << 30, 12);
        for i in 0..4000 {
            let off = (next() % 20_000) * 4096;
            let len = (1 + next() % 200) * 4096;
            let v = [
                Boundary::PerChunk,
                Boundary::RfcSeparateMeta,
                Boundary::LastChunk,
            ][i % 3];
            let on_raw = i % 4 == 0;
            let g: &mut dyn GetBlock = if on_raw { &mut raw } else { &mut f };
            let (mut a, mut b) = (DioPlan::default(), DioPlan::default());
            let ra = build(g, ino, false, off, len, v, LIM, DioHoles::SkipHoles, &mut a);
            let g: &mut dyn GetBlock = if on_raw { &mut raw } else { &mut f };
            let rb = build_walk(g, ino, false, off, len, v, LIM, DioHoles::SkipHoles, &mut b);
            assert_eq!(ra.is_ok(), rb.is_ok());
            assert_eq!(a, b, "offset {off} len {len} {v:?} raw={on_raw}");
        }
    }

    fn fs() -> (Ext2, u32) {
        let mut f = Ext2::new(Ext2Params {
            block_size: 4096,
            blocks: 1 << 20,
            blocks_per_group: 32768,
            inode_table_blocks: 512,
            journal: false,
        });
        let ino = f.create_sequential("f", 64 << 20, Some(16384)).unwrap();
        (f, ino)
    }

    const LIM: BioLimits = BioLimits {
        max_sectors: 1024,
        max_segments: 128,
    };

    fn kib(v: Boundary, off: u64, len: u64) -> Vec<u64> {
        let (mut f, ino) = fs();
        let mut p = DioPlan::default();
        build(
            &mut f,
            ino,
            false,
            off,
            len,
            v,
            LIM,
            DioHoles::SkipHoles,
            &mut p,
        )
        .unwrap();
        p.bios.iter().map(|b| b.sectors as u64 / 2).collect()
    }

    /// The table of kernel-vm-fs.md section 1.7 (K2637 and K310 source walk).
    #[test]
    fn boundary_variants_split_as_the_kernels_do() {
        use Boundary::*;
        assert_eq!(
            kib(PerChunk, 0, 64 << 10),
            vec![4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 8, 16]
        );
        assert_eq!(kib(PerChunk, 48 << 10, 64 << 10), vec![64]);
        assert_eq!(kib(PerChunk, 1032 * 4096, 64 << 10), vec![4, 4, 8, 48]);
        assert_eq!(kib(LastChunk, 0, 64 << 10), vec![48, 16]);
        assert_eq!(kib(LastChunk, 48 << 10, 64 << 10), vec![64]);
        assert_eq!(kib(LastChunk, 1032 * 4096, 64 << 10), vec![16, 48]);
        assert_eq!(kib(RfcSeparateMeta, 0, 64 << 10), vec![48, 16]);
        assert_eq!(kib(RfcSeparateMeta, 1032 * 4096, 64 << 10), vec![16, 48]);
    }

    #[test]
    fn large_reads_split_at_max_sectors() {
        let b = kib(Boundary::LastChunk, 48 << 10, 2 << 20);
        assert!(b.iter().all(|&k| k <= 512), "{b:?}");
        assert_eq!(b.iter().sum::<u64>(), 2048);
    }

    #[test]
    fn sectors_are_partition_relative_and_contiguous() {
        let (mut f, ino) = fs();
        let mut p = DioPlan::default();
        build(
            &mut f,
            ino,
            false,
            0,
            64 << 10,
            Boundary::PerChunk,
            LIM,
            DioHoles::SkipHoles,
            &mut p,
        )
        .unwrap();
        assert_eq!(p.bios[0].sector, 16384 * 8);
        assert_eq!(p.bios[1].sector, 16384 * 8 + 8);
        // After the indirect block: one block gap.
        assert_eq!(p.bios[11].sector, (16384 + 13) * 8);
        assert_eq!(p.bytes, 64 << 10);
    }

    #[test]
    fn reads_stop_at_eof_and_writes_extend() {
        let mut f = Ext2::new(Ext2Params {
            block_size: 4096,
            blocks: 1 << 20,
            blocks_per_group: 32768,
            inode_table_blocks: 512,
            journal: false,
        });
        let ino = f.create_sequential("f", 10_000, None).unwrap();
        let mut p = DioPlan::default();
        build(
            &mut f,
            ino,
            false,
            0,
            64 << 10,
            Boundary::PerChunk,
            LIM,
            DioHoles::SkipHoles,
            &mut p,
        )
        .unwrap();
        assert_eq!(p.bytes, 10_000);
        assert_eq!(p.bios.iter().map(|b| b.sectors).sum::<u32>(), 24);
        build(
            &mut f,
            ino,
            true,
            12288,
            8192,
            Boundary::PerChunk,
            LIM,
            DioHoles::SkipHoles,
            &mut p,
        )
        .unwrap();
        assert_eq!(p.bytes, 8192);
        assert_eq!(f.i_size(ino), 20480);
        assert!(build(
            &mut f,
            ino,
            false,
            100,
            4096,
            Boundary::PerChunk,
            LIM,
            DioHoles::SkipHoles,
            &mut p
        )
        .is_err());
    }
}
