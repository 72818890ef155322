//! The `nrs_tbf_rule` command language, parsed as Lustre parses a write to the file
//! (`lustre/ptlrpc/nrs_tbf.c`: `ptlrpc_lprocfs_nrs_tbf_rule_seq_write`, `nrs_tbf_parse_cmd`,
//! `check_rule_name`, `nrs_tbf_parse_value_pairs`, `nrs_tbf_parse_value_pair`):
//!
//! ```text
//! [reg|hp] start  <name> <conditions> [rate=N] [rank=R] [realtime=N]
//! [reg|hp] change <name> [rate=N] [rank=R]
//! [reg|hp] stop   <name>
//! ```
//!
//! Lustre splits with `strsep(" ")`, one space at a time, and does not trim the write: two
//! spaces make an empty token, which is refused where a token is required (`start  a`), and
//! a trailing newline (`echo ... >`) stays in the last token, where only a number accepts it
//! (`rate=5\n`). The condition is everything from after the name to the last `}` of the write,
//! which must end the write or be followed by one space.

use std::fmt;

use crate::errno::Errno;

use super::cond::{ClassType, Condition, Field};
use super::kstrto::{kstrtoull, strsep};
use super::version::LustreVersion;

pub use pfsqos_lustre::limits::{
    TBF_COMMAND_LEN_MAX, TBF_NAME_LEN_MAX, TBF_RATE_LEGACY_RPCS_PER_S_MAX, TBF_RATE_RPCS_PER_S_MAX,
};
/// Name of the built-in fallback rule.
pub const DEFAULT_RULE_NAME: &str = "default";

/// Which NRS head of a service a command or policy write is addressed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NrsQueue {
    Regular,
    HighPriority,
}

impl NrsQueue {
    pub fn prefix(self) -> &'static str {
        match self {
            NrsQueue::Regular => "reg",
            NrsQueue::HighPriority => "hp",
        }
    }

    pub fn from_prefix(text: &str) -> Option<NrsQueue> {
        match text {
            "reg" => Some(NrsQueue::Regular),
            "hp" => Some(NrsQueue::HighPriority),
            _ => None,
        }
    }
}

/// Why a TBF control write failed; [`TbfError::errno`] is what Lustre returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TbfError {
    CommandTooLong {
        len_bytes: usize,
    },
    /// No space in the write, or nothing after the queue prefix or the command word.
    EmptyCommand,
    UnknownCommand(String),
    NameEmpty,
    NameTooLong(String),
    NameInvalid(String),
    /// `start` or `change` with nothing after the name, or `start` without a `}`.
    MissingExpression,
    /// The text after the last `}` does not start with a space.
    TrailingAfterCondition(String),
    /// `start` while the target head does not run TBF: Lustre parses conditions with the
    /// head's type, and an unstarted head has none (`nrs_tbf_id_parse`), so this is EINVAL.
    NoPolicyType,
    BadCondition(String),
    /// Token after the conditions that is not `key=value` with a value.
    BadOption(String),
    UnknownOptionKey(String),
    BadRate(String),
    RateOutOfRange {
        rate: u64,
        max: u32,
    },
    /// `rank=` naming something that is not a rule name.
    BadRank(String),
    /// `rate=` or `rank=` on `stop`.
    OptionNotForStop(String),
    ChangeNeedsRateOrRank,
    FieldNotEnabled(Field),
    RuleExists(String),
    /// A head already holds [`crate::limits::TBF_RULES_MAX`] rules.
    TooManyRules {
        max: usize,
    },
    NoSuchRule(String),
    RankTargetMissing(String),
    StopDefault,
    /// Reading rules, or changing or stopping one, while TBF is not the running policy.
    TbfNotStarted,
}

impl TbfError {
    pub fn errno(&self) -> Errno {
        match self {
            TbfError::NameTooLong(_) => Errno::ENAMETOOLONG,
            TbfError::RuleExists(_) => Errno::EEXIST,
            // What Lustre answers when it cannot allocate another rule.
            TbfError::TooManyRules { .. } => Errno::ENOMEM,
            TbfError::NoSuchRule(_) | TbfError::RankTargetMissing(_) => Errno::ENOENT,
            TbfError::StopDefault => Errno::EPERM,
            TbfError::TbfNotStarted => Errno::ENODEV,
            _ => Errno::EINVAL,
        }
    }
}

