//! Reading a samply profile: the parts of the Firefox Profiler format the digests read, checked
//! before anything indexes them; the symbol side file; the functions ranked, for the whole run
//! and for the keys' stages alike (`flushlab profile`); and the keys `wrap --profile` marked,
//! read back from the file samply wrote (wrap's summary counts them there).

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::files::{InputKind, read_bounded, read_input};
use crate::units::plain;

/// A function and the share of the samples it took.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopFunction {
    pub function: String,
    pub samples: u64,
    pub share: f64,
}

// The parts of the profile format the digest reads. Indices are `u32` and names `Box<str>`:
// the parsed tables stay within a few bytes an entry, whatever the JSON's shape (the memory
// bound in docs/reliability.md), and no table of a 16 MiB file can hold 2^32 entries.
#[derive(Deserialize)]
pub struct Profile {
    pub meta: Meta,
    pub libs: Vec<Lib>,
    pub threads: Vec<Thread>,
}
#[derive(Deserialize)]
pub struct Meta {
    /// Milliseconds between samples.
    pub interval: f64,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lib {
    pub name: Box<str>,
    pub code_id: Option<String>,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    pub process_name: Option<String>,
    /// Markers (samply's from marker files among them), when it has any.
    #[serde(default)]
    pub markers: Option<MarkerTable>,
    pub samples: Samples,
    pub stack_table: StackTable,
    pub frame_table: FrameTable,
    pub func_table: FuncTable,
    pub resource_table: ResourceTable,
    pub string_array: Vec<Box<str>>,
}
#[derive(Deserialize)]
pub struct Samples {
    pub stack: Vec<Option<u32>>,
    /// When each was taken, in milliseconds (the markers' clock).
    #[serde(default)]
    pub time: Option<Vec<f64>>,
    /// Samples each entry stands for (1 when absent).
    pub weight: Option<Vec<Option<f32>>>,
}
impl Samples {
    /// How many samples entry `i` stands for.
    pub fn weight_of(&self, i: usize) -> f64 {
        self.weight
            .as_ref()
            .and_then(|w| w.get(i).copied().flatten())
            .map_or(1.0, f64::from)
    }
}

#[derive(Deserialize)]
pub struct StackTable {
    pub frame: Vec<u32>,
    pub prefix: Vec<Option<u32>>,
}
#[derive(Deserialize)]
pub struct FrameTable {
    pub address: Vec<Option<i64>>,
    pub func: Vec<u32>,
}
#[derive(Deserialize)]
pub struct FuncTable {
    pub name: Vec<u32>,
    pub resource: Vec<Option<i64>>,
}
#[derive(Deserialize)]
pub struct ResourceTable {
    pub lib: Vec<Option<u32>>,
}
#[derive(Deserialize)]
pub struct SymbolFile {
    pub string_table: Vec<Box<str>>,
    pub data: Vec<LibSymbols>,
}
#[derive(Deserialize)]
pub struct LibSymbols {
    pub code_id: Option<String>,
    pub symbol_table: Vec<SymbolEntry>,
    pub known_addresses: Vec<(i64, u32)>,
}
#[derive(Deserialize)]
pub struct SymbolEntry {
    pub symbol: u32,
}

/// The most one sample may weigh: samply writes 1 (or leaves the weight out).
const MAX_WEIGHT: f32 = 1e6;
/// Milliseconds between samples: samply's default is 1.
const MAX_INTERVAL_MS: f64 = 1000.0;

/// Address → function name, per library code id, from the presymbolicated side file.
#[derive(Default)]
pub struct Symbols {
    pub names: Vec<Box<str>>,
    pub by_lib: HashMap<String, HashMap<i64, u32>>,
}

impl Symbols {
    pub fn read(path: &Path) -> anyhow::Result<Symbols> {
        let file: SymbolFile = serde_json::from_slice(&read_input(path, InputKind::Profile)?)?;
        let mut by_lib = HashMap::new();
        for lib in file.data {
            let Some(code_id) = lib.code_id else { continue };
            let names = lib
                .known_addresses
                .iter()
                .filter_map(|&(address, i)| {
                    let entry = lib.symbol_table.get(i as usize)?;
                    file.string_table.get(entry.symbol as usize)?;
                    Some((address, entry.symbol))
                })
                .collect();
            by_lib.insert(code_id, names);
        }
        Ok(Symbols {
            names: file.string_table,
            by_lib,
        })
    }

