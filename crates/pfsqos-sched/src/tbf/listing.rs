//! The `lctl get_param ost.OSS.ost_io.nrs_tbf_rule` listing: printer and parser.
//!
//! ```text
//! regular_requests:
//! CPT 0:
//! dd_all jobid={dd.*} 50, ref 2
//! default * 10000, ref 7
//! high_priority_requests:
//! CPT 0:
//! ...
//! ```

use std::fmt;

use crate::lines::LineCursor;

/// Which Lustre version's rule-line format to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListingForm {
    /// Up to and including 2.17.0: single-field types print `name {list} rate` and the default
    /// rule as `default {*} rate`; the generic type prints the expression.
    Legacy,
    /// 2.17.51 and later (LU-18192): every type prints the expression, default is `*`.
    Expression,
}

/// Longest listing text the parser accepts (a bound on outside input).
pub const LISTING_LEN_BYTES_MAX: usize = 16 << 20;

/// One rule line of one CPT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedRule {
    pub name: String,
    /// The condition text as printed (`jobid={dd.*}`, `{dd.*}`, `*`, `{*}`).
    pub conditions: String,
    pub rate_rpcs_per_s: u32,
    /// Classes bound to the rule on this CPT, idle cached ones included.
    pub refs: u64,
}

/// The rules of one CPU partition, highest priority first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CptRules {
    pub cpt: u32,
    pub rules: Vec<ListedRule>,
}

/// A whole `nrs_tbf_rule` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TbfRuleListing {
    pub regular: Vec<CptRules>,
    /// Present when the service has a high-priority queue.
    pub high_priority: Option<Vec<CptRules>>,
}

/// Why a listing could not be parsed: the 1-based line number and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListingParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ListingParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "nrs_tbf_rule listing line {}: {}",
            self.line, self.message
        )
    }
}

impl std::error::Error for ListingParseError {}

impl fmt::Display for ListedRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}, ref {}",
            self.name, self.conditions, self.rate_rpcs_per_s, self.refs
        )
    }
}

fn fmt_section(f: &mut fmt::Formatter<'_>, cpts: &[CptRules]) -> fmt::Result {
    for cpt in cpts {
        writeln!(f, "CPT {}:", cpt.cpt)?;
        for r in &cpt.rules {
            writeln!(f, "{r}")?;
        }
    }
    Ok(())
}

/// The value as `lctl get_param -n` prints it (no `param=` line), each line ending in `\n`.
impl fmt::Display for TbfRuleListing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "regular_requests:")?;
        fmt_section(f, &self.regular)?;
        if let Some(hp) = &self.high_priority {
            writeln!(f, "high_priority_requests:")?;
            fmt_section(f, hp)?;
        }
        Ok(())
    }
}

/// One rule line borrowed from the listing's text ([`TbfRuleListing::visit`]): what a reader
/// that keeps little of a large listing needs, without an allocation per line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListedRuleRef<'a> {
    pub name: &'a str,
    pub conditions: &'a str,
    pub rate_rpcs_per_s: u32,
    pub refs: u64,
}

