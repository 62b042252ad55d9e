//! Pseudo-terminals: how the tests (and the bench) run flushlab on a terminal that a program
//! reads, with no terminal emulator and no human.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use rustix::fs::{Mode, OFlags};
use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use rustix::termios::{Termios, tcgetattr};

/// The master side of a pseudo-terminal, and where its slave side lives.
#[derive(Debug)]
pub struct Pty {
    pub master: File,
    slave_path: std::ffi::CString,
}

impl Pty {
    /// A new pseudo-terminal of `cols` × `rows`, in the kernel's default (cooked) mode.
    pub fn open(cols: u16, rows: u16) -> io::Result<Pty> {
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
        grantpt(&master)?;
        unlockpt(&master)?;
        let slave_path = ptsname(&master, Vec::new())?;
        let pty = Pty {
            master: File::from(master),
            slave_path,
        };
        pty.resize(cols, rows)?;
        Ok(pty)
    }

    pub fn resize(&self, cols: u16, rows: u16) -> io::Result<()> {
        super::set_window_size(&self.master, (cols, rows))
    }

    /// Where the slave side lives (`/dev/pts/N`): what a process's fd links to when it is this
    /// terminal.
    pub fn slave_path(&self) -> std::path::PathBuf {
        use std::os::unix::ffi::OsStrExt;
        std::path::PathBuf::from(std::ffi::OsStr::from_bytes(self.slave_path.as_bytes()))
    }

    /// Opens the slave side again, without making it our controlling terminal.
    pub fn open_slave(&self) -> io::Result<OwnedFd> {
        Ok(rustix::fs::open(
            self.slave_path.as_c_str(),
            OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )?)
    }

    /// Discards what was typed and nobody read (the slave's input queue). Keys forwarded to a
    /// program that has exited fill that queue, and then a write to the master waits for room
    /// forever: discarding them lets it finish.
    pub fn discard_input(&self) -> io::Result<()> {
        Ok(rustix::termios::tcflush(
            self.open_slave()?,
            rustix::termios::QueueSelector::IFlush,
        )?)
    }

    /// The slave's terminal settings, as a program on it sees them.
    pub fn slave_termios(&self) -> io::Result<Termios> {
        Ok(tcgetattr(self.open_slave()?)?)
    }

    /// Starts `program` as the leader of a new session whose controlling terminal is this pty,
    /// with the pty as its stdin, stdout and stderr: what a terminal emulator does. The new
    /// session comes from util-linux `setsid --ctty`, which spares this crate the `unsafe` of a
    /// `pre_exec` hook. Every copy of the slave made here is closed once the child has it, so the
    /// master reads EOF (EIO on Linux) when the child and its children are gone.
    pub fn spawn(&self, program: &Path, configure: impl FnOnce(&mut Command)) -> io::Result<Child> {
        let slave = self.open_slave()?;
        // util-linux's, found without PATH too: a program run with `PATH=` still gets a session.
        let setsid = crate::files::find_program("setsid".as_ref())
            .or_else(|| {
                ["/usr/bin/setsid", "/bin/setsid"]
                    .iter()
                    .map(std::path::PathBuf::from)
                    .find(|p| p.exists())
            })
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "setsid (util-linux) is not installed: apt-get install util-linux",
                )
            })?;
        let mut command = Command::new(setsid);
        command
            .arg("--ctty")
            .arg(program)
            .stdin(Stdio::from(slave.try_clone()?))
            .stdout(Stdio::from(slave.try_clone()?))
            .stderr(Stdio::from(slave));
        configure(&mut command);
        let child = command.spawn().map_err(|e| {
            // A missing program was refused before this; what fails here is the fork itself.
            io::Error::new(
                e.kind(),
                format!(
                    "could not start {} in a pty ({e}): the process's limit on processes \
                     (ulimit -u) or on memory",
                    program.display()
                ),
            )
        });
        drop(command);
        child
    }
}

/// Reads the master until the slave side is closed by everyone. Linux reports that as EIO,
/// which here means end of file.
pub fn read_to_end(mut master: &File, mut sink: impl FnMut(&[u8])) -> io::Result<()> {
    use std::io::Read;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match master.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => sink(&buf[..n]),
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::IO.raw_os_error()) => {
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
