//! Every kind of invalid scenario is rejected with the file, the field, the value as written
//! and what is allowed; every shipped scenario loads.

use std::path::{Path, PathBuf};

use pfsqos_sim::scenario::ByteSize;
use pfsqos_sim::{Scenario, ScenarioError, POLICY_NAMES};

const FILE: &str = "test.toml";

/// A small valid scenario; each test breaks one thing in it.
const BASE: &str = r#"
name = "base"

[simulation]
duration_s = 10.0

[cluster]
clients = 2

[network]
client_link_mib_s = 1000.0

[[device]]
name = "nvme"
read = [{ size = "4k", bandwidth_mib_s = 300.0, overhead_us = 20.0 }, { size = "1M", bandwidth_mib_s = 3000.0 }]
write = [{ size = "4k", bandwidth_mib_s = 200.0 }, { size = "1M", bandwidth_mib_s = 2000.0 }]
concurrency = 8

[[oss]]
name = "oss0"
osts = 2
device = "nvme"

[[oss]]
name = "oss1"
osts = 1

[[job]]
id = "alpha"
nodes = 2
clients = [0]
[[job.processes]]
rw = "write"
bs = "1M"
size = "1G"
numjobs = 4

[[job]]
id = "beta"
nodes = 1
[[job.processes]]
rw = "read"
bs = "1M"
size = "1G"
[[job.processes]]
rw = "randwrite"
bs = "64k"
size = "256M"
[job.processes.shape]
kind = "periodic"
burst_size = "16M"
interval_s = 2.0

[policy]
compare = ["nobw", "static"]
"#;

/// BASE with the one occurrence of `from` replaced by `to`.
fn with(from: &str, to: &str) -> String {
    assert_eq!(
        BASE.matches(from).count(),
        1,
        "`{from}` must occur once in BASE"
    );
    BASE.replacen(from, to, 1)
}

fn err(text: &str) -> ScenarioError {
    match Scenario::from_toml_str(text, FILE) {
        Ok(_) => panic!("scenario was accepted:\n{text}"),
        Err(e) => {
            assert_eq!(e.file, FILE);
            e
        }
    }
}

/// Asserts the error's field, value and a part of its message.
fn expect(text: &str, field: &str, value: Option<&str>, message_part: &str) -> ScenarioError {
    let e = err(text);
    assert_eq!(e.field, field, "{e}");
    assert_eq!(e.value.as_deref(), value, "{e}");
    assert!(
        e.message.contains(message_part),
        "`{message_part}` not in: {e}"
    );
    e
}

#[test]
fn base_is_valid() {
    let s = Scenario::from_toml_str(BASE, FILE).unwrap();
    assert_eq!(s.osses.len(), 2);
    assert_eq!(
        s.jobs[1].groups[1].shape.burst_size,
        Some(ByteSize(16 << 20))
    );
}

#[test]
fn unknown_field_top_level() {
    let e = expect(
        &with("name = \"base\"", "name = \"base\"\ncolour = 3"),
        "colour",
        None,
        "unknown field `colour`",
    );
    assert!(e.message.contains("allowed: name, description"), "{e}");
    assert!(e.message.contains("line 3"), "{e}");
}

#[test]
fn unknown_field_nested() {
    let e = expect(
        &with("numjobs = 4", "numjobs = 4\nblocksize = \"4k\""),
        "job[0].processes[0].blocksize",
        None,
        "unknown field `blocksize`",
    );
    assert!(e.message.contains("bs"), "allowed fields listed: {e}");
    expect(
        &with("osts = 1", "osts = 1\nthreads = 4"),
        "oss[1].threads",
        None,
        "unknown field `threads`",
    );
    expect(
        &with("interval_s = 2.0", "interval_s = 2.0\nperiod = 3"),
        "job[1].processes[1].shape.period",
        None,
        "unknown field",
    );
}

#[test]
fn wrong_type() {
    let e = expect(
        &with("duration_s = 10.0", "duration_s = \"ten\""),
        "simulation.duration_s",
        Some("\"ten\""),
        "invalid type",
    );
    assert!(e.message.contains("line 5"), "{e}");
    expect(
        &with("clients = 2", "clients = 2.5"),
        "cluster.clients",
        Some("2.5"),
        "invalid type",
    );
    expect(
        &with("numjobs = 4", "numjobs = \"four\""),
        "job[0].processes[0].numjobs",
        Some("\"four\""),
        "invalid type",
    );
    expect(
        &with("bs = \"64k\"", "bs = 1.5"),
        "job[1].processes[1].bs",
        Some("1.5"),
        "expected a size",
    );
    expect(
        &with("rw = \"randwrite\"", "rw = \"append\""),
        "job[1].processes[1].rw",
        Some("\"append\""),
        "unknown variant `append`",
    );
    expect(
        &with("kind = \"periodic\"", "kind = \"sometimes\""),
        "job[1].processes[1].shape.kind",
        Some("\"sometimes\""),
        "unknown variant",
    );
}

#[test]
fn missing_required_field() {
    expect(
        &with("duration_s = 10.0", ""),
        "simulation.duration_s",
        None,
        "missing required field `duration_s`",
    );
    expect(
        &with("nodes = 2\n", ""),
        "job[0].nodes",
        None,
        "missing required field `nodes`",
    );
    expect(
        &with("name = \"base\"", ""),
        "name",
        None,
        "missing required field `name`",
    );
}

#[test]
fn bad_size_string() {
    expect(
        &with("size = \"1G\"\nnumjobs", "size = \"1Q\"\nnumjobs"),
        "job[0].processes[0].size",
        Some("\"1Q\""),
        "unknown unit `Q`",
    );
    expect(
        &with("size = \"256M\"", "size = \"lots\""),
        "job[1].processes[1].size",
        Some("\"lots\""),
        "is not a size",
    );
    expect(
        &with("bs = \"64k\"", "bs = -4096"),
        "job[1].processes[1].bs",
        Some("-4096"),
        "negative",
    );
    expect(
        &with("burst_size = \"16M\"", "burst_size = \"1.5\""),
        "job[1].processes[1].shape.burst_size",
        Some("\"1.5\""),
        "whole number of bytes",
    );
}

