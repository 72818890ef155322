//! The ossd's run-time table of job node counts (`ost.OSS.ost_io.job_nodes`): the AdapTBF and
//! Static BW priority basis, and the default proportional-share weight
//! (`pfsqos_core::control::default_job_weight`).
//!
//! Where a node count comes from, highest precedence first:
//! 1. the administrator: `--job-nodes JOB=N` / the cluster file's `oss[i].job_nodes` at
//!    start, and `lctl set_param ost.OSS.ost_io.job_nodes="JOB=N"` at run time (the latest
//!    administrator write wins; `JOB=clear` removes the administrator's value);
//! 2. the mounts: every I/O RPC carries the node count its mount read from the issuing
//!    process's environment (`--jobnodes-var`, default `SLURM_JOB_NUM_NODES`); the latest
//!    report wins;
//! 3. nothing: the job counts as one node.
//!
//! Bounded: at most [`JOB_NODES_TRACKED_MAX`] jobs. A new job in a full table evicts the
//! sixteenth of mount-reported jobs seen longest ago (counted); administrator entries are never
//! evicted, so when every entry is an administrator's a mount report is dropped (counted) and
//! an administrator's new job is refused with `ENOSPC`.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use pfsqos_core::control::agent::KNOWN_JOBS_MAX;
use pfsqos_core::jobstats::{quote_job_id, unquote_job_id};
use pfsqos_core::model::JobId;
use pfsqos_wire::protocol::{Errno, RemoteError, JOB_NODES_MAX};

/// Most jobs the table holds: as many as the controller is told about.
pub const JOB_NODES_TRACKED_MAX: usize = KNOWN_JOBS_MAX;

/// A full table evicts this fraction (1/N) of its mount-reported entries at once.
pub const EVICT_BATCH_DIVISOR: usize = 16;

/// Who set an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodesSource {
    /// `--job-nodes`, the cluster file or `lctl set_param`: wins over mounts, never evicted.
    Admin,
    /// Reported by a mount with the job's RPCs.
    Mount,
}

impl NodesSource {
    fn name(self) -> &'static str {
        match self {
            NodesSource::Admin => "admin",
            NodesSource::Mount => "mount",
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    nodes: u32,
    source: NodesSource,
    /// When an RPC of the job last arrived (or the administrator set it), daemon ns.
    last_seen_ns: u64,
}

/// What the table did since the daemon started (metric `pfsqos_oss_job_nodes_total`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobNodesCounters {
    /// Mount reports that added a job or changed its count.
    pub learned: u64,
    /// Mount reports for a job an administrator set (the administrator's count stays).
    pub overridden: u64,
    /// Mount-reported jobs evicted to make room.
    pub evicted: u64,
    /// Mount reports dropped: the table was full of administrator entries.
    pub dropped: u64,
    /// Administrator writes applied (set or clear).
    pub admin_writes: u64,
    /// Administrator writes refused (syntax, bounds, unknown job, full table).
    pub admin_refused: u64,
}

