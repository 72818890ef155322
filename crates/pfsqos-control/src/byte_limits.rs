//! Administrator limits in bytes per second (what LU-20184 and LU-20116 ask Lustre for): who a
//! limit applies to, each job's share of a user's or group's limit, when a job counts as held
//! at its limit, and how a file-system-wide limit is split over the OSSs. Policy, in one place:
//! the Lustre agent applies its per-OSS limits with it, the coordinator its file-system-wide
//! ones. Pure: rates in, shares out. The bytes-to-RPCs conversion of a share is
//! [`super::rpc_size::RpcSizeEstimate`]'s.

use std::collections::BTreeMap;

use crate::model::JobId;

/// Who a limit applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LimitTarget {
    Job(JobId),
    User(u32),
    Group(u32),
}

impl std::fmt::Display for LimitTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitTarget::Job(j) => write!(f, "job {}", j.as_str().escape_debug()),
            LimitTarget::User(u) => write!(f, "user {u}"),
            LimitTarget::Group(g) => write!(f, "group {g}"),
        }
    }
}

/// Where a user's uid or a group's gid stands in a job id: the `.`-separated field of
/// `jobid_name` (Lustre's default `%e.%u`), counted from the end, because `%e` (the
/// executable name) may itself hold dots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobIdLayout {
    /// Field index from the end (0: last) holding `%u`.
    pub uid_from_end: Option<usize>,
    pub gid_from_end: Option<usize>,
}

impl JobIdLayout {
    pub fn parse(text: &str) -> Result<JobIdLayout, String> {
        if text.is_empty() || text.len() > 64 {
            return Err("job_id_layout must be 1..=64 characters".to_string());
        }
        let fields: Vec<&str> = text.split('.').collect();
        let n = fields.len();
        let find = |code: &str| -> Result<Option<usize>, String> {
            let hits: Vec<usize> = (0..n).filter(|&i| fields[i] == code).collect();
            match hits.as_slice() {
                [] => Ok(None),
                [i] => Ok(Some(n - 1 - i)),
                _ => Err(format!("job_id_layout names {code} twice")),
            }
        };
        Ok(JobIdLayout {
            uid_from_end: find("%u")?,
            gid_from_end: find("%g")?,
        })
    }

    fn field(job: &JobId, from_end: Option<usize>) -> Option<u32> {
        let from_end = from_end?;
        let s = job.as_str();
        let field = s.rsplit('.').nth(from_end)?;
        if field.is_empty() || field.len() > 10 || !field.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        field.parse().ok()
    }

    pub fn uid(&self, job: &JobId) -> Option<u32> {
        Self::field(job, self.uid_from_end)
    }

    pub fn gid(&self, job: &JobId) -> Option<u32> {
        Self::field(job, self.gid_from_end)
    }
}

/// Fraction of its limit a job must move to count as held at it.
pub const HELD_FRACTION: f64 = 0.9;

/// Whether a job moving `observed_bytes_per_s` is held at `limit_bytes_per_s`.
pub fn is_held(observed_bytes_per_s: f64, limit_bytes_per_s: u64) -> bool {
    observed_bytes_per_s >= HELD_FRACTION * limit_bytes_per_s as f64
}

/// Share of the mean per-OSS traffic every OSS gets on top of its own in
/// [`split_over_osss`], so that an OSS where the job moved nothing keeps room for it.
pub const LIMIT_FLOOR_FRACTION: f64 = 0.1;

/// The administrator limit of each job in bytes/s: a job's own, or its share of its user's or
/// group's (shared equally by the members `active` says moved data, or by all members of
/// `jobs` when none did); the tightest when a job falls under several. A job's own limit
/// applies whether or not `jobs` lists it.
pub fn limit_shares_bytes_per_s(
    limits: &[(LimitTarget, u64)],
    layout: JobIdLayout,
    jobs: impl IntoIterator<Item = JobId>,
    active: impl Fn(&JobId) -> bool,
) -> BTreeMap<JobId, u64> {
    let mut out: BTreeMap<JobId, u64> = BTreeMap::new();
    if limits.is_empty() {
        return out;
    }
    let jobs: Vec<JobId> = jobs.into_iter().collect();
    for &(target, bytes_per_s) in limits {
        let members: Vec<JobId> = match target {
            LimitTarget::Job(j) => vec![j],
            LimitTarget::User(u) => jobs
                .iter()
                .copied()
                .filter(|j| layout.uid(j) == Some(u))
                .collect(),
            LimitTarget::Group(g) => jobs
                .iter()
                .copied()
                .filter(|j| layout.gid(j) == Some(g))
                .collect(),
        };
        let moving: Vec<JobId> = members.iter().copied().filter(|j| active(j)).collect();
        let sharing = if moving.is_empty() { &members } else { &moving };
        if sharing.is_empty() {
            continue;
        }
        let share = (bytes_per_s / sharing.len() as u64).max(1);
        for j in sharing {
            let e = out.entry(*j).or_insert(share);
            *e = (*e).min(share);
        }
    }
    out
}

