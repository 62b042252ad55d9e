//! `flushlab doctor [-- CMD]`: what this machine and this user get from wrap, before a run.
//! Which observer wrap would use for CMD and why (decided by the same `Choice` a run makes,
//! the kernel observer's programs loaded and let go as a run loads them), what the kernel
//! allows, and for each optional part of wrap whether its programs are here, with the Debian
//! package that has each missing one.

use std::ffi::OsString;
use std::path::PathBuf;

use serde::Serialize;

use crate::observers::choice::ObserverArg;
use crate::observers::choice::{Choice, Needs, Way};
use flushlab_core::outcome::Outcome;
use flushlab_terminals::emulators::Terminal;

/// `flushlab doctor`'s flags.
#[derive(Debug)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct DoctorArgs {
    /// JSON for scripts, on stdout.
    #[cfg_attr(feature = "clap", arg(long))]
    pub json: bool,
    /// The program to ask about, and its arguments: which observer `flushlab wrap -- CMD`
    /// would use for it.
    #[cfg_attr(feature = "clap", arg(last = true))]
    pub command: Vec<OsString>,
}

/// What doctor found.
#[derive(Debug, Serialize)]
pub struct Findings {
    pub root: bool,
    /// The observer `wrap -- CMD` would use, where CMD was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observer: Option<ObserverFound>,
    /// The kernel observer: built in, and whether the kernel loads its programs here (why not).
    pub kernel_observer_built: bool,
    pub ebpf_allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ebpf_refused: Option<String>,
    /// The kernel's settings that decide the observers and `--profile` (`None`: not on this
    /// kernel, e.g. no Yama).
    pub sysctls: std::collections::BTreeMap<&'static str, Option<i64>>,
    pub parts: Vec<Part>,
    /// One `apt-get install` line for every missing Debian package.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install: Option<String>,
}

/// The observer wrap would use for CMD.
#[derive(Debug, Serialize)]
pub struct ObserverFound {
    pub program: String,
    /// The program a launcher (`env`, `sh -c`) starts, where it names one: the one looked at.
    pub launches: Option<String>,
    /// `kernel`, `preload`, `ptrace`, `both`; `None` where wrap would refuse.
    pub way: Option<&'static str>,
    pub why: String,
}

/// An optional part of wrap and what it needs.
#[derive(Debug, Serialize)]
pub struct Part {
    pub what: &'static str,
    /// Each program it needs, its Debian package, and whether it is here.
    pub needs: Vec<(&'static str, &'static str, bool)>,
}

/// The kernel's settings doctor reads.
const SYSCTLS: &[&str] = &[
    "kernel/unprivileged_bpf_disabled",
    "kernel/yama/ptrace_scope",
    "kernel/perf_event_paranoid",
];

pub fn run(args: DoctorArgs) -> anyhow::Result<Outcome> {
    let findings = look(&args.command)?;
    if args.json {
        let mut text = serde_json::to_vec_pretty(&findings)?;
        text.push(b'\n');
        flushlab_core::outcome::print(&text)?;
    } else {
        flushlab_core::outcome::print(said(&findings).as_bytes())?;
    }
    Ok(Outcome::Finished)
}

fn look(command: &[OsString]) -> anyhow::Result<Findings> {
    let root = rustix::process::geteuid().is_root();
    let ebpf = if flushlab_observer::kernel::BUILT {
        flushlab_observer::kernel::Attached::attach_for_a_root()
            .map(drop)
            .map_err(|refused| refused.to_string())
    } else {
        Err(
            "this flushlab was built without it (CLANG was set, and clang or libbpf-dev was missing)"
                .to_owned(),
        )
    };
    let observer = match command.split_first() {
        Some((program, args)) => Some(observer_for((program, args), ebpf.as_ref().err())?),
        None => None,
    };
    let sysctls = SYSCTLS
        .iter()
        .map(|name| (*name, flushlab_core::sys::sysctl(name)))
        .collect();
    let parts = parts();
    let mut missing: Vec<&str> = parts
        .iter()
        .flat_map(|p| &p.needs)
        .filter(|(_, package, here)| !here && !package.contains(' '))
        .map(|(_, package, _)| *package)
        .collect();
    missing.sort_unstable();
    missing.dedup();
    Ok(Findings {
        root,
        observer,
        kernel_observer_built: flushlab_observer::kernel::BUILT,
        ebpf_allowed: ebpf.is_ok(),
        ebpf_refused: ebpf.err(),
        sysctls,
        parts,
        install: (!missing.is_empty()).then(|| format!("apt-get install {}", missing.join(" "))),
    })
}

