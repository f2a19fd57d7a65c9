//! The l4s-flow wire format: one l4s-core TCP segment (or one control message) per UDP datagram.
//! Version 1, big-endian; the TCP fields are those of `l4s_core::packet::TcpHeader` (RFC 9293 §3.1).
//!
//! ```text
//!  0      4   5      6         8          12       20       28        36        44
//!  | "L4SF" | v | hflags | tcp flags | conn id | seq    | ack    | ts_val  | ts_ecr  |
//!  then n_sack × (start u64, end u64), then the AccECN option (3 × 24 bit) if flagged,
//!  then the payload (TCP segments) or the control body (control messages).
//! ```
//! `hflags`: bit 0 AccECN option present, bits 1-2 number of SACK blocks (0-3), bit 3 control
//! message. Sequence numbers are the model's 64-bit ones (no wrap, so no PAWS concern here).
//! The 4-byte magic and the version let a receiver recognise, count and ignore foreign datagrams.
//! Control bodies start with a tag: 1 Done (nothing more), 2 Report (7 × u64), 3 Reverse (cc u8,
//! ecn u8, mss u32, duration ns, bytes, seed, rate bits/s, omit ns: 5 × u64, stream index u32;
//! 0 = none for bytes and rate), 4 SenderReport (27 × u64, f64 as IEEE bits, NaN = none),
//! 5 ReverseRefused (nothing more).

use l4s_core::packet::{AccEcnOption, TcpHeader};
use l4s_core::Nanos;
use l4s_sim::scenario::FlowEcn;

/// The first four bytes of every l4s-flow datagram.
pub const MAGIC: [u8; 4] = *b"L4SF";
/// Wire format version carried in byte 4.
pub const VERSION: u8 = 1;
/// Header bytes without SACK blocks or options.
pub const BASE_HEADER_BYTES: usize = 44;
/// Bytes per SACK block.
pub const SACK_BLOCK_BYTES: usize = 16;
/// Bytes of the AccECN option (three 24-bit counters).
pub const ACCECN_OPTION_BYTES: usize = 9;
/// Largest header: 3 SACK blocks and the AccECN option.
pub const MAX_HEADER_BYTES: usize = BASE_HEADER_BYTES + 3 * SACK_BLOCK_BYTES + ACCECN_OPTION_BYTES;
/// UDP header bytes.
pub const UDP_HEADER_BYTES: usize = 8;
/// The TCP congestion controls l4s-flow runs (`cbr` is the simulator's UDP source, not a
/// TCP). A CC's index here is its code in a [`ReverseRequest`], so the order is part of the
/// wire format.
pub const CCS: [&str; 6] = ["prague", "dctcp", "cubic", "reno", "bbr1", "bbr3"];

const HF_ACCECN: u8 = 0x01;
const HF_SACK_SHIFT: u8 = 1;
const HF_SACK_MASK: u8 = 0x06;
const HF_CONTROL: u8 = 0x08;

/// Default MSS so that a full data datagram (IP + UDP + base header + payload) is `mtu` bytes.
/// Data segments carry neither SACK blocks nor the AccECN option (l4s-core's sender sends none).
pub fn default_mss(mtu: usize, ipv6: bool) -> u32 {
    let ip = if ipv6 { 40 } else { 20 };
    mtu.saturating_sub(ip + UDP_HEADER_BYTES + BASE_HEADER_BYTES) as u32
}

/// Why a datagram was not accepted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reject {
    /// Not an l4s-flow datagram at all (wrong magic or too short for one).
    Foreign,
    /// An l4s-flow datagram of another version.
    Version(u8),
    /// Right magic and version but inconsistent lengths or fields.
    Malformed,
}

/// Control messages that end a connection (the TCP model has no FIN).
#[derive(Clone, Debug, PartialEq)]
pub enum Control {
    /// Sender → receiver: the transfer is over; please report.
    Done,
    /// Receiver → sender: what the receiving side saw.
    Report(ReceiverReport),
    /// Client → server: send to me with these settings (iperf3's -R).
    Reverse(ReverseRequest),
    /// Reverse mode, server → client at the end: what the sending side measured.
    SenderReport(SenderSummary),
    /// Server → client: this server does not serve reverse mode (`-s --no-reverse`).
    ReverseRefused,
}