/// A user's or group's limit as a TBF `jobid` pattern (libcfs `cfs_match_wildcard`, which the
/// OSS applies to a job's first RPC): `*.<id>`, the job ids whose last `.`-separated field is
/// the uid or gid. Exact only when the layout puts that field last (`%e.%u`, Lustre's default
/// `jobid_name`): a `*` also matches dots, so a field counted from the end at 1 or more cannot
/// be pinned by a pattern, and `None` is returned. A job id written with leading zeros
/// (`app.0500`) is read as uid 500 by [`JobIdLayout::uid`] but does not match `*.500`; such a
/// job is covered once seen, as before. `None` for a job's own limit (its rule is per job).
pub fn first_sight_pattern(target: LimitTarget, layout: JobIdLayout) -> Option<String> {
    let (from_end, id) = match target {
        LimitTarget::Job(_) => return None,
        LimitTarget::User(u) => (layout.uid_from_end, u),
        LimitTarget::Group(g) => (layout.gid_from_end, g),
    };
    (from_end == Some(0)).then(|| format!("*.{id}"))
}

/// What a job of a limited user or group that has not been seen yet (no rule of its own) may
/// move in bytes/s, per limit that [`first_sight_pattern`] can express: the limit's share as
/// if that job were one more member sharing it, `limit / (sharing + 1)`, `sharing` counted
/// as [`limit_shares_bytes_per_s`] counts it (the members `active` says moved data, or all
/// members of `jobs` when none did). Returned with the pattern, in the order of `limits`.
///
/// The bound this gives: with `n` members sharing and `k` new jobs appearing in one period,
/// the user's or group's jobs move at most `limit * (1 + k / (n + 1))` in that period (each
/// new job at its first-sight share, the others at theirs); from the next period every job is
/// seen and the limit is shared by all of them.
pub fn first_sight_shares_bytes_per_s(
    limits: &[(LimitTarget, u64)],
    layout: JobIdLayout,
    jobs: impl IntoIterator<Item = JobId>,
    active: impl Fn(&JobId) -> bool,
) -> Vec<(LimitTarget, String, u64)> {
    let jobs: Vec<JobId> = jobs.into_iter().collect();
    let mut out = Vec::new();
    for &(target, bytes_per_s) in limits {
        let Some(pattern) = first_sight_pattern(target, layout) else {
            continue;
        };
        let member = |j: &JobId| match target {
            LimitTarget::User(u) => layout.uid(j) == Some(u),
            LimitTarget::Group(g) => layout.gid(j) == Some(g),
            LimitTarget::Job(_) => false,
        };
        let members = jobs.iter().filter(|j| member(j)).count();
        let moving = jobs.iter().filter(|j| member(j) && active(j)).count();
        let sharing = if moving == 0 { members } else { moving };
        let share = (bytes_per_s / (sharing as u64 + 1)).max(1);
        out.push((target, pattern, share));
    }
    out
}

