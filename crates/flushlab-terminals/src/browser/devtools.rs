//! Chromium driven over the DevTools protocol through `--remote-debugging-pipe` (its fd 3 reads
//! our messages, its fd 4 writes its own, each a JSON object ended by a NUL), never a debugging
//! port: nothing on the machine but its parent can talk to it, and what we send (the page's
//! address with its token) appears in no command line.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::display::Group;

/// A DevTools call answers within this.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

type Waiting = Arc<Mutex<HashMap<u64, mpsc::Sender<Value>>>>;

/// A running Chromium and the pipe to it.
pub struct DevTools {
    to: Mutex<std::io::PipeWriter>,
    next: AtomicU64,
    waiting: Waiting,
    /// Every event it sent (a message without an `id`).
    pub events: Mutex<mpsc::Receiver<Value>>,
    /// Chromium's process group, until [`DevTools::end`].
    browser: Mutex<Option<Group>>,
}

impl DevTools {
    /// Starts `program` with `args` and the pipe on fds 3 and 4 (a shell's redirections put
    /// them there, which spares an `unsafe` `pre_exec`).
    pub fn start(program: &Path, args: &[OsString]) -> anyhow::Result<DevTools> {
        let (from_us, to) = std::io::pipe()?;
        let (from, to_us) = std::io::pipe()?;
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>/dev/null"#)
            .arg(program)
            .args(args)
            .stdin(Stdio::from(from_us))
            .stdout(Stdio::from(to_us))
            .stderr(Stdio::null());
        let browser = Group::spawn(&mut command)
            .with_context(|| format!("starting {}", program.display()))?;
        // The child's ends are closed here (the `Command` is dropped): a browser that exits
        // ends our reads.
        drop(command);
        let waiting: Waiting = Arc::default();
        let (events_to, events) = mpsc::channel();
        let answers = Arc::clone(&waiting);
        flushlab_core::sys::spawn_thread("devtools", move || {
            for message in BufReader::new(from).split(0) {
                let Ok(message) = message else { break };
                let Ok(value) = serde_json::from_slice::<Value>(&message) else {
                    continue;
                };
                match value.get("id").and_then(Value::as_u64) {
                    Some(id) => {
                        let waiter = answers
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .remove(&id);
                        if let Some(waiter) = waiter {
                            let _ = waiter.send(value);
                        }
                    }
                    None => {
                        let _ = events_to.send(value);
                    }
                }
            }
        })?;
        Ok(DevTools {
            to: Mutex::new(to),
            next: AtomicU64::new(1),
            waiting,
            events: Mutex::new(events),
            browser: Mutex::new(Some(browser)),
        })
    }

    /// Calls `method` (in `session`, a page's, or the browser's) and waits for its result.
    pub fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> anyhow::Result<Value> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = session.into();
        }
        let (answer_to, answer) = mpsc::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, answer_to);
        let mut bytes = serde_json::to_vec(&message)?;
        bytes.push(0);
        self.to
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .write_all(&bytes)
            .with_context(|| format!("the browser is gone (sending {method})"))?;
        let answer = answer.recv_timeout(ANSWER_WITHIN).map_err(|_| {
            anyhow::anyhow!(
                "the browser did not answer {method} within {} s",
                ANSWER_WITHIN.as_secs()
            )
        })?;
        if let Some(error) = answer.get("error") {
            bail!(
                "the browser refused {method}: {}",
                flushlab_core::units::printable(&error.to_string())
            );
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }

    /// Ends Chromium (its process group: TERM, KILL after a second) and waits for it.
    pub fn end(&self) {
        drop(
            self.browser
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
    }

    /// The next event named `method`, within `limit` (others before it are passed to `other`).
    pub fn wait_for_event(
        &self,
        method: &str,
        limit: Duration,
        mut other: impl FnMut(&Value),
    ) -> anyhow::Result<Value> {
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let until = std::time::Instant::now() + limit;
        loop {
            let left = until.saturating_duration_since(std::time::Instant::now());
            let event = events.recv_timeout(left).map_err(|_| {
                anyhow::anyhow!("the browser sent no {method} within {} s", limit.as_secs())
            })?;
            if event.get("method").and_then(Value::as_str) == Some(method) {
                return Ok(event);
            }
            other(&event);
        }
    }
}
