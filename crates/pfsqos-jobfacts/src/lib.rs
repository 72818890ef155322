//! Job facts from Slurm: each running job's node count, user, account, QoS, priority, start
//! and end, read with `squeue` (the program, argv only, never a shell), for the Lustre agent
//! (which gives them to its controller in place of hand-typed `[[jobs]]` node counts) and for
//! the live ossd (which can take the same facts through [`query_squeue`] for its job
//! node-count table).
//!
//! Why `squeue --format` and not `squeue --json` or a prolog spool: the `--json` schema moves
//! with Slurm's OpenAPI plugin version (`v0.0.38` in 22.05, `v0.0.39` in 23.02, `v0.0.40`
//! in 23.11, each renaming fields), while the `--format` codes (`%i %D %u %a %q %Q %S %e`,
//! squeue(1)) have kept their meaning since Slurm 2.x; and `squeue` reaches slurmctld from
//! any host with the Slurm client and munge key, where a prolog spool would be local to each
//! compute node. The fields are separated by `|`, which Slurm allows in none of them (user and
//! account names are POSIX names, QoS names are refused with `|` by sacctmgr; job names, which
//! could hold one, are not read).
//!
//! Everything read is bounded: the output length, the line count ([`JOBS_MAX`]) and each
//! field's length; a line that does not parse is skipped and counted, never trusted.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

/// The `squeue --format` read: job id, node count, user, account, QoS, priority, start time,
/// end time (squeue(1) "-o <output_format>").
pub const SQUEUE_FORMAT: &str = "%i|%D|%u|%a|%q|%Q|%S|%e";
/// Most jobs read from one `squeue` answer (more are ignored, and counted).
pub const JOBS_MAX: usize = 65_536;
/// Longest `squeue` output read (bytes); beyond it the answer is refused.
pub const OUTPUT_LEN_BYTES_MAX: usize = 16 << 20;
/// Longest field kept (Slurm's own names are at most 64 bytes; dates 19).
pub const FIELD_LEN_MAX: usize = 128;
/// Largest node count accepted (the ossd's and the cluster file's bound).
pub const NODE_COUNT_MAX: u32 = 1_000_000;

/// One running job as Slurm reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobFacts {
    /// Slurm's job id as `SLURM_JOB_ID` holds it (`%i`: `123`, or `123_4` for an array task).
    pub job: String,
    /// Nodes allocated (`%D`), 1..=[`NODE_COUNT_MAX`].
    pub nodes: u32,
    pub user: String,
    /// Empty when Slurm has none (`(null)` without an accounting database).
    pub account: String,
    /// Empty when Slurm has none.
    pub qos: String,
    /// Slurm's scheduling priority (`%Q`, 0..=2^32-1; higher runs first).
    pub priority: u64,
    /// Start and expected end, as Slurm prints them (`2026-12-02T11:05:44`); empty when unknown.
    pub start: String,
    pub end: String,
}

/// What one `squeue` answer gave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SqueueAnswer {
    pub jobs: Vec<JobFacts>,
    /// Lines that did not parse (skipped), and jobs beyond [`JOBS_MAX`] (ignored).
    pub lines_skipped: usize,
}

/// The arguments of the `squeue` run: running jobs only, no header, [`SQUEUE_FORMAT`].
pub fn squeue_args() -> Vec<String> {
    vec![
        "--noheader".to_string(),
        "--states=RUNNING".to_string(),
        format!("--format={SQUEUE_FORMAT}"),
    ]
}

fn optional(field: &str) -> String {
    match field {
        "(null)" | "N/A" | "Unknown" | "None" => String::new(),
        f => f.to_string(),
    }
}

fn job_id_is_valid(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= FIELD_LEN_MAX
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'_' || b == b'+' || b == b'[' || b == b']')
}

/// One line of [`SQUEUE_FORMAT`] output; `None` when it does not parse.
pub fn parse_squeue_line(line: &str) -> Option<JobFacts> {
    let fields: Vec<&str> = line.trim_end_matches(['\r', '\n']).split('|').collect();
    let [job, nodes, user, account, qos, priority, start, end] = fields[..] else {
        return None;
    };
    let (job, user) = (job.trim(), user.trim());
    if !job_id_is_valid(job) || user.is_empty() {
        return None;
    }
    if [user, account, qos, start, end]
        .iter()
        .any(|f| f.len() > FIELD_LEN_MAX || f.chars().any(char::is_control))
    {
        return None;
    }
    let nodes: u32 = nodes.trim().parse().ok()?;
    if !(1..=NODE_COUNT_MAX).contains(&nodes) {
        return None;
    }
    let priority: u64 = priority.trim().parse().ok()?;
    if priority > u64::from(u32::MAX) {
        return None;
    }
    Some(JobFacts {
        job: job.to_string(),
        nodes,
        user: user.to_string(),
        account: optional(account.trim()),
        qos: optional(qos.trim()),
        priority,
        start: optional(start.trim()),
        end: optional(end.trim()),
    })
}

/// Every line of `squeue --noheader --format=SQUEUE_FORMAT` output.
pub fn parse_squeue(text: &str) -> SqueueAnswer {
    let mut answer = SqueueAnswer::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match parse_squeue_line(line) {
            Some(j) if answer.jobs.len() < JOBS_MAX => answer.jobs.push(j),
            _ => answer.lines_skipped += 1,
        }
    }
    answer
}

