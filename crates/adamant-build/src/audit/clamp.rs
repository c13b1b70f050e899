//! The clamp's semantics, proven from the PTX: for a value stored to a parameter buffer, the
//! audit extracts the instructions between the bound and the stored register, finds the one value `x` they clamp, and runs them on a
//! table of `(x, bound)` pairs against the contract:
//!
//! `stored = bound > 0 && |x| > bound ? copysign(bound, x) : x`, bit for bit,
//!
//! so NaN stays NaN (same bits), ±inf becomes ±bound, `|x| == bound` is unchanged, and a bound
//! that is 0, negative or NaN leaves `x` unchanged. The table has NaNs, infinities, signed zeros,
//! subnormals, the largest finite values and `bound` ± 1 ulp. Everything else is a violation:
//! a stored value that does not depend on the bound, one that depends on anything besides `x`
//! and the bound, a register with several definitions or a guarded definition on the way, an
//! instruction the interpreter does not know.
//!
//! The bound is one of two loads, both of the entry's last parameter ([`BoundSource`]):
//! - plain entries: the `ld.param` of `weight_clamp_max_abs`;
//! - stepped entries: the 32-bit element at byte [`BOUND_OFFSET`] of the record the `step_state`
//!   pointer points at, loaded through a pointer computed from that parameter by `cvta`, `mov`
//!   and the addition of constants only (a vector load counts for the element at that offset).
//!   Any other load, an offset that is not a constant, or a pointer from anywhere else is not the
//!   bound, so a value clamped with it is not proven.
//!
//! A multi-tensor entry clamps tensor `t` with `tensor_bound(bound, scale)`, `scale` being the
//! `f32` at index `t` of its `weight_clamp_scales` table: the contract is
//! `stored = contract(x, tensor_contract(bound, scale))`, run on triples `(x, bound, scale)`. Each
//! scale the stored value depends on must be a 32-bit load from that table at the index its
//! parameter-buffer pointer was loaded at (`tensor_index.rs`): a scale of another tensor, or a
//! value clamped with the launch's bound alone, is not proven.
use std::collections::{HashMap, HashSet};

use adamant_kernels::step::BOUND_OFFSET;

use super::eval;
use super::opcodes::{address, destinations, sources};
use super::provenance::Provenance;
use super::tensor_index::TensorIndex;
use crate::ptx::{Instruction, Operand};

/// Why a value stored to a parameter buffer is not proven clamped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClampFailure {
    /// The value does not depend on the bound parameter at all.
    NoBound,
    /// The instructions between the bound and the store could not be evaluated.
    Unprovable { reason: String },
    /// Evaluated, the device code gives another value than the contract for one input.
    Wrong {
        x: u32,
        bound: u32,
        /// The tensor's scale, in a multi-tensor entry.
        scale: Option<u32>,
        got: u32,
        expected: u32,
    },
    /// A multi-tensor entry's stored value is not clamped with a per-tensor scale.
    NoTensorScale,
    /// A multi-tensor entry's value is clamped with the scale of another index than the one its
    /// parameter-buffer pointer was loaded at.
    OtherTensor {
        scale_line: usize,
        scale_index: String,
        pointer_index: String,
    },
}

fn show(bits: u32) -> String {
    let v = f32::from_bits(bits);
    if v.is_nan() {
        format!("NaN (0x{bits:08x})")
    } else {
        format!("{v:e}")
    }
}

impl std::fmt::Display for ClampFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClampFailure::NoBound => f.write_str(
                "the value does not depend on the clamp bound (the last parameter): no clamp",
            ),
            ClampFailure::Unprovable { reason } => {
                write!(f, "the clamp cannot be proven: {reason}")
            }
            ClampFailure::Wrong {
                x,
                bound,
                scale: None,
                got,
                expected,
            } => write!(
                f,
                "the clamp computes the wrong value: for x = {} and bound = {} the device code \
                 stores {}, the contract `bound > 0 && |x| > bound ? copysign(bound, x) : x` \
                 gives {}",
                show(*x),
                show(*bound),
                show(*got),
                show(*expected)
            ),
            ClampFailure::Wrong {
                x,
                bound,
                scale: Some(scale),
                got,
                expected,
            } => write!(
                f,
                "the clamp computes the wrong value: for x = {}, bound = {} and tensor scale = {} \
                 the device code stores {}, the contract (`b = min(bound × scale, 1e18)`, \
                 then `b > 0 && |x| > b ? copysign(b, x) : x`) gives {}",
                show(*x),
                show(*bound),
                show(*scale),
                show(*got),
                show(*expected)
            ),
            ClampFailure::NoTensorScale => f.write_str(
                "the value is not clamped with its tensor's bound: a multi-tensor entry must \
                 scale the bound by the tensor's `weight_clamp_scales` entry",
            ),
            ClampFailure::OtherTensor {
                scale_line,
                scale_index,
                pointer_index,
            } => write!(
                f,
                "the value is clamped with another tensor's bound: its scale is loaded (line \
                 {scale_line}) at index `{scale_index}`, its parameter-buffer pointer at index \
                 `{pointer_index}`"
            ),
        }
    }
}

