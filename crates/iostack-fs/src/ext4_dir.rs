//! ext4's directories as far as placement needs them: `ext4_mkdir` (the
//! inode where `find_group_orlov` puts it, its first block allocated at once
//! through mballoc, the entry in the parent), and which group a new file's
//! inode goes to (`ext4_new_inode` → `find_group_other`). Paths are relative
//! to the mount point; a missing parent is made first, as fio's
//! `create_work_dirs` and fs_mark's `mkdir`s do. Every entry goes to its
//! directory's first block: directories do not grow (no htree, no second
//! block), and nothing is unlinked.

use super::{BTreeMap, Ext4, Inode, RangeSet};
use crate::dirhash::half_md4_hash;
use crate::ialloc::Parent;
use crate::mballoc::MbVariant;
use crate::{ExtentFs, FsError};

/// `EXT4_ROOT_INO`.
pub const ROOT_INO: u32 = 2;

impl Ext4 {
    /// The allocator's view of directory `dir`.
    fn parent_of(&self, dir: u32) -> Parent {
        if dir == ROOT_INO {
            return Parent {
                ino: ROOT_INO,
                group: 0,
                last_alloc_group: self.root_last_alloc,
                topdir: true,
            };
        }
        let inode = self.idx(dir).ok().map(|i| &self.inodes[i]);
        Parent {
            ino: dir,
            group: inode.map_or(0, |n| n.group),
            last_alloc_group: inode.and_then(|n| n.last_alloc_group),
            topdir: false,
        }
    }

    /// `EXT4_I(dir)->i_last_alloc_group = group` (`ext4_new_inode`).
    fn set_last_alloc(&mut self, dir: u32, g: u64) {
        if dir == ROOT_INO {
            self.root_last_alloc = Some(g);
        } else if let Ok(i) = self.idx(dir) {
            self.inodes[i].last_alloc_group = Some(g);
        }
    }

    /// The group `ext4_new_inode` picks for a new inode in `dir`: 2.6.30 on
    /// (`MbVariant::V2630`, a4912123), `find_group_orlov` for a directory
    /// (its name hashed for a top-level one) and `find_group_other` for a
    /// file; 2.6.28 with flex_bg, `find_group_flex` for both.
    fn pick_group(&self, dir: u32, is_dir: bool, base: &str) -> Result<u64, FsError> {
        let parent = self.parent_of(dir);
        let free = |g: u64| self.mb.group_free(g);
        let total = self.mb.free_blocks();
        let g = match (self.p.mb.variant, self.flex_size > 1) {
            (MbVariant::V2628, true) => self.ialloc.find_group_flex(&parent, &free),
            (MbVariant::V2628, false) if is_dir => {
                return Err(FsError::Unsupported(
                    "directories on 2.6.28's ext4 without flex_bg (its find_group_orlov with \
                     max_debt)"
                        .into(),
                ))
            }
            (_, _) if is_dir => {
                let hash = half_md4_hash(base.as_bytes(), self.p.hash_seed);
                self.ialloc
                    .find_group_orlov(&parent, true, hash, &free, total)
            }
            _ => self.ialloc.find_group_other(&parent, &free, total),
        };
        g.ok_or(FsError::NoSpace)
    }

    /// `ext4_new_inode`: claim an inode in the picked group and file it.
    fn new_inode(&mut self, path: &str, dir: u32, is_dir: bool) -> Result<usize, FsError> {
        let base = path.rsplit('/').next().unwrap_or(path);
        let g = self.pick_group(dir, is_dir, base)?;
        self.set_last_alloc(dir, g);
        let ino = self.ialloc.claim(g, is_dir).ok_or(FsError::NoSpace)?;
        let group = (ino as u64 - 1) / self.p.inodes_per_group;
        // ext4_new_inode's `got:` a BLOCK_UNINIT group's bitmap is initialised.
        self.mb.set_block_uninit(group, false);
        let i = self.inodes.len();
        self.inodes.push(Inode {
            ino,
            name: path.to_string(),
            size: 0,
            group,
            extents: BTreeMap::new(),
            delalloc: RangeSet::new(),
            closed: false,
            dir: is_dir,
            parent: dir,
            last_alloc_group: None,
            made_dirs_meta: Vec::new(),
        });
        self.ino_index.insert(ino, i);
        Ok(i)
    }

