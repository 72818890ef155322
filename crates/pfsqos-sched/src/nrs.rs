//! One NRS head: FIFO always present as the fallback, and one primary policy from the
//! scheduler registry ([`nrs_policy_rows`]: TBF, CRR-N, SFQ(D), DSFQ, ThemisIO, mClock) when started. Accepts the
//! administrator's controls as Lustre's own text (`nrs_policies`, `nrs_tbf_rule`, and each
//! policy's own parameter files such as `nrs_dsfq_weight`).
//!
//! Policy transitions are instantaneous here (Lustre's STOPPING/`EAGAIN` window is not
//! modelled). Requests never get lost across them: when the primary policy stops (`fifo`) or
//! restarts with another argument, every request it still holds is moved to the FIFO in its
//! drain order (TBF: forced-dequeue order, the order Lustre drains a stopping policy in;
//! SFQ: start-tag order). Requests a depth-limited policy dispatched before it stopped
//! complete without reaching its successor (service tickets). The
//! head serves the FIFO before the primary policy, since those requests are older than
//! anything it receives afterwards; a TBF throttle still blocks the whole head, FIFO
//! included, as `ptlrpc_server_allow_normal` does.

use std::fmt;

use crate::errno::Errno;

use super::fifo::Fifo;
use super::sfq::Sfq;
use super::tbf::kstrto::strsep;
use super::tbf::listing::{CptRules, ListingForm, TbfRuleListing};
use super::tbf::{LustreVersion, NrsQueue, Tbf, TbfError};
use super::{Dequeue, RequestScheduler, ServiceReport, SyncRejection};
use crate::model::RpcTags;
use crate::policy::einval;
pub use crate::policy::{
    NrsConfig, NrsError, NrsPolicy, NrsPolicyDescriptor, ParamValue, StartPolicy,
};

/// Placeholder tags for requests moved into the FIFO, which does not classify.
const DRAINED_TAGS: RpcTags = RpcTags::UNKNOWN;

/// Longest `nrs_policies` write accepted: `LPROCFS_NRS_WR_MAX_CMD` (policy name 16 + " reg"
/// + argument 1024) less one (`lproc_ptlrpc.c`, `ptlrpc_lprocfs_nrs_policies_seq_write`).
pub const NRS_POLICIES_LEN_MAX: usize = 16 + 4 + 1024 - 1;
/// Longest policy name (`NRS_POL_NAME_MAX` = 16 with the terminator).
pub const NRS_POLICY_NAME_LEN_MAX: usize = 15;
/// Longest policy argument (`NRS_POL_ARG_MAX` = 16 with the terminator, `nrs.c`
/// `nrs_policy_start_locked`).
pub const NRS_POLICY_ARG_LEN_MAX: usize = 15;
/// Policies Lustre registers besides fifo and tbf; pfsqos does not implement them.
const OTHER_LUSTRE_POLICIES: [&str; 3] = ["orr", "trr", "delay"];

/// The policy that owns parameter file `param` (ENOENT if none does).
fn param_owner<P: Send + 'static>(param: &str) -> Result<NrsPolicyDescriptor<P>, NrsError> {
    nrs_policy_rows::<P>()
        .into_iter()
        .find(|r| r.params.contains(&param))
        .ok_or_else(|| NrsError {
            errno: Errno::ENOENT,
            message: format!("no policy has a parameter `{param}`"),
        })
}

pub use crate::tbf::PARAM_TBF_RULE;

/// The scheduler registry: every primary policy a head can run, each from its own
/// descriptor (FIFO, the fallback, is always there and is not listed).
///
/// * `tbf`: Lustre's Token Bucket Filter ([`super::tbf`]).
/// * `crrn`: Lustre's Client Round-Robin over NIDs ([`super::crrn`]).
/// * `sfqd`: start-time fair queuing with depth D ([`super::sfq`], vPFS's [6]).
/// * `dsfq`: the same with DSFQ's delay term and vPFS's synchronization ([`super::sfq`]).
/// * `themis`: ThemisIO's lottery over jobs, users or groups ([`super::themis`]).
/// * `mclock`: mClock's reservation, weight and limit per class ([`super::mclock`]).
///
/// Named as Lustre names its policies (short, lower case, the algorithm's usual name: `crrn`,
/// `orr`, `tbf`): `sfqd` is "SFQ(D)" without the parentheses, which `lctl` would need quoted,
/// and `dsfq` is the DSFQ paper's own name; vPFS's variants (threshold, layout, NWC) are
/// tunables of `dsfq` rather than more entries, because they share every tag and queue.
pub fn nrs_policy_rows<P: Send + 'static>() -> Vec<NrsPolicyDescriptor<P>> {
    vec![
        super::tbf::descriptor(),
        super::crrn::descriptor(),
        super::sfq::sfqd_descriptor(),
        super::sfq::dsfq_descriptor(),
        super::themis::descriptor(),
        super::mclock::descriptor(),
    ]
}

/// The running primary policy and the registry name it was started under.
struct Primary<P> {
    name: &'static str,
    /// The argument it was started with, as written (`jobid`, `nid+jobid`, or empty:
    /// Lustre's `pol_arg`), for the policy name and the "same argument" test.
    arg: String,
    policy: Box<dyn NrsPolicy<P>>,
    /// Which start of a primary policy on this head this is (from 1).
    epoch: u32,
}

