//! TBF classification fields, policy types and rule conditions, parsed as Lustre parses them
//! (`lustre/ptlrpc/nrs_tbf.c`: `nrs_tbf_type_parse`, `nrs_tbf_conds_parse`,
//! `nrs_tbf_conjunction_parse`, `nrs_tbf_expression_parse`, the list parsers, and for 2.17.0
//! and earlier single-field types `nrs_tbf_check_id_value`).
//!
//! A condition is an OR (`,`) of ANDs (`&`) of `field={item item ...}` expressions. Lustre
//! splits on `,` and then `&` with `strsep`, before looking at braces, so braces do not
//! protect either character: `jobid={a,b}` is two broken terms, and a NID list cannot use
//! `[1,3]`. Around `=`, `&` and `,` white space is trimmed (`strim`); inside the braces items
//! are separated by single spaces and empty items are skipped. The condition keeps the text
//! exactly as written, which is what the listing prints.

use std::fmt;

use super::kstrto::{kstrtoull, strim, strsep};
use super::nid::NidList;
use super::opcode::{lustre_opcode, opcode_of_name};
use super::version::LustreVersion;
use crate::errno::Errno;
use crate::model::{JobId, RpcTags};

/// A request field TBF can classify on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    Jobid,
    Nid,
    Opcode,
    Uid,
    Gid,
    /// 2.16.60 and later.
    Projid,
    /// 2.17.55 and later.
    Nodemap,
}

impl Field {
    /// In `nrs_tbf_types` order.
    pub const ALL: [Field; 7] = [
        Field::Jobid,
        Field::Nid,
        Field::Opcode,
        Field::Uid,
        Field::Gid,
        Field::Projid,
        Field::Nodemap,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Field::Jobid => "jobid",
            Field::Nid => "nid",
            Field::Opcode => "opcode",
            Field::Uid => "uid",
            Field::Gid => "gid",
            Field::Projid => "projid",
            Field::Nodemap => "nodemap",
        }
    }

    pub fn from_name(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Whether the field exists in `version`.
    pub fn exists_in(self, version: LustreVersion) -> bool {
        match self {
            Field::Projid => version.has_projid(),
            Field::Nodemap => version.has_nodemap(),
            _ => true,
        }
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

/// Longest policy argument Lustre accepts: `NRS_POL_ARG_MAX` is 16 with the terminator
/// (`lustre_nrs.h`), checked by `nrs_policy_start_locked` before TBF sees the argument, so
/// TBF's own `NRS_TBF_TYPE_MAX_LEN` (20) never binds.
pub const TBF_TYPE_ARG_LEN_MAX: usize = 15;

/// Why a policy argument is not a TBF type, with the errno Lustre answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassTypeError {
    pub errno: Errno,
    pub message: String,
}

/// The classification type of a TBF instance (`tbf`, `tbf jobid`, `tbf nid+jobid`, ...): the
/// set of fields that make up a class key and that rules may test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClassType {
    bits: u8,
    /// Plain `tbf` (or `tbf generic` before 2.16.58): every field of the version.
    generic: bool,
}

impl ClassType {
    /// Plain `tbf` on the newest version: every field.
    pub const GENERIC: ClassType = ClassType {
        bits: 0b111_1111,
        generic: true,
    };

    /// Plain `tbf` on `version`: the fields that version has (`NRS_TBF_FLAG_ALL`).
    pub fn generic(version: LustreVersion) -> ClassType {
        let bits = Field::ALL
            .into_iter()
            .filter(|f| f.exists_in(version))
            .fold(0, |b, f| b | f.bit());
        ClassType {
            bits,
            generic: true,
        }
    }

    pub fn single(field: Field) -> ClassType {
        ClassType {
            bits: field.bit(),
            generic: false,
        }
    }

    /// The argument of the newest version, empty meaning plain `tbf` (for tests and tools).
    pub fn parse(arg: &str) -> Result<ClassType, String> {
        let arg = arg.trim();
        if arg.len() > TBF_TYPE_ARG_LEN_MAX {
            return Err(format!(
                "TBF type `{arg}` is longer than {TBF_TYPE_ARG_LEN_MAX} characters"
            ));
        }
        Self::parse_arg((!arg.is_empty()).then_some(arg), LustreVersion::MASTER)
            .map_err(|e| e.message)
    }

