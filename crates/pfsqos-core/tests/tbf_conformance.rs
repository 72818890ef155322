//! TBF conformance with Lustre, through `Nrs` (the same scripts run through `pfsqos lctl`
//! against a live ossd in `pfsqos-ossd/tests/ossd/tbf_conformance.rs`), and a fuzz of the parser
//! over byte strings.

use pfsqos_core::errno::Errno;
use pfsqos_core::sched::nrs::{tbf_rule_listing, write_service, Nrs, NrsError, PARAM_TBF_RULE};
use pfsqos_core::sched::tbf::{
    ClassType, LustreVersion, NrsQueue, TbfCommand, TbfConfig, TbfOp, TbfRuleListing,
};
use proptest::prelude::*;

include!("tbf_conformance/cases.rs");

/// An ost_io service of one CPU partition: a regular and an HP head, every write applied to
/// the regular head and then the HP head, stopping at the first error, as Lustre does.
struct Service {
    config: TbfConfig,
    reg: Nrs<u32>,
    hp: Nrs<u32>,
}

impl Service {
    fn new(version: LustreVersion) -> Service {
        let config = TbfConfig::for_version(version);
        Service {
            config,
            reg: Nrs::with_config(NrsQueue::Regular, config.into()),
            hp: Nrs::with_config(NrsQueue::HighPriority, config.into()),
        }
    }

    fn write(&mut self, param: Param, text: &str) -> Result<(), NrsError> {
        write_service([&mut self.reg, &mut self.hp], |head| match param {
            Param::Policies => head.write_policies(0, text),
            Param::Rule => head.write_policy_param(0, PARAM_TBF_RULE, text),
            _ => unreachable!("not a write"),
        })
    }

    fn listing(&self) -> Result<TbfRuleListing, NrsError> {
        tbf_rule_listing(&[&self.reg], Some(&[&self.hp]), self.config.listing_form())
    }
}

