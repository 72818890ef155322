//! AdapTBF: decentralized token lending and borrowing per storage target (AdapTBF paper §III-C).
//!
//! One [`TargetAllocator`] per storage target sees only that target's observations. Every period
//! it runs the paper's three steps on the jobs active there:
//!
//! 1. priority-based initial allocation (eq. 1-2);
//! 2. redistribution of surplus tokens by distribution factor (eq. 3-8);
//! 3. re-compensation of lenders from borrowers (eq. 9-20);
//!
//! with integer tokens, carried remainders and the largest-remainder correction (eq. 21-25), so
//! every step hands out exactly the tokens it has.
//!
//! Choices where the paper is ambiguous (also in `docs/reproductions/adaptbf.md`):
//!
//! * **Budget per period.** `T_i * Δt` is rarely an integer; the fractional part is carried in
//!   exact integer arithmetic (nano-tokens), so budgets over many periods sum to `T_i * t`.
//! * **First period (eq. 3).** `α^{t-1}` does not exist for a job that was not active in the
//!   previous period; its utilization is measured against this period's initial allocation
//!   instead. A zero reference allocation counts as one token (so demand `d` gives `u = d`).
//! * **All distribution factors zero (eq. 6-7).** When no active job used any token, surplus is
//!   redistributed by priority `p_x` alone, so tokens are never left unallocated.
//! * **Eq. 13** writes the reclaim coefficient as a sum over `J_+` but indexes it by job and uses
//!   it for borrowers in eq. 14. We read it literally: one coefficient per target and period,
//!   summed over the lenders, and clamp it to `[0, 1]` so a reclaim never exceeds the borrower's
//!   allocation.
//! * **Eq. 14** bounds the reclaim by `|r_x^t|` (the record before redistribution). We bound it by
//!   the smaller of `|r_x^t|` and `|r_{x,RD}^t|`, so a reclaim never exceeds what the borrower
//!   owes now.
//! * **Remainders (eq. 21-25)** are carried per job and per step kind (initial, redistribution,
//!   re-compensation) rather than as one interleaved series, so each step is fair over time on
//!   its own: a job's mean initial allocation converges to `T_i * p_x * Δt`.
//! * **Largest-remainder correction.** Missing tokens go one by one to the largest remainders;
//!   excess tokens are taken one by one from the smallest remainders (the jobs that were rounded
//!   up the most). Ties go to the smaller job id.
//! * **Demand `d_x`.** The paper counts RPCs a job issued; a Lustre OSS's `job_stats` count RPCs
//!   served, which a TBF rule caps. [`DemandSource`] picks one; the default is what an OSS can see.
//! * **Retiring records.** A job's record survives idle periods (a lender keeps its claim). A job
//!   idle for `idle_periods_max` periods is retired, and at most `jobs_max` jobs are tracked (the
//!   longest idle go first). A retired job's record is forgiven: its balance moves to
//!   [`TargetAllocator::forgiven_tokens`], so records plus forgiven tokens always sum to zero.
//!
//! Beyond the paper (off by default): **cost-weighted tokens** ([`TokenCost`], spec option
//! `rpc_cost=BYTES`). The paper's token is one RPC of any size ("1 RPC = 1 Token", §IV-F)
//! against `T_i` counted in full-size RPCs, so a job of 4 KiB RPCs is held to `T_i` small RPCs
//! a second even alone on the OST, where the device could serve many times more (the
//! bake-off's small-RPC finding, docs/bakeoff.md). With a cost, a token is the cost of one
//! `brw_size` RPC, and an RPC of `s` bytes costs `(c + s) / (c + brw_size)` tokens, `c` being
//! the request's fixed cost in bytes the device could have moved meanwhile (vPFS's SFQ charges
//! requests the same way, `vpfs:rpc_cost`). Demand is converted to tokens and tokens back to
//! each job's RPCs at its observed RPC size ([`super::rpc_size::RpcSizeEstimate`]); eq. 1-25
//! run unchanged on tokens.

use std::collections::BTreeMap;

use crate::rpc_size::RpcSizeEstimate;
use crate::rules::{JobRate, JobRules};

use super::{
    ControlWrite, Controller, Decision, DomainId, DomainWrite, JobTargetStats, Observation,
    TraceSample,
};
use crate::model::{JobId, OstId};
use crate::NS_PER_S;

/// Which per-job counter is the demand `d_x` of eq. 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DemandSource {
    /// RPCs served in the period: what Lustre's `job_stats` report (the default).
    #[default]
    Served,
    /// RPCs that arrived in the period: the paper's definition, not observable on a real OSS.
    Arrived,
}

/// Parameters of AdapTBF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapTbfConfig {
    /// Observation period Δt (the paper uses 100 ms).
    pub period_ns: u64,
    pub demand: DemandSource,
    /// Periods a job may stay idle before its record is retired (default: 600 s, Lustre's
    /// `job_cleanup_interval`, at the default period).
    pub idle_periods_max: u64,
    /// Most jobs tracked per target.
    pub jobs_max: usize,
    /// `None`: a token is one RPC (the paper). `Some`: cost-weighted tokens (module doc).
    pub token_cost: Option<TokenCost>,
}

/// Cost-weighted tokens: an RPC of `s` bytes costs `(rpc_cost_bytes + s) / (rpc_cost_bytes +
/// full_rpc_bytes)` tokens (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenCost {
    /// The fixed cost of a request, in bytes the device could transfer meanwhile.
    pub rpc_cost_bytes: u64,
    /// The size of the RPC one token stands for (`brw_size`).
    pub full_rpc_bytes: u64,
}

impl TokenCost {
    /// Tokens that `rpcs` RPCs of `rpc_bytes` cost, rounded up (a job that sent anything
    /// demands at least a token).
    pub fn tokens_for(&self, rpcs: u64, rpc_bytes: u64) -> u64 {
        let num = u128::from(rpcs) * u128::from(self.rpc_cost_bytes + rpc_bytes);
        let den = u128::from(self.rpc_cost_bytes + self.full_rpc_bytes);
        u64::try_from(num.div_ceil(den)).unwrap_or(u64::MAX)
    }

    /// RPCs of `rpc_bytes` that `tokens` pay for, rounded down (a rule never lets more cost
    /// through than the tokens).
    pub fn rpcs_for(&self, tokens: u64, rpc_bytes: u64) -> u64 {
        let num = u128::from(tokens) * u128::from(self.rpc_cost_bytes + self.full_rpc_bytes);
        let den = u128::from(self.rpc_cost_bytes + rpc_bytes);
        u64::try_from(num / den).unwrap_or(u64::MAX)
    }
}

impl Default for AdapTbfConfig {
    fn default() -> Self {
        AdapTbfConfig {
            period_ns: 100_000_000,
            demand: DemandSource::Served,
            idle_periods_max: 6_000,
            jobs_max: 100_000,
            token_cost: None,
        }
    }
}

/// One active job's input to a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobDemand {
    pub job: JobId,
    /// `n_x`: compute nodes of the job.
    pub nodes: u32,
    /// `d_x`: RPCs in the period.
    pub demand_rpcs: u64,
}

/// One job's allocation after a step, with the intermediate values the paper names.
#[derive(Clone, Debug, PartialEq)]
pub struct JobAllocation {
    pub job: JobId,
    /// `p_x` (eq. 1).
    pub priority: f64,
    /// `d_x`.
    pub demand_rpcs: u64,
    /// `u_x` (eq. 3).
    pub utilization: f64,
    /// `α_x` after the initial allocation (eq. 2, integer).
    pub initial_tokens: u64,
    /// `α_{x,RD}` (eq. 7, integer).
    pub redistributed_tokens: u64,
    /// `α_{x,RC}` (eq. 15/19, integer): the tokens the job gets for the next period.
    pub tokens: u64,
    /// `r_{x,RC}`: positive = lent, negative = borrowed.
    pub record: i64,
}

/// Output of one step on one target.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetStep {
    /// Tokens handed out this period (`⌊T_i Δt⌋` plus carried fractions).
    pub budget_tokens: u64,
    /// Active jobs, sorted by job id.
    pub jobs: Vec<JobAllocation>,
}

#[derive(Clone, Copy, Debug)]
struct JobState {
    job: JobId,
    record: i64,
    /// α of the last period the job was active in, and that period's index (`None` before the
    /// job's first step).
    last_tokens: u64,
    last_active_period: Option<u64>,
    rho_initial: f64,
    rho_redistribution: f64,
    rho_recompensation: f64,
}

impl JobState {
    fn new(job: JobId) -> Self {
        JobState {
            job,
            record: 0,
            last_tokens: 0,
            last_active_period: None,
            rho_initial: 0.0,
            rho_redistribution: 0.0,
            rho_recompensation: 0.0,
        }
    }
}

/// Buffers a step needs, kept between steps: with 100,000 jobs each is a fresh megabyte, and
/// allocating them every period cost more in page faults than the arithmetic.
#[derive(Clone, Debug, Default)]
struct Scratch {
    /// The active jobs sorted, when the caller's were not.
    sorted: Vec<JobDemand>,
    /// Index in `TargetAllocator::jobs` of each active job.
    slot: Vec<usize>,
    /// `jobs` being rebuilt when new jobs arrive.
    merged: Vec<JobState>,
    priority: Vec<f64>,
    /// Input of `apportion` (raw or proportional shares).
    raw: Vec<f64>,
    /// Remainders passed through `apportion`.
    rho: Vec<f64>,
    initial: Vec<u64>,
    utilization: Vec<f64>,
    surplus: Vec<u64>,
    df: Vec<f64>,
    weights: Vec<f64>,
    share: Vec<u64>,
    records_before: Vec<i64>,
    alpha_rd: Vec<u64>,
    record_rd: Vec<i64>,
    alpha_rc: Vec<u64>,
    record_rc: Vec<i64>,
    lenders: Vec<usize>,
    borrowers: Vec<usize>,
    order: Vec<usize>,
}

/// AdapTBF's allocator for one storage target.
#[derive(Clone, Debug)]
pub struct TargetAllocator {
    config: AdapTbfConfig,
    /// Per-job state, sorted by job id. Active jobs arrive sorted too, so a step finds their
    /// states by merging the two sequences: sequential memory access and no hashing, which
    /// matters at 100,000 jobs where a hash map missed the cache on every job.
    jobs: Vec<JobState>,
    /// Fraction of a token carried between budgets, in nano-tokens.
    budget_carry_nano: u128,
    /// Index of the next period.
    period: u64,
    forgiven_tokens: i64,
    scratch: Scratch,
}

