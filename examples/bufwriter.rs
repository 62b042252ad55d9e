//! A `BufWriter` holds everything back until its buffer is full or it is flushed (or dropped):
//! newlines mean nothing to it. Forget the flush and the last bytes arrive late, or, if the
//! program exits without dropping it, never.
//!
//! cargo run --example bufwriter

use std::io::{BufWriter, Write};

fn main() -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(8192, Vec::new());

    writeln!(out, "line one")?;
    writeln!(out, "line two")?;
    println!(
        "after two lines:  {} bytes reached the inner writer",
        out.get_ref().len()
    );

    out.flush()?;
    println!(
        "after flush():    {} bytes reached the inner writer",
        out.get_ref().len()
    );

    // Larger than the capacity: the buffer is emptied, and the big write goes straight through.
    let before = out.get_ref().len();
    out.write_all(&vec![b'x'; 10_000])?;
    println!(
        "after 10000 bytes: {} reached it without a flush",
        out.get_ref().len() - before
    );

    // What is left in the buffer is written when the BufWriter is dropped, errors ignored;
    // `into_inner` flushes and reports them.
    writeln!(out, "last line")?;
    let inner = out.into_inner().map_err(|e| e.into_error())?;
    println!("after into_inner(): {} bytes in all", inner.len());
    Ok(())
}
