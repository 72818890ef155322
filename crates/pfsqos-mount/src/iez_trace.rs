//! iez's first-run trace (miniRecorder, IPDPS'19 §III-A1) recorded by the mount: one row per
//! file created through it, `file,bytes_written,stripe_count,rank,job`, the form core's
//! `pfsqos_core::place::profile::parse_trace_rows` reads and `pfsqos iez train` takes
//! (`--job ID` keeps one application's files: the mount traces every job's).
//!
//! - `file`: the path from the file system root (`/run/out.0`), asked of the MDS at create.
//! - `bytes_written`: the bytes of every write to the file through this mount (overwrites
//!   count again, as miniRecorder counts write calls).
//! - `stripe_count`: of the layout the MDS gave.
//! - `rank`: the creating process's MPI rank from its environment (`PMI_RANK`,
//!   `OMPI_COMM_WORLD_RANK`, `SLURM_PROCID`, first found), 0 when none is set.
//! - `job`: the creating process's job id, as the mount tags its RPCs with it (`--jobid-var`,
//!   `--jobid-name`), `%` and `,` percent-encoded (`profile::encode_trace_job`).
//!
//! Bounded: at most `files_max` files are traced; files created past the cap are not (counted,
//! and the trace says how many in a `#` comment). Paths with control characters (which would
//! break the line format) or that are not UTF-8 are not traced either, counted the same way.
//! The file is rewritten whole (a temporary file renamed over it, so a reader never sees half
//! a trace) at most once per [`TRACE_WRITE_INTERVAL`] while it changes, and at unmount.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use pfsqos_core::model::JobId;
use pfsqos_core::place::profile::{encode_trace_job, TRACE_JOB_HEADER};

/// Default cap on traced files (core's `TRACE_ROWS_MAX`).
pub const TRACE_FILES_MAX_DEFAULT: usize = pfsqos_core::place::profile::TRACE_ROWS_MAX;
/// How often a changed trace is rewritten.
pub const TRACE_WRITE_INTERVAL: Duration = Duration::from_secs(1);
/// Environment variables holding an MPI rank, first found wins.
pub const RANK_VARS: [&str; 3] = ["PMI_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"];
/// Largest /proc/PID/environ read for the rank.
const ENVIRON_LEN_MAX: u64 = 1 << 20;

#[derive(Debug)]
struct Row {
    path: String,
    bytes_written: u64,
    stripe_count: u32,
    rank: u32,
    job: JobId,
}

#[derive(Debug, Default)]
struct Inner {
    rows: Vec<Row>,
    by_ino: HashMap<u64, usize>,
    /// Files not traced: past the cap.
    over_cap: u64,
    /// Files not traced: a path the format cannot carry.
    bad_path: u64,
    dirty: bool,
}

/// The trace of one mount.
#[derive(Debug)]
pub struct IezTrace {
    file: PathBuf,
    files_max: usize,
    inner: Mutex<Inner>,
}

/// The rank in a NUL-separated environment block ([`RANK_VARS`]), if one parses.
pub fn rank_from_environ(environ: &[u8]) -> Option<u32> {
    RANK_VARS
        .iter()
        .find_map(|v| crate::jobid::find_env(environ, v).and_then(|t| t.trim().parse::<u32>().ok()))
}

/// The rank of process `pid` (0 when unknown).
pub fn rank_of(pid: u32) -> u32 {
    use std::io::Read;
    let mut buf = Vec::new();
    let read = std::fs::File::open(format!("/proc/{pid}/environ"))
        .and_then(|f| f.take(ENVIRON_LEN_MAX).read_to_end(&mut buf));
    match read {
        Ok(_) => rank_from_environ(&buf).unwrap_or(0),
        Err(_) => 0,
    }
}