impl TargetAllocator {
    pub fn new(config: AdapTbfConfig) -> Self {
        TargetAllocator {
            config,
            jobs: Vec::new(),
            budget_carry_nano: 0,
            period: 0,
            forgiven_tokens: 0,
            scratch: Scratch::default(),
        }
    }

    fn find(&self, job: &JobId) -> Option<&JobState> {
        self.jobs
            .binary_search_by(|s| s.job.cmp(job))
            .ok()
            .map(|i| &self.jobs[i])
    }

    /// Record of `job` (positive = lent), 0 if unknown.
    pub fn record(&self, job: &JobId) -> i64 {
        self.find(job).map_or(0, |s| s.record)
    }

    /// Sum of all records; always `-forgiven_tokens()`.
    pub fn records_sum(&self) -> i64 {
        self.jobs.iter().map(|s| s.record).sum()
    }

    /// Balance of retired jobs' records.
    pub fn forgiven_tokens(&self) -> i64 {
        self.forgiven_tokens
    }

    /// Jobs currently tracked (active or idle with a record).
    pub fn tracked_jobs(&self) -> usize {
        self.jobs.len()
    }

    /// Fills `slot` with each active job's index in `jobs`, adding states for new jobs.
    fn locate(jobs: &mut Vec<JobState>, active: &[JobDemand], s: &mut Scratch) {
        s.slot.clear();
        let mut new_jobs = false;
        let mut k = 0;
        for a in active {
            // Equality first: in a steady state the next state is the job's own.
            while k < jobs.len() && jobs[k].job != a.job && jobs[k].job < a.job {
                k += 1;
            }
            if k < jobs.len() && jobs[k].job == a.job {
                s.slot.push(k);
                k += 1;
            } else {
                s.slot.push(usize::MAX);
                new_jobs = true;
            }
        }
        if !new_jobs {
            return;
        }
        let merged = &mut s.merged;
        merged.clear();
        merged.reserve(jobs.len() + active.len());
        let mut k = 0;
        for (a, slot) in active.iter().zip(s.slot.iter_mut()) {
            while k < jobs.len() && jobs[k].job < a.job {
                merged.push(jobs[k]);
                k += 1;
            }
            *slot = merged.len();
            if k < jobs.len() && jobs[k].job == a.job {
                merged.push(jobs[k]);
                k += 1;
            } else {
                merged.push(JobState::new(a.job));
            }
        }
        merged.extend_from_slice(&jobs[k..]);
        std::mem::swap(jobs, merged);
    }

    /// Runs the three steps for one period. `active` are the jobs with RPCs on this target in
    /// the period (duplicates are a caller bug and panic); order does not matter.
    pub fn step(&mut self, capacity_rpcs_per_s: u64, active: &[JobDemand]) -> TargetStep {
        let mut s = std::mem::take(&mut self.scratch);
        let mut sorted = std::mem::take(&mut s.sorted);
        // Observations arrive sorted by job id; sort (a copy) only when a caller did not.
        let active: &[JobDemand] = if active.is_sorted_by_key(|a| a.job) {
            active
        } else {
            sorted.clear();
            sorted.extend_from_slice(active);
            sorted.sort_by_key(|a| a.job);
            &sorted
        };
        assert!(
            active.windows(2).all(|w| w[0].job != w[1].job),
            "a job appears twice in one step"
        );
        let out = self.step_sorted(capacity_rpcs_per_s, active, &mut s);
        s.sorted = sorted;
        self.scratch = s;
        out
    }

    fn step_sorted(
        &mut self,
        capacity_rpcs_per_s: u64,
        active: &[JobDemand],
        s: &mut Scratch,
    ) -> TargetStep {
        let period = self.period;
        self.period += 1;

        let carry = self.budget_carry_nano
            + u128::from(capacity_rpcs_per_s) * u128::from(self.config.period_ns);
        let budget = (carry / u128::from(NS_PER_S)) as u64;
        self.budget_carry_nano = carry % u128::from(NS_PER_S);

        let n = active.len();
        if n == 0 {
            self.retire(period);
            return TargetStep {
                budget_tokens: budget,
                jobs: Vec::new(),
            };
        }
        Self::locate(&mut self.jobs, active, s);
        let jobs = &mut self.jobs;

        // Eq. 1: priority over the active jobs. A job with zero nodes has no priority.
        let nodes_total: u64 = active.iter().map(|j| u64::from(j.nodes)).sum();
        s.priority.clear();
        s.priority.extend(active.iter().map(|j| {
            if nodes_total == 0 {
                1.0 / n as f64
            } else {
                j.nodes as f64 / nodes_total as f64
            }
        }));

        // Eq. 2 with eq. 23-25: integer initial allocation.
        s.raw.clear();
        s.raw.extend(s.priority.iter().map(|p| p * budget as f64));
        s.rho.clear();
        s.rho.extend(s.slot.iter().map(|&k| jobs[k].rho_initial));
        apportion(&s.raw, budget, &mut s.rho, &mut s.initial, &mut s.order);
        for (&k, r) in s.slot.iter().zip(&s.rho) {
            jobs[k].rho_initial = *r;
        }

        // Eq. 3: utilization against the previous period's allocation; eq. 4-5: surplus;
        // eq. 6: distribution factor.
        s.utilization.clear();
        s.surplus.clear();
        s.df.clear();
        s.records_before.clear();
        for i in 0..n {
            let state = &jobs[s.slot[i]];
            let alpha_now = s.initial[i];
            let d = active[i].demand_rpcs;
            let reference = if state.last_active_period.map(|p| p + 1) == Some(period) {
                state.last_tokens
            } else {
                alpha_now
            };
            let u = d as f64 / reference.max(1) as f64;
            let p = s.priority[i];
            s.utilization.push(u);
            s.surplus.push(alpha_now.saturating_sub(d));
            s.df.push(if u > 1.0 { u + u * p } else { u * p });
            s.records_before.push(state.record);
        }
        let surplus_total: u64 = s.surplus.iter().sum();

        // Eq. 7-8: redistribute the surplus by share of DF (by priority if all DF are zero).
        let weights = if s.df.iter().sum::<f64>() > 0.0 {
            &s.df
        } else {
            &s.priority
        };
        proportional(weights, surplus_total, &mut s.raw);
        s.rho.clear();
        s.rho
            .extend(s.slot.iter().map(|&k| jobs[k].rho_redistribution));
        apportion(
            &s.raw,
            surplus_total,
            &mut s.rho,
            &mut s.share,
            &mut s.order,
        );
        s.alpha_rd.clear();
        s.record_rd.clear();
        s.lenders.clear();
        s.borrowers.clear();
        for i in 0..n {
            let alpha_rd = s.initial[i] - s.surplus[i] + s.share[i];
            let record_rd = s.records_before[i] + s.surplus[i] as i64 - s.share[i] as i64;
            s.alpha_rd.push(alpha_rd);
            s.record_rd.push(record_rd);
            jobs[s.slot[i]].rho_redistribution = s.rho[i];
            // Eq. 9-10: lenders and borrowers, by sign before and after redistribution.
            let before = s.records_before[i];
            if before > 0 && record_rd > 0 {
                s.lenders.push(i);
            } else if before < 0 && record_rd < 0 {
                s.borrowers.push(i);
            }
        }

        s.alpha_rc.clone_from(&s.alpha_rd);
        s.record_rc.clone_from(&s.record_rd);
        if !s.lenders.is_empty() && !s.borrowers.is_empty() {
            // Eq. 11-13: one reclaim coefficient per target, summed over the lenders.
            let coefficient: f64 = s
                .lenders
                .iter()
                .map(|&i| {
                    let future_u = active[i].demand_rpcs as f64 / s.alpha_rd[i].max(1) as f64;
                    s.priority[i] * (s.utilization[i].max(1.0) + (1.0 - future_u).max(0.0)) / 2.0
                })
                .sum::<f64>()
                .clamp(0.0, 1.0);
            // Eq. 14-17: reclaim from borrowers, bounded by what they owe.
            let mut reclaimed_total = 0u64;
            for &i in &s.borrowers {
                let owed = s.records_before[i]
                    .unsigned_abs()
                    .min(s.record_rd[i].unsigned_abs());
                let reclaim = ((coefficient * s.alpha_rd[i] as f64).floor() as u64).min(owed);
                s.alpha_rc[i] -= reclaim;
                s.record_rc[i] += reclaim as i64;
                reclaimed_total += reclaim;
            }
            // Eq. 18-20: give it to the lenders by DF share (by priority if all DF are zero).
            s.weights.clear();
            s.weights.extend(s.lenders.iter().map(|&i| s.df[i]));
            let by_df = s.weights.iter().sum::<f64>() > 0.0;
            if !by_df {
                s.weights.clear();
                s.weights.extend(s.lenders.iter().map(|&i| s.priority[i]));
            }
            proportional(&s.weights, reclaimed_total, &mut s.raw);
            s.rho.clear();
            s.rho.extend(
                s.lenders
                    .iter()
                    .map(|&i| jobs[s.slot[i]].rho_recompensation),
            );
            apportion(
                &s.raw,
                reclaimed_total,
                &mut s.rho,
                &mut s.share,
                &mut s.order,
            );
            for (k, &i) in s.lenders.iter().enumerate() {
                s.alpha_rc[i] += s.share[k];
                s.record_rc[i] -= s.share[k] as i64;
                jobs[s.slot[i]].rho_recompensation = s.rho[k];
            }
        }

        // Tokens are conserved at every stage: the initial allocation, the redistribution and
        // the recompensation each hand out exactly the period's budget (eq. 2, 7-8 and 14-20
        // move tokens between jobs, never create or destroy them; a reclaim is never stranded,
        // since lenders without a DF or priority share also make eq. 11-13's coefficient zero),
        // and records only move what was lent and paid back, so their sum is unchanged.
        assert_eq!(
            s.initial.iter().sum::<u64>(),
            budget,
            "eq. 2 hands out the budget"
        );
        assert_eq!(
            s.alpha_rd.iter().sum::<u64>(),
            budget,
            "eq. 7-8 keep the budget"
        );
        assert_eq!(
            s.alpha_rc.iter().sum::<u64>(),
            budget,
            "eq. 14-20 keep the budget"
        );
        assert_eq!(
            s.record_rc.iter().sum::<i64>(),
            s.records_before.iter().sum::<i64>(),
            "a step moves records between jobs, never creates them"
        );
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let state = &mut jobs[s.slot[i]];
            state.record = s.record_rc[i];
            state.last_tokens = s.alpha_rc[i];
            state.last_active_period = Some(period);
            out.push(JobAllocation {
                job: active[i].job,
                priority: s.priority[i],
                demand_rpcs: active[i].demand_rpcs,
                utilization: s.utilization[i],
                initial_tokens: s.initial[i],
                redistributed_tokens: s.alpha_rd[i],
                tokens: s.alpha_rc[i],
                record: s.record_rc[i],
            });
        }
        self.retire(period);
        TargetStep {
            budget_tokens: budget,
            jobs: out,
        }
    }

    /// Drops jobs idle for too long, then the longest-idle ones beyond `jobs_max`.
    fn retire(&mut self, period: u64) {
        let idle_max = self.config.idle_periods_max;
        let mut forgiven = 0i64;
        self.jobs.retain(|s| {
            let last = s.last_active_period.unwrap_or(period);
            let keep = period.saturating_sub(last) <= idle_max;
            if !keep {
                forgiven += s.record;
            }
            keep
        });
        if self.jobs.len() > self.config.jobs_max {
            let mut by_age: Vec<(Option<u64>, JobId)> = self
                .jobs
                .iter()
                .map(|s| (s.last_active_period, s.job))
                .collect();
            let excess = self.jobs.len() - self.config.jobs_max;
            // The `excess` longest idle, oldest first; (period, job) pairs are distinct.
            by_age.select_nth_unstable(excess - 1);
            by_age.truncate(excess);
            by_age.sort_unstable_by_key(|&(_, job)| job);
            let mut victims = by_age.iter().map(|(_, job)| *job).peekable();
            // Both sequences are sorted by job id.
            self.jobs.retain(|s| {
                if victims.peek() == Some(&s.job) {
                    victims.next();
                    forgiven += s.record;
                    false
                } else {
                    true
                }
            });
        }
        self.forgiven_tokens += forgiven;
    }
}

