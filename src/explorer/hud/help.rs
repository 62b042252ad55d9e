//! The help overlay and the key legend, drawn from `bindings::BINDINGS`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Widget, Wrap};

use super::text::centered;

/// The key legend packed into lines of `width`, breaking only between bindings.
pub(super) fn key_lines(width: u16) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for key in crate::explorer::bindings::footer() {
        let joined = if line.is_empty() {
            key.to_string()
        } else {
            format!("{line} · {key}")
        };
        if joined.chars().count() <= usize::from(width) || line.is_empty() {
            line = joined;
        } else {
            lines.push(std::mem::replace(&mut line, key.to_string()));
        }
    }
    lines.push(line);
    lines
}

pub(super) fn render_help(area: Rect, buf: &mut Buffer) {
    let keys = crate::explorer::bindings::BINDINGS
        .iter()
        .map(|b| (b.shown, b.help));
    let figures = [
        (
            "fps",
            "frames the writer took per second, over the last second",
        ),
        (
            "writes/f",
            "write(2) calls per frame, as the kernel counts them",
        ),
        (
            "bytes/f",
            "bytes per frame: the same for every mode of one table",
        ),
        (
            "bytes/write",
            "bytes per write(2): ~2 raw, 1 KiB line, the capacity block",
        ),
        (
            "kernel",
            "share of the CPU time spent in the kernel: system calls",
        ),
        (
            "cells/frame",
            "terminal cells the frame changed (what ratatui sent)",
        ),
        (
            "CPU ms/f",
            "CPU time (user + kernel, all threads) a frame costs",
        ),
        (
            "frame",
            "its wall time: build · encode · kernel · cpu wait · reader wait",
        ),
        (
            "painted",
            "frames the terminal put on screen: flushlab paint, tour --paint",
        ),
    ];
    let text: Vec<Line> = keys
        .chain(figures)
        .map(|(key, what)| {
            Line::from(vec![
                Span::raw(format!("{key:>11}  ")).bold(),
                Span::raw(what),
            ])
        })
        .collect();
    let popup = centered(area, 78, text.len() as u16 + 2);
    Clear.render(popup, buf);
    Paragraph::new(text)
        .wrap(Wrap { trim: false })
        .block(
            Block::bordered()
                .border_type(BorderType::Rounded)
                .title(" keys and figures · Esc closes ")
                .title_bottom(" measurement paused while help is open "),
        )
        .style(Style::new().fg(Color::White).bg(Color::Rgb(30, 30, 60)))
        .render(popup, buf);
}
