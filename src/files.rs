//! Where flushlab writes — output files given by the user, and its own scratch space — how
//! it reads the files others send it (bounded), and where it finds a program to run. A leaf.
//!
//! flushlab runs as root in CI and on desktops, so a path is never trusted to be what it looks
//! like. A regular file (or a path that does not exist yet) is replaced atomically through a
//! temporary file created exclusively (`O_EXCL`, an unpredictable name, the same directory), so
//! a planted symlink is never followed and readers never see half a file. Anything else — a
//! device, a FIFO, `/dev/stdout` — is written in place, as the user meant: `--report /dev/null`
//! leaves /dev/null a device. A directory is refused.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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
    /// A device, FIFO or socket: written in place.
    InPlace,
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
        Ok(meta) if meta.is_file() => Ok(Target::Replace {
            // A symlink to a file: the file is replaced, the link stays a link.
            at: std::fs::canonicalize(path)?,
        }),
        Ok(_) => Ok(Target::InPlace),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Target::Replace {
            at: path.to_owned(),
        }),
        Err(e) => Err(e),
    }
}

/// Creates a new file beside `at` that nobody else can have created or linked first.
fn exclusive_temp(at: &Path) -> io::Result<(File, PathBuf)> {
    let dir = match at.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    let stem = at
        .file_name()
        .map_or_else(|| "flushlab".into(), |n| n.to_string_lossy().into_owned());
    loop {
        let tmp = dir.join(format!(".{stem}.{}.tmp", unpredictable()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)
        {
            Ok(file) => return Ok((file, tmp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The most a file read from someone else (a profile, decompressed; its symbols; tour results)
/// may hold: far above what flushlab writes (a profile of a 5 s run inflates to a few MB), far
/// below what would take a machine's memory (a 4 MB gzip can inflate to 4 GiB).
pub const MAX_INPUT_BYTES: u64 = 256 << 20;

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

/// Reads the file at `path`, up to [`MAX_INPUT_BYTES`].
pub fn read_input(path: &Path) -> io::Result<Vec<u8>> {
    read_bounded(File::open(path)?, MAX_INPUT_BYTES)
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

/// Writes `bytes` to `path`: atomically for a regular file, in place for a device or FIFO.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    match target(path)? {
        Target::InPlace => OpenOptions::new().write(true).open(path)?.write_all(bytes),
        Target::Replace { at } => {
            let (mut file, tmp) = exclusive_temp(&at)?;
            let result = file
                .write_all(bytes)
                .and_then(|()| file.sync_data())
                .and_then(|()| std::fs::rename(&tmp, &at));
            if result.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            result
        }
    }
}

/// Checks, before any measuring, that `path` can be written, and changes nothing there: a
/// directory, a missing directory or one without write permission is refused now rather than
/// after minutes of measuring.
pub fn check_writable(path: &Path) -> io::Result<()> {
    match target(path)? {
        Target::InPlace => OpenOptions::new().write(true).open(path).map(drop),
        Target::Replace { at } => {
            let (_, tmp) = exclusive_temp(&at)?;
            std::fs::remove_file(tmp)
        }
    }
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
    fn scratch_directories_are_never_reused() {
        let a = Scratch::new("flushlab-files-test").unwrap();
        let b = Scratch::new("flushlab-files-test").unwrap();
        assert_ne!(a.path(), b.path());
    }
}
