//! A bakeoff suite: `suite.toml` plus the scenario files it names (format in
//! `docs/bakeoff.md`).
//!
//! Everything is checked before anything runs: unknown keys are refused, names that become
//! directory names are safe path components, every workload loads as a `pfsqos_sim::Scenario`,
//! every design's policy parses (`PolicyChoice::parse`, once) and every placement is a row of
//! `pfsqos_core::place::PLACER_ROWS`.

use std::fmt;
use std::path::Path;

use pfsqos_sim::{PolicyChoice, Scenario};
use serde::Deserialize;

/// The suite's description file inside a suite directory.
pub const SUITE_FILE: &str = "suite.toml";
/// Largest `suite.toml` read.
pub const SUITE_FILE_LEN_MAX: u64 = 1 << 20;
/// Longest design name or workload file name (they become path components).
pub const NAME_LEN_MAX: usize = 64;
/// Most designs, workloads and seeds of one suite: bounds the plan.
pub const DESIGNS_MAX: usize = 64;
pub const WORKLOADS_MAX: usize = 64;
pub const SEEDS_MAX: u32 = 100;
/// Longest description.
pub const DESCRIPTION_LEN_MAX: usize = 16 * 1024;

/// A suite that cannot be used: the file, the field and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteError {
    pub message: String,
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SuiteError {}

fn err(message: impl Into<String>) -> SuiteError {
    SuiteError {
        message: message.into(),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteToml {
    name: String,
    #[serde(default)]
    description: String,
    seeds: u32,
    workloads: Vec<String>,
    demo: Option<DemoToml>,
    #[serde(rename = "design")]
    designs: Vec<DesignToml>,
    #[serde(rename = "expect", default)]
    expectations: Vec<ExpectToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectToml {
    workload: String,
    claim: String,
    design: String,
    metric: String,
    #[serde(default)]
    beats: Vec<String>,
}

/// Longest claim of an expectation.
pub const CLAIM_LEN_MAX: usize = 512;
/// Most expectations of one suite.
pub const EXPECTATIONS_MAX: usize = 256;

/// A workload's stated expectation, checked against the run (`answer::judge`): `design` is
/// better than each of `beats` on `metric` (outside a tie), or, with `beats` empty, the best
/// or tied for best.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Expectation {
    /// The workload's file name.
    pub workload: String,
    /// The claim in words, as the suite states it.
    pub claim: String,
    pub design: String,
    /// A metric key of `metrics::METRICS`.
    pub metric: String,
    pub beats: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DemoToml {
    workloads: Vec<String>,
    designs: Vec<String>,
    seeds: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DesignToml {
    name: String,
    policy: String,
    placement: Option<String>,
}

/// One design: a policy spec and an optional placement override.
#[derive(Clone, Debug, PartialEq)]
pub struct Design {
    /// A safe path component (`[A-Za-z0-9._+-]`, not starting with `.`).
    pub name: String,
    /// The policy spec as the suite writes it.
    pub policy: String,
    /// The spec, parsed once when the suite is loaded; the runs use it as it is.
    pub choice: PolicyChoice,
    /// Overrides the scenario's `cluster.placement`; `None`: the scenario's own.
    pub placement: Option<String>,
}

/// One workload: a scenario file of the suite.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// File name inside the suite directory (`x.toml`).
    pub file: String,
    /// The file name without `.toml`: the workload's directory name in the output.
    pub stem: String,
    /// The file's text: part of every run key, so an edited scenario is rerun.
    pub text: String,
    pub scenario: Scenario,
}

/// The `[demo]` subset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DemoSubset {
    pub workloads: Vec<String>,
    pub designs: Vec<String>,
    pub seeds: u32,
}

/// A loaded, validated suite.
#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    pub name: String,
    pub description: String,
    /// Default number of seeds (seeds are `1..=seeds`).
    pub seeds: u32,
    pub workloads: Vec<Workload>,
    pub designs: Vec<Design>,
    pub demo: Option<DemoSubset>,
    /// The workloads' stated expectations, in file order.
    pub expectations: Vec<Expectation>,
}

/// Whether `name` can be one directory name everywhere: `[A-Za-z0-9._+-]`, 1 to
/// [`NAME_LEN_MAX`] bytes, not starting with `.` (no `..`, no hidden files), no `:` or `/`.
pub fn is_safe_component(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= NAME_LEN_MAX
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'))
}

fn check_component(file: &str, field: &str, name: &str) -> Result<(), SuiteError> {
    if is_safe_component(name) {
        Ok(())
    } else {
        Err(err(format!(
            "{file}: field `{field}`: value `{}`: must be 1 to {NAME_LEN_MAX} characters of \
             A-Z a-z 0-9 . _ + - (it names a directory), not starting with `.`",
            name.escape_debug()
        )))
    }
}

fn check_seeds(file: &str, field: &str, seeds: u32) -> Result<(), SuiteError> {
    if (1..=SEEDS_MAX).contains(&seeds) {
        Ok(())
    } else {
        Err(err(format!(
            "{file}: field `{field}`: value `{seeds}`: must be 1 to {SEEDS_MAX}"
        )))
    }
}

fn placement_names() -> Vec<&'static str> {
    pfsqos_core::place::PLACER_ROWS
        .iter()
        .map(|r| r.name)
        .collect()
}

