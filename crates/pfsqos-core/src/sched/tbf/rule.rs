//! The `nrs_tbf_rule` command language (`nrs_tbf_parse_cmd`, `check_rule_name`,
//! `nrs_tbf_parse_value_pair`):
//!
//! ```text
//! [reg|hp] start  <name> <conditions> [rate=N] [rank=R] [realtime=N]
//! [reg|hp] change <name> [rate=N] [rank=R]
//! [reg|hp] stop   <name>
//! ```

use std::fmt;

use crate::errno::Errno;

use super::cond::{Condition, Field};

/// Longest command Lustre accepts (`LPROCFS_WR_NRS_TBF_MAX_CMD` = 4096 with the terminator).
pub const TBF_COMMAND_LEN_MAX: usize = 4095;
/// Longest rule name (`MAX_TBF_NAME` = 16 with the terminator).
pub const TBF_NAME_LEN_MAX: usize = 15;
/// Highest rate from Lustre 2.15 on (must be below 1,000,000).
pub const TBF_RATE_MAX_RPCS_PER_S: u32 = 999_999;
/// Highest rate up to Lustre 2.14 (must be below 65535).
pub const TBF_RATE_MAX_LEGACY_RPCS_PER_S: u32 = 65_534;
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
    EmptyCommand,
    UnknownCommand(String),
    NameEmpty,
    NameTooLong(String),
    NameInvalid(String),
    MissingExpression,
    /// The text after the last `}` does not start with a space.
    TrailingAfterCondition(String),
    BadCondition(String),
    /// Token after the conditions that is not `key=value`.
    BadOption(String),
    UnknownOptionKey(String),
    BadRate(String),
    RateOutOfRange {
        rate: u64,
        max: u32,
    },
    /// `stop` followed by more text.
    UnexpectedArgument(String),
    ChangeNeedsRateOrRank,
    FieldNotEnabled(Field),
    RuleExists(String),
    NoSuchRule(String),
    RankTargetMissing(String),
    StopDefault,
    /// Reading or writing rules while TBF is not the running policy.
    TbfNotStarted,
}

