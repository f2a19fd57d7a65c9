//! Zero-copy IPv4/IPv6 packet views for the emulator: ECN get/set, 5-tuple flow keys.
//! IPv4 per RFC 791, IPv6 per RFC 8200 §3-4, ECN field per RFC 3168 §5, checksum update per RFC 1624 §3.
//!
//! Everything here works on a borrowed byte slice in the smoltcp style (`Ipv4Packet<T: AsRef<[u8]>>`):
//! [`parse`] reads what the path needs (length, ECN, flow key, payload length) without copying, and
//! [`set_ecn`] rewrites the ECN bits in place, fixing the IPv4 header checksum incrementally.
//! Malformed or truncated input is an [`Err`], never a panic: every index is checked.

use l4s_core::Ecn;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};
use thiserror::Error;

/// IP protocol numbers (IANA) the flow classifier knows.
pub mod proto {
    /// ICMP (RFC 792).
    pub const ICMP: u8 = 1;
    /// TCP (RFC 9293).
    pub const TCP: u8 = 6;
    /// UDP (RFC 768).
    pub const UDP: u8 = 17;
    /// ICMPv6 (RFC 4443).
    pub const ICMPV6: u8 = 58;
    /// IPv6 Hop-by-Hop options (RFC 8200 §4.3).
    pub const HOPOPT: u8 = 0;
    /// IPv6 Routing header (RFC 8200 §4.4).
    pub const ROUTING: u8 = 43;
    /// IPv6 Fragment header (RFC 8200 §4.5).
    pub const FRAGMENT: u8 = 44;
    /// Authentication Header (RFC 4302 §2.2: length in 4-octet units minus 2).
    pub const AH: u8 = 51;
    /// IPv6 Destination options (RFC 8200 §4.6).
    pub const DSTOPTS: u8 = 60;
}

/// Why a packet could not be parsed. The path counts these and drops the packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
pub enum PacketError {
    /// No bytes at all.
    #[error("empty packet")]
    Empty,
    /// The version nibble is neither 4 nor 6.
    #[error("IP version {0} is not 4 or 6")]
    Version(u8),
    /// Fewer bytes than a header needs.
    #[error("truncated {what}: {have} bytes, need {need}")]
    Truncated {
        /// The header that is cut short.
        what: &'static str,
        /// Bytes available.
        have: usize,
        /// Bytes required.
        need: usize,
    },
    /// A length field that contradicts the header layout (e.g. IHL < 5, TCP data offset < 5).
    #[error("bad {0} length field")]
    BadLength(&'static str),
    /// The IPv4 header checksum does not verify (Linux `ip_rcv` drops these too).
    #[error("bad IPv4 header checksum")]
    BadChecksum,
}

/// One's-complement sum of big-endian 16-bit words (RFC 1071 §4.1), not yet complemented,
/// added to `acc`. Summed as 32-bit words into 64 bits and folded back (RFC 1071 §2(B): the
/// sum is independent of the word size), which is the same value mod 0xffff and positive
/// exactly when the 16-bit sum is, so callers' final fold gives the same checksum.
pub(crate) fn ones_sum(data: &[u8], acc: u32) -> u32 {
    let mut sum = acc as u64;
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        sum += u32::from_be_bytes([w[0], w[1], w[2], w[3]]) as u64;
    }
    let mut rest = words.remainder().chunks_exact(2);
    for c in &mut rest {
        sum += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [last] = rest.remainder() {
        sum += (*last as u64) << 8;
    }
    // Fold 64 -> 32 -> 17 bits; the callers add a few more words and fold to 16.
    sum = (sum & 0xffff_ffff) + (sum >> 32);
    sum = (sum & 0xffff_ffff) + (sum >> 32);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    sum as u32
}

pub(crate) fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The IPv4 header checksum computed from scratch over `hdr` with its checksum field (bytes
/// 10-11) taken as zero (RFC 791 §3.1).
pub fn ipv4_header_checksum(hdr: &[u8]) -> u16 {
    if hdr.len() < 12 {
        return !fold(ones_sum(hdr, 0));
    }
    let acc = ones_sum(&hdr[..10], 0);
    !fold(ones_sum(&hdr[12..], acc))
}

/// RFC 1624 eqn. 3: the checksum after one 16-bit header word changes from `old` to `new`,
/// `HC' = ~(~HC + ~m + m')`. Unlike eqn. 2 it never produces a -0 that recomputation would not.
pub fn checksum_update(hc: u16, old: u16, new: u16) -> u16 {
    !fold((!hc) as u32 + (!old) as u32 + new as u32)
}

/// IP version of a parsed packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum IpVersion {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

/// The first checks of an IP header: `b` holds its `need` fixed bytes (`what`), and its
/// version nibble is `version`.
fn check_fixed_header(
    b: &[u8],
    what: &'static str,
    need: usize,
    version: u8,
) -> Result<(), PacketError> {
    if b.len() < need {
        return Err(PacketError::Truncated {
            what,
            have: b.len(),
            need,
        });
    }
    if b[0] >> 4 != version {
        return Err(PacketError::Version(b[0] >> 4));
    }
    Ok(())
}

/// Read-only and in-place view of an IPv4 header (RFC 791 §3.1).
#[derive(Debug)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wrap `buf` after checking that the header and the total length fit and the header
    /// checksum verifies; bytes after `total_len` (link-layer padding) are ignored.
    pub fn new_checked(buf: T) -> Result<Self, PacketError> {
        let b = buf.as_ref();
        check_fixed_header(b, "IPv4 header", 20, 4)?;
        let ihl = (b[0] & 0x0f) as usize * 4;
        if ihl < 20 {
            return Err(PacketError::BadLength("IPv4 IHL"));
        }
        if b.len() < ihl {
            return Err(PacketError::Truncated {
                what: "IPv4 options",
                have: b.len(),
                need: ihl,
            });
        }
        let total = u16::from_be_bytes([b[2], b[3]]) as usize;
        if total < ihl {
            return Err(PacketError::BadLength("IPv4 total"));
        }
        if total > b.len() {
            return Err(PacketError::Truncated {
                what: "IPv4 packet",
                have: b.len(),
                need: total,
            });
        }
        // A header whose words sum to 0xffff (all ones) verifies.
        if fold(ones_sum(&b[..ihl], 0)) != 0xffff {
            return Err(PacketError::BadChecksum);
        }
        Ok(Ipv4Packet { buf })
    }
    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    /// Header length in bytes (IHL·4).
    pub fn header_len(&self) -> usize {
        (self.b()[0] & 0x0f) as usize * 4
    }
    /// Total length in bytes (header + payload).
    pub fn total_len(&self) -> usize {
        u16::from_be_bytes([self.b()[2], self.b()[3]]) as usize
    }
    /// The ECN field (low two bits of the former TOS byte).
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.b()[1])
    }
    /// The DSCP (upper six bits of the former TOS byte).
    pub fn dscp(&self) -> u8 {
        self.b()[1] >> 2
    }
    /// Protocol of the payload.
    pub fn protocol(&self) -> u8 {
        self.b()[9]
    }
    /// Header checksum as carried.
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.b()[10], self.b()[11]])
    }
    /// Source address.
    pub fn src(&self) -> [u8; 4] {
        [self.b()[12], self.b()[13], self.b()[14], self.b()[15]]
    }
    /// Destination address.
    pub fn dst(&self) -> [u8; 4] {
        [self.b()[16], self.b()[17], self.b()[18], self.b()[19]]
    }
    /// Part of a fragmented datagram (MF set or a non-zero offset): no transport header to
    /// classify by, as Linux's flow dissector treats fragments.
    pub fn is_fragment(&self) -> bool {
        let ff = u16::from_be_bytes([self.b()[6], self.b()[7]]);
        ff & 0x3fff != 0
    }
    /// The payload (after the header, up to the total length).
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..self.total_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Rewrite the ECN field and update the header checksum incrementally (RFC 1624 eqn. 3 on
    /// the 16-bit word holding version/IHL and TOS).
    pub fn set_ecn(&mut self, ecn: Ecn) {
        let b = self.buf.as_mut();
        let old = u16::from_be_bytes([b[0], b[1]]);
        b[1] = (b[1] & !0b11) | ecn.bits();
        let new = u16::from_be_bytes([b[0], b[1]]);
        let hc = u16::from_be_bytes([b[10], b[11]]);
        let hc = checksum_update(hc, old, new);
        b[10..12].copy_from_slice(&hc.to_be_bytes());
    }
}

