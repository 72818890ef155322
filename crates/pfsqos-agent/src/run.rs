//! The daemon around [`crate::agent::Agent`]: lctl (real or `--dry-run`), the period clock,
//! signals, the metrics endpoint.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use tracing::{info, warn};

use std::collections::BTreeMap;

use pfsqos_wire::coord::AgentReport;

use crate::agent::Agent;
use crate::config::{AgentConfig, CoordinatorLink};
use crate::coord_net::{CoordLink, SafeHold};
use crate::lctl::{DryRun, Lctl, ProcessLctl};
use crate::metrics::AgentSample;

/// How often the loop looks at the stop flag while waiting for the next period.
pub const STOP_POLL: Duration = Duration::from_millis(50);

#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    /// One period, then exit leaving the rules in place (cron-style use; the next start
    /// removes them and writes its own).
    pub once: bool,
    /// Print the exact lctl argv of every write instead of running it (reads still run).
    pub dry_run: bool,
}

fn process_lctl(c: &AgentConfig) -> ProcessLctl {
    ProcessLctl::new(
        c.lctl.clone(),
        Duration::from_millis(c.lctl_timeout_ms),
        c.lctl_retries,
        Duration::from_millis(c.lctl_backoff_ms),
    )
}

/// Runs the agent until SIGTERM/SIGINT (or one period with `once`). Returns the exit code.
pub fn run(config: AgentConfig, opts: RunOptions) -> anyhow::Result<i32> {
    crate::signal::install().context("installing signal handlers")?;
    let sample = Arc::new(Mutex::new(AgentSample::default()));
    let _metrics = match config.metrics_listen {
        Some(addr) => Some(start_metrics(addr, sample.clone())?),
        None => None,
    };
    if opts.dry_run {
        let reads: Box<dyn Lctl> = Box::new(process_lctl(&config));
        let program = config.lctl.display().to_string();
        let lctl = DryRun::new(Box::new(std::io::stdout()), Some(reads), &program);
        drive(Agent::new(config, lctl), opts, &sample)
    } else {
        let lctl = process_lctl(&config);
        drive(Agent::new(config, lctl), opts, &sample)
    }
}

fn publish<L: Lctl>(agent: &Agent<L>, sample: &Mutex<AgentSample>) {
    let mut s = sample.lock().unwrap_or_else(|e| e.into_inner());
    s.stats = agent.stats.clone();
    s.lctl = agent.lctl().counts();
}

fn drive<L: Lctl>(
    mut agent: Agent<L>,
    opts: RunOptions,
    sample: &Mutex<AgentSample>,
) -> anyhow::Result<i32> {
    info!(
        controller = agent.config().policy.spec(),
        prefix = %agent.config().rule_prefix,
        dry_run = opts.dry_run,
        "agent starting"
    );
    let mut coordinated = match agent.config().coordinator.clone() {
        Some(link) => Some(Coordinated::new(&link)?),
        None => None,
    };
    agent.start().map_err(|e| anyhow::anyhow!("{e}"))?;
    publish(&agent, sample);
    let period = Duration::from_nanos(agent.period_ns().max(1));
    let mut next = Instant::now() + period;
    loop {
        while Instant::now() < next {
            if crate::signal::stop_requested() {
                info!("stop requested; removing the agent's rules");
                agent.shutdown();
                publish(&agent, sample);
                return Ok(0);
            }
            std::thread::sleep(STOP_POLL.min(next.saturating_duration_since(Instant::now())));
        }
        match coordinated.as_mut() {
            Some(c) => c.period(&mut agent),
            None => agent.period(),
        }
        publish(&agent, sample);
        if opts.once {
            info!(
                rules = agent.stats.rules_held,
                "one period done (--once); rules left in place"
            );
            return Ok(0);
        }
        next += period;
        let now = Instant::now();
        if next < now {
            // Fell behind (a slow lctl): skip the missed ticks rather than run them back to back.
            warn!("period overran; skipping missed ticks");
            next = now + period;
        }
    }
}

/// An agent whose rates come from `pfsqos coordinator`: its link and safe-state timer.
pub struct Coordinated {
    name: String,
    link: CoordLink,
    hold: SafeHold,
    epoch: Instant,
}

impl Coordinated {
    pub fn new(link: &CoordinatorLink) -> anyhow::Result<Coordinated> {
        let key = pfsqos_wire::key::read_key_file(&link.key_file)?;
        // Wait at most half the hold for one exchange, so a silent coordinator cannot stall
        // the agent past its safe state.
        let timeout = Duration::from_millis((link.safe_hold_ms / 2).clamp(50, 10_000));
        Ok(Coordinated {
            name: link.agent_name.clone(),
            link: CoordLink::new(link.addr, key, timeout)?,
            hold: SafeHold::new(link.safe_hold_ms * 1_000_000, 0),
            epoch: Instant::now(),
        })
    }

    /// One period: observe, report, take the coordinator's rates (or, after `safe_hold_ms`
    /// of silence, none: the safe state), write.
    pub fn period<L: Lctl>(&mut self, agent: &mut Agent<L>) {
        let obs = agent.observe();
        if let Some(obs) = &obs {
            let report = AgentReport::from_observation(&self.name, &obs.observation);
            let now = self.epoch.elapsed().as_nanos() as u64;
            match self.link.exchange(&report) {
                Ok(rates) => {
                    if self.hold.released() {
                        info!("coordinator answers again; leaving the safe state");
                    }
                    self.hold.reply(now);
                    if let Some(reply) = rates {
                        agent.set_coordinator_reply(&reply.rates, &reply.first_sight);
                    }
                }
                Err(e) => {
                    agent.stats.coordinator_errors += 1;
                    warn!(error = %e, "coordinator exchange failed; last rates kept");
                }
            }
        }
        let now = self.epoch.elapsed().as_nanos() as u64;
        if self.hold.must_release(now) {
            warn!("no reply from the coordinator within safe_hold_ms; removing its rules (safe state)");
            agent.set_coordinated(&BTreeMap::new());
        }
        agent.stats.safe_state = self.hold.released();
        if let Some(obs) = &obs {
            agent.carry_out(obs);
        }
    }
}

/// The metrics endpoint on its own thread and runtime (the agent itself is synchronous).
fn start_metrics(
    addr: std::net::SocketAddr,
    sample: Arc<Mutex<AgentSample>>,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("agent-metrics".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = tx.send(Err(anyhow::anyhow!("metrics runtime: {e}")));
                    return;
                }
            };
            rt.block_on(async move {
                let render: pfsqos_metrics::Render = Arc::new(move || {
                    let s = sample.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    crate::metrics::render(s)
                });
                match pfsqos_metrics::MetricsServer::start(addr, render).await {
                    Ok(server) => {
                        let _ = tx.send(Ok(server.local_addr()));
                        std::future::pending::<()>().await;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            });
        })?;
    let local = rx.recv().context("metrics thread ended")??;
    info!(addr = %local, "agent metrics listening");
    Ok(handle)
}