/// Runs `program` (`squeue`) with [`squeue_args`], killing it after `timeout`, and parses its
/// answer. An error says why (not found, timed out, exit status and stderr's first line, an
/// answer too long).
pub fn query_squeue(program: &Path, timeout: Duration) -> Result<SqueueAnswer, String> {
    let mut child = Command::new(program)
        .args(squeue_args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    // Read on a thread so a long answer cannot fill the pipe while we wait.
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let n = (&mut stdout)
            .take(OUTPUT_LEN_BYTES_MAX as u64 + 1)
            .read_to_end(&mut buf);
        n.map(|_| buf)
    });
    let status = match child.wait_timeout(timeout) {
        Ok(Some(s)) => s,
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{} timed out after {} ms",
                program.display(),
                timeout.as_millis()
            ));
        }
        Err(e) => return Err(format!("{}: {e}", program.display())),
    };
    let out = reader
        .join()
        .map_err(|_| "squeue reader panicked".to_string())?
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if !status.success() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = (&mut e).take(4096).read_to_string(&mut err);
        }
        let first = err.lines().next().unwrap_or("").escape_debug().to_string();
        return Err(format!(
            "{} exited with {status}: {first}",
            program.display()
        ));
    }
    if out.len() > OUTPUT_LEN_BYTES_MAX {
        return Err(format!(
            "{} answered more than {OUTPUT_LEN_BYTES_MAX} bytes",
            program.display()
        ));
    }
    Ok(parse_squeue(&String::from_utf8_lossy(&out)))
}

/// Each job's basis for a controller that shares by node count (AdapTBF's priority, Static
/// BW's share): its node count (`Nodes`), or its Slurm priority scaled so the highest running
/// job's is [`PRIORITY_BASIS_MAX`] (`Priority`: shares follow Slurm's priorities, which fold
/// in QoS, fair-share and age under priority/multifactor), at least 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    Nodes,
    Priority,
}

/// The scale of [`Basis::Priority`]: shares are resolved to 1 part in 1000.
pub const PRIORITY_BASIS_MAX: u32 = 1000;

/// `(job, basis)` for each of `jobs`, in their order.
pub fn bases(jobs: &[JobFacts], basis: Basis) -> Vec<(String, u32)> {
    let top = jobs.iter().map(|j| j.priority).max().unwrap_or(0).max(1);
    jobs.iter()
        .map(|j| {
            let b = match basis {
                Basis::Nodes => j.nodes,
                Basis::Priority => {
                    let scaled = (u128::from(j.priority) * u128::from(PRIORITY_BASIS_MAX)
                        + u128::from(top) / 2)
                        / u128::from(top);
                    (scaled as u32).clamp(1, PRIORITY_BASIS_MAX)
                }
            };
            (j.job.clone(), b)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squeue_lines_are_read_field_by_field() {
        let a = parse_squeue(
            "1|4|alice|proj1|normal|300|2026-12-02T11:05:44|2027-12-02T11:05:44\n\
             2_7|1|bob|(null)|(null)|100|N/A|Unknown\n",
        );
        assert_eq!(a.lines_skipped, 0);
        assert_eq!(
            a.jobs[0],
            JobFacts {
                job: "1".into(),
                nodes: 4,
                user: "alice".into(),
                account: "proj1".into(),
                qos: "normal".into(),
                priority: 300,
                start: "2026-12-02T11:05:44".into(),
                end: "2027-12-02T11:05:44".into(),
            }
        );
        assert_eq!(
            (
                a.jobs[1].job.as_str(),
                a.jobs[1].account.as_str(),
                a.jobs[1].start.as_str()
            ),
            ("2_7", "", "")
        );
    }

    #[test]
    fn bad_lines_are_skipped_and_counted() {
        let bad = [
            "1|4|alice|a|q|300|s",          // a field short
            "1|4|alice|a|q|300|s|e|extra",  // a field more
            "x*|4|alice|a|q|300|s|e",       // not a job id
            "1|0|alice|a|q|300|s|e",        // no nodes
            "1|1000001|alice|a|q|300|s|e",  // beyond the bound
            "1|-1|alice|a|q|300|s|e",       // negative
            "1|4||a|q|300|s|e",             // no user
            "1|4|alice|a|q|4294967296|s|e", // priority beyond 32 bits
            "1|4|ali\u{1b}ce|a|q|3|s|e",    // a control character
        ];
        let a = parse_squeue(&bad.join("\n"));
        assert_eq!((a.jobs.len(), a.lines_skipped), (0, bad.len()));
        let long = format!("1|4|{}|a|q|3|s|e", "u".repeat(FIELD_LEN_MAX + 1));
        assert_eq!(parse_squeue_line(&long), None);
    }

    #[test]
    fn priority_bases_keep_the_ratios_of_slurms_priorities() {
        let a = parse_squeue("1|1|u|a|q|300|s|e\n2|8|u|a|q|100|s|e\n3|2|u|a|q|0|s|e\n");
        assert_eq!(
            bases(&a.jobs, Basis::Priority),
            [("1".into(), 1000), ("2".into(), 333), ("3".into(), 1)]
        );
        assert_eq!(
            bases(&a.jobs, Basis::Nodes),
            [("1".into(), 1), ("2".into(), 8), ("3".into(), 2)]
        );
        // Slurm's priority/basic priorities, near 2^32, keep their (tiny) differences' order.
        let a = parse_squeue("1|1|u|a|q|4294901760|s|e\n2|1|u|a|q|4294901759|s|e\n");
        let b = bases(&a.jobs, Basis::Priority);
        assert!(b[0].1 >= b[1].1 && b[1].1 >= 999, "{b:?}");
    }

    #[test]
    fn a_missing_or_failing_squeue_says_why() {
        let e = query_squeue(Path::new("/nonexistent/squeue"), Duration::from_secs(5)).unwrap_err();
        assert!(e.contains("/nonexistent/squeue"), "{e}");
        let e = query_squeue(Path::new("false"), Duration::from_secs(5)).unwrap_err();
        assert!(e.contains("exited with"), "{e}");
    }
}
