//! The calibration sweep: which points to measure, planned to fit a time budget.
//!
//! Each group of points isolates one parameter of the model (see [`crate::fit`]); groups are
//! listed in the order they are kept when the budget is short, so a small budget still gives
//! a usable profile (the size rows) and a larger one adds the rest. Every point runs for the
//! same time; the plan says which groups it left out.

use crate::{Op, Pattern};

/// One point of the sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedPoint {
    pub op: Op,
    pub pattern: Pattern,
    /// Percentage of reads (mixed points; 0 otherwise).
    pub read_percent: u32,
    pub size_kib: u64,
    /// Requests outstanding per stream.
    pub queue_depth: u32,
    pub streams: u32,
}

/// The ranges to sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranges {
    /// Request sizes, ascending (KiB).
    pub sizes_kib: Vec<u64>,
    /// Largest queue depth (the sweep doubles from 1, by 4).
    pub queue_depth_max: u32,
    /// Largest number of concurrent sequential streams (doubling from 1).
    pub streams_max: u32,
}

impl Default for Ranges {
    /// 4 KiB to 16 MiB, queue depth 1 to 256, 1 to 128 streams.
    fn default() -> Ranges {
        Ranges {
            sizes_kib: vec![4, 64, 1024, 16 * 1024],
            queue_depth_max: 256,
            streams_max: 128,
        }
    }
}

/// A planned sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub points: Vec<PlannedPoint>,
    /// Measuring time of every point (ms).
    pub runtime_ms: u64,
    /// Groups of points the budget left out, by name.
    pub left_out: Vec<&'static str>,
}

/// Shortest measuring time of one point: below it, fio's own start-up dominates.
pub const RUNTIME_MS_MIN: u64 = 1000;
/// Longest measuring time of one point; a larger budget is not spent.
pub const RUNTIME_MS_MAX: u64 = 30_000;
/// Most data outstanding in one point (KiB): 256 MiB.
pub const OUTSTANDING_KIB_MAX: u64 = 256 << 10;
/// Start-up and tear-down time charged to each point on top of its measuring time.
pub const OVERHEAD_MS_PER_POINT: u64 = 500;

fn point(op: Op, pattern: Pattern, size_kib: u64, queue_depth: u32, streams: u32) -> PlannedPoint {
    PlannedPoint {
        op,
        pattern,
        read_percent: 0,
        size_kib,
        queue_depth,
        streams,
    }
}

fn doubling(max: u32, step: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut x = 1u32;
    while x <= max {
        out.push(x);
        x = x.saturating_mul(step);
    }
    if out.last() != Some(&max) {
        out.push(max);
    }
    out
}

/// The groups of the full sweep, in the order they are kept.
pub fn groups(r: &Ranges) -> Vec<(&'static str, Vec<PlannedPoint>)> {
    use Op::{Read, Write};
    use Pattern::{Random, Sequential};
    let smallest = r.sizes_kib[0];
    let reference = r
        .sizes_kib
        .iter()
        .copied()
        .min_by_key(|s| s.abs_diff(1024))
        .expect("sizes");
    let qds = doubling(r.queue_depth_max, 4);
    let deep = *qds.last().expect("depths");
    // The deepest queue at a size: at most OUTSTANDING_KIB_MAX in flight (fio allocates a
    // buffer per outstanding request).
    let deep_at = |s: u64| -> u32 {
        let by_memory = (OUTSTANDING_KIB_MAX / s).max(1);
        u32::try_from(by_memory).unwrap_or(u32::MAX).min(deep)
    };
    let mut out = Vec::new();
    let per_size = |f: &dyn Fn(Op, u64) -> PlannedPoint| {
        let mut v = Vec::new();
        for op in [Read, Write] {
            for &s in &r.sizes_kib {
                v.push(f(op, s));
            }
        }
        v
    };
    out.push((
        "sequential, one request (size rows)",
        per_size(&|op, s| point(op, Sequential, s, 1, 1)),
    ));
    out.push((
        "sequential, deep queue (bandwidth)",
        per_size(&|op, s| point(op, Sequential, s, deep_at(s), 1)),
    ));
    out.push((
        "random, one request (random penalty)",
        per_size(&|op, s| point(op, Random, s, 1, 1)),
    ));
    out.push((
        "random reads by queue depth (concurrency)",
        qds.iter()
            .filter(|&&q| q > 1)
            .map(|&q| point(Read, Random, smallest, q, 1))
            .collect(),
    ));
    out.push((
        "sequential streams (switch cost)",
        doubling(r.streams_max, 2)
            .into_iter()
            .filter(|&n| n > 1)
            .flat_map(|n| {
                [
                    point(Write, Sequential, reference, 1, n),
                    point(Read, Sequential, reference, 1, n),
                ]
            })
            .collect(),
    ));
    out.push((
        "sequential by queue depth (congestion)",
        qds.iter()
            .filter(|&&q| q > 1 && q < deep_at(reference))
            .flat_map(|&q| {
                [
                    point(Write, Sequential, reference, q, 1),
                    point(Read, Sequential, reference, q, 1),
                ]
            })
            .collect(),
    ));
    let mut mix = point(Op::Mixed, Random, smallest, 1, 1);
    mix.read_percent = 50;
    out.push(("mixed reads and writes (direction switch)", vec![mix]));
    out
}

