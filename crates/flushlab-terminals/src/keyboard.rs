//! Typing into a terminal's window as a person does: each key of a script pressed and released
//! through the X server's XTEST extension, so that the terminal receives real key events and
//! encodes them itself (its cursor-key mode, its Alt, its Backspace), as it would for a person.
//!
//! Keys are turned into key codes once, before anything is typed: a key the X keyboard has no
//! code for is refused up front, naming it, never skipped mid-run.

use anyhow::{Context, bail};
use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::xproto::{ConnectionExt as _, InputFocus, Keycode, Window};
use x11rb::protocol::xtest::{self, ConnectionExt as _};
use x11rb::rust_connection::RustConnection;

use flushlab_core::keyscript::{Key, Named};

/// X keysyms of the keys flushlab types (X11/keysymdef.h).
mod keysym {
    pub const SHIFT_L: u32 = 0xffe1;
    pub const CONTROL_L: u32 = 0xffe3;
    pub const ALT_L: u32 = 0xffe9;
    pub const ISO_LEFT_TAB: u32 = 0xfe20;
}

/// One key as the X keyboard types it: the modifiers held, then the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stroke {
    pub modifiers: Vec<Keycode>,
    pub code: Keycode,
}

/// A connection that types, and the X keyboard's map of keysyms to key codes.
pub struct Keyboard {
    conn: RustConnection,
    root: Window,
    /// Each keysym with the first key code that gives it, and whether Shift is needed for it.
    codes: std::collections::HashMap<u32, (Keycode, bool)>,
}

impl Keyboard {
    /// Connects to `display` and reads its keyboard map; without XTEST, one line that says so.
    pub fn connect(display: &str) -> anyhow::Result<Keyboard> {
        let (conn, screen) = RustConnection::connect(Some(display))
            .with_context(|| format!("connecting to the X display {display}"))?;
        if conn
            .extension_information(xtest::X11_EXTENSION_NAME)?
            .is_none()
        {
            bail!(
                "the X server on {display} has no XTEST extension, which types the keys (Xvfb has it; on a desktop, Xorg loads it by default)"
            );
        }
        conn.xtest_get_version(2, 2)?.reply()?;
        let root = conn.setup().roots[screen].root;
        let (min, max) = (conn.setup().min_keycode, conn.setup().max_keycode);
        let map = conn.get_keyboard_mapping(min, max - min + 1)?.reply()?;
        let per = usize::from(map.keysyms_per_keycode).max(1);
        let mut codes = std::collections::HashMap::new();
        // Unshifted columns first, so a keysym on both takes the plain one.
        for column in [0usize, 1] {
            for (i, syms) in map.keysyms.chunks(per).enumerate() {
                if let Some(&sym) = syms.get(column).filter(|&&s| s != 0) {
                    let code = min + u8::try_from(i).unwrap_or(u8::MAX - min);
                    codes.entry(sym).or_insert((code, column == 1));
                }
            }
        }
        Ok(Keyboard { conn, root, codes })
    }

    /// Sends the keys to `window`: the pointer in its middle and the input focus on it (with
    /// no window manager, nothing else would give it the keyboard).
    pub fn focus(&self, window: Window) -> anyhow::Result<()> {
        let geometry = self.conn.get_geometry(window)?.reply()?;
        let middle = |length: u16| i16::try_from(length / 2).unwrap_or(i16::MAX);
        self.conn.warp_pointer(
            x11rb::NONE,
            window,
            0,
            0,
            0,
            0,
            middle(geometry.width),
            middle(geometry.height),
        )?;
        self.conn
            .set_input_focus(InputFocus::PARENT, window, x11rb::CURRENT_TIME)?
            .check()?;
        Ok(())
    }

