//! What a run in a browser terminal (`wrap --terminal xtermjs`) adds to its report: which
//! renderer really drew, how the pty's output reached the page, and each key's way from its
//! frame's end to the compositor's frame — the WebSocket message that carried the frame's last
//! byte as the page received it, xterm.js's parse of it, its render, and the DrawFrame after —
//! all on one clock (the browser's trace is CLOCK_MONOTONIC), and whether xterm.js held each
//! synchronized-output block (DEC 2026) until its end.

use serde::Serialize;

use flushlab_core::detect::keyed::{KeyAnswer, Percentiles};
use flushlab_core::units::thousands;
use flushlab_terminals::browser::Renderer;
use flushlab_terminals::browser::protocol::BrowserRun;

/// How pty output becomes WebSocket messages here.
pub const TRANSPORT: &str =
    "each read of the pty (up to 64 KiB) is one WebSocket message, sent at once: no batching";

/// Headless Chromium's frame interval: it ticks at 60 Hz.
pub const FRAME_INTERVAL_MS: f64 = 1000.0 / 60.0;

#[derive(Clone, Debug, Serialize)]
pub struct BrowserReport {
    pub browser: String,
    pub xtermjs: &'static str,
    /// The renderer asked for, and the one that drew (`webgl`: canvases and no DOM rows).
    pub renderer: Renderer,
    pub drew: &'static str,
    /// WebGL's renderer string, as the page read it.
    pub gl: Option<String>,
    pub webgl_failed: Option<String>,
    pub transport: &'static str,
    /// WebSocket messages sent to the page in the run, and compositor frames drawn.
    pub messages: u64,
    pub draw_frames: u64,
    /// The browser's trace arrived whole (without it, no pixels).
    pub traced: bool,
    /// Chromium ran in its sandbox (as root it refuses one).
    pub sandboxed: bool,
    pub keys: Vec<BrowserKey>,
    /// The keys' time after their frame's end, through the page, stage by stage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages_ms: Option<PageStages>,
    /// Keys whose DrawFrame came within one frame interval of their render.
    pub within_a_frame: u64,
    pub sync_blocks: Vec<SyncBlock>,
}

/// A key's paint stage split at the page's marks (ms; p50, p95 and max over the keys with every
/// mark): the four add up to the time from the frame's end to its DrawFrame.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PageStages {
    /// The frame's end to the page's receipt of the message with its last byte: the pty's read,
    /// the host, the WebSocket.
    pub transport: Percentiles,
    /// To xterm.js's parse of it.
    pub parse: Percentiles,
    /// To xterm.js's render event: its wait for an animation frame, and the render.
    pub render: Percentiles,
    /// To the compositor's DrawFrame.
    pub draw: Percentiles,
}

impl PageStages {
    fn of(keys: &[BrowserKey]) -> Option<PageStages> {
        let ways: Vec<[f64; 5]> = keys
            .iter()
            .filter_map(|k| {
                Some([
                    k.frame_ms?,
                    k.message_ms?,
                    k.parsed_ms?,
                    k.render_ms?,
                    k.draw_frame_ms?,
                ])
            })
            .collect();
        let stage = |i: usize| Percentiles::of(ways.iter().map(|w| w[i + 1] - w[i]));
        Some(PageStages {
            transport: stage(0)?,
            parse: stage(1)?,
            render: stage(2)?,
            draw: stage(3)?,
        })
    }
}

/// One key's way through the page, ms after the key was sent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BrowserKey {
    /// WebSocket messages between this key and the next (its answer's pieces).
    pub messages: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_ms: Option<f64>,
    /// The page received the message that held its frame's last byte.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_ms: Option<f64>,
    /// xterm.js had parsed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parsed_ms: Option<f64>,
    /// xterm.js rendered after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub render_ms: Option<f64>,
    /// The compositor drew the frame after the render.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draw_frame_ms: Option<f64>,
}

/// A DEC 2026 block: the messages its begin and end came in, and the renders xterm.js made
/// after it parsed the begin and before the end arrived (held: none).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SyncBlock {
    pub begin_message: u64,
    pub end_message: u64,
    /// From the begin's parse to the end's arrival (ms).
    pub open_ms: f64,
    pub renders_inside: u64,
    pub held: bool,
}

/// The page's marks, by kind and number.
struct Marks<'a>(&'a [(String, u64)]);

impl Marks<'_> {
    fn of(&self, kind: &str, n: u64) -> Option<u64> {
        let name = format!("{kind} {n}");
        self.0.iter().find(|(m, _)| *m == name).map(|(_, at)| *at)
    }

    /// The renders' times, in order.
    fn renders(&self) -> impl Iterator<Item = u64> + '_ {
        self.0
            .iter()
            .filter(|(m, _)| m.starts_with("render "))
            .map(|(_, at)| *at)
    }
}

