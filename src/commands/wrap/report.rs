//! What wrap measured, as the `--report` JSON and the summary printed after the run.

use serde::Serialize;

use super::args::WrapArgs;
use super::diagnose::{Diagnosis, Evidence, diagnose};
use super::inside::InsideReport;
use super::running::{KeysRun, Measured};
use super::tree::Writer;
use crate::accounting::IoCounters;
use crate::detect::frames::{Confirmation, FrameMethod, Frames};
use crate::detect::keyed::KeyLatencies;
use crate::detect::timeline::Timeline;
use crate::figures::{Figures, PerSecond, WrapRun};
use crate::meters::CpuTimes;
use crate::units::{bytes, count, printable, thousands};

/// Whether the tree's write(2) counts are the terminal's.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "scope")]
pub enum WriteScope {
    /// The bytes CMD's processes wrote are the bytes the terminal received (within 5%, the
    /// pty's own `\r` before each `\n` allowed for): every figure per write stands.
    Terminal,
    /// They wrote `ratio` times what the terminal received (pipes between them, a log file, an
    /// eventfd): their counts are given, no figure per frame is derived from them.
    MoreThanTerminal { ratio: f64 },
    /// They wrote less than the terminal received: counters lost (a process wrap could not
    /// reap). Given, not used.
    LessThanTerminal { ratio: f64 },
    /// The kernel keeps no counters here.
    Unavailable,
}

impl WriteScope {
    /// `written` by the tree against `received` by the terminal, of which `newlines` may have
    /// been written as bare `\n` (the pty adds the `\r`).
    pub fn of(written: Option<IoCounters>, received: u64, newlines: u64) -> WriteScope {
        let Some(written) = written else {
            return WriteScope::Unavailable;
        };
        let (low, high) = (received.saturating_sub(newlines) as f64, received as f64);
        let wrote = written.bytes as f64;
        let ratio = wrote / high.max(1.0);
        if wrote > high * 1.05 + 64.0 {
            WriteScope::MoreThanTerminal { ratio }
        } else if wrote < low * 0.95 - 64.0 {
            WriteScope::LessThanTerminal { ratio }
        } else {
            WriteScope::Terminal
        }
    }
}

/// The `--report` JSON.
#[derive(Clone, Debug, Serialize)]
pub struct WrapReport {
    pub version: &'static str,
    /// The CPU's model, as the kernel names it: what a stored run (`--against run.json`) is
    /// held against.
    pub machine: Option<String>,
    pub command: Vec<String>,
    pub cols: u16,
    pub rows: u16,
    pub reader: String,
    pub seconds: f64,
    /// CMD's exit status (128+N when a signal ended it); `null` when wrap ended it.
    pub exit_code: Option<i32>,
    /// The last line CMD wrote, escape sequences taken out and control characters escaped: what
    /// a program that failed at once said.
    pub last_line: Option<String>,
    #[serde(flatten)]
    pub run: WrapRun,
    /// write(2) calls and bytes of CMD's whole process tree, to any fd (the kernel's
    /// counters, the observer's own records taken off); `null` where the kernel keeps none.
    /// Without the observer's view, `write_scope` says whether they are the terminal's.
    pub tree_write_calls: Option<u64>,
    pub tree_bytes_written: Option<u64>,
    /// write(2) calls and bytes that went to the terminal, seen from inside CMD (as the program
    /// made them; under `--try frame`, as they went out held); `null` where the observer did not
    /// see them all. The per-frame figures use these where they are given, else the tree's.
    pub terminal_write_calls: Option<u64>,
    pub terminal_bytes_written: Option<u64>,
    pub write_scope: WriteScope,
    pub frame_method: FrameMethod,
    /// How the frames were found, with the evidence for and against.
    pub frame_detection: Frames,
    pub sync_begins: u64,
    pub sync_ends: u64,
    /// The share of samples in which CMD's tree was asleep in write(2) on the terminal.
    pub blocked_share: Option<f64>,
    /// The process that wrote the most, and what wrap takes it to be written in.
    pub writer: Writer,
    pub diagnoses: Vec<Diagnosis>,
    /// What the observer saw from inside CMD, and whether the figures come from it; `null`
    /// with `--no-observer`.
    pub inside: Option<super::inside::InsideReport>,
    /// FNV-1a of every byte the terminal received, in hex.
    pub received_digest: String,
    /// Headless: what CMD asked the terminal, and what wrap told it.
    pub asked: Vec<super::terminal::Exchange>,
    /// `--keys`: each key, its answer, and their percentiles.
    pub keys: Option<KeysReport>,
}

