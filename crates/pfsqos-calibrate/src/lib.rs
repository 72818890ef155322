//! pfsqos-calibrate: measures the device under a directory with fio and writes a device
//! profile (`pfsqos_profile`), or converts a Lustre `obdfilter-survey` summary into one.
//!
//! A calibration lays out one file per stream, then runs the sweep `pfsqos_profile::plan`
//! planned for what is left of the budget: each point is one fio run with O_DIRECT (the page
//! cache would measure memory, not the device), libaio, `--group_reporting` and a fixed
//! measuring time. fio is run directly (never through a shell); its JSON output is parsed by
//! `pfsqos_profile::fio`, and a run fio could not complete stops the calibration with fio's
//! reason. The files are removed afterwards, also when a run fails.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use pfsqos_profile::plan::{plan, PlannedPoint, Ranges};
use pfsqos_profile::{fio, fit, obdfilter, Measured, Op, Pattern, Profile, Source, SourceKind};

/// The completion-latency percentiles asked of fio (its `--percentile_list`).
pub const PERCENTILES: &str = "1:5:10:25:50:75:90:95:99:99.9";
/// Prefix of the files a calibration creates (and removes) in the measured directory.
pub const FILE_PREFIX: &str = "pfsqos-calibrate";
pub const FILE_SIZE_MIB_MAX: u64 = 1 << 20;
/// Longest fio output read from one run.
const OUTPUT_LEN_MAX: usize = fio::OUTPUT_LEN_MAX;

/// What to measure and how long it may take.
#[derive(Clone, Debug)]
pub struct Options {
    /// Directory on the device to measure.
    pub dir: PathBuf,
    /// Wall-clock budget of the whole calibration, layout included (seconds).
    pub budget_s: u64,
    pub ranges: Ranges,
    /// Size of each stream's file (MiB): large enough that the device, not a cache, answers.
    pub file_size_mib: u64,
    /// The fio executable.
    pub fio: PathBuf,
    /// Name of the profile.
    pub name: String,
}

/// Progress of a calibration, reported before each step.
#[derive(Clone, Debug)]
pub enum Progress {
    Layout {
        files: u32,
        file_size_mib: u64,
    },
    Planned {
        points: usize,
        runtime_ms: u64,
        left_out: Vec<&'static str>,
    },
    Point {
        index: usize,
        total: usize,
        what: String,
    },
}

/// fio's version line, or why fio cannot be run.
pub fn fio_version(fio: &Path) -> Result<String, String> {
    let out = Command::new(fio)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run `{}`: {e} (install fio)", fio.display()))?;
    if !out.status.success() {
        return Err(format!("`{} --version` failed", fio.display()));
    }
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if v.is_empty() || v.len() > 64 {
        return Err(format!("`{} --version` printed no version", fio.display()));
    }
    Ok(v)
}

fn describe(p: &PlannedPoint) -> String {
    let op = match p.op {
        Op::Read => "read".to_string(),
        Op::Write => "write".to_string(),
        Op::Mixed => format!("{}% read", p.read_percent),
    };
    let pattern = match p.pattern {
        Pattern::Sequential => "sequential",
        Pattern::Random => "random",
    };
    format!(
        "{pattern} {op}, {} KiB, queue depth {}, {} stream{}",
        p.size_kib,
        p.queue_depth,
        p.streams,
        if p.streams == 1 { "" } else { "s" }
    )
}