/// The sender's settings a reverse-mode client asks the server to use (-C, --ecn, -t, -n,
/// --mss, --seed, -b). Decoding refuses values outside the ranges the command line allows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReverseRequest {
    /// Index of the congestion control in [`CCS`].
    pub cc: u8,
    /// ECN mode; None = what the CC asks for.
    pub ecn: Option<FlowEcn>,
    /// Send for this long (-t, with -O's seconds added).
    pub duration: Nanos,
    /// Send exactly this many bytes (-n); None = for `duration`.
    pub bytes: Option<u64>,
    /// TCP MSS in payload bytes.
    pub mss_bytes: u32,
    /// Seed of the CC's random streams.
    pub seed: u64,
    /// Application rate limit in bits/s (-b); None = always backlogged.
    pub rate_bps: Option<u64>,
    /// Leave this much of the start out of the result (-O; included in `duration`).
    pub omit: Nanos,
    /// The stream's index among the client's -P streams (seeds the CC's random stream).
    pub stream: u32,
}

/// Longest -t a reverse request may carry (the command line's limit: a week).
pub const MAX_DURATION: Nanos = Nanos(86_400 * 7 * 1_000_000_000);
/// -n must be below this many bytes (the command line's limit).
pub const MAX_BYTES: u64 = 1 << 50;
/// -b's range in bits/s when not 0 (the command line's limits).
pub const RATE_RANGE_BPS: std::ops::RangeInclusive<u64> = 1_000..=1_000_000_000_000;

/// Highest -P stream index a reverse request may carry (-P is at most 128).
pub const MAX_STREAM: u32 = 127;

const REVERSE_BODY_BYTES: usize = 1 + 1 + 1 + 4 + 5 * 8 + 4;

fn ecn_code(e: Option<FlowEcn>) -> u8 {
    match e {
        None => 0,
        Some(FlowEcn::L4s) => 1,
        Some(FlowEcn::Accecn) => 2,
        Some(FlowEcn::Classic) => 3,
        Some(FlowEcn::None) => 4,
    }
}

fn ecn_of(code: u8) -> Option<Option<FlowEcn>> {
    Some(match code {
        0 => None,
        1 => Some(FlowEcn::L4s),
        2 => Some(FlowEcn::Accecn),
        3 => Some(FlowEcn::Classic),
        4 => Some(FlowEcn::None),
        _ => return None,
    })
}

impl ReverseRequest {
    /// The congestion control's name.
    pub fn cc_name(&self) -> &'static str {
        CCS.get(self.cc as usize).copied().unwrap_or("?")
    }

    fn put(&self, buf: &mut Vec<u8>) {
        buf.push(self.cc);
        buf.push(ecn_code(self.ecn));
        buf.extend_from_slice(&self.mss_bytes.to_be_bytes());
        put_u64(buf, self.duration.as_ns());
        put_u64(buf, self.bytes.unwrap_or(0));
        put_u64(buf, self.seed);
        put_u64(buf, self.rate_bps.unwrap_or(0));
        put_u64(buf, self.omit.as_ns());
        buf.extend_from_slice(&self.stream.to_be_bytes());
    }

    /// `b` is the body after the tag byte; None when any field is out of range.
    fn get(b: &[u8]) -> Option<Self> {
        if b.len() != REVERSE_BODY_BYTES - 1 {
            return None;
        }
        let cc = b[0];
        let ecn = ecn_of(b[1])?;
        let mss_bytes = u32::from_be_bytes([b[2], b[3], b[4], b[5]]);
        let duration = Nanos(u64_at(b, 6)?);
        let bytes = Some(u64_at(b, 14)?).filter(|&n| n > 0);
        let seed = u64_at(b, 22)?;
        let rate_bps = Some(u64_at(b, 30)?).filter(|&r| r > 0);
        let omit = Nanos(u64_at(b, 38)?);
        let stream = u32::from_be_bytes([b[46], b[47], b[48], b[49]]);
        let mss_most = (crate::sock::RECV_BUF_BYTES - BASE_HEADER_BYTES) as u32;
        let ok = (cc as usize) < CCS.len()
            && (1..=mss_most).contains(&mss_bytes)
            && duration > Nanos::ZERO
            && duration <= MAX_DURATION
            && bytes.is_none_or(|n| n < MAX_BYTES)
            && rate_bps.is_none_or(|r| RATE_RANGE_BPS.contains(&r))
            && omit < duration
            && stream <= MAX_STREAM;
        ok.then_some(ReverseRequest {
            cc,
            ecn,
            duration,
            bytes,
            mss_bytes,
            seed,
            rate_bps,
            omit,
            stream,
        })
    }
}

