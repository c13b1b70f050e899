//! Parsing and validation of an `#[optimizer_kernel]` function. Every rejection is a
//! `syn::Error` spanned on the offending tokens, never on the attribute itself.
//!
//! The function is a plain, safe, non-generic `fn` returning the new parameter value as `f32`,
//! with only doc and lint attributes. Its arguments, each a plain name:
//! - `#[param] p: f32`: the parameter's current value, exactly once (never its pointer);
//! - `#[input] g: f32`: one element of a read-only buffer;
//! - `#[state] m: &mut f32`: one element of a buffer the update reads and writes;
//! - `#[uniform_ptr(default = <f32 literal>)] s: f32`: one device-resident f32 read by every
//!   thread (a null pointer means the default);
//! - a plain `f32` or `u32`: a uniform scalar. An `f32` may carry `#[domain(gt|ge = .., lt|le =
//!   ..)]` (the values a launch may pass, [`crate::domain`]); it is finite in any case, and a
//!   `u32` takes any value.
//! - `#[group] name: Group`: the scalars of a `#[scalar_group]`, as if written out here
//!   ([`crate::group_use`]); the body reads them as `name.field`.
//!
//! `weight_clamp_max_abs`, `len`, `chunks`, `n_chunks`, `weight_clamp_scales` and names starting
//! with `__adamant` are the generated entries' own. The body is checked after the signature, by
//! [`crate::body`].
use proc_macro2::TokenStream;
use quote::format_ident;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, FnArg, Ident, ItemFn, Lit, Meta, Pat, ReturnType, Type};

use crate::domain::{self, Domain};
pub use crate::group_use::GroupBinding;
use crate::storage::Storage;

/// The clamp bound the macro appends to every optimizer entry. Authors cannot declare it.
pub const BOUND: &str = "weight_clamp_max_abs";
/// The element-count parameter the macro adds after the buffers.
pub const LEN: &str = "len";
/// The chunk table and its length in the multi-tensor entry.
pub const CHUNKS: &str = "chunks";
pub const N_CHUNKS: &str = "n_chunks";
/// The per-tensor bound scales of the multi-tensor entries (`adamant_device::multi::tensor_bound`).
pub const SCALES: &str = "weight_clamp_scales";
/// The step-state pointer the macro appends, in place of the bound, to the stepped entries.
pub const STEP_STATE: &str = "step_state";
/// The diagnostics records header the macro appends, before the bound (or the step state), to
/// every optimizer entry.
pub const RECORDS: &str = "records";
/// Prefix of the macro's own local names; reserved so they can't shadow an argument.
pub const RESERVED_PREFIX: &str = "__adamant";
/// The fields of `adamant_device::step::StepState` a `#[step]` scalar may name: the values that
/// change from step to step (the learning rate, the bias corrections) and the betas that the
/// record's advance uses (so the entry and the advance cannot disagree on them).
pub const STEP_FIELDS: [&str; 6] = [
    "lr",
    "beta1",
    "beta2",
    "bias_correction1",
    "bias_correction2",
    "step",
];

/// The one `#[step]` field that is a `u32`: the step number `t` (a stochastic store hashes it
/// into its random words, so every step rounds its own way).
pub const STEP_NUMBER: &str = "step";

