//! The summary wrap prints after a run, in words: what [`WrapReport`] and [`KeysReport`] hold,
//! said for a person. Nothing here measures or decides a figure.

use crate::report::wrap_report::{KeysReport, WrapReport, WriteScope};
use flushlab_core::detect::frames::{Confirmation, FrameMethod};
use flushlab_core::units::{bytes, count, printable, thousands};

impl KeysReport {
    /// The keys' lines of the summary.
    pub(crate) fn summary(&self) -> String {
        use flushlab_core::units::milliseconds;
        let typed = self.ready_by == crate::run::typing::ReadyBy::Typed;
        let mut out = format!(
            "
  keys: {} {}",
            thousands(self.sent),
            if typed { "typed" } else { "sent" }
        );
        if self.sent < self.in_script {
            out += &format!(
                " of {} in the script (cut: CMD or its terminal ended, or the duration ran out)",
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
        out += &self.how_answered();
        out
    }
}

impl KeysReport {
    /// The summary's words on keys with no answer or a shared one, and on a run whose keys
    /// never started or never settled.
    fn how_answered(&self) -> String {
        let k = &self.latencies;
        let mut out = String::new();
        if k.unanswered > 0 {
            let keys = if k.unanswered == 1 { "key" } else { "keys" };
            out += &format!("; {} {keys} had no visible answer", thousands(k.unanswered));
        }
        let coalesced = k.each.iter().filter(|e| e.coalesced).count() as u64;
        if coalesced > 0 {
            out += &format!(
                "; {} coalesced (read with the key before, answered by its frame)",
                thousands(coalesced)
            );
        }
        if self.started_after_ms.is_none() {
            out += "
  keys: CMD was never ready (never idle): no key was sent; try --keys-after";
        }
        if self.unsettled {
            out += &format!(
                "\n  keys: CMD did not settle within {} s after the last key (ended by wrap)",
                crate::run::watch::SETTLE_AT_MOST.as_secs()
            );
        }
        out
    }
}

/// A terminal run's pixels: key→last and key→first pixel, on a line of their own.
fn pixels_line(p: &flushlab_core::detect::keyed::PixelSummary) -> String {
    use flushlab_core::units::milliseconds;
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
    ) + &p.last_server.map_or(String::new(), |s| {
        format!(
            "
  key to last pixel by the X server's own stamps (taken as it drew, whole ms) p50 {} p95 {} \
             max {}: the rest is the report's way to wrap{}",
            milliseconds(s.p50),
            milliseconds(s.p95),
            milliseconds(s.max),
            p.server_gap.map_or(String::new(), |g| format!(
                " (a change's report reached wrap p50 {} after its stamp, max {})",
                milliseconds(g.p50),
                milliseconds(g.max)
            ))
        )
    })
}

/// The stages' line: each stage's p50 / p95 / max, and the one that dominates.
/// `(drained, staged)`: the keys whose drain is known, of those with stages.
fn stages_line(
    stages: &flushlab_core::detect::keyed::StageSummary,
    dominant: Option<flushlab_core::detect::keyed::Stage>,
    (drained, staged): (usize, usize),
) -> String {
    use flushlab_core::units::milliseconds;
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
                          preload cannot see (--observer kernel or ptrace sees every write), or the \
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
        if let Some(seen) = &self.seen {
            out += &seen.summary();
        }
        out += &self.asked_summary();
        if let Some(code) = self.exit_code.filter(|&c| c != 0) {
            // 128+N for a signal N (Linux's go up to 64); above, a status of the program's own
            // (ssh says 255 for a connection that failed or ended).
            let how = if (129..=128 + 64).contains(&code) {
                format!("was ended by signal {}", code - 128)
            } else {
                format!("exited with status {code}")
            };
            out += &format!("\n  {} {how}", printable(&self.writer.executable));
            if let Some(line) = &self.last_line {
                out += &format!("; its last line: {line}");
            }
        }
        out += &self.scope_summary();
        for d in &self.diagnoses {
            out += &format!("\n  {}: {}", d.code, d.message);
        }
        out
    }

    /// Where CMD's write(2) counts are not the terminal's alone, why, one line.
    fn scope_summary(&self) -> String {
        match self.write_scope {
            WriteScope::MoreThanTerminal { ratio } => format!(
                "\n  write(2) counts: CMD's processes wrote {}, {:.2}x what the terminal \
                 received (pipes or files besides it): no write(2) a frame",
                bytes(self.tree_bytes_written.unwrap_or(0) as f64),
                ratio
            ),
            WriteScope::LessThanTerminal { ratio } => format!(
                "\n  write(2) counts: CMD's processes wrote {:.2}x what the terminal \
                 received (a process's counters were lost): no write(2) a frame",
                ratio
            ),
            _ => String::new(),
        }
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
