//! GIFT's decision algorithm (Algorithm 1), run at the start of every decision instance:
//!
//! 1. `X` = applications doing I/O (the input);
//! 2. BSIP fair share `b_{i,bsip}` for every `i ∈ X`;
//! 3. redeem outstanding coupons into bandwidth gaps present on *all* OSTs of the application,
//!    without throttling anyone (§3.3), oldest coupon-holder first;
//! 4. (redemption raises the application's window rate, inside the ledger);
//! 5. throttle-friendly set `Y = {i : c_i ≥ τ}`, empty unless the system rate is `≥ τ` (§3.2);
//! 6. LP of §3.4 (see [`super::lp`]);
//! 7. coupons for every application of `Y` the LP put below its BSIP share;
//! 8. (issuing lowers the window rates, inside the ledger).
//!
//! A regret assessment runs first whenever a new regret assessment period has begun.
//!
//! Options beside the paper's reading (`docs/reproductions/gift.md`, "The authors'
//! artifact"): the share unit and redistribution ([`ShareOptions`]), constraint (3) of §3.4
//! on or off, the application window as the paper's receding window or the artifact's fixed
//! cap on outstanding worth ([`WindowKind`]), the system gate reset at every regret assessment
//! (§3.2) or cumulative ([`SystemGate`]), and whether a throttle is clamped to the
//! application's remaining headroom ([`ThrottleLimit`]).

use super::coupons::{AppSummary, CouponLedger};
use super::lp::{self, LpSolver, LpSpec};
use super::share::{bsip_fractions, pofs_bytes_per_s, redistribute, repair, ShareOptions};
use super::{AllocError, Allocation, Allocator, IntervalInput, Prepared};

/// Seconds per hour, for node-hours.
const S_PER_HOUR: f64 = 3600.0;

/// What an application's redemption rate `c_i` is measured over (§3.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WindowKind {
    /// The paper's receding window over the last `N` units of worth issued (§3.2); the
    /// unfilled part counts as redeemed.
    #[default]
    Receding,
    /// The artifact: a new application starts with 1.0 issued and 1.0 redeemed, issuing lowers
    /// "redeemed", redeeming raises it, nothing decays. `c_i = 1 - (issued - redeemed) / N`
    /// over the application's whole life: a fixed cap of `(1 - τ) N` on outstanding worth.
    Cap,
}

/// The system-level gate of §3.2 ("the system only hands out coupons until its redemption
/// rate is above τ").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SystemGate {
    /// The paper: a receding window of `system_window_coupons` over coupons issued since the
    /// last regret assessment, reset at each assessment.
    #[default]
    Reset,
    /// The artifact: redeemed / issued over every coupon ever issued, never reset (1 before
    /// the first coupon). After any issuance no application is throttled again until `τ` of
    /// everything ever issued is redeemed.
    Cumulative,
}

/// How far below its BSIP share one decision may throttle an application.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ThrottleLimit {
    /// `max(B_thres, remaining headroom)`: the throttle is also clamped so that the coupon
    /// cannot take the application's rate below `τ`, i.e. its unredeemed worth stays within
    /// `(1 - τ) N` (§3.2: "more coupons are issued only until `c_i(k) ≥ τ`", which "ensures
    /// that unfairness is bounded for each application"). The artifact does the same.
    #[default]
    Headroom,
    /// `B_thres` alone, whatever the headroom: one decision can issue a coupon far larger than
    /// `(1 - τ) N` (Algorithm 1 read without §3.2's bound).
    BThres,
}

/// GIFT's parameters (Table 2 and §3.2-3.5).
#[derive(Clone, Debug, PartialEq)]
pub struct GiftConfig {
    /// `τ`: minimum redemption rate for an application to be throttle-friendly and for the
    /// system to throttle at all (paper and authors' code: 0.8).
    pub tau: f64,
    /// `B_thres`: largest fraction of its BSIP share an application can be throttled by
    /// (authors' code: 0.1).
    pub b_thres: f64,
    /// Worth of one coupon unit in bytes (authors' code: 1e-6 of the normalized bandwidth; here
    /// 1e-6 of `reference_ost_bytes_per_s` for one decision interval by default).
    pub coupon_unit_bytes: f64,
    /// `N`: application receding window, in coupon units (authors' code: 1e6).
    pub window_coupons: u64,
    /// System receding window, in coupon units (the paper uses one window length; default `N`).
    pub system_window_coupons: u64,
    /// Regret assessment period (the paper assesses daily or at the end of a run).
    pub regret_period_ns: u64,
    /// System regret budget in node-hours (`f64::INFINITY` for unbounded). When it is spent,
    /// GIFT stops throttling: it could not compensate unredeemed coupons any more.
    pub regret_budget_node_hours: f64,
    /// Most applications with coupon state.
    pub apps_max: usize,
    /// Most coupons held per application (window plus outstanding); an application at the
    /// bound is not throttled.
    pub coupons_per_app_max: usize,
    /// Most coupons in the system window.
    pub system_coupons_max: usize,
    /// Share unit and leftover redistribution.
    pub share: ShareOptions,
    /// Constraint (3) of §3.4: the waste reduction must cover the worth of the coupons issued.
    /// The artifact does not have it.
    pub constraint3: bool,
    pub window: WindowKind,
    pub system_gate: SystemGate,
    pub throttle_limit: ThrottleLimit,
    /// How the §3.4 LP is solved (the same optimum either way; [`LpSolver`]).
    pub lp: LpSolver,
}

