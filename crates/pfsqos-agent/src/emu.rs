//! The emulated `lctl` of a Lustre OSS, backed by a live pfsqos ossd (bin `pfsqos-lctl-emu`,
//! which tests put first on `PATH` as `lctl`).
//!
//! * Environment: `PFSQOS_LCTL_SERVER` (the ossd's address), `PFSQOS_LCTL_KEY_FILE` (its key),
//!   `PFSQOS_LCTL_VERSION` (`2.12`, `2.14`, `2.15.0` (2.15.0-2.15.1), `2.15` (2.15.2-2.15.x),
//!   `2.16` or `2.17`; default `2.17`),
//!   `PFSQOS_LCTL_OST_INDEX_BASE` (0 by default, at most 0xfff0): added to the OST index in
//!   the names `get_param` and `list_param` print, so that emulated OSSs over separate ossds
//!   (each numbering its OSTs from 0) show file-system-wide indexes as Lustre's OSSs do
//!   (`fs-OST0001` on the second). Names given to `set_param` are not renumbered.
//! * Parameter names are Lustre's (`ost.OSS.ost_io.nrs_policies`, `ost.OSS.ost_io.nrs_tbf_rule`,
//!   `obdfilter.<fs>-OSTxxxx.job_stats`, `obdfilter.<fs>-OSTxxxx.job_cleanup_interval`), which
//!   the ossd uses too; globs are expanded by the ossd as lctl expands them.
//! * `get_param [-n] NAME...` prints as the version's lctl does ([`format_value`]: up to 2.15
//!   `read_param` in lustre/utils/lustre_cfg.c, 2.16 `read_param` in lustre_param.c, 2.17
//!   `print_param_internal` in lustre_param.c). job_stats values are printed in the
//!   chosen version's layout: the ossd's text is parsed with the core parser and printed again
//!   with the core printer (`pfsqos_core::jobstats`), the one place the byte formats live.
//!   The TBF rule listing's form and the rule grammar follow the ossd's own
//!   `--lustre-version`, which tests set to the same version.
//! * `set_param NAME=VALUE...` (or `NAME VALUE`) applies each through the ossd, whose TBF
//!   parser refuses what Lustre refuses, prints `NAME=VALUE` for each write done (lctl's
//!   `po_show_path`, off with `-n`) and lctl's `write_param` message for a refusal,
//!   `error: set_param: setting PATH=VALUE: <strerror>`, except for EIO, where lctl prints
//!   nothing; an empty value is `error: set_param: setting NAME: no value` (EINVAL).
//! * `list_param NAME...` prints the matching names.
//! * Exit status: 0, or the first failure's errno as lctl's `lctl_main` returns it (`-rc`, of
//!   the first failing parameter: `param_display` and `jt_lcfg_setparam` keep the first); 4
//!   (`CMD_HELP`) for a command without operands, as libcfs's parser returns it; 22 (EINVAL)
//!   when the emulation's environment is wrong; 19 (ENODEV) when the ossd cannot be reached.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use pfsqos_core::errno::Errno;
use pfsqos_core::jobstats::{parse_job_stats, render_job_stats, JobStatsFormat};
use pfsqos_wire::client::{ClientError, OssClient};
use pfsqos_wire::key::read_key_file;
use pfsqos_wire::protocol::Role;

pub const ENV_SERVER: &str = "PFSQOS_LCTL_SERVER";
pub const ENV_KEY_FILE: &str = "PFSQOS_LCTL_KEY_FILE";
pub const ENV_VERSION: &str = "PFSQOS_LCTL_VERSION";
pub const ENV_OST_INDEX_BASE: &str = "PFSQOS_LCTL_OST_INDEX_BASE";

/// `name` with the OST index after its first `-OST` (four hex digits) raised by `base`.
pub fn renumber_ost(name: &str, base: u32) -> String {
    if base == 0 {
        return name.to_string();
    }
    let Some(at) = name.find("-OST") else {
        return name.to_string();
    };
    let digits = at + 4;
    let hex = name.get(digits..digits + 4).unwrap_or("");
    match u32::from_str_radix(hex, 16) {
        Ok(i) if hex.len() == 4 && i + base <= 0xffff => {
            format!("{}{:04x}{}", &name[..digits], i + base, &name[digits + 4..])
        }
        _ => name.to_string(),
    }
}

/// The versions whose output the emulation prints (`2.15.0`: 2.15.0 and 2.15.1).
pub const VERSIONS: [&str; 6] = ["2.12", "2.14", "2.15.0", "2.15", "2.16", "2.17"];

/// lctl's exit status for a command given without operands (`CMD_HELP` of libcfs's parser,
/// returned by `jt_lcfg_setparam` and `jt_lcfg_getparam` and passed on by `lctl_main`).
pub const EXIT_CMD_HELP: i32 = 4;