/// The keys of a run and what they cost.
#[derive(Clone, Debug, Serialize)]
pub struct KeysReport {
    pub script: String,
    /// Keys in the script, and sent (fewer when CMD exited or the duration ended first).
    pub in_script: u64,
    pub sent: u64,
    /// When the first key went, after CMD started; `null` if CMD was never ready.
    pub started_after_ms: Option<f64>,
    /// What told wrap CMD was ready: `idle` (every thread of it asleep) or `--keys-after`;
    /// `typed` for the keys a person typed (interactive; each named by kind only).
    pub ready_by: super::typing::ReadyBy,
    /// The keys were done and CMD did not settle (idle and silent for `watch::SETTLE`) within
    /// `watch::SETTLE_AT_MOST`.
    pub unsettled: bool,
    #[serde(flatten)]
    pub latencies: crate::detect::keyed::KeyLatencies,
}

impl KeysReport {
    /// The keys' lines of the summary.
    pub(super) fn summary(&self) -> String {
        use crate::units::milliseconds;
        let typed = self.ready_by == super::typing::ReadyBy::Typed;
        let mut out = format!(
            "
  keys: {} {}",
            thousands(self.sent),
            if typed { "typed" } else { "sent" }
        );
        if self.sent < self.in_script {
            out += &format!(
                " of {} in the script (cut: CMD ended or the duration ran out)",
                thousands(self.in_script)
            );
        }
        let k = &self.latencies;
        if let Some(p) = k.key_to_frame_ms {
            out += &format!(
                "; key to frame p50 {} p95 {} max {}",
                milliseconds(p.p50),
                milliseconds(p.p95),
                milliseconds(p.max)
            );
        }
        if let Some(p) = k.first_byte_ms {
            out += &format!(", to first byte p50 {}", milliseconds(p.p50));
        }
        if let Some(p) = k.pixels_ms {
            out += &pixels_line(&p);
        }
        if let Some(stages) = &k.stages_ms {
            let staged = k.each.iter().filter_map(|e| e.stages_ms.as_ref());
            let drained = staged.clone().filter(|s| s.drain.is_some()).count();
            let line = stages_line(stages, k.dominant_stage, (drained, staged.count()));
            out += &format!("\n  {line}");
        }
        let ends = match (k.frame_end_from_wait, k.frame_end_from_quiet_gap) {
            (_, 0) => "frames end where CMD next waited, seen from inside".to_owned(),
            (0, _) => {
                "frames end at the answer's last byte (a quiet gap: an upper bound)".to_owned()
            }
            (w, q) => format!(
                "{w} frames end where CMD next waited (inside), {q} at the answer's last byte"
            ),
        };
        out += &format!(
            "
  {ends}; a key: {} B",
            count(k.bytes_per_key)
        );
        if let Some(w) = k.writes_per_key {
            out += &format!(", {} write(2)", count(w));
        }
        if let Some(f) = k.frames {
            out += &format!(
                "
  frames: {} answered keys, {} unprompted ({}/s, never in a key's time), {} before the first key",
                thousands(f.answering),
                thousands(f.unprompted),
                count(f.unprompted_per_second),
                thousands(f.before_keys)
            );
        }
        if k.unanswered > 0 {
            let keys = if k.unanswered == 1 { "key" } else { "keys" };
            out += &format!("; {} {keys} had no visible answer", thousands(k.unanswered));
        }
        if self.started_after_ms.is_none() {
            out += "
  keys: CMD was never ready (never idle): no key was sent; try --keys-after";
        }
        if self.unsettled {
            out += &format!(
                "\n  keys: CMD did not settle within {} s after the last key (ended by wrap)",
                super::watch::SETTLE_AT_MOST.as_secs()
            );
        }
        out
    }
}

/// A terminal run's pixels: key→last and key→first pixel, on a line of their own.
fn pixels_line(p: &crate::detect::keyed::PixelSummary) -> String {
    use crate::units::milliseconds;
    format!(
        "
  key to last pixel p50 {} p95 {} max {}, to first pixel p50 {} p95 {} ({} window changes{})",
        milliseconds(p.last.p50),
        milliseconds(p.last.p95),
        milliseconds(p.last.max),
        milliseconds(p.first.p50),
        milliseconds(p.first.p95),
        thousands(p.changes),
        match p.unpainted {
            0 => String::new(),
            n => format!("; {} keys' frames changed no pixel", thousands(n)),
        }
    )
}

/// The stages' line: each stage's p50 / p95 / max, and the one that dominates.
/// `(drained, staged)`: the keys whose drain is known, of those with stages.
fn stages_line(
    stages: &crate::detect::keyed::StageSummary,
    dominant: Option<crate::detect::keyed::Stage>,
    (drained, staged): (usize, usize),
) -> String {
    use crate::units::milliseconds;
    let each: Vec<String> = stages
        .each()
        .map(|(stage, p)| {
            format!(
                "{} {} / {} / {}",
                stage.name(),
                milliseconds(p.p50),
                milliseconds(p.p95),
                milliseconds(p.max)
            )
        })
        .collect();
    let mut line = format!("stages p50 / p95 / max: {}", each.join(" · "));
    // A frame's last byte cannot be placed in what wrap read once bytes nobody saw written
    // came before it.
    const UNSEEN: &str = "the terminal got bytes the observer did not see written: writes the \
                          preload cannot see (--observer ptrace sees every write), or the \
                          terminal's own echo";
    if stages.drain.is_none() && stages.paint.is_none() {
        line += &format!(" · drain unknown ({UNSEEN})");
    } else if drained < staged && stages.paint.is_none() {
        line += &format!(" · drain over {drained} of {staged} keys ({UNSEEN})");
    }
    if let Some(stage) = dominant {
        line += &format!("; {} dominates", stage.name());
    }
    line
}

/// The figures a frame, when the frames are known; write(2) a frame only when the writes are
/// the terminal's: the stream's share a frame of them.
pub fn figures(
    frames: &Frames,
    seconds: f64,
    received: u64,
    writes: Option<IoCounters>,
    scope: WriteScope,
    cpu: CpuTimes,
) -> Option<Figures> {
    let (count, fps, per_frame) = (frames.frames?, frames.fps?, frames.bytes_per_frame?);
    let trusted = writes.filter(|_| scope == WriteScope::Terminal);
    let cpu_seconds = (cpu.user + cpu.kernel).as_secs_f64();
    Some(Figures {
        frames: count,
        seconds,
        fps,
        writes_per_frame: trusted
            .map(|io| io.write_calls as f64 * per_frame / received.max(1) as f64),
        bytes_per_frame: Some(per_frame),
        bytes_per_write: trusted
            .filter(|io| io.write_calls > 0)
            .map(|io| io.bytes as f64 / io.write_calls as f64),
        kernel_share: if cpu_seconds > 0.0 {
            cpu.kernel.as_secs_f64() / cpu_seconds
        } else {
            0.0
        },
        user_seconds: cpu.user.as_secs_f64(),
        kernel_seconds: cpu.kernel.as_secs_f64(),
        // Another program's threads are not flushlab's to time.
        time_split: None,
    })
}

/// The last line of text in `tail` (a program's last output bytes): escape sequences taken out,
/// control characters escaped, 200 characters at most; `None` when there is no text.
pub fn last_line(tail: &[u8]) -> Option<String> {
    let mut text = Vec::with_capacity(tail.len());
    let mut bytes = tail.iter().copied().peekable();
    while let Some(b) = bytes.next() {
        if b != 0x1b {
            text.push(b);
            continue;
        }
        match bytes.next() {
            // CSI: parameters up to a final byte.
            Some(b'[') => while bytes.next().is_some_and(|c| !(0x40..=0x7e).contains(&c)) {},
            // OSC, DCS: up to BEL or ESC \.
            Some(b']' | b'P') => {
                while let Some(c) = bytes.next() {
                    if c == 0x07 || (c == 0x1b && bytes.next_if_eq(&b'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    let text = String::from_utf8_lossy(&text);
    let line = text
        .split(['\n', '\r'])
        .map(str::trim)
        .rfind(|l| !l.is_empty())?;
    Some(crate::units::one_line(
        &line.chars().take(200).collect::<String>(),
    ))
}

impl WrapReport {
    /// The summary printed after the run.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "wrap {}: {} in {:.2} s ({}/s), ",
            printable(&self.command.join(" ")),
            bytes(self.run.bytes as f64),
            self.seconds,
            bytes(self.run.per_second.bytes_per_second),
        );
        // The terminal's count where the observer saw it, else the tree's (as the rate is).
        let calls = self.terminal_write_calls.or(self.tree_write_calls);
        out += &match (calls, self.run.per_second.writes_per_second) {
            (Some(w), Some(rate)) => format!("{} write(2) ({}/s)", count(w as f64), count(rate)),
            _ => "write(2) n/a".to_owned(),
        };
        let detection = &self.frame_detection;
        out += &match &self.run.figures {
            Some(f) => format!(
                "; {} frames ({}) = {} fps, {} a frame{}",
                thousands(f.frames),
                self.method_text(),
                count(f.fps),
                f.bytes_per_frame.map_or("n/a".into(), bytes),
                f.writes_per_frame.map_or(String::new(), |w| format!(
                    ", {} write(2) a frame",
                    count(w)
                )),
            ),
            // Known frames without a rate: every frame read at once (a short run that drew
            // them all in one write), so no time lies between them to divide by.
            None if let Some(frames) = detection.frames => format!(
                "; {} frames ({}), read all at once: no frame rate, per second only",
                thousands(frames),
                self.method_text(),
            ),
            None if detection.cursor_restarts > 0 => format!(
                "; frames unknown ({} cursor restarts, nothing confirmed them): per second only",
                thousands(detection.cursor_restarts)
            ),
            None => "; frames unknown (no sync markers, no frame drawn over another): per second \
                     only"
                .to_owned(),
        };
        if let Some(inside) = &self.inside {
            out += &inside.summary();
        }
        if let Some(keys) = &self.keys {
            out += &keys.summary();
        }
        out += &self.asked_summary();
        if let Some(code) = self.exit_code.filter(|&c| c != 0) {
            let how = if code > 128 {
                format!("was ended by signal {}", code - 128)
            } else {
                format!("exited with status {code}")
            };
            out += &format!("\n  {} {how}", printable(&self.writer.executable));
            if let Some(line) = &self.last_line {
                out += &format!("; its last line: {line}");
            }
        }
        match self.write_scope {
            WriteScope::MoreThanTerminal { ratio } => {
                out += &format!(
                    "\n  write(2) counts: CMD's processes wrote {}, {:.2}x what the terminal \
                     received (pipes or files besides it): no write(2) a frame",
                    bytes(self.tree_bytes_written.unwrap_or(0) as f64),
                    ratio
                );
            }
            WriteScope::LessThanTerminal { ratio } => {
                out += &format!(
                    "\n  write(2) counts: CMD's processes wrote {:.2}x what the terminal \
                     received (a process's counters were lost): no write(2) a frame",
                    ratio
                );
            }
            _ => {}
        }
        for d in &self.diagnoses {
            out += &format!("\n  {}: {}", d.code, d.message);
        }
        out
    }

    /// What CMD asked the terminal and what it was told, one line.
    fn asked_summary(&self) -> String {
        let mut out = String::new();
        let told: Vec<String> = self
            .asked
            .iter()
            .map(|e| match (&e.told, e.unanswered) {
                (Some(told), _) => format!("{} ×{} told {}", e.asked, e.times, told),
                (None, why) => format!(
                    "{} ×{} not answered ({})",
                    e.asked,
                    e.times,
                    why.unwrap_or("unknown")
                ),
            })
            .collect();
        if !told.is_empty() {
            out += &format!(
                "
  CMD asked the terminal: {}",
                told.join("; ")
            );
        }
        out
    }

    fn method_text(&self) -> String {
        match self.frame_method {
            FrameMethod::SyncMarkers => "sync markers".to_owned(),
            FrameMethod::Waits => "between CMD's waits, seen from inside".to_owned(),
            FrameMethod::CursorRestarts => {
                let by: Vec<String> = self
                    .frame_detection
                    .confirmed_by
                    .iter()
                    .map(|c| match c {
                        Confirmation::Sequence(s) => format!("{s} once a frame"),
                        Confirmation::Pauses => "a pause before each".to_owned(),
                    })
                    .collect();
                format!("cursor restarts, confirmed by {}", by.join(" and "))
            }
            FrameMethod::Unknown => "unknown".to_owned(),
        }
    }
}

impl WrapReport {
    /// Every field of the report from what was measured, in one place.
    #[allow(clippy::too_many_lines)]
    pub(super) fn of(args: &WrapArgs, m: Measured, timeline: &Timeline) -> WrapReport {
        let frames = m.finder.frames();
        // What the kernel counted for CMD's tree, without the observers' own records.
        let io = match (&m.inside, m.io) {
            (Some(inside), Some(io)) => Some(IoCounters {
                write_calls: io.write_calls.saturating_sub(inside.own_writes.write_calls),
                bytes: io.bytes.saturating_sub(inside.own_writes.bytes),
            }),
            (_, io) => io,
        };
        let m = Measured { io, ..m };
        // The observer's counts, where it saw every terminal write, are the terminal's alone; the
        // kernel's are the whole tree's, pipes and files included.
        let inside_io = m.inside.as_ref().and_then(InsideReport::terminal_io);
        let scope = match inside_io {
            Some(_) => WriteScope::Terminal,
            None => WriteScope::of(m.io, m.finder.bytes, m.finder.newlines),
        };
        let counted = inside_io.or(m.io);
        let figures = figures(&frames, m.seconds, m.finder.bytes, counted, scope, m.cpu);
        let mut writer = m.tree.writer();
        // A CMD that ended at once leaves wrap's `setsid` the only writer seen: named as CMD.
        if writer.executable.is_empty() || writer.executable.ends_with("/setsid") {
            writer.executable = m.program.clone();
        }
        let trusted = counted.filter(|_| scope == WriteScope::Terminal);
        let keys = m.keys.map(|k| {
            let latencies = crate::detect::keyed::key_latencies(timeline);
            KeysReport::of(k, timeline, latencies)
        });
        let diagnoses = diagnose(&Evidence {
            writes: trusted,
            frames: &frames,
            writes_per_frame: figures.and_then(|f| f.writes_per_frame),
            writes_per_second: trusted.map(|io| io.write_calls as f64 / m.seconds.max(1e-9)),
            bytes: m.finder.bytes,
            sync_begins: m.finder.sync().begins(),
            sync_pairs: m.finder.sync().pairs(),
            sync_open: m.finder.sync().open(),
            exited_by_itself: m.exit_code.is_some(),
            blocked_share: m.tree.blocked_share(),
            terminal_syncs: m.terminal_syncs,
            writer: &writer,
            cpu_ms_per_frame: figures.and_then(|f| f.cpu_ms_per_frame()),
            cells: u64::from(m.size.0) * u64::from(m.size.1),
            keys: keys.as_ref().map(|k| &k.latencies),
        });
        let per = |x: u64| x as f64 / m.seconds.max(1e-9);
        WrapReport {
            version: env!("CARGO_PKG_VERSION"),
            machine: crate::sys::process::cpu_model(),
            command: args.command_words(),
            cols: m.size.0,
            rows: m.size.1,
            reader: m.reader.to_string(),
            seconds: m.seconds,
            exit_code: m.exit_code,
            last_line: last_line(m.finder.tail()),
            run: WrapRun {
                bytes: m.finder.bytes,
                per_second: PerSecond {
                    bytes_per_second: per(m.finder.bytes),
                    writes_per_second: counted.map(|io| per(io.write_calls)),
                },
                figures,
                peak_rss_kib: crate::sys::peak_rss_kib(crate::sys::Usage::Children),
            },
            tree_write_calls: m.io.map(|io| io.write_calls),
            tree_bytes_written: m.io.map(|io| io.bytes),
            terminal_write_calls: inside_io.map(|io| io.write_calls),
            terminal_bytes_written: inside_io.map(|io| io.bytes),
            write_scope: scope,
            frame_method: frames.method,
            sync_begins: m.finder.sync().begins(),
            sync_ends: m.finder.sync().ends(),
            blocked_share: m.tree.blocked_share(),
            writer,
            diagnoses,
            frame_detection: frames,
            inside: m.inside,
            keys,
            asked: m.exchanges,
            received_digest: format!("{:016x}", m.finder.digest),
        }
    }
}

impl KeysReport {
    /// The keys' part of a report: how the run went with them, and every key's answer on the
    /// run's timeline (`latencies`, a terminal's pixels added where it was one).
    pub(super) fn of(run: KeysRun, timeline: &Timeline, latencies: KeyLatencies) -> KeysReport {
        KeysReport {
            script: run.script,
            in_script: run.in_script,
            sent: timeline.keys.len() as u64,
            started_after_ms: run.started_after.map(|d| d.as_secs_f64() * 1e3),
            ready_by: run.ready_by,
            unsettled: run.unsettled,
            latencies,
        }
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
