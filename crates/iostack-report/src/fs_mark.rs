//! fs_mark 3.3's report (`fs_mark.c` `print_run_info`, `print_iteration_stats`):
//! the `#` header with the command line and settings, the table header and one
//! line per iteration.

/// One line of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct FsMarkLine {
    /// FSUse%: percent used of the first directory's file system.
    pub fs_use: u32,
    /// Files written so far by every thread.
    pub count: u64,
    /// File size in bytes.
    pub size: u64,
    pub files_per_sec: f64,
    pub app_overhead_us: u64,
}

/// The header's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsMarkHeader {
    /// `argv` as given, program name first.
    pub argv: Vec<String>,
    pub threads: u64,
    /// The ctime string of the start, without its newline.
    pub started: String,
    /// The `-S` method's string (`sync_policy_string`).
    pub sync_string: String,
    /// `Some((policy string, subdirectories, files or seconds, unit))` with
    /// subdirectories, `None` without.
    pub dirs: Option<(String, u64, u64, String)>,
    pub name_len: u64,
    pub rand_len: u64,
    pub size: u64,
    pub io_size: u64,
}

/// The header as fs_mark prints it on stdout (a blank line first).
pub fn header(h: &FsMarkHeader) -> String {
    let mut s = String::from("\n# ");
    for a in &h.argv {
        s.push_str(&format!(" {a} "));
    }
    s.push_str(&format!(
        "\n#\tVersion 3.3, {} thread(s) starting at {}\n",
        h.threads, h.started
    ));
    s.push_str(&format!("#\tSync method: {}\n", h.sync_string));
    match &h.dirs {
        Some((policy, n, per, unit)) => s.push_str(&format!(
            "#\tDirectories:  {policy} across {n} subdirectories with {per} {unit}.\n"
        )),
        None => s.push_str("#\tDirectories:  no subdirectories used\n"),
    }
    s.push_str(&format!(
        "#\tFile names: {} bytes long, ({} initial bytes of time stamp with {} random bytes at end of name)\n",
        h.name_len,
        h.name_len - h.rand_len.min(h.name_len),
        h.rand_len
    ));
    s.push_str(&format!(
        "#\tFiles info: size {} bytes, written with an IO size of {} bytes per write\n",
        h.size, h.io_size
    ));
    s.push_str(
        "#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.\n",
    );
    s.push('\n');
    s.push_str(&format!(
        "{:>6} {:>12} {:>12} {:>12} {:>16}\n",
        "FSUse%", "Count", "Size", "Files/sec", "App Overhead"
    ));
    s
}

/// One iteration's line: `"%6u %12u %12u %12.1f %16llu"`.
pub fn line(l: &FsMarkLine) -> String {
    format!(
        "{:6} {:12} {:12} {:12.1} {:16}\n",
        l.fs_use, l.count, l.size, l.files_per_sec, l.app_overhead_us
    )
}

/// The policy strings (`dir_policy_string`).
pub const DIR_POLICY_STRINGS: [&str; 3] = [
    "No subdirectories",
    "Round Robin between directories",
    "Time based hash between directories",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_format() {
        let l = FsMarkLine {
            fs_use: 69,
            count: 200,
            size: 4096,
            files_per_sec: 2709.5,
            app_overhead_us: 2543,
        };
        assert_eq!(
            line(&l),
            "    69          200         4096       2709.5             2543\n"
        );
    }
}