/// Read-only and in-place view of an IPv6 fixed header (RFC 8200 §3).
#[derive(Debug)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wrap `buf` after checking the fixed header and the payload length fit; bytes after
    /// 40 + payload length are ignored. A zero payload length (jumbogram) is refused.
    pub fn new_checked(buf: T) -> Result<Self, PacketError> {
        let b = buf.as_ref();
        check_fixed_header(b, "IPv6 header", 40, 6)?;
        let plen = u16::from_be_bytes([b[4], b[5]]) as usize;
        if plen == 0 && b[6] == proto::HOPOPT {
            // RFC 2675 jumbograms cannot come through a TUN/veth MTU.
            return Err(PacketError::BadLength("IPv6 payload (jumbogram)"));
        }
        if 40 + plen > b.len() {
            return Err(PacketError::Truncated {
                what: "IPv6 packet",
                have: b.len(),
                need: 40 + plen,
            });
        }
        Ok(Ipv6Packet { buf })
    }
    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    /// The 8-bit traffic class (RFC 8200 §7).
    pub fn traffic_class(&self) -> u8 {
        ((self.b()[0] & 0x0f) << 4) | (self.b()[1] >> 4)
    }
    /// The ECN field (low two bits of the traffic class).
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.traffic_class())
    }
    /// Total length in bytes: 40 + payload length.
    pub fn total_len(&self) -> usize {
        40 + u16::from_be_bytes([self.b()[4], self.b()[5]]) as usize
    }
    /// The Next Header field of the fixed header.
    pub fn next_header(&self) -> u8 {
        self.b()[6]
    }
    /// Source address.
    pub fn src(&self) -> [u8; 16] {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.b()[8..24]);
        a
    }
    /// Destination address.
    pub fn dst(&self) -> [u8; 16] {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.b()[24..40]);
        a
    }
    /// Everything after the fixed header, up to the payload length.
    pub fn payload(&self) -> &[u8] {
        &self.b()[40..self.total_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    /// Rewrite the ECN bits of the traffic class (IPv6 has no header checksum).
    pub fn set_ecn(&mut self, ecn: Ecn) {
        let b = self.buf.as_mut();
        // Traffic class bits 0-1 (ECN) sit in bits 4-5 of byte 1.
        b[1] = (b[1] & !0x30) | (ecn.bits() << 4);
    }
}

/// A flow's identity: protocol, addresses and ports (0 where the protocol has none or the
/// packet is a fragment). IPv4 addresses are stored v4-mapped (RFC 4291 §2.5.5.2).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// IP version.
    pub v6: bool,
    /// IP protocol number of the transport (after IPv6 extension headers).
    pub proto: u8,
    /// Source address (v4-mapped for IPv4).
    pub src: [u8; 16],
    /// Destination address (v4-mapped for IPv4).
    pub dst: [u8; 16],
    /// Source port (TCP/UDP), else 0.
    pub sport: u16,
    /// Destination port (TCP/UDP), else 0.
    pub dport: u16,
}

fn v4_mapped(a: [u8; 4]) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[10] = 0xff;
    m[11] = 0xff;
    m[12..].copy_from_slice(&a);
    m
}

