//! The per-job option state (fio's `struct thread_options`) and the value handler
//! (`handle_option` / `__handle_option` in parse.c), including the callbacks that
//! validate or derive values.

use std::collections::{BTreeMap, BTreeSet};

use crate::number::{
    parse_float_token, parse_size_token, parse_time_token, parse_uint_token, Num, KB_BASE_DEFAULT,
};
use crate::options::{OptDef, OptKind, CORE_OPTIONS, SUPPORTED_ENGINES};

/// One stored numeric slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    Int(i128),
    Percent(u64),
    Zone(u64),
}

impl Scalar {
    pub(crate) fn int(self) -> i128 {
        match self {
            Scalar::Int(v) => v,
            _ => 0,
        }
    }
}

/// One entry of a `bssplit` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BsSplit {
    /// Block size in bytes.
    pub bs: u64,
    /// Percentage of I/Os using it.
    pub percent: u32,
}

/// One zone of a `random_distribution=zoned:` or `zoned_abs:` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneSplit {
    /// Percentage of accesses going to this zone.
    pub access_percent: u32,
    /// Size of the zone: percent of the region (`zoned`) or bytes (`zoned_abs`).
    pub size: u64,
}

/// The option state of one job (or of the global defaults).
#[derive(Debug, Clone)]
pub(crate) struct OptState {
    pub(crate) nums: BTreeMap<&'static str, [Scalar; 3]>,
    pub(crate) ranges: BTreeMap<&'static str, [(u64, u64); 3]>,
    pub(crate) texts: BTreeMap<&'static str, String>,
    pub(crate) choices: BTreeMap<&'static str, &'static str>,
    pub(crate) floats: BTreeMap<&'static str, Vec<f64>>,
    /// Options explicitly set (fio's `fio_option_is_set`), by canonical name.
    pub(crate) set: BTreeSet<&'static str>,
    pub(crate) files: Vec<String>,
    pub(crate) bssplit: [Vec<BsSplit>; 3],
    pub(crate) zones: [Vec<ZoneSplit>; 3],
    pub(crate) dist_params: (f64, f64),
    pub(crate) fst_nr: u32,
    pub(crate) sfr_nr: u32,
}

const ZERO3: [Scalar; 3] = [Scalar::Int(0); 3];

/// Split a value into per-direction parts the way fio's `handle_option` does.
/// Returns `(token, more)` pairs, where `token` is the text of the part up to the
/// separator that ended it, and `more` tells whether another part follows.
pub(crate) fn split_parts(value: &str, colon_dash: bool) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut rest = value.to_string();
    loop {
        let mut sep = rest.find(',');
        if let Some(i) = sep {
            if i + 1 == rest.len() {
                rest.truncate(i);
            }
        }
        if colon_dash && sep.is_none() {
            sep = rest.find(':');
            if sep.is_none() {
                // A leading '-' is a sign, not a separator.
                let from = usize::from(rest.starts_with('-'));
                sep = rest[from..].find('-').map(|i| i + from);
            }
        }
        match sep {
            None => {
                out.push((rest, false));
                break;
            }
            Some(i) => {
                out.push((rest[..i].to_string(), true));
                rest = rest.get(i + 1..).unwrap_or("").to_string();
            }
        }
    }
    out
}

/// fio's `get_opt_postfix`: the text after the first ':', trimmed.
fn postfix(s: &str) -> Option<&str> {
    s.find(':').map(|i| s[i + 1..].trim())
}

/// Match a value against an option's allowed values, as fio's posval matching:
/// the part before the first ',' (or, if none, the first ':') must equal a value.
pub(crate) fn posval_match(
    values: &[(&'static str, &'static str)],
    s: &str,
) -> Option<&'static str> {
    let head_len = s.find(',').or_else(|| s.find(':')).unwrap_or(s.len());
    let head = &s[..head_len];
    values.iter().map(|(v, _)| *v).find(|v| *v == head)
}

fn allowed(values: &[(&str, &str)]) -> String {
    values
        .iter()
        .map(|(v, _)| *v)
        .collect::<Vec<_>>()
        .join(", ")
}

