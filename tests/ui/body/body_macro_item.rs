// A macro in item position could expand to an exported, unclamped entry.
use adamant_device::optimizer_kernel;

#[allow(unused_macros)]
macro_rules! entry {
    () => {
        #[no_mangle]
        pub unsafe extern "C" fn unclamped(p: *mut f32) {
            *p = 1.0e30;
        }
    };
}

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    entry! {}
    p - lr * g
}

fn main() {}
