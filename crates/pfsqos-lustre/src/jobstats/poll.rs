//! Deltas between two reads of `lctl get_param obdfilter.*.job_stats` by the same reader (the
//! Lustre agent), with every way Lustre restarts an entry detected (an entry's
//! `snapshot_time`, `start_time` and counters: `lprocfs_jobstats.c`).
//!
//! A period's work is what the counters gained between the reader's own two polls, never
//! derived from `snapshot_time` (the time of a job's *last update*, not of the read). An entry
//! restarts from zero when:
//! * `job_stats=clear` empties the OST, or `job_cleanup_interval` expires a job: the entry is
//!   gone from the next read; a job that comes back starts from zero with a new `start_time`;
//! * so a job whose `start_time` changed (2.15+ layouts print it) was restarted even if its
//!   counters have already grown past the old values;
//! * and on layouts without `start_time` (2.12-2.14) a counter below its previous value says
//!   the same ([`counters_delta`]).
//!
//! In every restart case everything the new entry holds was done since the previous poll (the
//! entry did not exist then), so the delta is the entry's current value.
//!
//! An OST seen for the first time (the reader's first poll, or an OST mounted since) gives its
//! baseline and no delta: what its counters hold was done before the reader started watching.
//! An OST known from an earlier poll and absent from a read holds no job (2.17+ prints nothing
//! for an empty job_stats): its baseline becomes empty, so its jobs count from zero when they
//! appear. At most [`POLL_OSTS_MAX`] OSTs are followed.

use std::collections::BTreeMap;

use super::{counters_delta, JobEntry, OstCounter};
use crate::model::JobId;

/// Most jobs remembered per OST between polls: Lustre's own bound per OST
/// ([`super::JOBS_PER_OST_MAX`]); a read with more keeps the most recently updated.
pub const POLL_JOBS_PER_OST_MAX: usize = super::JOBS_PER_OST_MAX;

/// Most OSTs one reader follows (an OSS serves a few dozen at most).
pub const POLL_OSTS_MAX: usize = 4096;

/// What a job's bulk RPCs add up to on one OST: RPCs (`samples` of `read_bytes` plus
/// `write_bytes`: one sample per BRW RPC, so comparable with TBF rates) and their bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BrwTotals {
    pub rpcs: u64,
    pub bytes: u64,
}

impl BrwTotals {
    /// The bulk totals of an entry.
    pub fn of(entry: &JobEntry) -> BrwTotals {
        let r = entry.counter(OstCounter::ReadBytes);
        let w = entry.counter(OstCounter::WriteBytes);
        BrwTotals {
            rpcs: r.samples.wrapping_add(w.samples),
            bytes: r.sum.wrapping_add(w.sum),
        }
    }
}

/// What a poller reads of one job's entry: its id, times and bulk totals (what
/// [`super::parse_lctl_brw_lossy`] keeps; [`From<JobEntry>`] for full entries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BrwEntry {
    pub job_id: JobId,
    /// Time of the entry's last update, ns since the epoch.
    pub snapshot_time_ns: u64,
    /// `None` on layouts without it (2.12-2.14).
    pub start_time_ns: Option<u64>,
    /// `read_bytes`: samples (RPCs) and sum (bytes).
    pub read: (u64, u64),
    /// `write_bytes`: samples (RPCs) and sum (bytes).
    pub write: (u64, u64),
}

impl BrwEntry {
    /// An entry with nothing read yet (as a fresh `- job_id:` line leaves it).
    pub fn new(job_id: JobId) -> BrwEntry {
        BrwEntry {
            job_id,
            snapshot_time_ns: 0,
            start_time_ns: None,
            read: (0, 0),
            write: (0, 0),
        }
    }
}