/// What a sender measured over a run: the per-stream result of a forward run's JSON and final
/// lines, sent by the server in reverse mode ([`Control::SenderReport`]) so that the client
/// reports a reverse run in the same shape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SenderSummary {
    /// The flow ran as L4S (scalable CC, ECT(1)).
    pub l4s: bool,
    /// Payload bytes acknowledged over the whole run (the omitted start included).
    pub bytes_acked: u64,
    /// Start of the counted part (the end of -O's omitted start), s since the run began.
    pub start_s: f64,
    /// End of the run, s since it began.
    pub duration_s: f64,
    /// Goodput of the counted part, Mbit/s.
    pub tput_mbps: f64,
    /// Acknowledged bytes in the omitted start.
    pub omitted_bytes: u64,
    /// Retransmitted segments in the omitted start.
    pub omitted_retransmits: u64,
    /// Data datagrams sent.
    pub data_pkts_sent: u64,
    /// Data datagrams sent by codepoint (index = ECN bits).
    pub data_ecn_sent: [u64; 4],
    /// Segments sent (all).
    pub sent_pkts: u64,
    /// Retransmitted segments (whole run).
    pub retransmits: u64,
    /// Segments declared lost.
    pub lost_pkts: u64,
    /// Packets acknowledged with CE feedback.
    pub ce_acked: u64,
    /// Congestion window at the end, packets (None where the CC has none).
    pub cwnd_pkts: Option<f64>,
    /// The run's srtt (see the client's `srtt_steady`), ms.
    pub srtt_ms: f64,
    /// srtt after the last ACK, ms.
    pub srtt_last_ms: f64,
    /// The CC's α at the end (Prague, DCTCP).
    pub alpha: Option<f64>,
    /// Lateness of timer-released sends.
    pub pacing_error: crate::report::PacingSummary,
}

const SENDER_FIELDS: usize = 27;

fn opt_bits(x: Option<f64>) -> u64 {
    x.filter(|v| v.is_finite()).unwrap_or(f64::NAN).to_bits()
}

fn opt_of(bits: u64) -> Option<f64> {
    Some(f64::from_bits(bits)).filter(|v| v.is_finite())
}

impl SenderSummary {
    fn fields(&self) -> [u64; SENDER_FIELDS] {
        let f = |x: f64| x.to_bits();
        let p = &self.pacing_error;
        let e = &self.data_ecn_sent;
        [
            self.l4s as u64,
            self.bytes_acked,
            f(self.start_s),
            f(self.duration_s),
            f(self.tput_mbps),
            self.omitted_bytes,
            self.omitted_retransmits,
            self.data_pkts_sent,
            e[0],
            e[1],
            e[2],
            e[3],
            self.sent_pkts,
            self.retransmits,
            self.lost_pkts,
            self.ce_acked,
            opt_bits(self.cwnd_pkts),
            f(self.srtt_ms),
            f(self.srtt_last_ms),
            opt_bits(self.alpha),
            p.n,
            f(p.mean_us),
            f(p.p50_us),
            f(p.p99_us),
            f(p.max_us),
            0,
            0,
        ]
    }

    /// None when a field is impossible (a flag other than 0/1, reserved words not 0).
    fn from_fields(v: [u64; SENDER_FIELDS]) -> Option<Self> {
        let f = f64::from_bits;
        if v[0] > 1 || v[25] != 0 || v[26] != 0 {
            return None;
        }
        Some(SenderSummary {
            l4s: v[0] == 1,
            bytes_acked: v[1],
            start_s: f(v[2]),
            duration_s: f(v[3]),
            tput_mbps: f(v[4]),
            omitted_bytes: v[5],
            omitted_retransmits: v[6],
            data_pkts_sent: v[7],
            data_ecn_sent: [v[8], v[9], v[10], v[11]],
            sent_pkts: v[12],
            retransmits: v[13],
            lost_pkts: v[14],
            ce_acked: v[15],
            cwnd_pkts: opt_of(v[16]),
            srtt_ms: f(v[17]),
            srtt_last_ms: f(v[18]),
            alpha: opt_of(v[19]),
            pacing_error: crate::report::PacingSummary {
                n: v[20],
                mean_us: f(v[21]),
                p50_us: f(v[22]),
                p99_us: f(v[23]),
                max_us: f(v[24]),
            },
        })
    }
}

