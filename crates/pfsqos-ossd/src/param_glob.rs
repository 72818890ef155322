//! Parameter-name patterns as `lctl` takes them. Lustre's lctl turns a parameter path into a
//! file path (`.` and `/` are both separators: `clean_path` in lustre/utils/lustre_cfg.c) and
//! expands it with glob(3) and `GLOB_BRACE` (`cfs_get_param_paths`, libcfs/util/param.c). So
//! the forms a pattern may use are glob(3)'s, within one path component:
//!
//! * `*` any run of characters (empty included), `?` one character;
//! * `[01]`, `[0-9]`, `[!0]` / `[^0]` one character of (not of) a set; a `[` with no closing `]`
//!   is an ordinary character, as in glob(3);
//! * `{a,b}` alternatives (may contain separators and nest), expanded before matching, at most
//!   [`BRACE_EXPANSIONS_MAX`] of them;
//! * `\x` the character `x` itself.
//!
//! Deliberately not TBF's jobid matcher (`cond::wildcard_match`): libcfs's `cfs_match_wildcard`
//! refuses `a**` against `a`, glob(3) does not, and each must behave as the Lustre code it
//! stands for.

/// Most patterns one brace expansion may produce (a bound on the work one request causes).
pub const BRACE_EXPANSIONS_MAX: usize = 256;

/// Why a pattern cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError(pub String);

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A parameter pattern, ready to match names.
#[derive(Clone, Debug)]
pub struct ParamPattern {
    /// One entry per brace alternative; each a list of components.
    alternatives: Vec<Vec<Vec<Token>>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Star,
    AnyOne,
    Lit(char),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl ParamPattern {
    /// Parses `pattern`: `/` is translated to `.` (as Lustre treats both as separators), braces
    /// are expanded, each component compiled.
    pub fn parse(pattern: &str) -> Result<ParamPattern, PatternError> {
        let translated: String = pattern
            .chars()
            .map(|c| if c == '/' { '.' } else { c })
            .collect();
        let translated = translated.trim_matches('.');
        if translated.is_empty() {
            return Err(PatternError(format!(
                "parameter pattern `{pattern}` names nothing"
            )));
        }
        let mut expanded = Vec::new();
        expand_braces(translated, &mut expanded)?;
        let alternatives = expanded
            .iter()
            .map(|p| split_components(p).iter().map(|c| compile(c)).collect())
            .collect();
        Ok(ParamPattern { alternatives })
    }

    /// Whether `name` (dot-separated components, no glob characters) matches.
    pub fn matches(&self, name: &str) -> bool {
        let comps: Vec<&str> = name.split('.').collect();
        self.alternatives.iter().any(|alt| {
            alt.len() == comps.len()
                && alt
                    .iter()
                    .zip(&comps)
                    .all(|(toks, comp)| match_component(toks, comp))
        })
    }

    /// Whether the pattern has a wildcard (so that it may match names the user did not spell
    /// out).
    pub fn has_wildcard(&self) -> bool {
        self.alternatives.len() > 1
            || self
                .alternatives
                .iter()
                .flatten()
                .flatten()
                .any(|t| !matches!(t, Token::Lit(_)))
    }
}

/// Splits at `.` outside `[...]` and not escaped.
fn split_components(p: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = p.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.last_mut().expect("never empty").push(c);
                if let Some(n) = chars.next() {
                    out.last_mut().expect("never empty").push(n);
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.last_mut().expect("never empty").push(c);
            }
            ']' if in_class => {
                in_class = false;
                out.last_mut().expect("never empty").push(c);
            }
            '.' if !in_class => out.push(String::new()),
            _ => out.last_mut().expect("never empty").push(c),
        }
    }
    out
}

/// Expands the first balanced `{...}` group (recursively), glob(3)'s `GLOB_BRACE`. An
/// unbalanced `{` is an ordinary character.
fn expand_braces(p: &str, out: &mut Vec<String>) -> Result<(), PatternError> {
    let b: Vec<char> = p.chars().collect();
    let mut i = 0;
    let mut open = None;
    while i < b.len() {
        match b[i] {
            '\\' => i += 1,
            '{' => {
                open = Some(i);
                break;
            }
            _ => {}
        }
        i += 1;
    }
    let Some(start) = open else {
        if out.len() >= BRACE_EXPANSIONS_MAX {
            return Err(PatternError(format!(
                "braces expand to more than {BRACE_EXPANSIONS_MAX} patterns"
            )));
        }
        out.push(p.to_string());
        return Ok(());
    };
    // Find the matching close and the top-level commas.
    let (mut depth, mut j) = (0usize, start);
    let mut commas = Vec::new();
    let mut close = None;
    while j < b.len() {
        match b[j] {
            '\\' => j += 1,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(j);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(j),
            _ => {}
        }
        j += 1;
    }
    let prefix: String = b[..start].iter().collect();
    let Some(end) = close else {
        // Unbalanced: the `{` is literal; expand what follows it.
        let mut rest = Vec::new();
        expand_braces(&b[start + 1..].iter().collect::<String>(), &mut rest)?;
        for r in rest {
            expand_braces(&format!("{prefix}\\{{{r}"), out)?;
        }
        return Ok(());
    };
    let suffix: String = b[end + 1..].iter().collect();
    let mut bounds = vec![start];
    bounds.extend(&commas);
    bounds.push(end);
    for w in bounds.windows(2) {
        let alt: String = b[w[0] + 1..w[1]].iter().collect();
        expand_braces(&format!("{prefix}{alt}{suffix}"), out)?;
    }
    Ok(())
}

