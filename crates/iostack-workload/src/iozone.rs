//! iozone 3.414 command-line parsing (`iozone.c` `main`'s getopt loop and the
//! checks after it), for the options iostack simulates or refuses by name.
//!
//! iozone itself reads numbers with `atoi` and looks only at the last character
//! for a `k`, `m` or `g` suffix, so `-s 64x` is 64 KiB there; iostack refuses
//! such a number instead of guessing.

use std::fmt;

/// iozone's `MAXBUFFERSIZE` (16 MiB on 64-bit builds) and `MINBUFFERSIZE`.
pub const IOZONE_MAX_RECLEN: u64 = 16 * 1024 * 1024;
/// The smallest record iozone accepts (`MINBUFFERSIZE`).
pub const IOZONE_MIN_RECLEN: u64 = 128;
/// `MAXSTREAMS`: the most children of throughput mode.
pub const IOZONE_MAX_STREAMS: u64 = 256;
/// Default file size in KiB (`KILOBYTES`).
pub const IOZONE_DEFAULT_KB: u64 = 512;

/// An error in an iozone command line, naming the option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IozoneError {
    /// The option as written (`-s`), or empty for the command line as a whole.
    pub option: String,
    /// The message, in iozone's own words where it has some.
    pub message: String,
}

impl fmt::Display for IozoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "iozone: {}", self.message)
    }
}

impl std::error::Error for IozoneError {}

fn err(option: &str, message: String) -> IozoneError {
    IozoneError {
        option: option.to_string(),
        message,
    }
}

/// The tests of `-i N` iozone runs, by number (0 write/rewrite, 1 read/re-read,
/// 2 random read/write, ...).
pub const IOZONE_TESTS: [&str; 13] = [
    "write/rewrite",
    "read/re-read",
    "random-read/write",
    "Read-backwards",
    "Re-write-record",
    "stride-read",
    "fwrite/re-fwrite",
    "fread/Re-fread",
    "random_mix",
    "pwrite/Re-pwrite",
    "pread/Re-pread",
    "pwritev/Re-pwritev",
    "preadv/Re-preadv",
];

/// A parsed iozone command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IozoneSpec {
    /// The arguments as given (without the program name), for "Command line used".
    pub argv: Vec<String>,
    /// `-s`: file sizes in KiB, in order given (more than one is auto mode).
    pub sizes_kb: Vec<u64>,
    /// `-r`: record sizes in bytes.
    pub reclens: Vec<u64>,
    /// `-f`: the temporary file.
    pub file: Option<String>,
    /// `-F`: one file per child of throughput mode.
    pub files: Vec<String>,
    /// `-e`: fsync in the write timings.
    pub include_fsync: bool,
    /// `-c`: close in the timings.
    pub include_close: bool,
    /// `-i N`: the tests selected, ascending (empty: all).
    pub tests: Vec<u8>,
    /// `-I`: O_DIRECT.
    pub direct: bool,
    /// `-o`: O_SYNC writes.
    pub osync: bool,
    /// `-w`: do not unlink the file.
    pub no_unlink: bool,
    /// `-a`: auto mode.
    pub auto: bool,
    /// `-n`, `-g`: auto mode's file sizes in KiB.
    pub min_kb: Option<u64>,
    /// `-g`.
    pub max_kb: Option<u64>,
    /// `-y`, `-q`: auto mode's record sizes in bytes.
    pub min_rec: Option<u64>,
    /// `-q`.
    pub max_rec: Option<u64>,
    /// `-z`: keep small records for large files in auto mode.
    pub no_crossover: bool,
    /// `-t N`: throughput mode with N children.
    pub threads: Option<u64>,
    /// `-R`: the Excel-style report.
    pub excel: bool,
    /// `-O`: operations per second instead of KiB/s.
    pub ops: bool,
    /// The options in the order given, with their value (KiB for sizes and
    /// records, 0 for flags): iozone prints a line for each as it reads it.
    pub seen: Vec<(char, u64)>,
}

