//! The fluid engine: the same scenarios as the RPC-level engine, with I/O as flows whose rates
//! are piecewise constant between events, for runs of days with hundreds of applications
//! (GIFT §4 simulates 25 days with 500 applications).
//!
//! # Model
//!
//! * **Flows.** The processes of one process group that have the same file layout behave
//!   identically (same shape, same bytes, same OSTs), so they are one flow with a
//!   multiplicity; a group of per-process files without `stripe_offset` gets one flow per
//!   process (each file has its own round-robin layout, created in the RPC engine's order).
//!   A flow's burst (an I/O phase) is `min(burst bytes, size − issued)` per process, spread
//!   over the OSTs of its layout exactly as RAID-0 striping puts those bytes on the objects;
//!   the flow advances on all its OSTs together (one rate per process: an I/O call completes
//!   when all its RPCs have, so a process cannot run ahead on its fast OSTs).
//! * **Sharing.** Rates are max-min fair per process (progressive filling) subject to
//!   * every OST's device time: a byte costs `1 / bandwidth` of the OST's device, with the
//!     device model's sequential bandwidth at `brw_size` for the flow's direction;
//!   * the policy's caps: the controller's per-application, per-OST bandwidth caps, rounded
//!     down to whole RPCs per second at `brw_size` as a TBF rule carries them, shared by the
//!     application's processes on that OST.
//!
//!   Per-process fairness is what FIFO gives in the RPC engine (every process keeps the same
//!   number of RPCs queued), and inside one TBF class the application's processes share its
//!   rate first come first served, which is per-process fair again. An application without a
//!   cap on an OST (it started I/O after the last decision) is limited only by the device.
//!   The network is not modelled: the fluid engine is for set-ups where the OSTs are the
//!   bottleneck (GIFT's: 64 HDDs at 102 MB/s behind 4.5 GB/s Ethernet).
//! * **Control.** The policy is a GIFT-family allocator from `pfsqos_core` (the same code the
//!   `Controller` adapter runs in the RPC engine), or `nobw` (no caps). Every decision period
//!   the engine builds the allocator's input the way the adapter builds it from an
//!   observation: the applications with activity on an OST during the last period, saturating
//!   demand, OST capacities of `capacity_rpcs_per_s × brw_size`, node counts summed over the
//!   application's runs.
//! * **Time.** Integer nanoseconds for events; rates and remaining bytes are `f64`. The next
//!   event is the earliest of: a flow finishing at its current rate (rounded up to the next
//!   ns), a burst start (end of a compute phase), a stop time, a decision, a job submission.
//!   Flows whose finish time is reached complete exactly (their remaining bytes are set to 0
//!   and their byte counts are the exact integers). Same scenario and seed, same bytes.
//! * **Lockstep.** With `appset.lockstep = true` all active flows of a generated job share one
//!   per-process rate (one unit of progressive filling): its processes advance together through
//!   the phase, not only meet at its end. This is GIFT's rate model (§2, Fig. 5: an
//!   application's effective bandwidth is its slowest OST's at every instant); with the
//!   default (barrier only at the phase end, as the RPC engine has it) a process on a less
//!   contended OST finishes early and its OST's bandwidth goes to others.
//! * **Batch.** Applications of an `[appset]` are submitted at their arrival times and
//!   started by [`crate::batch::Batch`] (FCFS + EASY backfilling) on the node pool; a job's
//!   end frees its nodes. Requested walltime = `walltime_factor` × its run time alone on idle
//!   OSTs.
//!
//! Outputs are the RPC engine's `RunOutput`: per-job bytes per OST per bin, `JobPhases`, the
//! controller trace (same samples as the `Controller` adapter), and GIFT's regret ledger. The
//! control log is empty (no `lctl` text is written), and `rpcs` counts `brw_size` pieces.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use pfsqos_core::control::gift::{
    allocation_trace, Allocation, Allocator, AppDemand, IntervalInput, OstCapacity, OstDemand,
};
use pfsqos_core::control::tbf_rate_rpcs_per_s;
use pfsqos_core::model::{JobId, OstId};
use pfsqos_core::place::PlacementContext;
use pfsqos_core::run::JobSeries;

use crate::batch::{Batch, BatchJob};
use crate::record::{
    ControlTraceEntry, EngineStats, JobOutput, JobPhases, PhaseRecord, RunOutput,
    CONTROL_TRACE_LEN_MAX,
};
use crate::scenario::{FileMode, JobSpec, Scenario, ShapeKind, SERIES_CELLS_MAX};
use crate::workload::{secs_to_ns, Shape};
use pfsqos_node::client::Raid0;
use pfsqos_node::mds::Placer;

/// Progress is reported every this many events.
const PROGRESS_EVERY_EVENTS: u64 = 1 << 14;
/// Most flows of one run (bounded by the scenario's process limits in practice).
const FLOWS_MAX: usize = 1 << 22;
/// Relative tolerance when deciding which resources saturate together in progressive filling.
const TIGHT_REL: f64 = 1e-12;

/// One application's activity in the last decision period: open streams per OST, node count
/// per job.
type AppActivity = (BTreeMap<u32, u32>, BTreeMap<u32, u32>);

