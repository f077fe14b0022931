//! GNU dd (coreutils 9.1) operand parsing.

use crate::error::DdError;

/// `iflag=` / `oflag=` symbols (those GNU dd accepts on Linux).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DdFlags {
    /// O_APPEND.
    pub append: bool,
    /// O_DIRECT.
    pub direct: bool,
    /// O_DIRECTORY.
    pub directory: bool,
    /// O_DSYNC.
    pub dsync: bool,
    /// O_SYNC.
    pub sync: bool,
    /// O_NOATIME.
    pub noatime: bool,
    /// Drop cache (posix_fadvise DONTNEED).
    pub nocache: bool,
    /// O_NOCTTY.
    pub noctty: bool,
    /// O_NOFOLLOW.
    pub nofollow: bool,
    /// O_NONBLOCK.
    pub nonblock: bool,
    /// Accumulate full input blocks (input only).
    pub fullblock: bool,
    /// `count=` counts bytes (input only).
    pub count_bytes: bool,
    /// `skip=` counts bytes (input only).
    pub skip_bytes: bool,
    /// `seek=` counts bytes (output only).
    pub seek_bytes: bool,
}

/// `conv=` symbols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DdConv {
    /// EBCDIC to ASCII.
    pub ascii: bool,
    /// ASCII to EBCDIC.
    pub ebcdic: bool,
    /// ASCII to alternate EBCDIC.
    pub ibm: bool,
    /// Newline-terminated records to cbs-sized blocks.
    pub block: bool,
    /// cbs-sized blocks to newline-terminated records.
    pub unblock: bool,
    /// Lower case.
    pub lcase: bool,
    /// Upper case.
    pub ucase: bool,
    /// Seek over all-NUL output blocks.
    pub sparse: bool,
    /// Swap byte pairs.
    pub swab: bool,
    /// Continue after read errors.
    pub noerror: bool,
    /// Do not create the output file.
    pub nocreat: bool,
    /// Fail if the output file exists.
    pub excl: bool,
    /// Do not truncate the output file.
    pub notrunc: bool,
    /// Pad input blocks to ibs.
    pub sync: bool,
    /// fdatasync the output before finishing.
    pub fdatasync: bool,
    /// fsync the output before finishing.
    pub fsync: bool,
}

/// `status=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DdStatus {
    /// Records in/out and the transfer line (no `status=`).
    #[default]
    Default,
    /// `none`: print nothing but errors.
    None,
    /// `noxfer`: omit the transfer statistics line.
    Noxfer,
    /// `progress`: periodic progress lines.
    Progress,
}

/// A parsed dd command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DdSpec {
    /// `if=` (None: stdin).
    pub input: Option<String>,
    /// `of=` (None: stdout).
    pub output: Option<String>,
    /// Effective input block size (`bs=` overrides `ibs=`; default 512).
    pub ibs: u64,
    /// Effective output block size (`bs=` overrides `obs=`; default 512).
    pub obs: u64,
    /// `bs=` if given.
    pub bs: Option<u64>,
    /// `cbs=` if given.
    pub cbs: Option<u64>,
    /// `count=` as given (blocks, or bytes when `iflag.count_bytes`).
    pub count: Option<u64>,
    /// `skip=`/`iseek=` (blocks of ibs, or bytes when `iflag.skip_bytes`).
    pub skip: u64,
    /// `seek=`/`oseek=` (blocks of obs, or bytes when `oflag.seek_bytes`).
    pub seek: u64,
    /// `iflag=` (a number ending in `B` for count/skip sets count_bytes/skip_bytes).
    pub iflag: DdFlags,
    /// `oflag=` (a seek ending in `B` sets seek_bytes).
    pub oflag: DdFlags,
    /// `conv=`.
    pub conv: DdConv,
    /// `status=`.
    pub status: DdStatus,
}

impl DdSpec {
    /// Bytes skipped on input before copying.
    pub fn skip_offset(&self) -> u64 {
        if self.iflag.skip_bytes {
            self.skip
        } else {
            self.skip.saturating_mul(self.ibs)
        }
    }

    /// Byte offset of the first output write.
    pub fn seek_offset(&self) -> u64 {
        if self.oflag.seek_bytes {
            self.seek
        } else {
            self.seek.saturating_mul(self.obs)
        }
    }

    /// Upper bound on bytes read (None: until end of input).
    pub fn input_limit(&self) -> Option<u64> {
        self.count.map(|c| {
            if self.iflag.count_bytes {
                c
            } else {
                c.saturating_mul(self.ibs)
            }
        })
    }
}

const INTMAX: u64 = i64::MAX as u64;

