//! JobIDs as Lustre's client derives them (`jobid_var`, `jobid_name`).
//!
//! * `jobid_var=NAME`: the value of the environment variable `NAME` of the process issuing the
//!   I/O, read from `/proc/PID/environ` (e.g. `SLURM_JOB_ID`). When the variable is missing,
//!   the `jobid_name` pattern is used, as Lustre (2.13 and later) does.
//! * `jobid_var=disable` (the default): the `jobid_name` pattern. `procname_uid` is Lustre's
//!   older spelling of the pattern `%e.%u` and is accepted as such.
//! * `jobid_name` pattern (default `%e.%u`): `%e` executable name, `%u` uid, `%g` gid, `%h`
//!   short hostname, `%H` full hostname, `%p` pid, `%j` the `jobid_var` value (empty if
//!   unset), `%%` a percent sign; any other character stands for itself.
//!
//! The result is cut to 31 bytes (Lustre's `LUSTRE_JOBID_SIZE` less the NUL) at a character
//! boundary, and control characters become `_`, so every JobID is valid on the wire.
//!
//! The job's node count is carried the same way (pfsqos's addition): `jobnodes_var`
//! (default `SLURM_JOB_NUM_NODES`, `disable` turns it off) names a variable read from the
//! same `/proc/PID/environ` read, cached with the JobID. Its value is data: only a decimal
//! integer in 1..=[`JOB_NODES_MAX`] counts ([`parse_job_nodes`]); anything else is ignored
//! (the RPC carries no node count) and counted, never an error for the process's I/O.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pfsqos_core::model::{JobId, JOB_ID_LEN_MAX};
use pfsqos_wire::protocol::JOB_NODES_MAX;
use tracing::warn;

/// Default `jobid_var`: use the pattern.
pub const JOBID_VAR_DEFAULT: &str = "disable";
/// Default `jobid_name`: executable and uid, as Lustre's.
pub const JOBID_NAME_DEFAULT: &str = "%e.%u";
/// Longest pattern accepted.
pub const JOBID_NAME_LEN_MAX: usize = 256;
/// How long a process's JobID is reused before /proc is read again.
pub const CACHE_TTL: Duration = Duration::from_secs(2);
/// Most processes remembered (the cache is cleared when full).
pub const CACHE_ENTRIES_MAX: usize = 4096;
/// Largest /proc/PID/environ read.
const ENVIRON_LEN_MAX: u64 = 1 << 20;
/// Default `jobnodes_var`: Slurm's node count of the job (`SLURM_JOB_NUM_NODES`).
pub const JOBNODES_VAR_DEFAULT: &str = "SLURM_JOB_NUM_NODES";
/// Most bytes of an ignored node-count value shown in the log (it is the user's data).
const IGNORED_VALUE_LOG_BYTES_MAX: usize = 32;

/// What the pattern may refer to, for one process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcInfo {
    pub exe: String,
    pub uid: u32,
    pub gid: u32,
    pub pid: u32,
    pub short_host: String,
    pub full_host: String,
    /// The value of `jobid_var` in the process's environment, if set.
    pub var_value: Option<String>,
    /// The value of `jobnodes_var` in the process's environment, if set (unchecked text).
    pub nodes_value: Option<String>,
}

/// Checks a `jobid_name` pattern: bounded length, and only the known `%` codes.
pub fn validate_pattern(pattern: &str) -> Result<(), String> {
    if pattern.len() > JOBID_NAME_LEN_MAX {
        return Err(format!(
            "jobid_name pattern of {} bytes (at most {JOBID_NAME_LEN_MAX})",
            pattern.len()
        ));
    }
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.next() {
                Some('e' | 'u' | 'g' | 'h' | 'H' | 'p' | 'j' | '%') => {}
                Some(o) => {
                    return Err(format!(
                        "jobid_name pattern {pattern:?}: unknown code %{o} (allowed: %e %u %g %h %H %p %j %%)"
                    ))
                }
                None => return Err(format!("jobid_name pattern {pattern:?} ends in a lone %")),
            }
        } else if c.is_control() {
            return Err(format!(
                "jobid_name pattern {pattern:?} holds a control character"
            ));
        }
    }
    Ok(())
}

