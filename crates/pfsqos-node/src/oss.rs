//! The OSS's mechanics around its NRS heads, written once for the simulator and the `ossd`.
//!
//! A domain (one OSS's `ost_io` service, or one OST with per-OST scheduling) holds one NRS
//! head per CPU partition, and the live daemon a regular and a high-priority head in each, as
//! Lustre does. An administrator's `lctl set_param` and a controller's [`ControlWrite`] reach
//! every one of those heads through [`apply_write`], so the two drivers cannot disagree on how
//! a write lands or which error it answers.

use pfsqos_core::control::ControlWrite;
use pfsqos_core::sched::nrs::{Nrs, NrsError};

/// Applies `write` to every head of a domain at `now_ns`; returns how many heads it reached.
///
/// The first error is the answer; a head that refuses does not stop the others. Lustre's
/// `ptlrpc_nrs_policy_control` instead stops at the first partition that refuses a write; the
/// two differ only after a write with a partial effect (a `change` that sets the rate, then
/// fails on a missing rank target), where pfsqos leaves every head alike rather than only the
/// first one changed (docs/tbf-conformance.md, "Departures";
/// `pfsqos_core::sched::nrs::write_service` is Lustre's walk, used by the conformance tests).
pub fn apply_write<'a, P: 'a>(
    heads: impl IntoIterator<Item = &'a mut Nrs<P>>,
    now_ns: u64,
    write: &ControlWrite,
) -> Result<usize, NrsError> {
    let mut result = Ok(());
    let (mut applied, mut failed) = (0usize, 0usize);
    for head in heads {
        let r = match write {
            ControlWrite::NrsPolicies(text) => head.write_policies(now_ns, text),
            ControlWrite::NrsTbfRule(text) => head.write_tbf_rule(now_ns, text),
        };
        match r {
            Ok(()) => applied += 1,
            Err(e) => {
                failed += 1;
                if result.is_ok() {
                    result = Err(e);
                }
            }
        }
    }
    // Not asserted: that every head answers alike. The regular and high-priority heads may
    // hold different policies (`nrs_policies=hp fifo`), so one write can suit some and not
    // others, as in Lustre.
    assert!(applied + failed > 0, "a domain has at least one head");
    result.map(|()| applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pfsqos_core::errno::Errno;
    use pfsqos_core::sched::tbf::ListingForm;

    #[test]
    fn a_write_reaches_every_head_and_the_first_error_answers() {
        let mut heads: Vec<Nrs<u32>> = (0..3).map(|_| Nrs::new()).collect();
        let start = ControlWrite::NrsPolicies("tbf jobid".into());
        assert_eq!(apply_write(heads.iter_mut(), 0, &start), Ok(3));
        let rule = ControlWrite::NrsTbfRule("start a jobid={a} rate=10".into());
        assert_eq!(apply_write(heads.iter_mut(), 1, &rule), Ok(3));
        let twice = apply_write(heads.iter_mut(), 2, &rule).unwrap_err();
        assert_eq!(twice.errno, Errno::EEXIST);
        // Every head, on its own, holds the rule.
        for h in &mut heads {
            assert_eq!(h.write_tbf_rule(3, "change a rate=5"), Ok(()));
        }
        let bad = ControlWrite::NrsTbfRule("change nosuch rate=5".into());
        assert_eq!(
            apply_write(heads.iter_mut(), 4, &bad).unwrap_err().errno,
            Errno::ENOENT
        );
    }

    /// A `change` with a partial effect (the rate is set, then the rank target is missing)
    /// leaves every head alike: all changed, all answering ENOENT.
    #[test]
    fn a_partial_effect_lands_on_every_head_alike() {
        let mut heads: Vec<Nrs<u32>> = (0..3).map(|_| Nrs::new()).collect();
        let start = ControlWrite::NrsPolicies("tbf jobid".into());
        assert_eq!(apply_write(heads.iter_mut(), 0, &start), Ok(3));
        let b = ControlWrite::NrsTbfRule("start b jobid={b} rate=3".into());
        assert_eq!(apply_write(heads.iter_mut(), 1, &b), Ok(3));
        let partial = ControlWrite::NrsTbfRule("change b rate=7 rank=nosuch".into());
        assert_eq!(
            apply_write(heads.iter_mut(), 2, &partial)
                .unwrap_err()
                .errno,
            Errno::ENOENT
        );
        let listings: Vec<String> = heads
            .iter()
            .map(|h| format!("{:?}", h.tbf().unwrap().listing(ListingForm::Expression)))
            .collect();
        assert!(listings.iter().all(|l| l == &listings[0]), "{listings:?}");
        assert!(
            listings[0].contains('7'),
            "the rate was set: {}",
            listings[0]
        );
    }
}