/// Options iozone has that iostack does not simulate, with the reason.
const REFUSED: &[(char, &str)] = &[
    ('A', "auto mode 2 is obsolete in iozone itself; use -a"),
    ('B', "mmap files are not simulated (no page-fault model)"),
    ('D', "msync on mmap files is not simulated (no mmap model)"),
    ('G', "msync on mmap files is not simulated (no mmap model)"),
    (
        'H',
        "POSIX async I/O is not simulated by the iozone front end",
    ),
    (
        'k',
        "POSIX async I/O is not simulated by the iozone front end",
    ),
    ('K', "the disrupted read pattern is not simulated"),
    ('M', "uname output is not simulated"),
    (
        'p',
        "purging the processor cache is not simulated (no CPU cache model)",
    ),
    ('Q', "offset/latency files are not produced"),
    ('U', "unmounting and remounting is not simulated"),
    (
        'V',
        "data verification is not simulated (no data is stored)",
    ),
    ('W', "file locking is not simulated"),
    (
        'Z',
        "mixing mmap and file I/O is not simulated (no mmap model)",
    ),
    (
        'x',
        "throughput mode is not simulated, so its stonewall has no effect",
    ),
    ('C', "throughput mode is not simulated"),
    (
        'N',
        "microseconds per operation output is not produced; use -O",
    ),
    ('b', "the binary Excel file is not written; use -R"),
    ('j', "the stride test (-i 5) is not simulated"),
    ('J', "compute delays between operations are not simulated"),
    ('X', "telemetry files are not simulated"),
    ('Y', "telemetry files are not simulated"),
    ('l', "throughput mode is not simulated"),
    ('u', "throughput mode is not simulated"),
    (
        'm',
        "multiple buffers are not simulated (no CPU cache model)",
    ),
    ('P', "binding to processors is not simulated"),
    ('S', "the processor cache size is not simulated"),
    ('L', "the processor cache line size is not simulated"),
    ('T', "POSIX threads are not simulated"),
    ('E', "the extended tests are not simulated"),
    ('d', "throughput mode is not simulated"),
    ('h', "iostack does not print iozone's help"),
    ('v', "iostack does not print iozone's version banner"),
    ('+', "iozone's -+ options are not simulated"),
];

/// Options that take an argument in iozone's getopt string.
const WITH_ARG: &str = "srfFinygqtbdjJlLSUVXYPuHkm+";

/// Parse iozone's arguments (without the program name).
pub fn parse_iozone_args(args: &[String]) -> Result<IozoneSpec, IozoneError> {
    let mut s = IozoneSpec {
        argv: args.to_vec(),
        ..IozoneSpec::default()
    };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let body = match a.strip_prefix('-') {
            Some(b) if !b.is_empty() => b,
            _ => {
                return Err(err(
                    a,
                    format!("unexpected argument '{a}' (options start with '-')"),
                ))
            }
        };
        let chars: Vec<char> = body.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            k += 1;
            if !WITH_ARG.contains(c) {
                flag(&mut s, c)?;
                continue;
            }
            let val = if k < chars.len() {
                let v: String = chars[k..].iter().collect();
                k = chars.len();
                v
            } else if i < args.len() {
                i += 1;
                args[i - 1].clone()
            } else {
                return Err(err(
                    &format!("-{c}"),
                    format!("option requires an argument -- '{c}'"),
                ));
            };
            if c == 'F' {
                i = files(&mut s, val, args, i)?;
            } else {
                with_arg(&mut s, c, &val)?;
            }
        }
    }
    check(&s)?;
    Ok(s)
}

/// A flag without an argument.
fn flag(s: &mut IozoneSpec, c: char) -> Result<(), IozoneError> {
    match c {
        'a' => s.auto = true,
        'c' => s.include_close = true,
        'e' => s.include_fsync = true,
        'I' => s.direct = true,
        'o' => s.osync = true,
        'w' => s.no_unlink = true,
        'R' => s.excel = true,
        'O' => s.ops = true,
        'z' => s.no_crossover = true,
        _ => return Err(refused(c)),
    }
    s.seen.push((c, 0));
    Ok(())
}

fn refused(c: char) -> IozoneError {
    let opt = format!("-{c}");
    match REFUSED.iter().find(|(r, _)| *r == c) {
        Some((_, why)) => err(&opt, format!("option {opt} is not simulated: {why}")),
        None => err(&opt, format!("invalid option -- '{c}'")),
    }
}

/// `-F f1 f2 ...`: as many names as `-t` children (which must come first).
fn files(
    s: &mut IozoneSpec,
    first: String,
    args: &[String],
    mut i: usize,
) -> Result<usize, IozoneError> {
    if s.file.is_some() {
        let m = "invalid options: -f and -F are mutually exclusive".to_string();
        return Err(err("-F", m));
    }
    let Some(n) = s.threads else {
        return Err(err(
            "-F",
            "invalid options: must specify -t N before -F".into(),
        ));
    };
    s.files.push(first);
    while (s.files.len() as u64) < n {
        match args.get(i) {
            Some(f) => s.files.push(f.clone()),
            None => {
                let m = format!("invalid options: not enough filenames for {n} streams");
                return Err(err("-F", m));
            }
        }
        i += 1;
    }
    Ok(i)
}

