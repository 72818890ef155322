//! The shipped suite (`scenarios/bakeoff/`): every design of `suite.toml` runs on every one of
//! its workloads, none refused (no design silently skipped). Each combination runs
//! the first simulated seconds only (the whole suite is `pfsqos bakeoff`'s job, and measured in
//! docs/benchmarks.md): enough for every controller's set-up, its first decisions and every
//! placement, which is where a combination would be refused. shared-day's `[appset]` is among
//! them, run by the RPC-level engine for every design.

use std::path::Path;

use pfsqos_bakeoff::runner::scenario_for_design;
use pfsqos_bakeoff::Suite;

#[test]
fn every_design_runs_on_every_shipped_workload() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/bakeoff");
    let suite = Suite::load(&dir).unwrap_or_else(|e| panic!("{}", e.message));
    assert!(suite.workloads.len() >= 9 && suite.designs.len() >= 12);
    // shared-day's phased applications are an [appset], in the RPC-level engine
    // so that every design, not only the fluid engine's, runs it.
    let day = suite
        .workloads
        .iter()
        .find(|w| w.file == "shared-day.toml")
        .expect("shared-day is in the suite");
    assert!(day.scenario.appset.is_some());
    let day_jobs = day
        .scenario
        .rpc_jobs()
        .expect("the RPC engine runs the set");
    assert!(
        day_jobs.len() > day.scenario.jobs.len(),
        "the set adds jobs"
    );
    for w in &suite.workloads {
        let mut workload_bytes = 0u64;
        for d in &suite.designs {
            let mut s = scenario_for_design(&w.scenario, d)
                .unwrap_or_else(|e| panic!("{} under {}: {e}", w.file, d.name));
            s.simulation.duration_s = s.simulation.duration_s.min(3.0);
            s.simulation.start_jitter_s = s.simulation.start_jitter_s.min(1.0);
            let out = pfsqos_sim::run(&s, &d.policy, 1, &mut |_, _| {})
                .unwrap_or_else(|e| panic!("{} under {}: {e}", w.file, d.name));
            workload_bytes += out
                .jobs
                .iter()
                .map(|j| j.bytes_read + j.bytes_written)
                .sum::<u64>();
        }
        assert!(workload_bytes > 0, "{}: no design moved a byte", w.file);
    }
}
