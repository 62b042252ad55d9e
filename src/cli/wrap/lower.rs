//! wrap's flags lowered once into wrap's [`Plan`] (ripgrep's `LowArgs → HiArgs`): CMD found, the
//! observer chosen, every output writable and distinct, the keys read, the terminal's display
//! and the wire's layers decided, samply found for `--profile`. Every refusal of a flag
//! combination is here, before anything starts; what can only fail at run time (eBPF refused,
//! a terminal that will not open) stays at run time and is said there. Everything after this
//! file takes the plan, or the part of it it needs, and never the flags.

use std::ffi::OsString;
use std::path::Path;

use super::args::{OldBuild, WrapArgs};
use flushlab_core::outcome::{Outcome, Refusal};
use flushlab_core::results::conditions::ReaderModel;
use flushlab_core::units::printable;
use flushlab_terminals::browser::Renderer;
use flushlab_terminals::emulators::{Surface, Terminal};
use flushlab_terminals::wayland::Session;
use flushlab_wrap::observers::choice::{Choice, Needs, ObserverArg};
use flushlab_wrap::plan::Until;
use flushlab_wrap::plan::destinations::{Outputs, checked};
use flushlab_wrap::plan::keys::Keys;
use flushlab_wrap::plan::profile::Profile;
use flushlab_wrap::plan::stored_run::{Baseline, stored_run};
use flushlab_wrap::plan::{
    AgainstPlan, Comparing, Display, InTerminal, Invocation, Mode, Old, Plan, Via,
};
use flushlab_wrap::via::LinkSettings;

/// The wrap's plan, or why its flags are refused (a CMD that is not a command, a report that
/// cannot be written) before anything starts.
pub fn plan(args: &WrapArgs) -> Result<Plan, Refusal> {
    let cmd = cmd(&args.command)?;
    let outputs = outputs(args)?;
    let script = match (&args.keys, &args.keys_file) {
        (Some(script), _) => Some(script.clone()),
        (None, Some(path)) => Some(flushlab_wrap::plan::keys::read_keys_file(path)?),
        (None, None) => None,
    };
    let asked = match args.no_observer {
        true => ObserverArg::None,
        false => args.observer,
    };
    let via = via(args, asked, script.is_some())?;
    let terminal = match args.terminal {
        Some(terminal) => Some(in_terminal(args, terminal, asked, script.is_some())?),
        None => None,
    };
    let looking = choice(args, asked, &cmd)?;
    if args.keys_after.is_some() && script.is_none() {
        return Err("wrap: --keys-after needs --keys or --keys-file"
            .to_owned()
            .into());
    }
    let interactive = args.duration.is_none()
        && script.is_none()
        && std::io::IsTerminal::is_terminal(&std::io::stdout());
    if outputs.filmstrip.is_some() && script.is_none() {
        return Err("wrap: --filmstrip films a key: give --keys or --keys-file"
            .to_owned()
            .into());
    }
    if outputs.plot.is_some() && script.is_none() && !interactive {
        return Err(
            "wrap: --plot draws keys: give --keys or --keys-file (or type them, interactive)"
                .to_owned()
                .into(),
        );
    }
    let keys = script.map(|script| Keys {
        script,
        after: args.keys_after,
    });
    let mut plan = Plan {
        cmd,
        // Keys are typed by wrap, so a run with keys is headless.
        interactive,
        duration: args.duration,
        size: args.size,
        reader: args.reader,
        paint: args.paint.0,
        frame_gap: args.frame_gap,
        looking,
        keys,
        outputs,
        profile: None,
        mode: Mode::Once { fix: args.try_fix },
        terminal,
        via,
        as_root: args.as_root,
        exit_with_parent: args.exit_with_parent,
    };
    if let Some(fix) = args.compare {
        plan.mode = Mode::Compare(Comparing {
            fix,
            rounds: args.rounds.unwrap_or(3),
        });
    }
    if let Some(old) = &args.against {
        plan.mode = Mode::Against(against(args, old, &plan)?);
    }
    if let Some(file) = &args.profile {
        plan.profile = flushlab_wrap::plan::profile::samply_for(file)?.map(|samply| Profile {
            samply,
            file: file.clone(),
        });
    }
    Ok(plan)
}

