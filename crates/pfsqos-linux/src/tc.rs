//! The actuator of PI control: an egress bandwidth limit set with Linux's token bucket
//! filter (`tc qdisc replace dev D root tbf rate R burst B latency L`).
//!
//! Units are the trap: in tc, `mbit` is megabits per second and `mbps` is megaBYTES per
//! second. This module always renders rates as bits per second with the explicit `bit` unit
//! and sizes as bytes with the explicit `b` unit, so no suffix is ever guessed.
//!
//! **Every rate change refills the bucket**: sch_tbf.c `tbf_change()` sets
//! `q->tokens = q->buffer`, so a controller that changes the rate every period Ts lets up to one
//! extra burst through per period on top of rate × Ts. [`default_burst_bytes`] therefore picks
//! burst = rate × Ts (the extra is at most the period's own budget), raised only to the
//! device's MTU plus link header, below which the kernel warns ("burst ... is lower than
//! device ... mtu") and cannot send a full-size packet in one go.
//!
//! TBF shapes egress only: put it on the interface the throttled traffic leaves by.
//! tc runs as a child process with separate argv entries (never a shell): interface names and
//! values are data.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// Linux's IFNAMSIZ (16) less the terminating NUL.
pub const IFNAME_LEN_MAX: usize = 15;

/// Ethernet's link header (dst, src, ethertype): the kernel compares burst with
/// `dev->mtu + dev->hard_header_len`, 1514 bytes on a 1500-byte-MTU Ethernet or veth device.
pub const ETH_HEADER_BYTES: u64 = 14;

/// The largest rate whose bits per second fit in u64.
pub const RATE_BYTES_PER_S_MAX: u64 = u64::MAX / 8;

/// A network interface name as the kernel accepts it (net/core/dev.c `dev_valid_name`): 1 to
/// 15 bytes, not `.` or `..`, no `/`, `:`, whitespace or NUL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfName(String);

