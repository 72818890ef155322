//! ThemisIO's fair sharing (`themis`), after Karrels et al., "Fine-grained Policy-driven I/O
//! Sharing for Burst Buffers" (SC'23), as its public code has it (`include/qp.h` names the
//! fairness modes, `src/fair_queue.cpp` dispatches): requests queue per job (or per user), and
//! each dispatch is a lottery, "statistical tokens", over the queues that hold requests, each
//! holding as many tickets as its priority. Work-conserving by construction: whenever anything
//! is queued, some queue wins.
//!
//! The fairness modes (`nrs_themis_mode`):
//! * `fifo`: one queue, arrival order (ThemisIO's default mode);
//! * `size-fair`: a queue per job with the job's node count as its tickets, so backlogged jobs
//!   share in proportion to their sizes;
//! * `job-fair`: a queue per job, one ticket each;
//! * `user-fair`: a queue per user (uid), one ticket each;
//! * `user-size-fair`, `user-job-fair`: a draw among users, one ticket each, then among that
//!   user's jobs, by node count or one ticket each;
//! * `group-user-size-fair`: a draw among groups (gid), then among the group's users, then
//!   among the user's jobs by node count.
//!
//! The composite modes are hierarchical, a draw at each level, as the paper defines them
//! ("user-then-size-fair"): a user with many jobs gets one user's share, divided among its jobs.
//! ThemisIO's lottery code keys those modes by job with one ticket each (its `getKey` and
//! `putMessage`); the hierarchy here is the paper's definition, and the one-level modes are
//! exactly the code's.
//!
//! Three readings chosen. The draw is deterministic: a SplitMix64 stream in the policy's state,
//! seeded by `nrs_themis_seed` (ThemisIO seeds `std::default_random_engine` from
//! `std::random_device`, so no two of its runs draw alike; a simulation's seed must change the
//! draws and a replay must repeat them). A job's node count is not in its RPCs here (ThemisIO's
//! client library registers a job record with the server): the controller writes it to
//! `nrs_themis_nodes` from what the driver knows of the job (a job not listed has one node). A
//! queue exists only while it holds requests; ThemisIO keeps an empty queue ten seconds, which
//! changes nothing a draw sees, because only non-empty queues take part.
//!
//! ThemisIO's draw is a linear scan over the non-empty queues, O(queues) per dispatch. Here
//! every level's tickets sit in a sum tree (an 8-ary cousin of a Fenwick tree), so a draw and a
//! ticket change are O(log queues): at the 100,000 classes a head must carry, a scan would
//! touch every queue (megabytes of memory, far beyond cache) on every RPC.

use std::any::Any;
use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::errno::Errno;
use crate::jobstats::quote_job_id;
use crate::limits::JOB_NODES_MAX;
use crate::model::{JobId, RpcTags};
use crate::policy::{
    einval, tunable_value, NrsConfig, NrsError, NrsPolicy, NrsPolicyDescriptor, ParamValue,
};
use crate::tbf::kstrto::kstrtoull;
use crate::tbf::NrsQueue;
use crate::{Dequeue, RequestScheduler};

/// The fairness mode's file.
pub const PARAM_THEMIS_MODE: &str = "nrs_themis_mode";
/// The seed of the lottery's random stream.
pub const PARAM_THEMIS_SEED: &str = "nrs_themis_seed";
/// Job node counts: lines `<nodes> <job id>`; 0 nodes forgets the job.
pub const PARAM_THEMIS_NODES: &str = "nrs_themis_nodes";
/// Seed of a policy nobody seeded: any fixed value keeps unseeded runs repeatable.
pub const THEMIS_SEED_DEFAULT: u64 = 0x7e3d_5a1c_9b24_f068;
/// Most queues (of every level) with state of their own; beyond, requests share one overflow
/// queue per level (still served, as one more group, user and job).
pub const THEMIS_QUEUES_MAX: usize = 1 << 20;
/// Most jobs whose node counts a head keeps: one per queue it can hold.
pub const THEMIS_JOBS_MAX: usize = THEMIS_QUEUES_MAX;
/// Longest write to `nrs_themis_nodes`; a controller splits longer lists into several writes.
pub const THEMIS_NODES_WRITE_LEN_MAX: usize = 64 << 10;

/// ThemisIO's fairness modes (`enum FairnessMode`, `include/qp.h`), in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FairnessMode {
    Fifo,
    SizeFair,
    JobFair,
    UserFair,
    UserSizeFair,
    UserJobFair,
    GroupUserSizeFair,
}

/// One level of a mode's hierarchy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    All,
    Group,
    User,
    Job,
}

impl FairnessMode {
    /// Every mode, in ThemisIO's order.
    pub const ALL: [FairnessMode; 7] = [
        FairnessMode::Fifo,
        FairnessMode::SizeFair,
        FairnessMode::JobFair,
        FairnessMode::UserFair,
        FairnessMode::UserSizeFair,
        FairnessMode::UserJobFair,
        FairnessMode::GroupUserSizeFair,
    ];

