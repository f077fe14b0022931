//! iozone 3.414's report (`iozone.c`: the banner, the splash lines of the
//! options, `print_header`, `begin`'s rows, `dump_excel`), for the tests iostack
//! simulates: write/rewrite, read/re-read, random read/write.

/// The banner iozone prints first (`head1`, built as `linux-AMD64`).
const BANNER: &str = "\tIozone: Performance Test of File I/O
\t        Version $Revision: 3.414 $
\t\tCompiled for 64 bit mode.
\t\tBuild: linux-AMD64 

\tContributors:William Norcott, Don Capps, Isom Crawford, Kirby Collins
\t             Al Slater, Scott Rhine, Mike Wisner, Ken Goss
\t             Steve Landherr, Brad Smith, Mark Kelly, Dr. Alain CYR,
\t             Randy Dunlap, Mark Montague, Dan Million, Gavin Brebner,
\t             Jean-Marc Zucconi, Jeff Blomberg, Benny Halevy, Dave Boone,
\t             Erik Habbinga, Kris Strecker, Walter Wong, Joshua Root,
\t             Fabrice Bacchella, Zhenghua Xue, Qin Li, Darren Sawyer,
\t             Vangel Bojaxhi, Ben England.

";

/// The table's two header lines (`print_header`, without -E).
pub const HEADER: &str = "                                                            random  random    bkwd   record   stride                                   
              KB  reclen   write rewrite    read    reread    read   write    read  rewrite     read   fwrite frewrite   fread  freread
";

/// The width of each test's pair of columns (`test_output`), tests 0 to 7.
const TEST_WIDTH: [usize; 8] = [16, 18, 16, 8, 8, 8, 18, 16];

/// A splash line: what an option prints when iozone reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Splash {
    FileSizeKb(u64),
    RecordKb(u64),
    IncludeFsync,
    IncludeClose,
    ODirect,
    OSync,
    Ops,
    Auto,
    MinFileKb(u64),
    MaxFileKb(u64),
    MinRecKb(u64),
    MaxRecKb(u64),
    Excel,
    NoUnlink,
    NoCrossover,
}

impl Splash {
    /// The line as iozone prints it, with its tab and newline.
    pub fn text(self) -> String {
        match self {
            Splash::FileSizeKb(k) => format!("\tFile size set to {k} KB\n"),
            Splash::RecordKb(k) => format!("\tRecord Size {k} KB\n"),
            Splash::IncludeFsync => "\tInclude fsync in write timing\n".into(),
            Splash::IncludeClose => "\tInclude close in write timing\n".into(),
            Splash::ODirect => "\tO_DIRECT feature enabled\n".into(),
            Splash::OSync => "\tSYNC Mode. \n".into(),
            Splash::Ops => "\tOPS Mode. Output is in operations per second.\n".into(),
            Splash::Auto => "\tAuto Mode\n".into(),
            Splash::MinFileKb(k) => format!("\tUsing minimum file size of {k} kilobytes.\n"),
            Splash::MaxFileKb(k) => format!("\tUsing maximum file size of {k} kilobytes.\n"),
            Splash::MinRecKb(k) => format!("\tUsing Minimum Record Size {k} KB\n"),
            Splash::MaxRecKb(k) => format!("\tUsing Maximum Record Size {k} KB\n"),
            Splash::Excel => "\tExcel chart generation enabled\n".into(),
            Splash::NoUnlink => "\tSetting no_unlink\n".into(),
            Splash::NoCrossover => "\tCross over of record size disabled.\n".into(),
        }
    }
}

/// One row of the table: file KiB, record KiB, and the six results iostack
/// simulates (write, rewrite, read, reread, random read, random write), `None`
/// for a test not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IozoneRow {
    pub kb: u64,
    pub reclen_kb: u64,
    pub values: [Option<u64>; 6],
}

