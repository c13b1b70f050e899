//! `adamant checkpoint FILE`: a checkpoint read and checked as a restore reads it (whole, its
//! format and checksum), then listed: every tensor with its type, shape and non-finite values
//! (a moment with a NaN is reported here before anyone tries to resume from it), and every
//! metadata entry.
use std::path::Path;
use std::process::ExitCode;

use adamant_runtime::checkpoint::Checkpoint;

/// The listing of the checkpoint at `path`, or why it cannot be used.
pub(crate) fn listing(path: &Path) -> Result<String, String> {
    let ck = Checkpoint::load(path).map_err(|e| e.to_string())?;
    let mut out = format!(
        "{}: a whole adamant checkpoint, checksum verified\n",
        path.display()
    );
    for name in ck.names() {
        let t = ck.get(name).expect("a listed name");
        let elements: usize = t.shape.iter().product();
        let note = match t.non_finite() {
            Some(bad) => format!(
                "  {} non-finite (first: element {}, {})",
                bad.count, bad.first, bad.value
            ),
            None => String::new(),
        };
        out.push_str(&format!(
            "tensor {name} {} {:?} ({elements} elements){note}\n",
            t.kind.name(),
            t.shape
        ));
    }
    for (key, value) in ck.metadata_entries() {
        out.push_str(&format!("meta {key} = {value}\n"));
    }
    Ok(out)
}

/// Runs `adamant checkpoint FILE`: exit 0 with the listing, 2 with the error.
pub(crate) fn run(path: &Path) -> ExitCode {
    match listing(path) {
        Ok(text) => {
            crate::emit(&text);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("adamant checkpoint: {e}");
            ExitCode::from(2)
        }
    }
}