/// fio's arguments for one point (no shell: each is one argv entry).
pub fn fio_args(dir: &Path, p: &PlannedPoint, file_size_mib: u64, runtime_ms: u64) -> Vec<String> {
    let rw = match (p.op, p.pattern) {
        (Op::Read, Pattern::Sequential) => "read",
        (Op::Write, Pattern::Sequential) => "write",
        (Op::Mixed, Pattern::Sequential) => "rw",
        (Op::Read, Pattern::Random) => "randread",
        (Op::Write, Pattern::Random) => "randwrite",
        (Op::Mixed, Pattern::Random) => "randrw",
    };
    let mut args = vec![
        format!("--name={FILE_PREFIX}"),
        format!("--directory={}", dir.display()),
        format!("--rw={rw}"),
        format!("--bs={}k", p.size_kib),
        format!("--iodepth={}", p.queue_depth),
        format!("--numjobs={}", p.streams),
        format!("--size={file_size_mib}m"),
        "--direct=1".into(),
        "--ioengine=libaio".into(),
        "--time_based=1".into(),
        format!("--runtime={runtime_ms}ms"),
        "--group_reporting=1".into(),
        "--output-format=json".into(),
        format!("--percentile_list={PERCENTILES}"),
    ];
    if p.op == Op::Mixed {
        args.push(format!("--rwmixread={}", p.read_percent));
    }
    args
}

fn run_fio(fio_path: &Path, args: &[String]) -> Result<fio::Run, String> {
    let out = Command::new(fio_path)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run fio: {e}"))?;
    let stdout = &out.stdout[..out.stdout.len().min(OUTPUT_LEN_MAX)];
    let text = String::from_utf8_lossy(stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let err: String = err.chars().take(2000).collect();
        return Err(format!("fio failed ({}): {}", out.status, err.trim()));
    }
    fio::parse(&text)
}

/// The measured point of one fio run.
pub fn measured(p: &PlannedPoint, run: &fio::Run) -> Result<Measured, String> {
    let dirs: Vec<&fio::Direction> = run.read.iter().chain(run.write.iter()).collect();
    let expected = match p.op {
        Op::Read => run.read.is_some() && run.write.is_none(),
        Op::Write => run.write.is_some() && run.read.is_none(),
        Op::Mixed => !dirs.is_empty(),
    };
    if !expected {
        return Err(format!(
            "fio moved no data for {}: the run did not complete",
            describe(p)
        ));
    }
    let bw: f64 = dirs.iter().map(|d| d.bandwidth_bytes_per_s).sum();
    let iops: f64 = dirs.iter().map(|d| d.iops).sum();
    let latency_mean_us = dirs.iter().map(|d| d.latency_mean_us * d.iops).sum::<f64>() / iops;
    let latency_quantiles_us = if dirs.len() == 1 {
        dirs[0].latency_quantiles_us.clone()
    } else {
        Vec::new()
    };
    Ok(Measured {
        op: p.op,
        pattern: p.pattern,
        read_percent: (p.op == Op::Mixed).then_some(p.read_percent),
        size_kib: p.size_kib,
        queue_depth: p.queue_depth,
        streams: p.streams,
        bandwidth_mib_s: bw / f64::from(1u32 << 20),
        latency_mean_us,
        latency_quantiles_us,
    })
}

/// Removes the calibration's files when dropped.
struct Files {
    dir: PathBuf,
    streams: u32,
}

impl Drop for Files {
    fn drop(&mut self) {
        for j in 0..self.streams {
            // fio names a job's file `<name>.<job>.<file>`.
            let _ = std::fs::remove_file(self.dir.join(format!("{FILE_PREFIX}.{j}.0")));
        }
    }
}

/// Today's date (UTC) as `YYYY-MM-DD` (days to civil date: H. Hinnant's algorithm).
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| {
            h.trim()
                .chars()
                .filter(|c| !c.is_control())
                .take(255)
                .collect()
        })
        .unwrap_or_default()
}

