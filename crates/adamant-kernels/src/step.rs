//! The advance entry: one step of every record of a set of records
//! ([`adamant_device::step::advance`] each), for an eager step and as the first node of a
//! replayed one, so both are the same computation. The record is `adamant_abi::record`'s.
use adamant_device::kernel_entry;
// The host compiles the entries' descriptors, not their bodies, which these serve.
#[cfg_attr(not(target_arch = "nvptx64"), allow(unused_imports))]
use adamant_device::step::advance_record;

/// Advances `n_states` records, one thread each: [`advance`](adamant_device::step::advance) with the `f32` each record's
/// [`StepState::q_abs_ref`](adamant_device::step::StepState::q_abs_ref) points at (NaN, hence the fallback and the flag, for a null pointer
/// in [`BOUND_FROM_Q_ABS_REF`](adamant_device::step::BOUND_FROM_Q_ABS_REF) mode). One launch per step for every record of a set of records;
/// under a microsecond of device time.
///
/// Each advanced record is also written to `mirror` (the same layout, `n_states` records): the
/// runtime passes page-locked host memory mapped into the device's address space, so the host
/// reads the step's records after the step's event with no copy node in the graph.
///
/// `states` and `mirror` are declared as `u32` words (a `#[kernel_entry]` writes integer report
/// words through its `#[output]`s); the runtime binds only its own record arrays here.
#[kernel_entry]
pub unsafe extern "gpu-kernel" fn step_advance_kernel(
    #[output] states: *mut u32,
    n_states: u32,
    #[output] mirror: *mut u32,
) {
    let i = adamant_device::builtins::global_thread_index();
    if i < n_states as usize {
        advance_record(states, mirror, i);
    }
}