/// `--via`'s layers and link, where the layers can carry this run (`kernel`: the kernel
/// observer may look, as it must at the far end).
fn via(args: &WrapArgs, asked: ObserverArg, has_keys: bool) -> Result<Option<Via>, Refusal> {
    if args.via.is_empty() {
        return Ok(None);
    }
    let via = Via {
        layers: args.via.clone(),
        link: LinkSettings {
            rtt: args.rtt,
            rate: args.rate,
            loss: args.loss,
            loopback: args.loopback,
        },
    };
    let kernel = matches!(asked, ObserverArg::Auto | ObserverArg::Kernel);
    flushlab_wrap::via::check(&via.layers, via.link, has_keys, kernel)
        .map_err(Refusal::bad_input)?;
    Ok(Some(via))
}

/// CMD's program found, or refused: not a command, or a file that cannot be run.
fn cmd(words: &[OsString]) -> Result<Invocation, Refusal> {
    let program = &words[0];
    let shown = printable(&program.to_string_lossy());
    let path = Path::new(program);
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
    let Some(program) = flushlab_core::files::find_program(program) else {
        return Err(Refusal {
            outcome: Outcome::NotFound,
            why: format!("wrap: '{shown}' is not a command (not found, or not executable)"),
        });
    };
    Ok(Invocation {
        words: words.to_vec(),
        program,
    })
}

/// The files the flags name, checked (destinations.rs): as the person under sudo unless wrap
/// keeps root (`--as-root`, a wire, a terminal).
fn outputs(args: &WrapArgs) -> Result<Outputs, Refusal> {
    let outputs = Outputs {
        report: args.report.clone(),
        trace: args.trace.clone(),
        plot: args.plot.clone(),
        filmstrip: args.filmstrip.clone(),
        markdown: args.export_markdown.clone(),
    };
    checked(
        outputs,
        !args.as_root && args.via.is_empty() && args.terminal.is_none(),
    )
}

/// How wrap looks inside `cmd`, as `asked` and what the run needs of it say.
fn choice(args: &WrapArgs, asked: ObserverArg, cmd: &Invocation) -> Result<Choice, Refusal> {
    let needs = Needs {
        holds_frames: args.try_fix.is_some() || args.compare.is_some(),
        compares: args.compare.is_some(),
        profiled: args.profile.is_some(),
    };
    let shown = printable(&cmd.words[0].to_string_lossy());
    Ok(Choice::of(
        asked,
        (&cmd.program, cmd.arguments(), &shown),
        needs,
    )?)
}

/// Whether `terminal` draws on Wayland (`--wayland`, or foot's own).
fn draws_on_wayland(terminal: Terminal) -> bool {
    matches!(terminal.surface(), Surface::X11OrWayland | Surface::Wayland)
}

/// `--terminal`'s display, or why the flags cannot go with it: keys to type, an observer to
/// see each frame, a terminal that takes the settings given, a display it draws on.
fn in_terminal(
    args: &WrapArgs,
    terminal: Terminal,
    asked: ObserverArg,
    has_keys: bool,
) -> Result<InTerminal, Refusal> {
    let name = terminal.name();
    if !has_keys {
        return Err(format!(
            "wrap --terminal {name} types keys and times each to its pixels: give --keys or --keys-file"
        )
        .into());
    }
    if asked == ObserverArg::None {
        return Err(format!(
            "wrap --terminal {name} --no-observer: a key's frame is seen from inside CMD only (wrap does not read the terminal's pty)"
        ).into());
    }
    if !args.terminal_options.is_empty() && !terminal.takes_options() {
        return Err(format!(
            "wrap --terminal {name} --terminal-option: {name} takes no setting on its command line ({} do)",
            Terminal::names(Terminal::takes_options)
        ).into());
    }
    if args.profile.is_some() {
        return Err(format!(
            "wrap --terminal {name} --profile: not together yet (profile the keys headless)"
        )
        .into());
    }
    let display = match (
        terminal.in_browser(),
        &args.wayland_display,
        args.wayland || terminal.wayland_only(),
    ) {
        (Some(renderer), ..) => in_browser(args, name, renderer)?,
        (None, Some(name), _) => Display::Wayland(Session::Running(name.clone())),
        (None, None, true) => Display::Wayland(Session::Own {
            refresh_hz: args.refresh.unwrap_or(60),
        }),
        (None, None, false) => Display::X11(args.display.clone()),
    };
    if args.refresh.is_some() && matches!(display, Display::X11(_)) {
        return Err(format!(
            "wrap --terminal {name} --refresh: the refresh rate is the Wayland output's: add --wayland ({})",
            Terminal::names(draws_on_wayland)
        ).into());
    }
    if terminal.wayland_only() && args.display.is_some() {
        return Err(format!(
            "wrap --terminal {name} --display: {name} runs on Wayland only (flushlab's own compositor, or --wayland-display); --display names an X display ({})",
            Terminal::names(Terminal::on_x11)
        ).into());
    }
    if (args.wayland || args.wayland_display.is_some()) && terminal.surface() == Surface::X11 {
        return Err(format!(
            "wrap --terminal {name} {}: {name} draws through X11 only; on Wayland: {}",
            if args.wayland {
                "--wayland"
            } else {
                "--wayland-display"
            },
            Terminal::names(draws_on_wayland)
        )
        .into());
    }
    if let Some(name) = &args.wayland_display {
        flushlab_terminals::wayland::find_session(name)?;
    }
    if args.reader != ReaderModel::Drain {
        return Err(format!(
            "wrap --terminal {name} --reader {}: the terminal reads the pty, not a reader model",
            args.reader
        )
        .into());
    }
    Ok(InTerminal {
        terminal,
        options: args.terminal_options.clone(),
        display,
        camera: args.camera,
    })
}

