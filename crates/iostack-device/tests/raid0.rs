//! RAID0 controller checks: stripe mapping, the `Device` contract under random
//! command streams, write-cache backpressure, the seed 001 calibration and the
//! scaling of random reads with the members.

use iostack_des::{Rng, Seed};
use iostack_device::hdd::Hdd;
use iostack_device::presets::{list, lookup};
use iostack_device::raid0::{presets, Piece, Raid0, Raid0Params};
use iostack_device::DeviceSpec;
mod common;

use common::{closed, drive, iops, random_reads, Io, Rec};

fn preset() -> Raid0Params {
    match lookup("raid0-4x-2008") {
        Some(DeviceSpec::Raid0(p)) => p,
        other => panic!("raid0-4x-2008: {other:?}"),
    }
}

fn build(p: &Raid0Params, seed: u64) -> Raid0 {
    Raid0::new(p.clone(), Rng::stream(Seed(seed), "raid0"))
}

fn seq_writes(start: u64, sectors: u32, n: usize) -> impl Iterator<Item = Io> {
    (0..n as u64).map(move |i| Io {
        sector: start + i * sectors as u64,
        sectors,
        write: true,
        fua: false,
    })
}

/// Bytes per second over `recs[from..to]`, from the completion before `from`.
fn rate(recs: &[Rec], from: usize, to: usize, bytes_each: u64) -> u64 {
    let span = recs[to - 1].done - recs[from - 1].done;
    ((to - from) as u128 * bytes_each as u128 * 1_000_000_000 / span as u128) as u64
}

fn mb(bytes_per_s: u64) -> f64 {
    // Reporting only.
    bytes_per_s as f64 / 1e6
}

/// A small array for the mapping tests: 4 members, 64 KiB chunks, write-through.
fn small(cache_bytes: u64) -> Raid0Params {
    let mut p = preset();
    p.cache_bytes = cache_bytes;
    p
}

#[test]
fn preset_is_registered_listed_and_sourced() {
    let p = preset();
    let names: Vec<&str> = presets().iter().map(|x| x.0).collect();
    assert_eq!(names, ["raid0-4x-2008"]);
    let (_, q, d) = &presets()[0];
    assert_eq!(*q, p);
    assert!(
        d.contains("devices-and-simulators.md") && d.contains("seed 001"),
        "{d}"
    );
    assert!(list().iter().any(|(n, d2)| n == "raid0-4x-2008" && d2 == d));
    let dev = DeviceSpec::Raid0(p.clone()).build(Rng::stream(Seed(1), "dev"));
    assert!(dev.rotational());
    assert_eq!(dev.queue_depth(), 128);
    assert_eq!(dev.hw_limits().max_hw_sectors, 1024);
    let member = p.member.capacity_sectors / 128 * 128;
    assert_eq!(dev.capacity_sectors(), 4 * member);
    assert_eq!(p.members, 4);
    assert_eq!(p.member.rpm, 7200);
}

#[test]
fn split_matches_the_per_sector_mapping() {
    let p = small(0);
    // Worked examples (64 KiB = 128-sector chunks over 4 members).
    assert_eq!(p.map(0), (0, 0));
    assert_eq!(p.map(127), (0, 127));
    assert_eq!(p.map(128), (1, 0));
    assert_eq!(p.map(4 * 128), (0, 128));
    assert_eq!(p.map(5 * 128 + 7), (1, 135));
    let piece = |member, sector, sectors| Piece {
        member,
        sector,
        sectors,
    };
    assert_eq!(
        p.split(100, 300),
        vec![
            piece(0, 100, 28),
            piece(1, 0, 128),
            piece(2, 0, 128),
            piece(3, 0, 16)
        ]
    );
    // Across a stripe row: the end of member 3's row 0, then member 0's row 1.
    assert_eq!(p.split(502, 30), vec![piece(3, 118, 10), piece(0, 128, 20)]);
    // 512 KiB aligned: two chunks per member, contiguous there, one piece each.
    assert_eq!(
        p.split(1024, 1024),
        (0..4).map(|m| piece(m, 256, 256)).collect::<Vec<_>>()
    );
    assert_eq!(p.split(77, 0), vec![]);

    // Random commands against a sector-by-sector mapping, for several shapes.
    let mut r = Rng::stream(Seed(5), "split");
    for (members, chunk) in [(4u32, 128u32), (3, 24), (1, 8), (5, 1), (7, 100)] {
        let mut q = p.clone();
        q.members = members;
        q.chunk_sectors = chunk;
        for _ in 0..300 {
            let sector = r.below(1 << 24);
            let sectors = r.below(3000) as u32;
            let pieces = q.split(sector, sectors);
            let mut seen = vec![0u64; members as usize];
            for pc in &pieces {
                assert!(pc.sectors > 0);
                // One piece per member: its chunks are contiguous there.
                assert!(pieces.iter().filter(|x| x.member == pc.member).count() == 1);
                // A piece starts on a chunk boundary unless it holds the first
                // sector, and ends on one unless it holds the last.
                let c = chunk as u64;
                let (first, _) = q.map(sector);
                let (lastm, _) = q.map(sector + sectors as u64 - 1);
                assert!(pc.sector % c == 0 || pc.member == first, "{pc:?}");
                assert!(
                    (pc.sector + pc.sectors as u64) % c == 0 || pc.member == lastm,
                    "{pc:?}"
                );
                seen[pc.member as usize] += pc.sectors as u64;
            }
            for s in sector..sector + sectors as u64 {
                let (m, ms) = q.map(s);
                let pc = pieces.iter().find(|x| x.member == m).expect("member piece");
                assert!(
                    ms >= pc.sector && ms < pc.sector + pc.sectors as u64,
                    "sector {s} -> ({m}, {ms}) outside {pc:?}"
                );
            }
            assert_eq!(seen.iter().sum::<u64>(), sectors as u64);
        }
    }
}

