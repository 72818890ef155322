// Lustre TBF conformance scripts, shared by `pfsqos-core/tests/tbf_conformance.rs` (through
// `Nrs`) and `pfsqos-ossd/tests/ossd/tbf_conformance.rs` (through `pfsqos lctl` against a live
// ossd), which `include!` this file. Each step is a write or a read as Lustre's own tests or
// its C source dictate, with Lustre's answer and where it comes from.
//
// Sources are lustre-release at c881f8ebcb (master, after 2.17.57) unless a tag is named:
// * sanityn.sh / conf-sanity.sh: `lustre/tests/`, the line of the command; `$RUNAS_ID` is
//   500, `$client_nids` is `192.168.1.2@tcp 192.168.1.3@tcp`, `$NETTYPE` is `tcp`;
// * nrs_tbf.c: `lustre/ptlrpc/nrs_tbf.c`, the line of the function that decides;
// * nrs.c, lproc_ptlrpc.c: `lustre/ptlrpc/`; nidstrings.c: `lnet/lnet/nidstrings.c`.
//
// `Expect::Err` uses the errno Lustre returns, with one documented departure (zero NID-range
// stride, docs/tbf-conformance.md).

/// Which file a step reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// A write to `ost.OSS.ost_io.nrs_policies`.
    Policies,
    /// A write to `ost.OSS.ost_io.nrs_tbf_rule`.
    Rule,
    /// A read of `ost.OSS.ost_io.nrs_policies`.
    ReadPolicies,
    /// A read of `ost.OSS.ost_io.nrs_tbf_rule`, its regular CPT 0 lines.
    ReadRules,
    /// The same read, its high-priority CPT 0 lines.
    ReadHpRules,
}

/// What Lustre answers.
#[derive(Clone, Copy, Debug)]
pub enum Expect {
    Ok,
    Err(Errno),
    /// Reading `nrs_tbf_rule`: the rule lines of regular CPT 0, `name conditions rate`
    /// (the `, ref N` tail is not compared: it counts classes, which differ live).
    Rules(&'static [&'static str]),
    /// Reading `nrs_policies`: the name of the started primary policy of the regular queue
    /// (`fifo` when TBF is stopped).
    Policy(&'static str),
}

#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub param: Param,
    /// Written text; ignored for reads.
    pub text: &'static str,
    pub expect: Expect,
    /// Lustre file:line (or test) the expectation comes from.
    pub source: &'static str,
}

#[derive(Clone, Copy, Debug)]
pub struct Script {
    pub name: &'static str,
    /// Lustre version the head is set to (`LustreVersion::parse`).
    pub version: &'static str,
    pub steps: &'static [Step],
}

const fn w(param: Param, text: &'static str, expect: Expect, source: &'static str) -> Step {
    Step {
        param,
        text,
        expect,
        source,
    }
}

const fn pol(text: &'static str, expect: Expect, source: &'static str) -> Step {
    w(Param::Policies, text, expect, source)
}

const fn rule(text: &'static str, expect: Expect, source: &'static str) -> Step {
    w(Param::Rule, text, expect, source)
}

const fn rules(lines: &'static [&'static str], source: &'static str) -> Step {
    w(Param::ReadRules, "", Expect::Rules(lines), source)
}

const fn hp_rules(lines: &'static [&'static str], source: &'static str) -> Step {
    w(Param::ReadHpRules, "", Expect::Rules(lines), source)
}

const fn rules_fail(errno: Errno, source: &'static str) -> Step {
    w(Param::ReadRules, "", Expect::Err(errno), source)
}

const fn policy(name: &'static str, source: &'static str) -> Step {
    w(Param::ReadPolicies, "", Expect::Policy(name), source)
}

const OK: Expect = Expect::Ok;
const EINVAL: Expect = Expect::Err(Errno::EINVAL);
const ENOENT: Expect = Expect::Err(Errno::ENOENT);
const ENODEV: Expect = Expect::Err(Errno::ENODEV);
const EEXIST: Expect = Expect::Err(Errno::EEXIST);
const EPERM: Expect = Expect::Err(Errno::EPERM);
const ENAMETOOLONG: Expect = Expect::Err(Errno::ENAMETOOLONG);

const MASTER: &str = "2.17.57";

