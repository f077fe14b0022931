//! The job-file reader, mirroring fio 3.33's `__parse_jobs_ini` (init.c) and
//! `fio_options_parse` (options.c).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{ErrorKind, FioError};
use crate::number::eval_math;
use crate::options::{
    closest_option, find_engine_option, find_option, OptDef, OptKind, Scope, ENGINE_OPTIONS,
};
use crate::spec::{build_job, JobSpec};
use crate::state::OptState;

/// fio reads job files with `fgets(buf, 8192)`: longer lines are split.
const OPT_LEN_MAX: usize = 8192;
/// Include nesting limit (fio has none and recurses until it runs out of files).
const MAX_INCLUDE_DEPTH: usize = 32;

/// Everything outside the job file that parsing depends on. Passing it in keeps the
/// parser pure and deterministic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseEnv {
    /// Environment for `${VAR}` substitution. Unset variables become "".
    pub vars: BTreeMap<String, String>,
    /// Value of `$pagesize`.
    pub pagesize: u64,
    /// Value of `$mb_memory` (MiB of physical memory).
    pub mb_memory: u64,
    /// Value of `$ncpus` (configured CPUs).
    pub ncpus: u64,
    /// Directory relative file names (job file, includes) are resolved against.
    pub cwd: PathBuf,
    /// Virtual file system: when set, the job file and include files are read from
    /// this map (keys as resolved against `cwd`), never from disk.
    pub files: Option<BTreeMap<PathBuf, Vec<u8>>>,
}

impl Default for ParseEnv {
    fn default() -> Self {
        ParseEnv {
            vars: BTreeMap::new(),
            pagesize: 4096,
            mb_memory: 1024,
            ncpus: 1,
            cwd: PathBuf::from("."),
            files: None,
        }
    }
}

impl ParseEnv {
    /// An environment describing the running host: the process environment,
    /// the page size 4096, MiB of RAM from `/proc/meminfo` and the configured CPUs
    /// from `/sys/devices/system/cpu` (what fio uses for `$mb_memory`/`$ncpus`).
    /// This is the only impure constructor; tests and the simulator should prefer
    /// building a `ParseEnv` explicitly.
    pub fn host() -> Self {
        let mut env = ParseEnv {
            vars: std::env::vars().collect(),
            ..ParseEnv::default()
        };
        if let Ok(m) = std::fs::read_to_string("/proc/meminfo") {
            if let Some(kb) = m
                .lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
            {
                env.mb_memory = kb / 1024;
            }
        }
        if let Ok(rd) = std::fs::read_dir("/sys/devices/system/cpu") {
            let n = rd
                .filter_map(Result::ok)
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.len() > 3
                        && n.starts_with("cpu")
                        && n[3..].bytes().all(|c| c.is_ascii_digit())
                })
                .count();
            if n > 0 {
                env.ncpus = n as u64;
            }
        } else if let Ok(n) = std::thread::available_parallelism() {
            env.ncpus = n.get() as u64;
        }
        if let Ok(d) = std::env::current_dir() {
            env.cwd = d;
        }
        env
    }

    /// Set one `${VAR}`.
    pub fn with_var(mut self, k: &str, v: &str) -> Self {
        self.vars.insert(k.to_string(), v.to_string());
        self
    }

    fn resolve(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.cwd.join(p)
        }
    }

    fn exists(&self, p: &Path) -> bool {
        let r = self.resolve(p);
        match &self.files {
            Some(map) => map.contains_key(&r) || map.contains_key(p),
            None => r.exists(),
        }
    }

    fn read(&self, p: &Path) -> std::io::Result<Vec<u8>> {
        let r = self.resolve(p);
        match &self.files {
            Some(map) => map
                .get(&r)
                .or_else(|| map.get(p))
                .cloned()
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound)),
            None => std::fs::read(r),
        }
    }
}

