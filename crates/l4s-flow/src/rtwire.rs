//! The real-time datagrams of `l4slab flow --app rt`: one l4s-core `RtHeader` per UDP datagram
//! (udp_prague's `framemessage_t` data packet and per-packet `ackmessage_t` feedback).
//!
//! Same magic and version as [`crate::wire`]; byte 5 (`hflags`) has bit 4 set, which the TCP
//! codec refuses as malformed, so the two never mistake each other's datagrams. Big-endian:
//! ```text
//!  0      4   5        6      7   8         12
//!  | "L4SF" | v | 0x10 | kind | 0 | conn id | body
//!  data (kind 1):     seq u64, frame u64, frame_bytes u32, capture_ns u64, sent_ns u64,
//!                     then padding (the wire pattern) up to the packet's size
//!  feedback (kind 2): seq u64, received u64, ce u64, lost u64, echo_ns u64,
//!                     done_frame u64 (u64::MAX = none), done_latency_ns u64
//! ```
//! Times are CLOCK_MONOTONIC ns: sender and receiver on one host (the emulator's namespaces
//! share that clock) read the same clock, so the receiver measures capture-to-complete itself
//! and echoes it in `done_*` (the last frame it completed, repeated until the next one).

use l4s_core::rt::RtHeader;
use l4s_core::Nanos;

use crate::wire::{Reject, MAGIC, VERSION};

/// `hflags` of a real-time datagram.
pub const HF_RT: u8 = 0x10;
const KIND_DATA: u8 = 1;
const KIND_FEEDBACK: u8 = 2;
const PREFIX_BYTES: usize = 12;
/// Bytes of a data datagram's header (the rest is padding).
pub const DATA_HEADER_BYTES: usize = PREFIX_BYTES + 8 + 8 + 4 + 8 + 8;
/// Bytes of a feedback datagram.
pub const FEEDBACK_BYTES: usize = PREFIX_BYTES + 7 * 8;
const NO_FRAME: u64 = u64::MAX;

/// A decoded real-time datagram.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RtDatagram {
    /// Connection id chosen by the sender.
    pub conn: u32,
    /// The model's header (`feedback` says which kind). Data: `echo` = the send time.
    pub h: RtHeader,
    /// Feedback: the last frame the receiver completed and its capture-to-complete latency.
    pub done: Option<(u64, Nanos)>,
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

/// Encode a data datagram of `len` bytes (≥ [`DATA_HEADER_BYTES`]); `h.echo` is the send time.
pub fn encode_data(buf: &mut Vec<u8>, conn: u32, h: &RtHeader, len: usize) {
    prefix(buf, KIND_DATA, conn);
    put(buf, h.seq);
    put(buf, h.frame);
    buf.extend_from_slice(&h.frame_bytes.to_be_bytes());
    put(buf, h.capture_at.0);
    put(buf, h.echo.0);
    let start = buf.len();
    buf.resize(start.max(len), 0);
    crate::wire::fill_pattern(&mut buf[start..], h.seq);
}

