//! The explorer's state machine under generated input: any bytes a terminal can send, any
//! timing, any resize. No panic; the mode stays a real mode and the capacity in range.

use std::time::{Duration, Instant};

use flushlab::explorer::app::App;
use flushlab::explorer::hud::Hud;
use flushlab_core::meters::Meters;
use flushlab_core::scene::Scene;
use flushlab_core::units::{MAX_CAPACITY, MIN_CAPACITY};
use flushlab_core::writer_mode::{Buffering, DEFAULT_CAPACITY, Mode, Stream};
use flushlab_terminals::input::parse_keys;
use proptest::collection::vec;
use proptest::prelude::*;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

#[derive(Clone, Debug)]
enum Step {
    /// Bytes as one read from the terminal.
    Input(Vec<u8>),
    /// Time passing (the tour advances on it).
    Wait(u64),
    Resize(u16, u16),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => vec(any::<u8>(), 1..6).prop_map(Step::Input),
        // Bound keys often, so that the state really moves.
        4 => vec(prop::sample::select(b" \tolerbfw+-ysvth?z".to_vec()), 1..4).prop_map(Step::Input),
        2 => (0u64..3_000).prop_map(Step::Wait),
        1 => (0u16..300, 0u16..100).prop_map(|(c, r)| Step::Resize(c, r)),
    ]
}

proptest! {
    // 64 cases take 5 s here: the default tier tries a quarter of them, CI all.
    #![proptest_config(ProptestConfig::with_cases(if cfg!(feature = "slow-tests") { 64 } else { 16 }))]

    #[test]
    fn the_app_survives_anything(steps in vec(step(), 0..120), reachable in any::<[bool; 2]>()) {
        let start = Mode::new(Stream::Stdout, Buffering::Line, DEFAULT_CAPACITY);
        let mut app = App::new(start, Scene::Sparse, false);
        // The stream the app starts on always reaches the terminal.
        app.reachable = [true, reachable[1]];
        let mut now = Instant::now();
        let mut buf = Buffer::empty(Rect::new(0, 0, 80, 24));
        let (hud, meters) = (Hud::default(), Meters::new());
        for step in steps {
            match step {
                Step::Input(bytes) => {
                    for key in parse_keys(&bytes) {
                        app.apply(key.into(), now);
                    }
                }
                Step::Wait(ms) => now += Duration::from_millis(ms),
                Step::Resize(cols, rows) => buf = Buffer::empty(Rect::new(0, 0, cols, rows)),
            }
            app.tick(now);
            if app.quit {
                break;
            }
            hud.paint_frame(&app, &meters, 0, buf.area, &mut buf);

            let mode = app.mode;
            prop_assert!(Mode::all(mode.capacity).any(|m| m == mode), "{mode:?}");
            prop_assert!((MIN_CAPACITY..=MAX_CAPACITY).contains(&mode.capacity));
            prop_assert!(mode.capacity.is_power_of_two());
            prop_assert!(app.reachable[mode.stream as usize], "on an unreachable stream: {mode:?}");
            if let Some(tour) = &app.tour {
                prop_assert!(tour.index < tour.modes.len());
                prop_assert_eq!(tour.modes[tour.index].key(), mode.key());
            }
        }
    }
}