/// `weights` scaled to sum to `total`, into `out`.
fn proportional(weights: &[f64], total: u64, out: &mut Vec<f64>) {
    out.clear();
    let sum: f64 = weights.iter().sum();
    if sum <= 0.0 {
        out.resize(weights.len(), 0.0);
        return;
    }
    out.extend(weights.iter().map(|w| w / sum * total as f64));
}

/// Tolerance that keeps float noise from turning 33.0 into 32 + 0.999999.
const APPORTION_EPSILON: f64 = 1e-9;

/// Eq. 23-25 and the largest-remainder correction: floors `raw + rho`, keeps the fractions in
/// `rho`, then adds or removes single tokens until the result sums exactly to `total`. Entries
/// with `raw == 0` (a job with no claim in this step) get nothing and keep their remainder.
/// The result goes to `out`; `order` is scratch.
fn apportion(raw: &[f64], total: u64, rho: &mut [f64], out: &mut Vec<u64>, order: &mut Vec<usize>) {
    out.clear();
    for (r, carried) in raw.iter().zip(rho.iter_mut()) {
        if *r <= 0.0 {
            out.push(0);
            continue;
        }
        // A negative carry is a debt from an earlier correction: it stays in `rho` (never
        // clamped away) until later steps pay it back.
        let wanted = r + *carried;
        let floored = (wanted + APPORTION_EPSILON).floor().max(0.0);
        *carried = wanted - floored;
        out.push(floored as u64);
    }
    let sum: u64 = out.iter().sum();
    order.clear();
    if sum < total {
        // Leftover tokens go one each to the largest remainders among jobs with a claim. The
        // shortfall is at most about one token per job, so one pass in sorted order suffices;
        // the loop repeats only if it is not (it never is by more than a few rounds).
        order.extend((0..raw.len()).filter(|&i| raw[i] > 0.0));
        if order.is_empty() {
            // Nobody has a claim: callers only do this with a zero total.
            return;
        }
        let mut missing = total - sum;
        let by_remainder_desc = |a: &usize, b: &usize| rho[*b].total_cmp(&rho[*a]).then(a.cmp(b));
        if (missing as usize) < order.len() {
            // Only which jobs are in the top `missing` matters, not their order: a linear
            // selection instead of a sort keeps the step O(n).
            order.select_nth_unstable_by(missing as usize, by_remainder_desc);
            order.truncate(missing as usize);
        } else {
            order.sort_by(by_remainder_desc);
        }
        while missing > 0 {
            for &i in order.iter() {
                if missing == 0 {
                    break;
                }
                out[i] += 1;
                rho[i] -= 1.0;
                missing -= 1;
            }
        }
    } else if sum > total {
        // Excess tokens are taken one each from the smallest remainders among jobs that hold
        // tokens (the ones rounded up the most).
        order.extend((0..raw.len()).filter(|&i| out[i] > 0));
        let mut excess = sum - total;
        let by_remainder_asc = |a: &usize, b: &usize| rho[*a].total_cmp(&rho[*b]).then(a.cmp(b));
        if (excess as usize) < order.len() {
            order.select_nth_unstable_by(excess as usize, by_remainder_asc);
            order.truncate(excess as usize);
        } else {
            order.sort_by(by_remainder_asc);
        }
        while excess > 0 {
            let before = excess;
            for &i in order.iter() {
                if excess == 0 {
                    break;
                }
                if out[i] > 0 {
                    out[i] -= 1;
                    rho[i] += 1.0;
                    excess -= 1;
                }
            }
            assert!(
                excess < before,
                "sum > total implies some count is positive"
            );
        }
    }
}

/// The AdapTBF controller: one [`TargetAllocator`] per target, and a rule manager per domain
/// that turns the allocations into TBF rule commands (the paper's Rule Management Daemon).
#[derive(Debug)]
pub struct AdapTbf {
    config: AdapTbfConfig,
    targets: BTreeMap<OstId, TargetAllocator>,
    rules: BTreeMap<DomainId, DomainRules>,
    last_steps: BTreeMap<OstId, TargetStep>,
    /// Each job's observed RPC size (used with cost-weighted tokens only).
    rpc_size: RpcSizeEstimate,
}

/// A domain's rules as the daemon last wrote them (the shared rule manager).
#[derive(Debug, Default)]
struct DomainRules {
    rules: JobRules,
}

impl AdapTbf {
    pub fn new(config: AdapTbfConfig) -> Self {
        AdapTbf {
            targets: BTreeMap::new(),
            rules: BTreeMap::new(),
            last_steps: BTreeMap::new(),
            rpc_size: RpcSizeEstimate::new(
                config
                    .token_cost
                    .map_or(1 << 20, |c| c.full_rpc_bytes.max(1)),
            ),
            config,
        }
    }

    /// The allocations of the last step on each target (for reports: records, demand).
    pub fn last_steps(&self) -> &BTreeMap<OstId, TargetStep> {
        &self.last_steps
    }

    /// `d_x` in tokens: RPCs, or their cost with cost-weighted tokens.
    fn demand_of(&self, s: &JobTargetStats) -> u64 {
        let rpcs = match self.config.demand {
            DemandSource::Served => s.rpcs_served,
            DemandSource::Arrived => s.rpcs_arrived,
        };
        match self.config.token_cost {
            None => rpcs,
            Some(cost) => cost.tokens_for(rpcs, self.rpc_size.bytes_per_rpc(&s.job)),
        }
    }

    /// RPCs per period a job's tokens pay for.
    fn rpcs_of(&self, job: &JobId, tokens: u64) -> u64 {
        match self.config.token_cost {
            None => tokens,
            Some(cost) => cost.rpcs_for(tokens, self.rpc_size.bytes_per_rpc(job)),
        }
    }
}

impl Controller for AdapTbf {
    fn name(&self) -> &'static str {
        "adaptbf"
    }

    fn on_write_refused(&mut self, write: &DomainWrite, errno: crate::errno::Errno) {
        if let (Some(text), Some(rules)) = (
            write.write.tbf_rule_text(),
            self.rules.get_mut(&write.domain),
        ) {
            rules.rules.write_refused(text, errno);
        }
    }

    fn setup(&mut self, initial: &Observation) -> Decision {
        let mut writes = Vec::new();
        for d in &initial.domains {
            self.rules.insert(d.domain, DomainRules::default());
            for t in &d.targets {
                self.targets
                    .insert(t.ost, TargetAllocator::new(self.config.clone()));
            }
            writes.push(DomainWrite {
                domain: d.domain,
                write: ControlWrite::NrsPolicies("tbf jobid".to_string()),
            });
        }
        Decision::of_writes(writes)
    }

    fn period_ns(&self) -> Option<u64> {
        Some(self.config.period_ns)
    }

    /// Per target and active job: demand, tokens for the next period and record (Fig. 7).
    fn trace(&self) -> Vec<TraceSample> {
        let mut out = Vec::new();
        for (ost, step) in &self.last_steps {
            for a in &step.jobs {
                for (metric, value) in [
                    ("demand_rpcs", a.demand_rpcs as f64),
                    ("tokens", a.tokens as f64),
                    ("record_tokens", a.record as f64),
                ] {
                    out.push(TraceSample {
                        ost: *ost,
                        job: a.job,
                        metric,
                        value,
                    });
                }
            }
        }
        out
    }

    fn decide(&mut self, observation: &Observation) -> Decision {
        if self.config.token_cost.is_some() {
            self.rpc_size.observe(observation);
        }
        let nodes = NodeCounts::of(&observation.jobs);
        let mut sums = TokenSums::new(nodes.len());
        let mut writes = Vec::new();
        for domain in &observation.domains {
            // Tokens per job summed over the domain's targets: one rule covers them all.
            for target in &domain.targets {
                let mut hint = 0usize;
                // Each active job's index among the known jobs, beside `active`.
                let mut slots: Vec<Option<usize>> = Vec::with_capacity(target.jobs.len());
                let active: Vec<JobDemand> = target
                    .jobs
                    .iter()
                    .filter(|s| match self.config.demand {
                        // An OSS only sees served RPCs, so only those make a job active.
                        DemandSource::Served => s.rpcs_served > 0,
                        DemandSource::Arrived => s.rpcs_arrived > 0,
                    })
                    .map(|s| {
                        let slot = nodes.find(&s.job, &mut hint);
                        slots.push(slot);
                        JobDemand {
                            job: s.job,
                            nodes: slot.map_or(1, |i| nodes.count(i)),
                            demand_rpcs: self.demand_of(s),
                        }
                    })
                    .collect();
                let allocator = self
                    .targets
                    .entry(target.ost)
                    .or_insert_with(|| TargetAllocator::new(self.config.clone()));
                let step = allocator.step(target.capacity_rpcs_per_s, &active);
                let mut hint = 0usize;
                for (k, a) in step.jobs.iter().enumerate() {
                    // The step lists the active jobs in job id order, `active`'s own order
                    // when it came sorted (as observers give it): the job's index is known.
                    let slot = match (active.get(k), slots.get(k)) {
                        (Some(d), Some(&slot)) if d.job == a.job => slot,
                        _ => nodes.find(&a.job, &mut hint),
                    };
                    sums.add(slot, a.job, a.tokens);
                }
                self.last_steps.insert(target.ost, step);
            }
            // (job, RPCs per period, nodes) in job id order.
            let rpcs: Vec<(JobId, u64, u32)> = sums
                .drain(&nodes)
                .into_iter()
                .map(|(job, t, n)| (job, self.rpcs_of(&job, t), n))
                .collect();
            let rules = self.rules.entry(domain.domain).or_default();
            writes.extend(
                rules
                    .update_sorted(&rpcs, self.config.period_ns)
                    .into_iter()
                    .map(|text| DomainWrite {
                        domain: domain.domain,
                        write: ControlWrite::tbf_rule(text),
                    }),
            );
        }
        Decision::of_writes(writes)
    }
}