/// One option as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionEntry {
    /// fio's canonical option name (`bs` for `blocksize=`).
    pub name: String,
    /// The name as written.
    pub written_name: String,
    /// The value as written (text after `=`, before `${VAR}` substitution); `None`
    /// for a bare option such as `time_based`.
    pub value: Option<String>,
    /// The value after `${VAR}`, `$pagesize`/`$mb_memory`/`$ncpus` substitution and
    /// arithmetic: what fio stores and prints.
    pub expanded: Option<String>,
    /// File the option is in (the job file or an included file).
    pub file: PathBuf,
    /// 1-based line number.
    pub line: usize,
    /// For engine-private options, the engine they belong to.
    pub engine: Option<String>,
}

/// One `[section]` of a job file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Section name (between the brackets).
    pub name: String,
    /// Whether this is a global section (name starts with `global`).
    pub global: bool,
    /// File and line of the `[name]` header.
    pub file: PathBuf,
    /// 1-based line of the header.
    pub line: usize,
    /// The section's own options, in file order (includes expanded in place).
    pub options: Vec<OptionEntry>,
    /// The options in the order fio applies and prints them (`--showcmd`): higher
    /// priority first (`kb_base`, `unit_base`...), `filename` last, engine-private
    /// options after all core options. Canonical names, expanded values. For a
    /// global section this is every global option seen so far (fio keeps a single
    /// list for all global sections and prints all of it each time).
    pub cmdline: Vec<(String, Option<String>)>,
}

/// A parsed job file.
#[derive(Debug, Clone, PartialEq)]
pub struct JobFile {
    /// The job file as named.
    pub path: PathBuf,
    /// All sections in file order.
    pub sections: Vec<Section>,
    /// All options of all global sections, in file order (fio's "global options").
    pub global_options: Vec<OptionEntry>,
    /// The resolved jobs (non-global sections), in file order.
    pub jobs: Vec<JobSpec>,
}

impl JobFile {
    /// `fio --showcmd` rendering; see [`crate::showcmd`].
    pub fn showcmd(&self) -> String {
        crate::showcmd::showcmd(self)
    }

    /// Every option in effect for `job`, as written: the global options above it,
    /// then the job's own, in file order (later entries override earlier ones).
    pub fn job_options<'a>(
        &'a self,
        job: &'a JobSpec,
    ) -> impl Iterator<Item = &'a OptionEntry> + 'a {
        let n = job.global_options_applied.min(self.global_options.len());
        self.global_options[..n].iter().chain(job.options.iter())
    }
}

#[derive(Debug, Clone)]
struct RawOpt {
    text: String,
    file: PathBuf,
    line: usize,
}

enum Line {
    Skip,
    Section(String),
    Include(String),
    Opt(String),
}

fn is_space_or_cntrl(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') || b < 0x20 || b == 0x7f
}

/// fio's `is_empty_or_comment`.
fn is_empty_or_comment(s: &str) -> bool {
    for b in s.bytes() {
        if b == b';' || b == b'#' {
            return true;
        }
        if !is_space_or_cntrl(b) {
            return false;
        }
    }
    true
}

/// fio's `strip_blank_front`.
fn strip_front(s: &str) -> &str {
    s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r'])
}

/// fio's `strip_blank_end`: cut at the first ';' and then the first '#', then drop
/// trailing blanks and control characters (never the first character).
fn strip_end(s: &str) -> &str {
    if s.is_empty() {
        return s;
    }
    let mut t = s;
    if let Some(i) = t.find(';') {
        t = &t[..i];
    }
    if let Some(i) = t.find('#') {
        t = &t[..i];
    }
    let b = t.as_bytes();
    let mut end = b.len();
    while end > 1 && is_space_or_cntrl(b[end - 1]) {
        end -= 1;
    }
    &t[..end]
}

