//! Processes: becoming a subreaper, waiting for children without reaping them, reaping the
//! orphans a subreaper inherits.

use std::io;

/// Makes this process the reaper of its orphaned descendants (PR_SET_CHILD_SUBREAPER), so that
/// a program's whole tree stays its descendants.
pub fn become_subreaper() -> io::Result<()> {
    Ok(rustix::process::set_child_subreaper(Some(
        rustix::process::getpid(),
    ))?)
}

/// Whether child `pid` has exited, without reaping it: its counters in `/proc` stay readable
/// until it is. `false` for an id that names no child.
pub fn has_exited(pid: i32) -> bool {
    use rustix::process::{WaitId, WaitIdOptions, waitid};
    let Ok(pid) = super::signals::pid(pid) else {
        return false;
    };
    waitid(
        WaitId::Pid(pid),
        WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG,
    )
    .is_ok_and(|status| status.is_some())
}

/// Reaps every child of this process that has exited, without waiting for any.
pub fn reap_exited() {
    use rustix::process::{WaitOptions, wait};
    while let Ok(Some(_)) = wait(WaitOptions::NOHANG) {}
}