    /// ThemisIO's name (`fairnessModeToString`).
    pub fn name(self) -> &'static str {
        match self {
            FairnessMode::Fifo => "fifo",
            FairnessMode::SizeFair => "size-fair",
            FairnessMode::JobFair => "job-fair",
            FairnessMode::UserFair => "user-fair",
            FairnessMode::UserSizeFair => "user-size-fair",
            FairnessMode::UserJobFair => "user-job-fair",
            FairnessMode::GroupUserSizeFair => "group-user-size-fair",
        }
    }

    /// The mode of a name, `None` if there is none.
    pub fn parse(name: &str) -> Option<FairnessMode> {
        FairnessMode::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The draws of one dispatch, from the top.
    fn levels(self) -> &'static [Level] {
        match self {
            FairnessMode::Fifo => &[Level::All],
            FairnessMode::SizeFair | FairnessMode::JobFair => &[Level::Job],
            FairnessMode::UserFair => &[Level::User],
            FairnessMode::UserSizeFair | FairnessMode::UserJobFair => &[Level::User, Level::Job],
            FairnessMode::GroupUserSizeFair => &[Level::Group, Level::User, Level::Job],
        }
    }

    /// Whether a job's queue holds its node count in tickets (else one).
    fn by_size(self) -> bool {
        matches!(
            self,
            FairnessMode::SizeFair | FairnessMode::UserSizeFair | FairnessMode::GroupUserSizeFair
        )
    }
}

/// ThemisIO as a head's primary policy.
pub fn descriptor<P: Send + 'static>() -> NrsPolicyDescriptor<P> {
    NrsPolicyDescriptor {
        name: "themis",
        description: "ThemisIO: a lottery among the queued jobs, users or groups (size-, job-, user-fair and composites)",
        params: &[PARAM_THEMIS_MODE, PARAM_THEMIS_SEED, PARAM_THEMIS_NODES],
        start: start::<P>,
        stopped_write: None,
    }
}

/// `nrs_policies=themis [mode]`: the mode, when it fits Lustre's 15-character argument;
/// `nrs_themis_mode` takes every mode.
fn start<P: Send + 'static>(
    arg: Option<&str>,
    _config: &NrsConfig,
) -> Result<Box<dyn NrsPolicy<P>>, NrsError> {
    let mode = match arg.map(|a| a.strip_suffix('\n').unwrap_or(a)) {
        None | Some("") => FairnessMode::Fifo,
        Some(a) => FairnessMode::parse(a).ok_or_else(|| unknown_mode(a))?,
    };
    Ok(Box::new(Themis::new(mode, THEMIS_SEED_DEFAULT)))
}

fn unknown_mode(text: &str) -> NrsError {
    let names: Vec<_> = FairnessMode::ALL.iter().map(|m| m.name()).collect();
    einval(format!(
        "unknown fairness mode `{text}` (allowed: {})",
        names.join(", ")
    ))
}

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): one word of state, so the policy stays small, and a full period of 2^64.
#[derive(Clone, Debug)]
struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A draw in `0..n`, by the high word of a 128-bit product (Lemire's reduction; its bias,
    /// below n / 2^64, is far under anything a run of RPCs can see).
    fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "a draw needs a ticket");
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Children per node of a [`Lottery`]'s sum tree: eight `u64` sums fill one 64-byte cache line.
const FANOUT: usize = 8;

/// The tickets of one level's children in an 8-ary sum tree: every node holds the sum of its
/// eight children's, so changing one child's tickets and finding the child a ticket number
/// falls in each walk one path, O(log8 n), reading one cache line per level. (A Fenwick tree
/// is as fast on paper, but its descent at 100,000 slots touches 17 lines far apart.)
#[derive(Clone, Debug)]
struct Lottery {
    /// `levels[0]`: each slot's tickets (0: a free slot); `levels[k + 1][i]`: the sum of
    /// `levels[k][FANOUT * i..FANOUT * (i + 1)]`; the last level has one entry, the total.
    levels: Vec<Vec<u64>>,
    /// Each slot's child node.
    child: Vec<u32>,
    free: Vec<u32>,
    total: u64,
}

impl Default for Lottery {
    fn default() -> Self {
        Lottery {
            levels: vec![vec![0; FANOUT], vec![0]],
            child: vec![u32::MAX; FANOUT],
            free: (0..FANOUT as u32).rev().collect(),
            total: 0,
        }
    }
}

impl Lottery {
    /// A slot for `child` holding `tickets`.
    fn insert(&mut self, child: u32, tickets: u64) -> u32 {
        assert!(tickets > 0, "a queue in the draw holds a ticket");
        if self.free.is_empty() {
            self.grow();
        }
        let slot = self.free.pop().expect("a grown lottery has free slots");
        assert_eq!(
            self.levels[0][slot as usize], 0,
            "a free slot holds nothing"
        );
        self.child[slot as usize] = child;
        self.add(slot, i128::from(tickets));
        slot
    }

    /// Multiplies the slots by [`FANOUT`], rebuilding the sums in O(n).
    fn grow(&mut self) {
        let old = self.levels[0].len();
        let n = old * FANOUT;
        assert!(
            n <= 8 * THEMIS_QUEUES_MAX,
            "slots are bounded by THEMIS_QUEUES_MAX"
        );
        let mut base = std::mem::take(&mut self.levels[0]);
        base.resize(n, 0);
        self.child.resize(n, u32::MAX);
        // Free slots are taken from the end of `free`: the lowest first.
        self.free.extend((old as u32..n as u32).rev());
        let mut levels = vec![base];
        while levels.last().expect("one level at least").len() > 1 {
            let below = levels.last().expect("one level at least");
            let sums: Vec<u64> = below.chunks(FANOUT).map(|c| c.iter().sum()).collect();
            levels.push(sums);
        }
        self.levels = levels;
        assert_eq!(self.levels.last().expect("a root")[0], self.total);
    }

