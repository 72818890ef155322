//! `pfsqos pi identify --record FILE`: the fit of eq. 1 and the gains of eq. 3-4 (PI paper
//! §3.4-3.5, §4.2) on a record taken on a live cluster, the CSV an ossd writes with
//! `--policy pi-openloop:... --control-record FILE` (`pfsqos_core::control::pi::record`).
//! The scenario form of the command runs the same experiment in the simulator
//! (`commands::pi_identify`).

use std::io::Read;
use std::path::Path;

use pfsqos_core::control::pi::record::{median_interval_s, parse_record, RecordRow};
use pfsqos_core::control::pi::savgol::SavGol;
use pfsqos_core::control::pi::OpenLoopPeriod;

use crate::commands::{fit_and_design, CliError, PiIdentify};

/// Largest record file read (a million rows of about 30 bytes).
pub const RECORD_FILE_LEN_MAX: u64 = 64 << 20;

fn read_record(path: &Path) -> Result<Vec<RecordRow>, CliError> {
    let bad = |e: String| CliError::BadInput(format!("{}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let mut text = String::new();
    file.take(RECORD_FILE_LEN_MAX + 1)
        .read_to_string(&mut text)
        .map_err(|e| bad(e.to_string()))?;
    if text.len() as u64 > RECORD_FILE_LEN_MAX {
        return Err(bad(format!("longer than {RECORD_FILE_LEN_MAX} bytes")));
    }
    parse_record(&text).map_err(|e| bad(e.to_string()))
}

/// Fits the record at `path` and prints the static curve, the model, the gains and the
/// `pi` spec that runs them. The sampling time is the record's median row interval.
pub fn identify_record(path: &Path, args: &PiIdentify) -> Result<(), CliError> {
    let rows = read_record(path)?;
    let ts_s = median_interval_s(&rows).ok_or_else(|| {
        CliError::BadInput(format!(
            "{}: {} rows; a record needs many periods (tens at least)",
            path.display(),
            rows.len()
        ))
    })?;
    // Checked before the record is summarized.
    SavGol::new(args.window, args.order)
        .map_err(|e| CliError::BadInput(format!("--window/--order: {e}")))?;
    let periods: Vec<OpenLoopPeriod> = rows.iter().map(|r| r.period).collect();
    println!(
        "record: {} periods, sampling time {:.0} ms (the median row interval)",
        periods.len(),
        ts_s * 1e3
    );
    fit_and_design(&periods, ts_s, args, &path.display().to_string())
}