/// Default reference OST bandwidth for the coupon unit: the paper's HDD OSTs (102 MB/s, §4).
pub const REFERENCE_OST_BYTES_PER_S: f64 = 102e6;
/// Default decision interval (§3.5).
pub const DECISION_INTERVAL_NS: u64 = 10_000_000_000;

impl Default for GiftConfig {
    fn default() -> Self {
        GiftConfig::with_reference(REFERENCE_OST_BYTES_PER_S, DECISION_INTERVAL_NS)
    }
}

impl GiftConfig {
    /// The authors' constants with the coupon unit set to 1e-6 of one OST of
    /// `reference_ost_bytes_per_s` for one interval of `interval_ns`, so the window `N = 1e6`
    /// units holds one OST-interval of throttled worth.
    pub fn with_reference(reference_ost_bytes_per_s: f64, interval_ns: u64) -> GiftConfig {
        let interval_s = interval_ns as f64 / crate::NS_PER_S as f64;
        GiftConfig {
            tau: 0.8,
            b_thres: 0.1,
            coupon_unit_bytes: 1e-6 * reference_ost_bytes_per_s * interval_s,
            window_coupons: 1_000_000,
            system_window_coupons: 1_000_000,
            regret_period_ns: 24 * 3600 * crate::NS_PER_S,
            regret_budget_node_hours: f64::INFINITY,
            apps_max: 100_000,
            coupons_per_app_max: 4_096,
            system_coupons_max: 1 << 20,
            share: ShareOptions::default(),
            constraint3: true,
            window: WindowKind::Receding,
            system_gate: SystemGate::Reset,
            throttle_limit: ThrottleLimit::Headroom,
            lp: LpSolver::Presolved,
        }
    }

    pub fn window_bytes(&self) -> f64 {
        self.coupon_unit_bytes * self.window_coupons as f64
    }

    /// Smallest coupon the ledger records: one coupon unit (the artifact's granularity, 1e-6
    /// of an OST-interval; 1,020 bytes with the defaults). A throttle worth less is undone
    /// (the application keeps its BSIP share): the LP's tolerances otherwise leave dust
    /// coupons of a few dozen bytes where constraint (3) binds.
    pub fn coupon_min_bytes(&self) -> f64 {
        self.coupon_unit_bytes
    }
}

/// GIFT's centralized controller state.
#[derive(Clone, Debug)]
pub struct Gift {
    config: GiftConfig,
    ledger: CouponLedger,
    /// Regret assessment period of the last decision (`now_ns / regret_period_ns`).
    period_index: Option<u64>,
}

/// Why a [`GiftConfig`] is unusable.
#[derive(Clone, Debug, PartialEq)]
pub enum GiftConfigError {
    /// `tau` or `b_thres` outside `[0, 1]`.
    OutOfUnitRange { field: &'static str, value: f64 },
    /// A size, length or period that must be positive is not.
    NotPositive { field: &'static str },
}

impl std::fmt::Display for GiftConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GiftConfigError::OutOfUnitRange { field, value } => {
                write!(f, "{field} = {value} must be in [0, 1]")
            }
            GiftConfigError::NotPositive { field } => write!(f, "{field} must be positive"),
        }
    }
}

impl std::error::Error for GiftConfigError {}

