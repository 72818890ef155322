//! `pfsqos lctl`: lists, reads and writes an ossd's parameters, printing exactly what Lustre's
//! `lctl` prints, so scripts and the Lustre adapter's parsers work on either.
//!
//! The forms and flags are lctl's (its usage text, lustre/utils/lctl.c):
//!
//! * `get_param [-F] [-n | -N] [-R] PATH...`: `name=value` per parameter; a value of more than
//!   one line starts on the line after the `=` (`name=\n` then the value). `-n` values only;
//!   `-N` names only (files and directories), with `-F` a `/` after a directory and `=` after
//!   a writable parameter; `-R` every parameter under a matched directory too.
//! * `list_param [-D] [-F] [-R] PATH...`: the matched names (files and directories); `-D`
//!   directories only, `-F` as above, `-R` everything under a matched directory.
//! * `set_param [-n] PATH=VALUE...`: `name=value` for each parameter set. `-P` (persistent,
//!   through Lustre's MGS) is refused with [`SET_PARAM_P_REFUSAL`]: pfsqos has no MGS.
//!
//! A path may use `/` or `.` between components (`obdfilter/*/job_stats`, as lctl) and glob(3)'s
//! patterns within a component (`*`, `?`, `[01]`, `[!0]`, `{a,b}`); the ossd matches them
//! (`pfsqos_ossd::param_glob`). Directories are the dotted prefixes of parameter names
//! (`obdfilter.fs-OST0000` holds `job_stats`). As in lctl, a pattern with one unreadable match
//! prints every readable one and reports the failing one on stderr.
//!
//! Exit codes and messages are lctl's. lctl exits with the errno of the failure
//! (`lctl_main` returns `rc < 0 ? -rc : rc`, lustre/utils/lctl.c; the status keeps its low 8
//! bits): `get_param` and `list_param` with the first failure's (`if (rc == 0) rc = rc2`,
//! `jt_lcfg_getparam` / `jt_lcfg_listparam` in lustre/utils/lustre_param.c), `set_param` with
//! its last operand's (`jt_lcfg_setparam` keeps each `do_param_op`'s result). The messages
//! (same file):
//!
//! * nothing matched: `error: OP: param_path 'PATH': No such file or directory` (`do_param_op`),
//!   and for `list_param` also `error: list_param: listing 'PATH': No such file or directory`;
//!   for `set_param` also `error: set_param: setting 'PATH'='VALUE': No such file or directory`;
//! * a parameter that cannot be read: `error: read_param: 'NAME': STRERROR` (`read_param`; lctl
//!   names the file under /sys or /proc, pfsqos the parameter);
//! * a write refused: `error: set_param: setting NAME=VALUE: STRERROR` (`write_param`);
//! * `set_param` takes `NAME=VALUE` or `NAME VALUE` operands; an empty or missing value is
//!   refused before anything is sent, `error: set_param: setting NAME: Invalid argument`, and
//!   ends the command (`sp_parse_param_value`), exit 22.
//!
//! The ossd's explanation of a refusal, when it gives one, follows on a line of its own.
//! pfsqos's own failures (unreadable key, no connection) exit 2.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use pfsqos_wire::client::{ClientError, OssClient};
use pfsqos_wire::key::read_key_file;
use pfsqos_wire::protocol::{Errno, Param, Role};

/// Default ossd address for `lctl`, when nothing else names one.
pub const DEFAULT_SERVER: &str = "127.0.0.1:7988";

/// Most components a parameter name has below a matched path that `-R`, `list_param` and
/// `-N` look for (pfsqos's names have at most four: `ost.OSS.ost_io.nrs_policies`).
pub const NAME_DEPTH_MAX: usize = 6;

/// What `set_param -P` answers.
pub const SET_PARAM_P_REFUSAL: &str = "set_param: -P is not supported: Lustre keeps -P settings \
     in the MGS configuration log, and pfsqos has no MGS. Run set_param without -P (the setting \
     lasts until the ossd stops); to apply it at every start, put the command in the ossd's \
     service (ExecStartPost= in packaging/systemd/pfsqos-ossd.service) or use the cluster \
     file's [[oss]] policy field for a controller.";

