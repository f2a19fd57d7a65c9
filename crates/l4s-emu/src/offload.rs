//! TUN offloads: the virtio-net header of a device opened with IFF_VNET_HDR + TUNSETOFFLOAD,
//! checksum completion and TSO segmentation into wire packets before the AQM.
//! Follows Linux `virtio_net_hdr_to_skb` (include/linux/virtio_net.h), `skb_checksum_help`
//! (net/core/dev.c) and `tcp_gso_segment`; DualPI2 splits GSO packets the same way
//! (`dualpi2_qdisc_enqueue`), so the AQM sees MTU packets either way.

use crate::packet::{self, fold, ones_sum, PacketError};

/// Size of `struct virtio_net_hdr` (the TUN default, TUNSETVNETHDRSZ not used).
pub const VNET_HDR_LEN: usize = 10;
/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum at csum_start + csum_offset is partial.
pub const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_NONE`.
pub const GSO_NONE: u8 = 0;
/// `VIRTIO_NET_HDR_GSO_TCPV4`.
pub const GSO_TCPV4: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_TCPV6`.
pub const GSO_TCPV6: u8 = 4;
/// `VIRTIO_NET_HDR_GSO_ECN`: the super-packet may carry CWR (kept on its first segment).
pub const GSO_ECN: u8 = 0x80;
/// The header written before every outgoing packet: no offload, checksums complete.
pub const VNET_HDR_NONE: [u8; VNET_HDR_LEN] = [0; VNET_HDR_LEN];

/// A parsed `struct virtio_net_hdr` (native byte order: TUN's legacy virtio header).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    /// `F_NEEDS_CSUM` or 0.
    pub flags: u8,
    /// `GSO_*`, possibly with `GSO_ECN`.
    pub gso_type: u8,
    /// Length of the headers (a hint; not used).
    pub hdr_len: u16,
    /// MSS of a GSO super-packet.
    pub gso_size: u16,
    /// Where the checksummed area starts (offset in the packet).
    pub csum_start: u16,
    /// Where, from csum_start, the checksum field is.
    pub csum_offset: u16,
}

impl VnetHdr {
    /// Read the header at the start of `frame`.
    pub fn parse(frame: &[u8]) -> Result<VnetHdr, PacketError> {
        if frame.len() < VNET_HDR_LEN {
            return Err(PacketError::Truncated {
                what: "virtio-net header",
                have: frame.len(),
                need: VNET_HDR_LEN,
            });
        }
        let u = |i: usize| u16::from_ne_bytes([frame[i], frame[i + 1]]);
        Ok(VnetHdr {
            flags: frame[0],
            gso_type: frame[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
        })
    }

    /// The header as the kernel lays it out (for tests building frames).
    pub fn to_bytes(self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0u8; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
        b
    }
}

/// What the offload edge did in one direction (summary.json: `emulator.directions.*.offload`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OffloadStats {
    /// Frames read (each one virtio header).
    pub frames: u64,
    /// GSO super-packets among them.
    pub gso_frames: u64,
    /// Wire packets those super-packets were split into.
    pub gso_segments: u64,
    /// Packets whose partial checksum was completed here.
    pub csum_completed: u64,
    /// Frames refused (bad header, unsupported GSO type, bad checksum offsets); dropped.
    pub refused: u64,
}

