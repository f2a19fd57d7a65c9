//! A pcapng trace of what reached the bottleneck's verdict: every packet that left the AQM
//! (passed or CE-marked) or was dropped by it, with synthetic IPv4 + TCP/UDP headers in the
//! simulator; the emulator writes the real packets' headers with the same blocks and comments.
//! Follows the pcapng format (IETF draft-ietf-opsawg-pcapng: SHB, IDB with if_tsresol = 9 for
//! nanoseconds, EPB with opt_comment); link type LINKTYPE_RAW (101, the packet is an IP header).
//!
//! The headers are synthetic: the simulator has no addresses or ports, so flow `i` is
//! 10.0.0.1:(10000 + i) -> 10.0.1.1:5201; the IPv4 ECN field is the codepoint as the packet left
//! the AQM (CE when marked), the TCP sequence number the model's (mod 2^32), and only the
//! headers are stored (captured length 40 or 28 bytes, original length the packet's IP size).
//! Each packet's comment gives the AQM verdict, the queue and the sojourn time, e.g.
//! `verdict=mark queue=L sojourn_us=812.0`.

use l4s_core::packet::Transport;
use l4s_core::{Ecn, Nanos, Packet};

/// One captured packet.
#[derive(Clone, Debug, PartialEq)]
pub struct CaptureRecord {
    /// When it left the queue (or was dropped), ns.
    pub t_ns: u64,
    /// Flow id.
    pub flow: u32,
    /// IP bytes.
    pub bytes: u32,
    /// Codepoint as it left the AQM (as it arrived, for a drop).
    pub ecn: Ecn,
    /// TCP sequence number or datagram number (None for other packets).
    pub seq: Option<u64>,
    /// TCP (true) or UDP.
    pub tcp: bool,
    /// 0 pass, 1 CE-marked by the AQM, 2 dropped.
    pub verdict: u8,
    /// Queue index (into the run's queue names).
    pub queue: u8,
    /// Time in the queue.
    pub sojourn: Nanos,
}

impl CaptureRecord {
    /// The record of packet `p` at `now`.
    pub fn of(p: &Packet, now: Nanos, queue: u8, verdict: u8, sojourn: Nanos) -> Self {
        let (seq, tcp) = match &p.transport {
            Transport::Tcp(h) => (Some(h.seq), true),
            Transport::Udp { seq } => (Some(*seq), false),
            // Real-time media rides on UDP (RTP-like): its data packet number is the sequence.
            Transport::Rt(h) => (Some(h.seq), false),
            Transport::None => (None, false),
        };
        CaptureRecord {
            t_ns: now.0,
            flow: p.flow,
            bytes: p.bytes,
            ecn: p.ecn,
            seq,
            tcp,
            verdict,
            queue,
            sojourn,
        }
    }
}

const LINKTYPE_RAW: u16 = 101;

fn ecn_bits(e: Ecn) -> u8 {
    // RFC 3168 §5: 00 Not-ECT, 10 ECT(0), 01 ECT(1), 11 CE.
    match e {
        Ecn::NotEct => 0b00,
        Ecn::Ect1 => 0b01,
        Ecn::Ect0 => 0b10,
        Ecn::Ce => 0b11,
    }
}

