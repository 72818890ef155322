//! Generated application sets in the fluid engine: the batch scheduler's placement (start after
//! submission, never more nodes than the pool), every run completing its phases, repeated
//! runs sharing an application identity, determinism, the RPC engine refusing a set it would
//! run differently, and both engines running the same set where no run queues.

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
fn appset_runs_are_deterministic_and_rpc_refuses_a_set_with_shared_identities() {
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

/// A set whose runs all fit on the node pool at once, one identity per run: the RPC-level
/// engine expands it into the same applications (ids, nodes, process counts, bytes, start at
/// submission) as the fluid engine's batch scheduler starts.
#[test]
fn both_engines_run_the_same_application_set_where_no_run_queues() {
    let text = r#"
name = "appset-both"
[simulation]
duration_s = 600.0
bin_ms = 1000
[cluster]
clients = 16
brw_size = "1M"
[[oss]]
name = "oss0"
osts = 4
device = "ssd-sata"
[[job]]
id = "stream"
nodes = 1
processes = [{ rw = "write", bs = "1M", size = "64M", numjobs = 2 }]
[appset]
apps = 3
identity = "run"
arrival_scale_s = 2.0
phase_size = ["8M", "16M"]
compute_s = [0.5, 1.0]
nodes = [1, 4]
phases = [2, 3]
osts_per_app = [1, 4]
processes_per_node = 2
"#;
    let rpc_scenario = Scenario::from_toml_str(text, "<rpc>").expect("the RPC engine takes it");
    let mut fluid_scenario = rpc_scenario.clone();
    fluid_scenario.simulation.engine = pfsqos_sim::scenario::EngineKind::Fluid;
    let rpc_out = run(&rpc_scenario, "nobw", 1, &mut |_, _| {}).expect("rpc runs the set");
    let fluid_out = run(&fluid_scenario, "nobw", 1, &mut |_, _| {}).expect("fluid runs it");
    let apps = |o: &RunOutput| -> Vec<(String, u32, u64, u64)> {
        o.jobs
            .iter()
            .map(|j| {
                (
                    j.job_id.clone(),
                    j.node_count,
                    j.bytes_written,
                    j.bytes_read,
                )
            })
            .collect()
    };
    assert_eq!(rpc_out.jobs.len(), 4, "the explicit job and three runs");
    assert!(rpc_out.jobs.iter().all(|j| j.finished));
    assert!(fluid_out.jobs.iter().all(|j| j.finished));
    assert_eq!(apps(&rpc_out), apps(&fluid_out));
    // The expansion is the generator's set: same ids and nodes as `generate` draws.
    let generated = rpc_scenario
        .appset
        .as_ref()
        .unwrap()
        .generate(4, rpc_scenario.simulation.seed);
    let expanded = rpc_scenario.rpc_jobs().unwrap();
    assert_eq!(expanded.len(), 1 + generated.len());
    for (g, j) in generated.iter().zip(&expanded[1..]) {
        assert_eq!((&g.job.id, g.job.nodes), (&j.id, j.nodes));
        let start_s = g.submit_ns as f64 / 1e9;
        assert!(j.groups.iter().all(|p| p.shape.start_s == start_s));
    }
    // Every run starts (its first RPC) no earlier than its submission in the RPC engine too.
    for (g, j) in generated.iter().zip(&rpc_out.jobs[1..]) {
        assert!(j.first_io_ns.unwrap() >= g.submit_ns, "{}", j.job_id);
    }

    // Above the bounds the RPC engine refuses with the reason: runs that would queue.
    // Three runs of 2 nodes on a 5-node pool.
    let queued = text
        .replace("nodes = [1, 4]", "nodes = [2, 2]")
        .replace("clients = 16", "clients = 5");
    let e = Scenario::from_toml_str(&queued, "<queued>").unwrap_err();
    assert!(e.to_string().contains("batch queue"), "{e}");
    let many = text
        .replace("apps = 3", "apps = 65")
        .replace("clients = 16", "clients = 1000");
    let e = Scenario::from_toml_str(&many, "<many>").unwrap_err();
    assert!(e.to_string().contains("at most 64"), "{e}");
}
