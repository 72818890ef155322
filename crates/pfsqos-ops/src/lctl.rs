//! `pfsqos lctl`: reads and writes an ossd's parameters, printing exactly what Lustre's `lctl`
//! prints, so scripts and the Lustre adapter's parsers work on either.
//!
//! Output: `name=value` per parameter; a value of more than one line starts on the line after
//! the `=` (`name=\n` then the value), as `lctl get_param` does. `-n` prints values only.
//! Exit codes: 0 success; 1 the server refused at least one parameter (each refusal printed
//! as `error: get_param|set_param: ...` on stderr, like lctl); 2 bad arguments, unreadable key
//! or no connection.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use pfsqos_wire::client::{ClientError, OssClient};
use pfsqos_wire::key::read_key_file;
use pfsqos_wire::protocol::{Param, Role};

/// Default ossd address for `lctl`.
pub const DEFAULT_SERVER: &str = "127.0.0.1:7988";

#[derive(Clone, Debug)]
pub enum LctlCommand {
    /// `get_param [-n] NAME...`
    GetParam {
        names: Vec<String>,
        values_only: bool,
    },
    /// `set_param [-n] NAME=VALUE...`
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

/// Runs one lctl command; returns the process exit code.
pub async fn run(args: &LctlArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let key = match read_key_file(&args.key_file) {
        Ok(k) => k,
        Err(e) => {
            let _ = writeln!(err, "error: {e:#}");
            return 2;
        }
    };
    let mut client = match OssClient::connect(args.server, &key, Role::Lctl).await {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(err, "error: cannot reach ossd at {}: {e}", args.server);
            return 2;
        }
    };
    let mut code = 0;
    match &args.command {
        LctlCommand::GetParam { names, values_only } => {
            for name in names {
                match client.get_param(name).await {
                    Ok(params) => {
                        for p in &params {
                            let _ = out.write_all(format_param(p, *values_only).as_bytes());
                        }
                    }
                    Err(ClientError::Remote(e)) => {
                        let _ = writeln!(err, "error: get_param: {name}: {e}");
                        code = 1;
                    }
                    Err(e) => {
                        let _ = writeln!(err, "error: get_param: {name}: {e}");
                        return 2;
                    }
                }
            }
        }
        LctlCommand::SetParam {
            assignments,
            values_only,
        } => {
            for a in assignments {
                let Some((name, value)) = a.split_once('=') else {
                    let _ = writeln!(err, "error: set_param: setting {a}: expected NAME=VALUE");
                    code = 2;
                    continue;
                };
                match client.set_param(name, value).await {
                    Ok(params) => {
                        for p in &params {
                            let _ = out.write_all(format_param(p, *values_only).as_bytes());
                        }
                    }
                    Err(ClientError::Remote(e)) => {
                        let _ = writeln!(err, "error: set_param: setting {name}={value}: {}", e);
                        code = 1;
                    }
                    Err(e) => {
                        let _ = writeln!(err, "error: set_param: setting {name}={value}: {e}");
                        return 2;
                    }
                }
            }
        }
    }
    code
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
}
