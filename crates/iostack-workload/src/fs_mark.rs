//! fs_mark 3.3 command-line parsing (`fs_mark.c` `process_args`).
//!
//! fs_mark reads numbers with `atoi`, so `-n 10x` is 10 files there; iostack
//! refuses such a number instead of guessing.

use std::fmt;

/// `MAX_IO_BUFFER_SIZE`: the largest `-w`.
pub const FSMARK_MAX_IO: u64 = 1024 * 1024;
/// `MAX_FILES`: the most files per thread and iteration.
pub const FSMARK_MAX_FILES: u64 = 1_000_000;
/// `MAX_THREADS`.
pub const FSMARK_MAX_THREADS: u64 = 64;
/// `FILENAME_SIZE`: the longest `-p`.
pub const FSMARK_NAME_SIZE: u64 = 128;
/// `MAX_NAME_PATH`: a `-d` path must be shorter.
pub const FSMARK_MAX_PATH: usize = 1000;

/// The `-S` sync methods' header strings (`sync_policy_string`).
pub const FSMARK_SYNC_STRINGS: [&str; 7] = [
    "NO SYNC: Test does not issue sync() or fsync() calls.",
    "INBAND FSYNC: fsync() per file in write loop.",
    "SYSTEM SYNC/SINGLE FSYNC: Issue sync() after main write loop and 1 file fsync() per subdirectory.",
    "POST REVERSE: Reopen and fsync() each file in reverse order after main write loop.",
    "SYNC POST REVERSE: Issue sync() and then reopen and fsync() each file in reverse order after main write loop.",
    "POST: Reopen and fsync() each file in order after main write loop.",
    "SYNC POST: Issue sync() and then reopen and fsync() each file in order after main write loop.",
];

/// An error in an fs_mark command line, naming the option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsMarkError {
    /// The option as written (`-S`), or empty.
    pub option: String,
    /// The message, in fs_mark's words where it has some.
    pub message: String,
}

impl fmt::Display for FsMarkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fs_mark: {}", self.message)
    }
}

impl std::error::Error for FsMarkError {}

fn err(option: &str, message: String) -> FsMarkError {
    FsMarkError {
        option: option.to_string(),
        message,
    }
}

/// How files are spread over subdirectories (`dir_policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DirPolicy {
    /// No subdirectories.
    #[default]
    None,
    /// `-N M`: M files in each subdirectory in turn.
    RoundRobin(u64),
    /// `-D` alone: subdirectory by a hash of the time, changing every 180 s.
    TimeHash,
}

/// A parsed fs_mark command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsMarkSpec {
    /// The arguments as given (without the program name), for the header.
    pub argv: Vec<String>,
    /// `-d`, in order; thread `i` works in `dirs[i % dirs.len()]`.
    pub dirs: Vec<String>,
    /// `-n`: files per thread per iteration.
    pub files: u64,
    /// `-s`: bytes per file.
    pub size: u64,
    /// `-w`: bytes per write().
    pub io_size: u64,
    /// `-L`: iterations.
    pub loops: u64,
    /// `-k` (or implied by `-L`, `-F`): keep the files.
    pub keep: bool,
    /// `-F`: loop until the file system is full.
    pub fill: bool,
    /// `-S`: sync method 0..=6.
    pub sync: u8,
    /// `-D`: subdirectories (0: none).
    pub subdirs: u64,
    /// Subdirectory policy (`-N` or `-D`).
    pub policy: DirPolicy,
    /// Threads (at least one per directory; `-t`).
    pub threads: u64,
    /// `-p`: file name length.
    pub name_len: u64,
    /// `-r`: random bytes at the end of a name.
    pub rand_len: u64,
    /// `-v`: per-system-call statistics.
    pub verbose: bool,
    /// `-l`: log file.
    pub log: Option<String>,
}

impl Default for FsMarkSpec {
    fn default() -> Self {
        FsMarkSpec {
            argv: Vec::new(),
            dirs: Vec::new(),
            files: 1000,
            size: 50 * 1024,
            io_size: 16 * 1024,
            loops: 1,
            keep: false,
            fill: false,
            sync: 1,
            subdirs: 0,
            policy: DirPolicy::None,
            threads: 1,
            name_len: 40,
            rand_len: 24,
            verbose: false,
            log: None,
        }
    }
}

/// Parse fs_mark's arguments (without the program name).
pub fn parse_fs_mark_args(args: &[String]) -> Result<FsMarkSpec, FsMarkError> {
    let mut s = FsMarkSpec {
        argv: args.to_vec(),
        ..FsMarkSpec::default()
    };
    let mut threads_given = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let body = match a.strip_prefix('-') {
            Some(b) if !b.is_empty() => b,
            _ => return Err(err(a, format!("unexpected argument '{a}'"))),
        };
        let chars: Vec<char> = body.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            k += 1;
            if !"rSNDdlLnpstw".contains(c) {
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
            if c == 't' {
                threads_given = Some(number(&format!("-{c}"), &val)?);
            }
            with_arg(&mut s, c, &val)?;
        }
    }
    finish(&mut s, threads_given)?;
    Ok(s)
}

