//! The mounted file system as the page cache and writeback see it: one
//! object-safe adapter over ext2/ext3 (allocation at `write()` through
//! `get_block`) and the delayed-allocation file systems (ext4, XFS: allocation at
//! writeback), with the `->writepage(s)` flavour each uses. The direct-I/O path
//! reaches the same object through `GetBlock`.

use crate::ext2::Ext2;
use crate::extent_fs::physical_runs;
use crate::{ExtentFs, FileExtent, FsError, GetBlock};

/// How the file system's `->writepage(s)` turns dirty pages into bios.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WritepageKind {
    /// `block_write_full_page` → one `submit_bh` per 4 KiB buffer; the elevator
    /// merges (ext3, which has no `->writepages`; ext4's `ext4_da_writepage`).
    PerBuffer,
    /// `mpage_writepages`: multi-page bios over physically contiguous pages (ext2).
    Mpage,
    /// `xfs_vm_writepage` with `xfs_cluster_write`: one ioend and bio over the
    /// contiguous dirty pages after the one asked for.
    XfsCluster,
    /// `ext4_da_writepages`: collect a run of contiguous delalloc pages, allocate it
    /// with mballoc, then write it with `block_write_full_page`.
    Ext4Da,
}

pub trait MountedFs {
    fn name(&self) -> &'static str;
    fn get_block(&mut self) -> &mut dyn GetBlock;
    fn lookup(&self, name: &str) -> Option<u32>;
    /// Lay out a file of `size` bytes before the run (fio's layout phase).
    fn layout(&mut self, name: &str, size: u64, goal: Option<u64>) -> Result<u32, FsError>;
    /// An empty new file (`O_CREAT`).
    fn create(&mut self, name: &str) -> Result<u32, FsError>;
    /// `->write_begin` for blocks `[lblk, lblk + n)`: ext2/3 allocate now
    /// (`ext3_get_block` with create), delalloc file systems reserve. Appends
    /// `(lblk, metadata block)` for each metadata block an allocation for
    /// block `lblk` dirtied (what ext3's handle would `journal_dirty_metadata`).
    fn write_begin(
        &mut self,
        ino: u32,
        lblk: u64,
        n: u64,
        meta: &mut Vec<(u64, u64)>,
    ) -> Result<(), FsError>;
    /// The journal area `(first block, blocks)` of a journalling file system
    /// whose journal the simulation can run (ext3, ext4).
    fn journal_area(&self) -> Option<(u64, u64)> {
        None
    }
    /// The journal's runs in logical order when it is not one run.
    fn journal_runs(&self) -> Vec<(u64, u64)> {
        Vec::new()
    }
    /// The inode-table block of `ino` (`ext3_mark_inode_dirty`'s buffer,
    /// `ext4_mark_inode_dirty`'s).
    fn inode_block(&self, _ino: u32) -> Option<u64> {
        None
    }
    /// The metadata blocks creating `ino` dirtied (`ext3_new_inode`,
    /// `ext4_new_inode` and the directory entry).
    fn create_meta(&self, _ino: u32) -> Vec<u64> {
        Vec::new()
    }
    /// Writeback maps `[lblk, lblk + n)` (allocating delayed blocks); appends the
    /// runs and returns blocks mapped (at least 1).
    fn map_for_writeback(
        &mut self,
        ino: u32,
        lblk: u64,
        n: u64,
        out: &mut Vec<FileExtent>,
    ) -> Result<u64, FsError>;
    /// `ExtentFs::map_pages_for_writeback`: pages from `lblk` on (at most
    /// `n`) mapped as `map_for_writeback` of each single page in turn would;
    /// the default maps one page.
    fn map_pages_for_writeback(
        &mut self,
        ino: u32,
        lblk: u64,
        _n: u64,
        out: &mut Vec<FileExtent>,
    ) -> Result<u64, FsError> {
        self.map_for_writeback(ino, lblk, 1, out)
    }
    /// Mapped extents in logical order, as FIEMAP reports them (ext2/ext3's
    /// `generic_block_fiemap` merges contiguous blocks; extent file systems report
    /// their extents).
    fn fiemap(&self, ino: u32) -> Vec<FileExtent>;
    fn writepage_kind(&self) -> WritepageKind;
    /// The last writer closed the file (`->release`: ext4 discards its
    /// preallocations, XFS frees blocks past EOF).
    fn release_file(&mut self, _ino: u32) {}
    /// Block-device ranges the file system dirties right after mount.
    fn bdev_dirty_at_mount(&self) -> Vec<(u64, u64)> {
        Vec::new()
    }
    /// Truncate `ino` to 0 (the file unlinked and created again); false when
    /// its blocks could not be given back to the allocator.
    fn truncate(&mut self, _ino: u32) -> Result<bool, FsError> {
        Err(FsError::Unsupported(format!(
            "truncating a file on {}",
            self.name()
        )))
    }
    /// 2.4's `generic_osync_inode(inode, OSYNC_METADATA|OSYNC_DATA)`: the
    /// metadata blocks to write and wait for (see `Ext2::osync_inode`).
    fn osync_inode(&mut self, _ino: u32) -> Result<crate::OsyncWrites, FsError> {
        Err(FsError::Unsupported(format!(
            "2.4's generic_osync_inode on {}",
            self.name()
        )))
    }
    /// 2.4's metadata buffers of `ino` that `get_block` allocated, in
    /// allocation order (ext2's indirect blocks; `ext2_alloc_branch` marks
    /// each dirty with `mark_buffer_dirty_inode`). Empty where not modelled.
    fn indirect_blocks(&self, _ino: u32) -> &[u64] {
        &[]
    }
    /// Indirect block `block` of `ino` was written by bdflush or kupdated
    /// (`flush_dirty_buffers`): no longer on the inode's `i_dirty_buffers`.
    fn indirect_written(&mut self, _ino: u32, _block: u64) {}
    /// 2.4's block allocator's cursor, where its dirtied buffers are
    /// modelled (ext2): see `Ext2::alloc_cursor`.
    fn alloc_cursor24(&self) -> Option<u64> {
        None
    }
    /// The buffers allocating or freeing `[lo, hi)` dirties (`Ext2::balloc_buffers`).
    fn balloc_buffers24(&self, _lo: u64, _hi: u64) -> Vec<u64> {
        Vec::new()
    }
    /// kupdate's `sync_inodes` → `write_inode(inode, 0)`: the inode-table
    /// block it dirties, where modelled (`Ext2::write_inode_async`).
    fn write_inode24(&mut self, _ino: u32) -> Option<u64> {
        None
    }
    /// What writeback's allocations dirtied since the last call
    /// (`ExtentFs::take_alloc_meta`); ext2/ext3 allocate at `write_begin`.
    fn take_alloc_meta(&mut self) -> Vec<(u32, u64, Vec<u64>)> {
        Vec::new()
    }
    /// XFS: the transactions committed since the last call, as the items each
    /// logged (`ExtentFs::take_log_trans`).
    fn take_log_trans(&mut self) -> Vec<Vec<crate::xfs_log::Item>> {
        Vec::new()
    }
    /// XFS: the creation transaction of `ino` (`ExtentFs::take_create_trans`).
    fn take_create_trans(&mut self, _ino: u32) -> Option<Vec<crate::xfs_log::Item>> {
        None
    }
}