    fn add(&mut self, slot: u32, delta: i128) {
        let mut i = slot as usize;
        for level in &mut self.levels {
            let now = i128::from(level[i]) + delta;
            assert!(now >= 0, "tickets never go negative");
            level[i] = now as u64;
            i /= FANOUT;
        }
        self.total = self.levels.last().expect("a root")[0];
    }

    fn set(&mut self, slot: u32, tickets: u64) {
        assert!(tickets > 0, "a queue in the draw holds a ticket");
        let delta = i128::from(tickets) - i128::from(self.levels[0][slot as usize]);
        self.add(slot, delta);
    }

    fn remove(&mut self, slot: u32) {
        let t = self.levels[0][slot as usize];
        assert!(t > 0, "only a slot in use is removed");
        self.add(slot, -i128::from(t));
        self.child[slot as usize] = u32::MAX;
        self.free.push(slot);
    }

    /// The child ticket number `r` (`0..total`) falls in: from the root down, the first child
    /// whose running sum exceeds `r`.
    fn find(&self, mut r: u64) -> u32 {
        assert!(r < self.total, "a ticket number is below the total");
        let mut i = 0usize;
        for level in self.levels.iter().rev().skip(1) {
            let base = i * FANOUT;
            let block = &level[base..base + FANOUT];
            let mut j = 0;
            while r >= block[j] {
                r -= block[j];
                j += 1;
                assert!(j < FANOUT, "a node's sum is its children's");
            }
            i = base + j;
        }
        assert!(self.levels[0][i] > r, "the ticket falls in a slot in use");
        self.child[i]
    }
}

/// What the policy keeps of a request to classify it again when the mode changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Ident {
    job: JobId,
    uid: u32,
    gid: u32,
}

/// A queue's place in the hierarchy: its level, the identity fields of its path (the others
/// blanked), or the level's overflow queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    depth: u8,
    overflow: bool,
    job: JobId,
    uid: u32,
    gid: u32,
}

enum Body<P> {
    Leaf(VecDeque<(Ident, P)>),
    Inner(Lottery),
}

struct Node<P> {
    key: Key,
    parent: u32,
    /// Its slot in the parent's lottery.
    slot: u32,
    body: Body<P>,
}

const ROOT: u32 = 0;

/// One ThemisIO instance: one head's queues.
pub struct Themis<P> {
    mode: FairnessMode,
    seed: u64,
    rng: SplitMix64,
    /// Node counts written to `nrs_themis_nodes`.
    job_nodes: FxHashMap<JobId, u32>,
    /// The root (always inner) and every queue holding requests.
    nodes: Vec<Option<Node<P>>>,
    free_nodes: Vec<u32>,
    index: FxHashMap<Key, u32>,
    queued: usize,
}

impl<P> Themis<P> {
    /// An empty instance in `mode`, its draws seeded by `seed`.
    pub fn new(mode: FairnessMode, seed: u64) -> Themis<P> {
        let root = Node {
            key: Key {
                depth: u8::MAX,
                overflow: false,
                job: JobId::EMPTY,
                uid: 0,
                gid: 0,
            },
            parent: u32::MAX,
            slot: u32::MAX,
            body: Body::Inner(Lottery::default()),
        };
        Themis {
            mode,
            seed,
            rng: SplitMix64 { state: seed },
            job_nodes: FxHashMap::default(),
            nodes: vec![Some(root)],
            free_nodes: Vec::new(),
            index: FxHashMap::default(),
            queued: 0,
        }
    }

    /// The fairness mode.
    pub fn mode(&self) -> FairnessMode {
        self.mode
    }

    /// The seed last written (the stream restarts from it at every write).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The node count the policy gives `job`'s queue under the size-fair modes.
    pub fn job_nodes(&self, job: &JobId) -> u32 {
        self.job_nodes.get(job).copied().unwrap_or(1)
    }

    /// Queues of every level holding requests.
    pub fn queues(&self) -> usize {
        self.index.len()
    }

    fn node(&self, id: u32) -> &Node<P> {
        self.nodes[id as usize]
            .as_ref()
            .expect("a node in use is present")
    }

    fn node_mut(&mut self, id: u32) -> &mut Node<P> {
        self.nodes[id as usize]
            .as_mut()
            .expect("a node in use is present")
    }

    fn lottery_mut(&mut self, id: u32) -> &mut Lottery {
        match &mut self.node_mut(id).body {
            Body::Inner(l) => l,
            Body::Leaf(_) => unreachable!("a parent is an inner node"),
        }
    }

    /// The key of a request's own queue (the last of its path, when the tree has room).
    fn leaf_key(&self, ident: &Ident) -> Key {
        let levels = self.mode.levels();
        let mut key = Key {
            depth: (levels.len() - 1) as u8,
            overflow: false,
            job: JobId::EMPTY,
            uid: 0,
            gid: 0,
        };
        for level in levels {
            match level {
                Level::All => {}
                Level::Group => key.gid = ident.gid,
                Level::User => key.uid = ident.uid,
                Level::Job => key.job = ident.job,
            }
        }
        key
    }

