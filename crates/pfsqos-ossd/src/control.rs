//! The control loop of `pfsqos ossd --policy SPEC`: runs one of `pfsqos_core`'s controllers
//! against the live daemon.
//!
//! ```text
//!  control thread, every period:
//!   per OST: arrivals (counted at enqueue), job_stats totals (-> deltas), queue length
//!     -> Observation (one domain: this OSS and its OSTs) -> Controller::decide
//!     -> each ControlWrite through Controlled::apply (the ossd: the path of `lctl set_param`)
//! ```
//!
//! The policy logic is entirely in `pfsqos_core::control`; controllers are built from a spec by
//! `pfsqos_core::control::spec::PolicyChoice`, the same names and options the simulator takes. This module
//! only measures and applies.
//!
//! Observation semantics follow the simulator's: per target and period, `rpcs_arrived` counts
//! RPCs that entered an NRS head, `rpcs_served`/`bytes_served` are job_stats deltas (one bytes
//! sample per read or write RPC, one sample per punch or sync), jobs sorted by id and listed
//! only when they did something; `queue_len_rpcs` is the target's queue when the period ends.
//! `period_ns` is the wall time actually elapsed since the previous observation (the thread
//! may wake late), so counts divided by it are true rates.
//!
//! `device_queue_rpcs` is the RPCs of the target an I/O thread has started and not completed
//! (the requests at the OST's I/O when the period ends), or with `--device-sensor block` the
//! block layer's own queue (`/sys/block/<dev>/stat`, see `controlled.rs`).
//!
//! Each periodic step (observe, decide, apply) is timed with the control thread's CPU clock
//! and the wall clock (`Controlled::note_control_cost`, served as metrics); with
//! `ControlConfig::record` each period's limit in force and queue measured go to a CSV file
//! (`crate::control_record`), written after the step is timed.
//!
//! Client limits: `Observation::clients` lists the client nodes connected when the period
//! ends, by NID in sorted order (`ClientId(i)` is the `i`-th); a decision's `ClientWrite` for
//! an id the observation did not list, or with a rate outside the protocol's bounds, is logged
//! and dropped. The ossd keeps each connected client's limit and states it on every reply to
//! that client, which applies it to its node's limiter (docs/live.md, "Client limits").
//!
//! Job metadata: every observation's `jobs` take their node counts from the daemon's job
//! table ([`crate::job_nodes`]: the administrator's `--job-nodes` and `lctl set_param
//! ost.OSS.ost_io.job_nodes`, then what mounts report, else one node) and their weight from
//! it by `pfsqos_core::control::default_job_weight` (the live runtime has no separate
//! weight). Jobs the table knows but the observer has not seen yet are listed too (up to
//! `KNOWN_JOBS_MAX`). A controller that decides only at setup (Static BW, no period) is set
//! up again when the table changes: a fresh controller, after the rules the old one holds are
//! stopped, so its fixed rates follow node counts learned at run time.
//!
//! Clean exit: when stopped, the loop stops every TBF rule its controller started and still
//! holds, then writes `nrs_policies=fifo` if the controller ever changed the policy, and
//! lifts every client limit.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use pfsqos_core::control::agent::{
    merge_job_bases, unnamable_jobs, Ledger, Observer, OstSample, UnlistedJobs,
};
use pfsqos_core::control::rules::UnnamableLog;
use pfsqos_core::control::spec::{PolicyChoice, PERIOD_MS_MAX};
use pfsqos_core::control::{
    ClientId, ClientWrite, ControlWrite, Controller, Decision, DomainId, DomainWrite, Observation,
};
use pfsqos_core::model::{JobId, Nid};
use tracing::{debug, info, warn};

use crate::control_record::{thread_cpu_ns, ControlRecord};

use pfsqos_wire::protocol::{
    Errno, RemoteError, CLIENT_LIMIT_BYTES_PER_S_MAX, CLIENT_LIMIT_BYTES_PER_S_MIN,
    IO_LEN_BYTES_MAX,
};