pub struct Ext2Fs {
    pub fs: Ext2,
    pub ext3: bool,
}

impl Ext2Fs {
    /// What `ext3_get_blocks_handle` → `ext3_alloc_branch`/`ext3_splice_branch`
    /// dirties for data blocks `[l, l + count)` just allocated: the block
    /// bitmap and group descriptor of each block's group (`ext3_new_blocks`),
    /// the new indirect blocks, the indirect block (or inode) the new pointers
    /// go in, and the inode (`i_blocks`, `ext3_mark_inode_dirty`).
    fn alloc_meta(
        &self,
        ino: u32,
        l: u64,
        count: u64,
        ind_before: usize,
        meta: &mut Vec<(u64, u64)>,
    ) {
        let inode = self.fs.inode(ino);
        let new_ind = &inode.meta_blocks[ind_before..];
        for i in 0..count {
            let pblk = match self.fs.lookup_block(ino, l + i) {
                Some(p) => p,
                None => continue,
            };
            let mut blocks = vec![self.fs.block_bitmap_of(pblk), self.fs.group_desc_of(pblk)];
            if i == 0 {
                for &b in new_ind {
                    blocks.extend([b, self.fs.block_bitmap_of(b), self.fs.group_desc_of(b)]);
                }
            }
            // ext3_splice_branch / the new pointer: the indirect block
            // mapping the data block (the inode for the direct blocks).
            if let Some(parent) = self.fs.parent_of(ino, l + i) {
                blocks.push(parent);
            }
            blocks.push(self.fs.inode_block(ino));
            blocks.dedup();
            meta.extend(blocks.into_iter().map(|b| (l + i, b)));
        }
    }
}

