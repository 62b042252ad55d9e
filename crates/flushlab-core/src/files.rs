//! Where flushlab writes — output files given by the user, and its own scratch space — how
//! it reads the files others send it (bounded), and where it finds a program to run. A leaf.
//!
//! flushlab runs as root in CI and on desktops, so a path is never trusted to be what it looks
//! like. A regular file (or a path that does not exist yet) is replaced atomically through a
//! temporary file created exclusively (`O_EXCL`, `O_NOFOLLOW`, an unpredictable name) in the
//! same directory, reached through a handle on that directory, and renamed over it there:
//! readers never see half a file, and an existing file keeps its mode and owner. What a
//! destination was when [`check_writable`] looked is remembered: if a link (or anything else)
//! appears there before the write, the write is refused — a link planted in a world-writable
//! directory between the check and the end of a run is never followed. A destination that is
//! one of flushlab's own streams (`/dev/stdout`, `/proc/self/fd/1`, even when that is a regular
//! file) is written through the stream. Anything else — a device, a FIFO — is written in place,
//! as the user meant (`--report /dev/null` leaves /dev/null a device); a FIFO nobody reads is
//! waited for [`FIFO_WAIT`] at most. A directory is refused.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// A name no other process can guess: the clock's nanoseconds, the pid and a counter, mixed.
fn unpredictable() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = nanos
        ^ (u64::from(std::process::id()) << 32)
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // splitmix64: every input bit moves every output bit.
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    format!("{:016x}", x ^ (x >> 31))
}

/// What is at `path`, followed through symlinks: where the bytes will really go.
enum Target {
    /// A regular file, or nothing yet: replaced atomically beside `at`.
    Replace { at: PathBuf },
    /// flushlab's own stdout (1) or stderr (2), whatever file that is: written through it.
    Stream(i32),
    /// A device, FIFO or socket: written in place.
    InPlace { fifo: bool },
}

/// Whether `meta` is the file behind flushlab's fd `fd`.
fn is_own_stream(meta: &std::fs::Metadata, fd: i32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let stream = match fd {
        1 => rustix::fs::fstat(rustix::stdio::stdout()),
        _ => rustix::fs::fstat(rustix::stdio::stderr()),
    };
    stream.is_ok_and(|st| st.st_dev == meta.dev() && st.st_ino == meta.ino())
}

fn target(path: &Path) -> io::Result<Target> {
    if path.as_os_str().is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty path"));
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory; give a file name",
        )),
        Ok(meta) if let Some(fd) = [1, 2].into_iter().find(|&fd| is_own_stream(&meta, fd)) => {
            Ok(Target::Stream(fd))
        }
        Ok(meta) if meta.is_file() => Ok(Target::Replace {
            // A symlink to a file: the file is replaced, the link stays a link.
            at: std::fs::canonicalize(path)?,
        }),
        Ok(meta) => Ok(Target::InPlace {
            fifo: std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Target::Replace {
            at: path.to_owned(),
        }),
        Err(e) => Err(e),
    }
}

/// What a path's last component was when it was checked: nothing, or this file (a link is
/// this link, not what it points to).
type Seen = Option<(u64, u64)>;

/// Destinations [`check_writable`] looked at, and what was there.
static CHECKED: Mutex<Vec<(PathBuf, Seen)>> = Mutex::new(Vec::new());

fn seen(path: &Path) -> io::Result<Seen> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some((meta.dev(), meta.ino()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Refuses a destination that is no longer what [`check_writable`] saw.
fn still_as_checked(path: &Path) -> io::Result<()> {
    let checked = CHECKED.lock().unwrap_or_else(|e| e.into_inner());
    let Some((_, then)) = checked.iter().rev().find(|(p, _)| p == path) else {
        return Ok(());
    };
    if seen(path)? != *then {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "changed since it was checked (a file or link put there meanwhile): not written",
        ));
    }
    Ok(())
}

