//! Job ids are client input: whatever bytes a job id holds (spaces, braces, commas, `&`, `=`,
//! quotes, newlines, non-UTF-8), every command the agent writes is one well-formed
//! `nrs_tbf_rule` command on a rule of its own, naming only a job id that appears verbatim and
//! carries no TBF syntax (or, for a user limit's first-sight rule, the configured `*.<uid>`).

use std::collections::BTreeSet;

use pfsqos_agent::lctl::{Lctl, LctlCounts, LctlError};
use pfsqos_agent::{Agent, AgentConfig};
use pfsqos_core::control::rules::job_id_is_rule_safe;
use pfsqos_core::model::JobId;
use pfsqos_core::sched::tbf::{TbfCommand, TbfOp};
use proptest::prelude::*;

/// An OSS whose job_stats lists the given raw job ids (quoted and escaped as 2.16+ prints
/// them, or raw as 2.12 does), growing every poll; records every write.
struct FakeOss {
    ids: Vec<Vec<u8>>,
    quoted: bool,
    round: u64,
    writes: Vec<Vec<String>>,
    counts: LctlCounts,
}

fn quote(id: &[u8]) -> String {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b".@-_:/".contains(&b);
    if !id.starts_with(b"@") && id.iter().all(|&b| plain(b) && b != b':') {
        return String::from_utf8(id.to_vec()).unwrap();
    }
    let mut s = String::from("\"");
    for &b in id {
        if plain(b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s.push('"');
    s
}

impl FakeOss {
    fn job_stats(&self) -> String {
        let mut out = String::from("obdfilter.fs-OST0000.job_stats=\njob_stats:\n");
        for (i, id) in self.ids.iter().enumerate() {
            let shown = if self.quoted {
                quote(id)
            } else {
                // Raw, as 2.12 prints it; lctl's bytes reach the agent through a lossy
                // UTF-8 conversion.
                String::from_utf8_lossy(id).into_owned()
            };
            let n = self.round * (i as u64 + 1);
            out.push_str(&format!(
                "- job_id:          {shown}\n  snapshot_time:   {}\n  write_bytes:     {{ samples: {n:>11}, unit: bytes, min: 4096, max: 4096, sum: {:>15} }}\n",
                100 + self.round,
                n * 4096
            ));
        }
        out
    }
}

impl Lctl for FakeOss {
    fn run(&mut self, args: &[String]) -> Result<String, LctlError> {
        self.counts.commands += 1;
        match (args[0].as_str(), args.last().map(String::as_str)) {
            ("get_param", Some("ost.OSS.ost_io.nrs_policies")) => {
                Ok("\nregular_requests:\n  - name: tbf jobid\n    state: started\n".into())
            }
            ("get_param", Some("obdfilter.*.job_stats")) => {
                self.round += 1;
                Ok(self.job_stats())
            }
            ("get_param", _) | ("list_param", _) => Ok(String::new()),
            _ => {
                self.writes.push(args.to_vec());
                Ok(String::new())
            }
        }
    }
    fn counts(&self) -> LctlCounts {
        self.counts
    }
}

fn job_id_bytes() -> impl Strategy<Value = Vec<u8>> {
    let special = prop::sample::select(b" {},&=\"'\n\\*:@./x1\xff\xc3".to_vec());
    prop::collection::vec(prop_oneof![special, any::<u8>(), b'a'..=b'z'], 1..40)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        rng_seed: proptest::test_runner::RngSeed::Fixed(17),
        ..ProptestConfig::default()
    })]
    #[test]
    fn no_job_id_makes_a_malformed_or_foreign_command(
        ids in prop::collection::vec(job_id_bytes(), 1..12),
        quoted in any::<bool>(),
        limit in any::<bool>(),
    ) {
        let mut text = "controller = \"adaptbf\"\nost_capacity_rpcs_per_s = 500\ncpts = 2\nrules_max = 4\n".to_string();
        if limit {
            text.push_str("[[limits]]\nuser = 1\nbytes_per_s = 100000\n");
        }
        let config = AgentConfig::parse(&text).unwrap();
        let oss = FakeOss { ids: ids.clone(), quoted, round: 0, writes: Vec::new(), counts: LctlCounts::default() };
        let mut agent = Agent::new(config, oss);
        agent.start().unwrap();
        for _ in 0..3 {
            agent.period();
        }
        agent.shutdown();
        // Not vacuous: a job with a rule-safe id (never the empty one) gets a rule.
        let any_safe = ids.iter().any(|b| {
            std::str::from_utf8(b).ok().and_then(|s| JobId::new(s).ok()).is_some_and(|j| job_id_is_rule_safe(&j))
        });
        let starts = agent.lctl().writes.iter().filter(|a| a[1].contains("=start ") && !a[1].contains("pfq_rest") && !a[1].contains("pfq_f0")).count();
        prop_assert!(!any_safe || starts > 0, "no rule written for {:?}", ids);
        let listed: BTreeSet<String> = ids.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
        for argv in &agent.lctl().writes {
            prop_assert_eq!(argv.len(), 2, "{:?}", argv);
            prop_assert_eq!(&argv[0], "set_param");
            let (param, value) = argv[1].split_once('=').unwrap();
            if param == "ost.OSS.ost_io.nrs_policies" {
                continue;
            }
            prop_assert_eq!(param, "ost.OSS.ost_io.nrs_tbf_rule");
            prop_assert!(!value.contains('\n'));
            let cmd = TbfCommand::parse(value);
            prop_assert!(cmd.is_ok(), "{:?}", value);
            let name = match cmd.unwrap().op {
                TbfOp::Start { name, condition, .. } => {
                    if name == "pfq_f0" {
                        // The user limit's first-sight rule: its pattern comes from the
                        // configuration (uid 1), never from a job id.
                        prop_assert!(limit, "{:?}", value);
                        prop_assert_eq!(condition.text.as_str(), "jobid={*.1}");
                    } else if name != "pfq_rest" {
                        let job = condition.text.strip_prefix("jobid={").and_then(|t| t.strip_suffix('}'));
                        prop_assert!(job.is_some(), "{:?}", value);
                        let job = job.unwrap();
                        prop_assert!(job_id_is_rule_safe(&JobId::new(job).unwrap()), "{:?}", value);
                        prop_assert!(listed.contains(job), "{:?} names no listed job", value);
                    } else {
                        prop_assert_eq!(condition.text.as_str(), "jobid={*}");
                    }
                    name
                }
                TbfOp::Change { name, .. } | TbfOp::Stop { name } => name,
            };
            prop_assert!(name.starts_with("pfq") && name != "default", "{:?}", value);
        }
        prop_assert!(agent.ledger().rules.is_empty(), "shutdown stops every rule");
    }
}
