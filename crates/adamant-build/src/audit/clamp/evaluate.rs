//! The compiled slice run on the case table: the contract's cases, and more around every
//! constant the slice uses, each compared bit for bit with the contract.
use super::contract::{cases, contract, scaled_cases, tensor_contract};
use super::program::{Src, Step};
use super::stored::{storage_cases, stored_contract};
use super::word::{word_anchors, words};
use super::{ClampFailure, ClampProver, Unprovable};
use crate::audit::eval;
use crate::audit::located::At;

/// What a run of a compiled clamp depends on: the storage type, whether the entry has scales,
/// where the result is, and each step's opcode, argument sources, lane and destination width.
type MemoKey = (
    adamant_abi::Storage,
    adamant_abi::Rounding,
    Option<u32>,
    bool,
    Src,
    Vec<(String, Vec<Src>, (Option<usize>, usize))>,
);

/// The programs proven in this process, with their case counts.
fn proven() -> &'static std::sync::Mutex<std::collections::HashMap<MemoKey, usize>> {
    static PROVEN: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<MemoKey, usize>>,
    > = std::sync::OnceLock::new();
    PROVEN.get_or_init(Default::default)
}

impl ClampProver<'_> {
    /// Runs `program` (whose value ends up in `result`) on every case; the number of cases, or
    /// the first one where it departs from the contract.
    ///
    /// `word_bits`: a stochastic store's word width; every case runs with each word of the
    /// table that fits ([`words`]), and the anchors with every constant of the program that fits
    /// (a store that special-cases one word value is caught at that value).
    pub(super) fn evaluate(
        &self,
        program: &[Step],
        result: Src,
        word_bits: Option<u32>,
    ) -> Result<usize, ClampFailure> {
        // A run is a function of the steps (each instruction's opcode, where its arguments come
        // from, the lane it defines), where the result is, the storage type and whether there
        // are scales: nothing else reaches it. A process that audits many modules alike (the
        // tests, which edit one entry and audit the whole module again) proves each program
        // once. Only proofs are kept: a failure names its instruction's line, which another
        // module's identical program would have elsewhere.
        let key = self.memo_key(program, result, word_bits);
        if let Some(&cases) = proven().lock().expect("not poisoned").get(&key) {
            return Ok(cases);
        }
        let cases = self.run_cases(program, result, word_bits)?;
        proven().lock().expect("not poisoned").insert(key, cases);
        Ok(cases)
    }

    fn memo_key(&self, program: &[Step], result: Src, word_bits: Option<u32>) -> MemoKey {
        let steps = program
            .iter()
            .map(|step| {
                let inst = &self.instructions[step.inst];
                // A vector destination's width decides how it is taken apart (`unpack`).
                let width = match inst.operands.first() {
                    Some(crate::ptx::Operand::Vector(items)) => items.len(),
                    _ => 0,
                };
                (inst.opcode.clone(), step.args.clone(), (step.lane, width))
            })
            .collect();
        (
            self.storage,
            self.rounding,
            word_bits,
            self.scales.is_some(),
            result,
            steps,
        )
    }

    /// [`Self::evaluate`] without the memo.
    fn run_cases(
        &self,
        program: &[Step],
        result: Src,
        word_bits: Option<u32>,
    ) -> Result<usize, ClampFailure> {
        let one = 1f32.to_bits();
        let mut cases: Vec<(u32, u32, u32)> = if self.scales.is_some() {
            static SCALED: std::sync::OnceLock<Vec<(u32, u32, u32)>> = std::sync::OnceLock::new();
            SCALED.get_or_init(scaled_cases).clone()
        } else {
            static CASES: std::sync::OnceLock<Vec<(u32, u32)>> = std::sync::OnceLock::new();
            let pairs = CASES.get_or_init(cases);
            pairs.iter().map(|&(x, b)| (x, b, one)).collect()
        };
        // Around every bound's neighbours in a 16-bit storage type (where rounding may cross it).
        let mut bounds: Vec<u32> = cases.iter().map(|&(_, b, _)| b).collect();
        bounds.sort_unstable();
        bounds.dedup();
        for (x, b) in storage_cases(self.storage, &bounds) {
            cases.push((x, b, one));
        }
        for (x, b) in self.constant_cases(program) {
            cases.push((x, b, one));
            if self.scales.is_some() {
                cases.push((x, one, b));
            }
        }
        let mut slots = vec![0u32; program.len()];
        // One argument list, reused by every step of every case (no allocation in the loop).
        let mut args: Vec<u32> = Vec::with_capacity(8);
        // A store rounded to nearest runs each case once (its word, unused, is 0).
        let words = word_bits.map_or(vec![0], words);
        let special = word_bits.map_or(Vec::new(), |bits| word_constant_cases(self, program, bits));
        let runs = cases
            .iter()
            .flat_map(|&(x, b, s)| words.iter().map(move |&w| (x, b, s, w)))
            .chain(special);
        let mut count = 0;
        for (x, bound, scale, word) in runs {
            count += 1;
            let value_of = |a: Src, slots: &[u32]| match a {
                Src::X => x,
                Src::Bound => bound,
                Src::Scale => scale,
                Src::Word => word,
                Src::Imm(v) => v,
                Src::Slot(j) => slots[j],
            };
            for (k, step) in program.iter().enumerate() {
                args.clear();
                args.extend(step.args.iter().map(|a| value_of(*a, &slots)));
                let inst = &self.instructions[step.inst];
                let value = match (step.lane, args.as_slice()) {
                    (Some(lane), &[source]) => super::unpack::unpack(inst, source, lane),
                    _ => eval::apply(inst, &args),
                };
                slots[k] = value.map_err(|error| {
                    let at = At::of(inst);
                    let reason = Unprovable::Evaluation { at, error };
                    ClampFailure::Unprovable { reason }
                })?;
            }
            // A store of a type narrower than its register writes the register's low bits
            // (PTX truncates a wide source operand to the store's type).
            let got = value_of(result, &slots) & width_mask(self.storage);
            let (b, s) = (f32::from_bits(bound), f32::from_bits(scale));
            let effective = match self.scales {
                Some(_) => tensor_contract(b, s),
                None => b,
            };
            let clamped = contract(f32::from_bits(x), effective);
            // `word_bits` is set exactly for a stochastic store (`prover.rs`).
            let rounding = word_bits.map(|_| word);
            let expected =
                stored_contract(self.storage, self.rounding, rounding, clamped, effective);
            if got != expected {
                return Err(ClampFailure::Wrong {
                    x,
                    bound,
                    scale: self.scales.map(|_| scale),
                    got,
                    expected,
                    storage: self.storage,
                    rounding: self.rounding,
                    word: rounding,
                });
            }
        }
        Ok(count)
    }

    /// Cases around every constant the clamp's instructions use (as `x` and as the bound, ± 1
    /// ulp, both signs): a clamp that special-cases one value is caught at that value, not only
    /// if the fixed table happens to contain it. Every constant is paired with the anchors (as
    /// `x` and as the bound); the constants of float instructions also with each other, for a
    /// clamp that special-cases a pair of values. Integer constants (a 16-bit rounding's masks,
    /// shift amounts and exponent offsets: dozens of them) are paired with the anchors only:
    /// all their pairs were tens of thousands of cases per stored value, most of the audit's
    /// time, for bounds that are subnormal bit patterns.
    fn constant_cases(&self, program: &[Step]) -> Vec<(u32, u32)> {
        let mut floats: Vec<f32> = Vec::new();
        let mut integers: Vec<f32> = Vec::new();
        for step in program {
            let inst = &self.instructions[step.inst];
            let list = if eval::is_f32(inst) {
                &mut floats
            } else {
                &mut integers
            };
            for a in &step.args {
                if let Src::Imm(bits) = *a {
                    let v = f32::from_bits(bits);
                    for c in [v, v.next_up(), v.next_down()] {
                        for c in [c, -c] {
                            if !list.iter().any(|k| k.to_bits() == c.to_bits()) {
                                list.push(c);
                            }
                        }
                    }
                }
            }
        }
        let anchors = [1.0f32, 100.0, 0.0, -1.0, f32::NAN, 3.0, 1e-3];
        let mut out = Vec::new();
        for &c in floats.iter().chain(&integers) {
            for &a in &anchors {
                out.push((c.to_bits(), a.to_bits()));
                out.push((a.to_bits(), c.to_bits()));
            }
        }
        for &c in &floats {
            for &d in &floats {
                out.push((c.to_bits(), d.to_bits()));
            }
        }
        out.truncate(20_000);
        out
    }
}

