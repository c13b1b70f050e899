//! A kernel's arguments as the driver takes them: the values in PTX order ([`ArgValue`]), one
//! pointer to each for `cuLaunchKernel`, and the check that a hand-written argument list matches
//! its entry's descriptor. Below every launch path (the typed launches, the advance, the guard,
//! the schedules, the NaN checker), so none of them depends on another for it.
use std::ffi::c_void;

use adamant_device::abi::{ArgValue, KernelDescriptor, ParamType};
use smallvec::SmallVec;

/// Panics unless `args` has `kernel`'s parameter count and types: for the runtime's own fixed
/// launches (the checker, the advance), whose argument lists are written by hand beside the
/// entry they launch, so a changed entry fails the first launch (and the CPU tests) loudly
/// instead of reading garbage.
pub(crate) fn assert_args_match(kernel: &KernelDescriptor, args: &[ArgValue]) {
    let params = kernel.params;
    assert_eq!(args.len(), params.len(), "{}: argument count", kernel.name);
    for (arg, param) in args.iter().zip(params) {
        let ty = match arg {
            ArgValue::Ptr(_) => ParamType::Ptr,
            ArgValue::F32(_) => ParamType::F32,
            ArgValue::U32(_) => ParamType::U32,
            ArgValue::Usize(_) => ParamType::Usize,
        };
        assert_eq!(
            ty, param.ty,
            "{}: type of argument `{}`",
            kernel.name, param.name
        );
    }
}

/// How many arguments an entry's list holds on the stack ([`Args`], [`arg_pointers`]): every
/// entry adamant has fits (17 parameters at most today,
/// `launch_check::tests::every_entry_fits_the_inline_argument_list`); a longer list moves to the
/// heap.
pub(crate) const INLINE_ARGS: usize = 24;

/// An entry's argument values, in its descriptor's order, on the stack (no allocation per
/// launch).
pub type Args = SmallVec<[ArgValue; INLINE_ARGS]>;

/// Kernel-parameter pointers for cuLaunchKernel, one per value, pointing into `values`: on the
/// stack as [`Args`] is.
pub(crate) fn arg_pointers(values: &mut [ArgValue]) -> SmallVec<[*mut c_void; INLINE_ARGS]> {
    values.iter_mut().map(ArgValue::param_pointer).collect()
}