/// Checks a `jobid_var` value: `disable`, `procname_uid` or an environment variable name.
pub fn validate_var(var: &str) -> Result<(), String> {
    if var.is_empty()
        || var.len() > 64
        || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(format!(
            "jobid_var {var:?}: expected disable, procname_uid or an environment variable name ([A-Za-z0-9_], 1..=64 bytes)"
        ));
    }
    Ok(())
}

/// Checks a `jobnodes_var` value: `disable` or an environment variable name.
pub fn validate_nodes_var(var: &str) -> Result<(), String> {
    if var == "procname_uid" {
        return Err(
            "jobnodes_var procname_uid: expected disable or an environment variable name".into(),
        );
    }
    validate_var(var).map_err(|_| {
        format!(
            "jobnodes_var {var:?}: expected disable or an environment variable name ([A-Za-z0-9_], 1..=64 bytes)"
        )
    })
}

/// A node count as a process's environment states it: ASCII decimal digits only (no sign,
/// no spaces, no leading `+`), a value in 1..=[`JOB_NODES_MAX`]. `None` for anything else;
/// the digits are bounded before they are parsed, so a huge value costs nothing.
pub fn parse_job_nodes(text: &str) -> Option<u32> {
    // 7 digits hold JOB_NODES_MAX (1,000,000); leading zeros beyond that are refused too.
    const DIGITS_MAX: usize = 7;
    if text.is_empty() || text.len() > DIGITS_MAX || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u32>()
        .ok()
        .filter(|n| (1..=JOB_NODES_MAX).contains(n))
}

/// Expands `pattern` for one process (pure).
pub fn expand(pattern: &str, p: &ProcInfo) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('e') => out.push_str(&p.exe),
            Some('u') => out.push_str(&p.uid.to_string()),
            Some('g') => out.push_str(&p.gid.to_string()),
            Some('h') => out.push_str(&p.short_host),
            Some('H') => out.push_str(&p.full_host),
            Some('p') => out.push_str(&p.pid.to_string()),
            Some('j') => out.push_str(p.var_value.as_deref().unwrap_or("")),
            Some('%') => out.push('%'),
            Some(o) => {
                out.push('%');
                out.push(o);
            }
            None => out.push('%'),
        }
    }
    out
}

/// The JobID of a process: the variable's value if `var` names one that is set, else the
/// pattern (pure).
pub fn job_text(var: &str, pattern: &str, p: &ProcInfo) -> String {
    match var {
        "disable" => expand(pattern, p),
        "procname_uid" => expand("%e.%u", p),
        _ => match &p.var_value {
            Some(v) if !v.is_empty() => v.clone(),
            _ => expand(pattern, p),
        },
    }
}

/// Makes any text a valid JobID: control characters become `_`, then the text is cut to 31
/// bytes at a character boundary.
pub fn sanitize(text: &str) -> JobId {
    let mut s: String = text
        .chars()
        .map(|c| if c.is_control() { '_' } else { c })
        .collect();
    let mut cut = s.len().min(JOB_ID_LEN_MAX);
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    JobId::new(&s).expect("sanitized text is a valid job id")
}

/// Finds `name` in a NUL-separated environment block.
pub fn find_env(environ: &[u8], name: &str) -> Option<String> {
    environ.split(|b| *b == 0).find_map(|entry| {
        let rest = entry.strip_prefix(name.as_bytes())?;
        let value = rest.strip_prefix(b"=")?;
        Some(String::from_utf8_lossy(value).into_owned())
    })
}

fn read_bounded(path: &str, max: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf).ok()?;
    Some(buf)
}

/// Host names: full from the kernel's nodename, short up to the first dot.
pub fn hostnames() -> (String, String) {
    let full = read_bounded("/proc/sys/kernel/hostname", 256)
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string());
    let short = full.split('.').next().unwrap_or(&full).to_string();
    (short, full)
}

