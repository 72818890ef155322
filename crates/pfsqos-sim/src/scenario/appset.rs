//! The `[appset]` scenario section: a generated application set in the spirit of GIFT's §4
//! evaluation (Stampede2-like sizes, Mira/Theta-like phase structure, Gamma inter-arrival
//! times), expanded into ordinary [`JobSpec`]s with `phases` shapes.
//!
//! * `templates` distinct applications are drawn first; each of the `apps` submissions runs
//!   one template (submissions `0..templates` run each template once, the rest pick one
//!   uniformly), so an application appears several times, as GIFT's "applications are executed
//!   with repetitions". Repeated runs share the template's name as their **application
//!   identity** (what a TBF `jobid` rule and GIFT's coupon ledger key on), so coupons issued to
//!   one run can be redeemed by a later one (§2).
//! * A template fixes: nodes (a power of two, log2-uniform in `nodes`), OST count (a power of
//!   two, log2-uniform in `osts_per_app`, at most the process count), phases (uniform integer in
//!   `phases`), compute time per phase (log-uniform in `compute_s`) and bytes per process per
//!   phase (log-uniform in `phase_size`, rounded to MiB).
//! * A run places its processes (`nodes × processes_per_node`, one file each, stripe count 1)
//!   round robin over `osts` consecutive OSTs starting at a random OST (Lustre's round-robin
//!   allocator from a random offset), so every OST of a run carries the same number of
//!   processes (both are powers of two).
//! * Inter-arrival times are Gamma(`arrival_shape`, `arrival_scale_s`) (§4: "arrival times
//!   follow a Gamma distribution").
//!
//! All draws come from one `ChaCha8Rng` seeded with `seed` (default: the simulation seed), in
//! a fixed order, so the set is the same for every policy.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use super::{ByteSize, JobSpec, ProcessGroupSpec, Rw, ShapeKind, ShapeSpec};

/// Most generated applications.
pub const APPS_MAX: u32 = 100_000;
/// Most distinct templates.
pub const TEMPLATES_MAX: u32 = 10_000;
/// Largest node count of one application.
pub const APP_NODES_MAX: u32 = 1 << 16;
pub const PROCESSES_PER_NODE_MAX: u32 = 256;
/// Most phases of one application.
pub const APP_PHASES_MAX: u32 = 10_000;
/// Longest compute phase: one week.
pub const COMPUTE_S_MAX: f64 = 7.0 * 24.0 * 3600.0;
/// Largest I/O per process per phase.
pub const PHASE_SIZE_MAX: u64 = 1 << 40;
/// Largest mean inter-arrival time: one week.
pub const ARRIVAL_MEAN_S_MAX: f64 = 7.0 * 24.0 * 3600.0;
pub const WALLTIME_FACTOR_MAX: f64 = 100.0;
/// Most generated applications the RPC-level engine runs: every RPC of every run is an event
/// there, so a set sized for days of the fluid engine would not finish.
pub const RPC_APPS_MAX: u32 = 64;

