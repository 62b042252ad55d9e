//! The far end's root: CMD starts on the far side through a shim of wrap's own (this binary's
//! hidden `far-root` command), which names itself to wrap over a Unix socket in the wire's
//! scratch directory and waits. wrap takes the shim's pid from the kernel (`SO_PEERCRED`, in
//! wrap's pid namespace) and its terminal from `/proc/PID/fd/0` (the pty sshd made), makes that
//! terminal the kernel observer's second and the shim a root of its tree, and says go; the shim
//! then becomes CMD. So the observer follows CMD on the far side as well as the ssh client wrap
//! started (one set of programs for both ends: every system call on the machine pays one), and
//! its first exec there is CMD's.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use flushlab_observer::kernel::Attached;

/// The hidden command the far end runs.
pub const SUBCOMMAND: &str = "far-root";

/// How long the shim waits for wrap's go before it runs CMD unobserved.
const GO_WITHIN: Duration = Duration::from_secs(10);

/// The shim's flags (`flushlab far-root --socket PATH --cwd DIR -- CMD…`).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct FarRootArgs {
    /// wrap's socket, to name this process at.
    #[cfg_attr(feature = "clap", arg(long))]
    pub socket: PathBuf,
    /// The directory CMD starts in (wrap's own).
    #[cfg_attr(feature = "clap", arg(long))]
    pub cwd: PathBuf,
    /// CMD, and its arguments.
    #[cfg_attr(feature = "clap", arg(required = true, trailing_var_arg = true))]
    pub command: Vec<OsString>,
}

impl FarRootArgs {
    /// The words after flushlab's own that start the shim: what the binary's parser reads back
    /// as these very arguments (a test round-trips it).
    pub fn argv(&self) -> Vec<OsString> {
        let mut words: Vec<OsString> = vec![
            SUBCOMMAND.into(),
            "--socket".into(),
            self.socket.clone().into(),
            "--cwd".into(),
            self.cwd.clone().into(),
            "--".into(),
        ];
        words.extend(self.command.iter().cloned());
        words
    }
}

/// The shim: name this process at wrap's socket, wait for the go (or a closed socket, or 10 s),
/// then become CMD in wrap's directory. Returns only when CMD could not be started.
pub fn shim(args: &FarRootArgs) -> std::io::Result<std::convert::Infallible> {
    use std::os::unix::process::CommandExt;
    if let Ok(mut stream) = UnixStream::connect(&args.socket) {
        let _ = stream.set_read_timeout(Some(GO_WITHIN));
        let _ = stream.write_all(b"root\n");
        let mut go = [0u8; 1];
        let _ = stream.read(&mut go);
    }
    let _ = std::env::set_current_dir(&args.cwd);
    let error = std::process::Command::new(&args.command[0])
        .args(&args.command[1..])
        .exec();
    Err(std::io::Error::new(
        error.kind(),
        format!(
            "far-root: '{}': {error}",
            flushlab_core::units::one_line(&args.command[0].to_string_lossy())
        ),
    ))
}

/// wrap's side: a socket the shim will name itself at, and a thread waiting for it that
/// attaches the kernel observer there.
pub struct FarRoot {
    path: PathBuf,
    /// When the shim was told go (it becomes CMD then): the keys wait for it.
    went: Arc<OnceLock<Instant>>,
    stop: Arc<AtomicBool>,
    waiting: std::thread::JoinHandle<Result<u32, String>>,
}

impl FarRoot {
    /// Listens at `dir/root-N.sock` (reachable by `owner`, the far user); the shim that calls
    /// is rooted in `observer`'s tree, its terminal made the observer's second.
    pub fn listen(
        dir: &Path,
        owner: Option<(u32, u32)>,
        observer: Option<Arc<Mutex<Attached>>>,
    ) -> std::io::Result<FarRoot> {
        let path = dir.join(format!(
            "root-{}.sock",
            flushlab_core::files::unpredictable()
        ));
        let listener = UnixListener::bind(&path)?;
        if let Some((uid, gid)) = owner {
            rustix::fs::chown(
                &path,
                Some(rustix::fs::Uid::from_raw(uid)),
                Some(rustix::fs::Gid::from_raw(gid)),
            )?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let went = Arc::new(OnceLock::new());
        let waiting = {
            let (stop, went) = (Arc::clone(&stop), Arc::clone(&went));
            std::thread::Builder::new()
                .name("wrap-far-root".into())
                .spawn(move || root_at_the_far_end(&listener, &stop, (&went, &observer)))?
        };
        Ok(FarRoot {
            path,
            went,
            stop,
            waiting,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// When CMD's shim was told go, once it was.
    pub fn went(&self) -> Arc<OnceLock<Instant>> {
        Arc::clone(&self.went)
    }

    /// The far root's pid, once the observer follows it, or why it does not (the shim never
    /// came, the kernel refused).
    pub fn rooted(self) -> Result<u32, String> {
        self.stop.store(true, Ordering::Relaxed);
        let attached = self
            .waiting
            .join()
            .unwrap_or_else(|_| Err("the far root's thread panicked".to_owned()));
        let _ = std::fs::remove_file(&self.path);
        attached
    }
}

/// Waits (looking at `stop` every 20 ms) for the shim, then makes its terminal the observer's
/// second and the shim a root of its tree, and says go: the shim becomes CMD only once the
/// observer follows it.
fn root_at_the_far_end(
    listener: &UnixListener,
    stop: &AtomicBool,
    (went, observer): (&OnceLock<Instant>, &Option<Arc<Mutex<Attached>>>),
) -> Result<u32, String> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 20_000_000,
    };
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err("CMD's shim on the far side never named itself".to_owned());
        }
        let mut fds = [PollFd::new(listener, PollFlags::IN)];
        if poll(&mut fds, Some(&tick)).unwrap_or(0) > 0 {
            break;
        }
    }
    let (mut stream, _) = listener
        .accept()
        .map_err(|e| format!("the far root: {e}"))?;
    let mut hello = [0u8; 5];
    let _ = stream.read_exact(&mut hello);
    let credentials = rustix::net::sockopt::socket_peercred(&stream)
        .map_err(|e| format!("the far root's credentials: {e}"))?;
    let pid = credentials.pid.as_raw_nonzero().get();
    let rooted = flushlab_core::sys::process::open_fd_of(pid, 0)
        .map_err(|e| format!("the far end's terminal (/proc/{pid}/fd/0): {e}"))
        .and_then(|tty| {
            let observer = observer.as_ref().ok_or("eBPF was refused")?;
            let mut observer = observer.lock().unwrap_or_else(PoisonError::into_inner);
            observer.far_terminal(&tty).map_err(|r| r.to_string())?;
            observer.root(pid.unsigned_abs()).map_err(|r| r.to_string())
        })
        .map(|()| pid.unsigned_abs());
    // Go, observed or not: the near end's figures come either way.
    let _ = stream.write_all(b"g");
    let _ = went.set(Instant::now());
    rooted
}
