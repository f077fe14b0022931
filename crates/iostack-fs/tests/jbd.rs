//! The journal state machine (`iostack_fs::jbd`) against what the kernel
//! sources say: the block sequence and flags of one small commit for jbd
//! (2.6.3x ext3, barrier off and on) and jbd2 (ext4: barrier commit block before
//! 2.6.37, `WRITE_FLUSH_FUA` from 2.6.37, async commit), sync-commit batching,
//! the commit interval, and checkpointing when the log fills.

use iostack_core::{Profile, ReqFlags};
use iostack_des::{Duration, Instant};
use iostack_fs::jbd::{
    Access, Action, DataMode, Flavour, HandleId, Journal, JournalConfig, LogBlock, LogWrite, Start,
    Stop, Until,
};
use std::sync::atomic::{AtomicU64, Ordering};

const AREA: u64 = 100_000;
const W: ReqFlags = ReqFlags::WRITE;
const SYNC: ReqFlags = ReqFlags::SYNC;
const NOIDLE: ReqFlags = ReqFlags::NOIDLE;
const UNPLUG: ReqFlags = ReqFlags::UNPLUG;

fn journal(flavour: Flavour, profile: Profile, f: impl FnOnce(&mut JournalConfig)) -> Journal {
    let mut cfg = JournalConfig::defaults(flavour, profile, AREA, 32768);
    f(&mut cfg);
    Journal::new(cfg).unwrap()
}

fn t(ms: u64) -> Instant {
    Instant(ms * 1_000_000)
}

fn start(j: &mut Journal, now: Instant, pid: u32, credits: u64) -> HandleId {
    match j.start(now, pid, credits).unwrap() {
        Start::Started(h) => h,
        other => panic!("handle did not start: {other:?}"),
    }
}

/// The operation of a small file write: inode table block 1000, block bitmap
/// 501, group descriptor 2, data block 5000 of inode 12.
fn small_write(j: &mut Journal, now: Instant, pid: u32, sync: bool) -> Stop {
    let h = start(j, now, pid, 8);
    for b in [1000, 501, 2] {
        assert_eq!(j.dirty_metadata(h, b).unwrap(), Access::Done);
    }
    assert_eq!(j.dirty_data(h, 12, 5000).unwrap(), Access::Done);
    if sync {
        j.set_sync(h);
    }
    j.stop(now, h)
}

/// Run the commit thread, every wait satisfied at once, to its next sleep.
fn run_commit(j: &mut Journal, now: Instant) -> Vec<Action> {
    let mut all = Vec::new();
    loop {
        let acts = j.kjournald(now);
        let last = acts.last().cloned();
        all.extend(acts);
        j.check_invariants();
        if matches!(last, Some(Action::Idle) | Some(Action::WaitUpdates { .. })) {
            return all;
        }
    }
}

fn log(blocks: &[(u64, Option<u64>)]) -> Vec<LogWrite> {
    blocks
        .iter()
        .map(|&(b, home)| LogWrite {
            block: AREA + b,
            kind: home.map_or(LogBlock::Descriptor, |home| LogBlock::Metadata { home }),
        })
        .collect()
}

/// The log writes of the small write: a descriptor at journal block 1, the
/// copies of blocks 2, 501, 1000 (in `t_buffers` order; here by block).
fn small_log() -> Vec<LogWrite> {
    log(&[(1, None), (2, Some(2)), (3, Some(501)), (4, Some(1000))])
}