/// Complete a partial checksum in place as `skb_checksum_help` does: the field at
/// csum_start + csum_offset holds the pseudo-header sum; the one's-complement sum of everything
/// from csum_start goes there, complemented, with 0 sent as 0xffff (CSUM_MANGLED_0; both mean
/// the same to TCP, and 0 would mean "no checksum" to UDP).
pub fn complete_checksum(pkt: &mut [u8], start: usize, offset: usize) -> Result<(), PacketError> {
    let field = start
        .checked_add(offset)
        .filter(|&f| f + 2 <= pkt.len() && start < pkt.len())
        .ok_or(PacketError::BadLength("virtio-net csum_start/csum_offset"))?;
    // Summed in u64 so that no length can overflow, then folded.
    let mut acc = 0u64;
    for c in pkt[start..].chunks(32_768) {
        acc += ones_sum(c, 0) as u64;
    }
    while acc > 0xffff_ffff {
        acc = (acc & 0xffff_ffff) + (acc >> 32);
    }
    let c = !fold(acc as u32);
    let c = if c == 0 { 0xffff } else { c };
    pkt[field..field + 2].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// Split one frame read from an IFF_VNET_HDR TUN device into wire packets with complete
/// checksums and hand each to `each` (`scratch` is reused for segments). A plain packet is
/// handed over in place (its partial checksum completed); a TSO super-packet is cut into
/// `gso_size` segments first. Errors (counted in `stats.refused`) drop the whole frame.
pub fn split_frame(
    frame: &mut [u8],
    scratch: &mut Vec<u8>,
    stats: &mut OffloadStats,
    mut each: impl FnMut(&[u8]),
) -> Result<(), PacketError> {
    stats.frames += 1;
    let r = split_inner(frame, scratch, stats, &mut each);
    if r.is_err() {
        stats.refused += 1;
    }
    r
}

fn split_inner(
    frame: &mut [u8],
    scratch: &mut Vec<u8>,
    stats: &mut OffloadStats,
    each: &mut impl FnMut(&[u8]),
) -> Result<(), PacketError> {
    let h = VnetHdr::parse(frame)?;
    let pkt = &mut frame[VNET_HDR_LEN..];
    let needs_csum = h.flags & F_NEEDS_CSUM != 0;
    match h.gso_type & !GSO_ECN {
        GSO_NONE => {
            if needs_csum {
                complete_checksum(pkt, h.csum_start as usize, h.csum_offset as usize)?;
                stats.csum_completed += 1;
            }
            each(pkt);
            Ok(())
        }
        GSO_TCPV4 | GSO_TCPV6 => {
            let want_v6 = h.gso_type & !GSO_ECN == GSO_TCPV6;
            if pkt.first().map(|b| b >> 4) != Some(if want_v6 { 6 } else { 4 }) {
                return Err(PacketError::BadLength("virtio-net GSO type vs IP version"));
            }
            let mss = h.gso_size as usize;
            // A super-packet that turns out to fit one segment still needs its checksum.
            let p = packet::parse(pkt)?;
            if p.payload_len <= mss && needs_csum {
                complete_checksum(pkt, h.csum_start as usize, h.csum_offset as usize)?;
                stats.csum_completed += 1;
            }
            // Segments get full checksums computed afresh (the partial one is not read).
            let n = packet::gso_segment_tcp_each(pkt, mss, scratch, |s| each(s))?;
            stats.gso_frames += 1;
            stats.gso_segments += n as u64;
            Ok(())
        }
        _ => Err(PacketError::BadLength(
            "virtio-net GSO type (only TCPv4/TCPv6)",
        )),
    }
}

/// Header fields of the packet a [`GsoWriter`] group started with.
#[derive(Copy, Clone, Debug)]
struct Group {
    v6: bool,
    /// IP header length (transport header offset).
    l4: usize,
    /// IP + TCP header length.
    hdr: usize,
    /// Payload bytes of each full segment (the first one's).
    mss: usize,
    /// Sequence number the next segment must start with.
    next_seq: u32,
    /// IPv4 ID of the last segment.
    last_id: u16,
    segs: u32,
    /// The last segment was shorter than mss or carried PSH/FIN: nothing may follow.
    closed: bool,
}

/// Largest merged IP packet (the IPv4 total length / IPv6 payload length field).
const GSO_MAX_IP: usize = 65_535 - 40;

/// TCP flags that end a group (PSH, FIN) and that never join one (SYN, RST, URG, CWR, ECE
/// handled by equality with the first segment).
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;

/// The TCP checksum of the segment at `l4` verifies (`tcp4_gro_receive` checks it too).
fn tcp_checksum_ok(v6: bool, pkt: &[u8], l4: usize) -> bool {
    let (src, dst) = if v6 {
        (8..24, 24..40)
    } else {
        (12..16, 16..20)
    };
    let c = packet::tcp_checksum(v6, &pkt[src], &pkt[dst], &pkt[l4..]);
    // 0x0000 and 0xffff are the same one's-complement value.
    let got = u16::from_be_bytes([pkt[l4 + 16], pkt[l4 + 17]]);
    got == c || (c == 0xffff && got == 0) || (c == 0 && got == 0xffff)
}

/// Write-side batching for a TUN device with offloads: consecutive packets of one TCP flow
/// that `tcp_gro_receive` would merge (same IP header but ID/length/checksum, ID + 1,
/// contiguous sequence numbers, same ACK, window, flags and options, full-size segments but
/// the last) are written as one GSO frame, as a receiver NIC's GRO would hand them to the
/// stack; anything else is written as it is behind a zero virtio-net header. Marks are
/// untouched: packets with different ECN codepoints never merge (`inet_gro_receive` compares
/// the TOS byte), so the receiver counts CE per segment as it would after GRO.
#[derive(Debug, Default)]
pub struct GsoWriter {
    /// virtio-net header + the packet being built.
    frame: Vec<u8>,
    /// `frame` holds a packet not yet emitted.
    held: bool,
    group: Option<Group>,
    /// Frames emitted and how many of them carried several segments.
    frames: u64,
    merged_frames: u64,
}

impl GsoWriter {
    /// Frames emitted so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// A packet waits in the frame being built.
    pub fn held(&self) -> bool {
        self.held
    }

    /// Frames that carried more than one segment.
    pub fn merged_frames(&self) -> u64 {
        self.merged_frames
    }

    /// Add `pkt` (a complete IP packet with valid checksums); a group it cannot join is
    /// emitted first. `emit` gets whole frames (virtio-net header + packet).
    pub fn push(&mut self, pkt: &[u8], emit: &mut impl FnMut(&[u8])) {
        if self.try_merge(pkt) {
            return;
        }
        self.flush(emit);
        self.frame.clear();
        self.frame.extend_from_slice(&VNET_HDR_NONE);
        self.frame.extend_from_slice(pkt);
        self.held = true;
        self.group = Self::group_of(pkt);
        if self.group.is_none() {
            // Nothing can join it: out at once.
            self.flush(emit);
        }
    }

    /// Emit the packet or group being built, if any.
    pub fn flush(&mut self, emit: &mut impl FnMut(&[u8])) {
        if !self.held {
            return;
        }
        self.held = false;
        if let Some(g) = self.group.take() {
            if g.segs > 1 {
                self.finish_gso(&g);
                self.merged_frames += 1;
            }
        }
        self.frames += 1;
        emit(&self.frame);
    }

    /// The group `pkt` can start: a TCP segment with payload, no fragment, no CWR/SYN/RST/URG.
    fn group_of(pkt: &[u8]) -> Option<Group> {
        let p = packet::parse(pkt).ok()?;
        let packet::Transport::Tcp { header_len } = p.transport else {
            return None;
        };
        let t = p.l4_offset;
        let flags = pkt[t + 13];
        if p.payload_len == 0 || flags & !(0x10 | TCP_PSH | TCP_FIN | 0x40) != 0 {
            return None;
        }
        let v6 = p.version == packet::IpVersion::V6;
        if !v6 && (pkt[6] & 0x3f != 0 || pkt[7] != 0) {
            return None; // MF or a fragment offset (parse already calls those Other)
        }
        if !tcp_checksum_ok(v6, pkt, t) {
            return None; // goes out alone, as it came (GRO flushes these too)
        }
        let seq = u32::from_be_bytes([pkt[t + 4], pkt[t + 5], pkt[t + 6], pkt[t + 7]]);
        Some(Group {
            v6,
            l4: t,
            hdr: t + header_len,
            mss: p.payload_len,
            next_seq: seq.wrapping_add(p.payload_len as u32),
            last_id: u16::from_be_bytes([pkt[4], pkt[5]]),
            segs: 1,
            closed: flags & (TCP_PSH | TCP_FIN) != 0,
        })
    }

    fn try_merge(&mut self, pkt: &[u8]) -> bool {
        let Some(g) = self.group.as_mut() else {
            return false;
        };
        if g.closed
            || pkt.len() <= g.hdr
            || self.frame.len() - VNET_HDR_LEN + pkt.len() - g.hdr > GSO_MAX_IP
        {
            return false;
        }
        let first = &self.frame[VNET_HDR_LEN..VNET_HDR_LEN + g.hdr];
        let (l4, hdr) = (g.l4, g.hdr);
        let payload = pkt.len() - hdr;
        // IP: equal but for length, ID and checksum (IPv4) / payload length (IPv6).
        let ip_same = if g.v6 {
            first[..4] == pkt[..4] && first[6..l4] == pkt[6..l4]
        } else {
            first[..2] == pkt[..2] && first[6..10] == pkt[6..10] && first[12..l4] == pkt[12..l4]
        };
        if !ip_same || payload > g.mss || payload == 0 {
            return false;
        }
        if !g.v6 && u16::from_be_bytes([pkt[4], pkt[5]]) != g.last_id.wrapping_add(1) {
            return false;
        }
        // The IP length field must describe exactly these bytes (no padding).
        let ip_len = if g.v6 {
            u16::from_be_bytes([pkt[4], pkt[5]]) as usize + 40
        } else {
            u16::from_be_bytes([pkt[2], pkt[3]]) as usize
        };
        if ip_len != pkt.len() {
            return false;
        }
        // TCP: same ports, ack, data offset, window, urgent pointer and options; contiguous
        // sequence numbers; same flags but PSH/FIN (which close the group).
        let seq = u32::from_be_bytes([pkt[l4 + 4], pkt[l4 + 5], pkt[l4 + 6], pkt[l4 + 7]]);
        let flags = pkt[l4 + 13];
        let tcp_same = first[l4..l4 + 4] == pkt[l4..l4 + 4]
            && first[l4 + 8..l4 + 13] == pkt[l4 + 8..l4 + 13]
            && first[l4 + 14..l4 + 16] == pkt[l4 + 14..l4 + 16]
            && first[l4 + 18..hdr] == pkt[l4 + 18..hdr]
            && (first[l4 + 13] ^ flags) & !(TCP_PSH | TCP_FIN) == 0;
        if !tcp_same || seq != g.next_seq {
            return false;
        }
        // A segment's own TCP checksum is not carried over (the merged frame's is partial):
        // only valid ones join, so a corrupted segment is never forwarded as good.
        if !tcp_checksum_ok(g.v6, pkt, l4) {
            return false;
        }
        self.frame.extend_from_slice(&pkt[hdr..]);
        g.segs += 1;
        g.next_seq = seq.wrapping_add(payload as u32);
        g.last_id = g.last_id.wrapping_add(1);
        g.closed = payload < g.mss || flags & (TCP_PSH | TCP_FIN) != 0;
        if flags & (TCP_PSH | TCP_FIN) != 0 {
            let f = &mut self.frame[VNET_HDR_LEN + l4 + 13];
            *f |= flags & (TCP_PSH | TCP_FIN);
        }
        true
    }

    /// Turn the built packet into a GSO frame: IP length (and IPv4 checksum), a partial TCP
    /// checksum (the pseudo-header sum, as `tcp_v4_send_check` leaves it) and the header.
    fn finish_gso(&mut self, g: &Group) {
        let p = &mut self.frame[VNET_HDR_LEN..];
        let len = p.len();
        let tcp_len = len - g.l4;
        if g.v6 {
            p[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
        } else {
            p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
            p[10] = 0;
            p[11] = 0;
            let c = packet::ipv4_header_checksum(&p[..g.l4]);
            p[10..12].copy_from_slice(&c.to_be_bytes());
        }
        let (src, dst) = if g.v6 {
            (8..24, 24..40)
        } else {
            (12..16, 16..20)
        };
        let mut acc = ones_sum(&p[src], 0);
        acc = ones_sum(&p[dst], acc);
        acc += 6 + tcp_len as u32;
        let pseudo = fold(acc);
        p[g.l4 + 16..g.l4 + 18].copy_from_slice(&pseudo.to_be_bytes());
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: if g.v6 { GSO_TCPV6 } else { GSO_TCPV4 },
            hdr_len: g.hdr as u16,
            gso_size: g.mss as u16,
            csum_start: g.l4 as u16,
            csum_offset: 16,
        };
        self.frame[..VNET_HDR_LEN].copy_from_slice(&h.to_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{build, proto, tcp_checksum};

    /// A UDP/IPv4 packet whose checksum field holds only the pseudo-header sum, as the kernel
    /// hands it with CHECKSUM_PARTIAL.
    fn partial_udp() -> (Vec<u8>, u16) {
        let mut b = build::ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto::UDP, 7, 9, 0, 61);
        for (i, x) in b[28..].iter_mut().enumerate() {
            *x = (i * 7) as u8;
        }
        // RFC 768: pseudo-header = src, dst, zero+proto, UDP length.
        let ulen = (b.len() - 20) as u16;
        b[24..26].copy_from_slice(&ulen.to_be_bytes());
        let mut acc = ones_sum(&b[12..20], 0);
        acc += proto::UDP as u32 + ulen as u32;
        let pseudo = fold(acc);
        b[26..28].copy_from_slice(&pseudo.to_be_bytes());
        (b, pseudo)
    }

    #[test]
    fn partial_checksums_are_completed() {
        let (b, _) = partial_udp();
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            csum_start: 20,
            csum_offset: 6,
            ..Default::default()
        };
        let mut frame = h.to_bytes().to_vec();
        frame.extend_from_slice(&b);
        let (mut stats, mut got) = (OffloadStats::default(), Vec::new());
        split_frame(&mut frame, &mut Vec::new(), &mut stats, |p| {
            got.push(p.to_vec())
        })
        .unwrap();
        assert_eq!(got.len(), 1);
        let p = &got[0];
        // RFC 768/1071: pseudo-header + the whole datagram (checksum included) sums to 0xffff.
        let ulen = (p.len() - 20) as u32;
        let acc = ones_sum(&p[12..20], 0) + proto::UDP as u32 + ulen;
        assert_eq!(fold(ones_sum(&p[20..], acc)), 0xffff);
        assert_eq!(&p[..26], &b[..26], "only the checksum changes");
        assert_eq!(stats.csum_completed, 1);
    }

    #[test]
    fn bad_frames_are_refused_not_panicking() {
        let (b, _) = partial_udp();
        let mut stats = OffloadStats::default();
        let cases: Vec<Vec<u8>> = vec![
            vec![0; 5],
            // csum_offset beyond the packet
            [
                VnetHdr {
                    flags: F_NEEDS_CSUM,
                    csum_start: 20,
                    csum_offset: 200,
                    ..Default::default()
                }
                .to_bytes()
                .to_vec(),
                b.clone(),
            ]
            .concat(),
            // UDP GSO (never enabled) and TCPv4 GSO on a UDP packet
            [
                VnetHdr {
                    gso_type: 5,
                    ..Default::default()
                }
                .to_bytes()
                .to_vec(),
                b.clone(),
            ]
            .concat(),
            [
                VnetHdr {
                    gso_type: GSO_TCPV4,
                    gso_size: 10,
                    ..Default::default()
                }
                .to_bytes()
                .to_vec(),
                b.clone(),
            ]
            .concat(),
            // TCPv6 GSO type on an IPv4 packet
            [
                VnetHdr {
                    gso_type: GSO_TCPV6,
                    gso_size: 10,
                    ..Default::default()
                }
                .to_bytes()
                .to_vec(),
                build::ipv4([1; 4], [2; 4], proto::TCP, 1, 2, 0, 100),
            ]
            .concat(),
        ];
        for mut f in cases {
            let mut n = 0;
            assert!(split_frame(&mut f, &mut Vec::new(), &mut stats, |_| n += 1).is_err());
            assert_eq!(n, 0);
        }
        assert_eq!(stats.refused, 5);
        assert_eq!(stats.frames, 5);
    }

    #[test]
    fn a_gso_frame_that_fits_one_segment_gets_its_checksum() {
        let mut b = build::ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto::TCP, 1, 2, 0, 140);
        for (i, x) in b[40..].iter_mut().enumerate() {
            *x = (i * 13) as u8;
        }
        let full = tcp_checksum(false, &b[12..16], &b[16..20], &b[20..]);
        // CHECKSUM_PARTIAL: the field holds the folded pseudo-header sum (tcp_v4_send_check).
        let acc = ones_sum(&b[12..20], 0) + proto::TCP as u32 + (b.len() - 20) as u32;
        b[36..38].copy_from_slice(&fold(acc).to_be_bytes());
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            gso_size: 1448,
            csum_start: 20,
            csum_offset: 16,
            ..Default::default()
        };
        let mut frame = [h.to_bytes().to_vec(), b].concat();
        let mut got = Vec::new();
        split_frame(
            &mut frame,
            &mut Vec::new(),
            &mut OffloadStats::default(),
            |p| got.push(p.to_vec()),
        )
        .unwrap();
        assert_eq!(got.len(), 1);
        let c = u16::from_be_bytes([got[0][36], got[0][37]]);
        assert_eq!(c, if full == 0 { 0xffff } else { full });
    }

    /// Wire packets of one TSO burst: `n` segments of `mss` (the last `last` bytes), IPv4 or
    /// IPv6, ECT(1), with full checksums (split from a super-packet by the segmenter).
    fn burst(v6: bool, n: usize, mss: usize, last: usize, seq0: u32) -> Vec<Vec<u8>> {
        let payload = (n - 1) * mss + last;
        let ip = if v6 { 40 } else { 20 };
        let total = (ip + 32 + payload) as u16;
        let mut b = if v6 {
            build::ipv6([1; 16], [2; 16], proto::TCP, 40000, 5201, 0x01, total)
        } else {
            build::ipv4(
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                proto::TCP,
                40000,
                5201,
                0x01,
                total,
            )
        };
        b[ip + 4..ip + 8].copy_from_slice(&seq0.to_be_bytes());
        b[ip + 12] = 8 << 4;
        b[ip + 13] = 0x18;
        b[ip + 20..ip + 32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        for (k, x) in b[ip + 32..].iter_mut().enumerate() {
            *x = (k % 253) as u8;
        }
        if !v6 {
            b[10..12].copy_from_slice(&[0, 0]);
            let c = packet::ipv4_header_checksum(&b[..20]);
            b[10..12].copy_from_slice(&c.to_be_bytes());
        }
        let mut out = Vec::new();
        packet::gso_segment_tcp(&b, mss, &mut out).unwrap();
        out
    }

    fn write_all(pkts: &[Vec<u8>]) -> (Vec<Vec<u8>>, GsoWriter) {
        let mut w = GsoWriter::default();
        let mut frames = Vec::new();
        for p in pkts {
            w.push(p, &mut |f: &[u8]| frames.push(f.to_vec()));
        }
        w.flush(&mut |f: &[u8]| frames.push(f.to_vec()));
        (frames, w)
    }

    /// What the receiving kernel makes of the frames: split them again as the stack would.
    fn read_back(frames: &mut [Vec<u8>]) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        for f in frames {
            split_frame(f, &mut Vec::new(), &mut OffloadStats::default(), |p| {
                got.push(p.to_vec())
            })
            .unwrap();
        }
        got
    }

    #[test]
    fn a_burst_leaves_as_one_gso_frame_that_splits_back_exactly() {
        for v6 in [false, true] {
            let pkts = burst(v6, 30, 1448, 500, 0xffff_f000);
            let (mut frames, w) = write_all(&pkts);
            assert_eq!((frames.len(), w.merged_frames()), (1, 1));
            let h = VnetHdr::parse(&frames[0]).unwrap();
            assert_eq!(h.gso_type, if v6 { GSO_TCPV6 } else { GSO_TCPV4 });
            assert_eq!((h.gso_size, h.flags), (1448, F_NEEDS_CSUM));
            // The receiving side's segmentation gives back the very same packets.
            assert_eq!(read_back(&mut frames), pkts);
        }
    }

    #[test]
    fn gro_rules_keep_packets_apart() {
        let base = burst(false, 6, 1000, 1000, 1);
        let ip_cs = |p: &mut Vec<u8>| {
            p[10..12].copy_from_slice(&[0, 0]);
            let c = packet::ipv4_header_checksum(&p[..20]);
            p[10..12].copy_from_slice(&c.to_be_bytes());
        };
        let tcp_cs = |p: &mut Vec<u8>| {
            let c = tcp_checksum(false, &p[12..16], &p[16..20], &p[20..]);
            p[36..38].copy_from_slice(&c.to_be_bytes());
        };
        // Segment 3 CE-marked: [0..3) [3] [4..6) -- different TOS never merge.
        let mut ce = base.clone();
        packet::set_ecn(&mut ce[3], l4s_core::Ecn::Ce).unwrap();
        // A sequence gap after segment 2: [0..3) [3..6).
        let mut gap = base.clone();
        gap.remove(3);
        // A short segment ends a group: [0..2] then [3..6).
        let mut short = base.clone();
        short[2].truncate(20 + 32 + 700);
        let l = short[2].len() as u16;
        short[2][2..4].copy_from_slice(&l.to_be_bytes());
        ip_cs(&mut short[2]);
        tcp_cs(&mut short[2]);
        let seq = 1u32 + 2 * 1000 + 700;
        for p in short[3..].iter_mut() {
            let s = u32::from_be_bytes([p[24], p[25], p[26], p[27]]);
            p[24..28].copy_from_slice(&(s - 300).to_be_bytes());
            tcp_cs(p);
        }
        assert_eq!(
            u32::from_be_bytes([short[3][24], short[3][25], short[3][26], short[3][27]]),
            seq
        );
        // A bad TCP checksum on segment 4: it goes out alone, unchanged.
        let mut bad = base.clone();
        bad[4][36] ^= 0xff;
        // A UDP packet in the middle.
        let mut udp = base.clone();
        udp.insert(
            3,
            build::ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto::UDP, 1, 2, 0, 100),
        );
        for (name, pkts, want) in [
            ("ce", ce, vec![3, 1, 2]),
            ("gap", gap, vec![3, 2]),
            ("short", short, vec![3, 3]),
            ("bad", bad, vec![4, 1, 1]),
            ("udp", udp, vec![3, 1, 3]),
        ] {
            let (mut frames, _) = write_all(&pkts);
            let segs: Vec<usize> = frames
                .iter()
                .map(|f| {
                    let h = VnetHdr::parse(f).unwrap();
                    if h.gso_type == GSO_NONE {
                        assert_eq!(h, VnetHdr::default(), "{name}: a plain frame's header");
                        1
                    } else {
                        let p = packet::parse(&f[VNET_HDR_LEN..]).unwrap();
                        p.payload_len.div_ceil(h.gso_size as usize)
                    }
                })
                .collect();
            assert_eq!(segs, want, "{name}");
            // Nothing lost, reordered or changed on the way (plain frames go out as they are).
            assert_eq!(read_back(&mut frames), pkts, "{name}");
        }
    }

    proptest::proptest! {
        /// Any mix of whole, dropped, swapped and CE-marked segments of two flows, and
        /// arbitrary bytes: what the writer emits splits back into exactly its input.
        #[test]
        fn the_writer_never_loses_reorders_or_changes_a_packet(
            ops in proptest::collection::vec((0u8..5, proptest::prelude::any::<u8>()), 0..60),
        ) {
            let a = burst(false, 30, 1448, 1448, 7);
            let b = burst(true, 30, 1200, 100, 9);
            let mut pkts = Vec::new();
            let (mut i, mut j) = (0, 0);
            for (op, x) in ops {
                match op {
                    0 if i < a.len() => { pkts.push(a[i].clone()); i += 1; }
                    1 if j < b.len() => { pkts.push(b[j].clone()); j += 1; }
                    2 => { i += 1; } // a loss in flow a
                    3 if i < a.len() => {
                        let mut p = a[i].clone();
                        packet::set_ecn(&mut p, l4s_core::Ecn::Ce).unwrap();
                        pkts.push(p);
                        i += 1;
                    }
                    _ => pkts.push(vec![x; (x % 64) as usize]), // junk, forwarded as is
                }
            }
            let (frames, _) = write_all(&pkts);
            let mut got = Vec::new();
            for mut f in frames {
                let h = VnetHdr::parse(&f).unwrap();
                if h.gso_type == GSO_NONE {
                    got.push(f[VNET_HDR_LEN..].to_vec());
                } else {
                    split_frame(&mut f, &mut Vec::new(), &mut OffloadStats::default(), |p| {
                        got.push(p.to_vec())
                    })
                    .unwrap();
                }
            }
            proptest::prop_assert_eq!(got, pkts);
        }
    }
}
