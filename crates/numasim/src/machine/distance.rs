//! Node distances, SLIT style: `local` (10 by ACPI convention) on the
//! diagonal, larger numbers further away. Latency scales with distance
//! (`latency(d) = local_latency * d / local`), as Linux's `node_distance()`
//! users assume.

use crate::error::InputError;

/// How the matrix was given, kept so a machine prints back as it was written.
#[derive(Debug, Clone, PartialEq)]
pub enum DistanceSpec {
    /// Every remote node at the same distance.
    Flat { remote: u32 },
    /// Nested groups of nodes (C-brick, router, router layer…): `groups[k]`
    /// nodes share level k; two nodes whose smallest common group is level k
    /// are `levels[k]` apart; nodes in no common group are `levels[last]` apart.
    Hierarchy { groups: Vec<u32>, levels: Vec<u32> },
    /// Written out in full (imported machines, small irregular ones).
    Matrix(Vec<Vec<u32>>),
}

/// Largest distance a SLIT can express.
pub const MAX_DISTANCE: u32 = 255;

/// Validated node distances, kept in the structure they were given in: a
/// flat or nested-group machine answers `get` from its few levels (a
/// 8,192-node matrix would be 128 MiB and nodes² to build); only an
/// explicit matrix is stored dense.
#[derive(Debug, Clone)]
pub struct Distances {
    n: usize,
    local: u32,
    repr: Repr,
}

#[derive(Debug, Clone)]
enum Repr {
    /// `groups` nested group sizes (empty: flat), `levels[k]` the distance
    /// of two nodes whose smallest common group is k (last: none).
    Groups {
        groups: Vec<u32>,
        levels: Vec<u32>,
    },
    Dense(Vec<u16>),
}

/// Equal when every entry is equal, whatever the representation.
impl PartialEq for Distances {
    fn eq(&self, o: &Self) -> bool {
        if let (
            Repr::Groups { groups, levels },
            Repr::Groups {
                groups: og,
                levels: ol,
            },
        ) = (&self.repr, &o.repr)
        {
            if groups == og && levels == ol {
                return self.n == o.n && self.local == o.local;
            }
        }
        self.n == o.n
            && self.local == o.local
            && (0..self.n).all(|i| (0..self.n).all(|j| self.get(i, j) == o.get(i, j)))
    }
}

