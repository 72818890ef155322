//! The AdapTBF paper's Section IV experiments, simulated end to end from the shipped scenarios,
//! asserting the qualitative result the paper reports for each (docs/reproductions/adaptbf.md
//! has the numbers side by side with the paper's).

use std::path::PathBuf;

use pfsqos_sim::{run, JobOutput, RunOutput, Scenario};

fn scenario(rel: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(rel);
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn sim(s: &Scenario, policy: &str) -> RunOutput {
    run(s, policy, s.simulation.seed, &mut |_, _| {}).unwrap_or_else(|e| panic!("{policy}: {e}"))
}

fn job<'a>(out: &'a RunOutput, id: &str) -> &'a JobOutput {
    out.jobs
        .iter()
        .find(|j| j.job_id == id)
        .expect("job exists")
}

/// Total bytes over the time from the first issue to the last completion of any job, MiB/s.
fn aggregate_mib_s(out: &RunOutput) -> f64 {
    let first = out.jobs.iter().filter_map(|j| j.first_io_ns).min().unwrap();
    let last = out.jobs.iter().filter_map(|j| j.last_io_ns).max().unwrap();
    let bytes: u64 = out.jobs.iter().map(JobOutput::bytes).sum();
    bytes as f64 / (1 << 20) as f64 / ((last - first) as f64 / 1e9)
}

/// Bytes over the bins in which the job moved data: its throughput while it does I/O, which is
/// what a bursty job cares about.
fn active_mib_s(out: &RunOutput, id: &str) -> f64 {
    let j = job(out, id);
    j.bytes() as f64 / (1 << 20) as f64 / (j.active_bins() as f64 * out.bin_ns as f64 / 1e9)
}

#[test]
fn iv_d_allocation_follows_priority() {
    let s = scenario("demo/flagship.toml");
    let nobw = sim(&s, "nobw");
    let stat = sim(&s, "static");
    let adapt = sim(&s, "adaptbf");

    // No BW: four identical jobs get the same bandwidth whatever their priority.
    let t: Vec<f64> = ["job1", "job2", "job3", "job4"]
        .iter()
        .map(|j| job(&nobw, j).bytes() as f64 / job(&nobw, j).io_time_ns() as f64)
        .collect();
    let (lo, hi) = (
        t.iter().cloned().fold(f64::MAX, f64::min),
        t.iter().cloned().fold(0.0, f64::max),
    );
    assert!(hi / lo < 1.05, "nobw throughputs {t:?}");

    // AdapTBF: higher priority finishes earlier (job4 50 %, job3 30 %, jobs 1-2 10 %).
    let io = |j: &str| job(&adapt, j).io_time_ns();
    assert!(io("job4") < io("job3") && io("job3") < io("job1") && io("job3") < io("job2"));
    // While all four run, job4 moves about 5x what job1 does (50 % vs 10 %).
    let window_bins = (io("job4") / adapt.bin_ns) as usize - 1;
    let in_window = |j: &str| {
        job(&adapt, j).bytes_per_bin()[..window_bins]
            .iter()
            .sum::<u64>() as f64
    };
    let ratio = in_window("job4") / in_window("job1");
    assert!(
        (4.5..=5.5).contains(&ratio),
        "job4/job1 in the contended window: {ratio}"
    );
    let ratio = in_window("job3") / in_window("job1");
    assert!(
        (2.7..=3.3).contains(&ratio),
        "job3/job1 in the contended window: {ratio}"
    );

    // AdapTBF keeps the aggregate of No BW; Static BW wastes the shares of finished jobs.
    let (a_nobw, a_static, a_adapt) = (
        aggregate_mib_s(&nobw),
        aggregate_mib_s(&stat),
        aggregate_mib_s(&adapt),
    );
    assert!(
        a_adapt >= 0.97 * a_nobw,
        "adaptbf {a_adapt} vs nobw {a_nobw}"
    );
    assert!(
        a_static < 0.5 * a_nobw,
        "static {a_static} vs nobw {a_nobw}"
    );
    // The low-priority jobs lose almost nothing against No BW.
    let loss = job(&adapt, "job1").io_time_ns() as f64 / job(&nobw, "job1").io_time_ns() as f64;
    assert!(loss < 1.02, "job1 I/O time grows by {loss}");
}

