//! `flushlab profile`: what a samply profile of a headless run says, without a browser.
//!
//! Reads the Firefox Profiler JSON that `samply record --save-only` writes (gzipped or not) and
//! the symbol side file `--unstable-presymbolicate` writes beside it, attributes every sample
//! of the flushlab process to one share (the innermost frame that names a known part wins), and
//! reports the shares and the top functions by self time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use serde::Deserialize;
use serde::Serialize;

use crate::files::{MAX_INPUT_BYTES, read_bounded, read_input};
use crate::units::percent;

#[derive(Debug, Args)]
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
        "flushlab::frame_writer",
        "flushlab::writer_mode",
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
    } else if function.contains("flushlab::scene") {
        Some(Share::Scene)
    } else {
        None
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopFunction {
    pub function: String,
    pub samples: u64,
    pub share: f64,
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
}

// The parts of the profile format the digest reads.
#[derive(Deserialize)]
struct Profile {
    meta: Meta,
    libs: Vec<Lib>,
    threads: Vec<Thread>,
}
#[derive(Deserialize)]
struct Meta {
    interval: f64,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Lib {
    name: String,
    code_id: Option<String>,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Thread {
    process_name: Option<String>,
    samples: Samples,
    stack_table: StackTable,
    frame_table: FrameTable,
    func_table: FuncTable,
    resource_table: ResourceTable,
    string_array: Vec<String>,
}
#[derive(Deserialize)]
struct Samples {
    stack: Vec<Option<usize>>,
    weight: Option<Vec<Option<f64>>>,
}
#[derive(Deserialize)]
struct StackTable {
    frame: Vec<usize>,
    prefix: Vec<Option<usize>>,
}
#[derive(Deserialize)]
struct FrameTable {
    address: Vec<Option<i64>>,
    func: Vec<usize>,
}
#[derive(Deserialize)]
struct FuncTable {
    name: Vec<usize>,
    resource: Vec<Option<i64>>,
}
#[derive(Deserialize)]
struct ResourceTable {
    lib: Vec<Option<usize>>,
}
#[derive(Deserialize)]
struct SymbolFile {
    string_table: Vec<String>,
    data: Vec<LibSymbols>,
}
#[derive(Deserialize)]
struct LibSymbols {
    code_id: Option<String>,
    symbol_table: Vec<SymbolEntry>,
    known_addresses: Vec<(i64, usize)>,
}
#[derive(Deserialize)]
struct SymbolEntry {
    symbol: usize,
}

/// Address → function name, per library code id, from the presymbolicated side file.
type Symbols = HashMap<String, HashMap<i64, String>>;

fn read_symbols(path: &Path) -> anyhow::Result<Symbols> {
    let file: SymbolFile = serde_json::from_slice(&read_input(path)?)?;
    let mut symbols = Symbols::new();
    for lib in file.data {
        let Some(code_id) = lib.code_id else { continue };
        let names = lib
            .known_addresses
            .iter()
            .filter_map(|&(address, i)| {
                let entry = lib.symbol_table.get(i)?;
                Some((address, file.string_table.get(entry.symbol)?.clone()))
            })
            .collect();
        symbols.insert(code_id, names);
    }
    Ok(symbols)
}

fn read_profile(path: &Path) -> anyhow::Result<Profile> {
    let raw = read_input(path)?;
    let json = if raw.starts_with(&[0x1f, 0x8b]) {
        read_bounded(flate2::read::GzDecoder::new(&raw[..]), MAX_INPUT_BYTES)
            .context("decompressing")?
    } else {
        raw
    };
    // serde_json refuses nesting deeper than 128 levels: no stack overflow from a hostile file.
    let profile: Profile = serde_json::from_slice(&json)?;
    for (i, thread) in profile.threads.iter().enumerate() {
        thread
            .check(profile.libs.len())
            .map_err(|e| anyhow::anyhow!("thread {i}: {e}"))?;
    }
    Ok(profile)
}

impl Thread {
    /// Every index the digest follows points into its table, and every stack's prefix is an
    /// earlier stack (as the format lays them out), so walking up a stack ends: a file that
    /// breaks either is refused, never indexed out of bounds or walked forever.
    fn check(&self, libs: usize) -> Result<(), String> {
        let within = |table: &str, index: usize, len: usize| {
            if index < len {
                Ok(())
            } else {
                Err(format!("{table} index {index} is out of range (0..{len})"))
            }
        };
        let stacks = self.stack_table.frame.len();
        if self.stack_table.prefix.len() != stacks {
            return Err("stackTable.prefix and stackTable.frame differ in length".into());
        }
        for stack in self.samples.stack.iter().flatten() {
            within("samples.stack", *stack, stacks)?;
        }
        for (stack, prefix) in self.stack_table.prefix.iter().enumerate() {
            if let Some(prefix) = *prefix
                && prefix >= stack
            {
                return Err(format!(
                    "stack {stack}'s prefix {prefix} is not an earlier stack (a cycle)"
                ));
            }
        }
        let frames = self
            .frame_table
            .func
            .len()
            .min(self.frame_table.address.len());
        for frame in &self.stack_table.frame {
            within("stackTable.frame", *frame, frames)?;
        }
        let funcs = self
            .func_table
            .name
            .len()
            .min(self.func_table.resource.len());
        for func in &self.frame_table.func {
            within("frameTable.func", *func, funcs)?;
        }
        for name in &self.func_table.name {
            within("funcTable.name", *name, self.string_array.len())?;
        }
        for lib in self.resource_table.lib.iter().flatten() {
            within("resourceTable.lib", *lib, libs)?;
        }
        Ok(())
    }
}

/// `x.json.gz` → `x.json.syms.json` and `x.report.json`, the files recorded beside a profile.
fn sibling(path: &Path, suffix: &str, keep_json: bool) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".gz").unwrap_or(&name);
    let stem = if keep_json {
        stem
    } else {
        stem.strip_suffix(".json").unwrap_or(stem)
    };
    path.with_file_name(format!("{stem}{suffix}"))
}

pub fn digest(path: &Path, top: usize) -> anyhow::Result<Digest> {
    let profile =
        read_profile(path).with_context(|| format!("reading profile {}", path.display()))?;
    let syms_path = sibling(path, ".syms.json", true);
    let symbols = if syms_path.exists() {
        read_symbols(&syms_path)
            .with_context(|| format!("reading symbols {}", syms_path.display()))?
    } else {
        Symbols::new()
    };
    let report: Option<serde_json::Value> = read_input(&sibling(path, ".report.json", false))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());

    let mut shares: HashMap<Share, f64> = HashMap::new();
    let mut self_time: HashMap<String, f64> = HashMap::new();
    let mut total = 0.0;
    let threads = profile
        .threads
        .iter()
        .filter(|t| t.process_name.as_deref() == Some("flushlab"));
    for thread in threads {
        let name_of = |frame: usize| -> (String, &str) {
            let func = thread.frame_table.func[frame];
            let lib = thread.func_table.resource[func]
                .and_then(|r| usize::try_from(r).ok())
                .and_then(|r| thread.resource_table.lib.get(r).copied().flatten())
                .and_then(|l| profile.libs.get(l));
            let resolved = lib
                .zip(thread.frame_table.address[frame])
                .and_then(|(lib, address)| {
                    symbols.get(lib.code_id.as_deref()?)?.get(&address).cloned()
                });
            let name = resolved
                .unwrap_or_else(|| thread.string_array[thread.func_table.name[func]].clone());
            (name, lib.map_or("", |l| l.name.as_str()))
        };
        for (i, stack) in thread.samples.stack.iter().enumerate() {
            let Some(mut stack) = *stack else { continue };
            let weight = thread
                .samples
                .weight
                .as_ref()
                .and_then(|w| w.get(i).copied().flatten())
                .unwrap_or(1.0);
            total += weight;
            let (leaf, _) = name_of(thread.stack_table.frame[stack]);
            *self_time.entry(leaf).or_default() += weight;
            let share = loop {
                let (name, lib) = name_of(thread.stack_table.frame[stack]);
                if let Some(share) = share_of(&name, lib) {
                    break share;
                }
                match thread.stack_table.prefix[stack] {
                    Some(parent) => stack = parent,
                    None => break Share::Other,
                }
            };
            *shares.entry(share).or_default() += weight;
        }
    }
    if total == 0.0 {
        bail!("{} has no samples of a flushlab process", path.display());
    }
    let share = |s: Share| shares.get(&s).copied().unwrap_or(0.0) / total;
    let mut top_functions: Vec<(String, f64)> = self_time.into_iter().collect();
    top_functions.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let frames = report.as_ref().and_then(|r| r["frames"].as_u64());
    Ok(Digest {
        file: path.display().to_string(),
        mode: report
            .as_ref()
            .and_then(|r| r["mode"].as_str().map(str::to_owned)),
        frames,
        samples: total as u64,
        cpu_seconds: total * profile.meta.interval / 1000.0,
        samples_per_frame: frames.filter(|f| *f > 0).map(|f| total / f as f64),
        write_share: share(Share::Write),
        writer_share: share(Share::Writer),
        ratatui_share: share(Share::Ratatui),
        scene_share: share(Share::Scene),
        other_share: share(Share::Other),
        top: top_functions
            .into_iter()
            .take(top)
            .map(|(function, samples)| TopFunction {
                function,
                samples: samples as u64,
                share: samples / total,
            })
            .collect(),
    })
}

