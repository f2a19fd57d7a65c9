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
}