impl GiftConfig {
    pub fn validate(&self) -> Result<(), GiftConfigError> {
        for (field, value) in [("tau", self.tau), ("b_thres", self.b_thres)] {
            if !(0.0..=1.0).contains(&value) {
                return Err(GiftConfigError::OutOfUnitRange { field, value });
            }
        }
        let positive = [
            (
                "coupon_unit_bytes",
                self.coupon_unit_bytes.is_finite() && self.coupon_unit_bytes > 0.0,
            ),
            ("window_coupons", self.window_coupons > 0),
            ("system_window_coupons", self.system_window_coupons > 0),
            ("regret_period_ns", self.regret_period_ns > 0),
            (
                "regret_budget_node_hours",
                self.regret_budget_node_hours >= 0.0,
            ),
            ("coupons_per_app_max", self.coupons_per_app_max > 0),
            ("system_coupons_max", self.system_coupons_max > 0),
        ];
        match positive.into_iter().find(|(_, ok)| !ok) {
            Some((field, _)) => Err(GiftConfigError::NotPositive { field }),
            None => Ok(()),
        }
    }
}

impl Gift {
    /// # Panics
    /// If the configuration is invalid; see [`Gift::try_new`].
    pub fn new(config: GiftConfig) -> Gift {
        Gift::try_new(config).expect("valid GIFT configuration")
    }

    pub fn try_new(config: GiftConfig) -> Result<Gift, GiftConfigError> {
        config.validate()?;
        let ledger = CouponLedger::new(
            config.window_bytes(),
            config.coupon_unit_bytes * config.system_window_coupons as f64,
            config.regret_budget_node_hours,
            config.apps_max,
            config.coupons_per_app_max,
            config.system_coupons_max,
        )
        .with_kinds(config.window, config.system_gate);
        Ok(Gift {
            config,
            ledger,
            period_index: None,
        })
    }

    pub fn config(&self) -> &GiftConfig {
        &self.config
    }

    pub fn ledger(&self) -> &CouponLedger {
        &self.ledger
    }
}

