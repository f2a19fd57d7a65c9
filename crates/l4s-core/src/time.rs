//! Virtual-or-wall time in nanoseconds and link rates in bits per second.
//! Parsing follows tc(8) unit conventions ("50mbit", "15ms", "250us").

use crate::error::ParseError;
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in time or a duration, in nanoseconds. The caller owns the clock:
/// the simulator passes virtual time, the emulator passes a monotonic wall clock.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Time zero / no duration.
    pub const ZERO: Nanos = Nanos(0);
    /// The far future: "never".
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// `ns` nanoseconds.
    pub const fn from_ns(ns: u64) -> Self {
        Nanos(ns)
    }
    /// `us` microseconds.
    pub const fn from_us(us: u64) -> Self {
        Nanos(us * 1_000)
    }
    /// `ms` milliseconds.
    pub const fn from_ms(ms: u64) -> Self {
        Nanos(ms * 1_000_000)
    }
    /// `s` seconds.
    pub const fn from_secs(s: u64) -> Self {
        Nanos(s * 1_000_000_000)
    }
    /// Rounds to the nearest nanosecond; negative inputs saturate at zero.
    pub fn from_secs_f64(s: f64) -> Self {
        Nanos((s * 1e9).round().max(0.0) as u64)
    }
    /// Whole nanoseconds.
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// Seconds; a division so whole and decimal seconds print exactly (30 s is 30.0, not
    /// 30.000000000000004 as `ns · 1e-9` gives).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Milliseconds as a float.
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    /// Microseconds as a float.
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 * 1e-3
    }
    /// `self - other`, zero if negative.
    pub const fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
    /// A short form for messages: the exact `Display` form when it has at most four
    /// digits, else four significant digits of the largest unit below the value, rounded
    /// toward the inside of a range whose `up` bound this is (`up = true`: an upper bound,
    /// rounded down), so every value the message allows really is allowed.
    pub fn bound_display(self, up: bool) -> String {
        let exact = self.to_string();
        if exact
            .trim_end_matches(|c: char| c.is_ascii_alphabetic())
            .len()
            <= 4
        {
            return exact;
        }
        let (unit, name) = [(1_000_000_000u64, "s"), (1_000_000, "ms"), (1_000, "us")]
            .into_iter()
            .find(|&(u, _)| self.0 >= u)
            .unwrap_or((1, "ns"));
        // Keep four significant digits of `self / unit`.
        let whole = self.0 / unit;
        let digits = whole.to_string().len() as u32;
        let keep = 4u32.saturating_sub(digits);
        let step = unit / 10u64.pow(keep).min(unit);
        let q = if up {
            self.0 / step
        } else {
            self.0.div_ceil(step)
        };
        let scaled = q as f64 * step as f64 / unit as f64;
        format!("{scaled:.*}{name}", keep as usize)
    }
    /// `self + other`, `MAX` on overflow.
    pub const fn saturating_add(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(other.0))
    }
    /// The earlier of two times.
    pub fn min(self, other: Nanos) -> Nanos {
        if self <= other {
            self
        } else {
            other
        }
    }
    /// The later of two times.
    pub fn max(self, other: Nanos) -> Nanos {
        if self >= other {
            self
        } else {
            other
        }
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 + rhs.0)
    }
}
impl AddAssign for Nanos {
    fn add_assign(&mut self, rhs: Nanos) {
        self.0 += rhs.0;
    }
}
impl Sub for Nanos {
    type Output = Nanos;
    /// Saturating: a "duration since" that would be negative is zero.
    fn sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(rhs.0))
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns == 0 {
            write!(f, "0s")
        } else if ns.is_multiple_of(1_000_000_000) {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns.is_multiple_of(1_000_000) {
            write!(f, "{}ms", ns / 1_000_000)
        } else if ns.is_multiple_of(1_000) {
            write!(f, "{}us", ns / 1_000)
        } else {
            write!(f, "{}ns", ns)
        }
    }
}

