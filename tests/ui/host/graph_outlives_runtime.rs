// A captured graph owns a share of every allocation it recorded, so it may outlive the buffers'
// handles; it borrows the runtime, whose modules hold its kernels, so it cannot outlive that.
use adamant_runtime::Adamant;

fn main() {
    let graph = {
        let rt = Adamant::new().unwrap();
        rt.capture(Vec::new()).unwrap()
    };
    drop(graph);
}
