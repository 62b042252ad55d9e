//! When a terminal paints: a named, typed policy, parsed once from `--paint`'s text and said
//! back the same way in every report.

use std::fmt;
use std::time::Duration;

/// When the terminal turns what it has parsed into pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum When {
    /// After every read: xterm, and any terminal that paints as soon as it has parsed.
    Eager,
    /// At each tick of a display refreshing `hz` times a second (alacritty, xterm.js in a
    /// browser's animation frames).
    Vsync { hz: f64 },
    /// After input, once `lower` passed without more, or `upper` after the first unpainted
    /// input at the latest (foot's `delayed-render-lower`/`-upper`, kitty's `input_delay`).
    Delay { lower: Duration, upper: Duration },
}

/// A synchronized-output block's form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncForm {
    /// `ESC[?2026h` … `ESC[?2026l`
    Csi,
    /// `ESC P=1s ESC\` … `ESC P=2s ESC\`
    Dcs,
}

/// The synchronized-output forms a terminal honours: while a block is open it paints nothing
/// new, for at most its hold limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SyncForms {
    /// `ESC[?2026h` … `ESC[?2026l` (DEC mode 2026).
    pub csi: bool,
    /// `ESC P=1s ESC\` … `ESC P=2s ESC\` (the older DCS form).
    pub dcs: bool,
}

/// A paint policy: when the terminal paints, which synchronized-output forms it honours, and
/// how long it holds a block that never ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PaintPolicy {
    pub when: When,
    pub sync: SyncForms,
    /// A block open this long is painted anyway (vte and alacritty: 150 ms; xterm.js: 1 s).
    pub hold: Duration,
    /// … or once it holds this many bytes (vte: 2 MiB).
    pub hold_bytes: usize,
}

/// vte's and alacritty's hold limit for a block that never ends.
pub const HOLD: Duration = Duration::from_millis(150);
/// vte's byte limit for a held block.
pub const HOLD_BYTES: usize = 2 << 20;

/// One refresh of a 60 Hz display: a visible state shorter than this may never reach a
/// screen, so the headline counts leave it out (it is counted apart).
pub const REFRESH: Duration = Duration::from_nanos(16_666_667);

/// Written as it is read: `eager,sync=csi+dcs,hold=150`.
impl serde::Serialize for PaintPolicy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl Default for PaintPolicy {
    /// Headless runs model the most demanding terminal: one that paints at every read and
    /// honours both synchronized-output forms, as kitty and foot do.
    fn default() -> Self {
        PaintPolicy {
            when: When::Eager,
            sync: SyncForms {
                csi: true,
                dcs: true,
            },
            hold: HOLD,
            hold_bytes: HOLD_BYTES,
        }
    }
}

const CHOICES: &str = "eager, vsync:HZ or delay:LOWER-UPPER (ms), then optionally ,sync=none|csi|dcs|csi+dcs and ,hold=MS";

impl std::str::FromStr for PaintPolicy {
    type Err = String;

    fn from_str(text: &str) -> Result<PaintPolicy, String> {
        let bad = |why: &str| {
            format!(
                "paint policy '{}': {why}; expected {CHOICES}, e.g. delay:0.5-8.3,sync=csi,hold=150",
                crate::units::printable(text)
            )
        };
        let mut parts = text.trim().split(',');
        let when = parts.next().unwrap_or_default().trim();
        let ms = |t: &str| {
            t.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0 && *v <= 60_000.0)
                .map(|v| Duration::from_secs_f64(v / 1e3))
        };
        let when = match when.split_once(':') {
            None if when == "eager" => When::Eager,
            Some(("vsync", hz)) => When::Vsync {
                hz: hz
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|h| h.is_finite() && (1.0..=1000.0).contains(h))
                    .ok_or_else(|| bad("the refresh rate is a number of Hz from 1 to 1000"))?,
            },
            Some(("delay", range)) => {
                let (lower, upper) = range
                    .split_once('-')
                    .and_then(|(l, u)| ms(l).zip(ms(u)))
                    .filter(|(l, u)| l <= u)
                    .ok_or_else(|| bad("the delay is LOWER-UPPER in ms, lower not above upper"))?;
                When::Delay { lower, upper }
            }
            _ => return Err(bad("unknown way to paint")),
        };
        let mut policy = PaintPolicy {
            when,
            ..PaintPolicy::default()
        };
        for part in parts {
            match part.trim().split_once('=') {
                Some(("sync", forms)) => {
                    policy.sync = match forms.trim() {
                        "none" => SyncForms::default(),
                        "csi" => SyncForms {
                            csi: true,
                            dcs: false,
                        },
                        "dcs" => SyncForms {
                            csi: false,
                            dcs: true,
                        },
                        "csi+dcs" | "dcs+csi" => SyncForms {
                            csi: true,
                            dcs: true,
                        },
                        _ => return Err(bad("sync= takes none, csi, dcs or csi+dcs")),
                    }
                }
                Some(("hold", limit)) => {
                    policy.hold = ms(limit.trim().trim_end_matches("ms"))
                        .filter(|d| !d.is_zero())
                        .ok_or_else(|| bad("hold= takes a number of ms above 0"))?;
                }
                _ => return Err(bad(&format!("unknown part '{}'", part.trim()))),
            }
        }
        Ok(policy)
    }
}