    /// `nrs_tbf_start`: `None` (no argument) is generic. From 2.16.58 `nrs_tbf_type_parse`:
    /// names joined by `+`, an empty name ends the list (`jobid+` is `jobid`, `+jobid` and ``
    /// are refused with EINVAL). Before, one name of the table, `generic` included, and an
    /// unknown name is ENOTSUPP.
    pub fn parse_arg(
        arg: Option<&str>,
        version: LustreVersion,
    ) -> Result<ClassType, ClassTypeError> {
        let Some(arg) = arg else {
            return Ok(ClassType::generic(version));
        };
        let unknown = |name: &str, errno| ClassTypeError {
            errno,
            message: format!("unknown TBF type `{name}`"),
        };
        let field = |name: &str| Field::from_name(name).filter(|f| f.exists_in(version));
        if !version.has_combined_types() {
            if arg == "generic" {
                return Ok(ClassType::generic(version));
            }
            return field(arg)
                .map(ClassType::single)
                .ok_or_else(|| unknown(arg, Errno::ENOTSUPP));
        }
        let mut bits = 0u8;
        for name in arg.split('+') {
            if name.is_empty() {
                break;
            }
            bits |= field(name)
                .ok_or_else(|| unknown(name, Errno::EINVAL))?
                .bit();
        }
        if bits == 0 {
            return Err(unknown(arg, Errno::EINVAL));
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

    /// The one field of a single-field type (`tbf jobid` etc.).
    pub fn single_field(&self) -> Option<Field> {
        if self.generic || self.bits.count_ones() != 1 {
            return None;
        }
        Field::ALL.into_iter().find(|f| self.contains(*f))
    }

    /// The field of a type that 2.17.50 and earlier parse and list with per-type code
    /// (`nrs_tbf_id_parse` in 2.17.0: jobid, nid, opcode, uid, gid; `tbf projid` already
    /// went through the generic parser and printed expressions).
    pub fn legacy_single_field(&self) -> Option<Field> {
        self.single_field().filter(|f| {
            matches!(
                f,
                Field::Jobid | Field::Nid | Field::Opcode | Field::Uid | Field::Gid
            )
        })
    }

    /// The class key of a request: its tags with every field outside the type blanked, so
    /// requests that agree on the enabled fields share one class.
    #[inline]
    pub fn key(&self, tags: &RpcTags) -> RpcTags {
        // `jobid` alone (vPFS's, AdapTBF's and Static BW's classification): the job id on the
        // blank key, the same value as the field-by-field selects below in about half the
        // instructions (this runs on every RPC).
        if self.bits == Field::Jobid.bit() {
            return RpcTags {
                job: tags.job,
                ..RpcTags::default()
            };
        }
        self.key_by_fields(tags)
    }

    /// [`ClassType::key`] field by field, for every type.
    #[inline]
    fn key_by_fields(&self, tags: &RpcTags) -> RpcTags {
        let blank = RpcTags::default();
        let pick = |f: Field| self.contains(f);
        RpcTags {
            job: if pick(Field::Jobid) {
                tags.job
            } else {
                JobId::EMPTY
            },
            nid: if pick(Field::Nid) {
                tags.nid
            } else {
                blank.nid
            },
            opcode: if pick(Field::Opcode) {
                tags.opcode
            } else {
                blank.opcode
            },
            uid: if pick(Field::Uid) { tags.uid } else { 0 },
            gid: if pick(Field::Gid) { tags.gid } else { 0 },
            projid: if pick(Field::Projid) { tags.projid } else { 0 },
            nodemap: if pick(Field::Nodemap) {
                tags.nodemap
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

/// Nodemaps a condition may name. Lustre looks the name up (`nodemap_lookup_unlocked`) and
/// refuses unknown ones; pfsqos defines only Lustre's always-present `default` (id 0), which
/// is also what every simulated and live RPC carries.
pub const NODEMAPS: [(&str, u32); 1] = [("default", 0)];

/// One `field={items}` test.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expression {
    /// Jobids; an item with `*` is a pattern (`cfs_match_wildcard`), else an exact string.
    Jobid(Vec<String>),
    Nid(NidList),
    /// Lustre opcodes (`OST_READ` = 3, ...).
    Opcode(Vec<u16>),
    Uid(Vec<u32>),
    Gid(Vec<u32>),
    Projid(Vec<u32>),
    /// Nodemap ids.
    Nodemap(Vec<u32>),
}

impl Expression {
    pub fn field(&self) -> Field {
        match self {
            Expression::Jobid(_) => Field::Jobid,
            Expression::Nid(_) => Field::Nid,
            Expression::Opcode(_) => Field::Opcode,
            Expression::Uid(_) => Field::Uid,
            Expression::Gid(_) => Field::Gid,
            Expression::Projid(_) => Field::Projid,
            Expression::Nodemap(_) => Field::Nodemap,
        }
    }

    pub fn matches(&self, tags: &RpcTags) -> bool {
        match self {
            Expression::Jobid(items) => {
                let job = tags.job.as_str().as_bytes();
                items.iter().any(|p| {
                    if p.contains('*') {
                        wildcard_match(p.as_bytes(), job)
                    } else {
                        p.as_bytes() == job
                    }
                })
            }
            Expression::Nid(list) => list.matches(&tags.nid),
            Expression::Opcode(ops) => ops.contains(&lustre_opcode(tags.opcode)),
            Expression::Uid(ids) => ids.contains(&tags.uid),
            Expression::Gid(ids) => ids.contains(&tags.gid),
            Expression::Projid(ids) => ids.contains(&tags.projid),
            Expression::Nodemap(ids) => ids.contains(&tags.nodemap),
        }
    }

    /// The list parser of `field` over the text between the braces.
    fn parse_list(field: Field, inner: &str) -> Result<Expression, String> {
        // Items separated by single spaces; an empty item (two spaces, or a leading or trailing
        // space) is skipped; at least one item is required.
        let items: Vec<&str> = inner.split(' ').filter(|t| !t.is_empty()).collect();
        if items.is_empty() {
            return Err(format!("empty {field} list"));
        }
        let ids = || -> Result<Vec<u32>, String> {
            items
                .iter()
                .map(|t| {
                    // kstrtoul(tok, 0) into an unsigned long, then stored in a u32 field of
                    // `struct tbf_id`: Lustre keeps the low 32 bits of a larger number.
                    kstrtoull(t, 0)
                        .map(|v| v as u32)
                        .map_err(|_| format!("`{t}` is not a number"))
                })
                .collect()
        };
        Ok(match field {
            Field::Jobid => Expression::Jobid(items.iter().map(|s| s.to_string()).collect()),
            Field::Nid => Expression::Nid(NidList::parse(inner)?),
            Field::Opcode => Expression::Opcode(
                items
                    .iter()
                    .map(|s| opcode_of_name(s).ok_or_else(|| format!("unknown opcode `{s}`")))
                    .collect::<Result<_, _>>()?,
            ),
            Field::Uid => Expression::Uid(ids()?),
            Field::Gid => Expression::Gid(ids()?),
            Field::Projid => Expression::Projid(ids()?),
            Field::Nodemap => Expression::Nodemap(
                items
                    .iter()
                    .map(|s| {
                        NODEMAPS
                            .iter()
                            .find(|(n, _)| n == s)
                            .map(|&(_, id)| id)
                            .ok_or_else(|| format!("no nodemap `{s}`"))
                    })
                    .collect::<Result<_, _>>()?,
            ),
        })
    }

    /// `nrs_tbf_expression_parse`: `field = {list}` with white space trimmed around the field
    /// and the braces; the field must be enabled by the type.
    fn parse(text: &str, class_type: ClassType) -> Result<Expression, String> {
        let (name, rhs) = strsep(text, '=');
        let name = strim(name);
        let rhs = match rhs {
            Some(r) if !name.is_empty() => strim(r),
            _ => return Err(format!("expression `{text}` is not `field={{list}}`")),
        };
        let inner = braced(rhs).ok_or_else(|| format!("`{rhs}` must be a list in braces"))?;
        let field = Field::from_name(name).ok_or_else(|| format!("unknown field `{name}`"))?;
        if !class_type.contains(field) {
            return Err(format!(
                "field `{field}` is not enabled by the TBF policy type"
            ));
        }
        Expression::parse_list(field, inner)
    }
}

/// The text between a leading `{` and a trailing `}` (at least the two braces).
fn braced(s: &str) -> Option<&str> {
    if s.len() >= 2 && s.starts_with('{') && s.ends_with('}') {
        Some(&s[1..s.len() - 1])
    } else {
        None
    }
}

/// libcfs `cfs_match_wildcard`, exactly, including its departures from a shell glob: a `*`
/// that is not the pattern's last character matches nothing once the text is used up (so
/// `a**` does not match `a`), and equal characters are consumed greedily before a `*` is
/// expanded (so a `*` in the text is matched literally first). The recursion of the C code is
/// exponential in the number of stars; the failed `(pattern, text)` positions are remembered,
/// which bounds the work by their number.
pub fn wildcard_match(pattern: &[u8], text: &[u8]) -> bool {
    fn go(
        p: &[u8],
        c: &[u8],
        mut pi: usize,
        mut ci: usize,
        failed: &mut rustc_hash::FxHashSet<(usize, usize)>,
    ) -> bool {
        let star_needs_more =
            |pi: usize, ci: usize| pi + 1 < p.len() && p[pi] == b'*' && ci == c.len();
        if pi == p.len() && ci == c.len() {
            return true;
        }
        if star_needs_more(pi, ci) {
            return false;
        }
        while pi < p.len() && ci < c.len() && p[pi] == c[ci] {
            pi += 1;
            ci += 1;
            if pi == p.len() && ci == c.len() {
                return true;
            }
            if star_needs_more(pi, ci) {
                return false;
            }
        }
        if pi < p.len() && p[pi] == b'*' {
            if failed.contains(&(pi, ci)) {
                return false;
            }
            let hit =
                go(p, c, pi + 1, ci, failed) || (ci < c.len() && go(p, c, pi, ci + 1, failed));
            if !hit {
                failed.insert((pi, ci));
            }
            return hit;
        }
        false
    }
    go(pattern, text, 0, 0, &mut Default::default())
}

/// A rule condition: OR of ANDs, and the text it was parsed from. The default rule's
/// condition is `*` with no terms; it is never matched directly (it is the fallback).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Condition {
    /// Exactly as the administrator wrote it (Lustre's `tr_conds_str`).
    pub text: String,
    pub any_of: Vec<Vec<Expression>>,
}

impl Default for Condition {
    fn default() -> Self {
        Condition {
            text: "*".to_string(),
            any_of: Vec::new(),
        }
    }
}

impl Condition {
    /// Parses condition text for a head of `class_type` running `version`.
    pub fn parse_for(
        text: &str,
        class_type: ClassType,
        version: LustreVersion,
    ) -> Result<Condition, String> {
        let any_of = match class_type.legacy_single_field() {
            Some(field) if version.has_legacy_single_field_types() => {
                // nrs_tbf_check_id_value (2.17.0): the whole text is one `field={list}` of
                // the type's own field; `,` and `&` are not operators there.
                let (name, rhs) = strsep(text, '=');
                let name = strim(name);
                let inner = rhs
                    .map(strim)
                    .and_then(braced)
                    .filter(|_| name == field.name())
                    .ok_or_else(|| format!("condition `{text}` is not `{field}={{list}}`"))?;
                vec![vec![Expression::parse_list(field, inner)?]]
            }
            _ => text
                .split(',')
                .map(|term| {
                    term.split('&')
                        .map(|e| Expression::parse(e, class_type))
                        .collect::<Result<Vec<_>, _>>()
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        Ok(Condition {
            text: text.to_string(),
            any_of,
        })
    }

    /// Parses for plain `tbf` on the newest version (every field enabled).
    pub fn parse(text: &str) -> Result<Condition, String> {
        Self::parse_for(text, ClassType::GENERIC, LustreVersion::MASTER)
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

    /// The text between the braces of a one-expression condition, as 2.17.0 and earlier list
    /// single-field rules (`{dd.*}`), or `*` for the default rule.
    pub fn legacy_list_text(&self) -> &str {
        if self.any_of.is_empty() {
            return "*";
        }
        let (_, rhs) = strsep(&self.text, '=');
        rhs.map(strim).and_then(braced).unwrap_or(&self.text)
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LNet, NetKind, Nid, Opcode};

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
            ..RpcTags::default()
        }
    }

    #[test]
    fn jobid_wildcards_follow_cfs_match_wildcard() {
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
        // Departures from a shell glob, at the end of the text: a non-final `*` needs text.
        assert!(!m("a**", "a"));
        assert!(!m("**", ""));
        assert!(m("a**", "ab"));
        // Greedy literal consumption: the text's `*` is taken by the pattern's `*` first.
        assert!(!m("*a", "*ba"));
        assert!(m("*a", "xba"));
        // Bounded: many stars against a text that cannot match.
        let stars = "*a".repeat(2000);
        assert!(!m(&stars, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"));
    }

    #[test]
    fn or_of_ands_with_trimmed_operators() {
        let c = Condition::parse(
            "opcode = {ost_write} & jobid={dd.0} , nid={192.168.1.[1-128]@tcp 0@lo}&uid={0x10}",
        )
        .unwrap();
        assert_eq!(c.any_of.len(), 2);
        assert!(c.matches(&tags("dd.0", Opcode::OstWrite, 0)));
        assert!(!c.matches(&tags("dd.0", Opcode::OstRead, 0)));
        assert!(c.matches(&tags("x", Opcode::OstRead, 16)));
        assert!(!c.matches(&tags("x", Opcode::OstRead, 15)));
        // The text is kept as written.
        assert!(c.to_string().starts_with("opcode = {ost_write} & "));
    }

    #[test]
    fn ids_use_kstrtoul_and_keep_the_low_32_bits() {
        let c = Condition::parse("uid={0x1F +017 4294967297 8\n}").unwrap();
        assert_eq!(c.any_of[0][0], Expression::Uid(vec![31, 15, 1, 8]));
        for bad in [
            "uid={08}",
            "uid={-1}",
            "uid={0x}",
            "uid={18446744073709551616}",
        ] {
            assert!(Condition::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn braces_do_not_protect_separators() {
        // strsep on `,` first: both halves are broken expressions.
        assert!(Condition::parse("jobid={a,b}").is_err());
        assert!(Condition::parse("nid={10.0.0.[1,3]@tcp}").is_err());
        assert!(Condition::parse("jobid={a&b}").is_err());
        // `=` inside the braces is fine: only the first `=` splits.
        let c = Condition::parse("jobid={a=b}").unwrap();
        assert_eq!(c.any_of[0][0], Expression::Jobid(vec!["a=b".into()]));
        // Braces inside items are just characters.
        let c = Condition::parse("jobid={{a}}").unwrap();
        assert_eq!(c.any_of[0][0], Expression::Jobid(vec!["{a}".into()]));
    }

    #[test]
    fn every_opcode_of_the_table_parses() {
        for (code, name) in super::super::opcode::LUSTRE_OPCODES {
            let c = Condition::parse(&format!("opcode={{{name}}}")).unwrap();
            assert_eq!(c.any_of[0][0], Expression::Opcode(vec![code]));
        }
    }

    #[test]
    fn rejects_malformed_conditions() {
        for bad in [
            "",
            "jobid=dd",
            "jobid={}",
            "jobid={ }",
            "jobid={a",
            "foo={a}",
            "={a}",
            "jobid",
            "opcode={ost_frobnicate}",
            "uid={abc}",
            "jobid={a}&",
            "jobid={a},",
            "nid={1.2.3@tcp}",
            "nodemap={nosuch}",
        ] {
            assert!(Condition::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(Condition::parse("nodemap={default}").is_ok());
        assert!(Condition::parse("projid={1}").is_ok());
    }

    #[test]
    fn fields_follow_type_and_version() {
        let v2_16_59 = LustreVersion::parse("2.16.59").unwrap();
        assert!(
            Condition::parse_for("projid={1}", ClassType::generic(v2_16_59), v2_16_59).is_err()
        );
        let jo = ClassType::parse("jobid+opcode").unwrap();
        assert!(
            Condition::parse_for("projid={100}&opcode={ost_write}", jo, LustreVersion::MASTER)
                .is_err()
        );
        // 2.17.0 single-field types: one expression of the type's field, `,` and `&` literal.
        let jobid = ClassType::single(Field::Jobid);
        let c = Condition::parse_for("jobid = { a,b }", jobid, LustreVersion::V2_17).unwrap();
        assert_eq!(c.any_of, vec![vec![Expression::Jobid(vec!["a,b".into()])]]);
        assert_eq!(c.legacy_list_text(), " a,b ");
        assert!(Condition::parse_for("uid={1}", jobid, LustreVersion::V2_17).is_err());
        // 2.17.0's `tbf projid` used the generic parser.
        let projid = ClassType::single(Field::Projid);
        assert!(
            Condition::parse_for("projid={1},projid={2}", projid, LustreVersion::V2_17).is_ok()
        );
        assert!(Condition::parse_for("jobid={a},jobid={b}", jobid, LustreVersion::MASTER).is_ok());
    }

    #[test]
    fn class_types_by_version() {
        let m = LustreVersion::MASTER;
        assert_eq!(ClassType::parse("").unwrap(), ClassType::GENERIC);
        let t = ClassType::parse("opcode+jobid").unwrap();
        assert!(t.contains(Field::Jobid) && t.contains(Field::Opcode));
        assert!(!t.contains(Field::Uid));
        assert_eq!(t.to_string(), "jobid+opcode");
        assert_eq!(
            ClassType::parse_arg(Some("jobid+"), m),
            Ok(ClassType::single(Field::Jobid))
        );
        assert_eq!(
            ClassType::parse_arg(Some("jobid++nid"), m),
            Ok(ClassType::single(Field::Jobid))
        );
        for bad in ["", "+jobid", "bogus", "jobid+bogus", "generic"] {
            assert_eq!(
                ClassType::parse_arg(Some(bad), m).unwrap_err().errno,
                Errno::EINVAL,
                "{bad}"
            );
        }
        let old = LustreVersion::V2_15;
        assert_eq!(
            ClassType::parse_arg(Some("generic"), old),
            Ok(ClassType::generic(old))
        );
        assert_eq!(
            ClassType::parse_arg(Some("jobid+opcode"), old)
                .unwrap_err()
                .errno,
            Errno::ENOTSUPP
        );
        assert!(ClassType::parse_arg(Some("projid"), LustreVersion::V2_16).is_err());
        assert!(ClassType::parse_arg(Some("nodemap"), LustreVersion::V2_17).is_err());
        assert!(ClassType::parse_arg(Some("nodemap"), m).is_ok());
        assert!(!ClassType::generic(old).contains(Field::Projid));
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

    /// The `jobid` shortcut of `key` gives what the field-by-field key gives, for tags whose
    /// every field differs from the blank key's, and every other type takes the general path.
    #[test]
    fn jobid_key_shortcut_equals_the_field_by_field_key() {
        let mut full = tags("job.7", Opcode::OstWrite, 5);
        full.gid = 6;
        full.projid = 7;
        full.nodemap = 8;
        let jobid = ClassType::single(Field::Jobid);
        assert_eq!(jobid.key(&full), jobid.key_by_fields(&full));
        assert_eq!(jobid.key(&full).job, full.job);
        assert_eq!(
            jobid.key(&full),
            RpcTags {
                job: full.job,
                ..RpcTags::UNKNOWN
            }
        );
        for bits in 1..=u8::MAX {
            let t = ClassType {
                bits,
                generic: false,
            };
            assert_eq!(t.key(&full), t.key_by_fields(&full), "{bits:#x}");
        }
    }
}