impl IezTrace {
    pub fn new(file: PathBuf, files_max: usize) -> IezTrace {
        IezTrace {
            file,
            files_max,
            inner: Mutex::new(Inner::default()),
        }
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A file created through the mount by a process of job `job`.
    pub fn created(&self, ino: u64, path: &[u8], stripe_count: u32, rank: u32, job: JobId) {
        let mut t = self.lock();
        t.dirty = true;
        let path = match std::str::from_utf8(path) {
            // What core's parser refuses would make the whole trace unusable for training:
            // a control character, or a path (deep trees) longer than its bound.
            Ok(p)
                if !p.chars().any(char::is_control)
                    && p.len() <= pfsqos_core::place::profile::TRACE_FILE_NAME_LEN_MAX =>
            {
                p.to_string()
            }
            _ => {
                t.bad_path += 1;
                return;
            }
        };
        if let Some(&k) = t.by_ino.get(&ino) {
            // The inode was re-created under the same number (never, inode numbers are not
            // reused; kept total rather than asserted on network data).
            t.rows[k].path = path;
            t.rows[k].job = job;
            return;
        }
        if t.rows.len() >= self.files_max {
            t.over_cap += 1;
            return;
        }
        let k = t.rows.len();
        t.rows.push(Row {
            path,
            bytes_written: 0,
            stripe_count,
            rank,
            job,
        });
        t.by_ino.insert(ino, k);
    }

    /// Bytes written to `ino` through the mount.
    pub fn wrote(&self, ino: u64, bytes: u64) {
        let mut t = self.lock();
        if let Some(&k) = t.by_ino.get(&ino) {
            t.rows[k].bytes_written = t.rows[k].bytes_written.saturating_add(bytes);
            t.dirty = true;
        }
    }

    /// The trace's text.
    pub fn render(&self) -> String {
        let t = self.lock();
        let mut out = format!("{TRACE_JOB_HEADER}\n");
        if t.over_cap > 0 {
            out.push_str(&format!(
                "# {} files not traced: the cap of {} files was reached\n",
                t.over_cap, self.files_max
            ));
        }
        if t.bad_path > 0 {
            out.push_str(&format!(
                "# {} files not traced: path not UTF-8, with control characters or too long\n",
                t.bad_path
            ));
        }
        for r in &t.rows {
            out.push_str(&format!(
                "{},{},{},{},{}\n",
                r.path,
                r.bytes_written,
                r.stripe_count,
                r.rank,
                encode_trace_job(&r.job)
            ));
        }
        out
    }

    /// Writes the trace if it changed (or `force`): a temporary file renamed over it.
    pub fn write(&self, force: bool) -> std::io::Result<()> {
        {
            let mut t = self.lock();
            if !t.dirty && !force {
                return Ok(());
            }
            t.dirty = false;
        }
        let text = self.render();
        let mut tmp = self.file.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let r = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.file)
        })();
        if r.is_err() {
            // Try again next time.
            self.lock().dirty = true;
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pfsqos_core::place::profile::{parse_trace, parse_trace_rows};

    fn job(s: &str) -> JobId {
        JobId::new(s).unwrap()
    }

    #[test]
    fn rows_render_as_core_reads_them_and_the_cap_holds() {
        let d = tempfile::tempdir().unwrap();
        let t = IezTrace::new(d.path().join("trace.csv"), 2);
        t.created(5, b"/run/a,b", 2, 0, job("ior.1"));
        t.wrote(5, 1000);
        t.wrote(5, 24);
        t.created(6, b"/run/c", 1, 3, job("hacc,2%"));
        t.created(7, b"/run/over", 1, 0, job("ior.1"));
        t.created(8, b"/run/x\ny", 1, 0, job("ior.1"));
        t.created(9, b"/run/\xff", 1, 0, job("ior.1"));
        let deep = format!("/{}", "d/".repeat(2048));
        t.created(10, deep.as_bytes(), 1, 0, job("ior.1"));
        t.wrote(7, 99);
        t.wrote(42, 1);
        t.write(false).unwrap();
        let text = std::fs::read_to_string(d.path().join("trace.csv")).unwrap();
        assert!(
            text.contains("# 1 files not traced: the cap of 2"),
            "{text}"
        );
        assert!(text.contains("# 3 files not traced: path"), "{text}");
        let rows = parse_trace(&text).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].0, "/run/a,b");
        assert_eq!(rows[0].1.bytes_written, 1024);
        assert_eq!(rows[0].1.stripe_count, 2);
        assert_eq!((rows[1].0.as_str(), rows[1].1.rank), ("/run/c", 3));
        // Each row names its job, a comma and a percent sign in it included.
        let jobs: Vec<_> = parse_trace_rows(&text)
            .unwrap()
            .into_iter()
            .map(|r| r.job.unwrap())
            .collect();
        assert_eq!(jobs, vec![job("ior.1"), job("hacc,2%")]);
        // Unchanged: not rewritten; no temporary file left behind.
        std::fs::remove_file(d.path().join("trace.csv")).unwrap();
        t.write(false).unwrap();
        assert!(!d.path().join("trace.csv").exists());
        t.write(true).unwrap();
        assert!(d.path().join("trace.csv").exists());
        assert!(!d.path().join("trace.csv.tmp").exists());
    }

    #[test]
    fn ranks_come_from_the_environment() {
        assert_eq!(rank_from_environ(b"A=1\0PMI_RANK=7\0"), Some(7));
        assert_eq!(
            rank_from_environ(b"SLURM_PROCID=3\0OMPI_COMM_WORLD_RANK=2\0"),
            Some(2)
        );
        assert_eq!(rank_from_environ(b"PMI_RANK=x\0SLURM_PROCID=4\0"), Some(4));
        assert_eq!(rank_from_environ(b"PMI_RANK=-1\0"), None);
        assert_eq!(rank_from_environ(b""), None);
        assert_eq!(rank_of(u32::MAX), 0);
    }
}
