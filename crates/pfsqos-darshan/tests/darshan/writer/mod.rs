//! Writes Darshan logs in format 3.41 (in either byte order, with each compression) from a
//! parsed log, for tests: round trips, hand-broken records, and a large generated log. The
//! layout is the one the reader documents (src/log.rs).

use std::io::Write;

use pfsqos_darshan::log::{Compression, DarshanLog};

/// A log's regions before compression.
pub struct Parts {
    pub job: Vec<u8>,
    pub names: Vec<u8>,
    /// (module id as of 3.41, record version, records).
    pub modules: Vec<(usize, u32, Vec<u8>)>,
    /// Regions given already compressed, by module id.
    pub compressed: Vec<(usize, Vec<u8>)>,
    /// The name region given already compressed.
    pub compressed_names: Option<Vec<u8>>,
}

struct Enc {
    big: bool,
    out: Vec<u8>,
}

impl Enc {
    fn new(big: bool) -> Enc {
        Enc {
            big,
            out: Vec::new(),
        }
    }
    fn u64(&mut self, v: u64) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.out.extend_from_slice(&b);
    }
    fn i64(&mut self, v: i64) {
        self.u64(v as u64);
    }
    fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
    fn u32(&mut self, v: u32) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.out.extend_from_slice(&b);
    }
    fn text(&mut self, s: &str, len: usize) {
        let mut b = s.as_bytes().to_vec();
        b.resize(len, 0);
        self.out.extend_from_slice(&b);
    }
}

pub fn parts(log: &DarshanLog, big: bool, dxt_version: u32) -> Parts {
    let j = &log.job;
    let mut e = Enc::new(big);
    for v in [
        j.uid,
        j.start_time_s,
        j.start_time_ns,
        j.end_time_s,
        j.end_time_ns,
        j.nprocs,
        j.jobid,
    ] {
        e.i64(v);
    }
    let meta: String = j
        .metadata
        .iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect();
    e.text(&meta, 1024);
    e.out.extend_from_slice(j.exe.as_bytes());
    e.out.extend_from_slice(b"\n\tlustre\t/scratch\n\0");
    let job = e.out;

    let mut e = Enc::new(big);
    for (id, name) in &log.names {
        e.u64(*id);
        e.out.extend_from_slice(name.as_bytes());
        e.out.push(0);
    }
    let names = e.out;

    let mut modules = Vec::new();
    if !log.posix.is_empty() {
        let mut e = Enc::new(big);
        for r in &log.posix {
            e.u64(r.id);
            e.i64(r.rank);
            r.counters.iter().for_each(|&c| e.i64(c));
            r.fcounters.iter().for_each(|&f| e.f64(f));
        }
        modules.push((1, 4, e.out));
    }
    for (id, version, records) in [(2usize, 3u32, &log.mpiio), (9, 2, &log.stdio)] {
        if records.is_empty() {
            continue;
        }
        let mut e = Enc::new(big);
        for r in records {
            e.u64(r.id);
            e.i64(r.rank);
            r.counters.iter().for_each(|&c| e.i64(c));
            r.fcounters.iter().for_each(|&f| e.f64(f));
        }
        modules.push((id, version, e.out));
    }
    if !log.lustre.is_empty() {
        let mut e = Enc::new(big);
        for r in &log.lustre {
            e.u64(r.id);
            e.i64(r.rank);
            e.i64(r.components.len() as i64);
            e.i64(r.components.iter().map(|c| c.ost_ids.len() as i64).sum());
            for c in &r.components {
                c.counters.iter().for_each(|&v| e.i64(v));
                e.text(&c.pool_name, 16);
            }
            for c in &r.components {
                c.ost_ids.iter().for_each(|&v| e.i64(v));
            }
        }
        modules.push((8, 2, e.out));
    }
    if !log.dxt_posix.is_empty() {
        let mut e = Enc::new(big);
        for r in &log.dxt_posix {
            e.u64(r.id);
            e.i64(r.rank);
            e.i64(0);
            e.text(&r.hostname, 64);
            e.i64(r.writes.len() as i64);
            e.i64(r.reads.len() as i64);
            for s in r.writes.iter().chain(&r.reads) {
                e.i64(s.offset);
                e.i64(s.length);
                e.f64(s.start_s);
                e.f64(s.end_s);
                if dxt_version >= 2 {
                    e.u64(0x7f00_dead_beef);
                }
            }
        }
        modules.push((10, dxt_version, e.out));
    }
    if !log.heatmap.is_empty() {
        let mut e = Enc::new(big);
        for r in &log.heatmap {
            e.u64(r.id);
            e.i64(r.rank);
            e.f64(r.bin_width_s);
            e.i64(r.write_bins.len() as i64);
            e.u64(0);
            e.u64(0);
            r.write_bins.iter().for_each(|&v| e.i64(v));
            r.read_bins.iter().for_each(|&v| e.i64(v));
        }
        modules.push((15, 1, e.out));
    }
    Parts {
        job,
        names,
        modules,
        compressed: Vec::new(),
        compressed_names: None,
    }
}

