//! The layers `--via` takes, the link's flags, and what is checked of them before anything
//! starts. What a layer is, is said once here, each in an exhaustive match: a layer added is a
//! compile error wherever it must be described (docs: ARCHITECTURE.md, "How to add a layer").

#![deny(clippy::wildcard_enum_match_arm)]

use std::time::Duration;

use serde::Serialize;

use super::link::LinkSettings;

/// A layer between the near end (wrap's pty) and CMD.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// An ssh connection: the ssh client at the near end, sshd and CMD at the far end.
    Ssh,
    /// A tmux session CMD runs in: its server redraws the terminal its client is in.
    Tmux,
    /// mosh-client at the near end, mosh-server at the far (started through ssh): it redraws
    /// the near terminal from the far screen's state.
    Mosh,
}

impl Layer {
    /// Every layer, in the table's order.
    pub const ALL: [Layer; 3] = [Layer::Ssh, Layer::Tmux, Layer::Mosh];

    pub fn name(self) -> &'static str {
        match self {
            Layer::Ssh => "ssh",
            Layer::Tmux => "tmux",
            Layer::Mosh => "mosh",
        }
    }

    /// Whether it crosses wrap's link (two network namespaces, an sshd): `--rtt`, `--rate`,
    /// `--loss` and `--loopback` shape only such a layer.
    pub fn crosses_the_link(self) -> bool {
        match self {
            Layer::Ssh | Layer::Mosh => true,
            Layer::Tmux => false,
        }
    }

    /// Whether it redraws the near terminal from a screen of its own instead of passing CMD's
    /// bytes: a key's frame is then matched by time, not by its bytes.
    pub fn redraws(self) -> bool {
        match self {
            Layer::Tmux | Layer::Mosh => true,
            Layer::Ssh => false,
        }
    }

    /// Whether, first at the near end, it runs in a pid namespace of its own (so that its
    /// server ends with the run) and a mount namespace where it writes no login record.
    pub fn own_namespaces_near(self) -> bool {
        match self {
            Layer::Tmux => true,
            Layer::Ssh | Layer::Mosh => false,
        }
    }

    /// How many round trips its connection takes at CMD's start, as the link retries them
    /// (ssh's handshake, then CMD's start; mosh's, its server already started through ssh),
    /// and what that start is called when it never ends.
    pub fn start(self) -> (&'static str, u32) {
        match self {
            Layer::Ssh => ("the ssh connection (its handshake, then CMD's start)", 12),
            Layer::Mosh => ("mosh's connection", 3),
            Layer::Tmux => ("tmux's start of CMD", 0),
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
                flushlab_core::units::one_line(text)
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
                flushlab_core::units::one_line(text)
            )
        })
}

