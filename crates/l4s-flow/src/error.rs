//! Errors of `l4s-flow`: each one clear sentence naming what failed and what to do.

use std::io;
use std::net::SocketAddr;

/// Everything that ends a run early.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// A command-line value is out of range.
    #[error("{flag}: {msg}")]
    Usage {
        /// The flag, e.g. `--cc`.
        flag: &'static str,
        /// What is wrong and what is allowed.
        msg: String,
    },
    /// bind(2) failed (most often: the port is in use).
    #[error("cannot bind {addr}: {}", bind_hint(source))]
    Bind {
        /// The address we tried.
        addr: SocketAddr,
        /// The OS error.
        source: io::Error,
    },
    /// The kernel refused a socket option needed to read the ECN codepoint.
    #[error("this kernel does not support the {option} socket option needed to read ECN per datagram: {source}")]
    EcnUnsupported {
        /// IP_RECVTOS, IPV6_RECVTCLASS, IP_TOS or IPV6_TCLASS.
        option: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// The host name does not resolve.
    #[error("cannot resolve host \"{host}\": {msg}")]
    Resolve {
        /// What the user gave.
        host: String,
        /// Resolver message.
        msg: String,
    },
    /// connect/send failed with an ICMP-reported error or no route.
    #[error("cannot reach {peer}: {}", reach_hint(source))]
    Unreachable {
        /// The server address.
        peer: SocketAddr,
        /// The OS error.
        source: io::Error,
    },
    /// The peer stopped answering.
    #[error("{0}")]
    PeerVanished(String),
    /// SIGINT/SIGTERM ended the run (what was measured is still written).
    #[error("interrupted")]
    Interrupted,
    /// Our own output file already exists.
    #[error("{flag}: {path} already exists; remove it or choose another name (results are never overwritten)")]
    Exists {
        /// The flag that named it.
        flag: &'static str,
        /// The path.
        path: String,
    },
    /// The server refuses what was asked (a reverse run on a `--no-reverse` server).
    #[error("{0}")]
    Refused(String),
    /// The run ended without delivering a byte: a failure, not an empty success.
    #[error("{0}")]
    NothingDelivered(String),
    /// Any other I/O error, with what we were doing.
    #[error("{what}: {source}")]
    Io {
        /// What failed.
        what: String,
        /// The OS error.
        source: io::Error,
    },
}

impl FlowError {
    /// An I/O error while doing `what`.
    pub fn io(what: impl Into<String>, source: io::Error) -> Self {
        FlowError::Io {
            what: what.into(),
            source,
        }
    }
    /// Process exit code: 2 bad input or environment, 3 the peer vanished, is unreachable or
    /// refused, or nothing was delivered, 130 interrupted.
    pub fn exit_code(&self) -> u8 {
        match self {
            FlowError::PeerVanished(_)
            | FlowError::Unreachable { .. }
            | FlowError::NothingDelivered(_)
            | FlowError::Refused(_) => 3,
            FlowError::Interrupted => 130,
            _ => 2,
        }
    }
}

fn bind_hint(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::AddrInUse => {
            format!("{e} (the port is in use, e.g. by another `l4slab flow -s` or iperf3; choose another with -p)")
        }
        io::ErrorKind::AddrNotAvailable => {
            format!("{e} (no local interface has this address; check -B)")
        }
        _ => e.to_string(),
    }
}

fn reach_hint(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => {
            format!("{e} (ICMP port unreachable: is `l4slab flow -s` running there on this port?)")
        }
        _ => e.to_string(),
    }
}
