//! Buffered I/O on block-device nodes. Each block device has its own inode and
//! page cache (the bdev inode of `fs/block_dev.c`): the partition the file
//! system is mounted on shares the mapping the file system uses for its own
//! metadata (mapping 0, also where ext4's lazy inode-table zeroing writes); the
//! whole disk of a partitioned machine is another block device with a mapping
//! of its own. Pages map one to one to the device's blocks (`blkdev_get_block`),
//! nothing is allocated at `write()` (`blkdev_write_begin` is
//! `block_write_begin` over `blkdev_get_block`), the size is the device's
//! (`bd_set_size`), and writeback is `blkdev_writepage` → `block_write_full_page`,
//! one buffer per page.

use crate::world::Simulation;
use iostack_core::DevT;
use iostack_fs::FsError;

/// The block devices' inode numbers (mapping 0 is `BDEV_INO`, the file
/// system's block device) are the page cache's.
pub(crate) use iostack_mm::pagecache::{is_bdev, DISK_INO};

impl Simulation {
    /// The page cache of a raw device node of `size` bytes, for buffered I/O.
    pub(crate) fn bdev_map(&mut self, dev: DevT, size: u64) -> u32 {
        let pages = size / iostack_mm::PAGE_SIZE;
        if dev == self.cfg.machine.fs_dev() {
            let m = &mut self.vm.maps[0];
            m.size_pages = m.size_pages.min(pages);
            return 0;
        }
        self.vm.map_of(DISK_INO, pages)
    }

    /// The device a mapping's bios are submitted to.
    pub(crate) fn map_dev(&self, map: u32) -> DevT {
        if self.vm.map_ino[map as usize] == DISK_INO {
            self.cfg.machine.disk
        } else {
            self.cfg.machine.fs_dev()
        }
    }

    /// `->write_begin` for `n` pages from `lblk`: the file system's (which may
    /// allocate), or the block device's, which maps and allocates nothing.
    pub(crate) fn write_begin(
        &mut self,
        ino: u32,
        lblk: u64,
        n: u64,
        meta: &mut Vec<(u64, u64)>,
    ) -> Result<(), FsError> {
        if is_bdev(ino) {
            return Ok(());
        }
        self.fs.write_begin(ino, lblk, n, meta)
    }

    /// A write reached `end_bytes`: a file grows (`i_size_write` in
    /// `generic_write_end`); a block device keeps its size.
    /// Returns whether the size grew.
    pub(crate) fn extend_i_size(&mut self, ino: u32, end_bytes: u64) -> bool {
        if is_bdev(ino) {
            return false;
        }
        let gb = self.fs.get_block();
        let grows = gb.i_size(ino) < end_bytes;
        if grows {
            gb.set_i_size(ino, end_bytes);
        }
        grows
    }
}
