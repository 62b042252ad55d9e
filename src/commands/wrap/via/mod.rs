//! `wrap --via LAYERS`: CMD at the far end of real layers (an ssh connection to an sshd of
//! wrap's own), over a link of wrap's own (two network namespaces joined by a packet relay that
//! delays, paces and drops), with the kernel observer rooted at CMD on the far side. Keys are
//! typed into the near end as a person types them; every event is on CLOCK_MONOTONIC, so a key
//! is timed end to end on one clock.
//!
//! What runs, from the near end: wrap's pty ← the ssh client (near namespace) ⇄ the relay
//! (wrap's threads, one TUN device in each namespace) ⇄ sshd (far namespace, a pid and mount
//! namespace of its own) → the shim ([`far_root`]) → CMD. The wire (link, sshd, keys) is
//! started once a wrap and ends with it; each run is one ssh connection.

pub mod both_ends;
pub mod far_root;
mod link;
mod sshd;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

pub use self::link::{Link, LinkSettings};

/// A layer between the near end (wrap's pty) and CMD.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// An ssh connection: the ssh client at the near end, sshd and CMD at the far end.
    Ssh,
    /// A tmux session CMD runs in (not run yet: refused by the plan, named).
    Tmux,
    /// mosh-client at the near end, mosh-server at the far (not run yet: refused, named).
    Mosh,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::Ssh => "ssh",
            Layer::Tmux => "tmux",
            Layer::Mosh => "mosh",
        }
    }
}

/// The longest round trip `--rtt` takes: 10 s.
const MAX_RTT_MS: f64 = 10_000.0;
/// The lowest rate `--rate` takes: below it an ssh handshake alone takes seconds.
const MIN_RATE: u64 = 1_000;

/// `--rtt MS`: 0 to 10,000 ms.
pub fn parse_rtt(text: &str) -> Result<Duration, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|ms| ms.is_finite() && (0.0..=MAX_RTT_MS).contains(ms))
        .map(|ms| Duration::from_secs_f64(ms / 1e3))
        .ok_or_else(|| {
            format!(
                "'{}' is no round trip: milliseconds from 0 to 10000, e.g. 40",
                crate::units::one_line(text)
            )
        })
}

/// `--rate BYTES/s`: 1,000 or more.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|rate| *rate >= MIN_RATE)
        .ok_or_else(|| {
            format!(
                "'{}' is no rate: bytes a second, {MIN_RATE} or more, e.g. 125000",
                crate::units::one_line(text)
            )
        })
}

/// `--loss SHARE`: 0 to 0.5 (or 0% to 50%).
pub fn parse_loss(text: &str) -> Result<f64, String> {
    let refused = || {
        format!(
            "'{}' is no loss: a share from 0 to 0.5 (or 0% to 50%), e.g. 0.01",
            crate::units::one_line(text)
        )
    };
    let value = match text.trim().strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map(|p| p / 100.0),
        None => text.trim().parse::<f64>(),
    };
    value
        .ok()
        .filter(|v| (0.0..=0.5).contains(v))
        .ok_or_else(refused)
}

/// The programs each layer needs, with the Debian package that brings it.
fn needs(layer: Layer) -> &'static [(&'static str, &'static str)] {
    match layer {
        Layer::Ssh => &[
            ("/usr/sbin/sshd", "openssh-server"),
            ("ssh", "openssh-client"),
            ("ssh-keygen", "openssh-client"),
            ("unshare", "util-linux"),
            ("setpriv", "util-linux"),
            ("mount", "mount"),
        ],
        Layer::Tmux => &[("tmux", "tmux")],
        Layer::Mosh => &[("mosh-server", "mosh"), ("mosh-client", "mosh")],
    }
}

/// `--via`'s layers checked before anything starts: the kernel observer allowed to look (the
/// only one that can at the far end), each layer one run here, its programs installed (the
/// package named where one is missing), and root for the namespaces.
pub fn check(layers: &[Layer], has_keys: bool, kernel: bool) -> Result<(), String> {
    if layers.is_empty() {
        return Ok(());
    }
    if !kernel {
        return Err(
            "wrap --via: only the kernel observer looks at the far end (--observer auto or \
             kernel)"
                .to_owned(),
        );
    }
    if let Some(layer) = layers.iter().find(|l| **l != Layer::Ssh) {
        return Err(format!(
            "wrap --via {}: this flushlab runs CMD through ssh only (--via ssh); tmux and mosh \
             are not layers it can start yet",
            layer.name()
        ));
    }
    if layers.len() > 1 {
        return Err("wrap --via: one ssh layer (--via ssh); a chain is not run yet".to_owned());
    }
    for layer in layers {
        for (program, package) in needs(*layer) {
            if crate::files::find_program(program.as_ref()).is_none() {
                return Err(format!(
                    "wrap --via {}: '{program}' is not installed (Debian: apt-get install {package})",
                    layer.name()
                ));
            }
        }
    }
    if !rustix::process::geteuid().is_root() {
        return Err(
            "wrap --via: the link runs in network namespaces of wrap's own, which need root \
             (sudo flushlab wrap --via …)"
                .to_owned(),
        );
    }
    if !has_keys {
        return Err(
            "wrap --via: give --keys or --keys-file (keys are typed at the near end and timed \
             through the wire)"
                .to_owned(),
        );
    }
    Ok(())
}

