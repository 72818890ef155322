//! The OSS's mechanics around its NRS heads, written once for the simulator and the `ossd`.
//!
//! A domain (one OSS's `ost_io` service, or one OST with per-OST scheduling) holds one NRS
//! head per CPU partition, and the live daemon a regular and a high-priority head in each, as
//! Lustre does. An administrator's `lctl set_param` and a controller's [`ControlWrite`] reach
//! every one of those heads through [`apply_write`], so the two drivers cannot disagree on
//! how a write lands or which error it answers.

use pfsqos_core::control::ControlWrite;
use pfsqos_core::sched::nrs::{Nrs, NrsError};

/// Applies `write` to every head of a domain at `now_ns`; returns how many heads it reached.
///
/// Every head holds the same policy and rules, so the first error is the answer (the others
/// would repeat it), and a write that fails on one head fails on all: Lustre checks a command
/// before it changes any partition's head.
pub fn apply_write<'a, P: 'a>(
    heads: impl IntoIterator<Item = &'a mut Nrs<P>>,
    now_ns: u64,
    write: &ControlWrite,
) -> Result<usize, NrsError> {
    let mut result = Ok(());
    let mut applied = 0usize;
    let mut failed = 0usize;
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
    assert!(applied + failed > 0, "a domain has at least one head");
    // Heads that hold the same state answer the same: a write never half lands.
    debug_assert!(
        applied == 0 || failed == 0,
        "a write landed on {applied} heads and failed on {failed}"
    );
    result.map(|()| applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pfsqos_core::errno::Errno;

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
}