impl fmt::Display for PaintPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        match self.when {
            When::Eager => f.write_str("eager")?,
            When::Vsync { hz } => write!(f, "vsync:{hz}")?,
            When::Delay { lower, upper } => write!(f, "delay:{}-{}", ms(lower), ms(upper))?,
        }
        let forms = match (self.sync.csi, self.sync.dcs) {
            (false, false) => "none",
            (true, false) => "csi",
            (false, true) => "dcs",
            (true, true) => "csi+dcs",
        };
        write!(f, ",sync={forms},hold={}", ms(self.hold))
    }
}

impl PaintPolicy {
    /// Whether the policy holds its paints for a block in this form.
    pub fn honours(&self, form: SyncForm) -> bool {
        match form {
            SyncForm::Csi => self.sync.csi,
            SyncForm::Dcs => self.sync.dcs,
        }
    }

    /// When a change first made at `first_ns`, and last at `last_ns`, is painted.
    pub(super) fn due(&self, first_ns: u64, last_ns: u64) -> u64 {
        let ns = |d: Duration| d.as_nanos() as u64;
        match self.when {
            When::Eager => last_ns,
            When::Vsync { hz } => {
                // Rounded: a 60 Hz period is one refresh (`REFRESH`), not a nanosecond short.
                let period = (1e9 / hz).round() as u64;
                (first_ns / period + 1) * period
            }
            When::Delay { lower, upper } => (last_ns + ns(lower)).min(first_ns + ns(upper)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_read_back_as_they_were_written() {
        for text in [
            "eager,sync=csi+dcs,hold=150",
            "vsync:60,sync=dcs,hold=150",
            "delay:0.5-8.3,sync=csi,hold=1000",
            "eager,sync=none,hold=150",
        ] {
            let policy: PaintPolicy = text.parse().unwrap();
            assert_eq!(policy.to_string(), text);
            assert_eq!(policy.to_string().parse::<PaintPolicy>(), Ok(policy));
        }
        assert_eq!("eager".parse(), Ok(PaintPolicy::default()));
    }

    #[test]
    fn bad_policies_name_the_value_and_the_choices() {
        for text in [
            "",
            "fast",
            "vsync:0",
            "vsync:x",
            "delay:9-1",
            "delay:1",
            "eager,sync=yes",
            "eager,hold=0",
            "eager,colour=red",
            "eager\x1b[2J",
        ] {
            let error = text.parse::<PaintPolicy>().unwrap_err();
            assert!(error.contains("expected eager, vsync:HZ"), "{error}");
            assert!(!error.contains('\x1b'), "{error}");
            assert_eq!(error.lines().count(), 1, "{error}");
        }
    }

    #[test]
    fn each_way_paints_when_it_should() {
        let ms = 1_000_000;
        let eager = PaintPolicy::default();
        assert_eq!(eager.due(5 * ms, 7 * ms), 7 * ms);
        let vsync: PaintPolicy = "vsync:100".parse().unwrap();
        assert_eq!(vsync.due(5 * ms, 7 * ms), 10 * ms);
        assert_eq!(vsync.due(10 * ms, 10 * ms), 20 * ms);
        let delay: PaintPolicy = "delay:1-8".parse().unwrap();
        assert_eq!(delay.due(5 * ms, 7 * ms), 8 * ms);
        assert_eq!(delay.due(5 * ms, 12 * ms), 13 * ms);
    }
}
