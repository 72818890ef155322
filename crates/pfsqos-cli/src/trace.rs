//! `pfsqos trace import`: Darshan logs into a scenario file (`pfsqos_darshan`,
//! docs/traces.md). Exit 2 on unusable input (a log that cannot be read or parsed, a bad
//! `--like` scenario or option), 1 when the output cannot be written.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::Subcommand;
use pfsqos_darshan::{import, DarshanLog, ImportOptions, TraceInput};

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Convert Darshan logs (one job each) into one scenario: processes grouped from the
    /// POSIX records, bytes, access sizes, start times and Lustre striping from the log.
    /// See docs/traces.md for what is kept and what is approximated.
    Import {
        /// Darshan log files (format 3.10 or 3.21).
        #[arg(required = true)]
        logs: Vec<PathBuf>,
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
        } => match import_command(
            &logs,
            like.as_deref(),
            scale,
            ranks_per_node,
            out.as_deref(),
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
) -> Result<(), (u8, String)> {
    let bad = |m: String| (2u8, m);
    let mut inputs = Vec::with_capacity(logs.len());
    for path in logs {
        let log = DarshanLog::read(path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
        let label = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        inputs.push(TraceInput { label, log });
    }
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
    let imported = import(&inputs, &options).map_err(|e| bad(e.to_string()))?;
    for j in &imported.jobs {
        eprintln!(
            "{}: job {}: {} ranks, {} nodes, {} process groups (grouping level {}), \
             {} of {} bytes read and {} of {} bytes written after --scale {}",
            j.label,
            j.job_id,
            j.nprocs,
            j.nodes,
            j.groups.len(),
            j.grouping_level,
            j.scenario_bytes_read,
            j.trace_bytes_read,
            j.scenario_bytes_written,
            j.trace_bytes_written,
            scale
        );
    }
    match out {
        None => std::io::stdout()
            .write_all(imported.toml.as_bytes())
            .map_err(|e| (1, format!("cannot write to standard output: {e}"))),
        Some(path) => write_atomically(path, imported.toml.as_bytes())
            .map_err(|e| (1, format!("cannot write {}: {e}", path.display()))),
    }
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