/// A rate in bits per second.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Rate(pub u64);

impl Rate {
    /// `bps` bits per second.
    pub const fn from_bps(bps: u64) -> Self {
        Rate(bps)
    }
    /// `mbps` megabits (10^6 bits) per second.
    pub const fn from_mbps(mbps: u64) -> Self {
        Rate(mbps * 1_000_000)
    }
    /// Megabits per second as a float, rounded to whole bits/s.
    pub fn from_mbps_f64(mbps: f64) -> Self {
        Rate((mbps * 1e6).round().max(0.0) as u64)
    }
    /// Bits per second.
    pub const fn bps(self) -> u64 {
        self.0
    }
    /// Megabits per second as a float.
    pub fn mbps(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    /// Exact serialisation time of `bytes` at this rate, rounded up to the next nanosecond
    /// so that back-to-back packets never exceed the rate. Zero rate gives `Nanos::MAX`.
    pub fn tx_time(self, bytes: u64) -> Nanos {
        if self.0 == 0 {
            return Nanos::MAX;
        }
        let bits = bytes as u128 * 8 * 1_000_000_000;
        let r = self.0 as u128;
        Nanos(bits.div_ceil(r).min(u64::MAX as u128) as u64)
    }
    /// Bytes that this rate carries in `dt`.
    pub fn bytes_in(self, dt: Nanos) -> f64 {
        self.0 as f64 * dt.as_secs_f64() / 8.0
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b != 0 && b.is_multiple_of(1_000_000_000) {
            write!(f, "{}gbit", b / 1_000_000_000)
        } else if b != 0 && b.is_multiple_of(1_000_000) {
            write!(f, "{}mbit", b / 1_000_000)
        } else if b != 0 && b.is_multiple_of(1_000) {
            write!(f, "{}kbit", b / 1_000)
        } else {
            write!(f, "{}bit", b)
        }
    }
}

/// Split "12.5ms" into (12.5, "ms"); "1e3us" is (1000, "us"). Rejects empty, negative and
/// non-numeric input.
fn split_number(s: &str) -> Result<(f64, &str), ParseError> {
    let t = s.trim();
    let b = t.as_bytes();
    let mut end = 0;
    while end < b.len() && (b[end].is_ascii_digit() || matches!(b[end], b'.' | b'-' | b'+')) {
        end += 1;
    }
    // An exponent only when digits follow ("1e30gbit"); no unit starts with "e".
    if end > 0 && end < b.len() && matches!(b[end], b'e' | b'E') {
        let mut k = end + 1;
        if k < b.len() && matches!(b[k], b'+' | b'-') {
            k += 1;
        }
        if k < b.len() && b[k].is_ascii_digit() {
            while k < b.len() && b[k].is_ascii_digit() {
                k += 1;
            }
            end = k;
        }
    }
    let (num, unit) = t.split_at(end);
    if num.is_empty() {
        return Err(ParseError::new(s, "no number in front of the unit"));
    }
    let v: f64 = num
        .parse()
        .map_err(|_| ParseError::new(s, "not a number"))?;
    if !v.is_finite() {
        return Err(ParseError::new(s, "not a finite number"));
    }
    if v < 0.0 {
        return Err(ParseError::new(s, "is negative"));
    }
    Ok((v, unit.trim()))
}

/// Parse a duration such as "15ms", "250us", "1.5s", "100ns", "2min". A bare number is rejected:
/// a unit is required so "15" can never silently mean 15 ns.
pub fn parse_duration(s: &str) -> Result<Nanos, ParseError> {
    let (v, unit) = split_number(s)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "ns" => 1.0,
        "us" | "µs" | "usec" => 1e3,
        "ms" | "msec" => 1e6,
        "s" | "sec" | "secs" => 1e9,
        "min" => 60e9,
        "h" | "hr" | "hour" | "hours" => 3600e9,
        "" => {
            return Err(ParseError::new(
                s,
                "missing unit; expected one of ns, us, ms, s, min, h",
            ))
        }
        _ => {
            return Err(ParseError::new(
                s,
                "unknown unit; expected one of ns, us, ms, s, min, h",
            ))
        }
    };
    let ns = v * mult;
    if ns > u64::MAX as f64 / 2.0 {
        return Err(ParseError::new(s, "is too large"));
    }
    Ok(Nanos(ns.round() as u64))
}