fn classify(raw: &str) -> Line {
    if is_empty_or_comment(raw) {
        return Line::Skip;
    }
    let p = strip_front(raw);
    if p.starts_with('[') {
        return Line::Section(strip_end(p).to_string());
    }
    let p = strip_end(p);
    if let Some(rest) = p.strip_prefix("include") {
        // fio takes everything after "include" plus one character.
        let name = rest.get(1..).unwrap_or("").to_string();
        return Line::Include(name);
    }
    Line::Opt(p.to_string())
}

/// Split file contents into lines the way `fgets` sees them (C strings: text after a
/// NUL byte is invisible; lines longer than 8191 bytes are split).
fn lines_of(bytes: &[u8]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let line = match line.iter().position(|b| *b == 0) {
            Some(n) => &line[..n],
            None => line,
        };
        if line.is_empty() {
            continue;
        }
        for chunk in line.chunks(OPT_LEN_MAX - 1) {
            out.push((i + 1, String::from_utf8_lossy(chunk).into_owned()));
        }
    }
    out
}

/// Section name from a header line: fio's `sscanf(p, "[%255[^\n]]", name)` followed
/// by dropping the last character (normally the `]`).
fn section_name(header: &str) -> Option<String> {
    let body = &header.as_bytes()[1..];
    if body.is_empty() {
        return None;
    }
    let take = &body[..body.len().min(255)];
    Some(String::from_utf8_lossy(&take[..take.len() - 1]).into_owned())
}

/// Substitute `${VAR}` (fio's `fio_option_dup_subs`).
pub(crate) fn substitute_env(s: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        let after = &rest[i + 2..];
        match after.find('}') {
            Some(j) => {
                out.push_str(&rest[..i]);
                if let Some(v) = vars.get(&after[..j]) {
                    out.push_str(v);
                }
                rest = &after[j + 1..];
            }
            None => break,
        }
    }
    out.push_str(rest);
    out
}

/// Replace `$pagesize`, `$mb_memory`, `$ncpus` and do the arithmetic fio hands to
/// `bc` (fio's `fio_keyword_replace` + `bc_calc`).
pub(crate) fn substitute_keywords(s: &str, env: &ParseEnv) -> Result<String, String> {
    let mut out = s.to_string();
    let mut replaced = false;
    for (kw, val) in [
        ("$pagesize", env.pagesize),
        ("$mb_memory", env.mb_memory),
        ("$ncpus", env.ncpus),
    ] {
        if out.contains(kw) {
            out = out.replace(kw, &val.to_string());
            replaced = true;
        }
    }
    if !replaced {
        return Ok(out);
    }
    let has_math = out.contains(['+', '-', '*', '/']) && !out.contains('\'');
    let Some(eq) = out.find('=') else {
        return Ok(out);
    };
    if !has_math || out.len() >= 128 || out.len() - eq - 1 > 100 {
        return Ok(out);
    }
    let expr = &out[eq + 1..];
    let v = eval_math(expr).map_err(|e| format!("cannot evaluate '{expr}': {e}"))?;
    Ok(format!("{}{}", &out[..=eq], v))
}

/// Split `name=value` (fio's `get_option`): the name is cut at the first '=' and
/// stripped at its end; the value is everything after the '='.
fn split_opt(s: &str) -> (String, Option<String>) {
    match s.find('=') {
        Some(i) => (strip_end(&s[..i]).to_string(), Some(s[i + 1..].to_string())),
        None => (s.to_string(), None),
    }
}

struct Reader<'a> {
    env: &'a ParseEnv,
}

