//! iez on the live MDS (IPDPS'19, Section III): the **interaction database** (predicted files
//! per application and the OST lists chosen for them, Tables I and II) in the namespace's
//! SQLite, the **ossds' statistics** (space and load, reported over the pfsqos protocol every
//! period), and the choice made at each create: iez's layout when the database has a row for
//! the new file's path and the statistics allow it, round robin otherwise.
//!
//! Rows are keyed by the file's path from the root, as iez's placement library looks files up
//! by name (§III-A4): creates of many ranks in any order each meet their own file's row. The
//! OSTs of an application's rows are chosen together by core's Algorithm 2
//! ([`pfsqos_core::place::iez::allocate_osts`]) over the latest statistics, at load time if
//! the statistics are fresh, else at the first create that finds them fresh.
//!
//! **Other applications' rows** (the paper's interaction database holds every application's
//! predictions): when an application's rows are planned, the planned rows of other
//! applications whose files are not created yet reserve their stripes on their OSTs (Algorithm
//! 2's `reserved` bytes), so two applications loaded one after the other do not both plan onto
//! the same empty OSTs. A row is marked created (`created = 1`) by the first create that meets
//! it, whoever placed the file: from then on its bytes are the OSTs' (counted as placed until
//! the OSS's next report, then in the report). A load resets its rows to not created.
//!
//! **Why rows are keyed by path, not by (application, path)**: a create carries no job id
//! (`MdsOp::Create`), so the MDS could not tell which application's row a create meets; and a
//! path names one file of the namespace at a time, so two applications predicting the same path
//! predict the same file: the later load takes the row over.
//!
//! A create with a row falls back to round robin (a `warn` line and a counter each, the file
//! is created all the same) when: an OSS never reported or its report is older than the
//! allowed age; the row's plan names an OST the file system does not have; an OST of the plan
//! has less room than the stripe needs (free bytes of the last report less what iez placed on
//! it since); the plan could not be made; the create asked for an explicit layout; the MDS is
//! busy (its own CPU at 70 % or more, or memory at 50 % or more, §III-B2; measured by
//! [`crate::load`], the gate applies only while a reading is known). A load while busy stores
//! the rows unplanned; the first create that finds the MDS not busy plans them.

use std::fmt;

use pfsqos_core::model::{OssId, OstId};
use pfsqos_core::place::iez::{
    allocate_osts, mds_busy as core_mds_busy, IezConfig, MDS_CPU_UTIL_MAX, MDS_MEM_UTIL_MAX,
};
use pfsqos_core::place::stripe::PREDICTED_FILE_BYTES_MAX;
use pfsqos_core::place::{OstStats, PredictedFile, ServerLoad, ServerStats, STRIPE_COUNT_MAX};
use pfsqos_wire::mds::{
    IezPrediction, OssReport, IEZ_APP_LEN_MAX, IEZ_FILES_PER_LOAD_MAX, IEZ_PATH_LEN_MAX,
    UTIL_PPM_MAX,
};
use pfsqos_wire::protocol::{Errno, RemoteError};
use rusqlite::{params, Connection, OptionalExtension};

use crate::{db_err, err, OssSpec};

/// Default age after which an OSS's statistics are stale: three of the paper's 60 s periods.
pub const STATS_MAX_AGE_DEFAULT_MS: u64 = 180_000;

pub(crate) const IEZ_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS iez_predictions (
    path            TEXT PRIMARY KEY,
    app             TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    predicted_bytes INTEGER NOT NULL,
    stripe_count    INTEGER NOT NULL,
    stripe_size     INTEGER,
    osts            TEXT,
    created         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS iez_predictions_by_app ON iez_predictions(app, seq);
CREATE TABLE IF NOT EXISTS placements (
    ino    INTEGER PRIMARY KEY,
    policy TEXT NOT NULL,
    reason TEXT
);
";

/// Why a create with a prediction was placed by round robin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fallback {
    ExplicitLayout,
    StatsMissing {
        oss: String,
    },
    StatsStale {
        oss: String,
        age_ms: u64,
        max_age_ms: u64,
    },
    Unplanned(String),
    MissingOst {
        ost: u32,
        ost_count: u32,
    },
    NoFreeSpace {
        ost: u32,
        room_bytes: u64,
        share_bytes: u64,
    },
    /// The MDS's own load, in ppm, at or above iez's limits.
    MdsBusy {
        cpu_util_ppm: u32,
        mem_util_ppm: u32,
    },
}

