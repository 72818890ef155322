//! Slurm's node counts and priorities reach the live ossd: `scripts/slurm-job-nodes.sh` reads a
//! real single-node Slurm (scripts/setup-slurm.sh) with `pfsqos jobfacts` (squeue) and gives
//! each running job's count, or its scaled priority, to the ossd through `lctl set_param
//! ost.OSS.ost_io.job_nodes=JOB=N` (run as `pfsqos lctl`). Without root or a running Slurm it
//! says it skipped, and why (`pfsqos_testkit::skip`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn pfsqos(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args(args)
        .current_dir(cwd)
        .env_remove("PFSQOS_CLUSTER")
        .env_remove("PFSQOS_STATE")
        .output()
        .unwrap()
}

/// `pfsqos down` and `scancel` on drop, so a failed assertion leaves nothing behind.
struct Held(PathBuf, Vec<String>);

impl Drop for Held {
    fn drop(&mut self) {
        for id in &self.1 {
            let _ = Command::new("scancel").arg(id).status();
        }
        let _ = pfsqos(&["down", "c.toml"], &self.0);
    }
}

#[test]
fn slurm_node_counts_reach_the_live_ossd() {
    if let Some(why) = pfsqos_testkit::slurm_unavailable() {
        pfsqos_testkit::skip("slurm_node_counts_reach_the_live_ossd", &why);
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("c.toml"),
        "[mds]\nlisten = \"127.0.0.1:0\"\n[[oss]]\nlisten = \"127.0.0.1:0\"\n\
         osts = [\"data/ost0\"]\n[mount]\nenabled = false\n",
    )
    .unwrap();
    let up = pfsqos(&["up", "c.toml"], dir);
    let mut held = Held(dir.to_path_buf(), Vec::new());
    assert!(
        up.status.success(),
        "{}\n{}",
        text(&up.stdout),
        text(&up.stderr)
    );
    for priority in [300, 100] {
        let out = Command::new("sbatch")
            .args([
                "--parsable",
                "--nodes=1",
                "--ntasks=1",
                "--job-name=pfsqos-ossd-test",
                "--output=/dev/null",
                &format!("--priority={priority}"),
                "--wrap",
                "sleep 600",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "sbatch: {}", text(&out.stderr));
        let id = text(&out.stdout)
            .trim()
            .split(';')
            .next()
            .unwrap()
            .to_string();
        assert!(id.bytes().all(|b| b.is_ascii_digit()), "{id:?}");
        held.1.push(id);
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let q = Command::new("squeue")
            .args(["--noheader", "--states=RUNNING", "--format=%i"])
            .output()
            .unwrap();
        let running = text(&q.stdout);
        if held
            .1
            .iter()
            .all(|id| running.lines().any(|l| l.trim() == id))
        {
            break;
        }
        assert!(Instant::now() < deadline, "jobs {:?} never ran", held.1);
        std::thread::sleep(Duration::from_millis(200));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-job-nodes.sh");
    let (hi, lo) = (held.1[0].clone(), held.1[1].clone());
    // By node count (1 each), then by Slurm priority (300 and 100, scaled so the highest
    // running job's is 1000): each run's numbers replace the last.
    for (basis, hi_n, lo_n) in [("nodes", 1, 1), ("priority", 1000, 333)] {
        let run = Command::new("bash")
            .arg(&script)
            .args(["--basis", basis])
            .current_dir(dir)
            .env("PFSQOS", env!("CARGO_BIN_EXE_pfsqos"))
            .env_remove("PFSQOS_CLUSTER")
            .env_remove("PFSQOS_STATE")
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}\n{}",
            text(&run.stdout),
            text(&run.stderr)
        );
        assert!(
            text(&run.stdout).contains("given to the ossd"),
            "{}",
            text(&run.stdout)
        );
        let listing = pfsqos(
            &["lctl", "get_param", "-n", "ost.OSS.ost_io.job_nodes"],
            dir,
        );
        let listing = text(&listing.stdout);
        for (id, n) in [(&hi, hi_n), (&lo, lo_n)] {
            assert!(
                listing.contains(&format!("- job_id: {id}\n  nodes: {n}\n  source: admin\n")),
                "{basis}: {listing}"
            );
        }
    }
}