impl From<JobEntry> for BrwEntry {
    fn from(e: JobEntry) -> BrwEntry {
        let r = e.counter(OstCounter::ReadBytes);
        let w = e.counter(OstCounter::WriteBytes);
        BrwEntry {
            job_id: e.job_id,
            snapshot_time_ns: e.snapshot_time_ns,
            start_time_ns: e.start_time_ns,
            read: (r.samples, r.sum),
            write: (w.samples, w.sum),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Seen {
    start_time_ns: Option<u64>,
    /// Per counter that can only grow on a live entry: read samples, read sum, write samples,
    /// write sum.
    counters: [u64; 4],
}

impl Seen {
    fn of(entry: &BrwEntry) -> Seen {
        Seen {
            start_time_ns: entry.start_time_ns,
            counters: [entry.read.0, entry.read.1, entry.write.0, entry.write.1],
        }
    }
}

/// Why a job's delta is its whole current value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// Not seen on this OST at the previous poll (new, or back after expiry or a clear).
    New,
    /// Its `start_time` changed.
    StartTime,
    /// A counter went down (layouts without `start_time`, or a restart within one period).
    CountersDown,
}

/// One job's work on one OST between two polls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobDelta {
    pub job: JobId,
    pub brw: BrwTotals,
    /// `Some` when the entry (re)started since the previous poll.
    pub restart: Option<Restart>,
}

/// One OST's deltas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OstDelta {
    /// The parameter name (`obdfilter.fs-OST0001.job_stats`).
    pub param: String,
    /// False on the OST's first poll: the counters were taken as the baseline.
    pub has_baseline: bool,
    /// Jobs whose counters moved, in job id order.
    pub jobs: Vec<JobDelta>,
}

/// Counts of one poll, for metrics and logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollCounts {
    /// Entries whose `start_time` changed or whose counters went down.
    pub restarts: u64,
    /// Jobs seen at the previous poll and gone now (expired or cleared).
    pub vanished: u64,
    /// OSTs that held jobs and now hold none (most likely `job_stats=clear`).
    pub cleared_osts: u64,
    /// OSTs seen for the first time.
    pub new_osts: u64,
    /// OSTs seen at an earlier poll and absent from this one (no jobs on 2.17+, or gone).
    pub absent_osts: u64,
    /// Entries beyond [`POLL_JOBS_PER_OST_MAX`] or OSTs beyond [`POLL_OSTS_MAX`] left out.
    pub dropped: u64,
}

/// Remembers the previous poll of every OST to take deltas.
#[derive(Debug, Default, Clone)]
pub struct JobStatsPoller {
    /// Per OST, its jobs at the previous poll, sorted by job id (unique): a poll is one merge
    /// of two sorted lists, with no per-job map to build or search.
    prev: BTreeMap<String, Vec<(JobId, Seen)>>,
}

impl JobStatsPoller {
    pub fn new() -> JobStatsPoller {
        JobStatsPoller::default()
    }

    /// OSTs followed now.
    pub fn ost_count(&self) -> usize {
        self.prev.len()
    }