/// What the control loop needs of the daemon it runs in (the ossd implements it in
/// `controlled.rs`, so this module does not depend on the daemon's internals).
pub(crate) trait Controlled: Send + Sync + 'static {
    /// Monotonic time in ns since the daemon started.
    fn now_ns(&self) -> u64;
    fn ost_count(&self) -> usize;
    /// Per OST: arrivals since the last call, job_stats totals, RPCs queued now.
    fn sample(&self) -> Vec<OstSample>;
    /// Applies one write with the checks and errors of `lctl set_param`.
    fn apply(&self, write: &ControlWrite) -> Result<(), RemoteError>;
    /// The client nodes connected now, by NID, sorted: `ClientId(i)` of an observation is
    /// the `i`-th of the list taken for it.
    fn clients(&self) -> Vec<Nid>;
    /// Sets or lifts (`None`) the outgoing limit of a connected client node; false if it is
    /// not connected any more. The caller has validated the rate.
    fn set_client_limit(&self, nid: Nid, limit_bytes_per_s: Option<u64>) -> bool;
    /// Lifts every client limit (the controller stopped).
    fn clear_client_limits(&self);
    /// One control period took `cpu_ns` of the control thread's CPU and `wall_ns` in all
    /// (observe, decide, apply), for the metrics.
    fn note_control_cost(&self, cpu_ns: u64, wall_ns: u64);
    /// Changes whenever a node count in the job table changes.
    fn job_nodes_generation(&self) -> u64;
    /// The job table's node counts by job.
    fn job_nodes(&self) -> BTreeMap<JobId, u32>;
    /// The last observation listed `count` jobs whose ids cannot be rules, for the metrics.
    fn note_unnamable_jobs(&self, count: u64);
}

/// A controller made by code instead of named by a spec: when [`ControlConfig::factory`] is
/// set it runs instead of the spec's (the seam tests plug a test controller into).
#[derive(Clone)]
pub struct ControllerFactory(pub Arc<dyn Fn() -> Box<dyn Controller> + Send + Sync>);

impl std::fmt::Debug for ControllerFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ControllerFactory")
    }
}

/// The one scheduling domain an ossd is: its `ost_io` service over all of its OSTs.
pub const OSS_DOMAIN: DomainId = DomainId(0);

/// Default control period for policies whose spec sets none (the simulator's default).
pub const PERIOD_MS_DEFAULT: u64 = 100;

/// Lustre's default `brw_size` (4 MiB): the size of one TBF token when capacity comes from a
/// byte ceiling.
pub const BRW_SIZE_BYTES_DEFAULT: u64 = pfsqos_core::lustre::BRW_SIZE_BYTES_DEFAULT;

/// Most `--job-nodes` entries.
pub const JOB_NODES_MAX: usize = 4096;

/// Largest node count of one job.
pub const NODE_COUNT_MAX: u32 = pfsqos_core::lustre::JOB_NODES_MAX;

/// Largest capacity accepted, RPCs per second per OST.
pub const CAPACITY_RPCS_PER_S_MAX: u64 = pfsqos_core::lustre::OST_CAPACITY_RPCS_PER_S_MAX;

/// What the ossd's control loop runs.
#[derive(Clone, Debug)]
pub struct ControlConfig {
    pub policy: PolicyChoice,
    /// Period for policies whose spec sets no `period_ms` (AdapTBF); GIFT and its baselines
    /// keep their own 10 s unless the spec says otherwise.
    pub period_ms: u64,
    /// RPC capacity of each OST. `None`: the ossd's `ceiling_bytes_per_s / brw_size_bytes`.
    pub capacity_rpcs_per_s: Option<u64>,
    /// Size of one RPC at full size (one TBF token), for capacities from a byte ceiling and
    /// for GIFT's byte-to-token conversion.
    pub brw_size_bytes: u64,
    /// Node counts of jobs known before they send anything; other jobs count as one node.
    pub job_nodes: Vec<(JobId, u32)>,
    /// Seed of randomized policies (RND).
    pub seed: u64,
    /// Runs this controller instead of `policy`'s (not a command-line option).
    pub factory: Option<ControllerFactory>,
    /// `--control-record FILE`: write each period's limit in force and queue measured there
    /// (`crate::control_record`).
    pub record: Option<std::path::PathBuf>,
}

