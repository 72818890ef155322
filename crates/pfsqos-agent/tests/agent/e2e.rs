//! End to end: the agent (`pfsqos-agentd`, a real process) drives the emulated `lctl`
//! (`pfsqos-lctl-emu` linked as `lctl` first on `PATH`) over a live pfsqos ossd. I/O is
//! driven through the wire client (not fio through a mount: see docs/lustre.md).
//!
//! Every wait polls with a bounded deadline; nothing asserts a wall-clock rate.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use pfsqos_core::sched::tbf::TbfRuleListing;
use pfsqos_ossd::Ossd;
use pfsqos_wire::client::{Identity, OssClient};
use pfsqos_wire::protocol::Role;

use crate::common;
use common::*;

struct Site {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    ossd: Option<Ossd>,
    rt: tokio::runtime::Runtime,
    addr: std::net::SocketAddr,
}

impl Site {
    fn new() -> Site {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let (rt, ossd) = emulated_oss(&dir, 2, 2, 4, 2);
        let addr = ossd.local_addr();
        link_lctl(&dir);
        Site {
            _tmp: tmp,
            dir,
            ossd: Some(ossd),
            rt,
            addr,
        }
    }

    /// An `lctl` that fails every `n`-th call (exit 5, garbage on stderr), else runs the
    /// emulation; placed first on PATH instead of the plain link.
    fn make_flaky(&self, n: u32) {
        let bin = self.dir.join("bin");
        std::fs::remove_file(bin.join("lctl")).unwrap();
        let counter = self.dir.join("calls");
        std::fs::write(&counter, "0").unwrap();
        let script = format!(
            "#!/bin/sh\nn=$(cat '{c}')\nn=$((n+1))\necho $n > '{c}'\n\
             if [ $((n % {n})) -eq 0 ]; then echo 'garbage: injected failure' >&2; exit 5; fi\n\
             exec '{emu}' \"$@\"\n",
            c = counter.display(),
            emu = env!("CARGO_BIN_EXE_pfsqos-lctl-emu"),
        );
        pfsqos_testkit::write_script(&bin.join("lctl"), &script);
    }

    fn config(&self, body: &str) -> PathBuf {
        let p = self.dir.join("agent.toml");
        std::fs::write(
            &p,
            format!("rule_prefix = \"pfq\"\ncpts = 2\nlctl_backoff_ms = 10\n{body}"),
        )
        .unwrap();
        p
    }

