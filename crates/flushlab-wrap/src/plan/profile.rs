//! `--profile FILE` as the plan holds it: samply found and FILE known writable before anything
//! starts (the recording itself is the run's: `run::profiling`).

use std::path::{Path, PathBuf};

/// `--profile`: samply, and the file it writes.
#[derive(Clone, Debug)]
pub struct Profile {
    pub samply: PathBuf,
    pub file: PathBuf,
}

/// `--profile FILE`: samply, once FILE and its symbols' file are known to be writable (refused
/// before anything starts); `None` where samply or the kernel's perf events are missing, said
/// in one line with the fix: the run goes on without a profile.
pub fn samply_for(path: &Path) -> Result<Option<PathBuf>, String> {
    let shown = flushlab_core::units::printable(&path.to_string_lossy());
    if path.as_os_str() == "-" {
        return Err("wrap: --profile '-': samply writes a file: name one".to_owned());
    }
    let symbols = flushlab_core::files::sibling(path, ".syms.json", true);
    for file in [path, &symbols] {
        flushlab_core::files::check_writable(file).map_err(|e| {
            let file = flushlab_core::units::printable(&file.to_string_lossy());
            format!("wrap: --profile '{shown}': cannot write '{file}': {e}")
        })?;
    }
    match samply() {
        Ok(samply) => Ok(Some(samply)),
        Err(why) => {
            flushlab_core::outcome::complain(&format!(
                "wrap: --profile '{shown}': {why}; measuring without a profile"
            ));
            Ok(None)
        }
    }
}

/// samply, or why it cannot record here: one line, with the fix.
fn samply() -> Result<PathBuf, String> {
    let found = flushlab_core::files::find_program("samply".as_ref()).or_else(|| {
        let home = std::env::var_os("HOME")?;
        let cargo = PathBuf::from(home).join(".cargo/bin/samply");
        cargo.is_file().then_some(cargo)
    });
    let Some(samply) = found else {
        return Err("samply is not installed: cargo install samply --locked".to_owned());
    };
    match flushlab_core::sys::perf_event_paranoid() {
        Some(level) if level > 1 => Err(format!(
            "the kernel refuses perf events to this user (perf_event_paranoid is {level}): \
             sudo sysctl kernel.perf_event_paranoid=1"
        )),
        _ => Ok(samply),
    }
}