impl Allocator for Gift {
    fn name(&self) -> &'static str {
        "gift"
    }

    fn regret(&self) -> Option<super::RegretSummary> {
        Some(super::RegretSummary {
            totals: self.ledger.totals(),
            outstanding_bytes: self.ledger.outstanding_bytes_total(),
            outstanding_node_hours: self.ledger.outstanding_node_hours(),
        })
    }

    fn allocate(&mut self, input: &IntervalInput) -> Result<Allocation, AllocError> {
        let p = Prepared::with_unit(input, self.config.share.unit)?;
        let n = p.apps.len();

        let period = input.now_ns / self.config.regret_period_ns;
        let mut regret_paid_node_hours = 0.0;
        if self.period_index.is_some_and(|last| period > last) {
            regret_paid_node_hours = self.ledger.assess();
        }
        self.period_index = Some(period);

        // Line 2: BSIP.
        let pofs = pofs_bytes_per_s(&p);
        let bsip = bsip_fractions(&p, &pofs);
        let mut gaps = p.gaps_bytes_per_s(&bsip);

        // Every application's coupon state, one ledger lookup each; looked up again below only
        // for the applications redemption changed.
        // `Prepared` sorts applications by job id and refuses repeats.
        let mut summaries: Vec<AppSummary> = self
            .ledger
            .summaries_of_sorted(p.apps.iter().map(|a| &a.app));

        // Line 3: redemption into gaps on all of the application's OSTs, oldest coupon first.
        let mut holders: Vec<(u64, usize)> = summaries
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.oldest_outstanding.map(|seq| (seq, i)))
            .collect();
        holders.sort_unstable();
        let mut redeemed_fraction = vec![0.0; n];
        let mut redeemed_bytes = vec![0.0; n];
        for &(_, i) in &holders {
            let a = &p.apps[i];
            let room = p
                .uses(i)
                .iter()
                .map(|&(j, d)| gaps[j].max(0.0) / d)
                .fold(1.0 - bsip[i], f64::min)
                .max(0.0);
            let per_fraction_bytes = a.demand_total_bytes_per_s * p.interval_s;
            // Only this application's own redemption changes what it owes.
            let owed = summaries[i].outstanding_bytes;
            let delta = room.min(owed / per_fraction_bytes);
            if delta <= 0.0 {
                continue;
            }
            // The ledger may settle sub-micro-byte dust beyond the request; the bandwidth given
            // stays within the gap either way.
            let done = self.ledger.redeem(&a.app, delta * per_fraction_bytes);
            summaries[i] = self.ledger.summary(&a.app);
            for &(j, d) in p.uses(i) {
                gaps[j] -= delta * d;
            }
            redeemed_fraction[i] = delta;
            redeemed_bytes[i] = done;
        }

        // Line 5: throttle-friendly set.
        let system_rate = self.ledger.system_rate();
        let system_allows = system_rate >= self.config.tau && self.ledger.budget_node_hours() > 0.0;
        let rates: Vec<f64> = summaries.iter().map(|s| s.window_rate).collect();
        let friendly: Vec<bool> = (0..n)
            .map(|i| {
                system_allows
                    && redeemed_bytes[i] == 0.0
                    && rates[i] >= self.config.tau
                    && self.ledger.has_room_given(&p.apps[i].app, &summaries[i])
            })
            .collect();

        // Line 6: LP. A throttle-friendly application may go down to (1 - B_thres) of BSIP
        // (§3.4 constraint (a)) and, with the headroom limit, no further than its remaining
        // headroom (c_i - τ) N allows (§3.2: coupons are issued "only until c_i ≥ τ").
        let mut floors: Vec<f64> = (0..n)
            .map(|i| {
                if friendly[i] {
                    let by_b_thres = bsip[i] * (1.0 - self.config.b_thres);
                    match self.config.throttle_limit {
                        ThrottleLimit::BThres => by_b_thres,
                        ThrottleLimit::Headroom => {
                            let a = &p.apps[i];
                            let headroom = self
                                .ledger
                                .headroom_at_rate_bytes(rates[i], self.config.tau);
                            let per_fraction_bytes = a.demand_total_bytes_per_s * p.interval_s;
                            by_b_thres.max(bsip[i] - headroom / per_fraction_bytes)
                        }
                    }
                } else {
                    bsip[i] + redeemed_fraction[i]
                }
            })
            .collect();
        let reference: Vec<Option<f64>> = (0..n).map(|i| friendly[i].then_some(bsip[i])).collect();
        let start: Vec<f64> = (0..n).map(|i| bsip[i] + redeemed_fraction[i]).collect();
        let e_bsip = p.effective_bytes_per_s(&bsip);
        let e_start = p.effective_bytes_per_s(&start);
        let spec = LpSpec {
            floors: &floors,
            throttle_reference: &reference,
            effective_min_bytes_per_s: Some(e_bsip),
            coupon_baseline_bytes_per_s: self.config.constraint3.then_some(e_start),
        };
        let (mut x, lp_fallback) = match lp::solve_with(&p, &spec, self.config.lp) {
            Some(x) => (x, false),
            None => (start.clone(), true),
        };
        repair(&p, &mut x, &floors);

        // Coupon granularity: a throttle worth less than one coupon unit is undone (the
        // application gets its BSIP share back). Nobody else is pushed further down to make
        // room: every friendly application's floor becomes its current level (at most BSIP),
        // so `repair` only trims expansions. Those floors are below BSIP plus redemptions,
        // which is feasible, so the repair always succeeds.
        let coupon_min = self.config.coupon_min_bytes();
        let mut undone = false;
        for i in 0..n {
            if !friendly[i] {
                continue;
            }
            let worth = (bsip[i] - x[i]) * p.apps[i].demand_total_bytes_per_s * p.interval_s;
            if worth > 0.0 && worth < coupon_min {
                x[i] = bsip[i];
                undone = true;
            }
        }
        if undone {
            for i in 0..n {
                if friendly[i] {
                    floors[i] = x[i].min(bsip[i]);
                }
            }
            repair(&p, &mut x, &floors);
        }

        // Line 7: coupons for throttled throttle-friendly applications.
        let mut issued_bytes = vec![0.0; n];
        for i in 0..n {
            if !friendly[i] {
                continue;
            }
            let throttle = bsip[i] - x[i];
            let a = &p.apps[i];
            let worth = throttle * a.demand_total_bytes_per_s * p.interval_s;
            if worth < coupon_min {
                continue;
            }
            let bsip_bytes_per_s = bsip[i] * a.demand_total_bytes_per_s;
            let node_hours_per_byte = f64::from(a.nodes) / (bsip_bytes_per_s * S_PER_HOUR);
            self.ledger
                .issue(a.app, input.now_ns, worth, node_hours_per_byte);
            issued_bytes[i] = worth;
        }

        let mut out = p.synchronous_allocation(&x, &bsip);
        for (i, a) in out.apps.iter_mut().enumerate() {
            a.redeemed_bytes = redeemed_bytes[i];
            a.issued_bytes = issued_bytes[i];
            a.throttleable = friendly[i];
            a.redemption_rate = Some(rates[i]);
        }
        out.regret_paid_node_hours = regret_paid_node_hours;
        out.system_redemption_rate = Some(system_rate);
        out.lp_fallback = lp_fallback;
        if self.config.share.redistribute {
            redistribute(&p, &mut out);
        }
        Ok(out)
    }
}
