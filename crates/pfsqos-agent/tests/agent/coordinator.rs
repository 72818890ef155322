//! The coordinator: two agents on two OSSs (in-memory OSSs speaking Lustre's parameter
//! formats) under GIFT decide what the shared controller decides for the same observations;
//! a killed coordinator leaves the agents in the safe state within the bound; unauthenticated
//! or foreign peers are refused.
//!
//! Waits poll with a bounded deadline; no wall-clock rate is asserted.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use pfsqos_agent::agent::{ControllerRates, PARAM_JOB_STATS, PARAM_POLICIES, PARAM_TBF_RULE};
use pfsqos_agent::coord::{global_ost, Coordinator};
use pfsqos_agent::coord_net::{self, CoordLink, SafeHold};
use pfsqos_agent::lctl::{Lctl, LctlCounts, LctlError};
use pfsqos_agent::{Agent, AgentConfig};
use pfsqos_core::control::spec::PolicyChoice;
use pfsqos_core::control::{DomainId, JobMeta, Observation};
use pfsqos_core::jobstats::{render_job_stats, JobEntry, JobStatsFormat, OstCounter};
use pfsqos_core::model::JobId;
use pfsqos_wire::coord::AgentReport;
use pfsqos_wire::protocol::{decode, encode};

const KEY: &[u8] = b"coordinator-test-key-0123456789";
const DEADLINE: Duration = Duration::from_secs(60);
const GIFT: &str = "gift:period_ms=1000";

