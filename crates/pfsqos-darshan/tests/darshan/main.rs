//! The Darshan reader's and converter's tests, one binary: each module is one area.

mod convert;
mod parse;
mod writer;