pub const SCRIPTS: &[Script] = &[
    // ------------------------------------------------------------ Lustre's own tests
    Script {
        name: "sanityn 77e: tbf nid",
        version: MASTER,
        steps: &[
            pol("tbf nid", OK, "sanityn.sh:4724"),
            rule(
                "start localhost nid={0@lo} rate=1000",
                OK,
                "sanityn.sh:4738",
            ),
            rule(
                "start clients nid={192.168.1.2@tcp 192.168.1.3@tcp} rate=100",
                OK,
                "sanityn.sh:4741",
            ),
            rule(
                "start others nid={*.*.*.*@tcp} rate=50",
                OK,
                "sanityn.sh:4742",
            ),
            rules(
                &[
                    "others nid={*.*.*.*@tcp} 50",
                    "clients nid={192.168.1.2@tcp 192.168.1.3@tcp} 100",
                    "localhost nid={0@lo} 1000",
                    "default * 10000",
                ],
                "nrs_tbf.c:347 nrs_tbf_rule_dump (newest first, nrs_tbf.c:492)",
            ),
            rule("change localhost rate=1001", OK, "sanityn.sh:4746"),
            rule("change clients rate=101", OK, "sanityn.sh:4747"),
            rule("change others rate=51", OK, "sanityn.sh:4748"),
            rules(
                &[
                    "others nid={*.*.*.*@tcp} 51",
                    "clients nid={192.168.1.2@tcp 192.168.1.3@tcp} 101",
                    "localhost nid={0@lo} 1001",
                    "default * 10000",
                ],
                "nrs_tbf.c:598 nrs_tbf_rule_change_rate",
            ),
            rule("stop localhost", OK, "sanityn.sh:4752"),
            rule("stop clients", OK, "sanityn.sh:4753"),
            rule("stop others", OK, "sanityn.sh:4754"),
            rules(&["default * 10000"], "nrs_tbf.c:646 nrs_tbf_rule_stop"),
            pol("fifo", OK, "sanityn.sh:4758"),
            policy("fifo", "nrs.c:241 fallback stops the primary policy"),
        ],
    },
    Script {
        name: "sanityn 77f/77g: tbf jobid, switching type directly",
        version: MASTER,
        steps: &[
            pol("tbf nid", OK, "sanityn.sh:4829"),
            pol("tbf jobid", OK, "sanityn.sh:4835"),
            policy("tbf jobid", "lproc_ptlrpc.c:664 name plus pol_arg"),
            rule(
                "start runas jobid={iozone.500 dd.500 tiotest.500} rate=1000",
                OK,
                "sanityn.sh:4793",
            ),
            rule(
                "start iozone_runas jobid={iozone.500} rate=100",
                OK,
                "sanityn.sh:4794",
            ),
            rule(
                "start dd_runas jobid={dd.500} rate=50",
                OK,
                "sanityn.sh:4795",
            ),
            rule("change runas rate=1001", OK, "sanityn.sh:4799"),
            rule("change dd_runas rate=51", OK, "sanityn.sh:4801"),
            rules(
                &[
                    "dd_runas jobid={dd.500} 51",
                    "iozone_runas jobid={iozone.500} 100",
                    "runas jobid={iozone.500 dd.500 tiotest.500} 1001",
                    "default * 10000",
                ],
                "nrs_tbf.c:347 nrs_tbf_rule_dump",
            ),
            // A nid rule under the jobid type: the field is not enabled.
            rule(
                "start bad nid={0@lo} rate=5",
                EINVAL,
                "nrs_tbf.c:1468 nrs_tbf_expression_parse (flag check)",
            ),
            pol("fifo", OK, "sanityn.sh:4811"),
        ],
    },
    Script {
        name: "sanityn 77h: wrong policy names",
        version: MASTER,
        steps: &[
            pol("abc", ENOENT, "sanityn.sh:4865, nrs.c:656 nrs_policy_ctl"),
            pol(
                "tbf abc",
                EINVAL,
                "sanityn.sh:4869, nrs_tbf.c:1870 nrs_tbf_type_parse",
            ),
            pol("tbf reg abc", EINVAL, "sanityn.sh:4873"),
            pol("tbf abc efg", EINVAL, "sanityn.sh:4877"),
            policy("fifo", "sanityn.sh:4880 policy unchanged"),
        ],
    },
    Script {
        name: "sanityn 77i: rank",
        version: MASTER,
        steps: &[
            pol("tbf jobid", OK, "sanityn.sh:4916"),
            rule(
                "start before jobid={jobid} rate=1000",
                OK,
                "sanityn.sh:4921",
            ),
            rule(
                "start after jobid={jobid} rate=1000 rank=default",
                OK,
                "sanityn.sh:4925",
            ),
            rule(
                "start target jobid={jobid} rate=1000 rank=after",
                OK,
                "sanityn.sh:4929",
            ),
            rules(
                &[
                    "before jobid={jobid} 1000",
                    "target jobid={jobid} 1000",
                    "after jobid={jobid} 1000",
                    "default * 10000",
                ],
                "sanityn.sh:4930",
            ),
            rule(
                "change target rank=target",
                OK,
                "sanityn.sh:4934, nrs_tbf.c:580",
            ),
            rule("change target rank=before", OK, "sanityn.sh:4939"),
            rules(
                &[
                    "target jobid={jobid} 1000",
                    "before jobid={jobid} 1000",
                    "after jobid={jobid} 1000",
                    "default * 10000",
                ],
                "sanityn.sh:4940",
            ),
            rule("change target rank=default", OK, "sanityn.sh:4949"),
            rules(
                &[
                    "before jobid={jobid} 1000",
                    "after jobid={jobid} 1000",
                    "target jobid={jobid} 1000",
                    "default * 10000",
                ],
                "sanityn.sh:4950",
            ),
        ],
    },
    Script {
        name: "sanityn 77j/77ja: opcode, uid and gid types",
        version: MASTER,
        steps: &[
            pol("tbf opcode", OK, "sanityn.sh:4973"),
            rule(
                "start ost_r opcode={ost_read} rate=5",
                OK,
                "sanityn.sh:4974",
            ),
            rule(
                "start ost_w opcode={ost_write} rate=20",
                OK,
                "sanityn.sh:4975",
            ),
            rule("stop ost_r", OK, "sanityn.sh:4982"),
            rule("stop ost_w", OK, "sanityn.sh:4983"),
            pol("tbf uid", OK, "sanityn.sh:5003"),
            rule("start ost_uid uid={500} rate=5", OK, "sanityn.sh:5004"),
            pol("tbf gid", OK, "sanityn.sh:5003"),
            rules(
                &["default * 10000"],
                "nrs.c:264 another argument restarts TBF",
            ),
            rule("start ost_gid gid={500} rate=5", OK, "sanityn.sh:5004"),
        ],
    },
    Script {
        name: "sanityn 77k: generic expressions",
        version: MASTER,
        steps: &[
            pol("tbf", OK, "sanityn.sh:5062"),
            rule(
                "start ext_w jobid={dd.500}&opcode={ost_write} rate=20",
                OK,
                "sanityn.sh:5063",
            ),
            rule(
                "start ext_r jobid={dd.500}&opcode={ost_read} rate=10",
                OK,
                "sanityn.sh:5064",
            ),
            rule("stop ext_w", OK, "sanityn.sh:5072"),
            rule("stop ext_r", OK, "sanityn.sh:5073"),
            rule(
                "start ext_w nid={0@lo 192.168.1.2@tcp 192.168.1.3@tcp}&opcode={ost_write} rate=20",
                OK,
                "sanityn.sh:5074",
            ),
            rule(
                "start ext nid={0@lo 192.168.1.2@tcp}&jobid={dd.500} rate=20",
                OK,
                "sanityn.sh:5083",
            ),
            rule(
                "start ext_a jobid={dd.500},opcode={ost_write} rate=20",
                OK,
                "sanityn.sh:5090",
            ),
            rule(
                "start ext_ug uid={500}&gid={500} rate=5",
                OK,
                "sanityn.sh:5107",
            ),
            rule(
                "start ext_b uid={500},opcode={ost_read} rate=10",
                OK,
                "sanityn.sh:5123",
            ),
            rules(
                &[
                    "ext_b uid={500},opcode={ost_read} 10",
                    "ext_ug uid={500}&gid={500} 5",
                    "ext_a jobid={dd.500},opcode={ost_write} 20",
                    "ext nid={0@lo 192.168.1.2@tcp}&jobid={dd.500} 20",
                    "ext_w nid={0@lo 192.168.1.2@tcp 192.168.1.3@tcp}&opcode={ost_write} 20",
                    "default * 10000",
                ],
                "nrs_tbf.c:347 (conditions as written)",
            ),
            policy("tbf", "sanityn.sh:5439 (77l: generic prints as `tbf`)"),
        ],
    },
    Script {
        name: "sanityn 77kb-77kg: combined types",
        version: MASTER,
        steps: &[
            pol("tbf jobid+opcode", OK, "sanityn.sh:5159"),
            rule(
                "start ext_w jobid={dd.500}&opcode={ost_write} rate=20",
                OK,
                "sanityn.sh:5160",
            ),
            rule(
                "start ext_a jobid={dd.500},opcode={ost_write} rate=20",
                OK,
                "sanityn.sh:5222",
            ),
            rule(
                "start ext_u uid={500} rate=20",
                EINVAL,
                "nrs_tbf.c:1468 (uid not in jobid+opcode)",
            ),
            pol("tbf nid+opcode", OK, "sanityn.sh:5176"),
            rule(
                "start ext_w nid={0@lo 192.168.1.2@tcp}&opcode={ost_write} rate=20",
                OK,
                "sanityn.sh:5177",
            ),
            pol("tbf nid+jobid", OK, "sanityn.sh:5200"),
            rule(
                "start ext nid={0@lo 192.168.1.2@tcp}&jobid={dd.500} rate=20",
                OK,
                "sanityn.sh:5201",
            ),
            pol("tbf uid+gid", OK, "sanityn.sh:5239"),
            rule(
                "start ext_ug uid={500}&gid={500} rate=5",
                OK,
                "sanityn.sh:5240",
            ),
            pol("tbf uid+opcode", OK, "sanityn.sh:5254"),
            rule(
                "start ext_b uid={500},opcode={ost_read} rate=10",
                OK,
                "sanityn.sh:5263",
            ),
            policy("tbf uid+opcode", "lproc_ptlrpc.c:664"),
        ],
    },
    Script {
        name: "sanityn 77kh-77kj: projid and nodemap",
        version: MASTER,
        steps: &[
            pol("tbf projid", OK, "sanityn.sh:5285"),
            rule(
                "start ext_proj_rw projid={1000} rate=20",
                OK,
                "sanityn.sh:5286",
            ),
            pol("tbf projid+opcode", OK, "sanityn.sh:5301"),
            rule(
                "start ext_w projid={1000}&opcode={ost_write} rate=20",
                OK,
                "sanityn.sh:5302",
            ),
            pol("tbf jobid+opcode", OK, "sanityn.sh:5328"),
            rule(
                "start ext_fail projid={100}&opcode={ost_write} rate=20",
                EINVAL,
                "sanityn.sh:5338",
            ),
            pol("tbf nodemap", OK, "sanityn.sh:5399"),
            rule(
                "start ext_nm_rw nodemap={default} rate=20",
                OK,
                "sanityn.sh:5400",
            ),
            pol("tbf nodemap+opcode", OK, "sanityn.sh:5412"),
            rule(
                "start ext_w nodemap={nm77kj}&opcode={ost_write} rate=20",
                EINVAL,
                "sanityn.sh:5417 (nodemap does not exist), nrs_tbf.c:1410",
            ),
        ],
    },
    Script {
        name: "sanityn 77n/77o/77s: wildcards and rank on nid",
        version: MASTER,
        steps: &[
            pol("tbf jobid", OK, "sanityn.sh:5520"),
            rule("stop dd_runas", OK, "sanityn.sh:5521, nrs_tbf.c:690"),
            rule(
                "start dd_runas jobid={*.500} rate=20",
                OK,
                "sanityn.sh:5522",
            ),
            rule("stop dd_runas", OK, "sanityn.sh:5528"),
            rule("start dd_runas jobid={dd.*} rate=20", OK, "sanityn.sh:5529"),
            rule(
                "start touch jobid={touch.*} rate=1000",
                OK,
                "sanityn.sh:5767",
            ),
            pol("tbf nid", OK, "sanityn.sh:5552"),
            rule(
                "start name nid={192.168.*.*@tcp} rate=10000",
                OK,
                "sanityn.sh:5553",
            ),
            rule(
                "start name1 nid={192.168.*.*@tcp} rate=10000",
                OK,
                "sanityn.sh:5554",
            ),
            rule("change name1 rank=name", OK, "sanityn.sh:5555"),
            rule("stop name", OK, "sanityn.sh:5556"),
            rules(
                &["name1 nid={192.168.*.*@tcp} 10000", "default * 10000"],
                "sanityn.sh:5556",
            ),
        ],
    },
    Script {
        name: "sanityn 77p/77q: rule names and spaces in lists",
        version: MASTER,
        steps: &[
            pol("tbf", OK, "sanityn.sh:5605"),
            rule(
                "start test_77p_overflo uid={500} rate=500",
                ENAMETOOLONG,
                "sanityn.sh:5609, nrs_tbf.c:2534 check_rule_name",
            ),
            rule("start  uid={500} rate=500", EINVAL, "sanityn.sh:5611"),
            rule(
                "start test_77p_empty",
                EINVAL,
                "sanityn.sh:5613, nrs_tbf.c:2666",
            ),
            rule(
                "start test77p@spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p.spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p~spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p#spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p/spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p^spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p%spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p*spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p;spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p,spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p?spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p<spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p>spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p:spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p+spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p=spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p)spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p(spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p{spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p}spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p|spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p[spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p]spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p!spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p&spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p$spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p`spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start test77p\\spec uid={500} rate=500",
                EINVAL,
                "sanityn.sh:5618",
            ),
            rule(
                "start rule77q_1 uid={ 500  11 3}&gid={500 10 33   100 } rate=100",
                OK,
                "sanityn.sh:5579 (spaces kept since 2.15.57, LU-9859)",
            ),
            rule(
                "start rule77q_2 uid={1000}&gid={1000} rate=100",
                OK,
                "sanityn.sh:5581",
            ),
            rules(
                &[
                    "rule77q_2 uid={1000}&gid={1000} 100",
                    "rule77q_1 uid={ 500  11 3}&gid={500 10 33   100 } 100",
                    "default * 10000",
                ],
                "nrs_tbf.c:347 (the list as written)",
            ),
            rule("stop rule77q_1", OK, "sanityn.sh:5586"),
            rule("stop rule77q_2", OK, "sanityn.sh:5588"),
        ],
    },
    Script {
        name: "sanityn 77r, conf-sanity 117 and 123aj",
        version: MASTER,
        steps: &[
            pol("tbf uid", OK, "sanityn.sh:5686"),
            rule("start md_rule uid={500} rate=1", OK, "sanityn.sh:5690"),
            pol("tbf jobid", OK, "sanityn.sh:5686"),
            rule("start md_rule jobid={*.500} rate=1", OK, "sanityn.sh:5692"),
            pol("fifo", OK, "conf-sanity.sh:10435"),
            rules_fail(
                Errno::ENODEV,
                "conf-sanity.sh:10436 (get_param should fail), nrs.c:57, nrs_tbf.c:2440",
            ),
            pol("tbf", OK, "conf-sanity.sh:10976"),
            rule(
                "start rule1 uid={500 502 } rate=1000",
                OK,
                "conf-sanity.sh:10961",
            ),
            rule(
                "start rule2 nid={10.10.2.20@tcp} rate=1000",
                OK,
                "conf-sanity.sh:10962",
            ),
            rule(
                "start rule3 jobid={cat.0.0} rate=1000",
                OK,
                "conf-sanity.sh:10963",
            ),
            rule(
                "start rule4 jobid={fio.0.0} rate=500",
                OK,
                "conf-sanity.sh:10964",
            ),
            rule("change rule4 rate=50", OK, "conf-sanity.sh:10965"),
            rule("change rule4 rate=5000", OK, "conf-sanity.sh:10966"),
            rules(
                &[
                    "rule4 jobid={fio.0.0} 5000",
                    "rule3 jobid={cat.0.0} 1000",
                    "rule2 nid={10.10.2.20@tcp} 1000",
                    "rule1 uid={500 502 } 1000",
                    "default * 10000",
                ],
                "conf-sanity.sh:10988",
            ),
        ],
    },
    // ------------------------------------------------------------ derived from the C source
    Script {
        name: "splitting a command on single spaces",
        version: MASTER,
        steps: &[
            pol("tbf", OK, ""),
            rule(
                " start a jobid={x}",
                EINVAL,
                "nrs_tbf.c:2653 (empty first token)",
            ),
            rule("start  a jobid={x}", EINVAL, "nrs_tbf.c:2534 (empty name)"),
            rule(
                "start a jobid={x}  rate=5",
                EINVAL,
                "nrs_tbf.c:2563 (empty option)",
            ),
            rule("start a jobid={x} rate=5  ", EINVAL, "nrs_tbf.c:2614"),
            rule(
                "start a jobid={x}\n",
                EINVAL,
                "nrs_tbf.c:2693 (`}` then `\\n`)",
            ),
            rule(
                "start a jobid={x} rate=5\n",
                OK,
                "nrs_tbf.c:2570 kstrtoull takes `\\n`",
            ),
            rule("stop a\n", EINVAL, "nrs_tbf.c:2534 (`\\n` in the name)"),
            rule("stop a ", OK, "nrs_tbf.c:2614 (empty rest ends the loop)"),
            rule("stop a  ", EINVAL, "nrs_tbf.c:2563"),
            rule(
                "stop a realtime=1",
                OK,
                "nrs_tbf.c:2590 (realtime on any verb)",
            ),
            rule(
                "start sp  jobid = {a} & opcode = {ost_read} , uid = { 1 }",
                OK,
                "nrs_tbf.c:1482 strim around `=`, `&`, `,`",
            ),
            rules(
                &[
                    "sp  jobid = {a} & opcode = {ost_read} , uid = { 1 } 10000",
                    "default * 10000",
                ],
                "nrs_tbf.c:1701 tr_conds_str is the text as written",
            ),
            pol(
                "tbf ",
                OK,
                "nrs.c:264 (same empty argument as the running `tbf`)",
            ),
            pol("tbf jobid", OK, ""),
            pol("tbf ", EINVAL, "nrs_tbf.c:1888 (empty type name)"),
            policy("fifo", "nrs.c:264 TBF was stopped before the failed start"),
            pol("tbf  jobid", EINVAL, "lproc_ptlrpc.c:760, nrs_tbf.c:1888"),
            pol("tbf\n", ENOENT, "lproc_ptlrpc.c:745 (no trimming)"),
        ],
    },
    Script {
        name: "condition grammar",
        version: MASTER,
        steps: &[
            pol("tbf", OK, ""),
            rule(
                "start c1 jobid={a,b}",
                EINVAL,
                "nrs_tbf.c:1575 `,` split before braces",
            ),
            rule("start c2 nid={10.0.0.[1,3]@tcp}", EINVAL, "nrs_tbf.c:1575"),
            rule("start c3 jobid={a&b}", EINVAL, "nrs_tbf.c:1552"),
            rule("start c4 jobid={a=b}", OK, "nrs_tbf.c:1482 first `=` only"),
            rule(
                "start c5 jobid={a}}",
                OK,
                "nrs_tbf.c:2685 strrchr: the last `}`",
            ),
            rule(
                "start c6 jobid={a} rank=c5}",
                OK,
                "nrs_tbf.c:2685 (options end at last `}`)",
            ),
            rule("start c7 jobid={}", EINVAL, "nrs_tbf.c:851 empty list"),
            rule("start c8 jobid={ }", EINVAL, "nrs_tbf.c:851"),
            rule("start c9 jobid=x", EINVAL, "nrs_tbf.c:1486 no braces"),
            rule("start c10 ={x}", EINVAL, "nrs_tbf.c:1483 no field"),
            rule("start c11 foo={x}", EINVAL, "nrs_tbf.c:1545 unknown field"),
            rule(
                "start c12 uid={+1 0x10 010 4294967297}",
                OK,
                "nrs_tbf.c:1840 kstrtoul base 0",
            ),
            rule("start c13 uid={-1}", EINVAL, "nrs_tbf.c:1840"),
            rule("start c14 uid={08}", EINVAL, "nrs_tbf.c:1840 (octal)"),
            rule(
                "start c15 uid={18446744073709551616}",
                EINVAL,
                "nrs_tbf.c:1840 ERANGE",
            ),
            rule(
                "start c16 opcode={ldlm_enqueue mds_reint obd_ping ost_seek}",
                OK,
                "lproc_ptlrpc.c:180 ll_str2opcode over the whole table",
            ),
            rule("start c17 opcode={OST_READ}", EINVAL, "lproc_ptlrpc.c:180"),
            rule(
                "start c18 nid={10.0.0.0/8@tcp fe80::1@o2ib 0x0a.0.0.010@tcp1}",
                OK,
                "nidstrings.c:637 parse_nidrange, 536 parse_nidmask, 178 base 0",
            ),
            rule(
                "start c19 nid={1.2.3.4@gip 5@ptlf 6@kfi 1.2.3.4@efa 7@bxi3f 8@gni [1-3]@lo}",
                OK,
                "nidstrings.c:1400 libcfs_netstrfns",
            ),
            rule(
                "start c20 nid={1.2.3.4@eth}",
                EINVAL,
                "nidstrings.c:583 add_nidrange",
            ),
            rule("start c21 nid={10.0.0.[0-8/2]@tcp}", OK, "nidstrings.c:178"),
            // Departure: libcfs accepts a zero stride for an octet and divides by it when
            // matching (nidstrings.c:263 cfs_expr_list_match); pfsqos refuses it.
            rule(
                "start c22 nid={10.0.0.[0-8/0]@tcp}",
                EINVAL,
                "nidstrings.c:236 (departure)",
            ),
            rule(
                "start c23 nid={10.0.0.0/0@tcp}",
                EINVAL,
                "nidstrings.c:507 parse_prefix_len",
            ),
            rule("start c24 jobid={dd.*} realtime=1", OK, "nrs_tbf.c:2590"),
            rule("start c25 jobid={a} realtime=x", EINVAL, "nrs_tbf.c:2588"),
        ],
    },
    Script {
        name: "errors in Lustre's order",
        version: MASTER,
        steps: &[
            rule(
                "start a jobid={a}",
                EINVAL,
                "nrs_tbf.c:2499 no type while FIFO runs",
            ),
            rule("change a rate=5", ENODEV, "nrs.c:57 nrs_policy_ctl_locked"),
            rule("stop a", ENODEV, "nrs.c:57"),
            rule("stop a rate=5", EINVAL, "nrs_tbf.c:2578 parse before state"),
            rules_fail(Errno::ENODEV, "nrs_tbf.c:2440 seq_show, nrs.c:57"),
            pol("tbf", OK, ""),
            rule(
                "start abcdefghijklmnop- jobid={a}",
                ENAMETOOLONG,
                "nrs_tbf.c:2534 (first 16)",
            ),
            rule(
                "start a-bcdefghijklmnop jobid={a}",
                EINVAL,
                "nrs_tbf.c:2541 characters first",
            ),
            rule(
                "start abcdefghijklmnopq",
                EINVAL,
                "nrs_tbf.c:2666 before the name",
            ),
            rule("start a jobid={a} rate=5", OK, ""),
            rule(
                "start a jobid={b",
                EINVAL,
                "nrs_tbf.c:2685 parse before existence",
            ),
            rule("start a jobid={b} rate=0", EINVAL, "nrs_tbf.c:2573"),
            rule("start a jobid={b}", EEXIST, "nrs_tbf.c:503"),
            rule("start b jobid={b} rank=nosuch", ENOENT, "nrs_tbf.c:523"),
            rule(
                "start b jobid={b} rank=abcdefghijklmnop",
                EINVAL,
                "nrs_tbf.c:2712 (rank name)",
            ),
            rule(
                "start b jobid={b} rate=1000000",
                EINVAL,
                "nrs_tbf.c:2573 (2.15+ limit)",
            ),
            rule("start b jobid={b} rate=999999", OK, "nrs_tbf.c:2573"),
            rule(
                "change a rate=7 rank=nosuch",
                ENOENT,
                "nrs_tbf.c:620 (rate set first)",
            ),
            rules(
                &["b jobid={b} 999999", "a jobid={a} 7", "default * 10000"],
                "nrs_tbf.c:628 partial effect of change",
            ),
            // ptlrpc_nrs_policy_control (nrs.c:1689) stops at the first failing head: the
            // HP head never saw the change.
            hp_rules(
                &["b jobid={b} 999999", "a jobid={a} 5", "default * 10000"],
                "nrs.c:1706 first error ends the walk over heads",
            ),
            rule("change ghost rate=5", ENOENT, "nrs_tbf.c:605"),
            rule("change ghost rank=a", ENOENT, "nrs_tbf.c:574"),
            rule("change a", EINVAL, "nrs_tbf.c:2666"),
            rule("change a realtime=1", EINVAL, "nrs_tbf.c:2621"),
            rule("stop ghost", OK, "nrs_tbf.c:690"),
            rule("stop default", EPERM, "nrs_tbf.c:654"),
            rule(
                "stop default rank=a",
                EINVAL,
                "nrs_tbf.c:2578 parse before EPERM",
            ),
            rule("change default rate=500", OK, "nrs_tbf.c:598"),
            rules(
                &["b jobid={b} 999999", "a jobid={a} 7", "default * 500"],
                "nrs_tbf.c:598",
            ),
            rule("frob a", EINVAL, "nrs_tbf.c:2664"),
            rule("hp", EINVAL, "nrs_tbf.c:2772"),
            pol("tbf jobid+opcode+uid", EINVAL, "nrs.c:225 NRS_POL_ARG_MAX"),
            pol("fifo 0123456789abcdef", EINVAL, "nrs.c:225"),
            pol("tbf nid+jobid+uid", OK, "nrs_tbf.c:1870 (13 characters)"),
            pol("fifo x", OK, "nrs.c:234 fallback ignores the argument"),
            pol(
                "tbf jobid+",
                OK,
                "nrs_tbf.c:1888 (an empty name ends the list)",
            ),
            policy("tbf jobid+", "lproc_ptlrpc.c:664"),
            pol("crrn_is_longer_", ENOENT, "nrs.c:656"),
            pol(
                "crrn_is_longer_x",
                EINVAL,
                "lproc_ptlrpc.c:747 NRS_POL_NAME_MAX",
            ),
        ],
    },
    // ------------------------------------------------------------ versions
    Script {
        name: "2.14: rate below 65535, {list} listing",
        version: "2.14.0",
        steps: &[
            pol("tbf jobid", OK, ""),
            rule(
                "start a jobid={dd.*} rate=65535",
                EINVAL,
                "v2_14_0 nrs_tbf.c:3413",
            ),
            rule(
                "start a jobid={dd.*} rate=65534",
                OK,
                "v2_14_0 nrs_tbf.c:3413",
            ),
            rules(
                &["a {dd.*} 65534", "default {*} 10000"],
                "v2_14_0 nrs_tbf_jobid_rule_dump",
            ),
            pol(
                "tbf jobid+opcode",
                Expect::Err(Errno::ENOTSUPP),
                "v2_14_0 nrs_tbf.c:2778 (combined types from 2.16.58)",
            ),
            pol("tbf generic", OK, "v2_14_0 nrs_tbf_types has `generic`"),
            policy("tbf generic", ""),
            rule("start g jobid={a}&opcode={ost_read} rate=5", OK, ""),
            rules(
                &["g jobid={a}&opcode={ost_read} 5", "default * 10000"],
                "generic dump",
            ),
        ],
    },
    Script {
        name: "2.16.57 and 2.16.59: before combined types and projid",
        version: "2.16.59",
        steps: &[
            pol("tbf jobid+opcode", OK, "37aa55f1e8 in 2.16.58"),
            rule(
                "start p projid={1}&opcode={ost_read}",
                EINVAL,
                "projid from 2.16.60",
            ),
            pol("tbf projid", EINVAL, "projid from 2.16.60"),
        ],
    },
    Script {
        name: "2.17.0: single-field types list {ids}, no nodemap",
        version: "2.17.0",
        steps: &[
            pol("tbf nodemap", EINVAL, "nodemap from 2.17.55"),
            pol("tbf jobid", OK, ""),
            rule(
                "start dd jobid = {dd.*  x,y} rate=50",
                OK,
                "2.17.0 nrs_tbf.c:920 check_id_value",
            ),
            rule(
                "start u uid={1} rate=50",
                EINVAL,
                "2.17.0 nrs_tbf.c:932 wrong key",
            ),
            rules(
                &["dd {dd.*  x,y} 50", "default {*} 10000"],
                "2.17.0 nrs_tbf.c:991",
            ),
            pol("tbf projid", OK, "2.16.60+"),
            rule("start p projid={1},projid={2} rate=5", OK, "2.17.0 nrs_tbf.c:3529 generic parser"),
            rules(
                &["p projid={1},projid={2} 5", "default * 10000"],
                "2.17.0 nrs_tbf_generic_rule_dump",
            ),
        ],
    },
];
