//! The contract between an NRS head ([`crate::nrs::Nrs`]) and the policies it runs, after
//! Lustre's `struct ptlrpc_nrs_pol_conf`: each policy exports one descriptor
//! ([`NrsPolicyDescriptor`]: its name, a line saying what it does, the parameter files it owns
//! and how to start it), and the head never names a policy. Adding a scheduler is one file
//! that implements [`NrsPolicy`] and exports a descriptor, plus one entry in the list
//! ([`crate::nrs::nrs_policy_rows`]).

use std::any::Any;
use std::fmt;

use crate::errno::Errno;
use crate::tbf::kstrto::strsep;
use crate::tbf::{LustreVersion, NrsQueue, TbfConfig, TbfError};
use crate::RequestScheduler;

/// Error of a control write, with the errno Lustre would return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NrsError {
    pub errno: Errno,
    pub message: String,
}

impl fmt::Display for NrsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.errno, self.message)
    }
}

impl std::error::Error for NrsError {}

impl From<TbfError> for NrsError {
    fn from(e: TbfError) -> Self {
        NrsError {
            errno: e.errno(),
            message: e.to_string(),
        }
    }
}

pub(crate) fn einval(message: String) -> NrsError {
    NrsError {
        errno: Errno::EINVAL,
        message,
    }
}

/// What one of a policy's parameter files reads as on one head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamValue {
    /// Lines listed per CPT, as `nrs_tbf_rule` is (rules, weights, flows).
    Lines(String),
    /// One value, listed as `reg_<name>:<value>` / `hp_<name>:<value>` as Lustre's
    /// `nrs_orr_quantum` and `nrs_delay_min` are.
    Scalar(String),
}

/// A primary NRS policy: what a head runs besides its FIFO fallback. Started by its
/// descriptor ([`NrsPolicyDescriptor::start`]) when `nrs_policies` names it.
pub trait NrsPolicy<P>: RequestScheduler<P> + Send {
    /// Removes every queued request, in the order Lustre drains a stopping policy.
    fn drain(&mut self, now_ns: u64) -> Vec<P>;

    /// When the policy holds the whole head at `now_ns` (TBF's throttle stops FIFO requests
    /// too, as `ptlrpc_server_allow_normal` does), the time it ends; clears a throttle that
    /// is due. Most policies hold nothing.
    fn head_throttled_until(&mut self, _now_ns: u64) -> Option<u64> {
        None
    }

    /// The policy itself, for a driver or a listing that knows its type
    /// ([`crate::nrs::Nrs::running`]): the head has no policy-specific accessors.
    fn as_any(&self) -> &dyn Any;

    /// A write to one of the parameter files its descriptor lists
    /// ([`NrsPolicyDescriptor::params`]) on a head of `queue` (a command addressed with
    /// `reg`/`hp` to the other queue is accepted and ignored).
    fn write_param(
        &mut self,
        param: &str,
        _queue: NrsQueue,
        _now_ns: u64,
        _text: &str,
    ) -> Result<(), NrsError> {
        Err(NrsError {
            errno: Errno::ENOENT,
            message: format!("the running policy has no parameter `{param}`"),
        })
    }

    /// What one of its parameter files reads as on this head.
    fn read_param(&self, param: &str) -> Result<ParamValue, NrsError> {
        Err(NrsError {
            errno: Errno::ENOENT,
            message: format!("the running policy has no parameter `{param}`"),
        })
    }
}

/// What a head hands every policy it starts: the Lustre version it emulates, and ptlrpc's
/// module parameters. In Lustre the `tbf_*` options are parameters of the ptlrpc module,
/// not of a running policy, so they belong to the head; only the policy that uses them
/// reads them (TBF through [`NrsConfig::tbf`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NrsConfig {
    /// The Lustre version whose NRS the head emulates.
    pub version: LustreVersion,
    /// `tbf_rate`: rate of TBF's default rule and of `start` without `rate=`.
    pub tbf_default_rate_rpcs_per_s: u32,
    /// `tbf_depth`: tokens a TBF class can bank.
    pub tbf_depth_tokens: u32,
    /// `tbf_jobid_cache_size`: idle TBF classes kept before the LRU shrinks to 3/4 of this.
    pub tbf_cache_size_classes: usize,
}