fn ppm(x: f64) -> u32 {
    (x.clamp(0.0, 1.0) * f64::from(UTIL_PPM_MAX)).round() as u32
}

/// [`Fallback::MdsBusy`] when `load` is at or above iez's limits.
pub fn mds_busy(load: Option<ServerLoad>) -> Option<Fallback> {
    let l = load?;
    core_mds_busy(&l).then(|| Fallback::MdsBusy {
        cpu_util_ppm: ppm(l.cpu_util),
        mem_util_ppm: ppm(l.mem_util),
    })
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fallback::ExplicitLayout => write!(f, "the create asked for its own layout"),
            Fallback::StatsMissing { oss } => write!(f, "no statistics from OSS {oss:?} yet"),
            Fallback::StatsStale {
                oss,
                age_ms,
                max_age_ms,
            } => write!(
                f,
                "statistics of OSS {oss:?} are {age_ms} ms old (at most {max_age_ms} ms used)"
            ),
            Fallback::Unplanned(why) => write!(f, "iez could not plan the file: {why}"),
            Fallback::MissingOst { ost, ost_count } => write!(
                f,
                "the prediction names OST {ost}, the file system has {ost_count} OSTs"
            ),
            Fallback::NoFreeSpace {
                ost,
                room_bytes,
                share_bytes,
            } => write!(
                f,
                "OST {ost} has {room_bytes} bytes of room, the stripe needs {share_bytes}"
            ),
            Fallback::MdsBusy {
                cpu_util_ppm,
                mem_util_ppm,
            } => write!(
                f,
                "MDS busy (CPU {:.1} %, memory {:.1} %; iez runs below {:.0} % and {:.0} %)",
                f64::from(*cpu_util_ppm) / 1e4,
                f64::from(*mem_util_ppm) / 1e4,
                MDS_CPU_UTIL_MAX * 100.0,
                MDS_MEM_UTIL_MAX * 100.0
            ),
        }
    }
}

/// What iez did, counted since the MDS started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IezCounters {
    /// Creates placed by iez's plan.
    pub placed: u64,
    /// Creates with a prediction that fell back, by reason.
    pub fallback_explicit_layout: u64,
    pub fallback_stats_missing: u64,
    pub fallback_stats_stale: u64,
    pub fallback_unplanned: u64,
    pub fallback_missing_ost: u64,
    pub fallback_no_free_space: u64,
    pub fallback_mds_busy: u64,
    /// Prediction loads committed, and the rows they held.
    pub loads: u64,
    pub rows_loaded: u64,
    pub reports_accepted: u64,
    pub reports_refused: u64,
}

impl IezCounters {
    fn count(&mut self, f: &Fallback) {
        let c = match f {
            Fallback::ExplicitLayout => &mut self.fallback_explicit_layout,
            Fallback::StatsMissing { .. } => &mut self.fallback_stats_missing,
            Fallback::StatsStale { .. } => &mut self.fallback_stats_stale,
            Fallback::Unplanned(_) => &mut self.fallback_unplanned,
            Fallback::MissingOst { .. } => &mut self.fallback_missing_ost,
            Fallback::NoFreeSpace { .. } => &mut self.fallback_no_free_space,
            Fallback::MdsBusy { .. } => &mut self.fallback_mds_busy,
        };
        *c += 1;
    }

    /// Creates with a prediction that iez did not place.
    pub fn fallbacks(&self) -> u64 {
        self.fallback_explicit_layout
            + self.fallback_stats_missing
            + self.fallback_stats_stale
            + self.fallback_unplanned
            + self.fallback_missing_ost
            + self.fallback_no_free_space
            + self.fallback_mds_busy
    }

    /// Fallbacks by cause, named as the metrics endpoint labels them.
    pub fn fallbacks_by_cause(&self) -> [(&'static str, u64); 7] {
        [
            ("explicit_layout", self.fallback_explicit_layout),
            ("stats_missing", self.fallback_stats_missing),
            ("stats_stale", self.fallback_stats_stale),
            ("unplanned", self.fallback_unplanned),
            ("missing_ost", self.fallback_missing_ost),
            ("no_free_space", self.fallback_no_free_space),
            ("mds_busy", self.fallback_mds_busy),
        ]
    }
}

/// A planned row: its stripe size and OSTs (Table II).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedRow {
    pub stripe_size_bytes: u64,
    pub osts: Vec<u32>,
}