impl Reader<'_> {
    fn read_file(&self, path: &Path, at: Option<(&Path, usize)>) -> Result<Vec<u8>, FioError> {
        self.env.read(path).map_err(|e| {
            let (f, l) = at.map_or((path.to_path_buf(), 0), |(f, l)| (f.to_path_buf(), l));
            FioError {
                option: at.map(|_| "include".into()),
                value: at.map(|_| path.display().to_string().into()),
                ..FioError::new(
                    f,
                    l,
                    ErrorKind::Io,
                    format!("unable to open '{}' job file ({e})", path.display()),
                )
            }
        })
    }

    /// Resolve an include file name like fio: as given (relative to the cwd), else
    /// relative to the directory of the including file.
    fn resolve_include(&self, name: &str, from: &Path) -> PathBuf {
        let p = PathBuf::from(name);
        if self.env.exists(&p) {
            return p;
        }
        let from_s = from.to_string_lossy();
        match from_s.rfind('/') {
            Some(i) => PathBuf::from(format!("{}{}", &from_s[..=i], name)),
            None => p,
        }
    }

    fn include(
        &self,
        name: &str,
        from: &Path,
        line: usize,
        depth: usize,
        out: &mut Vec<RawOpt>,
    ) -> Result<(), FioError> {
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(FioError {
                option: Some("include".into()),
                value: Some(name.into()),
                ..FioError::new(
                    from,
                    line,
                    ErrorKind::IncludeDepth,
                    format!("include '{name}': includes nested too deeply (include loop?)"),
                )
            });
        }
        let path = self.resolve_include(name, from);
        let bytes = self.read_file(&path, Some((from, line)))?;
        for (ln, raw) in lines_of(&bytes) {
            match classify(&raw) {
                Line::Skip => {}
                Line::Section(_) => {
                    return Err(FioError::new(
                        &path,
                        ln,
                        ErrorKind::SectionInInclude,
                        "no new sections in included files".into(),
                    ))
                }
                Line::Include(n) => self.include(&n, &path, ln, depth + 1, out)?,
                Line::Opt(text) => out.push(RawOpt {
                    text,
                    file: path.clone(),
                    line: ln,
                }),
            }
        }
        Ok(())
    }
}

struct RawSection {
    name: String,
    file: PathBuf,
    line: usize,
    opts: Vec<RawOpt>,
}

fn read_sections(bytes: &[u8], path: &Path, env: &ParseEnv) -> Result<Vec<RawSection>, FioError> {
    let reader = Reader { env };
    let mut sections: Vec<RawSection> = Vec::new();
    for (ln, raw) in lines_of(bytes) {
        match classify(&raw) {
            Line::Skip => {}
            Line::Section(h) => match section_name(&h) {
                Some(name) => sections.push(RawSection {
                    name,
                    file: path.to_path_buf(),
                    line: ln,
                    opts: Vec::new(),
                }),
                None => return Err(outside(path, ln, &h)),
            },
            Line::Include(name) => match sections.last_mut() {
                Some(sec) => reader.include(&name, path, ln, 0, &mut sec.opts)?,
                None => {
                    let text = strip_end(strip_front(&raw)).to_string();
                    return Err(outside(path, ln, &text));
                }
            },
            Line::Opt(text) => match sections.last_mut() {
                Some(sec) => sec.opts.push(RawOpt {
                    text,
                    file: path.to_path_buf(),
                    line: ln,
                }),
                None => return Err(outside(path, ln, &text)),
            },
        }
    }
    Ok(sections)
}

fn outside(path: &Path, line: usize, text: &str) -> FioError {
    let (name, value) = split_opt(text);
    FioError {
        // A line such as `=x` names no option.
        option: (!name.is_empty()).then(|| name.into()),
        value: value.map(Into::into),
        ..FioError::new(
            path,
            line,
            ErrorKind::OutsideSection,
            format!("option '{text}' outside of [] job section"),
        )
    }
}

fn opt_error(
    raw: &RawOpt,
    name: &str,
    value: Option<&str>,
    kind: ErrorKind,
    msg: String,
) -> FioError {
    FioError {
        option: (!name.is_empty()).then(|| name.into()),
        value: value.map(Into::into),
        ..FioError::new(&raw.file, raw.line, kind, msg)
    }
}

