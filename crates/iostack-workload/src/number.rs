//! Number, size and time parsing with fio 3.33's suffix rules.
//!
//! fio itself is lenient: `strtoll` followed by a best-effort suffix lookup, so `4q`
//! is 4 bytes, `1.5g` is 1 byte and `10sec` is 10 microseconds. iostack accepts the
//! same grammar fio documents and measures, and rejects trailing garbage instead of
//! silently ignoring it.

/// Unit prefix base (`kb_base`).
pub const KB_BASE_DEFAULT: u32 = 1024;

/// Why a number, size or time value does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NumberError {
    /// Nothing but blanks.
    Empty,
    /// `0x` without hexadecimal digits after it.
    BadHex,
    /// More than fio's 64-bit range.
    TooLarge,
    /// `1.5g`: fio would silently truncate.
    Fractional,
    /// No digits where a number should be.
    NotANumber,
    /// `-10%`.
    NegativePercentage,
    /// A size suffix fio does not know.
    UnknownSuffix(String),
    /// A time unit fio does not know.
    UnknownTimeUnit(String),
    /// Not a plain unsigned integer.
    NotInteger,
    /// Not a finite floating point value.
    NotFloat,
    /// A negative size.
    NegativeSize,
    /// `N%` where a size is needed.
    PercentNotSize,
    /// A negative time.
    NegativeTime,
    /// A time whose nanoseconds do not fit in 64 bits.
    TimeTooLarge,
}

impl std::fmt::Display for NumberError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NumberError::Empty => f.write_str("empty value"),
            NumberError::BadHex => f.write_str("bad hexadecimal number"),
            NumberError::TooLarge => f.write_str("number too large"),
            NumberError::Fractional => f.write_str("fractional values are not supported"),
            NumberError::NotANumber => f.write_str("not a number"),
            NumberError::NegativePercentage => f.write_str("negative percentage"),
            NumberError::UnknownSuffix(s) => write!(f, "unknown size suffix '{s}'"),
            NumberError::UnknownTimeUnit(s) => write!(f, "unknown time unit '{s}'"),
            NumberError::NotInteger => f.write_str("not an integer"),
            NumberError::NotFloat => f.write_str("not a floating point value"),
            NumberError::NegativeSize => f.write_str("negative size"),
            NumberError::PercentNotSize => f.write_str("percentage is not a size"),
            NumberError::NegativeTime => f.write_str("negative time"),
            NumberError::TimeTooLarge => f.write_str("time too large"),
        }
    }
}

impl std::error::Error for NumberError {}

/// The option handlers build their messages as text around these.
impl From<NumberError> for String {
    fn from(e: NumberError) -> String {
        e.to_string()
    }
}

/// A parsed size-like token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Num {
    /// Plain value (bytes or count); may be negative for signed options.
    Int(i128),
    /// `N%`.
    Percent(u64),
}

/// The multiplier of a size suffix (case-insensitive), following fio's
/// `__get_mult_bytes`: `k`, `kb`, `ki` are `kb_base`; only the three-letter `kib`
/// forms flip the base (1000 under kb_base=1024, 1024 under kb_base=1000); `b` is a
/// byte. Returns `None` for an unknown suffix.
///
/// ```
/// use iostack_workload::size_multiplier;
/// assert_eq!(size_multiplier("k", 1024), Some(1024));
/// assert_eq!(size_multiplier("KiB", 1024), Some(1000));
/// assert_eq!(size_multiplier("kib", 1000), Some(1024));
/// assert_eq!(size_multiplier("mi", 1024), Some(1 << 20));
/// assert_eq!(size_multiplier("q", 1024), None);
/// ```
pub fn size_multiplier(suffix: &str, kb_base: u32) -> Option<u64> {
    let s = suffix.to_ascii_lowercase();
    if s.is_empty() || s == "b" {
        return Some(1);
    }
    let bytes = s.as_bytes();
    let pow = match bytes[0] {
        b'k' => 1,
        b'm' => 2,
        b'g' => 3,
        b't' => 4,
        b'p' => 5,
        _ => return None,
    };
    let base: u64 = if kb_base == 1000 { 1000 } else { 1024 };
    let flipped: u64 = if base == 1000 { 1024 } else { 1000 };
    let mult = match &s[1..] {
        "" | "b" | "i" => base,
        "ib" => flipped,
        _ => return None,
    };
    let mut r: u64 = 1;
    for _ in 0..pow {
        r = r.checked_mul(mult)?;
    }
    Some(r)
}

