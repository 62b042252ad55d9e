//! The safe unbuffered stdout: duplicate fd 1 (`dup`) and own the duplicate. Dropping it closes
//! only the duplicate, so stdout keeps working. No `unsafe` needed.
//!
//! cargo run --example raw_fd_owned

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd};

fn main() -> std::io::Result<()> {
    {
        let owned = std::io::stdout().as_fd().try_clone_to_owned()?;
        let fd = owned.as_raw_fd();
        let mut stdout = File::from(owned);
        writeln!(
            stdout,
            "first write, through a dup of fd 1 (fd {fd}): works"
        )?;
    } // <- closes the duplicate, not fd 1.

    writeln!(
        std::io::stdout(),
        "second write, through std::io::stdout(): works too"
    )?;
    Ok(())
}
