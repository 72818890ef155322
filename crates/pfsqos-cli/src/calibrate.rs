//! `pfsqos calibrate`: measure a directory's device with fio into a device profile, or
//! convert a Lustre obdfilter-survey summary into one (docs/physics.md).

use std::path::{Path, PathBuf};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use pfsqos_calibrate::{calibrate, from_obdfilter_survey, Options, Progress};
use pfsqos_profile::plan::Ranges;

/// Largest obdfilter-survey summary read.
const SURVEY_LEN_MAX: u64 = pfsqos_profile::obdfilter::TEXT_LEN_MAX as u64;

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Directory on the device to measure (files are created there and removed after).
    #[arg(required_unless_present = "from_obdfilter_survey")]
    dir: Option<PathBuf>,
    /// Convert this obdfilter-survey summary instead of measuring.
    #[arg(long, value_name = "FILE", conflicts_with = "dir")]
    from_obdfilter_survey: Option<PathBuf>,
    /// Wall-clock budget of the whole calibration (seconds); the sweep is planned to fit.
    #[arg(long, default_value_t = 600)]
    budget: u64,
    /// Request sizes in KiB, ascending.
    #[arg(long, value_delimiter = ',', default_values_t = [4u64, 64, 1024, 16384])]
    sizes_kib: Vec<u64>,
    /// Largest queue depth swept.
    #[arg(long, default_value_t = 256)]
    queue_depth_max: u32,
    /// Largest number of concurrent sequential streams (one file each).
    #[arg(long, default_value_t = 128)]
    streams_max: u32,
    /// Size of each stream's file (MiB).
    #[arg(long, default_value_t = 256)]
    file_size_mib: u64,
    /// The fio executable.
    #[arg(long, default_value = "fio")]
    fio: PathBuf,
    /// Profile name.
    #[arg(long, default_value = "calibrated")]
    name: String,
    /// Where to write the profile (TOML).
    #[arg(long, short)]
    out: PathBuf,
}

/// Runs the subcommand; the exit code (2: bad input, 1: the measurement failed).
pub fn run(args: CalibrateArgs) -> u8 {
    match run_inner(&args) {
        Ok(()) => 0,
        Err((code, message)) => {
            eprintln!("pfsqos calibrate: {message}");
            code
        }
    }
}

fn run_inner(args: &CalibrateArgs) -> Result<(), (u8, String)> {
    let profile = if let Some(survey) = &args.from_obdfilter_survey {
        let text = read_limited(survey).map_err(|e| (2, e))?;
        from_obdfilter_survey(&text, &survey.display().to_string(), &args.name)
            .map_err(|e| (2, e))?
    } else {
        let dir = args.dir.clone().expect("clap requires a directory");
        let opts = Options {
            dir,
            budget_s: args.budget,
            ranges: Ranges {
                sizes_kib: args.sizes_kib.clone(),
                queue_depth_max: args.queue_depth_max,
                streams_max: args.streams_max,
            },
            file_size_mib: args.file_size_mib,
            fio: args.fio.clone(),
            name: args.name.clone(),
        };
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} fio runs, {elapsed} {msg}")
                .expect("a valid template"),
        );
        let result = calibrate(&opts, &mut |p| match p {
            Progress::Layout {
                files,
                file_size_mib,
            } => bar.println(format!(
                "laying out {files} files of {file_size_mib} MiB in {}",
                opts.dir.display()
            )),
            Progress::Planned {
                points,
                runtime_ms,
                left_out,
            } => {
                bar.set_length(points as u64);
                bar.println(format!("{points} points of {runtime_ms} ms each"));
                for g in left_out {
                    bar.println(format!("left out for the budget: {g}"));
                }
            }
            Progress::Point { index, what, .. } => {
                bar.set_position(index as u64);
                bar.set_message(what);
            }
        });
        bar.finish_and_clear();
        result.map_err(|e| (1, e))?
    };
    std::fs::write(&args.out, profile.to_toml_string())
        .map_err(|e| (1, format!("cannot write `{}`: {e}", args.out.display())))?;
    println!(
        "wrote {} ({} measured points; name it from a scenario's [[device]] profile = ...)",
        args.out.display(),
        profile.measured.len()
    );
    Ok(())
}

fn read_limited(path: &Path) -> Result<String, String> {
    let len = std::fs::metadata(path)
        .map_err(|e| format!("`{}`: {e}", path.display()))?
        .len();
    if len > SURVEY_LEN_MAX {
        return Err(format!(
            "`{}` is {len} bytes; a summary may be at most {SURVEY_LEN_MAX}",
            path.display()
        ));
    }
    std::fs::read_to_string(path).map_err(|e| format!("`{}`: {e}", path.display()))
}