    pub fn name(&self, code_id: &str, address: i64) -> Option<&str> {
        let i = *self.by_lib.get(code_id)?.get(&address)?;
        self.names.get(i as usize).map(|n| &**n)
    }
}

pub fn read_profile(path: &Path) -> anyhow::Result<Profile> {
    let raw = read_input(path, InputKind::Profile)?;
    let json = if raw.starts_with(&[0x1f, 0x8b]) {
        read_bounded(
            flate2::read::GzDecoder::new(&raw[..]),
            InputKind::Profile.limit(),
        )
        .context("decompressing")?
    } else {
        raw
    };
    // serde_json refuses nesting deeper than 128 levels: no stack overflow from a hostile file.
    let profile: Profile = serde_json::from_slice(&json)?;
    let interval = profile.meta.interval;
    if !(interval > 0.0 && interval <= MAX_INTERVAL_MS) {
        bail!(
            "meta.interval is {} ms, outside 0 to {MAX_INTERVAL_MS}",
            plain(interval)
        );
    }
    for (i, thread) in profile.threads.iter().enumerate() {
        thread
            .check(profile.libs.len())
            .map_err(|e| anyhow::anyhow!("thread {i}: {e}"))?;
    }
    Ok(profile)
}

impl Thread {
    /// Every index the digest follows points into its table, every stack's prefix is an
    /// earlier stack (as the format lays them out), and every weight is a count of samples: a
    /// file that breaks any is refused, never indexed out of bounds, walked forever or summed
    /// into a figure no run could have.
    pub fn check(&self, libs: usize) -> Result<(), String> {
        let within = |table: &str, index: u32, len: usize| {
            if (index as usize) < len {
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
        for (i, weight) in self.samples.weight.iter().flatten().enumerate() {
            if let Some(w) = weight
                && !(0.0..=MAX_WEIGHT).contains(w)
            {
                return Err(format!(
                    "samples.weight {i} is {}, outside 0 to {MAX_WEIGHT:e}",
                    plain(f64::from(*w))
                ));
            }
        }
        for (stack, prefix) in self.stack_table.prefix.iter().enumerate() {
            if let Some(prefix) = *prefix
                && prefix as usize >= stack
            {
                return Err(format!(
                    "stack {stack}'s prefix {prefix} is not an earlier stack (a cycle)"
                ));
            }
        }
        for frame in &self.stack_table.frame {
            within("stackTable.frame", *frame, self.frames())?;
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

    pub fn frames(&self) -> usize {
        self.frame_table
            .func
            .len()
            .min(self.frame_table.address.len())
    }

    /// A frame's function name (the symbol file's, when it knows the address) and the name of
    /// its library (empty when unknown).
    pub fn name_of<'a>(
        &'a self,
        frame: usize,
        libs: &'a [Lib],
        symbols: &'a Symbols,
    ) -> (&'a str, &'a str) {
        let func = self.frame_table.func[frame] as usize;
        let lib = self.func_table.resource[func]
            .and_then(|r| usize::try_from(r).ok())
            .and_then(|r| self.resource_table.lib.get(r).copied().flatten())
            .and_then(|l| libs.get(l as usize));
        let resolved = lib
            .zip(self.frame_table.address[frame])
            .and_then(|(lib, address)| symbols.name(lib.code_id.as_deref()?, address));
        let name = resolved.unwrap_or(&self.string_array[self.func_table.name[func] as usize]);
        (name, lib.map_or("", |l| &*l.name))
    }
}

/// A thread's markers (the parts read here).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MarkerTable {
    pub data: Vec<Option<MarkerData>>,
    pub start_time: Vec<Option<f64>>,
    pub end_time: Vec<Option<f64>>,
}

#[derive(Deserialize)]
pub struct MarkerData {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// An index into the thread's strings (samply's marker-file markers).
    pub name: Option<serde_json::Value>,
}

impl Thread {
    /// The thread's key markers as `wrap --profile` names them (`key 7 <Down>: 23.1 ms`, `key 7
    /// processing`): each key's number, the rest of its name (the key and its span, or a
    /// stage), and its start and end (ms).
    pub fn key_markers(&self) -> Vec<(u64, &str, f64, f64)> {
        let Some(table) = self.markers.as_ref() else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for (i, data) in table.data.iter().enumerate() {
            let Some(data) = data else { continue };
            if data.kind.as_deref() != Some("SimpleMarker") {
                continue;
            }
            let name = data
                .name
                .as_ref()
                .and_then(serde_json::Value::as_u64)
                .and_then(|n| self.string_array.get(usize::try_from(n).ok()?));
            let (Some(name), Some(Some(start)), Some(Some(end))) =
                (name, table.start_time.get(i), table.end_time.get(i))
            else {
                continue;
            };
            if let Some((n, what)) = name
                .strip_prefix("key ")
                .and_then(|rest| rest.split_once(' '))
                .and_then(|(n, what)| Some((n.parse::<u64>().ok()?, what)))
            {
                found.push((n, what, *start, *end));
            }
        }
        found
    }
}

impl Thread {
    /// Every stack's innermost frame in the program's own executable (the library named as
    /// the process is: a process's name is its executable's, cut to 15 bytes), if any.
    pub fn program_functions<'a>(
        &'a self,
        libs: &'a [Lib],
        symbols: &'a Symbols,
    ) -> Vec<Option<&'a str>> {
        let process = self.process_name.as_deref().unwrap_or("");
        let mut found: Vec<Option<&str>> = Vec::with_capacity(self.stack_table.frame.len());
        for (stack, &frame) in self.stack_table.frame.iter().enumerate() {
            let (name, lib) = self.name_of(frame as usize, libs, symbols);
            let file = lib.rsplit('/').next().unwrap_or(lib);
            let ours = !process.is_empty() && file.starts_with(process);
            let function = if ours {
                Some(name)
            } else {
                self.stack_table.prefix[stack].and_then(|parent| found[parent as usize])
            };
            found.push(function);
        }
        found
    }