/// RFC 1071 Internet checksum of `data`.
fn inet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in data.chunks(2) {
        let w = u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
        sum += w;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// IPv4 header (RFC 791) + TCP (RFC 9293) or UDP (RFC 768) header of a record.
fn headers(r: &CaptureRecord, id: u16) -> Vec<u8> {
    let l4 = if r.tcp { 20 } else { 8 };
    let total = r.bytes.clamp(20 + l4, u16::MAX as u32) as u16;
    let mut h = Vec::with_capacity(40);
    h.push(0x45); // version 4, IHL 5
    h.push(ecn_bits(r.ecn)); // DSCP 0, ECN
    h.extend_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&id.to_be_bytes());
    h.extend_from_slice(&0x4000u16.to_be_bytes()); // DF
    h.push(64); // TTL
    h.push(if r.tcp { 6 } else { 17 });
    h.extend_from_slice(&[0, 0]); // checksum, below
    h.extend_from_slice(&[10, 0, 0, 1]);
    h.extend_from_slice(&[10, 0, 1, 1]);
    let c = inet_checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    let sport = (10_000 + r.flow.min(55_000)) as u16;
    h.extend_from_slice(&sport.to_be_bytes());
    h.extend_from_slice(&5201u16.to_be_bytes());
    if r.tcp {
        h.extend_from_slice(&(r.seq.unwrap_or(0) as u32).to_be_bytes());
        h.extend_from_slice(&0u32.to_be_bytes()); // ack (not modelled on this direction)
        h.push(5 << 4); // data offset 5 words
        h.push(0x10); // ACK
        h.extend_from_slice(&65535u16.to_be_bytes()); // window
        h.extend_from_slice(&[0, 0, 0, 0]); // checksum (no payload to sum), urgent
    } else {
        h.extend_from_slice(&(total - 20).to_be_bytes());
        h.extend_from_slice(&[0, 0]); // checksum optional in IPv4 UDP
    }
    h
}

fn pad4(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(4) {
        v.push(0);
    }
}

fn option(v: &mut Vec<u8>, code: u16, value: &[u8]) {
    v.extend_from_slice(&code.to_le_bytes());
    v.extend_from_slice(&(value.len() as u16).to_le_bytes());
    v.extend_from_slice(value);
    pad4(v);
}

fn block(out: &mut Vec<u8>, kind: u32, body: &[u8]) {
    let len = (12 + body.len()) as u32;
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&len.to_le_bytes());
}

/// The head of a pcapng file (little endian): the Section Header Block and one Interface
/// Description Block per name in `interfaces` (raw IP, nanosecond timestamps). Enhanced
/// Packet Blocks ([`packet_block`]) follow, naming an interface by its index here.
pub fn file_header(interfaces: &[&str]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + 40 * interfaces.len());
    // Section Header Block.
    let mut b = Vec::new();
    b.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
    option(
        &mut b,
        4,
        concat!("l4slab ", env!("CARGO_PKG_VERSION")).as_bytes(),
    ); // shb_userappl
    option(&mut b, 0, &[]);
    block(&mut out, 0x0A0D_0D0A, &b);
    for name in interfaces {
        let mut b = Vec::new();
        b.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes()); // snaplen: no limit
        option(&mut b, 2, name.as_bytes()); // if_name
        option(&mut b, 9, &[9]); // if_tsresol: 10^-9 s
        option(&mut b, 0, &[]);
        block(&mut out, 1, &b);
    }
    out
}

/// The comment of a packet's block: the AQM verdict (0 pass, 1 mark, 2 drop), the queue, the
/// flow and the time the packet spent in the queue.
pub fn verdict_comment(verdict: u8, queue: &str, flow: u32, sojourn: Nanos) -> String {
    const VERDICT: [&str; 3] = ["pass", "mark", "drop"];
    format!(
        "verdict={} queue={} flow={} sojourn_us={:.1}",
        VERDICT.get(verdict as usize).unwrap_or(&"?"),
        queue,
        flow,
        sojourn.0 as f64 / 1e3
    )
}

/// Append one Enhanced Packet Block to `out`: `data` (the captured bytes, an IP packet or its
/// headers) seen on interface `iface` at `t_ns`, `orig_len` bytes on the wire, with `comment`.
pub fn packet_block(
    out: &mut Vec<u8>,
    iface: u32,
    t_ns: u64,
    data: &[u8],
    orig_len: u32,
    comment: &str,
) {
    let mut b = Vec::with_capacity(data.len() + 80);
    b.extend_from_slice(&iface.to_le_bytes());
    b.extend_from_slice(&((t_ns >> 32) as u32).to_le_bytes());
    b.extend_from_slice(&(t_ns as u32).to_le_bytes());
    b.extend_from_slice(&(data.len() as u32).to_le_bytes());
    b.extend_from_slice(&orig_len.max(data.len() as u32).to_le_bytes());
    b.extend_from_slice(data);
    pad4(&mut b);
    option(&mut b, 1, comment.as_bytes()); // opt_comment
    option(&mut b, 0, &[]);
    block(out, 6, &b);
}

