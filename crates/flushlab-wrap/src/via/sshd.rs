//! The ssh layer: Debian's sshd started by wrap in the link's far namespace with a
//! configuration, host key and authorized key of its own in the wire's scratch directory, and
//! the ssh client's command line with a configuration of its own. Nothing in `~/.ssh`,
//! `/etc/ssh` or the user's agent is read or changed.
//!
//! sshd runs as root in a pid and mount namespace of its own: its `/run` is an empty tmpfs (its
//! privilege-separation directory made there, no utmp to write) and wtmp, btmp and lastlog are
//! /dev/null, so a login leaves no trace on the machine; when sshd ends, the kernel ends every
//! session and CMD with it; and sshd ends with wrap (`setpriv --pdeathsig`). The far user is
//! the person who ran wrap (under sudo, the one who ran sudo), as sshd's own login makes them.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::link::Link;

/// How long sshd may take to listen on no link; a link adds its round trips (a TCP connect
/// is one), retried under loss: `LinkSettings::patience`.
const LISTENING: Duration = Duration::from_secs(10);
/// How long one connect may take on no link.
const CONNECT: Duration = Duration::from_millis(200);

/// sshd, listening at the link's far end.
pub struct Sshd {
    child: Child,
    /// The client's configuration file.
    client_config: PathBuf,
}

