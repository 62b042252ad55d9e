//! The mosh layer: Debian's mosh-server started through the wire's ssh (as mosh's own wrapper
//! does, but without it: the wrapper connects straight to the server's address and would skip
//! the link), listening on the far namespace's address, and mosh-client at the near end pointed
//! at it through the relay, under a UTF-8 locale at both ends (mosh refuses any other). The
//! session key goes to the client in its environment, never on a command line.
//!
//! mosh-server runs CMD in a pty of its own and sends the client what changed on its screen, at
//! most 50 times a second after at least 8 ms of quiet: frames are matched to mosh-client's
//! redraws by time, and several far frames may come in one redraw.

use std::ffi::OsString;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::link::Link;
use super::sshd::Sshd;

/// The UDP port mosh-server listens on, in the far namespace (wrap's own: nothing else is there).
const PORT: &str = "60001";

/// How long mosh-server may take to say where it listens on no link; the link adds the round
/// trips of the ssh connection that starts it (`LinkSettings::patience`).
const STARTING: Duration = Duration::from_secs(15);

/// The near end's words and environment once mosh-server runs `far` (the command inside it).
pub struct MoshClient {
    pub words: Vec<OsString>,
    pub environment: Vec<(OsString, OsString)>,
}

/// Starts mosh-server through ssh on the far side, running `far`, and says how mosh-client
/// reaches it.
pub fn start(sshd: &Sshd, link: &Link, far: &[OsString]) -> std::io::Result<MoshClient> {
    let mut server: Vec<OsString> = ["exec", "env", "LC_ALL=C.UTF-8", "mosh-server", "new"]
        .into_iter()
        .chain(["-i", link.far_address(), "-p", PORT, "--"])
        .map(OsString::from)
        .collect();
    server.extend(far.iter().cloned());
    let (ssh, words) = sshd.client_command(&server, false)?;
    // It ends with wrap (a SIGKILL of wrap takes the relay with it, and an ssh left waiting
    // on a link that is gone would wait for TCP's timeout).
    let mut child = link.in_near(|| {
        Command::new("setpriv")
            .args(["--pdeathsig", "KILL", "--"])
            .arg(ssh)
            .args(words)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
    })??;
    // mosh-server says where it listens, then detaches: ssh ends once it has.
    let started = Instant::now();
    let within = link.settings().patience(STARTING, 10);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other(format!(
                "wrap --via mosh: the ssh connection that starts mosh-server did not finish \
                 within {:.1} s at RTT {}, loss {}",
                within.as_secs_f64(),
                flushlab_core::units::milliseconds(link.settings().rtt.as_secs_f64() * 1e3),
                flushlab_core::units::plain(link.settings().loss)
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut said = String::new();
    child
        .stdout
        .take()
        .map(|mut out| out.read_to_string(&mut said));
    let mut complaint = String::new();
    child
        .stderr
        .take()
        .map(|mut err| err.read_to_string(&mut complaint));
    let key = said
        .lines()
        .find_map(|line| line.trim().strip_prefix("MOSH CONNECT "))
        .and_then(|rest| {
            let mut words = rest.split_whitespace();
            (words.next() == Some(PORT)).then(|| words.next()).flatten()
        })
        .ok_or_else(|| {
            std::io::Error::other(format!(
                "wrap --via mosh: mosh-server did not start ({status}): {}",
                flushlab_core::units::one_line(complaint.trim())
            ))
        })?;
    Ok(MoshClient {
        words: ["mosh-client", link.far_address(), PORT]
            .map(OsString::from)
            .to_vec(),
        environment: vec![
            ("MOSH_KEY".into(), key.into()),
            ("LC_ALL".into(), "C.UTF-8".into()),
        ],
    })
}