impl ControlConfig {
    /// A configuration running `spec` (as `pfsqos sim --policy` takes it) with defaults.
    pub fn new(spec: &str) -> Result<ControlConfig, String> {
        Ok(ControlConfig {
            policy: PolicyChoice::parse(spec)?,
            period_ms: PERIOD_MS_DEFAULT,
            capacity_rpcs_per_s: None,
            brw_size_bytes: BRW_SIZE_BYTES_DEFAULT,
            job_nodes: Vec::new(),
            seed: 0,
            factory: None,
            record: None,
        })
    }

    /// Checks the limits and returns the per-OST capacity to report.
    pub fn capacity(&self, ceiling_bytes_per_s: Option<u64>) -> anyhow::Result<u64> {
        if !(1..=PERIOD_MS_MAX).contains(&self.period_ms) {
            bail!("the control period must be 1..={} ms", PERIOD_MS_MAX);
        }
        if !(4096..=IO_LEN_BYTES_MAX).contains(&self.brw_size_bytes) {
            bail!("brw_size must be 4096..={IO_LEN_BYTES_MAX} bytes");
        }
        if self.job_nodes.len() > JOB_NODES_MAX {
            bail!("at most {JOB_NODES_MAX} --job-nodes entries");
        }
        let mut seen = BTreeSet::new();
        for (job, nodes) in &self.job_nodes {
            if job.is_empty() || !seen.insert(*job) {
                bail!("job `{job}` is empty or given twice in --job-nodes");
            }
            if let Some(why) = crate::job_nodes::admin_job_refusal(job) {
                bail!("--job-nodes: {why}");
            }
            if !(1..=NODE_COUNT_MAX).contains(nodes) {
                bail!("job `{job}`: node count must be 1..={NODE_COUNT_MAX}");
            }
        }
        let capacity = match (self.capacity_rpcs_per_s, ceiling_bytes_per_s) {
            (Some(c), _) => c,
            (None, Some(ceiling)) => ceiling / self.brw_size_bytes,
            (None, None) => bail!(
                "a controller needs the OSTs' capacity: give --capacity-rpcs-per-s or \
                 --ceiling-bytes-per-s"
            ),
        };
        if !(1..=CAPACITY_RPCS_PER_S_MAX).contains(&capacity) {
            bail!(
                "OST capacity of {capacity} RPCs/s is outside 1..={CAPACITY_RPCS_PER_S_MAX} \
                 (a ceiling below one brw_size per second gives 0)"
            );
        }
        Ok(capacity)
    }
}

/// Parses `JOB=N` as `--job-nodes` takes it.
pub fn parse_job_nodes(text: &str) -> Result<(JobId, u32), String> {
    let (job, nodes) = text
        .rsplit_once('=')
        .ok_or_else(|| format!("`{text}` is not JOB=NODES"))?;
    let job = JobId::new(job).map_err(|e| format!("job `{job}`: {e}"))?;
    if let Some(why) = crate::job_nodes::admin_job_refusal(&job) {
        return Err(why);
    }
    let nodes = nodes
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=NODE_COUNT_MAX).contains(n))
        .ok_or_else(|| format!("`{nodes}` is not a node count in 1..={NODE_COUNT_MAX}"))?;
    Ok((job, nodes))
}

