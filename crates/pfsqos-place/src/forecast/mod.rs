//! Time-series forecasting for iez (Wadhwa, Paul et al., IPDPS'19, Section III-A2, "ARIMA-Inspired
//! Prediction Algorithm (AIPA)"): predict an application's next I/O requests (bytes written per
//! file, stripe count, MPI rank) from its traced history.
//!
//! - [`arima`]: ARIMA(p, d, q) by conditional sum of squares and exact maximum likelihood,
//!   forecasts, differencing.
//! - `kalman`: the exact ARMA likelihood and forecasts by the Kalman filter.
//! - [`optim`]: the Nelder-Mead minimizer the fits use.
//! - [`select_order`]: the paper's order search, p, d, q in 0..=5 (216 orders), skipping fits
//!   that do not converge and keeping the least RMSE.
//! - [`predict_next`]: the helper iez calls, one value ahead with fallbacks for short histories.
//!
//! Pure: no I/O, no clock, deterministic.

pub mod arima;
mod kalman;
pub mod optim;

#[cfg(test)]
mod tests;

use std::fmt;

pub use arima::{
    fit_arima, ArimaFitOptions, ArimaModel, ArimaOrder, Estimator, ORDER_MAX, SERIES_LEN_MAX,
};

/// Why a series could not be fitted or forecast.
#[derive(Clone, Debug, PartialEq)]
pub enum ForecastError {
    /// No values.
    Empty,
    /// A NaN or infinite value at `index`.
    NonFinite { index: usize },
    /// Longer than [`SERIES_LEN_MAX`].
    TooLong { len: usize, max: usize },
    /// Shorter than the order needs ([`ArimaOrder::min_series_len`]).
    TooShort {
        len: usize,
        needed: usize,
        order: ArimaOrder,
    },
    /// p, d or q above [`ORDER_MAX`].
    OrderTooLarge(ArimaOrder),
    /// Order selection found no order that fits the series' length and converges.
    NoConvergedOrder { tried: usize },
    /// A selection setting is out of range (the message says which).
    BadOptions(&'static str),
}

impl fmt::Display for ForecastError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForecastError::Empty => write!(f, "empty series"),
            ForecastError::NonFinite { index } => {
                write!(f, "series value at index {index} is NaN or infinite")
            }
            ForecastError::TooLong { len, max } => {
                write!(f, "series of {len} values is longer than the maximum {max}")
            }
            ForecastError::TooShort { len, needed, order } => write!(
                f,
                "series of {len} values is too short for {order}: it needs at least {needed}"
            ),
            ForecastError::OrderTooLarge(order) => {
                write!(f, "{order}: p, d and q must be at most {ORDER_MAX}")
            }
            ForecastError::NoConvergedOrder { tried } => write!(
                f,
                "no ARIMA order converged ({tried} orders fitted the series' length)"
            ),
            ForecastError::BadOptions(what) => write!(f, "bad selection options: {what}"),
        }
    }
}

impl std::error::Error for ForecastError {}

/// A forecasting method: fitted on a series, then asked for values ahead.
pub trait Forecaster {
    /// The fitted model.
    type Fitted: Fitted;

    /// Fits the method to `series` (oldest first).
    fn fit(&self, series: &[f64]) -> Result<Self::Fitted, ForecastError>;
}

/// A model fitted by a [`Forecaster`].
pub trait Fitted {
    /// The `horizon` values following the fitted series.
    fn forecast(&self, horizon: usize) -> Vec<f64>;

    /// Root mean square of the in-sample one-step-ahead errors, in the series' units.
    fn in_sample_rmse(&self) -> f64;
}

/// ARIMA of a fixed order, fitted by CSS ([`fit_arima`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arima {
    pub order: ArimaOrder,
    pub options: ArimaFitOptions,
}

impl Arima {
    pub fn new(order: ArimaOrder) -> Self {
        Arima {
            order,
            options: ArimaFitOptions::default(),
        }
    }
}

impl Forecaster for Arima {
    type Fitted = ArimaModel;

    fn fit(&self, series: &[f64]) -> Result<ArimaModel, ForecastError> {
        fit_arima(series, self.order, &self.options)
    }
}

impl Fitted for ArimaModel {
    fn forecast(&self, horizon: usize) -> Vec<f64> {
        ArimaModel::forecast(self, horizon)
    }

    fn in_sample_rmse(&self) -> f64 {
        ArimaModel::in_sample_rmse(self)
    }
}

