//! Object placement: which OSTs hold the stripes of a new file.
//!
//! The MDS asks a [`Placement`] for a layout at every create; round-robin ([`RoundRobin`]) is
//! pfsqos's simple rotation, and load-aware placers implement the same trait: they get the
//! time and the creating application's identity with each create ([`PlacementContext`]), the
//! same per-OSS, per-OST, per-job load feed controllers get ([`Placement::observe`] with a
//! control `Observation`), the servers' space and load ([`Placement::observe_servers`] with a
//! [`ServerStats`] snapshot), and forecasts of each job's next files
//! ([`Placement::set_predictions`]). Placers are chosen by name from [`PLACER_ROWS`]:
//!
//! - `roundrobin`: [`RoundRobin`], consecutive OSTs from a cursor.
//! - `lustre`: [`lustre::Lustre`], Lustre's own allocator (`lod_qos.c`): round robin over an
//!   array interleaving the OSSs, weighted QOS by free space when it is uneven.
//! - `iez`: [`iez::Iez`], iez's OST allocation (IPDPS'19, Algorithm 2, a min-cost max-flow,
//!   [`mcmf`]) over the predicted files, with Method II stripe sizes ([`stripe`]); Lustre's
//!   allocator when it has no statistics or no prediction.
//! - `shortestqueue`: [`shortest_queue::ShortestQueue`], each file on the OSTs with the
//!   shortest queues at the last observation (the worked example of adding a placer).
//!
//! How a driver feeds iez (the simplest the simulator and the MDS can do): after each
//! statistics period, `observe_servers` with the OSTs' OSS, total and available bytes and the
//! OSSs' (and, if known, the MDS's) CPU and memory utilization; when a job's forecast is known
//! (the `forecast` module's ARIMA, or a scenario's file list), `set_predictions(job, files)`
//! with its next files in creation order (predicted bytes and stripe count each). The job's
//! `k`-th create after that gets the `k`-th planned layout; [`Placement::last_fallback`] says
//! why a create was not planned. Everything is bounded ([`iez::PREDICTIONS_HELD_MAX`],
//! [`stats::STATS_OSTS_MAX`], [`iez::PLAN_STRIPES_MAX`], [`mcmf::MCMF_EDGES_MAX`]). Pure: no
//! I/O, clock or thread; randomness is a seeded ChaCha8 stream.

pub mod cost;
pub mod forecast;
pub mod iez;
pub mod lustre;
pub mod mcmf;
pub mod profile;
pub mod shortest_queue;
pub mod stats;
pub mod stripe;

use std::fmt;

// Lustre's vocabulary and the control plane's observation, under the names the placers use.
use pfsqos_control as control;
use pfsqos_lustre::{errno, limits, model, NS_PER_S};

use crate::control::Observation;
use crate::errno::Errno;
use crate::model::{JobId, OstId, StripeLayout};

pub use iez::{Iez, IezConfig, IezFallback, PredictedFile};
pub use lustre::{Lustre, LustreAllocator, LustreQosConfig};
pub use stats::{OstStats, ServerLoad, ServerStats, StatsError};

pub use crate::limits::{STRIPE_COUNT_MAX, STRIPE_SIZE_BYTES_MAX, STRIPE_SIZE_UNIT_BYTES};
/// Most OSTs the `lustre` and `iez` placers place on (they keep per-OST state); Lustre's own
/// limit on OST indices is of this order (`LOV_V1_INSANE_STRIPE_COUNT` is 65532).
pub const PLACER_OSTS_MAX: u32 = 1 << 16;
/// Stripe count meaning "every OST" (`lfs setstripe -c -1`).
pub const STRIPE_COUNT_ALL: i32 = -1;

