//! TSO super-packets as a TUN device with IFF_VNET_HDR hands them over: split into MSS-sized
//! wire packets before the AQM (as `tcp_gso_segment` / `dualpi2_qdisc_enqueue`), each with its
//! own sequence number, IP ID and length and valid checksums, and CE on exactly the segments
//! the AQM marked. No root, no sockets: the frames are built here.

use l4s_core::aqm::dualpi2::{DualPi2, DualPi2Params};
use l4s_core::{Ecn, Nanos, Rng};
use l4s_emu::offload::{self, OffloadStats, VnetHdr, F_NEEDS_CSUM, GSO_TCPV4, GSO_TCPV6};
use l4s_emu::packet::{parse, PacketBuf};
use l4s_emu::path::{Path, PathConfig};
use serde_json::json;

const MSS: usize = 1448;
const SEQ0: u32 = 0xffff_0000; // wraps within the super-packet
const IP_ID0: u16 = 0xfff0; // wraps too

/// RFC 1071 one's-complement sum of big-endian words (written here independently of the crate).
fn sum16(data: &[u8], mut acc: u64) -> u64 {
    for c in data.chunks(2) {
        acc += u64::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    acc
}

fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// Pseudo-header sum of a TCP segment of `tcp_len` bytes (RFC 9293 §3.1, RFC 8200 §8.1).
fn pseudo(v6: bool, ip: &[u8], tcp_len: usize) -> u64 {
    let (src, dst) = if v6 {
        (8..24, 24..40)
    } else {
        (12..16, 16..20)
    };
    sum16(&ip[dst], sum16(&ip[src], 0)) + 6 + tcp_len as u64
}

/// A virtio-net frame holding a TSO super-packet of `segs` full segments plus `tail` bytes,
/// ECT(1), ACK|PSH, a 12-byte timestamp option, CHECKSUM_PARTIAL (the TCP checksum field holds
/// the folded pseudo-header sum, as `tcp_v4_send_check`/`tcp_v6_send_check` leave it).
fn tso_frame(v6: bool, segs: usize, tail: usize) -> (Vec<u8>, Vec<u8>) {
    let ip_len = if v6 { 40 } else { 20 };
    let tcp_len = 32 + segs * MSS + tail;
    let mut p = vec![0u8; ip_len + tcp_len];
    if v6 {
        p[0] = 0x60 | (Ecn::Ect1.bits() >> 4);
        p[1] = (Ecn::Ect1.bits() & 0x0f) << 4;
        p[4..6].copy_from_slice(&(tcp_len as u16).to_be_bytes());
        p[6] = 6;
        p[7] = 64;
        p[8..24].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        p[24..40].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    } else {
        p[0] = 0x45;
        p[1] = Ecn::Ect1.bits();
        p[2..4].copy_from_slice(&((ip_len + tcp_len) as u16).to_be_bytes());
        p[4..6].copy_from_slice(&IP_ID0.to_be_bytes());
        p[6] = 0x40; // DF
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 77, 0, 1]);
        p[16..20].copy_from_slice(&[10, 77, 0, 2]);
        let c = !fold(sum16(&p[..20], 0));
        p[10..12].copy_from_slice(&c.to_be_bytes());
    }
    let t = ip_len;
    p[t..t + 2].copy_from_slice(&40000u16.to_be_bytes());
    p[t + 2..t + 4].copy_from_slice(&5201u16.to_be_bytes());
    p[t + 4..t + 8].copy_from_slice(&SEQ0.to_be_bytes());
    p[t + 8..t + 12].copy_from_slice(&77u32.to_be_bytes());
    p[t + 12] = 8 << 4;
    p[t + 13] = 0x18; // ACK | PSH
    p[t + 14..t + 16].copy_from_slice(&512u16.to_be_bytes());
    p[t + 20..t + 32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 5, 0, 0, 0, 6]);
    for (k, x) in p[t + 32..].iter_mut().enumerate() {
        *x = (k * 31 % 251) as u8;
    }
    let c = fold(pseudo(v6, &p, tcp_len));
    p[t + 16..t + 18].copy_from_slice(&c.to_be_bytes());
    let h = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: if v6 { GSO_TCPV6 } else { GSO_TCPV4 },
        hdr_len: (t + 32) as u16,
        gso_size: MSS as u16,
        csum_start: t as u16,
        csum_offset: 16,
    };
    let mut frame = h.to_bytes().to_vec();
    frame.extend_from_slice(&p);
    (frame, p)
}

