//! The OSS's mechanics around its NRS heads, written once for the simulator and the `ossd`.
//!
//! A domain (one OSS's `ost_io` service, or one OST with per-OST scheduling) holds one NRS
//! head per CPU partition, and the live daemon a regular and a high-priority head in each, as
//! Lustre does. An administrator's `lctl set_param` and a controller's [`ControlWrite`] reach
//! those heads through [`apply_write`], so the two drivers cannot disagree on how a write
//! lands or which error it answers.

use pfsqos_core::control::ControlWrite;
use pfsqos_core::sched::nrs::{write_service, Nrs, NrsError};

/// Applies `write` to the heads of a domain at `now_ns`, in order, as Lustre's
/// `ptlrpc_nrs_policy_control` walks a service's partitions: it stops at the first head that
/// refuses it and answers that head's error (`pfsqos_core::sched::nrs::write_service`). Heads
/// before it keep the write, and so may the failing head where Lustre has a partial effect (a
/// `change` that sets the rate, then fails on a missing rank target). Returns how many heads
/// took it.
pub fn apply_write<'a, P: 'a>(
    heads: impl IntoIterator<Item = &'a mut Nrs<P>>,
    now_ns: u64,
    write: &ControlWrite,
) -> Result<usize, NrsError> {
    let mut applied = 0usize;
    write_service(heads, |head| {
        match write {
            ControlWrite::NrsPolicies(text) => head.write_policies(now_ns, text),
            ControlWrite::NrsTbfRule(text) => head.write_tbf_rule(now_ns, text),
        }?;
        applied += 1;
        Ok(())
    })?;
    assert!(applied > 0, "a domain has at least one head");
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pfsqos_core::errno::Errno;

    #[test]
    fn a_write_reaches_every_head_and_stops_at_the_first_error() {
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

    /// As Lustre's partition walk: heads before the failing one keep the write, heads after it
    /// never see it.
    #[test]
    fn heads_after_a_refusal_are_not_written() {
        let mut heads: Vec<Nrs<u32>> = (0..3).map(|_| Nrs::new()).collect();
        let start = ControlWrite::NrsPolicies("tbf jobid".into());
        assert_eq!(apply_write(heads.iter_mut(), 0, &start), Ok(3));
        assert_eq!(
            heads[1].write_tbf_rule(1, "start b jobid={b} rate=3"),
            Ok(())
        );
        let b = ControlWrite::NrsTbfRule("start b jobid={b} rate=3".into());
        assert_eq!(
            apply_write(heads.iter_mut(), 2, &b).unwrap_err().errno,
            Errno::EEXIST
        );
        assert_eq!(heads[0].write_tbf_rule(3, "change b rate=4"), Ok(()));
        assert_eq!(
            heads[2]
                .write_tbf_rule(3, "change b rate=4")
                .unwrap_err()
                .errno,
            Errno::ENOENT
        );
    }
}
