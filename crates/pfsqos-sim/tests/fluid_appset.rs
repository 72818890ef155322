//! Generated application sets in the fluid engine: the batch scheduler's placement (start after
//! submission, never more nodes than the pool), every run completing its phases, repeated
//! runs sharing an application identity, determinism, and the RPC engine refusing the set.

use pfsqos_sim::{run, run_rpc, RunOutput, Scenario};

fn scenario(apps: u32, pool: u32) -> Scenario {
    let mut text = format!(
        r#"
name = "appset"
[simulation]
engine = "fluid"
duration_s = 2592000.0
bin_ms = 3600000
[cluster]
clients = {pool}
brw_size = "1M"
[[device]]
name = "hdd100"
read = [{{ size = "4k", bandwidth_mib_s = 100.0 }}]
write = [{{ size = "4k", bandwidth_mib_s = 100.0 }}]
[appset]
apps = {apps}
templates = 6
arrival_shape = 2.0
arrival_scale_s = 300.0
nodes = [1, 16]
osts_per_app = [1, 4]
phases = [2, 5]
compute_s = [60.0, 600.0]
phase_size = ["64M", "1G"]
"#
    );
    for k in 0..8 {
        text.push_str(&format!(
            "[[oss]]\nname = \"oss{k}\"\nosts = 1\ndevice = \"hdd100\"\n"
        ));
    }
    Scenario::from_toml_str(&text, "<appset>").expect("scenario parses")
}

fn quiet(s: &Scenario, policy: &str) -> RunOutput {
    run(s, policy, 1, &mut |_, _| {}).expect("fluid run")
}

#[test]
fn batch_placement_respects_the_pool_and_every_run_finishes() {
    let s = scenario(40, 32);
    let generated = s.appset.as_ref().unwrap().generate(8, s.simulation.seed);
    for policy in ["nobw", "pofs", "gift"] {
        let out = quiet(&s, policy);
        assert_eq!(out.jobs.len(), 40);
        let mut edges: Vec<(u64, i64)> = Vec::new();
        for (job, g) in out.jobs.iter().zip(&generated) {
            assert!(job.finished, "{policy}: {} unfinished", job.job_id);
            assert_eq!(job.job_id, g.job.id);
            let p = job.phases.as_ref().expect("generated runs have phases");
            let phases = g.job.groups[0].shape.phases.unwrap();
            assert_eq!(p.phases_done(), phases);
            // Starts no earlier than its submission; the first phase follows the compute.
            assert!(p.start_ns >= g.submit_ns, "{policy}: {}", job.job_id);
            let compute_ns = (g.job.groups[0].shape.compute_s.unwrap() * 1e9).round() as u64;
            assert_eq!(p.done[0].start_ns, p.start_ns + compute_ns);
            // Every byte of every phase was written.
            let per_phase: u64 = g
                .job
                .groups
                .iter()
                .map(|gr| gr.shape.phase_size.unwrap().bytes() * u64::from(gr.numjobs))
                .sum();
            assert!(p.done.iter().all(|r| r.bytes == per_phase));
            assert_eq!(job.bytes_written, per_phase * u64::from(phases));
            let end = p.done.last().unwrap().end_ns;
            edges.push((p.start_ns, i64::from(job.node_count)));
            edges.push((end, -i64::from(job.node_count)));
        }
        edges.sort();
        let mut used = 0;
        for (_, d) in edges {
            used += d;
            assert!(used <= 32, "{policy}: {used} nodes in use on a pool of 32");
        }
        let tp = out.system_throughput_jobs_per_hour().unwrap();
        assert!(tp > 0.0);
        // GIFT keeps a ledger; the others have none.
        assert_eq!(out.regret.is_some(), policy == "gift");
    }
}

#[test]
fn a_small_pool_queues_jobs() {
    // With a pool of 16 nodes, big runs wait: some start well after their submission.
    let s = scenario(40, 16);
    let generated = s.appset.as_ref().unwrap().generate(8, s.simulation.seed);
    let out = quiet(&s, "bsip");
    let waited = out
        .jobs
        .iter()
        .zip(&generated)
        .filter(|(j, g)| j.phases.as_ref().unwrap().start_ns > g.submit_ns)
        .count();
    assert!(waited > 0);
    assert!(out.jobs.iter().all(|j| j.finished));
}

#[test]
fn appset_runs_are_deterministic_and_rpc_refuses_them() {
    let s = scenario(30, 32);
    assert_eq!(quiet(&s, "gift"), quiet(&s, "gift"));
    assert_eq!(quiet(&s, "rnd"), quiet(&s, "rnd"));
    let e = run_rpc(&s, "nobw", 1, &mut |_, _| {}).unwrap_err();
    assert!(
        matches!(&e, pfsqos_sim::RunError::Engine(m) if m.contains("fluid")),
        "{e}"
    );
}

#[test]
fn policies_not_expressible_as_caps_are_refused() {
    let s = scenario(8, 32);
    let e = run(&s, "adaptbf", 1, &mut |_, _| {}).unwrap_err();
    assert!(
        matches!(&e, pfsqos_sim::RunError::Policy(m) if m.contains("not a bandwidth allocator")),
        "{e}"
    );
}

#[test]
fn lockstep_changes_timing_not_work() {
    let barrier = scenario(40, 32);
    let mut lockstep = barrier.clone();
    lockstep.appset.as_mut().unwrap().lockstep = true;
    // Under FIFO a run's processes share each OST with everyone else's processes, so holding
    // them together changes phase ends. (Under per-application caps it often does not: the
    // held-back part only leaves its own cap unused.)
    for policy in ["nobw"] {
        let (a, b) = (quiet(&barrier, policy), quiet(&lockstep, policy));
        let mut differ = 0;
        for (x, y) in a.jobs.iter().zip(&b.jobs) {
            assert!(x.finished && y.finished);
            assert_eq!(x.bytes_written, y.bytes_written);
            let (px, py) = (x.phases.as_ref().unwrap(), y.phases.as_ref().unwrap());
            assert_eq!(px.phases_done(), py.phases_done());
            differ += usize::from(px.io_time_ns() != py.io_time_ns());
        }
        assert!(differ > 0, "{policy}: lockstep changed nothing");
    }
}

#[test]
fn with_lockstep_and_one_identity_per_run_pofs_and_bsip_coincide() {
    // Held to its slowest OST's rate, a run cannot use POFS's larger caps on its other OSTs,
    // and nobody else may (they are capped too): POFS and BSIP then give every run the same
    // rate at every instant. With template identity, concurrent runs of one template are one
    // application and BSIP holds both to the worst OST of either, so they differ.
    let mut s = scenario(40, 32);
    let a = s.appset.as_mut().unwrap();
    a.lockstep = true;
    a.identity = pfsqos_sim::scenario::appset::Identity::Run;
    let (pofs, bsip) = (quiet(&s, "pofs"), quiet(&s, "bsip"));
    for (x, y) in pofs.jobs.iter().zip(&bsip.jobs) {
        assert_eq!(x.phases, y.phases, "{}", x.job_id);
    }
}
