//! The block-device sensor of PI control: the mean dispatch-queue length of a disk over a
//! control period, from two readings of `/sys/block/<dev>/stat`.
//!
//! Why `time_in_queue` (stat field 11): Documentation/block/stat.rst says it grows "as the
//! product of the number of milliseconds times the number of requests waiting", so over a
//! window Δtime_in_queue_ms / Δt_ms is the time-average number of outstanding requests, which
//! is the paper's "dispatch queue size" sensor. It is added to when a request *completes*
//! (genhd.c `part_stat_show` sums the per-request nanoseconds of completed I/Os), so the mean
//! lags when single requests are long relative to the period. `in_flight` (field 9) is an
//! instantaneous reading, kept beside it for diagnostics.
//!
//! The paper's path `/sys/block/<dev>/stats` is a typo: the file is `stat`.

use std::fmt;
use std::io;
use std::num::IntErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where sysfs is mounted on a running system; tests pass a fake tree instead.
pub const SYSFS_ROOT: &str = "/sys";

/// Field counts the kernel has printed: 11 (before 4.18), 15 (discard fields, 4.18), 17 (flush
/// fields, 5.5).
pub const STAT_FIELD_COUNTS: [usize; 3] = [11, 15, 17];

/// The names of the 17 fields of `/sys/block/<dev>/stat`, in order (Documentation/block/stat.rst);
/// used in parse errors so the message names the bad field.
pub const STAT_FIELD_NAMES: [&str; 17] = [
    "read I/Os",
    "read merges",
    "read sectors",
    "read ticks",
    "write I/Os",
    "write merges",
    "write sectors",
    "write ticks",
    "in_flight",
    "io_ticks",
    "time_in_queue",
    "discard I/Os",
    "discard merges",
    "discard sectors",
    "discard ticks",
    "flush I/Os",
    "flush ticks",
];

/// The discard fields (12..15), printed by kernels since 4.18.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscardStat {
    pub ios: u64,
    pub merges: u64,
    /// 512-byte sectors, whatever the device's logical block size.
    pub sectors: u64,
    pub ticks_ms: u64,
}

/// The flush fields (16, 17), printed by kernels since 5.5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushStat {
    pub ios: u64,
    pub ticks_ms: u64,
}

/// One reading of `/sys/block/<dev>/stat`. All counters are cumulative since the device
/// appeared, except `in_flight_requests` (instantaneous). The `*_ms` fields are printed as
/// 32-bit unsigned values by current kernels, so they wrap (at 2^32 ms, or sooner for
/// `time_in_queue_ms`, which grows by the queue length each millisecond).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockStat {
    pub read_ios: u64,
    pub read_merges: u64,
    /// 512-byte sectors.
    pub read_sectors: u64,
    pub read_ticks_ms: u64,
    pub write_ios: u64,
    pub write_merges: u64,
    /// 512-byte sectors.
    pub write_sectors: u64,
    pub write_ticks_ms: u64,
    /// Requests issued to the driver and not yet completed, now.
    pub in_flight_requests: u64,
    /// Milliseconds during which at least one request was in flight.
    pub io_ticks_ms: u64,
    /// Σ over requests of their milliseconds in flight (request·milliseconds).
    pub time_in_queue_ms: u64,
    pub discard: Option<DiscardStat>,
    pub flush: Option<FlushStat>,
}

/// Why a stat line could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockStatError {
    /// Not 11, 15 or 17 whitespace-separated fields.
    FieldCount { found: usize },
    /// A field that is not a decimal unsigned integer.
    NotANumber { field: &'static str, text: String },
    /// A field larger than u64.
    Overflow { field: &'static str, text: String },
}

impl fmt::Display for BlockStatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockStatError::FieldCount { found } => write!(
                f,
                "block stat line has {found} fields; expected 11, 15 or 17 (Documentation/block/stat.rst)"
            ),
            BlockStatError::NotANumber { field, text } => {
                write!(f, "block stat field '{field}' is not an unsigned integer: {text:?}")
            }
            BlockStatError::Overflow { field, text } => {
                write!(f, "block stat field '{field}' overflows 64 bits: {text:?}")
            }
        }
    }
}

