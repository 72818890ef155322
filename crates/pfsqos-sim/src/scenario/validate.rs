//! Range and reference checks of a deserialized [`Scenario`]. Every limit is a named constant
//! (documented in `docs/scenarios.md`) so that nothing from a scenario file is unbounded.

use std::collections::BTreeSet;

use pfsqos_core::model::JobId;

use super::*;
use crate::policy::{check_policy_spec, POLICY_NAMES};

/// Device models every scenario may name in `oss.device` without declaring them.
pub const DEVICE_PRESETS: &[&str] = &["hdd", "ssd-sata"];

/// 30 days: longer horizons are the fluid engine's job, not the RPC-level one's.
pub const DURATION_S_MAX: f64 = 30.0 * 24.0 * 3600.0;
/// Time-series bins of one run; 10 M bins of a few counters already take hundreds of MB.
pub const BINS_MAX: u64 = 10_000_000;
/// Time-series cells of one run: the engines keep each job's series per OST it moved bytes
/// on (`bins` cells each), 2 GiB at this bound. A scenario whose jobs would exceed it on one
/// OST each is refused here; a run whose jobs' OSTs exceed it stops with an error.
pub const SERIES_CELLS_MAX: u64 = 1 << 28;
/// Bin widths and control periods longer than an hour describe no useful measurement.
pub const PERIOD_MS_MAX: u64 = pfsqos_core::lustre::CONTROL_PERIOD_MS_MAX;
pub const NAME_LEN_MAX: usize = 64;
pub const SCENARIO_NAME_LEN_MAX: usize = 128;
pub const DESCRIPTION_LEN_MAX: usize = 16 * 1024;

pub const CLIENTS_MAX: u32 = 65_536;
pub const BRW_SIZE_MIN: u64 = pfsqos_core::lustre::BRW_SIZE_BYTES_MIN;
/// Lustre's protocol maximum bulk RPC (`PTLRPC_MAX_BRW_SIZE`).
pub const BRW_SIZE_MAX: u64 = pfsqos_core::lustre::BRW_SIZE_BYTES_MAX;
/// Lustre's OSC limit on `max_rpcs_in_flight`.
pub const RPCS_IN_FLIGHT_MAX: u32 = pfsqos_core::lustre::MAX_RPCS_IN_FLIGHT_MAX;
/// Lustre requires stripe sizes to be multiples of 64 KiB (`LOV_MIN_STRIPE_SIZE`).
pub const STRIPE_SIZE_UNIT: u64 = pfsqos_core::lustre::STRIPE_SIZE_UNIT_BYTES;
/// Lustre's `LOV_MAX_STRIPE_SIZE`: 4 GiB less 64 KiB.
pub const STRIPE_SIZE_MAX: u64 = pfsqos_core::lustre::STRIPE_SIZE_BYTES_MAX;

/// About 8 Tb/s: far above any single link.
pub const LINK_MIB_S_MAX: f64 = 1_000_000.0;
/// One second one way: beyond that the scenario is not a data centre.
pub const LATENCY_US_MAX: f64 = 1_000_000.0;

pub const DEVICES_MAX: usize = 64;
pub const DEVICE_ROWS_MAX: usize = 64;
pub const DEVICE_MIB_S_MAX: f64 = 1_000_000.0;
/// Ten seconds per request: slower than any working device.
pub const DEVICE_US_MAX: f64 = 10_000_000.0;
pub const DEVICE_CONCURRENCY_MAX: u32 = 1024;
pub const DEVICE_ROW_SIZE_MAX: u64 = 1 << 30;
/// Longest dispatch queue a congestion row may name: far beyond any block layer's
/// `nr_requests` (at most a few thousand) or server's thread count.
pub const CONGESTION_QUEUE_REQUESTS_MAX: u32 = 1 << 20;

pub const OSSES_MAX: usize = 1024;
pub const OSTS_PER_OSS_MAX: u32 = 256;
pub const OSTS_MAX: u32 = 4096;
/// Lustre's `oss_max_threads` ceiling.
pub const IO_THREADS_MAX: u32 = 512;
pub const CPTS_MAX: u32 = pfsqos_core::lustre::CPTS_MAX;
pub const CAPACITY_RPCS_PER_S_MAX: u64 = pfsqos_core::lustre::OST_CAPACITY_RPCS_PER_S_MAX;
/// Largest OST size a scenario may give (1 PiB; Lustre's ldiskfs OSTs stop at 1 PiB).
pub const OST_CAPACITY_BYTES_MAX: u64 = 1 << 50;

/// As many jobs as a controller tracks, so that every job of a scenario can have its own rule
/// and state: leadership-class machines run thousands of jobs at once.
pub const JOBS_MAX: usize = pfsqos_core::lustre::JOBS_TRACKED_MAX;
pub const NODES_MAX: u32 = pfsqos_core::lustre::JOB_NODES_MAX;
pub const GROUPS_PER_JOB_MAX: usize = 64;
pub const NUMJOBS_MAX: u32 = 65_536;
/// Processes of all jobs together; each is simulated individually.
pub const PROCESSES_MAX: u64 = 100_000;
pub const IODEPTH_MAX: u32 = 1024;
/// I/O calls outstanding at once over all processes (`numjobs × iodepth` summed): each is
/// state the engine keeps.
pub const IO_CALLS_MAX: u64 = 1_000_000;
/// Client-OST pairs: clients keep per-OST state (RPCs in flight, dirty data), as Lustre's OSCs.
pub const CLIENT_OST_PAIRS_MAX: u64 = 16 << 20;
/// fio accepts larger blocks, but no scenario here needs an I/O call above 1 GiB.
pub const BS_MAX: u64 = 1 << 30;
/// 1 PiB per process.
pub const SIZE_MAX: u64 = 1 << 50;
pub const BURSTS_MAX: usize = 100_000;
/// Phases per process of a `phases` shape; each phase is a barrier event per job.
pub const PHASES_MAX: u32 = 100_000;
/// Phases over all jobs: the run keeps a record of each.
pub const PHASE_RECORDS_MAX: u64 = 10_000_000;
/// Periodic bursts closer than 1 ms apart are a continuous stream; the limit bounds the events.
pub const INTERVAL_S_MIN: f64 = 0.001;

struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn err(
        &self,
        field: impl Into<String>,
        value: impl Into<Option<String>>,
        message: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            field: field.into(),
            value: value.into(),
            message: message.into(),
        }
    }
}

/// Formats a string value the way TOML writes it.
fn q(s: &str) -> String {
    format!("{s:?}")
}

fn size_text(s: ByteSize) -> String {
    q(&s.to_string())
}

fn human(bytes: u64) -> String {
    ByteSize(bytes).to_string()
}

type Res = Result<(), ScenarioError>;

fn check_u32(c: &Ctx, field: &str, v: u32, min: u32, max: u32, what: &str) -> Res {
    if v < min || v > max {
        return Err(c.err(
            field,
            v.to_string(),
            format!("{what} must be in {min}..={max}"),
        ));
    }
    Ok(())
}