/// Applies one controller write through the path of `lctl set_param`, so it gets the same
/// checks and errors, and records what it changed.
pub(crate) fn apply_write(
    shared: &impl Controlled,
    write: &DomainWrite,
    ledger: &mut Ledger,
) -> Result<(), RemoteError> {
    if write.domain != OSS_DOMAIN {
        return Err(RemoteError::new(
            Errno::ENODEV,
            format!(
                "no domain {}: an ossd is domain {}",
                write.domain.0, OSS_DOMAIN.0
            ),
        ));
    }
    shared.apply(&write.write)?;
    ledger.note(&write.write);
    Ok(())
}

/// The job table as the loop last read it: re-read only when its generation moved.
struct NodeTable {
    generation: Option<u64>,
    nodes: BTreeMap<JobId, u32>,
}

impl NodeTable {
    /// Re-reads the table if it changed; true if it did.
    fn refresh(&mut self, shared: &impl Controlled) -> bool {
        let generation = shared.job_nodes_generation();
        if self.generation == Some(generation) {
            return false;
        }
        // Read after the generation: a change in between is seen again next time.
        self.nodes = shared.job_nodes();
        self.generation = Some(generation);
        true
    }
}

/// Lists the connected clients in an observation (`ClientId(i)` is `clients[i]`).
fn observe_clients(obs: &mut Observation, clients: &[Nid]) {
    obs.clients = (0..clients.len() as u32).map(ClientId).collect();
}

/// What every observation gets before the controller sees it, at setup, re-setup and each
/// period alike: the job table's node counts and the connected clients. Returns the clients,
/// which the decision's client writes are checked against.
fn complete_observation(
    shared: &impl Controlled,
    obs: &mut Observation,
    nodes: &BTreeMap<JobId, u32>,
) -> Vec<Nid> {
    // A job the table does not know runs on one node.
    merge_job_bases(obs, nodes, UnlistedJobs::Basis(1));
    let clients = shared.clients();
    observe_clients(obs, &clients);
    clients
}

/// Applies one client limit of a decision taken on an observation that listed `clients`:
/// the id must be one of the list and the rate within the protocol's bounds.
pub(crate) fn apply_client_write(
    shared: &impl Controlled,
    clients: &[Nid],
    w: &ClientWrite,
) -> Result<(), String> {
    let nid = clients.get(w.client.0 as usize).ok_or_else(|| {
        format!(
            "no client {} (the observation listed {})",
            w.client.0,
            clients.len()
        )
    })?;
    if let Some(rate) = w.limit_bytes_per_s {
        if !(CLIENT_LIMIT_BYTES_PER_S_MIN..=CLIENT_LIMIT_BYTES_PER_S_MAX).contains(&rate) {
            return Err(format!(
                "client {nid}: a limit of {rate} bytes/s is outside \
                 {CLIENT_LIMIT_BYTES_PER_S_MIN}..={CLIENT_LIMIT_BYTES_PER_S_MAX}"
            ));
        }
    }
    if !shared.set_client_limit(*nid, w.limit_bytes_per_s) {
        // Gone since the observation: nothing to limit (it starts unlimited if it returns).
        debug!(%nid, "client limit for a client that has disconnected");
    }
    Ok(())
}

/// Counts the observation's jobs whose ids cannot be rules (TBF syntax: the controller's
/// catch-all rule limits them, or in a weight policy the default weight) for the metrics, and
/// names them in a log line at most once a minute ([`UnnamableLog`]).
fn note_unnamable(shared: &impl Controlled, obs: &Observation, log: &mut UnnamableLog) {
    let (count, line) = unnamable_note(obs, log);
    shared.note_unnamable_jobs(count);
    if let Some(named) = line {
        warn!(
            jobs = count,
            first = %named,
            "job ids with TBF syntax cannot have a rule of their own; limited by the \
             controller's catch-all rule (a weight policy's default weight)"
        );
    }
}

/// How many of `obs`'s jobs have ids that cannot be rules, and the escaped text naming them
/// when a log line is due at the observation's time (the caller's clock, so tests run it on
/// virtual time).
fn unnamable_note(obs: &Observation, log: &mut UnnamableLog) -> (u64, Option<String>) {
    let unnamable = unnamable_jobs(obs);
    (unnamable.len() as u64, log.due(obs.now_ns, &unnamable))
}

