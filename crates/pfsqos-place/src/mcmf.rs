//! Minimum-cost maximum flow: successive shortest paths with Johnson potentials and Dijkstra,
//! on integer capacities and costs (iez's Algorithm 2 solves its OST allocation with it; the
//! paper uses networkx, [36] Ahuja et al. ch. 9).
//!
//! Why this algorithm: costs are non-negative (we refuse negative ones), so the zero potential
//! is feasible and every later Dijkstra runs on non-negative reduced costs; each augmentation
//! sends flow along a shortest residual path, which keeps the flow of each value at minimum
//! cost, and the last one gives a maximum flow of minimum cost. Integer capacities give an
//! integer optimum (network matrices are totally unimodular), which is what a stripe
//! assignment needs.
//!
//! Sizes are bounded ([`MCMF_NODES_MAX`], [`MCMF_EDGES_MAX`], [`MCMF_CAPACITY_MAX`],
//! [`MCMF_COST_MAX`]) so distances and totals fit in `i64` without overflow checks on the hot
//! path; beyond them the network refuses with a [`FlowError`].

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;

/// Most nodes of a network.
pub const MCMF_NODES_MAX: usize = 1 << 16;
/// Most edges of a network (each also stores its residual twin).
pub const MCMF_EDGES_MAX: usize = 1 << 20;
/// Largest capacity of one edge.
pub const MCMF_CAPACITY_MAX: i64 = 1 << 31;
/// Largest cost of one unit of flow on one edge.
pub const MCMF_COST_MAX: i64 = 1 << 31;

// A path has fewer than MCMF_NODES_MAX edges, so a distance is below 2^16 · 2^31 = 2^47; total
// flow is below 2^20 · 2^31 = 2^51 units; their product needs i128 (the cost total is checked).
const _: () = assert!(
    (MCMF_NODES_MAX as i128) * (MCMF_COST_MAX as i128) * 2 < i64::MAX as i128
        && (MCMF_EDGES_MAX as i128) * (MCMF_CAPACITY_MAX as i128) < i64::MAX as i128
);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlowError {
    TooManyNodes(usize),
    TooManyEdges,
    NodeOutOfRange {
        node: usize,
        node_count: usize,
    },
    /// Negative or above [`MCMF_CAPACITY_MAX`].
    BadCapacity(i64),
    /// Negative or above [`MCMF_COST_MAX`].
    BadCost(i64),
    SourceIsSink,
    /// The minimum cost does not fit in `i64`.
    CostOverflow,
}

impl fmt::Display for FlowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowError::TooManyNodes(n) => {
                write!(f, "{n} nodes exceed the flow network's {MCMF_NODES_MAX}")
            }
            FlowError::TooManyEdges => {
                write!(f, "more than {MCMF_EDGES_MAX} edges in the flow network")
            }
            FlowError::NodeOutOfRange { node, node_count } => {
                write!(f, "node {node} out of range ({node_count} nodes)")
            }
            FlowError::BadCapacity(c) => write!(f, "capacity {c} not in 0..={MCMF_CAPACITY_MAX}"),
            FlowError::BadCost(c) => write!(f, "cost {c} not in 0..={MCMF_COST_MAX}"),
            FlowError::SourceIsSink => write!(f, "source and sink are the same node"),
            FlowError::CostOverflow => write!(f, "minimum cost overflows i64"),
        }
    }
}

impl std::error::Error for FlowError {}

/// An edge added with [`FlowNetwork::add_edge`], to read its flow back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeId(u32);

/// The result of [`FlowNetwork::min_cost_max_flow`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSolution {
    /// Units sent from source to sink: the maximum.
    pub flow: i64,
    /// Total cost of that flow: the minimum among maximum flows.
    pub cost: i64,
}

/// A directed network with integer capacities and non-negative integer costs. Edge `2k` is the
/// `k`-th added edge, `2k + 1` its residual twin.
#[derive(Clone, Debug)]
pub struct FlowNetwork {
    adjacency: Vec<Vec<u32>>,
    to: Vec<u32>,
    /// Residual capacity.
    residual: Vec<i64>,
    cost: Vec<i64>,
    /// Capacity as added (forward edges; 0 for twins).
    capacity: Vec<i64>,
}

impl FlowNetwork {
    pub fn new(node_count: usize) -> Result<FlowNetwork, FlowError> {
        if node_count > MCMF_NODES_MAX {
            return Err(FlowError::TooManyNodes(node_count));
        }
        Ok(FlowNetwork {
            adjacency: vec![Vec::new(); node_count],
            to: Vec::new(),
            residual: Vec::new(),
            cost: Vec::new(),
            capacity: Vec::new(),
        })
    }

    pub fn node_count(&self) -> usize {
        self.adjacency.len()
    }

    pub fn edge_count(&self) -> usize {
        self.to.len() / 2
    }

    fn check_node(&self, node: usize) -> Result<(), FlowError> {
        if node >= self.node_count() {
            return Err(FlowError::NodeOutOfRange {
                node,
                node_count: self.node_count(),
            });
        }
        Ok(())
    }

