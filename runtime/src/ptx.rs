//! A small reader for the PTX that rustc's NVPTX backend emits: entries, their parameters and
//! bodies, and external function declarations. Shared by `build.rs` (through `#[path]`) and the
//! audit, so it depends on `std` only.

/// One `.param` of an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxParam {
    /// PTX type, like `.u64` or `.f32`.
    pub ty: String,
    pub name: String,
}

/// One `.entry` with its parameter list and body lines (between the braces).
#[derive(Clone, Debug)]
pub struct PtxEntry {
    pub name: String,
    pub params: Vec<PtxParam>,
    pub body: Vec<String>,
}

/// Every `.entry` in `ptx`, in file order.
pub fn entries(ptx: &str) -> Vec<PtxEntry> {
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(name) = entry_name(lines[i]) else {
            i += 1;
            continue;
        };
        let mut params = Vec::new();
        i += 1;
        while i < lines.len() && !lines[i].trim_start().starts_with(')') {
            if let Some(p) = parse_param(lines[i]) {
                params.push(p);
            }
            i += 1;
        }
        // Skip to the opening brace, then collect until the closing one at column 0.
        while i < lines.len() && lines[i].trim() != "{" {
            i += 1;
        }
        i += 1;
        let mut body = Vec::new();
        while i < lines.len() && lines[i] != "}" {
            body.push(lines[i].to_string());
            i += 1;
        }
        out.push(PtxEntry { name, params, body });
        i += 1;
    }
    out
}

fn entry_name(line: &str) -> Option<String> {
    let rest = line.split(".entry").nth(1)?;
    let rest = rest.trim_start();
    let end = rest.find('(').unwrap_or(rest.len());
    let name = rest[..end].trim();
    (!name.is_empty()).then(|| name.to_string())
}

fn parse_param(line: &str) -> Option<PtxParam> {
    let line = line.trim().trim_end_matches(',');
    let mut words = line.split_whitespace();
    if words.next()? != ".param" {
        return None;
    }
    let ty = words.next()?.to_string();
    let name = words.last()?.to_string();
    Some(PtxParam { ty, name })
}

/// Names of functions the module declares `.extern` (the driver must resolve them at load time,
/// and for adamant's self-contained module it cannot: any such name is a build error).
pub fn extern_functions(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter(|l| l.contains(".extern") && l.contains(".func"))
        .map(|l| {
            let after = l.split(".func").nth(1).unwrap_or("").trim();
            // `.extern .func (.param .b32 ret) name(` or `.extern .func name(`
            let after = match after.strip_prefix('(') {
                Some(rest) => rest.split_once(')').map(|(_, r)| r.trim()).unwrap_or(rest),
                None => after,
            };
            after.split('(').next().unwrap_or(after).trim().to_string()
        })
        .collect()
}
