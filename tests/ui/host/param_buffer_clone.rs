// A buffer is one owner of its allocation: it is neither `Clone` nor `Copy`, so no second handle
// (which could be written through while the first is borrowed by a launch) can be made.
use adamant_runtime::ParamBuffer;

fn main() {
    let params = ParamBuffer::zeroed(4).unwrap();
    let _second = params.clone();
}
