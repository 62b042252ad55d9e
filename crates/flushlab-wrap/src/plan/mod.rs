//! What a wrap does, every flag read and checked: the [`Plan`] the binary's flags are lowered
//! into once (ripgrep's `LowArgs → HiArgs`; the lowering is the binary's, `src/cli/wrap/`), CMD
//! found, the observer chosen, every output writable and distinct, the keys read, the
//! terminal's display and the wire's layers decided. Everything in this crate takes the plan, or
//! the part of it it needs, and never a flag.

//!
//! The bottom floor but for the observers' choice and the wire's layers it names: it imports no
//! run, report or mode.

pub mod destinations;
pub mod keys;
pub mod profile;
pub mod run_figures;
pub mod stored_run;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::observers::choice::Choice;
use crate::observers::fix::Fix;
use crate::plan::destinations::Outputs;
use crate::plan::keys::Keys;
use crate::plan::profile::Profile;
use crate::plan::stored_run::Baseline;
use crate::via::{Layer, LinkSettings};
use flushlab_core::results::conditions::ReaderModel;
use flushlab_core::statistics::verdict::Looks;
use flushlab_terminals::browser::Renderer;
use flushlab_terminals::emulators::Terminal;
use flushlab_terminals::terminal_option::TerminalOption;
use flushlab_terminals::wayland::Session;

/// What a wrap does, every flag read and checked.
#[derive(Clone, Debug)]
pub struct Plan {
    pub cmd: Invocation,
    /// No duration, no keys, stdout a terminal: CMD runs on the user's terminal.
    pub interactive: bool,
    /// `--duration`: wrap ends CMD after it (`None`: when CMD exits, or its keys are done).
    pub duration: Option<Duration>,
    /// The headless pty's size (a terminal's window's, with `--terminal`).
    pub size: (u16, u16),
    pub reader: ReaderModel,
    /// `--paint`: the terminal model's policy (`None`: no model).
    pub paint: Option<flushlab_core::seen::PaintPolicy>,
    pub frame_gap: Duration,
    pub looking: Choice,
    pub keys: Option<Keys>,
    pub outputs: Outputs,
    pub profile: Option<Profile>,
    pub mode: Mode,
    pub terminal: Option<InTerminal>,
    pub via: Option<Via>,
    /// Under sudo, CMD runs as root too (`--as-root`); else as the person who ran sudo.
    pub as_root: bool,
    pub exit_with_parent: Option<i32>,
}

/// CMD as the user invoked it: its words as given, and its program found on `PATH`.
#[derive(Clone, Debug)]
pub struct Invocation {
    pub words: Vec<OsString>,
    pub program: PathBuf,
}

impl Invocation {
    /// The words after the program's.
    pub fn arguments(&self) -> &[OsString] {
        &self.words[1..]
    }