impl FlowKey {
    /// A 32-bit hash of the 5-tuple under `perturbation` (FNV-1a then a 64-bit finaliser), the
    /// role `skb_get_hash` plays for Linux fq_codel.
    pub fn hash32(&self, perturbation: u64) -> u32 {
        let mut h = FnvHasher(0xcbf2_9ce4_8422_2325 ^ perturbation);
        self.hash(&mut h);
        let mut z = h.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 32) as u32
    }
    /// "tcp", "udp", "icmp", "icmp6", or "ip<N>" for other protocols.
    pub fn transport_name(&self) -> String {
        match (self.proto, self.v6) {
            (proto::TCP, _) => "tcp".into(),
            (proto::UDP, _) => "udp".into(),
            (proto::ICMP, false) => "icmp".into(),
            (proto::ICMPV6, true) => "icmp6".into(),
            (p, _) => format!("ip{p}"),
        }
    }
}

/// FNV-1a as a `Hasher` (deterministic, unlike the std `RandomState`).
struct FnvHasher(u64);
impl Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= *b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

impl fmt::Display for FlowKey {
    /// `udp 10.0.0.1:40000>10.0.0.2:5201`, `tcp [fd00::1]:80>[fd00::2]:5000`, `icmp 10.0.0.1>10.0.0.2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let addr = |a: &[u8; 16]| -> String {
            if self.v6 {
                format!("[{}]", std::net::Ipv6Addr::from(*a))
            } else {
                std::net::Ipv4Addr::new(a[12], a[13], a[14], a[15]).to_string()
            }
        };
        let (s, d) = (addr(&self.src), addr(&self.dst));
        let has_ports =
            matches!(self.proto, proto::TCP | proto::UDP) && (self.sport != 0 || self.dport != 0);
        if has_ports {
            write!(
                f,
                "{} {}:{}>{}:{}",
                self.transport_name(),
                s,
                self.sport,
                d,
                self.dport
            )
        } else {
            write!(f, "{} {}>{}", self.transport_name(), s, d)
        }
    }
}

/// The transport a packet was classified as.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// TCP with its header length.
    Tcp {
        /// Data offset · 4.
        header_len: usize,
    },
    /// UDP.
    Udp,
    /// ICMP or ICMPv6.
    Icmp,
    /// Anything else, or a fragment: forwarded unclassified (keyed by addresses and protocol).
    Other,
}

/// What the path needs to know about one packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// IPv4 or IPv6.
    pub version: IpVersion,
    /// IP length in bytes (bytes after it are link-layer padding and not forwarded).
    pub len: usize,
    /// ECN codepoint on arrival.
    pub ecn: Ecn,
    /// 5-tuple (ports 0 where there are none).
    pub key: FlowKey,
    /// The classified transport.
    pub transport: Transport,
    /// Transport payload bytes (TCP/UDP data; the whole IP payload otherwise).
    pub payload_len: usize,
    /// Offset of the transport header (after IPv4 options / IPv6 extension headers).
    pub l4_offset: usize,
    /// The fragment this packet is, if it is one (RFC 791 §3.2, RFC 8200 §4.5).
    pub frag: Option<Fragment>,
}

/// What ties an IP fragment to its datagram: the reassembly key is (src, dst, protocol,
/// identification) (RFC 791 §3.2; RFC 8200 §4.5 without the protocol, which the key's
/// `proto` then holds as the next header after the fragment header).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Fragment {
    /// The Identification field (16 bits in IPv4, 32 in IPv6).
    pub id: u32,
    /// Fragment offset 0: this one carries the transport header (and so the ports).
    pub first: bool,
    /// The More Fragments flag is clear: the datagram's last fragment.
    pub last: bool,
}

fn need(what: &'static str, have: usize, need: usize) -> Result<(), PacketError> {
    if have < need {
        Err(PacketError::Truncated { what, have, need })
    } else {
        Ok(())
    }
}

/// Classify the transport header at the start of `l4` (the IP payload after extension headers).
fn transport(
    proto_num: u8,
    l4: &[u8],
    frag: bool,
) -> Result<(Transport, u16, u16, usize), PacketError> {
    if frag {
        return Ok((Transport::Other, 0, 0, l4.len()));
    }
    match proto_num {
        proto::TCP => {
            need("TCP header", l4.len(), 20)?;
            let hl = (l4[12] >> 4) as usize * 4;
            if hl < 20 {
                return Err(PacketError::BadLength("TCP data offset"));
            }
            need("TCP options", l4.len(), hl)?;
            let sp = u16::from_be_bytes([l4[0], l4[1]]);
            let dp = u16::from_be_bytes([l4[2], l4[3]]);
            Ok((Transport::Tcp { header_len: hl }, sp, dp, l4.len() - hl))
        }
        proto::UDP => {
            need("UDP header", l4.len(), 8)?;
            let sp = u16::from_be_bytes([l4[0], l4[1]]);
            let dp = u16::from_be_bytes([l4[2], l4[3]]);
            Ok((Transport::Udp, sp, dp, l4.len() - 8))
        }
        proto::ICMP | proto::ICMPV6 => {
            need("ICMP header", l4.len(), 4)?;
            Ok((Transport::Icmp, 0, 0, l4.len() - 4))
        }
        _ => Ok((Transport::Other, 0, 0, l4.len())),
    }
}

/// The ports at the start of a first fragment's payload (TCP and UDP both begin with them).
fn ports(l4: &[u8]) -> Option<(u16, u16)> {
    (l4.len() >= 4).then(|| {
        (
            u16::from_be_bytes([l4[0], l4[1]]),
            u16::from_be_bytes([l4[2], l4[3]]),
        )
    })
}

/// Most IPv6 extension headers walked before the rest is forwarded unclassified.
const MAX_EXT_HEADERS: usize = 8;