impl IfName {
    pub fn new(name: &str) -> Result<IfName, TcError> {
        let invalid = |reason: &str| TcError::InvalidIfName {
            name: name.to_string(),
            reason: reason.to_string(),
        };
        if name.is_empty() {
            return Err(invalid("empty"));
        }
        if name.len() > IFNAME_LEN_MAX {
            return Err(invalid("longer than 15 bytes (IFNAMSIZ)"));
        }
        if name == "." || name == ".." {
            return Err(invalid("'.' and '..' are not interface names"));
        }
        if name
            .chars()
            .any(|c| c == '/' || c == ':' || c == '\0' || c.is_whitespace())
        {
            return Err(invalid("contains '/', ':', NUL or whitespace"));
        }
        Ok(IfName(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IfName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why tc could not be run or understood.
#[derive(Debug)]
pub enum TcError {
    InvalidIfName {
        name: String,
        reason: String,
    },
    InvalidValue {
        what: &'static str,
        reason: String,
    },
    /// The tc program could not be started (not installed?).
    Spawn {
        program: PathBuf,
        source: io::Error,
    },
    /// tc ran and failed; its stderr says why (e.g. not root: "Operation not permitted").
    Failed {
        argv: Vec<String>,
        status: ExitStatus,
        stderr: String,
    },
    /// `tc qdisc show` printed something this module does not understand.
    Show {
        text: String,
        reason: String,
    },
    /// The interface's MTU could not be read from sysfs.
    Mtu {
        path: PathBuf,
        reason: String,
    },
}

impl fmt::Display for TcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TcError::InvalidIfName { name, reason } => {
                write!(f, "invalid interface name {name:?}: {reason}")
            }
            TcError::InvalidValue { what, reason } => write!(f, "invalid tbf {what}: {reason}"),
            TcError::Spawn { program, source } => {
                write!(
                    f,
                    "cannot run {}: {source} (is iproute2 installed?)",
                    program.display()
                )
            }
            TcError::Failed {
                argv,
                status,
                stderr,
            } => {
                write!(
                    f,
                    "`{}` failed ({status}): {}",
                    argv.join(" "),
                    stderr.trim()
                )
            }
            TcError::Show { text, reason } => {
                write!(
                    f,
                    "cannot understand tc's output ({reason}): {:?}",
                    text.trim()
                )
            }
            TcError::Mtu { path, reason } => {
                write!(f, "cannot read the MTU from {}: {reason}", path.display())
            }
        }
    }
}

impl std::error::Error for TcError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TcError::Spawn { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The burst for a TBF that a controller re-sets every `period_ns`: rate × period, so the
/// refill at each change (see the module doc) adds at most one period's budget; never below
/// `min_burst_bytes` (the device's MTU plus link header).
pub fn default_burst_bytes(rate_bytes_per_s: u64, period_ns: u64, min_burst_bytes: u64) -> u64 {
    let per_period = u128::from(rate_bytes_per_s) * u128::from(period_ns) / 1_000_000_000;
    u64::try_from(per_period)
        .unwrap_or(u64::MAX)
        .max(min_burst_bytes)
}

/// One TBF root qdisc, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcTbf {
    dev: IfName,
    rate_bytes_per_s: u64,
    burst_bytes: u64,
    latency_ms: u32,
}

impl TcTbf {
    /// `rate_bytes_per_s` in 1..=[`RATE_BYTES_PER_S_MAX`], `burst_bytes` and `latency_ms` > 0
    /// (tc requires a latency or a limit; latency bounds the queue to rate × latency + burst).
    pub fn new(
        dev: IfName,
        rate_bytes_per_s: u64,
        burst_bytes: u64,
        latency_ms: u32,
    ) -> Result<TcTbf, TcError> {
        if rate_bytes_per_s == 0 || rate_bytes_per_s > RATE_BYTES_PER_S_MAX {
            return Err(TcError::InvalidValue {
                what: "rate",
                reason: format!("{rate_bytes_per_s} B/s is not in 1..={RATE_BYTES_PER_S_MAX}"),
            });
        }
        if burst_bytes == 0 || burst_bytes > u64::from(u32::MAX) {
            return Err(TcError::InvalidValue {
                what: "burst",
                reason: format!("{burst_bytes} B is not in 1..=2^32-1 (the kernel's u32)"),
            });
        }
        if latency_ms == 0 {
            return Err(TcError::InvalidValue {
                what: "latency",
                reason: "0 ms".to_string(),
            });
        }
        Ok(TcTbf {
            dev,
            rate_bytes_per_s,
            burst_bytes,
            latency_ms,
        })
    }

    pub fn dev(&self) -> &IfName {
        &self.dev
    }

    pub fn rate_bytes_per_s(&self) -> u64 {
        self.rate_bytes_per_s
    }

    pub fn burst_bytes(&self) -> u64 {
        self.burst_bytes
    }

    pub fn latency_ms(&self) -> u32 {
        self.latency_ms
    }

    /// The arguments after `tc`: `qdisc replace dev D root tbf rate {8·R}bit burst {B}b
    /// latency {L}ms` (replace is add-or-change, so the first call and later ones are alike).
    pub fn replace_args(&self) -> Vec<String> {
        let rate_bits_per_s = self.rate_bytes_per_s * 8;
        vec![
            "qdisc".into(),
            "replace".into(),
            "dev".into(),
            self.dev.as_str().into(),
            "root".into(),
            "tbf".into(),
            "rate".into(),
            format!("{rate_bits_per_s}bit"),
            "burst".into(),
            format!("{}b", self.burst_bytes),
            "latency".into(),
            format!("{}ms", self.latency_ms),
        ]
    }
}

/// The arguments after `tc` that remove the root qdisc of `dev` (back to the default).
pub fn delete_args(dev: &IfName) -> Vec<String> {
    vec![
        "qdisc".into(),
        "del".into(),
        "dev".into(),
        dev.as_str().into(),
        "root".into(),
    ]
}

/// A TBF as `tc qdisc show` prints it. tc rounds both values for display: rates to the
/// largest SI unit that divides them exactly below 1000 of the next (`8500Kbit`, but
/// 1234567890 bit/s shows as `1234Mbit`), sizes to Kb/Mb of 1024 when within 16 bytes
/// (16390 B shows as `16Kb`), and the kernel stores burst as transmission time, so it comes
/// back quantised. Compare with a tolerance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TbfShow {
    pub rate_bytes_per_s: u64,
    pub burst_bytes: u64,
}