/// `name conditions rate` of the regular CPT 0 lines.
fn rule_lines(l: &TbfRuleListing) -> Vec<String> {
    l.regular
        .first()
        .map(|c| {
            c.rules
                .iter()
                .map(|r| format!("{} {} {}", r.name, r.conditions, r.rate_rpcs_per_s))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn lustre_scripts_replay_through_nrs() {
    let mut steps = 0;
    for script in SCRIPTS {
        let version = LustreVersion::parse(script.version).expect(script.version);
        let mut svc = Service::new(version);
        for (i, step) in script.steps.iter().enumerate() {
            let at = format!(
                "{} step {i} `{}` ({})",
                script.name,
                step.text.escape_debug(),
                step.source
            );
            match (step.param, step.expect) {
                (Param::Policies | Param::Rule, Expect::Ok) => {
                    if let Err(e) = svc.write(step.param, step.text) {
                        panic!("{at}: expected success, got {e}");
                    }
                }
                (Param::Policies | Param::Rule, Expect::Err(errno)) => {
                    match svc.write(step.param, step.text) {
                        Ok(()) => panic!("{at}: expected {errno}, got success"),
                        Err(e) => assert_eq!(e.errno, errno, "{at}: {e}"),
                    }
                }
                (Param::ReadRules | Param::ReadHpRules, Expect::Rules(lines)) => {
                    let l = svc.listing().unwrap_or_else(|e| panic!("{at}: {e}"));
                    // The printed listing parses back to itself.
                    assert_eq!(
                        TbfRuleListing::parse(&l.to_string()).as_ref(),
                        Ok(&l),
                        "{at}"
                    );
                    let section = if step.param == Param::ReadRules {
                        l
                    } else {
                        TbfRuleListing {
                            regular: l.high_priority.clone().expect("HP section"),
                            high_priority: None,
                        }
                    };
                    assert_eq!(rule_lines(&section), lines, "{at}");
                }
                (Param::ReadRules, Expect::Err(errno)) => {
                    let e = svc.listing().expect_err(&at);
                    assert_eq!(e.errno, errno, "{at}");
                }
                (Param::ReadPolicies, Expect::Policy(name)) => {
                    assert_eq!(svc.reg.policy_name(), name, "{at}");
                }
                other => panic!("{at}: malformed step {other:?}"),
            }
            steps += 1;
        }
    }
    assert!(steps >= 250, "only {steps} steps replayed");
}

/// The listing keeps the administrator's text in both forms: the expression form prints the
/// condition as written, the legacy form the text between the braces.
#[test]
fn listing_preserves_condition_text_in_both_forms() {
    for (version, line) in [
        ("2.17.51", "a  jobid = { dd.*   x } 7"),
        ("2.17.50", "a { dd.*   x } 7"),
    ] {
        let mut svc = Service::new(LustreVersion::parse(version).unwrap());
        svc.write(Param::Policies, "tbf jobid").unwrap();
        svc.write(Param::Rule, "start a  jobid = { dd.*   x } rate=7")
            .unwrap();
        let l = svc.listing().unwrap();
        assert_eq!(rule_lines(&l)[0], line, "{version}");
    }
}

// ------------------------------------------------------------------- fuzzing

/// Text that reaches deep into the parser: the grammar's characters and words.
fn grammar_text() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "start ",
        "change ",
        "stop ",
        "reg ",
        "hp ",
        "a",
        "b",
        "default",
        " ",
        "  ",
        "{",
        "}",
        "=",
        "&",
        ",",
        "*",
        "@",
        ".",
        "[",
        "]",
        "-",
        "/",
        ":",
        "+",
        "\n",
        "\t",
        "jobid",
        "nid",
        "opcode",
        "uid",
        "gid",
        "projid",
        "nodemap",
        "rate=",
        "rank=",
        "realtime=",
        "0",
        "1",
        "0x1f",
        "017",
        "255",
        "4294967297",
        "tcp",
        "o2ib1",
        "lo",
        "ost_read",
        "dd.*",
        "x*y*",
        "10.0.0.[0-8/2]",
        "10.0.0.0/8",
        "fe80::1",
        "default",
        "é",
    ]);
    prop::collection::vec(atoms, 0..40).prop_map(|v| v.concat())
}

fn any_type() -> impl Strategy<Value = Option<ClassType>> {
    prop::sample::select(vec![
        None,
        Some(ClassType::GENERIC),
        Some(ClassType::parse("jobid").unwrap()),
        Some(ClassType::parse("nid").unwrap()),
        Some(ClassType::parse("jobid+opcode").unwrap()),
    ])
}

fn any_version() -> impl Strategy<Value = LustreVersion> {
    prop::sample::select(vec![
        LustreVersion::V2_14,
        LustreVersion::V2_17,
        LustreVersion::MASTER,
    ])
}