fn flag(s: &mut FsMarkSpec, c: char) -> Result<(), FsMarkError> {
    match c {
        'v' => s.verbose = true,
        'k' => s.keep = true,
        'F' => {
            s.fill = true;
            s.keep = true;
        }
        'h' => return Err(err("-h", usage())),
        _ => {
            let opt = format!("-{c}");
            return Err(err(&opt, format!("invalid option -- '{c}'\n{}", usage())));
        }
    }
    Ok(())
}

/// fs_mark's usage text (first lines).
fn usage() -> String {
    "Usage: fs_mark\n\t-h <print usage and exit>\n\t-k <keep files after each iteration>\n\t\
     -F <run until FS full>\n\t-S Sync Method (0:No Sync, 1:fsyncBeforeClose, 2:sync/1_fsync, \
     3:PostReverseFsync, 4:syncPostReverseFsync, 5:PostFsync, 6:syncPostFsync)\n\t\
     [-D number (of subdirectories)]\n\t[-N number (of files in each subdirectory in Round \
     Robin mode)]\n\t[-d dir1 ... -d dirN]\n\t[-l log_file_name]\n\t[-L number (of \
     iterations)]\n\t[-n number (of files per iteration)]\n\t[-p number (of total bytes file \
     names)]\n\t[-r number (of random bytes in file names)]\n\t[-s byte_count (size in bytes \
     of each file)]\n\t[-t number (of total threads)]\n\t[-w number (of bytes per write() \
     syscall)]"
        .to_string()
}

/// A plain unsigned number.
fn number(opt: &str, v: &str) -> Result<u64, FsMarkError> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err(opt, format!("{opt} {v}: expected an unsigned number")));
    }
    v.parse::<u64>()
        .ok()
        .filter(|n| *n <= i32::MAX as u64)
        .ok_or_else(|| {
            err(
                opt,
                format!("{opt} {v}: number too large (at most {})", i32::MAX),
            )
        })
}

fn with_arg(s: &mut FsMarkSpec, c: char, v: &str) -> Result<(), FsMarkError> {
    let opt = format!("-{c}");
    let n = || number(&opt, v);
    match c {
        'd' => {
            if s.dirs.len() as u64 >= FSMARK_MAX_THREADS {
                let m = format!("Max number of threads (and directories) is {FSMARK_MAX_THREADS}");
                return Err(err(&opt, m));
            }
            if v.len() >= FSMARK_MAX_PATH {
                let m = format!(
                    "{v} directory pathname too long (must be less than {FSMARK_MAX_PATH} bytes)"
                );
                return Err(err(&opt, m));
            }
            s.dirs.push(v.to_string());
        }
        'D' => {
            s.subdirs = n()?;
            if s.subdirs < 2 {
                return Err(err(
                    &opt,
                    "Number of subdirs needs to be greater than 1".into(),
                ));
            }
            if s.policy == DirPolicy::None {
                s.policy = DirPolicy::TimeHash;
            }
        }
        'N' => s.policy = DirPolicy::RoundRobin(n()?),
        'L' => {
            s.loops = n()?;
            s.keep = true;
        }
        'n' => {
            s.files = n()?;
            if s.files > FSMARK_MAX_FILES {
                return Err(err(&opt, format!("Max files is {FSMARK_MAX_FILES}")));
            }
        }
        'p' => {
            s.name_len = n()?;
            if s.name_len > FSMARK_NAME_SIZE {
                return Err(err(
                    &opt,
                    format!("Max filename size is {FSMARK_NAME_SIZE}"),
                ));
            }
        }
        's' => s.size = n()?,
        'r' => s.rand_len = n()?,
        'S' => {
            let m = n()?;
            if m > 6 {
                return Err(err(
                    &opt,
                    format!("-S {v}: sync method must be 0..6\n{}", usage()),
                ));
            }
            s.sync = m as u8;
        }
        't' => {
            s.threads = n()?;
            if s.threads > FSMARK_MAX_THREADS {
                return Err(err(&opt, format!("Max threads is {FSMARK_MAX_THREADS}")));
            }
        }
        'w' => {
            s.io_size = n()?;
            if s.io_size > FSMARK_MAX_IO {
                return Err(err(&opt, format!("MAX IO buffer size is {FSMARK_MAX_IO}")));
            }
        }
        _ => s.log = Some(v.to_string()),
    }
    Ok(())
}

