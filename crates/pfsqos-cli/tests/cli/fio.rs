//! Bandwidth control with real fio through the FUSE mount:
//! the real `pfsqos` binary runs an ossd, an mds and a mount; fio processes with different
//! JobIDs (taken from `SLURM_JOB_ID` as Lustre's `jobid_var` does) write through the mount, and
//! the rates are read back from the ossd's `job_stats` with the same parser the Lustre adapter
//! uses. Rates are measured over wall-clock windows, but the assertions are about shares and
//! rule rates with a tolerance, never about how long anything took.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{
    fio_writers, free_local_addr, metric, pfsqos, scrape_metrics, wait_record_rows, Cluster, Proc,
    MIB,
};

/// Longest a fio job may take to reach a byte count before the test fails (fio's own
/// `--runtime` is 60 s).
const PROGRESS_WAIT_MAX: Duration = Duration::from_secs(60);

/// Polls job_stats until every `(job, bytes)` has written at least `bytes` more than in
/// `base`; returns the counts then. Waits on progress, not on time: a slow machine waits
/// longer, a fast one less.
fn wait_written(
    cluster: &Cluster,
    base: &BTreeMap<String, u64>,
    want: &[(&str, u64)],
) -> BTreeMap<String, u64> {
    let deadline = Instant::now() + PROGRESS_WAIT_MAX;
    loop {
        let now = cluster.written_bytes();
        let done = want.iter().all(|(job, bytes)| {
            let moved = now.get(*job).copied().unwrap_or(0) - base.get(*job).copied().unwrap_or(0);
            moved >= *bytes
        });
        if done {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "fio jobs {want:?} made no such progress in {PROGRESS_WAIT_MAX:?}: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts a sequential 1 MiB writer under `SLURM_JOB_ID=job` on mount `mount` of `cluster`,
/// writing `data.JOB` at the mount's root unless `extra` names a `--filename=`; extra fio
/// options appended.
fn fio(cluster: &Cluster, mount: usize, job: &str, extra: &[&str]) -> Proc {
    let filename = match extra.iter().find(|a| a.starts_with("--filename=")) {
        Some(_) => None,
        None => Some(format!("--filename=data.{job}")),
    };
    let child = Command::new("fio")
        .current_dir(&cluster.mnts[mount])
        .env("SLURM_JOB_ID", job)
        .args(filename)
        .args([
            &format!("--name=job{job}"),
            "--rw=write",
            "--bs=1M",
            "--size=4G",
            "--ioengine=psync",
            "--time_based",
            "--runtime=60",
        ])
        .args(extra)
        .stdout(std::fs::File::create(cluster.tmp.path().join(format!("fio.{job}.out"))).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("fio is installed by scripts/setup.sh");
    Proc {
        child,
        mountpoint: None,
    }
}

fn rate_mib_per_s(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    job: &str,
    secs: f64,
) -> f64 {
    let b = before.get(job).copied().unwrap_or(0);
    let a = after.get(job).copied().unwrap_or(0);
    (a - b) as f64 / MIB / secs
}

/// Two fio jobs under static TBF rules of 8 and 16 RPCs/s (one RPC = one 1 MiB block): the
/// rules split what the jobs move 1:2 (within 10 %), and neither job moves more than its rule
/// lets through (plus one bucket of slack). Both are properties of the rules, not of how fast
/// the machine is: a loaded machine can only make a job slower than its rule, which the ratio
/// does not see as long as both stay rule-bound, and never faster.
#[test]
fn fio_jobs_follow_static_tbf_rules() {
    let cluster = Cluster::start(2, &[]);
    cluster.lctl_set("ost.OSS.ost_io.nrs_policies=tbf jobid");
    cluster.lctl_set("ost.OSS.ost_io.nrs_tbf_rule=start job101 jobid={101} rate=8");
    cluster.lctl_set("ost.OSS.ost_io.nrs_tbf_rule=start job202 jobid={202} rate=16");
    let _a = fio(&cluster, 0, "101", &[]);
    let _b = fio(&cluster, 1, "202", &[]);
    // Warm-up: fio lays out, the write-behind window fills (both jobs have moved 24 MiB); then
    // one measured window, until the slower job has moved 80 MiB more (about 10 s at its rule).
    let before = wait_written(
        &cluster,
        &BTreeMap::new(),
        &[("101", 24 << 20), ("202", 24 << 20)],
    );
    let t0 = Instant::now();
    let after = wait_written(&cluster, &before, &[("101", 80 << 20)]);
    let secs = t0.elapsed().as_secs_f64();
    let moved = |job: &str| after[job] - before.get(job).copied().unwrap_or(0);
    let ratio = moved("202") as f64 / moved("101").max(1) as f64;
    assert!(
        (ratio / 2.0 - 1.0).abs() <= 0.1,
        "job 202 (rate=16) moved {ratio:.3} times job 101's bytes (rate=8), not 2 within 10 % \
         (all: {after:?})"
    );
    // The upper bound: a rule of R RPCs/s of 1 MiB lets at most R MiB per second through,
    // plus what its bucket held at the start of the window (TBF's depth, 3 RPCs by default)
    // and the RPC in flight at each end.
    for (job, rule_rate) in [("101", 8.0), ("202", 16.0)] {
        let bound_mib = rule_rate * secs + 3.0 + 2.0;
        let got_mib = moved(job) as f64 / MIB;
        assert!(
            got_mib <= bound_mib,
            "job {job} moved {got_mib:.1} MiB in {secs:.2} s under a rule of {rule_rate} RPCs/s \
             of 1 MiB: more than the rule lets through ({bound_mib:.1} MiB)"
        );
    }
}

/// AdapTBF on a 32 MiB/s OST: a bursty high-priority job (3 nodes, 75 % share) and a continuous
/// low-priority job (1 node). While the bursty job writes it gets at least (nearly) its share;
/// while it thinks, the continuous job uses the idle bandwidth.
#[test]
fn adaptbf_gives_bursts_their_share_and_lends_idle_bandwidth() {
    let ceiling_bytes_per_s = 32 * 1024 * 1024;
    let cluster = Cluster::start(
        2,
        &[
            "--ceiling-bytes-per-s",
            &ceiling_bytes_per_s.to_string(),
            // AdapTBF hands out whole tokens per period (eq. 2): at the paper's 100 ms a 32 MiB/s
            // OST has 3.2 tokens per period and the 75 % share rounds down to 2 of 3 (62 %);
            // 250 ms gives 8 tokens, split 6 and 2 exactly.
            "--policy",
            "adaptbf:period_ms=250",
            // Tokens are RPCs of the mounts' 1 MiB brw_size (the default is Lustre's 4 MiB).
            "--brw-size-bytes",
            "1048576",
            "--job-nodes",
            "301=3",
            "--job-nodes",
            "302=1",
        ],
    );
    let _lo = fio(&cluster, 0, "302", &[]);
    // Bursts of 48 MiB, each made durable by fsync (so the burst ends when its data is on the
    // OST, not in the write-behind window), separated by 3 s of think time.
    let _hi = fio(
        &cluster,
        1,
        "301",
        &["--thinktime=3000000", "--thinktime_blocks=48", "--fsync=48"],
    );
    // Both jobs under way (each has moved 8 MiB) before the first sample.
    wait_written(
        &cluster,
        &BTreeMap::new(),
        &[("301", 8 << 20), ("302", 8 << 20)],
    );
    // Rates are sampled every 250 ms for 20 s: a measurement period, not a wait for anything.
    let sample_period = Duration::from_millis(250);
    let mut samples: Vec<(f64, f64)> = Vec::new(); // (hi, lo) MiB/s per sample
    let mut prev = cluster.written_bytes();
    let mut prev_t = Instant::now();
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        std::thread::sleep(sample_period);
        let now = cluster.written_bytes();
        let t = Instant::now();
        let secs = (t - prev_t).as_secs_f64();
        samples.push((
            rate_mib_per_s(&prev, &now, "301", secs),
            rate_mib_per_s(&prev, &now, "302", secs),
        ));
        prev = now;
        prev_t = t;
    }
    // A sample is "burst" when the bursty job moved in it and in both neighbours (so it is not
    // a partial edge sample), "idle" when it moved in none of the three.
    let (mut burst_share_hi, mut burst_lo, mut idle_lo) = (Vec::new(), Vec::new(), Vec::new());
    for w in samples.windows(3) {
        let moving = |s: &(f64, f64)| s.0 > 0.0;
        if w.iter().all(moving) {
            burst_share_hi.push(w[1].0 / (w[1].0 + w[1].1));
            burst_lo.push(w[1].1);
        } else if !w.iter().any(moving) {
            idle_lo.push(w[1].1);
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    // The bursty job's typical rate while it bursts: the median, because AdapTBF needs a period
    // or two to take back tokens lent to the continuous job, and a burst whose re-balancing is
    // slow pulls the mean down (once in ~20 runs on 2026-11-25: mean 88 % of the share, with
    // most samples at 99 %).
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let capacity_mib_per_s = ceiling_bytes_per_s as f64 / MIB;
    assert!(
        burst_share_hi.len() >= 4 && idle_lo.len() >= 4,
        "too few burst ({}) or idle ({}) samples: {samples:?}",
        burst_share_hi.len(),
        idle_lo.len()
    );
    // Shares of what the OST served, not rates: a loaded machine that cannot reach the
    // ceiling slows both jobs, and AdapTBF still splits what there is by priority.
    let hi = median(&burst_share_hi);
    assert!(
        hi >= 0.9 * 0.75,
        "bursty job got a median {:.1} % of what was served during bursts, below 90 % of its \
         75 % share: {samples:?}",
        100.0 * hi
    );
    // Lending: while the bursty job thinks, the continuous job gets the idle tokens: it moves
    // well over what it moves during bursts (its 25 % share then; about 4 times as much idle
    // on an unloaded machine), whatever rate the machine reaches.
    let lo_idle = mean(&idle_lo);
    let lo_burst = mean(&burst_lo);
    assert!(
        lo_idle >= 2.0 * lo_burst,
        "continuous job got {lo_idle:.1} MiB/s while the bursty job was idle, not twice its \
         {lo_burst:.1} MiB/s during bursts (ceiling {capacity_mib_per_s} MiB/s): {samples:?}"
    );
}

/// `GET /metrics` of the ossd at `addr`: the OST's cumulative device time in queue, seconds.
fn device_time_in_queue_s(addr: &str) -> f64 {
    let text = scrape_metrics(addr);
    metric(&text, "pfsqos_ost_device_time_in_queue_seconds_total{")
        .unwrap_or_else(|| panic!("no device time in queue in the metrics: {text}"))
}

/// Mean device queue of the ossd over a window after warm-up: Δtime_in_queue / Δt from its
/// metrics, while 8 fio writers (one node) write through the mount.
fn mean_device_queue(ossd_args: &[&str]) -> f64 {
    let metrics = free_local_addr();
    let mut args = vec![
        "--ceiling-bytes-per-s",
        "16777216",
        "--threads",
        "16",
        "--metrics-listen",
        &metrics,
    ];
    args.extend_from_slice(ossd_args);
    let cluster = Cluster::start(1, &args);
    let _w = fio_writers(&cluster.mnts[0], "501", 8, 60);
    // Warm-up (the controller leaves its starting limit, the queue settles: 64 MiB, about 4 s
    // at the device's 16 MiB/s, 13 periods), then one window of at least 48 MiB written.
    let start = wait_written(&cluster, &BTreeMap::new(), &[("501", 64 << 20)]);
    let (t0, q0) = (Instant::now(), device_time_in_queue_s(&metrics));
    wait_written(&cluster, &start, &[("501", 48 << 20)]);
    let (t1, q1) = (Instant::now(), device_time_in_queue_s(&metrics));
    (q1 - q0) / (t1 - t0).as_secs_f64()
}

/// PI control live: the ossd's `pi` controller limits the mount's outgoing
/// bandwidth so that the OST's device queue (RPCs in the ossd's I/O threads) follows a target
/// of 2 requests, where the same fio load without control fills most of the client's RPC
/// window (8). The gains come from eq. 3-4 for the plant of one client on a 16 MiB/s device: an
/// integrator, `a = 1`, `b = Ts / 1 MiB = 0.3` requests per MiB/s of limit. Wide bounds: the
/// assertion is that the loop holds the queue near the target, well below saturation, not how
/// fast it gets there.
#[test]
fn pi_holds_the_device_queue_near_its_target() {
    let uncontrolled = mean_device_queue(&[]);
    let controlled = mean_device_queue(&[
        "--policy",
        "pi:a=1:b=0.3:ks_ms=3000:mp=0.02:target=2:bw_min=1M:bw_max=64M",
        "--brw-size-bytes",
        "1048576",
    ]);
    println!(
        "mean device queue: {uncontrolled:.2} without control, {controlled:.2} under pi (target 2)"
    );
    assert!(
        uncontrolled >= 6.0,
        "without control 8 writers should fill the client's window of 8: {uncontrolled:.2}"
    );
    assert!(
        (0.5..=5.0).contains(&controlled) && controlled <= uncontrolled - 3.0,
        "pi should hold the device queue near 2, well below saturation: {controlled:.2} \
         (uncontrolled {uncontrolled:.2})"
    );
}

/// A measurement, not a check (run with `--ignored`; its numbers are in
/// docs/reproductions/pi-control.md): the loop of [`pi_holds_the_device_queue_near_its_target`]
/// with the paper's settling time `Ks = 1.4 s` (§4.4) beside the `3 s` that test uses, on the
/// same plant model, with the `time_in_queue` sensor (a mean over the period that advances at
/// completions, so one period late) and, at 1.4 s, with the instantaneous one (`instant`: the
/// RPCs at the OST's I/O when the period ends). Prints, per run, the mean device queue over
/// the metrics window and, from the control record, the mean, standard deviation and range
/// of the queue the controller measured per period after 15 periods of warm-up.
#[test]
#[ignore = "a measurement for pi-control.md, not a check"]
fn pi_settling_time_of_the_paper_live() {
    for (ks_ms, sensor) in [
        (3000, "time_in_queue"),
        (1400, "time_in_queue"),
        (1400, "instant"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("pi.csv");
        let spec = format!(
            "pi:a=1:b=0.3:ks_ms={ks_ms}:mp=0.02:target=2:bw_min=1M:bw_max=64M:sensor={sensor}"
        );
        let mean = mean_device_queue(&[
            "--policy",
            &spec,
            "--brw-size-bytes",
            "1048576",
            "--control-record",
            record.to_str().unwrap(),
        ]);
        let rows = pfsqos_core::control::pi::record::parse_record(
            &std::fs::read_to_string(&record).unwrap(),
        )
        .unwrap();
        let q: Vec<f64> = rows.iter().skip(15).map(|r| r.period.queue_rpcs).collect();
        assert!(!q.is_empty(), "no periods recorded after warm-up");
        let n = q.len() as f64;
        let m = q.iter().sum::<f64>() / n;
        let sd = (q.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n).sqrt();
        let (lo, hi) = q
            .iter()
            .fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let limits: Vec<f64> = rows
            .iter()
            .skip(15)
            .map(|r| r.period.limit_bytes_per_s as f64 / MIB)
            .collect();
        let lm = limits.iter().sum::<f64>() / n;
        let lsd = (limits.iter().map(|x| (x - lm) * (x - lm)).sum::<f64>() / n).sqrt();
        println!(
            "Ks = {ks_ms} ms, sensor {sensor}, target 2: mean device queue {mean:.2} (metrics \
             window, error {:+.0} %); per period over {} periods: mean {m:.2}, sd {sd:.2}, \
             range {lo:.2}..{hi:.2}; limit mean {lm:.2} MiB/s, sd {lsd:.2}",
            (mean / 2.0 - 1.0) * 100.0,
            q.len()
        );
    }
}

/// A measurement, not a check (run with `--ignored`; its numbers are in
/// docs/reproductions/pi-control.md): the settling time and overshoot of a step in the target,
/// 2 to 4 requests at 15 s, against the specification (§4.4: `Ks`, `Mp = 0.02`), for the
/// three loops of [`pi_settling_time_of_the_paper_live`] (same plant model, one client, 8 fio
/// writers, a 16 MiB/s OST) and the instantaneous one with the proportional term on the
/// measurement (`p_on=measurement`, which removes the PI's zero and so its overshoot). Each period's measured queue is smoothed by a rolling mean of 5
/// periods (1.5 s), as the paper's Fig. 4 shows it, before the metrics: a single period's
/// queue of one client is a handful of requests (integers, with `instant`), which no 5 % band
/// holds. Prints per loop: settling time within 5 % and 25 % of the new target, overshoot, the
/// mean error over the last 30 % of the step, and the limit's standard deviation over it.
#[test]
#[ignore = "a measurement for pi-control.md, not a check"]
fn pi_step_response_live() {
    const STEP_S: f64 = 15.0;
    const END_S: f64 = 30.0;
    for (ks_ms, sensor, p_on) in [
        (3000, "time_in_queue", "error"),
        (1400, "time_in_queue", "error"),
        (1400, "instant", "error"),
        (1400, "instant", "measurement"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("pi.csv");
        let spec = format!(
            "pi:a=1:b=0.3:ks_ms={ks_ms}:mp=0.02:target=2@0/4@{STEP_S}:bw_min=1M:bw_max=64M:\
             sensor={sensor}:p_on={p_on}"
        );
        let cluster = Cluster::start(
            1,
            &[
                "--ceiling-bytes-per-s",
                "16777216",
                "--threads",
                "16",
                "--policy",
                &spec,
                "--brw-size-bytes",
                "1048576",
                "--control-record",
                record.to_str().unwrap(),
            ],
        );
        let _w = fio_writers(&cluster.mnts[0], "501", 8, 60);
        let rows_needed = (END_S * 1000.0 / 300.0) as usize;
        let text = wait_record_rows(&record, rows_needed, Duration::from_secs(120));
        let rows = pfsqos_core::control::pi::record::parse_record(&text).unwrap();
        let raw: Vec<(f64, f64, f64)> = rows
            .iter()
            .map(|r| {
                (
                    r.time_s,
                    r.period.queue_rpcs,
                    r.period.limit_bytes_per_s as f64 / MIB,
                )
            })
            .collect();
        // Rolling mean of the last 5 periods, none of them before the step (so no window
        // mixes the two targets).
        let first = raw
            .iter()
            .position(|x| x.0 > STEP_S)
            .expect("periods after the step");
        let segment: Vec<(f64, f64)> = raw
            .iter()
            .enumerate()
            .filter(|(_, &(t, _, _))| t > STEP_S && t <= END_S)
            .map(|(i, &(t, _, _))| {
                let from = i.saturating_sub(4).max(first);
                let w = &raw[from..=i];
                (t, w.iter().map(|x| x.1).sum::<f64>() / w.len() as f64)
            })
            .collect();
        assert!(
            segment.len() >= 20,
            "too few periods after the step: {raw:?}"
        );
        use pfsqos_core::control::pi::quality::step_quality;
        let q5 = step_quality(&segment, STEP_S, 2.0, 4.0, 0.05, 0.3).unwrap();
        let q25 = step_quality(&segment, STEP_S, 2.0, 4.0, 0.25, 0.3).unwrap();
        let tail: Vec<f64> = raw
            .iter()
            .filter(|x| x.0 > END_S - 0.3 * (END_S - STEP_S) && x.0 <= END_S)
            .map(|x| x.2)
            .collect();
        let lm = tail.iter().sum::<f64>() / tail.len() as f64;
        let lsd =
            (tail.iter().map(|x| (x - lm) * (x - lm)).sum::<f64>() / tail.len() as f64).sqrt();
        let show = |t: Option<f64>| t.map_or("not settled".to_string(), |t| format!("{t:.1} s"));
        println!(
            "Ks = {ks_ms} ms, sensor {sensor}, p_on {p_on}, step 2 -> 4 at {STEP_S} s: settling (5-period \
             mean) {} within 5 %, {} within 25 %; overshoot {:.0} % (spec Mp 2 %); \
             steady-state error {:+.0} %; limit over the last 30 %: mean {lm:.1} MiB/s, sd {lsd:.1}",
            show(q5.settling_time_s),
            show(q25.settling_time_s),
            q5.overshoot * 100.0,
            q5.steady_state_error * 100.0,
        );
    }
}

/// vPFS live: two ossds running DSFQ, each the other's
/// synchronization peer, and two fio jobs on their own mounts with weights 4:1. The weight-4
/// job's file is striped over both OSTs, the weight-1 job's over the second only (the paper's
/// asymmetric layout, Fig. 5): each server alone would split its own bandwidth 4:1 on the
/// second server and give all of the first to the big job, about 9:1 overall (measured 8.26
/// with the peers left out); the exchange of service reports makes the *total* 4:1 (measured
/// 4.08). The share is read from both ossds' job_stats, over a window in which both jobs stayed
/// backlogged at the shared OST (the theorem's hypothesis): a suite run on a heavily loaded
/// machine once measured 3.62 over a window nobody checked.
#[test]
fn dsfq_keeps_a_4_to_1_total_share_of_two_fio_jobs_over_two_ossds() {
    let ceiling_bytes_per_s: u64 = 16 << 20;
    let cluster = Cluster::start_osses(
        2,
        2,
        &["--ceiling-bytes-per-s", &ceiling_bytes_per_s.to_string()],
    );
    for param in [
        "ost.OSS.ost_io.nrs_policies=dsfq jobid",
        // A report on every request (the original DSFQ), and requests wait in the scheduler
        // rather than all at the device.
        "ost.OSS.ost_io.nrs_dsfq_threshold=0",
        "ost.OSS.ost_io.nrs_dsfq_depth=2",
        "ost.OSS.ost_io.nrs_dsfq_weight=start big jobid={501} weight=4",
        "ost.OSS.ost_io.nrs_dsfq_weight=start small jobid={502} weight=1",
    ] {
        cluster.lctl_set(param);
    }
    // The small job writes in a directory whose files go to OST 1 only (a file's own layout
    // would not survive: fio re-creates a file smaller than its size).
    let small_dir = cluster.mnts[1].join("small");
    std::fs::create_dir(&small_dir).unwrap();
    let out = pfsqos()
        .args(["setstripe", "-c", "1", "-i", "1"])
        .arg(&small_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "setstripe: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Longer than fio's default here, so that windows after a refused one still find the
    // writers running.
    let _big = fio(&cluster, 0, "501", &["--runtime=180"]);
    let _small = fio(
        &cluster,
        1,
        "502",
        &["--filename=small/data.502", "--runtime=180"],
    );
    // Warm-up: both jobs under way and the write-behind windows full.
    wait_written(
        &cluster,
        &BTreeMap::new(),
        &[("501", 24 << 20), ("502", 8 << 20)],
    );
    // The share DSFQ promises (Theorem 1) is for flows that stay backlogged. On a loaded
    // machine a CPU-starved writer (fio or its mount) can leave the shared OST without its
    // requests for a while, and a work-conserving scheduler then rightly serves the other job:
    // such a window says nothing about DSFQ. So while a window runs, the second ossd's flow
    // listing is sampled, and the window counts only if both jobs had requests queued there
    // in every sample; otherwise the next window is measured, at most `WINDOWS_MAX`. (OST 0
    // is never busy: the big job's sequential stripes put as much on it as on OST 1, which
    // DSFQ holds back.) A gap shorter than the sampling interval goes unseen; at 16 MiB/s
    // it costs the small job under 2 % of its 64 MiB.
    const WINDOWS_MAX: usize = 4;
    let sum = |per_oss: &[BTreeMap<String, u64>], job: &str| -> u64 {
        per_oss.iter().filter_map(|m| m.get(job)).sum()
    };
    for window in 1..=WINDOWS_MAX {
        let before = cluster.written_bytes_per_oss();
        let deadline = Instant::now() + PROGRESS_WAIT_MAX;
        let (mut samples, mut unqueued_samples) = (0u32, 0u32);
        // The window: 320 MiB in all (about 10 s at the shared OST's ceiling), so one 1 MiB
        // RPC is under 2 % of the small job's 64 MiB.
        let after = loop {
            let now = cluster.written_bytes_per_oss();
            if sum(&now, "501") - sum(&before, "501") >= 256 << 20 {
                break now;
            }
            assert!(
                Instant::now() < deadline,
                "the big job made no 256 MiB of progress in {PROGRESS_WAIT_MAX:?}: {now:?}"
            );
            let queued = dsfq_queued(&cluster, 1);
            samples += 1;
            if ["501", "502"]
                .iter()
                .any(|j| queued.get(*j).copied().unwrap_or(0) == 0)
            {
                unqueued_samples += 1;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let oss_moved: Vec<u64> = (0..2)
            .map(|k| after[k].values().sum::<u64>() - before[k].values().sum::<u64>())
            .collect();
        let moved = |job: &str| sum(&after, job) - sum(&before, job);
        let ratio = moved("501") as f64 / moved("502").max(1) as f64;
        println!(
            "window {window}: per OST {oss_moved:?} bytes, big:small = {ratio:.3}, a job with \
             nothing queued at the shared OST in {unqueued_samples} of {samples} samples"
        );
        if unqueued_samples > 0 {
            continue;
        }
        assert!(
            (ratio / 4.0 - 1.0).abs() <= 0.05,
            "big:small = {ratio:.3} over both ossds, not 4 within 5 % (moved {} and {} bytes, \
             both jobs backlogged at the shared OST in all {samples} samples)",
            moved("501"),
            moved("502")
        );
        return;
    }
    panic!(
        "in {WINDOWS_MAX} windows the writers never kept both jobs backlogged at the shared \
         OST: the share cannot be measured (see the windows above)"
    );
}

/// Requests queued per job in the DSFQ scheduler of ossd `oss`, summed over its CPTs, from
/// its `nrs_dsfq_flows` listing (`jobid=JOB weight=.. mode=.. servers=.. queued=N ...`).
fn dsfq_queued(cluster: &Cluster, oss: usize) -> BTreeMap<String, u64> {
    let out = pfsqos()
        .args(["lctl", "--server", &cluster.oss_addrs[oss], "--key-file"])
        .arg(&cluster.server_key)
        .args(["get_param", "-n", "ost.OSS.ost_io.nrs_dsfq_flows"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut queued = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let mut words = line.split_whitespace();
        let Some(job) = words.next().and_then(|w| w.strip_prefix("jobid=")) else {
            continue;
        };
        let n: u64 = words
            .find_map(|w| w.strip_prefix("queued="))
            .expect("a flow line names its queued requests")
            .parse()
            .unwrap();
        *queued.entry(job.to_string()).or_insert(0) += n;
    }
    queued
}