/// The directory `at` is in, opened (so the temporary and the rename happen in this very
/// directory even if a path component is swapped meanwhile), and `at`'s name in it.
fn directory_of(at: &Path) -> io::Result<(std::os::fd::OwnedFd, std::ffi::OsString)> {
    let dir = match at.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = at
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?
        .to_owned();
    let handle = rustix::fs::open(
        &dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok((handle, name))
}

/// Creates a new file in `dir` that nobody else can have created or linked first; its name.
fn exclusive_temp(
    dir: &std::os::fd::OwnedFd,
    stem: &std::ffi::OsStr,
) -> io::Result<(File, std::ffi::OsString)> {
    loop {
        let name: std::ffi::OsString =
            format!(".{}.{}.tmp", stem.to_string_lossy(), unpredictable()).into();
        match rustix::fs::openat(
            dir,
            name.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        ) {
            Ok(fd) => return Ok((File::from(fd), name)),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// How long a write to a FIFO waits for a reader to open it.
pub const FIFO_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Opens a device or FIFO to write; a FIFO without a reader is waited for [`FIFO_WAIT`].
fn open_in_place(path: &Path, fifo: bool) -> io::Result<File> {
    if !fifo {
        return OpenOptions::new().write(true).open(path);
    }
    let until = std::time::Instant::now() + FIFO_WAIT;
    loop {
        match rustix::fs::open(
            path,
            OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => {
                // Open: from here the writes may wait for the reader, as with any pipe.
                let flags = rustix::fs::fcntl_getfl(&fd)?;
                rustix::fs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK)?;
                return Ok(File::from(fd));
            }
            Err(rustix::io::Errno::NXIO) if std::time::Instant::now() < until => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(rustix::io::Errno::NXIO) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "a FIFO nobody opened for reading in {} s",
                        FIFO_WAIT.as_secs()
                    ),
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// How much of a file someone else sent flushlab reads, by what the file is. Each bound is far
/// above what flushlab writes and low enough that the parsed file stays within the memory
/// bound docs/reliability.md states (a few times the bound: the parsed tables are a few bytes
/// an entry, the JSON text as few as two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A samply profile, decompressed, and its `.syms.json`: a 5 s run's is ~0.2 MB.
    Profile,
    /// A bench or tour result file: 72 rows are 74 kB.
    Results,
    /// The run report recorded beside a profile: ~1 kB.
    RunReport,
    /// A painted run's frame times (`flushlab paint`): ~30 bytes a frame, 3 MB for 10 s at
    /// 10,000 fps.
    FrameLog,
}

impl InputKind {
    pub const fn limit(self) -> u64 {
        match self {
            InputKind::Profile => 16 << 20,
            InputKind::Results => 4 << 20,
            InputKind::RunReport => 1 << 20,
            InputKind::FrameLog => 64 << 20,
        }
    }
}

/// Reads all of `reader`, up to `limit` bytes: a byte more is an error that says so.
pub fn read_bounded(reader: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than the {} MiB flushlab reads", limit >> 20),
        ));
    }
    Ok(bytes)
}

/// Reads the file at `path`, up to `kind`'s limit. Only a regular file: a FIFO (or a
/// device) could keep flushlab waiting forever for bytes nobody sends.
pub fn read_input(path: &Path, kind: InputKind) -> io::Result<Vec<u8>> {
    // Opened without waiting (a FIFO's open blocks until a writer comes), then looked at.
    let file = File::from(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?);
    let file_type = file.metadata()?.file_type();
    if !file_type.is_file() {
        let what = if std::os::unix::fs::FileTypeExt::is_fifo(&file_type) {
            "a FIFO"
        } else if file_type.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what}: flushlab reads regular files"),
        ));
    }
    read_bounded(file, kind.limit())
}

/// Finds `program` as the shell would: a path as given, a bare name in `$PATH`.
pub fn find_program(program: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let path = Path::new(program);
    if path.components().count() > 1 || program.to_string_lossy().contains('/') {
        return executable(path).then(|| path.to_owned());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(path))
        .find(|p| executable(p))
}