/// What the run's report says of the wire.
#[derive(Clone, Debug, Serialize)]
pub struct ViaSettings {
    pub layers: Vec<Layer>,
    pub rtt_ms: f64,
    pub rate_bytes_per_s: Option<u64>,
    pub loss: f64,
    /// How near-end pieces were matched to CMD's frames: `bytes` (ssh forwards a byte stream:
    /// a frame's bytes are its share of what reached the near end, in order).
    pub matching: &'static str,
    /// The relay's bounded queue, each way, in bytes.
    pub queue_bytes: u64,
}

/// What a run says of its wire: the settings, each key's frame at the near end, and what
/// crossed the link.
#[derive(Clone, Debug, Serialize)]
pub struct ViaReport {
    #[serde(flatten)]
    pub settings: ViaSettings,
    #[serde(flatten)]
    pub keys: crate::detect::wire::OverTheWire,
    pub wire: WireFigures,
}

/// What crossed the link towards the near end while each answered key's frame did (from the
/// far frame's first write to its last byte at the near end): IP packets, headers included,
/// and how many the link dropped in the whole run.
#[derive(Clone, Debug, Serialize)]
pub struct WireFigures {
    pub packets_per_frame: Option<crate::detect::keyed::Percentiles>,
    pub bytes_per_frame: Option<crate::detect::keyed::Percentiles>,
    pub dropped_up: u64,
    pub dropped_down: u64,
}

impl ViaReport {
    /// The run's keys followed through `wire`.
    pub fn of(
        wire: &Wire,
        timeline: &crate::detect::timeline::Timeline,
        latencies: &crate::detect::keyed::KeyLatencies,
    ) -> ViaReport {
        use crate::detect::keyed::Percentiles;
        let keys = crate::detect::wire::over_the_wire(timeline, latencies);
        let crossed: Vec<(u64, u64)> = latencies
            .each
            .iter()
            .zip(&keys.each)
            .filter_map(|(key, near)| {
                // From the frame's first write: an unbuffered frame crosses while it is drawn.
                let (_, first, _) = key
                    .stage_spans()
                    .into_iter()
                    .find(|(stage, _, _)| *stage == crate::detect::keyed::Stage::Emit)?;
                let last = key.sent_ns + (near.last_byte_ms? * 1e6) as u64;
                wire.link.down_between(first, last + 1)
            })
            .collect();
        let (dropped_up, dropped_down) = wire.link.dropped();
        ViaReport {
            settings: wire.settings.clone(),
            keys,
            wire: WireFigures {
                packets_per_frame: Percentiles::of(crossed.iter().map(|c| c.0 as f64)),
                bytes_per_frame: Percentiles::of(crossed.iter().map(|c| c.1 as f64)),
                dropped_up,
                dropped_down,
            },
        }
    }

    /// The summary's lines.
    pub fn summary(&self) -> String {
        let p = |p: &Option<crate::detect::keyed::Percentiles>, unit: &str| {
            p.map_or("n/a".to_owned(), |p| {
                format!(
                    "{:.2}{unit} / {:.2}{unit} / {:.2}{unit}",
                    p.p50, p.p95, p.max
                )
            })
        };
        let layers: Vec<&str> = self.settings.layers.iter().map(|l| l.name()).collect();
        let rate = self
            .settings
            .rate_bytes_per_s
            .map_or("unlimited".to_owned(), |r| format!("{r} B/s"));
        format!(
            "wrap via {} (rtt {} ms, rate {rate}, loss {}; frames matched by {}, pieces from \
             {}), p50 / p95 / max: key→last byte {} · uplink {} · downlink {} · pieces a frame \
             {} · tear {} · on the wire a frame {} packets; dropped {} up, {} down",
            layers.join(","),
            self.settings.rtt_ms,
            self.settings.loss,
            self.settings.matching,
            match self.keys.pieces_from {
                Some(crate::detect::timeline::PiecesFrom::NearWrites) => "the near writer's writes",
                Some(crate::detect::timeline::PiecesFrom::NearReads) => "wrap's reads",
                None => "nothing",
            },
            p(&self.keys.key_to_last_byte_ms, " ms"),
            p(&self.keys.uplink_ms, " ms"),
            p(&self.keys.downlink_ms, " ms"),
            p(&self.keys.pieces_per_frame, ""),
            p(&self.keys.tear_ms, " ms"),
            p(&self.wire.packets_per_frame, ""),
            self.wire.dropped_up,
            self.wire.dropped_down,
        )
    }
}