impl<'a> ListedRuleRef<'a> {
    /// Parses one rule line from both ends, because the condition may contain spaces.
    pub fn parse(line: &'a str) -> Result<ListedRuleRef<'a>, String> {
        // `, ref N` ends the line, and N has no comma: the last comma must start it (a line
        // where it does not is refused, as a search for the last `, ref ` would refuse it:
        // its count would hold the comma). A byte search, not a substring searcher per line.
        let (head, refs) = memchr::memrchr(b',', line.as_bytes())
            .and_then(|at| Some((&line[..at], line[at..].strip_prefix(", ref ")?)))
            .ok_or_else(|| format!("`{line}` has no `, ref N`"))?;
        let refs: u64 = refs
            .trim()
            .parse()
            .map_err(|_| format!("bad ref count in `{line}`"))?;
        // Byte searches for the spaces too (`split_once(' ')` runs a char searcher).
        let (head, rate) = memchr::memrchr(b' ', head.as_bytes())
            .map(|at| (&head[..at], &head[at + 1..]))
            .ok_or_else(|| format!("`{line}` has no rate"))?;
        let rate_rpcs_per_s: u32 = rate
            .parse()
            .map_err(|_| format!("bad rate `{rate}` in `{line}`"))?;
        let (name, conditions) = memchr::memchr(b' ', head.as_bytes())
            .map(|at| (&head[..at], &head[at + 1..]))
            .ok_or_else(|| format!("`{line}` has no condition"))?;
        if name.is_empty() || conditions.is_empty() {
            return Err(format!("`{line}` lacks a name or a condition"));
        }
        Ok(ListedRuleRef {
            name,
            conditions,
            rate_rpcs_per_s,
            refs,
        })
    }

    pub fn to_owned_rule(&self) -> ListedRule {
        ListedRule {
            name: self.name.to_string(),
            conditions: self.conditions.to_string(),
            rate_rpcs_per_s: self.rate_rpcs_per_s,
            refs: self.refs,
        }
    }
}

impl ListedRule {
    /// Parses one rule line from both ends, because the condition may contain spaces.
    pub fn parse(line: &str) -> Result<ListedRule, String> {
        ListedRuleRef::parse(line).map(|r| r.to_owned_rule())
    }
}

/// What [`TbfRuleListing::visit`] meets, in the text's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListingItem<'a> {
    /// A `CPT n:` header of the regular or the high-priority section.
    Cpt { high_priority: bool, cpt: u32 },
    /// A rule line of the CPT last announced.
    Rule {
        high_priority: bool,
        cpt: u32,
        rule: ListedRuleRef<'a>,
    },
}

impl TbfRuleListing {
    /// Parses the value, with or without the leading `ost.OSS.ost_io.nrs_tbf_rule=` line that
    /// `lctl get_param` (without `-n`) prints.
    pub fn parse(text: &str) -> Result<TbfRuleListing, ListingParseError> {
        let mut regular: Vec<CptRules> = Vec::new();
        let mut high_priority: Vec<CptRules> = Vec::new();
        let sections = Self::visit(text, |item| match item {
            ListingItem::Cpt {
                high_priority: hp,
                cpt,
            } => {
                let section = if hp { &mut high_priority } else { &mut regular };
                section.push(CptRules {
                    cpt,
                    rules: Vec::new(),
                });
            }
            ListingItem::Rule {
                high_priority: hp,
                rule,
                ..
            } => {
                let section = if hp { &mut high_priority } else { &mut regular };
                section
                    .last_mut()
                    .expect("visit announces a CPT before its rules")
                    .rules
                    .push(rule.to_owned_rule());
            }
        })?;
        Ok(TbfRuleListing {
            regular,
            high_priority: sections.high_priority.then_some(high_priority),
        })
    }