/// The contract, written from its definition (not from the kernels' own `weight_clamp`, so a
/// change there cannot change what the device code is held to).
pub fn contract(x: f32, bound: f32) -> f32 {
    if bound > 0.0 && x.abs() > bound {
        if x.is_sign_negative() {
            -bound
        } else {
            bound
        }
    } else {
        x
    }
}

/// The per-tensor bound, written from its definition (not from the kernels' own
/// `tensor_bound`): the launch's bound times the tensor's scale, rounded to nearest, a product
/// above the clamp's ceiling (`adamant_kernels::clamp::BOUND_CEILING`, an overflow included)
/// saturated at the ceiling.
pub fn tensor_contract(bound: f32, scale: f32) -> f32 {
    let ceiling = adamant_kernels::clamp::BOUND_CEILING;
    let product = bound * scale;
    if product > ceiling {
        ceiling
    } else {
        product
    }
}

/// The `(x, bound, scale)` triples a multi-tensor entry's clamp is run on: every `(x, bound)`
/// case with a scale of 1, the same with the bound as the scale (and a launch bound of 1), and
/// a grid of scales that round, overflow and underflow.
pub fn scaled_cases() -> Vec<(u32, u32, u32)> {
    let one = 1f32.to_bits();
    let pairs = cases();
    let mut out: Vec<(u32, u32, u32)> = Vec::with_capacity(pairs.len() * 3);
    for &(x, b) in &pairs {
        out.push((x, b, one));
        out.push((x, one, b));
    }
    let scales = [
        0.5f32,
        2.0,
        1e-3,
        1e3,
        0.1,
        3.0,
        1e-30,
        f32::MAX,
        f32::MIN_POSITIVE,
        1.0f32.next_up(),
        1e16,
    ];
    let ceiling = adamant_kernels::clamp::BOUND_CEILING;
    // Around the ceiling too: products at it, just past it and far past it (the saturation).
    let bounds = [
        1.0f32,
        2.5,
        100.0,
        7.0,
        f32::MAX,
        1e30,
        0.3,
        0.0,
        f32::NAN,
        ceiling,
        ceiling / 2.0,
    ];
    let xs = [
        0.0f32,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1.0,
        -1.0,
        0.05,
        -0.3,
        2.0,
        -7.5,
        150.0,
        -2.6,
        1e30,
        -1e38,
        f32::MAX,
        1e-39,
    ];
    for &b in &bounds {
        for &sc in &scales {
            let t = tensor_contract(b, sc);
            let mut around = xs.to_vec();
            if t.is_finite() {
                for v in [t, t.next_up(), t.next_down()] {
                    around.push(v);
                    around.push(-v);
                }
            }
            for &x in &around {
                out.push((x.to_bits(), b.to_bits(), sc.to_bits()));
            }
        }
    }
    out
}

/// The `(x, bound)` pairs the clamp is run on.
pub fn cases() -> Vec<(u32, u32)> {
    let bounds: Vec<f32> = vec![
        0.0,
        -0.0,
        f32::NAN,
        -f32::NAN,
        -1.0,
        f32::NEG_INFINITY,
        f32::INFINITY,
        1.0,
        2.5,
        0.1,
        7.0,
        100.0,
        1e-40,
        f32::MIN_POSITIVE,
        f32::MAX,
        1e30,
    ];
    let xs: Vec<f32> = vec![
        0.0,
        -0.0,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        f32::from_bits(0xffc0_1234),
        f32::INFINITY,
        f32::NEG_INFINITY,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1e-40,
        -1e-40,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        1e30,
        -1e30,
        3.0,
        -3.0,
        150.0,
        -150.0,
    ];
    // Magnitudes from 1e-38 to 1e38, every 10^4, with both signs.
    let spread = (-38..=38)
        .step_by(4)
        .flat_map(|e| [10f32.powi(e), -(10f32.powi(e)) * 1.5]);
    let xs: Vec<f32> = xs.into_iter().chain(spread).collect();
    let mut out = Vec::new();
    for &b in &bounds {
        let mut around = xs.clone();
        if b.is_finite() {
            for v in [b, b.next_up(), b.next_down()] {
                around.push(v);
                around.push(-v);
            }
        }
        for &x in &around {
            out.push((x.to_bits(), b.to_bits()));
        }
    }
    out
}

