//! The device model's parameters from measured points (a fio sweep, an obdfilter-survey).
//!
//! Each parameter is read off the points that isolate it (the same idea as blk-iocost's
//! coefficient generator, which derives a linear cost model from a few saturating fio runs):
//!
//! * **size rows** (per direction, per size): `bandwidth` is the best one-stream throughput
//!   (sequential or random) over the queue depths measured at that size; `overhead` is what the mean
//!   latency at queue depth 1 adds to the transfer time `size / bandwidth`.
//! * **random penalty** (per direction, per size): random minus sequential mean latency at
//!   queue depth 1.
//! * **concurrency**: Little's law on the smallest size's random reads: the requests that
//!   must overlap to reach the best IOPS at the one-request latency (sequential reads when no
//!   random sweep exists); where the transfer, not the slots, bounds them, at least the queue
//!   depth at which the sweep reaches its best.
//! * **streams** (switch cost judged per device): with `n` streams of one request each, every
//!   request follows one of another stream, so the cycle of one slot is
//!   `min(n, concurrency) × size / throughput(n)`; what it adds to the one-stream cycle is the
//!   switch penalty at `n` (none where the throughput is at the transfer bound, which hides
//!   it). Rows only where a measurement shows a cost above noise.
//! * **congestion**: throughput at queue `q` over the best at any shorter queue; rows only
//!   when some point loses more than [`LOSS_NOISE_FRACTION`].
//! * **direction switch**: a random mixed run at queue depth 1 switches direction with
//!   probability `2p(1 - p)`; its mean latency above the mix of the pure runs, divided by that
//!   probability, is the penalty of one switch.
//! * **variability**: the latency quantiles of the one-request sequential read closest to
//!   1 MiB (write when no read has quantiles), over its mean.

use std::collections::BTreeMap;

use crate::{
    CongestionRow, Measured, Op, Pattern, Profile, QuantileRow, SizeRow, Source, StreamRow, FORMAT,
};

/// A throughput loss smaller than this is measurement noise, not congestion.
pub const LOSS_NOISE_FRACTION: f64 = 0.05;
/// A penalty below this fraction of the one-request latency is measurement noise.
pub const PENALTY_NOISE_FRACTION: f64 = 0.02;

fn transfer_us(size_kib: u64, bandwidth_mib_s: f64) -> f64 {
    size_kib as f64 / 1024.0 / bandwidth_mib_s * 1e6
}

fn find(
    points: &[Measured],
    op: Op,
    pattern: Pattern,
    size_kib: u64,
    queue_depth: u32,
    streams: u32,
) -> Option<&Measured> {
    points.iter().find(|m| {
        m.op == op
            && m.pattern == pattern
            && m.size_kib == size_kib
            && m.queue_depth == queue_depth
            && m.streams == streams
    })
}

/// The profile the points imply. Errors say which points are missing.
pub fn fit(
    name: &str,
    description: &str,
    source: Source,
    points: Vec<Measured>,
) -> Result<Profile, String> {
    let mut rows: [Vec<SizeRow>; 2] = [Vec::new(), Vec::new()];
    for (k, op) in [Op::Read, Op::Write].into_iter().enumerate() {
        // size -> best one-stream throughput over queue depths, sequential or random (the
        // serialized transfer bounds both alike; a random sweep often reaches it first).
        let mut best: BTreeMap<u64, f64> = BTreeMap::new();
        for m in points.iter().filter(|m| m.op == op && m.streams == 1) {
            let b = best.entry(m.size_kib).or_insert(0.0);
            *b = b.max(m.bandwidth_mib_s);
        }
        for (&size, &bandwidth) in &best {
            let Some(one) = find(&points, op, Pattern::Sequential, size, 1, 1) else {
                continue;
            };
            let overhead = (one.latency_mean_us - transfer_us(size, bandwidth)).max(0.0);
            let random = find(&points, op, Pattern::Random, size, 1, 1)
                .map(|r| (r.latency_mean_us - one.latency_mean_us).max(0.0));
            rows[k].push(SizeRow {
                size_kib: size,
                bandwidth_mib_s: bandwidth,
                overhead_us: overhead,
                random_penalty_us: random,
            });
        }
        if rows[k].is_empty() {
            return Err(format!(
                "no sequential {} point of one stream at queue depth 1: the sweep cannot \
                 give the {} rows",
                if k == 0 { "read" } else { "write" },
                if k == 0 { "read" } else { "write" },
            ));
        }
    }
    let [read, write] = rows;
    let random_penalty_us = read
        .iter()
        .chain(&write)
        .find_map(|r| r.random_penalty_us)
        .unwrap_or(0.0);

    let concurrency = concurrency(&points);
    let streams = streams(&points, &read, &write, concurrency);
    let congestion = congestion(&points);
    let direction_switch_penalty_us = direction_switch(&points);
    let variability = variability(&points);

    let profile = Profile {
        format: FORMAT.to_string(),
        name: name.to_string(),
        description: description.to_string(),
        concurrency,
        random_penalty_us,
        direction_switch_penalty_us,
        source,
        read,
        write,
        streams,
        congestion,
        variability,
        // fio's completion latencies are whole service times: a sweep cannot tell the random
        // penalty's share of their spread from the rest, so that spread goes to
        // `variability` alone.
        random_penalty_variability: Vec::new(),
        measured: points,
    };
    profile
        .validate("<fitted profile>")
        .map_err(|e| format!("the fitted profile is invalid: {e}"))?;
    Ok(profile)
}

