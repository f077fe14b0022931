//! HDD model checks against analytic expectations: the seek curve, media rates,
//! random-access latency, queuing gain and starvation bound, write-back cache,
//! and the `Device` contract under random command streams.

use iostack_des::{Rng, Seed};
use iostack_device::hdd::{presets, Hdd, HddParams};
use iostack_device::Device;
mod common;

use common::{closed, drive, iops, random_reads, Io, Rec};

fn preset(name: &str) -> HddParams {
    presets()
        .into_iter()
        .find(|(n, _, _)| *n == name)
        .unwrap_or_else(|| panic!("no preset {name}"))
        .1
}

fn build(p: &HddParams, seed: u64) -> Hdd {
    Hdd::new(p.clone(), Rng::stream(Seed(seed), "hdd"))
}

fn mean_latency(recs: &[Rec]) -> u64 {
    recs.iter().map(|r| r.done - r.submit).sum::<u64>() / recs.len() as u64
}

fn pct(a: u64, b: u64) -> f64 {
    // Reporting only; no decision in the model uses floats.
    (a as f64 / b as f64 - 1.0) * 100.0
}

const ALL: [&str; 6] = [
    "sata-2009",
    "sata-2010",
    "sata-2009-seed000",
    "ide-2001",
    "sas-15k",
    "barracuda-7200-12",
];

#[test]
fn presets_are_named_and_sourced() {
    let names: Vec<&str> = presets().iter().map(|p| p.0).collect();
    assert_eq!(names, ALL);
    for (n, p, d) in presets() {
        assert!(d.contains("devices-and-simulators.md"), "{n}: {d}");
        let h = build(&p, 1);
        assert_eq!(h.capacity_sectors(), p.capacity_sectors);
        assert!(h.rotational());
        assert_eq!(
            iostack_device::presets::lookup(n),
            Some(iostack_device::DeviceSpec::Hdd(p))
        );
    }
}

#[test]
fn seek_curve_matches_its_datasheet_figures() {
    for name in ALL {
        let p = preset(name);
        let h = build(&p, 1);
        let c = h.seek_curve().clone();
        let n = c.cylinders;
        assert_eq!(c.time(0), 0);
        assert_eq!(c.time(1), p.seek_track_to_track_ns, "{name}");
        let full = c.time(n - 1);
        assert!(
            full.abs_diff(p.seek_full_stroke_ns) * 1000 <= p.seek_full_stroke_ns,
            "{name}: full stroke {full}"
        );
        // Mean over uniformly random start and end cylinders, by summation.
        let mut sum: u128 = 0;
        let mut prev = 0;
        for d in 1..n {
            let t = c.time(d);
            assert!(t >= prev, "{name}: seek curve not monotone at {d}");
            prev = t;
            sum += 2 * (n - d) as u128 * t as u128;
        }
        let mean = (sum / (n as u128 * n as u128)) as u64;
        println!(
            "{name}: {n} cylinders, threshold {}, t(100) {} us, mean {} us vs {} us ({:+.2}%)",
            c.threshold,
            c.time(100) / 1000,
            mean / 1000,
            p.seek_average_ns / 1000,
            pct(mean, p.seek_average_ns)
        );
        assert!(
            mean.abs_diff(p.seek_average_ns) * 100 <= 3 * p.seek_average_ns,
            "{name}: mean seek {mean} vs {}",
            p.seek_average_ns
        );
    }
}

/// Expected sustained rate of a zone from the parameters: a cylinder of
/// `heads × spt` sectors takes `heads` revolutions plus the skew slots crossed.
fn analytic_rate(h: &Hdd, z: usize) -> u64 {
    let p = h.params();
    let zone = h.layout().zones[z];
    let rev_ns_x = h.rotation().unit as u128 * 1_000_000_000 / h.rotation().rate as u128; // ns × 1e9
    let slots = p.heads as u128 * zone.spt as u128
        + (p.heads as u128 - 1) * zone.track_skew as u128
        + zone.cyl_skew as u128;
    let time_x = rev_ns_x * slots / zone.spt as u128; // ns × 1e9 per cylinder
    let bytes = p.heads as u128 * zone.spt as u128 * 512;
    (bytes * 1_000_000_000 * 1_000_000_000 / time_x) as u64
}

