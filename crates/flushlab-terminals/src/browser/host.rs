//! `flushlab xtermjs-host` (not for people): the browser terminal `wrap --terminal xtermjs`
//! runs CMD in. It is the terminal: it makes the pty and starts CMD on it, serves the page
//! ([`super::page`]), starts Chromium on a scratch profile and opens the page over the DevTools
//! pipe, then carries bytes between the pty and the page — each read of the pty one WebSocket
//! message, sent at once (no batching: VS Code batches, and a batch's wait would be part of
//! every key's transport) — and tells wrap what happened ([`super::protocol`]).
//!
//! It ends with wrap (TERM when wrap dies, even by SIGKILL), and everything it started ends
//! with it: Chromium's process group, the profile, the server; CMD hears its pty hang up.

use std::ffi::OsString;
use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

use super::Renderer;
use super::devtools::DevTools;
use super::page::Page;
use super::protocol::{Drew, Event, Order};
use flushlab_core::outcome::Outcome;

/// The host's flags (`flushlab xtermjs-host --renderer R --cols C --rows R --modules DIR
/// --browser PATH --parent PID -- CMD…`).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct HostArgs {
    /// xterm.js's renderer.
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub renderer: Renderer,
    /// The terminal's columns.
    #[cfg_attr(feature = "clap", arg(long))]
    pub cols: u16,
    /// The terminal's rows.
    #[cfg_attr(feature = "clap", arg(long))]
    pub rows: u16,
    /// xterm.js's installed packages.
    #[cfg_attr(feature = "clap", arg(long))]
    pub modules: PathBuf,
    /// Chromium (chromium-headless-shell, or chromium).
    #[cfg_attr(feature = "clap", arg(long))]
    pub browser: PathBuf,
    /// wrap's pid: the host ends when it does.
    #[cfg_attr(feature = "clap", arg(long))]
    pub parent: i32,
    /// The camera: the rows the DOM renderer drew, sent at each render.
    #[cfg_attr(feature = "clap", arg(long))]
    pub camera: bool,
    /// CMD, and its arguments.
    #[cfg_attr(feature = "clap", arg(required = true, trailing_var_arg = true))]
    pub command: Vec<OsString>,
}

/// The hidden subcommand's name, as wrap starts it.
pub const SUBCOMMAND: &str = "xtermjs-host";

impl HostArgs {
    /// The words after flushlab's own that start the host: its own flags, then the renderer,
    /// size and command as the launch table tells xterm.js them; what the binary's parser reads
    /// back as these very arguments (a test round-trips it).
    pub fn argv(&self) -> Vec<OsString> {
        let mut words: Vec<OsString> = vec![
            SUBCOMMAND.into(),
            "--modules".into(),
            self.modules.clone().into(),
            "--browser".into(),
            self.browser.clone().into(),
            "--parent".into(),
            self.parent.to_string().into(),
        ];
        if self.camera {
            words.push("--camera".into());
        }
        let terminal = self.renderer.terminal();
        words.extend(terminal.args((self.cols, self.rows), &self.command, None, &[]));
        words
    }
}

/// The page opens, connects and says which renderer drew within this.
const OPEN_WITHIN: Duration = Duration::from_secs(30);

/// The trace's categories: the compositor's frames, and the page's marks.
const CATEGORIES: &str = "disabled-by-default-devtools.timeline.frame,blink.user_timing";

/// wrap's end of the events: one JSON line each.
struct Tell(std::sync::Mutex<std::io::Stdout>);