impl Sshd {
    /// sshd for `user`, its authorized key in `far` (theirs, in the wire's `scratch`).
    pub fn start(
        scratch: &Path,
        (far, user): (&Path, &super::far_user::FarUser),
        link: &Link,
    ) -> std::io::Result<Sshd> {
        let host_key = scratch.join("host_key");
        let client_key = scratch.join("client_key");
        for key in [&host_key, &client_key] {
            keygen(key)?;
        }
        // sshd reads a user's authorized keys as that user.
        let authorized = far.join("authorized_keys");
        std::fs::copy(client_key.with_extension("pub"), &authorized)?;
        user.owns(&authorized)?;
        let user = &user.name;
        let server_config = scratch.join("sshd_config");
        write_private(
            &server_config,
            &server_text(&host_key, &authorized, (user, link.far_address())),
        )?;
        let host_public = std::fs::read_to_string(host_key.with_extension("pub"))?;
        let known_hosts = scratch.join("known_hosts");
        let far_address = link.far_address();
        write_private(
            &known_hosts,
            &format!("{far_address} {}", host_public.trim()),
        )?;
        let client_config = scratch.join("ssh_config");
        write_private(
            &client_config,
            &client_text(&client_key, &known_hosts, (user, link.far_address())),
        )?;
        let shadow = unlocked_shadow(scratch, user)?;
        let log = std::fs::File::create(scratch.join("sshd.log"))?;
        let child = link.in_far(|| {
            Command::new("setpriv")
                .args(["--pdeathsig", "KILL", "--", "unshare"])
                .args(["--pid", "--fork", "--kill-child", "--mount"])
                .args([
                    "--propagation",
                    "private",
                    "--",
                    "sh",
                    "-c",
                    &private_run(shadow.as_deref()),
                    "sh",
                ])
                .arg("/usr/sbin/sshd")
                .args(["-D", "-e", "-f"])
                .arg(&server_config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
        })??;
        let mut sshd = Sshd {
            child,
            client_config,
        };
        sshd.wait_listening(link, &scratch.join("sshd.log"))?;
        Ok(sshd)
    }

    /// The process that runs sshd (its pid namespace's parent).
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The ssh client's program and words for a far command (each word quoted for the far
    /// shell, which sshd hands the command to as one line), with a far pty (`tty`) or none.
    pub fn client_command(
        &self,
        far: &[OsString],
        tty: bool,
    ) -> std::io::Result<(PathBuf, Vec<OsString>)> {
        let ssh = flushlab_core::files::find_program("ssh".as_ref())
            .ok_or_else(|| std::io::Error::other("ssh is not installed (openssh-client)"))?;
        let mut words: Vec<OsString> = vec![
            "-F".into(),
            self.client_config.clone().into_os_string(),
            "-e".into(),
            "none".into(),
            if tty { "-tt" } else { "-T" }.into(),
            "far".into(),
            "--".into(),
        ];
        words.extend(far.iter().map(|w| shell_word(w)));
        Ok((ssh, words))
    }

    /// Until sshd accepts a connection at the far end (from the near end, through the relay),
    /// or it ended, said with its own words.
    fn wait_listening(&mut self, link: &Link, log: &Path) -> std::io::Result<()> {
        let started = Instant::now();
        let settings = link.settings();
        let (within, connect) = (
            settings.patience(LISTENING, 3),
            settings.patience(CONNECT, 1),
        );
        let address: std::net::SocketAddr = format!("{}:22", link.far_address())
            .parse()
            .map_err(std::io::Error::other)?;
        loop {
            if let Some(status) = self.child.try_wait()? {
                let said = std::fs::read_to_string(log).unwrap_or_default();
                return Err(std::io::Error::other(format!(
                    "wrap --via ssh: sshd ended ({status}): {}",
                    flushlab_core::units::one_line(said.trim())
                )));
            }
            let reached =
                link.in_near(|| std::net::TcpStream::connect_timeout(&address, connect))?;
            if reached.is_ok() {
                return Ok(());
            }
            if started.elapsed() > within {
                return Err(std::io::Error::other(format!(
                    "wrap --via ssh: sshd did not accept a connection within {:.1} s at RTT {}, \
                     loss {}",
                    within.as_secs_f64(),
                    flushlab_core::units::milliseconds(settings.rtt.as_secs_f64() * 1e3),
                    flushlab_core::units::plain(settings.loss)
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // setpriv became unshare, which ends sshd (its child, pid 1 of its namespace) as it goes.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The far end's private mounts, then sshd (`"$@"`): an empty /run (sshd's privilege
/// separation directory in it, and no utmp), no wtmp, btmp or lastlog to write, and where the
/// far user's password is locked, `shadow` in /etc/shadow's place.
fn private_run(shadow: Option<&Path>) -> String {
    let shadow = shadow.map_or(String::new(), |path| {
        format!(
            "mount --bind {} /etc/shadow && ",
            shell_word(path.as_os_str()).to_string_lossy()
        )
    });
    format!(
        "mount -t tmpfs -o mode=755 flushlab-via /run && mkdir -m 755 /run/sshd && {shadow}{}",
        super::far_user::NO_LOGIN_RECORDS
    )
}

/// Without PAM, sshd refuses an account whose password is locked (its shadow entry starts with
/// `!`) before it reads its authorized keys: every sudoer with no password of their own is such
/// a user. Where the far user's is, a copy of /etc/shadow in `scratch` (0600, wrap's) with their
/// password `*` (no password, not locked) for sshd's mount namespace alone: nothing outside it
/// changes, and no password is ever asked (`PasswordAuthentication no`). `None` where the
/// password is not locked, or /etc/shadow cannot be read (sshd reads it as root: then neither
/// can it).
fn unlocked_shadow(scratch: &Path, user: &str) -> std::io::Result<Option<PathBuf>> {
    let Ok(text) = std::fs::read_to_string("/etc/shadow") else {
        return Ok(None);
    };
    let Some(unlocked) = unlocked_entry(&text, user) else {
        return Ok(None);
    };
    let path = scratch.join("shadow");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    file.write_all(unlocked.as_bytes())?;
    Ok(Some(path))
}

/// `text` (a shadow file) with `user`'s locked password made `*`; `None` where it is not locked.
fn unlocked_entry(text: &str, user: &str) -> Option<String> {
    let mut locked = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let mut fields: Vec<&str> = line.split(':').collect();
            if fields.first() == Some(&user) && fields.get(1).is_some_and(|p| p.starts_with('!')) {
                locked = true;
                fields[1] = "*";
            }
            fields.join(":")
        })
        .collect();
    locked.then(|| lines.join("\n") + "\n")
}

fn keygen(path: &Path) -> std::io::Result<()> {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "flushlab-via", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        return Err(std::io::Error::other(format!(
            "wrap --via ssh: ssh-keygen failed ({status})"
        )));
    }
    Ok(())
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")
}

/// sshd's configuration: the far namespace's address, this key, this user, nothing else.
fn server_text(host_key: &Path, authorized: &Path, (user, far_address): (&str, &str)) -> String {
    [
        format!("ListenAddress {far_address}"),
        "Port 22".to_owned(),
        format!("HostKey {}", host_key.display()),
        "PidFile none".to_owned(),
        format!("AuthorizedKeysFile {}", authorized.display()),
        format!("AllowUsers {user}"),
        "PermitRootLogin prohibit-password".to_owned(),
        "PubkeyAuthentication yes".to_owned(),
        "PasswordAuthentication no".to_owned(),
        "KbdInteractiveAuthentication no".to_owned(),
        "UsePAM no".to_owned(),
        "DisableForwarding yes".to_owned(),
        "PermitUserRC no".to_owned(),
        "PermitUserEnvironment no".to_owned(),
        "PrintMotd no".to_owned(),
        "PrintLastLog no".to_owned(),
        "Banner none".to_owned(),
        "UseDNS no".to_owned(),
        // Its 120 s default would cut a handshake of ten round trips on a long link; wrap
        // bounds the wait itself, by the link (`Wire::waits`), and no one else reaches sshd.
        "LoginGraceTime 0".to_owned(),
        // The scratch directory is 0700 and wrap's, but it lives under /tmp (1777), which
        // StrictModes' walk up from the key file refuses; no one else can reach this sshd.
        "StrictModes no".to_owned(),
        "LogLevel ERROR".to_owned(),
    ]
    .join("\n")
}

/// The client's configuration: the one host `far`, this key and these known hosts alone.
fn client_text(key: &Path, known_hosts: &Path, (user, far_address): (&str, &str)) -> String {
    [
        "Host far".to_owned(),
        format!("  HostName {far_address}"),
        "  Port 22".to_owned(),
        format!("  User {user}"),
        format!("  IdentityFile {}", key.display()),
        "  IdentitiesOnly yes".to_owned(),
        "  IdentityAgent none".to_owned(),
        format!("  UserKnownHostsFile {}", known_hosts.display()),
        "  GlobalKnownHostsFile /dev/null".to_owned(),
        "  StrictHostKeyChecking yes".to_owned(),
        "  UpdateHostKeys no".to_owned(),
        "  BatchMode yes".to_owned(),
        "  ControlMaster no".to_owned(),
        "  ControlPath none".to_owned(),
        "  ClearAllForwardings yes".to_owned(),
        "  ForwardAgent no".to_owned(),
        "  ForwardX11 no".to_owned(),
        "  LogLevel ERROR".to_owned(),
    ]
    .join("\n")
}

/// One word for a POSIX shell: sshd hands the far command to the far user's shell as one line.
pub(super) fn shell_word(word: &std::ffi::OsStr) -> OsString {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let bytes = word.as_bytes();
    let plain = !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-=:,+@%".contains(b));
    if plain {
        return word.to_owned();
    }
    let mut quoted = vec![b'\''];
    for &b in bytes {
        if b == b'\'' {
            quoted.extend_from_slice(b"'\\''");
        } else {
            quoted.push(b);
        }
    }
    quoted.push(b'\'');
    OsString::from_vec(quoted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_locked_password_is_unlocked_and_only_the_far_users() {
        let shadow = "root:*:19000:0:99999:7:::\n\
                      dev:!:19000:0:99999:7:::\n\
                      old:!$6$salt$hash:19000:0:99999:7:::\n\
                      devil:!:19000:0:99999:7:::\n";
        let unlocked = unlocked_entry(shadow, "dev").unwrap();
        assert!(
            unlocked.contains("\ndev:*:19000:0:99999:7:::\n"),
            "{unlocked}"
        );
        assert!(unlocked.contains("\ndevil:!:"), "{unlocked}");
        assert!(unlocked.contains("\nold:!$6$salt$hash:"), "{unlocked}");
        assert_eq!(unlocked.lines().count(), 4);
        assert_eq!(unlocked_entry(shadow, "root"), None);
        assert_eq!(unlocked_entry(shadow, "nobody"), None);
        assert!(
            unlocked_entry(shadow, "old")
                .unwrap()
                .contains("\nold:*:19000")
        );
    }

    #[test]
    fn shell_words_survive_a_shell() {
        for word in ["plain", "a b", "it's", "$(rm -rf /)", "", "x\ny", "'\\'"] {
            let quoted = shell_word(word.as_ref());
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", quoted.to_string_lossy()))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), word, "{quoted:?}");
        }
    }
}
