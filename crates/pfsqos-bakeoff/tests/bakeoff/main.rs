//! The bake-off's end-to-end tests, one binary: each module is one area.

mod bakeoff;
mod shipped_suite;
