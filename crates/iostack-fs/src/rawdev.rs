//! Direct I/O to a block device node (`fs/block_dev.c:blkdev_direct_IO` with
//! `blkdev_get_blocks`): every block maps to itself, as one run, never on a boundary.

use crate::{BlockMapping, FsError, GetBlock};

pub struct RawBdev {
    blkbits: u32,
    size: u64,
}

impl RawBdev {
    /// A device of `size` bytes opened with a soft block size of `1 << blkbits`.
    pub fn new(size: u64, blkbits: u32) -> Self {
        RawBdev { blkbits, size }
    }
}

impl GetBlock for RawBdev {
    fn blkbits(&self) -> u32 {
        self.blkbits
    }
    /// `blkdev_get_blocks`: maps `max_blocks` at once, clipped at the device end.
    fn get_block(
        &mut self,
        _ino: u32,
        lblk: u64,
        max_blocks: u64,
        _create: bool,
    ) -> Result<BlockMapping, FsError> {
        let end = self.size >> self.blkbits;
        if lblk >= end {
            return Ok(BlockMapping {
                pblk: None,
                count: 1,
                boundary: false,
                new: false,
            });
        }
        Ok(BlockMapping {
            pblk: Some(lblk),
            count: max_blocks.min(end - lblk),
            boundary: false,
            new: false,
        })
    }
    fn i_size(&self, _ino: u32) -> u64 {
        self.size
    }
    fn set_i_size(&mut self, _ino: u32, _size: u64) {}
}