fn sequential_rate(p: &HddParams, start: u64, cmd_sectors: u32, cmds: usize) -> u64 {
    let mut h = build(p, 3);
    let ios = (0..cmds).map(|i| Io {
        sector: start + i as u64 * cmd_sectors as u64,
        sectors: cmd_sectors,
        write: false,
        fua: false,
    });
    let recs = closed(&mut h, 1, ios);
    // From the first completion (the miss) to the last.
    let span = recs[cmds - 1].done - recs[0].done;
    let bytes = (cmds as u64 - 1) * cmd_sectors as u64 * 512;
    (bytes as u128 * 1_000_000_000 / span as u128) as u64
}

#[test]
fn sequential_reads_stream_at_the_media_rate() {
    for name in ALL {
        let p = preset(name);
        let h = build(&p, 3);
        let cmd = (p.limits.max_hw_sectors).min(2048);
        let zones = h.layout().zones.clone();
        let inner = zones.len() - 1;
        for (z, label) in [(0usize, "outer"), (inner, "inner")] {
            let expect = analytic_rate(&h, z);
            assert_eq!(expect / 1000, h.zone_rate(z) / 1000);
            let got = sequential_rate(&p, zones[z].first_lba, cmd, 48);
            println!(
                "{name} {label}: {:.1} MB/s measured vs {:.1} MB/s media ({:+.2}%)",
                got as f64 / 1e6,
                expect as f64 / 1e6,
                pct(got, expect)
            );
            assert!(
                got.abs_diff(expect) * 100 <= 5 * expect,
                "{name} {label}: {got} vs {expect}"
            );
        }
    }
}

#[test]
fn small_sequential_reads_hit_the_read_ahead() {
    let p = preset("sata-2009");
    let mut h = build(&p, 5);
    let ios = (0..2000u64).map(|i| Io {
        sector: 1_000_000 + i * 8,
        sectors: 8,
        write: false,
        fua: false,
    });
    let recs = closed(&mut h, 1, ios);
    let span = recs[1999].done - recs[0].done;
    let rate = 1999u64 * 4096 * 1_000_000_000 / span;
    let hit = p.overhead_read_hit_ns + 4096 * 1_000_000_000 / p.interface_bytes_per_s;
    let fast = recs.iter().filter(|r| r.done - r.submit <= hit + 1).count();
    println!(
        "sata-2009 4 KiB sequential QD1: {:.1} MB/s, {fast}/2000 at hit latency",
        rate as f64 / 1e6
    );
    // Each read costs at least a hit; the media keeps ahead of the host.
    assert!(fast > 1500, "{fast}");
    assert!(rate * 100 >= 95 * (4096 * 1_000_000_000 / hit));
}

/// Overhead + average seek + half a revolution + transfer, ns.
fn random_read_expectation(p: &HddParams, h: &Hdd, sectors: u32) -> u64 {
    let rev = h.rotation().rev_ns();
    let avg_spt = (p.outer_sectors_per_track + p.inner_sectors_per_track) as u64 / 2;
    p.overhead_read_miss_ns + p.seek_average_ns + rev / 2 + rev * sectors as u64 / avg_spt
}

#[test]
fn random_reads_at_qd1_cost_seek_plus_half_a_revolution() {
    for name in ALL {
        let p = preset(name);
        let mut h = build(&p, 7);
        let expect = random_read_expectation(&p, &h, 8);
        let recs = closed(&mut h, 1, random_reads(p.capacity_sectors, 3000, 8, 11));
        let mean = mean_latency(&recs);
        println!(
            "{name}: random 4 KiB QD1 mean {} us vs {} us expected ({:+.1}%), {:.0} IOPS",
            mean / 1000,
            expect / 1000,
            pct(mean, expect),
            1e9 / mean as f64
        );
        assert!(
            mean.abs_diff(expect) * 10 <= expect,
            "{name}: {mean} vs {expect}"
        );
    }
}

