//! The explorer's state and the keys that change it.

use std::time::{Duration, Instant};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::meters::Meters;
use crate::scene::Scene;
use crate::writer_mode::{Buffering, MAX_CAPACITY, MIN_CAPACITY, Mode, Stream, format_capacity};

/// What a key asks for. Keys map to actions in one place ([`From<KeyEvent>`]), so the bindings
/// can be tested without a terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    NextMode,
    Stream(Stream),
    Buffering(Buffering),
    CapacityUp,
    CapacityDown,
    ToggleSync,
    NextScene,
    Tour,
    ToggleHelp,
    Quit,
    /// An unbound key: ignored.
    Nothing,
}

impl From<KeyEvent> for Action {
    fn from(key: KeyEvent) -> Self {
        if key.kind == KeyEventKind::Release {
            return Action::Nothing;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) {
            return match key.code {
                KeyCode::Char('c') => Action::Quit,
                _ => Action::Nothing,
            };
        }
        match key.code {
            KeyCode::Char(' ') | KeyCode::Tab => Action::NextMode,
            KeyCode::Char('o') => Action::Stream(Stream::Stdout),
            KeyCode::Char('e') => Action::Stream(Stream::Stderr),
            KeyCode::Char('r') => Action::Buffering(Buffering::Raw),
            KeyCode::Char('l') => Action::Buffering(Buffering::Line),
            KeyCode::Char('b') => Action::Buffering(Buffering::Block),
            KeyCode::Char('f') => Action::Buffering(Buffering::Frame),
            KeyCode::Char('w') => Action::Buffering(Buffering::Thread),
            KeyCode::Char('+') | KeyCode::Char('=') => Action::CapacityUp,
            KeyCode::Char('-') => Action::CapacityDown,
            KeyCode::Char('y') => Action::ToggleSync,
            KeyCode::Char('s') => Action::NextScene,
            KeyCode::Char('t') => Action::Tour,
            KeyCode::Char('h') | KeyCode::Char('?') => Action::ToggleHelp,
            KeyCode::Char('q') | KeyCode::Esc => Action::Quit,
            _ => Action::Nothing,
        }
    }
}

/// Every mode in turn for a fixed time, then back to where the user was.
#[derive(Clone, Debug)]
pub struct Tour {
    pub modes: Vec<Mode>,
    pub index: usize,
    pub step_started: Instant,
    pub step: Duration,
    pub return_to: Mode,
}

#[derive(Debug)]
pub struct App {
    pub mode: Mode,
    pub scene: Scene,
    pub sync: bool,
    pub show_help: bool,
    pub tour: Option<Tour>,
    pub tour_step: Duration,
    /// A one-line message for the user, e.g. why a key did nothing.
    pub status: Option<String>,
    pub meters: Meters,
    pub quit: bool,
    /// Which streams reach the terminal on screen; only those can be switched to.
    pub reachable: [bool; 2],
    pub hud_cache: crate::hud::HudCache,
}

impl App {
    pub fn new(mode: Mode, scene: Scene, sync: bool) -> Self {
        App {
            mode,
            scene,
            sync,
            show_help: false,
            tour: None,
            tour_step: Duration::from_secs(2),
            status: None,
            meters: Meters::new(),
            quit: false,
            reachable: [true, true],
            hud_cache: Default::default(),
        }
    }

    fn can_reach(&self, stream: Stream) -> bool {
        self.reachable[stream as usize]
    }

