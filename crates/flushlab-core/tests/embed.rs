//! The embedding API in a ratatui app (examples/embed.rs), checked against the kernel. The
//! example is built by `cargo test` (the test target alone does not build it) and run from
//! target/…/examples.

use std::process::Stdio;

#[path = "../../../tests/common/example.rs"]
mod example;
use example::example;

/// The embedding API (`flushlab_core::embed`) in a ratatui app: its layer's counts are the
/// kernel's (`/proc/self/io` of the example's process), exactly, raw and behind a BufWriter,
/// and each draw's split adds up.
#[test]
fn an_embedded_meter_counts_what_the_kernel_counts() {
    for (writer, per_draw) in [("raw", 1000.0..100_000.0), ("bufwriter", 1.0..3.0)] {
        let mut command = example("embed");
        command.args(["50", writer]).stdout(Stdio::null());
        let output = command.stdin(Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{writer}: {stderr}");
        // "… layer W write(2), B bytes; kernel W write(2), B bytes"
        let counts: Vec<u64> = stderr
            .lines()
            .next()
            .unwrap()
            .split([' ', ','])
            .filter_map(|w| w.parse().ok())
            .collect();
        assert_eq!(counts.len(), 5, "{stderr}");
        assert_eq!(counts[0], 50, "draws: {stderr}");
        assert_eq!((counts[1], counts[2]), (counts[3], counts[4]), "{stderr}");
        let writes_per_draw: f64 = stderr
            .split("a draw: ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|w| w.parse().ok())
            .unwrap();
        assert!(per_draw.contains(&writes_per_draw), "{writer}: {stderr}");
    }
}
