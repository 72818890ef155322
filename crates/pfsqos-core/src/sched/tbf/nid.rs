//! LNet nidlists as TBF `nid={...}` conditions write them (libcfs `cfs_parse_nidlist` /
//! `cfs_match_nid`): `192.168.1.[2-128]@tcp`, `192.168.*.*@tcp`, `*.*.*.*@o2ib`, `0@lo`,
//! `10.0.0.[1,3,5-7]@tcp1`, `10.0.[0-8/2].1@tcp`.

use std::fmt;

use crate::model::{LNet, NetKind, Nid};

/// Most ranges accepted in one `[...]` list, so a hostile rule cannot make matching slow.
pub const NID_RANGES_MAX: usize = 64;

/// One `lo-hi/step` range of numbers (a single number is `n-n/1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NumRange {
    pub lo: u32,
    pub hi: u32,
    pub step: u32,
}

impl NumRange {
    fn matches(&self, v: u32) -> bool {
        v >= self.lo && v <= self.hi && (v - self.lo) / self.step * self.step == v - self.lo
    }
}

impl fmt::Display for NumRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lo == self.hi {
            write!(f, "{}", self.lo)
        } else if self.step == 1 {
            write!(f, "{}-{}", self.lo, self.hi)
        } else {
            write!(f, "{}-{}/{}", self.lo, self.hi, self.step)
        }
    }
}

/// One number position of an address: `*`, a number, or a bracketed list of ranges.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NumExpr {
    Any,
    Ranges(Vec<NumRange>),
}

impl NumExpr {
    fn matches(&self, v: u32) -> bool {
        match self {
            NumExpr::Any => true,
            NumExpr::Ranges(rs) => rs.iter().any(|r| r.matches(v)),
        }
    }

    fn parse(text: &str, max: u32) -> Result<NumExpr, String> {
        if text == "*" {
            return Ok(NumExpr::Any);
        }
        let inner = match text.strip_prefix('[') {
            Some(rest) => rest
                .strip_suffix(']')
                .ok_or_else(|| format!("unclosed `[` in `{text}`"))?,
            None => {
                let v = parse_num(text, max)?;
                return Ok(NumExpr::Ranges(vec![NumRange {
                    lo: v,
                    hi: v,
                    step: 1,
                }]));
            }
        };
        let mut ranges = Vec::new();
        for part in inner.split(',') {
            if ranges.len() == NID_RANGES_MAX {
                return Err(format!("more than {NID_RANGES_MAX} ranges in `{text}`"));
            }
            let (span, step) = match part.split_once('/') {
                Some((s, st)) => (s, parse_num(st, u32::MAX)?),
                None => (part, 1),
            };
            if step == 0 {
                return Err(format!("zero step in `{text}`"));
            }
            let (lo, hi) = match span.split_once('-') {
                Some((a, b)) => (parse_num(a, max)?, parse_num(b, max)?),
                None => {
                    let v = parse_num(span, max)?;
                    (v, v)
                }
            };
            if lo > hi {
                return Err(format!("range `{span}` runs backwards"));
            }
            ranges.push(NumRange { lo, hi, step });
        }
        Ok(NumExpr::Ranges(ranges))
    }
}

