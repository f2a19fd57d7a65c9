//! l4s-emu: the user-space emulator. Real programs run in anonymous network namespaces joined
//! only through an emulated bottleneck driven on the wall clock (see DESIGN.md "Real traffic").
//! The data path (packet, path, record) is sans-I/O; the rest is the Linux edge around it.

pub mod cli;
pub mod clock;
pub mod emulate;
pub mod error;
pub mod guardian;
pub mod host;
pub mod live;
pub mod ns;
pub mod offload;
pub mod output;
pub mod packet;
pub mod path;
pub mod record;
pub mod scenario;
pub mod tcp_cc;
pub mod tun;
pub mod wifi;

pub use error::EmuError;