/// ext3 on 2.6.33, `data=ordered`, an fsync'd write (synchronous handle):
/// `journal_commit_transaction` writes the data buffer with `WRITE_SYNC_PLUG`
/// (`t_synchronous_commit`), waits, writes descriptor + copies, waits, then
/// `journal_write_commit_record`: `sync_dirty_buffer` (`WRITE_SYNC`) with
/// barriers off, `WRITE_SYNC | WRITE_BARRIER` with `barrier=1`.
#[test]
fn jbd_2_6_33_commit_sequence_barrier_off_and_on() {
    for barrier in [false, true] {
        let mut j = journal(Flavour::Jbd, Profile::V2_6_33, |c| c.barrier = barrier);
        let Stop::Done {
            actions,
            wait_commit,
        } = small_write(&mut j, t(0), 7, true)
        else {
            panic!("a lone syncer does not batch")
        };
        assert_eq!(wait_commit, Some(1));
        assert_eq!(actions, [Action::WakeCommitThread]);
        let plug = W | SYNC | NOIDLE;
        let mut commit_flags = W | SYNC | NOIDLE | UNPLUG;
        if barrier {
            commit_flags = commit_flags | ReqFlags::FLUSH;
        }
        assert_eq!(
            run_commit(&mut j, t(1)),
            [
                Action::WakeStartWaiters,
                Action::WriteOrderedData {
                    tid: 1,
                    blocks: vec![(12, 5000)],
                    flags: plug
                },
                Action::WaitOrderedData { tid: 1 },
                Action::WriteLog {
                    tid: 1,
                    blocks: small_log(),
                    flags: plug
                },
                Action::WaitLog { tid: 1 },
                Action::Unshadow { tid: 1 },
                Action::WriteCommitBlock {
                    tid: 1,
                    block: AREA + 5,
                    flags: commit_flags,
                    checksum: false
                },
                Action::WaitCommitBlock { tid: 1 },
                Action::MetadataDirty {
                    blocks: vec![2, 501, 1000]
                },
                Action::CommitDone { tid: 1 },
                Action::Idle,
            ]
        );
        assert!(j.committed(1));
        assert_eq!(j.log_state(), (6, 1, 32767 - 5));
    }
}

/// ext4 on 2.6.37 with barriers (the default): the inode's data is submitted
/// (`WB_SYNC_ALL` writepages, `WRITE_SYNC_PLUG`) and not waited for before the
/// log writes; then data, then log are waited for; the commit block is
/// `WRITE_SYNC_PLUG | WRITE_FLUSH_FUA`.
#[test]
fn jbd2_2_6_37_commit_block_is_flush_fua() {
    let mut j = journal(Flavour::Jbd2, Profile::V2_6_37, |_| {});
    assert!(j.config().barrier, "ext4 mounts with barriers by default");
    small_write(&mut j, t(0), 7, true);
    let plug = W | SYNC | NOIDLE;
    assert_eq!(
        run_commit(&mut j, t(1)),
        [
            Action::WakeStartWaiters,
            Action::WriteOrderedInodes {
                tid: 1,
                inodes: vec![12],
                flags: plug
            },
            Action::WriteLog {
                tid: 1,
                blocks: small_log(),
                flags: plug
            },
            Action::WaitOrderedData { tid: 1 },
            Action::WaitLog { tid: 1 },
            Action::Unshadow { tid: 1 },
            Action::WriteCommitBlock {
                tid: 1,
                block: AREA + 5,
                flags: plug | ReqFlags::FLUSH | ReqFlags::FUA,
                checksum: false
            },
            Action::WaitCommitBlock { tid: 1 },
            Action::MetadataDirty {
                blocks: vec![2, 501, 1000]
            },
            Action::CommitDone { tid: 1 },
            Action::Idle,
        ]
    );
}

/// ext4 before 2.6.37: a timer commit (no sync handle) writes with `WRITE`
/// (`write_op` of jbd2 up to 2.6.36) and the commit block is a barrier
/// (`set_buffer_ordered` + `WRITE_SYNC_PLUG`).
#[test]
fn jbd2_2_6_33_timer_commit_is_write_with_barrier_commit_block() {
    let mut j = journal(Flavour::Jbd2, Profile::V2_6_33, |_| {});
    small_write(&mut j, t(0), 7, false);
    let acts = run_commit(&mut j, t(5000));
    assert!(acts.contains(&Action::WriteLog {
        tid: 1,
        blocks: small_log(),
        flags: W
    }));
    assert!(acts.contains(&Action::WriteCommitBlock {
        tid: 1,
        block: AREA + 5,
        flags: W | SYNC | NOIDLE | ReqFlags::FLUSH,
        checksum: false
    }));
}