/// Where a request a head handed out came from, so its completion reaches the policy
/// instance that dispatched it and no other: a request served from the FIFO (moved there when
/// its policy stopped) or dispatched by an instance since replaced completes without telling
/// the running policy (a depth-limited policy would otherwise miscount what it has
/// outstanding). The driver keeps it with the request and hands it back at completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceTicket {
    /// The primary policy's epoch, 0 for the FIFO.
    epoch: u32,
}

impl<P> fmt::Debug for Primary<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Primary")
            .field("name", &self.name)
            .field("arg", &self.arg)
            .field("queued", &self.policy.queued())
            .finish()
    }
}

/// An NRS head (one per CPU partition and queue).
#[derive(Debug)]
pub struct Nrs<P> {
    queue: NrsQueue,
    config: NrsConfig,
    fifo: Fifo<P>,
    primary: Option<Primary<P>>,
    /// Primary policies started on this head so far.
    epochs: u32,
}

impl<P: Send + 'static> Default for Nrs<P> {
    fn default() -> Self {
        Nrs::with_config(NrsQueue::Regular, NrsConfig::default())
    }
}

impl<P: Send + 'static> Nrs<P> {
    /// A regular head with Lustre's default TBF parameters, running FIFO.
    pub fn new() -> Self {
        Self::default()
    }

    /// A head of the given queue; writes addressed with `reg`/`hp` to the other queue are
    /// accepted and ignored, as they target a different head.
    pub fn with_config(queue: NrsQueue, config: NrsConfig) -> Self {
        Nrs {
            queue,
            config,
            fifo: Fifo::new(),
            primary: None,
            epochs: 0,
        }
    }

    pub fn queue(&self) -> NrsQueue {
        self.queue
    }

    /// The primary policy's name as `nrs_policies` shows it: `fifo`, `tbf`, `tbf jobid`, ...
    pub fn policy_name(&self) -> String {
        match &self.primary {
            None => "fifo".to_string(),
            Some(p) if p.arg.is_empty() => p.name.to_string(),
            Some(p) => format!("{} {}", p.name, p.arg),
        }
    }

    /// The running primary policy, when it is a `T`: the head itself names no policy.
    pub fn running<T: 'static>(&self) -> Option<&T> {
        self.primary
            .as_ref()
            .and_then(|p| p.policy.as_any().downcast_ref::<T>())
    }

    /// The TBF instance, when TBF is the running policy.
    pub fn tbf(&self) -> Option<&Tbf<P>> {
        self.running::<Tbf<P>>()
    }

    /// The SFQ(D)/DSFQ instance, when `sfqd` or `dsfq` is the running policy.
    pub fn sfq(&self) -> Option<&Sfq<P>> {
        self.running::<Sfq<P>>()
    }

    /// What a registry policy's own parameter file reads as on this head: ENOENT if no row
    /// owns it, ENODEV if its owner is not the running policy.
    pub fn read_policy_param(&self, param: &str) -> Result<ParamValue, NrsError> {
        let owner = param_owner::<P>(param)?;
        match self.primary.as_ref() {
            Some(p) if p.name == owner.name => p.policy.read_param(param),
            _ => Err(NrsError {
                errno: Errno::ENODEV,
                message: format!("policy `{}` is not started", owner.name),
            }),
        }
    }

    /// Stops the primary policy (if one runs), moving its requests to the FIFO in its drain
    /// order.
    fn stop_primary(&mut self, now_ns: u64) {
        if let Some(mut old) = self.primary.take() {
            for r in old.policy.drain(now_ns) {
                // FIFO ignores the tags.
                self.fifo.enqueue(now_ns, &DRAINED_TAGS, r);
            }
            assert_eq!(old.policy.queued(), 0, "a drained policy holds nothing");
        }
    }

    /// The version whose TBF this head emulates.
    pub fn version(&self) -> LustreVersion {
        self.config.version
    }

    /// `lctl set_param ost.OSS.ost_io.nrs_policies=<text>`: `<policy> [reg|hp] [arg]`, split
    /// on single spaces as `ptlrpc_lprocfs_nrs_policies_seq_write` does (no trimming: a
    /// trailing newline is part of the last token). Then `nrs_policy_start_locked`: an
    /// argument of 16 characters or more is EINVAL, for fifo too; fifo ignores any shorter
    /// argument and stops the primary policy; the running policy with the same argument text
    /// keeps its state (TBF its rules); another policy or argument stops first and then
    /// starts, so a bad new argument leaves FIFO running and the error returned (the rules
    /// are gone either way). Policy names come from the registry ([`nrs_policy_rows`]).
    pub fn write_policies(&mut self, now_ns: u64, text: &str) -> Result<(), NrsError> {
        if text.len() > NRS_POLICIES_LEN_MAX {
            return Err(einval(format!(
                "policy text longer than {NRS_POLICIES_LEN_MAX} bytes"
            )));
        }
        let (policy, rest) = strsep(text, ' ');
        if policy.len() > NRS_POLICY_NAME_LEN_MAX {
            return Err(einval(format!("policy name `{policy}` is too long")));
        }
        let (target, arg) = match rest {
            None => (None, None),
            Some(rest) => {
                let (queue, after) = strsep(rest, ' ');
                match NrsQueue::from_prefix(queue) {
                    Some(q) => (Some(q), after),
                    None => (None, Some(rest)),
                }
            }
        };
        let row = nrs_policy_rows::<P>()
            .into_iter()
            .find(|r| r.name == policy);
        if policy != "fifo" && row.is_none() {
            if OTHER_LUSTRE_POLICIES.contains(&policy) {
                return Err(einval(format!(
                    "policy `{policy}` exists in Lustre but is not implemented by pfsqos"
                )));
            }
            return Err(NrsError {
                errno: Errno::ENOENT,
                message: format!("unknown policy `{policy}`"),
            });
        }
        if target.is_some_and(|q| q != self.queue) {
            return Ok(());
        }
        if let Some(a) = arg.filter(|a| a.len() > NRS_POLICY_ARG_LEN_MAX) {
            return Err(einval(format!(
                "policy argument `{a}` is longer than {NRS_POLICY_ARG_LEN_MAX} characters"
            )));
        }
        let Some(row) = row else {
            // fifo
            self.stop_primary(now_ns);
            return Ok(());
        };
        if let Some(p) = &self.primary {
            // Same policy, same argument text: nothing happens, state is kept.
            if p.name == row.name && p.arg == arg.unwrap_or("") {
                return Ok(());
            }
        }
        self.stop_primary(now_ns);
        let policy = (row.start)(arg, &self.config)?;
        assert_eq!(policy.queued(), 0, "a policy starts empty");
        // Wrapping is harmless: a ticket four billion starts old is long completed.
        self.epochs = self.epochs.wrapping_add(1).max(1);
        self.primary = Some(Primary {
            name: row.name,
            arg: arg.unwrap_or("").to_string(),
            policy,
            epoch: self.epochs,
        });
        Ok(())
    }

    /// A write to a policy's own parameter file (`param` as its descriptor lists it):
    /// ENOENT if no policy owns it; while its owner is not running, what the owner's
    /// descriptor answers ([`NrsPolicyDescriptor::stopped_write`], by default ENODEV, as
    /// Lustre answers for a stopped policy's file); else the policy's answer.
    pub fn write_policy_param(
        &mut self,
        now_ns: u64,
        param: &str,
        text: &str,
    ) -> Result<(), NrsError> {
        let owner = param_owner::<P>(param)?;
        let queue = self.queue;
        match self.primary.as_mut() {
            Some(p) if p.name == owner.name => p.policy.write_param(param, queue, now_ns, text),
            _ => match owner.stopped_write {
                Some(stopped_write) => stopped_write(param, text, queue, self.config.version),
                None => Err(NrsError {
                    errno: Errno::ENODEV,
                    message: format!("policy `{}` is not started", owner.name),
                }),
            },
        }
    }

    /// The next request for a service thread, with the ticket its completion must bring back
    /// ([`Nrs::complete`]). The FIFO goes first (its requests are older than anything the
    /// primary policy received since), but a TBF throttle holds the whole head.
    pub fn dequeue_for_service(&mut self, now_ns: u64) -> Dequeue<(P, ServiceTicket)> {
        if let Some(p) = self.primary.as_mut() {
            if let Some(until_ns) = p.policy.head_throttled_until(now_ns) {
                if p.policy.queued() > 0 || self.fifo.queued() > 0 {
                    return Dequeue::Throttled { until_ns };
                }
            }
        }
        if let Dequeue::Request(r) = self.fifo.dequeue(now_ns) {
            return Dequeue::Request((r, ServiceTicket { epoch: 0 }));
        }
        match self.primary.as_mut() {
            Some(p) => match p.policy.dequeue(now_ns) {
                Dequeue::Request(r) => Dequeue::Request((r, ServiceTicket { epoch: p.epoch })),
                Dequeue::Throttled { until_ns } => Dequeue::Throttled { until_ns },
                Dequeue::Empty => Dequeue::Empty,
            },
            None => Dequeue::Empty,
        }
    }

    /// A request handed out with `ticket` finished at `now_ns`: the running policy learns it
    /// only if it dispatched the request itself. Returns whether it was told.
    pub fn complete(
        &mut self,
        now_ns: u64,
        ticket: ServiceTicket,
        tags: &RpcTags,
        cost: u64,
    ) -> bool {
        match self.primary.as_mut() {
            Some(p) if ticket.epoch != 0 && p.epoch == ticket.epoch => {
                p.policy.on_complete(now_ns, tags, cost);
                true
            }
            _ => false,
        }
    }
}