#[test]
fn commands_reach_the_right_members() {
    // Write-through: every piece goes to its member as one command.
    let p = small(0);
    let mut d = build(&p, 2);
    let ios = [
        Io {
            sector: 100,
            sectors: 300,
            write: false,
            fua: false,
        },
        Io {
            sector: 1024,
            sectors: 1024,
            write: true,
            fua: false,
        },
        Io {
            sector: 502,
            sectors: 30,
            write: false,
            fua: false,
        },
    ];
    let recs = closed(&mut d, 1, ios);
    let st: Vec<(u64, u64, u64, u64)> = (0..4)
        .map(|m| {
            let s = d.member_stats(m);
            (s.reads, s.read_sectors, s.writes, s.write_sectors)
        })
        .collect();
    assert_eq!(
        st,
        vec![
            (2, 28 + 20, 1, 256),
            (1, 128, 1, 256),
            (1, 128, 1, 256),
            (2, 16 + 10, 1, 256)
        ]
    );
    // A write-through write completes with its last piece, after its transfer.
    let xfer = 1024 * 512 * 1_000_000_000 / p.link_bytes_per_s;
    assert!(recs[1].done - recs[1].submit >= p.overhead_ns + xfer);

    // With the cache: writes are acknowledged from it, and a read of dirty data
    // is a hit that reaches no member.
    let p = small(16 << 20);
    let mut d = build(&p, 2);
    let w = Io {
        sector: 4096,
        sectors: 64,
        write: true,
        fua: false,
    };
    let r = Io { write: false, ..w };
    let recs = closed(&mut d, 1, [w, r]);
    let link = p.overhead_ns + 64 * 512 * 1_000_000_000 / p.link_bytes_per_s;
    for rec in &recs {
        assert_eq!(rec.done - rec.submit, link);
    }
    assert!((0..4).all(|m| d.member_stats(m).reads == 0));
}

