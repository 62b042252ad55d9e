//! The one page flushlab serves: xterm.js's files and the WebSocket to the pty, on 127.0.0.1 at
//! a free port, every path under a random token. A page served here is a pty any local user
//! could type into, so the server takes exactly one WebSocket, and only one that carries the
//! token and the page's own Origin and Host (a page elsewhere, or a name that resolves here,
//! sends another); everything else is answered 403 and closed.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;
use tungstenite::WebSocket;
use tungstenite::protocol::Role;

/// The page's own HTML (it loads the files of [`super::package::FILES`]).
const PAGE: &str = include_str!("page.html");

/// A request's head is at most this long; a client has this long to send it.
const HEAD_AT_MOST: usize = 16 * 1024;
const HEAD_WITHIN: Duration = Duration::from_secs(5);

/// The page's server, listening; [`Page::connected`] waits for its one WebSocket.
pub struct Page {
    port: u16,
    token: String,
    accepted: mpsc::Receiver<WebSocket<TcpStream>>,
    /// Requests refused so far (a test's and a run's count).
    pub refused: Arc<std::sync::atomic::AtomicU64>,
}

impl Page {
    /// Listens on 127.0.0.1 at a free port, serving the packages in `modules`.
    pub fn serve(modules: PathBuf) -> anyhow::Result<Page> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).context("listening on 127.0.0.1")?;
        let port = listener.local_addr()?.port();
        let token = random_token()?;
        let (send, accepted) = mpsc::channel();
        let refused = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let server = Server {
            port,
            token: token.clone(),
            modules,
            taken: AtomicBool::new(false),
            refused: Arc::clone(&refused),
        };
        let server = Arc::new(server);
        flushlab_core::sys::spawn_thread("page-listener", move || {
            for stream in listener.incoming().flatten() {
                let (server, send) = (Arc::clone(&server), send.clone());
                let _ = flushlab_core::sys::spawn_thread("page-request", move || {
                    if let Some(ws) = server.answer(stream) {
                        let _ = send.send(ws);
                    }
                });
            }
        })?;
        Ok(Page {
            port,
            token,
            accepted,
            refused,
        })
    }

    /// The page's address, with what the page asks in its fragment (never sent to a server).
    /// `camera`: the page sends the rows the DOM renderer drew at each render.
    pub fn url(&self, (cols, rows): (u16, u16), renderer: &str, camera: bool) -> String {
        format!(
            "http://127.0.0.1:{}/{}/#cols={cols}&rows={rows}&renderer={renderer}&camera={}",
            self.port,
            self.token,
            u8::from(camera)
        )
    }

    /// The page's one WebSocket, once it connected; `None` after `limit`.
    pub fn connected(&self, limit: Duration) -> Option<WebSocket<TcpStream>> {
        self.accepted.recv_timeout(limit).ok()
    }
}

struct Server {
    port: u16,
    token: String,
    modules: PathBuf,
    /// The WebSocket was taken: every later request is refused.
    taken: AtomicBool,
    refused: Arc<std::sync::atomic::AtomicU64>,
}