/// gnulib `xstrtoumax` with dd's suffixes `bcEGkKMPTwYZ0`. Returns the value and
/// the unparsed rest, or `Err(overflow)` for a hard failure.
#[derive(Debug, PartialEq)]
enum Xs {
    Ok(u64, usize),
    /// Value parsed, then an invalid suffix character at byte offset.
    BadSuffix(u64, usize, bool),
    Invalid,
    Overflow,
}

fn xstrtoumax(s: &str) -> Xs {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    if b.get(i) == Some(&b'-') {
        return Xs::Invalid;
    }
    if b.get(i) == Some(&b'+') {
        i += 1;
    }
    let start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    const VALID: &[u8] = b"bcEGkKMPTwYZ";
    let mut overflow = false;
    let mut val: u64 = if i == start {
        match b.get(i) {
            Some(c) if VALID.contains(c) => 1,
            _ => return Xs::Invalid,
        }
    } else {
        match s[start..i].parse::<u64>() {
            Ok(v) => v,
            Err(_) => {
                overflow = true;
                u64::MAX
            }
        }
    };
    if i == b.len() {
        return if overflow {
            Xs::Overflow
        } else {
            Xs::Ok(val, i)
        };
    }
    let c = b[i];
    if !VALID.contains(&c) {
        return Xs::BadSuffix(val, i, overflow);
    }
    let mut base: u64 = 1024;
    let mut used = 1;
    match b.get(i + 1) {
        Some(b'i') if b.get(i + 2) == Some(&b'B') => used += 2,
        Some(b'B' | b'D') => {
            base = 1000;
            used += 1;
        }
        _ => {}
    }
    let (mult, pow) = match c {
        b'b' => (512, 1),
        b'c' => (1, 1),
        b'w' => (2, 1),
        b'k' | b'K' => (base, 1),
        b'M' => (base, 2),
        b'G' => (base, 3),
        b'T' => (base, 4),
        b'P' => (base, 5),
        b'E' => (base, 6),
        b'Z' => (base, 7),
        _ => (base, 8), // Y
    };
    for _ in 0..pow {
        match val.checked_mul(mult) {
            Some(v) => val = v,
            None => {
                overflow = true;
                val = u64::MAX;
            }
        }
    }
    i += used;
    if i < b.len() {
        return Xs::BadSuffix(val, i, overflow);
    }
    if overflow {
        Xs::Overflow
    } else {
        Xs::Ok(val, i)
    }
}

/// dd's `parse_integer`: a number with suffixes, an optional trailing `B`, and one
/// optional `xN` multiplication (`2x512`).
fn parse_dd_number(s: &str) -> Result<u64, bool> {
    let (n, rest_at, mut overflow) = match xstrtoumax(s) {
        Xs::Ok(v, _) => return if v > INTMAX { Err(true) } else { Ok(v) },
        Xs::Overflow => return Err(true),
        Xs::Invalid => return Err(false),
        Xs::BadSuffix(v, at, o) => (v, at, o),
    };
    let b = s.as_bytes();
    let mut at = rest_at;
    if b[at] == b'B' && at > 0 && b[at - 1] != b'B' {
        at += 1;
        if at == b.len() {
            return if overflow || n > INTMAX {
                Err(true)
            } else {
                Ok(n)
            };
        }
    }
    if b[at] == b'x' && !(at > 0 && b[at - 1] == b'B' && s[at + 1..].contains('B')) {
        let o = match xstrtoumax(&s[at + 1..]) {
            Xs::Ok(v, _) => v,
            Xs::Overflow => {
                overflow = true;
                u64::MAX
            }
            _ => return Err(false),
        };
        return match n.checked_mul(o) {
            Some(r) if r <= INTMAX && !(r != 0 && overflow) => Ok(r),
            _ => Err(true),
        };
    }
    Err(false)
}

/// dd's `operand_matches`: `name` equals `pattern` up to `delim` or the end.
fn operand_matches(s: &str, pattern: &str, delim: char) -> bool {
    match s.strip_prefix(pattern) {
        Some(rest) => rest.is_empty() || rest.starts_with(delim),
        None => false,
    }
}

fn parse_flags(val: &str, what: &str, operand: &str, flags: &mut DdFlags) -> Result<(), DdError> {
    for sym in val.split(',') {
        match sym {
            "append" => flags.append = true,
            "direct" => flags.direct = true,
            "directory" => flags.directory = true,
            "dsync" => flags.dsync = true,
            "sync" => flags.sync = true,
            "noatime" => flags.noatime = true,
            "nocache" => flags.nocache = true,
            "noctty" => flags.noctty = true,
            "nofollow" => flags.nofollow = true,
            "nonblock" => flags.nonblock = true,
            "fullblock" => flags.fullblock = true,
            "count_bytes" => flags.count_bytes = true,
            "skip_bytes" => flags.skip_bytes = true,
            "seek_bytes" => flags.seek_bytes = true,
            _ => {
                return Err(DdError {
                    operand: operand.to_string(),
                    message: format!("{what}: '{sym}'"),
                })
            }
        }
    }
    Ok(())
}