impl fmt::Display for TbfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TbfError::CommandTooLong { len_bytes } => write!(
                f,
                "command is {len_bytes} bytes; at most {TBF_COMMAND_LEN_MAX} are accepted"
            ),
            TbfError::EmptyCommand => f.write_str("empty or incomplete command"),
            TbfError::UnknownCommand(c) => {
                write!(f, "unknown command `{c}` (expected start, change or stop)")
            }
            TbfError::NameEmpty => f.write_str("missing rule name"),
            TbfError::NameTooLong(n) => write!(
                f,
                "rule name `{n}` is longer than {TBF_NAME_LEN_MAX} characters"
            ),
            TbfError::NameInvalid(n) => {
                write!(f, "rule name `{n}` may only contain [A-Za-z0-9_]")
            }
            TbfError::MissingExpression => {
                f.write_str("missing condition (`field={list}` expected)")
            }
            TbfError::TrailingAfterCondition(t) => {
                write!(
                    f,
                    "the condition must end with `}}` followed by a space: `{t}`"
                )
            }
            TbfError::NoPolicyType => {
                f.write_str("the TBF policy is not started, so the condition has no type")
            }
            TbfError::BadCondition(m) => write!(f, "bad condition: {m}"),
            TbfError::BadOption(o) => write!(f, "option `{o}` is not key=value"),
            TbfError::UnknownOptionKey(k) => {
                write!(f, "unknown option `{k}` (expected rate, rank or realtime)")
            }
            TbfError::BadRate(r) => write!(f, "rate `{r}` is not a number"),
            TbfError::RateOutOfRange { rate, max } => {
                write!(f, "rate {rate} is out of range 1..={max}")
            }
            TbfError::BadRank(r) => write!(f, "rank `{r}` is not a rule name"),
            TbfError::OptionNotForStop(o) => write!(f, "`{o}` is not an option of stop"),
            TbfError::ChangeNeedsRateOrRank => f.write_str("change needs rate= or rank="),
            TbfError::FieldNotEnabled(fld) => {
                write!(f, "field `{fld}` is not enabled by the TBF policy type")
            }
            TbfError::RuleExists(n) => write!(f, "rule `{n}` already exists"),
            TbfError::TooManyRules { max } => {
                write!(f, "a head holds at most {max} rules (the default included)")
            }
            TbfError::NoSuchRule(n) => write!(f, "no rule named `{n}`"),
            TbfError::RankTargetMissing(n) => write!(f, "rank target `{n}` does not exist"),
            TbfError::StopDefault => f.write_str("the default rule cannot be stopped"),
            TbfError::TbfNotStarted => f.write_str("the TBF policy is not started"),
        }
    }
}

impl std::error::Error for TbfError {}

/// What a command does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TbfOp {
    Start {
        name: String,
        condition: Condition,
        rate_rpcs_per_s: Option<u32>,
        rank: Option<String>,
        realtime: bool,
    },
    Change {
        name: String,
        rate_rpcs_per_s: Option<u32>,
        rank: Option<String>,
    },
    Stop {
        name: String,
    },
}

/// A parsed `nrs_tbf_rule` write. `Display` gives text that parses back to the same value
/// (the condition exactly as written).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TbfCommand {
    /// `None`: both heads (or the regular one where there is no HP head).
    pub queue: Option<NrsQueue>,
    pub op: TbfOp,
}

/// `check_rule_name`: characters are checked before the length, over the first 16 only, so
/// `abcdefghijklmnop-` (a bad character at position 17) is too long, not invalid.
pub(crate) fn check_name(name: &str) -> Result<(), TbfError> {
    if name.is_empty() {
        return Err(TbfError::NameEmpty);
    }
    let head = &name.as_bytes()[..name.len().min(TBF_NAME_LEN_MAX + 1)];
    if !head.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_') {
        return Err(TbfError::NameInvalid(name.to_string()));
    }
    if name.len() > TBF_NAME_LEN_MAX {
        return Err(TbfError::NameTooLong(name.to_string()));
    }
    Ok(())
}