#[test]
fn syntax_error_has_position() {
    let e = err(&with("osts = 1", "osts = = 1"));
    assert!(e.message.contains("line"), "{e}");
}

#[test]
fn simulation_ranges() {
    expect(
        &with("duration_s = 10.0", "duration_s = 0.0"),
        "simulation.duration_s",
        Some("0.0"),
        "greater than 0",
    );
    expect(
        &with("duration_s = 10.0", "duration_s = -5.0"),
        "simulation.duration_s",
        Some("-5.0"),
        "greater than 0",
    );
    expect(
        &with("duration_s = 10.0", "duration_s = nan"),
        "simulation.duration_s",
        Some("nan"),
        "finite",
    );
    expect(
        &with("duration_s = 10.0", "duration_s = 1e9"),
        "simulation.duration_s",
        Some("1e9"),
        "at most 2592000",
    );
    expect(
        &with("duration_s = 10.0", "duration_s = 10.0\nbin_ms = 0"),
        "simulation.bin_ms",
        Some("0"),
        "1..=3600000",
    );
    let e = expect(
        &with("duration_s = 10.0", "duration_s = 2000000.0\nbin_ms = 1"),
        "simulation.bin_ms",
        Some("1"),
        "at most 10000000",
    );
    assert!(e.message.contains("bin_ms >= 200"), "{e}");
}

#[test]
fn cluster_ranges() {
    expect(
        &with("clients = 2", "clients = 0"),
        "cluster.clients",
        Some("0"),
        "1..=65536",
    );
    expect(
        &with("clients = 2", "clients = 70000"),
        "cluster.clients",
        Some("70000"),
        "1..=65536",
    );
    expect(
        &with("clients = 2", "clients = 2\nbrw_size = \"3M\""),
        "cluster.brw_size",
        Some("\"3M\""),
        "power of two",
    );
    expect(
        &with("clients = 2", "clients = 2\nbrw_size = \"128M\""),
        "cluster.brw_size",
        Some("\"128M\""),
        "64M",
    );
    expect(
        &with("clients = 2", "clients = 2\nbrw_size = 2048"),
        "cluster.brw_size",
        Some("2048"),
        "from 4k",
    );
    expect(
        &with("clients = 2", "clients = 2\nmax_rpcs_in_flight = 0"),
        "cluster.max_rpcs_in_flight",
        Some("0"),
        "1..=256",
    );
    expect(
        &with("clients = 2", "clients = 2\nmax_rpcs_in_flight = 512"),
        "cluster.max_rpcs_in_flight",
        Some("512"),
        "1..=256",
    );
    expect(
        &with("clients = 2", "clients = 2\nstripe_count = 4"),
        "cluster.stripe_count",
        Some("4"),
        "1..=3",
    );
    expect(
        &with("clients = 2", "clients = 2\nstripe_size = \"100k\""),
        "cluster.stripe_size",
        Some("\"100k\""),
        "multiple of 64k",
    );
    expect(
        &with("clients = 2", "clients = 2\nstripe_size = 0"),
        "cluster.stripe_size",
        Some("0"),
        "non-zero",
    );
    expect(
        &with("clients = 2", "clients = 2\nscheduler_scope = \"cpt\""),
        "cluster.scheduler_scope",
        Some("\"cpt\""),
        "expected `oss` or `ost`",
    );
}

#[test]
fn zero_bandwidth_network() {
    expect(
        &with("client_link_mib_s = 1000.0", "client_link_mib_s = 0.0"),
        "network.client_link_mib_s",
        Some("0.0"),
        "greater than 0",
    );
    expect(
        &with(
            "client_link_mib_s = 1000.0",
            "client_link_mib_s = 1000.0\nserver_link_mib_s = 0",
        ),
        "network.server_link_mib_s",
        Some("0"),
        "greater than 0",
    );
    expect(
        &with(
            "client_link_mib_s = 1000.0",
            "client_link_mib_s = 1000.0\nserver_link_mib_s = 0.0",
        ),
        "network.server_link_mib_s",
        Some("0.0"),
        "greater than 0",
    );
    expect(
        &with(
            "client_link_mib_s = 1000.0",
            "client_link_mib_s = 1000.0\nlatency_us = -1.0",
        ),
        "network.latency_us",
        Some("-1.0"),
        "at least 0",
    );
    expect(
        &with("client_link_mib_s = 1000.0", "client_link_mib_s = inf"),
        "network.client_link_mib_s",
        Some("inf"),
        "finite",
    );
}

#[test]
fn zero_bandwidth_device() {
    expect(
        &with(
            "{ size = \"1M\", bandwidth_mib_s = 2000.0 }",
            "{ size = \"1M\", bandwidth_mib_s = 0.0 }",
        ),
        "device[0].write[1].bandwidth_mib_s",
        Some("0.0"),
        "greater than 0",
    );
}

