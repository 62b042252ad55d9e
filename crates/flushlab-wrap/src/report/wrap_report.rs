//! What wrap measured, as data: the `--report` JSON (`WrapReport`, `KeysReport`), each field
//! made in one place (`of`) from what the run measured and its timeline. The words printed
//! after the run are `summary.rs`'s.

use serde::Serialize;

use crate::observers::inside_report::InsideReport;
use crate::plan::Plan;
use crate::report::diagnose::{Diagnosis, Evidence, diagnose};
use crate::run::running::Measured;
use crate::run::tree::Writer;
use crate::run::typing::KeysRun;
use flushlab_core::accounting::IoCounters;
use flushlab_core::detect::frames::{FrameMethod, Frames};
use flushlab_core::detect::keyed::KeyLatencies;
use flushlab_core::detect::timeline::Timeline;
use flushlab_core::figures::{Figures, PerSecond, WrapRun};
use flushlab_core::meters::CpuTimes;

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
    pub inside: Option<crate::observers::inside_report::InsideReport>,
    /// FNV-1a of every byte the terminal received, in hex.
    pub received_digest: String,
    /// Headless: what CMD asked the terminal, and what wrap told it.
    pub asked: Vec<crate::run::answers::Exchange>,
    /// `--keys`: each key, its answer, and their percentiles.
    pub keys: Option<KeysReport>,
    /// `--via`: the wire, and each key's frame at its near end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<crate::via::ViaReport>,
    /// What a person saw of each key's answer, from the terminal model (`--paint`); `null`
    /// without keys, with `--paint off`, or where wrap does not read the terminal's bytes.
    pub seen: Option<crate::report::seen_report::SeenReport>,
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
    pub ready_by: crate::run::typing::ReadyBy,
    /// The keys were done and CMD did not settle (idle and silent for `watch::SETTLE`) within
    /// `watch::SETTLE_AT_MOST`.
    pub unsettled: bool,
    #[serde(flatten)]
    pub latencies: flushlab_core::detect::keyed::KeyLatencies,
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
    // A frame's bytes and the whole in one unit: the observer's bursts (frames from waits, every
    // write seen) count bytes as written, the terminal's arrivals with the `\r` its ONLCR adds
    // before each `\n` (a row a write read 57 write(2)s a frame where the program made 60).
    let whole = |io: &IoCounters| match frames.method {
        FrameMethod::Waits => io.bytes,
        _ => received,
    };
    let cpu_seconds = (cpu.user + cpu.kernel).as_secs_f64();
    Some(Figures {
        frames: count,
        seconds,
        fps,
        writes_per_frame: trusted
            .map(|io| io.write_calls as f64 * per_frame / whole(&io).max(1) as f64),
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
    Some(flushlab_core::units::one_line(
        &line.chars().take(200).collect::<String>(),
    ))
}

impl WrapReport {
    /// Every field of the report from what was measured, in one place.
    /// `transcript`: every byte read, for the terminal model (taken out of `m` by the caller,
    /// who may film a key with it too).
    pub(crate) fn of(
        plan: &Plan,
        m: Measured,
        (timeline, transcript): (&Timeline, Option<&flushlab_core::seen::Transcript>),
    ) -> WrapReport {
        let frames = m.finder.frames();
        // What the kernel counted for CMD's tree, without the observers' own records.
        let io = match (&m.inside, m.io) {
            (Some(inside), Some(io)) => Some(IoCounters {
                write_calls: io.write_calls.saturating_sub(inside.own_writes.write_calls),
                bytes: io.bytes.saturating_sub(inside.own_writes.bytes),
            }),
            (_, io) => io,
        };
        let mut m = Measured { io, ..m };
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
        let keys = m.keys.take().map(|k| {
            let latencies = flushlab_core::detect::keyed::key_latencies(timeline);
            KeysReport::of(k, timeline, latencies)
        });
        let seen = crate::report::seen_report::SeenReport::of_run(
            plan.paint,
            (m.size, transcript),
            (
                keys.as_ref().map(|k| &k.latencies.each[..]),
                timeline.end_ns,
            ),
        );
        let over_a_wire = plan.via.is_some();
        let diagnoses = diagnoses_of(
            over_a_wire,
            &m,
            (&frames, figures),
            (trusted, &writer, keys.as_ref()),
        );
        let per = |x: u64| x as f64 / m.seconds.max(1e-9);
        let tree_io = m.io.filter(|_| !over_a_wire);
        WrapReport {
            version: env!("CARGO_PKG_VERSION"),
            machine: flushlab_core::sys::process::cpu_model(),
            command: plan.cmd.words_text(),
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
                peak_rss_kib: flushlab_core::sys::peak_rss_kib(flushlab_core::sys::Usage::Children),
            },
            // Over a wire, wrap's descendants are the ssh client and sshd too: no count of CMD's.
            tree_write_calls: tree_io.map(|io| io.write_calls),
            tree_bytes_written: tree_io.map(|io| io.bytes),
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
            via: None,
            seen,
            asked: m.exchanges,
            received_digest: format!("{:016x}", m.finder.digest),
        }
    }
}

/// What the run says of itself to the diagnoses: its counts (`trusted`: the terminal's alone),
/// frames, figures, writer and keys; `over_a_wire`, whether CMD ran at the far end of `--via`.
fn diagnoses_of(
    over_a_wire: bool,
    m: &Measured,
    (frames, figures): (&Frames, Option<Figures>),
    (trusted, writer, keys): (Option<IoCounters>, &Writer, Option<&KeysReport>),
) -> Vec<Diagnosis> {
    diagnose(&Evidence {
        writes: trusted,
        frames,
        writes_per_frame: figures.and_then(|f| f.writes_per_frame),
        writes_per_second: trusted.map(|io| io.write_calls as f64 / m.seconds.max(1e-9)),
        sync_begins: m.finder.sync().begins(),
        sync_pairs: m.finder.sync().pairs(),
        sync_open: m.finder.sync().open(),
        exited_by_itself: m.exit_code.is_some(),
        blocked_share: m.tree.blocked_share(),
        terminal_syncs: m.terminal_syncs,
        writer,
        // Over a wire, the CPU is all wrap started (the ssh client, sshd, CMD): not CMD's.
        cpu_ms_per_frame: figures
            .and_then(|f| f.cpu_ms_per_frame())
            .filter(|_| !over_a_wire),
        cells: u64::from(m.size.0) * u64::from(m.size.1),
        keys: keys.map(|k| &k.latencies),
    })
}

impl KeysReport {
    /// The keys' part of a report: how the run went with them, and every key's answer on the
    /// run's timeline (`latencies`, a terminal's pixels added where it was one).
    pub(crate) fn of(run: KeysRun, timeline: &Timeline, latencies: KeyLatencies) -> KeysReport {
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
#[path = "wrap_report_tests.rs"]
mod tests;