/// Applies one `nrs_policies` or `nrs_tbf_rule` write to a service's heads as
/// `ptlrpc_nrs_policy_control` does: partition by partition, the regular head and then the HP
/// head, stopping at the first error. Heads after the failing one are left as they were, so a
/// partial effect (`change a rate=N rank=missing` sets the rate on the first head only) stays
/// on the heads Lustre would have changed.
pub fn write_service<'a, P: 'a>(
    heads: impl IntoIterator<Item = &'a mut Nrs<P>>,
    mut write: impl FnMut(&mut Nrs<P>) -> Result<(), NrsError>,
) -> Result<(), NrsError> {
    for head in heads {
        write(head)?;
    }
    Ok(())
}

/// `lctl get_param ost.OSS.ost_io.nrs_tbf_rule` over a service: the regular head of each CPT,
/// and the HP heads if the service has them (`ptlrpc_lprocfs_nrs_tbf_rule_seq_show`). A
/// regular queue without TBF is skipped (its ENODEV is ignored) and prints an empty section;
/// an HP queue without TBF, or no TBF at all, fails with ENODEV (conf-sanity 117).
pub fn tbf_rule_listing<P: Send + 'static>(
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
    let regular = section(regular);
    match high_priority {
        None => Ok(TbfRuleListing {
            regular: regular?,
            high_priority: None,
        }),
        Some(hp) => Ok(TbfRuleListing {
            regular: regular.unwrap_or_default(),
            high_priority: Some(section(hp)?),
        }),
    }
}