fn parse_conv(val: &str, operand: &str, c: &mut DdConv) -> Result<(), DdError> {
    for sym in val.split(',') {
        match sym {
            "ascii" => {
                c.ascii = true;
                c.unblock = true;
            }
            "ebcdic" => {
                c.ebcdic = true;
                c.block = true;
            }
            "ibm" => {
                c.ibm = true;
                c.block = true;
            }
            "block" => c.block = true,
            "unblock" => c.unblock = true,
            "lcase" => c.lcase = true,
            "ucase" => c.ucase = true,
            "sparse" => c.sparse = true,
            "swab" => c.swab = true,
            "noerror" => c.noerror = true,
            "nocreat" => c.nocreat = true,
            "excl" => c.excl = true,
            "notrunc" => c.notrunc = true,
            "sync" => c.sync = true,
            "fdatasync" => c.fdatasync = true,
            "fsync" => c.fsync = true,
            _ => {
                return Err(DdError {
                    operand: operand.to_string(),
                    message: format!("invalid conversion: '{sym}'"),
                })
            }
        }
    }
    Ok(())
}

/// Parse GNU dd operands (`if=... of=... bs=64k count=1 iflag=direct`).
///
/// ```
/// use iostack_workload::parse_dd_args;
/// let dd = parse_dd_args(["if=/mnt/test/test-dd1", "of=/dev/null", "iflag=direct", "bs=64k", "count=1"]).unwrap();
/// assert_eq!(dd.input.as_deref(), Some("/mnt/test/test-dd1"));
/// assert_eq!((dd.ibs, dd.obs, dd.count), (65536, 65536, Some(1)));
/// assert!(dd.iflag.direct);
/// assert_eq!(parse_dd_args(["bs=2x512"]).unwrap().ibs, 1024);
/// assert!(parse_dd_args(["bs=4q"]).is_err());
/// ```
pub fn parse_dd_args<I, S>(args: I) -> Result<DdSpec, DdError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut spec = DdSpec {
        input: None,
        output: None,
        ibs: 0,
        obs: 0,
        bs: None,
        cbs: None,
        count: None,
        skip: 0,
        seek: 0,
        iflag: DdFlags::default(),
        oflag: DdFlags::default(),
        conv: DdConv::default(),
        status: DdStatus::Default,
    };
    let (mut count_b, mut skip_b, mut seek_b) = (false, false, false);
    for arg in args {
        let op = arg.as_ref();
        let unrecognized = || DdError {
            operand: op.to_string(),
            message: format!("unrecognized operand '{op}'"),
        };
        let Some(eq) = op.find('=') else {
            return Err(unrecognized());
        };
        let val = &op[eq + 1..];
        if operand_matches(op, "if", '=') {
            spec.input = Some(val.to_string());
        } else if operand_matches(op, "of", '=') {
            spec.output = Some(val.to_string());
        } else if operand_matches(op, "conv", '=') {
            parse_conv(val, op, &mut spec.conv)?;
        } else if operand_matches(op, "iflag", '=') {
            parse_flags(val, "invalid input flag", op, &mut spec.iflag)?;
        } else if operand_matches(op, "oflag", '=') {
            parse_flags(val, "invalid output flag", op, &mut spec.oflag)?;
        } else if operand_matches(op, "status", '=') {
            for sym in val.split(',') {
                spec.status = match sym {
                    "none" => DdStatus::None,
                    "noxfer" => DdStatus::Noxfer,
                    "progress" => DdStatus::Progress,
                    _ => {
                        return Err(DdError {
                            operand: op.to_string(),
                            message: format!("invalid status level: '{sym}'"),
                        })
                    }
                };
            }
        } else {
            let name = &op[..eq];
            let is_block = matches!(name, "ibs" | "obs" | "bs" | "cbs");
            if !is_block && !matches!(name, "skip" | "iseek" | "seek" | "oseek" | "count") {
                return Err(unrecognized());
            }
            let has_b = val.contains('B');
            let bad = |overflow: bool| DdError {
                operand: op.to_string(),
                message: if overflow {
                    format!("invalid number: '{val}': Value too large for defined data type")
                } else {
                    format!("invalid number: '{val}'")
                },
            };
            let n = parse_dd_number(val).map_err(bad)?;
            if is_block && n < 1 {
                return Err(bad(false));
            }
            if is_block && n > INTMAX - 1 {
                return Err(bad(true));
            }
            match name {
                "ibs" => spec.ibs = n,
                "obs" => spec.obs = n,
                "bs" => spec.bs = Some(n),
                "cbs" => spec.cbs = Some(n),
                "skip" | "iseek" => {
                    spec.skip = n;
                    skip_b = has_b;
                }
                "seek" | "oseek" => {
                    spec.seek = n;
                    seek_b = has_b;
                }
                _ => {
                    spec.count = Some(n);
                    count_b = has_b;
                }
            }
        }
    }
    if let Some(bs) = spec.bs {
        spec.ibs = bs;
        spec.obs = bs;
    }
    if spec.ibs == 0 {
        spec.ibs = 512;
    }
    if spec.obs == 0 {
        spec.obs = 512;
    }
    let combine = |msg: &str| DdError {
        operand: String::new(),
        message: msg.to_string(),
    };
    if spec.oflag.fullblock {
        return Err(DdError {
            operand: "oflag=fullblock".into(),
            message: "invalid output flag: 'fullblock'".into(),
        });
    }
    spec.iflag.skip_bytes |= skip_b;
    spec.iflag.count_bytes |= count_b;
    spec.oflag.seek_bytes |= seek_b;
    let c = &spec.conv;
    if [c.ascii, c.ebcdic, c.ibm].iter().filter(|b| **b).count() > 1 {
        return Err(combine("cannot combine any two of {ascii,ebcdic,ibm}"));
    }
    if spec.cbs.is_some() && c.block && c.unblock {
        return Err(combine("cannot combine block and unblock"));
    }
    if c.lcase && c.ucase {
        return Err(combine("cannot combine lcase and ucase"));
    }
    if c.excl && c.nocreat {
        return Err(combine("cannot combine excl and nocreat"));
    }
    if (spec.iflag.direct && spec.iflag.nocache) || (spec.oflag.direct && spec.oflag.nocache) {
        return Err(combine("cannot combine direct and nocache"));
    }
    if spec.cbs.is_none() {
        spec.conv.block = false;
        spec.conv.unblock = false;
    }
    Ok(spec)
}