/// The receiver's own counts, sent back in [`Control::Report`] and printed by the server.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReceiverReport {
    /// Payload bytes delivered in order by the TCP receiver (`rcv_nxt - 1`).
    pub delivered_bytes: u64,
    /// Data datagrams received (including duplicates).
    pub data_pkts: u64,
    /// Of those, by the IP-ECN codepoint read from the socket.
    pub not_ect_pkts: u64,
    /// ECT(1) data datagrams.
    pub ect1_pkts: u64,
    /// ECT(0) data datagrams.
    pub ect0_pkts: u64,
    /// CE data datagrams.
    pub ce_pkts: u64,
    /// Data datagrams whose payload did not match the pattern for their sequence number.
    pub bad_payload_pkts: u64,
}

const REPORT_FIELDS: usize = 7;

impl ReceiverReport {
    fn fields(&self) -> [u64; REPORT_FIELDS] {
        [
            self.delivered_bytes,
            self.data_pkts,
            self.not_ect_pkts,
            self.ect1_pkts,
            self.ect0_pkts,
            self.ce_pkts,
            self.bad_payload_pkts,
        ]
    }
    fn from_fields(f: [u64; REPORT_FIELDS]) -> Self {
        ReceiverReport {
            delivered_bytes: f[0],
            data_pkts: f[1],
            not_ect_pkts: f[2],
            ect1_pkts: f[3],
            ect0_pkts: f[4],
            ce_pkts: f[5],
            bad_payload_pkts: f[6],
        }
    }
}

/// A decoded datagram: the connection it belongs to and what it carries.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded<'a> {
    /// Connection id chosen by the sender (demultiplexing key together with the peer address).
    pub conn: u32,
    /// The segment or control message.
    pub body: Body<'a>,
}

/// What a datagram carries.
#[derive(Clone, Debug, PartialEq)]
pub enum Body<'a> {
    /// A TCP segment: its header (`payload_bytes` set from the length) and payload.
    Segment(TcpHeader, &'a [u8]),
    /// A control message.
    Control(Control),
}

fn put_u64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(&v.to_be_bytes());
}

fn put_u24(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_be_bytes()[1..]);
}

fn header(buf: &mut Vec<u8>, conn: u32, h: &TcpHeader, control: bool) {
    let n_sack = h.n_sack.min(3);
    let mut hf = (n_sack << HF_SACK_SHIFT) & HF_SACK_MASK;
    if h.accecn.is_some() {
        hf |= HF_ACCECN;
    }
    if control {
        hf |= HF_CONTROL;
    }
    buf.extend_from_slice(&MAGIC);
    buf.push(VERSION);
    buf.push(hf);
    buf.extend_from_slice(&h.flags.to_be_bytes());
    buf.extend_from_slice(&conn.to_be_bytes());
    put_u64(buf, h.seq);
    put_u64(buf, h.ack);
    put_u64(buf, h.ts_val.as_ns());
    put_u64(buf, h.ts_ecr.as_ns());
    for (s, e) in h.sack_blocks() {
        put_u64(buf, s);
        put_u64(buf, e);
    }
    if let Some(o) = h.accecn {
        put_u24(buf, o.e0b);
        put_u24(buf, o.ceb);
        put_u24(buf, o.e1b);
    }
}

/// Encode a TCP segment into `buf` (cleared first): header, then `payload_bytes` bytes written
/// by `fill` (which gets the slice to fill).
pub fn encode_segment(buf: &mut Vec<u8>, conn: u32, h: &TcpHeader, fill: impl FnOnce(&mut [u8])) {
    buf.clear();
    header(buf, conn, h, false);
    let start = buf.len();
    buf.resize(start + h.payload_bytes as usize, 0);
    fill(&mut buf[start..]);
}

/// Encode a control message into `buf` (cleared first).
pub fn encode_control(buf: &mut Vec<u8>, conn: u32, c: &Control) {
    buf.clear();
    header(buf, conn, &TcpHeader::default(), true);
    match c {
        Control::Done => buf.push(1),
        Control::Report(r) => {
            buf.push(2);
            for f in r.fields() {
                put_u64(buf, f);
            }
        }
        Control::Reverse(r) => {
            buf.push(3);
            r.put(buf);
        }
        Control::SenderReport(r) => {
            buf.push(4);
            for f in r.fields() {
                put_u64(buf, f);
            }
        }
        Control::ReverseRefused => buf.push(5),
    }
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_be_bytes(a))
}