/// An OSS in memory: one OST whose job_stats show `jobs` (id, write RPCs of 1 MiB so far),
/// `tbf jobid` running, and the rules written (name, rate).
#[derive(Default)]
struct Oss {
    ost: u32,
    jobs: Vec<(&'static str, u64)>,
    rules: Vec<(String, u64)>,
    counts: LctlCounts,
}

impl Lctl for Oss {
    fn run(&mut self, args: &[String]) -> Result<String, LctlError> {
        self.counts.commands += 1;
        match (args[0].as_str(), args.last().map(String::as_str)) {
            ("get_param", Some(PARAM_POLICIES)) => {
                Ok("\nregular_requests:\n  - name: tbf jobid\n    state: started\n".into())
            }
            ("list_param", _) => Ok(format!("obdfilter.fs-OST{:04x}.job_stats\n", self.ost)),
            ("get_param", Some(PARAM_JOB_STATS)) => {
                let entries: Vec<JobEntry> = self
                    .jobs
                    .iter()
                    .map(|&(j, n)| {
                        let mut e = JobEntry::new(JobId::new(j).unwrap(), 1);
                        for _ in 0..n {
                            e.counters[OstCounter::WriteBytes as usize].add(1 << 20);
                        }
                        e
                    })
                    .collect();
                Ok(format!(
                    "obdfilter.fs-OST{:04x}.job_stats=\n{}",
                    self.ost,
                    render_job_stats(&entries, JobStatsFormat::Master)
                ))
            }
            ("get_param", Some(PARAM_TBF_RULE)) => {
                let mut out = String::from("regular_requests:\nCPT 0:\n");
                for (name, rate) in &self.rules {
                    out.push_str(&format!("{name} jobid={{x}} {rate}, ref 1\n"));
                }
                out.push_str("default * 10000, ref 0\n");
                Ok(out)
            }
            ("set_param", Some(w)) => {
                let text = w.split_once('=').unwrap().1.to_string();
                let words: Vec<&str> = text.split(' ').collect();
                let rate = || {
                    text.split("rate=")
                        .nth(1)
                        .map(|r| r.split(' ').next().unwrap().parse::<u64>().unwrap())
                };
                match words[0] {
                    "start" => self.rules.push((words[1].to_string(), rate().unwrap())),
                    "change" => {
                        self.rules.iter_mut().find(|r| r.0 == words[1]).unwrap().1 = rate().unwrap()
                    }
                    "stop" => self.rules.retain(|r| r.0 != words[1]),
                    _ => {}
                }
                Ok(String::new())
            }
            _ => Ok(String::new()),
        }
    }
    fn counts(&self) -> LctlCounts {
        self.counts
    }
}

fn agent(ost: u32, jobs: Vec<(&'static str, u64)>) -> Agent<Oss> {
    let config = AgentConfig::parse(
        "controller = \"static\"\nost_capacity_rpcs_per_s = 100\ncpts = 1\nrule_prefix = \"pfq\"\n\
         [[jobs]]\nid = \"big\"\nnodes = 8\n[[jobs]]\nid = \"small\"\nnodes = 1\n[[jobs]]\nid = \"other\"\nnodes = 2\n",
    )
    .unwrap();
    let mut a = Agent::new(
        config,
        Oss {
            ost,
            jobs,
            ..Oss::default()
        },
    );
    a.start().unwrap();
    a
}

/// The coordinator's view built by hand: the agents' own observations as domains 0 and 1 (each
/// OST known by agent and index), the union of their jobs.
fn merged_by_hand(now_ns: u64, period_ns: u64, parts: &[Observation]) -> Observation {
    let mut domains = Vec::new();
    let mut jobs: BTreeMap<JobId, JobMeta> = BTreeMap::new();
    for (i, o) in parts.iter().enumerate() {
        let mut d = o.domains[0].clone();
        d.domain = DomainId(i as u32);
        // An OST is known by its agent and the agent's own identity of it.
        for t in &mut d.targets {
            t.ost = global_ost(d.domain, t.ost).unwrap();
        }
        domains.push(d);
        for m in &o.jobs {
            let e = jobs.entry(m.job).or_insert_with(|| m.clone());
            e.node_count = e.node_count.max(m.node_count);
            e.weight = e.weight.max(m.weight);
        }
    }
    Observation {
        now_ns,
        period_ns,
        domains,
        jobs: jobs.into_values().collect(),
        clients: Vec::new(),
    }
}

/// Differential: rounds of GIFT through the coordinator (reports through postcard) equal
/// GIFT run directly on the same observations, split per OSS; the agents then hold a rule of
/// their own for every job the coordinator gave them a rate for.
#[test]
fn two_agents_under_gift_get_what_the_shared_controller_decides() {
    let choice = PolicyChoice::parse(GIFT).unwrap();
    let period_ns = 1_000_000_000;
    let mut coord = Coordinator::new(
        choice.controller_with(1000, 1 << 20, 0),
        vec!["oss0".into(), "oss1".into()],
        period_ns,
        3 * period_ns,
    )
    .unwrap();
    let mut reference = choice.controller_with(1000, 1 << 20, 0);
    let mut reference_rates = [ControllerRates::default(), ControllerRates::default()];
    // Both OSSs serve an `OST0000` (two file systems, or two OSSs numbering their OSTs alike):
    // the coordinator must still see two OSTs, or GIFT refuses the view.
    let mut agents = [
        agent(0, vec![("big", 0), ("small", 0)]),
        agent(0, vec![("big", 0), ("other", 0)]),
    ];
    let mut decided_any = false;
    for round in 1..=6u64 {
        // Demand well above the 100 RPC/s of each OST: "big" floods both OSSs.
        agents[0].lctl_mut().jobs = vec![("big", 400 * round), ("small", 50 * round)];
        agents[1].lctl_mut().jobs = vec![("big", 300 * round), ("other", 120 * round)];
        let now = round * period_ns;
        let mut parts = Vec::new();
        let mut observed = Vec::new();
        for (i, a) in agents.iter_mut().enumerate() {
            let obs = a.observe().expect("job_stats readable");
            let report = AgentReport::from_observation(&format!("oss{i}"), &obs.observation);
            let wire: AgentReport = decode(&encode(&report)).unwrap();
            coord.accept(now, &wire).unwrap();
            parts.push(obs.observation.clone());
            observed.push(obs);
        }
        let seen = coord.run_round(now).expect("fresh reports");
        let by_hand = merged_by_hand(now, period_ns, &parts);
        assert_eq!(seen, by_hand, "round {round}: the coordinator's view");
        let decision = if round == 1 {
            reference.setup(&by_hand)
        } else {
            reference.decide(&by_hand)
        };
        for w in &decision.writes {
            reference_rates[w.domain.0 as usize].absorb([&w.write]);
        }
        for (i, a) in agents.iter_mut().enumerate() {
            let reply = coord.reply(DomainId(i as u32));
            let wire: pfsqos_wire::coord::CoordReply = decode(&encode(&reply)).unwrap();
            let rates = wire.validate().unwrap().rates;
            assert_eq!(rates, reference_rates[i].rates(), "round {round}, OSS {i}");
            decided_any |= !rates.is_empty();
            a.set_coordinated(&rates);
            a.carry_out(&observed[i]);
            // Every job with a rate has a rule of the agent's prefix, nothing else is written.
            let oss = a.lctl();
            assert_eq!(a.controller_rates(), rates);
            assert!(oss.rules.iter().all(|(n, _)| n.starts_with("pfq")));
            assert!(oss.rules.len() >= rates.len().min(1));
        }
    }
    assert!(
        decided_any,
        "GIFT throttled nobody: the comparison would be vacuous"
    );
    assert_eq!(coord.stats.rejected_observations, 0, "{:?}", coord.stats);
    let seen = coord.merged(6 * period_ns).unwrap();
    let osts: Vec<u32> = seen
        .domains
        .iter()
        .flat_map(|d| d.targets.iter().map(|t| t.ost.0))
        .collect();
    assert_eq!(osts, vec![0, 1 << 20], "one OST0000 per agent, told apart");
}

/// An agent fed by a coordinator (its `[coordinator]` table is never dialled here: the test
/// carries the replies), with `extra` configuration.
fn coordinated_agent(name: &str, ost: u32, extra: &str) -> Agent<Oss> {
    let config = AgentConfig::parse(&format!(
        "controller = \"static\"\nost_capacity_rpcs_per_s = 100\ncpts = 1\nrule_prefix = \"pfq\"\n\
         brw_size_bytes = 1048576\n{extra}\n[coordinator]\naddr = \"127.0.0.1:9\"\n\
         agent_name = \"{name}\"\n"
    ))
    .unwrap();
    let mut a = Agent::new(
        config,
        Oss {
            ost,
            ..Oss::default()
        },
    );
    a.start().unwrap();
    a
}

/// First sight through the coordinator: a user's file-system-wide limit reaches a
/// job of that user no agent has reported yet. The coordinator (user 500 at 90 MiB/s, its job
/// `dd.500` moving on OSS 0) sends both agents, through postcard, the share of one more job
/// split over the two OSSs (90 / 2 / 2 = 22.5 MiB/s); the agent of OSS 1, which has never seen
/// a job of user 500, writes the first-sight rule `pfq_c0 jobid={*.500} rate=22` (1 MiB RPCs,
/// one CPT), so a new job there is held by it from its first RPC. An agent with a local limit
/// on the same user keeps one rule, at the tighter rate. When the coordinator stops sending
/// the share (the safe state), the rule is stopped.
#[test]
fn a_coordinators_user_limit_reaches_a_job_no_agent_has_seen() {
    let mb = 1u64 << 20;
    let period_ns = 1_000_000_000;
    let mut coord = Coordinator::with_limits(
        PolicyChoice::parse("nobw")
            .unwrap()
            .controller_with(1000, 1 << 20, 0),
        vec!["oss0".into(), "oss1".into()],
        period_ns,
        3 * period_ns,
        vec![(pfsqos_agent::config::LimitTarget::User(500), 90 * mb)],
        pfsqos_agent::config::JobIdLayout::parse("%e.%u").unwrap(),
        1 << 20,
    )
    .unwrap();
    // OSS 1's agent also limits user 500 itself, at 20 MiB/s (tighter than 22.5): one rule.
    let mut agents = [
        coordinated_agent("oss0", 0, ""),
        coordinated_agent(
            "oss1",
            0,
            "[[limits]]\nuser = 500\nbytes_per_s = 20971520\n",
        ),
    ];
    let mut third = coordinated_agent("oss1", 0, "");
    for round in 1..=2u64 {
        agents[0].lctl_mut().jobs = vec![("dd.500", 90 * round)];
        agents[1].lctl_mut().jobs = vec![("other.600", 10 * round)];
        third.lctl_mut().jobs = vec![("other.600", 10 * round)];
        let now = round * period_ns;
        let mut observed = Vec::new();
        for (i, a) in agents.iter_mut().enumerate() {
            let obs = a.observe().expect("job_stats readable");
            let report = AgentReport::from_observation(&format!("oss{i}"), &obs.observation);
            coord
                .accept(now, &decode(&encode(&report)).unwrap())
                .unwrap();
            observed.push(obs);
        }
        let third_obs = third.observe().unwrap();
        coord.run_round(now).unwrap();
        for (i, a) in agents.iter_mut().enumerate() {
            let wire: pfsqos_wire::coord::CoordReply =
                decode(&encode(&coord.reply(DomainId(i as u32)))).unwrap();
            let reply = wire.validate().unwrap();
            a.set_coordinator_reply(&reply.rates, &reply.first_sight);
            a.carry_out(&observed[i]);
        }
        // The same reply as OSS 1's, to an agent without a limit of its own.
        let reply = coord.reply(DomainId(1)).validate().unwrap();
        assert_eq!(
            reply.first_sight.into_iter().collect::<Vec<_>>(),
            vec![(pfsqos_agent::config::LimitTarget::User(500), 45 * mb / 2)],
            "round {round}: 90 MiB/s / (1 + 1 jobs) / 2 OSSs"
        );
        let reply = coord.reply(DomainId(1)).validate().unwrap();
        third.set_coordinator_reply(&reply.rates, &reply.first_sight);
        third.carry_out(&third_obs);
    }
    // The agent without a local limit: the coordinator's first-sight rule, 22 RPC/s of 1 MiB.
    assert_eq!(
        third
            .first_sight_rules()
            .clone()
            .into_iter()
            .collect::<Vec<_>>(),
        vec![("pfq_c0".to_string(), ("*.500".to_string(), 22))]
    );
    assert!(third.lctl().rules.contains(&("pfq_c0".to_string(), 22)));
    // The agent of OSS 0 gets the same share for a second job of the user (dd.500 has its own
    // rate there); OSS 1's agent with its own tighter limit: one rule, its own, at 20.
    assert_eq!(
        agents[0].first_sight_rules()["pfq_c0"],
        ("*.500".into(), 22)
    );
    assert_eq!(
        agents[1]
            .first_sight_rules()
            .clone()
            .into_iter()
            .collect::<Vec<_>>(),
        vec![("pfq_f0".to_string(), ("*.500".to_string(), 20))]
    );
    assert!(!agents[1].lctl().rules.iter().any(|r| r.0 == "pfq_c0"));
    // The safe state (no rates, no shares): the coordinator's first-sight rule is stopped.
    third.set_coordinated(&BTreeMap::new());
    third.lctl_mut().jobs = vec![("other.600", 30)];
    let obs = third.observe().unwrap();
    third.carry_out(&obs);
    assert!(third.first_sight_rules().is_empty());
    assert!(
        !third.lctl().rules.iter().any(|r| r.0 == "pfq_c0"),
        "{:?}",
        third.lctl().rules
    );
}

/// A coordinator's first-sight share that goes frees its slot only once its rule is stopped:
/// user 500's share is replaced by user 600's in one reply, and user 600 gets a rule of its own
/// (`pfq_c1 jobid={*.600}`) while `pfq_c0 jobid={*.500}` is stopped, never `pfq_c0`'s rate
/// changed under user 500's pattern.
#[test]
fn a_first_sight_slot_is_given_again_only_after_its_rule_is_stopped() {
    use pfsqos_agent::config::LimitTarget;
    let mut a = coordinated_agent("oss0", 0, "");
    let shares = |target, bytes_per_s| BTreeMap::from([(target, bytes_per_s)]);
    let period = |a: &mut Agent<Oss>, first_sight: BTreeMap<LimitTarget, u64>, n: u64| {
        a.lctl_mut().jobs = vec![("x.7", n)];
        let obs = a.observe().unwrap();
        a.set_coordinator_reply(&BTreeMap::new(), &first_sight);
        a.carry_out(&obs);
        a.first_sight_rules()
            .clone()
            .into_iter()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        period(&mut a, shares(LimitTarget::User(500), 10 << 20), 1),
        vec![("pfq_c0".to_string(), ("*.500".to_string(), 10))]
    );
    assert_eq!(
        period(&mut a, shares(LimitTarget::User(600), 20 << 20), 2),
        vec![("pfq_c1".to_string(), ("*.600".to_string(), 20))]
    );
    assert_eq!(a.lctl().rules, vec![("pfq_c1".to_string(), 20)]);
    // Slot 0 is free again now that its rule is gone.
    let both = BTreeMap::from([
        (LimitTarget::User(600), 20 << 20),
        (LimitTarget::User(9), 5 << 20),
    ]);
    let rules = period(&mut a, both, 3);
    assert!(
        rules.contains(&("pfq_c0".to_string(), ("*.9".to_string(), 5))),
        "{rules:?}"
    );
}

fn key_file(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("key");
    std::fs::write(&p, KEY).unwrap();
    p
}

/// A coordinator on a runtime of its own, stopped by dropping the sender.
struct Running {
    addr: std::net::SocketAddr,
    admission: std::sync::Arc<pfsqos_wire::admission::Admission>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    fn start(agents: &[&str], period_ms: u64) -> Running {
        Running::start_on("127.0.0.1:0".parse().unwrap(), agents, period_ms)
    }

    fn start_on(bind: std::net::SocketAddr, agents: &[&str], period_ms: u64) -> Running {
        Running::start_keyed(bind, agents, period_ms, KEY.to_vec())
    }

    /// A coordinator whose agents must prove `agent_key`.
    fn start_keyed(
        bind: std::net::SocketAddr,
        agents: &[&str],
        period_ms: u64,
        agent_key: Vec<u8>,
    ) -> Running {
        let agents: Vec<String> = agents.iter().map(|a| a.to_string()).collect();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (atx, arx) = std::sync::mpsc::channel();
        let admission = pfsqos_wire::admission::Admission::with_connections_max(2 * agents.len());
        let adm = admission.clone();
        let thread = std::thread::spawn(move || {
            // Controllers are not Send: the coordinator lives on its thread.
            let coord = Coordinator::new(
                PolicyChoice::parse(GIFT)
                    .unwrap()
                    .controller_with(period_ms, 1 << 20, 0),
                agents,
                period_ms * 1_000_000,
                3 * period_ms * 1_000_000,
            )
            .unwrap();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
                atx.send(listener.local_addr().unwrap()).unwrap();
                let stop = async move {
                    let _ = rx.await;
                };
                let published = Default::default();
                coord_net::serve_admitted(
                    listener,
                    agent_key,
                    coord,
                    Instant::now(),
                    stop,
                    published,
                    adm,
                )
                .await;
            });
            // Dropping the runtime ends every connection task: the coordinator is gone.
        });
        Running {
            addr: arx.recv().unwrap(),
            admission,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    fn kill(&mut self) {
        drop(self.stop.take());
        self.thread.take().unwrap().join().unwrap();
    }
}

/// The coordinator decides, the agent takes its rates; the coordinator dies; the agent keeps
/// the rates within the hold and removes its rules once the hold has passed (virtual time for
/// the hold, real sockets for the silence).
#[test]
fn a_killed_coordinator_leaves_the_agent_in_the_safe_state_within_the_bound() {
    let mut running = Running::start(&["oss0"], 50);
    let mut a = agent(0, vec![("big", 0), ("small", 0)]);
    let mut link = CoordLink::new(running.addr, KEY.to_vec(), Duration::from_secs(5)).unwrap();
    let hold_ns = 5_000_000_000;
    let mut hold = SafeHold::new(hold_ns, 0);
    // Virtual agent time: one period of 1 s per exchange.
    let mut now = 0u64;
    let deadline = Instant::now() + DEADLINE;
    let mut round = 0u64;
    let mut held = BTreeMap::new();
    while held.is_empty() {
        assert!(Instant::now() < deadline, "the coordinator never throttled");
        round += 1;
        now += 1_000_000_000;
        a.lctl_mut().jobs = vec![("big", 400 * round), ("small", 50 * round)];
        let obs = a.observe().unwrap();
        let rates = link
            .exchange(&AgentReport::from_observation("oss0", &obs.observation))
            .unwrap();
        hold.reply(now);
        if let Some(r) = rates {
            a.set_coordinated(&r.rates);
            held = r.rates;
        }
        a.carry_out(&obs);
        // Let the coordinator's 50 ms rounds see this report before the next exchange.
        std::thread::sleep(Duration::from_millis(60));
    }
    assert!(!a.lctl().rules.is_empty());
    running.kill();
    let last_reply = now;
    let mut released_at = None;
    for _ in 0..20 {
        now += 1_000_000_000;
        let obs = a.observe().unwrap();
        assert!(link
            .exchange(&AgentReport::from_observation("oss0", &obs.observation))
            .is_err());
        if hold.must_release(now) {
            a.set_coordinated(&BTreeMap::new());
            released_at = Some(now);
        }
        if released_at.is_none() {
            assert_eq!(a.controller_rates(), held, "rates kept within the hold");
        }
        a.carry_out(&obs);
    }
    let at = released_at.expect("safe state reached");
    assert!(at - last_reply > hold_ns && at - last_reply <= hold_ns + 1_000_000_000);
    assert!(
        a.lctl().rules.is_empty(),
        "no rule left in the safe state: {:?}",
        a.lctl().rules
    );
}

/// The daemon's own loop (real clock): coordinated through `run::Coordinated`, the agent
/// reaches the safe state within safe_hold_ms (+ one period and the exchange timeout) after
/// the coordinator is killed, and says so in its stats.
#[test]
fn the_daemon_loop_reaches_the_safe_state_after_the_coordinator_dies() {
    let tmp = tempfile::tempdir().unwrap();
    let mut running = Running::start(&["oss0"], 20);
    let link = pfsqos_agent::config::CoordinatorLink {
        addr: running.addr,
        key_file: key_file(tmp.path()),
        agent_name: "oss0".into(),
        safe_hold_ms: 400,
    };
    let mut c = pfsqos_agent::run::Coordinated::new(&link).unwrap();
    let mut a = agent(0, vec![("big", 0), ("small", 0)]);
    let deadline = Instant::now() + DEADLINE;
    let mut round = 0;
    while a.controller_rates().is_empty() {
        assert!(Instant::now() < deadline, "no rates from the coordinator");
        round += 1;
        a.lctl_mut().jobs = vec![("big", 400 * round), ("small", 50 * round)];
        c.period(&mut a);
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(a.stats.coordinator_errors, 0);
    running.kill();
    let killed = Instant::now();
    while !a.stats.safe_state {
        assert!(Instant::now() < deadline, "safe state never reached");
        c.period(&mut a);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        killed.elapsed() >= Duration::from_millis(400),
        "released before the hold"
    );
    assert!(a.stats.coordinator_errors > 0);
    assert!(a.controller_rates().is_empty());
    assert!(a.lctl().rules.is_empty(), "{:?}", a.lctl().rules);
}

/// A peer with the wrong key, a peer speaking garbage and an authenticated peer that names an
/// agent off the allow-list get nothing; the coordinator keeps serving the allowed agent.
#[test]
fn unauthenticated_and_foreign_peers_are_refused() {
    use std::io::{Read, Write};
    let running = Running::start(&["oss0"], 50);
    let report = AgentReport {
        agent: "oss0".into(),
        now_ns: 1,
        period_ns: 1,
        targets: vec![],
        jobs: vec![],
    };
    let mut wrong = CoordLink::new(
        running.addr,
        b"another-key-0123456789abcdef".to_vec(),
        Duration::from_secs(5),
    )
    .unwrap();
    assert!(wrong.exchange(&report).is_err(), "wrong key accepted");
    let mut garbage = std::net::TcpStream::connect(running.addr).unwrap();
    garbage
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    garbage.write_all(&[0, 0, 0, 4, 1, 2, 3, 4]).unwrap();
    let mut buf = Vec::new();
    let _ = garbage.read_to_end(&mut buf);
    assert!(
        !buf.windows(4).any(|w| w == b"PFSQ"),
        "garbage got a challenge"
    );
    let mut foreign = CoordLink::new(running.addr, KEY.to_vec(), Duration::from_secs(5)).unwrap();
    let mut other = report.clone();
    other.agent = "oss9".into();
    assert!(foreign.exchange(&other).is_err(), "foreign agent served");
    let mut good = CoordLink::new(running.addr, KEY.to_vec(), Duration::from_secs(5)).unwrap();
    assert!(good.exchange(&report).is_ok());
}

/// With `server_key_file`, the coordinator's agents (role `Lctl`) must prove the servers'
/// key: a client node's cluster key cannot report for an OSS; an agent holding the server key
/// is served. A server key equal to the cluster key is refused.
#[test]
fn a_client_key_cannot_report_for_an_oss_once_the_coordinator_has_a_server_key() {
    const SERVER_KEY: &[u8] = b"coordinator-server-key-fedcba987654";
    let tmp = tempfile::tempdir().unwrap();
    let cluster = key_file(tmp.path());
    let server = tmp.path().join("server.key");
    std::fs::write(&server, SERVER_KEY).unwrap();
    let text = format!(
        "listen = \"127.0.0.1:0\"\ncontroller = \"gift\"\nagents = [\"oss0\"]\n\
         key_file = {cluster:?}\nserver_key_file = {server:?}\n"
    );
    let config = coord_net::CoordinatorConfig::parse(&text).unwrap();
    let agent_key = config.agent_key().unwrap();
    assert_eq!(agent_key, SERVER_KEY);
    let same = coord_net::CoordinatorConfig::parse(&text.replace("server.key", "key")).unwrap();
    assert!(
        same.agent_key().is_err(),
        "the cluster key taken as the servers'"
    );

    let running = Running::start_keyed("127.0.0.1:0".parse().unwrap(), &["oss0"], 50, agent_key);
    let report = AgentReport {
        agent: "oss0".into(),
        now_ns: 1,
        period_ns: 1,
        targets: vec![],
        jobs: vec![],
    };
    let mut client = CoordLink::new(running.addr, KEY.to_vec(), Duration::from_secs(5)).unwrap();
    assert!(
        client.exchange(&report).is_err(),
        "a cluster-key holder reported for oss0"
    );
    let mut agent =
        CoordLink::new(running.addr, SERVER_KEY.to_vec(), Duration::from_secs(5)).unwrap();
    assert!(agent.exchange(&report).is_ok());
}

/// Idle unauthenticated sockets held against `addr` from `sources` loopback addresses
/// (127.0.0.2 on), `per_source` from each, each reopened as soon as the server closes it (or,
/// while nothing listens, retried); `closed` counts the server's closes.
struct Flood {
    closed: std::sync::Arc<std::sync::atomic::AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Flood {
    fn start(addr: std::net::SocketAddr, sources: u8, per_source: usize) -> Flood {
        use std::sync::atomic::{AtomicU64, Ordering};
        let closed = std::sync::Arc::new(AtomicU64::new(0));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let counter = closed.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                for source in 0..sources {
                    let ip = std::net::Ipv4Addr::new(127, 0, 0, 2 + source);
                    for _ in 0..per_source {
                        let counter = counter.clone();
                        tokio::spawn(async move {
                            loop {
                                let s = tokio::net::TcpSocket::new_v4().unwrap();
                                s.bind((ip, 0).into()).unwrap();
                                let Ok(mut conn) = s.connect(addr).await else {
                                    // Nothing listening (a restart): try again shortly.
                                    tokio::time::sleep(Duration::from_millis(20)).await;
                                    continue;
                                };
                                let mut buf = [0u8; 64];
                                use tokio::io::AsyncReadExt;
                                while matches!(conn.read(&mut buf).await, Ok(n) if n > 0) {}
                                counter.fetch_add(1, Ordering::Relaxed);
                            }
                        });
                    }
                }
                let _ = rx.await;
            });
        });
        Flood {
            closed,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    /// Waits until the server has closed `n` of the flood's sockets (so the flood holds its
    /// whole pre-auth budget and is being turned away).
    fn wait_closed(&self, n: u64) {
        let deadline = Instant::now() + DEADLINE;
        while self.closed.load(std::sync::atomic::Ordering::Relaxed) < n {
            assert!(
                Instant::now() < deadline,
                "the flood never filled the budget"
            );
            std::thread::yield_now();
        }
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

/// 256 idle unauthenticated sockets from 32 addresses, renewed as they close and held across a
/// coordinator restart, do not keep either agent out: every exchange is answered, except the
/// first after the restart (which finds its old connection gone and reconnects).
#[test]
fn a_handshake_flood_from_many_addresses_does_not_lock_the_agents_out() {
    let agents = ["oss0", "oss1"];
    let mut running = Running::start(&agents, 50);
    let addr = running.addr;
    let flood = Flood::start(addr, 32, 8);
    flood.wait_closed(512);
    let report = |agent: &str| AgentReport {
        agent: agent.into(),
        now_ns: 1,
        period_ns: 1,
        targets: vec![],
        jobs: vec![],
    };
    let mut links: Vec<CoordLink> = agents
        .iter()
        .map(|_| CoordLink::new(addr, KEY.to_vec(), Duration::from_secs(10)).unwrap())
        .collect();
    for round in 0..10 {
        for (link, agent) in links.iter_mut().zip(agents) {
            link.exchange(&report(agent))
                .unwrap_or_else(|e| panic!("{agent} not served in round {round}: {e}"));
        }
    }
    running.kill();
    let mut running = Running::start_on(addr, &agents, 50);
    let closed = flood.closed.load(std::sync::atomic::Ordering::Relaxed);
    flood.wait_closed(closed + 512);
    for (link, agent) in links.iter_mut().zip(agents) {
        // The old connection ended with the old coordinator.
        let _ = link.exchange(&report(agent));
        for round in 0..10 {
            link.exchange(&report(agent)).unwrap_or_else(|e| {
                panic!("{agent} not served in round {round} after the restart: {e}")
            });
        }
    }
    drop(flood);
    // The flood was turned away through the shared admission, and its refusals were logged
    // only a few times a window.
    let c = running.admission.counters();
    assert!(c.handshakes_evicted > 0, "{c:?}");
    assert!(c.log_lines_suppressed > 0, "{c:?}");
    running.kill();
}
