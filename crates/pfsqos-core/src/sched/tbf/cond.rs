//! TBF classification fields, policy types and rule conditions (`nrs_tbf_conds_parse` and
//! friends): a condition is an OR (`,`) of ANDs (`&`) of `field={item item ...}` expressions,
//! and an expression holds when the request's field equals any item.

use std::fmt;

use super::nid::{split_outside, NidRange};
use crate::model::{JobId, LNet, NetKind, Nid, Opcode, RpcTags};

/// A request field TBF can classify on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    Jobid,
    Nid,
    Opcode,
    Uid,
    Gid,
}

impl Field {
    pub const ALL: [Field; 5] = [
        Field::Jobid,
        Field::Nid,
        Field::Opcode,
        Field::Uid,
        Field::Gid,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Field::Jobid => "jobid",
            Field::Nid => "nid",
            Field::Opcode => "opcode",
            Field::Uid => "uid",
            Field::Gid => "gid",
        }
    }

    pub fn from_name(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.name() == name)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Longest policy argument Lustre accepts (`NRS_TBF_TYPE_MAX_LEN` = 20, terminator included).
pub const TBF_TYPE_ARG_LEN_MAX: usize = 19;

/// The classification type of a TBF instance (`tbf`, `tbf jobid`, `tbf nid+jobid`, ...): the
/// set of fields that make up a class key and that rules may test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClassType {
    bits: u8,
    /// Plain `tbf`: every field. Kept apart from "all fields listed with `+`" only for naming.
    generic: bool,
}

impl ClassType {
    /// Plain `tbf`: classifies on every field.
    pub const GENERIC: ClassType = ClassType {
        bits: 0b1_1111,
        generic: true,
    };

    pub fn single(field: Field) -> ClassType {
        ClassType {
            bits: field.bit(),
            generic: false,
        }
    }

    /// Parses the policy argument: empty for generic, else `field[+field...]`.
    pub fn parse(arg: &str) -> Result<ClassType, String> {
        let arg = arg.trim();
        if arg.len() > TBF_TYPE_ARG_LEN_MAX {
            return Err(format!(
                "TBF type `{arg}` is longer than {TBF_TYPE_ARG_LEN_MAX} characters"
            ));
        }
        if arg.is_empty() {
            return Ok(ClassType::GENERIC);
        }
        let mut bits = 0u8;
        for part in arg.split('+') {
            let field =
                Field::from_name(part).ok_or_else(|| format!("unknown TBF type `{part}`"))?;
            bits |= field.bit();
        }
        Ok(ClassType {
            bits,
            generic: false,
        })
    }

    pub fn is_generic(&self) -> bool {
        self.generic
    }

    pub fn contains(&self, field: Field) -> bool {
        self.bits & field.bit() != 0
    }

    /// The one field of a single-field type (`tbf jobid` etc.), which older listings print as
    /// a bare `{list}`.
    pub fn single_field(&self) -> Option<Field> {
        if self.generic || self.bits.count_ones() != 1 {
            return None;
        }
        Field::ALL.into_iter().find(|f| self.contains(*f))
    }

    /// The class key of a request: its tags with every field outside the type blanked, so
    /// requests that agree on the enabled fields share one class.
    #[inline]
    pub fn key(&self, tags: &RpcTags) -> RpcTags {
        const BLANK_NID: Nid = Nid {
            addr: 0,
            net: LNet {
                kind: NetKind::Lo,
                num: 0,
            },
        };
        RpcTags {
            job: if self.contains(Field::Jobid) {
                tags.job
            } else {
                JobId::EMPTY
            },
            nid: if self.contains(Field::Nid) {
                tags.nid
            } else {
                BLANK_NID
            },
            opcode: if self.contains(Field::Opcode) {
                tags.opcode
            } else {
                Opcode::OstRead
            },
            uid: if self.contains(Field::Uid) {
                tags.uid
            } else {
                0
            },
            gid: if self.contains(Field::Gid) {
                tags.gid
            } else {
                0
            },
        }
    }
}

/// Canonical argument text: empty for generic, else fields joined by `+` in [`Field::ALL`] order.
impl fmt::Display for ClassType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.generic {
            return Ok(());
        }
        let mut first = true;
        for field in Field::ALL {
            if self.contains(field) {
                if !first {
                    f.write_str("+")?;
                }
                first = false;
                f.write_str(field.name())?;
            }
        }
        Ok(())
    }
}

/// One `field={items}` test.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expression {
    /// Jobid patterns; `*` matches any run of characters, including none.
    Jobid(Vec<String>),
    Nid(Vec<NidRange>),
    Opcode(Vec<Opcode>),
    Uid(Vec<u32>),
    Gid(Vec<u32>),
}

impl Expression {
    pub fn field(&self) -> Field {
        match self {
            Expression::Jobid(_) => Field::Jobid,
            Expression::Nid(_) => Field::Nid,
            Expression::Opcode(_) => Field::Opcode,
            Expression::Uid(_) => Field::Uid,
            Expression::Gid(_) => Field::Gid,
        }
    }