fn u24_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 3)?;
    Some(u32::from_be_bytes([0, s[0], s[1], s[2]]))
}

/// Decode one datagram. Never panics, whatever the bytes.
pub fn decode(b: &[u8]) -> Result<Decoded<'_>, Reject> {
    if b.len() < 5 || b[..4] != MAGIC {
        return Err(Reject::Foreign);
    }
    if b[4] != VERSION {
        return Err(Reject::Version(b[4]));
    }
    if b.len() < BASE_HEADER_BYTES {
        return Err(Reject::Malformed);
    }
    let hf = b[5];
    if hf & !(HF_ACCECN | HF_SACK_MASK | HF_CONTROL) != 0 {
        return Err(Reject::Malformed);
    }
    let n_sack = (hf & HF_SACK_MASK) >> HF_SACK_SHIFT;
    if n_sack > 3 {
        return Err(Reject::Malformed);
    }
    let flags = u16::from_be_bytes([b[6], b[7]]);
    let conn = u32::from_be_bytes([b[8], b[9], b[10], b[11]]);
    let m = Reject::Malformed;
    let mut h = TcpHeader {
        seq: u64_at(b, 12).ok_or(m)?,
        ack: u64_at(b, 20).ok_or(m)?,
        flags,
        ts_val: Nanos(u64_at(b, 28).ok_or(m)?),
        ts_ecr: Nanos(u64_at(b, 36).ok_or(m)?),
        ..Default::default()
    };
    let mut at = BASE_HEADER_BYTES;
    let mut blocks = [(0u64, 0u64); 3];
    for blk in blocks.iter_mut().take(n_sack as usize) {
        let s = u64_at(b, at).ok_or(m)?;
        let e = u64_at(b, at + 8).ok_or(m)?;
        if e < s {
            return Err(m);
        }
        *blk = (s, e);
        at += SACK_BLOCK_BYTES;
    }
    // A block 2^31 bytes or more from the ACK is no SACK a TCP receiver sends (l4s-core keeps
    // blocks as 32-bit offsets from the ACK, as the TCP wire does).
    h.set_sack(&blocks[..n_sack as usize]).map_err(|_| m)?;
    if hf & HF_ACCECN != 0 {
        h.accecn = Some(AccEcnOption {
            e0b: u24_at(b, at).ok_or(m)?,
            ceb: u24_at(b, at + 3).ok_or(m)?,
            e1b: u24_at(b, at + 6).ok_or(m)?,
        });
        at += ACCECN_OPTION_BYTES;
    }
    let rest = b.get(at..).ok_or(m)?;
    if hf & HF_CONTROL != 0 {
        let c = match rest.first() {
            Some(1) if rest.len() == 1 => Control::Done,
            Some(2) if rest.len() == 1 + 8 * REPORT_FIELDS => {
                let mut f = [0u64; REPORT_FIELDS];
                for (i, v) in f.iter_mut().enumerate() {
                    *v = u64_at(rest, 1 + 8 * i).ok_or(m)?;
                }
                Control::Report(ReceiverReport::from_fields(f))
            }
            Some(3) => Control::Reverse(ReverseRequest::get(&rest[1..]).ok_or(m)?),
            Some(4) if rest.len() == 1 + 8 * SENDER_FIELDS => {
                let mut f = [0u64; SENDER_FIELDS];
                for (i, v) in f.iter_mut().enumerate() {
                    *v = u64_at(rest, 1 + 8 * i).ok_or(m)?;
                }
                Control::SenderReport(SenderSummary::from_fields(f).ok_or(m)?)
            }
            Some(5) if rest.len() == 1 => Control::ReverseRefused,
            _ => return Err(m),
        };
        return Ok(Decoded {
            conn,
            body: Body::Control(c),
        });
    }
    h.payload_bytes = rest.len() as u32;
    Ok(Decoded {
        conn,
        body: Body::Segment(h, rest),
    })
}

