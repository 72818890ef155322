//! The ossd as its control loop sees it: [`Controlled`] for the daemon's shared state. Kept
//! apart so that [`crate::control`] does not depend on [`crate::ossd`] (which starts it).

use std::collections::BTreeMap;

use pfsqos_core::control::agent::OstSample;
use pfsqos_core::control::ControlWrite;
use pfsqos_core::model::{JobId, Nid};
use pfsqos_wire::protocol::RemoteError;

use crate::control::Controlled;
use crate::ossd::{Shared, SERVICE_PREFIX};

impl Controlled for Shared {
    fn now_ns(&self) -> u64 {
        Shared::now_ns(self)
    }

    fn ost_count(&self) -> usize {
        self.osts.len()
    }

    fn sample(&self) -> Vec<OstSample> {
        self.osts
            .iter()
            .enumerate()
            .map(|(i, ost)| {
                // `--device-sensor ossd`: RPCs an I/O thread has started and not completed
                // (the requests at the OST's I/O) and the time they spent there.
                // `--device-sensor block`: the block device's `in_flight` and
                // `time_in_queue` (the kernel's own queue for the disk under the OST).
                let (device_queue_rpcs, device_time_in_queue_ns) = self.device_counters(i);
                OstSample {
                    arrived: ost.take_arrivals(),
                    served_totals: ost.served_totals(),
                    queued_rpcs: ost.queued_rpcs(),
                    device_queue_rpcs,
                    device_time_in_queue_ns,
                }
            })
            .collect()
    }

    fn apply(&self, write: &ControlWrite) -> Result<(), RemoteError> {
        let (param, text) = write.param_and_text();
        self.set_params(&format!("{SERVICE_PREFIX}{param}"), text)?;
        Ok(())
    }

    fn clients(&self) -> Vec<Nid> {
        lock(&self.clients).nids()
    }

    fn job_nodes_generation(&self) -> u64 {
        lock(&self.job_nodes).generation()
    }

    fn job_nodes(&self) -> BTreeMap<JobId, u32> {
        lock(&self.job_nodes).snapshot()
    }

    fn set_client_limit(&self, nid: Nid, limit_bytes_per_s: Option<u64>) -> bool {
        lock(&self.clients).set_limit(nid, limit_bytes_per_s)
    }

    fn clear_client_limits(&self) {
        lock(&self.clients).clear_limits()
    }

    fn note_control_cost(&self, cpu_ns: u64, wall_ns: u64) {
        self.control_cost.note(cpu_ns, wall_ns)
    }

    fn note_unnamable_jobs(&self, count: u64) {
        self.control_cost.note_unnamable_jobs(count)
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use crate::ossd::{PARAM_POLICIES, PARAM_TBF_RULE};
    use pfsqos_core::control::agent::Ledger;
    use pfsqos_core::control::{DomainId, DomainWrite};
    use pfsqos_wire::protocol::Errno;

    use super::*;
    use crate::control::{apply_write, clean_up, OSS_DOMAIN};

    const SERVER_KEY: &[u8] = b"test-server-key-fedcba9876543210";

    async fn daemon(tmp: &tempfile::TempDir) -> crate::ossd::Ossd {
        let cfg = crate::ossd::OssdConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            vec![tmp.path().join("ost0")],
            b"unit-test-key-0123456789".to_vec(),
            SERVER_KEY.to_vec(),
        );
        crate::ossd::Ossd::start(cfg).await.unwrap()
    }

    fn rule(text: &str) -> DomainWrite {
        DomainWrite {
            domain: OSS_DOMAIN,
            write: ControlWrite::tbf_rule(text.to_string()),
        }
    }