impl Suite {
    /// Loads `dir/suite.toml` and the scenario files it names from `dir`.
    pub fn load(dir: &Path) -> Result<Suite, SuiteError> {
        let suite_path = dir.join(SUITE_FILE);
        let read = |path: &Path| -> Result<String, SuiteError> {
            let len = std::fs::metadata(path)
                .map_err(|e| err(format!("{}: cannot read: {e}", path.display())))?
                .len();
            let limit = pfsqos_sim::scenario::FILE_LEN_MAX.max(SUITE_FILE_LEN_MAX);
            if len > limit {
                return Err(err(format!(
                    "{}: file is {len} bytes long; at most {limit} allowed",
                    path.display()
                )));
            }
            std::fs::read_to_string(path)
                .map_err(|e| err(format!("{}: cannot read: {e}", path.display())))
        };
        let text = read(&suite_path)?;
        let mut read_workload = |file: &str| read(&dir.join(file));
        Suite::parse(
            &text,
            &suite_path.display().to_string(),
            &dir.display().to_string(),
            &mut read_workload,
        )
    }

    /// Parses `suite.toml` text (`file` names it in errors) and reads each workload through
    /// `read` (given the file name, which is checked to be a safe component first);
    /// `origin` prefixes workload file names in scenario errors.
    pub fn parse(
        text: &str,
        file: &str,
        origin: &str,
        read: &mut dyn FnMut(&str) -> Result<String, SuiteError>,
    ) -> Result<Suite, SuiteError> {
        if text.len() as u64 > SUITE_FILE_LEN_MAX {
            return Err(err(format!(
                "{file}: {} bytes long; at most {SUITE_FILE_LEN_MAX} allowed",
                text.len()
            )));
        }
        let raw: SuiteToml = toml::from_str(text).map_err(|e| err(format!("{file}: {e}")))?;
        if raw.name.is_empty() || raw.name.len() > 128 || raw.name.chars().any(char::is_control) {
            return Err(err(format!(
                "{file}: field `name`: must be 1 to 128 bytes without control characters"
            )));
        }
        if raw.description.len() > DESCRIPTION_LEN_MAX {
            return Err(err(format!(
                "{file}: field `description`: at most {DESCRIPTION_LEN_MAX} bytes"
            )));
        }
        check_seeds(file, "seeds", raw.seeds)?;

        if raw.designs.is_empty() || raw.designs.len() > DESIGNS_MAX {
            return Err(err(format!(
                "{file}: `[[design]]`: a suite needs 1 to {DESIGNS_MAX} designs, got {}",
                raw.designs.len()
            )));
        }
        let mut designs: Vec<Design> = Vec::with_capacity(raw.designs.len());
        for (i, d) in raw.designs.into_iter().enumerate() {
            check_component(file, &format!("design[{i}].name"), &d.name)?;
            if designs.iter().any(|o| o.name == d.name) {
                return Err(err(format!(
                    "{file}: field `design[{i}].name`: design `{}` is defined twice",
                    d.name
                )));
            }
            let choice = PolicyChoice::parse(&d.policy).map_err(|m| {
                err(format!(
                    "{file}: field `design[{i}].policy`: value `{}`: {m}",
                    d.policy.escape_debug()
                ))
            })?;
            if let Some(p) = &d.placement {
                let names = placement_names();
                if !names.contains(&p.as_str()) {
                    return Err(err(format!(
                        "{file}: field `design[{i}].placement`: value `{}`: unknown placement \
                         (allowed: {})",
                        p.escape_debug(),
                        names.join(", ")
                    )));
                }
            }
            designs.push(Design {
                name: d.name,
                policy: d.policy,
                choice,
                placement: d.placement,
            });
        }

        if raw.workloads.is_empty() || raw.workloads.len() > WORKLOADS_MAX {
            return Err(err(format!(
                "{file}: field `workloads`: a suite needs 1 to {WORKLOADS_MAX} workloads, got {}",
                raw.workloads.len()
            )));
        }
        let mut workloads: Vec<Workload> = Vec::with_capacity(raw.workloads.len());
        for (i, w) in raw.workloads.iter().enumerate() {
            let field = format!("workloads[{i}]");
            check_component(file, &field, w)?;
            let Some(stem) = w.strip_suffix(".toml").filter(|s| !s.is_empty()) else {
                return Err(err(format!(
                    "{file}: field `{field}`: value `{w}`: a workload is a scenario file named \
                     `<name>.toml`"
                )));
            };
            if workloads.iter().any(|o| o.file == *w) {
                return Err(err(format!(
                    "{file}: field `{field}`: workload `{w}` is listed twice"
                )));
            }
            let text = read(w)?;
            let scenario = Scenario::from_toml_str(&text, &format!("{origin}/{w}"))
                .map_err(|e| err(e.to_string()))?;
            workloads.push(Workload {
                file: w.clone(),
                stem: stem.to_string(),
                text,
                scenario,
            });
        }

        let demo = match raw.demo {
            None => None,
            Some(d) => {
                check_seeds(file, "demo.seeds", d.seeds)?;
                for (i, w) in d.workloads.iter().enumerate() {
                    if !workloads.iter().any(|o| o.file == *w) {
                        return Err(err(format!(
                            "{file}: field `demo.workloads[{i}]`: value `{}`: not one of the \
                             suite's workloads",
                            w.escape_debug()
                        )));
                    }
                }
                for (i, n) in d.designs.iter().enumerate() {
                    if !designs.iter().any(|o| o.name == *n) {
                        return Err(err(format!(
                            "{file}: field `demo.designs[{i}]`: value `{}`: not one of the \
                             suite's designs",
                            n.escape_debug()
                        )));
                    }
                }
                if d.workloads.is_empty() || d.designs.is_empty() {
                    return Err(err(format!(
                        "{file}: `[demo]` needs at least one workload and one design"
                    )));
                }
                Some(DemoSubset {
                    workloads: d.workloads,
                    designs: d.designs,
                    seeds: d.seeds,
                })
            }
        };

        if raw.expectations.len() > EXPECTATIONS_MAX {
            return Err(err(format!(
                "{file}: `[[expect]]`: at most {EXPECTATIONS_MAX} expectations, got {}",
                raw.expectations.len()
            )));
        }
        let mut expectations = Vec::with_capacity(raw.expectations.len());
        for (i, e) in raw.expectations.into_iter().enumerate() {
            let at = |field: &str| format!("{file}: field `expect[{i}].{field}`");
            if !workloads.iter().any(|w| w.file == e.workload) {
                return Err(err(format!(
                    "{}: value `{}`: not one of the suite's workloads",
                    at("workload"),
                    e.workload.escape_debug()
                )));
            }
            for (field, name) in
                std::iter::once(("design", &e.design)).chain(e.beats.iter().map(|b| ("beats", b)))
            {
                if !designs.iter().any(|d| d.name == *name) {
                    return Err(err(format!(
                        "{}: value `{}`: not one of the suite's designs{}",
                        at(field),
                        name.escape_debug(),
                        crate::suggest::did_you_mean(name, designs.iter().map(|d| d.name.as_str()))
                    )));
                }
            }
            if !crate::metrics::METRICS.iter().any(|m| m.key == e.metric) {
                return Err(err(format!(
                    "{}: value `{}`: not a metric{}",
                    at("metric"),
                    e.metric.escape_debug(),
                    crate::suggest::did_you_mean(
                        &e.metric,
                        crate::metrics::METRICS.iter().map(|m| m.key)
                    )
                )));
            }
            if e.claim.is_empty()
                || e.claim.len() > CLAIM_LEN_MAX
                || e.claim.chars().any(char::is_control)
            {
                return Err(err(format!(
                    "{}: must be 1 to {CLAIM_LEN_MAX} bytes without control characters",
                    at("claim")
                )));
            }
            expectations.push(Expectation {
                workload: e.workload,
                claim: e.claim,
                design: e.design,
                metric: e.metric,
                beats: e.beats,
            });
        }

        Ok(Suite {
            name: raw.name,
            description: raw.description,
            seeds: raw.seeds,
            workloads,
            designs,
            demo,
            expectations,
        })
    }

