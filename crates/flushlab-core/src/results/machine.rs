//! Where results were measured: the machine (its cores, kernel, CPU and how its idle CPUs
//! wait) and, for a tour, the terminal as far as it tells.

use serde::{Deserialize, Serialize};

use super::conditions::SyncOutput;

/// The machine the results were measured on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cores: usize,
    pub kernel: String,
    pub cpu_model: String,
    /// How its idle CPUs wait, where the kernel says: on a VM whose idle vCPUs halt at once,
    /// every blocking hand-off (a writer sleeping on a full pty) costs an exit to the host, and
    /// a writer that sleeps gets half of what one that polls does (docs/results/writer-wait.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<Idle>,
}

/// The kernel's cpuidle driver and, for `haltpoll` (a KVM guest), how long an idle vCPU polls
/// for work before it halts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Idle {
    pub driver: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halt_poll_ns: Option<u64>,
}

impl Idle {
    /// This machine's, where the kernel says.
    pub fn this() -> Option<Idle> {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .ok()
                .map(|s| s.trim().to_owned())
        };
        let driver = read("/sys/devices/system/cpu/cpuidle/current_driver")?;
        let halt_poll_ns = (driver == "haltpoll")
            .then(|| {
                read("/sys/module/haltpoll/parameters/guest_halt_poll_ns")?
                    .parse()
                    .ok()
            })
            .flatten();
        Some(Idle {
            driver,
            halt_poll_ns,
        })
    }

    /// Whether an idle vCPU halts at once (`haltpoll` polling 0 ns): every wake of a sleeping
    /// thread is then an exit to the host.
    pub fn halts_at_once(&self) -> bool {
        self.halt_poll_ns == Some(0)
    }
}

impl std::fmt::Display for Idle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.halt_poll_ns {
            Some(0) => write!(f, "{}: idle vCPUs halt at once", self.driver),
            Some(ns) => write!(
                f,
                "{}: idle vCPUs poll {} µs, then halt",
                self.driver,
                ns / 1000
            ),
            None => write!(f, "cpuidle {}", self.driver),
        }
    }
}

impl Machine {
    pub fn this() -> Machine {
        let cpu_model = crate::sys::process::cpu_model().unwrap_or_else(|| "unknown".to_owned());
        let uname = rustix::system::uname();
        Machine {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: format!(
                "{} {}",
                uname.sysname().to_string_lossy(),
                uname.release().to_string_lossy()
            ),
            cpu_model,
            idle: Idle::this(),
        }
    }
}

/// The terminal a tour ran in, as far as it tells.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TerminalIdentity {
    pub term: Option<String>,
    pub term_program: Option<String>,
    pub term_program_version: Option<String>,
    /// The reply to XTVERSION (`CSI > 0 q`), if any.
    pub version_reply: Option<String>,
    /// The reply to DA2 (`CSI > c`): type; version; ROM, e.g. `85;95;0` from rxvt-unicode.
    #[serde(default)]
    pub secondary_attributes: Option<String>,
    pub cols: u16,
    pub rows: u16,
    /// Synchronized output (DEC mode 2026) per DECRQM.
    pub sync_output: SyncOutput,
}

impl TerminalIdentity {
    /// What the terminal calls itself: its XTVERSION answer; else its DA2 answer when the type
    /// there names a terminal (terminals without XTVERSION, such as rxvt-unicode, often do);
    /// else $TERM_PROGRAM (and version); else $TERM.
    pub fn name(&self) -> Option<String> {
        // DA2 types that name one program rather than a DEC model many terminals claim.
        const PROGRAMS: [(&str, &str); 4] = [
            ("77", "mintty"),
            ("83", "screen"),
            ("84", "tmux"),
            ("85", "rxvt-unicode"),
        ];
        let by_attributes = self.secondary_attributes.as_ref().and_then(|params| {
            let kind = params.split(';').next()?;
            let (_, program) = PROGRAMS.iter().find(|(k, _)| *k == kind)?;
            Some(format!("{program} (DA2 {params})"))
        });
        let by_program =
            self.term_program
                .as_ref()
                .map(|program| match &self.term_program_version {
                    Some(version) => format!("{program} {version}"),
                    None => program.clone(),
                });
        // Every source is someone else's text ($TERM, a terminal's answer): a name is printed
        // in tables and on the terminal, so its control characters are escaped here, once.
        self.version_reply
            .clone()
            .or(by_attributes)
            .or(by_program)
            .or_else(|| self.term.clone())
            .map(|name| crate::units::one_line(&name))
    }
}
