//! `std::io::stdout()` is a `LineWriter` with a 1 KiB buffer, whatever fd 1 is. 100 KB written
//! in small pieces with no newline leave as ~100 write(2) calls of 1 KiB; the same 100 KB in one
//! `write_all` go around the buffer in a single call. Counted by the kernel in /proc/self/io.
//!
//! cargo run --example stdout_is_linewriter > /dev/null

use std::io::Write;

/// write(2)-family calls this process has made so far (Linux).
fn write_calls() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|l| l.strip_prefix("syscw:")?.trim().parse().ok())
        })
        .expect("/proc/self/io (Linux only)")
}

fn main() -> std::io::Result<()> {
    let data = vec![b'x'; 100 * 1024];
    let mut stdout = std::io::stdout();

    let before = write_calls();
    for piece in data.chunks(16) {
        stdout.write_all(piece)?;
    }
    stdout.flush()?;
    let small = write_calls() - before;

    let before = write_calls();
    stdout.write_all(&data)?;
    stdout.flush()?;
    let whole = write_calls() - before;

    eprintln!("100 KiB in 16-byte pieces: {small} write(2) calls");
    eprintln!("100 KiB in one write_all:  {whole} write(2) call(s)");
    Ok(())
}
