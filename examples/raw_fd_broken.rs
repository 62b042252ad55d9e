//! The trap: `File::from_raw_fd(1)` makes a `File` that *owns* file descriptor 1. When it is
//! dropped, it closes stdout. Worse than a crash: std treats a closed stdout (EBADF) as a sink,
//! so every later `println!` "succeeds" and its text silently disappears.
//!
//! cargo run --example raw_fd_broken
//!
//! flushlab itself never does this: see `raw_fd_owned` for the safe way.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, FromRawFd};

fn main() {
    {
        // SAFETY: fd 1 is open for the whole program and nothing else in this block uses it.
        // That is exactly the problem: `File` now believes it owns fd 1 and closes it on drop.
        #[allow(unsafe_code)]
        let mut stdout = unsafe { File::from_raw_fd(1) };
        writeln!(stdout, "first write, through File::from_raw_fd(1): works").unwrap();
    } // <- the File is dropped here, and close(1) is called.

    let second = writeln!(std::io::stdout(), "second write, through std::io::stdout()");
    eprintln!("second write returned {second:?}, yet its text went nowhere: fd 1 is closed");
    match std::io::stdout().as_fd().try_clone_to_owned() {
        Ok(_) => eprintln!("fd 1 is still open (unexpected)"),
        Err(e) => eprintln!(
            "dup(1) fails: {e}\n\
             The File took ownership of fd 1 and closed it on drop. Use\n\
             File::from(std::io::stdout().as_fd().try_clone_to_owned()?) instead (a dup)."
        ),
    }
}