/// The payload pattern: the byte at stream offset `off` (sequence number − 1) of every
/// connection. A multiplicative hash so that misplaced or shifted bytes do not match.
#[inline]
pub fn pattern_byte(off: u64) -> u8 {
    (off.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

/// Fill `dst` with the pattern for stream offsets `off..off + dst.len()`.
pub fn fill_pattern(dst: &mut [u8], off: u64) {
    for (i, d) in dst.iter_mut().enumerate() {
        *d = pattern_byte(off + i as u64);
    }
}

/// The payload matches the pattern for stream offset `off`.
pub fn check_pattern(src: &[u8], off: u64) -> bool {
    src.iter()
        .enumerate()
        .all(|(i, &s)| s == pattern_byte(off + i as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4s_core::packet::tcp_flags;

    fn sample() -> TcpHeader {
        let mut h = TcpHeader {
            seq: 1 + (1 << 40),
            ack: 77,
            flags: tcp_flags::ACK | tcp_flags::AE | tcp_flags::ECE,
            payload_bytes: 0,
            ts_val: Nanos(123_456_789),
            ts_ecr: Nanos(42),
            accecn: Some(AccEcnOption {
                e0b: 1,
                ceb: 0xFF_FFFF,
                e1b: 7,
            }),
            ..Default::default()
        };
        h.set_sack(&[(100, 200), (300, 400)]).expect("near the ack");
        h
    }

    #[test]
    fn segment_round_trips_with_sack_and_option() {
        let mut h = sample();
        h.payload_bytes = 10;
        let mut buf = Vec::new();
        encode_segment(&mut buf, 0xDEAD_BEEF, &h, |p| fill_pattern(p, 5));
        assert_eq!(
            buf.len(),
            BASE_HEADER_BYTES + 2 * SACK_BLOCK_BYTES + ACCECN_OPTION_BYTES + 10
        );
        let d = decode(&buf).expect("decodes");
        assert_eq!(d.conn, 0xDEAD_BEEF);
        let Body::Segment(got, payload) = d.body else {
            panic!("not a segment")
        };
        assert_eq!(got, h);
        assert_eq!(
            got.sack_blocks().collect::<Vec<_>>(),
            [(100, 200), (300, 400)]
        );
        assert!(check_pattern(payload, 5));
        assert!(!check_pattern(payload, 6));
    }

    #[test]
    fn sack_block_far_from_the_ack_is_malformed() {
        let mut buf = Vec::new();
        encode_segment(&mut buf, 1, &sample(), |_| {});
        let far = 77u64 + (1 << 31);
        let mut bad = buf.clone();
        bad[BASE_HEADER_BYTES..BASE_HEADER_BYTES + 8].copy_from_slice(&far.to_be_bytes());
        bad[BASE_HEADER_BYTES + 8..BASE_HEADER_BYTES + 16].copy_from_slice(&far.to_be_bytes());
        assert_eq!(decode(&bad), Err(Reject::Malformed));
        // One byte nearer and it is a block like any other.
        let mut ok = buf;
        ok[BASE_HEADER_BYTES..BASE_HEADER_BYTES + 8].copy_from_slice(&(far - 1).to_be_bytes());
        ok[BASE_HEADER_BYTES + 8..BASE_HEADER_BYTES + 16].copy_from_slice(&(far - 1).to_be_bytes());
        let Ok(Decoded {
            body: Body::Segment(h, _),
            ..
        }) = decode(&ok)
        else {
            panic!("in-range block refused")
        };
        assert_eq!(h.sack_block(0), (far - 1, far - 1));
    }

    #[test]
    fn data_datagram_fits_the_mtu() {
        for ipv6 in [false, true] {
            let mss = default_mss(1500, ipv6);
            let ip = if ipv6 { 40 } else { 20 };
            let h = TcpHeader {
                seq: 1,
                flags: tcp_flags::ACK,
                payload_bytes: mss,
                ..Default::default()
            };
            let mut buf = Vec::new();
            encode_segment(&mut buf, 1, &h, |_| {});
            assert_eq!(ip + UDP_HEADER_BYTES + buf.len(), 1500);
        }
        assert_eq!(default_mss(1500, false), 1428);
        assert_eq!(default_mss(1500, true), 1408);
    }

    #[test]
    fn control_round_trips() {
        let r = ReceiverReport {
            delivered_bytes: 1 << 33,
            data_pkts: 2,
            not_ect_pkts: 3,
            ect1_pkts: 4,
            ect0_pkts: 5,
            ce_pkts: 6,
            bad_payload_pkts: 7,
        };
        let mut buf = Vec::new();
        for c in [Control::Done, Control::Report(r)] {
            encode_control(&mut buf, 9, &c);
            let d = decode(&buf).expect("decodes");
            assert_eq!(d.conn, 9);
            assert_eq!(d.body, Body::Control(c));
        }
    }

    #[test]
    fn sender_report_and_refusal_round_trip() {
        let r = SenderSummary {
            l4s: true,
            bytes_acked: 1 << 40,
            start_s: 2.0,
            duration_s: 12.25,
            tput_mbps: 47.5,
            omitted_bytes: 12_345,
            omitted_retransmits: 3,
            data_pkts_sent: 9,
            data_ecn_sent: [1, 2, 3, 4],
            sent_pkts: 10,
            retransmits: 11,
            lost_pkts: 12,
            ce_acked: 13,
            cwnd_pkts: Some(20.5),
            srtt_ms: 40.1,
            srtt_last_ms: 45.0,
            alpha: None,
            pacing_error: crate::report::PacingSummary {
                n: 100,
                mean_us: 3.5,
                p50_us: 1.0,
                p99_us: 40.0,
                max_us: 5600.0,
            },
        };
        let mut buf = Vec::new();
        for c in [Control::SenderReport(r.clone()), Control::ReverseRefused] {
            encode_control(&mut buf, 5, &c);
            let d = decode(&buf).expect("decodes");
            assert_eq!(d.body, Body::Control(c));
        }
        // A report fits one datagram of the smallest IPv6 MTU (1280) with room to spare.
        encode_control(&mut buf, 5, &Control::SenderReport(r));
        assert_eq!(buf.len(), BASE_HEADER_BYTES + 1 + 8 * SENDER_FIELDS);
        assert!(buf.len() + 48 <= 1280);
        // A class flag other than 0/1 or a nonzero reserved word is malformed; so is any prefix.
        let mut bad = buf.clone();
        bad[BASE_HEADER_BYTES + 8] = 2;
        assert_eq!(decode(&bad), Err(Reject::Malformed));
        let mut bad = buf.clone();
        *bad.last_mut().expect("nonempty") = 1;
        assert_eq!(decode(&bad), Err(Reject::Malformed));
        for n in 0..buf.len() {
            assert!(decode(&buf[..n]).is_err(), "prefix {n}");
        }
    }

    fn reverse_sample() -> ReverseRequest {
        ReverseRequest {
            cc: 4, // bbr1
            ecn: Some(FlowEcn::Classic),
            duration: Nanos::from_secs(30),
            bytes: Some(5 << 20),
            mss_bytes: 1428,
            seed: u64::MAX - 1,
            rate_bps: Some(20_000_000),
            omit: Nanos::from_secs(2),
            stream: 3,
        }
    }

    #[test]
    fn reverse_request_round_trips() {
        let mut buf = Vec::new();
        let by_time = ReverseRequest {
            cc: 0,
            ecn: None,
            bytes: None,
            rate_bps: None,
            ..reverse_sample()
        };
        for r in [reverse_sample(), by_time] {
            encode_control(&mut buf, 11, &Control::Reverse(r));
            assert_eq!(buf.len(), BASE_HEADER_BYTES + REVERSE_BODY_BYTES);
            let d = decode(&buf).expect("decodes");
            assert_eq!(d.conn, 11);
            assert_eq!(d.body, Body::Control(Control::Reverse(r)));
        }
        assert_eq!(reverse_sample().cc_name(), "bbr1");
        assert_eq!(by_time.cc_name(), "prague");
        for e in [
            None,
            Some(FlowEcn::L4s),
            Some(FlowEcn::Accecn),
            Some(FlowEcn::Classic),
            Some(FlowEcn::None),
        ] {
            assert_eq!(ecn_of(ecn_code(e)), Some(e));
        }
    }

    #[test]
    fn reverse_request_out_of_range_is_malformed() {
        let mss_most = (crate::sock::RECV_BUF_BYTES - BASE_HEADER_BYTES) as u32;
        let ok = reverse_sample();
        // Each field just inside its range decodes; just outside it is refused.
        let cases = [
            (ReverseRequest { cc: 5, ..ok }, true),
            (ReverseRequest { cc: 6, ..ok }, false),
            (
                ReverseRequest {
                    mss_bytes: mss_most,
                    ..ok
                },
                true,
            ),
            (
                ReverseRequest {
                    mss_bytes: mss_most + 1,
                    ..ok
                },
                false,
            ),
            (ReverseRequest { mss_bytes: 0, ..ok }, false),
            (
                ReverseRequest {
                    duration: MAX_DURATION,
                    ..ok
                },
                true,
            ),
            (
                ReverseRequest {
                    duration: MAX_DURATION + Nanos(1),
                    ..ok
                },
                false,
            ),
            (
                ReverseRequest {
                    duration: Nanos::ZERO,
                    ..ok
                },
                false,
            ),
            (
                ReverseRequest {
                    bytes: Some(MAX_BYTES - 1),
                    ..ok
                },
                true,
            ),
            (
                ReverseRequest {
                    bytes: Some(MAX_BYTES),
                    ..ok
                },
                false,
            ),
            (
                ReverseRequest {
                    rate_bps: Some(999),
                    ..ok
                },
                false,
            ),
            (
                ReverseRequest {
                    rate_bps: Some(1_000),
                    ..ok
                },
                true,
            ),
            (
                ReverseRequest {
                    rate_bps: Some(1_000_000_000_001),
                    ..ok
                },
                false,
            ),
            // -O shorter than the run it is part of.
            (
                ReverseRequest {
                    omit: Nanos::from_secs(30) - Nanos(1),
                    ..ok
                },
                true,
            ),
            (
                ReverseRequest {
                    omit: Nanos::from_secs(30),
                    ..ok
                },
                false,
            ),
            (
                ReverseRequest {
                    stream: MAX_STREAM,
                    ..ok
                },
                true,
            ),
            (
                ReverseRequest {
                    stream: MAX_STREAM + 1,
                    ..ok
                },
                false,
            ),
        ];
        let mut buf = Vec::new();
        for (r, accepted) in cases {
            encode_control(&mut buf, 1, &Control::Reverse(r));
            assert_eq!(decode(&buf).is_ok(), accepted, "{r:?}");
        }
        // An ECN code beyond the four modes, a missing byte, an extra byte.
        encode_control(&mut buf, 1, &Control::Reverse(ok));
        let ecn_at = BASE_HEADER_BYTES + 2;
        assert_eq!(buf[ecn_at], 3);
        let mut bad = buf.clone();
        bad[ecn_at] = 5;
        assert_eq!(decode(&bad), Err(Reject::Malformed));
        assert_eq!(decode(&buf[..buf.len() - 1]), Err(Reject::Malformed));
        let mut long = buf.clone();
        long.push(0);
        assert_eq!(decode(&long), Err(Reject::Malformed));
        // No prefix or bit flip panics; no strict prefix decodes.
        for n in 0..buf.len() {
            assert!(decode(&buf[..n]).is_err(), "prefix {n}");
        }
        for i in 0..buf.len() {
            for bit in 0..8 {
                let mut b = buf.clone();
                b[i] ^= 1 << bit;
                let _ = decode(&b);
            }
        }
    }

    #[test]
    fn foreign_short_and_other_versions_are_rejected() {
        assert_eq!(decode(b""), Err(Reject::Foreign));
        assert_eq!(decode(b"hello world"), Err(Reject::Foreign));
        let mut buf = Vec::new();
        encode_segment(&mut buf, 1, &sample(), |_| {});
        let mut v2 = buf.clone();
        v2[4] = 2;
        assert_eq!(decode(&v2), Err(Reject::Version(2)));
        assert_eq!(
            decode(&buf[..BASE_HEADER_BYTES - 1]),
            Err(Reject::Malformed)
        );
        // Truncated inside the SACK blocks.
        assert_eq!(
            decode(&buf[..BASE_HEADER_BYTES + 5]),
            Err(Reject::Malformed)
        );
        let mut bad = buf.clone();
        bad[5] |= 0x80;
        assert_eq!(decode(&bad), Err(Reject::Malformed));
    }

    #[test]
    fn decode_never_panics_on_any_prefix_or_bit_flip() {
        let mut buf = Vec::new();
        let mut h = sample();
        h.payload_bytes = 20;
        encode_segment(&mut buf, 3, &h, |p| fill_pattern(p, 0));
        for n in 0..=buf.len() {
            let _ = decode(&buf[..n]);
        }
        for i in 0..buf.len() {
            for bit in 0..8 {
                let mut b = buf.clone();
                b[i] ^= 1 << bit;
                let _ = decode(&b);
            }
        }
        let mut c = Vec::new();
        encode_control(&mut c, 3, &Control::Report(ReceiverReport::default()));
        for n in 0..=c.len() {
            let r = decode(&c[..n]);
            if n < c.len() {
                assert!(r.is_err(), "a truncated report must not decode (len {n})");
            }
        }
    }
}
