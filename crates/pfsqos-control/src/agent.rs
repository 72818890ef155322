//! The controller agent's pure part: what every driver that runs a controller against a real
//! server does between the server's counters and `Controller::decide`, and after it.
//!
//! * [`Observer`] turns raw per-OST counter samples (arrivals counted at enqueue, `job_stats`
//!   totals, queue length) into an [`Observation`]: served counts are `job_stats` deltas by the
//!   one rule ([`counters_delta`]), jobs are listed only when they did something, and the jobs
//!   seen so far are remembered, at most [`KNOWN_JOBS_MAX`] of them.
//! * [`JobStatsObserver`] builds the same [`Observation`] from the text of Lustre's
//!   `job_stats` (the Lustre agent's observer).
//! * [`merge_job_bases`] gives an observation's jobs the node counts (or priorities) a driver
//!   learned outside the counters: the ossd's job table, the agent's Slurm facts.
//! * [`Ledger`] records what the controller changed (rules it started and still holds, whether
//!   it changed the policy) so that a clean exit leaves nothing behind ([`Ledger::undo_writes`]).
//!
//! Two drivers run it: the live `ossd --policy` and the Lustre agent (`pfsqos-agent`).

use std::collections::{BTreeMap, BTreeSet};

use super::{
    ControlWrite, DomainId, DomainObservation, JobMeta, JobTargetStats, Observation,
    TargetObservation,
};
use crate::jobstats::poll::{ost_index_of_param, BrwTotals, JobStatsPoller, PollCounts};
use crate::jobstats::{counters_delta, parse_lctl_brw_lossy, JobStatsParseError};
use crate::model::{JobId, OstId};
use crate::sched::tbf::{TbfCommand, TbfOp};

/// Most jobs the controller is told about; beyond it the longest-idle jobs not given on the
/// command line are forgotten.
pub const KNOWN_JOBS_MAX: usize = crate::limits::JOBS_TRACKED_MAX;

/// What the control loop changed, so a clean exit can undo it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Ledger {
    /// Rules the controller started and has not stopped.
    pub rules: BTreeSet<String>,
    /// The controller wrote `nrs_policies` at least once.
    pub policies_changed: bool,
    /// The policy found before the controller changed it (`nrs_policies` text, e.g. `fifo`
    /// or `tbf nid`), which the undo restores; `None`: `fifo` (the ossd, which starts with
    /// it).
    pub policy_found: Option<String>,
}

impl Ledger {
    /// Records a write that was applied.
    pub fn note(&mut self, write: &ControlWrite) {
        if let ControlWrite::NrsPolicies(_) = write {
            self.policies_changed = true;
        } else if let Some(text) = write.tbf_rule_text() {
            match TbfCommand::parse(text).map(|c| c.op) {
                Ok(TbfOp::Start { name, .. }) => {
                    self.rules.insert(name);
                }
                Ok(TbfOp::Stop { name }) => {
                    self.rules.remove(&name);
                }
                _ => {}
            }
        }
        // Any other policy's own parameters go with the policy, which the undo stops.
    }

    /// The writes that undo what the ledger holds: every rule still held is stopped first
    /// (stopping needs TBF running), then the policy goes back to the one found (`fifo` if
    /// none was recorded) if it was changed.
    pub fn undo_writes(&self) -> Vec<ControlWrite> {
        let mut writes: Vec<ControlWrite> = self
            .rules
            .iter()
            .map(|name| ControlWrite::tbf_rule(format!("stop {name}")))
            .collect();
        if self.policies_changed {
            let found = self.policy_found.as_deref().unwrap_or("fifo");
            writes.push(ControlWrite::NrsPolicies(found.to_string()));
        }
        writes
    }
}

/// One OST's raw counters at the end of a period.
#[derive(Debug, Default, Clone)]
pub struct OstSample {
    /// RPCs that arrived during the period, per job.
    pub arrived: BTreeMap<JobId, u64>,
    /// job_stats totals (RPCs, bytes) per job.
    pub served_totals: BTreeMap<JobId, (u64, u64)>,
    pub queued_rpcs: u64,
    /// Requests at the device (in service or waiting for it) when sampled.
    pub device_queue_rpcs: u64,
    /// The device's cumulative time in queue (`TargetObservation::device_time_in_queue_ns`).
    pub device_time_in_queue_ns: u64,
}

#[derive(Debug, Clone, Copy)]
struct KnownJob {
    node_count: u32,
    /// From `--job-nodes`: never forgotten.
    pinned: bool,
    last_seen_period: u64,
}

/// The jobs told to the controller: the pinned ones and those seen doing something, at most
/// [`KNOWN_JOBS_MAX`] (the longest idle unpinned ones are forgotten first).
#[derive(Debug, Clone, Default)]
struct KnownJobs(BTreeMap<JobId, KnownJob>);