pub fn compress(c: Compression, raw: &[u8]) -> Vec<u8> {
    match c {
        Compression::None => raw.to_vec(),
        Compression::Zlib => {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            z.write_all(raw).unwrap();
            z.finish().unwrap()
        }
        Compression::Bzip2 => {
            let mut z = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
            z.write_all(raw).unwrap();
            z.finish().unwrap()
        }
    }
}

impl Parts {
    pub fn module_mut(&mut self, id: usize) -> &mut Vec<u8> {
        &mut self
            .modules
            .iter_mut()
            .find(|m| m.0 == id)
            .expect("the log has the module")
            .2
    }

    pub fn set_compressed_module(&mut self, id: usize, bytes: Vec<u8>) {
        self.compressed.push((id, bytes));
    }

    pub fn assemble(&self, big: bool, c: Compression) -> Vec<u8> {
        let mut out = vec![0u8; 1328];
        out[..4].copy_from_slice(b"3.41");
        let mut regions = Vec::new();
        let job = compress(c, &self.job);
        out.extend_from_slice(&job);
        let names = self
            .compressed_names
            .clone()
            .unwrap_or_else(|| compress(c, &self.names));
        let names_at = out.len() as u64;
        out.extend_from_slice(&names);
        for (id, version, raw) in &self.modules {
            let data = match self.compressed.iter().find(|m| m.0 == *id) {
                Some((_, d)) => d.clone(),
                None => compress(c, raw),
            };
            regions.push((*id, *version, out.len() as u64, data.len() as u64));
            out.extend_from_slice(&data);
        }
        let mut e = Enc::new(big);
        e.i64(6_567_223);
        out[8..16].copy_from_slice(&e.out);
        out[16] = match c {
            Compression::Zlib => 0,
            Compression::Bzip2 => 1,
            Compression::None => 2,
        };
        let mut e = Enc::new(big);
        e.u64(0);
        e.u64(names_at);
        e.u64(names.len() as u64);
        out[24..48].copy_from_slice(&e.out);
        for (id, version, at, len) in regions {
            let mut e = Enc::new(big);
            e.u64(at);
            e.u64(len);
            out[48 + 16 * id..48 + 16 * id + 16].copy_from_slice(&e.out);
            let mut e = Enc::new(big);
            e.u32(version);
            out[1072 + 4 * id..1072 + 4 * id + 4].copy_from_slice(&e.out);
        }
        out
    }
}

pub fn write(log: &DarshanLog, big: bool, c: Compression, dxt_version: u32) -> Vec<u8> {
    parts(log, big, dxt_version).assemble(big, c)
}