#[test]
fn device_ranges() {
    expect(
        &with("name = \"nvme\"", "name = \"hdd\""),
        "device[0].name",
        Some("\"hdd\""),
        "preset",
    );
    expect(
        &with("concurrency = 8", "concurrency = 0"),
        "device[0].concurrency",
        Some("0"),
        "1..=1024",
    );
    expect(
        &with(
            "concurrency = 8",
            "concurrency = 8\nrandom_penalty_us = -3.0",
        ),
        "device[0].random_penalty_us",
        Some("-3.0"),
        "at least 0",
    );
    expect(
        &with("overhead_us = 20.0 }", "overhead_us = -20.0 }"),
        "device[0].read[0].overhead_us",
        Some("-20.0"),
        "at least 0",
    );
    expect(
        &with(
            "write = [{ size = \"4k\", bandwidth_mib_s = 200.0 }, { size = \"1M\", bandwidth_mib_s = 2000.0 }]",
            "write = [{ size = \"1M\", bandwidth_mib_s = 200.0 }, { size = \"4k\", bandwidth_mib_s = 2000.0 }]",
        ),
        "device[0].write[1].size",
        Some("\"4k\""),
        "strictly increasing size",
    );
    expect(
        &with(
            "write = [{ size = \"4k\", bandwidth_mib_s = 200.0 }, { size = \"1M\", bandwidth_mib_s = 2000.0 }]",
            "write = []",
        ),
        "device[0].write",
        None,
        "1..=64 rows",
    );
    let dup = with("[[oss]]\nname = \"oss0\"", "[[device]]\nname = \"nvme\"\nread = [{ size = 4096, bandwidth_mib_s = 1.0 }]\nwrite = [{ size = 4096, bandwidth_mib_s = 1.0 }]\n\n[[oss]]\nname = \"oss0\"");
    expect(&dup, "device[1].name", Some("\"nvme\""), "unique");
}

#[test]
fn oss_ranges_and_device_reference() {
    let e = expect(
        &with("device = \"nvme\"", "device = \"nvm\""),
        "oss[0].device",
        Some("\"nvm\""),
        "no device named `nvm`",
    );
    assert!(e.message.contains("allowed: hdd, ssd-sata, nvme"), "{e}");
    expect(
        &with("osts = 2", "osts = 0"),
        "oss[0].osts",
        Some("0"),
        "1..=256",
    );
    expect(
        &with("osts = 1", "osts = 1\nio_threads = 0"),
        "oss[1].io_threads",
        Some("0"),
        "1..=512",
    );
    expect(
        &with("osts = 1", "osts = 1\nio_threads = 1000"),
        "oss[1].io_threads",
        Some("1000"),
        "1..=512",
    );
    expect(
        &with("osts = 1", "osts = 1\ncpts = 257"),
        "oss[1].cpts",
        Some("257"),
        "1..=256",
    );
    expect(
        &with("osts = 1", "osts = 1\nio_threads = 2\ncpts = 4"),
        "oss[1].io_threads",
        Some("2"),
        "at least cpts",
    );
    expect(
        &with("osts = 1", "osts = 1\ncapacity_rpcs_per_s = 0"),
        "oss[1].capacity_rpcs_per_s",
        Some("0"),
        "1..=999999",
    );
    expect(
        &with("osts = 1", "osts = 1\ncapacity_rpcs_per_s = 1000000"),
        "oss[1].capacity_rpcs_per_s",
        Some("1000000"),
        "1..=999999",
    );
    expect(
        &with("name = \"oss1\"", "name = \"oss0\""),
        "oss[1].name",
        Some("\"oss0\""),
        "unique",
    );
}

#[test]
fn no_oss_and_no_job() {
    let no_oss = BASE.replace("[[oss]]\nname = \"oss0\"\nosts = 2\ndevice = \"nvme\"\n\n[[oss]]\nname = \"oss1\"\nosts = 1\n", "")
        .replace("name = \"base\"", "name = \"base\"\noss = []");
    expect(&no_oss, "oss", None, "1..=1024");
    let start = BASE.find("[[job]]").unwrap();
    let end = BASE.find("[policy]").unwrap();
    let no_jobs = format!("{}{}", &BASE[..start], &BASE[end..])
        .replace("name = \"base\"", "name = \"base\"\njob = []");
    expect(&no_jobs, "job", None, "1..=16384");
}

#[test]
fn job_client_reference() {
    let e = expect(
        &with("clients = [0]", "clients = [0, 2]"),
        "job[0].clients[1]",
        Some("2"),
        "no client 2",
    );
    assert!(e.message.contains("0..=1"), "{e}");
    expect(
        &with("clients = [0]", "clients = []"),
        "job[0].clients",
        None,
        "1..=2 entries",
    );
    expect(
        &with("clients = [0]", "clients = [1, 1]"),
        "job[0].clients[1]",
        Some("1"),
        "twice",
    );
}

#[test]
fn job_ids() {
    expect(
        &with("id = \"beta\"", "id = \"alpha\""),
        "job[1].id",
        Some("\"alpha\""),
        "unique",
    );
    let long = "a".repeat(32);
    expect(
        &with("id = \"beta\"", &format!("id = \"{long}\"")),
        "job[1].id",
        Some(format!("\"{long}\"").as_str()),
        "at most 31",
    );
    expect(
        &with("id = \"beta\"", "id = \"\""),
        "job[1].id",
        Some("\"\""),
        "must not be empty",
    );
    expect(
        &with("id = \"beta\"", "id = \"be\\nta\""),
        "job[1].id",
        Some("\"be\\nta\""),
        "control character",
    );
    expect(
        &with("nodes = 2", "nodes = 0"),
        "job[0].nodes",
        Some("0"),
        "1..=1000000",
    );
    expect(
        &with("nodes = 2", "nodes = 2\nweight = 0"),
        "job[0].weight",
        Some("0"),
        "proportional-share weight must be in 1..=1000000",
    );
}

