//! Errors of the emulator: one line each, naming what failed and, for privilege problems,
//! what to do about it.

/// Everything that can stop an emulation before or while it runs.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// A command-line flag or scenario field is out of range; the text names it.
    #[error("{0}")]
    Config(String),
    /// COMMAND's program is not an executable file on PATH (exit status 127, as a shell's).
    #[error("{0}")]
    NotFound(String),
    /// The kernel refused a privileged step; the text says why and what to do.
    #[error("{0}")]
    Privilege(String),
    /// /dev/net/tun could not be opened.
    #[error("cannot open /dev/net/tun: {0}; run as root (sudo l4s-emu ...) or allow TUN for users with `chmod 0666 /dev/net/tun`")]
    TunDenied(std::io::Error),
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        /// The step that failed.
        what: String,
        /// The kernel's error.
        source: std::io::Error,
    },
}