/// `lctl get_param ost.OSS.ost_io.<param>` for a registry policy's own file (other than
/// `nrs_tbf_rule`) over a service. Listings (weights, flows) print as `nrs_tbf_rule` does:
/// `regular_requests:` then `CPT n:` and the head's lines, then the HP section if the service
/// has HP heads. Scalars print as Lustre's `nrs_orr_quantum`: `reg_<name>:<value>` and
/// `hp_<name>:<value>` (the first head of each queue; every write reaches them all), where
/// `<name>` is the file name after `nrs_<policy>_`. A queue whose heads do not run the
/// owner is skipped, and ENODEV if none does (as `nrs_tbf_rule`).
pub fn policy_param_text<P: Send + 'static>(
    regular: &[&Nrs<P>],
    high_priority: Option<&[&Nrs<P>]>,
    param: &str,
) -> Result<String, NrsError> {
    use std::fmt::Write;
    let suffix = param.splitn(3, '_').nth(2).unwrap_or(param);
    let mut sections: Vec<(NrsQueue, Vec<ParamValue>)> = Vec::new();
    let mut first_err = None;
    let queues = [
        (NrsQueue::Regular, Some(regular)),
        (NrsQueue::HighPriority, high_priority),
    ];
    for (queue, heads) in queues {
        let Some(heads) = heads else { continue };
        match heads.iter().map(|h| h.read_policy_param(param)).collect() {
            Ok(values) => sections.push((queue, values)),
            Err(e) => {
                if e.errno == Errno::ENOENT {
                    return Err(e);
                }
                first_err.get_or_insert(e);
            }
        }
    }
    if sections.is_empty() {
        return Err(first_err.unwrap_or(NrsError {
            errno: Errno::ENODEV,
            message: "no head".into(),
        }));
    }
    let mut out = String::new();
    for (queue, values) in sections {
        match values.first() {
            Some(ParamValue::Scalar(v)) => {
                let _ = writeln!(out, "{}_{suffix}:{v}", queue.prefix());
            }
            _ => {
                let title = match queue {
                    NrsQueue::Regular => "regular_requests",
                    NrsQueue::HighPriority => "high_priority_requests",
                };
                let _ = writeln!(out, "{title}:");
                for (cpt, v) in values.iter().enumerate() {
                    let _ = writeln!(out, "CPT {cpt}:");
                    if let ParamValue::Lines(lines) = v {
                        out.push_str(lines);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Policies in Lustre's registration order, as `nrs_policies` lists them.
const LUSTRE_POLICY_ORDER: [&str; 6] = ["fifo", "crrn", "orr", "trr", "tbf", "delay"];

/// In-service request counts of one queue, summed over CPTs, for the `active:` lines. Only the
/// driver knows them; they are attributed to the primary policy (TBF when started).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActiveRpcs {
    pub active: u64,
}

fn policies_section<P: Send + 'static>(out: &mut String, heads: &[&Nrs<P>], active: ActiveRpcs) {
    use std::fmt::Write;
    // The primary policy of the first head names the started entry (heads of one queue run
    // the same policy: every write reaches them all).
    let started = heads
        .first()
        .and_then(|h| h.primary.as_ref().map(|p| (p.name, h.policy_name())));
    // Lustre's registration order, then pfsqos's own registry rows.
    let mut order = LUSTRE_POLICY_ORDER.to_vec();
    for row in nrs_policy_rows::<P>() {
        if !order.contains(&row.name) {
            order.push(row.name);
        }
    }
    for policy in order {
        let (name, state, queued, act) = match (policy, &started) {
            ("fifo", _) => {
                let queued: usize = heads.iter().map(|h| h.fifo.queued()).sum();
                let act = if started.is_some() { 0 } else { active.active };
                ("fifo".to_string(), "started", queued, act)
            }
            (p, Some((name, shown))) if p == *name => {
                let queued: usize = heads
                    .iter()
                    .filter_map(|h| h.primary.as_ref())
                    .map(|p| p.policy.queued())
                    .sum();
                (shown.clone(), "started", queued, active.active)
            }
            (other, _) => (other.to_string(), "stopped", 0, 0),
        };
        let fallback = if policy == "fifo" { "yes" } else { "no" };
        let _ = write!(
            out,
            "  - name: {name}\n    state: {state}\n    fallback: {fallback}\n    \
             queued: {queued:<20}\n    active: {act:<20}\n\n"
        );
    }
}

/// `lctl get_param -n ost.OSS.ost_io.nrs_policies` (YAML, §6.3): one entry per registered
/// policy, queued/active summed over the CPTs, left-justified in 20 columns.
pub fn nrs_policies_yaml<P: Send + 'static>(
    regular: &[&Nrs<P>],
    regular_active: ActiveRpcs,
    high_priority: Option<(&[&Nrs<P>], ActiveRpcs)>,
) -> String {
    let mut out = String::from("\nregular_requests:\n");
    policies_section(&mut out, regular, regular_active);
    if let Some((heads, active)) = high_priority {
        out.push_str("high_priority_requests:\n");
        policies_section(&mut out, heads, active);
    }
    out
}

impl<P: Send + 'static> RequestScheduler<P> for Nrs<P> {
    fn enqueue_with_cost(&mut self, now_ns: u64, tags: &RpcTags, cost: u64, payload: P) {
        match self.primary.as_mut() {
            Some(p) => p.policy.enqueue_with_cost(now_ns, tags, cost, payload),
            None => self.fifo.enqueue_with_cost(now_ns, tags, cost, payload),
        }
    }

    fn dequeue(&mut self, now_ns: u64) -> Dequeue<P> {
        match self.dequeue_for_service(now_ns) {
            Dequeue::Request((p, _)) => Dequeue::Request(p),
            Dequeue::Throttled { until_ns } => Dequeue::Throttled { until_ns },
            Dequeue::Empty => Dequeue::Empty,
        }
    }

    fn on_timer(&mut self, now_ns: u64) {
        if let Some(p) = self.primary.as_mut() {
            p.policy.on_timer(now_ns);
        }
    }

    fn timer_deadline_ns(&self) -> Option<u64> {
        self.primary
            .as_ref()
            .and_then(|p| p.policy.timer_deadline_ns())
    }

    fn queued(&self) -> usize {
        self.fifo.queued() + self.primary.as_ref().map_or(0, |p| p.policy.queued())
    }

    /// Without a ticket the head cannot tell whose request finished: drivers use
    /// [`Nrs::dequeue_for_service`] and [`Nrs::complete`] instead, and this tells nobody.
    fn on_complete(&mut self, _now_ns: u64, _tags: &RpcTags, _cost: u64) {}

    fn take_service_reports(&mut self) -> Vec<ServiceReport> {
        self.primary
            .as_mut()
            .map_or_else(Vec::new, |p| p.policy.take_service_reports())
    }

    fn presence_reports(&self) -> Vec<ServiceReport> {
        self.primary
            .as_ref()
            .map_or_else(Vec::new, |p| p.policy.presence_reports())
    }

    fn on_peer_service(
        &mut self,
        now_ns: u64,
        from_instance: u32,
        report: &ServiceReport,
    ) -> Result<(), SyncRejection> {
        match self.primary.as_mut() {
            Some(p) => p.policy.on_peer_service(now_ns, from_instance, report),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(job: &str) -> RpcTags {
        crate::test_write(job)
    }

    fn take_all(n: &mut Nrs<u32>, now: u64) -> Vec<u32> {
        let mut got = Vec::new();
        while let Dequeue::Request(r) = n.dequeue(now) {
            got.push(r);
        }
        got
    }

    /// The head's module parameters reach the policy that reads them, and only through the
    /// head: a TBF started on it takes its default rate and depth and the head's version, and
    /// another policy started on the same head starts just the same.
    #[test]
    fn the_heads_module_parameters_reach_the_policy_started_on_it() {
        let config = NrsConfig {
            tbf_default_rate_rpcs_per_s: 250,
            tbf_depth_tokens: 7,
            tbf_cache_size_classes: 100,
            ..NrsConfig::for_version(LustreVersion::V2_14)
        };
        assert_eq!(NrsConfig::from(config.tbf()), config, "round trip");
        let mut n: Nrs<u32> = Nrs::with_config(NrsQueue::Regular, config);
        assert_eq!(n.version(), LustreVersion::V2_14);
        n.write_policies(0, "tbf jobid").unwrap();
        assert_eq!(*n.tbf().unwrap().config(), config.tbf());
        n.write_policies(0, "crrn").unwrap();
        assert_eq!(n.policy_name(), "crrn");
        n.write_policies(0, "tbf jobid").unwrap();
        assert_eq!(n.tbf().unwrap().config().default_rate_rpcs_per_s, 250);
    }

    #[test]
    fn policy_switching_keeps_or_drops_rules_as_lustre_does() {
        let mut n: Nrs<u32> = Nrs::new();
        assert_eq!(n.policy_name(), "fifo");
        // While FIFO runs a start cannot be parsed (no type): EINVAL; change/stop: ENODEV.
        let errno = |n: &mut Nrs<u32>, t: &str| {
            n.write_policy_param(0, PARAM_TBF_RULE, t)
                .unwrap_err()
                .errno
        };
        assert_eq!(errno(&mut n, "start a jobid={a} rate=5"), Errno::EINVAL);
        assert_eq!(errno(&mut n, "change a rate=5"), Errno::ENODEV);
        assert_eq!(errno(&mut n, "stop a"), Errno::ENODEV);
        n.write_policies(0, "tbf jobid").unwrap();
        assert_eq!(n.policy_name(), "tbf jobid");
        n.write_policy_param(0, PARAM_TBF_RULE, "start a jobid={a} rate=5")
            .unwrap();
        // Same policy, same argument text: rules kept.
        n.write_policies(0, "tbf jobid").unwrap();
        assert_eq!(n.tbf().unwrap().rule_names(), vec!["a", "default"]);
        // Refused before anything changes: unknown policy (ENOENT), a policy pfsqos does not
        // implement, an argument of 16 characters or more, a newline after the name.
        for (bad, errno) in [
            ("frob", Errno::ENOENT),
            ("", Errno::ENOENT),
            ("tbf\n", Errno::ENOENT),
            ("orr", Errno::EINVAL),
            ("tbf jobid+opcode+uid", Errno::EINVAL),
            ("fifo 0123456789abcdef", Errno::EINVAL),
            ("tbfxxxxxxxxxxxxxxx", Errno::EINVAL),
        ] {
            assert_eq!(
                n.write_policies(0, bad).unwrap_err().errno,
                errno,
                "{bad:?}"
            );
            assert_eq!(n.tbf().unwrap().rule_names(), vec!["a", "default"]);
        }
        // A field the type does not enable.
        assert_eq!(errno(&mut n, "start b uid={1}"), Errno::EINVAL);
        // Another argument that fails: Lustre has already stopped TBF (nrs_policy_start_locked
        // stops a started policy before starting it again), so FIFO runs and rules are gone.
        assert_eq!(
            n.write_policies(0, "tbf bogus").unwrap_err().errno,
            Errno::EINVAL
        );
        assert_eq!(n.policy_name(), "fifo");
        n.write_policies(0, "tbf jobid").unwrap();
        // Different argument text, even for the same fields: restart, only default remains.
        n.write_policy_param(0, PARAM_TBF_RULE, "start a jobid={a} rate=5")
            .unwrap();
        n.write_policies(0, "tbf jobid+").unwrap();
        assert_eq!(n.policy_name(), "tbf jobid+");
        assert_eq!(n.tbf().unwrap().rule_names(), vec!["default"]);
        n.write_policies(0, "tbf nid").unwrap();
        assert_eq!(n.tbf().unwrap().rule_names(), vec!["default"]);
        n.write_policies(0, "tbf").unwrap();
        assert_eq!(n.policy_name(), "tbf");
        // fifo ignores a short argument.
        n.write_policies(0, "fifo x").unwrap();
        assert!(n.tbf().is_none());
        // `tbf ` (empty argument) and `tbf  jobid` (empty first type name) are refused.
        for bad in ["tbf ", "tbf  jobid"] {
            assert_eq!(n.write_policies(0, bad).unwrap_err().errno, Errno::EINVAL);
        }
        // A write addressed to the other queue is ignored by this head.
        n.write_policies(0, "tbf hp jobid").unwrap();
        assert_eq!(n.policy_name(), "fifo");
        n.write_policies(0, "tbf reg jobid").unwrap();
        assert_eq!(n.policy_name(), "tbf jobid");
        n.write_policies(0, "tbf reg").unwrap();
        assert_eq!(n.policy_name(), "tbf");
        n.write_policy_param(0, PARAM_TBF_RULE, "hp start h jobid={h}")
            .unwrap();
        assert_eq!(n.tbf().unwrap().rule_names(), vec!["default"]);
    }

    /// A policy's own parameter files are reached by name through the registry: TBF's rule
    /// file as TBF's rule file, a file no row owns is ENOENT.
    #[test]
    fn policy_parameters_route_through_the_registry() {
        let mut n: Nrs<u32> = Nrs::new();
        let errno =
            |n: &mut Nrs<u32>, p: &str, t: &str| n.write_policy_param(0, p, t).unwrap_err().errno;
        assert_eq!(errno(&mut n, "nrs_frob_weight", "a=2"), Errno::ENOENT);
        assert_eq!(errno(&mut n, "nrs_sfqd_weight", "stop a"), Errno::ENODEV);
        assert_eq!(
            errno(&mut n, PARAM_TBF_RULE, "change a rate=5"),
            Errno::ENODEV
        );
        n.write_policies(0, "tbf jobid").unwrap();
        n.write_policy_param(0, PARAM_TBF_RULE, "start a jobid={a} rate=5")
            .unwrap();
        assert_eq!(n.tbf().unwrap().rule_names(), vec!["a", "default"]);
        // Every registry row's files are distinct and named like Lustre's (`nrs_<policy>_...`).
        let rows = nrs_policy_rows::<u32>();
        let mut all: Vec<&str> = rows.iter().flat_map(|r| r.params.iter().copied()).collect();
        for r in &rows {
            for p in r.params {
                assert!(p.starts_with(&format!("nrs_{}_", r.name)), "{p}");
            }
        }
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count);
    }

    /// A completion reaches the policy instance that dispatched the request and no other.
    #[test]
    fn completions_reach_only_the_instance_that_dispatched() {
        let mut n: Nrs<u32> = Nrs::new();
        let take = |n: &mut Nrs<u32>| match n.dequeue_for_service(0) {
            Dequeue::Request(r) => r,
            other => panic!("{other:?}"),
        };
        n.enqueue(0, &tags("a"), 1);
        let (_, fifo_ticket) = take(&mut n);
        n.write_policies(0, "tbf jobid").unwrap();
        n.enqueue(0, &tags("a"), 2);
        n.enqueue(0, &tags("a"), 3);
        let (_, tbf_ticket) = take(&mut n);
        assert_ne!(fifo_ticket, tbf_ticket);
        assert!(
            !n.complete(0, fifo_ticket, &tags("a"), 1),
            "served by the FIFO"
        );
        assert!(n.complete(0, tbf_ticket, &tags("a"), 1));
        // Restarted with another type: request 3 is moved to the FIFO, and the old instance's
        // tickets no longer reach the new one.
        n.write_policies(0, "tbf nid").unwrap();
        let (r, moved) = take(&mut n);
        assert_eq!((r, moved), (3, fifo_ticket));
        assert!(!n.complete(0, tbf_ticket, &tags("a"), 1));
        n.enqueue(0, &tags("a"), 4);
        let (_, new_ticket) = take(&mut n);
        assert!(n.complete(0, new_ticket, &tags("a"), 1));
        assert_ne!(new_ticket, tbf_ticket);
    }

    #[test]
    fn switching_policy_moves_queued_requests_to_fifo_in_dequeue_order() {
        let mut n: Nrs<u32> = Nrs::new();
        n.write_policies(0, "tbf jobid").unwrap();
        n.write_policy_param(0, PARAM_TBF_RULE, "start a jobid={a} rate=1")
            .unwrap();
        for i in 0..5 {
            n.enqueue(0, &tags("a"), i);
        }
        n.enqueue(0, &tags("b"), 9);
        assert_eq!(take_all(&mut n, 0), vec![9, 0, 1, 2]);
        assert_eq!(n.timer_deadline_ns(), Some(1_000_000_000));
        // Restart with another type: nothing is lost, the old requests go first.
        n.write_policies(10, "tbf nid").unwrap();
        assert_eq!((n.queued(), n.timer_deadline_ns()), (2, None));
        n.enqueue(10, &tags("c"), 20);
        assert_eq!(take_all(&mut n, 10), vec![3, 4, 20]);
        n.write_policy_param(0, PARAM_TBF_RULE, "start slow nid={10.0.0.1@tcp} rate=1")
            .unwrap();
        for i in 30..35 {
            n.enqueue(20, &tags("d"), i);
        }
        assert_eq!(take_all(&mut n, 20), vec![30, 31, 32]);
        n.write_policies(30, "fifo").unwrap();
        assert_eq!(take_all(&mut n, 30), vec![33, 34]);
        assert_eq!(n.dequeue(30), Dequeue::Empty);
    }

    #[test]
    fn throttle_blocks_the_fifo_too() {
        let mut n: Nrs<u32> = Nrs::new();
        n.write_policies(0, "tbf jobid").unwrap();
        n.write_policy_param(0, PARAM_TBF_RULE, "start a jobid={a} rate=1")
            .unwrap();
        for i in 0..5 {
            n.enqueue(0, &tags("a"), i);
        }
        n.write_policies(0, "tbf").unwrap(); // 5 requests now in the FIFO
        n.write_policy_param(0, PARAM_TBF_RULE, "start a jobid={x} rate=1")
            .unwrap();
        for i in 10..14 {
            n.enqueue(0, &tags("x"), i);
        }
        assert_eq!(take_all(&mut n, 0), vec![0, 1, 2, 3, 4, 10, 11, 12]);
        n.enqueue(0, &tags("y"), 50);
        // The root `x` is out of tokens; everything on the head waits.
        assert_eq!(
            n.dequeue(0),
            Dequeue::Throttled {
                until_ns: 100_000 // y's deadline moved the timer earlier
            }
        );
    }

    /// The §6.1 example: `tbf jobid` on an OSS with 2 CPTs and an HP queue.
    #[test]
    fn rule_listing_matches_the_lustre_example() {
        let mut heads: Vec<Nrs<u32>> = (0..4)
            .map(|k| {
                let q = if k < 2 {
                    NrsQueue::Regular
                } else {
                    NrsQueue::HighPriority
                };
                Nrs::with_config(q, NrsConfig::default())
            })
            .collect();
        assert_eq!(
            tbf_rule_listing(&[&heads[0], &heads[1]], None, ListingForm::Legacy)
                .unwrap_err()
                .errno,
            Errno::ENODEV
        );
        for h in heads.iter_mut() {
            h.write_policies(0, "tbf jobid").unwrap();
            for cmd in [
                "start slurm_low jobid={4151234 4151235} rate=200",
                "start dd_all jobid={dd.*} rate=50",
                "start vip jobid={4150001} rate=5000 rank=dd_all",
            ] {
                h.write_policy_param(0, PARAM_TBF_RULE, cmd).unwrap();
            }
        }
        let load = |h: &mut Nrs<u32>, jobs: &[&str]| {
            for job in jobs {
                h.enqueue(0, &tags(job), 0);
            }
            take_all(h, 0);
        };
        let others: Vec<String> = (0..7).map(|k| format!("other{k}")).collect();
        let mut cpt0 = vec!["dd.0", "dd.1", "4151234"];
        cpt0.extend(others.iter().map(String::as_str));
        load(&mut heads[0], &cpt0);
        let mut cpt1 = vec!["4150001", "4151234", "4151235"];
        cpt1.extend(others[..4].iter().map(String::as_str));
        load(&mut heads[1], &cpt1);
        load(&mut heads[2], &["other0"]);
        let [r0, r1, h0, h1] = [&heads[0], &heads[1], &heads[2], &heads[3]];
        let listing = tbf_rule_listing(&[r0, r1], Some(&[h0, h1]), ListingForm::Legacy).unwrap();
        let expected = "regular_requests:
CPT 0:
vip {4150001} 5000, ref 0
dd_all {dd.*} 50, ref 2
slurm_low {4151234 4151235} 200, ref 1
default {*} 10000, ref 7
CPT 1:
vip {4150001} 5000, ref 1
dd_all {dd.*} 50, ref 0
slurm_low {4151234 4151235} 200, ref 2
default {*} 10000, ref 4
high_priority_requests:
CPT 0:
vip {4150001} 5000, ref 0
dd_all {dd.*} 50, ref 0
slurm_low {4151234 4151235} 200, ref 0
default {*} 10000, ref 1
CPT 1:
vip {4150001} 5000, ref 0
dd_all {dd.*} 50, ref 0
slurm_low {4151234 4151235} 200, ref 0
default {*} 10000, ref 0
";
        assert_eq!(listing.to_string(), expected);
        assert_eq!(TbfRuleListing::parse(expected).unwrap(), listing);
        let new_form = tbf_rule_listing(&[r0], None, ListingForm::Expression).unwrap();
        assert_eq!(
            new_form.to_string(),
            "regular_requests:
CPT 0:
vip jobid={4150001} 5000, ref 0
dd_all jobid={dd.*} 50, ref 2
slurm_low jobid={4151234 4151235} 200, ref 1
default * 10000, ref 7
"
        );
    }

    #[test]
    fn policies_yaml_lists_every_policy_with_padded_counts() {
        let mut a: Nrs<u32> = Nrs::new();
        let mut b: Nrs<u32> = Nrs::new();
        for h in [&mut a, &mut b] {
            h.write_policies(0, "tbf jobid").unwrap();
            h.enqueue(0, &tags("x"), 1);
        }
        let yaml = nrs_policies_yaml(&[&a, &b], ActiveRpcs { active: 94 }, None);
        assert!(yaml.starts_with("\nregular_requests:\n  - name: fifo\n    state: started\n"));
        assert!(yaml.contains(
            "  - name: tbf jobid\n    state: started\n    fallback: no\n    \
             queued: 2                   \n    active: 94                  \n\n"
        ));
        assert!(yaml.contains("  - name: crrn\n    state: stopped\n"));
        let names: Vec<&str> = yaml
            .lines()
            .filter_map(|l| l.strip_prefix("  - name: "))
            .collect();
        assert_eq!(
            names,
            vec![
                "fifo",
                "crrn",
                "orr",
                "trr",
                "tbf jobid",
                "delay",
                "sfqd",
                "dsfq",
                "themis",
                "mclock"
            ]
        );
    }

    proptest::proptest! {
        #[test]
        fn policy_switches_never_lose_or_duplicate_requests(
            ops in proptest::collection::vec((0u8..8, 0u64..5_000_000), 1..200)
        ) {
            let mut n: Nrs<u32> = Nrs::new();
            let mut now = 0;
            let mut next = 0u32;
            let mut served = Vec::new();
            for (op, gap) in ops {
                now += gap;
                match op {
                    0..=2 => {
                        n.enqueue(now, &tags(&format!("j{}", next % 3)), next);
                        next += 1;
                    }
                    3 | 4 => {
                        if let Dequeue::Request(r) = n.dequeue(now) {
                            served.push(r);
                        }
                    }
                    5 => n.write_policies(now, "fifo").unwrap(),
                    6 => {
                        n.write_policies(now, "tbf jobid").unwrap();
                        n.write_policy_param(now, PARAM_TBF_RULE, "start s jobid={j1} rate=50").ok();
                    }
                    _ => n.write_policies(now, "tbf").unwrap(),
                }
                proptest::prop_assert_eq!(served.len() + n.queued(), next as usize);
            }
            // Drain: every request comes out exactly once.
            let mut guard = 0;
            while n.queued() > 0 {
                match n.dequeue(now) {
                    Dequeue::Request(r) => served.push(r),
                    Dequeue::Throttled { until_ns } => {
                        proptest::prop_assert!(until_ns > now);
                        now = until_ns;
                        n.on_timer(now);
                    }
                    Dequeue::Empty => proptest::prop_assert!(false, "empty with queued requests"),
                }
                guard += 1;
                proptest::prop_assert!(guard < 10_000);
            }
            served.sort_unstable();
            proptest::prop_assert_eq!(served, (0..next).collect::<Vec<_>>());
        }
    }
}
