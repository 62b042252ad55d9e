//! sway's IPC: a session found by its socket, its outputs and their refresh, a window found by
//! its pid inside its borders.

use std::path::{Path, PathBuf};

/// An output of the compositor, as sway says it.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub name: String,
    /// Its mode's refresh rate, Hz (sway says mHz): a key's pixels wait for its next commit.
    pub refresh_hz: u32,
    pub scale: f64,
}

/// A window's place: its region of an output (the output's own coordinates), that output;
/// whether it floats, and whether the client's last picture has the region's size (sway's
/// layout changes wait for the client's next picture).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub region: Region,
    pub output: String,
    pub floating: bool,
    pub drawn: bool,
}

/// Where a running sway session's sockets are.
#[derive(Debug)]
pub struct SessionPaths {
    pub(super) socket: PathBuf,
    pub(super) runtime: PathBuf,
    pub(super) ipc: PathBuf,
}

/// The sockets of the running sway session whose display is `name` (a socket's name in
/// `XDG_RUNTIME_DIR`, or its path) — its IPC socket `SWAYSOCK`, or the only one in the runtime
/// directory — or the one line that says what is missing.
pub fn find_session(name: &Path) -> Result<SessionPaths, String> {
    let said = flushlab_core::units::printable(&name.to_string_lossy());
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let (socket, runtime) = match (name.components().count() > 1, runtime) {
        (true, runtime) => {
            let parent = name.parent().unwrap_or(Path::new("/")).to_path_buf();
            (name.to_path_buf(), runtime.unwrap_or(parent))
        }
        (false, Some(runtime)) => (runtime.join(name), runtime),
        (false, None) => {
            return Err(format!(
                "wrap --wayland-display {said}: XDG_RUNTIME_DIR is not set: give the display's socket by its path (as /run/user/1000/wayland-1)"
            ));
        }
    };
    let is_socket = std::fs::metadata(&socket)
        .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()));
    if !is_socket {
        return Err(format!(
            "wrap --wayland-display {said}: no Wayland display at {} (WAYLAND_DISPLAY in your session names it)",
            flushlab_core::units::printable(&socket.to_string_lossy())
        ));
    }
    let ipc = std::env::var_os("SWAYSOCK")
        .map(PathBuf::from)
        .or_else(|| only_sway_ipc(&runtime))
        .ok_or_else(|| {
            format!(
                "wrap --wayland-display {said}: wrap finds the terminal's window through sway's IPC, and finds none (SWAYSOCK is not set, and {} holds no single sway-ipc socket): sway only (Hyprland, river: not yet)",
                flushlab_core::units::printable(&runtime.to_string_lossy())
            )
        })?;
    Ok(SessionPaths {
        socket,
        runtime,
        ipc,
    })
}

/// The active outputs of sway's `get_outputs` answer.
pub(super) fn outputs_of(answer: &serde_json::Value) -> Vec<Output> {
    answer
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| o["active"] != false)
        .filter_map(|o| {
            let millihertz = o["current_mode"]["refresh"].as_u64()?;
            Some(Output {
                name: o["name"].as_str()?.to_owned(),
                refresh_hz: u32::try_from((millihertz + 500) / 1000).ok()?,
                scale: o["scale"].as_f64().unwrap_or(1.0),
            })
        })
        .collect()
}

/// The IPC socket in `runtime` when there is exactly one (`sway-ipc.UID.PID.sock`).
pub(super) fn only_sway_ipc(runtime: &Path) -> Option<PathBuf> {
    let found: Vec<PathBuf> = std::fs::read_dir(runtime)
        .ok()?
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            (name.starts_with("sway-ipc.") && name.ends_with(".sock")).then(|| runtime.join(name))
        })
        .collect();
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// The display's socket and sway's IPC socket, once both are there.
pub(super) fn served(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let socket = names
        .iter()
        .find(|n| n.starts_with("wayland-") && !n.ends_with(".lock"))?;
    let ipc = names
        .iter()
        .find(|n| n.starts_with("sway-ipc.") && n.ends_with(".sock"))?;
    Some((dir.join(socket), dir.join(ipc)))
}

/// sway's last words, printable, for a refusal.
pub(super) fn last_line(dir: &Path) -> String {
    let log = std::fs::read_to_string(dir.join("sway.log")).unwrap_or_default();
    let line = log.lines().rev().find(|l| !l.trim().is_empty());
    flushlab_core::units::printable(line.unwrap_or("it said nothing"))
}

