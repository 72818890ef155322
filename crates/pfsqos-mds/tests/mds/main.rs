//! The MDS's end-to-end tests on loopback, one binary: each module is one area.

mod common;
mod destroy;
mod mds;
mod placers;
