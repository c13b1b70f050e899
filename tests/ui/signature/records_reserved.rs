// `records` is every optimizer entry's diagnostics records header, appended by the macro like the
// bound: a kernel cannot declare it, so it can neither drop nor replace the records.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] records: f32) -> f32 {
    p - records * g
}

fn main() {}
