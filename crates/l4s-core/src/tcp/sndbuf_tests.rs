//! Tests of the send-buffer model against Linux's arithmetic (`tcp_sndbuf_expand`,
//! `__sk_stream_is_writeable`, `sk_stream_memory_free`, `tcp_stream_alloc_skb` truesize).

use super::sndbuf::*;
use super::DATA_SEQ_START;

const MB4: u64 = 4_194_304;

#[test]
fn tcp_sndbuf_expand_per_mss_is_a_power_of_two_head_plus_the_skb() {
    // 1460 (MSS option) + MAX_TCP_HEADER 192 + shinfo 320 = 1972 -> 2048, + sk_buff 256.
    assert_eq!(sndbuf_per_mss(1460), 2304);
    // 1600 + 512 = 2112 -> 4096 + 256.
    assert_eq!(sndbuf_per_mss(1600), 4352);
}

#[test]
fn tcp_sndbuf_expand_holds_two_cwnds_capped_at_tcp_wmem_max() {
    let mut b = SndBuf::new(MB4);
    assert_eq!(b.sk_sndbuf, TCP_WMEM_DEFAULT);
    // tcp_init_buffer_space at cwnd 3: nr_segs = max(3, TCP_INIT_CWND 10, reordering + 1).
    b.sndbuf_expand(3, 1460);
    assert_eq!(b.sk_sndbuf, 2 * 10 * 2304);
    b.sndbuf_expand(100, 1460);
    assert_eq!(b.sk_sndbuf, 460_800);
    // Never shrinks.
    b.sndbuf_expand(50, 1460);
    assert_eq!(b.sk_sndbuf, 460_800);
    // 2 × 910 × 2304 = 4 193 280 still fits; 911 segments pass tcp_wmem[2].
    b.sndbuf_expand(910, 1460);
    assert_eq!(b.sk_sndbuf, 4_193_280);
    b.sndbuf_expand(911, 1460);
    assert_eq!(b.sk_sndbuf, MB4);
}

#[test]
fn sk_wmem_queued_charges_one_skb_head_per_tso_skb() {
    let mut b = SndBuf::new(MB4);
    let skb = 20 * 1448;
    b.write_seq = DATA_SEQ_START + 3 * skb;
    assert_eq!(b.wmem_queued(DATA_SEQ_START, skb), 3 * skb + 3 * 832);
    // A partial skb still has its head.
    assert_eq!(
        b.wmem_queued(DATA_SEQ_START + 1, skb),
        3 * skb - 1 + 3 * 832
    );
}

#[test]
fn sk_stream_is_writeable_when_a_third_is_free() {
    let mut b = SndBuf::new(MB4);
    b.sk_sndbuf = MB4;
    // wspace = 4194304 - q >= q >> 1: true up to q = 2796203 (wspace 1398101, q >> 1 1398101).
    assert!(b.is_writeable(2_796_203));
    assert!(!b.is_writeable(2_796_204));
    assert!(b.is_writeable(0));
}

#[test]
fn sk_stream_memory_free_stops_a_send_at_the_first_skb_past_sk_sndbuf() {
    let mut b = SndBuf::new(MB4);
    b.sndbuf_expand(10, 1460); // 46 080 bytes
    let skb = 20 * 1448;
    b.write_space(DATA_SEQ_START, 1448, skb, u64::MAX);
    // One size_goal skb (45 × 1448 = 65 160 bytes) is added while the queue is empty; then
    // sk_wmem_queued (65 160 + 3 heads) >= sk_sndbuf and the writer waits.
    assert_eq!(b.write_seq, DATA_SEQ_START + 65_160);
}

#[test]
fn sk_stream_write_space_wakes_the_writer_for_one_chunk_below_two_thirds() {
    let mut b = SndBuf::new(MB4);
    b.sk_sndbuf = MB4;
    let skb = 20 * 1448;
    // 2 600 000 bytes queued: writeable; one send() of 256 KiB brings it past 2/3, so poll()
    // stops reporting EPOLLOUT and the writer waits with 4 MB not yet full.
    let una = DATA_SEQ_START;
    b.write_seq = una + 2_600_000;
    b.write_space(una, 1448, skb, u64::MAX);
    assert_eq!(b.write_seq, una + 2_600_000 + APP_WRITE_BYTES);
    // Not writeable any more: nothing happens until ACKs free a third of the buffer.
    b.write_space(una, 1448, skb, u64::MAX);
    assert_eq!(b.write_seq, una + 2_600_000 + APP_WRITE_BYTES);
    // A sized transfer's end caps the writing.
    let mut c = SndBuf::new(MB4);
    c.write_space(una, 1448, skb, una + 1000);
    assert_eq!(c.write_seq, una + 1000);
}
