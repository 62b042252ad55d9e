//! What kind of program an executable is, as far as a preload is concerned: one the loader
//! starts (the preload loads), a static one (nothing loads it), or Go's (its runtime makes its
//! own system calls, dynamic or not). Read from the ELF's program headers: `PT_INTERP` names a
//! loader; a `PT_NOTE` owned by "Go" of type 4 is Go's build id.

use std::path::Path;

/// An executable's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Image {
    /// Started by the dynamic loader, which loads the preload (also scripts, whose interpreter
    /// is looked at when it runs).
    Dynamic,
    /// No loader: nothing is preloaded.
    Static,
    /// Go: its runtime calls the kernel itself, so the preload sees nothing, loaded or not.
    Go,
}

impl Image {
    /// Whether a preload sees this program's calls.
    pub fn preload_sees(self) -> bool {
        self == Image::Dynamic
    }

    pub fn name(self) -> &'static str {
        match self {
            Image::Dynamic => "dynamic",
            Image::Static => "static",
            Image::Go => "Go",
        }
    }
}

/// The kind of the executable at `path` (read at most its first 1 MiB of headers and notes);
/// what is not a 64-bit ELF is `Dynamic` (a script: its interpreter decides).
pub fn image_of(path: &Path) -> Image {
    use std::io::Read;
    let mut bytes = Vec::new();
    let read = std::fs::File::open(path).and_then(|f| f.take(1 << 20).read_to_end(&mut bytes));
    if read.is_err() {
        return Image::Dynamic;
    }
    image_of_bytes(&bytes)
}

/// Whether the executable holds `needle`: built by rustc, its panic locations name std's
/// sources under `/rustc/<commit>/` and each crate's by its package's name. Reads it in 1 MiB
/// pieces, at most 256 MiB.
pub fn mentions(exe: &Path, needle: &[u8]) -> bool {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(exe) else {
        return false;
    };
    let mut file = file.take(256 << 20);
    let mut piece = vec![0u8; 1 << 20];
    // The end of the previous piece, so a needle split between two pieces is found.
    let mut kept = 0;
    loop {
        let n = match file.read(&mut piece[kept..]) {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        let filled = kept + n;
        if piece[..filled].windows(needle.len()).any(|w| w == needle) {
            return true;
        }
        kept = (needle.len() - 1).min(filled);
        piece.copy_within(filled - kept..filled, 0);
    }
}

/// Whether the executable runs with its owner's or group's privilege (setuid, setgid): under a
/// tracer's filter (`PR_SET_NO_NEW_PRIVS`) it would run without it.
pub fn is_setuid(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o6000 != 0)
}

/// Whether a dynamic program reads its keys with raw system calls a preload cannot see: a
/// Rust program that links rustix (crossterm reads through it since 0.28).
pub fn reads_keys_raw(path: &Path) -> bool {
    mentions(path, b"rustix")
}

const PT_INTERP: u32 = 3;
const PT_NOTE: u32 = 4;
const NT_GO_BUILD_ID: u32 = 4;

