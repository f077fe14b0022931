//! Direct I/O on a block device in Linux 6.x (`block/fops.c`): `blkdev_direct_IO`
//! → `__blkdev_direct_IO_simple` (a synchronous I/O of at most `BIO_MAX_VECS`
//! pages: one bio on the stack, `submit_bio_wait`), `__blkdev_direct_IO_async`
//! (the same size, asynchronous) or `__blkdev_direct_IO` (larger: a loop of
//! bios under the task's plug).
//!
//! Each bio takes `bio_iov_iter_get_pages` worth of the user buffer: up to
//! `BIO_MAX_VECS` bvecs. Nothing here consults the queue limits (6.x's
//! `bio_add_page` does not; `blk_mq_submit_bio` splits what exceeds them). The
//! user buffer is page aligned and its pages are taken as physically apart,
//! so each page is one bvec and one segment (`bvec_try_merge_page` would join
//! physically adjacent pages into one bvec: where the allocator happens to
//! place the buffer is not simulated).

use crate::dio::{DioBio, DioPlan, PAGE_SIZE};
use crate::FsError;

/// `BIO_MAX_VECS`.
pub const BIO_MAX_VECS: u64 = 256;
/// The block device's logical block size (`bdev_logical_block_size`).
const LOGICAL_BLOCK: u64 = 512;

/// Build the bios of one O_DIRECT request of `len` bytes at byte `offset` of a
/// block device of `size` bytes. `sync` is `is_sync_kiocb` (a `read`/`write`
/// call, not `io_submit`).
pub fn build(
    size: u64,
    write: bool,
    sync: bool,
    offset: u64,
    len: u64,
    plan: &mut DioPlan,
) -> Result<(), FsError> {
    // blkdev_dio_invalid: position and buffer at the logical block size.
    if offset % LOGICAL_BLOCK != 0 || len % LOGICAL_BLOCK != 0 {
        return Err(FsError::Unaligned {
            offset,
            len,
            align: LOGICAL_BLOCK,
        });
    }
    // blkdev_read_iter / blkdev_write_iter: the iterator is truncated at the
    // device's end; a write starting there gets -ENOSPC, a read 0 bytes.
    if write && offset >= size && len > 0 {
        return Err(FsError::NoSpace);
    }
    let bytes = len.min(size.saturating_sub(offset));
    plan.bios.clear();
    plan.bytes = bytes;
    plan.zeroed = 0;
    plan.get_block_calls = 0;
    plan.reaps = 0;
    // blkdev_direct_IO: bio_iov_vecs_to_alloc(iter, BIO_MAX_VECS + 1).
    let nr_pages = bytes.div_ceil(PAGE_SIZE);
    // __blkdev_direct_IO_simple's submit_bio_wait sets REQ_SYNC (a read is
    // REQ_OP_READ otherwise; a write has it from dio_bio_write_op).
    plan.read_sync = !write && sync && nr_pages <= BIO_MAX_VECS;
    let mut at = 0;
    while at < bytes {
        let n = (bytes - at).min(BIO_MAX_VECS * PAGE_SIZE);
        plan.bios.push(DioBio {
            sector: (offset + at) / 512,
            sectors: (n / 512) as u32,
            segments: n.div_ceil(PAGE_SIZE) as u32,
            logical_offset: offset + at,
        });
        at += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_mib_is_two_bios_of_bio_max_vecs_pages() {
        let mut p = DioPlan::default();
        build(64 << 20, true, true, 0, 2 << 20, &mut p).unwrap();
        let v: Vec<_> = p
            .bios
            .iter()
            .map(|b| (b.sector, b.sectors, b.segments))
            .collect();
        assert_eq!(v, [(0, 2048, 256), (2048, 2048, 256)]);
        assert!(!p.read_sync);
    }

    #[test]
    fn simple_path_reads_are_sync_and_clipped_at_the_end() {
        let mut p = DioPlan::default();
        build(64 << 20, false, true, (64 << 20) - 4096, 65536, &mut p).unwrap();
        assert_eq!(p.bytes, 4096);
        assert_eq!(p.bios.len(), 1);
        assert!(p.read_sync);
        build(64 << 20, false, false, 0, 65536, &mut p).unwrap();
        assert!(!p.read_sync, "the async path is REQ_OP_READ alone");
        assert!(build(64 << 20, false, true, 100, 512, &mut p).is_err());
        assert!(build(4096, true, true, 4096, 512, &mut p).is_err());
    }
}
