//! GIFT's coupon ledger (§3.2-3.3): coupons per application, receding windows of redemption
//! per application and for the system, regret assessment and the regret budget.
//!
//! * A coupon records the worth (bytes) an application lost to throttling in one interval.
//!   Redemption pays it back oldest coupon first (partially, fully, or several at once).
//! * The receding window of an application covers its most recent `window_bytes` of issued
//!   coupon worth (`N` coupon units). Its redemption rate is
//!   `c_i = (redeemed worth in the window + unfilled part of the window) / window`: the unfilled
//!   part counts as redeemed, so an application without history starts at 1 and is
//!   throttle-friendly, issuing lowers the rate (Algorithm 1 line 8), redeeming raises it
//!   (line 4), and an application can owe at most about `(1 - τ) N` before it stops being
//!   throttled.
//! * The system window is the same over all applications' coupons issued since the last regret
//!   assessment (§3.2: reset every regret assessment period).
//! * At a regret assessment every unredeemed coupon is paid in compute node-hours from the
//!   regret budget, oldest first, as far as the budget goes; what the budget cannot pay stays
//!   outstanding (still redeemable). A paid coupon stays in its application's window as not
//!   redeemed.
//!
//! Conservation, checked by tests: worth issued = redeemed + outstanding + paid.
//!
//! The authors' artifact measures both rates differently ([`WindowKind::Cap`],
//! [`SystemGate::Cumulative`]); [`CouponLedger::with_kinds`] selects them.

use std::collections::{BTreeMap, VecDeque};

use super::gift::{SystemGate, WindowKind};
use crate::model::JobId;

/// Worth below which a coupon's remainder counts as settled (floating-point dust).
const DUST_BYTES: f64 = 1e-6;

/// One coupon.
#[derive(Clone, Debug, PartialEq)]
pub struct Coupon {
    pub app: JobId,
    pub issued_ns: u64,
    pub worth_bytes: f64,
    pub redeemed_bytes: f64,
    pub paid_bytes: f64,
    /// Node-hours owed per unredeemed byte: the application's nodes idle while the throttled
    /// bytes are written at its BSIP bandwidth (`nodes / (bsip bandwidth · 3600)`).
    pub node_hours_per_byte: f64,
    in_app_list: bool,
    in_system_window: bool,
}

impl Coupon {
    pub fn outstanding_bytes(&self) -> f64 {
        (self.worth_bytes - self.redeemed_bytes - self.paid_bytes).max(0.0)
    }
}

/// Lifetime totals of the ledger.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LedgerTotals {
    pub issued_bytes: f64,
    pub redeemed_bytes: f64,
    pub paid_bytes: f64,
    pub paid_node_hours: f64,
    pub assessments: u64,
}

#[derive(Clone, Debug)]
struct AppLedger {
    /// Coupon sequence numbers in issue order: everything in the window plus every older
    /// coupon still outstanding.
    coupons: VecDeque<u64>,
    /// What a decision asks of every application, computed once whenever `coupons` or one of
    /// its coupons changes ([`CouponLedger::refresh_app`]) rather than by walking the deque
    /// at every query: a decision queries every application, a few of which changed.
    summary: AppSummary,
}

impl Default for AppLedger {
    fn default() -> Self {
        AppLedger {
            coupons: VecDeque::new(),
            summary: AppSummary::EMPTY,
        }
    }
}

/// One application's coupon state as a decision reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AppSummary {
    /// `c_i(k)` over the receding window (not the cap; see [`CouponLedger::app_rate`]).
    pub window_rate: f64,
    /// Worth not yet redeemed nor paid.
    pub outstanding_bytes: f64,
    /// Sequence number of the oldest coupon with outstanding worth (redemption order).
    pub oldest_outstanding: Option<u64>,
    /// Coupons held (window plus outstanding).
    pub coupons_held: usize,
}

impl AppSummary {
    /// An application without coupons.
    pub const EMPTY: AppSummary = AppSummary {
        window_rate: 1.0,
        outstanding_bytes: 0.0,
        oldest_outstanding: None,
        coupons_held: 0,
    };
}

