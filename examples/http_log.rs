//! The experiment flushlab grew from, small: a single-threaded HTTP/1.1 server on 127.0.0.1
//! that answers "Hello World!" and logs one line per request, and a load generator on one
//! keep-alive connection. Run it with the log going to a terminal, then to /dev/null:
//!
//!     cargo run --release --example http_log -- println 20000            # log lines here
//!     cargo run --release --example http_log -- println 20000 > /dev/null
//!     cargo run --release --example http_log -- block 20000              # a BufWriter
//!     cargo run --release --example http_log -- none 20000               # no logging
//!
//! The result goes to stderr: requests, seconds, requests/s and the mean latency. Everything
//! stays on 127.0.0.1, and both loops are bounded: at most REQUESTS requests and 30 seconds.

use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nHello World!";
const LIMIT: Duration = Duration::from_secs(30);

fn main() {
    let mut args = std::env::args().skip(1);
    let writer = args.next().unwrap_or_else(|| "println".to_owned());
    let requests: u64 = match args.next().map(|n| n.parse()) {
        None => 20_000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => usage(),
    };
    if !matches!(writer.as_str(), "println" | "block" | "none") {
        usage();
    }
    match run(&writer, requests) {
        Ok((served, seconds)) => eprintln!(
            "http_log {writer}: {served} requests in {seconds:.3} s = {:.0} requests/s, mean latency {:.1} µs",
            served as f64 / seconds,
            seconds * 1e6 / served.max(1) as f64,
        ),
        Err(e) => {
            eprintln!("http_log: {e}");
            std::process::exit(1);
        }
    }
}

fn usage() -> ! {
    eprintln!("usage: http_log [println|block|none] [REQUESTS > 0]");
    std::process::exit(2);
}

fn run(writer: &str, requests: u64) -> io::Result<(u64, f64)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    let writer = writer.to_owned();
    let server = std::thread::spawn(move || serve(listener, &writer));

    let mut client = TcpStream::connect(address)?;
    client.set_nodelay(true)?;
    client.set_read_timeout(Some(LIMIT))?;
    let mut response = [0u8; RESPONSE.len()];
    let started = Instant::now();
    let mut served = 0;
    while served < requests && started.elapsed() < LIMIT {
        client.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")?;
        client.read_exact(&mut response)?;
        served += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    drop(client);
    server
        .join()
        .map_err(|_| io::Error::other("the server thread panicked"))??;
    Ok((served, seconds))
}

/// Answers requests on one connection until the client hangs up, logging one line each.
fn serve(listener: TcpListener, writer: &str) -> io::Result<()> {
    let (stream, peer) = listener.accept()?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(LIMIT))?;
    let mut out = stream.try_clone()?;
    let mut requests = BufReader::new(stream);
    let mut buffered = BufWriter::new(io::stdout().lock());
    let mut line = String::new();
    let mut n: u64 = 0;
    loop {
        // A request is its lines up to the empty one.
        let mut got = false;
        loop {
            line.clear();
            if requests.read_line(&mut line)? == 0 {
                buffered.flush()?;
                return Ok(());
            }
            if line == "\r\n" {
                break;
            }
            got = true;
        }
        if !got {
            continue;
        }
        n += 1;
        match writer {
            "println" => println!("{peer} GET / 200 request {n}"),
            "block" => writeln!(buffered, "{peer} GET / 200 request {n}")?,
            _ => {}
        }
        out.write_all(RESPONSE)?;
    }
}