/// What a create needs placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlacementRequest {
    /// Stripes wanted: 1..=ost_count, or [`STRIPE_COUNT_ALL`].
    pub stripe_count: i32,
    pub stripe_size_bytes: u64,
    /// OSTs in the file system, indexed `0..ost_count`.
    pub ost_count: u32,
    /// First OST wanted (`lfs setstripe -i`); `None` lets the placer choose.
    pub start_ost: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlacementError {
    NoOsts,
    /// 0, below -1, or above [`STRIPE_COUNT_MAX`].
    BadStripeCount(i32),
    /// More stripes than OSTs: one OST would hold two stripes of the file.
    StripeCountExceedsOsts {
        stripe_count: u32,
        ost_count: u32,
    },
    /// Not a positive multiple of [`STRIPE_SIZE_UNIT_BYTES`] up to [`STRIPE_SIZE_BYTES_MAX`].
    BadStripeSize(u64),
    StartOstOutOfRange {
        start_ost: u32,
        ost_count: u32,
    },
    /// Fewer OSTs with free space than stripes (Lustre would shrink the stripe count; a
    /// layout here always has the stripes asked for).
    NotEnoughSpace {
        stripe_count: u32,
        found: u32,
    },
    /// More OSTs than a placer with per-OST state takes ([`PLACER_OSTS_MAX`]).
    TooManyOsts(u32),
}

impl PlacementError {
    /// The errno Lustre answers for this error.
    pub fn errno(&self) -> Errno {
        match self {
            PlacementError::NoOsts | PlacementError::NotEnoughSpace { .. } => Errno::ENOSPC,
            _ => Errno::EINVAL,
        }
    }
}

impl fmt::Display for PlacementError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlacementError::NoOsts => write!(f, "no OSTs to place objects on"),
            PlacementError::BadStripeCount(c) => write!(
                f,
                "stripe count {c} invalid (1..={STRIPE_COUNT_MAX} or -1 for all OSTs)"
            ),
            PlacementError::StripeCountExceedsOsts {
                stripe_count,
                ost_count,
            } => write!(
                f,
                "stripe count {stripe_count} exceeds the {ost_count} OSTs of the file system"
            ),
            PlacementError::BadStripeSize(s) => write!(
                f,
                "stripe size {s} invalid (a multiple of {STRIPE_SIZE_UNIT_BYTES} up to {STRIPE_SIZE_BYTES_MAX})"
            ),
            PlacementError::StartOstOutOfRange {
                start_ost,
                ost_count,
            } => write!(f, "start OST {start_ost} out of range ({ost_count} OSTs)"),
            PlacementError::TooManyOsts(n) => write!(
                f,
                "{n} OSTs exceed the {PLACER_OSTS_MAX} this placement policy takes"
            ),
            PlacementError::NotEnoughSpace {
                stripe_count,
                found,
            } => write!(
                f,
                "{stripe_count} stripes wanted, {found} OSTs with free space"
            ),
        }
    }
}

impl std::error::Error for PlacementError {}

impl PlacementRequest {
    /// Checks the request and resolves the stripe count (`-1` becomes the OST count).
    pub fn resolved_stripe_count(&self) -> Result<u32, PlacementError> {
        if self.ost_count == 0 {
            return Err(PlacementError::NoOsts);
        }
        let s = self.stripe_size_bytes;
        if s == 0 || !s.is_multiple_of(STRIPE_SIZE_UNIT_BYTES) || s > STRIPE_SIZE_BYTES_MAX {
            return Err(PlacementError::BadStripeSize(s));
        }
        if let Some(start_ost) = self.start_ost {
            if start_ost >= self.ost_count {
                return Err(PlacementError::StartOstOutOfRange {
                    start_ost,
                    ost_count: self.ost_count,
                });
            }
        }
        let count = match self.stripe_count {
            STRIPE_COUNT_ALL => self.ost_count.min(STRIPE_COUNT_MAX),
            c if c >= 1 && c as u32 <= STRIPE_COUNT_MAX => c as u32,
            c => return Err(PlacementError::BadStripeCount(c)),
        };
        if count > self.ost_count {
            return Err(PlacementError::StripeCountExceedsOsts {
                stripe_count: count,
                ost_count: self.ost_count,
            });
        }
        Ok(count)
    }
}