/// Parse an IP packet (no link-layer header). Never panics; truncated or inconsistent headers
/// are an `Err`. Unknown transports, ESP and fragments are `Transport::Other`.
pub fn parse(buf: &[u8]) -> Result<Parsed, PacketError> {
    let Some(&first) = buf.first() else {
        return Err(PacketError::Empty);
    };
    match first >> 4 {
        4 => {
            let p = Ipv4Packet::new_checked(buf)?;
            let proto_num = p.protocol();
            let frag = p.is_fragment().then(|| {
                let ff = u16::from_be_bytes([buf[6], buf[7]]);
                Fragment {
                    id: u16::from_be_bytes([buf[4], buf[5]]) as u32,
                    first: ff & 0x1fff == 0,
                    last: ff & 0x2000 == 0,
                }
            });
            let (t, mut sport, mut dport, payload_len) =
                transport(proto_num, p.payload(), frag.is_some())?;
            let l4_ports = matches!(proto_num, proto::TCP | proto::UDP);
            if let Some((sp, dp)) = frag
                .filter(|f| f.first && l4_ports)
                .and_then(|_| ports(p.payload()))
            {
                (sport, dport) = (sp, dp);
            }
            Ok(Parsed {
                l4_offset: p.header_len(),
                version: IpVersion::V4,
                len: p.total_len(),
                ecn: p.ecn(),
                key: FlowKey {
                    v6: false,
                    proto: proto_num,
                    src: v4_mapped(p.src()),
                    dst: v4_mapped(p.dst()),
                    sport,
                    dport,
                },
                transport: t,
                payload_len,
                frag,
            })
        }
        6 => {
            let p = Ipv6Packet::new_checked(buf)?;
            let mut nh = p.next_header();
            let mut rest = p.payload();
            let mut frag = false;
            let mut fragment = None;
            let mut walked = 0;
            // RFC 8200 §4.1 extension header chain; stop at the first upper-layer header.
            loop {
                if walked == MAX_EXT_HEADERS {
                    frag = true; // too deep to trust: forward unclassified
                    break;
                }
                let len = match nh {
                    proto::HOPOPT | proto::ROUTING | proto::DSTOPTS => {
                        need("IPv6 extension header", rest.len(), 2)?;
                        (rest[1] as usize + 1) * 8
                    }
                    proto::AH => {
                        need("IPv6 AH header", rest.len(), 2)?;
                        (rest[1] as usize + 2) * 4
                    }
                    proto::FRAGMENT => {
                        need("IPv6 fragment header", rest.len(), 8)?;
                        let off_m = u16::from_be_bytes([rest[2], rest[3]]);
                        // Offset != 0 or More Fragments: no complete transport header.
                        frag |= off_m & 0xfff9 != 0;
                        if off_m & 0xfff9 != 0 {
                            fragment = Some(Fragment {
                                id: u32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]),
                                first: off_m & 0xfff8 == 0,
                                last: off_m & 1 == 0,
                            });
                        }
                        8
                    }
                    _ => break,
                };
                need("IPv6 extension header", rest.len(), len)?;
                nh = rest[0];
                rest = &rest[len..];
                walked += 1;
            }
            let (t, mut sport, mut dport, payload_len) = transport(nh, rest, frag)?;
            let l4_ports = matches!(nh, proto::TCP | proto::UDP);
            if let Some((sp, dp)) = fragment
                .filter(|f| f.first && l4_ports)
                .and_then(|_| ports(rest))
            {
                (sport, dport) = (sp, dp);
            }
            let l4_offset = p.total_len() - rest.len();
            Ok(Parsed {
                l4_offset,
                version: IpVersion::V6,
                len: p.total_len(),
                ecn: p.ecn(),
                key: FlowKey {
                    v6: true,
                    proto: nh,
                    src: p.src(),
                    dst: p.dst(),
                    sport,
                    dport,
                },
                transport: t,
                payload_len,
                frag: fragment,
            })
        }
        v => Err(PacketError::Version(v)),
    }
}

/// Rewrite the ECN field of a packet that [`parse`] accepted (IPv4: with the RFC 1624 checksum
/// update; IPv6: the traffic class). Errors exactly when `parse` would.
pub fn set_ecn(buf: &mut [u8], ecn: Ecn) -> Result<(), PacketError> {
    match buf.first().map(|b| b >> 4) {
        None => Err(PacketError::Empty),
        Some(4) => {
            Ipv4Packet::new_checked(buf)?.set_ecn(ecn);
            Ok(())
        }
        Some(6) => {
            Ipv6Packet::new_checked(buf)?.set_ecn(ecn);
            Ok(())
        }
        Some(v) => Err(PacketError::Version(v)),
    }
}

/// The TCP checksum of `tcp` (header with its checksum field taken as zero, then payload)
/// under the IPv4 or IPv6 pseudo-header (RFC 9293 §3.1, RFC 8200 §8.1).
pub fn tcp_checksum(v6: bool, src: &[u8], dst: &[u8], tcp: &[u8]) -> u16 {
    let mut acc = ones_sum(src, 0);
    acc = ones_sum(dst, acc);
    if v6 {
        acc += (tcp.len() as u32 >> 16) + (tcp.len() as u32 & 0xffff);
    } else {
        acc += tcp.len() as u32;
    }
    acc += proto::TCP as u32;
    if tcp.len() >= 18 {
        acc = ones_sum(&tcp[..16], acc);
        acc = ones_sum(&tcp[18..], acc);
    } else {
        acc = ones_sum(tcp, acc);
    }
    !fold(acc)
}