/// The job_stats layout of a version (`2.15` is 2.15.2 and later).
pub fn job_stats_format(version: &str) -> Option<JobStatsFormat> {
    Some(match version {
        "2.12" | "2.14" => JobStatsFormat::Legacy2_12,
        "2.15.0" => JobStatsFormat::Lustre2_15_0,
        "2.15" => JobStatsFormat::Lustre2_15,
        "2.16" => JobStatsFormat::Lustre2_16,
        "2.17" => JobStatsFormat::Master,
        _ => return None,
    })
}

/// Linux errno numbers (what lctl's exit status carries).
pub fn errno_number(e: Errno) -> i32 {
    e.linux_number()
}

/// The file a parameter lives in on the emulated version (what lctl's messages name), as the
/// sources of every tag from v2_12_0 to v2_17_0 register them: the service's NRS files
/// (`ost.OSS.ost_io.nrs_*`) in debugfs (`ptlrpc_ldebugfs_register_service`,
/// lustre/ptlrpc/lproc_ptlrpc.c); `job_stats` in procfs (`lprocfs_add_simple` on the obd's
/// proc entry, lustre/obdclass/lprocfs_jobstats.c); `job_cleanup_interval` in procfs up to
/// 2.12 (an lprocfs var of lustre/ofd/lproc_ofd.c) and in sysfs from 2.13 (`LUSTRE_RW_ATTR`).
/// Anything else is given the debugfs root.
pub fn param_path(version: &str, name: &str) -> String {
    let file = name.rsplit('.').next().unwrap_or(name);
    let root = match file {
        "job_stats" => "/proc/fs/lustre",
        "job_cleanup_interval" if version == "2.12" => "/proc/fs/lustre",
        "job_cleanup_interval" => "/sys/fs/lustre",
        _ => "/sys/kernel/debug/lustre",
    };
    format!("{root}/{}", name.replace('.', "/"))
}

/// One value (the file's whole text) as the version's `lctl get_param` prints it:
/// * up to 2.15 (`read_param`, lustre/utils/lustre_cfg.c): nothing for an empty value;
///   `name=`, a newline if the value holds one before its last byte or the value's length
///   plus the name's is 80 or more, then the value;
/// * 2.16 (`read_param`, lustre/utils/lustre_param.c): the same without the 80-column rule;
/// * 2.17 (`read_param` and `print_param_internal`, lustre_param.c): the value without its
///   last newline, after `name=` and a newline if it still holds one, then a newline; an
///   empty value prints `name=` and a newline.
///
/// With `values_only` (`-n`) the name, `=` and the newline after it are left out.
pub fn format_value(version: &str, name: &str, value: &str, values_only: bool) -> String {
    if version == "2.17" {
        let v = value.strip_suffix('\n').unwrap_or(value);
        if values_only {
            return format!("{v}\n");
        }
        let nl = if v.contains('\n') { "\n" } else { "" };
        return format!("{name}={nl}{v}\n");
    }
    if value.is_empty() {
        return String::new();
    }
    if values_only {
        return value.to_string();
    }
    let multi = value.as_bytes()[..value.len() - 1].contains(&b'\n');
    let long = version != "2.16" && value.len() + name.len() >= 80;
    format!("{name}={}{value}", if multi || long { "\n" } else { "" })
}

/// Re-prints a job_stats value in `format` (values that do not parse are left as they are).
pub fn relayout_job_stats(value: &str, format: JobStatsFormat) -> String {
    match parse_job_stats(value) {
        Ok(entries) => render_job_stats(&entries, format),
        Err(_) => value.to_string(),
    }
}

struct Env {
    server: SocketAddr,
    key_file: PathBuf,
    version: String,
    ost_index_base: u32,
}

fn env() -> Result<Env, String> {
    let server = std::env::var(ENV_SERVER)
        .map_err(|_| format!("{ENV_SERVER} is not set"))?
        .parse()
        .map_err(|e| format!("{ENV_SERVER}: {e}"))?;
    let key_file = std::env::var_os(ENV_KEY_FILE)
        .map(PathBuf::from)
        .ok_or_else(|| format!("{ENV_KEY_FILE} is not set"))?;
    let version = std::env::var(ENV_VERSION).unwrap_or_else(|_| "2.17".to_string());
    if !VERSIONS.contains(&version.as_str()) {
        return Err(format!(
            "{ENV_VERSION} must be one of {}",
            VERSIONS.join(", ")
        ));
    }
    let ost_index_base = match std::env::var(ENV_OST_INDEX_BASE) {
        Err(_) => 0,
        Ok(v) => v
            .parse::<u32>()
            .ok()
            .filter(|&b| b <= 0xfff0)
            .ok_or_else(|| format!("{ENV_OST_INDEX_BASE} must be 0..=65520"))?,
    };
    Ok(Env {
        server,
        key_file,
        version,
        ost_index_base,
    })
}