impl std::error::Error for BlockStatError {}

impl BlockStat {
    /// Parses the one line of `/sys/block/<dev>/stat` (or of a partition's `stat`). Leading,
    /// trailing and repeated whitespace is accepted, as the kernel pads fields to 8 columns.
    pub fn parse(text: &str) -> Result<BlockStat, BlockStatError> {
        let words: Vec<&str> = text.split_whitespace().collect();
        if !STAT_FIELD_COUNTS.contains(&words.len()) {
            return Err(BlockStatError::FieldCount { found: words.len() });
        }
        let mut values = [0u64; 17];
        for (index, word) in words.iter().enumerate() {
            let field = STAT_FIELD_NAMES[index];
            // u64::from_str accepts a leading '+'; the kernel never prints one.
            if !word.bytes().all(|b| b.is_ascii_digit()) {
                return Err(BlockStatError::NotANumber {
                    field,
                    text: (*word).to_string(),
                });
            }
            values[index] = word.parse::<u64>().map_err(|e| match e.kind() {
                IntErrorKind::PosOverflow => BlockStatError::Overflow {
                    field,
                    text: (*word).to_string(),
                },
                _ => BlockStatError::NotANumber {
                    field,
                    text: (*word).to_string(),
                },
            })?;
        }
        let discard = (words.len() >= 15).then(|| DiscardStat {
            ios: values[11],
            merges: values[12],
            sectors: values[13],
            ticks_ms: values[14],
        });
        let flush = (words.len() >= 17).then(|| FlushStat {
            ios: values[15],
            ticks_ms: values[16],
        });
        Ok(BlockStat {
            read_ios: values[0],
            read_merges: values[1],
            read_sectors: values[2],
            read_ticks_ms: values[3],
            write_ios: values[4],
            write_merges: values[5],
            write_sectors: values[6],
            write_ticks_ms: values[7],
            in_flight_requests: values[8],
            io_ticks_ms: values[9],
            time_in_queue_ms: values[10],
            discard,
            flush,
        })
    }
}

/// Why no mean queue length could be computed from two readings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueLenError {
    /// The readings are not apart in time.
    ZeroInterval,
    /// `time_in_queue` went backwards: the 32-bit counter wrapped, or the device was removed
    /// and re-added (counters restart at 0). The two cases cannot be told apart from two
    /// readings, so no value is invented; [`BlockSensor`] takes the new reading as its baseline.
    CounterWentBackwards { prev_ms: u64, cur_ms: u64 },
}

impl fmt::Display for QueueLenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueLenError::ZeroInterval => write!(f, "the two block stat readings are 0 ns apart"),
            QueueLenError::CounterWentBackwards { prev_ms, cur_ms } => write!(
                f,
                "time_in_queue went backwards ({prev_ms} ms -> {cur_ms} ms): counter wrap or device reset"
            ),
        }
    }
}

impl std::error::Error for QueueLenError {}

/// The time-average number of outstanding requests between two readings `elapsed_ns` apart:
/// Δtime_in_queue_ms / Δt_ms. It lags the real queue, as time_in_queue advances when requests
/// complete (a request spanning the period boundary counts wholly in the later period).
pub fn mean_queue_len(
    prev: &BlockStat,
    cur: &BlockStat,
    elapsed_ns: u64,
) -> Result<f64, QueueLenError> {
    if elapsed_ns == 0 {
        return Err(QueueLenError::ZeroInterval);
    }
    let delta_ms = cur
        .time_in_queue_ms
        .checked_sub(prev.time_in_queue_ms)
        .ok_or(QueueLenError::CounterWentBackwards {
            prev_ms: prev.time_in_queue_ms,
            cur_ms: cur.time_in_queue_ms,
        })?;
    let elapsed_ms = elapsed_ns as f64 / 1e6;
    let queue_len = delta_ms as f64 / elapsed_ms;
    debug_assert!(queue_len.is_finite() && queue_len >= 0.0);
    Ok(queue_len)
}

