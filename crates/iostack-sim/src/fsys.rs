//! The machine's file system, made as `mkfs` would on the partition and mounted
//! behind `iostack_fs::mount::MountedFs`.

use iostack_fs::ext2::Ext2;
use iostack_fs::mount::{DelallocFs, Ext2Fs, MountedFs, WritepageKind};
use iostack_fs::{ExtentFs, FsError};

/// The machine's file system, made as `mkfs` would on the partition.
pub fn build(
    m: &crate::machine::Machine,
    t: &iostack_core::Tunables,
    fs_sectors: u64,
) -> Result<Box<dyn MountedFs>, crate::error::SimError> {
    use crate::machine::FsKind;
    let bs = m.fs_block_size as u64;
    match m.fs {
        FsKind::Ext2 | FsKind::Ext3 => Ok(Box::new(Ext2Fs {
            fs: Ext2::new(iostack_fs::ext2::Ext2Params {
                block_size: m.fs_block_size,
                blocks: fs_sectors * 512 / bs,
                blocks_per_group: bs * 8,
                inode_table_blocks: t.get_u64("fs/ext2/inode_table_blocks"),
                journal: m.fs == FsKind::Ext3,
            }),
            ext3: m.fs == FsKind::Ext3,
        })),
        FsKind::Ext4 => {
            let p = iostack_fs::ext4::Ext4Params::from_tunables(
                m.fs_block_size,
                fs_sectors * 512 / bs,
                t,
            );
            mounted(
                "mkfs.ext4",
                iostack_fs::ext4::Ext4::new(p),
                WritepageKind::Ext4Da,
            )
        }
        FsKind::Xfs => {
            let p = iostack_fs::xfs::XfsParams::from_tunables(
                m.fs_block_size,
                fs_sectors * 512 / bs,
                t,
            );
            mounted(
                "mkfs.xfs",
                iostack_fs::xfs::Xfs::new(p),
                WritepageKind::XfsCluster,
            )
        }
    }
}

/// A delayed-allocation file system as `mkfs` left it, mounted.
fn mounted<T: ExtentFs + 'static>(
    mkfs: &str,
    fs: Result<T, FsError>,
    kind: WritepageKind,
) -> Result<Box<dyn MountedFs>, crate::error::SimError> {
    let fs = fs.map_err(|e| crate::error::SimError(format!("{mkfs}: {e}")))?;
    Ok(Box::new(DelallocFs { fs, kind }))
}