/// A parsed command prints text that parses back to the same command.
fn round_trips(text: &str, t: Option<ClassType>, v: LustreVersion) -> Result<(), TestCaseError> {
    if let Ok(cmd) = TbfCommand::parse_for(text, t, v) {
        let again = TbfCommand::parse_for(&cmd.to_string(), t, v);
        prop_assert_eq!(again, Ok(cmd), "text {:?}", text);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Any bytes: no panic, an answer (every input is at most 4095 bytes or refused at once,
    /// so work and memory are bounded by the command length), and round trips.
    #[test]
    fn any_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600),
                             t in any_type(), v in any_version()) {
        let text = String::from_utf8_lossy(&bytes);
        round_trips(&text, t, v)?;
        let mut n: Nrs<u32> = Nrs::with_config(NrsQueue::Regular, TbfConfig::for_version(v).into());
        let _ = n.write_policies(0, &text);
        let _ = n.write_policy_param(0, PARAM_TBF_RULE, &text);
    }

    #[test]
    fn grammar_text_never_panics_and_round_trips(text in grammar_text(),
                                                 t in any_type(), v in any_version()) {
        round_trips(&text, t, v)?;
        let mut n: Nrs<u32> = Nrs::with_config(NrsQueue::Regular, TbfConfig::for_version(v).into());
        let _ = n.write_policies(0, "tbf");
        let _ = n.write_policy_param(0, PARAM_TBF_RULE, &text);
        let _ = n.write_policies(0, &text);
    }

    /// Every rule a head accepted is listed so that `start <name> <conditions> rate=<rate>`
    /// re-parses to the same condition and rate (conditions with a newline excepted: Lustre
    /// prints them raw too, which splits the listing line).
    #[test]
    fn listing_reparses_to_the_same_rules(conds in prop::collection::vec(grammar_text(), 1..8),
                                          v in prop::sample::select(vec![
                                              LustreVersion::V2_17, LustreVersion::MASTER])) {
        let config = TbfConfig::for_version(v);
        let mut n: Nrs<u32> = Nrs::with_config(NrsQueue::Regular, config.into());
        n.write_policies(0, "tbf").unwrap();
        let mut accepted = Vec::new();
        for (i, c) in conds.iter().enumerate() {
            if c.contains('\n') {
                continue;
            }
            let text = format!("start r{i} {c} rate={}", i + 1);
            if n.write_policy_param(0, PARAM_TBF_RULE, &text).is_ok() {
                accepted.push(TbfCommand::parse_for(&text, Some(ClassType::generic(v)), v).unwrap());
            }
        }
        let listing = tbf_rule_listing(&[&n], None, config.listing_form()).unwrap();
        let listing = TbfRuleListing::parse(&listing.to_string()).unwrap();
        let listed = &listing.regular[0].rules;
        prop_assert_eq!(listed.len(), accepted.len() + 1);
        for cmd in &accepted {
            let TbfOp::Start { name, condition, rate_rpcs_per_s, .. } = &cmd.op else {
                unreachable!()
            };
            let line = listed.iter().find(|r| &r.name == name).unwrap();
            let again = TbfCommand::parse_for(
                &format!("start {} {} rate={}", line.name, line.conditions, line.rate_rpcs_per_s),
                Some(ClassType::generic(v)),
                v,
            ).unwrap();
            let TbfOp::Start { condition: c2, rate_rpcs_per_s: r2, .. } = again.op else {
                unreachable!()
            };
            prop_assert_eq!(&c2, condition);
            prop_assert_eq!(&r2, rate_rpcs_per_s);
        }
    }
}

/// Pathological inputs finish: a jobid pattern of thousands of stars against a near miss,
/// and the longest command Lustre accepts.
#[test]
fn worst_case_inputs_are_bounded() {
    let mut n: Nrs<u32> = Nrs::new();
    n.write_policies(0, "tbf jobid").unwrap();
    let stars = format!("start s jobid={{{}b}}", "*a".repeat(2000));
    assert!(stars.len() <= 4095);
    n.write_policy_param(0, PARAM_TBF_RULE, &stars).unwrap();
    // Class creation matches the rule against a 31-byte jobid that misses at the end.
    use pfsqos_core::model::{JobId, RpcTags};
    use pfsqos_core::sched::RequestScheduler;
    let tags = RpcTags {
        job: JobId::new(&"a".repeat(31)).unwrap(),
        ..RpcTags::default()
    };
    n.enqueue(0, &tags, 1);
    assert_eq!(n.tbf().unwrap().class_state(&tags).unwrap().rule, "default");
    let long = format!("start l uid={{{}}}", "1 ".repeat(2035));
    assert!(long.len() <= 4095);
    n.write_policies(0, "tbf").unwrap();
    n.write_policy_param(0, PARAM_TBF_RULE, &long).unwrap();
    let too_long = format!("start l uid={{{}}}", "1 ".repeat(2050));
    assert_eq!(
        n.write_policy_param(0, PARAM_TBF_RULE, &too_long)
            .unwrap_err()
            .errno,
        Errno::EINVAL
    );
}
