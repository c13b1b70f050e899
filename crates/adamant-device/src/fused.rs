//! The device side of the fused entries (`fused_optimizer!`; the tables are described in
//! [`crate::abi::fused`]).
pub use crate::abi::fused::*;

/// A fused entry's pointer tables, as its parameters hold them: every one is a table with an
/// entry per tensor (0 where the tensor's rule reads nothing from it).
#[derive(Clone, Copy)]
pub struct FusedTables {
    /// Each tensor's parameter buffer, in the table of its storage and rounding
    /// (`adamant_abi::fused::param_table_index`): null in every other.
    pub params: [*const u64; FUSED_PARAM_TABLES],
    /// Each tensor's `k`-th `#[input]`.
    pub inputs: [*const u64; MAX_FUSED_INPUTS],
    /// Each tensor's `k`-th `#[state]`.
    pub states: [*const u64; MAX_FUSED_STATES],
    /// Each tensor's `k`-th `#[uniform_ptr]` (null: the rule's default).
    pub uniforms: [*const u64; MAX_FUSED_UNIFORMS],
}

/// One tensor's row of every table of a fused entry: the addresses its rule's
/// `__adamant_fused_chunk` reads.
///
/// The entry reads the row once per chunk, before it branches to the tensor's rule. Read inside
/// each rule's branch instead, the addresses were computed under a branch that ptxas does not
/// keep in its uniform registers, so every rule of a set added its own per-thread copies to the
/// entry's register count (ptxas 13.0, uncapped: a set of DQN's and IQN's rules took 78
/// registers, against 70 with the row read before the branch; three Adam rules 86 against 70).
#[derive(Clone, Copy)]
pub struct FusedRow {
    params: [u64; FUSED_PARAM_TABLES],
    inputs: [u64; MAX_FUSED_INPUTS],
    states: [u64; MAX_FUSED_STATES],
    uniforms: [u64; MAX_FUSED_UNIFORMS],
}

impl FusedTables {
    /// Tensor `tensor`'s row of every table. (An address that no rule of the set uses is dead,
    /// and the compiler drops its load; every table is there either way.)
    ///
    /// # Safety
    /// Every table has an entry for `tensor`: the runtime passes every table, one entry per
    /// tensor of the set, so the row needs no test for a null table. (Such a test put a zero and
    /// a loaded address in one PTX register, and the audit could no longer tell which table a
    /// store's address came from.)
    #[inline(always)]
    pub unsafe fn row(&self, tensor: usize) -> FusedRow {
        FusedRow {
            params: self.params.map(|t| *t.add(tensor)),
            inputs: self.inputs.map(|t| *t.add(tensor)),
            states: self.states.map(|t| *t.add(tensor)),
            uniforms: self.uniforms.map(|t| *t.add(tensor)),
        }
    }
}

impl FusedRow {
    /// The address in parameter table `k` (0 past [`FUSED_PARAM_TABLES`]).
    #[inline(always)]
    pub fn param(&self, k: usize) -> u64 {
        self.params.get(k).copied().unwrap_or(0)
    }

    /// The address in input table `k` (0 past [`MAX_FUSED_INPUTS`]: a kernel that would read one
    /// is not `FUSABLE`, and no fused set compiles with it).
    #[inline(always)]
    pub fn input(&self, k: usize) -> u64 {
        self.inputs.get(k).copied().unwrap_or(0)
    }

    /// The address in state table `k` (0 past [`MAX_FUSED_STATES`]).
    #[inline(always)]
    pub fn state(&self, k: usize) -> u64 {
        self.states.get(k).copied().unwrap_or(0)
    }

    /// The address in uniform-pointer table `k` (0: the rule's default; 0 past
    /// [`MAX_FUSED_UNIFORMS`]).
    #[inline(always)]
    pub fn uniform(&self, k: usize) -> u64 {
        self.uniforms.get(k).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tensor's row holds entry `tensor` of every table, in its role's place, and an index past
    /// a role's tables reads 0 (a kernel that would use it is not `FUSABLE`).
    #[test]
    fn a_row_reads_the_tensors_entry_of_every_table() {
        // Table `k` holds `1000·k + t` for tensor `t`.
        let tables: Vec<[u64; 3]> = (0..FUSED_SLOTS as u64)
            .map(|k| [1000 * k, 1000 * k + 1, 1000 * k + 2])
            .collect();
        let at = |k: usize| tables[k].as_ptr();
        let (p, i, s) = (
            FUSED_PARAM_TABLES,
            FUSED_PARAM_TABLES + MAX_FUSED_INPUTS,
            FUSED_PARAM_TABLES + MAX_FUSED_INPUTS + MAX_FUSED_STATES,
        );
        let t = FusedTables {
            params: core::array::from_fn(at),
            inputs: core::array::from_fn(|k| at(p + k)),
            states: core::array::from_fn(|k| at(i + k)),
            uniforms: core::array::from_fn(|k| at(s + k)),
        };
        // SAFETY: every table has three entries.
        let row = unsafe { t.row(2) };
        for k in 0..FUSED_PARAM_TABLES {
            assert_eq!(row.param(k), 1000 * k as u64 + 2);
        }
        for k in 0..MAX_FUSED_INPUTS {
            assert_eq!(row.input(k), 1000 * (p + k) as u64 + 2);
        }
        for k in 0..MAX_FUSED_STATES {
            assert_eq!(row.state(k), 1000 * (i + k) as u64 + 2);
        }
        for k in 0..MAX_FUSED_UNIFORMS {
            assert_eq!(row.uniform(k), 1000 * (s + k) as u64 + 2);
        }
        assert_eq!(row.param(FUSED_PARAM_TABLES), 0);
        assert_eq!(row.input(MAX_FUSED_INPUTS), 0);
        assert_eq!(row.state(MAX_FUSED_STATES), 0);
        assert_eq!(row.uniform(MAX_FUSED_UNIFORMS), 0);
    }
}