/// Runs `lctl ARGS...` (without the program name); returns the exit status.
pub fn main_with(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let env = match env() {
        Ok(e) => e,
        Err(m) => {
            let _ = writeln!(err, "lctl (emulated): {m}");
            return errno_number(Errno::EINVAL);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(err, "lctl (emulated): {e}");
            return errno_number(Errno::ENOMEM);
        }
    };
    rt.block_on(run(&env, args, out, err))
}

async fn run(env: &Env, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let Some((cmd, rest)) = args.split_first() else {
        let _ = writeln!(err, "usage: lctl get_param|set_param|list_param ...");
        return EXIT_CMD_HELP;
    };
    let values_only = rest.iter().any(|a| a == "-n");
    let operands: Vec<&String> = rest.iter().filter(|a| !a.starts_with('-')).collect();
    if let Some(bad) = rest
        .iter()
        .find(|a| a.starts_with('-') && a.as_str() != "-n")
    {
        let _ = writeln!(err, "{cmd}: unsupported option '{bad}' in the emulation");
        return errno_number(Errno::EINVAL);
    }
    if !matches!(cmd.as_str(), "get_param" | "set_param" | "list_param") {
        let _ = writeln!(
            err,
            "lctl: '{}' is not a valid command (the emulation offers get_param, set_param and list_param)",
            cmd.escape_debug()
        );
        // What libcfs's parser returns for an unknown command (`-1`, exit status 1).
        return 1;
    }
    if operands.is_empty() {
        let _ = writeln!(err, "usage: {cmd} [-n] PARAM...");
        return EXIT_CMD_HELP;
    }
    let key = match read_key_file(&env.key_file) {
        Ok(k) => k,
        Err(e) => {
            let _ = writeln!(err, "lctl (emulated): {e:#}");
            return errno_number(Errno::EINVAL);
        }
    };
    let mut client = match OssClient::connect(env.server, &key, Role::Lctl).await {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(
                err,
                "lctl (emulated): cannot reach ossd at {}: {e}",
                env.server
            );
            return errno_number(Errno::ENODEV);
        }
    };
    let format = job_stats_format(&env.version).expect("version checked");
    let mut rc = 0;
    let fail = |rc: &mut i32, e: Errno| {
        if *rc == 0 {
            *rc = errno_number(e);
        }
    };
    let mut operands = operands.into_iter();
    while let Some(operand) = operands.next() {
        match cmd.as_str() {
            "list_param" => match client.list_params(operand).await {
                Ok(names) => {
                    for n in names {
                        let _ = writeln!(out, "{}", renumber_ost(&n, env.ost_index_base));
                    }
                }
                Err(ClientError::Remote(e)) => {
                    let _ = writeln!(
                        err,
                        "error: list_param: param_path '{}': {}",
                        operand.replace('.', "/"),
                        e.errno.description()
                    );
                    fail(&mut rc, e.errno);
                }
                Err(e) => {
                    let _ = writeln!(err, "lctl (emulated): {e}");
                    fail(&mut rc, Errno::EIO);
                }
            },
            "get_param" => match client.get_param(operand).await {
                Ok(params) => {
                    for p in params {
                        let value = if p.name.ends_with(".job_stats") {
                            relayout_job_stats(&p.value, format)
                        } else {
                            p.value
                        };
                        let name = renumber_ost(&p.name, env.ost_index_base);
                        let _ = out.write_all(
                            format_value(&env.version, &name, &value, values_only).as_bytes(),
                        );
                    }
                }
                Err(ClientError::Remote(e)) => {
                    if e.errno == Errno::ENOENT {
                        let _ = writeln!(
                            err,
                            "error: {cmd}: param_path '{}': {}",
                            operand.replace('.', "/"),
                            e.errno.description()
                        );
                    } else {
                        let _ = writeln!(
                            err,
                            "error: read_param: '{}': {}",
                            param_path(&env.version, operand),
                            e.errno.description()
                        );
                    }
                    fail(&mut rc, e.errno);
                }
                Err(e) => {
                    let _ = writeln!(err, "lctl (emulated): {e}");
                    fail(&mut rc, Errno::EIO);
                }
            },
            _ => {
                // `NAME=VALUE`, or `NAME VALUE` (two operands), as `jt_lcfg_setparam` reads them.
                let (name, value) = match operand.split_once('=') {
                    Some((name, value)) => (name, value),
                    None => match operands.next() {
                        Some(value) => (operand.as_str(), value.as_str()),
                        None => {
                            let _ = writeln!(err, "error: set_param: setting {operand}: no value");
                            fail(&mut rc, Errno::EINVAL);
                            break;
                        }
                    },
                };
                if value.is_empty() {
                    let _ = writeln!(err, "error: set_param: setting {name}: no value");
                    fail(&mut rc, Errno::EINVAL);
                    continue;
                }
                match client.set_param(name, value).await {
                    Ok(params) => {
                        if !values_only {
                            for p in params {
                                let _ = writeln!(out, "{}={}", p.name, p.value);
                            }
                        }
                    }
                    Err(ClientError::Remote(e)) => {
                        if e.errno == Errno::ENOENT && e.message.contains("param_path") {
                            let _ = writeln!(
                                err,
                                "error: set_param: param_path '{}': {}",
                                name.replace('.', "/"),
                                e.errno.description()
                            );
                        } else if e.errno != Errno::EIO {
                            // `write_param` prints nothing for EIO (the kernel said why).
                            let _ = writeln!(
                                err,
                                "error: set_param: setting {}={value}: {}",
                                param_path(&env.version, name),
                                e.errno.description()
                            );
                        }
                        fail(&mut rc, e.errno);
                    }
                    Err(e) => {
                        let _ = writeln!(err, "lctl (emulated): {e}");
                        fail(&mut rc, Errno::EIO);
                    }
                }
            }
        }
    }
    rc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_as_read_param_prints_them() {
        for v in ["2.12", "2.14", "2.15.0", "2.15", "2.16"] {
            assert_eq!(format_value(v, "a.b", "", false), "", "{v}");
            assert_eq!(
                format_value(v, "a.b", "job_stats:\n", false),
                "a.b=job_stats:\n"
            );
            assert_eq!(format_value(v, "a.b", "x\ny\n", false), "a.b=\nx\ny\n");
            assert_eq!(format_value(v, "a.b", "x\ny\n", true), "x\ny\n");
        }
        // Up to 2.15 a single line of 80 columns or more (name plus value with its newline)
        // starts on a line of its own; 2.16 and 2.17 keep it on the name's line.
        let name = "obdfilter.testfs-OST0000.job_cleanup_interval";
        let long = format!("{}\n", "9".repeat(80 - name.len() - 1));
        let short = format!("{}\n", "9".repeat(80 - name.len() - 2));
        assert_eq!(
            format_value("2.15", name, &long, false),
            format!("{name}=\n{long}")
        );
        assert_eq!(
            format_value("2.15", name, &short, false),
            format!("{name}={short}")
        );
        assert_eq!(
            format_value("2.16", name, &long, false),
            format!("{name}={long}")
        );
        assert_eq!(
            format_value("2.17", name, &long, false),
            format!("{name}={long}")
        );
        // 2.17 prints an empty value as `name=` and a newline (`-n`: a blank line).
        assert_eq!(format_value("2.17", "a.b", "", false), "a.b=\n");
        assert_eq!(format_value("2.17", "a.b", "", true), "\n");
        assert_eq!(format_value("2.17", "a.b", "x\ny\n", false), "a.b=\nx\ny\n");
        assert_eq!(
            format_value("2.17", "a.b", "job_stats:\n", false),
            "a.b=job_stats:\n"
        );
    }

    #[test]
    fn ost_indexes_are_raised_by_the_base() {
        assert_eq!(
            renumber_ost("obdfilter.pfsqos-OST0000.job_stats", 1),
            "obdfilter.pfsqos-OST0001.job_stats"
        );
        assert_eq!(
            renumber_ost("obdfilter.fs-OST000f.job_stats", 1),
            "obdfilter.fs-OST0010.job_stats"
        );
        assert_eq!(
            renumber_ost("ost.OSS.ost_io.nrs_tbf_rule", 3),
            "ost.OSS.ost_io.nrs_tbf_rule"
        );
        assert_eq!(
            renumber_ost("obdfilter.fs-OSTzz.job_stats", 1),
            "obdfilter.fs-OSTzz.job_stats"
        );
        assert_eq!(
            renumber_ost("obdfilter.fs-OST0000.job_stats", 0),
            "obdfilter.fs-OST0000.job_stats"
        );
    }

    #[test]
    fn paths_follow_the_version() {
        for v in VERSIONS {
            assert_eq!(
                param_path(v, "ost.OSS.ost_io.nrs_tbf_rule"),
                "/sys/kernel/debug/lustre/ost/OSS/ost_io/nrs_tbf_rule"
            );
            assert_eq!(
                param_path(v, "obdfilter.fs-OST0000.job_stats"),
                "/proc/fs/lustre/obdfilter/fs-OST0000/job_stats"
            );
        }
        assert_eq!(
            param_path("2.12", "obdfilter.fs-OST0000.job_cleanup_interval"),
            "/proc/fs/lustre/obdfilter/fs-OST0000/job_cleanup_interval"
        );
        assert_eq!(
            param_path("2.14", "obdfilter.fs-OST0000.job_cleanup_interval"),
            "/sys/fs/lustre/obdfilter/fs-OST0000/job_cleanup_interval"
        );
    }
}
