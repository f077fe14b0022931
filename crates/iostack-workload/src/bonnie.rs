//! Bonnie 1.0 (Tim Bray, 1996) command-line parsing, with the seed-004 patch
//! (`bonnie-o_direct.c`, Andrea Arcangeli, April 2001): `Chunk` is 1 MiB, the
//! loop consumes an option's value (`dir = argv[next + 1], next++`), and
//! `-o_direct` (open the block tests' file with `O_DIRECT`) and `-fast` (skip
//! the seek test) are new.
//!
//! Bonnie reads `-s` with `atoi` and multiplies it by 2^20 in an `int`; iostack
//! refuses a size that is not a plain number, or that overflows there, instead
//! of guessing. An unknown option is Bonnie's `usage()`.

use std::fmt;

/// `Chunk` of the patched Bonnie: the block tests' read()/write() size.
pub const BONNIE_CHUNK: u64 = 1 << 20;
/// The largest `-s` whose bytes fit Bonnie's `int size` (`size *= 1024*1024`).
pub const BONNIE_MAX_MB: u64 = (i32::MAX as u64) >> 20;

/// The patched usage line.
pub const BONNIE_USAGE: &str =
    "usage: Bonnie [-d scratch-dir] [-s size-in-Mb] [-m machine-label] [-o_direct]";

/// An error in a Bonnie command line, naming the option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BonnieError {
    /// The option as written (`-s`), or the argument that is not one.
    pub option: String,
    /// What is wrong, with Bonnie's usage line where Bonnie would print it.
    pub message: String,
}

impl fmt::Display for BonnieError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bonnie: {}", self.message)
    }
}

impl std::error::Error for BonnieError {}

/// A parsed Bonnie command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BonnieSpec {
    /// `-d`: the scratch directory (default `.`).
    pub dir: String,
    /// `-s`: the file size in MiB (default 100).
    pub size_mb: u64,
    /// `-m`: the machine label of the report (default: none, printed blank).
    pub machine: Option<String>,
    /// `-o_direct`: the block tests (rewrite, block write, block read) open the
    /// file with `O_DIRECT`.
    pub o_direct: bool,
    /// `-fast`: skip the seek test.
    pub fast: bool,
}

impl BonnieSpec {
    /// The file Bonnie makes: `DIR/Bonnie.PID`.
    pub fn file(&self, pid: u32) -> String {
        format!("{}/Bonnie.{pid}", self.dir)
    }
    /// The size in bytes.
    pub fn bytes(&self) -> u64 {
        self.size_mb << 20
    }
}

fn err(option: &str, message: impl Into<String>) -> BonnieError {
    BonnieError {
        option: option.to_string(),
        message: message.into(),
    }
}

/// Parse Bonnie's arguments (without the program name), as the patched loop
/// in `main` does.
pub fn parse_bonnie_args(args: &[String]) -> Result<BonnieSpec, BonnieError> {
    let mut s = BonnieSpec {
        dir: ".".to_string(),
        size_mb: 100,
        machine: None,
        o_direct: false,
        fast: false,
    };
    let mut next = 0;
    while next < args.len() {
        let a = args[next].as_str();
        let Some(opt) = a.strip_prefix('-') else {
            return Err(err(a, format!("'{a}' is not an option; {BONNIE_USAGE}")));
        };
        match opt {
            "d" | "s" | "m" => {
                let Some(v) = args.get(next + 1) else {
                    return Err(err(a, format!("{a} needs a value; {BONNIE_USAGE}")));
                };
                match opt {
                    "d" => s.dir = dir_of(a, v)?,
                    "s" => s.size_mb = size_of(a, v)?,
                    _ => s.machine = Some(v.clone()),
                }
                next += 1;
            }
            "o_direct" => s.o_direct = true,
            "fast" => s.fast = true,
            _ => return Err(err(a, format!("unknown option {a}; {BONNIE_USAGE}"))),
        }
        next += 1;
    }
    Ok(s)
}

fn dir_of(a: &str, v: &str) -> Result<String, BonnieError> {
    if v.is_empty() {
        return Err(err(a, format!("{a}: empty directory")));
    }
    let d = v.trim_end_matches('/');
    Ok(if d.is_empty() { "/" } else { d }.to_string())
}

fn size_of(a: &str, v: &str) -> Result<u64, BonnieError> {
    let n: u64 = v.parse().map_err(|_| {
        err(
            a,
            format!("{a} {v}: the size must be a number of megabytes"),
        )
    })?;
    if n == 0 {
        return Err(err(a, format!("{a} {v}: the size must be at least 1 MB")));
    }
    if n > BONNIE_MAX_MB {
        return Err(err(
            a,
            format!(
                "{a} {v}: Bonnie 1.0 keeps the size in bytes in an int; at most \
                 {BONNIE_MAX_MB} MB"
            ),
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<BonnieSpec, BonnieError> {
        parse_bonnie_args(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn the_seeds_command_line() {
        let s = parse(&[
            "-s",
            "400",
            "-o_direct",
            "-fast",
            "-d",
            "/mnt/test/",
            "-m",
            "2way",
        ])
        .unwrap();
        assert_eq!(s.size_mb, 400);
        assert!(s.o_direct && s.fast);
        assert_eq!(s.dir, "/mnt/test");
        assert_eq!(s.machine.as_deref(), Some("2way"));
        assert_eq!(s.file(1000), "/mnt/test/Bonnie.1000");
        let d = parse(&[]).unwrap();
        assert_eq!((d.size_mb, d.dir.as_str(), d.o_direct), (100, ".", false));
    }

    #[test]
    fn errors_name_the_option() {
        for (args, opt, what) in [
            (&["-s"][..], "-s", "needs a value"),
            (&["-s", "10x"][..], "-s", "number of megabytes"),
            (&["-s", "0"][..], "-s", "at least 1 MB"),
            (&["-s", "4096"][..], "-s", "at most 2047 MB"),
            (&["-x"][..], "-x", "unknown option -x"),
            (&["400"][..], "400", "not an option"),
            (&["-d", ""][..], "-d", "empty directory"),
            (&["-m"][..], "-m", "needs a value"),
        ] {
            let e = parse(args).unwrap_err();
            assert_eq!(e.option, opt, "{args:?}");
            assert!(e.to_string().contains(what), "{args:?}: {e}");
            assert!(e.to_string().starts_with("Bonnie: "));
        }
    }
}