impl Default for NrsConfig {
    fn default() -> Self {
        NrsConfig::from(TbfConfig::default())
    }
}

impl NrsConfig {
    /// Lustre's module defaults on `version`.
    pub fn for_version(version: LustreVersion) -> Self {
        NrsConfig {
            version,
            ..NrsConfig::default()
        }
    }

    /// TBF's configuration on this head.
    pub fn tbf(&self) -> TbfConfig {
        TbfConfig {
            default_rate_rpcs_per_s: self.tbf_default_rate_rpcs_per_s,
            depth_tokens: self.tbf_depth_tokens,
            cache_size_classes: self.tbf_cache_size_classes,
            version: self.version,
        }
    }
}

/// A head whose module parameters are those a TBF configuration names (the inverse of
/// [`NrsConfig::tbf`]).
impl From<TbfConfig> for NrsConfig {
    fn from(tbf: TbfConfig) -> Self {
        NrsConfig {
            version: tbf.version,
            tbf_default_rate_rpcs_per_s: tbf.default_rate_rpcs_per_s,
            tbf_depth_tokens: tbf.depth_tokens,
            tbf_cache_size_classes: tbf.cache_size_classes,
        }
    }
}

/// How a descriptor starts its policy on a head: `arg` is the text after the name and queue
/// (Lustre's `pol_arg`), `config` the head's version and module parameters.
pub type StartPolicy<P> =
    fn(arg: Option<&str>, config: &NrsConfig) -> Result<Box<dyn NrsPolicy<P>>, NrsError>;

/// What a write to one of a policy's files answers while the policy is not running on a
/// head of `queue`: `Ok` when the write is accepted and ignored, else the error.
pub type StoppedWrite =
    fn(param: &str, text: &str, queue: NrsQueue, version: LustreVersion) -> Result<(), NrsError>;

/// One scheduler, as the head sees it (Lustre's `ptlrpc_nrs_pol_conf`).
pub struct NrsPolicyDescriptor<P> {
    /// The name `nrs_policies` takes, as Lustre names its policies: short, lower case.
    pub name: &'static str,
    /// One line saying what the policy does, for listings and `--help`.
    pub description: &'static str,
    /// The `ost.OSS.ost_io` parameter files the policy owns besides `nrs_policies`.
    pub params: &'static [&'static str],
    pub start: StartPolicy<P>,
    /// A write to one of `params` while another policy runs; `None`: ENODEV, as Lustre
    /// answers for a stopped policy's file.
    pub stopped_write: Option<StoppedWrite>,
}

/// The value of a tunable write for a head of `queue`: `V` (every head), or tokens
/// `reg_<suffix>:V` / `hp_<suffix>:V` separated by single spaces (Lustre's
/// `nrs_orr_quantum` form). `None`: the write addresses only the other queue.
pub(crate) fn tunable_value<'a>(
    text: &'a str,
    suffix: &str,
    queue: NrsQueue,
) -> Result<Option<&'a str>, NrsError> {
    if !text.contains(':') {
        return Ok(Some(text));
    }
    let mut found = None;
    let mut rest = Some(text);
    while let Some(r) = rest.filter(|r| !r.is_empty()) {
        let (tok, next) = strsep(r, ' ');
        rest = next;
        let (name, value) = strsep(tok, ':');
        let value = value.ok_or_else(|| einval(format!("`{tok}` is not name:value")))?;
        let q = name
            .strip_suffix(suffix)
            .and_then(|p| p.strip_suffix('_'))
            .and_then(NrsQueue::from_prefix)
            .ok_or_else(|| einval(format!("`{name}`: expected reg_{suffix} or hp_{suffix}")))?;
        if q == queue {
            found = Some(value);
        }
    }
    Ok(found)
}