/// The sweep that fits `budget_ms`: as many groups as fit at [`RUNTIME_MS_MIN`] each, then
/// the measuring time stretched to fill the budget (at most [`RUNTIME_MS_MAX`]). Errors when
/// not even the size rows fit.
pub fn plan(r: &Ranges, budget_ms: u64) -> Result<Plan, String> {
    if r.sizes_kib.is_empty()
        || r.sizes_kib.windows(2).any(|w| w[0] >= w[1])
        || r.sizes_kib[0] == 0
        || *r.sizes_kib.last().expect("sizes") > crate::SIZE_KIB_MAX
    {
        return Err(format!(
            "request sizes must be strictly increasing in 1..={} KiB",
            crate::SIZE_KIB_MAX
        ));
    }
    if !(1..=crate::QUEUE_DEPTH_MAX).contains(&r.queue_depth_max)
        || !(1..=crate::STREAMS_MAX).contains(&r.streams_max)
    {
        return Err(format!(
            "queue depth 1..={} and streams 1..={}",
            crate::QUEUE_DEPTH_MAX,
            crate::STREAMS_MAX
        ));
    }
    let cost = |n: usize| n as u64 * (RUNTIME_MS_MIN + OVERHEAD_MS_PER_POINT);
    let mut points = Vec::new();
    let mut left_out = Vec::new();
    for (name, group) in groups(r) {
        if left_out.is_empty() && cost(points.len() + group.len()) <= budget_ms {
            points.extend(group);
        } else {
            left_out.push(name);
        }
    }
    if points.is_empty() {
        return Err(format!(
            "a budget of {budget_ms} ms does not fit even the sequential one-request points \
             ({} ms at {RUNTIME_MS_MIN} ms each plus {OVERHEAD_MS_PER_POINT} ms start-up)",
            cost(2 * r.sizes_kib.len())
        ));
    }
    let n = points.len() as u64;
    let runtime_ms = (budget_ms / n)
        .saturating_sub(OVERHEAD_MS_PER_POINT)
        .clamp(RUNTIME_MS_MIN, RUNTIME_MS_MAX);
    Ok(Plan {
        points,
        runtime_ms,
        left_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_sweep_covers_the_ranges() {
        let r = Ranges::default();
        let p = plan(&r, 3_600_000).unwrap();
        assert!(p.left_out.is_empty());
        assert_eq!(p.runtime_ms, RUNTIME_MS_MAX);
        let sizes: Vec<u64> = p.points.iter().map(|x| x.size_kib).collect();
        assert_eq!(sizes.iter().min(), Some(&4));
        assert_eq!(sizes.iter().max(), Some(&16384));
        assert_eq!(p.points.iter().map(|x| x.queue_depth).max(), Some(256));
        assert_eq!(p.points.iter().map(|x| x.streams).max(), Some(128));
        assert!(p.points.iter().any(|x| x.op == Op::Mixed));
        assert!(p
            .points
            .iter()
            .any(|x| x.pattern == Pattern::Random && x.op == Op::Write));
    }

    #[test]
    fn a_short_budget_keeps_the_first_groups_and_fits() {
        let r = Ranges::default();
        for budget_ms in [12_000, 30_000, 60_000, 120_000, 600_000] {
            let p = plan(&r, budget_ms).unwrap();
            let spent = p.points.len() as u64 * (p.runtime_ms + OVERHEAD_MS_PER_POINT);
            assert!(spent <= budget_ms, "{budget_ms}: {spent}");
            assert!(p
                .points
                .iter()
                .all(|x| x.queue_depth >= 1 && x.streams >= 1));
        }
        let p = plan(&r, 12_000).unwrap();
        assert_eq!(p.points.len(), 8);
        assert_eq!(p.left_out.len(), groups(&r).len() - 1);
        assert!(plan(&r, 5_000).unwrap_err().contains("does not fit"));
        let bad = Ranges {
            sizes_kib: vec![64, 4],
            ..Ranges::default()
        };
        assert!(plan(&bad, 60_000).is_err());
    }
}
