//! Running `lctl`: argv only (`std::process::Command`, never a shell), a timeout per attempt,
//! bounded retries with doubling back-off for failures that may pass (timeouts, a program that
//! could not start, `EAGAIN`/`EBUSY`), and counters for the metrics. A refusal Lustre means
//! (`EEXIST`, `EINVAL`, ...) is not retried: the caller decides.
//!
//! `--dry-run` swaps the process runner for [`DryRun`], which prints the exact argv and
//! answers reads with nothing.
//!
//! Batching rule commands: one write to `nrs_tbf_rule` carries exactly one command
//! (lustre-release `lustre/ptlrpc/nrs_tbf.c`, `ptlrpc_lprocfs_nrs_tbf_rule_seq_write`: one
//! buffer of at most `LPROCFS_WR_NRS_TBF_MAX_CMD` (4096) bytes, an optional `reg`/`hp` prefix,
//! then one `nrs_tbf_parse_cmd`), but one `lctl set_param` run takes several `NAME=VALUE`
//! operands and writes each in turn (`lustre/utils/lustre_param.c`, `jt_lcfg_setparam`: the
//! `while (index < argc)` loop over `sp_parse_param_value`). A failed write prints
//! `error: set_param: setting 'NAME'='VALUE': <strerror>` and the loop goes on to the next
//! operand; the exit status is that of the last operand only. So several rule commands can
//! share one process, but which of them failed must be read from stderr, operand by operand,
//! not from the exit status.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use pfsqos_core::errno::Errno;
use wait_timeout::ChildExt;

/// Longest output read from one lctl run (job_stats of 16 OSTs with 16,384 jobs each is
/// about 250 MB in the 2.17 layout; the parser's own bound is 256 MiB).
pub const LCTL_OUTPUT_BYTES_MAX: u64 = pfsqos_core::jobstats::JOB_STATS_TEXT_LEN_BYTES_MAX as u64;
/// Longest stderr kept for an error message.
pub const LCTL_STDERR_BYTES_MAX: u64 = 4096;

/// Why a command failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LctlError {
    /// lctl ran and exited non-zero; `errno` when its message ends in a known `strerror`
    /// text (lctl prints `error: set_param: setting PATH=VALUE: File exists`).
    Refused {
        code: Option<i32>,
        errno: Option<Errno>,
        stderr: String,
    },
    /// No answer within the timeout (the process was killed).
    Timeout,
    /// The program could not be started or its output read.
    Spawn(String),
    /// Output beyond [`LCTL_OUTPUT_BYTES_MAX`].
    TooLong,
}

impl LctlError {
    /// Whether trying again may help.
    pub fn transient(&self) -> bool {
        match self {
            LctlError::Timeout | LctlError::Spawn(_) => true,
            LctlError::Refused { errno, .. } => {
                matches!(errno, Some(Errno::EAGAIN | Errno::EBUSY) | None)
            }
            LctlError::TooLong => false,
        }
    }

    pub fn errno(&self) -> Option<Errno> {
        match self {
            LctlError::Refused { errno, .. } => *errno,
            _ => None,
        }
    }
}

impl std::fmt::Display for LctlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LctlError::Refused { code, stderr, .. } => {
                write!(
                    f,
                    "lctl exited with {code:?}: {}",
                    stderr.trim().escape_debug()
                )
            }
            LctlError::Timeout => write!(f, "lctl timed out"),
            LctlError::Spawn(e) => write!(f, "lctl could not run: {}", e.escape_debug()),
            LctlError::TooLong => write!(f, "lctl printed more than {LCTL_OUTPUT_BYTES_MAX} bytes"),
        }
    }
}

impl std::error::Error for LctlError {}

/// The errno whose `strerror` text ends lctl's last error line, if any.
pub fn errno_of_message(stderr: &str) -> Option<Errno> {
    let line = stderr.lines().rev().find(|l| !l.trim().is_empty())?;
    Errno::ALL
        .into_iter()
        .find(|e| line.trim_end().ends_with(&format!(": {}", e.description())))
}

/// Counters of the runner, for the metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LctlCounts {
    /// Commands asked for (not attempts).
    pub commands: u64,
    /// Attempts that failed (each retry counts).
    pub errors: u64,
    pub timeouts: u64,
    /// Commands that failed after every retry, or were refused.
    pub failed_commands: u64,
}

/// Something that runs lctl commands (the process, a dry run, a test double).
pub trait Lctl {
    /// Runs `lctl ARGS...`, returning its stdout.
    fn run(&mut self, args: &[String]) -> Result<String, LctlError>;
    fn counts(&self) -> LctlCounts;
    /// Whether writes are really made (false for `--dry-run`).
    fn writes(&self) -> bool {
        true
    }
}

