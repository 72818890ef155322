//! Which Lustre release a TBF head emulates. The TBF text interface changed between releases
//! (checked tag by tag in lustre-release, `lustre/ptlrpc/nrs_tbf.c`); everything that differs
//! is a predicate here, so the parser, the head and the listing ask one place.

use std::fmt;

/// A Lustre version `major.minor.patch` (development builds count as their tag, e.g. 2.17.55).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LustreVersion {
    pub major: u16,
    pub minor: u16,
    pub patch: u16,
}

const fn v(major: u16, minor: u16, patch: u16) -> LustreVersion {
    LustreVersion {
        major,
        minor,
        patch,
    }
}

impl LustreVersion {
    pub const V2_12: LustreVersion = v(2, 12, 0);
    pub const V2_14: LustreVersion = v(2, 14, 0);
    pub const V2_15: LustreVersion = v(2, 15, 0);
    pub const V2_16: LustreVersion = v(2, 16, 0);
    pub const V2_17: LustreVersion = v(2, 17, 0);
    /// The newest tagged master build checked (2.17.57); the default.
    pub const MASTER: LustreVersion = v(2, 17, 57);

    /// First release whose `rate=` limit is 1,000,000 (LU-15366, `LPROCFS_NRS_RATE_MAX`);
    /// before it the limit is 65535.
    const RATE_1M: LustreVersion = v(2, 15, 0);
    /// LU-18192 (37aa55f1e8, first tagged in 2.16.58): `tbf a+b` types and the shared
    /// condition parser; before it a type is one name of the table, `generic` included.
    const COMBINED: LustreVersion = v(2, 16, 58);
    /// LU-17166: the `projid` field.
    const PROJID: LustreVersion = v(2, 16, 60);
    /// LU-18192 clean-up (47dd024655, 2.17.51): single-field types parse and print conditions
    /// as expressions; before it they print `{list}`.
    const EXPRESSION_LISTING: LustreVersion = v(2, 17, 51);
    /// LU-17902: the `nodemap` field.
    const NODEMAP: LustreVersion = v(2, 17, 55);

    /// Parses `2.15`, `2.15.3` or `v2_15_3`.
    pub fn parse(text: &str) -> Option<LustreVersion> {
        let t = text.trim().trim_start_matches('v').replace('_', ".");
        let mut parts = t.split('.').map(|p| p.parse::<u16>().ok());
        let major = parts.next()??;
        let minor = parts.next()??;
        let patch = match parts.next() {
            Some(p) => p?,
            None => 0,
        };
        if parts.next().is_some() {
            return None;
        }
        Some(v(major, minor, patch))
    }

    /// Highest `rate=` accepted: the limit is exclusive in Lustre (`rate >= MAX` fails).
    pub fn rate_rpcs_per_s_max(self) -> u32 {
        if self >= Self::RATE_1M {
            super::rule::TBF_RATE_RPCS_PER_S_MAX
        } else {
            super::rule::TBF_RATE_LEGACY_RPCS_PER_S_MAX
        }
    }

    pub fn has_combined_types(self) -> bool {
        self >= Self::COMBINED
    }

    pub fn has_projid(self) -> bool {
        self >= Self::PROJID
    }

    pub fn has_nodemap(self) -> bool {
        self >= Self::NODEMAP
    }

    /// Single-field types (`tbf jobid`, ...) print `{list}` and parse one `field={list}`
    /// (`nrs_tbf_check_id_value` in 2.17.0 and earlier).
    pub fn has_legacy_single_field_types(self) -> bool {
        self < Self::EXPRESSION_LISTING
    }
}

impl Default for LustreVersion {
    fn default() -> Self {
        LustreVersion::MASTER
    }
}

impl fmt::Display for LustreVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_orders() {
        assert_eq!(LustreVersion::parse("2.15"), Some(LustreVersion::V2_15));
        assert_eq!(LustreVersion::parse("v2_16_58"), Some(v(2, 16, 58)));
        assert_eq!(LustreVersion::parse("2.17.57"), Some(LustreVersion::MASTER));
        assert_eq!(LustreVersion::parse("2"), None);
        assert_eq!(LustreVersion::parse("2.x"), None);
        assert_eq!(LustreVersion::parse("2.1.2.3"), None);
        assert!(v(2, 16, 57) < LustreVersion::COMBINED);
        assert!(!v(2, 16, 57).has_combined_types() && v(2, 16, 58).has_combined_types());
        assert!(!v(2, 16, 59).has_projid() && v(2, 16, 60).has_projid());
        assert!(!v(2, 17, 54).has_nodemap() && v(2, 17, 55).has_nodemap());
        assert!(v(2, 17, 50).has_legacy_single_field_types());
        assert!(!v(2, 17, 51).has_legacy_single_field_types());
        assert_eq!(LustreVersion::V2_14.rate_rpcs_per_s_max(), 65_534);
        assert_eq!(LustreVersion::V2_15.rate_rpcs_per_s_max(), 999_999);
    }
}