/// [`image_of`] on the file's first bytes.
pub fn image_of_bytes(elf: &[u8]) -> Image {
    let u16_at = |i: usize| elf.get(i..i + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |i: usize| {
        elf.get(i..i + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |i: usize| {
        elf.get(i..i + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    };
    // ELF, 64-bit, little-endian: the only kind the tracer is built for.
    if !elf.starts_with(b"\x7fELF\x02\x01") {
        return Image::Dynamic;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(32), u16_at(54), u16_at(56)) else {
        return Image::Dynamic;
    };
    let mut interp = false;
    let mut go = false;
    for i in 0..usize::from(phnum) {
        let header = phoff as usize + i * usize::from(phentsize);
        let (Some(kind), Some(offset), Some(size)) =
            (u32_at(header), u64_at(header + 8), u64_at(header + 32))
        else {
            break;
        };
        match kind {
            PT_INTERP => interp = true,
            PT_NOTE => go |= has_go_note(elf, offset as usize, size as usize),
            _ => {}
        }
    }
    match (go, interp) {
        (true, _) => Image::Go,
        (false, true) => Image::Dynamic,
        (false, false) => Image::Static,
    }
}

/// Whether the notes at `offset` (`size` bytes) hold Go's build id.
fn has_go_note(elf: &[u8], offset: usize, size: usize) -> bool {
    let Some(notes) = elf.get(offset..offset.saturating_add(size)) else {
        return false;
    };
    let word = |i: usize| {
        notes
            .get(i..i + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let align4 = |n: usize| n.div_ceil(4) * 4;
    let mut at = 0;
    while let (Some(namesz), Some(descsz), Some(kind)) = (word(at), word(at + 4), word(at + 8)) {
        let name = notes.get(at + 12..at + 12 + namesz.min(notes.len()));
        if kind as u32 == NT_GO_BUILD_ID && name.is_some_and(|n| n.starts_with(b"Go\0")) {
            return true;
        }
        at += 12 + align4(namesz) + align4(descsz);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_binary_is_dynamic_and_sh_is_too() {
        let me = std::env::current_exe().unwrap();
        assert_eq!(image_of(&me), Image::Dynamic);
        assert_eq!(image_of("/bin/sh".as_ref()), Image::Dynamic);
    }

    #[test]
    fn a_rust_program_linking_rustix_reads_its_keys_raw() {
        // This test binary links rustix (flushlab reads keys through it); sh does not.
        assert!(reads_keys_raw(&std::env::current_exe().unwrap()));
        assert!(!reads_keys_raw("/bin/sh".as_ref()));
        assert!(!reads_keys_raw("/nonexistent".as_ref()));
    }

    #[test]
    fn a_setuid_bit_is_seen() {
        assert!(!is_setuid(&std::env::current_exe().unwrap()));
        assert!(!is_setuid("/nonexistent".as_ref()));
        // Debian's su and passwd are setuid root.
        let setuid = ["/usr/bin/su", "/bin/su", "/usr/bin/passwd"]
            .iter()
            .any(|p| is_setuid(p.as_ref()));
        assert!(setuid || !std::path::Path::new("/usr/bin/passwd").exists());
    }

    #[test]
    fn not_an_elf_is_left_to_its_interpreter() {
        assert_eq!(image_of_bytes(b"#!/bin/sh\necho hi\n"), Image::Dynamic);
        assert_eq!(image_of_bytes(b""), Image::Dynamic);
        assert_eq!(image_of_bytes(b"\x7fELF\x02\x01\x01"), Image::Dynamic);
        assert_eq!(image_of("/nonexistent/x".as_ref()), Image::Dynamic);
    }

    /// A hand-made ELF header with the program headers asked for.
    fn elf(headers: &[(u32, &[u8])]) -> Vec<u8> {
        let mut e = vec![0u8; 64];
        e[..6].copy_from_slice(b"\x7fELF\x02\x01");
        e[32..40].copy_from_slice(&64u64.to_le_bytes());
        e[54..56].copy_from_slice(&56u16.to_le_bytes());
        e[56..58].copy_from_slice(&(headers.len() as u16).to_le_bytes());
        let data_at = 64 + 56 * headers.len();
        let mut data = Vec::new();
        for (kind, content) in headers {
            let mut h = vec![0u8; 56];
            h[0..4].copy_from_slice(&kind.to_le_bytes());
            h[8..16].copy_from_slice(&((data_at + data.len()) as u64).to_le_bytes());
            h[32..40].copy_from_slice(&(content.len() as u64).to_le_bytes());
            e.extend(h);
            data.extend_from_slice(content);
        }
        e.extend(data);
        e
    }

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut n = Vec::new();
        n.extend((name.len() as u32).to_le_bytes());
        n.extend((desc.len() as u32).to_le_bytes());
        n.extend(kind.to_le_bytes());
        n.extend(name);
        n.resize(n.len().div_ceil(4) * 4, 0);
        n.extend(desc);
        n.resize(n.len().div_ceil(4) * 4, 0);
        n
    }

    #[test]
    fn headers_say_which() {
        let gnu = note(b"GNU\0", 3, &[1; 20]);
        assert_eq!(image_of_bytes(&elf(&[(PT_NOTE, &gnu)])), Image::Static);
        assert_eq!(
            image_of_bytes(&elf(&[
                (PT_INTERP, b"/lib64/ld-linux-x86-64.so.2\0"),
                (PT_NOTE, &gnu)
            ])),
            Image::Dynamic
        );
        let mut notes = gnu.clone();
        notes.extend(note(b"Go\0\0", 4, b"abc/def"));
        assert_eq!(image_of_bytes(&elf(&[(PT_NOTE, &notes)])), Image::Go);
        assert_eq!(
            image_of_bytes(&elf(&[(PT_INTERP, b"/lib/ld.so\0"), (PT_NOTE, &notes)])),
            Image::Go
        );
        // A note that runs off the end is no note.
        assert_eq!(
            image_of_bytes(&elf(&[(PT_NOTE, &[9, 0, 0, 0, 200])])),
            Image::Static
        );
    }
}