#[test]
fn tso_super_packets_are_split_before_the_aqm_and_marked_per_segment() {
    for v6 in [false, true] {
        let (segs, tail) = (40, 700); // 40 full segments + one of 700 bytes: 41 packets
        let (mut frame, orig) = tso_frame(v6, segs, tail);
        let ip_len = if v6 { 40 } else { 20 };
        let t = ip_len;
        // DualPI2 held at p' = 0.3 (no PI update within the test): each ECT(1) segment is
        // CE-marked with p_CL = k·p' = 0.6 while >= 2 MTU stay queued, so the marks form a
        // random pattern the output must reproduce segment by segment.
        let params = DualPi2Params {
            tupdate: Nanos::from_secs(4),
            step_thresh: Some(Nanos::from_secs(4)),
            limit: 100_000,
            ..Default::default()
        };
        let mut aqm = DualPi2::new(params, Rng::new(11)).unwrap();
        aqm.set_p_prime(0.3);
        let mut c = PathConfig::from_tables(json!({"rate": "100mbit"}), json!({"kind": "dualpi2"}))
            .unwrap();
        c.per_packet = true;
        let mut path = Path::with_aqm(c, Box::new(aqm)).unwrap();
        let mut stats = OffloadStats::default();
        offload::split_frame(&mut frame, &mut Vec::new(), &mut stats, |p| {
            path.push(p, Nanos::ZERO)
        })
        .expect("a valid super-packet");
        assert_eq!((stats.gso_frames, stats.gso_segments), (1, segs as u64 + 1));
        // Every segment went through the AQM on its own.
        let mut out: Vec<PacketBuf> = Vec::new();
        let mut now = Nanos::ZERO;
        while let Some(d) = path.next_deadline() {
            if d > Nanos::from_ms(100) {
                break;
            }
            now = now.max(d);
            while let Some((b, _)) = path.pop_due(now) {
                out.push(b);
            }
        }
        assert_eq!(out.len(), segs + 1, "one wire packet per segment");
        let r = path.finish(now);
        let rows = r.run.packets.as_ref().expect("per-packet rows");
        assert_eq!(rows.verdict.len(), segs + 1, "the AQM saw each segment");
        let mut payload = Vec::new();
        let mut marks = 0;
        for (i, s) in out.iter().enumerate() {
            let p = parse(s).expect("valid IP header (IPv4 header checksum verified)");
            let want_payload = if i < segs { MSS } else { tail };
            assert_eq!(p.payload_len, want_payload, "segment {i} length");
            assert_eq!(p.len, ip_len + 32 + want_payload);
            if v6 {
                let plen = u16::from_be_bytes([s[4], s[5]]) as usize;
                assert_eq!(plen, 32 + want_payload, "IPv6 payload length");
            } else {
                assert_eq!(u16::from_be_bytes([s[2], s[3]]) as usize, p.len);
                let id = u16::from_be_bytes([s[4], s[5]]);
                assert_eq!(id, IP_ID0.wrapping_add(i as u16), "IP ID of segment {i}");
                assert_eq!(fold(sum16(&s[..20], 0)), 0xffff, "IP header checksum");
            }
            let seq = u32::from_be_bytes([s[t + 4], s[t + 5], s[t + 6], s[t + 7]]);
            assert_eq!(
                seq,
                SEQ0.wrapping_add((i * MSS) as u32),
                "seq of segment {i}"
            );
            assert_eq!(s[t + 13] & 0x08 != 0, i == segs, "PSH on the last only");
            // The TCP checksum verifies: pseudo-header + segment (field included) = 0xffff.
            let tcp_len = s.len() - t;
            assert_eq!(
                fold(sum16(&s[t..], pseudo(v6, s, tcp_len))),
                0xffff,
                "TCP checksum of segment {i}"
            );
            // CE exactly where the AQM marked (verdict 1); ECT(1) kept elsewhere.
            let marked = rows.verdict[i] == 1;
            assert_eq!(
                p.ecn == Ecn::Ce,
                marked,
                "segment {i}: CE vs the AQM's verdict"
            );
            if !marked {
                assert_eq!(p.ecn, Ecn::Ect1);
            }
            marks += marked as usize;
            payload.extend_from_slice(&s[t + 32..]);
        }
        assert_eq!(&payload[..], &orig[t + 32..], "payload in order");
        // p_CL = 0.6 over 39 eligible segments: a mixed pattern (P(all or none) < 1e-8).
        assert!(marks > 0 && marks < segs, "{marks} marks");
    }
}