/// `--loss SHARE`: 0 to 0.5 (or 0% to 50%).
pub fn parse_loss(text: &str) -> Result<f64, String> {
    let refused = || {
        format!(
            "'{}' is no loss: a share from 0 to 0.5 (or 0% to 50%), e.g. 0.01",
            flushlab_core::units::one_line(text)
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

/// The programs each layer needs, with the Debian package that brings it (mosh starts its
/// server through ssh: ssh's too).
fn needs(layer: Layer) -> Vec<(&'static str, &'static str)> {
    match layer {
        Layer::Ssh => vec![
            ("/usr/sbin/sshd", "openssh-server"),
            ("ssh", "openssh-client"),
            ("ssh-keygen", "openssh-client"),
            ("unshare", "util-linux"),
            ("setpriv", "util-linux"),
            ("mount", "mount"),
        ],
        Layer::Tmux => vec![
            ("tmux", "tmux"),
            ("env", "coreutils"),
            ("unshare", "util-linux"),
            ("setpriv", "util-linux"),
        ],
        Layer::Mosh => [
            needs(Layer::Ssh),
            vec![("mosh-server", "mosh"), ("mosh-client", "mosh")],
        ]
        .concat(),
    }
}

/// The chains of layers this build runs, from the near end.
const CHAINS: &[&[Layer]] = &[
    &[Layer::Ssh],
    &[Layer::Tmux],
    &[Layer::Mosh],
    &[Layer::Ssh, Layer::Tmux],
    &[Layer::Mosh, Layer::Tmux],
];

/// `--via`'s layers checked before anything starts: the kernel observer allowed to look (the
/// only one that can at the far end), a chain this build runs, the link's flags only with a
/// layer that crosses it, each program installed (the package named where one is missing),
/// root for the namespaces, and keys to type.
pub fn check(
    layers: &[Layer],
    link: LinkSettings,
    has_keys: bool,
    kernel: bool,
) -> Result<(), String> {
    if layers.is_empty() {
        return Ok(());
    }
    let named = |layers: &[Layer]| {
        layers
            .iter()
            .map(|l| l.name())
            .collect::<Vec<_>>()
            .join(",")
    };
    if !kernel {
        return Err(
            "wrap --via: only the kernel observer looks at the far end (--observer auto or \
             kernel)"
                .to_owned(),
        );
    }
    if !CHAINS.contains(&layers) {
        let chains: Vec<String> = CHAINS.iter().map(|c| named(c)).collect();
        return Err(format!(
            "wrap --via {}: not a chain this flushlab runs (choose {})",
            named(layers),
            chains.join(", ")
        ));
    }
    if link.loopback && (!link.rtt.is_zero() || link.loss > 0.0) {
        return Err(
            "wrap --loopback: there is no relay to delay or drop (no --rtt or --loss with it)"
                .to_owned(),
        );
    }
    let link_asked = !link.rtt.is_zero() || link.rate.is_some() || link.loss > 0.0 || link.loopback;
    if link_asked && !layers.iter().any(|l| l.crosses_the_link()) {
        let crossing: Vec<Layer> = Layer::ALL
            .into_iter()
            .filter(|l| l.crosses_the_link())
            .collect();
        return Err(format!(
            "wrap --via {}: --rtt, --rate, --loss and --loopback shape the link, which only {} \
             cross",
            named(layers),
            named(&crossing).replace(',', " and ")
        ));
    }
    for layer in layers {
        for (program, package) in needs(*layer) {
            if flushlab_core::files::find_program(program.as_ref()).is_none() {
                return Err(format!(
                    "wrap --via {}: '{program}' is not installed (Debian: apt-get install {package})",
                    layer.name()
                ));
            }
        }
    }
    if !rustix::process::geteuid().is_root() {
        return Err(
            "wrap --via: the layers run in namespaces of wrap's own, which need root (sudo \
             flushlab wrap --via …)"
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

    fn link(rtt_ms: u64) -> LinkSettings {
        LinkSettings {
            rtt: Duration::from_millis(rtt_ms),
            rate: None,
            loss: 0.0,
            loopback: false,
        }
    }

    #[test]
    fn only_the_chains_this_build_runs_are_taken() {
        for chain in [
            &[Layer::Ssh, Layer::Mosh][..],
            &[Layer::Ssh, Layer::Ssh],
            &[Layer::Tmux, Layer::Ssh],
        ] {
            let refused = check(chain, link(0), true, true).unwrap_err();
            assert!(refused.contains("not a chain"), "{refused}");
            assert!(refused.contains("ssh,tmux"), "{refused}");
        }
        let refused = check(&[Layer::Tmux], link(40), true, true).unwrap_err();
        assert!(refused.contains("--rtt"), "{refused}");
        let loopback = LinkSettings {
            loopback: true,
            ..link(40)
        };
        let refused = check(&[Layer::Ssh], loopback, true, true).unwrap_err();
        assert!(refused.contains("no relay"), "{refused}");
        let refused = check(&[Layer::Ssh], link(0), true, false).unwrap_err();
        assert!(refused.contains("kernel"), "{refused}");
    }
}