/// How [`select_order`] measures a candidate's RMSE.
///
/// The paper (Section III-A2): "we run the model on all combinations ... over our dataset ...
/// and select the combination with the least Root Mean Square Error (RMSE)", without saying
/// whether the RMSE is in-sample. In-sample one-step RMSE mostly falls as p and q grow (the
/// models are nested), so it systematically prefers large orders; its (5, 1, 2) for HACC-I/O is
/// consistent with that. The default here is therefore the out-of-sample reading: it measures
/// what iez needs (the error of the next prediction) and does not reward overfitting.
/// [`RmseCriterion::InSample`] reproduces the literal reading. Neither reliably recovers the
/// true order of a simulated series (near-unit-root ARMAs with d = 0 compete with d = 1 ones);
/// see the tests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RmseCriterion {
    /// RMSE of the one-step-ahead errors over the fitted series itself.
    InSample,
    /// Fit on the first `1 - fraction` of the series, then RMSE of the one-step-ahead errors
    /// over the last `fraction` (with the fitted coefficients, conditioning on the actual
    /// values as they arrive, no refit). The chosen order is then refitted on the whole series.
    HoldOut { fraction: f64 },
}

/// Settings of [`select_order`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SelectionOptions {
    /// Orders searched: p in `0..=p_max`, d in `0..=d_max`, q in `0..=q_max` (each ≤
    /// [`ORDER_MAX`]). The paper's grid is 5, 5, 5.
    pub p_max: usize,
    pub d_max: usize,
    pub q_max: usize,
    pub criterion: RmseCriterion,
    pub fit: ArimaFitOptions,
}

impl Default for SelectionOptions {
    fn default() -> Self {
        SelectionOptions {
            p_max: ORDER_MAX,
            d_max: ORDER_MAX,
            q_max: ORDER_MAX,
            criterion: RmseCriterion::HoldOut { fraction: 0.2 },
            fit: ArimaFitOptions::default(),
        }
    }
}

/// Result of [`select_order`].
#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    /// The chosen model, fitted on the whole series with `SelectionOptions::fit`.
    pub model: ArimaModel,
    /// Its order's RMSE under the criterion (of the CSS screening fit), in the series' units.
    pub rmse: f64,
    /// Orders whose minimum length the series (training part) meets and that were fitted.
    pub fitted: usize,
    /// Of those, the ones that converged (the candidates).
    pub converged: usize,
}

/// The paper's order selection (Section III-A2): fit every order of the grid, skip those that do
/// not converge, keep the least RMSE (see [`RmseCriterion`] for which RMSE). Orders the series is
/// too short for are skipped too. Ties keep the first order in (p, d, q) lexicographic order,
/// i.e. the smaller p, then d, then q.
///
/// The grid is screened with CSS fits ([`Estimator::Css`]: the paper does not say how its
/// candidates were fitted, and CSS costs a fifth of the exact likelihood); the chosen order is
/// then fitted on the whole series with `opts.fit` (by default exact maximum likelihood, the
/// paper's "next step"). If that final fit does not converge, the next best order is taken.
pub fn select_order(series: &[f64], opts: &SelectionOptions) -> Result<Selection, ForecastError> {
    arima::validate_series(series)?;
    if opts.p_max > ORDER_MAX || opts.d_max > ORDER_MAX || opts.q_max > ORDER_MAX {
        return Err(ForecastError::BadOptions("p_max, d_max, q_max must be ≤ 5"));
    }
    let n = series.len();
    let n_train = match opts.criterion {
        RmseCriterion::InSample => n,
        RmseCriterion::HoldOut { fraction } => {
            if !(fraction > 0.0 && fraction < 1.0) {
                return Err(ForecastError::BadOptions(
                    "hold-out fraction must be in (0, 1)",
                ));
            }
            let test = ((n as f64 * fraction).round() as usize).max(1);
            if test >= n {
                return Err(ForecastError::TooShort {
                    len: n,
                    needed: 2,
                    order: ArimaOrder::new(0, 0, 0),
                });
            }
            n - test
        }
    };
    let train = &series[..n_train];
    let screen = ArimaFitOptions {
        estimator: Estimator::Css,
        ..opts.fit
    };
    let mut fitted = 0usize;
    let mut candidates: Vec<(f64, ArimaModel)> = Vec::new();
    for order in ArimaOrder::grid(ORDER_MAX)
        .filter(|o| o.p <= opts.p_max && o.d <= opts.d_max && o.q <= opts.q_max)
    {
        if train.len() < order.min_series_len() {
            continue;
        }
        fitted += 1;
        let model = fit_arima(train, order, &screen)?;
        if !model.converged {
            continue;
        }
        let rmse = match opts.criterion {
            RmseCriterion::InSample => model.in_sample_rmse(),
            RmseCriterion::HoldOut { .. } => {
                let full =
                    ArimaModel::with_params(series, order, model.mean, &model.ar, &model.ma)?;
                // Errors for y indices n_train..n; error k of one_step_errors is y index d+p+k.
                let skip = n_train - order.d - order.p;
                let e = &full.one_step_errors()[skip..];
                debug_assert_eq!(e.len(), n - n_train);
                (e.iter().map(|v| v * v).sum::<f64>() / e.len() as f64).sqrt()
            }
        };
        if rmse.is_finite() {
            candidates.push((rmse, model));
        }
    }
    let converged = candidates.len();
    // Stable sort: equal RMSEs keep grid order.
    candidates.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (rmse, model) in candidates {
        let model = if n_train == n && opts.fit.estimator == Estimator::Css {
            model
        } else {
            let refit = fit_arima(series, model.order, &opts.fit)?;
            if !refit.converged {
                continue;
            }
            refit
        };
        return Ok(Selection {
            model,
            rmse,
            fitted,
            converged,
        });
    }
    Err(ForecastError::NoConvergedOrder { tried: fitted })
}