/// `journal_async_commit`: the commit block goes out with the log blocks,
/// checksummed and without barrier, followed by a waited-for
/// `blkdev_issue_flush`; only then the data and log waits.
#[test]
fn jbd2_async_commit_sends_commit_block_early_then_flushes() {
    let mut j = journal(Flavour::Jbd2, Profile::V2_6_37, |c| c.async_commit = true);
    small_write(&mut j, t(0), 7, true);
    let plug = W | SYNC | NOIDLE;
    let acts = run_commit(&mut j, t(1));
    assert_eq!(
        &acts[2..8],
        [
            Action::WriteLog {
                tid: 1,
                blocks: small_log(),
                flags: plug
            },
            Action::WriteCommitBlock {
                tid: 1,
                block: AREA + 5,
                flags: plug,
                checksum: true
            },
            Action::IssueFlush { tid: 1 },
            Action::WaitOrderedData { tid: 1 },
            Action::WaitLog { tid: 1 },
            Action::Unshadow { tid: 1 },
        ]
    );
    assert_eq!(acts[8], Action::WaitCommitBlock { tid: 1 });
    assert!(Journal::new(JournalConfig {
        async_commit: true,
        ..JournalConfig::defaults(Flavour::Jbd, Profile::V2_6_33, AREA, 32768)
    })
    .is_err());
}

/// `data=writeback` tracks no data; `data=journal` logs the data block as
/// metadata.
#[test]
fn data_modes_change_what_the_commit_writes() {
    let mut j = journal(Flavour::Jbd, Profile::V2_6_33, |c| {
        c.data = DataMode::Writeback
    });
    small_write(&mut j, t(0), 7, true);
    let acts = run_commit(&mut j, t(1));
    assert!(!acts
        .iter()
        .any(|a| matches!(a, Action::WriteOrderedData { .. })));
    let mut j = journal(Flavour::Jbd, Profile::V2_6_33, |c| {
        c.data = DataMode::Journal
    });
    small_write(&mut j, t(0), 7, true);
    let acts = run_commit(&mut j, t(1));
    let logged: Vec<u64> = acts
        .iter()
        .filter_map(|a| match a {
            Action::WriteLog { blocks, .. } => Some(blocks),
            _ => None,
        })
        .flatten()
        .filter_map(|w| match w.kind {
            LogBlock::Metadata { home } => Some(home),
            _ => None,
        })
        .collect();
    assert_eq!(logged, [2, 501, 1000, 5000]);
}

/// jbd2 batching (`jbd2_journal_stop`): once a commit has taken 8 ms
/// (`j_average_commit_time`), two processes fsync'ing in turn each sleep up to
/// that long in `journal_stop` so that the other joins: one commit serves both.
/// A lone process never sleeps (`j_last_sync_writer` is itself).
#[test]
fn jbd2_batches_two_syncing_processes_into_one_commit() {
    let mut j = journal(Flavour::Jbd2, Profile::V2_6_33, |_| {});
    // A first commit taking 6 ms (three waits of 2 ms) sets the average.
    small_write(&mut j, t(0), 1, true);
    j.kjournald(t(0));
    let mut now = t(0);
    while !j.committed(1) {
        now = Instant(now.0 + 2_000_000);
        j.kjournald(now);
    }
    assert_eq!(now, t(6));
    // Process 2 and then process 1 fsync in the new transaction.
    let h2 = start(&mut j, t(10), 2, 4);
    j.dirty_metadata(h2, 1001).unwrap();
    j.set_sync(h2);
    let Stop::BatchSleep { until } = j.stop(t(10), h2) else {
        panic!("a second syncer sleeps to batch")
    };
    assert_eq!(until, t(16), "clamp(6 ms, 0, 15 ms) from now");
    let h1 = start(&mut j, t(12), 1, 4);
    j.dirty_metadata(h1, 1002).unwrap();
    j.set_sync(h1);
    let Stop::BatchSleep { until: u1 } = j.stop(t(12), h1) else {
        panic!("the other syncer sleeps too")
    };
    assert_eq!(u1, t(18));
    let Stop::Done {
        wait_commit: w2, ..
    } = j.stop(t(16), h2)
    else {
        panic!()
    };
    // The commit thread locks the transaction and waits for h1.
    assert_eq!(
        j.kjournald(t(16)).last(),
        Some(&Action::WaitUpdates { tid: 2 })
    );
    let Stop::Done {
        wait_commit: w1,
        actions,
    } = j.stop(t(18), h1)
    else {
        panic!()
    };
    assert_eq!(actions[0], Action::WakeCommitThread);
    assert_eq!((w1, w2), (Some(2), Some(2)));
    let acts = run_commit(&mut j, t(18));
    let commits = acts
        .iter()
        .filter(|a| matches!(a, Action::CommitDone { .. }))
        .count();
    assert_eq!(commits, 1);
    assert!(j.committed(2));
    j.check_invariants();

    // Process 1 alone: never sleeps.
    for i in 0..3 {
        let h = start(&mut j, t(30 + i), 1, 2);
        j.set_sync(h);
        assert!(matches!(j.stop(t(30 + i), h), Stop::Done { .. }));
        run_commit(&mut j, t(30 + i));
    }
}

