//! The agent's and the coordinator's end-to-end tests, one binary (one link, and the slow
//! process-driving modules overlap): each module is one area.

mod common;
mod coordinator;
mod coordinator_emu;
mod dry_run;
mod e2e;
mod golden;
mod injection;
