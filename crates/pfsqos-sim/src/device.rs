//! OST device model: table-driven service times, a random-access penalty and internal
//! parallelism, resolved once from a [`DeviceSpec`] or a preset name.
//!
//! Model (the "simpler equivalent" of bandwidth sharing the scenario doc allows): a device
//! serves up to `concurrency` requests at once. A request's fixed part (`overhead(s)` plus the
//! random penalty: command processing, seek, rotation, flash lookup) overlaps freely with other
//! requests, but the data transfer (`s / bandwidth(s)`) goes through one serializer of the
//! table's bandwidth, FIFO in start order. So one request alone takes exactly
//! `overhead(s) + s / bandwidth(s)`, a deep queue reaches the table bandwidth, and with
//! `concurrency = 1` the device is the plain serial server of the `DeviceSpec` formula. No
//! event is ever rescheduled, which keeps the engine deterministic and fast.
//!
//! **Congestion cost (optional, off by default).** The model above is work-conserving: a
//! deeper queue never makes the device slower, so no controller can finish the same bytes
//! sooner than the full queue does (docs/reproductions/pi-control.md, Fig. 6). A `[[device]]`
//! may give a curve `congestion = [{ queue_requests, throughput_fraction }, ...]`: a request
//! that starts service while the dispatch queue holds `q` requests (at the device plus
//! waiting for it, itself included: what the block layer's `time_in_queue` averages) transfers
//! at `throughput_fraction(q)` of the table bandwidth, the fraction interpolated linearly in
//! `q` between rows and held flat outside them. The rate is fixed when the transfer is booked
//! (no event is rescheduled), so with a steady queue of `q` the device serves exactly
//! `fraction(q)` of its table throughput (test `throughput_follows_the_congestion_curve`).
//! A curve must come from a measurement of throughput against outstanding requests; where
//! the ones the PI reproduction uses come from, and what they lack, is in pi-control.md
//! ("A congestion model"). Without `congestion` nothing changes: the service times are
//! bit-identical. The fluid engine, which has no queue, refuses a device with a curve.
//!
//! **Device profiles.** A `[[device]]` may name a measured profile (`pfsqos_profile`,
//! documented in docs/physics.md) instead of a table. Its rows, random penalty, concurrency
//! and congestion curve are the table model's; what a profile adds ([`Dynamics`]) is judged
//! per device, not per object, from the device's own sequence of requests:
//!
//! * the random penalty may vary with request size (interpolated between rows);
//! * a request that continues its own object but not the request the device started before
//!   it pays the **switch penalty** at the number of objects with requests at the device
//!   (the head moves between streams; the elevator's batching is in the profile's numbers);
//! * a request whose direction differs from the previous one pays the direction penalty;
//! * every request's service time is scaled by a factor drawn from the profile's measured
//!   distribution (mean 1) with the device's own seeded generator, so two seeds are two
//!   replications and one seed gives the same bytes;
//! * a random request's random penalty (its positioning) is scaled by a factor drawn from
//!   the profile's distribution of it (mean 1), with the same generator: a disk's seek
//!   between two random positions and its rotational latency vary, its transfer does not. A
//!   switch penalty stays at its mean: the elevator's sweep fixes the seek distance, and its
//!   rotational spread is not modelled.
//!
//! A profile with none of these is exactly a table model ([`DeviceModel::from_profile`]
//! builds the same model as [`DeviceModel::from_spec`] of the same table), and a table model
//! draws no random number, so scenarios without a profile are unchanged.

use std::collections::VecDeque;

use pfsqos_profile::{interpolate, Profile};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::scenario::{CongestionRow, DeviceRow, DeviceSpec};

/// Stream of a device's random generator: device `i` uses `DEVICE_RNG_STREAM_BASE + i`, far
/// above the processes' streams (their indices), so devices and processes never share one.
pub const DEVICE_RNG_STREAM_BASE: u64 = 1 << 40;

const MIB_F64: f64 = (1u64 << 20) as f64;
const NS_PER_S_F64: f64 = 1e9;

/// Preset names accepted by `oss.device` without a `[[device]]` entry.
pub const PRESET_NAMES: &[&str] = &["hdd", "ssd-sata"];

/// One interpolation point: at `size_bytes`, `bandwidth_mib_s` and `overhead_ns`.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    size_bytes: u64,
    bandwidth_mib_s: f64,
    overhead_ns: f64,
}

/// Where `x` falls in a table sorted by `key` (the device's size rows, its congestion rows):
/// on a row (at or before the first, beyond the last: tables are flat outside their rows), or
/// between rows `i` and `i + 1` at fraction `f` of the way (1 where the two keys are equal).
enum At {
    Row(usize),
    Between(usize, f64),
}