/// Without fsync a transaction commits when its timer (`t_expires`, armed at
/// `get_transaction`) fires: 5 s by default, `commit=` otherwise.
#[test]
fn commit_interval_commits_the_running_transaction() {
    for (secs, cfg_secs) in [(5, None), (1, Some(1))] {
        let mut j = journal(Flavour::Jbd, Profile::V2_6_33, |c| {
            if let Some(s) = cfg_secs {
                c.commit_interval = Duration::secs(s)
            }
        });
        let h = match j.start(t(100), 3, 4).unwrap() {
            Start::Started(h) => h,
            _ => panic!(),
        };
        j.dirty_metadata(h, 77).unwrap();
        let Stop::Done {
            actions,
            wait_commit,
        } = j.stop(t(100), h)
        else {
            panic!()
        };
        assert!(actions.is_empty() && wait_commit.is_none());
        assert_eq!(j.kjournald(t(200)), [Action::Idle]);
        assert!(!j.committed(1));
        let at = t(100 + secs * 1000);
        assert_eq!(j.commit_timer(at), [Action::WakeCommitThread]);
        let acts = run_commit(&mut j, at);
        assert!(acts.contains(&Action::CommitDone { tid: 1 }));
    }
}

/// The arming of the commit timer when a transaction starts.
#[test]
fn a_new_transaction_arms_the_commit_timer() {
    let mut j = journal(Flavour::Jbd2, Profile::V2_6_37, |_| {});
    let h = start(&mut j, t(3), 1, 1);
    assert_eq!(j.running_tid(), Some(1));
    j.stop(t(3), h);
    // The next start in the same transaction arms nothing new; after a commit,
    // a new transaction does.
    j.log_start_commit(1);
    run_commit(&mut j, t(4));
    match j.start(t(6), 1, 1).unwrap() {
        Start::Started(_) => {}
        s => panic!("{s:?}"),
    }
    assert_eq!(j.running_tid(), Some(2));
}

/// A small journal fills: with nothing written in place, a handle that finds
/// less than a transaction's worth of log space checkpoints the oldest
/// transaction itself (`__log_wait_for_space` → `log_do_checkpoint`), the tail
/// moves and the journal superblock is written; the log never overflows and no
/// log block is written twice before it is freed (both asserted inside).
#[test]
fn checkpoint_when_the_log_fills() {
    let mut j = journal(Flavour::Jbd2, Profile::V2_6_37, |c| c.maxlen = 1024);
    let mut now = t(0);
    let mut checkpoints = 0;
    let mut next_block = 10_000u64;
    for round in 0..40 {
        now = Instant(now.0 + 1_000_000);
        let h = loop {
            match j.start(now, 1, 200).unwrap() {
                Start::Started(h) => break h,
                Start::Wait {
                    actions,
                    until: Until::CheckpointWritten,
                } => {
                    let tid = actions.iter().find_map(|a| match a {
                        Action::Checkpoint { tid, blocks, .. } => {
                            assert_eq!(blocks.len(), 200);
                            Some(*tid)
                        }
                        _ => None,
                    });
                    let tid = tid.expect("a checkpoint to write");
                    checkpoints += 1;
                    let after = j.checkpoint_done(now, tid);
                    assert!(matches!(after[..], [Action::WriteJournalSuper { .. }]));
                }
                other => panic!("round {round}: {other:?}"),
            }
        };
        for _ in 0..200 {
            j.dirty_metadata(h, next_block).unwrap();
            next_block += 1;
        }
        j.set_sync(h);
        j.stop(now, h);
        run_commit(&mut j, now);
        assert!(j.committed(round + 1));
    }
    // 1023 log blocks, 202 per commit, free space must stay over 256 + 1/8:
    // the fourth transaction on needs a checkpoint of the oldest.
    assert!(checkpoints >= 36, "{checkpoints}");
    j.check_invariants();
}

