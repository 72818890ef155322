//! `--dry-run` against the real thing: the agent (`pfsqos-agentd`, a real process) over the
//! emulated `lctl` (`pfsqos-lctl-emu`, configured by path under a name that is not `lctl`)
//! over a live ossd. A dry run must read what a real run reads and print exactly the writes
//! the real run then makes: a dry run that plans other rates or other OSTs than the real run
//! would mislead the administrator it is for.
//!
//! Every wait polls with a bounded deadline; nothing asserts a wall-clock rate.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pfsqos_agent::lctl::{argv_line, is_read_only};
use pfsqos_ossd::Ossd;
use pfsqos_wire::client::{Identity, OssClient};
use pfsqos_wire::protocol::Role;

use crate::common::{self, KEY, SERVER_KEY};

/// Separates argv elements in the wrapper's log (never in an argument the agent passes).
const ARG_SEP: char = '\u{1f}';

struct Site {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    ossd: Option<Ossd>,
    rt: tokio::runtime::Runtime,
    addr: std::net::SocketAddr,
    /// The configured lctl: a wrapper that logs each argv, then runs the emulation.
    program: PathBuf,
    log: PathBuf,
}

impl Site {
    fn new(cpts: u32) -> Site {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let (rt, ossd) = common::emulated_oss(&dir, 2, cpts as usize, 4, 2);
        let addr = ossd.local_addr();
        // A name with a space: the printed argv must quote the configured program.
        let bin = dir.join("sbin dir");
        std::fs::create_dir(&bin).unwrap();
        let program = bin.join("site-lctl");
        let log = dir.join("lctl-calls");
        let script = format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\037' \"$a\"; done >> '{log}'\n\
             echo >> '{log}'\nexec '{emu}' \"$@\"\n",
            log = log.display(),
            emu = env!("CARGO_BIN_EXE_pfsqos-lctl-emu"),
        );
        pfsqos_testkit::write_script(&program, &script);
        Site {
            _tmp: tmp,
            dir,
            ossd: Some(ossd),
            rt,
            addr,
            program,
            log,
        }
    }

    fn config(&self, body: &str) -> PathBuf {
        let p = self.dir.join("agent.toml");
        let lctl = self.program.display().to_string();
        std::fs::write(
            &p,
            format!(
                "rule_prefix = \"pfq\"\nperiod_ms = 100\nlctl_backoff_ms = 10\n\
                 lctl = {lctl:?}\n{body}"
            ),
        )
        .unwrap();
        p
    }

    /// Runs the agent once (`--once`, with `--dry-run` when asked) and returns its stdout and
    /// stderr.
    fn run_once(&self, config: &Path, version: &str, dry_run: bool) -> (String, String) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pfsqos-agentd"));
        cmd.arg("--config").arg(config).arg("--once");
        if dry_run {
            cmd.arg("--dry-run");
        }
        let child = cmd
            // No `lctl` on PATH: the configured program is the only one that can be run.
            .env("PATH", "/usr/bin:/bin")
            .env("PFSQOS_LCTL_SERVER", self.addr.to_string())
            .env("PFSQOS_LCTL_KEY_FILE", self.dir.join("key"))
            .env("PFSQOS_LCTL_VERSION", version)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_output(child);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "agent --once (dry run: {dry_run}): {err}"
        );
        (String::from_utf8(out.stdout).unwrap(), err)
    }

    /// Every argv the configured program was run with since the last call (the log is
    /// emptied).
    fn calls(&self) -> Vec<Vec<String>> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        std::fs::write(&self.log, "").unwrap();
        text.lines()
            .map(|l| {
                l.strip_suffix(ARG_SEP)
                    .unwrap_or(l)
                    .split(ARG_SEP)
                    .map(str::to_string)
                    .collect()
            })
            .collect()
    }

    fn lctl_set(&self, name: &str, value: &str) {
        self.rt.block_on(async {
            let mut c = OssClient::connect(self.addr, SERVER_KEY, Role::Lctl)
                .await
                .unwrap();
            c.set_param(name, value).await.unwrap();
        })
    }

    fn write(&self, job: &str, ost: u32, n: u64) {
        self.rt.block_on(async {
            let mut c = OssClient::connect(self.addr, KEY, Role::Client)
                .await
                .unwrap();
            for i in 0..n {
                c.write(&Identity::test(job), ost, 1, i * 4096, &[1u8; 4096], false)
                    .await
                    .unwrap();
            }
        })
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        if let Some(o) = self.ossd.take() {
            self.rt.block_on(o.shutdown());
        }
    }
}

