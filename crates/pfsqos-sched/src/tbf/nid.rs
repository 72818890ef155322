//! LNet nidlists as TBF `nid={...}` conditions write them, parsed and matched as libcfs does
//! (`lnet/lnet/nidstrings.c`: `cfs_parse_nidlist`, `parse_nidrange`, `add_nidrange`,
//! `parse_nidmask`, `cfs_ip_addr_parse`, `cfs_expr_list_parse`, `cfs_range_expr_parse`,
//! `cfs_match_nid`):
//!
//! * items are separated by single spaces, empty items skipped;
//! * an item is `addr@net`, split at the first `@`; the network is a name of the LNet table
//!   (`lo tcp o2ib gni gip ptlf kfi efa bxi3f`) followed by an optional number in any base;
//! * the address is `*`, or a CIDR mask (`10.0.0.0/8`, any IPv6 address), or per network
//!   kind four dotted (IP networks) or one (numeric networks) number expressions: `*`, a number
//!   in any base, or `[range,range]` with `lo-hi` and `lo-hi/stride`.
//!
//! One departure: a zero stride (`[0-8/0]`) is refused. libcfs accepts it for IP octets (the
//! stride's lower bound is the octet's, 0) and then divides by it when matching.

use std::fmt;
use std::net::Ipv6Addr;

use super::kstrto::{kstrtouint, strim, strsep};
use crate::model::{NetKind, Nid};

/// An LNet network type of libcfs's `libcfs_netstrfns` table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NetType {
    Lo,
    Tcp,
    O2ib,
    Gni,
    Gip,
    Ptlf,
    Kfi,
    Efa,
    Bxi3f,
}

impl NetType {
    /// In table order: `libcfs_namenum2netstrfns` takes the first name that prefixes the text.
    pub const ALL: [NetType; 9] = [
        NetType::Lo,
        NetType::Tcp,
        NetType::O2ib,
        NetType::Gni,
        NetType::Gip,
        NetType::Ptlf,
        NetType::Kfi,
        NetType::Efa,
        NetType::Bxi3f,
    ];

    pub fn name(self) -> &'static str {
        match self {
            NetType::Lo => "lo",
            NetType::Tcp => "tcp",
            NetType::O2ib => "o2ib",
            NetType::Gni => "gni",
            NetType::Gip => "gip",
            NetType::Ptlf => "ptlf",
            NetType::Kfi => "kfi",
            NetType::Efa => "efa",
            NetType::Bxi3f => "bxi3f",
        }
    }

    /// Networks whose addresses are IPv4 (`cfs_ip_addr_parse`); the others are numbers.
    fn is_ip(self) -> bool {
        matches!(
            self,
            NetType::Tcp | NetType::O2ib | NetType::Gip | NetType::Efa
        )
    }

    /// Networks with `nf_match_netmask`: only these can match a CIDR mask.
    fn matches_netmask(self) -> bool {
        matches!(self, NetType::Tcp | NetType::O2ib)
    }

    /// The network type of a pfsqos NID (which only has the kinds a cluster runs on).
    fn of(kind: NetKind) -> NetType {
        match kind {
            NetKind::Lo => NetType::Lo,
            NetKind::Tcp => NetType::Tcp,
            NetKind::O2ib => NetType::O2ib,
            NetKind::Gni => NetType::Gni,
            NetKind::Kfi => NetType::Kfi,
        }
    }
}

/// One `lo-hi/stride` range (`struct cfs_range_expr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NumRange {
    pub lo: u32,
    pub hi: u32,
    pub stride: u32,
}

impl NumRange {
    fn matches(&self, v: u32) -> bool {
        // stride > 0 is a parse invariant (the departure from libcfs documented above).
        v >= self.lo && v <= self.hi && (v - self.lo).is_multiple_of(self.stride)
    }
}

