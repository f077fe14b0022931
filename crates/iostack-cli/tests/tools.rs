//! `iostack iozone` and `iostack fs_mark` against transcripts of the real tools
//! (iozone 3.414, fs_mark 3.3; `tests/data/real/`, copied from the reference
//! samples): the same lines in the same order, the same column layout and units,
//! with only the measured numbers, the dates and the program path different.

use std::process::Command;

fn iostack(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_iostack"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The output of a transcript's command (after its `$ ...` line, up to its
/// `(exit status` line).
fn transcript(file: &str, command: &str) -> Vec<String> {
    let path = format!("{}/tests/data/real/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    lines
        .by_ref()
        .find(|l| l.starts_with(&format!("$ {command}")))
        .unwrap_or_else(|| panic!("no '{command}' in {file}"));
    lines
        .take_while(|l| !l.starts_with("(exit status"))
        .map(str::to_string)
        .collect()
}

/// Our output without iostack's own `# iostack` lines.
fn ours(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| !l.starts_with("# iostack"))
        .map(str::to_string)
        .collect()
}

/// Columns where a right-aligned field ends.
fn field_ends(l: &str) -> Vec<usize> {
    let b = l.as_bytes();
    (0..b.len())
        .filter(|&i| b[i] != b' ' && (i + 1 == b.len() || b[i + 1] == b' '))
        .collect()
}

fn is_row(l: &str) -> bool {
    l.starts_with(' ') && l.trim_start().starts_with(|c: char| c.is_ascii_digit())
}

/// A line with its variable parts masked: dates, the program path, and the
/// numbers of table rows (their layout kept: field ends, first fields).
fn mask(l: &str, keep_fields: usize) -> String {
    if let Some(i) = l.find("Run began: ").or_else(|| l.find("starting at ")) {
        return l[..i].to_string();
    }
    if is_row(l) {
        let kept: Vec<&str> = l.split_whitespace().take(keep_fields).collect();
        return format!("ROW {:?} {:?} len {}", kept, field_ends(l), l.len());
    }
    if l.starts_with('"') && l.contains("  ") && !l.ends_with('"') {
        let f: Vec<&str> = l.split_whitespace().collect();
        return format!("XLS {} {} fields", f[0], f.len());
    }
    l.replace("./iozone", "iozone")
}

fn assert_same_layout(ours: &[String], real: &[String], keep_fields: usize) {
    let real: Vec<&String> = real
        .iter()
        .filter(|l| !l.starts_with("Timer resolution is poor") && !l.starts_with("reported inacc"))
        .collect();
    assert_eq!(
        ours.len(),
        real.len(),
        "ours:\n{}\nreal:\n{:?}",
        ours.join("\n"),
        real
    );
    for (a, b) in ours.iter().zip(real) {
        assert_eq!(mask(a, keep_fields), mask(b, keep_fields), "\n{a}\n{b}");
    }
}

/// From "Run began" on (the transcript shows the banner only for its first run).
fn from_run_began(v: &[String]) -> Vec<String> {
    let i = v.iter().position(|l| l.contains("Run began")).unwrap();
    v[i..].to_vec()
}

#[test]
fn iozone_matches_the_real_transcripts() {
    let cmd = "iozone -s 64m -r 4k -i 0 -i 1 -i 2 -e -f /mnt/test/ioz.tmp";
    let args: Vec<&str> = cmd.split(' ').collect();
    let mut a = args.clone();
    a.extend(["--machine", "null"]);
    let (ok, out, err) = iostack(&a);
    assert!(ok, "{err}");
    let real = transcript("iozone_runs.txt", cmd);
    // The banner too, byte for byte.
    assert_same_layout(&ours(&out), &real, 2);
    for (cmd, keep) in [
        (
            "iozone -a -n 64k -g 256k -y 4k -q 64k -i 0 -i 1 -R -f /mnt/test/ioz.tmp",
            2,
        ),
        ("iozone -s 8m -r 4k -i 0 -O -f /mnt/test/ioz.tmp", 2),
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        let mut a = args.clone();
        a.extend(["--machine", "null"]);
        let (ok, out, err) = iostack(&a);
        assert!(ok, "{cmd}: {err}");
        let real = transcript("iozone_runs.txt", cmd);
        assert_same_layout(&from_run_began(&ours(&out)), &from_run_began(&real), keep);
    }
}

#[test]
fn iozone_direct_io_and_refusals() {
    let dir = std::env::temp_dir().join(format!("iostack-iozone-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let m = dir.join("ext4.machine");
    // A disk, not the null device: iozone's 8-digit rates run into the next
    // column (its own hazard), which a 1 us device would show.
    std::fs::write(&m, "base = sata-2010\nfs = ext4\n").unwrap();
    let cmd = "iozone -s 64m -r 64k -i 0 -i 1 -I -f /mnt/test/ioz.tmp";
    let mut a: Vec<&str> = cmd.split(' ').collect();
    a.extend(["--machine", m.to_str().unwrap(), "--kernel", "2.6.36"]);
    let (ok, out, err) = iostack(&a);
    assert!(ok, "{err}");
    let real = transcript("iozone_runs.txt", cmd);
    assert_same_layout(&from_run_began(&ours(&out)), &from_run_began(&real), 2);
    for (args, text) in [
        (
            "-t 2 -s 16m -r 64k -i 0 -i 1 -F /mnt/test/t1 /mnt/test/t2",
            "throughput mode",
        ),
        ("-s 64 -f /mnt/test/x", "give -i"),
        (
            "-s 64 -i 1 -f /mnt/test/x",
            "-i 0 (write/rewrite) must be run first",
        ),
        (
            "-s 64 -i 0 -i 3 -f /mnt/test/x",
            "-i 3 (Read-backwards) is not simulated",
        ),
        ("-s 64 -i 0 -I -o -f /mnt/test/x", "O_SYNC on O_DIRECT"),
        ("-s 64 -i 0 -B -f /mnt/test/x", "-B is not simulated"),
        ("-s 64 -i 0 -f /tmp/x", "not on the simulated file system"),
    ] {
        let v: Vec<&str> = args.split(' ').collect();
        let (ok, _, err) = iostack(&[&["iozone"][..], &v].concat());
        assert!(
            !ok && err.contains("iozone: ") && err.contains(text),
            "{args}: {err}"
        );
    }
}

#[test]
fn fs_mark_matches_the_real_transcripts() {
    for s in [0, 1, 3, 5] {
        let cmd =
            format!("fs_mark -d /mnt/test/fsm -s 4096 -n 200 -L 2 -S {s} -t 1 -D 4 -N 50 -w 4096");
        let mut a: Vec<&str> = cmd.split(' ').collect();
        a.extend(["--machine", "null"]);
        let (ok, out, err) = iostack(&a);
        assert!(ok, "{cmd}: {err}");
        let real = transcript("fs_mark_runs.txt", &cmd);
        // Count and Size exactly; Files/sec and App Overhead in their columns.
        assert_same_layout(&ours(&out), &real, 0);
        let rows: Vec<String> = ours(&out).into_iter().filter(|l| is_row(l)).collect();
        let real_rows: Vec<&String> = real.iter().filter(|l| is_row(l)).collect();
        for (a, b) in rows.iter().zip(real_rows) {
            let (fa, fb): (Vec<&str>, Vec<&str>) = (
                a.split_whitespace().collect(),
                b.split_whitespace().collect(),
            );
            assert_eq!(fa[1..3], fb[1..3], "count and size");
            assert!(fa[3].contains('.') && fa[3].split('.').nth(1).unwrap().len() == 1);
        }
    }
    let cmd = "fs_mark -d /mnt/test/fsm/a -d /mnt/test/fsm/b -s 0 -n 100 -L 1 -S 1 -k";
    let mut a: Vec<&str> = cmd.split(' ').collect();
    a.extend(["--machine", "null"]);
    let (ok, out, err) = iostack(&a);
    assert!(ok, "{err}");
    let real = transcript("fs_mark_runs.txt", cmd);
    assert_same_layout(&ours(&out), &real, 0);
    let row = ours(&out).into_iter().find(|l| is_row(l)).unwrap();
    assert_eq!(
        row.split_whitespace().nth(1),
        Some("200"),
        "two threads of 100"
    );
}

#[test]
fn fs_mark_refusals_name_the_option() {
    for (args, opt, text) in [
        ("-d /mnt/test/f -S 2", "-S", "sync(2) is not simulated"),
        ("-d /mnt/test/f -S 4", "-S", "sync(2)"),
        ("-d /mnt/test/f -S 6", "-S", "sync(2)"),
        (
            "-d /mnt/test/f -s 8192 -w 1000",
            "-w",
            "whole 4096-byte pages",
        ),
        ("-d /mnt/test/f -v", "-v", "metadata I/O"),
        ("-d /mnt/test/f -F", "-F", "full"),
        (
            "-d /mnt/test/f -n 1000000 -L 5",
            "-n",
            "files iostack simulates",
        ),
        ("-d /tmp/f", "-d", "not on the simulated file system"),
        ("-d /mnt/test/f -S 9", "-S", "sync method must be 0..6"),
    ] {
        let v: Vec<&str> = args.split(' ').collect();
        let (ok, _, err) = iostack(&[&["fs_mark"][..], &v].concat());
        assert!(!ok, "{args}");
        assert!(
            err.contains("fs_mark: ") && err.contains(text) && err.contains(opt),
            "{args}: {err}"
        );
    }
}

#[test]
fn fs_mark_writes_its_log() {
    let dir = std::env::temp_dir().join(format!("iostack-fsm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("fs_log.txt");
    let _ = std::fs::remove_file(&log);
    let l = log.to_str().unwrap();
    let (ok, out, err) = iostack(&[
        "fs_mark",
        "-d",
        "/mnt/test/f",
        "-n",
        "10",
        "-s",
        "4096",
        "-l",
        l,
        "--machine",
        "null",
    ]);
    assert!(ok, "{err}");
    let logged = std::fs::read_to_string(&log).unwrap();
    // The same text, with `#` for the blank line before the table header.
    let body: String = out
        .lines()
        .filter(|x| !x.starts_with("# iostack"))
        .map(|x| format!("{x}\n"))
        .collect();
    assert_eq!(logged, body.replacen("\n\n", "\n#\n", 1));
    assert!(logged.contains("calls.\n#\nFSUse%"), "{logged}");
}

/// `iostack bonnie` with seed 004's command line on the seed's machine (a small
/// file here): the patch's notices, then Bonnie's table in its own layout;
/// the O_DIRECT block tests cost a fraction of the buffered ones' CPU (no copy
/// through the page cache).
#[test]
fn bonnie_prints_its_table() {
    let run = |extra: &[&str]| {
        let mut a = vec![
            "bonnie",
            "-s",
            "64",
            "-fast",
            "-d",
            "/mnt/test",
            "-m",
            "2way",
        ];
        a.extend_from_slice(extra);
        a.extend_from_slice(&["--kernel", "2.4"]);
        let (ok, out, err) = iostack(&a);
        assert!(ok, "{err}");
        out
    };
    let cpu_of = |out: &str, col: usize| -> f64 {
        let last = out.lines().last().unwrap();
        assert!(last.starts_with("2way       64 "), "{out}");
        last.split_whitespace()
            .nth(2 + 2 * col + 1)
            .unwrap()
            .parse()
            .unwrap()
    };
    let buffered = run(&[]);
    let lines = ours(&buffered);
    assert_eq!(lines[0], "Will skip the seek test");
    assert_eq!(
        lines[3],
        "Machine    MB K/sec %CPU K/sec %CPU K/sec %CPU K/sec %CPU K/sec %CPU  /sec %CPU"
    );
    assert!(lines[4].ends_with(" 4000.0  0.0"), "{buffered}");
    let direct = run(&["-o_direct"]);
    assert_eq!(ours(&direct)[0], "Using O_DIRECT for block based I/O");
    for col in [1, 2, 4] {
        let (b, d) = (cpu_of(&buffered, col), cpu_of(&direct, col));
        assert!(
            d * 2.0 < b,
            "column {col}: buffered {b} %CPU, O_DIRECT {d} %CPU"
        );
    }
}

#[test]
fn bonnie_errors_name_the_option() {
    for (args, what) in [
        (&["bonnie", "-s", "10x", "-fast"][..], "-s 10x"),
        (&["bonnie", "-s", "64"][..], "-fast"),
        (&["bonnie", "-q"][..], "unknown option -q"),
    ] {
        let (ok, _, err) = iostack(args);
        assert!(!ok && err.contains(what), "{args:?}: {err}");
    }
}
