//! What `wrap` and its browser terminal (`flushlab xtermjs-host`) say to each other: orders on
//! the host's stdin, events on its stdout, one JSON object a line, every time on
//! CLOCK_MONOTONIC ns (the browser's trace is on the same clock).

use serde::{Deserialize, Serialize};

/// wrap → host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "order", rename_all = "snake_case")]
pub enum Order {
    /// Dispatch these DevTools `Input.dispatchKeyEvent`s, in order, to the page.
    Key { events: Vec<serde_json::Value> },
    /// The run is over: end the trace and send what it holds, then [`Event::Ended`].
    End,
}

/// Which renderer drew, as the page found it after it opened the terminal.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Drew {
    /// Canvases in the terminal's screen (WebGL draws on canvases).
    pub canvases: u32,
    /// Whether the DOM renderer's rows are in the page.
    pub dom_rows: bool,
    /// WebGL's renderer string, as a page would read it (SwiftShader here).
    pub gl: Option<String>,
    /// Why the WebGL addon could not load, where it could not.
    pub webgl_failed: Option<String>,
}

impl Drew {
    /// `webgl` when WebGL drew (its canvases, no DOM rows), `dom` when the DOM renderer did.
    pub fn renderer(&self) -> &'static str {
        match (self.canvases > 0, self.dom_rows) {
            (true, false) => "webgl",
            (false, true) => "dom",
            _ => "unknown",
        }
    }
}

/// host → wrap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The page is open, its WebSocket connected, the trace recording; the browser's version,
    /// and whether it runs in its sandbox (not as root: it refuses one there).
    Ready {
        drew: Drew,
        browser: String,
        sandboxed: bool,
    },
    /// The page says xterm.js rendered (its `render` count), as the message arrived here.
    Render { count: u64, at_ns: u64 },
    /// With the camera: the rows the DOM renderer showed after render `count`, as text.
    Shot {
        count: u64,
        at_ns: u64,
        rows: Vec<String>,
    },
    /// A read of the pty went to the page as WebSocket message `seq`, with the DEC 2026 begins
    /// (`ESC[?2026h`) and ends (`ESC[?2026l`) it holds.
    Sent {
        seq: u64,
        at_ns: u64,
        bytes: u64,
        sync_begins: u32,
        sync_ends: u32,
    },
    /// From the browser's trace: each compositor frame drawn, and the page's marks (`message N`,
    /// `parsed N`, `render N`).
    Trace {
        draw_frames_ns: Vec<u64>,
        marks: Vec<(String, u64)>,
    },
    /// Nothing more follows.
    Ended,
    /// The host cannot go on: why.
    Failed { why: String },
}

/// What the host told of the run, for its report.
#[derive(Clone, Debug, Default)]
pub struct BrowserRun {
    pub renderer: Option<super::Renderer>,
    pub drew: Drew,
    pub browser: String,
    /// Each WebSocket message: its number, when the host sent it, its bytes, the DEC 2026
    /// begins and ends it held.
    pub sent: Vec<(u64, u64, u64, u32, u32)>,
    /// Each compositor frame (DrawFrame), ns.
    pub draw_frames_ns: Vec<u64>,
    /// The page's marks (`message N`, `parsed N`, `render N`), ns.
    pub marks: Vec<(String, u64)>,
    /// The trace arrived whole.
    pub traced: bool,
    /// Chromium ran in its sandbox (not as root).
    pub sandboxed: bool,
}
