// Loading another crate's PTX beside adamant's without its certificate takes `unsafe`; the safe
// `add_module` takes an `AuditedModule`, and making one from raw texts is `unsafe` too.
use adamant_runtime::{Adamant, AuditedModule};

fn load(rt: &mut Adamant, ptx: &'static str, certificate: &'static str) {
    let _ = rt.add_unaudited_module(ptx, &adamant_device::abi::kernels());
    let _ = AuditedModule::from_build_output(ptx, certificate);
}

fn main() {}