/// Largest rate a scenario may name: 1000 Tbit/s.
pub const MAX_RATE_BPS: f64 = 1e15;

/// Rate units in words for messages.
const RATE_UNITS: &str =
    "bit, kbit, mbit, gbit, tbit (also Mbit/s, Mb/s; bits) or byte, kbyte, mbyte, gbyte (bytes)";

/// Bits per unit of a rate suffix, or why it is refused. Case is ignored except for the b/B
/// of slash forms, where "Mb/s" is megabits and "MB/s" is refused as easily mistaken.
fn rate_multiplier(value: f64, num: &str, unit: &str, input: &str) -> Result<f64, ParseError> {
    let prefix = |p: &str| match p {
        "" => Some(1.0),
        "k" => Some(1e3),
        "m" => Some(1e6),
        "g" => Some(1e9),
        "t" => Some(1e12),
        _ => None,
    };
    let lower = unit.to_ascii_lowercase();
    if lower.is_empty() {
        return Err(ParseError::new(
            input,
            &format!("missing unit; expected one of {RATE_UNITS}"),
        ));
    }
    // "50mbit", "50Mbit/s", "50kbit"
    if let Some(p) = lower.strip_suffix("bit/s").or(lower.strip_suffix("bit")) {
        if let Some(m) = prefix(p) {
            return Ok(m);
        }
    }
    if let Some(p) = lower.strip_suffix("byte/s").or(lower.strip_suffix("byte")) {
        if let Some(m) = prefix(p) {
            return Ok(8.0 * m);
        }
    }
    // "50Mb/s" (bits) but not "50MB/s": the case of b is the only difference.
    if let Some(p) = unit.strip_suffix("b/s") {
        if let Some(m) = prefix(&p.to_ascii_lowercase()) {
            return Ok(m);
        }
    }
    let ambiguous = lower
        .strip_suffix("bps")
        .or_else(|| unit.strip_suffix("B/s").map(|_| &lower[..lower.len() - 3]));
    if let Some(p) = ambiguous {
        if prefix(p).is_some() {
            // tc reads "mbps" as megabytes/s, most people as megabits/s: never guess.
            let word = match p {
                "k" => "kilo",
                "m" => "mega",
                "g" => "giga",
                "t" => "tera",
                _ => "",
            };
            return Err(ParseError::new(
                input,
                &format!(
                    "is ambiguous: write \"{num}{p}bit\" for {num} {word}bits/s, or \
                     \"{num}{p}byte\" for {num} {word}bytes/s (= {}{p}bit, how tc reads \
                     \"{p}bps\")",
                    value * 8.0
                ),
            ));
        }
    }
    Err(ParseError::new(
        input,
        &format!("has an unknown unit; expected one of {RATE_UNITS}"),
    ))
}

/// Parse a rate such as "50mbit", "1.5gbit", "800kbit", "100Mbit/s", "20Mb/s", "2mbyte".
/// tc's "bps" spellings are refused as ambiguous (tc: bytes/s; most readers: bits/s).
pub fn parse_rate(s: &str) -> Result<Rate, ParseError> {
    let (v, unit) = split_number(s)?;
    let num = s.trim();
    let num = &num[..num.len() - unit.len()].trim_end();
    let bps = v * rate_multiplier(v, num, unit, s)?;
    if bps > MAX_RATE_BPS {
        return Err(ParseError::new(
            s,
            &format!("is out of range: {bps:.3e} bit/s; at most 1000tbit (1e15 bit/s)"),
        ));
    }
    Ok(Rate(bps.round() as u64))
}