    /// Reads the value as [`TbfRuleListing::parse`] does, with the same checks and errors, and
    /// hands each CPT header and rule line to `f` borrowed from `text` (no allocation per
    /// line: an OSS with thousands of rules on every partition lists tens of thousands of
    /// lines, and the Lustre agent reads the listing every period). Returns which sections
    /// the text had.
    pub fn visit<'a>(
        text: &'a str,
        mut f: impl FnMut(ListingItem<'a>),
    ) -> Result<ListingSections, ListingParseError> {
        let err = |line: usize, message: String| ListingParseError { line, message };
        if text.len() > LISTING_LEN_BYTES_MAX {
            return Err(err(0, format!("longer than {LISTING_LEN_BYTES_MAX} bytes")));
        }
        let mut lines = LineCursor::new(text).enumerate().peekable();
        // A `param=` first line, possibly with the first value line glued after the `=`.
        let mut first_value: Option<(usize, &str)> = None;
        if let Some(&(i, first)) = lines.peek() {
            if let Some((param, value)) = first.split_once('=') {
                if !param.is_empty() && !param.contains([' ', '{']) {
                    lines.next();
                    if !value.is_empty() {
                        first_value = Some((i, value));
                    }
                }
            }
        }
        let mut sections = ListingSections {
            regular: false,
            high_priority: false,
        };
        let mut in_hp = false;
        // The CPT whose rules follow, in the current section.
        let mut cpt: Option<u32> = None;
        for (i, line) in first_value.into_iter().chain(lines) {
            let lineno = i + 1;
            let line = line.trim_end();
            if line.is_empty() {
                continue;
            }
            if line == "regular_requests:" {
                if sections.regular {
                    return Err(err(lineno, "second regular_requests section".into()));
                }
                sections.regular = true;
                in_hp = false;
                cpt = None;
                continue;
            }
            if line == "high_priority_requests:" {
                if sections.high_priority {
                    return Err(err(lineno, "second high_priority_requests section".into()));
                }
                sections.high_priority = true;
                in_hp = true;
                cpt = None;
                continue;
            }
            if !(if in_hp {
                sections.high_priority
            } else {
                sections.regular
            }) {
                return Err(err(lineno, format!("`{line}` before any section header")));
            }
            if let Some(n) = line.strip_prefix("CPT ").and_then(|r| r.strip_suffix(':')) {
                let n = n
                    .parse()
                    .map_err(|_| err(lineno, format!("bad CPT number `{n}`")))?;
                cpt = Some(n);
                f(ListingItem::Cpt {
                    high_priority: in_hp,
                    cpt: n,
                });
                continue;
            }
            let Some(cpt) = cpt else {
                return Err(err(lineno, format!("rule line `{line}` before any CPT")));
            };
            let rule = ListedRuleRef::parse(line).map_err(|m| err(lineno, m))?;
            f(ListingItem::Rule {
                high_priority: in_hp,
                cpt,
                rule,
            });
        }
        if !sections.regular {
            return Err(err(0, "no regular_requests section".into()));
        }
        Ok(sections)
    }
}

/// Which sections a listing had ([`TbfRuleListing::visit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListingSections {
    pub regular: bool,
    pub high_priority: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `visit` hands over exactly what `parse` keeps, borrowed, headers included; a comma
    /// inside a condition does not confuse the `, ref N` split, a comma after it is refused.
    #[test]
    fn visit_sees_what_parse_keeps() {
        let text = "ost.OSS.ost_io.nrs_tbf_rule=\nregular_requests:\nCPT 0:\n\
                    a jobid={x.1,y.2} 5, ref 2\ndefault * 10000, ref 0\nCPT 1:\n\
                    high_priority_requests:\nCPT 0:\nb uid={7} 3, ref 1\n";
        let mut seen = Vec::new();
        let sections = TbfRuleListing::visit(text, |item| seen.push(item)).unwrap();
        assert_eq!(
            sections,
            ListingSections {
                regular: true,
                high_priority: true
            }
        );
        let rule = |name, conditions, rate_rpcs_per_s, refs| ListedRuleRef {
            name,
            conditions,
            rate_rpcs_per_s,
            refs,
        };
        assert_eq!(
            seen,
            vec![
                ListingItem::Cpt {
                    high_priority: false,
                    cpt: 0
                },
                ListingItem::Rule {
                    high_priority: false,
                    cpt: 0,
                    rule: rule("a", "jobid={x.1,y.2}", 5, 2)
                },
                ListingItem::Rule {
                    high_priority: false,
                    cpt: 0,
                    rule: rule("default", "*", 10000, 0)
                },
                ListingItem::Cpt {
                    high_priority: false,
                    cpt: 1
                },
                ListingItem::Cpt {
                    high_priority: true,
                    cpt: 0
                },
                ListingItem::Rule {
                    high_priority: true,
                    cpt: 0,
                    rule: rule("b", "uid={7}", 3, 1)
                },
            ]
        );
        let parsed = TbfRuleListing::parse(text).unwrap();
        assert_eq!(parsed.regular.len(), 2);
        assert_eq!(parsed.regular[0].rules[0].conditions, "jobid={x.1,y.2}");
        assert!(parsed.regular[1].rules.is_empty());
        assert_eq!(parsed.high_priority.unwrap()[0].rules[0].name, "b");
        assert!(ListedRuleRef::parse("a jobid={x} 5, ref 2, 3").is_err());
        assert!(ListedRuleRef::parse("a jobid={x} 5 ref 2").is_err());
        assert!(TbfRuleListing::visit("CPT 0:\n", |_| {}).is_err());
        assert!(TbfRuleListing::visit("regular_requests:\na * 5, ref 1\n", |_| {}).is_err());
    }

    const EXAMPLE_A: &str = "ost.OSS.ost_io.nrs_tbf_rule=
