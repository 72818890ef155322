//! pfsqos-profile: the measured performance of a storage device as a **device profile**.
//!
//! A profile is a TOML file (format `pfsqos-device-profile/1`, documented field by field in
//! `docs/physics.md`) that says where, when and how the device was measured, the parameters
//! of the simulator's device model derived from that measurement, and the measured points
//! themselves. This crate holds the type, its validation (every refusal names the file, the
//! field, the value and what is allowed), piecewise-linear interpolation, the derivation of
//! the model's parameters from measured points ([`fit`]), and parsers of the two kinds of
//! measurement a site has: fio's JSON output ([`fio`]) and the summary of Lustre's
//! `obdfilter-survey` ([`obdfilter`]).
//!
//! Pure: no I/O, no clocks, no threads. Reading files and running fio are the callers' job.

use serde::{Deserialize, Serialize};

pub mod fio;
pub mod fit;
pub mod obdfilter;
pub mod plan;

/// The `format` every profile carries; a later incompatible format gets a new number.
pub const FORMAT: &str = "pfsqos-device-profile/1";
/// Largest profile text accepted; a full sweep is a few hundred KiB.
pub const TEXT_LEN_MAX: usize = 4 << 20;
pub const NAME_LEN_MAX: usize = 64;
pub const TEXT_FIELD_LEN_MAX: usize = 4096;
pub const ROWS_MAX: usize = 64;
pub const MEASURED_MAX: usize = 4096;
/// 1 GiB: far above any request size a block device accepts in one command.
pub const SIZE_KIB_MAX: u64 = 1 << 20;
pub const BANDWIDTH_MIB_S_MAX: f64 = 1_000_000.0;
/// Ten seconds per request: slower than any working device.
pub const TIME_US_MAX: f64 = 10_000_000.0;
pub const CONCURRENCY_MAX: u32 = 1024;
pub const QUEUE_DEPTH_MAX: u32 = 1 << 16;
pub const STREAMS_MAX: u32 = 1 << 16;
/// Largest ratio of one request's service time to the mean a variability table may give.
pub const FACTOR_MAX: f64 = 1000.0;

/// A device profile. The model parameters (`concurrency` .. `variability`) are what the
/// simulator uses; `measured` is the evidence they were derived from (empty for a
/// datasheet profile, whose evidence is the cited document).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Always [`FORMAT`].
    pub format: String,
    /// Short name: letters, digits, `.`, `_`, `-`.
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Requests the device serves at once (command queue slots that overlap their fixed
    /// time); the data transfer is serialized across them.
    pub concurrency: u32,
    /// Extra fixed time (us) of a request that does not start where the previous request on
    /// its own object ended, for size rows that give no `random_penalty_us` of their own.
    #[serde(default)]
    pub random_penalty_us: f64,
    /// Extra fixed time (us) of a request whose direction (read or write) differs from the
    /// previous request the device started.
    #[serde(default)]
    pub direction_switch_penalty_us: f64,
    pub source: Source,
    /// Sequential reads of one stream, by request size (strictly increasing).
    pub read: Vec<SizeRow>,
    /// Sequential writes of one stream, by request size (strictly increasing).
    pub write: Vec<SizeRow>,
    /// Cost of switching between objects, judged per device: the extra fixed time of a
    /// request that continues its own object but not the request the device served before
    /// it, by the number of objects with requests at the device (strictly increasing).
    /// Empty: switching is free (the table model of earlier scenarios).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<StreamRow>,
    /// Throughput lost to a deep dispatch queue, by queue length (strictly increasing).
    /// Empty: the device is work-conserving. Only a measurement that shows a loss gives rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub congestion: Vec<CongestionRow>,
    /// Per-request service-time variability: the inverse distribution function of one
    /// request's service time over its mean (quantile 0 to 1, strictly increasing; factors
    /// non-decreasing). Normalized to mean 1 when the model is built. Empty: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variability: Vec<QuantileRow>,
    /// Per-request variability of a random request's positioning alone (its random
    /// penalty): the inverse distribution function of one random penalty over its mean, as
    /// `variability` is of a whole service time (quantile 0 to 1, strictly increasing;
    /// factors non-decreasing; normalized to mean 1). A disk's positioning varies (the
    /// rotational latency is uniform over a revolution, the seek with the distance between two
    /// random positions) while its command overhead and media transfer do not. Empty: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub random_penalty_variability: Vec<QuantileRow>,
    /// The measured points the parameters were derived from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured: Vec<Measured>,
}