/// What one argument of the author's function is.
#[derive(Clone, Debug, PartialEq)]
pub enum Role {
    /// `#[param] p: f32`: the parameter's current value. Exactly one per kernel.
    Param,
    /// `#[input] g: f32`: a read-only per-element buffer.
    Input,
    /// `#[state] m: &mut f32`: a per-element buffer the update reads and writes.
    State,
    /// `#[uniform_ptr(default = 1.0)] s: f32`: one device-resident f32 (null = default).
    UniformPtr(Lit),
    /// `lr: f32` (or `u32`): a plain uniform scalar, with the values a launch may pass
    /// (`#[domain(..)]` on an `f32`; always finite; a `u32` takes any value).
    Scalar(ScalarType),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarType {
    /// An `f32`, finite and within its `#[domain(..)]` (`Domain::FINITE` without one).
    F32(Domain),
    /// A `u32`: any value.
    U32,
}

impl Role {
    pub fn is_buffer(&self) -> bool {
        matches!(self, Role::Param | Role::Input | Role::State)
    }
}

/// How long a scalar's value lives: every scalar declares one, since a stepped entry reads each
/// from its record (a launch argument would be replayed frozen by a captured graph).
#[derive(Clone, Debug, PartialEq)]
pub enum Lifetime {
    /// `#[step]`: the field of the same name in the record's shared `StepState`.
    Step,
    /// `#[hyper]`: a hyperparameter in the record's own words, set by the host.
    Hyper,
    /// `#[derived(init = ..)]`: computed by the kernel's schedule after every advance; the
    /// literal is its value at `t = 0`.
    Derived(Lit),
}

#[derive(Clone, Debug)]
pub struct Arg {
    pub ident: Ident,
    pub role: Role,
    /// `#[grad]`: an `#[input]` that is a gradient. A stepped entry multiplies it by its record's
    /// global-norm clip coefficient (`adamant_device::guard`).
    pub grad: bool,
    /// The scalar's lifetime (every `Role::Scalar` has one; nothing else does).
    pub lifetime: Option<Lifetime>,
    /// The index in [`OptimizerFn::groups`] of the `#[group]` this scalar is a field of.
    pub group: Option<usize>,
    /// A buffer's storage type (`#[param(bf16)]`); `F32` for every argument that is not a
    /// buffer.
    pub storage: Storage,
}

impl Arg {
    /// Whether this scalar lives in the record's own words (`#[hyper]` or `#[derived]`).
    pub fn in_record_words(&self) -> bool {
        matches!(self.lifetime, Some(Lifetime::Hyper | Lifetime::Derived(_)))
    }
}

/// A validated optimizer kernel definition.
pub struct OptimizerFn {
    /// The author's function with every `#[group]` argument replaced by the group's fields (one
    /// argument per scalar, as the entries take them).
    pub func: ItemFn,
    pub args: Vec<Arg>,
    /// The `#[group]` arguments, bound in the body from their fields ([`crate::group_use`]).
    pub groups: Vec<GroupBinding>,
    /// `#[optimizer_kernel(schedule = path)]`: the function that computes the `#[derived]`
    /// scalars from `t` on the device after every advance.
    pub schedule: Option<syn::Path>,
    /// The buffer the parameter's storage adds (`#[param(bf16, master)]`: the f32 master
    /// `<p>_master`; `#[param(bf16, remainder)]`: `<p>_remainder`): a parameter buffer of its
    /// own in every entry and descriptor, which the author never names (only the entry reads
    /// and writes it).
    pub companion: Option<Arg>,
}

impl OptimizerFn {
    pub fn name(&self) -> &Ident {
        &self.func.sig.ident
    }

    /// The per-element buffers in entry order: the author's, then the parameter's companion.
    pub fn buffers(&self) -> impl Iterator<Item = &Arg> {
        self.args
            .iter()
            .filter(|a| a.role.is_buffer())
            .chain(self.companion.iter())
    }

    /// Whether `a` is the parameter's companion buffer ([`Self::companion`]).
    pub fn is_companion(&self, a: &Arg) -> bool {
        self.companion.as_ref().is_some_and(|c| c.ident == a.ident)
    }

    /// Whether any store of the kernel is stochastic (its parameter's or a state's), and so
    /// needs the random words of `StochasticRounding`.
    pub fn stochastic(&self) -> bool {
        self.buffers().any(|a| a.storage.is_stochastic())
    }

    /// `a`'s place among the kernel's stochastically stored buffers, in declared order: its
    /// stores draw their words with it (`storage::stochastic_word(key, ordinal, element)`).
    /// None for a buffer stored otherwise.
    pub fn stochastic_ordinal(&self, a: &Arg) -> Option<u32> {
        self.buffers()
            .filter(|b| b.storage.is_stochastic())
            .position(|b| b.ident == a.ident)
            .map(|i| i as u32)
    }

    pub fn uniforms(&self) -> impl Iterator<Item = &Arg> {
        self.args.iter().filter(|a| !a.role.is_buffer())
    }

    /// The uniforms a stepped entry takes as arguments: the `#[uniform_ptr]`s only (every
    /// scalar comes from the record).
    pub fn step_uniforms(&self) -> impl Iterator<Item = &Arg> {
        self.uniforms().filter(|a| a.lifetime.is_none())
    }

    /// The scalars, in declared order: what a stepped entry reads from its record.
    pub fn scalars(&self) -> impl Iterator<Item = &Arg> {
        self.uniforms().filter(|a| a.lifetime.is_some())
    }

