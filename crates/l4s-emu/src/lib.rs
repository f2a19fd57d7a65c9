//! l4s-emu: the user-space emulator's library: the sans-I/O data path shared by the binary and
//! its tests.

pub mod packet;
pub mod path;
pub mod record;