/// Where, when and how a profile was obtained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub kind: SourceKind,
    /// The document or run the numbers come from (title, publisher, year; or the tool and
    /// its version).
    pub citation: String,
    /// When the measurement was made or the document published: `YYYY`, `YYYY-MM` or
    /// `YYYY-MM-DD`.
    pub date: String,
    /// How each parameter was obtained from the source.
    pub method: String,
    /// The machine measured (fio runs), if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// The directory, device or OST measured, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// Figures of a manufacturer's datasheet or manual.
    Datasheet,
    /// Derived from other profiles or datasheets by arithmetic stated in `method`.
    Derived,
    /// Measured with fio (`pfsqos calibrate`).
    Fio,
    /// Converted from Lustre's `obdfilter-survey` summary.
    ObdfilterSurvey,
    /// A table model of an earlier scenario, restated as a profile.
    Table,
}

/// One request size of one direction, sequential, one stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeRow {
    pub size_kib: u64,
    /// Data transfer rate: the serialized part of a request is `size / bandwidth`.
    pub bandwidth_mib_s: f64,
    /// Fixed time of a request (command, completion), overlapping with other requests.
    pub overhead_us: f64,
    /// Extra fixed time of a random request at this size; default: the profile's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_penalty_us: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamRow {
    pub streams: u32,
    pub switch_penalty_us: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CongestionRow {
    /// Requests in the dispatch queue: at the device plus waiting for it.
    pub queue_requests: u32,
    /// Throughput at that queue over the best throughput at any shorter queue, in (0, 1].
    pub throughput_fraction: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuantileRow {
    pub quantile: f64,
    pub factor: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    Read,
    Write,
    Mixed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    Sequential,
    Random,
}

/// One measured point of a sweep: `streams` concurrent jobs (each to its own file or
/// object) with `queue_depth` requests outstanding each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    pub op: Op,
    pub pattern: Pattern,
    /// Percentage of reads (mixed points only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_percent: Option<u32>,
    pub size_kib: u64,
    pub queue_depth: u32,
    pub streams: u32,
    /// Aggregate throughput over all streams.
    pub bandwidth_mib_s: f64,
    /// Mean completion latency of one request.
    pub latency_mean_us: f64,
    /// Completion-latency quantiles `[quantile, us]` (quantile strictly increasing in (0, 1)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_quantiles_us: Vec<[f64; 2]>,
}

/// A profile that cannot be used: the file, the field, the value and what is allowed (the
/// error of every TOML input file).
pub type ProfileError = pfsqos_tomlfile::FileError;

/// Names of the profiles shipped with pfsqos (the `profiles/` directory), usable by name.
pub const SHIPPED_NAMES: &[&str] = &["hdd-7200rpm", "raid6-hdd-ost", "ssd-sata", "ssd-nvme"];

/// The text of a shipped profile.
pub fn shipped_text(name: &str) -> Option<&'static str> {
    match name {
        "hdd-7200rpm" => Some(include_str!("../../../profiles/hdd-7200rpm.toml")),
        "raid6-hdd-ost" => Some(include_str!("../../../profiles/raid6-hdd-ost.toml")),
        "ssd-sata" => Some(include_str!("../../../profiles/ssd-sata.toml")),
        "ssd-nvme" => Some(include_str!("../../../profiles/ssd-nvme.toml")),
        _ => None,
    }
}

/// A shipped profile, parsed and validated.
pub fn shipped(name: &str) -> Option<Profile> {
    let text = shipped_text(name)?;
    let file = format!("profiles/{name}.toml");
    Some(Profile::from_toml_str(text, &file).unwrap_or_else(|e| panic!("shipped profile: {e}")))
}

impl Profile {
    /// Parses and validates profile text; `file` names it in errors.
    pub fn from_toml_str(text: &str, file: &str) -> Result<Profile, ProfileError> {
        let err = |field: String, message: String| ProfileError {
            file: file.to_string(),
            field,
            value: None,
            message,
        };
        if text.len() > TEXT_LEN_MAX {
            return Err(err(
                String::new(),
                format!(
                    "text is {} bytes long; a profile may be at most {TEXT_LEN_MAX} bytes",
                    text.len()
                ),
            ));
        }
        let profile: Profile = pfsqos_tomlfile::parse(text, file)?;
        profile
            .validate(file)
            .map_err(|e| pfsqos_tomlfile::locate(text, e))?;
        Ok(profile)
    }

    /// The profile as TOML text (what `pfsqos calibrate` writes).
    pub fn to_toml_string(&self) -> String {
        toml::to_string(self).expect("a profile is always representable in TOML")
    }

