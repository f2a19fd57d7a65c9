//! The real-time datagrams of `l4slab flow --app rt`: one l4s-core `RtHeader` per UDP datagram
//! (udp_prague's `framemessage_t` data packet and per-packet `ackmessage_t` feedback), or an
//! RFC 8888 congestion control feedback report (libwebrtc's "ccfb", for SCReAMv2 and GCC).
//!
//! Same magic and version as [`crate::wire`]; byte 5 (`hflags`) has bit 4 set, which the TCP
//! codec refuses as malformed, so the two never mistake each other's datagrams. Big-endian:
//! ```text
//!  0      4   5        6      7   8         12
//!  | "L4SF" | v | 0x10 | kind | 0 | conn id | body
//!  data (kind 1):     seq u64, frame u64, frame_bytes u32, capture_ns u64, sent_ns u64,
//!                     marker u8, ccfb_interval_us u32 (0 = answer every packet with kind 2),
//!                     then padding (the wire pattern) up to the packet's size
//!  feedback (kind 2): seq u64, received u64, ce u64, lost u64, echo_ns u64,
//!                     done_frame u64 (u64::MAX = none), done_latency_ns u64, sent_ns u64
//!  report (kind 3):   report id u64, n u16, n × (done_frame u64, done_latency_ns u64), then
//!                     one RFC 8888 §3.1 RTCP packet (`l4s_core::rt::rfc8888::CcfbReport::encode`)
//! ```
//! Times are CLOCK_MONOTONIC ns: sender and receiver on one host (the emulator's namespaces
//! share that clock) read the same clock, so the receiver measures capture-to-complete itself
//! and echoes it in `done_*` (the last frame it completed, repeated until the next one). A
//! kind-2 `sent_ns` is when the receiver answered, i.e. when the packet arrived (it answers at
//! once): the arrival time GCC's delay-based estimator takes from per-packet feedback. In
//! kind 3 the arrival times are the report's own (report timestamp and per-packet offsets),
//! and the frames listed are those completed since the previous report and the one before
//! (each frame is announced in two reports, so one lost report hides no frame).

use l4s_core::rt::rfc8888::CcfbReport;
use l4s_core::rt::RtHeader;
use l4s_core::Nanos;

use crate::wire::{Reject, MAGIC, VERSION};

/// `hflags` of a real-time datagram.
pub const HF_RT: u8 = 0x10;
const KIND_DATA: u8 = 1;
const KIND_FEEDBACK: u8 = 2;
const KIND_REPORT: u8 = 3;
const PREFIX_BYTES: usize = 12;
/// Bytes of a data datagram's header (the rest is padding).
pub const DATA_HEADER_BYTES: usize = PREFIX_BYTES + 8 + 8 + 4 + 8 + 8 + 1 + 4;
/// Bytes of a feedback datagram.
pub const FEEDBACK_BYTES: usize = PREFIX_BYTES + 8 * 8;
/// Bytes of a report datagram before its frame list and RTCP packet.
pub const REPORT_HEADER_BYTES: usize = PREFIX_BYTES + 8 + 2;
/// Frames one report lists at most.
pub const REPORT_MAX_FRAMES: usize = 255;
const NO_FRAME: u64 = u64::MAX;

/// A decoded real-time datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtDatagram<'a> {
    /// Connection id chosen by the sender.
    pub conn: u32,
    /// The model's header (`feedback` says which kind). Data: `echo` = the send time.
    /// Report: `feedback` and `ccfb` set, `seq` = the report id.
    pub h: RtHeader,
    /// Feedback and report: the last frame the receiver completed and its
    /// capture-to-complete latency.
    pub done: Option<(u64, Nanos)>,
    /// Data: the RFC 8888 report interval the sender asks for (`None`: per-packet feedback).
    /// Feedback: `None`.
    pub ccfb_interval: Option<Nanos>,
    /// Feedback: when the receiver sent it (the answered packet's arrival time).
    pub sent_at: Nanos,
    /// Report: the RFC 8888 RTCP packet (checked by `CcfbReport::decode`).
    pub report: Option<&'a [u8]>,
    /// Report: frames the receiver completed lately, with their capture-to-complete latency.
    pub frames: Vec<(u64, Nanos)>,
    /// Datagram length (data: the packet's size minus IP and UDP headers).
    pub len: usize,
}

fn put(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(&v.to_be_bytes());
}