/// Random streams of commands on several arrays: every command is reported
/// once, never before it was submitted or polled (checked in `drive`), and the
/// run is a function of its inputs.
#[test]
fn random_mixes_complete_every_command_exactly_once() {
    let mut variants: Vec<(&str, Raid0Params)> = vec![("preset", preset())];
    let mut tiny = preset();
    tiny.members = 3;
    tiny.chunk_sectors = 24;
    tiny.cache_bytes = 128 * 512;
    tiny.destage_max_sectors = 16;
    tiny.destage_depth = 2;
    tiny.queue_depth = 16;
    tiny.member.capacity_sectors = 4_000_000;
    tiny.member.write_cache_sectors = 256;
    tiny.member.write_cache_extents = 4;
    tiny.member.cache_segments = 2;
    tiny.member.cache_segment_sectors = 64;
    tiny.member.read_ahead_sectors = 64;
    tiny.member.queue_depth = 4;
    tiny.member.age_limit_ns = 20_000_000;
    variants.push(("tiny", tiny.clone()));
    let mut through = tiny.clone();
    through.cache_bytes = 0;
    variants.push(("write-through", through));
    let mut single = tiny.clone();
    single.members = 1;
    single.member.queue_depth = 1;
    single.destage_depth = 3;
    variants.push(("one member, no queuing", single));
    let mut nowce = tiny.clone();
    nowce.member.write_cache = false;
    nowce.destage_depth = 8;
    nowce.cache_bytes = 1 << 20;
    variants.push(("member write cache off", nowce));

    for (vi, (name, p)) in variants.iter().enumerate() {
        let cap = p.capacity_sectors();
        for case in 0..5u64 {
            let mut r = Rng::stream(Seed(case * 100 + vi as u64), "prop");
            let n = 300 + r.below(300) as usize;
            let mut t = 0u64;
            let mut cursor = r.below(cap - 10_000);
            let mut ios = Vec::with_capacity(n);
            for _ in 0..n {
                t += match r.below(4) {
                    0 => 0,
                    1 => r.below(100_000),
                    2 => r.below(10_000_000),
                    _ => r.below(200_000_000),
                };
                let sectors = match r.below(5) {
                    0 => 0,
                    1 => 8,
                    2 => 1 + r.below(256) as u32,
                    3 => 1024,
                    _ => 1 + r.below(2048) as u32,
                };
                let sector = match r.below(10) {
                    0..=4 => cursor,
                    5 => cap - r.below(1000), // runs past the end: clipped
                    _ => r.below(cap),
                };
                cursor = sector + sectors as u64;
                if cursor + 5000 >= cap {
                    cursor = 0;
                }
                let write = r.ratio(2, 5);
                let fua = write && r.ratio(1, 6);
                ios.push((
                    t,
                    Io {
                        sector,
                        sectors,
                        write,
                        fua,
                    },
                ));
            }
            let qd = 1 + r.below(p.queue_depth as u64) as u32;
            let mut a = build(p, case);
            let ra = drive(&mut a, qd, &ios);
            assert!(a.cache_used_sectors() <= p.cache_bytes / 512, "{name}");
            let mut b = build(p, case);
            let rb = drive(&mut b, qd, &ios);
            assert_eq!(ra.len(), n);
            let max = ra.iter().map(|x| x.done - x.submit).max().unwrap_or(0);
            println!(
                "{name} case {case}: {n} commands at QD{qd}, max latency {} ms",
                max / 1_000_000
            );
            for (x, y) in ra.iter().zip(&rb) {
                assert_eq!(
                    (x.submit, x.done),
                    (y.submit, y.done),
                    "{name}: not deterministic"
                );
            }
        }
    }
}

#[test]
fn full_cache_slows_write_acks_to_member_speed() {
    // A 32 MiB cache: the first writes go at link speed, then each waits for
    // the members to destage.
    let mut p = preset();
    p.cache_bytes = 32 << 20;
    let mut d = build(&p, 3);
    let n = 64 + 2048;
    let recs = closed(&mut d, 2, seq_writes(0, 1024, n));
    let fast = rate(&recs, 1, 48, 512 << 10);
    let steady = rate(&recs, 128, n, 512 << 10);
    let lat_fast = recs[1..48].iter().map(|r| r.done - r.submit).max().unwrap();
    let lat_steady = recs[128..].iter().map(|r| r.done - r.submit).sum::<u64>() / (n - 128) as u64;
    println!(
        "32 MiB cache: first 24 MiB at {:.0} MB/s (max ack {} us), then {:.1} MB/s (mean ack {} us)",
        mb(fast),
        lat_fast / 1000,
        mb(steady),
        lat_steady / 1000
    );
    // Link speed: 512 KiB at 1 GB/s plus 50 us, i.e. ~913 MB/s.
    let link =
        512u64 * 1024 * 1_000_000_000 / (p.overhead_ns + 524_288_000_000_000 / p.link_bytes_per_s);
    assert!(fast * 100 >= link * 95, "{fast} vs {link}");
    // Then the members' rate: N x one member's outer-zone media rate within 3%.
    let m = Hdd::new(p.member.clone(), Rng::stream(Seed(1), "m"));
    let media = p.members as u64 * m.zone_rate(0);
    assert!(
        steady.abs_diff(media) * 100 <= 3 * media,
        "{steady} vs {media}"
    );
    assert!(lat_steady > 2 * lat_fast);
}