// Scenario files write durations and rates as strings ("15ms", "50mbit"); the parse error
// becomes the serde error, to which the scenario loader prepends the field path.
impl<'de> serde::Deserialize<'de> for Nanos {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s).map_err(|e| {
            serde::de::Error::custom(format!("{e}; expected a duration like \"15ms\""))
        })
    }
}

impl<'de> serde::Deserialize<'de> for Rate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_rate(&s)
            .map_err(|e| serde::de::Error::custom(format!("{e}; expected a rate like \"50mbit\"")))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bound_display_rounds_toward_the_inside_of_the_range() {
        // Short exact forms are kept.
        assert_eq!(Nanos::from_us(1).bound_display(true), "1us");
        assert_eq!(Nanos::from_ms(1500).bound_display(true), "1500ms");
        // u32::MAX ns (DualPI2's tupdate ceiling) is 4.294967295 s: an upper bound rounds down.
        assert_eq!(Nanos(u32::MAX as u64).bound_display(true), "4.294s");
        assert_eq!(Nanos(u32::MAX as u64).bound_display(false), "4.295s");
        // u32::MAX us (DualPI2's target ceiling) is 4294.967295 s.
        assert_eq!(Nanos::from_us(u32::MAX as u64).bound_display(true), "4294s");
        assert_eq!(Nanos(1_234_567).bound_display(false), "1.235ms");
        // Never an unallowed value: the shown upper bound is <= the real one.
        for ns in [999_999_999u64, 12_345_678_901, 7_777_777] {
            let shown = Nanos(ns).bound_display(true);
            let back: f64 = shown.trim_end_matches(char::is_alphabetic).parse().unwrap();
            let unit = if shown.ends_with("ms") {
                1e6
            } else if shown.ends_with("us") {
                1e3
            } else {
                1e9
            };
            assert!(back * unit <= ns as f64 + 0.5, "{shown} > {ns} ns");
        }
    }
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("15ms").unwrap(), Nanos::from_ms(15));
        assert_eq!(parse_duration("250us").unwrap(), Nanos::from_us(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Nanos::from_ms(1500));
        assert_eq!(parse_duration(" 2min ").unwrap(), Nanos::from_secs(120));
        assert_eq!(parse_duration("0s").unwrap(), Nanos::ZERO);
    }

    #[test]
    fn bad_durations_say_why() {
        let e = parse_duration("-1ms").unwrap_err();
        assert!(e.to_string().contains("negative"), "{e}");
        assert!(parse_duration("15")
            .unwrap_err()
            .to_string()
            .contains("missing unit"));
        assert!(parse_duration("15 parsecs")
            .unwrap_err()
            .to_string()
            .contains("unknown unit"));
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("1.2.3ms").is_err());
    }

    #[test]
    fn hours_are_a_duration_unit() {
        assert_eq!(parse_duration("10h").unwrap(), Nanos::from_secs(36_000));
        assert_eq!(
            parse_duration("1.5h").unwrap(),
            parse_duration("90min").unwrap()
        );
        assert_eq!(parse_duration("2 hours").unwrap(), Nanos::from_secs(7_200));
        let e = parse_duration("3d").unwrap_err().to_string();
        assert!(e.contains("min, h"), "{e}");
    }

    #[test]
    fn rates_parse_with_units() {
        assert_eq!(parse_rate("50mbit").unwrap(), Rate::from_mbps(50));
        assert_eq!(parse_rate("1.5gbit").unwrap().bps(), 1_500_000_000);
        assert_eq!(parse_rate("800kbit").unwrap().bps(), 800_000);
        assert!(parse_rate("50")
            .unwrap_err()
            .to_string()
            .contains("missing unit"));
        assert!(parse_rate("-5mbit").is_err());
    }

    #[test]
    fn rate_spellings_for_bits_and_bytes() {
        for s in [
            "50mbit", "50Mbit", "50MBIT", "50Mbit/s", "50Mb/s", "50mb/s", "50 mbit",
        ] {
            assert_eq!(parse_rate(s).unwrap(), Rate::from_mbps(50), "{s}");
        }
        assert_eq!(parse_rate("800kb/s").unwrap().bps(), 800_000);
        assert_eq!(parse_rate("1Gbit/s").unwrap().bps(), 1_000_000_000);
        assert_eq!(parse_rate("9600bit/s").unwrap().bps(), 9_600);
        // Bytes only when spelled out: 6.25 megabytes/s = 50 megabits/s.
        assert_eq!(parse_rate("6.25mbyte").unwrap(), Rate::from_mbps(50));
        assert_eq!(parse_rate("1kbyte/s").unwrap().bps(), 8_000);
        assert_eq!(parse_rate("1e3kbit").unwrap(), Rate::from_mbps(1));
    }

    #[test]
    fn bps_spellings_are_ambiguous_and_show_both_readings() {
        for (s, bits, bytes) in [
            (
                "50Mbps",
                "\"50mbit\" for 50 megabits/s",
                "\"50mbyte\" for 50 megabytes/s",
            ),
            ("50mbps", "\"50mbit\"", "\"50mbyte\""),
            ("50MBps", "\"50mbit\"", "\"50mbyte\""),
            ("50MB/s", "\"50mbit\"", "\"50mbyte\""),
            ("12kbps", "\"12kbit\"", "\"12kbyte\""),
            ("100bps", "\"100bit\"", "\"100byte\""),
        ] {
            let e = parse_rate(s).unwrap_err().to_string();
            assert!(e.contains("ambiguous"), "{s}: {e}");
            assert!(e.contains(bits) && e.contains(bytes), "{s}: {e}");
        }
        let e = parse_rate("50Mbps").unwrap_err().to_string();
        assert!(e.contains("= 400mbit"), "the byte reading in bits: {e}");
    }

    #[test]
    fn huge_and_unknown_rates_say_which() {
        let e = parse_rate("1e30gbit").unwrap_err().to_string();
        assert!(e.contains("out of range") && e.contains("1000tbit"), "{e}");
        assert!(!e.contains("unknown unit"), "{e}");
        let e = parse_rate("5furlongs").unwrap_err().to_string();
        assert!(e.contains("unknown unit") && e.contains("mbit"), "{e}");
        assert!(parse_duration("1e3ms").unwrap() == Nanos::from_secs(1));
    }

    #[test]
    fn serialisation_time_is_exact() {
        // 1500 B at 12 Mb/s = 12000 bits / 12e6 b/s = 1 ms exactly.
        assert_eq!(Rate::from_mbps(12).tx_time(1500), Nanos::from_ms(1));
        // 1514 B at 50 Mb/s = 242.24 us -> rounded up to the next ns.
        assert_eq!(Rate::from_mbps(50).tx_time(1514), Nanos(242_240));
        assert_eq!(Rate::from_bps(3).tx_time(1), Nanos(2_666_666_667));
        assert_eq!(Rate(0).tx_time(1), Nanos::MAX);
    }

    #[test]
    fn seconds_are_exact_for_whole_durations() {
        assert_eq!(Nanos::from_secs(30).as_secs_f64(), 30.0);
        assert_eq!(Nanos::from_ms(1500).as_secs_f64(), 1.5);
        assert_eq!(parse_duration("0.1s").unwrap().as_secs_f64(), 0.1);
    }

    #[test]
    fn display_round_trips() {
        for s in ["15ms", "250us", "2s", "7ns"] {
            assert_eq!(parse_duration(s).unwrap().to_string(), s);
        }
        for s in ["50mbit", "1gbit", "800kbit"] {
            assert_eq!(parse_rate(s).unwrap().to_string(), s);
        }
    }
}
