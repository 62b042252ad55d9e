//! The launch table's tests: options, sizes and commands where each terminal takes them.

use super::*;

#[test]
fn a_terminal_option_is_key_equals_value_and_nothing_else() {
    let o = TerminalOption::parse("tweak.delayed-render-lower=0").unwrap();
    assert_eq!(
        (o.key.as_str(), o.value.as_str()),
        ("tweak.delayed-render-lower", "0")
    );
    assert_eq!(TerminalOption::parse("a=b=c").unwrap().value, "b=c");
    for bad in ["", "=0", "no-equals", "a b=1", "key=\x1b[31m", "k*=1"] {
        let e = TerminalOption::parse(bad).unwrap_err();
        assert!(!e.contains('\n') && !e.contains('\x1b'), "{bad:?}: {e}");
    }
    assert!(TerminalOption::parse(&format!("k={}", "v".repeat(201))).is_err());
}

#[test]
fn options_come_after_the_terminals_own_and_before_its_command() {
    let command: Vec<OsString> = vec!["/bin/cat".into()];
    let options = [TerminalOption::parse("repaint_delay=0").unwrap()];
    for terminal in launched().filter(|t| t.takes_options()) {
        let args = terminal.args((80, 24), &command, Some("flushlab-1"), &options);
        let given = terminal.option_args(&options[0]).unwrap();
        let at = args
            .windows(2)
            .position(|w| w == given)
            .unwrap_or_else(|| panic!("{terminal:?}: {args:?}"));
        let command_at = args.len() - command.len();
        assert!(
            args[at + 2..command_at]
                .iter()
                .all(|a| a == "-e" || a == "--"),
            "{terminal:?}: {args:?}"
        );
        assert!(at > 3, "after its own: {terminal:?}: {args:?}");
    }
    assert_eq!(
        Terminal::Xterm
            .option_args(&TerminalOption::parse("cursorBlink=false").unwrap())
            .unwrap()[1],
        "XTerm*cursorBlink: false"
    );
}

#[test]
fn every_terminal_runs_the_command_last_and_is_told_its_size() {
    let command: Vec<OsString> = vec!["/bin/flushlab".into(), "--duration".into(), "1".into()];
    for terminal in launched() {
        let args = terminal.args((80, 24), &command, None, &[]);
        assert!(args.ends_with(&command), "{terminal:?}");
        if matches!(
            terminal,
            Terminal::Foot | Terminal::Kitty | Terminal::Alacritty
        ) {
            // The app id among the terminal's own options, before its command.
            let named = terminal.args((80, 24), &command, Some("flushlab-1"), &[]);
            assert!(named.ends_with(&command), "{terminal:?}");
            let at = named
                .iter()
                .position(|a| a.to_string_lossy().ends_with("=flushlab-1"))
                .unwrap();
            let command_at = named.len() - command.len();
            assert!(
                named[at + 1..command_at]
                    .iter()
                    .all(|a| a == "-e" || a == "--"),
                "{terminal:?}: {named:?}"
            );
        }
        let text = args
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            text.contains("80") && text.contains("24"),
            "{terminal:?}: {text}"
        );
    }
}

/// The terminals started as processes of their own (xterm.js runs in a page).
fn launched() -> impl Iterator<Item = Terminal> {
    Terminal::ALL.into_iter().filter(|t| t.is_launched())
}