/// The runs of a stochastic store beyond its word table: every integer constant of the program
/// and its neighbours, as the word (where the register's width allows), with each of the word
/// anchors' `(x, bound)` pairs.
fn word_constant_cases(
    prover: &ClampProver<'_>,
    program: &[Step],
    bits: u32,
) -> Vec<(u32, u32, u32, u32)> {
    let mut constants: Vec<u32> = Vec::new();
    for step in program {
        if eval::is_f32(&prover.instructions[step.inst]) {
            continue;
        }
        for a in &step.args {
            if let Src::Imm(c) = *a {
                for w in [c, c.wrapping_add(1), c.wrapping_sub(1)] {
                    if (bits >= 32 || w < 1u32 << bits) && !constants.contains(&w) {
                        constants.push(w);
                    }
                }
            }
        }
    }
    let one = 1f32.to_bits();
    constants
        .iter()
        .flat_map(|&w| word_anchors().map(move |(x, b)| (x, b, one, w)))
        .collect()
}

/// The bits of a register that a store of `storage` writes: all 32 for f32, the low 16 for a
/// 16-bit type.
fn width_mask(storage: adamant_abi::Storage) -> u32 {
    match storage.bytes() {
        4 => u32::MAX,
        bytes => (1u32 << (8 * bytes)) - 1,
    }
}