/// Waits (bounded by the shared deadline) for a child and collects its output.
fn wait_output(mut child: std::process::Child) -> std::process::Output {
    fn drain(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            pipe.read_to_end(&mut buf).unwrap();
            buf
        })
    }
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let status = common::wait_exit(&mut child);
    std::process::Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// The rule rates of the `start`/`change` commands in some writes, by rule name.
fn rule_rates(lines: &[String]) -> Vec<(String, String)> {
    let mut rates: Vec<(String, String)> = lines
        .iter()
        .filter_map(|l| {
            let cmd = l.split("nrs_tbf_rule=").nth(1)?;
            let mut words = cmd.trim_end_matches('\'').split(' ');
            let verb = words.next()?;
            let name = words.next()?;
            let rate = cmd.split("rate=").nth(1)?.split([' ', '\'']).next()?;
            matches!(verb, "start" | "change").then(|| (name.to_string(), rate.to_string()))
        })
        .collect();
    rates.sort();
    rates
}

const STATIC: &str = "controller = \"static\"\nost_capacity_rpcs_per_s = 400\n\
    [[jobs]]\nid = \"a.1\"\nnodes = 1\n[[jobs]]\nid = \"b.2\"\nnodes = 3\n";

/// Runs `--dry-run --once`, then `--once`, on a fresh site; returns the lines the dry run
/// printed, the real run's writes as the same lines, and both runs' stderr.
fn dry_then_real(
    version: &str,
    ossd_cpts: u32,
    body: &str,
) -> (Vec<String>, Vec<String>, String, String) {
    dry_then_real_on(Site::new(ossd_cpts), version, body)
}

fn dry_then_real_on(
    site: Site,
    version: &str,
    body: &str,
) -> (Vec<String>, Vec<String>, String, String) {
    // Jobs on OST0 only: OST1 has none, and on 2.16+ it prints no job_stats at all.
    site.write("a.1", 0, 3);
    site.write("b.2", 0, 5);
    let config = site.config(body);
    let (printed, dry_err) = site.run_once(&config, version, true);
    let dry_calls = site.calls();
    assert!(
        dry_calls.iter().all(|c| is_read_only(c)),
        "{version}: the dry run wrote: {dry_calls:?}"
    );
    assert!(
        dry_calls.iter().any(|c| c[0] == "list_param"),
        "{version}: the dry run never listed the OSTs: {dry_calls:?}"
    );
    let planned: Vec<String> = printed.lines().map(str::to_string).collect();
    // The configured program, quoted (its path holds a space), never a literal `lctl`.
    let prefix = format!("'{}' 'set_param' ", site.program.display());
    assert!(
        !planned.is_empty() && planned.iter().all(|l| l.starts_with(&prefix)),
        "{version}: {printed}"
    );
    let (_, real_err) = site.run_once(&config, version, false);
    let done: Vec<String> = site
        .calls()
        .into_iter()
        .filter(|c| !is_read_only(c))
        .map(|c| argv_line(&site.program.display().to_string(), &c))
        .collect();
    (planned, done, dry_err, real_err)
}