/// Little's law at the best-throughput queue of the smallest size's random reads (or
/// sequential reads), at least 1. When the random reads reach the sequential reads' best
/// (the serialized transfer, not the slots, bounds them), Little's law gives only a lower
/// bound on the slots; the queue depth at which the sweep first reaches 95 % of its best is
/// then taken if larger.
fn concurrency(points: &[Measured]) -> u32 {
    for pattern in [Pattern::Random, Pattern::Sequential] {
        let sweep: Vec<&Measured> = points
            .iter()
            .filter(|m| m.op == Op::Read && m.pattern == pattern && m.streams == 1)
            .collect();
        let Some(size) = sweep.iter().map(|m| m.size_kib).min() else {
            continue;
        };
        let Some(one) = sweep
            .iter()
            .find(|m| m.size_kib == size && m.queue_depth == 1)
        else {
            continue;
        };
        let mut at_size: Vec<&&Measured> = sweep.iter().filter(|m| m.size_kib == size).collect();
        at_size.sort_by_key(|m| m.queue_depth);
        let best = at_size
            .iter()
            .map(|m| m.bandwidth_mib_s)
            .fold(0.0, f64::max);
        let iops = best * 1024.0 / size as f64;
        // Rounded up: one slot too many only lets the transfer bound show, one too few
        // caps the device below what was measured.
        let little = (iops * one.latency_mean_us / 1e6 * (1.0 - 1e-9)).ceil();
        let sequential_best = points
            .iter()
            .filter(|m| {
                m.op == Op::Read
                    && m.pattern == Pattern::Sequential
                    && m.streams == 1
                    && m.size_kib == size
            })
            .map(|m| m.bandwidth_mib_s)
            .fold(0.0, f64::max);
        let transfer_bound =
            pattern == Pattern::Random && best >= sequential_best * (1.0 - LOSS_NOISE_FRACTION);
        let knee = at_size
            .iter()
            .find(|m| m.bandwidth_mib_s >= best * (1.0 - LOSS_NOISE_FRACTION))
            .map_or(1.0, |m| f64::from(m.queue_depth));
        let c = if transfer_bound {
            little.max(knee)
        } else {
            little
        };
        return (c as u32).clamp(1, crate::CONCURRENCY_MAX);
    }
    1
}

fn row_at(rows: &[SizeRow], size_kib: u64) -> Option<&SizeRow> {
    rows.iter().find(|r| r.size_kib == size_kib)
}

