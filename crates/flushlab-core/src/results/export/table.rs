//! The one table writer of flushlab's Markdown: every table a summary, an export or a report
//! prints goes through [`table`] (the bench's main table through [`write_table`], which can
//! leave columns out where the width is short).

use std::fmt::Write;

/// A cell's text as Markdown shows it: a `|` would end the cell and shift the row.
pub fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The widest cell of column `i`, header included.
pub(super) fn column_width(header: &[String], rows: &[Vec<String>], i: usize) -> usize {
    rows.iter()
        .map(|r| r[i].chars().count())
        .chain([header[i].chars().count()])
        .max()
        .unwrap_or(0)
}

/// [`table`] without its padding, where a padded one would be too wide: each cell as wide as
/// itself (Markdown renders it the same).
pub fn unpadded_table(header: &[String], rows: &[Vec<String>], text_columns: usize) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_table(
        &mut out,
        header,
        rows,
        (&vec![1; header.len()], text_columns),
    );
    out
}

/// A table in Markdown, each column as wide as its widest cell, the first `text_columns`
/// aligned left and the rest (figures) right: the one table writer of flushlab's summaries.
pub fn table(header: &[String], rows: &[Vec<String>], text_columns: usize) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| column_width(header, rows, i))
        .collect();
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_table(&mut out, header, rows, (&widths, text_columns));
    out
}

/// The table's lines, each cell padded to its column's width (`widths`, 0 for a column not
/// shown): text left, numbers right.
pub(super) fn write_table(
    out: &mut String,
    header: &[String],
    rows: &[Vec<String>],
    (widths, text_columns): (&[usize], usize),
) -> std::fmt::Result {
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .enumerate()
            .filter(|(_, (_, w))| **w > 0)
            .map(|(i, (c, w))| {
                // A width of 1 is unpadded: each cell as wide as itself.
                let pad = w.saturating_sub(c.chars().count());
                if i < text_columns {
                    format!("{c}{}", " ".repeat(pad))
                } else {
                    format!("{}{c}", " ".repeat(pad))
                }
            })
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    writeln!(out, "{}", line(header))?;
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .filter(|(_, w)| **w > 0)
        .map(|(i, w)| {
            if i < text_columns {
                "-".repeat(w + 2)
            } else {
                format!("{}:", "-".repeat(w + 1))
            }
        })
        .collect();
    writeln!(out, "|{}|", rule.join("|"))?;
    for row in rows {
        writeln!(out, "{}", line(row))?;
    }
    Ok(())
}