    fn agent(&self, config: &Path) -> Child {
        let path = format!(
            "{}:{}",
            self.dir.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new(env!("CARGO_BIN_EXE_pfsqos-agentd"))
            .arg("--config")
            .arg(config)
            .env("PATH", path)
            .env("PFSQOS_LCTL_SERVER", self.addr.to_string())
            .env("PFSQOS_LCTL_KEY_FILE", self.dir.join("key"))
            .env("PFSQOS_LCTL_VERSION", "2.17")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap()
    }

    fn lctl_get(&self, name: &str) -> Result<String, String> {
        self.rt.block_on(async {
            let mut c = OssClient::connect(self.addr, SERVER_KEY, Role::Lctl)
                .await
                .unwrap();
            c.get_param(name)
                .await
                .map(|p| p.into_iter().map(|p| p.value).collect::<String>())
                .map_err(|e| e.to_string())
        })
    }

    fn lctl_set(&self, name: &str, value: &str) {
        self.rt.block_on(async {
            let mut c = OssClient::connect(self.addr, SERVER_KEY, Role::Lctl)
                .await
                .unwrap();
            c.set_param(name, value).await.unwrap();
        })
    }

    /// Rules of CPT 0's regular queue: (name, condition, rate).
    fn rules(&self) -> Vec<(String, String, u32)> {
        match self.lctl_get("ost.OSS.ost_io.nrs_tbf_rule") {
            Ok(text) => TbfRuleListing::parse(&text).unwrap().regular[0]
                .rules
                .iter()
                .map(|r| (r.name.clone(), r.conditions.clone(), r.rate_rpcs_per_s))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    fn policy(&self) -> String {
        let text = self.lctl_get("ost.OSS.ost_io.nrs_policies").unwrap();
        pfsqos_agent::agent::running_policy(&text).unwrap()
    }

    fn write(&self, job: &str, ost: u32, object: u64, n: u64) {
        self.rt.block_on(async {
            let mut c = OssClient::connect(self.addr, KEY, Role::Client)
                .await
                .unwrap();
            for i in 0..n {
                c.write(
                    &Identity::test(job),
                    ost,
                    object,
                    i * 4096,
                    &[1u8; 4096],
                    false,
                )
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

fn ours(rules: &[(String, String, u32)]) -> Vec<(String, String, u32)> {
    rules
        .iter()
        .filter(|r| r.0.starts_with("pfq"))
        .cloned()
        .collect()
}

const STATIC: &str = "controller = \"static\"\nost_capacity_rpcs_per_s = 400\n\
    [[jobs]]\nid = \"a.1\"\nnodes = 1\n[[jobs]]\nid = \"b.2\"\nnodes = 3\n";

/// Under `static`, from FIFO: the agent enables `tbf jobid`, writes one rule per job at its
/// node share of the OSS's capacity (2 OSTs x 400 RPC/s), divided over the 2 CPTs; SIGTERM
/// removes its rules and restores FIFO.
#[test]
fn static_rules_appear_and_sigterm_leaves_nothing() {
    let site = Site::new();
    assert_eq!(site.policy(), "fifo");
    let mut agent = site.agent(&site.config(STATIC));
    wait_until("the static rules", || ours(&site.rules()).len() == 2);
    // 800 RPC/s: a gets 1/4 = 200, b 3/4 = 600; per CPT half of each.
    assert_eq!(
        ours(&site.rules()),
        vec![
            ("pfqb_2".into(), "jobid={b.2}".into(), 300),
            ("pfqa_1".into(), "jobid={a.1}".into(), 100),
        ]
    );
    assert_eq!(site.policy(), "tbf jobid");
    signal(&agent, libc::SIGTERM);
    assert!(wait_exit(&mut agent).success());
    assert!(ours(&site.rules()).is_empty());
    assert_eq!(site.policy(), "fifo", "the policy found is restored");
}

/// An administrator's TBF and rule are left alone: the policy is kept, their rule survives
/// the agent's exit, `default` is never touched.
#[test]
fn the_administrators_rules_and_policy_are_left_alone() {
    let site = Site::new();
    site.lctl_set("ost.OSS.ost_io.nrs_policies", "tbf jobid");
    site.lctl_set(
        "ost.OSS.ost_io.nrs_tbf_rule",
        "start adm jobid={x.9} rate=9",
    );
    let mut agent = site.agent(&site.config(STATIC));
    wait_until("the static rules", || ours(&site.rules()).len() == 2);
    signal(&agent, libc::SIGINT);
    assert!(wait_exit(&mut agent).success());
    let left = site.rules();
    assert_eq!(
        left.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        vec!["adm", "default"]
    );
    assert_eq!(left[1].2, 10_000, "default untouched");
    assert_eq!(site.policy(), "tbf jobid");
}

/// Killed with SIGKILL, the agent leaves its rules; a new instance adopts the ones it still
/// wants (a `change`, no gap in the limit, no `start` refused as a duplicate), stops the one
/// its configuration no longer wants and the one whose name it wants for another job, and
/// SIGTERM then leaves none.
#[test]
fn after_sigkill_a_restart_adopts_or_removes_the_stale_rules() {
    let site = Site::new();
    let metrics = free_port();
    // Before STATIC: its `[[jobs]]` tables would take the key.
    let config = site.config(&format!("metrics_listen = \"{metrics}\"\n{STATIC}"));
    let mut first = site.agent(&config);
    wait_until("the static rules", || ours(&site.rules()).len() == 2);
    signal(&first, libc::SIGKILL);
    wait_exit(&mut first);
    let stale = ours(&site.rules());
    assert_eq!(stale.len(), 2, "SIGKILL leaves the rules");
    // One rule name now on another job (as a name an earlier configuration gave), and a rule
    // the configuration no longer wants.
    let (renamed, kept) = (stale[1].0.clone(), stale[0].clone());
    site.lctl_set("ost.OSS.ost_io.nrs_tbf_rule", &format!("stop {renamed}"));
    site.lctl_set(
        "ost.OSS.ost_io.nrs_tbf_rule",
        &format!("start {renamed} jobid={{other.9}} rate=7"),
    );
    site.lctl_set(
        "ost.OSS.ost_io.nrs_tbf_rule",
        "start pfqold jobid={gone} rate=5",
    );
    let mut second = site.agent(&config);
    let mut text = String::new();
    wait_until("the stale rules adopted or removed", || {
        text = scrape(&metrics);
        metric(&text, "pfsqos_agent_rules_adopted_total") == Some(1.0)
            && metric(&text, "pfsqos_agent_stale_rules_removed_total") == Some(2.0)
    });
    let mut now = ours(&site.rules());
    now.sort();
    let mut want = stale.clone();
    want.sort();
    assert_eq!(
        now, want,
        "the same rules on the same jobs at the same rates"
    );
    assert!(now.contains(&kept));
    // Only the renamed job's rule was started; nothing was refused.
    assert!(
        text.contains("pfsqos_agent_rule_writes_total{op=\"start\"} 1\n"),
        "{text}"
    );
    assert_eq!(
        metric(&text, "pfsqos_agent_writes_refused_total"),
        Some(0.0)
    );
    signal(&second, libc::SIGTERM);
    assert!(wait_exit(&mut second).success());
    assert!(ours(&site.rules()).is_empty());
}

/// A user's byte limit reaches a job of that user the agent has never seen: at start the agent writes the first-sight rule `jobid={*.500}` (the
/// limit for one job, 100 MiB/s at full 4 MiB RPCs over 2 CPTs: 12 RPC/s each) before
/// `default`; the new job's first RPCs are classed under it by the ossd's TBF (its `ref`
/// count), a job of another user is not; SIGTERM removes it. The period is long, so no period
/// runs meanwhile: what binds the job is the rule written at start, not one written after
/// job_stats showed it.
#[test]
fn a_new_job_of_a_limited_user_is_limited_from_its_first_rpc() {
    let site = Site::new();
    let config = site.config(
        "controller = \"static\"\nost_capacity_rpcs_per_s = 400\nperiod_ms = 600000\n\
         [[limits]]\nuser = 500\nbytes_per_s = 104857600\n",
    );
    let mut agent = site.agent(&config);
    wait_until("the first-sight rule", || {
        assert!(agent.try_wait().unwrap().is_none(), "the agent died");
        ours(&site.rules()).iter().any(|r| r.0 == "pfq_f0")
    });
    let rules = site.rules();
    let at = rules.iter().position(|r| r.0 == "pfq_f0").unwrap();
    assert_eq!(rules[at].1, "jobid={*.500}");
    assert_eq!(rules[at].2, 12);
    assert_eq!(rules.last().unwrap().0, "default", "{rules:?}");
    site.write("never.seen.500", 0, 1, 3);
    site.write("other.600", 1, 1, 3);
    // Classes bound to the rule, summed over partitions and both queues.
    let refs = || -> u64 {
        let text = site.lctl_get("ost.OSS.ost_io.nrs_tbf_rule").unwrap();
        let listing = TbfRuleListing::parse(&text).unwrap();
        std::iter::once(&listing.regular)
            .chain(listing.high_priority.as_ref())
            .flatten()
            .flat_map(|cpt| cpt.rules.iter())
            .filter(|r| r.name == "pfq_f0")
            .map(|r| r.refs)
            .sum()
    };
    // One class (never.seen.500); other.600 is `default`'s.
    assert_eq!(refs(), 1);
    signal(&agent, libc::SIGTERM);
    assert!(wait_exit(&mut agent).success());
    assert!(ours(&site.rules()).is_empty(), "{:?}", site.rules());
}

/// AdapTBF with an lctl that fails every 4th call: the agent keeps deciding, gives the
/// writing job a rule, counts the failures in its metrics, and still cleans up.
#[test]
fn adaptbf_survives_a_flaky_lctl_and_says_so() {
    let site = Site::new();
    site.make_flaky(4);
    let metrics = free_port();
    let config = site.config(&format!(
        "controller = \"adaptbf\"\nost_capacity_rpcs_per_s = 400\nperiod_ms = 100\n\
         lctl_retries = 3\nmetrics_listen = \"{metrics}\"\n"
    ));
    let mut agent = site.agent(&config);
    let end = Instant::now() + DEADLINE;
    let mut object = 0;
    loop {
        object += 1;
        site.write("w.1", 0, object, 16);
        site.write("r.2", 1, object, 4);
        let text = scrape(&metrics);
        let periods = metric(&text, "pfsqos_agent_periods_total").unwrap_or(0.0);
        let errors = metric(&text, "pfsqos_agent_lctl_errors_total").unwrap_or(0.0);
        let has_rule = ours(&site.rules()).iter().any(|r| r.1 == "jobid={w.1}");
        if periods >= 5.0 && errors >= 1.0 && has_rule {
            break;
        }
        assert!(Instant::now() < end, "no progress: {text}");
        assert!(agent.try_wait().unwrap().is_none(), "the agent died");
    }
    signal(&agent, libc::SIGTERM);
    assert!(wait_exit(&mut agent).success());
    assert!(ours(&site.rules()).is_empty(), "{:?}", site.rules());
}

/// The emulated lctl over the live ossd prints job_stats in the chosen version's layout and
/// refuses what Lustre refuses, with lctl's message and the errno as exit status.
#[test]
fn the_emulated_lctl_prints_each_versions_layout_and_lustres_refusals() {
    let site = Site::new();
    site.write("dd.500", 0, 1, 3);
    let emu = |version: &str, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_pfsqos-lctl-emu"))
            .args(args)
            .env("PFSQOS_LCTL_SERVER", site.addr.to_string())
            .env("PFSQOS_LCTL_KEY_FILE", site.dir.join("key"))
            .env("PFSQOS_LCTL_VERSION", version)
            .output()
            .unwrap()
    };
    for (v, has_start, has_hist, empty_ost) in [
        ("2.12", false, false, true),
        ("2.15", true, false, true),
        ("2.16", true, true, true),
        ("2.17", true, true, false),
    ] {
        let out = emu(v, &["get_param", "obdfilter.*.job_stats"]);
        assert!(out.status.success(), "{v}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("- job_id:          dd.500\n"), "{v}: {text}");
        assert_eq!(text.contains("start_time:"), has_start, "{v}: {text}");
        assert_eq!(text.contains("hist: {"), has_hist, "{v}: {text}");
        assert_eq!(
            text.contains("obdfilter.pfsqos-OST0001.job_stats=job_stats:\n"),
            empty_ost,
            "{v}: {text}"
        );
        let parsed = pfsqos_core::jobstats::parse_lctl_job_stats(&text).unwrap();
        assert_eq!(parsed[0].1[0].counters[1].samples, 3, "{v}");
    }
    // TBF is not running: a rule is refused as Lustre refuses it.
    let out = emu(
        "2.17",
        &[
            "set_param",
            "ost.OSS.ost_io.nrs_tbf_rule=start a jobid={a} rate=5",
        ],
    );
    assert_eq!(out.status.code(), Some(22));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "error: set_param: setting /sys/kernel/debug/lustre/ost/OSS/ost_io/nrs_tbf_rule=start a jobid={a} rate=5: Invalid argument\n"
    );
    assert!(emu(
        "2.17",
        &["set_param", "ost.OSS.ost_io.nrs_policies=tbf jobid"]
    )
    .status
    .success());
    let start = "ost.OSS.ost_io.nrs_tbf_rule=start a jobid={a} rate=5";
    assert!(emu("2.17", &["set_param", start]).status.success());
    let out = emu("2.17", &["set_param", start]);
    assert_eq!(out.status.code(), Some(17), "EEXIST");
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .ends_with(": File exists\n"));
    let out = emu(
        "2.17",
        &["set_param", "ost.OSS.ost_io.nrs_tbf_rule=stop default"],
    );
    assert_eq!(out.status.code(), Some(1), "EPERM");
    let out = emu("2.17", &["get_param", "no.such.param"]);
    assert_eq!(out.status.code(), Some(2), "ENOENT");
}