impl KnownJobs {
    fn new(job_nodes: &[(JobId, u32)]) -> KnownJobs {
        KnownJobs(
            job_nodes
                .iter()
                .map(|&(job, node_count)| {
                    let k = KnownJob {
                        node_count,
                        pinned: true,
                        last_seen_period: 0,
                    };
                    (job, k)
                })
                .collect(),
        )
    }

    fn saw(&mut self, job: JobId, period: u64) {
        self.0
            .entry(job)
            .or_insert(KnownJob {
                node_count: 1,
                pinned: false,
                last_seen_period: 0,
            })
            .last_seen_period = period;
    }

    /// [`KnownJobs::saw`] for each of `jobs`, given in job id order: one walk of the known
    /// jobs beside them (a search per job cost a dozen id comparisons), the jobs not known
    /// yet added after.
    fn saw_sorted(&mut self, jobs: impl IntoIterator<Item = JobId>, period: u64) {
        let mut unknown = Vec::new();
        let mut known = self.0.iter_mut().peekable();
        let mut last: Option<JobId> = None;
        for job in jobs {
            assert!(last.is_none_or(|l| l < job), "jobs in job id order");
            last = Some(job);
            while known.next_if(|(k, _)| **k < job).is_some() {}
            match known.peek_mut() {
                Some((k, state)) if **k == job => state.last_seen_period = period,
                _ => unknown.push(job),
            }
        }
        for job in unknown {
            self.saw(job, period);
        }
    }

    fn metas(&self) -> Vec<JobMeta> {
        self.0
            .iter()
            .map(|(&job, k)| JobMeta {
                job,
                node_count: k.node_count,
                // The live runtime has no per-job weight yet.
                weight: super::default_job_weight(k.node_count),
            })
            .collect()
    }

    fn forget_idle(&mut self) {
        let excess = self.0.len().saturating_sub(KNOWN_JOBS_MAX);
        if excess == 0 {
            return;
        }
        let mut idle: Vec<(u64, JobId)> = self
            .0
            .iter()
            .filter(|(_, k)| !k.pinned)
            .map(|(&job, k)| (k.last_seen_period, job))
            .collect();
        idle.sort_unstable();
        for (_, job) in idle.into_iter().take(excess) {
            self.0.remove(&job);
        }
    }
}

/// What [`merge_job_bases`] gives a listed job that `bases` does not name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnlistedJobs {
    /// Keeps what the observer gave it.
    Keep,
    /// Takes this basis (the ossd: a job its table does not know runs on one node).
    Basis(u32),
}

/// Gives the observation's jobs the priority basis (node count, or a scaled priority) of
/// `bases` and the weight that follows ([`super::default_job_weight`]); jobs of `bases` the
/// observation does not list yet are added while the list holds fewer than
/// [`KNOWN_JOBS_MAX`] (a controller that shares over every job, Static BW, counts them from
/// the start). The one merge for every driver: the ossd's job table, the agent's Slurm facts.
/// `jobs` stays sorted by job id, as [`Observation`] requires.
pub fn merge_job_bases(
    obs: &mut Observation,
    bases: &BTreeMap<JobId, u32>,
    unlisted: UnlistedJobs,
) {
    assert!(
        obs.jobs.windows(2).all(|w| w[0].job < w[1].job),
        "an observation lists its jobs sorted and once"
    );
    let listed_before = obs.jobs.len();
    let mut missing: Vec<JobMeta> = Vec::new();
    let mut wanted = bases.iter().peekable();
    for meta in &mut obs.jobs {
        // Bases below this job are not listed: added after the walk.
        while let Some((&job, &basis)) = wanted.next_if(|(j, _)| **j < meta.job) {
            missing.push(job_meta(job, basis));
        }
        let basis = match wanted.next_if(|(j, _)| **j == meta.job) {
            Some((_, &basis)) => basis,
            None => match unlisted {
                UnlistedJobs::Keep => continue,
                UnlistedJobs::Basis(b) => b,
            },
        };
        meta.node_count = basis;
        meta.weight = super::default_job_weight(basis);
    }
    missing.extend(wanted.map(|(&job, &basis)| job_meta(job, basis)));
    let room = KNOWN_JOBS_MAX.saturating_sub(listed_before);
    if !missing.is_empty() && room > 0 {
        missing.truncate(room);
        obs.jobs.extend(missing);
        obs.jobs.sort_unstable_by_key(|m| m.job);
    }
    assert!(obs.jobs.len() >= listed_before, "a merge never drops a job");
    assert!(obs.jobs.len() <= listed_before.max(KNOWN_JOBS_MAX));
    debug_assert!(obs.jobs.windows(2).all(|w| w[0].job < w[1].job));
}