    /// The keys of a request's path from the top, `len` of them.
    fn path(&self, ident: &Ident) -> ([Key; 3], usize) {
        let levels = self.mode.levels();
        let mut keys = [Key {
            depth: 0,
            overflow: false,
            job: JobId::EMPTY,
            uid: 0,
            gid: 0,
        }; 3];
        let mut acc = keys[0];
        for (d, level) in levels.iter().enumerate() {
            match level {
                Level::All => {}
                Level::Group => acc.gid = ident.gid,
                Level::User => acc.uid = ident.uid,
                Level::Job => acc.job = ident.job,
            }
            acc.depth = d as u8;
            keys[d] = acc;
        }
        if keys[..levels.len()]
            .iter()
            .filter(|k| !self.index.contains_key(k))
            .count()
            + self.index.len()
            > THEMIS_QUEUES_MAX
        {
            for (d, k) in keys[..levels.len()].iter_mut().enumerate() {
                *k = Key {
                    depth: d as u8,
                    overflow: true,
                    job: JobId::EMPTY,
                    uid: 0,
                    gid: 0,
                };
            }
        }
        (keys, levels.len())
    }

    fn leaf_tickets(&self, key: &Key) -> u64 {
        if self.mode.by_size() && !key.overflow {
            u64::from(self.job_nodes(&key.job))
        } else {
            1
        }
    }

    fn alloc_node(&mut self, node: Node<P>) -> u32 {
        match self.free_nodes.pop() {
            Some(id) => {
                assert!(self.nodes[id as usize].is_none(), "a free node is empty");
                self.nodes[id as usize] = Some(node);
                id
            }
            None => {
                self.nodes.push(Some(node));
                u32::try_from(self.nodes.len() - 1).expect("nodes are bounded")
            }
        }
    }

    fn push(&mut self, ident: Ident, payload: P) {
        // A queue that exists has its whole path: one lookup serves the common case.
        let leaf = self.leaf_key(&ident);
        if let Some(&id) = self.index.get(&leaf) {
            match &mut self.node_mut(id).body {
                Body::Leaf(q) => q.push_back((ident, payload)),
                Body::Inner(_) => unreachable!("a leaf key names a leaf"),
            }
            self.queued += 1;
            return;
        }
        let (keys, len) = self.path(&ident);
        let mut parent = ROOT;
        for (d, key) in keys[..len].iter().enumerate() {
            let leaf = d + 1 == len;
            parent = match self.index.get(key) {
                Some(&id) => id,
                None => {
                    let tickets = if leaf { self.leaf_tickets(key) } else { 1 };
                    let body = if leaf {
                        Body::Leaf(VecDeque::new())
                    } else {
                        Body::Inner(Lottery::default())
                    };
                    let id = self.alloc_node(Node {
                        key: *key,
                        parent,
                        slot: u32::MAX,
                        body,
                    });
                    let slot = self.lottery_mut(parent).insert(id, tickets);
                    self.node_mut(id).slot = slot;
                    self.index.insert(*key, id);
                    id
                }
            };
        }
        match &mut self.node_mut(parent).body {
            Body::Leaf(q) => q.push_back((ident, payload)),
            Body::Inner(_) => unreachable!("a path ends at a leaf"),
        }
        self.queued += 1;
    }

    /// Removes the empty node `id` and every ancestor it leaves empty.
    fn prune(&mut self, mut id: u32) {
        while id != ROOT {
            let node = self.nodes[id as usize]
                .take()
                .expect("a node in use is present");
            match &node.body {
                Body::Leaf(q) => assert!(q.is_empty(), "only an empty queue is pruned"),
                Body::Inner(l) => assert_eq!(l.total, 0, "only an empty level is pruned"),
            }
            let removed = self.index.remove(&node.key);
            assert_eq!(removed, Some(id), "the index names every node");
            self.free_nodes.push(id);
            let parent = node.parent;
            let lottery = self.lottery_mut(parent);
            lottery.remove(node.slot);
            if lottery.total > 0 {
                return;
            }
            id = parent;
        }
    }

    fn pop(&mut self) -> Option<P> {
        let mut id = ROOT;
        while let Body::Inner(l) = &self.node(id).body {
            let total = l.total;
            if total == 0 {
                assert_eq!(id, ROOT, "every level below the root holds requests");
                assert_eq!(self.queued, 0, "an empty root means nothing is queued");
                return None;
            }
            let r = self.rng.below(total);
            id = match &self.node(id).body {
                Body::Inner(l) => l.find(r),
                Body::Leaf(_) => unreachable!(),
            };
        }
        let (payload, empty) = match &mut self.node_mut(id).body {
            Body::Leaf(q) => {
                let (_, p) = q.pop_front().expect("a queue in the draw holds a request");
                (p, q.is_empty())
            }
            Body::Inner(_) => unreachable!(),
        };
        if empty {
            self.prune(id);
        }
        self.queued -= 1;
        Some(payload)
    }

    /// Every queued request with its identity, queue by queue in node order (each queue's
    /// requests in arrival order).
    fn take_all(&mut self) -> Vec<(Ident, P)> {
        let mut out = Vec::with_capacity(self.queued);
        for n in self.nodes.iter_mut().skip(1).flatten() {
            if let Body::Leaf(q) = &mut n.body {
                out.extend(q.drain(..));
            }
        }
        let root = self.nodes[ROOT as usize].take().expect("the root is kept");
        self.nodes.clear();
        self.nodes.push(Some(Node {
            body: Body::Inner(Lottery::default()),
            ..root
        }));
        self.free_nodes.clear();
        self.index.clear();
        self.queued = 0;
        out
    }

