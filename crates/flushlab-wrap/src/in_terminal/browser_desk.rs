//! The browser side of a [`Desk`]: xterm.js in headless Chromium, run by
//! `flushlab xtermjs-host` (the terminal, [`flushlab_terminals::browser`]). Keys go to it as the
//! browser's own key events; the page's render reports arrive as they happen (they say when
//! CMD is ready, and when it settled); the window's changes are the compositor's frames from
//! the browser's trace, which arrives only once the run is over ([`Desk::closing`]).

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

use super::desk::{CameraThread, Desk, Desktop, WatchThread, Watching};
use flushlab_core::keyscript::Key;
use flushlab_terminals::browser::Renderer;
use flushlab_terminals::browser::host::HostArgs;
use flushlab_terminals::browser::protocol::{BrowserRun, Event, Order};
use flushlab_terminals::camera::Film;
use flushlab_terminals::display::Group;
use flushlab_terminals::emulators::Terminal;
use flushlab_terminals::strips::Strips;
use flushlab_terminals::terminal_option::TerminalOption;
use flushlab_terminals::window_watch::CoreShare;

/// The browser's trace is read and sent within this once the run is over.
const TRACE_WITHIN: Duration = Duration::from_secs(60);

pub(super) struct BrowserDesk {
    renderer: Renderer,
    chromium: PathBuf,
    modules: PathBuf,
    /// The host's stdin, once launched.
    orders: Mutex<Option<std::io::PipeWriter>>,
    /// The host's events, until the watcher takes them.
    events: Option<mpsc::Receiver<Event>>,
    run: Arc<Mutex<BrowserRun>>,
    ended: Arc<std::sync::atomic::AtomicBool>,
    /// `--camera`: the page sends the rows its DOM renderer drew at each render.
    camera: bool,
    /// What the camera got, render by render.
    shots: Arc<Mutex<Vec<PageShot>>>,
    /// The terminal's columns, once launched.
    cols: u16,
}

impl BrowserDesk {
    /// Chromium found, xterm.js's packages installed (the first time: said in one line).
    pub(super) fn open(renderer: Renderer, camera: bool) -> anyhow::Result<BrowserDesk> {
        Ok(BrowserDesk {
            renderer,
            chromium: flushlab_terminals::browser::chromium()?,
            modules: flushlab_terminals::browser::package::installed()?,
            orders: Mutex::new(None),
            events: None,
            run: Arc::new(Mutex::new(BrowserRun {
                renderer: Some(renderer),
                ..BrowserRun::default()
            })),
            ended: Arc::default(),
            camera,
            shots: Arc::default(),
            cols: 0,
        })
    }

    fn order(&self, order: &Order) -> anyhow::Result<()> {
        let mut orders = self.orders.lock().unwrap_or_else(|e| e.into_inner());
        let to = orders
            .as_mut()
            .context("the browser terminal is not started")?;
        let mut line = serde_json::to_vec(order)?;
        line.push(b'\n');
        to.write_all(&line).context("the browser terminal is gone")
    }