/// Coupon state across decision intervals.
#[derive(Clone, Debug)]
pub struct CouponLedger {
    window_bytes: f64,
    system_window_bytes: f64,
    coupons_per_app_max: usize,
    system_coupons_max: usize,
    apps_max: usize,
    arena: BTreeMap<u64, Coupon>,
    next_seq: u64,
    apps: BTreeMap<JobId, AppLedger>,
    system: VecDeque<u64>,
    budget_node_hours: f64,
    totals: LedgerTotals,
    window_kind: WindowKind,
    system_gate: SystemGate,
    /// Per application, lifetime `(issued, redeemed)` worth, for [`WindowKind::Cap`] (never
    /// forgotten, as in the artifact; at most `apps_max` applications).
    lifetime: BTreeMap<JobId, (f64, f64)>,
}

impl CouponLedger {
    /// `window_bytes`: `N` times the coupon unit; `budget_node_hours`: the system regret budget
    /// (infinite for an unbounded one).
    pub fn new(
        window_bytes: f64,
        system_window_bytes: f64,
        budget_node_hours: f64,
        apps_max: usize,
        coupons_per_app_max: usize,
        system_coupons_max: usize,
    ) -> CouponLedger {
        assert!(window_bytes > 0.0 && system_window_bytes > 0.0);
        CouponLedger {
            window_bytes,
            system_window_bytes,
            coupons_per_app_max: coupons_per_app_max.max(1),
            system_coupons_max: system_coupons_max.max(1),
            apps_max,
            arena: BTreeMap::new(),
            next_seq: 0,
            apps: BTreeMap::new(),
            system: VecDeque::new(),
            budget_node_hours,
            totals: LedgerTotals::default(),
            window_kind: WindowKind::Receding,
            system_gate: SystemGate::Reset,
            lifetime: BTreeMap::new(),
        }
    }

    /// Selects how the application and system redemption rates are measured.
    pub fn with_kinds(mut self, window: WindowKind, gate: SystemGate) -> CouponLedger {
        self.window_kind = window;
        self.system_gate = gate;
        self
    }