fn with_arg(s: &mut IozoneSpec, c: char, v: &str) -> Result<(), IozoneError> {
    let opt = format!("-{c}");
    match c {
        's' | 'n' | 'g' => {
            let kb = size_kb(&opt, v)?;
            match c {
                's' => s.sizes_kb.push(kb),
                'n' => s.min_kb = Some(kb),
                _ => s.max_kb = Some(kb),
            }
            s.seen.push((c, kb));
        }
        'r' | 'y' | 'q' => {
            let b = rec_bytes(&opt, v)?;
            match c {
                'r' => s.reclens.push(b),
                'y' => s.min_rec = Some(b),
                _ => s.max_rec = Some(b),
            }
            s.seen.push((c, b / 1024));
        }
        'f' => {
            if !s.files.is_empty() {
                let m = "invalid options: -f and -F are mutually exclusive".to_string();
                return Err(err(&opt, m));
            }
            if v.is_empty() {
                return Err(err(&opt, "-f needs a file name".into()));
            }
            s.file = Some(v.to_string());
        }
        'i' => {
            let t = plain(&opt, v)?;
            if t as usize >= IOZONE_TESTS.len() {
                return Err(err(
                    &opt,
                    format!("-i {v}: no such test (0..{})", IOZONE_TESTS.len() - 1),
                ));
            }
            if !s.tests.contains(&(t as u8)) {
                s.tests.push(t as u8);
                s.tests.sort_unstable();
            }
        }
        't' => {
            let n = plain(&opt, v)?;
            if n > IOZONE_MAX_STREAMS {
                let m = format!(
                    "invalid options: maximum streams for throughput is {IOZONE_MAX_STREAMS} (-t {v})"
                );
                return Err(err(&opt, m));
            }
            s.threads = Some(if n == 0 { 8 } else { n });
        }
        _ => return Err(refused(c)),
    }
    Ok(())
}

/// A plain unsigned number.
fn plain(opt: &str, v: &str) -> Result<u64, IozoneError> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err(opt, format!("{opt} {v}: expected an unsigned number")));
    }
    v.parse()
        .map_err(|_| err(opt, format!("{opt} {v}: number too large")))
}

/// A number with an optional `k`, `m` or `g` suffix: (digits, multiplier exponent
/// of 1024: 0 for k or none, 1 for m, 2 for g), with `unit_k` the exponent of no
/// suffix.
fn suffixed(opt: &str, v: &str, what: &str) -> Result<(u64, u32, bool), IozoneError> {
    let (num, pow, has) = match v.as_bytes().last() {
        Some(b'k' | b'K') => (&v[..v.len() - 1], 0, true),
        Some(b'm' | b'M') => (&v[..v.len() - 1], 1, true),
        Some(b'g' | b'G') => (&v[..v.len() - 1], 2, true),
        _ => (v, 0, false),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err(
            opt,
            format!("{opt} {v}: invalid {what} (a number with an optional k, m or g suffix)"),
        ));
    }
    let n: u64 = num
        .parse()
        .map_err(|_| err(opt, format!("{opt} {v}: {what} too large")))?;
    Ok((n, pow, has))
}

/// A file size in KiB (`-s`, `-n`, `-g`: no suffix and `k` mean KiB).
fn size_kb(opt: &str, v: &str) -> Result<u64, IozoneError> {
    let (n, pow, _) = suffixed(opt, v, "file size")?;
    let kb = n
        .checked_mul(1u64 << (10 * pow))
        .filter(|kb| *kb <= (i64::MAX as u64) >> 10)
        .ok_or_else(|| err(opt, format!("{opt} {v}: file size too large")))?;
    if kb == 0 {
        return Err(err(
            opt,
            format!("{opt} {v}: the file size must be positive"),
        ));
    }
    Ok(kb)
}

