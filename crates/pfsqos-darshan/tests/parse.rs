//! The reader against PyDarshan's numbers for every committed log (tests/data/*.reference.json,
//! made by scripts/darshan-reference.py), and against malformed and truncated logs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pfsqos_darshan::log::{
    DarshanLog, POSIX_COUNTERS, POSIX_COUNTER_NAMES, POSIX_F_COUNTER_NAMES, SUPPORTED_VERSIONS,
};
use proptest::prelude::*;
use serde_json::Value;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn logs() -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .expect("tests/data")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "darshan"))
        .collect();
    logs.sort();
    assert!(logs.len() >= 5, "the committed logs are there: {logs:?}");
    logs
}

fn reference(log: &Path) -> Value {
    let stem = log.file_stem().unwrap().to_str().unwrap();
    let path = log.with_file_name(format!("{stem}.reference.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/darshan-reference.py)", path.display()));
    serde_json::from_str(&text).expect("reference JSON")
}

fn int(v: &Value) -> i64 {
    v.as_i64()
        .unwrap_or_else(|| panic!("integer expected, got {v}"))
}

#[test]
fn every_committed_log_matches_pydarshan_exactly() {
    for path in logs() {
        let name = path.display().to_string();
        let log = DarshanLog::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let r = reference(&path);
        assert_eq!(log.version, r["version"].as_str().unwrap(), "{name}");
        assert!(SUPPORTED_VERSIONS.contains(&log.version.as_str()));
        let job = &r["job"];
        assert_eq!(log.job.uid, int(&job["uid"]), "{name} uid");
        assert_eq!(log.job.start_time_s, int(&job["start_time_sec"]), "{name}");
        assert_eq!(log.job.end_time_s, int(&job["end_time_sec"]), "{name}");
        assert_eq!(log.job.nprocs, int(&job["nprocs"]), "{name}");
        assert_eq!(log.job.jobid, int(&job["jobid"]), "{name}");
        assert_eq!(log.job.exe, r["exe"].as_str().unwrap(), "{name} exe");
        assert_eq!(log.names.len() as i64, int(&r["name_records"]), "{name}");

        // Module versions and region lengths, by Darshan's current module names.
        let modules: BTreeMap<&str, (i64, i64)> = log
            .modules
            .iter()
            .map(|m| (m.name.as_str(), (m.version as i64, m.region.len as i64)))
            .collect();
        let expected: BTreeMap<&str, (i64, i64)> = r["modules"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.as_str(), (int(&v["ver"]), int(&v["len"]))))
            .collect();
        assert_eq!(modules, expected, "{name} modules");

        // Every POSIX record, every counter, exactly (timestamps by bit pattern).
        let posix = r["posix"].as_array().unwrap();
        assert_eq!(log.posix.len(), posix.len(), "{name} POSIX records");
        if !posix.is_empty() {
            let names: Vec<&str> = r["posix_counters"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert_eq!(names, POSIX_COUNTER_NAMES, "{name} counter layout");
            let fnames: Vec<&str> = r["posix_fcounters"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert_eq!(fnames, POSIX_F_COUNTER_NAMES, "{name} fcounter layout");
        }
        for (i, (rec, want)) in log.posix.iter().zip(posix).enumerate() {
            let at = format!("{name} POSIX record {i}");
            assert_eq!(rec.id, want["id"].as_u64().unwrap(), "{at} id");
            assert_eq!(rec.rank, int(&want["rank"]), "{at} rank");
            assert_eq!(
                log.name(rec.id).unwrap_or(""),
                want["name"].as_str().unwrap(),
                "{at} name"
            );
            let counters: Vec<i64> = want["counters"]
                .as_array()
                .unwrap()
                .iter()
                .map(int)
                .collect();
            assert_eq!(counters.len(), POSIX_COUNTERS);
            assert_eq!(
                rec.counters.as_slice(),
                counters.as_slice(),
                "{at} counters"
            );
            let bits: Vec<i64> = want["fcounter_bits"]
                .as_array()
                .unwrap()
                .iter()
                .map(int)
                .collect();
            let ours: Vec<i64> = rec.fcounters.iter().map(|f| f.to_bits() as i64).collect();
            assert_eq!(ours, bits, "{at} fcounters");
        }

        // Byte totals per file over ranks.
        let mut files: BTreeMap<String, (i64, i64, i64)> = BTreeMap::new();
        for rec in &log.posix {
            let f = files.entry(rec.id.to_string()).or_default();
            f.0 += rec.counter("POSIX_BYTES_READ").unwrap();
            f.1 += rec.counter("POSIX_BYTES_WRITTEN").unwrap();
            f.2 += 1;
        }
        let want_files: BTreeMap<String, (i64, i64, i64)> = r["files"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    (
                        int(&v["bytes_read"]),
                        int(&v["bytes_written"]),
                        int(&v["records"]),
                    ),
                )
            })
            .collect();
        assert_eq!(files, want_files, "{name} per-file totals");

        // Lustre layouts.
        let lustre = r["lustre"].as_array().unwrap();
        assert_eq!(log.lustre.len(), lustre.len(), "{name} LUSTRE records");
        for (rec, want) in log.lustre.iter().zip(lustre) {
            assert_eq!(rec.id, want["id"].as_u64().unwrap(), "{name}");
            assert_eq!(rec.rank, int(&want["rank"]), "{name}");
            assert_eq!(rec.stripe_size, int(&want["stripe_size"]), "{name}");
            assert_eq!(rec.stripe_count, int(&want["stripe_count"]), "{name}");
            let osts: Vec<i64> = want["ost_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(int)
                .collect();
            assert_eq!(rec.ost_ids, osts, "{name}");
        }
    }
}

