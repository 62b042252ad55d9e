//! Who CMD runs as at the far end, and how a layer leaves no trace of their login.

use std::path::Path;

/// A shell's words, in a mount namespace of the layer's own, that leave no login record on the
/// machine (sshd's login, tmux's `utempter` for each pane), then run `"$@"`: utmp, wtmp, btmp
/// and lastlog, where they exist, are /dev/null there.
pub const NO_LOGIN_RECORDS: &str = "for f in /run/utmp /var/log/wtmp /var/log/btmp /var/log/lastlog; \
do [ -e \"$f\" ] && { mount --bind /dev/null \"$f\" || exit 1; }; done; exec \"$@\"";

/// Who CMD runs as at the far end: the person who ran wrap (under sudo, the one who ran sudo).
#[derive(Clone, Debug)]
pub struct FarUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

impl FarUser {
    pub fn of_invoker() -> FarUser {
        match flushlab_core::sys::user::sudo_invoker() {
            Some(invoker) => FarUser {
                name: invoker.name,
                uid: invoker.uid,
                gid: invoker.gid,
            },
            None => FarUser {
                name: "root".to_owned(),
                uid: 0,
                gid: 0,
            },
        }
    }

    pub fn owns(&self, path: &Path) -> std::io::Result<()> {
        rustix::fs::chown(
            path,
            Some(rustix::fs::Uid::from_raw(self.uid)),
            Some(rustix::fs::Gid::from_raw(self.gid)),
        )?;
        Ok(())
    }
}
