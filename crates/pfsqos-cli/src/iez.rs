//! `pfsqos iez train`: the forecast step of iez on its own (AIPA, IPDPS'19 §III-A2). It reads
//! a first-run trace (the mount's `--iez-trace`, or miniRecorder's rows from anywhere),
//! predicts the next run's files with core's ARIMA forecast
//! (`pfsqos_core::place::profile::predict_files`) and either loads them into the MDS's
//! interaction database over the pfsqos protocol (`--mds`, authenticated with the cluster
//! key; the MDS plans their OSTs with Algorithm 2) or prints them
//! (`file,predicted_bytes,stripe_count`).
//!
//! The mount's trace holds every file created through it, each with its creator's job id
//! (`file,bytes_written,stripe_count,rank,job`); `--job ID` keeps that job's files (and names
//! the application after it unless `--app` is given). A trace without the job column
//! (miniRecorder's) is taken whole.
//!
//! Through the protocol rather than a file the MDS is pointed at: the load is one
//! transaction in the MDS's SQLite, checked there (paths, stripe counts, sizes), effective at
//! once, and survives MDS restarts with the rest of the namespace.

use std::path::{Path, PathBuf};

use pfsqos_core::model::JobId;
use pfsqos_core::place::profile::{parse_trace_rows, predict_files, TracedFile};
use pfsqos_wire::client::MdsClient;
use pfsqos_wire::mds::{IezPrediction, IEZ_FILES_PER_LOAD_MAX};

use crate::commands::{read_bounded, CliError, TRACE_FILE_LEN_MAX};

/// Most distinct jobs an error message lists.
const JOBS_LISTED_MAX: usize = 10;

/// `pfsqos iez train`'s options.
#[derive(Debug, clap::Args)]
pub struct TrainArgs {
    /// The trace: `file,bytes_written,stripe_count,rank` per line (header optional), or the
    /// mount's `file,bytes_written,stripe_count,rank,job` (header required).
    pub trace: PathBuf,
    /// The application the predictions are for: 1..=64 bytes of [A-Za-z0-9._:@+-]. Default:
    /// the --job given.
    #[arg(long, required_unless_present = "job")]
    pub app: Option<String>,
    /// Keep only the files this job created (a trace with the job column, as the mount
    /// writes it).
    #[arg(long)]
    pub job: Option<String>,
    /// Load the predictions into this MDS (HOST:PORT); without it they are printed.
    #[arg(long)]
    pub mds: Option<String>,
    /// The cluster key file (with --mds).
    #[arg(long, requires = "mds")]
    pub key_file: Option<PathBuf>,
    /// Remove this prefix from the trace's file names (a trace recorded at a mount point
    /// other than the file system root); names must then start with `/`.
    #[arg(long)]
    pub strip_prefix: Option<String>,
}

/// The trace's files, only those of `job` when given (module doc).
pub fn trace_files(trace: &Path, job: Option<&str>) -> Result<Vec<(String, TracedFile)>, CliError> {
    let text = read_bounded(trace, TRACE_FILE_LEN_MAX)?;
    let rows = parse_trace_rows(&text)
        .map_err(|e| CliError::BadInput(format!("{}: {e}", trace.display())))?;
    if rows.is_empty() {
        return Err(CliError::BadInput(format!(
            "{}: no files in the trace",
            trace.display()
        )));
    }
    let Some(job) = job else {
        let mut jobs: Vec<&JobId> = rows.iter().filter_map(|r| r.job.as_ref()).collect();
        jobs.sort_unstable_by_key(|j| j.as_str());
        jobs.dedup();
        if jobs.len() > 1 {
            eprintln!(
                "note: {} holds files of {} jobs; --job ID keeps one application's",
                trace.display(),
                jobs.len()
            );
        }
        return Ok(rows.into_iter().map(|r| (r.file, r.traced)).collect());
    };
    let want = JobId::new(job).map_err(|e| CliError::BadInput(format!("--job {:?}: {e}", job)))?;
    if rows.iter().all(|r| r.job.is_none()) {
        return Err(CliError::BadInput(format!(
            "{}: the trace names no jobs (no `job` column): train without --job",
            trace.display()
        )));
    }
    let kept: Vec<(String, TracedFile)> = rows
        .iter()
        .filter(|r| r.job == Some(want))
        .map(|r| (r.file.clone(), r.traced))
        .collect();
    if kept.is_empty() {
        let mut jobs: Vec<&str> = rows
            .iter()
            .filter_map(|r| r.job.as_ref().map(JobId::as_str))
            .collect();
        jobs.sort_unstable();
        jobs.dedup();
        let listed: Vec<String> = jobs
            .iter()
            .take(JOBS_LISTED_MAX)
            .map(|j| format!("{j:?}"))
            .collect();
        return Err(CliError::BadInput(format!(
            "{}: no files of job {job:?} (jobs in the trace: {}{})",
            trace.display(),
            listed.join(", "),
            if jobs.len() > JOBS_LISTED_MAX {
                ", ..."
            } else {
                ""
            }
        )));
    }
    Ok(kept)
}