/// Apply one section's options to `state`, the way `fio_options_parse` does.
/// A section's options in file order, and its `--showcmd` list.
type Applied = (Vec<OptionEntry>, Vec<(String, Option<String>)>);

/// Every problem of the section is collected (the bad option is skipped, as if
/// not written) and returned with what applied.
fn apply_section(
    state: &mut OptState,
    opts: &[RawOpt],
    env: &ParseEnv,
) -> (Applied, Vec<FioError>) {
    let mut errors = Vec::new();
    struct Prepared {
        idx: usize,
        written_name: String,
        written_value: Option<String>,
        name: String,
        value: Option<String>,
    }
    let mut prepared = Vec::with_capacity(opts.len());
    for (idx, raw) in opts.iter().enumerate() {
        let (written_name, written_value) = split_opt(&raw.text);
        let subst = substitute_env(&raw.text, &env.vars);
        let expanded = match substitute_keywords(&subst, env) {
            Ok(x) => x,
            Err(e) => {
                errors.push(opt_error(
                    raw,
                    &written_name,
                    written_value.as_deref(),
                    ErrorKind::Math,
                    format!("option '{written_name}': {e}"),
                ));
                continue;
            }
        };
        let (name, value) = split_opt(&expanded);
        prepared.push(Prepared {
            idx,
            written_name,
            written_value,
            name,
            value,
        });
    }
    // fio sorts the section's options by priority (stable), looking names up as
    // written.
    let prio = |p: &Prepared| find_option(&p.written_name).map_or(0, |o| o.prio);
    let mut order: Vec<usize> = (0..prepared.len()).collect();
    // Indices into `prepared` from here on; `p.idx` is the option's index in `opts`.
    order.sort_by_key(|&i| -i32::from(prio(&prepared[i])));

    let mut entries: Vec<Option<OptionEntry>> = vec![None; opts.len()];
    let mut dump = Vec::new();
    let mut unknown = Vec::new();
    let mut apply =
        |o: &'static OptDef, p: &Prepared, state: &mut OptState| -> Result<(), FioError> {
            let raw = &opts[p.idx];
            state.handle(o, p.value.as_deref()).map_err(|msg| {
                let kind = if o.kind == OptKind::Deprecated {
                    ErrorKind::Deprecated
                } else if msg.starts_with("engine ") {
                    ErrorKind::EngineNotLoadable
                } else {
                    ErrorKind::InvalidValue
                };
                let shown = match (&p.value, &p.written_value) {
                    (Some(v), Some(w)) if v != w => format!(" (from '{w}')"),
                    _ => String::new(),
                };
                opt_error(
                    raw,
                    &p.written_name,
                    p.written_value.as_deref(),
                    kind,
                    format!("option '{}': {msg}{shown}", p.name),
                )
            })?;
            entries[p.idx] = Some(OptionEntry {
                name: o.name.to_string(),
                written_name: p.written_name.clone(),
                value: p.written_value.clone(),
                expanded: p.value.clone(),
                file: raw.file.clone(),
                line: raw.line,
                engine: match o.scope {
                    Scope::Engine(_) => Some(state.ioengine().to_string()),
                    _ => None,
                },
            });
            dump.push((o.name.to_string(), p.value.clone()));
            Ok(())
        };
    for &i in &order {
        let p = &prepared[i];
        match find_option(&p.name) {
            Some(o) => {
                if let Err(e) = apply(o, p, state) {
                    errors.push(e);
                }
            }
            None => unknown.push(i),
        }
    }
    for &i in &unknown {
        let p = &prepared[i];
        let engine = state.ioengine().to_string();
        match find_engine_option(&engine, &p.name) {
            Some(o) => {
                if let Err(e) = apply(o, p, state) {
                    errors.push(e);
                }
            }
            None => {
                let raw = &opts[p.idx];
                let suggestion: Option<Box<str>> = closest_option(&p.name).map(Into::into);
                let mut msg = format!("unknown option '{}'", p.name);
                if p.name.is_empty() {
                    msg = "no option name before '='".into();
                }
                if let Some(s) = &suggestion {
                    msg.push_str(&format!(" (did you mean '{s}'?)"));
                }
                let owners: Vec<&str> = ENGINE_OPTIONS
                    .iter()
                    .filter(|o| o.matches(&p.name))
                    .flat_map(|o| match o.scope {
                        Scope::Engine(l) => l.to_vec(),
                        _ => Vec::new(),
                    })
                    .collect();
                if !owners.is_empty() {
                    msg = format!(
                        "unknown option '{}' for ioengine {engine} (it is an option of ioengine {})",
                        p.name,
                        owners.join("/")
                    );
                }
                errors.push(FioError {
                    suggestion: if owners.is_empty() { suggestion } else { None },
                    ..opt_error(
                        raw,
                        &p.written_name,
                        p.written_value.as_deref(),
                        ErrorKind::UnknownOption,
                        msg,
                    )
                });
            }
        }
    }
    // In the order of the file (fio's priority order is not the reader's).
    errors.sort_by_key(|e| e.line);
    ((entries.into_iter().flatten().collect(), dump), errors)
}