/// The statistics side of iez, in memory: ossds report again every period, so after a restart
/// iez falls back until each has reported.
#[derive(Debug)]
pub struct IezState {
    osses: Vec<OssSpec>,
    /// Per OSS: the time its statistics were measured (MDS clock, ns) and the report.
    reports: Vec<Option<(u64, OssReport)>>,
    /// Per OST: bytes iez placed on it since its OSS last reported.
    placed_since_report_bytes: Vec<u64>,
    pub(crate) stats_max_age_ns: u64,
    config: IezConfig,
    pub counters: IezCounters,
    /// Reports accepted per OSS, in configuration order.
    pub reports_per_oss: Vec<u64>,
    /// Whether the interaction database has any row: without one a create skips the path
    /// walk and the lookup.
    pub(crate) has_rows: bool,
    /// The MDS's own load, last sampled ([`crate::load`]); `None`: unknown, no gate.
    pub(crate) mds_load: Option<ServerLoad>,
}

fn check_path(path: &str) -> Result<(), String> {
    if !path.starts_with('/') || path.len() < 2 || path.len() > IEZ_PATH_LEN_MAX {
        return Err(format!(
            "path must start with '/' and be 2..={IEZ_PATH_LEN_MAX} bytes"
        ));
    }
    if path.chars().any(char::is_control) {
        return Err("path holds a control character".into());
    }
    if path[1..]
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == ".." || c.len() > crate::NAME_LEN_MAX)
    {
        return Err("path has an empty, '.', '..' or over-long component".into());
    }
    Ok(())
}

/// Application names: 1..=[`IEZ_APP_LEN_MAX`] bytes of `[A-Za-z0-9._:@+-]` (job ids).
pub fn check_app(app: &str) -> Result<(), RemoteError> {
    let ok = !app.is_empty()
        && app.len() <= IEZ_APP_LEN_MAX
        && app
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_:@+".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(err(
            Errno::EINVAL,
            format!("application name must be 1..={IEZ_APP_LEN_MAX} bytes of [A-Za-z0-9._:@+-]"),
        ))
    }
}

