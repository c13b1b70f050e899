// The raw constructor of a `#[uniform_ptr]` argument is `unsafe`: its caller vouches that the
// address is a live `f32` of device memory (and a launch still refuses any address that is not a
// live `DeviceScalar`'s).
use adamant_device::abi::UniformPtr;

fn main() {
    let _raw = UniformPtr::from_raw(0xdead_beef);
}
