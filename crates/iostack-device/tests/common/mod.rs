//! The device tests' driver: submits commands against the `Device` contract and
//! checks it (every command reported once, never in the past, completed at the
//! reported instant).

#![allow(dead_code)]

use iostack_des::{Instant, Rng, Seed};
use iostack_device::{Device, DeviceCmd};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// One command as the test issues it.
#[derive(Clone, Copy, Debug)]
pub struct Io {
    pub sector: u64,
    pub sectors: u32,
    pub write: bool,
    pub fua: bool,
}

/// A cache flush: a write of no data.
pub fn flush_io() -> Io {
    Io {
        sector: 0,
        sectors: 0,
        write: true,
        fua: false,
    }
}

/// What happened to one command.
#[derive(Clone, Copy, Debug)]
pub struct Rec {
    pub submit: u64,
    pub done: u64,
}

/// A driver that checks the contract: every command reported exactly once, at
/// or after the poll that reports it and its own submission, and completed at
/// that instant. Commands arrive at the given instants (or when the queue has
/// room, whichever is later), in order.
pub fn drive(dev: &mut dyn Device, qd: u32, ios: &[(u64, Io)]) -> Vec<Rec> {
    assert!(qd <= dev.queue_depth());
    let mut recs: Vec<Option<Rec>> = vec![None; ios.len()];
    let mut submit_at: HashMap<u64, u64> = HashMap::new();
    let mut reported: HashMap<u64, u64> = HashMap::new();
    let mut events: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let mut out = Vec::new();
    let mut next = 0usize;
    let mut in_dev = 0u32;
    let mut now = 0u64;
    let mut backlog: VecDeque<usize> = VecDeque::new();

    let mut poll = |dev: &mut dyn Device,
                    now: u64,
                    events: &mut BinaryHeap<Reverse<(u64, u64)>>,
                    reported: &mut HashMap<u64, u64>,
                    submit_at: &HashMap<u64, u64>| {
        out.clear();
        dev.poll(Instant(now), &mut out);
        for &(at, id) in &out {
            assert!(
                at.0 >= now,
                "completion {} reported in the past ({now})",
                at.0
            );
            let s = *submit_at.get(&id).expect("reported an unknown command");
            assert!(at.0 >= s, "completion before submission");
            assert!(
                reported.insert(id, at.0).is_none(),
                "command {id} reported twice"
            );
            events.push(Reverse((at.0, id)));
        }
    };

    loop {
        // Next event: an arrival or a completion, completions first on ties.
        let t_arr = ios.get(next).map(|x| x.0.max(now));
        let t_done = events.peek().map(|Reverse((t, _))| *t);
        let arrival_first = match (t_arr, t_done) {
            (None, None) => break,
            (Some(a), Some(d)) => a < d,
            (Some(_), None) => true,
            (None, Some(_)) => false,
        };
        if arrival_first {
            now = t_arr.unwrap();
            backlog.push_back(next);
            next += 1;
        } else {
            let Reverse((t, id)) = events.pop().unwrap();
            now = t;
            dev.complete(Instant(now), id);
            in_dev -= 1;
            let i = id as usize;
            recs[i] = Some(Rec {
                submit: submit_at[&id],
                done: t,
            });
            poll(dev, now, &mut events, &mut reported, &submit_at);
        }
        while in_dev < qd {
            let Some(i) = backlog.pop_front() else { break };
            let io = ios[i].1;
            submit_at.insert(i as u64, now);
            dev.submit(
                Instant(now),
                DeviceCmd {
                    id: i as u64,
                    sector: io.sector,
                    sectors: io.sectors,
                    write: io.write,
                    fua: io.fua,
                    flush: io.write && io.sectors == 0,
                },
            );
            in_dev += 1;
            poll(dev, now, &mut events, &mut reported, &submit_at);
        }
    }
    assert_eq!(in_dev, 0);
    recs.into_iter()
        .enumerate()
        .map(|(i, r)| r.unwrap_or_else(|| panic!("command {i} never completed")))
        .collect()
}

/// A closed loop: every command available at time 0, `qd` in flight.
pub fn closed(dev: &mut dyn Device, qd: u32, ios: impl IntoIterator<Item = Io>) -> Vec<Rec> {
    let v: Vec<(u64, Io)> = ios.into_iter().map(|io| (0, io)).collect();
    drive(dev, qd, &v)
}

/// `n` aligned random reads of `sectors` over a device of `cap` sectors.
pub fn random_reads(cap: u64, n: usize, sectors: u32, seed: u64) -> Vec<Io> {
    let mut r = Rng::stream(Seed(seed), "random-reads");
    (0..n)
        .map(|_| Io {
            sector: r.below(cap / sectors as u64) * sectors as u64,
            sectors,
            write: false,
            fua: false,
        })
        .collect()
}

/// Commands completed per second over the whole run.
pub fn iops(recs: &[Rec]) -> u64 {
    let end = recs.iter().map(|r| r.done).max().unwrap();
    recs.len() as u64 * 1_000_000_000 / end
}
