//! Sensor and actuator shared by the `pi` and `aimd` controllers (PI paper, Sections 3.1-3.3).
//!
//! **Sensor.** The paper measures the block device's dispatch queue from `time_in_queue`
//! (field 11 of `/sys/block/<dev>/stat`): over a period, `Δtime_in_queue / Δt` is the mean
//! number of requests at the device (Section 5.1: "the dispatch queue sensor is in fact based
//! on an average between two consecutive measurements of a base metric (the `time_in_queue`
//! metric)"). [`QueueSource::TimeInQueue`] does exactly that with
//! [`TargetObservation::device_time_in_queue_ns`] and the observations' `now_ns`; it lags by
//! one service time because the counter advances at completions. [`QueueSource::Instant`]
//! reads the instantaneous device queue ([`TargetObservation::device_queue_rpcs`], the
//! kernel's `in_flight`) and [`QueueSource::Nrs`] the RPCs waiting in the OSS scheduler
//! ([`TargetObservation::queue_len_rpcs`]), for comparison.
//!
//! **Which target.** The paper has one server with one device. Here a spec names one target
//! (`ost=N`) or, by default, takes the *largest* queue over all targets of all domains: one
//! limit applies to every client, so it must keep the most congested device at the target
//! (a mean would let one device saturate while others idle). The trace names the governing
//! target.
//!
//! **Actuator.** One limit for every client (Section 3.3: "we apply the same action on all the
//! clients"), written only to clients whose limit changes: with `tc`, every rate change
//! refills the token bucket (anchors B), so rewriting an unchanged limit each period would
//! let an extra burst through.

use std::collections::BTreeMap;

use super::law::MovingAverage;
use crate::model::OstId;
use crate::{ClientId, ClientWrite, Observation, TargetObservation};

/// Where the queue measurement comes from (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum QueueSource {
    /// Mean device queue over the period from two `time_in_queue` readings (the paper's).
    #[default]
    TimeInQueue,
    /// Device queue at the end of the period.
    Instant,
    /// RPCs waiting in the OSS request scheduler at the end of the period.
    Nrs,
}

/// Which target's queue the controller regulates (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TargetChoice {
    /// The largest queue over all targets.
    #[default]
    Max,
    /// One target.
    Ost(OstId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SensorConfig {
    pub source: QueueSource,
    pub targets: TargetChoice,
    /// Moving-average window over periods (Section 5.1); 1: no filter.
    pub filter_samples: usize,
}

impl Default for SensorConfig {
    fn default() -> Self {
        SensorConfig {
            source: QueueSource::default(),
            targets: TargetChoice::default(),
            filter_samples: 1,
        }
    }
}

/// One step's measurement: the governing target and its (filtered) queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueReading {
    pub ost: OstId,
    /// Before the moving average.
    pub raw_rpcs: f64,
    /// After it: what the control law sees.
    pub filtered_rpcs: f64,
}

/// The queue sensor: keeps the previous `time_in_queue` readings and the filter.
#[derive(Clone, Debug)]
pub struct QueueSensor {
    config: SensorConfig,
    /// Per target: the last `(now_ns, device_time_in_queue_ns)`.
    previous: BTreeMap<OstId, (u64, u64)>,
    filter: MovingAverage,
    /// The last step's per-target queues (before aggregation and filtering).
    last_targets: Vec<(OstId, f64)>,
}

impl QueueSensor {
    pub fn new(config: SensorConfig) -> QueueSensor {
        QueueSensor {
            config,
            previous: BTreeMap::new(),
            filter: MovingAverage::new(config.filter_samples),
            last_targets: Vec::new(),
        }
    }

    pub fn config(&self) -> SensorConfig {
        self.config
    }

    fn selected(&self, t: &TargetObservation) -> bool {
        match self.config.targets {
            TargetChoice::Max => true,
            TargetChoice::Ost(ost) => t.ost == ost,
        }
    }

    /// Records the `time_in_queue` counters without measuring (the setup observation), so
    /// the first control step already has a previous reading.
    pub fn prime(&mut self, observation: &Observation) {
        for d in &observation.domains {
            for t in &d.targets {
                self.previous
                    .insert(t.ost, (observation.now_ns, t.device_time_in_queue_ns));
            }
        }
    }