fn apply_decision(
    shared: &impl Controlled,
    controller: &mut dyn Controller,
    decision: Decision,
    clients: &[Nid],
    ledger: &mut Ledger,
) {
    for w in decision.writes {
        if let Err(e) = apply_write(shared, &w, ledger) {
            warn!(domain = w.domain.0, write = ?w.write, error = %e, "controller write refused");
            // The controller must not hold what the server refused (else it keeps sending
            // `change` to a rule that does not exist and ranks later rules against it).
            controller.on_write_refused(&w, e.errno);
        }
    }
    for w in &decision.client_writes {
        if let Err(e) = apply_client_write(shared, clients, w) {
            warn!(client = w.client.0, error = %e, "client limit refused");
        }
    }
}

/// Stops every rule the controller started and still holds, leaving the policy as it is
/// (a controller set up again starts its rules anew).
fn stop_held_rules(shared: &impl Controlled, ledger: &mut Ledger) {
    let rules: Vec<String> = ledger.rules.iter().cloned().collect();
    for name in rules {
        let w = DomainWrite {
            domain: OSS_DOMAIN,
            write: ControlWrite::tbf_rule(format!("stop {name}")),
        };
        if let Err(e) = apply_write(shared, &w, ledger) {
            warn!(write = ?w.write, error = %e, "could not stop a controller rule");
            // Gone already (an administrator stopped it): the ledger must not hold it.
            ledger.rules.remove(&name);
        }
    }
}

/// Undoes what the ledger holds ([`Ledger::undo_writes`]) and lifts every client limit.
pub(crate) fn clean_up(shared: &impl Controlled, ledger: &mut Ledger) {
    shared.clear_client_limits();
    for write in ledger.undo_writes() {
        let w = DomainWrite {
            domain: OSS_DOMAIN,
            write,
        };
        if let Err(e) = apply_write(shared, &w, ledger) {
            warn!(write = ?w.write, error = %e, "could not undo a controller write");
        }
    }
}