fn locate<T>(rows: &[T], x: u64, key: impl Fn(&T) -> u64) -> At {
    assert!(!rows.is_empty(), "a device table has rows");
    if x <= key(&rows[0]) {
        return At::Row(0);
    }
    for (i, pair) in rows.windows(2).enumerate() {
        let (a, b) = (key(&pair[0]), key(&pair[1]));
        if x <= b {
            let span = (b - a) as f64;
            let f = if span == 0.0 {
                1.0
            } else {
                (x - a) as f64 / span
            };
            return At::Between(i, f);
        }
    }
    At::Row(rows.len() - 1)
}

fn lerp(a: f64, b: f64, f: f64) -> f64 {
    a + f * (b - a)
}

/// A resolved device model (immutable during a run).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceModel {
    pub name: String,
    read: Vec<Row>,
    write: Vec<Row>,
    pub random_penalty_ns: u64,
    pub concurrency: u32,
    /// Congestion curve, ascending in queue length; empty: none (work-conserving).
    congestion: Vec<CongestionRow>,
    /// What a profile adds to the table model; `None` for a table model.
    dynamics: Option<Box<Dynamics>>,
}

/// The per-device, sequence-dependent part of a profile's model (module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct Dynamics {
    /// Random penalty (ns) by request size (bytes), per direction (read, write).
    random_ns: [Vec<(f64, f64)>; 2],
    /// Switch penalty (ns) by objects at the device; empty: switching is free.
    switch_ns: Vec<(f64, f64)>,
    direction_switch_ns: u64,
    /// Service-time factor by quantile, mean 1; empty: none.
    variability: Vec<(f64, f64)>,
    /// Random-penalty factor by quantile, mean 1; empty: none.
    random_penalty_variability: Vec<(f64, f64)>,
}

impl Dynamics {
    /// Whether a request's time is drawn at random (the device needs a generator).
    fn varies(&self) -> bool {
        !self.variability.is_empty() || !self.random_penalty_variability.is_empty()
    }
}

/// One request as the device sees it when it starts.
#[derive(Clone, Copy, Debug)]
pub struct DeviceRequest {
    pub object: u32,
    pub offset_bytes: u64,
    pub size_bytes: u64,
    pub read: bool,
    /// It does not start where the previous request on its object ended.
    pub random_on_object: bool,
    /// The streams the head moves among: objects with requests at the device (this one
    /// included) plus the object of the request served before, if it has left.
    pub streams: u32,
}

/// Service time of one request split into its overlappable and its serialized part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceTime {
    /// Overhead plus random penalty: overlaps with other requests in service.
    pub fixed_ns: u64,
    /// Data transfer at the table bandwidth: serialized across the device.
    pub transfer_ns: u64,
}

impl DeviceModel {
    /// Builds a model from a scenario `[[device]]` entry.
    pub fn from_spec(spec: &DeviceSpec) -> Result<DeviceModel, String> {
        if spec.profile.is_some() {
            let profile = spec
                .resolved_profile
                .as_ref()
                .ok_or_else(|| format!("device `{}`: its profile was not read", spec.name))?;
            let mut model = DeviceModel::from_profile(profile);
            model.name = spec.name.clone();
            return Ok(model);
        }
        let rows = |rows: &[DeviceRow], what: &str| -> Result<Vec<Row>, String> {
            if rows.is_empty() {
                return Err(format!("device `{}` has no {what} rows", spec.name));
            }
            let mut out: Vec<Row> = rows
                .iter()
                .map(|r| Row {
                    size_bytes: r.size.bytes(),
                    bandwidth_mib_s: r.bandwidth_mib_s,
                    overhead_ns: r.overhead_us * 1e3,
                })
                .collect();
            for r in &out {
                if !(r.bandwidth_mib_s.is_finite() && r.bandwidth_mib_s > 0.0) {
                    return Err(format!(
                        "device `{}` has a {what} bandwidth of {} MiB/s (must be > 0)",
                        spec.name, r.bandwidth_mib_s
                    ));
                }
                if !(r.overhead_ns.is_finite() && r.overhead_ns >= 0.0) {
                    return Err(format!(
                        "device `{}` has a negative {what} overhead",
                        spec.name
                    ));
                }
            }
            out.sort_by_key(|r| r.size_bytes);
            Ok(out)
        };
        let penalty_ns = spec.random_penalty_us * 1e3;
        if !(penalty_ns.is_finite() && penalty_ns >= 0.0) {
            return Err(format!(
                "device `{}` has a negative random penalty",
                spec.name
            ));
        }
        let mut congestion = spec.congestion.clone();
        congestion.sort_by_key(|r| r.queue_requests);
        for r in &congestion {
            if !(r.throughput_fraction.is_finite()
                && r.throughput_fraction > 0.0
                && r.throughput_fraction <= 1.0)
            {
                return Err(format!(
                    "device `{}`: congestion throughput_fraction {} at queue {} (must be in (0, 1])",
                    spec.name, r.throughput_fraction, r.queue_requests
                ));
            }
        }
        if let Some(pair) = congestion
            .windows(2)
            .find(|p| p[0].queue_requests == p[1].queue_requests)
        {
            return Err(format!(
                "device `{}`: two congestion rows at queue {}",
                spec.name, pair[0].queue_requests
            ));
        }
        Ok(DeviceModel {
            name: spec.name.clone(),
            read: rows(&spec.read, "read")?,
            write: rows(&spec.write, "write")?,
            random_penalty_ns: penalty_ns.round() as u64,
            concurrency: spec.concurrency.max(1),
            congestion,
            dynamics: None,
        })
    }

