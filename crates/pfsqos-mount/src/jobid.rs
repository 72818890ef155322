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

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pfsqos_core::model::{JobId, JOB_ID_LEN_MAX};

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

/// Cached JobIDs by (pid, uid, gid), with when they were derived.
type JobCache = HashMap<(u32, u32, u32), (Instant, JobId)>;

/// Derives and caches JobIDs per process.
pub struct JobIds {
    var: String,
    pattern: String,
    short_host: String,
    full_host: String,
    cache: Mutex<JobCache>,
}

impl JobIds {
    pub fn new(var: &str, pattern: &str) -> Result<JobIds, String> {
        validate_var(var)?;
        validate_pattern(pattern)?;
        let (short_host, full_host) = hostnames();
        Ok(JobIds {
            var: var.to_string(),
            pattern: pattern.to_string(),
            short_host,
            full_host,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The JobID of process `pid` running as `uid`/`gid` (from the FUSE request). Pid 0
    /// (requests the kernel makes on its own) and vanished processes get the pattern with
    /// the executable name `kernel`/`unknown`.
    pub fn of(&self, pid: u32, uid: u32, gid: u32) -> JobId {
        let now = Instant::now();
        let key = (pid, uid, gid);
        {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, job)) = cache.get(&key) {
                if now.duration_since(*at) < CACHE_TTL {
                    return *job;
                }
            }
        }
        let job = sanitize(&job_text(
            &self.var,
            &self.pattern,
            &self.proc_info(pid, uid, gid),
        ));
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= CACHE_ENTRIES_MAX {
            cache.clear();
        }
        cache.insert(key, (now, job));
        job
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
        let var_value = if wants_var && pid != 0 {
            read_bounded(&format!("/proc/{pid}/environ"), ENVIRON_LEN_MAX)
                .and_then(|env| find_env(&env, &self.var))
        } else {
            None
        };
        ProcInfo {
            exe,
            uid,
            gid,
            pid,
            short_host: self.short_host.clone(),
            full_host: self.full_host.clone(),
            var_value,
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
        let ids = JobIds::new("PATH", "%e.%u").unwrap();
        let pid = std::process::id();
        let job = ids.of(pid, 0, 0);
        let path = std::env::var("PATH").unwrap_or_default();
        if !path.is_empty() {
            assert_eq!(job.as_str(), sanitize(&path).as_str());
        }
        let by_pattern = JobIds::new("disable", "%p").unwrap().of(pid, 0, 0);
        assert_eq!(by_pattern.as_str(), pid.to_string());
    }
}
