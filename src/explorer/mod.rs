//! The explorer, where flushlab began: the full-screen app whose every cell changes each frame,
//! with its live gauge and the hotkeys that switch the writer. `App` holds the UI state,
//! `bindings` maps keys to actions once, `keyboard` reads them, `hud` draws the figures,
//! `lesson` is the explorer at a step, `big_digits` its gauge's figures.

pub mod app;
pub mod big_digits;
pub mod bindings;
pub mod hud;
pub mod lesson;
