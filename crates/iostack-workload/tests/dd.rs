//! GNU dd operand parsing.

use iostack_workload::{parse_dd_args, parse_dd_command_line, DdStatus};

#[test]
fn brief_example() {
    let dd =
        parse_dd_command_line("if=/mnt/test/test-dd1 of=/dev/null iflag=direct bs=64k count=1")
            .unwrap();
    assert_eq!(dd.input.as_deref(), Some("/mnt/test/test-dd1"));
    assert_eq!(dd.output.as_deref(), Some("/dev/null"));
    assert!(dd.iflag.direct && !dd.oflag.direct);
    assert_eq!((dd.bs, dd.ibs, dd.obs), (Some(65536), 65536, 65536));
    assert_eq!(dd.count, Some(1));
    assert_eq!(dd.input_limit(), Some(65536));
    assert_eq!(dd.status, DdStatus::Default);
}

#[test]
fn operands() {
    let dd = parse_dd_command_line(
        "dd if=/dev/zero of=/mnt/test/f ibs=1k obs=4k skip=2 seek=3 oflag=direct,dsync,sync \
         conv=fsync,fdatasync,notrunc status=noxfer",
    )
    .unwrap();
    assert_eq!((dd.ibs, dd.obs, dd.bs), (1024, 4096, None));
    assert_eq!((dd.skip_offset(), dd.seek_offset()), (2048, 12288));
    assert!(dd.oflag.direct && dd.oflag.dsync && dd.oflag.sync);
    assert!(dd.conv.fsync && dd.conv.fdatasync && dd.conv.notrunc);
    assert_eq!(dd.status, DdStatus::Noxfer);
    assert_eq!(dd.count, None);
    assert_eq!(dd.input_limit(), None);

    // bs= overrides ibs/obs regardless of order; defaults are 512.
    let dd = parse_dd_args(["bs=2x512", "ibs=8k"]).unwrap();
    assert_eq!((dd.ibs, dd.obs), (1024, 1024));
    let dd = parse_dd_args(["of=x"]).unwrap();
    assert_eq!((dd.ibs, dd.obs), (512, 512));

    // A count/skip/seek ending in B counts bytes (coreutils 9.1).
    let dd = parse_dd_args(["count=100KiB", "skip=10B", "oseek=1B", "bs=4k"]).unwrap();
    assert!(dd.iflag.count_bytes && dd.iflag.skip_bytes && dd.oflag.seek_bytes);
    assert_eq!(dd.input_limit(), Some(102_400));
    assert_eq!((dd.skip_offset(), dd.seek_offset()), (10, 1));
    let dd = parse_dd_args([
        "iseek=3",
        "bs=1k",
        "iflag=fullblock,count_bytes",
        "count=1000",
    ])
    .unwrap();
    assert_eq!(dd.skip_offset(), 3072);
    assert_eq!(dd.input_limit(), Some(1000));

    // status: last one wins.
    assert_eq!(
        parse_dd_args(["status=none,progress"]).unwrap().status,
        DdStatus::Progress
    );
    assert_eq!(
        parse_dd_args(["status=none"]).unwrap().status,
        DdStatus::None
    );
    // if= takes everything after the first '='.
    assert_eq!(
        parse_dd_args(["if=a=b"]).unwrap().input.as_deref(),
        Some("a=b")
    );
}

#[test]
fn number_suffixes() {
    let n = |s: &str| parse_dd_args([format!("count={s}")]).map(|d| d.count.unwrap());
    for (s, v) in [
        ("1", 1u64),
        ("1c", 1),
        ("1w", 2),
        ("1b", 512),
        ("1kB", 1000),
        ("1K", 1024),
        ("1k", 1024),
        ("1KiB", 1024),
        ("1MB", 1_000_000),
        ("1M", 1 << 20),
        ("1xM", 1 << 20),
        ("1GB", 1_000_000_000),
        ("1G", 1 << 30),
        ("1T", 1 << 40),
        ("1P", 1 << 50),
        ("1E", 1 << 60),
        ("2x512", 1024),
        ("2xK", 2048),
        ("0", 0),
    ] {
        assert_eq!(n(s), Ok(v), "{s}");
    }
}