/// The digests as a table a person reads, then each profile's top functions.
pub fn render_table(digests: &[Digest]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| profile | mode | samples | CPU s | frames | samples/frame | write(2) | writer | ratatui | scene | other |"
    );
    let _ = writeln!(
        out,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for d in digests {
        let file = Path::new(&d.file)
            .file_name()
            .map_or(d.file.clone(), |f| f.to_string_lossy().into_owned());
        let _ = writeln!(
            out,
            "| {file} | {} | {} | {:.2} | {} | {} | {} | {} | {} | {} | {} |",
            d.mode.as_deref().unwrap_or("?"),
            d.samples,
            d.cpu_seconds,
            d.frames.map_or("?".into(), |f| f.to_string()),
            d.samples_per_frame
                .map_or("?".into(), |s| format!("{s:.0}")),
            percent(d.write_share),
            percent(d.writer_share),
            percent(d.ratatui_share),
            percent(d.scene_share),
            percent(d.other_share),
        );
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

pub fn run(args: ProfileArgs) -> anyhow::Result<crate::outcome::Outcome> {
    let digests = args
        .profiles
        .iter()
        .map(|p| digest(p, args.top))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if args.json {
        let mut json = serde_json::to_vec_pretty(&digests)?;
        json.push(b'\n');
        crate::outcome::print(&json)?;
    } else {
        // Function names come from the profile: escaped, never sent to the terminal as commands.
        crate::outcome::print(crate::units::printable(&render_table(&digests)).as_bytes())?;
    }
    Ok(crate::outcome::Outcome::Finished)
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
                "<flushlab::frame_writer::FrameWriter<W> as std::io::Write>::write",
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
            share_of("flushlab::scene::paint_gradient", "flushlab"),
            Some(Share::Scene)
        );
        assert_eq!(share_of("__memmove_avx_unaligned_erms", "libc.so.6"), None);
    }

    #[test]
    fn siblings() {
        let p = Path::new("profiles/stderr-raw.json.gz");
        assert_eq!(
            sibling(p, ".syms.json", true),
            Path::new("profiles/stderr-raw.json.syms.json")
        );
        assert_eq!(
            sibling(p, ".report.json", false),
            Path::new("profiles/stderr-raw.report.json")
        );
    }
}