impl MountedFs for Ext2Fs {
    fn name(&self) -> &'static str {
        if self.ext3 {
            "ext3"
        } else {
            "ext2"
        }
    }
    fn get_block(&mut self) -> &mut dyn GetBlock {
        &mut self.fs
    }
    fn lookup(&self, name: &str) -> Option<u32> {
        self.fs.lookup(name)
    }
    fn layout(&mut self, name: &str, size: u64, goal: Option<u64>) -> Result<u32, FsError> {
        self.fs.create_sequential(name, size, goal)
    }
    fn create(&mut self, name: &str) -> Result<u32, FsError> {
        let ino = self.fs.create_sequential(name, 0, None)?;
        // ext2_new_inode: mark_inode_dirty.
        self.fs.inode_mut(ino).datasync_dirty = true;
        Ok(ino)
    }
    fn truncate(&mut self, ino: u32) -> Result<bool, FsError> {
        Ok(self.fs.truncate(ino))
    }
    fn osync_inode(&mut self, ino: u32) -> Result<crate::OsyncWrites, FsError> {
        if self.ext3 {
            return Err(FsError::Unsupported(
                "2.4's generic_osync_inode on ext3 (its journal is 2.6's)".into(),
            ));
        }
        Ok(self.fs.osync_inode(ino))
    }
    fn indirect_blocks(&self, ino: u32) -> &[u64] {
        if self.ext3 {
            return &[];
        }
        &self.fs.inode(ino).meta_blocks
    }
    fn indirect_written(&mut self, ino: u32, block: u64) {
        self.fs.indirect_written(ino, block);
    }
    fn alloc_cursor24(&self) -> Option<u64> {
        (!self.ext3).then(|| self.fs.alloc_cursor())
    }
    fn balloc_buffers24(&self, lo: u64, hi: u64) -> Vec<u64> {
        self.fs.balloc_buffers(lo, hi)
    }
    fn write_inode24(&mut self, ino: u32) -> Option<u64> {
        (!self.ext3).then(|| self.fs.write_inode_async(ino))
    }
    fn write_begin(
        &mut self,
        ino: u32,
        lblk: u64,
        n: u64,
        meta: &mut Vec<(u64, u64)>,
    ) -> Result<(), FsError> {
        let mut l = lblk;
        while l < lblk + n {
            let ind_before = self.fs.inode(ino).meta_blocks.len();
            let m = self.fs.get_block(ino, l, lblk + n - l, true)?;
            if m.new && self.ext3 {
                self.alloc_meta(ino, l, m.count, ind_before, meta);
            }
            l += m.count;
        }
        Ok(())
    }
    fn journal_area(&self) -> Option<(u64, u64)> {
        self.fs.journal_area()
    }
    fn inode_block(&self, ino: u32) -> Option<u64> {
        self.ext3.then(|| self.fs.inode_block(ino))
    }
    fn create_meta(&self, ino: u32) -> Vec<u64> {
        if self.ext3 {
            self.fs.create_meta(ino)
        } else {
            Vec::new()
        }
    }
    fn map_for_writeback(
        &mut self,
        ino: u32,
        lblk: u64,
        n: u64,
        out: &mut Vec<FileExtent>,
    ) -> Result<u64, FsError> {
        let m = self.fs.get_block(ino, lblk, n, false)?;
        let pblk = m.pblk.ok_or(FsError::NoSpace)?;
        out.push(FileExtent {
            logical: lblk,
            physical: pblk,
            len: m.count,
        });
        Ok(m.count)
    }
    fn fiemap(&self, ino: u32) -> Vec<FileExtent> {
        let runs: Vec<FileExtent> = self
            .fs
            .inode(ino)
            .extents
            .values()
            .map(|e| FileExtent {
                logical: e.lblk,
                physical: e.pblk,
                len: e.len,
            })
            .collect();
        physical_runs(&runs)
    }
    fn writepage_kind(&self) -> WritepageKind {
        if self.ext3 {
            WritepageKind::PerBuffer
        } else {
            WritepageKind::Mpage
        }
    }
}

