//! Draining one connection's UDP socket: `recvmmsg` batches until the socket is empty, each
//! datagram decoded and sorted into the connection's own and foreign ones (recvmmsg(2)).
//! The forward, reverse and workload drivers each hand the events to their own handler.

use std::io;

use l4s_core::Nanos;

use crate::error::FlowError;
use crate::sock::{EcnSocket, Received, RecvBatch, BATCH};
use crate::wire::{self, Body};

/// A connection whose socket [`drain`] reads.
pub(crate) trait Connection {
    /// The connection's socket.
    fn sock(&mut self) -> &mut EcnSocket;
    /// The connection id its datagrams carry.
    fn conn(&self) -> u32;
}

/// What [`drain`] hands to its handler, in the order it happens.
// Made and consumed on the stack once per datagram: boxing the large variant would cost an
// allocation per datagram on the receive path.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Rx<'a> {
    /// A datagram of the connection: how it came, and what it carries.
    Datagram(Received<'a>, Body<'a>),
    /// A datagram that is not the connection's: another connection's, truncated, or not
    /// the protocol's.
    Foreign,
    /// `recvmmsg` failed. If the handler returns Ok, this reads as an empty batch (a
    /// `BatchEnd(0)` follows) and ends the draining.
    Failed(io::Error),
    /// The end of one batch of `n` datagrams, after their events.
    BatchEnd(usize),
}

/// Read every datagram waiting on `c`'s socket, in batches of [`BATCH`], handing each
/// event to `handle` with the time `now` reads after the batch arrived. Ends when a batch
/// is short (the socket is empty), or at the handler's first error, which it returns.
pub(crate) fn drain<C: Connection>(
    c: &mut C,
    batch: &mut RecvBatch,
    now: impl Fn() -> Nanos,
    mut handle: impl FnMut(&mut C, Rx<'_>, Nanos) -> Result<(), FlowError>,
) -> Result<(), FlowError> {
    loop {
        let got = c.sock().recv_batch(batch);
        let t = now();
        let n = match got {
            Ok(n) => n,
            Err(e) => {
                handle(c, Rx::Failed(e), t)?;
                0
            }
        };
        for i in 0..n {
            let Some(r) = c.sock().received(batch, i) else {
                continue;
            };
            let rx = match wire::decode(r.data) {
                Ok(d) if d.conn == c.conn() && !r.truncated => Rx::Datagram(r, d.body),
                _ => Rx::Foreign,
            };
            handle(c, rx, t)?;
        }
        handle(c, Rx::BatchEnd(n), t)?;
        if n < BATCH {
            return Ok(());
        }
    }
}
