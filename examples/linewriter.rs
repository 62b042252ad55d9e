//! A `LineWriter` holds bytes back until it sees a newline (or its 1 KiB buffer fills).
//! `std::io::stdout()` is one, which is why `print!("no newline")` may not show up at once.
//!
//! cargo run --example linewriter

use std::io::{LineWriter, Write};

fn main() -> std::io::Result<()> {
    // The inner writer is a Vec, so we can look at what has reached it.
    let mut out = LineWriter::new(Vec::new());

    out.write_all(b"hello")?;
    println!(
        "after write(\"hello\"):   {} bytes reached the inner writer",
        out.get_ref().len()
    );

    out.write_all(b", world")?;
    println!(
        "after write(\", world\"): {} bytes reached the inner writer",
        out.get_ref().len()
    );

    out.write_all(b"\n")?;
    println!(
        "after write(\"\\n\"):      {} bytes reached the inner writer",
        out.get_ref().len()
    );

    // A TUI frame has almost no newlines, so for a TUI `stdout()` behaves like a 1 KiB
    // block buffer: it passes data on only when the buffer is full.
    let frame = vec![b'x'; 3000];
    let before = out.get_ref().len();
    out.write_all(&frame)?;
    println!(
        "after 3000 bytes without a newline: {} reached it",
        out.get_ref().len() - before
    );
    out.flush()?;
    println!("after flush(): {} reached it", out.get_ref().len() - before);
    Ok(())
}