/// The pcapng file (little endian) of `records`; `queue_names` names the queue indices.
pub fn write_pcapng(records: &[CaptureRecord], queue_names: &[String]) -> Vec<u8> {
    let mut out = file_header(&["bottleneck"]);
    out.reserve(records.len() * 120);
    for (i, r) in records.iter().enumerate() {
        let data = headers(r, i as u16);
        let queue = queue_names
            .get(r.queue as usize)
            .map_or("?", |s| s.as_str());
        let comment = verdict_comment(r.verdict, queue, r.flow, r.sojourn);
        packet_block(&mut out, 0, r.t_ns, &data, r.bytes, &comment);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_header_checksum_verifies_and_carries_the_ecn_bits() {
        let r = CaptureRecord {
            t_ns: 1,
            flow: 3,
            bytes: 1500,
            ecn: Ecn::Ce,
            seq: Some(7),
            tcp: true,
            verdict: 1,
            queue: 0,
            sojourn: Nanos(0),
        };
        let h = headers(&r, 9);
        assert_eq!(h.len(), 40);
        assert_eq!(h[1] & 3, 3);
        assert_eq!(u16::from_be_bytes([h[2], h[3]]), 1500);
        // A correct header checksum makes the sum over the header 0xffff (RFC 1071).
        assert_eq!(inet_checksum(&h[..20]), 0);
        // A known answer whose sum carries out of 16 bits (0x2479C → 0x479E → !0xB861): an
        // IPv4/UDP header 192.168.0.1 → 192.168.0.199 with its checksum field zeroed.
        let known = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(inet_checksum(&known), 0xb861);
        assert_eq!(u16::from_be_bytes([h[20], h[21]]), 10_003);
        assert_eq!(u32::from_be_bytes([h[24], h[25], h[26], h[27]]), 7);
    }

    #[test]
    fn each_ecn_codepoint_goes_in_the_low_two_bits_of_the_tos_byte() {
        // RFC 3168 §5: Not-ECT 00, ECT(1) 01, ECT(0) 10, CE 11 (DSCP 0 above them).
        for (ecn, bits) in [
            (Ecn::NotEct, 0b00u8),
            (Ecn::Ect1, 0b01),
            (Ecn::Ect0, 0b10),
            (Ecn::Ce, 0b11),
        ] {
            let r = CaptureRecord {
                t_ns: 0,
                flow: 0,
                bytes: 1500,
                ecn,
                seq: Some(0),
                tcp: true,
                verdict: 0,
                queue: 0,
                sojourn: Nanos(0),
            };
            assert_eq!(headers(&r, 0)[1], bits, "{ecn:?}");
        }
    }

    #[test]
    fn blocks_are_well_formed() {
        let r = CaptureRecord {
            t_ns: 5_000_000_123,
            flow: 0,
            bytes: 1000,
            ecn: Ecn::Ect1,
            seq: Some(1),
            tcp: false,
            verdict: 0,
            queue: 0,
            sojourn: Nanos(1500),
        };
        let f = write_pcapng(&[r], &["L".into()]);
        // Walk the blocks: each starts and ends with the same total length, a multiple of 4.
        let mut off = 0;
        let mut kinds = Vec::new();
        while off < f.len() {
            let kind = u32::from_le_bytes(f[off..off + 4].try_into().unwrap());
            let len = u32::from_le_bytes(f[off + 4..off + 8].try_into().unwrap()) as usize;
            assert_eq!(len % 4, 0);
            let end = u32::from_le_bytes(f[off + len - 4..off + len].try_into().unwrap());
            assert_eq!(end as usize, len);
            kinds.push(kind);
            off += len;
        }
        assert_eq!(kinds, vec![0x0A0D_0D0A, 1, 6]);
        let text = String::from_utf8_lossy(&f);
        assert!(text.contains("verdict=pass queue=L flow=0 sojourn_us=1.5"));
    }
}
