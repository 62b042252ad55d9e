//! The tmux layer: Debian's tmux with a socket directory and a configuration of its own in the
//! far user's part of the wire's scratch directory, so nothing of the user's tmux is read or
//! reached (no `~/.tmux.conf`, no `/etc/tmux.conf`, not their server). The configuration is
//! empty: tmux as it comes, its status line on.
//!
//! The tmux *server* writes the terminal its client runs in (the client hands it the tty), and
//! it redraws what changed rather than forwarding CMD's bytes: frames are matched to its
//! pieces by time.

use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::far_user::FarUser;

/// The longest path a Unix socket takes (`sun_path`, less its NUL).
const SOCKET_PATH_AT_MOST: usize = 107;

/// A tmux of wrap's own: where its socket lives and what it reads.
#[derive(Debug)]
pub struct Tmux {
    /// `TMUX_TMPDIR`: tmux makes its `tmux-UID/` socket directory here.
    dir: PathBuf,
    config: PathBuf,
    /// The socket's name (`-L`).
    name: String,
}

impl Tmux {
    /// A tmux for `user`, in `far` (their directory in the wire's scratch directory).
    pub fn prepare(far: &Path, user: &FarUser) -> std::io::Result<Tmux> {
        let dir = far.join("tmux");
        let name = format!("flushlab-{}", flushlab_core::files::unpredictable());
        // tmux's socket is `TMUX_TMPDIR/tmux-UID/NAME`; a Unix socket's path holds 107 bytes.
        let socket = dir.join(format!("tmux-{}", user.uid)).join(&name);
        let length = socket.as_os_str().len();
        if length > SOCKET_PATH_AT_MOST {
            return Err(std::io::Error::other(format!(
                "wrap --via tmux: tmux's socket would be {length} bytes long in the temporary \
                 directory '{}' (a socket's path holds {SOCKET_PATH_AT_MOST}): set TMPDIR to a \
                 shorter one, e.g. TMPDIR=/tmp",
                flushlab_core::units::printable(&std::env::temp_dir().to_string_lossy())
            )));
        }
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let config = far.join("tmux.conf");
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&config)?;
        for path in [&dir, &config] {
            user.owns(path)?;
        }
        Ok(Tmux { dir, config, name })
    }

    /// The words that run `inner` in a new session of this tmux, its client attached to the
    /// terminal they start on (`TMUX` unset: inside a tmux of the user's, tmux would refuse
    /// to nest).
    pub fn command(&self, inner: &[OsString]) -> Vec<OsString> {
        let mut words: Vec<OsString> = vec![
            "env".into(),
            "-u".into(),
            "TMUX".into(),
            {
                let mut tmpdir = OsString::from("TMUX_TMPDIR=");
                tmpdir.push(&self.dir);
                tmpdir
            },
            "tmux".into(),
            "-L".into(),
            self.name.clone().into(),
            "-f".into(),
            self.config.clone().into_os_string(),
            "new-session".into(),
            "--".into(),
        ];
        words.extend(inner.iter().cloned());
        words
    }
}