/// A running control loop.
pub(crate) struct ControlHandle {
    stop: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl ControlHandle {
    /// Starts the loop: `setup` at once, then `decide` every period.
    pub fn spawn(
        shared: Arc<impl Controlled>,
        config: &ControlConfig,
        capacity_rpcs_per_s: u64,
    ) -> anyhow::Result<ControlHandle> {
        let config = config.clone();
        // Created before the thread, so a path that cannot be written fails the start.
        let mut record = match &config.record {
            Some(path) => Some(ControlRecord::create(
                path,
                config.policy.name(),
                shared.now_ns(),
            )?),
            None => None,
        };
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("ossd-control".to_string())
            .spawn(move || {
                // Built here: controllers need not be `Send`.
                let build = || match &config.factory {
                    Some(f) => (f.0)(),
                    None => config.policy.controller_with(
                        config.period_ms,
                        config.brw_size_bytes,
                        config.seed,
                    ),
                };
                let mut controller = build();
                let mut table = NodeTable {
                    generation: None,
                    nodes: BTreeMap::new(),
                };
                table.refresh(&*shared);
                // Marks the set_param log lines of the controller's writes.
                let _span = tracing::info_span!("control", policy = controller.name()).entered();
                let mut ledger = Ledger::default();
                let mut observer = Observer::new(
                    OSS_DOMAIN,
                    shared.ost_count(),
                    capacity_rpcs_per_s,
                    &config.job_nodes,
                    shared.now_ns(),
                );
                let mut initial = observer.initial(shared.now_ns(), shared.sample());
                let clients = complete_observation(&*shared, &mut initial, &table.nodes);
                let mut unnamable_log = UnnamableLog::default();
                note_unnamable(&*shared, &initial, &mut unnamable_log);
                info!(
                    policy = controller.name(),
                    capacity_rpcs_per_s, "controller started"
                );
                let decision = controller.setup(&initial);
                if let Some(r) = &mut record {
                    r.period(initial.now_ns, &[], &decision.client_writes);
                }
                apply_decision(&*shared, &mut *controller, decision, &clients, &mut ledger);
                match controller.period_ns() {
                    None => {
                        // Decides only at setup: set up again when node counts change,
                        // looking once a control period. Between, `decide` on the setup's
                        // observation starts again what the server refused (Static BW
                        // renames a rule whose name was taken); it writes nothing otherwise.
                        let period = Duration::from_millis(config.period_ms);
                        let mut last = (initial, clients);
                        while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                            if !table.refresh(&*shared) {
                                let decision = controller.decide(&last.0);
                                if !decision.writes.is_empty() {
                                    apply_decision(
                                        &*shared,
                                        &mut *controller,
                                        decision,
                                        &last.1,
                                        &mut ledger,
                                    );
                                }
                                continue;
                            }
                            let mut obs = observer.observe(shared.now_ns(), shared.sample());
                            let clients = complete_observation(&*shared, &mut obs, &table.nodes);
                            note_unnamable(&*shared, &obs, &mut unnamable_log);
                            info!(
                                policy = controller.name(),
                                jobs = obs.jobs.len(),
                                "job node counts changed: setting the controller up again"
                            );
                            stop_held_rules(&*shared, &mut ledger);
                            controller = build();
                            let decision = controller.setup(&obs);
                            apply_decision(
                                &*shared,
                                &mut *controller,
                                decision,
                                &clients,
                                &mut ledger,
                            );
                            last = (obs, clients);
                        }
                    }
                    Some(period_ns) => {
                        let period = Duration::from_nanos(period_ns.max(1));
                        let mut next = Instant::now() + period;
                        loop {
                            let wait = next.saturating_duration_since(Instant::now());
                            match stopped.recv_timeout(wait) {
                                Err(RecvTimeoutError::Timeout) => {}
                                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                            }
                            let (cpu0, wall0) = (thread_cpu_ns(), Instant::now());
                            let mut obs = observer.observe(shared.now_ns(), shared.sample());
                            table.refresh(&*shared);
                            let clients = complete_observation(&*shared, &mut obs, &table.nodes);
                            note_unnamable(&*shared, &obs, &mut unnamable_log);
                            let decision = controller.decide(&obs);
                            let client_writes = record
                                .as_ref()
                                .map(|_| decision.client_writes.clone())
                                .unwrap_or_default();
                            apply_decision(
                                &*shared,
                                &mut *controller,
                                decision,
                                &clients,
                                &mut ledger,
                            );
                            let wall_ns =
                                u64::try_from(wall0.elapsed().as_nanos()).unwrap_or(u64::MAX);
                            shared.note_control_cost(thread_cpu_ns().saturating_sub(cpu0), wall_ns);
                            // Recorded after the cost is taken: the file is not the loop's.
                            if let Some(r) = &mut record {
                                r.period(obs.now_ns, &controller.trace(), &client_writes);
                            }
                            // Keep to the period's grid; after an overrun, start afresh.
                            next += period;
                            let now = Instant::now();
                            if next < now {
                                next = now + period;
                            }
                        }
                    }
                }
                clean_up(&*shared, &mut ledger);
                info!(policy = controller.name(), "controller stopped");
            })
            .context("spawning the control thread")?;
        Ok(ControlHandle { stop, thread })
    }

    /// Stops the loop and waits until it has undone its writes.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let thread = self.thread;
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pfsqos_core::control::JobMeta;

    fn job(s: &str) -> JobId {
        JobId::new(s).unwrap()
    }