/// Parse a fio job file from disk (or from `env.files`).
///
/// ```no_run
/// use iostack_workload::{parse_job_file, ParseEnv};
/// let jf = parse_job_file("job.fio", &ParseEnv::default()).unwrap();
/// for job in &jf.jobs {
///     println!("{} {:?} bs={}", job.name, job.rw.kind, job.bs.read);
/// }
/// ```
pub fn parse_job_file(path: impl AsRef<Path>, env: &ParseEnv) -> Result<JobFile, FioError> {
    let path = path.as_ref();
    let bytes = Reader { env }.read_file(path, None)?;
    parse_job_bytes(&bytes, path, env)
}

/// Parse job-file text; `path` names it in errors and anchors relative includes.
///
/// ```
/// use iostack_workload::{parse_job_str, ParseEnv, RwKind};
/// let text = "[global]\nbs=8k,32k\n[job1]\nrw=randrw\nsize=1m\n";
/// let jf = parse_job_str(text, "x.fio", &ParseEnv::default()).unwrap();
/// let j = &jf.jobs[0];
/// assert_eq!(j.rw.kind, RwKind::RandRw);
/// assert_eq!((j.bs.read, j.bs.write, j.bs.trim), (8192, 32768, 32768));
/// assert_eq!(jf.showcmd().trim(), "fio --bs=8k,32k --name=job1 --rw=randrw --size=1m");
/// ```
pub fn parse_job_str(
    text: &str,
    path: impl AsRef<Path>,
    env: &ParseEnv,
) -> Result<JobFile, FioError> {
    parse_job_bytes(text.as_bytes(), path.as_ref(), env)
}

/// Parse job-file bytes (not necessarily UTF-8). Every problem of the file's
/// options is reported: the error is the first, its `next` the others.
pub fn parse_job_bytes(
    bytes: &[u8],
    path: impl AsRef<Path>,
    env: &ParseEnv,
) -> Result<JobFile, FioError> {
    let (jf, errors) = parse_job_bytes_all(bytes, path, env)?;
    match FioError::collect(errors) {
        Some(e) => Err(e),
        None => Ok(jf),
    }
}

/// As [`parse_job_file`], but the option errors (unknown, malformed,
/// deprecated options, bad arithmetic) come back beside the job file built
/// without the bad options, so that a caller can add its own (the simulator's
/// refusals) and report them all at once. Errors that stop the reading (a file
/// that cannot be read, an option outside a section, include loops) are still
/// the `Err`.
pub fn parse_job_file_all(
    path: impl AsRef<Path>,
    env: &ParseEnv,
) -> Result<(JobFile, Vec<FioError>), FioError> {
    let path = path.as_ref();
    let bytes = Reader { env }.read_file(path, None)?;
    parse_job_bytes_all(&bytes, path, env)
}