regular_requests:
CPT 0:
vip {4150001} 5000, ref 0
dd_all {dd.*} 50, ref 2
slurm_low {4151234 4151235} 200, ref 1
default {*} 10000, ref 7
CPT 1:
vip {4150001} 5000, ref 1
dd_all {dd.*} 50, ref 0
slurm_low {4151234 4151235} 200, ref 2
default {*} 10000, ref 4
high_priority_requests:
CPT 0:
vip {4150001} 5000, ref 0
dd_all {dd.*} 50, ref 0
slurm_low {4151234 4151235} 200, ref 0
default {*} 10000, ref 1
CPT 1:
vip {4150001} 5000, ref 0
dd_all {dd.*} 50, ref 0
slurm_low {4151234 4151235} 200, ref 0
default {*} 10000, ref 0
";

    const EXAMPLE_C: &str = "regular_requests:
CPT 0:
comp_rule opcode={ost_write}&jobid={dd.0},nid={192.168.1.[1-128]@tcp 0@lo} 100, ref 0
default * 10000, ref 0
CPT 1:
comp_rule opcode={ost_write}&jobid={dd.0},nid={192.168.1.[1-128]@tcp 0@lo} 100, ref 0
default * 10000, ref 0
";

    #[test]
    fn parses_and_reprints_the_legacy_example() {
        let l = TbfRuleListing::parse(EXAMPLE_A).unwrap();
        assert_eq!(l.regular.len(), 2);
        assert_eq!(l.regular[0].rules[1].name, "dd_all");
        assert_eq!(l.regular[0].rules[1].conditions, "{dd.*}");
        assert_eq!(l.regular[0].rules[1].rate_rpcs_per_s, 50);
        assert_eq!(l.regular[0].rules[2].conditions, "{4151234 4151235}");
        assert_eq!(l.regular[0].rules[3].refs, 7);
        assert_eq!(l.high_priority.as_ref().unwrap()[0].rules[3].refs, 1);
        let body = EXAMPLE_A.split_once('\n').unwrap().1;
        assert_eq!(l.to_string(), body);
        assert_eq!(TbfRuleListing::parse(&l.to_string()).unwrap(), l);
    }

    #[test]
    fn parses_and_reprints_the_expression_example() {
        let l = TbfRuleListing::parse(EXAMPLE_C).unwrap();
        assert_eq!(
            l.regular[1].rules[0].conditions,
            "opcode={ost_write}&jobid={dd.0},nid={192.168.1.[1-128]@tcp 0@lo}"
        );
        assert_eq!(l.regular[1].rules[0].rate_rpcs_per_s, 100);
        assert_eq!(l.regular[1].rules[1].conditions, "*");
        assert!(l.high_priority.is_none());
        assert_eq!(l.to_string(), EXAMPLE_C);
        // The glued form `param=regular_requests:` parses the same.
        let glued = format!("ost.OSS.ost_io.nrs_tbf_rule={EXAMPLE_C}");
        assert_eq!(TbfRuleListing::parse(&glued).unwrap(), l);
    }

    #[test]
    fn rejects_malformed_listings() {
        for bad in [
            "",
            "CPT 0:\n",
            "regular_requests:\nx y 5, ref 1\n",
            "regular_requests:\nCPT a:\n",
            "regular_requests:\nCPT 0:\nx y z, ref 1\n",
            "regular_requests:\nCPT 0:\nx y 5, ref -1\n",
            "regular_requests:\nCPT 0:\nx 5, ref 1\n",
        ] {
            assert!(TbfRuleListing::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
