//! The weight rules of SFQ(D)/DSFQ and their command language, written the way `nrs_tbf_rule`
//! is (`lustre/ptlrpc/nrs_tbf.c`), with a weight where TBF has a rate:
//!
//! ```text
//! [reg|hp] start  <name> <conditions> [weight=N]
//! [reg|hp] change <name> weight=N
//! [reg|hp] stop   <name>
//! ```
//!
//! Conditions are TBF's (`jobid={dd.* 4151234}`, `nid={192.168.1.[1-4]@tcp}`, `uid={500}`,
//! combined with `&` and `,`), parsed by TBF's own parser for the policy's classification type,
//! so the same text means the same flows in both files. Job ids inside a condition are items
//! between single spaces: no character of a job id is ever an operator outside the braces,
//! because Lustre's splitting (which pfsqos reproduces) happens before the braces are read.
//! A flow takes the weight of the first rule whose condition it matches (newest first), else
//! the `default` rule's, which can be changed but not stopped (as TBF's default rule).

use std::fmt::Write;

use crate::errno::Errno;
use crate::policy::NrsError;
use crate::tbf::kstrto::{kstrtoull, strsep};
use crate::tbf::rule::{check_name, TBF_COMMAND_LEN_MAX};
use crate::tbf::{ClassType, Condition, LustreVersion, NrsQueue, TbfError};

/// Highest weight: below a million, as TBF's rate (a weight is a relative rate).
pub const SFQ_WEIGHT_MAX: u32 = 999_999;
/// Weight of the `default` rule when the policy starts, and of `start` without `weight=`.
pub const SFQ_WEIGHT_DEFAULT: u32 = 1;
/// Most rules a head holds, the default included: TBF's bound, for the same reason (a rule
/// per known job; every rule is tried when a new flow binds).
pub const SFQ_WEIGHT_RULES_MAX: usize = crate::limits::TBF_RULES_MAX;
/// Name of the built-in fallback rule.
pub const DEFAULT_RULE_NAME: &str = "default";

/// One weight rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightRule {
    /// Unique within the instance; flows point at it.
    pub id: u32,
    pub name: String,
    pub condition: Condition,
    pub weight: u32,
}

/// What a weight command does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightOp {
    Start {
        name: String,
        condition: Condition,
        weight: Option<u32>,
    },
    Change {
        name: String,
        weight: u32,
    },
    Stop {
        name: String,
    },
}

/// A parsed write to `nrs_<policy>_weight`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightCommand {
    /// `None`: every head (regular and high-priority).
    pub queue: Option<NrsQueue>,
    pub op: WeightOp,
}

fn einval(message: impl Into<String>) -> NrsError {
    NrsError {
        errno: Errno::EINVAL,
        message: message.into(),
    }
}

fn weight_value(text: &str) -> Result<u32, NrsError> {
    // kstrtoull accepts one trailing newline, as `echo ... > file` leaves it.
    let w = kstrtoull(text, 10).map_err(|_| einval(format!("weight `{text}` is not a number")))?;
    if w == 0 || w > SFQ_WEIGHT_MAX as u64 {
        return Err(einval(format!(
            "weight {w} is out of range 1..={SFQ_WEIGHT_MAX}"
        )));
    }
    Ok(w as u32)
}

/// `key=value` options after the condition (start) or the name (change, stop): only
/// `weight=`; a later one overrides an earlier one.
fn parse_weight_option(text: Option<&str>) -> Result<Option<u32>, NrsError> {
    let mut weight = None;
    let mut rest = text;
    while let Some(r) = rest.filter(|r| !r.is_empty()) {
        let (tok, next) = strsep(r, ' ');
        rest = next;
        let (key, val) = strsep(tok, '=');
        let val = val
            .filter(|v| !v.is_empty())
            .ok_or_else(|| einval(format!("option `{tok}` is not key=value")))?;
        match key {
            "weight" => weight = Some(weight_value(val)?),
            other => {
                return Err(einval(format!(
                    "unknown option `{other}` (expected weight)"
                )))
            }
        }
    }
    Ok(weight)
}