    /// Builds the model of a (validated) device profile, named after it.
    pub fn from_profile(profile: &Profile) -> DeviceModel {
        let rows = |rows: &[pfsqos_profile::SizeRow]| -> Vec<Row> {
            rows.iter()
                .map(|r| Row {
                    size_bytes: r.size_kib << 10,
                    bandwidth_mib_s: r.bandwidth_mib_s,
                    overhead_ns: r.overhead_us * 1e3,
                })
                .collect()
        };
        let random_ns = |rows: &[pfsqos_profile::SizeRow]| -> Vec<(f64, f64)> {
            rows.iter()
                .map(|r| {
                    (
                        (r.size_kib << 10) as f64,
                        r.random_penalty_us.unwrap_or(profile.random_penalty_us) * 1e3,
                    )
                })
                .collect()
        };
        let per_size_random = profile.read.iter().chain(&profile.write).any(|r| {
            r.random_penalty_us
                .is_some_and(|p| p != profile.random_penalty_us)
        });
        let switch_ns: Vec<(f64, f64)> =
            if profile.streams.iter().any(|r| r.switch_penalty_us > 0.0) {
                profile
                    .streams
                    .iter()
                    .map(|r| (f64::from(r.streams), r.switch_penalty_us * 1e3))
                    .collect()
            } else {
                Vec::new()
            };
        let direction_switch_ns = (profile.direction_switch_penalty_us * 1e3).round() as u64;
        let variability = profile.variability_normalized();
        let random_penalty_variability = profile.random_penalty_variability_normalized();
        let dynamics = (per_size_random
            || !switch_ns.is_empty()
            || direction_switch_ns > 0
            || !variability.is_empty()
            || !random_penalty_variability.is_empty())
        .then(|| {
            Box::new(Dynamics {
                random_ns: [random_ns(&profile.read), random_ns(&profile.write)],
                switch_ns,
                direction_switch_ns,
                variability,
                random_penalty_variability,
            })
        });
        DeviceModel {
            name: profile.name.clone(),
            read: rows(&profile.read),
            write: rows(&profile.write),
            random_penalty_ns: (profile.random_penalty_us * 1e3).round() as u64,
            concurrency: profile.concurrency.max(1),
            congestion: profile
                .congestion
                .iter()
                .map(|r| CongestionRow {
                    queue_requests: r.queue_requests,
                    throughput_fraction: r.throughput_fraction,
                })
                .collect(),
            dynamics,
        }
    }