/// Where an optimizer entry reads its clamp bound: always through its last parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BoundSource {
    /// A plain entry (the codegen's `ScalarSource::Arguments`): parameter `i` is the bound
    /// itself (`ld.param`).
    Argument(usize),
    /// A stepped entry (`ScalarSource::Record`): parameter `i` points at a step record, whose
    /// `f32` at [`BOUND_OFFSET`] is the bound.
    Record(usize),
}

/// Whether `inst` is an unguarded load of 32-bit words of one of `types` from global or
/// generic memory: the only loads a step-state bound or a tensor's scale may come from.
fn is_word_load(inst: &Instruction, types: &[&str]) -> bool {
    inst.op() == "ld"
        && inst.guard.is_none()
        && !["param", "shared", "local", "const"]
            .iter()
            .any(|s| inst.has_modifier(s))
        && types.iter().any(|t| inst.has_modifier(t))
}

/// One entry's clamp prover: the registers that depend on the bound, computed once.
pub(super) struct ClampProver<'a> {
    flow: &'a Provenance<'a>,
    instructions: &'a [Instruction],
    source: BoundSource,
    /// A multi-tensor entry's `weight_clamp_scales` parameter.
    scales: Option<usize>,
    bound_dependent: HashSet<&'a str>,
}

/// The instructions between `x`, the bound and the stored value, ready to evaluate.
struct Slice<'a> {
    /// Register -> its one definition.
    defs: HashMap<&'a str, usize>,
    /// The registers holding the bound (`ld.param` of the bound parameter).
    bound_regs: HashSet<&'a str>,
    /// The registers holding a tensor's scale, with the instruction that loads each.
    scale_regs: HashMap<&'a str, usize>,
    x: Option<&'a str>,
}

impl<'a> ClampProver<'a> {
    pub(super) fn new(
        flow: &'a Provenance<'a>,
        instructions: &'a [Instruction],
        source: BoundSource,
        scales: Option<usize>,
    ) -> Self {
        let mut prover = ClampProver {
            flow,
            instructions,
            source,
            scales,
            bound_dependent: HashSet::new(),
        };
        // Forward fixpoint: a register depends on the bound if one of its definitions reads
        // the bound parameter or a register that does.
        loop {
            let mut changed = false;
            for inst in instructions {
                let dests = super::opcodes::destinations(inst);
                if dests.is_empty() {
                    continue;
                }
                if let Some(bound) = prover
                    .bound_register(inst)
                    .or_else(|| prover.scale_register(inst))
                {
                    changed |= prover.bound_dependent.insert(bound);
                    continue;
                }
                let reads = sources(inst).iter().any(|s| {
                    s.registers()
                        .iter()
                        .any(|r| prover.bound_dependent.contains(r))
                });
                if reads {
                    for d in dests {
                        changed |= prover.bound_dependent.insert(d);
                    }
                }
            }
            if !changed {
                break;
            }
        }
        prover
    }

