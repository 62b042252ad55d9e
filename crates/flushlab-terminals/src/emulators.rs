//! The terminals flushlab can start, and how each is told its size, its app id, its own
//! settings (`wrap --terminal-option`, [`crate::terminal_option`]) and the command it runs: the launch table
//! [`crate::display::launch`] reads. Every match on [`Terminal`] names each terminal (no
//! wildcard arm): a terminal added is a compile error wherever it must be described.

#![deny(clippy::wildcard_enum_match_arm)]

use std::ffi::OsString;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::terminal_option::TerminalOption;

use flushlab_core::seen::policy::{PaintPolicy, SyncForms, When};

/// One of a terminal's settings that makes it wait before it renders: its key, its default, and
/// the value that takes the wait out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderDelay {
    pub key: &'static str,
    pub default: &'static str,
    pub off: &'static str,
}

/// A terminal emulator flushlab can launch on its X server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Terminal {
    Xterm,
    St,
    Alacritty,
    Kitty,
    Urxvt,
    Mlterm,
    /// Wayland only: `wrap --terminal foot` runs it on flushlab's own headless compositor.
    Foot,
    /// xterm.js in headless Chromium, its DOM renderer (`wrap --terminal xtermjs` only).
    #[cfg_attr(feature = "clap", value(skip))]
    #[serde(rename = "xtermjs")]
    XtermJs,
    /// xterm.js in headless Chromium, its WebGL renderer (`wrap --terminal xtermjs:webgl`).
    #[cfg_attr(feature = "clap", value(skip))]
    #[serde(rename = "xtermjs:webgl")]
    XtermJsWebgl,
}

/// xterm.js's renderers (xterm.js 6 has no canvas renderer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Renderer {
    Dom,
    Webgl,
}

impl Renderer {
    pub fn name(self) -> &'static str {
        match self {
            Renderer::Dom => "dom",
            Renderer::Webgl => "webgl",
        }
    }

    /// The terminal xterm.js is with this renderer.
    pub fn terminal(self) -> Terminal {
        match self {
            Renderer::Dom => Terminal::XtermJs,
            Renderer::Webgl => Terminal::XtermJsWebgl,
        }
    }
}

/// Where a terminal draws, and so which display wrap opens for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    /// An X11 window only.
    X11,
    /// X11, or Wayland under `--wayland` (flushlab's own compositor or a running one).
    X11OrWayland,
    /// Wayland only: flushlab's own compositor, or a running one.
    Wayland,
    /// A web page in headless Chromium, with xterm.js's renderer.
    Browser(Renderer),
}

/// How a terminal takes one of its own settings on its command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionSyntax {
    /// `-xrm 'CLASS*KEY: VALUE'`, an X resource of its class.
    XResource { class: &'static str },
    /// `-o KEY=VALUE`.
    DashO,
    /// No way to set one setting on its command line.
    None,
}

