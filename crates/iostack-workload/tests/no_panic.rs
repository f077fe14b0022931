//! The parsers never panic, whatever the input, and every error they return is a
//! message that names its place: a seeded, deterministic random search with a
//! fixed number of cases (part of issue 11's fuzz harness; the simulator's side,
//! machine and experiment files, `--set` and `--layout`, is
//! `iostack-sim/tests/fuzz_inputs.rs`). Each case runs under `catch_unwind`, so a
//! panic is reported with the input that caused it.

mod common;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use iostack_workload::{
    options, parse_bonnie_args, parse_dd_args, parse_fs_mark_args, parse_iozone_args,
    parse_job_bytes, parse_size, parse_time_ns, ParseEnv, TimeUnit,
};

/// Run `f` on one input; a panic fails the test with the input shown.
fn no_panic<T>(what: &str, input: &dyn std::fmt::Debug, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("?");
            panic!("{what} panicked ({msg}) on {input:?}")
        }
    }
}

/// Parse a job file; an error must be `FILE:LINE: message` (or `FILE: message`
/// for one about the whole file) with a non-empty message.
fn parse_fio(text: &[u8], file: &str, env: &ParseEnv) {
    let r = no_panic("parse_job_bytes", &String::from_utf8_lossy(text), || {
        parse_job_bytes(text, file, env)
    });
    if let Err(e) = r {
        let shown = e.to_string();
        let at = e.file.display().to_string();
        let prefix = if e.line > 0 {
            format!("{at}:{}: ", e.line)
        } else {
            format!("{at}: ")
        };
        assert!(
            shown.starts_with(&prefix) && shown.len() > prefix.len() && !e.message.is_empty(),
            "error without its place or message: {shown:?} for {:?}",
            String::from_utf8_lossy(text)
        );
        if let Some(o) = &e.option {
            assert!(!o.is_empty(), "empty option name in {shown:?}");
        }
    }
}

/// Parse dd operands; an error must be `dd: message`.
fn parse_dd(args: &[String]) {
    let r = no_panic("parse_dd_args", &args, || parse_dd_args(args));
    if let Err(e) = r {
        let shown = e.to_string();
        assert!(
            shown.starts_with("dd: ") && shown.len() > 4,
            "{shown:?} for {args:?}"
        );
    }
}

/// xorshift64*: small, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

const PIECES: &[&str] = &[
    "[",
    "]",
    "[global]",
    "[job]",
    "=",
    ";",
    "#",
    "\n",
    "\r\n",
    ",",
    ":",
    "-",
    "/",
    "%",
    " ",
    "\t",
    "${",
    "}",
    "${X}",
    "$pagesize",
    "$mb_memory",
    "$ncpus",
    "*",
    "+",
    "(",
    ")",
    "0x",
    "include ",
    "include",
    "4k",
    "1m",
    "kib",
    "z",
    "999999999999999999999",
    "-1",
    "0",
    "1",
    ".",
    "\0",
    "\u{7f}",
    "é",
    "\u{fffd}",
    "randread:4",
    "zipf:1.2",
    "zoned:50/10:50/",
    "10%",
    "bs",
    "rw",
    "size",
    "ioengine",
    "libaio",
    "io_uring",
    "userspace_reap",
    "bssplit",
    "4k/50:8k/",
    "time_based",
    "runtime",
    "1h",
    "ms",
    "name",
    "filename",
    "a\\:b",
    "description",
];

fn env() -> ParseEnv {
    let mut files = BTreeMap::new();
    files.insert(PathBuf::from("inc.fio"), b"bs=8k\nsize=${X}\n".to_vec());
    files.insert(PathBuf::from("self.inc"), b"include self.inc\n".to_vec());
    files.insert(PathBuf::from("sec.inc"), b"[s]\n".to_vec());
    ParseEnv {
        files: Some(files),
        ..ParseEnv::default().with_var("X", "4k")
    }
}