fn job_meta(job: JobId, basis: u32) -> JobMeta {
    JobMeta {
        job,
        node_count: basis,
        weight: super::default_job_weight(basis),
    }
}

/// The observation's jobs whose ids cannot be rules ([`crate::rules::job_id_is_rule_safe`]):
/// a TBF driver limits them with its catch-all rule, a weight policy with the default weight.
pub fn unnamable_jobs(obs: &Observation) -> Vec<JobId> {
    obs.jobs
        .iter()
        .map(|m| m.job)
        .filter(|j| !crate::rules::job_id_is_rule_safe(j))
        .collect()
}

/// Turns counter samples into Observations: keeps the previous job_stats totals to take
/// deltas and the jobs seen so far.
#[derive(Debug)]
pub struct Observer {
    domain: DomainId,
    capacity_rpcs_per_s: u64,
    served_prev: Vec<BTreeMap<JobId, (u64, u64)>>,
    known: KnownJobs,
    period: u64,
    last_ns: u64,
}

impl Observer {
    /// An observer of `ost_count` OSTs forming scheduling domain `domain`; `job_nodes` are
    /// known from the start and never forgotten.
    pub fn new(
        domain: DomainId,
        ost_count: usize,
        capacity_rpcs_per_s: u64,
        job_nodes: &[(JobId, u32)],
        now_ns: u64,
    ) -> Observer {
        Observer {
            domain,
            capacity_rpcs_per_s,
            served_prev: vec![BTreeMap::new(); ost_count],
            known: KnownJobs::new(job_nodes),
            period: 0,
            last_ns: now_ns,
        }
    }

    /// The observation of the period ending at `now_ns`.
    pub fn observe(&mut self, now_ns: u64, samples: Vec<OstSample>) -> Observation {
        self.period += 1;
        let mut targets = Vec::with_capacity(samples.len());
        for (ost, sample) in samples.into_iter().enumerate() {
            let prev = &self.served_prev[ost];
            let mut per_job: BTreeMap<JobId, JobTargetStats> = BTreeMap::new();
            let entry = |job: JobId| JobTargetStats {
                job,
                rpcs_arrived: 0,
                rpcs_served: 0,
                bytes_served: 0,
            };
            for (&job, &(rpcs, bytes)) in &sample.served_totals {
                // Totals that went down were cleared (`job_stats=clear`, expiry) and counted
                // again from zero: the one delta rule.
                let [d_rpcs, d_bytes] = counters_delta(
                    prev.get(&job).map(|&(r, b)| [r, b]).as_ref(),
                    &[rpcs, bytes],
                );
                if d_rpcs > 0 || d_bytes > 0 {
                    let s = per_job.entry(job).or_insert_with(|| entry(job));
                    s.rpcs_served = d_rpcs;
                    s.bytes_served = d_bytes;
                }
            }
            for (&job, &n) in &sample.arrived {
                if n > 0 {
                    per_job
                        .entry(job)
                        .or_insert_with(|| entry(job))
                        .rpcs_arrived = n;
                }
            }
            self.served_prev[ost] = sample.served_totals;
            for &job in per_job.keys() {
                self.known.saw(job, self.period);
            }
            targets.push(TargetObservation {
                ost: OstId(ost as u32),
                queue_len_rpcs: sample.queued_rpcs,
                device_queue_rpcs: sample.device_queue_rpcs,
                device_time_in_queue_ns: sample.device_time_in_queue_ns,
                capacity_rpcs_per_s: self.capacity_rpcs_per_s,
                jobs: per_job.into_values().collect(),
            });
        }
        self.known.forget_idle();
        let period_ns = now_ns.saturating_sub(self.last_ns);
        self.last_ns = now_ns;
        Observation {
            clients: Vec::new(),
            now_ns,
            period_ns,
            domains: vec![DomainObservation {
                domain: self.domain,
                targets,
            }],
            jobs: self.known.metas(),
        }
    }

    /// The setup observation: takes the counters as the baseline of the first period and
    /// reports no activity.
    pub fn initial(&mut self, now_ns: u64, samples: Vec<OstSample>) -> Observation {
        let baseline = samples
            .into_iter()
            .enumerate()
            .map(|(ost, s)| {
                self.served_prev[ost] = s.served_totals.clone();
                OstSample {
                    arrived: BTreeMap::new(),
                    served_totals: s.served_totals,
                    queued_rpcs: s.queued_rpcs,
                    device_queue_rpcs: s.device_queue_rpcs,
                    device_time_in_queue_ns: s.device_time_in_queue_ns,
                }
            })
            .collect();
        self.observe(now_ns, baseline)
    }
}

