//! Every link in README.md and docs/ resolves, and every page the code sends a person to: a
//! page moved or a heading renamed fails here, not in a reader's browser.

use std::path::Path;

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            found.push(anchor(line));
        }
    }
    found
}

/// Whether `target` (a path, `#anchor` or both), read from `from`'s folder, names a file that
/// is there and, in a Markdown file, a heading it has.
fn resolves(from: &Path, target: &str) -> Result<(), String> {
    let (path, fragment) = target.split_once('#').unwrap_or((target, ""));
    let file = if path.is_empty() {
        from.to_path_buf()
    } else {
        from.parent().unwrap().join(path)
    };
    if !file.exists() {
        return Err(format!("no {}", file.display()));
    }
    if fragment.is_empty() || file.extension().is_none_or(|e| e != "md") {
        return Ok(());
    }
    let text = std::fs::read_to_string(&file).unwrap();
    match anchors(&text).iter().any(|a| a == fragment) {
        true => Ok(()),
        false => Err(format!("no heading #{fragment} in {}", file.display())),
    }
}

/// The targets of a Markdown text's links, `[text](TARGET)`.
fn link_targets(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            let end = rest.find(')')?;
            let target = &rest[..end];
            (!target.is_empty() && !target.contains(char::is_whitespace)).then(|| target.to_owned())
        })
        .collect()
}

/// Every `docs/NAME.md` or `docs/NAME.md#anchor` a text names.
fn docs_named(text: &str) -> Vec<String> {
    let part = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '-' | '.' | '#');
    text.match_indices("docs/")
        .filter(|(at, _)| !text[..*at].ends_with(|c: char| c.is_ascii_alphanumeric()))
        .filter_map(|(at, _)| {
            let end = text[at..].find(|c| !part(c)).map_or(text.len(), |e| at + e);
            let named = text[at..end].trim_end_matches('.');
            let (path, _) = named.split_once('#').unwrap_or((named, ""));
            path.ends_with(".md").then(|| named.to_owned())
        })
        .collect()
}

/// Every link in README.md and docs/ (and the other pages at the top) resolves: its file is
/// there and its anchor is a heading of it; so does every `docs/….md#anchor` the code sends a
/// person to.
#[test]
fn every_link_in_the_docs_and_the_code_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<std::path::PathBuf> = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]
        .iter()
        .map(|p| root.join(p))
        .collect();
    super::architecture::files_with_extension(&root.join("docs"), "md", &mut pages);
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            if let Err(why) = resolves(page, &target) {
                broken.push(format!("{}: ({target}): {why}", page.display()));
            }
        }
    }
    let mut code = Vec::new();
    for dir in ["src", "crates"] {
        super::architecture::files_with_extension(&root.join(dir), "rs", &mut code);
    }
    for file in &code {
        let text = std::fs::read_to_string(file).unwrap();
        for target in docs_named(&text) {
            checked += 1;
            if let Err(why) = resolves(&root.join("README.md"), &target) {
                broken.push(format!("{}: {target}: {why}", file.display()));
            }
        }
    }
    assert!(checked > 100, "only {checked} links found");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
