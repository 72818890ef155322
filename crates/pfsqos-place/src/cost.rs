//! Load-balance metrics of iez: OST and OSS utilization (Section IV) and `OSTCost` (eq. 7),
//! plus the OSS load of Algorithm 2.

use super::stats::{OstStats, ServerLoad, ServerStats};

/// iez's weights of an OSS's CPU and memory utilization in its load (Algorithm 2's `cpuweight`
/// and `memweight`). The paper names them but gives no values; we weigh both equally, which
/// keeps the load a fraction in `0..=1`.
pub const OSS_CPU_WEIGHT: f64 = 0.5;
pub const OSS_MEM_WEIGHT: f64 = 0.5;

/// An OSS's load (Algorithm 2): `cpuweight·cpu + memweight·mem`.
pub fn oss_load(load: &ServerLoad, cpu_weight: f64, mem_weight: f64) -> f64 {
    cpu_weight * load.cpu_util + mem_weight * load.mem_util
}

/// OST utilization: used bytes over total bytes (Algorithm 2's `ostCost`, Section IV's *OST
/// Utilization* when `used_bytes` counts the application's bytes). 0 for an OST of no size.
pub fn ost_utilization(used_bytes: u64, total_bytes: u64) -> f64 {
    if total_bytes == 0 {
        return 0.0;
    }
    used_bytes as f64 / total_bytes as f64
}

/// Utilization of each OST of a snapshot (`(total − avail) / total`).
pub fn ost_utilizations(osts: &[OstStats]) -> Vec<f64> {
    osts.iter()
        .map(|o| ost_utilization(o.used_bytes(), o.total_bytes))
        .collect()
}

/// Utilization of each OSS: the used bytes of its OSTs over their total bytes (Section IV-D,
/// Fig. 11). An OSS without OSTs has 0.
pub fn oss_utilizations(stats: &ServerStats) -> Vec<f64> {
    let mut used = vec![0u128; stats.osses.len()];
    let mut total = vec![0u128; stats.osses.len()];
    for o in &stats.osts {
        used[o.oss.0 as usize] += u128::from(o.used_bytes());
        total[o.oss.0 as usize] += u128::from(o.total_bytes);
    }
    used.iter()
        .zip(&total)
        .map(|(&u, &t)| if t == 0 { 0.0 } else { u as f64 / t as f64 })
        .collect()
}

/// `OSTCost = MaxOSTUtil / MeanOSTUtil` (eq. 7): 1 is perfectly balanced, larger is worse.
/// `None` for no OSTs or a mean of 0 (nothing stored: balance undefined).
pub fn ost_cost(utilizations: &[f64]) -> Option<f64> {
    if utilizations.is_empty() {
        return None;
    }
    let max = utilizations.iter().copied().fold(f64::MIN, f64::max);
    let mean = utilizations.iter().sum::<f64>() / utilizations.len() as f64;
    if mean <= 0.0 || !mean.is_finite() {
        return None;
    }
    Some(max / mean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::OssId;

    #[test]
    fn the_papers_figures() {
        // Section IV-F: max 35 %, mean 30 %: OSTCost 1.17.
        let mut u = vec![0.30; 15];
        u[0] = 0.35;
        u[1] = 0.25;
        let c = ost_cost(&u).unwrap();
        assert!((c - 0.35 / 0.30).abs() < 1e-12 && (c - 1.17).abs() < 0.005);
        assert!((ost_cost(&[0.3; 15]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(ost_cost(&[0.5; 4]), Some(1.0));
        assert_eq!(ost_cost(&[]), None);
        assert_eq!(ost_cost(&[0.0, 0.0]), None);
    }

    #[test]
    fn utilizations() {
        let mut s = ServerStats::uniform(2, 2, 100, 100);
        s.osts[0].avail_bytes = 50;
        s.osts[3].avail_bytes = 0;
        assert_eq!(ost_utilizations(&s.osts), [0.5, 0.0, 0.0, 1.0]);
        assert_eq!(oss_utilizations(&s), [0.25, 0.5]);
        s.osses.push(ServerLoad::IDLE);
        s.osts[3].oss = OssId(1);
        assert_eq!(oss_utilizations(&s)[2], 0.0);
        assert_eq!(ost_utilization(1, 0), 0.0);
        let l = ServerLoad {
            cpu_util: 0.4,
            mem_util: 0.2,
        };
        assert!((oss_load(&l, OSS_CPU_WEIGHT, OSS_MEM_WEIGHT) - 0.3).abs() < 1e-12);
    }
}