/// Who creates a file, and when: what a load-aware placer keys its forecasts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlacementContext {
    pub now_ns: u64,
    /// The creating application (its job id); [`JobId::EMPTY`] when unknown.
    pub job: JobId,
}

impl PlacementContext {
    /// A create nothing is known about (set-up, tools).
    pub const UNKNOWN: PlacementContext = PlacementContext {
        now_ns: 0,
        job: JobId::EMPTY,
    };
}

/// Chooses the OSTs of new files.
pub trait Placement: fmt::Debug + Send {
    /// The layout of a new file.
    fn place(
        &mut self,
        request: &PlacementRequest,
        context: &PlacementContext,
    ) -> Result<StripeLayout, PlacementError>;

    /// The load the servers reported over the last period (the observation controllers get:
    /// per OSS and OST, queue lengths and per-job service). Placers that ignore load ignore it.
    fn observe(&mut self, _observation: &Observation) {}

    /// The servers' space and load (a statistics snapshot). Placers that ignore it accept it;
    /// placers that use it refuse a snapshot they cannot use (and keep the previous one).
    fn observe_servers(&mut self, _stats: &ServerStats) -> Result<(), StatsError> {
        Ok(())
    }

    /// A job's next files in creation order, predicted (replacing the job's earlier
    /// predictions). Returns how many the placer holds (0 for placers without forecasts;
    /// fewer than given when its bound is reached).
    fn set_predictions(&mut self, _job: JobId, _files: &[PredictedFile]) -> usize {
        0
    }

    /// Why the last create did not follow the placer's own plan (`None`: it did, or the
    /// placer has no plan).
    fn last_fallback(&self) -> Option<String> {
        None
    }

    /// State to persist across MDS restarts, as one word (round robin: its cursor). Richer
    /// state is rebuilt from [`Placement::observe`] after a restart.
    fn state(&self) -> u64 {
        0
    }

    /// Continues from a persisted [`Placement::state`].
    fn restore(&mut self, _state: u64) {}

    /// A copy (the MDS tries a create on a copy and keeps it only if the create commits).
    fn clone_box(&self) -> Box<dyn Placement>;
}

/// How a placer's descriptor builds it for a file system of `ost_count` OSTs from a spec's
/// `key=value` options (in order), with an error naming the option and what is allowed.
pub type BuildPlacer = fn(ost_count: u32, options: &[&str]) -> Result<Box<dyn Placement>, String>;

/// One placement policy, as every driver sees it (the simulator's `placement`, the MDS's
/// `--placer`): its name, a line saying what it does, and how to build it from a spec. Each
/// placer's file exports its descriptor; adding a placer is that file and one entry in
/// [`PLACER_ROWS`].
#[derive(Clone, Copy)]
pub struct PlacerDescriptor {
    pub name: &'static str,
    /// One line, for listings and `--help`.
    pub description: &'static str,
    /// The options a spec may give, `key=value` each (empty: none).
    pub options: &'static [&'static str],
    pub build: BuildPlacer,
}

/// Seed of the `lustre` and `iez` placers' randomness (Lustre's start index and QOS picks).
pub const PLACER_SEED: u64 = 0;

/// Longest placer spec (`iez` with every option fits).
pub const PLACER_SPEC_LEN_MAX: usize = 256;

/// Every placer.
pub const PLACER_ROWS: &[PlacerDescriptor] = &[
    ROUND_ROBIN,
    lustre::DESCRIPTOR,
    iez::DESCRIPTOR,
    shortest_queue::DESCRIPTOR,
];

/// `roundrobin`: consecutive OSTs from a cursor.
pub const ROUND_ROBIN: PlacerDescriptor = PlacerDescriptor {
    name: "roundrobin",
    description: "consecutive OSTs from a cursor that advances by each file's stripe count",
    options: &[],
    build: |_, options| match options.first() {
        Some(o) => Err(format!("placer `roundrobin` takes no options, got `{o}`")),
        None => Ok(Box::new(RoundRobin::default())),
    },
};