fn random_text(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let n = rng.below(60);
    for _ in 0..n {
        match rng.below(10) {
            0 => out.push(rng.next() as u8),
            1..=3 => {
                let o = rng.pick(options::CORE_OPTIONS);
                out.extend_from_slice(o.name.as_bytes());
                out.push(b'=');
            }
            4 => {
                let o = rng.pick(options::CORE_OPTIONS);
                if let Some((v, _)) = o.values.first() {
                    out.extend_from_slice(v.as_bytes());
                }
            }
            _ => out.extend_from_slice(rng.pick(PIECES).as_bytes()),
        }
    }
    out
}

#[test]
fn random_job_files_never_panic() {
    let env = env();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..20_000 {
        let text = random_text(&mut rng);
        parse_fio(&text, "fuzz.fio", &env);
    }
}

#[test]
fn random_bytes_never_panic() {
    let env = env();
    let mut rng = Rng(42);
    for _ in 0..20_000 {
        let n = rng.below(300);
        let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        parse_fio(&bytes, "bytes.fio", &env);
        let mut with_header = b"[j]\n".to_vec();
        with_header.extend_from_slice(&bytes);
        parse_fio(&with_header, "bytes.fio", &env);
    }
}

/// Every option with every kind of value.
#[test]
fn every_option_with_odd_values_never_panics() {
    let env = env();
    let values = [
        "",
        "0",
        "1",
        "-1",
        "4k",
        "4q",
        "1-2",
        "1:2",
        "1,2,3,4",
        ",",
        ",,",
        "-",
        ":",
        "10%",
        "200%",
        "5z",
        "z",
        "0x",
        "0xffffffffffffffffff",
        "18446744073709551616",
        "1.5",
        "nan",
        "inf",
        "-0",
        "a:b:c",
        "zoned:",
        "zoned:x/y",
        "zipf:",
        "zipf:0:2",
        "1ms",
        "1xyz",
        "   ",
        "\u{fffd}",
        "${X}",
        "$pagesize*$ncpus",
        "9223372036854775807k",
        "4k/",
        "/",
        "4k/101:8k/",
        "read,write",
        "wait_before,write:x",
        "iops:",
        "bw:1m",
        "E2BIG:EIO,5",
    ];
    for o in options::all_options().chain(options::ENGINE_OPTIONS.iter()) {
        for v in values {
            let t = format!(
                "[global]\nioengine=io_uring\n[j]\n{}={v}\n{}\n",
                o.name, o.name
            );
            parse_fio(t.as_bytes(), "opt.fio", &env);
        }
    }
}

#[test]
fn mutated_valid_files_never_panic() {
    let env = common::test_env();
    let mut rng = Rng(7);
    let mut corpus = Vec::new();
    for sub in ["valid", "invalid", "stricter"] {
        for f in common::fio_files(sub) {
            corpus.push(std::fs::read(common::data_dir().join(&f)).unwrap());
        }
    }
    for _ in 0..5_000 {
        let mut text = rng.pick(&corpus).clone();
        for _ in 0..1 + rng.below(4) {
            if text.is_empty() {
                break;
            }
            let at = rng.below(text.len());
            match rng.below(3) {
                0 => text[at] = rng.next() as u8,
                1 => {
                    text.remove(at);
                }
                _ => {
                    let p = rng.pick(PIECES).as_bytes().to_vec();
                    text.splice(at..at, p);
                }
            }
        }
        parse_fio(&text, "valid/mutant.fio", &env);
    }
}

#[test]
fn numbers_never_panic() {
    let mut rng = Rng(99);
    let alphabet = b"0123456789xXkKmMgGtTpPiIbB%.-+ zsuhdec";
    for _ in 0..50_000 {
        let n = rng.below(24);
        let s: String = (0..n).map(|_| *rng.pick(alphabet) as char).collect();
        no_panic("numbers", &s, || {
            for r in [
                parse_size(&s, 1024),
                parse_size(&s, 1000),
                parse_time_ns(&s, TimeUnit::Seconds),
                parse_time_ns(&s, TimeUnit::Micros),
            ] {
                assert!(r.err().is_none_or(|e| !e.to_string().is_empty()), "{s:?}");
            }
        });
    }
}

