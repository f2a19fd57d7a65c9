//! A guardian process that undoes a host change once the emulator is gone, however it ends
//! (even SIGKILL): it waits for a pipe whose only write end the emulator holds to close (pipe(7):
//! read returns 0 when every write end is closed), then runs its clean-up.

use crate::error::EmuError;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};

/// Fork the guardian (own session, so a terminal's SIGINT to the emulator's group does not
/// reach it; double fork, so nobody has to reap it). It runs `cleanup` when the returned
/// descriptor (and every copy of it) is closed. Call while single-threaded.
pub fn spawn(cleanup: impl FnOnce()) -> Result<OwnedFd, EmuError> {
    let os = |what: &str| EmuError::Os {
        what: what.into(),
        source: std::io::Error::last_os_error(),
    };
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(os("pipe2"));
    }
    // SAFETY: both descriptors are fresh and owned only here.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fork while single-threaded (documented precondition).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os("fork"));
    }
    if pid == 0 {
        drop(w);
        // SAFETY: setsid/fork/_exit take no pointers.
        unsafe {
            libc::setsid();
            if libc::fork() != 0 {
                libc::_exit(0);
            }
        }
        let mut f = std::fs::File::from(r);
        let mut b = [0u8; 1];
        while matches!(f.read(&mut b), Ok(n) if n > 0) {}
        cleanup();
        // SAFETY: ends the guardian.
        unsafe { libc::_exit(0) }
    }
    drop(r);
    let mut st = 0;
    // SAFETY: waitpid on the child just forked (it exits at once after the second fork).
    unsafe { libc::waitpid(pid, &mut st, 0) };
    Ok(w)
}
