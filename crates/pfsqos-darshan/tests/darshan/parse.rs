//! The reader against PyDarshan's records for every committed log (tests/data/*.reference.json,
//! made by scripts/darshan-reference.py), against logs written here in either byte order and
//! every compression, and against malformed, truncated, hostile and fuzzed logs.
//!
//! `PFSQOS_DARSHAN_CORPUS=DIR PFSQOS_DARSHAN_CORPUS_REFERENCE=REFDIR` also checks every log
//! of a corpus (such as darshan-hpc/darshan-logs) against its reference records
//! (`scripts/darshan-reference.py DIR REFDIR`) and imports it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pfsqos_darshan::log::{
    Compression, CounterRecord, DarshanLog, Limits, POSIX_COUNTER_NAMES, POSIX_F_COUNTER_NAMES,
    SUPPORTED_VERSIONS,
};
use pfsqos_darshan::{import, ImportOptions, TraceInput};
use proptest::prelude::*;
use serde_json::Value;

use crate::writer;

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
    assert!(logs.len() >= 8, "the committed logs are there: {logs:?}");
    logs
}

fn reference_in(dir: &Path, log: &Path) -> Option<Value> {
    let stem = log.file_stem()?.to_str()?;
    let path = dir.join(format!("{stem}.reference.json"));
    let text = std::fs::read_to_string(&path).ok()?;
    Some(serde_json::from_str(&text).expect("reference JSON"))
}

fn reference(log: &Path) -> Value {
    reference_in(log.parent().unwrap(), log).unwrap_or_else(|| {
        panic!(
            "{}: no reference (run scripts/darshan-reference.py)",
            log.display()
        )
    })
}

fn int(v: &Value) -> i64 {
    v.as_i64()
        .unwrap_or_else(|| panic!("integer expected, got {v}"))
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .map(|a| a.iter().map(int).collect())
        .unwrap_or_default()
}

fn bits(x: f64) -> i64 {
    x.to_bits() as i64
}

