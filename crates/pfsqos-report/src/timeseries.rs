//! `timeseries.csv`: bytes and throughput per bin, per job and OST, plus per-job totals.

use std::fmt::Write as _;

use pfsqos_core::run::RunOutput;

use crate::{bin_count, fmt_seconds, BYTES_PER_MIB};

pub const CSV_HEADER: &str = "time_s,job_id,ost,bytes,throughput_mib_s";

/// Quotes a field only when CSV needs it (RFC 4180), so plain job ids stay plain.
pub(crate) fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

pub(crate) fn ost_name(run: &RunOutput, ost: usize) -> String {
    run.osts
        .get(ost)
        .cloned()
        .unwrap_or_else(|| format!("OST{ost:04x}"))
}

/// The whole CSV. Rows go by bin, then job (scenario order), then OST index; each job's `all`
/// row follows its OST rows and is written even when zero so that plotted totals have no gaps.
/// OST rows are written only when non-zero: most (bin, job, OST) cells are empty.
pub fn timeseries_csv(run: &RunOutput) -> String {
    let bins = bin_count(run);
    let bin_s = run.bin_ns as f64 / 1e9;
    let throughput = |bytes: u64| {
        if bin_s > 0.0 {
            bytes as f64 / BYTES_PER_MIB / bin_s
        } else {
            0.0
        }
    };
    let job_ids: Vec<String> = run.jobs.iter().map(|j| csv_field(&j.job_id)).collect();
    let ost_names: Vec<String> = (0..run.osts.len().max(max_osts(run)))
        .map(|i| csv_field(&ost_name(run, i)))
        .collect();

    let mut out = String::with_capacity(64 * (bins + 1) * run.jobs.len().max(1));
    out.push_str(CSV_HEADER);
    out.push('\n');
    for bin in 0..bins {
        let time = fmt_seconds(bin as u64 * run.bin_ns);
        for (job, job_id) in run.jobs.iter().zip(&job_ids) {
            let mut total = 0u64;
            for (ost, per_bin) in job.bytes_per_ost_bin.iter() {
                let bytes = per_bin.get(bin).copied().unwrap_or(0);
                if bytes == 0 {
                    continue;
                }
                total += bytes;
                let _ = writeln!(
                    out,
                    "{time},{job_id},{},{bytes},{:.3}",
                    ost_names[ost],
                    throughput(bytes)
                );
            }
            let _ = writeln!(out, "{time},{job_id},all,{total},{:.3}", throughput(total));
        }
    }
    out
}

fn max_osts(run: &RunOutput) -> usize {
    run.jobs
        .iter()
        .map(|j| j.bytes_per_ost_bin.ost_span())
        .max()
        .unwrap_or(0)
}