/// Runs the real program.
#[derive(Debug)]
pub struct ProcessLctl {
    pub program: PathBuf,
    pub timeout: Duration,
    pub retries: u32,
    pub backoff: Duration,
    counts: LctlCounts,
}

impl ProcessLctl {
    pub fn new(program: PathBuf, timeout: Duration, retries: u32, backoff: Duration) -> Self {
        ProcessLctl {
            program,
            timeout,
            retries,
            backoff,
            counts: LctlCounts::default(),
        }
    }

    fn attempt(&self, args: &[String]) -> Result<String, LctlError> {
        let mut child = Command::new(&self.program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| LctlError::Spawn(e.to_string()))?;
        // Read both pipes on threads so a full pipe cannot stall the child past the timeout.
        let mut out_pipe = child.stdout.take().expect("piped");
        let mut err_pipe = child.stderr.take().expect("piped");
        let out_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let r = (&mut out_pipe)
                .take(LCTL_OUTPUT_BYTES_MAX + 1)
                .read_to_end(&mut buf);
            // Drain the rest so the child is never blocked on a full pipe.
            let _ = std::io::copy(&mut out_pipe, &mut std::io::sink());
            r.map(|_| buf)
        });
        let err_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = (&mut err_pipe)
                .take(LCTL_STDERR_BYTES_MAX)
                .read_to_end(&mut buf);
            let _ = std::io::copy(&mut err_pipe, &mut std::io::sink());
            buf
        });
        let status = match child.wait_timeout(self.timeout) {
            Ok(Some(s)) => s,
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = out_reader.join();
                let _ = err_reader.join();
                return Err(LctlError::Timeout);
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(LctlError::Spawn(e.to_string()));
            }
        };
        let out = out_reader
            .join()
            .map_err(|_| LctlError::Spawn("stdout reader panicked".into()))?
            .map_err(|e| LctlError::Spawn(e.to_string()))?;
        let err = err_reader.join().unwrap_or_default();
        if out.len() as u64 > LCTL_OUTPUT_BYTES_MAX {
            return Err(LctlError::TooLong);
        }
        if !status.success() {
            let stderr = String::from_utf8_lossy(&err).into_owned();
            return Err(LctlError::Refused {
                code: status.code(),
                errno: errno_of_message(&stderr),
                stderr,
            });
        }
        // Job ids printed raw by old layouts may hold any byte: never fail on them.
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

impl Lctl for ProcessLctl {
    fn run(&mut self, args: &[String]) -> Result<String, LctlError> {
        self.counts.commands += 1;
        let mut backoff = self.backoff;
        let mut attempt = 0;
        loop {
            match self.attempt(args) {
                Ok(out) => return Ok(out),
                Err(e) => {
                    self.counts.errors += 1;
                    if e == LctlError::Timeout {
                        self.counts.timeouts += 1;
                    }
                    if !e.transient() || attempt >= self.retries {
                        self.counts.failed_commands += 1;
                        return Err(e);
                    }
                    attempt += 1;
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                }
            }
        }
    }

    fn counts(&self) -> LctlCounts {
        self.counts
    }
}

/// `--dry-run`: prints each write's exact argv (every element single-quoted, the configured
/// program first) and runs nothing but reads (`get_param` and `list_param`, which change
/// nothing), which go to `reads` when given (to see real state) or answer nothing. Reads are
/// run, not printed: on Lustre 2.16+ an OST without jobs prints no job_stats, so only
/// `list_param` tells the dry run every OST the real run will see.
pub struct DryRun<'a> {
    pub out: Box<dyn std::io::Write + 'a>,
    pub reads: Option<Box<dyn Lctl + 'a>>,
    /// The program the real run would start (shown in each printed line).
    pub program: String,
    counts: LctlCounts,
}

impl<'a> DryRun<'a> {
    pub fn new(
        out: Box<dyn std::io::Write + 'a>,
        reads: Option<Box<dyn Lctl + 'a>>,
        program: &str,
    ) -> Self {
        DryRun {
            out,
            reads,
            program: program.to_string(),
            counts: LctlCounts::default(),
        }
    }
}

/// Whether `args` only read Lustre's state (`lctl get_param`, `lctl list_param`).
pub fn is_read_only(args: &[String]) -> bool {
    args.first()
        .is_some_and(|a| a == "get_param" || a == "list_param")
}