/// What [`JobStatsObserver::observe`] read from one poll of a real OSS.
#[derive(Debug, Clone)]
pub struct JobStatsObservation {
    pub observation: Observation,
    /// Restarts, vanished jobs, cleared and new OSTs of this poll.
    pub counts: PollCounts,
    /// Entries the lossy parser left out (unreadable job ids or lines).
    pub skipped_entries: usize,
    /// Each job's bulk RPCs and bytes in the period, summed over the OSTs (the mean RPC size
    /// of a job is `bytes / rpcs`).
    pub per_job: BTreeMap<JobId, BrwTotals>,
}

/// The Lustre agent's observer: turns the text of `lctl get_param obdfilter.*.job_stats`
/// (any layout 2.12 .. master) into the same [`Observation`] the simulator and the ossd
/// build, from deltas between its own polls ([`JobStatsPoller`]: restarts detected by a new
/// `start_time`, counters going down, jobs gone and back).
///
/// A real OSS shows what was served, not what arrived: `rpcs_arrived` is the served count
/// (AdapTBF's default demand source is the served count anyway), `queue_len_rpcs` and the
/// device fields are 0 (Lustre reports its queue per service in `nrs_policies`, not per OST).
/// Targets are the OSTs of the poll, identified by the index in their name (`-OST000a` is
/// `OstId(10)`), so an OST appearing or disappearing does not renumber the others; a second
/// file system's OST with an index already held keeps an identity of its own from
/// [`OST_ID_RENUMBERED_FROM`] for as long as it is seen. Targets are listed by identity.
#[derive(Debug)]
pub struct JobStatsObserver {
    domain: DomainId,
    capacity_rpcs_per_s: u64,
    poller: JobStatsPoller,
    known: KnownJobs,
    period: u64,
    last_ns: u64,
    /// Each target's identity by its parameter name (`obdfilter.<fsname>-OST<index>.job_stats`:
    /// file system and index), given when the name is first seen and kept: the OST index
    /// while no other name holds it, else the next free identity from
    /// [`OST_ID_RENUMBERED_FROM`] (two file systems on one OSS both serving `OST0000`).
    /// At most [`OST_IDS_REMEMBERED_MAX`] names (beyond, names not in the poll are forgotten).
    ost_ids: BTreeMap<String, u32>,
}

/// First identity given to a target whose index another target of the OSS already holds
/// (Lustre's OST indexes are below 65,536).
pub const OST_ID_RENUMBERED_FROM: u32 = 0x1_0000;
/// Most target names whose identity an observer remembers.
pub const OST_IDS_REMEMBERED_MAX: usize = 2 * crate::jobstats::poll::POLL_OSTS_MAX;
/// Every identity [`JobStatsObserver`] gives is below this: the coordinator makes them unique
/// across agents as `agent << 20 | identity`.
pub const OST_ID_LOCAL_LIMIT: u32 = 1 << 20;
const _: () =
    assert!(OST_ID_RENUMBERED_FROM as usize + OST_IDS_REMEMBERED_MAX < OST_ID_LOCAL_LIMIT as usize);

impl JobStatsObserver {
    /// The identity of the target named `name` whose index reads `index`.
    fn ost_id(&mut self, name: &str, index: u32) -> u32 {
        if let Some(&id) = self.ost_ids.get(name) {
            return id;
        }
        let taken: BTreeSet<u32> = self.ost_ids.values().copied().collect();
        let id = if index < OST_ID_RENUMBERED_FROM && !taken.contains(&index) {
            index
        } else {
            (OST_ID_RENUMBERED_FROM..)
                .find(|i| !taken.contains(i))
                .expect("fewer names than identities")
        };
        assert!(id < OST_ID_LOCAL_LIMIT);
        self.ost_ids.insert(name.to_string(), id);
        id
    }

    /// An observer of one OSS (scheduling domain `domain`) whose OSTs each serve
    /// `capacity_rpcs_per_s`; `job_nodes` are known from the start and never forgotten.
    pub fn new(
        domain: DomainId,
        capacity_rpcs_per_s: u64,
        job_nodes: &[(JobId, u32)],
        now_ns: u64,
    ) -> JobStatsObserver {
        JobStatsObserver {
            domain,
            capacity_rpcs_per_s,
            poller: JobStatsPoller::new(),
            known: KnownJobs::new(job_nodes),
            period: 0,
            last_ns: now_ns,
            ost_ids: BTreeMap::new(),
        }
    }