fn prefix(buf: &mut Vec<u8>, kind: u8, conn: u32) {
    buf.clear();
    buf.extend_from_slice(&MAGIC);
    buf.extend_from_slice(&[VERSION, HF_RT, kind, 0]);
    buf.extend_from_slice(&conn.to_be_bytes());
}

/// Encode a data datagram of `len` bytes (≥ [`DATA_HEADER_BYTES`]); `h.echo` is the send time;
/// `ccfb_interval` asks the receiver for RFC 8888 reports at that interval (µs on the wire).
pub fn encode_data(
    buf: &mut Vec<u8>,
    conn: u32,
    h: &RtHeader,
    ccfb_interval: Option<Nanos>,
    len: usize,
) {
    prefix(buf, KIND_DATA, conn);
    put(buf, h.seq);
    put(buf, h.frame);
    buf.extend_from_slice(&h.frame_bytes.to_be_bytes());
    put(buf, h.capture_at.0);
    put(buf, h.echo.0);
    buf.push(u8::from(h.marker));
    let us = ccfb_interval.map_or(0, |i| (i.0 / 1000).clamp(1, u32::MAX as u64) as u32);
    buf.extend_from_slice(&us.to_be_bytes());
    let start = buf.len();
    buf.resize(start.max(len), 0);
    crate::wire::fill_pattern(&mut buf[start..], h.seq);
}

fn put_done(buf: &mut Vec<u8>, done: Option<(u64, Nanos)>) {
    let (f, l) = done.map_or((NO_FRAME, 0), |(f, l)| (f, l.0));
    put(buf, f);
    put(buf, l);
}

/// Encode a feedback datagram sent at `sent_at`.
pub fn encode_feedback(
    buf: &mut Vec<u8>,
    conn: u32,
    h: &RtHeader,
    done: Option<(u64, Nanos)>,
    sent_at: Nanos,
) {
    prefix(buf, KIND_FEEDBACK, conn);
    for v in [h.seq, h.received, h.ce, h.lost, h.echo.0] {
        put(buf, v);
    }
    put_done(buf, done);
    put(buf, sent_at.0);
}