fn split_sign(s: &str) -> (bool, &str) {
    if let Some(r) = s.strip_prefix('-') {
        (true, r)
    } else if let Some(r) = s.strip_prefix('+') {
        (false, r)
    } else {
        (false, s)
    }
}

fn digits_end(s: &str) -> usize {
    s.bytes()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(s.len())
}

/// Parse one size token (`4k`, `0x1000`, `10%`, `-8k`).
pub(crate) fn parse_size_token(tok: &str, kb_base: u32) -> Result<Num, NumberError> {
    let t = tok.trim_matches(|c: char| c.is_ascii_whitespace());
    if t.is_empty() {
        return Err(NumberError::Empty);
    }
    let (neg, body) = split_sign(t);
    if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        if hex.is_empty() || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(NumberError::BadHex);
        }
        let v = i128::from_str_radix(hex, 16).map_err(|_| NumberError::TooLarge)?;
        if v > i64::MAX as i128 {
            return Err(NumberError::TooLarge);
        }
        return Ok(Num::Int(if neg { -v } else { v }));
    }
    let end = digits_end(body);
    if end == 0 {
        if body.starts_with('.') || body.contains('.') {
            return Err(NumberError::Fractional);
        }
        return Err(NumberError::NotANumber);
    }
    let v: i128 = body[..end]
        .parse::<i128>()
        .ok()
        .filter(|v| *v <= i64::MAX as i128)
        .ok_or(NumberError::TooLarge)?;
    let suffix = &body[end..];
    if suffix.starts_with('.') {
        return Err(NumberError::Fractional);
    }
    if suffix == "%" {
        if neg {
            return Err(NumberError::NegativePercentage);
        }
        return Ok(Num::Percent(v as u64));
    }
    let mult = size_multiplier(suffix, kb_base)
        .ok_or_else(|| NumberError::UnknownSuffix(suffix.to_string()))?;
    let r = v
        .checked_mul(mult as i128)
        .filter(|r| *r <= u64::MAX as i128)
        .ok_or(NumberError::TooLarge)?;
    Ok(Num::Int(if neg { -r } else { r }))
}

/// Multiplier (to microseconds) of a time suffix, as fio's `get_mult_time`:
/// `us`/`usec`, `ms`/`msec`, `s`, `m`, `h`, `d`; no suffix means seconds when
/// `seconds` is set, else microseconds.
pub(crate) fn time_multiplier_us(suffix: &str, seconds: bool) -> Option<u64> {
    let s = suffix.to_ascii_lowercase();
    Some(match s.as_str() {
        "" => {
            if seconds {
                1_000_000
            } else {
                1
            }
        }
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "s" => 1_000_000,
        "m" => 60 * 1_000_000,
        "h" => 3_600 * 1_000_000,
        "d" => 86_400 * 1_000_000,
        _ => return None,
    })
}

/// Parse one time token into microseconds.
pub(crate) fn parse_time_token(tok: &str, seconds: bool) -> Result<i128, NumberError> {
    let t = tok.trim_matches(|c: char| c.is_ascii_whitespace());
    if t.is_empty() {
        return Err(NumberError::Empty);
    }
    let (neg, body) = split_sign(t);
    let end = digits_end(body);
    if end == 0 {
        return Err(NumberError::NotANumber);
    }
    let v: i128 = body[..end]
        .parse::<i128>()
        .ok()
        .filter(|v| *v <= i64::MAX as i128)
        .ok_or(NumberError::TooLarge)?;
    let suffix = &body[end..];
    if suffix.starts_with('.') {
        return Err(NumberError::Fractional);
    }
    let mult = time_multiplier_us(suffix, seconds)
        .ok_or_else(|| NumberError::UnknownTimeUnit(suffix.to_string()))?;
    let r = v
        .checked_mul(mult as i128)
        .filter(|r| *r <= u64::MAX as i128)
        .ok_or(NumberError::TooLarge)?;
    Ok(if neg { -r } else { r })
}