impl Distances {
    pub fn build(n: usize, local: u32, spec: &DistanceSpec) -> Result<Self, InputError> {
        if local == 0 {
            return Err(InputError::at(
                "distance.local",
                "must be at least 1 (ACPI SLIT uses 10)",
            ));
        }
        // ACPI SLIT entries are one byte (255 = unreachable).
        let too_far = |key: &str, v: u32| {
            InputError::at(
                key,
                format!("{v}: SLIT distances are one byte, at most {MAX_DISTANCE}"),
            )
        };
        if local > MAX_DISTANCE {
            return Err(too_far("distance.local", local));
        }
        match spec {
            DistanceSpec::Flat { remote } if *remote > MAX_DISTANCE => {
                return Err(too_far("distance.remote", *remote))
            }
            DistanceSpec::Hierarchy { levels, .. } => {
                if let Some(&v) = levels.iter().find(|&&v| v > MAX_DISTANCE) {
                    return Err(too_far("distance.levels", v));
                }
            }
            DistanceSpec::Matrix(m) => {
                if let Some(&v) = m.iter().flatten().find(|&&v| v > MAX_DISTANCE) {
                    return Err(too_far("distance.matrix", v));
                }
            }
            _ => {}
        }
        match spec {
            DistanceSpec::Flat { remote } => {
                if *remote < local && n > 1 {
                    return Err(InputError::at(
                        "distance.remote",
                        format!("remote distance {remote} is smaller than local {local}"),
                    ));
                }
                return Ok(Self {
                    n,
                    local,
                    repr: Repr::Groups {
                        groups: Vec::new(),
                        levels: vec![*remote],
                    },
                });
            }
            DistanceSpec::Hierarchy { groups, levels } => {
                if levels.len() != groups.len() + 1 {
                    return Err(InputError::at(
                        "distance.levels",
                        format!(
                            "needs one distance per group level plus one for nodes in no common group: \
                             {} groups, so {} levels (got {})",
                            groups.len(),
                            groups.len() + 1,
                            levels.len()
                        ),
                    ));
                }
                if groups.contains(&0) {
                    return Err(InputError::at(
                        "distance.groups",
                        "group sizes must be at least 1 node",
                    ));
                }
                if groups
                    .windows(2)
                    .any(|w| w[1] < w[0] || !w[1].is_multiple_of(w[0]))
                {
                    return Err(InputError::at(
                        "distance.groups",
                        "each group size must be a multiple of the one before (nested groups)",
                    ));
                }
                if levels.iter().any(|&l| l < local) {
                    return Err(InputError::at(
                        "distance.levels",
                        "no level may be nearer than `local`",
                    ));
                }
                return Ok(Self {
                    n,
                    local,
                    repr: Repr::Groups {
                        groups: groups.clone(),
                        levels: levels.clone(),
                    },
                });
            }
            DistanceSpec::Matrix(m) => {
                if m.len() != n {
                    return Err(InputError::at(
                        "distance.matrix",
                        format!(
                            "has {} rows but the machine has {n} nodes; it must be {n}×{n}",
                            m.len()
                        ),
                    ));
                }
                for (i, row) in m.iter().enumerate() {
                    if row.len() != n {
                        return Err(InputError::at(
                            "distance.matrix",
                            format!(
                                "row {i} has {} entries; the matrix must be square ({n}×{n})",
                                row.len()
                            ),
                        ));
                    }
                    for (j, &v) in row.iter().enumerate() {
                        if i == j && v != local {
                            return Err(InputError::at(
                                "distance.matrix",
                                format!("diagonal entry [{i}][{i}] is {v}; it must equal `local` ({local})"),
                            ));
                        }
                        if i != j && v < local {
                            return Err(InputError::at(
                                "distance.matrix",
                                format!("entry [{i}][{j}] = {v} is nearer than local ({local})"),
                            ));
                        }
                        if v > u16::MAX as u32 {
                            return Err(InputError::at(
                                "distance.matrix",
                                format!("entry [{i}][{j}] = {v} is too large"),
                            ));
                        }
                    }
                }
                for i in 0..n {
                    for j in (i + 1)..n {
                        if m[i][j] != m[j][i] {
                            return Err(InputError::at(
                                "distance.matrix",
                                format!(
                                    "is not symmetric: [{i}][{j}] = {} but [{j}][{i}] = {}",
                                    m[i][j], m[j][i]
                                ),
                            ));
                        }
                    }
                }
            }
        }
        let d = match spec {
            DistanceSpec::Matrix(m) => m.iter().flatten().map(|&v| v as u16).collect(),
            _ => unreachable!("flat and nested groups returned above"),
        };
        Ok(Self {
            n,
            local,
            repr: Repr::Dense(d),
        })
    }

    pub fn nodes(&self) -> usize {
        self.n
    }
    pub fn local(&self) -> u32 {
        self.local
    }
    #[inline]
    pub fn get(&self, from: usize, to: usize) -> u32 {
        match &self.repr {
            _ if from == to => self.local,
            Repr::Groups { groups, levels } => levels[level_of(groups, from, to)],
            Repr::Dense(d) => d[from * self.n + to] as u32,
        }
    }
    /// Nested group sizes when the distances follow them (flat: none):
    /// the distance between two nodes then depends only on the smallest
    /// group both are in. `None` for an explicit matrix.
    pub fn nested_groups(&self) -> Option<&[u32]> {
        match &self.repr {
            Repr::Groups { groups, .. } => Some(groups),
            Repr::Dense(_) => None,
        }
    }
    /// With [`nested_groups`](Self::nested_groups): the distance at each
    /// group level, then between nodes in no common group.
    pub fn group_levels(&self) -> Option<&[u32]> {
        match &self.repr {
            Repr::Groups { levels, .. } => Some(levels),
            Repr::Dense(_) => None,
        }
    }
    /// Distance relative to local: 1.0 on the node, e.g. 2.9 on Wildfire remote.
    #[inline]
    pub fn ratio(&self, from: usize, to: usize) -> f64 {
        self.get(from, to) as f64 / self.local as f64
    }
    /// Ordered node pairs (i, j), i == j included, at each distance: from
    /// the group sizes on a group machine (a block of g nodes holds g²
    /// pairs; the last block may be short), entry by entry for a matrix.
    pub fn pair_counts(&self) -> Vec<(u32, u64)> {
        let n = self.n as u64;
        match &self.repr {
            Repr::Groups { groups, levels } => {
                let same_block = |g: u64| (n / g) * g * g + (n % g) * (n % g);
                let mut out = vec![(self.local, n)];
                let mut inner = n;
                for (&g, &d) in groups.iter().zip(levels) {
                    let within = same_block(g as u64);
                    out.push((d, within - inner));
                    inner = within;
                }
                out.push((*levels.last().expect("one level at least"), n * n - inner));
                out
            }
            Repr::Dense(_) => {
                let mut counts = std::collections::BTreeMap::new();
                for i in 0..self.n {
                    for d in self.row(i) {
                        *counts.entry(d).or_insert(0u64) += 1;
                    }
                }
                counts.into_iter().collect()
            }
        }
    }
    pub fn row(&self, from: usize) -> impl Iterator<Item = u32> + '_ {
        (0..self.n).map(move |to| self.get(from, to))
    }
    pub fn to_matrix(&self) -> Vec<Vec<u32>> {
        (0..self.n).map(|i| self.row(i).collect()).collect()
    }
}