/// As [`parse_job_file_all`] for job-file bytes.
pub fn parse_job_bytes_all(
    bytes: &[u8],
    path: impl AsRef<Path>,
    env: &ParseEnv,
) -> Result<(JobFile, Vec<FioError>), FioError> {
    let path = path.as_ref();
    let raw_sections = read_sections(bytes, path, env)?;
    let mut errors = Vec::new();
    let mut global = OptState::with_defaults();
    let mut sections = Vec::new();
    let mut global_options = Vec::new();
    let mut global_cmdline: Vec<(String, Option<String>)> = Vec::new();
    let mut jobs = Vec::new();
    let mut group_id = 0u32;
    let mut prev_group_jobs = 0u32;
    for rs in raw_sections {
        let is_global = rs.name.starts_with("global");
        let mut section = Section {
            name: rs.name.clone(),
            global: is_global,
            file: rs.file.clone(),
            line: rs.line,
            options: Vec::new(),
            cmdline: Vec::new(),
        };
        if is_global {
            let ((entries, dump), errs) = apply_section(&mut global, &rs.opts, env);
            errors.extend(errs);
            global_options.extend(entries.iter().cloned());
            global_cmdline.extend(dump);
            section.options = entries;
            section.cmdline = global_cmdline.clone();
        } else {
            let mut st = global.clone();
            let ((entries, dump), errs) = apply_section(&mut st, &rs.opts, env);
            errors.extend(errs);
            section.options = entries;
            section.cmdline = dump;
            let mut job = match build_job(&st, &section, global_options.len()) {
                Ok(job) => job,
                Err(e) => {
                    errors.push(e);
                    sections.push(section);
                    continue;
                }
            };
            if (job.stonewall || job.new_group) && prev_group_jobs > 0 {
                prev_group_jobs = 0;
                group_id += 1;
            }
            job.group_id = group_id;
            prev_group_jobs += 1;
            jobs.push(job);
        }
        sections.push(section);
    }
    let jf = JobFile {
        path: path.to_path_buf(),
        sections,
        global_options,
        jobs,
    };
    Ok((jf, errors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip() {
        assert_eq!(strip_end("size=2k   ; c"), "size=2k");
        assert_eq!(strip_end("a#b;c"), "a");
        assert_eq!(strip_end("x \t\r"), "x");
        assert_eq!(strip_front("  \tx"), "x");
        assert!(is_empty_or_comment("   ; x"));
        assert!(is_empty_or_comment("  "));
        assert!(!is_empty_or_comment(" a;"));
    }

    #[test]
    fn env_subst() {
        let mut v = BTreeMap::new();
        v.insert("A".to_string(), "x".to_string());
        assert_eq!(substitute_env("a=${A}/${B}/c", &v), "a=x//c");
        assert_eq!(substitute_env("a=${A", &v), "a=${A");
        assert_eq!(substitute_env("a=${}", &v), "a=");
    }

    #[test]
    fn keywords() {
        let env = ParseEnv::default();
        assert_eq!(
            substitute_keywords("size=2*$pagesize", &env).unwrap(),
            "size=8192"
        );
        assert_eq!(
            substitute_keywords("bs=$pagesize", &env).unwrap(),
            "bs=4096"
        );
        assert_eq!(
            substitute_keywords("size=2*4096", &env).unwrap(),
            "size=2*4096"
        );
        assert!(substitute_keywords("bs=4k*$pagesize", &env).is_err());
    }

    #[test]
    fn section_names() {
        assert_eq!(section_name("[job]").as_deref(), Some("job"));
        assert_eq!(section_name("[job").as_deref(), Some("jo"));
        assert_eq!(section_name("[]").as_deref(), Some(""));
        assert_eq!(section_name("["), None);
    }
}
