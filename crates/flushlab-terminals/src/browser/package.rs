//! xterm.js as the page loads it: its npm packages, pinned by version and integrity, installed
//! once (`npm ci --ignore-scripts`) into flushlab's cache, and read from there at run time
//! (nothing is fetched while a run runs).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

/// One package of the page's: its name, version, and the registry's integrity of its tarball.
struct Pinned {
    name: &'static str,
    version: &'static str,
    integrity: &'static str,
}

/// xterm.js 6 (synchronized output, DEC 2026; no canvas renderer) and its WebGL renderer.
const PINNED: [Pinned; 2] = [
    Pinned {
        name: "@xterm/xterm",
        version: "6.0.0",
        integrity: "sha512-TQwDdQGtwwDt+2cgKDLn0IRaSxYu1tSUjgKarSDkUM0ZNiSRXFpjxEsvc/Zgc5kq5omJ+V0a8/kIM2WD3sMOYg==",
    },
    Pinned {
        name: "@xterm/addon-webgl",
        version: "0.19.0",
        integrity: "sha512-b3fMOsyLVuCeNJWxolACEUED0vm7qC0cy4wRvf3oURSzDTYVQiGPhTnhWZwIHdvC48Y+oLhvYXnY4XDXPoJo6A==",
    },
];

/// The files the page loads, as it names them, and where each is in the installed packages.
pub const FILES: [(&str, &str, &str); 3] = [
    ("xterm.js", "@xterm/xterm/lib/xterm.js", "text/javascript"),
    ("xterm.css", "@xterm/xterm/css/xterm.css", "text/css"),
    (
        "addon-webgl.js",
        "@xterm/addon-webgl/lib/addon-webgl.js",
        "text/javascript",
    ),
];

/// xterm.js's version, as a run says it.
pub fn version() -> &'static str {
    PINNED[0].version
}

/// The installed packages' `node_modules`: from the cache, installed there first if they are
/// not (said in one line on stderr).
pub fn installed() -> anyhow::Result<PathBuf> {
    let (dir, files) = cache()?;
    if !files.iter().all(|path| path.is_file()) {
        install(&dir)?;
    }
    Ok(dir.join("node_modules"))
}

/// Whether the packages can be had: installed in the cache already, or npm and node here to
/// install them; else the one line that names the Debian package.
pub fn check() -> anyhow::Result<()> {
    if cache()?.1.iter().all(|path| path.is_file()) {
        return Ok(());
    }
    crate::display::installed("node", "nodejs")?;
    crate::display::installed("npm", "npm")?;
    Ok(())
}

/// The cache's directory for the pinned packages, and the files the page loads in it.
fn cache() -> anyhow::Result<(PathBuf, Vec<PathBuf>)> {
    let dir = cache_dir()?.join(format!(
        "xtermjs-{}-webgl-{}",
        PINNED[0].version, PINNED[1].version
    ));
    let files = FILES
        .iter()
        .map(|(_, path, _)| dir.join("node_modules").join(path))
        .collect();
    Ok((dir, files))
}

/// `$XDG_CACHE_HOME/flushlab`, else `~/.cache/flushlab`.
fn cache_dir() -> anyhow::Result<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty()).context(
            "HOME is not set: nowhere to keep xterm.js's packages (set XDG_CACHE_HOME)",
        )?)
        .join(".cache"),
    };
    Ok(base.join("flushlab"))
}

/// The lock file `npm ci` installs from and checks each tarball against.
fn lock_file() -> serde_json::Value {
    let dependencies: serde_json::Map<String, serde_json::Value> = PINNED
        .iter()
        .map(|p| (p.name.to_owned(), p.version.into()))
        .collect();
    let mut packages = serde_json::Map::new();
    packages.insert(
        String::new(),
        serde_json::json!({ "name": "flushlab-xtermjs", "dependencies": dependencies }),
    );
    for p in &PINNED {
        packages.insert(
            format!("node_modules/{}", p.name),
            serde_json::json!({ "version": p.version, "integrity": p.integrity, "license": "MIT" }),
        );
    }
    serde_json::json!({
        "name": "flushlab-xtermjs",
        "lockfileVersion": 3,
        "requires": true,
        "packages": packages,
    })
}

/// Installs the pinned packages into `dir`: beside it first, then renamed into place, so that a
/// run stopped half-way leaves no half-installed cache.
fn install(dir: &Path) -> anyhow::Result<()> {
    check()?;
    let npm = crate::display::installed("npm", "npm")?;
    let parent = dir.parent().context("the cache has no parent directory")?;
    std::fs::create_dir_all(parent)
        .with_context(|| format!("creating the cache {}", parent.display()))?;
    let building = parent.join(format!(
        ".{}.{}",
        dir.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        flushlab_core::files::unpredictable()
    ));
    std::fs::create_dir(&building)?;
    let cleanup = Cleanup(&building);
    let manifest = serde_json::json!({
        "name": "flushlab-xtermjs",
        "private": true,
        "dependencies": lock_file()["packages"][""]["dependencies"],
    });
    std::fs::write(building.join("package.json"), manifest.to_string())?;
    std::fs::write(building.join("package-lock.json"), lock_file().to_string())?;
    eprintln!(
        "wrap: installing xterm.js {} and its WebGL addon {} (npm, pinned by integrity) into {}",
        PINNED[0].version,
        PINNED[1].version,
        dir.display()
    );
    // npm's own cache in the directory being built, removed before it moves into place:
    // nothing is written outside flushlab's cache.
    let npm_cache = building.join(".npm-cache");
    let out = Command::new(npm)
        .args([
            "ci",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ])
        .env("npm_config_cache", &npm_cache)
        .env("npm_config_update_notifier", "false")
        .current_dir(&building)
        .stdin(Stdio::null())
        .output()
        .context("running npm ci")?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        let line = said
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        bail!(
            "npm could not install xterm.js ({}): {}",
            out.status,
            flushlab_core::units::printable(line.trim())
        );
    }
    let _ = std::fs::remove_dir_all(&npm_cache);
    match std::fs::rename(&building, dir) {
        Ok(()) => {}
        // Another run installed it first: keep theirs.
        Err(_) if dir.join("node_modules").is_dir() => {}
        Err(e) => {
            return Err(e).with_context(|| format!("moving the packages to {}", dir.display()));
        }
    }
    drop(cleanup);
    Ok(())
}

/// Removes a directory when dropped (what is left of an install that did not finish).
struct Cleanup<'a>(&'a Path);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_file_pins_every_package_by_integrity() {
        let lock = lock_file();
        for p in &PINNED {
            let entry = &lock["packages"][format!("node_modules/{}", p.name)];
            assert_eq!(entry["version"], p.version);
            assert!(entry["integrity"].as_str().unwrap().starts_with("sha512-"));
            assert_eq!(lock["packages"][""]["dependencies"][p.name], p.version);
        }
    }
}