impl Tell {
    fn tell(&self, event: &Event) {
        let mut out = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(line) = serde_json::to_string(event) {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
}

pub fn run(args: HostArgs) -> anyhow::Result<Outcome> {
    let tell = Tell(std::sync::Mutex::new(std::io::stdout()));
    match host(&args, &tell) {
        Ok(()) => Ok(Outcome::Finished),
        Err(e) => {
            tell.tell(&Event::Failed {
                why: format!("{e:#}"),
            });
            Ok(Outcome::Failed)
        }
    }
}

fn host(args: &HostArgs, tell: &Tell) -> anyhow::Result<()> {
    flushlab_core::sys::signals::terminate_with_parent(args.parent)?;
    flushlab_core::sys::process::become_subreaper()?;
    let signal = crate::session::watch_termination_signals()?;
    let stop = || signal.load(Ordering::Relaxed) != 0;
    // CMD first: wrap takes the host's first child for CMD.
    let pty = flushlab_core::sys::pty::Pty::open(args.cols, args.rows)?;
    let (program, rest) = args.command.split_first().context("no CMD")?;
    let mut cmd = pty.spawn(program.as_ref(), |c| {
        c.args(rest).env("TERM", "xterm-256color");
    })?;
    let page = Page::serve(args.modules.clone())?;
    let profile = flushlab_core::files::Scratch::new("flushlab-chromium")?;
    let browser = DevTools::start(&args.browser, &browser_flags(args, profile.path()))?;
    let (session, version) = open_page(
        &browser,
        &page.url((args.cols, args.rows), args.renderer.name(), args.camera),
    )?;
    let until = std::time::Instant::now() + OPEN_WITHIN;
    let mut ws = loop {
        if let Some(ws) = page.connected(Duration::from_millis(100)) {
            break ws;
        }
        if stop() || std::time::Instant::now() >= until {
            anyhow::bail!(
                "the page did not connect within {} s",
                OPEN_WITHIN.as_secs()
            );
        }
    };
    let drew = page_ready(&mut ws)?;
    browser.call(
        None,
        "Tracing.start",
        json!({ "categories": CATEGORIES, "transferMode": "ReportEvents" }),
    )?;
    tell.tell(&Event::Ready {
        drew,
        browser: version,
        sandboxed: !as_root(),
    });
    let ended = Arc::new(AtomicBool::new(false));
    let browser = Arc::new(browser);
    take_orders(Arc::clone(&browser), session, Arc::clone(&ended))?;
    bridge(&pty, ws, tell, || ended.load(Ordering::Relaxed) || stop())?;
    if !stop() {
        let (draw_frames_ns, marks) = trace(&browser)?;
        tell.tell(&Event::Trace {
            draw_frames_ns,
            marks,
        });
    }
    // Chromium before its profile; every process it left (the host is their subreaper) before
    // wrap hears the end.
    browser.end();
    let _ = cmd.kill();
    let _ = cmd.wait();
    end_orphans();
    drop(profile);
    tell.tell(&Event::Ended);
    Ok(())
}

/// Ends and reaps what is left of the host's descendants (Chromium's helpers whose parent
/// ended first were given to the host).
fn end_orphans() {
    use flushlab_core::sys::signals::{Signal, signal_process};
    flushlab_core::sys::process::reap_exited();
    let me = std::process::id() as i32;
    for signal in [Signal::TERM, Signal::KILL] {
        let left = flushlab_core::sys::process::children(me);
        if left.is_empty() {
            break;
        }
        for pid in left {
            let _ = signal_process(pid, signal);
        }
        std::thread::sleep(Duration::from_millis(200));
        flushlab_core::sys::process::reap_exited();
    }
}

/// Chromium's flags: headless, the pipe, the scratch profile, a window the terminal fits, no
/// network but the page (every name resolves nowhere, 127.0.0.1 is no name), none of its own
/// background traffic; its sandbox, but where it cannot have one (as root).
fn browser_flags(args: &HostArgs, profile: &std::path::Path) -> Vec<OsString> {
    let (width, height) = (
        u32::from(args.cols) * 8 + 40,
        u32::from(args.rows) * 16 + 40,
    );
    let mut flags: Vec<OsString> = [
        "--headless",
        "--remote-debugging-pipe",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--no-pings",
        "--mute-audio",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ]
    .into_iter()
    .map(OsString::from)
    .collect();
    flags.push(format!("--user-data-dir={}", profile.display()).into());
    flags.push(format!("--window-size={width},{height}").into());
    if args.renderer == Renderer::Webgl {
        flags.push("--enable-unsafe-swiftshader".into());
    }
    if as_root() {
        flags.push("--no-sandbox".into());
    }
    flags
}

/// Whether the host runs as root, where Chromium refuses its sandbox.
fn as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Opens `url` in a new page over the pipe; the page's session, and the browser's version.
fn open_page(browser: &DevTools, url: &str) -> anyhow::Result<(String, String)> {
    let version = browser.call(None, "Browser.getVersion", json!({}))?;
    let version = version["product"].as_str().unwrap_or("unknown").to_owned();
    let target = browser.call(None, "Target.createTarget", json!({ "url": "about:blank" }))?;
    let target = target["targetId"]
        .as_str()
        .context("no target id")?
        .to_owned();
    let attached = browser.call(
        None,
        "Target.attachToTarget",
        json!({ "targetId": target, "flatten": true }),
    )?;
    let session = attached["sessionId"]
        .as_str()
        .context("no session id")?
        .to_owned();
    browser.call(Some(&session), "Page.navigate", json!({ "url": url }))?;
    Ok((session, version))
}

/// The page's first message: which renderer drew.
fn page_ready(ws: &mut WebSocket<TcpStream>) -> anyhow::Result<Drew> {
    ws.get_ref().set_read_timeout(Some(OPEN_WITHIN))?;
    loop {
        match ws
            .read()
            .context("the page said nothing after it connected")?
        {
            Message::Text(text) => {
                if let Some(said) = text.as_str().strip_prefix("ready ") {
                    ws.get_ref().set_read_timeout(None)?;
                    return Ok(serde_json::from_str(said)?);
                }
            }
            Message::Close(_) => anyhow::bail!("the page closed its connection"),
            _ => {}
        }
    }
}

/// wrap's orders, on a thread of their own: keys dispatched to the page as they come; the end,
/// or wrap's stdin closing, sets `ended`.
fn take_orders(
    browser: Arc<DevTools>,
    session: String,
    ended: Arc<AtomicBool>,
) -> anyhow::Result<()> {
    flushlab_core::sys::spawn_thread("host-orders", move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            match serde_json::from_str::<Order>(&line) {
                Ok(Order::Key { events }) => {
                    for event in events {
                        let _ = browser.call(Some(&session), "Input.dispatchKeyEvent", event);
                    }
                }
                Ok(Order::End) | Err(_) => break,
            }
        }
        ended.store(true, Ordering::Relaxed);
    })?;
    Ok(())
}

