//! iez's client side in one step: from an application's first-run trace (miniRecorder's rows:
//! per file, bytes written, stripe count and MPI rank, iez, IPDPS '19, §III-A1) to the predicted files
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
use crate::model::JobId;

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

/// Most rows a trace may have.
pub const TRACE_ROWS_MAX: usize = 100_000;
/// Longest file name in a trace (Linux's `PATH_MAX`).
pub const TRACE_FILE_NAME_LEN_MAX: usize = 4096;

/// A trace that cannot be read, with its 1-based line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub line: usize,
    pub reason: String,
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "trace line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for TraceError {}

/// Header of a trace without jobs (miniRecorder's rows).
pub const TRACE_HEADER: &str = "file,bytes_written,stripe_count,rank";
/// Header of a trace with a fifth column, the job that created each file (a job id with `%`
/// and `,` percent-encoded as `%25` and `%2C`, so the column never holds a comma).
pub const TRACE_JOB_HEADER: &str = "file,bytes_written,stripe_count,rank,job";

/// One row of a trace: the file's name, what was traced, and its job when the trace names
/// jobs ([`TRACE_JOB_HEADER`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceRow {
    pub file: String,
    pub traced: TracedFile,
    pub job: Option<JobId>,
}

/// A job id as the trace's job column carries it (`%` and `,` percent-encoded).
pub fn encode_trace_job(job: &JobId) -> String {
    job.as_str().replace('%', "%25").replace(',', "%2C")
}

fn decode_trace_job(text: &str) -> Option<JobId> {
    let mut out = Vec::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            // Two hex digits exactly: `from_str_radix` would also take a sign (`%+4`).
            if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    JobId::new(std::str::from_utf8(&out).ok()?).ok()
}

/// Reads a first-run trace as miniRecorder's C-Parser writes it (§III-A1), one file per line:
/// `file,bytes_written,stripe_count,rank`, an optional header line starting with `file`, `#`
/// comments and blank lines skipped. The file name is everything before the last three
/// commas (so names may hold commas); it is data, never syntax: it may not be empty, longer
/// than [`TRACE_FILE_NAME_LEN_MAX`] or hold control characters. Stripe counts are
/// 1..=[`super::STRIPE_COUNT_MAX`]; at most [`TRACE_ROWS_MAX`] files. A trace whose first line
/// is [`TRACE_JOB_HEADER`] has a fifth column, the job ([`parse_trace_rows`]); here every row
/// is kept whatever its job.
pub fn parse_trace(text: &str) -> Result<Vec<(String, TracedFile)>, TraceError> {
    Ok(parse_trace_rows(text)?
        .into_iter()
        .map(|r| (r.file, r.traced))
        .collect())
}

