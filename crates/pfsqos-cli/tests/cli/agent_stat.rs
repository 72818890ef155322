//! `pfsqos stat --agent`: the held jobs and top jobs of a Lustre agent, read from its metrics
//! endpoint (here a one-shot HTTP server answering the agent's own metrics text).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;

use pfsqos_agent::agent::{AgentStats, Held, JobRateStat};
use pfsqos_agent::metrics::{render, AgentSample};
use pfsqos_core::model::JobId;

/// Serves `body` as the answer to each of `n` requests, on a thread; returns the address.
fn serve(body: String, n: usize) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for _ in 0..n {
            let Ok((mut s, _)) = l.accept() else { return };
            let mut req = [0u8; 1024];
            let _ = s.read(&mut req);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}

#[test]
fn stat_shows_who_is_held_at_a_limit() {
    let mut stats = AgentStats {
        periods: 40,
        rules_held: 3,
        ..AgentStats::default()
    };
    let held = [("dd.500", 42.0, 100u64 << 20), ("ior.7", 3.5, 10 << 20)];
    for (job, s, limit) in held {
        let job = JobId::new(job).unwrap();
        stats.held.insert(
            job,
            Held {
                since_ns: 0,
                limit_bytes_per_s: limit,
                held_ns: (s * 1e9) as u64,
            },
        );
    }
    stats.job_rates.insert(
        JobId::new("dd.500").unwrap(),
        JobRateStat {
            rate_per_cpt_rpcs_per_s: 25,
            cpts: 2,
            observed_bytes_per_s: 97.0 * (1u64 << 20) as f64,
        },
    );
    let mut body = render(AgentSample {
        stats,
        ..AgentSample::default()
    });
    // An endpoint is another process: a label with a control byte (no agent prints one, job
    // ids cannot hold them) is printed escaped, never as terminal control text.
    body.push_str("pfsqos_agent_job_held_seconds{job=\"x\u{1b}]0;pwn\"} 1\n");
    let addr = serve(body, 1);
    let out = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args(["stat", "--agent", &addr.to_string(), "-n", "1", "-c", "3"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.starts_with(&format!("agent {addr}: periods 40, rules 3")),
        "{text}"
    );
    let rows: Vec<&str> = text.lines().collect();
    // Longest held first, with the limit and what it moves.
    assert!(rows[1].starts_with("held at a limit ("), "{text}");
    assert!(rows[3].trim_start().starts_with("dd.500"), "{text}");
    assert!(
        rows[3].contains("42.0 s") && rows[3].contains("100.0 MiB/s"),
        "{text}"
    );
    assert!(rows[3].contains("97.0 MiB/s"), "{text}");
    assert!(rows[4].trim_start().starts_with("ior.7") && rows[4].contains("10.0 MiB/s"));
    assert!(
        !text.contains('\u{1b}'),
        "no control byte reaches the terminal: {text:?}"
    );
    assert!(text.contains(r"x\u{1b}]0;pwn"), "{text}");
    assert!(
        text.contains("top jobs:") && text.contains("25 RPC/s x 2"),
        "{text}"
    );
}

#[test]
fn stat_says_when_an_agent_cannot_be_read() {
    // A port nobody listens on (bound, then closed).
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args(["stat", "--agent", &addr.to_string(), "-n", "1", "-i", "0.2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(&format!("agent {addr}: unreachable:")),
        "{text}"
    );
    // And an address that does not resolve is a usage error.
    let out = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args(["stat", "--agent", "no port here", "-n", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `pfsqos stat --coordinator`: rounds, refused views and jobs held at a file-system-wide
/// limit, from the coordinator's own metrics text; after an agent given in the same command.
#[test]
fn stat_reads_the_coordinators_metrics() {
    use pfsqos_agent::coord::CoordStats;
    use pfsqos_agent::metrics::render_coordinator;
    let job = JobId::new("dd.500").unwrap();
    let mut stats = CoordStats {
        rounds: 30,
        reports_accepted: 60,
        reports_refused: 2,
        rejected_observations: 1,
        domains: 2,
        jobs: 7,
        ..CoordStats::default()
    };
    stats.held.insert(
        job,
        Held {
            since_ns: 0,
            limit_bytes_per_s: 1 << 30,
            held_ns: 9_500_000_000,
        },
    );
    stats
        .limited_observed_bytes_per_s
        .insert(job, 1000.0 * (1u64 << 20) as f64);
    let coordinator = serve(render_coordinator(stats), 1);
    let agent = serve(
        render(AgentSample {
            stats: AgentStats {
                periods: 5,
                ..AgentStats::default()
            },
            ..AgentSample::default()
        }),
        1,
    );
    let out = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args([
            "stat",
            "--coordinator",
            &coordinator.to_string(),
            "--agent",
            &agent.to_string(),
            "-n",
            "1",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.starts_with(&format!("agent {agent}: periods 5")),
        "agents first: {text}"
    );
    let at = text.find("coordinator ").expect("the coordinator's block");
    let rows: Vec<&str> = text[at..].lines().collect();
    assert_eq!(
        rows[0],
        format!(
            "coordinator {coordinator}: rounds 30, reports 60 taken 2 refused, \
             rejected observations 1, last view 2 OSSs 7 jobs"
        )
    );
    assert_eq!(rows[1], "held at a limit (1):", "{text}");
    assert!(
        rows[3].trim_start().starts_with("dd.500")
            && rows[3].contains("9.5 s")
            && rows[3].contains("1024.0 MiB/s")
            && rows[3].contains("1000.0 MiB/s"),
        "{text}"
    );
    // Unreachable coordinator: said, exit status 1.
    let gone = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pfsqos"))
        .args([
            "stat",
            "--coordinator",
            &gone.to_string(),
            "-n",
            "1",
            "-i",
            "0.2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .starts_with(&format!("coordinator {gone}: unreachable:")));
}
