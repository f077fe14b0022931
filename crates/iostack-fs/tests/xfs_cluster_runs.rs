//! XFS writeback (`xfs_vm_writepage` with `xfs_cluster_write`) with each
//! cluster's pages taken as one run and mapped a record at a time, against the
//! same writeback taken page by page as the kernel's loops go: every step, the
//! bios, the page cache and the file's layout are the same.

use iostack_core::TaskId;
use iostack_des::{Duration, Instant, Rng, Seed};
use iostack_fs::mount::{DelallocFs, MountedFs, WritepageKind};
use iostack_fs::writepages::FsWriteback;
use iostack_fs::xfs::{Xfs, XfsParams};
use iostack_fs::ExtentFs;
use iostack_mm::writeback_job::JobStep;
use iostack_mm::{DirtyLimits, PageBits, Vm, VmConfig, WbJob, Wbc, WcpCaller};

const PAGES: u64 = 3000;

fn vm(wcp_break: bool) -> Vm {
    Vm::new(VmConfig {
        flusher_only_index: false,
        io_less: false,
        pdflush: false,
        write_locked_inodes: false,
        ext4_index_pages_written: false,
        wcp_break,
        expire: Duration(30_000_000_000),
        interval: Duration(5_000_000_000),
        ra_pages: 32,
        max_readahead24: 31,
        copy_page_ns: 1,
        wb_page_ns: 3,
        mem_pages: 1_000_000,
        limits: DirtyLimits {
            background: 100_000,
            dirty: 200_000,
        },
        ratelimit: 32,
        v2632_chunk: true,
        bdflush: None,
    })
}

/// A small XFS with a file: delalloc ranges written (dirty in the page cache),
/// some of them converted already, some pages under writeback.
fn setup(rng: &mut Rng, vm: &mut Vm) -> (DelallocFs<Xfs>, u32, u32) {
    let mut fs = Xfs::new(XfsParams::mkfs_defaults(4096, (1u64 << 30) / 4096)).unwrap();
    let ino = fs.create("f").unwrap();
    let map = vm.map_of(ino, PAGES);
    for _ in 0..1 + rng.below(10) {
        let s = rng.below(PAGES);
        let n = (1 + rng.below(600)).min(PAGES - s);
        fs.delalloc_reserve(ino, s, n).unwrap();
        let newly = vm.maps[map as usize].write_pages(s, n, Instant::ZERO);
        vm.account_dirtied(map, newly, Instant::ZERO);
        if rng.below(3) == 0 {
            // Converted by an earlier writeback; the pages dirty again.
            let mut out = Vec::new();
            fs.map_for_writeback(ino, s + rng.below(n), 1, &mut out)
                .unwrap();
        }
    }
    for _ in 0..rng.below(6) {
        let p = rng.below(PAGES);
        if vm.maps[map as usize].writeback.set(p) {
            vm.nr_writeback += 1;
        }
    }
    let fs = DelallocFs {
        fs,
        kind: WritepageKind::XfsCluster,
    };
    (fs, ino, map)
}

/// One random writeback pass over the file, with runs or page by page: what
/// each step did and the state left (page cache, layout).
fn random_pass(seed: u64, runs: bool) -> (Vec<String>, String) {
    let mut rng = Rng::stream(Seed(seed), "xfs-cluster-runs");
    let mut vm = vm(rng.below(2) == 0);
    let (mut fs, ino, map) = setup(&mut rng, &mut vm);
    vm.maps[map as usize].writeback_index = rng.below(PAGES);
    let wbc = if rng.below(4) == 0 {
        Wbc::for_fsync(map)
    } else {
        Wbc::cyclic(rng.below(2 * PAGES), rng.below(2) == 0)
    };
    let max_pages = [1, 2, 7, 32, 128][rng.below(5) as usize];
    let mut job = WbJob::new(wbc);
    let mut steps = Vec::new();
    for _ in 0..2000 {
        let c = WcpCaller {
            task: TaskId(0),
            is_flusher: false,
            congested: rng.below(4) == 0,
        };
        let w = FsWriteback::new(&mut fs, max_pages);
        let mut w = if runs { w } else { w.page_by_page() };
        let step = vm.writeback_step(&mut job, c, &mut w);
        steps.push(format!("{step:?} {:?}", std::mem::take(&mut vm.wb_out)));
        if !matches!(step, JobStep::Ran(_)) || job.cur.is_none() {
            break;
        }
    }
    let m = &vm.maps[map as usize];
    let bits = |b: &PageBits| (0..PAGES).filter(|&p| b.get(p)).collect::<Vec<_>>();
    let state = format!(
        "{:?} {:?} {} {} {} {:?} {:?} {:?} {}",
        job.wbc,
        job.cur,
        vm.nr_dirty,
        vm.nr_writeback,
        m.writeback_index,
        bits(&m.dirty),
        bits(&m.writeback),
        fs.fiemap(ino),
        fs.fs.delalloc_reserved(),
    );
    (steps, state)
}

#[test]
fn cluster_runs_decide_as_page_by_page() {
    let mut written = 0;
    for seed in 0..300 {
        let (steps, state) = random_pass(seed, true);
        assert_eq!(
            (steps.clone(), state),
            random_pass(seed, false),
            "seed {seed}"
        );
        written += steps.iter().filter(|s| s.contains("Write")).count();
    }
    assert!(
        written > 1000,
        "the passes write: {written} steps with bios"
    );
}
