//! Which observer looks inside CMD, and why: `--observer` as asked, CMD's executable, and what
//! the run needs of it (a frame's writes held, samply's markers) give one [`Choice`], or the
//! one line that says why the flags cannot have it. `auto` takes the kernel's programs where
//! eBPF is allowed (a run-time fallback, said in the run), else the preload where it loads, with
//! the tracer for key reads where the program makes them raw, and the tracer alone where no
//! preload loads.

use std::path::Path;

use serde::Serialize;

use crate::observers::executable::{Image, image_of, is_setuid, reads_keys_raw};

/// `--observer`: how wrap looks inside CMD, as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum ObserverArg {
    Auto,
    /// eBPF programs on the system calls of CMD's whole tree (`flushlab_observer::kernel`).
    Kernel,
    Preload,
    Ptrace,
    /// The preload, and the tracer for key reads made with raw system calls.
    Both,
    None,
}

/// The way a run looks inside CMD, decided once from `--observer` and CMD's executable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Way {
    /// The shared object the loader preloads (`flushlab_observer`).
    Preload,
    /// The tracer ([`super::tracer`]): ptrace with a seccomp filter.
    Ptrace,
    /// The preload, and the tracer stopping only at reads of the standard descriptors: the keys
    /// a program reads with raw system calls (crossterm over rustix), a stop or two a key.
    Both,
    /// eBPF programs in the kernel, on the system calls of CMD's whole tree: nothing injected,
    /// nothing stopped (`flushlab_observer::kernel`).
    Kernel,
}

impl Way {
    /// `auto`: the preload where it sees the program's calls, the tracer where it cannot.
    /// `raw_reads`: whether the program reads its keys with raw system calls (asked only of a
    /// dynamic one, where it matters).
    pub fn choose(arg: ObserverArg, image: Image, raw_reads: impl FnOnce() -> bool) -> Option<Way> {
        match arg {
            ObserverArg::None => None,
            ObserverArg::Kernel => Some(Way::Kernel),
            ObserverArg::Preload => Some(Way::Preload),
            ObserverArg::Ptrace => Some(Way::Ptrace),
            ObserverArg::Both => Some(Way::Both),
            ObserverArg::Auto if !TRACER_BUILT => Some(Way::Preload),
            ObserverArg::Auto if image.preload_sees() && raw_reads() => Some(Way::Both),
            ObserverArg::Auto if image.preload_sees() => Some(Way::Preload),
            ObserverArg::Auto => Some(Way::Ptrace),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Way::Preload => "preload",
            Way::Ptrace => "ptrace",
            Way::Both => "preload, and ptrace for key reads",
            Way::Kernel => "kernel",
        }
    }

    /// Whether the tracer runs in CMD's place.
    pub fn traces(self) -> bool {
        matches!(self, Way::Ptrace | Way::Both)
    }

    /// Whether the preload is in CMD.
    pub fn preloads(self) -> bool {
        matches!(self, Way::Preload | Way::Both)
    }

    /// Whether every write CMD's tree makes to the terminal is seen, whatever makes it (the
    /// tracer stops at each; the kernel sees each system call).
    pub fn sees_every_call(self) -> bool {
        matches!(self, Way::Ptrace | Way::Kernel)
    }
}

/// The tracer reads x86_64's registers: elsewhere `--observer ptrace` is refused.
pub const TRACER_BUILT: bool = cfg!(all(target_os = "linux", target_arch = "x86_64"));

/// What the run asks of its observer, beside `--observer`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Needs {
    /// `--try` or `--compare`: a frame's writes held inside CMD.
    pub holds_frames: bool,
    /// `--compare`: both sides looked at by one observer.
    pub compares: bool,
    /// `--profile`: samply's markers, which the preload maps.
    pub profiled: bool,
}

/// How wrap looks inside one CMD, chosen once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// `--observer` as asked (`--no-observer` is `None`).
    pub asked: ObserverArg,
    /// The way chosen (`None`: from outside only).
    pub way: Option<Way>,
    /// `auto` tries the kernel observer first, falling back to `way` where eBPF is refused: not
    /// for `--compare` (both sides looked at by the same observer, the preload, so that the
    /// speedup is the fix's, not the observers'), nor for `--profile`'s markers (the preload
    /// maps them).
    kernel_first: bool,
}