    /// The `#[hyper]` and `#[derived]` scalars with their word in the record's own scalars
    /// (consecutive, in declared order).
    pub fn record_words(&self) -> impl Iterator<Item = (usize, &Arg)> {
        self.uniforms().filter(|a| a.in_record_words()).enumerate()
    }

    /// The `#[hyper]` scalars, in declared order.
    pub fn hypers(&self) -> impl Iterator<Item = &Arg> {
        self.uniforms()
            .filter(|a| a.lifetime == Some(Lifetime::Hyper))
    }

    /// The `#[derived]` scalars, in declared order.
    pub fn derived(&self) -> impl Iterator<Item = &Arg> {
        self.uniforms()
            .filter(|a| matches!(a.lifetime, Some(Lifetime::Derived(_))))
    }
}

const ATTR_HELP: &str = "#[optimizer_kernel] takes only `schedule = <fn>` (the function that \
computes the kernel's #[derived] scalars); the clamp epilogue and its trailing \
`weight_clamp_max_abs: f32` bound are part of every optimizer kernel and cannot be renamed, moved, \
defaulted or switched off (pass a bound of 0.0 at launch, with a stated reason, to disable it)";

/// `schedule = <path>`, the only argument `#[optimizer_kernel]` takes.
fn parse_kernel_attr(attr: TokenStream) -> syn::Result<Option<syn::Path>> {
    if attr.is_empty() {
        return Ok(None);
    }
    let mut schedule = None;
    let parser = syn::meta::parser(|meta| {
        if !meta.path.is_ident("schedule") {
            return Err(meta.error(ATTR_HELP));
        }
        if schedule.is_some() {
            return Err(meta.error("`schedule` is given more than once"));
        }
        schedule = Some(meta.value()?.parse::<syn::Path>()?);
        Ok(())
    });
    syn::parse::Parser::parse2(parser, attr.clone())?;
    schedule
        .map(Some)
        .ok_or_else(|| syn::Error::new_spanned(attr, ATTR_HELP))
}

/// The item `#[optimizer_kernel]` applies to, as a function.
pub fn parse_fn(item: TokenStream) -> syn::Result<ItemFn> {
    syn::parse2(item).map_err(|e| {
        syn::Error::new(
            e.span(),
            "#[optimizer_kernel] applies to a plain `fn` that computes one element's update",
        )
    })
}

/// Parses and validates a kernel whose `#[group]` arguments are resolved: `groups` holds the
/// fields of each, in the order the arguments come (nothing when it has none).
pub fn parse(
    attr: TokenStream,
    item: TokenStream,
    groups: &[TokenStream],
) -> syn::Result<OptimizerFn> {
    let mut func = parse_fn(item)?;
    // Every independent check runs and reports, so an author fixes a kernel in one pass; a
    // check that needs another's result (the roles need every argument parsed) runs only when
    // that one passed.
    let mut errors = Errors::default();
    let schedule = errors.check(parse_kernel_attr(attr)).flatten();
    errors.check(check_fn_attrs(&func.attrs));
    errors.check(check_signature_shape(&func));
    let mut bindings = Vec::new();
    let mut inputs = syn::punctuated::Punctuated::new();
    let mut args: Vec<Option<Arg>> = Vec::new();
    let mut resolved = groups.iter();
    for input in &func.sig.inputs {
        if !crate::group_use::is_group(input) {
            args.push(errors.check(parse_arg(input)));
            inputs.push(input.clone());
            continue;
        }
        let fields = resolved
            .next()
            .expect("the callbacks resolve every #[group] before this parse");
        match crate::group_use::flatten(input, fields) {
            Ok((binding, fields)) => {
                for field in fields {
                    args.push(errors.check(parse_arg(&field)).map(|mut a| {
                        a.group = Some(bindings.len());
                        a
                    }));
                    inputs.push(field);
                }
                bindings.push(binding);
            }
            Err(e) => errors.push(e),
        }
    }
    func.sig.inputs = inputs;
    if let Some(args) = args.iter().cloned().collect::<Option<Vec<Arg>>>() {
        let distinct = errors.check(crate::group_use::check_names(&args, &bindings));
        if distinct.is_some() && errors.check(check_roles(&func, &args)).is_some() {
            errors.check(check_schedule(&func, &args, schedule.as_ref()));
        }
    }
    // After the signature's own errors, so a pointer argument is reported at its type before the
    // `unsafe` block that would use it.
    errors.check(crate::body::check_body(&func.block));
    let args: Vec<Arg> = args.into_iter().flatten().collect();
    let companion = errors.check(companion(&args)).flatten();
    errors.finish()?;
    Ok(OptimizerFn {
        func,
        args,
        groups: bindings,
        schedule,
        companion,
    })
}

/// The errors of one macro invocation, combined into one `syn::Error` (each keeps its span, and
/// rustc reports every one), as serde_derive's `Ctxt` collects them.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    /// Keeps `e`, after the errors already found.
    pub(crate) fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    /// `result`'s value, or `None` with its error kept.
    pub(crate) fn check<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }

    /// Every error found, or `Ok`.
    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// A `#[derived]` scalar needs the schedule that computes it, and a schedule needs something to