/// `cfs_range_expr_parse`: `*`, a number, or (only inside brackets) `lo-hi` or `lo-hi/stride`,
/// each number in `min..=max` with base auto-detection, `lo <= hi`.
fn parse_range(src: &str, min: u32, max: u32, bracketed: bool) -> Option<NumRange> {
    let src = strim(src);
    let num = |t: &str| {
        kstrtouint(strim(t), 0)
            .ok()
            .filter(|n| (min..=max).contains(n))
    };
    let r = if src == "*" {
        NumRange {
            lo: min,
            hi: max,
            stride: 1,
        }
    } else if let Ok(n) = kstrtouint(src, 0) {
        if !(min..=max).contains(&n) {
            return None;
        }
        NumRange {
            lo: n,
            hi: n,
            stride: 1,
        }
    } else {
        if !bracketed {
            return None;
        }
        let (lo, rest) = strsep(src, '-');
        let lo = num(lo)?;
        let rest = rest?;
        if let Some(hi) = num(rest) {
            NumRange { lo, hi, stride: 1 }
        } else {
            let (hi, stride) = strsep(rest, '/');
            NumRange {
                lo,
                hi: num(hi)?,
                stride: num(stride?)?,
            }
        }
    };
    // Departure: libcfs keeps stride 0 and later computes `% 0`.
    if r.lo > r.hi || r.stride == 0 {
        return None;
    }
    Some(r)
}

/// `cfs_expr_list_parse`: `[r,r,...]` (no empty element) or one unbracketed range.
fn parse_expr_list(s: &str, min: u32, max: u32) -> Option<Vec<NumRange>> {
    if s.len() >= 2 && s.starts_with('[') && s.ends_with(']') {
        let inner = &s[1..s.len() - 1];
        inner
            .split(',')
            .map(|tok| {
                if tok.is_empty() {
                    None
                } else {
                    parse_range(tok, min, max, true)
                }
            })
            .collect()
    } else {
        parse_range(s, min, max, false).map(|r| vec![r])
    }
}

fn list_matches(list: &[NumRange], v: u32) -> bool {
    list.iter().any(|r| r.matches(v))
}

/// The address part of one nidlist item.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AddrSpec {
    /// `*`: every address of the network (`nr_all`).
    All,
    /// Four octet expression lists, first octet first (`cfs_ip_addr_parse`).
    Ip(Box<[Vec<NumRange>; 4]>),
    /// One expression list over the whole address (`libcfs_num_parse`).
    Num(Vec<NumRange>),
    /// An IPv4 CIDR mask: `(addr & mask) == net`.
    Mask4 { net: u32, mask: u32 },
    /// An IPv6 mask: parses, but pfsqos NIDs are IPv4, and libcfs never matches an IPv6 mask
    /// against a 4-byte NID.
    Mask6,
}

/// One `addr@net` item of a nidlist.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NidRange {
    pub net: NetType,
    pub net_num: u32,
    pub addr: AddrSpec,
}

/// `add_nidrange`: a table name as a prefix, then nothing or a number in any base.
fn parse_net(text: &str) -> Option<(NetType, u32)> {
    let net = NetType::ALL
        .into_iter()
        .find(|n| text.starts_with(n.name()))?;
    let rest = &text[net.name().len()..];
    let num = if rest.is_empty() {
        0
    } else {
        kstrtouint(rest, 0).ok()?
    };
    Some((net, num))
}

/// `in4_pton`-strict dotted quad.
fn parse_ipv4(s: &str) -> Option<u32> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut addr = 0u32;
    for p in parts {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let v: u32 = p.parse().ok()?;
        if v > 255 {
            return None;
        }
        addr = addr << 8 | v;
    }
    Some(addr)
}

/// `parse_prefix_len` + `parse_nidmask`.
fn parse_mask(s: &str) -> Option<AddrSpec> {
    let ipv6 = s.contains(':');
    let prefix = match s.find('/') {
        // An IPv6 address without a length is a /128.
        None if ipv6 => 128,
        None => return None,
        Some(i) => {
            let max = if ipv6 { 128 } else { 32 };
            let n = kstrtouint(&s[i + 1..], 10).ok()?;
            if n < 1 || n > max {
                return None;
            }
            n
        }
    };
    let (addr, _) = strsep(s, '/');
    if ipv6 {
        addr.parse::<Ipv6Addr>().ok()?;
        return Some(AddrSpec::Mask6);
    }
    let a = parse_ipv4(addr)?;
    let mask = if prefix == 32 {
        u32::MAX
    } else {
        !(u32::MAX >> prefix)
    };
    Some(AddrSpec::Mask4 {
        net: a & mask,
        mask,
    })
}