    /// What the host told, once the run is over.
    fn run(&self) -> BrowserRun {
        self.run.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Desk for BrowserDesk {
    type Stroke = Vec<Value>;
    type Window = ();

    fn strokes(&mut self, keys: &[&Key]) -> anyhow::Result<Vec<Result<Vec<Value>, String>>> {
        Ok(keys
            .iter()
            .map(|key| flushlab_terminals::browser::keys::events(key))
            .collect())
    }

    fn type_stroke(&self, stroke: &Vec<Value>) -> anyhow::Result<()> {
        self.order(&Order::Key {
            events: stroke.clone(),
        })
    }

    fn launch(
        &mut self,
        terminal: (Terminal, &[TerminalOption]),
        size: (u16, u16),
        command: &[OsString],
    ) -> anyhow::Result<Group> {
        let (orders_out, orders_in) = std::io::pipe()?;
        let (events_out, events_in) = std::io::pipe()?;
        let renderer = terminal
            .0
            .in_browser()
            .ok_or_else(|| anyhow::anyhow!("{} is no browser terminal", terminal.0.name()))?;
        let args = HostArgs {
            renderer,
            cols: size.0,
            rows: size.1,
            modules: self.modules.clone(),
            browser: self.chromium.clone(),
            parent: std::process::id() as i32,
            camera: self.camera,
            command: command.to_vec(),
        };
        let mut host = Command::new(std::env::current_exe()?);
        host.args(args.argv())
            .stdin(Stdio::from(orders_out))
            .stdout(Stdio::from(events_in))
            .stderr(Stdio::inherit());
        self.cols = size.0;
        let group = Group::spawn(&mut host).context("starting the browser terminal")?;
        drop(host);
        *self.orders.lock().unwrap_or_else(|e| e.into_inner()) = Some(orders_in);
        let (to, events) = mpsc::channel();
        flushlab_core::sys::spawn_thread("browser-events", move || {
            for line in BufReader::new(events_out).lines() {
                let Ok(line) = line else { break };
                if let Ok(event) = serde_json::from_str::<Event>(&line)
                    && to.send(event).is_err()
                {
                    break;
                }
            }
        })?;
        self.events = Some(events);
        Ok(group)
    }

    /// The page, once it is open and connected: the host's Ready.
    fn window(&self, _pid: i32) -> anyhow::Result<Option<()>> {
        let events = self
            .events
            .as_ref()
            .context("the browser terminal is not started")?;
        match events.try_recv() {
            Ok(Event::Ready {
                drew,
                browser,
                sandboxed,
            }) => {
                let mut run = self.run.lock().unwrap_or_else(|e| e.into_inner());
                run.drew = drew;
                run.browser = browser;
                run.sandboxed = sandboxed;
                Ok(Some(()))
            }
            Ok(Event::Failed { why }) => bail!(
                "the browser terminal could not start: {}",
                flushlab_core::units::printable(&why)
            ),
            Ok(_) | Err(mpsc::TryRecvError::Empty) => Ok(None),
            Err(mpsc::TryRecvError::Disconnected) => {
                bail!("the browser terminal ended before its page opened")
            }
        }
    }

    /// The page focuses xterm.js itself once it is connected.
    fn focus(&self, _window: &()) -> anyhow::Result<()> {
        Ok(())
    }

    fn watch(&mut self, _window: &(), shared: &Arc<Watching>) -> anyhow::Result<WatchThread> {
        let events = self.events.take().context("the page is watched already")?;
        let (shared, run, ended) = (
            Arc::clone(shared),
            Arc::clone(&self.run),
            Arc::clone(&self.ended),
        );
        let (shots, cols) = (Arc::clone(&self.shots), usize::from(self.cols));
        Ok(flushlab_core::sys::spawn_thread("wrap-page", move || {
            let core = CoreShare::start();
            loop {
                let event = match events.recv_timeout(Duration::from_millis(20)) {
                    Ok(event) => event,
                    Err(mpsc::RecvTimeoutError::Timeout) if !ended.load(Ordering::Relaxed) => {
                        continue;
                    }
                    Err(_) => break,
                };
                let mut run = run.lock().unwrap_or_else(|e| e.into_inner());
                match event {
                    Event::Render { at_ns, .. } => shared.recording.window_changed(at_ns),
                    Event::Shot { count, at_ns, rows } => {
                        let shot = PageShot {
                            count,
                            arrived_ns: at_ns,
                            cells: cells_of(&rows, cols),
                        };
                        shots.lock().unwrap_or_else(|e| e.into_inner()).push(shot);
                    }
                    Event::Sent {
                        seq,
                        at_ns,
                        bytes,
                        sync_begins,
                        sync_ends,
                    } => run.sent.push((seq, at_ns, bytes, sync_begins, sync_ends)),
                    Event::Trace {
                        draw_frames_ns,
                        marks,
                    } => {
                        shared
                            .recording
                            .window_changes_replaced(draw_frames_ns.clone());
                        run.draw_frames_ns = draw_frames_ns;
                        run.marks = marks;
                        run.traced = true;
                    }
                    Event::Ended | Event::Failed { .. } => {
                        ended.store(true, Ordering::Relaxed);
                        break;
                    }
                    Event::Ready { .. } => {}
                }
            }
            ended.store(true, Ordering::Relaxed);
            Ok(core.share())
        })?)
    }

    /// Ends the host's trace and waits until it was read.
    fn closing(&mut self, _window: &()) -> anyhow::Result<()> {
        self.order(&Order::End)?;
        let until = Instant::now() + TRACE_WITHIN;
        while !self.ended.load(Ordering::Relaxed) {
            if Instant::now() >= until {
                bail!(
                    "the browser's trace did not arrive within {} s",
                    TRACE_WITHIN.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    /// The page's rows at each render (the DOM renderer's), each timed by the compositor
    /// frame that first showed it once the trace is read (else by its arrival).
    fn camera(
        &mut self,
        _window: &(),
        shared: &Arc<Watching>,
    ) -> anyhow::Result<Option<CameraThread>> {
        if !self.camera || self.renderer != Renderer::Dom {
            return Ok(None);
        }
        let (shared, run, shots) = (
            Arc::clone(shared),
            Arc::clone(&self.run),
            Arc::clone(&self.shots),
        );
        let width = u32::from(self.cols);
        Ok(Some(flushlab_core::sys::spawn_thread(
            "wrap-camera",
            move || {
                while !shared.done.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                let run = run.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let shots = std::mem::take(&mut *shots.lock().unwrap_or_else(|e| e.into_inner()));
                Ok(film_of(shots, &run, width))
            },
        )?))
    }

    fn browser_run(&self) -> Option<BrowserRun> {
        Some(self.run())
    }

    fn calibrate(&self, _window: &()) -> anyhow::Result<Option<Strips>> {
        Ok(None)
    }

    fn desktop(&self) -> anyhow::Result<Desktop> {
        let run = self.run();
        Ok(Desktop::Chromium {
            browser: run.browser,
            renderer: self.renderer,
            drew: run.drew.renderer(),
            sandboxed: run.sandboxed,
        })
    }
}

/// The rows the page showed after one render: its count, when they arrived, their cells.
struct PageShot {
    count: u64,
    arrived_ns: u64,
    cells: Vec<u32>,
}

/// A row's characters as cells, `cols` of them (a short row padded with spaces).
fn cells_of(rows: &[String], cols: usize) -> Vec<u32> {
    rows.iter()
        .flat_map(|row| {
            let chars: Vec<u32> = row.chars().map(u32::from).take(cols).collect();
            let pad = cols - chars.len();
            chars
                .into_iter()
                .chain(std::iter::repeat_n(u32::from(' '), pad))
        })
        .collect()
}

/// The camera's film from the page's shots: each shot timed by the first compositor frame
/// (DrawFrame) at or after its render's mark, where the trace holds both, else by when it
/// arrived; a shot the same as the one before is no new state.
fn film_of(shots: Vec<PageShot>, run: &BrowserRun, width: u32) -> Film {
    let marks: std::collections::HashMap<&str, u64> = run
        .marks
        .iter()
        .map(|(name, at)| (name.as_str(), *at))
        .collect();
    let drawn = |count: u64| {
        let mark = *marks.get(format!("render {count}").as_str())?;
        let at = run.draw_frames_ns.partition_point(|&f| f < mark);
        run.draw_frames_ns.get(at).copied()
    };
    let mut film = Film {
        width,
        cells: true,
        grabs: shots.len() as u64,
        ..Film::default()
    };
    for shot in shots {
        if film
            .frames
            .last()
            .is_some_and(|(_, last)| *last == shot.cells)
        {
            continue;
        }
        film.frames
            .push((drawn(shot.count).unwrap_or(shot.arrived_ns), shot.cells));
    }
    film.frames.sort_by_key(|(at, _)| *at);
    film
}