/// Finds the root TBF in `tc qdisc show dev D` output, e.g.
/// `qdisc tbf 8001: root refcnt 2 rate 10Mbit burst 12500b lat 50ms`. `Ok(None)` when the
/// root qdisc is something else (noqueue, pfifo_fast, fq_codel...).
pub fn parse_tbf_show(text: &str) -> Result<Option<TbfShow>, TcError> {
    let Some(line) = text.lines().find(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        words.len() >= 4 && words[0] == "qdisc" && words[1] == "tbf" && words[3] == "root"
    }) else {
        return Ok(None);
    };
    let show_error = |reason: String| TcError::Show {
        text: line.to_string(),
        reason,
    };
    let value_after = |key: &str| -> Result<&str, TcError> {
        let mut words = line.split_whitespace();
        words.find(|w| *w == key);
        words
            .next()
            .ok_or_else(|| show_error(format!("no '{key}' value")))
    };
    let rate_bytes_per_s = parse_rate_bytes_per_s(value_after("rate")?).map_err(show_error)?;
    let burst_bytes = parse_size_bytes(value_after("burst")?).map_err(show_error)?;
    Ok(Some(TbfShow {
        rate_bytes_per_s,
        burst_bytes,
    }))
}

/// The root qdisc of an interface as `tc qdisc show dev D` names it: its kind (`noqueue`,
/// `mq`, `fq_codel`, `tbf`...) and handle (`0:` for the kernel's default, `8001:` for one
/// that `tc qdisc add/replace` installed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootQdisc {
    pub kind: String,
    pub handle: String,
}

impl RootQdisc {
    /// Whether this is the qdisc the kernel attaches by itself (handle `0:`): deleting the
    /// root qdisc brings it back, so a daemon that found it can restore it exactly.
    pub fn is_kernel_default(&self) -> bool {
        self.handle == "0:"
    }
}

/// Finds the root qdisc in `tc qdisc show dev D` output (`qdisc noqueue 0: root refcnt 2`);
/// an error when there is none (tc prints one for every interface that exists).
pub fn parse_root_qdisc(text: &str) -> Result<RootQdisc, TcError> {
    text.lines()
        .find_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            (words.len() >= 4 && words[0] == "qdisc" && words[3] == "root").then(|| RootQdisc {
                kind: words[1].to_string(),
                handle: words[2].to_string(),
            })
        })
        .ok_or_else(|| TcError::Show {
            text: text.to_string(),
            reason: "no root qdisc".to_string(),
        })
}

/// Splits `12.5Mbit` into (12.5, "Mbit").
fn split_number(text: &str) -> Result<(f64, &str), String> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(end);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} does not start with a number"))?;
    Ok((value, unit))
}

/// A rate as tc prints it (`8Mbit`, `8500Kbit`, `1Gbit`, `800bit`; IEC `Kibit` with `-iec`;
/// byte units `bps`, `Kbps`... accepted too), in bytes per second.
pub fn parse_rate_bytes_per_s(text: &str) -> Result<u64, String> {
    let (value, unit) = split_number(text)?;
    let lower = unit.to_ascii_lowercase();
    let (prefix, bits_per_unit) = if let Some(prefix) = lower.strip_suffix("bit") {
        (prefix, 1.0)
    } else if let Some(prefix) = lower.strip_suffix("bps") {
        (prefix, 8.0)
    } else {
        return Err(format!("rate {text:?} has no bit or bps unit"));
    };
    let multiplier = match prefix {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        "ki" => 1024.0,
        "mi" => 1024.0 * 1024.0,
        "gi" => 1024.0 * 1024.0 * 1024.0,
        "ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("rate {text:?} has an unknown unit prefix")),
    };
    Ok((value * multiplier * bits_per_unit / 8.0).round() as u64)
}