#[test]
fn group_ranges_and_ost_reference() {
    expect(
        &with(
            "bs = \"1M\"\nsize = \"1G\"\nnumjobs",
            "bs = 0\nsize = \"1G\"\nnumjobs",
        ),
        "job[0].processes[0].bs",
        Some("0"),
        "1..=",
    );
    expect(
        &with("bs = \"64k\"", "bs = \"512M\""),
        "job[1].processes[1].bs",
        Some("\"512M\""),
        "must not exceed size (256M)",
    );
    expect(
        &with("size = \"256M\"", "size = 0"),
        "job[1].processes[1].size",
        Some("0"),
        "size must be in 1..=",
    );
    expect(
        &with("numjobs = 4", "numjobs = 0"),
        "job[0].processes[0].numjobs",
        Some("0"),
        "1..=65536",
    );
    expect(
        &with("numjobs = 4", "numjobs = 4\niodepth = 2000"),
        "job[0].processes[0].iodepth",
        Some("2000"),
        "1..=1024",
    );
    expect(
        &with("numjobs = 4", "numjobs = 4\nstripe_count = 0"),
        "job[0].processes[0].stripe_count",
        Some("0"),
        "1..=3",
    );
    expect(
        &with("numjobs = 4", "numjobs = 4\nstripe_count = 4"),
        "job[0].processes[0].stripe_count",
        Some("4"),
        "number of OSTs",
    );
    expect(
        &with("numjobs = 4", "numjobs = 4\nstripe_size = \"96k\""),
        "job[0].processes[0].stripe_size",
        Some("\"96k\""),
        "multiple of 64k",
    );
    let e = expect(
        &with("numjobs = 4", "numjobs = 4\nstripe_offset = 3"),
        "job[0].processes[0].stripe_offset",
        Some("3"),
        "no OST 3",
    );
    assert!(e.message.contains("0..=2"), "{e}");
    assert!(e.message.contains("line "), "{e}");
}

#[test]
fn too_many_processes() {
    let text = with("numjobs = 4", "numjobs = 60000")
        .replace("[[job]]\nid = \"beta\"\nnodes = 1\n[[job.processes]]\nrw = \"read\"\nbs = \"1M\"\nsize = \"1G\"\n",
                 "[[job]]\nid = \"beta\"\nnodes = 1\n[[job.processes]]\nrw = \"read\"\nbs = \"1M\"\nsize = \"1G\"\nnumjobs = 50000\n");
    expect(
        &text,
        "job[1].processes[0].numjobs",
        Some("50000"),
        "at most 100000",
    );
}

#[test]
fn too_many_io_calls_or_client_ost_pairs() {
    expect(
        &with("numjobs = 4", "numjobs = 2000\niodepth = 1000"),
        "job[0].processes[0].iodepth",
        Some("1000"),
        "at most 1000000",
    );
    // 65536 clients × 300 OSTs exceeds 16 Mi pairs.
    let text = with("clients = 2", "clients = 65536").replace(
        "osts = 1\n",
        "osts = 256\n\n[[oss]]\nname = \"oss2\"\nosts = 42\n",
    );
    expect(&text, "cluster.clients", Some("65536"), "client-OST pairs");
}

#[test]
fn too_many_series_cells() {
    // 1,000,001 bins × (2 + 300) jobs = 302 M cells > 2^28, at one OST per job; the OSTs
    // a job may touch do not count here (only those it touches, during the run).
    let extra: String = (0..300)
        .map(|i| format!("\n[[job]]\nid = \"x{i}\"\nnodes = 1\n[[job.processes]]\nrw = \"write\"\nbs = \"1M\"\nsize = \"1M\"\n"))
        .collect();
    let text = with("duration_s = 10.0", "duration_s = 1000.0\nbin_ms = 1") + &extra;
    let e = expect(&text, "simulation.bin_ms", Some("1"), "time-series cells");
    assert!(e.message.contains("use bin_ms >= 2"), "{e}");
    let fixed = text.replace("bin_ms = 1\n", "bin_ms = 2\n");
    Scenario::from_toml_str(&fixed, FILE).unwrap();
    let many_osts = with("duration_s = 10.0", "duration_s = 2000.0\nbin_ms = 1")
        .replace("osts = 1\n", "osts = 98\n");
    Scenario::from_toml_str(&many_osts, FILE).expect("100 OSTs cost a job only those it touches");
}

#[test]
fn bad_shapes() {
    let p = "job[1].processes[1].shape";
    expect(
        &with("kind = \"periodic\"", "kind = \"continuous\""),
        &format!("{p}.burst_size"),
        Some("\"16M\""),
        "not allowed with kind = \"continuous\"",
    );
    expect(
        &with("burst_size = \"16M\"\n", ""),
        &format!("{p}.burst_size"),
        None,
        "needs burst_size",
    );
    expect(
        &with("interval_s = 2.0", ""),
        &format!("{p}.interval_s"),
        None,
        "needs interval_s",
    );
    expect(
        &with("interval_s = 2.0", "interval_s = 0.0"),
        &format!("{p}.interval_s"),
        Some("0.0"),
        "at least 0.001",
    );
    expect(
        &with("burst_size = \"16M\"", "burst_size = 0"),
        &format!("{p}.burst_size"),
        Some("0"),
        "1..=",
    );
    expect(
        &with(
            "interval_s = 2.0",
            "interval_s = 2.0\nbursts = [{ at_s = 1.0, size = \"1M\" }]",
        ),
        &format!("{p}.bursts"),
        Some("[{ at_s = 1.0, size = \"1M\" }]"),
        "not allowed with kind = \"periodic\"",
    );
    let bursts = |list: &str| {
        with(
            "kind = \"periodic\"\nburst_size = \"16M\"\ninterval_s = 2.0",
            &format!("kind = \"bursts\"\nbursts = {list}"),
        )
    };
    expect(
        &bursts("[]"),
        &format!("{p}.bursts"),
        None,
        "needs 1..=100000",
    );
    expect(
        &bursts("[{ at_s = 5.0, size = \"1M\" }, { at_s = 3.0, size = \"1M\" }]"),
        &format!("{p}.bursts[1].at_s"),
        Some("3.0"),
        "sorted",
    );
    expect(
        &bursts("[{ at_s = 5.0, size = 0 }]"),
        &format!("{p}.bursts[0].size"),
        Some("0"),
        "1..=",
    );
    expect(
        &bursts("[{ at_s = -1.0, size = 1 }]"),
        &format!("{p}.bursts[0].at_s"),
        Some("-1.0"),
        "at least 0",
    );
    expect(
        &with(
            "kind = \"periodic\"\nburst_size = \"16M\"",
            "kind = \"bursts\"\nbursts = [{ at_s = 1.0, size = 1 }]\nburst_size = \"16M\"",
        ),
        &format!("{p}.burst_size"),
        Some("\"16M\""),
        "not allowed with kind = \"bursts\"",
    );
    expect(
        &with("interval_s = 2.0", "interval_s = 2.0\nstart_s = -1.0"),
        &format!("{p}.start_s"),
        Some("-1.0"),
        "at least 0",
    );
    expect(
        &with("interval_s = 2.0", "interval_s = 2.0\nstart_s = 10.0"),
        &format!("{p}.start_s"),
        Some("10.0"),
        "duration_s = 10",
    );
    expect(
        &with(
            "interval_s = 2.0",
            "interval_s = 2.0\nstart_s = 3.0\nstop_s = 3.0",
        ),
        &format!("{p}.stop_s"),
        Some("3.0"),
        "after start_s",
    );
}