/// fio's `get_next_str`: split a `:`-separated name list, where `\:` escapes a colon.
pub(crate) fn split_names(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&':') {
            cur.push(':');
            chars.next();
        } else if c == ':' {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

impl OptState {
    /// A fresh state with every default applied (fio's `fill_default_options`).
    pub(crate) fn with_defaults() -> Self {
        static DEFAULTS: std::sync::OnceLock<OptState> = std::sync::OnceLock::new();
        DEFAULTS.get_or_init(Self::build_defaults).clone()
    }

    fn build_defaults() -> Self {
        let mut st = OptState {
            nums: BTreeMap::new(),
            ranges: BTreeMap::new(),
            texts: BTreeMap::new(),
            choices: BTreeMap::new(),
            floats: BTreeMap::new(),
            set: BTreeSet::new(),
            files: Vec::new(),
            bssplit: Default::default(),
            zones: Default::default(),
            dist_params: (0.0, -1.0),
            fst_nr: 1,
            sfr_nr: 1,
        };
        for o in CORE_OPTIONS {
            if let Some(d) = o.default {
                // Defaults are fio's own strings; they always parse.
                let _ = st.handle(o, Some(d));
            }
        }
        st.set.clear();
        st
    }

    pub(crate) fn kb_base(&self) -> u32 {
        match self.choices.get("kb_base") {
            Some(&"1000") => 1000,
            _ => KB_BASE_DEFAULT,
        }
    }

    pub(crate) fn num(&self, field: &str) -> [Scalar; 3] {
        self.nums.get(field).copied().unwrap_or(ZERO3)
    }

    pub(crate) fn int(&self, field: &str) -> i128 {
        self.num(field)[0].int()
    }

    pub(crate) fn flag(&self, field: &str) -> bool {
        self.int(field) != 0
    }

    pub(crate) fn text(&self, field: &str) -> Option<&str> {
        self.texts.get(field).map(String::as_str)
    }

    pub(crate) fn choice(&self, field: &str) -> Option<&'static str> {
        self.choices.get(field).copied()
    }

    pub(crate) fn ioengine(&self) -> &str {
        self.text("ioengine").unwrap_or("psync")
    }

    fn store_num(&mut self, o: &OptDef, part: usize, more: bool, v: Scalar) {
        let slots = usize::from(o.slots).clamp(1, 3);
        let arr = self.nums.entry(o.field).or_insert(ZERO3);
        match o.kind {
            OptKind::Int | OptKind::Ull => {
                if part < slots {
                    arr[part] = v;
                }
                if !more {
                    for s in arr.iter_mut().take(slots).skip(part + 1) {
                        *s = v;
                    }
                }
            }
            _ => {
                if part == 0 {
                    arr[0] = v;
                }
                if !more && slots >= 2 {
                    arr[1] = v;
                }
            }
        }
    }

    /// Parse and store one option value. `value` is `None` for a bare option.
    pub(crate) fn handle(&mut self, o: &'static OptDef, value: Option<&str>) -> Result<(), String> {
        match o.kind {
            OptKind::Deprecated => return Err("deprecated option, no longer accepted".into()),
            OptKind::SoftDeprecated => return Ok(()),
            OptKind::Unsupported => return Err("option is not supported on this platform".into()),
            _ => {}
        }
        let Some(v) = value else {
            return match o.kind {
                OptKind::StrSet => {
                    self.store_num(o, 0, false, Scalar::Int(i128::from(!o.neg)));
                    self.bool_callback(o, true);
                    self.set.insert(o.name);
                    Ok(())
                }
                OptKind::Str if o.values.is_empty() && o.callback && is_log_option(o.name) => {
                    self.str_callback(o, None)?;
                    self.set.insert(o.name);
                    Ok(())
                }
                _ => Err("requires a value".into()),
            };
        };
        match o.kind {
            OptKind::Str => self.handle_str(o, v)?,
            OptKind::StrUll => self.str_callback(o, Some(v))?,
            OptKind::StrMulti => self.handle_multi(o, v)?,
            OptKind::StrStore => self.handle_store(o, v)?,
            OptKind::Bool | OptKind::StrSet => self.handle_bool(o, v)?,
            OptKind::FloatList => self.handle_floats(o, v)?,
            OptKind::Range => self.handle_range(o, v)?,
            OptKind::Int
            | OptKind::Ull
            | OptKind::StrVal
            | OptKind::StrValTime
            | OptKind::StrValZone => self.handle_numeric(o, v)?,
            OptKind::Deprecated | OptKind::SoftDeprecated | OptKind::Unsupported => {}
        }
        self.set.insert(o.name);
        Ok(())
    }

    fn handle_str(&mut self, o: &'static OptDef, v: &str) -> Result<(), String> {
        if !o.values.is_empty() {
            let Some(m) = posval_match(o.values, v) else {
                return Err(format!(
                    "invalid value '{v}' (valid values: {})",
                    allowed(o.values)
                ));
            };
            self.choices.insert(o.field, m);
        }
        self.texts.insert(o.field, v.to_string());
        if o.callback {
            self.str_callback(o, Some(v))?;
        }
        Ok(())
    }

    fn handle_multi(&mut self, o: &'static OptDef, v: &str) -> Result<(), String> {
        let parts = split_parts(v, false);
        let mut any = false;
        for (tok, _) in &parts {
            if tok.is_empty() {
                continue;
            }
            if posval_match(o.values, tok).is_none() {
                return Err(format!(
                    "invalid value '{tok}' (valid values: {})",
                    allowed(o.values)
                ));
            }
            any = true;
        }
        if !any {
            return Err("requires a value".into());
        }
        self.texts.insert(o.field, v.to_string());
        if o.name == "sync_file_range" {
            self.sfr_nr = match postfix(v) {
                Some(n) => parse_uint_token(n)
                    .map_err(|e| format!("invalid count '{n}' ({e})"))?
                    .try_into()
                    .map_err(|_| format!("invalid count '{n}'"))?,
                None => 1,
            };
        }
        Ok(())
    }

    fn handle_store(&mut self, o: &'static OptDef, v: &str) -> Result<(), String> {
        if v.is_empty() {
            return Err("empty value".into());
        }
        if o.maxlen > 0 && v.len() > o.maxlen as usize - 1 {
            return Err(format!("value exceeds max length of {}", o.maxlen));
        }
        if o.name == "ioengine" && !SUPPORTED_ENGINES.contains(&v) {
            return Err(crate::options::engine_not_loadable(v));
        }
        self.texts.insert(o.field, v.to_string());
        if o.name == "filename" {
            let dir = self.text("directory").map(|d| {
                let first = split_names(d).into_iter().next().unwrap_or_default();
                format!("{first}/")
            });
            if self.files.is_empty() {
                self.nums.insert("nr_files", ZERO3);
            }
            for name in split_names(v.trim()) {
                self.files
                    .push(format!("{}{}", dir.as_deref().unwrap_or(""), name));
                let n = self.int("nr_files") + 1;
                self.nums.insert("nr_files", [Scalar::Int(n); 3]);
            }
        }
        if o.name == "cmdprio_bssplit" {
            check_cmdprio_bssplit(v, self.kb_base())?;
        }
        Ok(())
    }

    fn handle_bool(&mut self, o: &'static OptDef, v: &str) -> Result<(), String> {
        let parts = split_parts(v, true);
        check_part_count(o, &parts)?;
        let mut any = false;
        for (i, (tok, more)) in parts.iter().enumerate() {
            if tok.trim().is_empty() {
                continue;
            }
            let n = parse_uint_token(tok).map_err(|e| format!("invalid boolean '{tok}' ({e})"))?;
            if o.kind == OptKind::Bool && n > 1 {
                return Err(format!("max value out of range: {n} (1 max)"));
            }
            let n = if o.neg { u64::from(n == 0) } else { n };
            self.store_num(o, i, *more, Scalar::Int(i128::from(n)));
            self.bool_callback(o, n != 0);
            any = true;
        }
        if !any {
            return Err(format!("invalid boolean '{v}'"));
        }
        Ok(())
    }

    fn bool_callback(&mut self, o: &OptDef, on: bool) {
        if o.name == "gtod_reduce" && on {
            for f in ["disable_lat", "disable_clat", "disable_slat", "disable_bw"] {
                self.nums.insert(f, [Scalar::Int(1); 3]);
            }
            for f in ["clat_percentiles", "lat_percentiles", "slat_percentiles"] {
                self.nums.insert(f, ZERO3);
            }
        }
    }

    fn handle_floats(&mut self, o: &'static OptDef, v: &str) -> Result<(), String> {
        let mut list = Vec::new();
        for tok in v.split(':') {
            if tok.trim().is_empty() {
                continue;
            }
            if o.maxlen > 0 && list.len() >= o.maxlen as usize {
                return Err(format!("the list exceeds max length {}", o.maxlen));
            }
            let f = parse_float_token(tok).map_err(|e| format!("invalid value '{tok}' ({e})"))?;
            if let Some((lo, hi)) = o.float_range {
                if f > hi {
                    return Err(format!("value out of range: {f} (range max: {hi})"));
                }
                if f < lo {
                    return Err(format!("value out of range: {f} (range min: {lo})"));
                }
            }
            list.push(f);
        }
        if list.is_empty() {
            return Err(format!("invalid list '{v}'"));
        }
        if o.field == "percentile_list" {
            // parse.c: the print precision is the most digits after a '.'.
            let prec = v
                .split(':')
                .filter_map(|t| t.split_once('.'))
                .map(|(_, f)| f.bytes().take_while(u8::is_ascii_digit).count())
                .max()
                .unwrap_or(0);
            self.nums
                .insert("percentile_precision", [Scalar::Int(prec as i128); 3]);
        }
        self.floats.insert(o.field, list);
        Ok(())
    }

    fn handle_range(&mut self, o: &'static OptDef, v: &str) -> Result<(), String> {
        let parts = split_parts(v, false);
        let kb = self.kb_base();
        let mut any = false;
        for (i, (tok, more)) in parts.iter().enumerate() {
            if tok.trim().is_empty() {
                continue;
            }
            let Some(sep) = tok.find('-').or_else(|| tok.find(':')) else {
                return Err(format!("invalid range '{tok}' (expected min-max)"));
            };
            let lo = range_bound(&tok[..sep], kb)?;
            let hi = range_bound(&tok[sep + 1..], kb)?;
            let pair = (lo.min(hi), lo.max(hi));
            let arr = self.ranges.entry(o.field).or_insert([(0, 0); 3]);
            if i < 3 {
                arr[i] = pair;
            }
            if !more {
                for s in arr.iter_mut().skip(i + 1) {
                    *s = pair;
                }
            }
            any = true;
        }
        if !any {
            return Err(format!("invalid range '{v}' (expected min-max)"));
        }
        Ok(())
    }

    fn handle_numeric(&mut self, o: &'static OptDef, v: &str) -> Result<(), String> {
        let parts = split_parts(v, true);
        check_part_count(o, &parts)?;
        let kb = self.kb_base();
        let is_time = o.kind == OptKind::StrValTime || o.time;
        let what = if is_time {
            "time"
        } else if matches!(o.kind, OptKind::Int) {
            "integer"
        } else {
            "size"
        };
        let mut any = false;
        for (i, (tok, more)) in parts.iter().enumerate() {
            let t = tok.trim();
            if t.is_empty() {
                continue;
            }
            let val = if let Some(n) = t.strip_suffix('z') {
                if o.kind != OptKind::StrValZone {
                    return Err(format!("'z' suffix isn't applicable to '{t}'"));
                }
                if n.is_empty() || !n.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(format!("unexpected zone value '{t}'"));
                }
                Scalar::Zone(
                    n.parse::<u32>()
                        .map_err(|_| format!("unexpected zone value '{t}'"))?
                        .into(),
                )
            } else if is_time {
                Scalar::Int(
                    parse_time_token(t, o.seconds)
                        .map_err(|e| format!("invalid {what} '{t}' ({e})"))?,
                )
            } else {
                match parse_size_token(t, kb).map_err(|e| format!("invalid {what} '{t}' ({e})"))? {
                    Num::Int(n) => Scalar::Int(n),
                    Num::Percent(p) => {
                        if !allows_percent(o) {
                            return Err(format!(
                                "invalid {what} '{t}' (a percentage is not allowed here)"
                            ));
                        }
                        if p > 100 {
                            return Err(format!(
                                "invalid {what} '{t}' (percentages above 100% are not supported)"
                            ));
                        }
                        Scalar::Percent(p)
                    }
                }
            };
            if let Scalar::Int(n) = val {
                self.check_int_range(o, n, t)?;
            }
            if o.callback {
                self.num_callback(o, val);
            } else {
                self.store_num(o, i, *more, val);
            }
            any = true;
        }
        if !any {
            return Err(if v.is_empty() {
                "requires a value".to_string()
            } else {
                format!("invalid {what} '{v}'")
            });
        }
        Ok(())
    }

    fn check_int_range(&self, o: &OptDef, n: i128, t: &str) -> Result<(), String> {
        if n < 0 && o.min >= 0 {
            return Err(format!(
                "invalid value '{t}' (negative values are not allowed)"
            ));
        }
        let type_max: i128 = match o.kind {
            OptKind::Int => i128::from(u32::MAX),
            _ => i128::from(u64::MAX),
        };
        let max = if o.max != 0 {
            i128::from(o.max).min(type_max)
        } else {
            type_max
        };
        if n > max {
            return Err(format!("max value out of range: {n} ({max} max)"));
        }
        if o.min != 0 && n < i128::from(o.min) {
            return Err(format!("min value out of range: {n} ({} min)", o.min));
        }
        if o.pow2 && (n <= 0 || (n & (n - 1)) != 0) {
            return Err(format!("'{t}' must be a power-of-2"));
        }
        Ok(())
    }

    fn num_callback(&mut self, o: &'static OptDef, v: Scalar) {
        match o.name {
            "rwmixread" => {
                let r = v.int();
                self.nums.insert(
                    "rwmix",
                    [Scalar::Int(r), Scalar::Int(100 - r), Scalar::Int(0)],
                );
            }
            "rwmixwrite" => {
                let w = v.int();
                self.nums.insert(
                    "rwmix",
                    [Scalar::Int(100 - w), Scalar::Int(w), Scalar::Int(0)],
                );
            }
            _ => {
                self.nums.insert(o.field, [v; 3]);
            }
        }
    }

    fn str_callback(&mut self, o: &'static OptDef, v: Option<&str>) -> Result<(), String> {
        let kb = self.kb_base();
        match (o.name, v) {
            ("write_bw_log" | "write_lat_log" | "write_iops_log" | "write_hist_log", v) => {
                let flag: &'static str = match o.name {
                    "write_bw_log" => "write_bw_log",
                    "write_lat_log" => "write_lat_log",
                    "write_iops_log" => "write_iops_log",
                    _ => "write_hist_log",
                };
                self.nums.insert(flag, [Scalar::Int(1); 3]);
                match v {
                    Some(s) => {
                        self.texts.insert(o.field, s.to_string());
                    }
                    None => {
                        self.texts.remove(o.field);
                    }
                }
                Ok(())
            }
            (_, None) => Err("requires a value".into()),
            ("rw", Some(s)) => {
                let random = self
                    .choice("td_ddir")
                    .is_some_and(|k| k.starts_with("rand"));
                self.nums.insert("ddir_seq_nr", [Scalar::Int(1); 3]);
                self.nums.insert("ddir_seq_add", ZERO3);
                if let Some(nr) = postfix(s) {
                    if random {
                        let n = parse_uint_token(nr)
                            .ok()
                            .filter(|n| *n <= u64::from(u32::MAX))
                            .ok_or_else(|| {
                                format!("invalid rw postfix '{nr}' (expected a count of I/Os)")
                            })?;
                        self.nums
                            .insert("ddir_seq_nr", [Scalar::Int(i128::from(n)); 3]);
                    } else {
                        match parse_size_token(nr, kb) {
                            Ok(Num::Int(n)) => {
                                self.nums.insert("ddir_seq_add", [Scalar::Int(n); 3]);
                            }
                            Ok(Num::Percent(_)) => {
                                return Err(format!("invalid rw postfix '{nr}' (expected a size)"))
                            }
                            Err(e) => return Err(format!("invalid rw postfix '{nr}' ({e})")),
                        }
                    }
                }
                Ok(())
            }
            ("bssplit", Some(s)) => self.bssplit_cb(s),
            ("random_distribution", Some(s)) => self.distribution_cb(s),
            ("file_service_type", Some(s)) => self.fst_cb(s),
            ("steadystate", Some(s)) => steadystate_cb(s, kb),
            ("cpus_allowed" | "verify_async_cpus" | "log_compression_cpus", Some(s)) => {
                check_cpu_list(s)
            }
            ("replay_skip", Some(s)) => {
                for p in s.trim().split(',') {
                    if !matches!(p, "read" | "write" | "trim" | "sync") {
                        return Err(format!("unknown skip type '{p}'"));
                    }
                }
                Ok(())
            }
            ("ignore_error", Some(s)) => check_ignore_error(s),
            ("verify_pattern", Some(s)) => {
                if !self.set.contains("verify") {
                    self.choices.insert("verify", "pattern");
                }
                if s.trim().is_empty() {
                    return Err("empty pattern".into());
                }
                Ok(())
            }
            ("buffer_pattern", Some(s)) => {
                if s.trim().is_empty() {
                    return Err("empty pattern".into());
                }
                for f in ["scramble_buffers", "zero_buffers"] {
                    self.nums.insert(f, ZERO3);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn bssplit_cb(&mut self, s: &str) -> Result<(), String> {
        let kb = self.kb_base();
        let lists = split_ddir(s.trim())?;
        let mut out: [Vec<BsSplit>; 3] = Default::default();
        for (d, list) in lists.iter().enumerate() {
            out[d] = parse_bssplit_dir(list, kb)?;
        }
        for (d, list) in out.iter().enumerate() {
            if let (Some(min), Some(max)) = (
                list.iter().map(|e| e.bs).min(),
                list.iter().map(|e| e.bs).max(),
            ) {
                let arr = self.ranges.entry("min_bs").or_insert([(0, 0); 3]);
                arr[d] = (min, max);
            }
        }
        self.bssplit = out;
        Ok(())
    }

    fn distribution_cb(&mut self, s: &str) -> Result<(), String> {
        let kind = self.choice("random_distribution").unwrap_or("random");
        self.zones = Default::default();
        match kind {
            "zoned" | "zoned_abs" => {
                let abs = kind == "zoned_abs";
                let pre = if abs { "zoned_abs:" } else { "zoned:" };
                let body = s
                    .trim()
                    .strip_prefix(pre)
                    .ok_or_else(|| format!("mismatch in zoned input <{s}>"))?;
                let lists = split_ddir(body)?;
                let mut zones: [Vec<ZoneSplit>; 3] = Default::default();
                for (d, list) in lists.iter().enumerate() {
                    zones[d] = parse_zones_dir(list, abs, self.kb_base())?;
                }
                self.zones = zones;
                Ok(())
            }
            "zipf" | "pareto" | "normal" => {
                let (mut val, mut center) = match kind {
                    "zipf" => (1.1, -1.0),
                    "pareto" => (0.2, -1.0),
                    _ => (0.0, -1.0),
                };
                if let Some(nr) = postfix(s) {
                    let (v, c) = split_distr(nr)?;
                    val = v;
                    if let Some(c) = c {
                        center = c;
                    }
                }
                check_distr(kind, val, center)?;
                self.dist_params = (val, center);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn fst_cb(&mut self, s: &str) -> Result<(), String> {
        let kind = self.choice("file_service_type").unwrap_or("roundrobin");
        self.fst_nr = 1;
        match kind {
            "random" | "roundrobin" | "sequential" => {
                if let Some(nr) = postfix(s) {
                    let n = parse_uint_token(nr)
                        .ok()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(|| format!("invalid file service count '{nr}'"))?;
                    self.fst_nr = n;
                }
                Ok(())
            }
            _ => {
                let (mut val, mut center) = match kind {
                    "zipf" => (1.1, -1.0),
                    "pareto" => (0.2, -1.0),
                    _ => (0.0, -1.0),
                };
                if let Some(nr) = postfix(s) {
                    let (v, c) = split_distr(nr)?;
                    val = v;
                    if let Some(c) = c {
                        center = c;
                    }
                }
                let k = if kind == "gauss" { "normal" } else { kind };
                check_distr(k, val, center)
            }
        }
    }
}

fn is_log_option(name: &str) -> bool {
    matches!(
        name,
        "write_bw_log" | "write_lat_log" | "write_iops_log" | "write_hist_log"
    )
}

fn allows_percent(o: &OptDef) -> bool {
    matches!(o.name, "size" | "io_size" | "offset" | "offset_increment")
}

fn check_part_count(o: &OptDef, parts: &[(String, bool)]) -> Result<(), String> {
    let n = parts.iter().filter(|(t, _)| !t.trim().is_empty()).count();
    let max = usize::from(o.slots.max(1));
    if n > max {
        let joined: Vec<&str> = parts.iter().map(|(t, _)| t.as_str()).collect();
        return Err(if max == 1 {
            format!("takes a single value, got '{}'", joined.join("', '"))
        } else {
            format!("takes at most {max} values, got {n}")
        });
    }
    Ok(())
}

fn range_bound(t: &str, kb: u32) -> Result<u64, String> {
    match parse_size_token(t, kb) {
        Ok(Num::Int(n)) if n >= 0 => Ok(n as u64),
        Ok(Num::Int(_)) => Err(format!(
            "invalid size '{t}' (negative values are not allowed)"
        )),
        Ok(Num::Percent(_)) => Err(format!(
            "invalid size '{t}' (a percentage is not allowed here)"
        )),
        Err(e) => Err(format!("invalid size '{}' ({e})", t.trim())),
    }
}

/// fio's `str_split_parse`: `read[,write[,trim]]` lists; a single list applies to
/// all directions, and with two lists trim takes the write list.
fn split_ddir(s: &str) -> Result<[String; 3], String> {
    let parts: Vec<&str> = s.splitn(3, ',').collect();
    Ok(match parts.as_slice() {
        [one] => [one.to_string(), one.to_string(), one.to_string()],
        [r, w] => [r.to_string(), w.to_string(), w.to_string()],
        [r, w, t] => [r.to_string(), w.to_string(), t.to_string()],
        _ => return Err("empty list".into()),
    })
}

/// fio's `split_parse_ddir` + `bssplit_ddir`.
fn parse_bssplit_dir(list: &str, kb: u32) -> Result<Vec<BsSplit>, String> {
    let mut entries: Vec<(u64, Option<u32>)> = Vec::new();
    for item in list.split(':') {
        if item.is_empty() {
            break;
        }
        if entries.len() == 64 {
            return Err("hit max of 64 split entries".into());
        }
        let (bs, perc) = match item.find('/') {
            Some(i) => (&item[..i], Some(&item[i + 1..])),
            None => (item, None),
        };
        let bs = match parse_size_token(bs, kb) {
            Ok(Num::Int(n)) if n > 0 => n as u64,
            _ => return Err(format!("split conversion failed for '{item}'")),
        };
        let perc = match perc {
            None => None,
            Some(p) if p.trim().is_empty() => None,
            Some(p) => {
                let n = parse_uint_token(p).map_err(|_| format!("bad percentage in '{item}'"))?;
                match n.min(100) {
                    0 => None,
                    n => Some(n as u32),
                }
            }
        };
        entries.push((bs, perc));
    }
    let total: u32 = entries.iter().filter_map(|e| e.1).sum();
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    if total > 100 {
        return Err("bssplit percentages add to more than 100%".into());
    }
    let share = (100 - total).checked_div(missing).unwrap_or(0);
    let mut out: Vec<BsSplit> = entries
        .into_iter()
        .map(|(bs, p)| BsSplit {
            bs,
            percent: p.unwrap_or(share),
        })
        .collect();
    out.sort_by_key(|e| e.percent);
    Ok(out)
}

fn parse_zones_dir(list: &str, abs: bool, kb: u32) -> Result<Vec<ZoneSplit>, String> {
    let mut raw: Vec<(u64, Option<u64>)> = Vec::new();
    for item in list.split(':') {
        if item.is_empty() {
            break;
        }
        if raw.len() == 256 {
            return Err("hit max of 256 split entries".into());
        }
        let (acc, size) = match item.find('/') {
            Some(i) => (&item[..i], Some(&item[i + 1..])),
            None => (item, None),
        };
        let acc = match parse_size_token(acc, kb) {
            Ok(Num::Int(n)) if n >= 0 => n as u64,
            _ => return Err(format!("split conversion failed for '{item}'")),
        };
        let size = match size {
            None => None,
            Some(p) if abs => match parse_size_token(p, kb) {
                Ok(Num::Int(n)) if n >= 0 => Some(n as u64),
                _ => return Err(format!("split conversion failed for '{item}'")),
            },
            Some(p) if p.trim().is_empty() => None,
            Some(p) => match parse_uint_token(p) {
                Ok(0) => None,
                Ok(n) => Some(n.min(100)),
                Err(_) => return Err(format!("bad percentage in '{item}'")),
            },
        };
        raw.push((acc, size));
    }
    let perc: u64 = raw.iter().map(|e| e.0).sum();
    let sperc: u64 = if abs {
        0
    } else {
        raw.iter().filter_map(|e| e.1).sum()
    };
    if perc > 100 || sperc > 100 {
        return Err("zone_split percentages add to more than 100%".into());
    }
    if perc < 100 {
        return Err(format!(
            "access percentage don't add up to 100 for zoned random distribution (got={perc})"
        ));
    }
    let smissing = raw.iter().filter(|e| e.1.is_none()).count() as u64;
    let share = if !abs && smissing > 0 {
        (100 - sperc) / smissing
    } else {
        0
    };
    Ok(raw
        .into_iter()
        .map(|(a, s)| ZoneSplit {
            access_percent: a as u32,
            size: s.unwrap_or(share),
        })
        .collect())
}

fn split_distr(nr: &str) -> Result<(f64, Option<f64>), String> {
    let (v, c) = match nr.find(':') {
        Some(i) => (&nr[..i], Some(&nr[i + 1..])),
        None => (nr, None),
    };
    let v =
        parse_float_token(v).map_err(|_| format!("random postfix parsing failed for '{nr}'"))?;
    let c = match c {
        Some(c) => Some(
            parse_float_token(c)
                .map_err(|_| format!("random postfix parsing failed for '{nr}'"))?,
        ),
        None => None,
    };
    Ok((v, c))
}

fn check_distr(kind: &str, val: f64, center: f64) -> Result<(), String> {
    if center != -1.0 && !(0.0..=1.0).contains(&center) {
        return Err("distribution center out of range (0 <= center <= 1.0)".into());
    }
    match kind {
        "zipf" if val == 1.0 => Err("zipf theta must be different than 1.0".into()),
        "pareto" if val <= 0.0 || val >= 1.0 => {
            Err("pareto input out of range (0 < input < 1.0)".into())
        }
        "normal" if !(0.0..100.0).contains(&val) => {
            Err("normal deviation out of range (0 <= input < 100.0)".into())
        }
        _ => Ok(()),
    }
}

fn steadystate_cb(s: &str, kb: u32) -> Result<(), String> {
    let Some(nr) = postfix(s) else {
        return Err("steadystate threshold must be specified in addition to criterion".into());
    };
    if let Some(pct) = nr.strip_suffix('%') {
        parse_float_token(pct)
            .map_err(|_| "could not parse steadystate threshold percentage".to_string())?;
    } else if s.starts_with("iops") {
        parse_float_token(nr)
            .map_err(|_| "steadystate IOPS threshold postfix parsing failed".to_string())?;
    } else {
        match parse_size_token(nr, kb) {
            Ok(Num::Int(n)) if n >= 0 => {}
            _ => return Err("steadystate BW threshold postfix parsing failed".into()),
        }
    }
    Ok(())
}

fn check_cpu_list(s: &str) -> Result<(), String> {
    for item in s.trim().split(',') {
        if item.is_empty() {
            break;
        }
        let mut it = item.splitn(2, '-');
        for n in it.by_ref() {
            if n.is_empty() || !n.bytes().all(|c| c.is_ascii_digit()) || n.len() > 6 {
                return Err(format!("invalid CPU list entry '{item}'"));
            }
        }
    }
    Ok(())
}

fn check_ignore_error(s: &str) -> Result<(), String> {
    const ERRS: &[&str] = &[
        "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
        "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
        "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC",
        "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE",
    ];
    let groups: Vec<&str> = s.trim().split(',').collect();
    if groups.len() > 3 {
        return Err("illegal error type".into());
    }
    for g in groups {
        for e in g.split(':') {
            if e.is_empty() {
                break;
            }
            let ok = if e.starts_with('E') {
                ERRS.contains(&e)
            } else {
                let t = e.strip_prefix('-').unwrap_or(e);
                !t.is_empty()
                    && t.bytes().all(|c| c.is_ascii_digit())
                    && t.bytes().any(|c| c != b'0')
            };
            if !ok {
                return Err(format!("unknown error {e}, please use number value"));
            }
        }
    }
    Ok(())
}

fn check_cmdprio_bssplit(s: &str, kb: u32) -> Result<(), String> {
    for dir in s.split(',') {
        for entry in dir.split(':') {
            if entry.is_empty() {
                break;
            }
            let fields: Vec<&str> = entry.split('/').collect();
            if fields.len() == 3 {
                return Err(format!("invalid cmdprio_bssplit format '{entry}'"));
            }
            match parse_size_token(fields[0], kb) {
                Ok(Num::Int(n)) if n >= 0 => {}
                _ => return Err(format!("split conversion failed for '{entry}'")),
            }
            for f in &fields[1..] {
                if !f.is_empty() {
                    parse_uint_token(f)
                        .map_err(|_| format!("invalid cmdprio_bssplit format '{entry}'"))?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::find_option;

    fn parts(v: &str, cd: bool) -> Vec<(String, bool)> {
        split_parts(v, cd)
    }

    #[test]
    fn splitting() {
        assert_eq!(parts("8k", true), vec![("8k".into(), false)]);
        assert_eq!(
            parts("8k,32k", true),
            vec![("8k".into(), true), ("32k".into(), false)]
        );
        assert_eq!(
            parts("8k,32k,", true),
            vec![
                ("8k".into(), true),
                ("32k".into(), true),
                ("".into(), false)
            ]
        );
        assert_eq!(
            parts(",8k", true),
            vec![("".into(), true), ("8k".into(), false)]
        );
        assert_eq!(parts("-5", true), vec![("-5".into(), false)]);
        assert_eq!(
            parts("1m-2m", true),
            vec![("1m".into(), true), ("2m".into(), false)]
        );
        assert_eq!(parts("1k-4k", false), vec![("1k-4k".into(), false)]);
    }

    #[test]
    fn per_direction_bs() {
        let bs = find_option("bs").unwrap();
        let mut st = OptState::with_defaults();
        st.handle(bs, Some("8k,32k")).unwrap();
        assert_eq!(st.num("bs").map(Scalar::int), [8192, 32768, 32768]);
        st.handle(bs, Some("8k,32k,")).unwrap();
        let mut st2 = OptState::with_defaults();
        st2.handle(bs, Some("8k,32k,")).unwrap();
        assert_eq!(st2.num("bs").map(Scalar::int), [8192, 32768, 4096]);
        let mut st3 = OptState::with_defaults();
        st3.handle(bs, Some(",8k")).unwrap();
        assert_eq!(st3.num("bs").map(Scalar::int), [4096, 8192, 8192]);
        assert!(st3.handle(bs, Some("4q")).is_err());
        assert!(st3.handle(bs, Some("")).is_err());
    }

    #[test]
    fn posvals() {
        let rw = find_option("rw").unwrap();
        assert_eq!(posval_match(rw.values, "randread:4"), Some("randread"));
        assert_eq!(posval_match(rw.values, "read"), Some("read"));
        assert_eq!(posval_match(rw.values, "rea"), None);
        assert_eq!(posval_match(rw.values, " read"), None);
    }

    #[test]
    fn names() {
        assert_eq!(split_names("a:b"), vec!["a", "b"]);
        assert_eq!(split_names(r"iscsi\://x\:y/1"), vec!["iscsi://x:y/1"]);
    }

    #[test]
    fn bssplit() {
        let l = parse_bssplit_dir("4k/50:16k/30:64k/20", 1024).unwrap();
        assert_eq!(l.len(), 3);
        let l = parse_bssplit_dir("4k/:16k/", 1024).unwrap();
        assert_eq!(l[0].percent, 50);
        assert!(parse_bssplit_dir("4k/60:8k/60", 1024).is_err());
    }
}