/// A whole disk as sysfs names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDevice {
    /// The kernel's name of the whole disk, e.g. `vda`, `nvme0n1`.
    pub name: String,
    /// major:minor of the disk (not of the partition the directory lives on).
    pub major: u32,
    pub minor: u32,
    /// The disk's `stat` file, under the sysfs root that was searched.
    pub stat_path: PathBuf,
}

/// Why a directory's block device could not be found.
#[derive(Debug)]
pub enum BlockDeviceError {
    /// stat() of the directory failed.
    Stat { path: PathBuf, source: io::Error },
    /// The file system is not on a block device: major 0 is the kernel's anonymous devices
    /// (tmpfs, overlay, proc, NFS, btrfs subvolumes, FUSE...).
    NotABlockDevice {
        path: PathBuf,
        major: u32,
        minor: u32,
    },
    /// major:minor has no `<sysfs>/dev/block/MAJ:MIN` entry (sysfs not mounted, or a device
    /// outside this namespace).
    NoSysfsEntry { entry: PathBuf, source: io::Error },
    /// The sysfs entry resolved to something without a usable name or parent.
    BadSysfsEntry { entry: PathBuf, reason: String },
}

impl fmt::Display for BlockDeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockDeviceError::Stat { path, source } => {
                write!(f, "cannot stat {}: {source}", path.display())
            }
            BlockDeviceError::NotABlockDevice { path, major, minor } => write!(
                f,
                "no block device: {} is on device {major}:{minor}, an anonymous (major 0) file system such as tmpfs or overlay",
                path.display()
            ),
            BlockDeviceError::NoSysfsEntry { entry, source } => {
                write!(f, "no block device entry {}: {source}", entry.display())
            }
            BlockDeviceError::BadSysfsEntry { entry, reason } => {
                write!(f, "unusable block device entry {}: {reason}", entry.display())
            }
        }
    }
}

impl std::error::Error for BlockDeviceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BlockDeviceError::Stat { source, .. }
            | BlockDeviceError::NoSysfsEntry { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// glibc's `gnu_dev_major` of a 64-bit `dev_t`.
pub fn dev_major(dev: u64) -> u32 {
    (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff)) as u32
}

/// glibc's `gnu_dev_minor` of a 64-bit `dev_t`.
pub fn dev_minor(dev: u64) -> u32 {
    (((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff)) as u32
}

/// The whole disk holding the file system of `dir` (from its st_dev), looked up under
/// `sysfs_root` (normally [`SYSFS_ROOT`]). A partition resolves to its disk, since the disk's
/// queue is what congests and partitions have no queue of their own.
pub fn block_device_of_dir(dir: &Path, sysfs_root: &Path) -> Result<BlockDevice, BlockDeviceError> {
    let meta = std::fs::metadata(dir).map_err(|source| BlockDeviceError::Stat {
        path: dir.to_path_buf(),
        source,
    })?;
    let (major, minor) = (dev_major(meta.dev()), dev_minor(meta.dev()));
    if major == 0 {
        return Err(BlockDeviceError::NotABlockDevice {
            path: dir.to_path_buf(),
            major,
            minor,
        });
    }
    block_device_of_devnum(major, minor, sysfs_root)
}

/// The whole disk of device `major:minor`: `<sysfs>/dev/block/MAJ:MIN` links to the device's
/// directory; a partition's directory holds a `partition` file and sits inside its disk's.
pub fn block_device_of_devnum(
    major: u32,
    minor: u32,
    sysfs_root: &Path,
) -> Result<BlockDevice, BlockDeviceError> {
    let entry = sysfs_root
        .join("dev/block")
        .join(format!("{major}:{minor}"));
    let mut dir =
        std::fs::canonicalize(&entry).map_err(|source| BlockDeviceError::NoSysfsEntry {
            entry: entry.clone(),
            source,
        })?;
    if dir.join("partition").exists() {
        dir = dir
            .parent()
            .ok_or_else(|| BlockDeviceError::BadSysfsEntry {
                entry: entry.clone(),
                reason: "a partition without a parent directory".to_string(),
            })?
            .to_path_buf();
    }
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| BlockDeviceError::BadSysfsEntry {
            entry: entry.clone(),
            reason: format!("no UTF-8 name in {}", dir.display()),
        })?
        .to_string();
    // The disk's own major:minor, from its `dev` file ("MAJ:MIN\n"); a partition's differs.
    let (disk_major, disk_minor) = match std::fs::read_to_string(dir.join("dev")) {
        Ok(text) => parse_devnum(text.trim()).ok_or_else(|| BlockDeviceError::BadSysfsEntry {
            entry: entry.clone(),
            reason: format!("dev file holds {:?}, not MAJ:MIN", text.trim()),
        })?,
        Err(source) => {
            return Err(BlockDeviceError::NoSysfsEntry {
                entry: dir.join("dev"),
                source,
            })
        }
    };
    let stat_path = dir.join("stat");
    Ok(BlockDevice {
        name,
        major: disk_major,
        minor: disk_minor,
        stat_path,
    })
}