#[test]
fn streaming_writes_run_at_the_members_destage_rate() {
    // 1 MiB O_DIRECT writes go out as two 512 KiB requests, so 2 are outstanding.
    // Once the cache is full (after the first cache size plus 256 MiB), a stream
    // runs at what the members destage: N x one member's outer-zone media rate.
    // (The member rate is calibrated end to end, ext4 O_DIRECT on the whole
    // simulated machine, against seed 001's 317 MB/s; see raid0.rs.)
    let p = preset();
    let mut d = build(&p, 1);
    let warm = (p.cache_bytes / (512 << 10)) as usize + 512;
    let n = warm + 4096;
    let recs = closed(&mut d, 2, seq_writes(0, 1024, n));
    let steady = rate(&recs, warm, n, 512 << 10);
    let from_empty = rate(&recs, 1, 4096, 512 << 10);
    println!(
        "raid0-4x-2008 512 KiB sequential writes QD2: {:.1} MB/s over 2 GiB with the cache full, \
         {:.1} MB/s over the first 2 GiB from an empty cache",
        mb(steady),
        mb(from_empty)
    );
    let m = Hdd::new(p.member.clone(), Rng::stream(Seed(1), "m"));
    let media = p.members as u64 * m.zone_rate(0);
    assert!(
        steady.abs_diff(media) * 100 <= 2 * media,
        "{steady} vs {media}"
    );
    assert!(
        from_empty > steady,
        "the cache absorbs the start of a stream"
    );
}

#[test]
fn random_reads_scale_with_members() {
    // Random 4 KiB reads: the array at N x q outstanding against one member at q.
    // Tolerance: each member gets a random share of the N x q reads, so some run
    // below q while others queue at the controller, and SPTF gains less than
    // linearly with depth; the controller's 50 us + 4 us per read is ~1% of a
    // 5-13 ms service. Expect 0.85 N .. 1.05 N.
    let p = preset();
    let n = p.members as u64;
    for q in [8u32, 31] {
        let mut h = Hdd::new(p.member.clone(), Rng::stream(Seed(3), "member"));
        let one = iops(&closed(
            &mut h,
            q,
            random_reads(p.member.capacity_sectors, 3000, 8, 5),
        ));
        let mut d = build(&p, 3);
        let all = iops(&closed(
            &mut d,
            q * 4,
            random_reads(p.capacity_sectors(), 12000, 8, 6),
        ));
        println!(
            "random 4 KiB reads: one member at QD{q} {one} IOPS, array at QD{} {all} IOPS ({:.2} x)",
            q * 4,
            all as f64 / one as f64
        );
        assert!(all * 100 >= 85 * n * one, "QD{q}: {all} vs {one}");
        assert!(all * 100 <= 105 * n * one, "QD{q}: {all} vs {one}");
    }
}

/// A flush on the array waits for the battery-backed cache to be destaged to
/// the members (and their own caches flushed): after 64 MiB of cached writes it
/// takes at least what the members need to write them, and the cache is empty
/// afterwards. A FUA write goes through to the members instead of the cache.
#[test]
fn flush_destages_the_controller_cache() {
    let p = preset();
    let mut ios: Vec<(u64, Io)> = seq_writes(0, 1024, 128).map(|io| (0, io)).collect();
    ios.push((0, common::flush_io()));
    let mut r = build(&p, 3);
    let recs = drive(&mut r, 1, &ios);
    let acked = recs[127].done;
    let flush = recs[128].done - acked;
    let bytes = 128u64 * 1024 * 512;
    // The members together write at most 4 × 93 MB/s: from the start, the
    // flush cannot end before they could have written it all (destaging runs
    // in the background while the writes are acknowledged).
    let floor = bytes * 1_000_000_000 / (4 * 100_000_000);
    println!(
        "raid0: 64 MiB acked in {} us, flush {} us (floor {} us)",
        acked / 1000,
        flush / 1000,
        floor / 1000
    );
    assert!(recs[128].done >= floor && flush > 0);
    assert_eq!(r.cache_used_sectors(), 0);
    for m in 0..4 {
        assert_eq!(r.member(m).write_cache_dirty_sectors(), 0);
    }

    // FUA: through to the members, slower than a cached write.
    let cached = closed(
        &mut build(&p, 3),
        1,
        seq_writes(0, 8, 1).collect::<Vec<_>>(),
    );
    let fua: Vec<Io> = seq_writes(0, 8, 1)
        .map(|io| Io { fua: true, ..io })
        .collect();
    let through = closed(&mut build(&p, 3), 1, fua);
    assert!(through[0].done > cached[0].done + p.member.overhead_write_ns);
}
