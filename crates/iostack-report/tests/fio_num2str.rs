//! fio's number formatting, against values printed by fio's own C functions
//! (fio-3.33 `lib/num2str.c` and fio-2.16 `lib/num2str.c`, compiled with gcc).

use iostack_report::fio::{ctime, num2str, num2str_old, N2sUnit};

fn unit(u: u32) -> N2sUnit {
    match u {
        0 => N2sUnit::None,
        1 => N2sUnit::PerSec,
        2 => N2sUnit::Byte,
        3 => N2sUnit::Bit,
        4 => N2sUnit::BytePerSec,
        5 => N2sUnit::BitPerSec,
        _ => unreachable!(),
    }
}

/// (num, maxlen, base, pow2, enum n2s_unit, fio-3.33 output)
const FIO_333: &[(u64, usize, u64, bool, u32, &str)] = &[
    (40543u64, 4, 1, false, 0, "40.5k"),
    (166065063u64, 4, 1, false, 4, "166MB/s"),
    (166065063u64, 4, 1, true, 4, "158MiB/s"),
    (332296192u64, 4, 1, true, 2, "317MiB"),
    (16777216u64, 4, 1, true, 2, "16.0MiB"),
    (16777216u64, 4, 1, false, 2, "16.8MB"),
    (65536u64, 4, 1, true, 2, "64.0KiB"),
    (4096u64, 4, 1, true, 2, "4096B"),
    (1068215u64, 6, 1, false, 0, "1068.2k"),
    (44129348u64, 6, 1, false, 0, "44129k"),
    (7275u64, 4, 1, false, 0, "7275"),
    (83049931u64, 4, 1, false, 4, "83.0MB/s"),
    (5980160u64, 4, 1, true, 2, "5840KiB"),
    (5980160u64, 4, 1, false, 2, "5980kB"),
    (1349336u64, 4, 1, false, 0, "1349k"),
    (1999999u64, 4, 1, false, 0, "2000k"),
    (1996u64, 3, 1, false, 0, "2.0k"),
    (0u64, 4, 1, false, 2, "0B"),
    (999u64, 4, 1, false, 0, "999"),
    (18446744073709551615u64, 4, 1, true, 2, "16.0EiB"),
    (18446744073709551615u64, 4, 1, false, 0, "18.4E"),
    (1000u64, 3, 1, false, 0, "1.0k"),
    (1024u64, 4, 1024, true, 4, "1024KiB/s"),
    (123456u64, 4, 1, false, 5, "988kbit/s"),
    (9999999u64, 4, 1, true, 2, "9766KiB"),
    (1048575u64, 4, 1, true, 2, "1024KiB"),
    (5527000000u64, 4, 1, false, 4, "5527MB/s"),
    (100u64, 1, 1, false, 0, "0k"),
];

/// (num, maxlen, base, pow2, unit_base, fio-2.16 output)
const FIO_216: &[(u64, usize, u64, bool, u32, &str)] = &[
    (332296192u64, 6, 1, true, 8, "324508KB"),
    (5980160u64, 6, 1, true, 8, "5840.0KB"),
    (138654677u64, 6, 1, true, 8, "135405KB"),
    (16384u64, 6, 1024, true, 8, "16384KB"),
    (135404u64, 6, 1024, true, 8, "135404KB"),
    (40543u64, 6, 1, false, 0, "40543"),
    (1029u64, 3, 1, true, 0, "1.5K"),
    (4096u64, 6, 1, true, 8, "4096B"),
    (0u64, 6, 1, true, 8, "0B"),
    (1234567u64, 6, 1, false, 0, "1234.6K"),
    (12345678901u64, 6, 1, false, 1, "98765Mbit"),
    (999999u64, 6, 1, false, 0, "999999"),
    (1000000u64, 6, 1, false, 0, "1000.0K"),
    (5276000000u64, 6, 1, true, 8, "5031.6MB"),
    (1023u64, 2, 1, true, 0, "1K"),
];

#[test]
fn num2str_matches_fio_333() {
    for &(n, maxlen, base, pow2, u, want) in FIO_333 {
        assert_eq!(
            num2str(n, maxlen, base, pow2, unit(u)),
            want,
            "num2str({n}, {maxlen}, {base}, {pow2}, {u})"
        );
    }
}

#[test]
fn num2str_matches_fio_216() {
    for &(n, maxlen, base, pow2, u, want) in FIO_216 {
        assert_eq!(
            num2str_old(n, maxlen, base, pow2, u),
            want,
            "old num2str({n}, {maxlen}, {base}, {pow2}, {u})"
        );
    }
}

#[test]
fn brief_examples() {
    // IOPS=40.5k, BW=158MiB/s (166MB/s)(317MiB/2001msec)
    assert_eq!(num2str(40_500, 4, 1, false, N2sUnit::None), "40.5k");
    assert_eq!(
        num2str(166_065_063, 4, 1, false, N2sUnit::BytePerSec),
        "166MB/s"
    );
    assert_eq!(
        num2str(166_065_063, 4, 1, true, N2sUnit::BytePerSec),
        "158MiB/s"
    );
    assert_eq!(num2str(332_296_192, 4, 1, true, N2sUnit::Byte), "317MiB");
}

#[test]
fn ctime_layout() {
    assert_eq!(ctime(1_795_274_391), "Sat Nov 21 15:19:51 2026");
    assert_eq!(ctime(1_795_277_516), "Sat Nov 21 16:11:56 2026");
    assert_eq!(ctime(1_000_000_000), "Sun Sep  9 01:46:40 2001");
}