fn check_u64(c: &Ctx, field: &str, v: u64, min: u64, max: u64, what: &str) -> Res {
    if v < min || v > max {
        return Err(c.err(
            field,
            v.to_string(),
            format!("{what} must be in {min}..={max}"),
        ));
    }
    Ok(())
}

/// `v` must be finite and in `[min, max]` (or `(min, max]` when `min_exclusive`).
fn check_f64(
    c: &Ctx,
    field: &str,
    v: f64,
    min: f64,
    min_exclusive: bool,
    max: f64,
    what: &str,
) -> Res {
    let low_ok = if min_exclusive { v > min } else { v >= min };
    if !v.is_finite() || !low_ok || v > max {
        let low = if min_exclusive {
            format!("greater than {min}")
        } else {
            format!("at least {min}")
        };
        return Err(c.err(
            field,
            v.to_string(),
            format!("{what} must be a finite number {low} and at most {max}"),
        ));
    }
    Ok(())
}

fn check_name(c: &Ctx, field: &str, name: &str, max: usize, what: &str) -> Res {
    if name.is_empty() || name.len() > max || name.chars().any(char::is_control) {
        return Err(c.err(
            field,
            q(name),
            format!("{what} must be 1 to {max} bytes long without control characters"),
        ));
    }
    Ok(())
}

fn check_stripe_size(c: &Ctx, field: &str, s: ByteSize) -> Res {
    let b = s.bytes();
    if b == 0 || !b.is_multiple_of(STRIPE_SIZE_UNIT) || b > STRIPE_SIZE_MAX {
        return Err(c.err(
            field,
            size_text(s),
            format!(
                "stripe size must be a non-zero multiple of 64k (Lustre's rule), at most {} bytes",
                STRIPE_SIZE_MAX
            ),
        ));
    }
    Ok(())
}

fn check_stripe_count(c: &Ctx, field: &str, n: u32, osts: u32) -> Res {
    if n == 0 || n > osts {
        return Err(c.err(
            field,
            n.to_string(),
            format!("stripe count must be in 1..={osts} (the number of OSTs in the cluster)"),
        ));
    }
    Ok(())
}

impl Scenario {
    /// Checks ranges and references; the first problem found is returned. `file` names the
    /// scenario in the error. Values in errors are shown normalized (`from_toml_str` replaces
    /// them with the text as written in the file).
    pub fn validate(&self, file: &str) -> Result<(), ScenarioError> {
        let c = Ctx { file };
        check_name(
            &c,
            "name",
            &self.name,
            SCENARIO_NAME_LEN_MAX,
            "scenario name",
        )?;
        if self.description.len() > DESCRIPTION_LEN_MAX {
            return Err(c.err(
                "description",
                None,
                format!(
                    "description is {} bytes long; at most {DESCRIPTION_LEN_MAX} allowed",
                    self.description.len()
                ),
            ));
        }
        self.simulation.validate(&c)?;
        self.network.validate(&c)?;
        self.client.validate(&c)?;
        self.validate_devices(&c)?;
        let osts = self.validate_osses(&c)?;
        self.cluster.validate(&c, osts)?;
        // The placer's name, before any `:key=value` option.
        if self.cluster.placement.split(':').next() == Some("iez") {
            // iez balances the fill of OSTs: without sizes there is nothing to balance.
            if let Some(i) = self.osses.iter().position(|o| o.ost_capacity.is_none()) {
                return Err(c.err(
                    format!("oss[{i}].ost_capacity"),
                    None,
                    "placement `iez` balances OST fill, which needs every OSS's ost_capacity",
                ));
            }
        }
        if self.cluster.files_created == FilesCreated::FirstIo
            && self.simulation.engine == EngineKind::Fluid
        {
            return Err(c.err(
                "cluster.files_created",
                "first_io".to_string(),
                "the fluid engine creates every file at the run's start; files_created = \"first_io\" needs engine = \"rpc\"",
            ));
        }
        match &self.appset {
            Some(a) => {
                a.validate(&c, self.cluster.clients, osts)?;
                if !self.jobs.is_empty() {
                    self.validate_jobs(&c, osts)?;
                }
                if self.simulation.engine != EngineKind::Fluid {
                    // The RPC-level engine has no batch scheduler: it runs the set only where
                    // no run would queue (AppSetSpec::expand_for_rpc says why not otherwise).
                    self.rpc_jobs().map_err(|e| c.err("appset", None, e))?;
                }
            }
            None => self.validate_jobs(&c, osts)?,
        }
        self.validate_series(&c)?;
        self.policy.validate(&c)?;
        Ok(())
    }

    /// Bins are counted as the engine counts them: whole bins in the duration, plus one. The
    /// least a job's series can take is one OST's bins: `bins × jobs` is the bound checked
    /// here (the run checks the OSTs its jobs touch).
    fn validate_series(&self, c: &Ctx) -> Res {
        let sim = &self.simulation;
        let duration_ms = sim.duration_s * 1000.0;
        let bins = (duration_ms / sim.bin_ms as f64).floor() as u64 + 1;
        let jobs = self.jobs.len() as u64 + self.appset.as_ref().map_or(0, |a| u64::from(a.apps));
        let cells = bins.saturating_mul(jobs);
        if cells > SERIES_CELLS_MAX {
            let min_ms = (duration_ms * jobs as f64 / (SERIES_CELLS_MAX - jobs) as f64).ceil();
            return Err(c.err(
                "simulation.bin_ms",
                sim.bin_ms.to_string(),
                format!(
                    "{bins} bins × {jobs} jobs = {cells} time-series cells, one OST each; at most {SERIES_CELLS_MAX} allowed: use bin_ms >= {min_ms}"
                ),
            ));
        }
        Ok(())
    }