/// `[appset]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AppSetSpec {
    /// Applications submitted.
    pub apps: u32,
    /// Distinct applications (templates); default `apps / 5`, at least 1.
    #[serde(default)]
    pub templates: Option<u32>,
    /// Gamma shape `k` of the inter-arrival times.
    #[serde(default = "default_arrival_shape")]
    pub arrival_shape: f64,
    /// Gamma scale `θ` of the inter-arrival times (mean `k θ`).
    #[serde(default = "default_arrival_scale_s")]
    pub arrival_scale_s: f64,
    /// `[min, max]` nodes per application; powers of two in between, log2-uniform.
    #[serde(default = "default_nodes")]
    pub nodes: [u32; 2],
    /// Processes doing I/O per node.
    #[serde(default = "default_processes_per_node")]
    pub processes_per_node: u32,
    /// `[min, max]` OSTs per application; powers of two in between, log2-uniform.
    #[serde(default = "default_osts_per_app")]
    pub osts_per_app: [u32; 2],
    /// `[min, max]` phases per application, uniform.
    #[serde(default = "default_phases")]
    pub phases: [u32; 2],
    /// `[min, max]` compute time before each I/O phase, log-uniform.
    #[serde(default = "default_compute_s")]
    pub compute_s: [f64; 2],
    /// `[min, max]` bytes per process per I/O phase, log-uniform, rounded to MiB.
    #[serde(default = "default_phase_size")]
    pub phase_size: [ByteSize; 2],
    /// Access of every process.
    #[serde(default = "default_rw")]
    pub rw: Rw,
    /// Nodes of the batch system's pool; default `cluster.clients`.
    #[serde(default)]
    pub node_pool: Option<u32>,
    /// Requested walltime = this × the run time alone on an idle file system.
    #[serde(default = "default_walltime_factor")]
    pub walltime_factor: f64,
    /// Seed of the generator; default `simulation.seed`.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Processes of a run advance at one rate through each I/O phase (GIFT's rate model),
    /// instead of meeting only at the phase's end; see the fluid engine.
    #[serde(default)]
    pub lockstep: bool,
    /// What TBF rules and GIFT's ledger key on: `template` (repeated runs are one application,
    /// so coupons carry over between runs, and concurrent runs share caps) or `run` (every run
    /// is its own application).
    #[serde(default)]
    pub identity: Identity,
}

/// The application identity of a generated run.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Identity {
    #[default]
    Template,
    Run,
}

fn default_arrival_shape() -> f64 {
    2.0
}
fn default_arrival_scale_s() -> f64 {
    1200.0
}
fn default_nodes() -> [u32; 2] {
    [1, 32]
}
fn default_processes_per_node() -> u32 {
    4
}
fn default_osts_per_app() -> [u32; 2] {
    [1, 8]
}
fn default_phases() -> [u32; 2] {
    [4, 16]
}
fn default_compute_s() -> [f64; 2] {
    [300.0, 3600.0]
}
fn default_phase_size() -> [ByteSize; 2] {
    [ByteSize(256 << 20), ByteSize(4 << 30)]
}
fn default_rw() -> Rw {
    Rw::Write
}
fn default_walltime_factor() -> f64 {
    1.5
}

/// One generated application run.
#[derive(Clone, Debug, PartialEq)]
pub struct GeneratedApp {
    /// The run as an ordinary job (its shapes start at 0: the batch scheduler's start time is
    /// added by the engine).
    pub job: JobSpec,
    /// Application identity shared by repeated runs of one template (`t<k>`).
    pub app: String,
    pub template: u32,
    pub submit_ns: u64,
}

/// Draws from a Gamma(`shape`, 1) distribution (Marsaglia and Tsang's method; for
/// `shape < 1` the `U^(1/shape)` boost).
pub fn gamma(rng: &mut impl Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        let u: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
        return gamma(rng, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u: f64 = rng.random::<f64>();
        if u < 1.0 - 0.0331 * x.powi(4)
            || u.max(f64::MIN_POSITIVE).ln() < 0.5 * x * x + d * (1.0 - v + v.ln())
        {
            return d * v;
        }
    }
}

/// A standard normal draw (Box-Muller, one of the pair).
fn normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn log_uniform(rng: &mut impl Rng, lo: f64, hi: f64) -> f64 {
    if hi <= lo {
        return lo;
    }
    (lo.ln() + rng.random::<f64>() * (hi.ln() - lo.ln())).exp()
}

/// A power of two in `[lo, hi]`, its exponent uniform (`lo`, `hi` need not be powers of two:
/// the range is the powers of two inside it, or `lo` if there is none).
fn pow2_in(rng: &mut impl Rng, lo: u32, hi: u32) -> u32 {
    let first = lo.max(1).next_power_of_two();
    if first > hi {
        return lo.max(1);
    }
    let e_lo = first.trailing_zeros();
    let e_hi = 31 - hi.leading_zeros();
    1 << rng.random_range(e_lo..=e_hi)
}

#[derive(Clone, Debug)]
struct Template {
    nodes: u32,
    osts: u32,
    phases: u32,
    compute_s: f64,
    phase_bytes: u64,
}