/// Metadata written in place by normal writeback frees the log without a
/// checkpoint write: only the tail moves.
#[test]
fn writeback_of_metadata_spares_the_checkpoint_write() {
    let mut j = journal(Flavour::Jbd, Profile::V2_6_33, |c| c.maxlen = 1024);
    let mut now = t(0);
    for round in 0..20u64 {
        now = Instant(now.0 + 1_000_000);
        let h = loop {
            match j.start(now, 1, 200).unwrap() {
                Start::Started(h) => break h,
                Start::Wait { actions, until } => {
                    assert_eq!(until, Until::CheckpointWritten);
                    let io: Vec<&Action> = actions
                        .iter()
                        .filter(|a| !matches!(a, Action::ArmCommitTimer { .. }))
                        .collect();
                    assert!(
                        matches!(io[..], [Action::WriteJournalSuper { .. }]),
                        "{actions:?}"
                    );
                }
            }
        };
        let blocks: Vec<u64> = (0..200).map(|i| 10_000 + round * 1000 + i).collect();
        for &b in &blocks {
            j.dirty_metadata(h, b).unwrap();
        }
        j.set_sync(h);
        j.stop(now, h);
        for a in run_commit(&mut j, now) {
            if let Action::MetadataDirty { blocks } = a {
                for b in blocks {
                    j.metadata_written(b);
                }
            }
        }
    }
    j.check_invariants();
}

/// A transaction over a quarter of the journal is committed before the
/// handle joins a new one; a buffer whose log copy is in flight makes its next
/// writer wait (`BJ_Shadow`).
#[test]
fn full_transaction_commits_first_and_shadowed_buffers_wait() {
    let mut j = journal(Flavour::Jbd2, Profile::V2_6_37, |c| c.maxlen = 1024);
    let h = start(&mut j, t(0), 1, 250);
    j.dirty_metadata(h, 42).unwrap();
    match j.start(t(0), 2, 10).unwrap() {
        Start::Wait { actions, until } => {
            assert_eq!(until, Until::TransactionUnlocked);
            assert_eq!(actions, [Action::WakeCommitThread]);
        }
        s => panic!("{s:?}"),
    }
    j.stop(t(0), h);
    // Commit up to the log wait: block 42's copy is in flight.
    let mut acts = j.kjournald(t(1));
    while !matches!(acts.last(), Some(Action::WaitLog { .. })) {
        acts = j.kjournald(t(1));
    }
    let h2 = start(&mut j, t(1), 2, 10);
    assert_eq!(
        j.dirty_metadata(h2, 42).unwrap(),
        Access::WaitShadow { tid: 1 }
    );
    let acts = j.kjournald(t(2));
    assert_eq!(acts[0], Action::Unshadow { tid: 1 });
    assert_eq!(j.dirty_metadata(h2, 42).unwrap(), Access::Done);
    j.stop(t(2), h2);
    run_commit(&mut j, t(2));
    j.check_invariants();
}

#[test]
fn bad_configurations_and_handles_are_refused() {
    let small = JournalConfig::defaults(Flavour::Jbd2, Profile::V2_6_37, AREA, 100);
    assert!(Journal::new(small).is_err());
    let jbd6 = JournalConfig::defaults(Flavour::Jbd, Profile::V6, AREA, 4096);
    assert!(Journal::new(jbd6).is_err());
    let mut j = journal(Flavour::Jbd2, Profile::V2_6_37, |_| {});
    assert!(j.start(t(0), 1, 0).is_err());
    assert!(j.start(t(0), 1, 32768 / 4 + 1).is_err());
    let h = start(&mut j, t(0), 1, 1);
    j.dirty_metadata(h, 1).unwrap();
    assert!(j.dirty_metadata(h, 2).is_err(), "over the handle's credits");
}

