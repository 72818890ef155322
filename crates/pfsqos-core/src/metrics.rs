//! Metrics every design is judged by: fairness indices and share deviation (how evenly
//! storage targets fill, iez's OSTCost, is `place::cost`).

/// Jain's fairness index of `values`: (sum x)^2 / (n * sum x^2). 1 means perfectly equal, 1/n
/// means one value takes everything. Defined as 1 for an empty or all-zero input (nobody is
/// treated worse than anybody else).
pub fn jain_index(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let sum: f64 = values.iter().sum();
    let sum_sq: f64 = values.iter().map(|v| v * v).sum();
    if values.is_empty() || sum_sq == 0.0 {
        return 1.0;
    }
    sum * sum / (n * sum_sq)
}

/// Jain's index of values normalised by their target weights (x_i / w_i), which measures how
/// well a weighted allocation is honoured: 1 when every value is exactly proportional to its
/// weight. Entries with a zero weight are skipped.
pub fn weighted_jain_index(values: &[f64], weights: &[f64]) -> f64 {
    assert_eq!(values.len(), weights.len(), "one weight per value");
    let normalised: Vec<f64> = values
        .iter()
        .zip(weights)
        .filter(|(_, &w)| w > 0.0)
        .map(|(&v, &w)| v / w)
        .collect();
    jain_index(&normalised)
}

/// vPFS share deviation: sum over i of |share_i - weight_i|, where share_i = x_i / sum x and the
/// weights are normalised to sum to 1. 0 is perfect; the maximum is 2. Defined as 0 when nothing
/// was served (no share was violated).
pub fn share_deviation(values: &[f64], weights: &[f64]) -> f64 {
    assert_eq!(values.len(), weights.len(), "one weight per value");
    let total: f64 = values.iter().sum();
    let weight_total: f64 = weights.iter().sum();
    if total <= 0.0 || weight_total <= 0.0 {
        return 0.0;
    }
    values
        .iter()
        .zip(weights)
        .map(|(&v, &w)| (v / total - w / weight_total).abs())
        .sum()
}

/// One job's bytes per time bin and the bins it exists in, for [`windowed_share_deviation`].
#[derive(Clone, Copy, Debug)]
pub struct JobBins<'a> {
    /// Bytes completed per bin (all targets together).
    pub bytes_per_bin: &'a [u64],
    /// Target weight (> 0).
    pub weight: f64,
    /// Bins `[first, end)` in which the job exists: from the bin of its first issued I/O to the
    /// bin of its last completion, inclusive. `None` for a job that did no I/O.
    pub exists_bins: Option<(usize, usize)>,
}

/// The unfairness of one window (vPFS §IV-B, the formula after Fig. 6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowDeviation {
    /// First bin of the window.
    pub first_bin: usize,
    /// Jobs that existed in the window (at least two).
    pub jobs: usize,
    /// Sum over those jobs of |normalised throughput - normalised weight|, 0..=2.
    pub deviation: f64,
}