/// From FIFO, with jobs on one OST only and the other silent (on 2.16 and later an OST
/// without jobs prints no job_stats at all: only `list_param` shows it): `--dry-run --once`
/// runs only reads through the configured program (`list_param` among them), writes
/// nothing, and prints, each behind that program's quoted path, exactly the writes a real
/// `--once` then makes, in the same order: the same rules at the same rates, for the
/// capacity of both OSTs.
#[test]
fn a_dry_run_prints_exactly_the_writes_a_real_run_makes() {
    for (version, cpts) in [("2.17", 2), ("2.16", 2), ("2.15", 3), ("2.12", 1)] {
        let body = format!("cpts = {cpts}\n{STATIC}");
        let (planned, done, dry_err, real_err) = dry_then_real(version, cpts, &body);
        assert_eq!(
            rule_rates(&planned),
            rule_rates(&done),
            "{version}, {cpts} CPTs: the planned rates"
        );
        assert_eq!(planned, done, "{version}, {cpts} CPTs");
        // Both OSTs' capacity (800 RPC/s) shared by nodes (1 and 3), over every partition.
        let rates = rule_rates(&done);
        let rate = |name: &str| {
            rates
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, r)| r.parse::<u64>().unwrap())
        };
        assert_eq!(
            rate("pfqa_1"),
            Some(200 / u64::from(cpts)),
            "{version}: {done:?}"
        );
        assert_eq!(
            rate("pfqb_2"),
            Some(600 / u64::from(cpts)),
            "{version}: {done:?}"
        );
        // From FIFO the dry run cannot see the count and says which it assumed; the real run
        // found the configured one and has nothing to say.
        assert!(
            dry_err.contains(&format!("cpts={cpts}")),
            "{version}: {dry_err}"
        );
        assert!(
            !real_err.contains("CPU partition count"),
            "{version}: {real_err}"
        );
    }
}

/// Only TBF's rule listing shows the CPU partition count, and from FIFO a dry run cannot read
/// it: with `cpts` left out of the configuration (1) on an OSS of 2 partitions, the dry run
/// says its rates assume the configured count, and the real run, which divides by the
/// listing's 2, says the configuration disagrees, so neither difference is silent.
#[test]
fn a_dry_run_that_cannot_see_the_partition_count_says_so() {
    let (planned, done, dry_err, real_err) = dry_then_real("2.17", 2, STATIC);
    assert!(
        dry_err.contains("no rule listing shows ost_io's CPU partition count")
            && dry_err.contains("cpts=1"),
        "{dry_err}"
    );
    assert!(
        real_err.contains("another CPU partition count than the configured cpts")
            && real_err.contains("listed=2"),
        "{real_err}"
    );
    let halve = |r: Vec<(String, String)>| -> Vec<(String, u64)> {
        r.into_iter()
            .map(|(n, v)| (n, v.parse::<u64>().unwrap()))
            .collect()
    };
    let planned = halve(rule_rates(&planned));
    let done = halve(rule_rates(&done));
    assert_eq!(planned.len(), done.len());
    for ((pn, pr), (dn, dr)) in planned.iter().zip(&done) {
        assert_eq!((pn, *pr), (dn, dr * 2), "per partition: 1 planned, 2 real");
    }
}

/// Over TBF already running with an administrator's rule and rules a killed instance left
/// (one still wanted, one for a job no longer configured, one whose name is now another
/// job's), the dry run plans the same adoptions (`change`), removals (`stop`) and starts as
/// the real run then writes, and touches neither the policy nor the administrator's rule.
#[test]
fn a_dry_run_over_rules_left_behind_plans_what_the_real_run_writes() {
    let site = Site::new(2);
    let rule = "ost.OSS.ost_io.nrs_tbf_rule";
    site.lctl_set("ost.OSS.ost_io.nrs_policies", "tbf jobid");
    site.lctl_set(rule, "start adm jobid={x.9} rate=9");
    site.lctl_set(rule, "start pfqa_1 jobid={a.1} rate=77");
    site.lctl_set(rule, "start pfqold jobid={gone.3} rate=5");
    site.lctl_set(rule, "start pfqb_2 jobid={other.4} rate=6");
    let (planned, done, _, real_err) =
        dry_then_real_on(site, "2.17", &format!("cpts = 2\n{STATIC}"));
    assert_eq!(planned, done);
    let ops: Vec<&str> = done
        .iter()
        .filter_map(|l| l.split("nrs_tbf_rule=").nth(1))
        .collect();
    assert!(
        ops.iter().any(|o| o.starts_with("change pfqa_1 ")),
        "{ops:?}"
    );
    assert!(ops.iter().any(|o| o.starts_with("stop pfqold")), "{ops:?}");
    assert!(ops.iter().any(|o| o.starts_with("stop pfqb_2")), "{ops:?}");
    assert!(
        ops.iter().any(|o| o.starts_with("start pfqb_2 ")),
        "{ops:?}"
    );
    assert!(
        done.iter()
            .all(|l| !l.contains("nrs_policies") && !l.contains(" adm")),
        "{done:?}"
    );
    assert!(!real_err.contains("CPU partition count"), "{real_err}");
}
