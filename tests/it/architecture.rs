//! ARCHITECTURE.md stays true: every path it names exists, and every `module::item` or
//! `Type::method` it names is defined where it says.

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// Where the rooms are: the binary's and the core's.
const SOURCE_ROOTS: [&str; 2] = ["src", "crates/flushlab-core/src"];
/// Names of other crates (and placeholders) the page speaks of.
const NOT_OURS: [&str; 5] = ["clap", "crate", "flushlab", "flushlab_core", "module"];

/// The backticked spans of the page.
fn spans(page: &str) -> Vec<&str> {
    page.split('`').skip(1).step_by(2).collect()
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
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
    let tracer = Path::new(ROOT).join("src/tracer");
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
        for (at, _) in code.match_indices("super::") {
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