#[test]
fn iv_e_bursts_are_served_at_their_priority() {
    let s = scenario("adaptbf/iv-e-redistribution.toml");
    let nobw = sim(&s, "nobw");
    let stat = sim(&s, "static");
    let adapt = sim(&s, "adaptbf");
    let (mut sum_nobw, mut sum_adapt) = (0.0, 0.0);
    for j in ["job1", "job2", "job3"] {
        let (n, st, a) = (
            active_mib_s(&nobw, j),
            active_mib_s(&stat, j),
            active_mib_s(&adapt, j),
        );
        // No BW gives the bursts what FIFO leaves beside job4's stream (a large part of the
        // device: each bursty process keeps 8 writes in flight, and on the ssd-sata profile's
        // faster writes one burst can get as much under FIFO as at its priority); AdapTBF never
        // serves a burst below that, and well above Static BW's fixed share.
        assert!(
            a >= 0.99 * n,
            "{j}: adaptbf {a} vs nobw {n} MiB/s while bursting"
        );
        assert!(
            a > 1.5 * st,
            "{j}: adaptbf {a} vs static {st} MiB/s while bursting"
        );
        sum_nobw += n;
        sum_adapt += a;
    }
    // Together the bursts gain: borrowed surplus reaches them while they burst.
    assert!(
        sum_adapt > 1.1 * sum_nobw,
        "bursts together: adaptbf {sum_adapt} vs nobw {sum_nobw} MiB/s"
    );
    // The continuous low-priority job uses the idle bandwidth between bursts: close to No BW,
    // far above its static 10 %.
    let (n, st, a) = (
        active_mib_s(&nobw, "job4"),
        active_mib_s(&stat, "job4"),
        active_mib_s(&adapt, "job4"),
    );
    assert!(a > 0.9 * n, "job4: adaptbf {a} vs nobw {n}");
    assert!(a > 5.0 * st, "job4: adaptbf {a} vs static {st}");
}

/// Sum over OSTs of a job's `metric` per control step, in time order.
fn trace_series(out: &RunOutput, job_id: &str, metric: &str) -> Vec<(u64, f64)> {
    let mut by_time: std::collections::BTreeMap<u64, f64> = Default::default();
    for e in &out.control_trace {
        if e.sample.job.as_str() == job_id && e.sample.metric == metric {
            *by_time.entry(e.time_ns).or_default() += e.sample.value;
        }
    }
    by_time.into_iter().collect()
}

#[test]
fn iv_f_lenders_are_recompensated_and_throughput_holds() {
    let s = scenario("adaptbf/iv-f-recompensation.toml");
    let nobw = sim(&s, "nobw");
    let stat = sim(&s, "static");
    let adapt = sim(&s, "adaptbf");
    let (a_nobw, a_static, a_adapt) = (
        aggregate_mib_s(&nobw),
        aggregate_mib_s(&stat),
        aggregate_mib_s(&adapt),
    );
    // Fig. 8(a): AdapTBF stays close to No BW while Static BW falls far behind.
    assert!(
        a_adapt >= 0.85 * a_nobw,
        "adaptbf {a_adapt} vs nobw {a_nobw}"
    );
    assert!(
        a_static <= 0.75 * a_nobw,
        "static {a_static} vs nobw {a_nobw}"
    );
    // Fig. 8(b): the bursty jobs gain over No BW. Job 2 does not here: it borrowed from job 3
    // (same OST) between 50 s and 80 s and pays it back afterwards (see the reproduction doc).
    for j in ["job1", "job3"] {
        assert!(job(&adapt, j).bytes() > job(&nobw, j).bytes(), "{j}");
    }

    // Fig. 7: job 3 (smallest bursts, continuous only from 80 s) lends its tokens while it
    // only bursts, and is paid back once its continuous process starts.
    let record = trace_series(&adapt, "job3", "record_tokens");
    assert!(!record.is_empty(), "adaptbf reports its records");
    let at = |t_s: f64| {
        record
            .iter()
            .rev()
            .find(|(t, _)| *t as f64 <= t_s * 1e9)
            .map(|(_, r)| *r)
            .unwrap_or(0.0)
    };
    let before = at(79.9);
    assert!(
        before > 0.0,
        "job3 lent tokens before 80 s (record {before})"
    );
    let after = at(100.0);
    assert!(
        after < before,
        "job3 is re-compensated after 80 s: {before} -> {after}"
    );
}

#[test]
fn iv_h_shorter_periods_adapt_better() {
    let s = scenario("adaptbf/iv-f-recompensation.toml");
    let fast = aggregate_mib_s(&sim(&s, "adaptbf:period_ms=50"));
    let default = aggregate_mib_s(&sim(&s, "adaptbf:period_ms=100"));
    let slow = aggregate_mib_s(&sim(&s, "adaptbf:period_ms=1000"));
    // Fig. 9: a smaller allocation period gives higher throughput.
    assert!(
        fast > default && default > slow,
        "50 ms {fast}, 100 ms {default}, 1 s {slow}"
    );
}