#[test]
fn the_committed_logs_cover_both_versions_and_lustre() {
    let parsed: Vec<DarshanLog> = logs()
        .iter()
        .map(|p| DarshanLog::read(p).unwrap())
        .collect();
    for v in SUPPORTED_VERSIONS {
        assert!(
            parsed.iter().any(|l| l.version == *v),
            "a {v} log is tested"
        );
    }
    assert!(parsed.iter().any(|l| !l.lustre.is_empty()));
    assert!(parsed.iter().any(|l| l.posix.iter().any(|r| r.rank == -1)));
    assert!(parsed.iter().any(|l| l.posix.iter().any(|r| r.rank >= 0)));
}

fn goodost() -> Vec<u8> {
    std::fs::read(data_dir().join("sample-goodost.darshan")).unwrap()
}

fn message(bytes: &[u8]) -> String {
    DarshanLog::parse(bytes)
        .expect_err("must be refused")
        .to_string()
}

#[test]
fn malformed_headers_are_named() {
    let good = goodost();
    assert!(message(&[]).contains("too short"), "{}", message(&[]));
    assert!(message(b"hello world, this is not a log").contains("version"));

    let mut v = good.clone();
    v[..8].copy_from_slice(b"3.41\0\0\0\0");
    let m = message(&v);
    assert!(
        m.contains("3.41") && m.contains("not supported") && m.contains("3.10"),
        "{m}"
    );

    let mut v = good.clone();
    v[8] ^= 0xff;
    assert!(message(&v).contains("magic"), "{}", message(&v));

    let mut v = good.clone();
    v[8..16].copy_from_slice(&6_567_223i64.to_be_bytes());
    assert!(message(&v).contains("big-endian"));

    let mut v = good.clone();
    v[16] = 1;
    assert!(message(&v).contains("bzip2"));

    let mut v = good.clone();
    v[16] = 9;
    assert!(message(&v).contains("compression"));

    // The POSIX region (slot 1) pointing past the end of the file.
    let mut v = good.clone();
    v[40 + 16..40 + 24].copy_from_slice(&(good.len() as u64).to_le_bytes());
    let m = message(&v);
    assert!(
        m.contains("POSIX module region") && m.contains("outside"),
        "{m}"
    );

    // Regions overlapping.
    let mut v = good.clone();
    let name_off = u64::from_le_bytes(v[24..32].try_into().unwrap());
    v[40 + 16..40 + 24].copy_from_slice(&name_off.to_le_bytes());
    assert!(message(&v).contains("overlap"), "{}", message(&v));

    // An unsupported POSIX record version.
    let mut v = good.clone();
    v[296 + 4..296 + 8].copy_from_slice(&7u32.to_le_bytes());
    let m = message(&v);
    assert!(
        m.starts_with("POSIX module") && m.contains("version 7"),
        "{m}"
    );
}

#[test]
fn every_truncation_of_a_log_is_an_error() {
    for path in logs() {
        let bytes = std::fs::read(&path).unwrap();
        for len in 0..bytes.len() {
            let e = DarshanLog::parse(&bytes[..len]).expect_err("truncated");
            assert!(!e.message.is_empty());
        }
    }
    let m = message(&goodost()[..5000]);
    assert!(m.contains("truncated"), "{m}");
}

/// A log written by hand, uncompressed (compression type 2), in the 3.21 layout: to reach
/// checks a real log cannot (names without terminators, partial records).
fn handmade(names: &[u8], posix: &[u8], nprocs: i64) -> Vec<u8> {
    let mut job = Vec::new();
    for v in [1000i64, 100, 200, nprocs, 42] {
        job.extend_from_slice(&v.to_le_bytes());
    }
    let mut meta = b"lib_ver=3.2.1\n".to_vec();
    meta.resize(1024, 0);
    job.extend_from_slice(&meta);
    job.extend_from_slice(b"/bin/app --flag\n\tlustre\t/scratch\0");
    let mut out = vec![0u8; 360];
    out[..4].copy_from_slice(b"3.21");
    out[8..16].copy_from_slice(&6_567_223i64.to_le_bytes());
    out[16] = 2;
    out.extend_from_slice(&job);
    let names_at = out.len() as u64;
    out.extend_from_slice(names);
    let posix_at = out.len() as u64;
    out.extend_from_slice(posix);
    out[24..32].copy_from_slice(&names_at.to_le_bytes());
    out[32..40].copy_from_slice(&(names.len() as u64).to_le_bytes());
    out[56..64].copy_from_slice(&posix_at.to_le_bytes());
    out[64..72].copy_from_slice(&(posix.len() as u64).to_le_bytes());
    out[300..304].copy_from_slice(&4u32.to_le_bytes());
    out
}