/// A size as tc prints it (`12500b`, `16Kb`, `1Mb`: K, M, G of 1024 bytes), in bytes.
pub fn parse_size_bytes(text: &str) -> Result<u64, String> {
    let (value, unit) = split_number(text)?;
    let multiplier = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1024.0,
        "m" | "mb" => 1024.0 * 1024.0,
        "g" | "gb" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("size {text:?} has an unknown unit")),
    };
    Ok((value * multiplier).round() as u64)
}

/// Reads `<sysfs>/class/net/<dev>/mtu`.
pub fn interface_mtu_bytes(dev: &IfName, sysfs_root: &Path) -> Result<u64, TcError> {
    let path = sysfs_root.join("class/net").join(dev.as_str()).join("mtu");
    let text = std::fs::read_to_string(&path).map_err(|e| TcError::Mtu {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    text.trim().parse().map_err(|_| TcError::Mtu {
        path,
        reason: format!("{:?} is not a number", text.trim()),
    })
}

/// Applies the controller's bandwidth limit to one interface, each call a `tc` child process
/// waited for to its end (tc talks to the kernel over netlink and returns at once).
#[derive(Debug, Clone)]
pub struct TcActuator {
    dev: IfName,
    tc_program: PathBuf,
    period_ns: u64,
    latency_ms: u32,
    min_burst_bytes: u64,
}

impl TcActuator {
    /// For `dev`, changed every `period_ns` (the control period Ts, which sizes the burst),
    /// with queueing bounded by `latency_ms`. The burst floor is the MTU read from
    /// `<sysfs_root>/class/net/<dev>/mtu` plus [`ETH_HEADER_BYTES`].
    pub fn new(
        dev: &str,
        period_ns: u64,
        latency_ms: u32,
        sysfs_root: &Path,
    ) -> Result<TcActuator, TcError> {
        let dev = IfName::new(dev)?;
        let mtu_bytes = interface_mtu_bytes(&dev, sysfs_root)?;
        Ok(TcActuator::with_min_burst(
            dev,
            period_ns,
            latency_ms,
            mtu_bytes + ETH_HEADER_BYTES,
        ))
    }

    /// As [`TcActuator::new`] with the burst floor given instead of read from sysfs.
    pub fn with_min_burst(
        dev: IfName,
        period_ns: u64,
        latency_ms: u32,
        min_burst_bytes: u64,
    ) -> TcActuator {
        assert!(period_ns > 0, "the control period must be positive");
        assert!(min_burst_bytes > 0, "the burst floor must be positive");
        TcActuator {
            dev,
            tc_program: PathBuf::from("tc"),
            period_ns,
            latency_ms,
            min_burst_bytes,
        }
    }

    /// Runs this program instead of `tc` from PATH.
    pub fn with_tc_program(mut self, program: PathBuf) -> TcActuator {
        self.tc_program = program;
        self
    }

    pub fn dev(&self) -> &IfName {
        &self.dev
    }

    /// The qdisc [`TcActuator::apply`] installs for `rate_bytes_per_s`.
    pub fn tbf_for(&self, rate_bytes_per_s: u64) -> Result<TcTbf, TcError> {
        // The kernel keeps the burst in a u32: a higher rate's period budget is cut there
        // (4 GiB is over 0.1 s at 40 GB/s: the bucket stays far above one frame).
        let burst_bytes =
            default_burst_bytes(rate_bytes_per_s, self.period_ns, self.min_burst_bytes)
                .min(u64::from(u32::MAX));
        TcTbf::new(
            self.dev.clone(),
            rate_bytes_per_s,
            burst_bytes,
            self.latency_ms,
        )
    }

    /// Limits egress to `limit_bytes_per_s`, or removes the limit (`None`: deletes the root
    /// qdisc; deleting when there is none is not an error).
    pub fn apply(&self, limit_bytes_per_s: Option<u64>) -> Result<(), TcError> {
        match limit_bytes_per_s {
            Some(rate) => {
                let tbf = self.tbf_for(rate)?;
                self.run(&tbf.replace_args()).map(drop)
            }
            None => match self.run(&delete_args(&self.dev)) {
                Ok(_) => Ok(()),
                Err(TcError::Failed { stderr, .. }) if is_no_qdisc_error(&stderr) => Ok(()),
                Err(err) => Err(err),
            },
        }
    }

    /// The root TBF now on the interface, as tc reports it (rounded, see [`TbfShow`]).
    pub fn show(&self) -> Result<Option<TbfShow>, TcError> {
        let args: Vec<String> = vec![
            "qdisc".into(),
            "show".into(),
            "dev".into(),
            self.dev.as_str().into(),
        ];
        parse_tbf_show(&self.run(&args)?)
    }

    /// The interface's root qdisc now (see [`RootQdisc`]).
    pub fn root_qdisc(&self) -> Result<RootQdisc, TcError> {
        let args: Vec<String> = vec![
            "qdisc".into(),
            "show".into(),
            "dev".into(),
            self.dev.as_str().into(),
        ];
        parse_root_qdisc(&self.run(&args)?)
    }

    /// Runs tc with `args`, returning its stdout.
    fn run(&self, args: &[String]) -> Result<String, TcError> {
        let output = Command::new(&self.tc_program)
            .args(args)
            .output()
            .map_err(|source| TcError::Spawn {
                program: self.tc_program.clone(),
                source,
            })?;
        if !output.status.success() {
            let mut argv = vec![self.tc_program.display().to_string()];
            argv.extend(args.iter().cloned());
            return Err(TcError::Failed {
                argv,
                status: output.status,
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

/// What tc prints when deleting a root qdisc that is the default one: "Error: Cannot delete
/// qdisc with handle of zero." (current kernels), "RTNETLINK answers: No such file or
/// directory" (older ones).
fn is_no_qdisc_error(stderr: &str) -> bool {
    stderr.contains("handle of zero")
        || stderr.contains("No such file or directory")
        || stderr.contains("Cannot find specified qdisc")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(name: &str) -> IfName {
        IfName::new(name).unwrap()
    }

    #[test]
    fn interface_names_follow_the_kernel_rules() {
        assert_eq!(dev("eth0").as_str(), "eth0");
        assert_eq!(dev("a23456789012345").as_str().len(), 15);
        for bad in [
            "",
            "a234567890123456",
            ".",
            "..",
            "a/b",
            "a b",
            "a\tb",
            "eth0:1",
            "a\0b",
            "é".repeat(8).as_str(),
        ] {
            let err = IfName::new(bad).unwrap_err();
            assert!(
                matches!(err, TcError::InvalidIfName { .. }),
                "{bad:?}: {err}"
            );
        }
        // A name is data: a shell metacharacter is just a byte of it.
        assert_eq!(dev("x;rm").as_str(), "x;rm");
    }

    #[test]
    fn renders_rates_in_bits_with_an_explicit_unit() {
        // 1 MB/s is 8 Mbit/s: tc's "8mbit", never "1mbps"/"8mbps" (megaBYTES).
        let tbf = TcTbf::new(dev("veth0"), 1_000_000, 100_000, 50).unwrap();
        assert_eq!(
            tbf.replace_args(),
            [
                "qdisc",
                "replace",
                "dev",
                "veth0",
                "root",
                "tbf",
                "rate",
                "8000000bit",
                "burst",
                "100000b",
                "latency",
                "50ms"
            ]
        );
        let tbf = TcTbf::new(dev("d"), 1, 1514, 1).unwrap();
        assert_eq!(tbf.replace_args()[7], "8bit");
        let tbf = TcTbf::new(dev("d"), RATE_BYTES_PER_S_MAX, 1514, 1).unwrap();
        assert_eq!(
            tbf.replace_args()[7],
            format!("{}bit", RATE_BYTES_PER_S_MAX * 8)
        );
        assert_eq!(
            delete_args(&dev("veth0")),
            ["qdisc", "del", "dev", "veth0", "root"]
        );
    }

    #[test]
    fn rejects_values_tc_or_the_kernel_would_refuse() {
        for (rate, burst, latency) in [
            (0, 1514, 50),
            (RATE_BYTES_PER_S_MAX + 1, 1514, 50),
            (1, 0, 50),
            (1, 1 << 32, 50),
            (1, 1514, 0),
        ] {
            let err = TcTbf::new(dev("d"), rate, burst, latency).unwrap_err();
            assert!(matches!(err, TcError::InvalidValue { .. }), "{err}");
        }
    }

    #[test]
    fn burst_is_one_period_of_rate_but_at_least_the_mtu() {
        // 10 MB/s over 300 ms: 3 MB.
        assert_eq!(
            default_burst_bytes(10_000_000, 300_000_000, 1514),
            3_000_000
        );
        // 1 kB/s over 300 ms is 300 B, below a full frame: the frame wins.
        assert_eq!(default_burst_bytes(1_000, 300_000_000, 1514), 1514);
        assert_eq!(default_burst_bytes(u64::MAX, u64::MAX, 1514), u64::MAX);
        let actuator = TcActuator::with_min_burst(dev("veth0"), 300_000_000, 50, 1514);
        let tbf = actuator.tbf_for(1_000_000).unwrap();
        assert_eq!(
            (tbf.rate_bytes_per_s(), tbf.burst_bytes(), tbf.latency_ms()),
            (1_000_000, 300_000, 50)
        );
        // 1 TiB/s (the protocol's largest client limit) over 300 ms is beyond the kernel's
        // u32 burst: cut there, not refused.
        let tbf = actuator.tbf_for(1 << 40).unwrap();
        assert_eq!(tbf.burst_bytes(), u64::from(u32::MAX));
    }

    #[test]
    fn parses_tc_show_output() {
        let show =
            parse_tbf_show("qdisc tbf 8001: root refcnt 2 rate 10Mbit burst 12500b lat 50ms \n")
                .unwrap()
                .unwrap();
        assert_eq!(
            show,
            TbfShow {
                rate_bytes_per_s: 1_250_000,
                burst_bytes: 12_500
            }
        );
        // Seen on iproute2 6.1: exact Kbit multiples and 1024-byte Kb.
        let show =
            parse_tbf_show("qdisc tbf 8001: root refcnt 3 rate 8500Kbit burst 16Kb lat 50ms ")
                .unwrap()
                .unwrap();
        assert_eq!(
            show,
            TbfShow {
                rate_bytes_per_s: 1_062_500,
                burst_bytes: 16_384
            }
        );
        let show =
            parse_tbf_show("qdisc tbf 1: root refcnt 2 rate 10Kbit burst 1500b limit 1000b\n")
                .unwrap()
                .unwrap();
        assert_eq!(
            show,
            TbfShow {
                rate_bytes_per_s: 1_250,
                burst_bytes: 1_500
            }
        );
        let show = parse_tbf_show("qdisc tbf 8001: root refcnt 2 rate 1Gbit burst 1Mb lat 1ms\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            show,
            TbfShow {
                rate_bytes_per_s: 125_000_000,
                burst_bytes: 1 << 20
            }
        );
        let show = parse_tbf_show("qdisc tbf 8001: root refcnt 2 rate 800bit burst 2Kb lat 1s\n")
            .unwrap()
            .unwrap();
        assert_eq!(show.rate_bytes_per_s, 100);
        // Another root qdisc, or a TBF that is not the root.
        assert_eq!(
            parse_tbf_show("qdisc noqueue 0: root refcnt 2 \n").unwrap(),
            None
        );
        assert_eq!(parse_tbf_show("").unwrap(), None);
        assert_eq!(
            parse_tbf_show("qdisc tbf 10: parent 1:1 rate 1Mbit burst 1500b lat 1ms\n").unwrap(),
            None
        );
        for bad in [
            "qdisc tbf 8001: root refcnt 2 burst 1500b lat 1ms",
            "qdisc tbf 8001: root refcnt 2 rate 10Mfoo burst 1500b",
            "qdisc tbf 8001: root refcnt 2 rate 10Mbit burst x",
            "qdisc tbf 8001: root refcnt 2 rate 10Mbit burst",
        ] {
            let err = parse_tbf_show(bad).unwrap_err();
            assert!(matches!(err, TcError::Show { .. }), "{bad}: {err}");
        }
    }

    #[test]
    fn finds_the_root_qdisc_and_tells_the_kernels_default() {
        let q = parse_root_qdisc("qdisc noqueue 0: root refcnt 2 \n").unwrap();
        assert_eq!((q.kind.as_str(), q.handle.as_str()), ("noqueue", "0:"));
        assert!(q.is_kernel_default());
        let text = "qdisc mq 0: root \nqdisc fq_codel 0: parent :1 limit 10240p\n";
        assert!(parse_root_qdisc(text).unwrap().is_kernel_default());
        let q = parse_root_qdisc("qdisc tbf 8001: root refcnt 2 rate 8Mbit burst 1Mb lat 50ms")
            .unwrap();
        assert_eq!(q.kind, "tbf");
        assert!(!q.is_kernel_default());
        for bad in ["", "qdisc fq_codel 0: parent :1 limit 10240p", "garbage"] {
            assert!(
                matches!(parse_root_qdisc(bad), Err(TcError::Show { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn rate_units_tell_bits_from_bytes() {
        assert_eq!(parse_rate_bytes_per_s("8Mbit"), Ok(1_000_000));
        assert_eq!(parse_rate_bytes_per_s("1mbps"), Ok(1_000_000));
        assert_eq!(parse_rate_bytes_per_s("8mbps"), Ok(8_000_000));
        assert_eq!(parse_rate_bytes_per_s("8Kibit"), Ok(1024));
        assert_eq!(parse_rate_bytes_per_s("1.5Gbit"), Ok(187_500_000));
        assert!(parse_rate_bytes_per_s("8M").is_err());
        assert!(parse_rate_bytes_per_s("Mbit").is_err());
        assert_eq!(parse_size_bytes("1514b"), Ok(1514));
        assert_eq!(parse_size_bytes("1.5Kb"), Ok(1536));
        assert!(parse_size_bytes("1kbit").is_err());
    }

    #[test]
    fn a_missing_tc_is_a_clear_error() {
        let actuator = TcActuator::with_min_burst(dev("veth0"), 300_000_000, 50, 1514)
            .with_tc_program(PathBuf::from("/nonexistent/tc"));
        let err = actuator.apply(Some(1_000_000)).unwrap_err();
        assert!(matches!(err, TcError::Spawn { .. }), "{err}");
        assert!(err.to_string().contains("/nonexistent/tc"), "{err}");
    }

    #[test]
    fn tc_failures_carry_its_stderr() {
        if Command::new("tc").arg("-V").output().is_err() {
            pfsqos_testkit::skip(
                "tc_failures_carry_its_stderr",
                "tc (iproute2) is not installed",
            );
            return;
        }
        // Showing a device that does not exist fails without privileges.
        let actuator = TcActuator::with_min_burst(dev("pfsqosnone0"), 300_000_000, 50, 1514);
        let err = actuator.show().unwrap_err();
        match &err {
            TcError::Failed { stderr, argv, .. } => {
                assert!(stderr.contains("pfsqosnone0"), "{err}");
                assert_eq!(argv[1..], ["qdisc", "show", "dev", "pfsqosnone0"]);
            }
            other => panic!("expected a tc failure, got {other}"),
        }
    }

    #[test]
    fn mtu_comes_from_sysfs() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("class/net/veth0");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("mtu"), "1500\n").unwrap();
        assert_eq!(
            interface_mtu_bytes(&dev("veth0"), root.path()).unwrap(),
            1500
        );
        let actuator = TcActuator::new("veth0", 100_000_000, 50, root.path()).unwrap();
        assert_eq!(actuator.tbf_for(1).unwrap().burst_bytes(), 1514);
        std::fs::write(dir.join("mtu"), "big\n").unwrap();
        assert!(matches!(
            interface_mtu_bytes(&dev("veth0"), root.path()),
            Err(TcError::Mtu { .. })
        ));
        assert!(matches!(
            TcActuator::new("absent0", 100_000_000, 50, root.path()),
            Err(TcError::Mtu { .. })
        ));
    }
}
