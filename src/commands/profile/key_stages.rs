//! A profile `wrap --profile` recorded, read by key: each key's stages are markers on the thread
//! that drew it (`key 7 processing`, `key 7 emit`), and the samples of that thread taken inside
//! them say which of the program's functions the stage went to. A sample counts for the
//! program's own function it was in (a kernel frame counts for the call that entered the
//! kernel: `write`, not the tty driver), once a stage however many keys' spans overlap there
//! (keys queued behind a slow frame).

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use flushlab_core::samply::{Profile, Symbols, Thread, TopFunction, ranked};
use flushlab_core::units::{milliseconds, percent};

/// What ran inside the keys' stages.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeyDigest {
    /// The process whose threads carry the markers.
    pub process: Option<String>,
    /// Keys marked.
    pub keys: u64,
    pub processing: StageDigest,
    pub emit: StageDigest,
}

/// One stage over every key.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageDigest {
    /// The stage's spans added up, milliseconds.
    pub milliseconds: f64,
    /// Samples taken inside them.
    pub samples: u64,
    /// The functions those samples were in (a kernel frame counted for the call that entered
    /// the kernel), most first; `share` of `samples`.
    pub top: Vec<TopFunction>,
    /// The same samples by the innermost function of the program's own executable (its code,
    /// and the crates built into it, not libc's).
    pub in_program: Vec<TopFunction>,
}

/// A stage's spans on one thread, merged where keys overlap: (start, end) in ms, sorted.
#[derive(Default)]
struct Spans {
    spans: Vec<(f64, f64)>,
    total_ms: f64,
}

impl Spans {
    fn merged(mut raw: Vec<(f64, f64)>) -> Spans {
        let total_ms = raw.iter().map(|s| s.1 - s.0).sum();
        raw.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut spans: Vec<(f64, f64)> = Vec::with_capacity(raw.len());
        for (start, end) in raw {
            match spans.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => spans.push((start, end)),
            }
        }
        Spans { spans, total_ms }
    }

    fn contains(&self, t: f64) -> bool {
        let i = self.spans.partition_point(|s| s.0 <= t);
        i > 0 && t < self.spans[i - 1].1
    }
}

/// The thread's key markers: the keys' numbers, and its processing and emit spans.
fn key_spans(thread: &Thread) -> Option<(Vec<u64>, Spans, Spans)> {
    let (mut keys, mut processing, mut emit) = (Vec::new(), Vec::new(), Vec::new());
    for (n, what, start, end) in thread.key_markers() {
        match what {
            "processing" => processing.push((start, end)),
            "emit" => emit.push((start, end)),
            _ => keys.push(n),
        }
    }
    keys.sort_unstable();
    keys.dedup();
    (!keys.is_empty()).then(|| (keys, Spans::merged(processing), Spans::merged(emit)))
}

/// The keys' digest, when the profile has key markers (else `None`: a profile of flushlab's own
/// modes).
pub(super) fn digest(profile: &Profile, symbols: &Symbols, top: usize) -> Option<KeyDigest> {
    let mut process = None;
    let mut keys = 0;
    let mut stages: [Tally; 2] = Default::default();
    for thread in &profile.threads {
        let Some((marked, processing, emit)) = key_spans(thread) else {
            continue;
        };
        process = process.or_else(|| thread.process_name.clone());
        keys += marked.len() as u64;
        let times = thread.samples.time.as_deref().unwrap_or(&[]);
        let own = thread.own_functions(&profile.libs, symbols);
        let program = thread.program_functions(&profile.libs, symbols);
        for (stage, spans) in [&processing, &emit].into_iter().enumerate() {
            stages[stage].ms += spans.total_ms;
            for (i, stack) in thread.samples.stack.iter().enumerate() {
                let (Some(stack), Some(&t)) = (*stack, times.get(i)) else {
                    continue;
                };
                if spans.contains(t) {
                    let weight = thread.samples.weight_of(i);
                    let tally = &mut stages[stage];
                    *tally.own.entry(own[stack as usize]).or_default() += weight;
                    if let Some(f) = program[stack as usize] {
                        *tally.program.entry(f).or_default() += weight;
                    }
                    tally.samples += weight;
                }
            }
        }
    }
    let [processing, emit] = stages.map(|t| StageDigest {
        milliseconds: t.ms,
        samples: t.samples as u64,
        top: ranked(t.own, t.samples, top),
        in_program: ranked(t.program, t.samples, top),
    });
    (keys > 0).then_some(KeyDigest {
        process,
        keys,
        processing,
        emit,
    })
}

/// One stage's samples so far: by function, by the program's own function, in all.
#[derive(Default)]
struct Tally<'a> {
    ms: f64,
    own: HashMap<&'a str, f64>,
    program: HashMap<&'a str, f64>,
    samples: f64,
}

impl KeyDigest {
    /// For people: a line a stage, its top functions with their shares.
    pub fn render(&self, file: &str) -> String {
        let mut out = String::new();
        let listed = |functions: &[TopFunction]| {
            let each: Vec<String> = functions
                .iter()
                .map(|f| format!("{} in {}", percent(f.share), f.function))
                .collect();
            if each.is_empty() {
                "no samples".to_owned()
            } else {
                each.join(", ")
            }
        };
        for (stage, d) in [("processing", &self.processing), ("emit", &self.emit)] {
            let _ = writeln!(
                out,
                "\n{file}: inside {} keys' {stage} ({}, {} samples): {}\n  in the program's own code: {}",
                self.keys,
                milliseconds(d.milliseconds),
                d.samples,
                listed(&d.top),
                listed(&d.in_program),
            );
        }
        out
    }
}
