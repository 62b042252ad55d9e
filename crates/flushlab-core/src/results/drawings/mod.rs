//! Drawings of results: the bench's SVG chart (`plot`), and a run's timeline as a trace for
//! Perfetto and the Firefox Profiler (`trace`) and as an SVG waterfall of its keys
//! (`waterfall`). They read the data and draw it; nothing reads them back.

pub mod plot;
pub mod trace;
pub mod waterfall;