/// The observer a headless `wrap -- CMD` uses: the plan's choice for `--observer auto`, then,
/// where it tries the kernel first, the kernel's if its programs load, else the choice's way.
fn observer_for(
    (program, args): (&OsString, &[OsString]),
    ebpf_refused: Option<&String>,
) -> anyhow::Result<ObserverFound> {
    let shown = flushlab_core::units::printable(&program.to_string_lossy());
    let Some(path) = flushlab_core::files::find_program(program.as_ref()) else {
        anyhow::bail!("doctor: '{shown}' is not a program found on PATH");
    };
    let choice = Choice::of(ObserverArg::Auto, (&path, args, &shown), Needs::default());
    let (way, why) = match choice {
        Err(refused) => (None, refused),
        Ok(choice) => match (choice.kernel_first(false), ebpf_refused, choice.way) {
            (true, None, _) => (Some(Way::Kernel), "eBPF is allowed here".to_owned()),
            (true, Some(refused), Some(way)) => (
                Some(way),
                format!("eBPF is refused here ({refused}); {}", way_sees(way)),
            ),
            (_, _, Some(way)) => (Some(way), way_sees(way).to_owned()),
            (_, _, None) => (None, "seen from outside only".to_owned()),
        },
    };
    let launched = crate::observers::launched::launched(&path, args);
    Ok(ObserverFound {
        launches: (launched != path).then(|| launched.display().to_string()),
        program: path.display().to_string(),
        way: way.map(Way::name),
        why,
    })
}

/// What each way sees, and what it misses.
fn way_sees(way: Way) -> &'static str {
    match way {
        Way::Kernel => "every terminal write and wait of CMD's tree, from the kernel",
        Way::Preload => {
            "the preload sees the writes CMD's dynamic programs make through libc, glibc \
             stdio's by its streams (w3m, emacs), not a raw system call's (--observer ptrace \
             sees those)"
        }
        Way::Ptrace => "the tracer stops CMD at each watched call (a cost of its own)",
        Way::Both => "the preload, and the tracer for key reads made with raw system calls",
    }
}

/// wrap's optional parts and the programs each needs, with their Debian packages.
fn parts() -> Vec<Part> {
    let here = |program: &str| -> bool {
        let path = PathBuf::from(program);
        if path.is_absolute() {
            path.exists()
        } else {
            flushlab_core::files::find_program(program.as_ref()).is_some()
        }
    };
    let part = |what, needs: &[(&'static str, &'static str)]| Part {
        what,
        needs: needs
            .iter()
            .map(|&(program, package)| (program, package, here(program)))
            .collect(),
    };
    let mut x11: Vec<(&'static str, &'static str)> = vec![("Xvfb", "xvfb"), ("xauth", "xauth")];
    x11.extend(
        Terminal::ALL
            .into_iter()
            .filter(|t| t.on_x11())
            .map(|t| t.program()),
    );
    vec![
        part("--terminal on X11 (a terminal of these)", &x11),
        part(
            "--terminal foot (Wayland)",
            &[
                ("sway", "sway"),
                ("foot", "foot"),
                ("setpriv", "util-linux"),
            ],
        ),
        part(
            "--terminal xtermjs",
            &[
                ("chromium-headless-shell", "chromium-headless-shell"),
                ("node", "nodejs"),
                ("npm", "npm"),
            ],
        ),
        part(
            "--via ssh, tmux, mosh (as root)",
            &[
                ("/usr/sbin/sshd", "openssh-server"),
                ("ssh", "openssh-client"),
                ("tmux", "tmux"),
                ("mosh-server", "mosh"),
                ("unshare", "util-linux"),
                ("/dev/net/tun", "the kernel's TUN (CONFIG_TUN)"),
            ],
        ),
        part(
            "--profile",
            &[("samply", "cargo install samply --locked (not Debian's)")],
        ),
    ]
}

/// The findings in words, one screen.
fn said(f: &Findings) -> String {
    let mut out = format!(
        "flushlab doctor: what wrap gets here, as {}\n",
        if f.root {
            "root"
        } else {
            "this user (not root)"
        }
    );
    if let Some(o) = &f.observer {
        out += &format!(
            "  wrap -- {}{}: observer {} ({})\n",
            flushlab_core::units::printable(&o.program),
            o.launches.as_ref().map_or(String::new(), |l| format!(
                ", which starts {}",
                flushlab_core::units::printable(l)
            )),
            o.way.unwrap_or("none: refused"),
            flushlab_core::units::printable(&o.why)
        );
    }
    out += &match (&f.ebpf_refused, f.kernel_observer_built) {
        (None, _) => "  the kernel observer: built in, and eBPF is allowed here\n".to_owned(),
        (Some(why), true) => format!(
            "  the kernel observer: built in, but eBPF is refused here: {}\n",
            flushlab_core::units::printable(why)
        ),
        (Some(why), false) => {
            format!(
                "  the kernel observer: {}\n",
                flushlab_core::units::printable(why)
            )
        }
    };
    let settings: Vec<String> = f
        .sysctls
        .iter()
        .map(|(name, value)| {
            format!(
                "{} {}",
                name.replace('/', "."),
                value.map_or("absent".to_owned(), |v| v.to_string())
            )
        })
        .collect();
    out += &format!(
        "  the kernel: {} (the tracer needs ptrace_scope ≤ 1, --profile perf_event_paranoid ≤ 1)\n",
        settings.join(", ")
    );
    if !f.root && !f.ebpf_allowed {
        out += "  a better observer: sudo flushlab wrap -- CMD (the kernel observer), or \
                 --observer ptrace for programs the preload misses\n";
    }
    for part in &f.parts {
        let needs: Vec<String> = part
            .needs
            .iter()
            .map(|(program, package, here)| match here {
                true => format!("{program} ✓"),
                false => format!("{program} ✗ ({package})"),
            })
            .collect();
        out += &format!("  {}: {}\n", part.what, needs.join(", "));
    }
    if let Some(install) = &f.install {
        out += &format!("  missing Debian packages: {install}\n");
    }
    out
}