    /// Takes one poll (the parsed output of `lctl get_param obdfilter.*.job_stats`, as
    /// [`super::parse_lctl_brw_lossy`] or [`super::parse_lctl_job_stats`] gives it) and
    /// returns each OST's deltas since the previous poll, in parameter name order.
    pub fn poll<E: Into<BrwEntry>>(
        &mut self,
        osts: Vec<(String, Vec<E>)>,
    ) -> (Vec<OstDelta>, PollCounts) {
        let mut counts = PollCounts::default();
        let mut by_param: BTreeMap<String, Vec<BrwEntry>> = BTreeMap::new();
        for (param, entries) in osts {
            // The same parameter twice (a glob matching it twice) counts once: the later.
            // (`BrwEntry` into itself is collected in place.)
            by_param.insert(param, entries.into_iter().map(Into::into).collect());
        }
        // An OST known from an earlier poll and absent now holds no job: Lustre 2.17+ prints an
        // empty job_stats value, which `lctl get_param` leaves out altogether (`read_param`
        // prints nothing for an empty file). It keeps its (empty) baseline, so the jobs it
        // shows when it is back are counted from zero.
        for (param, prev) in self.prev.iter_mut() {
            if !by_param.contains_key(param) {
                counts.absent_osts += 1;
                counts.vanished += prev.len() as u64;
                if !prev.is_empty() {
                    counts.cleared_osts += 1;
                }
                prev.clear();
            }
        }
        let mut out = Vec::with_capacity(by_param.len());
        for (param, mut entries) in by_param {
            if entries.len() > POLL_JOBS_PER_OST_MAX {
                // Keep the most recently updated, as Lustre's own bound does.
                entries.sort_by_key(|e| std::cmp::Reverse((e.snapshot_time_ns, e.job_id)));
                counts.dropped += (entries.len() - POLL_JOBS_PER_OST_MAX) as u64;
                entries.truncate(POLL_JOBS_PER_OST_MAX);
            }
            let prev = self.prev.remove(&param);
            if prev.is_none() && self.prev.len() >= POLL_OSTS_MAX {
                counts.dropped += entries.len() as u64 + 1;
                continue;
            }
            let has_baseline = prev.is_some();
            if !has_baseline {
                counts.new_osts += 1;
            }
            let prev = prev.unwrap_or_default();
            // Entries in job id order, a job listed twice (never in Lustre) in file order:
            // its first listing gives the delta, its last the baseline of the next poll.
            let mut order: Vec<u32> = (0..entries.len() as u32).collect();
            order.sort_by(|&a, &b| {
                (entries[a as usize].job_id, a).cmp(&(entries[b as usize].job_id, b))
            });
            let mut seen: Vec<(JobId, Seen)> = Vec::with_capacity(entries.len());
            let mut jobs = Vec::new();
            let mut vanished = 0u64;
            let mut p = 0usize;
            for (i, &at) in order.iter().enumerate() {
                let e = &entries[at as usize];
                let now = Seen::of(e);
                if i > 0 && entries[order[i - 1] as usize].job_id == e.job_id {
                    // A later listing of the same job: its values are the next baseline.
                    seen.last_mut().expect("the first listing was kept").1 = now;
                    continue;
                }
                seen.push((e.job_id, now));
                // Jobs of the previous poll before this one in id order are gone.
                while p < prev.len() && prev[p].0 < e.job_id {
                    vanished += 1;
                    p += 1;
                }
                if !has_baseline {
                    continue;
                }
                let before = match prev.get(p) {
                    Some((job, s)) if *job == e.job_id => {
                        p += 1;
                        Some(s)
                    }
                    _ => None,
                };
                let (delta, restart) = match before {
                    None => (now.counters, Some(Restart::New)),
                    Some(p) => {
                        let start_changed = matches!(
                            (p.start_time_ns, now.start_time_ns),
                            (Some(a), Some(b)) if a != b
                        );
                        if start_changed {
                            (now.counters, Some(Restart::StartTime))
                        } else {
                            let d = counters_delta(Some(&p.counters), &now.counters);
                            let down = p.counters.iter().zip(&now.counters).any(|(p, c)| c < p);
                            (d, down.then_some(Restart::CountersDown))
                        }
                    }
                };
                if matches!(restart, Some(Restart::StartTime | Restart::CountersDown)) {
                    counts.restarts += 1;
                }
                let brw = BrwTotals {
                    rpcs: delta[0].wrapping_add(delta[2]),
                    bytes: delta[1].wrapping_add(delta[3]),
                };
                if brw.rpcs > 0 || brw.bytes > 0 {
                    jobs.push(JobDelta {
                        job: e.job_id,
                        brw,
                        restart,
                    });
                }
            }
            vanished += (prev.len() - p) as u64;
            debug_assert!(
                seen.windows(2).all(|w| w[0].0 < w[1].0),
                "the baseline is sorted and unique"
            );
            debug_assert!(
                jobs.windows(2).all(|w| w[0].job < w[1].job),
                "deltas come in job id order"
            );
            if has_baseline {
                counts.vanished += vanished;
                if seen.is_empty() && !prev.is_empty() {
                    counts.cleared_osts += 1;
                }
            }
            out.push(OstDelta {
                param: param.clone(),
                has_baseline,
                jobs,
            });
            self.prev.insert(param, seen);
        }
        (out, counts)
    }
}

