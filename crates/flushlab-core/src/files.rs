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
pub fn unpredictable() -> String {
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
    refuse_planted_links(path)?;
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

/// How many links a path may pass through, as the kernel allows (`ELOOP` beyond).
const MAX_LINKS: usize = 40;

/// Walks `path` as the kernel would, link by link, and refuses it when it passes through a
/// symlink in a sticky world-writable directory (a shared `/tmp`) that neither this user nor
/// the directory's owner owns: the kernel's `fs.protected_symlinks` rule, applied here because
/// many machines (containers among them) run with it off, and a link another user planted
/// beforehand would otherwise aim flushlab's output at a file only we may write.
fn refuse_planted_links(path: &Path) -> io::Result<()> {
    use std::collections::VecDeque;
    use std::os::unix::fs::MetadataExt;
    use std::path::Component;

    let me = rustix::process::geteuid().as_raw();
    let mut at = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        std::env::current_dir()?
    };
    let mut rest: VecDeque<std::ffi::OsString> = VecDeque::new();
    let push_front = |rest: &mut VecDeque<_>, at: &mut PathBuf, p: &Path| {
        if p.is_absolute() {
            *at = PathBuf::from("/");
        }
        for c in p.components().rev() {
            match c {
                Component::Normal(n) => rest.push_front(n.to_owned()),
                Component::ParentDir => rest.push_front("..".into()),
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
    };
    push_front(&mut rest, &mut at, path);
    let mut links = 0;
    while let Some(name) = rest.pop_front() {
        if name == ".." {
            at.pop();
            continue;
        }
        let next = at.join(&name);
        let meta = match std::fs::symlink_metadata(&next) {
            Ok(meta) => meta,
            // Nothing there yet (or not reachable): no link further on can be followed.
            Err(_) => return Ok(()),
        };
        if !meta.file_type().is_symlink() {
            at = next;
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(io::Error::other("too many levels of symbolic links"));
        }
        let dir = std::fs::metadata(&at)?;
        let shared = dir.mode() & 0o1002 == 0o1002;
        if shared && meta.uid() != me && meta.uid() != dir.uid() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is a symlink owned by uid {} in the shared sticky directory {} (neither \
                     you nor the directory's owner): not followed",
                    next.display(),
                    meta.uid(),
                    at.display()
                ),
            ));
        }
        let target = std::fs::read_link(&next)?;
        push_front(&mut rest, &mut at, &target);
    }
    Ok(())
}

/// What a path's last component was when it was checked: nothing, or this file (a link is
/// this link, not what it points to).
type Seen = Option<(u64, u64)>;

/// A destination [`check_writable`] looked at: what was there, and where this run's results
/// went instead once something else took its place.
struct Checked {
    path: PathBuf,
    seen: Seen,
    beside: Option<PathBuf>,
}

/// Destinations [`check_writable`] looked at.
static CHECKED: Mutex<Vec<Checked>> = Mutex::new(Vec::new());