    /// The observation of the period ending at `now_ns` from the text of one poll. The first
    /// poll of an OST is its baseline (no activity reported for it). Fails on text beyond
    /// the parser's size bound, and on text without parameter names (`lctl get_param -n`:
    /// which OST an entry is on is unknown; [`JobStatsParseError::nameless`]).
    ///
    /// `listed_osts` are the job_stats parameters `lctl list_param obdfilter.*.job_stats`
    /// names: an OST without jobs prints nothing on 2.17+, so it is known only from there; it
    /// is observed as a target without activity (its capacity counts).
    pub fn observe(
        &mut self,
        now_ns: u64,
        lctl_text: &str,
        listed_osts: &[String],
    ) -> Result<JobStatsObservation, JobStatsParseError> {
        // Bulk totals only; text without parameter names is refused (which OST is unknown).
        let (mut osts, skipped_entries) = parse_lctl_brw_lossy(lctl_text, true)?;
        for name in listed_osts {
            if !osts.iter().any(|(p, _)| p == name) {
                osts.push((name.clone(), Vec::new()));
            }
        }
        self.period += 1;
        let (deltas, counts) = self.poller.poll(osts);
        // Summed per job in a hash map (one cheap lookup per job and OST, where a B-tree
        // compares ids a dozen times), then sorted once; the known-job set is told each job
        // once rather than once per OST.
        let mut sums: rustc_hash::FxHashMap<JobId, BrwTotals> = Default::default();
        let mut targets = Vec::with_capacity(deltas.len());
        let mut names = Vec::with_capacity(deltas.len());
        for (i, ost) in deltas.into_iter().enumerate() {
            let id = ost_index_of_param(&ost.param).unwrap_or(i as u32);
            names.push(ost.param.clone());
            let jobs = ost
                .jobs
                .iter()
                .map(|d| {
                    let t = sums.entry(d.job).or_default();
                    t.rpcs = t.rpcs.saturating_add(d.brw.rpcs);
                    t.bytes = t.bytes.saturating_add(d.brw.bytes);
                    JobTargetStats {
                        job: d.job,
                        rpcs_arrived: d.brw.rpcs,
                        rpcs_served: d.brw.rpcs,
                        bytes_served: d.brw.bytes,
                    }
                })
                .collect();
            targets.push(TargetObservation {
                ost: OstId(id),
                queue_len_rpcs: 0,
                device_queue_rpcs: 0,
                device_time_in_queue_ns: 0,
                capacity_rpcs_per_s: self.capacity_rpcs_per_s,
                jobs,
            });
        }
        let per_job: BTreeMap<JobId, BrwTotals> = sums.into_iter().collect();
        self.known.saw_sorted(per_job.keys().copied(), self.period);
        // Each target keeps the identity its name got when first seen (see `ost_ids`).
        let present: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        if self.ost_ids.len() + names.len() > OST_IDS_REMEMBERED_MAX {
            self.ost_ids
                .retain(|name, _| present.contains(name.as_str()));
        }
        for (t, name) in targets.iter_mut().zip(&names) {
            t.ost = OstId(self.ost_id(name, t.ost.0));
        }
        debug_assert!(
            {
                let mut ids: Vec<u32> = targets.iter().map(|t| t.ost.0).collect();
                ids.sort_unstable();
                ids.windows(2).all(|w| w[0] < w[1])
            },
            "target identities are unique"
        );
        targets.sort_by_key(|t| t.ost);
        self.known.forget_idle();
        let period_ns = now_ns.saturating_sub(self.last_ns);
        self.last_ns = now_ns;
        Ok(JobStatsObservation {
            observation: Observation {
                clients: Vec::new(),
                now_ns,
                period_ns,
                domains: vec![DomainObservation {
                    domain: self.domain,
                    targets,
                }],
                jobs: self.known.metas(),
            },
            counts,
            skipped_entries,
            per_job,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(s: &str) -> JobId {
        JobId::new(s).unwrap()
    }

    fn meta(j: &str, n: u32) -> JobMeta {
        JobMeta {
            job: job(j),
            node_count: n,
            weight: n,
        }
    }

    fn observation_of(jobs: Vec<JobMeta>) -> Observation {
        Observation {
            now_ns: 0,
            period_ns: 0,
            domains: Vec::new(),
            jobs,
            clients: Vec::new(),
        }
    }

    #[test]
    fn merged_bases_set_counts_and_weights_and_list_unseen_jobs() {
        let bases: BTreeMap<JobId, u32> = [(job("a"), 2), (job("b"), 3), (job("c"), 5)].into();
        let mut obs = observation_of(vec![meta("b", 1), meta("d", 7)]);
        merge_job_bases(&mut obs, &bases, UnlistedJobs::Basis(1));
        assert_eq!(
            obs.jobs,
            vec![meta("a", 2), meta("b", 3), meta("c", 5), meta("d", 1)],
            "the bases, one node where they have none, unseen jobs listed, sorted"
        );
        let mut obs = observation_of(vec![meta("b", 1), meta("d", 7)]);
        merge_job_bases(&mut obs, &bases, UnlistedJobs::Keep);
        assert_eq!(
            obs.jobs,
            vec![meta("a", 2), meta("b", 3), meta("c", 5), meta("d", 7)],
            "a job the bases do not name keeps what the observer gave it"
        );
        // A basis beyond the weight's bound still gives a weight within it.
        let big: BTreeMap<JobId, u32> = [(job("b"), u32::MAX)].into();
        merge_job_bases(&mut obs, &big, UnlistedJobs::Keep);
        let b = obs.jobs.iter().find(|m| m.job == job("b")).unwrap();
        assert_eq!((b.node_count, b.weight), (u32::MAX, crate::JOB_WEIGHT_MAX));
        // Nothing to merge: nothing changes.
        let before = obs.clone();
        merge_job_bases(&mut obs, &BTreeMap::new(), UnlistedJobs::Keep);
        assert_eq!(obs, before);
    }

    #[test]
    fn unseen_jobs_fill_the_list_only_up_to_its_bound() {
        let jobs: Vec<JobMeta> = (0..KNOWN_JOBS_MAX - 1)
            .map(|i| meta(&format!("j{i:05}"), 1))
            .collect();
        let mut obs = observation_of(jobs);
        let bases: BTreeMap<JobId, u32> = [(job("a0"), 2), (job("x1"), 2), (job("x2"), 2)].into();
        merge_job_bases(&mut obs, &bases, UnlistedJobs::Basis(1));
        assert_eq!(obs.jobs.len(), KNOWN_JOBS_MAX);
        let added: Vec<&str> = obs
            .jobs
            .iter()
            .filter(|m| m.node_count == 2)
            .map(|m| m.job.as_str())
            .collect();
        assert_eq!(
            added,
            ["a0"],
            "the first unseen job in id order takes the one place"
        );
        // A full list takes none, and keeps every listed job.
        merge_job_bases(&mut obs, &bases, UnlistedJobs::Basis(1));
        assert_eq!(obs.jobs.len(), KNOWN_JOBS_MAX);
    }

    #[test]
    fn unnamable_jobs_are_those_with_tbf_syntax() {
        let obs = observation_of(vec![meta("*", 1), meta("a b", 1), meta("ok.1", 1)]);
        let unnamable = unnamable_jobs(&obs);
        let names: Vec<&str> = unnamable.iter().map(|j| j.as_str()).collect();
        assert_eq!(names, ["*", "a b"]);
    }

    fn sample_of(arrived: &[(&str, u64)], served: &[(&str, u64, u64)], queued: u64) -> OstSample {
        OstSample {
            device_queue_rpcs: 0,
            device_time_in_queue_ns: 0,
            arrived: arrived.iter().map(|&(j, n)| (job(j), n)).collect(),
            served_totals: served.iter().map(|&(j, r, b)| (job(j), (r, b))).collect(),
            queued_rpcs: queued,
        }
    }

    #[test]
    fn observations_carry_deltas_and_known_jobs() {
        let mut o = Observer::new(DomainId(0), 2, 500, &[(job("b"), 3)], 1_000);
        let init = o.initial(
            2_000,
            vec![
                sample_of(&[("a", 9)], &[("a", 10, 100)], 0),
                sample_of(&[], &[], 0),
            ],
        );
        assert!(init.domains[0].targets.iter().all(|t| t.jobs.is_empty()));
        assert_eq!(
            init.jobs.len(),
            1,
            "only --job-nodes jobs are known at setup"
        );
        assert_eq!(init.domains[0].capacity_rpcs_per_s(), 1000);

        let obs = o.observe(
            5_000,
            vec![
                sample_of(&[("a", 4), ("c", 2)], &[("a", 13, 160)], 7),
                sample_of(&[], &[("b", 2, 20)], 0),
            ],
        );
        assert_eq!(obs.period_ns, 3_000);
        let t0 = &obs.domains[0].targets[0];
        assert_eq!(t0.queue_len_rpcs, 7);
        let jobs: Vec<_> = t0
            .jobs
            .iter()
            .map(|s| {
                (
                    s.job.as_str(),
                    s.rpcs_arrived,
                    s.rpcs_served,
                    s.bytes_served,
                )
            })
            .collect();
        assert_eq!(jobs, vec![("a", 4, 3, 60), ("c", 2, 0, 0)]);
        assert_eq!(obs.domains[0].targets[1].jobs[0].rpcs_served, 2);
        let known: Vec<_> = obs
            .jobs
            .iter()
            .map(|j| (j.job.as_str(), j.node_count))
            .collect();
        assert_eq!(known, vec![("a", 1), ("b", 3), ("c", 1)]);

        // `a` was cleared and served 2 since: its new total is the delta.
        let obs = o.observe(
            6_000,
            vec![
                sample_of(&[], &[("a", 2, 8)], 0),
                sample_of(&[], &[("b", 2, 20)], 0),
            ],
        );
        let t0 = &obs.domains[0].targets[0];
        assert_eq!((t0.jobs[0].rpcs_served, t0.jobs[0].bytes_served), (2, 8));
        assert!(
            obs.domains[0].targets[1].jobs.is_empty(),
            "no change, no entry"
        );
    }

    proptest::proptest! {
        /// While job_stats only grow, the served deltas of all periods add up to the totals
        /// reached, and every listed job did something.
        #[test]
        fn served_deltas_add_up_to_the_totals(
            steps in proptest::collection::vec(
                proptest::collection::vec((0u64..5, 0u64..5000), 3), 1..20)
        ) {
            let jobs = [job("a"), job("b"), job("c")];
            let mut o = Observer::new(DomainId(0), 1, 100, &[], 0);
            o.initial(0, vec![OstSample::default()]);
            let mut totals = [(0u64, 0u64); 3];
            let mut summed = [(0u64, 0u64); 3];
            for (k, step) in steps.iter().enumerate() {
                for (t, &(r, b)) in totals.iter_mut().zip(step) {
                    *t = (t.0 + r, t.1 + b);
                }
                let sample = OstSample {
                    device_queue_rpcs: 0,
                    device_time_in_queue_ns: 0,
                    arrived: BTreeMap::new(),
                    served_totals: jobs.iter().copied().zip(totals).collect(),
                    queued_rpcs: 0,
                };
                let obs = o.observe(k as u64 + 1, vec![sample]);
                for s in &obs.domains[0].targets[0].jobs {
                    proptest::prop_assert!(s.rpcs_served > 0 || s.bytes_served > 0);
                    let i = jobs.iter().position(|j| *j == s.job).unwrap();
                    summed[i].0 += s.rpcs_served;
                    summed[i].1 += s.bytes_served;
                }
            }
            proptest::prop_assert_eq!(summed, totals);
        }
    }

    proptest::proptest! {
        /// Telling the known jobs a sorted list in one walk leaves them as telling each job
        /// in turn does (last-seen periods updated, new jobs added, pinned jobs kept).
        #[test]
        fn saw_sorted_equals_saw_per_job(
            pinned in proptest::collection::btree_map(0u8..30, 1u32..5, 0..6),
            earlier in proptest::collection::btree_set(0u8..30, 0..20),
            now in proptest::collection::btree_set(0u8..30, 0..20),
        ) {
            let id = |i: u8| job(&format!("j{i:02}"));
            let pinned: Vec<(JobId, u32)> = pinned.into_iter().map(|(i, n)| (id(i), n)).collect();
            let mut walked = KnownJobs::new(&pinned);
            for &i in &earlier {
                walked.saw(id(i), 1);
            }
            let mut each = walked.clone();
            walked.saw_sorted(now.iter().map(|&i| id(i)), 2);
            for &i in &now {
                each.saw(id(i), 2);
            }
            proptest::prop_assert_eq!(format!("{walked:?}"), format!("{each:?}"));
        }
    }

    #[test]
    fn known_jobs_are_bounded_and_the_longest_idle_go_first() {
        let mut o = Observer::new(DomainId(0), 1, 100, &[(job("pinned"), 2)], 0);
        let many = |range: std::ops::Range<usize>| OstSample {
            arrived: range.map(|i| (job(&format!("j{i}")), 1)).collect(),
            ..OstSample::default()
        };
        o.observe(1, vec![many(0..1)]);
        o.observe(2, vec![many(1..KNOWN_JOBS_MAX + 1)]);
        let obs = o.observe(3, vec![OstSample::default()]);
        assert_eq!(obs.jobs.len(), KNOWN_JOBS_MAX);
        let names: BTreeSet<&str> = obs.jobs.iter().map(|j| j.job.as_str()).collect();
        assert!(names.contains("pinned") && !names.contains("j0"));
        assert!(names.contains(format!("j{KNOWN_JOBS_MAX}").as_str()));
    }

    /// One OSS serving two file systems, both with an `OST0000`: two targets with identities of
    /// their own, kept while the other comes and goes, never taken over by a newcomer.
    #[test]
    fn two_file_systems_with_one_index_are_two_targets_for_good() {
        use crate::jobstats::{render_job_stats, JobEntry, JobStatsFormat, OstCounter};
        let entry = |rpcs: u64| {
            let mut e = JobEntry::new(job("a"), 5_000_000_000);
            for _ in 0..rpcs {
                e.counters[OstCounter::WriteBytes as usize].add(1 << 20);
            }
            e
        };
        let one = |fs: &str, rpcs: u64| {
            format!(
                "obdfilter.{fs}-OST0000.job_stats=\n{}",
                render_job_stats(&[entry(rpcs)], JobStatsFormat::Master)
            )
        };
        let ids = |o: &JobStatsObservation| -> Vec<(u32, u64)> {
            o.observation.domains[0]
                .targets
                .iter()
                .map(|t| (t.ost.0, t.jobs.iter().map(|s| s.rpcs_served).sum()))
                .collect()
        };
        let mut o = JobStatsObserver::new(DomainId(0), 100, &[], 0);
        let both = |a: u64, b: u64| format!("{}{}", one("alpha", a), one("beta", b));
        o.observe(1, &both(1, 1), &[]).unwrap();
        let second = o.observe(2, &both(3, 5), &[]).unwrap();
        assert_eq!(ids(&second), vec![(0, 2), (OST_ID_RENUMBERED_FROM, 4)]);
        // `alpha` goes away: `beta` keeps its identity (no renumbering into 0).
        let third = o.observe(3, &one("beta", 6), &[]).unwrap();
        assert_eq!(ids(&third), vec![(OST_ID_RENUMBERED_FROM, 1)]);
        // A third file system's OST0000 takes neither identity.
        let fourth = o
            .observe(4, &format!("{}{}", one("beta", 6), one("gamma", 1)), &[])
            .unwrap();
        let got: Vec<u32> = ids(&fourth).into_iter().map(|(id, _)| id).collect();
        assert_eq!(
            got,
            vec![OST_ID_RENUMBERED_FROM, OST_ID_RENUMBERED_FROM + 1]
        );
        assert!(got.iter().all(|&id| id < OST_ID_LOCAL_LIMIT));
    }

    /// Two polls of a real OSS's job_stats (2.17 layout, OST indexes 0 and 0x1f): the first
    /// is the baseline, the second gives deltas per target, summed per job.
    #[test]
    fn job_stats_polls_become_observations() {
        use crate::jobstats::{render_job_stats, JobEntry, JobStatsFormat, OstCounter};
        let entry = |id: &str, rpcs: u64| {
            let mut e = JobEntry::new(job(id), 5_000_000_000);
            for _ in 0..rpcs {
                e.counters[OstCounter::WriteBytes as usize].add(1 << 20);
            }
            e
        };
        let text = |a: u64, b: u64| {
            format!(
                "obdfilter.fs-OST0000.job_stats=\n{}obdfilter.fs-OST001f.job_stats=\n{}",
                render_job_stats(&[entry("a", a)], JobStatsFormat::Master),
                render_job_stats(&[entry("a", b), entry("b.1", b)], JobStatsFormat::Master)
            )
        };
        let mut o = JobStatsObserver::new(DomainId(3), 250, &[(job("pinned"), 4)], 1_000);
        let listed = vec!["obdfilter.fs-OST0002.job_stats".to_string()];
        let first = o.observe(2_000, &text(5, 5), &listed).unwrap();
        let targets = &first.observation.domains[0].targets;
        assert_eq!(
            targets.iter().map(|t| t.ost).collect::<Vec<_>>(),
            vec![OstId(0), OstId(2), OstId(31)]
        );
        assert!(targets.iter().all(|t| t.jobs.is_empty()), "baseline");
        assert_eq!(first.counts.new_osts, 3);
        let second = o.observe(5_000, &text(7, 8), &listed).unwrap();
        let obs = &second.observation;
        assert_eq!((obs.period_ns, obs.domains[0].domain), (3_000, DomainId(3)));
        assert_eq!(
            obs.domains[0].capacity_rpcs_per_s(),
            750,
            "the listed empty OST counts"
        );
        let t31 = &obs.domains[0].targets[2];
        assert_eq!(
            t31.jobs
                .iter()
                .map(|s| (s.job.as_str(), s.rpcs_served))
                .collect::<Vec<_>>(),
            vec![("a", 3), ("b.1", 3)]
        );
        assert_eq!(
            second.per_job[&job("a")],
            BrwTotals {
                rpcs: 5,
                bytes: 5 << 20
            }
        );
        let known: Vec<_> = obs
            .jobs
            .iter()
            .map(|j| (j.job.as_str(), j.node_count))
            .collect();
        assert_eq!(known, vec![("a", 1), ("b.1", 1), ("pinned", 4)]);
    }

    #[test]
    fn the_ledger_tracks_started_rules_and_policy_changes() {
        let mut l = Ledger::default();
        l.note(&ControlWrite::tbf_rule("start ja jobid={a} rate=5"));
        l.note(&ControlWrite::tbf_rule("start jb jobid={b} rate=5"));
        l.note(&ControlWrite::tbf_rule("change ja rate=7"));
        l.note(&ControlWrite::tbf_rule("stop jb"));
        assert_eq!(l.rules.iter().collect::<Vec<_>>(), vec!["ja"]);
        assert!(!l.policies_changed);
        l.note(&ControlWrite::NrsPolicies("tbf jobid".into()));
        assert!(l.policies_changed);
    }
}