    /// The queue of one target, `None` when it cannot be measured yet (`time_in_queue` needs
    /// a previous reading, a later time and a counter that did not go back: a restarted
    /// device starts over).
    fn target_queue(&mut self, now_ns: u64, t: &TargetObservation) -> Option<f64> {
        let previous = self
            .previous
            .insert(t.ost, (now_ns, t.device_time_in_queue_ns));
        match self.config.source {
            QueueSource::Instant => Some(t.device_queue_rpcs as f64),
            QueueSource::Nrs => Some(t.queue_len_rpcs as f64),
            QueueSource::TimeInQueue => {
                let (then_ns, then_tiq_ns) = previous?;
                if now_ns <= then_ns || t.device_time_in_queue_ns < then_tiq_ns {
                    return None;
                }
                let queue =
                    (t.device_time_in_queue_ns - then_tiq_ns) as f64 / (now_ns - then_ns) as f64;
                assert!(queue >= 0.0 && queue.is_finite());
                Some(queue)
            }
        }
    }

    /// Measures one step: every selected target's queue, the governing one (the largest, or
    /// the named target), filtered. `None` when no selected target can be measured (the
    /// controller then holds its limit).
    pub fn read(&mut self, observation: &Observation) -> Option<QueueReading> {
        let mut queues = Vec::new();
        for d in &observation.domains {
            for t in &d.targets {
                if !self.selected(t) {
                    // Keep its counter current should the choice ever include it.
                    self.previous
                        .insert(t.ost, (observation.now_ns, t.device_time_in_queue_ns));
                    continue;
                }
                if let Some(q) = self.target_queue(observation.now_ns, t) {
                    queues.push((t.ost, q));
                }
            }
        }
        queues.sort_by_key(|&(ost, _)| ost);
        // Largest queue; on ties the lowest target id (deterministic).
        let governing = queues
            .iter()
            .copied()
            .reduce(|best, next| if next.1 > best.1 { next } else { best });
        self.last_targets = queues;
        let (ost, raw_rpcs) = governing?;
        Some(QueueReading {
            ost,
            raw_rpcs,
            filtered_rpcs: self.filter.push(raw_rpcs),
        })
    }

    /// The last step's queue per selected target, sorted by target.
    pub fn last_targets(&self) -> &[(OstId, f64)] {
        &self.last_targets
    }
}

/// Writes one limit to every client, only where it changes (module doc).
#[derive(Clone, Debug, Default)]
pub struct ClientActuator {
    sent: BTreeMap<ClientId, u64>,
}

impl ClientActuator {
    /// The writes that bring every client in `clients` to `limit_bytes_per_s`. Clients no
    /// longer listed are forgotten (a client that comes back is written again).
    pub fn writes(&mut self, clients: &[ClientId], limit_bytes_per_s: u64) -> Vec<ClientWrite> {
        self.sent.retain(|c, _| clients.contains(c));
        let mut out = Vec::new();
        for &client in clients {
            if self.sent.insert(client, limit_bytes_per_s) != Some(limit_bytes_per_s) {
                out.push(ClientWrite {
                    client,
                    limit_bytes_per_s: Some(limit_bytes_per_s),
                });
            }
        }
        out
    }
}

/// Bytes in a MiB: the control laws work in MiB/s of per-client limit.
pub const MIB: f64 = (1u64 << 20) as f64;

