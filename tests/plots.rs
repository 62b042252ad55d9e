//! Every chart `flushlab report --plot` draws from the results in docs/results, rendered to PNG
//! by librsvg (`rsvg-convert`, Debian's librsvg2-bin: what a browser or an image viewer does)
//! and read back as pixels: a chart a class reads at 100% has nothing cut at its edges (a title
//! or a label running off the canvas leaves ink in the outer columns) and names every row.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The result files a chart is drawn from: each alone, and the terminal matrix merged.
fn sources() -> Vec<Vec<PathBuf>> {
    let results = root().join("docs/results");
    let mut sources: Vec<Vec<PathBuf>> = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| vec![p])
        .collect();
    sources.sort();
    let mut terminals: Vec<PathBuf> = std::fs::read_dir(results.join("terminals"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    terminals.sort();
    sources.push(terminals);
    sources
}

struct Picture {
    width: u32,
    height: u32,
    /// 3 (RGB) or 4 (RGBA) bytes a pixel.
    channels: usize,
    pixels: Vec<u8>,
}

impl Picture {
    fn read(path: &Path) -> Picture {
        let mut decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        let channels = match info.color_type {
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            other => panic!("{}: {other:?}", path.display()),
        };
        buf.truncate(info.buffer_size());
        Picture {
            width: info.width,
            height: info.height,
            channels,
            pixels: buf,
        }
    }

    /// Whether the pixel is ink: anything visibly darker than the white canvas.
    fn ink(&self, x: u32, y: u32) -> bool {
        let at = (y * self.width + x) as usize * self.channels;
        let [r, g, b] = [0, 1, 2].map(|i| u32::from(self.pixels[at + i]));
        let opaque = self.channels == 3 || self.pixels[at + 3] > 0;
        opaque && r + g + b < 3 * 200
    }

    /// Ink in the `band` outermost columns or rows: something runs off the canvas.
    fn ink_at_the_edges(&self, band: u32) -> Vec<String> {
        let mut found = Vec::new();
        for y in 0..self.height {
            for x in (0..band).chain(self.width - band..self.width) {
                if self.ink(x, y) {
                    found.push(format!("x {x} y {y}"));
                }
            }
        }
        for x in 0..self.width {
            for y in (0..band).chain(self.height - band..self.height) {
                if self.ink(x, y) {
                    found.push(format!("x {x} y {y}"));
                }
            }
        }
        found
    }
}

/// The SVG's own size, from its root element.
fn svg_size(svg: &str) -> (u32, u32) {
    let attribute = |name: &str| -> u32 {
        let at = svg.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        svg[at..].split('"').next().unwrap().parse().unwrap()
    };
    (attribute("width"), attribute("height"))
}

#[test]
fn every_chart_renders_whole_and_names_every_row() {
    let rsvg = Command::new("rsvg-convert").arg("--version").output();
    assert!(
        rsvg.is_ok_and(|o| o.status.success()),
        "rsvg-convert is missing: apt-get install librsvg2-bin (.ci/run does)"
    );
    let dir = common::scratch_dir("plots");
    let mut problems = Vec::new();
    for (i, files) in sources().iter().enumerate() {
        let name = files[0].file_stem().unwrap().to_string_lossy().into_owned();
        let name = if files.len() > 1 {
            "terminals".to_owned()
        } else {
            name
        };
        let svg_path = dir.join(format!("{i}-{name}.svg"));
        let png_path = dir.join(format!("{i}-{name}.png"));
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .arg("report")
            .args(files)
            .arg("--plot")
            .arg(&svg_path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {out:?}");
        let status = Command::new("rsvg-convert")
            .arg(&svg_path)
            .arg("-o")
            .arg(&png_path)
            .status()
            .unwrap();
        assert!(status.success(), "{name}: rsvg-convert failed");
        let svg = std::fs::read_to_string(&svg_path).unwrap();
        let picture = Picture::read(&png_path);
        if (picture.width, picture.height) != svg_size(&svg) {
            problems.push(format!(
                "{name}: rendered at {}x{}",
                picture.width, picture.height
            ));
        }
        let edges = picture.ink_at_the_edges(2);
        if !edges.is_empty() {
            problems.push(format!(
                "{name}: ink at the canvas's edge ({} pixels, first at {}): something is cut",
                edges.len(),
                edges[0]
            ));
        }
        // Every row of every file is named on the chart, and a tour's terminal on its rows.
        for file in files {
            let results: serde_json::Value =
                serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
            let rows = results["results"].as_array().into_iter().flatten();
            let painted = results["runs"].as_array().into_iter().flatten();
            for row in rows.chain(painted) {
                let mode = row["mode"].as_str().unwrap();
                if !svg.contains(mode.split(':').next().unwrap()) {
                    problems.push(format!("{name}: no row named {mode}"));
                }
            }
            let terminal = &results["terminal"];
            let named = terminal["version_reply"]
                .as_str()
                .or(terminal["term_program"].as_str())
                .or(terminal["term"].as_str());
            if let Some(named) = named {
                let short = named.split(['(', ' ', '-']).next().unwrap();
                if !svg.contains(short) {
                    problems.push(format!("{name}: the terminal {named} is not on the chart"));
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The check above can fail: a chart whose title runs off its canvas is caught.
#[test]
fn a_title_cut_at_the_edge_is_ink_at_the_edge() {
    let dir = common::scratch_dir("plots-cut");
    let svg = dir.join("cut.svg");
    std::fs::write(
        &svg,
        r##"<svg width="200" height="60" xmlns="http://www.w3.org/2000/svg">
<rect x="0" y="0" width="200" height="60" fill="#FFFFFF"/>
<text x="100" y="30" text-anchor="middle" font-family="sans-serif" font-size="16">flushlab · a title far too long for its chart</text>
</svg>"##,
    )
    .unwrap();
    let png = dir.join("cut.png");
    let status = Command::new("rsvg-convert")
        .arg(&svg)
        .arg("-o")
        .arg(&png)
        .status()
        .expect("rsvg-convert is missing: apt-get install librsvg2-bin");
    assert!(status.success());
    let picture = Picture::read(&png);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!picture.ink_at_the_edges(2).is_empty());
}

/// `wrap --plot`: a waterfall of 80 and of 300 keys renders whole, and the figures it labels
/// (key→frame p50 and p95, each stage's p50) are the report's, as the summary writes them.
#[test]
fn a_keys_waterfall_renders_whole_with_the_reports_figures() {
    use flushlab_core::units::milliseconds;
    let program = common::c_program("stages");
    let dir = common::scratch_dir("waterfall");
    for keys in [80, 300] {
        let (svg_path, png_path, report) = (
            dir.join(format!("{keys}.svg")),
            dir.join(format!("{keys}.png")),
            dir.join(format!("{keys}.json")),
        );
        let out = Command::new(env!("CARGO_BIN_EXE_flushlab"))
            .args([
                "wrap",
                "--size",
                "80x24",
                "--keys",
                &format!("j*{keys}@12ms q"),
            ])
            .arg("--plot")
            .arg(&svg_path)
            .arg("--export-json")
            .arg(&report)
            .arg("--")
            .arg(&program)
            .args(["poll", "300", "raw"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let status = Command::new("rsvg-convert")
            .arg(&svg_path)
            .arg("-o")
            .arg(&png_path)
            .status()
            .expect("rsvg-convert is missing: apt-get install librsvg2-bin");
        assert!(status.success());
        let svg = std::fs::read_to_string(&svg_path).unwrap();
        let picture = Picture::read(&png_path);
        assert_eq!((picture.width, picture.height), svg_size(&svg));
        let edges = picture.ink_at_the_edges(2);
        assert!(edges.is_empty(), "{keys} keys: cut at {:?}", &edges[..1]);
        let report = common::read_json(&report);
        let k = &report["keys"];
        let mut labels = vec![
            format!(
                "key→frame p50 {}",
                milliseconds(k["key_to_frame_ms"]["p50"].as_f64().unwrap())
            ),
            format!(
                "key→frame p95 {}",
                milliseconds(k["key_to_frame_ms"]["p95"].as_f64().unwrap())
            ),
            format!("{} keys", keys + 1),
            "1 j".to_owned(),
        ];
        for (stage, name) in [
            ("input_delay", "input delay"),
            ("processing", "processing"),
            ("emit", "emit"),
            ("drain", "drain"),
        ] {
            let p50 = k["stages_ms"][stage]["p50"].as_f64().unwrap();
            labels.push(format!("{name} p50 {}", milliseconds(p50)));
        }
        for label in labels {
            assert!(
                svg.contains(&label),
                "{keys} keys: no '{label}' on the chart"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