/// compute.
fn check_schedule(func: &ItemFn, args: &[Arg], schedule: Option<&syn::Path>) -> syn::Result<()> {
    let derived = args
        .iter()
        .find(|a| matches!(a.lifetime, Some(Lifetime::Derived(_))));
    match (derived, schedule) {
        (Some(a), None) => Err(syn::Error::new_spanned(
            &a.ident,
            format!(
                "#[derived] `{}` is computed on the device after every step's advance by the \
                 kernel's schedule; name it with #[optimizer_kernel(schedule = my_schedule)], \
                 a `fn(t: u32, hyper: &{kernel}::Hyper, previous: &{kernel}::Derived) -> \
                 {kernel}::Derived` next to the kernel",
                a.ident.unraw(),
                kernel = func.sig.ident.unraw(),
            ),
        )),
        (None, Some(path)) => Err(syn::Error::new_spanned(
            path,
            "this kernel has a schedule but no #[derived] scalar for it to compute: declare \
             the step-derived scalars with #[derived(init = <value at t = 0>)], or remove the \
             schedule",
        )),
        _ => Ok(()),
    }
}

/// Attributes that only document or tune lints are allowed; anything that could export a symbol
/// or change linkage (`no_mangle`, `export_name`, ...) would make a second, unclamped entry.
fn check_fn_attrs(attrs: &[Attribute]) -> syn::Result<()> {
    for attr in attrs {
        if attr.path().is_ident("inline") {
            return Err(syn::Error::new_spanned(
                attr,
                "#[optimizer_kernel] marks the update `#[inline(always)]` itself (it is inlined \
                 into the generated entry); remove this attribute",
            ));
        }
        let ok = crate::body::ALLOWED_ATTRS
            .iter()
            .any(|name| attr.path().is_ident(name));
        if !ok {
            return Err(syn::Error::new_spanned(
                attr,
                "this attribute is not allowed on an #[optimizer_kernel] function: the macro \
                 generates the exported entry itself (only doc and lint attributes are accepted)",
            ));
        }
    }
    Ok(())
}

fn check_signature_shape(func: &ItemFn) -> syn::Result<()> {
    let sig = &func.sig;
    if let Some(abi) = &sig.abi {
        return Err(syn::Error::new_spanned(
            abi,
            "write the update as a plain Rust `fn`: #[optimizer_kernel] generates the \
             `extern \"gpu-kernel\"` entry, with the clamp epilogue",
        ));
    }
    if let Some(token) = &sig.unsafety {
        return Err(syn::Error::new_spanned(
            token,
            "the per-element update must be a safe `fn`: it never sees a pointer",
        ));
    }
    if let Some(token) = &sig.asyncness {
        return Err(syn::Error::new_spanned(
            token,
            "an optimizer kernel cannot be `async`",
        ));
    }
    if let Some(token) = &sig.constness {
        return Err(syn::Error::new_spanned(
            token,
            "an optimizer kernel cannot be `const`",
        ));
    }
    let generic =
        "an optimizer kernel cannot be generic: each entry has one concrete PTX signature";
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(&sig.generics, generic));
    }
    if let Some(where_clause) = &sig.generics.where_clause {
        // `Generics` prints only `<..>`: span the where clause itself, not the call site.
        return Err(syn::Error::new_spanned(where_clause, generic));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new_spanned(
            variadic,
            "an optimizer kernel cannot be variadic",
        ));
    }
    let is_f32 = matches!(&sig.output, ReturnType::Type(_, ty) if is_ident_type(ty, "f32"));
    if !is_f32 {
        let span = match &sig.output {
            ReturnType::Type(_, ty) => ty.span(),
            ReturnType::Default => sig.paren_token.span.close(),
        };
        return Err(syn::Error::new(
            span,
            "an optimizer kernel returns the new parameter value as `-> f32`; the macro clamps \
             it and stores it",
        ));
    }
    Ok(())
}