    /// The register that `inst` loads the bound into, if `inst` is the bound's load.
    fn bound_register(&self, inst: &'a Instruction) -> Option<&'a str> {
        let dests = destinations(inst);
        match self.source {
            BoundSource::Argument(i) => {
                let loads = Provenance::is_param_load(inst)
                    && address(inst).and_then(|a| self.flow.param_of(a)) == Some(i);
                match dests.as_slice() {
                    [d] if loads => Some(*d),
                    _ => None,
                }
            }
            BoundSource::Record(i) => {
                if !is_word_load(inst, &["b32", "f32", "u32", "s32"]) {
                    return None;
                }
                let Some(Operand::Address { base, offset }) = address(inst) else {
                    return None;
                };
                let Operand::Register(base) = base.as_ref() else {
                    return None;
                };
                let start = self.flow.offset_from_param(base, i)?.checked_add(*offset)?;
                let element = (BOUND_OFFSET as i64).checked_sub(start)?;
                if element % 4 != 0 {
                    return None;
                }
                dests.get(usize::try_from(element / 4).ok()?).copied()
            }
        }
    }

    /// The register that `inst` loads a tensor's scale into, if `inst` is a 32-bit load through
    /// the `weight_clamp_scales` pointer (at which index is checked per store).
    fn scale_register(&self, inst: &'a Instruction) -> Option<&'a str> {
        let scales = self.scales?;
        if !is_word_load(inst, &["b32", "f32"])
            || inst.opcode.split('.').any(|m| m.starts_with('v'))
        {
            return None;
        }
        let from_scales = address(inst).is_some_and(|a| {
            self.flow.address_roots(a) == [super::provenance::Root::Pointer(scales)].into()
        });
        match destinations(inst).as_slice() {
            [d] if from_scales => Some(*d),
            _ => None,
        }
    }

    /// The registers an evaluable definition reads, or why it is not evaluable.
    fn operands_of(&self, i: usize) -> Result<Vec<&'a str>, String> {
        let inst = &self.instructions[i];
        if !eval::plain_operands(inst) {
            return Err(format!(
                "`{}` (line {}) has a negated or paired predicate",
                inst.text, inst.line
            ));
        }
        let srcs = sources(inst);
        if let Some(bad) = srcs.iter().find(|o| !eval::is_value(o)) {
            return Err(format!(
                "`{}` (line {}) reads {bad}, which is neither a register nor an immediate",
                inst.text, inst.line
            ));
        }
        Ok(srcs
            .iter()
            .filter_map(|o| match o {
                Operand::Register(r) => Some(r.as_str()),
                _ => None,
            })
            .collect())
    }

    /// Builds the slice of `value`: the bound-dependent instructions feeding it, their other
    /// inputs reduced to a single `x`.
    fn slice(&self, value: &'a str) -> Result<Slice<'a>, ClampFailure> {
        let unprovable = |reason: String| ClampFailure::Unprovable { reason };
        let mut slice = Slice {
            defs: HashMap::new(),
            bound_regs: HashSet::new(),
            scale_regs: HashMap::new(),
            x: None,
        };
        let mut frontier: Vec<&'a str> = Vec::new();
        let mut stack = vec![value];
        let mut seen = HashSet::new();
        while let Some(reg) = stack.pop() {
            if !seen.insert(reg) {
                continue;
            }
            let i = self.flow.single_def(reg).map_err(unprovable)?;
            let inst = &self.instructions[i];
            if self.bound_register(inst) == Some(reg) {
                if !(inst.has_modifier("f32") || inst.has_modifier("b32")) {
                    return Err(unprovable(format!(
                        "the bound is read as `{}`, not as a 32-bit float",
                        inst.text
                    )));
                }
                slice.bound_regs.insert(reg);
                continue;
            }
            if self.scale_register(inst) == Some(reg) {
                slice.scale_regs.insert(reg, i);
                continue;
            }
            let srcs = self.operands_of(i).map_err(unprovable)?;
            slice.defs.insert(reg, i);
            for s in srcs {
                if self.bound_dependent.contains(s) {
                    stack.push(s);
                } else if !frontier.contains(&s) {
                    frontier.push(s);
                }
            }
        }
        if slice.bound_regs.is_empty() {
            return Err(unprovable(
                "the bound is not read where the value is built".into(),
            ));
        }
        if frontier.is_empty() {
            return Err(unprovable(
                "the stored value is computed from the bound alone, not from an updated value"
                    .into(),
            ));
        }
        // The clamped value: one frontier register from which every other one is computed.
        let mut memo = HashMap::new();
        let x = frontier
            .iter()
            .copied()
            .find(|&x| frontier.iter().all(|&f| self.pure_from(f, x, &mut memo, 0)));
        let Some(x) = x else {
            return Err(unprovable(format!(
                "besides the bound, the stored value depends on {} values that are not all \
                 computed from one of them ({})",
                frontier.len(),
                frontier.join(", ")
            )));
        };
        slice.x = Some(x);
        let mut stack = frontier;
        while let Some(reg) = stack.pop() {
            if reg == x || slice.defs.contains_key(reg) {
                continue;
            }
            let i = self.flow.single_def(reg).map_err(unprovable)?;
            slice.defs.insert(reg, i);
            stack.extend(self.operands_of(i).map_err(unprovable)?);
        }
        Ok(slice)
    }

    /// Whether `reg` is `x` or computed from `x` and immediates alone, by unguarded single
    /// definitions that the interpreter knows (memoized: the walk may cross the update's DAG).
    fn pure_from(
        &self,
        reg: &'a str,
        x: &'a str,
        memo: &mut HashMap<(&'a str, &'a str), bool>,
        depth: usize,
    ) -> bool {
        if reg == x {
            return true;
        }
        if depth > 64 {
            return false;
        }
        if let Some(&known) = memo.get(&(reg, x)) {
            return known;
        }
        let result = match self.flow.single_def(reg) {
            Ok(i) => {
                let inst = &self.instructions[i];
                let computes = matches!(
                    super::opcodes::class(inst),
                    super::opcodes::Class::Compute | super::opcodes::Class::Compare
                );
                computes
                    && self.operands_of(i).is_ok_and(|srcs| {
                        srcs.into_iter()
                            .all(|s| self.pure_from(s, x, memo, depth + 1))
                    })
            }
            Err(_) => false,
        };
        memo.insert((reg, x), result);
        result
    }

    /// Proves that the value in `value`, stored at `address` through a pointer of parameter
    /// `target` (a table, in a multi-tensor entry), is the clamp of one value with the
    /// bound (times its tensor's scale, in a multi-tensor entry), on every case of [`cases`]
    /// (of [`scaled_cases`]). Returns the number of cases evaluated.
    pub(super) fn prove(
        &self,
        value: &'a Operand,
        address: Option<&'a Operand>,
        target: usize,
    ) -> Result<usize, ClampFailure> {
        let Operand::Register(value) = value else {
            return Err(ClampFailure::NoBound);
        };
        if !self.bound_dependent.contains(value.as_str()) {
            return Err(ClampFailure::NoBound);
        }
        let slice = self.slice(value)?;
        if let Some(scales) = self.scales {
            self.check_tensor(&slice, scales, address, target)?;
        }
        let (program, result) = self
            .compile(value, &slice)
            .map_err(|reason| ClampFailure::Unprovable { reason })?;
        let one = 1f32.to_bits();
        let mut cases: Vec<(u32, u32, u32)> = if self.scales.is_some() {
            static SCALED: std::sync::OnceLock<Vec<(u32, u32, u32)>> = std::sync::OnceLock::new();
            SCALED.get_or_init(scaled_cases).clone()
        } else {
            static CASES: std::sync::OnceLock<Vec<(u32, u32)>> = std::sync::OnceLock::new();
            let pairs = CASES.get_or_init(cases);
            pairs.iter().map(|&(x, b)| (x, b, one)).collect()
        };
        for (x, b) in self.constant_cases(&program) {
            cases.push((x, b, one));
            if self.scales.is_some() {
                cases.push((x, one, b));
            }
        }
        let mut slots = vec![0u32; program.len()];
        for &(x, bound, scale) in &cases {
            let value_of = |a: Src, slots: &[u32]| match a {
                Src::X => x,
                Src::Bound => bound,
                Src::Scale => scale,
                Src::Imm(v) => v,
                Src::Slot(j) => slots[j],
            };
            for (k, step) in program.iter().enumerate() {
                let args: Vec<u32> = step.args.iter().map(|a| value_of(*a, &slots)).collect();
                let inst = &self.instructions[step.inst];
                slots[k] = eval::apply(inst, &args).map_err(|e| ClampFailure::Unprovable {
                    reason: format!("{e} (line {})", inst.line),
                })?;
            }
            let got = value_of(result, &slots);
            let (b, s) = (f32::from_bits(bound), f32::from_bits(scale));
            let expected = match self.scales {
                Some(_) => contract(f32::from_bits(x), tensor_contract(b, s)),
                None => contract(f32::from_bits(x), b),
            }
            .to_bits();
            if got != expected {
                return Err(ClampFailure::Wrong {
                    x,
                    bound,
                    scale: self.scales.map(|_| scale),
                    got,
                    expected,
                });
            }
        }
        Ok(cases.len())
    }

    /// A multi-tensor entry: the value must be clamped with a scale, and every scale it depends
    /// on must have been loaded at the index the stored pointer was loaded at.
    fn check_tensor(
        &self,
        slice: &Slice<'a>,
        scales: usize,
        address: Option<&'a Operand>,
        table: usize,
    ) -> Result<(), ClampFailure> {
        let unprovable = |reason: String| ClampFailure::Unprovable { reason };
        if slice.scale_regs.is_empty() {
            return Err(ClampFailure::NoTensorScale);
        }
        let index = TensorIndex {
            flow: self.flow,
            instructions: self.instructions,
        };
        let address = address.ok_or_else(|| unprovable("the store has no address".into()))?;
        let stored = index.stored_index(address, table).map_err(|e| {
            unprovable(format!("the stored pointer's tensor cannot be traced: {e}"))
        })?;
        for &load in slice.scale_regs.values() {
            let inst = &self.instructions[load];
            let scale = index
                .load_index(inst, scales, 4)
                .map_err(|e| unprovable(format!("the scale's tensor cannot be traced: {e}")))?;
            if scale != stored {
                return Err(ClampFailure::OtherTensor {
                    scale_line: inst.line,
                    scale_index: scale.to_string(),
                    pointer_index: stored.to_string(),
                });
            }
        }
        Ok(())
    }

    /// Cases around every constant the clamp's instructions use (as `x` and as the bound, ± 1
    /// ulp, both signs): a clamp that special-cases one value is caught at that value, not only
    /// if the fixed table happens to contain it.
    fn constant_cases(&self, program: &[Step]) -> Vec<(u32, u32)> {
        let mut constants: Vec<f32> = Vec::new();
        for step in program {
            for a in &step.args {
                if let Src::Imm(bits) = *a {
                    let v = f32::from_bits(bits);
                    // Integer immediates (masks, shifts) read as floats too: harmless cases.
                    for c in [v, v.next_up(), v.next_down()] {
                        for c in [c, -c] {
                            if !constants.iter().any(|k| k.to_bits() == c.to_bits()) {
                                constants.push(c);
                            }
                        }
                    }
                }
            }
        }
        let anchors = [1.0f32, 100.0, 0.0, -1.0, f32::NAN, 3.0, 1e-3];
        let mut out = Vec::new();
        for &c in &constants {
            for &a in &anchors {
                out.push((c.to_bits(), a.to_bits()));
                out.push((a.to_bits(), c.to_bits()));
            }
            for &d in &constants {
                out.push((c.to_bits(), d.to_bits()));
            }
        }
        out.truncate(20_000);
        out
    }

    /// The slice as straight-line steps in dependency order, and where `value` ends up.
    fn compile(&self, value: &'a str, slice: &Slice<'a>) -> Result<(Vec<Step>, Src), String> {
        let mut program: Vec<Step> = Vec::new();
        let mut slot_of: HashMap<&'a str, usize> = HashMap::new();
        let result = self.emit(value, slice, &mut program, &mut slot_of, 0)?;
        Ok((program, result))
    }

    fn emit(
        &self,
        reg: &'a str,
        slice: &Slice<'a>,
        program: &mut Vec<Step>,
        slot_of: &mut HashMap<&'a str, usize>,
        depth: usize,
    ) -> Result<Src, String> {
        if slice.x == Some(reg) {
            return Ok(Src::X);
        }
        if slice.bound_regs.contains(reg) {
            return Ok(Src::Bound);
        }
        if slice.scale_regs.contains_key(reg) {
            return Ok(Src::Scale);
        }
        if let Some(&k) = slot_of.get(reg) {
            return Ok(Src::Slot(k));
        }
        if depth > 256 {
            return Err("the clamp's slice is too deep".into());
        }
        let i = *slice
            .defs
            .get(reg)
            .ok_or_else(|| format!("`{reg}` is outside the clamp's slice"))?;
        let inst = &self.instructions[i];
        let f32_immediates = eval::is_f32(inst);
        let mut args = Vec::new();
        for o in sources(inst) {
            args.push(match o {
                Operand::Register(r) => self.emit(r, slice, program, slot_of, depth + 1)?,
                Operand::Immediate(text) => {
                    Src::Imm(eval::immediate(text, f32_immediates).ok_or_else(|| {
                        format!("cannot read the immediate `{text}` of `{}`", inst.text)
                    })?)
                }
                other => return Err(format!("cannot evaluate the operand {other}")),
            });
        }
        program.push(Step { inst: i, args });
        let k = program.len() - 1;
        slot_of.insert(reg, k);
        Ok(Src::Slot(k))
    }
}

/// Where one argument of a compiled step comes from.
#[derive(Clone, Copy, Debug)]
enum Src {
    X,
    Bound,
    /// A multi-tensor entry's scale of the stored tensor.
    Scale,
    Imm(u32),
    Slot(usize),
}

/// One instruction of a compiled clamp: its index and its arguments.
struct Step {
    inst: usize,
    args: Vec<Src>,
}