impl Choice {
    /// How `asked` looks inside `program` (`shown`: CMD's program as the user named it), or why
    /// it cannot: a frame's writes are held by code inside the program, which only the preload
    /// is (the tracer would have to copy each write out of CMD and answer the call in its place,
    /// a cost larger than the buffering it tries); the tracer is built for x86_64 only; a setuid
    /// program loses its privilege under the tracer's filter; samply records the process wrap
    /// starts, which the tracer would be.
    /// `args`: CMD's words after the program, where a launcher (`env`, `sh -c`) names the
    /// program it starts: that program is the one looked at.
    pub fn of(
        asked: ObserverArg,
        (program, args, shown): (&Path, &[std::ffi::OsString], &str),
        needs: Needs,
    ) -> Result<Choice, String> {
        let program = &crate::observers::launched::launched(program, args);
        kernel_can(asked, needs)?;
        let traced_by_choice = matches!(asked, ObserverArg::Ptrace | ObserverArg::Both);
        if traced_by_choice && !TRACER_BUILT {
            return Err(
                "wrap: --observer ptrace: the tracer is built for x86_64 Linux only; \
                 --observer preload or none"
                    .to_owned(),
            );
        }
        if traced_by_choice && is_setuid(program) {
            return Err(format!(
                "wrap --observer {}: '{shown}' is setuid or setgid: under the tracer's seccomp \
                 filter (NO_NEW_PRIVS) it would run without its privilege; --observer preload \
                 (seen from outside) or none",
                if asked == ObserverArg::Both {
                    "both"
                } else {
                    "ptrace"
                },
            ));
        }
        let way = way(asked, program, needs.profiled);
        if needs.profiled && way.is_some_and(Way::traces) {
            return Err(format!(
                "wrap --profile: samply records the process wrap starts, which for '{shown}' is \
                 the tracer (a static or Go program, or --observer ptrace/both): profile it with \
                 samply itself, or with --observer preload where the preload loads"
            ));
        }
        if needs.holds_frames && way == Some(Way::Ptrace) {
            let image = image_of(program);
            return Err(format!(
                "wrap: --try/--compare frame hold a frame's writes inside CMD, which only the \
                 preload can; '{shown}' is {} ({}): seen through the tracer, which cannot hold \
                 them",
                match image {
                    Image::Go => "a Go program",
                    Image::Static => "a static program",
                    Image::Dynamic => "traced as asked (--observer ptrace)",
                },
                if image.preload_sees() {
                    "--observer preload holds them"
                } else {
                    "no preload loads in it"
                }
            ));
        }
        Ok(Choice {
            asked,
            way,
            kernel_first: asked == ObserverArg::Auto && !needs.compares && !needs.profiled,
        })
    }

    /// Whether a side with `fix` tries the kernel observer first: not where a frame's writes
    /// are to be held (only code inside CMD can).
    pub fn kernel_first(&self, fix: bool) -> bool {
        self.kernel_first && !fix
    }
}

/// Whether the kernel observer, asked for (or tried first by `auto`), can give what the run
/// needs: its settings read, its objects built in, no frame held, no marker mapped.
fn kernel_can(asked: ObserverArg, needs: Needs) -> Result<(), String> {
    if matches!(asked, ObserverArg::Kernel | ObserverArg::Auto) {
        flushlab_observer::kernel::ring_bytes().map_err(|refused| format!("wrap: {refused}"))?;
        flushlab_observer::kernel::hooks_asked().map_err(|refused| format!("wrap: {refused}"))?;
    }
    if asked == ObserverArg::Kernel && !flushlab_observer::kernel::BUILT {
        return Err(
            "wrap --observer kernel: this flushlab was built without the kernel observer \
             (built with CLANG set, where clang or libbpf-dev was missing); --observer auto, preload or \
             ptrace"
                .to_owned(),
        );
    }
    if asked == ObserverArg::Kernel && needs.holds_frames {
        return Err(
            "wrap --observer kernel: --try/--compare frame hold a frame's writes inside CMD, \
             which only the preload can (--observer auto or preload)"
                .to_owned(),
        );
    }
    if asked == ObserverArg::Kernel && needs.profiled {
        // Markers go where samply reads them: a file the drawing thread maps, which only
        // code inside CMD can map; the kernel observer injects none.
        return Err(
            "wrap --observer kernel --profile: samply's key markers come from a file the \
             drawing thread maps, which only the preload does inside CMD (--observer auto or \
             preload)"
                .to_owned(),
        );
    }
    Ok(())
}

/// The way `asked` looks inside `program` (`None`: from outside only).
fn way(asked: ObserverArg, program: &Path, profiled: bool) -> Option<Way> {
    // A setuid program is never traced by choice: under the filter it would lose its
    // privilege (auto takes the preload, which its loader refuses: seen from outside, said).
    if asked == ObserverArg::Auto && is_setuid(program) {
        return Some(Way::Preload);
    }
    // samply attaches to the process wrap starts: with the tracer in CMD's place it would
    // record the tracer. A profile keeps the preload (auto) where it loads.
    let image = image_of(program);
    if profiled && asked == ObserverArg::Auto && image.preload_sees() {
        return Some(Way::Preload);
    }
    Way::choose(asked, image, || reads_keys_raw(program))
}
