// A `#[uniform_ptr]` argument points a kernel at device memory: safe code cannot make one from an
// address (the field is private, the raw constructor is unsafe); `DeviceScalar::uniform_ptr` is
// the way, and every launch checks that scalar is still alive.
use adamant_device::abi::UniformPtr;

fn main() {
    let _forged = UniformPtr(0xdead_beef);
}
