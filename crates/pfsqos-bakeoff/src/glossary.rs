//! What a design name means, in one line, and the paper it comes from: the report's "designs
//! in this run" list and the README's table say the same thing.
//!
//! A design is a policy spec (`name:option=value:...`) and an optional placement; the line is
//! looked up by the spec's name (before the first `:`), then the placement is added.

/// A paper, cited by title, venue and year.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paper {
    pub title: &'static str,
    pub venue: &'static str,
    pub year: u16,
}

impl Paper {
    pub fn citation(&self) -> String {
        format!("{} ({}, {})", self.title, self.venue, self.year)
    }
}

pub const ADAPTBF: Paper = Paper {
    title: "AdapTBF: Decentralized Bandwidth Control via Adaptive Token Borrowing for HPC Storage",
    venue: "Rashid and Dai, preprint",
    year: 2025,
};
pub const GIFT: Paper = Paper {
    title: "GIFT: A Coupon Based Throttle-and-Reward Mechanism for Fair and Efficient I/O \
            Bandwidth Management on Parallel Storage Systems",
    venue: "USENIX FAST",
    year: 2020,
};
pub const VPFS: Paper = Paper {
    title: "vPFS: Bandwidth Virtualization of Parallel Storage Systems",
    venue: "IEEE MSST",
    year: 2012,
};
pub const PI: Paper = Paper {
    title: "Mitigating Shared Storage Congestion Using Control Theory",
    venue: "IEEE/ACM UCC",
    year: 2025,
};
pub const THEMISIO: Paper = Paper {
    title: "Fine-grained Policy-driven I/O Sharing for Burst Buffers",
    venue: "ACM/IEEE SC",
    year: 2023,
};
pub const IEZ: Paper = Paper {
    title: "iez: Resource Contention Aware Load Balancing for Large-Scale Parallel File Systems",
    venue: "IEEE IPDPS",
    year: 2019,
};

/// One policy: its spec name, what it does in one line, and its paper (none for baselines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: &'static str,
    pub line: &'static str,
    pub paper: Option<Paper>,
}

/// The policies of the built-in suite and the baselines, by spec name.
pub const POLICIES: &[Entry] = &[
    Entry {
        name: "nobw",
        line: "no bandwidth control: first come, first served at every server (Lustre's default)",
        paper: None,
    },
    Entry {
        name: "static",
        line: "a fixed token-bucket (TBF) limit per job: its node share of each server, kept \
               even when others are idle",
        paper: None,
    },
    Entry {
        name: "adaptbf",
        line: "TBF limits by node share that idle jobs lend to busy ones, recomputed every \
               100 ms on each server alone",
        paper: Some(ADAPTBF),
    },
    Entry {
        name: "gift",
        line: "caps an application at the rate of its slowest server (a barrier wastes the \
               rest) and repays it later with coupons",
        paper: Some(GIFT),
    },
    Entry {
        name: "vpfs",
        line: "distributed start-time fair queueing (DSFQ): each job's share of the whole file \
               system follows its weight",
        paper: Some(VPFS),
    },
    Entry {
        name: "pi",
        line: "a PI controller holds each server's device queue at a target by setting one \
               bandwidth limit for every client",
        paper: Some(PI),
    },
    Entry {
        name: "aimd",
        line: "the PI design's sensor and actuator with additive-increase / multiplicative-\
               decrease instead of PI gains (Linux io.latency style)",
        paper: None,
    },
    Entry {
        name: "themis",
        line: "ThemisIO's lottery: each server draws the next job to serve with its node count \
               as its tickets (size-fair), work-conserving",
        paper: Some(THEMISIO),
    },
];

/// The iez placement's line, added to a design that places with it.
pub const IEZ_LINE: &str = "files placed by iez (predicted sizes, min-cost flow over OST fill \
                            and load) instead of Lustre's allocator";

/// The entry of a policy spec (`adaptbf:rpc_cost=40K` is `adaptbf`'s).
pub fn policy_entry(spec: &str) -> Option<&'static Entry> {
    let name = spec.split(':').next().unwrap_or(spec);
    POLICIES.iter().find(|e| e.name == name)
}

/// One line for a design: its policy's line (with its options when it has any), plus the
/// placement's.
pub fn describe(spec: &str, placement: Option<&str>) -> String {
    let mut line = match policy_entry(spec) {
        Some(e) => e.line.to_string(),
        None => format!("the policy `{spec}`"),
    };
    if let Some((_, options)) = spec.split_once(':') {
        line.push_str(&format!(" (options {})", options.replace(':', ", ")));
    }
    match placement {
        Some("iez") => {
            if spec.starts_with("nobw") {
                return format!("{IEZ_LINE}; no bandwidth control");
            }
            line = format!("{IEZ_LINE}; then {line}");
        }
        Some(p) => line.push_str(&format!("; placement `{p}`")),
        None => {}
    }
    line
}

/// The paper of a design (its policy's, else its placement's).
pub fn paper(spec: &str, placement: Option<&str>) -> Option<Paper> {
    policy_entry(spec)
        .and_then(|e| e.paper)
        .or_else(|| (placement == Some("iez")).then_some(IEZ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_design_is_described() {
        let suite = crate::builtin::builtin_suite().unwrap();
        for d in &suite.designs {
            let line = describe(&d.policy, d.placement.as_deref());
            assert!(!line.starts_with("the policy"), "{}: {line}", d.name);
        }
        assert!(describe("adaptbf:rpc_cost=40K", None).ends_with("(options rpc_cost=40K)"));
        assert!(describe("nobw", Some("iez")).starts_with("files placed by iez"));
        assert_eq!(paper("nobw", Some("iez")), Some(IEZ));
        assert_eq!(paper("gift:period_ms=1000", Some("iez")), Some(GIFT));
        assert_eq!(paper("static", None), None);
    }
}