/// Parse an unsigned integer the way fio's `check_int` does (decimal or `0x` hex),
/// without trailing garbage.
pub(crate) fn parse_uint_token(tok: &str) -> Result<u64, NumberError> {
    let t = tok.trim_matches(|c: char| c.is_ascii_whitespace());
    let t = t.strip_prefix('+').unwrap_or(t);
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        if hex.is_empty() || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(NumberError::BadHex);
        }
        return u64::from_str_radix(hex, 16).map_err(|_| NumberError::TooLarge);
    }
    if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit()) {
        return Err(NumberError::NotInteger);
    }
    t.parse::<u64>().map_err(|_| NumberError::TooLarge)
}

/// Parse a finite floating point number.
pub(crate) fn parse_float_token(tok: &str) -> Result<f64, NumberError> {
    let t = tok.trim_matches(|c: char| c.is_ascii_whitespace());
    let ok_chars = !t.is_empty()
        && t.bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'+' | b'e' | b'E'));
    match t.parse::<f64>() {
        Ok(v) if ok_chars && v.is_finite() => Ok(v),
        _ => Err(NumberError::NotFloat),
    }
}

/// Parse a byte size such as `4k`, `1MiB` or `0x1000` under `kb_base` (1024 or 1000).
///
/// ```
/// use iostack_workload::parse_size;
/// assert_eq!(parse_size("4k", 1024), Ok(4096));
/// assert_eq!(parse_size("1KiB", 1024), Ok(1000));
/// assert_eq!(parse_size("4k", 1000), Ok(4000));
/// assert!(parse_size("4q", 1024).is_err());
/// ```
pub fn parse_size(s: &str, kb_base: u32) -> Result<u64, NumberError> {
    match parse_size_token(s, kb_base)? {
        Num::Int(v) if v >= 0 => Ok(v as u64),
        Num::Int(_) => Err(NumberError::NegativeSize),
        Num::Percent(_) => Err(NumberError::PercentNotSize),
    }
}

/// Default unit of a time value without suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Bare numbers are seconds (`runtime`, `ramp_time`, `startdelay`).
    Seconds,
    /// Bare numbers are microseconds (`thinktime`, latency options).
    Micros,
}

/// Parse a time value into nanoseconds.
///
/// ```
/// use iostack_workload::{parse_time_ns, TimeUnit};
/// assert_eq!(parse_time_ns("10", TimeUnit::Seconds), Ok(10_000_000_000));
/// assert_eq!(parse_time_ns("10", TimeUnit::Micros), Ok(10_000));
/// assert_eq!(parse_time_ns("2m", TimeUnit::Micros), Ok(120_000_000_000));
/// assert_eq!(parse_time_ns("5msec", TimeUnit::Seconds), Ok(5_000_000));
/// ```
pub fn parse_time_ns(s: &str, unit: TimeUnit) -> Result<u64, NumberError> {
    let us = parse_time_token(s, unit == TimeUnit::Seconds)?;
    if us < 0 {
        return Err(NumberError::NegativeTime);
    }
    u64::try_from(us)
        .ok()
        .and_then(|v| v.checked_mul(1000))
        .ok_or(NumberError::TimeTooLarge)
}