    /// The designs named in `names`, in suite order; an unknown name is an error listing the
    /// allowed ones.
    pub fn select_designs(&self, names: &[String]) -> Result<Vec<Design>, SuiteError> {
        for n in names {
            if !self.designs.iter().any(|d| d.name == *n) {
                let allowed: Vec<&str> = self.designs.iter().map(|d| d.name.as_str()).collect();
                return Err(err(format!(
                    "unknown design `{}`{} (allowed: {})",
                    n.escape_debug(),
                    crate::suggest::did_you_mean(n, allowed.iter().copied()),
                    allowed.join(", ")
                )));
            }
        }
        Ok(self
            .designs
            .iter()
            .filter(|d| names.contains(&d.name))
            .cloned()
            .collect())
    }

    /// The `[demo]` subset as a suite of its own (its workloads and designs, in suite order,
    /// and its seed count); `None` without a `[demo]` section.
    pub fn demo_suite(&self) -> Option<Suite> {
        let demo = self.demo.as_ref()?;
        Some(Suite {
            name: format!("{} (demo subset)", self.name),
            description: self.description.clone(),
            seeds: demo.seeds,
            workloads: self
                .workloads
                .iter()
                .filter(|w| demo.workloads.contains(&w.file))
                .cloned()
                .collect(),
            designs: self
                .designs
                .iter()
                .filter(|d| demo.designs.contains(&d.name))
                .cloned()
                .collect(),
            demo: None,
            // Only what the subset can judge: its workloads and designs.
            expectations: self
                .expectations
                .iter()
                .filter(|e| {
                    demo.workloads.contains(&e.workload)
                        && demo.designs.contains(&e.design)
                        && e.beats.iter().all(|b| demo.designs.contains(b))
                })
                .cloned()
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = r#"
name = "tiny"
[simulation]
duration_s = 1.0
[[oss]]
name = "oss0"
osts = 1
[[job]]
id = "a"
nodes = 1
processes = [{ rw = "write", bs = "1M", size = "4M" }]
"#;

    fn parse(text: &str) -> Result<Suite, SuiteError> {
        Suite::parse(text, "suite.toml", "dir", &mut |_| Ok(SCENARIO.to_string()))
    }

    const GOOD: &str = r#"
name = "t"
seeds = 2
workloads = ["a.toml"]
[demo]
workloads = ["a.toml"]
designs = ["nobw"]
seeds = 1
[[design]]
name = "nobw"
policy = "nobw"
[[design]]
name = "iez+adaptbf"
policy = "adaptbf"
placement = "iez"
"#;

    #[test]
    fn a_good_suite_loads() {
        let s = parse(GOOD).unwrap();
        assert_eq!(s.designs.len(), 2);
        assert_eq!(s.workloads[0].stem, "a");
        assert_eq!(s.designs[1].placement.as_deref(), Some("iez"));
        let demo = s.demo_suite().unwrap();
        assert_eq!(demo.designs.len(), 1);
        assert_eq!(demo.seeds, 1);
    }

    #[test]
    fn unknown_keys_are_refused() {
        let e = parse(&GOOD.replace("seeds = 2", "seeds = 2\ncolour = 1")).unwrap_err();
        assert!(e.message.contains("unknown field `colour`"), "{e}");
        let e =
            parse(&GOOD.replace("policy = \"nobw\"", "policy = \"nobw\"\nspeed = 1")).unwrap_err();
        assert!(e.message.contains("unknown field `speed`"), "{e}");
    }

    #[test]
    fn design_names_must_be_safe_components() {
        for bad in ["a:b", "a/b", "..", ".x", "", "a b"] {
            let e = parse(&GOOD.replace("name = \"iez+adaptbf\"", &format!("name = {bad:?}")))
                .unwrap_err();
            assert!(
                e.message.contains("design[1].name") && e.message.contains("names a directory"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn unknown_policies_and_placements_are_named() {
        let e = parse(&GOOD.replace("policy = \"adaptbf\"", "policy = \"warp\"")).unwrap_err();
        assert!(
            e.message.contains("design[1].policy") && e.message.contains("warp"),
            "{e}"
        );
        let e = parse(&GOOD.replace("placement = \"iez\"", "placement = \"random\"")).unwrap_err();
        assert!(
            e.message.contains("design[1].placement") && e.message.contains("roundrobin"),
            "{e}"
        );
    }

    #[test]
    fn workload_and_demo_references_are_checked() {
        let e = parse(&GOOD.replace(
            "workloads = [\"a.toml\"]\n[demo]",
            "workloads = [\"../a.toml\"]\n[demo]",
        ))
        .unwrap_err();
        assert!(e.message.contains("workloads[0]"), "{e}");
        let e = parse(&GOOD.replace("designs = [\"nobw\"]", "designs = [\"gift\"]")).unwrap_err();
        assert!(e.message.contains("demo.designs[0]"), "{e}");
        let e =
            Suite::parse(GOOD, "suite.toml", "dir", &mut |_| Ok("name = 1".into())).unwrap_err();
        assert!(e.message.contains("dir/a.toml"), "{e}");
    }

    #[test]
    fn designs_are_selected_by_name() {
        let s = parse(GOOD).unwrap();
        let d = s.select_designs(&["iez+adaptbf".to_string()]).unwrap();
        assert_eq!(d[0].name, "iez+adaptbf");
        let e = s.select_designs(&["gift".to_string()]).unwrap_err();
        assert!(e.message.contains("nobw, iez+adaptbf"), "{e}");
    }
}
