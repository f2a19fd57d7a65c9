//! CSV writers for the command-line binary (the Python front end writes Parquet instead).
//!
//! Numbers are written as `Display` writes them (an f64 as its shortest round-trip digits,
//! never with an exponent; NaN as an empty cell) straight into a buffer reserved up front:
//! integers by `itoa`, separators by `push`, so `core::fmt` only formats the f64 values (one
//! `writeln!` per row, as before, parsed its format string and allocated a `String` per
//! optional cell; at 12 Mb/s, 30 s, CSV writing was a third of the run's instructions).

use crate::results::RunResults;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// Bytes reserved per CSV row up front (rows are 50-90 bytes), so the text grows once.
const ROW_BYTES: usize = 96;

/// Append `x` exactly as `format!("{x}")` prints it (shortest round-trip digits, no
/// exponent).
///
/// Fast path for values with at most 6 decimals and 15 significant digits (sample times on
/// the 16 ms grid, delays in ns / 1e6, packet counts): with `m = round(x * 1e6)`, if
/// `m / 1e6 == x` then x is the double nearest to the decimal m·10⁻⁶ (IEEE division rounds
/// correctly and |m| < 2^53 is exact), so that decimal round-trips; and at most one decimal
/// of ≤ 15 significant digits maps to a given double (15 = f64's DBL_DIG), so it is also the
/// shortest one, which is what `Display` prints. Everything else goes through `core::fmt`.
fn push_f64(out: &mut String, x: f64) {
    const SCALE: f64 = 1e6;
    let m = (x * SCALE).round();
    if m.abs() < 1e15 && m / SCALE == x {
        let neg = x.is_sign_negative();
        let m = m.abs() as u64; // < 1e15: exact
        let (int, frac) = (m / 1_000_000, m % 1_000_000);
        if neg {
            out.push('-'); // -0.0 prints as "-0", as Display does
        }
        push_int(out, int);
        if frac != 0 {
            let mut digits = [b'0'; 6];
            let mut f = frac;
            for d in digits.iter_mut().rev() {
                *d = b'0' + (f % 10) as u8;
                f /= 10;
            }
            let len = 6 - decimal_trailing_zeros(frac);
            out.push('.');
            digits[..len].iter().for_each(|&b| out.push(b as char));
        }
        return;
    }
    let _ = write!(out, "{x}");
}

/// Trailing decimal zeros of a non-zero integer.
fn decimal_trailing_zeros(mut x: u64) -> usize {
    let mut n = 0;
    while x.is_multiple_of(10) {
        x /= 10;
        n += 1;
    }
    n
}

/// An f64 cell that may be absent: NaN is an empty cell.
fn push_opt(out: &mut String, x: f64) {
    if !x.is_nan() {
        push_f64(out, x);
    }
}

fn push_int(out: &mut String, x: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(x));
}

/// samples.csv: t_s,queue,backlog_pkts,backlog_bytes,sojourn_ms,marks,drops,p_prime,p_c,p_cl
pub fn samples_csv(r: &RunResults) -> String {
    let s = &r.samples;
    let mut out = String::with_capacity((s.t_s.len() + 1) * ROW_BYTES);
    out.push_str("t_s,queue,backlog_pkts,backlog_bytes,sojourn_ms,marks,drops,p_prime,p_c,p_cl\n");
    for i in 0..s.t_s.len() {
        let q = r
            .queue_names
            .get(s.queue[i] as usize)
            .map_or("?", |x| x.as_str());
        push_f64(&mut out, s.t_s[i]);
        out.push(',');
        out.push_str(q);
        out.push(',');
        push_int(&mut out, s.backlog_pkts[i]);
        out.push(',');
        push_int(&mut out, s.backlog_bytes[i]);
        out.push(',');
        push_f64(&mut out, s.sojourn_ms[i]);
        out.push(',');
        push_int(&mut out, s.marks[i]);
        out.push(',');
        push_int(&mut out, s.drops[i]);
        out.push(',');
        push_opt(&mut out, s.p_prime[i]);
        out.push(',');
        push_opt(&mut out, s.p_c[i]);
        out.push(',');
        push_opt(&mut out, s.p_cl[i]);
        out.push('\n');
    }
    out
}