#[test]
fn dd_never_panics() {
    let mut rng = Rng(1234);
    let names = [
        "if", "of", "bs", "ibs", "obs", "cbs", "count", "skip", "seek", "iseek", "oseek", "iflag",
        "oflag", "conv", "status", "x", "",
    ];
    let vals = [
        "",
        "1",
        "0",
        "2x512",
        "xx",
        "1B",
        "1Bx2B",
        "B",
        "K",
        "1KiB",
        "99999999999999999999",
        "1E",
        "1Y",
        "direct,sync",
        ",",
        "fsync,notrunc",
        "none",
        "-1",
        "1x",
        "x",
        "0x0",
    ];
    for _ in 0..20_000 {
        let n = rng.below(6);
        let args: Vec<String> = (0..n)
            .map(|_| match rng.below(4) {
                0 => {
                    let len = rng.below(12);
                    (0..len)
                        .map(|_| (rng.next() % 96 + 32) as u8 as char)
                        .collect()
                }
                _ => format!("{}={}", rng.pick(&names), rng.pick(&vals)),
            })
            .collect();
        parse_dd(&args);
    }
}

/// Option letters and values for the iozone and fs_mark searches: every option
/// of both tools, unknown ones, and values at and past every limit.
const TOOL_ARGS: &[&str] = &[
    "-s",
    "-r",
    "-f",
    "-F",
    "-e",
    "-i",
    "-I",
    "-o",
    "-c",
    "-w",
    "-a",
    "-n",
    "-g",
    "-y",
    "-q",
    "-t",
    "-R",
    "-O",
    "-z",
    "-B",
    "-+",
    "-x",
    "-d",
    "-D",
    "-N",
    "-L",
    "-k",
    "-S",
    "-p",
    "-l",
    "-v",
    "-h",
    "-",
    "--",
    "-o_direct",
    "-fast",
    "-m",
    "2047",
    "2048",
    "400",
    "-ei0",
    "-s64",
    "-Rz",
    "0",
    "1",
    "2",
    "3",
    "6",
    "7",
    "12",
    "13",
    "64",
    "64k",
    "64m",
    "4g",
    "1g",
    "16m",
    "17m",
    "127",
    "128",
    "4096",
    "65536",
    "1048577",
    "1000001",
    "2147483648",
    "99999999999999999999",
    "9999999999999999g",
    "-1",
    "x",
    "",
    "k",
    "m",
    "/mnt/test/a",
    "/mnt/test/b",
    "/tmp/x",
    "é",
];

fn tool_args(rng: &mut Rng) -> Vec<String> {
    (0..rng.below(9))
        .map(|_| rng.pick(TOOL_ARGS).to_string())
        .collect()
}

#[test]
fn iozone_fs_mark_and_bonnie_never_panic() {
    let mut rng = Rng(0x10_2013);
    for _ in 0..20_000 {
        let args = tool_args(&mut rng);
        let r = no_panic("parse_iozone_args", &args, || parse_iozone_args(&args));
        if let Err(e) = r {
            let shown = e.to_string();
            assert!(
                shown.starts_with("iozone: ") && shown.len() > 8,
                "{shown:?}"
            );
        }
        let r = no_panic("parse_bonnie_args", &args, || parse_bonnie_args(&args));
        match r {
            Err(e) => {
                let shown = e.to_string();
                assert!(
                    shown.starts_with("Bonnie: ") && shown.len() > 8,
                    "{shown:?}"
                );
                assert!(
                    args.contains(&e.option),
                    "the error names an argument: {shown:?} {args:?}"
                );
            }
            Ok(s) => assert!(s.size_mb >= 1 && s.bytes() <= i32::MAX as u64),
        }
        let r = no_panic("parse_fs_mark_args", &args, || parse_fs_mark_args(&args));
        match r {
            Err(e) => {
                let shown = e.to_string();
                assert!(
                    shown.starts_with("fs_mark: ") && shown.len() > 9,
                    "{shown:?}"
                );
            }
            Ok(s) => {
                assert!(!s.dirs.is_empty() && s.threads >= s.dirs.len() as u64);
                assert!(s.threads % s.dirs.len() as u64 == 0 || s.threads == s.dirs.len() as u64);
            }
        }
    }
}

