// ...and the seal itself cannot be implemented in safe code: `GeneratedEntry` is an
// `unsafe trait`, so forging it takes an explicit `unsafe impl`, outside what adamant guarantees
// (and even then the runtime builds every argument from the registered descriptor).
use adamant_device::abi::GeneratedEntry;

struct Forged;

impl GeneratedEntry for Forged {}

fn main() {}