/// Everything the report prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IozoneReport {
    /// `argv` as given, program name first.
    pub argv: Vec<String>,
    pub splash: Vec<Splash>,
    /// `-O`: operations per second.
    pub ops: bool,
    /// `-R`: the Excel-style report after the table.
    pub excel: bool,
    /// `Run began:` (a ctime string without its newline).
    pub began: String,
    pub rows: Vec<IozoneRow>,
}

/// The whole report, as iozone prints it on stdout.
pub fn render(r: &IozoneReport) -> String {
    let mut s = String::from(BANNER);
    s.push_str(&format!("\tRun began: {}\n\n", r.began));
    for l in &r.splash {
        s.push_str(&l.text());
    }
    s.push_str("\tCommand line used:");
    for a in &r.argv {
        s.push(' ');
        s.push_str(a);
    }
    s.push('\n');
    if !r.ops {
        s.push_str("\tOutput is in Kbytes/sec\n");
    }
    s.push_str("\tTime Resolution = 0.000001 seconds.\n");
    s.push_str("\tProcessor cache size set to 1024 Kbytes.\n");
    s.push_str("\tProcessor cache line size set to 32 bytes.\n");
    s.push_str("\tFile stride size set to 17 * record size.\n");
    s.push_str(HEADER);
    for row in &r.rows {
        s.push_str(&row_line(row));
    }
    s.push_str("\niozone test complete.\n");
    if r.excel {
        s.push_str(&excel(r));
    }
    s
}

/// `begin`: `%16lld%8lld`, then each test's pair (`%8lld%8lld` for write and
/// random, `%9lld%9lld` for read) or its blank `test_output`.
pub fn row_line(row: &IozoneRow) -> String {
    let mut s = format!("{:16}{:8}", row.kb, row.reclen_kb);
    for (t, width) in TEST_WIDTH.iter().enumerate() {
        let pair = (t < 3).then(|| (row.values[2 * t], row.values[2 * t + 1]));
        match pair {
            Some((Some(a), Some(b))) if t == 1 => s.push_str(&format!("{a:9}{b:9}")),
            Some((Some(a), Some(b))) => s.push_str(&format!("{a:8}{b:8}")),
            _ => s.push_str(&" ".repeat(*width)),
        }
    }
    s.push('\n');
    s
}

/// `dump_excel`: one block per test run, a header of record sizes, one line per
/// file size.
fn excel(r: &IozoneReport) -> String {
    let mut s = String::from("Excel output is below:\n");
    let names = [
        "Writer report",
        "Re-writer report",
        "Reader report",
        "Re-Reader report",
        "Random read report",
        "Random write report",
    ];
    let mut recs: Vec<u64> = r.rows.iter().map(|x| x.reclen_kb).collect();
    recs.sort_unstable();
    recs.dedup();
    for (i, name) in names.iter().enumerate() {
        if r.rows.iter().all(|x| x.values[i].is_none()) {
            continue;
        }
        s.push_str(&format!("\n\"{name}\"\n      "));
        for k in &recs {
            s.push_str(&format!("  \"{k}\""));
        }
        let mut current = None;
        for row in &r.rows {
            if current != Some(row.kb) {
                s.push_str(&format!("\n\"{}\"  ", row.kb));
                current = Some(row.kb);
            }
            s.push_str(&format!(" {} ", row.values[i].unwrap_or(0)));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_widths_follow_iozone() {
        let r = IozoneRow {
            kb: 65536,
            reclen_kb: 4,
            values: [
                Some(1150257),
                Some(1484600),
                Some(5610920),
                Some(4955808),
                Some(4147297),
                Some(1313955),
            ],
        };
        let l = row_line(&r);
        assert!(l.starts_with(
            "           65536       4 1150257 1484600  5610920  4955808 4147297 1313955"
        ));
        assert_eq!(l.len(), 16 + 8 + 16 + 18 + 16 + 8 + 8 + 8 + 18 + 16 + 1);
    }
}