/// The OST index in a job_stats parameter name (`obdfilter.fs-OST000a.job_stats` -> 10):
/// the hexadecimal number after the last `-OST` of the middle component.
pub fn ost_index_of_param(param: &str) -> Option<u32> {
    let target = param
        .strip_prefix("obdfilter.")?
        .strip_suffix(".job_stats")?;
    let (_, hex) = target.rsplit_once("-OST")?;
    if hex.is_empty() || hex.len() > 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::super::{
        parse_lctl_job_stats, parse_lctl_job_stats_lossy, render_job_stats, JobStatsFormat,
    };
    use super::*;
    use crate::NS_PER_S;

    fn job(s: &str) -> JobId {
        JobId::new(s).unwrap()
    }

    /// An entry that did `rpcs` writes of `size` bytes, created at `start_s`.
    fn entry(id: &str, start_s: u64, rpcs: u64, size: u64) -> JobEntry {
        let mut e = JobEntry::new(job(id), start_s * NS_PER_S);
        for _ in 0..rpcs {
            e.counters[OstCounter::WriteBytes as usize].add(size);
            e.write_hist.add(size);
        }
        e.snapshot_time_ns = (start_s + 5) * NS_PER_S;
        e
    }

    /// `lctl get_param obdfilter.*.job_stats` over OSTs as `read_param` prints them: a
    /// multi-line value starts on the next line, an empty one prints nothing.
    fn lctl_text(osts: &[(&str, Vec<JobEntry>)], format: JobStatsFormat) -> String {
        let mut out = String::new();
        for (name, entries) in osts {
            let value = render_job_stats(entries, format);
            if value.is_empty() {
                continue;
            }
            let multi = value[..value.len() - 1].contains('\n');
            out.push_str(&format!(
                "obdfilter.{name}.job_stats={}{value}",
                if multi { "\n" } else { "" }
            ));
        }
        out
    }

    fn poll(p: &mut JobStatsPoller, text: &str) -> (Vec<OstDelta>, PollCounts) {
        p.poll(parse_lctl_job_stats(text).unwrap())
    }

    fn deltas(d: &[OstDelta]) -> Vec<(String, String, u64, u64, Option<Restart>)> {
        d.iter()
            .flat_map(|o| {
                o.jobs.iter().map(|j| {
                    (
                        o.param.clone(),
                        j.job.to_string(),
                        j.brw.rpcs,
                        j.brw.bytes,
                        j.restart,
                    )
                })
            })
            .collect()
    }

    const P0: &str = "obdfilter.fs-OST0000.job_stats";
    const P1: &str = "obdfilter.fs-OST0001.job_stats";

    /// 2.17 layout: the first poll is the baseline; then growth, a new job with a quoted id,
    /// an empty OST (absent from lctl's output) that gains a job.
    #[test]
    fn deltas_between_polls_in_the_2_17_layout() {
        let f = JobStatsFormat::Master;
        let mut p = JobStatsPoller::new();
        let t1 = lctl_text(
            &[
                ("fs-OST0000", vec![entry("dd.500", 100, 10, 1 << 20)]),
                ("fs-OST0001", vec![]),
            ],
            f,
        );
        let (d, c) = poll(&mut p, &t1);
        assert_eq!(d.len(), 1, "the empty OST prints nothing: {t1}");
        assert!(!d[0].has_baseline && d[0].jobs.is_empty());
        assert_eq!(c.new_osts, 1);
        let t2 = lctl_text(
            &[
                (
                    "fs-OST0000",
                    vec![
                        entry("dd.500", 100, 14, 1 << 20),
                        entry("ior.1001:n01", 120, 3, 4096),
                    ],
                ),
                ("fs-OST0001", vec![]),
            ],
            f,
        );
        assert!(t2.contains("\"ior.1001:n01\""), "quoted: {t2}");
        let (d, c) = poll(&mut p, &t2);
        assert_eq!(
            deltas(&d),
            vec![
                (P0.into(), "dd.500".into(), 4, 4 << 20, None),
                (
                    P0.into(),
                    "ior.1001:n01".into(),
                    3,
                    3 * 4096,
                    Some(Restart::New)
                ),
            ]
        );
        assert_eq!(c.restarts, 0);
        // OST0001 appears with a job: a new OST gives its baseline only.
        let t3 = lctl_text(
            &[
                ("fs-OST0000", vec![entry("dd.500", 100, 14, 1 << 20)]),
                ("fs-OST0001", vec![entry("x", 130, 2, 100)]),
            ],
            f,
        );
        let (d, c) = poll(&mut p, &t3);
        assert!(deltas(&d).is_empty(), "{:?}", deltas(&d));
        assert_eq!((c.new_osts, c.vanished), (1, 1), "ior went away");
        // OST0001 empties (absent from the output), then the job comes back from zero.
        let t4 = lctl_text(
            &[("fs-OST0000", vec![entry("dd.500", 100, 14, 1 << 20)])],
            f,
        );
        let (_, c) = poll(&mut p, &t4);
        assert_eq!((c.absent_osts, c.cleared_osts, c.vanished), (1, 1, 1));
        let t5 = lctl_text(
            &[
                ("fs-OST0000", vec![entry("dd.500", 100, 14, 1 << 20)]),
                ("fs-OST0001", vec![entry("x", 200, 1, 100)]),
            ],
            f,
        );
        let (d, _) = poll(&mut p, &t5);
        assert_eq!(
            deltas(&d),
            vec![(P1.into(), "x".into(), 1, 100, Some(Restart::New))]
        );
    }

    /// A job restarted within one period (cleared or expired, then back): a changed
    /// `start_time` makes the delta the whole new value even when it is above the old one.
    #[test]
    fn a_new_start_time_restarts_the_job() {
        for f in [
            JobStatsFormat::Lustre2_15,
            JobStatsFormat::Lustre2_16,
            JobStatsFormat::Master,
        ] {
            let mut p = JobStatsPoller::new();
            poll(
                &mut p,
                &lctl_text(&[("fs-OST0000", vec![entry("a", 100, 5, 10)])], f),
            );
            let (d, c) = poll(
                &mut p,
                &lctl_text(&[("fs-OST0000", vec![entry("a", 700, 8, 10)])], f),
            );
            assert_eq!(
                deltas(&d),
                vec![(P0.into(), "a".into(), 8, 80, Some(Restart::StartTime))],
                "{f:?}"
            );
            assert_eq!(c.restarts, 1);
        }
    }

    /// 2.12 prints no `start_time`: a counter going down is the restart.
    #[test]
    fn counters_going_down_restart_the_job_in_the_2_12_layout() {
        let f = JobStatsFormat::Legacy2_12;
        let mut p = JobStatsPoller::new();
        let text = lctl_text(
            &[("fs-OST0000", vec![entry("dd.500", 100, 100, 1 << 20)])],
            f,
        );
        assert!(!text.contains("start_time"));
        poll(&mut p, &text);
        let (d, _) = poll(
            &mut p,
            &lctl_text(
                &[("fs-OST0000", vec![entry("dd.500", 100, 103, 1 << 20)])],
                f,
            ),
        );
        assert_eq!(
            deltas(&d),
            vec![(P0.into(), "dd.500".into(), 3, 3 << 20, None)]
        );
        let (d, c) = poll(
            &mut p,
            &lctl_text(&[("fs-OST0000", vec![entry("dd.500", 100, 2, 1 << 20)])], f),
        );
        assert_eq!(
            deltas(&d),
            vec![(
                P0.into(),
                "dd.500".into(),
                2,
                2 << 20,
                Some(Restart::CountersDown)
            )]
        );
        assert_eq!(c.restarts, 1);
    }

    /// `job_stats=clear` on 2.16 leaves `job_stats:` alone; the jobs vanish and come back
    /// from zero.
    #[test]
    fn a_clear_empties_the_ost_and_jobs_restart_from_zero() {
        let f = JobStatsFormat::Lustre2_16;
        let mut p = JobStatsPoller::new();
        let full = vec![entry("a", 100, 5, 10), entry("b", 100, 7, 10)];
        poll(&mut p, &lctl_text(&[("fs-OST0000", full)], f));
        let empty = lctl_text(&[("fs-OST0000", vec![])], f);
        assert_eq!(empty, format!("{P0}=job_stats:\n"));
        let (d, c) = poll(&mut p, &empty);
        assert!(deltas(&d).is_empty());
        assert_eq!((c.cleared_osts, c.vanished, c.absent_osts), (1, 2, 0));
        let (d, _) = poll(
            &mut p,
            &lctl_text(&[("fs-OST0000", vec![entry("a", 300, 1, 10)])], f),
        );
        assert_eq!(
            deltas(&d),
            vec![(P0.into(), "a".into(), 1, 10, Some(Restart::New))]
        );
    }

    /// One unreadable entry (an escaped newline, non-UTF-8 bytes) is left out by the lossy
    /// parser; the others are read.
    #[test]
    fn the_lossy_parser_leaves_out_unreadable_entries_only() {
        let good = lctl_text(
            &[("fs-OST0000", vec![entry("ok", 100, 1, 10)])],
            JobStatsFormat::Master,
        );
        let bad_entry = |id: &str| {
            format!(
                "- job_id:          {id}\n  snapshot_time:   1.000000000 secs.nsecs\n  \
                 write_bytes:     {{ samples:           1, unit: bytes, min: 1, max: 1, sum: 1 }}\n"
            )
        };
        for bad in ["\"a\\x0ab\"", "\"\\xff\\xfe\"", &"x".repeat(40)] {
            let text = format!("{good}{}", bad_entry(bad));
            // The strict parser fails, or (non-UTF-8 once unescaped) takes the quoted text
            // as a raw pre-2.15.2 id.
            let strict = parse_lctl_job_stats(&text);
            assert!(strict.is_err() || strict.unwrap()[0].1.len() == 2, "{bad}");
            let (osts, skipped) = parse_lctl_job_stats_lossy(&text).unwrap();
            assert_eq!(skipped, 1, "{bad}");
            assert_eq!(osts[0].1.len(), 1);
            assert_eq!(osts[0].1[0].job_id.as_str(), "ok");
        }
        // A garbled counter line drops its entry only.
        let text = format!("{good}- job_id:          z\n  write_bytes: garbage\n");
        let (osts, skipped) = parse_lctl_job_stats_lossy(&text).unwrap();
        assert_eq!((osts[0].1.len(), skipped), (1, 1));
    }

    #[test]
    fn ost_indexes_come_from_the_parameter_name() {
        assert_eq!(ost_index_of_param(P1), Some(1));
        assert_eq!(
            ost_index_of_param("obdfilter.my-fs-OST00ff.job_stats"),
            Some(255)
        );
        assert_eq!(ost_index_of_param("obdfilter.fs-MDT0000.job_stats"), None);
        assert_eq!(ost_index_of_param("mdt.fs-OST0000.job_stats"), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            rng_seed: proptest::test_runner::RngSeed::Fixed(17),
            ..proptest::prelude::ProptestConfig::default()
        })]
        /// Whatever sequence of growth, restarts and absences, the deltas of all polls add up
        /// to what the entries did after the first poll.
        #[test]
        fn deltas_add_up_to_the_work_done(
            steps in proptest::collection::vec((0u64..4, 0u8..10), 1..30)
        ) {
            let f = JobStatsFormat::Master;
            let mut p = JobStatsPoller::new();
            let mut start = 1u64;
            let mut rpcs = 0u64;
            poll(&mut p, &lctl_text(&[("fs-OST0000", vec![entry("j", start, 0, 8)])], f));
            let mut done = 0u64;
            let mut seen = 0u64;
            for (grow, event) in steps {
                // Restart (expiry or clear, then back) within the period.
                if event == 0 {
                    start += 1;
                    rpcs = 0;
                }
                rpcs += grow;
                done += grow;
                let osts = if event == 1 && rpcs == 0 {
                    vec![("fs-OST0000", vec![])]
                } else {
                    vec![("fs-OST0000", vec![entry("j", start, rpcs, 8)])]
                };
                let (d, _) = poll(&mut p, &lctl_text(&osts, f));
                for o in &d {
                    for j in &o.jobs {
                        proptest::prop_assert_eq!(j.brw.bytes, j.brw.rpcs * 8);
                        seen += j.brw.rpcs;
                    }
                }
            }
            proptest::prop_assert_eq!(seen, done);
        }
    }
}