impl WeightCommand {
    /// Parses a write for a head classifying by `class_type` on `version`, with TBF's
    /// tokenizing (single spaces, no trimming, the condition up to the last `}`).
    pub fn parse(
        text: &str,
        class_type: ClassType,
        version: LustreVersion,
    ) -> Result<WeightCommand, NrsError> {
        if text.len() > TBF_COMMAND_LEN_MAX {
            return Err(einval(format!(
                "command is {} bytes; at most {TBF_COMMAND_LEN_MAX} are accepted",
                text.len()
            )));
        }
        let (first, rest) = strsep(text, ' ');
        let rest = rest.ok_or_else(|| einval("empty or incomplete command"))?;
        let queue = NrsQueue::from_prefix(first);
        let body = if queue.is_some() { rest } else { text };
        let (verb, rest) = strsep(body, ' ');
        let rest = rest
            .filter(|r| !r.is_empty())
            .ok_or_else(|| einval("empty or incomplete command"))?;
        if !matches!(verb, "start" | "change" | "stop") {
            return Err(einval(format!(
                "unknown command `{verb}` (expected start, change or stop)"
            )));
        }
        let (name, rest) = strsep(rest, ' ');
        if rest.is_none() && verb != "stop" {
            return Err(einval("missing condition or option"));
        }
        check_name(name).map_err(NrsError::from)?;
        let name = name.to_string();
        let op = match verb {
            "start" => {
                let token = rest.unwrap_or_default();
                let end = token
                    .rfind('}')
                    .ok_or_else(|| einval("missing condition (`field={list}` expected)"))?;
                let (cond, after) = token.split_at(end + 1);
                let opts = match after.strip_prefix(' ') {
                    Some(o) => Some(o),
                    None if after.is_empty() => None,
                    None => {
                        return Err(einval(format!(
                            "the condition must end with `}}` followed by a space: `{after}`"
                        )))
                    }
                };
                let condition = Condition::parse_for(cond, class_type, version)
                    .map_err(|m| einval(format!("bad condition: {m}")))?;
                if let Some(f) = condition.fields().find(|f| !class_type.contains(*f)) {
                    return Err(TbfError::FieldNotEnabled(f).into());
                }
                WeightOp::Start {
                    name,
                    condition,
                    weight: parse_weight_option(opts)?,
                }
            }
            "change" => WeightOp::Change {
                name,
                weight: parse_weight_option(rest)?.ok_or_else(|| einval("change needs weight="))?,
            },
            _ => {
                if rest.is_some_and(|r| !r.is_empty()) {
                    return Err(einval("stop takes no option"));
                }
                WeightOp::Stop { name }
            }
        };
        Ok(WeightCommand { queue, op })
    }
}

/// The rules of one head, highest priority first, the default rule last.
#[derive(Clone, Debug)]
pub(super) struct WeightRules {
    pub(super) rules: Vec<WeightRule>,
    next_id: u32,
    /// [`SFQ_WEIGHT_RULES_MAX`]; lowered by tests.
    pub(super) rules_max: usize,
}

impl WeightRules {
    pub(super) fn new() -> WeightRules {
        WeightRules {
            rules: vec![WeightRule {
                id: 0,
                name: DEFAULT_RULE_NAME.to_string(),
                condition: Condition::default(),
                weight: SFQ_WEIGHT_DEFAULT,
            }],
            next_id: 1,
            rules_max: SFQ_WEIGHT_RULES_MAX,
        }
    }

    /// The rule a flow with class key `key` binds to: `(rule id, weight)`.
    pub(super) fn matching(&self, key: &crate::model::RpcTags) -> (u32, u32) {
        let r = self
            .rules
            .iter()
            .find(|r| r.name != DEFAULT_RULE_NAME && r.condition.matches(key))
            .unwrap_or_else(|| self.rules.last().expect("the default rule is always there"));
        (r.id, r.weight)
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.rules.iter().position(|r| r.name == name)
    }

    /// Applies `op`: EEXIST for a name in use, ENOMEM at [`SFQ_WEIGHT_RULES_MAX`], ENOENT for
    /// a missing rule, EPERM for stopping the default rule. Nothing changes on an error.
    pub(super) fn apply(&mut self, op: &WeightOp) -> Result<(), NrsError> {
        match op {
            WeightOp::Start {
                name,
                condition,
                weight,
            } => {
                if self.find(name).is_some() {
                    return Err(NrsError {
                        errno: Errno::EEXIST,
                        message: format!("rule `{name}` already exists"),
                    });
                }
                if self.rules.len() >= self.rules_max {
                    return Err(NrsError {
                        errno: Errno::ENOMEM,
                        message: format!(
                            "a head holds at most {SFQ_WEIGHT_RULES_MAX} rules (the default included)"
                        ),
                    });
                }
                let id = self.next_id;
                self.next_id += 1;
                // Newest first, as TBF: the latest rule wins over older overlapping ones.
                self.rules.insert(
                    0,
                    WeightRule {
                        id,
                        name: name.clone(),
                        condition: condition.clone(),
                        weight: weight.unwrap_or(SFQ_WEIGHT_DEFAULT),
                    },
                );
            }
            WeightOp::Change { name, weight } => {
                let i = self.find(name).ok_or_else(|| NrsError {
                    errno: Errno::ENOENT,
                    message: format!("no rule named `{name}`"),
                })?;
                self.rules[i].weight = *weight;
            }
            WeightOp::Stop { name } => {
                if name == DEFAULT_RULE_NAME {
                    return Err(NrsError {
                        errno: Errno::EPERM,
                        message: "the default rule cannot be stopped".into(),
                    });
                }
                let i = self.find(name).ok_or_else(|| NrsError {
                    errno: Errno::ENOENT,
                    message: format!("no rule named `{name}`"),
                })?;
                self.rules.remove(i);
            }
        }
        assert!(self.rules.len() <= self.rules_max);
        assert_eq!(
            self.rules.last().map(|r| r.name.as_str()),
            Some(DEFAULT_RULE_NAME)
        );
        Ok(())
    }

    /// The rule lines of one head as `nrs_tbf_rule` prints them in the expression form,
    /// with the weight where TBF prints the rate: `name conditions weight, ref flows`.
    pub(super) fn listing(&self, refs: impl Fn(u32) -> u64) -> String {
        let mut out = String::new();
        for r in &self.rules {
            let _ = writeln!(
                out,
                "{} {} {}, ref {}",
                r.name,
                r.condition,
                r.weight,
                refs(r.id)
            );
        }
        out
    }
}