    /// A regular file `name` (its directories made first).
    pub(super) fn new_file(&mut self, name: &str) -> Result<u32, FsError> {
        let dir = match name.rsplit_once('/') {
            Some((d, _)) => self.mkdir(d)?,
            None => ROOT_INO,
        };
        let i = self.new_inode(name, dir, false)?;
        self.inodes[i].made_dirs_meta = std::mem::take(&mut self.pending_dir_meta);
        let ino = self.inodes[i].ino;
        self.names.insert(name.to_string(), ino);
        Ok(ino)
    }

    /// `ext4_mkdir` of `path` and of its missing parents (an existing one is
    /// `EEXIST`, which fio and fs_mark ignore): the inode, its first block
    /// (allocated now, without `EXT4_MB_HINT_DATA`: no preallocation), `.`
    /// and `..`, the entry in the parent. Returns the directory's inode.
    pub fn mkdir(&mut self, path: &str) -> Result<u32, FsError> {
        let path = path.trim_matches('/');
        if path.is_empty() {
            return Ok(ROOT_INO);
        }
        if let Some(&ino) = self.dirs.get(path) {
            return Ok(ino);
        }
        if self.names.contains_key(path) {
            return Err(FsError::Invalid(format!("'{path}' is a file (ENOTDIR)")));
        }
        let parent = match path.rsplit_once('/') {
            Some((d, _)) => self.mkdir(d)?,
            None => ROOT_INO,
        };
        let i = self.new_inode(path, parent, true)?;
        let ino = self.inodes[i].ino;
        self.inodes[i].size = self.p.block_size as u64;
        let (p, n, _) = self.get_blocks(i, 0, 1, true)?;
        let block = p.ok_or(FsError::NoSpace)?;
        let mut meta = self.new_inode_meta(ino);
        meta.extend(self.alloc_meta(ino, block, n));
        meta.push(block);
        meta.extend(self.entry_meta(parent));
        self.pending_dir_meta.extend(meta);
        self.dirs.insert(path.to_string(), ino);
        Ok(ino)
    }

    /// `ext4_new_inode`'s buffers: the inode bitmap, the group descriptor
    /// and the inode-table block.
    pub(super) fn new_inode_meta(&self, ino: u32) -> Vec<u64> {
        let g = (ino as u64 - 1) / self.p.inodes_per_group;
        let Some(&(_, ibitmap)) = self.bitmaps.get(g as usize) else {
            return Vec::new();
        };
        let mut v = vec![ibitmap, self.group_desc_block(g)];
        v.extend(self.inode_block(ino));
        v
    }

    /// `ext4_add_entry` into `dir`: its first block and its inode.
    pub(super) fn entry_meta(&self, dir: u32) -> Vec<u64> {
        let mut v: Vec<u64> = self.dir_block(dir).into_iter().collect();
        v.extend(self.inode_block(dir));
        v
    }

    /// The first block of directory `dir` (the root's: where mke2fs put it).
    fn dir_block(&self, dir: u32) -> Option<u64> {
        if dir == ROOT_INO {
            return self
                .meta
                .iter()
                .find(|r| r.2.starts_with("root"))
                .map(|r| r.0);
        }
        let i = self.idx(dir).ok()?;
        self.inodes[i].extents.get(&0).map(|&(p, _)| p)
    }

    /// The inode of directory `path` (relative to the mount point).
    pub fn dir_inode(&self, path: &str) -> Option<u32> {
        let path = path.trim_matches('/');
        if path.is_empty() {
            return Some(ROOT_INO);
        }
        self.dirs.get(path).copied()
    }

    /// `i_block_group` of `ino`.
    pub fn inode_group(&self, ino: u32) -> Option<u64> {
        (ino == ROOT_INO)
            .then_some(0)
            .or_else(|| self.idx(ino).ok().map(|i| self.inodes[i].group))
    }

    /// Inodes used and directories in group `g` (`bg_free_inodes_count`
    /// from `inodes_per_group`, `bg_used_dirs_count`).
    pub fn group_inode_counts(&self, g: u64) -> (u64, u64) {
        let used = self.p.inodes_per_group - self.ialloc.free_inodes(g);
        (used, self.ialloc.used_dirs(g))
    }
}
