//! wrap's flags checked before anything starts: CMD found, every output writable and distinct,
//! the keys read, each feature's own checks asked (the observer, the terminal, `--against`),
//! samply found for `--profile`. What passes is the plan the run follows.

use super::args::{ObserverArg, WrapArgs};
use super::typing::Keys;
use crate::files::Destination;
use crate::keyscript::KeyScript;
use crate::outcome::{Outcome, Refusal, complain};

/// What a wrap does, its flags checked: CMD's program found on `PATH`, and whether CMD runs
/// interactive (no duration, stdout a terminal) or headless.
pub(super) struct WrapPlan {
    pub(super) program: std::path::PathBuf,
    pub(super) interactive: bool,
    pub(super) keys: Option<Keys>,
    /// `--profile`: samply, and the file it writes.
    pub(super) profile: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

/// The wrap's plan, or why its flags are refused (a CMD that is not a command, a report that
/// cannot be written) before anything starts.
pub(super) fn plan(args: &WrapArgs) -> Result<WrapPlan, Refusal> {
    let program = &args.command[0];
    let shown = crate::units::printable(&program.to_string_lossy());
    let path = std::path::Path::new(program);
    if program.to_string_lossy().contains('/') && path.is_file() && !path.is_dir() {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).map_or(0, |m| m.permissions().mode());
        if mode & 0o111 == 0 {
            return Err(Refusal {
                outcome: Outcome::NotExecutable,
                why: format!(
                    "wrap: '{shown}': permission denied (not executable: chmod +x, or run it through its interpreter)"
                ),
            });
        }
    }
    let Some(resolved) = crate::files::find_program(program) else {
        return Err(Refusal {
            outcome: Outcome::NotFound,
            why: format!(
                "wrap: '{}' is not a command (not found, or not executable)",
                crate::units::printable(&program.to_string_lossy())
            ),
        });
    };
    check_outputs(args)?;
    if let Some(plot) = &args.plot {
        plot.check_named_for("svg")
            .map_err(|e| format!("wrap: --plot {e}"))?;
    }
    let destinations: Vec<&Destination> = args.outputs().map(|(_, d)| d).collect();
    crate::results::export::distinct_destinations(
        &destinations,
        "--export-json, --trace, --plot, --export-markdown",
    )
    .map_err(|e| format!("wrap: {e}"))?;
    let script = match (&args.keys, &args.keys_file) {
        (Some(script), _) => Some(script.clone()),
        (None, Some(path)) => Some(read_keys_file(path)?),
        (None, None) => None,
    };
    let kernel = matches!(args.observer, ObserverArg::Auto | ObserverArg::Kernel);
    super::via::check(&args.via, args.link_settings(), script.is_some(), kernel)
        .map_err(Refusal::bad_input)?;
    super::in_terminal::check(args, script.is_some())?;
    super::inside::check(args, &resolved)?;
    super::against::check(args, script.is_some())?;
    if args.keys_after.is_some() && script.is_none() {
        return Err("wrap: --keys-after needs --keys or --keys-file"
            .to_owned()
            .into());
    }
    let interactive = args.duration.is_none()
        && script.is_none()
        && std::io::IsTerminal::is_terminal(&std::io::stdout());
    if args.plot.is_some() && script.is_none() && !interactive {
        return Err(
            "wrap: --plot draws keys: give --keys or --keys-file (or type them, interactive)"
                .to_owned()
                .into(),
        );
    }
    let profile = match &args.profile {
        Some(path) => profile_plan(path)?,
        None => None,
    };
    let keys = script.map(|script| Keys {
        script,
        after: args.keys_after,
    });
    Ok(WrapPlan {
        program: resolved,
        // Keys are typed by wrap, so a run with keys is headless.
        interactive,
        keys,
        profile,
    })
}

/// Every output writable, checked before anything runs as the identity that will write it:
/// under sudo wrap becomes the person who ran it before it writes (running.rs), so their outputs
/// are checked as them, or a run would be measured only to be lost.
fn check_outputs(args: &WrapArgs) -> Result<(), Refusal> {
    let writer = (!args.as_root && args.via.is_empty() && args.terminal.is_none())
        .then(crate::sys::user::sudo_invoker)
        .flatten();
    for (flag, destination) in args.outputs() {
        let checked = match &writer {
            Some(them) => them
                .as_them(|| destination.check())
                .and_then(|checked| checked)
                .map_err(|e| format!("{e} (as {}, whom wrap writes as under sudo)", them.name)),
            None => destination.check().map_err(|e| e.to_string()),
        };
        checked.map_err(|e| format!("wrap: {flag} '{destination}': {e}"))?;
    }
    Ok(())
}

/// `--profile FILE`: a file that can be written (refused before anything starts), and samply
/// ready to record; where samply or the kernel's perf events are missing, that is said in one
/// line with the fix and the run goes on without a profile.
fn profile_plan(
    path: &std::path::Path,
) -> Result<Option<(std::path::PathBuf, std::path::PathBuf)>, Refusal> {
    let shown = crate::units::printable(&path.to_string_lossy());
    if path.as_os_str() == "-" {
        return Err("wrap: --profile '-': samply writes a file: name one"
            .to_owned()
            .into());
    }
    let symbols = crate::files::sibling(path, ".syms.json", true);
    for file in [path, &symbols] {
        crate::files::check_writable(file).map_err(|e| {
            let file = crate::units::printable(&file.to_string_lossy());
            format!("wrap: --profile '{shown}': cannot write '{file}': {e}")
        })?;
    }
    match super::profiling::samply() {
        Ok(samply) => Ok(Some((samply, path.to_owned()))),
        Err(why) => {
            complain(&format!(
                "wrap: --profile '{shown}': {why}; measuring without a profile"
            ));
            Ok(None)
        }
    }
}

/// `--keys-file`: the script, or a refusal naming the file and what is wrong with it. Read as
/// every file others send is (`files::read_input`): a FIFO or a device is refused at once, never
/// waited on, and 1 MiB at most.
fn read_keys_file(path: &std::path::Path) -> Result<KeyScript, Refusal> {
    use crate::files::{InputKind, read_input};
    let shown = crate::units::printable(&path.to_string_lossy());
    let bytes = read_input(path, InputKind::KeyScript)
        .map_err(|e| format!("wrap: --keys-file '{shown}': {e}"))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("wrap: --keys-file '{shown}': not UTF-8 text"))?;
    KeyScript::parse(&text).map_err(|e| format!("wrap: --keys-file '{shown}': {e}").into())
}