    /// Adds an edge `from → to` carrying up to `capacity` units at `cost` each.
    pub fn add_edge(
        &mut self,
        from: usize,
        to: usize,
        capacity: i64,
        cost: i64,
    ) -> Result<EdgeId, FlowError> {
        self.check_node(from)?;
        self.check_node(to)?;
        if !(0..=MCMF_CAPACITY_MAX).contains(&capacity) {
            return Err(FlowError::BadCapacity(capacity));
        }
        if !(0..=MCMF_COST_MAX).contains(&cost) {
            return Err(FlowError::BadCost(cost));
        }
        if self.edge_count() >= MCMF_EDGES_MAX {
            return Err(FlowError::TooManyEdges);
        }
        let id = self.to.len() as u32;
        for (head, tail, cap, c) in [(to, from, capacity, cost), (from, to, 0, -cost)] {
            self.adjacency[tail].push(self.to.len() as u32);
            self.to.push(head as u32);
            self.residual.push(cap);
            self.cost.push(c);
            self.capacity.push(cap);
        }
        Ok(EdgeId(id / 2))
    }

    /// Units flowing on `edge` after [`FlowNetwork::min_cost_max_flow`].
    pub fn flow(&self, edge: EdgeId) -> i64 {
        let e = edge.0 as usize * 2;
        self.capacity[e] - self.residual[e]
    }

