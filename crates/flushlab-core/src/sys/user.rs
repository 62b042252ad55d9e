//! Who ran `sudo`, and becoming them: a measuring tool run as root for the kernel's sake
//! (`sudo flushlab wrap …`: eBPF needs it) runs the program it measures as the person who asked,
//! not as root, and drops its own privileges once it has what it needed them for.

use std::ffi::{CString, OsString};
use std::path::PathBuf;

/// The person who ran sudo: from `SUDO_UID` and `SUDO_GID`, their name and home from the
/// password database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invoker {
    pub uid: u32,
    pub gid: u32,
    pub name: String,
    pub home: PathBuf,
}

/// The person who ran sudo, when this process is root under sudo for someone else; `None`
/// otherwise (not root, no sudo, sudo for root itself, or variables that name nobody).
pub fn sudo_invoker() -> Option<Invoker> {
    if !rustix::process::geteuid().is_root() {
        return None;
    }
    let number = |name: &str| std::env::var(name).ok()?.parse::<u32>().ok();
    let (uid, gid) = (number("SUDO_UID")?, number("SUDO_GID")?);
    if uid == 0 {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd_entry(&passwd, uid).map(|(name, home)| Invoker {
        uid,
        gid,
        name,
        home,
    })
}

/// The name and home of `uid` in a passwd file's text (`name:x:uid:gid:gecos:home:shell`).
fn passwd_entry(passwd: &str, uid: u32) -> Option<(String, PathBuf)> {
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 7 && fields[2].parse() == Ok(uid))
            .then(|| (fields[0].to_owned(), PathBuf::from(fields[5])))
    })
}

impl Invoker {
    /// The variables a program run as them takes from the password database, not from root's.
    pub fn environment(&self) -> [(OsString, OsString); 3] {
        [
            ("HOME".into(), self.home.clone().into_os_string()),
            ("USER".into(), self.name.clone().into()),
            ("LOGNAME".into(), self.name.clone().into()),
        ]
    }

    /// util-linux's `setpriv` words that run a program as them, with their groups and no
    /// capability (before the program's own words).
    pub fn setpriv_words(&self) -> Vec<OsString> {
        [
            format!("--reuid={}", self.uid),
            format!("--regid={}", self.gid),
            "--init-groups".to_owned(),
            "--inh-caps=-all".to_owned(),
            "--".to_owned(),
        ]
        .into_iter()
        .map(OsString::from)
        .collect()
    }

    /// `check` run as them, in a thread of its own that takes their groups, group and user:
    /// what they may do, asked before root runs a whole measurement for them and then becomes
    /// them to write it. The process keeps its identity.
    pub fn as_them<T: Send>(&self, check: impl FnOnce() -> T + Send) -> std::io::Result<T> {
        use rustix::process::{Gid, Uid};
        let name = CString::new(self.name.clone()).map_err(std::io::Error::other)?;
        let groups: Vec<Gid> =
            nix::unistd::getgrouplist(&name, nix::unistd::Gid::from_raw(self.gid))?
                .into_iter()
                .map(|g| Gid::from_raw(g.as_raw()))
                .collect();
        let (uid, gid) = (Uid::from_raw(self.uid), Gid::from_raw(self.gid));
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    // Raw system calls: this thread alone changes (glibc's wrappers would change
                    // every thread of the process).
                    rustix::thread::set_thread_groups(&groups)?;
                    rustix::thread::set_thread_res_gid(gid, gid, gid)?;
                    rustix::thread::set_thread_res_uid(uid, uid, uid)?;
                    Ok(check())
                })
                .join()
                .map_err(|_| std::io::Error::other("a check as the invoking user panicked"))?
        })
    }

    /// This process becomes them, every thread: their groups, their group, their user (real,
    /// effective and saved: root cannot be taken back).
    pub fn become_them(&self) -> std::io::Result<()> {
        use nix::unistd::{Gid, Uid, initgroups, setresgid, setresuid};
        let name = CString::new(self.name.clone()).map_err(std::io::Error::other)?;
        let gid = Gid::from_raw(self.gid);
        initgroups(&name, gid)?;
        setresgid(gid, gid, gid)?;
        let uid = Uid::from_raw(self.uid);
        setresuid(uid, uid, uid)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passwd_line_gives_the_name_and_home_of_its_uid() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n\
                      broken line\n\
                      ann:x:1000:1000:Ann,,,:/home/ann:/bin/zsh\n";
        assert_eq!(
            passwd_entry(passwd, 1000),
            Some(("ann".to_owned(), PathBuf::from("/home/ann")))
        );
        assert_eq!(passwd_entry(passwd, 1001), None);
    }
}