/// Index of the smallest of the nested `groups` holding both distinct
/// nodes, `groups.len()` when none does.
#[inline]
pub fn level_of(groups: &[u32], a: usize, b: usize) -> usize {
    groups
        .iter()
        .position(|&g| a / g as usize == b / g as usize)
        .unwrap_or(groups.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hierarchy_levels() {
        let spec = DistanceSpec::Hierarchy {
            groups: vec![2, 8],
            levels: vec![19, 23, 27],
        };
        let d = Distances::build(16, 10, &spec).unwrap();
        assert_eq!(d.get(0, 0), 10);
        assert_eq!(d.get(0, 1), 19);
        assert_eq!(d.get(0, 2), 23);
        assert_eq!(d.get(0, 8), 27);
        assert_eq!(d.get(9, 8), 19);
    }

    #[test]
    fn distances_beyond_a_byte_are_refused() {
        let far = DistanceSpec::Flat { remote: 70000 };
        assert!(Distances::build(2, 10, &far)
            .unwrap_err()
            .message
            .contains("one byte"));
        let lv = DistanceSpec::Hierarchy {
            groups: vec![2],
            levels: vec![20, 300],
        };
        assert!(Distances::build(4, 10, &lv).is_err());
    }

    #[test]
    fn bad_matrices_are_refused() {
        let asym = DistanceSpec::Matrix(vec![vec![10, 20], vec![21, 10]]);
        assert!(Distances::build(2, 10, &asym)
            .unwrap_err()
            .message
            .contains("not symmetric"));
        let ragged = DistanceSpec::Matrix(vec![vec![10, 20], vec![20]]);
        assert!(Distances::build(2, 10, &ragged)
            .unwrap_err()
            .message
            .contains("square"));
        let short = DistanceSpec::Matrix(vec![vec![10, 20]]);
        assert!(Distances::build(2, 10, &short)
            .unwrap_err()
            .message
            .contains("2×2"));
        let diag = DistanceSpec::Matrix(vec![vec![12, 20], vec![20, 10]]);
        assert!(Distances::build(2, 10, &diag).is_err());
    }

    /// Pair counts by structure agree with counting every entry, with a
    /// short last block at each level.
    #[test]
    fn pair_counts_match_the_entries() {
        let specs = [
            (7, DistanceSpec::Flat { remote: 20 }),
            (1, DistanceSpec::Flat { remote: 20 }),
            (
                50,
                DistanceSpec::Hierarchy {
                    groups: vec![2, 8, 32],
                    levels: vec![15, 22, 30, 41],
                },
            ),
            (
                64,
                DistanceSpec::Hierarchy {
                    groups: vec![4],
                    levels: vec![12, 12],
                },
            ),
            (
                3,
                DistanceSpec::Matrix(vec![vec![10, 20, 30], vec![20, 10, 20], vec![30, 20, 10]]),
            ),
        ];
        for (n, spec) in &specs {
            let d = Distances::build(*n, 10, spec).unwrap();
            let mut want = std::collections::BTreeMap::new();
            for i in 0..*n {
                for j in 0..*n {
                    *want.entry(d.get(i, j)).or_insert(0u64) += 1;
                }
            }
            let mut got = std::collections::BTreeMap::new();
            for (dist, c) in d.pair_counts() {
                *got.entry(dist).or_insert(0u64) += c;
            }
            got.retain(|_, c| *c > 0);
            assert_eq!(got, want, "{n} nodes, {spec:?}");
        }
    }
}
