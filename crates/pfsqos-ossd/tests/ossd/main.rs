//! The ossd's end-to-end tests on loopback, one binary: each module is one area.

mod common;
mod control;
mod limit_query;
mod metrics;
mod ossd;
mod sync;
mod tbf_conformance;
