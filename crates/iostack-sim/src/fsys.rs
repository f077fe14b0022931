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
    seed: iostack_des::Seed,
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
            let mut p = iostack_fs::ext4::Ext4Params::from_tunables(
                m.fs_block_size,
                fs_sectors * 512 / bs,
                t,
            );
            p.hash_seed = hash_seed(seed);
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

/// mke2fs's `s_hash_seed` (`uuid_generate`): 16 bytes of the run's named
/// random stream, which is what makes `find_group_orlov` spread a top-level
/// directory differently on every file system made.
fn hash_seed(seed: iostack_des::Seed) -> [u32; 4] {
    let mut rng = iostack_des::Rng::stream(seed, "mke2fs/s_hash_seed");
    let (a, b) = (rng.next_u64(), rng.next_u64());
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_le_bytes());
    bytes[8..].copy_from_slice(&b.to_le_bytes());
    iostack_fs::dirhash::hash_seed_from(bytes)
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