    pub fn matches(&self, tags: &RpcTags) -> bool {
        match self {
            Expression::Jobid(pats) => pats
                .iter()
                .any(|p| wildcard_match(p.as_bytes(), tags.job.as_str().as_bytes())),
            Expression::Nid(ranges) => ranges.iter().any(|r| r.matches(&tags.nid)),
            Expression::Opcode(ops) => ops.contains(&tags.opcode),
            Expression::Uid(ids) => ids.contains(&tags.uid),
            Expression::Gid(ids) => ids.contains(&tags.gid),
        }
    }

    /// Parses `field={items}` (no surrounding spaces).
    pub fn parse(text: &str) -> Result<Expression, String> {
        let (name, list) = text
            .split_once('=')
            .ok_or_else(|| format!("expression `{text}` is not `field={{list}}`"))?;
        let field = Field::from_name(name).ok_or_else(|| format!("unknown field `{name}`"))?;
        let inner = list
            .strip_prefix('{')
            .and_then(|l| l.strip_suffix('}'))
            .ok_or_else(|| format!("`{list}` must be a list in braces"))?;
        let items: Vec<&str> = inner.split_whitespace().collect();
        if items.is_empty() {
            return Err(format!("empty list in `{text}`"));
        }
        if let Some(bad) = items.iter().find(|i| i.contains(['{', '}'])) {
            return Err(format!("stray brace in item `{bad}`"));
        }
        Ok(match field {
            Field::Jobid => Expression::Jobid(items.iter().map(|s| s.to_string()).collect()),
            Field::Nid => Expression::Nid(
                items
                    .iter()
                    .map(|s| NidRange::parse(s))
                    .collect::<Result<_, _>>()?,
            ),
            Field::Opcode => Expression::Opcode(
                items
                    .iter()
                    .map(|s| Opcode::from_name(s).ok_or_else(|| format!("unknown opcode `{s}`")))
                    .collect::<Result<_, _>>()?,
            ),
            Field::Uid => Expression::Uid(
                items
                    .iter()
                    .map(|s| parse_id(s))
                    .collect::<Result<_, _>>()?,
            ),
            Field::Gid => Expression::Gid(
                items
                    .iter()
                    .map(|s| parse_id(s))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
}

/// A uid/gid with the kernel's base auto-detection (`kstrtoul(.., 0)`): `0x..` hex, a leading
/// `0` octal, otherwise decimal.
pub fn parse_id(text: &str) -> Result<u32, String> {
    let (digits, radix) =
        if let Some(h) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            (h, 16)
        } else if text.len() > 1 && text.starts_with('0') {
            (&text[1..], 8)
        } else {
            (text, 10)
        };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return Err(format!("`{text}` is not an id"));
    }
    u32::from_str_radix(digits, radix).map_err(|_| format!("`{text}` is not a 32-bit id"))
}

impl fmt::Display for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={{", self.field())?;
        self.fmt_list_items(f)?;
        f.write_str("}")
    }
}

impl Expression {
    /// The items separated by single spaces, as the list inside the braces.
    pub fn fmt_list_items(&self, f: &mut dyn fmt::Write) -> fmt::Result {
        fn join<T: fmt::Display>(f: &mut dyn fmt::Write, items: &[T]) -> fmt::Result {
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(" ")?;
                }
                write!(f, "{it}")?;
            }
            Ok(())
        }
        match self {
            Expression::Jobid(v) => join(f, v),
            Expression::Nid(v) => join(f, v),
            Expression::Opcode(v) => join(f, v),
            Expression::Uid(v) => join(f, v),
            Expression::Gid(v) => join(f, v),
        }
    }
}

/// Glob match where `*` is the only metacharacter (libcfs `cfs_match_wildcard`).
pub fn wildcard_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    // Position after the last `*` seen and the text position it currently absorbs up to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p + 1, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// A rule condition: OR of ANDs. An empty list is the default rule's `*`, which is never
/// matched directly (the default rule is the fallback).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Condition {
    pub any_of: Vec<Vec<Expression>>,
}

impl Condition {
    /// Parses condition text: `,` separates alternatives, `&` joins expressions, and both are
    /// only separators outside braces.
    pub fn parse(text: &str) -> Result<Condition, String> {
        if text.is_empty() {
            return Err("missing condition".to_string());
        }
        let mut any_of = Vec::new();
        for term in split_outside(text, ',', '{', '}') {
            let mut all_of = Vec::new();
            for expr in split_outside(term, '&', '{', '}') {
                if expr.is_empty() {
                    return Err(format!("empty expression in `{text}`"));
                }
                all_of.push(Expression::parse(expr)?);
            }
            any_of.push(all_of);
        }
        Ok(Condition { any_of })
    }

    pub fn matches(&self, tags: &RpcTags) -> bool {
        self.any_of
            .iter()
            .any(|all| all.iter().all(|e| e.matches(tags)))
    }