fn parse_num(text: &str, max: u32) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{text}` is not a number"));
    }
    match text.parse::<u64>() {
        Ok(v) if v <= max as u64 => Ok(v as u32),
        _ => Err(format!("`{text}` is out of range (max {max})")),
    }
}

impl fmt::Display for NumExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumExpr::Any => f.write_str("*"),
            NumExpr::Ranges(rs) if rs.len() == 1 && rs[0].lo == rs[0].hi => {
                write!(f, "{}", rs[0].lo)
            }
            NumExpr::Ranges(rs) => {
                f.write_str("[")?;
                for (i, r) in rs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{r}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// The address part of a nid range.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AddrExpr {
    /// `*`: every address on the network.
    Any,
    /// Four dotted octet expressions (IP networks: tcp, o2ib).
    Ipv4([NumExpr; 4]),
    /// One number expression (numeric networks: lo, gni, kfi).
    Num(NumExpr),
}

/// One `addr@net` item of a nidlist.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NidRange {
    pub addr: AddrExpr,
    pub net: LNet,
}

fn is_ip_net(kind: NetKind) -> bool {
    matches!(kind, NetKind::Tcp | NetKind::O2ib)
}

fn parse_net(text: &str) -> Result<LNet, String> {
    // Only trailing digits are the network number (`o2ib1` is o2ib number 1).
    let split = text
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    let (name, num) = text.split_at(split);
    let kind = NetKind::from_name(name).ok_or_else(|| format!("unknown network `{text}`"))?;
    let num = if num.is_empty() {
        0
    } else {
        parse_num(num, u32::MAX)?
    };
    Ok(LNet { kind, num })
}

impl NidRange {
    pub fn parse(text: &str) -> Result<NidRange, String> {
        let (addr, net) = text
            .rsplit_once('@')
            .ok_or_else(|| format!("nid `{text}` has no `@net`"))?;
        let net = parse_net(net)?;
        let addr = if addr == "*" {
            AddrExpr::Any
        } else if is_ip_net(net.kind) {
            let parts: Vec<&str> = split_outside(addr, '.', '[', ']');
            if parts.len() != 4 {
                return Err(format!("`{addr}` is not four dotted octets"));
            }
            let mut octets: [NumExpr; 4] = std::array::from_fn(|_| NumExpr::Any);
            for (slot, part) in octets.iter_mut().zip(parts) {
                *slot = NumExpr::parse(part, 255)?;
            }
            AddrExpr::Ipv4(octets)
        } else {
            AddrExpr::Num(NumExpr::parse(addr, u32::MAX)?)
        };
        Ok(NidRange { addr, net })
    }

    pub fn matches(&self, nid: &Nid) -> bool {
        if self.net != nid.net {
            return false;
        }
        match &self.addr {
            AddrExpr::Any => true,
            AddrExpr::Num(e) => e.matches(nid.addr),
            AddrExpr::Ipv4(octs) => octs
                .iter()
                .zip(nid.octets())
                .all(|(e, o)| e.matches(o as u32)),
        }
    }
}

/// Splits on `sep` except between `open` and `close`, so `10.[1,2].0.1` keeps its list whole
/// (`[`, `]`) and `jobid={a b},nid={x}` splits only between expressions (`{`, `}`).
pub(crate) fn split_outside(text: &str, sep: char, open: char, close: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0u32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth = depth.saturating_sub(1);
        } else if c == sep && depth == 0 {
            out.push(&text[start..i]);
            start = i + 1;
        }
    }
    out.push(&text[start..]);
    out
}

impl fmt::Display for NidRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.addr {
            AddrExpr::Any => f.write_str("*")?,
            AddrExpr::Num(e) => write!(f, "{e}")?,
            AddrExpr::Ipv4([a, b, c, d]) => write!(f, "{a}.{b}.{c}.{d}")?,
        }
        write!(f, "@{}", self.net)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn ranges_stars_and_lists() {
        let r = NidRange::parse("192.168.1.[2-128]@tcp").unwrap();
        assert!(r.matches(&tcp(192, 168, 1, 2)));
        assert!(r.matches(&tcp(192, 168, 1, 128)));
        assert!(!r.matches(&tcp(192, 168, 1, 1)));
        assert!(!r.matches(&tcp(192, 168, 1, 129)));
        assert!(!r.matches(&tcp(192, 168, 2, 5)));
        let star = NidRange::parse("192.168.*.*@tcp").unwrap();
        assert!(star.matches(&tcp(192, 168, 7, 9)));
        assert!(!star.matches(&tcp(192, 169, 7, 9)));
        let list = NidRange::parse("10.0.0.[1,3,5-7]@tcp").unwrap();
        let hits: Vec<u8> = (0..10)
            .filter(|&d| list.matches(&tcp(10, 0, 0, d)))
            .collect();
        assert_eq!(hits, vec![1, 3, 5, 6, 7]);
        let step = NidRange::parse("10.0.0.[0-8/4]@tcp").unwrap();
        let hits: Vec<u8> = (0..10)
            .filter(|&d| step.matches(&tcp(10, 0, 0, d)))
            .collect();
        assert_eq!(hits, vec![0, 4, 8]);
    }

    #[test]
    fn network_must_match() {
        let o2ib = NidRange::parse("*.*.*.*@o2ib").unwrap();
        assert!(!o2ib.matches(&tcp(1, 2, 3, 4)));
        let n = Nid::ipv4(
            1,
            2,
            3,
            4,
            LNet {
                kind: NetKind::O2ib,
                num: 0,
            },
        );
        assert!(o2ib.matches(&n));
        let n1 = Nid {
            net: LNet {
                kind: NetKind::O2ib,
                num: 1,
            },
            ..n
        };
        assert!(!o2ib.matches(&n1));
        let lo = NidRange::parse("0@lo").unwrap();
        let lo_nid = Nid {
            addr: 0,
            net: LNet {
                kind: NetKind::Lo,
                num: 0,
            },
        };
        assert!(lo.matches(&lo_nid));
        assert!(!lo.matches(&tcp(0, 0, 0, 0)));
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "192.168.1.[2-128]@tcp",
            "*.*.*.*@o2ib",
            "0@lo",
            "10.0.0.[1,3,5-7]@tcp1",
            "10.[0-8/2].0.1@tcp",
            "*@tcp",
        ] {
            let r = NidRange::parse(text).unwrap();
            assert_eq!(r.to_string(), text);
            assert_eq!(NidRange::parse(&r.to_string()).unwrap(), r);
        }
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "192.168.1.2",
            "192.168.1@tcp",
            "192.168.1.256@tcp",
            "1.2.3.[5-2]@tcp",
            "1.2.3.[1-2@tcp",
            "1.2.3.4@eth",
            "x@lo",
            "1.2.3.[0-4/0]@tcp",
        ] {
            assert!(NidRange::parse(bad).is_err(), "{bad} accepted");
        }
    }
}