impl Terminal {
    /// Every terminal, in the table's order.
    pub const ALL: [Terminal; 9] = [
        Terminal::Xterm,
        Terminal::St,
        Terminal::Alacritty,
        Terminal::Kitty,
        Terminal::Urxvt,
        Terminal::Mlterm,
        Terminal::Foot,
        Terminal::XtermJs,
        Terminal::XtermJsWebgl,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Terminal::Xterm => "xterm",
            Terminal::St => "st",
            Terminal::Alacritty => "alacritty",
            Terminal::Kitty => "kitty",
            Terminal::Urxvt => "urxvt",
            Terminal::Mlterm => "mlterm",
            Terminal::Foot => "foot",
            Terminal::XtermJs => "xtermjs",
            Terminal::XtermJsWebgl => "xtermjs:webgl",
        }
    }

    /// `wrap --terminal`'s NAME: an emulator's, or `xtermjs[:RENDERER]`.
    pub fn parse(text: &str) -> Result<Terminal, String> {
        let shown = flushlab_core::units::printable(text);
        if let Some(renderer) = text.strip_prefix("xtermjs:") {
            return match renderer {
                "dom" => Ok(Terminal::XtermJs),
                "webgl" => Ok(Terminal::XtermJsWebgl),
                _ => Err(format!(
                    "'{shown}': xterm.js's renderer is dom or webgl (xtermjs, xtermjs:webgl; xterm.js 6 has no canvas renderer)"
                )),
            };
        }
        if text == "xtermjs" {
            return Ok(Terminal::XtermJs);
        }
        Terminal::ALL
            .into_iter()
            .find(|t| t.name() == text)
            .ok_or_else(|| format!("'{shown}' is not a terminal: {}", Terminal::names(|_| true)))
    }

    /// The names of the terminals `which` keeps, in the table's order, for the messages that
    /// list them: "xterm, st, …".
    pub fn names(which: impl Fn(Terminal) -> bool) -> String {
        Terminal::ALL
            .into_iter()
            .filter(|t| which(*t))
            .map(Terminal::name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Where it draws.
    pub fn surface(self) -> Surface {
        match self {
            Terminal::Xterm | Terminal::St | Terminal::Urxvt | Terminal::Mlterm => Surface::X11,
            Terminal::Alacritty | Terminal::Kitty => Surface::X11OrWayland,
            Terminal::Foot => Surface::Wayland,
            Terminal::XtermJs => Surface::Browser(Renderer::Dom),
            Terminal::XtermJsWebgl => Surface::Browser(Renderer::Webgl),
        }
    }

    /// How it takes one of its own settings ([`TerminalOption`]).
    pub fn option_syntax(self) -> OptionSyntax {
        match self {
            Terminal::Xterm => OptionSyntax::XResource { class: "XTerm" },
            Terminal::Urxvt => OptionSyntax::XResource { class: "URxvt" },
            Terminal::Alacritty | Terminal::Kitty | Terminal::Foot => OptionSyntax::DashO,
            Terminal::St | Terminal::Mlterm | Terminal::XtermJs | Terminal::XtermJsWebgl => {
                OptionSyntax::None
            }
        }
    }

    /// How it paints, for the terminal model (`wrap --paint NAME`), and what the policy was
    /// checked against: the version the camera saw honour (or ignore) each synchronized-output
    /// form and show a clear-then-draw's blank screen, or `None` where nothing checked it.
    pub fn paint_policy(self) -> (PaintPolicy, Option<&'static str>) {
        let ms = Duration::from_secs_f64;
        let policy = |when, (csi, dcs)| PaintPolicy {
            when,
            sync: SyncForms { csi, dcs },
            ..PaintPolicy::default()
        };
        match self {
            Terminal::Xterm => (policy(When::Eager, (false, false)), Some("XTerm(379)")),
            Terminal::Alacritty => (
                policy(When::Vsync { hz: 60.0 }, (false, true)),
                Some("alacritty 0.11.0"),
            ),
            Terminal::Kitty => (
                policy(
                    When::Delay {
                        lower: ms(0.003),
                        upper: ms(0.010),
                    },
                    (true, true),
                ),
                Some("kitty 0.26.5"),
            ),
            Terminal::Foot => (
                policy(
                    When::Delay {
                        lower: ms(0.0005),
                        upper: ms(0.0083),
                    },
                    (true, true),
                ),
                Some("foot 1.13.1"),
            ),
            // xterm.js holds a block a second at most; its DOM renderer checked by its rows.
            Terminal::XtermJs | Terminal::XtermJsWebgl => (
                PaintPolicy {
                    hold: Duration::from_secs(1),
                    ..policy(When::Vsync { hz: 60.0 }, (true, false))
                },
                Some("xterm.js 6.0.0 (its DOM renderer's rows)"),
            ),
            Terminal::St | Terminal::Urxvt | Terminal::Mlterm => {
                (policy(When::Eager, (false, false)), None)
            }
        }
    }

    /// The renderer of xterm.js in the browser, for the terminals drawn by a web page.
    pub fn in_browser(self) -> Option<Renderer> {
        match self.surface() {
            Surface::Browser(renderer) => Some(renderer),
            Surface::X11 | Surface::X11OrWayland | Surface::Wayland => None,
        }
    }

    /// Whether it is a program launched on a display of its own (xterm.js runs in a page).
    pub fn is_launched(self) -> bool {
        self.in_browser().is_none()
    }

    /// Whether it draws through Wayland only (no X11 window to open).
    pub fn wayland_only(self) -> bool {
        self.surface() == Surface::Wayland
    }

    /// Whether it opens an X11 window without `--wayland`.
    pub fn on_x11(self) -> bool {
        matches!(self.surface(), Surface::X11 | Surface::X11OrWayland)
    }

    /// The program, and the Debian package that has it.
    pub fn program(self) -> (&'static str, &'static str) {
        match self {
            Terminal::Xterm => ("xterm", "xterm"),
            Terminal::St => ("stterm", "stterm"),
            Terminal::Alacritty => ("alacritty", "alacritty"),
            Terminal::Kitty => ("kitty", "kitty"),
            Terminal::Urxvt => ("urxvt", "rxvt-unicode"),
            Terminal::Mlterm => ("mlterm", "mlterm"),
            Terminal::Foot => ("foot", "foot"),
            Terminal::XtermJs | Terminal::XtermJsWebgl => {
                ("chromium-headless-shell", "chromium-headless-shell")
            }
        }
    }

    /// The settings with which it waits before it renders what arrived on its pty, and their
    /// defaults: a key's paint stage holds them, whatever the program's writes (foot's manual
    /// and kitty's kitty.conf).
    pub fn render_delays(self) -> &'static [RenderDelay] {
        match self {
            Terminal::Foot => &[
                RenderDelay {
                    key: "tweak.delayed-render-lower",
                    default: "0.5 ms",
                    off: "0",
                },
                RenderDelay {
                    key: "tweak.delayed-render-upper",
                    default: "8.3 ms",
                    off: "0",
                },
            ],
            Terminal::Kitty => &[
                RenderDelay {
                    key: "input_delay",
                    default: "3 ms",
                    off: "0",
                },
                RenderDelay {
                    key: "repaint_delay",
                    default: "10 ms",
                    off: "0",
                },
                // It waits for the output's refresh before it repaints.
                RenderDelay {
                    key: "sync_to_monitor",
                    default: "yes",
                    off: "no",
                },
            ],
            Terminal::Xterm
            | Terminal::St
            | Terminal::Alacritty
            | Terminal::Urxvt
            | Terminal::Mlterm
            | Terminal::XtermJs
            | Terminal::XtermJsWebgl => &[],
        }
    }

    /// Whether it takes [`TerminalOption`]s: st and mlterm have no way to set one setting on
    /// their command line.
    pub fn takes_options(self) -> bool {
        self.option_syntax() != OptionSyntax::None
    }

    /// `flushlab xtermjs-host`'s: the renderer and the size the page opens xterm.js at.
    fn host_args(self, (cols, rows): (u16, u16)) -> Vec<OsString> {
        let renderer = self.in_browser().map_or("dom", Renderer::name);
        [
            "--renderer",
            renderer,
            "--cols",
            &cols.to_string(),
            "--rows",
            &rows.to_string(),
        ]
        .into_iter()
        .map(OsString::from)
        .collect()
    }

    /// `option` as this terminal's arguments ([`Terminal::takes_options`]).
    fn option_args(self, option: &TerminalOption) -> Option<[OsString; 2]> {
        let TerminalOption { key, value } = option;
        match self.option_syntax() {
            OptionSyntax::XResource { class } => {
                Some(["-xrm".into(), format!("{class}*{key}: {value}").into()])
            }
            OptionSyntax::DashO => Some(["-o".into(), format!("{key}={value}").into()]),
            OptionSyntax::None => None,
        }
    }

    /// The flag that names its window's app id on Wayland (the window rule that floats it
    /// names it): foot's `--app-id`, kitty's and alacritty's `--class`.
    fn app_id_flag(self) -> Option<&'static str> {
        match self {
            Terminal::Foot => Some("--app-id"),
            Terminal::Alacritty | Terminal::Kitty => Some("--class"),
            Terminal::Xterm
            | Terminal::St
            | Terminal::Urxvt
            | Terminal::Mlterm
            | Terminal::XtermJs
            | Terminal::XtermJsWebgl => None,
        }
    }

    /// Whether its command comes after a `--` (its own options end there; the others end
    /// theirs with `-e`, or take the command as it comes).
    fn command_after_dashes(self) -> bool {
        match self {
            Terminal::Foot | Terminal::XtermJs | Terminal::XtermJsWebgl => true,
            Terminal::Xterm
            | Terminal::St
            | Terminal::Alacritty
            | Terminal::Kitty
            | Terminal::Urxvt
            | Terminal::Mlterm => false,
        }
    }

    /// The arguments that open a `cols`x`rows` window running `command`, on Wayland with
    /// `app_id` (the window rule that floats it names it), with `options` after its own (so
    /// that they win).
    pub fn args(
        self,
        (cols, rows): (u16, u16),
        command: &[OsString],
        app_id: Option<&str>,
        options: &[TerminalOption],
    ) -> Vec<OsString> {
        let size = format!("{cols}x{rows}");
        let mut args: Vec<OsString> = match self {
            Terminal::Xterm => vec![
                "-geometry".into(),
                size.into(),
                "-fa".into(),
                "DejaVu Sans Mono".into(),
                "-fs".into(),
                "10".into(),
                // Alt+x as ESC x, as most terminals send it (xterm's own default sets the
                // eighth bit): `<M-x>` reaches the program as the key language says.
                "-xrm".into(),
                "XTerm*metaSendsEscape: true".into(),
                "-e".into(),
            ],
            Terminal::St => vec![
                "-g".into(),
                size.into(),
                "-f".into(),
                "DejaVu Sans Mono:size=10".into(),
                "-e".into(),
            ],
            Terminal::Alacritty => vec![
                "-o".into(),
                format!("window.dimensions.columns={cols}").into(),
                "-o".into(),
                format!("window.dimensions.lines={rows}").into(),
                "-o".into(),
                "font.size=10".into(),
                "-e".into(),
            ],
            Terminal::Kitty => vec![
                "-o".into(),
                format!("initial_window_width={cols}c").into(),
                "-o".into(),
                format!("initial_window_height={rows}c").into(),
                "-o".into(),
                "remember_window_size=no".into(),
                "-o".into(),
                "font_size=10".into(),
                // A steady cursor: a blinking one changes the window by itself.
                "-o".into(),
                "cursor_blink_interval=0".into(),
            ],
            Terminal::Urxvt => vec![
                "-geometry".into(),
                size.into(),
                "-fn".into(),
                "xft:DejaVu Sans Mono:size=10".into(),
                "-e".into(),
            ],
            Terminal::Mlterm => vec![
                "-g".into(),
                size.into(),
                "-w".into(),
                "13".into(),
                "-e".into(),
            ],
            Terminal::XtermJs | Terminal::XtermJsWebgl => self.host_args((cols, rows)),
            Terminal::Foot => vec![
                format!("--window-size-chars={size}").into(),
                "--font=DejaVu Sans Mono:size=10".into(),
                // Its own configuration only: nothing of the person's foot.ini.
                "--config=/dev/null".into(),
            ],
        };
        let app_id = app_id
            .zip(self.app_id_flag())
            .map(|(app_id, flag)| OsString::from(format!("{flag}={app_id}")));
        let given = options.iter().filter_map(|o| self.option_args(o)).flatten();
        // Before `-e`, which ends alacritty's options and begins the others' command.
        let at = args.len() - usize::from(args.last().is_some_and(|a| a == "-e"));
        args.splice(at..at, app_id.into_iter().chain(given));
        if self.command_after_dashes() {
            args.push("--".into());
        }
        args.extend(command.iter().cloned());
        args
    }
}

#[cfg(test)]
#[path = "emulators_tests.rs"]
mod tests;
