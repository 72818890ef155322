//! Metrics every design is judged by: fairness indices and share deviation.

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

    #[test]
    fn share_deviation_examples() {
        assert!(share_deviation(&[250.0, 750.0], &[1.0, 3.0]).abs() < 1e-12);
        // Equal split against 1:3 weights: |0.5-0.25| + |0.5-0.75| = 0.5
        assert!((share_deviation(&[1.0, 1.0], &[1.0, 3.0]) - 0.5).abs() < 1e-12);
        assert_eq!(share_deviation(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
    }
}