#[test]
fn queuing_raises_random_read_iops_within_the_age_limit() {
    for name in ["sata-2009", "sas-15k", "barracuda-7200-12"] {
        let p = preset(name);
        let qd = p.queue_depth.min(32);
        let reads = random_reads(p.capacity_sectors, 6000, 8, 13);
        let mut h1 = build(&p, 9);
        let r1 = closed(&mut h1, 1, reads.clone());
        let mut hq = build(&p, 9);
        let rq = closed(&mut hq, qd, reads);
        let (i1, iq) = (iops(&r1), iops(&rq));
        let max_lat = rq.iter().map(|r| r.done - r.submit).max().unwrap();
        // One service at most: overhead, full stroke, a revolution, the transfer.
        let service = p.overhead_read_miss_ns
            + p.seek_full_stroke_ns
            + hq.rotation().rev_ns()
            + hq.rotation().rev_ns() / 8;
        println!(
            "{name}: random 4 KiB QD1 {i1} IOPS, QD{qd} {iq} IOPS ({:.2}x); max latency {} ms \
             (age limit {} ms, bound {} ms), mean {} ms",
            iq as f64 / i1 as f64,
            max_lat / 1_000_000,
            p.age_limit_ns / 1_000_000,
            (p.age_limit_ns + 2 * service) / 1_000_000,
            mean_latency(&rq) / 1_000_000
        );
        assert!(iq * 10 >= i1 * 16, "{name}: gain {iq}/{i1} below 1.6x");
        assert!(iq * 10 <= i1 * 26, "{name}: gain {iq}/{i1} above 2.6x");
        // Waits at most the age limit plus the service in progress, then its own.
        assert!(max_lat <= p.age_limit_ns + 2 * service, "{name}: {max_lat}");
    }
}

#[test]
fn sequential_stream_cannot_starve_a_random_reader_past_the_age_limit() {
    // A deep sequential stream plus one random reader.
    let p = preset("sata-2009");
    let mut h = build(&p, 4);
    let mut ios = Vec::new();
    let mut r = Rng::stream(Seed(2), "mix");
    for i in 0..4000u64 {
        if i % 50 == 7 {
            ios.push((
                0,
                Io {
                    sector: r.below(p.capacity_sectors / 8) * 8,
                    sectors: 8,
                    write: false,
                    fua: false,
                },
            ));
        } else {
            ios.push((
                0,
                Io {
                    sector: i * 256,
                    sectors: 256,
                    write: false,
                    fua: false,
                },
            ));
        }
    }
    let recs = drive(&mut h, 31, &ios);
    let max_lat = recs.iter().map(|r| r.done - r.submit).max().unwrap();
    println!(
        "stream + random QD31: max latency {} ms",
        max_lat / 1_000_000
    );
    assert!(max_lat <= p.age_limit_ns + 60_000_000, "{max_lat}");
}

#[test]
fn reads_are_not_starved_behind_a_write_flood() {
    // Random writes at full queue depth keep the write cache full; reads mixed in
    // take turns with the destages in arrival order, and none waits past the age
    // limit.
    let p = preset("sata-2009");
    let mut r = Rng::stream(Seed(8), "flood");
    let ios: Vec<(u64, Io)> = (0..6000)
        .map(|i| {
            (
                0,
                Io {
                    sector: r.below(p.capacity_sectors / 8) * 8,
                    sectors: 8,
                    write: i % 4 != 0,
                    fua: false,
                },
            )
        })
        .collect();
    let mut h = build(&p, 6);
    let recs = drive(&mut h, 31, &ios);
    let reads: Vec<Rec> = recs.iter().step_by(4).copied().collect();
    let max_read = reads.iter().map(|r| r.done - r.submit).max().unwrap();
    println!(
        "write flood QD31: read mean {} ms, max {} ms; {} IOPS overall",
        mean_latency(&reads) / 1_000_000,
        max_read / 1_000_000,
        iops(&recs)
    );
    assert!(max_read <= p.age_limit_ns + 60_000_000, "{max_read}");
}