    /// The table model of `spec` restated as a profile (so every earlier scenario's device
    /// is expressible as one): `from_profile(&table_profile(spec)?)` is `from_spec(spec)`.
    /// Row sizes must be whole KiB (a profile's unit).
    pub fn table_profile(spec: &DeviceSpec) -> Result<Profile, String> {
        let rows = |rows: &[DeviceRow]| -> Result<Vec<pfsqos_profile::SizeRow>, String> {
            let mut out = rows
                .iter()
                .map(|r| {
                    let b = r.size.bytes();
                    if b % 1024 != 0 {
                        return Err(format!(
                            "device `{}`: a row of {b} bytes is not a whole KiB",
                            spec.name
                        ));
                    }
                    Ok(pfsqos_profile::SizeRow {
                        size_kib: b >> 10,
                        bandwidth_mib_s: r.bandwidth_mib_s,
                        overhead_us: r.overhead_us,
                        random_penalty_us: None,
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            out.sort_by_key(|r| r.size_kib);
            Ok(out)
        };
        let mut congestion: Vec<pfsqos_profile::CongestionRow> = spec
            .congestion
            .iter()
            .map(|r| pfsqos_profile::CongestionRow {
                queue_requests: r.queue_requests,
                throughput_fraction: r.throughput_fraction,
            })
            .collect();
        congestion.sort_by_key(|r| r.queue_requests);
        let profile = Profile {
            format: pfsqos_profile::FORMAT.to_string(),
            name: spec.name.clone(),
            description: String::new(),
            concurrency: spec.concurrency.max(1),
            random_penalty_us: spec.random_penalty_us,
            direction_switch_penalty_us: 0.0,
            source: pfsqos_profile::Source {
                kind: pfsqos_profile::SourceKind::Table,
                citation: format!("the table of scenario device `{}`", spec.name),
                date: "2026".to_string(),
                method: "restated from the scenario's [[device]] table".to_string(),
                host: String::new(),
                target: String::new(),
            },
            read: rows(&spec.read)?,
            write: rows(&spec.write)?,
            streams: Vec::new(),
            congestion,
            variability: Vec::new(),
            random_penalty_variability: Vec::new(),
            measured: Vec::new(),
        };
        profile
            .validate(&format!("device `{}`", spec.name))
            .map_err(|e| e.to_string())?;
        Ok(profile)
    }

    /// Whether the model has a profile's per-device dynamics (otherwise it is a table model).
    pub fn dynamics(&self) -> Option<&Dynamics> {
        self.dynamics.as_deref()
    }

    /// Whether service depends on the order of requests at the device (switch or direction
    /// costs), which a model without a queue cannot show.
    pub fn has_sequence_costs(&self) -> bool {
        self.dynamics
            .as_deref()
            .is_some_and(|d| !d.switch_ns.is_empty() || d.direction_switch_ns > 0)
    }

    /// Service time of `r` on a device with profile dynamics, given the device's state (the
    /// request before it, the objects at the device, its generator); updates that state.
    /// `base` is `service_time(r.read, r.size_bytes, false)`.
    pub fn dynamic_service_time(
        &self,
        device: &mut Device,
        r: DeviceRequest,
        base: ServiceTime,
    ) -> ServiceTime {
        let d = self
            .dynamics
            .as_deref()
            .expect("dynamic_service_time needs a profile's dynamics");
        let mut penalty_ns = 0.0;
        if r.random_on_object {
            penalty_ns = interpolate(&d.random_ns[usize::from(!r.read)], r.size_bytes as f64);
            if penalty_ns > 0.0 && !d.random_penalty_variability.is_empty() {
                // Only a random request draws: a sequential stream's requests draw nothing,
                // so its run is the same with or without the table.
                let rng = device
                    .rng
                    .as_mut()
                    .expect("a device with a variability table has a generator");
                let u: f64 = rng.random();
                penalty_ns *= interpolate(&d.random_penalty_variability, u);
            }
        } else if let Some(last) = device.last {
            let continues = last.object == r.object && last.end_bytes == r.offset_bytes;
            if !continues && !d.switch_ns.is_empty() {
                penalty_ns = interpolate(&d.switch_ns, f64::from(r.streams.max(1)));
            }
        }
        let mut fixed_ns = base.fixed_ns + penalty_ns.round() as u64;
        if device.last.is_some_and(|last| last.read != r.read) {
            fixed_ns += d.direction_switch_ns;
        }
        device.last = Some(LastRequest {
            object: r.object,
            end_bytes: r.offset_bytes + r.size_bytes,
            read: r.read,
        });
        let mut t = ServiceTime {
            fixed_ns,
            transfer_ns: base.transfer_ns,
        };
        if !d.variability.is_empty() {
            let rng = device
                .rng
                .as_mut()
                .expect("a device with a variability table has a generator");
            let u: f64 = rng.random();
            let factor = interpolate(&d.variability, u);
            debug_assert!(factor > 0.0);
            t = ServiceTime {
                fixed_ns: (t.fixed_ns as f64 * factor).round() as u64,
                transfer_ns: (t.transfer_ns as f64 * factor).round() as u64,
            };
        }
        t
    }

    /// Whether the model has a congestion curve (otherwise it is work-conserving).
    pub fn has_congestion(&self) -> bool {
        !self.congestion.is_empty()
    }

    /// Fraction of the table bandwidth the device transfers at with `queue_requests` in its
    /// dispatch queue: the curve interpolated linearly, flat outside its rows; 1 without one.
    pub fn congestion_fraction(&self, queue_requests: u64) -> f64 {
        let rows = &self.congestion;
        if rows.is_empty() {
            return 1.0;
        }
        // Rows are strictly ascending (checked in `from_spec`), so no span is empty.
        match locate(rows, queue_requests, |r| u64::from(r.queue_requests)) {
            At::Row(i) => rows[i].throughput_fraction,
            At::Between(i, f) => lerp(
                rows[i].throughput_fraction,
                rows[i + 1].throughput_fraction,
                f,
            ),
        }
    }

    /// `t` for a request that starts service with `queue_requests` in the dispatch queue
    /// (itself included): the transfer stretched by the congestion curve. Unchanged without
    /// a curve.
    pub fn congested(&self, t: ServiceTime, queue_requests: u64) -> ServiceTime {
        if self.congestion.is_empty() {
            return t;
        }
        let fraction = self.congestion_fraction(queue_requests);
        ServiceTime {
            fixed_ns: t.fixed_ns,
            transfer_ns: (t.transfer_ns as f64 / fraction).round() as u64,
        }
    }

    /// A preset by name, or `None`.
    ///
    /// * `hdd`: one 7200 rpm disk. 102 MB/s (97.3 MiB/s) sequential is the per-OST HDD peak
    ///   of the GIFT evaluation (GIFT, FAST '20, "Methodology"); 0.1 ms per-command overhead and an
    ///   8 ms random penalty (average seek plus half a rotation at 7200 rpm, the usual
    ///   datasheet order of magnitude); one request at a time.
    /// * `ssd-sata`: the 480 GB 6 Gb/s SATA SSD of the AdapTBF testbed (AdapTBF, arXiv 2026, Table II,
    ///   CloudLab c6525-25g). The paper gives only the class, so the numbers are the typical
    ///   datasheet figures of 480 GB datacenter SATA SSDs: 500 MB/s (476.8 MiB/s) sequential
    ///   read, 450 MB/s (429.2 MiB/s) sequential write, lower bandwidth for 4 KiB requests
    ///   (about 90 k read / 30 k write IOPS), tens of microseconds of command overhead, a
    ///   20 us penalty for non-contiguous access, and NCQ depth 32.
    pub fn preset(name: &str) -> Option<DeviceModel> {
        let row = |size_bytes: u64, bandwidth_mib_s: f64, overhead_us: f64| Row {
            size_bytes,
            bandwidth_mib_s,
            overhead_ns: overhead_us * 1e3,
        };
        match name {
            "hdd" => Some(DeviceModel {
                name: name.to_string(),
                read: vec![row(4 << 10, 97.3, 100.0)],
                write: vec![row(4 << 10, 97.3, 100.0)],
                random_penalty_ns: 8_000_000,
                concurrency: 1,
                congestion: Vec::new(),
                dynamics: None,
            }),
            "ssd-sata" => Some(DeviceModel {
                name: name.to_string(),
                read: vec![row(4 << 10, 350.0, 90.0), row(128 << 10, 476.8, 50.0)],
                write: vec![row(4 << 10, 117.0, 40.0), row(128 << 10, 429.2, 30.0)],
                random_penalty_ns: 20_000,
                concurrency: 32,
                congestion: Vec::new(),
                dynamics: None,
            }),
            _ => None,
        }
    }

    /// Overhead (ns) and bandwidth (MiB/s) at `size_bytes`, linearly interpolated between
    /// rows and held flat outside them.
    fn interpolate(rows: &[Row], size_bytes: u64) -> (f64, f64) {
        match locate(rows, size_bytes, |r| r.size_bytes) {
            At::Row(i) => (rows[i].overhead_ns, rows[i].bandwidth_mib_s),
            At::Between(i, f) => {
                let (a, b) = (&rows[i], &rows[i + 1]);
                (
                    lerp(a.overhead_ns, b.overhead_ns, f),
                    lerp(a.bandwidth_mib_s, b.bandwidth_mib_s, f),
                )
            }
        }
    }

    /// Service time of a request of `size_bytes`; `random` when it does not start where the
    /// previous request on the same object ended.
    pub fn service_time(&self, is_read: bool, size_bytes: u64, random: bool) -> ServiceTime {
        let rows = if is_read { &self.read } else { &self.write };
        let (overhead_ns, bandwidth_mib_s) = Self::interpolate(rows, size_bytes);
        let transfer_ns = size_bytes as f64 * NS_PER_S_F64 / (bandwidth_mib_s * MIB_F64);
        ServiceTime {
            fixed_ns: overhead_ns.round() as u64 + if random { self.random_penalty_ns } else { 0 },
            transfer_ns: transfer_ns.round() as u64,
        }
    }

    /// Bytes per second the device sustains with a full queue of sequential requests of
    /// `size_bytes` in one direction (the fluid engine's OST bandwidth): the same bound as
    /// [`DeviceModel::capacity_rpcs_per_s`] without rounding to whole requests.
    pub fn sequential_bytes_per_s(&self, is_read: bool, size_bytes: u64) -> f64 {
        let t = self.service_time(is_read, size_bytes, false);
        let cycle_ns = (t.fixed_ns + t.transfer_ns).max(1) as f64;
        let by_slots = f64::from(self.concurrency) * NS_PER_S_F64 / cycle_ns;
        let by_transfer = if t.transfer_ns == 0 {
            f64::INFINITY
        } else {
            NS_PER_S_F64 / t.transfer_ns as f64
        };
        by_slots.min(by_transfer) * size_bytes as f64
    }

    /// Sequential writes of `size_bytes` per second the device sustains with a full queue:
    /// AdapTBF's `T_i` when the scenario does not give one. At least 1.
    pub fn capacity_rpcs_per_s(&self, size_bytes: u64) -> u64 {
        let t = self.service_time(false, size_bytes, false);
        let cycle_ns = (t.fixed_ns + t.transfer_ns).max(1) as f64;
        let by_slots = f64::from(self.concurrency) * NS_PER_S_F64 / cycle_ns;
        let by_transfer = if t.transfer_ns == 0 {
            f64::INFINITY
        } else {
            NS_PER_S_F64 / t.transfer_ns as f64
        };
        (by_slots.min(by_transfer).floor() as u64).max(1)
    }
}

/// A scenario's device models, built once for both engines: each distinct `device` name of
/// its OSSs becomes one model (a `[[device]]` entry, or a preset), in order of first use.
#[derive(Clone, Debug)]
pub struct DeviceTable {
    pub models: Vec<DeviceModel>,
    /// Index into `models` of each OSS's device, in scenario order.
    pub oss_model: Vec<u32>,
    /// Each OSS's `capacity_rpcs_per_s`, or the rate of `brw_size` writes its device sustains.
    pub oss_capacity_rpcs_per_s: Vec<u64>,
}

impl DeviceTable {
    /// Builds the table of `scenario`'s OSSs, refusing a device name that is neither a
    /// `[[device]]` entry nor a preset.
    pub fn build(scenario: &crate::scenario::Scenario) -> Result<DeviceTable, String> {
        let brw_size_bytes = scenario.cluster.brw_size.bytes().max(1);
        let mut models: Vec<DeviceModel> = Vec::new();
        let mut oss_model = Vec::with_capacity(scenario.osses.len());
        let mut oss_capacity_rpcs_per_s = Vec::with_capacity(scenario.osses.len());
        for spec in &scenario.osses {
            let index = match models.iter().position(|m| m.name == spec.device) {
                Some(i) => i,
                None => {
                    let model = match scenario.devices.iter().find(|d| d.name == spec.device) {
                        Some(d) => DeviceModel::from_spec(d)?,
                        None => DeviceModel::preset(&spec.device).ok_or_else(|| {
                            format!(
                                "oss `{}`: unknown device `{}` (presets: {})",
                                spec.name,
                                spec.device,
                                PRESET_NAMES.join(", ")
                            )
                        })?,
                    };
                    models.push(model);
                    models.len() - 1
                }
            };
            oss_model.push(index as u32);
            oss_capacity_rpcs_per_s.push(
                spec.capacity_rpcs_per_s
                    .unwrap_or_else(|| models[index].capacity_rpcs_per_s(brw_size_bytes)),
            );
        }
        Ok(DeviceTable {
            models,
            oss_model,
            oss_capacity_rpcs_per_s,
        })
    }
}

/// The request a device started last (profile dynamics only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastRequest {
    pub object: u32,
    pub end_bytes: u64,
    pub read: bool,
}

/// Run-time state of one OST device.
#[derive(Debug, Default)]
pub struct Device {
    /// The request started last (kept only for a model with profile dynamics).
    pub last: Option<LastRequest>,
    /// Objects with requests at the device, waiting or in service (profile dynamics only).
    pub objects_active: u32,
    /// The device's generator for service-time variability (profile dynamics only).
    pub rng: Option<ChaCha8Rng>,
    /// Requests in service (at most the model's concurrency).
    pub busy: u32,
    /// When the transfer serializer is next free.
    pub transfer_free_ns: u64,
    /// Requests waiting for a service slot, FIFO (payload: RPC index).
    pub waiting: VecDeque<u32>,
    /// Time completed requests spent at the device, from submission (waiting included) to
    /// completion, summed, in ns: Linux's `time_in_queue` (`/sys/block/<dev>/stat` field 11).
    pub time_in_queue_ns: u64,
}

impl Device {
    /// A device for `model`: with a variability table, its own generator on stream
    /// `DEVICE_RNG_STREAM_BASE + index` of the run seed.
    pub fn for_model(model: &DeviceModel, seed: u64, index: u64) -> Device {
        let rng = model.dynamics().filter(|d| d.varies()).map(|_| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(DEVICE_RNG_STREAM_BASE + index);
            rng
        });
        Device {
            rng,
            ..Device::default()
        }
    }

    /// Starts a request at `now_ns` on a free slot; returns its completion time.
    pub fn start(&mut self, now_ns: u64, t: ServiceTime) -> u64 {
        self.busy += 1;
        let transfer_start_ns = (now_ns + t.fixed_ns).max(self.transfer_free_ns);
        let done_ns = transfer_start_ns + t.transfer_ns;
        self.transfer_free_ns = done_ns;
        done_ns
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    pub(crate) use super::tests::{congested_spec, spec};
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ByteSize;

    pub(crate) fn spec() -> DeviceSpec {
        DeviceSpec {
            name: "t".into(),
            profile: None,
            resolved_profile: None,
            read: vec![
                DeviceRow {
                    size: ByteSize(1 << 20),
                    bandwidth_mib_s: 100.0,
                    overhead_us: 100.0,
                },
                DeviceRow {
                    size: ByteSize(3 << 20),
                    bandwidth_mib_s: 200.0,
                    overhead_us: 300.0,
                },
            ],
            write: vec![DeviceRow {
                size: ByteSize(1 << 20),
                bandwidth_mib_s: 1000.0,
                overhead_us: 0.0,
            }],
            random_penalty_us: 5.0,
            concurrency: 1,
            congestion: Vec::new(),
        }
    }

    #[test]
    fn interpolates_between_rows_and_holds_flat_outside() {
        let m = DeviceModel::from_spec(&spec()).unwrap();
        // Below the first row: flat. 1 MiB at 100 MiB/s = 10 ms.
        let t = m.service_time(true, 1 << 20, false);
        assert_eq!(t.fixed_ns, 100_000);
        assert_eq!(t.transfer_ns, 10_000_000);
        // Midway (2 MiB): overhead 200 us, bandwidth 150 MiB/s.
        let t = m.service_time(true, 2 << 20, true);
        assert_eq!(t.fixed_ns, 200_000 + 5_000);
        assert_eq!(t.transfer_ns, (2.0 / 150.0 * 1e9f64).round() as u64);
        // Above the last row: flat.
        let t = m.service_time(true, 6 << 20, false);
        assert_eq!(t.fixed_ns, 300_000);
        assert_eq!(t.transfer_ns, 30_000_000);
    }

    #[test]
    fn capacity_is_the_brw_write_rate() {
        let m = DeviceModel::from_spec(&spec()).unwrap();
        // 4 MiB at 1000 MiB/s = 4 ms -> 250 RPC/s.
        assert_eq!(m.capacity_rpcs_per_s(4 << 20), 250);
        let ssd = DeviceModel::preset("ssd-sata").unwrap();
        // Transfer bound: 429.2 MiB/s / 4 MiB.
        assert_eq!(ssd.capacity_rpcs_per_s(4 << 20), 107);
        let hdd = DeviceModel::preset("hdd").unwrap();
        assert_eq!(hdd.capacity_rpcs_per_s(4 << 20), 24);
    }

    #[test]
    fn transfers_serialize_and_overheads_overlap() {
        let mut d = Device::default();
        let t = ServiceTime {
            fixed_ns: 100,
            transfer_ns: 1000,
        };
        assert_eq!(d.start(0, t), 1100);
        // A second request started at once overlaps its overhead but waits for the transfer.
        assert_eq!(d.start(0, t), 2100);
        assert_eq!(d.busy, 2);
    }

    /// A device with NCQ depth 4, 1 MiB writes at 400 MiB/s (30 us overhead) and a curve
    /// that keeps full speed to a queue of 4, loses 10 % by 16 and 30 % by 64.
    pub(crate) fn congested_spec() -> DeviceSpec {
        DeviceSpec {
            name: "c".into(),
            profile: None,
            resolved_profile: None,
            read: vec![DeviceRow {
                size: ByteSize(1 << 20),
                bandwidth_mib_s: 400.0,
                overhead_us: 30.0,
            }],
            write: vec![DeviceRow {
                size: ByteSize(1 << 20),
                bandwidth_mib_s: 400.0,
                overhead_us: 30.0,
            }],
            random_penalty_us: 0.0,
            concurrency: 4,
            congestion: vec![
                CongestionRow {
                    queue_requests: 64,
                    throughput_fraction: 0.7,
                },
                CongestionRow {
                    queue_requests: 4,
                    throughput_fraction: 1.0,
                },
                CongestionRow {
                    queue_requests: 16,
                    throughput_fraction: 0.9,
                },
            ],
        }
    }

    /// Bytes per second the device serves with a queue held at `queue` requests: every
    /// completion is replaced at once by a new request (a closed loop), and a request starts
    /// on a free slot as the engine starts it (`DeviceModel::congested` with the queue it
    /// starts in). Measured over completions 200..1200, after the start-up transient.
    fn steady_bytes_per_s(m: &DeviceModel, queue: u32) -> f64 {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let size = 1u64 << 20;
        let base = m.service_time(false, size, false);
        let mut d = Device::default();
        let mut waiting = u64::from(queue);
        let mut completions: BinaryHeap<Reverse<u64>> = BinaryHeap::new();
        let start_free = |d: &mut Device, now: u64, waiting: &mut u64, c: &mut BinaryHeap<_>| {
            while d.busy < m.concurrency && *waiting > 0 {
                *waiting -= 1;
                let q = u64::from(d.busy) + *waiting + 1;
                c.push(Reverse(d.start(now, m.congested(base, q))));
            }
        };
        start_free(&mut d, 0, &mut waiting, &mut completions);
        let (mut first_ns, mut done) = (0u64, 0u32);
        loop {
            let Reverse(now) = completions.pop().expect("requests in service");
            d.busy -= 1;
            done += 1;
            if done == 200 {
                first_ns = now;
            }
            if done == 1200 {
                return 1000.0 * size as f64 * 1e9 / (now - first_ns) as f64;
            }
            waiting += 1; // the closed loop's replacement
            start_free(&mut d, now, &mut waiting, &mut completions);
        }
    }

    #[test]
    fn throughput_follows_the_congestion_curve() {
        let m = DeviceModel::from_spec(&congested_spec()).unwrap();
        let table = m.sequential_bytes_per_s(false, 1 << 20);
        // Rows given out of order are sorted; between rows the fraction is linear.
        assert_eq!(m.congestion_fraction(4), 1.0);
        assert!((m.congestion_fraction(10) - 0.95).abs() < 1e-12);
        assert!((m.congestion_fraction(40) - 0.8).abs() < 1e-12);
        assert_eq!(m.congestion_fraction(500), 0.7);
        assert_eq!(m.congestion_fraction(1), 1.0);
        for queue in [2u32, 4, 8, 10, 16, 24, 40, 64, 100] {
            let measured = steady_bytes_per_s(&m, queue);
            let expected = table * m.congestion_fraction(u64::from(queue));
            assert!(
                (measured / expected - 1.0).abs() < 2e-3,
                "queue {queue}: {measured} B/s measured, {expected} B/s on the curve"
            );
        }
        // And a deeper queue is slower, which is the point of the curve.
        assert!(steady_bytes_per_s(&m, 64) < 0.75 * steady_bytes_per_s(&m, 4));
    }

    #[test]
    fn congestion_is_off_by_default() {
        let toml = r#"
            name = "plain"
            concurrency = 4
            read = [{ size = "1M", bandwidth_mib_s = 400.0, overhead_us = 30.0 }]
            write = [{ size = "1M", bandwidth_mib_s = 400.0, overhead_us = 30.0 }]
        "#;
        let spec: DeviceSpec = toml::from_str(toml).unwrap();
        assert!(spec.congestion.is_empty());
        let plain = DeviceModel::from_spec(&spec).unwrap();
        assert!(!plain.has_congestion());
        let t = plain.service_time(false, 1 << 20, false);
        for q in [1u64, 4, 128, 10_000] {
            assert_eq!(plain.congestion_fraction(q), 1.0);
            assert_eq!(plain.congested(t, q), t);
        }
        // Work-conserving: a queue of 100 serves as fast as a queue of 4.
        let fast = steady_bytes_per_s(&plain, 4);
        assert!((steady_bytes_per_s(&plain, 100) / fast - 1.0).abs() < 1e-3);
        for name in PRESET_NAMES {
            assert!(!DeviceModel::preset(name).unwrap().has_congestion());
        }
    }

    #[test]
    fn congestion_curves_are_validated() {
        for bad in [0.0, -0.5, 1.5, f64::NAN] {
            let mut spec = congested_spec();
            spec.congestion[0].throughput_fraction = bad;
            let e = DeviceModel::from_spec(&spec).unwrap_err();
            assert!(e.contains("throughput_fraction"), "{e}");
        }
        let mut spec = congested_spec();
        spec.congestion[1].queue_requests = 64;
        let e = DeviceModel::from_spec(&spec).unwrap_err();
        assert!(e.contains("two congestion rows at queue 64"), "{e}");
    }

    #[test]
    fn presets_exist() {
        for name in PRESET_NAMES {
            assert!(DeviceModel::preset(name).is_some());
        }
        assert!(DeviceModel::preset("floppy").is_none());
    }
}

#[cfg(test)]
#[path = "device_profile_tests.rs"]
mod profile_tests;