    /// Checks every range and ordering; see the field docs.
    pub fn validate(&self, file: &str) -> Result<(), ProfileError> {
        let v = Check { file };
        if self.format != FORMAT {
            return Err(v.err(
                "format",
                Some(&self.format),
                format!("unknown profile format; allowed: `{FORMAT}`"),
            ));
        }
        if self.name.is_empty()
            || self.name.len() > NAME_LEN_MAX
            || !self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            return Err(v.err(
                "name",
                Some(&self.name),
                format!("1..={NAME_LEN_MAX} characters of letters, digits, `.`, `_`, `-`"),
            ));
        }
        v.text("description", &self.description, false)?;
        v.text("source.citation", &self.source.citation, true)?;
        v.text("source.method", &self.source.method, true)?;
        v.text("source.host", &self.source.host, false)?;
        v.text("source.target", &self.source.target, false)?;
        if !is_date(&self.source.date) {
            return Err(v.err(
                "source.date",
                Some(&self.source.date),
                "a date `YYYY`, `YYYY-MM` or `YYYY-MM-DD`".into(),
            ));
        }
        if !(1..=CONCURRENCY_MAX).contains(&self.concurrency) {
            return Err(v.err(
                "concurrency",
                Some(&self.concurrency.to_string()),
                format!("requests served at once: 1..={CONCURRENCY_MAX}"),
            ));
        }
        v.num(
            "random_penalty_us",
            self.random_penalty_us,
            0.0,
            TIME_US_MAX,
        )?;
        v.num(
            "direction_switch_penalty_us",
            self.direction_switch_penalty_us,
            0.0,
            TIME_US_MAX,
        )?;
        for (table, rows) in [("read", &self.read), ("write", &self.write)] {
            v.count(table, rows.len(), 1, ROWS_MAX)?;
            let mut prev = 0;
            for (i, r) in rows.iter().enumerate() {
                let p = format!("{table}[{i}]");
                if !(1..=SIZE_KIB_MAX).contains(&r.size_kib) {
                    return Err(v.err(
                        &format!("{p}.size_kib"),
                        Some(&r.size_kib.to_string()),
                        format!("request size in KiB: 1..={SIZE_KIB_MAX}"),
                    ));
                }
                if r.size_kib <= prev {
                    return Err(v.err(
                        &format!("{p}.size_kib"),
                        Some(&r.size_kib.to_string()),
                        format!("rows must be in strictly increasing size; the row before is {prev} KiB"),
                    ));
                }
                prev = r.size_kib;
                v.pos(
                    &format!("{p}.bandwidth_mib_s"),
                    r.bandwidth_mib_s,
                    BANDWIDTH_MIB_S_MAX,
                )?;
                v.num(&format!("{p}.overhead_us"), r.overhead_us, 0.0, TIME_US_MAX)?;
                if let Some(x) = r.random_penalty_us {
                    v.num(&format!("{p}.random_penalty_us"), x, 0.0, TIME_US_MAX)?;
                }
            }
        }
        v.count("streams", self.streams.len(), 0, ROWS_MAX)?;
        let mut prev = 0;
        for (i, r) in self.streams.iter().enumerate() {
            let p = format!("streams[{i}]");
            v.key(&format!("{p}.streams"), r.streams, prev, STREAMS_MAX)?;
            prev = r.streams;
            v.num(
                &format!("{p}.switch_penalty_us"),
                r.switch_penalty_us,
                0.0,
                TIME_US_MAX,
            )?;
        }
        v.count("congestion", self.congestion.len(), 0, ROWS_MAX)?;
        let mut prev = 0;
        for (i, r) in self.congestion.iter().enumerate() {
            let p = format!("congestion[{i}]");
            v.key(
                &format!("{p}.queue_requests"),
                r.queue_requests,
                prev,
                QUEUE_DEPTH_MAX,
            )?;
            prev = r.queue_requests;
            let f = r.throughput_fraction;
            if !(f.is_finite() && f > 0.0 && f <= 1.0) {
                return Err(v.err(
                    &format!("{p}.throughput_fraction"),
                    Some(&f.to_string()),
                    "a fraction of the best throughput: in (0, 1]".into(),
                ));
            }
        }
        validate_quantile_table(&v, "variability", &self.variability)?;
        validate_quantile_table(
            &v,
            "random_penalty_variability",
            &self.random_penalty_variability,
        )?;
        v.count("measured", self.measured.len(), 0, MEASURED_MAX)?;
        for (i, m) in self.measured.iter().enumerate() {
            validate_measured(&v, &format!("measured[{i}]"), m)?;
        }
        Ok(())
    }

    /// The variability table normalized to mean 1, as `(quantile, factor)` points; empty
    /// without one.
    pub fn variability_normalized(&self) -> Vec<(f64, f64)> {
        normalized(&self.variability)
    }

    /// The random penalty's variability table normalized to mean 1, as `(quantile, factor)`
    /// points; empty without one.
    pub fn random_penalty_variability_normalized(&self) -> Vec<(f64, f64)> {
        normalized(&self.random_penalty_variability)
    }
}