    /// The stroke that types `key`, or why it cannot be typed here.
    pub fn stroke(&self, key: &Key) -> Result<Stroke, String> {
        let modifier = |sym: u32, name: &str| {
            self.codes
                .get(&sym)
                .map(|&(code, _)| code)
                .ok_or_else(|| format!("the X keyboard has no {name} key"))
        };
        let plain = |sym: u32, shown: &str| -> Result<Stroke, String> {
            let &(code, shift) = self
                .codes
                .get(&sym)
                .ok_or_else(|| format!("{shown}: the X keyboard has no key for it"))?;
            let modifiers = if shift {
                vec![modifier(keysym::SHIFT_L, "Shift")?]
            } else {
                Vec::new()
            };
            Ok(Stroke { modifiers, code })
        };
        let with = |sym: u32, name: &str, mut stroke: Stroke| -> Result<Stroke, String> {
            stroke.modifiers.insert(0, modifier(sym, name)?);
            Ok(stroke)
        };
        let shown = key.to_string();
        match key {
            Key::Char(c) => plain(char_keysym(*c), &shown),
            Key::Named(Named::BackTab) => plain(keysym::ISO_LEFT_TAB, &shown).or_else(|_| {
                with(
                    keysym::SHIFT_L,
                    "Shift",
                    plain(named_keysym(Named::Tab), &shown)?,
                )
            }),
            Key::Named(named) => plain(named_keysym(*named), &shown),
            Key::Ctrl(byte) => with(
                keysym::CONTROL_L,
                "Control",
                plain(char_keysym(ctrl_char(*byte)), &shown)?,
            ),
            Key::Alt(c) => with(keysym::ALT_L, "Alt", plain(char_keysym(*c), &shown)?),
            Key::Paste(_) => Err(format!(
                "{shown}: a paste is no key to type: type its text instead"
            )),
        }
    }

    /// Types one stroke: modifiers down, the key down and up, modifiers up, all in one flush.
    pub fn type_stroke(&self, stroke: &Stroke) -> anyhow::Result<()> {
        let event = |kind: u8, code: Keycode| {
            self.conn
                .xtest_fake_input(kind, code, x11rb::CURRENT_TIME, self.root, 0, 0, 0)
        };
        for &m in &stroke.modifiers {
            event(x11rb::protocol::xproto::KEY_PRESS_EVENT, m)?;
        }
        event(x11rb::protocol::xproto::KEY_PRESS_EVENT, stroke.code)?;
        event(x11rb::protocol::xproto::KEY_RELEASE_EVENT, stroke.code)?;
        for &m in stroke.modifiers.iter().rev() {
            event(x11rb::protocol::xproto::KEY_RELEASE_EVENT, m)?;
        }
        self.conn.flush()?;
        Ok(())
    }

    /// Waits until the X server has handled everything sent so far (one round trip).
    pub fn sync(&self) -> anyhow::Result<()> {
        self.conn.get_input_focus()?.reply()?;
        Ok(())
    }
}

/// The character a control byte is typed with (Ctrl held).
pub(crate) fn ctrl_char(byte: u8) -> char {
    match byte {
        0 => ' ',
        0x01..=0x1a => char::from(b'a' + byte - 1),
        0x7f => '?',
        b => char::from(b | 0x40),
    }
}

/// A character's keysym: Latin-1 is its code, the rest Unicode's (keysymdef.h's rule).
pub(crate) fn char_keysym(c: char) -> u32 {
    match u32::from(c) {
        code @ (0x20..=0x7e | 0xa0..=0xff) => code,
        code => 0x0100_0000 | code,
    }
}

pub(crate) fn named_keysym(named: Named) -> u32 {
    match named {
        Named::Up => 0xff52,
        Named::Down => 0xff54,
        Named::Right => 0xff53,
        Named::Left => 0xff51,
        Named::Home => 0xff50,
        Named::End => 0xff57,
        Named::PageUp => 0xff55,
        Named::PageDown => 0xff56,
        Named::Insert => 0xff63,
        Named::Delete => 0xffff,
        Named::Enter => 0xff0d,
        Named::Tab => 0xff09,
        Named::BackTab => keysym::ISO_LEFT_TAB,
        Named::Backspace => 0xff08,
        Named::Esc => 0xff1b,
        Named::Space => 0x20,
        Named::Lt => 0x3c,
        Named::F(n) => 0xffbe + u32::from(n.max(1)) - 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_are_typed_with_their_letter() {
        assert_eq!(ctrl_char(0x03), 'c');
        assert_eq!(ctrl_char(0x1b), '[');
        assert_eq!(ctrl_char(0x1f), '_');
        assert_eq!(ctrl_char(0), ' ');
        assert_eq!(ctrl_char(0x7f), '?');
    }

    #[test]
    fn keysyms_follow_keysymdef() {
        assert_eq!(char_keysym('j'), 0x6a);
        assert_eq!(char_keysym('é'), 0xe9);
        assert_eq!(char_keysym('€'), 0x0100_20ac);
        assert_eq!(named_keysym(Named::F(1)), 0xffbe);
        assert_eq!(named_keysym(Named::F(12)), 0xffc9);
    }
}