/// Revoke records (`journal_write_revoke_records`) go to the log before the
/// descriptor: one revoke block holds (4096 - 16) / 4 records.
#[test]
fn revoke_records_precede_the_descriptor() {
    let mut j = journal(Flavour::Jbd, Profile::V2_6_33, |_| {});
    let h = start(&mut j, t(0), 1, 4);
    j.dirty_metadata(h, 9).unwrap();
    for b in 0..1021 {
        j.revoke(h, 50_000 + b);
    }
    j.set_sync(h);
    j.stop(t(0), h);
    let logs: Vec<Vec<LogWrite>> = run_commit(&mut j, t(1))
        .into_iter()
        .filter_map(|a| match a {
            Action::WriteLog { blocks, .. } => Some(blocks),
            _ => None,
        })
        .collect();
    let revoke = |b| LogWrite {
        block: AREA + b,
        kind: LogBlock::Revoke,
    };
    assert_eq!(logs[0], [revoke(1), revoke(2)]);
    assert_eq!(logs[1], log(&[(3, None), (4, Some(9))]));
}

/// `journal_trans_will_send_data_barrier` and `journal_start_commit`, as
/// ext3's fsync and sync use them.
#[test]
fn will_send_data_barrier_follows_the_commit_record() {
    let mut j = journal(Flavour::Jbd, Profile::V2_6_33, |c| c.barrier = true);
    let h = start(&mut j, t(0), 1, 4);
    j.dirty_metadata(h, 9).unwrap();
    j.stop(t(0), h);
    assert!(j.trans_will_send_data_barrier(1));
    let (tid, acts) = j.start_commit();
    assert_eq!((tid, acts), (Some(1), vec![Action::WakeCommitThread]));
    // Up to the commit block's wait: the barrier is on its way.
    let mut acts = j.kjournald(t(1));
    while !matches!(acts.last(), Some(Action::WaitCommitBlock { .. })) {
        assert!(j.trans_will_send_data_barrier(1));
        acts = j.kjournald(t(1));
    }
    assert!(!j.trans_will_send_data_barrier(1));
    assert_eq!(j.start_commit().0, Some(1), "the committing transaction");
    run_commit(&mut j, t(2));
    assert!(!j.trans_will_send_data_barrier(1));
    assert_eq!(j.start_commit().0, None);
    let off = journal(Flavour::Jbd, Profile::V2_6_33, |_| {});
    assert!(
        !off.trans_will_send_data_barrier(1),
        "ext3 2.6.33: barrier=0"
    );
}

/// jbd (ext3) batches too, but `journal_stop` caps the sleep at one jiffy.
#[test]
fn jbd_batching_sleep_is_capped_at_one_jiffy() {
    let mut j = journal(Flavour::Jbd, Profile::V2_6_33, |c| {
        c.jiffy = Duration::ms(4)
    });
    small_write(&mut j, t(0), 1, true);
    let mut now = t(0);
    while !j.committed(1) {
        now = Instant(now.0 + 3_000_000);
        j.kjournald(now);
    }
    // The first commit took 9 ms; another process's sync handle sleeps 4.
    let h = start(&mut j, t(20), 2, 4);
    j.dirty_metadata(h, 1001).unwrap();
    j.set_sync(h);
    assert_eq!(j.stop(t(20), h), Stop::BatchSleep { until: t(24) });
    assert!(matches!(
        j.stop(t(24), h),
        Stop::Done {
            wait_commit: Some(2),
            ..
        }
    ));
}

static CHECKPOINTS: AtomicU64 = AtomicU64::new(0);
static SHADOW_WAITS: AtomicU64 = AtomicU64::new(0);

/// A task of the randomized run below.
#[derive(Clone, Copy, Debug)]
enum Task {
    Idle,
    Starting,
    In { h: HandleId, left: u64 },
    Sleep { h: HandleId, until: Instant },
    WaitCommit(u32),
}

fn after_stop(s: Stop) -> Task {
    match s {
        Stop::Done {
            wait_commit: Some(tid),
            ..
        } => Task::WaitCommit(tid),
        Stop::Done { .. } => Task::Idle,
        Stop::BatchSleep { .. } => unreachable!("handled by the caller"),
    }
}

