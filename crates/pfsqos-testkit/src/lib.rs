//! What the tests of several crates share. A test that cannot run part of itself on this
//! machine (no root, no `/dev/fuse`, no fio, no Slurm, ...) calls [`skip`]: the reason goes to
//! standard error, and one line is appended to the file `PFSQOS_SKIP_LOG` names, which
//! `scripts/test.sh` lists at the end of the run, so a skip is never silent.

use std::io::Write;

/// The environment variable naming the file skips are appended to.
pub const SKIP_LOG_ENV: &str = "PFSQOS_SKIP_LOG";

/// Longest reason kept in the log (a line each; longer reasons are cut).
pub const SKIP_REASON_LEN_MAX: usize = 400;

/// Records that `test` skipped (part of) itself because of `why`.
pub fn skip(test: &str, why: &str) {
    let line = skip_line(test, why);
    eprintln!("{line}");
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV) {
        // One write of one line with O_APPEND: lines of tests running in parallel do not
        // interleave. A log that cannot be written loses the line, never the test.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}

/// `SKIP: test: why`, on one line: control characters in either part are escaped, and the
/// reason is cut at [`SKIP_REASON_LEN_MAX`] characters.
pub fn skip_line(test: &str, why: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .flat_map(|c| {
                if c.is_control() {
                    c.escape_default().collect::<Vec<_>>()
                } else {
                    vec![c]
                }
            })
            .collect()
    };
    let why: String = clean(why.trim())
        .chars()
        .take(SKIP_REASON_LEN_MAX)
        .collect();
    format!("SKIP: {}: {why}", clean(test))
}

/// Why a test cannot use a real Slurm here, if it cannot: it needs root (`sbatch --priority`
/// is an administrator's option), a reachable slurmctld and a node up
/// (`scripts/setup-slurm.sh` starts a single-node one).
pub fn slurm_unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (sbatch --priority needs a Slurm administrator)".into());
    }
    match std::process::Command::new("sinfo")
        .args(["--noheader", "--format=%T"])
        .output()
    {
        Err(e) => Some(format!(
            "no Slurm client (sinfo: {e}); run scripts/setup-slurm.sh"
        )),
        Ok(o) if !o.status.success() => Some(format!(
            "slurmctld not reachable ({}); run scripts/setup-slurm.sh",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Ok(o) => {
            let states = String::from_utf8_lossy(&o.stdout).to_string();
            (!["idle", "mixed", "alloc"]
                .iter()
                .any(|s| states.contains(s)))
            .then(|| format!("no Slurm node up (sinfo: {:?})", states.trim()))
        }
    }
}

/// Writes `text` to `path` as an executable script (mode 0755). A child process (`sh`) writes
/// it, so the test process never holds a descriptor open for writing on the file: a test
/// running beside it that forks would inherit such a descriptor until its child's exec, and
/// executing the script in that window fails with ETXTBSY ("Text file busy").
pub fn write_script(path: &std::path::Path, text: &str) {
    let status = std::process::Command::new("/bin/sh")
        .args([
            "-c",
            "printf '%s' \"$2\" > \"$1\" && chmod 755 \"$1\"",
            "sh",
        ])
        .arg(path)
        .arg(text)
        .status()
        .expect("running /bin/sh to write a script");
    assert!(status.success(), "writing the script {}", path.display());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_one_line() {
        assert_eq!(skip_line("t", "no fio\nat all"), "SKIP: t: no fio\\nat all");
        let long = "x".repeat(SKIP_REASON_LEN_MAX + 50);
        assert_eq!(
            skip_line("t", &long).len(),
            "SKIP: t: ".len() + SKIP_REASON_LEN_MAX
        );
    }
}