/// Runs `scenario` under the policy `policy` with the fluid engine.
pub fn run(
    scenario: &Scenario,
    policy: &(impl crate::policy::PolicyArg + ?Sized),
    seed: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RunOutput, crate::error::RunError> {
    use crate::error::RunError;
    // Sequenced groups need per-process completion, which flows do not have; validation
    // refuses them too, this catches a scenario built in code.
    for job in &scenario.jobs {
        if let Some((i, key)) = job.groups.iter().enumerate().find_map(|(i, g)| {
            g.after
                .map(|_| (i, "after"))
                .or(g.files_of.map(|_| (i, "files_of")))
        }) {
            return Err(RunError::Engine(format!(
                "job `{}` processes[{i}]: `{key}` is run by the RPC-level engine only (engine = \"rpc\")",
                job.id
            )));
        }
    }
    let choice = policy.choice().map_err(RunError::Policy)?;
    let policy = choice.spec();
    let allocator = choice.allocator(seed).map_err(RunError::Policy)?;
    let period_ns = choice.allocator_period_ns();
    let mut sim =
        Fluid::new(scenario, policy, seed, allocator, period_ns).map_err(RunError::Scenario)?;
    sim.run(progress);
    Ok(sim.finish())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FlowState {
    /// Not started, or computing before its next burst.
    Waiting,
    Active,
    /// Finished its part of a phase; waits at the job's barrier.
    Parked,
    Done,
}

struct Flow {
    job: u32,
    shape: u32,
    mult: u32,
    is_read: bool,
    random: bool,
    layout: Vec<u32>,
    stripe_size_bytes: u64,
    region_base_bytes: u64,
    size_bytes: u64,
    state: FlowState,
    issued_bytes: u64,
    cursor_bytes: u64,
    burst_index: u32,
    burst_start_ns: u64,
    /// Bytes of the burst scheduled next (per process).
    next_burst_bytes: u64,
    /// Bytes of the current (or last) burst per process.
    planned_bytes: u64,
    remaining_bytes: f64,
    /// `(OST, bytes per process)` of the current (or last) burst.
    uses: Vec<(u32, u64)>,
    /// Bytes (all processes) already put into the series, per use.
    emitted: Vec<u64>,
    /// Bytes per second per process.
    rate: f64,
    finish_ns: u64,
    /// When the flow was last doing I/O (for the controller's "active in the period").
    last_active_ns: u64,
    /// Bumped whenever a scheduled burst start becomes stale.
    epoch: u32,
}

struct JobRt {
    spec_id: String,
    app: u32,
    node_count: u32,
    weight: u32,
    flows: std::ops::Range<u32>,
    processes_left: u32,
    bytes_read: u64,
    bytes_written: u64,
    rpcs: u64,
    first_io_ns: Option<u64>,
    last_io_ns: Option<u64>,
    start_ns: u64,
    /// Shapes' `start_s` are relative to this (the batch start; 0 for explicit jobs).
    offset_ns: u64,
    barrier: Option<Barrier>,
    /// The job's processes advance at one rate through every I/O phase (`appset.lockstep`).
    lockstep: bool,
    /// Walltime for the batch scheduler; `None` for explicit jobs (they start at 0).
    walltime_ns: Option<u64>,
    submit_ns: u64,
    started: bool,
    /// Bytes per OST its flows use and bin.
    series: JobSeries,
}

struct Barrier {
    running: u32,
    phase_start_ns: Option<u64>,
    phase_bytes: u64,
    record: JobPhases,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Submit { job: u32 },
    BurstStart { flow: u32, epoch: u32 },
    Stop { flow: u32 },
    Decision,
}

struct Fluid {
    scenario_name: String,
    policy: String,
    seed: u64,
    /// `simulation.start_jitter_s`: each job starts up to this much late (seeded).
    start_jitter_ns: u64,
    now_ns: u64,
    duration_ns: u64,
    bin_ns: u64,
    bins: usize,
    /// Cells the jobs' series may take (every OST of their layouts), at most
    /// [`SERIES_CELLS_MAX`].
    series_cells: u64,
    brw_size_bytes: u64,
    n_osts: usize,
    /// Per OST: device bandwidth for writes and reads (bytes/s).
    ost_write_bytes_per_s: Vec<f64>,
    ost_read_bytes_per_s: Vec<f64>,
    /// Per OST: the controller's capacity (`capacity_rpcs_per_s × brw_size`).
    ost_capacity_bytes_per_s: Vec<f64>,
    shapes: Vec<Shape>,
    flows: Vec<Flow>,
    jobs: Vec<JobRt>,
    apps: Vec<JobId>,
    processes_left: u64,
    queue: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    events: u64,
    rpcs: u64,
    active: Vec<u32>,
    rates_dirty: bool,
    batch: Option<Batch>,
    batch_dirty: bool,
    allocator: Option<Box<dyn Allocator>>,
    period_ns: Option<u64>,
    /// `(app, OST)` → cap in bytes/s from the last decision.
    caps: BTreeMap<(u32, u32), f64>,
    record_trace: bool,
    /// Requested walltime over run time alone (`appset.walltime_factor`).
    walltime_factor: f64,
    /// Generated jobs advance in lockstep (`appset.lockstep`).
    lockstep: bool,
    control_trace: Vec<ControlTraceEntry>,
    control_trace_truncated: bool,
}

/// Bytes of `[start, start + len)` of a RAID-0 file (`count` stripes of `ss`) on each stripe:
/// what the first `start + len` bytes put in each object less what the first `start` did
/// (`pfsqos_node::client::Raid0`, the one RAID-0 arithmetic).
fn stripe_bytes(ss: u64, count: u64, start: u64, len: u64) -> Vec<u64> {
    let raid0 = Raid0::new(ss, count as u32);
    (0..count as u32)
        .map(|i| raid0.object_size(i, start + len) - raid0.object_size(i, start))
        .collect()
}

impl Fluid {
    fn new(
        scenario: &Scenario,
        policy: &str,
        seed: u64,
        allocator: Option<Box<dyn Allocator>>,
        period_ns: Option<u64>,
    ) -> Result<Fluid, String> {
        let cluster = &scenario.cluster;
        let brw = cluster.brw_size.bytes().max(1);
        let table = crate::device::DeviceTable::build(scenario)?;
        for m in &table.models {
            if m.has_sequence_costs() {
                return Err(format!(
                    "device `{}` has a profile whose costs depend on the order of \
                     requests at the device (switching between objects or directions), \
                     which needs a queue: use the RPC-level engine",
                    m.name
                ));
            }
            if m.has_congestion() {
                return Err(format!(
                    "device `{}` has a congestion curve, which needs a queue: use the \
                     RPC-level engine",
                    m.name
                ));
            }
        }
        let mut ost_write = Vec::new();
        let mut ost_read = Vec::new();
        let mut ost_cap = Vec::new();
        for (oss_index, spec) in scenario.osses.iter().enumerate() {
            let m = &table.models[table.oss_model[oss_index] as usize];
            let capacity = table.oss_capacity_rpcs_per_s[oss_index];
            for _ in 0..spec.osts {
                ost_write.push(m.sequential_bytes_per_s(false, brw));
                ost_read.push(m.sequential_bytes_per_s(true, brw));
                ost_cap.push(capacity.max(1) as f64 * brw as f64);
            }
        }
        let n_osts = ost_write.len();
        if n_osts == 0 {
            return Err("the cluster has no OST".to_string());
        }

        // Jobs: explicit ones first (start at 0), then the generated set.
        let mut specs: Vec<(&JobSpec, String, Option<u64>, u64)> = scenario
            .jobs
            .iter()
            .map(|j| (j, j.id.clone(), None, 0))
            .collect();
        let generated = scenario
            .appset
            .as_ref()
            .map(|a| a.generate(n_osts as u32, scenario.simulation.seed))
            .unwrap_or_default();
        let per_run = scenario
            .appset
            .as_ref()
            .is_some_and(|a| a.identity == crate::scenario::appset::Identity::Run);
        for g in &generated {
            let app = if per_run {
                g.job.id.clone()
            } else {
                g.app.clone()
            };
            specs.push((&g.job, app, Some(0), g.submit_ns));
        }

        let mut fluid = Fluid {
            scenario_name: scenario.name.clone(),
            policy: policy.to_string(),
            seed,
            start_jitter_ns: secs_to_ns(scenario.simulation.start_jitter_s),
            now_ns: 0,
            duration_ns: secs_to_ns(scenario.simulation.duration_s),
            bin_ns: scenario.simulation.bin_ms.max(1) * 1_000_000,
            bins: 0,
            series_cells: 0,
            brw_size_bytes: brw,
            n_osts,
            ost_write_bytes_per_s: ost_write,
            ost_read_bytes_per_s: ost_read,
            ost_capacity_bytes_per_s: ost_cap,
            shapes: Vec::new(),
            flows: Vec::new(),
            jobs: Vec::new(),
            apps: Vec::new(),
            processes_left: 0,
            queue: BinaryHeap::new(),
            seq: 0,
            events: 0,
            rpcs: 0,
            active: Vec::new(),
            rates_dirty: false,
            batch: None,
            batch_dirty: false,
            allocator,
            period_ns: period_ns.filter(|&p| p > 0),
            caps: BTreeMap::new(),
            record_trace: scenario.simulation.control_trace,
            walltime_factor: scenario.appset.as_ref().map_or(1.0, |a| a.walltime_factor),
            lockstep: scenario.appset.as_ref().is_some_and(|a| a.lockstep),
            control_trace: Vec::new(),
            control_trace_truncated: false,
        };
        fluid.bins = (fluid.duration_ns / fluid.bin_ns + 1) as usize;
        let mut app_index: BTreeMap<String, u32> = BTreeMap::new();
        let run_jobs: Vec<&JobSpec> = specs.iter().map(|s| s.0).collect();
        let (mut placer, _) =
            crate::placement::placer_for(scenario, fluid.n_osts as u32, &run_jobs)?;
        for (job, app, walltime, submit_ns) in specs {
            let app_id = JobId::new(&app).map_err(|e| format!("application `{app}`: {e}"))?;
            let next_app = app_index.len() as u32;
            let app = *app_index.entry(app).or_insert(next_app);
            if app == fluid.apps.len() as u32 {
                fluid.apps.push(app_id);
            }
            fluid.add_job(job, app, walltime, submit_ns, cluster, &mut placer)?;
        }
        if scenario.appset.is_some() {
            let pool = scenario
                .appset
                .as_ref()
                .and_then(|a| a.node_pool)
                .unwrap_or(cluster.clients);
            fluid.batch = Some(Batch::new(pool));
        }
        Ok(fluid)
    }

    fn add_job(
        &mut self,
        job: &JobSpec,
        app: u32,
        batch: Option<u64>,
        submit_ns: u64,
        cluster: &crate::scenario::ClusterSpec,
        placer: &mut Placer,
    ) -> Result<(), String> {
        let n_osts = self.n_osts as u64;
        let job_id = JobId::new(&job.id).map_err(|e| format!("job `{}`: {e}", job.id))?;
        let first_flow = self.flows.len() as u32;
        let phased = job.groups.iter().any(|g| g.shape.kind == ShapeKind::Phases);
        let mut processes = 0u32;
        let job_index = self.jobs.len() as u32;
        let start_delay_ns =
            crate::workload::job_start_delay_ns(self.seed, job_index, self.start_jitter_ns);
        for group in &job.groups {
            let shape = self.shapes.len() as u32;
            self.shapes
                .push(Shape::from_spec(&group.shape).delayed(start_delay_ns));
            let count =
                u64::from(group.stripe_count.unwrap_or(cluster.stripe_count).max(1)).min(n_osts);
            let ss = group
                .stripe_size
                .unwrap_or(cluster.stripe_size)
                .bytes()
                .max(1);
            // Layouts from the same placer as the RPC engine's, created in the same order and
            // by their job (a forecasting placer, iez, finds the job's predictions by it). The
            // scenario is validated (1..=OSTs stripes, an existing start OST).
            let context = PlacementContext {
                now_ns: 0,
                job: job_id,
            };
            let mut layout = |offset: Option<u32>| -> Result<(Vec<u32>, u64), String> {
                let l = placer
                    .create_for(&context, count as i32, ss, offset)
                    .map_err(|e| e.to_string())?;
                // The placer's stripe size (iez sizes stripes from the forecast, Method II).
                Ok((l.osts.iter().map(|o| o.0).collect(), l.stripe_size_bytes))
            };
            // ((layout, stripe size), region base, multiplicity)
            let mut members: Vec<((Vec<u32>, u64), u64, u32)> = Vec::new();
            match group.file {
                FileMode::Shared => {
                    let l = layout(group.stripe_offset)?;
                    for k in 0..group.numjobs {
                        members.push((l.clone(), u64::from(k) * group.size.bytes(), 1));
                    }
                }
                FileMode::PerProcess if group.stripe_offset.is_some() => {
                    let l = layout(group.stripe_offset)?;
                    members.push((l, 0, group.numjobs));
                }
                FileMode::PerProcess => {
                    for _ in 0..group.numjobs {
                        members.push((layout(None)?, 0, 1));
                    }
                }
            }
            for ((layout, stripe_size_bytes), region_base_bytes, mult) in members {
                if self.flows.len() >= FLOWS_MAX {
                    return Err(format!("more than {FLOWS_MAX} flows"));
                }
                self.flows.push(Flow {
                    job: job_index,
                    shape,
                    mult,
                    is_read: group.rw.is_read(),
                    random: group.rw.is_random(),
                    layout,
                    stripe_size_bytes,
                    region_base_bytes,
                    size_bytes: group.size.bytes(),
                    state: FlowState::Waiting,
                    issued_bytes: 0,
                    cursor_bytes: 0,
                    burst_index: 0,
                    burst_start_ns: 0,
                    next_burst_bytes: 0,
                    planned_bytes: 0,
                    remaining_bytes: 0.0,
                    uses: Vec::new(),
                    emitted: Vec::new(),
                    rate: 0.0,
                    finish_ns: u64::MAX,
                    last_active_ns: 0,
                    epoch: 0,
                });
            }
            processes += group.numjobs;
        }
        let flows = first_flow..self.flows.len() as u32;
        // The job's series can list every OST its flows lay out on: bounded before the run,
        // since a fluid run places every file up front.
        let osts: BTreeSet<u32> = self.flows[first_flow as usize..]
            .iter()
            .flat_map(|f| f.layout.iter().copied())
            .collect();
        self.series_cells += osts.len() as u64 * self.bins as u64;
        if self.series_cells > SERIES_CELLS_MAX {
            return Err(format!(
                "job `{}`: the jobs' time series could take {} cells ({} bins for each OST a \
                 job's files are on; at most {SERIES_CELLS_MAX}): use a larger bin_ms",
                job.id, self.series_cells, self.bins
            ));
        }
        let walltime_ns = batch.map(|_| {
            let alone_ns = self.walltime_ns(job);
            (alone_ns as f64 * self.walltime_factor).ceil() as u64
        });
        self.processes_left += u64::from(processes);
        self.jobs.push(JobRt {
            spec_id: job.id.clone(),
            app,
            node_count: job.nodes,
            weight: job.weight(),
            flows: flows.clone(),
            processes_left: processes,
            bytes_read: 0,
            bytes_written: 0,
            rpcs: 0,
            first_io_ns: None,
            last_io_ns: None,
            start_ns: 0,
            offset_ns: 0,
            barrier: phased.then(|| Barrier {
                running: flows.len() as u32,
                phase_start_ns: None,
                phase_bytes: 0,
                record: JobPhases::default(),
            }),
            walltime_ns,
            lockstep: batch.is_some() && self.lockstep,
            submit_ns,
            started: false,
            series: JobSeries::new(self.bins),
        });
        Ok(())
    }

    /// Run time alone of a generated job (every phase: compute, then the I/O of its most
    /// loaded OST at full device bandwidth); the walltime is the appset's factor times this.
    fn walltime_ns(&self, job: &JobSpec) -> u64 {
        let mut per_ost = vec![0u64; self.n_osts];
        let mut phases = 0u32;
        let mut compute_s = 0.0;
        for g in &job.groups {
            let bytes = g.shape.phase_size.map_or(0, |b| b.bytes()) * u64::from(g.numjobs);
            let ost = g.stripe_offset.unwrap_or(0) as usize % self.n_osts;
            per_ost[ost] += bytes;
            phases = phases.max(g.shape.phases.unwrap_or(0));
            compute_s = g.shape.compute_s.unwrap_or(0.0);
        }
        let io_s = per_ost
            .iter()
            .enumerate()
            .map(|(j, &b)| b as f64 / self.ost_write_bytes_per_s[j])
            .fold(0.0, f64::max);
        secs_to_ns(f64::from(phases) * (compute_s + io_s))
    }

    fn push(&mut self, at_ns: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse((at_ns, self.seq, ev)));
    }

    // ------------------------------------------------------------------ main loop

    fn run(&mut self, progress: &mut dyn FnMut(u64, u64)) {
        for j in 0..self.jobs.len() as u32 {
            if self.jobs[j as usize].walltime_ns.is_some() {
                let at = self.jobs[j as usize].submit_ns;
                self.push(at, Ev::Submit { job: j });
            } else {
                self.start_job(j);
            }
        }
        if let Some(p) = self.period_ns {
            if self.allocator.is_some() {
                self.push(p, Ev::Decision);
            }
        }
        self.settle();
        while self.processes_left > 0 {
            let next_finish = self
                .active
                .iter()
                .map(|&f| self.flows[f as usize].finish_ns)
                .min()
                .unwrap_or(u64::MAX);
            let next_event = self.queue.peek().map_or(u64::MAX, |Reverse((t, _, _))| *t);
            let t = next_finish.min(next_event);
            if t == u64::MAX {
                break;
            }
            if t > self.duration_ns {
                self.advance(self.duration_ns);
                break;
            }
            self.advance(t);
            self.events += 1;
            if self.events.is_multiple_of(PROGRESS_EVERY_EVENTS) {
                progress(t, self.duration_ns);
            }
            self.settle();
        }
        if self.processes_left > 0 {
            self.now_ns = self.duration_ns;
        }
        progress(self.now_ns, self.duration_ns);
    }

    /// Handles everything due at `now`: completions, events, batch starts; then new rates.
    fn settle(&mut self) {
        loop {
            let mut did = false;
            // Completions, in flow order.
            let mut due: Vec<u32> = self
                .active
                .iter()
                .copied()
                .filter(|&f| self.flows[f as usize].finish_ns <= self.now_ns)
                .collect();
            due.sort_unstable();
            for f in due {
                did = true;
                self.complete_burst(f);
            }
            while let Some(Reverse((t, _, ev))) = self.queue.peek().copied() {
                if t > self.now_ns {
                    break;
                }
                self.queue.pop();
                did = true;
                self.handle(ev);
            }
            if self.batch_dirty {
                self.batch_dirty = false;
                let now = self.now_ns;
                let started = self
                    .batch
                    .as_mut()
                    .map(|b| b.schedule(now))
                    .unwrap_or_default();
                for j in started {
                    did = true;
                    self.start_job(j.id);
                }
            }
            if !did {
                break;
            }
        }
        if self.rates_dirty {
            self.rates_dirty = false;
            self.compute_rates();
        }
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Submit { job } => {
                let j = &self.jobs[job as usize];
                let bj = BatchJob {
                    id: job,
                    nodes: j.node_count.max(1),
                    submit_ns: j.submit_ns,
                    walltime_ns: j.walltime_ns.unwrap_or(0),
                };
                if let Some(b) = &mut self.batch {
                    b.submit(bj);
                    self.batch_dirty = true;
                }
            }
            Ev::BurstStart { flow, epoch } => {
                if self.flows[flow as usize].epoch == epoch {
                    self.burst_start(flow);
                }
            }
            Ev::Stop { flow } => self.stop_flow(flow),
            Ev::Decision => {
                self.decide();
                if let Some(p) = self.period_ns {
                    self.push(self.now_ns + p, Ev::Decision);
                }
            }
        }
    }

    fn start_job(&mut self, j: u32) {
        let now = self.now_ns;
        let job = &mut self.jobs[j as usize];
        job.started = true;
        job.offset_ns = now;
        let flows = job.flows.clone();
        let start = flows
            .clone()
            .map(|f| self.shapes[self.flows[f as usize].shape as usize].start_ns)
            .min()
            .unwrap_or(0);
        let job = &mut self.jobs[j as usize];
        job.start_ns = now + start;
        if let Some(b) = &mut job.barrier {
            b.record.start_ns = now + start;
        }
        for f in flows {
            self.schedule_burst(f, 0, 0, 0);
            let shape = &self.shapes[self.flows[f as usize].shape as usize];
            if shape.stop_ns != u64::MAX {
                let at = now.saturating_add(shape.stop_ns);
                if at <= self.duration_ns {
                    self.push(at, Ev::Stop { flow: f });
                }
            }
        }
    }

    // ------------------------------------------------------------------ flows

    fn schedule_burst(&mut self, f: u32, index: u32, prev_start_ns: u64, prev_end_ns: u64) {
        let fl = &self.flows[f as usize];
        let job = &self.jobs[fl.job as usize];
        let shape = &self.shapes[fl.shape as usize];
        let offset = job.offset_ns;
        let stop_ns = if shape.stop_ns == u64::MAX {
            u64::MAX
        } else {
            offset.saturating_add(shape.stop_ns)
        };
        let exhausted = fl.issued_bytes >= fl.size_bytes;
        let burst = shape
            .burst(index, prev_start_ns, prev_end_ns)
            .map(|(at, bytes)| {
                // The first burst's time is relative to the job's start (its shapes say
                // `start_s` from the job's start); later ones follow absolute times.
                let at = if index == 0 {
                    offset.saturating_add(at)
                } else {
                    at
                };
                (at, bytes)
            });
        match burst {
            Some((at_ns, bytes)) if !exhausted && at_ns < stop_ns => {
                let at_ns = at_ns.max(self.now_ns);
                let fl = &mut self.flows[f as usize];
                fl.burst_index = index;
                fl.state = FlowState::Waiting;
                fl.next_burst_bytes = bytes;
                fl.epoch += 1;
                let epoch = fl.epoch;
                self.push(at_ns, Ev::BurstStart { flow: f, epoch });
            }
            _ => self.finish_flow(f),
        }
    }

    fn burst_start(&mut self, f: u32) {
        let now = self.now_ns;
        let fl = &mut self.flows[f as usize];
        if fl.state != FlowState::Waiting {
            return;
        }
        let planned = fl
            .next_burst_bytes
            .min(fl.size_bytes.saturating_sub(fl.issued_bytes));
        fl.state = FlowState::Active;
        fl.burst_start_ns = now;
        fl.planned_bytes = planned;
        fl.remaining_bytes = planned as f64;
        fl.issued_bytes += planned;
        // Bytes per OST of this burst, as striping places them.
        let count = fl.layout.len() as u64;
        let per_stripe = if fl.random {
            // Random offsets over the whole region: the region's proportions.
            let whole = stripe_bytes(
                fl.stripe_size_bytes,
                count,
                fl.region_base_bytes,
                fl.size_bytes,
            );
            let total: u64 = whole.iter().sum::<u64>().max(1);
            let mut v: Vec<u64> = whole
                .iter()
                .map(|&b| (b as u128 * planned as u128 / total as u128) as u64)
                .collect();
            let short = planned - v.iter().sum::<u64>();
            let k = whole.iter().position(|&b| b > 0).unwrap_or(0);
            v[k] += short;
            v
        } else {
            let size = fl.size_bytes.max(1);
            let mut v = vec![0u64; count as usize];
            let mut left = planned;
            let mut cursor = fl.cursor_bytes % size;
            while left > 0 {
                let take = left.min(size - cursor);
                for (i, b) in stripe_bytes(
                    fl.stripe_size_bytes,
                    count,
                    fl.region_base_bytes + cursor,
                    take,
                )
                .into_iter()
                .enumerate()
                {
                    v[i] += b;
                }
                left -= take;
                cursor = (cursor + take) % size;
            }
            fl.cursor_bytes = cursor;
            v
        };
        fl.uses = fl
            .layout
            .iter()
            .zip(per_stripe)
            .filter(|&(_, b)| b > 0)
            .map(|(&o, b)| (o, b))
            .collect();
        fl.emitted = vec![0; fl.uses.len()];
        fl.last_active_ns = now;
        let (job, mult) = (fl.job, fl.mult);
        let j = &mut self.jobs[job as usize];
        if let Some(b) = &mut j.barrier {
            b.phase_start_ns.get_or_insert(now);
            b.phase_bytes += planned * u64::from(mult);
        }
        if planned == 0 {
            self.complete_burst(f);
            return;
        }
        j.first_io_ns.get_or_insert(now);
        for &(o, _) in &self.flows[f as usize].uses {
            j.series.ensure(o);
        }
        self.active.push(f);
        self.rates_dirty = true;
    }

    /// The flow's burst is over at `now` (finished, or cut by its stop time).
    fn complete_burst(&mut self, f: u32) {
        let now = self.now_ns;
        if let Some(k) = self.active.iter().position(|&a| a == f) {
            self.active.swap_remove(k);
            self.rates_dirty = true;
        }
        let cut =
            self.flows[f as usize].remaining_bytes > 0.0 && self.flows[f as usize].finish_ns > now;
        let fl = &mut self.flows[f as usize];
        // Bytes done per process: everything unless the burst was cut.
        let done = if cut {
            let d = (fl.planned_bytes as f64 - fl.remaining_bytes)
                .floor()
                .max(0.0) as u64;
            d.min(fl.planned_bytes)
        } else {
            fl.planned_bytes
        };
        let mult = u64::from(fl.mult);
        let mut total = 0u64;
        let mut rpcs = 0u64;
        let bin = ((now / self.bin_ns) as usize).min(self.bins - 1);
        let job = fl.job as usize;
        for (k, &(o, b)) in fl.uses.iter().enumerate() {
            let on_ost = if done == fl.planned_bytes {
                b
            } else {
                (b as u128 * done as u128 / fl.planned_bytes.max(1) as u128) as u64
            };
            let all = on_ost * mult;
            total += all;
            rpcs += on_ost.div_ceil(self.brw_size_bytes) * mult;
            let rest = all.saturating_sub(fl.emitted[k]);
            fl.emitted[k] = all;
            if rest > 0 {
                self.jobs[job].series.row_mut(o)[bin] += rest;
            }
        }
        if cut {
            fl.issued_bytes -= fl.planned_bytes - done;
        }
        fl.remaining_bytes = 0.0;
        fl.rate = 0.0;
        fl.finish_ns = u64::MAX;
        fl.last_active_ns = now;
        let (is_read, phased_shape) = (fl.is_read, self.shapes[fl.shape as usize].is_phased());
        let (index, burst_start, issued, size) = (
            fl.burst_index,
            fl.burst_start_ns,
            fl.issued_bytes,
            fl.size_bytes,
        );
        self.rpcs += rpcs;
        let j = &mut self.jobs[job];
        if is_read {
            j.bytes_read += total;
        } else {
            j.bytes_written += total;
        }
        j.rpcs += rpcs;
        if total > 0 {
            j.last_io_ns = Some(now);
        }
        if let (true, Some(b)) = (cut, &mut j.barrier) {
            b.phase_bytes -= (self.flows[f as usize].planned_bytes - done) * mult;
        }
        if phased_shape && j.barrier.is_some() {
            self.phase_part_done(f);
            return;
        }
        let stop = self.shapes[self.flows[f as usize].shape as usize].stop_ns;
        let stop_abs = self.jobs[job].offset_ns.saturating_add(stop);
        if issued >= size || now >= stop_abs {
            self.finish_flow(f);
        } else {
            self.schedule_burst(f, index + 1, burst_start, now);
        }
    }

    fn phase_part_done(&mut self, f: u32) {
        let now = self.now_ns;
        let job = self.flows[f as usize].job as usize;
        self.flows[f as usize].state = FlowState::Parked;
        let Some(b) = &mut self.jobs[job].barrier else {
            return;
        };
        b.running -= 1;
        if b.running > 0 {
            return;
        }
        b.record.done.push(PhaseRecord {
            start_ns: b.phase_start_ns.take().unwrap_or(now),
            end_ns: now,
            bytes: std::mem::take(&mut b.phase_bytes),
        });
        let flows = self.jobs[job].flows.clone();
        let mut running = 0;
        for q in flows {
            if self.flows[q as usize].state == FlowState::Done {
                continue;
            }
            let index = self.flows[q as usize].burst_index;
            self.schedule_burst(q, index + 1, 0, now);
            running += u32::from(self.flows[q as usize].state != FlowState::Done);
        }
        if let Some(b) = &mut self.jobs[job].barrier {
            b.running = running;
        }
    }

    fn stop_flow(&mut self, f: u32) {
        match self.flows[f as usize].state {
            FlowState::Waiting => {
                self.flows[f as usize].epoch += 1;
                let job = self.flows[f as usize].job as usize;
                let phased = self.jobs[job].barrier.is_some();
                self.finish_flow(f);
                if phased {
                    // A stopped process no longer holds its job's barrier.
                    self.release_barrier_slot(job);
                }
            }
            // The burst is cut where it is (the fluid has no I/O in flight).
            FlowState::Active => self.complete_burst(f),
            FlowState::Parked | FlowState::Done => {}
        }
    }

    fn release_barrier_slot(&mut self, job: usize) {
        if let Some(b) = &mut self.jobs[job].barrier {
            if b.running > 0 && b.phase_start_ns.is_some() {
                b.running -= 1;
            }
        }
    }

    fn finish_flow(&mut self, f: u32) {
        let fl = &mut self.flows[f as usize];
        if fl.state == FlowState::Done {
            return;
        }
        fl.state = FlowState::Done;
        let (job, mult) = (fl.job as usize, fl.mult);
        self.processes_left -= u64::from(mult);
        let j = &mut self.jobs[job];
        j.processes_left -= mult;
        if j.processes_left == 0 && j.walltime_ns.is_some() {
            if let Some(b) = &mut self.batch {
                b.finish(job as u32);
                self.batch_dirty = true;
            }
        }
    }

    // ------------------------------------------------------------------ time

    /// Moves every active flow forward to `t`.
    fn advance(&mut self, t: u64) {
        let t0 = self.now_ns;
        if t <= t0 {
            self.now_ns = t0.max(t);
            return;
        }
        let dt_s = (t - t0) as f64 / 1e9;
        for &f in &self.active {
            let fl = &mut self.flows[f as usize];
            fl.remaining_bytes = (fl.remaining_bytes - fl.rate * dt_s).max(0.0);
            fl.last_active_ns = t;
            if fl.planned_bytes == 0 {
                continue;
            }
            let frac = 1.0 - fl.remaining_bytes / fl.planned_bytes as f64;
            let job = fl.job as usize;
            let mult = u64::from(fl.mult);
            for (k, &(o, b)) in fl.uses.iter().enumerate() {
                let all = b * mult;
                let target = ((frac * all as f64).floor() as u64).min(all);
                let delta = target.saturating_sub(fl.emitted[k]);
                if delta == 0 {
                    continue;
                }
                fl.emitted[k] += delta;
                spread(self.jobs[job].series.row_mut(o), self.bin_ns, t0, t, delta);
            }
        }
        self.now_ns = t;
    }

    /// Per-process max-min fair rates under device time and the policy's caps (progressive
    /// filling), then every active flow's finish time.
    fn compute_rates(&mut self) {
        let n_osts = self.n_osts;
        // Resources: OST devices (capacity 1 = fully busy), then caps in use.
        let mut capacity: Vec<f64> = vec![1.0; n_osts];
        let mut cap_index: BTreeMap<(u32, u32), usize> = BTreeMap::new();
        // Per active flow: (resource, coefficient per unit of per-process rate).
        let mut uses: Vec<Vec<(usize, f64)>> = Vec::with_capacity(self.active.len());
        self.active.sort_unstable();
        for &f in &self.active {
            let fl = &self.flows[f as usize];
            let app = self.jobs[fl.job as usize].app;
            let mult = f64::from(fl.mult);
            let planned = fl.planned_bytes.max(1) as f64;
            let mut v = Vec::with_capacity(fl.uses.len() * 2);
            for &(o, b) in &fl.uses {
                let w = b as f64 / planned;
                let bw = if fl.is_read {
                    self.ost_read_bytes_per_s[o as usize]
                } else {
                    self.ost_write_bytes_per_s[o as usize]
                };
                v.push((o as usize, mult * w / bw));
                if let Some(&cap) = self.caps.get(&(app, o)) {
                    let r = *cap_index.entry((app, o)).or_insert_with(|| {
                        capacity.push(cap);
                        capacity.len() - 1
                    });
                    v.push((r, mult * w));
                }
            }
            uses.push(v);
        }
        // Units of progressive filling: a flow, or all active flows of a lockstep job (one
        // rate per process for the whole job, so no process runs ahead of the others).
        let mut unit_of_job: BTreeMap<u32, usize> = BTreeMap::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut unit_uses: Vec<Vec<(usize, f64)>> = Vec::new();
        for (i, v) in uses.into_iter().enumerate() {
            let job = self.flows[self.active[i] as usize].job;
            let unit = if self.jobs[job as usize].lockstep {
                *unit_of_job.entry(job).or_insert_with(|| {
                    members.push(Vec::new());
                    unit_uses.push(Vec::new());
                    members.len() - 1
                })
            } else {
                members.push(Vec::new());
                unit_uses.push(Vec::new());
                members.len() - 1
            };
            members[unit].push(i);
            for (r, c) in v {
                match unit_uses[unit].iter_mut().find(|(q, _)| *q == r) {
                    Some((_, old)) => *old += c,
                    None => unit_uses[unit].push((r, c)),
                }
            }
        }
        let uses = unit_uses;
        let n_res = capacity.len();
        let mut used = vec![0.0f64; n_res];
        let mut coef = vec![0.0f64; n_res];
        for v in &uses {
            for &(r, c) in v {
                coef[r] += c;
            }
        }
        let mut frozen = vec![false; uses.len()];
        let mut rates = vec![0.0f64; uses.len()];
        let mut left = uses.len();
        while left > 0 {
            let mut level = f64::INFINITY;
            for r in 0..n_res {
                if coef[r] > 0.0 {
                    level = level.min(((capacity[r] - used[r]) / coef[r]).max(0.0));
                }
            }
            if !level.is_finite() {
                // Flows that touch no resource (no bytes): nothing limits them.
                break;
            }
            let tight: Vec<bool> = (0..n_res)
                .map(|r| {
                    coef[r] > 0.0
                        && ((capacity[r] - used[r]) / coef[r]).max(0.0)
                            <= level * (1.0 + TIGHT_REL) + f64::MIN_POSITIVE
                })
                .collect();
            for (i, v) in uses.iter().enumerate() {
                if frozen[i] || !v.iter().any(|&(r, _)| tight[r]) {
                    continue;
                }
                frozen[i] = true;
                left -= 1;
                rates[i] = level;
                for &(r, c) in v {
                    used[r] += c * level;
                    coef[r] -= c;
                }
            }
            for r in 0..n_res {
                if tight[r] {
                    coef[r] = 0.0;
                }
            }
        }
        let mut flow_rates = vec![0.0f64; self.active.len()];
        for (unit, m) in members.iter().enumerate() {
            for &i in m {
                flow_rates[i] = rates[unit];
            }
        }
        let now = self.now_ns;
        for (i, &f) in self.active.iter().enumerate() {
            let fl = &mut self.flows[f as usize];
            fl.rate = flow_rates[i];
            fl.finish_ns = if fl.remaining_bytes <= 0.0 {
                now
            } else if fl.rate > 0.0 {
                let dt = (fl.remaining_bytes / fl.rate * 1e9).ceil();
                if dt >= (u64::MAX - now) as f64 {
                    u64::MAX
                } else {
                    now + (dt as u64).max(1)
                }
            } else {
                u64::MAX
            };
        }
    }

    // ------------------------------------------------------------------ control

    fn decide(&mut self) {
        let Some(period) = self.period_ns else {
            return;
        };
        let now = self.now_ns;
        let since = now.saturating_sub(period);
        // Applications with activity on an OST in the last period, as the adapter sees them,
        // with their open streams per OST (processes of the flows using it; the `stream`
        // share unit of the authors' artifact counts them).
        let mut per_app: BTreeMap<u32, AppActivity> = BTreeMap::new();
        for fl in &self.flows {
            let recent = fl.state == FlowState::Active
                || (fl.planned_bytes > 0 && fl.last_active_ns > since && fl.last_active_ns > 0);
            if !recent {
                continue;
            }
            let job = &self.jobs[fl.job as usize];
            let e = per_app.entry(job.app).or_default();
            for &(o, _) in &fl.uses {
                *e.0.entry(o).or_default() += fl.mult;
            }
            e.1.insert(fl.job, job.node_count);
        }
        let osts = (0..self.n_osts)
            .map(|o| OstCapacity {
                ost: OstId(o as u32),
                capacity_bytes_per_s: self.ost_capacity_bytes_per_s[o],
            })
            .collect();
        let apps = per_app
            .iter()
            .filter(|(_, (o, _))| !o.is_empty())
            .map(|(&app, (o, jobs))| AppDemand {
                app: self.apps[app as usize],
                nodes: jobs.values().sum::<u32>().max(1),
                osts: o
                    .iter()
                    .map(|(&ost, &streams)| OstDemand {
                        ost: OstId(ost),
                        demand_bytes_per_s: self.ost_capacity_bytes_per_s[ost as usize],
                        streams: streams.max(1),
                    })
                    .collect(),
            })
            .collect();
        let input = IntervalInput {
            now_ns: now,
            interval_ns: period,
            osts,
            apps,
        };
        let Some(allocator) = &mut self.allocator else {
            return;
        };
        let Ok(allocation) = allocator.allocate(&input) else {
            // Bad input keeps the previous caps, as the adapter keeps the previous rules.
            return;
        };
        self.apply(&allocation);
        if self.record_trace && !self.control_trace_truncated {
            for sample in allocation_trace(&allocation) {
                if self.control_trace.len() >= CONTROL_TRACE_LEN_MAX {
                    self.control_trace_truncated = true;
                    break;
                }
                self.control_trace.push(ControlTraceEntry {
                    time_ns: now,
                    sample,
                });
            }
        }
        self.rates_dirty = true;
    }

    /// Caps as TBF rules carry them: whole RPCs per second at `brw_size`, rounded down but
    /// absorbing float noise, at least 1 (as the `Controller` adapter writes them).
    fn apply(&mut self, allocation: &Allocation) {
        let brw = self.brw_size_bytes as f64;
        self.caps.clear();
        let app_of: BTreeMap<JobId, u32> = self
            .apps
            .iter()
            .enumerate()
            .map(|(i, a)| (*a, i as u32))
            .collect();
        for a in &allocation.apps {
            let Some(&app) = app_of.get(&a.app) else {
                continue;
            };
            for c in &a.caps {
                let rpcs = tbf_rate_rpcs_per_s(c.cap_bytes_per_s, self.brw_size_bytes);
                self.caps.insert((app, c.ost.0), rpcs as f64 * brw);
            }
        }
    }

    // ------------------------------------------------------------------ output

    fn finish(self) -> RunOutput {
        let end_ns = self.now_ns;
        let bins = (end_ns.div_ceil(self.bin_ns) as usize).clamp(1, self.bins);
        let n_osts = self.n_osts;
        let regret = self.allocator.as_ref().and_then(|a| a.regret());
        let jobs = self
            .jobs
            .into_iter()
            .map(|mut job| {
                job.series.truncate(bins);
                let phases = job.barrier.map(|b| {
                    let mut record = b.record;
                    if !job.started {
                        record.start_ns = job.submit_ns;
                    }
                    record
                });
                JobOutput {
                    job_id: job.spec_id,
                    node_count: job.node_count,
                    weight: job.weight,
                    bytes_read: job.bytes_read,
                    bytes_written: job.bytes_written,
                    rpcs: job.rpcs,
                    first_io_ns: job.first_io_ns,
                    last_io_ns: job.last_io_ns,
                    finished: job.processes_left == 0,
                    bytes_per_ost_bin: job.series,
                    phases,
                }
            })
            .collect();
        RunOutput {
            scenario_name: self.scenario_name,
            policy: self.policy,
            seed: self.seed,
            bin_ns: self.bin_ns,
            end_ns,
            osts: (0..n_osts as u32).map(|o| OstId(o).to_string()).collect(),
            jobs,
            control_log: Vec::new(),
            control_trace: self.control_trace,
            control_trace_truncated: self.control_trace_truncated,
            engine: EngineStats {
                events: self.events,
                rpcs: self.rpcs,
                // The fluid engine's allocators write caps, never client limits.
                client_writes: 0,
                // Flows, not RPCs: no RPC's life to divide.
                time: Default::default(),
            },
            regret,
            allocation: self.allocator.as_ref().and_then(|a| a.allocation_stats()),
            sync: Vec::new(),
            ost_space: Vec::new(),
        }
    }
}