/// Encode a feedback datagram.
pub fn encode_feedback(buf: &mut Vec<u8>, conn: u32, h: &RtHeader, done: Option<(u64, Nanos)>) {
    prefix(buf, KIND_FEEDBACK, conn);
    for v in [h.seq, h.received, h.ce, h.lost, h.echo.0] {
        put(buf, v);
    }
    let (f, l) = done.map_or((NO_FRAME, 0), |(f, l)| (f, l.0));
    put(buf, f);
    put(buf, l);
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

/// Decode one datagram; `Foreign` for anything that is not a real-time l4s-flow datagram
/// (TCP ones included). Never panics, whatever the bytes.
pub fn decode(b: &[u8]) -> Result<RtDatagram, Reject> {
    if b.len() < 6 || b[..4] != MAGIC || b[5] != HF_RT {
        return Err(Reject::Foreign);
    }
    if b[4] != VERSION {
        return Err(Reject::Version(b[4]));
    }
    if b.len() < PREFIX_BYTES || b[7] != 0 {
        return Err(Reject::Malformed);
    }
    let conn = u32::from_be_bytes([b[8], b[9], b[10], b[11]]);
    let at = PREFIX_BYTES;
    match b[6] {
        KIND_DATA if b.len() >= DATA_HEADER_BYTES => {
            let frame_bytes = u32::from_be_bytes([b[at + 16], b[at + 17], b[at + 18], b[at + 19]]);
            let h = RtHeader {
                seq: u64_at(b, at),
                frame: u64_at(b, at + 8),
                frame_bytes,
                capture_at: Nanos(u64_at(b, at + 20)),
                echo: Nanos(u64_at(b, at + 28)),
                ..Default::default()
            };
            // udp_prague numbers packets from 1; a frame has at least one byte.
            if h.seq == 0 || h.frame_bytes == 0 || h.capture_at > h.echo {
                return Err(Reject::Malformed);
            }
            Ok(RtDatagram {
                conn,
                h,
                done: None,
                len: b.len(),
            })
        }
        KIND_FEEDBACK if b.len() == FEEDBACK_BYTES => {
            let v: Vec<u64> = (0..7).map(|i| u64_at(b, at + 8 * i)).collect();
            // Counters: what was received splits into CE or not; losses never exceed the seq.
            if v[2] > v[1] || v[0] == 0 || (v[5] == NO_FRAME && v[6] != 0) {
                return Err(Reject::Malformed);
            }
            Ok(RtDatagram {
                conn,
                h: RtHeader {
                    seq: v[0],
                    feedback: true,
                    received: v[1],
                    ce: v[2],
                    lost: v[3],
                    echo: Nanos(v[4]),
                    ..Default::default()
                },
                done: (v[5] != NO_FRAME).then_some((v[5], Nanos(v[6]))),
                len: b.len(),
            })
        }
        _ => Err(Reject::Malformed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> RtHeader {
        RtHeader {
            seq: 7,
            frame: 3,
            frame_bytes: 20_000,
            capture_at: Nanos(1_000),
            echo: Nanos(2_000),
            ..Default::default()
        }
    }

    #[test]
    fn data_and_feedback_round_trip() {
        let mut buf = Vec::new();
        encode_data(&mut buf, 9, &data(), 1372);
        assert_eq!(buf.len(), 1372);
        let d = decode(&buf).expect("decodes");
        assert_eq!((d.conn, d.h, d.done, d.len), (9, data(), None, 1372));
        let fb = RtHeader {
            seq: 7,
            feedback: true,
            received: 6,
            ce: 2,
            lost: 1,
            echo: Nanos(2_000),
            ..Default::default()
        };
        for done in [None, Some((3, Nanos(12_345)))] {
            encode_feedback(&mut buf, 9, &fb, done);
            assert_eq!(buf.len(), FEEDBACK_BYTES);
            let d = decode(&buf).expect("decodes");
            assert_eq!((d.h, d.done), (fb, done));
        }
    }

    #[test]
    fn tcp_datagrams_and_rt_datagrams_are_told_apart() {
        let mut buf = Vec::new();
        crate::wire::encode_control(&mut buf, 1, &crate::wire::Control::Done);
        assert_eq!(decode(&buf), Err(Reject::Foreign));
        encode_data(&mut buf, 1, &data(), 200);
        assert_eq!(crate::wire::decode(&buf), Err(Reject::Malformed));
    }

    #[test]
    fn malformed_datagrams_are_refused() {
        let mut buf = Vec::new();
        encode_data(&mut buf, 1, &data(), 200);
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
        // A frame of 0 bytes, or captured after it was sent.
        let mut h = data();
        h.frame_bytes = 0;
        encode_data(&mut buf, 1, &h, 200);
        assert_eq!(decode(&buf), Err(Reject::Malformed));
        let mut h = data();
        h.capture_at = Nanos(3_000);
        encode_data(&mut buf, 1, &h, 200);
        assert_eq!(decode(&buf), Err(Reject::Malformed));
        // Feedback: more CE than received, a wrong length.
        let fb = RtHeader {
            seq: 1,
            feedback: true,
            received: 1,
            ce: 2,
            ..Default::default()
        };
        encode_feedback(&mut buf, 1, &fb, None);
        assert_eq!(decode(&buf), Err(Reject::Malformed));
        let fb = RtHeader { ce: 1, ..fb };
        encode_feedback(&mut buf, 1, &fb, None);
        buf.push(0);
        assert_eq!(decode(&buf), Err(Reject::Malformed));
        // Every strict prefix of a valid feedback datagram is refused.
        buf.pop();
        assert!(decode(&buf).is_ok());
        for n in 0..buf.len() {
            assert!(decode(&buf[..n]).is_err());
        }
        for i in 0..buf.len() {
            for bit in 0..8 {
                let mut b = buf.clone();
                b[i] ^= 1 << bit;
                let _ = decode(&b);
            }
        }
    }
}