fn compile(comp: &str) -> Vec<Token> {
    let c: Vec<char> = comp.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '*' => toks.push(Token::Star),
            '?' => toks.push(Token::AnyOne),
            '\\' if i + 1 < c.len() => {
                i += 1;
                toks.push(Token::Lit(c[i]));
            }
            '[' => match class(&c[i + 1..]) {
                Some((tok, used)) => {
                    toks.push(tok);
                    i += used;
                }
                None => toks.push(Token::Lit('[')),
            },
            ch => toks.push(Token::Lit(ch)),
        }
        i += 1;
    }
    toks
}

/// A `[...]` set after its `[`: the token and the characters used (through the `]`), or `None`
/// when there is no closing `]` (then the `[` is literal).
fn class(c: &[char]) -> Option<(Token, usize)> {
    let mut i = 0;
    let negated = matches!(c.first(), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    while i < c.len() {
        // A `]` right after `[` or `[!` is a member, as in glob(3).
        if c[i] == ']' && !first {
            return Some((Token::Class { negated, ranges }, i + 1));
        }
        first = false;
        let lo = c[i];
        if i + 2 < c.len() && c[i + 1] == '-' && c[i + 2] != ']' {
            ranges.push((lo, c[i + 2]));
            i += 3;
        } else {
            ranges.push((lo, lo));
            i += 1;
        }
    }
    None
}

fn one(t: &Token, ch: char) -> bool {
    match t {
        Token::Star => unreachable!("stars are handled by the matcher"),
        Token::AnyOne => true,
        Token::Lit(l) => *l == ch,
        Token::Class { negated, ranges } => {
            ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&ch)) != *negated
        }
    }
}

/// Iterative match with one backtrack point (the last `*`): linear in practice, no recursion.
fn match_component(p: &[Token], s: &str) -> bool {
    let s: Vec<char> = s.chars().collect();
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && p[pi] == Token::Star {
            star = Some((pi, si));
            pi += 1;
        } else if pi < p.len() && one(&p[pi], s[si]) {
            pi += 1;
            si += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|t| *t == Token::Star)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, n: &str) -> bool {
        ParamPattern::parse(p).unwrap().matches(n)
    }

    /// Each form glob(3) with GLOB_BRACE accepts, on lctl's parameter paths.
    #[test]
    fn glob3_forms_within_components() {
        let js = "obdfilter.fs-OST0001.job_stats";
        assert!(m("obdfilter.*.job_stats", js));
        assert!(
            m("obdfilter/*/job_stats", js),
            "`/` is a separator, as in lctl"
        );
        assert!(m("obdfilter/fs-OST000[01]/job_stats", js));
        assert!(m("obdfilter.fs-OST000[0-9].job_stats", js));
        assert!(!m("obdfilter.fs-OST000[!1].job_stats", js));
        assert!(m("obdfilter.fs-OST000[^0].job_stats", js));
        assert!(m("obdfilter.fs-OST000?.job_stats", js));
        assert!(!m("obdfilter.fs-OST00?.job_stats", js));
        assert!(m("obdfilter.fs-OST000{0,1}.job_stats", js));
        assert!(m("{obdfilter.*,ost.OSS}.job_stats", js));
        assert!(m("obdfilter.*.job_{stats,cleanup_interval}", js));
        assert!(!m("obdfilter.*", js), "a `*` stays within one component");
        assert!(m("*.*.*", js));
        assert!(m("obdfilter.fs\\-OST0001.job_stats", js));
        // An unclosed `[` or `{` is an ordinary character.
        assert!(m("a[b", "a[b"));
        assert!(m("a{b", "a{b"));
        assert!(m("a.[]x]", "a.x"), "`]` first in a set is a member");
        assert!(
            m("a**", "a"),
            "glob(3), not libcfs: trailing stars match the empty rest"
        );
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(!m("a*b*c", "aXXbYY"));
        assert!(ParamPattern::parse("").is_err());
        assert!(ParamPattern::parse("//").is_err());
    }

    #[test]
    fn wildcards_are_told_apart_and_braces_bounded() {
        assert!(!ParamPattern::parse("a.b").unwrap().has_wildcard());
        assert!(!ParamPattern::parse("a/b").unwrap().has_wildcard());
        for w in ["a.*", "a.?", "a.[01]", "a.{b,c}"] {
            assert!(ParamPattern::parse(w).unwrap().has_wildcard(), "{w}");
        }
        let big = "{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b}";
        assert!(ParamPattern::parse(big).is_err());
        assert!(ParamPattern::parse("{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}").is_ok());
    }
}