impl TbfError {
    pub fn errno(&self) -> Errno {
        match self {
            TbfError::NameTooLong(_) => Errno::ENAMETOOLONG,
            TbfError::RuleExists(_) => Errno::EEXIST,
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
            TbfError::EmptyCommand => f.write_str("empty command"),
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
            TbfError::BadCondition(m) => write!(f, "bad condition: {m}"),
            TbfError::BadOption(o) => write!(f, "option `{o}` is not key=value"),
            TbfError::UnknownOptionKey(k) => {
                write!(f, "unknown option `{k}` (expected rate, rank or realtime)")
            }
            TbfError::BadRate(r) => write!(f, "rate `{r}` is not a number"),
            TbfError::RateOutOfRange { rate, max } => {
                write!(f, "rate {rate} is out of range 1..={max}")
            }
            TbfError::UnexpectedArgument(a) => write!(f, "unexpected argument `{a}`"),
            TbfError::ChangeNeedsRateOrRank => f.write_str("change needs rate= or rank="),
            TbfError::FieldNotEnabled(fld) => {
                write!(f, "field `{fld}` is not enabled by the TBF policy type")
            }
            TbfError::RuleExists(n) => write!(f, "rule `{n}` already exists"),
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

/// A parsed `nrs_tbf_rule` write. `Display` gives canonical text that parses back to the same
/// value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TbfCommand {
    /// `None`: both heads (or the regular one where there is no HP head).
    pub queue: Option<NrsQueue>,
    pub op: TbfOp,
}

fn check_name(name: &str) -> Result<(), TbfError> {
    if name.is_empty() {
        return Err(TbfError::NameEmpty);
    }
    if name.len() > TBF_NAME_LEN_MAX {
        return Err(TbfError::NameTooLong(name.to_string()));
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(TbfError::NameInvalid(name.to_string()));
    }
    Ok(())
}

/// Splits off the first space-delimited token.
fn next_token(text: &str) -> (&str, &str) {
    let text = text.trim_start_matches(' ');
    match text.find(' ') {
        Some(i) => (&text[..i], &text[i..]),
        None => (text, ""),
    }
}

impl TbfCommand {
    /// Parses a command with the 2.15+ rate limit.
    pub fn parse(text: &str) -> Result<TbfCommand, TbfError> {
        Self::parse_with_rate_max(text, TBF_RATE_MAX_RPCS_PER_S)
    }

    pub fn parse_with_rate_max(text: &str, rate_max: u32) -> Result<TbfCommand, TbfError> {
        if text.len() > TBF_COMMAND_LEN_MAX {
            return Err(TbfError::CommandTooLong {
                len_bytes: text.len(),
            });
        }
        // `echo` adds a newline; Lustre's writer strips it the same way.
        let text = text
            .trim_end_matches(['\n', ' '])
            .replace(['\n', '\t'], " ");
        let (mut verb, mut rest) = next_token(&text);
        let queue = NrsQueue::from_prefix(verb);
        if queue.is_some() {
            (verb, rest) = next_token(rest);
        }
        if verb.is_empty() {
            return Err(TbfError::EmptyCommand);
        }
        let (name, rest) = next_token(rest);
        let op = match verb {
            "start" => {
                check_name(name)?;
                let rest = rest.trim_start_matches(' ');
                let end = rest.rfind('}').ok_or(TbfError::MissingExpression)?;
                let (cond, opts) = rest.split_at(end + 1);
                if !(opts.is_empty() || opts.starts_with(' ')) {
                    return Err(TbfError::TrailingAfterCondition(opts.to_string()));
                }
                let condition = Condition::parse(cond).map_err(TbfError::BadCondition)?;
                let opts = parse_options(opts, rate_max)?;
                TbfOp::Start {
                    name: name.to_string(),
                    condition,
                    rate_rpcs_per_s: opts.rate,
                    rank: opts.rank,
                    realtime: opts.realtime,
                }
            }
            "change" => {
                check_name(name)?;
                let opts = parse_options(rest, rate_max)?;
                if opts.rate.is_none() && opts.rank.is_none() {
                    return Err(TbfError::ChangeNeedsRateOrRank);
                }
                TbfOp::Change {
                    name: name.to_string(),
                    rate_rpcs_per_s: opts.rate,
                    rank: opts.rank,
                }
            }
            "stop" => {
                check_name(name)?;
                let extra = rest.trim();
                if !extra.is_empty() {
                    return Err(TbfError::UnexpectedArgument(extra.to_string()));
                }
                TbfOp::Stop {
                    name: name.to_string(),
                }
            }
            other => return Err(TbfError::UnknownCommand(other.to_string())),
        };
        Ok(TbfCommand { queue, op })
    }
}

struct Options {
    rate: Option<u32>,
    rank: Option<String>,
    realtime: bool,
}

fn parse_options(text: &str, rate_max: u32) -> Result<Options, TbfError> {
    let mut o = Options {
        rate: None,
        rank: None,
        realtime: false,
    };
    for tok in text.split(' ').filter(|t| !t.is_empty()) {
        let (key, val) = tok
            .split_once('=')
            .filter(|(_, v)| !v.is_empty())
            .ok_or_else(|| TbfError::BadOption(tok.to_string()))?;
        match key {
            "rate" => {
                if !val.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(TbfError::BadRate(val.to_string()));
                }
                let rate: u64 = val.parse().unwrap_or(u64::MAX);
                if rate == 0 || rate > rate_max as u64 {
                    return Err(TbfError::RateOutOfRange {
                        rate,
                        max: rate_max,
                    });
                }
                o.rate = Some(rate as u32);
            }
            "rank" => o.rank = Some(val.to_string()),
            "realtime" => {
                if !val.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(TbfError::BadOption(tok.to_string()));
                }
                // Any N > 0 sets the flag; only `start` keeps it.
                o.realtime = val.bytes().any(|b| b != b'0');
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
    use crate::sched::tbf::cond::Expression;
    use proptest::prelude::*;

    #[test]
    fn manual_examples_parse() {
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
            assert_eq!(TbfCommand::parse(&cmd.to_string()).unwrap(), cmd);
        }
        let cmd = TbfCommand::parse("start realjob jobid={dd.0} rate=100 realtime=1").unwrap();
        assert_eq!(
            cmd.op,
            TbfOp::Start {
                name: "realjob".into(),
                condition: Condition {
                    any_of: vec![vec![Expression::Jobid(vec!["dd.0".into()])]]
                },
                rate_rpcs_per_s: Some(100),
                rank: None,
                realtime: true,
            }
        );
        // Spaces inside braces, a trailing newline and the realtime flag on change (ignored).
        let cmd = TbfCommand::parse("start s uid={ 1  2 } rate=5\n").unwrap();
        assert_eq!(cmd.to_string(), "start s uid={1 2} rate=5");
        let cmd = TbfCommand::parse("change s rate=7 realtime=1").unwrap();
        assert_eq!(cmd.to_string(), "change s rate=7");
    }

    #[test]
    fn rejects_every_malformed_form_with_lustre_errno() {
        let long = format!("start a jobid={{{}}}", "x ".repeat(2100));
        let cases: Vec<(String, Errno)> = vec![
            (
                "start abcdefghijklmnop jobid={a}".into(),
                Errno::ENAMETOOLONG,
            ),
            ("start  ".into(), Errno::EINVAL),
            ("start a-b jobid={a}".into(), Errno::EINVAL),
            ("start a.b jobid={a}".into(), Errno::EINVAL),
            ("start a".into(), Errno::EINVAL),
            ("start a rate=10".into(), Errno::EINVAL),
            ("start a jobid={a}rate=10".into(), Errno::EINVAL),
            ("start a jobid=a".into(), Errno::EINVAL),
            ("start a projid={1}".into(), Errno::EINVAL),
            ("start a jobid={a} rate=0".into(), Errno::EINVAL),
            ("start a jobid={a} rate=1000000".into(), Errno::EINVAL),
            ("start a jobid={a} rate=ten".into(), Errno::EINVAL),
            ("start a jobid={a} speed=10".into(), Errno::EINVAL),
            ("start a jobid={a} rate".into(), Errno::EINVAL),
            ("start a jobid={a} rank=".into(), Errno::EINVAL),
            ("change a".into(), Errno::EINVAL),
            ("change a realtime=1".into(), Errno::EINVAL),
            ("stop a b".into(), Errno::EINVAL),
            ("frob a".into(), Errno::EINVAL),
            ("".into(), Errno::EINVAL),
            ("hp".into(), Errno::EINVAL),
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
        assert!(TbfCommand::parse("start a jobid={a} rate=999999").is_ok());
        assert_eq!(
            TbfCommand::parse_with_rate_max("start a jobid={a} rate=65535", 65_534)
                .unwrap_err()
                .errno(),
            Errno::EINVAL
        );
    }

    fn name() -> impl Strategy<Value = String> {
        "[A-Za-z0-9_]{1,15}"
    }

    fn expression() -> impl Strategy<Value = Expression> {
        prop_oneof![
            prop::collection::vec("[a-z0-9.*_:-]{1,8}", 1..4).prop_map(Expression::Jobid),
            prop::collection::vec(any::<u32>(), 1..4).prop_map(Expression::Uid),
            prop::collection::vec(any::<u32>(), 1..4).prop_map(Expression::Gid),
            prop::collection::vec(
                prop::sample::select(crate::model::Opcode::ALL.to_vec()),
                1..4
            )
            .prop_map(Expression::Opcode),
            prop::collection::vec(
                prop::sample::select(vec![
                    "192.168.1.[2-128]@tcp",
                    "*.*.*.*@o2ib",
                    "0@lo",
                    "10.0.[1,3,5-7].4@tcp1",
                ]),
                1..3
            )
            .prop_map(|v| Expression::Nid(
                v.iter()
                    .map(|s| crate::sched::tbf::nid::NidRange::parse(s).unwrap())
                    .collect()
            )),
        ]
    }

    fn command() -> impl Strategy<Value = TbfCommand> {
        let queue = prop::option::of(prop::sample::select(vec![
            NrsQueue::Regular,
            NrsQueue::HighPriority,
        ]));
        let rate = prop::option::of(1u32..=TBF_RATE_MAX_RPCS_PER_S);
        let op = prop_oneof![
            (
                name(),
                prop::collection::vec(prop::collection::vec(expression(), 1..3), 1..3),
                rate.clone(),
                prop::option::of(name()),
                any::<bool>()
            )
                .prop_map(|(name, any_of, rate, rank, realtime)| TbfOp::Start {
                    name,
                    condition: Condition { any_of },
                    rate_rpcs_per_s: rate,
                    rank,
                    realtime
                }),
            (name(), rate, prop::option::of(name()))
                .prop_filter("change needs rate or rank", |(_, r, k)| r.is_some()
                    || k.is_some())
                .prop_map(|(name, rate, rank)| TbfOp::Change {
                    name,
                    rate_rpcs_per_s: rate,
                    rank
                }),
            name().prop_map(|name| TbfOp::Stop { name }),
        ];
        (queue, op).prop_map(|(queue, op)| TbfCommand { queue, op })
    }

    proptest! {
        #[test]
        fn display_parses_back_to_the_same_command(cmd in command()) {
            let text = cmd.to_string();
            prop_assert_eq!(TbfCommand::parse(&text), Ok(cmd), "text: {}", text);
        }
    }
}