fn streams(
    points: &[Measured],
    read: &[SizeRow],
    write: &[SizeRow],
    concurrency: u32,
) -> Vec<StreamRow> {
    for (op, rows) in [(Op::Write, write), (Op::Read, read)] {
        let sweep: Vec<&Measured> = points
            .iter()
            .filter(|m| m.op == op && m.pattern == Pattern::Sequential && m.queue_depth == 1)
            .collect();
        // The size with the most stream counts measured.
        let mut by_size: BTreeMap<u64, Vec<&Measured>> = BTreeMap::new();
        for m in &sweep {
            by_size.entry(m.size_kib).or_default().push(m);
        }
        let Some((&size, ms)) = by_size
            .iter()
            .filter(|(_, ms)| ms.len() >= 2)
            .max_by_key(|(s, ms)| (ms.len(), std::cmp::Reverse(**s)))
        else {
            continue;
        };
        let Some(row) = row_at(rows, size) else {
            continue;
        };
        let one_cycle_us = row.overhead_us + transfer_us(size, row.bandwidth_mib_s);
        let mut ms = ms.clone();
        ms.sort_by_key(|m| m.streams);
        let mut out = vec![StreamRow {
            streams: 1,
            switch_penalty_us: 0.0,
        }];
        let mut any = false;
        for m in ms.iter().filter(|m| m.streams > 1) {
            let slots = f64::from(m.streams.min(concurrency));
            let cycle_us = slots * transfer_us(size, m.bandwidth_mib_s);
            // At the transfer bound the slots are not the bottleneck: no switch cost shows.
            let transfer_bound =
                m.bandwidth_mib_s >= row.bandwidth_mib_s * (1.0 - LOSS_NOISE_FRACTION);
            let penalty = (cycle_us - one_cycle_us).max(0.0);
            let penalty = if transfer_bound || penalty < PENALTY_NOISE_FRACTION * one_cycle_us {
                0.0
            } else {
                any = true;
                penalty
            };
            out.push(StreamRow {
                streams: m.streams,
                switch_penalty_us: penalty,
            });
        }
        return if any { out } else { Vec::new() };
    }
    Vec::new()
}

fn congestion(points: &[Measured]) -> Vec<CongestionRow> {
    for op in [Op::Write, Op::Read] {
        let mut by_size: BTreeMap<u64, Vec<&Measured>> = BTreeMap::new();
        for m in points
            .iter()
            .filter(|m| m.op == op && m.pattern == Pattern::Sequential && m.streams == 1)
        {
            by_size.entry(m.size_kib).or_default().push(m);
        }
        let Some((_, ms)) = by_size
            .iter()
            .filter(|(_, ms)| ms.len() >= 3)
            .max_by_key(|(s, ms)| (ms.len(), **s))
        else {
            continue;
        };
        let mut ms = ms.clone();
        ms.sort_by_key(|m| m.queue_depth);
        let mut best = 0.0f64;
        let mut rows = Vec::new();
        let mut loss = false;
        for m in ms {
            let fraction = if best > 0.0 {
                (m.bandwidth_mib_s / best).min(1.0)
            } else {
                1.0
            };
            loss |= fraction < 1.0 - LOSS_NOISE_FRACTION;
            best = best.max(m.bandwidth_mib_s);
            rows.push(CongestionRow {
                queue_requests: m.queue_depth,
                throughput_fraction: fraction,
            });
        }
        return if loss { rows } else { Vec::new() };
    }
    Vec::new()
}

fn direction_switch(points: &[Measured]) -> f64 {
    let Some(mix) = points
        .iter()
        .filter(|m| m.op == Op::Mixed && m.queue_depth == 1 && m.streams == 1)
        .min_by_key(|m| m.size_kib)
    else {
        return 0.0;
    };
    let p = f64::from(mix.read_percent.unwrap_or(50)) / 100.0;
    if !(p > 0.0 && p < 1.0) {
        return 0.0;
    }
    let (Some(r), Some(w)) = (
        find(points, Op::Read, mix.pattern, mix.size_kib, 1, 1),
        find(points, Op::Write, mix.pattern, mix.size_kib, 1, 1),
    ) else {
        return 0.0;
    };
    let expected = p * r.latency_mean_us + (1.0 - p) * w.latency_mean_us;
    let extra = mix.latency_mean_us - expected;
    if extra < PENALTY_NOISE_FRACTION * expected {
        return 0.0;
    }
    extra / (2.0 * p * (1.0 - p))
}

fn variability(points: &[Measured]) -> Vec<QuantileRow> {
    for op in [Op::Read, Op::Write] {
        let Some(m) = points
            .iter()
            .filter(|m| {
                m.op == op
                    && m.pattern == Pattern::Sequential
                    && m.queue_depth == 1
                    && m.streams == 1
                    && m.latency_quantiles_us.len() >= 2
            })
            .min_by_key(|m| m.size_kib.abs_diff(1024))
        else {
            continue;
        };
        let q = &m.latency_quantiles_us;
        let mut rows = vec![QuantileRow {
            quantile: 0.0,
            factor: q[0][1] / m.latency_mean_us,
        }];
        rows.extend(q.iter().map(|[quantile, us]| QuantileRow {
            quantile: *quantile,
            factor: us / m.latency_mean_us,
        }));
        rows.push(QuantileRow {
            quantile: 1.0,
            factor: q[q.len() - 1][1] / m.latency_mean_us,
        });
        return rows;
    }
    Vec::new()
}