pub(crate) fn parse_arg(arg: &FnArg) -> syn::Result<Arg> {
    let typed = match arg {
        FnArg::Typed(typed) => typed,
        FnArg::Receiver(r) => {
            return Err(syn::Error::new_spanned(
                r,
                "an optimizer kernel takes no `self`",
            ))
        }
    };
    let ident = match &*typed.pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
        other => {
            return Err(syn::Error::new_spanned(
                other,
                "kernel arguments must be plain names",
            ))
        }
    };
    check_name(&ident)?;
    let (lifetime_attrs, attrs): (Vec<&Attribute>, Vec<&Attribute>) =
        typed.attrs.iter().partition(|a| lifetime_attr(a).is_some());
    let attrs: Vec<Attribute> = attrs.into_iter().cloned().collect();
    let (role, storage) = role_of(&attrs, &typed.ty)?;
    check_type(&ident, &role, &typed.ty)?;
    let lifetime = match lifetime_attrs.as_slice() {
        [] => None,
        [attr] => Some(parse_lifetime(attr, &ident, &role, &attrs)?),
        [_, second, ..] => {
            return Err(syn::Error::new_spanned(
                second,
                "a scalar has one lifetime: #[step], #[hyper] or #[derived(..)]",
            ))
        }
    };
    let grad = attrs.iter().any(|a| a.path().is_ident("grad"));
    match (&role, &lifetime) {
        (Role::Scalar(_), None) => Err(syn::Error::new_spanned(
            &ident,
            format!("{LIFETIME_HELP}; `{}` has none", ident.unraw()),
        )),
        _ => Ok(Arg {
            ident,
            role,
            grad,
            lifetime,
            group: None,
            storage,
        }),
    }
}

const LIFETIME_HELP: &str = "every scalar of an #[optimizer_kernel] declares how long its value \
lives, since a stepped entry reads each one from its step-state record (a launch argument would \
be replayed frozen by a captured graph): #[hyper] (a hyperparameter the host sets, changeable \
between steps), #[step] (`lr`, `beta1`, `beta2`, `bias_correction1`, `bias_correction2`: the \
record's shared per-step fields) or #[derived(init = ..)] (computed from the step number on the \
device by the kernel's schedule)";

/// `step`, `hyper` or `derived`, if `attr` is one of the lifetime attributes.
fn lifetime_attr(attr: &Attribute) -> Option<&'static str> {
    ["step", "hyper", "derived"]
        .into_iter()
        .find(|name| attr.path().is_ident(name))
}

fn parse_lifetime(
    attr: &Attribute,
    ident: &Ident,
    role: &Role,
    other_attrs: &[Attribute],
) -> syn::Result<Lifetime> {
    let name = lifetime_attr(attr).expect("partitioned by lifetime_attr");
    if !matches!(role, Role::Scalar(_)) {
        return Err(syn::Error::new_spanned(
            attr,
            format!(
                "#[{name}] is a scalar's lifetime; buffers and #[uniform_ptr]s are device \
                 memory, read where they are at every launch"
            ),
        ));
    }
    match name {
        "step" => {
            check_step(attr, ident, role)?;
            Ok(Lifetime::Step)
        }
        "hyper" => {
            require_no_args(attr, "hyper")?;
            Ok(Lifetime::Hyper)
        }
        _ => {
            if let Some(domain) = other_attrs.iter().find(|a| domain::is_domain(a)) {
                return Err(syn::Error::new_spanned(
                    domain,
                    "#[domain] bounds the values the host passes; a #[derived] scalar is \
                     computed on the device by the kernel's schedule, where no launch check \
                     reads it (a plain launch's value must still be finite)",
                ));
            }
            Ok(Lifetime::Derived(parse_init(attr, role)?))
        }
    }
}

const INIT_HELP: &str = "#[derived] needs `(init = <literal>)`: the scalar's value before the \
first step (`t = 0`), from which the schedule computes step 1's";

