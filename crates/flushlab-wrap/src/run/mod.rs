//! One run of CMD while it runs: started in its pty with its observer ([`launch`]), watched
//! ([`running`], [`watch`], [`tree`]), read ([`reading`]), answered as a terminal answers
//! ([`answers`]), typed into ([`typing`]) or passed the user's own keys ([`interactive`]),
//! profiled ([`profiling`]), with wrap's own writes kept apart ([`own_writes`]).
//!
//! It imports the plan, the observers and the wire below it; never a report, a mode or a
//! terminal of `in_terminal`.

pub mod answers;
pub mod interactive;
pub mod launch;
pub mod own_writes;
pub mod profiling;
pub mod reading;
pub mod running;
pub mod tree;
pub mod typing;
pub mod watch;