impl AppSetSpec {
    pub fn template_count(&self) -> u32 {
        self.templates
            .unwrap_or(self.apps / 5)
            .clamp(1, self.apps.max(1))
    }

    /// The generated set on a cluster of `osts` OSTs; `default_seed` when the section sets
    /// none. Deterministic: same spec and seed, same set.
    pub fn generate(&self, osts: u32, default_seed: u64) -> Vec<GeneratedApp> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed.unwrap_or(default_seed));
        let templates: Vec<Template> = (0..self.template_count())
            .map(|_| {
                let nodes = pow2_in(&mut rng, self.nodes[0], self.nodes[1]);
                let processes = nodes * self.processes_per_node;
                let osts_app = pow2_in(&mut rng, self.osts_per_app[0], self.osts_per_app[1])
                    .min(processes)
                    .min(osts);
                let phases = rng.random_range(self.phases[0]..=self.phases[1]);
                let compute_s =
                    (log_uniform(&mut rng, self.compute_s[0], self.compute_s[1]) * 1000.0).round()
                        / 1000.0;
                let mib = |b: ByteSize| (b.bytes() as f64 / (1u64 << 20) as f64).max(1.0);
                let phase_mib =
                    log_uniform(&mut rng, mib(self.phase_size[0]), mib(self.phase_size[1]))
                        .round()
                        .max(1.0) as u64;
                Template {
                    nodes,
                    osts: osts_app.max(1),
                    phases,
                    compute_s,
                    phase_bytes: phase_mib << 20,
                }
            })
            .collect();
        let mut t_s = 0.0f64;
        let mut out = Vec::with_capacity(self.apps as usize);
        for i in 0..self.apps {
            if i > 0 {
                t_s += gamma(&mut rng, self.arrival_shape) * self.arrival_scale_s;
            }
            let template = if i < templates.len() as u32 {
                i
            } else {
                rng.random_range(0..templates.len() as u32)
            };
            let tp = &templates[template as usize];
            let first_ost = rng.random_range(0..osts);
            let processes = tp.nodes * self.processes_per_node;
            let per_ost = processes / tp.osts;
            let extra = processes % tp.osts;
            let groups = (0..tp.osts)
                .map(|k| ProcessGroupSpec {
                    rw: self.rw,
                    bs: ByteSize(1 << 20),
                    size: ByteSize(tp.phase_bytes * u64::from(tp.phases)),
                    numjobs: per_ost + u32::from(k < extra),
                    iodepth: 4,
                    file: super::FileMode::PerProcess,
                    stripe_count: Some(1),
                    stripe_size: None,
                    stripe_offset: Some((first_ost + k) % osts),
                    after: None,
                    files_of: None,
                    direct: false,
                    shape: ShapeSpec {
                        kind: ShapeKind::Phases,
                        phases: Some(tp.phases),
                        compute_s: Some(tp.compute_s),
                        phase_size: Some(ByteSize(tp.phase_bytes)),
                        ..ShapeSpec::default()
                    },
                })
                .filter(|g| g.numjobs > 0)
                .collect();
            let app = format!("t{template}");
            out.push(GeneratedApp {
                job: JobSpec {
                    id: format!("{app}.{i}"),
                    nodes: tp.nodes,
                    weight: None,
                    clients: None,
                    uid: 0,
                    gid: 0,
                    groups,
                },
                app,
                template,
                submit_ns: crate::workload::secs_to_ns(t_s),
            });
        }
        out
    }
}