/// A limit in MiB/s as whole bytes/s within `[min, max]` bytes/s.
pub fn limit_bytes_per_s(limit_mib_per_s: f64, min_bytes_per_s: u64, max_bytes_per_s: u64) -> u64 {
    assert!(limit_mib_per_s.is_finite());
    assert!(min_bytes_per_s <= max_bytes_per_s);
    ((limit_mib_per_s * MIB).round().max(0.0) as u64).clamp(min_bytes_per_s, max_bytes_per_s)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{DomainId, DomainObservation};

    /// An observation at `now_ns` of targets `(ost, time_in_queue_ns, device_queue, nrs_queue)`
    /// on one domain, with `clients` clients.
    pub(crate) fn observation(
        now_ns: u64,
        targets: &[(u32, u64, u64, u64)],
        clients: u32,
    ) -> Observation {
        Observation {
            now_ns,
            period_ns: 300_000_000,
            domains: vec![DomainObservation {
                domain: DomainId(0),
                targets: targets
                    .iter()
                    .map(|&(ost, tiq, dev, nrs)| TargetObservation {
                        ost: OstId(ost),
                        queue_len_rpcs: nrs,
                        device_queue_rpcs: dev,
                        device_time_in_queue_ns: tiq,
                        capacity_rpcs_per_s: 1000,
                        jobs: vec![],
                    })
                    .collect(),
            }],
            jobs: vec![],
            clients: (0..clients).map(ClientId).collect(),
        }
    }

    #[test]
    fn time_in_queue_gives_the_mean_queue_of_the_period() {
        let mut s = QueueSensor::new(SensorConfig::default());
        s.prime(&observation(0, &[(0, 0, 0, 0), (1, 0, 0, 0)], 0));
        // 300 ms; target 0 accumulated 24 s of request time (80 requests on average),
        // target 1 6 s (20).
        let r = s
            .read(&observation(
                300_000_000,
                &[(0, 24_000_000_000, 3, 5), (1, 6_000_000_000, 90, 7)],
                0,
            ))
            .unwrap();
        assert_eq!((r.ost, r.raw_rpcs), (OstId(0), 80.0));
        assert_eq!(s.last_targets(), &[(OstId(0), 80.0), (OstId(1), 20.0)]);
        // A counter that goes back (restarted device) gives no reading for that target.
        let r = s
            .read(&observation(
                600_000_000,
                &[(0, 1, 3, 5), (1, 9_000_000_000, 90, 7)],
                0,
            ))
            .unwrap();
        assert_eq!((r.ost, r.raw_rpcs), (OstId(1), 10.0));
        // No time passed: no reading at all.
        assert_eq!(
            s.read(&observation(
                600_000_000,
                &[(0, 2, 3, 5), (1, 9_000_000_001, 90, 7)],
                0
            )),
            None
        );
    }

    #[test]
    fn instant_and_nrs_sources_and_one_named_target() {
        let obs = observation(300_000_000, &[(0, 0, 3, 50), (1, 0, 9, 7)], 0);
        let mut instant = QueueSensor::new(SensorConfig {
            source: QueueSource::Instant,
            ..SensorConfig::default()
        });
        let r = instant.read(&obs).unwrap();
        assert_eq!((r.ost, r.raw_rpcs), (OstId(1), 9.0));
        let mut nrs = QueueSensor::new(SensorConfig {
            source: QueueSource::Nrs,
            targets: TargetChoice::Ost(OstId(1)),
            filter_samples: 1,
        });
        let r = nrs.read(&obs).unwrap();
        assert_eq!((r.ost, r.raw_rpcs), (OstId(1), 7.0));
        let mut missing = QueueSensor::new(SensorConfig {
            source: QueueSource::Nrs,
            targets: TargetChoice::Ost(OstId(5)),
            filter_samples: 1,
        });
        assert_eq!(missing.read(&obs), None);
    }

    #[test]
    fn the_filter_averages_the_governing_queue() {
        let mut s = QueueSensor::new(SensorConfig {
            source: QueueSource::Instant,
            targets: TargetChoice::Max,
            filter_samples: 2,
        });
        assert_eq!(
            s.read(&observation(1, &[(0, 0, 10, 0)], 0))
                .unwrap()
                .filtered_rpcs,
            10.0
        );
        let r = s.read(&observation(2, &[(0, 0, 30, 0)], 0)).unwrap();
        assert_eq!((r.raw_rpcs, r.filtered_rpcs), (30.0, 20.0));
    }

    #[test]
    fn the_actuator_writes_changes_only() {
        let mut a = ClientActuator::default();
        let c = [ClientId(0), ClientId(1)];
        assert_eq!(a.writes(&c, 100).len(), 2);
        assert!(a.writes(&c, 100).is_empty());
        let w = a.writes(&[ClientId(0), ClientId(1), ClientId(2)], 100);
        assert_eq!(
            w,
            vec![ClientWrite {
                client: ClientId(2),
                limit_bytes_per_s: Some(100)
            }]
        );
        assert_eq!(a.writes(&c, 50).len(), 2);
        assert!(a.writes(&[], 10).is_empty());
        assert_eq!(limit_bytes_per_s(1.5, 0, u64::MAX), 1_572_864);
        assert_eq!(limit_bytes_per_s(-3.0, 1000, 2000), 1000);
        assert_eq!(limit_bytes_per_s(1e9, 1000, 2000), 2000);
    }
}
