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

impl ListedRule {
    /// Parses one rule line from both ends, because the condition may contain spaces.
    pub fn parse(line: &str) -> Result<ListedRule, String> {
        let (head, refs) = line
            .rsplit_once(", ref ")
            .ok_or_else(|| format!("`{line}` has no `, ref N`"))?;
        let refs: u64 = refs
            .trim()
            .parse()
            .map_err(|_| format!("bad ref count in `{line}`"))?;
        let (head, rate) = head
            .rsplit_once(' ')
            .ok_or_else(|| format!("`{line}` has no rate"))?;
        let rate_rpcs_per_s: u32 = rate
            .parse()
            .map_err(|_| format!("bad rate `{rate}` in `{line}`"))?;
        let (name, conditions) = head
            .split_once(' ')
            .ok_or_else(|| format!("`{line}` has no condition"))?;
        if name.is_empty() || conditions.is_empty() {
            return Err(format!("`{line}` lacks a name or a condition"));
        }
        Ok(ListedRule {
            name: name.to_string(),
            conditions: conditions.to_string(),
            rate_rpcs_per_s,
            refs,
        })
    }
}

impl TbfRuleListing {
    /// Parses the value, with or without the leading `ost.OSS.ost_io.nrs_tbf_rule=` line that
    /// `lctl get_param` (without `-n`) prints.
    pub fn parse(text: &str) -> Result<TbfRuleListing, ListingParseError> {
        let err = |line: usize, message: String| ListingParseError { line, message };
        if text.len() > LISTING_LEN_BYTES_MAX {
            return Err(err(0, format!("longer than {LISTING_LEN_BYTES_MAX} bytes")));
        }
        let mut lines = text.lines().enumerate().peekable();
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
        let mut regular: Option<Vec<CptRules>> = None;
        let mut high_priority: Option<Vec<CptRules>> = None;
        let mut in_hp = false;
        for (i, line) in first_value.into_iter().chain(lines) {
            let lineno = i + 1;
            let line = line.trim_end();
            if line.is_empty() {
                continue;
            }
            if line == "regular_requests:" {
                if regular.is_some() {
                    return Err(err(lineno, "second regular_requests section".into()));
                }
                regular = Some(Vec::new());
                in_hp = false;
                continue;
            }
            if line == "high_priority_requests:" {
                if high_priority.is_some() {
                    return Err(err(lineno, "second high_priority_requests section".into()));
                }
                high_priority = Some(Vec::new());
                in_hp = true;
                continue;
            }
            let section = if in_hp {
                high_priority.as_mut()
            } else {
                regular.as_mut()
            }
            .ok_or_else(|| err(lineno, format!("`{line}` before any section header")))?;
            if let Some(n) = line.strip_prefix("CPT ").and_then(|r| r.strip_suffix(':')) {
                let cpt = n
                    .parse()
                    .map_err(|_| err(lineno, format!("bad CPT number `{n}`")))?;
                section.push(CptRules {
                    cpt,
                    rules: Vec::new(),
                });
                continue;
            }
            let cpt = section
                .last_mut()
                .ok_or_else(|| err(lineno, format!("rule line `{line}` before any CPT")))?;
            cpt.rules
                .push(ListedRule::parse(line).map_err(|m| err(lineno, m))?);
        }
        Ok(TbfRuleListing {
            regular: regular.ok_or_else(|| err(0, "no regular_requests section".into()))?,
            high_priority,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