impl TbfCommand {
    /// Parses a command for plain `tbf` on the newest version (every field enabled), for
    /// callers that only need the command's shape (name, verb).
    pub fn parse(text: &str) -> Result<TbfCommand, TbfError> {
        Self::parse_for(text, Some(ClassType::GENERIC), LustreVersion::MASTER)
    }

    /// Parses a write to `nrs_tbf_rule` for a head whose TBF type is `class_type` (`None`: the
    /// head does not run TBF) on `version`, failing at the first check Lustre fails at.
    pub fn parse_for(
        text: &str,
        class_type: Option<ClassType>,
        version: LustreVersion,
    ) -> Result<TbfCommand, TbfError> {
        if text.len() > TBF_COMMAND_LEN_MAX {
            return Err(TbfError::CommandTooLong {
                len_bytes: text.len(),
            });
        }
        // ptlrpc_lprocfs_nrs_tbf_rule_seq_write: an optional queue prefix.
        let (first, rest) = strsep(text, ' ');
        let rest = rest.ok_or(TbfError::EmptyCommand)?;
        let queue = NrsQueue::from_prefix(first);
        let body = if queue.is_some() { rest } else { text };
        if body.is_empty() {
            return Err(TbfError::EmptyCommand);
        }
        // nrs_tbf_parse_cmd
        let (verb, rest) = strsep(body, ' ');
        let rest = rest
            .filter(|r| !r.is_empty())
            .ok_or(TbfError::EmptyCommand)?;
        if !matches!(verb, "start" | "change" | "stop") {
            return Err(TbfError::UnknownCommand(verb.to_string()));
        }
        let (name, rest) = strsep(rest, ' ');
        // Checked before the name (nrs_tbf_parse_cmd): `start <too long name>` is EINVAL.
        if rest.is_none() && verb != "stop" {
            return Err(TbfError::MissingExpression);
        }
        check_name(name)?;
        let name = name.to_string();
        let op = match verb {
            "start" => {
                let token = rest.unwrap_or_default();
                let end = token.rfind('}').ok_or(TbfError::MissingExpression)?;
                let (cond, after) = token.split_at(end + 1);
                let opts = match after.strip_prefix(' ') {
                    Some(o) => Some(o),
                    None if after.is_empty() => None,
                    None => return Err(TbfError::TrailingAfterCondition(after.to_string())),
                };
                let class_type = class_type.ok_or(TbfError::NoPolicyType)?;
                let condition = Condition::parse_for(cond, class_type, version)
                    .map_err(TbfError::BadCondition)?;
                let o = parse_options(opts, Verb::Start, version)?;
                TbfOp::Start {
                    name,
                    condition,
                    rate_rpcs_per_s: o.rate,
                    rank: o.rank,
                    realtime: o.realtime,
                }
            }
            "change" => {
                let o = parse_options(rest, Verb::Change, version)?;
                if o.rate.is_none() && o.rank.is_none() {
                    return Err(TbfError::ChangeNeedsRateOrRank);
                }
                TbfOp::Change {
                    name,
                    rate_rpcs_per_s: o.rate,
                    rank: o.rank,
                }
            }
            _ => {
                parse_options(rest, Verb::Stop, version)?;
                TbfOp::Stop { name }
            }
        };
        Ok(TbfCommand { queue, op })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Verb {
    Start,
    Change,
    Stop,
}

#[derive(Default)]
struct Options {
    rate: Option<u32>,
    rank: Option<String>,
    realtime: bool,
}

/// `nrs_tbf_parse_value_pairs`: `key=value` tokens separated by single spaces; a later key
/// overrides an earlier one; `realtime=` is accepted on every verb and only `start` keeps it.
fn parse_options(
    text: Option<&str>,
    verb: Verb,
    version: LustreVersion,
) -> Result<Options, TbfError> {
    let mut o = Options::default();
    let mut rest = text;
    while let Some(r) = rest.filter(|r| !r.is_empty()) {
        let (tok, next) = strsep(r, ' ');
        rest = next;
        let (key, val) = strsep(tok, '=');
        let val = val
            .filter(|v| !v.is_empty())
            .ok_or_else(|| TbfError::BadOption(tok.to_string()))?;
        match key {
            "rate" => {
                let rate = kstrtoull(val, 10).map_err(|_| TbfError::BadRate(val.to_string()))?;
                let max = version.rate_rpcs_per_s_max();
                if rate == 0 || rate > max as u64 {
                    return Err(TbfError::RateOutOfRange { rate, max });
                }
                if verb == Verb::Stop {
                    return Err(TbfError::OptionNotForStop(tok.to_string()));
                }
                o.rate = Some(rate as u32);
            }
            "rank" => {
                // Any check_rule_name failure, ENAMETOOLONG included, becomes EINVAL here.
                check_name(val).map_err(|_| TbfError::BadRank(val.to_string()))?;
                if verb == Verb::Stop {
                    return Err(TbfError::OptionNotForStop(tok.to_string()));
                }
                o.rank = Some(val.to_string());
            }
            "realtime" => {
                let v = kstrtoull(val, 10).map_err(|_| TbfError::BadOption(tok.to_string()))?;
                o.realtime = v > 0;
            }
            other => return Err(TbfError::UnknownOptionKey(other.to_string())),
        }
    }
    Ok(o)
}

impl fmt::Display for TbfCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(q) = self.queue {
            write!(f, "{} ", q.prefix())?;
        }
        let (rate, rank) = match &self.op {
            TbfOp::Start {
                name,
                condition,
                rate_rpcs_per_s,
                rank,
                ..
            } => {
                write!(f, "start {name} {condition}")?;
                (rate_rpcs_per_s, rank)
            }
            TbfOp::Change {
                name,
                rate_rpcs_per_s,
                rank,
            } => {
                write!(f, "change {name}")?;
                (rate_rpcs_per_s, rank)
            }
            TbfOp::Stop { name } => return write!(f, "stop {name}"),
        };
        if let Some(r) = rate {
            write!(f, " rate={r}")?;
        }
        if let Some(r) = rank {
            write!(f, " rank={r}")?;
        }
        if let TbfOp::Start { realtime: true, .. } = &self.op {
            f.write_str(" realtime=1")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tbf::cond::Expression;
    use proptest::prelude::*;

    #[test]
    fn manual_examples_parse_and_print_back() {
        for text in [
            "start computes nid={192.168.1.[2-128]@tcp} rate=500",
            "start user2 jobid={io*.10* *.500} rate=200",
            "start iozone_user1 opcode={ost_read ost_write} rate=200 rank=computes",
            "start comp_rule opcode={ost_write}&jobid={dd.0},nid={192.168.1.[1-128]@tcp 0@lo} rate=100",
            "start realjob jobid={dd.0} rate=100 realtime=1",
            "change loginnode rate=200",
            "stop loginnode",
            "reg start a uid={0x10 017} rate=5",
            "hp stop a",
        ] {
            let cmd = TbfCommand::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(cmd.to_string(), text);
            assert_eq!(TbfCommand::parse(&cmd.to_string()).unwrap(), cmd);
        }
        let cmd = TbfCommand::parse("start realjob jobid={dd.0} rate=100 realtime=1").unwrap();
        let TbfOp::Start {
            condition,
            realtime: true,
            rate_rpcs_per_s: Some(100),
            ..
        } = cmd.op
        else {
            panic!("{cmd:?}")
        };
        assert_eq!(
            condition.any_of,
            vec![vec![Expression::Jobid(vec!["dd.0".into()])]]
        );
        // The condition keeps its spaces; realtime on change is accepted and dropped.
        let cmd = TbfCommand::parse("start s uid={ 1  2 } rate=5").unwrap();
        assert_eq!(cmd.to_string(), "start s uid={ 1  2 } rate=5");
        let cmd = TbfCommand::parse("change s rate=7 realtime=1").unwrap();
        assert_eq!(cmd.to_string(), "change s rate=7");
        // `echo` leaves a newline: numbers accept it, names and braces do not.
        assert!(TbfCommand::parse("start s uid={1} rate=5\n").is_ok());
        assert!(TbfCommand::parse("change s rate=5\n").is_ok());
        assert!(TbfCommand::parse("stop s realtime=0\n").is_ok());
        for bad in ["stop s\n", "start s uid={1}\n", "change s rank=t\n"] {
            assert_eq!(
                TbfCommand::parse(bad).unwrap_err().errno(),
                Errno::EINVAL,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn rejects_every_malformed_form_with_lustre_errno() {
        let long = format!("start a jobid={{{}}}", "x ".repeat(2100));
        let cases: Vec<(String, Errno)> = vec![
            (
                "start abcdefghijklmnop jobid={a}".into(),
                Errno::ENAMETOOLONG,
            ),
            // Characters before length, but only over the first 16.
            (
                "start abcdefghijklmnop- jobid={a}".into(),
                Errno::ENAMETOOLONG,
            ),
            ("start a-bcdefghijklmnop jobid={a}".into(), Errno::EINVAL),
            // Missing expression before the name is looked at.
            ("start abcdefghijklmnop".into(), Errno::EINVAL),
            ("start  ".into(), Errno::EINVAL),
            ("start  a jobid={a}".into(), Errno::EINVAL),
            (" start a jobid={a}".into(), Errno::EINVAL),
            ("start a-b jobid={a}".into(), Errno::EINVAL),
            ("start a.b jobid={a}".into(), Errno::EINVAL),
            ("start a".into(), Errno::EINVAL),
            ("start a ".into(), Errno::EINVAL),
            ("start a rate=10".into(), Errno::EINVAL),
            ("start a jobid={a}rate=10".into(), Errno::EINVAL),
            ("start a jobid={a}  rate=10".into(), Errno::EINVAL),
            ("start a jobid={a} rate=10  ".into(), Errno::EINVAL),
            ("start a jobid=a".into(), Errno::EINVAL),
            ("start a jobid={a} rate=0".into(), Errno::EINVAL),
            ("start a jobid={a} rate=1000000".into(), Errno::EINVAL),
            ("start a jobid={a} rate=ten".into(), Errno::EINVAL),
            ("start a jobid={a} rate=-1".into(), Errno::EINVAL),
            ("start a jobid={a} rate=0x10".into(), Errno::EINVAL),
            (
                "start a jobid={a} rate=99999999999999999999999".into(),
                Errno::EINVAL,
            ),
            ("start a jobid={a} speed=10".into(), Errno::EINVAL),
            ("start a jobid={a} rate".into(), Errno::EINVAL),
            ("start a jobid={a} rank=".into(), Errno::EINVAL),
            (
                "start a jobid={a} rank=abcdefghijklmnop".into(),
                Errno::EINVAL,
            ),
            ("start a jobid={a} realtime=yes".into(), Errno::EINVAL),
            ("change a".into(), Errno::EINVAL),
            ("change a ".into(), Errno::EINVAL),
            ("change a realtime=1".into(), Errno::EINVAL),
            ("stop a b".into(), Errno::EINVAL),
            ("stop a rate=5".into(), Errno::EINVAL),
            ("stop a rank=b".into(), Errno::EINVAL),
            ("stop a  ".into(), Errno::EINVAL),
            ("stop".into(), Errno::EINVAL),
            ("stop ".into(), Errno::EINVAL),
            ("frob a".into(), Errno::EINVAL),
            ("".into(), Errno::EINVAL),
            ("hp".into(), Errno::EINVAL),
            ("hp ".into(), Errno::EINVAL),
            ("reg reg start a jobid={a}".into(), Errno::EINVAL),
            (long, Errno::EINVAL),
        ];
        for (text, errno) in cases {
            let err = TbfCommand::parse(&text).expect_err(&text);
            assert_eq!(err.errno(), errno, "{text:.60}: {err}");
        }
        assert!(matches!(
            TbfCommand::parse(&"x".repeat(4096)),
            Err(TbfError::CommandTooLong { len_bytes: 4096 })
        ));
        for ok in [
            "start a jobid={a} rate=999999",
            "start a jobid={a} rate=+5",
            "start a jobid={a} rate=007",
            "start a jobid={a} rate=5 rate=6 realtime=0",
            "stop a ",
            "stop a realtime=1",
            "start a  jobid={a}",
            "start a jobid={a}}",
        ] {
            assert!(TbfCommand::parse(ok).is_ok(), "{ok}");
        }
        let old = TbfCommand::parse_for(
            "start a jobid={a} rate=65535",
            Some(ClassType::GENERIC),
            LustreVersion::V2_14,
        );
        assert_eq!(old.unwrap_err().errno(), Errno::EINVAL);
        assert_eq!(
            TbfCommand::parse_for("start a jobid={a}", None, LustreVersion::MASTER).unwrap_err(),
            TbfError::NoPolicyType
        );
        assert!(TbfCommand::parse_for("stop a", None, LustreVersion::MASTER).is_ok());
    }

    fn name() -> impl Strategy<Value = String> {
        "[A-Za-z0-9_]{1,15}"
    }

    fn expression() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::collection::vec("[a-z0-9.*_:-]{1,8}", 1..4)
                .prop_map(|v| format!("jobid={{{}}}", v.join(" "))),
            prop::collection::vec(any::<u32>(), 1..4).prop_map(|v| format!(
                "uid={{{}}}",
                v.iter()
                    .map(|u| format!("{u:#x}"))
                    .collect::<Vec<_>>()
                    .join("  ")
            )),
            prop::collection::vec(any::<u32>(), 1..4).prop_map(|v| format!(
                " gid = {{{}}}",
                v.iter()
                    .map(|u| u.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            )),
            prop::collection::vec(
                prop::sample::select(
                    super::super::opcode::LUSTRE_OPCODES
                        .iter()
                        .map(|(_, n)| *n)
                        .collect::<Vec<_>>()
                ),
                1..4
            )
            .prop_map(|v| format!("opcode={{{}}}", v.join(" "))),
            prop::collection::vec(
                prop::sample::select(vec![
                    "192.168.1.[2-128]@tcp",
                    "*.*.*.*@o2ib",
                    "0@lo",
                    "10.0.[1-7/2].4@tcp1",
                    "10.1.0.0/16@tcp",
                    "[1-100]@kfi",
                ]),
                1..3
            )
            .prop_map(|v| format!("nid={{{}}}", v.join(" "))),
        ]
    }

    fn command() -> impl Strategy<Value = String> {
        let queue = prop::sample::select(vec!["", "reg ", "hp "]);
        let rate = prop::option::of(1u32..=TBF_RATE_RPCS_PER_S_MAX);
        let op = prop_oneof![
            (
                name(),
                prop::collection::vec(prop::collection::vec(expression(), 1..3), 1..3),
                rate.clone(),
                prop::option::of(name()),
                any::<bool>()
            )
                .prop_map(|(name, any_of, rate, rank, realtime)| {
                    let cond: Vec<String> = any_of.iter().map(|all| all.join("&")).collect();
                    let mut s = format!("start {name} {}", cond.join(","));
                    if let Some(r) = rate {
                        s += &format!(" rate={r}");
                    }
                    if let Some(r) = rank {
                        s += &format!(" rank={r}");
                    }
                    if realtime {
                        s += " realtime=1";
                    }
                    s
                }),
            (name(), rate, prop::option::of(name()))
                .prop_filter("change needs rate or rank", |(_, r, k)| r.is_some()
                    || k.is_some())
                .prop_map(|(name, rate, rank)| {
                    let mut s = format!("change {name}");
                    if let Some(r) = rate {
                        s += &format!(" rate={r}");
                    }
                    if let Some(r) = rank {
                        s += &format!(" rank={r}");
                    }
                    s
                }),
            name().prop_map(|name| format!("stop {name}")),
        ];
        (queue, op).prop_map(|(q, op)| format!("{q}{op}"))
    }

    proptest! {
        #[test]
        fn valid_commands_parse_and_print_back_as_written(text in command()) {
            let cmd = TbfCommand::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            prop_assert_eq!(cmd.to_string(), text.clone());
            prop_assert_eq!(TbfCommand::parse(&cmd.to_string()), Ok(cmd));
        }
    }
}