    fn validate_devices(&self, c: &Ctx) -> Res {
        if self.devices.len() > DEVICES_MAX {
            return Err(c.err(
                "device",
                None,
                format!(
                    "{} devices declared; at most {DEVICES_MAX} allowed",
                    self.devices.len()
                ),
            ));
        }
        let mut names = BTreeSet::new();
        for (i, d) in self.devices.iter().enumerate() {
            let p = format!("device[{i}]");
            check_name(
                c,
                &format!("{p}.name"),
                &d.name,
                NAME_LEN_MAX,
                "device name",
            )?;
            if DEVICE_PRESETS.contains(&d.name.as_str()) {
                return Err(c.err(
                    format!("{p}.name"),
                    q(&d.name),
                    format!(
                        "`{}` is a preset device name; choose another name (presets: {})",
                        d.name,
                        DEVICE_PRESETS.join(", ")
                    ),
                ));
            }
            if !names.insert(d.name.as_str()) {
                return Err(c.err(
                    format!("{p}.name"),
                    q(&d.name),
                    "device names must be unique; this one is declared twice",
                ));
            }
            if d.profile.is_some() {
                // A measured device: everything the table would give comes from the profile.
                let given = [
                    ("read", !d.read.is_empty()),
                    ("write", !d.write.is_empty()),
                    ("random_penalty_us", d.random_penalty_us != 0.0),
                    ("concurrency", d.concurrency != default_device_concurrency()),
                    ("congestion", !d.congestion.is_empty()),
                ];
                if let Some((field, _)) = given.iter().find(|(_, g)| *g) {
                    return Err(c.err(
                        format!("{p}.{field}"),
                        None,
                        "a device with a `profile` takes its model from the profile; give \
                         either `profile` or the table fields, not both",
                    ));
                }
                if d.resolved_profile.is_none() {
                    return Err(c.err(
                        format!("{p}.profile"),
                        d.profile.as_deref().map(q),
                        "the profile was not read (load the scenario from its file)",
                    ));
                }
                continue;
            }
            for (table, rows) in [("read", &d.read), ("write", &d.write)] {
                validate_rows(c, &format!("{p}.{table}"), rows)?;
            }
            check_f64(
                c,
                &format!("{p}.random_penalty_us"),
                d.random_penalty_us,
                0.0,
                false,
                DEVICE_US_MAX,
                "random penalty (us)",
            )?;
            check_u32(
                c,
                &format!("{p}.concurrency"),
                d.concurrency,
                1,
                DEVICE_CONCURRENCY_MAX,
                "device concurrency",
            )?;
            validate_congestion(c, &format!("{p}.congestion"), &d.congestion)?;
        }
        Ok(())
    }

    /// Returns the number of OSTs in the cluster.
    fn validate_osses(&self, c: &Ctx) -> Result<u32, ScenarioError> {
        if self.osses.is_empty() || self.osses.len() > OSSES_MAX {
            return Err(c.err(
                "oss",
                None,
                format!(
                    "{} OSS declared; 1..={OSSES_MAX} `[[oss]]` tables allowed",
                    self.osses.len()
                ),
            ));
        }
        let mut allowed: Vec<&str> = DEVICE_PRESETS.to_vec();
        allowed.extend(self.devices.iter().map(|d| d.name.as_str()));
        let mut names = BTreeSet::new();
        let mut osts_total: u32 = 0;
        for (i, o) in self.osses.iter().enumerate() {
            let p = format!("oss[{i}]");
            check_name(c, &format!("{p}.name"), &o.name, NAME_LEN_MAX, "OSS name")?;
            if !names.insert(o.name.as_str()) {
                return Err(c.err(
                    format!("{p}.name"),
                    q(&o.name),
                    "OSS names must be unique; this one is declared twice",
                ));
            }
            check_u32(
                c,
                &format!("{p}.osts"),
                o.osts,
                1,
                OSTS_PER_OSS_MAX,
                "OSTs per OSS",
            )?;
            osts_total += o.osts;
            if osts_total > OSTS_MAX {
                return Err(c.err(
                    format!("{p}.osts"),
                    o.osts.to_string(),
                    format!("the cluster would have {osts_total} OSTs; at most {OSTS_MAX} allowed in total"),
                ));
            }
            if !allowed.contains(&o.device.as_str()) {
                return Err(c.err(
                    format!("{p}.device"),
                    q(&o.device),
                    format!(
                        "no device named `{}`; allowed: {} (presets, or a `[[device]]` name)",
                        o.device,
                        allowed.join(", ")
                    ),
                ));
            }
            check_u32(
                c,
                &format!("{p}.io_threads"),
                o.io_threads,
                1,
                IO_THREADS_MAX,
                "I/O threads",
            )?;
            check_u32(
                c,
                &format!("{p}.cpts"),
                o.cpts,
                1,
                CPTS_MAX,
                "CPU partitions",
            )?;
            for (field, v) in [
                ("rpc_cpu_us", o.rpc_cpu_us),
                ("rpc_cpu_us_per_mib", o.rpc_cpu_us_per_mib),
                ("sync_cpu_us", o.sync_cpu_us),
            ] {
                check_f64(
                    c,
                    &format!("{p}.{field}"),
                    v,
                    0.0,
                    false,
                    LATENCY_US_MAX,
                    "CPU time (us)",
                )?;
            }
            if o.io_threads < o.cpts {
                return Err(c.err(
                    format!("{p}.io_threads"),
                    o.io_threads.to_string(),
                    format!("each CPU partition needs at least one I/O thread: io_threads must be at least cpts ({})", o.cpts),
                ));
            }
            if let Some(used) = o.ost_used {
                let capacity = o.ost_capacity.ok_or_else(|| {
                    c.err(
                        format!("{p}.ost_used"),
                        used.0.to_string(),
                        "a fill level needs the OST's size: set ost_capacity too",
                    )
                })?;
                if used.0 > capacity.0 {
                    return Err(c.err(
                        format!("{p}.ost_used"),
                        used.0.to_string(),
                        format!("at most ost_capacity ({} bytes)", capacity.0),
                    ));
                }
            }
            if let Some(capacity) = o.ost_capacity {
                if capacity.0 == 0 || capacity.0 > OST_CAPACITY_BYTES_MAX {
                    return Err(c.err(
                        format!("{p}.ost_capacity"),
                        capacity.0.to_string(),
                        format!("1..={OST_CAPACITY_BYTES_MAX} bytes (1 PiB)"),
                    ));
                }
            }
            if let Some(cap) = o.capacity_rpcs_per_s {
                check_u64(
                    c,
                    &format!("{p}.capacity_rpcs_per_s"),
                    cap,
                    1,
                    CAPACITY_RPCS_PER_S_MAX,
                    "OST capacity (RPC/s)",
                )?;
            }
        }
        Ok(osts_total)
    }