#[test]
fn write_back_cache_hides_positioning_and_write_through_pays_it() {
    let p = preset("sata-2009");
    let writes: Vec<Io> = random_reads(p.capacity_sectors, 64, 8, 17)
        .into_iter()
        .map(|io| Io { write: true, ..io })
        .collect();
    // Write-back: 64 scattered 4 KiB writes fit in the cache.
    let mut h = build(&p, 1);
    let recs = closed(&mut h, 1, writes.clone());
    let mean = mean_latency(&recs);
    let expect = p.overhead_write_ns + 4096 * 1_000_000_000 / p.interface_bytes_per_s;
    println!(
        "sata-2009 WCE on: 4 KiB write mean {} us vs {} us",
        mean / 1000,
        expect / 1000
    );
    assert!(mean.abs_diff(expect) * 20 <= expect, "{mean} vs {expect}");

    // Write-through: positioning, settle and rotation on every write.
    let mut wt = p.clone();
    wt.write_cache = false;
    let mut h = build(&wt, 1);
    let recs = closed(&mut h, 1, writes.clone());
    let mean_wt = mean_latency(&recs);
    let expect_wt = random_read_expectation(&wt, &h, 8) - p.overhead_read_miss_ns
        + p.overhead_write_ns
        + p.write_settle_ns;
    println!(
        "sata-2009 WCE off: 4 KiB write mean {} us vs {} us ({:+.1}%)",
        mean_wt / 1000,
        expect_wt / 1000,
        pct(mean_wt, expect_wt)
    );
    assert!(mean_wt.abs_diff(expect_wt) * 100 <= 15 * expect_wt);

    // FUA writes go to the medium even with the write cache on.
    let mut h = build(&p, 1);
    let fua: Vec<Io> = writes.iter().map(|io| Io { fua: true, ..*io }).collect();
    let mean_fua = mean_latency(&closed(&mut h, 1, fua));
    println!("sata-2009 FUA: 4 KiB write mean {} us", mean_fua / 1000);
    assert!(mean_fua * 10 >= mean_wt * 9);
}

#[test]
fn full_write_cache_throttles_writes_to_the_destage_rate() {
    let p = preset("sata-2009");
    let n = 2000;
    let writes: Vec<Io> = random_reads(p.capacity_sectors, n, 8, 19)
        .into_iter()
        .map(|io| Io { write: true, ..io })
        .collect();
    let mut h = build(&p, 1);
    let recs = closed(&mut h, 1, writes);
    let cached = recs
        .iter()
        .take(p.write_cache_extents as usize)
        .map(|r| r.done - r.submit);
    let first = cached.max().unwrap();
    let tail = mean_latency(&recs[n / 2..]);
    println!(
        "sata-2009 random 4 KiB writes QD1: first {} fast (max {} us), steady-state mean {} us",
        p.write_cache_extents,
        first / 1000,
        tail / 1000
    );
    assert!(first < 1_000_000);
    // Once full, each write waits for a destage: elevator order over the dirty
    // extents makes that shorter than a random access, but not free.
    assert!(tail > 2_000_000 && tail < 14_000_000, "{tail}");
}

#[test]
fn idle_time_destages_the_write_cache() {
    let p = preset("sata-2009");
    let mut r = Rng::stream(Seed(4), "burst");
    let mut ios = Vec::new();
    // Bursts of 100 writes (more than the cache's 128 extents over two bursts),
    // then 2 s idle each time: the cache empties in the gaps, so no write waits.
    for burst in 0..5u64 {
        for _ in 0..100 {
            ios.push((
                burst * 2_000_000_000,
                Io {
                    sector: r.below(p.capacity_sectors / 8) * 8,
                    sectors: 8,
                    write: true,
                    fua: false,
                },
            ));
        }
    }
    let mut h = build(&p, 1);
    let recs = drive(&mut h, 1, &ios);
    let max = recs.iter().map(|r| r.done - r.submit).max().unwrap();
    println!("bursts of cached writes: max latency {} us", max / 1000);
    assert!(max < 1_000_000, "{max}");
}

/// Random streams of commands: every command is reported once, never before
/// it was submitted or polled (checked in `drive`), and the run is a function
/// of its inputs.
#[test]
fn random_streams_keep_the_device_contract() {
    let mut variants: Vec<(String, HddParams)> =
        ALL.iter().map(|n| (n.to_string(), preset(n))).collect();
    let mut tiny = preset("sata-2009");
    tiny.capacity_sectors = 4_000_000;
    tiny.write_cache_sectors = 256;
    tiny.write_cache_extents = 4;
    tiny.cache_segments = 2;
    tiny.cache_segment_sectors = 64;
    tiny.read_ahead_sectors = 64;
    tiny.queue_depth = 8;
    tiny.age_limit_ns = 20_000_000;
    variants.push(("tiny".into(), tiny.clone()));
    let mut noskew = tiny.clone();
    noskew.track_skew_ns = 0;
    noskew.cylinder_skew_ns = 0;
    noskew.read_ahead_sectors = 0;
    noskew.cache_segments = 0;
    noskew.zones = 1;
    noskew.inner_sectors_per_track = noskew.outer_sectors_per_track;
    variants.push(("noskew".into(), noskew));

    for (vi, (name, p)) in variants.iter().enumerate() {
        for case in 0..6u64 {
            let mut r = Rng::stream(Seed(case * 100 + vi as u64), "prop");
            let cap = p.capacity_sectors;
            let n = 400 + r.below(400) as usize;
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
                let sectors = match r.below(4) {
                    0 => 0,
                    1 => 8,
                    2 => 1 + r.below(256) as u32,
                    _ => 1 + r.below(p.limits.max_hw_sectors.min(4096) as u64) as u32,
                };
                let sectors = if r.below(20) == 0 {
                    sectors
                } else {
                    sectors.max(1)
                };
                let sector = if r.ratio(1, 2) {
                    cursor
                } else {
                    r.below(cap - sectors as u64)
                };
                let sector = sector.min(cap - sectors as u64);
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
            let mut b = build(p, case);
            let rb = drive(&mut b, qd, &ios);
            for (x, y) in ra.iter().zip(&rb) {
                assert_eq!(
                    (x.submit, x.done),
                    (y.submit, y.done),
                    "{name}: not deterministic"
                );
            }
            assert_eq!(ra.len(), n);
        }
    }
}

