//! One million lines to stdout, line-buffered (`println!`, i.e. std's `LineWriter`: one
//! write(2) per line) against block-buffered (`BufWriter` around a locked stdout: one write(2)
//! per 64 KiB), flush included. Redirect stdout to see the difference without a terminal's
//! drawing in the way:
//!
//! cargo run --release --example block_buffered_stdout > /dev/null
//! cargo run --release --example block_buffered_stdout -- 100000 > /dev/null   # fewer lines

use std::io::{BufWriter, Write};
use std::time::Instant;

fn main() -> std::io::Result<()> {
    let lines: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);

    let start = Instant::now();
    for i in 0..lines {
        println!("line {i}");
    }
    let line_buffered = start.elapsed();

    let start = Instant::now();
    {
        let mut out = BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
        for i in 0..lines {
            writeln!(out, "line {i}")?;
        }
        out.flush()?;
    }
    let block_buffered = start.elapsed();

    eprintln!("{lines} lines, println! (line-buffered): {line_buffered:?}");
    eprintln!("{lines} lines, BufWriter 64 KiB (block-buffered): {block_buffered:?}");
    eprintln!(
        "block-buffered is {:.1}x faster",
        line_buffered.as_secs_f64() / block_buffered.as_secs_f64()
    );
    Ok(())
}
