//! The Lustre agent end to end with real fio: a live ossd, mds and FUSE mounts (the real `pfsqos` binary, as in `fio.rs`),
//! the emulated `lctl` backed by that ossd first on `PATH` (`pfsqos lctl-emu`, the code of
//! `pfsqos-lctl-emu`), and the agent as a real process (`pfsqos agent`, the code of
//! `pfsqos-agentd`) reading job_stats and writing `tbf jobid` rules through it. fio jobs with
//! distinct job ids (`SLURM_JOB_ID`, one mount each: one client node per job) write through
//! the mounts.
//!
//! The simulator (`pfsqos-sim`, in the test) runs the same scenario: one OST whose device is
//! the ossd's ceiling, the same token capacity, the same jobs and node counts, the same byte
//! limits, continuous 1 MiB writers. Each job's share of what the OST served over a window is
//! compared live against simulated. Shares, not rates: a loaded machine makes every job
//! slower, never a share different, as long as every job stays held by its rule (the
//! measurement's hypothesis, checked per window; a window where a job was starved by the CPU
//! and not by its rule is measured again, a bounded number of times).
//!
//! Skips (passes with a message on stderr) without fio, /dev/fuse or root.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{free_local_addr, pfsqos, Cluster, Proc, MIB};
use pfsqos_agent::agent::ControllerRates;
use pfsqos_core::control::rules::{JobRate, JobRules};
use pfsqos_core::control::{
    tbf_rate_rpcs_per_s, ControlWrite, Controller, Decision, DomainWrite, Observation,
};
use pfsqos_core::model::JobId;
use pfsqos_core::sched::tbf::TbfRuleListing;

/// Longest any wait on progress may take (a hang, never a rate).
const WAIT_MAX: Duration = Duration::from_secs(60);
/// RPC size of the mounts (`Cluster::mount`'s `--brw-size-bytes`) and of the agent's
/// conversion: one 1 MiB fio block is one RPC, one TBF token.
const BRW_BYTES: u64 = 1 << 20;
/// Windows measured at most before the test gives up on its hypothesis.
const WINDOWS_MAX: usize = 4;
/// Interval between samples of job_stats and rules in a window (each sample runs two
/// `pfsqos lctl` processes: sampling faster only loads the machine the jobs share).
const SAMPLE_INTERVAL: Duration = Duration::from_millis(200);
/// A window counts only if every job moved at least this fraction of what its rule let
/// through (rate x window): it was held by its rule, not starved by the CPU.
const RULE_BOUND_FRACTION: f64 = 0.85;
/// Largest difference allowed between a job's live and simulated share of the bytes moved.
const SHARE_TOLERANCE: f64 = 0.03;
/// Largest spread of a job's rule over a window that still counts as holding still: AdapTBF
/// hands out whole tokens with carried remainders (eq. 21-25), and the agent's job_stats polls
/// jitter (see [`adaptbf_shares_as_in_the_simulator`]), so a job's rule steps one token either
/// way from period to period; a larger step is lending.
const RULE_SPREAD_MAX_RPCS_PER_S: u64 = 2;
/// Largest difference allowed between a job's live rule (its time-weighted mean over the
/// window) and the simulator's.
const RULE_MEAN_TOLERANCE_RPCS_PER_S: f64 = 1.0;

/// Why the test cannot run here, if it cannot.
fn missing_prerequisite() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (the FUSE mounts need it)".into());
    }
    if !std::path::Path::new("/dev/fuse").exists() {
        return Some("no /dev/fuse (FUSE kernel module)".into());
    }
    let fio = Command::new("fio")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !fio.is_ok_and(|s| s.success()) {
        return Some("no fio on PATH (scripts/setup.sh installs it)".into());
    }
    None
}

/// A scenario's numbers, given once to the live site and to the simulator.
struct Case {
    /// The agent's controller spec (and the simulator's policy).
    controller: &'static str,
    /// The ossd's device ceiling and the simulated device's bandwidth.
    ceiling_bytes_per_s: u64,
    /// The OST's token capacity (AdapTBF's `T_i`, `static`'s base): the agent's
    /// `ost_capacity_rpcs_per_s` and the simulated OSS's `capacity_rpcs_per_s`.
    capacity_rpcs_per_s: u64,
    /// (job id, node count) of each fio job.
    jobs: &'static [(&'static str, u32)],
    /// Administrator byte limits: (job id, bytes/s).
    limits: &'static [(&'static str, u64)],
}

