// A local macro_rules! that joins tokens into an `unsafe` block: the tokens `unsafe` and `{..}`
// only meet in the expansion, which the body check never sees, so the definition itself is
// rejected.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    macro_rules! join {
        ($kw:ident $body:block) => {
            $kw $body
        };
    }
    join!(unsafe {
        *(0x1000 as *mut f32) = 1.0e30;
    });
    p - lr * g
}

fn main() {}