/// Carries bytes between the pty and the page until `over`: each read of the pty a message (its
/// number before it), told as sent; the page's keys to the pty; its render reports told as
/// they arrive.
fn bridge(
    pty: &flushlab_core::sys::pty::Pty,
    mut ws: WebSocket<TcpStream>,
    tell: &Tell,
    over: impl Fn() -> bool,
) -> anyhow::Result<()> {
    ws.get_ref().set_nonblocking(true)?;
    let socket = ws.get_ref().try_clone()?;
    let mut master = &pty.master;
    let (mut seq, mut pty_open, mut unsent) = (0u64, true, false);
    let mut sync = SyncScan::default();
    let mut buf = vec![0u8; 64 * 1024];
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 20_000_000,
    };
    while !over() {
        let socket_wants = if unsent {
            PollFlags::IN | PollFlags::OUT
        } else {
            PollFlags::IN
        };
        let pty_wants = if pty_open {
            PollFlags::IN
        } else {
            PollFlags::empty()
        };
        let mut fds = [
            PollFd::new(&socket, socket_wants),
            PollFd::new(master, pty_wants),
        ];
        match poll(&mut fds, Some(&tick)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        let (socket_ready, pty_ready) = (fds[0].revents(), fds[1].revents());
        if pty_open && !pty_ready.is_empty() {
            match master.read(&mut buf) {
                Ok(n) if n > 0 => {
                    seq += 1;
                    let at_ns = flushlab_core::sys::monotonic_ns();
                    let (sync_begins, sync_ends) = sync.scan(&buf[..n]);
                    let mut message = Vec::with_capacity(n + 4);
                    message.extend_from_slice(&(seq as u32).to_be_bytes());
                    message.extend_from_slice(&buf[..n]);
                    unsent = sent(ws.send(Message::Binary(message.into())))?;
                    tell.tell(&Event::Sent {
                        seq,
                        at_ns,
                        bytes: n as u64,
                        sync_begins,
                        sync_ends,
                    });
                }
                // EIO: CMD and every holder of the slave are gone.
                _ => pty_open = false,
            }
        }
        if unsent && socket_ready.contains(PollFlags::OUT) {
            unsent = sent(ws.flush())?;
        }
        if socket_ready.intersects(PollFlags::IN | PollFlags::HUP | PollFlags::ERR)
            && !from_page(&mut ws, &mut master, tell)?
        {
            break;
        }
    }
    Ok(())
}

