//! Node distances, SLIT style: `local` (10 by ACPI convention) on the
//! diagonal, larger numbers further away. Latency scales with distance
//! (`latency(d) = local_latency * d / local`), as Linux's `node_distance()`
//! users assume.

use crate::error::InputError;
use std::sync::Arc;

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
    Matrix(SlitRows),
}

/// The rows of a distance matrix as given, one byte an entry (a SLIT
/// entry is a byte), flat: an 8,192-node matrix is 64 MiB, shared (not
/// copied) by the validated [`Distances`] it becomes. Rows may differ in
/// length until [`Distances::build`] checks them.
#[derive(Debug, Clone, PartialEq)]
pub struct SlitRows {
    data: Arc<[u8]>,
    /// Where each row starts in `data`, then the end of the last.
    starts: Arc<[usize]>,
}

impl SlitRows {
    /// `data` cut into rows at `starts` (ascending, from 0, ending at
    /// `data.len()`).
    pub(crate) fn from_parts(data: Vec<u8>, starts: Vec<usize>) -> SlitRows {
        debug_assert!(starts.first() == Some(&0) && starts.last() == Some(&data.len()));
        SlitRows {
            data: data.into(),
            starts: starts.into(),
        }
    }

    /// Rows of numbers; `Err((row, value))` for the first entry past 255.
    pub fn from_rows<R: AsRef<[u32]>>(rows: &[R]) -> Result<SlitRows, (usize, u32)> {
        let mut data = Vec::with_capacity(rows.iter().map(|r| r.as_ref().len()).sum());
        let mut starts = vec![0];
        for (i, r) in rows.iter().enumerate() {
            for &v in r.as_ref() {
                data.push(u8::try_from(v).map_err(|_| (i, v))?);
            }
            starts.push(data.len());
        }
        Ok(SlitRows::from_parts(data, starts))
    }

    pub fn rows(&self) -> usize {
        self.starts.len() - 1
    }

    pub fn row(&self, i: usize) -> &[u8] {
        &self.data[self.starts[i]..self.starts[i + 1]]
    }
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
    /// `by_bits` (power-of-two groups only, else empty): the distance by
    /// the bit length of `from ^ to`, which says the smallest group both
    /// share without a division a level.
    Groups {
        groups: Vec<u32>,
        levels: Vec<u32>,
        by_bits: Vec<u32>,
    },
    /// Row-major, `n`×`n`: the bytes of the [`SlitRows`] it was built from.
    Dense(Arc<[u8]>),
}