/// Parse a dd command line (whitespace-separated operands; a leading `dd` word is
/// skipped). No shell quoting is interpreted.
pub fn parse_dd_command_line(line: &str) -> Result<DdSpec, DdError> {
    let mut words: Vec<&str> = line.split_whitespace().collect();
    if words
        .first()
        .is_some_and(|w| *w == "dd" || w.ends_with("/dd"))
    {
        words.remove(0);
    }
    parse_dd_args(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_dd_number("1"), Ok(1));
        assert_eq!(parse_dd_number("1k"), Ok(1024));
        assert_eq!(parse_dd_number("1kB"), Ok(1000));
        assert_eq!(parse_dd_number("1KiB"), Ok(1024));
        assert_eq!(parse_dd_number("1M"), Ok(1 << 20));
        assert_eq!(parse_dd_number("1MB"), Ok(1_000_000));
        assert_eq!(parse_dd_number("1b"), Ok(512));
        assert_eq!(parse_dd_number("1bB"), Ok(512));
        assert_eq!(parse_dd_number("1w"), Ok(2));
        assert_eq!(parse_dd_number("1c"), Ok(1));
        assert_eq!(parse_dd_number("100B"), Ok(100));
        assert_eq!(parse_dd_number("2x512"), Ok(1024));
        assert_eq!(parse_dd_number("1Bx2"), Ok(2));
        assert_eq!(parse_dd_number("2xK"), Ok(2048));
        assert_eq!(parse_dd_number("K"), Ok(1024));
        assert_eq!(parse_dd_number("0x10"), Ok(0));
        assert_eq!(parse_dd_number("1E"), Ok(1 << 60));
        assert_eq!(parse_dd_number("+1"), Ok(1));
        assert_eq!(parse_dd_number(" 1"), Ok(1));
        assert_eq!(parse_dd_number("1KD"), Ok(1000));
        for bad in [
            "1m", "2x3x4", "-1", "1K2", "1Ki", "", "4q", "1x", "x2", "2xB", "1D", "1Q",
        ] {
            assert_eq!(parse_dd_number(bad), Err(false), "{bad}");
        }
        for big in ["1Z", "9223372036854775808", "18446744073709551616", "1Y"] {
            assert_eq!(parse_dd_number(big), Err(true), "{big}");
        }
    }
}