/// The `init = <literal>` of `#[derived(..)]`: an f32 literal for an `f32`, an integer one for a
/// `u32`.
fn parse_init(attr: &Attribute, role: &Role) -> syn::Result<Lit> {
    if !matches!(attr.meta, Meta::List(_)) {
        return Err(syn::Error::new_spanned(attr, INIT_HELP));
    }
    let mut init = None;
    attr.parse_nested_meta(|meta| {
        if !meta.path.is_ident("init") {
            return Err(meta.error("expected `init = <literal>`"));
        }
        if init.is_some() {
            return Err(meta.error("`init` is given more than once"));
        }
        let expr: Expr = meta.value()?.parse()?;
        let fits = |lit: &Lit| match role {
            Role::Scalar(ScalarType::U32) => {
                matches!(lit, Lit::Int(i) if matches!(i.suffix(), "" | "u32"))
            }
            _ => matches!(lit, Lit::Float(f) if matches!(f.suffix(), "" | "f32")),
        };
        match expr {
            Expr::Lit(lit) if fits(&lit.lit) => {
                init = Some(lit.lit);
                Ok(())
            }
            other => Err(syn::Error::new_spanned(
                other,
                "the initial value is a literal of the scalar's type, like `1.0` for an f32 or \
                 `0` for a u32",
            )),
        }
    })?;
    init.ok_or_else(|| syn::Error::new_spanned(attr, INIT_HELP))
}

/// `#[step]` marks an f32 scalar that changes from step to step: the stepped entries read it from
/// the field of the same name in their `StepState` record, so a replayed graph sees each step's
/// value. Only the record's fields can be named.
fn check_step(attr: &Attribute, ident: &Ident, role: &Role) -> syn::Result<()> {
    require_no_args(attr, "step")?;
    let name = ident.unraw().to_string();
    if name == STEP_NUMBER {
        if !matches!(role, Role::Scalar(ScalarType::U32)) {
            return Err(syn::Error::new_spanned(
                attr,
                "#[step] `step` is the record's step number, a `u32`",
            ));
        }
        return Ok(());
    }
    if !matches!(role, Role::Scalar(ScalarType::F32(_))) {
        return Err(syn::Error::new_spanned(
            attr,
            "#[step] applies to a plain f32 scalar (or the u32 `step`): the stepped entries read it from the step-state record instead of taking it as an argument",
        ));
    }
    if !STEP_FIELDS.contains(&name.as_str()) {
        return Err(syn::Error::new_spanned(
            ident,
            format!(
                "#[step] reads the field of the same name from the step-state record, which has {}; `{name}` is not one of them",
                STEP_FIELDS.join(", ")
            ),
        ));
    }
    Ok(())
}

fn check_name(ident: &Ident) -> syn::Result<()> {
    // `r#len` is the same identifier as `len`.
    let name = ident.unraw().to_string();
    if name == BOUND {
        return Err(syn::Error::new_spanned(
            ident,
            "`weight_clamp_max_abs` is the clamp bound that #[optimizer_kernel] appends as the \
             last parameter of every optimizer entry; it cannot be declared, renamed, moved or \
             given a default here",
        ));
    }
    if name == SCALES {
        return Err(syn::Error::new_spanned(
            ident,
            "`weight_clamp_scales` is the per-tensor clamp scale table that #[optimizer_kernel] \
             gives every multi-tensor entry (tensor t is clamped to bound * scales[t]); it cannot \
             be declared here: set the scales on the host with `TensorSet::set_clamp_scales`",
        ));
    }
    if [LEN, CHUNKS, N_CHUNKS, STEP_STATE, RECORDS].contains(&name.as_str())
        || name.starts_with(RESERVED_PREFIX)
    {
        return Err(syn::Error::new_spanned(
            ident,
            format!("`{name}` is reserved by #[optimizer_kernel] (the generated entry uses it)"),
        ));
    }
    Ok(())
}

