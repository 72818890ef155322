//! The servers' statistics placers read: iez Section III-B1's per-OSS CPU and memory
//! utilization and per-OST `kbytestotal` / `kbytesavail` (here in bytes), and which OSS serves
//! each OST (the collector's configuration file in the paper; Lustre's allocator learns it from
//! the OSTs' connections). Plain data: the driver fills it from whatever it has (the simulator's
//! model, the live OSSs' reports, `lctl get_param obdfilter.*.kbytes*`).

use std::fmt;

use crate::model::OssId;

/// Most OSTs a statistics snapshot may list (placers refuse larger ones): the placers' bound.
pub const STATS_OSTS_MAX: usize = super::PLACER_OSTS_MAX as usize;
/// Most OSSs a statistics snapshot may list.
pub const STATS_OSSES_MAX: usize = 1024;

/// A server's CPU and memory utilization, each a fraction in `0.0..=1.0` (`/proc/loadavg` and
/// `/proc/meminfo` in the paper).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServerLoad {
    pub cpu_util: f64,
    pub mem_util: f64,
}

impl ServerLoad {
    pub const IDLE: ServerLoad = ServerLoad {
        cpu_util: 0.0,
        mem_util: 0.0,
    };
}

/// One OST: its OSS and its space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OstStats {
    pub oss: OssId,
    /// `kbytestotal`, in bytes.
    pub total_bytes: u64,
    /// `kbytesavail`, in bytes: what new objects may use (Lustre's `os_bavail`).
    pub avail_bytes: u64,
}

impl OstStats {
    /// Bytes not available (`total − avail`, the paper's used bytes in `ostCost`).
    pub fn used_bytes(&self) -> u64 {
        self.total_bytes - self.avail_bytes
    }
}

/// A snapshot of the servers (iez collects one every 60 s).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerStats {
    /// When the snapshot was taken, in ns (Lustre's allocator decays its penalties with time).
    pub at_ns: u64,
    /// Per OST, indexed by OST index `0..`.
    pub osts: Vec<OstStats>,
    /// Per OSS, indexed by [`OssId`]`.0`.
    pub osses: Vec<ServerLoad>,
    /// The MDS's own load, if known: iez runs its allocation only while the MDS's CPU is below
    /// 70 % and its memory below 50 % (Section III-B2).
    pub mds: Option<ServerLoad>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StatsError {
    NoOsts,
    TooManyOsts(usize),
    TooManyOsses(usize),
    /// The snapshot lists another number of OSTs than the placer places on.
    OstCountMismatch {
        expected: usize,
        got: usize,
    },
    OssOutOfRange {
        ost: usize,
        oss: u32,
    },
    /// Zero total, or more available than total.
    BadSpace {
        ost: usize,
    },
    /// A utilization outside `0.0..=1.0` or not finite.
    BadLoad {
        oss: Option<usize>,
    },
}

impl fmt::Display for StatsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatsError::NoOsts => write!(f, "server statistics list no OST"),
            StatsError::TooManyOsts(n) => {
                write!(
                    f,
                    "{n} OSTs exceed the {STATS_OSTS_MAX} statistics may list"
                )
            }
            StatsError::TooManyOsses(n) => {
                write!(
                    f,
                    "{n} OSSs exceed the {STATS_OSSES_MAX} statistics may list"
                )
            }
            StatsError::OstCountMismatch { expected, got } => {
                write!(
                    f,
                    "statistics list {got} OSTs, the file system has {expected}"
                )
            }
            StatsError::OssOutOfRange { ost, oss } => {
                write!(
                    f,
                    "OST {ost} is on OSS {oss}, which the statistics do not list"
                )
            }
            StatsError::BadSpace { ost } => {
                write!(f, "OST {ost}: total 0 or more available than total")
            }
            StatsError::BadLoad { oss: Some(i) } => {
                write!(f, "OSS {i}: utilization not a fraction in 0..=1")
            }
            StatsError::BadLoad { oss: None } => {
                write!(f, "MDS: utilization not a fraction in 0..=1")
            }
        }
    }
}

impl std::error::Error for StatsError {}

fn fraction(x: f64) -> bool {
    x.is_finite() && (0.0..=1.0).contains(&x)
}

impl ServerStats {
    /// Checks the snapshot is one a placer can use.
    pub fn validate(&self) -> Result<(), StatsError> {
        if self.osts.is_empty() {
            return Err(StatsError::NoOsts);
        }
        if self.osts.len() > STATS_OSTS_MAX {
            return Err(StatsError::TooManyOsts(self.osts.len()));
        }
        if self.osses.len() > STATS_OSSES_MAX {
            return Err(StatsError::TooManyOsses(self.osses.len()));
        }
        for (i, o) in self.osts.iter().enumerate() {
            if o.oss.0 as usize >= self.osses.len() {
                return Err(StatsError::OssOutOfRange {
                    ost: i,
                    oss: o.oss.0,
                });
            }
            if o.total_bytes == 0 || o.avail_bytes > o.total_bytes {
                return Err(StatsError::BadSpace { ost: i });
            }
        }
        for (i, l) in self.osses.iter().enumerate() {
            if !fraction(l.cpu_util) || !fraction(l.mem_util) {
                return Err(StatsError::BadLoad { oss: Some(i) });
            }
        }
        if let Some(l) = self.mds {
            if !fraction(l.cpu_util) || !fraction(l.mem_util) {
                return Err(StatsError::BadLoad { oss: None });
            }
        }
        Ok(())
    }

    /// `oss_count` OSSs of `osts_per_oss` OSTs each, OST `i` on OSS `i / osts_per_oss`, all of
    /// `total_bytes` with `avail_bytes` free and idle servers (tests, scenarios).
    pub fn uniform(
        oss_count: u32,
        osts_per_oss: u32,
        total_bytes: u64,
        avail_bytes: u64,
    ) -> ServerStats {
        ServerStats {
            at_ns: 0,
            osts: (0..oss_count * osts_per_oss)
                .map(|i| OstStats {
                    oss: OssId(i / osts_per_oss),
                    total_bytes,
                    avail_bytes,
                })
                .collect(),
            osses: vec![ServerLoad::IDLE; oss_count as usize],
            mds: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        let good = ServerStats::uniform(3, 5, 10 << 30, 10 << 30);
        assert_eq!(good.validate(), Ok(()));
        assert_eq!(good.osts[7].oss, OssId(1));
        let mut s = good.clone();
        s.osts[2].avail_bytes = s.osts[2].total_bytes + 1;
        assert_eq!(s.validate(), Err(StatsError::BadSpace { ost: 2 }));
        let mut s = good.clone();
        s.osts[0].oss = OssId(3);
        assert_eq!(
            s.validate(),
            Err(StatsError::OssOutOfRange { ost: 0, oss: 3 })
        );
        let mut s = good.clone();
        s.osses[1].cpu_util = f64::NAN;
        assert_eq!(s.validate(), Err(StatsError::BadLoad { oss: Some(1) }));
        let mut s = good.clone();
        s.mds = Some(ServerLoad {
            cpu_util: 0.1,
            mem_util: 1.5,
        });
        assert_eq!(s.validate(), Err(StatsError::BadLoad { oss: None }));
        let mut s = good;
        s.osts.clear();
        assert_eq!(s.validate(), Err(StatsError::NoOsts));
    }
}