    /// Sends a maximum flow from `source` to `sink` at minimum cost (on top of any flow already
    /// sent: a second call finds nothing more to send).
    pub fn min_cost_max_flow(
        &mut self,
        source: usize,
        sink: usize,
    ) -> Result<FlowSolution, FlowError> {
        self.check_node(source)?;
        self.check_node(sink)?;
        if source == sink {
            return Err(FlowError::SourceIsSink);
        }
        let n = self.node_count();
        // Johnson potentials: reduced cost c(u,v) + p(u) − p(v) ≥ 0 on every residual edge.
        // Costs are non-negative, so p = 0 is feasible at the start.
        let mut potential = vec![0i64; n];
        let mut distance = vec![i64::MAX; n];
        let mut via_edge = vec![u32::MAX; n];
        let mut heap = BinaryHeap::new();
        let mut flow: i64 = 0;
        let mut cost: i128 = 0;
        loop {
            distance.fill(i64::MAX);
            via_edge.fill(u32::MAX);
            distance[source] = 0;
            heap.push(Reverse((0i64, source as u32)));
            while let Some(Reverse((d, u))) = heap.pop() {
                let u = u as usize;
                if d > distance[u] {
                    continue;
                }
                for &e in &self.adjacency[u] {
                    let e = e as usize;
                    if self.residual[e] == 0 {
                        continue;
                    }
                    let v = self.to[e] as usize;
                    let reduced = self.cost[e] + potential[u] - potential[v];
                    debug_assert!(reduced >= 0, "negative reduced cost {reduced}");
                    let nd = d + reduced;
                    if nd < distance[v] {
                        distance[v] = nd;
                        via_edge[v] = e as u32;
                        heap.push(Reverse((nd, v as u32)));
                    }
                }
            }
            if distance[sink] == i64::MAX {
                break;
            }
            // Nodes not reached stay unreachable (augmenting adds twins only between reached
            // nodes), so their potentials never matter again.
            for (p, &d) in potential.iter_mut().zip(&distance) {
                if d != i64::MAX {
                    *p += d;
                }
            }
            let mut push = i64::MAX;
            let mut v = sink;
            while v != source {
                let e = via_edge[v] as usize;
                push = push.min(self.residual[e]);
                v = self.to[e ^ 1] as usize;
            }
            assert!(push > 0);
            let mut path_cost: i64 = 0;
            let mut v = sink;
            while v != source {
                let e = via_edge[v] as usize;
                self.residual[e] -= push;
                self.residual[e ^ 1] += push;
                path_cost += self.cost[e];
                v = self.to[e ^ 1] as usize;
            }
            // The shortest path's real cost is the potential difference.
            debug_assert_eq!(path_cost, potential[sink] - potential[source]);
            flow += push;
            cost += i128::from(push) * i128::from(path_cost);
        }
        let cost = i64::try_from(cost).map_err(|_| FlowError::CostOverflow)?;
        Ok(FlowSolution { flow, cost })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use good_lp::{microlp, variable, Expression, ProblemVariables, Solution, SolverModel};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    struct Edge {
        from: usize,
        to: usize,
        capacity: i64,
        cost: i64,
    }

    /// Max flow value and the min cost at that value, by linear programming.
    fn lp_optimum(n: usize, edges: &[Edge], s: usize, t: usize) -> (f64, f64) {
        let net_out = |vars: &[good_lp::Variable], node: usize| {
            let mut e = Expression::from(0.0);
            for (k, edge) in edges.iter().enumerate() {
                if edge.from == node {
                    e += vars[k];
                }
                if edge.to == node {
                    e -= vars[k];
                }
            }
            e
        };
        let build = |vars: &mut ProblemVariables| -> Vec<good_lp::Variable> {
            edges
                .iter()
                .map(|e| vars.add(variable().min(0.0).max(e.capacity as f64)))
                .collect()
        };
        // Phase 1: the largest flow.
        let mut vars = ProblemVariables::new();
        let f = build(&mut vars);
        let mut model = vars.maximise(net_out(&f, s)).using(microlp);
        for v in 0..n {
            if v != s && v != t {
                model.add_constraint(net_out(&f, v).eq(0.0));
            }
        }
        let sol = model.solve().expect("max flow LP");
        let max_flow = sol.eval(net_out(&f, s));
        // Phase 2: the cheapest flow of that value.
        let mut vars = ProblemVariables::new();
        let f = build(&mut vars);
        let mut objective = Expression::from(0.0);
        for (k, e) in edges.iter().enumerate() {
            objective += e.cost as f64 * f[k];
        }
        let mut model = vars.minimise(objective.clone()).using(microlp);
        for v in 0..n {
            if v != s && v != t {
                model.add_constraint(net_out(&f, v).eq(0.0));
            }
        }
        model.add_constraint(net_out(&f, s).eq(max_flow.round()));
        let sol = model.solve().expect("min cost LP");
        (max_flow, sol.eval(objective))
    }

    #[test]
    fn matches_the_lp_optimum_on_random_networks() {
        let mut rng = ChaCha8Rng::seed_from_u64(16);
        for round in 0..60 {
            let n = rng.random_range(2..9usize);
            let m = rng.random_range(1..(n * n).min(24) + 1);
            let edges: Vec<Edge> = (0..m)
                .map(|_| Edge {
                    from: rng.random_range(0..n),
                    to: rng.random_range(0..n),
                    capacity: rng.random_range(0..12),
                    cost: rng.random_range(0..20),
                })
                .collect();
            let (s, t) = (0, n - 1);
            let mut net = FlowNetwork::new(n).unwrap();
            let ids: Vec<EdgeId> = edges
                .iter()
                .map(|e| net.add_edge(e.from, e.to, e.capacity, e.cost).unwrap())
                .collect();
            let got = net.min_cost_max_flow(s, t).unwrap();
            let (lp_flow, lp_cost) = lp_optimum(n, &edges, s, t);
            assert_eq!(got.flow, lp_flow.round() as i64, "round {round}: max flow");
            assert_eq!(got.cost, lp_cost.round() as i64, "round {round}: min cost");
            // The flow we report is a feasible flow of that value and cost.
            let mut balance = vec![0i64; n];
            let mut cost = 0;
            for (e, id) in edges.iter().zip(&ids) {
                let f = net.flow(*id);
                assert!((0..=e.capacity).contains(&f));
                balance[e.from] -= f;
                balance[e.to] += f;
                cost += f * e.cost;
            }
            assert_eq!(cost, got.cost);
            assert_eq!(balance[t], got.flow);
            for (v, b) in balance.iter().enumerate() {
                if v != s && v != t {
                    assert_eq!(*b, 0, "round {round}: conservation at {v}");
                }
            }
        }
    }

    #[test]
    fn prefers_the_cheap_path_and_then_the_dear_one() {
        // 0 → 1 → 3 costs 2 per unit (capacity 2); 0 → 2 → 3 costs 10 (capacity 3).
        let mut net = FlowNetwork::new(4).unwrap();
        net.add_edge(0, 1, 2, 1).unwrap();
        net.add_edge(1, 3, 5, 1).unwrap();
        let dear = net.add_edge(0, 2, 3, 5).unwrap();
        net.add_edge(2, 3, 3, 5).unwrap();
        let got = net.min_cost_max_flow(0, 3).unwrap();
        assert_eq!(got, FlowSolution { flow: 5, cost: 34 });
        assert_eq!(net.flow(dear), 3);
        // Nothing is left to send.
        assert_eq!(
            net.min_cost_max_flow(0, 3).unwrap(),
            FlowSolution { flow: 0, cost: 0 }
        );
    }

    #[test]
    fn refuses_what_it_cannot_bound() {
        assert_eq!(
            FlowNetwork::new(MCMF_NODES_MAX + 1).unwrap_err(),
            FlowError::TooManyNodes(MCMF_NODES_MAX + 1)
        );
        let mut net = FlowNetwork::new(2).unwrap();
        assert_eq!(net.add_edge(0, 1, -1, 0), Err(FlowError::BadCapacity(-1)));
        assert_eq!(
            net.add_edge(0, 1, MCMF_CAPACITY_MAX + 1, 0),
            Err(FlowError::BadCapacity(MCMF_CAPACITY_MAX + 1))
        );
        assert_eq!(net.add_edge(0, 1, 1, -3), Err(FlowError::BadCost(-3)));
        assert!(matches!(
            net.add_edge(0, 2, 1, 0),
            Err(FlowError::NodeOutOfRange { node: 2, .. })
        ));
        assert_eq!(net.min_cost_max_flow(1, 1), Err(FlowError::SourceIsSink));
    }
}