fn osts_text(osts: &[u32]) -> String {
    osts.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// An OST list as stored (space-separated indices); `None` for a row that does not parse
/// (a database edited by hand), which falls back like an unplanned row.
fn parse_osts(text: &str) -> Option<Vec<u32>> {
    let v: Vec<u32> = text
        .split(' ')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    (!v.is_empty() && v.len() <= STRIPE_COUNT_MAX as usize).then_some(v)
}

impl IezState {
    pub fn new(osses: &[OssSpec], stats_max_age_ns: u64) -> IezState {
        let ost_count: u32 = osses.iter().map(|o| o.ost_count).sum();
        IezState {
            osses: osses.to_vec(),
            reports: vec![None; osses.len()],
            placed_since_report_bytes: vec![0; ost_count as usize],
            stats_max_age_ns,
            config: IezConfig::default(),
            counters: IezCounters::default(),
            reports_per_oss: vec![0; osses.len()],
            has_rows: false,
            mds_load: None,
        }
    }

    fn ost_count(&self) -> u32 {
        self.placed_since_report_bytes.len() as u32
    }

    /// First OST index of OSS `i`.
    fn first_ost(&self, i: usize) -> usize {
        self.osses[..i].iter().map(|o| o.ost_count as usize).sum()
    }

    /// Takes an ossd's report received at `now_ns`; refuses an unknown OSS or absurd values.
    pub fn report(&mut self, r: OssReport, now_ns: u64) -> Result<(), RemoteError> {
        let checked = self.check_report(&r);
        let i = match checked {
            Ok(i) => i,
            Err(e) => {
                self.counters.reports_refused += 1;
                return Err(e);
            }
        };
        let at_ns = now_ns.saturating_sub(r.age_ms.saturating_mul(1_000_000));
        let first = self.first_ost(i);
        self.placed_since_report_bytes[first..first + r.osts.len()].fill(0);
        self.reports[i] = Some((at_ns, r));
        self.counters.reports_accepted += 1;
        self.reports_per_oss[i] += 1;
        Ok(())
    }

    fn check_report(&self, r: &OssReport) -> Result<usize, RemoteError> {
        let i = self
            .osses
            .iter()
            .position(|o| o.addr == r.oss)
            .ok_or_else(|| {
                err(
                    Errno::EINVAL,
                    format!("report from OSS {:?}, which this MDS does not serve", r.oss),
                )
            })?;
        if r.osts.len() != self.osses[i].ost_count as usize {
            return Err(err(
                Errno::EINVAL,
                format!(
                    "OSS {:?} reports {} OSTs, the MDS knows {}",
                    r.oss,
                    r.osts.len(),
                    self.osses[i].ost_count
                ),
            ));
        }
        for (k, o) in r.osts.iter().enumerate() {
            if o.total_bytes == 0 || o.avail_bytes > o.total_bytes {
                return Err(err(
                    Errno::EINVAL,
                    format!(
                        "OSS {:?} OST {k}: total 0 or more available than total",
                        r.oss
                    ),
                ));
            }
        }
        for u in [r.cpu_util_ppm, r.mem_util_ppm].into_iter().flatten() {
            if u > UTIL_PPM_MAX {
                return Err(err(
                    Errno::EINVAL,
                    format!("OSS {:?}: utilization {u} ppm above 1000000", r.oss),
                ));
            }
        }
        Ok(i)
    }

    /// The statistics as core's placers read them, if every OSS reported within the allowed
    /// age at `now_ns`.
    pub fn fresh_stats(&self, now_ns: u64) -> Result<ServerStats, Fallback> {
        let mut stats = ServerStats {
            at_ns: now_ns,
            osts: Vec::with_capacity(self.placed_since_report_bytes.len()),
            osses: Vec::with_capacity(self.osses.len()),
            mds: self.mds_load,
        };
        for (i, (spec, rep)) in self.osses.iter().zip(&self.reports).enumerate() {
            let Some((at_ns, r)) = rep else {
                return Err(Fallback::StatsMissing {
                    oss: spec.addr.clone(),
                });
            };
            let age_ns = now_ns.saturating_sub(*at_ns);
            if age_ns > self.stats_max_age_ns {
                return Err(Fallback::StatsStale {
                    oss: spec.addr.clone(),
                    age_ms: age_ns / 1_000_000,
                    max_age_ms: self.stats_max_age_ns / 1_000_000,
                });
            }
            stats.at_ns = stats.at_ns.min(*at_ns);
            let first = self.first_ost(i);
            for (k, o) in r.osts.iter().enumerate() {
                // What iez placed since the report counts as used until the next one.
                let avail = o
                    .avail_bytes
                    .saturating_sub(self.placed_since_report_bytes[first + k]);
                stats.osts.push(OstStats {
                    oss: OssId(i as u32),
                    total_bytes: o.total_bytes,
                    avail_bytes: avail,
                });
            }
            // An unmeasured utilization counts as idle: space alone then decides.
            let frac = |u: Option<u32>| f64::from(u.unwrap_or(0)) / f64::from(UTIL_PPM_MAX);
            stats.osses.push(ServerLoad {
                cpu_util: frac(r.cpu_util_ppm),
                mem_util: frac(r.mem_util_ppm),
            });
        }
        debug_assert_eq!(stats.validate(), Ok(()));
        Ok(stats)
    }

    /// Stores `app`'s predicted files (replacing its earlier rows; a path another application
    /// had becomes this one's) and plans them if the statistics are fresh. Returns (rows,
    /// planned rows).
    pub fn load(
        &mut self,
        tx: &Connection,
        app: &str,
        files: &[IezPrediction],
        now_ns: u64,
    ) -> Result<(u32, u32), RemoteError> {
        check_app(app)?;
        if files.len() > IEZ_FILES_PER_LOAD_MAX {
            return Err(err(
                Errno::EINVAL,
                format!(
                    "{} files, at most {IEZ_FILES_PER_LOAD_MAX} per load",
                    files.len()
                ),
            ));
        }
        let ost_count = self.ost_count();
        let mut seen = std::collections::HashSet::new();
        for (k, f) in files.iter().enumerate() {
            let bad = |why: String| err(Errno::EINVAL, format!("predicted file {k}: {why}"));
            check_path(&f.path).map_err(bad)?;
            if !seen.insert(f.path.as_str()) {
                return Err(bad(format!("{:?} predicted twice", f.path)));
            }
            if f.stripe_count == 0 || f.stripe_count > ost_count.min(STRIPE_COUNT_MAX) {
                return Err(bad(format!(
                    "stripe count {} not in 1..={}",
                    f.stripe_count,
                    ost_count.min(STRIPE_COUNT_MAX)
                )));
            }
            if f.predicted_bytes > PREDICTED_FILE_BYTES_MAX {
                return Err(bad(format!(
                    "{} bytes above {PREDICTED_FILE_BYTES_MAX}",
                    f.predicted_bytes
                )));
            }
        }
        tx.execute("DELETE FROM iez_predictions WHERE app = ?1", [app])
            .map_err(db_err)?;
        for (k, f) in files.iter().enumerate() {
            tx.execute(
                "INSERT INTO iez_predictions(path, app, seq, predicted_bytes, stripe_count)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(path) DO UPDATE SET app = excluded.app, seq = excluded.seq,
                     predicted_bytes = excluded.predicted_bytes,
                     stripe_count = excluded.stripe_count, stripe_size = NULL, osts = NULL,
                     created = 0",
                params![
                    f.path,
                    app,
                    k as i64,
                    f.predicted_bytes as i64,
                    f.stripe_count
                ],
            )
            .map_err(db_err)?;
        }
        let planned = match self.fresh_stats(now_ns) {
            Ok(stats) if mds_busy(stats.mds).is_none() => self.plan_app(tx, app, &stats)?,
            // Planned at the first create that finds fresh statistics and the MDS not busy.
            _ => 0,
        };
        // Another application's rows may remain after an empty load.
        self.has_rows = has_rows(tx)?;
        Ok((files.len() as u32, planned))
    }

    /// Runs Algorithm 2 over `app`'s rows and stores each one's stripe size and OSTs (NULL for
    /// a file it found no room for). Returns the rows planned.
    fn plan_app(
        &self,
        tx: &Connection,
        app: &str,
        stats: &ServerStats,
    ) -> Result<u32, RemoteError> {
        let mut st = tx
            .prepare_cached(
                "SELECT path, predicted_bytes, stripe_count FROM iez_predictions
                 WHERE app = ?1 ORDER BY seq",
            )
            .map_err(db_err)?;
        let rows: Vec<(String, PredictedFile)> = st
            .query_map([app], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    PredictedFile {
                        predicted_bytes: r.get::<_, i64>(1)? as u64,
                        stripe_count: r.get::<_, i64>(2)? as u32,
                    },
                ))
            })
            .map_err(db_err)?
            .collect::<Result<_, _>>()
            .map_err(db_err)?;
        let files: Vec<PredictedFile> = rows.iter().map(|(_, f)| *f).collect();
        let reserved = other_apps_reserved(tx, app, stats.osts.len())?;
        let plans = allocate_osts(stats, &reserved, &files, &self.config)
            .map_err(|e| err(Errno::EINVAL, format!("iez allocation: {e}")))?;
        assert_eq!(plans.len(), rows.len(), "one plan per predicted file");
        let mut planned = 0;
        for ((path, _), plan) in rows.iter().zip(plans) {
            let (size, osts) = match plan {
                Some(p) => {
                    planned += 1;
                    let osts: Vec<u32> = p.osts.iter().map(|o: &OstId| o.0).collect();
                    (Some(p.stripe_size_bytes as i64), Some(osts_text(&osts)))
                }
                None => (None, None),
            };
            tx.execute(
                "UPDATE iez_predictions SET stripe_size = ?2, osts = ?3 WHERE path = ?1",
                params![path, size, osts],
            )
            .map_err(db_err)?;
        }
        Ok(planned)
    }

    /// The layout iez gives a new file at `path`: `Ok(None)` when the database has no row for
    /// it (round robin, nothing to report), `Err` when it has one but iez cannot place it.
    pub fn choose(
        &mut self,
        tx: &Connection,
        path: &str,
        explicit_layout: bool,
        now_ns: u64,
    ) -> Result<Option<PlannedRow>, (Fallback, Option<RemoteError>)> {
        let db = |e| (Fallback::Unplanned("database".into()), Some(db_err(e)));
        let row = tx
            .query_row(
                "SELECT app, stripe_size, osts FROM iez_predictions WHERE path = ?1",
                [path],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, Option<i64>>(1)?,
                        r.get::<_, Option<String>>(2)?,
                    ))
                },
            )
            .optional()
            .map_err(db)?;
        let Some((app, mut size, mut osts)) = row else {
            return Ok(None);
        };
        // The file exists from now on, however it is placed: its row reserves nothing more.
        tx.execute(
            "UPDATE iez_predictions SET created = 1 WHERE path = ?1",
            [path],
        )
        .map_err(db)?;
        if explicit_layout {
            return Err((Fallback::ExplicitLayout, None));
        }
        let stats = self.fresh_stats(now_ns).map_err(|f| (f, None))?;
        if let Some(busy) = mds_busy(stats.mds) {
            return Err((busy, None));
        }
        if osts.is_none() {
            // Statistics arrived after the load: plan the application's rows now.
            self.plan_app(tx, &app, &stats)
                .map_err(|e| (Fallback::Unplanned(e.message.clone()), None))?;
            (size, osts) = tx
                .query_row(
                    "SELECT stripe_size, osts FROM iez_predictions WHERE path = ?1",
                    [path],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .map_err(db)?;
        }
        let (Some(size), Some(text)) = (size, osts) else {
            return Err((
                Fallback::Unplanned("no OSTs with room for its stripes".into()),
                None,
            ));
        };
        let Some(list) = parse_osts(&text) else {
            return Err((
                Fallback::Unplanned(format!("stored OST list {text:?} does not parse")),
                None,
            ));
        };
        let size = size as u64;
        let ost_count = self.ost_count();
        if let Some(&ost) = list.iter().find(|&&o| o >= ost_count) {
            return Err((Fallback::MissingOst { ost, ost_count }, None));
        }
        let mut distinct = list.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() != list.len() {
            return Err((
                Fallback::Unplanned(format!("stored OST list {text:?} names an OST twice")),
                None,
            ));
        }
        let bad_size = size == 0
            || !size.is_multiple_of(pfsqos_core::place::STRIPE_SIZE_UNIT_BYTES)
            || size > pfsqos_core::place::STRIPE_SIZE_BYTES_MAX;
        if bad_size {
            return Err((
                Fallback::Unplanned(format!("stored stripe size {size} is not a valid one")),
                None,
            ));
        }
        for &o in &list {
            let room = stats.osts[o as usize].avail_bytes;
            if room < size {
                return Err((
                    Fallback::NoFreeSpace {
                        ost: o,
                        room_bytes: room,
                        share_bytes: size,
                    },
                    None,
                ));
            }
        }
        Ok(Some(PlannedRow {
            stripe_size_bytes: size,
            osts: list,
        }))
    }

    /// Counts a create iez placed (after its transaction committed).
    pub fn placed(&mut self, row: &PlannedRow) {
        for &o in &row.osts {
            let b = &mut self.placed_since_report_bytes[o as usize];
            *b = b.saturating_add(row.stripe_size_bytes);
        }
        self.counters.placed += 1;
    }

    /// Counts a load of `rows` rows (after its transaction committed).
    pub fn loaded(&mut self, rows: u32) {
        self.counters.loads += 1;
        self.counters.rows_loaded += u64::from(rows);
    }

    /// iez's values for the metrics endpoint; `rows` when the database could be read.
    pub fn metrics_sample(&self, rows: Option<u64>) -> pfsqos_metrics::IezSample {
        let c = &self.counters;
        pfsqos_metrics::IezSample {
            placed: c.placed,
            fallbacks: c.fallbacks_by_cause().to_vec(),
            loads: c.loads,
            rows_loaded: c.rows_loaded,
            rows,
            reports_accepted: c.reports_accepted,
            reports_refused: c.reports_refused,
            mds_cpu_util: self.mds_load.map(|l| l.cpu_util),
            mds_mem_util: self.mds_load.map(|l| l.mem_util),
        }
    }

    /// Counts a fallback (after its transaction committed).
    pub fn fell_back(&mut self, f: &Fallback) {
        self.counters.count(f);
    }
}

