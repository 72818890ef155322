//! One NRS head: FIFO always present as the fallback, TBF when started. Accepts the
//! administrator's controls as Lustre's own text (`nrs_policies`, `nrs_tbf_rule`).
//!
//! Policy transitions are instantaneous here (Lustre's STOPPING/`EAGAIN` window is not
//! modelled). Requests never get lost across them: when TBF stops (`fifo`) or restarts with
//! another type, every request it still holds is moved to the FIFO in forced-dequeue order
//! (the order Lustre drains a stopping policy in). The head serves the FIFO before TBF, since
//! those requests are older than anything TBF receives afterwards; a TBF throttle still blocks
//! the whole head, FIFO included, as `ptlrpc_server_allow_normal` does.

use std::fmt;

use super::fifo::Fifo;
use super::tbf::listing::{CptRules, ListingForm, TbfRuleListing};
use super::tbf::{ClassType, NrsQueue, Tbf, TbfCommand, TbfConfig, TbfError};
use super::{Dequeue, RequestScheduler};
use crate::model::{JobId, LNet, NetKind, Nid, Opcode, RpcTags};

/// Placeholder tags for requests moved into the FIFO, which does not classify.
const DRAINED_TAGS: RpcTags = RpcTags {
    job: JobId::EMPTY,
    nid: Nid {
        addr: 0,
        net: LNet {
            kind: NetKind::Lo,
            num: 0,
        },
    },
    opcode: Opcode::OstRead,
    uid: 0,
    gid: 0,
};

/// Longest `nrs_policies` write accepted (the policy name plus a short argument).
pub const NRS_POLICIES_LEN_MAX: usize = 64;
/// Policies Lustre registers besides fifo and tbf; pfsqos does not implement them.
const OTHER_LUSTRE_POLICIES: [&str; 4] = ["crrn", "orr", "trr", "delay"];

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

impl From<TbfError> for NrsError {
    fn from(e: TbfError) -> Self {
        NrsError {
            errno: e.errno(),
            message: e.to_string(),
        }
    }
}

fn einval(message: String) -> NrsError {
    NrsError {
        errno: "EINVAL",
        message,
    }
}

#[derive(Debug)]
struct TbfPolicy<P> {
    /// The argument as written (`jobid`, `nid+jobid`, or empty), for the policy name.
    arg: String,
    tbf: Tbf<P>,
}

/// An NRS head (one per CPU partition and queue).
#[derive(Debug)]
pub struct Nrs<P> {
    queue: NrsQueue,
    config: TbfConfig,
    fifo: Fifo<P>,
    tbf: Option<TbfPolicy<P>>,
}

impl<P> Default for Nrs<P> {
    fn default() -> Self {
        Nrs::with_config(NrsQueue::Regular, TbfConfig::default())
    }
}

impl<P> Nrs<P> {
    /// A regular head with Lustre's default TBF parameters, running FIFO.
    pub fn new() -> Self {
        Self::default()
    }

    /// A head of the given queue; writes addressed with `reg`/`hp` to the other queue are
    /// accepted and ignored, as they target a different head.
    pub fn with_config(queue: NrsQueue, config: TbfConfig) -> Self {
        Nrs {
            queue,
            config,
            fifo: Fifo::new(),
            tbf: None,
        }
    }

    pub fn queue(&self) -> NrsQueue {
        self.queue
    }

    /// The primary policy's name as `nrs_policies` shows it: `fifo`, `tbf`, `tbf jobid`, ...
    pub fn policy_name(&self) -> String {
        match &self.tbf {
            None => "fifo".to_string(),
            Some(p) if p.arg.is_empty() => "tbf".to_string(),
            Some(p) => format!("tbf {}", p.arg),
        }
    }

    /// The TBF instance, when TBF is the running policy.
    pub fn tbf(&self) -> Option<&Tbf<P>> {
        self.tbf.as_ref().map(|p| &p.tbf)
    }

    /// Stops TBF (if running), moving its requests to the FIFO in dequeue order.
    fn stop_tbf(&mut self, now_ns: u64) {
        if let Some(mut old) = self.tbf.take() {
            for r in old.tbf.drain(now_ns) {
                // FIFO ignores the tags.
                self.fifo.enqueue(now_ns, &DRAINED_TAGS, r);
            }
        }
    }