impl NidRange {
    /// `parse_nidrange`: one item.
    pub fn parse(text: &str) -> Result<NidRange, String> {
        let bad = || format!("`{text}` is not an LNet nid range");
        let (addr, net) = strsep(text, '@');
        let addr = strim(addr);
        let net = strim(net.ok_or_else(bad)?);
        if net.is_empty() || net.contains('@') {
            return Err(bad());
        }
        let (net, net_num) =
            parse_net(net).ok_or_else(|| format!("unknown network in `{text}`"))?;
        let slash = addr.find('/');
        let spec = if addr.contains(':') || slash.is_some_and(|i| !addr[i..].contains(']')) {
            parse_mask(addr).ok_or_else(bad)?
        } else if addr == "*" {
            AddrSpec::All
        } else if net.is_ip() {
            // cfs_ip_addr_parse: four `.`-separated non-empty expression lists.
            let parts: Vec<&str> = strim(addr).split('.').map(strim).collect();
            if parts.len() != 4 || parts.iter().any(|p| p.is_empty()) {
                return Err(bad());
            }
            let mut octets: [Vec<NumRange>; 4] = Default::default();
            for (slot, p) in octets.iter_mut().zip(parts) {
                *slot = parse_expr_list(p, 0, 255).ok_or_else(bad)?;
            }
            AddrSpec::Ip(Box::new(octets))
        } else {
            AddrSpec::Num(parse_expr_list(addr, 0, u32::MAX).ok_or_else(bad)?)
        };
        Ok(NidRange {
            net,
            net_num,
            addr: spec,
        })
    }

    /// `cfs_match_nid` for one item.
    pub fn matches(&self, nid: &Nid) -> bool {
        if self.net != NetType::of(nid.net.kind) || self.net_num != nid.net.num {
            return false;
        }
        match &self.addr {
            AddrSpec::All => true,
            AddrSpec::Mask4 { net, mask } => self.net.matches_netmask() && nid.addr & mask == *net,
            AddrSpec::Mask6 => false,
            AddrSpec::Ip(octets) => octets
                .iter()
                .zip(nid.addr.to_be_bytes())
                .all(|(list, o)| list_matches(list, o as u32)),
            AddrSpec::Num(list) => list_matches(list, nid.addr),
        }
    }
}

/// A parsed `nid={...}` list: matches when any item does.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NidList(pub Vec<NidRange>);

impl NidList {
    /// `cfs_parse_nidlist`: items separated by single spaces, empty items skipped, at least one.
    pub fn parse(text: &str) -> Result<NidList, String> {
        let items = text
            .split(' ')
            .filter(|t| !t.is_empty())
            .map(NidRange::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if items.is_empty() {
            return Err("empty nid list".to_string());
        }
        Ok(NidList(items))
    }

    pub fn matches(&self, nid: &Nid) -> bool {
        self.0.iter().any(|r| r.matches(nid))
    }
}

impl fmt::Display for NetType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LNet;

    fn tcp(a: u8, b: u8, c: u8, d: u8) -> Nid {
        Nid::ipv4(
            a,
            b,
            c,
            d,
            LNet {
                kind: NetKind::Tcp,
                num: 0,
            },
        )
    }

    fn hits(list: &str, f: impl Fn(u8) -> Nid) -> Vec<u8> {
        let l = NidList::parse(list).unwrap();
        (0..=255).filter(|&d| l.matches(&f(d))).collect()
    }