/// Writes `bytes` to `path`: atomically for a regular file, through the stream for flushlab's
/// own stdout or stderr, in place for a device or FIFO. See the module's documentation.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    still_as_checked(path)?;
    match target(path)? {
        Target::Stream(1) => crate::outcome::print(bytes),
        Target::Stream(_) => crate::outcome::print_aside(bytes),
        Target::InPlace { fifo } => open_in_place(path, fifo)?.write_all(bytes),
        Target::Replace { at } => {
            replace(&at, bytes)?;
            // What is there now is flushlab's own file: the next write (the bench writes after
            // every run) replaces it again.
            let now = seen(path)?;
            let mut checked = CHECKED.lock().unwrap_or_else(|e| e.into_inner());
            for (_, then) in checked.iter_mut().filter(|(p, _)| p == path) {
                *then = now;
            }
            Ok(())
        }
    }
}

/// Replaces (or creates) the regular file `at` through its directory's handle.
fn replace(at: &Path, bytes: &[u8]) -> io::Result<()> {
    let (dir, name) = directory_of(at)?;
    // What is there now, not followed: a link that appeared since `target` looked is refused.
    let existing = match rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => Some(st),
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "not a regular file any more (a link or something else put there): not written",
            ));
        }
        Err(rustix::io::Errno::NOENT) => None,
        Err(e) => return Err(e.into()),
    };
    let (mut file, tmp) = exclusive_temp(&dir, &name)?;
    let result = (|| {
        // An existing file keeps its mode and owner.
        if let Some(st) = existing {
            rustix::fs::fchmod(&file, Mode::from_raw_mode(st.st_mode & 0o7777))?;
            if rustix::process::geteuid().is_root() {
                let owner = rustix::fs::Uid::from_raw(st.st_uid);
                let group = rustix::fs::Gid::from_raw(st.st_gid);
                rustix::fs::fchown(&file, Some(owner), Some(group))?;
            }
        }
        file.write_all(bytes)?;
        file.sync_data()?;
        rustix::fs::renameat(&dir, tmp.as_os_str(), &dir, name.as_os_str())?;
        Ok(())
    })();
    if result.is_err() {
        let _ = rustix::fs::unlinkat(&dir, tmp.as_os_str(), AtFlags::empty());
    }
    result
}

/// Where an output flag sends its bytes: standard output (`-`, as every Unix tool spells it)
/// or a file. Parsed once, from the flag's value; nothing downstream compares a path with "-".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    File(PathBuf),
}

impl Destination {
    /// The flags' value parser: `-` is standard output, an empty value is refused.
    pub fn parse(text: &str) -> Result<Destination, String> {
        match text {
            "" => Err("an empty path: give a file, or - for standard output".to_owned()),
            "-" => Ok(Destination::Stdout),
            path => Ok(Destination::File(PathBuf::from(path))),
        }
    }

    pub fn is_stdout(&self) -> bool {
        matches!(self, Destination::Stdout)
    }

    /// The file, when it is one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Destination::Stdout => None,
            Destination::File(path) => Some(path),
        }
    }

    /// [`check_writable`] for a file; standard output is always there to try.
    pub fn check(&self) -> io::Result<()> {
        self.file().map_or(Ok(()), check_writable)
    }

    /// The whole output: [`write_atomically`] for a file, one write to standard output (a
    /// reader that left is marked so, see [`crate::outcome::print`]).
    pub fn write(&self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Destination::Stdout => crate::outcome::print(bytes),
            Destination::File(path) => write_atomically(path, bytes),
        }
    }
}

impl std::fmt::Display for Destination {
    /// As the user gave it: `-`, or the path.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Destination::Stdout => f.write_str("-"),
            Destination::File(path) => path.display().fmt(f),
        }
    }
}

/// Checks, before any measuring, that `path` can be written, and changes nothing there: a
/// directory, a missing directory or one without write permission is refused now rather than
/// after minutes of measuring. What is there is remembered for the write (see the module's
/// documentation). A FIFO is not opened (its reader would see an end of file).
pub fn check_writable(path: &Path) -> io::Result<()> {
    match target(path)? {
        Target::Stream(_) => {}
        Target::InPlace { fifo: true } => rustix::fs::access(path, rustix::fs::Access::WRITE_OK)?,
        Target::InPlace { fifo: false } => OpenOptions::new().write(true).open(path).map(drop)?,
        Target::Replace { at } => {
            let (dir, name) = directory_of(&at)?;
            let (_, tmp) = exclusive_temp(&dir, &name)?;
            rustix::fs::unlinkat(&dir, tmp.as_os_str(), AtFlags::empty())?;
        }
    }
    CHECKED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((path.to_owned(), seen(path)?));
    Ok(())
}