    /// Changes the mode, every queued request moving to its queue in the new mode.
    pub fn set_mode(&mut self, mode: FairnessMode) {
        if mode == self.mode {
            return;
        }
        let queued = self.queued;
        let all = self.take_all();
        self.mode = mode;
        for (ident, p) in all {
            self.push(ident, p);
        }
        assert_eq!(self.queued, queued, "a mode change keeps every request");
    }

    /// Restarts the random stream from `seed`.
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
        self.rng = SplitMix64 { state: seed };
    }

    /// Sets `job`'s node count (0: forgets it, so it counts one), retuning its queued
    /// queues' tickets.
    pub fn set_job_nodes(&mut self, job: JobId, nodes: u32) -> Result<(), NrsError> {
        if nodes > JOB_NODES_MAX {
            return Err(einval(format!(
                "node count {nodes} is above {JOB_NODES_MAX}"
            )));
        }
        if nodes == 0 {
            self.job_nodes.remove(&job);
        } else if self.job_nodes.len() >= THEMIS_JOBS_MAX && !self.job_nodes.contains_key(&job) {
            return Err(NrsError {
                errno: Errno::ENOSPC,
                message: format!("node counts of at most {THEMIS_JOBS_MAX} jobs are kept"),
            });
        } else {
            self.job_nodes.insert(job, nodes);
        }
        Ok(())
    }

    /// Gives every job queue the tickets its node count now says.
    fn retune(&mut self) {
        if !self.mode.by_size() {
            return;
        }
        for id in 1..self.nodes.len() as u32 {
            let Some(n) = &self.nodes[id as usize] else {
                continue;
            };
            if !matches!(n.body, Body::Leaf(_)) {
                continue;
            }
            let (key, parent, slot) = (n.key, n.parent, n.slot);
            let tickets = self.leaf_tickets(&key);
            self.lottery_mut(parent).set(slot, tickets);
        }
    }

    fn nodes_listing(&self) -> String {
        let mut jobs: Vec<_> = self.job_nodes.iter().collect();
        jobs.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        let mut out = String::new();
        for (job, n) in jobs {
            out.push_str(&format!("{n} {}\n", quote_job_id(job.as_str())));
        }
        out
    }

    fn write_nodes(&mut self, text: &str) -> Result<(), NrsError> {
        if text.len() > THEMIS_NODES_WRITE_LEN_MAX {
            return Err(einval(format!(
                "a node-count write is longer than {THEMIS_NODES_WRITE_LEN_MAX} bytes"
            )));
        }
        // Parse every line before applying any, so a bad line changes nothing.
        let mut parsed = Vec::new();
        for line in text.split('\n').filter(|l| !l.is_empty()) {
            let (nodes, job) = line
                .split_once(' ')
                .ok_or_else(|| einval(format!("`{line}` is not `<nodes> <job id>`")))?;
            let nodes = kstrtoull(nodes, 10)
                .ok()
                .filter(|&n| n <= u64::from(JOB_NODES_MAX))
                .ok_or_else(|| {
                    einval(format!(
                        "node count `{nodes}` is not a number in 0..={JOB_NODES_MAX}"
                    ))
                })?;
            let job = JobId::new(job).map_err(|e| einval(format!("job id of `{line}`: {e}")))?;
            parsed.push((job, nodes as u32));
        }
        let mut result = Ok(());
        for (job, nodes) in parsed {
            if let Err(e) = self.set_job_nodes(job, nodes) {
                result = Err(e);
                break;
            }
        }
        self.retune();
        result
    }
}

impl<P> RequestScheduler<P> for Themis<P> {
    fn enqueue_with_cost(&mut self, _now_ns: u64, tags: &RpcTags, _cost: u64, payload: P) {
        let ident = Ident {
            job: tags.job,
            uid: tags.uid,
            gid: tags.gid,
        };
        self.push(ident, payload);
    }

    fn dequeue(&mut self, _now_ns: u64) -> Dequeue<P> {
        match self.pop() {
            Some(p) => Dequeue::Request(p),
            None => Dequeue::Empty,
        }
    }

    fn on_timer(&mut self, _now_ns: u64) {}

    fn timer_deadline_ns(&self) -> Option<u64> {
        None
    }

    fn queued(&self) -> usize {
        self.queued
    }
}