/// Equal when every entry is equal, whatever the representation.
impl PartialEq for Distances {
    fn eq(&self, o: &Self) -> bool {
        if let (
            Repr::Groups { groups, levels, .. },
            Repr::Groups {
                groups: og,
                levels: ol,
                ..
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
            // One byte an entry: none is past 255.
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
                Ok(Self {
                    n,
                    local,
                    repr: Repr::Groups {
                        by_bits: by_bits(&[], &[*remote]),
                        groups: Vec::new(),
                        levels: vec![*remote],
                    },
                })
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
                Ok(Self {
                    n,
                    local,
                    repr: Repr::Groups {
                        by_bits: by_bits(groups, levels),
                        groups: groups.clone(),
                        levels: levels.clone(),
                    },
                })
            }
            DistanceSpec::Matrix(m) => {
                if m.rows() != n {
                    return Err(InputError::at(
                        "distance.matrix",
                        format!(
                            "has {} rows but the machine has {n} nodes; it must be {n}×{n}",
                            m.rows()
                        ),
                    ));
                }
                for i in 0..n {
                    let row = m.row(i);
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
                        let v = v as u32;
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
                    }
                }
                // Square from here: entry (i, j) is data[i * n + j].
                let d = &m.data;
                for i in 0..n {
                    for j in (i + 1)..n {
                        if d[i * n + j] != d[j * n + i] {
                            return Err(InputError::at(
                                "distance.matrix",
                                format!(
                                    "is not symmetric: [{i}][{j}] = {} but [{j}][{i}] = {}",
                                    d[i * n + j],
                                    d[j * n + i]
                                ),
                            ));
                        }
                    }
                }
                Ok(Self {
                    n,
                    local,
                    repr: Repr::Dense(m.data.clone()),
                })
            }
        }
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
            Repr::Groups {
                groups,
                levels,
                by_bits,
            } => match by_bits.get((usize::BITS - (from ^ to).leading_zeros()) as usize) {
                Some(&d) => d,
                None => levels[level_of(groups, from, to)],
            },
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
            Repr::Groups { groups, levels, .. } => {
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
/// [`Repr::Groups`]'s `by_bits`: with every group a power of two, 2^s,
/// nodes `a` and `b` share a group iff `a >> s == b >> s`, i.e. iff the bit
/// length of `a ^ b` is at most `s`; so the level [`level_of`] finds is
/// the first group whose `s` reaches that length. Empty otherwise.
fn by_bits(groups: &[u32], levels: &[u32]) -> Vec<u32> {
    if !groups.iter().all(|g| g.is_power_of_two()) {
        return Vec::new();
    }
    (0..=usize::BITS)
        .map(|bits| {
            let k = groups
                .iter()
                .position(|g| g.trailing_zeros() >= bits)
                .unwrap_or(groups.len());
            levels[k]
        })
        .collect()
}

pub fn level_of(groups: &[u32], a: usize, b: usize) -> usize {
    groups
        .iter()
        .position(|&g| a / g as usize == b / g as usize)
        .unwrap_or(groups.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bit-length lookup of power-of-two groups gives what the
    /// division a level gives, on every pair of nodes of several nestings
    /// (and a machine whose node count is not a multiple of its groups).
    #[test]
    fn power_of_two_groups_by_bits_match_the_divisions() {
        for (groups, n) in [
            (vec![], 5),
            (vec![1], 4),
            (vec![2, 8, 16, 64], 200),
            (vec![4, 4, 32], 70),
            (vec![2, 6], 24),
        ] {
            let levels: Vec<u32> = (0..=groups.len() as u32).map(|k| 20 + 3 * k).collect();
            let d = Distances::build(
                n,
                10,
                &DistanceSpec::Hierarchy {
                    groups: groups.clone(),
                    levels: levels.clone(),
                },
            )
            .unwrap();
            let Repr::Groups { by_bits, .. } = &d.repr else {
                panic!("groups")
            };
            assert_eq!(
                by_bits.is_empty(),
                !groups.iter().all(|g: &u32| g.is_power_of_two())
            );
            for a in 0..n {
                for b in 0..n {
                    let want = if a == b {
                        10
                    } else {
                        levels[level_of(&groups, a, b)]
                    };
                    assert_eq!(d.get(a, b), want, "{groups:?} {a} {b}");
                }
            }
        }
    }

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
        let asym =
            DistanceSpec::Matrix(SlitRows::from_rows(&[vec![10, 20], vec![21, 10]]).unwrap());
        assert!(Distances::build(2, 10, &asym)
            .unwrap_err()
            .message
            .contains("not symmetric"));
        let ragged = DistanceSpec::Matrix(SlitRows::from_rows(&[vec![10, 20], vec![20]]).unwrap());
        assert!(Distances::build(2, 10, &ragged)
            .unwrap_err()
            .message
            .contains("square"));
        let short = DistanceSpec::Matrix(SlitRows::from_rows(&[vec![10, 20]]).unwrap());
        assert!(Distances::build(2, 10, &short)
            .unwrap_err()
            .message
            .contains("2×2"));
        let diag =
            DistanceSpec::Matrix(SlitRows::from_rows(&[vec![12, 20], vec![20, 10]]).unwrap());
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
                DistanceSpec::Matrix(
                    SlitRows::from_rows(&[vec![10, 20, 30], vec![20, 10, 20], vec![30, 20, 10]])
                        .unwrap(),
                ),
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