/// The checks after the option loop, and the thread count.
fn finish(s: &mut FsMarkSpec, threads: Option<u64>) -> Result<(), FsMarkError> {
    if s.dirs.is_empty() {
        let m = "Must specify at least one directory with -d switch".to_string();
        return Err(err("-d", m));
    }
    if s.subdirs == 0 && matches!(s.policy, DirPolicy::RoundRobin(n) if n > 0) {
        let m = "Must specify at more than 1 subdirectory with -D switch for -N \
                 num_per_subdir to make sense"
            .to_string();
        return Err(err("-N", m));
    }
    if s.rand_len > s.name_len {
        let m = format!(
            "-r {}: more random bytes than the {}-byte name (-p)",
            s.rand_len, s.name_len
        );
        return Err(err("-r", m));
    }
    if s.io_size == 0 {
        return Err(err(
            "-w",
            "-w 0: a write of 0 bytes never ends the file".into(),
        ));
    }
    let ndirs = s.dirs.len() as u64;
    let t = threads.unwrap_or(1);
    if ndirs > t {
        s.threads = ndirs;
    } else if t % ndirs != 0 {
        let m = format!(
            "Threads ({t}) must be an even multiple the number of directories ({ndirs}) \
             and less than {FSMARK_MAX_THREADS} "
        );
        return Err(err("-t", m));
    } else {
        s.threads = t;
    }
    Ok(())
}

impl FsMarkSpec {
    /// The directory of thread `t` (threads beyond the directories share them).
    pub fn dir_of(&self, t: u64) -> &str {
        &self.dirs[(t % self.dirs.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<FsMarkSpec, FsMarkError> {
        let v: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        parse_fs_mark_args(&v)
    }

    #[test]
    fn seed_003_command_line() {
        let s = p("-S 1 -D 100 -N 1000 -d /mnt/test/fs_mark -s 65536 -t 1 -w 4096").unwrap();
        assert_eq!(s.sync, 1);
        assert_eq!(s.subdirs, 100);
        assert_eq!(s.policy, DirPolicy::RoundRobin(1000));
        assert_eq!(s.dirs, vec!["/mnt/test/fs_mark"]);
        assert_eq!(
            (s.size, s.io_size, s.threads, s.files),
            (65536, 4096, 1, 1000)
        );
        assert!(!s.keep);
    }

    #[test]
    fn every_option() {
        let s = p("-d /a -d /b -n 100 -s 0 -w 8192 -L 3 -S 5 -D 4 -p 60 -r 20 -v -l /x").unwrap();
        assert_eq!(s.dirs.len(), 2);
        assert_eq!(s.threads, 2);
        assert_eq!((s.files, s.size, s.io_size, s.loops), (100, 0, 8192, 3));
        assert!(s.keep && s.verbose);
        assert_eq!(s.sync, 5);
        assert_eq!(s.policy, DirPolicy::TimeHash);
        assert_eq!((s.name_len, s.rand_len), (60, 20));
        assert_eq!(s.log.as_deref(), Some("/x"));
        let f = p("-d /a -F -k -t 4").unwrap();
        assert!(f.fill && f.keep);
        assert_eq!(f.threads, 4);
        assert_eq!(f.dir_of(3), "/a");
        assert_eq!(p("-d/a -S0 -kv").unwrap().sync, 0);
    }

    #[test]
    fn errors_name_the_option() {
        for (line, opt, text) in [
            ("-d", "-d", "requires an argument"),
            ("-n 10", "-d", "at least one directory"),
            ("-d /a -D 1", "-D", "greater than 1"),
            ("-d /a -N 10", "-N", "more than 1 subdirectory"),
            ("-d /a -n 1000001", "-n", "Max files"),
            ("-d /a -n 10x", "-n", "unsigned number"),
            ("-d /a -p 200", "-p", "Max filename size"),
            ("-d /a -r 50", "-r", "random bytes"),
            ("-d /a -S 7", "-S", "sync method"),
            ("-d /a -t 65", "-t", "Max threads"),
            ("-d /a -d /b -t 3", "-t", "even multiple"),
            ("-d /a -w 2000000", "-w", "MAX IO buffer size"),
            ("-d /a -w 0", "-w", "0 bytes"),
            ("-d /a -s 99999999999", "-s", "too large"),
            ("-d /a -q", "-q", "invalid option"),
            ("-d /a -h", "-h", "Usage: fs_mark"),
            ("-d /a junk", "junk", "unexpected argument"),
        ] {
            let e = p(line).expect_err(line);
            assert_eq!(e.option, opt, "{line}: {e}");
            assert!(e.to_string().contains(text), "{line}: {e}");
            assert!(e.to_string().starts_with("fs_mark: "), "{e}");
        }
    }
}
