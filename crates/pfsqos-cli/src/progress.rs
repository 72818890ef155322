//! A progress bar over simulated time that appears only for runs that take a while.
//!
//! The simulator reports (simulated now, simulated end); only this driver reads the wall
//! clock, to decide whether a bar is worth drawing at all.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// Quick runs finish without a bar flashing up.
const SHOW_AFTER: Duration = Duration::from_secs(2);
const NS_PER_MS: u64 = 1_000_000;
const UPDATES_PER_RUN: u64 = 1000;

pub struct Progress {
    label: String,
    started: Instant,
    /// False when stderr is not a terminal: nothing is ever drawn then.
    enabled: bool,
    bar: Option<ProgressBar>,
    /// Simulated time of the next update worth looking at: the engine may report on every
    /// event, and neither the clock nor the bar should cost per event.
    next_update_ns: u64,
}

impl Progress {
    pub fn new(label: &str) -> Progress {
        Progress {
            label: label.to_string(),
            started: Instant::now(),
            enabled: std::io::stderr().is_terminal(),
            bar: None,
            next_update_ns: 0,
        }
    }

    /// Called by the engine with simulated times in nanoseconds.
    pub fn update(&mut self, now_ns: u64, end_ns: u64) {
        if !self.enabled || now_ns < self.next_update_ns {
            return;
        }
        self.next_update_ns = now_ns.saturating_add(end_ns / UPDATES_PER_RUN);
        let len_ms = (end_ns / NS_PER_MS).max(1);
        let bar = match &self.bar {
            Some(bar) => bar,
            None => {
                if self.started.elapsed() < SHOW_AFTER {
                    return;
                }
                // Configure and position it before it can draw, so the first frame is right.
                let bar = self.make_bar(len_ms);
                bar.set_position((now_ns / NS_PER_MS).min(len_ms));
                bar.set_draw_target(ProgressDrawTarget::stderr());
                self.bar.insert(bar)
            }
        };
        if bar.length() != Some(len_ms) {
            bar.set_length(len_ms);
        }
        bar.set_position((now_ns / NS_PER_MS).min(len_ms));
    }

    fn make_bar(&self, len_ms: u64) -> ProgressBar {
        let bar = ProgressBar::with_draw_target(Some(len_ms), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template(
            "{prefix:>10} [{wide_bar:.cyan/blue}] {percent:>3}% {sim} simulated, eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "sim",
            |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(
                    w,
                    "{:.1}/{:.1} s",
                    state.pos() as f64 / 1e3,
                    state.len().unwrap_or(0) as f64 / 1e3
                );
            },
        )
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(self.label.clone());
        bar
    }

    /// Removes the bar, if one was drawn, so that what follows starts on a clean line.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Progress over the runs of a bakeoff, updated from worker threads. On a terminal: a bar.
/// Otherwise (a log, CI): one line every [`LINE_EVERY`] and one at the end, so a long bakeoff
/// shows it is alive without flooding the log.
pub struct RunsProgress {
    label: String,
    started: Instant,
    terminal: bool,
    state: std::sync::Mutex<RunsState>,
}

struct RunsState {
    bar: Option<ProgressBar>,
    last_line: Instant,
}

/// Interval of the progress lines when stderr is not a terminal.
pub const LINE_EVERY: Duration = Duration::from_secs(5);

impl RunsProgress {
    pub fn new(label: &str) -> RunsProgress {
        let now = Instant::now();
        RunsProgress {
            label: label.to_string(),
            started: now,
            terminal: std::io::stderr().is_terminal(),
            state: std::sync::Mutex::new(RunsState {
                bar: None,
                last_line: now,
            }),
        }
    }

    fn make_bar(&self, total: usize) -> ProgressBar {
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template(
            "{prefix:>8} [{wide_bar:.cyan/blue}] {pos}/{len} runs, {msg}, eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(self.label.clone());
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar
    }

    /// A run finished: `done` of `total`, of which `executed` ran (the rest were reused).
    pub fn update(&self, done: usize, total: usize, executed: usize) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if self.terminal {
            if state.bar.is_none() {
                state.bar = Some(self.make_bar(total));
            }
            let bar = state.bar.as_ref().expect("just made");
            bar.set_message(format!("{} reused", done - executed));
            bar.set_position(done as u64);
            return;
        }
        if state.last_line.elapsed() >= LINE_EVERY || done == total {
            state.last_line = Instant::now();
            eprintln!(
                "{}: {done}/{total} runs done ({} reused), {:.0} s",
                self.label,
                done - executed,
                self.started.elapsed().as_secs_f64()
            );
        }
    }

    /// Removes the bar, if one was drawn.
    pub fn finish(self) {
        if let Ok(state) = self.state.into_inner() {
            if let Some(bar) = state.bar {
                bar.finish_and_clear();
            }
        }
    }
}