/// A flush completes only once the write cache is on the medium: after a burst
/// of cached random writes it takes about as long as writing them there (one
/// positioning per extent), while on a clean cache it costs only the command
/// overhead. Writes queued after it wait for it.
#[test]
fn flush_destages_the_write_cache() {
    let p = preset("sata-2009");
    let n = 64;
    let writes: Vec<Io> = random_reads(p.capacity_sectors, n, 8, 23)
        .into_iter()
        .map(|io| Io { write: true, ..io })
        .collect();
    let mut ios: Vec<(u64, Io)> = writes.iter().map(|io| (0, *io)).collect();
    ios.push((0, common::flush_io()));
    let mut h = build(&p, 1);
    let recs = drive(&mut h, 1, &ios);
    let acked = recs[n - 1].done;
    let flushed = recs[n].done - acked;
    // Each destaged extent is a random positioning: at least the average seek
    // less the track-to-track time, on average, per extent.
    let floor = n as u64 * (p.seek_average_ns / 2);
    println!(
        "sata-2009: {n} cached 4 KiB writes acked by {} us, flush took {} us",
        acked / 1000,
        flushed / 1000
    );
    let ack_each = p.overhead_write_ns + 4096 * 1_000_000_000 / p.interface_bytes_per_s;
    assert!(
        acked <= n as u64 * ack_each * 11 / 10,
        "cached writes are acknowledged fast"
    );
    assert!(flushed >= floor, "flush {flushed} ns < {floor} ns");

    // A clean cache: the flush is the write overhead.
    let mut h = build(&p, 1);
    let recs = drive(&mut h, 1, &[(0, common::flush_io())]);
    assert_eq!(recs[0].done, p.overhead_write_ns);
    assert!(h.write_cache_dirty_sectors() == 0);
}

/// A write over dirty cached data (a write hit): with `write_hit_destage`
/// (ide-2001, Ruemmler-Wilkes 1994) the old copy goes to the medium first, so
/// the rewrite of a block far from a stream of cached writes costs a trip
/// there; without it, the new copy replaces the old one in the cache at
/// interface speed.
#[test]
fn a_write_hit_waits_for_the_old_copy_with_write_hit_destage() {
    let w = |sector: u64, sectors: u32| Io {
        sector,
        sectors,
        write: true,
        fua: false,
    };
    // A stream of 128 KiB writes far up the disk, each followed by a rewrite
    // of one 4 KiB block near its start (an inode written at every write).
    let mut ios = Vec::new();
    for i in 0..16u64 {
        ios.push(w(4_000_000 + i * 256, 256));
        ios.push(w(100, 8));
    }
    let rewrite_ns = |hit: bool| -> u64 {
        let mut p = preset("ide-2001");
        p.write_hit_destage = hit;
        let mut h = build(&p, 1);
        let recs = closed(&mut h, 1, ios.iter().copied());
        // The rewrites after the first (the first finds the block clean).
        recs.iter()
            .skip(3)
            .step_by(2)
            .map(|r| r.done - r.submit)
            .sum::<u64>()
            / 15
    };
    let (with, without) = (rewrite_ns(true), rewrite_ns(false));
    // Each costs at least a seek across a fifth of the disk with it, and only
    // a command and 4 KiB over the link without.
    assert!(with > 3_000_000, "with write_hit_destage: {with} ns");
    assert!(without < 1_500_000, "without: {without} ns");
}