/// `get_param` and `list_param` flags (lctl's letters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParamFlags {
    /// `-n`: values only (get_param).
    pub values_only: bool,
    /// `-N`: names only (get_param).
    pub names_only: bool,
    /// `-F`: `/` after directories, `=` after writable parameters (with -N, and list_param).
    pub classify: bool,
    /// `-R`: everything under a matched directory.
    pub recursive: bool,
    /// `-D`: directories only (list_param).
    pub dirs_only: bool,
}

/// One lctl command; the variants are named after lctl's own commands (`get_param`,
/// `list_param`, `set_param`).
#[derive(Clone, Debug)]
pub enum LctlCommand {
    /// `get_param [-F] [-n|-N] [-R] PATH...`
    GetParam {
        names: Vec<String>,
        flags: ParamFlags,
    },
    /// `list_param [-D] [-F] [-R] PATH...`
    ListParam {
        patterns: Vec<String>,
        flags: ParamFlags,
    },
    /// `set_param [-n] PATH=VALUE...`
    SetParam {
        assignments: Vec<String>,
        values_only: bool,
    },
}

#[derive(Clone, Debug)]
pub struct LctlArgs {
    pub server: SocketAddr,
    pub key_file: PathBuf,
    pub command: LctlCommand,
}

/// The errno's number on Linux (`ENOTSUPP` is the kernel-internal 524).
pub fn errno_number(e: Errno) -> i32 {
    e.linux_number()
}

/// The exit status lctl gives for `e`: the errno, as the process status keeps its low 8 bits.
pub fn exit_code(e: Errno) -> u8 {
    (errno_number(e) & 0xff) as u8
}

/// Exit status 2 for pfsqos's own failures (no key, no connection).
const EXIT_LOCAL: u8 = 2;

/// The ossd's explanation, on a line of its own after lctl's message.
fn detail(err: &mut dyn Write, e: &pfsqos_wire::protocol::RemoteError) {
    if !e.message.is_empty() {
        // Control characters escaped: the message crossed a process boundary.
        let text: String = e
            .message
            .chars()
            .flat_map(|c| {
                let escaped: Vec<char> = if c.is_control() {
                    c.escape_default().collect()
                } else {
                    vec![c]
                };
                escaped
            })
            .collect();
        let _ = writeln!(err, "  ossd: {text}");
    }
}

/// A `set_param` operand pair, as lctl's `sp_parse_param_value` splits them: `NAME=VALUE` (one
/// operand) or `NAME VALUE` (two); `Err(name)` for an empty or missing value. Returns the
/// name, the value and how many operands were used.
pub fn split_assignment(operands: &[String]) -> Result<(&str, &str, usize), &str> {
    let first = operands.first().map(String::as_str).unwrap_or("");
    match first.split_once('=') {
        Some((name, "")) => Err(name),
        Some((name, value)) => Ok((name, value, 1)),
        None => match operands.get(1) {
            Some(value) if !value.is_empty() => Ok((first, value, 2)),
            _ => Err(first),
        },
    }
}

/// One parameter as `lctl` prints it.
pub fn format_param(p: &Param, values_only: bool) -> String {
    let mut out = String::new();
    if !values_only {
        out.push_str(&p.name);
        out.push('=');
        let body = p.value.strip_suffix('\n').unwrap_or(&p.value);
        if body.contains('\n') {
            out.push('\n');
        }
    }
    out.push_str(&p.value);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// Whether the ossd accepts writes to a parameter (what `-F` marks with `=`): every one but
/// the read-only listings, `ost.OSS.ost_io.sync_stats` and the policies' `nrs_*_flows`.
pub fn is_writable(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    !(last == "sync_stats" || (last.starts_with("nrs_") && last.ends_with("_flows")))
}

/// One entry a path matched: a parameter or a directory of parameters.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    /// Components, so that sorting keeps a directory's contents right after it.
    pub components: Vec<String>,
    pub is_dir: bool,
}

impl Entry {
    fn name(&self) -> String {
        self.components.join(".")
    }

    /// The name as `-F` prints it.
    pub fn display(&self, classify: bool) -> String {
        let mut n = self.name();
        if classify {
            if self.is_dir {
                n.push('/');
            } else if is_writable(&n) {
                n.push('=');
            }
        }
        n
    }
}

fn entry(name: &str, drop_last: usize) -> Entry {
    let comps: Vec<String> = name.split('.').map(str::to_string).collect();
    let keep = comps.len().saturating_sub(drop_last);
    Entry {
        is_dir: drop_last > 0,
        components: comps[..keep].to_vec(),
    }
}