/// What a process's I/O is tagged with: its JobID and, if its environment states a valid
/// one, its job's node count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobTag {
    pub job: JobId,
    pub nodes: Option<u32>,
}

/// Cached tags by (pid, uid, gid), with when they were derived.
type JobCache = HashMap<(u32, u32, u32), (Instant, JobTag)>;

/// Derives and caches JobIDs (and node counts) per process.
pub struct JobIds {
    var: String,
    pattern: String,
    /// `jobnodes_var`: `disable` or the variable holding the job's node count.
    nodes_var: String,
    short_host: String,
    full_host: String,
    cache: Mutex<JobCache>,
    /// Node-count values found but ignored (not a number in 1..=JOB_NODES_MAX), one per
    /// reading of a process's environment.
    nodes_ignored: AtomicU64,
}

impl JobIds {
    pub fn new(var: &str, pattern: &str, nodes_var: &str) -> Result<JobIds, String> {
        validate_var(var)?;
        validate_pattern(pattern)?;
        validate_nodes_var(nodes_var)?;
        let (short_host, full_host) = hostnames();
        Ok(JobIds {
            var: var.to_string(),
            pattern: pattern.to_string(),
            nodes_var: nodes_var.to_string(),
            short_host,
            full_host,
            cache: Mutex::new(HashMap::new()),
            nodes_ignored: AtomicU64::new(0),
        })
    }

    /// Node-count values ignored so far (not a number in 1..=`JOB_NODES_MAX`); the log
    /// line of each ignored value states the total too.
    #[cfg(test)]
    pub fn nodes_ignored(&self) -> u64 {
        self.nodes_ignored.load(Ordering::Relaxed)
    }

