//! How many bytes a raw pseudo-terminal takes before its writer has to wait, when nobody reads
//! the other side: all a single-threaded program can hand the terminal before it paints and
//! encodes its next frame. While it does, the reader drains at most that much, then waits.
//!
//! cargo run --release --example pty_room
//!
//! The guide's "Where 0.9 of the ceiling is out of reach" uses it: a mode that encodes the
//! whole frame before writing it (`frame`) takes, a frame, at least its encoding time plus the
//! time the reader needs for the frame's bytes beyond this room.

use std::fs::File;
use std::io::{self, Write};
use std::time::Duration;

use flushlab_core::sys::pty::Pty;
use rustix::fs::OFlags;
use rustix::termios::{OptionalActions, tcgetattr, tcsetattr};

fn main() -> anyhow::Result<()> {
    for round in 1..=3 {
        println!("round {round}: a raw pty took {} bytes", room()?);
    }
    Ok(())
}

/// Writes 1 KiB at a time, without blocking, into a fresh raw pty that nobody reads, until it
/// takes nothing more.
fn room() -> anyhow::Result<usize> {
    let pty = Pty::open(80, 24)?;
    let slave = pty.open_slave()?;
    let mut termios = tcgetattr(&slave)?;
    termios.make_raw();
    tcsetattr(&slave, OptionalActions::Now, &termios)?;
    rustix::fs::fcntl_setfl(&slave, OFlags::NONBLOCK)?;
    let mut slave = File::from(slave);
    let mut taken = 0;
    // The kernel moves bytes from the writer's buffer to the reader's side in a worker of its
    // own: room can reappear a moment after a refusal, so it is offered again until five
    // refusals in a row, 10 ms apart.
    let mut refused = 0;
    while refused < 5 {
        match slave.write(&[b'x'; 1024]) {
            Ok(n) => {
                taken += n;
                refused = 0;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                refused += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(taken)
}