    /// Its words as text (for the JSON).
    pub fn words_text(&self) -> Vec<String> {
        self.words
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// The command line, for one line.
    pub fn line(&self) -> String {
        flushlab_core::units::one_line(&self.words_text().join(" "))
    }
}

/// What the run is.
#[derive(Clone, Debug)]
pub enum Mode {
    /// One run, with `--try`'s fix or as it is.
    Once { fix: Option<Fix> },
    /// `--compare`: as is and tried, alternating.
    Compare(Comparing),
    /// `--against`: NEW (this plan) against OLD.
    Against(AgainstPlan),
}

/// `--compare`'s fix, and how many rounds of as is and tried.
#[derive(Clone, Copy, Debug)]
pub struct Comparing {
    pub fix: Fix,
    pub rounds: u32,
}

/// `--against`'s rounds and what they are judged against.
#[derive(Clone, Debug)]
pub struct AgainstPlan {
    pub old: Old,
    pub until: Until,
    /// A change within this share of OLD is no change.
    pub threshold: f64,
}

/// `--against`'s OLD.
#[derive(Clone, Debug)]
pub enum Old {
    /// Another build: NEW's plan but for its command and what follows from it (its observer).
    Build(Box<Plan>),
    /// A run stored with `--export-json`.
    Stored(Box<Baseline>),
}

/// `--terminal`: the emulator, its settings, and the display it opens on.
#[derive(Clone, Debug)]
pub struct InTerminal {
    pub terminal: Terminal,
    pub options: Vec<TerminalOption>,
    pub display: Display,
    /// `--camera`: the window's pixels kept for each key's flashes and tears (own Xvfb, Wayland).
    pub camera: bool,
}

/// Where `--terminal`'s window opens.
#[derive(Clone, Debug)]
pub enum Display {
    /// flushlab's own Xvfb (`None`) or `--display`.
    X11(Option<String>),
    Wayland(Session),
    /// flushlab's own headless Chromium, xterm.js drawing with this renderer.
    Chromium(Renderer),
}

/// `--via`: the layers CMD runs at the far end of, and the link under them.
#[derive(Clone, Debug)]
pub struct Via {
    pub layers: Vec<Layer>,
    pub link: LinkSettings,
}

/// When the rounds end.
#[derive(Clone, Debug, PartialEq)]
pub enum Until {
    /// After this many rounds (`--rounds N`).
    Rounds(usize),
    /// At the first look whose verdict decides, or at the last look: the rounds budget, or the
    /// round that would run past `max_time`.
    Decisive { looks: Looks, max_time: Duration },
}

impl Until {
    /// The looks the verdict is drawn at: one at the end for a fixed count.
    pub fn looks(&self) -> Looks {
        match self {
            Until::Rounds(n) => Looks::fixed(*n),
            Until::Decisive { looks, .. } => looks.clone(),
        }
    }
}

/// Plans for the crate's tests, as the lowering would make them of `wrap --keys … -- WORDS`:
/// headless, no observer, nothing written.
#[cfg(test)]
pub(crate) mod for_tests {
    use super::*;
    use crate::observers::choice::{Needs, ObserverArg};

    pub(crate) fn plan(words: &[&str]) -> Plan {
        let program = PathBuf::from(words[0]);
        Plan {
            looking: Choice::of(
                ObserverArg::None,
                (&program, &[], words[0]),
                Needs::default(),
            )
            .unwrap(),
            cmd: Invocation {
                words: words.iter().map(OsString::from).collect(),
                program,
            },
            interactive: false,
            duration: None,
            size: (80, 24),
            reader: ReaderModel::Drain,
            paint: None,
            frame_gap: Duration::from_millis(2),
            keys: Some(keys()),
            outputs: Outputs::default(),
            profile: None,
            mode: Mode::Once { fix: None },
            terminal: None,
            via: None,
            as_root: false,
            exit_with_parent: None,
        }
    }

    pub(crate) fn keys() -> Keys {
        Keys {
            script: flushlab_core::keyscript::KeyScript::parse("j*10@100ms").unwrap(),
            after: None,
        }
    }

    pub(crate) fn comparing(fix: Fix, rounds: u32) -> Comparing {
        Comparing { fix, rounds }
    }

    /// `--against OLD` until `until`, a change within 5% no change.
    pub(crate) fn against(old: &[&str], until: Until) -> AgainstPlan {
        AgainstPlan {
            old: Old::Build(Box::new(plan(old))),
            until,
            threshold: 0.05,
        }
    }

    /// `--against run.json` (the stored run `baseline`) until `until`.
    pub(crate) fn against_stored(baseline: Baseline, until: Until) -> AgainstPlan {
        AgainstPlan {
            old: Old::Stored(Box::new(baseline)),
            until,
            threshold: 0.05,
        }
    }

    /// `--terminal T` on flushlab's own Xvfb, no camera.
    pub(crate) fn in_terminal(terminal: Terminal) -> InTerminal {
        InTerminal {
            terminal,
            options: Vec::new(),
            display: Display::X11(None),
            camera: false,
        }
    }
}
