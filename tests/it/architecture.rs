//! ARCHITECTURE.md stays true: every path it names exists, and every `module::item` or
//! `Type::method` it names is defined where it says.

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// Where the rooms are: the binary's, the core's, the terminals' and wrap's.
const SOURCE_ROOTS: [&str; 4] = [
    "src",
    "crates/flushlab-core/src",
    "crates/flushlab-terminals/src",
    "crates/flushlab-wrap/src",
];
/// Names of other crates (and placeholders) the page speaks of.
const NOT_OURS: [&str; 7] = [
    "clap",
    "crate",
    "flushlab",
    "flushlab_core",
    "flushlab_terminals",
    "flushlab_wrap",
    "module",
];

/// The backticked spans of the page.
fn spans(page: &str) -> Vec<&str> {
    page.split('`').skip(1).step_by(2).collect()
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    files_with_extension(dir, "rs", into);
}

/// Every file under `dir` whose name ends in `.EXTENSION`, into `into`.
pub(super) fn files_with_extension(dir: &Path, extension: &str, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_with_extension(&path, extension, into);
        } else if path.extension().is_some_and(|e| e == extension) {
            into.push(path);
        }
    }
}

/// The file of module `name`: `name.rs` or `name/mod.rs` anywhere under the source roots.
fn module_files(name: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for root in SOURCE_ROOTS {
        rust_files(&Path::new(ROOT).join(root), &mut files);
    }
    files
        .into_iter()
        .filter(|f| {
            f.file_stem().is_some_and(|s| s == name)
                || (f.ends_with("mod.rs") && f.parent().is_some_and(|d| d.ends_with(name)))
        })
        .collect()
}

fn defines(source: &str, item: &str) -> bool {
    [
        "fn", "struct", "enum", "trait", "mod", "const", "static", "type",
    ]
    .iter()
    .any(|kind| {
        source.contains(&format!("{kind} {item}("))
            || source.contains(&format!("{kind} {item} "))
            || source.contains(&format!("{kind} {item}<"))
            || source.contains(&format!("{kind} {item}:"))
            || source.contains(&format!("{kind} {item};"))
    })
}

#[test]
fn every_path_named_exists() {
    let page = std::fs::read_to_string(Path::new(ROOT).join("ARCHITECTURE.md")).unwrap();
    let prefixes = [
        "src/",
        "crates/",
        "tests/",
        "examples/",
        "scripts/",
        "docs/",
    ];
    let mut missing = Vec::new();
    let mut checked = 0;
    for span in spans(&page) {
        if prefixes.iter().any(|p| span.starts_with(p)) && !span.contains(' ') {
            checked += 1;
            if !Path::new(ROOT).join(span).exists() {
                missing.push(span);
            }
        }
    }
    assert!(
        checked > 40,
        "only {checked} paths found: is the page's format still `path`?"
    );
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn every_item_named_is_defined_where_it_says() {
    let page = std::fs::read_to_string(Path::new(ROOT).join("ARCHITECTURE.md")).unwrap();
    let mut everything = Vec::new();
    for root in SOURCE_ROOTS {
        rust_files(&Path::new(ROOT).join(root), &mut everything);
    }
    let sources: Vec<String> = everything
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for span in spans(&page) {
        let Some((owner, item)) = span.split_once("::") else {
            continue;
        };
        let is_name = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !is_name(owner) || !is_name(item) || NOT_OURS.contains(&owner) {
            continue;
        }
        checked += 1;
        let found = if owner.starts_with(char::is_lowercase) {
            // module::item: the module's file defines the item.
            module_files(owner)
                .iter()
                .any(|f| defines(&std::fs::read_to_string(f).unwrap(), item))
        } else {
            // Type::method: a file that defines the type defines the method.
            sources
                .iter()
                .any(|s| defines(s, owner) && s.contains(&format!("fn {item}")))
        };
        if !found {
            wrong.push(span);
        }
    }
    assert!(checked > 10, "only {checked} items found");
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md names items that are not where it says: {wrong:?}"
    );
}

