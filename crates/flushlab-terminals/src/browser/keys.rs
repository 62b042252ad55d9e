//! A key of the script as the browser's own key events (DevTools `Input.dispatchKeyEvent`): a
//! key down that carries the text it types, then its key up. The page's keyboard handling and
//! xterm.js's encoding turn them into bytes, as for a person at the page.

use serde_json::{Value, json};

use crate::keyboard::ctrl_char;
use flushlab_core::keyscript::{Key, Named};

/// DevTools' modifier bits.
const ALT: u8 = 1;
const CTRL: u8 = 2;
const SHIFT: u8 = 8;

/// The events that type `key`, or the one line that says why it cannot be typed.
pub fn events(key: &Key) -> Result<Vec<Value>, String> {
    let (name, code, text, modifiers): (String, u32, Option<String>, u8) = match key {
        Key::Char(c) => (c.to_string(), char_code(*c), Some(c.to_string()), 0),
        Key::Named(named) => {
            let (name, code, text) = named_key(*named);
            let shift = if *named == Named::BackTab { SHIFT } else { 0 };
            (name.to_owned(), code, text.map(str::to_owned), shift)
        }
        Key::Ctrl(byte) => {
            let c = ctrl_char(*byte);
            (c.to_string(), char_code(c), None, CTRL)
        }
        Key::Alt(c) => (c.to_string(), char_code(*c), None, ALT),
        Key::Paste(_) => {
            return Err(format!(
                "{key}: a paste is no key to type: type its text instead"
            ));
        }
    };
    let mut down = json!({
        "type": if text.is_some() { "keyDown" } else { "rawKeyDown" },
        "key": name,
        "windowsVirtualKeyCode": code,
        "modifiers": modifiers,
    });
    if let Some(text) = text {
        down["text"] = text.clone().into();
        down["unmodifiedText"] = text.into();
    }
    let up = json!({
        "type": "keyUp",
        "key": name,
        "windowsVirtualKeyCode": code,
        "modifiers": modifiers,
    });
    Ok(vec![down, up])
}

/// A character's key code as a browser gives it: letters and digits their upper-case ASCII
/// code, others none.
fn char_code(c: char) -> u32 {
    match c {
        'a'..='z' | 'A'..='Z' | '0'..='9' => u32::from(c.to_ascii_uppercase()),
        ' ' => 32,
        _ => 0,
    }
}

/// A named key's `key`, its key code, and the text it types.
fn named_key(named: Named) -> (&'static str, u32, Option<&'static str>) {
    match named {
        Named::Up => ("ArrowUp", 38, None),
        Named::Down => ("ArrowDown", 40, None),
        Named::Right => ("ArrowRight", 39, None),
        Named::Left => ("ArrowLeft", 37, None),
        Named::Home => ("Home", 36, None),
        Named::End => ("End", 35, None),
        Named::PageUp => ("PageUp", 33, None),
        Named::PageDown => ("PageDown", 34, None),
        Named::Insert => ("Insert", 45, None),
        Named::Delete => ("Delete", 46, None),
        Named::Enter => ("Enter", 13, Some("\r")),
        Named::Tab | Named::BackTab => ("Tab", 9, None),
        Named::Backspace => ("Backspace", 8, None),
        Named::Esc => ("Escape", 27, None),
        Named::Space => (" ", 32, Some(" ")),
        Named::Lt => ("<", 0, Some("<")),
        Named::F(n) => (
            F_KEYS[usize::from(n.clamp(1, 12)) - 1],
            111 + u32::from(n),
            None,
        ),
    }
}

const F_KEYS: [&str; 12] = [
    "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_types_its_text_and_a_control_key_its_letter_with_ctrl() {
        let a = events(&Key::Char('a')).unwrap();
        assert_eq!(a[0]["text"], "a");
        assert_eq!(a[0]["windowsVirtualKeyCode"], 65);
        assert_eq!(a[1]["type"], "keyUp");
        let ctrl_c = events(&Key::Ctrl(3)).unwrap();
        assert_eq!(ctrl_c[0]["key"], "c");
        assert_eq!(ctrl_c[0]["modifiers"], 2);
        assert_eq!(ctrl_c[0]["type"], "rawKeyDown");
        assert!(events(&Key::Paste("x".into())).is_err());
    }
}
