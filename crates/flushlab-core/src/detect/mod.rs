//! Finding the frames in a program's output stream, with no help from the program: a cursor
//! model of the terminal ([`screen`]) and the frame finder on top of it ([`frames`]). `flushlab
//! wrap` feeds it what a wrapped program writes; anything that holds such a stream can.

pub mod frames;
pub mod screen;
