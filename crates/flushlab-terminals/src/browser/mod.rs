//! A terminal drawn by a web page: xterm.js (VS Code's terminal, ttyd's, Jupyter's) in
//! headless Chromium. [`host`] is the terminal `wrap --terminal xtermjs` runs CMD in; the page
//! ([`page`], its packages from [`package`]) talks to the pty over a WebSocket of flushlab's
//! own; Chromium is driven over the DevTools pipe ([`devtools`]), keys go in as its own key
//! events ([`keys`]), and its trace says when each frame was drawn. wrap and the host speak
//! [`protocol`].

pub mod devtools;
pub mod host;
pub mod keys;
pub mod package;
pub mod page;
pub mod protocol;

pub use crate::emulators::Renderer;

/// Chromium here: Debian's headless shell, else its full browser (headless); or the one line
/// that names the package.
pub fn chromium() -> anyhow::Result<std::path::PathBuf> {
    flushlab_core::files::find_program("chromium-headless-shell".as_ref())
        .or_else(|| flushlab_core::files::find_program("chromium".as_ref()))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "chromium is not installed (Debian package chromium-headless-shell: apt-get install chromium-headless-shell)"
            )
        })
}

/// Whether a browser terminal can run here: Chromium, and xterm.js's packages or npm to get
/// them; else the one line that names the Debian package.
pub fn can_run() -> anyhow::Result<()> {
    chromium()?;
    package::check()
}