impl JobNodesCounters {
    /// (counter name, value), as the metric labels them.
    pub fn fields(&self) -> [(&'static str, u64); 6] {
        [
            ("learned", self.learned),
            ("overridden", self.overridden),
            ("evicted", self.evicted),
            ("dropped", self.dropped),
            ("admin_writes", self.admin_writes),
            ("admin_refused", self.admin_refused),
        ]
    }
}

/// Node counts by job; see the module documentation.
#[derive(Debug)]
pub struct JobNodes {
    entries: HashMap<JobId, Entry>,
    counters: JobNodesCounters,
    /// Changes whenever a job's node count changes, so a reader can tell cheaply.
    generation: u64,
}

/// Why an administrator's node count for `job` is refused, if it is: an id holding `*` reads as
/// a pattern (Lustre's TBF matches `jobid={dd.*}` as a wildcard), but the table holds job ids
/// and matches them exactly, so `dd.*=4` would give no job 4 nodes. Refused with this message
/// instead of being dropped silently.
pub fn admin_job_refusal(job: &JobId) -> Option<String> {
    job.as_str().contains('*').then(|| {
        format!(
            "job {:?}: node counts name jobs one by one; `*` would be a pattern (TBF's jobid \
             wildcard), which the node table does not match: give each job's id",
            job.as_str()
        )
    })
}

fn einval(message: String) -> RemoteError {
    RemoteError::new(Errno::EINVAL, message)
}

impl JobNodes {
    /// A table holding the administrator's start-up counts. The caller has validated them
    /// (`ControlConfig::capacity`: at most 4096, each in 1..=`JOB_NODES_MAX`, no job twice).
    pub fn new(start: &[(JobId, u32)]) -> JobNodes {
        assert!(start.len() <= JOB_NODES_TRACKED_MAX);
        let entries = start
            .iter()
            .map(|&(job, nodes)| {
                assert!((1..=JOB_NODES_MAX).contains(&nodes));
                let e = Entry {
                    nodes,
                    source: NodesSource::Admin,
                    last_seen_ns: 0,
                };
                (job, e)
            })
            .collect();
        JobNodes {
            entries,
            counters: JobNodesCounters::default(),
            generation: 0,
        }
    }