    /// [`Self::summary`] of every application of `apps`, which must be sorted by job id
    /// without repeats: one merged pass over the ledger instead of a lookup each.
    pub fn summaries_of_sorted<'a>(
        &self,
        apps: impl IntoIterator<Item = &'a JobId>,
    ) -> Vec<AppSummary> {
        let mut held = self.apps.iter().peekable();
        let mut previous: Option<&JobId> = None;
        apps.into_iter()
            .map(|app| {
                assert!(previous.is_none_or(|p| p < app), "sorted, without repeats");
                previous = Some(app);
                while held.next_if(|(k, _)| *k < app).is_some() {}
                let mut summary = match held.peek() {
                    Some((k, l)) if *k == app => l.summary,
                    _ => AppSummary::EMPTY,
                };
                if self.window_kind == WindowKind::Cap {
                    summary.window_rate = self.app_rate(app);
                }
                summary
            })
            .collect()
    }

    /// Worth the application can still be issued before its rate would fall below `tau`:
    /// `(c_i - τ) N`, at least 0. Issuing `w` lowers the rate by at most `w / N` (by exactly
    /// that in [`WindowKind::Cap`]; in the receding window a coupon may also push old
    /// unredeemed worth out), so staying within it keeps the unredeemed worth in the window
    /// at most `(1 - τ) N`.
    pub fn headroom_bytes(&self, app: &JobId, tau: f64) -> f64 {
        self.headroom_at_rate_bytes(self.app_rate(app), tau)
    }

    /// [`Self::headroom_bytes`] of an application whose rate is `rate` (as returned by
    /// [`Self::app_rate`] or [`Self::summary`]).
    pub fn headroom_at_rate_bytes(&self, rate: f64, tau: f64) -> f64 {
        ((rate - tau) * self.window_bytes).max(0.0)
    }

    /// Worth counted against the application's window: unredeemed worth in the receding
    /// window, or lifetime issued minus redeemed with the cap (`(1 - c_i) N`).
    pub fn unredeemed_in_window_bytes(&self, app: &JobId) -> f64 {
        (1.0 - self.app_rate(app)) * self.window_bytes
    }

    pub fn totals(&self) -> LedgerTotals {
        self.totals
    }

    /// Node-hours left in the regret budget.
    pub fn budget_node_hours(&self) -> f64 {
        self.budget_node_hours
    }

    /// Worth not yet redeemed nor paid, over all applications.
    pub fn outstanding_bytes_total(&self) -> f64 {
        self.arena.values().map(Coupon::outstanding_bytes).sum()
    }

    pub fn outstanding_bytes(&self, app: &JobId) -> f64 {
        self.apps
            .get(app)
            .map_or(0.0, |l| l.summary.outstanding_bytes)
    }

    /// Node-hours the outstanding coupons would cost if assessed now.
    pub fn outstanding_node_hours(&self) -> f64 {
        self.arena
            .values()
            .map(|c| c.outstanding_bytes() * c.node_hours_per_byte)
            .sum()
    }

    /// Sequence number of the application's oldest outstanding coupon (redemption order).
    pub fn oldest_outstanding(&self, app: &JobId) -> Option<u64> {
        self.apps
            .get(app)
            .and_then(|l| l.summary.oldest_outstanding)
    }

    /// The application's state in one lookup (what [`Self::app_rate`],
    /// [`Self::outstanding_bytes`] and [`Self::oldest_outstanding`] return, each the same
    /// value), with `window_rate` replaced by [`Self::app_rate`] under the cap.
    pub fn summary(&self, app: &JobId) -> AppSummary {
        let mut summary = self.apps.get(app).map_or(AppSummary::EMPTY, |l| l.summary);
        if self.window_kind == WindowKind::Cap {
            summary.window_rate = self.app_rate(app);
        }
        summary
    }

    /// Coupons of an application still held (window plus outstanding), oldest first.
    pub fn coupons(&self, app: &JobId) -> Vec<&Coupon> {
        self.apps.get(app).map_or_else(Vec::new, |l| {
            l.coupons.iter().map(|s| &self.arena[s]).collect()
        })
    }

    /// `c_i(k)` over the application's receding window (or the artifact's cap).
    pub fn app_rate(&self, app: &JobId) -> f64 {
        if self.window_kind == WindowKind::Cap {
            // Paid worth was never redeemed: the artifact's counter knows no payment.
            return self.lifetime.get(app).map_or(1.0, |&(issued, redeemed)| {
                (1.0 - (issued - redeemed).max(0.0) / self.window_bytes).clamp(0.0, 1.0)
            });
        }
        self.apps.get(app).map_or(1.0, |l| l.summary.window_rate)
    }

    /// The system's redemption rate over coupons issued since the last assessment (or, with
    /// the cumulative gate, over every coupon ever issued).
    pub fn system_rate(&self) -> f64 {
        if self.system_gate == SystemGate::Cumulative {
            let t = &self.totals;
            return if t.issued_bytes > 0.0 {
                (t.redeemed_bytes / t.issued_bytes).clamp(0.0, 1.0)
            } else {
                1.0
            };
        }
        self.window_rate(self.system.iter().rev(), self.system_window_bytes)
    }

    fn window_rate<'a>(&self, newest_first: impl Iterator<Item = &'a u64>, window: f64) -> f64 {
        let mut covered = 0.0;
        let mut redeemed = 0.0;
        for s in newest_first {
            let c = &self.arena[s];
            let take = c.worth_bytes.min(window - covered);
            if c.worth_bytes > 0.0 {
                redeemed += c.redeemed_bytes * (take / c.worth_bytes);
            }
            covered += take;
            if covered >= window {
                break;
            }
        }
        ((redeemed + (window - covered).max(0.0)) / window).clamp(0.0, 1.0)
    }

    /// Whether another coupon can be recorded for `app` without exceeding the ledger's bounds.
    pub fn has_room(&self, app: &JobId) -> bool {
        self.has_room_with(app, self.apps.get(app).map(|l| l.coupons.len()))
    }

    /// [`Self::has_room`] given what [`Self::summary`] returned for `app` (one lookup fewer).
    pub fn has_room_given(&self, app: &JobId, summary: &AppSummary) -> bool {
        // An application without coupons has no ledger entry (`trim_app` removes it).
        let held = (summary.coupons_held > 0).then_some(summary.coupons_held);
        self.has_room_with(app, held)
    }

    fn has_room_with(&self, app: &JobId, coupons_held: Option<usize>) -> bool {
        if self.window_kind == WindowKind::Cap
            && !self.lifetime.contains_key(app)
            && self.lifetime.len() >= self.apps_max
        {
            return false;
        }
        match coupons_held {
            Some(held) => held < self.coupons_per_app_max,
            None => self.apps.len() < self.apps_max,
        }
    }

    /// Redeems up to `bytes` of the application's coupons, oldest first; returns what was
    /// redeemed.
    pub fn redeem(&mut self, app: &JobId, bytes: f64) -> f64 {
        let Some(l) = self.apps.get(app) else {
            return 0.0;
        };
        let mut left = bytes.max(0.0);
        let mut done = 0.0;
        for s in &l.coupons {
            if left <= 0.0 {
                break;
            }
            let c = self.arena.get_mut(s).expect("listed coupon exists");
            let mut take = c.outstanding_bytes().min(left);
            // Snap dust so coupons settle exactly.
            if c.outstanding_bytes() - take < DUST_BYTES {
                take = c.outstanding_bytes();
            }
            c.redeemed_bytes += take;
            left -= take;
            done += take;
        }
        self.totals.redeemed_bytes += done;
        if let Some(t) = self.lifetime.get_mut(app) {
            t.1 += done;
        }
        self.trim_app(app);
        done
    }

    /// Records a coupon of `worth_bytes` for `app`.
    pub fn issue(&mut self, app: JobId, now_ns: u64, worth_bytes: f64, node_hours_per_byte: f64) {
        if worth_bytes <= 0.0 || !worth_bytes.is_finite() {
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.arena.insert(
            seq,
            Coupon {
                app,
                issued_ns: now_ns,
                worth_bytes,
                redeemed_bytes: 0.0,
                paid_bytes: 0.0,
                node_hours_per_byte,
                in_app_list: true,
                in_system_window: true,
            },
        );
        self.apps.entry(app).or_default().coupons.push_back(seq);
        self.system.push_back(seq);
        self.totals.issued_bytes += worth_bytes;
        if self.window_kind == WindowKind::Cap {
            self.lifetime.entry(app).or_default().0 += worth_bytes;
        }
        self.trim_app(&app);
        self.trim_system();
    }

    /// Regret assessment: pays every outstanding coupon in node-hours, oldest first, while the
    /// budget lasts, and resets the system window. Returns the node-hours paid.
    pub fn assess(&mut self) -> f64 {
        let mut paid_hours = 0.0;
        for c in self.arena.values_mut() {
            let owed_bytes = c.outstanding_bytes();
            if owed_bytes <= 0.0 {
                continue;
            }
            let owed_hours = owed_bytes * c.node_hours_per_byte;
            let (bytes, hours) = if owed_hours <= self.budget_node_hours {
                (owed_bytes, owed_hours)
            } else if c.node_hours_per_byte > 0.0 {
                (
                    self.budget_node_hours / c.node_hours_per_byte,
                    self.budget_node_hours,
                )
            } else {
                (owed_bytes, 0.0)
            };
            if bytes <= 0.0 {
                break;
            }
            c.paid_bytes += bytes;
            self.budget_node_hours -= hours;
            paid_hours += hours;
            self.totals.paid_bytes += bytes;
        }
        self.totals.paid_node_hours += paid_hours;
        self.totals.assessments += 1;
        for s in std::mem::take(&mut self.system) {
            if let Some(c) = self.arena.get_mut(&s) {
                c.in_system_window = false;
            }
            self.collect(s);
        }
        let apps: Vec<JobId> = self.apps.keys().copied().collect();
        for a in apps {
            self.trim_app(&a);
        }
        paid_hours
    }

    /// Drops coupons that are settled and older than the application's window.
    fn trim_app(&mut self, app: &JobId) {
        let Some(l) = self.apps.get_mut(app) else {
            return;
        };
        // Worth covered by coupons newer than index k, walking from the newest.
        let mut covered = 0.0;
        let mut keep_from = l.coupons.len();
        for (k, s) in l.coupons.iter().enumerate().rev() {
            keep_from = k;
            if covered >= self.window_bytes {
                keep_from = k + 1;
                break;
            }
            covered += self.arena[s].worth_bytes;
        }
        // Older than the window: drop from the front while settled; an outstanding coupon keeps
        // itself and everything newer (redemption is oldest first).
        let mut dropped = Vec::new();
        while let Some(&s) = l.coupons.front() {
            if keep_from == 0 || self.arena[&s].outstanding_bytes() > 0.0 {
                break;
            }
            l.coupons.pop_front();
            keep_from -= 1;
            dropped.push(s);
        }
        let empty = l.coupons.is_empty();
        for s in dropped {
            if let Some(c) = self.arena.get_mut(&s) {
                c.in_app_list = false;
            }
            self.collect(s);
        }
        if empty {
            self.apps.remove(app);
        } else {
            self.refresh_app(app);
        }
    }

    /// Recomputes the application's [`AppSummary`] by walking its deque, with the same
    /// arithmetic in the same order as a walk at every query would (so every decision is
    /// bit-identical to one made that way; `summary_matches_a_walk_on_random_histories`).
    /// Called after every change to the application's coupons: they change only in
    /// [`Self::issue`], [`Self::redeem`] and [`Self::assess`], each of which ends in
    /// [`Self::trim_app`].
    fn refresh_app(&mut self, app: &JobId) {
        let Some(l) = self.apps.get(app) else {
            return;
        };
        let summary = AppSummary {
            window_rate: self.window_rate(l.coupons.iter().rev(), self.window_bytes),
            outstanding_bytes: l
                .coupons
                .iter()
                .map(|s| self.arena[s].outstanding_bytes())
                .sum(),
            oldest_outstanding: l
                .coupons
                .iter()
                .copied()
                .find(|s| self.arena[s].outstanding_bytes() > 0.0),
            coupons_held: l.coupons.len(),
        };
        self.apps.get_mut(app).expect("looked up above").summary = summary;
    }

    fn trim_system(&mut self) {
        let mut covered = 0.0;
        let mut keep = 0;
        for s in self.system.iter().rev() {
            if covered >= self.system_window_bytes {
                break;
            }
            covered += self.arena[s].worth_bytes;
            keep += 1;
        }
        let keep = keep.min(self.system_coupons_max);
        while self.system.len() > keep {
            let s = self.system.pop_front().expect("non-empty");
            if let Some(c) = self.arena.get_mut(&s) {
                c.in_system_window = false;
            }
            self.collect(s);
        }
    }

    fn collect(&mut self, seq: u64) {
        if let Some(c) = self.arena.get(&seq) {
            if !c.in_app_list && !c.in_system_window {
                self.arena.remove(&seq);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(n: &str) -> JobId {
        JobId::new(n).unwrap()
    }

    fn ledger() -> CouponLedger {
        CouponLedger::new(100.0, 100.0, f64::INFINITY, 100, 100, 100)
    }

    #[test]
    fn rates_start_at_one_fall_on_issue_rise_on_redeem() {
        let mut l = ledger();
        let a = job("a");
        assert_eq!(l.app_rate(&a), 1.0);
        l.issue(a, 0, 30.0, 0.0);
        assert!((l.app_rate(&a) - 0.7).abs() < 1e-12);
        assert!((l.system_rate() - 0.7).abs() < 1e-12);
        assert_eq!(l.redeem(&a, 10.0), 10.0);
        assert!((l.app_rate(&a) - 0.8).abs() < 1e-12);
        // A second coupon pushes part of the first out of the window.
        l.issue(a, 1, 90.0, 0.0);
        // Window: 90 (0 redeemed) + 10 of the first (1/3 redeemed).
        assert!((l.app_rate(&a) - 10.0 / 3.0 / 100.0).abs() < 1e-12);
        // Redemption goes oldest first: 20 settles the first coupon.
        assert_eq!(l.redeem(&a, 25.0), 25.0);
        assert_eq!(l.coupons(&a)[0].outstanding_bytes(), 0.0);
        assert_eq!(l.coupons(&a)[1].redeemed_bytes, 5.0);
    }

    #[test]
    fn assessment_pays_within_budget_and_resets_system_window() {
        let mut l = CouponLedger::new(100.0, 100.0, 1.5, 100, 100, 100);
        let (a, b) = (job("a"), job("b"));
        l.issue(a, 0, 40.0, 0.025); // 1 node-hour
        l.issue(b, 0, 40.0, 0.025); // 1 node-hour
        let paid = l.assess();
        assert!((paid - 1.5).abs() < 1e-12);
        assert_eq!(l.budget_node_hours(), 0.0);
        assert_eq!(l.outstanding_bytes(&a), 0.0);
        assert!((l.outstanding_bytes(&b) - 20.0).abs() < 1e-9);
        assert_eq!(l.system_rate(), 1.0);
        // Paid coupons still count as unredeemed in the application's window.
        assert!((l.app_rate(&a) - 0.6).abs() < 1e-12);
        let t = l.totals();
        assert!(
            (t.issued_bytes - t.redeemed_bytes - t.paid_bytes - l.outstanding_bytes_total()).abs()
                < 1e-9
        );
    }

    /// The walks the ledger did at every query without [`AppSummary`]s: the reference the summaries are tested against.
    fn walked(l: &CouponLedger, app: &JobId) -> AppSummary {
        match l.apps.get(app) {
            None => AppSummary::EMPTY,
            Some(a) => AppSummary {
                window_rate: l.window_rate(a.coupons.iter().rev(), l.window_bytes),
                outstanding_bytes: a
                    .coupons
                    .iter()
                    .map(|s| l.arena[s].outstanding_bytes())
                    .sum(),
                oldest_outstanding: a
                    .coupons
                    .iter()
                    .copied()
                    .find(|s| l.arena[s].outstanding_bytes() > 0.0),
                coupons_held: a.coupons.len(),
            },
        }
    }

    fn same_bits(a: &AppSummary, b: &AppSummary) -> bool {
        a.window_rate.to_bits() == b.window_rate.to_bits()
            && a.outstanding_bytes.to_bits() == b.outstanding_bytes.to_bits()
            && a.oldest_outstanding == b.oldest_outstanding
            && a.coupons_held == b.coupons_held
    }

    #[test]
    fn summary_matches_a_walk_on_random_histories() {
        use rand::{Rng, SeedableRng};
        let apps: Vec<JobId> = (0..6).map(|k| job(&format!("app{k}"))).collect();
        let mut checked = 0u64;
        for seed in 0..40u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            // Small windows and bounds so coupons leave the window and bounds bind.
            let mut l = CouponLedger::new(
                rng.random_range(5.0..200.0),
                rng.random_range(5.0..200.0),
                rng.random_range(0.0..50.0),
                5,
                rng.random_range(1..40),
                rng.random_range(1..60),
            );
            for step in 0..400u64 {
                let app = apps[rng.random_range(0..apps.len())];
                match rng.random_range(0..10) {
                    0..=4 => {
                        if l.has_room(&app) {
                            // Worth from dust to more than a window.
                            let worth = 10f64.powf(rng.random_range(-7.0..2.5));
                            l.issue(app, step, worth, rng.random_range(0.0..0.1));
                        }
                    }
                    5..=8 => {
                        let owed = l.outstanding_bytes(&app);
                        let ask = owed * rng.random_range(0.0..1.2) + rng.random_range(0.0..1e-6);
                        l.redeem(&app, ask);
                    }
                    _ => {
                        l.assess();
                    }
                }
                let merged = l.summaries_of_sorted(apps.iter());
                for (a, m) in apps.iter().zip(&merged) {
                    assert!(same_bits(m, &l.summary(a)), "seed {seed} step {step}");
                    let (kept, walk) = (l.summary(a), walked(&l, a));
                    assert!(
                        same_bits(&kept, &walk),
                        "seed {seed} step {step}: {kept:?} != {walk:?}"
                    );
                    assert_eq!(l.app_rate(a).to_bits(), walk.window_rate.to_bits());
                    assert_eq!(l.oldest_outstanding(a), walk.oldest_outstanding);
                    assert_eq!(
                        l.has_room(a),
                        l.has_room_given(a, &kept),
                        "seed {seed} step {step}"
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 40 * 400 * 6);
    }

    #[test]
    fn settled_coupons_out_of_window_are_dropped() {
        let mut l = ledger();
        let a = job("a");
        for k in 0..50 {
            l.issue(a, k, 10.0, 0.0);
            l.redeem(&a, 10.0);
        }
        assert_eq!(l.coupons(&a).len(), 10);
        assert_eq!(l.app_rate(&a), 1.0);
        assert!(l.arena.len() <= 20);
    }
}
