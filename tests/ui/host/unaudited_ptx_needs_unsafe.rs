// A module that no audited build certified (adamant's own PTX with one line changed, say) loads
// only through the unsafe forms: from safe code, `Adamant::new` and `add_module` take a module
// whose certificate matches its PTX and the registered descriptors.
use adamant_runtime::Adamant;

fn main() {
    let patched = adamant_runtime::PTX.replace("ld.param.f32", "mov.f32");
    let kernels = adamant_device::abi::kernels();
    let _rt = Adamant::with_unaudited_ptx(&patched, &kernels);
}