    /// Every stack's innermost frame of the program's own (outside the kernel): the function a
    /// sample counts for. Linear in the tables, as `flushlab profile`'s shares.
    pub fn own_functions<'a>(&'a self, libs: &'a [Lib], symbols: &'a Symbols) -> Vec<&'a str> {
        let mut own: Vec<&str> = Vec::with_capacity(self.stack_table.frame.len());
        for (stack, &frame) in self.stack_table.frame.iter().enumerate() {
            let (name, lib) = self.name_of(frame as usize, libs, symbols);
            let kernel = lib.contains("kernel") || lib.is_empty() && name.starts_with("0x");
            let function = match self.stack_table.prefix[stack] {
                Some(parent) if kernel => own[parent as usize],
                _ => name,
            };
            own.push(function);
        }
        own
    }
}

/// How many keys `wrap --profile` marked in the profile at `path`, over every thread: what the
/// file holds, not what was handed to samply.
pub fn marked_keys(path: &Path) -> anyhow::Result<u64> {
    let profile = read_profile(path)?;
    let mut keys: Vec<u64> = profile
        .threads
        .iter()
        .flat_map(|t| t.key_markers().into_iter().map(|(n, ..)| n))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    Ok(keys.len() as u64)
}

/// The `top` functions of `functions`, most first, each with its share of `samples`.
pub fn ranked(functions: HashMap<&str, f64>, samples: f64, top: usize) -> Vec<TopFunction> {
    let mut functions: Vec<(&str, f64)> = functions.into_iter().collect();
    functions.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    functions
        .into_iter()
        .take(top)
        .map(|(function, n)| TopFunction {
            function: function.to_owned(),
            samples: n as u64,
            share: n / samples.max(1.0),
        })
        .collect()
}