/// Split a TCP segment larger than `mss` payload bytes (a TSO/GSO super-packet read with
/// IFF_VNET_HDR) into MSS-sized packets as Linux `tcp_gso_segment` does before the qdisc:
/// every segment carries a copy of the IP and TCP headers (options included) with its own
/// length, sequence number and checksums; the IPv4 ID counts up per segment; CWR stays on the
/// first segment only, FIN and PSH on the last only. A packet that fits is copied unchanged.
/// Appends the segments to `out` and returns how many; errors when `pkt` is not a valid
/// unfragmented TCP packet or `mss` is 0.
pub fn gso_segment_tcp(
    pkt: &[u8],
    mss: usize,
    out: &mut Vec<Vec<u8>>,
) -> Result<usize, PacketError> {
    let mut scratch = Vec::new();
    gso_segment_tcp_each(pkt, mss, &mut scratch, |s| out.push(s.to_vec()))
}

/// [`gso_segment_tcp`] without allocating: each segment is built in `scratch` (reused) and
/// handed to `each`; a packet that fits is handed over as it is. Returns how many segments.
pub fn gso_segment_tcp_each(
    pkt: &[u8],
    mss: usize,
    scratch: &mut Vec<u8>,
    mut each: impl FnMut(&mut [u8]),
) -> Result<usize, PacketError> {
    let p = parse(pkt)?;
    let Transport::Tcp { header_len } = p.transport else {
        return Err(PacketError::BadLength("GSO: not a TCP segment"));
    };
    if mss == 0 {
        return Err(PacketError::BadLength("GSO: MSS 0"));
    }
    let pkt = &pkt[..p.len];
    if p.payload_len <= mss {
        scratch.clear();
        scratch.extend_from_slice(pkt);
        each(scratch);
        return Ok(1);
    }
    let hdr_len = p.l4_offset + header_len;
    let (hdr, payload) = pkt.split_at(hdr_len);
    let seq0 = u32::from_be_bytes([
        hdr[p.l4_offset + 4],
        hdr[p.l4_offset + 5],
        hdr[p.l4_offset + 6],
        hdr[p.l4_offset + 7],
    ]);
    let flags0 = hdr[p.l4_offset + 13];
    let v6 = p.version == IpVersion::V6;
    let n = payload.len().div_ceil(mss);
    for (i, chunk) in payload.chunks(mss).enumerate() {
        let s = &mut *scratch;
        s.clear();
        s.extend_from_slice(hdr);
        s.extend_from_slice(chunk);
        let total = s.len();
        if v6 {
            s[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
        } else {
            s[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            let id = u16::from_be_bytes([s[4], s[5]]).wrapping_add(i as u16);
            s[4..6].copy_from_slice(&id.to_be_bytes());
            s[10] = 0;
            s[11] = 0;
            let c = ipv4_header_checksum(&s[..p.l4_offset]);
            s[10..12].copy_from_slice(&c.to_be_bytes());
        }
        let t = p.l4_offset;
        let seq = seq0.wrapping_add((i * mss) as u32);
        s[t + 4..t + 8].copy_from_slice(&seq.to_be_bytes());
        let mut flags = flags0;
        if i > 0 {
            flags &= !0x80; // CWR: first segment only
        }
        if i + 1 < n {
            flags &= !(0x01 | 0x08); // FIN, PSH: last segment only
        }
        s[t + 13] = flags;
        let (src, dst) = if v6 {
            (8..24, 24..40)
        } else {
            (12..16, 16..20)
        };
        let c = tcp_checksum(v6, &s[src], &s[dst], &s[t..]);
        s[t + 16..t + 18].copy_from_slice(&c.to_be_bytes());
        each(s);
    }
    Ok(n)
}

/// An owned packet on its way through the path; derefs to its IP bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PacketBuf {
    bytes: Vec<u8>,
}

impl PacketBuf {
    /// Copy `data` into a new buffer.
    pub fn from_slice(data: &[u8]) -> Self {
        PacketBuf {
            bytes: data.to_vec(),
        }
    }
    /// Reuse `vec`'s allocation for a copy of `data`.
    pub fn copy_into(mut vec: Vec<u8>, data: &[u8]) -> Self {
        vec.clear();
        vec.extend_from_slice(data);
        PacketBuf { bytes: vec }
    }
    /// The allocation, for reuse.
    pub fn into_vec(self) -> Vec<u8> {
        self.bytes
    }
}

impl Deref for PacketBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl DerefMut for PacketBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

impl AsRef<[u8]> for PacketBuf {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

/// Builders of well-formed packets for tests and benchmarks.
pub mod build {
    use super::*;

    /// An IPv4 packet of `total_len` bytes (≥ 20 + the transport header) carrying `proto` from
    /// `src:sport` to `dst:dport` with `tos`, a valid header checksum and zero payload.
    pub fn ipv4(
        src: [u8; 4],
        dst: [u8; 4],
        proto_num: u8,
        sport: u16,
        dport: u16,
        tos: u8,
        total_len: u16,
    ) -> Vec<u8> {
        let mut b = vec![0u8; total_len as usize];
        b[0] = 0x45;
        b[1] = tos;
        b[2..4].copy_from_slice(&total_len.to_be_bytes());
        b[6] = 0x40; // DF
        b[8] = 64;
        b[9] = proto_num;
        b[12..16].copy_from_slice(&src);
        b[16..20].copy_from_slice(&dst);
        let c = ipv4_header_checksum(&b[..20]);
        b[10..12].copy_from_slice(&c.to_be_bytes());
        write_l4(&mut b[20..], proto_num, sport, dport);
        b
    }

    /// An IPv6 packet of `total_len` bytes (≥ 40 + the transport header), like [`ipv4`].
    pub fn ipv6(
        src: [u8; 16],
        dst: [u8; 16],
        proto_num: u8,
        sport: u16,
        dport: u16,
        tclass: u8,
        total_len: u16,
    ) -> Vec<u8> {
        let mut b = vec![0u8; total_len as usize];
        b[0] = 0x60 | (tclass >> 4);
        b[1] = tclass << 4;
        b[4..6].copy_from_slice(&(total_len - 40).to_be_bytes());
        b[6] = proto_num;
        b[7] = 64;
        b[8..24].copy_from_slice(&src);
        b[24..40].copy_from_slice(&dst);
        write_l4(&mut b[40..], proto_num, sport, dport);
        b
    }

    fn write_l4(l4: &mut [u8], proto_num: u8, sport: u16, dport: u16) {
        match proto_num {
            proto::TCP if l4.len() >= 20 => {
                l4[0..2].copy_from_slice(&sport.to_be_bytes());
                l4[2..4].copy_from_slice(&dport.to_be_bytes());
                l4[12] = 5 << 4;
            }
            proto::UDP if l4.len() >= 8 => {
                l4[0..2].copy_from_slice(&sport.to_be_bytes());
                l4[2..4].copy_from_slice(&dport.to_be_bytes());
                let n = l4.len() as u16;
                l4[4..6].copy_from_slice(&n.to_be_bytes());
            }
            proto::ICMP | proto::ICMPV6 if l4.len() >= 4 => {
                l4[0] = 8; // echo request
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::build::{ipv4, ipv6};
    use super::*;
    use proptest::prelude::*;

    fn verifies(b: &[u8]) -> bool {
        let ihl = (b[0] & 0x0f) as usize * 4;
        fold(ones_sum(&b[..ihl], 0)) == 0xffff
    }

    #[test]
    fn rfc1071_example_sum() {
        // RFC 1071 §3 example: words 0001 f203 f4f5 f6f7 sum to ddf2 (one's complement).
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(ones_sum(&d, 0)), 0xddf2);
    }

    #[test]
    fn every_codepoint_transition_keeps_the_ipv4_checksum_valid() {
        // 16 (from, to) pairs × several DSCPs × option lengths: the incremental update equals a
        // full recomputation.
        for from in Ecn::ALL {
            for to in Ecn::ALL {
                for dscp in [0u8, 0x0a, 0x2e, 0x3f] {
                    for ihl in [5u8, 6, 15] {
                        let mut b = ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto::UDP, 1, 2, 0, 100);
                        // Move the UDP header after the options (it stays inside 100 bytes).
                        b[0] = 0x40 | ihl;
                        b[1] = (dscp << 2) | from.bits();
                        b[10] = 0;
                        b[11] = 0;
                        let c = ipv4_header_checksum(&b[..ihl as usize * 4]);
                        b[10..12].copy_from_slice(&c.to_be_bytes());
                        set_ecn(&mut b, to).unwrap();
                        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
                        assert_eq!(p.ecn(), to);
                        assert_eq!(p.dscp(), dscp, "DSCP preserved");
                        assert_eq!(
                            p.checksum(),
                            ipv4_header_checksum(&b[..ihl as usize * 4]),
                            "{from:?}->{to:?} dscp {dscp} ihl {ihl}"
                        );
                        assert!(verifies(&b));
                    }
                }
            }
        }
    }

    #[test]
    fn ipv6_traffic_class_ecn_bits() {
        // Traffic class 0xb9 = DSCP 46 (EF) | ECT(1).
        let mut b = ipv6([1; 16], [2; 16], proto::TCP, 5000, 80, 0xb9, 100);
        let p = parse(&b).unwrap();
        assert_eq!(p.ecn, Ecn::Ect1);
        assert_eq!(
            Ipv6Packet::new_checked(&b[..]).unwrap().traffic_class(),
            0xb9
        );
        set_ecn(&mut b, Ecn::Ce).unwrap();
        let v = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(v.traffic_class(), 0xbb);
        assert_eq!(b[0], 0x6b, "version and upper traffic class untouched");
        assert_eq!(b[1] & 0x0f, 0, "flow label untouched");
    }

    #[test]
    fn five_tuples_and_payload_lengths() {
        let b = ipv4(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            proto::TCP,
            40000,
            5201,
            0x01,
            1500,
        );
        let p = parse(&b).unwrap();
        assert_eq!((p.len, p.ecn, p.payload_len), (1500, Ecn::Ect1, 1460));
        assert_eq!(p.transport, Transport::Tcp { header_len: 20 });
        assert_eq!(p.key.to_string(), "tcp 10.0.0.1:40000>10.0.0.2:5201");
        let b = ipv4(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            proto::UDP,
            40000,
            5201,
            0x02,
            1000,
        );
        let p = parse(&b).unwrap();
        assert_eq!((p.payload_len, p.ecn), (1000 - 28, Ecn::Ect0));
        assert_eq!(p.key.to_string(), "udp 10.0.0.1:40000>10.0.0.2:5201");
        let b = ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto::ICMP, 0, 0, 0, 84);
        assert_eq!(parse(&b).unwrap().key.to_string(), "icmp 10.0.0.1>10.0.0.2");
        // GRE (47): forwarded unclassified, keyed by addresses.
        let b = ipv4([10, 0, 0, 1], [10, 0, 0, 2], 47, 0, 0, 0, 60);
        let p = parse(&b).unwrap();
        assert_eq!(p.transport, Transport::Other);
        assert_eq!(p.key.to_string(), "ip47 10.0.0.1>10.0.0.2");
        let mut a = [0u8; 16];
        a[0] = 0xfd;
        a[15] = 1;
        let mut c = a;
        c[15] = 2;
        let b = ipv6(a, c, proto::UDP, 1234, 443, 0, 1280);
        let p = parse(&b).unwrap();
        assert_eq!(p.key.to_string(), "udp [fd00::1]:1234>[fd00::2]:443");
        assert_eq!(p.payload_len, 1280 - 48);
        // Link-layer padding after the IP length is not part of the packet.
        let mut b = ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto::UDP, 1, 2, 0, 40);
        b.extend_from_slice(&[0u8; 20]);
        assert_eq!(parse(&b).unwrap().len, 40);
    }

    #[test]
    fn ipv6_extension_headers_and_fragments() {
        // Hop-by-hop (8 bytes) then UDP.
        let mut b = ipv6([1; 16], [2; 16], proto::HOPOPT, 0, 0, 0, 40 + 8 + 8 + 10);
        b[40] = proto::UDP;
        b[41] = 0;
        b[48..50].copy_from_slice(&7u16.to_be_bytes());
        b[50..52].copy_from_slice(&9u16.to_be_bytes());
        let p = parse(&b).unwrap();
        assert_eq!((p.key.proto, p.key.sport, p.key.dport), (proto::UDP, 7, 9));
        assert_eq!(p.payload_len, 10);
        // A non-first fragment: no ports.
        let mut b = ipv6([1; 16], [2; 16], proto::FRAGMENT, 0, 0, 0, 40 + 8 + 100);
        b[48] = proto::UDP;
        b[42..44].copy_from_slice(&(185u16 << 3).to_be_bytes());
        let p = parse(&b).unwrap();
        assert_eq!((p.transport, p.key.sport), (Transport::Other, 0));
        // IPv4 fragments are unclassified too.
        let mut b = ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto::UDP, 1, 2, 0, 60);
        b[6] = 0x20; // MF
        b[10] = 0;
        b[11] = 0;
        let c = ipv4_header_checksum(&b[..20]);
        b[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(parse(&b).unwrap().transport, Transport::Other);
    }

    #[test]
    fn malformed_headers_are_errors() {
        assert_eq!(parse(&[]), Err(PacketError::Empty));
        assert_eq!(parse(&[0x55; 40]), Err(PacketError::Version(5)));
        let good = ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto::TCP, 1, 2, 0, 60);
        assert!(matches!(
            parse(&good[..19]),
            Err(PacketError::Truncated { .. })
        ));
        assert!(matches!(
            parse(&good[..59]),
            Err(PacketError::Truncated { .. })
        ));
        let mut bad = good.clone();
        bad[11] ^= 1;
        assert_eq!(parse(&bad), Err(PacketError::BadChecksum));
        let mut bad = good.clone();
        bad[0] = 0x44;
        assert_eq!(parse(&bad), Err(PacketError::BadLength("IPv4 IHL")));
        // TCP data offset 4 (< 5 words).
        let mut bad = good.clone();
        bad[32] = 4 << 4;
        assert_eq!(parse(&bad), Err(PacketError::BadLength("TCP data offset")));
        // A TCP header cut short inside a valid IP packet.
        let short = ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto::TCP, 1, 2, 0, 30);
        assert!(matches!(
            parse(&short),
            Err(PacketError::Truncated {
                what: "TCP header",
                ..
            })
        ));
        let v6 = ipv6([1; 16], [2; 16], proto::UDP, 1, 2, 0, 60);
        assert!(matches!(
            parse(&v6[..50]),
            Err(PacketError::Truncated { .. })
        ));
        let mut jumbo = v6.clone();
        jumbo[4] = 0;
        jumbo[5] = 0;
        jumbo[6] = proto::HOPOPT;
        assert!(matches!(parse(&jumbo), Err(PacketError::BadLength(_))));
        assert!(set_ecn(&mut [0x45, 0, 0], Ecn::Ce).is_err());
    }

    #[test]
    fn flow_hash_depends_on_every_field_and_the_perturbation() {
        let p = parse(&ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto::UDP, 1, 2, 0, 60)).unwrap();
        let h = p.key.hash32(0);
        assert_eq!(h, p.key.hash32(0), "deterministic");
        assert_ne!(h, p.key.hash32(1));
        let mut k = p.key;
        k.sport = 3;
        assert_ne!(h, k.hash32(0));
        let mut k = p.key;
        k.proto = proto::TCP;
        assert_ne!(h, k.hash32(0));
    }

    /// A TCP super-packet of `payload` bytes (pattern) with flags, valid checksums.
    fn tso(v6: bool, payload: usize, flags: u8) -> Vec<u8> {
        let hl = if v6 { 40 } else { 20 };
        let total = (hl + 32 + payload) as u16;
        let mut b = if v6 {
            ipv6([1; 16], [2; 16], proto::TCP, 40000, 5201, 0x01, total)
        } else {
            ipv4(
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                proto::TCP,
                40000,
                5201,
                0x01,
                total,
            )
        };
        let t = hl;
        b[t + 4..t + 8].copy_from_slice(&0xffff_f000u32.to_be_bytes()); // wraps
        b[t + 12] = 8 << 4; // 32-byte header: 12 bytes of options (NOP NOP TS)
        b[t + 13] = flags;
        b[t + 20..t + 32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9]);
        for (k, x) in b[t + 32..].iter_mut().enumerate() {
            *x = (k % 251) as u8;
        }
        if !v6 {
            b[4..6].copy_from_slice(&1000u16.to_be_bytes());
            b[10] = 0;
            b[11] = 0;
            let c = ipv4_header_checksum(&b[..20]);
            b[10..12].copy_from_slice(&c.to_be_bytes());
        }
        let (src, dst) = if v6 {
            (8..24, 24..40)
        } else {
            (12..16, 16..20)
        };
        let c = tcp_checksum(v6, &b[src], &b[dst], &b[t..]);
        b[t + 16..t + 18].copy_from_slice(&c.to_be_bytes());
        b
    }

    fn tcp_ok(v6: bool, s: &[u8]) -> bool {
        let t = if v6 { 40 } else { 20 };
        let (src, dst) = if v6 {
            (8..24, 24..40)
        } else {
            (12..16, 16..20)
        };
        // Independently of `tcp_checksum`: the pseudo-header plus the whole segment, checksum
        // field included, sums to 0xffff (RFC 1071 §1).
        let len = (s.len() - t) as u32;
        let mut acc = ones_sum(&s[src], 0);
        acc = ones_sum(&s[dst], acc);
        acc += (len >> 16) + (len & 0xffff) + proto::TCP as u32;
        fold(ones_sum(&s[t..], acc)) == 0xffff
    }

    #[test]
    fn gso_super_packets_split_like_tcp_gso_segment() {
        for v6 in [false, true] {
            let t = if v6 { 40 } else { 20 };
            // CWR|PSH|FIN|ACK over 3.5 MSS of payload.
            let b = tso(v6, 1448 * 3 + 700, 0x80 | 0x10 | 0x08 | 0x01);
            assert!(tcp_ok(v6, &b), "input checksum");
            let mut out = Vec::new();
            assert_eq!(gso_segment_tcp(&b, 1448, &mut out), Ok(4));
            let mut payload = Vec::new();
            for (i, s) in out.iter().enumerate() {
                let p = parse(s).expect("valid IP header (and IPv4 checksum)");
                assert_eq!(p.payload_len, if i < 3 { 1448 } else { 700 });
                assert_eq!(p.ecn, Ecn::Ect1);
                assert!(tcp_ok(v6, s), "segment {i} TCP checksum");
                let seq = u32::from_be_bytes([s[t + 4], s[t + 5], s[t + 6], s[t + 7]]);
                assert_eq!(seq, 0xffff_f000u32.wrapping_add(1448 * i as u32));
                let f = s[t + 13];
                assert_eq!(f & 0x10, 0x10, "ACK on all");
                assert_eq!(f & 0x80 != 0, i == 0, "CWR on the first only");
                assert_eq!(f & 0x09 == 0x09, i == 3, "FIN+PSH on the last only");
                assert_eq!(&s[t + 20..t + 32], &b[t + 20..t + 32], "options copied");
                if !v6 {
                    assert_eq!(u16::from_be_bytes([s[4], s[5]]), 1000 + i as u16, "IP ID");
                }
                payload.extend_from_slice(&s[t + 32..]);
            }
            assert_eq!(&payload[..], &b[t + 32..]);
            // A packet that fits is copied unchanged; non-TCP and MSS 0 are errors.
            let mut one = Vec::new();
            assert_eq!(gso_segment_tcp(&b, 65535, &mut one), Ok(1));
            assert_eq!(one[0], b);
            assert!(gso_segment_tcp(&b, 0, &mut one).is_err());
        }
        let u = ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto::UDP, 1, 2, 0, 3000);
        assert!(gso_segment_tcp(&u, 1000, &mut Vec::new()).is_err());
    }

    proptest! {
        /// The 32-bit-word sum gives RFC 1071's 16-bit checksum for any bytes and start value.
        #[test]
        fn ones_sum_equals_the_16_bit_definition(
            data in proptest::collection::vec(any::<u8>(), 0..3000),
            acc in 0u32..0x1_0000,
        ) {
            let mut naive = acc as u64;
            for c in data.chunks(2) {
                naive += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u64;
            }
            while naive > 0xffff {
                naive = (naive & 0xffff) + (naive >> 16);
            }
            prop_assert_eq!(fold(ones_sum(&data, acc)) as u64, naive);
        }

        #[test]
        fn gso_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300), mss in 0usize..200) {
            let _ = gso_segment_tcp(&data, mss, &mut Vec::new());
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let r = parse(&data);
            let mut d = data.clone();
            // set_ecn accepts exactly what parse's IP layer accepts, and then only touches ECN.
            if let Ok(p) = r {
                prop_assert!(p.len <= data.len());
                prop_assert!(set_ecn(&mut d, Ecn::Ce).is_ok());
                prop_assert_eq!(parse(&d).map(|q| q.ecn), Ok(Ecn::Ce));
            } else {
                let _ = set_ecn(&mut d, Ecn::Ce);
            }
        }

        #[test]
        fn ip_shaped_bytes_never_panic(
            v in prop_oneof![Just(0x45u8), Just(0x46u8), Just(0x60u8), Just(0x4fu8)],
            proto_num in prop_oneof![Just(6u8), Just(17), Just(1), Just(58), Just(0), Just(44), Just(43), Just(51), any::<u8>()],
            len in 0u16..120,
            rest in proptest::collection::vec(any::<u8>(), 0..120),
        ) {
            // Mostly-valid headers with random lengths and bodies reach the deeper branches.
            let mut b = vec![v, 0, (len >> 8) as u8, len as u8, 0, 0, 0, 0, 64, proto_num];
            if v >> 4 == 6 {
                b[4] = 0;
                b[5] = len.min(80) as u8;
                b[6] = proto_num;
                b.resize(40, 0);
            } else {
                b.resize(20, 0);
            }
            b.extend_from_slice(&rest);
            if v >> 4 == 4 {
                let ihl = ((v & 0x0f) as usize * 4).min(b.len());
                let c = ipv4_header_checksum(&b[..ihl]);
                b[10..12].copy_from_slice(&c.to_be_bytes());
            }
            if let Ok(p) = parse(&b) {
                prop_assert!(p.len <= b.len() && p.payload_len <= p.len);
            }
        }

        #[test]
        fn incremental_update_equals_recomputation_on_random_headers(
            hdr in proptest::collection::vec(any::<u8>(), 20..=20),
            to in 0u8..4,
        ) {
            let mut b = hdr;
            b[0] = 0x45;
            b[2] = 0;
            b[3] = 20;
            b[10] = 0;
            b[11] = 0;
            let c = ipv4_header_checksum(&b);
            b[10..12].copy_from_slice(&c.to_be_bytes());
            set_ecn(&mut b, Ecn::from_bits(to)).unwrap();
            prop_assert!(verifies(&b));
            prop_assert_eq!(u16::from_be_bytes([b[10], b[11]]), ipv4_header_checksum(&b));
        }
    }
}