fn seen(path: &Path) -> io::Result<Seen> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some((meta.dev(), meta.ino()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Where `path`'s bytes go now: itself while it is what [`check_writable`] saw (or was never
/// checked), else a file of this run's own beside it. Something put there since the check —
/// another run's results finished first, or a link someone planted — is left alone and never
/// followed; this run's results are kept under a new name, said once on stderr, so two runs
/// on one destination both keep their minutes of measurements.
fn destination_now(path: &Path) -> io::Result<PathBuf> {
    let mut checked = CHECKED.lock().unwrap_or_else(|e| e.into_inner());
    let Some(entry) = checked.iter_mut().rev().find(|c| c.path == path) else {
        return Ok(path.to_owned());
    };
    if let Some(beside) = &entry.beside {
        return Ok(beside.clone());
    }
    if seen(path)? == entry.seen {
        return Ok(path.to_owned());
    }
    let beside = create_beside(path)?;
    crate::outcome::complain(&format!(
        "{} changed while this run measured (another run wrote it, or something was put there): \
         left as it is; these results are in {}",
        crate::units::one_line(&path.display().to_string()),
        crate::units::one_line(&beside.display().to_string()),
    ));
    entry.beside = Some(beside.clone());
    Ok(beside)
}

/// A new empty file beside `path`, `report.json` → `report.<pid>-<random>.json`, created
/// exclusively (never a link, never another's file) through its directory's handle.
fn create_beside(path: &Path) -> io::Result<PathBuf> {
    let (dir, _) = directory_of(path)?;
    let stem = path
        .file_stem()
        .map_or_else(|| "results".into(), |s| s.to_string_lossy().into_owned());
    let extension = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    loop {
        let random = unpredictable();
        let name = format!("{stem}.{}-{}{extension}", std::process::id(), &random[..6]);
        match rustix::fs::openat(
            &dir,
            name.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        ) {
            Ok(_) => return Ok(path.with_file_name(name)),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
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
    /// A `--keys-file` script: 1,000 keys are a few kB.
    KeyScript,
    /// A wrap run's `--export-json` (`wrap --against run.json`): ~300 B a key.
    WrapRun,
}

impl InputKind {
    pub const fn limit(self) -> u64 {
        match self {
            InputKind::Profile => 16 << 20,
            InputKind::Results => 4 << 20,
            InputKind::RunReport => 1 << 20,
            InputKind::FrameLog => 64 << 20,
            InputKind::KeyScript => 1 << 20,
            InputKind::WrapRun => 16 << 20,
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

/// `x.json.gz` → `x.json.syms.json` and `x.report.json`, the files recorded beside a profile.
pub fn sibling(path: &Path, suffix: &str, keep_json: bool) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".gz").unwrap_or(&name);
    let stem = if keep_json {
        stem
    } else {
        stem.strip_suffix(".json").unwrap_or(stem)
    };
    path.with_file_name(format!("{stem}{suffix}"))
}

/// Writes `bytes` to `path`: atomically for a regular file, through the stream for flushlab's
/// own stdout or stderr, in place for a device or FIFO. See the module's documentation.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    // Two runs finishing at once on one destination take turns in its directory: each then
    // sees what the other wrote (and keeps its own results beside it), instead of both finding
    // the path as checked and renaming over each other.
    let _turn = directory_turn(path);
    let path = &destination_now(path)?;
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
            for entry in checked.iter_mut().filter(|c| c.path == *path) {
                entry.seen = now;
            }
            Ok(())
        }
    }
}

/// An exclusive advisory lock on `path`'s directory, held until dropped; `None` where the
/// directory cannot be opened or locked (the write then says why, or goes ahead alone).
fn directory_turn(path: &Path) -> Option<std::os::fd::OwnedFd> {
    let (dir, _) = directory_of(path).ok()?;
    rustix::fs::flock(&dir, rustix::fs::FlockOperation::LockExclusive).ok()?;
    Some(dir)
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

    /// A file named for another format than the one written (`keys.bmp` for an SVG) is
    /// refused: whatever opened it would take it for what its name says. No extension, or
    /// standard output, is fine.
    pub fn check_named_for(&self, extension: &str) -> Result<(), String> {
        let Some(named) = self
            .file()
            .and_then(Path::extension)
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
        else {
            return Ok(());
        };
        if named == extension {
            return Ok(());
        }
        Err(format!(
            "'{}' names a .{} file, and this writes {}: name it .{extension} (or - for standard \
             output)",
            crate::units::printable(&self.to_string()),
            crate::units::printable(&named),
            extension.to_ascii_uppercase()
        ))
    }

    /// [`check_writable`] for a file; standard output is always there to try.
    pub fn check(&self) -> io::Result<()> {
        self.file().map_or(Ok(()), check_writable)
    }

    /// `value` as pretty JSON and a line break: [`Destination::write`].
    pub fn write_json(&self, value: &impl serde::Serialize) -> io::Result<()> {
        let mut json = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
        json.push(b'\n');
        self.write(&json)
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
    let seen = seen(path)?;
    CHECKED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Checked {
            path: path.to_owned(),
            seen,
            beside: None,
        });
    Ok(())
}

/// A private scratch directory: created fresh (never reused) with an unpredictable name and
/// mode 0700, removed with everything in it when dropped, on every way out that unwinds; and
/// where it is [`swept`](Scratch::swept), on the ways that do not (SIGKILL) too.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
    /// Declared after `path`: the directory is removed (in `drop`) before the sweeper is let go.
    sweeper: Option<Sweeper>,
}

impl Scratch {
    pub fn new(prefix: &str) -> io::Result<Scratch> {
        let base = std::env::temp_dir();
        loop {
            let path = base.join(format!("{prefix}-{}", unpredictable()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    return Ok(Scratch {
                        path,
                        sweeper: None,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// A scratch directory that a process of its own removes once this process is gone,
    /// however it goes (SIGKILL included): for directories whose owner can be killed mid-run.
    pub fn swept(prefix: &str) -> io::Result<Scratch> {
        let mut scratch = Scratch::new(prefix)?;
        let sweeper = Sweeper::start(&scratch.path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "could not start the sweeper of {}: {e}",
                    crate::units::printable(&scratch.path.to_string_lossy())
                ),
            )
        })?;
        scratch.sweeper = Some(sweeper);
        Ok(scratch)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The sweeper's pid, where there is one: a process of this one's that must outlive any
    /// tree it ends.
    pub fn sweeper(&self) -> Option<i32> {
        self.sweeper.as_ref().map(Sweeper::pid)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A process that removes a directory once this process is gone, however it goes: it waits
/// to read from a pipe whose only writer is this process (close-on-exec, so no program it
/// starts holds it), and the kernel closes that with the process's last fd, SIGKILL included.
/// On a normal end the directory is gone already (`Scratch`'s drop) and its `rm -rf` finds
/// nothing.
#[derive(Debug)]
pub struct Sweeper {
    pipe: Option<std::process::ChildStdin>,
    child: std::process::Child,
}

impl Sweeper {
    /// Starts the sweeper of `dir`.
    pub fn start(dir: &Path) -> io::Result<Sweeper> {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "read -r _ || true; rm -rf -- \"$1\"", "sh"])
            .arg(dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        Ok(Sweeper {
            pipe: child.stdin.take(),
            child,
        })
    }

    /// Its pid: a process of this one's that must outlive any tree it ends.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        self.pipe.take();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_named_for_another_format_is_refused() {
        let named = |text: &str| Destination::parse(text).unwrap().check_named_for("svg");
        assert!(named("keys.svg").is_ok() && named("KEYS.SVG").is_ok());
        assert!(named("keys").is_ok() && named("-").is_ok());
        let why = named("keys.bmp").unwrap_err();
        assert!(why.contains(".bmp") && why.contains("SVG"), "{why}");
        assert!(!named("k.\x1b[31m").unwrap_err().contains('\x1b'));
    }

    #[test]
    fn siblings() {
        let p = Path::new("profiles/stderr-raw.json.gz");
        assert_eq!(
            sibling(p, ".syms.json", true),
            Path::new("profiles/stderr-raw.json.syms.json")
        );
        assert_eq!(
            sibling(p, ".report.json", false),
            Path::new("profiles/stderr-raw.report.json")
        );
    }

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
        write_atomically(&report, b"{}").unwrap();
        assert_eq!(std::fs::read(&secret).unwrap(), b"S");
        let beside = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .find(|n| n != "r.json" && n.starts_with("r.") && n.ends_with(".json"))
            .expect("the results kept beside the planted link");
        assert_eq!(std::fs::read(dir.join(&beside)).unwrap(), b"{}");
        // Later writes of the run go to the same file beside it, never through the link.
        write_atomically(&report, b"{2}").unwrap();
        assert_eq!(std::fs::read(dir.join(&beside)).unwrap(), b"{2}");
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

    /// A sticky world-writable directory (a shared `/tmp`) holding `out -> secret`, the link
    /// owned by `link_owner`; the secret is a 0600 file of ours.
    fn shared_tmp_with_link(link_owner: u32) -> (Scratch, PathBuf, PathBuf) {
        let scratch = Scratch::new("flushlab-files-test").unwrap();
        let shared = scratch.path().join("tmp");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let secret = scratch.path().join("secret");
        std::fs::write(&secret, b"S").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let out = shared.join("out");
        std::os::unix::fs::symlink(&secret, &out).unwrap();
        std::os::unix::fs::lchown(&out, Some(link_owner), Some(link_owner)).unwrap();
        (scratch, out, secret)
    }

    #[test]
    fn a_link_another_user_planted_beforehand_in_a_shared_directory_is_refused() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: only root can plant a link owned by another user");
            return;
        }
        let (_scratch, out, secret) = shared_tmp_with_link(65534);
        let err = check_writable(&out).unwrap_err();
        assert!(err.to_string().contains("owned by uid 65534"), "{err}");
        assert!(!err.to_string().contains('\n'), "{err}");
        assert!(write_atomically(&out, b"{}").is_err());
        // Reached through a second link, of ours, the rule still holds for the first.
        let ours = out.with_file_name("ours");
        std::os::unix::fs::symlink(&out, &ours).unwrap();
        assert!(check_writable(&ours).is_err());
        assert_eq!(std::fs::read(&secret).unwrap(), b"S");
        let mode = std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_link_of_ones_own_in_a_shared_directory_is_followed() {
        let me = rustix::process::geteuid().as_raw();
        let (_scratch, out, secret) = shared_tmp_with_link(me);
        check_writable(&out).unwrap();
        write_atomically(&out, b"mine").unwrap();
        assert_eq!(std::fs::read(&secret).unwrap(), b"mine");
    }

    #[test]
    fn two_runs_on_one_destination_both_keep_their_results() {
        let scratch = Scratch::new("flushlab-files-test").unwrap();
        let out = scratch.path().join("results.json");
        check_writable(&out).unwrap();
        // Another run finishes first and writes the destination.
        std::fs::write(&out, b"theirs").unwrap();
        write_atomically(&out, b"ours").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"theirs");
        let kept: Vec<_> = std::fs::read_dir(scratch.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p != &out)
            .collect();
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert_eq!(std::fs::read(&kept[0]).unwrap(), b"ours");
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
