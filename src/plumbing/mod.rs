//! The run's plumbing, shared by the commands and never naming one: the frame loop's parts
//! (`measured`, `renderer`, `ceiling`, `frame_args`; `frame_model`, the terminal model on
//! the frames), the user's terminal (`terminal_session`),
//! and what a bench hands the children it starts (`children`).

pub mod ceiling;
pub mod children;
pub mod frame_args;
pub mod frame_model;
pub mod measured;
pub mod renderer;