#[test]
fn unknown_policy() {
    let e = expect(
        &with("compare = [\"nobw\", \"static\"]", "default = \"fair\""),
        "policy.default",
        Some("\"fair\""),
        "unknown policy `fair`",
    );
    assert!(
        e.message
            .contains(&format!("allowed: {}", POLICY_NAMES.join(", "))),
        "{e}"
    );
    expect(
        &with(
            "compare = [\"nobw\", \"static\"]",
            "compare = [\"nobw\", \"gift2\"]",
        ),
        "policy.compare[1]",
        Some("\"gift2\""),
        "unknown policy `gift2`",
    );
    expect(
        &with(
            "compare = [\"nobw\", \"static\"]",
            "compare = [\"nobw\", \"nobw\"]",
        ),
        "policy.compare[1]",
        Some("\"nobw\""),
        "twice",
    );
    expect(
        &with("compare = [\"nobw\", \"static\"]", "compare = []"),
        "policy.compare",
        None,
        "at least one",
    );
    expect(
        &with("compare = [\"nobw\", \"static\"]", "period_ms = 0"),
        "policy.period_ms",
        Some("0"),
        "1..=3600000",
    );
}

#[test]
fn error_display_names_everything() {
    let e = err(&with("osts = 2", "osts = 0"));
    let shown = e.to_string();
    assert!(
        shown.starts_with("test.toml: field `oss[0].osts`: value `0`: "),
        "{shown}"
    );
    assert!(shown.contains("1..=256"), "{shown}");
}

#[test]
fn validate_without_text_shows_normalized_values() {
    let mut s = Scenario::from_toml_str(BASE, FILE).unwrap();
    s.jobs[0].groups[0].bs = ByteSize(3 << 30);
    let e = s.validate("x.toml").unwrap_err();
    assert_eq!(e.file, "x.toml");
    assert_eq!(e.field, "job[0].processes[0].bs");
    assert_eq!(e.value.as_deref(), Some("\"3G\""));
}

#[test]
fn load_reads_files_and_names_them() {
    let dir = std::env::temp_dir().join(format!("pfsqos-scenario-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(&path, with("osts = 2", "osts = 0")).unwrap();
    let e = Scenario::load(&path).unwrap_err();
    assert_eq!(e.file, path.display().to_string());
    assert_eq!(e.field, "oss[0].osts");
    let missing = Scenario::load(&dir.join("missing.toml")).unwrap_err();
    assert!(missing.message.contains("cannot read"), "{missing}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            toml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml")
            // A bake-off suite's index and a reproduction's claims (scripts/claims.py reads
            // them) are not scenarios.
            && path.file_name().is_some_and(|n| n != "suite.toml" && n != "claims.toml")
        {
            out.push(path);
        }
    }
}

#[test]
fn shipped_scenarios_are_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files = Vec::new();
    toml_files(&root, &mut files);
    files.sort();
    assert!(files.len() >= 3, "found {files:?}");
    for f in &files {
        if let Err(e) = Scenario::load(f) {
            panic!("{e}");
        }
    }
}

#[test]
fn flagship_matches_the_paper_set_up() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/demo/flagship.toml");
    let s = Scenario::load(&root).unwrap();
    assert_eq!(s.osses.len(), 1);
    assert_eq!(
        (
            s.osses[0].osts,
            s.osses[0].device.as_str(),
            s.osses[0].io_threads,
            s.osses[0].cpts
        ),
        (2, "sata-ssd", 64, 1)
    );
    // The testbed's SATA SSDs (Table II), as the shipped datasheet profile.
    let device = s
        .devices
        .iter()
        .find(|d| d.name == "sata-ssd")
        .expect("the OSS's device");
    assert_eq!(device.profile.as_deref(), Some("ssd-sata"));
    assert_eq!(s.cluster.clients, 4);
    let nodes: Vec<u32> = s.jobs.iter().map(|j| j.nodes).collect();
    let total: u32 = nodes.iter().sum();
    let shares: Vec<u32> = nodes.iter().map(|n| n * 100 / total).collect();
    assert_eq!(shares, [10, 10, 30, 50]);
    for (i, j) in s.jobs.iter().enumerate() {
        assert_eq!(j.clients.as_deref(), Some(&[i as u32][..]));
        assert_eq!(j.groups.len(), 1);
        let g = &j.groups[0];
        assert_eq!(
            (g.numjobs, g.size, g.bs),
            (16, ByteSize(1 << 30), ByteSize(1 << 20))
        );
    }
    assert_eq!(s.policy.compare, ["nobw", "static", "adaptbf"]);
}

fn docs() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenarios.md"))
        .unwrap()
}

/// The ```toml block under "A full annotated example" in docs/scenarios.md.
fn annotated_example(docs: &str) -> String {
    let section = &docs[docs
        .find("## A full annotated example")
        .expect("section present")..];
    let start = section.find("```toml\n").unwrap() + "```toml\n".len();
    let end = start + section[start..].find("```").unwrap();
    section[start..end].to_string()
}

#[test]
fn documented_example_is_valid() {
    let s = Scenario::from_toml_str(&annotated_example(&docs()), "docs/scenarios.md").unwrap();
    assert_eq!(s.jobs.len(), 3);
}