/// Splits one job's file-system-wide limit over OSSs: OSS `i` gets a share in proportion to
/// what the job moved through it (`moved_bytes_per_s[i]`, 0 where it moved nothing or is not
/// known) plus a floor of [`LIMIT_FLOOR_FRACTION`] of the mean (at least 1 byte/s), so every
/// weight is positive, the shares add up to the limit, and an OSS where the job moved nothing
/// (yet) keeps room to show it. Every OSS gets a share: a job's first period on an OSS is
/// limited there too (at the floor's share, which grows with what it moves there).
pub fn split_over_osss(limit_bytes_per_s: u64, moved_bytes_per_s: &[f64]) -> Vec<f64> {
    if moved_bytes_per_s.is_empty() {
        return Vec::new();
    }
    assert!(
        moved_bytes_per_s.iter().all(|b| b.is_finite() && *b >= 0.0),
        "traffic is finite and not negative: {moved_bytes_per_s:?}"
    );
    let n = moved_bytes_per_s.len() as f64;
    let total: f64 = moved_bytes_per_s.iter().sum();
    let floor = (LIMIT_FLOOR_FRACTION * total / n).max(1.0);
    let weight_total = total + floor * n;
    moved_bytes_per_s
        .iter()
        .map(|b| limit_bytes_per_s as f64 * (b + floor) / weight_total)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(s: &str) -> JobId {
        JobId::new(s).unwrap()
    }

    #[test]
    fn layouts_find_uid_and_gid_from_the_end() {
        let l = JobIdLayout::parse("%e.%u.%g").unwrap();
        assert_eq!(l.uid(&job("my.app.500.20")), Some(500));
        assert_eq!(l.gid(&job("my.app.500.20")), Some(20));
        assert_eq!(l.uid(&job("app.x.20")), None);
        assert!(JobIdLayout::parse("%u.%u").is_err());
        assert!(JobIdLayout::parse("").is_err());
    }

    /// A user's limit is shared by its jobs that moved data (all of them when none did); a
    /// job under several limits gets the tightest; a job limit needs no listing.
    #[test]
    fn user_limits_are_shared_by_the_moving_jobs_and_the_tightest_wins() {
        let layout = JobIdLayout::parse("%e.%u").unwrap();
        let limits = [
            (LimitTarget::User(500), 1000),
            (LimitTarget::Job(job("b.500")), 300),
            (LimitTarget::Job(job("absent.7")), 50),
        ];
        let jobs = [job("a.500"), job("b.500"), job("c.500"), job("d.600")];
        let moving = |j: &JobId| j.as_str() != "c.500";
        let s = limit_shares_bytes_per_s(&limits, layout, jobs, moving);
        assert_eq!(s[&job("a.500")], 500);
        assert_eq!(s[&job("b.500")], 300);
        assert_eq!(s[&job("absent.7")], 50);
        assert!(!s.contains_key(&job("c.500")) && !s.contains_key(&job("d.600")));
        let idle = limit_shares_bytes_per_s(&limits[..1], layout, jobs, |_| false);
        assert_eq!(idle[&job("c.500")], 333);
        assert!(is_held(900.0, 1000) && !is_held(899.0, 1000));
    }

    /// A user's or group's limit reaches jobs not seen yet through a pattern when its field
    /// is the last one; the share is the limit over the sharing members plus one; and the
    /// pattern matches (libcfs wildcard, as the OSS matches it) exactly the ids whose last
    /// field is the uid, never another user's.
    #[test]
    fn first_sight_shares_cover_unseen_jobs_of_a_limited_user() {
        use crate::sched::tbf::cond::wildcard_match;
        let layout = JobIdLayout::parse("%e.%u").unwrap();
        let limits = [
            (LimitTarget::User(500), 1200),
            (LimitTarget::Group(20), 900),
            (LimitTarget::Job(job("b.500")), 300),
        ];
        let jobs = [job("a.500"), job("b.500"), job("c.500"), job("d.600")];
        let moving = |j: &JobId| j.as_str() != "c.500";
        let s = first_sight_shares_bytes_per_s(&limits, layout, jobs, moving);
        // Two of three members moving: 1200 / 3. The group has no field in this layout.
        assert_eq!(s, vec![(LimitTarget::User(500), "*.500".to_string(), 400)]);
        let idle = first_sight_shares_bytes_per_s(&limits, layout, jobs, |_| false);
        assert_eq!(idle[0].2, 300);
        let none = first_sight_shares_bytes_per_s(&limits, layout, [], |_| false);
        assert_eq!(none[0].2, 1200);
        let p = b"*.500";
        for (id, matches) in [
            ("new.500", true),
            ("my.app.500", true),
            ("new.5000", false),
            ("new.1500", false),
            ("500", false),
            ("new.500.x", false),
            ("x.600", false),
        ] {
            assert_eq!(wildcard_match(p, id.as_bytes()), matches, "{id}");
            if matches {
                assert_eq!(layout.uid(&job(id)), Some(500), "{id}");
            }
        }
        let by_gid = JobIdLayout::parse("%e.%u.%g").unwrap();
        assert_eq!(
            first_sight_pattern(LimitTarget::Group(20), by_gid),
            Some("*.20".to_string())
        );
        assert_eq!(first_sight_pattern(LimitTarget::User(500), by_gid), None);
    }

    /// 75 and 25 MiB/s on two OSSs, nothing on a third: shares in proportion plus a floor on
    /// each, adding up to the limit; the third keeps room.
    #[test]
    fn a_limit_is_split_in_proportion_with_a_floor_on_every_oss() {
        let mb = (1u64 << 20) as f64;
        let limit = 100u64 << 20;
        let shares = split_over_osss(limit, &[75.0 * mb, 25.0 * mb, 0.0]);
        let floor = 0.1 * 100.0 / 3.0;
        let w = 100.0 + 3.0 * floor;
        for (s, b) in shares.iter().zip([75.0, 25.0, 0.0]) {
            assert!((s / mb - 100.0 * (b + floor) / w).abs() < 1e-9, "{s}");
        }
        assert!((shares.iter().sum::<f64>() - limit as f64).abs() < 1.0);
        assert!(shares[2] > 0.0);
        // Idle everywhere: equal shares.
        assert_eq!(split_over_osss(90, &[0.0; 3]), vec![30.0; 3]);
        assert!(split_over_osss(90, &[]).is_empty());
    }
}