/// An argv as one line a reader can paste into a shell: every element single-quoted.
pub fn argv_line(program: &str, args: &[String]) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    std::iter::once(quote(program))
        .chain(args.iter().map(|a| quote(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Lctl for DryRun<'_> {
    fn run(&mut self, args: &[String]) -> Result<String, LctlError> {
        self.counts.commands += 1;
        if is_read_only(args) {
            if let Some(r) = self.reads.as_mut() {
                return r.run(args);
            }
            return Ok(String::new());
        }
        let _ = writeln!(self.out, "{}", argv_line(&self.program, args));
        Ok(String::new())
    }

    fn counts(&self) -> LctlCounts {
        let mut c = self.counts;
        if let Some(r) = &self.reads {
            let rc = r.counts();
            c.errors += rc.errors;
            c.timeouts += rc.timeouts;
            c.failed_commands += rc.failed_commands;
        }
        c
    }

    fn writes(&self) -> bool {
        false
    }
}

use std::io::Write as _;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_comes_from_lctls_message() {
        let m = "error: set_param: setting /sys/kernel/debug/lustre/ost/OSS/ost_io/nrs_tbf_rule=start a jobid={a}: File exists\n";
        assert_eq!(errno_of_message(m), Some(Errno::EEXIST));
        assert_eq!(errno_of_message("garbage"), None);
    }

    /// Reads (`get_param`, `list_param`) go to the reader and are not printed; writes are
    /// printed with the configured program and never reach the reader.
    #[test]
    fn a_dry_run_reads_and_prints_only_writes() {
        struct Reader(std::rc::Rc<std::cell::RefCell<Vec<Vec<String>>>>);
        impl Lctl for Reader {
            fn run(&mut self, args: &[String]) -> Result<String, LctlError> {
                self.0.borrow_mut().push(args.to_vec());
                Ok(format!("read {}\n", args[0]))
            }
            fn counts(&self) -> LctlCounts {
                LctlCounts::default()
            }
        }
        let mut printed = Vec::new();
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        {
            let mut d = DryRun::new(
                Box::new(&mut printed),
                Some(Box::new(Reader(seen.clone()))),
                "/opt/lustre/bin/lctl",
            );
            let list = [
                "list_param".to_string(),
                "obdfilter.*.job_stats".to_string(),
            ];
            assert_eq!(d.run(&list).unwrap(), "read list_param\n");
            let get = ["get_param".to_string(), "-n".to_string(), "x".to_string()];
            assert_eq!(d.run(&get).unwrap(), "read get_param\n");
            assert_eq!(d.run(&["set_param".into(), "a=b".into()]).unwrap(), "");
            assert!(!d.writes());
        }
        assert_eq!(seen.borrow().len(), 2, "{:?}", seen.borrow());
        assert_eq!(
            String::from_utf8(printed).unwrap(),
            "'/opt/lustre/bin/lctl' 'set_param' 'a=b'\n"
        );
    }

    #[test]
    fn argv_lines_quote_every_element() {
        assert_eq!(
            argv_line("lctl", &["set_param".into(), "a=b c'd".into()]),
            "'lctl' 'set_param' 'a=b c'\\''d'"
        );
    }

    /// An `lctl` that runs `script`; the directory holding it goes when the first element is
    /// dropped (kept, it was left in /tmp by every run).
    fn sh(script: &str) -> (tempfile::TempDir, ProcessLctl) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fake-lctl");
        pfsqos_testkit::write_script(&p, &format!("#!/bin/sh\n{script}\n"));
        let lctl = ProcessLctl::new(p, Duration::from_secs(20), 2, Duration::from_millis(1));
        (dir, lctl)
    }

    #[test]
    fn refusals_are_not_retried_and_transient_failures_are() {
        let (_dir, mut l) = sh("echo 'error: set_param: setting x=y: File exists' >&2; exit 17");
        let e = l.run(&["set_param".into(), "x=y".into()]).unwrap_err();
        assert_eq!(e.errno(), Some(Errno::EEXIST));
        assert_eq!((l.counts().errors, l.counts().failed_commands), (1, 1));
        let (_dir, mut l) = sh("echo garbage >&2; exit 3");
        assert!(l.run(&["get_param".into()]).is_err());
        assert_eq!(l.counts().errors, 3, "two retries");
        let (_dir, mut l) = sh("printf 'a=\\377\\n'");
        assert_eq!(l.run(&[]).unwrap(), "a=\u{fffd}\n");
    }

    #[test]
    fn a_hung_lctl_is_killed_at_the_timeout() {
        let (_dir, mut l) = sh("exec sleep 600");
        l.timeout = Duration::from_millis(200);
        l.retries = 0;
        assert_eq!(l.run(&[]).unwrap_err(), LctlError::Timeout);
        assert_eq!(l.counts().timeouts, 1);
    }
}