    pub fn counters(&self) -> JobNodesCounters {
        self.counters
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The node count of `job`, if anyone stated one.
    pub fn nodes(&self, job: &JobId) -> Option<u32> {
        self.entries.get(job).map(|e| e.nodes)
    }

    /// Every job's node count, sorted by job.
    pub fn snapshot(&self) -> BTreeMap<JobId, u32> {
        self.entries.iter().map(|(&j, e)| (j, e.nodes)).collect()
    }

    /// An RPC of `job` arrived at `now_ns`, stating `nodes` (already checked on decode to be
    /// in 1..=`JOB_NODES_MAX`) or none. A job without a count is only marked seen.
    pub fn saw(&mut self, job: JobId, nodes: Option<u32>, now_ns: u64) {
        if let Some(e) = self.entries.get_mut(&job) {
            e.last_seen_ns = now_ns;
            match (nodes, e.source) {
                (Some(n), NodesSource::Admin) if n != e.nodes => self.counters.overridden += 1,
                (Some(n), NodesSource::Mount) if n != e.nodes => {
                    e.nodes = n;
                    self.counters.learned += 1;
                    self.generation += 1;
                }
                _ => {}
            }
            return;
        }
        let Some(nodes) = nodes else { return };
        debug_assert!((1..=JOB_NODES_MAX).contains(&nodes));
        if self.entries.len() >= JOB_NODES_TRACKED_MAX && !self.evict_one() {
            self.counters.dropped += 1;
            return;
        }
        self.entries.insert(
            job,
            Entry {
                nodes,
                source: NodesSource::Mount,
                last_seen_ns: now_ns,
            },
        );
        self.counters.learned += 1;
        self.generation += 1;
    }

    /// Evicts the mount-reported entries seen longest ago: one in
    /// [`EVICT_BATCH_DIVISOR`] of them (at least one; ties broken by the smallest job id, so
    /// the choice is deterministic); false if every entry is an administrator's. One scan
    /// frees room for many new jobs, so a client that sends a new job id with every RPC to a
    /// full table costs one scan of the table per `len / EVICT_BATCH_DIVISOR` new jobs, not
    /// one per RPC. An evicted job loses nothing it cannot get back: its mount states its
    /// count on every RPC, so its next RPC enters it again.
    fn evict_one(&mut self) -> bool {
        let mut mounts: Vec<(u64, JobId)> = self
            .entries
            .iter()
            .filter(|(_, e)| e.source == NodesSource::Mount)
            .map(|(&j, e)| (e.last_seen_ns, j))
            .collect();
        if mounts.is_empty() {
            return false;
        }
        let batch = (mounts.len() / EVICT_BATCH_DIVISOR).max(1);
        if batch < mounts.len() {
            mounts.select_nth_unstable(batch - 1);
        }
        for (_, job) in &mounts[..batch] {
            let removed = self.entries.remove(job);
            assert!(removed.is_some_and(|e| e.source == NodesSource::Mount));
        }
        self.counters.evicted += batch as u64;
        self.generation += 1;
        true
    }

    /// `lctl set_param ost.OSS.ost_io.job_nodes=VALUE`: `JOB=N` sets the administrator's
    /// count (N in 1..=`JOB_NODES_MAX`), `JOB=clear` removes it. JOB is raw or quoted as the
    /// listing prints it; the text after the last `=` is the count, so a job id may hold `=`.
    pub fn admin_write(&mut self, value: &str, now_ns: u64) -> Result<(), RemoteError> {
        let result = self.try_admin_write(value, now_ns);
        match result {
            Ok(()) => self.counters.admin_writes += 1,
            Err(_) => self.counters.admin_refused += 1,
        }
        result
    }

    fn try_admin_write(&mut self, value: &str, now_ns: u64) -> Result<(), RemoteError> {
        let value = value.trim();
        let (job_text, count) = value
            .rsplit_once('=')
            .ok_or_else(|| einval("job_nodes takes JOB=N or JOB=clear".to_string()))?;
        let job_text = unquote_job_id(job_text).map_err(einval)?;
        let job = JobId::new(&job_text).map_err(|e| einval(format!("job id: {e}")))?;
        if job.is_empty() {
            return Err(einval("job_nodes: the job id is empty".to_string()));
        }
        if let Some(why) = admin_job_refusal(&job) {
            return Err(einval(why));
        }
        if count == "clear" {
            return match self.entries.get(&job) {
                Some(e) if e.source == NodesSource::Admin => {
                    self.entries.remove(&job);
                    self.generation += 1;
                    Ok(())
                }
                _ => Err(RemoteError::new(
                    Errno::ENOENT,
                    format!(
                        "job {} has no administrator's node count",
                        quote_job_id(job.as_str())
                    ),
                )),
            };
        }
        let nodes = count
            .parse::<u32>()
            .ok()
            .filter(|n| {
                (1..=JOB_NODES_MAX).contains(n) && count.bytes().all(|b| b.is_ascii_digit())
            })
            .ok_or_else(|| {
                einval(format!(
                    "job_nodes: the count must be 1..={JOB_NODES_MAX} or `clear`"
                ))
            })?;
        if !self.entries.contains_key(&job)
            && self.entries.len() >= JOB_NODES_TRACKED_MAX
            && !self.evict_one()
        {
            return Err(RemoteError::new(
                Errno::ENOSPC,
                format!(
                    "job_nodes holds {JOB_NODES_TRACKED_MAX} administrator entries; clear one first"
                ),
            ));
        }
        let old = self.entries.insert(
            job,
            Entry {
                nodes,
                source: NodesSource::Admin,
                last_seen_ns: now_ns,
            },
        );
        if old.map(|e| e.nodes) != Some(nodes) {
            self.generation += 1;
        }
        Ok(())
    }

    /// The listing `lctl get_param ost.OSS.ost_io.job_nodes` prints: one block per job,
    /// sorted by job id, the id printed as job_stats prints it (quoted and escaped when it
    /// holds unusual bytes); empty when no job is known.
    pub fn render(&self) -> String {
        let mut sorted: Vec<(&JobId, &Entry)> = self.entries.iter().collect();
        sorted.sort_unstable_by_key(|(j, _)| **j);
        let mut out = String::new();
        for (job, e) in sorted {
            let _ = write!(
                out,
                "- job_id: {}\n  nodes: {}\n  source: {}\n",
                quote_job_id(job.as_str()),
                e.nodes,
                e.source.name()
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(s: &str) -> JobId {
        JobId::new(s).unwrap()
    }

    #[test]
    fn the_administrator_wins_over_mounts_and_mounts_over_nothing() {
        let mut t = JobNodes::new(&[(job("a"), 4)]);
        t.saw(job("a"), Some(2), 10);
        assert_eq!(t.nodes(&job("a")), Some(4), "the start-up count wins");
        assert_eq!(t.counters().overridden, 1);
        t.saw(job("b"), Some(2), 10);
        t.saw(job("b"), Some(3), 11);
        assert_eq!(t.nodes(&job("b")), Some(3), "the latest mount report");
        t.saw(job("c"), None, 12);
        assert_eq!(
            t.nodes(&job("c")),
            None,
            "nothing stated: one node, no entry"
        );
        // The administrator corrects a mount's count and a start-up count.
        t.admin_write("b=8", 13).unwrap();
        t.admin_write("a=1", 13).unwrap();
        t.saw(job("b"), Some(3), 14);
        assert_eq!(t.snapshot(), [(job("a"), 1), (job("b"), 8)].into());
        // Clearing returns the job to its mounts' reports.
        t.admin_write("b=clear", 15).unwrap();
        assert_eq!(t.nodes(&job("b")), None);
        t.saw(job("b"), Some(3), 16);
        assert_eq!(t.nodes(&job("b")), Some(3));
        assert_eq!(t.counters().admin_writes, 3);
    }

    #[test]
    fn administrator_writes_are_validated() {
        let mut t = JobNodes::new(&[]);
        for (bad, errno) in [
            ("a", Errno::EINVAL),
            ("a=0", Errno::EINVAL),
            ("a=-1", Errno::EINVAL),
            ("a=+2", Errno::EINVAL),
            ("a=abc", Errno::EINVAL),
            ("a=1000001", Errno::EINVAL),
            ("a=99999999999", Errno::EINVAL),
            ("=3", Errno::EINVAL),
            ("\"unterminated=3", Errno::EINVAL),
            (&format!("{}=3", "x".repeat(32)), Errno::EINVAL),
            ("a=clear", Errno::ENOENT),
            ("dd.*=4", Errno::EINVAL),
        ] {
            let e = t.admin_write(bad, 0).unwrap_err();
            assert_eq!(e.errno, errno, "{bad}");
        }
        assert!(t.is_empty());
        assert_eq!(t.counters().admin_refused, 12);
        let e = t.admin_write("dd.*=4", 0).unwrap_err();
        assert!(e.message.contains("pattern"), "{e}");
        // A mount's entry cannot be cleared as if it were the administrator's.
        t.saw(job("m"), Some(2), 0);
        assert_eq!(
            t.admin_write("m=clear", 0).unwrap_err().errno,
            Errno::ENOENT
        );
        // Job ids may hold `=` and be given quoted as the listing prints them.
        t.admin_write("x=y=5", 0).unwrap();
        assert_eq!(t.nodes(&job("x=y")), Some(5));
        t.admin_write("\"sp ace\"=6\n", 0).unwrap();
        assert_eq!(t.nodes(&job("sp ace")), Some(6));
    }

    #[test]
    fn the_listing_is_sorted_and_escapes_job_ids() {
        let mut t = JobNodes::new(&[(job("z"), 2)]);
        t.saw(job("a b\"c"), Some(7), 0);
        let text = t.render();
        assert_eq!(
            text,
            format!(
                "- job_id: {}\n  nodes: 7\n  source: mount\n- job_id: z\n  nodes: 2\n  source: admin\n",
                quote_job_id("a b\"c")
            )
        );
        // What the listing prints can be written back.
        let quoted = quote_job_id("a b\"c");
        t.admin_write(&format!("{quoted}=9"), 1).unwrap();
        assert_eq!(t.nodes(&job("a b\"c")), Some(9));
        assert_eq!(JobNodes::new(&[]).render(), "");
    }

    #[test]
    fn the_table_is_bounded_and_evicts_the_longest_unseen_mount_entry() {
        let admin: Vec<(JobId, u32)> = (0..10).map(|i| (job(&format!("adm{i}")), 3)).collect();
        let mut t = JobNodes::new(&admin);
        for i in 0..JOB_NODES_TRACKED_MAX - 10 {
            t.saw(job(&format!("m{i}")), Some(2), 100 + i as u64);
        }
        assert_eq!(t.len(), JOB_NODES_TRACKED_MAX);
        // m0 is the oldest; seeing it again makes m1 the oldest.
        t.saw(job("m0"), None, 1_000_000);
        t.saw(job("new"), Some(5), 1_000_001);
        let mounts = JOB_NODES_TRACKED_MAX - 10;
        let batch = mounts / EVICT_BATCH_DIVISOR;
        assert!(batch > 1);
        // The `batch` longest unseen went (m1 ..= m{batch}); m0, seen again, and the rest stay.
        assert_eq!(t.len(), JOB_NODES_TRACKED_MAX - batch + 1);
        assert_eq!(t.counters().evicted, batch as u64);
        for i in 1..=batch {
            assert_eq!(
                t.nodes(&job(&format!("m{i}"))),
                None,
                "m{i} was among the oldest"
            );
        }
        assert_eq!(t.nodes(&job(&format!("m{}", batch + 1))), Some(2));
        assert_eq!(t.nodes(&job("m0")), Some(2));
        assert_eq!(t.nodes(&job("new")), Some(5));
        // The room made takes the next batch - 1 new jobs without another eviction.
        for i in 0..batch - 1 {
            t.saw(job(&format!("n{i}")), Some(1), 1_000_002 + i as u64);
        }
        assert_eq!(t.len(), JOB_NODES_TRACKED_MAX);
        assert_eq!(t.counters().evicted, batch as u64);
        // An evicted job's next RPC states its count again.
        t.saw(job("m1"), Some(2), 2_000_000);
        assert_eq!(t.nodes(&job("m1")), Some(2));
        assert!(t.counters().evicted > batch as u64);
        // An administrator's new job in a full table also takes mount entries' place.
        for i in 0..batch - 1 {
            t.saw(job(&format!("p{i}")), Some(1), 2_000_000 + i as u64);
        }
        assert_eq!(t.len(), JOB_NODES_TRACKED_MAX);
        let oldest_left = format!("m{}", 2 * batch + 1);
        assert_eq!(t.nodes(&job(&oldest_left)), Some(2));
        t.admin_write("adm-new=4", 2_000_001).unwrap();
        assert_eq!(t.nodes(&job("adm-new")), Some(4));
        assert_eq!(t.nodes(&job(&oldest_left)), None);
        assert!(t.len() <= JOB_NODES_TRACKED_MAX);
        assert!(
            admin.iter().all(|(j, _)| t.nodes(j) == Some(3)),
            "admin entries stay"
        );
    }

    #[test]
    fn a_table_full_of_administrator_entries_drops_reports_and_refuses_new_jobs() {
        let admin: Vec<(JobId, u32)> = (0..JOB_NODES_TRACKED_MAX)
            .map(|i| (job(&format!("adm{i}")), 1))
            .collect();
        let mut t = JobNodes::new(&admin);
        t.saw(job("m"), Some(2), 1);
        assert_eq!(t.nodes(&job("m")), None);
        assert_eq!(t.counters().dropped, 1);
        assert_eq!(t.admin_write("x=2", 1).unwrap_err().errno, Errno::ENOSPC);
        // Changing an existing job needs no room.
        t.admin_write("adm0=2", 1).unwrap();
        assert_eq!(t.nodes(&job("adm0")), Some(2));
    }

    #[test]
    fn the_generation_changes_only_with_a_count() {
        let mut t = JobNodes::new(&[]);
        let g0 = t.generation();
        t.saw(job("a"), None, 0);
        assert_eq!(t.generation(), g0);
        t.saw(job("a"), Some(2), 0);
        let g1 = t.generation();
        assert!(g1 > g0);
        t.saw(job("a"), Some(2), 1);
        t.admin_write("a=2", 2).unwrap();
        assert_eq!(t.generation(), g1, "same count, no change");
        t.admin_write("a=3", 2).unwrap();
        assert!(t.generation() > g1);
    }
}
