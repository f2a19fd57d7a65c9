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
    /// Seconds as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
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

/// Split "12.5ms" into (12.5, "ms"). Rejects empty, signed-negative and non-numeric input.
fn split_number(s: &str) -> Result<(f64, &str), ParseError> {
    let t = s.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
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
        "" => {
            return Err(ParseError::new(
                s,
                "missing unit; expected one of ns, us, ms, s, min",
            ))
        }
        _ => {
            return Err(ParseError::new(
                s,
                "unknown unit; expected one of ns, us, ms, s, min",
            ))
        }
    };
    let ns = v * mult;
    if ns > u64::MAX as f64 / 2.0 {
        return Err(ParseError::new(s, "is too large"));
    }
    Ok(Nanos(ns.round() as u64))
}

/// Parse a rate such as "50mbit", "1.5gbit", "800kbit", "12mbps" (tc: "bps" means bytes/s).
pub fn parse_rate(s: &str) -> Result<Rate, ParseError> {
    let (v, unit) = split_number(s)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "bps" => 8.0,
        "kbps" => 8e3,
        "mbps" => 8e6,
        "gbps" => 8e9,
        "" => {
            return Err(ParseError::new(
                s,
                "missing unit; expected one of bit, kbit, mbit, gbit (or bps, kbps, mbps, gbps = bytes/s)",
            ))
        }
        _ => {
            return Err(ParseError::new(
                s,
                "unknown unit; expected one of bit, kbit, mbit, gbit (or bps, kbps, mbps, gbps = bytes/s)",
            ))
        }
    };
    let bps = v * mult;
    if bps > 1e15 {
        return Err(ParseError::new(s, "is too large (max 1000 tbit)"));
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
    fn rates_parse_with_units() {
        assert_eq!(parse_rate("50mbit").unwrap(), Rate::from_mbps(50));
        assert_eq!(parse_rate("1.5gbit").unwrap().bps(), 1_500_000_000);
        assert_eq!(parse_rate("800kbit").unwrap().bps(), 800_000);
        assert_eq!(parse_rate("1mbps").unwrap().bps(), 8_000_000);
        assert!(parse_rate("50")
            .unwrap_err()
            .to_string()
            .contains("missing unit"));
        assert!(parse_rate("-5mbit").is_err());
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
    fn display_round_trips() {
        for s in ["15ms", "250us", "2s", "7ns"] {
            assert_eq!(parse_duration(s).unwrap().to_string(), s);
        }
        for s in ["50mbit", "1gbit", "800kbit"] {
            assert_eq!(parse_rate(s).unwrap().to_string(), s);
        }
    }
}