/// Measures `opts.dir` and returns its profile.
pub fn calibrate(opts: &Options, progress: &mut dyn FnMut(Progress)) -> Result<Profile, String> {
    let started = Instant::now();
    let version = fio_version(&opts.fio)?;
    let meta =
        std::fs::metadata(&opts.dir).map_err(|e| format!("`{}`: {e}", opts.dir.display()))?;
    if !meta.is_dir() {
        return Err(format!("`{}` is not a directory", opts.dir.display()));
    }
    // fio reads `:` in --directory as a list separator.
    if opts.dir.to_str().is_none_or(|d| d.contains(':')) {
        return Err(format!(
            "`{}`: fio cannot measure a directory whose path is not UTF-8 or holds `:`",
            opts.dir.display()
        ));
    }
    if !(1..=FILE_SIZE_MIB_MAX).contains(&opts.file_size_mib) {
        return Err(format!(
            "file size {} MiB: allowed 1..={FILE_SIZE_MIB_MAX}",
            opts.file_size_mib
        ));
    }
    let largest_kib = *opts.ranges.sizes_kib.last().ok_or("no request sizes")?;
    if largest_kib > opts.file_size_mib << 10 {
        return Err(format!(
            "requests of {largest_kib} KiB do not fit files of {} MiB",
            opts.file_size_mib
        ));
    }
    let budget_ms = opts.budget_s.saturating_mul(1000);
    // Check the plan fits before writing anything.
    plan(&opts.ranges, budget_ms)?;
    let files = Files {
        dir: opts.dir.clone(),
        streams: opts.ranges.streams_max,
    };
    // Layout: every stream's file written once, so reads read data the device holds.
    progress(Progress::Layout {
        files: files.streams,
        file_size_mib: opts.file_size_mib,
    });
    let layout = PlannedPoint {
        op: Op::Write,
        pattern: Pattern::Sequential,
        read_percent: 0,
        size_kib: 1024.min(opts.file_size_mib << 10),
        queue_depth: 4,
        streams: files.streams,
    };
    let mut args = fio_args(&opts.dir, &layout, opts.file_size_mib, 0);
    args.retain(|a| !a.starts_with("--time_based") && !a.starts_with("--runtime"));
    run_fio(&opts.fio, &args).map_err(|e| format!("laying out the files: {e}"))?;
    let spent_ms = started.elapsed().as_millis() as u64;
    let plan = plan(&opts.ranges, budget_ms.saturating_sub(spent_ms)).map_err(|e| {
        format!("after laying out the files ({spent_ms} ms) the budget is too small: {e}")
    })?;
    progress(Progress::Planned {
        points: plan.points.len(),
        runtime_ms: plan.runtime_ms,
        left_out: plan.left_out.clone(),
    });
    let mut points = Vec::with_capacity(plan.points.len());
    // fio's start-up is measured as the runs go, and each run's measuring time re-planned so
    // the rest still fits the budget (never below the plan's minimum).
    let mut overhead_ms_total = 0u64;
    for (i, p) in plan.points.iter().enumerate() {
        progress(Progress::Point {
            index: i,
            total: plan.points.len(),
            what: describe(p),
        });
        let left = (plan.points.len() - i) as u64;
        let overhead_ms = if i == 0 {
            pfsqos_profile::plan::OVERHEAD_MS_PER_POINT
        } else {
            overhead_ms_total / i as u64
        };
        let left_ms = budget_ms.saturating_sub(started.elapsed().as_millis() as u64);
        let runtime_ms = (left_ms / left)
            .saturating_sub(overhead_ms)
            .clamp(pfsqos_profile::plan::RUNTIME_MS_MIN, plan.runtime_ms);
        let t0 = Instant::now();
        let run = run_fio(
            &opts.fio,
            &fio_args(&opts.dir, p, opts.file_size_mib, runtime_ms),
        )
        .map_err(|e| format!("{}: {e}", describe(p)))?;
        overhead_ms_total += (t0.elapsed().as_millis() as u64).saturating_sub(runtime_ms);
        points.push(measured(p, &run).map_err(|e| format!("{}: {e}", describe(p)))?);
    }
    drop(files);
    let left_out = if plan.left_out.is_empty() {
        "none".to_string()
    } else {
        plan.left_out.join("; ")
    };
    let source = Source {
        kind: SourceKind::Fio,
        citation: format!("{version}, O_DIRECT, libaio, measured by pfsqos calibrate"),
        date: today(),
        method: format!(
            "pfsqos calibrate: {} fio runs of at most {} ms each on {} files of {} MiB (one per \
             stream), budget {} s; groups left out for the budget: {left_out}. Parameters \
             derived from the measured points as pfsqos_profile::fit documents.",
            plan.points.len(),
            plan.runtime_ms,
            opts.ranges.streams_max,
            opts.file_size_mib,
            opts.budget_s
        ),
        host: hostname(),
        target: opts.dir.display().to_string(),
    };
    fit::fit(
        &opts.name,
        "Measured with fio by pfsqos calibrate.",
        source,
        points,
    )
}