/// The operating system is called in one place: no room outside the core's `sys` registers a
/// signal, sends one, asks or sets a window size, waits for a child, reads getrusage or names a
/// file under /proc, however it would read it (`File::open`, `read_dir`, `read_link`,
/// `read_to_string`: any `"/proc` in the code). (The examples are lessons and may show the
/// calls themselves.) Two literals name /proc without reading it: the HUD's name of the
/// kernel's accounting, and a test's message.
#[test]
fn os_calls_live_in_sys() {
    const CALLS: [&str; 11] = [
        "signal_hook::",
        "tcgetwinsize",
        "tcsetwinsize",
        "kill_process",
        "set_child_subreaper",
        "waitid(",
        "wait(WaitOptions",
        "getrusage(",
        "getppid(",
        "\"/proc",
        "set_parent_process_death_signal",
    ];
    let sys = Path::new(ROOT).join("crates/flushlab-core/src/sys");
    // The tracer is a program of its own, run in CMD's place: ptrace, seccomp, its signals and
    // the traced threads' /proc are what it is made of (ARCHITECTURE.md says so).
    let tracer = Path::new(ROOT).join("crates/flushlab-wrap/src/observers/tracer");
    let mut files = Vec::new();
    for root in SOURCE_ROOTS {
        rust_files(&Path::new(ROOT).join(root), &mut files);
    }
    let mut found = Vec::new();
    for file in files
        .iter()
        .filter(|f| !f.starts_with(&sys) && !f.starts_with(&tracer))
    {
        let source = std::fs::read_to_string(file).unwrap();
        for (n, line) in source.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let shown = [
                "=> \"/proc/self/io\",",
                ".expect(\"/proc/self/io on Linux\")",
            ];
            if shown.iter().any(|s| code.contains(s)) {
                continue;
            }
            for call in CALLS.iter().filter(|c| code.contains(*c)) {
                found.push(format!("{}:{}: {call}", file.display(), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "OS calls outside sys/:\n{}",
        found.join("\n")
    );
}

/// A run's timeline is made in one place, from what its sources recorded: no room of the
/// binary builds a `Timeline` itself (the core's `Recording` does, and the core's tests).
#[test]
fn the_timeline_is_made_only_from_the_recording() {
    let mut files = Vec::new();
    rust_files(&Path::new(ROOT).join("src"), &mut files);
    let found: Vec<String> = files
        .iter()
        .flat_map(|file| {
            let source = std::fs::read_to_string(file).unwrap();
            source
                .lines()
                .enumerate()
                .filter(|(_, line)| {
                    line.contains("Timeline {") || line.contains("Timeline::default")
                })
                .map(|(n, _)| format!("{}:{}", file.display(), n + 1))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        found.is_empty(),
        "a Timeline made outside the Recording: {found:?}"
    );
}

/// The commands stand side by side: a command (a room under `src/commands/`) never names
/// another command, and a shared room (the rest of `src/` but `cli/`, `main.rs` and
/// `lib.rs`, which sit above every command) never names a command or the command line. So no
/// circle can run through a command, and each can be read, changed and tested alone.
#[test]
fn no_command_imports_another_and_no_shared_room_imports_a_command() {
    let src = Path::new(ROOT).join("src");
    let commands = src.join("commands");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let named = |source: &str, prefix: &str| -> Vec<String> {
        source
            .match_indices(prefix)
            .map(|(at, _)| {
                source[at + prefix.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect()
            })
            .collect()
    };
    let mut wrong = Vec::new();
    let mut commands_seen = 0;
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        let relative = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if let Ok(inside) = file.strip_prefix(&commands) {
            let own = inside
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned();
            if own == "mod" {
                continue;
            }
            commands_seen += 1;
            for other in named(&source, "crate::commands::") {
                if other != own {
                    wrong.push(format!(
                        "src/{relative} (command {own}) names command {other}"
                    ));
                }
            }
            if source.contains("crate::cli") {
                wrong.push(format!(
                    "src/{relative} (command {own}) names the command line"
                ));
            }
        } else if !(["main.rs", "lib.rs", "cli.rs"].contains(&relative.as_str())
            || relative.starts_with("cli/"))
        {
            for prefix in ["crate::commands", "crate::cli", "flushlab::commands"] {
                if source.contains(prefix) {
                    wrong.push(format!("src/{relative} (a shared room) names {prefix}"));
                }
            }
        }
    }
    assert!(
        commands_seen >= 8,
        "only {commands_seen} command files found"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A command's `mod.rs` sits above its files: it declares them and dispatches to them, and no
/// file beside it imports it back (`use super::Item` naming something `mod.rs` defines rather
/// than a sibling file). Test modules (`mod tests`, `*_tests.rs`) see their own file, not it.
/// (Elsewhere a folder's `mod.rs` may hold what its files share, as `results/export`'s
/// `Exporter` trait that each exporter implements.)
#[test]
fn no_file_imports_its_folders_mod_rs_back() {
    let mut files = Vec::new();
    rust_files(&Path::new(ROOT).join("src/commands"), &mut files);
    rust_files(
        &Path::new(ROOT).join("crates/flushlab-wrap/src"),
        &mut files,
    );
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in &files {
        let folder = file.parent().unwrap();
        let name = file.file_name().unwrap().to_string_lossy();
        if name == "mod.rs"
            || name == "lib.rs"
            || name == "main.rs"
            || name.ends_with("_tests.rs")
            || !folder.join("mod.rs").exists()
        {
            continue;
        }
        checked += 1;
        let source = std::fs::read_to_string(file).unwrap();
        let code = source.split("#[cfg(test)]").next().unwrap();
        let sibling = |root: &str| {
            folder.join(format!("{root}.rs")).exists() || folder.join(root).join("mod.rs").exists()
        };
        let in_grandparent = |root: &str| {
            let grand = folder.parent().unwrap();
            grand.join(format!("{root}.rs")).exists() || grand.join(root).join("mod.rs").exists()
        };
        for (at, _) in code.match_indices("super::") {
            // `super::super::` is read once, at its first `super::`: it names a file beside
            // the folder (a room of the folder above), never an item of that folder's mod.rs.
            if code[..at].ends_with("super::") {
                continue;
            }
            if let Some(rest) = code[at..].strip_prefix("super::super::") {
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                if !in_grandparent(&rest[..end]) {
                    let line = code[..at].lines().count();
                    wrong.push(format!(
                        "{}:{line}: super::super::{}",
                        file.display(),
                        &rest[..end]
                    ));
                }
                continue;
            }
            let rest = &code[at + "super::".len()..];
            let roots: Vec<&str> = if let Some(list) = rest.strip_prefix('{') {
                let list = &list[..list.find('}').unwrap_or(list.len())];
                list.split(',')
                    .map(|part| part.trim().split("::").next().unwrap_or_default())
                    .filter(|root| !root.is_empty())
                    .collect()
            } else {
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                vec![&rest[..end]]
            };
            for root in roots.into_iter().filter(|r| *r != "super" && !sibling(r)) {
                let line = code[..at].lines().count();
                wrong.push(format!("{}:{line}: super::{root}", file.display()));
            }
        }
    }
    assert!(checked > 20, "only {checked} files beside a mod.rs");
    assert!(
        wrong.is_empty(),
        "files that import their folder's mod.rs back:\n{}",
        wrong.join("\n")
    );
}

/// Every Rust file under the source roots, with its text before its tests.
fn sources() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    for root in SOURCE_ROOTS {
        rust_files(&Path::new(ROOT).join(root), &mut files);
    }
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap().to_owned();
            (f, code)
        })
        .collect()
}

fn relative(path: &Path) -> String {
    path.strip_prefix(ROOT).unwrap().display().to_string()
}

/// The leaves import nothing of the crate but other leaves: `units`, `outcome` and `figures`
/// nothing; `files` only `outcome` and `units`; `sys` only `files`.
#[test]
fn the_leaves_import_only_leaves() {
    let core = Path::new(ROOT).join("crates/flushlab-core/src");
    let rooms = |code: &str| -> Vec<String> {
        let mut rooms: Vec<String> = code
            .match_indices("crate::")
            .map(|(at, _)| {
                let rest = &code[at + "crate::".len()..];
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                rest[..end].to_owned()
            })
            .collect();
        rooms.sort();
        rooms.dedup();
        rooms
    };
    let mut wrong = Vec::new();
    for (leaf, allowed) in [
        ("units.rs", &[][..]),
        ("outcome.rs", &[]),
        ("figures.rs", &[]),
        ("statistics/mod.rs", &["statistics"]),
        ("statistics/verdict.rs", &["statistics"]),
        ("files.rs", &["outcome", "units"]),
    ] {
        let code = std::fs::read_to_string(core.join(leaf)).unwrap();
        let code = code.split("#[cfg(test)]").next().unwrap();
        for room in rooms(code) {
            if !allowed.contains(&room.as_str()) {
                wrong.push(format!("{leaf} imports crate::{room}"));
            }
        }
    }
    let mut sys = Vec::new();
    rust_files(&core.join("sys"), &mut sys);
    for file in sys {
        let code = std::fs::read_to_string(&file).unwrap();
        for room in rooms(code.split("#[cfg(test)]").next().unwrap()) {
            if !["files", "sys"].contains(&room.as_str()) {
                wrong.push(format!("{} imports crate::{room}", relative(&file)));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// One percentile: `statistics::rank` (the nearest rank) is the only definition; no other file
/// (src, the crates, and both examples/ folders) defines a median or a percentile of its own,
/// takes the middle of a sorted list, or ranks by index arithmetic (`v[(q * n) as usize]`).
#[test]
fn one_percentile_definition() {
    let mut wrong = Vec::new();
    let mut roots = SOURCE_ROOTS.to_vec();
    roots.extend(["crates/flushlab-core/examples", "examples"]);
    let mut files = Vec::new();
    for root in roots {
        rust_files(&Path::new(ROOT).join(root), &mut files);
    }
    // The middle row of a band of pixels is geometry, not a figure.
    let geometry = "crates/flushlab-terminals/src/strips.rs";
    for file in files {
        let name = relative(&file);
        if name.contains("flushlab-core/src/statistics/") {
            continue;
        }
        let code = std::fs::read_to_string(&file).unwrap();
        let code = code.split("#[cfg(test)]").next().unwrap();
        for (i, line) in code.lines().enumerate() {
            let own = [
                "fn median",
                "fn percentile",
                "fn quantile",
                "fn nearest_rank",
            ]
            .iter()
            .any(|f| line.contains(&format!("{f}(")) || line.contains(&format!("{f}<")))
                && !line.contains("pub fn percentile(&self, quantile: f64) -> u64");
            let middle = line.contains(".len() / 2]") && name != geometry;
            let ceil_rank = line.contains(".ceil() as usize") || line.contains(".ceil() as u64");
            // A rank by index arithmetic: `v[(q * n as f64) as usize]` and its kin.
            let index_rank = (line.contains("as usize]") || line.contains("as usize).min("))
                && ["(q *", "* q)", "quantile *", "* quantile"]
                    .iter()
                    .any(|q| line.contains(q));
            if own || middle || ceil_rank || index_rank {
                wrong.push(format!("{name}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    let histogram =
        std::fs::read_to_string(Path::new(ROOT).join("crates/flushlab-core/src/latency.rs"))
            .unwrap();
    assert!(
        histogram.contains("statistics::rank("),
        "the histogram's percentile counts its buckets to statistics::rank"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every mode runs CMD through `side::run`: no other file measures a run or makes its report.
#[test]
fn every_mode_runs_cmd_through_side() {
    let mut wrong = Vec::new();
    for (file, code) in sources() {
        let name = relative(&file);
        if !name.starts_with("crates/flushlab-wrap/src/") || name.ends_with("/side.rs") {
            continue;
        }
        for call in [
            "running::measure",
            "in_terminal::measure",
            "WrapReport::of(",
            "PixelReport::of(",
            "running::{How, measure}",
        ] {
            if code.contains(call) {
                wrong.push(format!("{name}: {call}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Exit codes are decided once, from an `Outcome`: `main` maps it; the only other exit is the
/// watchdog that ends a run stuck in a write(2) after a signal (`end_stuck_runs`), which cannot
/// reach `main` and exits with the same `Outcome::exit_code`.
#[test]
fn exit_codes_are_decided_from_an_outcome() {
    let mut exits = Vec::new();
    for (file, code) in sources() {
        for (i, line) in code.lines().enumerate() {
            if line.contains("process::exit(") {
                exits.push((relative(&file), i + 1));
            }
        }
    }
    let places: Vec<&str> = exits.iter().map(|(f, _)| f.as_str()).collect();
    assert!(
        places
            .iter()
            .all(|f| ["src/main.rs", "crates/flushlab-terminals/src/session.rs"].contains(f)),
        "{exits:?}"
    );
    let session =
        std::fs::read_to_string(Path::new(ROOT).join("crates/flushlab-terminals/src/session.rs"))
            .unwrap();
    assert_eq!(session.matches("process::exit(").count(), 1);
    assert!(session.contains("Outcome::Signal(signal as usize).exit_code()"));
}

/// Result files are read through `from_sent_json` (numbers in range, texts escaped), wherever
/// one is read: no file that reads a run's report, a bench's results or a stored run parses its
/// bytes with serde_json itself.
#[test]
fn result_files_are_read_through_from_sent_json() {
    let mut wrong = Vec::new();
    let mut readers = 0;
    for (file, code) in sources() {
        let reads = [
            "InputKind::Results",
            "InputKind::RunReport",
            "InputKind::WrapRun",
        ]
        .iter()
        .any(|kind| code.contains(kind));
        if !reads || relative(&file).ends_with("files.rs") {
            continue;
        }
        readers += 1;
        if code.contains("serde_json::from_slice") || code.contains("serde_json::from_str") {
            wrong.push(relative(&file));
        }
        if !(code.contains("from_sent_json") || code.contains("BenchResults::from_json")) {
            wrong.push(format!("{}: no from_sent_json", relative(&file)));
        }
    }
    assert!(readers >= 4, "only {readers} readers of result files");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// wrap's, the terminals' and painting's files hold one idea each: none over 500 lines.
#[test]
fn no_file_over_500_lines_where_wrap_and_painting_live() {
    let mut files = Vec::new();
    for dir in [
        "crates/flushlab-wrap/src",
        "crates/flushlab-terminals/src",
        "src/painting",
    ] {
        rust_files(&Path::new(ROOT).join(dir), &mut files);
    }
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).unwrap().lines().count();
            (lines > 500).then(|| format!("{}: {lines} lines", relative(f)))
        })
        .collect();
    assert!(files.len() > 40, "only {} files", files.len());
    assert!(long.is_empty(), "{}", long.join("\n"));
}

/// wrap's docs are one page a task (docs/wrap/), none over 500 lines, so that a question is
/// answered on a page that can be read whole.
#[test]
fn no_page_of_wraps_docs_over_500_lines() {
    let pages: Vec<(String, usize)> = std::fs::read_dir(Path::new(ROOT).join("docs/wrap"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| {
            let lines = std::fs::read_to_string(&p).unwrap().lines().count();
            (relative(&p), lines)
        })
        .collect();
    assert!(pages.len() >= 8, "only {} pages: {pages:?}", pages.len());
    let long: Vec<&(String, usize)> = pages.iter().filter(|(_, n)| *n > 500).collect();
    assert!(long.is_empty(), "{long:?}");
}

/// No function is let past clippy's length, tests included: a long one is split by what it
/// does.
#[test]
fn no_function_is_let_past_its_length() {
    let mut files = Vec::new();
    for root in SOURCE_ROOTS.iter().chain(&[
        "crates/flushlab-observer/src",
        "examples",
        "tests",
        "benches",
    ]) {
        rust_files(&Path::new(ROOT).join(root), &mut files);
    }
    let allowed: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .contains(concat!("allow(clippy::", "too_many_lines)"))
        })
        .map(|f| relative(f))
        .collect();
    assert!(allowed.is_empty(), "{allowed:?}");
}

/// The top of src/ holds main.rs, lib.rs and folders: every other room lives with its concern.
#[test]
fn the_top_of_src_is_main_lib_and_folders() {
    let loose: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("src"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "main.rs" && name != "lib.rs")
        .collect();
    assert!(loose.is_empty(), "{loose:?}");
}

/// The crate border shows in every path: the binary's library re-exports nothing of the core,
/// so a room names `flushlab_core::meters`, never `crate::meters`.
#[test]
fn the_library_re_exports_nothing_of_the_core() {
    let lib = std::fs::read_to_string(Path::new(ROOT).join("src/lib.rs")).unwrap();
    let re_exports: Vec<&str> = lib
        .lines()
        .filter(|l| l.trim_start().starts_with("pub use") && l.contains("flushlab_core"))
        .collect();
    assert!(re_exports.is_empty(), "{re_exports:?}");
    assert!(!lib.contains("pub use flushlab_core"), "{lib}");
}

/// wrap's flags are read in one place: `WrapArgs` is named only where clap defines and parses
/// it (cli, args.rs), where it is lowered into the plan (lower.rs) and where the plan is asked
/// for (cli/wrap/mod.rs). The crate below cannot name it at all.
#[test]
fn wrap_args_are_read_only_by_the_lowering() {
    let allowed = [
        "src/cli/mod.rs",
        "src/cli/wrap/args.rs",
        "src/cli/wrap/lower.rs",
        "src/cli/wrap/mod.rs",
    ];
    let named: Vec<String> = sources()
        .iter()
        .filter(|(f, text)| !allowed.contains(&relative(f).as_str()) && text.contains("WrapArgs"))
        .map(|(f, _)| relative(f))
        .collect();
    assert!(named.is_empty(), "WrapArgs named in {named:?}");
}

/// The command line's module is imported by the lowering alone: the choices the crate's rooms
/// share (`Fix`, `ObserverArg`) are the crate's own.
#[test]
fn only_the_lowering_imports_wraps_args() {
    let importing: Vec<String> = sources()
        .iter()
        .filter(|(f, code)| !relative(f).starts_with("src/cli/") && code.contains("wrap::args"))
        .map(|(f, _)| relative(f))
        .collect();
    assert!(importing.is_empty(), "args.rs imported by {importing:?}");
}

/// The plan's types, from `struct Plan` to the file's end, as the crate's plan.rs defines
/// them; and the struct types among them.
fn plan_types() -> (String, Vec<String>) {
    let plan =
        std::fs::read_to_string(Path::new(ROOT).join("crates/flushlab-wrap/src/plan/mod.rs"))
            .unwrap();
    let start = plan
        .find("pub struct Plan {")
        .expect("plan.rs defines Plan");
    let types = plan[start..].to_owned();
    let structs = types
        .split("pub struct ")
        .skip(1)
        .filter_map(|rest| rest.split([' ', '{', '(']).next().map(str::to_owned))
        .collect();
    (types, structs)
}

/// The plan holds no type of clap's: what runs never sees how a flag was spelt.
#[test]
fn the_plan_holds_no_clap_type() {
    let (types, structs) = plan_types();
    assert!(structs.len() >= 5, "{structs:?}");
    for word in ["clap", "WrapArgs", "ArgMatches", "Args"] {
        let found = types
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .any(|l| {
                l.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .any(|w| w == word || w.starts_with(&format!("{word}::")))
            });
        assert!(!found, "the plan's types name {word}");
    }
}

/// The crate's types carry no clap of their own: built alone, without its features,
/// `flushlab-wrap` (and the crates under it) pulls no clap into its dependency tree. clap is a
/// feature the binary turns on.
#[test]
fn the_wrap_crate_depends_on_no_clap_without_its_feature() {
    let tree = std::process::Command::new(env!("CARGO"))
        .args(["tree", "--offline", "-p", "flushlab-wrap", "-e", "normal"])
        .args(["--no-default-features", "--prefix", "none"])
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(
        tree.status.success(),
        "{}",
        String::from_utf8_lossy(&tree.stderr)
    );
    let tree = String::from_utf8(tree.stdout).unwrap();
    assert!(tree.contains("flushlab-terminals"), "{tree}");
    let clap: Vec<&str> = tree.lines().filter(|l| l.starts_with("clap")).collect();
    assert!(clap.is_empty(), "{clap:?}");
}

/// The plan is built in the lowering alone: no struct of it is written out anywhere else (a
/// destructuring pattern, which ends in `..`, only reads one).
#[test]
fn the_plan_is_built_only_in_the_lowering() {
    let (_, structs) = plan_types();
    let mut built = Vec::new();
    // Where wrap's plan could be written out: the crate, and the binary's wrap flags (paint has
    // a `Plan` of its own). The plan's own file defines it.
    let wraps = |f: &Path| {
        let name = relative(f);
        (name.starts_with("crates/flushlab-wrap/src/") || name.starts_with("src/cli/"))
            && !name.ends_with("flushlab-wrap/src/plan/mod.rs")
            && !name.ends_with("cli/wrap/lower.rs")
    };
    for (file, text) in sources().iter().filter(|(f, _)| wraps(f)) {
        for name in &structs {
            let literal = format!("{name} {{");
            for (at, _) in text.match_indices(&literal) {
                let before = text[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let body = &text[at + literal.len()..];
                let body = &body[..body.find('}').unwrap_or(body.len())];
                if !body.trim_end().ends_with("..") {
                    built.push(format!("{}: {name}", relative(file)));
                }
            }
        }
    }
    assert!(
        built.is_empty(),
        "the plan built outside the lowering: {built:?}"
    );
}

/// Every Markdown table goes through the one table writer: no rule line (`|---|`) is written
/// anywhere else in the sources.
#[test]
fn markdown_tables_are_written_by_the_one_writer() {
    let writer = Path::new(ROOT).join("crates/flushlab-core/src/results/export/table.rs");
    let by_hand: Vec<String> = sources()
        .iter()
        // A test's expected text is no table written.
        .filter(|(f, _)| *f != writer && !f.to_string_lossy().ends_with("tests.rs"))
        .flat_map(|(f, code)| {
            code.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim_start().starts_with("//"))
                .filter(|(_, l)| l.contains("|---") || l.contains("|--:"))
                .map(|(n, _)| format!("{}:{}", relative(f), n + 1))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(by_hand.is_empty(), "tables written by hand: {by_hand:?}");
}

/// Layers and terminals are tables the compiler checks: every file that matches on a
/// `Terminal` or a `Layer` variant denies wildcard arms (`_ =>`), so that a variant added is a
/// compile error in each place that must describe it (clippy denies it in CI).
#[test]
fn layers_and_terminals_are_matched_without_a_wildcard() {
    let variant = |code: &str| {
        ["Terminal::", "Layer::"].iter().any(|enum_| {
            code.match_indices(enum_).any(|(at, _)| {
                // A variant, not a constant of the type's (`Terminal::ALL`).
                let mut rest = code[at + enum_.len()..].chars();
                rest.next().is_some_and(|c| c.is_ascii_uppercase())
                    && rest.next().is_some_and(|c| c.is_ascii_lowercase())
            })
        })
    };
    let deny = concat!("#![deny(clippy::", "wildcard_enum_match_arm)]");
    let mut naming = 0;
    let wild: Vec<String> = sources()
        .iter()
        // A test file's matches are its own (`*_tests.rs`, kept beside the room it tests).
        .filter(|(f, code)| !f.to_string_lossy().ends_with("tests.rs") && variant(code))
        .inspect(|_| naming += 1)
        .filter(|(_, code)| !code.contains(deny))
        .map(|(f, _)| relative(f))
        .collect();
    assert!(wild.is_empty(), "variants matched without {deny}: {wild:?}");
    assert!(naming >= 3, "{naming} files: the enums were not found");
}
