//! Every output flag takes `-` for standard output: what it writes there is the format alone
//! (the table for people goes to stderr then), and no file named `-` is ever created.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::scratch_dir;

/// flushlab with `args` and `envs`, run in `dir` (where a file named `-` would appear).
fn flushlab(dir: &Path, envs: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flushlab"))
        .current_dir(dir)
        .envs(envs.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn json(out: &Output, what: &str) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: stdout is not JSON alone ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

const QUICK: [&str; 9] = [
    "bench",
    "--duration",
    "0.3",
    "--runs",
    "1",
    "--warmup",
    "0",
    "--modes",
    "stdout/frame",
];

#[test]
fn every_output_flag_writes_only_its_format_to_stdout() {
    let dir = scratch_dir("destinations");
    // bench: each export alone on stdout, the table on stderr.
    let bench = flushlab(&dir, &[], &[&QUICK[..], &["--export-json", "-"]].concat());
    let results = json(&bench, "bench --export-json -");
    assert_eq!(results["results"][0]["mode"], "stdout/frame");
    assert!(String::from_utf8_lossy(&bench.stderr).contains("| stdout/frame"));
    let csv = flushlab(&dir, &[], &[&QUICK[..], &["--export-csv", "-"]].concat());
    assert!(csv.status.success());
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert!(csv.starts_with("mode,size,"), "{csv}");
    assert_eq!(csv.lines().count(), 2, "{csv}");
    let plot = flushlab(&dir, &[], &[&QUICK[..], &["--plot", "-"]].concat());
    assert!(plot.status.success());
    let svg = String::from_utf8(plot.stdout).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    // Without `-`, the table is on stdout as before.
    let table = flushlab(&dir, &[], &QUICK);
    assert!(String::from_utf8_lossy(&table.stdout).contains("| stdout/frame"));

    // report: the chart or the Markdown table on stdout, the table for people on stderr.
    let file = dir.join("results.json");
    std::fs::write(&file, &bench.stdout).unwrap();
    let file = file.to_str().unwrap();
    let report = flushlab(&dir, &[], &["report", file, "--plot", "-"]);
    assert!(report.status.success());
    assert!(report.stdout.starts_with(b"<svg"));
    let both = flushlab(
        &dir,
        &[],
        &["report", file, "--plot", "-", "--export-markdown", "-"],
    );
    assert_eq!(both.status.code(), Some(2));

    // Two exports to one destination, stdout included, are refused before anything runs.
    let twice = flushlab(
        &dir,
        &[],
        &[&QUICK[..], &["--export-json", "-", "--export-csv", "-"]].concat(),
    );
    assert_eq!(twice.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&twice.stderr).contains("'-' is given to two of"));
    // An empty destination is a usage error that names the flag.
    let empty = flushlab(&dir, &[], &["report", file, "--plot", ""]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("--plot"));

    assert!(
        !dir.join("-").exists(),
        "a file named '-' was created: {:?}",
        std::fs::read_dir(&dir).unwrap().collect::<Vec<_>>()
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_run_the_flood_and_wrap_put_their_json_alone_on_stdout() {
    let dir = scratch_dir("destinations-json");
    // The headless run and the flood: the report on stdout when the output is on stderr.
    let run = flushlab(
        &dir,
        &[("STREAM", "stderr"), ("DURATION", "0.3"), ("SIZE", "40x10")],
        &["--export-json", "-"],
    );
    assert_eq!(json(&run, "--export-json -")["stream"], "stderr");
    // The old spelling is kept, hidden.
    let old = flushlab(
        &dir,
        &[("STREAM", "stderr"), ("DURATION", "0.3"), ("SIZE", "40x10")],
        &["--report", "-"],
    );
    assert_eq!(json(&old, "--report -")["stream"], "stderr");
    let flood = flushlab(
        &dir,
        &[],
        &[
            "flood",
            "--writer",
            "eprintln",
            "--lines",
            "1000",
            "--export-json",
            "-",
        ],
    );
    assert_eq!(json(&flood, "flood --export-json -")["writer"], "eprintln");
    // Where stdout already carries the frames or the lines, `-` is refused in one line.
    for (envs, args) in [
        (
            &[("STREAM", "stdout"), ("DURATION", "0.3")][..],
            &["--export-json", "-"][..],
        ),
        (&[], &["flood", "--lines", "10", "--export-json", "-"]),
    ] {
        let refused = flushlab(&dir, envs, args);
        assert_eq!(refused.status.code(), Some(2), "{args:?}");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains("both use stdout") && said.lines().count() == 1,
            "{said}"
        );
        assert!(refused.stdout.is_empty());
    }

    // wrap: the report alone on stdout, the summary on stderr.
    let wrap = flushlab(
        &dir,
        &[],
        &[
            "wrap",
            "--duration",
            "0.3",
            "--export-json",
            "-",
            "--",
            "true",
        ],
    );
    assert!(json(&wrap, "wrap --export-json -")["bytes"].is_u64());
    assert!(!dir.join("-").exists(), "a file named '-' was created");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 33 #1: in a sticky world-writable directory (a shared /tmp), another user plants
/// `out -> secret` before the run; root runs flushlab with `out` as an output. Every output
/// flag refuses in one line with exit 2, before measuring, and the secret keeps its bytes and
/// mode — whatever `fs.protected_symlinks` says.
#[test]
fn no_output_follows_a_link_another_user_planted_in_a_shared_directory() {
    use std::os::unix::fs::PermissionsExt;
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: only root can plant a link owned by another user");
        return;
    }
    let dir = scratch_dir("planted-links");
    let shared = dir.join("tmp");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let secret = dir.join("secret");
    std::fs::write(&secret, b"S").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = shared.join("out");
    std::os::unix::fs::symlink(&secret, &out).unwrap();
    std::os::unix::fs::lchown(&out, Some(65534), Some(65534)).unwrap();
    let out = out.to_str().unwrap();
    let results = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tours/tmux.json"
    );

    let headless: &[(&str, &str)] = &[("STREAM", "stderr"), ("DURATION", "0.3"), ("SIZE", "40x10")];
    type Case<'a> = (&'a [(&'a str, &'a str)], Vec<&'a str>);
    let mut cases: Vec<Case> = vec![
        (headless, vec!["--export-json", out]),
        (headless, vec!["--report", out]),
        (&[], vec!["wrap", "--export-json", out, "--", "true"]),
        (
            &[],
            vec![
                "flood",
                "--writer",
                "eprintln",
                "--lines",
                "10",
                "--export-json",
                out,
            ],
        ),
        (&[], vec!["report", results, "--export-markdown", out]),
        (&[], vec!["report", results, "--plot", out]),
        (&[], vec!["tour", "--export-json", out]),
        (&[], vec!["tour", "--export-markdown", out]),
    ];
    for flag in [
        "--export-json",
        "--export-csv",
        "--export-markdown",
        "--plot",
    ] {
        cases.push((&[], [&QUICK[..], &[flag, out]].concat()));
        cases.push((&[], vec!["paint", flag, out]));
    }
    for (envs, args) in &cases {
        let run = flushlab(&dir, envs, args);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("symlink owned by uid 65534") && stderr.trim_end().lines().count() == 1,
            "{args:?}: {stderr}"
        );
        assert_eq!(
            std::fs::read(&secret).unwrap(),
            b"S",
            "{args:?} wrote the secret"
        );
        let mode = std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{args:?}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Issue 33 #3: two runs started together on one destination both keep their results: the
/// path holds one complete file, the other run's results are beside it under the name it
/// printed, and both exit 0.
#[test]
fn two_runs_on_one_destination_both_keep_their_results() {
    let dir = scratch_dir("two-runs");
    let report = dir.join("report.json");
    // Each CMD says it started, then waits for GO: both runs have checked the destination
    // before either writes it, however loaded the machine.
    let script = "touch started.$$; while [ ! -e GO ]; do sleep 0.02; done; printf x";
    let start = || {
        Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .current_dir(&dir)
            .args(["wrap", "--export-json"])
            .arg(&report)
            .args(["--", "sh", "-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start(), start());
    let started = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("started.")
            })
            .count()
    };
    common::wait_for(
        std::time::Duration::from_secs(30),
        "both CMDs to start",
        || (started() == 2).then_some(()),
    );
    std::fs::write(dir.join("GO"), b"").unwrap();
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert_eq!(
        a.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );
    assert_eq!(
        b.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&b.stderr)
    );
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "GO" || name.starts_with("started.") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    let told = format!(
        "{}{}",
        String::from_utf8_lossy(&a.stderr),
        String::from_utf8_lossy(&b.stderr)
    );
    for file in &files {
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        assert!(json.is_object(), "{}", file.display());
        if file != &report {
            assert!(told.contains(&file.display().to_string()), "{told}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}