/// The predicted files of a trace (only `job`'s when given), named as the MDS keys them.
pub fn predictions(
    trace: &Path,
    strip_prefix: Option<&str>,
    job: Option<&str>,
) -> Result<(Vec<IezPrediction>, String), CliError> {
    let rows = trace_files(trace, job)?;
    if rows.len() > IEZ_FILES_PER_LOAD_MAX {
        return Err(CliError::BadInput(format!(
            "{}: {} files, the MDS takes at most {IEZ_FILES_PER_LOAD_MAX} per application",
            trace.display(),
            rows.len()
        )));
    }
    let traced: Vec<TracedFile> = rows.iter().map(|r| r.1).collect();
    let forecast = predict_files(&traced);
    let summary = match forecast.order {
        Some(o) => format!(
            "forecast: ARIMA({},{},{}), accuracy {:.1} % on the trace",
            o.p,
            o.d,
            o.q,
            forecast.accuracy * 100.0
        ),
        None => "forecast: the trace repeated (too short or constant for ARIMA)".to_string(),
    };
    let mut out = Vec::with_capacity(rows.len());
    for ((name, _), p) in rows.iter().zip(&forecast.files) {
        let path = match strip_prefix {
            Some(pre) => name.strip_prefix(pre).ok_or_else(|| {
                CliError::BadInput(format!("{name:?} does not start with {pre:?}"))
            })?,
            None => name.as_str(),
        };
        if !path.starts_with('/') {
            return Err(CliError::BadInput(format!(
                "{path:?}: file names must be paths from the file system root (start with '/'; \
                 see --strip-prefix)"
            )));
        }
        out.push(IezPrediction {
            path: path.to_string(),
            predicted_bytes: p.predicted_bytes,
            stripe_count: p.stripe_count,
        });
    }
    Ok((out, summary))
}

/// Runs `pfsqos iez train`.
pub fn train(args: &TrainArgs) -> Result<(), CliError> {
    let (files, summary) = predictions(
        &args.trace,
        args.strip_prefix.as_deref(),
        args.job.as_deref(),
    )?;
    // clap requires one of them.
    let app = args
        .app
        .clone()
        .or_else(|| args.job.clone())
        .ok_or_else(|| CliError::BadInput("--app or --job is required".into()))?;
    let Some(mds) = &args.mds else {
        println!("# {summary}");
        println!("file,predicted_bytes,stripe_count");
        for f in &files {
            println!("{},{},{}", f.path, f.predicted_bytes, f.stripe_count);
        }
        return Ok(());
    };
    let key_file = args
        .key_file
        .clone()
        .unwrap_or_else(|| PathBuf::from(pfsqos_wire::key::DEFAULT_KEY_FILE));
    let key = pfsqos_wire::key::read_key_file(&key_file)
        .map_err(|e| CliError::BadInput(e.to_string()))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::RunFailed(e.to_string()))?;
    let (stored, planned) = rt
        .block_on(async {
            let addr = pfsqos_ops::discover::resolve(mds).await?;
            let mut c = MdsClient::connect(addr, &key)
                .await
                .map_err(|e| format!("{mds}: {e}"))?;
            c.iez_load(&app, files)
                .await
                .map_err(|e| format!("{mds}: {e}"))
        })
        .map_err(CliError::RunFailed)?;
    println!("{summary}");
    println!(
        "{stored} predicted files of {:?} loaded; {planned} placed by iez now{}",
        app,
        if planned < stored {
            " (the rest when every OSS has reported statistics, or round robin if they have no room)"
        } else {
            ""
        }
    );
    Ok(())
}
