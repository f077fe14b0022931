use iostack_des::{Instant, Rng, Seed};
use iostack_device::hdd::{presets, Hdd};
use iostack_device::{Device, DeviceCmd};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

fn run(name: &str, qd: u32, n: u64, seq: bool, write: bool) {
    let p = presets().into_iter().find(|x| x.0 == name).unwrap().1;
    let mut h = Hdd::new(p.clone(), Rng::stream(Seed(1), "x"));
    let mut r = Rng::stream(Seed(2), "y");
    let mut ev = BinaryHeap::new();
    let mut out = Vec::new();
    let mut next = 0u64;
    let t0 = std::time::Instant::now();
    let mut now = 0u64;
    let mut issue = |h: &mut Hdd, now: u64, next: &mut u64, ev: &mut BinaryHeap<Reverse<(u64,u64)>>, out: &mut Vec<(Instant,u64)>| {
        let sector = if seq { *next * 8 % (p.capacity_sectors - 8) } else { r.below(p.capacity_sectors / 8) * 8 };
        h.submit(Instant(now), DeviceCmd { id: *next, sector, sectors: 8, write, fua: false });
        *next += 1;
        out.clear();
        h.poll(Instant(now), out);
        for &(a, id) in out.iter() { ev.push(Reverse((a.0, id))); }
    };
    for _ in 0..qd { issue(&mut h, 0, &mut next, &mut ev, &mut out); }
    let mut done = 0;
    while let Some(Reverse((t, id))) = ev.pop() {
        now = t;
        h.complete(Instant(t), id);
        out.clear();
        h.poll(Instant(t), &mut out);
        for &(a, id) in out.iter() { ev.push(Reverse((a.0, id))); }
        done += 1;
        if next < n { issue(&mut h, now, &mut next, &mut ev, &mut out); }
    }
    let el = t0.elapsed();
    println!("{name} qd{qd} seq={seq} write={write}: {done} ios in {:?} = {:.2} M io/s wall; sim {} ms, {} IOPS", el, done as f64 / el.as_secs_f64() / 1e6, now/1_000_000, done as u128 * 1_000_000_000 / now as u128);
}

#[test]
fn perf() {
    run("sata-2009", 1, 1_000_000, false, false);
    run("sata-2009", 31, 1_000_000, false, false);
    run("sas-15k", 64, 1_000_000, false, false);
    run("sata-2009", 1, 1_000_000, true, false);
    run("sata-2009", 31, 1_000_000, true, false);
    run("sata-2009", 1, 1_000_000, false, true);
    run("sata-2009", 31, 1_000_000, true, true);
}