/// vPFS's unfairness over time (§IV-B, Fig. 6): for each window of `window_bins` consecutive
/// bins, [`share_deviation`] among "the existing applications during each time window".
///
/// Choices where the paper is silent, each because it is what its Fig. 6 shows: windows are
/// consecutive and do not overlap ("every 5 seconds", "every 60 seconds"), starting at bin 0;
/// a trailing partial window is dropped; a job exists in a window when its life (first issue to
/// last completion) overlaps it, so a job arriving inside a window makes that window unfair
/// (the paper's spikes at each arrival); windows where fewer than two jobs exist are skipped
/// (there is nobody to be unfair to), and so are windows in which nothing completed.
pub fn windowed_share_deviation(jobs: &[JobBins<'_>], window_bins: usize) -> Vec<WindowDeviation> {
    assert!(window_bins > 0, "a window holds at least one bin");
    assert!(jobs.iter().all(|j| j.weight > 0.0), "weights are positive");
    let bins = jobs
        .iter()
        .map(|j| j.bytes_per_bin.len())
        .max()
        .unwrap_or(0);
    let mut out = Vec::new();
    let mut values = Vec::with_capacity(jobs.len());
    let mut weights = Vec::with_capacity(jobs.len());
    let mut first_bin = 0;
    while first_bin + window_bins <= bins {
        let end_bin = first_bin + window_bins;
        values.clear();
        weights.clear();
        for job in jobs {
            let Some((a, b)) = job.exists_bins else {
                continue;
            };
            assert!(a < b, "a job exists in at least one bin");
            if a >= end_bin || b <= first_bin {
                continue;
            }
            let end = end_bin.min(job.bytes_per_bin.len());
            let bytes: u64 = job
                .bytes_per_bin
                .get(first_bin..end)
                .unwrap_or(&[])
                .iter()
                .sum();
            values.push(bytes as f64);
            weights.push(job.weight);
        }
        if values.len() >= 2 && values.iter().any(|&v| v > 0.0) {
            let deviation = share_deviation(&values, &weights);
            assert!((0.0..=2.0 + 1e-9).contains(&deviation));
            out.push(WindowDeviation {
                first_bin,
                jobs: values.len(),
                deviation,
            });
        }
        first_bin = end_bin;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_extremes() {
        assert!((jain_index(&[5.0, 5.0, 5.0, 5.0]) - 1.0).abs() < 1e-12);
        assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        // (1+3)^2 / (2 * (1+9)) = 16/20
        assert!((jain_index(&[1.0, 3.0]) - 0.8).abs() < 1e-12);
        assert_eq!(jain_index(&[]), 1.0);
    }

    #[test]
    fn weighted_jain_is_one_when_proportional() {
        assert!((weighted_jain_index(&[100.0, 300.0], &[1.0, 3.0]) - 1.0).abs() < 1e-12);
        assert!(weighted_jain_index(&[200.0, 200.0], &[1.0, 3.0]) < 0.9);
    }

    fn job(bytes: &[u64], weight: f64, exists: Option<(usize, usize)>) -> JobBins<'_> {
        JobBins {
            bytes_per_bin: bytes,
            weight,
            exists_bins: exists,
        }
    }

    #[test]
    fn windowed_deviation_by_hand() {
        // Two jobs, weights 1:2, four bins, windows of two bins. Window 0: 100 vs 200 bytes,
        // exactly 1:2, deviation 0. Window 1: 300 vs 0: |1 - 1/3| + |0 - 2/3| = 4/3.
        let a = [50, 50, 150, 150];
        let b = [100, 100, 0, 0];
        let w =
            windowed_share_deviation(&[job(&a, 1.0, Some((0, 4))), job(&b, 2.0, Some((0, 4)))], 2);
        assert_eq!(w.len(), 2);
        assert_eq!((w[0].first_bin, w[0].jobs), (0, 2));
        assert!(w[0].deviation.abs() < 1e-12);
        assert_eq!(w[1].first_bin, 2);
        assert!((w[1].deviation - 4.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn windowed_deviation_counts_only_existing_jobs() {
        // b arrives in bin 2: the first window has one existing job and is skipped; in the
        // second, a job that ended in bin 0 (c) does not count. Trailing bin 4 is partial.
        let a = [10, 10, 10, 10, 10];
        let b = [0, 0, 10, 10, 10];
        let c = [99, 0, 0, 0, 0];
        let w = windowed_share_deviation(
            &[
                job(&a, 1.0, Some((0, 5))),
                job(&b, 1.0, Some((2, 5))),
                job(&c, 1.0, Some((0, 1))),
            ],
            2,
        );
        // Window 0 has a and c (c exists in bin 0): 20 vs 99 bytes against 1:1.
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].jobs, 2);
        assert!((w[0].deviation - 2.0 * (99.0 / 119.0 - 0.5)).abs() < 1e-12);
        assert_eq!((w[1].first_bin, w[1].jobs), (2, 2));
        assert!(w[1].deviation.abs() < 1e-12);
        let none = windowed_share_deviation(&[job(&a, 1.0, Some((0, 5))), job(&[], 1.0, None)], 1);
        assert!(none.is_empty(), "one existing job is never unfair");
    }

    #[test]
    fn share_deviation_examples() {
        assert!(share_deviation(&[250.0, 750.0], &[1.0, 3.0]).abs() < 1e-12);
        // Equal split against 1:3 weights: |0.5-0.25| + |0.5-0.75| = 0.5
        assert!((share_deviation(&[1.0, 1.0], &[1.0, 3.0]) - 0.5).abs() < 1e-12);
        assert_eq!(share_deviation(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
    }
}