    fn validate_jobs(&self, c: &Ctx, osts: u32) -> Res {
        if self.jobs.is_empty() || self.jobs.len() > JOBS_MAX {
            return Err(c.err(
                "job",
                None,
                format!(
                    "{} jobs declared; 1..={JOBS_MAX} `[[job]]` tables allowed",
                    self.jobs.len()
                ),
            ));
        }
        let clients = self.cluster.clients;
        let mut ids = BTreeSet::new();
        let mut processes: u64 = 0;
        let mut io_calls: u64 = 0;
        let mut phase_records: u64 = 0;
        for (i, j) in self.jobs.iter().enumerate() {
            let p = format!("job[{i}]");
            if j.id.is_empty() {
                return Err(c.err(format!("{p}.id"), q(&j.id), "job id must not be empty"));
            }
            if let Err(e) = JobId::new(&j.id) {
                return Err(c.err(
                    format!("{p}.id"),
                    q(&j.id),
                    format!("{e} (a Lustre JobID: at most 31 bytes, no control characters)"),
                ));
            }
            if !ids.insert(j.id.as_str()) {
                return Err(c.err(
                    format!("{p}.id"),
                    q(&j.id),
                    "job ids must be unique; this one is used by an earlier job",
                ));
            }
            check_u32(
                c,
                &format!("{p}.nodes"),
                j.nodes,
                1,
                NODES_MAX,
                "compute nodes",
            )?;
            if let Some(weight) = j.weight {
                check_u32(
                    c,
                    &format!("{p}.weight"),
                    weight,
                    1,
                    pfsqos_core::control::JOB_WEIGHT_MAX,
                    "proportional-share weight",
                )?;
            }
            if let Some(list) = &j.clients {
                if list.is_empty() || list.len() > clients as usize {
                    return Err(c.err(
                        format!("{p}.clients"),
                        None,
                        format!("the client list must hold 1..={clients} entries (cluster.clients); omit it to use all clients"),
                    ));
                }
                let mut seen = BTreeSet::new();
                for (k, &cl) in list.iter().enumerate() {
                    if cl >= clients {
                        return Err(c.err(
                            format!("{p}.clients[{k}]"),
                            cl.to_string(),
                            format!("no client {cl}: the cluster has {clients} clients, numbered 0..={}", clients - 1),
                        ));
                    }
                    if !seen.insert(cl) {
                        return Err(c.err(
                            format!("{p}.clients[{k}]"),
                            cl.to_string(),
                            "client listed twice for the same job",
                        ));
                    }
                }
            }
            if j.groups.is_empty() || j.groups.len() > GROUPS_PER_JOB_MAX {
                return Err(c.err(
                    format!("{p}.processes"),
                    None,
                    format!("{} process groups; 1..={GROUPS_PER_JOB_MAX} `[[job.processes]]` tables allowed", j.groups.len()),
                ));
            }
            for (g_i, g) in j.groups.iter().enumerate() {
                let gp = format!("{p}.processes[{g_i}]");
                self.validate_group(c, &gp, g, osts)?;
                processes += u64::from(g.numjobs);
                io_calls += u64::from(g.numjobs) * u64::from(g.iodepth);
                if processes > PROCESSES_MAX {
                    return Err(c.err(
                        format!("{gp}.numjobs"),
                        g.numjobs.to_string(),
                        format!("the scenario would have {processes} processes; at most {PROCESSES_MAX} allowed over all jobs"),
                    ));
                }
                if io_calls > IO_CALLS_MAX {
                    return Err(c.err(
                        format!("{gp}.iodepth"),
                        g.iodepth.to_string(),
                        format!("the scenario would have {io_calls} I/O calls outstanding (numjobs × iodepth over all groups); at most {IO_CALLS_MAX} allowed"),
                    ));
                }
            }
            self.check_job_sequence(c, &p, &j.groups)?;
            check_job_phases(c, &p, &j.groups)?;
            // One barrier per stage: the first group of each stage says how many phases.
            for (g_i, g) in j.groups.iter().enumerate() {
                let first_of_stage = j.groups[..g_i].iter().all(|e| e.after != g.after);
                let Some(n) = g.shape.phases.filter(|_| first_of_stage) else {
                    continue;
                };
                phase_records += u64::from(n);
                if phase_records > PHASE_RECORDS_MAX {
                    return Err(c.err(
                        format!("{p}.processes[{g_i}].shape.phases"),
                        n.to_string(),
                        format!("the scenario would record {phase_records} phases over all jobs; at most {PHASE_RECORDS_MAX} allowed"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `after` and `files_of` name an earlier group of the same job; a group run `after`
    /// another must be able to start within the run; a group on another group's files has
    /// that group's file mode and process count, and no layout of its own. The fluid engine
    /// runs neither key.
    fn check_job_sequence(&self, c: &Ctx, p: &str, groups: &[ProcessGroupSpec]) -> Res {
        let duration_s = self.simulation.duration_s;
        // Lower bound on when each group's processes can all have finished, from the job's
        // start: the times its shape fixes, with no time for the I/O itself.
        let mut end_bound_s: Vec<f64> = Vec::with_capacity(groups.len());
        for (g_i, g) in groups.iter().enumerate() {
            let gp = format!("{p}.processes[{g_i}]");
            let earlier = |key: &str, k: u32| -> Res {
                let what = if k as usize == g_i {
                    "names this group itself".to_string()
                } else if k as usize > g_i {
                    format!("names a later group (processes[{k}])")
                } else {
                    return Ok(());
                };
                let allowed = if g_i == 0 {
                    "the job's first group has none".to_string()
                } else {
                    format!("0..={}", g_i - 1)
                };
                Err(c.err(
                    format!("{gp}.{key}"),
                    k.to_string(),
                    format!("`{key}` {what}; it must be the index of an earlier group of the same job: {allowed}"),
                ))
            };
            if let Some(k) = g.after.or(g.files_of) {
                if self.simulation.engine == EngineKind::Fluid {
                    let key = if g.after.is_some() {
                        "after"
                    } else {
                        "files_of"
                    };
                    return Err(c.err(
                        format!("{gp}.{key}"),
                        k.to_string(),
                        format!("`{key}` is run by the RPC-level engine only (engine = \"rpc\"); the fluid engine starts every group at the job's start on files of its own"),
                    ));
                }
            }
            let release_s = match g.after {
                None => 0.0,
                Some(k) => {
                    earlier("after", k)?;
                    let release_s = end_bound_s[k as usize];
                    if release_s + g.shape.start_s >= duration_s {
                        return Err(c.err(
                            format!("{gp}.after"),
                            k.to_string(),
                            format!(
                                "processes[{k}] cannot finish before {release_s} s after the job's start (the times its shape fixes, with no time for I/O), so this group would start at {} s at the earliest, not before the end of the simulation (duration_s = {duration_s})",
                                release_s + g.shape.start_s
                            ),
                        ));
                    }
                    release_s
                }
            };
            end_bound_s.push(release_s + shape_end_bound_s(&g.shape, g.size.bytes()));
            if let Some(k) = g.files_of {
                earlier("files_of", k)?;
                let f = &groups[k as usize];
                if g.file != f.file {
                    return Err(c.err(
                        format!("{gp}.file"),
                        None,
                        format!("a group with files_of = {k} uses processes[{k}]'s files and must have its file mode ({}); it has {}", file_mode_text(f.file), file_mode_text(g.file)),
                    ));
                }
                if g.numjobs != f.numjobs {
                    return Err(c.err(
                        format!("{gp}.numjobs"),
                        g.numjobs.to_string(),
                        format!("a group with files_of = {k} must have processes[{k}]'s numjobs ({}): process k uses process k's file", f.numjobs),
                    ));
                }
                if g.size.bytes() > f.size.bytes() {
                    return Err(c.err(
                        format!("{gp}.size"),
                        size_text(g.size),
                        format!("a group with files_of = {k} accesses at most what processes[{k}] has per process (size {})", human(f.size.bytes())),
                    ));
                }
                let layout_keys = [
                    ("stripe_count", g.stripe_count.map(|n| n.to_string())),
                    ("stripe_size", g.stripe_size.map(size_text)),
                    ("stripe_offset", g.stripe_offset.map(|n| n.to_string())),
                ];
                for (key, value) in layout_keys {
                    if let Some(value) = value {
                        return Err(c.err(
                            format!("{gp}.{key}"),
                            value,
                            format!("`{key}` is not allowed with files_of: the group uses processes[{k}]'s files with the layouts they got at creation"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn validate_group(&self, c: &Ctx, p: &str, g: &ProcessGroupSpec, osts: u32) -> Res {
        let size = g.size.bytes();
        if size == 0 || size > SIZE_MAX {
            return Err(c.err(
                format!("{p}.size"),
                size_text(g.size),
                format!("size must be in 1..={} bytes (1P)", SIZE_MAX),
            ));
        }
        let bs = g.bs.bytes();
        if bs == 0 || bs > BS_MAX {
            return Err(c.err(
                format!("{p}.bs"),
                size_text(g.bs),
                format!("block size must be in 1..={BS_MAX} bytes (1G)"),
            ));
        }
        if bs > size {
            return Err(c.err(
                format!("{p}.bs"),
                size_text(g.bs),
                format!("block size must not exceed size ({})", human(size)),
            ));
        }
        check_u32(
            c,
            &format!("{p}.numjobs"),
            g.numjobs,
            1,
            NUMJOBS_MAX,
            "numjobs",
        )?;
        check_u32(
            c,
            &format!("{p}.iodepth"),
            g.iodepth,
            1,
            IODEPTH_MAX,
            "iodepth",
        )?;
        if let Some(n) = g.stripe_count {
            check_stripe_count(c, &format!("{p}.stripe_count"), n, osts)?;
        }
        if let Some(s) = g.stripe_size {
            check_stripe_size(c, &format!("{p}.stripe_size"), s)?;
        }
        if let Some(off) = g.stripe_offset {
            if off >= osts {
                return Err(c.err(
                    format!("{p}.stripe_offset"),
                    off.to_string(),
                    format!(
                        "no OST {off}: the cluster has {osts} OSTs, numbered 0..={}",
                        osts - 1
                    ),
                ));
            }
        }
        self.validate_shape(c, &format!("{p}.shape"), &g.shape)?;
        if let (ShapeKind::Phases, Some(n), Some(b)) =
            (g.shape.kind, g.shape.phases, g.shape.phase_size)
        {
            if u64::from(n).saturating_mul(b.bytes()) > size {
                return Err(c.err(
                    format!("{p}.shape.phase_size"),
                    size_text(b),
                    format!(
                        "{n} phases of {} per process need more than size ({}); raise size to at least phases × phase_size",
                        human(b.bytes()),
                        human(size)
                    ),
                ));
            }
        }
        Ok(())
    }

    fn validate_shape(&self, c: &Ctx, p: &str, s: &ShapeSpec) -> Res {
        let duration_s = self.simulation.duration_s;
        if !s.start_s.is_finite() || s.start_s < 0.0 || s.start_s >= duration_s {
            return Err(c.err(
                format!("{p}.start_s"),
                s.start_s.to_string(),
                format!("start must be at least 0 and before the end of the simulation (duration_s = {duration_s})"),
            ));
        }
        if let Some(stop) = s.stop_s {
            if !stop.is_finite() || stop <= s.start_s || stop > DURATION_S_MAX {
                return Err(c.err(
                    format!("{p}.stop_s"),
                    stop.to_string(),
                    format!(
                        "stop must be after start_s ({}) and at most {DURATION_S_MAX}",
                        s.start_s
                    ),
                ));
            }
        }
        let kind = match s.kind {
            ShapeKind::Continuous => "continuous",
            ShapeKind::Periodic => "periodic",
            ShapeKind::Bursts => "bursts",
            ShapeKind::Phases => "phases",
        };
        let forbid = |field: &str, value: String| {
            Err(c.err(
                format!("{p}.{field}"),
                value,
                format!(
                    "`{field}` is not allowed with kind = \"{kind}\"{}",
                    match s.kind {
                        ShapeKind::Continuous =>
                            " (burst fields need kind = \"periodic\" or \"bursts\")",
                        ShapeKind::Periodic => " (periodic shapes take burst_size and interval_s)",
                        ShapeKind::Bursts => " (explicit bursts take only the `bursts` list)",
                        ShapeKind::Phases =>
                            " (phase shapes take phases, compute_s, phase_size and start_s)",
                    }
                ),
            ))
        };
        if s.kind != ShapeKind::Phases {
            if let Some(n) = s.phases {
                return forbid("phases", n.to_string());
            }
            if let Some(v) = s.compute_s {
                return forbid("compute_s", v.to_string());
            }
            if let Some(b) = s.phase_size {
                return forbid("phase_size", size_text(b));
            }
        }
        match s.kind {
            ShapeKind::Phases => {
                if let Some(b) = s.burst_size {
                    return forbid("burst_size", size_text(b));
                }
                if let Some(v) = s.interval_s {
                    return forbid("interval_s", v.to_string());
                }
                if !s.bursts.is_empty() {
                    return forbid("bursts", format!("[{} bursts]", s.bursts.len()));
                }
                // A stop would cut a phase in the middle of the job's barrier.
                if let Some(v) = s.stop_s {
                    return forbid("stop_s", v.to_string());
                }
                match s.phases {
                    None => {
                        return Err(c.err(format!("{p}.phases"), None, "kind = \"phases\" needs phases (compute + I/O rounds per process), e.g. 10"));
                    }
                    Some(n) => check_u32(c, &format!("{p}.phases"), n, 1, PHASES_MAX, "phases")?,
                }
                match s.compute_s {
                    None => {
                        return Err(c.err(format!("{p}.compute_s"), None, "kind = \"phases\" needs compute_s (seconds of compute before each I/O phase; 0 is allowed)"));
                    }
                    Some(v) => check_f64(
                        c,
                        &format!("{p}.compute_s"),
                        v,
                        0.0,
                        false,
                        DURATION_S_MAX,
                        "compute time (s)",
                    )?,
                }
                match s.phase_size {
                    None => {
                        return Err(c.err(format!("{p}.phase_size"), None, "kind = \"phases\" needs phase_size (bytes per process per I/O phase), e.g. \"1G\""));
                    }
                    Some(b) if b.bytes() == 0 || b.bytes() > SIZE_MAX => {
                        return Err(c.err(
                            format!("{p}.phase_size"),
                            size_text(b),
                            format!("phase size must be in 1..={SIZE_MAX} bytes"),
                        ));
                    }
                    Some(_) => {}
                }
            }
            ShapeKind::Continuous => {
                if let Some(b) = s.burst_size {
                    return forbid("burst_size", size_text(b));
                }
                if let Some(v) = s.interval_s {
                    return forbid("interval_s", v.to_string());
                }
                if !s.bursts.is_empty() {
                    return forbid("bursts", format!("[{} bursts]", s.bursts.len()));
                }
            }
            ShapeKind::Periodic => {
                if !s.bursts.is_empty() {
                    return forbid("bursts", format!("[{} bursts]", s.bursts.len()));
                }
                match s.burst_size {
                    None => {
                        return Err(c.err(format!("{p}.burst_size"), None, "kind = \"periodic\" needs burst_size (bytes per process per burst), e.g. \"64M\""));
                    }
                    Some(b) if b.bytes() == 0 || b.bytes() > SIZE_MAX => {
                        return Err(c.err(
                            format!("{p}.burst_size"),
                            size_text(b),
                            format!("burst size must be in 1..={SIZE_MAX} bytes"),
                        ));
                    }
                    Some(_) => {}
                }
                match s.interval_s {
                    None => {
                        return Err(c.err(format!("{p}.interval_s"), None, "kind = \"periodic\" needs interval_s (seconds from one burst start to the next)"));
                    }
                    Some(v) => check_f64(
                        c,
                        &format!("{p}.interval_s"),
                        v,
                        INTERVAL_S_MIN,
                        false,
                        DURATION_S_MAX,
                        "burst interval (s)",
                    )?,
                }
            }
            ShapeKind::Bursts => {
                if let Some(b) = s.burst_size {
                    return forbid("burst_size", size_text(b));
                }
                if let Some(v) = s.interval_s {
                    return forbid("interval_s", v.to_string());
                }
                if s.bursts.is_empty() || s.bursts.len() > BURSTS_MAX {
                    return Err(c.err(
                        format!("{p}.bursts"),
                        None,
                        format!("kind = \"bursts\" needs 1..={BURSTS_MAX} entries in `bursts`, e.g. bursts = [{{ at_s = 5.0, size = \"1G\" }}]"),
                    ));
                }
                let mut prev: Option<f64> = None;
                for (k, b) in s.bursts.iter().enumerate() {
                    let bp = format!("{p}.bursts[{k}]");
                    check_f64(
                        c,
                        &format!("{bp}.at_s"),
                        b.at_s,
                        0.0,
                        false,
                        DURATION_S_MAX,
                        "burst time (s)",
                    )?;
                    if let Some(prev) = prev {
                        if b.at_s <= prev {
                            return Err(c.err(
                                format!("{bp}.at_s"),
                                b.at_s.to_string(),
                                format!("bursts must be sorted by strictly increasing at_s; the previous burst is at {prev}"),
                            ));
                        }
                    }
                    prev = Some(b.at_s);
                    if b.size.bytes() == 0 || b.size.bytes() > SIZE_MAX {
                        return Err(c.err(
                            format!("{bp}.size"),
                            size_text(b.size),
                            format!("burst size must be in 1..={SIZE_MAX} bytes"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

fn file_mode_text(mode: FileMode) -> &'static str {
    match mode {
        FileMode::PerProcess => "\"per-process\"",
        FileMode::Shared => "\"shared\"",
    }
}

/// The lower bound on when a process of a group with this shape and `size` has finished,
/// relative to the shape's origin (the job's start, or the release of an `after` group): the
/// times the shape fixes, as if I/O took no time. Every shape ends (`size` bounds each
/// process, reads included), so the bound is finite.
fn shape_end_bound_s(s: &ShapeSpec, size_bytes: u64) -> f64 {
    let stop_s = s.stop_s.unwrap_or(f64::INFINITY);
    let end_s = match s.kind {
        ShapeKind::Continuous => s.start_s,
        ShapeKind::Periodic => {
            let burst = s.burst_size.map_or(1, |b| b.bytes()).max(1);
            let bursts = size_bytes.div_ceil(burst).max(1);
            s.start_s + (bursts - 1) as f64 * s.interval_s.unwrap_or(0.0)
        }
        ShapeKind::Bursts => {
            // The last burst the process reaches before its size is done.
            let mut total = 0u64;
            let mut at_s = s.start_s;
            for b in &s.bursts {
                at_s = b.at_s.max(s.start_s);
                total = total.saturating_add(b.size.bytes());
                if total >= size_bytes {
                    break;
                }
            }
            at_s
        }
        ShapeKind::Phases => {
            s.start_s + f64::from(s.phases.unwrap_or(0)) * s.compute_s.unwrap_or(0.0)
        }
    };
    end_s.min(stop_s)
}

/// The barrier of a `phases` shape spans one stage of the job: the groups that start together
/// (the same `after`, or none). Every group of a stage holding a `phases` group must be a
/// `phases` group with the same rounds, compute time and start; other stages are free.
fn check_job_phases(c: &Ctx, p: &str, groups: &[ProcessGroupSpec]) -> Res {
    for (first, leader) in groups.iter().enumerate() {
        let first_of_stage = groups[..first].iter().all(|e| e.after != leader.after);
        if !first_of_stage {
            continue;
        }
        check_stage_phases(c, p, groups, leader.after)?;
    }
    Ok(())
}

/// [`check_job_phases`] for the stage of the groups with `after == stage`.
fn check_stage_phases(c: &Ctx, p: &str, groups: &[ProcessGroupSpec], stage: Option<u32>) -> Res {
    let in_stage = |g: &&ProcessGroupSpec| g.after == stage;
    let Some(first) = groups
        .iter()
        .position(|g| g.after == stage && g.shape.kind == ShapeKind::Phases)
    else {
        return Ok(());
    };
    let stage_text = match stage {
        None => "the groups that start with the job (no `after`)".to_string(),
        Some(k) => format!("the groups with after = {k}"),
    };
    let f = &groups[first].shape;
    for (g_i, g) in groups.iter().enumerate() {
        if !in_stage(&g) {
            continue;
        }
        let sp = format!("{p}.processes[{g_i}].shape");
        let s = &g.shape;
        if s.kind != ShapeKind::Phases {
            return Err(c.err(
                format!("{sp}.kind"),
                None,
                format!("processes[{first}] of this job has kind = \"phases\" (a barrier across the processes of its stage: {stage_text}); every group of that stage must then have kind = \"phases\""),
            ));
        }
        let same = |what: &str, a: String, b: String| -> Res {
            if a != b {
                return Err(c.err(
                    format!("{sp}.{what}"),
                    a,
                    format!("all `phases` groups of a stage ({stage_text}) share one barrier and must have the same {what}; processes[{first}] has {b}"),
                ));
            }
            Ok(())
        };
        let opt = |v: Option<String>| v.unwrap_or_else(|| "none".to_string());
        same(
            "phases",
            opt(s.phases.map(|n| n.to_string())),
            opt(f.phases.map(|n| n.to_string())),
        )?;
        same(
            "compute_s",
            opt(s.compute_s.map(|v| v.to_string())),
            opt(f.compute_s.map(|v| v.to_string())),
        )?;
        same("start_s", s.start_s.to_string(), f.start_s.to_string())?;
    }
    Ok(())
}

/// A congestion curve: none, or up to `DEVICE_ROWS_MAX` rows in strictly increasing queue
/// length, each fraction in (0, 1].
fn validate_congestion(c: &Ctx, p: &str, rows: &[CongestionRow]) -> Res {
    if rows.len() > DEVICE_ROWS_MAX {
        return Err(c.err(
            p,
            None,
            format!(
                "{} rows; a congestion curve has at most {DEVICE_ROWS_MAX}",
                rows.len()
            ),
        ));
    }
    let mut prev: Option<u32> = None;
    for (k, r) in rows.iter().enumerate() {
        let rp = format!("{p}[{k}]");
        check_u32(
            c,
            &format!("{rp}.queue_requests"),
            r.queue_requests,
            1,
            CONGESTION_QUEUE_REQUESTS_MAX,
            "congestion queue length (requests)",
        )?;
        if let Some(prev) = prev {
            if r.queue_requests <= prev {
                return Err(c.err(
                    format!("{rp}.queue_requests"),
                    r.queue_requests.to_string(),
                    format!(
                        "rows must be sorted by strictly increasing queue_requests; the previous row is {prev}"
                    ),
                ));
            }
        }
        prev = Some(r.queue_requests);
        check_f64(
            c,
            &format!("{rp}.throughput_fraction"),
            r.throughput_fraction,
            0.0,
            true,
            1.0,
            "throughput fraction",
        )?;
    }
    Ok(())
}

fn validate_rows(c: &Ctx, p: &str, rows: &[DeviceRow]) -> Res {
    if rows.is_empty() || rows.len() > DEVICE_ROWS_MAX {
        return Err(c.err(
            p,
            None,
            format!(
                "{} rows; a device table needs 1..={DEVICE_ROWS_MAX} rows",
                rows.len()
            ),
        ));
    }
    let mut prev: Option<u64> = None;
    for (k, r) in rows.iter().enumerate() {
        let rp = format!("{p}[{k}]");
        let size = r.size.bytes();
        if size == 0 || size > DEVICE_ROW_SIZE_MAX {
            return Err(c.err(
                format!("{rp}.size"),
                size_text(r.size),
                format!("row size must be in 1..={DEVICE_ROW_SIZE_MAX} bytes (1G)"),
            ));
        }
        if let Some(prev) = prev {
            if size <= prev {
                return Err(c.err(
                    format!("{rp}.size"),
                    size_text(r.size),
                    format!(
                        "rows must be sorted by strictly increasing size; the previous row is {}",
                        human(prev)
                    ),
                ));
            }
        }
        prev = Some(size);
        check_f64(
            c,
            &format!("{rp}.bandwidth_mib_s"),
            r.bandwidth_mib_s,
            0.0,
            true,
            DEVICE_MIB_S_MAX,
            "device bandwidth (MiB/s)",
        )?;
        check_f64(
            c,
            &format!("{rp}.overhead_us"),
            r.overhead_us,
            0.0,
            false,
            DEVICE_US_MAX,
            "per-request overhead (us)",
        )?;
    }
    Ok(())
}

impl AppSetSpec {
    fn validate(&self, c: &Ctx, clients: u32, osts: u32) -> Res {
        use super::appset::*;
        check_u32(
            c,
            "appset.apps",
            self.apps,
            1,
            APPS_MAX,
            "application count",
        )?;
        if let Some(t) = self.templates {
            check_u32(
                c,
                "appset.templates",
                t,
                1,
                self.apps.min(TEMPLATES_MAX),
                "template count (at most apps)",
            )?;
        }
        check_f64(
            c,
            "appset.arrival_shape",
            self.arrival_shape,
            0.01,
            false,
            100.0,
            "Gamma shape",
        )?;
        check_f64(
            c,
            "appset.arrival_scale_s",
            self.arrival_scale_s,
            0.0,
            false,
            ARRIVAL_MEAN_S_MAX / self.arrival_shape.max(0.01),
            "Gamma scale (s; the mean shape × scale at most one week)",
        )?;
        let pool = self.node_pool.unwrap_or(clients);
        check_u32(
            c,
            "appset.node_pool",
            pool,
            1,
            APP_NODES_MAX * 16,
            "node pool",
        )?;
        let range_u32 = |field: &str, r: [u32; 2], min: u32, max: u32, what: &str| -> Res {
            check_u32(c, &format!("{field}[0]"), r[0], min, max, what)?;
            check_u32(
                c,
                &format!("{field}[1]"),
                r[1],
                r[0],
                max,
                &format!("{what} (at least the minimum)"),
            )
        };
        range_u32(
            "appset.nodes",
            self.nodes,
            1,
            APP_NODES_MAX.min(pool),
            "nodes per application (at most the node pool)",
        )?;
        check_u32(
            c,
            "appset.processes_per_node",
            self.processes_per_node,
            1,
            PROCESSES_PER_NODE_MAX,
            "processes per node",
        )?;
        range_u32(
            "appset.osts_per_app",
            self.osts_per_app,
            1,
            osts,
            "OSTs per application (at most the cluster's OSTs)",
        )?;
        range_u32(
            "appset.phases",
            self.phases,
            1,
            APP_PHASES_MAX,
            "phases per application",
        )?;
        check_f64(
            c,
            "appset.compute_s[0]",
            self.compute_s[0],
            0.0,
            true,
            COMPUTE_S_MAX,
            "compute time per phase (s)",
        )?;
        check_f64(
            c,
            "appset.compute_s[1]",
            self.compute_s[1],
            self.compute_s[0],
            false,
            COMPUTE_S_MAX,
            "compute time per phase (s, at least the minimum)",
        )?;
        for (k, b) in self.phase_size.iter().enumerate() {
            if b.bytes() < (1 << 20) || b.bytes() > PHASE_SIZE_MAX {
                return Err(c.err(
                    format!("appset.phase_size[{k}]"),
                    size_text(*b),
                    format!(
                        "bytes per process per phase must be in 1M..={}",
                        human(PHASE_SIZE_MAX)
                    ),
                ));
            }
        }
        if self.phase_size[1] < self.phase_size[0] {
            return Err(c.err(
                "appset.phase_size[1]",
                size_text(self.phase_size[1]),
                "maximum phase size must be at least the minimum",
            ));
        }
        check_f64(
            c,
            "appset.walltime_factor",
            self.walltime_factor,
            1.0,
            false,
            WALLTIME_FACTOR_MAX,
            "walltime factor",
        )?;
        let records = u64::from(self.apps) * u64::from(self.phases[1]);
        if records > PHASE_RECORDS_MAX {
            return Err(c.err(
                "appset.phases[1]",
                self.phases[1].to_string(),
                format!("{} applications × {} phases = {records} phase records; at most {PHASE_RECORDS_MAX} allowed", self.apps, self.phases[1]),
            ));
        }
        Ok(())
    }
}

impl SimulationSpec {
    fn validate(&self, c: &Ctx) -> Res {
        check_f64(
            c,
            "simulation.duration_s",
            self.duration_s,
            0.0,
            true,
            DURATION_S_MAX,
            "duration (s)",
        )?;
        check_u64(
            c,
            "simulation.bin_ms",
            self.bin_ms,
            1,
            PERIOD_MS_MAX,
            "bin width (ms)",
        )?;
        check_f64(
            c,
            "simulation.start_jitter_s",
            self.start_jitter_s,
            0.0,
            false,
            self.duration_s,
            "start jitter (s, at most duration_s)",
        )?;
        let bins = (self.duration_s * 1000.0 / self.bin_ms as f64).ceil();
        if bins > BINS_MAX as f64 {
            let min_ms = (self.duration_s * 1000.0 / BINS_MAX as f64).ceil();
            return Err(c.err(
                "simulation.bin_ms",
                self.bin_ms.to_string(),
                format!("{bins} bins over duration_s = {}; at most {BINS_MAX} allowed: use bin_ms >= {min_ms}", self.duration_s),
            ));
        }
        Ok(())
    }
}

impl super::ClientSpec {
    fn validate(&self, c: &Ctx) -> Res {
        let max = super::CLIENT_CACHE_MB_MAX;
        for (field, v) in [
            ("client.max_dirty_mb", self.max_dirty_mb),
            ("client.max_dirty_client_mb", self.max_dirty_client_mb),
            ("client.max_read_ahead_mb", self.max_read_ahead_mb),
            (
                "client.max_read_ahead_per_file_mb",
                self.max_read_ahead_per_file_mb,
            ),
        ] {
            check_u64(
                c,
                field,
                v,
                0,
                max,
                "a cache budget in MiB (0 turns it off)",
            )?;
        }
        Ok(())
    }
}

impl NetworkSpec {
    fn validate(&self, c: &Ctx) -> Res {
        check_f64(
            c,
            "network.client_link_mib_s",
            self.client_link_mib_s,
            0.0,
            true,
            LINK_MIB_S_MAX,
            "link bandwidth (MiB/s)",
        )?;
        check_f64(
            c,
            "network.server_link_mib_s",
            self.server_link_mib_s,
            0.0,
            true,
            LINK_MIB_S_MAX,
            "link bandwidth (MiB/s)",
        )?;
        check_f64(
            c,
            "network.latency_us",
            self.latency_us,
            0.0,
            false,
            LATENCY_US_MAX,
            "latency (us)",
        )?;
        check_f64(
            c,
            "network.message_us",
            self.message_us,
            0.0,
            false,
            LATENCY_US_MAX,
            "cost of a message (us)",
        )
    }
}

impl ClusterSpec {
    fn validate(&self, c: &Ctx, osts: u32) -> Res {
        check_u32(
            c,
            "cluster.clients",
            self.clients,
            1,
            CLIENTS_MAX,
            "client count",
        )?;
        let pairs = u64::from(self.clients) * u64::from(osts);
        if pairs > CLIENT_OST_PAIRS_MAX {
            return Err(c.err(
                "cluster.clients",
                self.clients.to_string(),
                format!(
                    "{} clients × {osts} OSTs = {pairs} client-OST pairs; at most {CLIENT_OST_PAIRS_MAX} allowed",
                    self.clients
                ),
            ));
        }
        let brw = self.brw_size.bytes();
        if !brw.is_power_of_two() || !(BRW_SIZE_MIN..=BRW_SIZE_MAX).contains(&brw) {
            return Err(c.err(
                "cluster.brw_size",
                size_text(self.brw_size),
                "bulk RPC size must be a power of two from 4k to 64M (Lustre's protocol maximum)",
            ));
        }
        check_u32(
            c,
            "cluster.max_rpcs_in_flight",
            self.max_rpcs_in_flight,
            1,
            RPCS_IN_FLIGHT_MAX,
            "RPCs in flight (Lustre OSC limit)",
        )?;
        check_stripe_count(c, "cluster.stripe_count", self.stripe_count, osts)?;
        if let Err(e) = pfsqos_core::place::placement_by_name(&self.placement, osts) {
            return Err(c.err("cluster.placement", self.placement.clone(), e));
        }
        let period = self.oss_stats_period_s;
        if !period.is_finite()
            || !(OSS_STATS_PERIOD_S_MIN..=OSS_STATS_PERIOD_S_MAX).contains(&period)
        {
            return Err(c.err(
                "cluster.oss_stats_period_s",
                period.to_string(),
                format!(
                    "statistics period must be {OSS_STATS_PERIOD_S_MIN} to {OSS_STATS_PERIOD_S_MAX} seconds"
                ),
            ));
        }
        check_stripe_size(c, "cluster.stripe_size", self.stripe_size)
    }
}

impl PolicySpec {
    fn validate(&self, c: &Ctx) -> Res {
        let allowed = POLICY_NAMES.join(", ");
        if let Err(message) = check_policy_spec(&self.default) {
            return Err(c.err("policy.default", q(&self.default), message));
        }
        if self.compare.is_empty() {
            return Err(c.err(
                "policy.compare",
                None,
                format!("list at least one policy to compare (allowed: {allowed})"),
            ));
        }
        for (i, name) in self.compare.iter().enumerate() {
            if let Err(message) = check_policy_spec(name) {
                return Err(c.err(format!("policy.compare[{i}]"), q(name), message));
            }
            if self.compare[..i].contains(name) {
                return Err(c.err(
                    format!("policy.compare[{i}]"),
                    q(name),
                    format!("policy `{name}` is listed twice"),
                ));
            }
        }
        check_u64(
            c,
            "policy.period_ms",
            self.period_ms,
            1,
            PERIOD_MS_MAX,
            "control period (ms)",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_within_the_limits() {
        let c = Ctx { file: "t" };
        ClusterSpec::default().validate(&c, 1).unwrap();
        NetworkSpec::default().validate(&c).unwrap();
        PolicySpec::default().validate(&c).unwrap();
        assert!(DEVICE_PRESETS.contains(&super::super::default_device().as_str()));
    }

    #[test]
    fn lustre_limits_hold_together() {
        assert!(STRIPE_SIZE_MAX.is_multiple_of(STRIPE_SIZE_UNIT));
        assert!(BRW_SIZE_MIN.is_power_of_two() && BRW_SIZE_MAX.is_power_of_two());
        assert!(u64::from(OSTS_PER_OSS_MAX) <= u64::from(OSTS_MAX));
        // The largest run at the finest bins allowed must fit the bin limit.
        assert!(DURATION_S_MAX * 1000.0 / PERIOD_MS_MAX as f64 <= BINS_MAX as f64);
    }

    #[test]
    fn stripe_size_rule() {
        let c = Ctx { file: "t" };
        assert!(check_stripe_size(&c, "f", ByteSize(64 << 10)).is_ok());
        assert!(check_stripe_size(&c, "f", ByteSize(STRIPE_SIZE_MAX)).is_ok());
        assert!(check_stripe_size(&c, "f", ByteSize(STRIPE_SIZE_MAX + STRIPE_SIZE_UNIT)).is_err());
        assert!(check_stripe_size(&c, "f", ByteSize(96 << 10)).is_err());
        assert!(check_stripe_size(&c, "f", ByteSize(0)).is_err());
    }

    #[test]
    fn float_checks_reject_non_finite() {
        let c = Ctx { file: "t" };
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.5, 0.0] {
            assert!(check_f64(&c, "f", v, 0.0, true, 10.0, "x").is_err(), "{v}");
        }
        assert!(check_f64(&c, "f", 0.0, 0.0, false, 10.0, "x").is_ok());
        assert!(check_f64(&c, "f", 10.0, 0.0, true, 10.0, "x").is_ok());
        assert!(check_f64(&c, "f", 10.5, 0.0, true, 10.0, "x").is_err());
    }
}