/// A private scratch directory: created fresh (never reused) with an unpredictable name and
/// mode 0700, removed with everything in it when dropped, on every way out that unwinds.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    pub fn new(prefix: &str) -> io::Result<Scratch> {
        let base = std::env::temp_dir();
        loop {
            let path = base.join(format!("{prefix}-{}", unpredictable()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(Scratch { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn paths_of_every_kind() {
        let scratch = Scratch::new("flushlab-files-test").unwrap();
        let dir = scratch.path();
        assert_eq!(
            std::fs::metadata(dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        // New, existing, through a symlink, a device: each ends as the user meant.
        let new = dir.join("new.json");
        write_atomically(&new, b"one").unwrap();
        write_atomically(&new, b"two").unwrap();
        assert_eq!(std::fs::read(&new).unwrap(), b"two");
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(&new, &link).unwrap();
        write_atomically(&link, b"three").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&new).unwrap(), b"three");
        write_atomically(Path::new("/dev/null"), b"gone").unwrap();
        assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
        // Refused: a directory, a missing directory, the empty path. Nothing left behind.
        for bad in [
            dir.to_owned(),
            dir.join("no/such/dir/x.json"),
            PathBuf::new(),
        ] {
            assert!(write_atomically(&bad, b"x").is_err(), "{}", bad.display());
            assert!(check_writable(&bad).is_err(), "{}", bad.display());
        }
        check_writable(&new).unwrap();
        assert_eq!(
            std::fs::read(&new).unwrap(),
            b"three",
            "a check changes nothing"
        );
        let names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        let path = dir.to_owned();
        drop(scratch);
        assert!(!path.exists(), "scratch removed");
    }

    #[test]
    fn a_link_planted_after_the_check_is_never_followed() {
        let scratch = Scratch::new("flushlab-files-test").unwrap();
        let dir = scratch.path();
        let secret = dir.join("secret");
        std::fs::write(&secret, b"S").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let report = dir.join("r.json");
        check_writable(&report).unwrap();
        // Planted between the check and the end of the run.
        std::os::unix::fs::symlink(&secret, &report).unwrap();
        let err = write_atomically(&report, b"{}").unwrap_err();
        assert!(
            err.to_string().contains("changed since it was checked"),
            "{err}"
        );
        assert_eq!(std::fs::read(&secret).unwrap(), b"S");
        let mode = std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A file of flushlab's own is written again and again (the bench, after every run);
        // an existing file keeps its mode.
        let own = dir.join("own.json");
        check_writable(&own).unwrap();
        write_atomically(&own, b"1").unwrap();
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomically(&own, b"2").unwrap();
        assert_eq!(std::fs::read(&own).unwrap(), b"2");
        let mode = std::fs::metadata(&own).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_fifo_is_not_opened_by_the_check_and_is_written_once() {
        let scratch = Scratch::new("flushlab-files-test").unwrap();
        let fifo = scratch.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let reading = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        check_writable(&fifo).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            !reading.is_finished(),
            "the check opened the FIFO: its reader saw an end"
        );
        write_atomically(&fifo, b"all of it").unwrap();
        assert_eq!(reading.join().unwrap(), b"all of it");
        // As an input, a FIFO nobody writes to is refused at once, not waited for forever.
        let err = read_input(&fifo, InputKind::Results).unwrap_err();
        assert!(err.to_string().contains("a FIFO"), "{err}");
    }

    #[test]
    fn scratch_directories_are_never_reused() {
        let a = Scratch::new("flushlab-files-test").unwrap();
        let b = Scratch::new("flushlab-files-test").unwrap();
        assert_ne!(a.path(), b.path());
    }
}