fn role_of(attrs: &[Attribute], ty: &Type) -> syn::Result<(Role, Storage)> {
    let mut role: Option<Role> = None;
    let mut storage = Storage::F32;
    let mut domain_attr: Option<&Attribute> = None;
    for attr in attrs {
        if domain::is_domain(attr) {
            if domain_attr.is_some() {
                return Err(syn::Error::new_spanned(
                    attr,
                    "an argument has at most one #[domain]: put every bound in it",
                ));
            }
            domain_attr = Some(attr);
            continue;
        }
        let this = if attr.path().is_ident("param") {
            storage = crate::storage::parse(attr, "param")?;
            Role::Param
        } else if attr.path().is_ident("input") {
            storage = crate::storage::parse(attr, "input")?;
            Role::Input
        } else if attr.path().is_ident("grad") {
            // A gradient is an input the step's guard may scale (global-norm clipping).
            storage = crate::storage::parse(attr, "grad")?;
            Role::Input
        } else if attr.path().is_ident("state") {
            // f32, or bf16 rounded stochastically (`storage::parse` says why not to nearest).
            storage = crate::storage::parse(attr, "state")?;
            Role::State
        } else if attr.path().is_ident("uniform_ptr") {
            Role::UniformPtr(parse_default(attr)?)
        } else {
            return Err(syn::Error::new_spanned(
                attr,
                "unknown argument attribute: use #[param], #[grad] (a gradient: an input the \
                 step's global-norm clipping scales), #[input], #[state] or \
                 #[uniform_ptr(default = ..)]; on a scalar its lifetime, #[hyper], #[step] or \
                 #[derived(init = ..)], and #[domain(..)]",
            ));
        };
        if role.is_some() {
            return Err(syn::Error::new_spanned(
                attr,
                "an argument has at most one role",
            ));
        }
        role = Some(this);
    }
    match role {
        Some(role) => match domain_attr {
            Some(attr) => Err(syn::Error::new_spanned(
                attr,
                "#[domain] bounds a plain scalar argument, which the runtime checks at every \
                 launch; #[param], #[input] and #[state] buffers and #[uniform_ptr]s hold device \
                 data that no launch check reads",
            )),
            None => Ok((role, storage)),
        },
        None if is_ident_type(ty, "f32") => {
            let domain = domain_attr.map(domain::parse).transpose()?;
            Ok((
                Role::Scalar(ScalarType::F32(domain.unwrap_or(Domain::FINITE))),
                storage,
            ))
        }
        None if is_ident_type(ty, "u32") => match domain_attr {
            Some(attr) => Err(syn::Error::new_spanned(
                attr,
                "#[domain] applies to f32 scalars: a u32 scalar takes any value (its descriptor \
                 says `Domain::ANY`)",
            )),
            None => Ok((Role::Scalar(ScalarType::U32), storage)),
        },
        None => Err(syn::Error::new_spanned(
            ty,
            "a plain kernel argument is a uniform scalar (`f32` or `u32`); per-element buffers \
             are declared with #[input] (read) or #[state] (read and write), and the parameter \
             with #[param]",
        )),
    }
}

fn require_no_args(attr: &Attribute, name: &str) -> syn::Result<()> {
    match &attr.meta {
        Meta::Path(_) => Ok(()),
        Meta::List(list) => Err(syn::Error::new_spanned(
            &list.tokens,
            format!("#[{name}] takes no arguments"),
        )),
        Meta::NameValue(nv) => Err(syn::Error::new_spanned(
            &nv.value,
            format!("#[{name}] takes no value"),
        )),
    }
}

const DEFAULT_HELP: &str = "#[uniform_ptr] needs `(default = <f32 literal>)`: the value a kernel \
reads when the launch passes a null pointer";

fn parse_default(attr: &Attribute) -> syn::Result<Lit> {
    if !matches!(attr.meta, Meta::List(_)) {
        return Err(syn::Error::new_spanned(attr, DEFAULT_HELP));
    }
    let mut default = None;
    attr.parse_nested_meta(|meta| {
        if !meta.path.is_ident("default") {
            return Err(meta.error("expected `default = <f32 literal>`"));
        }
        if default.is_some() {
            return Err(meta.error("`default` is given more than once"));
        }
        if !meta.input.peek(syn::Token![=]) {
            return Err(meta.error("expected `default = <f32 literal>`"));
        }
        let expr: Expr = meta.value()?.parse()?;
        match expr {
            Expr::Lit(lit) if matches!(&lit.lit, Lit::Float(f) if matches!(f.suffix(), "" | "f32")) => {
                default = Some(lit.lit);
                Ok(())
            }
            other => Err(syn::Error::new_spanned(
                other,
                "the default must be an f32 literal, like `1.0`",
            )),
        }
    })?;
    default.ok_or_else(|| syn::Error::new_spanned(attr, DEFAULT_HELP))
}

