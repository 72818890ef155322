//! One NRS head: FIFO always present as the fallback, TBF when started. Accepts the
//! administrator's controls as Lustre's own text (`nrs_policies`, `nrs_tbf_rule`).
//!
//! STUB: only `fifo` is accepted until the TBF policy lands; the interface is final.

use std::fmt;

use super::fifo::Fifo;
use super::{Dequeue, RequestScheduler};
use crate::model::RpcTags;

/// Error of a control write, with the errno Lustre would return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NrsError {
    pub errno: &'static str,
    pub message: String,
}

impl fmt::Display for NrsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.errno, self.message)
    }
}

impl std::error::Error for NrsError {}

/// An NRS head (one per CPU partition and queue).
#[derive(Debug)]
pub struct Nrs<P> {
    fifo: Fifo<P>,
}

impl<P> Default for Nrs<P> {
    fn default() -> Self {
        Nrs { fifo: Fifo::new() }
    }
}

impl<P> Nrs<P> {
    pub fn new() -> Self {
        Self::default()
    }

    /// `lctl set_param ost.OSS.ost_io.nrs_policies=<text>`.
    pub fn write_policies(&mut self, _now_ns: u64, text: &str) -> Result<(), NrsError> {
        match text.trim() {
            "fifo" => Ok(()),
            other => Err(NrsError {
                errno: "EINVAL",
                message: format!("policy `{other}` not available"),
            }),
        }
    }

    /// `lctl set_param ost.OSS.ost_io.nrs_tbf_rule=<text>`.
    pub fn write_tbf_rule(&mut self, _now_ns: u64, _text: &str) -> Result<(), NrsError> {
        Err(NrsError {
            errno: "EINVAL",
            message: "TBF is not started".to_string(),
        })
    }
}

impl<P> RequestScheduler<P> for Nrs<P> {
    fn enqueue(&mut self, now_ns: u64, tags: &RpcTags, payload: P) {
        self.fifo.enqueue(now_ns, tags, payload)
    }
    fn dequeue(&mut self, now_ns: u64) -> Dequeue<P> {
        self.fifo.dequeue(now_ns)
    }
    fn on_timer(&mut self, now_ns: u64) {
        self.fifo.on_timer(now_ns)
    }
    fn timer_deadline_ns(&self) -> Option<u64> {
        self.fifo.timer_deadline_ns()
    }
    fn queued(&self) -> usize {
        self.fifo.queued()
    }
}