fn step_task(j: &mut Journal, rng: &mut iostack_des::Rng, now: Instant, pid: u32, t: Task) -> Task {
    match t {
        Task::Idle if rng.ratio(1, 3) => Task::Starting,
        Task::Idle => Task::Idle,
        Task::Starting => match j.start(now, pid, 1 + rng.below(40)).unwrap() {
            Start::Started(h) => Task::In {
                h,
                left: 1 + rng.below(8),
            },
            Start::Wait { actions, .. } => {
                for a in actions {
                    if let Action::Checkpoint { tid, .. } = a {
                        j.checkpoint_done(now, tid);
                        CHECKPOINTS.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Task::Starting
            }
        },
        Task::In { h, left: 0 } => {
            if rng.ratio(1, 4) {
                j.set_sync(h);
            }
            match j.stop(now, h) {
                Stop::BatchSleep { until } => Task::Sleep { h, until },
                s => after_stop(s),
            }
        }
        Task::In { h, left } => match j.dirty_metadata(h, 1000 + rng.below(500)) {
            Ok(Access::Done) => Task::In { h, left: left - 1 },
            Ok(Access::WaitShadow { .. }) => {
                SHADOW_WAITS.fetch_add(1, Ordering::Relaxed);
                t
            }
            // The handle's credits are spent (repeated blocks cost none).
            Err(_) => Task::In { h, left: 0 },
        },
        Task::Sleep { h, until } if now >= until => after_stop(j.stop(now, h)),
        Task::Sleep { .. } => t,
        Task::WaitCommit(tid) if j.committed(tid) => Task::Idle,
        Task::WaitCommit(_) => t,
    }
}

/// Three tasks start, dirty, sync and stop handles at random against the
/// commit thread, the commit timer, writeback of committed metadata and
/// checkpoints in a small journal, per flavour and options. The invariants
/// hold at every step (no log block written twice, no overflow, handle
/// accounting), and at the end every handle has committed exactly once.
#[test]
fn randomized_handles_all_commit_exactly_once() {
    let configs: [(Flavour, Profile, bool); 3] = [
        (Flavour::Jbd, Profile::V2_6_33, false),
        (Flavour::Jbd2, Profile::V2_6_33, false),
        (Flavour::Jbd2, Profile::V2_6_37, true),
    ];
    for (flavour, profile, async_commit) in configs {
        let mut j = journal(flavour, profile, |c| {
            c.maxlen = 1024;
            c.async_commit = async_commit;
        });
        let mut rng = iostack_des::Rng::stream(iostack_des::Seed(7), "jbd-random");
        let mut tasks = [Task::Idle; 3];
        let mut written_later: Vec<u64> = Vec::new();
        let mut now = t(0);
        for step in 0..20_000u64 {
            now = Instant(now.0 + 1_000_000);
            for a in j.kjournald(now) {
                if let Action::MetadataDirty { blocks } = a {
                    written_later.extend(blocks);
                }
            }
            if step % 700 == 0 {
                j.commit_timer(now);
            }
            if rng.ratio(1, 5) {
                for b in written_later.drain(..) {
                    j.metadata_written(b);
                }
            }
            for (i, task) in tasks.iter_mut().enumerate() {
                *task = step_task(&mut j, &mut rng, now, i as u32 + 1, *task);
            }
            j.check_invariants();
        }
        // Finish: close every handle, then commit what is left.
        for _ in 0..10_000 {
            now = Instant(now.0 + 1_000_000);
            for (i, task) in tasks.iter_mut().enumerate() {
                if !matches!(task, Task::Idle | Task::Starting) {
                    *task = step_task(&mut j, &mut rng, now, i as u32 + 1, *task);
                } else {
                    *task = Task::Idle;
                }
            }
            if let Some(tid) = j.running_tid() {
                j.log_start_commit(tid);
            }
            j.kjournald(now);
            if tasks.iter().all(|t| matches!(t, Task::Idle))
                && j.running_tid().is_none()
                && j.committing_tid().is_none()
            {
                break;
            }
        }
        j.check_invariants();
        let (started, committed) = j.handle_counts();
        assert!(started > 1000, "{flavour:?}: only {started} handles");
        assert_eq!(started, committed, "{flavour:?} {profile:?}");
    }
    // The run went through checkpoints and shadowed buffers.
    let (cp, sh) = (
        CHECKPOINTS.load(Ordering::Relaxed),
        SHADOW_WAITS.load(Ordering::Relaxed),
    );
    assert!(cp > 0 && sh > 0, "checkpoints {cp}, shadow waits {sh}");
}