/// A cached write's data is on the medium only after it has crossed the link:
/// a block written just behind the one a flush has destaged (a journal commit
/// block after its log blocks) arrives when the head has passed its sector, so
/// the next flush waits most of a revolution for it to come round. (The model
/// once destaged it from the instant the mechanism freed, before its data had
/// arrived, and the flush cost only the write overhead.)
#[test]
fn data_is_destaged_only_after_it_has_arrived() {
    let p = preset("sata-2010");
    let w = |sector| Io {
        sector,
        sectors: 8,
        write: true,
        fua: false,
    };
    let x = p.capacity_sectors / 2;
    // Queue depth 1: each command arrives when the one before completes.
    let ios = [
        (0, w(x)),
        (0, common::flush_io()),
        (0, w(x + 8)),
        (0, common::flush_io()),
    ];
    let mut h = build(&p, 1);
    let recs = drive(&mut h, 1, &ios);
    let rev = 60_000_000_000 / p.rpm as u64;
    let second = recs[3].done - recs[2].submit;
    println!(
        "sata-2010: flush after the next block took {} us (revolution {} us)",
        second / 1000,
        rev / 1000
    );
    assert!(second >= rev / 2, "{second} ns: destaged before it arrived");
    assert!(second <= rev + 2 * p.overhead_write_ns, "{second} ns");
}

/// When a flush that follows a delayed write completes, on sata-2010 at queue
/// depth 1: the drive's head sits just past `journal` (a flushed block there),
/// a 64 KiB write to `data` arrives at 100 ms, a 7-block write right after
/// `journal` arrives `delay` later, and a flush follows it.
fn flush_after_delayed_log(p: &HddParams, seed: u64, data: u64, journal: u64, delay: u64) -> u64 {
    let w = |sector, sectors| Io {
        sector,
        sectors,
        write: true,
        fua: false,
    };
    let t0 = 100_000_000;
    let ios = [
        (0, w(journal, 8)),
        (0, common::flush_io()),
        (t0, w(data, 128)),
        (t0 + 400_000 + delay, w(journal + 8, 56)),
        (0, common::flush_io()),
    ];
    let mut h = build(p, seed);
    let recs = drive(&mut h, 1, &ios);
    assert!(
        recs[1].done < t0,
        "the first flush ends before the data write"
    );
    recs[4].done
}

/// Seed 003 on SATA (sata-2010, ext4 with the journal in the middle of the
/// disk, iozone's and fs_mark's data near its start): CFQ holds the journal
/// thread's log write for its idle window (`cfq_arm_slice_timer`, slice_idle
/// 8 jiffies, one more to the tick) after the fsync-ing process's data write,
/// but the drive destages that data in the background meanwhile, and the head
/// needs longer than the idle (a seek of about half the stroke plus the data's
/// rotation) before it can come back for the log. The commit's pre-flush then
/// ends at the same instant whatever the delay, for every rotational phase: the
/// idle is hidden. With the data a short seek (10 MiB) from the journal it is
/// not: the delayed log misses its sector and the flush loses a revolution, for
/// most phases.
#[test]
fn idle_window_before_the_log_write_is_hidden_by_the_data_destage() {
    let p = preset("sata-2010");
    let rev = 60_000_000_000 / p.rpm as u64;
    let (journal, far, near) = (973_406_680, 404_480, 973_406_680 - 20_480);
    let mut exposed = 0;
    for seed in 1..=8 {
        let base = flush_after_delayed_log(&p, seed, far, journal, 0);
        for ms in 1..=9 {
            let f = flush_after_delayed_log(&p, seed, far, journal, ms * 1_000_000);
            assert_eq!(
                f, base,
                "seed {seed}: a log delayed {ms} ms moved the flush"
            );
        }
        let near0 = flush_after_delayed_log(&p, seed, near, journal, 0);
        let near9 = flush_after_delayed_log(&p, seed, near, journal, 9_000_000);
        assert!(
            near9 == near0 || near9 + 1_000 >= near0 + rev,
            "{near0} -> {near9}"
        );
        exposed += (near9 > near0) as u32;
    }
    println!(
        "data 10 MiB from the journal: a 9 ms idle cost a revolution for {exposed} of 8 phases"
    );
    assert!(exposed >= 4, "{exposed} of 8");
}