    #[test]
    fn ranges_stars_strides_and_bases() {
        let r = NidList::parse("192.168.1.[2-128]@tcp").unwrap();
        assert!(r.matches(&tcp(192, 168, 1, 2)) && r.matches(&tcp(192, 168, 1, 128)));
        assert!(!r.matches(&tcp(192, 168, 1, 1)) && !r.matches(&tcp(192, 168, 2, 5)));
        assert!(NidList::parse("192.168.*.*@tcp")
            .unwrap()
            .matches(&tcp(192, 168, 7, 9)));
        assert_eq!(hits("10.0.0.[0-8/4]@tcp", |d| tcp(10, 0, 0, d)), [0, 4, 8]);
        // Numbers take any base: 0x10 is 16, 010 is 8 (kstrtouint base 0).
        assert_eq!(hits("10.0.0.0x10@tcp", |d| tcp(10, 0, 0, d)), [16]);
        assert_eq!(hits("10.0.0.010@tcp", |d| tcp(10, 0, 0, d)), [8]);
        assert_eq!(hits("10.0.0.[*]@tcp", |d| tcp(10, 0, 0, d)).len(), 256);
        // A network number in any base: tcp0x1 is tcp1.
        let tcp1 = Nid::ipv4(
            1,
            2,
            3,
            4,
            LNet {
                kind: NetKind::Tcp,
                num: 1,
            },
        );
        assert!(NidList::parse("*@tcp0x1").unwrap().matches(&tcp1));
        assert!(!NidList::parse("*@tcp").unwrap().matches(&tcp1));
    }

    #[test]
    fn cidr_masks_match_only_on_ip_networks_with_netmask_support() {
        let l = NidList::parse("10.1.0.0/16@tcp").unwrap();
        assert!(l.matches(&tcp(10, 1, 200, 3)));
        assert!(!l.matches(&tcp(10, 2, 0, 3)));
        assert!(NidList::parse("10.1.2.3/32@tcp")
            .unwrap()
            .matches(&tcp(10, 1, 2, 3)));
        assert!(NidList::parse("10.0.0.0/0@tcp").is_err());
        assert!(NidList::parse("10.0.0.0/33@tcp").is_err());
        assert!(NidList::parse("10.0.0/8@tcp").is_err());
        // IPv6 parses (as /128 without a length) and never matches an IPv4 NID.
        let v6 = NidList::parse("fe80::1@tcp fe80::/64@o2ib").unwrap();
        assert!(!v6.matches(&tcp(0, 0, 0, 0)));
        assert!(NidList::parse("fe80::zz@tcp").is_err());
    }

    #[test]
    fn every_lnet_network_of_the_table_parses() {
        for net in NetType::ALL {
            let item = if net.is_ip() { "1.2.3.4" } else { "7" };
            let text = format!("{item}@{net}3");
            let r = NidRange::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!((r.net, r.net_num), (net, 3));
        }
        let lo = Nid {
            addr: 0,
            net: LNet {
                kind: NetKind::Lo,
                num: 0,
            },
        };
        assert!(NidList::parse("0@lo").unwrap().matches(&lo));
        assert!(!NidList::parse("0@lo").unwrap().matches(&tcp(0, 0, 0, 0)));
        let gni = Nid {
            addr: 77,
            net: LNet {
                kind: NetKind::Gni,
                num: 0,
            },
        };
        assert!(NidList::parse("[70-80]@gni").unwrap().matches(&gni));
    }

    #[test]
    fn rejects_what_libcfs_rejects_and_zero_strides() {
        for bad in [
            "192.168.1.2",
            "192.168.1@tcp",
            "192.168.1.256@tcp",
            "1.2.3.[5-2]@tcp",
            "1.2.3.[1-2@tcp",
            "1.2.3.4@eth",
            "1.2.3.4@tcpx",
            "1.2.3.4@tcp@tcp",
            "1.2.3.4@",
            "@tcp",
            "x@lo",
            "1-3@lo",
            "1.2.3.[]@tcp",
            "1.2..4@tcp",
            "-1@lo",
            // Departure from libcfs: a zero stride would divide by zero when matching.
            "1.2.3.[0-8/0]@tcp",
        ] {
            assert!(NidList::parse(bad).is_err(), "{bad} accepted");
        }
        assert!(NidList::parse("").is_err());
        assert!(NidList::parse("  ").is_err());
        // Several spaces between items are fine (empty items are skipped).
        assert_eq!(NidList::parse(" 0@lo  1@lo ").unwrap().0.len(), 2);
    }
}
