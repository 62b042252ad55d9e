//! The wire, started once a wrap: the layers' scratch directory, the link and sshd where ssh
//! is a layer, tmux's directory where tmux is, and what the near end runs for CMD.

#![deny(clippy::wildcard_enum_match_arm)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::far_root;
use super::far_user::{FarUser, NO_LOGIN_RECORDS};
use super::layers::Layer;
use super::link::{self, Link, LinkSettings};
use super::{mosh, sshd, tmux};

/// What CMD's start at the far end may take besides the link's round trips: sshd's fork, the
/// far user's shell, the shim's start, on a busy machine.
const START_BASE: Duration = Duration::from_secs(10);

/// What the run's report says of the wire.
#[derive(Clone, Debug, Serialize)]
pub struct ViaSettings {
    pub layers: Vec<Layer>,
    pub rtt_ms: f64,
    pub rate_bytes_per_s: Option<u64>,
    pub loss: f64,
    /// `--loopback`: the ends over one namespace's loopback, no relay between them.
    pub loopback: bool,
    /// How near-end pieces were matched to CMD's frames: `bytes` (ssh forwards a byte stream:
    /// a frame's bytes are its share of what reached the near end, in order) or `time` (tmux
    /// redraws: a frame's pieces follow its first write, [`Redrawn`](flushlab_core::detect::timeline::Redrawn)).
    pub matching: &'static str,
    /// Matching by time: how long a pause between two near-end pieces ends a frame's, in ms.
    pub quiet_ms: Option<f64>,
    /// The relay's bounded queue, each way, in bytes.
    pub queue_bytes: u64,
}

/// The wire, started once a wrap: the link and the sshd at its far end (where ssh is a layer),
/// tmux's socket directory and configuration (where tmux is), in a scratch directory; all of it
/// ends as this drops (and with wrap however it ends: the namespaces go with their last
/// process, sshd's pid namespace with sshd).
pub struct Wire {
    /// Declared first: dropped (the sshd ended) before the scratch directory goes.
    sshd: Option<sshd::Sshd>,
    link: Option<Link>,
    tmux: Option<tmux::Tmux>,
    far_user: FarUser,
    /// Swept: removed where wrap could not remove it (SIGKILL).
    scratch: flushlab_core::files::Scratch,
    settings: ViaSettings,
}

impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wire")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Wire {
    /// The layers' scratch directory, and the link up with sshd listening at its far end
    /// where ssh is one.
    pub fn start(layers: &[Layer], link: LinkSettings) -> std::io::Result<Wire> {
        let scratch = flushlab_core::files::Scratch::swept("flushlab-via")?;
        let far_user = FarUser::of_invoker();
        // The far user passes through the scratch directory into `far/`, theirs: sshd reads
        // their authorized key there as them, tmux keeps its socket there, and CMD's shim
        // reaches wrap's socket there.
        if far_user.uid != 0 {
            std::fs::set_permissions(
                scratch.path(),
                std::os::unix::fs::PermissionsExt::from_mode(0o711),
            )?;
        }
        let far = scratch.path().join("far");
        std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
            .create(&far)?;
        far_user.owns(&far)?;
        let crosses = layers.iter().any(|l| l.crosses_the_link());
        let (link, sshd) = match crosses {
            true => {
                let link = Link::start(link)?;
                let sshd = sshd::Sshd::start(scratch.path(), (&far, &far_user), &link)?;
                (Some(link), Some(sshd))
            }
            false => (None, None),
        };
        let tmux = match layers.contains(&Layer::Tmux) {
            true => Some(tmux::Tmux::prepare(&far, &far_user)?),
            false => None,
        };
        let shaped = link.as_ref().map(Link::settings);
        let redraws = layers.iter().any(|l| l.redraws());
        let settings = ViaSettings {
            layers: layers.to_vec(),
            rtt_ms: shaped.map_or(0.0, |l| l.rtt.as_secs_f64() * 1e3),
            rate_bytes_per_s: shaped.and_then(|l| l.rate),
            loss: shaped.map_or(0.0, |l| l.loss),
            loopback: shaped.is_some_and(|l| l.loopback),
            matching: if redraws { "time" } else { "bytes" },
            quiet_ms: redraws.then(|| quiet(shaped.and_then(|l| l.rate)).as_secs_f64() * 1e3),
            queue_bytes: link::QUEUE_BYTES,
        };
        Ok(Wire {
            sshd,
            link,
            tmux,
            far_user,
            scratch,
            settings,
        })
    }

    /// The executables the wire runs (sshd, the ssh client, tmux and what starts it), as
    /// `/proc` names them: wrap's descendants that are not CMD.
    pub fn programs(&self) -> Vec<PathBuf> {
        [
            "/usr/sbin/sshd",
            "ssh",
            "tmux",
            "mosh-client",
            "setpriv",
            "unshare",
            "env",
        ]
        .iter()
        .filter_map(|p| flushlab_core::files::find_program(p.as_ref()))
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect()
    }

    /// The link, where a layer crosses one.
    pub fn link(&self) -> Option<&Link> {
        self.link.as_ref()
    }

    /// The wire's processes that outlive a run (sshd, the sweeper): a run's end spares them.
    pub fn lasting(&self) -> Vec<i32> {
        self.sshd
            .iter()
            .map(sshd::Sshd::pid)
            .chain(self.scratch.sweeper())
            .collect()
    }

    pub fn settings(&self) -> &ViaSettings {
        &self.settings
    }

    /// What the link adds to a run's waits: CMD's start at the far end given the round trips
    /// of the first layer's connection (ssh's handshake; mosh's, its server already started
    /// through ssh) as the link retries them, the keys' answers a round trip.
    pub(crate) fn waits(&self) -> LinkWaits {
        let link = self.link.as_ref().map(Link::settings);
        let (what, round_trips) = self
            .settings
            .layers
            .first()
            // No layer (the plan refuses `--via` without one): nothing but CMD to start.
            .map_or(("CMD's start", 0), |l| l.start());
        let within = link.map_or(START_BASE, |l| l.patience(START_BASE, round_trips));
        let said_link = link.map_or(String::new(), |l| {
            format!(
                " at RTT {}, loss {}",
                flushlab_core::units::milliseconds(l.rtt.as_secs_f64() * 1e3),
                flushlab_core::units::plain(l.loss)
            )
        });
        LinkWaits {
            start_within: Some(within),
            not_started: format!(
                "wrap --via {}: {what} did not finish in {:.1} s{said_link}: CMD never started \
                 at the far end",
                self.settings
                    .layers
                    .iter()
                    .map(|l| l.name())
                    .collect::<Vec<_>>()
                    .join(","),
                within.as_secs_f64()
            ),
            round_trip: link.map_or(Duration::ZERO, |l| l.rtt),
            more_at_most: link.map_or(Duration::ZERO, |l| l.patience(Duration::ZERO, 2)),
        }
    }

    /// How frames are matched to the near end by time, where a layer redraws.
    pub fn redrawn(&self) -> Option<flushlab_core::detect::timeline::Redrawn> {
        let quiet_ms = self.settings.quiet_ms?;
        Some(flushlab_core::detect::timeline::Redrawn {
            delay_ns: (self.settings.rtt_ms / 2.0 * 1e6) as u64,
            quiet_ns: (quiet_ms * 1e6) as u64,
        })
    }

    /// Runs `spawn` (which starts the near end) where the near end lives: the link's near
    /// namespace, where there is a link.
    pub fn in_near<T>(&self, spawn: impl FnOnce() -> T) -> std::io::Result<T> {
        match &self.link {
            Some(link) => link.in_near(spawn),
            None => Ok(spawn()),
        }
    }

    /// The scratch directory a run's far root listens in.
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// COMMAND in a pid namespace of its own (its server ends with it) and a mount namespace
    /// where it writes no login record, as the far user: a first layer that asks for it.
    fn in_own_namespaces(&self, command: Vec<OsString>) -> Vec<OsString> {
        let mut near: Vec<OsString> = ["--pdeathsig", "KILL", "--", "unshare", "--pid"]
            .into_iter()
            .chain([
                "--fork",
                "--kill-child",
                "--mount",
                "--propagation",
                "private",
            ])
            .chain(["--", "sh", "-c", NO_LOGIN_RECORDS, "sh"])
            .map(OsString::from)
            .collect();
        if self.far_user.uid != 0 {
            near.extend([
                "setpriv".into(),
                format!("--reuid={}", self.far_user.uid).into(),
                format!("--regid={}", self.far_user.gid).into(),
                "--init-groups".into(),
                "--".into(),
            ]);
        }
        near.extend(command);
        std::iter::once("setpriv".into()).chain(near).collect()
    }

    /// What the near end runs for CMD (`program`, resolved, and its `words`): the layers from
    /// the far end in — the shim, which names itself at `socket` and then becomes CMD in wrap's
    /// working directory, inside tmux, inside ssh. A tmux at the near end runs in a pid
    /// namespace of its own (its server ends with it), and a mount namespace where it writes
    /// no login record, as the far user.
    pub fn near_command(
        &self,
        socket: &Path,
        program: &Path,
        words: &[OsString],
    ) -> std::io::Result<NearCommand> {
        let mut environment = Vec::new();
        let shim = far_root::FarRootArgs {
            socket: socket.to_owned(),
            cwd: std::env::current_dir()?,
            command: std::iter::once(program.into())
                .chain(words.iter().cloned())
                .collect(),
        };
        let mut command = vec![std::env::current_exe()?.into_os_string()];
        command.extend(shim.argv());
        for &layer in self.settings.layers.iter().rev() {
            let not_started = || {
                std::io::Error::other(format!(
                    "wrap --via: the {} layer was not started",
                    layer.name()
                ))
            };
            command = match layer {
                Layer::Tmux => self
                    .tmux
                    .as_ref()
                    .ok_or_else(not_started)?
                    .command(&command),
                Layer::Ssh => {
                    let sshd = self.sshd.as_ref().ok_or_else(not_started)?;
                    let far: Vec<OsString> =
                        std::iter::once("exec".into()).chain(command).collect();
                    let (ssh, words) = sshd.client_command(&far, true)?;
                    std::iter::once(ssh.into_os_string()).chain(words).collect()
                }
                Layer::Mosh => {
                    let sshd = self.sshd.as_ref().ok_or_else(not_started)?;
                    let link = self.link.as_ref().ok_or_else(not_started)?;
                    let client = mosh::start(sshd, link, &command)?;
                    environment.extend(client.environment);
                    client.words
                }
            };
        }
        if self
            .settings
            .layers
            .first()
            .is_some_and(|l| l.own_namespaces_near())
        {
            command = self.in_own_namespaces(command);
        }
        let mut words = command.into_iter();
        let first = words.next().unwrap_or_default();
        let program = flushlab_core::files::find_program(first.as_ref()).ok_or_else(|| {
            std::io::Error::other(format!(
                "wrap --via: '{}' is not installed",
                first.to_string_lossy()
            ))
        })?;
        Ok(NearCommand {
            program,
            words: words.collect(),
            environment,
        })
    }
}

