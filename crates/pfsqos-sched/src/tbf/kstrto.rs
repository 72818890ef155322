//! The kernel string helpers Lustre's TBF parser is built on, with their exact acceptance:
//! `kstrtoull`/`kstrtoul`/`kstrtouint` (lib/kstrtox.c), `strim` and `strsep`. Lustre's answers
//! to odd input (`+5`, `010`, `0x1f`, `7\n`, an empty token between two spaces) follow from
//! these, so pfsqos reproduces them instead of using Rust's `parse`.

/// Why a number was refused; both become `EINVAL` at the TBF interface (Lustre maps
/// `kstrtoull`'s `-ERANGE` to `-EINVAL` in `nrs_tbf_parse_cmd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KstrtoError {
    Invalid,
    Range,
}

/// `kstrtoull(s, base)`: an optional `+`, then digits of `base` (0: `0x`/`0X` followed by a hex
/// digit means 16, a leading `0` means 8, else 10), then at most one `\n`, then the end.
pub fn kstrtoull(s: &str, base: u32) -> Result<u64, KstrtoError> {
    let mut b = s.as_bytes();
    if let [b'+', rest @ ..] = b {
        b = rest;
    }
    let mut base = base;
    // _parse_integer_fixup_radix
    if base == 0 {
        base = match b {
            [b'0', x, h, ..] if x.eq_ignore_ascii_case(&b'x') && h.is_ascii_hexdigit() => 16,
            [b'0', ..] => 8,
            _ => 10,
        };
    }
    if base == 16 {
        if let [b'0', x, rest @ ..] = b {
            if x.eq_ignore_ascii_case(&b'x') {
                b = rest;
            }
        }
    }
    let mut value: u64 = 0;
    let mut digits = 0;
    let mut overflow = false;
    for &c in b {
        let d = match c {
            b'0'..=b'9' => (c - b'0') as u32,
            b'a'..=b'f' => (c - b'a') as u32 + 10,
            b'A'..=b'F' => (c - b'A') as u32 + 10,
            _ => break,
        };
        if d >= base {
            break;
        }
        match value
            .checked_mul(base as u64)
            .and_then(|v| v.checked_add(d as u64))
        {
            Some(v) => value = v,
            None => overflow = true,
        }
        digits += 1;
    }
    if digits == 0 {
        return Err(KstrtoError::Invalid);
    }
    if overflow {
        return Err(KstrtoError::Range);
    }
    let rest = &b[digits..];
    match rest {
        [] | [b'\n'] => Ok(value),
        _ => Err(KstrtoError::Invalid),
    }
}

/// `kstrtouint`: [`kstrtoull`] limited to 32 bits.
pub fn kstrtouint(s: &str, base: u32) -> Result<u32, KstrtoError> {
    let v = kstrtoull(s, base)?;
    u32::try_from(v).map_err(|_| KstrtoError::Range)
}

/// The kernel's `isspace` set, which `strim` removes.
fn is_kspace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// `strim`: leading and trailing white space removed.
pub fn strim(s: &str) -> &str {
    s.trim_matches(is_kspace)
}

/// `strsep(&s, delim)` with a one-character delimiter: the text before the first `delim`,
/// and the rest after it (`None` when there is no `delim`, as strsep sets the pointer to NULL).
pub fn strsep(s: &str, delim: char) -> (&str, Option<&str>) {
    match s.find(delim) {
        Some(i) => (&s[..i], Some(&s[i + delim.len_utf8()..])),
        None => (s, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use KstrtoError::*;

    #[test]
    fn kstrtoull_matches_the_kernel() {
        // lib/kstrtox.c: `+` accepted, `-` refused, one trailing newline accepted.
        assert_eq!(kstrtoull("+5", 10), Ok(5));
        assert_eq!(kstrtoull("-5", 10), Err(Invalid));
        assert_eq!(kstrtoull("5\n", 10), Ok(5));
        assert_eq!(kstrtoull("5\n\n", 10), Err(Invalid));
        assert_eq!(kstrtoull("5 ", 10), Err(Invalid));
        assert_eq!(kstrtoull("", 10), Err(Invalid));
        assert_eq!(kstrtoull("010", 10), Ok(10));
        assert_eq!(kstrtoull("0x10", 10), Err(Invalid));
        // Base auto-detection.
        assert_eq!(kstrtoull("010", 0), Ok(8));
        assert_eq!(kstrtoull("0x1F", 0), Ok(31));
        assert_eq!(kstrtoull("0X1f", 0), Ok(31));
        assert_eq!(kstrtoull("+0x10", 0), Ok(16));
        assert_eq!(kstrtoull("0", 0), Ok(0));
        assert_eq!(kstrtoull("08", 0), Err(Invalid));
        assert_eq!(kstrtoull("0x", 0), Err(Invalid));
        assert_eq!(kstrtoull("0xg", 0), Err(Invalid));
        assert_eq!(kstrtoull("18446744073709551615", 10), Ok(u64::MAX));
        assert_eq!(kstrtoull("18446744073709551616", 10), Err(Range));
        assert_eq!(kstrtouint("4294967295", 0), Ok(u32::MAX));
        assert_eq!(kstrtouint("4294967296", 0), Err(Range));
    }

    #[test]
    fn strim_and_strsep() {
        assert_eq!(strim(" \t a b\n"), "a b");
        assert_eq!(strsep("a=b=c", '='), ("a", Some("b=c")));
        assert_eq!(strsep("abc", '='), ("abc", None));
        assert_eq!(strsep("a  b", ' '), ("a", Some(" b")));
    }
}
