//! iez's client side in one step: from an application's first-run trace (miniRecorder's rows:
//! per file, bytes written, stripe count and MPI rank, iez.txt §III-A1) to the predicted files
//! of its next run that the OST allocation plans for (AIPA, §III-A2, feeding
//! [`super::Placement::set_predictions`]).
//!
//! The paper fits ARIMA to the trace's time series (the files in creation order) and uses the
//! fitted model to predict the application's future requests. It does not say how a model of
//! one run becomes one value per file of the next; we take the model's one-step-ahead
//! prediction of each file from the files before it in the trace (the fitted values: file `t`
//! predicted from files `0..t`), and the traced value itself for the first `d + p` files, which
//! the model conditions on. A trace too short for ARIMA ([`PREDICT_ARIMA_MIN_LEN`]) or
//! constant predicts each file as traced (an HPC application repeats its I/O, §III-A2), as
//! does one no order converges for. Stripe counts are kept as traced: in every trace the
//! simulator and the mount produce they are constant per application, where ARIMA would
//! predict the same.

use crate::forecast::{select_order, ArimaOrder, SelectionOptions, PREDICT_ARIMA_MIN_LEN};

use super::PredictedFile;

/// One traced file of a first run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracedFile {
    pub bytes_written: u64,
    pub stripe_count: u32,
    /// The MPI rank (process index in the job) that wrote it.
    pub rank: u32,
}

/// The predicted next run.
#[derive(Clone, Debug, PartialEq)]
pub struct FilePrediction {
    /// One per traced file, in the same order.
    pub files: Vec<PredictedFile>,
    /// The ARIMA order the forecast used; `None` when the files were predicted as traced.
    pub order: Option<ArimaOrder>,
    /// The paper's accuracy: `1 - mean(|predicted - traced| / traced)` over files with bytes.
    pub accuracy: f64,
}

/// Predicts the next run's files from a first-run trace (module doc).
pub fn predict_files(trace: &[TracedFile]) -> FilePrediction {
    let series: Vec<f64> = trace.iter().map(|f| f.bytes_written as f64).collect();
    let as_traced = || FilePrediction {
        files: trace
            .iter()
            .map(|f| PredictedFile {
                predicted_bytes: f.bytes_written,
                stripe_count: f.stripe_count,
            })
            .collect(),
        order: None,
        accuracy: 1.0,
    };
    let constant = series.windows(2).all(|w| w[0] == w[1]);
    if series.len() < PREDICT_ARIMA_MIN_LEN || constant {
        return as_traced();
    }
    let Ok(selection) = select_order(&series, &SelectionOptions::default()) else {
        return as_traced();
    };
    let model = &selection.model;
    let errors = model.one_step_errors();
    // The model predicts files conditioned on the first `len - errors` ones.
    let conditioned = series.len() - errors.len();
    assert!(conditioned <= series.len());
    let files: Vec<PredictedFile> = trace
        .iter()
        .enumerate()
        .map(|(t, f)| {
            let predicted = if t < conditioned {
                series[t]
            } else {
                series[t] - errors[t - conditioned]
            };
            assert!(
                predicted.is_finite(),
                "a converged model predicts finite values"
            );
            PredictedFile {
                predicted_bytes: predicted.round().max(0.0) as u64,
                stripe_count: f.stripe_count,
            }
        })
        .collect();
    let relative: Vec<f64> = trace
        .iter()
        .zip(&files)
        .filter(|(f, _)| f.bytes_written > 0)
        .map(|(f, p)| {
            (p.predicted_bytes as f64 - f.bytes_written as f64).abs() / f.bytes_written as f64
        })
        .collect();
    let accuracy = if relative.is_empty() {
        1.0
    } else {
        1.0 - relative.iter().sum::<f64>() / relative.len() as f64
    };
    FilePrediction {
        files,
        order: Some(model.order),
        accuracy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traced(bytes: &[u64]) -> Vec<TracedFile> {
        bytes
            .iter()
            .enumerate()
            .map(|(rank, &bytes_written)| TracedFile {
                bytes_written,
                stripe_count: 4,
                rank: rank as u32,
            })
            .collect()
    }

    #[test]
    fn short_or_constant_traces_are_predicted_as_traced() {
        let p = predict_files(&traced(&[5, 6, 7]));
        assert_eq!(p.order, None);
        let bytes: Vec<u64> = p.files.iter().map(|f| f.predicted_bytes).collect();
        assert_eq!(bytes, [5, 6, 7]);
        assert!(p.files.iter().all(|f| f.stripe_count == 4));
        let p = predict_files(&traced(&[100_532_224; 32]));
        assert_eq!(p.order, None);
        assert!(p.files.iter().all(|f| f.predicted_bytes == 100_532_224));
        assert_eq!(p.accuracy, 1.0);
    }

    /// A trace with a trend and noise (a rank-dependent particle count, say) is fitted: one
    /// prediction per file, close to the trace, from an ARIMA order of the paper's grid.
    #[test]
    fn varying_traces_are_fitted_one_prediction_per_file() {
        let bytes: Vec<u64> = (0..40u64)
            .map(|i| 100_000_000 + i * 1_000_000 + (i * 7919 % 13) * 150_000)
            .collect();
        let p = predict_files(&traced(&bytes));
        let order = p.order.expect("a 40-file varying trace is fitted");
        assert!(order.p <= 5 && order.d <= 5 && order.q <= 5);
        assert_eq!(p.files.len(), 40);
        assert!(p.accuracy > 0.95, "accuracy {}", p.accuracy);
        assert!(p.accuracy <= 1.0);
    }
}