    fn rule_names(shared: &Shared) -> Vec<String> {
        let text = shared.get_param(PARAM_TBF_RULE).unwrap();
        let listing = pfsqos_core::sched::tbf::TbfRuleListing::parse(&text).unwrap();
        listing.regular[0]
            .rules
            .iter()
            .map(|r| r.name.clone())
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn refused_writes_get_lctls_errors_and_are_not_recorded() {
        let tmp = tempfile::tempdir().unwrap();
        let ossd = daemon(&tmp).await;
        let shared = ossd.shared();
        let mut ledger = Ledger::default();
        let start = rule("start ja jobid={a} rate=5");
        // TBF is not running yet: the same refusal an administrator gets.
        let e = apply_write(shared, &start, &mut ledger).unwrap_err();
        let admin = shared
            .set_params("ost.OSS.ost_io.nrs_tbf_rule", "start ja jobid={a} rate=5")
            .unwrap_err();
        assert_eq!(e, admin);
        // Lustre parses a start with the head's TBF type; with none it is EINVAL (nrs_tbf.c
        // nrs_tbf_id_parse).
        assert_eq!(e.errno, Errno::EINVAL, "{e}");
        assert_eq!(ledger, Ledger::default());

        let tbf = DomainWrite {
            domain: OSS_DOMAIN,
            write: ControlWrite::NrsPolicies("tbf jobid".into()),
        };
        apply_write(shared, &tbf, &mut ledger).unwrap();
        let bad_rate =
            apply_write(shared, &rule("start jb jobid={b} rate=0"), &mut ledger).unwrap_err();
        assert_eq!(bad_rate.errno, Errno::EINVAL, "{bad_rate}");
        apply_write(shared, &start, &mut ledger).unwrap();
        let twice = apply_write(shared, &start, &mut ledger).unwrap_err();
        assert_eq!(twice.errno, Errno::EEXIST, "{twice}");
        let elsewhere = DomainWrite {
            domain: DomainId(1),
            write: ControlWrite::tbf_rule("stop ja"),
        };
        let e = apply_write(shared, &elsewhere, &mut ledger).unwrap_err();
        assert_eq!(e.errno, Errno::ENODEV, "{e}");
        assert_eq!(ledger.rules.iter().collect::<Vec<_>>(), vec!["ja"]);
        assert!(ledger.policies_changed);
        ossd.shutdown().await;
    }

    /// The device queue counts the RPCs I/O threads have started and not completed: while
    /// writes run against a slow OST it is seen above zero and never above the I/O threads,
    /// and once every write is answered it is zero again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn device_queue_counts_rpcs_in_service() {
        use pfsqos_wire::client::{Identity, OssClient};
        use pfsqos_wire::protocol::Role;
        let tmp = tempfile::tempdir().unwrap();
        let key = b"unit-test-key-0123456789".to_vec();
        let mut cfg = crate::ossd::OssdConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            vec![tmp.path().join("ost0")],
            key.clone(),
            SERVER_KEY.to_vec(),
        );
        cfg.threads = 2;
        cfg.cpts = 1;
        // 256 KiB/s: each 64 KiB write holds its I/O thread for about 250 ms.
        cfg.ceiling_bytes_per_s = Some(256 << 10);
        let ossd = crate::ossd::Ossd::start(cfg).await.unwrap();
        let addr = ossd.local_addr();
        let writers: Vec<_> = (0..4u64)
            .map(|i| {
                let key = key.clone();
                tokio::spawn(async move {
                    let mut c = OssClient::connect(addr, &key, Role::Client).await.unwrap();
                    c.write(&Identity::test("dq.0"), 0, i, 0, &[7u8; 64 << 10], false)
                        .await
                        .unwrap();
                })
            })
            .collect();
        let shared = ossd.shared();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut seen_max = 0;
        while writers.iter().any(|w| !w.is_finished()) {
            let q = shared.sample()[0].device_queue_rpcs;
            assert!(q <= 2, "{q} RPCs in service with 2 I/O threads");
            seen_max = seen_max.max(q);
            assert!(
                std::time::Instant::now() < deadline,
                "writes never finished"
            );
            tokio::task::yield_now().await;
        }
        for w in writers {
            w.await.unwrap();
        }
        assert!(seen_max >= 1, "never saw an RPC in service");
        // A reply leaves after its RPC is out of service.
        assert_eq!(shared.sample()[0].device_queue_rpcs, 0);
        ossd.shutdown().await;
    }

    /// `--device-sensor block`: the control loop's device queue and time in queue are the
    /// block device's (`/sys/block/<dev>/stat` under the OST directory), and the time in queue
    /// never goes back between samples; an OST on no block device fails the start. Skipped
    /// where the temporary directory is on no block device (tmpfs, overlay).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_block_device_sensor_reads_the_disk_under_the_ost() {
        use pfsqos_wire::client::{Identity, OssClient};
        let tmp = tempfile::tempdir().unwrap();
        let root = std::path::Path::new(pfsqos_linux::SYSFS_ROOT);
        let device = match pfsqos_linux::block_device_of_dir(tmp.path(), root) {
            Ok(d) => d,
            Err(e) => {
                println!(
                    "skipped: {} is on no block device ({e})",
                    tmp.path().display()
                );
                return;
            }
        };
        let key = b"unit-test-key-0123456789".to_vec();
        let mut cfg = crate::ossd::OssdConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            vec![tmp.path().join("ost0")],
            key.clone(),
            SERVER_KEY.to_vec(),
        );
        cfg.device_sensor = crate::ossd::DeviceSensor::Block;
        let ossd = crate::ossd::Ossd::start(cfg).await.unwrap();
        let shared = ossd.shared();
        let first = shared.sample()[0].device_time_in_queue_ns;
        // The disk has served I/O since boot; the ossd's own counter would still be 0 here.
        assert!(
            first > 0,
            "the block device's time in queue, not the ossd's"
        );
        // The kernel's counter for the same disk, read after the daemon's: at least as far.
        let stat =
            pfsqos_linux::BlockStat::parse(&std::fs::read_to_string(&device.stat_path).unwrap())
                .unwrap();
        assert!(stat.time_in_queue_ms.saturating_mul(1_000_000) >= first);
        assert_eq!(first % 1_000_000, 0, "the kernel counts whole milliseconds");
        let mut c =
            OssClient::connect(ossd.local_addr(), &key, pfsqos_wire::protocol::Role::Client)
                .await
                .unwrap();
        c.write(&Identity::test("bd.0"), 0, 1, 0, &[7u8; 1 << 20], false)
            .await
            .unwrap();
        c.sync(&Identity::test("bd.0"), 0, 1).await.unwrap();
        assert!(shared.sample()[0].device_time_in_queue_ns >= first);
        ossd.shutdown().await;
        // A directory on no block device (tmpfs) is refused at start with the reason.
        let Ok(shm) = tempfile::tempdir_in("/dev/shm") else {
            println!("no /dev/shm: the refusal is not checked");
            return;
        };
        if pfsqos_linux::block_device_of_dir(shm.path(), root).is_ok() {
            println!("/dev/shm is on a block device here: the refusal is not checked");
            return;
        }
        let mut cfg = crate::ossd::OssdConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            vec![shm.path().join("ost0")],
            key,
            SERVER_KEY.to_vec(),
        );
        cfg.device_sensor = crate::ossd::DeviceSensor::Block;
        let err = crate::ossd::Ossd::start(cfg).await.err().expect("refused");
        assert!(
            format!("{err:#}").contains("--device-sensor block"),
            "{err:#}"
        );
    }

    /// A client limit must name a client the observation listed and carry a rate within the
    /// protocol's bounds; the clean-up lifts every limit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn client_writes_are_checked_and_lifted_at_clean_up() {
        use crate::control::apply_client_write;
        use pfsqos_core::control::{ClientId, ClientWrite};
        use pfsqos_core::model::{LNet, NetKind};
        use pfsqos_wire::protocol::{
            ClientLimit, CLIENT_LIMIT_BYTES_PER_S_MAX, CLIENT_LIMIT_BYTES_PER_S_MIN,
        };
        let tmp = tempfile::tempdir().unwrap();
        let ossd = daemon(&tmp).await;
        let shared = ossd.shared();
        let nid = Nid::ipv4(
            10,
            0,
            0,
            1,
            LNet {
                kind: NetKind::Tcp,
                num: 0,
            },
        );
        lock(&shared.clients).connect_for_test(nid);
        let clients = shared.clients();
        assert_eq!(clients, vec![nid]);
        let write = |client, limit_bytes_per_s| ClientWrite {
            client: ClientId(client),
            limit_bytes_per_s,
        };
        let e = apply_client_write(shared, &clients, &write(1, Some(8 << 20))).unwrap_err();
        assert!(e.contains("no client 1"), "{e}");
        for bad in [
            0,
            CLIENT_LIMIT_BYTES_PER_S_MIN - 1,
            CLIENT_LIMIT_BYTES_PER_S_MAX + 1,
            u64::MAX,
        ] {
            let e = apply_client_write(shared, &clients, &write(0, Some(bad))).unwrap_err();
            assert!(e.contains("outside"), "{e}");
        }
        assert_eq!(
            lock(&shared.clients).limit_for_test(nid),
            ClientLimit::Unlimited
        );
        apply_client_write(shared, &clients, &write(0, Some(8 << 20))).unwrap();
        assert_eq!(
            lock(&shared.clients).limit_for_test(nid),
            ClientLimit::BytesPerS(8 << 20)
        );
        clean_up(shared, &mut Ledger::default());
        assert_eq!(
            lock(&shared.clients).limit_for_test(nid),
            ClientLimit::Unlimited
        );
        ossd.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn clean_up_stops_only_the_controllers_rules() {
        let tmp = tempfile::tempdir().unwrap();
        let ossd = daemon(&tmp).await;
        let shared = ossd.shared();
        shared.set_params(PARAM_POLICIES, "tbf jobid").unwrap();
        shared
            .set_params(PARAM_TBF_RULE, "start adm jobid={x} rate=9")
            .unwrap();
        let mut ledger = Ledger::default();
        for text in [
            "start ja jobid={a} rate=5",
            "start jb jobid={b} rate=6",
            "stop jb",
            "start jc jobid={c} rate=7",
        ] {
            apply_write(shared, &rule(text), &mut ledger).unwrap();
        }
        assert_eq!(rule_names(shared), vec!["jc", "ja", "adm", "default"]);
        // The controller left the policy alone: TBF stays, with the administrator's rule.
        clean_up(shared, &mut ledger);
        assert_eq!(rule_names(shared), vec!["adm", "default"]);
        assert!(ledger.rules.is_empty());

        // It had changed the policy: back to FIFO, where no rule listing exists.
        apply_write(shared, &rule("start jd jobid={d} rate=5"), &mut ledger).unwrap();
        ledger.policies_changed = true;
        clean_up(shared, &mut ledger);
        let e = shared.get_param(PARAM_TBF_RULE).unwrap_err();
        assert_eq!(e.errno, Errno::ENODEV, "{e}");
        ossd.shutdown().await;
    }
}