/// Every key serde accepts, in every table, has a row in docs/scenarios.md. serde lists the
/// accepted keys when it meets an unknown one, so a new field without docs fails here.
#[test]
fn every_field_is_documented() {
    let docs = docs();
    let example = annotated_example(&docs);
    let injections = [
        ("name = \"annotated\"", "zzz = 1\nname = \"annotated\""),
        ("[simulation]\n", "[simulation]\nzzz = 1\n"),
        ("[cluster]\n", "[cluster]\nzzz = 1\n"),
        ("[network]\n", "[network]\nzzz = 1\n"),
        ("[[device]]\n", "[[device]]\nzzz = 1\n"),
        (
            "{ size = \"4k\", bandwidth_mib_s = 400.0",
            "{ zzz = 1, size = \"4k\", bandwidth_mib_s = 400.0",
        ),
        ("[[oss]]\n", "[[oss]]\nzzz = 1\n"),
        ("[[job]]\n", "[[job]]\nzzz = 1\n"),
        ("[[job.processes]]\n", "[[job.processes]]\nzzz = 1\n"),
        (
            "[job.processes.shape]\n",
            "[job.processes.shape]\nzzz = 1\n",
        ),
        ("{ at_s = 10.0", "{ zzz = 1, at_s = 10.0"),
        ("[policy]\n", "[policy]\nzzz = 1\n"),
    ];
    let mut checked = 0;
    for (anchor, replacement) in injections {
        assert!(example.contains(anchor), "`{anchor}` not in the example");
        let e = err(&example.replacen(anchor, replacement, 1));
        assert!(e.field.ends_with("zzz"), "{e}");
        let list = &e.message[e.message.find("allowed: ").unwrap() + "allowed: ".len()..];
        let list = &list[..list.find(" (line").unwrap_or(list.len())];
        for key in list.split(", ") {
            let row = format!("| `{key}` |");
            let table_row = format!("| `[{key}]` |");
            let array_row = format!("| `[[{key}]]` |");
            let nested = [
                format!("| `[[job.{key}]]` |"),
                format!("| `[job.processes.{key}]` |"),
            ];
            assert!(
                docs.contains(&row)
                    || docs.contains(&table_row)
                    || docs.contains(&array_row)
                    || nested.iter().any(|n| docs.contains(n)),
                "field `{key}` of `{}` has no row in docs/scenarios.md",
                e.field
            );
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} keys checked");
}

/// BASE with job alpha's group given a `phases` shape (`extra` appended to the shape table).
fn alpha_phased(extra: &str) -> String {
    with(
        "numjobs = 4\n",
        &format!("numjobs = 4\n[job.processes.shape]\nkind = \"phases\"\n{extra}\n"),
    )
}

#[test]
fn phases_shape_is_valid_and_needs_its_fields() {
    let s = Scenario::from_toml_str(
        &alpha_phased("phases = 4\ncompute_s = 0.5\nphase_size = \"256M\""),
        FILE,
    )
    .unwrap();
    let shape = &s.jobs[0].groups[0].shape;
    assert_eq!(
        (shape.phases, shape.compute_s, shape.phase_size),
        (Some(4), Some(0.5), Some(ByteSize(256 << 20)))
    );
    let f = "job[0].processes[0].shape";
    expect(
        &alpha_phased("compute_s = 0.5\nphase_size = \"256M\""),
        &format!("{f}.phases"),
        None,
        "needs phases",
    );
    expect(
        &alpha_phased("phases = 4\nphase_size = \"256M\""),
        &format!("{f}.compute_s"),
        None,
        "needs compute_s",
    );
    expect(
        &alpha_phased("phases = 4\ncompute_s = 0.5"),
        &format!("{f}.phase_size"),
        None,
        "needs phase_size",
    );
    expect(
        &alpha_phased("phases = 0\ncompute_s = 0.5\nphase_size = \"256M\""),
        &format!("{f}.phases"),
        Some("0"),
        "100000",
    );
    expect(
        &alpha_phased("phases = 4\ncompute_s = -1.0\nphase_size = \"256M\""),
        &format!("{f}.compute_s"),
        Some("-1.0"),
        "compute time",
    );
    // 5 × 256 MiB is more than the group's 1 GiB.
    expect(
        &alpha_phased("phases = 5\ncompute_s = 0.5\nphase_size = \"256M\""),
        "job[0].processes[0].shape.phase_size",
        Some("\"256M\""),
        "phases × phase_size",
    );
    expect(
        &alpha_phased("phases = 4\ncompute_s = 0.5\nphase_size = \"256M\"\nstop_s = 5.0"),
        &format!("{f}.stop_s"),
        Some("5.0"),
        "not allowed with kind = \"phases\"",
    );
    expect(
        &alpha_phased("phases = 4\ncompute_s = 0.5\nphase_size = \"256M\"\ninterval_s = 1.0"),
        &format!("{f}.interval_s"),
        Some("1.0"),
        "not allowed with kind = \"phases\"",
    );
}

#[test]
fn phase_fields_need_the_phases_kind() {
    expect(
        &with("interval_s = 2.0", "interval_s = 2.0\nphases = 3"),
        "job[1].processes[1].shape.phases",
        Some("3"),
        "not allowed with kind = \"periodic\"",
    );
    expect(
        &with("interval_s = 2.0", "interval_s = 2.0\ncompute_s = 1.0"),
        "job[1].processes[1].shape.compute_s",
        Some("1.0"),
        "not allowed",
    );
}

#[test]
fn a_phased_job_shares_one_barrier() {
    // Job beta: its first group phased, its second periodic.
    let phased = "[[job.processes]]\nrw = \"randwrite\"";
    let text = with(
        "size = \"1G\"\n[[job.processes]]\nrw = \"randwrite\"",
        "size = \"1G\"\n[job.processes.shape]\nkind = \"phases\"\nphases = 2\ncompute_s = 1.0\nphase_size = \"16M\"\n[[job.processes]]\nrw = \"randwrite\"",
    );
    assert!(text.contains(phased));
    expect(
        &text,
        "job[1].processes[1].shape.kind",
        None,
        "every group of that stage must then have kind = \"phases\"",
    );
    let mixed = text.replace(
        "kind = \"periodic\"\nburst_size = \"16M\"\ninterval_s = 2.0",
        "kind = \"phases\"\nphases = 3\ncompute_s = 1.0\nphase_size = \"16M\"",
    );
    expect(
        &mixed,
        "job[1].processes[1].shape.phases",
        Some("3"),
        "same phases; processes[0] has 2",
    );
    let same = mixed.replace("phases = 3", "phases = 2");
    Scenario::from_toml_str(&same, FILE).unwrap();
    expect(
        &same.replacen("compute_s = 1.0", "compute_s = 1.5", 1),
        "job[1].processes[1].shape.compute_s",
        Some("1.0"),
        "same compute_s",
    );
}

/// BASE's job beta, its second group (periodic randwrite) given `extra` keys.
fn beta_second(extra: &str) -> String {
    with(
        "rw = \"randwrite\"\nbs = \"64k\"",
        &format!("rw = \"randwrite\"\nbs = \"64k\"\n{extra}"),
    )
}

#[test]
fn after_names_an_earlier_group_that_can_finish() {
    let ok = beta_second("after = 0");
    let s = Scenario::from_toml_str(&ok, FILE).unwrap();
    assert_eq!(s.jobs[1].groups[1].after, Some(0));
    expect(
        &beta_second("after = 1"),
        "job[1].processes[1].after",
        Some("1"),
        "names this group itself",
    );
    let e = expect(
        &with("numjobs = 4\n", "numjobs = 4\nafter = 0\n"),
        "job[0].processes[0].after",
        Some("0"),
        "names this group itself",
    );
    assert!(e.message.contains("the job's first group has none"), "{e}");
    expect(
        &beta_second("after = 2"),
        "job[1].processes[1].after",
        Some("2"),
        "names a later group (processes[2])",
    );
    // Group 0 of job beta reads continuously from 0 s: it can end at once. A group whose
    // shape alone lasts past the run cannot release anything.
    let late = with(
        "size = \"1G\"\n[[job.processes]]\nrw = \"randwrite\"",
        "size = \"1G\"\n[job.processes.shape]\nkind = \"bursts\"\nbursts = [{ at_s = 2.0, size = \"512M\" }, { at_s = 12.0, size = \"512M\" }]\n[[job.processes]]\nrw = \"randwrite\"",
    );
    Scenario::from_toml_str(&late, FILE).unwrap();
    let e = expect(
        &late.replacen("bs = \"64k\"", "bs = \"64k\"\nafter = 0", 1),
        "job[1].processes[1].after",
        Some("0"),
        "cannot finish before 12 s",
    );
    assert!(e.message.contains("duration_s = 10"), "{e}");
    // A stop ends the shape sooner: then it can.
    Scenario::from_toml_str(
        &late
            .replacen("bs = \"64k\"", "bs = \"64k\"\nafter = 0", 1)
            .replacen("kind = \"bursts\"", "kind = \"bursts\"\nstop_s = 5.0", 1),
        FILE,
    )
    .unwrap();
    // Periodic: 256M in bursts of 16M every 2 s ends at 30 s at the earliest.
    let chain = format!(
        "{}\n[[job.processes]]\nrw = \"read\"\nbs = \"1M\"\nsize = \"1G\"\nafter = 1\n",
        BASE.trim_end()
            .trim_end_matches("compare = [\"nobw\", \"static\"]")
            .trim_end()
            .trim_end_matches("[policy]")
    );
    expect(
        &chain,
        "job[1].processes[2].after",
        Some("1"),
        "cannot finish before 30 s",
    );
}

#[test]
fn files_of_needs_the_same_files_and_no_layout() {
    // Job alpha: 4 writers of per-process files; a reader group on them.
    let reader = |extra: &str| {
        with(
            "numjobs = 4\n",
            &format!("numjobs = 4\n[[job.processes]]\nrw = \"read\"\nbs = \"1M\"\nsize = \"1G\"\nnumjobs = 4\nafter = 0\nfiles_of = 0\n{extra}"),
        )
    };
    let s = Scenario::from_toml_str(&reader(""), FILE).unwrap();
    assert_eq!(s.jobs[0].groups[1].files_of, Some(0));
    expect(
        &reader("").replacen("files_of = 0", "files_of = 1", 1),
        "job[0].processes[1].files_of",
        Some("1"),
        "names this group itself",
    );
    expect(
        &reader("file = \"shared\""),
        "job[0].processes[1].file",
        None,
        "must have its file mode (\"per-process\"); it has \"shared\"",
    );
    expect(
        &reader("").replacen("numjobs = 4\nafter", "numjobs = 3\nafter", 1),
        "job[0].processes[1].numjobs",
        Some("3"),
        "must have processes[0]'s numjobs (4)",
    );
    expect(
        &reader("").replacen(
            "size = \"1G\"\nnumjobs = 4\nafter",
            "size = \"2G\"\nnumjobs = 4\nafter",
            1,
        ),
        "job[0].processes[1].size",
        Some("\"2G\""),
        "at most what processes[0] has per process",
    );
    for (key, value) in [
        ("stripe_count", "2"),
        ("stripe_size", "\"2M\""),
        ("stripe_offset", "1"),
    ] {
        expect(
            &reader(&format!("{key} = {value}")),
            &format!("job[0].processes[1].{key}"),
            Some(value),
            "not allowed with files_of",
        );
    }
    // The fluid engine refuses both keys, naming the RPC engine.
    let fluid = reader("").replacen(
        "duration_s = 10.0",
        "duration_s = 10.0\nengine = \"fluid\"",
        1,
    );
    expect(
        &fluid,
        "job[0].processes[1].after",
        Some("0"),
        "RPC-level engine only",
    );
    expect(
        &fluid.replacen("after = 0\n", "", 1),
        "job[0].processes[1].files_of",
        Some("0"),
        "RPC-level engine only",
    );
}

#[test]
fn the_phases_barrier_spans_one_stage() {
    // Job alpha phased; a second group after it (`read`); `more` appended to alpha.
    let alpha = |read_shape: &str, more: &str| {
        with(
            "numjobs = 4\n",
            &format!("numjobs = 4\n[job.processes.shape]\nkind = \"phases\"\nphases = 2\ncompute_s = 1.0\nphase_size = \"256M\"\n[[job.processes]]\nrw = \"read\"\nbs = \"1M\"\nsize = \"512M\"\nnumjobs = 4\nafter = 0\nfiles_of = 0\n{read_shape}{more}"),
        )
    };
    // The read group not phased: a stage of its own, allowed.
    Scenario::from_toml_str(&alpha("", ""), FILE).unwrap();
    // Phased with other rounds and compute time: its own barrier, allowed.
    let read_phased = "[job.processes.shape]\nkind = \"phases\"\nphases = 4\ncompute_s = 0.5\nphase_size = \"128M\"\n";
    Scenario::from_toml_str(&alpha(read_phased, ""), FILE).unwrap();
    // A third group in the read's stage must share its barrier.
    expect(
        &alpha(
            read_phased,
            "[[job.processes]]\nrw = \"read\"\nbs = \"1M\"\nsize = \"512M\"\nafter = 0\n",
        ),
        "job[0].processes[2].shape.kind",
        None,
        "the groups with after = 0",
    );
    // A group that starts with the job must still share the first barrier.
    expect(
        &alpha(
            "",
            "[[job.processes]]\nrw = \"read\"\nbs = \"1M\"\nsize = \"512M\"\n",
        ),
        "job[0].processes[2].shape.kind",
        None,
        "the groups that start with the job",
    );
}

/// Device profiles named from `[[device]]`: shipped names, paths relative to the scenario
/// file, refusals, and seeds as replications in a run.
mod device_profiles {
    use super::*;

    const PROFILED: &str = r#"
name = "profiled"

[simulation]
duration_s = 2.0

[cluster]
clients = 2

[[device]]
name = "disk"
profile = "PROFILE"

[[oss]]
name = "oss0"
osts = 1
device = "disk"

[[job]]
id = "a"
nodes = 1
clients = [0]
[[job.processes]]
rw = "write"
bs = "1M"
size = "64M"
numjobs = 4

[[job]]
id = "b"
nodes = 1
clients = [1]
[[job.processes]]
rw = "read"
bs = "1M"
size = "64M"
numjobs = 2
"#;

    fn with_profile(p: &str) -> String {
        PROFILED.replace("PROFILE", p)
    }

    #[test]
    fn a_shipped_profile_is_named_by_name() {
        for name in pfsqos_profile::SHIPPED_NAMES {
            let s = Scenario::from_toml_str(&with_profile(name), FILE).unwrap();
            let p = s.devices[0].resolved_profile.as_ref().unwrap();
            assert_eq!(&p.name, name);
        }
    }

    #[test]
    fn a_profile_and_a_table_together_are_refused() {
        let text = with_profile("ssd-nvme").replace(
            "profile = \"ssd-nvme\"",
            "profile = \"ssd-nvme\"\nread = [{ size = \"1M\", bandwidth_mib_s = 1.0 }]",
        );
        let e = Scenario::from_toml_str(&text, FILE).unwrap_err();
        assert_eq!(e.field, "device[0].read", "{e}");
        assert!(e.message.contains("either `profile` or the table"), "{e}");
    }

    #[test]
    fn an_unknown_profile_is_refused_naming_the_field() {
        let e = Scenario::from_toml_str(&with_profile("floppy"), FILE).unwrap_err();
        assert_eq!(e.field, "device[0].profile", "{e}");
        assert!(e.message.contains("not a shipped profile"), "{e}");
    }

    fn profile_file(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn varied_profile_text() -> String {
        let mut p = pfsqos_profile::shipped("ssd-sata").unwrap();
        p.name = "varied".into();
        p.variability = [(0.0, 0.5), (0.5, 1.0), (0.99, 2.0), (1.0, 4.0)]
            .iter()
            .map(|&(quantile, factor)| pfsqos_profile::QuantileRow { quantile, factor })
            .collect();
        p.to_toml_string()
    }

    #[test]
    fn a_profile_file_is_read_relative_to_the_scenario_and_seeds_replicate() {
        let dir = std::env::temp_dir().join(format!("pfsqos-profile-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("profiles")).unwrap();
        profile_file(&dir, "profiles/varied.toml", &varied_profile_text());
        let scenario = profile_file(&dir, "s.toml", &with_profile("profiles/varied.toml"));
        let s = Scenario::load(&scenario).unwrap();
        let run = |seed| {
            let out = pfsqos_sim::run(&s, "nobw", seed, &mut |_, _| {}).unwrap();
            format!("{out:?}")
        };
        let (a, b) = (run(1), run(2));
        assert_eq!(a, run(1), "one seed gives the same bytes");
        assert_ne!(a, b, "two seeds are two replications");
        // A broken profile file is refused with its own file and field.
        profile_file(
            &dir,
            "profiles/varied.toml",
            &varied_profile_text().replace("concurrency = 4", "concurrency = 0"),
        );
        let e = Scenario::load(&scenario).unwrap_err();
        assert_eq!(e.field, "device[0].profile", "{e}");
        assert!(
            e.message.contains("varied.toml: field `concurrency`"),
            "{e}"
        );
        // Text alone cannot resolve a path.
        let e = Scenario::from_toml_str(&with_profile("profiles/varied.toml"), FILE).unwrap_err();
        assert!(e.message.contains("load the scenario from a file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