fn parse_devnum(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Why the sensor gave no reading.
#[derive(Debug)]
pub enum SensorError {
    Read {
        path: PathBuf,
        source: io::Error,
    },
    Parse {
        path: PathBuf,
        source: BlockStatError,
    },
}

impl fmt::Display for SensorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SensorError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            SensorError::Parse { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for SensorError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SensorError::Read { source, .. } => Some(source),
            SensorError::Parse { source, .. } => Some(source),
        }
    }
}

/// What the sensor measured over one period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueSample {
    /// Time-average outstanding requests since the previous reading.
    pub mean_queue_len: f64,
    /// Outstanding requests at this reading (instantaneous).
    pub in_flight_requests: u64,
    /// Time since the previous reading.
    pub interval_ns: u64,
}

/// Reads a disk's stat file once per control period and reports the mean queue since the
/// previous read. The first read, and a read after the counter went backwards (wrap or device
/// reset, see [`QueueLenError::CounterWentBackwards`]), only set the baseline.
#[derive(Debug)]
pub struct BlockSensor {
    stat_path: PathBuf,
    baseline: Option<(BlockStat, Instant)>,
}

impl BlockSensor {
    pub fn new(stat_path: PathBuf) -> BlockSensor {
        BlockSensor {
            stat_path,
            baseline: None,
        }
    }

    pub fn for_device(device: &BlockDevice) -> BlockSensor {
        BlockSensor::new(device.stat_path.clone())
    }

    pub fn stat_path(&self) -> &Path {
        &self.stat_path
    }

    /// Reads the stat file now. `Ok(None)` when this reading is only a baseline.
    pub fn read(&mut self) -> Result<Option<QueueSample>, SensorError> {
        let text =
            std::fs::read_to_string(&self.stat_path).map_err(|source| SensorError::Read {
                path: self.stat_path.clone(),
                source,
            })?;
        let stat = BlockStat::parse(&text).map_err(|source| SensorError::Parse {
            path: self.stat_path.clone(),
            source,
        })?;
        Ok(self.observe(stat, Instant::now()))
    }