#[test]
fn errors_name_the_operand() {
    let e = parse_dd_args(["bs=4q"]).unwrap_err();
    assert_eq!(e.operand, "bs=4q");
    assert_eq!(e.to_string(), "dd: invalid number: '4q'");
    let e = parse_dd_args(["if=x", "foo=1"]).unwrap_err();
    assert_eq!(e.operand, "foo=1");
    assert_eq!(e.to_string(), "dd: unrecognized operand 'foo=1'");
    let e = parse_dd_args(["if"]).unwrap_err();
    assert_eq!(e.to_string(), "dd: unrecognized operand 'if'");
    for (op, msg) in [
        ("bs=0", "invalid number: '0'"),
        ("count=-1", "invalid number: '-1'"),
        ("count=1m", "invalid number: '1m'"),
        ("count=2x3x4", "invalid number: '2x3x4'"),
        (
            "count=1Z",
            "invalid number: '1Z': Value too large for defined data type",
        ),
        ("skip=", "invalid number: ''"),
        ("iflag=direkt", "invalid input flag: 'direkt'"),
        ("oflag=direct,,sync", "invalid output flag: ''"),
        ("conv=fsync,nosuch", "invalid conversion: 'nosuch'"),
        ("status=loud", "invalid status level: 'loud'"),
        ("oflag=fullblock", "invalid output flag: 'fullblock'"),
    ] {
        let e = parse_dd_args([op]).unwrap_err();
        assert_eq!(e.message, msg, "{op}");
    }
    assert!(parse_dd_args(["conv=ascii,ebcdic"]).is_err());
    assert!(parse_dd_args(["conv=excl,nocreat"]).is_err());
    assert!(parse_dd_args(["conv=lcase,ucase"]).is_err());
    assert!(parse_dd_args(["iflag=direct,nocache"]).is_err());
    assert!(parse_dd_args(["cbs=10", "conv=block,unblock"]).is_err());
    assert!(parse_dd_args(["conv=block,unblock"]).is_ok());
}

/// Cross-check number parsing against the real GNU dd: `count=N` with an empty
/// input copies nothing, so the exit status only reflects parsing.
#[test]
fn numbers_match_gnu_dd() {
    let dd = std::path::Path::new("/bin/dd");
    if !dd.exists() {
        eprintln!("WARNING: /bin/dd not found, skipping the comparison with GNU dd");
        return;
    }
    let version = std::process::Command::new(dd)
        .arg("--version")
        .output()
        .unwrap();
    if !String::from_utf8_lossy(&version.stdout).contains("coreutils) 9.1") {
        eprintln!("WARNING: /bin/dd is not GNU coreutils 9.1, skipping");
        return;
    }
    for s in [
        "1",
        "0",
        "+1",
        "100B",
        "1kB",
        "1KB",
        "1KiB",
        "1Ki",
        "1k",
        "1m",
        "1M",
        "1MB",
        "2x512",
        "2x3x4",
        "0x10",
        "1bB",
        "1w",
        "1c",
        "-1",
        "1K2",
        "1E",
        "1Z",
        "",
        "4q",
        "1x",
        "x2",
        "2xB",
        "1D",
        "1KD",
        "1Bx2",
        "K",
        "2xK",
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551616",
        "1Q",
        "1Y",
        "1 ",
        "b",
        "bB",
        "5xKiB",
        "1BB",
    ] {
        let st = std::process::Command::new(dd)
            .args([
                "if=/dev/null",
                "of=/dev/null",
                &format!("count={s}"),
                "status=none",
            ])
            .output()
            .unwrap()
            .status
            .success();
        let ours = parse_dd_args([format!("count={s}")]).is_ok();
        assert_eq!(ours, st, "count={s}: GNU dd says {st}");
    }
}