    /// Applies an action. The caller compares [`Mode::key`] before and after to know whether the
    /// writer must be rebuilt; nothing here touches the terminal.
    pub fn apply(&mut self, action: Action, now: Instant) {
        let chooses_mode = matches!(
            action,
            Action::NextMode
                | Action::Stream(_)
                | Action::Buffering(_)
                | Action::CapacityUp
                | Action::CapacityDown
        );
        if chooses_mode && self.tour.take().is_some() {
            self.status = Some("tour stopped: you chose a mode".to_owned());
        }
        match action {
            Action::NextMode => {
                let mut next = self.mode.next();
                while !self.can_reach(next.stream) {
                    next = next.next();
                }
                self.mode = next;
            }
            Action::Stream(stream) if !self.can_reach(stream) => {
                self.status = Some(format!(
                    "{} is not this terminal (redirected?): staying on {}",
                    stream.name(),
                    self.mode.stream.name()
                ));
            }
            Action::Stream(stream) => self.mode.stream = stream,
            Action::Buffering(buffering) => self.mode.buffering = buffering,
            Action::CapacityUp | Action::CapacityDown => {
                let capacity = if action == Action::CapacityUp {
                    (self.mode.capacity * 2).min(MAX_CAPACITY)
                } else {
                    (self.mode.capacity / 2).max(MIN_CAPACITY)
                };
                self.mode.capacity = capacity;
                self.status = Some(format!("block capacity {}", format_capacity(capacity)));
            }
            Action::ToggleSync => self.sync = !self.sync,
            Action::NextScene => self.scene = self.scene.next(),
            Action::Tour => self.start_tour(now),
            Action::ToggleHelp => self.show_help = !self.show_help,
            Action::Quit => self.quit = true,
            Action::Nothing => {}
        }
    }

    fn start_tour(&mut self, now: Instant) {
        let modes: Vec<Mode> = Mode::all(self.mode.capacity)
            .filter(|m| self.can_reach(m.stream))
            .collect();
        let return_to = self.tour.as_ref().map_or(self.mode, |t| t.return_to);
        self.mode = modes[0];
        self.status = Some(format!(
            "tour: {} modes, {:.0?} each",
            modes.len(),
            self.tour_step
        ));
        self.tour = Some(Tour {
            modes,
            index: 0,
            step_started: now,
            step: self.tour_step,
            return_to,
        });
    }

    /// Advances the tour when its step is over. Called once per frame.
    pub fn tick(&mut self, now: Instant) {
        let Some(tour) = &mut self.tour else { return };
        if now - tour.step_started < tour.step {
            return;
        }
        tour.index += 1;
        tour.step_started = now;
        if let Some(&mode) = tour.modes.get(tour.index) {
            self.mode = mode;
        } else {
            self.mode = tour.return_to;
            self.tour = None;
            self.status = Some(self.tour_verdict());
        }
    }