/// A zlib log of about `target` bytes: 4096 ranks, each with POSIX records of its own files
/// and a shared file, DXT_POSIX traces of every operation, and a POSIX heatmap; values from
/// a fixed pseudo-random sequence so the data compresses about as real counters do.
pub fn large(target: usize) -> Vec<u8> {
    let nprocs: i64 = 4096;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move |m: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % m.max(1)
    };
    let new = || flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    let (mut posix, mut dxt, mut heat, mut names) = (new(), new(), new(), Vec::new());
    let heatmap_id: u64 = 0xfeed;
    names.extend_from_slice(&heatmap_id.to_le_bytes());
    names.extend_from_slice(b"heatmap:POSIX\0");
    let mut file: u64 = 1;
    let mut rank = 0i64;
    loop {
        let total = posix.get_ref().len() + dxt.get_ref().len() + heat.get_ref().len();
        if total >= target {
            break;
        }
        let r = rank % nprocs;
        rank += 1;
        for _ in 0..4 {
            file += 1;
            names.extend_from_slice(&file.to_le_bytes());
            names.extend_from_slice(format!("/scratch/run/out.{r}.{file}\0").as_bytes());
            let ops = 1 + rnd(2000) as i64;
            let size = 4096 * (1 + rnd(256) as i64);
            let mut c = [0i64; 69];
            c[0] = 1 + rnd(4) as i64;
            c[4] = ops;
            c[15] = ops * size;
            c[17] = ops * size - 1;
            c[57] = size;
            c[61] = ops;
            for k in [18, 19, 20, 21, 22, 25] {
                c[k] = rnd(ops as u64) as i64;
            }
            let start = rnd(3_000_000) as f64 / 1000.0;
            let mut f = [0f64; 17];
            f[0] = start;
            f[2] = start + 0.001;
            f[6] = start + ops as f64 * 0.001;
            f[7] = f[6] + 0.0005;
            f[9] = ops as f64 * 0.0009;
            let mut rec = Vec::with_capacity(704);
            rec.extend_from_slice(&file.to_le_bytes());
            rec.extend_from_slice(&r.to_le_bytes());
            c.iter()
                .for_each(|v| rec.extend_from_slice(&v.to_le_bytes()));
            f.iter()
                .for_each(|v| rec.extend_from_slice(&v.to_le_bytes()));
            posix.write_all(&rec).unwrap();

            let segs = ops.min(64);
            let mut d = Vec::new();
            d.extend_from_slice(&file.to_le_bytes());
            d.extend_from_slice(&r.to_le_bytes());
            d.extend_from_slice(&0i64.to_le_bytes());
            let mut host = format!("nid{:05}", r / 64).into_bytes();
            host.resize(64, 0);
            d.extend_from_slice(&host);
            d.extend_from_slice(&segs.to_le_bytes());
            d.extend_from_slice(&0i64.to_le_bytes());
            for k in 0..segs {
                let t = start + k as f64 * 0.001 + rnd(1000) as f64 * 1e-7;
                d.extend_from_slice(&(k * size).to_le_bytes());
                d.extend_from_slice(&size.to_le_bytes());
                d.extend_from_slice(&t.to_le_bytes());
                d.extend_from_slice(&(t + 0.0009).to_le_bytes());
            }
            dxt.write_all(&d).unwrap();
        }
        if r == rank - 1 && rank <= nprocs {
            let nbins = 200i64;
            let mut h = Vec::new();
            h.extend_from_slice(&heatmap_id.to_le_bytes());
            h.extend_from_slice(&r.to_le_bytes());
            h.extend_from_slice(&16.0f64.to_le_bytes());
            h.extend_from_slice(&nbins.to_le_bytes());
            h.extend_from_slice(&[0u8; 16]);
            for _ in 0..2 * nbins {
                let v = if rnd(4) == 0 { rnd(1 << 30) as i64 } else { 0 };
                h.extend_from_slice(&v.to_le_bytes());
            }
            heat.write_all(&h).unwrap();
        }
    }
    let mut job = Vec::new();
    for v in [1000i64, 1_700_000_000, 0, 1_700_003_600, 0, nprocs, 424242] {
        job.extend_from_slice(&v.to_le_bytes());
    }
    let mut meta = b"lib_ver=3.5.0\nh=romio_no_indep_rw=true;cb_nodes=4\n".to_vec();
    meta.resize(1024, 0);
    job.extend_from_slice(&meta);
    job.extend_from_slice(b"/apps/sim --large\n\0");
    let parts = Parts {
        job,
        names,
        modules: Vec::new(),
        compressed: Vec::new(),
        compressed_names: None,
    };
    let mut parts = parts;
    for (id, version, z) in [(1usize, 4u32, posix), (10, 1, dxt), (15, 1, heat)] {
        parts.modules.push((id, version, Vec::new()));
        parts.set_compressed_module(id, z.finish().unwrap());
    }
    parts.assemble(false, Compression::Zlib)
}