/// Converts an obdfilter-survey summary (`text`, read from `file`) into a profile.
pub fn from_obdfilter_survey(text: &str, file: &str, name: &str) -> Result<Profile, String> {
    let rows = obdfilter::parse(text).map_err(|e| format!("{file}: {e}"))?;
    let points = obdfilter::measured(&rows).map_err(|e| format!("{file}: {e}"))?;
    let header = text
        .lines()
        .find(|l| l.contains("Obdfilter-survey"))
        .map(|l| {
            l.chars()
                .filter(|c| !c.is_control())
                .take(200)
                .collect::<String>()
        })
        .unwrap_or_default();
    let source = Source {
        kind: SourceKind::ObdfilterSurvey,
        citation: format!("Lustre lustre-iokit obdfilter-survey summary `{file}` {header}")
            .trim()
            .to_string(),
        date: today(),
        method: "Converted by pfsqos calibrate --from-obdfilter-survey: per-OST sequential \
                 write and read throughput against objects (streams) and threads per object \
                 (queue depth); latency from Little's law; no random or mixed points (the \
                 survey measures none), so no random penalty and no variability."
            .to_string(),
        host: String::new(),
        target: String::new(),
    };
    fit::fit(
        name,
        "Converted from an obdfilter-survey summary.",
        source,
        points,
    )
    .map_err(|e| format!("{file}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Lustre Operations Manual's example survey output (test data of pfsqos-profile,
    /// cited there) converts, and the profile says where it came from.
    #[test]
    fn the_lustre_manuals_survey_converts() {
        let text = include_str!(
            "../../pfsqos-profile/tests/fixtures/obdfilter-survey-lustre-manual.summary"
        );
        let p = from_obdfilter_survey(text, "manual.summary", "hds1fnb6123").unwrap();
        assert_eq!(p.source.kind, SourceKind::ObdfilterSurvey);
        assert!(
            p.source.citation.contains("from hds1fnb6123"),
            "{}",
            p.source.citation
        );
        assert_eq!(p.measured.len(), 2);
        Profile::from_toml_str(&p.to_toml_string(), "hds1fnb6123.toml").unwrap();
        let e = from_obdfilter_survey(
            "ost 1 sz 1K rsz 1024K obj 1 thr 1 write 1.0 ERROR\n",
            "bad",
            "x",
        )
        .unwrap_err();
        assert!(e.starts_with("bad: line 1"), "{e}");
        // A survey of writes only parses, but has no read rows: refused, naming the file.
        let e = from_obdfilter_survey(
            "ost 8 sz 67108864K rsz 1024K obj 8 thr 8 write 613.54 [ 64.00, 82.00]\n",
            "readme.summary",
            "x",
        )
        .unwrap_err();
        assert!(
            e.starts_with("readme.summary: ") && e.contains("read"),
            "{e}"
        );
    }

    #[test]
    fn dates_are_civil() {
        let d = today();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"));
    }

    #[test]
    fn fio_arguments_never_pass_through_a_shell() {
        let p = PlannedPoint {
            op: Op::Mixed,
            pattern: Pattern::Random,
            read_percent: 70,
            size_kib: 4,
            queue_depth: 8,
            streams: 2,
        };
        let args = fio_args(Path::new("/data/x; rm -rf /"), &p, 64, 1500);
        assert!(args.contains(&"--directory=/data/x; rm -rf /".to_string()));
        assert!(args.contains(&"--rw=randrw".to_string()));
        assert!(args.contains(&"--rwmixread=70".to_string()));
        assert!(args.contains(&"--direct=1".to_string()));
        assert!(args.contains(&"--runtime=1500ms".to_string()));
    }
}