/// [`parse_trace`] with each row's job: `None` in a trace without the job column; in one with
/// it ([`TRACE_JOB_HEADER`]) every row must name a valid job id (percent-encoded,
/// [`encode_trace_job`]).
pub fn parse_trace_rows(text: &str) -> Result<Vec<TraceRow>, TraceError> {
    let mut out = Vec::new();
    let mut with_job = false;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |reason: String| TraceError { line, reason };
        let row = raw.trim_end_matches('\r');
        if i == 0 && row == TRACE_JOB_HEADER {
            with_job = true;
            continue;
        }
        if row.trim().is_empty() || row.starts_with('#') || (i == 0 && row.starts_with("file")) {
            continue;
        }
        if out.len() >= TRACE_ROWS_MAX {
            return Err(err(format!("more than {TRACE_ROWS_MAX} files")));
        }
        let (row, job) = if with_job {
            let Some((rest, job)) = row.rsplit_once(',') else {
                return Err(err(format!("expected {TRACE_JOB_HEADER}")));
            };
            let job = decode_trace_job(job).ok_or_else(|| {
                err(format!(
                    "job `{}` is not a job id (at most {} bytes, no control character, `%` and `,` percent-encoded)",
                    job.escape_debug(),
                    crate::model::JOB_ID_LEN_MAX
                ))
            })?;
            (rest, Some(job))
        } else {
            (row, None)
        };
        let mut fields = row.rsplitn(4, ',');
        let (Some(rank), Some(count), Some(bytes), Some(name)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(err(
                "expected file,bytes_written,stripe_count,rank".to_string()
            ));
        };
        if name.is_empty() || name.len() > TRACE_FILE_NAME_LEN_MAX {
            return Err(err(format!(
                "file name must be 1..={TRACE_FILE_NAME_LEN_MAX} bytes"
            )));
        }
        if name.chars().any(char::is_control) {
            return Err(err("file name holds a control character".to_string()));
        }
        let number = |what: &str, text: &str| {
            text.trim()
                .parse::<u64>()
                .map_err(|_| err(format!("{what} `{text}` is not a whole number")))
        };
        let bytes_written = number("bytes_written", bytes)?;
        if bytes_written > super::stripe::PREDICTED_FILE_BYTES_MAX {
            return Err(err(format!(
                "bytes_written {bytes_written} above {}",
                super::stripe::PREDICTED_FILE_BYTES_MAX
            )));
        }
        let stripe_count = number("stripe_count", count)?;
        if stripe_count == 0 || stripe_count > u64::from(super::STRIPE_COUNT_MAX) {
            return Err(err(format!(
                "stripe_count {stripe_count} not in 1..={}",
                super::STRIPE_COUNT_MAX
            )));
        }
        let rank = u32::try_from(number("rank", rank)?)
            .map_err(|_| err("rank above 2^32 - 1".to_string()))?;
        out.push(TraceRow {
            file: name.to_string(),
            traced: TracedFile {
                bytes_written,
                stripe_count: stripe_count as u32,
                rank,
            },
            job,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_with_a_job_column_keep_each_rows_job() {
        let odd = JobId::new("a,b%c d").unwrap();
        let text = format!(
            "{TRACE_JOB_HEADER}\n/run/x,y,10,2,0,ior.1\n# comment\n/run/z,20,2,1,{}\n",
            encode_trace_job(&odd)
        );
        assert_eq!(encode_trace_job(&odd), "a%2Cb%25c d");
        let rows = parse_trace_rows(&text).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].file, "/run/x,y");
        assert_eq!(rows[0].traced.bytes_written, 10);
        assert_eq!(rows[0].job, Some(JobId::new("ior.1").unwrap()));
        assert_eq!(rows[1].job, Some(odd));
        // parse_trace keeps every row.
        assert_eq!(parse_trace(&text).unwrap().len(), 2);
        // Without the header the fifth column would be a name's part: the old format reads
        // as before, jobs unknown.
        let old = "file,bytes_written,stripe_count,rank\n/run/a,5,1,0\n";
        assert_eq!(parse_trace_rows(old).unwrap()[0].job, None);
        // A job that is not a job id, a bad escape, a missing column: errors with the line.
        let long = "j".repeat(40);
        for bad in [
            format!("{TRACE_JOB_HEADER}\n/run/a,5,1,0,{long}\n"),
            format!("{TRACE_JOB_HEADER}\n/run/a,5,1,0,x%zz\n"),
            format!("{TRACE_JOB_HEADER}\n/run/a,5,1,0,x%2\n"),
            format!("{TRACE_JOB_HEADER}\n/run/a,5,1,0,x%+9\n"),
            format!("{TRACE_JOB_HEADER}\n/run/a,5,1,0,x%-9\n"),
            format!("{TRACE_JOB_HEADER}\n/run/a,5,1\n"),
            format!("{TRACE_JOB_HEADER}\nnocomma\n"),
        ] {
            let e = parse_trace_rows(&bad).unwrap_err();
            assert_eq!(e.line, 2, "{bad}: {e}");
        }
    }

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

    #[test]
    fn traces_are_read_as_data_and_bad_rows_name_their_line() {
        let text = "file,bytes_written,stripe_count,rank\n\
                    # comment\n\
                    /scratch/a,b.dat,100532224,8,0\n\
                    \n\
                    /scratch/$(rm -rf ~)'x,5,1,7\r\n";
        let rows = parse_trace(text).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].0, "/scratch/a,b.dat");
        assert_eq!(
            rows[0].1,
            TracedFile {
                bytes_written: 100_532_224,
                stripe_count: 8,
                rank: 0
            }
        );
        assert_eq!(rows[1].0, "/scratch/$(rm -rf ~)'x");
        for (bad, line, what) in [
            ("a,1,2\n", 1, "expected"),
            ("a,x,2,0\n", 1, "bytes_written"),
            ("a,1,0,0\n", 1, "stripe_count"),
            ("ok,1,1,0\n,1,1,0\n", 2, "file name"),
            ("a\u{1b}[2J,1,1,0\n", 1, "control"),
            ("a,1,1,99999999999\n", 1, "rank"),
        ] {
            let e = parse_trace(bad).unwrap_err();
            assert_eq!(e.line, line, "{bad:?}: {e}");
            assert!(e.to_string().contains(what), "{bad:?}: {e}");
        }
    }
}
