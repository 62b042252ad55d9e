//! `flushlab profile`: what a samply profile of a headless run says, without a browser.
//!
//! Reads the Firefox Profiler JSON that `samply record --save-only` writes (gzipped or not) and
//! the symbol side file `--unstable-presymbolicate` writes beside it, attributes every sample
//! of the flushlab process to one share (the innermost frame that names a known part wins), and
//! reports the shares and the top functions by self time. A profile `wrap --profile` recorded
//! is also read by key (`key_stages.rs`): the functions inside the keys' processing and emit spans.

mod key_stages;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use serde::Deserialize;
use serde::Serialize;

pub use flushlab_core::samply::TopFunction;
use flushlab_core::samply::{Lib, Symbols, Thread, ranked, read_profile};

use flushlab_core::files::{InputKind, read_input, sibling};
use flushlab_core::units::percent;

const PROFILEARGS_EXAMPLES: &str = "\
Examples:
  scripts/record-profiles.sh --lower-paranoid stderr/raw stdout/frame
  flushlab profile profiles/stderr-raw.json.gz profiles/stdout-frame.json.gz";

#[derive(Debug, Args)]
#[command(after_help = PROFILEARGS_EXAMPLES)]
pub struct ProfileArgs {
    /// samply profiles (`.json.gz` or `.json`), e.g. profiles/*.json.gz
    #[arg(required = true, value_name = "PROFILE")]
    pub profiles: Vec<PathBuf>,

    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,

    /// How many functions to list by self time.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
}

/// Where a sample's time went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Share {
    /// In write(2) (libc's wrapper, the kernel below it).
    Write,
    /// In the writer stack: std's buffers and handles, flushlab's frame writers.
    Writer,
    /// In ratatui and crossterm: widgets, the diff, the escape-sequence encoding (core::fmt).
    Ratatui,
    /// In flushlab's scene painter.
    Scene,
    Other,
}