/// A request's line and headers (names in lower case).
struct Head {
    path: String,
    headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Server {
    /// Answers one connection: a file, the WebSocket (returned), or 403.
    fn answer(&self, mut stream: TcpStream) -> Option<WebSocket<TcpStream>> {
        let _ = stream.set_read_timeout(Some(HEAD_WITHIN));
        let head = read_head(&mut stream)?;
        let refuse = |mut stream: TcpStream, why: &str| {
            self.refused.fetch_add(1, Ordering::Relaxed);
            let _ = write!(
                stream,
                "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{why}",
                why.len()
            );
            None
        };
        if self.taken.load(Ordering::SeqCst) {
            return refuse(stream, "the page's one connection is taken");
        }
        let own = format!("127.0.0.1:{}", self.port);
        if head.header("host") != Some(own.as_str()) {
            return refuse(stream, "not this page's Host");
        }
        let Some(rest) = head
            .path
            .strip_prefix('/')
            .and_then(|p| p.strip_prefix(self.token.as_str()))
            .and_then(|p| p.strip_prefix('/'))
        else {
            return refuse(stream, "no token");
        };
        match rest {
            "ws" => {
                let origin = format!("http://{own}");
                if head.header("origin") != Some(origin.as_str()) {
                    return refuse(stream, "not this page's Origin");
                }
                let key = head.header("sec-websocket-key")?;
                let upgrade = head
                    .header("upgrade")
                    .is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
                if !upgrade || self.taken.swap(true, Ordering::SeqCst) {
                    return refuse(stream, "the page's one connection is taken");
                }
                let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
                write!(
                    stream,
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
                )
                .ok()?;
                let _ = stream.set_read_timeout(None);
                let _ = stream.set_nodelay(true);
                Some(WebSocket::from_raw_socket(stream, Role::Server, None))
            }
            "" => {
                send(&mut stream, "text/html; charset=utf-8", PAGE.as_bytes());
                None
            }
            name => {
                match super::package::FILES.iter().find(|(n, _, _)| *n == name) {
                    Some((_, path, kind)) => match std::fs::read(self.modules.join(path)) {
                        Ok(body) => send(&mut stream, kind, &body),
                        Err(_) => send_status(&mut stream, "500 Internal Server Error"),
                    },
                    None => send_status(&mut stream, "404 Not Found"),
                }
                None
            }
        }
    }
}

fn send(stream: &mut TcpStream, kind: &str, body: &[u8]) {
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(body);
}

fn send_status(stream: &mut TcpStream, status: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
}

/// A GET's head, read up to its blank line; `None` for anything else (too long, too slow, not
/// a GET).
fn read_head(stream: &mut TcpStream) -> Option<Head> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 2048];
    while !bytes.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 || bytes.len() + n > HEAD_AT_MOST {
            return None;
        }
        bytes.extend_from_slice(&buf[..n]);
    }
    let text = std::str::from_utf8(&bytes).ok()?;
    let mut lines = text.split("\r\n");
    let mut request = lines.next()?.split(' ');
    let (method, path) = (request.next()?, request.next()?);
    if method != "GET" {
        return None;
    }
    let headers = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Some(Head {
        path: path.to_owned(),
        headers,
    })
}

/// 128 bits from the kernel's random source, in hex.
fn random_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 16];
    let mut filled = 0;
    while filled < bytes.len() {
        filled +=
            rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty())
                .context("reading the kernel's random source")?;
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(page: &Page, path: &str, headers: &[(&str, String)]) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", page.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut request = format!("GET {path} HTTP/1.1\r\n");
        for (name, value) in headers {
            request += &format!("{name}: {value}\r\n");
        }
        request += "\r\n";
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = Vec::new();
        let mut buf = [0u8; 4096];
        // The status line is enough (a WebSocket's answer never ends).
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
        String::from_utf8_lossy(&answer)
            .lines()
            .next()
            .unwrap_or("")
            .to_owned()
    }

    fn websocket(page: &Page, token: &str, origin: String) -> String {
        let host = format!("127.0.0.1:{}", page.port);
        get(
            page,
            &format!("/{token}/ws"),
            &[
                ("Host", host),
                ("Origin", origin),
                ("Upgrade", "websocket".into()),
                ("Connection", "Upgrade".into()),
                ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==".into()),
                ("Sec-WebSocket-Version", "13".into()),
            ],
        )
    }

    #[test]
    fn one_websocket_with_the_token_and_the_pages_origin_is_taken_and_nothing_else() {
        let page = Page::serve(PathBuf::from("/nonexistent")).unwrap();
        let own = format!("http://127.0.0.1:{}", page.port);
        let token = page.token.clone();
        // The page itself, with its token and Host.
        let host = ("Host", format!("127.0.0.1:{}", page.port));
        assert!(get(&page, &format!("/{token}/"), std::slice::from_ref(&host)).contains("200"));
        // No token, another token, another Host.
        assert!(get(&page, "/", std::slice::from_ref(&host)).contains("403"));
        assert!(websocket(&page, "0123", own.clone()).contains("403"));
        let elsewhere = ("Host", format!("localhost:{}", page.port));
        assert!(get(&page, &format!("/{token}/"), &[elsewhere]).contains("403"));
        // Another Origin, and none.
        assert!(websocket(&page, &token, "http://evil.example".into()).contains("403"));
        assert!(websocket(&page, &token, String::new()).contains("403"));
        // The one.
        assert!(websocket(&page, &token, own.clone()).contains("101"));
        assert!(page.connected(Duration::from_secs(10)).is_some());
        // A second, though right in every other way; and after it, the page itself.
        assert!(websocket(&page, &token, own).contains("403"));
        assert!(get(&page, &format!("/{token}/"), &[host]).contains("403"));
        assert_eq!(page.refused.load(Ordering::Relaxed), 7);
    }
}
