// #[kernel_entry] applies to a fn only.
use adamant_device::kernel_entry;

#[kernel_entry]
pub struct Count;

fn main() {}