/// Histories shorter than this are predicted by their last value rather than by ARIMA: with the
/// 20 % hold-out, 12 values leave 10 to train on, enough for the smallest orders only.
pub const PREDICT_ARIMA_MIN_LEN: usize = 12;

/// How [`predict_next`] arrived at its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PredictionMethod {
    /// ARIMA of this order, chosen by [`select_order`].
    Arima(ArimaOrder),
    /// The last value (the ARIMA(0,1,0) forecast): the history is too short, constant, or no
    /// order converged.
    LastValue,
}

/// A one-step-ahead prediction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// The predicted next value, in the series' units. Not clamped: a caller predicting bytes
    /// should clamp at 0.
    pub value: f64,
    pub method: PredictionMethod,
    /// RMSE of the method's one-step predictions on the history: the selection's criterion for
    /// ARIMA, the root mean square of successive differences for the last value (`None` with a
    /// single value).
    pub rmse: Option<f64>,
}

impl Prediction {
    /// The ARIMA order used, if any.
    pub fn order(&self) -> Option<ArimaOrder> {
        match self.method {
            PredictionMethod::Arima(o) => Some(o),
            PredictionMethod::LastValue => None,
        }
    }
}

/// Predicts the next value of a per-run history (oldest first), e.g. the bytes an application's
/// rank wrote to one file in each past run: iez's AIPA step (Section III-A2) for one series.
///
/// - NaN/infinite values or an empty history: error.
/// - More than [`SERIES_LEN_MAX`] values: only the most recent [`SERIES_LEN_MAX`] are used.
/// - Fewer than [`PREDICT_ARIMA_MIN_LEN`] values, or all equal: the last value (HPC runs of one
///   application repeat their I/O, Section III-A2, so the last run is the natural guess).
/// - Otherwise [`select_order`] with the default options (216 orders, hold-out RMSE) and the
///   chosen model's one-step forecast; if no order converges, the last value.
pub fn predict_next(history: &[f64]) -> Result<Prediction, ForecastError> {
    let history = &history[history.len().saturating_sub(SERIES_LEN_MAX)..];
    arima::validate_series(history)?;
    let last = *history.last().expect("validated non-empty");
    let last_value = || {
        let rmse = (history.len() >= 2).then(|| {
            let sq: f64 = history.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum();
            (sq / (history.len() - 1) as f64).sqrt()
        });
        Prediction {
            value: last,
            method: PredictionMethod::LastValue,
            rmse,
        }
    };
    if history.len() < PREDICT_ARIMA_MIN_LEN || history.iter().all(|v| *v == last) {
        return Ok(last_value());
    }
    match select_order(history, &SelectionOptions::default()) {
        Ok(sel) => {
            let value = sel.model.forecast(1)[0];
            assert!(
                value.is_finite(),
                "a converged ARIMA forecasts finite values"
            );
            Ok(Prediction {
                value,
                method: PredictionMethod::Arima(sel.model.order),
                rmse: Some(sel.rmse),
            })
        }
        Err(ForecastError::NoConvergedOrder { .. }) => Ok(last_value()),
        Err(e) => Err(e),
    }
}