/// A record size in bytes (`-r`, `-y`, `-q`: no suffix means KiB).
fn rec_bytes(opt: &str, v: &str) -> Result<u64, IozoneError> {
    let (n, pow, _) = suffixed(opt, v, "record size")?;
    let b = n
        .checked_mul(1u64 << (10 * (pow + 1)))
        .ok_or_else(|| err(opt, format!("{opt} {v}: record size too large")))?;
    if b > IOZONE_MAX_RECLEN {
        let m = format!(
            "Error: maximum record size {} KB is greater than maximum buffer size {} KB",
            b / 1024,
            IOZONE_MAX_RECLEN / 1024
        );
        return Err(err(opt, m));
    }
    if b < IOZONE_MIN_RECLEN {
        return Err(err(
            opt,
            format!("Error: Minimum record length is {IOZONE_MIN_RECLEN} bytes"),
        ));
    }
    Ok(b)
}

/// iozone's checks after the option loop.
fn check(s: &IozoneSpec) -> Result<(), IozoneError> {
    let auto = s.auto || s.sizes_kb.len() > 1 || s.reclens.len() > 1;
    if s.threads.is_some() && (auto || s.min_kb.is_some() || s.max_kb.is_some())
        || s.threads.is_some() && (s.min_rec.is_some() || s.max_rec.is_some())
    {
        return Err(err(
            "-t",
            "Can not mix throughput mode and auto-mode flags.".into(),
        ));
    }
    if s.threads.is_some() && s.file.is_some() {
        let m = "You must use -F when using multiple threads or processes.".to_string();
        return Err(err("-f", m));
    }
    if auto && !s.files.is_empty() {
        return Err(err("-F", "You must use -f when using auto mode.".into()));
    }
    if let (Some(lo), Some(hi)) = (s.min_rec, s.max_rec) {
        if lo > hi {
            let m = format!(
                "Error: minimum record size {} KB is greater than maximum record size {} KB",
                lo / 1024,
                hi / 1024
            );
            return Err(err("-y", m));
        }
    }
    if !auto {
        let kb = s.sizes_kb.first().copied().unwrap_or(IOZONE_DEFAULT_KB);
        let rec = s.reclens.first().copied().unwrap_or(4096);
        if rec > kb.saturating_mul(1024) {
            let m = format!("Error: record length {rec} is greater than filesize {kb} KB");
            return Err(err("-r", m));
        }
    }
    Ok(())
}

impl IozoneSpec {
    /// Auto mode, explicitly or by several `-s`/`-r` (as iozone sets `aflag`).
    pub fn is_auto(&self) -> bool {
        self.auto || self.sizes_kb.len() > 1 || self.reclens.len() > 1
    }

    /// The (file KiB, record bytes) rows iozone runs, in its order: one row, or
    /// auto mode's file sizes doubling from `-n` (64 KiB) to `-g` (512 MiB) with
    /// records doubling from `-y` (4 KiB) to `-q` (16 MiB), no larger than the
    /// file, and from 64 KiB for files over `CROSSOVER` (16 MiB) unless `-z` or a
    /// record or size option was given (`auto_test`).
    pub fn rows(&self) -> Vec<(u64, u64)> {
        if !self.is_auto() {
            let kb = self.sizes_kb.first().copied().unwrap_or(IOZONE_DEFAULT_KB);
            return vec![(kb, self.reclens.first().copied().unwrap_or(4096))];
        }
        if self.sizes_kb.len() > 1 || self.reclens.len() > 1 {
            return self.range_rows();
        }
        let (lo_kb, hi_kb) = (self.min_kb.unwrap_or(64), self.max_kb.unwrap_or(512 * 1024));
        let (lo_rec, hi_rec) = (
            self.min_rec.unwrap_or(4096),
            self.max_rec.unwrap_or(IOZONE_MAX_RECLEN),
        );
        let crossover = !self.no_crossover && self.min_rec.is_none() && self.max_rec.is_none();
        let mut rows = Vec::new();
        let mut kb = lo_kb;
        while kb <= hi_kb {
            let first = if crossover && kb > 16 * 1024 {
                lo_rec.max(64 * 1024)
            } else {
                lo_rec
            };
            let mut rec = first;
            while rec <= hi_rec && rec <= kb * 1024 {
                rows.push((kb, rec));
                rec *= 2;
            }
            kb *= 2;
        }
        rows
    }