/// What the near end runs: a program, its words, and what its environment adds (mosh's key).
#[derive(Clone, Debug)]
pub struct NearCommand {
    pub program: PathBuf,
    pub words: Vec<OsString>,
    pub environment: Vec<(OsString, OsString)>,
}

/// Matching by time: the longest pause within one frame's pieces at the near end. tmux
/// redraws a frame in writes microseconds apart; through a paced link, a packet of 1,500 B
/// takes 1,500 / rate s to cross, and three of them may fall between two writes.
fn quiet(rate: Option<u64>) -> Duration {
    let floor = Duration::from_millis(20);
    rate.map_or(floor, |rate| {
        floor.max(Duration::from_secs_f64(3.0 * 1_500.0 / rate as f64))
    })
}

/// What a link between wrap and CMD (`--via`) adds to the watcher's waits; nothing without one.
/// Every wait the link lengthens is here, derived from the link (`Wire::waits`), so that a
/// slow or lossy link neither cuts a run short nor lets it run unbounded.
#[derive(Clone, Debug, Default)]
pub(crate) struct LinkWaits {
    /// CMD's shim must name itself at the far end within this of the run's start, else the
    /// run ends, said by `not_started`.
    pub(crate) start_within: Option<Duration>,
    /// Why the far side never started, in one line, once `start_within` has passed.
    pub(crate) not_started: String,
    /// One round trip: a key's answer comes back no sooner.
    pub(crate) round_trip: Duration,
    /// Added to [`SETTLE_AT_MOST`]: the last keys and their answers, sent again under loss.
    pub(crate) more_at_most: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paced_link_lengthens_the_pause_within_a_frame() {
        assert_eq!(quiet(None), Duration::from_millis(20));
        assert_eq!(quiet(Some(10_000_000)), Duration::from_millis(20));
        assert_eq!(quiet(Some(125_000)), Duration::from_millis(36));
    }
}