/// Classifies one frame's function name, if it names a known part.
fn share_of(function: &str, lib: &str) -> Option<Share> {
    let bare = function
        .trim_start_matches('_')
        .trim_start_matches("GI_")
        .trim_start_matches('_');
    if lib.contains("kernel")
        || matches!(bare, "write" | "libc_write" | "writev" | "write_nocancel")
    {
        return Some(Share::Write);
    }
    const WRITER: [&str; 9] = [
        "flushlab_core::frame_writer",
        "flushlab_core::writer_mode",
        "std::io::buffered",
        "LineWriter",
        "BufWriter",
        "std::io::stdio",
        "<std::fs::File as std::io::Write>",
        "std::io::Write::write_all",
        "std::sys::fd",
    ];
    const RATATUI: [&str; 6] = [
        "ratatui",
        "crossterm",
        "core::fmt",
        "compact_str",
        "unicode_width",
        "unicode_segmentation",
    ];
    if WRITER.iter().any(|w| function.contains(w)) {
        Some(Share::Writer)
    } else if RATATUI.iter().any(|r| function.contains(r)) {
        Some(Share::Ratatui)
    } else if function.contains("flushlab_core::scene") {
        Some(Share::Scene)
    } else {
        None
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Digest {
    pub file: String,
    /// From the run's report beside the profile, when there is one.
    pub mode: Option<String>,
    pub frames: Option<u64>,
    pub samples: u64,
    pub cpu_seconds: f64,
    pub samples_per_frame: Option<f64>,
    /// Shares of the samples, 0..=1.
    pub write_share: f64,
    pub writer_share: f64,
    pub ratatui_share: f64,
    pub scene_share: f64,
    pub other_share: f64,
    pub top: Vec<TopFunction>,
    /// A `wrap --profile` recording: what ran inside the keys' stages.
    pub keys: Option<key_stages::KeyDigest>,
}

/// The two figures the digest takes from the run's report recorded beside a profile.
#[derive(Deserialize)]
struct RunReport {
    mode: Option<String>,
    frames: Option<u64>,
}

/// Every stack's share: its innermost frame that names a known part. Computed once per
/// stack from its prefix's (an earlier stack), so the cost is linear in the tables however
/// deep the stacks are, and every frame's name is classified once.
fn stack_shares(thread: &Thread, libs: &[Lib], symbols: &Symbols) -> Vec<Share> {
    let mut frame_share: Vec<Option<Option<Share>>> = vec![None; thread.frames()];
    let mut shares: Vec<Share> = Vec::with_capacity(thread.stack_table.frame.len());
    for (stack, &frame) in thread.stack_table.frame.iter().enumerate() {
        let frame = frame as usize;
        let own = *frame_share[frame].get_or_insert_with(|| {
            let (name, lib) = thread.name_of(frame, libs, symbols);
            share_of(name, lib)
        });
        let share = own.unwrap_or_else(|| match thread.stack_table.prefix[stack] {
            Some(parent) => shares[parent as usize],
            None => Share::Other,
        });
        shares.push(share);
    }
    shares
}

pub fn digest(path: &Path, top: usize) -> anyhow::Result<Digest> {
    let profile =
        read_profile(path).with_context(|| format!("reading profile {}", path.display()))?;
    let syms_path = sibling(path, ".syms.json", true);
    let symbols = if syms_path.exists() {
        Symbols::read(&syms_path)
            .with_context(|| format!("reading symbols {}", syms_path.display()))?
    } else {
        Symbols::default()
    };
    let report: Option<RunReport> =
        read_input(&sibling(path, ".report.json", false), InputKind::RunReport)
            .ok()
            .and_then(|bytes| flushlab_core::results::from_sent_json(&bytes).ok());

    let mut shares: HashMap<Share, f64> = HashMap::new();
    let mut self_time: HashMap<&str, f64> = HashMap::new();
    let mut total = 0.0;
    // flushlab's own modes; or, recorded by wrap --profile, the program whose keys are marked.
    let keyed = key_stages::digest(&profile, &symbols, top);
    let process = keyed
        .as_ref()
        .map_or(Some("flushlab"), |k| k.process.as_deref());
    let threads = profile
        .threads
        .iter()
        .filter(|t| t.process_name.as_deref() == process);
    for thread in threads {
        let stack_shares = stack_shares(thread, &profile.libs, &symbols);
        let mut leaf_time: HashMap<u32, f64> = HashMap::new();
        for (i, stack) in thread.samples.stack.iter().enumerate() {
            let Some(stack) = *stack else { continue };
            let weight = thread.samples.weight_of(i);
            total += weight;
            *leaf_time
                .entry(thread.stack_table.frame[stack as usize])
                .or_default() += weight;
            *shares.entry(stack_shares[stack as usize]).or_default() += weight;
        }
        for (frame, weight) in leaf_time {
            let (name, _) = thread.name_of(frame as usize, &profile.libs, &symbols);
            *self_time.entry(name).or_default() += weight;
        }
    }
    if total == 0.0 {
        bail!(
            "{} has no samples of a flushlab process (nor keys marked by wrap --profile)",
            path.display()
        );
    }
    let share = |s: Share| shares.get(&s).copied().unwrap_or(0.0) / total;
    let (mode, frames) = report.map_or((None, None), |r| (r.mode, r.frames));
    Ok(Digest {
        file: path.display().to_string(),
        mode,
        frames,
        samples: total as u64,
        cpu_seconds: total * profile.meta.interval / 1000.0,
        samples_per_frame: frames.filter(|f| *f > 0).map(|f| total / f as f64),
        write_share: share(Share::Write),
        writer_share: share(Share::Writer),
        ratatui_share: share(Share::Ratatui),
        scene_share: share(Share::Scene),
        other_share: share(Share::Other),
        top: ranked(self_time, total, top),
        keys: keyed,
    })
}

/// The digests as a table a person reads, then each profile's top functions.
pub fn render_table(digests: &[Digest]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let header: Vec<String> = [
        "profile",
        "mode",
        "samples",
        "CPU s",
        "frames",
        "samples/frame",
        "write(2)",
        "writer",
        "ratatui",
        "scene",
        "other",
    ]
    .map(str::to_owned)
    .to_vec();
    let rows: Vec<Vec<String>> = digests
        .iter()
        .map(|d| {
            let file = Path::new(&d.file)
                .file_name()
                .map_or(d.file.clone(), |f| f.to_string_lossy().into_owned());
            let text = |t: &str| {
                flushlab_core::results::export::markdown_cell(&flushlab_core::units::printable(t))
            };
            vec![
                text(&file),
                text(d.mode.as_deref().unwrap_or("?")),
                d.samples.to_string(),
                format!("{:.2}", d.cpu_seconds),
                d.frames.map_or("?".into(), |f| f.to_string()),
                d.samples_per_frame
                    .map_or("?".into(), |s| format!("{s:.0}")),
                percent(d.write_share),
                percent(d.writer_share),
                percent(d.ratatui_share),
                percent(d.scene_share),
                percent(d.other_share),
            ]
        })
        .collect();
    out.push_str(&flushlab_core::results::export::markdown_table(
        &header, &rows, 2,
    ));
    for d in digests {
        if let Some(keys) = &d.keys {
            out.push_str(&keys.render(&d.file));
        }
    }
    for d in digests {
        let _ = writeln!(out, "\n{}: top functions by self time", d.file);
        for f in &d.top {
            let _ = writeln!(
                out,
                "  {:>5} {:>4}  {}",
                f.samples,
                percent(f.share),
                f.function
            );
        }
    }
    out
}

pub fn run(args: ProfileArgs) -> anyhow::Result<flushlab_core::outcome::Outcome> {
    let digests = args
        .profiles
        .iter()
        .map(|p| digest(p, args.top))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if args.json {
        let mut json = serde_json::to_vec_pretty(&digests)?;
        json.push(b'\n');
        flushlab_core::outcome::print(&json)?;
    } else {
        // Function names come from the profile: escaped, never sent to the terminal as commands.
        flushlab_core::outcome::print(
            flushlab_core::units::printable(&render_table(&digests)).as_bytes(),
        )?;
    }
    Ok(flushlab_core::outcome::Outcome::Finished)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_frames() {
        assert_eq!(share_of("_GI___write", "libc.so.6"), Some(Share::Write));
        assert_eq!(share_of("__libc_write", "libc.so.6"), Some(Share::Write));
        assert_eq!(
            share_of("do_syscall_64", "[kernel.kallsyms]"),
            Some(Share::Write)
        );
        assert_eq!(
            share_of(
                "<std::io::buffered::bufwriter::BufWriter<W>>::write_cold",
                "flushlab"
            ),
            Some(Share::Writer)
        );
        assert_eq!(
            share_of(
                "<flushlab_core::frame_writer::FrameWriter<W> as std::io::Write>::write",
                "flushlab"
            ),
            Some(Share::Writer)
        );
        assert_eq!(
            share_of(
                "<ratatui_crossterm::CrosstermBackend<W> as ratatui_core::backend::Backend>::draw",
                "flushlab"
            ),
            Some(Share::Ratatui)
        );
        assert_eq!(
            share_of("core::fmt::write", "flushlab"),
            Some(Share::Ratatui)
        );
        assert_eq!(
            share_of("flushlab_core::scene::paint_gradient", "flushlab"),
            Some(Share::Scene)
        );
        assert_eq!(share_of("__memmove_avx_unaligned_erms", "libc.so.6"), None);
    }
}