    /// Rows of several `-s` and `-r` values: every size with every record that fits.
    fn range_rows(&self) -> Vec<(u64, u64)> {
        let sizes = if self.sizes_kb.is_empty() {
            vec![IOZONE_DEFAULT_KB]
        } else {
            self.sizes_kb.clone()
        };
        let recs = if self.reclens.is_empty() {
            vec![4096]
        } else {
            self.reclens.clone()
        };
        let mut rows = Vec::new();
        for &kb in &sizes {
            for &r in recs.iter().filter(|r| **r <= kb * 1024) {
                rows.push((kb, r));
            }
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<IozoneSpec, IozoneError> {
        let v: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        parse_iozone_args(&v)
    }

    #[test]
    fn seed_003_command_line() {
        let s = p("-s 64 -e -f /mnt/test/iozone.0 -i 0").unwrap();
        assert_eq!(s.sizes_kb, vec![64]);
        assert!(s.include_fsync);
        assert_eq!(s.file.as_deref(), Some("/mnt/test/iozone.0"));
        assert_eq!(s.tests, vec![0]);
        assert_eq!(s.rows(), vec![(64, 4096)]);
    }

    #[test]
    fn every_option() {
        let s = p("-s 64m -r 4k -i 0 -i 1 -i 2 -e -c -I -o -w -R -O -f /mnt/test/f").unwrap();
        assert_eq!(s.sizes_kb, vec![65536]);
        assert_eq!(s.reclens, vec![4096]);
        assert_eq!(s.tests, vec![0, 1, 2]);
        assert!(s.include_fsync && s.include_close && s.direct && s.osync);
        assert!(s.no_unlink && s.excel && s.ops);
        let a = p("-a -n 64k -g 256k -y 4k -q 64k -i 0 -i 1 -R -f /mnt/test/x").unwrap();
        assert!(a.is_auto());
        assert_eq!(a.rows().len(), 15, "{:?}", a.rows());
        assert_eq!(a.rows()[0], (64, 4096));
        assert_eq!(a.rows()[14], (256, 65536));
        let t = p("-t 2 -s 16m -r 64k -i 0 -F /mnt/test/t1 /mnt/test/t2").unwrap();
        assert_eq!(t.threads, Some(2));
        assert_eq!(t.files, vec!["/mnt/test/t1", "/mnt/test/t2"]);
        // Attached values and clustered flags, as getopt takes them.
        let c = p("-s64 -r8 -ei0 -f/mnt/test/f").unwrap();
        assert_eq!((c.sizes_kb[0], c.reclens[0]), (64, 8192));
        assert!(c.include_fsync);
        assert_eq!(c.tests, vec![0]);
        assert_eq!(p("-s 1g").unwrap().sizes_kb, vec![1 << 20]);
        assert_eq!(p("-s 1g -r 1m").unwrap().reclens, vec![1 << 20]);
    }

    #[test]
    fn auto_mode_crossover() {
        let a = p("-a -g 64m -f /mnt/test/x").unwrap();
        let big: Vec<_> = a.rows().into_iter().filter(|r| r.0 == 65536).collect();
        assert_eq!(big.first(), Some(&(65536, 65536)));
        let z = p("-a -z -g 64m -f /mnt/test/x").unwrap();
        let big: Vec<_> = z.rows().into_iter().filter(|r| r.0 == 65536).collect();
        assert_eq!(big.first(), Some(&(65536, 4096)));
    }

    #[test]
    fn errors_name_the_option() {
        for (line, opt, text) in [
            ("-s", "-s", "option requires an argument -- 's'"),
            ("-s 64x", "-s", "invalid file size"),
            ("-s 0", "-s", "must be positive"),
            ("-s 99999999999999999999", "-s", "too large"),
            ("-s 9999999999999999g", "-s", "too large"),
            ("-r 32m", "-r", "maximum buffer size"),
            ("-r abc", "-r", "invalid record size"),
            ("-i 13", "-i", "no such test"),
            ("-i x", "-i", "unsigned number"),
            ("-t 300", "-t", "maximum streams"),
            ("-F a b", "-F", "must specify -t N before -F"),
            ("-t 3 -F a b", "-F", "not enough filenames"),
            ("-t 1 -f a", "-f", "You must use -F"),
            ("-f a -t 1 -F b", "-F", "mutually exclusive"),
            ("-a -t 2 -F a b", "-t", "Can not mix"),
            ("-a -f a -y 64k -q 4k", "-y", "minimum record size"),
            ("-s 4 -r 8", "-r", "greater than filesize"),
            ("-B", "-B", "mmap"),
            ("-9", "-9", "invalid option -- '9'"),
            ("foo", "foo", "unexpected argument"),
        ] {
            let e = p(line).expect_err(line);
            assert_eq!(e.option, opt, "{line}: {e}");
            assert!(e.to_string().contains(text), "{line}: {e}");
            assert!(e.to_string().starts_with("iozone: "), "{e}");
        }
    }
}
