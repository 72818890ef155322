//! Job node counts reach the ossd's controller from the writing processes' environment
//! (`SLURM_JOB_NUM_NODES`, read by the mount like the JobID) and from the administrator
//! (`lctl set_param ost.OSS.ost_io.job_nodes`), without a restart. Properties only: which
//! counts the ossd lists, and the order of the AdapTBF rule rates they lead to; no
//! wall-clock rates. Every wait polls with a bounded deadline.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{pfsqos, Cluster, WAIT_MAX};

/// A writer that runs until killed (dropped): `dd` of a large file at the OST's paced rate.
struct Writer(Child);

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn writer(cluster: &Cluster, mount: usize, file: &str, job: &str, nodes: &str) -> Writer {
    let child = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", cluster.mnts[mount].join(file).display()))
        .args(["bs=1M", "count=100000"])
        .env("SLURM_JOB_ID", job)
        .env("SLURM_JOB_NUM_NODES", nodes)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Writer(child)
}

fn get_param(cluster: &Cluster, param: &str) -> String {
    let out = pfsqos()
        .args(["lctl", "--server", &cluster.oss_addr, "--key-file"])
        .arg(&cluster.server_key)
        .args(["get_param", "-n", param])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "get_param {param}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The rate of the regular-head rule whose condition is `jobid={job}`, if one runs.
fn rule_rate(listing: &str, job: &str) -> Option<u64> {
    let cond = format!(" jobid={{{job}}} ");
    let regular = listing
        .split("high_priority_requests:")
        .next()
        .unwrap_or_default();
    regular.lines().find_map(|l| {
        let (_, rest) = l.split_once(&cond)?;
        rest.split(',').next()?.trim().parse().ok()
    })
}

/// Polls `check` on the ossd's `job_nodes` and `nrs_tbf_rule` until it holds.
fn wait_for(cluster: &Cluster, what: &str, check: impl Fn(&str, &str) -> bool) {
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        let nodes = get_param(cluster, "ost.OSS.ost_io.job_nodes");
        let rules = get_param(cluster, "ost.OSS.ost_io.nrs_tbf_rule");
        if check(&nodes, &rules) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not reached; job_nodes:\n{nodes}\nrules:\n{rules}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn entry(job: &str, nodes: u32, source: &str) -> String {
    format!("- job_id: {job}\n  nodes: {nodes}\n  source: {source}\n")
}

#[test]
fn node_counts_from_the_environment_and_lctl_reach_adaptbf() {
    // 1 MiB RPCs paced to 20 MiB/s: 20 RPCs/s to share, far below what dd asks for.
    let cluster = Cluster::start(
        2,
        &[
            "--policy",
            "adaptbf",
            "--ceiling-bytes-per-s",
            "20971520",
            "--brw-size-bytes",
            "1048576",
        ],
    );
    // Two jobs on two client nodes, one of 1 node and one of 3.
    let _a = writer(&cluster, 0, "a", "jobA", "1");
    let _b = writer(&cluster, 1, "b", "jobB", "3");
    // Hostile node counts on the first mount: the JobID still tags the I/O, the count is
    // ignored (and logged by the mount).
    let _h1 = writer(&cluster, 0, "h1", "jobH1", "abc");
    let _h2 = writer(&cluster, 0, "h2", "jobH2", "-1");
    let _h3 = writer(&cluster, 0, "h3", "jobH3", "99999999999");
    let _h4 = writer(&cluster, 0, "h4", "jobH4", &"9".repeat(100_000));

    wait_for(
        &cluster,
        "both counts learned, B's rule above A's",
        |nodes, rules| {
            nodes.contains(&entry("jobA", 1, "mount"))
                && nodes.contains(&entry("jobB", 3, "mount"))
                && matches!(
                    (rule_rate(rules, "jobA"), rule_rate(rules, "jobB")),
                    (Some(a), Some(b)) if b > a
                )
        },
    );
    // The hostile jobs' I/O goes through, tagged with their JobIDs.
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        let written = cluster.written_bytes();
        let hostile = ["jobH1", "jobH2", "jobH3", "jobH4"];
        if hostile
            .iter()
            .all(|j| written.get(*j).is_some_and(|&b| b > 0))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "hostile jobs wrote nothing: {written:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let nodes = get_param(&cluster, "ost.OSS.ost_io.job_nodes");
    assert!(
        !nodes.contains("jobH"),
        "hostile counts must not reach the ossd:\n{nodes}"
    );
    let mount_log = std::fs::read_to_string(cluster.tmp.path().join("mount0.log")).unwrap();
    assert!(
        mount_log.contains("node count in the environment ignored"),
        "{mount_log}"
    );

    // The administrator corrects A to 9 nodes at run time: A's rule overtakes B's.
    cluster.lctl_set("ost.OSS.ost_io.job_nodes=jobA=9");
    wait_for(&cluster, "A corrected to 9 nodes", |nodes, rules| {
        nodes.contains(&entry("jobA", 9, "admin"))
            && matches!(
                (rule_rate(rules, "jobA"), rule_rate(rules, "jobB")),
                (Some(a), Some(b)) if a > b
            )
    });
    // Cleared, A counts what its mount reports again.
    cluster.lctl_set("ost.OSS.ost_io.job_nodes=jobA=clear");
    wait_for(&cluster, "A back to its mount's count", |nodes, _| {
        nodes.contains(&entry("jobA", 1, "mount"))
    });

    // Refused writes: bad counts are EINVAL, and change nothing.
    for bad in ["jobA=0", "jobA=abc", "jobA=99999999999", "jobA"] {
        let out = pfsqos()
            .args(["lctl", "--server", &cluster.oss_addr, "--key-file"])
            .arg(&cluster.server_key)
            .args(["set_param", &format!("ost.OSS.ost_io.job_nodes={bad}")])
            .output()
            .unwrap();
        // lctl's exit status is the errno (EINVAL = 22) and its message the errno's text.
        assert_eq!(out.status.code(), Some(22), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Invalid argument"),
            "{bad}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let nodes = get_param(&cluster, "ost.OSS.ost_io.job_nodes");
    assert!(nodes.contains(&entry("jobA", 1, "mount")), "{nodes}");
}