/// Per OST, the bytes other applications' planned rows not yet created will put there (their
/// stripe size on each of their OSTs, as [`IezState::placed`] counts a placed file). Rows
/// whose stored plan does not parse or names an OST beyond `ost_count` reserve nothing (they
/// fall back at their create).
pub(crate) fn other_apps_reserved(
    tx: &Connection,
    app: &str,
    ost_count: usize,
) -> Result<Vec<u64>, RemoteError> {
    let mut reserved = vec![0u64; ost_count];
    let mut st = tx
        .prepare_cached(
            "SELECT stripe_size, osts FROM iez_predictions
             WHERE app != ?1 AND created = 0 AND stripe_size IS NOT NULL AND osts IS NOT NULL",
        )
        .map_err(db_err)?;
    let rows = st
        .query_map([app], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .map_err(db_err)?;
    for row in rows {
        let (size, text) = row.map_err(db_err)?;
        let Some(osts) = parse_osts(&text) else {
            continue;
        };
        if size <= 0 || osts.iter().any(|&o| o as usize >= ost_count) {
            continue;
        }
        for o in osts {
            let r = &mut reserved[o as usize];
            *r = r.saturating_add(size as u64);
        }
    }
    Ok(reserved)
}

/// Adds the `created` column to a database made before it existed (schema version 2).
pub(crate) fn migrate(db: &Connection) -> Result<(), RemoteError> {
    let has_created: bool = db
        .query_row(
            "SELECT EXISTS(SELECT 1 FROM pragma_table_info('iez_predictions') WHERE name = 'created')",
            [],
            |r| r.get(0),
        )
        .map_err(db_err)?;
    if !has_created {
        db.execute_batch(
            "ALTER TABLE iez_predictions ADD COLUMN created INTEGER NOT NULL DEFAULT 0",
        )
        .map_err(db_err)?;
    }
    Ok(())
}

/// Rows in the interaction database.
pub(crate) fn row_count(tx: &Connection) -> Result<u64, RemoteError> {
    tx.query_row("SELECT COUNT(*) FROM iez_predictions", [], |r| {
        r.get::<_, i64>(0)
    })
    .map(|n| n.max(0) as u64)
    .map_err(db_err)
}

/// Whether the interaction database holds any row.
pub(crate) fn has_rows(tx: &Connection) -> Result<bool, RemoteError> {
    tx.query_row("SELECT EXISTS(SELECT 1 FROM iez_predictions)", [], |r| {
        r.get::<_, bool>(0)
    })
    .map_err(db_err)
}

/// Stores who placed a file.
pub(crate) fn record_placement(
    tx: &Connection,
    ino: u64,
    policy: &str,
    reason: Option<&str>,
) -> Result<(), RemoteError> {
    tx.execute(
        "INSERT INTO placements(ino, policy, reason) VALUES (?1, ?2, ?3)",
        params![ino as i64, policy, reason],
    )
    .map_err(db_err)?;
    Ok(())
}

/// Who placed a file; files created before placements were recorded read as round robin.
pub(crate) fn placement_of(
    tx: &Connection,
    ino: u64,
) -> Result<pfsqos_wire::mds::PlacementInfo, RemoteError> {
    let row = tx
        .query_row(
            "SELECT policy, reason FROM placements WHERE ino = ?1",
            [ino as i64],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?)),
        )
        .optional()
        .map_err(db_err)?;
    let (policy, reason) = row.unwrap_or_else(|| ("roundrobin".into(), None));
    Ok(pfsqos_wire::mds::PlacementInfo { policy, reason })
}