/// The wire, started once a wrap: the link, the sshd at its far end, the client's scratch
/// configuration; all of it ends as this drops (and with wrap however it ends: the namespaces
/// go with their last process, sshd's pid namespace with sshd).
pub struct Wire {
    /// Declared first: dropped (the sshd ended) before the scratch directory goes.
    sshd: sshd::Sshd,
    link: Link,
    scratch: crate::files::Scratch,
    /// Removes the scratch directory where wrap could not (SIGKILL): declared after it.
    _sweeper: Sweeper,
    settings: ViaSettings,
}

/// A process that removes a directory once wrap is gone, however it goes: it waits to read
/// from a pipe whose only writer is wrap (close-on-exec, so no program wrap starts holds it),
/// and the kernel closes that with wrap's last fd, SIGKILL included. On a normal end the
/// directory is gone already (`Scratch`'s drop) and its `rm -rf` finds nothing.
struct Sweeper {
    pipe: Option<std::process::ChildStdin>,
    child: std::process::Child,
}

impl Sweeper {
    fn start(dir: &Path) -> std::io::Result<Sweeper> {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read -r _ || true; rm -rf -- \"$1\"", "sh"])
            .arg(dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        Ok(Sweeper {
            pipe: child.stdin.take(),
            child,
        })
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        self.pipe.take();
        let _ = self.child.wait();
    }
}

impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wire")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Wire {
    /// The link up, sshd listening at its far end for `far_user`.
    pub fn start(layers: &[Layer], link: LinkSettings) -> std::io::Result<Wire> {
        let scratch = crate::files::Scratch::new("flushlab-via")?;
        let sweeper = Sweeper::start(scratch.path())?;
        let link = Link::start(link)?;
        let sshd = sshd::Sshd::start(scratch.path(), &link)?;
        let settings = ViaSettings {
            layers: layers.to_vec(),
            rtt_ms: link.settings().rtt.as_secs_f64() * 1e3,
            rate_bytes_per_s: link.settings().rate,
            loss: link.settings().loss,
            matching: "bytes",
            queue_bytes: link::QUEUE_BYTES,
        };
        Ok(Wire {
            sshd,
            link,
            scratch,
            _sweeper: sweeper,
            settings,
        })
    }

    /// The executables the wire runs (sshd, the ssh client), as `/proc` names them: wrap's
    /// descendants that are not CMD.
    pub fn programs(&self) -> Vec<PathBuf> {
        ["/usr/sbin/sshd", "ssh"]
            .iter()
            .filter_map(|p| crate::files::find_program(p.as_ref()))
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .collect()
    }

    pub fn settings(&self) -> &ViaSettings {
        &self.settings
    }

    pub fn link(&self) -> &Link {
        &self.link
    }

    /// The scratch directory a run's far root listens in.
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// What the near end runs for CMD (`program`, resolved, and its `words`): the ssh client,
    /// whose far command is the shim, which names itself at `socket` and then becomes CMD in
    /// wrap's working directory.
    pub fn near_command(
        &self,
        socket: &Path,
        program: &Path,
        words: &[OsString],
    ) -> std::io::Result<(PathBuf, Vec<OsString>)> {
        let shim = std::env::current_exe()?;
        let cwd = std::env::current_dir()?;
        let mut far: Vec<OsString> = vec![
            "exec".into(),
            shim.into_os_string(),
            far_root::SUBCOMMAND.into(),
            "--socket".into(),
            socket.into(),
            "--cwd".into(),
            cwd.into_os_string(),
            "--".into(),
            program.into(),
        ];
        far.extend(words.iter().cloned());
        self.sshd.client_command(&far)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_flags_are_refused_out_of_range() {
        assert!(parse_rtt("-1").is_err());
        assert!(parse_rtt("10001").is_err());
        assert!(parse_rtt("nan").is_err());
        assert_eq!(parse_rtt("40"), Ok(Duration::from_millis(40)));
        assert!(parse_rate("999").is_err());
        assert_eq!(parse_rate("125000"), Ok(125_000));
        assert!(parse_loss("0.6").is_err());
        assert!(parse_loss("-0.1").is_err());
        assert_eq!(parse_loss("5%"), Ok(0.05));
        assert!(parse_rtt("4\u{1b}[2J").unwrap_err().contains("\\u{1b}"));
    }

    #[test]
    fn only_ssh_is_a_layer_this_build_runs() {
        let refused = check(&[Layer::Tmux], true, true).unwrap_err();
        assert!(refused.contains("--via tmux"), "{refused}");
        let refused = check(&[Layer::Ssh, Layer::Ssh], true, true).unwrap_err();
        assert!(refused.contains("chain"), "{refused}");
    }
}