/// ext4 or XFS: blocks are reserved at `write()` and placed at writeback.
pub struct DelallocFs<T: ExtentFs> {
    pub fs: T,
    pub kind: WritepageKind,
}

impl<T: ExtentFs> MountedFs for DelallocFs<T> {
    fn name(&self) -> &'static str {
        self.fs.fs_name()
    }
    fn get_block(&mut self) -> &mut dyn GetBlock {
        &mut self.fs
    }
    fn lookup(&self, name: &str) -> Option<u32> {
        self.fs.lookup(name)
    }
    fn layout(&mut self, name: &str, size: u64, _goal: Option<u64>) -> Result<u32, FsError> {
        self.fs.layout(name, size)
    }
    fn create(&mut self, name: &str) -> Result<u32, FsError> {
        self.fs.create(name)
    }
    fn write_begin(
        &mut self,
        ino: u32,
        lblk: u64,
        n: u64,
        _meta: &mut Vec<(u64, u64)>,
    ) -> Result<(), FsError> {
        self.fs.delalloc_reserve(ino, lblk, n)
    }
    fn map_for_writeback(
        &mut self,
        ino: u32,
        lblk: u64,
        n: u64,
        out: &mut Vec<FileExtent>,
    ) -> Result<u64, FsError> {
        self.fs.map_for_writeback(ino, lblk, n, out)
    }
    fn map_pages_for_writeback(
        &mut self,
        ino: u32,
        lblk: u64,
        n: u64,
        out: &mut Vec<FileExtent>,
    ) -> Result<u64, FsError> {
        self.fs.map_pages_for_writeback(ino, lblk, n, out)
    }
    fn fiemap(&self, ino: u32) -> Vec<FileExtent> {
        self.fs.fiemap(ino)
    }
    fn writepage_kind(&self) -> WritepageKind {
        self.kind
    }
    fn bdev_dirty_at_mount(&self) -> Vec<(u64, u64)> {
        self.fs.mount_dirty_bdev_ranges()
    }
    fn release_file(&mut self, ino: u32) {
        self.fs.release_file(ino)
    }
    fn journal_area(&self) -> Option<(u64, u64)> {
        self.fs.journal_area()
    }
    fn journal_runs(&self) -> Vec<(u64, u64)> {
        self.fs.journal_runs()
    }
    fn inode_block(&self, ino: u32) -> Option<u64> {
        self.fs.inode_block(ino)
    }
    fn create_meta(&self, ino: u32) -> Vec<u64> {
        self.fs.create_meta(ino)
    }
    fn take_alloc_meta(&mut self) -> Vec<(u32, u64, Vec<u64>)> {
        self.fs.take_alloc_meta()
    }
    fn take_log_trans(&mut self) -> Vec<Vec<crate::xfs_log::Item>> {
        self.fs.take_log_trans()
    }
    fn take_create_trans(&mut self, ino: u32) -> Option<Vec<crate::xfs_log::Item>> {
        self.fs.take_create_trans(ino)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext2::{Ext2, Ext2Params};

    fn ext3() -> Ext2Fs {
        Ext2Fs {
            fs: Ext2::new(Ext2Params {
                block_size: 4096,
                blocks: 1 << 22,
                blocks_per_group: 32768,
                inode_table_blocks: 512,
                journal: true,
            }),
            ext3: true,
        }
    }

    /// fio's `randwrite` on a new file (fio-rand-write.fio): each page written
    /// in a hole gets its own branch, and its handle dirties no more blocks
    /// than `ext3_writepage_trans_blocks` gives it (`2 * (bpp + indirects) + 2`
    /// = 10 at 4 KiB blocks). The allocator once filled the hole up to the
    /// page, every indirect block of it charged to one handle, which tripped
    /// jbd's `J_ASSERT_JH(jh, handle->h_buffer_credits > 0)`.
    #[test]
    fn a_write_in_a_hole_allocates_its_branch_within_the_handle_credits() {
        let mut fs = ext3();
        let ino = fs.create("f").unwrap();
        // Direct, IND, DIND and TIND regions, out of order.
        let pages = [2_500_000u64, 300_000, 700, 5, 2_500_001, 301_024, 9_000];
        let mut allocated = 0;
        for &l in &pages {
            let mut meta = Vec::new();
            let before = fs.fs.inode(ino).meta_blocks.len();
            fs.write_begin(ino, l, 1, &mut meta).unwrap();
            let mut distinct: Vec<u64> = meta.iter().map(|m| m.1).collect();
            distinct.sort_unstable();
            distinct.dedup();
            assert!(distinct.len() <= 10, "page {l}: {distinct:?}");
            let new_ind = fs.fs.inode(ino).meta_blocks.len() - before;
            allocated += 1 + new_ind as u64;
            assert!(fs.fs.lookup_block(ino, l).is_some());
            assert_eq!(fs.fs.lookup_block(ino, l + 2), None, "no block past {l}");
        }
        // TIND+DIND+IND for 2_500_000 (its neighbour shares them), DIND+IND
        // for 300_000, IND for 700, none for 5, IND for 301_024 (another IND
        // under the same DIND), IND for 9_000.
        let ind = fs.fs.inode(ino).meta_blocks.len();
        assert_eq!(ind, 3 + 2 + 1 + 1 + 1);
        assert_eq!(allocated, pages.len() as u64 + ind as u64);
        // The hole below stays a hole.
        assert_eq!(fs.fs.lookup_block(ino, 0), None);
        assert_eq!(fs.fs.lookup_block(ino, 1_000_000), None);
    }

    /// A file grown in order keeps the layout it always had: indirect
    /// blocks before the data they map, one contiguous run otherwise.
    #[test]
    fn appending_writes_lay_out_indirect_blocks_before_their_data() {
        let mut fs = ext3();
        let ino = fs.create("f").unwrap();
        let mut meta = Vec::new();
        for l in (0..1100).step_by(16) {
            fs.write_begin(ino, l, 16, &mut meta).unwrap();
        }
        let i = fs.fs.inode(ino);
        let ind = i.meta_blocks.clone();
        assert_eq!(ind.len(), 3, "IND0, DIND, IND1");
        assert_eq!(fs.fs.lookup_block(ino, 12), Some(ind[0] + 1));
        assert_eq!(fs.fs.lookup_block(ino, 1036), Some(ind[2] + 1));
        assert_eq!(ind[2], ind[1] + 1);
    }
}