    /// `lctl set_param ost.OSS.ost_io.nrs_policies=<text>`: `<policy> [reg|hp] [arg]`.
    pub fn write_policies(&mut self, now_ns: u64, text: &str) -> Result<(), NrsError> {
        if text.len() > NRS_POLICIES_LEN_MAX {
            return Err(einval(format!(
                "policy text longer than {NRS_POLICIES_LEN_MAX} bytes"
            )));
        }
        let mut tokens = text.split_whitespace().peekable();
        let policy = tokens
            .next()
            .ok_or_else(|| einval("empty policy".to_string()))?;
        let target = tokens.peek().and_then(|t| NrsQueue::from_prefix(t));
        if target.is_some() {
            tokens.next();
        }
        let arg = tokens.collect::<Vec<_>>().join(" ");
        match policy {
            "fifo" => {
                if !arg.is_empty() {
                    return Err(einval(format!("fifo takes no argument (got `{arg}`)")));
                }
                if target.unwrap_or(self.queue) == self.queue {
                    self.stop_tbf(now_ns);
                }
                Ok(())
            }
            "tbf" => {
                let class_type = ClassType::parse(&arg).map_err(einval)?;
                if target.is_some_and(|q| q != self.queue) {
                    return Ok(());
                }
                if let Some(p) = &self.tbf {
                    if p.tbf.class_type() == class_type {
                        // Same policy, same argument: nothing happens, rules are kept.
                        return Ok(());
                    }
                }
                self.stop_tbf(now_ns);
                self.tbf = Some(TbfPolicy {
                    arg,
                    tbf: Tbf::new(class_type, self.config),
                });
                Ok(())
            }
            p if OTHER_LUSTRE_POLICIES.contains(&p) => Err(einval(format!(
                "policy `{p}` exists in Lustre but is not implemented by pfsqos"
            ))),
            p => Err(einval(format!("unknown policy `{p}`"))),
        }
    }

    /// `lctl set_param ost.OSS.ost_io.nrs_tbf_rule=<text>`. Fails while TBF is not started.
    pub fn write_tbf_rule(&mut self, _now_ns: u64, text: &str) -> Result<(), NrsError> {
        let cmd = TbfCommand::parse_with_rate_max(text, self.config.rate_max_rpcs_per_s)?;
        self.apply_tbf_command(&cmd)
    }

    /// Applies an already parsed rule command.
    pub fn apply_tbf_command(&mut self, cmd: &TbfCommand) -> Result<(), NrsError> {
        let Some(p) = self.tbf.as_mut() else {
            return Err(TbfError::TbfNotStarted.into());
        };
        if cmd.queue.is_some_and(|q| q != self.queue) {
            return Ok(());
        }
        Ok(p.tbf.apply(cmd)?)
    }
}

/// `lctl get_param ost.OSS.ost_io.nrs_tbf_rule` over a service: the regular head of each CPT,
/// and the HP heads if the service has them. Fails when any head is not running TBF
/// (conf-sanity 117).
pub fn tbf_rule_listing<P>(
    regular: &[&Nrs<P>],
    high_priority: Option<&[&Nrs<P>]>,
    form: ListingForm,
) -> Result<TbfRuleListing, NrsError> {
    let section = |heads: &[&Nrs<P>]| -> Result<Vec<CptRules>, NrsError> {
        heads
            .iter()
            .enumerate()
            .map(|(cpt, h)| {
                let tbf = h.tbf().ok_or(TbfError::TbfNotStarted)?;
                Ok(CptRules {
                    cpt: cpt as u32,
                    rules: tbf.listing(form),
                })
            })
            .collect()
    };
    Ok(TbfRuleListing {
        regular: section(regular)?,
        high_priority: high_priority.map(section).transpose()?,
    })
}

impl<P> RequestScheduler<P> for Nrs<P> {
    fn enqueue(&mut self, now_ns: u64, tags: &RpcTags, payload: P) {
        match self.tbf.as_mut() {
            Some(p) => p.tbf.enqueue(now_ns, tags, payload),
            None => self.fifo.enqueue(now_ns, tags, payload),
        }
    }

    fn dequeue(&mut self, now_ns: u64) -> Dequeue<P> {
        if let Some(p) = self.tbf.as_mut() {
            if let Some(until_ns) = p.tbf.throttled_until(now_ns) {
                if p.tbf.queued() > 0 || self.fifo.queued() > 0 {
                    return Dequeue::Throttled { until_ns };
                }
            }
        }
        if self.fifo.queued() > 0 {
            return self.fifo.dequeue(now_ns);
        }
        match self.tbf.as_mut() {
            Some(p) => p.tbf.dequeue(now_ns),
            None => Dequeue::Empty,
        }
    }

    fn on_timer(&mut self, now_ns: u64) {
        if let Some(p) = self.tbf.as_mut() {
            p.tbf.on_timer(now_ns);
        }
    }

    fn timer_deadline_ns(&self) -> Option<u64> {
        self.tbf.as_ref().and_then(|p| p.tbf.timer_deadline_ns())
    }

    fn queued(&self) -> usize {
        self.fifo.queued() + self.tbf.as_ref().map_or(0, |p| p.tbf.queued())
    }
}