/// Replay logs (`read_iolog`, `iostack replay`): blktrace files in either byte
/// order and fio's text iologs v2 and v3, mutated byte by byte (flips, cuts,
/// truncations, spliced integers and duplicated records) and read with odd
/// replay options. Nothing panics; an error names the log, and its line for a
/// text log.
#[test]
fn mutated_replay_logs_never_panic() {
    use iostack_workload::iolog::parse_blktrace;
    use iostack_workload::{parse_iolog, ReplayOptions};
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../iostack-cli/tests/data/replay");
    let mut corpus: Vec<Vec<u8>> = ["wl.blktrace.0", "wlbe.blktrace.0", "sim.blktrace.0"]
        .iter()
        .map(|f| std::fs::read(data.join(f)).expect("replay fixture"))
        .collect();
    corpus.push(
        b"fio version 3 iolog\n17 f add\n80 f open\n88 f write 0 4096\n90 f read 8192 512\n\
          100 f sync 0 0\n200 f trim 0 4096\n300 f close\n"
            .to_vec(),
    );
    corpus.push(
        b"fio version 2 iolog\nf add\nf open\nf write 0 4096\nf wait 500 0\nf close\n".to_vec(),
    );
    let mut rng = Rng(0x5EED_1010);
    let (mut ok, mut refused) = (0, 0);
    for case in 0..4_000 {
        let mut bytes = rng.pick(&corpus).clone();
        for _ in 0..1 + rng.below(6) {
            if bytes.is_empty() {
                break;
            }
            let at = rng.below(bytes.len());
            match rng.below(5) {
                0 => bytes[at] = rng.next() as u8,
                1 => {
                    bytes.remove(at);
                }
                2 => bytes.truncate(at),
                3 => {
                    let any = rng.next();
                    let v = *rng.pick(&[0u64, 1, u32::MAX as u64, u64::MAX, 1 << 63, any]);
                    let w = v.to_le_bytes();
                    bytes.splice(at..at, w[..1 + rng.below(8)].iter().copied());
                }
                _ => {
                    let end = (at + 48 + rng.below(64)).min(bytes.len());
                    let dup = bytes[at..end].to_vec();
                    bytes.splice(at..at, dup);
                }
            }
        }
        let o = ReplayOptions {
            no_stall: rng.below(2) == 0,
            time_scale: *rng.pick(&[0, 1, 100, 250, u64::MAX]),
            scale: *rng.pick(&[0, 1, 3, 4096, u64::MAX]),
            align: *rng.pick(&[0, 512, 4096, 1 << 40]),
            redirect: None,
            skip: [
                rng.below(4) == 0,
                rng.below(4) == 0,
                false,
                rng.below(4) == 0,
            ],
        };
        let name = format!("case{case}.log");
        let r = no_panic("parse_iolog", &(&bytes, &o), || {
            parse_iolog(&name, &bytes, &o)
        });
        match r {
            Ok(_) => ok += 1,
            Err(e) => {
                refused += 1;
                let text = e.to_string();
                assert!(text.starts_with(&name) && !e.message.is_empty(), "{text}");
            }
        }
        // The same bytes as one CPU's file of a per-CPU blktrace set.
        let parts = [&bytes[..], &corpus[2][..]];
        if let Err(e) = no_panic("parse_blktrace", &bytes, || {
            parse_blktrace(&name, &parts, &o)
        }) {
            assert!(!e.message.is_empty(), "{e}");
        }
    }
    // The search reaches both sides: logs that still read, and refusals.
    println!("replay logs: {ok} read, {refused} refused");
    assert!(ok > 400 && refused > 400, "{ok} read, {refused} refused");
}