    /// Every field the condition tests, for the "field enabled by the policy type" check.
    pub fn fields(&self) -> impl Iterator<Item = Field> + '_ {
        self.any_of.iter().flatten().map(|e| e.field())
    }

    /// The single expression of a one-expression condition (older listings print its list).
    pub fn single_expression(&self) -> Option<&Expression> {
        match self.any_of.as_slice() {
            [all] if all.len() == 1 => Some(&all[0]),
            _ => None,
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.any_of.is_empty() {
            return f.write_str("*");
        }
        for (i, all) in self.any_of.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            for (j, e) in all.iter().enumerate() {
                if j > 0 {
                    f.write_str("&")?;
                }
                write!(f, "{e}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(job: &str, op: Opcode, uid: u32) -> RpcTags {
        RpcTags {
            job: JobId::new(job).unwrap(),
            nid: Nid::ipv4(
                192,
                168,
                1,
                5,
                LNet {
                    kind: NetKind::Tcp,
                    num: 0,
                },
            ),
            opcode: op,
            uid,
            gid: 7,
        }
    }

    #[test]
    fn jobid_wildcards() {
        let m = |p: &str, t: &str| wildcard_match(p.as_bytes(), t.as_bytes());
        assert!(m("*.500", "dd.500"));
        assert!(m("*.500", ".500"));
        assert!(!m("*.500", "dd.5000"));
        assert!(m("dd.*", "dd.0"));
        assert!(m("dd.*", "dd."));
        assert!(!m("dd.*", "ddd.0"));
        assert!(m("*", ""));
        assert!(m("io*.10*", "iozone.1001"));
        assert!(!m("io*.10*", "iozone.201"));
        assert!(m("a*b*c", "aXbYbc"));
        assert!(!m("a*b*c", "aXbYbd"));
        assert!(m("exact", "exact"));
        assert!(!m("exact", "exact2"));
        assert!(!m("", "x"));
        assert!(m("", ""));
        // `{*}` matches an empty jobid through the whole condition too.
        let c = Condition::parse("jobid={*}").unwrap();
        assert!(c.matches(&tags("", Opcode::OstRead, 0)));
    }

    #[test]
    fn or_of_ands() {
        let c = Condition::parse(
            "opcode={ost_write}&jobid={dd.0},nid={192.168.1.[1-128]@tcp 0@lo}&uid={0x10}",
        )
        .unwrap();
        assert_eq!(c.any_of.len(), 2);
        assert!(c.matches(&tags("dd.0", Opcode::OstWrite, 0)));
        assert!(!c.matches(&tags("dd.0", Opcode::OstRead, 0)));
        assert!(c.matches(&tags("x", Opcode::OstRead, 16)));
        assert!(!c.matches(&tags("x", Opcode::OstRead, 15)));
    }

    #[test]
    fn ids_use_base_auto_detection() {
        assert_eq!(parse_id("0x1F"), Ok(31));
        assert_eq!(parse_id("017"), Ok(15));
        assert_eq!(parse_id("0"), Ok(0));
        assert_eq!(parse_id("500"), Ok(500));
        assert!(parse_id("08").is_err());
        assert!(parse_id("-1").is_err());
        assert!(parse_id("0x").is_err());
        assert!(parse_id("4294967296").is_err());
    }

    #[test]
    fn spaces_inside_braces_are_tolerated() {
        let c = Condition::parse("uid={  1   2 }").unwrap();
        assert_eq!(c.to_string(), "uid={1 2}");
    }

    #[test]
    fn rejects_malformed_conditions() {
        for bad in [
            "",
            "jobid=dd",
            "jobid={}",
            "jobid={a",
            "foo={a}",
            "projid={1}",
            "opcode={ost_frobnicate}",
            "uid={abc}",
            "jobid={a}&",
            "jobid={a},",
            "jobid={a} & opcode={ost_read}",
            "nid={1.2.3@tcp}",
            "jobid={a{b}}",
        ] {
            assert!(Condition::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn class_types() {
        assert_eq!(ClassType::parse("").unwrap(), ClassType::GENERIC);
        let t = ClassType::parse("opcode+jobid").unwrap();
        assert!(t.contains(Field::Jobid) && t.contains(Field::Opcode));
        assert!(!t.contains(Field::Uid));
        assert_eq!(t.to_string(), "jobid+opcode");
        assert_eq!(
            ClassType::parse("nid").unwrap().single_field(),
            Some(Field::Nid)
        );
        assert!(ClassType::parse("bogus").is_err());
        assert!(ClassType::parse("jobid+opcode+nid+uid").is_err());
        let k = ClassType::single(Field::Jobid).key(&tags("a", Opcode::OstWrite, 5));
        assert_eq!(
            k,
            ClassType::single(Field::Jobid).key(&tags("a", Opcode::OstRead, 9))
        );
        assert_ne!(
            k,
            ClassType::single(Field::Jobid).key(&tags("b", Opcode::OstWrite, 5))
        );
    }
}