/// Adds `bytes` done evenly over `[t0, t1)` to the bins they fall in (integer parts, the last
/// bin takes the rounding remainder).
fn spread(series: &mut [u64], bin_ns: u64, t0: u64, t1: u64, bytes: u64) {
    let last = series.len().saturating_sub(1);
    let b0 = ((t0 / bin_ns) as usize).min(last);
    let b1 = (((t1.saturating_sub(1)) / bin_ns) as usize).min(last);
    if b0 == b1 {
        series[b0] += bytes;
        return;
    }
    let span = (t1 - t0) as u128;
    let mut given = 0u64;
    for (b, slot) in series.iter_mut().enumerate().take(b1).skip(b0) {
        let lo = t0.max(b as u64 * bin_ns);
        let hi = t1.min((b as u64 + 1) * bin_ns);
        let part = (bytes as u128 * (hi - lo) as u128 / span) as u64;
        *slot += part;
        given += part;
    }
    series[b1] += bytes - given;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripe_bytes_follow_raid0() {
        // 3 stripes of 4: [0, 12) is one row.
        assert_eq!(stripe_bytes(4, 3, 0, 12), vec![4, 4, 4]);
        assert_eq!(stripe_bytes(4, 3, 2, 5), vec![2, 3, 0]);
        assert_eq!(stripe_bytes(4, 3, 10, 8), vec![4, 2, 2]);
        assert_eq!(stripe_bytes(4, 1, 3, 100), vec![100]);
    }

    /// The fluid engine creates files by their job, so a forecasting placer (iez) finds the
    /// job's predictions and its stripe sizes (Method II) reach the flows, for explicit jobs
    /// and `[appset]` runs alike; round robin keeps the scenario's stripe size.
    #[test]
    fn files_are_created_by_their_job_and_keep_the_placers_stripe_size() {
        let text = |placement: &str| {
            format!(
                r#"
name = "fluid-iez"
[simulation]
duration_s = 10.0
engine = "fluid"
[cluster]
clients = 1
stripe_size = "1M"
placement = "{placement}"
[[oss]]
name = "oss0"
osts = 2
device = "ssd-sata"
ost_capacity = "100G"
[[job]]
id = "w"
nodes = 1
[[job.processes]]
rw = "write"
bs = "1M"
size = "1G"
numjobs = 3
file = "shared"
stripe_count = 2
"#
            )
        };
        let stripe_sizes = |placement: &str| -> Vec<u64> {
            let scenario = Scenario::from_toml_str(&text(placement), "t.toml").unwrap();
            let fluid = Fluid::new(&scenario, "nobw", 1, None, None).unwrap();
            fluid.flows.iter().map(|f| f.stripe_size_bytes).collect()
        };
        assert_eq!(stripe_sizes("roundrobin"), vec![1 << 20; 3]);
        // One 3 GiB file over two stripes: Method II's stripe size for it.
        let iez = pfsqos_core::place::stripe::iez_stripe_size_bytes(3 << 30, 2).unwrap();
        assert_ne!(iez, 1 << 20);
        assert_eq!(stripe_sizes("iez"), vec![iez; 3]);
    }

    #[test]
    fn spread_keeps_every_byte() {
        let mut s = vec![0u64; 5];
        spread(&mut s, 10, 5, 35, 300);
        assert_eq!(s, vec![50, 100, 100, 50, 0]);
        assert_eq!(s.iter().sum::<u64>(), 300);
        let mut s = vec![0u64; 2];
        spread(&mut s, 10, 15, 100, 7);
        assert_eq!(s, vec![0, 7]);
    }
}
