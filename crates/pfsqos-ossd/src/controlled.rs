//! The ossd as its control loop sees it: [`Controlled`] for the daemon's shared state. Kept
//! apart so that [`crate::control`] does not depend on [`crate::ossd`] (which starts it).

use pfsqos_core::control::agent::OstSample;
use pfsqos_core::control::ControlWrite;
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
            .map(|ost| OstSample {
                arrived: ost.take_arrivals(),
                served_totals: ost.served_totals(),
                queued_rpcs: ost.queued_rpcs(),
                // The ossd does not sample its devices' queues yet (issue #15 reads the block
                // layer's counters).
                device_queue_rpcs: 0,
            })
            .collect()
    }

    fn apply(&self, write: &ControlWrite) -> Result<(), RemoteError> {
        let (param, text) = write.param_and_text();
        self.set_params(&format!("{SERVICE_PREFIX}{param}"), text)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::ossd::{PARAM_POLICIES, PARAM_TBF_RULE};
    use pfsqos_core::control::agent::Ledger;
    use pfsqos_core::control::{DomainId, DomainWrite};
    use pfsqos_wire::protocol::Errno;

    use super::*;
    use crate::control::{apply_write, clean_up, OSS_DOMAIN};

    async fn daemon(tmp: &tempfile::TempDir) -> crate::ossd::Ossd {
        let cfg = crate::ossd::OssdConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            vec![tmp.path().join("ost0")],
            b"unit-test-key-0123456789".to_vec(),
        );
        crate::ossd::Ossd::start(cfg).await.unwrap()
    }

    fn rule(text: &str) -> DomainWrite {
        DomainWrite {
            domain: OSS_DOMAIN,
            write: ControlWrite::NrsTbfRule(text.to_string()),
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
            write: ControlWrite::NrsTbfRule("stop ja".into()),
        };
        let e = apply_write(shared, &elsewhere, &mut ledger).unwrap_err();
        assert_eq!(e.errno, Errno::ENODEV, "{e}");
        assert_eq!(ledger.rules.iter().collect::<Vec<_>>(), vec!["ja"]);
        assert!(ledger.policies_changed);
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
