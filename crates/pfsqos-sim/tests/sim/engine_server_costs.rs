//! The servers' CPU per RPC and per synchronization message, the network's cost per message,
//! and where the RPCs' time went (`EngineStats::time`).

use crate::engine_common::*;
use pfsqos_sim::RunOutput;

const M: u64 = 1 << 20;

/// One client writing 1 MiB RPCs with 16 calls in flight (direct) to one OST on a device of
/// 64 slots at 100,000 MiB/s (so the device is never the bound), `threads` service threads,
/// the OSS's extra keys `oss` and the network's `net`.
fn writers(threads: u32, oss: &str, net: &str) -> String {
    format!(
        r#"
name = "server-costs"
[simulation]
duration_s = 1.0
[cluster]
clients = 1
brw_size = "1M"
max_rpcs_in_flight = 16
[network]
client_link_mib_s = 1000000.0
server_link_mib_s = 1000000.0
latency_us = 1.0
{net}
[[device]]
name = "fast"
concurrency = 64
write = [{{ size = "4k", bandwidth_mib_s = 100000.0 }}]
read = [{{ size = "4k", bandwidth_mib_s = 100000.0 }}]
[[oss]]
name = "oss0"
osts = 1
device = "fast"
io_threads = {threads}
rpc_cpu_us = 0.0
rpc_cpu_us_per_mib = 0.0
sync_cpu_us = 0.0
{oss}
[[job]]
id = "w"
nodes = 1
[[job.processes]]
rw = "write"
bs = "1M"
size = "100G"
iodepth = 16
direct = true
"#
    )
}

fn rpcs(out: &RunOutput) -> u64 {
    out.engine.rpcs
}

#[test]
fn cpu_per_rpc_is_bounded_by_the_threads() {
    // 1 ms of CPU per RPC: 2 threads serve at most 2,000 RPCs a second, 4 threads 4,000.
    for threads in [2u32, 4] {
        let text = writers(threads, "rpc_cpu_us = 1000.0", "message_us = 0.0");
        let out = run_quiet(
            &scenario(&text.replacen("rpc_cpu_us = 0.0\n", "", 1)),
            "nobw",
            1,
        );
        let n = rpcs(&out);
        let bound = 1000 * u64::from(threads);
        assert!(
            n <= bound && n >= bound * 95 / 100,
            "{threads} threads: {n} RPCs"
        );
        let t = out.engine.time;
        assert_eq!(t.server_cpu_ns, n * 1_000_000, "every RPC's CPU is counted");
    }
}

#[test]
fn cpu_per_mib_scales_with_the_rpc_size() {
    // 2 ms per MiB: a 1 MiB RPC holds a thread 2 ms, a 512 KiB one 1 ms.
    let text = writers(1, "rpc_cpu_us_per_mib = 2000.0", "message_us = 0.0").replacen(
        "rpc_cpu_us_per_mib = 0.0\n",
        "",
        1,
    );
    let whole = run_quiet(&scenario(&text), "nobw", 1);
    let half = run_quiet(
        &scenario(&text.replace("bs = \"1M\"", "bs = \"512k\"")),
        "nobw",
        1,
    );
    assert!((490..=500).contains(&rpcs(&whole)), "{}", rpcs(&whole));
    assert!((980..=1000).contains(&rpcs(&half)), "{}", rpcs(&half));
}

#[test]
fn the_time_spent_adds_up_to_every_rpcs_life() {
    for (oss, net) in [
        ("", "message_us = 0.0"),
        ("rpc_cpu_us = 50.0", "message_us = 20.0"),
    ] {
        let text = writers(2, oss, net);
        let text = if oss.is_empty() {
            text
        } else {
            text.replacen("rpc_cpu_us = 0.0\n", "", 1)
        };
        let out = run_quiet(&scenario(&text), "nobw", 1);
        let t = out.engine.time;
        assert!(t.total_ns > 0);
        assert_eq!(
            t.client_queue_ns
                + t.network_ns
                + t.server_queue_ns
                + t.server_cpu_ns
                + t.device_queue_ns
                + t.device_ns,
            t.total_ns,
            "{t:?}"
        );
        // 16 calls on a window of 16 never wait at the client; the device never queues
        // (64 slots).
        assert_eq!(t.client_queue_ns, 0);
        assert_eq!(t.device_queue_ns, 0);
        assert!(t.device_ns > 0 && t.network_ns > 0);
    }
}

#[test]
fn a_message_costs_its_sender_on_every_message() {
    // One call at a time (iodepth 1): each RPC is a request, a bulk pull and a reply, three
    // messages, so 100 us per message adds 300 us to each RPC's life.
    let one = |net: &str| {
        let text = writers(2, "", net).replace("iodepth = 16", "iodepth = 1");
        run_quiet(&scenario(&text), "nobw", 1)
    };
    let free = one("message_us = 0.0");
    let costly = one("message_us = 100.0");
    let per_rpc = |o: &RunOutput| o.engine.time.total_ns / o.engine.rpcs;
    let added = per_rpc(&costly) - per_rpc(&free);
    assert!((299_000..=301_000).contains(&added), "{added} ns per RPC");
    assert!(costly.engine.time.network_ns > free.engine.time.network_ns);
}

#[test]
fn sync_messages_cost_cpu_only_when_servers_synchronize() {
    // DSFQ over two servers exchanges messages; each costs its receiver 100 us.
    let text = format!(
        r#"
name = "sync-costs"
[simulation]
duration_s = 2.0
[cluster]
clients = 2
brw_size = "1M"
stripe_count = 2
stripe_size = "1M"
{FAST_NET}
{EXACT_DEVICE}
[[oss]]
name = "s0"
osts = 1
device = "exact"
sync_cpu_us = 100.0
[[oss]]
name = "s1"
osts = 1
device = "exact"
sync_cpu_us = 100.0
[[job]]
id = "a"
nodes = 1
weight = 4
clients = [0]
[[job.processes]]
rw = "write"
bs = "2M"
size = "10G"
numjobs = 4
[[job]]
id = "b"
nodes = 1
clients = [1]
[[job.processes]]
rw = "write"
bs = "2M"
size = "10G"
numjobs = 4
"#
    );
    let s = scenario(&text);
    let fifo = run_quiet(&s, "nobw", 1);
    assert_eq!(fifo.engine.time.sync_cpu_ns, 0, "FIFO sends no messages");
    let dsfq = run_quiet(&s, "vpfs", 1);
    let received: u64 = dsfq.sync.iter().map(|x| x.counters.messages_in).sum();
    assert!(received > 0);
    assert_eq!(
        dsfq.engine.time.sync_cpu_ns,
        received * 100_000,
        "{:?}",
        dsfq.sync
    );
    let _ = M;
}