impl BrowserReport {
    pub(crate) fn of(run: &BrowserRun, keys: &[KeyAnswer]) -> BrowserReport {
        let marks = Marks(&run.marks);
        let each: Vec<BrowserKey> = keys
            .iter()
            .enumerate()
            .map(|(i, key)| {
                let until = keys.get(i + 1).map_or(u64::MAX, |k| k.sent_ns);
                key_way(run, &marks, key, until)
            })
            .collect();
        let within_a_frame = each
            .iter()
            .filter_map(|k| Some(k.draw_frame_ms? - k.render_ms?))
            .filter(|&gap| gap <= FRAME_INTERVAL_MS)
            .count() as u64;
        BrowserReport {
            browser: run.browser.clone(),
            xtermjs: flushlab_terminals::browser::package::version(),
            renderer: run.renderer.unwrap_or(Renderer::Dom),
            drew: run.drew.renderer(),
            gl: run.drew.gl.clone(),
            webgl_failed: run.drew.webgl_failed.clone(),
            transport: TRANSPORT,
            messages: run.sent.len() as u64,
            draw_frames: run.draw_frames_ns.len() as u64,
            traced: run.traced,
            sandboxed: run.sandboxed,
            within_a_frame,
            stages_ms: PageStages::of(&each),
            keys: each,
            sync_blocks: sync_blocks(run, &marks),
        }
    }

    /// The summary's lines.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "\n  browser: {} drew ({} asked{}); {}",
            self.drew,
            self.renderer.name(),
            self.gl
                .as_deref()
                .filter(|_| self.drew == "webgl")
                .map(|gl| format!(", WebGL on {}", flushlab_core::units::printable(gl)))
                .unwrap_or_default(),
            TRANSPORT
        );
        let messages: Vec<f64> = self.keys.iter().map(|k| k.messages as f64).collect();
        if let Some(m) = Percentiles::of(messages) {
            out += &format!(
                "\n  WebSocket messages a key p50 {} max {}; {} messages, {} compositor frames in the run",
                flushlab_core::units::count(m.p50),
                flushlab_core::units::count(m.max),
                thousands(self.messages),
                thousands(self.draw_frames)
            );
        }
        if let Some(stages) = self.stages_ms {
            out += &format!(
                "\n  paint through the page p50: transport {:.2} ms · parse {:.2} ms · render {:.2} ms (its animation frame) · DrawFrame {:.2} ms (max {:.2}); the DrawFrame within one frame ({:.1} ms) of the render on {} of {} keys",
                stages.transport.p50,
                stages.parse.p50,
                stages.render.p50,
                stages.draw.p50,
                stages.draw.max,
                FRAME_INTERVAL_MS,
                self.within_a_frame,
                self.keys.iter().filter(|k| k.render_ms.is_some()).count()
            );
        }
        if !self.sync_blocks.is_empty() {
            out += &format!(
                "\n  synchronized output (DEC 2026): xterm.js held {} of {} blocks until their end",
                self.sync_blocks.iter().filter(|b| b.held).count(),
                self.sync_blocks.len()
            );
        }
        if !self.traced {
            out += "\n  the browser's trace did not arrive: no DrawFrames, so no pixels";
        }
        out
    }
}

/// `key`'s way through the page, its answer's messages those sent before `until`.
fn key_way(run: &BrowserRun, marks: &Marks<'_>, key: &KeyAnswer, until: u64) -> BrowserKey {
    let ms = |at: u64| (at as f64 - key.sent_ns as f64) / 1e6;
    let answer: Vec<&(u64, u64, u64, u32, u32)> = run
        .sent
        .iter()
        .filter(|(_, at, ..)| (key.sent_ns..until).contains(at))
        .collect();
    // The frame's last byte is in the first read after the frame ended; or in the last before
    // it, where the read woke as the bytes landed, before CMD's write(2) returned. Without a
    // frame seen from inside: the answer's last message.
    let last = match key.frame_end_ns() {
        Some(end) => answer
            .iter()
            .find(|(_, at, ..)| *at >= end)
            .or_else(|| answer.iter().rev().find(|(_, at, ..)| *at < end)),
        None => answer.last(),
    };
    let seq = last.map(|(seq, ..)| *seq);
    let message = seq.and_then(|n| marks.of("message", n));
    let parsed = seq.and_then(|n| marks.of("parsed", n));
    let render = parsed.and_then(|p| marks.renders().find(|&r| r >= p));
    let draw = render.and_then(|r| run.draw_frames_ns.iter().copied().find(|&d| d >= r));
    BrowserKey {
        messages: answer.len() as u64,
        frame_ms: key.frame_ms,
        message_ms: message.map(ms),
        parsed_ms: parsed.map(ms),
        render_ms: render.map(ms),
        draw_frame_ms: draw.map(ms),
    }
}

/// Each DEC 2026 block of the run, from its begin's message to its end's.
fn sync_blocks(run: &BrowserRun, marks: &Marks<'_>) -> Vec<SyncBlock> {
    let mut blocks = Vec::new();
    let mut open: Option<u64> = None;
    for &(seq, _, _, begins, ends) in &run.sent {
        if begins > 0 && open.is_none() {
            open = Some(seq);
        }
        if ends > 0
            && let Some(begin) = open.take()
        {
            let from = marks.of("parsed", begin);
            let to = marks.of("message", seq);
            let renders_inside = match (from, to) {
                (Some(from), Some(to)) => {
                    marks.renders().filter(|&r| r > from && r < to).count() as u64
                }
                _ => 0,
            };
            blocks.push(SyncBlock {
                begin_message: begin,
                end_message: seq,
                open_ms: match (from, to) {
                    (Some(from), Some(to)) => (to.saturating_sub(from)) as f64 / 1e6,
                    _ => 0.0,
                },
                renders_inside,
                held: renders_inside == 0,
            });
            // A begin after the end, in the same message, opens the next block.
            if begins > ends {
                open = Some(seq);
            }
        }
    }
    blocks
}