fn posix_record(id: u64, rank: i64, bytes_written: i64) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend_from_slice(&id.to_le_bytes());
    r.extend_from_slice(&rank.to_le_bytes());
    let mut counters = [0i64; 69];
    counters[4] = 2;
    counters[15] = bytes_written;
    counters[57] = bytes_written / 2;
    counters[61] = 2;
    for c in counters {
        r.extend_from_slice(&c.to_le_bytes());
    }
    let mut f = [0f64; 17];
    f[2] = 1.5;
    f[6] = 2.5;
    for x in f {
        r.extend_from_slice(&x.to_le_bytes());
    }
    r
}

#[test]
fn a_handmade_uncompressed_log_parses() {
    let mut names = Vec::new();
    names.extend_from_slice(&7u64.to_le_bytes());
    names.extend_from_slice(b"/scratch/a \"quoted\"\n]]\0");
    let log = DarshanLog::parse(&handmade(&names, &posix_record(7, -1, 4096), 4)).unwrap();
    assert_eq!(log.job.exe, "/bin/app --flag");
    assert_eq!(log.job.metadata, vec![("lib_ver".into(), "3.2.1".into())]);
    assert_eq!(log.name(7), Some("/scratch/a \"quoted\"\n]]"));
    assert_eq!(log.posix[0].counter("POSIX_BYTES_WRITTEN"), Some(4096));
    assert_eq!(
        log.posix[0].fcounter("POSIX_F_WRITE_START_TIMESTAMP"),
        Some(1.5)
    );
}

#[test]
fn malformed_records_are_named() {
    let mut names = Vec::new();
    names.extend_from_slice(&7u64.to_le_bytes());
    names.extend_from_slice(b"/no/terminator");
    let m = message(&handmade(&names, &posix_record(7, 0, 10), 4));
    assert!(m.starts_with("name records") && m.contains("NUL"), "{m}");

    let mut names = 7u64.to_le_bytes().to_vec();
    names.extend_from_slice(b"/f\0");
    let rec = posix_record(7, 0, 10);
    let m = message(&handmade(&names, &rec[..rec.len() - 3], 4));
    assert!(
        m.starts_with("POSIX module") && m.contains("whole number"),
        "{m}"
    );

    let m = message(&handmade(&names, &posix_record(7, 4, 10), 4));
    assert!(m.contains("rank 4"), "{m}");

    let m = message(&handmade(&names, &posix_record(7, 0, 10), 0));
    assert!(m.starts_with("job record") && m.contains("nprocs"), "{m}");

    // A name longer than PATH_MAX.
    let mut long = 7u64.to_le_bytes().to_vec();
    long.extend(std::iter::repeat_n(b'a', 5000));
    long.push(0);
    let m = message(&handmade(&long, &posix_record(7, 0, 10), 4));
    assert!(m.contains("4096"), "{m}");
}

#[test]
fn a_zlib_bomb_is_refused() {
    use std::io::Write;
    // A job region that inflates to 1 MiB (the job record is 4 KiB): refused once the
    // output passes the bound, before it is all inflated.
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(&vec![0u8; 1 << 20]).unwrap();
    let bomb = z.finish().unwrap();
    let mut log = vec![0u8; 360];
    log[..4].copy_from_slice(b"3.21");
    log[8..16].copy_from_slice(&6_567_223i64.to_le_bytes());
    log.extend_from_slice(&bomb);
    let m = message(&log);
    assert!(
        m.starts_with("job record") && m.contains("more than 65536"),
        "{m}"
    );

    // Trailing garbage after a zlib stream is corrupt data, not silently ignored.
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(&[0u8; 2000]).unwrap();
    let mut region = z.finish().unwrap();
    region.extend_from_slice(b"garbage");
    let mut log = log[..360].to_vec();
    log.extend_from_slice(&region);
    let m = message(&log);
    assert!(m.starts_with("job record") && m.contains("zlib"), "{m}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    /// Random byte flips anywhere in a real log: the reader returns a log or an error,
    /// never panics, and an error names a part of the log.
    #[test]
    fn byte_flips_never_panic(flips in proptest::collection::vec((0usize..10_717, 1u8..=255), 1..8)) {
        let mut bytes = goodost();
        for (at, x) in flips {
            let at = at % bytes.len();
            bytes[at] ^= x;
        }
        if let Err(e) = DarshanLog::parse(&bytes) {
            prop_assert!(!e.part.is_empty() && !e.message.is_empty());
        }
    }

    /// Truncated at any point and flipped: still no panic.
    #[test]
    fn truncated_and_flipped_never_panic(len in 0usize..10_717, at in 0usize..10_717, x in 1u8..=255) {
        let mut bytes = goodost();
        bytes.truncate(len);
        if !bytes.is_empty() {
            let at = at % bytes.len();
            bytes[at] ^= x;
        }
        if let Err(e) = DarshanLog::parse(&bytes) {
            prop_assert!(!e.part.is_empty() && !e.message.is_empty());
        }
    }
}