/// Whether a send left bytes queued (the socket was full), or the error that ends the bridge.
fn sent(result: tungstenite::Result<()>) -> anyhow::Result<bool> {
    match result {
        Ok(()) => Ok(false),
        Err(tungstenite::Error::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(true),
        Err(e) => Err(e).context("sending to the page"),
    }
}

/// What the page sent until now: keys to the pty, render reports told. False once it closed.
fn from_page(
    ws: &mut WebSocket<TcpStream>,
    master: &mut &std::fs::File,
    tell: &Tell,
) -> anyhow::Result<bool> {
    loop {
        match ws.read() {
            Ok(Message::Binary(keys)) => master.write_all(&keys)?,
            Ok(Message::Text(text)) => {
                let at_ns = flushlab_core::sys::monotonic_ns();
                let text = text.as_str();
                if let Some(count) = text.strip_prefix("render ").and_then(|n| n.parse().ok()) {
                    tell.tell(&Event::Render { count, at_ns });
                } else if let Some((count, rows)) = text
                    .strip_prefix("shot ")
                    .and_then(|shot| shot.split_once(' '))
                    .and_then(|(n, rows)| Some((n.parse().ok()?, serde_json::from_str(rows).ok()?)))
                {
                    tell.tell(&Event::Shot { count, at_ns, rows });
                }
            }
            Ok(Message::Close(_)) => return Ok(false),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {
                return Ok(true);
            }
            Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                return Ok(false);
            }
            Err(e) => return Err(e).context("reading from the page"),
        }
    }
}

/// Counts DEC 2026's begins and ends in the pty's reads, a sequence split between two reads
/// included.
#[derive(Default)]
struct SyncScan {
    tail: Vec<u8>,
}

const SYNC_BEGIN: &[u8] = b"\x1b[?2026h";
const SYNC_END: &[u8] = b"\x1b[?2026l";

impl SyncScan {
    fn scan(&mut self, bytes: &[u8]) -> (u32, u32) {
        let mut joined = std::mem::take(&mut self.tail);
        let carried = joined.len();
        joined.extend_from_slice(bytes);
        let count = |needle: &[u8]| {
            joined
                .windows(needle.len())
                .enumerate()
                // A sequence wholly in the carried tail was counted with the read before.
                .filter(|(at, w)| *w == needle && at + needle.len() > carried)
                .count() as u32
        };
        let counted = (count(SYNC_BEGIN), count(SYNC_END));
        let keep = joined.len().min(SYNC_BEGIN.len() - 1);
        self.tail = joined[joined.len() - keep..].to_vec();
        counted
    }
}

/// The trace's DrawFrames, and the page's marks with their names.
type Traced = (Vec<u64>, Vec<(String, u64)>);

/// Ends the trace and reads it: each DrawFrame (ns), and the page's marks (ns).
fn trace(browser: &DevTools) -> anyhow::Result<Traced> {
    browser.call(None, "Tracing.end", json!({}))?;
    let mut events: Vec<Value> = Vec::new();
    browser.wait_for_event(
        "Tracing.tracingComplete",
        Duration::from_secs(60),
        |event| {
            if event.get("method").and_then(Value::as_str) == Some("Tracing.dataCollected")
                && let Some(Value::Array(values)) = event["params"].get("value")
            {
                events.extend(values.iter().cloned());
            }
        },
    )?;
    let ns = |event: &Value| event["ts"].as_u64().map(|us| us * 1000);
    let mut frames: Vec<u64> = events
        .iter()
        .filter(|e| e["name"] == "DrawFrame")
        .filter_map(ns)
        .collect();
    frames.sort_unstable();
    let mut marks: Vec<(String, u64)> = events
        .iter()
        .filter(|e| e["cat"] == "blink.user_timing" && e["ph"] != "M")
        .filter_map(|e| Some((e["name"].as_str()?.to_owned(), ns(e)?)))
        .collect();
    marks.sort_by_key(|(_, at)| *at);
    Ok((frames, marks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sync_sequence_is_counted_once_even_when_split_between_reads() {
        let mut scan = SyncScan::default();
        assert_eq!(scan.scan(b"ab\x1b[?2026hcd\x1b[?20"), (1, 0));
        assert_eq!(scan.scan(b"26l"), (0, 1));
        assert_eq!(scan.scan(b"x"), (0, 0));
        assert_eq!(scan.scan(b"\x1b[?2026h\x1b[?2026l\x1b[?2026h"), (2, 1));
    }
}