impl<P: Send + 'static> NrsPolicy<P> for Themis<P> {
    /// In dispatch order (the lottery keeps drawing), as Lustre drains a stopping policy.
    fn drain(&mut self, now_ns: u64) -> Vec<P> {
        let mut out = Vec::with_capacity(self.queued);
        while let Dequeue::Request(p) = self.dequeue(now_ns) {
            out.push(p);
        }
        assert!(self.index.is_empty(), "a drained instance holds no queue");
        out
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn write_param(
        &mut self,
        param: &str,
        queue: NrsQueue,
        _now_ns: u64,
        text: &str,
    ) -> Result<(), NrsError> {
        match param {
            PARAM_THEMIS_MODE => {
                let Some(value) = tunable_value(text, "mode", queue)? else {
                    return Ok(());
                };
                let value = value.strip_suffix('\n').unwrap_or(value);
                let mode = FairnessMode::parse(value).ok_or_else(|| unknown_mode(value))?;
                self.set_mode(mode);
                Ok(())
            }
            PARAM_THEMIS_SEED => {
                let Some(value) = tunable_value(text, "seed", queue)? else {
                    return Ok(());
                };
                let seed = kstrtoull(value, 10)
                    .map_err(|_| einval(format!("seed `{value}` is not a number")))?;
                self.set_seed(seed);
                Ok(())
            }
            PARAM_THEMIS_NODES => self.write_nodes(text),
            _ => unreachable!("the head routes only ThemisIO's own files here"),
        }
    }

    fn read_param(&self, param: &str) -> Result<ParamValue, NrsError> {
        match param {
            PARAM_THEMIS_MODE => Ok(ParamValue::Scalar(self.mode.name().to_string())),
            PARAM_THEMIS_SEED => Ok(ParamValue::Scalar(self.seed.to_string())),
            PARAM_THEMIS_NODES => Ok(ParamValue::Lines(self.nodes_listing())),
            _ => Err(NrsError {
                errno: Errno::ENOENT,
                message: format!("policy `themis` has no parameter `{param}`"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nrs::{policy_param_text, Nrs};
    use proptest::prelude::*;

    fn tags(job: &str, uid: u32, gid: u32) -> RpcTags {
        RpcTags {
            job: JobId::new(job).unwrap(),
            uid,
            gid,
            ..RpcTags::default()
        }
    }

    /// Virtual time for a closed loop: every job keeps `backlog` requests queued (a new one
    /// arrives as each is served), and the lottery runs `draws` times. Returns each job's
    /// share of the dispatches, in `jobs` order.
    fn shares(
        mode: FairnessMode,
        seed: u64,
        jobs: &[(&str, u32, u32, u32)],
        draws: usize,
    ) -> Vec<f64> {
        let mut t: Themis<usize> = Themis::new(mode, seed);
        for &(job, nodes, _, _) in jobs {
            t.set_job_nodes(JobId::new(job).unwrap(), nodes).unwrap();
        }
        for _ in 0..4 {
            for (i, &(job, _, uid, gid)) in jobs.iter().enumerate() {
                t.enqueue(0, &tags(job, uid, gid), i);
            }
        }
        let mut served = vec![0usize; jobs.len()];
        for k in 0..draws {
            let Dequeue::Request(i) = t.dequeue(k as u64) else {
                panic!("work-conserving: a backlogged head always dispatches");
            };
            served[i] += 1;
            let (job, _, uid, gid) = jobs[i];
            t.enqueue(k as u64, &tags(job, uid, gid), i);
        }
        served.iter().map(|&s| s as f64 / draws as f64).collect()
    }

    /// Half-width of a 5-sigma interval of a share `p` estimated from `draws` independent
    /// draws (binomial): a correct policy falls outside it with odds below one in a million.
    fn tolerance(p: f64, draws: usize) -> f64 {
        5.0 * (p * (1.0 - p) / draws as f64).sqrt()
    }

    #[test]
    fn size_fair_shares_follow_node_counts() {
        let draws = 40_000;
        for seed in [1, 2, 3] {
            let s = shares(
                FairnessMode::SizeFair,
                seed,
                &[("big", 4, 1, 1), ("small", 1, 2, 1)],
                draws,
            );
            assert!((s[0] - 0.8).abs() < tolerance(0.8, draws), "{s:?}");
            assert!((s[1] - 0.2).abs() < tolerance(0.2, draws), "{s:?}");
            let s = shares(
                FairnessMode::SizeFair,
                seed,
                &[("big", 2, 1, 1), ("small", 1, 2, 1)],
                draws,
            );
            assert!(
                (s[0] - 2.0 / 3.0).abs() < tolerance(2.0 / 3.0, draws),
                "{s:?}"
            );
        }
    }

    #[test]
    fn job_fair_ignores_node_counts_and_user_fair_groups_jobs_by_user() {
        let draws = 40_000;
        let jobs = [("a", 4, 1, 1), ("b", 1, 2, 1)];
        let s = shares(FairnessMode::JobFair, 9, &jobs, draws);
        assert!((s[0] - 0.5).abs() < tolerance(0.5, draws), "{s:?}");
        // Two jobs of user 101 against one of user 102: the users share equally.
        let jobs = [("j1", 8, 101, 1), ("j2", 8, 101, 1), ("j3", 1, 102, 1)];
        let s = shares(FairnessMode::UserFair, 9, &jobs, draws);
        assert!((s[0] + s[1] - 0.5).abs() < tolerance(0.5, draws), "{s:?}");
        assert!((s[2] - 0.5).abs() < tolerance(0.5, draws), "{s:?}");
        // Job-fair gives each of the three a third.
        let s = shares(FairnessMode::JobFair, 9, &jobs, draws);
        for x in &s {
            assert!((x - 1.0 / 3.0).abs() < tolerance(1.0 / 3.0, draws), "{s:?}");
        }
    }

    #[test]
    fn composite_modes_draw_at_every_level() {
        let draws = 60_000;
        // User 1 has a 3-node and a 1-node job, user 2 one 1-node job.
        let jobs = [("u1big", 3, 1, 10), ("u1small", 1, 1, 10), ("u2", 1, 2, 10)];
        let want = |mode| match mode {
            FairnessMode::UserSizeFair => [0.375, 0.125, 0.5],
            FairnessMode::UserJobFair => [0.25, 0.25, 0.5],
            _ => unreachable!(),
        };
        for mode in [FairnessMode::UserSizeFair, FairnessMode::UserJobFair] {
            let s = shares(mode, 5, &jobs, draws);
            for (x, w) in s.iter().zip(want(mode)) {
                assert!((x - w).abs() < tolerance(w, draws), "{mode:?} {s:?}");
            }
        }
        // Group 10 (two users) against group 20 (one user with a 1-node job).
        let jobs = [
            ("a", 3, 1, 10),
            ("b", 1, 1, 10),
            ("c", 1, 2, 10),
            ("d", 1, 3, 20),
        ];
        let s = shares(FairnessMode::GroupUserSizeFair, 5, &jobs, draws);
        for (x, w) in s.iter().zip([0.1875, 0.0625, 0.25, 0.5]) {
            assert!((x - w).abs() < tolerance(w, draws), "{s:?}");
        }
    }

    #[test]
    fn fifo_is_arrival_order() {
        let mut t: Themis<u32> = Themis::new(FairnessMode::Fifo, 3);
        for i in 0..50 {
            t.enqueue(0, &tags(if i % 3 == 0 { "a" } else { "b" }, i, 0), i);
        }
        let out = t.drain(0);
        assert_eq!(out, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn the_seed_fixes_the_draws_and_another_seed_changes_them() {
        let jobs = [("a", 3, 1, 1), ("b", 1, 2, 1), ("c", 2, 3, 1)];
        let order = |seed| {
            let mut t: Themis<usize> = Themis::new(FairnessMode::SizeFair, seed);
            for &(job, nodes, _, _) in &jobs {
                t.set_job_nodes(JobId::new(job).unwrap(), nodes).unwrap();
            }
            for k in 0..300 {
                let (job, _, uid, gid) = jobs[k % 3];
                t.enqueue(0, &tags(job, uid, gid), k);
            }
            t.drain(0)
        };
        assert_eq!(order(11), order(11));
        assert_ne!(order(11), order(12));
        // Every request leaves once, each job's in its own arrival order.
        let mut o = order(11);
        for j in 0..3 {
            let mine: Vec<_> = o.iter().copied().filter(|k| k % 3 == j).collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]));
        }
        o.sort_unstable();
        assert_eq!(o, (0..300).collect::<Vec<_>>());
    }

    #[test]
    fn a_mode_change_keeps_every_request_in_per_job_order() {
        let mut t: Themis<u32> = Themis::new(FairnessMode::UserFair, 1);
        for i in 0..40u32 {
            t.enqueue(0, &tags(["a", "b", "c", "d"][i as usize % 4], i % 2, 0), i);
        }
        for _ in 0..5 {
            let _ = t.dequeue(0);
        }
        t.set_mode(FairnessMode::GroupUserSizeFair);
        assert_eq!(t.queued(), 35);
        t.set_mode(FairnessMode::SizeFair);
        let out = t.drain(0);
        assert_eq!(out.len(), 35);
        for j in 0..4 {
            let mine: Vec<_> = out.iter().copied().filter(|k| k % 4 == j).collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "{mine:?}");
        }
        assert_eq!(t.queues(), 0);
    }

    #[test]
    fn the_lottery_finds_the_slot_of_every_ticket() {
        let mut l = Lottery::default();
        let weights = [3u64, 1, 4, 1, 5, 9, 2, 6];
        let slots: Vec<_> = weights
            .iter()
            .enumerate()
            .map(|(i, &w)| l.insert(i as u32, w))
            .collect();
        l.remove(slots[2]);
        l.set(slots[5], 1);
        let live: Vec<(u32, u64)> = [(0, 3), (1, 1), (3, 1), (4, 5), (5, 1), (6, 2), (7, 6)].into();
        assert_eq!(l.total, live.iter().map(|x| x.1).sum::<u64>());
        let mut r = 0;
        for (child, w) in live {
            for _ in 0..w {
                assert_eq!(l.find(r), child, "ticket {r}");
                r += 1;
            }
        }
        // A freed slot is reused.
        assert_eq!(l.insert(9, 7), slots[2]);
        // Growing past a block keeps every ticket where it was.
        let mut big = Lottery::default();
        let weights: Vec<u64> = (0..700).map(|i| 1 + (i * 7919) % 13).collect();
        for (i, &w) in weights.iter().enumerate() {
            assert_eq!(
                big.insert(i as u32, w),
                i as u32,
                "the lowest free slot first"
            );
        }
        big.remove(300);
        let mut r = 0;
        for (i, &w) in weights.iter().enumerate() {
            if i == 300 {
                continue;
            }
            for _ in 0..w {
                assert_eq!(big.find(r), i as u32, "ticket {r}");
                r += 1;
            }
        }
        assert_eq!(r, big.total);
    }

    proptest! {
        /// Whatever arrives and whatever the mode, the head dispatches whenever anything is
        /// queued, serves each request once, and keeps each job's requests in order.
        #[test]
        fn work_conserving_and_lossless(
            ops in prop::collection::vec((0u8..6, any::<bool>()), 1..300),
            mode in 0usize..7,
            seed in any::<u64>(),
        ) {
            let mode = FairnessMode::ALL[mode];
            let mut t: Themis<(u8, u32)> = Themis::new(mode, seed);
            t.set_job_nodes(JobId::new("j0").unwrap(), 5).unwrap();
            let mut next = [0u32; 6];
            let mut seen = [0u32; 6];
            let mut queued = 0usize;
            for (job, serve) in ops {
                if serve {
                    match t.dequeue(0) {
                        Dequeue::Request((j, k)) => {
                            prop_assert_eq!(k, seen[j as usize]);
                            seen[j as usize] += 1;
                            queued -= 1;
                        }
                        Dequeue::Empty => prop_assert_eq!(queued, 0),
                        Dequeue::Throttled { .. } => prop_assert!(false, "never throttles"),
                    }
                } else {
                    // A job keeps its uid and gid, as a real job does.
                    let (uid, gid) = (u32::from(job % 3), u32::from(job % 2));
                    t.enqueue(0, &tags(&format!("j{job}"), uid, gid), (job, next[job as usize]));
                    next[job as usize] += 1;
                    queued += 1;
                }
                prop_assert_eq!(t.queued(), queued);
            }
            let rest = t.drain(0);
            prop_assert_eq!(rest.len(), queued);
            for (j, k) in rest {
                prop_assert_eq!(k, seen[j as usize]);
                seen[j as usize] += 1;
            }
            prop_assert_eq!(seen, next);
            prop_assert_eq!(t.queues(), 0);
        }
    }

    #[test]
    fn through_the_head() {
        let mut n: Nrs<u32> = Nrs::new();
        assert_eq!(
            n.write_policy_param(0, PARAM_THEMIS_MODE, "size-fair")
                .unwrap_err()
                .errno,
            Errno::ENODEV
        );
        n.write_policies(0, "themis").unwrap();
        assert_eq!(
            n.running::<Themis<u32>>().unwrap().mode(),
            FairnessMode::Fifo
        );
        n.write_policy_param(0, PARAM_THEMIS_MODE, "group-user-size-fair\n")
            .unwrap();
        n.write_policy_param(0, PARAM_THEMIS_SEED, "42").unwrap();
        n.write_policy_param(0, PARAM_THEMIS_NODES, "4 job.1\n2 job 2\n")
            .unwrap();
        let t = n.running::<Themis<u32>>().unwrap();
        assert_eq!(t.mode(), FairnessMode::GroupUserSizeFair);
        assert_eq!(t.seed(), 42);
        assert_eq!(t.job_nodes(&JobId::new("job 2").unwrap()), 2);
        assert_eq!(
            policy_param_text(&[&n], None, PARAM_THEMIS_MODE).unwrap(),
            "reg_mode:group-user-size-fair\n"
        );
        assert_eq!(
            policy_param_text(&[&n], None, PARAM_THEMIS_NODES).unwrap(),
            "regular_requests:\nCPT 0:\n2 \"job\\x202\"\n4 job.1\n"
        );
        for (param, bad) in [
            (PARAM_THEMIS_MODE, "size_fair"),
            (PARAM_THEMIS_SEED, "-1"),
            (PARAM_THEMIS_NODES, "x job"),
            (PARAM_THEMIS_NODES, "1000001 job"),
            (PARAM_THEMIS_NODES, "4"),
        ] {
            let e = n.write_policy_param(0, param, bad).unwrap_err();
            assert_eq!(e.errno, Errno::EINVAL, "{param}={bad}");
        }
        // A bad line changes nothing.
        let _ = n.write_policy_param(0, PARAM_THEMIS_NODES, "7 job.1\nx y");
        assert_eq!(
            n.running::<Themis<u32>>()
                .unwrap()
                .job_nodes(&JobId::new("job.1").unwrap()),
            4
        );
        // The mode as the policy's argument, when it fits Lustre's 15 characters.
        n.write_policies(0, "themis size-fair").unwrap();
        assert_eq!(
            n.running::<Themis<u32>>().unwrap().mode(),
            FairnessMode::SizeFair
        );
        assert!(n.write_policies(0, "themis nonsense").is_err());
        n.write_policies(0, "themis job-fair").unwrap();
        for i in 0..5 {
            n.enqueue(0, &tags("a", 0, 0), i);
        }
        n.write_policies(0, "fifo").unwrap();
        let mut out = Vec::new();
        while let Dequeue::Request(p) = n.dequeue(0) {
            out.push(p);
        }
        assert_eq!(out, [0, 1, 2, 3, 4]);
    }

    /// A node count written while a job is backlogged retunes its queue at once.
    #[test]
    fn a_node_count_written_while_backlogged_applies() {
        let mut t: Themis<usize> = Themis::new(FairnessMode::SizeFair, 8);
        let jobs = ["a", "b"];
        for _ in 0..4 {
            for (i, j) in jobs.iter().enumerate() {
                t.enqueue(0, &tags(j, 0, 0), i);
            }
        }
        t.write_nodes("9 a\n").unwrap();
        let draws = 20_000;
        let mut a = 0;
        for _ in 0..draws {
            let Dequeue::Request(i) = t.dequeue(0) else {
                panic!()
            };
            a += usize::from(i == 0);
            t.enqueue(0, &tags(jobs[i], 0, 0), i);
        }
        let s = a as f64 / draws as f64;
        assert!((s - 0.9).abs() < tolerance(0.9, draws), "{s}");
    }
}