/// Evaluate the integer arithmetic fio hands to `bc` after replacing `$pagesize`,
/// `$mb_memory` or `$ncpus`: integers, `+ - * / % ^`, parentheses, unary signs;
/// division truncates like bc with `scale=0`.
pub(crate) fn eval_math(expr: &str) -> Result<i128, String> {
    struct P<'a> {
        s: &'a [u8],
        i: usize,
        depth: usize,
    }
    impl P<'_> {
        fn ws(&mut self) {
            while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
        }
        fn peek(&mut self) -> Option<u8> {
            self.ws();
            self.s.get(self.i).copied()
        }
        fn expr(&mut self) -> Result<i128, String> {
            let mut v = self.term()?;
            while let Some(c @ (b'+' | b'-')) = self.peek() {
                self.i += 1;
                let r = self.term()?;
                v = if c == b'+' {
                    v.checked_add(r)
                } else {
                    v.checked_sub(r)
                }
                .ok_or("overflow")?;
            }
            Ok(v)
        }
        fn term(&mut self) -> Result<i128, String> {
            let mut v = self.power()?;
            while let Some(c @ (b'*' | b'/' | b'%')) = self.peek() {
                self.i += 1;
                let r = self.power()?;
                v = match c {
                    b'*' => v.checked_mul(r).ok_or("overflow")?,
                    _ if r == 0 => return Err("divide by zero".into()),
                    b'/' => v / r,
                    _ => v % r,
                };
                if v.abs() > u64::MAX as i128 {
                    return Err("overflow".into());
                }
            }
            Ok(v)
        }
        fn power(&mut self) -> Result<i128, String> {
            let base = self.unary()?;
            if self.peek() == Some(b'^') {
                self.i += 1;
                let e = self.power()?;
                if e < 0 {
                    return Ok(0);
                }
                let mut r: i128 = 1;
                for _ in 0..e.min(200) {
                    r = r.checked_mul(base).ok_or("overflow")?;
                    if r.abs() > u64::MAX as i128 {
                        return Err("overflow".into());
                    }
                }
                return Ok(r);
            }
            Ok(base)
        }
        fn unary(&mut self) -> Result<i128, String> {
            match self.peek() {
                Some(b'-') => {
                    self.i += 1;
                    Ok(-self.unary()?)
                }
                Some(b'+') => {
                    self.i += 1;
                    self.unary()
                }
                _ => self.atom(),
            }
        }
        fn atom(&mut self) -> Result<i128, String> {
            match self.peek() {
                Some(b'(') => {
                    self.depth += 1;
                    if self.depth > 64 {
                        return Err("expression too deep".into());
                    }
                    self.i += 1;
                    let v = self.expr()?;
                    if self.peek() != Some(b')') {
                        return Err("missing ')'".into());
                    }
                    self.i += 1;
                    self.depth -= 1;
                    Ok(v)
                }
                Some(c) if c.is_ascii_digit() => {
                    let start = self.i;
                    while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                        self.i += 1;
                    }
                    let txt = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                    txt.parse::<i128>()
                        .ok()
                        .filter(|v| *v <= u64::MAX as i128)
                        .ok_or_else(|| "number too large".into())
                }
                Some(c) => Err(format!("syntax error at '{}'", c as char)),
                None => Err("syntax error: unexpected end".into()),
            }
        }
    }
    let mut p = P {
        s: expr.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.expr()?;
    if p.peek().is_some() {
        return Err(format!(
            "syntax error at '{}'",
            String::from_utf8_lossy(&p.s[p.i..])
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size_token("4k", 1024), Ok(Num::Int(4096)));
        assert_eq!(parse_size_token(" 4k ", 1024), Ok(Num::Int(4096)));
        assert_eq!(parse_size_token("0x10", 1024), Ok(Num::Int(16)));
        assert_eq!(parse_size_token("-8k", 1024), Ok(Num::Int(-8192)));
        assert_eq!(parse_size_token("10%", 1024), Ok(Num::Percent(10)));
        assert!(parse_size_token("4q", 1024).is_err());
        assert!(parse_size_token("1.5g", 1024).is_err());
        assert!(parse_size_token("k", 1024).is_err());
        assert!(parse_size_token("99999999999999999999999", 1024).is_err());
        assert!(parse_size_token("16777216p", 1024).is_err());
    }

    #[test]
    fn times() {
        assert_eq!(parse_time_token("10", true), Ok(10_000_000));
        assert_eq!(parse_time_token("10", false), Ok(10));
        assert_eq!(parse_time_token("10ms", true), Ok(10_000));
        assert_eq!(parse_time_token("1H", true), Ok(3_600_000_000));
        assert_eq!(parse_time_token("1d", false), Ok(86_400_000_000));
        assert!(parse_time_token("10sec", true).is_err());
        assert!(parse_time_token("abc", true).is_err());
    }

    #[test]
    fn math() {
        assert_eq!(eval_math("2*4096"), Ok(8192));
        assert_eq!(eval_math("5*1024*1024*8/8"), Ok(5 * 1024 * 1024));
        assert_eq!(eval_math("(1+2)*3"), Ok(9));
        assert_eq!(eval_math("7/2"), Ok(3));
        assert_eq!(eval_math("-7/2"), Ok(-3));
        assert_eq!(eval_math("2^10"), Ok(1024));
        assert!(eval_math("1/0").is_err());
        assert!(eval_math("4k*2").is_err());
        assert!(eval_math("(((").is_err());
    }
}
