// The loop that stores the parameter buffer takes the bound as an argument; if other code could
// call it (say a #[kernel_entry], with a bound of 0.0), the clamp would be one call away from
// being skipped. It is generated as `__adamant_sweep` inside an anonymous `const _: () = { .. };`
// block with the entries, so neither its old path (`<kernel>::sweep`) nor its name resolves
// anywhere else. (trybuild builds for the host, where the device block is compiled out; the
// codegen structure tests check the nvptx expansion: the kernel module holds no fn but `update`
// and `element`, and the sweep lives only in the device block.)
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn halve(#[param] p: f32) -> f32 {
    p * 0.5
}

/// # Safety
/// `p` points to `len` floats.
pub unsafe fn unclamped(p: *mut f32, len: usize) {
    halve::sweep(p, len, 0, 1, 0.0);
    __adamant_sweep(p, len, 0, 1, 0.0);
}

fn main() {}
