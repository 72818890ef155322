//! A simulated fio: one sweep point run in closed loop against a [`DeviceModel`], measured
//! the way fio measures a real device (aggregate throughput, completion latency from
//! submission). It is the simulated device of the calibration's round trip (a profile
//! calibrated from a simulated device must reproduce that device) and lets `pfsqos calibrate`
//! be tested end to end without hardware.
//!
//! `streams` jobs each keep `queue_depth` requests of `size` outstanding on their own object;
//! a completion is replaced at once by the job's next request. The device serves them as the
//! RPC engine's device does: `concurrency` slots, FIFO waiting queue, transfers serialized,
//! the profile's per-device dynamics and congestion curve applied at start.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use pfsqos_profile::{Measured, Op, Pattern};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::device::{Device, DeviceModel, DeviceRequest};

/// Span of each job's file for random offsets: 1 GiB.
const FILE_SPAN_BYTES: u64 = 1 << 30;
pub const REQUESTS_MAX: u64 = 10_000_000;
pub const QUEUE_DEPTH_MAX: u32 = 4096;
pub const STREAMS_MAX: u32 = 4096;

/// One sweep point to measure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub op: Op,
    pub pattern: Pattern,
    /// Percentage of reads (mixed points).
    pub read_percent: u32,
    pub size_kib: u64,
    pub queue_depth: u32,
    pub streams: u32,
}

#[derive(Clone, Copy)]
struct Req {
    stream: u32,
    offset: u64,
    read: bool,
    random: bool,
    submit_ns: u64,
}

struct Loop<'a> {
    model: &'a DeviceModel,
    point: Point,
    size: u64,
    blocks: u64,
    rng: ChaCha8Rng,
    device: Device,
    next_offset: Vec<u64>,
    at_device: Vec<u32>,
    waiting: VecDeque<Req>,
    /// Completions `(time, start sequence)` and the request each belongs to.
    completions: BinaryHeap<Reverse<(u64, u64)>>,
    in_service: Vec<(u64, Req)>,
    started: u64,
}

impl Loop<'_> {
    fn submit(&mut self, stream: u32, now: u64) {
        let read = match self.point.op {
            Op::Read => true,
            Op::Write => false,
            Op::Mixed => self.rng.random_range(0..100) < self.point.read_percent,
        };
        let next = self.next_offset[stream as usize];
        let offset = match self.point.pattern {
            Pattern::Sequential => next,
            Pattern::Random => self.rng.random_range(0..self.blocks) * self.size,
        };
        self.next_offset[stream as usize] = offset + self.size;
        let a = &mut self.at_device[stream as usize];
        *a += 1;
        if *a == 1 {
            self.device.objects_active += 1;
        }
        self.waiting.push_back(Req {
            stream,
            offset,
            read,
            random: offset != next,
            submit_ns: now,
        });
    }

    /// Starts waiting requests on free slots, as the engine's device does.
    fn fill(&mut self, now: u64) {
        let model = self.model;
        while self.device.busy < model.concurrency {
            let Some(r) = self.waiting.pop_front() else {
                break;
            };
            let mut t = model.service_time(r.read, self.size, false);
            if model.dynamics().is_some() {
                let last_left = self
                    .device
                    .last
                    .is_some_and(|l| self.at_device[l.object as usize] == 0);
                let request = DeviceRequest {
                    object: r.stream,
                    offset_bytes: r.offset,
                    size_bytes: self.size,
                    read: r.read,
                    random_on_object: r.random,
                    streams: self.device.objects_active + u32::from(last_left),
                };
                t = model.dynamic_service_time(&mut self.device, request, t);
            } else if r.random {
                t.fixed_ns += model.random_penalty_ns;
            }
            if model.has_congestion() {
                let queue = u64::from(self.device.busy) + self.waiting.len() as u64 + 1;
                t = model.congested(t, queue);
            }
            let done = self.device.start(now, t);
            self.completions.push(Reverse((done, self.started)));
            self.in_service.push((self.started, r));
            self.started += 1;
        }
    }
}

/// Measures `point` on `model` over `requests` completions after `warmup` completions.
/// Deterministic for a seed.
pub fn closed_loop(
    model: &DeviceModel,
    point: Point,
    warmup: u64,
    requests: u64,
    seed: u64,
) -> Measured {
    assert!(requests >= 1 && warmup + requests <= REQUESTS_MAX);
    assert!((1..=QUEUE_DEPTH_MAX).contains(&point.queue_depth));
    assert!((1..=STREAMS_MAX).contains(&point.streams));
    assert!(point.size_kib >= 1 && point.read_percent <= 100);
    let size = point.size_kib << 10;
    let mut l = Loop {
        model,
        point,
        size,
        blocks: (FILE_SPAN_BYTES / size).max(1),
        rng: ChaCha8Rng::seed_from_u64(seed),
        device: Device::for_model(model, seed, 0),
        next_offset: vec![0; point.streams as usize],
        at_device: vec![0; point.streams as usize],
        waiting: VecDeque::new(),
        completions: BinaryHeap::new(),
        in_service: Vec::new(),
        started: 0,
    };
    for stream in 0..point.streams {
        for _ in 0..point.queue_depth {
            l.submit(stream, 0);
        }
    }
    l.fill(0);
    let (mut done_count, mut first_ns, mut bytes) = (0u64, 0u64, 0u64);
    let mut latencies_ns: Vec<u64> = Vec::with_capacity(requests as usize);
    loop {
        let Reverse((now, s)) = l.completions.pop().expect("requests in service");
        let i = l
            .in_service
            .iter()
            .position(|(q, _)| *q == s)
            .expect("a completion has a started request");
        let (_, r) = l.in_service.swap_remove(i);
        l.device.busy -= 1;
        let a = &mut l.at_device[r.stream as usize];
        *a -= 1;
        if *a == 0 {
            l.device.objects_active -= 1;
        }
        done_count += 1;
        if done_count == warmup {
            first_ns = now;
        }
        if done_count > warmup {
            bytes += size;
            latencies_ns.push(now - r.submit_ns);
        }
        if done_count == warmup + requests {
            let elapsed_ns = (now - first_ns).max(1);
            latencies_ns.sort_unstable();
            let n = latencies_ns.len();
            let mean_ns = latencies_ns.iter().sum::<u64>() as f64 / n as f64;
            let quantile = |q: f64| {
                let k = ((q * n as f64).ceil() as usize).clamp(1, n);
                latencies_ns[k - 1] as f64 / 1e3
            };
            let latency_quantiles_us = [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999]
                .iter()
                .map(|&q| [q, quantile(q)])
                .collect();
            return Measured {
                op: point.op,
                pattern: point.pattern,
                read_percent: (point.op == Op::Mixed).then_some(point.read_percent),
                size_kib: point.size_kib,
                queue_depth: point.queue_depth,
                streams: point.streams,
                bandwidth_mib_s: bytes as f64 / (1u64 << 20) as f64 * 1e9 / elapsed_ns as f64,
                latency_mean_us: mean_ns / 1e3,
                latency_quantiles_us,
            };
        }
        // The device starts its next request before the job's replacement arrives.
        l.fill(now);
        l.submit(r.stream, now);
        l.fill(now);
    }
}
