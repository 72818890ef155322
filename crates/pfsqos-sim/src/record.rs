//! What a run produces. The types live in [`pfsqos_core::run`] (live runs recorded by
//! `pfsqos stat` fill them too, and reports read them without the simulator); this module keeps
//! the simulator's old paths.

pub use pfsqos_core::run::*;