impl AppSetSpec {
    /// The generated set as ordinary jobs for the RPC-level engine, which has no batch
    /// scheduler: every run starts at its submission (its shapes shifted by the submission
    /// time). That is what the fluid engine's FCFS + EASY scheduler does whenever all runs fit
    /// on the node pool at once, so both engines see the same applications at the same times.
    /// Refused, with the reason, where the RPC engine would run a different set: more than
    /// [`RPC_APPS_MAX`] runs, runs that together need more nodes than `node_pool` (some would
    /// queue), or repeated runs of one template sharing an application identity (the RPC
    /// engine keys TBF rules on job ids, one per run).
    pub fn expand_for_rpc(
        &self,
        osts: u32,
        default_seed: u64,
        cluster_clients: u32,
    ) -> Result<Vec<JobSpec>, String> {
        if self.apps > RPC_APPS_MAX {
            return Err(format!(
                "{} applications; the RPC-level engine runs at most {RPC_APPS_MAX} (use engine = \"fluid\")",
                self.apps
            ));
        }
        if self.identity == Identity::Template && self.template_count() < self.apps {
            return Err(format!(
                "{} runs of {} templates share application identities, which only the fluid engine keys rules on (set identity = \"run\", or templates = apps)",
                self.apps,
                self.template_count()
            ));
        }
        let generated = self.generate(osts, default_seed);
        let pool = self.node_pool.unwrap_or(cluster_clients);
        let nodes: u64 = generated.iter().map(|g| u64::from(g.job.nodes)).sum();
        if nodes > u64::from(pool) {
            return Err(format!(
                "the runs need {nodes} nodes together, more than the node pool's {pool}: some would wait in the batch queue, which only the fluid engine has (raise node_pool, or use engine = \"fluid\")"
            ));
        }
        Ok(generated
            .into_iter()
            .map(|g| {
                let mut job = g.job;
                let submit_s = g.submit_ns as f64 / 1e9;
                for group in &mut job.groups {
                    group.shape.start_s += submit_s;
                }
                job
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(apps: u32) -> AppSetSpec {
        toml::from_str(&format!("apps = {apps}")).unwrap()
    }

    #[test]
    fn generation_is_deterministic_and_within_the_ranges() {
        let s = spec(200);
        let a = s.generate(64, 7);
        assert_eq!(a, s.generate(64, 7));
        assert_ne!(a, s.generate(64, 8));
        assert_eq!(a.len(), 200);
        assert_eq!(s.template_count(), 40);
        let mut prev = 0;
        for (i, g) in a.iter().enumerate() {
            assert!(g.submit_ns >= prev);
            prev = g.submit_ns;
            assert!(g.job.nodes.is_power_of_two() && (1..=32).contains(&g.job.nodes));
            let n_osts = g.job.groups.len() as u32;
            assert!(n_osts.is_power_of_two() && n_osts <= 8);
            // Every OST of a run carries the same number of processes.
            let counts: Vec<u32> = g.job.groups.iter().map(|p| p.numjobs).collect();
            assert!(counts.iter().all(|&c| c == counts[0]), "{counts:?}");
            assert_eq!(counts.iter().sum::<u32>(), g.job.nodes * 4);
            let sh = &g.job.groups[0].shape;
            let phases = sh.phases.unwrap();
            assert!((4..=16).contains(&phases));
            let c = sh.compute_s.unwrap();
            assert!((300.0..=3600.0).contains(&c), "{c}");
            let b = sh.phase_size.unwrap().bytes();
            assert!(((256 << 20)..=(4 << 30)).contains(&b) && b % (1 << 20) == 0);
            // The first `templates` runs are the templates in order; repeats share the id.
            if i < 40 {
                assert_eq!(g.template, i as u32);
            }
            assert_eq!(g.app, format!("t{}", g.template));
        }
        // Repeated runs of one template have the same shape.
        let t0: Vec<&GeneratedApp> = a.iter().filter(|g| g.template == a[199].template).collect();
        assert!(t0.len() >= 2);
        assert!(t0.windows(2).all(|w| w[0].job.nodes == w[1].job.nodes
            && w[0].job.groups[0].shape == w[1].job.groups[0].shape));
    }

    #[test]
    fn gamma_draws_have_the_right_mean_and_variance() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for shape in [0.5, 2.0, 5.0] {
            let n = 200_000;
            let xs: Vec<f64> = (0..n).map(|_| gamma(&mut rng, shape)).collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            // Gamma(k, 1): mean k, variance k.
            assert!(
                (mean - shape).abs() < 0.02 * shape.max(1.0),
                "{shape}: mean {mean}"
            );
            assert!(
                (var - shape).abs() < 0.05 * shape.max(1.0),
                "{shape}: var {var}"
            );
            assert!(xs.iter().all(|&x| x > 0.0));
        }
    }
}