/// A (validated) quantile table normalized to mean 1 as `(quantile, factor)` points; empty
/// for an empty table. The mean of a piecewise-linear inverse distribution function is the
/// trapezoid rule over its rows.
fn normalized(rows: &[QuantileRow]) -> Vec<(f64, f64)> {
    if rows.is_empty() {
        return Vec::new();
    }
    let mean: f64 = rows
        .windows(2)
        .map(|w| (w[1].quantile - w[0].quantile) * (w[0].factor + w[1].factor) / 2.0)
        .sum();
    assert!(mean > 0.0, "validated factors are positive");
    rows.iter().map(|r| (r.quantile, r.factor / mean)).collect()
}

/// A table of quantiles (`variability`, `random_penalty_variability`): none, or 2..=64 rows
/// from quantile 0 to 1, quantiles strictly increasing, factors positive and never
/// decreasing (an inverse distribution function).
fn validate_quantile_table(
    v: &Check,
    name: &str,
    rows: &[QuantileRow],
) -> Result<(), ProfileError> {
    if rows.is_empty() {
        return Ok(());
    }
    v.count(name, rows.len(), 2, ROWS_MAX)?;
    for (i, r) in rows.iter().enumerate() {
        let p = format!("{name}[{i}]");
        v.num(&format!("{p}.quantile"), r.quantile, 0.0, 1.0)?;
        v.pos(&format!("{p}.factor"), r.factor, FACTOR_MAX)?;
        if i > 0 {
            let before = &rows[i - 1];
            if r.quantile <= before.quantile {
                return Err(v.err(
                    &format!("{p}.quantile"),
                    Some(&r.quantile.to_string()),
                    format!(
                        "quantiles must be strictly increasing; the row before is {}",
                        before.quantile
                    ),
                ));
            }
            if r.factor < before.factor {
                return Err(v.err(
                    &format!("{p}.factor"),
                    Some(&r.factor.to_string()),
                    format!(
                        "an inverse distribution function never decreases; the row before is {}",
                        before.factor
                    ),
                ));
            }
        }
    }
    let (first, last) = (&rows[0], &rows[rows.len() - 1]);
    if first.quantile != 0.0 || last.quantile != 1.0 {
        return Err(v.err(
            name,
            Some(&format!("{} .. {}", first.quantile, last.quantile)),
            "the table must cover the whole distribution: first quantile 0, last 1".into(),
        ));
    }
    Ok(())
}

fn validate_measured(v: &Check, p: &str, m: &Measured) -> Result<(), ProfileError> {
    if !(1..=SIZE_KIB_MAX).contains(&m.size_kib) {
        return Err(v.err(
            &format!("{p}.size_kib"),
            Some(&m.size_kib.to_string()),
            format!("request size in KiB: 1..={SIZE_KIB_MAX}"),
        ));
    }
    v.key(
        &format!("{p}.queue_depth"),
        m.queue_depth,
        0,
        QUEUE_DEPTH_MAX,
    )?;
    v.key(&format!("{p}.streams"), m.streams, 0, STREAMS_MAX)?;
    match (m.op, m.read_percent) {
        (Op::Mixed, Some(r)) if r <= 100 => {}
        (Op::Mixed, r) => {
            return Err(v.err(
                &format!("{p}.read_percent"),
                Some(&format!("{r:?}")),
                "a mixed point gives its percentage of reads: 0..=100".into(),
            ))
        }
        (_, Some(r)) => {
            return Err(v.err(
                &format!("{p}.read_percent"),
                Some(&r.to_string()),
                "only a mixed point has a read percentage".into(),
            ))
        }
        (_, None) => {}
    }
    if !(m.bandwidth_mib_s.is_finite() && m.bandwidth_mib_s > 0.0) {
        return Err(v.err(
            &format!("{p}.bandwidth_mib_s"),
            Some(&m.bandwidth_mib_s.to_string()),
            "a measured point moved no data: the sweep did not complete (allowed: > 0)".into(),
        ));
    }
    v.pos(
        &format!("{p}.bandwidth_mib_s"),
        m.bandwidth_mib_s,
        BANDWIDTH_MIB_S_MAX,
    )?;
    v.pos(
        &format!("{p}.latency_mean_us"),
        m.latency_mean_us,
        TIME_US_MAX,
    )?;
    v.count(
        &format!("{p}.latency_quantiles_us"),
        m.latency_quantiles_us.len(),
        0,
        ROWS_MAX,
    )?;
    let mut prev = (0.0, 0.0);
    for (j, [q, us]) in m.latency_quantiles_us.iter().copied().enumerate() {
        let f = format!("{p}.latency_quantiles_us[{j}]");
        if !(q.is_finite() && q > prev.0 && q < 1.0) {
            return Err(v.err(
                &f,
                Some(&q.to_string()),
                format!(
                    "quantiles strictly increasing in (0, 1); the one before is {}",
                    prev.0
                ),
            ));
        }
        v.pos(&f, us, TIME_US_MAX)?;
        if us < prev.1 {
            return Err(v.err(
                &f,
                Some(&us.to_string()),
                format!(
                    "latency quantiles never decrease; the one before is {} us",
                    prev.1
                ),
            ));
        }
        prev = (q, us);
    }
    Ok(())
}

fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let digits = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_digit());
    match parts.as_slice() {
        [y] => digits(y, 4),
        [y, m] => digits(y, 4) && digits(m, 2) && ("01"..="12").contains(m),
        [y, m, d] => {
            digits(y, 4)
                && digits(m, 2)
                && digits(d, 2)
                && ("01"..="12").contains(m)
                && ("01"..="31").contains(d)
        }
        _ => false,
    }
}

struct Check<'a> {
    file: &'a str,
}

impl Check<'_> {
    fn err(&self, field: &str, value: Option<&str>, message: String) -> ProfileError {
        ProfileError {
            file: self.file.to_string(),
            field: field.to_string(),
            value: value.map(str::to_string),
            message,
        }
    }

    fn num(&self, field: &str, x: f64, lo: f64, hi: f64) -> Result<(), ProfileError> {
        if x.is_finite() && (lo..=hi).contains(&x) {
            Ok(())
        } else {
            Err(self.err(
                field,
                Some(&x.to_string()),
                format!("a finite number in [{lo}, {hi}]"),
            ))
        }
    }

    fn pos(&self, field: &str, x: f64, hi: f64) -> Result<(), ProfileError> {
        if x.is_finite() && x > 0.0 && x <= hi {
            Ok(())
        } else {
            Err(self.err(
                field,
                Some(&x.to_string()),
                format!("a finite number in (0, {hi}]"),
            ))
        }
    }

    /// A strictly increasing integer key in `prev + 1 ..= hi` (and at least 1).
    fn key(&self, field: &str, x: u32, prev: u32, hi: u32) -> Result<(), ProfileError> {
        if x == 0 || x > hi {
            return Err(self.err(field, Some(&x.to_string()), format!("1..={hi}")));
        }
        if x <= prev {
            return Err(self.err(
                field,
                Some(&x.to_string()),
                format!("rows must be strictly increasing; the row before is {prev}"),
            ));
        }
        Ok(())
    }

    fn count(&self, field: &str, n: usize, lo: usize, hi: usize) -> Result<(), ProfileError> {
        if (lo..=hi).contains(&n) {
            Ok(())
        } else {
            Err(self.err(
                field,
                Some(&n.to_string()),
                format!("{n} rows; {lo}..={hi} allowed"),
            ))
        }
    }

    fn text(&self, field: &str, s: &str, required: bool) -> Result<(), ProfileError> {
        if required && s.trim().is_empty() {
            return Err(self.err(
                field,
                Some(s),
                "required: say where the numbers come from".into(),
            ));
        }
        if s.len() > TEXT_FIELD_LEN_MAX || s.chars().any(|c| c.is_control() && c != '\n') {
            return Err(self.err(
                field,
                None,
                format!("at most {TEXT_FIELD_LEN_MAX} bytes, no control characters but newlines"),
            ));
        }
        Ok(())
    }
}

/// `y(x)` of a piecewise-linear function through `points` (ascending in `x`), held flat
/// outside them.
pub fn interpolate(points: &[(f64, f64)], x: f64) -> f64 {
    assert!(!points.is_empty(), "a curve has points");
    if x <= points[0].0 {
        return points[0].1;
    }
    for w in points.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        if x <= x1 {
            if x == x1 || x1 == x0 {
                return y1;
            }
            return y0 + (x - x0) / (x1 - x0) * (y1 - y0);
        }
    }
    points[points.len() - 1].1
}

#[cfg(test)]
mod tests;
