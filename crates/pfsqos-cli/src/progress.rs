//! Progress over simulated time, shown only for runs that take a while: a bar on a terminal,
//! otherwise (a Slurm batch log, CI) one line every [`LINE_EVERY`].
//!
//! The simulator reports (simulated now, simulated end); only this driver reads the wall
//! clock, to decide whether progress is worth showing and to estimate the time left. The
//! estimate ([`time_left`]) is the wall time spent per simulated second so far, times the
//! simulated seconds left: events per simulated second vary over a run (a burst costs more
//! events than a quiet phase), so counting events misjudges it, and a short moving window
//! misjudges it more.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// Quick runs finish without a bar flashing up.
const SHOW_AFTER: Duration = Duration::from_secs(2);
const NS_PER_MS: u64 = 1_000_000;
const UPDATES_PER_RUN: u64 = 1000;

/// Wall time left, estimated from the simulated time covered: `elapsed` per `done_ns`
/// simulated, times the `end_ns - done_ns` left. `None` until some simulated time is covered
/// (no basis) and for an end not after the start.
pub fn time_left(done_ns: u64, end_ns: u64, elapsed: Duration) -> Option<Duration> {
    if done_ns == 0 || end_ns == 0 {
        return None;
    }
    let done = done_ns.min(end_ns);
    let left_ns = (end_ns - done) as f64;
    let secs = elapsed.as_secs_f64() * left_ns / done as f64;
    secs.is_finite().then(|| Duration::from_secs_f64(secs))
}

/// `90 s`, `4 min 05 s`, `2 h 03 min`: the estimate as a person reads it.
pub fn fmt_left(left: Duration) -> String {
    let s = left.as_secs();
    if s < 120 {
        format!("{s} s")
    } else if s < 7200 {
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        format!("{} h {:02} min", s / 3600, s / 60 % 60)
    }
}

/// The progress line printed off a terminal.
pub fn progress_line(label: &str, now_ns: u64, end_ns: u64, elapsed: Duration) -> String {
    let percent = if end_ns == 0 {
        100.0
    } else {
        100.0 * now_ns.min(end_ns) as f64 / end_ns as f64
    };
    let left = time_left(now_ns, end_ns, elapsed).map_or("unknown".to_string(), fmt_left);
    format!(
        "{label}: {percent:.0}% ({:.1} of {:.1} s simulated), {:.0} s elapsed, about {left} left",
        now_ns.min(end_ns) as f64 / 1e9,
        end_ns as f64 / 1e9,
        elapsed.as_secs_f64()
    )
}

pub struct Progress {
    label: String,
    started: Instant,
    /// Whether stderr is a terminal: a bar there, lines otherwise.
    terminal: bool,
    /// When the last line was printed (off a terminal).
    last_line: Option<Instant>,
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
            terminal: std::io::stderr().is_terminal(),
            last_line: None,
            bar: None,
            next_update_ns: 0,
        }
    }

    /// Called by the engine with simulated times in nanoseconds.
    pub fn update(&mut self, now_ns: u64, end_ns: u64) {
        if now_ns < self.next_update_ns {
            return;
        }
        self.next_update_ns = now_ns.saturating_add(end_ns / UPDATES_PER_RUN);
        if !self.terminal {
            let elapsed = self.started.elapsed();
            let due = match self.last_line {
                None => elapsed >= SHOW_AFTER,
                Some(at) => at.elapsed() >= LINE_EVERY,
            };
            if due {
                self.last_line = Some(Instant::now());
                eprintln!("{}", progress_line(&self.label, now_ns, end_ns, elapsed));
            }
            return;
        }
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
            "{prefix:>10} [{wide_bar:.cyan/blue}] {percent:>3}% {sim} simulated, about {left} left",
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
        .with_key(
            "left",
            |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                // Positions are simulated milliseconds: the estimate is on simulated time.
                let left = time_left(
                    state.pos().saturating_mul(NS_PER_MS),
                    state.len().unwrap_or(0).saturating_mul(NS_PER_MS),
                    state.elapsed(),
                );
                let _ = write!(w, "{}", left.map_or("?".to_string(), fmt_left));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_on_simulated_time_covered() {
        let s = Duration::from_secs;
        // 42 % of simulated time in 7 s: about 9.7 s left, whatever the events were.
        let left = time_left(42, 100, s(7)).unwrap();
        assert!((left.as_secs_f64() - 7.0 * 58.0 / 42.0).abs() < 1e-9);
        assert_eq!(time_left(50, 100, s(10)), Some(s(10)));
        assert_eq!(time_left(100, 100, s(10)), Some(s(0)));
        // Past the end counts as the end; nothing covered has no estimate.
        assert_eq!(time_left(150, 100, s(10)), Some(s(0)));
        assert_eq!(time_left(0, 100, s(10)), None);
        assert_eq!(time_left(0, 0, s(10)), None);
        assert_eq!(time_left(u64::MAX / 2, u64::MAX, s(1)), Some(s(1)));
    }

    #[test]
    fn lines_say_percent_simulated_time_and_estimate() {
        let line = progress_line(
            "adaptbf",
            30_000_000_000,
            120_000_000_000,
            Duration::from_secs(5),
        );
        assert_eq!(
            line,
            "adaptbf: 25% (30.0 of 120.0 s simulated), 5 s elapsed, about 15 s left"
        );
        assert!(progress_line("x", 0, 10, Duration::from_secs(3)).ends_with("about unknown left"));
        assert_eq!(fmt_left(Duration::from_secs(245)), "4 min 05 s");
        assert_eq!(fmt_left(Duration::from_secs(7380)), "2 h 03 min");
    }
}