/// Each known job's node count (`n_x`) in job id order: [`Observation::jobs`] is sorted, and
/// a target's jobs are too, so a job is found by stepping a cursor forward (a binary search
/// when that misses), where a map of job ids cost a dozen id comparisons per job and target.
/// A job listed twice takes its last listing (what collecting into a map kept).
struct NodeCounts {
    jobs: Vec<(JobId, u32)>,
}

impl NodeCounts {
    fn of(metas: &[super::JobMeta]) -> NodeCounts {
        let mut jobs: Vec<(JobId, u32)> = metas.iter().map(|m| (m.job, m.node_count)).collect();
        if !jobs.windows(2).all(|w| w[0].0 < w[1].0) {
            // Stable: equal ids keep their order, and the last of each run is kept.
            jobs.sort_by_key(|&(job, _)| job);
            let mut deduped: Vec<(JobId, u32)> = Vec::with_capacity(jobs.len());
            for (job, n) in jobs {
                match deduped.last_mut() {
                    Some(last) if last.0 == job => last.1 = n,
                    _ => deduped.push((job, n)),
                }
            }
            jobs = deduped;
        }
        NodeCounts { jobs }
    }

    fn len(&self) -> usize {
        self.jobs.len()
    }

    fn count(&self, index: usize) -> u32 {
        self.jobs[index].1
    }

    /// The index of `job`; `hint` is where the previous search of a sorted run ended.
    fn find(&self, job: &JobId, hint: &mut usize) -> Option<usize> {
        let jobs = &self.jobs;
        let from = *hint;
        let found = if from < jobs.len() && jobs[from].0 <= *job {
            // A sorted run: gallop forward from the hint (a target lists a fraction of the
            // jobs, so the next one is a few places on); the job, if listed, lies in
            // `[from + bound / 2, from + bound]`.
            let mut bound = 1;
            while from + bound < jobs.len() && jobs[from + bound].0 < *job {
                bound *= 2;
            }
            let lo = from + bound / 2;
            let hi = (from + bound + 1).min(jobs.len());
            jobs[lo..hi]
                .binary_search_by(|(j, _)| j.cmp(job))
                .ok()
                .map(|i| lo + i)
        } else {
            jobs.binary_search_by(|(j, _)| j.cmp(job)).ok()
        };
        if let Some(i) = found {
            *hint = i + 1;
        }
        found
    }
}

/// Tokens per job summed over one domain's targets, by the job's index in [`NodeCounts`]
/// (jobs no observation lists, which drivers do not produce, in a map).
struct TokenSums {
    tokens: Vec<u64>,
    present: Vec<bool>,
    touched: Vec<usize>,
    unknown: BTreeMap<JobId, u64>,
}

impl TokenSums {
    fn new(jobs: usize) -> TokenSums {
        TokenSums {
            tokens: vec![0; jobs],
            present: vec![false; jobs],
            touched: Vec::new(),
            unknown: BTreeMap::new(),
        }
    }

    /// Adds `tokens` to `job`, whose index among the known jobs is `slot`.
    fn add(&mut self, slot: Option<usize>, job: JobId, tokens: u64) {
        match slot {
            Some(i) => {
                if !self.present[i] {
                    self.present[i] = true;
                    self.touched.push(i);
                }
                self.tokens[i] += tokens;
            }
            None => *self.unknown.entry(job).or_default() += tokens,
        }
    }

    /// (job, tokens, nodes) of every job added since the last drain, in job id order; clears.
    fn drain(&mut self, nodes: &NodeCounts) -> Vec<(JobId, u64, u32)> {
        self.touched.sort_unstable();
        let mut out = Vec::with_capacity(self.touched.len() + self.unknown.len());
        let mut unknown = std::mem::take(&mut self.unknown).into_iter().peekable();
        for &i in &self.touched {
            let (job, n) = nodes.jobs[i];
            while let Some((u, t)) = unknown.next_if(|(u, _)| *u < job) {
                out.push((u, t, 1));
            }
            out.push((job, self.tokens[i], n));
            self.tokens[i] = 0;
            self.present[i] = false;
        }
        out.extend(unknown.map(|(u, t)| (u, t, 1)));
        self.touched.clear();
        out
    }
}

impl DomainRules {
    /// [`DomainRules::update_sorted`] from maps (the form the tests and the reference
    /// decision use).
    #[cfg(test)]
    fn update(
        &mut self,
        tokens: &BTreeMap<JobId, u64>,
        nodes: &BTreeMap<JobId, u32>,
        period_ns: u64,
    ) -> Vec<String> {
        let rpcs: Vec<(JobId, u64, u32)> = tokens
            .iter()
            .map(|(job, &t)| (*job, t, nodes.get(job).copied().unwrap_or(1)))
            .collect();
        self.update_sorted(&rpcs, period_ns)
    }

    /// The rule commands that bring the domain's rules to `rpcs` (job, RPCs per period,
    /// nodes; in job id order): stops for jobs no longer active, changes for rates that
    /// moved, starts for new jobs placed by priority (more nodes first) with `rank=`.
    fn update_sorted(&mut self, rpcs: &[(JobId, u64, u32)], period_ns: u64) -> Vec<String> {
        let desired: Vec<(JobId, JobRate)> = rpcs
            .iter()
            .map(|&(job, t, nodes)| {
                let want = JobRate {
                    value: rate_for_tokens(t, period_ns),
                    priority: Some(nodes),
                };
                (job, want)
            })
            .collect();
        self.rules
            .reconcile_sorted(&desired)
            .iter()
            .map(ToString::to_string)
            .collect()
    }
}

/// TBF rate (RPC/s) that serves `tokens` RPCs in one period, within Lustre's valid range.
pub fn rate_for_tokens(tokens: u64, period_ns: u64) -> u64 {
    let rate = (u128::from(tokens) * u128::from(NS_PER_S) / u128::from(period_ns.max(1))) as u64;
    rate.clamp(1, u64::from(crate::limits::TBF_RATE_RPCS_PER_S_MAX))
}

// The spec of `adaptbf`: `adaptbf[:period_ms=N][:demand=served|arrived][:rpc_cost=BYTES]`.

use crate::spec::{
    key_value, parse_bytes, parse_choice, parse_period_ms, ControllerContext, ControllerDescriptor,
    Deployment, PolicyOptions,
};

/// `adaptbf`: AdapTBF (Algorithm 1).
pub const DESCRIPTOR: ControllerDescriptor = ControllerDescriptor {
    name: "adaptbf",
    description: "AdapTBF: per-OST TBF rates by node-count priority, with token lending, borrowing and re-compensation",
    parse: parse_adaptbf,
    deployment: Deployment::ServerRules,
};

#[derive(Debug, PartialEq)]
pub(crate) struct AdapTbfOptions {
    /// `None`: the driver's default period.
    pub(crate) period_ms: Option<u64>,
    pub(crate) demand: DemandSource,
    /// `rpc_cost=BYTES`: cost-weighted tokens (`adaptbf::TokenCost`); `None`: one RPC, one
    /// token (the paper).
    pub(crate) rpc_cost_bytes: Option<u64>,
}

impl PolicyOptions for AdapTbfOptions {
    fn controller(&self, ctx: &ControllerContext) -> Box<dyn Controller> {
        Box::new(AdapTbf::new(AdapTbfConfig {
            period_ns: self.period_ms.unwrap_or(ctx.period_ms_default) * 1_000_000,
            demand: self.demand,
            token_cost: self
                .rpc_cost_bytes
                .map(|rpc_cost_bytes| crate::adaptbf::TokenCost {
                    rpc_cost_bytes,
                    full_rpc_bytes: ctx.rpc_size_bytes,
                }),
            ..AdapTbfConfig::default()
        }))
    }
}

