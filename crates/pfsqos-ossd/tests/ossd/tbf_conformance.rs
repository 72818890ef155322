//! TBF conformance with Lustre through `pfsqos lctl` against a live ossd: the scripts of
//! `pfsqos-core/tests/tbf_conformance/cases.rs` (Lustre's own TBF tests and cases derived from
//! its C source, each with Lustre's answer), replayed as an administrator would type them.
//! Each version's scripts run against an ossd started with that `--lustre-version`
//! (`OssdConfig::lustre_version`), so the version an operator picks is the one they get.

use std::path::PathBuf;

use crate::common::{KEY, SERVER_KEY};
use pfsqos_core::errno::Errno;
use pfsqos_core::sched::tbf::{CptRules, TbfRuleListing};
use pfsqos_ops::lctl::{self, LctlArgs, LctlCommand};
use pfsqos_ossd::{Ossd, OssdConfig};

include!("../../../pfsqos-core/tests/tbf_conformance/cases.rs");

const POLICIES: &str = "ost.OSS.ost_io.nrs_policies";
const RULES: &str = "ost.OSS.ost_io.nrs_tbf_rule";

struct Fixture {
    ossd: Ossd,
    key_file: PathBuf,
    _tmp: tempfile::TempDir,
}

async fn start(version: &str) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let key_file = tmp.path().join("key");
    // `lctl` is an administrator's: it proves the servers' own key.
    std::fs::write(&key_file, [SERVER_KEY, b"\n"].concat()).unwrap();
    let mut cfg = OssdConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        vec![tmp.path().join("ost0")],
        KEY.to_vec(),
        SERVER_KEY.to_vec(),
    );
    cfg.fsname = "testfs".into();
    cfg.threads = 2;
    // Two CPU partitions: every rule command reaches four heads (2 CPTs x reg/hp).
    cfg.cpts = 2;
    cfg.lustre_version = pfsqos_ossd::parse_lustre_version(version).unwrap();
    Fixture {
        ossd: Ossd::start(cfg).await.unwrap(),
        key_file,
        _tmp: tmp,
    }
}

/// Runs `pfsqos lctl` in process: exit code, stdout, stderr.
async fn lctl(f: &Fixture, command: LctlCommand) -> (u8, String, String) {
    let args = LctlArgs {
        server: f.ossd.local_addr(),
        key_file: f.key_file.clone(),
        command,
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = lctl::run(&args, &mut out, &mut err).await;
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

async fn set(f: &Fixture, name: &str, value: &str) -> (u8, String, String) {
    lctl(
        f,
        LctlCommand::SetParam {
            assignments: vec![format!("{name}={value}")],
            values_only: false,
        },
    )
    .await
}

async fn get(f: &Fixture, name: &str) -> (u8, String, String) {
    lctl(
        f,
        LctlCommand::GetParam {
            names: vec![name.to_string()],
            flags: Default::default(),
        },
    )
    .await
}

/// The `name conditions rate` lines of one CPT.
fn rule_lines(cpt: &CptRules) -> Vec<String> {
    cpt.rules
        .iter()
        .map(|r| format!("{} {} {}", r.name, r.conditions, r.rate_rpcs_per_s))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lustre_scripts_replay_through_lctl_and_a_live_ossd() {
    let mut steps = 0;
    let versions: std::collections::BTreeSet<&str> = SCRIPTS.iter().map(|s| s.version).collect();
    assert!(versions.len() > 1, "scripts for more than one version");
    for version in versions {
        let f = start(version).await;
        for script in SCRIPTS.iter().filter(|s| s.version == version) {
            // A fresh service state: FIFO, no rules.
            assert_eq!(set(&f, POLICIES, "fifo").await.0, 0);
            for (i, step) in script.steps.iter().enumerate() {
                let at = format!(
                    "{} step {i} `{}` ({})",
                    script.name,
                    step.text.escape_debug(),
                    step.source
                );
                match (step.param, step.expect) {
                    (Param::Policies | Param::Rule, expect) => {
                        let name = if step.param == Param::Policies {
                            POLICIES
                        } else {
                            RULES
                        };
                        let (code, out, err) = set(&f, name, step.text).await;
                        match expect {
                            Expect::Ok => {
                                assert_eq!(code, 0, "{at}: {err}");
                                // lctl echoes the assignment, ending it with one newline.
                                let echo = format!("{name}={}", step.text);
                                let nl = if echo.ends_with('\n') { "" } else { "\n" };
                                assert_eq!(out, format!("{echo}{nl}"), "{at}");
                            }
                            Expect::Err(errno) => {
                                assert_eq!(
                                    code,
                                    lctl::exit_code(errno),
                                    "{at}: expected {errno}, out {out:?}"
                                );
                                assert!(
                                    err.starts_with("error: set_param: setting ")
                                        && err.contains(&format!(": {}\n", errno.description())),
                                    "{at}: expected {errno}, got {err}"
                                );
                            }
                            other => panic!("{at}: malformed step {other:?}"),
                        }
                    }
                    (Param::ReadRules, Expect::Rules(lines)) => {
                        let (code, out, err) = get(&f, RULES).await;
                        assert_eq!(code, 0, "{at}: {err}");
                        let l = TbfRuleListing::parse(&out).unwrap_or_else(|e| panic!("{at}: {e}"));
                        assert_eq!(l.regular.len(), 2, "{at}: two CPTs");
                        assert_eq!(rule_lines(&l.regular[0]), lines, "{at}");
                        assert!(l.high_priority.is_some(), "{at}: ost_io has an HP queue");
                    }
                    // Not compared live: the ossd applies a write to every head and answers the
                    // first error, where Lustre stops at the first failing head; the two differ
                    // only after a failed write with a partial effect, which is what these steps
                    // check (docs/tbf-conformance.md, "Departures").
                    (Param::ReadHpRules, _) => continue,
                    (Param::ReadRules, Expect::Err(errno)) => {
                        let (code, _, err) = get(&f, RULES).await;
                        assert_eq!(code, lctl::exit_code(errno), "{at}");
                        assert!(
                            err.contains(&format!(": {}\n", errno.description())),
                            "{at}: {err}"
                        );
                    }
                    (Param::ReadPolicies, Expect::Policy(name)) => {
                        let (code, out, err) = get(&f, POLICIES).await;
                        assert_eq!(code, 0, "{at}: {err}");
                        let started = if name == "fifo" {
                            "  - name: tbf\n    state: stopped\n".to_string()
                        } else {
                            format!("  - name: {name}\n    state: started\n")
                        };
                        let regular = out.split("high_priority_requests:").next().unwrap();
                        assert!(regular.contains(&started), "{at}: {out}");
                    }
                    other => panic!("{at}: malformed step {other:?}"),
                }
                steps += 1;
            }
        }
        f.ossd.shutdown().await;
    }
    assert!(steps >= 200, "only {steps} steps replayed");
}