/// A rectangle of the output, pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub x: i32,
    pub y: i32,
    pub width: i32,
    pub height: i32,
}

/// A rectangle of sway's tree (`rect`, `window_rect`).
pub(super) fn rect_of(rect: &serde_json::Value) -> Option<Region> {
    let field = |name: &str| i32::try_from(rect[name].as_i64()?).ok();
    Some(Region {
        x: field("x")?,
        y: field("y")?,
        width: field("width")?,
        height: field("height")?,
    })
}

/// The place of the window of `pid` in sway's tree, below `node` (on `output`, its name and
/// layout rectangle, once an output node was passed): the view's own rectangle (`window_rect`,
/// inside the container's borders and title) in the output's coordinates.
pub(super) fn find_window(
    node: &serde_json::Value,
    output: Option<(&str, Region)>,
    pid: i32,
) -> Option<Placed> {
    let output = match (node["type"].as_str(), node["name"].as_str()) {
        (Some("output"), Some(name)) => Some((name, rect_of(&node["rect"])?)),
        _ => output,
    };
    if node["pid"].as_i64() == Some(i64::from(pid)) {
        let (name, screen) = output?;
        let outer = rect_of(&node["rect"])?;
        let inner = rect_of(&node["window_rect"]).unwrap_or(Region {
            x: 0,
            y: 0,
            ..outer
        });
        // The client's last picture (`geometry`) is the size it was given: no change pending.
        let drawn = rect_of(&node["geometry"])
            .is_none_or(|g| (g.width, g.height) == (inner.width, inner.height));
        let region = Region {
            x: outer.x + inner.x - screen.x,
            y: outer.y + inner.y - screen.y,
            width: inner.width,
            height: inner.height,
        };
        return (region.width > 0 && region.height > 0).then(|| Placed {
            region,
            output: name.to_owned(),
            floating: node["type"] == "floating_con",
            drawn,
        });
    }
    ["nodes", "floating_nodes"]
        .iter()
        .filter_map(|k| node[*k].as_array())
        .flatten()
        .find_map(|child| find_window(child, output, pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_found_by_its_pid_inside_its_borders_on_its_output() {
        let rect = |x, y, width, height| serde_json::json!({"x": x, "y": y, "width": width, "height": height});
        let tree = serde_json::json!({
            "type": "root", "pid": null, "rect": rect(0, 0, 3200, 1080),
            "nodes": [
                {"type": "output", "name": "HEADLESS-1", "rect": rect(0, 0, 1280, 720), "nodes": []},
                {"type": "output", "name": "HEADLESS-2", "rect": rect(1280, 0, 1920, 1080), "nodes": [
                    {"type": "workspace", "nodes": [
                        {"type": "con", "pid": 8, "rect": rect(1280, 25, 1920, 1055),
                         "window_rect": rect(2, 0, 1916, 1053), "geometry": rect(0, 0, 964, 684)}
                    ], "floating_nodes": [
                        {"type": "floating_con", "pid": 7, "rect": rect(1756, 198, 968, 686),
                         "window_rect": rect(2, 0, 964, 684), "geometry": rect(0, 0, 964, 684)}
                    ]}
                ]}
            ]
        });
        assert_eq!(
            find_window(&tree, None, 7),
            Some(Placed {
                region: Region {
                    x: 478,
                    y: 198,
                    width: 964,
                    height: 684
                },
                output: "HEADLESS-2".into(),
                floating: true,
                drawn: true,
            })
        );
        // Tiled, and its picture not yet the size sway gave it.
        let tiled = find_window(&tree, None, 8).unwrap();
        assert!(!tiled.floating && !tiled.drawn, "{tiled:?}");
        assert_eq!(find_window(&tree, None, 9), None);
    }

    #[test]
    fn outputs_say_their_refresh_in_hertz() {
        let answer = serde_json::json!([
            {"name": "HEADLESS-1", "active": true, "scale": 1.0, "current_mode": {"refresh": 59_940}},
            {"name": "HEADLESS-2", "active": false, "scale": 2.0, "current_mode": {"refresh": 75_000}}
        ]);
        assert_eq!(
            outputs_of(&answer),
            vec![Output {
                name: "HEADLESS-1".into(),
                refresh_hz: 60,
                scale: 1.0
            }]
        );
    }
}