pub(crate) fn parse_adaptbf(
    name: &'static str,
    options: &[&str],
) -> Result<Box<dyn PolicyOptions>, String> {
    let mut parsed = AdapTbfOptions {
        period_ms: None,
        demand: DemandSource::default(),
        rpc_cost_bytes: None,
    };
    for option in options {
        let (key, value) = key_value(name, option, "period_ms, demand, rpc_cost")?;
        match key {
            "period_ms" => parsed.period_ms = Some(parse_period_ms(name, value)?),
            "rpc_cost" => {
                let bytes = parse_bytes(name, key, value)?;
                if bytes > crate::sched::sfq::RPC_COST_MAX {
                    return Err(format!(
                        "{name} option rpc_cost=`{value}` is above {} bytes",
                        crate::sched::sfq::RPC_COST_MAX
                    ));
                }
                parsed.rpc_cost_bytes = Some(bytes);
            }
            "demand" => {
                parsed.demand = parse_choice(
                    name,
                    key,
                    value,
                    &[
                        ("served", DemandSource::Served),
                        ("arrived", DemandSource::Arrived),
                    ],
                )?
            }
            other => {
                return Err(format!(
                    "unknown adaptbf option `{other}` (allowed: period_ms, demand, rpc_cost)"
                ))
            }
        }
    }
    Ok(Box::new(parsed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The straightforward implementation the optimized [`TargetAllocator`] replaced, kept as the
    /// reference its results must equal exactly (every integer and every float).
    mod reference {
        use super::super::*;
        use rustc_hash::FxHashMap;

        #[derive(Clone, Debug, Default)]
        struct JobState {
            record: i64,
            /// α of the last period the job was active in, and that period's index (`None` before the
            /// job's first step).
            last_tokens: u64,
            last_active_period: Option<u64>,
            rho_initial: f64,
            rho_redistribution: f64,
            rho_recompensation: f64,
        }

        /// The allocator as first written: a hash map of states and one pass per equation.
        #[derive(Clone, Debug)]
        pub struct RefAllocator {
            config: AdapTbfConfig,
            /// Per-job state. A hash map is safe here: nothing iterates it in an order that reaches a
            /// result (retirement sorts, sums are order-free).
            jobs: FxHashMap<JobId, JobState>,
            /// Fraction of a token carried between budgets, in nano-tokens.
            budget_carry_nano: u128,
            /// Index of the next period.
            period: u64,
            forgiven_tokens: i64,
        }

        impl RefAllocator {
            pub fn new(config: AdapTbfConfig) -> Self {
                RefAllocator {
                    config,
                    jobs: FxHashMap::default(),
                    budget_carry_nano: 0,
                    period: 0,
                    forgiven_tokens: 0,
                }
            }

            /// Record of `job` (positive = lent), 0 if unknown.
            pub fn record(&self, job: &JobId) -> i64 {
                self.jobs.get(job).map_or(0, |s| s.record)
            }

            /// Sum of all records; always `-forgiven_tokens()`.
            pub fn records_sum(&self) -> i64 {
                self.jobs.values().map(|s| s.record).sum()
            }

            /// Balance of retired jobs' records.
            pub fn forgiven_tokens(&self) -> i64 {
                self.forgiven_tokens
            }

            /// Jobs currently tracked (active or idle with a record).
            pub fn tracked_jobs(&self) -> usize {
                self.jobs.len()
            }

            /// Runs the three steps for one period. `active` are the jobs with RPCs on this target in
            /// the period (duplicates are a caller bug and panic); order does not matter.
            pub fn step(&mut self, capacity_rpcs_per_s: u64, active: &[JobDemand]) -> TargetStep {
                let mut active: Vec<JobDemand> = active.to_vec();
                // Observations arrive sorted by job id; sort only when a caller did not.
                if !active.is_sorted_by_key(|a| a.job) {
                    active.sort_by_key(|a| a.job);
                }
                assert!(
                    active.windows(2).all(|w| w[0].job != w[1].job),
                    "a job appears twice in one step"
                );
                let period = self.period;
                self.period += 1;

                let carry = self.budget_carry_nano
                    + u128::from(capacity_rpcs_per_s) * u128::from(self.config.period_ns);
                let budget = (carry / u128::from(NS_PER_S)) as u64;
                self.budget_carry_nano = carry % u128::from(NS_PER_S);

                let n = active.len();
                if n == 0 {
                    self.retire(period);
                    return TargetStep {
                        budget_tokens: budget,
                        jobs: Vec::new(),
                    };
                }
                // Take the active jobs' states out of the map once; they go back at the end.
                let mut states: Vec<JobState> = active
                    .iter()
                    .map(|j| self.jobs.remove(&j.job).unwrap_or_default())
                    .collect();

                // Eq. 1: priority over the active jobs. A job with zero nodes has no priority.
                let nodes_total: u64 = active.iter().map(|j| u64::from(j.nodes)).sum();
                let priority: Vec<f64> = active
                    .iter()
                    .map(|j| {
                        if nodes_total == 0 {
                            1.0 / n as f64
                        } else {
                            j.nodes as f64 / nodes_total as f64
                        }
                    })
                    .collect();

                // Eq. 2 with eq. 23-25: integer initial allocation.
                let raw: Vec<f64> = priority.iter().map(|p| p * budget as f64).collect();
                let mut rho: Vec<f64> = states.iter().map(|s| s.rho_initial).collect();
                let initial = apportion(&raw, budget, &mut rho);
                for (state, r) in states.iter_mut().zip(&rho) {
                    state.rho_initial = *r;
                }

                // Eq. 3: utilization against the previous period's allocation.
                let demand: Vec<u64> = active.iter().map(|j| j.demand_rpcs).collect();
                let utilization: Vec<f64> = active
                    .iter()
                    .zip(&initial)
                    .zip(&states)
                    .map(|((j, &alpha_now), state)| {
                        let reference = if state.last_active_period.map(|p| p + 1) == Some(period) {
                            state.last_tokens
                        } else {
                            alpha_now
                        };
                        j.demand_rpcs as f64 / reference.max(1) as f64
                    })
                    .collect();

                // Eq. 4-5: surplus.
                let surplus: Vec<u64> = initial
                    .iter()
                    .zip(&demand)
                    .map(|(&a, &d)| a.saturating_sub(d))
                    .collect();
                let surplus_total: u64 = surplus.iter().sum();

                // Eq. 6: distribution factor.
                let df: Vec<f64> = utilization
                    .iter()
                    .zip(&priority)
                    .map(|(&u, &p)| if u > 1.0 { u + u * p } else { u * p })
                    .collect();

                // Eq. 7-8: redistribute the surplus by share of DF (by priority if all DF are zero).
                let weights = if df.iter().sum::<f64>() > 0.0 {
                    df.clone()
                } else {
                    priority.clone()
                };
                let mut rho: Vec<f64> = states.iter().map(|s| s.rho_redistribution).collect();
                let share = apportion(
                    &proportional(&weights, surplus_total),
                    surplus_total,
                    &mut rho,
                );
                let records_before: Vec<i64> = states.iter().map(|s| s.record).collect();
                let mut alpha_rd = Vec::with_capacity(n);
                let mut record_rd = Vec::with_capacity(n);
                for i in 0..n {
                    alpha_rd.push(initial[i] - surplus[i] + share[i]);
                    record_rd.push(records_before[i] + surplus[i] as i64 - share[i] as i64);
                    states[i].rho_redistribution = rho[i];
                }

                // Eq. 9-10: lenders and borrowers, by sign before and after redistribution.
                let lenders: Vec<usize> = (0..n)
                    .filter(|&i| records_before[i] > 0 && record_rd[i] > 0)
                    .collect();
                let borrowers: Vec<usize> = (0..n)
                    .filter(|&i| records_before[i] < 0 && record_rd[i] < 0)
                    .collect();

                let mut alpha_rc = alpha_rd.clone();
                let mut record_rc = record_rd.clone();
                if !lenders.is_empty() && !borrowers.is_empty() {
                    // Eq. 11-13: one reclaim coefficient per target, summed over the lenders.
                    let coefficient: f64 = lenders
                        .iter()
                        .map(|&i| {
                            let future_u = demand[i] as f64 / alpha_rd[i].max(1) as f64;
                            priority[i] * (utilization[i].max(1.0) + (1.0 - future_u).max(0.0))
                                / 2.0
                        })
                        .sum::<f64>()
                        .clamp(0.0, 1.0);
                    // Eq. 14-17: reclaim from borrowers, bounded by what they owe.
                    let mut reclaimed_total = 0u64;
                    for &i in &borrowers {
                        let owed = records_before[i]
                            .unsigned_abs()
                            .min(record_rd[i].unsigned_abs());
                        let reclaim = ((coefficient * alpha_rd[i] as f64).floor() as u64).min(owed);
                        alpha_rc[i] -= reclaim;
                        record_rc[i] += reclaim as i64;
                        reclaimed_total += reclaim;
                    }
                    // Eq. 18-20: give it to the lenders by DF share (by priority if all DF are zero).
                    let lender_df: Vec<f64> = lenders.iter().map(|&i| df[i]).collect();
                    let lender_weights = if lender_df.iter().sum::<f64>() > 0.0 {
                        lender_df
                    } else {
                        lenders.iter().map(|&i| priority[i]).collect()
                    };
                    let mut rho: Vec<f64> = lenders
                        .iter()
                        .map(|&i| states[i].rho_recompensation)
                        .collect();
                    let give = apportion(
                        &proportional(&lender_weights, reclaimed_total),
                        reclaimed_total,
                        &mut rho,
                    );
                    for (k, &i) in lenders.iter().enumerate() {
                        alpha_rc[i] += give[k];
                        record_rc[i] -= give[k] as i64;
                        states[i].rho_recompensation = rho[k];
                    }
                }

                let mut out = Vec::with_capacity(n);
                for (i, mut state) in states.into_iter().enumerate() {
                    state.record = record_rc[i];
                    state.last_tokens = alpha_rc[i];
                    state.last_active_period = Some(period);
                    out.push(JobAllocation {
                        job: active[i].job,
                        priority: priority[i],
                        demand_rpcs: demand[i],
                        utilization: utilization[i],
                        initial_tokens: initial[i],
                        redistributed_tokens: alpha_rd[i],
                        tokens: alpha_rc[i],
                        record: record_rc[i],
                    });
                    self.jobs.insert(active[i].job, state);
                }
                self.retire(period);
                TargetStep {
                    budget_tokens: budget,
                    jobs: out,
                }
            }

            /// Drops jobs idle for too long, then the longest-idle ones beyond `jobs_max`.
            fn retire(&mut self, period: u64) {
                let idle_max = self.config.idle_periods_max;
                let mut forgiven = 0i64;
                self.jobs.retain(|_, s| {
                    let last = s.last_active_period.unwrap_or(period);
                    let keep = period.saturating_sub(last) <= idle_max;
                    if !keep {
                        forgiven += s.record;
                    }
                    keep
                });
                if self.jobs.len() > self.config.jobs_max {
                    let mut by_age: Vec<(Option<u64>, JobId)> = self
                        .jobs
                        .iter()
                        .map(|(j, s)| (s.last_active_period, *j))
                        .collect();
                    by_age.sort_unstable();
                    let excess = self.jobs.len() - self.config.jobs_max;
                    for (_, job) in by_age.into_iter().take(excess) {
                        forgiven += self.jobs.remove(&job).expect("listed").record;
                    }
                }
                self.forgiven_tokens += forgiven;
            }
        }

        /// `weights` scaled to sum to `total`.
        fn proportional(weights: &[f64], total: u64) -> Vec<f64> {
            let sum: f64 = weights.iter().sum();
            if sum <= 0.0 {
                return vec![0.0; weights.len()];
            }
            weights.iter().map(|w| w / sum * total as f64).collect()
        }

        /// Tolerance that keeps float noise from turning 33.0 into 32 + 0.999999.
        const APPORTION_EPSILON: f64 = 1e-9;

        /// Eq. 23-25 and the largest-remainder correction: floors `raw + rho`, keeps the fractions in
        /// `rho`, then adds or removes single tokens until the result sums exactly to `total`. Entries
        /// with `raw == 0` (a job with no claim in this step) get nothing and keep their remainder.
        fn apportion(raw: &[f64], total: u64, rho: &mut [f64]) -> Vec<u64> {
            let mut out: Vec<u64> = Vec::with_capacity(raw.len());
            for (r, carried) in raw.iter().zip(rho.iter_mut()) {
                if *r <= 0.0 {
                    out.push(0);
                    continue;
                }
                // A negative carry is a debt from an earlier correction: it stays in `rho` (never
                // clamped away) until later steps pay it back.
                let wanted = r + *carried;
                let floored = (wanted + APPORTION_EPSILON).floor().max(0.0);
                *carried = wanted - floored;
                out.push(floored as u64);
            }
            let sum: u64 = out.iter().sum();
            if sum < total {
                // Leftover tokens go one each to the largest remainders among jobs with a claim. The
                // shortfall is at most about one token per job, so one pass in sorted order suffices;
                // the loop repeats only if it is not (it never is by more than a few rounds).
                let mut order: Vec<usize> = (0..raw.len()).filter(|&i| raw[i] > 0.0).collect();
                if order.is_empty() {
                    // Nobody has a claim: callers only do this with a zero total.
                    return out;
                }
                let mut missing = total - sum;
                let by_remainder_desc =
                    |a: &usize, b: &usize| rho[*b].total_cmp(&rho[*a]).then(a.cmp(b));
                if (missing as usize) < order.len() {
                    // Only which jobs are in the top `missing` matters, not their order: a linear
                    // selection instead of a sort keeps the step O(n).
                    order.select_nth_unstable_by(missing as usize, by_remainder_desc);
                    order.truncate(missing as usize);
                } else {
                    order.sort_by(by_remainder_desc);
                }
                while missing > 0 {
                    for &i in &order {
                        if missing == 0 {
                            break;
                        }
                        out[i] += 1;
                        rho[i] -= 1.0;
                        missing -= 1;
                    }
                }
            } else if sum > total {
                // Excess tokens are taken one each from the smallest remainders among jobs that hold
                // tokens (the ones rounded up the most).
                let mut order: Vec<usize> = (0..raw.len()).filter(|&i| out[i] > 0).collect();
                let mut excess = sum - total;
                let by_remainder_asc =
                    |a: &usize, b: &usize| rho[*a].total_cmp(&rho[*b]).then(a.cmp(b));
                if (excess as usize) < order.len() {
                    order.select_nth_unstable_by(excess as usize, by_remainder_asc);
                    order.truncate(excess as usize);
                } else {
                    order.sort_by(by_remainder_asc);
                }
                while excess > 0 {
                    let before = excess;
                    for &i in &order {
                        if excess == 0 {
                            break;
                        }
                        if out[i] > 0 {
                            out[i] -= 1;
                            rho[i] += 1.0;
                            excess -= 1;
                        }
                    }
                    assert!(
                        excess < before,
                        "sum > total implies some count is positive"
                    );
                }
            }
            out
        }
    }

    #[test]
    fn optimized_step_equals_the_reference_at_scale() {
        // Thousands of jobs make the selections in `apportion` and the merge do real work;
        // a fixed LCG keeps the inputs reproducible.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        let config = AdapTbfConfig {
            idle_periods_max: 2,
            jobs_max: 2_500,
            ..AdapTbfConfig::default()
        };
        let mut fast = TargetAllocator::new(config.clone());
        let mut slow = reference::RefAllocator::new(config);
        for _ in 0..8 {
            let mut active = Vec::new();
            for j in 0..3_000u64 {
                if next(4) != 0 {
                    active.push(demand(&format!("job{j:05}"), next(64) as u32, next(500)));
                }
            }
            active.sort_by_key(|a| a.job);
            let capacity = 1_000 + next(3_000_000);
            let got = fast.step(capacity, &active);
            let want = slow.step(capacity, &active);
            assert_eq!(got, want);
            assert_eq!(fast.tracked_jobs(), slow.tracked_jobs());
            assert_eq!(fast.forgiven_tokens(), slow.forgiven_tokens());
        }
    }

    /// `(job, nodes, demand)` of the active jobs of one period.
    type Period = Vec<(u8, u32, u64)>;

    fn arb_job_periods() -> impl Strategy<Value = Vec<(u64, Period)>> {
        // Up to 60 periods of up to 12 of 24 jobs (so jobs come, go and come back), node
        // counts 0..70 (zero included), demand 0..600, capacity per period 0..6000.
        prop::collection::vec(
            (
                0u64..6000,
                prop::collection::btree_map(0u8..24, (0u32..70, 0u64..600), 0..12)
                    .prop_map(|m| m.into_iter().map(|(j, (n, d))| (j, n, d)).collect()),
            ),
            1..60,
        )
    }

    proptest! {
        #[test]
        fn optimized_step_equals_the_reference(
            periods in arb_job_periods(),
            idle_periods_max in 0u64..8,
            jobs_max in 1usize..16,
            reversed in any::<bool>(),
        ) {
            let config = AdapTbfConfig { idle_periods_max, jobs_max, ..AdapTbfConfig::default() };
            let mut fast = TargetAllocator::new(config.clone());
            let mut slow = reference::RefAllocator::new(config);
            for (capacity, period) in periods {
                let mut active: Vec<JobDemand> = period
                    .iter()
                    .map(|&(j, n, d)| demand(&format!("job{j}"), n, d))
                    .collect();
                if reversed {
                    // Unsorted input takes the sorting path.
                    active.reverse();
                }
                let got = fast.step(capacity, &active);
                let want = slow.step(capacity, &active);
                prop_assert_eq!(got.budget_tokens, want.budget_tokens);
                prop_assert_eq!(got.jobs.len(), want.jobs.len());
                for (g, w) in got.jobs.iter().zip(&want.jobs) {
                    // Bit-exact floats too: same operations in the same order.
                    prop_assert_eq!(g.priority.to_bits(), w.priority.to_bits());
                    prop_assert_eq!(g.utilization.to_bits(), w.utilization.to_bits());
                    prop_assert_eq!(g, w);
                }
                prop_assert_eq!(fast.tracked_jobs(), slow.tracked_jobs());
                prop_assert_eq!(fast.forgiven_tokens(), slow.forgiven_tokens());
                prop_assert_eq!(fast.records_sum(), slow.records_sum());
                for j in 0..24u8 {
                    let id = job(&format!("job{j}"));
                    prop_assert_eq!(fast.record(&id), slow.record(&id));
                }
            }
        }
    }

    fn job(name: &str) -> JobId {
        JobId::new(name).unwrap()
    }

    fn demand(name: &str, nodes: u32, d: u64) -> JobDemand {
        JobDemand {
            job: job(name),
            nodes,
            demand_rpcs: d,
        }
    }

    fn tokens(step: &TargetStep) -> Vec<u64> {
        step.jobs.iter().map(|a| a.tokens).collect()
    }

    /// A rule start the server refused is not held: the next decision starts it again (else
    /// the controller would `change` a rule that does not exist and rank others against it).
    #[test]
    fn a_refused_start_is_started_again() {
        use crate::{DomainObservation, JobMeta, JobTargetStats, TargetObservation};
        let stats = |j: &str| JobTargetStats {
            job: job(j),
            rpcs_arrived: 50,
            rpcs_served: 50,
            bytes_served: 50 << 20,
        };
        let obs = |now_ns: u64| Observation {
            now_ns,
            period_ns: 100_000_000,
            domains: vec![DomainObservation {
                domain: DomainId(0),
                targets: vec![TargetObservation {
                    ost: OstId(0),
                    queue_len_rpcs: 10,
                    device_queue_rpcs: 0,
                    device_time_in_queue_ns: 0,
                    capacity_rpcs_per_s: 1000,
                    jobs: vec![stats("a"), stats("b")],
                }],
            }],
            jobs: vec![
                JobMeta {
                    job: job("a"),
                    node_count: 1,
                    weight: 1,
                },
                JobMeta {
                    job: job("b"),
                    node_count: 2,
                    weight: 2,
                },
            ],
            clients: Vec::new(),
        };
        let mut c = AdapTbf::new(AdapTbfConfig::default());
        c.setup(&obs(0));
        let first = c.decide(&obs(100_000_000));
        let start_a = first
            .writes
            .iter()
            .find(|w| w.write.param_and_text().1.starts_with("start ja "))
            .expect("a gets a rule")
            .clone();
        c.on_write_refused(&start_a, crate::errno::Errno::ENOSPC);
        let texts: Vec<String> = c
            .decide(&obs(200_000_000))
            .writes
            .iter()
            .map(|w| w.write.param_and_text().1.to_string())
            .collect();
        assert!(
            texts.iter().any(|t| t.starts_with("start ja ")),
            "{texts:?}"
        );
        assert!(
            !texts.iter().any(|t| t.starts_with("change ja ")),
            "{texts:?}"
        );
    }

    #[test]
    fn token_cost_arithmetic() {
        let bytes_only = TokenCost {
            rpc_cost_bytes: 0,
            full_rpc_bytes: 1 << 20,
        };
        assert_eq!(bytes_only.tokens_for(256, 4096), 1);
        assert_eq!(bytes_only.tokens_for(257, 4096), 2, "rounded up");
        assert_eq!(
            bytes_only.tokens_for(1, 4096),
            1,
            "anything sent is a token"
        );
        assert_eq!(bytes_only.rpcs_for(1, 4096), 256);
        assert_eq!(bytes_only.rpcs_for(7, 1 << 20), 7);
        let with_overhead = TokenCost {
            rpc_cost_bytes: 40 << 10,
            full_rpc_bytes: 1 << 20,
        };
        // (40 K + 1 M) / (40 K + 4 K) = 24.18...: 24 small RPCs per token.
        assert_eq!(with_overhead.rpcs_for(1, 4096), 24);
        assert_eq!(with_overhead.rpcs_for(100, 1 << 20), 100);
        assert_eq!(with_overhead.tokens_for(24, 4096), 1);
        assert_eq!(with_overhead.tokens_for(25, 4096), 2);
    }

    /// One OST of 1000 tokens/s: a job of 4 KiB RPCs alone is held to 1000 RPCs/s with the
    /// paper's tokens, and gets its RPCs' cost's worth with cost-weighted tokens; a job of
    /// full-size RPCs gets the same rule either way.
    #[test]
    fn cost_weighted_tokens_let_small_rpcs_use_the_ost() {
        use crate::{DomainObservation, JobMeta, JobTargetStats, TargetObservation};
        let obs = |now_ns: u64, j: &str, rpcs: u64, rpc_bytes: u64| Observation {
            now_ns,
            period_ns: 100_000_000,
            domains: vec![DomainObservation {
                domain: DomainId(0),
                targets: vec![TargetObservation {
                    ost: OstId(0),
                    queue_len_rpcs: 10,
                    device_queue_rpcs: 0,
                    device_time_in_queue_ns: 0,
                    capacity_rpcs_per_s: 1000,
                    jobs: vec![JobTargetStats {
                        job: job(j),
                        rpcs_arrived: rpcs,
                        rpcs_served: rpcs,
                        bytes_served: rpcs * rpc_bytes,
                    }],
                }],
            }],
            jobs: vec![JobMeta {
                job: job(j),
                node_count: 1,
                weight: 1,
            }],
            clients: Vec::new(),
        };
        let rate_after = |config: AdapTbfConfig, j: &str, rpcs: u64, rpc_bytes: u64| {
            let mut c = AdapTbf::new(config);
            c.setup(&obs(0, j, 0, rpc_bytes));
            let mut text = String::new();
            for k in 1..=20 {
                for w in c.decide(&obs(k * 100_000_000, j, rpcs, rpc_bytes)).writes {
                    text = w.write.param_and_text().1.to_string();
                }
            }
            let rate = text.rsplit("rate=").next().unwrap();
            rate.split(' ').next().unwrap().parse::<u64>().unwrap()
        };
        let paper = AdapTbfConfig::default();
        let cost = AdapTbfConfig {
            token_cost: Some(TokenCost {
                rpc_cost_bytes: 40 << 10,
                full_rpc_bytes: 1 << 20,
            }),
            ..AdapTbfConfig::default()
        };
        // Alone with a large demand: the paper's tokens stop at T_i RPCs/s whatever their size.
        assert_eq!(rate_after(paper.clone(), "tiny", 5000, 4096), 1000);
        // 100 tokens per period pay for floor(100 x 1064 K / 44 K) = 2,418 RPCs of 4 KiB:
        // 24,180 RPCs/s.
        assert_eq!(rate_after(cost.clone(), "tiny", 5000, 4096), 24_180);
        // Full-size RPCs cost one token each: the same rule as the paper's.
        assert_eq!(
            rate_after(cost, "big", 150, 1 << 20),
            rate_after(paper, "big", 150, 1 << 20)
        );
    }

    /// T = 1000 RPC/s, Δt = 100 ms: a budget of exactly 100 tokens per period.
    fn allocator() -> TargetAllocator {
        TargetAllocator::new(AdapTbfConfig::default())
    }

    #[test]
    fn initial_allocation_follows_priority() {
        // Eq. 1-2: nodes 1/1/3/5 are priorities 10/10/30/50 %; every job uses its share exactly
        // so nothing is redistributed.
        let mut a = allocator();
        let s = a.step(
            1000,
            &[
                demand("j1", 1, 10),
                demand("j2", 1, 10),
                demand("j3", 3, 30),
                demand("j4", 5, 50),
            ],
        );
        assert_eq!(s.budget_tokens, 100);
        let initial: Vec<u64> = s.jobs.iter().map(|x| x.initial_tokens).collect();
        assert_eq!(initial, vec![10, 10, 30, 50]);
        assert_eq!(tokens(&s), vec![10, 10, 30, 50]);
        assert!((s.jobs[3].priority - 0.5).abs() < 1e-12);
    }

    #[test]
    fn remainders_rotate_the_odd_token() {
        // 100 tokens over three equal jobs: 33.33 each. Eq. 23-25 plus the largest-remainder
        // correction give 34/33/33, then 33/34/33, then 33/33/34.
        let mut a = allocator();
        let jobs = [demand("a", 1, 34), demand("b", 1, 34), demand("c", 1, 34)];
        let initial = |s: &TargetStep| s.jobs.iter().map(|x| x.initial_tokens).collect::<Vec<_>>();
        assert_eq!(initial(&a.step(1000, &jobs)), vec![34, 33, 33]);
        assert_eq!(initial(&a.step(1000, &jobs)), vec![33, 34, 33]);
        assert_eq!(initial(&a.step(1000, &jobs)), vec![33, 33, 34]);
    }

    #[test]
    fn budget_carries_fractions_between_periods() {
        // 15 RPC/s over 100 ms is 1.5 tokens: budgets alternate 1, 2.
        let mut a = allocator();
        let budgets: Vec<u64> = (0..4)
            .map(|_| a.step(15, &[demand("a", 1, 1)]).budget_tokens)
            .collect();
        assert_eq!(budgets, vec![1, 2, 1, 2]);
    }

    #[test]
    fn redistribution_hand_computed() {
        // Budget 100, two jobs of equal priority, demands 10 and 80, both new (their first
        // period uses this period's allocation as the reference of eq. 3).
        // initial 50/50; u = 0.2, 1.6; surplus 40, 0 (T_s = 40);
        // DF = 0.2*0.5 = 0.1 and 1.6 + 1.6*0.5 = 2.4; shares 1.6 and 38.4 -> 1 and 38 plus the
        // leftover token to the larger remainder (0.6): 2 and 38.
        // α_RD = 50-40+2 = 12 and 50+38 = 88; records +38 and -38.
        let mut a = allocator();
        let s = a.step(1000, &[demand("a", 1, 10), demand("b", 1, 80)]);
        assert_eq!(tokens(&s), vec![12, 88]);
        assert_eq!(s.jobs[0].record, 38);
        assert_eq!(s.jobs[1].record, -38);
        assert!((s.jobs[1].utilization - 1.6).abs() < 1e-12);
        assert_eq!(a.records_sum(), 0);
    }

    #[test]
    fn recompensation_hand_computed() {
        // Continue the redistribution example (tokens 12/88, records +38/-38) with demands
        // 12 and 88: u = 12/12 = 1 and 88/88 = 1; initial 50/50; surplus 38, 0; DF 0.5, 0.5;
        // shares 19/19: α_RD = 31 and 69, records +57 and -57.
        // J+ = {a}, J- = {b}. ū_a = 12/31; C = 0.5 * (1 + (1 - 12/31)) / 2 = 0.40323;
        // reclaim from b = min(38, 57, floor(0.40323 * 69) = 27) = 27.
        // α_RC = 58 and 42, records +30 and -30.
        let mut a = allocator();
        a.step(1000, &[demand("a", 1, 10), demand("b", 1, 80)]);
        let s = a.step(1000, &[demand("a", 1, 12), demand("b", 1, 88)]);
        let rd: Vec<u64> = s.jobs.iter().map(|x| x.redistributed_tokens).collect();
        assert_eq!(rd, vec![31, 69]);
        assert_eq!(tokens(&s), vec![58, 42]);
        assert_eq!(s.jobs[0].record, 30);
        assert_eq!(s.jobs[1].record, -30);
    }

    #[test]
    fn recompensation_is_bounded_by_debt() {
        // After the redistribution example (records +38/-38) the lender bursts to 60 with
        // u = 60/12 = 5, so C = 0.5*(5+0)/2 = 1.25, clamped to 1: reclaim = min(38, 50) = 38,
        // which repays the whole debt and no more.
        let mut a = allocator();
        a.step(1000, &[demand("a", 1, 10), demand("b", 1, 80)]);
        let s = a.step(1000, &[demand("a", 1, 60), demand("b", 1, 88)]);
        assert_eq!(tokens(&s), vec![88, 12]);
        assert_eq!(s.jobs[0].record, 0);
        assert_eq!(s.jobs[1].record, 0);
    }

    #[test]
    fn idle_lender_keeps_its_claim_until_retired() {
        let mut a = TargetAllocator::new(AdapTbfConfig {
            idle_periods_max: 3,
            ..AdapTbfConfig::default()
        });
        a.step(1000, &[demand("a", 1, 10), demand("b", 1, 80)]);
        assert_eq!(a.record(&job("a")), 38);
        for _ in 0..3 {
            a.step(1000, &[demand("b", 1, 80)]);
        }
        assert_eq!(a.record(&job("a")), 38, "an idle lender keeps its record");
        a.step(1000, &[demand("b", 1, 80)]);
        assert_eq!(a.record(&job("a")), 0, "retired after idle_periods_max");
        assert_eq!(a.records_sum() + a.forgiven_tokens(), 0);
        assert_eq!(a.tracked_jobs(), 1);
    }

    #[test]
    fn jobs_max_bounds_memory() {
        let mut a = TargetAllocator::new(AdapTbfConfig {
            jobs_max: 10,
            ..AdapTbfConfig::default()
        });
        for i in 0..50 {
            a.step(
                1000,
                &[demand(&format!("j{i}"), 1, 5), demand("big", 1, 200)],
            );
            assert!(a.tracked_jobs() <= 10);
        }
        assert_eq!(a.records_sum() + a.forgiven_tokens(), 0);
    }

    #[test]
    fn rules_follow_allocation_and_priority() {
        let mut rules = DomainRules::default();
        let nodes: BTreeMap<JobId, u32> = [(job("low"), 1), (job("mid"), 3), (job("high"), 5)]
            .into_iter()
            .collect();
        let mut t = BTreeMap::new();
        t.insert(job("mid"), 30u64);
        t.insert(job("low"), 10u64);
        let cmds = rules.update(&t, &nodes, 100_000_000);
        // BTreeMap order: "low" first (goes before default), then "mid" before "low".
        assert_eq!(
            cmds,
            vec![
                "start jlow jobid={low} rate=100 rank=default",
                "start jmid jobid={mid} rate=300 rank=jlow",
            ]
        );
        t.insert(job("high"), 50);
        t.insert(job("low"), 20);
        t.remove(&job("mid"));
        let cmds = rules.update(&t, &nodes, 100_000_000);
        assert_eq!(
            cmds,
            vec![
                "stop jmid",
                "start jhigh jobid={high} rate=500 rank=jlow",
                "change jlow rate=200",
            ]
        );
        // Unchanged allocation: nothing to write.
        assert!(rules.update(&t, &nodes, 100_000_000).is_empty());
    }

    #[test]
    fn zero_tokens_still_give_a_valid_rate() {
        assert_eq!(rate_for_tokens(0, 100_000_000), 1);
        assert_eq!(rate_for_tokens(25, 100_000_000), 250);
        assert_eq!(
            rate_for_tokens(10_000_000, 1_000_000),
            u64::from(crate::limits::TBF_RATE_RPCS_PER_S_MAX)
        );
    }

    fn arb_periods() -> impl Strategy<Value = Vec<Vec<(u8, u32, u64)>>> {
        // Up to 40 periods; each with up to 6 of 8 jobs, node counts 1..64, demand 0..400.
        prop::collection::vec(
            prop::collection::btree_map(0u8..8, (1u32..64, 0u64..400), 0..6)
                .prop_map(|m| m.into_iter().map(|(j, (n, d))| (j, n, d)).collect()),
            1..40,
        )
    }

    proptest! {
        #[test]
        fn allocation_invariants(periods in arb_periods(), capacity in 1u64..5000) {
            let mut a = allocator();
            for period in periods {
                let active: Vec<JobDemand> = period
                    .iter()
                    .map(|&(j, n, d)| demand(&format!("job{j}"), n, d))
                    .collect();
                let any_demand = active.iter().any(|j| j.demand_rpcs > 0);
                let before: BTreeMap<JobId, i64> =
                    active.iter().map(|j| (j.job, a.record(&j.job))).collect();
                let s = a.step(capacity, &active);
                if !active.is_empty() {
                    // Every step hands out exactly its budget.
                    prop_assert_eq!(s.jobs.iter().map(|x| x.tokens).sum::<u64>(), s.budget_tokens);
                    prop_assert_eq!(s.jobs.iter().map(|x| x.initial_tokens).sum::<u64>(), s.budget_tokens);
                }
                // Records are zero-sum (nothing retired in 40 periods).
                prop_assert_eq!(a.records_sum(), 0);
                for x in &s.jobs {
                    let r0 = before[&x.job];
                    // A job with no demand lends and never borrows.
                    if x.demand_rpcs == 0 && any_demand {
                        prop_assert!(x.record >= r0, "{:?} borrowed with no demand", x.job);
                    }
                    // A reclaim never exceeds the borrower's debt: a job tokens were reclaimed
                    // from is still a borrower (or even) afterwards, never a lender.
                    if x.tokens < x.redistributed_tokens {
                        prop_assert!(r0 < 0, "reclaimed from a non-borrower");
                        prop_assert!(x.record <= 0, "reclaim exceeded the debt of {:?}", x.job);
                    }
                }
            }
        }

        #[test]
        fn mean_initial_allocation_matches_share(
            nodes in prop::collection::vec(1u32..50, 1..6),
            capacity in 1u64..3000,
            periods in 1usize..200,
        ) {
            let mut a = allocator();
            let active: Vec<JobDemand> = nodes
                .iter()
                .enumerate()
                .map(|(i, &n)| demand(&format!("j{i}"), n, 1))
                .collect();
            let nodes_total: u32 = nodes.iter().sum();
            let mut got = vec![0u64; nodes.len()];
            let mut budget_total = 0u64;
            for _ in 0..periods {
                let s = a.step(capacity, &active);
                budget_total += s.budget_tokens;
                for (g, x) in got.iter_mut().zip(&s.jobs) {
                    *g += x.initial_tokens;
                }
            }
            for (i, &n) in nodes.iter().enumerate() {
                let exact = budget_total as f64 * n as f64 / nodes_total as f64;
                prop_assert!((got[i] as f64 - exact).abs() <= 1.0 + 1e-6,
                    "job {} got {} of exact {}", i, got[i], exact);
            }
        }
    }

    /// `decide` as it was before job ids were looked up in sorted lists (maps of job ids for
    /// node counts and token sums), kept as the reference the sorted path must equal.
    fn decide_with_maps(c: &mut AdapTbf, observation: &Observation) -> Decision {
        if c.config.token_cost.is_some() {
            c.rpc_size.observe(observation);
        }
        let nodes: BTreeMap<JobId, u32> = observation
            .jobs
            .iter()
            .map(|j| (j.job, j.node_count))
            .collect();
        let mut writes = Vec::new();
        for domain in &observation.domains {
            let mut tokens: BTreeMap<JobId, u64> = BTreeMap::new();
            for target in &domain.targets {
                let active: Vec<JobDemand> = target
                    .jobs
                    .iter()
                    .filter(|s| match c.config.demand {
                        DemandSource::Served => s.rpcs_served > 0,
                        DemandSource::Arrived => s.rpcs_arrived > 0,
                    })
                    .map(|s| JobDemand {
                        job: s.job,
                        nodes: nodes.get(&s.job).copied().unwrap_or(1),
                        demand_rpcs: c.demand_of(s),
                    })
                    .collect();
                let config = c.config.clone();
                let allocator = c
                    .targets
                    .entry(target.ost)
                    .or_insert_with(|| TargetAllocator::new(config));
                let step = allocator.step(target.capacity_rpcs_per_s, &active);
                for a in &step.jobs {
                    *tokens.entry(a.job).or_default() += a.tokens;
                }
                c.last_steps.insert(target.ost, step);
            }
            let rpcs: BTreeMap<JobId, u64> = tokens
                .iter()
                .map(|(job, &t)| (*job, c.rpcs_of(job, t)))
                .collect();
            let rules = c.rules.entry(domain.domain).or_default();
            writes.extend(
                rules
                    .update(&rpcs, &nodes, c.config.period_ns)
                    .into_iter()
                    .map(|text| DomainWrite {
                        domain: domain.domain,
                        write: ControlWrite::tbf_rule(text),
                    }),
            );
        }
        Decision::of_writes(writes)
    }

    /// One period's input for the differential test: per domain, per target, per job of a
    /// pool (served, arrived, bytes); the known jobs (pool index, nodes), in any order,
    /// possibly twice, possibly missing jobs the targets show.
    type ArbPeriod = (
        Vec<Vec<BTreeMap<usize, (u64, u64, u64)>>>,
        Vec<(usize, u32)>,
        bool,
    );

    fn arb_observed_periods() -> impl Strategy<Value = Vec<ArbPeriod>> {
        let target =
            proptest::collection::btree_map(0usize..10, (0u64..40, 0u64..40, 0u64..1 << 22), 0..10);
        let domain = proptest::collection::vec(target, 1..3);
        proptest::collection::vec(
            (
                proptest::collection::vec(domain, 1..3),
                proptest::collection::vec((0usize..10, 1u32..9), 0..14),
                any::<bool>(),
            ),
            1..25,
        )
    }

    proptest! {
        /// The sorted-list decision equals the map one byte for byte (every write, every
        /// step), whatever the order of the known jobs, with jobs listed twice or not at
        /// all, over several domains, with plain and cost-weighted tokens and either demand.
        #[test]
        fn decisions_equal_the_map_reference(
            periods in arb_observed_periods(),
            cost in any::<bool>(),
            arrived in any::<bool>(),
        ) {
            use super::super::{DomainObservation, JobMeta, TargetObservation};
            let pool: Vec<JobId> = (0..10).map(|i| job(&format!("job{}", (i * 7) % 10))).collect();
            let config = AdapTbfConfig {
                demand: if arrived { DemandSource::Arrived } else { DemandSource::Served },
                token_cost: cost.then_some(TokenCost {
                    rpc_cost_bytes: 64 << 10,
                    full_rpc_bytes: 1 << 20,
                }),
                ..AdapTbfConfig::default()
            };
            let mut sorted = AdapTbf::new(config.clone());
            let mut maps = AdapTbf::new(config);
            for (k, (domains, known, sort_known)) in periods.into_iter().enumerate() {
                let mut ost = 0u32;
                let domains: Vec<DomainObservation> = domains
                    .into_iter()
                    .enumerate()
                    .map(|(d, targets)| DomainObservation {
                        domain: DomainId(d as u32),
                        targets: targets
                            .into_iter()
                            .map(|jobs| {
                                ost += 1;
                                TargetObservation {
                                    ost: OstId(ost),
                                    queue_len_rpcs: 0,
                                    device_queue_rpcs: 0,
                                    device_time_in_queue_ns: 0,
                                    capacity_rpcs_per_s: 400,
                                    jobs: jobs
                                        .into_iter()
                                        .map(|(i, (served, arrived, bytes))| JobTargetStats {
                                            job: pool[i],
                                            rpcs_arrived: arrived,
                                            rpcs_served: served,
                                            bytes_served: bytes,
                                        })
                                        .collect(),
                                }
                            })
                            .collect(),
                    })
                    .collect();
                let mut jobs: Vec<JobMeta> = known
                    .into_iter()
                    .map(|(i, n)| JobMeta {
                        job: pool[i],
                        node_count: n,
                        weight: n,
                    })
                    .collect();
                if sort_known {
                    jobs.sort_by_key(|m| m.job);
                    jobs.dedup_by_key(|m| m.job);
                }
                let observation = Observation {
                    now_ns: (k as u64 + 1) * 100_000_000,
                    period_ns: 100_000_000,
                    domains,
                    jobs,
                    clients: Vec::new(),
                };
                if k == 0 {
                    prop_assert_eq!(sorted.setup(&observation), maps.setup(&observation));
                }
                let got = sorted.decide(&observation);
                let reference = decide_with_maps(&mut maps, &observation);
                prop_assert_eq!(got, reference);
                prop_assert_eq!(sorted.last_steps(), maps.last_steps());
            }
        }
    }
}