/// The placement policy a spec `name[:key=value]...` names, for `ost_count` OSTs, or an error
/// listing what is allowed.
pub fn placement_by_name(spec: &str, ost_count: u32) -> Result<Box<dyn Placement>, String> {
    if spec.len() > PLACER_SPEC_LEN_MAX {
        return Err(format!(
            "placer spec is {} bytes long (at most {PLACER_SPEC_LEN_MAX})",
            spec.len()
        ));
    }
    let mut parts = spec.split(':');
    let name = parts.next().unwrap_or_default();
    let options: Vec<&str> = parts.collect();
    let d = PLACER_ROWS.iter().find(|r| r.name == name).ok_or_else(|| {
        let names: Vec<&str> = PLACER_ROWS.iter().map(|r| r.name).collect();
        format!(
            "unknown placement policy `{name}` (allowed: {})",
            names.join(", ")
        )
    })?;
    (d.build)(ost_count, &options)
}

/// Splits a placer option `key=value` and checks `key` is one of `allowed`.
pub(crate) fn placer_option<'a>(
    placer: &str,
    option: &'a str,
    allowed: &[&str],
) -> Result<(&'a str, &'a str), String> {
    option
        .split_once('=')
        .filter(|(k, _)| allowed.contains(k))
        .ok_or_else(|| {
            format!(
                "option `{option}` of placer `{placer}` is not one of {}",
                allowed
                    .iter()
                    .map(|k| format!("{k}=VALUE"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// An integer option in `range`.
pub(crate) fn placer_int<T>(
    placer: &str,
    key: &str,
    value: &str,
    range: std::ops::RangeInclusive<T>,
) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + fmt::Display + Copy,
{
    value
        .parse::<T>()
        .ok()
        .filter(|v| range.contains(v))
        .ok_or_else(|| {
            format!(
                "placer `{placer}`: `{key}={value}` must be an integer in {}..={}",
                range.start(),
                range.end()
            )
        })
}

/// Lustre's round-robin allocator: each file's stripes go on consecutive OSTs (modulo the
/// count) starting at a cursor, and the cursor moves past them so consecutive files spread
/// over all OSTs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundRobin {
    cursor: u32,
}

impl RoundRobin {
    pub fn new(cursor: u32) -> RoundRobin {
        RoundRobin { cursor }
    }

    /// The OST the next file without a start hint begins on (modulo the OST count).
    pub fn cursor(&self) -> u32 {
        self.cursor
    }
}

impl Placement for RoundRobin {
    fn place(
        &mut self,
        request: &PlacementRequest,
        _context: &PlacementContext,
    ) -> Result<StripeLayout, PlacementError> {
        let count = request.resolved_stripe_count()?;
        let n = request.ost_count;
        // An explicit start (lfs setstripe -i) is the user's choice and leaves the rotation
        // of everyone else's files alone.
        let start = match request.start_ost {
            Some(s) => s,
            None => {
                let s = self.cursor % n;
                self.cursor = ((s as u64 + count as u64) % n as u64) as u32;
                s
            }
        };
        let osts = (0..count)
            .map(|i| OstId(((start as u64 + i as u64) % n as u64) as u32))
            .collect();
        Ok(StripeLayout {
            stripe_size_bytes: request.stripe_size_bytes,
            osts,
        })
    }

    fn state(&self) -> u64 {
        u64::from(self.cursor)
    }

    fn restore(&mut self, state: u64) {
        // Any word is a valid cursor (taken modulo the OST count at the next create).
        self.cursor = state as u32;
    }

    fn clone_box(&self) -> Box<dyn Placement> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const U: PlacementContext = PlacementContext::UNKNOWN;

    fn req(stripe_count: i32, ost_count: u32) -> PlacementRequest {
        PlacementRequest {
            stripe_count,
            stripe_size_bytes: 1 << 20,
            ost_count,
            start_ost: None,
        }
    }

    fn ids(l: StripeLayout) -> Vec<u32> {
        l.osts.iter().map(|o| o.0).collect()
    }

    #[test]
    fn round_robin_sequence_of_creates() {
        let mut rr = RoundRobin::default();
        let got: Vec<Vec<u32>> = [1, 1, 2, 3, 1, -1, 2]
            .iter()
            .map(|&c| ids(rr.place(&req(c, 4), &U).unwrap()))
            .collect();
        assert_eq!(
            got,
            vec![
                vec![0],
                vec![1],
                vec![2, 3],
                vec![0, 1, 2],
                vec![3],
                vec![0, 1, 2, 3],
                vec![0, 1],
            ]
        );
        assert_eq!(rr.cursor(), 2);
    }

    #[test]
    fn start_hint_is_honoured_and_leaves_the_cursor() {
        let mut rr = RoundRobin::new(1);
        let l = rr
            .place(
                &PlacementRequest {
                    start_ost: Some(3),
                    ..req(2, 4)
                },
                &U,
            )
            .unwrap();
        assert_eq!(ids(l), [3, 0]);
        assert_eq!(ids(rr.place(&req(1, 4), &U).unwrap()), [1]);
    }

    #[test]
    fn bad_requests_are_typed_errors() {
        let mut rr = RoundRobin::default();
        assert_eq!(
            rr.place(&req(5, 4), &U),
            Err(PlacementError::StripeCountExceedsOsts {
                stripe_count: 5,
                ost_count: 4
            })
        );
        assert_eq!(
            rr.place(&req(0, 4), &U),
            Err(PlacementError::BadStripeCount(0))
        );
        assert_eq!(
            rr.place(&req(-2, 4), &U),
            Err(PlacementError::BadStripeCount(-2))
        );
        assert_eq!(rr.place(&req(1, 0), &U), Err(PlacementError::NoOsts));
        for s in [0, 4096, (64 << 10) + 1, (4 << 30) + (64 << 10)] {
            assert_eq!(
                rr.place(
                    &PlacementRequest {
                        stripe_size_bytes: s,
                        ..req(1, 4)
                    },
                    &U
                ),
                Err(PlacementError::BadStripeSize(s))
            );
        }
        assert!(matches!(
            rr.place(
                &PlacementRequest {
                    start_ost: Some(4),
                    ..req(1, 4)
                },
                &U
            ),
            Err(PlacementError::StartOstOutOfRange { .. })
        ));
        // Failed requests do not move the cursor.
        assert_eq!(rr.cursor(), 0);
    }

    #[test]
    fn the_registry_builds_round_robin_and_names_what_exists() {
        let mut p = placement_by_name("roundrobin", 4).unwrap();
        p.restore(3);
        assert_eq!(ids(p.place(&req(2, 4), &U).unwrap()), [3, 0]);
        assert_eq!(p.state(), 1);
        let copy = p.clone_box();
        assert_eq!(copy.state(), 1);
        let e = placement_by_name("qos", 4).unwrap_err();
        assert!(
            e.contains("allowed: roundrobin, lustre, iez, shortestqueue"),
            "{e}"
        );
    }

    /// A spec's options reach the placer's tunables, and every bad option is refused with
    /// what is allowed.
    #[test]
    fn placer_specs_take_options() {
        let c = lustre::qos_config("lustre", &["qos_prio_free=50", "qos_maxage=7"]).unwrap();
        assert_eq!(
            (c.threshold_rr_pct, c.prio_free_pct, c.maxage_s),
            (lustre::QOS_THRESHOLD_RR_PCT, 50, 7)
        );
        for spec in [
            "lustre:qos_threshold_rr=0",
            "iez:qos_prio_free=100",
            "roundrobin",
        ] {
            assert!(placement_by_name(spec, 4).is_ok(), "{spec}");
        }
        for (spec, says) in [
            ("lustre:qos_threshold_rr=101", "integer in 0..=100"),
            ("lustre:qos_maxage=0", "integer in 1..=86400"),
            ("iez:qos_prio_free=-1", "integer in 0..=100"),
            ("lustre:threshold=3", "not one of qos_threshold_rr=VALUE"),
            ("lustre:qos_maxage", "not one of"),
            ("roundrobin:qos_maxage=5", "takes no options"),
        ] {
            let Err(e) = placement_by_name(spec, 4) else {
                panic!("{spec} was accepted");
            };
            assert!(e.contains(says), "{spec}: {e}");
        }
        let long = format!("lustre:{}", "qos_maxage=5:".repeat(30));
        assert!(placement_by_name(&long, 4)
            .err()
            .unwrap()
            .contains("at most"));
    }

    #[test]
    fn the_registry_drives_lustre_and_iez_through_the_trait() {
        const GIB: u64 = 1 << 30;
        let stats = ServerStats::uniform(3, 5, 10 * GIB, 10 * GIB);
        let job = JobId::new("ior").unwrap();
        let ctx = PlacementContext { now_ns: 0, job };
        let mut lustre = placement_by_name("lustre", 15).unwrap();
        assert_eq!(lustre.observe_servers(&stats), Ok(()));
        assert_eq!(lustre.set_predictions(job, &[]), 0);
        let l = lustre.place(&req(3, 15), &ctx).unwrap();
        // Round robin over the interleaved array: three OSSs.
        let mut oss: Vec<u32> = l.osts.iter().map(|o| o.0 / 5).collect();
        oss.sort();
        assert_eq!(oss, [0, 1, 2]);
        assert_eq!(l.stripe_size_bytes, 1 << 20);

        let mut iez = placement_by_name("iez", 15).unwrap();
        iez.observe_servers(&stats).unwrap();
        let files = [PredictedFile {
            predicted_bytes: 4 * GIB,
            stripe_count: 4,
        }; 2];
        assert_eq!(iez.set_predictions(job, &files), 2);
        let a = iez.place(&req(4, 15), &ctx).unwrap();
        assert_eq!(iez.last_fallback(), None);
        assert_eq!(a.stripe_size_bytes, GIB);
        let b = iez.place(&req(4, 15), &ctx).unwrap();
        assert!(a.osts.iter().all(|o| !b.osts.contains(o)));
        iez.place(&req(4, 15), &ctx).unwrap();
        assert!(iez.last_fallback().unwrap().contains("no prediction"));
        // Statistics of another size are refused.
        assert!(iez
            .observe_servers(&ServerStats::uniform(1, 2, GIB, GIB))
            .is_err());
        let huge = PLACER_OSTS_MAX + 1;
        for name in ["lustre", "iez"] {
            let mut p = placement_by_name(name, huge).unwrap();
            assert_eq!(
                p.place(&req(1, huge), &ctx),
                Err(PlacementError::TooManyOsts(huge))
            );
        }
        assert_eq!(
            PlacementError::NotEnoughSpace {
                stripe_count: 2,
                found: 1
            }
            .errno(),
            Errno::ENOSPC
        );
    }

    proptest! {
        #[test]
        fn layouts_are_in_range_distinct_and_of_the_wanted_count(
            ost_count in 1u32..64,
            counts in proptest::collection::vec(-1i32..8, 1..32),
            cursor in any::<u32>(),
        ) {
            let mut rr = RoundRobin::new(cursor);
            for c in counts {
                match rr.place(&req(c, ost_count), &U) {
                    Ok(l) => {
                        let want = if c == -1 { ost_count } else { c as u32 };
                        prop_assert_eq!(l.osts.len() as u32, want);
                        prop_assert!(l.osts.iter().all(|o| o.0 < ost_count));
                        let mut d = l.osts.clone();
                        d.sort_unstable();
                        d.dedup();
                        prop_assert_eq!(d.len(), l.osts.len());
                    }
                    Err(_) => prop_assert!(c == 0 || c as u32 > ost_count),
                }
            }
        }
    }
}