    /// Feeds a reading taken at `at` (what [`BlockSensor::read`] does with the file's
    /// contents); public so a caller with its own clock or reader can drive the sensor.
    pub fn observe(&mut self, stat: BlockStat, at: Instant) -> Option<QueueSample> {
        let previous = self.baseline.replace((stat, at));
        let (prev_stat, prev_at) = previous?;
        let interval_ns =
            u64::try_from(at.saturating_duration_since(prev_at).as_nanos()).unwrap_or(u64::MAX);
        // ZeroInterval and CounterWentBackwards both leave the new reading as the baseline.
        let mean_queue_len = mean_queue_len(&prev_stat, &stat, interval_ns).ok()?;
        Some(QueueSample {
            mean_queue_len,
            in_flight_requests: stat.in_flight_requests,
            interval_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const LINE_17: &str = "   78913    19245 26605410    82404   313953   181594 232461936  1225419        0   123844  1346460   120180       82 169399536    37483    28655     1153\n";

    fn stat_with_queue(time_in_queue_ms: u64) -> BlockStat {
        BlockStat::parse(&format!("1 2 3 4 5 6 7 8 9 10 {time_in_queue_ms}")).unwrap()
    }

    #[test]
    fn parses_17_fields_of_a_real_disk() {
        let stat = BlockStat::parse(LINE_17).unwrap();
        assert_eq!(stat.read_ios, 78913);
        assert_eq!(stat.read_sectors, 26605410);
        assert_eq!(stat.write_ticks_ms, 1225419);
        assert_eq!(stat.in_flight_requests, 0);
        assert_eq!(stat.io_ticks_ms, 123844);
        assert_eq!(stat.time_in_queue_ms, 1346460);
        assert_eq!(
            stat.discard,
            Some(DiscardStat {
                ios: 120180,
                merges: 82,
                sectors: 169399536,
                ticks_ms: 37483
            })
        );
        assert_eq!(
            stat.flush,
            Some(FlushStat {
                ios: 28655,
                ticks_ms: 1153
            })
        );
    }

    #[test]
    fn parses_11_and_15_fields() {
        let old = BlockStat::parse("1 2 3 4 5 6 7 8 9 10 11").unwrap();
        assert_eq!((old.in_flight_requests, old.time_in_queue_ms), (9, 11));
        assert_eq!((old.discard, old.flush), (None, None));
        let mid = BlockStat::parse("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15").unwrap();
        assert_eq!(mid.discard.unwrap().ticks_ms, 15);
        assert_eq!(mid.flush, None);
    }

    #[test]
    fn rejects_malformed_lines() {
        assert_eq!(
            BlockStat::parse(""),
            Err(BlockStatError::FieldCount { found: 0 })
        );
        assert_eq!(
            BlockStat::parse("1 2 3 4 5 6 7 8 9 10 11 12"),
            Err(BlockStatError::FieldCount { found: 12 })
        );
        assert_eq!(
            BlockStat::parse("1 2 3 4 5 6 7 8 -9 10 11"),
            Err(BlockStatError::NotANumber {
                field: "in_flight",
                text: "-9".into()
            })
        );
        assert_eq!(
            BlockStat::parse("1 2 3 4 5 6 7 8 9 10 +11"),
            Err(BlockStatError::NotANumber {
                field: "time_in_queue",
                text: "+11".into()
            })
        );
        assert_eq!(
            BlockStat::parse("x 2 3 4 5 6 7 8 9 10 11"),
            Err(BlockStatError::NotANumber {
                field: "read I/Os",
                text: "x".into()
            })
        );
        let err = BlockStat::parse("1 2 3 4 5 6 7 8 9 10 18446744073709551616").unwrap_err();
        assert_eq!(
            err,
            BlockStatError::Overflow {
                field: "time_in_queue",
                text: "18446744073709551616".into()
            }
        );
        assert!(err.to_string().contains("time_in_queue"), "{err}");
        let msg = BlockStat::parse("1 2").unwrap_err().to_string();
        assert!(
            msg.contains("2 fields") && msg.contains("11, 15 or 17"),
            "{msg}"
        );
    }

    #[test]
    fn mean_queue_matches_a_hand_computation() {
        // 300 ms period; time_in_queue grew by 1200 request·ms: 4 requests outstanding on average.
        let prev = BlockStat::parse(LINE_17).unwrap();
        let cur = BlockStat {
            time_in_queue_ms: prev.time_in_queue_ms + 1200,
            ..prev
        };
        let queue = mean_queue_len(&prev, &cur, 300_000_000).unwrap();
        assert!((queue - 4.0).abs() < 1e-12, "{queue}");
        // 250 ms and 75 request·ms: 0.3.
        let queue =
            mean_queue_len(&stat_with_queue(1000), &stat_with_queue(1075), 250_000_000).unwrap();
        assert!((queue - 0.3).abs() < 1e-12, "{queue}");
        // An idle disk.
        assert_eq!(mean_queue_len(&prev, &prev, 1_000_000).unwrap(), 0.0);
    }

    #[test]
    fn mean_queue_rejects_backwards_counters_and_zero_intervals() {
        assert_eq!(
            mean_queue_len(&stat_with_queue(10), &stat_with_queue(5), 1_000_000),
            Err(QueueLenError::CounterWentBackwards {
                prev_ms: 10,
                cur_ms: 5
            })
        );
        assert_eq!(
            mean_queue_len(&stat_with_queue(5), &stat_with_queue(10), 0),
            Err(QueueLenError::ZeroInterval)
        );
    }

    #[test]
    fn sensor_starts_with_a_baseline_and_rebaselines_after_a_reset() {
        let mut sensor = BlockSensor::new(PathBuf::from("/nonexistent"));
        let t0 = Instant::now();
        assert_eq!(sensor.observe(stat_with_queue(1000), t0), None);
        let sample = sensor
            .observe(stat_with_queue(1600), t0 + Duration::from_millis(300))
            .unwrap();
        assert!((sample.mean_queue_len - 2.0).abs() < 1e-9, "{sample:?}");
        assert_eq!(sample.interval_ns, 300_000_000);
        assert_eq!(sample.in_flight_requests, 9);
        // Reset: no value, and the next period is measured from the reset reading.
        assert_eq!(
            sensor.observe(stat_with_queue(100), t0 + Duration::from_millis(600)),
            None
        );
        let sample = sensor
            .observe(stat_with_queue(400), t0 + Duration::from_millis(900))
            .unwrap();
        assert!((sample.mean_queue_len - 1.0).abs() < 1e-9, "{sample:?}");
    }

    #[test]
    fn sensor_reads_a_stat_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stat");
        std::fs::write(&path, "1 2 3 4 5 6 7 8 0 10 500\n").unwrap();
        let mut sensor = BlockSensor::new(path.clone());
        assert_eq!(sensor.read().unwrap(), None);
        std::fs::write(&path, "1 2 3 4 5 6 7 8 0 10 510\n").unwrap();
        let sample = sensor.read().unwrap().expect("second read gives a value");
        assert!(
            sample.mean_queue_len >= 0.0 && sample.interval_ns > 0,
            "{sample:?}"
        );
        std::fs::write(&path, "garbage\n").unwrap();
        assert!(matches!(sensor.read(), Err(SensorError::Parse { .. })));
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(sensor.read(), Err(SensorError::Read { .. })));
    }

    /// glibc's `gnu_dev_makedev`, the inverse of dev_major/dev_minor.
    fn makedev(major: u64, minor: u64) -> u64 {
        ((major & 0x0000_0fff) << 8)
            | ((major & 0xffff_f000) << 32)
            | (minor & 0x0000_00ff)
            | ((minor & 0xffff_ff00) << 12)
    }

    #[test]
    fn glibc_dev_formula() {
        // 254:0 (virtio disk) is 0xfe00; 259:65536 exercises the high bits of both halves.
        assert_eq!((dev_major(0xfe00), dev_minor(0xfe00)), (254, 0));
        let dev = makedev(259, 65536);
        assert_eq!((dev_major(dev), dev_minor(dev)), (259, 65536));
    }

    /// A fake sysfs: devices/.../block/sda (8:0) with partition sda1 (8:1), and dev/block links.
    fn fake_sysfs() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let disk = root.path().join("devices/pci0000:00/block/sda");
        let part = disk.join("sda1");
        std::fs::create_dir_all(&part).unwrap();
        std::fs::create_dir_all(root.path().join("dev/block")).unwrap();
        std::fs::write(disk.join("dev"), "8:0\n").unwrap();
        std::fs::write(disk.join("stat"), "1 2 3 4 5 6 7 8 9 10 11\n").unwrap();
        std::fs::write(part.join("dev"), "8:1\n").unwrap();
        std::fs::write(part.join("partition"), "1\n").unwrap();
        std::fs::write(part.join("stat"), "1 2 3 4 5 6 7 8 9 10 11\n").unwrap();
        std::os::unix::fs::symlink(
            "../../devices/pci0000:00/block/sda",
            root.path().join("dev/block/8:0"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "../../devices/pci0000:00/block/sda/sda1",
            root.path().join("dev/block/8:1"),
        )
        .unwrap();
        root
    }

    #[test]
    fn fake_sysfs_resolves_a_partition_to_its_disk() {
        let root = fake_sysfs();
        let disk_dir =
            std::fs::canonicalize(root.path().join("devices/pci0000:00/block/sda")).unwrap();
        for minor in [0, 1] {
            let device = block_device_of_devnum(8, minor, root.path()).unwrap();
            assert_eq!(device.name, "sda");
            assert_eq!((device.major, device.minor), (8, 0));
            assert_eq!(device.stat_path, disk_dir.join("stat"));
        }
        let err = block_device_of_devnum(8, 2, root.path()).unwrap_err();
        assert!(
            matches!(err, BlockDeviceError::NoSysfsEntry { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("8:2"), "{err}");
    }

    #[test]
    fn fake_sysfs_resolves_a_directory_through_its_st_dev() {
        // The temp dir's real major:minor, described in a fake sysfs as partition 1 of "fakedisk".
        let root = tempfile::tempdir().unwrap();
        let dev = std::fs::metadata(root.path()).unwrap().dev();
        let (major, minor) = (dev_major(dev), dev_minor(dev));
        if major == 0 {
            let err = block_device_of_dir(root.path(), root.path()).unwrap_err();
            assert!(
                matches!(err, BlockDeviceError::NotABlockDevice { .. }),
                "{err}"
            );
            println!("the temp dir is on an anonymous device {major}:{minor}");
            return;
        }
        let disk = root.path().join("devices/virtual/block/fakedisk");
        let part = disk.join("fakedisk1");
        std::fs::create_dir_all(&part).unwrap();
        std::fs::create_dir_all(root.path().join("dev/block")).unwrap();
        std::fs::write(disk.join("dev"), "4000:0\n").unwrap();
        std::fs::write(part.join("dev"), format!("{major}:{minor}\n")).unwrap();
        std::fs::write(part.join("partition"), "1\n").unwrap();
        std::os::unix::fs::symlink(
            "../../devices/virtual/block/fakedisk/fakedisk1",
            root.path().join(format!("dev/block/{major}:{minor}")),
        )
        .unwrap();
        let device = block_device_of_dir(root.path(), root.path()).unwrap();
        assert_eq!(
            (device.name.as_str(), device.major, device.minor),
            ("fakedisk", 4000, 0)
        );
        assert_eq!(
            device.stat_path,
            std::fs::canonicalize(&disk).unwrap().join("stat")
        );
    }

    #[test]
    fn root_directory_has_a_device_or_a_clear_error() {
        match block_device_of_dir(Path::new("/"), Path::new(SYSFS_ROOT)) {
            Ok(device) => {
                assert!(!device.name.is_empty());
                println!("/ is on {device:?}");
                // The real stat file parses, and two readings give a finite, non-negative mean.
                let mut sensor = BlockSensor::for_device(&device);
                assert_eq!(sensor.read().unwrap(), None);
                std::thread::sleep(Duration::from_millis(20));
                let sample = sensor.read().unwrap();
                if let Some(sample) = sample {
                    assert!(sample.mean_queue_len.is_finite() && sample.mean_queue_len >= 0.0);
                }
            }
            Err(err @ BlockDeviceError::NotABlockDevice { .. }) => {
                assert!(err.to_string().starts_with("no block device"), "{err}");
                println!("/ is not on a block device: {err}");
            }
            Err(err @ BlockDeviceError::NoSysfsEntry { .. }) => {
                println!("/ has no sysfs entry: {err}");
            }
            Err(err) => panic!("unexpected error for /: {err}"),
        }
    }

    #[test]
    fn anonymous_file_systems_are_not_block_devices() {
        // /proc is always major 0 (anonymous); the error is the clear one.
        match block_device_of_dir(Path::new("/proc"), Path::new(SYSFS_ROOT)) {
            Err(err @ BlockDeviceError::NotABlockDevice { major: 0, .. }) => {
                assert!(err.to_string().contains("no block device"), "{err}");
            }
            other => panic!("/proc gave {other:?}"),
        }
    }
}
