//! `pfsqos trace import`: Darshan logs into a scenario file (`pfsqos_darshan`,
//! docs/traces.md). Logs that cannot be read or converted are listed with the reason and
//! left out; exit 2 when none converts, when `--strict` is given and any is refused, or on a
//! bad `--like` scenario or option; 1 when the output cannot be written. A short summary of
//! the workload goes to standard error.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::Subcommand;
use pfsqos_darshan::{import, ImportOptions};

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Convert Darshan logs (one job each) into one scenario: processes grouped from the
    /// POSIX records, bytes, access sizes, start times and Lustre striping from the log.
    /// See docs/traces.md for what is kept and what is approximated.
    Import {
        /// Darshan log files (formats 3.00 to 3.41: Darshan 3.0 to 3.5).
        #[arg(required = true)]
        logs: Vec<PathBuf>,
        /// Fail (exit 2, nothing written) if any log is refused, instead of converting the
        /// others.
        #[arg(long)]
        strict: bool,
        /// Take the system (everything but [[job]] and [appset]) from this scenario
        /// [default: 8 clients, two SSD servers of four OSTs].
        #[arg(long)]
        like: Option<PathBuf>,
        /// Multiply every byte count by this (for quick runs).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        /// MPI ranks per compute node: a job's `nodes` is its ranks divided by this.
        #[arg(long, default_value_t = 1)]
        ranks_per_node: u32,
        /// Output file [default: standard output].
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// Runs a `trace` subcommand; the process exit code.
pub fn run(command: TraceCommand) -> u8 {
    match command {
        TraceCommand::Import {
            logs,
            like,
            scale,
            ranks_per_node,
            out,
            strict,
        } => match import_command(
            &logs,
            like.as_deref(),
            scale,
            ranks_per_node,
            out.as_deref(),
            strict,
        ) {
            Ok(()) => 0,
            Err((code, message)) => {
                eprintln!("pfsqos: error: {message}");
                code
            }
        },
    }
}

fn import_command(
    logs: &[PathBuf],
    like: Option<&Path>,
    scale: f64,
    ranks_per_node: u32,
    out: Option<&Path>,
    strict: bool,
) -> Result<(), (u8, String)> {
    let bad = |m: String| (2u8, m);
    let (inputs, mut refused) = pfsqos_darshan::read_logs(logs);
    let like_text = match like {
        Some(p) => Some((p.display().to_string(), read_scenario(p).map_err(bad)?)),
        None => None,
    };
    // The command that regenerates the output, for the comment at its top.
    let mut command: Vec<String> = ["pfsqos", "trace", "import"].map(String::from).to_vec();
    command.extend(logs.iter().map(|p| p.to_string_lossy().into_owned()));
    if let Some(p) = like {
        command.extend(["--like".to_string(), p.to_string_lossy().into_owned()]);
    }
    if scale != 1.0 {
        command.extend(["--scale".to_string(), scale.to_string()]);
    }
    if ranks_per_node != 1 {
        command.extend(["--ranks-per-node".to_string(), ranks_per_node.to_string()]);
    }
    if let Some(p) = out {
        command.extend(["--out".to_string(), p.to_string_lossy().into_owned()]);
    }
    let options = ImportOptions {
        like: like_text,
        scale,
        ranks_per_node,
        command,
    };
    let result = if inputs.is_empty() {
        Err(pfsqos_darshan::ImportError("no log could be read".into()))
    } else {
        import(&inputs, &options)
    };
    let imported = match result {
        Ok(i) => i,
        Err(e) => {
            print_refused(&refused);
            return Err(bad(e.to_string()));
        }
    };
    refused.extend(imported.refused.iter().cloned());
    print_refused(&refused);
    if strict && !refused.is_empty() {
        return Err(bad(format!(
            "{} of {} logs refused (--strict); nothing written",
            refused.len(),
            logs.len()
        )));
    }
    match out {
        None => std::io::stdout()
            .write_all(imported.toml.as_bytes())
            .map_err(|e| (1, format!("cannot write to standard output: {e}")))?,
        Some(path) => write_atomically(path, imported.toml.as_bytes())
            .map_err(|e| (1, format!("cannot write {}: {e}", path.display())))?,
    }
    let target = out
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "standard output".into());
    eprint!(
        "{}",
        summary(&imported, &target, logs.len(), refused.len(), scale)
    );
    Ok(())
}

fn print_refused(refused: &[(String, String)]) {
    for (label, reason) in refused {
        eprintln!("pfsqos: refused {}: {reason}", escape(label));
    }
}

/// A file name or label for a terminal: control characters escaped.
fn escape(s: &str) -> String {
    s.chars().flat_map(char::escape_debug).collect::<String>()
}

/// Bytes in binary units, as darshan-parser's totals are read.
fn human(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// The short report of an import: where the scenario went, and per job its ranks, bytes,
/// run time, timeline and busiest files.
fn summary(
    imported: &pfsqos_darshan::Imported,
    target: &str,
    logs: usize,
    refused: usize,
    scale: f64,
) -> String {
    let jobs = &imported.jobs;
    let read: u64 = jobs.iter().map(|j| j.trace_bytes_read).sum();
    let written: u64 = jobs.iter().map(|j| j.trace_bytes_written).sum();
    let longest = jobs.iter().map(|j| j.run_time_s).fold(0.0, f64::max);
    let mut s = format!(
        "wrote {}: {} jobs from {logs} logs ({refused} refused); {} read, {} written; longest run {longest:.1} s\n",
        escape(target),
        jobs.len(),
        human(read),
        human(written),
    );
    if scale != 1.0 {
        s.push_str(&format!("  bytes in the scenario scaled by {scale}\n"));
    }
    for j in jobs {
        let timeline = match &j.timeline {
            Some(t) => format!("timeline from {} ({} s intervals)", t.module, t.interval_s),
            None => "no timeline (aggregate counters only)".into(),
        };
        s.push_str(&format!(
            "  job {} ({}): {} ranks on {} nodes, {} read, {} written, {:.1} s, {} files, {} \
             process groups; {timeline}\n",
            j.job_id,
            escape(&j.label),
            j.nprocs,
            j.nodes,
            human(j.trace_bytes_read),
            human(j.trace_bytes_written),
            j.run_time_s,
            j.files,
            j.groups.len(),
        ));
        for f in &j.busiest_files {
            s.push_str(&format!(
                "    {}: {} read, {} written\n",
                escape(&f.name),
                human(f.bytes_read),
                human(f.bytes_written)
            ));
        }
    }
    s
}

fn read_scenario(path: &Path) -> Result<String, String> {
    let limit = pfsqos_sim::scenario::FILE_LEN_MAX;
    let file = std::fs::File::open(path).map_err(|e| format!("--like {}: {e}", path.display()))?;
    let mut text = String::new();
    file.take(limit + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("--like {}: {e}", path.display()))?;
    if text.len() as u64 > limit {
        return Err(format!(
            "--like {}: larger than {} MiB, the largest scenario file",
            path.display(),
            limit >> 20
        ));
    }
    Ok(text)
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`, so a reader
/// never sees half a scenario.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("the output path names no file"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