fn check_type(ident: &Ident, role: &Role, ty: &Type) -> syn::Result<()> {
    let ok = match role {
        Role::Param => is_ident_type(ty, "f32"),
        Role::Input | Role::UniformPtr(_) => is_ident_type(ty, "f32"),
        Role::State => matches!(ty, Type::Reference(r)
            if r.mutability.is_some() && r.lifetime.is_none() && is_ident_type(&r.elem, "f32")),
        Role::Scalar(..) => true,
    };
    if ok {
        return Ok(());
    }
    let msg = match role {
        Role::Param => format!(
            "#[param] `{ident}` receives the parameter's current value as `f32`: the kernel \
             returns the new value and the macro stores it after the clamp; the parameter buffer \
             is never handed to the kernel body"
        ),
        Role::Input => format!("#[input] `{ident}` receives one element's value as `f32`"),
        Role::UniformPtr(_) => format!("#[uniform_ptr] `{ident}` receives the value as `f32`"),
        Role::State => format!(
            "#[state] `{ident}` is `&mut f32`: the element's current value, written back by \
             the macro"
        ),
        Role::Scalar(..) => unreachable!("scalars are typed by role_of"),
    };
    Err(syn::Error::new_spanned(ty, msg))
}

fn check_roles(func: &ItemFn, args: &[Arg]) -> syn::Result<()> {
    let mut params = args.iter().filter(|a| a.role == Role::Param);
    if params.next().is_none() {
        return Err(syn::Error::new(
            func.sig.paren_token.span.join(),
            "an optimizer kernel needs exactly one `#[param] p: f32` argument: the parameter \
             whose new value the kernel returns",
        ));
    }
    if let Some(second) = params.next() {
        // Span the whole second `#[param] q: f32`, role attribute included.
        let arg = func.sig.inputs.iter().find(|arg| {
            matches!(arg, FnArg::Typed(t) if matches!(&*t.pat, Pat::Ident(p) if p.ident == second.ident))
        });
        return Err(syn::Error::new_spanned(
            arg.expect("every Arg comes from an input"),
            "only one #[param] per optimizer kernel: each kernel updates one parameter buffer, \
             and that store is the one the clamp guards",
        ));
    }
    check_rounding_scalars(func, args)
}

/// A stochastic store takes its random words from the step number and the run's seed: a kernel
/// that declares one must take both, as `StochasticRounding`'s fields (`#[step] step: u32` and
/// `#[hyper] rounding_seed: u32`), so its stepped entries read them from the record (a launch
/// argument would be replayed frozen: every step of a graph would round alike).
fn check_rounding_scalars(func: &ItemFn, args: &[Arg]) -> syn::Result<()> {
    let Some(stochastic) = args.iter().find(|a| a.storage.is_stochastic()) else {
        return Ok(());
    };
    let has = |name: &str, lifetime: Lifetime| {
        args.iter().any(|a| {
            a.ident.unraw() == name
                && a.role == Role::Scalar(ScalarType::U32)
                && a.lifetime.as_ref() == Some(&lifetime)
        })
    };
    let [step, seed] = crate::storage::ROUNDING_SCALARS;
    if has(step, Lifetime::Step) && has(seed, Lifetime::Hyper) {
        return Ok(());
    }
    Err(syn::Error::new(
        func.sig.paren_token.span.join(),
        format!(
            "`{}` is stored stochastically (`{}, stochastic`), with a random word per element \
             hashed from the step number and the run's seed: add `#[group] rounding: \
             StochasticRounding` (the `#[step] step: u32` and `#[hyper] rounding_seed: u32` the \
             stores read from the step record)",
            stochastic.ident.unraw(),
            if stochastic.role == Role::Param {
                "#[param(bf16"
            } else {
                "#[state(bf16"
            }
        ),
    ))
}

/// `ty` is exactly the single-segment path `name` (for example `f32`).
pub fn is_ident_type(ty: &Type, name: &str) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident(name))
}

/// The companion buffer of the parameter's storage (`<p>_master`, `<p>_remainder`), named after
/// the parameter; an argument of that name already is an error (two buffers of one name).
fn companion(args: &[Arg]) -> syn::Result<Option<Arg>> {
    let Some(param) = args.iter().find(|a| a.role == Role::Param) else {
        return Ok(None);
    };
    let Some(companion) = param.storage.companion() else {
        return Ok(None);
    };
    let ident = format_ident!("{}_{}", param.ident.unraw(), companion.suffix);
    if let Some(clash) = args.iter().find(|a| a.ident.unraw() == ident) {
        return Err(syn::Error::new_spanned(
            &clash.ident,
            format!(
                "`{ident}` is the name of the buffer that `{}`'s storage adds (its {}): rename \
                 this argument",
                param.ident.unraw(),
                companion.suffix
            ),
        ));
    }
    Ok(Some(Arg {
        ident,
        role: Role::Param,
        grad: false,
        lifetime: None,
        group: None,
        storage: companion.storage,
    }))
}