    /// The JobID and node count of process `pid` running as `uid`/`gid` (from the FUSE
    /// request). Pid 0 (requests the kernel makes on its own) and vanished processes get the
    /// pattern with the executable name `kernel`/`unknown` and no node count.
    pub fn of(&self, pid: u32, uid: u32, gid: u32) -> JobTag {
        let now = Instant::now();
        let key = (pid, uid, gid);
        {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, tag)) = cache.get(&key) {
                if now.duration_since(*at) < CACHE_TTL {
                    return *tag;
                }
            }
        }
        let info = self.proc_info(pid, uid, gid);
        let job = sanitize(&job_text(&self.var, &self.pattern, &info));
        let nodes = info.nodes_value.as_deref().and_then(|text| {
            let nodes = parse_job_nodes(text);
            if nodes.is_none() {
                self.note_ignored(pid, text);
            }
            nodes
        });
        let tag = JobTag { job, nodes };
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= CACHE_ENTRIES_MAX {
            cache.clear();
        }
        cache.insert(key, (now, tag));
        tag
    }

    /// Counts an ignored value and logs it, at counts 1, 2, 4, 8, ... so a process with a
    /// bad value cannot flood the log; the value is cut and printed escaped (`{:?}`).
    fn note_ignored(&self, pid: u32, text: &str) {
        let n = self.nodes_ignored.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_power_of_two() {
            let mut cut = text.len().min(IGNORED_VALUE_LOG_BYTES_MAX);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            warn!(
                pid,
                var = %self.nodes_var,
                value = ?&text[..cut],
                value_bytes = text.len(),
                ignored_total = n,
                "node count in the environment ignored: not a number in 1..={JOB_NODES_MAX}"
            );
        }
    }

    fn proc_info(&self, pid: u32, uid: u32, gid: u32) -> ProcInfo {
        let exe = if pid == 0 {
            "kernel".to_string()
        } else {
            read_bounded(&format!("/proc/{pid}/comm"), 64)
                .map(|b| {
                    String::from_utf8_lossy(&b)
                        .trim_end_matches('\n')
                        .to_string()
                })
                .unwrap_or_else(|| "unknown".to_string())
        };
        let wants_var = !matches!(self.var.as_str(), "disable" | "procname_uid");
        let wants_nodes = self.nodes_var != "disable";
        // One bounded read of the environment serves both variables.
        let environ = if (wants_var || wants_nodes) && pid != 0 {
            read_bounded(&format!("/proc/{pid}/environ"), ENVIRON_LEN_MAX)
        } else {
            None
        };
        let var_value = environ
            .as_deref()
            .filter(|_| wants_var)
            .and_then(|env| find_env(env, &self.var));
        let nodes_value = environ
            .as_deref()
            .filter(|_| wants_nodes)
            .and_then(|env| find_env(env, &self.nodes_var));
        ProcInfo {
            exe,
            uid,
            gid,
            pid,
            short_host: self.short_host.clone(),
            full_host: self.full_host.clone(),
            var_value,
            nodes_value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> ProcInfo {
        ProcInfo {
            exe: "dd".into(),
            uid: 500,
            gid: 20,
            pid: 4321,
            short_host: "node7".into(),
            full_host: "node7.cluster.example".into(),
            var_value: Some("4242".into()),
            nodes_value: None,
        }
    }

    #[test]
    fn every_code_expands() {
        assert_eq!(expand("%e.%u", &info()), "dd.500");
        assert_eq!(
            expand("%e:%u:%g:%h:%H:%p:%j:%%", &info()),
            "dd:500:20:node7:node7.cluster.example:4321:4242:%"
        );
        assert_eq!(
            expand(
                "job-%j",
                &ProcInfo {
                    var_value: None,
                    ..info()
                }
            ),
            "job-"
        );
    }

    #[test]
    fn var_wins_when_set_and_pattern_otherwise() {
        assert_eq!(job_text("SLURM_JOB_ID", "%e.%u", &info()), "4242");
        let unset = ProcInfo {
            var_value: None,
            ..info()
        };
        assert_eq!(job_text("SLURM_JOB_ID", "%e.%u", &unset), "dd.500");
        assert_eq!(job_text("disable", "%e.%g", &info()), "dd.20");
        assert_eq!(job_text("procname_uid", "%p", &info()), "dd.500");
    }

    #[test]
    fn sanitize_cuts_and_cleans() {
        assert_eq!(sanitize(&"x".repeat(40)).as_str(), "x".repeat(31));
        assert_eq!(sanitize("a\nb\tc").as_str(), "a_b_c");
        // 'é' is two bytes: 15 of them are 30 bytes, the 16th would cross 31.
        assert_eq!(sanitize(&"é".repeat(20)).as_str(), "é".repeat(15));
    }

    #[test]
    fn environ_lookup_matches_whole_names() {
        let env = b"SLURM_JOB_ID_X=1\0SLURM_JOB_ID=77\0PATH=/bin\0";
        assert_eq!(find_env(env, "SLURM_JOB_ID").as_deref(), Some("77"));
        assert_eq!(find_env(env, "PATH").as_deref(), Some("/bin"));
        assert_eq!(find_env(env, "HOME"), None);
    }

    #[test]
    fn patterns_and_vars_are_validated() {
        assert!(validate_pattern("%e.%u").is_ok());
        assert!(validate_pattern("%x").unwrap_err().contains("%x"));
        assert!(validate_pattern("a%").is_err());
        assert!(validate_var("SLURM_JOB_ID").is_ok());
        assert!(validate_var("A=B").is_err());
        assert!(validate_var("").is_err());
    }

    #[test]
    fn own_process_reads_its_environment() {
        let ids = JobIds::new("PATH", "%e.%u", "disable").unwrap();
        let pid = std::process::id();
        let tag = ids.of(pid, 0, 0);
        let path = std::env::var("PATH").unwrap_or_default();
        if !path.is_empty() {
            assert_eq!(tag.job.as_str(), sanitize(&path).as_str());
        }
        assert_eq!(tag.nodes, None, "jobnodes_var disabled");
        let by_pattern = JobIds::new("disable", "%p", "disable")
            .unwrap()
            .of(pid, 0, 0);
        assert_eq!(by_pattern.job.as_str(), pid.to_string());
    }

    #[test]
    fn node_counts_parse_strictly_within_bounds() {
        assert_eq!(parse_job_nodes("1"), Some(1));
        assert_eq!(parse_job_nodes("64"), Some(64));
        assert_eq!(parse_job_nodes("1000000"), Some(JOB_NODES_MAX));
        assert_eq!(parse_job_nodes("0064"), Some(64));
        for hostile in [
            "",
            "0",
            "-1",
            "+3",
            " 4",
            "4 ",
            "abc",
            "4a",
            "1000001",
            "99999999999",
            "18446744073709551617",
            "４",
            "1.5",
            "0x10",
        ] {
            assert_eq!(parse_job_nodes(hostile), None, "{hostile:?}");
        }
        assert_eq!(parse_job_nodes(&"9".repeat(1 << 16)), None);
    }

    #[test]
    fn nodes_vars_are_validated() {
        assert!(validate_nodes_var("SLURM_JOB_NUM_NODES").is_ok());
        assert!(validate_nodes_var("disable").is_ok());
        assert!(validate_nodes_var("procname_uid").is_err());
        assert!(validate_nodes_var("A B").is_err());
        assert!(validate_nodes_var(&"A".repeat(65)).is_err());
        assert!(JobIds::new("disable", "%e", "X=Y").is_err());
    }

    /// A child process (a `cat` waiting on its stdin) with a job's variables: its JobID and
    /// node count come from its environment; a hostile one is ignored and counted.
    #[test]
    fn a_childs_job_and_node_count_come_from_its_environment() {
        use std::process::{Command, Stdio};
        let tag_of = |nodes: &str| {
            let mut child = Command::new("cat")
                .env("SLURM_JOB_ID", "4242")
                .env("SLURM_JOB_NUM_NODES", nodes)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            // Until its exec is complete, the child's /proc shows the test's own environment
            // or none.
            let deadline = Instant::now() + Duration::from_secs(30);
            let environ = format!("/proc/{}/environ", child.id());
            while std::fs::read(&environ).map_or(true, |e| {
                find_env(&e, "SLURM_JOB_ID").as_deref() != Some("4242")
            }) {
                assert!(Instant::now() < deadline, "cat did not start");
                std::thread::yield_now();
            }
            let ids = JobIds::new("SLURM_JOB_ID", "%e.%u", JOBNODES_VAR_DEFAULT).unwrap();
            let tag = ids.of(child.id(), 0, 0);
            drop(child.stdin.take()); // cat exits at the end of its input
            child.wait().unwrap();
            (tag, ids.nodes_ignored())
        };
        let (tag, ignored) = tag_of("4");
        assert_eq!(tag.job.as_str(), "4242");
        assert_eq!((tag.nodes, ignored), (Some(4), 0));
        for hostile in ["abc", "-1", "99999999999", &"7".repeat(100_000)] {
            let (tag, ignored) = tag_of(hostile);
            assert_eq!(tag.job.as_str(), "4242", "the JobID is unaffected");
            assert_eq!((tag.nodes, ignored), (None, 1), "{:.20}", hostile);
        }
    }

    /// The test process's own environment is fixed, so a variable every process has (`PATH`)
    /// stands in for a hostile node count: found, ignored, counted, and never an error.
    #[test]
    fn a_value_that_is_no_node_count_is_ignored_and_counted() {
        let pid = std::process::id();
        if std::env::var("PATH").map_or(true, |p| parse_job_nodes(&p).is_some()) {
            return; // no PATH, or (absurdly) a numeric one: nothing to show
        }
        let ids = JobIds::new("disable", "%p", "PATH").unwrap();
        assert_eq!(ids.of(pid, 0, 0).nodes, None);
        assert_eq!(ids.nodes_ignored(), 1);
        // Cached: the environment is read once per CACHE_TTL, and counted once.
        assert_eq!(ids.of(pid, 0, 0).nodes, None);
        assert_eq!(ids.nodes_ignored(), 1);
        // A different uid is another cache entry: read and counted again.
        assert_eq!(ids.of(pid, 1, 0).nodes, None);
        assert_eq!(ids.nodes_ignored(), 2);
        // Pid 0 (the kernel's requests) has no environment.
        assert_eq!(ids.of(0, 0, 0).nodes, None);
        assert_eq!(ids.nodes_ignored(), 2);
    }
}