    fn tour_verdict(&self) -> String {
        let best = self
            .meters
            .per_mode
            .iter()
            .max_by(|a, b| a.1.fps().total_cmp(&b.1.fps()));
        let worst = self
            .meters
            .per_mode
            .iter()
            .min_by(|a, b| a.1.fps().total_cmp(&b.1.fps()));
        match (best, worst) {
            (Some((b, bt)), Some((w, wt))) if wt.fps() > 0.0 => format!(
                "tour done: {b} {:.1} fps is {:.1}x {w}",
                bt.fps(),
                bt.fps() / wt.fps()
            ),
            _ => "tour done".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer_mode::DEFAULT_CAPACITY;

    fn key(code: KeyCode) -> Action {
        KeyEvent::new(code, KeyModifiers::NONE).into()
    }

    #[test]
    fn keys_map_to_actions() {
        assert_eq!(key(KeyCode::Char(' ')), Action::NextMode);
        assert_eq!(key(KeyCode::Tab), Action::NextMode);
        assert_eq!(key(KeyCode::Char('o')), Action::Stream(Stream::Stdout));
        assert_eq!(key(KeyCode::Char('e')), Action::Stream(Stream::Stderr));
        assert_eq!(key(KeyCode::Char('r')), Action::Buffering(Buffering::Raw));
        assert_eq!(key(KeyCode::Char('l')), Action::Buffering(Buffering::Line));
        assert_eq!(key(KeyCode::Char('b')), Action::Buffering(Buffering::Block));
        assert_eq!(key(KeyCode::Char('f')), Action::Buffering(Buffering::Frame));
        assert_eq!(
            key(KeyCode::Char('w')),
            Action::Buffering(Buffering::Thread)
        );
        assert_eq!(key(KeyCode::Char('+')), Action::CapacityUp);
        assert_eq!(key(KeyCode::Char('-')), Action::CapacityDown);
        assert_eq!(key(KeyCode::Char('y')), Action::ToggleSync);
        assert_eq!(key(KeyCode::Char('s')), Action::NextScene);
        assert_eq!(key(KeyCode::Char('t')), Action::Tour);
        assert_eq!(key(KeyCode::Char('h')), Action::ToggleHelp);
        assert_eq!(key(KeyCode::Char('?')), Action::ToggleHelp);
        assert_eq!(key(KeyCode::Char('q')), Action::Quit);
        assert_eq!(key(KeyCode::Esc), Action::Quit);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(Action::from(ctrl_c), Action::Quit);
    }

    #[test]
    fn unknown_keys_and_releases_do_nothing() {
        assert_eq!(key(KeyCode::Char('z')), Action::Nothing);
        assert_eq!(key(KeyCode::F(5)), Action::Nothing);
        let mut release = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
        release.kind = KeyEventKind::Release;
        assert_eq!(Action::from(release), Action::Nothing);
        let ctrl_x = KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL);
        assert_eq!(Action::from(ctrl_x), Action::Nothing);
    }

    fn app() -> App {
        App::new(
            Mode::new(Stream::Stdout, Buffering::Line, DEFAULT_CAPACITY),
            Scene::Full,
            false,
        )
    }

    #[test]
    fn capacity_doubles_and_halves_within_bounds() {
        let mut app = app();
        let now = Instant::now();
        for _ in 0..20 {
            app.apply(Action::CapacityUp, now);
        }
        assert_eq!(app.mode.capacity, MAX_CAPACITY);
        for _ in 0..20 {
            app.apply(Action::CapacityDown, now);
        }
        assert_eq!(app.mode.capacity, MIN_CAPACITY);
    }

    #[test]
    fn an_unreachable_stream_is_refused_with_a_reason() {
        let mut app = app();
        app.reachable = [true, false];
        app.apply(Action::Stream(Stream::Stderr), Instant::now());
        assert_eq!(app.mode.stream, Stream::Stdout);
        assert!(
            app.status
                .as_deref()
                .unwrap()
                .contains("stderr is not this terminal")
        );
        for _ in 0..12 {
            app.apply(Action::NextMode, Instant::now());
            assert_eq!(app.mode.stream, Stream::Stdout);
        }
    }

    #[test]
    fn choosing_a_mode_stops_the_tour() {
        let mut app = app();
        let t0 = Instant::now();
        app.apply(Action::Tour, t0);
        app.apply(Action::Buffering(Buffering::Frame), t0);
        assert!(app.tour.is_none());
        assert_eq!(app.mode.buffering, Buffering::Frame);
        app.tick(t0 + Duration::from_secs(60));
        assert_eq!(app.mode.buffering, Buffering::Frame);
    }

    #[test]
    fn tour_visits_every_mode_then_returns() {
        let mut app = app();
        let t0 = Instant::now();
        app.apply(Action::Tour, t0);
        let mut visited = vec![app.mode];
        for i in 1..=10 {
            app.tick(t0 + app.tour_step * i);
            visited.push(app.mode);
        }
        assert!(app.tour.is_none());
        assert_eq!(
            visited[..10],
            Mode::all(DEFAULT_CAPACITY).collect::<Vec<_>>()[..]
        );
        assert_eq!(
            visited[10],
            Mode::new(Stream::Stdout, Buffering::Line, DEFAULT_CAPACITY)
        );
        assert!(app.status.unwrap().starts_with("tour done"));
    }
}