/// flows.csv: t_s,flow,cc,delivered_bytes,tput_mbps,cwnd_pkts,srtt_ms,pacing_mbps,ce_acked,target_mbps,acked_mbps
pub fn flows_csv(r: &RunResults) -> String {
    let s = &r.flows;
    let mut out = String::with_capacity((s.t_s.len() + 1) * ROW_BYTES);
    out.push_str("t_s,flow,cc,delivered_bytes,tput_mbps,cwnd_pkts,srtt_ms,pacing_mbps,ce_acked,target_mbps,acked_mbps\n");
    for i in 0..s.t_s.len() {
        let cc = r
            .flow_cc
            .get(s.flow[i] as usize)
            .map_or("?", |x| x.as_str());
        push_f64(&mut out, s.t_s[i]);
        out.push(',');
        push_int(&mut out, s.flow[i]);
        out.push(',');
        out.push_str(cc);
        out.push(',');
        push_int(&mut out, s.delivered_bytes[i]);
        out.push(',');
        push_f64(&mut out, s.tput_mbps[i]);
        out.push(',');
        push_opt(&mut out, s.cwnd_pkts[i]);
        out.push(',');
        push_f64(&mut out, s.srtt_ms[i]);
        out.push(',');
        push_f64(&mut out, s.pacing_mbps[i]);
        out.push(',');
        push_int(&mut out, s.ce_acked[i]);
        out.push(',');
        push_f64(&mut out, s.target_mbps[i]);
        out.push(',');
        push_f64(&mut out, s.acked_mbps[i]);
        out.push('\n');
    }
    out
}

/// packets.csv: t_s,flow,queue,sojourn_ms,verdict (only when recorded).
pub fn packets_csv(r: &RunResults) -> Option<String> {
    let p = r.packets.as_ref()?;
    let mut out = String::with_capacity((p.t_s.len() + 1) * ROW_BYTES / 2);
    out.push_str("t_s,flow,queue,sojourn_ms,verdict\n");
    for i in 0..p.t_s.len() {
        let q = r
            .queue_names
            .get(p.queue[i] as usize)
            .map_or("?", |x| x.as_str());
        let v = ["pass", "marked", "dropped"][p.verdict[i].min(2) as usize];
        push_f64(&mut out, p.t_s[i]);
        out.push(',');
        push_int(&mut out, p.flow[i]);
        out.push(',');
        out.push_str(q);
        out.push(',');
        push_f64(&mut out, p.sojourn_ms[i]);
        out.push(',');
        out.push_str(v);
        out.push('\n');
    }
    Some(out)
}