/// One live site: the cluster, the emulated lctl's directory and the agent.
struct Site {
    // Drop order: the fio jobs and the agent go before the cluster (whose mounts go before
    // its daemons).
    fio: Vec<Proc>,
    agent: Option<Proc>,
    cluster: Cluster,
}

impl Site {
    fn start(case: &Case) -> Site {
        let cluster = Cluster::start(
            case.jobs.len(),
            &[
                "--ceiling-bytes-per-s",
                &case.ceiling_bytes_per_s.to_string(),
            ],
        );
        let dir = cluster.tmp.path().to_path_buf();
        // The emulated lctl, first on the agent's PATH.
        let bin = dir.join("bin");
        std::fs::create_dir(&bin).unwrap();
        let lctl = bin.join("lctl");
        pfsqos_testkit::write_script(
            &lctl,
            &format!(
                "#!/bin/sh\nexec '{}' lctl-emu \"$@\"\n",
                env!("CARGO_BIN_EXE_pfsqos")
            ),
        );
        let mut config = format!(
            "controller = \"{}\"\nost_capacity_rpcs_per_s = {}\nbrw_size_bytes = {BRW_BYTES}\n\
             cpts = 1\nrule_prefix = \"pfq\"\nlctl_backoff_ms = 10\n\
             metrics_listen = \"{}\"\n",
            case.controller,
            case.capacity_rpcs_per_s,
            free_local_addr()
        );
        for (job, nodes) in case.jobs {
            config.push_str(&format!("[[jobs]]\nid = \"{job}\"\nnodes = {nodes}\n"));
        }
        for (job, bytes_per_s) in case.limits {
            config.push_str(&format!(
                "[[limits]]\njob = \"{job}\"\nbytes_per_s = {bytes_per_s}\n"
            ));
        }
        let config_path = dir.join("agent.toml");
        std::fs::write(&config_path, config).unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let child = pfsqos()
            .arg("agent")
            .arg("--config")
            .arg(&config_path)
            .env("PATH", path)
            .env("PFSQOS_LCTL_SERVER", &cluster.oss_addr)
            .env("PFSQOS_LCTL_KEY_FILE", &cluster.server_key)
            .env("PFSQOS_LCTL_VERSION", "2.17")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("agent.log")).unwrap())
            .spawn()
            .unwrap();
        Site {
            fio: Vec::new(),
            agent: Some(Proc {
                child,
                mountpoint: None,
            }),
            cluster,
        }
    }

    fn agent_log(&self) -> String {
        std::fs::read_to_string(self.cluster.tmp.path().join("agent.log")).unwrap_or_default()
    }

    /// Fails with the agent's log if it has exited.
    fn check_agent(&mut self) {
        let agent = self.agent.as_mut().unwrap();
        assert!(
            !agent.has_exited(),
            "the agent exited: {:?}\n{}",
            agent.child.try_wait(),
            self.agent_log()
        );
    }

    /// The agent's rules (prefix `pfq`) on CPT 0's regular queue: job -> rate (RPC/s).
    fn agent_rules(&self) -> BTreeMap<String, u64> {
        let out = pfsqos()
            .args(["lctl", "--server", &self.cluster.oss_addr, "--key-file"])
            .arg(&self.cluster.server_key)
            .args(["get_param", "-n", "ost.OSS.ost_io.nrs_tbf_rule"])
            .output()
            .unwrap();
        if !out.status.success() {
            return BTreeMap::new(); // TBF not started yet
        }
        let text = String::from_utf8(out.stdout).unwrap();
        let listing = TbfRuleListing::parse(&text).unwrap();
        listing.regular[0]
            .rules
            .iter()
            .filter(|r| r.name.starts_with("pfq"))
            .filter_map(|r| {
                let job = r.conditions.strip_prefix("jobid={")?.strip_suffix('}')?;
                Some((job.to_string(), u64::from(r.rate_rpcs_per_s)))
            })
            .collect()
    }

    /// Starts a sequential 1 MiB writer under `SLURM_JOB_ID=job` on mount `mount`.
    fn fio(&mut self, mount: usize, job: &str) {
        let child = Command::new("fio")
            .current_dir(&self.cluster.mnts[mount])
            .env("SLURM_JOB_ID", job)
            .args([
                &format!("--name=job{job}"),
                &format!("--filename=data.{job}"),
                "--rw=write",
                "--bs=1M",
                "--size=4G",
                "--ioengine=psync",
                "--time_based",
                "--runtime=120",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.fio.push(Proc {
            child,
            mountpoint: None,
        });
    }

    /// Polls job_stats until every job of `jobs` has written `bytes` more than in `base`.
    fn wait_written(
        &mut self,
        base: &BTreeMap<String, u64>,
        jobs: &[&str],
        bytes: u64,
    ) -> BTreeMap<String, u64> {
        let deadline = Instant::now() + WAIT_MAX;
        loop {
            let now = self.cluster.written_bytes();
            let moved =
                |j: &str| now.get(j).copied().unwrap_or(0) - base.get(j).copied().unwrap_or(0);
            if jobs.iter().all(|j| moved(j) >= bytes) {
                return now;
            }
            self.check_agent();
            assert!(
                Instant::now() < deadline,
                "jobs {jobs:?} did not each write {bytes} bytes in {WAIT_MAX:?}: {now:?}\n{}",
                self.agent_log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        // The fio jobs first (their files are on the mounts), then the agent (its rules go
        // with a clean exit), then the cluster.
        self.fio.clear();
        if let Some(mut agent) = self.agent.take() {
            if !agent.has_exited() {
                agent.signal("TERM");
                agent.wait_exit();
            }
        }
    }
}

/// How long the agent's rules must hold still (each job's within
/// [`RULE_SPREAD_MAX_RPCS_PER_S`]) before the windows are measured: three of the slowest
/// controller's periods.
const RULES_STILL: Duration = Duration::from_secs(3);

/// Polls the agent's rules until, for `still`, the same jobs have had rules whose rates stayed
/// within [`RULE_SPREAD_MAX_RPCS_PER_S`] (bounded by [`WAIT_MAX`]; a controller that never
/// settles fails here, with what it wrote).
fn wait_rules_still(site: &mut Site, still: Duration) {
    let deadline = Instant::now() + WAIT_MAX;
    let range_of = |r: &BTreeMap<String, u64>| -> BTreeMap<String, (u64, u64)> {
        r.iter().map(|(j, &v)| (j.clone(), (v, v))).collect()
    };
    let first = site.agent_rules();
    let mut range = range_of(&first);
    let mut since = Instant::now();
    let mut seen = vec![first];
    while since.elapsed() < still {
        site.check_agent();
        assert!(
            Instant::now() < deadline,
            "the agent's rules never held still for {still:?} in {WAIT_MAX:?}: {seen:?}"
        );
        std::thread::sleep(SAMPLE_INTERVAL);
        let now = site.agent_rules();
        if seen.last() != Some(&now) && seen.len() < 64 {
            seen.push(now.clone());
        }
        let same_jobs = now.keys().eq(range.keys());
        let mut within = same_jobs;
        if same_jobs {
            for (job, &v) in &now {
                let r = range.get_mut(job).expect("same jobs");
                *r = (r.0.min(v), r.1.max(v));
                within &= r.1 - r.0 <= RULE_SPREAD_MAX_RPCS_PER_S;
            }
        }
        if !within {
            range = range_of(&now);
            since = Instant::now();
        }
    }
}

/// What one live window measured.
struct Window {
    /// Bytes each job moved.
    moved: BTreeMap<String, u64>,
    secs: f64,
    /// The agent's rules through the window (job -> RPC/s): every distinct set sampled, in
    /// order (one when they held still).
    rules: Vec<BTreeMap<String, u64>>,
    /// Per job: the RPCs its rules let through over the window (each sampled rate for the
    /// time until the next sample); `None` when a sample showed the job without a rule.
    allowed_rpcs: BTreeMap<String, Option<f64>>,
}

impl Window {
    /// Per job: lowest and highest rate its rules had in the window.
    fn rate_range(&self, job: &str) -> Option<(u64, u64)> {
        let rates: Option<Vec<u64>> = self.rules.iter().map(|r| r.get(job).copied()).collect();
        let rates = rates?;
        Some((*rates.iter().min()?, *rates.iter().max()?))
    }
}

/// Measures one window: until the job with the lowest rule has moved `bytes_min`, sampling the
/// agent's rules.
fn measure_window(site: &mut Site, jobs: &[&str], bytes_min: u64) -> Window {
    let rules0 = site.agent_rules();
    let before = site.cluster.written_bytes();
    let t0 = Instant::now();
    let slowest = *jobs
        .iter()
        .min_by_key(|j| rules0.get(**j).copied().unwrap_or(u64::MAX))
        .unwrap();
    let mut rules_seen = vec![rules0.clone()];
    let mut allowed_rpcs: BTreeMap<String, Option<f64>> =
        jobs.iter().map(|j| (j.to_string(), Some(0.0))).collect();
    let (mut rules_now, mut since) = (rules0.clone(), t0);
    let deadline = t0 + WAIT_MAX;
    let after = loop {
        let now = site.cluster.written_bytes();
        // The rules sampled last held since then.
        let t = Instant::now();
        for (job, allowed) in allowed_rpcs.iter_mut() {
            *allowed = match (*allowed, rules_now.get(job)) {
                (Some(a), Some(&rate)) => Some(a + rate as f64 * (t - since).as_secs_f64()),
                _ => None,
            };
        }
        since = t;
        let moved =
            now.get(slowest).copied().unwrap_or(0) - before.get(slowest).copied().unwrap_or(0);
        if moved >= bytes_min {
            break now;
        }
        site.check_agent();
        assert!(
            Instant::now() < deadline,
            "job {slowest} did not write {bytes_min} bytes in {WAIT_MAX:?}: {now:?}\n{}",
            site.agent_log()
        );
        rules_now = site.agent_rules();
        if !rules_seen.contains(&rules_now) {
            rules_seen.push(rules_now.clone());
        }
        std::thread::sleep(SAMPLE_INTERVAL);
    };
    let secs = t0.elapsed().as_secs_f64();
    let moved = jobs
        .iter()
        .map(|j| {
            let m = after.get(*j).copied().unwrap_or(0) - before.get(*j).copied().unwrap_or(0);
            (j.to_string(), m)
        })
        .collect();
    Window {
        moved,
        secs,
        rules: rules_seen,
        allowed_rpcs,
    }
}

/// Each job's share of the bytes all of them moved.
fn shares(moved: &BTreeMap<String, u64>) -> BTreeMap<String, f64> {
    let total: u64 = moved.values().sum();
    assert!(total > 0, "nothing moved: {moved:?}");
    moved
        .iter()
        .map(|(j, &b)| (j.clone(), b as f64 / total as f64))
        .collect()
}

/// The administrator's byte limits applied to a controller's rules in the simulator as the
/// agent applies them (`pfsqos_agent::agent`): the controller's rates read with the agent's
/// `ControllerRates`, each limited job's rate lowered to its limit in RPC/s (the simulator's
/// RPCs are all `brw_size`, so its observed mean RPC size is that), and one rule per job
/// written with `JobRules`. One domain (one OSS), as the agent has.
struct SimByteLimits {
    inner: Box<dyn Controller>,
    limits_rpcs_per_s: BTreeMap<JobId, u64>,
    rates: ControllerRates,
    rules: JobRules,
}

impl SimByteLimits {
    fn limit(&mut self, obs: &Observation, decision: Decision) -> Decision {
        assert_eq!(obs.domains.len(), 1, "one OSS, as one agent has");
        let domain = obs.domains[0].domain;
        let mut writes = Vec::new();
        for w in decision.writes {
            match &w.write {
                ww if ww.tbf_rule_text().is_some() => self.rates.absorb([ww]),
                _ => writes.push(w),
            }
        }
        let mut want = self.rates.rates();
        for (job, &limit) in &self.limits_rpcs_per_s {
            let e = want.entry(*job).or_insert(limit);
            *e = (*e).min(limit);
        }
        let desired = want
            .into_iter()
            .map(|(job, value)| {
                (
                    job,
                    JobRate {
                        value,
                        priority: None,
                    },
                )
            })
            .collect();
        for cmd in self.rules.reconcile(&desired) {
            writes.push(DomainWrite {
                domain,
                write: ControlWrite::tbf_rule(cmd.to_string()),
            });
        }
        Decision {
            writes,
            client_writes: decision.client_writes,
        }
    }
}

impl Controller for SimByteLimits {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn setup(&mut self, initial: &Observation) -> Decision {
        let d = self.inner.setup(initial);
        self.limit(initial, d)
    }
    fn period_ns(&self) -> Option<u64> {
        // The limits are written at the first period (the agent's first `apply`), so a
        // controller without a period of its own still gets them at setup.
        self.inner.period_ns()
    }
    fn decide(&mut self, observation: &Observation) -> Decision {
        let d = self.inner.decide(observation);
        self.limit(observation, d)
    }
}

/// The simulated run of `case`: each job's share of the bytes moved from `warmup_s` on, and
/// the rules in force at the end (job -> RPC/s).
fn simulate(case: &Case) -> (BTreeMap<String, f64>, BTreeMap<String, u64>) {
    const DURATION_S: f64 = 30.0;
    const WARMUP_S: f64 = 5.0;
    const BIN_MS: u64 = 100;
    let ceiling_mib_s = case.ceiling_bytes_per_s as f64 / MIB;
    let mut toml = format!(
        "name = \"agent-fio\"\n[simulation]\nduration_s = {DURATION_S}\nbin_ms = {BIN_MS}\n\
         [cluster]\nclients = {clients}\nbrw_size = {BRW_BYTES}\n\
         [[device]]\nname = \"ceiling\"\n\
         read = [{{ size = {BRW_BYTES}, bandwidth_mib_s = {ceiling_mib_s} }}]\n\
         write = [{{ size = {BRW_BYTES}, bandwidth_mib_s = {ceiling_mib_s} }}]\n\
         [[oss]]\nname = \"oss0\"\nosts = 1\ndevice = \"ceiling\"\ncpts = 1\n\
         capacity_rpcs_per_s = {capacity}\n",
        clients = case.jobs.len(),
        capacity = case.capacity_rpcs_per_s,
    );
    for (i, (job, nodes)) in case.jobs.iter().enumerate() {
        toml.push_str(&format!(
            "[[job]]\nid = \"{job}\"\nnodes = {nodes}\nclients = [{i}]\n\
             [[job.processes]]\nrw = \"write\"\nbs = \"1M\"\nsize = \"4G\"\n"
        ));
    }
    let scenario = pfsqos_sim::Scenario::from_toml_str(&toml, "agent-fio").unwrap();
    let limits_rpcs_per_s: BTreeMap<JobId, u64> = case
        .limits
        .iter()
        .map(|(j, b)| {
            (
                JobId::new(j).unwrap(),
                tbf_rate_rpcs_per_s(*b as f64, BRW_BYTES),
            )
        })
        .collect();
    let out = pfsqos_sim::run_wrapped(
        &scenario,
        case.controller,
        1,
        &mut |inner| {
            Box::new(SimByteLimits {
                inner,
                limits_rpcs_per_s: limits_rpcs_per_s.clone(),
                rates: ControllerRates::default(),
                rules: JobRules::new(),
            })
        },
        &mut |_, _| {},
    )
    .unwrap();
    let first_bin = (WARMUP_S * 1000.0) as usize / BIN_MS as usize;
    let moved: BTreeMap<String, u64> = out
        .jobs
        .iter()
        .map(|j| {
            let bytes = j
                .bytes_per_ost_bin
                .iter()
                .flat_map(|(_, bins)| bins.iter().skip(first_bin))
                .sum();
            (j.job_id.clone(), bytes)
        })
        .collect();
    let mut rates = ControllerRates::default();
    rates.absorb(out.control_log.iter().map(|e| &e.write));
    let rules = rates
        .rates()
        .into_iter()
        .map(|(j, r)| (j.as_str().to_string(), r))
        .collect();
    (shares(&moved), rules)
}

/// Runs `case` live and in the simulator and compares the shares. `window_bytes`: what the
/// job with the lowest rule moves per window.
fn live_shares_match_the_simulator(case: &Case, window_bytes: u64) {
    if let Some(why) = missing_prerequisite() {
        pfsqos_testkit::skip("live_shares_match_the_simulator", &why);
        return;
    }
    let (sim_shares, sim_rules) = simulate(case);
    let jobs: Vec<&str> = case.jobs.iter().map(|(j, _)| *j).collect();
    let mut site = Site::start(case);
    // The agent has enabled TBF and written a rule for every job (static: at setup and its
    // first period; adaptbf: once the jobs show in job_stats, so the writers start first).
    for (i, job) in jobs.iter().enumerate() {
        site.fio(i, job);
    }
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        let rules = site.agent_rules();
        if jobs.iter().all(|j| rules.contains_key(*j)) {
            break;
        }
        site.check_agent();
        assert!(
            Instant::now() < deadline,
            "the agent wrote no rule for every job in {WAIT_MAX:?}: {rules:?}\n{}",
            site.agent_log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Warm-up: every job has moved 8 MiB under the agent's rules (write-behind full, the
    // controller past its first periods).
    let base = site.cluster.written_bytes();
    site.wait_written(&base, &jobs, 8 << 20);
    // And the controller settled: its rules held still for a while (AdapTBF started with
    // the job whose writer came first alone and takes back lent tokens over several periods;
    // a window over that would be refused below anyway, this only spares the windows).
    wait_rules_still(&mut site, RULES_STILL);
    let mut refused = Vec::new();
    for window in 1..=WINDOWS_MAX {
        let w = measure_window(&mut site, &jobs, window_bytes);
        let live = shares(&w.moved);
        println!(
            "{} window {window}: {:.2} s, moved {:?}, rules {:?}; live shares {live:?}, \
             simulated {sim_shares:?} (simulated rules {sim_rules:?})",
            case.controller, w.secs, w.moved, w.rules
        );
        // The hypothesis: every job was held by its rule (it moved at least
        // `RULE_BOUND_FRACTION` of what its rules let through) and the rules held still up
        // to AdapTBF's rounding (`RULE_SPREAD_MAX_RPCS_PER_S`); a larger move is lending,
        // which means some job did not use its tokens, so the jobs were not all backlogged.
        let mut broken = Vec::new();
        let mut mean_rates = BTreeMap::new();
        for job in &jobs {
            let (Some((lo, hi)), Some(allowed)) = (w.rate_range(job), w.allowed_rpcs[*job]) else {
                broken.push(format!("job {job} had no rule in some sample"));
                continue;
            };
            if hi - lo > RULE_SPREAD_MAX_RPCS_PER_S {
                broken.push(format!("job {job}'s rule moved from {lo} to {hi} RPC/s"));
            }
            let moved_rpcs = w.moved[*job] as f64 / BRW_BYTES as f64;
            if moved_rpcs < RULE_BOUND_FRACTION * allowed {
                broken.push(format!(
                    "job {job} moved {moved_rpcs:.1} RPCs, less than {RULE_BOUND_FRACTION} \
                     of the {allowed:.1} its rules let through"
                ));
            }
            mean_rates.insert(job.to_string(), allowed / w.secs);
        }
        if !broken.is_empty() {
            refused.push(format!("window {window}: {broken:?} (rules {:?})", w.rules));
            continue;
        }
        for job in &jobs {
            let (l, s) = (live[*job], sim_shares[*job]);
            assert!(
                (l - s).abs() <= SHARE_TOLERANCE,
                "{}: job {job}'s live share {l:.3} is not the simulated {s:.3} within \
                 {SHARE_TOLERANCE} (live {live:?}, simulated {sim_shares:?}; live rules \
                 {:?}, simulated rules {sim_rules:?})",
                case.controller,
                w.rules
            );
            // The agent's rules over the window (their time-weighted mean) are the
            // simulator's at its end: the same controller reached the same decision.
            let sim_rate = sim_rules[*job] as f64;
            assert!(
                (mean_rates[*job] - sim_rate).abs() <= RULE_MEAN_TOLERANCE_RPCS_PER_S,
                "{}: job {job}'s live rule averaged {:.2} RPC/s, the simulator's is {sim_rate} \
                 (live rules {:?})",
                case.controller,
                mean_rates[*job],
                w.rules
            );
        }
        return;
    }
    panic!(
        "{}: in {WINDOWS_MAX} windows the jobs never all stayed held by steady rules, so the \
         shares cannot be compared: {refused:#?}",
        case.controller
    );
}

/// `static` with an administrator's byte limit: two continuous writers with 1 and 3 nodes on
/// an OST of 32 RPC/s (rules of 8 and 24 RPC/s by node share), the second limited to
/// 12 MiB/s (12 RPC/s of 1 MiB), under a 64 MiB/s ceiling so that the rules, not the device,
/// hold the jobs: shares 8:12, 0.4 and 0.6 (without the limit they would be 0.25 and 0.75).
#[test]
fn static_rules_and_a_byte_limit_share_as_in_the_simulator() {
    live_shares_match_the_simulator(
        &Case {
            controller: "static",
            ceiling_bytes_per_s: 64 << 20,
            capacity_rpcs_per_s: 32,
            jobs: &[("101", 1), ("202", 3)],
            limits: &[("202", 12 << 20)],
        },
        64 << 20,
    );
}

/// `adaptbf` (1 s periods): the same two writers with 1 and 3 nodes, both backlogged, on an
/// OST of 24 tokens/s under a 64 MiB/s ceiling: AdapTBF gives them tokens by priority, 6 and
/// 18 per period (rules of 6 and 18 RPC/s), and the simulator's AdapTBF on the same numbers
/// converges to the same rules and shares, 0.25 and 0.75.
///
/// Why 1 s and not the paper's 100 ms: AdapTBF measures a job's demand as the count of RPCs
/// it was served between two polls of job_stats. The polls are regular (492-542 ms apart at
/// 500 ms, measured once), but whole RPCs do not complete evenly into periods, so the count is
/// off by one either way; a job held at 2 tokens per 500 ms period that is seen serving 1
/// counts as not needing half of them, and AdapTBF lends them away (the likely cause, as a
/// writer starved by the CPU would be, of the one failure in the first four runs at 500 ms,
/// 2026-11-27: the 1-node job's share fell to 0.17-0.21 over three windows, each refused
/// because the rules moved). The simulator's completions are evenly spaced. At 6 tokens per
/// 1 s period one RPC less is a sixth of the allocation, not a half.
#[test]
fn adaptbf_shares_as_in_the_simulator() {
    live_shares_match_the_simulator(
        &Case {
            controller: "adaptbf:period_ms=1000",
            ceiling_bytes_per_s: 64 << 20,
            capacity_rpcs_per_s: 24,
            jobs: &[("101", 1), ("202", 3)],
            limits: &[],
        },
        32 << 20,
    );
}

/// `pfsqos lctl-emu` is the emulation (`pfsqos-lctl-emu`'s code) with lctl's own arguments
/// passed through unread (`-n` included) and its exit status kept: EINVAL (22) without its
/// environment, `CMD_HELP` (4) for `get_param -n` without a parameter. Needs no mount.
#[test]
fn the_hidden_lctl_emu_passes_lctls_arguments_and_exit_status() {
    let bare = pfsqos()
        .args(["lctl-emu", "get_param", "-n", "x"])
        .env_remove("PFSQOS_LCTL_SERVER")
        .output()
        .unwrap();
    assert_eq!(bare.status.code(), Some(22), "{bare:?}");
    let usage = pfsqos()
        .args(["lctl-emu", "get_param", "-n"])
        .env("PFSQOS_LCTL_SERVER", "127.0.0.1:9")
        .env("PFSQOS_LCTL_KEY_FILE", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(4), "{usage:?}");
    assert_eq!(
        String::from_utf8_lossy(&usage.stderr),
        "usage: get_param [-n] PARAM...\n"
    );
}
