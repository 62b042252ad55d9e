//! Tests of `wrap_report.rs`.

use super::*;

#[test]
fn the_last_line_is_text_without_escapes() {
    assert_eq!(
        last_line(b"\x1b[?1049lls: cannot access 'x': No such file\r\n\x1b]0;t\x07"),
        Some("ls: cannot access 'x': No such file".to_owned())
    );
    assert_eq!(last_line(b"\x1b[H\x1b[2J"), None);
    assert_eq!(
        last_line(b"bad\x07bell\n"),
        Some("bad\\u{7}bell".to_owned())
    );
}

#[test]
fn write_scope_allows_the_ptys_carriage_returns_only() {
    let io = |bytes| {
        Some(IoCounters {
            write_calls: 10,
            bytes,
        })
    };
    // `yes`: 2 bytes a line written, 3 received.
    assert_eq!(
        WriteScope::of(io(20_000), 30_000, 10_000),
        WriteScope::Terminal
    );
    assert_eq!(WriteScope::of(io(30_000), 30_000, 0), WriteScope::Terminal);
    // `seq | cat`: twice what the terminal got.
    assert!(matches!(
        WriteScope::of(io(60_000), 30_000, 10_000),
        WriteScope::MoreThanTerminal { ratio } if (ratio - 2.0).abs() < 1e-9
    ));
    assert!(matches!(
        WriteScope::of(io(1_000), 30_000, 0),
        WriteScope::LessThanTerminal { .. }
    ));
    assert_eq!(WriteScope::of(None, 30_000, 0), WriteScope::Unavailable);
}