/// Write samples.csv, flows.csv, summary.json (and packets.csv if recorded) into `dir`.
pub fn write_dir(r: &RunResults, dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("samples.csv"), samples_csv(r))?;
    std::fs::write(dir.join("flows.csv"), flows_csv(r))?;
    std::fs::write(dir.join("summary.json"), &r.summary_json)?;
    if let Some(p) = packets_csv(r) {
        std::fs::write(dir.join("packets.csv"), p)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows as one `writeln!` per row formats them (the writer before this one).
    fn reference(r: &RunResults) -> (String, String) {
        let opt = |x: f64| {
            if x.is_nan() {
                String::new()
            } else {
                format!("{x}")
            }
        };
        let s = &r.samples;
        let mut a = String::from(
            "t_s,queue,backlog_pkts,backlog_bytes,sojourn_ms,marks,drops,p_prime,p_c,p_cl\n",
        );
        for i in 0..s.t_s.len() {
            let q = &r.queue_names[s.queue[i] as usize];
            let _ = writeln!(
                a,
                "{},{},{},{},{},{},{},{},{},{}",
                s.t_s[i],
                q,
                s.backlog_pkts[i],
                s.backlog_bytes[i],
                s.sojourn_ms[i],
                s.marks[i],
                s.drops[i],
                opt(s.p_prime[i]),
                opt(s.p_c[i]),
                opt(s.p_cl[i])
            );
        }
        let f = &r.flows;
        let mut b = String::from(
            "t_s,flow,cc,delivered_bytes,tput_mbps,cwnd_pkts,srtt_ms,pacing_mbps,ce_acked,target_mbps,acked_mbps\n",
        );
        for i in 0..f.t_s.len() {
            let _ = writeln!(
                b,
                "{},{},{},{},{},{},{},{},{},{},{}",
                f.t_s[i],
                f.flow[i],
                r.flow_cc[f.flow[i] as usize],
                f.delivered_bytes[i],
                f.tput_mbps[i],
                opt(f.cwnd_pkts[i]),
                f.srtt_ms[i],
                f.pacing_mbps[i],
                f.ce_acked[i],
                f.target_mbps[i],
                f.acked_mbps[i]
            );
        }
        (a, b)
    }

    #[test]
    fn csv_rows_are_what_one_writeln_per_row_gives() {
        // DualPI2 (p' and the coupled probabilities present) beside a FIFO run (absent: empty
        // cells), a CBR source (no cwnd: an empty cell) and two TCP flows.
        for aqm in ["dualpi2", "fifo"] {
            let text = format!(
                "seed = 7\nduration = \"3s\"\nwarmup = \"1s\"\n[link]\nrate = \"20mbit\"\n\
                 [aqm]\nkind = \"{aqm}\"\n[[flows]]\ncc = \"prague\"\nrtt = \"20ms\"\n\
                 [[flows]]\ncc = \"cubic\"\nrtt = \"35ms\"\n[[flows]]\ncc = \"cbr\"\n\
                 rate = \"3mbit\"\nrtt = \"10ms\"\n"
            );
            let s = crate::Scenario::from_toml_str(&text).unwrap();
            let (r, _) = crate::run_with(&s, &crate::RunOptions::default()).unwrap();
            assert!(r.samples.t_s.len() > 100 && r.flows.t_s.len() > 100);
            assert_eq!(
                r.samples.p_prime.iter().any(|p| p.is_nan()),
                aqm == "fifo",
                "{aqm}: the rows must cover present and absent cells"
            );
            assert!(
                r.flows.cwnd_pkts.iter().any(|c| c.is_nan()),
                "CBR has no cwnd"
            );
            let (a, b) = reference(&r);
            assert_eq!(samples_csv(&r), a, "{aqm}");
            assert_eq!(flows_csv(&r), b, "{aqm}");
        }
    }

    fn check(x: f64) {
        let mut s = String::new();
        push_f64(&mut s, x);
        assert_eq!(s, format!("{x}"), "bits {:#018x}", x.to_bits());
    }

    #[test]
    fn f64_cells_are_written_as_display_writes_them() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1,
            0.016,
            1e-6,
            -1e-6,
            5e-7,
            1e-7,
            0.000_001_5,
            999_999_999.999_999,
            999_999_999.999_999_5,
            1e9,
            -1e9,
            1.5e20,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            check(x);
        }
        for k in 0..300_000u32 {
            let k = f64::from(k);
            check(k * 0.016); // sample times
            check(k / 1e6); // ns as ms
            check(-k / 1e6);
            check(k * 1e3 + k / 1e6); // large with 6 decimals
            check(k * 8.0 / 0.016 / 1e6); // rates
            check(k / 3.0);
        }
        // Arbitrary bit patterns (xorshift64*) and arbitrary decimals near the fast path's
        // edges (6 and 7 decimals, 15 and 16 digits).
        let mut z = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            z ^= z >> 12;
            z ^= z << 25;
            z ^= z >> 27;
            z.wrapping_mul(0x2545_F491_4F6C_DD1D)
        };
        for _ in 0..1_000_000 {
            let x = f64::from_bits(next());
            if !x.is_nan() {
                check(x);
            }
            let m = (next() % 2_000_000_000_000_000) as f64;
            check(m / 1e6);
            check(m / 1e7);
            check(-m / 1e5);
        }
    }

    #[test]
    fn nan_is_an_empty_cell() {
        let mut s = String::from("a,");
        push_opt(&mut s, f64::NAN);
        push_opt(&mut s, 2.5);
        push_opt(&mut s, 1e-7);
        assert_eq!(s, "a,2.50.0000001");
    }
}
