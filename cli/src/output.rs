//! Output: buffered stdout that turns a closed pipe into a quiet exit, JSON
//! printing, human-readable sizes, shapes and compressions, aligned
//! tables, and progress bars that appear only on a terminal.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use n5::Compression;
use serde_json::Value;

use crate::error::{At, CliResult};

/// Buffered standard output.
pub struct Out {
    inner: std::io::BufWriter<std::io::StdoutLock<'static>>,
}

impl Out {
    /// Standard output, locked and buffered.
    pub fn new() -> Out {
        Out {
            inner: std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
        }
    }

    /// Print one line.
    pub fn line(&mut self, text: &str) -> CliResult<()> {
        writeln!(self.inner, "{text}").at("standard output")
    }

    /// Print `value` as pretty JSON on its own lines.
    pub fn json(&mut self, value: &Value) -> CliResult<()> {
        let text = n5::jsontext::to_string_pretty(value).unwrap_or_else(|_| "null".into());
        self.line(&text)
    }

    /// Flush what is buffered.
    pub fn flush(&mut self) -> CliResult<()> {
        self.inner.flush().at("standard output")
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        let _ = self.inner.flush();
    }
}

/// A progress bar over `len` steps, drawn on stderr only when stderr is a
/// terminal and `quiet` is off; hidden (and free) otherwise.
pub fn progress(len: u64, what: &str, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let style =
        ProgressStyle::with_template("{msg:>8} [{bar:40}] {pos}/{len} {elapsed} (eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// `n` and the noun, plural unless `n` is 1: `1 dataset`, `3 datasets`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `[a, b, c]`.
pub fn dims<T: std::fmt::Display>(v: &[T]) -> String {
    let parts: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// A compression as `type(param=value,...)`, or its type alone when it has
/// no parameters.
pub fn compression(c: &Compression) -> String {
    let json = c.to_json();
    let params: Vec<String> = json
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.as_str() != "type")
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    v => format!("{k}={v}"),
                })
                .collect()
        })
        .unwrap_or_default();
    if params.is_empty() {
        c.type_name().to_string()
    } else {
        format!("{}({})", c.type_name(), params.join(","))
    }
}

/// Bytes in binary units: `512 B`, `1.5 KiB`, `12.3 MiB`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// Rows of cells as text columns, each padded to its widest cell (the last
/// column is not padded).
pub fn table(rows: &[Vec<String>]) -> Vec<String> {
    let ncols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; ncols];
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    rows.iter()
        .map(|row| {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    let pad = widths[i] - cell.chars().count() + 2;
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            line.trim_end().to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(dims(&[1u64, 2, 3]), "[1, 2, 3]");
        assert_eq!(size(10), "10 B");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(3 << 20), "3.0 MiB");
        assert_eq!(compression(&Compression::Raw), "raw");
        assert_eq!(
            compression(&Compression::Zstd { level: 3 }),
            "zstd(level=3)"
        );
        let t = table(&[
            vec!["a".into(), "b".into()],
            vec!["long".into(), "c".into()],
        ]);
        assert_eq!(t, vec!["a     b", "long  c"]);
    }
}
