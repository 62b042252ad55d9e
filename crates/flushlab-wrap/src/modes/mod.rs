//! The modes: what a wrap does with CMD, each from the plan to its report and files. One run
//! ([`one_run`]), `--compare` headless ([`compare`]) and in a terminal ([`pixel_compare`]),
//! `--against` ([`against`]); each runs CMD through [`side`] alone, the ones that run it more
//! than once on the [`rounds`] engine, and answers with the one [`ratio`].
//!
//! The top floor: a mode may import every other folder of the crate; nothing imports a mode.

pub mod against;
pub mod compare;
#[cfg(test)]
mod mock;
pub mod one_run;
pub mod pixel_compare;
pub mod ratio;
pub mod rounds;
pub mod side;
#[cfg(test)]
mod tests;