    #[test]
    fn job_nodes_parse_with_limits() {
        assert_eq!(parse_job_nodes("dd.1=3"), Ok((job("dd.1"), 3)));
        assert_eq!(parse_job_nodes("a=b=2"), Ok((job("a=b"), 2)));
        assert!(parse_job_nodes("a").unwrap_err().contains("JOB=NODES"));
        assert!(parse_job_nodes("a=0").unwrap_err().contains("1..="));
        assert!(parse_job_nodes(&format!("{}=1", "x".repeat(40))).is_err());
        // A pattern is refused with the reason, not kept as a job no RPC ever matches.
        let e = parse_job_nodes("dd.*=4").unwrap_err();
        assert!(e.contains("pattern") && e.contains("dd.*"), "{e}");
        let mut c = ControlConfig::new("static").unwrap();
        c.capacity_rpcs_per_s = Some(100);
        c.job_nodes = vec![(job("dd.*"), 4)];
        let e = c.capacity(None).unwrap_err().to_string();
        assert!(e.contains("pattern"), "{e}");
    }

    fn meta(j: &str, n: u32) -> JobMeta {
        JobMeta {
            job: job(j),
            node_count: n,
            weight: n,
        }
    }

    /// Every kind of TBF syntax in a job id is counted for `pfsqos_oss_jobs_unnamable` each
    /// period, and named in a log line (escaped, Rust's `Debug` of the id) at most once a
    /// minute of the observations' clock; ordinary ids are neither counted nor named.
    #[test]
    fn unnamable_jobs_are_counted_every_period_and_named_once_a_minute() {
        use pfsqos_core::control::rules::UNNAMABLE_LOG_INTERVAL_NS;
        let ids = [
            "*",
            "a b",
            "{x}",
            "a,b",
            "a&b",
            "a=b",
            "caf\u{e9}",
            "q\"uote",
        ];
        let mut jobs: Vec<JobMeta> = ids.iter().map(|j| meta(j, 1)).collect();
        jobs.push(meta("plain.1", 1));
        let mut obs = Observation {
            now_ns: 1_000,
            period_ns: 0,
            domains: Vec::new(),
            jobs,
            clients: Vec::new(),
        };
        let mut log = UnnamableLog::default();
        let (count, line) = unnamable_note(&obs, &mut log);
        assert_eq!(count, ids.len() as u64);
        let line = line.expect("the first period names them");
        assert!(
            line.contains("\"*\"") && line.contains("\"q\\\"uote\""),
            "{line}"
        );
        assert!(!line.contains("plain.1"), "{line}");
        // Counted every period, named again only after the interval.
        for now in [
            1_000 + UNNAMABLE_LOG_INTERVAL_NS / 2,
            UNNAMABLE_LOG_INTERVAL_NS,
        ] {
            obs.now_ns = now;
            assert_eq!(unnamable_note(&obs, &mut log), (ids.len() as u64, None));
        }
        obs.now_ns = 1_000 + UNNAMABLE_LOG_INTERVAL_NS;
        assert!(unnamable_note(&obs, &mut log).1.is_some());
        obs.jobs.retain(|m| m.job == job("plain.1"));
        obs.now_ns += 2 * UNNAMABLE_LOG_INTERVAL_NS;
        assert_eq!(unnamable_note(&obs, &mut log), (0, None));
    }

    #[test]
    fn capacity_comes_from_the_flag_or_the_ceiling() {
        let mut c = ControlConfig::new("adaptbf").unwrap();
        assert!(c
            .capacity(None)
            .unwrap_err()
            .to_string()
            .contains("--capacity-rpcs-per-s"));
        assert_eq!(c.capacity(Some(40 << 20)).unwrap(), 10);
        assert!(
            c.capacity(Some(1 << 20)).is_err(),
            "a quarter RPC per second"
        );
        c.capacity_rpcs_per_s = Some(300);
        assert_eq!(c.capacity(Some(40 << 20)).unwrap(), 300);
        c.job_nodes = vec![(job("a"), 1), (job("a"), 2)];
        assert!(c.capacity(None).unwrap_err().to_string().contains("twice"));
    }
}