/// The names a pattern matches, or none (`ENOENT` is "nothing matched", not an error).
async fn list_or_none(client: &mut OssClient, pattern: &str) -> Result<Vec<String>, ClientError> {
    match client.list_params(pattern).await {
        Ok(n) => Ok(n),
        Err(ClientError::Remote(e)) if e.errno == Errno::ENOENT => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// What `pattern` matches: its parameters and its directories (found by asking for
/// `pattern.*`, `pattern.*.*`, ... up to [`NAME_DEPTH_MAX`]); with `recursive`, every entry under
/// a matched directory too. Sorted component by component, deduplicated.
pub async fn expand(
    client: &mut OssClient,
    pattern: &str,
    recursive: bool,
) -> Result<Vec<Entry>, ClientError> {
    let mut out: Vec<Entry> = list_or_none(client, pattern)
        .await?
        .iter()
        .map(|n| entry(n, 0))
        .collect();
    let mut below = String::from(pattern);
    for depth in 1..=NAME_DEPTH_MAX {
        below.push_str(".*");
        for n in list_or_none(client, &below).await? {
            out.push(entry(&n, depth));
            if recursive {
                // Every directory and parameter between the match and this name.
                for d in 0..depth {
                    out.push(entry(&n, d));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Runs one lctl command; returns the process exit code.
pub async fn run(args: &LctlArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let key = match read_key_file(&args.key_file) {
        Ok(k) => k,
        Err(e) => {
            let _ = writeln!(err, "error: {e:#}");
            return EXIT_LOCAL;
        }
    };
    let mut client = match OssClient::connect(args.server, &key, Role::Lctl).await {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(err, "error: cannot reach ossd at {}: {e}", args.server);
            return EXIT_LOCAL;
        }
    };
    match &args.command {
        LctlCommand::GetParam { names, flags } => get(&mut client, names, flags, out, err).await,
        LctlCommand::ListParam { patterns, flags } => {
            list(&mut client, patterns, flags, out, err).await
        }
        LctlCommand::SetParam {
            assignments,
            values_only,
        } => set(&mut client, assignments, *values_only, out, err).await,
    }
}

async fn get(
    client: &mut OssClient,
    names: &[String],
    flags: &ParamFlags,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    // The first failure's errno, as jt_lcfg_getparam keeps it.
    let mut first: Option<Errno> = None;
    let mut fail = |e: Errno| {
        first.get_or_insert(e);
    };
    for pattern in names {
        // Directories matter only for -N (they are listed) and -R (they are descended into).
        let entries = if flags.names_only || flags.recursive {
            expand(client, pattern, flags.recursive).await
        } else {
            list_or_none(client, pattern)
                .await
                .map(|v| v.iter().map(|n| entry(n, 0)).collect())
        };
        let entries = match entries {
            Ok(e) => e,
            Err(ClientError::Remote(e)) => {
                let _ = writeln!(
                    err,
                    "error: get_param: param_path '{pattern}': {}",
                    e.errno.description()
                );
                detail(err, &e);
                fail(e.errno);
                continue;
            }
            Err(e) => {
                let _ = writeln!(err, "error: get_param: {pattern}: {e}");
                return EXIT_LOCAL;
            }
        };
        if entries.is_empty() {
            // Only directories, perhaps: say so rather than "no such file".
            let dirs = !flags.names_only
                && !flags.recursive
                && expand(client, pattern, false)
                    .await
                    .is_ok_and(|e| !e.is_empty());
            let (why, errno) = if dirs {
                (
                    "Is a directory (add -R for the parameters under it, or use list_param)",
                    Errno::EISDIR,
                )
            } else {
                ("No such file or directory", Errno::ENOENT)
            };
            let _ = writeln!(err, "error: get_param: param_path '{pattern}': {why}");
            fail(errno);
            continue;
        }
        for e in &entries {
            if flags.names_only {
                let _ = writeln!(out, "{}", e.display(flags.classify));
                continue;
            }
            if e.is_dir {
                continue;
            }
            let name = e.name();
            // One parameter per request: one unreadable parameter does not hide the others.
            match client.get_params_at_once(&name).await {
                Ok(params) => {
                    for p in &params {
                        let _ = out.write_all(format_param(p, flags.values_only).as_bytes());
                    }
                }
                Err(ClientError::Remote(e)) => {
                    let _ = writeln!(
                        err,
                        "error: read_param: '{name}': {}",
                        e.errno.description()
                    );
                    detail(err, &e);
                    fail(e.errno);
                }
                Err(e) => {
                    let _ = writeln!(err, "error: read_param: '{name}': {e}");
                    return EXIT_LOCAL;
                }
            }
        }
    }
    first.map_or(0, exit_code)
}

async fn list(
    client: &mut OssClient,
    patterns: &[String],
    flags: &ParamFlags,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    // The first failure's errno, as jt_lcfg_listparam keeps it.
    let mut first: Option<Errno> = None;
    for pattern in patterns {
        match expand(client, pattern, flags.recursive).await {
            Ok(entries) if entries.is_empty() => {
                let why = Errno::ENOENT.description();
                let _ = writeln!(err, "error: list_param: param_path '{pattern}': {why}");
                let _ = writeln!(err, "error: list_param: listing '{pattern}': {why}");
                first.get_or_insert(Errno::ENOENT);
            }
            Ok(entries) => {
                for e in entries.iter().filter(|e| e.is_dir || !flags.dirs_only) {
                    let _ = writeln!(out, "{}", e.display(flags.classify));
                }
            }
            Err(ClientError::Remote(e)) => {
                let why = e.errno.description();
                let _ = writeln!(err, "error: list_param: param_path '{pattern}': {why}");
                let _ = writeln!(err, "error: list_param: listing '{pattern}': {why}");
                detail(err, &e);
                first.get_or_insert(e.errno);
            }
            Err(e) => {
                let _ = writeln!(err, "error: list_param: {pattern}: {e}");
                return EXIT_LOCAL;
            }
        }
    }
    first.map_or(0, exit_code)
}

async fn set(
    client: &mut OssClient,
    assignments: &[String],
    values_only: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    // The last operand's result, as jt_lcfg_setparam keeps it.
    let mut last: Option<Errno> = None;
    let mut rest = assignments;
    while !rest.is_empty() {
        let (name, value, used) = match split_assignment(rest) {
            Ok(a) => a,
            Err(name) => {
                let _ = writeln!(
                    err,
                    "error: set_param: setting {name}: {}",
                    Errno::EINVAL.description()
                );
                return exit_code(Errno::EINVAL);
            }
        };
        rest = &rest[used..];
        last = None;
        match client.set_param(name, value).await {
            Ok(params) => {
                for p in &params {
                    let _ = out.write_all(format_param(p, values_only).as_bytes());
                }
            }
            // ENOENT for a name that matches nothing; a parameter that exists may answer
            // ENOENT too (a TBF rule that is not there), as a write error.
            Err(ClientError::Remote(e))
                if e.errno == Errno::ENOENT
                    && list_or_none(client, name).await.is_ok_and(|v| v.is_empty()) =>
            {
                let why = e.errno.description();
                let _ = writeln!(err, "error: set_param: param_path '{name}': {why}");
                let _ = writeln!(err, "error: set_param: setting '{name}'='{value}': {why}");
                last = Some(e.errno);
            }
            Err(ClientError::Remote(e)) => {
                let why = e.errno.description();
                let _ = writeln!(err, "error: set_param: setting {name}={value}: {why}");
                detail(err, &e);
                last = Some(e.errno);
            }
            Err(e) => {
                let _ = writeln!(err, "error: set_param: setting {name}={value}: {e}");
                return EXIT_LOCAL;
            }
        }
    }
    last.map_or(0, exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, value: &str) -> Param {
        Param {
            name: name.into(),
            value: value.into(),
        }
    }

    /// lctl's exit statuses are errnos (low 8 bits): 2 ENOENT, 19 ENODEV, 22 EINVAL, 17 EEXIST.
    #[test]
    fn exit_codes_are_errnos() {
        assert_eq!(
            [Errno::ENOENT, Errno::ENODEV, Errno::EINVAL, Errno::EEXIST].map(exit_code),
            [2, 19, 22, 17]
        );
        assert_eq!(exit_code(Errno::ENOTSUPP), (524 & 0xff) as u8);
        for e in Errno::ALL {
            assert_ne!(exit_code(e), 0, "{e:?}");
        }
    }

    /// The pure table of Linux errno numbers agrees with libc's, name by name.
    #[test]
    fn errno_numbers_are_libcs() {
        let libc_of = |e: Errno| match e {
            Errno::EPERM => libc::EPERM,
            Errno::ENOENT => libc::ENOENT,
            Errno::EIO => libc::EIO,
            Errno::EAGAIN => libc::EAGAIN,
            Errno::EBUSY => libc::EBUSY,
            Errno::EEXIST => libc::EEXIST,
            Errno::ENODEV => libc::ENODEV,
            Errno::EINVAL => libc::EINVAL,
            Errno::EFBIG => libc::EFBIG,
            Errno::ENOSPC => libc::ENOSPC,
            Errno::ERANGE => libc::ERANGE,
            Errno::ENAMETOOLONG => libc::ENAMETOOLONG,
            Errno::ENOSYS => libc::ENOSYS,
            Errno::EPROTO => libc::EPROTO,
            Errno::ENOTDIR => libc::ENOTDIR,
            Errno::EISDIR => libc::EISDIR,
            Errno::ENOTEMPTY => libc::ENOTEMPTY,
            Errno::EOVERFLOW => libc::EOVERFLOW,
            Errno::ENOTSUPP => 524,
            Errno::ENOMEM => libc::ENOMEM,
        };
        for e in Errno::ALL {
            assert_eq!(e.linux_number(), libc_of(e), "{e:?}");
        }
    }

    /// `NAME=VALUE` or `NAME VALUE`; an empty or missing value is refused locally.
    #[test]
    fn set_param_operands_split_as_lctl_does() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(split_assignment(&v(&["a.b=3", "c"])), Ok(("a.b", "3", 1)));
        assert_eq!(split_assignment(&v(&["a.b", "3"])), Ok(("a.b", "3", 2)));
        assert_eq!(split_assignment(&v(&["a.b=x=y"])), Ok(("a.b", "x=y", 1)));
        assert_eq!(split_assignment(&v(&["a.b="])), Err("a.b"));
        assert_eq!(split_assignment(&v(&["a.b"])), Err("a.b"));
        assert_eq!(split_assignment(&v(&["a.b", ""])), Err("a.b"));
    }

    #[test]
    fn multi_line_values_start_on_the_next_line() {
        assert_eq!(
            format_param(&p("obdfilter.x-OST0001.job_stats", "job_stats:\n"), false),
            "obdfilter.x-OST0001.job_stats=job_stats:\n"
        );
        assert_eq!(
            format_param(&p("obdfilter.x-OST0001.job_stats", ""), false),
            "obdfilter.x-OST0001.job_stats=\n"
        );
        assert_eq!(
            format_param(&p("a.b", "regular_requests:\nCPT 0:\n"), false),
            "a.b=\nregular_requests:\nCPT 0:\n"
        );
        // nrs_policies begins with an empty line: `name=`, then that empty line.
        assert_eq!(
            format_param(&p("a.b", "\nregular_requests:\n"), false),
            "a.b=\n\nregular_requests:\n"
        );
        assert_eq!(format_param(&p("a.b", "x\ny\n"), true), "x\ny\n");
    }

    /// `-F` marks as lctl's usage says: `/` directories, `=` writable files.
    #[test]
    fn classify_marks_directories_and_writable_files() {
        let dir = entry("obdfilter.x-OST0000.job_stats", 1);
        assert_eq!(dir.display(true), "obdfilter.x-OST0000/");
        assert_eq!(dir.display(false), "obdfilter.x-OST0000");
        let js = entry("obdfilter.x-OST0000.job_stats", 0);
        assert_eq!(js.display(true), "obdfilter.x-OST0000.job_stats=");
        assert_eq!(
            entry("ost.OSS.ost_io.sync_stats", 0).display(true),
            "ost.OSS.ost_io.sync_stats"
        );
        assert_eq!(
            entry("ost.OSS.ost_io.nrs_dsfq_flows", 0).display(true),
            "ost.OSS.ost_io.nrs_dsfq_flows"
        );
        // Component order keeps a directory's contents right after it.
        let mut v = [
            entry("a.b-x.c", 0),
            entry("a.b.c", 0),
            entry("a.b.c", 1),
            entry("a.b-x.c", 1),
        ];
        v.sort();
        let names: Vec<String> = v.iter().map(|e| e.display(true)).collect();
        assert_eq!(names, ["a.b/", "a.b.c=", "a.b-x/", "a.b-x.c="]);
    }
}