/// Encode report `id` listing completed `frames` (the first [`REPORT_MAX_FRAMES`]) and
/// carrying the RFC 8888 RTCP packet `rtcp`.
pub fn encode_report(buf: &mut Vec<u8>, conn: u32, id: u64, frames: &[(u64, Nanos)], rtcp: &[u8]) {
    prefix(buf, KIND_REPORT, conn);
    put(buf, id);
    let frames = &frames[..frames.len().min(REPORT_MAX_FRAMES)];
    buf.extend_from_slice(&(frames.len() as u16).to_be_bytes());
    for &(f, l) in frames {
        put(buf, f);
        put(buf, l.0);
    }
    buf.extend_from_slice(rtcp);
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A done-frame pair as decoded; `Err` when "none" carries a latency.
fn done_of(f: u64, l: u64) -> Result<Option<(u64, Nanos)>, Reject> {
    match (f, l) {
        (NO_FRAME, 0) => Ok(None),
        (NO_FRAME, _) => Err(Reject::Malformed),
        (f, l) => Ok(Some((f, Nanos(l)))),
    }
}

/// Decode one datagram; `Foreign` for anything that is not a real-time l4s-flow datagram
/// (TCP ones included). Never panics, whatever the bytes.
pub fn decode(b: &[u8]) -> Result<RtDatagram<'_>, Reject> {
    if b.len() < 6 || b[..4] != MAGIC || b[5] != HF_RT {
        return Err(Reject::Foreign);
    }
    if b[4] != VERSION {
        return Err(Reject::Version(b[4]));
    }
    if b.len() < PREFIX_BYTES || b[7] != 0 {
        return Err(Reject::Malformed);
    }
    let conn = u32_at(b, 8);
    let at = PREFIX_BYTES;
    let d = RtDatagram {
        conn,
        h: RtHeader::default(),
        done: None,
        ccfb_interval: None,
        sent_at: Nanos::ZERO,
        report: None,
        frames: Vec::new(),
        len: b.len(),
    };
    match b[6] {
        KIND_DATA if b.len() >= DATA_HEADER_BYTES => {
            let h = RtHeader {
                seq: u64_at(b, at),
                frame: u64_at(b, at + 8),
                frame_bytes: u32_at(b, at + 16),
                capture_at: Nanos(u64_at(b, at + 20)),
                echo: Nanos(u64_at(b, at + 28)),
                marker: b[at + 36] == 1,
                ..Default::default()
            };
            let us = u32_at(b, at + 37);
            // udp_prague numbers packets from 1; a frame has at least one byte.
            if h.seq == 0 || h.frame_bytes == 0 || h.capture_at > h.echo || b[at + 36] > 1 {
                return Err(Reject::Malformed);
            }
            Ok(RtDatagram {
                h,
                ccfb_interval: (us > 0).then_some(Nanos(us as u64 * 1000)),
                ..d
            })
        }
        KIND_FEEDBACK if b.len() == FEEDBACK_BYTES => {
            let v: Vec<u64> = (0..8).map(|i| u64_at(b, at + 8 * i)).collect();
            // Counters: what was received splits into CE or not; losses never exceed the seq.
            if v[2] > v[1] || v[0] == 0 {
                return Err(Reject::Malformed);
            }
            Ok(RtDatagram {
                h: RtHeader {
                    seq: v[0],
                    feedback: true,
                    received: v[1],
                    ce: v[2],
                    lost: v[3],
                    echo: Nanos(v[4]),
                    ..Default::default()
                },
                done: done_of(v[5], v[6])?,
                sent_at: Nanos(v[7]),
                ..d
            })
        }
        KIND_REPORT if b.len() > REPORT_HEADER_BYTES => {
            let id = u64_at(b, at);
            let n = u16::from_be_bytes([b[at + 8], b[at + 9]]) as usize;
            let list_end = REPORT_HEADER_BYTES + 16 * n;
            if id == 0 || n > REPORT_MAX_FRAMES || b.len() <= list_end {
                return Err(Reject::Malformed);
            }
            let frames = (0..n)
                .map(|i| {
                    let o = REPORT_HEADER_BYTES + 16 * i;
                    (u64_at(b, o), Nanos(u64_at(b, o + 8)))
                })
                .collect();
            let rtcp = &b[list_end..];
            if CcfbReport::decode(rtcp).is_err() {
                return Err(Reject::Malformed);
            }
            Ok(RtDatagram {
                h: RtHeader {
                    seq: id,
                    feedback: true,
                    ccfb: true,
                    ..Default::default()
                },
                frames,
                report: Some(rtcp),
                ..d
            })
        }
        _ => Err(Reject::Malformed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4s_core::rt::rfc8888::CcfbGenerator;
    use l4s_core::Ecn;

    fn data() -> RtHeader {
        RtHeader {
            seq: 7,
            frame: 3,
            frame_bytes: 20_000,
            capture_at: Nanos(1_000),
            echo: Nanos(2_000),
            marker: true,
            ..Default::default()
        }
    }

    fn feedback() -> RtHeader {
        RtHeader {
            seq: 7,
            feedback: true,
            received: 6,
            ce: 2,
            lost: 1,
            echo: Nanos(2_000),
            ..Default::default()
        }
    }

    /// A report of packets 1..=4 (3 not received, 2 CE), sent when the frame's last packet
    /// (the marker) arrives or, at the latest, by the generator's timer.
    fn report() -> CcfbReport {
        let mut g = CcfbGenerator::new(Nanos::from_ms(25));
        let t = Nanos::from_ms(1);
        assert!(g.on_packet(1, Ecn::Ect1, false, t).is_none());
        assert!(g
            .on_packet(2, Ecn::Ce, false, t + Nanos::from_ms(2))
            .is_none());
        g.on_packet(4, Ecn::Ect1, true, t + Nanos::from_ms(4))
            .or_else(|| g.poll(Nanos::from_ms(30)))
            .expect("a report is due")
    }

    #[test]
    fn data_feedback_and_report_round_trip() {
        let mut buf = Vec::new();
        for ccfb in [None, Some(Nanos::from_ms(25))] {
            encode_data(&mut buf, 9, &data(), ccfb, 1372);
            assert_eq!(buf.len(), 1372);
            let d = decode(&buf).expect("decodes");
            assert_eq!((d.conn, d.h, d.done, d.len), (9, data(), None, 1372));
            assert_eq!(d.ccfb_interval, ccfb);
        }
        for done in [None, Some((3, Nanos(12_345)))] {
            encode_feedback(&mut buf, 9, &feedback(), done, Nanos(5_000));
            assert_eq!(buf.len(), FEEDBACK_BYTES);
            let d = decode(&buf).expect("decodes");
            assert_eq!((d.h, d.done, d.sent_at), (feedback(), done, Nanos(5_000)));
        }
        // The RFC 8888 report travels byte for byte and decodes to the same metrics.
        let r = report();
        let rtcp = r.encode();
        let frames = [(3, Nanos(7)), (4, Nanos(8))];
        encode_report(&mut buf, 9, 42, &frames, &rtcp);
        assert_eq!(buf.len(), REPORT_HEADER_BYTES + 2 * 16 + rtcp.len());
        let d = decode(&buf).expect("decodes");
        assert_eq!((d.h.seq, d.h.feedback, d.h.ccfb), (42, true, true));
        assert_eq!((d.done, &d.frames[..]), (None, &frames[..]));
        assert_eq!(d.report, Some(&rtcp[..]));
        let back = CcfbReport::decode(d.report.unwrap()).expect("RFC 8888 decodes");
        assert_eq!(back, r);
        let m: Vec<_> = back.metrics.iter().map(|m| (m.received, m.ecn)).collect();
        assert_eq!(
            m,
            [
                (true, Ecn::Ect1),
                (true, Ecn::Ce),
                (false, Ecn::NotEct),
                (true, Ecn::Ect1)
            ]
        );
    }

    #[test]
    fn tcp_datagrams_and_rt_datagrams_are_told_apart() {
        let mut buf = Vec::new();
        crate::wire::encode_control(&mut buf, 1, &crate::wire::Control::Done);
        assert_eq!(decode(&buf), Err(Reject::Foreign));
        encode_data(&mut buf, 1, &data(), None, 200);
        assert_eq!(crate::wire::decode(&buf), Err(Reject::Malformed));
        encode_report(&mut buf, 1, 1, &[], &report().encode());
        assert_eq!(crate::wire::decode(&buf), Err(Reject::Malformed));
    }

    #[test]
    fn malformed_datagrams_are_refused() {
        let mut buf = Vec::new();
        encode_data(&mut buf, 1, &data(), None, 200);
        assert_eq!(
            decode(&buf[..DATA_HEADER_BYTES - 1]),
            Err(Reject::Malformed)
        );
        let mut v = buf.clone();
        v[4] = 2;
        assert_eq!(decode(&v), Err(Reject::Version(2)));
        let mut k = buf.clone();
        k[6] = 9;
        assert_eq!(decode(&k), Err(Reject::Malformed));
        // A marker byte other than 0 or 1.
        let mut m = buf.clone();
        m[PREFIX_BYTES + 36] = 2;
        assert_eq!(decode(&m), Err(Reject::Malformed));
        // A frame of 0 bytes, or captured after it was sent.
        let mut h = data();
        h.frame_bytes = 0;
        encode_data(&mut buf, 1, &h, None, 200);
        assert_eq!(decode(&buf), Err(Reject::Malformed));
        let mut h = data();
        h.capture_at = Nanos(3_000);
        encode_data(&mut buf, 1, &h, None, 200);
        assert_eq!(decode(&buf), Err(Reject::Malformed));
        // Feedback: more CE than received, a wrong length.
        let fb = RtHeader {
            seq: 1,
            feedback: true,
            received: 1,
            ce: 2,
            ..Default::default()
        };
        encode_feedback(&mut buf, 1, &fb, None, Nanos(1));
        assert_eq!(decode(&buf), Err(Reject::Malformed));
        let fb = RtHeader { ce: 1, ..fb };
        encode_feedback(&mut buf, 1, &fb, None, Nanos(1));
        buf.push(0);
        assert_eq!(decode(&buf), Err(Reject::Malformed));
        // Every strict prefix of a valid feedback or report datagram is refused.
        buf.pop();
        assert!(decode(&buf).is_ok());
        for n in 0..buf.len() {
            assert!(decode(&buf[..n]).is_err());
        }
        let mut rep = Vec::new();
        encode_report(&mut rep, 1, 1, &[(1, Nanos(2))], &report().encode());
        assert!(decode(&rep).is_ok());
        for n in 0..rep.len() {
            assert!(decode(&rep[..n]).is_err(), "prefix of {n} bytes");
        }
        // Report id 0 is never sent.
        encode_report(&mut buf, 1, 0, &[], &report().encode());
        assert_eq!(decode(&buf), Err(Reject::Malformed));
        for b0 in [&buf, &rep] {
            for i in 0..b0.len() {
                for bit in 0..8 {
                    let mut b = b0.clone();
                    b[i] ^= 1 << bit;
                    let _ = decode(&b);
                }
            }
        }
    }
}
