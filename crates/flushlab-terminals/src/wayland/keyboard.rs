//! Keys typed through the virtual-keyboard protocol (as `wtype`): a keymap of the keysyms a
//! script needs, and each key a stroke with its modifiers.

use std::os::fd::OwnedFd;

use anyhow::Context;
use wayland_client::Connection;
use wayland_protocols_misc::zwp_virtual_keyboard_v1::client::zwp_virtual_keyboard_v1 as keyboard;

use crate::keyboard::{char_keysym, ctrl_char, named_keysym};
use flushlab_core::keyscript::{Key, Named};

/// Modifier masks of the virtual keyboard's keymap (its real modifiers).
pub(super) const SHIFT: u32 = 1;
pub(super) const CONTROL: u32 = 4;
pub(super) const ALT: u32 = 8;
/// `Tab`: Shift+Tab is this key with Shift held (a one-level key's `ISO_Left_Tab` reached foot
/// but not kitty, which reads the key and its modifiers).
pub(super) const TAB: u32 = 0xff09;

/// A key's modifiers and keysym, as the virtual keyboard types it.
pub(super) fn stroke_of(key: &Key) -> Result<(u32, u32), String> {
    Ok(match key {
        Key::Char(c) => (0, char_keysym(*c)),
        Key::Named(Named::BackTab) => (SHIFT, TAB),
        Key::Named(named) => (0, named_keysym(*named)),
        Key::Ctrl(byte) => (CONTROL, char_keysym(ctrl_char(*byte))),
        Key::Alt(c) => (ALT, char_keysym(*c)),
        Key::Paste(_) => {
            return Err(format!(
                "{key}: a paste is no key to type: type its text instead"
            ));
        }
    })
}

/// An xkb keymap with key code `i + 9` (the virtual keyboard's key `i + 1`) giving `syms[i]`,
/// keysyms written as numbers (libxkbcommon reads those as keysyms), NUL-terminated.
pub(super) fn keymap(syms: &[u32]) -> String {
    let mut codes = String::new();
    let mut symbols = String::new();
    for (i, sym) in syms.iter().enumerate() {
        codes += &format!("<K{}> = {};\n", i + 1, i + 9);
        symbols += &format!("key <K{}> {{[ 0x{sym:x} ]}};\n", i + 1);
    }
    format!(
        "xkb_keymap {{\n\
         xkb_keycodes \"flushlab\" {{\nminimum = 8;\nmaximum = {};\n{codes}}};\n\
         xkb_types \"flushlab\" {{ include \"complete\" }};\n\
         xkb_compat \"flushlab\" {{ include \"complete\" }};\n\
         xkb_symbols \"flushlab\" {{\n{symbols}}};\n\
         }};\n\0",
        syms.len() + 9
    )
}

/// A key as the virtual keyboard types it: the modifiers held, and its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stroke {
    pub(super) modifiers: u32,
    pub(super) code: u32,
}

/// The virtual keyboard, its keymap uploaded.
pub struct Keyboard {
    pub(super) conn: Connection,
    pub(super) typing: keyboard::ZwpVirtualKeyboardV1,
    pub(super) _keymap: OwnedFd,
}

impl Keyboard {
    /// Types one stroke: modifiers down, the key pressed and released, modifiers up, sent in
    /// one flush.
    pub fn type_stroke(&self, stroke: Stroke) -> anyhow::Result<()> {
        let ms =
            u32::try_from(flushlab_core::sys::monotonic_ns() / 1_000_000 % u64::from(u32::MAX))
                .unwrap_or_default();
        if stroke.modifiers != 0 {
            self.typing.modifiers(stroke.modifiers, 0, 0, 0);
        }
        self.typing.key(ms, stroke.code, 1);
        self.typing.key(ms, stroke.code, 0);
        if stroke.modifiers != 0 {
            self.typing.modifiers(0, 0, 0, 0);
        }
        self.conn
            .flush()
            .context("typing into the Wayland display")?;
        Ok(())
    }
}

impl Drop for Keyboard {
    fn drop(&mut self) {
        self.typing.destroy();
        let _ = self.conn.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keymap_gives_each_keysym_its_own_code() {
        let map = keymap(&[0x6a, 0xff0d]);
        assert!(
            map.contains("<K1> = 9;") && map.contains("<K2> = 10;"),
            "{map}"
        );
        assert!(map.contains("key <K1> {[ 0x6a ]};"), "{map}");
        assert!(map.contains("key <K2> {[ 0xff0d ]};"), "{map}");
        assert!(map.ends_with('\0'));
    }

    #[test]
    fn strokes_hold_their_modifiers() {
        assert_eq!(stroke_of(&Key::Char('j')), Ok((0, 0x6a)));
        assert_eq!(stroke_of(&Key::Ctrl(0x03)), Ok((CONTROL, 0x63)));
        assert_eq!(stroke_of(&Key::Alt('x')), Ok((ALT, 0x78)));
        assert_eq!(stroke_of(&Key::Named(Named::BackTab)), Ok((SHIFT, TAB)));
        assert!(stroke_of(&Key::Paste("x".into())).is_err());
    }
}