/// `--terminal xtermjs[:RENDERER]`: flushlab's own headless Chromium, which takes no display,
/// compositor or refresh rate of the person's; Chromium and xterm.js's packages (or npm) here.
fn in_browser(args: &WrapArgs, name: &str, renderer: Renderer) -> Result<Display, Refusal> {
    let wayland = args.wayland || args.wayland_display.is_some();
    if args.display.is_some() || wayland || args.refresh.is_some() {
        return Err(format!("wrap --terminal {name}: xterm.js runs in flushlab's own headless Chromium, which takes no --display, --wayland, --wayland-display or --refresh").into());
    }
    if !args.via.is_empty() {
        return Err(format!(
            "wrap --terminal {name} --via: not together yet (the near end in a terminal on X11 or Wayland: {})",
            Terminal::names(Terminal::is_launched)
        )
        .into());
    }
    flushlab_terminals::browser::can_run().map_err(|e| e.to_string())?;
    Ok(Display::Chromium(renderer))
}

/// `--against`: OLD's plan (NEW's, with OLD's command and what follows from it) or its stored
/// run, and when the rounds end; refused without keys to time, with an OLD that is not a
/// command or a stored run that cannot be read, or a stored run where it cannot be compared.
fn against(args: &WrapArgs, OldBuild(old): &OldBuild, new: &Plan) -> Result<AgainstPlan, Refusal> {
    if new.keys.is_none() {
        return Err(
            "wrap --against: the verdict is on each key's time to its frame: give \
                    --keys or --keys-file"
                .to_owned()
                .into(),
        );
    }
    let shown = printable(&old[0]);
    if let Some(path) = stored_run(old) {
        if let Some(terminal) = &new.terminal {
            return Err(format!(
                "wrap --against '{shown}' --terminal {}: a stored run against a terminal's \
                 pixels is not built: give the old build's command",
                terminal.terminal.name()
            )
            .into());
        }
        if new.via.is_some() {
            return Err(format!(
                "wrap --against '{shown}' --via: a stored run is not compared over a wire yet; \
                 give the old build's command"
            )
            .into());
        }
        let baseline =
            Baseline::load(path).map_err(|why| format!("wrap --against '{shown}': {why}"))?;
        // One stored run has no spread of its own: a fixed count of NEW's runs.
        return Ok(AgainstPlan {
            old: Old::Stored(Box::new(baseline)),
            until: Until::Rounds(args.rounds.unwrap_or(10) as usize),
            threshold: args.threshold,
        });
    }
    let words: Vec<OsString> = old.iter().map(Into::into).collect();
    let cmd = cmd(&words).map_err(|_| {
        format!(
            "wrap --against '{shown}': not a command (not found, or not executable): the old \
             build's program and its arguments, as a shell splits them"
        )
    })?;
    let old_plan = Plan {
        looking: choice(args, new.looking.asked, &cmd)?,
        cmd,
        ..new.clone()
    };
    let until = match args.rounds {
        Some(n) => Until::Rounds(n as usize),
        None => Until::Decisive {
            looks: flushlab_core::statistics::verdict::Looks::until_decisive(
                args.max_rounds as usize,
            ),
            max_time: args.max_time,
        },
    };
    Ok(AgainstPlan {
        old: Old::Build(Box::new(old_plan)),
        until,
        threshold: args.threshold,
    })
}
