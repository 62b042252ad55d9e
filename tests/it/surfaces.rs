//! The surfaces added since round three, given hostile values (issue 33): the lesson's flags,
//! the man page and completions, the time split's switch, wrap's new flags. Each gets one line
//! naming the value and the valid choices, exit 2, and no byte of the value reaches the
//! terminal unescaped.

use crate::common;
use std::process::{Command, Stdio};

#[test]
fn hostile_values_on_the_new_surfaces_are_one_escaped_line_and_exit_2() {
    let osc = "\x1b]0;pwned\x07";
    let cases: Vec<Vec<String>> = vec![
        vec!["lesson".into(), "--step".into(), "0".into()],
        vec!["lesson".into(), "--step".into(), format!("3{osc}")],
        vec!["man".into(), format!("bench{osc}")],
        vec!["completions".into(), format!("zsh{osc}")],
        vec!["--no-time-split=maybe".into()],
        vec![
            "wrap".into(),
            "--try".into(),
            format!("frame{osc}"),
            "--".into(),
            "true".into(),
        ],
        vec![
            "wrap".into(),
            "--compare".into(),
            "flicker".into(),
            "--".into(),
            "true".into(),
        ],
        vec![
            "wrap".into(),
            "--rounds".into(),
            "0".into(),
            "--".into(),
            "true".into(),
        ],
        vec![
            "wrap".into(),
            "--try".into(),
            "frame".into(),
            "--no-observer".into(),
            "true".into(),
        ],
        // The backends (issue 35): an unknown one, as a flag of each command that takes it.
        vec![
            format!("--backend=lean{osc}"),
            "--duration".into(),
            "0.1".into(),
        ],
        vec![
            "bench".into(),
            "--backend".into(),
            format!("crossterm,{osc}"),
        ],
        vec!["tour".into(), "--backend".into(), "crossterm,lean".into()],
        vec!["lesson".into(), "--step".into(), "11".into()],
    ];
    for args in &cases {
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        common::assert_refused(&out, &format!("{args:?}"));
    }
}

/// `BACKEND` and `WAIT` from the environment are checked as their flags are: one escaped line
/// naming the variable and the valid choices.
#[test]
fn a_hostile_choice_from_the_environment_is_one_escaped_line_and_exit_2() {
    for (variable, value, a_choice) in [
        ("BACKEND", "lean\x1b]0;pwned\x07", "crossterm"),
        ("WAIT", "poll\x1b]0;pwned\x07", "sleep"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .env(variable, value)
            .env("DURATION", "0.1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let said = common::assert_refused(&out, variable);
        assert!(
            said.contains(variable) && said.contains(a_choice),
            "{variable}: {said}"
        );
    }
}