/// Every difference between `log` and PyDarshan's records of it, as messages.
///
/// One known difference is accepted, and checked to be exactly that: libdarshan-util
/// (darshan-posix-logutils.c) does not byte-swap POSIX floating-point counters 10 to 12
/// (`F_META_TIME`, `F_MAX_READ_TIME`, `F_MAX_WRITE_TIME`) of a big-endian log with POSIX
/// records older than version 4 (its skip list tests floating-point indexes against the
/// rename counters' integer indexes), so PyDarshan's values are those counters' bytes
/// reversed. And its in-place up-conversion of version 2 and 3 POSIX records
/// (darshan-posix-logutils.c) moves 16 bytes fewer than the record holds, so the last two
/// floating-point counters (`F_VARIANCE_RANK_TIME`, `F_VARIANCE_RANK_BYTES`) come out 0
/// there: those must be 0 in PyDarshan's records, whatever the log holds.
fn compare(log: &DarshanLog, r: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok && bad.len() < 20 {
            bad.push(what);
        }
    };
    check(
        log.version == r["version"].as_str().unwrap_or(""),
        format!("version {} vs {}", log.version, r["version"]),
    );
    let job = &r["job"];
    for (ours, key) in [
        (log.job.uid, "uid"),
        (log.job.start_time_s, "start_time_sec"),
        (log.job.start_time_ns, "start_time_nsec"),
        (log.job.end_time_s, "end_time_sec"),
        (log.job.end_time_ns, "end_time_nsec"),
        (log.job.nprocs, "nprocs"),
        (log.job.jobid, "jobid"),
    ] {
        check(
            ours == int(&job[key]),
            format!("job {key}: {ours} vs {}", job[key]),
        );
    }
    let meta: BTreeMap<String, String> = log.job.metadata.iter().cloned().collect();
    let want: BTreeMap<String, String> = job["metadata"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    check(meta == want, format!("job metadata {meta:?} vs {want:?}"));
    check(
        log.job.exe == r["exe"].as_str().unwrap_or(""),
        format!("exe {:?} vs {}", log.job.exe, r["exe"]),
    );
    let modules: BTreeMap<String, (i64, i64, bool)> = log
        .modules
        .iter()
        .map(|m| {
            (
                m.name.clone(),
                (m.version as i64, m.region.len as i64, m.partial),
            )
        })
        .collect();
    let want: BTreeMap<String, (i64, i64, bool)> = r["modules"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                (
                    int(&v["ver"]),
                    int(&v["len"]),
                    v["partial"].as_bool().unwrap_or(false),
                ),
            )
        })
        .collect();
    check(modules == want, format!("modules {modules:?} vs {want:?}"));
    let names = r["names"].as_object().unwrap();
    check(
        log.names.len() == names.len(),
        format!("{} name records vs {}", log.names.len(), names.len()),
    );
    for (id, name) in names {
        let id: u64 = id.parse().unwrap();
        check(
            log.name(id) == name.as_str(),
            format!("name of {id}: {:?} vs {name}", log.name(id)),
        );
    }
    if let Some(cn) = r.get("counter_names") {
        let posix: Vec<&str> = cn["POSIX"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        check(posix == POSIX_COUNTER_NAMES, "POSIX counter layout".into());
        let f: Vec<&str> = r["fcounter_names"]["POSIX"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        check(f == POSIX_F_COUNTER_NAMES, "POSIX fcounter layout".into());
    }

    let posix_version = log
        .modules
        .iter()
        .find(|m| m.name == "POSIX")
        .map(|m| m.version)
        .unwrap_or(0);
    let unswapped = |k: usize| log.big_endian && posix_version < 4 && (10..=12).contains(&k);
    let posix: Vec<CounterRecord> = log
        .posix
        .iter()
        .map(|p| CounterRecord {
            id: p.id,
            rank: p.rank,
            counters: p.counters.to_vec(),
            fcounters: p.fcounters.to_vec(),
        })
        .collect();
    for (module, ours) in [
        ("POSIX", &posix),
        ("MPI-IO", &log.mpiio),
        ("STDIO", &log.stdio),
    ] {
        let want = r[module].as_array().cloned().unwrap_or_default();
        check(
            ours.len() == want.len(),
            format!("{module}: {} records vs {}", ours.len(), want.len()),
        );
        for (i, (o, w)) in ours.iter().zip(&want).enumerate() {
            check(
                o.id == w["id"].as_u64().unwrap() && o.rank == int(&w["rank"]),
                format!("{module} record {i}: id/rank"),
            );
            check(
                o.counters == ints(&w["counters"]),
                format!("{module} record {i} counters"),
            );
            let wf = ints(&w["fcounter_bits"]);
            check(
                wf.len() == o.fcounters.len(),
                format!("{module} record {i}: fcounter count"),
            );
            for (k, (x, y)) in o.fcounters.iter().zip(&wf).enumerate() {
                let ok = if module == "POSIX" && (2..=3).contains(&posix_version) && k >= 15 {
                    *y == 0
                } else if module == "POSIX" && unswapped(k) {
                    x.to_bits().swap_bytes() as i64 == *y
                } else {
                    bits(*x) == *y
                };
                check(
                    ok,
                    format!("{module} record {i} fcounter {k}: {x} vs bits {y}"),
                );
            }
        }
    }
    let want = r["LUSTRE"].as_array().cloned().unwrap_or_default();
    check(
        log.lustre.len() == want.len(),
        format!("LUSTRE: {} records vs {}", log.lustre.len(), want.len()),
    );
    for (i, (o, w)) in log.lustre.iter().zip(&want).enumerate() {
        check(
            o.id == w["id"].as_u64().unwrap() && o.rank == int(&w["rank"]),
            format!("LUSTRE record {i}: id/rank"),
        );
        let comps = w["components"].as_array().unwrap();
        check(
            o.components.len() == comps.len(),
            format!("LUSTRE record {i}: components"),
        );
        for (c, wc) in o.components.iter().zip(comps) {
            check(
                c.counters.to_vec() == ints(&wc["counters"])
                    && c.ost_ids == ints(&wc["ost_ids"])
                    && c.pool_name == wc["pool_name"].as_str().unwrap_or(""),
                format!("LUSTRE record {i}: component {c:?} vs {wc}"),
            );
        }
    }
    let want = r["DXT_POSIX"].as_array().cloned().unwrap_or_default();
    check(
        log.dxt_posix.len() == want.len(),
        format!(
            "DXT_POSIX: {} records vs {}",
            log.dxt_posix.len(),
            want.len()
        ),
    );
    for (i, (o, w)) in log.dxt_posix.iter().zip(&want).enumerate() {
        check(
            o.id == w["id"].as_u64().unwrap()
                && o.rank == int(&w["rank"])
                && o.hostname == w["hostname"].as_str().unwrap_or(""),
            format!("DXT_POSIX record {i}: id/rank/hostname"),
        );
        for (segs, key) in [(&o.writes, "write_segments"), (&o.reads, "read_segments")] {
            let ws = w[key].as_array().unwrap();
            let ours: Vec<Vec<i64>> = segs
                .iter()
                .map(|s| vec![s.offset, s.length, bits(s.start_s), bits(s.end_s)])
                .collect();
            let theirs: Vec<Vec<i64>> = ws.iter().map(ints).collect();
            check(ours == theirs, format!("DXT_POSIX record {i} {key}"));
        }
    }
    let want = r["HEATMAP"].as_array().cloned().unwrap_or_default();
    check(
        log.heatmap.len() == want.len(),
        format!("HEATMAP: {} records vs {}", log.heatmap.len(), want.len()),
    );
    for (i, (o, w)) in log.heatmap.iter().zip(&want).enumerate() {
        check(
            o.id == w["id"].as_u64().unwrap()
                && o.rank == int(&w["rank"])
                && bits(o.bin_width_s) == int(&w["bin_width_bits"])
                && o.write_bins.len() as i64 == int(&w["nbins"])
                && o.write_bins == ints(&w["write_bins"])
                && o.read_bins == ints(&w["read_bins"]),
            format!("HEATMAP record {i}"),
        );
    }
    bad
}

#[test]
fn every_committed_log_matches_pydarshan_exactly() {
    for path in logs() {
        let name = path.display().to_string();
        let r = reference(&path);
        if r.get("error").is_some() {
            // The bzip2 twin: PyDarshan's wheel reads no bzip2; compared with its zlib twin.
            continue;
        }
        let log = DarshanLog::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(SUPPORTED_VERSIONS.contains(&log.version.as_str()));
        let bad = compare(&log, &r);
        assert!(bad.is_empty(), "{name}: {bad:#?}");
    }
}

#[test]
fn the_committed_logs_cover_versions_modules_and_compressions() {
    let parsed: Vec<DarshanLog> = logs()
        .iter()
        .map(|p| DarshanLog::read(p).unwrap())
        .collect();
    for v in ["3.10", "3.21", "3.41"] {
        assert!(parsed.iter().any(|l| l.version == v), "a {v} log");
    }
    for module in ["POSIX", "MPI-IO", "STDIO", "LUSTRE", "DXT_POSIX", "HEATMAP"] {
        assert!(
            parsed
                .iter()
                .any(|l| l.modules.iter().any(|m| m.name == module)),
            "a log with {module}"
        );
    }
    assert!(parsed.iter().any(|l| l.compression == Compression::Bzip2));
    assert!(parsed
        .iter()
        .any(|l| l.lustre.iter().any(|r| !r.components.is_empty())));
}

#[test]
fn a_bzip2_log_reads_as_its_zlib_twin() {
    let z = DarshanLog::read(&data_dir().join("bursts-3.41.darshan")).unwrap();
    let b = DarshanLog::read(&data_dir().join("bursts-3.41-bzip2.darshan")).unwrap();
    assert_eq!(z.compression, Compression::Zlib);
    assert_eq!(b.compression, Compression::Bzip2);
    assert!(!z.heatmap.is_empty() && !z.posix.is_empty());
    assert_eq!(
        (
            &z.job,
            &z.names,
            &z.posix,
            &z.stdio,
            &z.dxt_posix,
            &z.heatmap
        ),
        (
            &b.job,
            &b.names,
            &b.posix,
            &b.stdio,
            &b.dxt_posix,
            &b.heatmap
        )
    );
}

/// Every committed log written again in the other byte order and with each compression
/// (and module versions the fixtures lack: DXT_POSIX version 2) reads back to the same
/// records.
#[test]
fn logs_rewritten_in_either_byte_order_and_compression_read_the_same() {
    for path in logs() {
        let log = DarshanLog::read(&path).unwrap();
        for big in [false, true] {
            for c in [Compression::Zlib, Compression::Bzip2, Compression::None] {
                for dxt_version in [1, 2] {
                    let bytes = writer::write(&log, big, c, dxt_version);
                    let again = DarshanLog::parse(&bytes)
                        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    assert_eq!(again.big_endian, big);
                    assert_eq!(again.version, "3.41");
                    let name = path.display();
                    assert_eq!(again.job.nprocs, log.job.nprocs, "{name}");
                    assert_eq!(again.job.exe, log.job.exe, "{name}");
                    assert_eq!(again.names, log.names, "{name}");
                    assert_eq!(again.posix, log.posix, "{name}");
                    assert_eq!(again.mpiio, log.mpiio, "{name}");
                    assert_eq!(again.stdio, log.stdio, "{name}");
                    assert_eq!(again.lustre, log.lustre, "{name}");
                    assert_eq!(again.dxt_posix, log.dxt_posix, "{name}");
                    assert_eq!(again.heatmap, log.heatmap, "{name}");
                }
            }
        }
    }
}

/// Without a corpus, the corpus test skips through `pfsqos_testkit::skip`, so the run's list
/// of skipped tests names it (a silent early return passed as if it had checked the corpus):
/// this test binary runs that one test again with no corpus and a skip log of its own.
#[test]
fn the_corpus_test_lists_its_skip_without_a_corpus() {
    let dir = tempfile_dir();
    let log = dir.join("skipped");
    // The test's name within this binary: its module path without the crate's.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let name = format!("{module}::corpus_matches_pydarshan_and_imports");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &name, "--test-threads=1"])
        .env_remove("PFSQOS_DARSHAN_CORPUS")
        .env_remove("PFSQOS_DARSHAN_CORPUS_REFERENCE")
        .env(pfsqos_testkit::SKIP_LOG_ENV, &log)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // The run must have run that one test, not filtered it out.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 passed"), "{stdout}");
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        logged.starts_with("SKIP: corpus_matches_pydarshan_and_imports: set PFSQOS_DARSHAN_CORPUS"),
        "{logged:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A directory of this process's own under the system's temporary directory.
fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("pfsqos-darshan-skip-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The corpus: every log against its reference records, and through the importer.
#[test]
fn corpus_matches_pydarshan_and_imports() {
    let (Some(dir), Some(refs)) = (
        std::env::var_os("PFSQOS_DARSHAN_CORPUS"),
        std::env::var_os("PFSQOS_DARSHAN_CORPUS_REFERENCE"),
    ) else {
        pfsqos_testkit::skip(
            "corpus_matches_pydarshan_and_imports",
            "set PFSQOS_DARSHAN_CORPUS (a directory of logs) and \
             PFSQOS_DARSHAN_CORPUS_REFERENCE (their reference records from \
             scripts/darshan-reference.py) to run it",
        );
        return;
    };
    let mut paths = Vec::new();
    let mut stack = vec![PathBuf::from(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "darshan") {
                paths.push(p);
            }
        }
    }
    paths.sort();
    let refs = PathBuf::from(refs);
    let (mut with_posix, mut imported, mut matched, mut read) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for p in &paths {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let r = reference_in(&refs, p);
        // POSIX I/O: a POSIX record that read or wrote a byte.
        let has_posix = r
            .as_ref()
            .and_then(|r| r["POSIX"].as_array())
            .is_some_and(|a| {
                a.iter()
                    .any(|p| int(&p["counters"][14]) > 0 || int(&p["counters"][15]) > 0)
            });
        with_posix += has_posix as usize;
        let log = match DarshanLog::read(p) {
            Ok(l) => l,
            Err(e) => {
                println!("{name}: refused: {e}");
                if has_posix {
                    failures.push(format!("{name}: {e}"));
                }
                continue;
            }
        };
        read += 1;
        match &r {
            Some(r) if r.get("error").is_none() => {
                let bad = compare(&log, r);
                if bad.is_empty() {
                    matched += 1;
                } else {
                    failures.push(format!("{name}: differs from PyDarshan: {bad:?}"));
                }
            }
            _ => println!("{name}: no reference records"),
        }
        let input = TraceInput {
            label: name.clone(),
            log,
        };
        match import(&[input], &ImportOptions::default()) {
            Ok(_) => {
                imported += 1;
                println!("{name}: imported");
            }
            Err(e) => {
                println!("{name}: not imported: {e}");
                if has_posix {
                    failures.push(format!("{name}: {e}"));
                }
            }
        }
    }
    println!(
        "corpus: {} logs, {read} read, {matched} equal to PyDarshan's records, {with_posix} \
         with POSIX I/O, {imported} imported",
        paths.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
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

    for (version, hint) in [
        ("3.50", "newer"),
        ("2.06", "Darshan 2"),
        ("3.30", "supported"),
    ] {
        let mut v = good.clone();
        v[..8].copy_from_slice(format!("{version}\0\0\0\0").as_bytes());
        let m = message(&v);
        assert!(
            m.contains(version) && m.contains("not supported") && m.contains(hint),
            "{m}"
        );
    }

    let mut v = good.clone();
    v[8] ^= 0xff;
    assert!(message(&v).contains("magic"), "{}", message(&v));

    let mut v = good.clone();
    v[16] = 9;
    assert!(message(&v).contains("compression"));

    // A bzip2 flag on zlib data: corrupt bzip2 data.
    let mut v = good.clone();
    v[16] = 1;
    assert!(message(&v).contains("bzip2"), "{}", message(&v));

    // The POSIX region (slot 1) pointing past the end of the file.
    let mut v = good.clone();
    v[40 + 16..40 + 24].copy_from_slice(&(good.len() as u64).to_le_bytes());
    let m = message(&v);
    assert!(
        m.contains("POSIX module region") && m.contains("outside"),
        "{m}"
    );

    // A region whose end overflows 64 bits.
    let mut v = good.clone();
    v[40 + 24..40 + 32].copy_from_slice(&u64::MAX.to_le_bytes());
    let m = message(&v);
    assert!(m.contains("outside"), "{m}");

    // Regions overlapping.
    let mut v = good.clone();
    let name_off = u64::from_le_bytes(v[24..32].try_into().unwrap());
    v[40 + 16..40 + 24].copy_from_slice(&name_off.to_le_bytes());
    assert!(message(&v).contains("overlap"), "{}", message(&v));

    // A POSIX record version Darshan never wrote.
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

/// A record cut short, a rank out of range, a name without its terminator, hostile counts:
/// written by hand (uncompressed) to reach checks a real log cannot.
#[test]
fn malformed_records_are_named() {
    let base = DarshanLog::read(&data_dir().join("bursts-3.41.darshan")).unwrap();
    let rewrite = |f: &dyn Fn(&mut writer::Parts)| {
        let mut parts = writer::parts(&base, false, 2);
        f(&mut parts);
        parts.assemble(false, Compression::None)
    };

    let m = message(&rewrite(&|p| {
        p.names = 7u64.to_le_bytes().to_vec();
        p.names.extend_from_slice(b"/no/terminator");
    }));
    assert!(m.starts_with("name records") && m.contains("NUL"), "{m}");

    let m = message(&rewrite(&|p| {
        let posix = p.module_mut(1);
        posix.truncate(posix.len() - 3);
    }));
    assert!(
        m.starts_with("POSIX module") && m.contains("ends") && m.contains("truncated"),
        "{m}"
    );

    let m = message(&rewrite(&|p| {
        p.module_mut(1)[8..16].copy_from_slice(&5i64.to_le_bytes());
    }));
    assert!(m.contains("rank 5"), "{m}");

    let m = message(&rewrite(&|p| {
        p.job[40..48].copy_from_slice(&0i64.to_le_bytes());
    }));
    assert!(m.starts_with("job record") && m.contains("nprocs"), "{m}");

    // A name longer than PATH_MAX.
    let m = message(&rewrite(&|p| {
        p.names = 7u64.to_le_bytes().to_vec();
        p.names.extend(std::iter::repeat_n(b'a', 5000));
        p.names.push(0);
    }));
    assert!(m.contains("4096"), "{m}");

    // A heatmap record claiming 2^62 bins, a DXT record claiming 2^62 segments, and one
    // whose counts overflow when added: refused before anything is allocated for them.
    let m = message(&rewrite(&|p| {
        p.module_mut(15)[24..32].copy_from_slice(&(1i64 << 62).to_le_bytes());
    }));
    assert!(m.starts_with("HEATMAP module") && m.contains("bins"), "{m}");
    let m = message(&rewrite(&|p| {
        p.module_mut(10)[88..96].copy_from_slice(&(1i64 << 62).to_le_bytes());
    }));
    assert!(
        m.starts_with("DXT_POSIX module") && m.contains("memory"),
        "{m}"
    );
    let m = message(&rewrite(&|p| {
        let d = p.module_mut(10);
        d[88..96].copy_from_slice(&i64::MAX.to_le_bytes());
        d[96..104].copy_from_slice(&i64::MAX.to_le_bytes());
    }));
    assert!(
        m.starts_with("DXT_POSIX module") && m.contains("writes"),
        "{m}"
    );
    let m = message(&rewrite(&|p| {
        p.module_mut(15)[16..24].copy_from_slice(&f64::NAN.to_le_bytes());
    }));
    assert!(m.contains("bin width"), "{m}");
}

#[test]
fn a_compressed_bomb_is_refused_in_bounded_memory() {
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

    // Regions that inflate far (concatenated zlib and bzip2 streams of zeros: 16 KiB of
    // file per 64 MiB): as streams, never inflated whole, refused by the bounds (small
    // here, so the test is quick; the defaults are `INFLATED_LEN_MAX` and
    // `KEPT_BYTES_MAX`). Zeros in the POSIX region are valid records of rank 0, each one
    // kept: the memory bound refuses them. In the name region, ids 0 with empty names, of
    // which one is kept: the inflation bound refuses them.
    let base = DarshanLog::read(&data_dir().join("bursts-3.41.darshan")).unwrap();
    let small = Limits {
        inflated_len_max: 256 << 20,
        kept_bytes_max: 32 << 20,
    };
    for c in [Compression::Zlib, Compression::Bzip2] {
        let one = writer::compress(c, &vec![0u8; 4 << 20]);
        let bomb: Vec<u8> = one.iter().copied().cycle().take(one.len() * 16).collect();
        let mut parts = writer::parts(&base, false, 1);
        parts.set_compressed_module(1, bomb.clone());
        let m = DarshanLog::parse_with(&parts.assemble(false, c), &small)
            .unwrap_err()
            .to_string();
        assert!(m.starts_with("POSIX module") && m.contains("memory"), "{m}");

        let names: Vec<u8> = one.iter().copied().cycle().take(one.len() * 128).collect();
        let mut parts = writer::parts(&base, false, 1);
        parts.compressed_names = Some(names);
        let m = DarshanLog::parse_with(&parts.assemble(false, c), &small)
            .unwrap_err()
            .to_string();
        assert!(
            m.starts_with("name records") && m.contains("more than"),
            "{m}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// Random byte flips anywhere in a committed log (any of them): the reader returns a
    /// log or an error, never panics, and an error names a part of the log.
    #[test]
    fn byte_flips_never_panic(
        which in 0usize..64,
        flips in proptest::collection::vec((0usize..1_000_000, 1u8..=255), 1..8),
    ) {
        let paths = logs();
        let mut bytes = std::fs::read(&paths[which % paths.len()]).unwrap();
        for (at, x) in flips {
            let at = at % bytes.len();
            bytes[at] ^= x;
        }
        if let Err(e) = DarshanLog::parse(&bytes) {
            prop_assert!(!e.part.is_empty() && !e.message.is_empty());
        }
    }

    /// Flips inside the decompressed records (rewritten uncompressed, so a flip reaches the
    /// record fields rather than the zlib stream), in either byte order: no panic.
    #[test]
    fn record_flips_never_panic(
        which in 0usize..64,
        big in any::<bool>(),
        flips in proptest::collection::vec((0usize..1_000_000, 1u8..=255), 1..6),
    ) {
        let paths = logs();
        let log = DarshanLog::read(&paths[which % paths.len()]).unwrap();
        let mut bytes = writer::write(&log, big, Compression::None, 2);
        for (at, x) in flips {
            let at = 1328 + at % (bytes.len() - 1328);
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

/// The import of a large log (about 100 MB: POSIX, DXT_POSIX and HEATMAP records of 4096
/// ranks), timed: the median of 3 parses and of 3 imports (parse + conversion). Not an
/// assertion (wall-clock times are not asserted): `scripts/bench-darshan-import.sh` runs it
/// and writes the figures into docs/benchmarks.md.
#[test]
#[ignore]
fn large_log_import_time() {
    let bytes = writer::large(100 << 20);
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (mut parses, mut imports) = (Vec::new(), Vec::new());
    let (mut records, mut segments, mut toml_len) = (0, 0, 0);
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let log = DarshanLog::parse(&bytes).unwrap();
        parses.push(t.elapsed().as_secs_f64());
        records = log.posix.len();
        segments = log
            .dxt_posix
            .iter()
            .map(|d| d.writes.len() + d.reads.len())
            .sum::<usize>();
        let input = TraceInput {
            label: "large".into(),
            log,
        };
        let imported = import(&[input], &ImportOptions::default()).unwrap();
        imports.push(t.elapsed().as_secs_f64());
        toml_len = imported.toml.len();
    }
    println!(
        "large log: {} bytes, {records} POSIX records, {segments} DXT segments: parsed in \
         {:.2} s, imported (parse + conversion) in {:.2} s (medians of 3); scenario {toml_len} bytes",
        bytes.len(),
        median(parses),
        median(imports),
    );
}