/// A stored prediction row, for tools and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredPrediction {
    pub path: String,
    pub app: String,
    pub predicted_bytes: u64,
    pub stripe_count: u32,
    pub planned: Option<PlannedRow>,
}

pub(crate) fn predictions(tx: &Connection) -> Result<Vec<StoredPrediction>, RemoteError> {
    let mut st = tx
        .prepare(
            "SELECT path, app, predicted_bytes, stripe_count, stripe_size, osts
             FROM iez_predictions ORDER BY app, seq",
        )
        .map_err(db_err)?;
    let rows = st
        .query_map([], |r| {
            let size: Option<i64> = r.get(4)?;
            let osts: Option<String> = r.get(5)?;
            Ok(StoredPrediction {
                path: r.get(0)?,
                app: r.get(1)?,
                predicted_bytes: r.get::<_, i64>(2)? as u64,
                stripe_count: r.get::<_, i64>(3)? as u32,
                planned: match (size, osts.as_deref().and_then(parse_osts)) {
                    (Some(s), Some(o)) => Some(PlannedRow {
                        stripe_size_bytes: s as u64,
                        osts: o,
                    }),
                    _ => None,
                },
            })
        })
        .map_err(db_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_err)?;
    Ok(rows)
}

#[cfg(test)]
#[path = "iez_tests.rs"]
mod tests;
