//! One table of Lustre's limits and defaults, and of the bounds pfsqos puts next to them. Every
//! driver (scenario validation, the daemons' options, the cluster file, the mount) checks
//! against these, so a value means the same in each.
//!
//! Where a limit is Lustre's, the comment names where Lustre keeps it; where pfsqos chose a
//! bound Lustre does not have, the comment says why.

/// Smallest stripe size and the unit every stripe size is a multiple of
/// (`LOV_MIN_STRIPE_SIZE`, 64 KiB).
pub const STRIPE_SIZE_UNIT_BYTES: u64 = 64 << 10;
/// Largest stripe size: the largest 64 KiB multiple below 4 GiB (`lmm_stripe_size` is 32 bits,
/// and `llapi_stripe_size_is_too_big` refuses 2^32 and above).
pub const STRIPE_SIZE_BYTES_MAX: u64 = (4 << 30) - STRIPE_SIZE_UNIT_BYTES;
/// Largest stripe count of one file (`LOV_MAX_STRIPE_COUNT`).
pub const STRIPE_COUNT_MAX: u32 = 2000;

/// Default bulk RPC size (`osc.*.max_pages_per_rpc` of 1024 pages: 4 MiB).
pub const BRW_SIZE_BYTES_DEFAULT: u64 = 4 << 20;
/// Smallest bulk RPC size: one page.
pub const BRW_SIZE_BYTES_MIN: u64 = 4 << 10;
/// Largest bulk RPC size: Lustre's `PTLRPC_MAX_BRW_SIZE`, `1 << (LNET_MTU_BITS 20 +
/// PTLRPC_BULK_OPS_BITS 6)` = 64 MiB since Lustre 2.13 (lustre/include/lustre_net.h; 16 MiB
/// in 2.9-2.12, 4 MiB before), also the most an OST's `brw_size` takes (`DT_MAX_BRW_SIZE`,
/// lustre/ofd/lproc_ofd.c). One I/O frame of the live protocol carries one such RPC.
pub const BRW_SIZE_BYTES_MAX: u64 = 64 << 20;

/// Default RPCs in flight per client and OST (`osc.*.max_rpcs_in_flight`).
pub const MAX_RPCS_IN_FLIGHT_DEFAULT: u32 = 8;
/// Largest `max_rpcs_in_flight` (`OSC_MAX_RIF_MAX`).
pub const MAX_RPCS_IN_FLIGHT_MAX: u32 = 256;

/// Most CPU partitions of one server (libcfs's `CFS_CPT_NUM_MAX` allows more; 256 bounds the
/// per-partition state pfsqos keeps).
pub const CPTS_MAX: u32 = 256;

/// Default control period of a controller (AdapTBF's 100 ms).
pub const CONTROL_PERIOD_MS_DEFAULT: u64 = 100;
/// Longest control period (one hour: GIFT decides every 10 s, a site may go slower); also the
/// widest time bin of a report.
pub const CONTROL_PERIOD_MS_MAX: u64 = 3_600_000;

/// Largest node count of one job (the AdapTBF priority basis).
pub const JOB_NODES_MAX: u32 = 1_000_000;

/// Most jobs a controller tracks; beyond it the longest-idle jobs an administrator did not name
/// are forgotten. Bounds every per-job table of the control plane (the agent's known jobs, the
/// RPC-size estimator, the ossd's node counts).
pub const JOBS_TRACKED_MAX: usize = 16384;

/// Most TBF rules one head holds, the default rule included. Lustre has no bound but memory;
/// pfsqos bounds the list an administrator or a controller can grow (each new class walks it).
/// One more than the jobs a controller tracks ([`JOBS_TRACKED_MAX`]), so a rule per tracked
/// job always fits beside the default.
pub const TBF_RULES_MAX: usize = JOBS_TRACKED_MAX + 1;

/// Longest TBF command Lustre accepts (`LPROCFS_WR_NRS_TBF_MAX_CMD` = 4096 with the
/// terminator, lustre/ptlrpc/nrs_tbf.c).
pub const TBF_COMMAND_LEN_MAX: usize = 4095;
/// Longest TBF rule name (`MAX_TBF_NAME` = 16 with the terminator).
pub const TBF_NAME_LEN_MAX: usize = 15;
/// Highest TBF rate from Lustre 2.15 on (must be below 1,000,000).
pub const TBF_RATE_RPCS_PER_S_MAX: u32 = 999_999;
/// Highest TBF rate up to Lustre 2.14 (must be below 65535).
pub const TBF_RATE_LEGACY_RPCS_PER_S_MAX: u32 = 65_534;

/// Largest OST capacity in RPC/s a controller may be told: the largest TBF rate, since
/// AdapTBF hands out up to the capacity as rule rates and a rate above
/// [`TBF_RATE_RPCS_PER_S_MAX`] is refused by Lustre.
pub const OST_CAPACITY_RPCS_PER_S_MAX: u64 = TBF_RATE_RPCS_PER_S_MAX as u64;

pub use crate::model::JOB_ID_LEN_MAX;

// The table's own consistency, checked when the crate compiles.
const _: () = {
    assert!(STRIPE_SIZE_BYTES_MAX.is_multiple_of(STRIPE_SIZE_UNIT_BYTES));
    assert!(STRIPE_SIZE_BYTES_MAX < 1 << 32);
    assert!(BRW_SIZE_BYTES_MIN <= BRW_SIZE_BYTES_DEFAULT);
    assert!(BRW_SIZE_BYTES_DEFAULT <= BRW_SIZE_BYTES_MAX);
    assert!(BRW_SIZE_BYTES_DEFAULT.is_multiple_of(BRW_SIZE_BYTES_MIN));
    assert!(MAX_RPCS_IN_FLIGHT_DEFAULT <= MAX_RPCS_IN_FLIGHT_MAX);
    assert!(CONTROL_PERIOD_MS_DEFAULT <= CONTROL_PERIOD_MS_MAX);
};
